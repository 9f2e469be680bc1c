/*
 * The master: holds the listen socket and the parsed config, nothing else
 * (no SQLite connection, no libcurl state at any fork). It keeps between
 * workers_min and workers_max responders alive, growing the pool when all
 * are busy (a stream holds one for minutes) and retiring spare ones.
 * Responders report state in a shared-memory scoreboard and write a byte
 * to the wake pipe when they turn busy, so growth needs no polling delay.
 *
 * Every responder can write the scoreboard, so the master never takes a
 * process to signal from it: the pids it forked, and all it acts on
 * besides the states responders report, live in its own memory.
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fcgi.h"
#include "../core/state/ledger.h"
#include "../core/state/limits.h"
#include "../core/state/metrics.h"
#include "../lib/util.h"
#include "../providers/sandboxd/sandboxd.h"

#define TICK_MS		1000
#define QUICK_DEATH_MS	1000	/* a responder that dies this young ... */
#define BACKOFF_MS	1000	/* ... pauses spawning this long */
/* sandboxd that ends sooner than SETTLED after its start is started again
 * after a pause doubling from BACKOFF_MS up to MAX: one that cannot start
 * (its reason is in the log) must not be forked again every second. */
#define SANDBOXD_SETTLED_MS	30000
#define SANDBOXD_BACKOFF_MAX_MS	60000

static volatile sig_atomic_t got_term, got_hup;
static int self_pipe[2] = { -1, -1 };

/* A responder the master forked; kids[i] reports in board->slots[i]. */
struct kid {
	pid_t		 pid;		/* 0: none */
	int64_t		 started_ms;
	int		 retiring;	/* told to exit; no longer counts */
	int		 reserve;	/* beyond the pool's most, one connection */
};

struct master {
	struct sg_cfg	*cfg;
	struct sg_board	*board;
	struct kid	 kids[SG_SLOTS];
	int		 used;		/* slots ever given a responder */
	int		 want_reserve;	/* the pool is full: watch the backlog */
	int64_t		 backlog_since;	/* 0, or a connection seen waiting */
	int64_t		 recheck_at;	/* 0, or when growth waits until */
	int		 listen_fd;
	int		 wake[2];
	int64_t		 spawn_after;
	const char	*kernel_src;
	int		 workers[2];	/* --workers; {0, 0}: the config's */
	pid_t		 sandboxd;	/* the local provider's supervisor */
	int64_t		 sandboxd_after;
	int64_t		 sandboxd_started;
	int64_t		 sandboxd_pause;	/* 0, or the last back-off */
	pid_t		 reaper;	/* sweeps expired sandboxes */
	int64_t		 reaper_after;
	struct sg_runners runners;	/* background responses */
};

#define SANDBOX_UID_BASE 1900000000u	/* far above any real account */

static void
on_signal(int sig)
{
	int saved = errno;

	if (sig == SIGHUP)
		got_hup = 1;
	else if (sig == SIGTERM || sig == SIGINT)
		got_term = 1;
	(void)!write(self_pipe[1], "s", 1);
	errno = saved;
}

static int
install_signals(void)
{
	struct sigaction sa;

	if (pipe2(self_pipe, O_CLOEXEC | O_NONBLOCK) == -1)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;	/* no SA_RESTART, on purpose */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	return 0;
}

