/*
 * sandboxd: the local provider's supervisor, a child of the master and
 * the parent of every local kernel, so kernels outlive the responder that
 * asked for them. Responders talk to it over a Unix socket in its
 * instance of the gateway's private runtime directory (one instance per
 * master: several masters may share a store, see sbxd.h), one JSON line
 * each way:
 *   {"op":"create","id","lifetime","memory_mb","disk_mb","max_procs",
 *    "cpu","limits","net","isolation","kernel"}
 *                        → {"ok":true,"socket":PATH} | {"ok":false,"error"}
 *   {"op":"delete","id"} → {"ok":true,"gone":bool}
 * (PATH may be longer than AF_UNIX allows: see sbxd_sock.c.)
 * For each sandbox it binds the kernel's socket itself and passes the
 * listening fd (as fd 3) into bubblewrap. Started as root, it does what
 * needs root first (the uid claims file, cgroups, the firewall), then
 * becomes the gateway's user keeping only CAP_SETUID, CAP_SETGID and
 * CAP_KILL, raised for the step that needs one: each sandbox gets its
 * own uid from a reserved range (claimed across the host's gateways:
 * sbxd_uids.c), its own cgroup, and slirp4netns when it may reach the
 * internet.
 * Every file operation happens as the gateway's user.
 * A sandboxd killed leaves its kernels running (their parent-death signal
 * is dropped): the next one, or a live one of another gateway on the
 * store, ends them (sbxd_orphans.c).
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "sbxd.h"

#define LINE_MAX_BYTES	65536

struct kernel {
	char	 id[48];
	pid_t	 pid;
	int	 slot;			/* uid = uid_base + slot when root */
	int	 claimed;		/* that uid claimed in host.uids */
	int	 cgroup;		/* it has a group of its own */
	pid_t	 net_pid;		/* slirp4netns, or 0 */
	int	 net_exit;		/* closing it ends slirp4netns */
	char	 sock[64];		/* its socket's name in kernels/ */
};

static struct kernel kernels[SG_SBXD_MAX];
static const struct sg_sandboxd_conf *conf;
static struct sg_sbxd_files files;
static struct sg_buf seccomp;
static struct sg_sbxd_host host = { .uids = -1 };
static volatile sig_atomic_t got_term;
static int wake[2] = { -1, -1 };
static struct sg_sbxd_dirs dirs = { -1, -1, -1, -1 };	/* our instance */
static char inst[32], instdir[4096];	/* mPID, conf->dir/INST */
static pid_t master;

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

	for (i = 0; i < SG_SBXD_MAX; i++)
		if (kernels[i].pid != 0 && strcmp(kernels[i].id, id) == 0)
			return &kernels[i];
	return NULL;
}

