/*
 * The direct sandbox API: POST/GET /v1/sandboxes, GET/DELETE
 * /v1/sandboxes/{id}, POST /v1/sandboxes/{id}/code and the one-shot
 * POST /v1/code. Sandboxes belong to the caller's key; another key's
 * answer 404, never 403, so ids leak nothing. Every route refuses a
 * tool the key may not use first (sg_sbx_may_use).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox_api.h"
#include "../http/router.h"

/* Optional string member: 0 and *out (borrowed, NULL when absent). */
static int
opt_string(const json_t *b, const char *key, const char **out,
    struct sg_error *err)
{
	const json_t *v = json_object_get(b, key);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return sg_error_invalid(err, key, "invalid_type", "Invalid type "
		    "for '%s': expected a string.", key);
	*out = json_string_value(v);
	return 0;
}

/*
 * code (required) and timeout (optional seconds, at most the request's).
 * Both routes that run code read it here: a NUL would cut the program
 * short where it is handed on as a C string, so what ran would not be
 * what was sent (the loop refuses it too, in sg_rw_code_arg).
 */
static int
code_args(const struct sg_cfg *cfg, const json_t *b, const char **code,
    int *timeout, struct sg_error *err)
{
	const json_t *t = json_object_get(b, "timeout");
	double secs;

	if (opt_string(b, "code", code, err) == -1)
		return -1;
	if (*code == NULL)
		return sg_error_invalid(err, "code", "missing_required_parameter",
		    "Missing required parameter: 'code'.");
	if (strlen(*code) != json_string_length(json_object_get(b, "code")))
		return sg_error_invalid(err, "code", "invalid_value", "Invalid "
		    "'code': it contains a NUL character (\\u0000).");
	*timeout = 0;
	if (t == NULL || json_is_null(t))
		return 0;
	secs = json_number_value(t);
	if (!json_is_number(t) || !isfinite(secs) || secs <= 0)
		return sg_error_invalid(err, "timeout", "invalid_value", "Invalid "
		    "'timeout': expected a positive number of seconds.");
	*timeout = secs > cfg->server.request_timeout ?
	    cfg->server.request_timeout : (int)ceil(secs);
	return 0;
}

/* The caller's sandbox id in *row (sg_store_sbx_clear it), when its key
 * may use the sandbox's tool. 0, or -1 with err (404 for another key's
 * sandbox, as everywhere). */
static int
reach(struct sg_sbx_env *env, const struct sg_req *req, const char *id,
    struct sg_store_sbx *row, struct sg_error *err)
{
	int rc = sg_store_sbx_get(env->store, id, req->tenant, row);

	if (rc == SG_STORE_NOTFOUND)
		return sg_error_set(err, 404, "invalid_request_error", NULL, "id",
		    "Container with id '%s' not found.", id);
	if (rc != SG_STORE_OK)
		return sg_error_store(err, sg_store_errmsg(env->store));
	if (sg_sbx_may_use(env, row->tool, "tool", err) == -1) {
		sg_store_sbx_clear(row);
		return -1;
	}
	return 0;
}

/* reach(), for routes that only need the answer. */
static int
may_reach(struct sg_sbx_env *env, const struct sg_req *req, const char *id,
    struct sg_error *err)
{
	struct sg_store_sbx row;

	if (reach(env, req, id, &row, err) == -1)
		return -1;
	sg_store_sbx_clear(&row);
	return 0;
}

struct listing {
	const struct sg_cfg	*cfg;
	const struct sg_req	*req;
	json_t			*data;
};

/* Sandboxes of tools the key may no longer use are not listed. */
static int
list_one(void *arg, const struct sg_store_sbx *row)
{
	struct listing *l = arg;

	if (sg_cfg_key_may_use(l->req->key, row->tool))
		json_array_append_new(l->data, sg_sbx_json(l->cfg, row));
	return 0;
}

/* New reference: the tenant's sandboxes as an OpenAI list. */
static json_t *
list(struct sg_sbx_env *env, const struct sg_req *req, struct sg_error *err)
{
	struct listing l = { env->cfg, req, json_array() };
	json_t *first, *last;
	size_t n;

	if (sg_store_sbx_list(env->store, req->tenant, list_one, &l) !=
	    SG_STORE_OK) {
		json_decref(l.data);
		sg_error_store(err, sg_store_errmsg(env->store));
		return NULL;
	}
	n = json_array_size(l.data);
	first = json_object_get(json_array_get(l.data, 0), "id");
	last = json_object_get(json_array_get(l.data, n > 0 ? n - 1 : 0), "id");
	return json_pack("{s:s,s:o,s:O,s:O,s:b}", "object", "list", "data",
	    l.data, "first_id", first ? first : json_null(), "last_id",
	    last ? last : json_null(), "has_more", 0);
}