static int
slot_state(const struct sg_slot *s)
{
	return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

static void
spawn(struct master *m, int reserve)
{
	struct sg_env env = { m->cfg, m->board, m->listen_fd, m->wake[1],
	    reserve };
	struct kid *k;
	pid_t pid;
	int i;

	for (i = 0; i < SG_SLOTS && m->kids[i].pid != 0; i++)
		;
	if (i == SG_SLOTS)
		return;
	/* Our own count: the board's copy is for the responders to read. */
	if (i >= m->used)
		m->used = i + 1;
	__atomic_store_n(&m->board->used, m->used, __ATOMIC_SEQ_CST);
	sg_board_set(m->board, i, SG_SLOT_STARTING);
	if ((pid = fork()) == -1) {
		fprintf(stderr, "sandgate: fork: %s\n", strerror(errno));
		sg_board_set(m->board, i, SG_SLOT_FREE);
		m->spawn_after = sg_now_ms() + BACKOFF_MS;
		return;
	}
	if (pid == 0) {
		close(self_pipe[0]);
		close(self_pipe[1]);
		close(m->wake[0]);
		sg_responder_run(&env, i);
	}
	k = &m->kids[i];
	k->pid = pid;
	k->started_ms = sg_now_ms();
	k->retiring = 0;
	k->reserve = reserve;
}

/* The local sandboxes' directory, or NULL when no tool is local. */
static const char *
local_dir(const struct sg_cfg *cfg)
{
	size_t i;

	for (i = 0; i < cfg->ntools; i++)
		if (cfg->tools[i].provider == SG_PROVIDER_LOCAL)
			return cfg->tools[i].local_dir;
	return NULL;
}

/* Fork a helper child (sandboxd, the reaper): it keeps none of the
 * master's descriptors. The child's 0, -1 logged, or the parent's pid. */
static pid_t
fork_helper(struct master *m)
{
	pid_t pid;

	if ((pid = fork()) == -1) {
		fprintf(stderr, "sandgate: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		close(self_pipe[0]);
		close(self_pipe[1]);
		close(m->wake[0]);
		close(m->wake[1]);
		close(m->listen_fd);
	}
	return pid;
}

static void
spawn_sandboxd(struct master *m)
{
	struct sg_sandboxd_conf c = { .dir = local_dir(m->cfg),
	    .kernel_src = m->kernel_src, .owner = getuid(),
	    .owner_gid = getgid(), .per_sandbox_uids = geteuid() == 0,
	    .uid_base = SANDBOX_UID_BASE };
	struct passwd *pw;
	size_t i;
	pid_t pid;

	for (i = 0; i < m->cfg->ntools; i++)
		if (m->cfg->tools[i].provider == SG_PROVIDER_LOCAL &&
		    m->cfg->tools[i].allow_internet_access)
			c.wants_net = 1;
	if (c.per_sandbox_uids && m->cfg->server.user != NULL &&
	    (pw = getpwnam(m->cfg->server.user)) != NULL) {
		c.owner = pw->pw_uid;
		c.owner_gid = pw->pw_gid;
	}
	m->sandboxd_started = sg_now_ms();
	m->sandboxd_after = m->sandboxd_started + BACKOFF_MS;
	if ((pid = fork_helper(m)) == 0)
		sg_sandboxd_run(&c);
	if (pid > 0)
		m->sandboxd = pid;
}

/* sandboxd ended: when to start it again, and a line saying so. */
static void
sandboxd_ended(struct master *m, int status)
{
	int64_t now = sg_now_ms(), lived = now - m->sandboxd_started;
	const char *how = WIFSIGNALED(status) ? "signal" : "exit";
	int code = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);

	m->sandboxd = 0;
	if (got_term)
		return;
	if (lived >= SANDBOXD_SETTLED_MS) {
		m->sandboxd_pause = 0;
		fprintf(stderr, "sandgate: sandboxd died (%s %d); its sandboxes "
		    "are gone; restarting it\n", how, code);
		return;
	}
	m->sandboxd_pause = m->sandboxd_pause == 0 ? BACKOFF_MS :
	    m->sandboxd_pause * 2 > SANDBOXD_BACKOFF_MAX_MS ?
	    SANDBOXD_BACKOFF_MAX_MS : m->sandboxd_pause * 2;
	m->sandboxd_after = now + m->sandboxd_pause;
	fprintf(stderr, "sandgate: sandboxd exited (%s %d) %.1f s after its "
	    "start (its reason, if it could give one, is above); local "
	    "sandboxes are unavailable until it runs; next start in %d s\n",
	    how, code, (double)lived / 1000, (int)(m->sandboxd_pause / 1000));
}

static void
spawn_reaper(struct master *m)
{
	pid_t pid;

	m->reaper_after = sg_now_ms() + BACKOFF_MS;
	if ((pid = fork_helper(m)) == 0)
		sg_reaper_run(m->cfg, m->board);
	if (pid > 0)
		m->reaper = pid;
}

/* sg_runners' fork: the child of fork_helper. */
static pid_t
fork_runner(void *arg)
{
	return fork_helper(arg);
}

static void
reap(struct master *m)
{
	int status, i;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == m->reaper) {
			m->reaper = 0;
			continue;
		}
		if (sg_runners_ended(&m->runners, pid, status, got_term))
			continue;
		if (pid == m->sandboxd) {
			sandboxd_ended(m, status);
			continue;
		}
		for (i = 0; i < SG_SLOTS && m->kids[i].pid != pid; i++)
			;
		if (i == SG_SLOTS)
			continue;
		/* Any end but a clean exit is told, a retiring responder's
		 * too: one that crashes finishing its last request (after a
		 * reload, say) would otherwise go unseen. */
		if (!got_term && !(WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0)) {
			fprintf(stderr, "sandgate: responder %d died (%s %d)%s\n",
			    (int)pid, WIFSIGNALED(status) ? "signal" : "exit",
			    WIFSIGNALED(status) ? WTERMSIG(status) :
			    WEXITSTATUS(status), m->kids[i].retiring ?
			    " while retiring" : "; replacing it");
			if (!m->kids[i].retiring &&
			    sg_now_ms() - m->kids[i].started_ms < QUICK_DEATH_MS)
				m->spawn_after = sg_now_ms() + BACKOFF_MS;
		}
		m->kids[i].pid = 0;
		sg_board_set(m->board, i, SG_SLOT_FREE);
	}
}

