/*
 * GET /v1/organization/requests and /v1/organization/requests/{id}, for
 * admin keys (the caller checked the key): the requests that reached a
 * model or a sandbox, from the ledger (store/usage.h), newest first, with
 * OpenAI's list conventions; one request with its trace's rounds (what
 * each loop round did: the upstream turn, the code and its outputs,
 * timings; [] when none was kept), each code run with the images it made
 * as OpenAI's code interpreter outputs (the list carries no images:
 * megabytes a page). A key is shown by its public id and
 * name, never its hash; the trace holds no key or host (trace.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "org.h"
#include "../../store/store.h"
#include "../../store/usage.h"

#define LIMIT_DEFAULT	20
#define LIMIT_MAX	100
#define TIME_MAX	253402300799LL	/* 9999-12-31, unix s */

/* The list's query, its strings in the arrays. */
struct query {
	struct sg_store_use_lq lq;
	char	 key_id[64], model[128], after[64];
};

/* New reference: s as a JSON string, or null for "". */
static json_t *
text(const char *s)
{
	return s[0] != '\0' ? json_string(s) : json_null();
}

/* New reference: a ledger row as the API shows it. */
static json_t *
item(const struct sg_store_use_row *r)
{
	const struct sg_store_use *u = &r->use;

	return json_pack("{s:s,s:s,s:I,s:s,s:o,s:o,s:o,s:s,s:o,s:b,s:I,"
	    "s:{s:I,s:I,s:I,s:I,s:I},s:I,s:f,s:I,s:{s:f,s:s},s:o,s:b}",
	    "object", "organization.request", "id", u->id, "created_at",
	    (json_int_t)(u->started_ms / 1000), "api_key_id", u->key_id,
	    "key_name", text(u->key_name), "model", text(u->model),
	    "upstream_model", text(u->upstream_model), "surface", u->surface,
	    "status", u->status != 0 ? json_integer(u->status) : json_null(),
	    "aborted", u->aborted, "duration_ms", (json_int_t)u->duration_ms,
	    "usage", "input_tokens", (json_int_t)u->input_tokens,
	    "input_cached_tokens", (json_int_t)u->cached_tokens,
	    "output_tokens", (json_int_t)u->output_tokens, "reasoning_tokens",
	    (json_int_t)u->reasoning_tokens, "num_model_requests",
	    (json_int_t)u->model_requests, "code_runs",
	    (json_int_t)u->code_runs, "sandbox_seconds",
	    (double)u->sandbox_ms / 1000, "sessions", (json_int_t)u->sessions,
	    "cost", "value", (double)(u->cost_input + u->cost_output +
	    u->cost_sandbox) / 1e9, "currency", "usd", "box", text(r->box),
	    "has_trace", r->has_trace);
}

/* A query parameter that is a unix time in s: 0 when absent (*t
 * untouched), 1 when read, -1 with err. */
static int
time_arg(const struct sg_req *req, const char *name, int64_t *t,
    struct sg_error *err)
{
	char v[32], *end;
	long long n;
	int rc;

	if ((rc = sg_http_query(req->uri, name, v, sizeof(v))) == 0)
		return 0;
	errno = 0;
	n = rc == 1 ? strtoll(v, &end, 10) : -1;
	if (rc == -1 || v[0] == '\0' || *end != '\0' || errno != 0 || n < 0 ||
	    n > TIME_MAX)
		return sg_error_invalid(err, name, "invalid_value", "Invalid "
		    "'%s': expected a unix time in seconds.", name);
	*t = n;
	return 1;
}

/* A string parameter into out[sz]: 0 absent ("" then), 1, or -1 with
 * err. */
static int
string_arg(const struct sg_req *req, const char *name, char *out, size_t sz,
    struct sg_error *err)
{
	int rc = sg_http_query(req->uri, name, out, sz);

	if (rc == 0)
		out[0] = '\0';
	if (rc == -1 || (rc == 1 && out[0] == '\0'))
		return sg_error_invalid(err, name, "invalid_value", "Invalid "
		    "'%s': expected a non-empty string of at most %zu bytes.",
		    name, sz - 1);
	return rc;
}

