#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"
#include "../lib/util.h"

static int
not_found(struct sg_error *err, const char *id)
{
	return sg_error_set(err, 404, "invalid_request_error", NULL, "id",
	    "Container with id '%s' not found.", id);
}

static int
store_error(struct sg_sbx_env *env, struct sg_error *err)
{
	return sg_error_set(err, 503, "server_error", NULL, NULL,
	    "The store is unavailable: %s", sg_store_errmsg(env->store));
}

/* A provider failure as the error a client gets. Credentials are never
 * echoed: only the tool's name. */
static int
provider_error(const struct sg_tool *t, const struct sg_prov_error *pe,
    const char *id, struct sg_error *err)
{
	switch (pe->rc) {
	case SG_PROV_AUTH:
		sg_error_server(err, 502, "Sandbox tool %s: the provider "
		    "refused its credentials; check the tool's api_key.", t->name);
		err->no_retry = 1;
		return -1;
	case SG_PROV_RATE:
		return sg_error_set(err, 429, "requests", "rate_limit_exceeded",
		    NULL, "Sandbox tool %s is rate limited by its provider: %s",
		    t->name, pe->message);
	case SG_PROV_TIMEOUT:
		return sg_error_server(err, 504, "Sandbox tool %s: %s", t->name,
		    pe->message);
	case SG_PROV_GONE:
		return not_found(err, id);
	case SG_PROV_CAP:
		return sg_error_invalid(err, "code", "output_too_large", "%s",
		    pe->message);
	case SG_PROV_STOPPED:
		return sg_error_set(err, 499, "server_error", NULL, NULL,
		    "The client closed the connection.");
	case SG_PROV_CONFIG:
		return sg_error_server(err, 500, "%s", pe->message);
	default:
		return sg_error_server(err, 502, "Sandbox tool %s: %s", t->name,
		    pe->message);
	}
}

static const struct sg_tool *
tool_of(struct sg_sbx_env *env, const char *name, const struct sg_provider_ops
    **ops, struct sg_error *err)
{
	const struct sg_tool *t = sg_cfg_tool(env->cfg, name);

	if (t == NULL) {
		sg_error_invalid(err, "tool", "invalid_value", "No sandbox tool "
		    "named '%s' is configured.", name);
		return NULL;
	}
	if ((*ops = sg_provider_ops(t->provider)) == NULL) {
		sg_error_server(err, 500, "Sandbox tool %s uses the %s provider, "
		    "which this build of sandgate does not have yet.", t->name,
		    sg_provider_name(t->provider));
		return NULL;
	}
	return t;
}

static int
lifetime(const struct sg_cfg *cfg, int ephemeral)
{
	return (ephemeral ? cfg->server.request_timeout : cfg->sessions.ttl) + 60;
}

int
sg_sbx_create(struct sg_sbx_env *env, const char *tenant, const char *tool,
    int ephemeral, struct sg_store_sbx *out, struct sg_error *err)
{
	const struct sg_provider_ops *ops;
	const struct sg_tool *t;
	struct sg_prov_error pe;
	json_t *handle = NULL;
	char id[48], *text;
	int life = lifetime(env->cfg, ephemeral), rc;
	int64_t expires = (int64_t)time(NULL) + life;

	memset(out, 0, sizeof(*out));
	if ((t = tool_of(env, tool != NULL ? tool :
	    env->cfg->interception.sandbox_tool, &ops, err)) == NULL)
		return -1;
	if (sg_rand_id(id, sizeof(id), "cntr_", 16) == -1)
		return sg_error_server(err, 500, "no randomness for an id");
	/* Record before create: a responder that dies below leaves a row
	 * (state creating, its pid and start time) to clean up after it. */
	if (sg_store_sbx_begin(env->store, id, tenant, t->name, getpid(),
	    sg_proc_start(getpid()), expires) != SG_STORE_OK)
		return store_error(env, err);
	rc = ops->create(env->prov, t, id, life, &handle, &pe);
	if (rc != SG_PROV_OK) {
		/* An answer from the provider means nothing was created; a
		 * timeout might have, so that row stays for the reaper. */
		if (rc != SG_PROV_TIMEOUT && rc != SG_PROV_STOPPED)
			sg_store_sbx_remove(env->store, id);
		return provider_error(t, &pe, id, err);
	}
	text = json_dumps(handle, JSON_COMPACT);
	json_decref(handle);
	if (text == NULL || sg_store_sbx_ready(env->store, id, text,
	    expires) != SG_STORE_OK) {
		free(text);
		return store_error(env, err);
	}
	free(text);
	if (sg_store_sbx_get(env->store, id, NULL, out) != SG_STORE_OK)
		return store_error(env, err);
	return 0;
}

/* The tenant's ready sandbox id, its tool and its parsed handle. */
static int
open_sandbox(struct sg_sbx_env *env, const char *tenant, const char *id,
    struct sg_store_sbx *row, const struct sg_tool **t,
    const struct sg_provider_ops **ops, json_t **handle, struct sg_error *err)
{
	int rc = sg_store_sbx_get(env->store, id, tenant, row);

	if (rc == SG_STORE_NOTFOUND)
		return not_found(err, id);
	if (rc != SG_STORE_OK)
		return store_error(env, err);
	if (strcmp(row->state, "ready") != 0 || row->handle == NULL) {
		sg_store_sbx_clear(row);
		return sg_error_set(err, 409, "invalid_request_error", NULL,
		    "id", "Container with id '%s' is not ready (%s).", id,
		    row->state);
	}
	if ((*t = tool_of(env, row->tool, ops, err)) == NULL ||
	    (*handle = json_loads(row->handle, 0, NULL)) == NULL) {
		sg_store_sbx_clear(row);
		return *t == NULL ? -1 : sg_error_server(err, 500, "Container "
		    "%s has a damaged handle in the store.", id);
	}
	return 0;
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

	fprintf(stderr, "sandgate: sandbox %s stopped answering (%s); delete: "
	    "%s\n", id, why->message, rc == SG_PROV_OK || rc == SG_PROV_GONE ?
	    "done" : pe.message);
	if (rc != SG_PROV_OK && rc != SG_PROV_GONE) {
		sg_error_server(err, 502, "Sandbox tool %s: container %s stopped "
		    "answering and could not be deleted yet; it is kept, so "
		    "DELETE it or let it expire.", t->name, id);
		return -1;
	}
	sg_store_sbx_remove(env->store, id);
	return sg_error_set(err, 404, "invalid_request_error", NULL, "id",
	    "Container with id '%s' stopped answering and was deleted; create "
	    "a new one.", id);
}

