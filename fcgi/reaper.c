/*
 * The reaper: one child of the master that sweeps, every REAP_EVERY
 * seconds, the sandboxes whose life at their provider has passed (design
 * §5, "No leaks"): what nobody deleted, and what a dead responder left.
 * It also keeps the tools' warm sandboxes (core/state/pool.c).
 */
#include <sys/prctl.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fcgi.h"
#include "../core/api/bg_api.h"
#include "../core/api/bg_run.h"
#include "../core/api/gateway.h"
#include "../core/mcp/mcp.h"
#include "../core/state/ledger.h"
#include "../core/state/pool.h"
#include "../core/state/sandbox.h"
#include "../lib/log.h"
#include "../lib/util.h"
#include "../store/background.h"

#define REAP_EVERY	30
#define LEASE_RENEW_MS	5000
#define TICK_MS		200	/* the loop's tick: the pool, a full ring */
#define DRAIN_MS	1000	/* ledger rows reach the store within: a
				 * commit a second, not one a request */
#define PRUNE_BATCH	1000	/* ledger rows and traces removed a sweep */
#define JOBS_EVERY_MS	5000	/* a dead runner's job is failed within */
#define OVERDUE_MARGIN_S 60	/* past a request's time and the grace */
#define STOPPED_ERROR	"{\"code\":\"server_error\",\"message\":\"" \
			SG_BG_STOPPED "\"}"

static volatile sig_atomic_t stopping;

static void
on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

/* The responders' finished ledger rows into the store. */
static void
drain(struct sg_sbx_env *env)
{
	int n;

	if (sg_use_drain(env->cfg, env->store, &n) == -1)
		sg_log("sandgate: reaper: usage: %s", sg_store_errmsg(env->store));
}

/* Ledger rows, traces, background jobs and kept stream events past
 * their time (the jobs' and events' are the responses'), a bounded batch
 * a sweep. */
static void
prune_usage(struct sg_sbx_env *env)
{
	int64_t now = sg_now_ms(), wall = sg_wall_ms();
	int64_t kept = (int64_t)env->cfg->responses.retention * 1000;
	int n;

	if (sg_store_use_prune(env->store, now - (int64_t)
	    env->cfg->usage.retention * 1000, PRUNE_BATCH, &n) != SG_STORE_OK ||
	    sg_store_trace_prune(env->store, now - (int64_t)
	    env->cfg->usage.traces * 1000, PRUNE_BATCH, &n) != SG_STORE_OK ||
	    sg_store_bg_prune(env->store, wall - kept, PRUNE_BATCH, &n) !=
	    SG_STORE_OK || sg_store_ev_prune(env->store, wall - kept,
	    PRUNE_BATCH, &n) != SG_STORE_OK)
		sg_log("sandgate: reaper: usage: %s", sg_store_errmsg(env->store));
}

/* MCP sessions idle past sessions.ttl end, their sandboxes first. */
static void
end_mcp(struct sg_sbx_env *env)
{
	int n;

	if (sg_mcp_prune(env, &n) == -1)
		sg_log("sandgate: reaper: mcp: %s", sg_store_errmsg(env->store));
	else if (n > 0)
		fprintf(stderr, "event=mcp_sessions_ended count=%d\n", n);
}

/* sg_store_bg_held callback: a job whose runner (on this box) is dead
 * ends failed; a finished or live runner's is left alone. */
static int
fail_orphan(void *arg, const struct sg_store_bg_hold *h)
{
	struct sg_sbx_env *env = arg;

	if (h->pid > 0 && h->pid <= 0x7fffffff &&
	    sg_proc_start((int)h->pid) == h->start)
		return 0;
	if (sg_store_bg_finish(env->store, h->id, h->runner, "failed", NULL,
	    STOPPED_ERROR) == SG_STORE_OK &&
	    sg_bg_end_stream(env->store, h->id) == 0)
		fprintf(stderr, "event=background id=%s status=failed "
		    "reason=runner_gone\n", h->id);
	return 0;
}

