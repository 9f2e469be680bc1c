#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "auth.h"
#include "bg_api.h"
#include "bg_out.h"
#include "cfiles.h"
#include "console.h"
#include "containers.h"
#include "conv_api.h"
#include "files_api.h"
#include "gw_int.h"
#include "meter.h"
#include "org.h"
#include "resp_api.h"
#include "sandbox_api.h"
#include "../http/router.h"
#include "../loop/loop.h"
#include "../loop/rewrite.h"
#include "../mcp/mcp.h"
#include "../state/convo.h"
#include "../state/ledger.h"
#include "../state/metrics.h"
#include "../state/sandbox.h"
#include "../upstream/upstream.h"
#include "../../lib/jdump.h"
#include "../../lib/jscan.h"
#include "../../lib/util.h"
#include "../../store/store.h"

#define ADMIT_RETRY	"retry-after: 1\r\n"	/* seconds: load moves fast */

int
sg_gw_store_open(const struct sg_cfg *cfg, struct sg_store **out, char *err,
    size_t errsz)
{
	if (sg_store_open(cfg->store.url != NULL ? cfg->store.url :
	    cfg->store.path, out, err, errsz) != SG_STORE_OK)
		return -1;
	if (cfg->store.box != NULL && sg_store_set_box(*out, cfg->store.box) !=
	    SG_STORE_OK) {
		snprintf(err, errsz, "%s", sg_store_errmsg(*out));
		sg_store_close(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

const char *
sg_gw_store_name(const struct sg_cfg *cfg)
{
	return cfg->store.url != NULL ? "PostgreSQL store" : cfg->store.path;
}

int
sg_gw_new(const struct sg_cfg *cfg, struct sg_gw **out, char *err,
    size_t errsz)
{
	struct sg_gw *gw;

	*out = NULL;
	if ((gw = calloc(1, sizeof(*gw))) == NULL) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	gw->cfg = cfg;
	gw->store_ok_ms = INT64_MIN / 2;	/* never */
	sg_prov_init(&gw->prov);
	if (sg_gw_store_open(cfg, &gw->store, err, errsz) != 0) {
		free(gw);
		return -1;
	}
	if ((gw->up = sg_upstream_new()) == NULL) {
		snprintf(err, errsz, "cannot make a libcurl handle");
		sg_gw_free(gw);
		return -1;
	}
	/* Relayed response ids are recorded per key in the store. */
	sg_upstream_use_store(gw->up, gw->store);
	*out = gw;
	return 0;
}

void
sg_gw_free(struct sg_gw *gw)
{
	if (gw == NULL)
		return;
	sg_upstream_free(gw->up);
	sg_prov_free(&gw->prov);
	sg_store_close(gw->store);
	free(gw);
}

void
sg_gw_set_metrics(struct sg_gw *gw, sg_metrics_fn fn, void *arg)
{
	gw->metrics = fn;
	gw->metrics_arg = arg;
}

void
sg_gw_set_admit(struct sg_gw *gw, sg_admit_fn fn, void *arg)
{
	gw->admit = fn;
	gw->admit_arg = arg;
}

void
sg_gw_set_load(struct sg_gw *gw, sg_load_fn fn, void *arg)
{
	gw->load = fn;
	gw->load_arg = arg;
}

int
sg_gw_streams(const struct sg_req *req)
{
	/* A container file comes as a form (streamed) or as JSON naming
	 * an uploaded file (read whole, like any JSON body). */
	return sg_route_streams(sg_route_find(req->method, req->path)) &&
	    req->content_type != NULL && strncasecmp(req->content_type,
	    "multipart/form-data", 19) == 0;
}

/*
 * A request's id: the time first, so ids that sort by time keep the
 * ledger's and the traces' id indexes appending (random ones would touch
 * a page of their own each: callgrind and the WAL's size said so); then
 * 48 random bits drawn once per process and a count of its requests, so
 * ids stay unique without a getrandom() each. 32 hex digits. An id
 * names a request; it grants nothing (every route that reads one by id
 * checks the caller's key).
 */
static void
req_id(char *out, size_t outsz, int64_t wall_ms)
{
	static pid_t drawn_in;
	static char proc[16];
	static uint32_t seq;

	if (outsz < 37)
		return;
	if (drawn_in != sg_pid()) {
		if (sg_rand_id(proc, sizeof(proc), "", 6) == -1) {
			snprintf(out, outsz, "req_unknown");
			return;
		}
		drawn_in = sg_pid();
	}
	/* req_, 12 digits of the time, 12 of proc, 8 of the count. */
	memcpy(out, "req_", 4);
	sg_hex(out + 4, (uint64_t)wall_ms, 12);
	memcpy(out + 16, proc, 12);
	sg_hex(out + 28, ++seq, 8);
	out[36] = '\0';
}

void
sg_gw_req_init(const struct sg_cfg *cfg, struct sg_req *req)
{
	req->start_ms = sg_now_ms();
	req->wall_ms = sg_wall_ms();
	req_id(req->id, sizeof(req->id), req->wall_ms);
	if (sg_route_path(cfg->server.mount_prefix, req->uri, req->path,
	    sizeof(req->path)) == -1)
		req->path[0] = '\0';
}

/* Parse and check the body of a model route. New reference or NULL with
 * err filled; *dups tells a body that names a key twice (its last
 * value counts here, so its bytes may not go upstream as they came: an
 * upstream that took the first would see another model). */
static json_t *
model_body(const struct sg_req *req, int *dups, struct sg_error *err)
{
	const char *text = req->body != NULL ? req->body : "";
	json_error_t jerr;
	json_t *body, *model;

	if (sg_http_body_bounded(req, SG_JSON_MAX_VALUES, err) == -1)
		return NULL;
	/* A text refused for a key twice is taken keeping the last. */
	body = sg_jparse_err(text, req->body_len, SG_JPARSE_NODUP, &jerr);
	*dups = body == NULL &&
	    json_error_code(&jerr) == json_error_duplicate_key &&
	    (body = sg_jparse_err(text, req->body_len, 0, &jerr)) != NULL;
	if (body == NULL) {
		sg_error_invalid(err, NULL, NULL, "We could not parse the JSON "
		    "body of your request: %s (line %d, column %d).", jerr.text,
		    jerr.line, jerr.column);
		return NULL;
	}
	if (!json_is_object(body)) {
		json_decref(body);
		sg_error_invalid(err, NULL, "invalid_type", "The body of your "
		    "request must be a JSON object.");
		return NULL;
	}
	model = json_object_get(body, "model");
	if (model == NULL || json_is_null(model)) {
		json_decref(body);
		sg_error_invalid(err, "model", "missing_required_parameter",
		    "Missing required parameter: 'model'.");
		return NULL;
	}
	if (!json_is_string(model)) {
		json_decref(body);
		sg_error_invalid(err, "model", "invalid_type", "Invalid type for "
		    "'model': expected a string.");
		return NULL;
	}
	return body;
}

static void watch(struct sg_gw *, const struct sg_req *, struct sg_out *);

/*
 * The loop serves a request whose code tool sandgate runs, and on
 * /v1/responses one whose state sandgate holds: every one when the gateway
 * keeps the model's conversations, else one that names sandgate's ids.
 * A code tool with interception off goes to the upstream as it is.
 */
static int
looped(struct sg_gw *gw, const struct sg_cfg_model *m, enum sg_surface s,
    const json_t *body, const struct sg_req *req)
{
	/* A Chat-only upstream's Responses are all sandgate's (bridged);
	 * so is a background job, in its runner. */
	if (s == SG_SURFACE_RESPONSES && (m->api == SG_API_CHAT ||
	    req->resp_id[0] != '\0'))
		return 1;
	if (sg_rw_wants_code(body))
		return gw->cfg->interception.enabled;
	return s == SG_SURFACE_RESPONSES && (m->state == SG_STATE_GATEWAY ||
	    sg_conv_needed(gw->store, req, body));
}
static void unwatch(struct sg_gw *);

/* The loop serves it. A stored Responses stream keeps its events as it
 * goes, so a client that lost it resumes (GET ?stream=true); a runner's
 * output keeps them already. */
static void
run_loop(struct sg_gw *gw, const struct sg_cfg_model *m,
    enum sg_surface surface, const json_t *body, struct sg_req *req,
    struct sg_out *out)
{
	struct sg_sbx_env sbx = { gw->cfg, gw->store, &gw->prov, req->key };
	struct sg_loop_env env = { gw->cfg, gw->up, &sbx };
	struct sg_bgo *tee = NULL;

	if (surface == SG_SURFACE_RESPONSES && gw->store != NULL &&
	    req->resp_id[0] == '\0' &&
	    json_is_true(json_object_get(body, "stream")) &&
	    !json_is_false(json_object_get(body, "store")))
		tee = sg_bgo_tee(gw->store, req->tenant, out);
	if (tee != NULL)
		out = sg_bgo_out(tee);
	watch(gw, req, out);
	sg_loop_run(&env, m, surface, body, req, out);
	unwatch(gw);
	sg_bgo_free(tee);
}

static int
model_route(struct sg_gw *gw, struct sg_req *req, struct sg_out *out,
    enum sg_surface surface, struct sg_error *err)
{
	const struct sg_cfg_model *m;
	const char *name;
	json_t *body;
	char *text = NULL;
	size_t len = 0;
	int rc, changed;

	if ((body = model_body(req, &changed, err)) == NULL)
		return -1;
	name = json_string_value(json_object_get(body, "model"));
	sg_copy(req->model, sizeof(req->model), name);
	if ((m = sg_cfg_model(gw->cfg, name)) == NULL) {
		sg_error_set(err, 404, "invalid_request_error", "model_not_found",
		    "model", "The model `%s` does not exist or you do not have "
		    "access to it.", name);
		json_decref(body);
		return -1;
	}
	if (m->api_base == NULL || (m->api_key == NULL &&
	    m->api_key_problem != NULL)) {
		sg_error_server(err, 500, "Model %s is not usable on this "
		    "gateway: %s.", name, m->api_key_problem);
		json_decref(body);
		return -1;
	}
	if (surface == SG_SURFACE_RESPONSES && m->api == SG_API_CHAT &&
	    sg_rw_wants_code(body) && !gw->cfg->interception.enabled) {
		sg_error_set(err, 400, "invalid_request_error",
		    "unsupported_parameter", "tools", "The code_interpreter tool "
		    "needs interception on a model whose upstream speaks only "
		    "Chat Completions.");
		json_decref(body);
		return -1;
	}
	/* Queued here, run later in a runner (which sets resp_id). */
	if (surface == SG_SURFACE_RESPONSES && req->resp_id[0] == '\0' &&
	    sg_bg_wanted(body)) {
		rc = sg_bg_queue(gw->cfg, gw->store, m, body, req, out, err);
		json_decref(body);
		return rc;
	}
	sg_use_model(name, m->model != NULL ? m->model : name);
	if (looped(gw, m, surface, body, req)) {
		run_loop(gw, m, surface, body, req, out);
		json_decref(body);
		return 0;
	}
	if (m->model != NULL && strcmp(m->model, name) != 0) {
		json_object_set_new(body, "model", json_string(m->model));
		changed = 1;
	}
	changed |= sg_meter_stream(surface, body, req);
	/* A body nothing changed goes as the client sent it: a dump costs
	 * as much as the parse. */
	if (changed && (text = sg_jdump_text(body, &len)) == NULL) {
		json_decref(body);
		return sg_error_server(err, 500, "out of memory");
	}
	json_decref(body);
	rc = sg_upstream_relay(gw->up, m, surface, text != NULL ? text :
	    req->body, text != NULL ? len : req->body_len,
	    req->start_ms + (int64_t)gw->cfg->server.request_timeout * 1000,
	    req, out, err);
	free(text);
	return rc;
}

static int
client_gone(void *arg)
{
	struct sg_out *out = arg;

	return !out->alive(out);
}

/* Provider calls give up with the request, or when the client leaves. */
static void
watch(struct sg_gw *gw, const struct sg_req *req, struct sg_out *out)
{
	gw->prov.deadline_ms = req->start_ms +
	    (int64_t)gw->cfg->server.request_timeout * 1000;
	gw->prov.stop = client_gone;
	gw->prov.stop_arg = out;
}

static void
unwatch(struct sg_gw *gw)
{
	gw->prov.stop = NULL;
	gw->prov.stop_arg = NULL;
}

static void
sandbox_route(struct sg_gw *gw, enum sg_route route, const char *id,
    struct sg_req *req, struct sg_out *out)
{
	struct sg_sbx_env env = { gw->cfg, gw->store, &gw->prov, req->key };

	watch(gw, req, out);
	if (route >= SG_ROUTE_CNTR_CREATE && route <= SG_ROUTE_CNTR_DELETE)
		sg_cntr_api(&env, route, id, req, out);
	else if (route >= SG_ROUTE_CFILE_CREATE &&
	    route <= SG_ROUTE_CFILE_CONTENT)
		sg_cfile_api(&env, route, id, req, out);
	else
		sg_sbx_api(&env, route, id, req, out);
	unwatch(gw);
}

static void
files_route(struct sg_gw *gw, enum sg_route route, const char *id,
    struct sg_req *req, struct sg_out *out)
{
	struct sg_files_env env = { gw->cfg, gw->store };

	sg_files_api(&env, route, id, req, out);
}

/* Model and sandbox routes, uploads and downloads hold a responder for
 * long; the rest answer at once and must keep answering when the heavy
 * ones fill the pool. */
static int
route_heavy(enum sg_route route)
{
	return route != SG_ROUTE_HEALTHZ && route != SG_ROUTE_METRICS &&
	    route != SG_ROUTE_MODELS && route != SG_ROUTE_RESP_GET &&
	    route != SG_ROUTE_RESP_DELETE && route != SG_ROUTE_RESP_ITEMS &&
	    route != SG_ROUTE_RESP_CANCEL &&
	    route != SG_ROUTE_FILE_LIST && route != SG_ROUTE_FILE_GET &&
	    route != SG_ROUTE_FILE_DELETE && route != SG_ROUTE_CNTR_LIST &&
	    route != SG_ROUTE_CNTR_GET && route != SG_ROUTE_CFILE_LIST &&
	    route != SG_ROUTE_CFILE_GET && route != SG_ROUTE_CFILE_DELETE &&
	    (route < SG_ROUTE_CONV_CREATE || route > SG_ROUTE_CONV_ITEM_DELETE) &&
	    sg_route_authed(route) != SG_AUTH_ADMIN;
}

/* A GET of a response that follows its stream holds a responder as long
 * as the stream lasts: it waits its turn as a stream made anew does. */
static int
follows(enum sg_route route, const struct sg_req *req)
{
	char v[8];

	return route == SG_ROUTE_RESP_GET && sg_http_query(req->uri, "stream",
	    v, sizeof(v)) == 1 && strcmp(v, "true") == 0;
}

/* A routed request, its key known (the admin API's, or a tenant's). */
static void
dispatch(struct sg_gw *gw, enum sg_route route, const char *id,
    struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;
	int rc = 0;

	/* A key past its limits is told at once, never queued. */
	if ((route != SG_ROUTE_MCP || sg_mcp_runs(req)) &&
	    sg_meter_admit(gw->cfg, gw->store, route, req, out) == -1)
		return;
	if (gw->admit != NULL && gw->admit(gw->admit_arg, req,
	    (route_heavy(route) && route != SG_ROUTE_MCP) ||
	    follows(route, req) || (route == SG_ROUTE_MCP && sg_mcp_runs(req)),
	    out, &err) == -1) {
		sg_http_error_head(out, req, &err, ADMIT_RETRY);
		return;
	}
	sg_meter_begin(route, req);
	switch (route) {
	case SG_ROUTE_HEALTHZ:
		sg_gw_healthz(gw, req, out);
		break;
	case SG_ROUTE_METRICS:
		sg_gw_metrics(gw, req, out);
		break;
	case SG_ROUTE_MODELS:
		sg_gw_models(gw, req, out);
		break;
	case SG_ROUTE_CHAT:
		rc = model_route(gw, req, out, SG_SURFACE_CHAT, &err);
		break;
	case SG_ROUTE_RESPONSES:
		rc = model_route(gw, req, out, SG_SURFACE_RESPONSES, &err);
		break;
	case SG_ROUTE_SBX_CREATE:
	case SG_ROUTE_SBX_LIST:
	case SG_ROUTE_SBX_GET:
	case SG_ROUTE_SBX_DELETE:
	case SG_ROUTE_SBX_RUN:
	case SG_ROUTE_CODE:
	case SG_ROUTE_CNTR_CREATE:
	case SG_ROUTE_CNTR_LIST:
	case SG_ROUTE_CNTR_GET:
	case SG_ROUTE_CNTR_DELETE:
	case SG_ROUTE_CFILE_CREATE:
	case SG_ROUTE_CFILE_LIST:
	case SG_ROUTE_CFILE_GET:
	case SG_ROUTE_CFILE_DELETE:
	case SG_ROUTE_CFILE_CONTENT:
		sandbox_route(gw, route, id, req, out);
		break;
	case SG_ROUTE_RESP_GET:
	case SG_ROUTE_RESP_DELETE:
	case SG_ROUTE_RESP_ITEMS:
	case SG_ROUTE_RESP_CANCEL:
		sg_resp_api(gw->cfg, gw->store, route, id, req, out);
		break;
	case SG_ROUTE_FILE_CREATE:
	case SG_ROUTE_FILE_LIST:
	case SG_ROUTE_FILE_GET:
	case SG_ROUTE_FILE_DELETE:
	case SG_ROUTE_FILE_CONTENT:
		files_route(gw, route, id, req, out);
		break;
	case SG_ROUTE_ORG_USAGE_COMPL:
	case SG_ROUTE_ORG_USAGE_CI:
	case SG_ROUTE_ORG_COSTS:
	case SG_ROUTE_ORG_KEY_LIST:
	case SG_ROUTE_ORG_KEY_CREATE:
	case SG_ROUTE_ORG_KEY_GET:
	case SG_ROUTE_ORG_KEY_UPDATE:
	case SG_ROUTE_ORG_KEY_DELETE:
	case SG_ROUTE_ORG_REQ_LIST:
	case SG_ROUTE_ORG_REQ_GET:
	case SG_ROUTE_ORG_OVERVIEW:
	case SG_ROUTE_ORG_SBX_LIST:
	case SG_ROUTE_ORG_SBX_DELETE: {
		struct sg_org_env org = { gw->cfg, gw->store, req->wall_ms,
		    &gw->prov, gw->load, gw->load_arg };

		watch(gw, req, out);
		sg_org_api(&org, route, id, req, out);
		unwatch(gw);
		break;
	}
	case SG_ROUTE_CONV_CREATE:
	case SG_ROUTE_CONV_GET:
	case SG_ROUTE_CONV_UPDATE:
	case SG_ROUTE_CONV_DELETE:
	case SG_ROUTE_CONV_ITEM_LIST:
	case SG_ROUTE_CONV_ITEM_ADD:
	case SG_ROUTE_CONV_ITEM_GET:
	case SG_ROUTE_CONV_ITEM_DELETE:
		sg_conv_api(gw->store, route, id, req, out);
		break;
	case SG_ROUTE_CONSOLE:
		sg_console_serve(gw->cfg, req, out);
		break;
	case SG_ROUTE_MCP: {
		struct sg_sbx_env env = { gw->cfg, gw->store, &gw->prov,
		    req->key };

		watch(gw, req, out);
		sg_mcp_serve(&env, req, out);
		unwatch(gw);
		break;
	}
	case SG_ROUTE_NONE:
	case SG_ROUTE_NROUTES:
		break;
	}
	if (rc == -1 && !out->started)
		sg_http_error(out, req, &err);
	sg_meter_end(gw->cfg, gw->store, route, req, out);
}

void
sg_gw_handle(struct sg_gw *gw, struct sg_req *req, struct sg_out *out)
{
	char id[128];
	enum sg_route route = sg_route_match(req->method, req->path, id,
	    sizeof(id));
	struct sg_auth who;
	struct sg_error err;

	if (route == SG_ROUTE_NONE && sg_console_match(gw->cfg, req->path))
		route = SG_ROUTE_CONSOLE;
	if (route == SG_ROUTE_NONE && sg_mcp_match(gw->cfg, req->path))
		route = SG_ROUTE_MCP;
	req->route = route;
	if (route == SG_ROUTE_NONE) {
		sg_error_set(&err, 404, "invalid_request_error", NULL, NULL,
		    "Invalid URL (%s %s)", req->method, req->path[0] != '\0' ?
		    req->path : req->uri);
		sg_http_error(out, req, &err);
		return;
	}
	if (route == SG_ROUTE_MCP && sg_mcp_origin_refused(req, out))
		return;
	if (sg_route_authed(route) != SG_AUTH_NONE) {
		if ((sg_route_authed(route) == SG_AUTH_ADMIN ? sg_auth_admin :
		    sg_auth_check)(gw->cfg, gw->store, req->authorization, &who,
		    &err) == -1) {
			sg_http_error_head(out, req, &err, route == SG_ROUTE_MCP &&
			    err.status == 401 ? sg_mcp_challenge(req) : NULL);
			return;
		}
		sg_copy(req->key_name, sizeof(req->key_name), who.name);
		memcpy(req->tenant, who.tenant, sizeof(req->tenant));
		req->key = who.key;
	}
	dispatch(gw, route, id, req, out);
	if (sg_route_authed(route) != SG_AUTH_NONE) {
		req->key = NULL;
		sg_auth_clear(&who);
	}
}

void
sg_gw_job(struct sg_gw *gw, struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;

	req->route = SG_ROUTE_RESPONSES;
	sg_meter_begin(SG_ROUTE_RESPONSES, req);
	if (model_route(gw, req, out, SG_SURFACE_RESPONSES, &err) == -1 &&
	    !out->started)
		sg_http_error(out, req, &err);
	sg_meter_end(gw->cfg, gw->store, SG_ROUTE_RESPONSES, req, out);
}
