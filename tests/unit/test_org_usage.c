/*
 * core/api/org_usage.c and org_query.c: OpenAI's Usage and Costs APIs
 * driven with a memory-backed sg_out over a made-up ledger. The test
 * stands in for sg_store_use_sum: the Makefile links it with ld's
 * --wrap=sg_store_use_sum, so every call reaches __wrap_sg_store_use_sum
 * below, which sums the rows of `ledger` as the store's contract says
 * (store/usage.h) and records each query it was asked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "../../core/api/org.h"
#include "../../lib/util.h"
#include "../../store/store.h"
#include "../../store/usage.h"
#include "testutil.h"

#define DAY	86400LL
#define HOUR	3600LL
#define T0	1730419200LL		/* 2024-11-01T00:00:00Z */
#define NOW_MS	((T0 + 10 * DAY + 5 * HOUR) * 1000)

/* ---- the made-up ledger ---- */

struct row {
	int64_t		 t;		/* unix s */
	const char	*key, *model, *tool;
	int64_t		 in, cached, out, mreq, sessions;
	int64_t		 c_in, c_out, c_sbx;	/* nano-USD */
};
static struct row ledger[64];
static size_t nledger;

/* What each call asked (lists copied: they are borrowed). */
struct call {
	struct sg_store_use_q	 q;
	char			 keys[4][32], models[4][64];
};
static struct call calls[32];
static int ncalls;
static int store_fails;

int	__wrap_sg_store_use_sum(struct sg_store *,
	    const struct sg_store_use_q *,
	    int (*)(void *, const struct sg_store_use_sum *), void *);

static int
listed(const char **list, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(list[i], s) == 0)
			return 1;
	return n == 0;
}

static int
same(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int
__wrap_sg_store_use_sum(struct sg_store *st, const struct sg_store_use_q *q,
    int (*fn)(void *, const struct sg_store_use_sum *), void *arg)
{
	struct sg_store_use_sum sums[16], *s;
	struct call *c = &calls[ncalls < 32 ? ncalls : 31];
	int64_t b, lo, t;
	size_t i, j, n;

	(void)st;
	ncalls++;
	c->q = *q;
	for (i = 0; i < q->nkey_ids && i < 4; i++)
		snprintf(c->keys[i], sizeof(c->keys[i]), "%s", q->key_ids[i]);
	for (i = 0; i < q->nmodels && i < 4; i++)
		snprintf(c->models[i], sizeof(c->models[i]), "%s",
		    q->models[i]);
	c->q.key_ids = c->q.models = NULL;
	if (store_fails)
		return SG_STORE_ERROR;
	for (b = 0; (lo = q->from_ms + b * q->bucket_ms) < q->to_ms; b++) {
		n = 0;
		for (i = 0; i < nledger; i++) {
			const struct row *r = &ledger[i];
			const char *key = q->by & SG_USE_BY_KEY ? r->key : NULL;
			const char *model = q->by & SG_USE_BY_MODEL ? r->model :
			    NULL;
			const char *tool = q->by & SG_USE_BY_TOOL ? r->tool :
			    NULL;

			t = r->t * 1000;
			if (t < lo || t >= lo + q->bucket_ms || t >= q->to_ms ||
			    !listed(q->key_ids, q->nkey_ids, r->key) ||
			    !listed(q->models, q->nmodels, r->model) ||
			    (q->models_only && r->mreq == 0) ||
			    (q->sessions_only && r->sessions == 0))
				continue;
			for (j = 0; j < n; j++)
				if (same(sums[j].key_id, key) &&
				    same(sums[j].model, model) &&
				    same(sums[j].tool, tool))
					break;
			s = &sums[j];
			if (j == n) {
				memset(s, 0, sizeof(*s));
				s->bucket = b;
				s->key_id = s->key_name = key;
				s->model = model;
				s->tool = tool;
				n++;
			}
			s->requests++;
			s->input_tokens += r->in;
			s->cached_tokens += r->cached;
			s->output_tokens += r->out;
			s->model_requests += r->mreq;
			s->sessions += r->sessions;
			s->cost_input += r->c_in;
			s->cost_output += r->c_out;
			s->cost_sandbox += r->c_sbx;
		}
		for (j = 0; j < n; j++)
			if (fn(arg, &sums[j]) == -1)
				return SG_STORE_ERROR;
	}
	return SG_STORE_OK;
}

static void
add(struct row r)
{
	ledger[nledger++] = r;
}

/* ---- driving the handler ---- */

static char dir[64];
static struct sg_store *store;
static char body[1 << 20];	/* the last answer's body */

static int
setup(void **state)
{
	char path[128], err[256];

	(void)state;
	nledger = 0;
	ncalls = 0;
	store_fails = 0;
	if (tu_mkdtemp(dir, sizeof(dir)) == -1)
		return -1;
	/* A real store, only for sg_store_errmsg: the sums are made up. */
	snprintf(path, sizeof(path), "%s/sg.db", dir);
	if (sg_store_open(path, &store, err, sizeof(err)) != SG_STORE_OK)
		fail_msg("store: %s", err);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	sg_store_close(store);
	tu_rmrf(dir);
	return 0;
}

/* GET route's path with query; the status into *status; the body parsed
 * (new reference) and kept as text in body. */
static json_t *
get(enum sg_route route, const char *query, int *status)
{
	static const char *const paths[] = { "usage/completions",
		"usage/code_interpreter_sessions", "costs" };
	struct sg_org_env env = { NULL, store, NOW_MS, NULL, NULL, NULL };
	struct tu_capture c;
	struct sg_req req;
	char uri[2048];
	const char *p;
	json_t *j;

	tu_capture_init(&c);
	memset(&req, 0, sizeof(req));
	snprintf(uri, sizeof(uri), "/v1/organization/%s?%s",
	    paths[route == SG_ROUTE_ORG_USAGE_COMPL ? 0 :
	    route == SG_ROUTE_ORG_USAGE_CI ? 1 : 2], query);
	req.method = "GET";
	req.uri = uri;
	snprintf(req.id, sizeof(req.id), "req_test");
	sg_org_usage(&env, route, &req, &c.out);
	assert_non_null(c.b.p);
	*status = 0;
	sscanf(c.b.p, "Status: %d", status);
	assert_int_equal(c.out.status, *status);
	assert_non_null(p = strstr(c.b.p, "\r\n\r\n"));
	assert_true(strlen(p + 4) < sizeof(body));
	snprintf(body, sizeof(body), "%s", p + 4);
	free(c.b.p);
	j = json_loads(body, 0, NULL);
	assert_non_null(j);
	return j;
}

/* A 200's page. */
static json_t *
page(enum sg_route route, const char *query)
{
	int status;
	json_t *j = get(route, query, &status);

	if (status != 200)
		fail_msg("%s: %d %s", query, status, body);
	return j;
}

/* The sorted keys of o, comma-joined, into out. */
static const char *
keys_of(const json_t *o, char *out, size_t outsz)
{
	const char *names[32], *k, *tmp;
	json_t *v;
	size_t n = 0, i, j, len = 0;

	json_object_foreach((json_t *)o, k, v)
		if (n < 32)
			names[n++] = k;
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (strcmp(names[j], names[i]) < 0) {
				tmp = names[i];
				names[i] = names[j];
				names[j] = tmp;
			}
	out[0] = '\0';
	for (i = 0; i < n && len < outsz; i++)
		len += (size_t)snprintf(out + len, outsz - len, "%s%s",
		    i > 0 ? "," : "", names[i]);
	return out;
}

static json_t *
bucket(const json_t *pg, size_t i)
{
	return json_array_get(json_object_get(pg, "data"), i);
}

static json_t *
results(const json_t *pg, size_t i)
{
	return json_object_get(bucket(pg, i), "results");
}

static json_int_t
num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	if (!json_is_integer(v))
		fail_msg("%s is not an integer", k);
	return json_integer_value(v);
}

