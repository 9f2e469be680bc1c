/*
 * sandboxd: the local provider's supervisor, a child of the master and
 * the parent of every local kernel, so kernels outlive the responder that
 * asked for them. Responders talk to it over a Unix socket in the
 * gateway's private runtime directory, one JSON line each way:
 *   {"op":"create","id","lifetime","memory_mb","disk_mb","max_procs",
 *    "net","isolation"}  → {"ok":true,"socket":PATH} | {"ok":false,"error"}
 *   {"op":"delete","id"} → {"ok":true,"gone":bool}
 * For each sandbox it binds the kernel's socket itself and passes the
 * listening fd (as fd 3) into bubblewrap. Started as root, each sandbox
 * gets its own uid from a reserved range, so RLIMIT_NPROC and the others
 * count that sandbox alone.
 */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "provider.h"
#include "../lib/util.h"

#define MAX_KERNELS	1024
#define LINE_MAX_BYTES	65536
#define BWRAP		"/usr/bin/bwrap"
#define PYTHON		"/usr/bin/python3"

struct kernel {
	char	 id[48];
	pid_t	 pid;
	int	 slot;			/* uid = uid_base + slot when root */
	char	 sock[512];
};

static struct kernel kernels[MAX_KERNELS];
/* A world-readable copy of the kernel's files: every sandbox uid must be
 * able to read what bubblewrap binds, wherever sandgate is installed. */
static char kdir[64], kpath[96];
static const struct sg_sandboxd_conf *conf;
static int bwrap_ok;
static char bwrap_why[256];
static volatile sig_atomic_t got_term;
static int wake[2] = { -1, -1 };

static void
on_signal(int sig)
{
	int saved = errno;

	if (sig == SIGTERM || sig == SIGINT)
		got_term = 1;
	(void)!write(wake[1], "s", 1);
	errno = saved;
}

static struct kernel *
find(const char *id)
{
	int i;

	for (i = 0; i < MAX_KERNELS; i++)
		if (kernels[i].pid != 0 && strcmp(kernels[i].id, id) == 0)
			return &kernels[i];
	return NULL;
}

static void
forget(struct kernel *k)
{
	unlink(k->sock);
	memset(k, 0, sizeof(*k));
}

static void
reap(void)
{
	int i, status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		for (i = 0; i < MAX_KERNELS; i++) {
			if (kernels[i].pid != pid)
				continue;
			/* Exit 0 is a lifetime that passed; anything else is
			 * worth a line in the log. */
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				fprintf(stderr, "sandgate: sandboxd: sandbox %s "
				    "ended (%s %d)\n", kernels[i].id,
				    WIFSIGNALED(status) ? "signal" : "exit",
				    WIFSIGNALED(status) ? WTERMSIG(status) :
				    WEXITSTATUS(status));
			forget(&kernels[i]);
		}
}

/* Become the sandbox's own user (root only): no supplementary groups. */
static int
become(unsigned uid)
{
	if (!conf->per_sandbox_uids)
		return 0;
	return setgroups(0, NULL) == -1 || setgid(uid) == -1 ||
	    setuid(uid) == -1 ? -1 : 0;
}

static void
limit(int res, rlim_t v)
{
	struct rlimit rl = { v, v };

	setrlimit(res, &rl);
}

