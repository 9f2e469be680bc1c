/*
 * The reaper's sweep: what nobody deleted, what a dead responder left,
 * what sat idle past its time (design §5, "No leaks").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "sandbox.h"
#include "../../lib/log.h"
#include "../../store/conversations.h"

#define LEASE_SECS	120		/* longer than a sweep takes */
#define LOST_KEPT	86400		/* sessions without a sandbox: a day */
#define RESP_PRUNE_BATCH 500
#define RESP_PRUNE_ROUNDS 20
#define CREATE_SETTLE	90		/* s: longer than a provider's create */

struct sweep {
	struct sg_sbx_env *env;
	const struct sg_cfg *cfg;
	const char	*only_tool;
	int64_t		 now;
	char		(*ids)[48];
	size_t		 n, cap;
};

/* Whether this box may delete row: another box's local sandbox lives
 * (and is deleted) there; another box's tool is its own to sweep on
 * reload. */
static int
reachable(const struct sweep *w, const struct sg_store_sbx *row)
{
	const struct sg_tool *t = sg_cfg_tool(w->cfg, row->tool);

	if (sg_sbx_ours(w->env, row))
		return 1;
	return w->only_tool == NULL && t != NULL &&
	    t->provider != SG_PROVIDER_LOCAL;
}

/* A row this box cannot delete at its provider, whose life passed long
 * ago: its box sweeps no more (gone, and its local sandboxes with it).
 * The row is forgotten; no provider is asked. */
static int
forgotten(const struct sweep *w, const struct sg_store_sbx *row)
{
	return w->only_tool == NULL && !reachable(w, row) &&
	    row->expires_at < w->now - SG_BOX_GONE_AFTER;
}

/* A local sandbox of this box whose sandboxd died (the gateway stopped
 * or restarted, or sandboxd crashed) went with it, though its row still
 * says it lives: told from its files, no provider call. */
static int
lost_local(const struct sweep *w, const struct sg_store_sbx *row)
{
	const struct sg_tool *t = sg_cfg_tool(w->cfg, row->tool);
	json_t *handle;
	int gone;

	if (t == NULL || t->provider != SG_PROVIDER_LOCAL ||
	    row->handle == NULL || !sg_sbx_ours(w->env, row) ||
	    (handle = json_loads(row->handle, 0, NULL)) == NULL)
		return 0;
	gone = sg_local_gone(handle);
	json_decref(handle);
	return gone;
}

/* Whether row is to go now. */
static int
due(const struct sweep *w, const struct sg_store_sbx *row)
{
	struct sg_sbx_env *env = w->env;

	if (!reachable(w, row))
		return 0;
	if (w->only_tool != NULL)
		return strcmp(row->tool, w->only_tool) == 0;
	/* Its life at the provider passed (a minute's grace): whatever it
	 * was, there is nothing left to keep. */
	if (row->expires_at < w->now - 60)
		return 1;
	/* Anything still being created is its creator's, until its life
	 * passes: the provider may be making it. A creator that died never
	 * learnt its handle: once any create would have ended, the provider
	 * is asked for it by its label (sg_sbx_destroy_row). */
	if (strcmp(row->state, "creating") == 0)
		return row->created_at < w->now - CREATE_SETTLE &&
		    sg_sbx_owner_dead(env, row);
	/* Running code holds it, whatever its kind. */
	if (sg_sbx_running(env, row))
		return 0;
	/* An eviction whose delete failed, tried again; a local one that
	 * is no more. */
	if (strcmp(row->state, "deleting") == 0 || lost_local(w, row))
		return 1;
	/* A warm one is its reaper's to keep, check and drain, until that
	 * reaper died without draining (killed). */
	if (row->kind == SG_SBX_WARM)
		return sg_sbx_owner_dead(env, row);
	if (row->kind != SG_SBX_EPHEMERAL)
		return row->last_used_at + w->cfg->sessions.ttl < w->now;
	/* A request's own: its request ended without deleting it (the
	 * responder died, or its delete failed). */
	return sg_sbx_owner_dead(env, row);
}

