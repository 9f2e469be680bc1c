/*
 * Warm sandboxes, made ahead by the reaper (see pool.h). A warm sandbox
 * lives POOL_LIFE at its provider, extended at each check, so a claimed
 * one outlives any kind's own life without a call on the request's path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ledger.h"
#include "metrics.h"
#include "pool.h"
#include "../../lib/log.h"
#include "../../lib/util.h"

#define RETRY_MIN_MS	1000	/* a tool whose create failed waits this */
#define RETRY_MAX_MS	60000	/* ... doubling up to this */
#define TOOLS_MAX	64
#define DRAIN_PASSES	20
#define DRAIN_PAUSE_US	100000

/* Per tool (by its index in the config): when to try again after a
 * failed create. The reaper's own, as the config it holds. */
static struct {
	int64_t	 at;
	int64_t	 wait;
} retry[TOOLS_MAX];

/* Long enough for any kind to take one over: a request's own, a kept
 * one's idle TTL, with the check's interval to spare. */
static int
pool_life(const struct sg_cfg *cfg)
{
	int life = cfg->server.request_timeout > cfg->sessions.ttl ?
	    cfg->server.request_timeout : cfg->sessions.ttl;

	return life + 60 + 3 * SG_POOL_CHECK_S;
}

void
sg_pool_gen(const struct sg_tool *t, char gen[24])
{
	char *text = NULL, hex[65];

#define S(v) ((v) != NULL ? (v) : "")
	if (asprintf(&text, "%d|%s|%s|%s|%s|%s|%s|%s|%d|%d|%d|%d|%d|%d|%s|%s",
	    (int)t->provider, S(t->api_key), S(t->api_base), S(t->template),
	    S(t->image), S(t->sandbox_url), S(t->isolation), S(t->kernel),
	    t->memory_mb, t->disk_mb, t->max_procs, t->cpu,
	    t->allow_internet_access, t->limits_process, S(t->local_dir),
	    S(t->api_key_problem)) == -1)
		text = NULL;
#undef S
	sg_sha256_hex(text != NULL ? text : "", text != NULL ? strlen(text) : 0,
	    hex);
	free(text);
	snprintf(gen, 24, "%.16s", hex);
}

int
sg_pool_wanted(const struct sg_cfg *cfg)
{
	size_t i;

	for (i = 0; i < cfg->ntools; i++)
		if (cfg->tools[i].warm > 0)
			return 1;
	return 0;
}

int
sg_pool_take(struct sg_sbx_env *env, const struct sg_tool *t, const char *id)
{
	char gen[24];
	int rc;

	if (t->warm <= 0)
		return -1;
	sg_pool_gen(t, gen);
	rc = sg_store_pool_take(env->store, id, t->name, gen);
	sg_mx_sbx(t->name, rc == SG_STORE_OK ? SG_MX_POOL_HIT : SG_MX_POOL_MISS,
	    0);
	if (rc == SG_STORE_OK)
		sg_use_session(t->name);
	return rc == SG_STORE_OK ? 0 : -1;
}

/* One warm sandbox of t made: 0, or -1 when the provider or the store
 * failed (nothing left behind but a row the sweep finds). */
static int
make_one(struct sg_sbx_env *env, const struct sg_tool *t,
    const struct sg_provider_ops *ops, const char *gen)
{
	int life = pool_life(env->cfg), rc;
	struct sg_prov_error pe;
	json_t *handle;
	char id[48], extra[96], *text;

	if (sg_rand_id(id, sizeof(id), "cntr_", 16) == -1 ||
	    sg_store_pool_begin(env->store, id, t->name, gen, getpid(),
	    sg_self_start(), (int64_t)time(NULL) + life) != SG_STORE_OK)
		return -1;
	if (sg_sbx_make(env, t, ops, id, SG_SBX_WARM, life, &handle, &pe, extra,
	    sizeof(extra)) != SG_PROV_OK)
		return -1;
	text = json_dumps(handle, JSON_COMPACT);
	/* A row gone meanwhile (a drain), or a store that failed: the
	 * sandbox goes, and its row if still there. */
	if (text == NULL || sg_store_pool_ready(env->store, id, text,
	    (int64_t)time(NULL) + life) != SG_STORE_OK) {
		rc = ops->destroy(env->prov, t, handle, &pe);
		if (rc == SG_PROV_OK || rc == SG_PROV_GONE)
			sg_store_sbx_remove(env->store, id);
	} else
		sg_sbx_log("sandbox_create", id, t->name, extra);
	free(text);
	json_decref(handle);
	return 0;
}

void
sg_pool_fill(struct sg_sbx_env *env)
{
	const struct sg_provider_ops *ops;
	const struct sg_tool *t;
	int64_t now = sg_now_ms();
	char gen[24];
	size_t i;
	int n;

	for (i = 0; i < env->cfg->ntools && i < TOOLS_MAX; i++) {
		t = &env->cfg->tools[i];
		if (t->warm <= 0 || now < retry[i].at ||
		    (ops = sg_provider_ops(t->provider)) == NULL)
			continue;
		sg_pool_gen(t, gen);
		if (sg_store_pool_count(env->store, t->name, gen, &n) !=
		    SG_STORE_OK)
			return;
		for (; n < t->warm; n++)
			if (make_one(env, t, ops, gen) == -1)
				break;
		if (n < t->warm) {
			retry[i].wait = retry[i].wait == 0 ? RETRY_MIN_MS :
			    retry[i].wait * 2 > RETRY_MAX_MS ? RETRY_MAX_MS :
			    retry[i].wait * 2;
			retry[i].at = sg_now_ms() + retry[i].wait;
		} else
			retry[i].wait = 0;
	}
}

