/*
 * One cgroup per local sandbox, so its limits hold for the sandbox as a
 * whole (every process, shared memory and tmpfs pages included) and it
 * can be killed as a whole. cgroup v2 is used when our own cgroup is
 * delegated to us (systemd Delegate=yes); otherwise the v1 memory, pids
 * (and cpu) hierarchies, as root or where they are delegated. Root only
 * works inside directories root owns, through directory fds opened with
 * O_NOFOLLOW, so no less privileged user can redirect it.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sbxd.h"

#define GW		"/sandgate.gw"	/* v2: where the gateway moves */

static const char *const ctl_name[SG_CG_NCTL] = { "memory", "pids", "cpu" };

/* out = a/b (b NULL: a): 0, or -1 when it does not fit. */
int
sg_cg_join(char *out, size_t sz, const char *a, const char *b)
{
	int n = b != NULL ? snprintf(out, sz, "%s/%s", a, b) :
	    snprintf(out, sz, "%s", a);

	return n < 0 || (size_t)n >= sz ? -1 : 0;
}

/* Write text to dir/file: 0 or -1 (errno set). An interrupted write is
 * tried again (sg_sbxd_write_all): v1's memory limits answer EINTR
 * whenever any signal is pending. */
int
sg_cg_put(const char *dir, const char *file, const char *text)
{
	char path[700];
	int fd, rc, saved;

	if (sg_cg_join(path, sizeof(path), dir, file) == -1)
		return -1;
	if ((fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -1;
	rc = sg_sbxd_write_all(fd, text, strlen(text));
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

/* Read dir/file into buf (NUL-terminated): bytes, or -1. */
ssize_t
sg_cg_get(const char *dir, const char *file, char *buf, size_t sz)
{
	char path[700];
	ssize_t n;
	int fd;

	if (sg_cg_join(path, sizeof(path), dir, file) == -1)
		return -1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -1;
	n = read(fd, buf, sz - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* Whether word is in the list of words (separated by any of seps). */
static int
has_word(const char *list, const char *word, const char *seps)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word)) != NULL) {
		if ((p == list || strchr(seps, p[-1])) &&
		    (p[n] == '\0' || strchr(seps, p[n])))
			return 1;
		p += n;
	}
	return 0;
}

/*
 * The directory of our own cgroup in the hierarchy that has ctl (NULL:
 * the unified one): its mount point from mountinfo, plus our path from
 * /proc/self/cgroup less the mount's root. 0, or -1 when there is none.
 */
static int
own_dir(const struct sg_cg *cg, const char *ctl, char *out, size_t outsz)
{
	char line[2048], mnt[512] = "", root[512] = "", path[1024] = "";
	FILE *f;
	int found = 0;

	if ((f = fopen(cg->mountinfo, "re")) == NULL)
		return -1;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		char r[512], m[512], fstype[64], super[512], *dash;

		if ((dash = strstr(line, " - ")) == NULL ||
		    sscanf(line, "%*s %*s %*s %511s %511s", r, m) != 2 ||
		    sscanf(dash + 3, "%63s %*s %511s", fstype, super) != 2)
			continue;
		if (ctl == NULL ? strcmp(fstype, "cgroup2") == 0 :
		    strcmp(fstype, "cgroup") == 0 && has_word(super, ctl, ",")) {
			sg_copy(root, sizeof(root), r);
			sg_copy(mnt, sizeof(mnt), m);
			found = 1;
		}
	}
	fclose(f);
	if (!found || (f = fopen(cg->self_cgroup, "re")) == NULL)
		return -1;
	found = 0;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		char *a = strchr(line, ':'), *b = a != NULL ? strchr(a + 1, ':') :
		    NULL;

		if (b == NULL)
			continue;
		*b = '\0';
		line[strcspn(line, ":")] = '\0';
		if (ctl == NULL ? strcmp(line, "0") == 0 && b == a + 1 :
		    has_word(a + 1, ctl, ",")) {
			b[1 + strcspn(b + 1, "\n")] = '\0';
			sg_copy(path, sizeof(path), b + 1);
			found = 1;
		}
	}
	fclose(f);
	if (!found)
		return -1;
	/* Inside a cgroup namespace the mount's root is a prefix of ours. */
	if (strcmp(root, "/") != 0 && strncmp(path, root, strlen(root)) == 0)
		memmove(path, path + strlen(root), strlen(path + strlen(root)) + 1);
	snprintf(out, outsz, "%s%s", mnt, strcmp(path, "/") == 0 ? "" : path);
	return 0;
}

/*
 * Make parent/name our group. As root: only in a directory root owns,
 * never through a link, and the new group is handed to owner. As anyone
 * else: only in a directory we own (a delegated one).
 */