static const char *
str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The result of r whose k is s (NULL: none). */
static json_t *
result_with(const json_t *r, const char *k, const char *s, const char *k2,
    const char *s2)
{
	size_t i;
	json_t *x;

	json_array_foreach(r, i, x)
		if (same(str(x, k), s) && (k2 == NULL || same(str(x, k2), s2)))
			return x;
	return NULL;
}

static double
usd(const json_t *cost)
{
	return json_number_value(json_object_get(json_object_get(cost,
	    "amount"), "value"));
}

/* ---- shapes ---- */

static void
empty_ledger_shapes(void **state)
{
	static const enum sg_route routes[] = { SG_ROUTE_ORG_USAGE_COMPL,
		SG_ROUTE_ORG_USAGE_CI, SG_ROUTE_ORG_COSTS };
	char q[128], k[256];
	json_t *pg, *b;
	size_t i, r;

	(void)state;
	snprintf(q, sizeof(q), "start_time=%lld", T0);
	for (r = 0; r < 3; r++) {
		pg = page(routes[r], q);
		assert_string_equal(keys_of(pg, k, sizeof(k)),
		    "data,has_more,next_page,object");
		assert_string_equal(str(pg, "object"), "page");
		/* 11 days to now, 7 a page by default. */
		assert_int_equal(json_array_size(json_object_get(pg, "data")),
		    7);
		assert_true(json_is_true(json_object_get(pg, "has_more")));
		assert_true(json_is_string(json_object_get(pg, "next_page")));
		for (i = 0; i < 7; i++) {
			b = bucket(pg, i);
			assert_string_equal(keys_of(b, k, sizeof(k)),
			    "end_time,object,results,start_time");
			assert_string_equal(str(b, "object"), "bucket");
			assert_int_equal(num(b, "start_time"), T0 + (int64_t)i *
			    DAY);
			assert_int_equal(num(b, "end_time"), T0 + (int64_t)(i +
			    1) * DAY);
			assert_int_equal(json_array_size(results(pg, i)), 0);
		}
		json_decref(pg);
	}
	assert_int_equal(ncalls, 3);	/* one query a page */
	assert_non_null(strstr(body, "\"next_page\":\"page_"));
}

