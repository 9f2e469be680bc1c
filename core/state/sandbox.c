#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ledger.h"
#include "metrics.h"
#include "pool.h"
#include "sandbox.h"
#include "trace.h"
#include "../../lib/jscan.h"
#include "../../lib/log.h"
#include "../../lib/util.h"

#define UNLOCK_TRY_MS	8000	/* longer than a database's restart */
#define UNLOCK_PAUSE_US	100000

/* The row the last run left (sg_sbx_forget_run). */
static struct sg_store_sbx	 ran;

void
sg_sbx_forget_run(void)
{
	sg_store_sbx_clear(&ran);
	ran.id[0] = '\0';
}

static int
not_found(struct sg_error *err, const char *id)
{
	return sg_error_set(err, 404, "invalid_request_error", NULL, "id",
	    "Container with id '%s' not found.", id);
}

static int
store_error(struct sg_sbx_env *env, struct sg_error *err)
{
	return sg_error_store(err, sg_store_errmsg(env->store));
}

/* Life at the provider: a request's own sandbox outlives the request, a
 * kept one its idle TTL; both with a minute to spare. */
static int
lifetime(const struct sg_cfg *cfg, int kind)
{
	return (kind == SG_SBX_EPHEMERAL ? cfg->server.request_timeout :
	    cfg->sessions.ttl) + 60;
}

static int
full(const char *tenant_max, struct sg_error *err)
{
	return sg_error_set(err, 429, "requests", "rate_limit_exceeded", NULL,
	    "This key already keeps %s sandboxes alive and every one of them "
	    "is running code; retry when one finishes, or delete one.",
	    tenant_max);
}

/* A sandbox the per-key limit evicted (its row says "deleting"): deleted
 * at its provider now; when that fails the row stays for the reaper. */
static void
evict(struct sg_sbx_env *env, const char *victim)
{
	struct sg_store_sbx row;
	char why[512];

	if (victim[0] == '\0' || sg_store_sbx_get(env->store, victim, NULL,
	    &row) != SG_STORE_OK)
		return;
	if (sg_sbx_destroy_row(env, &row, why, sizeof(why)) == -1)
		sg_log("sandgate: evicting sandbox %s: %s", victim,
		    why);
	sg_store_sbx_clear(&row);
}

/* The provider's half of a create, for a row already recorded. */
static int
provision(struct sg_sbx_env *env, const struct sg_tool *t,
    const struct sg_provider_ops *ops, const char *id, int kind,
    struct sg_store_sbx *out, struct sg_error *err)
{
	int life = lifetime(env->cfg, kind);
	int64_t t0 = sg_now_ms();
	struct sg_prov_error pe;
	json_t *handle;
	char *text, extra[96];

	/* A warm one, made ahead, when the tool keeps some: no wait. */
	if (sg_pool_take(env, t, id) == 0) {
		snprintf(extra, sizeof(extra), "kind=%s ms=%lld pool=hit",
		    sg_sbx_kind_name(kind) != NULL ? sg_sbx_kind_name(kind) :
		    "other", (long long)(sg_now_ms() - t0));
		sg_sbx_log("sandbox_create", id, t->name, extra);
	} else if (sg_sbx_make(env, t, ops, id, kind, life, &handle, &pe, extra,
	    sizeof(extra)) != SG_PROV_OK)
		return sg_sbx_prov_error(t, &pe, id, err);
	else {
		text = json_dumps(handle, JSON_COMPACT);
		json_decref(handle);
		if (text == NULL || sg_store_sbx_ready(env->store, id, text,
		    (int64_t)time(NULL) + life) != SG_STORE_OK) {
			free(text);
			return store_error(env, err);
		}
		free(text);
		sg_sbx_log("sandbox_create", id, t->name, extra);
	}
	if (out != NULL && sg_store_sbx_get(env->store, id, NULL, out) !=
	    SG_STORE_OK)
		return store_error(env, err);
	return 0;
}