static int
make_group(const char *parent, const char *name, uid_t owner, gid_t group,
    char *out, size_t outsz)
{
	struct stat st;
	int pfd, gfd = -1, rc = -1;

	if ((pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	if (fstat(pfd, &st) == -1 || st.st_uid != geteuid() ||
	    (geteuid() != 0 && faccessat(pfd, ".", W_OK, AT_EACCESS) == -1)) {
		errno = EACCES;
		goto out;
	}
	if (mkdirat(pfd, name, 0755) == -1 && errno != EEXIST)
		goto out;
	if ((gfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		goto out;
	if (geteuid() == 0 && fchown(gfd, owner, group) == -1)
		goto out;
	rc = sg_cg_join(out, outsz, parent, name);
out:
	if (gfd != -1)
		close(gfd);
	close(pfd);
	return rc;
}

/* As root, give the file dir/name (not a link) to owner. */
static int
give(const char *dir, const char *name, uid_t owner, gid_t group)
{
	int fd, rc;

	if (geteuid() != 0)
		return 0;
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1)
		return -1;
	rc = fchownat(fd, name, owner, group, AT_SYMLINK_NOFOLLOW);
	close(fd);
	return rc;
}

/* Whether pid is the gateway's master or one of its descendants. */
static int
ours(pid_t pid)
{
	pid_t master = getppid();
	char path[64], line[128];
	int depth;
	FILE *f;

	for (depth = 0; depth < 16 && pid > 1; depth++) {
		if (pid == master)
			return 1;
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		if ((f = fopen(path, "re")) == NULL)
			return 0;
		pid = 0;
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "PPid: %d", &pid) == 1)
				break;
		fclose(f);
	}
	return 0;
}

/* Whether every process in dir is the gateway's. */
static int
only_ours(const char *dir)
{
	char buf[65536], *p, *end;

	if (sg_cg_get(dir, "cgroup.procs", buf, sizeof(buf)) < 0)
		return 0;
	for (p = buf; (end = strchr(p, '\n')) != NULL; p = end + 1)
		if (!ours((pid_t)atoi(p)))
			return 0;
	return 1;
}

/* Move every process of from into to (new ones may appear meanwhile). */
static int
move_all(const char *from, const char *to)
{
	char buf[65536], *p, *end;
	int round;

	for (round = 0; round < 20; round++) {
		if (sg_cg_get(from, "cgroup.procs", buf, sizeof(buf)) < 0)
			return -1;
		if (buf[0] == '\0')
			return 0;
		for (p = buf; (end = strchr(p, '\n')) != NULL; p = end + 1) {
			*end = '\0';
			sg_cg_put(to, "cgroup.procs", p);
		}
	}
	return -1;
}

/* Per-sandbox groups a sandboxd that died left behind (its kernels died
 * with it, so they are empty). Another master's sandboxd on the same
 * store shares the group: one of its groups is busy (rmdir fails) but
 * for the moment between its mkdir and its kernel entering it, so only
 * groups a minute old go. */
static void
clean_stale(const char *dir)
{
	struct dirent *de;
	struct stat st;
	time_t now = time(NULL);
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "cntr_", 5) == 0 &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_mtime <= now - SG_SBXD_STALE_S)
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	closedir(d);
}

/*
 * v2: the no-internal-process rule wants our own cgroup empty before its
 * controllers can reach children. The gateway's processes move into
 * sandgate.gw, the sandboxes live under sandgate.sbx.
 */
static int
setup_v2(struct sg_cg *cg, const char *own, uid_t owner, gid_t group)
{
	char ctls[256], gw[sizeof(cg->dir[0])], sbx[sizeof(cg->dir[0])];
	const char *enable = "+memory +pids +cpu";

	if (sg_cg_get(own, "cgroup.controllers", ctls, sizeof(ctls)) < 0 ||
	    !has_word(ctls, "memory", " \n") || !has_word(ctls, "pids", " \n")) {
		snprintf(cg->why, sizeof(cg->why), "cgroup v2 at %.200s offers no "
		    "memory and pids controllers (delegate them: systemd "
		    "Delegate=yes)", own);
		return -1;
	}
	if (!has_word(ctls, "cpu", " \n"))
		enable = "+memory +pids";
	/* Taking the cgroup over moves everything in it: only when that is
	 * the gateway alone (its own service), never a login session. */
	if (!only_ours(own)) {
		snprintf(cg->why, sizeof(cg->why), "cgroup v2 at %.200s holds "
		    "processes that are not sandgate's (run it as a service of "
		    "its own with Delegate=yes)", own);
		return -1;
	}
	if (make_group(own, GW + 1, owner, group, gw, sizeof(gw)) == -1 ||
	    move_all(own, gw) == -1 || sg_cg_put(own, "cgroup.subtree_control",
	    enable) == -1 || make_group(own, "sandgate.sbx", owner, group, sbx,
	    sizeof(sbx)) == -1 || sg_cg_put(sbx, "cgroup.subtree_control",
	    enable) == -1 || give(own, "cgroup.procs", owner, group) == -1 ||
	    give(gw, "cgroup.procs", owner, group) == -1 ||
	    give(sbx, "cgroup.procs", owner, group) == -1 ||
	    give(sbx, "cgroup.subtree_control", owner, group) == -1) {
		snprintf(cg->why, sizeof(cg->why), "cgroup v2 at %.200s: cannot "
		    "make sandgate's groups: %s", own, strerror(errno));
		return -1;
	}
	clean_stale(sbx);
	memcpy(cg->dir[SG_CG_MEMORY], sbx, sizeof(sbx));
	memcpy(cg->dir[SG_CG_PIDS], sbx, sizeof(sbx));
	if (strstr(enable, "cpu") != NULL)
		memcpy(cg->dir[SG_CG_CPU], sbx, sizeof(sbx));
	cg->mode = SG_CG_V2;
	return 0;
}