/* The status filter: a number (100-599), or "error" for any not 2xx. */
static int
status_arg(const struct sg_req *req, int *status, struct sg_error *err)
{
	char v[16], *end;
	long n;
	int rc;

	*status = 0;
	if ((rc = sg_http_query(req->uri, "status", v, sizeof(v))) == 0)
		return 0;
	if (rc == 1 && strcmp(v, "error") == 0) {
		*status = -1;
		return 0;
	}
	n = rc == 1 ? strtol(v, &end, 10) : 0;
	if (rc == -1 || v[0] == '\0' || *end != '\0' || n < 100 || n > 599)
		return sg_error_invalid(err, "status", "invalid_value", "Invalid "
		    "'status': expected an HTTP status (100-599) or 'error'.");
	*status = (int)n;
	return 0;
}

/* q from the request's query: 0, or -1 with OpenAI's 400 in err. */
static int
read_query(const struct sg_req *req, struct query *q, struct sg_error *err)
{
	int64_t start = 0, end = 0;
	long limit;
	int desc, rc;

	memset(q, 0, sizeof(*q));
	if (sg_http_page_args(req, LIMIT_DEFAULT, LIMIT_MAX, &limit, &desc,
	    q->after, sizeof(q->after), err) == -1 ||
	    string_arg(req, "api_key_id", q->key_id, sizeof(q->key_id),
	    err) == -1 || string_arg(req, "model", q->model, sizeof(q->model),
	    err) == -1 || status_arg(req, &q->lq.status, err) == -1 ||
	    time_arg(req, "start_time", &start, err) == -1 ||
	    (rc = time_arg(req, "end_time", &end, err)) == -1)
		return -1;
	/* The store's 0 is an open end: none is before the epoch's first
	 * second. */
	if (rc == 1 && end == 0)
		end = -1;
	q->lq.key_id = q->key_id[0] != '\0' ? q->key_id : NULL;
	q->lq.model = q->model[0] != '\0' ? q->model : NULL;
	q->lq.after = q->after[0] != '\0' ? q->after : NULL;
	q->lq.from_ms = start * 1000;
	q->lq.to_ms = end * 1000;
	q->lq.limit = (int)limit;
	q->lq.asc = !desc;
	return 0;
}

/* sg_store_use_list's fn: one row into the list. */
static int
on_row(void *arg, const struct sg_store_use_row *r)
{
	return json_array_append_new(arg, item(r));
}

/* New reference: the list the request asks for, or NULL with err. */
static json_t *
list(const struct sg_org_env *env, const struct sg_req *req,
    struct sg_error *err)
{
	struct query q;
	json_t *data;
	int more, rc;

	if (read_query(req, &q, err) == -1)
		return NULL;
	if ((data = json_array()) == NULL) {
		sg_error_server(err, 500, "Out of memory building the list.");
		return NULL;
	}
	/* An end before the epoch's first second: nothing. */
	if (q.lq.to_ms < 0)
		return sg_http_list(data, 0);
	rc = sg_store_use_list(env->store, &q.lq, on_row, data, &more);
	if (rc == SG_STORE_OK)
		return sg_http_list(data, more);
	json_decref(data);
	if (rc == SG_STORE_NOTFOUND)
		sg_error_invalid(err, "after", "invalid_value", "Invalid 'after': "
		    "no such request among those listed.");
	else
		sg_error_store(err, sg_store_errmsg(env->store));
	return NULL;
}

/* New reference: a request known only by its trace (its ledger row not
 * written yet, or pruned): what the trace says of it. */
static json_t *
from_trace(const struct sg_store_trace_row *t)
{
	return json_pack("{s:s,s:s,s:I,s:s?,s:n,s:s?,s:n,s:n,s:o,s:b,s:I,"
	    "s:n,s:n,s:n,s:n,s:n,s:s?,s:b}", "object", "organization.request",
	    "id", t->id, "created_at", (json_int_t)(t->started_ms / 1000),
	    "api_key_id", t->key_id, "key_name", "model", t->model != NULL &&
	    t->model[0] != '\0' ? t->model : NULL, "upstream_model", "surface",
	    "status", t->status != 0 ? json_integer(t->status) : json_null(),
	    "aborted", 0, "duration_ms", (json_int_t)t->duration_ms, "usage",
	    "code_runs", "sandbox_seconds", "sessions", "cost", "box", t->box,
	    "has_trace", 1);
}