static int
collect(void *arg, const struct sg_store_sbx *row)
{
	struct sweep *w = arg;
	char (*grown)[48];

	if (!due(w, row) && !forgotten(w, row))
		return 0;
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 16;
		if ((grown = realloc(w->ids, w->cap * sizeof(*w->ids))) == NULL)
			return -1;
		w->ids = grown;
	}
	sg_copy(w->ids[w->n++], sizeof(w->ids[0]), row->id);
	return 0;
}

/* Stored responses past responses.retention, a bounded batch per sweep:
 * the reaper's round stays short however many expired at once. */
static void
prune_responses(struct sg_sbx_env *env)
{
	int64_t before = (int64_t)time(NULL) - env->cfg->responses.retention;
	int removed, rounds;

	for (rounds = 0; rounds < RESP_PRUNE_ROUNDS; rounds++)
		if (sg_store_resp_prune(env->store, before, RESP_PRUNE_BATCH,
		    &removed) != SG_STORE_OK || removed < RESP_PRUNE_BATCH)
			break;
	/* Conversations (and their items) as long, from their last use. */
	for (rounds = 0; rounds < RESP_PRUNE_ROUNDS; rounds++)
		if (sg_store_conv_prune(env->store, before, RESP_PRUNE_BATCH,
		    &removed) != SG_STORE_OK || removed < RESP_PRUNE_BATCH)
			break;
}

/* Files past their retention, and uploads whose writer died. */
static void
prune_files(struct sg_sbx_env *env)
{
	struct sg_files_env fenv = { env->cfg, env->store };

	sg_files_prune(&fenv);
}

int
sg_sbx_reap(struct sg_sbx_env *env, const char *only_tool, int *deleted,
    int *failed, int *skipped)
{
	struct sweep w = { env, env->cfg, only_tool, (int64_t)time(NULL), NULL,
	    0, 0 };
	struct sg_store_sbx row;
	char holder[96], why[512];
	size_t i;
	int rc, pruned = 0;

	*deleted = *failed = *skipped = 0;
	snprintf(holder, sizeof(holder), "%s:%d", sg_store_box(env->store),
	    (int)getpid());
	/* A tool's own sweep (on reload) deletes only what nobody else may
	 * use any more: it needs no lease. */
	rc = only_tool != NULL ? SG_STORE_OK : sg_store_lease(env->store,
	    "reaper", holder, LEASE_SECS);
	if (rc == SG_STORE_EXISTS) {
		*skipped = 1;
		return 0;
	}
	if (rc != SG_STORE_OK)
		return -1;
	/* Collect first: no read transaction is held across a provider call. */
	if (sg_store_sbx_list(env->store, NULL, collect, &w) != SG_STORE_OK) {
		free(w.ids);
		sg_store_lease_release(env->store, "reaper", holder);
		return -1;
	}
	for (i = 0; i < w.n; i++) {
		/* Read again: it may have been used, or deleted, meanwhile
		 * (and until its delete claims it: sg_sbx_destroy_row). */
		if (sg_store_sbx_get(env->store, w.ids[i], NULL, &row) != 0)
			continue;
		w.now = (int64_t)time(NULL);
		if (forgotten(&w, &row)) {
			snprintf(why, sizeof(why), "box=%s", row.box);
			if (sg_store_sbx_remove(env->store, row.id) == SG_STORE_OK)
				sg_sbx_log("sandbox_forget", row.id, row.tool,
				    why);
		} else if (!due(&w, &row))
			;
		else if ((rc = sg_sbx_destroy_row(env, &row, why,
		    sizeof(why))) == 0)
			(*deleted)++;
		else if (rc == -1) {
			sg_log("sandgate: reaper: sandbox %s: %s",
			    w.ids[i], why);
			(*failed)++;
		}
		sg_store_sbx_clear(&row);
	}
	free(w.ids);
	if (only_tool == NULL) {
		sg_store_sess_prune(env->store, w.now - LOST_KEPT, &pruned);
		prune_responses(env);
		prune_files(env);
		sg_store_lease_release(env->store, "reaper", holder);
	}
	return 0;
}