static void
retire(struct kid *k)
{
	k->retiring = 1;
	kill(k->pid, SIGTERM);
}

static int
spare_state(int st)
{
	return st == SG_SLOT_IDLE || st == SG_SLOT_STARTING;
}

/*
 * Grow when no responder is free, shrink spare ones idle too long, up to
 * workers_max; once workers_max heavy requests are under way, up to
 * SG_POOL_MAX, for the requests that wait their turn (queue.c) and the
 * light routes. (Read from the board, which any responder can write: a
 * lie only moves the size between those two bounds.) At its most with
 * none free, the pool is full: the master then watches the backlog, and a
 * connection waiting there SG_GROW_WAIT_MS gets a reserve responder (up
 * to SG_RESERVE at once; sg_board_backlog) that serves it and exits. A
 * reserve never waits for a turn, so light routes still answer when the
 * queue fills the pool.
 */
static void
balance_responders(struct master *m, int64_t now)
{
	const struct sg_cfg *cfg = m->cfg;
	int i, n, live = 0, spare = 0, reserves = 0, rspare = 0, oldest = -1;
	int most = cfg->server.workers_max;
	int64_t oldest_since = now, held_since = now;

	/* Cleared before the scan: a responder that goes busy after it
	 * either is seen by it or sees this and wakes the master. */
	__atomic_store_n(&m->board->watching, 0, __ATOMIC_SEQ_CST);
	m->recheck_at = 0;
	for (i = 0; i < m->used; i++) {
		const struct sg_slot *s = &m->board->slots[i];
		int st = slot_state(s);

		if (m->kids[i].pid == 0 || m->kids[i].retiring)
			continue;
		if (m->kids[i].reserve) {
			reserves++;
			rspare += spare_state(st);
			continue;
		}
		live++;
		spare += spare_state(st);
		if ((st == SG_SLOT_BUSY || st == SG_SLOT_KEPT) &&
		    s->since_ms < held_since)
			held_since = s->since_ms;
		if (st == SG_SLOT_IDLE && s->since_ms < oldest_since) {
			oldest_since = s->since_ms;
			oldest = i;
		}
	}
	m->want_reserve = 0;
	if (now < m->spawn_after)
		return;
	if (sg_board_heavy(m->board) >= most)
		most = SG_POOL_MAX(most);
	n = sg_board_grow(live, spare, cfg->server.workers_min, most,
	    held_since, now, &m->recheck_at);
	if (m->recheck_at != 0) {
		__atomic_store_n(&m->board->watching, 1, __ATOMIC_SEQ_CST);
		return;
	}
	for (; n > 0; n--) {
		spawn(m, 0);
		live++;
		spare++;
	}
	if (live > cfg->server.workers_min && spare > 1 && oldest >= 0 &&
	    now - oldest_since >= (int64_t)cfg->server.idle_retire * 1000)
		retire(&m->kids[oldest]);
	/* A reserve that found nothing to take is not needed once a
	 * responder of the pool is free again. */
	for (i = 0; i < m->used && spare > 0 && rspare > 0; i++)
		if (m->kids[i].pid != 0 && m->kids[i].reserve &&
		    !m->kids[i].retiring &&
		    slot_state(&m->board->slots[i]) == SG_SLOT_IDLE)
			retire(&m->kids[i]);
	m->want_reserve = spare == 0 && rspare == 0 && reserves < SG_RESERVE;
}

