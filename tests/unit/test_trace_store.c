/*
 * store/traces: a request's trace written once (the first stays), read
 * back with its rounds and its images, listed newest first page by page
 * without either, pruned in bounded batches with its images; the images
 * copied by `migrate --to`; a store of schema 10 brought to 11 keeps its
 * traces and takes images. On SQLite, then on PostgreSQL when SG_TEST_PG
 * is set (TU_STORE_MAIN).
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

#define DAY	86400000LL
#define T0	1700000000000LL		/* a day's start, unix ms */

/* The list's rows, "id status" each, and whether more. */
struct tlist {
	char	 text[512];
	int	 n;
	int	 rounds;	/* a row came with rounds */
	int	 images;	/* or with images */
};

static int
tnote(void *arg, const struct sg_store_trace_row *r)
{
	struct tlist *l = arg;
	size_t len = strlen(l->text);

	snprintf(l->text + len, sizeof(l->text) - len, "%s%s", l->n++ ? " " :
	    "", r->id);
	l->rounds |= r->rounds != NULL;
	l->images |= r->images != NULL;
	return 0;
}

static int
list(struct sg_store *st, struct sg_store_trace_q *q, struct tlist *l,
    int *more)
{
	memset(l, 0, sizeof(*l));
	return sg_store_trace_list(st, q, tnote, l, more);
}

static void
trace_add_get(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_trace t = { .id = "req_1", .tenant = "t", .key_id =
	    "key_a", .model = "gpt-x", .status = 200, .started_ms = T0,
	    .duration_ms = 42, .rounds = "[{\"code\":\"\xc3\"}]" };
	struct sg_store_trace_row r;

	assert_int_equal(sg_store_set_box(fx->st, "box-2"), SG_STORE_OK);
	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_OK);
	/* Written again: the first stays. */
	t.status = 500;
	t.rounds = "[]";
	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_OK);
	assert_int_equal(sg_store_trace_get(fx->st, "req_1", &r), SG_STORE_OK);
	assert_string_equal(r.id, "req_1");
	assert_string_equal(r.tenant, "t");
	assert_string_equal(r.key_id, "key_a");
	assert_string_equal(r.model, "gpt-x");
	assert_string_equal(r.box, "box-2");
	assert_int_equal(r.status, 200);
	assert_int_equal(r.started_ms, T0);
	assert_int_equal(r.duration_ms, 42);
	/* A cut character is U+FFFD, not a refused trace. */
	assert_string_equal(r.rounds, "[{\"code\":\"\xef\xbf\xbd\"}]");
	sg_store_trace_clear(&r);
	assert_null(r.id);
	assert_int_equal(sg_store_trace_get(fx->st, "req_none", &r),
	    SG_STORE_NOTFOUND);
	/* No id, and no rounds: refused, and kept as NULL. */
	t.id = NULL;
	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_ERROR);
	t.id = "req_2";
	t.rounds = NULL;
	t.model = NULL;
	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_OK);
	assert_int_equal(sg_store_trace_get(fx->st, "req_2", &r), SG_STORE_OK);
	assert_null(r.rounds);
	assert_null(r.model);
	sg_store_trace_clear(&r);
}

static void
trace_list_pages_newest_first(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_trace_q q = { .limit = 2 };
	struct tlist l;
	int more = -1;

	tu_trace_add(fx->st, "req_a", "key_a", "gpt-x", 200, T0 + 1);
	/* Two at one ms: the id orders them. */
	tu_trace_add(fx->st, "req_c", "key_b", "gpt-x", 500, T0 + 2);
	tu_trace_add(fx->st, "req_b", "key_a", "gpt-y", 404, T0 + 2);
	tu_trace_add(fx->st, "req_d", "key_a", "gpt-x", 0, T0 + 3);
	tu_trace_add(fx->st, "req_e", "key_a", "gpt-x", 201, T0 + 4);
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_e req_d");
	assert_int_equal(more, 1);
	assert_int_equal(l.rounds, 0);
	q.after = "req_d";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_c req_b");
	assert_int_equal(more, 1);
	q.after = "req_b";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_a");
	assert_int_equal(more, 0);
	/* A page that starts between the two of one ms. */
	q.after = "req_c";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_b req_a");
	assert_int_equal(more, 0);
	q.after = "req_none";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_NOTFOUND);
	q.limit = 0;
	q.after = NULL;
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_ERROR);
}

