/*
 * sandboxd's parts that run without a sandbox: finding our cgroup and
 * making sandgate's group (against a fake /proc/self/mountinfo,
 * /proc/self/cgroup and cgroup tree in a temp dir; cgroupfs itself needs
 * a real hierarchy: the integration tests use that), the seccomp filter,
 * the memfds that carry data into bubblewrap, and the runtime directory
 * with its sockets, reached through a directory fd whatever its length.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../providers/sandboxd/sbxd.h"
#include "testutil.h"

struct fx {
	char	dir[64];
	char	mountinfo[128], self[128];
	char	home[128];	/* a gateway's local sandboxes' directory */
	struct sg_cg cg;
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL || tu_mkdtemp(fx->dir, sizeof(fx->dir)) == -1)
		return -1;
	snprintf(fx->mountinfo, sizeof(fx->mountinfo), "%s/mountinfo", fx->dir);
	snprintf(fx->self, sizeof(fx->self), "%s/cgroup", fx->dir);
	snprintf(fx->home, sizeof(fx->home), "%s/store/local", fx->dir);
	fx->cg.mountinfo = fx->mountinfo;
	fx->cg.self_cgroup = fx->self;
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	tu_rmrf(fx->dir);
	free(fx);
	return 0;
}

/* mkdir -p of dir/rel. */
static void
mkdirs(const char *dir, const char *rel)
{
	char path[512], *p;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (p = path + strlen(dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	assert_true(mkdir(path, 0755) == 0 || access(path, F_OK) == 0);
}

static void
put_file(const char *dir, const char *rel, const char *text)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(tu_write_file(path, text, -1), 0);
}

/* The name a gateway's v1 group has (of its home, absolute). */
static void
group_of(const char *home, uid_t owner, char name[64])
{
	char hash[65];

	sg_sha256_hex(home, strlen(home), hash);
	snprintf(name, 64, "sandgate-%u-%.12s", (unsigned)owner, hash);
}

/* v1 as this machine kind has it: memory under a container path, pids
 * and cpu (with cpuacct) at the root; sandgate's group in each. */
static void
v1_found_per_controller(void **state)
{
	struct fx *fx = *state;
	struct timespec old[2] = { { .tv_sec = 1 }, { .tv_sec = 1 } };
	char mi[2048], want[600], name[64];

	snprintf(mi, sizeof(mi),
	    "30 25 0:26 / %s/unified rw - cgroup2 cgroup2 rw\n"
	    "31 25 0:27 / %s/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
	    "32 25 0:28 / %s/pids rw - cgroup cgroup rw,pids\n"
	    "33 25 0:29 / %s/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n",
	    fx->dir, fx->dir, fx->dir, fx->dir);
	put_file(fx->dir, "mountinfo", mi);
	put_file(fx->dir, "cgroup", "9:pids:/\n4:memory:/box/x1\n"
	    "2:cpu,cpuacct:/\n0::/\n");
	mkdirs(fx->dir, "unified");
	put_file(fx->dir, "unified/cgroup.controllers", "hugetlb\n");
	mkdirs(fx->dir, "memory/box/x1");
	mkdirs(fx->dir, "pids");
	mkdirs(fx->dir, "cpu,cpuacct");
	sg_cg_setup(&fx->cg, fx->home, getuid(), getgid());
	assert_int_equal(fx->cg.mode, SG_CG_V1);
	group_of(fx->home, getuid(), name);
	snprintf(want, sizeof(want), "%s/memory/box/x1/%s", fx->dir, name);
	assert_string_equal(fx->cg.dir[SG_CG_MEMORY], want);
	snprintf(want, sizeof(want), "%s/pids/%s", fx->dir, name);
	assert_string_equal(fx->cg.dir[SG_CG_PIDS], want);
	snprintf(want, sizeof(want), "%s/cpu,cpuacct/%s", fx->dir, name);
	assert_string_equal(fx->cg.dir[SG_CG_CPU], want);
	assert_contains(sg_cg_describe(&fx->cg), "cgroup v1 (memory, pids, cpu)");
	/* A group a dead sandboxd left is removed at the next start; one
	 * just made (another master's sandboxd on this store, its kernel
	 * not in yet) is not. */
	snprintf(want, sizeof(want), "%s/cntr_0123", fx->cg.dir[SG_CG_PIDS]);
	assert_int_equal(mkdir(want, 0755), 0);
	assert_int_equal(utimensat(AT_FDCWD, want, old, 0), 0);
	snprintf(want, sizeof(want), "%s/cntr_4567", fx->cg.dir[SG_CG_PIDS]);
	assert_int_equal(mkdir(want, 0755), 0);
	sg_cg_setup(&fx->cg, fx->home, getuid(), getgid());
	assert_int_equal(access(want, F_OK), 0);
	snprintf(want, sizeof(want), "%s/cntr_0123", fx->cg.dir[SG_CG_PIDS]);
	assert_int_equal(access(want, F_OK), -1);
}

/* mountinfo and cgroup files for v1 memory and pids at the fake root. */
static void
v1_at_root(struct fx *fx)
{
	char mi[1024];

	snprintf(mi, sizeof(mi),
	    "31 25 0:27 / %s/memory rw - cgroup cgroup rw,memory\n"
	    "32 25 0:28 / %s/pids rw - cgroup cgroup rw,pids\n", fx->dir, fx->dir);
	put_file(fx->dir, "mountinfo", mi);
	put_file(fx->dir, "cgroup", "4:memory:/\n9:pids:/\n");
	mkdirs(fx->dir, "memory");
	mkdirs(fx->dir, "pids");
}

/*
 * Several gateways on one host, in one cgroup: each user's and each
 * store's gateway has a group of its own, given to its own user (one
 * started as root never takes another's over), found again after a
 * restart, and cleaned of its own stale groups only. The group older
 * versions shared is left as it is.
 */
static void
v1_one_group_per_user_and_store(void **state)
{
	struct fx *fx = *state;
	struct timespec old[2] = { { .tv_sec = 1 }, { .tv_sec = 1 } };
	uid_t other = geteuid() == 0 ? 12345 : getuid();
	gid_t ogid = geteuid() == 0 ? 12345 : getgid();
	char a[512], b[512], c[512], path[600], home2[160], cwd[512];
	struct stat st;

	v1_at_root(fx);
	mkdirs(fx->dir, "pids/sandgate/cntr_0000");
	snprintf(path, sizeof(path), "%s/pids/sandgate/cntr_0000", fx->dir);
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	sg_cg_setup(&fx->cg, fx->home, getuid(), getgid());
	assert_int_equal(fx->cg.mode, SG_CG_V1);
	snprintf(a, sizeof(a), "%s", fx->cg.dir[SG_CG_PIDS]);
	/* Another user's gateway on another store, then a gateway of
	 * ours on another store. */
	snprintf(home2, sizeof(home2), "%s/site2/local", fx->dir);
	sg_cg_setup(&fx->cg, home2, other, ogid);
	assert_int_equal(fx->cg.mode, SG_CG_V1);
	snprintf(b, sizeof(b), "%s", fx->cg.dir[SG_CG_PIDS]);
	sg_cg_setup(&fx->cg, home2, getuid(), getgid());
	snprintf(c, sizeof(c), "%s", fx->cg.dir[SG_CG_PIDS]);
	assert_string_not_equal(a, c);
	if (other != getuid()) {
		assert_string_not_equal(a, b);
		assert_string_not_equal(b, c);
	}
	assert_int_equal(stat(a, &st), 0);
	assert_int_equal(st.st_uid, getuid());
	assert_int_equal(stat(b, &st), 0);
	assert_int_equal(st.st_uid, other);
	/* Each one's stale group, and one of the old shared group. */
	snprintf(path, sizeof(path), "%s/cntr_1111", a);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	snprintf(path, sizeof(path), "%s/cntr_2222", b);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	/* The first restarted, its home named relative to where it runs:
	 * the same group, its own stale group gone, no other touched. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(fx->dir), 0);
	sg_cg_setup(&fx->cg, "store/local", getuid(), getgid());
	assert_int_equal(chdir(cwd), 0);
	assert_string_equal(fx->cg.dir[SG_CG_PIDS], a);
	snprintf(path, sizeof(path), "%s/cntr_1111", a);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/cntr_2222", b);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(stat(b, &st), 0);
	assert_int_equal(st.st_uid, other);
	snprintf(path, sizeof(path), "%s/pids/sandgate/cntr_0000", fx->dir);
	assert_int_equal(access(path, F_OK), 0);
}

/* Without pids there are no per-sandbox limits: NONE, and why. */
static void
v1_without_pids_is_none(void **state)
{
	struct fx *fx = *state;
	char mi[1024];

	snprintf(mi, sizeof(mi),
	    "31 25 0:27 / %s/memory rw - cgroup cgroup rw,memory\n", fx->dir);
	put_file(fx->dir, "mountinfo", mi);
	put_file(fx->dir, "cgroup", "4:memory:/\n");
	mkdirs(fx->dir, "memory");
	sg_cg_setup(&fx->cg, fx->home, getuid(), getgid());
	assert_int_equal(fx->cg.mode, SG_CG_NONE);
	assert_contains(fx->cg.why, "pids");
	assert_contains(sg_cg_describe(&fx->cg), "no cgroup");
}

/* Root never works in a directory it does not own, nor through a link:
 * the gateway's user could point it anywhere. */
static void
v1_refuses_a_link_and_a_foreign_dir(void **state)
{
	struct fx *fx = *state;
	char mi[1024], link[256], target[256];

	snprintf(mi, sizeof(mi),
	    "31 25 0:27 / %s/memory rw - cgroup cgroup rw,memory\n"
	    "32 25 0:28 / %s/pids rw - cgroup cgroup rw,pids\n", fx->dir, fx->dir);
	put_file(fx->dir, "mountinfo", mi);
	put_file(fx->dir, "cgroup", "4:memory:/a\n9:pids:/\n");
	mkdirs(fx->dir, "memory/elsewhere");
	mkdirs(fx->dir, "pids");
	snprintf(link, sizeof(link), "%s/memory/a", fx->dir);
	snprintf(target, sizeof(target), "%s/memory/elsewhere", fx->dir);
	assert_int_equal(symlink(target, link), 0);
	sg_cg_setup(&fx->cg, fx->home, getuid(), getgid());
	assert_int_equal(fx->cg.mode, SG_CG_NONE);
	assert_int_equal(rmdir(target), 0);	/* nothing was made in it */
	if (geteuid() == 0) {
		/* A directory of another user's, even a real one. */
		unlink(link);
		mkdirs(fx->dir, "memory/a");
		assert_int_equal(chown(link, 12345, 12345), 0);
		sg_cg_setup(&fx->cg, fx->home, getuid(), getgid());
		assert_int_equal(fx->cg.mode, SG_CG_NONE);
	}
}

/* v2 is taken over only with memory and pids delegated, and only when
 * nothing but the gateway lives in our cgroup (never a login session). */
static void
v2_needs_controllers_and_no_strangers(void **state)
{
	struct fx *fx = *state;
	char mi[1024], procs[64];

	snprintf(mi, sizeof(mi), "30 25 0:26 / %s/unified rw - cgroup2 cgroup2 "
	    "rw\n", fx->dir);
	put_file(fx->dir, "mountinfo", mi);
	put_file(fx->dir, "cgroup", "0::/user.slice/session-1.scope\n");
	mkdirs(fx->dir, "unified/user.slice/session-1.scope");
	put_file(fx->dir, "unified/user.slice/session-1.scope/cgroup.controllers",
	    "cpuset io\n");
	sg_cg_setup(&fx->cg, fx->home, getuid(), getgid());
	assert_int_equal(fx->cg.mode, SG_CG_NONE);
	assert_contains(fx->cg.why, "no memory and pids");
	put_file(fx->dir, "unified/user.slice/session-1.scope/cgroup.controllers",
	    "cpu io memory pids\n");
	/* pid 1 is nobody's child: a stranger. */
	snprintf(procs, sizeof(procs), "1\n%d\n", (int)getpid());
	put_file(fx->dir, "unified/user.slice/session-1.scope/cgroup.procs", procs);
	sg_cg_setup(&fx->cg, fx->home, getuid(), getgid());
	assert_int_equal(fx->cg.mode, SG_CG_NONE);
	assert_contains(fx->cg.why, "not sandgate's");
	snprintf(mi, sizeof(mi), "%s/unified/user.slice/session-1.scope/"
	    "sandgate.gw", fx->dir);
	assert_int_equal(access(mi, F_OK), -1);
}

/*
 * v2, sandboxd started again by its master (after a crash): it is born
 * in sandgate.gw, where the first one moved the gateway, and given to
 * the gateway's user. It takes the service's cgroup up again rather than
 * refusing that directory (root) or nesting a new pair inside it.
 */
static void
v2_sandboxd_again_finds_the_service_group(void **state)
{
	struct fx *fx = *state;
	static const char *const files[] = { "cgroup.procs",
	    "cgroup.subtree_control", "sandgate.gw/cgroup.procs",
	    "sandgate.sbx/cgroup.procs", "sandgate.sbx/cgroup.subtree_control" };
	char mi[1024], want[512], procs[32];
	uid_t other = geteuid() == 0 ? 12345 : getuid();
	gid_t ogid = geteuid() == 0 ? 12345 : getgid();
	size_t i;

	snprintf(mi, sizeof(mi), "30 25 0:26 / %s/unified rw - cgroup2 cgroup2 "
	    "rw\n", fx->dir);
	put_file(fx->dir, "mountinfo", mi);
	put_file(fx->dir, "cgroup", "0::/svc/sandgate.gw\n");
	mkdirs(fx->dir, "unified/svc/sandgate.gw");
	mkdirs(fx->dir, "unified/svc/sandgate.sbx");
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(want, sizeof(want), "unified/svc/%s", files[i]);
		put_file(fx->dir, want, "");
	}
	put_file(fx->dir, "unified/svc/cgroup.controllers", "cpu memory pids\n");
	put_file(fx->dir, "unified/svc/sandgate.gw/cgroup.controllers",
	    "cpu memory pids\n");
	snprintf(procs, sizeof(procs), "%d\n", (int)getpid());
	put_file(fx->dir, "unified/svc/sandgate.gw/cgroup.procs", procs);
	snprintf(want, sizeof(want), "%s/unified/svc/sandgate.gw", fx->dir);
	assert_int_equal(chown(want, other, ogid), 0);
	sg_cg_setup(&fx->cg, fx->home, other, ogid);
	assert_int_equal(fx->cg.mode, SG_CG_V2);
	snprintf(want, sizeof(want), "%s/unified/svc/sandgate.sbx", fx->dir);
	assert_string_equal(fx->cg.dir[SG_CG_MEMORY], want);
	assert_string_equal(fx->cg.dir[SG_CG_PIDS], want);
	snprintf(want, sizeof(want), "%s/unified/svc/sandgate.gw/sandgate.gw",
	    fx->dir);
	assert_int_equal(access(want, F_OK), -1);
}

/* A BPF program: whole sock_filter entries, ending in a return. */
static void
seccomp_filter_builds(void **state)
{
	struct sg_buf bpf;
	char why[256];

	(void)state;
	assert_int_equal(sg_sbxd_seccomp(&bpf, why, sizeof(why)), 0);
	assert_true(bpf.len >= 16);
	assert_int_equal(bpf.len % 8, 0);
	free(bpf.p);
}

static void
memfd_holds_the_data_from_the_start(void **state)
{
	char buf[16];
	int fd;

	(void)state;
	assert_true((fd = sg_sbxd_memfd("t", "hello", 5)) >= 0);
	/* Inherited by what the child execs (bubblewrap reads it). */
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "hello", 5);
	close(fd);
}

