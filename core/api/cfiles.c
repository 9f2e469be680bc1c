/*
 * A container's files (/v1/containers/{id}/files): uploaded as a form
 * (streamed to files.dir) or copied from an uploaded file ({"file_id"}),
 * then put into the container's /mnt/data; listed, read and deleted from
 * the gateway's copy, which outlives the sandbox for the files' retention.
 * Ids are cfile_...; quota and retention are the Files API's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cfiles.h"
#include "../http/upload.h"
#include "../loop/outfiles.h"
#include "../state/files.h"
#include "../state/ledger.h"

#define LIST_LIMIT	20
#define LIST_LIMIT_MAX	100

static int
not_found(struct sg_error *err, const char *fid)
{
	return sg_error_set(err, 404, "invalid_request_error", NULL, NULL,
	    "Container file with id '%s' not found.", fid);
}

/* New reference: OpenAI's container file object. */
static json_t *
cfile_json(const struct sg_store_file *f)
{
	return json_pack("{s:s,s:s,s:I,s:I,s:s,s:s,s:s}", "id", f->id,
	    "object", "container.file", "created_at", (json_int_t)f->created_at,
	    "bytes", (json_int_t)f->bytes, "container_id", f->container_id,
	    "path", f->path, "source", f->source);
}

/* The caller's container: 0, or -1 with err (403 for a tool the key may
 * not use; with live, 404 unless it is there: any kept kind, ready). */
static int
container_of(struct sg_sbx_env *env, const struct sg_req *req, const char *id,
    int live, struct sg_error *err)
{
	struct sg_store_sbx row;
	int rc = sg_store_sbx_get(env->store, id, req->tenant, &row), ok;

	if (rc != SG_STORE_OK && rc != SG_STORE_NOTFOUND)
		return sg_error_store(err, sg_store_errmsg(env->store));
	if (rc == SG_STORE_OK && sg_sbx_may_use(env, row.tool, "tool",
	    err) == -1) {
		sg_store_sbx_clear(&row);
		return -1;
	}
	ok = !live || (rc == SG_STORE_OK && row.kind != SG_SBX_EPHEMERAL &&
	    strcmp(row.state, "ready") == 0);
	if (rc == SG_STORE_OK)
		sg_store_sbx_clear(&row);
	return ok ? 0 : sg_error_set(err, 404, "invalid_request_error", NULL,
	    NULL, "Container with id '%s' not found.", id);
}

/* A file the caller gives container id. */
static void
of_container(struct sg_store_file *f, const char *id)
{
	memset(f, 0, sizeof(*f));
	sg_copy(f->container_id, sizeof(f->container_id), id);
	snprintf(f->source, sizeof(f->source), "user");
}

/* The bytes are whole in files.dir: the row ready, the file in the
 * container. Anything failing takes both back. */
static json_t *
finish(struct sg_sbx_env *env, const struct sg_req *req,
    struct sg_store_file *f, struct sg_error *err)
{
	sg_sbx_data_path(f->filename, f->path, sizeof(f->path));
	if (sg_store_file_ready(env->store, f) != SG_STORE_OK)
		sg_error_store(err, sg_store_errmsg(env->store));
	else if (sg_sbx_put_file(env, req->tenant, f->container_id, f,
	    err) == 0) {
		const char *path = f->path;

		/* The user's file: never copied out as the code's. */
		sg_outf_seen(env, req->tenant, f->container_id, &path, 1);
		sg_use_file(f->bytes);
		return cfile_json(f);
	}
	sg_files_unlink(env->cfg, f->id);
	sg_store_file_remove(env->store, f->id, NULL);
	return NULL;
}

static json_t *
upload(struct sg_sbx_env *env, struct sg_req *req, const char *id,
    struct sg_error *err)
{
	struct sg_files_env fenv = { env->cfg, env->store };
	struct sg_store_file f;
	struct sg_upload u;

	of_container(&f, id);
	if (sg_files_upload(&fenv, req, "cfile_", 16, &f, &u, err) == -1)
		return NULL;
	if (sg_upload_commit(&u, err) == -1) {
		sg_store_file_remove(env->store, f.id, NULL);
		return NULL;
	}
	return finish(env, req, &f, err);
}

/* {"file_id"}: an uploaded file's bytes, shared by a hard link (neither
 * is ever written again). */
static json_t *
copy(struct sg_sbx_env *env, struct sg_req *req, const char *id,
    struct sg_error *err)
{
	json_t *b = sg_http_body_object(req, err), *out = NULL;
	const char *fid = json_string_value(json_object_get(b, "file_id"));
	struct sg_files_env fenv = { env->cfg, env->store };
	struct sg_store_file src, f;
	char from[4096], to[4096];

