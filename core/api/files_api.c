/*
 * OpenAI's Files API on sandgate: POST /v1/files (multipart, streamed to
 * disk), GET /v1/files, GET and DELETE /v1/files/{id}, GET
 * /v1/files/{id}/content. A file belongs to the key that uploaded it;
 * another key's is not found. What a file is (its bytes, its row, its
 * key's quota) is core/state/files.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files_api.h"
#include "../http/upload.h"
#include "../state/ledger.h"

#define LIST_LIMIT_MAX	10000
#define EXPIRES_MIN	3600		/* OpenAI's bounds for expires_after */
#define EXPIRES_MAX	2592000

static const char *const purposes[] = { "assistants", "batch", "fine-tune",
	"vision", "user_data", "evals", NULL };

static int
not_found(struct sg_error *err, const char *id)
{
	return sg_error_set(err, 404, "invalid_request_error", NULL, "id",
	    "No such File object: %s", id);
}

static int
check_purpose(const char *p, struct sg_error *err)
{
	size_t i;

	if (p == NULL)
		return sg_error_invalid(err, "purpose", NULL, "Missing required "
		    "parameter: 'purpose'.");
	for (i = 0; purposes[i] != NULL; i++)
		if (strcmp(p, purposes[i]) == 0)
			return 0;
	return sg_error_invalid(err, "purpose", "invalid_value", "'%.64s' is "
	    "not one of ['assistants', 'batch', 'fine-tune', 'vision', "
	    "'user_data', 'evals'] - 'purpose'", p);
}

/* expires_after[anchor] and [seconds] (the SDK's form fields): the
 * expiry, or the retention's when absent; -1 with err when bad. */
static int64_t
expiry(const struct sg_cfg *cfg, const struct sg_upload *u, int64_t now,
    struct sg_error *err)
{
	const char *anchor = sg_upload_field(u, "expires_after[anchor]");
	const char *secs = sg_upload_field(u, "expires_after[seconds]");
	char *end;
	long v;

	if (anchor == NULL && secs == NULL)
		return now + cfg->files.retention;
	if (anchor == NULL || strcmp(anchor, "created_at") != 0)
		return sg_error_invalid(err, "expires_after.anchor",
		    "invalid_value", "Invalid 'expires_after.anchor': expected "
		    "'created_at'.");
	v = secs != NULL ? strtol(secs, &end, 10) : 0;
	if (secs == NULL || *end != '\0' || v < EXPIRES_MIN || v > EXPIRES_MAX)
		return sg_error_invalid(err, "expires_after.seconds",
		    "integer_out_of_range", "Invalid 'expires_after.seconds': "
		    "expected an integer between %d and %d.", EXPIRES_MIN,
		    EXPIRES_MAX);
	/* Never past the gateway's own retention. */
	return now + (v < cfg->files.retention ? v : cfg->files.retention);
}

static int
create(const struct sg_files_env *env, struct sg_req *req, struct sg_out *out,
    struct sg_error *err)
{
	const struct sg_cfg *cfg = env->cfg;
	struct sg_store_file f;
	struct sg_upload u;
	json_t *body;

	memset(&f, 0, sizeof(f));
	if (sg_files_upload(env, req, "file-", 12, &f, &u, err) == -1)
		return -1;
	if (check_purpose(sg_upload_field(&u, "purpose"), err) == -1 ||
	    (f.expires_at = expiry(cfg, &u, f.created_at, err)) == -1) {
		sg_upload_discard(&u);
		sg_store_file_remove(env->store, f.id, NULL);
		return -1;
	}
	sg_copy(f.purpose, sizeof(f.purpose),
	    sg_upload_field(&u, "purpose"));
	if (sg_upload_commit(&u, err) == -1) {
		sg_store_file_remove(env->store, f.id, NULL);
		return -1;
	}
	if (sg_store_file_ready(env->store, &f) != SG_STORE_OK) {
		sg_files_unlink(cfg, f.id);
		sg_store_file_remove(env->store, f.id, NULL);
		return sg_error_store(err, sg_store_errmsg(env->store));
	}
	sg_use_file(f.bytes);
	body = sg_files_json(&f);
	sg_http_json(out, req, 200, body);
	json_decref(body);
	return 0;
}

