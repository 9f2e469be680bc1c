/*
 * OpenAI's Usage and Costs APIs over the ledger (store/usage.h): GET
 * /v1/organization/usage/completions, .../code_interpreter_sessions and
 * /v1/organization/costs, for admin keys (the caller checked the key).
 *
 * A page is one store query, never more: the page's buckets, every one
 * in the answer (an empty one with results [], as OpenAI's), filled from
 * the ledger's sums. What sandgate counts:
 *  - completions: num_model_requests is the calls made to the upstream
 *    model (each turn of the loop) and the tokens are summed over them;
 *    only requests that called a model count;
 *  - code_interpreter_sessions: num_sessions, the sandboxes created;
 *  - costs: USD from the ledger's nano-dollars, summed exactly before
 *    they become a number; by line_item "<model>, input", "<model>,
 *    output" (quantity in tokens) and "code interpreter sessions, <tool>".
 *    A result that comes to nothing is left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "org.h"
#include "org_query.h"
#include "../../store/store.h"
#include "../../store/usage.h"

/* One cost being summed, in nano-USD. */
struct line {
	int64_t		 bucket;
	char		 item[300];	/* "": not grouped by line_item */
	char		 key_id[32];	/* "": not grouped by api_key_id */
	int64_t		 nano;
	int64_t		 qty;		/* tokens; -1: none */
};

/* The page being answered. */
struct page {
	const struct sg_orgq *q;
	json_t		*data;		/* the buckets: borrowed */
	int64_t		 nbuckets;
	struct line	*lines;		/* costs, owned */
	size_t		 nlines, cap;
	size_t		 first;		/* costs: the current bucket's first */
	int64_t		 cur;		/* and that bucket */
	int		 oom;
};

/* s into buf[256] without a character cut short at its end: the ledger
 * keeps names in fields of fixed size. */
static const char *
whole(const char *s, char buf[256])
{
	size_t n = strlen(s) < 255 ? strlen(s) : 255;
	json_t *j = NULL;

	memcpy(buf, s, n);
	while (n > 0 && (j = json_stringn(buf, n)) == NULL)
		n--;
	json_decref(j);
	buf[n] = '\0';
	return buf;
}

/* New reference: s as a JSON string, or null for NULL and "". */
static json_t *
text(const char *s)
{
	char buf[256];

	if (s == NULL || whole(s, buf)[0] == '\0')
		return json_null();
	return json_string(buf);
}

/* New reference: s's column when the query groups by it, else null. */
static json_t *
grouped(const struct sg_orgq *q, int by, const char *s)
{
	return (q->by & by) ? text(s) : json_null();
}

static json_t *
compl_result(const struct sg_orgq *q, const struct sg_store_use_sum *s)
{
	return json_pack("{s:s,s:I,s:I,s:I,s:i,s:i,s:I,s:n,s:n,s:o,s:o,s:n,"
	    "s:n}", "object", "organization.usage.completions.result",
	    "input_tokens", (json_int_t)s->input_tokens, "output_tokens",
	    (json_int_t)s->output_tokens, "input_cached_tokens",
	    (json_int_t)s->cached_tokens, "input_audio_tokens", 0,
	    "output_audio_tokens", 0, "num_model_requests",
	    (json_int_t)s->model_requests, "project_id", "user_id",
	    "api_key_id", grouped(q, SG_USE_BY_KEY, s->key_id), "model",
	    grouped(q, SG_USE_BY_MODEL, s->model), "batch", "service_tier");
}

/* OpenAI's members, and sandgate's own (the console charts them): the
 * seconds code ran and the runs, which OpenAI's API has no member for. */
static json_t *
ci_result(const struct sg_orgq *q, const struct sg_store_use_sum *s)
{
	json_t *r = json_pack("{s:s,s:I,s:n,s:f,s:I}", "object",
	    "organization.usage.code_interpreter_sessions.result",
	    "num_sessions", (json_int_t)s->sessions, "project_id",
	    "sandbox_seconds", (double)s->sandbox_ms / 1000, "num_code_runs",
	    (json_int_t)s->code_runs);

	if (r != NULL && (q->by & SG_USE_BY_KEY))
		json_object_set_new(r, "api_key_id", text(s->key_id));
	return r;
}

