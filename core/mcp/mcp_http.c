/*
 * The MCP server's transport (mcp.h): Streamable HTTP, checked in the
 * order the spec's reference server checks (a refused message is
 * answered a JSON-RPC error and the HTTP status saying why), sessions
 * made and found in the store (store/mcp.h), each message answered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp_int.h"
#include "../state/convo.h"
#include "../../lib/util.h"

#define ALLOW		"Allow: POST, DELETE\r\n"
#define SSE_HEAD	"Cache-Control: no-cache, no-transform\r\n" \
			"X-Accel-Buffering: no\r\n"

int
sg_mcp_match(const struct sg_cfg *cfg, const char *path)
{
	return cfg->mcp.enabled && cfg->ntools > 0 && cfg->mcp.path != NULL &&
	    strcmp(path, cfg->mcp.path) == 0;
}

static int
origin_ok(const struct sg_req *req)
{
	const char *origin = sg_http_param(req, "HTTP_ORIGIN");
	const char *host = sg_http_param(req, "HTTP_HOST");

	if (origin == NULL)
		return 1;
	if (strncasecmp(origin, "https://", 8) == 0)
		origin += 8;
	else if (strncasecmp(origin, "http://", 7) == 0)
		origin += 7;
	else
		return 0;
	return host != NULL && strcasecmp(origin, host) == 0;
}

const char *
sg_mcp_challenge(const struct sg_req *req)
{
	return req->authorization == NULL ?
	    "WWW-Authenticate: Bearer realm=\"sandgate\"\r\n" :
	    "WWW-Authenticate: Bearer realm=\"sandgate\", "
	    "error=\"invalid_token\"\r\n";
}

int
sg_mcp_runs(const struct sg_req *req)
{
	return req->body != NULL && strcmp(req->method, "POST") == 0 &&
	    strstr(req->body, "\"tools/call\"") != NULL;
}

/* A transport's refusal: status, and a JSON-RPC error whose id is the
 * request's when it could be read (else null). */
static void
refuse(struct sg_out *out, const struct sg_req *req, int status, int code,
    const json_t *id, const char *message, const char *extra)
{
	json_t *body = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0",
	    "id", id != NULL ? id : json_null(), "error", "code", code,
	    "message", message);
	char *text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;

	if (sg_http_begin(out, req, status, "application/json", extra) == 0 &&
	    text != NULL)
		out->write(out, text, strlen(text));
	free(text);
	json_decref(body);
}

int
sg_mcp_origin_refused(const struct sg_req *req, struct sg_out *out)
{
	if (origin_ok(req))
		return 0;
	refuse(out, req, 403, SG_MCP_BAD_REQUEST, NULL, "Forbidden: this "
	    "Origin may not use the MCP endpoint", NULL);
	return 1;
}

int
sg_mcp_refused_early(const struct sg_cfg *cfg, const struct sg_req *req,
    struct sg_out *out, const struct sg_error *err)
{
	if (!sg_mcp_match(cfg, req->path))
		return 0;
	refuse(out, req, err->status, err->status == 413 ?
	    SG_MCP_INVALID_REQUEST : SG_MCP_BAD_REQUEST, NULL, err->message,
	    NULL);
	return 1;
}

/* A bodiless answer (202 to a notification, 200 to a DELETE). */
static void
empty(struct sg_out *out, const struct sg_req *req, int status)
{
	sg_http_begin(out, req, status, "text/plain", "Content-Length: 0\r\n");
}

static int
has_type(const char *accept, const char *type)
{
	return accept == NULL || strcasestr(accept, type) != NULL ||
	    strstr(accept, "*/*") != NULL;
}

static int
version_ok(const char *v)
{
	return strcmp(v, SG_MCP_VERSION) == 0 ||
	    strcmp(v, SG_MCP_VERSION_PREV) == 0;
}

/* ---- messages ------------------------------------------------------ */

/* The answer to request m->id: its result, or its error. */
static void
answer(struct sg_mcp *m, json_t *result, const struct sg_mcp_err *e)
{
	json_t *msg = json_pack("{s:s,s:O}", "jsonrpc", "2.0", "id", m->id);

	if (msg == NULL)
		return;
	if (result != NULL)
		json_object_set(msg, "result", result);
	else {
		json_object_set_new(msg, "error", json_pack("{s:i,s:s}", "code",
		    e->code, "message", e->message));
		if (e->data != NULL)
			json_object_set(json_object_get(msg, "error"), "data",
			    e->data);
	}
	if (m->streaming || !m->json_ok)
		sg_mcp_send(m, msg);
	else
		sg_http_json(m->out, m->req, 200, msg);
	json_decref(msg);
}