static void
completions_result_shape(void **state)
{
	char q[128], k[512];
	json_t *pg, *x;

	(void)state;
	add((struct row){ T0 + 60, "key_a", "m1", "local", 100, 10, 50, 3, 1,
	    0, 0, 0 });
	add((struct row){ T0 + 90, "key_b", "m1", "", 5, 0, 1, 1, 0, 0, 0,
	    0 });
	/* A request that called no model (a sandbox route): not counted. */
	add((struct row){ T0 + 95, "key_a", "", "local", 0, 0, 0, 0, 1, 0,
	    0, 0 });
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld", T0, T0 + DAY);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	assert_int_equal(json_array_size(results(pg, 0)), 1);
	x = json_array_get(results(pg, 0), 0);
	assert_string_equal(keys_of(x, k, sizeof(k)), "api_key_id,batch,"
	    "input_audio_tokens,input_cached_tokens,input_tokens,model,"
	    "num_model_requests,object,output_audio_tokens,output_tokens,"
	    "project_id,service_tier,user_id");
	assert_string_equal(str(x, "object"),
	    "organization.usage.completions.result");
	assert_int_equal(num(x, "input_tokens"), 105);
	assert_int_equal(num(x, "input_cached_tokens"), 10);
	assert_int_equal(num(x, "output_tokens"), 51);
	assert_int_equal(num(x, "num_model_requests"), 4);
	assert_int_equal(num(x, "input_audio_tokens"), 0);
	assert_int_equal(num(x, "output_audio_tokens"), 0);
	assert_true(json_is_null(json_object_get(x, "api_key_id")));
	assert_true(json_is_null(json_object_get(x, "model")));
	assert_true(json_is_null(json_object_get(x, "project_id")));
	assert_true(json_is_false(json_object_get(pg, "has_more")));
	assert_true(json_is_null(json_object_get(pg, "next_page")));
	assert_int_equal(calls[0].q.models_only, 1);
	assert_int_equal(calls[0].q.sessions_only, 0);
	assert_int_equal(calls[0].q.by, 0);
	json_decref(pg);
}

static void
sessions_result_shape(void **state)
{
	char q[160], k[256];
	json_t *pg, *x;

	(void)state;
	add((struct row){ T0 + 60, "key_a", "m1", "local", 1, 0, 1, 1, 2, 0,
	    0, 0 });
	add((struct row){ T0 + 70, "key_b", "", "e2b", 0, 0, 0, 0, 1, 0, 0,
	    0 });
	add((struct row){ T0 + DAY + 5, "key_a", "m1", "", 1, 0, 1, 1, 0, 0,
	    0, 0 });
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&group_by[]="
	    "project_id", T0, T0 + 2 * DAY);
	pg = page(SG_ROUTE_ORG_USAGE_CI, q);
	x = json_array_get(results(pg, 0), 0);
	assert_string_equal(keys_of(x, k, sizeof(k)),
	    "num_code_runs,num_sessions,object,project_id,sandbox_seconds");
	assert_string_equal(str(x, "object"),
	    "organization.usage.code_interpreter_sessions.result");
	assert_int_equal(num(x, "num_sessions"), 3);
	assert_true(json_is_null(json_object_get(x, "project_id")));
	assert_int_equal(json_array_size(results(pg, 0)), 1);
	/* Day 2 had a model call and no sandbox made: an empty bucket. */
	assert_int_equal(json_array_size(results(pg, 1)), 0);
	assert_int_equal(calls[0].q.sessions_only, 1);
	assert_int_equal(calls[0].q.models_only, 0);
	assert_int_equal(calls[0].q.by, 0);
	json_decref(pg);
}

/* ---- grouping and filters ---- */

static void
completions_grouped(void **state)
{
	char q[256];
	json_t *pg, *r, *x;

	(void)state;
	add((struct row){ T0 + 60, "key_a", "m1", "local", 100, 0, 50, 3, 0,
	    0, 0, 0 });
	add((struct row){ T0 + 61, "key_b", "m1", "", 5, 0, 1, 1, 0, 0, 0,
	    0 });
	add((struct row){ T0 + 62, "key_a", "m2", "", 7, 0, 2, 1, 0, 0, 0,
	    0 });
	/* By model, as the Node SDK writes arrays (brackets encoded). */
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&group_by%%5B%%5D"
	    "=model", T0, T0 + DAY);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	r = results(pg, 0);
	assert_int_equal(json_array_size(r), 2);
	assert_non_null(x = result_with(r, "model", "m1", NULL, NULL));
	assert_int_equal(num(x, "input_tokens"), 105);
	assert_int_equal(num(x, "num_model_requests"), 4);
	assert_true(json_is_null(json_object_get(x, "api_key_id")));
	assert_non_null(x = result_with(r, "model", "m2", NULL, NULL));
	assert_int_equal(num(x, "input_tokens"), 7);
	assert_int_equal(calls[0].q.by, SG_USE_BY_MODEL);
	json_decref(pg);

	/* By both, one as group_by[]= and one as group_by=. */
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&group_by[]="
	    "api_key_id&group_by=model", T0, T0 + DAY);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	r = results(pg, 0);
	assert_int_equal(json_array_size(r), 3);
	assert_non_null(x = result_with(r, "api_key_id", "key_a", "model",
	    "m1"));
	assert_int_equal(num(x, "input_tokens"), 100);
	assert_non_null(result_with(r, "api_key_id", "key_b", "model", "m1"));
	assert_non_null(result_with(r, "api_key_id", "key_a", "model", "m2"));
	assert_int_equal(calls[1].q.by, SG_USE_BY_KEY | SG_USE_BY_MODEL);
	json_decref(pg);

	/* What sandgate has none of: taken, and null. */
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&group_by="
	    "project_id&group_by=user_id&group_by=batch&group_by=service_tier",
	    T0, T0 + DAY);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	r = results(pg, 0);
	assert_int_equal(json_array_size(r), 1);
	x = json_array_get(r, 0);
	assert_int_equal(num(x, "input_tokens"), 112);
	assert_true(json_is_null(json_object_get(x, "batch")));
	assert_true(json_is_null(json_object_get(x, "service_tier")));
	assert_int_equal(calls[2].q.by, 0);
	json_decref(pg);
}