static void
sun_names_the_socket_through_its_directory(void **state)
{
	struct sockaddr_un sun;
	char name[200];

	(void)state;
	assert_int_equal(sg_sbxd_sun(&sun, 7, "cntr_0123.sock"), 0);
	assert_int_equal(sun.sun_family, AF_UNIX);
	assert_string_equal(sun.sun_path, "/proc/self/fd/7/cntr_0123.sock");
	/* Only a name of ours, in the directory itself. */
	assert_int_equal(sg_sbxd_sun(&sun, 7, "../x.sock"), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(sg_sbxd_sun(&sun, 7, ""), -1);
	assert_int_equal(sg_sbxd_sun(&sun, -1, "x.sock"), -1);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(sg_sbxd_sun(&sun, 7, name), -1);
	assert_int_equal(errno, ENAMETOOLONG);
}

/* fx->dir/ddd.../eee...: a directory path of over 200 bytes. */
static void
deep_dir(struct fx *fx, char *out, size_t outsz)
{
	char rel[300];

	snprintf(rel, sizeof(rel), "%0100d/%0100d", 0, 1);
	mkdirs(fx->dir, rel);
	snprintf(out, outsz, "%s/%s", fx->dir, rel);
	assert_true(strlen(out) > 200);
}

/* What sandboxd binds in its directory, a responder reaches by the full
 * path, though both are far longer than AF_UNIX's 107 bytes. */
static void
a_socket_in_a_long_path_is_bound_and_reached(void **state)
{
	struct fx *fx = *state;
	char dir[512], path[600];
	struct sockaddr_un sun;
	struct stat st;
	int dfd, lfd, cfd, afd, pdfd;

	deep_dir(fx, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/k.sock", dir);
	/* A stale file in its place is replaced. */
	assert_int_equal(tu_write_file(path, "stale", -1), 0);
	assert_true((dfd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
	assert_true((lfd = sg_sbxd_listen(dfd, "k.sock", 4)) >= 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	close(dfd);

	assert_true((pdfd = sg_sbxd_sun_path(&sun, path)) >= 0);
	assert_true((cfd = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(connect(cfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_true((afd = accept(lfd, NULL, NULL)) >= 0);
	assert_int_equal(write(cfd, "x", 1), 1);
	close(afd);
	close(cfd);
	close(pdfd);
	close(lfd);
	/* A directory that is not there: -1, and why. */
	snprintf(path, sizeof(path), "%s/nodir/k.sock", dir);
	assert_int_equal(sg_sbxd_sun_path(&sun, path), -1);
	assert_int_equal(errno, ENOENT);
}

/* The runtime directory and the instance in it: made (0700), a link in
 * their place replaced and never followed, kernel sockets a dead sandboxd
 * left removed, the instance's lock held. */
static void
rundir_is_ours_and_cleaned(void **state)
{
	struct fx *fx = *state;
	char dir[512], path[700], why[900], victim[600];
	struct sg_sbxd_dirs d, e;
	struct stat st;
	int bfd;

	deep_dir(fx, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/local", dir);
	snprintf(victim, sizeof(victim), "%s/victim", fx->dir);
	mkdirs(fx->dir, "victim");
	put_file(fx->dir, "victim/precious", "x");
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(sg_sbxd_rundir(path, "m1", &d, NULL, why, sizeof(why)), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	snprintf(path, sizeof(path), "%s/precious", victim);
	assert_int_equal(access(path, F_OK), 0);
	close(sg_sbxd_listen(d.kernels, "cntr_1.sock", 1));
	mkdirat(d.kernels, "junk", 0700);
	snprintf(path, sizeof(path), "%s/local", dir);
	assert_true((bfd = open(path, O_RDONLY | O_DIRECTORY)) != -1);
	assert_int_equal(sg_sbxd_alive(bfd, "m1"), 1);
	close(d.base);
	close(d.dir);
	close(d.kernels);
	close(d.lock);
	assert_int_equal(sg_sbxd_alive(bfd, "m1"), 0);

	assert_int_equal(sg_sbxd_rundir(path, "m1", &d, NULL, why, sizeof(why)), 0);
	assert_int_equal(faccessat(d.kernels, "cntr_1.sock", F_OK, 0), -1);
	assert_int_equal(faccessat(d.kernels, "junk", F_OK, 0), -1);
	/* One instance at a time. */
	assert_int_equal(sg_sbxd_rundir(path, "m1", &e, NULL, why, sizeof(why)), -1);
	assert_contains(why, "lock");
	close(bfd);
	close(d.base);
	close(d.dir);
	close(d.kernels);
	close(d.lock);
	/* Not a directory we can make: -1 and why. */
	snprintf(path, sizeof(path), "%s/victim/precious/local", fx->dir);
	assert_int_equal(sg_sbxd_rundir(path, "m2", &d, NULL, why, sizeof(why)), -1);
	assert_int_equal(d.dir, -1);
	assert_contains(why, path);
}

/* Several masters on one store: a starting sandboxd removes what dead
 * instances left (a minute old), never a live instance's, nor a dead
 * one's too young to tell from one starting. */
static void
rundir_leaves_live_instances_alone(void **state)
{
	struct fx *fx = *state;
	struct timespec old[2] = { { .tv_sec = 1 }, { .tv_sec = 1 } };
	char path[700], why[900], name[16];
	struct sg_sbxd_dirs a, b;
	int bfd;

	snprintf(path, sizeof(path), "%s/local", fx->dir);
	assert_int_equal(sg_sbxd_rundir(path, "m10", &a, NULL, why, sizeof(why)), 0);
	close(sg_sbxd_listen(a.kernels, "cntr_a.sock", 1));
	assert_true((bfd = open(path, O_RDONLY | O_DIRECTORY)) != -1);
	mkdirs(path, "m11/kernels");
	put_file(path, "m11/kernels/cntr_b.sock", "");
	mkdirs(path, "m12/kernels");
	put_file(path, "sandboxd.sock", "");
	assert_int_equal(utimensat(bfd, "m10", old, 0), 0);
	assert_int_equal(utimensat(bfd, "m11", old, 0), 0);
	assert_int_equal(utimensat(bfd, "sandboxd.sock", old, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(sg_sbxd_rundir(path, "m13", &b, NULL, why, sizeof(why)), 0);
	assert_int_equal(faccessat(a.kernels, "cntr_a.sock", F_OK, 0), 0);
	assert_int_equal(faccessat(bfd, "m11", F_OK, 0), -1);
	assert_int_equal(faccessat(bfd, "sandboxd.sock", F_OK, 0), -1);
	assert_int_equal(faccessat(bfd, "m12", F_OK, 0), 0);
	assert_int_equal(sg_sbxd_alive(bfd, "m10"), 1);
	assert_int_equal(sg_sbxd_alive(bfd, "m13"), 1);
	assert_int_equal(sg_sbxd_alive(bfd, "m12"), 0);
	assert_int_equal(sg_sbxd_live_instance(bfd, name, sizeof(name)), 0);
	assert_true(strcmp(name, "m10") == 0 || strcmp(name, "m13") == 0);
	close(bfd);
	close(a.base);
	close(a.dir);
	close(a.kernels);
	close(a.lock);
	close(b.base);
	close(b.dir);
	close(b.kernels);
	close(b.lock);
	/* None left alive: none found. */
	assert_true((bfd = open(path, O_RDONLY | O_DIRECTORY)) != -1);
	assert_int_equal(sg_sbxd_live_instance(bfd, name, sizeof(name)), -1);
	close(bfd);
}

/* rmtree empties nested directories and never follows a link. */
static void
rmtree_stays_inside(void **state)
{
	struct fx *fx = *state;
	char path[600], link[600];
	int dfd;

	mkdirs(fx->dir, "t/a/b");
	put_file(fx->dir, "t/a/b/f", "x");
	mkdirs(fx->dir, "keep");
	put_file(fx->dir, "keep/f", "x");
	snprintf(path, sizeof(path), "%s/keep", fx->dir);
	snprintf(link, sizeof(link), "%s/t/a/l", fx->dir);
	assert_int_equal(symlink(path, link), 0);
	assert_true((dfd = open(fx->dir, O_RDONLY | O_DIRECTORY)) >= 0);
	sg_sbxd_rmtree(dfd, "t", 4);
	assert_int_equal(faccessat(dfd, "t", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(dfd, "keep/f", F_OK, 0), 0);
	close(dfd);
}

/* Load src's kernel files (kernel.py's text given) into fs; rundir is
 * fx->dir/run. */
static void
load_kernel(struct fx *fx, const char *kernel_py, struct sg_sbxd_files *fs)
{
	char src[300], run[300], why[512];
	int rfd;

	if (access(SG_SBXD_PYTHON, X_OK) != 0)
		skip();
	mkdirs(fx->dir, "src");
	mkdirs(fx->dir, "run");
	put_file(fx->dir, "src/kernel.py", kernel_py);
	put_file(fx->dir, "src/sg_cells.py", "x = 1\n");
	put_file(fx->dir, "src/sg_ipython.py", "y = 2\n");
	put_file(fx->dir, "src/sg_mpl.py", "z = 3\n");
	snprintf(src, sizeof(src), "%s/src", fx->dir);
	snprintf(run, sizeof(run), "%s/run", fx->dir);
	assert_true((rfd = open(run, O_RDONLY | O_DIRECTORY)) >= 0);
	assert_int_equal(sg_sbxd_files_load(fs, src, run, rfd, why,
	    sizeof(why)), 0);
	/* Nothing is left in the runtime directory. */
	assert_int_equal(faccessat(rfd, "pyc", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	close(rfd);
}

static const struct sg_sbxd_file *
file_at(const struct sg_sbxd_files *fs, const char *prefix)
{
	size_t i;

	for (i = 0; i < fs->n; i++)
		if (strncmp(fs->f[i].dest, prefix, strlen(prefix)) == 0)
			return &fs->f[i];
	return NULL;
}

/* The kernel's files come with their bytecode: kernel.pyc is what python
 * runs; each module's .pyc sits in /sandgate/__pycache__, checked against
 * its source by hash (flags 3), so one that does not match is not used. */
static void
kernel_files_come_compiled(void **state)
{
	struct sg_sbxd_files fs;
	const struct sg_sbxd_file *f;
	const char *mods[] = { "sg_cells.", "sg_ipython.", "sg_mpl.", NULL };
	char prefix[64];
	int i;

	load_kernel(*state, "print('kernel')\n", &fs);
	assert_string_equal(fs.script, "/sandgate/kernel.pyc");
	assert_non_null(file_at(&fs, "/sandgate/kernel.py"));
	assert_non_null(f = file_at(&fs, "/sandgate/kernel.pyc"));
	assert_true(f->len > 16);
	for (i = 0; mods[i] != NULL; i++) {
		snprintf(prefix, sizeof(prefix), "/sandgate/__pycache__/%s",
		    mods[i]);
		assert_non_null(f = file_at(&fs, prefix));
		assert_non_null(strstr(f->dest, ".pyc"));
		assert_true(f->len > 16);
		assert_memory_equal(f->data + 4, "\3\0\0\0", 4);
	}
	sg_sbxd_files_free(&fs);
}

/* A kernel that does not compile is handed in as source: python then
 * says why, as it did before there was bytecode. */
static void
kernel_without_bytecode_runs_its_source(void **state)
{
	struct sg_sbxd_files fs;

	load_kernel(*state, "def (:\n", &fs);
	assert_string_equal(fs.script, "/sandgate/kernel.py");
	assert_null(file_at(&fs, "/sandgate/kernel.pyc"));
	assert_non_null(file_at(&fs, "/sandgate/kernel.py"));
	sg_sbxd_files_free(&fs);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(v1_found_per_controller),
		T(v1_without_pids_is_none),
		T(v1_one_group_per_user_and_store),
		T(v1_refuses_a_link_and_a_foreign_dir),
		T(v2_needs_controllers_and_no_strangers),
		T(v2_sandboxd_again_finds_the_service_group),
		cmocka_unit_test(seccomp_filter_builds),
		cmocka_unit_test(memfd_holds_the_data_from_the_start),
		cmocka_unit_test(sun_names_the_socket_through_its_directory),
		T(a_socket_in_a_long_path_is_bound_and_reached),
		T(rundir_is_ours_and_cleaned),
		T(rundir_leaves_live_instances_alone),
		T(rmtree_stays_inside),
		T(kernel_files_come_compiled),
		T(kernel_without_bytecode_runs_its_source),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