/* How long the master may sleep: a tick, or until growth is due. */
static int
wait_ms(const struct master *m)
{
	int64_t left, at = m->recheck_at, seen = m->backlog_since;

	if (seen != 0 && (at == 0 || seen + SG_GROW_WAIT_MS < at))
		at = seen + SG_GROW_WAIT_MS;
	if (at == 0)
		return TICK_MS;
	left = at - sg_now_ms();
	return left < 1 ? 1 : left > TICK_MS ? TICK_MS : (int)left;
}

static void
balance(struct master *m)
{
	const struct sg_cfg *cfg = m->cfg;
	int64_t now = sg_now_ms();

	if (m->sandboxd == 0 && local_dir(cfg) != NULL &&
	    now >= m->sandboxd_after)
		spawn_sandboxd(m);
	else if (m->sandboxd != 0 && local_dir(cfg) == NULL)
		kill(m->sandboxd, SIGTERM);
	/* Without sandbox tools too: it also ends stored responses and
	 * forgotten sessions. */
	if (m->reaper == 0 && now >= m->reaper_after)
		spawn_reaper(m);
	sg_runners_balance(&m->runners, m->cfg, now, fork_runner, m);
	balance_responders(m, now);
}

/* SIGTERM: idle responders leave at once, busy ones get the grace period. */
static void
stop(struct master *m)
{
	int64_t until = sg_now_ms() + (int64_t)m->cfg->server.grace * 1000;
	int i, left;

	do {
		left = 0;
		for (i = 0; i < SG_SLOTS; i++) {
			if (m->kids[i].pid == 0)
				continue;
			/* Again each round: one may have been between its
			 * stop check and accept() when the first came. */
			kill(m->kids[i].pid, SIGTERM);
			left++;
		}
		/* A runner's job under way gets the grace, then ends
		 * failed (SIGINT: a reload's SIGTERM lets it finish). */
		left += sg_runners_signal(&m->runners, SIGINT);
		/* The reaper after the responders: it writes their last
		 * ledger rows as it goes. sandboxd last: the reaper deletes
		 * its warm sandboxes through it. */
		if (m->reaper != 0) {
			if (left == 0)
				kill(m->reaper, SIGTERM);
			left++;
		}
		if (m->sandboxd != 0) {
			if (m->reaper == 0)
				kill(m->sandboxd, SIGTERM);
			left++;
		}
		if (left == 0)
			return;
		poll(NULL, 0, 100);
		reap(m);
	} while (sg_now_ms() < until);
	for (i = 0; i < SG_SLOTS; i++)
		if (m->kids[i].pid != 0)
			kill(m->kids[i].pid, SIGKILL);
	if (m->sandboxd != 0)
		kill(m->sandboxd, SIGKILL);
	if (m->reaper != 0)
		kill(m->reaper, SIGKILL);
	sg_runners_signal(&m->runners, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0)
		;
}

/* Whether old has a sandbox tool cfg has not. */
static int
removed_tools(const struct sg_cfg *old, const struct sg_cfg *cfg)
{
	size_t i;

	for (i = 0; i < old->ntools; i++)
		if (sg_cfg_tool(cfg, old->tools[i].name) == NULL)
			return 1;
	return 0;
}

/* --workers wins over the config, at start and at each reload. */
static void
apply_workers(const struct master *m, struct sg_cfg *cfg)
{
	if (m->workers[0] > 0) {
		cfg->server.workers_min = m->workers[0];
		cfg->server.workers_max = m->workers[1];
	}
}

/* SIGHUP: a good file replaces the config and rolls every responder; a
 * broken one is refused and the old config stays. */
