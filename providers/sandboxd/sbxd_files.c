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
 * Run python as the gateway's user with argv (after "python3 -I") and
 * env, its output to /dev/null, and wait for it. It dies with sandboxd,
 * so it never writes in rundir after sandboxd is gone.
 */
static void
python(char *const *args, char *const *envp)
{
	const char *argv[8] = { SG_SBXD_PYTHON, "-I" };
	pid_t pid, parent = getpid();
	int i;

	for (i = 0; args[i] != NULL && i < 5; i++)
		argv[2 + i] = args[i];
	if ((pid = fork()) == 0) {
		int devnull = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execve(SG_SBXD_PYTHON, (char *const *)argv, envp);
		_exit(1);
	}
	while (pid > 0 && waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
}

/* Keep the files of rundir/sub whose names start with prefix, each at
 * dest(name) in the sandbox. */
static void
collect(struct sg_sbxd_files *fs, int rundir_fd, const char *sub,
    const char *prefix, void (*dest)(const char *, char *, size_t))
{
	struct dirent *de;
	char to[300];
	DIR *d;
	int fd;

	if ((fd = openat(rundir_fd, sub, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' &&
		    strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
			dest(de->d_name, to, sizeof(to));
			add(fs, dirfd(d), de->d_name, to);
		}
	closedir(d);
}

static void
font_dest(const char *name, char *to, size_t sz)
{
	snprintf(to, sz, "/sandgate/mpl/%s", name);
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
 * in /tmp.
 */
static void
font_list(struct sg_sbxd_files *fs, const char *rundir, int rundir_fd)
{
	char *env = NULL;

	sg_sbxd_rmtree(rundir_fd, "mpl", 4);
	if (access("/usr/lib/python3/dist-packages/matplotlib", R_OK) != 0 ||
	    asprintf(&env, "MPLCONFIGDIR=%s/mpl", rundir) == -1)
		return;
	if (mkdirat(rundir_fd, "mpl", 0700) == 0) {
		char *const args[] = { "-c", "import matplotlib.font_manager",
		    NULL };
		char *const envp[] = { env, "HOME=/nonexistent", NULL };

		python(args, envp);
		collect(fs, rundir_fd, "mpl", "fontlist", font_dest);
	}
	free(env);
	sg_sbxd_rmtree(rundir_fd, "mpl", 4);
}

/*
 * The kernel's bytecode. Its /sandgate is read-only, so Python would
 * compile the kernel's files at every start (about a fifth of a plain
 * kernel's start); compiled here once instead, by the interpreter the
 * kernels run. The modules' .pyc are checked against their source by
 * hash (a .pyc that does not match is not used); the script, kernel.py,
 * is run from its .pyc (kernel.pyc), which Python does not check: it is
 * made from the file read just before. A file that does not compile is
 * handed in as source only (and kernel.py then run as it is).
 */
static const char compile_py[] =
    "import py_compile as c, sys\n"
    "s, o, m = sys.argv[1], sys.argv[2], c.PycInvalidationMode.CHECKED_HASH\n"
    "for n in ('kernel', 'sg_cells', 'sg_ipython', 'sg_mpl'):\n"
    "    t = 'kernel.pyc' if n == 'kernel' else "
    "'%s.%s.pyc' % (n, sys.implementation.cache_tag)\n"
    "    c.compile('%s/%s.py' % (s, n), '%s/%s' % (o, t), "
    "'/sandgate/%s.py' % n, True, invalidation_mode=m)\n";

static void
pyc_dest(const char *name, char *to, size_t sz)
{
	if (strcmp(name, "kernel.pyc") == 0)
		snprintf(to, sz, "/sandgate/kernel.pyc");
	else
		snprintf(to, sz, "/sandgate/__pycache__/%s", name);
}

static void
bytecode(struct sg_sbxd_files *fs, const char *src, const char *rundir,
    int rundir_fd)
{
	char *out = NULL;
	size_t i;

	sg_sbxd_rmtree(rundir_fd, "pyc", 2);
	if (asprintf(&out, "%s/pyc", rundir) == -1)
		return;
	if (mkdirat(rundir_fd, "pyc", 0700) == 0) {
		char *const args[] = { "-c", (char *)compile_py, (char *)src,
		    out, NULL };
		char *const envp[] = { NULL };

		python(args, envp);
		collect(fs, rundir_fd, "pyc", "", pyc_dest);
	}
	free(out);
	sg_sbxd_rmtree(rundir_fd, "pyc", 2);
	for (i = 0; i < fs->n; i++)
		if (strcmp(fs->f[i].dest, "/sandgate/kernel.pyc") == 0)
			fs->script = "/sandgate/kernel.pyc";
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
	fs->script = "/sandgate/kernel.py";
	bytecode(fs, src, rundir, rundir_fd);
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

int
sg_sbxd_write_all(int fd, const char *p, size_t len)
{
	ssize_t n;
	int eintr = 0;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1 && errno == EINTR &&
		    ++eintr < SG_SBXD_EINTR_MAX)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
		eintr = 0;
	}
	return 0;
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
