/*
 * OpenAI's Containers API on sandgate: a container is a sandbox of the
 * kind POST /v1/sandboxes makes (one id space, cntr_...), so it works
 * everywhere a sandbox does, "container": "cntr_..." in the tool included.
 * POST /v1/containers (name, file_ids), GET /v1/containers, GET and DELETE
 * /v1/containers/{id}. Per key: another key's container is not found; one
 * of a tool the key may not use (auth.keys[].tools) is refused, as on
 * /v1/sandboxes, and not listed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "containers.h"
#include "../state/files.h"

#define LIST_LIMIT	20
#define LIST_LIMIT_MAX	100
#define NAME_MAX_BYTES	256

static int
not_found(struct sg_error *err, const char *id)
{
	return sg_error_set(err, 404, "invalid_request_error", NULL, NULL,
	    "Container with id '%s' not found.", id);
}

/* New reference: the container object OpenAI answers for row. */
static json_t *
container_json(const struct sg_cfg *cfg, const struct sg_store_sbx *row)
{
	return json_pack("{s:s,s:s,s:I,s:s,s:{s:s,s:i},s:I,s:s}", "id", row->id,
	    "object", "container", "created_at", (json_int_t)row->created_at,
	    "status", strcmp(row->state, "ready") == 0 ? "running" : row->state,
	    "expires_after", "anchor", "last_active_at", "minutes",
	    (cfg->sessions.ttl + 59) / 60, "last_active_at",
	    (json_int_t)row->last_used_at, "name", row->name);
}

struct found {
	struct sg_store_file	*files;
	size_t			 n;
};

static void
keep_file(void *arg, const struct sg_store_file *f)
{
	struct found *fd = arg;

	fd->files[fd->n++] = *f;
}

static json_t *
create(struct sg_sbx_env *env, const struct sg_req *req, const json_t *b,
    struct sg_error *err)
{
	const char *name = json_string_value(json_object_get(b, "name"));
	struct sg_files_env fenv = { env->cfg, env->store };
	struct found fd = { NULL, 0 };
	struct sg_store_sbx row;
	struct sg_error ignored;
	json_t *out = NULL;
	size_t i;

	if (name == NULL) {
		sg_error_invalid(err, "name", NULL, "Missing required parameter: "
		    "'name'.");
		return NULL;
	}
	if (strlen(name) > NAME_MAX_BYTES) {
		sg_error_invalid(err, "name", "string_above_max_length", "Invalid "
		    "'name': string too long (at most %d bytes).", NAME_MAX_BYTES);
		return NULL;
	}
	if ((fd.files = calloc(SG_FILES_IDS_MAX, sizeof(*fd.files))) == NULL) {
		sg_error_server(err, 500, "out of memory");
		return NULL;
	}
	if (sg_files_each_id(&fenv, req->tenant, json_object_get(b,
	    "file_ids"), "file_ids", "file_ids", keep_file, &fd, err) == -1 ||
	    sg_sbx_create(env, req->tenant, NULL, SG_SBX_EXPLICIT, &row,
	    err) == -1) {
		free(fd.files);
		return NULL;
	}
	sg_copy(row.name, sizeof(row.name), name);
	if (sg_store_sbx_name(env->store, row.id, name) != SG_STORE_OK)
		sg_error_store(err, sg_store_errmsg(env->store));
	else {
		for (i = 0; i < fd.n && sg_sbx_put_file(env, req->tenant, row.id,
		    &fd.files[i], err) == 0; i++)
			;
		if (i == fd.n)
			out = container_json(env->cfg, &row);
	}
	/* Half made is not made: it goes, and the error says why. */
	if (out == NULL)
		sg_sbx_delete(env, req->tenant, row.id, &ignored);
	sg_store_sbx_clear(&row);
	free(fd.files);
	return out;
}

static json_t *
get(struct sg_sbx_env *env, const struct sg_req *req, const char *id,
    struct sg_error *err)
{
	struct sg_store_sbx row;
	json_t *out;
	int rc = sg_store_sbx_get(env->store, id, req->tenant, &row);

