/*
 * e2b: the control plane (create, delete, timeout) and the code
 * interpreter's NDJSON /execute on port 49999 of the sandbox
 * (../shared/reference/e2b-protocol.md). Handle: {"id", "token"?,
 * "traffic"?, "domain"?}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "../lib/log.h"
#include "../lib/util.h"

#define E2B_API		"https://api.e2b.app"
#define E2B_DOMAIN	"e2b.app"
#define E2B_TEMPLATE	"code-interpreter-v1"
#define E2B_MAX_LIFE	3600	/* the Hobby plan's maximum, in seconds */
#define CI_PORT		49999	/* the code interpreter */
#define ENVD_PORT	49983	/* envd: files */
#define DATA_DIR	"/mnt/data"	/* OpenAI's: the code's files */
#define CONTROL_MS	60000
#define PORT_RETRIES	5	/* "port is not open" right after create */
#define STALL_PAUSE_MS	1000	/* for an interrupt to land, see run_unstalled */

static void	data_context(struct sg_prov *, const struct sg_tool *,
		    json_t *handle);

/* The proxy's answer right after create, before the sandbox's port
 * listens: worth asking again a few times. */
static int
port_closed(long status, const char *body)
{
	return status == 502 && body != NULL &&
	    strstr(body, "port is not open") != NULL;
}

static const char *
api(const struct sg_tool *t)
{
	return t->api_base != NULL ? t->api_base : E2B_API;
}

static void
control_headers(const struct sg_tool *t, struct sg_hdrs *h)
{
	sg_hdrs_add(h, "X-API-Key", t->api_key);
	sg_hdrs_add(h, "Accept", "application/json");
}

json_t *
sg_e2b_create_body(const struct sg_tool *t, const char *sbx_id, int lifetime_s)
{
	return json_pack("{s:s,s:i,s:b,s:b,s:{s:s}}",
	    "templateID", t->template != NULL ? t->template : E2B_TEMPLATE,
	    /* Always sent: e2b's default is 15 s. */
	    "timeout", lifetime_s < E2B_MAX_LIFE ? lifetime_s : E2B_MAX_LIFE,
	    "secure", 1, "allow_internet_access", t->allow_internet_access,
	    "metadata", "sandgate_id", sbx_id);
}

static int
e2b_create(struct sg_prov *p, const struct sg_tool *t, const char *sbx_id,
    int lifetime_s, json_t **handle, struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	json_t *body, *resp = NULL;
	const char *id, *v;
	char url[1024];
	long status = 0;
	int rc;

	*handle = NULL;
	if (t->api_key == NULL)
		return sg_prov_fail(err, SG_PROV_CONFIG, 0, "sandbox tool %s has "
		    "no e2b api_key%s%s", t->name, t->api_key_problem ? ": " : "",
		    t->api_key_problem ? t->api_key_problem : "");
	snprintf(url, sizeof(url), "%s/sandboxes", api(t));
	body = sg_e2b_create_body(t, sbx_id, lifetime_s);
	control_headers(t, &h);
	rc = sg_phttp_call(p, "POST", url, &h, body, CONTROL_MS, &status, &resp,
	    err);
	json_decref(body);
	sg_hdrs_free(&h);
	if (rc != SG_PROV_OK)
		return rc;
	id = json_string_value(json_object_get(resp, "sandboxID"));
	if (status != 201 && status != 200) {
		rc = sg_phttp_status_error("e2b", t, "create", status, resp, err);
		json_decref(resp);
		return rc == SG_PROV_GONE ? sg_prov_fail(err, SG_PROV_FAILED,
		    404, "%s", err->message) : rc;
	}
	if (id == NULL) {
		json_decref(resp);
		return sg_prov_fail(err, SG_PROV_FAILED, (int)status, "e2b: "
		    "create answered without a sandboxID");
	}
	*handle = json_pack("{s:s}", "id", id);
	if ((v = json_string_value(json_object_get(resp, "envdAccessToken"))))
		json_object_set_new(*handle, "token", json_string(v));
	if ((v = json_string_value(json_object_get(resp, "trafficAccessToken"))))
		json_object_set_new(*handle, "traffic", json_string(v));
	if ((v = json_string_value(json_object_get(resp, "domain"))))
		json_object_set_new(*handle, "domain", json_string(v));
	json_decref(resp);
	data_context(p, t, *handle);
	return SG_PROV_OK;
}

/* Where /execute lives: sandbox_url (routed by the E2b-Sandbox-*
 * headers), or https://49999-<id>.<domain>. */
