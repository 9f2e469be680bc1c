/*
 * store/usage, store/traces: the ledger's rows written in batches (a row
 * written twice counts once), summed per bucket and group with filters,
 * totalled per tenant and per day, pruned in bounded batches; a key's
 * settings. Their copy and migration are test_usage_copy.c's, the rate
 * windows test_rate_store.c's, the traces' test_trace_store.c's.
 * On SQLite, then on PostgreSQL when SG_TEST_PG is set (TU_STORE_MAIN).
 * SG_USAGE_BENCH=1 also prints the ledger's timings (bench_ledger).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "../../store/store.h"
#include "../../store/usage.h"
#include "../../lib/util.h"
#include "testutil.h"
#include "usagetest.h"

static void
add_skips_ids_already_there(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use r[3];
	char out[128];

	assert_int_equal(sg_store_set_box(fx->st, "box-1"), SG_STORE_OK);
	r[0] = use("req_1", "key_a", "gpt-x", T0, 100, 10);
	r[1] = use("req_2", "key_a", "gpt-x", T0, 200, 20);
	add(fx->st, r, 2);
	/* The batch again after a crash, with a new row: the old ones are
	 * not written twice, nor changed. */
	r[0].input_tokens = 999;
	r[2] = use("req_3", "key_b", "gpt-x", T0, 300, 30);
	add(fx->st, r, 3);
	sql(fx, "SELECT count(*) || ' ' || sum(input_tokens) FROM usage", out,
	    sizeof(out));
	assert_string_equal(out, "3 600");
	sql(fx, "SELECT box FROM usage WHERE id = 'req_3'", out, sizeof(out));
	assert_string_equal(out, "box-1");
	sql(fx, "SELECT key_name || ' ' || upstream_model || ' ' || surface || "
	    "' ' || status FROM usage WHERE id = 'req_1'", out, sizeof(out));
	assert_string_equal(out, "name_key_a up_gpt-x responses 200");
	assert_int_equal(sg_store_use_add(fx->st, NULL, 0), SG_STORE_OK);
}

/* A batch is one transaction: a bad row keeps every row out. */
static void
add_is_all_or_nothing(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use r[2];
	char out[32];

	r[0] = use("req_1", "key_a", "gpt-x", T0, 1, 1);
	r[1] = use("", "key_a", "gpt-x", T0, 1, 1);
	assert_int_equal(sg_store_use_add(fx->st, r, 2), SG_STORE_ERROR);
	assert_contains(sg_store_errmsg(fx->st), "without an id");
	sql(fx, "SELECT count(*) FROM usage", out, sizeof(out));
	assert_string_equal(out, "0");
}

/* A model name cut inside a character, and a field with no NUL in its
 * array: stored (PostgreSQL would refuse the batch for bad UTF-8), the
 * broken byte as '?', the field ended at its array's end. */
static void
add_keeps_rows_with_broken_text(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use r = use("req_1", "key_a", "", T0, 1, 1);
	char out[256];

	snprintf(r.model, sizeof(r.model), "gpt-\xc3");	/* é cut */
	memset(r.tool, 'x', sizeof(r.tool));
	add(fx->st, &r, 1);
	sql(fx, "SELECT model FROM usage", out, sizeof(out));
	assert_string_equal(out, "gpt-?");
	sql(fx, "SELECT length(tool) FROM usage", out, sizeof(out));
	assert_int_equal(atoi(out), (int)sizeof(r.tool) - 1);
}

static void
sum_per_bucket(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use_q q = { .from_ms = T0, .to_ms = T0 + 3 * DAY,
	    .bucket_ms = DAY };
	struct sums l;

	fill(fx->st);
	assert_string_equal(sums(fx->st, &q, &l),
	    "0 -/- - - 3 600 60\n"
	    "1 -/- - - 2 400 40\n"
	    "2 -/- - - 1 600 60\n");
	/* [from, to): req_6, at to, is out; buckets count from from_ms
	 * (req_3 and req_4 are a day apart on the clock, not from it). */
	q.from_ms = T0 + 25;
	q.to_ms = T0 + 2 * DAY;
	assert_string_equal(sums(fx->st, &q, &l), "0 -/- - - 3 700 70\n");
	/* Nothing in range: no sums, not a zero one. */
	q.from_ms = T0 - DAY;
	q.to_ms = T0;
	assert_string_equal(sums(fx->st, &q, &l), "");
}

