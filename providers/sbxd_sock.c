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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void
sg_sbxd_rmtree(int at, const char *name, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd;

	/* unlink(2) of a directory is EISDIR on Linux; a link is removed,
	 * never followed. */
	if (unlinkat(at, name, 0) == 0 || errno != EISDIR)
		return;
	if (depth > 0 && (fd = openat(at, name, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) != -1) {
		if ((d = fdopendir(fd)) == NULL)
			close(fd);
		else {
			while ((de = readdir(d)) != NULL)
				if (strcmp(de->d_name, ".") != 0 &&
				    strcmp(de->d_name, "..") != 0)
					sg_sbxd_rmtree(dirfd(d), de->d_name,
					    depth - 1);
			closedir(d);
		}
	}
	unlinkat(at, name, AT_REMOVEDIR);
}

/* name in at as a directory of ours (mode 0700), open: a link, or
 * anything but a directory, in its place is removed first. The fd, or -1
 * with errno. */
static int
own_dir(int at, const char *name)
{
	struct stat st;
	int fd;

	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISDIR(st.st_mode) && unlinkat(at, name, 0) == -1)
		return -1;
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

/* Kernel sockets a previous sandboxd left (its kernels died with it). */
static void
clean_stale(int kfd)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if ((fd = dup(kfd)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			sg_sbxd_rmtree(kfd, de->d_name, 2);
	closedir(d);
}

int
sg_sbxd_rundir(const char *path, int *dfd, int *kfd, char *why, size_t whysz)
{
	const char *what = path;

	*dfd = *kfd = -1;
	if ((*dfd = own_dir(AT_FDCWD, path)) == -1)
		goto fail;
	what = "its kernels/";
	if ((*kfd = own_dir(*dfd, "kernels")) == -1)
		goto fail;
	clean_stale(*kfd);
	return 0;
fail:
	snprintf(why, whysz, "runtime directory %s: %s%s%s", path,
	    what == path ? "" : what, what == path ? "" : ": ",
	    strerror(errno));
	if (*dfd != -1)
		close(*dfd);
	*dfd = -1;
	return -1;
}
