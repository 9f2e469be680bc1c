/*
 * A sandbox at its provider: the tool a row names and whether the key may
 * use it, the provider's create and delete with their log lines and
 * counts, and a provider's failure as the error a client gets. Below the
 * rest of sg_sbx (sandbox.c): the pool makes its warm sandboxes here, the
 * reaper and the CLI delete rows here.
 */
#include <stdio.h>
#include <string.h>

#include "ledger.h"
#include "metrics.h"
#include "sandbox.h"
#include "../../lib/util.h"

const char *
sg_sbx_kind_name(int kind)
{
	static const char *const kinds[] = { "ephemeral", "session",
	    "conversation", "explicit", "warm" };

	return kind >= SG_SBX_EPHEMERAL && kind <= SG_SBX_WARM ?
	    kinds[kind] : NULL;
}

/*
 * One logfmt line per sandbox made or deleted (ids, tool names and kinds
 * carry no spaces: the config's names are checked, the rest are ours).
 */
void
sg_sbx_log(const char *event, const char *id, const char *tool,
    const char *extra)
{
	fprintf(stderr, "event=%s id=%s tool=%s%s%s\n", event, id, tool,
	    extra[0] != '\0' ? " " : "", extra);
}

/* A provider failure as the error a client gets. Credentials are never
 * echoed: only the tool's name. */
