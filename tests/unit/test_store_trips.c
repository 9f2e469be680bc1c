/*
 * The store's folded statements (a session's request in few round trips):
 * the run lock taken with its row read, released with its touches in one
 * batch (deferred on PostgreSQL to the next statement, or a flush), the
 * session read and touched in one statement, a batch of writes all or
 * nothing. On PostgreSQL the round trips are counted too.
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

#include "../../store/internal.h"
#include "testutil.h"

#define A "aaaa"

/* A kept sandbox of A's, ready, and its session "s1". */
static void
session_with_sandbox(struct tu_store_fx *fx, const char *id)
{
	char sbx[48], victim[48];
	int created, lost;

	assert_int_equal(sg_store_sess_claim(fx->st, A, "s1", id, "e2b", 1, 1,
	    time(NULL) + 600, 10, sbx, victim, &created, &lost), SG_STORE_OK);
	assert_int_equal(created, 1);
	assert_int_equal(sg_store_sbx_ready(fx->st, id, "{\"h\":1}",
	    time(NULL) + 600), SG_STORE_OK);
}

/* Round trips since *mark (PostgreSQL), *mark moved on. */
static int
trips(struct tu_store_fx *fx, uint64_t *mark)
{
	uint64_t n = fx->st->trips - *mark;

	*mark = fx->st->trips;
	return (int)n;
}

static void
session_used_in_one_statement(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sess s;
	uint64_t mark;

	assert_int_equal(sg_store_sess_use(fx->st, A, "none", &s),
	    SG_STORE_NOTFOUND);
	session_with_sandbox(fx, "cntr_1");
	assert_int_equal(tu_raw_sql(fx->path, "UPDATE sessions SET "
	    "last_used_at = 5", NULL, 0), 0);
	mark = fx->st->trips;
	assert_int_equal(sg_store_sess_use(fx->st, A, "s1", &s), SG_STORE_OK);
	if (tu_store_url != NULL)
		assert_int_equal(trips(fx, &mark), 1);
	assert_string_equal(s.sandbox_id, "cntr_1");
	assert_string_equal(s.tool, "e2b");
	assert_string_equal(s.state, "ready");
	assert_int_equal(sg_store_flush(fx->st), SG_STORE_OK);
	/* Touched; sg_store_sess_get only reads. */
	assert_int_equal(tu_raw_sql(fx->path, "UPDATE sessions SET "
	    "last_used_at = 5", NULL, 0), 0);
	assert_int_equal(sg_store_sess_get(fx->st, A, "s1", &s), SG_STORE_OK);
	assert_string_equal(s.state, "ready");
	{
		char v[32];

		assert_int_equal(tu_raw_sql(fx->path, "SELECT last_used_at "
		    "FROM sessions", v, sizeof(v)), 0);
		assert_string_equal(v, "5");
		/* The touch above was this connection's in this second: as
		 * if a second went by. */
		fx->st->touched_at = 0;
		assert_int_equal(sg_store_sess_use(fx->st, A, "s1", &s),
		    SG_STORE_OK);
		/* PostgreSQL's touch goes with the next statement. */
		assert_int_equal(sg_store_flush(fx->st), SG_STORE_OK);
		assert_int_equal(tu_raw_sql(fx->path, "SELECT last_used_at "
		    "FROM sessions", v, sizeof(v)), 0);
		assert_true(atoll(v) >= (long long)time(NULL) - 5);
		/* Used again in the second this connection touched it: the
		 * touch would change nothing, and is not sent (set back
		 * here behind its back, the row shows it was not). */
		assert_int_equal(tu_raw_sql(fx->path, "UPDATE sessions SET "
		    "last_used_at = 5", NULL, 0), 0);
		fx->st->touched_at = (int64_t)time(NULL);
		mark = fx->st->trips;
		assert_int_equal(sg_store_sess_use(fx->st, A, "s1", &s),
		    SG_STORE_OK);
		assert_int_equal(sg_store_flush(fx->st), SG_STORE_OK);
		if (tu_store_url != NULL)
			assert_int_equal(trips(fx, &mark), 1);
		assert_int_equal(tu_raw_sql(fx->path, "SELECT last_used_at "
		    "FROM sessions", v, sizeof(v)), 0);
		assert_string_equal(v, "5");
		assert_string_equal(s.sandbox_id, "cntr_1");
	}
	/* A session whose sandbox went: found, with no sandbox. */
	assert_int_equal(sg_store_sbx_remove(fx->st, "cntr_1"), SG_STORE_OK);
	assert_int_equal(sg_store_sess_use(fx->st, A, "s1", &s), SG_STORE_OK);
	assert_string_equal(s.sandbox_id, "");
	assert_string_equal(s.state, "");
}