int
sg_sbx_create(struct sg_sbx_env *env, const char *tenant, const char *tool,
    int kind, struct sg_store_sbx *out, struct sg_error *err)
{
	const struct sg_provider_ops *ops;
	const struct sg_tool *t;
	char id[48], victim[48], max[16];
	int rc;

	memset(out, 0, sizeof(*out));
	if (sg_sbx_may_use(env, tool, "tool", err) == -1 ||
	    (t = sg_sbx_tool(env, tool != NULL ? tool :
	    env->cfg->interception.sandbox_tool, &ops, err)) == NULL)
		return -1;
	if (sg_rand_id(id, sizeof(id), "cntr_", 16) == -1)
		return sg_error_server(err, 500, "no randomness for an id");
	/* Record before create: a responder that dies below leaves a row
	 * (state creating, its pid and start time) to clean up after it. */
	rc = sg_store_sbx_begin_kind(env->store, id, tenant, t->name, kind,
	    getpid(), sg_self_start(), (int64_t)time(NULL) +
	    lifetime(env->cfg, kind), env->cfg->sessions.max_per_key, victim);
	snprintf(max, sizeof(max), "%d", env->cfg->sessions.max_per_key);
	if (rc == SG_STORE_FULL)
		return full(max, err);
	if (rc != SG_STORE_OK)
		return store_error(env, err);
	evict(env, victim);
	return provision(env, t, ops, id, kind, out, err);
}

/* Wait a little for another responder (creating, running): 0, or -1 with
 * err once the request's deadline passed or its client left. */
static int
pause_for(struct sg_sbx_env *env, const char *what, const char *id,
    struct sg_error *err)
{
	if (env->prov->stop != NULL && env->prov->stop(env->prov->stop_arg))
		return sg_error_set(err, 499, "server_error", NULL, NULL,
		    "The client closed the connection.");
	if (env->prov->deadline_ms > 0 && sg_now_ms() >= env->prov->deadline_ms)
		return sg_error_final(err, 504, "Container %s: %s did not finish "
		    "in time.", id, what);
	usleep(50000);
	return 0;
}

/* A run held by a process that died (a responder killed mid-run) is
 * taken away from it at once, rather than left until its deadline: 1 when
 * it was, -1 when the sandbox has no row (no run to wait for). The run
 * may still be going on in the sandbox; the provider makes the next one
 * wait for it. */
static int
dead_runner_dropped(struct sg_sbx_env *env, const char *id)
{
	struct sg_store_sbx row;
	int dead, rc;

	if ((rc = sg_store_sbx_get(env->store, id, NULL, &row)) != SG_STORE_OK)
		return rc == SG_STORE_NOTFOUND ? -1 : 0;
	dead = row.runner_pid > 0 && row.runner_until >= (int64_t)time(NULL) &&
	    !sg_sbx_running(env, &row);
	if (dead)
		sg_store_sbx_run_drop(env->store, id, row.runner_pid,
		    row.runner_start);
	sg_store_sbx_clear(&row);
	return dead;
}

