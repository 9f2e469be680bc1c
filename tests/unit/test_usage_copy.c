/*
 * store/usage across stores and schemas: `migrate --to` takes the
 * ledger, the traces and the keys' settings (a source's rows without a
 * box get its box); a store of schema 9 is brought to this one with its
 * rows. On SQLite, then on PostgreSQL when SG_TEST_PG is set.
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
#include "../../lib/util.h"
#include "testutil.h"
#include "usagetest.h"

/* `migrate --to` takes the ledger, the traces and the key's settings;
 * rows from a source without a box get its box. */
static void
copy_takes_the_ledger(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_use_q q = { .from_ms = T0, .to_ms = T0 + 3 * DAY,
	    .bucket_ms = 3 * DAY, .by = SG_USE_BY_KEY };
	struct sg_store *src, *dst;
	struct sg_store_trace_row r;
	struct sg_store_key k;
	struct sums l;
	char path[192], h[65], buf[128], err[256], out[64];
	int64_t rows = 0;

	snprintf(path, sizeof(path), "%s/source.db", fx->dir);
	assert_int_equal(sg_store_open(path, &src, err, sizeof(err)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_migrate(src), SG_STORE_OK);
	assert_int_equal(sg_store_set_box(src, "box-src"), SG_STORE_OK);
	sg_sha256_hex("a", 1, h);
	assert_int_equal(sg_store_key_add(src, "alice", h), SG_STORE_OK);
	assert_int_equal(sg_store_key_settings(src, "alice", "{\"x\":1}"),
	    SG_STORE_OK);
	fill(src);
	tu_trace_add(src, "req_t", "key_a", "gpt-x", 200, T0);
	assert_int_equal(tu_raw_sql_store(src, "UPDATE traces SET box = NULL"),
	    0);
	/* The fixture's store is the target (PostgreSQL in that run): a
	 * fresh one, empty. */
	dst = fx->st;
	if (sg_store_copy(src, dst, &rows) != SG_STORE_OK)
		fail_msg("copy: %s", sg_store_errmsg(src));
	/* A key, six rows, a trace, and the rows' five key-days of spend. */
	assert_int_equal(rows, 1 + 6 + 1 + 5);
	assert_int_equal(sg_store_key_get(dst, h, &k, buf, sizeof(buf)),
	    SG_STORE_OK);
	assert_string_equal(k.settings, "{\"x\":1}");
	assert_string_equal(sums(dst, &q, &l),
	    "0 key_a/name_key_a - - 3 700 70\n"
	    "0 key_b/name_key_b - - 3 900 90\n");
	sql(fx, "SELECT count(DISTINCT box) || ' ' || min(box) || ' ' || "
	    "sum(cost_input) FROM usage", out, sizeof(out));
	assert_string_equal(out, "1 box-src 1600000");
	assert_int_equal(sg_store_trace_get(dst, "req_t", &r), SG_STORE_OK);
	assert_string_equal(r.box, "box-src");
	assert_string_equal(r.rounds, "[{\"code\":\"print(1)\"}]");
	sg_store_trace_clear(&r);
	sg_store_close(src);
}

/*
 * A store of schema 9 with rows, made as this sandgate's step 10 undone
 * (both dialects), is brought to 10 with its rows kept.
 */
static void
migrate_9_to_10_keeps_rows(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	struct sg_store_key k;
	struct sg_store_use r = use("req_1", "key_a", "gpt-x", T0, 1, 1);
	struct sg_store_trace_row tr;
	char h[65], buf[128], name[64], err[256];
	int v = -1;

	sg_sha256_hex("a", 1, h);
	assert_int_equal(sg_store_key_add(fx->st, "alice", h), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_begin(fx->st, "cntr_1", "alice", "local",
	    1, 2, 4102444800), SG_STORE_OK);
	assert_int_equal(tu_raw_sql_store(fx->st, "DROP TABLE usage; DROP "
	    "TABLE traces; DROP TABLE spend; DROP TABLE rates; ALTER TABLE keys DROP COLUMN settings; "
	    "DROP TABLE conversation_items; DROP TABLE conversations; "
	    "DROP TABLE resp_events; DROP TABLE bg; DROP TABLE mcp_sessions; "
	    "DROP TABLE mcp_cancels"), 0);
	assert_int_equal(tu_raw_sql_store(fx->st, tu_store_url != NULL ?
	    "UPDATE sg_schema SET version = 9" : "PRAGMA user_version=9"), 0);
	sg_store_close(fx->st);
	assert_int_equal(tu_store_open(fx->path, &fx->st, err, sizeof(err), 0),
	    SG_STORE_OK);
	assert_int_equal(sg_store_version(fx->st, &v), SG_STORE_OK);
	assert_int_equal(v, 9);
	/* At 9 the ledger is not there. */
	assert_int_equal(sg_store_use_add(fx->st, &r, 1), SG_STORE_ERROR);
	if (sg_store_migrate(fx->st) != SG_STORE_OK)
		fail_msg("migrate: %s", sg_store_errmsg(fx->st));
	assert_int_equal(sg_store_version(fx->st, &v), SG_STORE_OK);
	assert_int_equal(v, SG_STORE_SCHEMA_VERSION);
	assert_int_equal(tu_key_find(fx->st, h, name, sizeof(name)),
	    SG_STORE_OK);
	assert_string_equal(name, "alice");
	assert_int_equal(sg_store_key_get(fx->st, h, &k, buf, sizeof(buf)),
	    SG_STORE_OK);
	assert_null(k.settings);
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_1", "alice", &row),
	    SG_STORE_OK);
	sg_store_sbx_clear(&row);
	add(fx->st, &r, 1);
	tu_trace_add(fx->st, "req_1", "key_a", "gpt-x", 200, T0);
	assert_int_equal(sg_store_trace_get(fx->st, "req_1", &tr), SG_STORE_OK);
	sg_store_trace_clear(&tr);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(copy_takes_the_ledger),
		T(migrate_9_to_10_keeps_rows),
	};

	TU_STORE_MAIN(tests);
}