/* The warm rows this process made, by id (read before any provider
 * call: no read is held across one). */
struct mine {
	const struct sg_sbx_env *env;
	char	 (*id)[48];
	size_t	 n, cap;
};

static int
collect(void *arg, const struct sg_store_sbx *row)
{
	struct mine *m = arg;
	char (*grown)[48];

	if (row->kind != SG_SBX_WARM || row->owner_pid != getpid() ||
	    !sg_sbx_ours(m->env, row))
		return 0;
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		if ((grown = realloc(m->id, m->cap * sizeof(*m->id))) == NULL)
			return -1;
		m->id = grown;
	}
	sg_copy(m->id[m->n++], sizeof(m->id[0]), row->id);
	return 0;
}

static void
destroy(struct sg_sbx_env *env, const struct sg_store_sbx *row,
    const char *why)
{
	char err[512];

	if (sg_sbx_destroy_row(env, row, err, sizeof(err)) == -1)
		sg_log("sandgate: pool: sandbox %s (%s): %s", row->id,
		    why, err);
}

/* Whether a warm row is one its tool still wants: the tool is there,
 * keeps warm ones, with the settings it was made with. */
static const struct sg_tool *
wanted(struct sg_sbx_env *env, const struct sg_store_sbx *row)
{
	const struct sg_tool *t = sg_cfg_tool(env->cfg, row->tool);
	char gen[24];

	if (t == NULL || t->warm <= 0)
		return NULL;
	sg_pool_gen(t, gen);
	return strcmp(gen, row->pool_gen) == 0 ? t : NULL;
}

/* A warm sandbox alive at its provider for pool_life more: 0, or -1 (it
 * failed the check: gone, or not answering). */
static int
check(struct sg_sbx_env *env, const struct sg_tool *t,
    const struct sg_store_sbx *row)
{
	const struct sg_provider_ops *ops = sg_provider_ops(t->provider);
	int life = pool_life(env->cfg), rc;
	struct sg_prov_error pe;
	json_t *handle = row->handle != NULL ? json_loads(row->handle, 0, NULL) :
	    NULL;

	if (ops == NULL || handle == NULL) {
		json_decref(handle);
		return -1;
	}
	rc = ops->keepalive(env->prov, t, handle, life, &pe);
	json_decref(handle);
	if (rc != SG_PROV_OK) {
		sg_log("sandgate: pool: sandbox %s failed its check "
		    "(%s): replaced", row->id, pe.message);
		return -1;
	}
	sg_store_pool_touch(env->store, row->id, (int64_t)time(NULL) + life);
	return 0;
}

void
sg_pool_tend(struct sg_sbx_env *env)
{
	struct mine m = { env, NULL, 0, 0 };
	struct sg_store_sbx row;
	const struct sg_tool *t;
	int kept[TOOLS_MAX] = { 0 };
	size_t i, k;

	if (sg_store_sbx_list(env->store, NULL, collect, &m) != SG_STORE_OK) {
		free(m.id);
		return;
	}
	for (i = 0; i < m.n; i++) {
		/* One claimed meanwhile is gone, or is by the time a
		 * destroy claims it: destroy_row leaves it then. */
		if (sg_store_sbx_get(env->store, m.id[i], NULL, &row) !=
		    SG_STORE_OK)
			continue;
		t = wanted(env, &row);
		k = t != NULL ? (size_t)(t - env->cfg->tools) : 0;
		if (t == NULL || k >= TOOLS_MAX)
			destroy(env, &row, "not wanted any more");
		/* warm lowered by a reload with the same settings */
		else if (kept[k] >= t->warm)
			destroy(env, &row, "more than the tool's warm");
		else if (strcmp(row.state, "warm") == 0 && check(env, t,
		    &row) == -1)
			destroy(env, &row, "failed its check");
		else
			kept[k]++;
		sg_store_sbx_clear(&row);
	}
	free(m.id);
}

/* One pass over this process's warm rows: how many are left. */
static size_t
drain_pass(struct sg_sbx_env *env, int last)
{
	struct mine m = { env, NULL, 0, 0 };
	struct sg_store_sbx row;
	char why[512];
	size_t i, left = 0;

	if (sg_store_sbx_list(env->store, NULL, collect, &m) != SG_STORE_OK) {
		free(m.id);
		return 0;
	}
	/* A warm one handed out meanwhile is its claimer's: destroy_row
	 * leaves it. */
	for (i = 0; i < m.n; i++)
		if (sg_store_sbx_get(env->store, m.id[i], NULL, &row) ==
		    SG_STORE_OK) {
			if (sg_sbx_destroy_row(env, &row, why, sizeof(why)) ==
			    -1) {
				left++;
				if (last)
					sg_log("sandgate: pool: sandbox "
					    "%s stays for the next sweep: %s",
					    row.id, why);
			}
			sg_store_sbx_clear(&row);
		}
	free(m.id);
	return left;
}

void
sg_pool_drain(struct sg_sbx_env *env)
{
	int pass;

	/* On a stop sandboxd may be on its way out too: its sandboxes are
	 * gone once it is (they die with it), which a later pass sees. What
	 * still fails stays tracked for the next start's sweep. */
	for (pass = 0; pass < DRAIN_PASSES; pass++) {
		if (drain_pass(env, pass == DRAIN_PASSES - 1) == 0)
			return;
		usleep(DRAIN_PAUSE_US);
	}
}