int
sg_sbx_session(struct sg_sbx_env *env, const char *tenant, const char *tool,
    const char *session_id, char out[48], int *lost, struct sg_error *err)
{
	const struct sg_provider_ops *ops;
	const struct sg_tool *t;
	struct sg_store_sbx row;
	struct sg_store_sess s;
	char id[48], victim[48], max[16];
	int rc, created, was_lost;

	*lost = 0;
	snprintf(max, sizeof(max), "%d", env->cfg->sessions.max_per_key);
	if (tool == NULL)
		tool = env->cfg->interception.sandbox_tool;
	if (sg_sbx_may_use(env, tool, "tools", err) == -1 ||
	    (t = sg_sbx_tool(env, tool, &ops, err)) == NULL)
		return -1;
	/* Most requests of a session find its sandbox ready: one statement
	 * reads it and touches the session. Anything else is the claim's. */
	if (sg_store_sess_use(env->store, tenant, session_id, &s) ==
	    SG_STORE_OK && s.sandbox_id[0] != '\0' &&
	    strcmp(s.state, "ready") == 0) {
		sg_copy(out, 48, s.sandbox_id);
		return 0;
	}
	for (;;) {
		if (sg_rand_id(id, sizeof(id), "cntr_", 16) == -1)
			return sg_error_server(err, 500, "no randomness for an id");
		rc = sg_store_sess_claim(env->store, tenant, session_id, id,
		    t->name, getpid(), sg_self_start(), (int64_t)time(NULL)
		    + lifetime(env->cfg, SG_SBX_SESSION),
		    env->cfg->sessions.max_per_key, out, victim, &created,
		    &was_lost);
		if (rc == SG_STORE_FULL)
			return full(max, err);
		if (rc != SG_STORE_OK)
			return store_error(env, err);
		*lost |= was_lost;
		evict(env, victim);
		if (created)
			return provision(env, t, ops, out, SG_SBX_SESSION, NULL,
			    err);
		rc = sg_store_sbx_get(env->store, out, tenant, &row);
		if (rc == SG_STORE_OK && strcmp(row.state, "ready") == 0) {
			sg_store_sbx_clear(&row);
			sg_store_sess_touch(env->store, tenant, session_id);
			return 0;
		}
		/* Another responder creates it: wait. One that died, or a
		 * sandbox on its way out, gives the session a new one. */
		if (rc == SG_STORE_OK && (strcmp(row.state, "deleting") == 0 ||
		    sg_sbx_owner_dead(env, &row))) {
			sg_store_sess_detach(env->store, tenant, session_id, out);
			if (strcmp(row.state, "creating") == 0)
				sg_store_sbx_abandon(env->store, out);
		} else if (rc != SG_STORE_NOTFOUND && pause_for(env,
		    "creating it", out, err) == -1) {
			sg_store_sbx_clear(&row);
			return -1;
		}
		sg_store_sbx_clear(&row);
	}
}

/* sg_sbx_open's checks of a row read (rc: how the read went). */
static int
open_row(struct sg_sbx_env *env, const char *id, int rc,
    struct sg_store_sbx *row, const struct sg_tool **t,
    const struct sg_provider_ops **ops, json_t **handle, struct sg_error *err)
{
	if (rc == SG_STORE_NOTFOUND)
		return not_found(err, id);
	if (rc != SG_STORE_OK)
		return store_error(env, err);
	if (sg_sbx_may_use(env, row->tool, "tool", err) == -1) {
		sg_store_sbx_clear(row);
		return -1;
	}
	if (strcmp(row->state, "ready") != 0 || row->handle == NULL) {
		sg_store_sbx_clear(row);
		return sg_error_set(err, 409, "invalid_request_error", NULL,
		    "id", "Container with id '%s' is not ready (%s).", id,
		    row->state);
	}
	if ((*t = sg_sbx_tool(env, row->tool, ops, err)) != NULL &&
	    (*t)->provider == SG_PROVIDER_LOCAL && !sg_sbx_ours(env, row)) {
		sg_sbx_other_box(env, row, err);
		sg_store_sbx_clear(row);
		return -1;
	}
	if (*t == NULL || (*handle = sg_jparse(row->handle,
	    strlen(row->handle), 0)) == NULL) {
		sg_store_sbx_clear(row);
		return *t == NULL ? -1 : sg_error_server(err, 500, "Container "
		    "%s has a damaged handle in the store.", id);
	}
	return 0;
}

