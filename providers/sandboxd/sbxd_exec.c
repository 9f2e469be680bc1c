/*
 * The exec of one local kernel, in a child sandboxd forked: limits, its
 * cgroup, its uid, and bubblewrap with an empty environment, so nothing
 * of the gateway (environment, argv, files) is visible inside. Also the
 * exec of slirp4netns for a sandbox with internet access, and the few
 * capabilities sandboxd keeps.
 */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/nsfs.h>

#include "sbxd.h"

#define KEEP_CAPS ((1u << CAP_SETUID) | (1u << CAP_SETGID) | (1u << CAP_KILL))
#define MAX_FDS	  24
#define MAX_ARGS  256

/* A sandbox with internet access resolves through slirp4netns. */
static const char resolv_conf[] = "nameserver 10.0.2.3\n";
static const char hosts[] = "127.0.0.1 localhost sandbox\n::1 localhost\n";

static int
capset_mask(unsigned permitted, unsigned effective)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	d[0].permitted = permitted;
	d[0].effective = effective & permitted;
	return (int)syscall(SYS_capset, &h, d);
}

int
sg_sbxd_caps_raise(unsigned mask)
{
	return capset_mask(KEEP_CAPS, mask);
}

int
sg_sbxd_caps_lower(void)
{
	return capset_mask(KEEP_CAPS, 0);
}

int
sg_sbxd_become(uid_t uid)
{
	if (sg_sbxd_caps_raise((1u << CAP_SETUID) | (1u << CAP_SETGID)) == -1 ||
	    setgroups(0, NULL) == -1 || setgid(uid) == -1 || setuid(uid) == -1)
		return -1;
	/* From one non-root uid to another the kernel keeps our caps: drop
	 * them all, so nothing privileged reaches what we exec. */
	return capset_mask(0, 0);
}

static void
limit(int res, rlim_t v)
{
	struct rlimit rl = { v, v };

	setrlimit(res, &rl);
}

/* Signals and mask as a fresh process has them. */
static void
fresh_signals(void)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
}

/* Put fds[0..n) at first, first+1, ...; close everything above. stdio
 * becomes /dev/null. -1 on failure. */
static int
place_fds(int *fds, int n, int first)
{
	int tmp[MAX_FDS], i, devnull;

	if ((devnull = open("/dev/null", O_RDWR)) == -1)
		return -1;
	for (i = 0; i < n; i++)
		if ((tmp[i] = fcntl(fds[i], F_DUPFD, 64)) == -1)
			return -1;
	for (i = 0; i < 3; i++)
		dup2(devnull, i);
	for (i = 0; i < n; i++)
		if (dup2(tmp[i], first + i) == -1)
			return -1;
	close_range((unsigned)(first + n), ~0U, 0);
	for (i = 0; i < n; i++) {
		fds[i] = first + i;
		fcntl(fds[i], F_SETFD, 0);
	}
	return 0;
}

struct argv {
	const char	*v[MAX_ARGS];
	char		 num[32][24];
	int		 n, nums;
};

