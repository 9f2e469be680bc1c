/*
 * The sandboxes a dead sandboxd left running, and how the next one ends
 * them.
 *
 * Started as root, sandboxd runs each kernel under a sandbox uid of its
 * own, and keeps CAP_KILL permitted but not effective. When it is killed
 * (or crashes) its kernels' parent-death signal is checked against its
 * credentials, those of the gateway's user, and dropped: the kernels live
 * on until their lifetime ends, holding memory and their uids. Keeping
 * CAP_KILL effective would let that signal through, but would also make
 * every kill sandboxd does a privileged one: it stays raised only for
 * the step that needs it. (Started as any other user, kernels run as that
 * user, and die with it.)
 *
 * So whoever comes next ends them: the sandboxd the master starts again
 * (at once), any sandboxd of a gateway on the same store as it starts,
 * and every live one now and then. What is a leftover is decided by what
 * nobody but root can forge:
 *  - every uid of the process is one sandbox uid: only sandboxd starts
 *    processes under those;
 *  - no live sandboxd claims that uid (sbxd_uids.c): a sandboxd claims the
 *    uid before its sandbox starts and until its last process is gone, and
 *    the kernel drops its claims when it dies. The sweep takes the claim
 *    itself, so none can start a sandbox under the uid until it is done.
 * Where to look is all the rest says: the sandbox groups of this store
 * (sbxd_cgroup.c), and for sandboxes without one, a record each kernel's
 * sandboxd left in its kernels/ directory. That directory is the gateway
 * user's, and so is any responder an attacker took over: a record is
 * untrusted, and a process it names is killed only if it is a leftover
 * as above, still the process that started at the time the record says.
 * /proc/PID, open, holds the process from the checks to the kill, so a
 * pid reused meanwhile is never hit.
 */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/capability.h>

#include "sbxd.h"

#define KILL_ROUNDS	300	/* of 10 ms: how long a sweep may wait */