int
sg_sbx_open(struct sg_sbx_env *env, const char *tenant, const char *id,
    struct sg_store_sbx *row, const struct sg_tool **t,
    const struct sg_provider_ops **ops, json_t **handle, struct sg_error *err)
{
	if (ran.id[0] != '\0' && strcmp(ran.id, id) == 0 && (tenant == NULL ||
	    strcmp(ran.tenant, tenant) == 0)) {
		*row = ran;	/* its handle and seen handed over */
		ran.handle = ran.seen = NULL;
		sg_sbx_forget_run();
		return open_row(env, id, SG_STORE_OK, row, t, ops, handle, err);
	}
	return open_row(env, id, sg_store_sbx_get(env->store, id, tenant, row),
	    row, t, ops, handle, err);
}

/*
 * A sandbox that looks gone may only be unreachable: its code can close
 * the kernel's socket and live on. Its row goes only once the provider
 * deleted it (or says it is gone); otherwise the row stays, so DELETE
 * and the reaper still reach it. Always -1 with err.
 */
static int
unreachable(struct sg_sbx_env *env, const struct sg_tool *t,
    const struct sg_provider_ops *ops, const json_t *handle, const char *id,
    const struct sg_prov_error *why, struct sg_error *err)
{
	struct sg_prov_error pe;
	int rc = ops->destroy(env->prov, t, handle, &pe);

	sg_log("sandgate: sandbox %s stopped answering (%s); delete: "
	    "%s", id, why->message, rc == SG_PROV_OK || rc == SG_PROV_GONE ?
	    "done" : pe.message);
	if (rc != SG_PROV_OK && rc != SG_PROV_GONE) {
		sg_mx_sbx(t->name, SG_MX_DELETE_FAILED, 0);
		sg_error_server(err, 502, "Sandbox tool %s: container %s stopped "
		    "answering and could not be deleted yet; it is kept, so "
		    "DELETE it or let it expire.", t->name, id);
		return -1;
	}
	sg_sbx_log("sandbox_delete", id, t->name, "by=gone");
	sg_mx_sbx(t->name, SG_MX_GONE, 0);
	sg_store_sbx_remove(env->store, id);
	sg_error_set(err, 404, "invalid_request_error", NULL, "id",
	    "Container with id '%s' stopped answering and was deleted; create "
	    "a new one.", id);
	return -2;
}

/* sg_sbx_lock, the sandbox's row read by the statement that takes the
 * lock (into *row when not NULL): the store's rc (OK, NOTFOUND when the
 * sandbox has no row, or an error: SG_STORE_ERROR is -1 too), or
 * GAVE_UP with err. */
#define GAVE_UP	1
static int
lock_row(struct sg_sbx_env *env, const char *id, int secs,
    struct sg_store_sbx *row, struct sg_error *err)
{
	struct sg_store_sbx seen;
	int64_t until;
	int rc, dead;

	sg_sbx_forget_run();
	for (;;) {
		until = (int64_t)time(NULL) + secs + 60;
		rc = row != NULL ? sg_store_sbx_run_take(env->store, id,
		    getpid(), sg_self_start(), until, &seen) :
		    sg_store_sbx_run_begin(env->store, id, getpid(),
		    sg_self_start(), until);
		if (rc != SG_STORE_EXISTS)
			break;
		if ((dead = dead_runner_dropped(env, id)) == -1)
			return SG_STORE_NOTFOUND;
		if (!dead && pause_for(env, "another run", id, err) == -1)
			return GAVE_UP;
	}
	if (row != NULL && rc == SG_STORE_OK)
		*row = seen;
	return rc;
}

int
sg_sbx_lock(struct sg_sbx_env *env, const char *id, int secs,
    struct sg_error *err)
{
	return lock_row(env, id, secs, NULL, err) == GAVE_UP ? -1 : 0;
}

/*
 * A run's lock left in the store holds the sandbox from every other run
 * until its deadline (a minute past the run's), though this process lives
 * on: when the store does not answer (a database restarting), the release
 * is tried again for a while.
 */