/* Whether image (one of a trace's, trace_img.h) is code run k's of round
 * (one of its rounds). */
static int
image_of(const json_t *image, const json_t *round, size_t k)
{
	const json_t *n = json_object_get(round, "round");

	return json_is_integer(n) && json_integer_value(json_object_get(image,
	    "round")) == json_integer_value(n) && json_is_integer(
	    json_object_get(image, "run")) && json_integer_value(
	    json_object_get(image, "run")) == (json_int_t)k;
}

/* Each code run of rounds (borrowed) gets "outputs": the images of
 * images (borrowed; NULL: none) that are its, as OpenAI's code
 * interpreter outputs {"type": "image", "url"}; [] when none is. */
static void
add_outputs(json_t *rounds, const json_t *images)
{
	json_t *round, *run, *outs;
	const json_t *image, *url;
	size_t i, k, m;

	json_array_foreach(rounds, i, round)
		json_array_foreach(json_object_get(round, "code_runs"), k, run) {
			if ((outs = json_array()) == NULL)
				return;
			json_array_foreach(images, m, image)
				if (image_of(image, round, k) && json_is_string(url =
				    json_object_get(image, "url")))
					json_array_append_new(outs, json_pack(
					    "{s:s,s:O}", "type", "image", "url",
					    url));
			json_object_set_new(run, "outputs", outs);
		}
}

/* New reference: request id with its rounds, or NULL with err. */
static json_t *
one(const struct sg_org_env *env, const char *id, struct sg_error *err)
{
	struct sg_store_use_row r;
	struct sg_store_trace_row t;
	json_t *o = NULL, *rounds = NULL, *images = NULL;
	int urc, trc;

	urc = sg_store_use_get(env->store, id, &r);
	trc = urc == SG_STORE_OK || urc == SG_STORE_NOTFOUND ?
	    sg_store_trace_get(env->store, id, &t) : urc;
	if ((urc != SG_STORE_OK && urc != SG_STORE_NOTFOUND) ||
	    (trc != SG_STORE_OK && trc != SG_STORE_NOTFOUND)) {
		sg_error_store(err, sg_store_errmsg(env->store));
		goto done;
	}
	if (urc == SG_STORE_NOTFOUND && trc == SG_STORE_NOTFOUND) {
		sg_error_set(err, 404, "invalid_request_error", NULL, "id",
		    "No such request: %s", id);
		goto done;
	}
	if (trc == SG_STORE_OK && t.rounds != NULL)
		rounds = json_loads(t.rounds, 0, NULL);
	if (!json_is_array(rounds)) {
		json_decref(rounds);
		rounds = json_array();
	}
	if (trc == SG_STORE_OK && t.images != NULL)
		images = json_loads(t.images, 0, NULL);
	add_outputs(rounds, json_is_array(images) ? images : NULL);
	/* The ledger's row when written; has_trace as the trace is now. */
	o = urc == SG_STORE_OK ? item(&r) : from_trace(&t);
	if (o != NULL) {
		json_object_set_new(o, "has_trace", json_boolean(trc ==
		    SG_STORE_OK));
		json_object_set(o, "rounds", rounds);
	} else
		sg_error_server(err, 500, "Out of memory building the request.");
done:
	json_decref(rounds);
	json_decref(images);
	if (trc == SG_STORE_OK)
		sg_store_trace_clear(&t);
	return o;
}

void
sg_org_requests(const struct sg_org_env *env, enum sg_route route,
    const char *id, struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;
	json_t *body;
	char *text = NULL;

	body = route == SG_ROUTE_ORG_REQ_GET ? one(env, id, &err) :
	    list(env, req, &err);
	/* 15 digits: a cost of 0.06 reads 0.06 (as org_usage.c). */
	if (body != NULL && (text = json_dumps(body, JSON_COMPACT |
	    JSON_REAL_PRECISION(15))) == NULL)
		sg_error_server(&err, 500, "Out of memory writing the answer.");
	if (text == NULL)
		sg_http_error(out, req, &err);
	else if (sg_http_begin(out, req, 200, "application/json", NULL) == 0)
		sg_http_write(out, text, strlen(text));
	free(text);
	json_decref(body);
}