static void
filters_reach_the_store(void **state)
{
	char q[256];
	json_t *pg, *r;

	(void)state;
	add((struct row){ T0 + 60, "key_a", "m1", "", 100, 0, 50, 3, 0, 0, 0,
	    0 });
	add((struct row){ T0 + 61, "key_b", "m2", "", 5, 0, 1, 1, 0, 0, 0,
	    0 });
	add((struct row){ T0 + 62, "key_c", "m1", "", 7, 0, 2, 1, 0, 0, 0,
	    0 });
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&api_key_ids[]="
	    "key_a&api_key_ids=key_b&models%%5B%%5D=m1", T0, T0 + DAY);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	assert_int_equal(ncalls, 1);
	assert_int_equal(calls[0].q.nkey_ids, 2);
	assert_string_equal(calls[0].keys[0], "key_a");
	assert_string_equal(calls[0].keys[1], "key_b");
	assert_int_equal(calls[0].q.nmodels, 1);
	assert_string_equal(calls[0].models[0], "m1");
	r = results(pg, 0);
	assert_int_equal(json_array_size(r), 1);
	assert_int_equal(num(json_array_get(r, 0), "input_tokens"), 100);
	json_decref(pg);

	/* Costs read api_key_ids, not models (not a costs parameter). */
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&api_key_ids="
	    "key_c&models=m1", T0, T0 + DAY);
	json_decref(page(SG_ROUTE_ORG_COSTS, q));
	assert_int_equal(calls[1].q.nkey_ids, 1);
	assert_string_equal(calls[1].keys[0], "key_c");
	assert_int_equal(calls[1].q.nmodels, 0);
	assert_int_equal(calls[1].q.models_only, 0);

	/* batch=false: every request of sandgate's. */
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&batch=false",
	    T0, T0 + DAY);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	assert_int_equal(ncalls, 3);
	assert_int_equal(num(json_array_get(results(pg, 0), 0),
	    "input_tokens"), 112);
	json_decref(pg);
}

/* Projects, users, batches: sandgate has none, so a filter on them
 * matches nothing, and the store is not asked. */
static void
filters_nothing_matches(void **state)
{
	static const char *const f[] = { "project_ids=proj_1",
		"project_ids[]=proj_1", "user_ids[]=u", "batch=true" };
	char q[256];
	json_t *pg;
	size_t i;

	(void)state;
	add((struct row){ T0 + 60, "key_a", "m1", "", 100, 0, 50, 3, 1, 9, 9,
	    9 });
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&%s", T0,
		    T0 + 2 * DAY, f[i]);
		pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
		assert_int_equal(json_array_size(json_object_get(pg, "data")),
		    2);
		assert_int_equal(json_array_size(results(pg, 0)), 0);
		json_decref(pg);
	}
	assert_int_equal(ncalls, 0);
}

/* ---- buckets ---- */

static void
buckets_aligned_down(void **state)
{
	static const struct { const char *w; int64_t s; } ws[] = {
		{ "1d", DAY }, { "1h", HOUR }, { "1m", 60 } };
	const int64_t start = T0 + 5 * HOUR + 17 * 60 + 17;
	char q[160];
	json_t *pg;
	size_t i;

	(void)state;
	/* Before start_time, in its bucket: the bucket is whole. */
	add((struct row){ T0 + HOUR, "key_a", "m1", "", 4, 0, 1, 1, 0, 0, 0,
	    0 });
	for (i = 0; i < 3; i++) {
		snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&"
		    "bucket_width=%s", (long long)start, (long long)start + 1,
		    ws[i].w);
		pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
		assert_int_equal(json_array_size(json_object_get(pg, "data")),
		    1);
		assert_int_equal(num(bucket(pg, 0), "start_time"), start -
		    start % ws[i].s);
		assert_int_equal(num(bucket(pg, 0), "end_time"), start -
		    start % ws[i].s + ws[i].s);
		assert_int_equal(calls[i].q.from_ms, (start - start %
		    ws[i].s) * 1000);
		assert_int_equal(calls[i].q.to_ms, calls[i].q.from_ms +
		    ws[i].s * 1000);
		assert_int_equal(calls[i].q.bucket_ms, ws[i].s * 1000);
		assert_int_equal(json_array_size(results(pg, 0)), i == 0);
		json_decref(pg);
	}
	/* end_time is rounded up: 1 s into a day takes that day whole. */
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld", T0, T0 + DAY +
	    1);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	assert_int_equal(json_array_size(json_object_get(pg, "data")), 2);
	json_decref(pg);
}