/* Every counter reaches its own field of the sum. */
static void
sum_every_counter(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use_q q = { .from_ms = T0, .to_ms = T0 + DAY,
	    .bucket_ms = DAY };
	struct sg_store_use r[2];
	struct sums l;
	int i;

	for (i = 0; i < 2; i++) {
		r[i] = use(i ? "req_2" : "req_1", "key_a", "gpt-x", T0, 0, 0);
		r[i].input_tokens = 1;
		r[i].cached_tokens = 2;
		r[i].output_tokens = 3;
		r[i].reasoning_tokens = 4;
		r[i].model_requests = 5;
		r[i].code_runs = 6;
		r[i].sandbox_ms = 7;
		r[i].sessions = 8;
		r[i].file_bytes = 9;
		r[i].cost_input = 10;
		r[i].cost_output = 11;
		r[i].cost_sandbox = 12000000000000LL;	/* past 32 bits */
	}
	add(fx->st, r, 2);
	sums(fx->st, &q, &l);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.last.requests, 2);
	assert_int_equal(l.last.input_tokens, 2);
	assert_int_equal(l.last.cached_tokens, 4);
	assert_int_equal(l.last.output_tokens, 6);
	assert_int_equal(l.last.reasoning_tokens, 8);
	assert_int_equal(l.last.model_requests, 10);
	assert_int_equal(l.last.code_runs, 12);
	assert_int_equal(l.last.sandbox_ms, 14);
	assert_int_equal(l.last.sessions, 16);
	assert_int_equal(l.last.file_bytes, 18);
	assert_int_equal(l.last.cost_input, 20);
	assert_int_equal(l.last.cost_output, 22);
	assert_int_equal(l.last.cost_sandbox, 24000000000000LL);
}

static void
sum_per_group_with_filters(void **state)
{
	struct tu_store_fx *fx = *state;
	const char *keys[] = { "key_b" }, *models[] = { "gpt-y", "gpt-x" };
	struct sg_store_use_q q = { .from_ms = T0, .to_ms = T0 + 3 * DAY,
	    .bucket_ms = 3 * DAY, .by = SG_USE_BY_KEY | SG_USE_BY_MODEL };
	struct sums l;

	fill(fx->st);
	/* Ordered by bucket, then key_id, model, tool. */
	assert_string_equal(sums(fx->st, &q, &l),
	    "0 key_a/name_key_a gpt-x - 2 500 50\n"
	    "0 key_a/name_key_a gpt-y - 1 200 20\n"
	    "0 key_b/name_key_b  - 1 0 0\n"
	    "0 key_b/name_key_b gpt-x - 2 900 90\n");
	q.key_ids = keys;
	q.nkey_ids = 1;
	q.models_only = 1;
	assert_string_equal(sums(fx->st, &q, &l),
	    "0 key_b/name_key_b gpt-x - 2 900 90\n");
	q.key_ids = NULL;
	q.nkey_ids = 0;
	q.models_only = 0;
	q.models = models;
	q.nmodels = 2;
	q.by = SG_USE_BY_MODEL;
	q.bucket_ms = DAY;
	assert_string_equal(sums(fx->st, &q, &l),
	    "0 -/- gpt-x - 2 400 40\n"
	    "0 -/- gpt-y - 1 200 20\n"
	    "1 -/- gpt-x - 1 400 40\n"
	    "2 -/- gpt-x - 1 600 60\n");
	/* The sandbox side: sessions only, by tool. */
	q.models = NULL;
	q.nmodels = 0;
	q.sessions_only = 1;
	q.by = SG_USE_BY_TOOL | SG_USE_BY_KEY;
	assert_string_equal(sums(fx->st, &q, &l),
	    "1 key_b/name_key_b - python 1 0 0\n");
	assert_int_equal(l.last.sessions, 1);
	assert_int_equal(l.last.code_runs, 2);
	/* fn stops it. */
	q.sessions_only = 0;
	q.by = 0;
	memset(&l, 0, sizeof(l));
	l.stop = 1;
	assert_int_equal(sg_store_use_sum(fx->st, &q, note, &l), SG_STORE_OK);
	assert_int_equal(l.n, 1);
}

