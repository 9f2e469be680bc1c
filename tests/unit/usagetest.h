/*
 * What the ledger's store tests share (test_usage_store.c,
 * test_usage_copy.c): rows made up so that every counter differs, two
 * days of them, and their sums as text. Static, as testutil.h's;
 * included after cmocka.h, store/usage.h and testutil.h.
 */
#ifndef SG_USAGETEST_H
#define SG_USAGETEST_H

#define DAY	86400000LL
#define T0	1700000000000LL		/* a day's start, unix ms */

/* A row of key (key_a, key_b, ...) and model ("" none) started at
 * started_ms, with in input and out output tokens; the rest derived so
 * every counter differs. */
static inline struct sg_store_use
use(const char *id, const char *key, const char *model, int64_t started_ms,
    int64_t in, int64_t out)
{
	struct sg_store_use r;

	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.tenant, sizeof(r.tenant), "tenant_%s", key);
	snprintf(r.key_id, sizeof(r.key_id), "%s", key);
	snprintf(r.key_name, sizeof(r.key_name), "name_%s", key);
	snprintf(r.model, sizeof(r.model), "%s", model);
	snprintf(r.upstream_model, sizeof(r.upstream_model), "up_%s", model);
	snprintf(r.surface, sizeof(r.surface), "responses");
	r.status = 200;
	r.started_ms = started_ms;
	r.duration_ms = 5;
	r.input_tokens = in;
	r.cached_tokens = in / 2;
	r.output_tokens = out;
	r.reasoning_tokens = out / 2;
	r.model_requests = model[0] != '\0' ? 1 : 0;
	r.cost_input = in * 1000;
	r.cost_output = out * 3000;
	return r;
}

static inline void
add(struct sg_store *st, const struct sg_store_use *rows, size_t n)
{
	if (sg_store_use_add(st, rows, n) != SG_STORE_OK)
		fail_msg("use_add: %s", sg_store_errmsg(st));
}

static inline void
sql(struct tu_store_fx *fx, const char *q, char *out, size_t sz)
{
	assert_int_equal(tu_raw_sql(fx->path, q, out, sz), 0);
}

/* The sums as text, one line each: "bucket key_id/key_name model tool
 * requests in out" ("-" for NULL), at most stop lines when stop > 0. */
struct sums {
	char	 text[2048];
	int	 n, stop;
	struct sg_store_use_sum last;
};

static inline const char *
or_dash(const char *s)
{
	return s != NULL ? s : "-";
}

static inline int
note(void *arg, const struct sg_store_use_sum *s)
{
	struct sums *l = arg;
	size_t len = strlen(l->text);

	snprintf(l->text + len, sizeof(l->text) - len, "%lld %s/%s %s %s "
	    "%lld %lld %lld\n", (long long)s->bucket, or_dash(s->key_id),
	    or_dash(s->key_name), or_dash(s->model), or_dash(s->tool),
	    (long long)s->requests, (long long)s->input_tokens,
	    (long long)s->output_tokens);
	l->last = *s;
	return ++l->n == l->stop ? -1 : 0;
}

static inline const char *
sums(struct sg_store *st, const struct sg_store_use_q *q, struct sums *l)
{
	memset(l, 0, sizeof(*l));
	if (sg_store_use_sum(st, q, note, l) != SG_STORE_OK)
		fail_msg("use_sum: %s", sg_store_errmsg(st));
	return l->text;
}

/* Two days of rows: key_a with gpt-x and gpt-y, key_b with gpt-x and a
 * sandbox-only request (no model, a session). */
static inline void
fill(struct sg_store *st)
{
	struct sg_store_use r[6];

	r[0] = use("req_1", "key_a", "gpt-x", T0 + 10, 100, 10);
	r[1] = use("req_2", "key_a", "gpt-y", T0 + 20, 200, 20);
	r[2] = use("req_3", "key_b", "gpt-x", T0 + 30, 300, 30);
	r[3] = use("req_4", "key_a", "gpt-x", T0 + DAY + 1, 400, 40);
	r[4] = use("req_5", "key_b", "", T0 + DAY + 2, 0, 0);
	r[4].sessions = 1;
	r[4].code_runs = 2;
	snprintf(r[4].tool, sizeof(r[4].tool), "python");
	r[5] = use("req_6", "key_b", "gpt-x", T0 + 2 * DAY, 600, 60);
	add(st, r, 6);
}

#endif
