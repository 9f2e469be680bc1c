/*
 * OpenSandbox: the lifecycle server (create, poll, endpoint, delete,
 * renew-expiration) and execd's /code stream inside the sandbox
 * (../shared/reference/opensandbox-protocol.md). api_base includes /v1.
 * Handle: {"id", "execd": base URL, "headers": {…} forwarded on every
 * execd call}.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "../lib/log.h"
#include "../lib/util.h"

#define OSB_IMAGE	"opensandbox/code-interpreter:v1.1.0"
#define OSB_ENTRY	"/opt/code-interpreter/code-interpreter.sh"
#define OSB_MIN_LIFE	60	/* the server refuses shorter timeouts */
#define EXECD_PORT	44772
#define CREATE_MS	180000	/* create may include an image pull */
#define CONTROL_MS	30000
#define READY_MS	60000	/* Running, endpoint and /ping, in all */
#define CONTEXT_MS	60000	/* execd waits for Jupyter: bound it */
#define DATA_DIR	"/mnt/data"	/* OpenAI's: the code's files */
#define POLL_US		200000
#define MAX_FIGURES	10
#define OWN_CELL_CAP	(64u << 10)	/* output of sandgate's own cells,
					 * read and thrown away */

static void
control_headers(const struct sg_tool *t, struct sg_hdrs *h)
{
	if (t->api_key != NULL && t->api_key[0] != '\0')
		sg_hdrs_add(h, "OPEN-SANDBOX-API-KEY", t->api_key);
	sg_hdrs_add(h, "Accept", "application/json");
}

/* One lifecycle call; *resp new or NULL. 2xx → OK, else mapped. */
static int
control(struct sg_prov *p, const struct sg_tool *t, const char *method,
    const char *path, const json_t *body, long ms, const char *what,
    json_t **resp, struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	char url[1024];
	long status = 0;
	int rc;

	*resp = NULL;
	snprintf(url, sizeof(url), "%s%s", t->api_base, path);
	control_headers(t, &h);
	rc = sg_phttp_call(p, method, url, &h, body, ms, &status, resp, err);
	sg_hdrs_free(&h);
	if (rc == SG_PROV_OK && status / 100 != 2)
		rc = sg_phttp_status_error("OpenSandbox", t, what, status, *resp,
		    err);
	return rc;
}

json_t *
sg_osb_create_body(const struct sg_tool *t, const char *sbx_id, int lifetime_s)
{
	char cpu[16], mem[32];
	json_t *b;

	snprintf(cpu, sizeof(cpu), "%d", t->cpu > 0 ? t->cpu : 1);
	snprintf(mem, sizeof(mem), "%dMi", t->memory_mb);
	b = json_pack("{s:{s:s},s:[s],s:i,s:{s:s,s:s},s:{s:s}}",
	    "image", "uri", t->image != NULL ? t->image : OSB_IMAGE,
	    "entrypoint", OSB_ENTRY,
	    "timeout", lifetime_s > OSB_MIN_LIFE ? lifetime_s : OSB_MIN_LIFE,
	    "resourceLimits", "cpu", cpu, "memory", mem,
	    /* Label values are limited to 63 characters: the short id. */
	    "metadata", "sandgate-id", sbx_id);
	if (b != NULL && !t->allow_internet_access)
		json_object_set_new(b, "networkPolicy", json_pack("{s:s,s:[]}",
		    "defaultAction", "deny", "egress"));
	return b;
}

static const char *
state_of(const json_t *sandbox)
{
	const char *s = json_string_value(json_object_get(json_object_get(
	    sandbox, "status"), "state"));

	return s != NULL ? s : "";
}