/* The file name in dfd into buf (NUL-terminated): 0, or -1. */
static int
slurp(int dfd, const char *name, char *buf, size_t sz)
{
	ssize_t n;
	int fd;

	if ((fd = openat(dfd, name, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sz - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? 0 : -1;
}

/*
 * Of the process open as pfd (/proc/PID): its uid when its real,
 * effective, saved and filesystem uids are all that one, and its start
 * time. 0, or -1 (one that ended, a zombie too: nothing to kill).
 */
static int
read_proc(int pfd, uid_t *uid, unsigned long long *start)
{
	char buf[4096], *p;
	unsigned long u[4];
	int i;

	if (slurp(pfd, "status", buf, sizeof(buf)) == -1 ||
	    (p = strstr(buf, "\nState:\t")) == NULL || p[8] == 'Z' ||
	    p[8] == 'X' || (p = strstr(buf, "\nUid:")) == NULL ||
	    sscanf(p + 5, "%lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) != 4)
		return -1;
	for (i = 1; i < 4; i++)
		if (u[i] != u[0])
			return -1;
	/* The name, in parentheses, may hold anything: fields follow the
	 * last ')'. The start time is the 20th after it. */
	if (slurp(pfd, "stat", buf, sizeof(buf)) == -1 ||
	    (p = strrchr(buf, ')')) == NULL)
		return -1;
	for (i = 0; i < 20 && p != NULL; i++)
		p = strchr(p + 1, ' ');
	if (p == NULL)
		return -1;
	*uid = (uid_t)u[0];
	*start = strtoull(p + 1, NULL, 10);
	return 0;
}

/* /proc/PID open, or -1. */
static int
open_proc(pid_t pid)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int
sg_sbxd_record(int kernels, const char *id, pid_t pid)
{
	unsigned long long start;
	char name[64], text[64];
	uid_t uid;
	int fd, n, rc;

	if ((fd = open_proc(pid)) == -1)
		return -1;
	rc = read_proc(fd, &uid, &start);
	close(fd);
	if (rc == -1)
		return -1;
	n = snprintf(text, sizeof(text), "%d %llu\n", (int)pid, start);
	snprintf(name, sizeof(name), "%s.pid", id);
	unlinkat(kernels, name, 0);
	if ((fd = openat(kernels, name, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		return -1;
	rc = write(fd, text, (size_t)n) == n ? 0 : -1;
	if (close(fd) == -1)
		rc = -1;
	return rc;
}

void
sg_sbxd_sweep_begin(struct sg_sbxd_sweep *sw, int uids, unsigned base,
    const unsigned char *taken)
{
	memset(sw, 0, sizeof(*sw));
	sw->uids = uids;
	sw->base = base;
	sw->taken = taken;
}

/* Whether slot's uid is claimed for this sweep: by us now, or before. */
static int
hold(struct sg_sbxd_sweep *sw, unsigned slot)
{
	if (!sw->held[slot] && sg_sbxd_uid_claim(sw->uids, sw->base + slot) == 1)
		sw->held[slot] = 1;
	return sw->held[slot];
}

/* The slot of the process open as pfd if it is a leftover (see the top;
 * start: its start time, or 0 for any), else -1. */
static int
leftover(struct sg_sbxd_sweep *sw, int pfd, unsigned long long start)
{
	unsigned long long st;
	uid_t uid;

	return read_proc(pfd, &uid, &st) == 0 && (start == 0 || st == start) &&
	    uid >= sw->base && uid - sw->base < SG_SBXD_MAX &&
	    !sw->taken[uid - sw->base] && hold(sw, uid - sw->base) ?
	    (int)(uid - sw->base) : -1;
}

/* SIGKILL pid if it is a leftover: 1 when it was, 0 when not. */
static int
kill_leftover(struct sg_sbxd_sweep *sw, pid_t pid, unsigned long long start)
{
	int pfd, slot, rc = 0;

	if (sw->uids == -1 || pid <= 1 || (pfd = open_proc(pid)) == -1)
		return 0;
	/* /proc/PID, once open, is that process, as a pidfd is: what is
	 * read through it and signalled is never another that has the pid
	 * since. (Before Linux 5.1, or under valgrind, kill(2) follows the
	 * checks.) */
	if ((slot = leftover(sw, pfd, start)) != -1) {
		sg_sbxd_caps_raise(1u << CAP_KILL);
		rc = syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) == 0 ||
		    (errno == ENOSYS && kill(pid, SIGKILL) == 0);
		sg_sbxd_caps_lower();
		sw->hit[slot] |= rc;
	}
	close(pfd);
	return rc;
}

void
sg_sbxd_sweep_records(struct sg_sbxd_sweep *sw, int kernels)
{
	unsigned long long start;
	struct dirent *de;
	struct stat st;
	char text[64];
	ssize_t n;
	DIR *d;
	int fd, pid;

	if (sw == NULL || sw->uids == -1 || (fd = openat(kernels, ".",
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		n = (ssize_t)strlen(de->d_name);
		if (n < 5 || strcmp(de->d_name + n - 4, ".pid") != 0 ||
		    (fd = openat(kernels, de->d_name, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) == -1)
			continue;
		n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ?
		    read(fd, text, sizeof(text) - 1) : -1;
		close(fd);
		text[n > 0 ? n : 0] = '\0';
		if (sscanf(text, "%d %llu", &pid, &start) == 2 && start != 0)
			kill_leftover(sw, (pid_t)pid, start);
	}
	closedir(d);
}

/* A process of a sandbox group: killed if a leftover, its group noted. */
static int
group_proc(const char *id, pid_t pid, void *arg)
{
	struct sg_sbxd_sweep *sw = arg;
	int i;

	if (!kill_leftover(sw, pid, 0))
		return 0;
	for (i = 0; i < sw->ngroups && strcmp(sw->groups[i], id) != 0; i++)
		;
	if (i == sw->ngroups && i < SG_SBXD_SWEEP_GROUPS &&
	    strlen(id) < sizeof(sw->groups[i]))
		memcpy(sw->groups[sw->ngroups++], id, strlen(id) + 1);
	return 1;
}

int
sg_sbxd_sweep_end(struct sg_sbxd_sweep *sw, const struct sg_cg *cg)
{
	unsigned i;
	int round, n = 0;

	if (sw->uids == -1)
		return 0;
	/* Until a round finds none: one killed but still ending is
	 * killed again, and forks racing the kill are caught. */
	for (round = 0; round < KILL_ROUNDS && sg_cg_each_proc(cg, group_proc,
	    sw) > 0; round++)
		usleep(10000);
	for (round = 0; round < sw->ngroups; round++)
		sg_cg_remove(cg, sw->groups[round]);
	for (i = 0; i < SG_SBXD_MAX; i++) {
		if (sw->held[i])
			sg_sbxd_uid_release(sw->uids, sw->base + i);
		n += sw->hit[i];
	}
	return n;
}
