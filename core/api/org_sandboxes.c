/*
 * GET /v1/organization/sandboxes and DELETE .../{id}, for admin keys:
 * every live sandbox of every key (and the warm pool's), newest first,
 * with whose it is (the key's public id and name, never its hash), why it
 * lives (kind, its session or container name), since when and idle for
 * how long; and ending one at its provider, whoever owns it. A tenant's
 * own routes (/v1/sandboxes, /v1/containers) stay the tenant's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "org.h"
#include "../state/ledger.h"
#include "../state/sandbox.h"
#include "../../store/store.h"

struct filter {
	char	 key_id[64], tool[64], kind[32];
};

struct listing {
	const struct sg_org_env	*env;
	const struct filter	*f;
	struct sg_keys_ent	*keys;		/* names of the active keys */
	size_t			 nkeys;
	json_t			*sessions;	/* {sandbox id: session id} */
	json_t			*data;		/* oldest first */
};

static const char *
key_name(const struct listing *l, const char *tenant)
{
	size_t i;

	for (i = 0; i < l->nkeys; i++)
		if (strcmp(l->keys[i].tenant, tenant) == 0)
			return l->keys[i].name;
	return strcmp(tenant, "anonymous") == 0 ? "anonymous" : NULL;
}

static json_t *
text_or_null(const char *s)
{
	return s != NULL && s[0] != '\0' ? json_string(s) : json_null();
}

static int
one(void *arg, const struct sg_store_sbx *row)
{
	struct listing *l = arg;
	const char *kind = sg_sbx_kind_name(row->kind);
	int64_t now = l->env->now_ms / 1000;
	char key_id[32] = "";
	json_t *o;

	if (row->tenant[0] != '\0')
		sg_use_key_id(row->tenant, key_id);
	if (kind == NULL)
		kind = "other";
	if ((l->f->key_id[0] != '\0' && strcmp(l->f->key_id, key_id) != 0) ||
	    (l->f->tool[0] != '\0' && strcmp(l->f->tool, row->tool) != 0) ||
	    (l->f->kind[0] != '\0' && strcmp(l->f->kind, kind) != 0))
		return 0;
	if ((o = sg_sbx_json(l->env->cfg, row)) == NULL)
		return -1;
	json_object_set_new(o, "object", json_string("organization.sandbox"));
	json_object_set_new(o, "kind", json_string(kind));
	json_object_set_new(o, "api_key_id", text_or_null(key_id));
	json_object_set_new(o, "key_name", text_or_null(row->tenant[0] != '\0' ?
	    key_name(l, row->tenant) : NULL));
	json_object_set(o, "session_id", json_object_get(l->sessions,
	    row->id) != NULL ? json_object_get(l->sessions, row->id) :
	    json_null());
	json_object_set_new(o, "name", text_or_null(row->name));
	json_object_set_new(o, "idle_seconds", json_integer(row->last_used_at >
	    0 && now > row->last_used_at ? now - row->last_used_at : 0));
	json_object_set_new(o, "running_code", json_boolean(row->runner_pid !=
	    0 && row->runner_until >= now));
	json_object_set_new(o, "box", text_or_null(row->box));
	return json_array_append_new(l->data, o) == 0 ? 0 : -1;
}

static int
session_of(void *arg, const struct sg_store_sess *s)
{
	if (s->sandbox_id[0] != '\0')
		json_object_set_new(arg, s->sandbox_id,
		    json_string(s->session_id));
	return 0;
}

/* A query parameter into out: -1 with err when it is malformed. */
static int
arg(const struct sg_req *req, const char *name, char *out, size_t sz,
    struct sg_error *err)
{
	out[0] = '\0';
	if (sg_http_query(req->uri, name, out, sz) == -1)
		return sg_error_invalid(err, name, "invalid_value", "Invalid "
		    "'%s': too long or badly encoded.", name);
	return 0;
}

static json_t *
list(const struct sg_org_env *env, const struct sg_req *req,
    struct sg_error *err)
{
	struct filter f;
	struct listing l = { env, &f, NULL, 0, json_object(), json_array() };
	json_t *body = NULL, *rev;
	size_t i;

	if (arg(req, "api_key_id", f.key_id, sizeof(f.key_id), err) == -1 ||
	    arg(req, "tool", f.tool, sizeof(f.tool), err) == -1 ||
	    arg(req, "kind", f.kind, sizeof(f.kind), err) == -1)
		goto out;
	if (sg_keys_all(env->cfg, env->store, &l.keys, &l.nkeys, err) == -1)
		goto out;
	if (sg_store_sess_list(env->store, NULL, session_of, l.sessions) !=
	    SG_STORE_OK || sg_store_sbx_list(env->store, NULL, one, &l) !=
	    SG_STORE_OK) {
		sg_error_server(err, 503, "The store does not answer; try "
		    "again shortly.");
		goto out;
	}
	rev = json_array();
	for (i = json_array_size(l.data); i > 0; i--)
		json_array_append(rev, json_array_get(l.data, i - 1));
	body = sg_http_list(rev, 0);
out:
	sg_keys_free(l.keys, l.nkeys);
	json_decref(l.sessions);
	json_decref(l.data);
	return body;
}

static json_t *
end(const struct sg_org_env *env, const char *id, struct sg_error *err)
{
	struct sg_sbx_env sbx = { env->cfg, env->store, env->prov, NULL };

	/* Any key's: NULL is the operator's reach, as the CLI's. */
	if (sg_sbx_delete(&sbx, NULL, id, err) == -1)
		return NULL;
	return json_pack("{s:s,s:s,s:b}", "id", id, "object",
	    "sandbox.deleted", "deleted", 1);
}

void
sg_org_sandboxes(const struct sg_org_env *env, enum sg_route route,
    const char *id, struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;
	json_t *body;

	body = route == SG_ROUTE_ORG_SBX_DELETE ? end(env, id, &err) :
	    list(env, req, &err);
	if (body == NULL) {
		sg_http_error(out, req, &err);
		return;
	}
	sg_http_json(out, req, 200, body);
	json_decref(body);
}