static void
trace_list_filters(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_trace_q q = { .limit = 10 };
	struct tlist l;
	int more;

	tu_trace_add(fx->st, "req_a", "key_a", "gpt-x", 200, T0 + 1);
	tu_trace_add(fx->st, "req_b", "key_a", "gpt-y", 404, T0 + 2);
	tu_trace_add(fx->st, "req_c", "key_b", "gpt-x", 500, T0 + 2);
	tu_trace_add(fx->st, "req_d", "key_a", "gpt-x", 0, T0 + 3);
	tu_trace_add(fx->st, "req_e", "key_a", "gpt-x", 299, T0 + 4);
	tu_trace_add(fx->st, "req_f", "key_a", "gpt-x", 300, T0 + 5);
	tu_trace_add(fx->st, "req_g", "key_a", "gpt-x", 199, T0 + 6);
	q.key_id = "key_a";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_g req_f req_e req_d req_b req_a");
	q.model = "gpt-x";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_g req_f req_e req_d req_a");
	/* Not 2xx: below 200, from 300 on, and 0 (no answer). */
	q.status = -1;
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_g req_f req_d");
	q.key_id = q.model = NULL;
	q.status = 500;
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_c");
	/* [from, to). */
	q.status = 0;
	q.from_ms = T0 + 2;
	q.to_ms = T0 + 4;
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_d req_c req_b");
	q.to_ms = 0;
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_g req_f req_e req_d req_c req_b");
	/* A page after a trace the filters leave out: not one of them. */
	q.from_ms = 0;
	q.key_id = "key_b";
	q.after = "req_a";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_NOTFOUND);
	q.after = "req_c";
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "");
	assert_int_equal(more, 0);
}

