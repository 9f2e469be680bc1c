#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfiles.h"
#include "rewrite.h"
#include "session.h"
#include "../state/convs.h"
#include "../state/files.h"

#define LOST_NOTE "[sandgate: this conversation's sandbox was lost (it " \
	"expired or was deleted), so this code ran in a new one: variables, " \
	"imports and files from earlier runs are gone; re-create what you " \
	"need.]\n"

/* The code_interpreter tool's container: a string (explicit), an object
 * ({"type":"auto",...}), or NULL. Borrowed. */
static const json_t *
tool_container(const json_t *work)
{
	const json_t *tools = json_object_get(work, "tools"), *t;
	size_t i;

	json_array_foreach(tools, i, t) {
		const char *type = json_string_value(json_object_get(t, "type"));

		if (type != NULL && strcmp(type, "code_interpreter") == 0)
			return json_object_get(t, "container");
	}
	return NULL;
}

static void
keep_id(void *arg, const struct sg_store_file *f)
{
	struct sg_bind *b = arg;

	sg_copy(b->files[b->nfiles++], sizeof(b->files[0]), f->id);
}

/* container.file_ids: each one of the caller's files. */
static int
take_files(struct sg_sbx_env *env, const struct sg_req *req,
    const json_t *work, struct sg_bind *b, struct sg_error *err)
{
	const json_t *ids = json_object_get(tool_container(work), "file_ids");
	struct sg_files_env fenv = { env->cfg, env->store };

	return sg_files_each_id(&fenv, req->tenant, json_is_null(ids) ? NULL :
	    ids, "tools", "container.file_ids", keep_id, b, err);
}

/* Write the request's files into its sandbox, once: 0, -1 with err, or
 * SG_SBX_GONE. */
static int
put_files(struct sg_sbx_env *env, const struct sg_req *req, struct sg_bind *b,
    struct sg_error *err)
{
	struct sg_store_file f;
	char paths[SG_FILES_IDS_MAX][300];
	const char *seen[SG_FILES_IDS_MAX];
	int i, rc;

	if (b->files_in)
		return 0;
	for (i = 0; i < b->nfiles; i++) {
		if (sg_store_file_get(env->store, b->files[i], req->tenant, NULL,
		    &f) != SG_STORE_OK)
			return sg_error_set(err, 404, "invalid_request_error",
			    NULL, "tools", "No such File object: %s", b->files[i]);
		if ((rc = sg_sbx_put_file(env, req->tenant, b->sandbox, &f,
		    err)) != 0)
			return rc;
		sg_sbx_data_path(f.filename, paths[i], sizeof(paths[i]));
		seen[i] = paths[i];
	}
	/* The user's files, not the code's: never copied out as its own. */
	sg_outf_seen(env, req->tenant, b->sandbox, seen, b->nfiles);
	b->files_in = 1;
	return 0;
}

/* The container a code_interpreter tool names (a string), or NULL when
 * it says {"type":"auto"}. Borrowed. */
static const json_t *
explicit_container(const json_t *work)
{
	const json_t *c = tool_container(work);

	return json_is_string(c) ? c : NULL;
}

static int
not_found(struct sg_error *err, const char *id)
{
	return sg_error_set(err, 404, "invalid_request_error", NULL, "tools",
	    "Container with id '%s' not found.", id);
}

/* The caller's ready container id, as an explicit container. */
static int
bind_explicit(struct sg_sbx_env *env, const struct sg_req *req,
    const json_t *v, struct sg_bind *b, struct sg_error *err)
{
	const char *id = json_string_value(v);
	struct sg_store_sbx row;
	int rc;

	if (strlen(id) != json_string_length(v) || strlen(id) >= sizeof(b->sandbox))
		return not_found(err, id);
	rc = sg_store_sbx_get(env->store, id, req->tenant, &row);
	if (rc == SG_STORE_ERROR)
		return sg_error_store(err, sg_store_errmsg(env->store));
	if (rc != SG_STORE_OK || strcmp(row.state, "ready") != 0) {
		if (rc == SG_STORE_OK)
			sg_store_sbx_clear(&row);
		return not_found(err, id);
	}
	if (sg_sbx_may_use(env, row.tool, "tools", err) == -1) {
		sg_store_sbx_clear(&row);
		return -1;
	}
	/* Named by the client: kept, and never replaced by another. */
	sg_copy(b->sandbox, sizeof(b->sandbox), id);
	b->kind = SG_SBX_EXPLICIT;
	sg_store_sbx_clear(&row);
	return 0;
}

/* metadata.session_id, taken out of the body: 1 when there is one. */
static int
take_session(json_t *work, struct sg_bind *b, struct sg_error *err)
{
	json_t *md = json_object_get(work, "metadata");
	const json_t *v = json_object_get(md, "session_id");
	size_t n;

	if (v == NULL)
		return 0;
	n = json_string_length(v);
	if (!json_is_string(v) || n == 0 || n > SG_STORE_SESSION_MAX ||
	    strlen(json_string_value(v)) != n)
		return sg_error_invalid(err, "metadata.session_id",
		    "invalid_value", "Invalid 'metadata.session_id': expected a "
		    "string of 1 to %d characters.", SG_STORE_SESSION_MAX);
	sg_copy(b->session, sizeof(b->session), json_string_value(v));
	json_object_del(md, "session_id");
	if (json_object_size(md) == 0)
		json_object_del(work, "metadata");
	return 1;
}