/* The argv of a kernel, under bubblewrap unless isolation is "none". */
static int
kernel_argv(const char **av, char bufs[][32], int lifetime, int net,
    int disk_mb, int bwrap)
{
	int n = 0;

	snprintf(bufs[0], 32, "%d", lifetime);
	snprintf(bufs[1], 32, "%lld", (long long)disk_mb * 1024 * 1024);
	if (bwrap) {
		static const char *const fixed[] = { BWRAP,
		    "--unshare-user", "--unshare-pid", "--unshare-ipc",
		    "--unshare-uts", "--unshare-cgroup-try", "--disable-userns",
		    "--new-session", "--die-with-parent", "--cap-drop", "ALL",
		    "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
		    "--setenv", "HOME", "/home/user", "--setenv", "LANG",
		    "C.UTF-8", "--setenv", "MPLBACKEND", "module://sg_mpl",
		    "--setenv", "MPLCONFIGDIR", "/home/user/.config/matplotlib",
		    "--setenv", "SANDGATE_PIDNS", "1",
		    "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
		    "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin",
		    "/bin", "--symlink", "usr/sbin", "/sbin",
		    "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
		    "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
		    "--ro-bind-try", "/etc/localtime", "/etc/localtime",
		    "--ro-bind-try", "/etc/matplotlibrc", "/etc/matplotlibrc",
		    "--ro-bind-try", "/etc/fonts", "/etc/fonts",
		    "--proc", "/proc", "--dev", "/dev", NULL };
		int i;

		for (i = 0; fixed[i] != NULL; i++)
			av[n++] = fixed[i];
		if (!net)
			av[n++] = "--unshare-net";
		else {
			av[n++] = "--ro-bind-try"; av[n++] = "/etc/resolv.conf";
			av[n++] = "/etc/resolv.conf";
			av[n++] = "--ro-bind-try"; av[n++] = "/etc/ssl";
			av[n++] = "/etc/ssl";
			av[n++] = "--ro-bind-try"; av[n++] = "/etc/hosts";
			av[n++] = "/etc/hosts";
		}
		/* --size goes before the --tmpfs it limits (bwrap 0.8). */
		av[n++] = "--size"; av[n++] = bufs[1];
		av[n++] = "--tmpfs"; av[n++] = "/home/user";
		av[n++] = "--size"; av[n++] = bufs[1];
		av[n++] = "--tmpfs"; av[n++] = "/tmp";
		av[n++] = "--ro-bind"; av[n++] = kdir;
		av[n++] = "/sandgate";
		/* The root bwrap builds is a writable tmpfs: seal it. The
		 * tmpfs mounts on top of it stay writable. */
		av[n++] = "--remount-ro"; av[n++] = "/";
		av[n++] = "--chdir"; av[n++] = "/home/user";
		av[n++] = PYTHON; av[n++] = "-I"; av[n++] = "/sandgate/kernel.py";
	} else {
		av[n++] = PYTHON; av[n++] = "-I"; av[n++] = kpath;
	}
	av[n++] = "--lifetime"; av[n++] = bufs[0];
	av[n] = NULL;
	return n;
}

/* How many processes (threads included, as RLIMIT_NPROC counts) uid runs. */
static int
user_processes(uid_t uid)
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
		if ((f = fopen(path, "r")) == NULL)
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
	}
	closedir(d);
	return n;
}

/* In the forked child: limits, user, fds, then exec. Never returns. */
static void
exec_kernel(int lfd, const json_t *req, int slot, int bwrap)
{
	int mem = (int)json_integer_value(json_object_get(req, "memory_mb"));
	int disk = (int)json_integer_value(json_object_get(req, "disk_mb"));
	int procs = (int)json_integer_value(json_object_get(req, "max_procs"));
	int life = (int)json_integer_value(json_object_get(req, "lifetime"));
	int net = json_is_true(json_object_get(req, "net"));
	/* Counted before any limit is set: nothing may allocate after. */
	int others = conf->per_sandbox_uids ? 0 : user_processes(getuid());
	const char *av[96];
	char bufs[2][32];
	sigset_t none;
	int devnull;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	if (dup2(lfd, 3) == -1 || (devnull = open("/dev/null", O_RDWR)) == -1)
		_exit(120);
	dup2(devnull, 0);
	dup2(devnull, 1);
	dup2(devnull, 2);
	/* Every fd above 2 is closed but the kernel's listening socket. */
	close_range(4, ~0U, 0);
	fcntl(3, F_SETFD, 0);
	limit(RLIMIT_DATA, (rlim_t)(mem > 0 ? mem : 1024) * 1024 * 1024);
	limit(RLIMIT_FSIZE, (rlim_t)(disk > 0 ? disk : 512) * 1024 * 1024);
	limit(RLIMIT_NOFILE, 256);
	limit(RLIMIT_CORE, 0);
	/* RLIMIT_NPROC counts every process of the uid. With a uid of its
	 * own, that is the sandbox alone; sharing the gateway's uid, the
	 * sandbox may add max_procs to what that user runs now. */
	limit(RLIMIT_NPROC, (rlim_t)(procs > 0 ? procs : 64) + (rlim_t)others);
	if (become(conf->uid_base + (unsigned)slot) == -1)
		_exit(121);
	kernel_argv(av, bufs, life > 0 ? life : 300, net, disk > 0 ? disk : 512,
	    bwrap);
	execv(av[0], (char *const *)av);
	_exit(122);
}