static json_t *
get(struct sg_sbx_env *env, const struct sg_req *req, const char *id,
    struct sg_error *err)
{
	struct sg_store_sbx row;
	json_t *j;

	if (reach(env, req, id, &row, err) == -1)
		return NULL;
	j = sg_sbx_json(env->cfg, &row);
	sg_store_sbx_clear(&row);
	return j;
}

static json_t *
create(struct sg_sbx_env *env, const struct sg_req *req, const json_t *b,
    struct sg_error *err)
{
	struct sg_store_sbx row;
	const char *tool;
	json_t *j;

	if (opt_string(b, "tool", &tool, err) == -1 ||
	    sg_sbx_create(env, req->tenant, tool, SG_SBX_EXPLICIT, &row,
	    err) == -1)
		return NULL;
	j = sg_sbx_json(env->cfg, &row);
	sg_store_sbx_clear(&row);
	return j;
}

static json_t *
run(struct sg_sbx_env *env, const struct sg_req *req, const char *id,
    const json_t *b, struct sg_error *err)
{
	const char *code;
	json_t *result;
	int timeout;

	if (code_args(env->cfg, b, &code, &timeout, err) == -1 ||
	    may_reach(env, req, id, err) == -1 ||
	    sg_sbx_run(env, req->tenant, id, code, timeout, 1, &result, err) < 0)
		return NULL;
	return result;
}

/* One-shot: create, run, and delete whatever happened to the run. */
static json_t *
oneshot(struct sg_sbx_env *env, const struct sg_req *req, const json_t *b,
    struct sg_error *err)
{
	struct sg_store_sbx row;
	const char *code, *tool;
	json_t *result = NULL;
	int timeout;

	if (code_args(env->cfg, b, &code, &timeout, err) == -1 ||
	    opt_string(b, "tool", &tool, err) == -1 ||
	    sg_sbx_create(env, req->tenant, tool, SG_SBX_EPHEMERAL, &row,
	    err) == -1)
		return NULL;
	sg_sbx_run(env, req->tenant, row.id, code, timeout, 0, &result, err);
	/* Deleted once the answer is out: the client does not wait for it.
	 * A delete that fails leaves the row for the reaper. */
	sg_sbx_delete_after(env, req->after, req->tenant, row.id);
	sg_store_sbx_clear(&row);
	return result;
}

void
sg_sbx_api(struct sg_sbx_env *env, int route, const char *id,
    const struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;
	json_t *b = NULL, *answer = NULL;
	int status = 200;

	if ((route == SG_ROUTE_SBX_CREATE || route == SG_ROUTE_SBX_RUN ||
	    route == SG_ROUTE_CODE) && (b = sg_http_body_object(req, &err)) == NULL) {
		sg_http_error(out, req, &err);
		return;
	}
	switch (route) {
	case SG_ROUTE_SBX_CREATE:
		answer = create(env, req, b, &err);
		status = 201;
		break;
	case SG_ROUTE_SBX_LIST:
		answer = list(env, req, &err);
		break;
	case SG_ROUTE_SBX_GET:
		answer = get(env, req, id, &err);
		break;
	case SG_ROUTE_SBX_DELETE:
		if (may_reach(env, req, id, &err) == 0 &&
		    sg_sbx_delete(env, req->tenant, id, &err) == 0)
			answer = json_pack("{s:s,s:s,s:b}", "id", id, "object",
			    "sandbox.deleted", "deleted", 1);
		break;
	case SG_ROUTE_SBX_RUN:
		answer = run(env, req, id, b, &err);
		break;
	case SG_ROUTE_CODE:
		answer = oneshot(env, req, b, &err);
		break;
	default:
		sg_error_server(&err, 500, "unrouted sandbox request");
	}
	if (answer != NULL)
		sg_http_json(out, req, status, answer);
	else
		sg_http_error(out, req, &err);
	json_decref(answer);
	json_decref(b);
}