/* The URL of what path names on the sandbox's port (the code
 * interpreter's 49999, envd's 49983). */
static void
sandbox_url(const struct sg_tool *t, const json_t *handle, int port,
    const char *path, char *url, size_t sz)
{
	const char *domain = json_string_value(json_object_get(handle, "domain"));
	const char *id = json_string_value(json_object_get(handle, "id"));

	if (t->sandbox_url != NULL) {
		sg_join(url, sz, t->sandbox_url, path, NULL);
		return;
	}
	/* With api_base https://api.<domain>, sandboxes live on <domain>. */
	if (domain == NULL && t->api_base != NULL &&
	    strncmp(t->api_base, "https://api.", 12) == 0)
		domain = t->api_base + 12;
	snprintf(url, sz, "https://%d-%s.%s%s", port, id,
	    domain != NULL ? domain : E2B_DOMAIN, path);
}

void
sg_e2b_execute_url(const struct sg_tool *t, const json_t *handle, char *url,
    size_t sz)
{
	sandbox_url(t, handle, CI_PORT, "/execute", url, sz);
}

/* The headers every call into the sandbox on port carries. */
static void
sandbox_headers(const json_t *handle, int port, struct sg_hdrs *h)
{
	const char *tok = json_string_value(json_object_get(handle, "token"));
	const char *traffic = json_string_value(json_object_get(handle,
	    "traffic"));
	char num[24];

	sg_hdrs_add(h, "E2b-Sandbox-Id",
	    json_string_value(json_object_get(handle, "id")));
	sg_hdrs_add(h, "E2b-Sandbox-Port", sg_dec(num, sizeof(num), port));
	if (tok != NULL)
		sg_hdrs_add(h, "X-Access-Token", tok);
	if (traffic != NULL)
		sg_hdrs_add(h, "E2B-Traffic-Access-Token", traffic);
}

/*
 * The code's working directory is OpenAI's /mnt/data: envd makes it, and
 * the code interpreter starts a context there that every run names (the
 * default context stays in /home/user). Best effort: without it the code
 * runs in the default context, and finds its files by their full path.
 */
static void
data_context(struct sg_prov *p, const struct sg_tool *t, json_t *handle)
{
	struct sg_prov_error err;
	struct sg_hdrs h = { 0 };
	json_t *body, *resp = NULL;
	const char *ctx;
	char url[1024];
	long status = 0;
	int rc, try;

	sandbox_url(t, handle, ENVD_PORT, "", url, sizeof(url));
	sandbox_headers(handle, ENVD_PORT, &h);
	rc = sg_envd_mkdir(p, url, &h, DATA_DIR, &err);
	sg_hdrs_free(&h);
	body = json_pack("{s:s,s:s}", "language", "python", "cwd", DATA_DIR);
	sandbox_url(t, handle, CI_PORT, "/contexts", url, sizeof(url));
	sandbox_headers(handle, CI_PORT, &h);
	/* Right after create the proxy may not see the port yet. */
	for (try = 0; rc == SG_PROV_OK; try++) {
		json_decref(resp);
		resp = NULL;
		rc = sg_phttp_call(p, "POST", url, &h, body, CONTROL_MS, &status,
		    &resp, &err);
		if (rc != SG_PROV_OK || try >= PORT_RETRIES ||
		    !port_closed(status, sg_phttp_message(resp, "")))
			break;
		usleep(200000);
	}
	ctx = json_string_value(json_object_get(resp, "id"));
	if (rc == SG_PROV_OK && status == 200 && ctx != NULL)
		json_object_set_new(handle, "context", json_string(ctx));
	else
		sg_log("sandgate: e2b sandbox %s: no context in %s (%s); "
		    "its code runs in the default one", json_string_value(
		    json_object_get(handle, "id")), DATA_DIR, rc != SG_PROV_OK ?
		    err.message : sg_phttp_message(resp, "no message"));
	json_decref(resp);
	json_decref(body);
	sg_hdrs_free(&h);
}

/* One POST /execute; right after create the proxy may not see the port
 * yet, so "port is not open" is tried again a few times. */
static int
execute(struct sg_prov *p, const char *url, const struct sg_hdrs *h,
    const json_t *body, int timeout_s, struct sg_exec *res, long *status,
    char **errbody, struct sg_prov_error *err)
{
	struct sg_lines lines = { .fn = sg_exec_e2b_line, .res = res,
	    .stall_check = 1 };
	int rc, try;

	for (try = 0;; try++) {
		rc = sg_phttp_stream(p, url, h, body, timeout_s, &lines, status,
		    errbody, err);
		if (rc != SG_PROV_OK || !port_closed(*status, *errbody) ||
		    try >= PORT_RETRIES)
			return rc;
		free(*errbody);
		*errbody = NULL;
		usleep(200000);
	}
}