/* nano more of item (and key) in bucket: merged into the bucket's line
 * of the same item and key, as sums arrive in bucket order. */
static int
cost_add(struct page *p, int64_t bucket, const char *item, const char *key,
    int64_t nano, int64_t qty)
{
	struct line *l;
	size_t i;

	if (bucket != p->cur) {
		p->cur = bucket;
		p->first = p->nlines;
	}
	for (i = p->first; i < p->nlines; i++) {
		l = &p->lines[i];
		if (l->bucket == bucket && strcmp(l->item, item) == 0 &&
		    strcmp(l->key_id, key) == 0) {
			l->nano += nano;
			l->qty += qty >= 0 ? qty : 0;
			return 0;
		}
	}
	if (p->nlines == p->cap) {
		size_t cap = p->cap != 0 ? p->cap * 2 : 64;

		if ((l = realloc(p->lines, cap * sizeof(*l))) == NULL)
			return -1;
		p->lines = l;
		p->cap = cap;
	}
	l = &p->lines[p->nlines++];
	l->bucket = bucket;
	sg_copy(l->item, sizeof(l->item), item);
	sg_copy(l->key_id, sizeof(l->key_id), key);
	l->nano = nano;
	l->qty = qty;
	return 0;
}

static int
cost_lines(struct page *p, const struct sg_store_use_sum *s)
{
	const char *key = (p->q->by & SG_USE_BY_KEY) && s->key_id != NULL ?
	    s->key_id : "";
	char item[300], model[256], tool[256];

	if (s->model == NULL || whole(s->model, model)[0] == '\0')
		snprintf(model, sizeof(model), "unknown model");
	whole(s->tool != NULL ? s->tool : "", tool);

	if (!p->q->by_line)
		return cost_add(p, s->bucket, "", key, s->cost_input +
		    s->cost_output + s->cost_sandbox, -1);
	snprintf(item, sizeof(item), "%s, input", model);
	if (cost_add(p, s->bucket, item, key, s->cost_input,
	    s->input_tokens) == -1)
		return -1;
	snprintf(item, sizeof(item), "%s, output", model);
	if (cost_add(p, s->bucket, item, key, s->cost_output,
	    s->output_tokens) == -1)
		return -1;
	snprintf(item, sizeof(item), "code interpreter sessions%s%s",
	    tool[0] != '\0' ? ", " : "", tool);
	return cost_add(p, s->bucket, item, key, s->cost_sandbox, -1);
}

static int
results_add(struct page *p, int64_t bucket, json_t *r)
{
	return json_array_append_new(json_object_get(json_array_get(p->data,
	    (size_t)bucket), "results"), r);
}

/* sg_store_use_sum's fn: one sum into its bucket. */
static int
on_sum(void *arg, const struct sg_store_use_sum *s)
{
	struct page *p = arg;
	int rc;

	if (s->bucket < 0 || s->bucket >= p->nbuckets)
		return 0;	/* not this page's: the store's to answer */
	switch (p->q->kind) {
	case SG_ORGQ_COMPL:
		rc = results_add(p, s->bucket, compl_result(p->q, s));
		break;
	case SG_ORGQ_CI:
		rc = results_add(p, s->bucket, ci_result(p->q, s));
		break;
	default:
		rc = cost_lines(p, s);
		break;
	}
	if (rc == -1)
		p->oom = 1;
	return rc;
}

/* The summed costs into their buckets' results. */
static int
costs_write(struct page *p)
{
	const struct sg_orgq *q = p->q;
	const struct line *l;
	json_t *r;
	size_t i;

	for (i = 0; i < p->nlines; i++) {
		l = &p->lines[i];
		if (l->nano == 0)
			continue;
		r = json_pack("{s:s,s:{s:f,s:s},s:o,s:n,s:o,s:o,s:o}", "object",
		    "organization.costs.result", "amount", "value",
		    (double)l->nano / 1e9, "currency", "usd", "line_item",
		    q->by_line ? text(l->item) : json_null(), "project_id",
		    "api_key_id", grouped(q, SG_USE_BY_KEY, l->key_id),
		    "quantity", l->qty >= 0 ? json_integer(l->qty) :
		    json_null(), "quantity_unit", l->qty >= 0 ?
		    json_string("tokens") : json_null());
		if (results_add(p, l->bucket, r) == -1)
			return -1;
	}
	return 0;
}