/*
 * Background jobs whose runner died (killed, or the gateway stopped) on
 * this box; and any box's job older than a request may last (its box is
 * gone, or nothing reaps there): no job stays in_progress for ever.
 */
static void
fail_orphans(struct sg_sbx_env *env)
{
	const struct sg_cfg *cfg = env->cfg;
	int64_t life = ((int64_t)cfg->server.request_timeout +
	    cfg->server.grace + OVERDUE_MARGIN_S) * 1000;
	int n = 0;

	if (sg_store_bg_held(env->store, sg_store_box(env->store), fail_orphan,
	    env) != SG_STORE_OK ||
	    sg_store_bg_fail_overdue(env->store, sg_wall_ms() - life,
	    STOPPED_ERROR, &n) != SG_STORE_OK)
		sg_log("sandgate: reaper: background: %s",
		    sg_store_errmsg(env->store));
	else if (n > 0)
		fprintf(stderr, "event=background_overdue failed=%d\n", n);
}

static void
sweep(struct sg_sbx_env *env, const char *only_tool)
{
	char tool[128];
	int deleted, failed, skipped;
	int64_t t0 = sg_now_ms();

	if (sg_sbx_reap(env, only_tool, &deleted, &failed, &skipped) == -1)
		sg_log("sandgate: reaper: %s", sg_store_errmsg(env->store));
	else {
		sg_log_field(tool, sizeof(tool), only_tool != NULL ? only_tool :
		    "*");
		/* One logfmt line a sweep; skipped: another sweeps now. */
		fprintf(stderr, "event=reaper_sweep tool=%s deleted=%d "
		    "failed=%d skipped=%d ms=%lld\n", tool, deleted, failed,
		    skipped, (long long)(sg_now_ms() - t0));
	}
}

/* A sample for the console's overview: the board and what is alive. */
static void
sample(struct sg_sbx_env *env, struct sg_board *board)
{
	struct sg_seat seat = { board, -1, env->cfg, 0 };
	struct sg_st_load load;
	struct sg_st_alive alive;

	sg_board_load(&seat, &load);
	if (sg_st_alive(env->store, &alive) == -1) {
		sg_log("sandgate: reaper: overview: %s",
		    sg_store_errmsg(env->store));
		memset(&alive, 0, sizeof(alive));
	}
	sg_st_sample(&load, &alive);
}