static void
empty_buckets_kept(void **state)
{
	char q[128];
	json_t *pg;

	(void)state;
	add((struct row){ T0 + 2 * HOUR + 5, "key_a", "m1", "", 9, 0, 1, 1, 0,
	    0, 0, 0 });
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&bucket_width=1h",
	    T0, T0 + 4 * HOUR);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	assert_int_equal(json_array_size(json_object_get(pg, "data")), 4);
	assert_int_equal(json_array_size(results(pg, 0)), 0);
	assert_int_equal(json_array_size(results(pg, 1)), 0);
	assert_int_equal(json_array_size(results(pg, 2)), 1);
	assert_int_equal(json_array_size(results(pg, 3)), 0);
	json_decref(pg);
}

static void
window_to_now(void **state)
{
	char q[128];
	json_t *pg;

	(void)state;
	/* Now is 5 h into day 10: its bucket is the window's last. */
	snprintf(q, sizeof(q), "start_time=%lld&bucket_width=1h", T0 +
	    10 * DAY);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	assert_int_equal(json_array_size(json_object_get(pg, "data")), 6);
	assert_int_equal(num(bucket(pg, 5), "end_time"), T0 + 10 * DAY +
	    6 * HOUR);
	json_decref(pg);
	/* A start after now: no bucket, and no store query. */
	snprintf(q, sizeof(q), "start_time=%lld", T0 + 12 * DAY);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	assert_int_equal(json_array_size(json_object_get(pg, "data")), 0);
	assert_true(json_is_false(json_object_get(pg, "has_more")));
	assert_true(json_is_null(json_object_get(pg, "next_page")));
	assert_int_equal(ncalls, 1);
	json_decref(pg);
}

/* ---- pages ---- */

static void
pages_follow_the_cursor(void **state)
{
	char q[256], cursor[64];
	int64_t seen[16], tokens = 0, d;
	json_t *pg, *b;
	size_t i, nseen = 0, sizes[8], npages = 0;

	(void)state;
	for (d = 0; d < 10; d++)
		add((struct row){ T0 + d * DAY + 100, "key_a", "m1", "", d + 1,
		    0, 1, 1, 0, 0, 0, 0 });
	cursor[0] = '\0';
	do {
		snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&limit=3"
		    "%s%s", T0, T0 + 10 * DAY, cursor[0] != '\0' ? "&page=" :
		    "", cursor);
		pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
		assert_true(npages < 8);
		sizes[npages] = json_array_size(json_object_get(pg, "data"));
		/* One store query for this page's buckets only. */
		assert_int_equal(ncalls, npages + 1);
		assert_int_equal(calls[npages].q.to_ms -
		    calls[npages].q.from_ms, (int64_t)sizes[npages] * DAY *
		    1000);
		npages++;
		json_array_foreach(json_object_get(pg, "data"), i, b) {
			assert_true(nseen < 16);
			seen[nseen++] = num(b, "start_time");
			tokens += num(json_array_get(json_object_get(b,
			    "results"), 0), "input_tokens");
		}
		if (json_is_true(json_object_get(pg, "has_more")))
			snprintf(cursor, sizeof(cursor), "%s", str(pg,
			    "next_page"));
		else {
			assert_true(json_is_null(json_object_get(pg,
			    "next_page")));
			cursor[0] = '\0';
		}
		json_decref(pg);
	} while (cursor[0] != '\0');
	assert_int_equal(npages, 4);
	assert_int_equal(sizes[0], 3);
	assert_int_equal(sizes[3], 1);
	/* Every bucket once, in order, none twice. */
	assert_int_equal(nseen, 10);
	for (i = 0; i < nseen; i++)
		assert_int_equal(seen[i], T0 + (int64_t)i * DAY);
	assert_int_equal(tokens, 55);
}

static void
largest_limits_taken(void **state)
{
	char q[160];
	json_t *pg;

	(void)state;
	snprintf(q, sizeof(q), "start_time=%lld&bucket_width=1m&limit=1440",
	    T0);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	assert_int_equal(json_array_size(json_object_get(pg, "data")), 1440);
	json_decref(pg);
	snprintf(q, sizeof(q), "start_time=%lld&limit=31", T0 - 40 * DAY);
	pg = page(SG_ROUTE_ORG_USAGE_CI, q);
	assert_int_equal(json_array_size(json_object_get(pg, "data")), 31);
	json_decref(pg);
	snprintf(q, sizeof(q), "start_time=%lld&limit=180", T0 - 200 * DAY);
	pg = page(SG_ROUTE_ORG_COSTS, q);
	assert_int_equal(json_array_size(json_object_get(pg, "data")), 180);
	json_decref(pg);
}