/* Wait before a run is sent again: 0, or STOPPED when the client left,
 * TIMEOUT when the request's time is up. */
static int
stall_pause(struct sg_prov *p, struct sg_prov_error *err)
{
	int64_t until = sg_now_ms() + STALL_PAUSE_MS;

	while (sg_now_ms() < until) {
		if (p->stop != NULL && p->stop(p->stop_arg))
			return sg_prov_fail(err, SG_PROV_STOPPED, 0, "stopped: "
			    "the client went away");
		if (p->deadline_ms > 0 && sg_now_ms() >= p->deadline_ms)
			return sg_prov_fail(err, SG_PROV_TIMEOUT, 0, "no answer "
			    "in time");
		usleep(50000);
	}
	return SG_PROV_OK;
}

/*
 * A run that gets keepalives and never starts was sent while the server
 * was still interrupting a run cut off before it: the kernel aborted it
 * and the server never says so. It is sent once more after a pause, in
 * what is left of its time; a second stall is reported, not waited out.
 */
static int
run_unstalled(struct sg_prov *p, const char *url, const struct sg_hdrs *h,
    const json_t *body, int timeout_s, struct sg_exec *res, long *status,
    int *gone, struct sg_prov_error *err)
{
	int64_t t0 = sg_now_ms();
	size_t cap = res->cap;
	char *errbody = NULL;
	int rc, left;

	rc = execute(p, url, h, body, timeout_s, res, status, &errbody, err);
	if (res->stalled) {
		fprintf(stderr, "sandgate: e2b run stalled behind an interrupted "
		    "one; sending it again\n");
		left = timeout_s - (int)((sg_now_ms() - t0) / 1000);
		sg_exec_free(res);
		sg_exec_init(res, cap);
		free(errbody);
		errbody = NULL;
		if ((rc = stall_pause(p, err)) == SG_PROV_OK)
			rc = execute(p, url, h, body, left > 1 ? left : 1, res,
			    status, &errbody, err);
		if (res->stalled)
			rc = sg_prov_fail(err, SG_PROV_FAILED, 0, "the sandbox's "
			    "kernel did not start the run: it is still stopping "
			    "an earlier one. Try again in a moment.");
	}
	if (rc == SG_PROV_OK && *status != 200)
		/* The body is the proxy's or the server's: it may name hosts,
		 * so it goes to the log only. */
		sg_log("sandgate: e2b /execute answered HTTP %ld: "
		    "%.300s", *status, errbody != NULL ? errbody : "");
	/* The proxy's 502 for a sandbox it no longer has. */
	*gone = rc == SG_PROV_OK && *status == 502 && errbody != NULL &&
	    strstr(errbody, "not found") != NULL;
	free(errbody);
	return rc;
}

static int
e2b_run(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *code, int timeout_s, struct sg_exec *res,
    struct sg_prov_error *err)
{
	const char *id = json_string_value(json_object_get(handle, "id"));
	struct sg_hdrs h = { 0 };
	char url[1024];
	json_t *body;
	long status = 0;
	int rc, gone;

	if (id == NULL)
		return sg_prov_fail(err, SG_PROV_GONE, 0, "e2b handle without id");
	sg_e2b_execute_url(t, handle, url, sizeof(url));
	sandbox_headers(handle, CI_PORT, &h);
	sg_hdrs_add(&h, "Accept", "application/json");
	body = json_pack("{s:s,s:s*}", "code", code, "context_id",
	    json_string_value(json_object_get(handle, "context")));
	rc = run_unstalled(p, url, &h, body, timeout_s, res, &status, &gone,
	    err);
	json_decref(body);
	sg_hdrs_free(&h);
	rc = sg_exec_timeout(res, rc, status, timeout_s);
	if (gone)
		rc = sg_prov_fail(err, SG_PROV_GONE, 502, "e2b sandbox %s is "
		    "gone (timed out or killed)", id);
	else if (rc == SG_PROV_OK && status != 200)
		rc = sg_prov_fail(err, SG_PROV_FAILED, (int)status, "e2b: the "
		    "code interpreter answered HTTP %ld", status);
	else if (rc == SG_PROV_OK && !res->ended)
		rc = sg_prov_fail(err, SG_PROV_FAILED, 0, "e2b: the run's stream "
		    "ended without end_of_execution");
	return rc;
}