static int
wait_running(struct sg_prov *p, const struct sg_tool *t, const char *id,
    const json_t *created, int64_t until, struct sg_prov_error *err)
{
	char path[256], st[32];
	json_t *resp;
	int rc;

	sg_copy(st, sizeof(st), state_of(created));
	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	/* Any state we do not know counts as "not yet". */
	while (strcmp(st, "Running") != 0) {
		if (strcmp(st, "Failed") == 0 || strcmp(st, "Terminated") == 0 ||
		    strcmp(st, "Stopping") == 0)
			return sg_prov_fail(err, SG_PROV_FAILED, 0, "OpenSandbox "
			    "sandbox %s entered %s", id, st);
		if (sg_now_ms() >= until)
			return sg_prov_fail(err, SG_PROV_TIMEOUT, 0, "OpenSandbox "
			    "sandbox %s was not Running in time", id);
		usleep(POLL_US);
		if ((rc = control(p, t, "GET", path, NULL, CONTROL_MS, "status",
		    &resp, err)) != SG_PROV_OK)
			return rc;
		sg_copy(st, sizeof(st), state_of(resp));
		json_decref(resp);
	}
	return SG_PROV_OK;
}

/* The execd endpoint: retried while the server has none yet (404). New
 * handle in *handle. */
static int
resolve_endpoint(struct sg_prov *p, const struct sg_tool *t, const char *id,
    int64_t until, json_t **handle, struct sg_prov_error *err)
{
	const char *ep, *scheme;
	char path[256], base[1024];
	json_t *resp, *hdrs;
	int rc;

	snprintf(path, sizeof(path), "/sandboxes/%s/endpoints/%d", id,
	    EXECD_PORT);
	for (;;) {
		rc = control(p, t, "GET", path, NULL, CONTROL_MS, "endpoint",
		    &resp, err);
		ep = json_string_value(json_object_get(resp, "endpoint"));
		if (rc == SG_PROV_OK && ep != NULL)
			break;
		json_decref(resp);
		if (rc != SG_PROV_OK && rc != SG_PROV_GONE)
			return rc;
		if (sg_now_ms() >= until)
			return sg_prov_fail(err, SG_PROV_TIMEOUT, 0, "OpenSandbox: "
			    "no execd endpoint for %s in time", id);
		usleep(POLL_US);
	}
	/* No scheme: take the api_base's. A path, if any, stays. */
	scheme = strncmp(t->api_base, "https:", 6) == 0 ? "https" : "http";
	if (strncmp(ep, "http://", 7) == 0 || strncmp(ep, "https://", 8) == 0)
		sg_copy(base, sizeof(base), ep);
	else
		snprintf(base, sizeof(base), "%s://%s", scheme, ep);
	while (base[0] != '\0' && base[strlen(base) - 1] == '/')
		base[strlen(base) - 1] = '\0';
	hdrs = json_object_get(resp, "headers");
	*handle = json_pack("{s:s,s:s,s:O}", "id", id, "execd", base,
	    "headers", json_is_object(hdrs) ? hdrs : json_object());
	json_decref(resp);
	return SG_PROV_OK;
}

static int
wait_ping(struct sg_prov *p, const json_t *handle, int64_t until,
    struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	char url[1100];
	json_t *resp;
	long status = 0;
	int rc;

	snprintf(url, sizeof(url), "%s/ping", json_string_value(
	    json_object_get(handle, "execd")));
	sg_osb_execd_headers(handle, &h);
	for (;;) {
		rc = sg_phttp_call(p, "GET", url, &h, NULL, CONTROL_MS, &status,
		    &resp, err);
		json_decref(resp);
		if (rc == SG_PROV_OK && status == 200)
			break;
		if (rc == SG_PROV_STOPPED || sg_now_ms() >= until) {
			sg_hdrs_free(&h);
			return rc == SG_PROV_STOPPED ? rc : sg_prov_fail(err,
			    SG_PROV_TIMEOUT, 0, "OpenSandbox: execd did not "
			    "answer /ping in time");
		}
		usleep(POLL_US);
	}
	sg_hdrs_free(&h);
	return SG_PROV_OK;
}

static int
osb_destroy_id(struct sg_prov *p, const struct sg_tool *t, const char *id,
    struct sg_prov_error *err)
{
	char path[256];
	json_t *resp;
	int rc;

	snprintf(path, sizeof(path), "/sandboxes/%s", id);
	rc = control(p, t, "DELETE", path, NULL, CONTROL_MS, "delete", &resp,
	    err);
	json_decref(resp);
	return rc;
}