/* initialize: a new session, of the version asked if we speak it, else
 * our latest (the client then decides). */
static void
initialize(struct sg_mcp *m, const json_t *params)
{
	const char *asked = json_string_value(json_object_get(params,
	    "protocolVersion"));
	const json_t *info = json_object_get(params, "clientInfo");
	const char *client = json_string_value(json_object_get(info, "name"));
	char rnd[40], head[256], *text;
	struct sg_mcp_err e = { SG_MCP_INTERNAL, "Internal error", NULL };
	json_t *r, *msg;

	sg_copy(m->version, sizeof(m->version), asked != NULL &&
	    version_ok(asked) ? asked : SG_MCP_VERSION);
	if (sg_rand_id(rnd, sizeof(rnd), "", 16) == -1) {
		answer(m, NULL, &e);
		return;
	}
	snprintf(m->session, sizeof(m->session), "mcp_%s", rnd);
	if (sg_store_mcp_add(m->env->store, m->session, m->req->tenant,
	    m->version, client != NULL ? client : "", sg_wall_ms()) !=
	    SG_STORE_OK) {
		answer(m, NULL, &e);
		return;
	}
	r = json_pack("{s:s,s:{s:{s:b},s:{s:b,s:b}},s:{s:s,s:s,s:s},s:s}",
	    "protocolVersion", m->version, "capabilities", "tools",
	    "listChanged", 0, "resources", "subscribe", 0, "listChanged", 0,
	    "serverInfo", "name", "sandgate", "title", "sandgate Python sandbox",
	    /* sandgate has no release number of its own yet. */
	    "version", "0", "instructions", "A Python sandbox. Variables, "
	    "imports and files in /mnt/data stay from one call to the next in "
	    "this session; plots come back as images. run_code runs Python; "
	    "write_file, read_file and list_files work in /mnt/data; "
	    "upload_file puts a file uploaded to the Files API (file-...) "
	    "there; reset starts over in a new sandbox.");
	snprintf(head, sizeof(head), "Mcp-Session-Id: %s\r\n%s", m->session,
	    m->json_ok ? "" : SSE_HEAD);
	msg = r != NULL ? json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id",
	    m->id, "result", r) : NULL;
	text = msg != NULL ? json_dumps(msg, JSON_COMPACT) : NULL;
	/* The session's id goes in the head: its answer is written here. */
	if (text != NULL && sg_http_begin(m->out, m->req, 200, m->json_ok ?
	    "application/json" : "text/event-stream", head) == 0) {
		if (!m->json_ok)
			m->out->write(m->out, "event: message\ndata: ", 21);
		m->out->write(m->out, text, strlen(text));
		if (!m->json_ok)
			m->out->write(m->out, "\n\n", 2);
	}
	free(text);
	json_decref(msg);
}

/* A request in a session: answered on a stream when it may run long
 * (a tool: keepalives and progress while it runs) and the client takes
 * one, else as JSON. A cancelled request gets no answer. */
static void
request(struct sg_mcp *m, const char *method, const json_t *params)
{
	struct sg_mcp_err e = { 0, "", NULL };
	json_t *result = NULL, *id_json;
	char *text;

	m->progress = json_object_get(json_object_get(params, "_meta"),
	    "progressToken");
	if ((id_json = json_copy((json_t *)m->id)) != NULL &&
	    (text = json_dumps(id_json, JSON_ENCODE_ANY | JSON_COMPACT)) !=
	    NULL) {
		sg_copy(m->id_text, sizeof(m->id_text), text);
		free(text);
	}
	json_decref(id_json);
	if (strcmp(method, "tools/call") == 0 && m->sse_ok &&
	    sg_mcp_begin(m) == -1)
		return;
	sg_mcp_keep(m);
	if (sg_mcp_call(m, method, params, &result, &e) == -1 && e.code == 0)
		sg_mcp_err(&e, SG_MCP_INTERNAL, "Internal error");
	/* A session ended under a running call: what the call made is gone
	 * with it. */
	if (m->ended) {
		json_decref(result);
		result = NULL;
		sg_mcp_err(&e, SG_MCP_NO_SESSION, "Session not found");
	}
	if (!m->cancelled)
		answer(m, result, &e);
	json_decref(result);
	json_decref(e.data);
}