/* A listening socket at path, the gateway user's alone (mode 0600). */
static int
listen_private(const char *path, int backlog)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	unlink(path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chown(path, conf->owner, conf->owner_gid) == -1 ||
	    chmod(path, 0600) == -1 || listen(fd, backlog) == -1) {
		close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}

static int
valid_id(const char *id)
{
	size_t i, n = id != NULL ? strlen(id) : 0;

	if (n < 6 || n > 40 || strncmp(id, "cntr_", 5) != 0)
		return 0;
	for (i = 5; i < n; i++)
		if (!strchr("0123456789abcdef", id[i]))
			return 0;
	return 1;
}

static json_t *
create(const json_t *req)
{
	const char *id = json_string_value(json_object_get(req, "id"));
	const char *iso = json_string_value(json_object_get(req, "isolation"));
	int bwrap = iso == NULL || strcmp(iso, "none") != 0;
	struct kernel *k = NULL;
	int i, lfd;
	pid_t pid;

	if (!valid_id(id))
		return json_pack("{s:b,s:s}", "ok", 0, "error", "bad sandbox id");
	if (find(id) != NULL)
		return json_pack("{s:b,s:s}", "ok", 0, "error", "sandbox exists");
	if (bwrap && !bwrap_ok)
		return json_pack("{s:b,s:s,s:s}", "ok", 0, "kind", "config",
		    "error", bwrap_why);
	for (i = 0; i < MAX_KERNELS && k == NULL; i++)
		if (kernels[i].pid == 0)
			k = &kernels[i];
	if (k == NULL)
		return json_pack("{s:b,s:s,s:s}", "ok", 0, "kind", "rate",
		    "error", "too many local sandboxes");
	snprintf(k->id, sizeof(k->id), "%s", id);
	k->slot = (int)(k - kernels);
	snprintf(k->sock, sizeof(k->sock), "%s/kernels/%s.sock", conf->dir, id);
	if ((lfd = listen_private(k->sock, 64)) == -1) {
		memset(k, 0, sizeof(*k));
		return json_pack("{s:b,s:s}", "ok", 0, "error",
		    "cannot make the kernel's socket");
	}
	if ((pid = fork()) == -1) {
		close(lfd);
		unlink(k->sock);
		memset(k, 0, sizeof(*k));
		return json_pack("{s:b,s:s}", "ok", 0, "error", strerror(errno));
	}
	if (pid == 0)
		exec_kernel(lfd, req, k->slot, bwrap);
	close(lfd);
	k->pid = pid;
	return json_pack("{s:b,s:s}", "ok", 1, "socket", k->sock);
}

/* Kill the whole sandbox and wait for it: a deleted sandbox leaves no
 * process and no file behind when the answer goes out. */
static json_t *
destroy(const json_t *req)
{
	const char *id = json_string_value(json_object_get(req, "id"));
	struct kernel *k = id != NULL ? find(id) : NULL;

	if (k == NULL)
		return json_pack("{s:b,s:b}", "ok", 1, "gone", 1);
	kill(k->pid, SIGKILL);
	while (waitpid(k->pid, NULL, 0) == -1 && errno == EINTR)
		;
	forget(k);
	return json_pack("{s:b,s:b}", "ok", 1, "gone", 0);
}