/* New reference: the page's buckets, empty, into p->data. */
static json_t *
buckets(const struct sg_orgq *q, int64_t n)
{
	json_t *data = json_array();
	int64_t i, t;

	for (i = 0; data != NULL && i < n; i++) {
		t = q->page + i * q->width;
		if (json_array_append_new(data, json_pack("{s:s,s:I,s:I,s:[]}",
		    "object", "bucket", "start_time", (json_int_t)t, "end_time",
		    (json_int_t)(t + q->width), "results")) == -1) {
			json_decref(data);
			data = NULL;
		}
	}
	return data;
}

/* New reference: the page q asks for, or NULL with err. */
static json_t *
page_of(const struct sg_org_env *env, const struct sg_orgq *q,
    struct sg_error *err)
{
	struct page p = { .q = q, .cur = -1 };
	struct sg_store_use_q sq;
	char cursor[24];
	int64_t left = (q->end - q->page) / q->width;
	int more = left > q->limit;
	json_t *page = NULL;

	p.nbuckets = more ? q->limit : left;
	if ((p.data = buckets(q, p.nbuckets)) == NULL)
		goto oom;
	if (p.nbuckets > 0 && !q->none) {
		memset(&sq, 0, sizeof(sq));
		sq.from_ms = q->page * 1000;
		sq.to_ms = (q->page + p.nbuckets * q->width) * 1000;
		sq.bucket_ms = q->width * 1000;
		sq.by = q->by;
		sq.key_ids = (const char **)q->key_ids;
		sq.nkey_ids = q->nkey_ids;
		sq.models = (const char **)q->models;
		sq.nmodels = q->nmodels;
		sq.models_only = q->kind == SG_ORGQ_COMPL;
		sq.sessions_only = q->kind == SG_ORGQ_CI;
		if (sg_store_use_sum(env->store, &sq, on_sum, &p) !=
		    SG_STORE_OK) {
			if (p.oom)
				goto oom;
			sg_error_store(err, sg_store_errmsg(env->store));
			goto done;
		}
		if (q->kind == SG_ORGQ_COSTS && costs_write(&p) == -1)
			goto oom;
	}
	sg_orgq_cursor(q->page + p.nbuckets * q->width, cursor);
	page = json_pack("{s:s,s:O,s:b,s:o}", "object", "page", "data", p.data,
	    "has_more", more, "next_page", more ? json_string(cursor) :
	    json_null());
	if (page != NULL)
		goto done;
oom:
	sg_error_server(err, 500, "Out of memory building the page.");
done:
	json_decref(p.data);
	free(p.lines);
	return page;
}

void
sg_org_usage(const struct sg_org_env *env, enum sg_route route,
    struct sg_req *req, struct sg_out *out)
{
	enum sg_orgq_kind kind = route == SG_ROUTE_ORG_USAGE_CI ? SG_ORGQ_CI :
	    route == SG_ROUTE_ORG_COSTS ? SG_ORGQ_COSTS : SG_ORGQ_COMPL;
	struct sg_orgq q;
	struct sg_error err;
	json_t *page = NULL;
	char *body = NULL;

	if (sg_orgq_read(req->uri, kind, env->now_ms, &q, &err) == -1 ||
	    (page = page_of(env, &q, &err)) == NULL)
		goto fail;
	/* 15 digits: a cost of 0.06 reads 0.06, not 0.059999999999999998. */
	if ((body = json_dumps(page, JSON_COMPACT |
	    JSON_REAL_PRECISION(15))) == NULL) {
		sg_error_server(&err, 500, "Out of memory writing the page.");
		goto fail;
	}
	if (sg_http_begin(out, req, 200, "application/json", NULL) == 0)
		sg_http_write(out, body, strlen(body));
	goto done;
fail:
	sg_http_error(out, req, &err);
done:
	free(body);
	json_decref(page);
	sg_orgq_free(&q);
}