/* One JSON POST to execd: OK with its 200 answer in *resp (new). */
static int
execd_post(struct sg_prov *p, const json_t *handle, const char *path,
    json_t *body, json_t **resp, struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	char url[1100];
	long status = 0;
	int rc;

	*resp = NULL;
	snprintf(url, sizeof(url), "%s%s", json_string_value(json_object_get(
	    handle, "execd")), path);
	sg_osb_execd_headers(handle, &h);
	rc = sg_phttp_call(p, "POST", url, &h, body, CONTEXT_MS, &status, resp,
	    err);
	json_decref(body);
	sg_hdrs_free(&h);
	if (rc == SG_PROV_OK && status != 200)
		rc = sg_prov_fail(err, SG_PROV_FAILED, (int)status, "HTTP %ld: %s",
		    status, sg_phttp_message(*resp, "no message"));
	return rc;
}

/*
 * The code's working directory is OpenAI's /mnt/data: execd makes it,
 * and a code context started there is the one every run names. Best
 * effort: without it the code runs in the default context (/workspace)
 * and finds its files by their full path.
 */
static void
data_context(struct sg_prov *p, json_t *handle)
{
	struct sg_prov_error err;
	json_t *resp;
	const char *ctx;
	int rc;

	rc = execd_post(p, handle, "/directories", json_pack("{s:{s:i}}",
	    DATA_DIR, "mode", 755), &resp, &err);
	json_decref(resp);
	resp = NULL;
	if (rc == SG_PROV_OK)
		rc = execd_post(p, handle, "/code/context", json_pack("{s:s,s:s}",
		    "language", "python", "cwd", DATA_DIR), &resp, &err);
	if (rc == SG_PROV_OK && (ctx = json_string_value(json_object_get(resp,
	    "id"))) != NULL)
		json_object_set_new(handle, "context", json_string(ctx));
	else
		sg_log("sandgate: OpenSandbox sandbox: no context in %s "
		    "(%s); its code runs in the default one", DATA_DIR,
		    rc != SG_PROV_OK ? err.message : "no id");
	json_decref(resp);
}

static int
osb_create(struct sg_prov *p, const struct sg_tool *t, const char *sbx_id,
    int lifetime_s, json_t **handle, struct sg_prov_error *err)
{
	struct sg_prov_error ignored;
	json_t *body, *resp;
	int64_t until;
	char *id;
	int rc;

	*handle = NULL;
	/* A key the config names but could not read: never go keyless. */
	if (t->api_base == NULL || t->api_key_problem != NULL)
		return sg_prov_fail(err, SG_PROV_CONFIG, 0, "sandbox tool %s is "
		    "not usable: %s", t->name, t->api_key_problem != NULL ?
		    t->api_key_problem : "no OpenSandbox api_base");
	body = sg_osb_create_body(t, sbx_id, lifetime_s);
	rc = control(p, t, "POST", "/sandboxes", body, CREATE_MS, "create",
	    &resp, err);
	json_decref(body);
	if (rc != SG_PROV_OK) {
		json_decref(resp);
		return rc == SG_PROV_GONE ? sg_prov_fail(err, SG_PROV_FAILED,
		    404, "%s", err->message) : rc;
	}
	if (json_string_value(json_object_get(resp, "id")) == NULL) {
		json_decref(resp);
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "OpenSandbox: create "
		    "answered without an id");
	}
	id = strdup(json_string_value(json_object_get(resp, "id")));
	until = sg_now_ms() + READY_MS;
	rc = wait_running(p, t, id, resp, until, err);
	json_decref(resp);
	if (rc == SG_PROV_OK)
		rc = resolve_endpoint(p, t, id, until, handle, err);
	if (rc == SG_PROV_OK)
		rc = wait_ping(p, *handle, until, err);
	if (rc == SG_PROV_OK)
		data_context(p, *handle);
	if (rc != SG_PROV_OK) {
		/* Created but unusable: it must not outlive this call. */
		osb_destroy_id(p, t, id, &ignored);
		json_decref(*handle);
		*handle = NULL;
	}
	free(id);
	return rc;
}

