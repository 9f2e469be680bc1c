/*
 * The files of a kernel's /sandgate, held in sandboxd's memory and handed
 * to each bubblewrap as memfds (--ro-bind-data): no path on the host has
 * to be readable by the sandbox uids, and nothing is left behind when
 * sandboxd dies.
 */
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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

/*
 * matplotlib builds its font list on first use, about a second that every
 * new sandbox would pay on its first plot. Build it once and keep the
 * file; each kernel copies it into its config.
 *
 * It is built in rundir/mpl, not in a temporary directory under /tmp:
 * sandboxd is the gateway's user by now, so the directory is made and
 * removed by one user whatever sandboxd was started as; and a sandboxd
 * killed during that second leaves it where the next start finds and
 * removes it (a fixed name in a directory of ours), so nothing piles up
 * in /tmp. The builder dies with sandboxd, so it never writes there after
 * that removal.
 */
static void
font_list(struct sg_sbxd_files *fs, const char *rundir, int rundir_fd)
{
	struct dirent *de;
	char *env = NULL;
	pid_t pid, parent = getpid();
	DIR *d;
	int fd;

	sg_sbxd_rmtree(rundir_fd, "mpl", 4);
	if (access("/usr/lib/python3/dist-packages/matplotlib", R_OK) != 0 ||
	    asprintf(&env, "MPLCONFIGDIR=%s/mpl", rundir) == -1)
		return;
	if (mkdirat(rundir_fd, "mpl", 0700) == -1) {
		free(env);
		return;
	}
	if ((pid = fork()) == 0) {
		char *const envp[] = { env, "HOME=/nonexistent", NULL };
		int devnull = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execle(SG_SBXD_PYTHON, SG_SBXD_PYTHON, "-I", "-c",
		    "import matplotlib.font_manager", (char *)NULL, envp);
		_exit(1);
	}
	free(env);
	while (pid > 0 && waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
	if ((fd = openat(rundir_fd, "mpl", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) != -1 && (d = fdopendir(fd)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			char dest[300];

			if (strncmp(de->d_name, "fontlist", 8) != 0)
				continue;
			snprintf(dest, sizeof(dest), "/sandgate/mpl/%s", de->d_name);
			add(fs, dirfd(d), de->d_name, dest);
		}
		closedir(d);
	} else if (fd != -1)
		close(fd);
	sg_sbxd_rmtree(rundir_fd, "mpl", 4);
}

int
sg_sbxd_files_load(struct sg_sbxd_files *fs, const char *src,
    const char *rundir, int rundir_fd, char *why, size_t whysz)
{
	int dfd;

	static const char *const kernel_files[] = { "kernel.py", "sg_cells.py",
	    "sg_ipython.py", "sg_mpl.py", NULL };
	char dest[64];
	int i;

	memset(fs, 0, sizeof(*fs));
	dfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (i = 0; dfd != -1 && kernel_files[i] != NULL; i++) {
		snprintf(dest, sizeof(dest), "/sandgate/%s", kernel_files[i]);
		if (add(fs, dfd, kernel_files[i], dest) == -1)
			break;
	}
	if (dfd == -1 || kernel_files[i] != NULL) {
		snprintf(why, whysz, "cannot read the kernel's %s from %s: %s",
		    dfd == -1 ? "directory" : kernel_files[i], src,
		    strerror(errno));
		if (dfd != -1)
			close(dfd);
		sg_sbxd_files_free(fs);
		return -1;
	}
	close(dfd);
	font_list(fs, rundir, rundir_fd);
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