/* ---- costs ---- */

static void
costs_ledger(void)
{
	/* Day 0: 0.04 + 0.02 + 0.03 (key_a), 0.01 + 0.005 (key_b). */
	add((struct row){ T0 + 60, "key_a", "m1", "local", 100, 0, 50, 2, 1,
	    40000000, 20000000, 30000000 });
	add((struct row){ T0 + 70, "key_b", "m1", "e2b", 25, 0, 0, 1, 1,
	    10000000, 0, 5000000 });
	/* Day 1: a model without a price. */
	add((struct row){ T0 + DAY + 1, "key_a", "m2", "", 9, 0, 9, 1, 0, 0,
	    0, 0 });
}

static void
costs_amounts(void **state)
{
	char q[160], k[256];
	json_t *pg, *x;

	(void)state;
	costs_ledger();
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld", T0, T0 +
	    2 * DAY);
	pg = page(SG_ROUTE_ORG_COSTS, q);
	assert_int_equal(json_array_size(results(pg, 0)), 1);
	x = json_array_get(results(pg, 0), 0);
	assert_string_equal(keys_of(x, k, sizeof(k)), "amount,api_key_id,"
	    "line_item,object,project_id,quantity,quantity_unit");
	assert_string_equal(str(x, "object"), "organization.costs.result");
	assert_string_equal(str(json_object_get(x, "amount"), "currency"),
	    "usd");
	assert_true(json_is_real(json_object_get(json_object_get(x, "amount"),
	    "value")));
	assert_true(fabs(usd(x) - 0.105) < 1e-12);
	assert_non_null(strstr(body, "\"value\":0.105,"));
	assert_true(json_is_null(json_object_get(x, "line_item")));
	assert_true(json_is_null(json_object_get(x, "quantity")));
	/* Nothing spent on day 1: no result. */
	assert_int_equal(json_array_size(results(pg, 1)), 0);
	assert_int_equal(calls[0].q.by, 0);
	assert_int_equal(calls[0].q.models_only, 0);
	assert_int_equal(calls[0].q.sessions_only, 0);
	json_decref(pg);

	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&group_by[]="
	    "api_key_id", T0, T0 + DAY);
	pg = page(SG_ROUTE_ORG_COSTS, q);
	assert_int_equal(json_array_size(results(pg, 0)), 2);
	assert_non_null(x = result_with(results(pg, 0), "api_key_id", "key_a",
	    NULL, NULL));
	assert_true(fabs(usd(x) - 0.09) < 1e-12);
	/* Written as people write money, not 0.089999999999999997. */
	assert_non_null(strstr(body, "\"value\":0.09,"));
	assert_non_null(x = result_with(results(pg, 0), "api_key_id", "key_b",
	    NULL, NULL));
	assert_true(fabs(usd(x) - 0.015) < 1e-12);
	assert_int_equal(calls[1].q.by, SG_USE_BY_KEY);
	json_decref(pg);
}

static void
costs_line_items(void **state)
{
	char q[160];
	json_t *pg, *r, *x;

	(void)state;
	costs_ledger();
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&group_by="
	    "line_item", T0, T0 + 2 * DAY);
	pg = page(SG_ROUTE_ORG_COSTS, q);
	assert_int_equal(calls[0].q.by, SG_USE_BY_MODEL | SG_USE_BY_TOOL);
	r = results(pg, 0);
	assert_int_equal(json_array_size(r), 4);
	/* m1's input over both tools' rows, in one line. */
	assert_non_null(x = result_with(r, "line_item", "m1, input", NULL,
	    NULL));
	assert_true(fabs(usd(x) - 0.05) < 1e-12);
	assert_int_equal(num(x, "quantity"), 125);
	assert_string_equal(str(x, "quantity_unit"), "tokens");
	assert_true(json_is_null(json_object_get(x, "api_key_id")));
	assert_non_null(x = result_with(r, "line_item", "m1, output", NULL,
	    NULL));
	assert_true(fabs(usd(x) - 0.02) < 1e-12);
	assert_int_equal(num(x, "quantity"), 50);
	assert_non_null(x = result_with(r, "line_item",
	    "code interpreter sessions, local", NULL, NULL));
	assert_true(fabs(usd(x) - 0.03) < 1e-12);
	assert_true(json_is_null(json_object_get(x, "quantity")));
	assert_true(json_is_null(json_object_get(x, "quantity_unit")));
	assert_non_null(x = result_with(r, "line_item",
	    "code interpreter sessions, e2b", NULL, NULL));
	assert_true(fabs(usd(x) - 0.005) < 1e-12);
	/* m2 has no price: nothing to bill. */
	assert_int_equal(json_array_size(results(pg, 1)), 0);
	json_decref(pg);

	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&group_by[]="
	    "line_item&group_by[]=api_key_id&group_by[]=project_id", T0,
	    T0 + DAY);
	pg = page(SG_ROUTE_ORG_COSTS, q);
	assert_int_equal(calls[1].q.by, SG_USE_BY_MODEL | SG_USE_BY_TOOL |
	    SG_USE_BY_KEY);
	r = results(pg, 0);
	assert_int_equal(json_array_size(r), 5);
	assert_non_null(x = result_with(r, "line_item", "m1, input",
	    "api_key_id", "key_a"));
	assert_true(fabs(usd(x) - 0.04) < 1e-12);
	assert_int_equal(num(x, "quantity"), 100);
	assert_non_null(x = result_with(r, "line_item", "m1, input",
	    "api_key_id", "key_b"));
	assert_true(fabs(usd(x) - 0.01) < 1e-12);
	assert_true(json_is_null(json_object_get(x, "project_id")));
	json_decref(pg);
}