/* One /code call into res. */
static int
run_cell(struct sg_prov *p, const json_t *handle, const char *code,
    int timeout_s, struct sg_exec *res, struct sg_prov_error *err)
{
	struct sg_lines lines = { .fn = sg_exec_osb_line, .res = res };
	struct sg_hdrs h = { 0 };
	char url[1100], *errbody = NULL;
	json_t *body, *eb;
	long status = 0;
	int rc;

	snprintf(url, sizeof(url), "%s/code", json_string_value(
	    json_object_get(handle, "execd")));
	sg_osb_execd_headers(handle, &h);
	sg_hdrs_add(&h, "Accept", "text/event-stream");
	/* Without a language execd runs the code as a shell command. */
	body = json_pack("{s:s,s:{s:s,s:s*}}", "code", code, "context",
	    "language", "python", "id", json_string_value(json_object_get(
	    handle, "context")));
	rc = sg_phttp_stream(p, url, &h, body, timeout_s, &lines, &status,
	    &errbody, err);
	json_decref(body);
	sg_hdrs_free(&h);
	rc = sg_exec_timeout(res, rc, status, timeout_s);
	if (rc == SG_PROV_OK && status != 200) {
		eb = errbody != NULL ? json_loads(errbody, 0, NULL) : NULL;
		rc = sg_prov_fail(err, status == 404 || status == 502 ?
		    SG_PROV_GONE : SG_PROV_FAILED, (int)status, "OpenSandbox "
		    "execd answered HTTP %ld: %.200s", status,
		    sg_phttp_message(eb, errbody != NULL ? errbody : ""));
		json_decref(eb);
	} else if (rc == SG_PROV_OK && !res->ended)
		rc = sg_prov_fail(err, SG_PROV_FAILED, 0, "OpenSandbox: the run's "
		    "stream ended without execution_complete");
	free(errbody);
	return rc;
}

/* The text of a run's main result as a count of figures; -1 without
 * one, or when it is not a number we can use (the sandbox wrote it). */
static int
result_int(const struct sg_exec *r)
{
	const json_t *first = json_array_get(r->results, 0);
	const char *t = json_string_value(json_object_get(first, "text"));
	char *end;
	long n;

	if (t == NULL)
		return -1;
	n = strtol(t, &end, 10);
	return end != t && *end == '\0' && n >= 0 && n <= INT_MAX ? (int)n :
	    -1;
}

/*
 * A scratch result for one of sandgate's own cells: it may use only what
 * the run's cap has left, so figures cannot multiply the cap. 0, or -1
 * when nothing is left.
 */
static int
scratch_init(struct sg_exec *tmp, const struct sg_exec *res)
{
	if (res->bytes >= res->cap)
		return -1;
	sg_exec_init(tmp, res->cap - res->bytes);
	return 0;
}

/* What a scratch run used, charged to the run. */
static void
scratch_free(struct sg_exec *tmp, struct sg_exec *res)
{
	res->bytes += tmp->bytes;
	sg_exec_free(tmp);
}

/*
 * execd drops Jupyter's display_data, so plt.show() figures never arrive.
 * For code that uses matplotlib, the inline backend is told to keep
 * figures open, and after the run each figure still open is made the last
 * expression of a cell of its own (an execute_result carries image/png),
 * then all are closed. Figures beyond MAX_FIGURES are dropped.
 */
static const char prologue[] =
    "try:\n"
    "    get_ipython().run_line_magic('config', "
    "'InlineBackend.close_figures = False')\n"
    "except Exception:\n"
    "    pass\n";
static const char count_cell[] =
    "import sys as _sg_sys\n"
    "_sg_plt = _sg_sys.modules.get('matplotlib.pyplot')\n"
    "_sg_figs = [_sg_plt.figure(n) for n in _sg_plt.get_fignums()] "
    "if _sg_plt else []\n"
    "len(_sg_figs)\n";
static const char close_cell[] =
    "_sg_plt.close('all') if _sg_plt else None\n";