/* The store, opened once for the reaper's life: 0, or -1 (logged). */
static int
open_store(const struct sg_cfg *cfg, struct sg_sbx_env *env)
{
	char err[SG_ERR_MAX];

	if (sg_gw_store_open(cfg, &env->store, err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "sandgate: reaper: %s\n", err);
	return -1;
}

/* Logged once a streak of failures, not every tick. */
static void
checkpoint(struct sg_sbx_env *env)
{
	static int failing;

	if (sg_store_checkpoint(env->store) == SG_STORE_OK)
		failing = 0;
	else if (!failing) {
		failing = 1;
		sg_log("sandgate: reaper: %s", sg_store_errmsg(env->store));
	}
}

struct pool_turn {
	char	 lease[96];	/* each box fills its own pool */
	char	 holder[96];
	int	 held;		/* the lease, when last asked */
	int	 tended;	/* ever: then its warm ones are drained */
	int64_t	 lease_at, check_at;
};

/*
 * Warm sandboxes: filled by one reaper at a time (a lease, as the sweep
 * has, renewed every LEASE_RENEW_MS), checked every SG_POOL_CHECK_S.
 */
static void
tend_pool(struct sg_sbx_env *env, struct pool_turn *p)
{
	if (sg_now_ms() >= p->lease_at) {
		p->held = sg_store_lease(env->store, p->lease, p->holder,
		    3 * SG_POOL_CHECK_S) == SG_STORE_OK;
		p->lease_at = sg_now_ms() + LEASE_RENEW_MS;
	}
	if (!p->held)
		return;
	p->tended = 1;
	sg_pool_fill(env);
	if (sg_now_ms() >= p->check_at) {
		sg_pool_tend(env);
		p->check_at = sg_now_ms() + SG_POOL_CHECK_S * 1000;
	}
}

/*
 * Every DRAIN_MS (or TICK_MS while the ring fills) the responders' ledger
 * rows go to the store; every TICK_MS the WAL is checkpointed (so no
 * request's commit does it) and, with warm sandboxes wanted, the pool is
 * tended (a claimed one is replaced at once); every
 * SG_ST_INTERVAL seconds the overview gets a sample; every REAP_EVERY
 * seconds, a sweep. At the end
 * (a stop, or a reload: the new reaper makes them again with the new
 * settings) its own warm sandboxes go.
 */
static void
reaper_loop(const struct sg_cfg *cfg, struct sg_sbx_env *env,
    struct sg_board *board)
{
	struct pool_turn p = { .held = 0 };
	int pooled = sg_pool_wanted(cfg);
	int64_t next_sweep = 0, next_drain = 0, next_sample = 0, next_jobs = 0;

	snprintf(p.holder, sizeof(p.holder), "%s:%d", sg_store_box(env->store),
	    (int)getpid());
	snprintf(p.lease, sizeof(p.lease), "pool:%s", sg_store_box(env->store));
	while (!stopping) {
		if (sg_now_ms() >= next_drain || sg_use_filling()) {
			drain(env);
			next_drain = sg_now_ms() + DRAIN_MS;
		}
		if (sg_now_ms() >= next_sweep) {
			end_mcp(env);
			sweep(env, NULL);
			prune_usage(env);
			next_sweep = sg_now_ms() + REAP_EVERY * 1000;
		}
		if (sg_now_ms() >= next_jobs) {
			fail_orphans(env);
			next_jobs = sg_now_ms() + JOBS_EVERY_MS;
		}
		checkpoint(env);
		if (pooled)
			tend_pool(env, &p);
		if (sg_now_ms() >= next_sample) {
			sample(env, board);
			next_sample = sg_now_ms() + SG_ST_INTERVAL * 1000;
		}
		poll(NULL, 0, TICK_MS);
	}
	drain(env);
	if (p.tended) {
		sg_pool_drain(env);
		sg_store_lease_release(env->store, p.lease, p.holder);
	}
}

void
sg_reaper_run(const struct sg_cfg *cfg, struct sg_board *board)
{
	struct sg_prov prov;
	struct sg_sbx_env env = { cfg, NULL, &prov, NULL };

	prctl(PR_SET_NAME, "sg-reaper");
	sg_child_signals(on_stop);
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (sg_drop_privileges(cfg) == -1)
		_exit(3);
	sg_child_follow();
	/* The master starts another after a pause when this one ends. */
	if (open_store(cfg, &env) == -1)
		_exit(1);
	sg_prov_init(&prov);
	reaper_loop(cfg, &env, board);
	sg_prov_free(&prov);
	sg_store_close(env.store);
	curl_global_cleanup();
	_exit(0);
}

void
sg_reaper_removed(const struct sg_cfg *old, const struct sg_cfg *cfg)
{
	struct sg_prov prov;
	struct sg_sbx_env env = { old, NULL, &prov, NULL };
	size_t i;

	prctl(PR_SET_NAME, "sg-reaper");
	sg_child_signals(on_stop);
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (sg_drop_privileges(old) == -1)
		_exit(3);
	sg_child_follow();
	if (open_store(old, &env) == -1)
		_exit(1);
	sg_prov_init(&prov);
	for (i = 0; i < old->ntools; i++)
		if (sg_cfg_tool(cfg, old->tools[i].name) == NULL)
			sweep(&env, old->tools[i].name);
	sg_prov_free(&prov);
	sg_store_close(env.store);
	curl_global_cleanup();
	_exit(0);
}