static void
answer(int c)
{
	char buf[LINE_MAX_BYTES];
	size_t len = 0;
	json_t *req, *resp;
	const char *op;
	struct pollfd p = { .fd = c, .events = POLLIN };
	ssize_t n;
	char *text;

	while (len < sizeof(buf) - 1 && memchr(buf, '\n', len) == NULL) {
		if (poll(&p, 1, 5000) <= 0)
			return;
		if ((n = read(c, buf + len, sizeof(buf) - 1 - len)) <= 0)
			return;
		len += (size_t)n;
	}
	req = json_loadb(buf, len, JSON_DISABLE_EOF_CHECK, NULL);
	op = json_string_value(json_object_get(req, "op"));
	if (op != NULL && strcmp(op, "create") == 0)
		resp = create(req);
	else if (op != NULL && strcmp(op, "delete") == 0)
		resp = destroy(req);
	else
		resp = json_pack("{s:b,s:s}", "ok", 0, "error", "bad request");
	json_decref(req);
	if ((text = json_dumps(resp, JSON_COMPACT)) != NULL) {
		(void)!write(c, text, strlen(text));
		(void)!write(c, "\n", 1);
	}
	free(text);
	json_decref(resp);
}

/* Can bubblewrap make the sandbox we need here? Asked once at start. */
static void
probe_bwrap(void)
{
	int status = -1;
	pid_t pid;

	if (access(BWRAP, X_OK) != 0) {
		snprintf(bwrap_why, sizeof(bwrap_why), "bubblewrap (%s) is not "
		    "installed; install it, or set isolation = \"none\" on the "
		    "tool (development only)", BWRAP);
		return;
	}
	if ((pid = fork()) == 0) {
		int devnull = open("/dev/null", O_RDWR);

		dup2(devnull, 1);
		dup2(devnull, 2);
		if (become(conf->uid_base) == -1)
			_exit(1);
		execl(BWRAP, BWRAP, "--unshare-user", "--unshare-pid",
		    "--disable-userns", "--ro-bind", "/usr", "/usr", "--symlink",
		    "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		    "--symlink", "usr/bin", "/bin", "/usr/bin/true", (char *)NULL);
		_exit(1);
	}
	while (pid > 0 && waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	bwrap_ok = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (!bwrap_ok)
		snprintf(bwrap_why, sizeof(bwrap_why), "bubblewrap cannot make a "
		    "sandbox on this machine (user namespaces disabled?); set "
		    "isolation = \"none\" on the tool only for development");
}

static int
listen_ctl(void)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/kernels", conf->dir);
	mkdir(conf->dir, 0700);
	mkdir(path, 0700);
	if (chown(conf->dir, conf->owner, conf->owner_gid) == -1 ||
	    chown(path, conf->owner, conf->owner_gid) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/sandboxd.sock", conf->dir);
	return listen_private(path, 128);
}

static int
copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in, out, rc = 0;

	if ((in = open(from, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if ((out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) ==
	    -1) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	if (n < 0)
		rc = -1;
	close(in);
	close(out);
	return rc;
}

/*
 * matplotlib builds its font list on first use, about a second that every
 * new sandbox would pay on its first plot. Build it once here, into the
 * kernel's directory; each kernel copies it into its own config dir.
 */
static void
build_font_list(void)
{
	char dir[96], env[128];
	pid_t pid;

	if (access("/usr/lib/python3/dist-packages/matplotlib", R_OK) != 0)
		return;
	snprintf(dir, sizeof(dir), "%s/mpl", kdir);
	if (mkdir(dir, 0755) == -1)
		return;
	snprintf(env, sizeof(env), "MPLCONFIGDIR=%s", dir);
	if ((pid = fork()) == 0) {
		char *const envp[] = { env, "HOME=/nonexistent", NULL };
		int devnull = open("/dev/null", O_RDWR);

		dup2(devnull, 1);
		dup2(devnull, 2);
		execle(PYTHON, PYTHON, "-I", "-c", "import matplotlib.font_manager",
		    (char *)NULL, envp);
		_exit(1);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static int
copy_kernel(void)
{
	static const char *const files[] = { "kernel.py", "sg_mpl.py" };
	char from[600], to[160];
	size_t i;

	snprintf(kdir, sizeof(kdir), "/tmp/sandgate-kernel.XXXXXX");
	if (mkdtemp(kdir) == NULL || chmod(kdir, 0755) == -1)
		return -1;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(from, sizeof(from), "%s/%s", conf->kernel_src, files[i]);
		snprintf(to, sizeof(to), "%s/%s", kdir, files[i]);
		if (copy_file(from, to) == -1)
			return -1;
	}
	snprintf(kpath, sizeof(kpath), "%s/kernel.py", kdir);
	build_font_list();
	return 0;
}

static void
remove_kernel_copy(void)
{
	char path[160];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/mpl", kdir);
	if ((d = opendir(path)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.' && snprintf(path, sizeof(path),
			    "%s/mpl/%s", kdir, de->d_name) < (int)sizeof(path))
				unlink(path);
		closedir(d);
		snprintf(path, sizeof(path), "%s/mpl", kdir);
		rmdir(path);
	}

	snprintf(path, sizeof(path), "%s/kernel.py", kdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/sg_mpl.py", kdir);
	unlink(path);
	rmdir(kdir);
}

/* Kernel sockets a previous sandboxd left (its kernels died with it). */
static void
clean_stale(void)
{
	char path[600];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/kernels", conf->dir);
	if ((d = opendir(path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' && snprintf(path, sizeof(path),
		    "%s/kernels/%s", conf->dir, de->d_name) < (int)sizeof(path))
			unlink(path);
	closedir(d);
}

/*
 * Started as root, sandboxd keeps just enough privilege: it becomes the
 * gateway's user and keeps only CAP_SETUID and CAP_SETGID (to start each
 * kernel as its sandbox's uid) and CAP_KILL (to end kernels of other
 * uids). The caps do not survive into bubblewrap: exec drops them.
 */
static int
drop_privileges(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	gid_t gid = conf->owner_gid;

	if (!conf->per_sandbox_uids)
		return 0;
	memset(d, 0, sizeof(d));
	d[0].effective = d[0].permitted = (1u << CAP_SETUID) |
	    (1u << CAP_SETGID) | (1u << CAP_KILL);
	if (prctl(PR_SET_KEEPCAPS, 1L) == -1 || setgroups(1, &gid) == -1 ||
	    setgid(gid) == -1 || setuid(conf->owner) == -1 ||
	    syscall(SYS_capset, &h, d) == -1)
		return -1;
	return prctl(PR_SET_KEEPCAPS, 0L);
}

void
sg_sandboxd_run(const struct sg_sandboxd_conf *c)
{
	struct pollfd p[2];
	struct sigaction sa;
	char buf[64];
	int lfd, i, cfd;

	conf = c;
	/* Tell it apart from the responders in ps and /proc/PID/comm. */
	prctl(PR_SET_NAME, "sg-sandboxd");
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) == -1)
		_exit(3);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	clean_stale();
	if ((lfd = listen_ctl()) == -1) {
		fprintf(stderr, "sandgate: sandboxd: cannot listen in %s: %s\n",
		    conf->dir, strerror(errno));
		_exit(3);
	}
	if (copy_kernel() == -1) {
		fprintf(stderr, "sandgate: sandboxd: cannot copy the kernel from "
		    "%s: %s\n", conf->kernel_src, strerror(errno));
		remove_kernel_copy();
		_exit(3);
	}
	if (drop_privileges() == -1) {
		fprintf(stderr, "sandgate: sandboxd: cannot drop privileges: "
		    "%s\n", strerror(errno));
		remove_kernel_copy();
		_exit(3);
	}
	probe_bwrap();
	fprintf(stderr, "sandgate: sandboxd: %s; %s\n", bwrap_ok ?
	    "bubblewrap works" : bwrap_why, conf->per_sandbox_uids ?
	    "one uid per sandbox, limits per sandbox" : "not root: kernels run "
	    "as the gateway's user, so process limits are shared");
	while (!got_term) {
		p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = wake[0], .events = POLLIN };
		poll(p, 2, 1000);
		while (read(wake[0], buf, sizeof(buf)) > 0)
			;
		reap();
		if (p[0].revents & POLLIN) {
			if ((cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) != -1) {
				answer(cfd);
				close(cfd);
			}
		}
	}
	for (i = 0; i < MAX_KERNELS; i++)
		if (kernels[i].pid != 0) {
			kill(kernels[i].pid, SIGKILL);
			waitpid(kernels[i].pid, NULL, 0);
			forget(&kernels[i]);
		}
	remove_kernel_copy();
	_exit(0);
}