/* A replayed code call's container into id: the item's own, or, for an
 * item_reference to one (as the AI SDK replays them), the stored one's. */
static void
call_container(struct sg_sbx_env *env, const struct sg_req *req,
    const json_t *it, char id[48])
{
	const char *type = json_string_value(json_object_get(it, "type"));
	const char *ref = json_string_value(json_object_get(it, "id"));
	const char *c = NULL;
	char *item = NULL, *up = NULL;
	json_t *stored = NULL;

	if (type != NULL && strcmp(type, "code_interpreter_call") == 0)
		c = json_string_value(json_object_get(it, "container_id"));
	else if (type != NULL && strcmp(type, "item_reference") == 0 &&
	    ref != NULL && strncmp(ref, "ci_", 3) == 0 &&
	    sg_store_item_find(env->store, ref, req->tenant, &item, &up) ==
	    SG_STORE_OK && (stored = json_loads(item, 0, NULL)) != NULL)
		c = json_string_value(json_object_get(stored, "container_id"));
	if (c != NULL && strlen(c) < 48)
		sg_copy(id, 48, c);
	json_decref(stored);
	free(item);
	free(up);
}

/* The container a continuation used: the last replayed code call's, else
 * previous_response_id's or the conversation's. "" when none. */
static void
continued(struct sg_sbx_env *env, const struct sg_req *req,
    const json_t *work, char id[48])
{
	const char *prev = json_string_value(json_object_get(work,
	    "previous_response_id"));
	const json_t *input = json_object_get(work, "input");
	const char *conv;
	char up[256];
	size_t i;

	id[0] = '\0';
	for (i = json_array_size(input); i-- > 0 && id[0] == '\0';)
		call_container(env, req, json_array_get(input, i), id);
	if (id[0] == '\0' && prev != NULL)
		sg_store_resp_get(env->store, prev, req->tenant, up, sizeof(up),
		    id, 48);
	if (id[0] == '\0' && (conv = sg_convs_id(work)) != NULL)
		sg_convs_sandbox(env->store, req->tenant, conv, id);
}

/* Whether id is the tenant's and alive; its kind in *kind. */
static int
alive(struct sg_sbx_env *env, const struct sg_req *req, const char *id,
    int *kind)
{
	struct sg_store_sbx row;
	int ok;

	if (sg_store_sbx_get(env->store, id, req->tenant, &row) != SG_STORE_OK)
		return 0;
	ok = strcmp(row.state, "ready") == 0 && row.kind != SG_SBX_EPHEMERAL;
	*kind = row.kind;
	sg_store_sbx_clear(&row);
	return ok;
}

/* The sandbox code would run in: a kept one (a session's, a
 * continuation's), else a new one of the interception tool. Refused
 * before any upstream call when its tool is one the key may not use (a
 * reload can take a tool away). */
static int
usable(struct sg_sbx_env *env, const struct sg_req *req, const char *id,
    struct sg_error *err)
{
	struct sg_store_sbx row;
	int rc;

	if (id[0] == '\0' || sg_store_sbx_get(env->store, id, req->tenant,
	    &row) != SG_STORE_OK)
		return sg_sbx_may_use(env, NULL, "tools", err);
	rc = sg_sbx_may_use(env, row.tool, "tools", err);
	sg_store_sbx_clear(&row);
	return rc;
}

/* usable() for a session's sandbox, read with the session, which it
 * touches (one statement); remembered for sg_bind_peek and the first
 * run. */
static int
session_usable(struct sg_sbx_env *env, const struct sg_req *req,
    struct sg_bind *b, struct sg_error *err)
{
	struct sg_store_sess s;

	if (sg_store_sess_use(env->store, req->tenant, b->session, &s) !=
	    SG_STORE_OK)
		return sg_sbx_may_use(env, NULL, "tools", err);
	sg_copy(b->peeked, sizeof(b->peeked), s.sandbox_id);
	b->peeked_ok = 1;
	b->ready = s.sandbox_id[0] != '\0' && strcmp(s.state, "ready") == 0;
	return sg_sbx_may_use(env, s.tool[0] != '\0' ? s.tool : NULL, "tools",
	    err);
}

int
sg_bind_init(struct sg_sbx_env *env, const struct sg_req *req, json_t *work,
    struct sg_bind *b, struct sg_error *err)
{
	const json_t *ex = explicit_container(work);
	int code = sg_rw_wants_code(work), rc, kind;
	char prev[48];