/* A name the ledger's fixed field cut inside a UTF-8 character is
 * written without that character, not dropped and not as bad JSON. */
static void
names_cut_short(void **state)
{
	char q[160];
	json_t *pg, *r;

	(void)state;
	add((struct row){ T0 + 60, "key_a", "caf\xc3", "t\xe2\x82", 1, 0, 1,
	    1, 0, 7000000, 0, 3000000 });
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&group_by=model",
	    T0, T0 + DAY);
	pg = page(SG_ROUTE_ORG_USAGE_COMPL, q);
	assert_string_equal(str(json_array_get(results(pg, 0), 0), "model"),
	    "caf");
	json_decref(pg);
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&group_by="
	    "line_item", T0, T0 + DAY);
	pg = page(SG_ROUTE_ORG_COSTS, q);
	r = results(pg, 0);
	assert_int_equal(json_array_size(r), 2);
	assert_non_null(result_with(r, "line_item", "caf, input", NULL,
	    NULL));
	assert_non_null(result_with(r, "line_item",
	    "code interpreter sessions, t", NULL, NULL));
	json_decref(pg);
}

/* ---- errors ---- */

/* route with query answers OpenAI's 400 naming param with code (NULL:
 * null), without asking the store. */
static void
bad(enum sg_route route, const char *query, const char *param,
    const char *code)
{
	char k[128];
	json_t *j, *e;
	int status, before = ncalls;

	j = get(route, query, &status);
	if (status != 400)
		fail_msg("%s: %d %s", query, status, body);
	e = json_object_get(j, "error");
	assert_string_equal(keys_of(e, k, sizeof(k)),
	    "code,message,param,type");
	assert_string_equal(str(e, "type"), "invalid_request_error");
	if (!same(str(e, "param"), param))
		fail_msg("%s: param %s, not %s", query, str(e, "param"), param);
	if (code == NULL)
		assert_true(json_is_null(json_object_get(e, "code")));
	else if (!same(str(e, "code"), code))
		fail_msg("%s: code %s, not %s", query, str(e, "code"), code);
	assert_true(strlen(str(e, "message")) > 10);
	assert_int_equal(ncalls, before);
	json_decref(j);
}

static void
bad_times(void **state)
{
	char q[128];

	(void)state;
	bad(SG_ROUTE_ORG_USAGE_COMPL, "", "start_time",
	    "missing_required_parameter");
	bad(SG_ROUTE_ORG_COSTS, "end_time=5", "start_time",
	    "missing_required_parameter");
	bad(SG_ROUTE_ORG_USAGE_COMPL, "start_time=abc", "start_time",
	    "invalid_type");
	bad(SG_ROUTE_ORG_USAGE_COMPL, "start_time=", "start_time",
	    "invalid_type");
	bad(SG_ROUTE_ORG_USAGE_COMPL, "start_time=12x", "start_time",
	    "invalid_type");
	bad(SG_ROUTE_ORG_USAGE_COMPL, "start_time=1.5", "start_time",
	    "invalid_type");
	bad(SG_ROUTE_ORG_USAGE_CI, "start_time=-5", "start_time",
	    "invalid_value");
	bad(SG_ROUTE_ORG_USAGE_COMPL, "start_time=99999999999999999999999",
	    "start_time", "invalid_value");
	bad(SG_ROUTE_ORG_USAGE_COMPL, "start_time=%00", "start_time",
	    "invalid_value");
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld", T0, T0);
	bad(SG_ROUTE_ORG_USAGE_COMPL, q, "end_time", "invalid_value");
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld", T0, T0 - 60);
	bad(SG_ROUTE_ORG_COSTS, q, "end_time", "invalid_value");
	snprintf(q, sizeof(q), "start_time=%lld&end_time=soon", T0);
	bad(SG_ROUTE_ORG_USAGE_CI, q, "end_time", "invalid_type");
}

