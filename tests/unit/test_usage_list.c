/*
 * store/usage: the ledger's rows read back one by one and listed for the
 * admin API's requests: every column as written, the box and whether a
 * trace is kept; newest first (or oldest) page by page with ties on the
 * start by id, filtered by key, model, status (a number, or any not 2xx)
 * and time; a page after a row the filters leave out refused. On SQLite,
 * then on PostgreSQL when SG_TEST_PG is set (TU_STORE_MAIN).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "../../store/store.h"
#include "../../store/usage.h"
#include "testutil.h"

#define T0	1700000000000LL		/* unix ms */

static struct sg_store_use
use(const char *id, const char *key, const char *model, int status,
    int64_t started_ms)
{
	struct sg_store_use r;

	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.tenant, sizeof(r.tenant), "tenant_%s", key);
	snprintf(r.key_id, sizeof(r.key_id), "%s", key);
	snprintf(r.key_name, sizeof(r.key_name), "name_%s", key);
	snprintf(r.model, sizeof(r.model), "%s", model);
	snprintf(r.surface, sizeof(r.surface), "responses");
	r.status = status;
	r.started_ms = started_ms;
	return r;
}

/* The list's ids, space-separated, and whether more. */
struct ids {
	char	 text[512];
	int	 n;
};

static int
note(void *arg, const struct sg_store_use_row *r)
{
	struct ids *l = arg;
	size_t len = strlen(l->text);

	snprintf(l->text + len, sizeof(l->text) - len, "%s%s", l->n++ ? " " :
	    "", r->use.id);
	return 0;
}

static int
list(struct sg_store *st, const struct sg_store_use_lq *q, struct ids *l,
    int *more)
{
	memset(l, 0, sizeof(*l));
	return sg_store_use_list(st, q, note, l, more);
}

/* Every column comes back as written, with the box that wrote it; a
 * trace written for it shows; an unknown id is NOTFOUND. */
static void
get_reads_back(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use r = use("req_1", "key_a", "gpt-x", 200, T0);
	struct sg_store_trace t = { .id = "req_1", .tenant = "tenant_key_a",
	    .key_id = "key_a", .status = 200, .started_ms = T0, .rounds = "[]" };
	struct sg_store_use_row got;

	snprintf(r.upstream_model, sizeof(r.upstream_model), "up-x");
	snprintf(r.tool, sizeof(r.tool), "local");
	r.aborted = 1;
	r.duration_ms = 1234;
	r.input_tokens = 100;
	r.cached_tokens = 40;
	r.output_tokens = 30;
	r.reasoning_tokens = 9;
	r.model_requests = 2;
	r.code_runs = 1;
	r.sandbox_ms = 1500;
	r.sessions = 1;
	r.file_bytes = 77;
	r.cost_input = 12000000000000LL;	/* past 32 bits */
	r.cost_output = 5;
	r.cost_sandbox = 6;
	assert_int_equal(sg_store_set_box(fx->st, "box-1"), SG_STORE_OK);
	assert_int_equal(sg_store_use_add(fx->st, &r, 1), SG_STORE_OK);
	assert_int_equal(sg_store_use_get(fx->st, "req_1", &got), SG_STORE_OK);
#define SAME_S(f)	assert_string_equal(got.use.f, r.f)
#define SAME_I(f)	assert_int_equal(got.use.f, r.f)
	SAME_S(id); SAME_S(tenant); SAME_S(key_id); SAME_S(key_name);
	SAME_S(model); SAME_S(upstream_model); SAME_S(surface); SAME_S(tool);
	SAME_I(status); SAME_I(aborted); SAME_I(started_ms);
	SAME_I(duration_ms); SAME_I(input_tokens); SAME_I(cached_tokens);
	SAME_I(output_tokens); SAME_I(reasoning_tokens); SAME_I(model_requests);
	SAME_I(code_runs); SAME_I(sandbox_ms); SAME_I(sessions);
	SAME_I(file_bytes); SAME_I(cost_input); SAME_I(cost_output);
	SAME_I(cost_sandbox);
	assert_string_equal(got.box, "box-1");
	assert_false(got.has_trace);
	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_OK);
	assert_int_equal(sg_store_use_get(fx->st, "req_1", &got), SG_STORE_OK);
	assert_true(got.has_trace);
	assert_int_equal(sg_store_use_get(fx->st, "req_2", &got),
	    SG_STORE_NOTFOUND);
}

/* Pages newest first, ties on the start by id, after the last id of
 * the page before; oldest first when asked; has_trace per row. */
static void
list_pages(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use r[5] = { use("req_a", "k", "m", 200, T0 + 1),
	    use("req_b", "k", "m", 200, T0 + 2), use("req_c", "k", "m", 200,
	    T0 + 2), use("req_d", "k", "m", 200, T0 + 3), use("req_e", "k",
	    "m", 200, T0 + 4) };
	struct sg_store_trace t = { .id = "req_c", .rounds = "[]" };
	struct sg_store_use_lq q = { .limit = 2 };
	struct ids l;
	int more;

	assert_int_equal(sg_store_use_add(fx->st, r, 5), SG_STORE_OK);
	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_OK);
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_e req_d");
	assert_true(more);
	q.after = "req_d";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_c req_b");
	assert_true(more);
	q.after = "req_b";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_a");
	assert_false(more);
	q.after = NULL;
	q.asc = 1;
	q.limit = 3;
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_a req_b req_c");
	assert_true(more);
	q.after = "req_c";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_d req_e");
	assert_false(more);
	q.limit = 0;
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_ERROR);
}

/* has_trace as the list sees it. */
static int
traced(void *arg, const struct sg_store_use_row *r)
{
	struct ids *l = arg;

	if (r->has_trace)
		note(l, r);
	return 0;
}

/* Each filter alone and together; "any not 2xx" takes a dead
 * responder's 0 and leaves 2xx out; an after the filters leave out, or
 * unknown, is NOTFOUND; the list tells which rows have a trace. */
static void
list_filters(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use r[6] = { use("req_1", "key_a", "m1", 200, T0 + 1),
	    use("req_2", "key_b", "m1", 500, T0 + 2), use("req_3", "key_a",
	    "m2", 0, T0 + 3), use("req_4", "key_a", "m1", 201, T0 + 4),
	    use("req_5", "key_b", "m2", 429, T0 + 5), use("req_6", "key_a",
	    "m1", 200, T0 + 6) };
	struct sg_store_trace t = { .id = "req_4", .rounds = "[]" };
	struct sg_store_use_lq q = { .limit = 10 };
	struct ids l;
	int more;

	assert_int_equal(sg_store_use_add(fx->st, r, 6), SG_STORE_OK);
	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_OK);
	q.key_id = "key_a";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_6 req_4 req_3 req_1");
	q.model = "m1";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_6 req_4 req_1");
	q.key_id = q.model = NULL;
	q.status = -1;
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_5 req_3 req_2");
	q.status = 200;
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_6 req_1");
	q.status = 0;
	q.from_ms = T0 + 2;
	q.to_ms = T0 + 5;
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_4 req_3 req_2");
	q.after = "req_3";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_2");
	q.after = "req_6";		/* past to_ms */
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_NOTFOUND);
	q.after = "req_nope";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_NOTFOUND);
	q.after = NULL;
	q.from_ms = q.to_ms = 0;
	memset(&l, 0, sizeof(l));
	assert_int_equal(sg_store_use_list(fx->st, &q, traced, &l, &more),
	    SG_STORE_OK);
	assert_string_equal(l.text, "req_4");
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(get_reads_back),
		T(list_pages),
		T(list_filters),
	};

	TU_STORE_MAIN(tests);
}