/* DELETE or POST .../timeout: 204 is done, 404 gone. */
static int
control_call(struct sg_prov *p, const struct sg_tool *t, const char *method,
    const char *url, const json_t *body, const char *what,
    struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	json_t *resp = NULL;
	long status = 0;
	int rc;

	control_headers(t, &h);
	rc = sg_phttp_call(p, method, url, &h, body, CONTROL_MS, &status, &resp,
	    err);
	sg_hdrs_free(&h);
	if (rc == SG_PROV_OK && status / 100 != 2)
		rc = sg_phttp_status_error("e2b", t, what, status, resp, err);
	json_decref(resp);
	return rc;
}

static int
e2b_destroy(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    struct sg_prov_error *err)
{
	char url[1024];

	snprintf(url, sizeof(url), "%s/sandboxes/%s", api(t),
	    json_string_value(json_object_get(handle, "id")));
	return control_call(p, t, "DELETE", url, NULL, "delete", err);
}

static int
e2b_keepalive(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    int lifetime_s, struct sg_prov_error *err)
{
	char url[1024];
	json_t *body;
	int rc;

	snprintf(url, sizeof(url), "%s/sandboxes/%s/timeout", api(t),
	    json_string_value(json_object_get(handle, "id")));
	body = json_pack("{s:i}", "timeout", lifetime_s < E2B_MAX_LIFE ?
	    lifetime_s : E2B_MAX_LIFE);
	rc = control_call(p, t, "POST", url, body, "keepalive", err);
	json_decref(body);
	return rc;
}

/* The list filtered by the label create set (its ids: [a-z0-9_], so only
 * the '=' needs encoding). */
static int
e2b_find(struct sg_prov *p, const struct sg_tool *t, const char *sbx_id,
    json_t **handle, struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	json_t *resp = NULL;
	const char *id;
	char url[1024];
	long status = 0;
	int rc;

	*handle = NULL;
	snprintf(url, sizeof(url), "%s/v2/sandboxes?metadata=sandgate_id%%3D%s",
	    api(t), sbx_id);
	control_headers(t, &h);
	rc = sg_phttp_call(p, "GET", url, &h, NULL, CONTROL_MS, &status, &resp,
	    err);
	sg_hdrs_free(&h);
	if (rc == SG_PROV_OK && status != 200)
		rc = sg_phttp_status_error("e2b", t, "list", status, resp, err);
	else if (rc == SG_PROV_OK) {
		id = json_string_value(json_object_get(json_array_get(resp, 0),
		    "sandboxID"));
		if (id != NULL)
			*handle = json_pack("{s:s}", "id", id);
		else
			rc = sg_prov_fail(err, SG_PROV_GONE, 404, "e2b has no "
			    "sandbox labelled %s", sbx_id);
	}
	json_decref(resp);
	return rc;
}

/* An envd call through the sandbox's port 49983. */
static int
e2b_envd(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const struct sg_envd_req *r, struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	char base[1024];
	int rc;

	if (json_string_value(json_object_get(handle, "id")) == NULL)
		return sg_prov_fail(err, SG_PROV_GONE, 0, "e2b handle without id");
	sandbox_url(t, handle, ENVD_PORT, "", base, sizeof(base));
	sandbox_headers(handle, ENVD_PORT, &h);
	rc = sg_envd(p, base, &h, r, err);
	sg_hdrs_free(&h);
	return rc;
}

static int
e2b_put(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *path, int fd, int64_t size, struct sg_prov_error *err)
{
	struct sg_envd_req r = { SG_ENVD_PUT, path, fd, size, 0, NULL };

	return e2b_envd(p, t, handle, &r, err);
}

static int
e2b_list(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *dir, size_t max, json_t **files, struct sg_prov_error *err)
{
	struct sg_envd_req r = { SG_ENVD_LIST, dir, -1, 0, max, files };

	*files = NULL;
	return e2b_envd(p, t, handle, &r, err);
}

static int
e2b_get(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *path, int fd, int64_t max, struct sg_prov_error *err)
{
	struct sg_envd_req r = { SG_ENVD_GET, path, fd, max, 0, NULL };

	return e2b_envd(p, t, handle, &r, err);
}

const struct sg_provider_ops sg_e2b_ops = {
	e2b_create, e2b_run, e2b_destroy, e2b_keepalive, e2b_find, e2b_put,
	e2b_list, e2b_get,
};