static void
waitfor(pid_t pid)
{
	while (pid > 0 && waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
}

/* Kill whatever is left of a sandbox, wait for it, and forget it: a
 * sandbox is over only when none of its processes is. */
static void
bury(struct kernel *k)
{
	char rec[64];

	if (conf->per_sandbox_uids)
		sg_sbxd_caps_raise(1u << CAP_KILL);
	if (k->pid > 0)
		kill(k->pid, SIGKILL);
	if (k->net_pid > 0)
		kill(k->net_pid, SIGKILL);
	waitfor(k->pid);
	waitfor(k->net_pid);
	if (k->cgroup)
		sg_cg_destroy(&host.cg, k->id);
	if (conf->per_sandbox_uids)
		sg_sbxd_caps_lower();
	if (k->net_exit > 0)
		close(k->net_exit);
	if (k->sock[0] != '\0') {
		unlinkat(dirs.kernels, k->sock, 0);
		snprintf(rec, sizeof(rec), "%s.pid", k->id);
		unlinkat(dirs.kernels, rec, 0);
	}
	/* Its processes are gone (what still dies keeps the uid busy in
	 * /proc): another gateway may have the uid now. */
	if (k->claimed)
		sg_sbxd_uid_release(host.uids, conf->uid_base +
		    (unsigned)k->slot);
	memset(k, 0, sizeof(*k));
}

static void
reap(void)
{
	int i, status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		for (i = 0; i < SG_SBXD_MAX; i++) {
			struct kernel *k = &kernels[i];

			if (k->net_pid == pid) {
				k->net_pid = 0;
				continue;
			}
			if (k->pid != pid)
				continue;
			/* Exit 0 is a lifetime that passed; anything else is
			 * worth a line in the log. */
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				fprintf(stderr, "sandgate: sandboxd: sandbox %s "
				    "ended (%s %d)\n", k->id,
				    WIFSIGNALED(status) ? "signal" : "exit",
				    WIFSIGNALED(status) ? WTERMSIG(status) :
				    WEXITSTATUS(status));
			k->pid = -1;
			bury(k);
		}
}

/* Which slots our sandboxes have. */
static void
taken_slots(unsigned char *taken)
{
	int i;

	for (i = 0; i < SG_SBXD_MAX; i++)
		taken[i] = kernels[i].pid != 0;
}

/* A free slot. As root, its uid claimed across the host (sbxd_uids.c):
 * other gateways on this host take sandbox uids from the same range. */
static struct kernel *
free_slot(void)
{
	unsigned char taken[SG_SBXD_MAX];
	int i;

	taken_slots(taken);
	if (!conf->per_sandbox_uids) {
		for (i = 0; i < SG_SBXD_MAX && taken[i]; i++)
			;
		return i < SG_SBXD_MAX ? &kernels[i] : NULL;
	}
	if ((i = sg_sbxd_uid_pick(host.uids, conf->uid_base, taken)) == -1)
		return NULL;
	kernels[i].claimed = 1;
	return &kernels[i];
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
refuse(const char *kind, const char *why)
{
	return kind != NULL ? json_pack("{s:b,s:s,s:s}", "ok", 0, "kind", kind,
	    "error", why) : json_pack("{s:b,s:s}", "ok", 0, "error", why);
}

static int
int_of(const json_t *req, const char *key, int dflt)
{
	json_int_t v = json_integer_value(json_object_get(req, key));

	return v > 0 && v < (1 << 24) ? (int)v : dflt;
}

/* Which kernel the sandbox runs: a word kernel.py knows, never the
 * request's own bytes. */
static const char *
kernel_of(const json_t *req)
{
	const char *k = json_string_value(json_object_get(req, "kernel"));

	if (k != NULL && strcmp(k, "ipython") == 0)
		return "ipython";
	if (k != NULL && strcmp(k, "python") == 0)
		return "python";
	return "auto";
}

/* The settings of a create request; NULL, or a refusal. */
static json_t *
read_spec(const json_t *req, struct sg_sbxd_spec *s)
{
	const char *iso = json_string_value(json_object_get(req, "isolation"));
	const char *lim = json_string_value(json_object_get(req, "limits"));
	int want_cg = lim == NULL || strcmp(lim, "process") != 0;

	memset(s, 0, sizeof(*s));
	s->memory_mb = int_of(req, "memory_mb", 1024);
	s->disk_mb = int_of(req, "disk_mb", 512);
	s->max_procs = int_of(req, "max_procs", 64);
	s->cpus = int_of(req, "cpu", 1);
	s->lifetime = int_of(req, "lifetime", 300);
	s->net = json_is_true(json_object_get(req, "net"));
	s->bwrap = iso == NULL || strcmp(iso, "none") != 0;
	s->cgroup = want_cg && host.cg.mode != SG_CG_NONE;
	s->info_fd = s->block_fd = -1;
	s->cg = &host.cg;
	s->files = &files;
	s->seccomp = &seccomp;
	s->kernel_src = conf->kernel_src;
	s->kernel = kernel_of(req);
	if (s->bwrap && !host.bwrap_ok)
		return refuse("config", host.bwrap_why);
	if (s->bwrap && want_cg && !s->cgroup) {
		char why[700];

		snprintf(why, sizeof(why), "no cgroup for per-sandbox limits here "
		    "(%s); set limits = \"process\" on the tool to run with "
		    "per-process limits only", host.cg.why);
		return refuse("config", why);
	}
	if (s->net && s->bwrap && !host.net_ok)
		return refuse("config", host.net_why);
	return NULL;
}

static json_t *
create(const json_t *req)
{
	const char *id = json_string_value(json_object_get(req, "id"));
	struct sg_sbxd_spec s;
	struct kernel *k;
	int info[2] = { -1, -1 }, block[2] = { -1, -1 }, go[2] = { -1, -1 };
	int rc = -1;
	char why[300], g;
	json_t *no;
	pid_t pid;

	if (!valid_id(id))
		return refuse(NULL, "bad sandbox id");
	if (find(id) != NULL)
		return refuse(NULL, "sandbox exists");
	if ((no = read_spec(req, &s)) != NULL)
		return no;
	if (conf->per_sandbox_uids && host.uids == -1)
		return refuse("config", host.uids_why);
	if ((k = free_slot()) == NULL)
		return refuse("rate", "too many local sandboxes");
	sg_copy(k->id, sizeof(k->id), id);
	k->slot = (int)(k - kernels);
	k->cgroup = s.cgroup;
	s.id = k->id;
	s.uid = conf->per_sandbox_uids ? conf->uid_base + (unsigned)k->slot : 0;
	/* Counted before any limit is set; a uid of its own counts alone. */
	s.extra_nproc = conf->per_sandbox_uids ? 0 : sg_sbxd_scan_uids(getuid(), 0, NULL);
	snprintf(k->sock, sizeof(k->sock), "%s.sock", id);
	if (s.cgroup && sg_cg_create(&host.cg, id, s.memory_mb, s.max_procs,
	    s.cpus, why, sizeof(why)) == -1) {
		k->cgroup = 0;
		bury(k);
		return refuse(NULL, why);
	}
	if ((s.lfd = sg_sbxd_listen(dirs.kernels, k->sock, 64)) == -1 ||
	    pipe2(go, O_CLOEXEC) == -1 || (s.net && s.bwrap &&
	    (pipe2(info, O_CLOEXEC) == -1 || pipe2(block, O_CLOEXEC) == -1)))
		snprintf(why, sizeof(why), "cannot make the kernel's socket: %s",
		    strerror(errno));
	else if ((pid = fork()) == 0) {
		/* Not before its record is made (sbxd_orphans.c): with us
		 * dead before that, it goes too. */
		close(go[1]);
		if (sg_sbxd_read(go[0], &g, 1) != 1)
			_exit(124);
		s.info_fd = info[1];
		s.block_fd = block[0];
		sg_sbxd_exec(&s);
	} else {
		k->pid = pid > 0 ? pid : -1;
		close(info[1]);
		close(block[0]);
		if (pid == -1)
			sg_copy(why, sizeof(why), strerror(errno));
		else if (sg_sbxd_record(dirs.kernels, k->id, pid) == -1 ||
		    write(go[1], "g", 1) != 1)
			snprintf(why, sizeof(why), "cannot record the sandbox: %s",
			    strerror(errno));
		else if (s.net && s.bwrap && sg_sbxd_net_start(&s, info[0],
		    block[1], &k->net_pid, &k->net_exit) == -1)
			snprintf(why, sizeof(why), "cannot start the sandbox's "
			    "network");
		else
			rc = 0;
	}
	if (s.lfd != -1)
		close(s.lfd);
	close(go[0]);
	close(go[1]);
	close(info[0]);
	close(block[1]);
	if (rc == -1) {
		bury(k);
		return refuse(NULL, why);
	}
	return json_pack("{s:b,s:s++}", "ok", 1, "socket", instdir,
	    "/kernels/", k->sock);
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
	bury(k);
	return json_pack("{s:b,s:b}", "ok", 1, "gone", 0);
}

static void
answer(int c)
{
	char buf[LINE_MAX_BYTES];
	size_t len = 0;
	json_t *req, *resp;
	const char *op;
	int64_t until = sg_now_ms() + 5000;
	ssize_t n;
	char *text;

	while (len < sizeof(buf) - 1 && memchr(buf, '\n', len) == NULL) {
		if (!sg_sbxd_readable(c, until - sg_now_ms()) ||
		    (n = sg_sbxd_read(c, buf + len, sizeof(buf) - 1 - len)) <= 0)
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
		resp = refuse(NULL, "bad request");
	json_decref(req);
	if ((text = json_dumps(resp, JSON_COMPACT)) != NULL) {
		sg_sbxd_write_all(c, text, strlen(text));
		sg_sbxd_write_all(c, "\n", 1);
	}
	free(text);
	json_decref(resp);
}

/*
 * End what sandboxds that died left running (sbxd_orphans.c): at start,
 * as our instance is made, what its previous sandboxd left; then, and
 * now and then, what dead instances beside it left; and what is in this
 * store's sandbox groups. (Not root: host.uids is -1 and there is
 * nothing to do, kernels die with their sandboxd.) 0, or -1 with why.
 */
static int
sweep(int start, char *why, size_t whysz)
{
	static unsigned char taken[SG_SBXD_MAX];
	struct sg_sbxd_sweep sw;
	int n;

	taken_slots(taken);
	sg_sbxd_sweep_begin(&sw, host.uids, conf->uid_base, taken);
	if (!start)
		sg_sbxd_dead(dirs.base, inst, &sw);
	else if (sg_sbxd_rundir(conf->dir, inst, &dirs, &sw, why, whysz) == -1)
		return -1;
	if ((n = sg_sbxd_sweep_end(&sw, &host.cg)) > 0)
		fprintf(stderr, "sandgate: sandboxd: ended %d sandbox%s a dead "
		    "sandboxd left running\n", n, n == 1 ? "" : "es");
	return 0;
}

static void
stop_all(void)
{
	int i;

	for (i = 0; i < SG_SBXD_MAX; i++)
		if (kernels[i].pid != 0)
			bury(&kernels[i]);
	sg_sbxd_files_free(&files);
	free(seccomp.p);
}

static void
fail_start(const char *what, const char *why)
{
	fprintf(stderr, "sandgate: sandboxd: %s: %s\n", what, why);
	stop_all();
	_exit(3);
}

/*
 * End with the master: a master that died (killed, or crashed) is
 * followed by a new one and its own sandboxd, which takes over the
 * runtime directory; this one's kernels are then out of reach and would
 * only hold memory and uids. Set after the change of uid, which clears
 * it; a master gone before that is seen by getppid().
 */
static void
follow_master(void)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != master)
		got_term = 1;
}

void
sg_sandboxd_run(const struct sg_sandboxd_conf *c)
{
	struct pollfd p[2];
	struct sigaction sa;
	char buf[256], why[8192] = "the path of its runtime directory is too long";
	int64_t next_sweep;
	int lfd, cfd;

	conf = c;
	master = getppid();
	/* Tell it apart from the responders in ps and /proc/PID/comm. */
	prctl(PR_SET_NAME, "sg-sandboxd");
	/* A sandbox's first process outlives the bubblewrap we started by a
	 * moment: it is ours to reap, not init's. */
	prctl(PR_SET_CHILD_SUBREAPER, 1L);
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
	sg_sbxd_root_steps(conf, &host);
	if (sg_sbxd_drop_privileges(conf) == -1)
		fail_start("cannot drop privileges", strerror(errno));
	follow_master();
	snprintf(inst, sizeof(inst), "m%d", (int)master);
	if (snprintf(instdir, sizeof(instdir), "%s/%s", conf->dir, inst) >=
	    (int)sizeof(instdir) || sweep(1, why, sizeof(why)) == -1)
		fail_start("cannot start", why);
	next_sweep = sg_now_ms() + SG_SBXD_STALE_S * 1000;
	if ((lfd = sg_sbxd_listen(dirs.dir, "sandboxd.sock", 128)) == -1)
		fail_start("cannot listen on sandboxd.sock in its runtime "
		    "directory", strerror(errno));
	if (sg_sbxd_files_load(&files, conf->kernel_src, instdir, dirs.dir,
	    why, sizeof(why)) == -1 ||
	    sg_sbxd_seccomp(&seccomp, why, sizeof(why)) == -1)
		fail_start("cannot prepare kernels", why);
	sg_sbxd_probe_bwrap(conf, &seccomp, &host);
	sg_sbxd_say_start(conf, &host);
	while (!got_term) {
		p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = wake[0], .events = POLLIN };
		poll(p, 2, 1000);
		while (read(wake[0], buf, sizeof(buf)) > 0)
			;
		if (getppid() != master)
			break;
		reap();
		if (sg_now_ms() >= next_sweep) {
			sweep(0, why, sizeof(why));
			next_sweep = sg_now_ms() + SG_SBXD_STALE_S * 1000;
		}
		if ((p[0].revents & POLLIN) &&
		    (cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) != -1) {
			answer(cfd);
			close(cfd);
		}
	}
	stop_all();
	/* Nothing of ours stays behind: the instance goes with us. */
	sg_sbxd_rmtree(dirs.base, inst, 5);
	_exit(0);
}