static void
reload(struct master *m)
{
	struct sg_cfg *cfg;
	char err[SG_ERR_MAX];
	size_t i;
	int j;

	if (sg_cfg_load(m->cfg->path, &cfg, err, sizeof(err)) == -1) {
		fprintf(stderr, "sandgate: reload refused, keeping the running "
		    "config: %s\n", err);
		return;
	}
	for (i = 0; i < cfg->nwarnings; i++)
		fprintf(stderr, "sandgate: warning: %s\n", cfg->warnings[i]);
	apply_workers(m, cfg);
	if (sg_prepare_store(cfg, err, sizeof(err)) == -1) {
		fprintf(stderr, "sandgate: reload refused: %s\n", err);
		sg_cfg_free(cfg);
		return;
	}
	/* Sandboxes of a tool the new config has not: only the old settings
	 * can reach them, so a child with the old config deletes them. */
	if (removed_tools(m->cfg, cfg) && fork_helper(m) == 0)
		sg_reaper_removed(m->cfg, cfg);
	/* A store moved elsewhere moves the local sandboxes' directory: the
	 * running sandboxd cannot follow, so it stops (its sandboxes with
	 * it) and balance() starts one in the new place. */
	if (m->sandboxd != 0 && local_dir(cfg) != NULL &&
	    strcmp(local_dir(cfg), local_dir(m->cfg)) != 0)
		kill(m->sandboxd, SIGTERM);
	sg_cfg_free(m->cfg);
	m->cfg = cfg;
	/* A sandboxd waiting out its back-off may start now: the reload may
	 * be the fix. */
	m->sandboxd_after = 0;
	/* The reaper holds the old config too: it comes back with the new. */
	if (m->reaper != 0)
		kill(m->reaper, SIGTERM);
	/* Runners too: each finishes its job, then comes back with it. */
	sg_runners_signal(&m->runners, SIGTERM);
	for (j = 0; j < SG_SLOTS; j++)
		if (m->kids[j].pid != 0 && !m->kids[j].retiring)
			retire(&m->kids[j]);
	fprintf(stderr, "sandgate: reloaded %s\n", cfg->path);
}

static void
drain(int fd)
{
	char buf[256];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

int
sg_master_run(struct sg_cfg *cfg, int listen_fd, const char *listen_spec,
    const char *kernel_src, const int workers[2])
{
	struct master m = { .cfg = cfg, .listen_fd = listen_fd,
	    .kernel_src = kernel_src, .workers = { workers[0], workers[1] } };
	struct pollfd pfd[3], one;
	int watch;

	sg_master_pid = getpid();
	apply_workers(&m, cfg);
	m.board = mmap(NULL, sizeof(*m.board), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m.board == MAP_FAILED) {
		fprintf(stderr, "sandgate: mmap: %s\n", strerror(errno));
		return 1;
	}
	if (sg_mx_map() == -1 || sg_use_map(SG_SLOTS +
	    SG_CFG_RUNNERS_MAX) == -1 ||
	    sg_lim_map() == -1 || sg_st_map() == -1) {
		fprintf(stderr, "sandgate: mmap: %s\n", strerror(errno));
		return 1;
	}
	if (install_signals() == -1 ||
	    pipe2(m.wake, O_CLOEXEC | O_NONBLOCK) == -1) {
		fprintf(stderr, "sandgate: pipe: %s\n", strerror(errno));
		return 1;
	}
	fprintf(stderr, "sandgate: serving %s on %s with %d..%d responders "
	    "at work (up to %d holding requests that wait their turn, and %d "
	    "in reserve for light routes)\n", cfg->path, listen_spec,
	    cfg->server.workers_min, cfg->server.workers_max,
	    SG_POOL_MAX(cfg->server.workers_max), SG_RESERVE);
	while (!got_term) {
		balance(&m);
		pfd[0] = (struct pollfd){ .fd = self_pipe[0], .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = m.wake[0], .events = POLLIN };
		pfd[2] = (struct pollfd){ .fd = m.listen_fd, .events = POLLIN };
		watch = m.want_reserve && m.backlog_since == 0;
		poll(pfd, watch ? 3 : 2, wait_ms(&m));
		drain(self_pipe[0]);
		drain(m.wake[0]);
		one = (struct pollfd){ .fd = m.listen_fd, .events = POLLIN };
		if (sg_board_backlog(m.want_reserve, watch && (pfd[2].revents &
		    POLLIN), sg_now_ms(), &m.backlog_since) &&
		    poll(&one, 1, 0) == 1)
			spawn(&m, 1);
		reap(&m);
		if (got_hup) {
			got_hup = 0;
			reload(&m);
		}
	}
	fprintf(stderr, "sandgate: stopping\n");
	stop(&m);
	sg_cfg_free(m.cfg);
	return 0;
}