static void
unlock_touch(struct sg_sbx_env *env, const char *id, int64_t expires_at,
    const char *tenant, const char *session)
{
	int64_t until = sg_now_ms() + UNLOCK_TRY_MS;

	/* A session's: sent with the request's next statement (the held
	 * look's lock when its files changed), else once the look is done
	 * (sg_outf_collect) or at the request's end (sg_bind_end). */
	while (sg_store_sbx_run_done(env->store, id, getpid(), expires_at,
	    tenant, session, session != NULL) != SG_STORE_OK) {
		if (sg_now_ms() >= until) {
			sg_log("sandgate: sandbox %s: its run's lock could "
			    "not be released (%s): it holds until its deadline",
			    id, sg_store_errmsg(env->store));
			return;
		}
		usleep(UNLOCK_PAUSE_US);
	}
}

void
sg_sbx_unlock(struct sg_sbx_env *env, const char *id)
{
	unlock_touch(env, id, 0, NULL, NULL);
}

int
sg_sbx_run(struct sg_sbx_env *env, const char *tenant, const char *id,
    const char *code, int timeout_s, int keep, json_t **result,
    struct sg_error *err)
{
	int rc = sg_sbx_run_in(env, tenant, id, NULL, code, timeout_s, keep,
	    result, err);

	sg_sbx_forget_run();	/* no look at its files follows here */
	return rc;
}

/*
 * Where a run's end moves the sandbox's life to (now + life), or 0 when
 * the row, as the run's lock read it, says so already (a run within the
 * second of the last): the lock is then released alone. A touch rewrites
 * what the kept sandboxes are ordered by (an index), even to the same
 * values: on SQLite a page more a run, on PostgreSQL an update that is
 * not HOT.
 */
static int64_t
touch_to(const struct sg_store_sbx *row, int life)
{
	int64_t now = (int64_t)time(NULL);

	return row->last_used_at == now && row->expires_at == now + life ? 0 :
	    now + life;
}

int
sg_sbx_run_in(struct sg_sbx_env *env, const char *tenant, const char *id,
    const char *session, const char *code, int timeout_s, int keep,
    json_t **result, struct sg_error *err)
{
	const struct sg_provider_ops *ops;
	const struct sg_tool *t;
	struct sg_store_sbx row;
	struct sg_prov_error pe;
	struct sg_exec res;
	json_t *handle;
	int64_t left, t0, ms;
	int rc, life, held;

	*result = NULL;
	if (timeout_s <= 0)
		timeout_s = env->cfg->interception.exec_timeout;
	/* The lock's statement reads the row: a tenant's own only, as
	 * sg_sbx_open reads it. */
	if ((rc = lock_row(env, id, timeout_s, &row, err)) == GAVE_UP)
		return -1;
	held = rc == SG_STORE_OK;
	if (held && tenant != NULL && strcmp(row.tenant, tenant) != 0) {
		sg_store_sbx_clear(&row);
		rc = SG_STORE_NOTFOUND;
	}
	/* A session's sandbox that went since it was claimed (deleted, or
	 * on its way out): the session gets another, as a gone one does. */
	if (session != NULL && (rc == SG_STORE_NOTFOUND || (rc ==
	    SG_STORE_OK && strcmp(row.state, "ready") != 0))) {
		if (rc == SG_STORE_OK)
			sg_store_sbx_clear(&row);
		if (held)
			sg_sbx_unlock(env, id);
		return SG_SBX_GONE;
	}
	if (open_row(env, id, rc, &row, &t, &ops, &handle, err) == -1) {
		sg_sbx_unlock(env, id);
		return -1;
	}
	/*
	 * The provider must never end a sandbox during a run, and a kept
	 * sandbox's life slides with use (at most one keepalive a minute);
	 * an ephemeral one only has to outlast this run.
	 */
	left = row.expires_at - (int64_t)time(NULL);
	life = keep ? lifetime(env->cfg, SG_SBX_SESSION) : 0;
	if (life < timeout_s + 60)
		life = timeout_s + 60;
	rc = SG_PROV_OK;
	if (keep ? left < life - 60 : left <= life)
		rc = ops->keepalive(env->prov, t, handle, life, &pe);
	else
		life = (int)left;
	sg_exec_init(&res, env->prov->output_cap);
	t0 = sg_now_ms();
	if (rc == SG_PROV_OK)
		rc = ops->run(env->prov, t, handle, code, timeout_s, &res, &pe);
	ms = sg_now_ms() - t0;
	sg_mx_sbx(t->name, rc == SG_PROV_OK ? SG_MX_RAN : SG_MX_RUN_FAILED, ms);
	sg_use_run(t->name, ms);
	/* Touched, released and its session touched: one round trip. */
	unlock_touch(env, id, rc == SG_PROV_OK ? touch_to(&row, life) : 0,
	    tenant, rc == SG_PROV_OK ? session : NULL);
	if (rc == SG_PROV_OK) {
		/* As the writes just sent left it. */
		ran = row;
		ran.handle = strdup(row.handle);
		row.seen = NULL;	/* ran's now */
		ran.runner_pid = ran.runner_start = ran.runner_until = 0;
		ran.last_used_at = (int64_t)time(NULL);
		ran.expires_at = ran.last_used_at + life;
		if (ran.handle == NULL)
			ran.id[0] = '\0';
	}
	if (rc == SG_PROV_OK && (*result = sg_exec_json(&res)) == NULL)
		rc = sg_prov_fail(&pe, SG_PROV_FAILED, 0, "out of memory");
	sg_exec_free(&res);
	if (rc == SG_PROV_GONE)
		rc = unreachable(env, t, ops, handle, id, &pe, err) == -2 ?
		    SG_SBX_GONE : -1;
	else if (rc != SG_PROV_OK)
		rc = sg_sbx_prov_error(t, &pe, id, err);
	sg_trace_run(t->name, id, code, t0, ms, *result, rc == SG_PROV_OK ?
	    NULL : err->message);
	json_decref(handle);
	sg_store_sbx_clear(&row);
	return rc == SG_PROV_OK ? 0 : rc == SG_SBX_GONE ? SG_SBX_GONE : -1;
}

