/*
 * store/conversations: a conversation kept per tenant with its items in
 * the order they came, paged both ways after an item, found by no other
 * tenant, its container moved by an append, deleted with its items,
 * pruned by idleness, and copied by `migrate --to`. On SQLite, then on
 * PostgreSQL when SG_TEST_PG is set.
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
#include "../../store/conversations.h"
#include "testutil.h"

#define A "aaaa"
#define B "bbbb"

struct seen {
	char	 text[512];
	int	 n;
};

static int
note(void *arg, const struct sg_store_item *it)
{
	struct seen *s = arg;
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%s%s=%s", s->n++ ? ";" :
	    "", it->id, it->upstream != NULL ? it->upstream : "-");
	return 0;
}

/* The page's ids and upstreams, and whether more are left. */
static const char *
page(struct sg_store *st, const char *id, const char *after, int limit,
    int desc, struct seen *s, int *more)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(sg_store_conv_items(st, id, after, limit, desc, note, s,
	    more), SG_STORE_OK);
	return s->text;
}

static void
add(struct sg_store *st, const char *id, const char *item_id,
    const char *sandbox)
{
	struct sg_store_item it = { item_id, "{\"type\":\"message\"}", NULL };

	assert_int_equal(sg_store_conv_append(st, id, A, &it, 1, sandbox),
	    SG_STORE_OK);
}

static void
test_create_get_update(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_item first[] = {
		{ "msg_1", "{\"type\":\"message\"}", NULL },
		{ "ci_1", "{\"type\":\"code_interpreter_call\"}",
		    "[{\"type\":\"function_call\"}]" },
	};
	struct sg_store_conv c;
	struct seen s;
	int more;

	assert_int_equal(sg_store_conv_create(fx->st, "conv_1", A,
	    "{\"k\":\"v\"}", first, 2, "cntr_1"), SG_STORE_OK);
	assert_int_equal(sg_store_conv_create(fx->st, "conv_1", A, NULL, NULL,
	    0, NULL), SG_STORE_EXISTS);
	assert_int_equal(sg_store_conv_get(fx->st, "conv_1", A, &c),
	    SG_STORE_OK);
	assert_string_equal(c.id, "conv_1");
	assert_string_equal(c.metadata, "{\"k\":\"v\"}");
	assert_string_equal(c.sandbox_id, "cntr_1");
	assert_true(c.created_at > 0 && c.used_at >= c.created_at);
	sg_store_conv_clear(&c);
	/* Another key's is not there, for any call. */
	assert_int_equal(sg_store_conv_get(fx->st, "conv_1", B, &c),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_conv_update(fx->st, "conv_1", B, NULL),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_conv_append(fx->st, "conv_1", B, first, 1,
	    NULL), SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_conv_delete(fx->st, "conv_1", B),
	    SG_STORE_NOTFOUND);
	assert_string_equal(page(fx->st, "conv_1", NULL, 0, 0, &s, &more),
	    "msg_1=-;ci_1=[{\"type\":\"function_call\"}]");
	/* Update replaces the metadata; NULL takes it away. */
	assert_int_equal(sg_store_conv_update(fx->st, "conv_1", A, NULL),
	    SG_STORE_OK);
	assert_int_equal(sg_store_conv_get(fx->st, "conv_1", A, &c),
	    SG_STORE_OK);
	assert_null(c.metadata);
	sg_store_conv_clear(&c);
}

static void
test_items_paged(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_conv c;
	struct seen s;
	char *item;
	int more;

	assert_int_equal(sg_store_conv_create(fx->st, "conv_1", A, NULL, NULL,
	    0, NULL), SG_STORE_OK);
	assert_int_equal(sg_store_conv_create(fx->st, "conv_2", A, NULL, NULL,
	    0, NULL), SG_STORE_OK);
	add(fx->st, "conv_1", "i1", NULL);
	add(fx->st, "conv_2", "other", NULL);
	add(fx->st, "conv_1", "i2", "cntr_x");
	add(fx->st, "conv_1", "i3", NULL);
	/* A NULL container leaves the last one. */
	assert_int_equal(sg_store_conv_get(fx->st, "conv_1", A, &c),
	    SG_STORE_OK);
	assert_string_equal(c.sandbox_id, "cntr_x");
	sg_store_conv_clear(&c);
	assert_string_equal(page(fx->st, "conv_1", NULL, 2, 0, &s, &more),
	    "i1=-;i2=-");
	assert_true(more);
	assert_string_equal(page(fx->st, "conv_1", "i2", 2, 0, &s, &more),
	    "i3=-");
	assert_false(more);
	assert_string_equal(page(fx->st, "conv_1", NULL, 2, 1, &s, &more),
	    "i3=-;i2=-");
	assert_true(more);
	assert_string_equal(page(fx->st, "conv_1", "i2", 5, 1, &s, &more),
	    "i1=-");
	assert_false(more);
	assert_string_equal(page(fx->st, "conv_1", "", 3, 0, &s, &more),
	    "i1=-;i2=-;i3=-");
	assert_false(more);
	/* after names an item of this conversation only. */
	assert_int_equal(sg_store_conv_items(fx->st, "conv_1", "other", 5, 0,
	    note, &s, &more), SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_conv_item_get(fx->st, "conv_1", A, "i2",
	    &item), SG_STORE_OK);
	assert_string_equal(item, "{\"type\":\"message\"}");
	free(item);
	assert_int_equal(sg_store_conv_item_get(fx->st, "conv_1", B, "i2",
	    &item), SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_conv_item_get(fx->st, "conv_1", A, "other",
	    &item), SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_conv_item_delete(fx->st, "conv_1", B, "i2"),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_conv_item_delete(fx->st, "conv_1", A, "i2"),
	    SG_STORE_OK);
	assert_int_equal(sg_store_conv_item_delete(fx->st, "conv_1", A, "i2"),
	    SG_STORE_NOTFOUND);
	assert_string_equal(page(fx->st, "conv_1", NULL, 0, 0, &s, &more),
	    "i1=-;i3=-");
}