static int
load(const struct sg_files_env *env, const char *id, const struct sg_req *req,
    struct sg_store_file *f, struct sg_error *err)
{
	int rc = sg_store_file_get(env->store, id, req->tenant, NULL, f);

	if (rc == SG_STORE_NOTFOUND || (rc == SG_STORE_OK &&
	    strcmp(f->state, "ready") != 0))
		return not_found(err, id);
	if (rc != SG_STORE_OK)
		return sg_error_store(err, sg_store_errmsg(env->store));
	return 0;
}

static int
get(const struct sg_files_env *env, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	struct sg_store_file f;
	json_t *body;

	if (load(env, id, req, &f, err) == -1)
		return -1;
	body = sg_files_json(&f);
	sg_http_json(out, req, 200, body);
	json_decref(body);
	return 0;
}

static int
delete(const struct sg_files_env *env, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	struct sg_store_file f;
	json_t *body;

	if (load(env, id, req, &f, err) == -1)
		return -1;
	/* The row first: a file no row names is never served. */
	if (sg_store_file_remove(env->store, id, req->tenant) != SG_STORE_OK)
		return not_found(err, id);
	sg_files_unlink(env->cfg, id);
	body = json_pack("{s:s,s:s,s:b}", "id", id, "object", "file",
	    "deleted", 1);
	sg_http_json(out, req, 200, body);
	json_decref(body);
	return 0;
}

static int
content(const struct sg_files_env *env, const char *id,
    const struct sg_req *req, struct sg_out *out, struct sg_error *err)
{
	struct sg_store_file f;

	if (load(env, id, req, &f, err) == -1)
		return -1;
	return sg_files_send(env, &f, req, out, err);
}

static int
add(void *arg, const struct sg_store_file *f)
{
	return json_array_append_new(arg, sg_files_json(f)) == 0 ? 0 : -1;
}

static int
list(const struct sg_files_env *env, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	char after[64], purpose[32];
	json_t *data, *body;
	long limit;
	int desc, more, rc;

	if (sg_http_page_args(req, LIST_LIMIT_MAX, LIST_LIMIT_MAX, &limit,
	    &desc, after, sizeof(after), err) == -1)
		return -1;
	if ((rc = sg_http_query(req->uri, "purpose", purpose,
	    sizeof(purpose))) == -1 || (rc == 1 && check_purpose(purpose,
	    err) == -1))
		return rc == -1 ? check_purpose("?", err) : -1;
	data = json_array();
	rc = sg_store_file_list(env->store, req->tenant, NULL, rc == 1 ?
	    purpose : NULL, after[0] != '\0' ? after : NULL, (int)limit, !desc,
	    add, data, &more);
	if (rc != SG_STORE_OK) {
		json_decref(data);
		return rc == SG_STORE_NOTFOUND ? sg_error_invalid(err, "after",
		    "invalid_value", "Invalid 'after': no such file.") :
		    sg_error_store(err, sg_store_errmsg(env->store));
	}
	body = sg_http_list(data, more);
	sg_http_json(out, req, 200, body);
	json_decref(body);
	return 0;
}

void
sg_files_api(const struct sg_files_env *env, enum sg_route route,
    const char *id, struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;
	int rc = -1;

	sg_error_server(&err, 500, "The files failed.");
	switch (route) {
	case SG_ROUTE_FILE_CREATE:
		rc = create(env, req, out, &err);
		break;
	case SG_ROUTE_FILE_LIST:
		rc = list(env, req, out, &err);
		break;
	case SG_ROUTE_FILE_GET:
		rc = get(env, id, req, out, &err);
		break;
	case SG_ROUTE_FILE_DELETE:
		rc = delete(env, id, req, out, &err);
		break;
	case SG_ROUTE_FILE_CONTENT:
		rc = content(env, id, req, out, &err);
		break;
	default:
		break;
	}
	if (rc == -1 && !out->started)
		sg_http_error(out, req, &err);
}