/* A key renamed (its name reused) still sums as one row per key id. */
static void
sum_one_row_per_key_id(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use_q q = { .from_ms = T0, .to_ms = T0 + DAY,
	    .bucket_ms = DAY, .by = SG_USE_BY_KEY };
	struct sg_store_use r[2];
	struct sums l;

	r[0] = use("req_1", "key_a", "gpt-x", T0, 1, 1);
	r[1] = use("req_2", "key_a", "gpt-x", T0, 1, 1);
	snprintf(r[1].key_name, sizeof(r[1].key_name), "renamed");
	add(fx->st, r, 2);
	sums(fx->st, &q, &l);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.last.requests, 2);
}

static void
sum_refuses_bad_queries(void **state)
{
	struct tu_store_fx *fx = *state;
	const char *many[SG_STORE_USE_LIST_MAX + 1], *holes[] = { "a", NULL };
	struct sg_store_use_q q = { .from_ms = T0, .to_ms = T0 + DAY,
	    .bucket_ms = DAY, .key_ids = many };
	struct sums l;
	int i;

	fill(fx->st);
	for (i = 0; i <= SG_STORE_USE_LIST_MAX; i++)
		many[i] = "key_a";
	/* The most a list may hold works, the first more does not. */
	q.nkey_ids = SG_STORE_USE_LIST_MAX;
	assert_string_equal(sums(fx->st, &q, &l), "0 -/- - - 2 300 30\n");
	q.nkey_ids = SG_STORE_USE_LIST_MAX + 1;
	assert_int_equal(sg_store_use_sum(fx->st, &q, note, &l),
	    SG_STORE_ERROR);
	assert_contains(sg_store_errmsg(fx->st), "at most 32 key ids");
	q.key_ids = NULL;
	q.nkey_ids = 0;
	q.models = many;
	q.nmodels = SG_STORE_USE_LIST_MAX + 1;
	assert_int_equal(sg_store_use_sum(fx->st, &q, note, &l),
	    SG_STORE_ERROR);
	q.models = holes;
	q.nmodels = 2;
	assert_int_equal(sg_store_use_sum(fx->st, &q, note, &l),
	    SG_STORE_ERROR);
	q.nmodels = 0;
	q.bucket_ms = 0;
	assert_int_equal(sg_store_use_sum(fx->st, &q, note, &l),
	    SG_STORE_ERROR);
	q.bucket_ms = DAY;
	q.to_ms = T0 - 1;
	assert_int_equal(sg_store_use_sum(fx->st, &q, note, &l),
	    SG_STORE_ERROR);
}

static void
total_of_a_tenant(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use_tot t;
	struct sg_store_use r;

	fill(fx->st);
	r = use("req_9", "key_b", "", T0 + DAY + 5, 0, 0);
	r.cost_sandbox = 7;
	r.sandbox_ms = 1500;
	add(fx->st, &r, 1);
	assert_int_equal(sg_store_use_total(fx->st, "tenant_key_b", T0 + DAY,
	    &t), SG_STORE_OK);
	/* req_5, req_6, req_9: 600 in, 60 out. */
	assert_int_equal(t.requests, 3);
	assert_int_equal(t.tokens, 660);
	assert_int_equal(t.cost, 600 * 1000 + 60 * 3000 + 7);
	assert_int_equal(t.sandbox_ms, 1500);
	assert_int_equal(t.last_ms, T0 + 2 * DAY);
	assert_int_equal(sg_store_use_total(fx->st, "tenant_key_b", T0, &t),
	    SG_STORE_OK);
	assert_int_equal(t.requests, 4);
	assert_int_equal(sg_store_use_total(fx->st, "nobody", 0, &t),
	    SG_STORE_OK);
	assert_int_equal(t.requests, 0);
	assert_int_equal(t.cost, 0);
	assert_int_equal(t.last_ms, 0);
}

