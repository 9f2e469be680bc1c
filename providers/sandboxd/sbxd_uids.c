/*
 * Sandbox uids, one per live sandbox across every gateway on the host.
 * Each gateway started as root runs its sandboxes under uids of one
 * reserved range; two gateways choosing at the same moment must never
 * take the same one (RLIMIT_NPROC, the firewall's rules, files on shared
 * mounts all go by uid: two tenants under one uid share them).
 *
 * A uid is claimed with an open-file-description lock on one byte (at
 * the uid's own offset, whatever range a gateway uses) of one file,
 * /run/sandgate/uids.lock, opened by sandboxd while it is still root and
 * kept open:
 *  - the claim is one fcntl, atomic in the kernel, and the kernel drops
 *    it when the last fd of that open file goes, so a sandboxd that
 *    crashes or is killed leaks nothing, and nothing needs cleaning;
 *  - OFD locks belong to the open file, not the process (classic POSIX
 *    locks vanish when the process closes any fd of the file, and never
 *    conflict within it); two sandboxds open the file apart, so conflict;
 *  - the file is root's, mode 0600, in a directory only root may change:
 *    no other user can open it to lock uids away, pre-create it or point
 *    it elsewhere.
 * An abstract Unix socket per uid would free itself on death too, but any
 * user on the host may bind a name first (and so block a uid), the names
 * are per network namespace, and each sandbox would hold one more fd.
 *
 * The lock says who may start a process as the uid; /proc says whether
 * one still runs (a kernel that outlived its sandboxd, processes of a
 * sandbox still dying): both must be free. The /proc scan follows the
 * claim, so no process of the uid can appear after the scan but from the
 * claim's holder, which is us.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sbxd.h"

#define LOCK_NAME	"uids.lock"

/* A directory we may trust: not a link, ours, and nobody else may
 * change what it holds (sticky directories like /tmp excepted: others
 * may add entries there but not replace ours). */
static int
trusted_dir(int fd, int sticky_ok)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid() && ((st.st_mode & 0022) == 0 ||
	    (sticky_ok && (st.st_mode & S_ISVTX)));
}

int
sg_sbxd_uids_open(const char *dir, char *why, size_t whysz)
{
	const char *name = strrchr(dir, '/');
	char parent[4096];
	struct stat st;
	int pfd = -1, dfd = -1, fd = -1;

	if (name == NULL || name[1] == '\0' ||
	    (size_t)(name - dir) >= sizeof(parent)) {
		snprintf(why, whysz, "%s: not a path to a directory", dir);
		return -1;
	}
	snprintf(parent, sizeof(parent), "%.*s", (int)(name - dir), dir);
	if (parent[0] == '\0')
		snprintf(parent, sizeof(parent), "/");
	name++;
	if ((pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    !trusted_dir(pfd, 1)) {
		snprintf(why, whysz, "%s is missing or others may change it",
		    parent);
		goto out;
	}
	if (mkdirat(pfd, name, 0755) == -1 && errno != EEXIST) {
		snprintf(why, whysz, "cannot make %s: %s", dir, strerror(errno));
		goto out;
	}
	if ((dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || !trusted_dir(dfd, 0)) {
		snprintf(why, whysz, "%s is not a directory only %s may change",
		    dir, geteuid() == 0 ? "root" : "we");
		goto out;
	}
	if ((fd = openat(dfd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_NOCTTY | O_CLOEXEC, 0600)) == -1 || fstat(fd, &st) == -1 ||
	    !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 0077) != 0) {
		snprintf(why, whysz, "%s/%s is not a file only %s may open", dir,
		    LOCK_NAME, geteuid() == 0 ? "root" : "we");
		if (fd != -1)
			close(fd);
		fd = -1;
	}
out:
	if (dfd != -1)
		close(dfd);
	if (pfd != -1)
		close(pfd);
	return fd;
}

static int
lock_byte(int fd, uid_t uid, short type)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)uid;
	fl.l_len = 1;
	return fcntl(fd, F_OFD_SETLK, &fl);
}

int
sg_sbxd_uid_claim(int fd, uid_t uid)
{
	if (lock_byte(fd, uid, F_WRLCK) == 0)
		return 1;
	return errno == EAGAIN || errno == EACCES ? 0 : -1;
}

void
sg_sbxd_uid_release(int fd, uid_t uid)
{
	lock_byte(fd, uid, F_UNLCK);
}

/* Where a search starts: anywhere, so that gateways creating sandboxes
 * together do not all try the same first slots. */
static unsigned
start_slot(void)
{
	unsigned r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);
	return r % SG_SBXD_MAX;
}

int
sg_sbxd_uid_pick(int fd, unsigned base, const unsigned char *taken)
{
	unsigned char busy[SG_SBXD_MAX];
	unsigned i, j, start = start_slot();

	memset(busy, 0, sizeof(busy));
	for (j = 0; j < SG_SBXD_MAX; j++) {
		i = (start + j) % SG_SBXD_MAX;
		if (taken[i] || busy[i] || sg_sbxd_uid_claim(fd, base + i) != 1)
			continue;
		/* Ours now: no one else starts a process as it. Does any
		 * process still run as it? */
		sg_sbxd_scan_uids((uid_t)-1, base, busy);
		if (!busy[i])
			return (int)i;
		sg_sbxd_uid_release(fd, base + i);
	}
	return -1;
}

int
sg_sbxd_scan_uids(uid_t uid, unsigned base, unsigned char *busy)
{
	char path[300], line[256];
	struct dirent *de;
	unsigned long u;
	int n = 0, threads;
	DIR *d;
	FILE *f;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		u = (unsigned long)-1;
		threads = 1;
		while (fgets(line, sizeof(line), f) != NULL) {
			if (strncmp(line, "Uid:", 4) == 0)
				u = strtoul(line + 4, NULL, 10);
			else if (strncmp(line, "Threads:", 8) == 0)
				threads = atoi(line + 8);
		}
		fclose(f);
		if (u == (unsigned long)uid)
			n += threads;
		if (busy != NULL && u >= base && u < base + SG_SBXD_MAX)
			busy[u - base] = 1;
	}
	closedir(d);
	return n;
}