int
sg_sbx_run(struct sg_sbx_env *env, const char *tenant, const char *id,
    const char *code, int timeout_s, int keep, json_t **result,
    struct sg_error *err)
{
	const struct sg_provider_ops *ops;
	const struct sg_tool *t;
	struct sg_store_sbx row;
	struct sg_prov_error pe;
	struct sg_exec res;
	json_t *handle;
	int64_t left;
	int rc, life;

	*result = NULL;
	if (open_sandbox(env, tenant, id, &row, &t, &ops, &handle, err) == -1)
		return -1;
	if (timeout_s <= 0)
		timeout_s = env->cfg->interception.exec_timeout;
	/*
	 * The provider must never end a sandbox during a run, and a kept
	 * sandbox's life slides with use (at most one keepalive a minute);
	 * an ephemeral one only has to outlast this run.
	 */
	left = row.expires_at - (int64_t)time(NULL);
	life = keep ? lifetime(env->cfg, 0) : 0;
	if (life < timeout_s + 60)
		life = timeout_s + 60;
	rc = SG_PROV_OK;
	if (keep ? left < life - 60 : left <= life)
		rc = ops->keepalive(env->prov, t, handle, life, &pe);
	else
		life = (int)left;
	sg_exec_init(&res, env->prov->output_cap);
	if (rc == SG_PROV_OK)
		rc = ops->run(env->prov, t, handle, code, timeout_s, &res, &pe);
	if (rc == SG_PROV_OK)
		sg_store_sbx_touch(env->store, id, (int64_t)time(NULL) + life);
	if (rc == SG_PROV_OK && (*result = sg_exec_json(&res)) == NULL)
		rc = sg_prov_fail(&pe, SG_PROV_FAILED, 0, "out of memory");
	sg_exec_free(&res);
	if (rc == SG_PROV_GONE)
		rc = unreachable(env, t, ops, handle, id, &pe, err);
	else if (rc != SG_PROV_OK)
		provider_error(t, &pe, id, err);
	json_decref(handle);
	sg_store_sbx_clear(&row);
	return rc == SG_PROV_OK ? 0 : -1;
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

	if (open_sandbox(env, tenant, id, &row, &t, &ops, &handle, err) == -1)
		return -1;
	sg_store_sbx_mark(env->store, id, "deleting");
	rc = ops->destroy(env->prov, t, handle, &pe);
	json_decref(handle);
	sg_store_sbx_clear(&row);
	/* Gone already counts as deleted; anything else keeps the row. */
	if (rc != SG_PROV_OK && rc != SG_PROV_GONE) {
		sg_store_sbx_mark(env->store, id, "ready");
		return provider_error(t, &pe, id, err);
	}
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

struct sweep {
	char	(*ids)[48];
	size_t	 n, cap;
	int64_t	 before;
};

static int
expired(void *arg, const struct sg_store_sbx *row)
{
	struct sweep *w = arg;
	char (*grown)[48];

	if (row->expires_at >= w->before)
		return 0;
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 16;
		if ((grown = realloc(w->ids, w->cap * sizeof(*w->ids))) == NULL)
			return -1;
		w->ids = grown;
	}
	snprintf(w->ids[w->n++], sizeof(w->ids[0]), "%s", row->id);
	return 0;
}

int
sg_sbx_reap(struct sg_sbx_env *env, int *deleted, int *failed)
{
	struct sweep w = { .before = (int64_t)time(NULL) - 60 };
	const struct sg_provider_ops *ops;
	const struct sg_tool *t;
	struct sg_store_sbx row;
	struct sg_prov_error pe;
	struct sg_error err;
	json_t *handle;
	size_t i;
	int rc;

	*deleted = *failed = 0;
	/* Collect first: no read transaction is held across a provider call. */
	if (sg_store_sbx_list(env->store, NULL, expired, &w) != SG_STORE_OK) {
		free(w.ids);
		return -1;
	}
	for (i = 0; i < w.n; i++) {
		if (sg_store_sbx_get(env->store, w.ids[i], NULL, &row) != 0)
			continue;
		rc = SG_PROV_OK;
		handle = row.handle != NULL ? json_loads(row.handle, 0, NULL) :
		    NULL;
		if (handle != NULL && (t = tool_of(env, row.tool, &ops, &err)) !=
		    NULL)
			rc = ops->destroy(env->prov, t, handle, &pe);
		if (rc == SG_PROV_OK || rc == SG_PROV_GONE) {
			sg_store_sbx_remove(env->store, w.ids[i]);
			(*deleted)++;
		} else {
			fprintf(stderr, "sandgate: reaper: sandbox %s: %s\n",
			    w.ids[i], pe.message);
			(*failed)++;
		}
		json_decref(handle);
		sg_store_sbx_clear(&row);
	}
	free(w.ids);
	return 0;
}
