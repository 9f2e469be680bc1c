/*
 * The files of a kernel's /sandgate, held in sandboxd's memory and handed
 * to each bubblewrap as memfds (--ro-bind-data): no path on the host has
 * to be readable by the sandbox uids, and nothing is left behind when
 * sandboxd dies.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sbxd.h"

#define FILE_MAX (8u << 20)

static int
slurp(int dirfd, const char *name, char **data, size_t *len)
{
	struct sg_buf b = { 0 };
	char chunk[65536];
	ssize_t n;
	int fd;

	if ((fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -1;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0 && b.len < FILE_MAX)
		if (sg_buf_add(&b, chunk, (size_t)n) == -1)
			break;
	close(fd);
	if (n != 0) {
		free(b.p);
		errno = n < 0 ? errno : EFBIG;
		return -1;
	}
	*data = b.p != NULL ? b.p : strdup("");
	*len = b.len;
	return *data != NULL ? 0 : -1;
}

static int
add(struct sg_sbxd_files *fs, int dirfd, const char *name, const char *dest)
{
	struct sg_sbxd_file *f = &fs->f[fs->n];

	if (fs->n == sizeof(fs->f) / sizeof(fs->f[0]))
		return -1;
	if ((f->dest = strdup(dest)) == NULL)
		return -1;
	if (slurp(dirfd, name, &f->data, &f->len) == -1) {
		free(f->dest);
		return -1;
	}
	fs->n++;
	return 0;
}

/* Empty and remove a directory of ours (no subdirectories in it). */
static void
remove_dir(const char *dir)
{
	struct dirent *de;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	rmdir(dir);
}

/*
 * matplotlib builds its font list on first use, about a second that every
 * new sandbox would pay on its first plot. Build it once, in a private
 * directory, and keep the file; each kernel copies it into its config.
 */
static void
font_list(struct sg_sbxd_files *fs)
{
	char dir[] = "/tmp/sandgate-mpl.XXXXXX", env[64];
	struct dirent *de;
	pid_t pid;
	DIR *d;

	if (access("/usr/lib/python3/dist-packages/matplotlib", R_OK) != 0 ||
	    mkdtemp(dir) == NULL)
		return;
	snprintf(env, sizeof(env), "MPLCONFIGDIR=%s", dir);
	if ((pid = fork()) == 0) {
		char *const envp[] = { env, "HOME=/nonexistent", NULL };
		int devnull = open("/dev/null", O_RDWR);

		dup2(devnull, 1);
		dup2(devnull, 2);
		execle(SG_SBXD_PYTHON, SG_SBXD_PYTHON, "-I", "-c",
		    "import matplotlib.font_manager", (char *)NULL, envp);
		_exit(1);
	}
	while (pid > 0 && waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
	if ((d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			char dest[300];

			if (strncmp(de->d_name, "fontlist", 8) != 0)
				continue;
			snprintf(dest, sizeof(dest), "/sandgate/mpl/%s", de->d_name);
			add(fs, dirfd(d), de->d_name, dest);
		}
		closedir(d);
	}
	remove_dir(dir);
}

int
sg_sbxd_files_load(struct sg_sbxd_files *fs, const char *src, char *why,
    size_t whysz)
{
	int dfd;

	memset(fs, 0, sizeof(*fs));
	if ((dfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    add(fs, dfd, "kernel.py", "/sandgate/kernel.py") == -1 ||
	    add(fs, dfd, "sg_mpl.py", "/sandgate/sg_mpl.py") == -1) {
		snprintf(why, whysz, "cannot read the kernel from %s: %s", src,
		    strerror(errno));
		if (dfd != -1)
			close(dfd);
		sg_sbxd_files_free(fs);
		return -1;
	}
	close(dfd);
	font_list(fs);
	return 0;
}

void
sg_sbxd_files_free(struct sg_sbxd_files *fs)
{
	size_t i;

	for (i = 0; i < fs->n; i++) {
		free(fs->f[i].dest);
		free(fs->f[i].data);
	}
	memset(fs, 0, sizeof(*fs));
}

int
sg_sbxd_memfd(const char *name, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;
	int fd;

	if ((fd = memfd_create(name, 0)) == -1)
		return -1;
	while (len > 0) {
		if ((n = write(fd, p, len)) <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Wait until fd is readable or ms pass: 1 or 0. SIGCHLD (a sandbox's
 * processes ending) interrupts poll; that is no reason to give up. */
int
sg_sbxd_readable(int fd, int64_t ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int64_t until = sg_now_ms() + ms;
	int n;

	do
		n = poll(&p, 1, (int)(until - sg_now_ms() > 0 ? until -
		    sg_now_ms() : 0));
	while (n == -1 && errno == EINTR);
	return n > 0;
}

/* read(2), again when a signal interrupted it. */
ssize_t
sg_sbxd_read(int fd, void *buf, size_t len)
{
	ssize_t n;

	while ((n = read(fd, buf, len)) == -1 && errno == EINTR)
		;
	return n;
}

void
sg_sbxd_write_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}