static void
trace_prune_in_bounded_batches(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_trace_row r;
	char id[16];
	int i, removed = -1;

	for (i = 0; i < 7; i++) {
		snprintf(id, sizeof(id), "req_%d", i);
		tu_trace_add(fx->st, id, "key_a", "gpt-x", 200, i < 5 ? T0 : T0 + DAY);
	}
	assert_int_equal(sg_store_trace_prune(fx->st, T0 + DAY, 3, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 3);
	assert_int_equal(sg_store_trace_prune(fx->st, T0 + DAY, 3, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 2);
	assert_int_equal(sg_store_trace_prune(fx->st, T0 + DAY, 3, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 0);
	assert_int_equal(sg_store_trace_get(fx->st, "req_5", &r), SG_STORE_OK);
	sg_store_trace_clear(&r);
	assert_int_equal(sg_store_trace_get(fx->st, "req_4", &r),
	    SG_STORE_NOTFOUND);
}

/* Images as trace_img.c writes them: one of n bytes of base64 (a PNG's
 * signature, then "A"s), in round 1's first run. New. */
static char *
images(size_t n)
{
	static const char pre[] = "[{\"round\":1,\"run\":0,\"url\":"
	    "\"data:image/png;base64,iVBORw0KGgo", post[] = "\"}]";
	size_t len = sizeof(pre) - 1 + (n - 11) + sizeof(post);
	char *s = malloc(len);

	assert_non_null(s);
	memcpy(s, pre, sizeof(pre) - 1);
	memset(s + sizeof(pre) - 1, 'A', n - 11);
	memcpy(s + sizeof(pre) - 1 + (n - 11), post, sizeof(post));
	return s;
}

/* A trace's images, past 2 MiB of base64, come back whole with it, and
 * only with it: a list reads neither them nor the rounds; a trace
 * without images reads NULL. */
static void
images_round_trip(void **state)
{
	struct tu_store_fx *fx = *state;
	char *img = images(2 * 1024 * 1024 + 100);
	struct sg_store_trace t = { .id = "req_img", .tenant = "t", .key_id =
	    "key_a", .model = "gpt-x", .status = 200, .started_ms = T0 + 1,
	    .duration_ms = 9, .rounds = "[]", .images = img };
	struct sg_store_trace_q q = { .limit = 10 };
	struct sg_store_trace_row r;
	struct tlist l;
	int more;

	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_OK);
	tu_trace_add(fx->st, "req_none", "key_a", "gpt-x", 200, T0);
	assert_int_equal(sg_store_trace_get(fx->st, "req_img", &r),
	    SG_STORE_OK);
	assert_non_null(r.images);
	assert_int_equal(strlen(r.images), strlen(img));
	assert_string_equal(r.images, img);
	assert_string_equal(r.rounds, "[]");
	sg_store_trace_clear(&r);
	assert_null(r.images);
	assert_int_equal(sg_store_trace_get(fx->st, "req_none", &r),
	    SG_STORE_OK);
	assert_null(r.images);
	assert_non_null(r.rounds);
	sg_store_trace_clear(&r);
	assert_int_equal(list(fx->st, &q, &l, &more), SG_STORE_OK);
	assert_string_equal(l.text, "req_img req_none");
	assert_int_equal(l.rounds, 0);
	assert_int_equal(l.images, 0);
	free(img);
}

/* Pruned, a trace's images go with it; a kept one keeps its own. */
static void
images_pruned_with_the_trace(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_trace t = { .id = "req_old", .tenant = "t", .key_id =
	    "key_a", .started_ms = T0, .rounds = "[]" };
	char *img = images(4000), out[64];
	int removed = -1;

	t.images = img;
	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_OK);
	t.id = "req_new";
	t.started_ms = T0 + DAY;
	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_OK);
	assert_int_equal(sg_store_trace_prune(fx->st, T0 + DAY, 10, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(tu_raw_sql(fx->path, "SELECT count(*) || ' ' || "
	    "min(id) FROM traces WHERE images IS NOT NULL", out, sizeof(out)),
	    0);
	assert_string_equal(out, "1 req_new");
	free(img);
}

/* `migrate --to` copies a trace's images (SQLite into the fixture's
 * store, PostgreSQL in that run). */
static void
images_copied(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_trace t = { .id = "req_c", .tenant = "t", .key_id =
	    "key_a", .started_ms = T0, .rounds = "[]" };
	struct sg_store_trace_row r;
	struct sg_store *src;
	char path[192], err[256], *img = images(40000);
	int64_t rows = 0;

	snprintf(path, sizeof(path), "%s/source.db", fx->dir);
	assert_int_equal(sg_store_open(path, &src, err, sizeof(err)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_migrate(src), SG_STORE_OK);
	t.images = img;
	assert_int_equal(sg_store_trace_add(src, &t), SG_STORE_OK);
	if (sg_store_copy(src, fx->st, &rows) != SG_STORE_OK)
		fail_msg("copy: %s", sg_store_errmsg(src));
	assert_int_equal(rows, 1);
	assert_int_equal(sg_store_trace_get(fx->st, "req_c", &r), SG_STORE_OK);
	assert_string_equal(r.images, img);
	sg_store_trace_clear(&r);
	sg_store_close(src);
	free(img);
}

/* A store of schema 10 (traces without images): its traces stay, read
 * with no images, and the step adds the column new traces write. */
static void
migrate_10_to_11_keeps_traces(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_trace t = { .id = "req_new", .tenant = "t", .key_id =
	    "key_a", .started_ms = T0, .rounds = "[]", .images = "[]" };
	struct sg_store_trace_row r;
	char err[256];
	int v = -1;

	tu_trace_add(fx->st, "req_old", "key_a", "gpt-x", 200, T0);
	assert_int_equal(tu_raw_sql_store(fx->st, "ALTER TABLE traces DROP "
	    "COLUMN images; DROP TABLE conversation_items; DROP TABLE "
	    "conversations; DROP TABLE resp_events; DROP TABLE bg; DROP TABLE "
	    "mcp_sessions; DROP TABLE mcp_cancels"), 0);
	assert_int_equal(tu_raw_sql_store(fx->st, tu_store_url != NULL ?
	    "UPDATE sg_schema SET version = 10" : "PRAGMA user_version=10"), 0);
	sg_store_close(fx->st);
	assert_int_equal(tu_store_open(fx->path, &fx->st, err, sizeof(err), 0),
	    SG_STORE_OK);
	assert_int_equal(sg_store_version(fx->st, &v), SG_STORE_OK);
	assert_int_equal(v, 10);
	/* At 10 there is no column for them. */
	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_ERROR);
	if (sg_store_migrate(fx->st) != SG_STORE_OK)
		fail_msg("migrate: %s", sg_store_errmsg(fx->st));
	assert_int_equal(sg_store_version(fx->st, &v), SG_STORE_OK);
	assert_int_equal(v, SG_STORE_SCHEMA_VERSION);
	assert_int_equal(sg_store_trace_get(fx->st, "req_old", &r),
	    SG_STORE_OK);
	assert_string_equal(r.rounds, "[{\"code\":\"print(1)\"}]");
	assert_null(r.images);
	sg_store_trace_clear(&r);
	assert_int_equal(sg_store_trace_add(fx->st, &t), SG_STORE_OK);
	assert_int_equal(sg_store_trace_get(fx->st, "req_new", &r),
	    SG_STORE_OK);
	assert_string_equal(r.images, "[]");
	sg_store_trace_clear(&r);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(trace_add_get),
		T(trace_list_pages_newest_first),
		T(trace_list_filters),
		T(trace_prune_in_bounded_batches),
		T(images_round_trip),
		T(images_pruned_with_the_trace),
		T(images_copied),
		T(migrate_10_to_11_keeps_traces),
	};

	TU_STORE_MAIN(tests);
}