	if (rc == SG_STORE_NOTFOUND || (rc == SG_STORE_OK &&
	    row.kind == SG_SBX_EPHEMERAL)) {
		if (rc == SG_STORE_OK)
			sg_store_sbx_clear(&row);
		not_found(err, id);
		return NULL;
	}
	if (rc != SG_STORE_OK) {
		sg_error_store(err, sg_store_errmsg(env->store));
		return NULL;
	}
	out = sg_sbx_may_use(env, row.tool, "tool", err) == 0 ?
	    container_json(env->cfg, &row) : NULL;
	sg_store_sbx_clear(&row);
	return out;
}

struct listing {
	const struct sg_sbx_env	*env;
	json_t			*all;	/* oldest first */
	const char		*name;	/* a filter, or NULL */
};

/* The containers: kept sandboxes (explicit, sessions, conversations). */
static int
add(void *arg, const struct sg_store_sbx *row)
{
	struct listing *l = arg;

	if (row->kind == SG_SBX_EPHEMERAL || strcmp(row->state, "ready") != 0 ||
	    (l->name != NULL && strcmp(row->name, l->name) != 0) ||
	    !sg_cfg_key_may_use(l->env->key, row->tool))
		return 0;
	return json_array_append_new(l->all, container_json(l->env->cfg,
	    row)) == 0 ? 0 : -1;
}

static json_t *
list(struct sg_sbx_env *env, const struct sg_req *req, struct sg_error *err)
{
	char after[64], name[NAME_MAX_BYTES + 1];
	struct listing l = { env, json_array(), NULL };
	json_t *data;
	long limit;
	int desc, more, rc;

	if (sg_http_page_args(req, LIST_LIMIT, LIST_LIMIT_MAX, &limit, &desc,
	    after, sizeof(after), err) == -1) {
		json_decref(l.all);
		return NULL;
	}
	if ((rc = sg_http_query(req->uri, "name", name, sizeof(name))) == -1) {
		sg_error_invalid(err, "name", "invalid_value", "Invalid 'name'.");
		json_decref(l.all);
		return NULL;
	}
	l.name = rc == 1 ? name : NULL;
	if (sg_store_sbx_list(env->store, req->tenant, add, &l) != SG_STORE_OK) {
		json_decref(l.all);
		sg_error_store(err, sg_store_errmsg(env->store));
		return NULL;
	}
	data = sg_http_page(l.all, limit, desc, after, &more);
	json_decref(l.all);
	return sg_http_list(data, more);
}

void
sg_cntr_api(struct sg_sbx_env *env, enum sg_route route, const char *id,
    const struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;
	struct sg_files_env fenv = { env->cfg, env->store };
	json_t *b = NULL, *answer = NULL;

	sg_error_server(&err, 500, "The containers failed.");
	switch (route) {
	case SG_ROUTE_CNTR_CREATE:
		if ((b = sg_http_body_object(req, &err)) != NULL)
			answer = create(env, req, b, &err);
		break;
	case SG_ROUTE_CNTR_LIST:
		answer = list(env, req, &err);
		break;
	case SG_ROUTE_CNTR_GET:
		answer = get(env, req, id, &err);
		break;
	case SG_ROUTE_CNTR_DELETE:
		if ((answer = get(env, req, id, &err)) != NULL) {
			json_decref(answer);
			answer = sg_sbx_delete(env, req->tenant, id, &err) == 0 ?
			    json_pack("{s:s,s:s,s:b}", "id", id, "object",
			    "container.deleted", "deleted", 1) : NULL;
			/* Its files go with it, as OpenAI's do. */
			if (answer != NULL)
				sg_files_drop(&fenv, req->tenant, id);
		}
		break;
	default:
		break;
	}
	if (answer != NULL)
		sg_http_json(out, req, 200, answer);
	else if (!out->started)
		sg_http_error(out, req, &err);
	json_decref(answer);
	json_decref(b);
}