int
sg_sbx_prov_error(const struct sg_tool *t, const struct sg_prov_error *pe,
    const char *id, struct sg_error *err)
{
	switch (pe->rc) {
	case SG_PROV_AUTH:
		return sg_error_final(err, 502, "Sandbox tool %s: the provider "
		    "refused its credentials; check the tool's api_key.", t->name);
	case SG_PROV_RATE:
		return sg_error_set(err, 429, "requests", "rate_limit_exceeded",
		    NULL, "Sandbox tool %s is rate limited by its provider: %s",
		    t->name, pe->message);
	case SG_PROV_TIMEOUT:
		/* A run that started is a result (TimeoutError): this one
		 * never answered, and asking again would wait as long again. */
		return sg_error_final(err, 504, "Sandbox tool %s: %s", t->name,
		    pe->message);
	case SG_PROV_GONE:
		return sg_error_set(err, 404, "invalid_request_error", NULL,
		    "id", "Container with id '%s' not found.", id);
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

const struct sg_tool *
sg_sbx_tool(struct sg_sbx_env *env, const char *name,
    const struct sg_provider_ops **ops, struct sg_error *err)
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

int
sg_sbx_make(struct sg_sbx_env *env, const struct sg_tool *t,
    const struct sg_provider_ops *ops, const char *id, int kind, int life,
    json_t **handle, struct sg_prov_error *pe, char *extra, size_t sz)
{
	const char *k = sg_sbx_kind_name(kind);
	int64_t t0 = sg_now_ms();
	int rc;

	*handle = NULL;
	rc = ops->create(env->prov, t, id, life, handle, pe);
	snprintf(extra, sz, "kind=%s ms=%lld%s%s", k != NULL ? k : "other",
	    (long long)(sg_now_ms() - t0), rc != SG_PROV_OK ? " reason=" : "",
	    rc != SG_PROV_OK ? sg_prov_rc_name(rc) : "");
	if (rc == SG_PROV_OK) {
		sg_mx_sbx(t->name, SG_MX_CREATED, sg_now_ms() - t0);
		sg_use_session(t->name);
		return rc;
	}
	sg_sbx_log("sandbox_create_failed", id, t->name, extra);
	sg_mx_sbx(t->name, SG_MX_CREATE_FAILED, 0);
	/* An answer from the provider means nothing was created; a timeout
	 * might have, so that row stays for the reaper. */
	if (rc != SG_PROV_TIMEOUT && rc != SG_PROV_STOPPED)
		sg_store_sbx_remove(env->store, id);
	else
		sg_store_sbx_abandon(env->store, id);
	return rc;
}

static int
remove_row(struct sg_sbx_env *env, const struct sg_store_sbx *row, char *why,
    size_t whysz)
{
	if (sg_store_sbx_remove(env->store, row->id) == SG_STORE_OK)
		return 0;
	snprintf(why, whysz, "%s", sg_store_errmsg(env->store));
	return -1;
}

/*
 * A row left "creating" by a creator that died: the provider may have
 * made the sandbox all the same. Found by the label create gave it: OK
 * with *handle; GONE when the provider has none (or cannot be asked: a
 * local sandbox dies with the request making it); else an error in why.
 */
static int
find_orphan(struct sg_sbx_env *env, const struct sg_store_sbx *row,
    json_t **handle, char *why, size_t whysz)
{
	const struct sg_provider_ops *ops;
	const struct sg_tool *t;
	struct sg_prov_error pe;
	struct sg_error err;
	int rc;

	if ((t = sg_sbx_tool(env, row->tool, &ops, &err)) == NULL) {
		snprintf(why, whysz, "%s", err.message);
		return SG_PROV_FAILED;
	}
	if (ops->find == NULL)
		return SG_PROV_GONE;
	rc = ops->find(env->prov, t, row->id, handle, &pe);
	if (rc != SG_PROV_OK && rc != SG_PROV_GONE)
		snprintf(why, whysz, "%s", pe.message);
	return rc;
}

int
sg_sbx_destroy_row(struct sg_sbx_env *env, const struct sg_store_sbx *row,
    char *why, size_t whysz)
{
	const struct sg_provider_ops *ops;
	const struct sg_tool *t = NULL;
	struct sg_prov_error pe;
	struct sg_error err;
	json_t *handle;
	int rc = SG_PROV_OK, claim;

	/* Claimed (a warm one handed out, a run begun) or gone since it was
	 * read: not this reading's to delete. */
	if ((claim = sg_store_sbx_claim_delete(env->store, row)) ==
	    SG_STORE_NOTFOUND)
		return 1;
	if (claim != SG_STORE_OK) {
		snprintf(why, whysz, "%s", sg_store_errmsg(env->store));
		return -1;
	}
	handle = row->handle != NULL ? json_loads(row->handle, 0, NULL) : NULL;
	if (handle == NULL && strcmp(row->state, "creating") == 0 &&
	    (rc = find_orphan(env, row, &handle, why, whysz)) != SG_PROV_OK)
		return rc == SG_PROV_GONE ? remove_row(env, row, why, whysz) : -1;
	if (handle != NULL && (t = sg_sbx_tool(env, row->tool, &ops,
	    &err)) != NULL)
		rc = ops->destroy(env->prov, t, handle, &pe);
	else if (handle != NULL) {
		snprintf(why, whysz, "%s", err.message);
		rc = SG_PROV_FAILED;
	}
	json_decref(handle);
	if (rc != SG_PROV_OK && rc != SG_PROV_GONE) {
		if (handle != NULL && t != NULL)
			snprintf(why, whysz, "%s", pe.message);
		sg_mx_sbx(row->tool, SG_MX_DELETE_FAILED, 0);
		return -1;
	}
	if (handle != NULL) {
		sg_sbx_log("sandbox_delete", row->id, row->tool, "by=sweep");
		sg_mx_sbx(row->tool, SG_MX_SWEPT, 0);
	}
	return remove_row(env, row, why, whysz);
}
int
sg_sbx_may_use(const struct sg_sbx_env *env, const char *tool,
    const char *param, struct sg_error *err)
{
	if (tool == NULL)
		tool = env->cfg->interception.sandbox_tool;
	if (tool == NULL || sg_cfg_key_may_use(env->key, tool))
		return 0;
	return sg_error_set(err, 403, "invalid_request_error", "tool_not_allowed",
	    param, "This API key may not use the sandbox tool '%s'.", tool);
}