/*
 * v1: this gateway's group in each controller's hierarchy, kept across
 * restarts (as root it sits in a directory only root may change, so the
 * gateway's user could not remove it); cpu when it can be had. Gateways
 * of other users or other stores get groups of their own there (see
 * group_name), so none takes another's over, or cleans it.
 */
static int
setup_v1(struct sg_cg *cg, const char *name, uid_t owner, gid_t group)
{
	char own[sizeof(cg->dir[0])];
	int i;

	for (i = 0; i < SG_CG_NCTL; i++) {
		own[0] = '\0';
		if (own_dir(cg, ctl_name[i], own, sizeof(own)) == 0 &&
		    make_group(own, name, owner, group, cg->dir[i],
		    sizeof(cg->dir[i])) == 0) {
			clean_stale(cg->dir[i]);
			continue;
		}
		cg->dir[i][0] = '\0';
		if (i == SG_CG_CPU)
			continue;
		snprintf(cg->why, sizeof(cg->why), "cgroup v1 %s: %s", ctl_name[i],
		    own[0] != '\0' ? "our cgroup there is not ours to use (start "
		    "as root, or delegate it)" : "no such hierarchy");
		return -1;
	}
	cg->mode = SG_CG_V1;
	return 0;
}

/*
 * The name of this gateway's v1 group: "sandgate-UID-HASH", UID the
 * gateway's user, HASH the first 12 hex digits of the SHA-256 of home
 * (the local sandboxes' directory, one per store) made absolute. The
 * same after a restart; another user's or another store's gateway on
 * this host never has it. (Before, all shared "sandgate", and each one
 * started as root gave it to its own user, locking the others out.)
 */
static void
group_name(const char *home, uid_t owner, char *out, size_t outsz)
{
	char cwd[PATH_MAX], abs[2 * PATH_MAX], hash[65];

	if (home[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL ||
	    sg_cg_join(abs, sizeof(abs), cwd, home) == -1)
		sg_copy(abs, sizeof(abs), home);
	sg_sha256_hex(abs, strlen(abs), hash);
	snprintf(out, outsz, "sandgate-%u-%.12s", (unsigned)owner, hash);
}

void
sg_cg_setup(struct sg_cg *cg, const char *home, uid_t owner, gid_t group)
{
	char own[sizeof(cg->dir[0])], v2[sizeof(cg->why)] = "", name[64];
	size_t n;
	int i;

	cg->mode = SG_CG_NONE;
	for (i = 0; i < SG_CG_NCTL; i++)
		cg->dir[i][0] = '\0';
	if (cg->mountinfo == NULL)
		cg->mountinfo = "/proc/self/mountinfo";
	if (cg->self_cgroup == NULL)
		cg->self_cgroup = "/proc/self/cgroup";
	if (own_dir(cg, NULL, own, sizeof(own)) == 0) {
		/* A sandboxd the master starts again is born where the
		 * first one moved the gateway: the service's cgroup is the
		 * parent of that. */
		n = strlen(own);
		if (n > strlen(GW) && strcmp(own + n - strlen(GW), GW) == 0)
			own[n - strlen(GW)] = '\0';
		if (setup_v2(cg, own, owner, group) == 0)
			return;
		memcpy(v2, cg->why, sizeof(v2));
	}
	group_name(home, owner, name, sizeof(name));
	if (setup_v1(cg, name, owner, group) == 0 || v2[0] == '\0')
		return;
	n = strlen(cg->why);
	snprintf(cg->why + n, sizeof(cg->why) - n, "; %.300s", v2);
}

const char *
sg_cg_describe(const struct sg_cg *cg)
{
	static char text[700];

	if (cg->mode == SG_CG_NONE)
		snprintf(text, sizeof(text), "no cgroup: %s", cg->why);
	else
		snprintf(text, sizeof(text), "cgroup %s (memory, pids%s) under %s",
		    cg->mode == SG_CG_V2 ? "v2" : "v1", cg->dir[SG_CG_CPU][0] !=
		    '\0' ? ", cpu" : "", cg->dir[SG_CG_MEMORY]);
	return text;
}