int
sg_sbx_delete(struct sg_sbx_env *env, const char *tenant, const char *id,
    struct sg_error *err)
{
	const struct sg_provider_ops *ops;
	const struct sg_tool *t;
	struct sg_store_sbx row;
	struct sg_prov_error pe;
	json_t *handle;
	int rc;

	sg_sbx_forget_run();
	if (sg_sbx_open(env, tenant, id, &row, &t, &ops, &handle, err) == -1)
		return -1;
	sg_store_sbx_mark(env->store, id, "deleting");
	rc = ops->destroy(env->prov, t, handle, &pe);
	json_decref(handle);
	sg_store_sbx_clear(&row);
	/* Gone already counts as deleted; anything else keeps the row. */
	if (rc != SG_PROV_OK && rc != SG_PROV_GONE) {
		sg_mx_sbx(t->name, SG_MX_DELETE_FAILED, 0);
		sg_store_sbx_mark(env->store, id, "ready");
		return sg_sbx_prov_error(t, &pe, id, err);
	}
	sg_sbx_log("sandbox_delete", id, t->name, "");
	sg_mx_sbx(t->name, SG_MX_DELETED, 0);
	if (sg_store_sbx_remove(env->store, id) != SG_STORE_OK)
		return store_error(env, err);
	return 0;
}

json_t *
sg_sbx_json(const struct sg_cfg *cfg, const struct sg_store_sbx *row)
{
	const struct sg_tool *t = sg_cfg_tool(cfg, row->tool);

	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I}",
	    "id", row->id, "object", "sandbox", "tool", row->tool,
	    "provider", t != NULL ? sg_provider_name(t->provider) : "unknown",
	    "status", strcmp(row->state, "ready") == 0 ? "running" : row->state,
	    "created_at", (json_int_t)row->created_at,
	    "last_active_at", (json_int_t)row->last_used_at,
	    "expires_at", (json_int_t)row->expires_at);
}