static void
bad_widths_and_groups(void **state)
{
	static const struct { int route; const char *q, *param; } t[] = {
		{ SG_ROUTE_ORG_USAGE_COMPL, "bucket_width=1w", "bucket_width" },
		{ SG_ROUTE_ORG_USAGE_COMPL, "bucket_width=", "bucket_width" },
		{ SG_ROUTE_ORG_COSTS, "bucket_width=1h", "bucket_width" },
		{ SG_ROUTE_ORG_USAGE_COMPL, "group_by=line_item", "group_by" },
		{ SG_ROUTE_ORG_USAGE_COMPL, "group_by[]=model&group_by[]=nope",
		    "group_by" },
		{ SG_ROUTE_ORG_USAGE_COMPL, "group_by=model,api_key_id",
		    "group_by" },
		{ SG_ROUTE_ORG_USAGE_CI, "group_by=model", "group_by" },
		{ SG_ROUTE_ORG_COSTS, "group_by=model", "group_by" },
		{ SG_ROUTE_ORG_USAGE_COMPL, "batch=maybe", "batch" },
	};
	char q[160];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(q, sizeof(q), "start_time=%lld&%s", T0, t[i].q);
		bad((enum sg_route)t[i].route, q, t[i].param,
		    strcmp(t[i].param, "batch") == 0 ? "invalid_type" :
		    "invalid_value");
	}
}

static void
bad_limits(void **state)
{
	static const struct { int route; const char *q, *code; } t[] = {
		{ SG_ROUTE_ORG_USAGE_COMPL, "limit=0",
		    "integer_out_of_range" },
		{ SG_ROUTE_ORG_USAGE_COMPL, "limit=32",
		    "integer_out_of_range" },
		{ SG_ROUTE_ORG_USAGE_COMPL, "bucket_width=1h&limit=169",
		    "integer_out_of_range" },
		{ SG_ROUTE_ORG_USAGE_CI, "bucket_width=1m&limit=1441",
		    "integer_out_of_range" },
		{ SG_ROUTE_ORG_COSTS, "limit=181", "integer_out_of_range" },
		{ SG_ROUTE_ORG_USAGE_COMPL, "limit=-1",
		    "integer_out_of_range" },
		{ SG_ROUTE_ORG_USAGE_COMPL, "limit=abc", "invalid_type" },
		{ SG_ROUTE_ORG_USAGE_COMPL, "limit=1.5", "invalid_type" },
		{ SG_ROUTE_ORG_USAGE_COMPL, "limit=", "invalid_type" },
	};
	char q[160];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(q, sizeof(q), "start_time=%lld&%s", T0, t[i].q);
		bad((enum sg_route)t[i].route, q, "limit", t[i].code);
	}
}

static void
bad_pages(void **state)
{
	char q[320];
	char c[6][40];
	size_t i;

	(void)state;
	snprintf(c[0], sizeof(c[0]), "nope");
	snprintf(c[1], sizeof(c[1]), "page_%016llx", (unsigned long long)T0 +
	    5);					/* not a bucket's start */
	snprintf(c[2], sizeof(c[2]), "page_%016llx", (unsigned long long)(T0 -
	    DAY));				/* before the window */
	snprintf(c[3], sizeof(c[3]), "page_%016llx", (unsigned long long)(T0 +
	    3 * DAY));				/* past it */
	snprintf(c[4], sizeof(c[4]), "page_%016llX", (unsigned long long)T0 +
	    DAY);				/* not as we write it */
	snprintf(c[5], sizeof(c[5]), "page_%015llx", (unsigned long long)T0 +
	    DAY);
	for (i = 0; i < 6; i++) {
		snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&page=%s",
		    T0, T0 + 3 * DAY, c[i]);
		bad(SG_ROUTE_ORG_USAGE_COMPL, q, "page", "invalid_value");
	}
	/* The window's second day, as next_page writes it: taken. */
	snprintf(q, sizeof(q), "start_time=%lld&end_time=%lld&page="
	    "page_%016llx", T0, T0 + 3 * DAY, (unsigned long long)(T0 + DAY));
	json_decref(page(SG_ROUTE_ORG_USAGE_COMPL, q));
	assert_int_equal(calls[0].q.from_ms, (T0 + DAY) * 1000);
}

static void
store_failure_is_503(void **state)
{
	char q[128];
	json_t *j;
	int status;

	(void)state;
	store_fails = 1;
	snprintf(q, sizeof(q), "start_time=%lld", T0);
	j = get(SG_ROUTE_ORG_COSTS, q, &status);
	assert_int_equal(status, 503);
	assert_string_equal(str(json_object_get(j, "error"), "type"),
	    "server_error");
	json_decref(j);
}

int
main(void)
{
#define T(f)	cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(empty_ledger_shapes), T(completions_result_shape),
		T(sessions_result_shape), T(completions_grouped),
		T(filters_reach_the_store), T(filters_nothing_matches),
		T(buckets_aligned_down), T(empty_buckets_kept),
		T(window_to_now), T(pages_follow_the_cursor),
		T(largest_limits_taken), T(costs_amounts),
		T(costs_line_items), T(names_cut_short), T(bad_times), T(bad_widths_and_groups),
		T(bad_limits), T(bad_pages), T(store_failure_is_503),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