/* A notification or a client's response: acted on if it is a cancel. */
static void
notification(struct sg_mcp *m, const char *method, const json_t *params)
{
	const json_t *rid = json_object_get(params, "requestId");
	char *text;

	if (method != NULL && strcmp(method, "notifications/cancelled") == 0 &&
	    (json_is_string(rid) || json_is_integer(rid)) &&
	    (text = json_dumps(rid, JSON_ENCODE_ANY | JSON_COMPACT)) != NULL) {
		sg_store_mcp_cancel(m->env->store, m->session, text);
		free(text);
	}
	empty(m->out, m->req, 202);
}

/* What kind of message msg is: 1 a request, 0 a notification or a
 * response, -1 none (e filled). */
static int
kind_of(const json_t *msg, struct sg_mcp_err *e)
{
	const json_t *id = json_object_get(msg, "id");
	const json_t *method = json_object_get(msg, "method");
	const json_t *params = json_object_get(msg, "params");

	if (!json_is_object(msg) || !json_is_string(json_object_get(msg,
	    "jsonrpc")) || strcmp(json_string_value(json_object_get(msg,
	    "jsonrpc")), "2.0") != 0)
		return sg_mcp_err(e, SG_MCP_INVALID_REQUEST, "Invalid Request: "
		    "not a JSON-RPC 2.0 message");
	if (method == NULL)	/* a response to us: we ask nothing */
		return json_object_get(msg, "result") != NULL ||
		    json_object_get(msg, "error") != NULL ? 0 : sg_mcp_err(e,
		    SG_MCP_INVALID_REQUEST, "Invalid Request: no method");
	if (!json_is_string(method) || (params != NULL &&
	    !json_is_object(params)))
		return sg_mcp_err(e, SG_MCP_INVALID_REQUEST, "Invalid Request: "
		    "method must be a string and params an object");
	if (id == NULL)
		return 0;
	if (!json_is_string(id) && !json_is_integer(id))
		return sg_mcp_err(e, SG_MCP_INVALID_REQUEST, "Invalid Request: "
		    "id must be a string or an integer");
	return 1;
}