static void
prune_in_bounded_batches(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use r[13];
	char id[16], out[32];
	int i, removed = -1;

	for (i = 0; i < 13; i++) {
		snprintf(id, sizeof(id), "req_%d", i);
		r[i] = use(id, "key_a", "gpt-x", i < 10 ? T0 + i : T0 + DAY, 1,
		    1);
	}
	add(fx->st, r, 13);
	assert_int_equal(sg_store_use_prune(fx->st, T0 + DAY, 4, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 4);
	assert_int_equal(sg_store_use_prune(fx->st, T0 + DAY, 4, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 4);
	assert_int_equal(sg_store_use_prune(fx->st, T0 + DAY, 4, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 2);
	assert_int_equal(sg_store_use_prune(fx->st, T0 + DAY, 4, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 0);
	sql(fx, "SELECT count(*) FROM usage WHERE started_ms = " "1700086400000",
	    out, sizeof(out));
	assert_string_equal(out, "3");
	sql(fx, "SELECT count(*) FROM usage", out, sizeof(out));
	assert_string_equal(out, "3");
}

/* The queries find their rows by an index, not by a scan. */
static void
ledger_indexes(void **state)
{
	struct tu_store_fx *fx = *state;
	char out[1024];

	sql(fx, tu_store_url != NULL ? "SELECT string_agg(indexdef, ';' ORDER "
	    "BY indexname) FROM pg_indexes WHERE tablename IN ('usage', "
	    "'traces') AND indexname NOT LIKE '%pkey'" : "SELECT group_concat("
	    "sql, ';') FROM (SELECT sql FROM sqlite_master WHERE type = 'index' "
	    "AND tbl_name IN ('usage', 'traces') AND sql IS NOT NULL ORDER BY "
	    "name)", out, sizeof(out));
	assert_contains(out, "traces_started ON");
	assert_contains(out, "(started_ms, id)");
	assert_contains(out, "usage_started ON");
	assert_contains(out, "usage_key ON");
	assert_contains(out, "(key_id, started_ms, id)");
}

/* sg_store_key_list's settings, "name=settings" each. */
static int
key_note(void *arg, const struct sg_store_key *k)
{
	char *text = arg;
	size_t len = strlen(text);

	snprintf(text + len, 256 - len, "%s=%s;", k->name, or_dash(k->settings));
	return 0;
}

static void
key_settings_round_trip(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_key k;
	const char *js = "{\"budget_usd\":5,\"tools\":[\"python\"]}";
	char h[65], h2[65], buf[128], small[40], listed[256] = "";

	sg_sha256_hex("a", 1, h);
	sg_sha256_hex("b", 1, h2);
	assert_int_equal(sg_store_key_add(fx->st, "alice", h), SG_STORE_OK);
	assert_int_equal(sg_store_key_add(fx->st, "bob", h2), SG_STORE_OK);
	assert_int_equal(sg_store_key_get(fx->st, h, &k, buf, sizeof(buf)),
	    SG_STORE_OK);
	assert_string_equal(k.name, "alice");
	assert_string_equal(k.sha256, h);
	assert_null(k.settings);
	assert_true(k.id > 0);
	assert_true(k.created_at > 0);
	assert_int_equal(sg_store_key_settings(fx->st, "alice", js),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_get(fx->st, h, &k, buf, sizeof(buf)),
	    SG_STORE_OK);
	assert_string_equal(k.settings, js);
	assert_string_equal(k.name, "alice");
	assert_true(k.settings >= buf && k.settings < buf + sizeof(buf));
	assert_int_equal(sg_store_key_list(fx->st, key_note, listed),
	    SG_STORE_OK);
	assert_string_equal(listed, "alice={\"budget_usd\":5,\"tools\":"
	    "[\"python\"]};bob=-;");
	/* Too small a buffer: an error saying so, never a cut JSON. */
	assert_int_equal(sg_store_key_get(fx->st, h, &k, small, sizeof(small)),
	    SG_STORE_ERROR);
	assert_contains(sg_store_errmsg(fx->st), "bytes needed");
	assert_null(k.name);
	/* Back to the defaults. */
	assert_int_equal(sg_store_key_settings(fx->st, "alice", NULL),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_get(fx->st, h, &k, buf, sizeof(buf)),
	    SG_STORE_OK);
	assert_null(k.settings);
	assert_int_equal(sg_store_key_settings(fx->st, "carol", js),
	    SG_STORE_NOTFOUND);
	/* A revoked key is found by neither. */
	assert_int_equal(sg_store_key_revoke(fx->st, "bob"), SG_STORE_OK);
	assert_int_equal(sg_store_key_get(fx->st, h2, &k, buf, sizeof(buf)),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_key_settings(fx->st, "bob", js),
	    SG_STORE_NOTFOUND);
}

static double
secs(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec -
	    a->tv_nsec) / 1e9;
}

/* Timings, printed (never asserted): one batch of 1000 rows, and a sum
 * by day and key over 100k rows (30 days, 20 keys). */
static void
bench_ledger(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use_q q = { .from_ms = T0, .to_ms = T0 + 30 * DAY,
	    .bucket_ms = DAY, .by = SG_USE_BY_KEY };
	struct sg_store_use *rows;
	struct timespec t;
	struct sums l;
	char id[40], key[16];
	double s;
	int i, b;

	if (getenv("SG_USAGE_BENCH") == NULL)
		skip();
	assert_non_null(rows = calloc(1000, sizeof(*rows)));
	for (b = 0; b < 100; b++) {
		for (i = 0; i < 1000; i++) {
			snprintf(id, sizeof(id), "req_%d_%d", b, i);
			snprintf(key, sizeof(key), "key_%d", (b * 1000 + i) % 20);
			rows[i] = use(id, key, "gpt-x", T0 + (int64_t)(b * 1000 +
			    i) * (30 * DAY / 100000), 100, 10);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		add(fx->st, rows, 1000);
		if (b == 0 || b == 99) {
			s = secs(&t);
			printf("bench %s: use_add of 1000 rows (table %d rows): "
			    "%.1f ms, %.0f rows/s\n", tu_store_url != NULL ?
			    "postgresql" : "sqlite", b * 1000, s * 1e3, 1000 / s);
		}
	}
	free(rows);
	clock_gettime(CLOCK_MONOTONIC, &t);
	sums(fx->st, &q, &l);
	s = secs(&t);
	printf("bench %s: sum of 100000 rows by day and key: %.1f ms (%d "
	    "sums)\n", tu_store_url != NULL ? "postgresql" : "sqlite", s * 1e3,
	    l.n);
	q.by = 0;
	q.bucket_ms = 30 * DAY;
	clock_gettime(CLOCK_MONOTONIC, &t);
	sums(fx->st, &q, &l);
	printf("bench %s: sum of 100000 rows in one bucket: %.1f ms\n",
	    tu_store_url != NULL ? "postgresql" : "sqlite", secs(&t) * 1e3);
}

/* A key's day sums follow the rows added, once each, and a budget's
 * total from a day's start reads them. */
static void
spend_by_day(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use r[3] = { use("req_1", "key_a", "m", T0 + 10, 100,
	    10), use("req_2", "key_a", "m", T0 + DAY + 10, 200, 20),
	    use("req_3", "key_b", "m", T0 + DAY + 20, 1, 1) };
	struct sg_store_use_tot t;

	r[1].sandbox_ms = 1500;
	assert_int_equal(sg_store_use_add(fx->st, r, 3), SG_STORE_OK);
	assert_int_equal(sg_store_use_add(fx->st, r, 2), SG_STORE_OK);
	assert_int_equal(sg_store_use_total(fx->st, "tenant_key_a", T0, &t),
	    SG_STORE_OK);
	assert_int_equal(t.requests, 2);
	assert_int_equal(t.tokens, 330);
	assert_int_equal(t.cost, 100 * 1000 + 10 * 3000 + 200 * 1000 +
	    20 * 3000);
	assert_int_equal(t.sandbox_ms, 1500);
	assert_int_equal(t.last_ms, T0 + DAY + 10);
	assert_int_equal(sg_store_use_total(fx->st, "tenant_key_a", T0 + DAY,
	    &t), SG_STORE_OK);
	assert_int_equal(t.requests, 1);
	assert_int_equal(t.tokens, 220);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(add_skips_ids_already_there),
		T(add_is_all_or_nothing),
		T(add_keeps_rows_with_broken_text),
		T(sum_per_bucket),
		T(sum_every_counter),
		T(sum_per_group_with_filters),
		T(sum_one_row_per_key_id),
		T(sum_refuses_bad_queries),
		T(total_of_a_tenant),
		T(prune_in_bounded_batches),
		T(ledger_indexes),
		T(key_settings_round_trip),
		T(spend_by_day),
		T(bench_ledger),
	};

	TU_STORE_MAIN(tests);
}