	if (b == NULL)
		return NULL;
	of_container(&f, id);
	if (fid == NULL)
		sg_error_invalid(err, "file_id", NULL, "Missing required "
		    "parameter: 'file_id' (or upload a 'file' as a form).");
	else if (sg_store_file_get(env->store, fid, req->tenant, NULL, &src) !=
	    SG_STORE_OK || strcmp(src.state, "ready") != 0)
		sg_error_set(err, 404, "invalid_request_error", NULL, "file_id",
		    "No such File object: %s", fid);
	else if (sg_files_begin(&fenv, req->tenant, "cfile_", 16, src.bytes, &f,
	    NULL, err) == 0) {
		if (sg_files_path(env->cfg, src.id, from, sizeof(from)) == 0 &&
		    sg_files_path(env->cfg, f.id, to, sizeof(to)) == 0 &&
		    link(from, to) == 0) {
			sg_copy(f.filename, sizeof(f.filename),
			    src.filename);
			f.bytes = src.bytes;
			out = finish(env, req, &f, err);
		} else {
			sg_error_server(err, 500, "The file could not be copied "
			    "(%s).", strerror(errno));
			sg_store_file_remove(env->store, f.id, NULL);
		}
	}
	json_decref(b);
	return out;
}

static json_t *
get(struct sg_sbx_env *env, const struct sg_req *req, const char *id,
    const char *fid, struct sg_store_file *f, struct sg_error *err)
{
	int rc = sg_store_file_get(env->store, fid, req->tenant, id, f);

	if (rc == SG_STORE_OK && strcmp(f->state, "ready") == 0)
		return cfile_json(f);
	if (rc == SG_STORE_OK || rc == SG_STORE_NOTFOUND)
		not_found(err, fid);
	else
		sg_error_store(err, sg_store_errmsg(env->store));
	return NULL;
}

static int
add(void *arg, const struct sg_store_file *f)
{
	return json_array_append_new(arg, cfile_json(f)) == 0 ? 0 : -1;
}

static json_t *
list(struct sg_sbx_env *env, const struct sg_req *req, const char *id,
    struct sg_error *err)
{
	char after[64];
	json_t *data;
	long limit;
	int desc, more, rc;

	if (sg_http_page_args(req, LIST_LIMIT, LIST_LIMIT_MAX, &limit, &desc,
	    after, sizeof(after), err) == -1)
		return NULL;
	data = json_array();
	rc = sg_store_file_list(env->store, req->tenant, id, NULL,
	    after[0] != '\0' ? after : NULL, (int)limit, !desc, add, data,
	    &more);
	if (rc != SG_STORE_OK) {
		json_decref(data);
		if (rc == SG_STORE_NOTFOUND)
			sg_error_invalid(err, "after", "invalid_value", "Invalid "
			    "'after': no such file.");
		else
			sg_error_store(err, sg_store_errmsg(env->store));
		return NULL;
	}
	return sg_http_list(data, more);
}

/* The file a route names after its container: fid, or NULL. */
static json_t *
with_file(struct sg_sbx_env *env, enum sg_route route, const char *id,
    const char *fid, struct sg_req *req, struct sg_out *out,
    struct sg_error *err)
{
	struct sg_store_file f;
	json_t *answer = get(env, req, id, fid, &f, err);

	if (answer == NULL || route == SG_ROUTE_CFILE_GET)
		return answer;
	json_decref(answer);
	if (route == SG_ROUTE_CFILE_CONTENT) {
		struct sg_files_env fenv = { env->cfg, env->store };

		sg_files_send(&fenv, &f, req, out, err);
		return NULL;
	}
	if (sg_store_file_remove(env->store, fid, req->tenant) != SG_STORE_OK) {
		not_found(err, fid);
		return NULL;
	}
	sg_files_unlink(env->cfg, fid);
	return json_pack("{s:s,s:s,s:b}", "id", fid, "object",
	    "container.file.deleted", "deleted", 1);
}

void
sg_cfile_api(struct sg_sbx_env *env, enum sg_route route, const char *id,
    struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;
	json_t *answer = NULL;
	char fid[64];

	/* What the code wrote outlives its sandbox: a gone container's
	 * files are still read, listed and deleted; only a live one takes
	 * new ones. A live one of a tool the key may not use is refused. */
	sg_error_server(&err, 500, "The container's files failed.");
	if (container_of(env, req, id, route == SG_ROUTE_CFILE_CREATE,
	    &err) == -1)
		;	/* err says why */
	else if (route == SG_ROUTE_CFILE_CREATE) {
		answer = req->in != NULL ? upload(env, req, id, &err) :
		    copy(env, req, id, &err);
	} else if (route == SG_ROUTE_CFILE_LIST) {
		if ((answer = list(env, req, id, &err)) != NULL &&
		    json_array_size(json_object_get(answer, "data")) == 0 &&
		    container_of(env, req, id, 1, &err) == -1) {
			json_decref(answer);
			answer = NULL;
		}
	} else if (sg_route_second(req->path, fid, sizeof(fid)) == -1)
		not_found(&err, "?");
	else
		answer = with_file(env, route, id, fid, req, out, &err);
	if (answer != NULL)
		sg_http_json(out, req, 200, answer);
	else if (!out->started)
		sg_http_error(out, req, &err);
	json_decref(answer);
}