static void
test_delete_and_prune(void **state)
{
	struct tu_store_fx *fx = *state;
	struct seen s;
	char n[64];
	int removed, more;

	assert_int_equal(sg_store_conv_create(fx->st, "conv_1", A, NULL, NULL,
	    0, NULL), SG_STORE_OK);
	add(fx->st, "conv_1", "i1", NULL);
	assert_int_equal(sg_store_conv_delete(fx->st, "conv_1", A), SG_STORE_OK);
	assert_int_equal(sg_store_conv_delete(fx->st, "conv_1", A),
	    SG_STORE_NOTFOUND);
	/* Its items went with it. */
	assert_string_equal(page(fx->st, "conv_1", NULL, 0, 0, &s, &more), "");
	assert_int_equal(sg_store_conv_create(fx->st, "conv_2", A, NULL, NULL,
	    0, NULL), SG_STORE_OK);
	add(fx->st, "conv_2", "i1", NULL);
	assert_int_equal(sg_store_conv_prune(fx->st, (int64_t)time(NULL) - 60,
	    10, &removed), SG_STORE_OK);
	assert_int_equal(removed, 0);
	assert_int_equal(sg_store_conv_prune(fx->st, (int64_t)time(NULL) + 60,
	    10, &removed), SG_STORE_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(tu_raw_sql(fx->path, "SELECT count(*) FROM "
	    "conversation_items", n, sizeof(n)), 0);
	assert_string_equal(n, "0");
}

/* `migrate --to` takes conversations and their items, in order. */
static void
test_copy(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store *src;
	struct sg_store_conv c;
	struct seen s;
	char path[192], err[256];
	int64_t rows = 0;
	int more;

	snprintf(path, sizeof(path), "%s/source.db", fx->dir);
	assert_int_equal(sg_store_open(path, &src, err, sizeof(err)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_migrate(src), SG_STORE_OK);
	assert_int_equal(sg_store_conv_create(src, "conv_1", A, "{}", NULL, 0,
	    "cntr_1"), SG_STORE_OK);
	add(src, "conv_1", "i1", NULL);
	add(src, "conv_1", "i2", NULL);
	if (sg_store_copy(src, fx->st, &rows) != SG_STORE_OK)
		fail_msg("copy: %s", sg_store_errmsg(src));
	assert_int_equal(rows, 3);
	assert_int_equal(sg_store_conv_get(fx->st, "conv_1", A, &c),
	    SG_STORE_OK);
	assert_string_equal(c.metadata, "{}");
	assert_string_equal(c.sandbox_id, "cntr_1");
	sg_store_conv_clear(&c);
	assert_string_equal(page(fx->st, "conv_1", NULL, 0, 0, &s, &more),
	    "i1=-;i2=-");
	sg_store_close(src);
}

/* A store of schema 11 (before conversations) is brought to this one,
 * its rows kept, and then keeps conversations. */
static void
test_migrate_11(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_conv c;
	char err[256], up[64];
	int v = -1;

	assert_int_equal(sg_store_resp_put(fx->st, "resp_1", A, "up_1", "m",
	    NULL), SG_STORE_OK);
	assert_int_equal(tu_raw_sql_store(fx->st, "DROP TABLE "
	    "conversation_items; DROP TABLE conversations; DROP TABLE "
	    "resp_events; DROP TABLE bg; DROP TABLE mcp_sessions; DROP TABLE "
	    "mcp_cancels"), 0);
	assert_int_equal(tu_raw_sql_store(fx->st, tu_store_url != NULL ?
	    "UPDATE sg_schema SET version = 11" : "PRAGMA user_version=11"), 0);
	sg_store_close(fx->st);
	assert_int_equal(tu_store_open(fx->path, &fx->st, err, sizeof(err), 0),
	    SG_STORE_OK);
	assert_int_equal(sg_store_conv_create(fx->st, "conv_1", A, NULL, NULL,
	    0, NULL), SG_STORE_ERROR);
	if (sg_store_migrate(fx->st) != SG_STORE_OK)
		fail_msg("migrate: %s", sg_store_errmsg(fx->st));
	assert_int_equal(sg_store_version(fx->st, &v), SG_STORE_OK);
	assert_int_equal(v, SG_STORE_SCHEMA_VERSION);
	assert_int_equal(sg_store_resp_get(fx->st, "resp_1", A, up, sizeof(up),
	    NULL, 0), SG_STORE_OK);
	assert_string_equal(up, "up_1");
	assert_int_equal(sg_store_conv_create(fx->st, "conv_1", A, NULL, NULL,
	    0, NULL), SG_STORE_OK);
	assert_int_equal(sg_store_conv_get(fx->st, "conv_1", A, &c),
	    SG_STORE_OK);
	sg_store_conv_clear(&c);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)
	const struct CMUnitTest tests[] = {
		T(test_create_get_update),
		T(test_items_paged),
		T(test_delete_and_prune),
		T(test_copy),
		T(test_migrate_11),
	};

	TU_STORE_MAIN(tests);
}