static void
arg(struct argv *a, const char *s)
{
	if (a->n < MAX_ARGS - 1)
		a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

static const char *
num(struct argv *a, long long v)
{
	snprintf(a->num[a->nums], sizeof(a->num[0]), "%lld", v);
	return a->num[a->nums++];
}

static void
fixed_args(struct argv *a)
{
	static const char *const fixed[] = { SG_SBXD_BWRAP,
	    "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
	    "--unshare-net", "--unshare-cgroup-try", "--disable-userns",
	    "--new-session", "--die-with-parent", "--cap-drop", "ALL",
	    "--hostname", "sandbox",
	    "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
	    "--setenv", "HOME", "/home/user", "--setenv", "LANG", "C.UTF-8",
	    "--setenv", "MPLBACKEND", "module://sg_mpl",
	    "--setenv", "MPLCONFIGDIR", "/home/user/.config/matplotlib",
	    "--setenv", "SANDGATE_PIDNS", "1",
	    "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
	    "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
	    "--symlink", "usr/sbin", "/sbin",
	    "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
	    "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
	    "--ro-bind-try", "/etc/localtime", "/etc/localtime",
	    "--ro-bind-try", "/etc/matplotlibrc", "/etc/matplotlibrc",
	    "--ro-bind-try", "/etc/fonts", "/etc/fonts",
	    "--proc", "/proc", "--dev", "/dev", NULL };
	int i;

	for (i = 0; fixed[i] != NULL; i++)
		arg(a, fixed[i]);
}

/*
 * The fds a kernel's bubblewrap reads, made in the child: the kernel's
 * files, the seccomp filter, and for internet sandboxes resolv.conf,
 * hosts and the info/block pipes. Then the argv that names them.
 */
static int
bwrap_args(const struct sg_sbxd_spec *s, struct argv *a)
{
	int fds[MAX_FDS], nfd = 0, i, seccomp, data[MAX_FDS], ndata = 0;
	const char *dest[MAX_FDS];
	long long disk = (long long)s->disk_mb << 20;

	fds[nfd++] = s->lfd;
	for (i = 0; i < (int)s->files->n; i++) {
		dest[ndata] = s->files->f[i].dest;
		data[ndata++] = nfd;
		if ((fds[nfd++] = sg_sbxd_memfd("sandgate-file",
		    s->files->f[i].data, s->files->f[i].len)) == -1)
			return -1;
	}
	if (s->net) {
		dest[ndata] = "/etc/resolv.conf";
		data[ndata++] = nfd;
		fds[nfd++] = sg_sbxd_memfd("resolv", resolv_conf,
		    sizeof(resolv_conf) - 1);
		dest[ndata] = "/etc/hosts";
		data[ndata++] = nfd;
		fds[nfd++] = sg_sbxd_memfd("hosts", hosts, sizeof(hosts) - 1);
		fds[nfd++] = s->info_fd;
		fds[nfd++] = s->block_fd;
	}
	seccomp = nfd;
	fds[nfd++] = sg_sbxd_memfd("seccomp", s->seccomp->p, s->seccomp->len);
	for (i = 0; i < nfd; i++)
		if (fds[i] == -1)
			return -1;
	if (place_fds(fds, nfd, 3) == -1)
		return -1;
	fixed_args(a);
	/* /dev/shm is memory: sized like the work dir, and /dev read-only. */
	arg(a, "--size"); arg(a, num(a, disk)); arg(a, "--tmpfs"); arg(a, "/dev/shm");
	arg(a, "--remount-ro"); arg(a, "/dev");
	/* --size goes before the --tmpfs it limits (bwrap 0.8). */
	arg(a, "--size"); arg(a, num(a, disk)); arg(a, "--tmpfs"); arg(a, "/home/user");
	arg(a, "--size"); arg(a, num(a, disk)); arg(a, "--tmpfs"); arg(a, "/tmp");
	/* Where OpenAI's code interpreter keeps the files it is given and
	 * writes, and its working directory: a tmpfs of its own. */
	arg(a, "--size"); arg(a, num(a, disk)); arg(a, "--tmpfs");
	arg(a, "/mnt/data");
	for (i = 0; i < ndata; i++) {
		arg(a, "--perms"); arg(a, "0444");
		arg(a, "--ro-bind-data"); arg(a, num(a, fds[data[i]]));
		arg(a, dest[i]);
	}
	if (s->net) {
		arg(a, "--ro-bind-try"); arg(a, "/etc/ssl"); arg(a, "/etc/ssl");
		arg(a, "--ro-bind-try"); arg(a, "/etc/ca-certificates");
		arg(a, "/etc/ca-certificates");
		arg(a, "--info-fd"); arg(a, num(a, fds[nfd - 3]));
		arg(a, "--block-fd"); arg(a, num(a, fds[nfd - 2]));
	}
	arg(a, "--seccomp"); arg(a, num(a, fds[seccomp]));
	/* The root bwrap builds is a writable tmpfs: seal it. The tmpfs
	 * mounts on top of it stay writable. */
	arg(a, "--remount-ro"); arg(a, "/");
	arg(a, "--chdir"); arg(a, "/mnt/data");
	arg(a, SG_SBXD_PYTHON); arg(a, "-I"); arg(a, s->files->script);
	return 0;
}

/* isolation = "none" (development only): the kernel as installed, with
 * fd 3 its socket. */
static int
bare_args(const struct sg_sbxd_spec *s, struct argv *a)
{
	static char path[1024];
	int fd = s->lfd;

	if (place_fds(&fd, 1, 3) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/kernel.py", s->kernel_src);
	arg(a, SG_SBXD_PYTHON); arg(a, "-I"); arg(a, path);
	return 0;
}

/*
 * End with sandboxd: bubblewrap asks for this too (--die-with-parent), but
 * only once it runs; sandboxd dying before that would leave an orphan.
 * Set after the change of uid, which clears it.
 */
static void
die_with(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(124);
}

void
sg_sbxd_exec(const struct sg_sbxd_spec *s)
{
	static char *const envp[] = { NULL };
	static struct argv a;
	long long data = (long long)s->memory_mb << 20;
	pid_t parent = getppid();

	fresh_signals();
	if (s->cgroup && sg_cg_enter(s->cg, s->id) == -1)
		_exit(123);
	if ((s->bwrap ? bwrap_args(s, &a) : bare_args(s, &a)) == -1)
		_exit(120);
	arg(&a, "--lifetime"); arg(&a, num(&a, s->lifetime));
	arg(&a, "--kernel"); arg(&a, s->kernel);
	/* With a cgroup, the sandbox as a whole gets memory_mb; one process
	 * gets a little less, so a single huge allocation is a MemoryError
	 * the kernel survives, not an OOM kill of the kernel. */
	if (s->cgroup && data > (96LL << 20))
		data -= 64LL << 20;
	limit(RLIMIT_DATA, (rlim_t)data);
	limit(RLIMIT_FSIZE, (rlim_t)s->disk_mb << 20);
	limit(RLIMIT_NOFILE, 256);
	limit(RLIMIT_CORE, 0);
	limit(RLIMIT_NPROC, (rlim_t)s->max_procs + (rlim_t)s->extra_nproc);
	if (s->uid != 0 && sg_sbxd_become(s->uid) == -1)
		_exit(121);
	die_with(parent);
	execve(a.v[0], (char *const *)a.v, envp);
	_exit(122);
}

void
sg_sbxd_exec_net(const struct sg_sbxd_spec *s, pid_t pid, int ready_fd,
    int exit_fd)
{
	static char *const envp[] = { NULL };
	static struct argv a;
	char path[64];
	int fds[3] = { ready_fd, exit_fd, -1 }, nsfd;
	pid_t parent = getppid();

	fresh_signals();
	if (s->cgroup && sg_cg_enter(s->cg, s->id) == -1)
		_exit(123);
	if (s->uid != 0 && sg_sbxd_become(s->uid) == -1)
		_exit(121);
	/* bubblewrap nests user namespaces: the one to join is the owner
	 * of the sandbox's network namespace, not the process's own. */
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if ((nsfd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    (fds[2] = ioctl(nsfd, NS_GET_USERNS)) == -1 ||
	    place_fds(fds, 3, 3) == -1)
		_exit(120);
	limit(RLIMIT_CORE, 0);
	die_with(parent);
	arg(&a, SG_SBXD_SLIRP); arg(&a, "--configure"); arg(&a, "--mtu=65520");
	arg(&a, "--disable-host-loopback"); arg(&a, "--enable-seccomp");
	arg(&a, "--ready-fd"); arg(&a, num(&a, fds[0]));
	arg(&a, "--exit-fd"); arg(&a, num(&a, fds[1]));
	snprintf(path, sizeof(path), "--userns-path=/proc/self/fd/%d", fds[2]);
	arg(&a, path);
	arg(&a, num(&a, pid)); arg(&a, "tap0");
	execve(a.v[0], (char *const *)a.v, envp);
	_exit(122);
}