static void
run_lock_taken_with_its_row(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	int64_t now = time(NULL);
	uint64_t mark;

	session_with_sandbox(fx, "cntr_1");
	/* No such sandbox: as a held one (the caller looks further). The
	 * statement is prepared now: counted from its next use. */
	assert_int_equal(sg_store_sbx_run_take(fx->st, "cntr_none", 22, 7,
	    now + 60, &row), SG_STORE_EXISTS);
	mark = fx->st->trips;
	assert_int_equal(sg_store_sbx_run_take(fx->st, "cntr_1", 11, 7,
	    now + 60, &row), SG_STORE_OK);
	if (tu_store_url != NULL)
		assert_int_equal(trips(fx, &mark), 1);
	assert_string_equal(row.id, "cntr_1");
	assert_string_equal(row.tenant, A);
	assert_string_equal(row.state, "ready");
	assert_string_equal(row.handle, "{\"h\":1}");
	assert_int_equal(row.runner_pid, 11);
	/* What its files were, read with it: none listed yet. */
	assert_string_equal(row.seen, "{}");
	sg_store_sbx_clear(&row);
	assert_null(row.seen);
	assert_int_equal(sg_store_sbx_run_end(fx->st, "cntr_1", 11),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_set_seen(fx->st, "cntr_1",
	    "{\"/mnt/data/a\":\"1|t\"}"), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_run_take(fx->st, "cntr_1", 11, 7,
	    now + 60, &row), SG_STORE_OK);
	assert_string_equal(row.seen, "{\"/mnt/data/a\":\"1|t\"}");
	sg_store_sbx_clear(&row);
	/* Held: another is refused, and nothing is read back. */
	assert_int_equal(sg_store_sbx_run_take(fx->st, "cntr_1", 22, 7,
	    now + 60, &row), SG_STORE_EXISTS);
}

/* The run lock's holder and expires_at of cntr_1, read by another
 * connection (on SQLite the lock is in the runs' table, not the row). */
static void
lock_of(struct tu_store_fx *fx, char pid[32], char exp[32])
{
	struct sg_store_sbx row;
	struct sg_store *other;
	char err[256];

	assert_int_equal(tu_store_open(fx->path, &other, err, sizeof(err), 0),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_get(other, "cntr_1", NULL, &row),
	    SG_STORE_OK);
	snprintf(pid, 32, "%lld", (long long)row.runner_pid);
	snprintf(exp, 32, "%lld", (long long)row.expires_at);
	sg_store_sbx_clear(&row);
	sg_store_close(other);
}

static void
run_done_releases_only_its_own_and_touches(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	int64_t now = time(NULL);
	char pid[32], exp[32];

	session_with_sandbox(fx, "cntr_1");
	assert_int_equal(tu_raw_sql(fx->path, "UPDATE sessions SET "
	    "last_used_at = 5", NULL, 0), 0);
	assert_int_equal(sg_store_sbx_run_take(fx->st, "cntr_1", 11, 7,
	    now + 60, &row), SG_STORE_OK);
	sg_store_sbx_clear(&row);
	/* Another's end: the sandbox touched, its lock kept. */
	assert_int_equal(sg_store_sbx_run_done(fx->st, "cntr_1", 22, 12345,
	    NULL, NULL, 0), SG_STORE_OK);
	lock_of(fx, pid, exp);
	assert_string_equal(pid, "11");
	assert_string_equal(exp, "12345");
	/* Its own: released, touched, and its session touched. */
	assert_int_equal(sg_store_sbx_run_done(fx->st, "cntr_1", 11, 23456,
	    A, "s1", 0), SG_STORE_OK);
	lock_of(fx, pid, exp);
	assert_string_equal(pid, "0");
	assert_string_equal(exp, "23456");
	assert_int_equal(tu_raw_sql(fx->path, "SELECT last_used_at FROM "
	    "sessions", pid, sizeof(pid)), 0);
	assert_true(atoll(pid) >= (long long)now - 5);
	/* No touch (a failed run): released only. */
	assert_int_equal(sg_store_sbx_run_take(fx->st, "cntr_1", 11, 7,
	    now + 60, &row), SG_STORE_OK);
	sg_store_sbx_clear(&row);
	assert_int_equal(sg_store_sbx_run_done(fx->st, "cntr_1", 11, 0, NULL,
	    NULL, 0), SG_STORE_OK);
	lock_of(fx, pid, exp);
	assert_string_equal(pid, "0");
	assert_string_equal(exp, "23456");
}