/* The body as one JSON-RPC message, or NULL (answered). */
static json_t *
message(const struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;
	json_t *msg;

	if (sg_http_body_bounded(req, SG_JSON_MAX_VALUES, &err) == -1) {
		refuse(out, req, 400, SG_MCP_INVALID_REQUEST, NULL,
		    "Invalid Request: the message is too complex", NULL);
		return NULL;
	}
	/* Any value (a scalar is an invalid request, not a parse error);
	 * a NUL in a string is the tool's to refuse, as bad arguments. */
	msg = json_loadb(req->body != NULL ? req->body : "", req->body_len,
	    JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (msg == NULL)
		refuse(out, req, 400, SG_MCP_PARSE_ERROR, NULL,
		    "Parse error: invalid JSON", NULL);
	else if (json_is_array(msg)) {
		refuse(out, req, 400, SG_MCP_INVALID_REQUEST, NULL,
		    "Invalid Request: batches are not supported", NULL);
		json_decref(msg);
		msg = NULL;
	}
	return msg;
}

/* The transport's own checks of a POST: 0 to go on, or -1 (answered). */
static int
post_ok(struct sg_mcp *m)
{
	const char *ct = m->req->content_type;
	const char *accept = sg_http_param(m->req, "HTTP_ACCEPT");
	const char *v = sg_http_param(m->req, "HTTP_MCP_PROTOCOL_VERSION");
	char msg[160];

	if (ct == NULL || strncasecmp(ct, "application/json", 16) != 0 ||
	    (ct[16] != '\0' && ct[16] != ';' && ct[16] != ' ')) {
		refuse(m->out, m->req, 415, SG_MCP_BAD_REQUEST, NULL,
		    "Unsupported Media Type: Content-Type must be "
		    "application/json", NULL);
		return -1;
	}
	if (!has_type(accept, "application/json") &&
	    !has_type(accept, "text/event-stream")) {
		refuse(m->out, m->req, 406, SG_MCP_BAD_REQUEST, NULL,
		    "Not Acceptable: Accept must include application/json or "
		    "text/event-stream", NULL);
		return -1;
	}
	m->sse_ok = has_type(accept, "text/event-stream");
	m->json_ok = has_type(accept, "application/json");
	if (v != NULL && !version_ok(v)) {
		snprintf(msg, sizeof(msg), "Bad Request: Unsupported protocol "
		    "version: %.40s (supported: " SG_MCP_VERSION ", "
		    SG_MCP_VERSION_PREV ")", v);
		refuse(m->out, m->req, 400, SG_MCP_BAD_REQUEST, NULL, msg, NULL);
		return -1;
	}
	return 0;
}

/* The session the request names, checked: 0 (m->session, m->version
 * set), or -1 (answered: 400 without one, 404 for one that is not the
 * key's or ended). */
static int
session_ok(struct sg_mcp *m, const json_t *id)
{
	const char *s = sg_http_param(m->req, "HTTP_MCP_SESSION_ID");
	int rc;

	if (s == NULL || *s == '\0') {
		refuse(m->out, m->req, 400, SG_MCP_BAD_REQUEST, id,
		    "Bad Request: Mcp-Session-Id header is required", NULL);
		return -1;
	}
	rc = strlen(s) <= SG_STORE_MCP_ID_MAX ? sg_store_mcp_touch(
	    m->env->store, s, m->req->tenant, sg_wall_ms() -
	    (int64_t)m->env->cfg->sessions.ttl * 1000, sg_wall_ms(),
	    m->version) : SG_STORE_NOTFOUND;
	if (rc == SG_STORE_NOTFOUND) {
		refuse(m->out, m->req, 404, SG_MCP_NO_SESSION, id,
		    "Session not found", NULL);
		return -1;
	}
	if (rc != SG_STORE_OK) {
		refuse(m->out, m->req, 503, SG_MCP_INTERNAL, id,
		    "The gateway's store is unavailable; retry shortly.", NULL);
		return -1;
	}
	sg_copy(m->session, sizeof(m->session), s);
	return 0;
}

static void
post(struct sg_mcp *m)
{
	struct sg_mcp_err e = { 0, "", NULL };
	const char *method;
	const json_t *params;
	json_t *msg;
	int kind;

	if (post_ok(m) == -1 || (msg = message(m->req, m->out)) == NULL)
		return;
	if ((kind = kind_of(msg, &e)) == -1) {
		refuse(m->out, m->req, 400, e.code, json_is_object(msg) &&
		    (json_is_string(json_object_get(msg, "id")) ||
		    json_is_integer(json_object_get(msg, "id"))) ?
		    json_object_get(msg, "id") : NULL, e.message, NULL);
		json_decref(msg);
		return;
	}
	m->id = json_object_get(msg, "id");
	method = json_string_value(json_object_get(msg, "method"));
	params = json_object_get(msg, "params");
	if (kind == 1 && strcmp(method, "initialize") == 0)
		initialize(m, params);
	else if (session_ok(m, kind == 1 ? m->id : NULL) == 0) {
		if (kind == 1)
			request(m, method, params);
		else
			notification(m, method, params);
	}
	json_decref(msg);
}

/* DELETE: the session ends, its sandbox with it. */
static void
delete(struct sg_mcp *m)
{
	struct sg_error err;

	if (session_ok(m, NULL) == -1)
		return;
	if (sg_mcp_sandbox_end(m, &err) == -1) {
		refuse(m->out, m->req, err.status >= 400 ? err.status : 500,
		    SG_MCP_INTERNAL, NULL, err.message, NULL);
		return;
	}
	sg_store_mcp_delete(m->env->store, m->session, m->req->tenant);
	empty(m->out, m->req, 200);
}

void
sg_mcp_serve(struct sg_sbx_env *env, struct sg_req *req, struct sg_out *out)
{
	struct sg_mcp m;

	memset(&m, 0, sizeof(m));
	m.env = env;
	m.req = req;
	m.out = out;
	if (strcmp(req->method, "POST") == 0)
		post(&m);
	else if (strcmp(req->method, "DELETE") == 0)
		delete(&m);
	else
		/* Nothing is sent unasked: no stream to hold open for it. */
		refuse(out, req, 405, SG_MCP_BAD_REQUEST, NULL,
		    "Method Not Allowed", ALLOW);
}