static void
collect_figures(struct sg_prov *p, const json_t *handle, struct sg_exec *res)
{
	struct sg_prov_error ignored;
	struct sg_exec tmp;
	char cell[64];
	int n, i;
	json_t *r;
	size_t k;

	if (scratch_init(&tmp, res) == -1)
		return;
	n = run_cell(p, handle, count_cell, 30, &tmp, &ignored) == SG_PROV_OK ?
	    result_int(&tmp) : 0;
	scratch_free(&tmp, res);
	for (i = 0; i < n && i < MAX_FIGURES && scratch_init(&tmp, res) == 0;
	    i++) {
		snprintf(cell, sizeof(cell), "_sg_figs[%d]\n", i);
		if (run_cell(p, handle, cell, 30, &tmp, &ignored) == SG_PROV_OK)
			json_array_foreach(tmp.results, k, r) {
				json_object_set_new(r, "is_main_result",
				    json_false());
				json_array_append(res->results, r);
			}
		scratch_free(&tmp, res);
	}
	/* The figures are closed even when the cap is spent. */
	if (n > 0) {
		sg_exec_init(&tmp, OWN_CELL_CAP);
		run_cell(p, handle, close_cell, 30, &tmp, &ignored);
		sg_exec_free(&tmp);
	}
}

static int
osb_run(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *code, int timeout_s, struct sg_exec *res,
    struct sg_prov_error *err)
{
	int plots = strstr(code, "matplotlib") != NULL ||
	    strstr(code, "plt.") != NULL;
	struct sg_prov_error ignored;
	struct sg_exec tmp;
	int rc;

	(void)t;
	if (json_string_value(json_object_get(handle, "execd")) == NULL)
		return sg_prov_fail(err, SG_PROV_GONE, 0, "OpenSandbox handle "
		    "without an execd endpoint");
	if (plots) {
		sg_exec_init(&tmp, OWN_CELL_CAP);
		run_cell(p, handle, prologue, 30, &tmp, &ignored);
		sg_exec_free(&tmp);
	}
	rc = run_cell(p, handle, code, timeout_s, res, err);
	if (rc == SG_PROV_OK && plots)
		collect_figures(p, handle, res);
	return rc;
}

static int
osb_destroy(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    struct sg_prov_error *err)
{
	return osb_destroy_id(p, t, json_string_value(json_object_get(handle,
	    "id")), err);
}

static int
osb_keepalive(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    int lifetime_s, struct sg_prov_error *err)
{
	char path[256], when[64];
	time_t at = time(NULL) + (lifetime_s > OSB_MIN_LIFE ? lifetime_s :
	    OSB_MIN_LIFE);
	json_t *body, *resp;
	int rc;

	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&at));
	snprintf(path, sizeof(path), "/sandboxes/%s/renew-expiration",
	    json_string_value(json_object_get(handle, "id")));
	body = json_pack("{s:s}", "expiresAt", when);
	rc = control(p, t, "POST", path, body, CONTROL_MS, "renew", &resp, err);
	json_decref(body);
	json_decref(resp);
	return rc;
}

/* The list filtered by the label create set (its ids: [a-z0-9_], so only
 * the '=' needs encoding). */
static int
osb_find(struct sg_prov *p, const struct sg_tool *t, const char *sbx_id,
    json_t **handle, struct sg_prov_error *err)
{
	char path[256];
	json_t *resp;
	const char *id;
	int rc;

	*handle = NULL;
	snprintf(path, sizeof(path), "/sandboxes?metadata=sandgate-id%%3D%s",
	    sbx_id);
	rc = control(p, t, "GET", path, NULL, CONTROL_MS, "list", &resp, err);
	if (rc == SG_PROV_OK) {
		id = json_string_value(json_object_get(json_array_get(
		    json_object_get(resp, "items"), 0), "id"));
		if (id != NULL)
			*handle = json_pack("{s:s}", "id", id);
		else
			rc = sg_prov_fail(err, SG_PROV_GONE, 404, "OpenSandbox "
			    "has no sandbox labelled %s", sbx_id);
	}
	json_decref(resp);
	return rc;
}

const struct sg_provider_ops sg_osb_ops = {
	osb_create, osb_run, osb_destroy, osb_keepalive, osb_find, sg_osb_put,
	sg_osb_list, sg_osb_get,
};
