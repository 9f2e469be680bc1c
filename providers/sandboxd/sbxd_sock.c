/*
 * sandboxd's runtime directory and the Unix sockets in it: sandboxd's own
 * and one per kernel.
 *
 * The directory sits beside the store, wherever the user put it, but
 * AF_UNIX takes at most 107 bytes of path. So a socket is never named by
 * its full path: it is bound and reached through an open fd of its
 * directory, as /proc/self/fd/N/NAME. The kernel resolves the directory
 * through the fd whatever the length of its path, and that address is
 * short (NAME is ours: "sandboxd.sock", "cntr_<hex>.sock"). Nothing is
 * shared with other users either: no short name under /tmp that someone
 * else could make first.
 */
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sbxd.h"

int
sg_sbxd_sun(struct sockaddr_un *sun, int dirfd, const char *name)
{
	int n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (dirfd < 0 || *name == '\0' || strchr(name, '/') != NULL) {
		errno = EINVAL;
		return -1;
	}
	n = snprintf(sun->sun_path, sizeof(sun->sun_path), "/proc/self/fd/%d/%s",
	    dirfd, name);
	if (n < 0 || (size_t)n >= sizeof(sun->sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int
sg_sbxd_sun_path(struct sockaddr_un *sun, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int dfd, saved;

	if (slash == NULL)
		dir = strdup(".");
	else
		dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
	if (dir == NULL)
		return -1;
	/* O_PATH: a directory we may search but not read is enough. */
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (dfd == -1)
		return -1;
	if (sg_sbxd_sun(sun, dfd, slash != NULL ? slash + 1 : path) == -1) {
		saved = errno;
		close(dfd);
		errno = saved;
		return -1;
	}
	return dfd;
}

int
sg_sbxd_listen(int dirfd, const char *name, int backlog)
{
	struct sockaddr_un sun;
	mode_t old;
	int fd, rc, saved;

	if (sg_sbxd_sun(&sun, dirfd, name) == -1)
		return -1;
	/* The directory is ours alone: what is there is a stale socket. */
	unlinkat(dirfd, name, 0);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	old = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc == -1 || listen(fd, backlog) == -1) {
		saved = errno;
		close(fd);
		if (rc == 0)
			unlinkat(dirfd, name, 0);
		errno = saved;
		return -1;
	}
	return fd;
}

/*
 * name in at as a directory of ours (mode 0700), open: a link, or
 * anything but a directory, in its place is removed first, and so is an
 * empty directory of another user: one made while server.user was
 * someone else, whose sandboxd emptied it when it stopped (nothing in a
 * runtime directory outlives its sandboxd). Removed, never followed nor
 * chowned. The fd, or -1 with errno (EACCES for another user's that
 * is not empty).
 */
static int
own_dir(int at, const char *name)
{
	struct stat st;
	int fd;

	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) &&
	    unlinkat(at, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) == -1) {
		if (errno == ENOTEMPTY || errno == EEXIST)
			errno = EACCES;
		return -1;
	}
	if (mkdirat(at, name, 0700) == -1 && errno != EEXIST)
		return -1;
	if ((fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || st.st_uid != geteuid()) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/*
 * fn(dfd, name, arg) for each entry of the directory open as dfd but "."
 * and "..", until fn returns nonzero: that value, or 0.
 */
static int
each_entry(int dfd, int (*fn)(int, const char *, void *), void *arg)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	/* An open of its own: a dup would share (and leave) the offset. */
	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 0;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			rc = fn(dfd, de->d_name, arg);
	closedir(d);
	return rc;
}

/* Kernel sockets and records a previous sandboxd left. */
static int
remove_entry(int dfd, const char *name, void *arg)
{
	(void)arg;
	sg_sbxd_rmtree(dfd, name, 2);
	return 0;
}

/* The lock file of instance name in base: open, or -1. */
static int
open_lock(int base, const char *name, int flags)
{
	char path[300];

	if (snprintf(path, sizeof(path), "%s/lock", name) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return openat(base, path, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
}

int
sg_sbxd_alive(int base, const char *name)
{
	int fd = open_lock(base, name, O_RDONLY), alive;

	if (fd == -1)
		return 0;
	alive = flock(fd, LOCK_SH | LOCK_NB) == -1 && errno == EWOULDBLOCK;
	close(fd);
	return alive;
}

/* The records in kernels/ of instance name in base to sweep: opened one
 * level at a time, never through a link. */
static void
sweep_kernels(int base, const char *name, struct sg_sbxd_sweep *sweep)
{
	int dfd, kfd;

	if (sweep == NULL || (dfd = openat(base, name, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1)
		return;
	if ((kfd = openat(dfd, "kernels", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		sg_sbxd_sweep_records(sweep, kfd);
		close(kfd);
	}
	close(dfd);
}

struct dead {
	const char		*self;
	struct sg_sbxd_sweep	*sweep;
};

/*
 * What dead instances left in base: their kernels still running (a
 * sandboxd killed, its kernels' parent-death signal dropped: see
 * sbxd_orphans.c), then their directories, and anything else but
 * instances. Only what is a minute old is removed: a starting sandboxd
 * makes its directory a moment before it locks it.
 */
static int
remove_dead(int base, const char *name, void *arg)
{
	struct dead *dead = arg;
	struct stat st;

	if (strcmp(name, dead->self) == 0 || sg_sbxd_alive(base, name))
		return 0;
	sweep_kernels(base, name, dead->sweep);
	if (fstatat(base, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_mtime <= time(NULL) - SG_SBXD_STALE_S)
		sg_sbxd_rmtree(base, name, 5);
	return 0;
}

void
sg_sbxd_dead(int base, const char *self, struct sg_sbxd_sweep *sweep)
{
	struct dead dead = { self, sweep };

	each_entry(base, remove_dead, &dead);
}

struct found {
	char	*name;
	size_t	 sz;
};

static int
found_alive(int base, const char *name, void *arg)
{
	struct found *f = arg;

	return name[0] == 'm' && sg_sbxd_alive(base, name) &&
	    (size_t)snprintf(f->name, f->sz, "%s", name) < f->sz;
}

int
sg_sbxd_live_instance(int base, char *name, size_t namesz)
{
	struct found f = { name, namesz };

	return each_entry(base, found_alive, &f) ? 0 : -1;
}

/* The instance's lock, taken for the life of the process: retried for a
 * moment, as another process may be testing it (sg_sbxd_alive). */
static int
take_lock(int dfd)
{
	int fd, i;

	if ((fd = open_lock(dfd, ".", O_RDWR | O_CREAT)) == -1)
		return -1;
	for (i = 0; i < 100; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if (errno != EWOULDBLOCK)
			break;
		usleep(20000);
	}
	close(fd);
	return -1;
}

/* s as one sh word in out[sz]: single-quoted, each ' as '\''. */
static void
sh_quote(char *out, size_t sz, const char *s)
{
	size_t n = 0;

	out[n++] = '\'';
	for (; *s != '\0' && n + 6 < sz; s++)
		if (*s == '\'') {
			memcpy(out + n, "'\\''", 4);
			n += 4;
		} else
			out[n++] = *s;
	out[n++] = '\'';
	out[n] = '\0';
}

/* printf to the end of out[sz] (a string already). */
static void
add(char *out, size_t sz, const char *fmt, ...)
{
	size_t len = strlen(out);
	va_list ap;

	if (len + 1 >= sz)
		return;
	va_start(ap, fmt);
	vsnprintf(out + len, sz - len, fmt, ap);
	va_end(ap);
}

/*
 * The runtime directory base is another user's (server.user changed
 * since it was made, and that user's sandboxd was killed before it could
 * empty it), or the directory it is in is closed to us: what to run,
 * added to why. Said, not done: as the gateway's user we cannot, and root
 * must not work among paths that less privileged users can change.
 */
static void
advise(const char *base, char *why, size_t whysz)
{
	const char *slash = strrchr(base, '/');
	struct passwd *pw = getpwuid(geteuid());
	struct group *gr = getgrgid(getegid());
	char parent[4096], qb[4096], qp[4096], user[64], group[64];
	struct stat st;
	int search;

	snprintf(parent, sizeof(parent), "%.*s", slash == NULL ||
	    slash == base ? 1 : (int)(slash - base), slash == NULL ? "." : base);
	sh_quote(qb, sizeof(qb), base);
	sh_quote(qp, sizeof(qp), parent);
	if (pw != NULL)
		sg_copy(user, sizeof(user), pw->pw_name);
	else
		snprintf(user, sizeof(user), "%d", (int)geteuid());
	if (gr != NULL)
		sg_copy(group, sizeof(group), gr->gr_name);
	else
		snprintf(group, sizeof(group), "%d", (int)getegid());
	if (lstat(base, &st) == 0 && st.st_uid != geteuid())
		add(why, whysz, " (it is uid %d's)", (int)st.st_uid);
	add(why, whysz, "; it must be %s's, the gateway's user (was "
	    "server.user changed?), and nothing in it is needed while no "
	    "sandgate of another user runs on this store: as root, run: ",
	    user);
	if (!(search = faccessat(AT_FDCWD, parent, X_OK, AT_EACCESS) == 0))
		add(why, whysz, "chown -h %s:%s -- %s && ", user, group, qp);
	add(why, whysz, "rm -rf -- %s", qb);
	if (search && faccessat(AT_FDCWD, parent, W_OK, AT_EACCESS) != 0)
		add(why, whysz, " && install -d -m 0700 -o %s -g %s -- %s",
		    user, group, qb);
}

int
sg_sbxd_rundir(const char *base, const char *inst, struct sg_sbxd_dirs *dirs,
    struct sg_sbxd_sweep *sweep, char *why, size_t whysz)
{
	const char *what = "";
	int saved;

	dirs->dir = dirs->kernels = dirs->lock = -1;
	if ((dirs->base = own_dir(AT_FDCWD, base)) == -1)
		goto fail;
	what = inst;
	if ((dirs->dir = own_dir(dirs->base, inst)) == -1)
		goto fail;
	what = "its lock (is another sandboxd of this gateway running?)";
	if ((dirs->lock = take_lock(dirs->dir)) == -1)
		goto fail;
	what = "kernels/";
	if ((dirs->kernels = own_dir(dirs->dir, "kernels")) == -1)
		goto fail;
	/* What the previous sandboxd of this instance left: it is dead, as
	 * its lock was free. */
	sg_sbxd_sweep_records(sweep, dirs->kernels);
	each_entry(dirs->kernels, remove_entry, NULL);
	sg_sbxd_dead(dirs->base, inst, sweep);
	return 0;
fail:
	saved = errno;
	snprintf(why, whysz, "runtime directory %s: %s%s%s", base, what,
	    what[0] != '\0' ? ": " : "", strerror(saved));
	if (what[0] == '\0' && (saved == EACCES || saved == EPERM))
		advise(base, why, whysz);
	if (dirs->base != -1)
		close(dirs->base);
	if (dirs->dir != -1)
		close(dirs->dir);
	if (dirs->lock != -1)
		close(dirs->lock);
	dirs->base = dirs->dir = dirs->kernels = dirs->lock = -1;
	return -1;
}