static void
run_done_later_goes_with_the_next_statement(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	int64_t now = time(NULL);
	char pid[32], exp[32];
	uint64_t mark;

	session_with_sandbox(fx, "cntr_1");
	assert_int_equal(sg_store_sbx_run_take(fx->st, "cntr_1", 11, 7,
	    now + 60, &row), SG_STORE_OK);
	sg_store_sbx_clear(&row);
	mark = fx->st->trips;
	assert_int_equal(sg_store_sbx_run_done(fx->st, "cntr_1", 11, 34567,
	    A, "s1", 1), SG_STORE_OK);
	lock_of(fx, pid, exp);
	if (tu_store_url != NULL) {
		/* Not sent yet: still held, as others see it. */
		assert_int_equal(trips(fx, &mark), 0);
		assert_string_equal(pid, "11");
	} else
		assert_string_equal(pid, "0");
	/* The next statement carries it: one round trip for both. */
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_1", A, &row),
	    SG_STORE_OK);
	if (tu_store_url != NULL)
		assert_int_equal(trips(fx, &mark), 1);
	assert_int_equal(row.runner_pid, 0);
	assert_int_equal(row.expires_at, 34567);
	sg_store_sbx_clear(&row);
	/* A flush sends it when no statement comes. */
	assert_int_equal(sg_store_sbx_run_take(fx->st, "cntr_1", 11, 7,
	    now + 60, &row), SG_STORE_OK);
	sg_store_sbx_clear(&row);
	assert_int_equal(sg_store_sbx_run_done(fx->st, "cntr_1", 11, 45678,
	    NULL, NULL, 1), SG_STORE_OK);
	assert_int_equal(sg_store_flush(fx->st), SG_STORE_OK);
	lock_of(fx, pid, exp);
	assert_string_equal(pid, "0");
	assert_string_equal(exp, "45678");
	assert_int_equal(sg_store_flush(fx->st), SG_STORE_OK);
	/* Deferred before a transaction: sent before it, not in it (a
	 * claim that rolls back must not take the release with it). */
	assert_int_equal(sg_store_sbx_run_take(fx->st, "cntr_1", 11, 7,
	    now + 60, &row), SG_STORE_OK);
	sg_store_sbx_clear(&row);
	assert_int_equal(sg_store_sbx_run_done(fx->st, "cntr_1", 11, 56789,
	    NULL, NULL, 1), SG_STORE_OK);
	assert_int_equal(sg_st_begin(fx->st), SG_STORE_OK);
	assert_int_equal(sg_st_end(fx->st, SG_STORE_ERROR), SG_STORE_ERROR);
	lock_of(fx, pid, exp);
	assert_string_equal(pid, "0");
	assert_string_equal(exp, "56789");
}

/* A stored response of a few items: one round trip, all or nothing. */
static void
response_saved_in_one_round_trip(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_item in[1] = { { .id = "msg_1", .item = "{\"a\":\"it's\"}",
	    .upstream = "[\"\\\\ back\"]" } };
	struct sg_store_item out[2] = { { .id = "ci_1", .item = "{}",
	    .upstream = "[]" }, { .id = "msg_2", .item = "{\"b\":2}",
	    .upstream = "[]" } };
	struct sg_store_resp r = { .id = "resp_1", .tenant = A, .model = "m",
	    .body = "{\"x\":\"y'z\"}" };
	char v[64];
	uint64_t mark = fx->st->trips;

	assert_int_equal(sg_store_resp_save(fx->st, &r, in, 1, out, 2),
	    SG_STORE_OK);
	if (tu_store_url != NULL)
		assert_int_equal(trips(fx, &mark), 1);
	assert_int_equal(tu_raw_sql(fx->path, "SELECT count(*) FROM "
	    "response_items WHERE response_id = 'resp_1'", v, sizeof(v)), 0);
	assert_string_equal(v, "3");
	/* Quotes and backslashes arrive as they were. */
	assert_int_equal(tu_raw_sql(fx->path, "SELECT item FROM response_items "
	    "WHERE item_id = 'msg_1'", v, sizeof(v)), 0);
	assert_string_equal(v, "{\"a\":\"it's\"}");
	assert_int_equal(tu_raw_sql(fx->path, "SELECT upstream FROM "
	    "response_items WHERE item_id = 'msg_1'", v, sizeof(v)), 0);
	assert_string_equal(v, "[\"\\\\ back\"]");
	assert_int_equal(tu_raw_sql(fx->path, "SELECT body FROM responses "
	    "WHERE id = 'resp_1'", v, sizeof(v)), 0);
	assert_string_equal(v, "{\"x\":\"y'z\"}");
	/* Again: the response exists, and none of its items went in. */
	r.id = "resp_1";
	out[0].id = "ci_9";
	assert_int_equal(sg_store_resp_save(fx->st, &r, NULL, 0, out, 1),
	    SG_STORE_EXISTS);
	assert_int_equal(tu_raw_sql(fx->path, "SELECT count(*) FROM "
	    "response_items WHERE item_id = 'ci_9'", v, sizeof(v)), 0);
	assert_string_equal(v, "0");
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(session_used_in_one_statement),
		T(run_lock_taken_with_its_row),
		T(run_done_releases_only_its_own_and_touches),
		T(run_done_later_goes_with_the_next_statement),
		T(response_saved_in_one_round_trip),
	};

	TU_STORE_MAIN(tests);
}
