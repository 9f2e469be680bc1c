/*
 * /v1/organization/api_keys[/{id}]: the gateway's client keys over HTTP,
 * for admin keys only (gateway.c checked the caller). Each key is OpenAI's
 * organization.project.api_key object, owned by a service account of its
 * own name, with sandgate's members after OpenAI's: where it is set
 * ("source": "config" or "api"), its own settings ("limits"), what holds
 * after auth.limits ("effective_limits") and what it spent this budget
 * period ("spend"). A created key's secret is in "value", in that answer
 * only. The config file's keys are listed, and read-only here. Active keys
 * only, as OpenAI lists them.
 */
#include <stdio.h>
#include <string.h>

#include "org.h"
#include "keys.h"
#include "../config/keyset.h"
#include "../../lib/util.h"

#define LIST_LIMIT	20
#define LIST_LIMIT_MAX	100

/* New reference: ent as OpenAI's object, with sandgate's members. */
static json_t *
key_json(const struct sg_org_env *env, const struct sg_keys_ent *ent,
    const struct sg_keys_spend *s)
{
	json_t *o, *limits;
	char acct[40];

	snprintf(acct, sizeof(acct), "svc_acct_%s", ent->id + 4);
	limits = ent->key != NULL ? sg_keyset_json(ent->key) : json_object();
	/* A name the command line stored before names were checked may not
	 * be UTF-8: shown, not dropped. A config key whose secret is not
	 * set lets no one in: its owner has no access. */
	o = json_pack("{s:s,s:s,s:o,s:s,s:I,s:o,s:s,s:{s:s,s:{s:s,s:o,s:I,s:s}},"
	    "s:s,s:o,s:o,s:{s:s,s:I,s:f,s:I,s:f,s:I}}",
	    "object", "organization.project.api_key",
	    "id", ent->id,
	    "name", sg_json_string_lossy(ent->name, strlen(ent->name)),
	    "redacted_value", ent->redacted,
	    "created_at", (json_int_t)ent->created_at,
	    "last_used_at", s->last_ms > 0 ?
	    json_integer((json_int_t)(s->last_ms / 1000)) : json_null(),
	    "owner_project_access", ent->tenant[0] != '\0' ? "active" :
	    "inactive",
	    "owner", "type", "service_account", "service_account",
	    "id", acct,
	    "name", sg_json_string_lossy(ent->name, strlen(ent->name)),
	    "created_at", (json_int_t)ent->created_at,
	    "role", "member",
	    "source", ent->config ? "config" : "api",
	    "limits", limits,
	    "effective_limits", sg_keys_effective(env->cfg, ent),
	    "spend", "period", sg_keys_period_name(s->period),
	    "period_start", (json_int_t)s->period_start,
	    "amount", (double)s->cost / 1e9,
	    "tokens", (json_int_t)s->tokens,
	    "sandbox_seconds", (double)s->sandbox_ms / 1000.0,
	    "requests", (json_int_t)s->requests);
	return o;
}

/* New reference: ent's object, its spend read; NULL with err. */
static json_t *
key_read(const struct sg_org_env *env, const struct sg_keys_ent *ent,
    struct sg_error *err)
{
	struct sg_keys_spend s;
	json_t *o;

	if (sg_keys_spend(env->cfg, env->store, ent, env->now_ms, &s,
	    err) == -1)
		return NULL;
	if ((o = key_json(env, ent, &s)) == NULL)
		sg_error_server(err, 500, "Out of memory.");
	return o;
}

/* GET: config keys first, then the store's, oldest first (order=desc
 * turns it); each page's keys alone have their spend read. */
static json_t *
list(const struct sg_org_env *env, const struct sg_req *req,
    struct sg_error *err)
{
	struct sg_keys_ent *all;
	json_t *ids, *page, *data = NULL, *it, *o;
	char after[64], order[8];
	long limit;
	size_t i, n;
	int desc, more, found;

	if (sg_http_page_args(req, LIST_LIMIT, LIST_LIMIT_MAX, &limit, &desc,
	    after, sizeof(after), err) == -1)
		return NULL;
	/* OpenAI's key lists go oldest first, and take no order. */
	if (sg_http_query(req->uri, "order", order, sizeof(order)) == 0)
		desc = 0;
	if (sg_keys_all(env->cfg, env->store, &all, &n, err) == -1)
		return NULL;
	ids = json_array();
	for (i = 0, found = after[0] == '\0'; i < n; i++) {
		json_array_append_new(ids, json_pack("{s:s,s:I}", "id", all[i].id,
		    "i", (json_int_t)i));
		found |= strcmp(all[i].id, after) == 0;
	}
	if (!found) {
		sg_error_invalid(err, "after", "invalid_value", "Invalid 'after': "
		    "no active key has the id '%.40s'.", after);
		goto out;
	}
	page = sg_http_page(ids, limit, desc, after, &more);
	data = json_array();
	json_array_foreach(page, i, it) {
		o = key_read(env, &all[json_integer_value(json_object_get(it,
		    "i"))], err);
		if (o == NULL) {
			json_decref(data);
			data = NULL;
			break;
		}
		json_array_append_new(data, o);
	}
	json_decref(page);
	if (data != NULL)
		data = sg_http_list(data, more);
out:
	json_decref(ids);
	sg_keys_free(all, n);
	return data;
}

static json_t *
create(const struct sg_org_env *env, const struct sg_req *req,
    struct sg_error *err)
{
	struct sg_keys_ent ent;
	char secret[SG_KEYS_SECRET_MAX];
	json_t *body, *o = NULL;

	if ((body = sg_http_body_object(req, err)) == NULL)
		return NULL;
	if (sg_keys_create(env->cfg, env->store, body, secret, &ent,
	    err) == 0) {
		if ((o = key_read(env, &ent, err)) != NULL)
			json_object_set_new(o, "value", json_string(secret));
		sg_keys_clear(&ent);
	}
	memset(secret, 0, sizeof(secret));
	json_decref(body);
	return o;
}

/* GET, POST (update) and DELETE of one key. */
static json_t *
one(const struct sg_org_env *env, enum sg_route route, const char *id,
    const struct sg_req *req, struct sg_error *err)
{
	struct sg_keys_ent ent;
	json_t *body = NULL, *o = NULL;

	if (route == SG_ROUTE_ORG_KEY_UPDATE &&
	    (body = sg_http_body_object(req, err)) == NULL)
		return NULL;
	if (sg_keys_find(env->cfg, env->store, id, 0, &ent, err) == -1) {
		json_decref(body);
		return NULL;
	}
	if (route == SG_ROUTE_ORG_KEY_DELETE) {
		if (sg_keys_revoke(env->cfg, env->store, &ent, err) == 0)
			o = json_pack("{s:s,s:s,s:b}", "object",
			    "organization.project.api_key.deleted", "id", ent.id,
			    "deleted", 1);
	} else if (route == SG_ROUTE_ORG_KEY_GET ||
	    sg_keys_update(env->cfg, env->store, &ent, body, err) == 0)
		o = key_read(env, &ent, err);
	sg_keys_clear(&ent);
	json_decref(body);
	return o;
}

void
sg_org_keys(const struct sg_org_env *env, enum sg_route route, const char *id,
    struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;
	json_t *o;

	if (route == SG_ROUTE_ORG_KEY_LIST)
		o = list(env, req, &err);
	else if (route == SG_ROUTE_ORG_KEY_CREATE)
		o = create(env, req, &err);
	else
		o = one(env, route, id, req, &err);
	if (o == NULL) {
		sg_http_error(out, req, &err);
		return;
	}
	sg_http_json(out, req, 200, o);
	json_decref(o);
}