	memset(b, 0, sizeof(*b));
	b->kind = SG_SBX_EPHEMERAL;
	if (take_files(env, req, work, b, err) == -1 ||
	    (rc = take_session(work, b, err)) == -1)
		return -1;
	if (ex != NULL)
		return bind_explicit(env, req, ex, b, err);
	if (rc == 1) {
		b->kind = SG_SBX_SESSION;
		if (!code)
			return 0;
		return session_usable(env, req, b, err);
	}
	continued(env, req, work, prev);
	if (prev[0] != '\0' && alive(env, req, prev, &kind)) {
		if (code && usable(env, req, prev, err) == -1)
			return -1;
		sg_copy(b->sandbox, sizeof(b->sandbox), prev);
		b->kind = kind;
		return 0;
	}
	if (code && usable(env, req, "", err) == -1)
		return -1;
	if (env->cfg->interception.reuse_conversation) {
		b->kind = SG_SBX_CONVERSATION;
		/* Its container went since (expired, evicted, deleted). */
		b->lost = prev[0] != '\0';
	}
	return 0;
}

const char *
sg_bind_sandbox(struct sg_sbx_env *env, const struct sg_req *req,
    struct sg_bind *b, struct sg_error *err)
{
	struct sg_store_sbx row;
	int lost = 0;

	if (b->sandbox[0] != '\0')
		return b->sandbox;
	if (b->kind == SG_SBX_SESSION && b->ready) {
		/* As sg_sbx_session would: the key may use the tool. */
		b->ready = 0;
		if (sg_sbx_may_use(env, NULL, "tools", err) == -1)
			return NULL;
		sg_copy(b->sandbox, sizeof(b->sandbox), b->peeked);
		return b->sandbox;
	}
	if (b->kind == SG_SBX_SESSION) {
		if (sg_sbx_session(env, req->tenant, NULL, b->session,
		    b->sandbox, &lost, err) == -1) {
			b->sandbox[0] = '\0';
			return NULL;
		}
		b->lost |= lost;
		return b->sandbox;
	}
	if (b->kind == SG_SBX_EXPLICIT) {
		sg_error_set(err, 404, "invalid_request_error", NULL, "tools",
		    "The container this request named is gone.");
		return NULL;
	}
	if (sg_sbx_create(env, req->tenant, NULL, b->kind, &row, err) == -1)
		return NULL;
	sg_copy(b->sandbox, sizeof(b->sandbox), row.id);
	sg_store_sbx_clear(&row);
	return b->sandbox;
}

int
sg_bind_run(struct sg_sbx_env *env, const struct sg_req *req,
    struct sg_bind *b, const char *code, json_t **result, char **note,
    struct sg_error *err)
{
	struct sg_error ignored;
	int rc, tries, put_gone = 0;

	*note = NULL;
	for (tries = 0; tries < 2; tries++) {
		if (sg_bind_sandbox(env, req, b, err) == NULL)
			return -1;
		rc = put_files(env, req, b, err);
		if ((put_gone = rc == SG_SBX_GONE) && b->kind != SG_SBX_EXPLICIT)
			/* Deleted as a run's gone one is: else the store, or a
			 * session, would hand it out again. */
			sg_sbx_delete(env, req->tenant, b->sandbox, &ignored);
		if (rc == 0)
			rc = sg_sbx_run_in(env, req->tenant, b->sandbox,
			    b->kind == SG_SBX_SESSION ? b->session : NULL, code,
			    0, b->kind != SG_SBX_EPHEMERAL, result, err);
		if (rc != SG_SBX_GONE)
			break;
		/* Gone (and deleted): the one the client named cannot be
		 * replaced; any other can, once. */
		if (b->kind == SG_SBX_EXPLICIT)
			return -1;
		b->sandbox[0] = '\0';
		b->lost = 1;
		b->files_in = 0;
	}
	/* The new one went as well: the tool's failure, and asking again
	 * would meet it again (put's error already names the tool). */
	if (rc == SG_SBX_GONE && !put_gone)
		sg_error_server(err, 502, "Sandbox tool %s: its sandbox stopped "
		    "answering, and so did the new one that replaced it.",
		    env->cfg->interception.sandbox_tool);
	if (rc == SG_SBX_GONE)
		err->no_retry = 1;
	if (rc != 0)
		return -1;
	if (b->lost)
		*note = strdup(LOST_NOTE);
	b->lost = 0;
	return 0;
}

void
sg_bind_peek(struct sg_sbx_env *env, const struct sg_req *req,
    const struct sg_bind *b, char id[48])
{
	struct sg_store_sess s;

	id[0] = '\0';
	if (b->peeked_ok)
		sg_copy(id, 48, b->peeked);
	else if (b->kind == SG_SBX_SESSION && sg_store_sess_get(env->store,
	    req->tenant, b->session, &s) == SG_STORE_OK)
		sg_copy(id, 48, s.sandbox_id);
}

void
sg_bind_end(struct sg_sbx_env *env, const struct sg_req *req,
    struct sg_bind *b)
{
	/* What the request's last run deferred (its lock's release), and
	 * the row it left for the look at its files. */
	sg_store_flush(env->store);
	sg_sbx_forget_run();
	/* Once the answer (a stream's last event too) is out. */
	if (b->kind == SG_SBX_EPHEMERAL && b->sandbox[0] != '\0')
		sg_sbx_delete_after(env, req->after, req->tenant, b->sandbox);
}
