/*
 * store/store: the sandboxes table (record before create, ready with the
 * handle, get per tenant, list, touch, mark, remove), and sg_proc_start,
 * which names the owner of a "creating" row.
 *
 * Each test gets a fresh store in its own temp dir. Timestamps the store
 * takes from the clock are checked against the clock read around the
 * call; a second connection sets created_at where an order must be known.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/prctl.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "../../store/store.h"
#include "../../lib/util.h"
#include "testutil.h"

/* Tenants are key hashes (64 hex digits) or "anonymous". */
#define TENANT_A "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define TENANT_B "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
#define HANDLE_E2B "{\"id\":\"i8x0ok2n5a3c\",\"token\":\"ea9c\",\"domain\":\"e2b.app\"}"

/* ---------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------- */

/* begin, failing the test unless it is OK. */
static void
begin(struct tu_store_fx *fx, const char *id, const char *tenant,
    const char *tool, int64_t expires_at)
{
	int rc = sg_store_sbx_begin(fx->st, id, tenant, tool, 4242, 987654321,
	    expires_at);

	if (rc != SG_STORE_OK)
		fail_msg("begin %s: %d %s", id, rc, sg_store_errmsg(fx->st));
}

/* get, failing the test unless it is OK; clear *row after. */
static void
get_ok(struct tu_store_fx *fx, const char *id, const char *tenant,
    struct sg_store_sbx *row)
{
	int rc = sg_store_sbx_get(fx->st, id, tenant, row);

	if (rc != SG_STORE_OK)
		fail_msg("get %s (tenant %s): %d %s", id, tenant ? tenant :
		    "NULL", rc, sg_store_errmsg(fx->st));
}

/* Raw SQL on a second connection, as another process would see it. */
static void
raw_sql(struct tu_store_fx *fx, const char *sql)
{
	assert_int_equal(tu_raw_sql(fx->path, sql, NULL, 0), 0);
}

/* Rows of a listing: ids, and whether each had a handle. */
#define MAXROWS 16
struct listing {
	int	 n;
	char	 id[MAXROWS][48];
	char	 tenant[MAXROWS][65];
	int	 has_handle[MAXROWS];
	int	 stop_after;	/* return -1 after this many rows; 0: never */
};

static int
collect(void *arg, const struct sg_store_sbx *row)
{
	struct listing *l = arg;

	if (l->n >= MAXROWS)
		return -1;
	snprintf(l->id[l->n], sizeof(l->id[0]), "%s", row->id);
	snprintf(l->tenant[l->n], sizeof(l->tenant[0]), "%s", row->tenant);
	l->has_handle[l->n] = row->handle != NULL;
	l->n++;
	return l->stop_after > 0 && l->n >= l->stop_after ? -1 : 0;
}

static void
list_ok(struct tu_store_fx *fx, const char *tenant, struct listing *l)
{
	int stop = l->stop_after;

	memset(l, 0, sizeof(*l));
	l->stop_after = stop;
	if (sg_store_sbx_list(fx->st, tenant, collect, l) != SG_STORE_OK)
		fail_msg("list: %s", sg_store_errmsg(fx->st));
}

/* ---------------------------------------------------------------------
 * The lifecycle of a row
 * ------------------------------------------------------------------- */

static void
begin_records_creating(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	int64_t t0, t1, start = sg_proc_start(getpid());

	t0 = (int64_t)time(NULL);
	assert_int_equal(sg_store_sbx_begin(fx->st, "cntr_0001", TENANT_A,
	    "python", getpid(), start, t0 + 660), SG_STORE_OK);
	t1 = (int64_t)time(NULL);
	get_ok(fx, "cntr_0001", TENANT_A, &row);
	assert_string_equal(row.id, "cntr_0001");
	assert_string_equal(row.tenant, TENANT_A);
	assert_string_equal(row.tool, "python");
	assert_string_equal(row.state, "creating");
	assert_null(row.handle);
	assert_int_equal(row.owner_pid, getpid());
	assert_int_equal(row.owner_start, start);
	assert_true(row.owner_start != 0);
	assert_int_equal(row.expires_at, t0 + 660);
	assert_true(row.created_at >= t0 && row.created_at <= t1);
	assert_int_equal(row.last_used_at, row.created_at);
	sg_store_sbx_clear(&row);
}

/* What a sandbox's files were when last listed: none at first, then
 * what was set, per sandbox; an unknown sandbox is NOTFOUND. */
static void
seen_is_kept_per_sandbox(void **state)
{
	struct tu_store_fx *fx = *state;
	char *seen = (char *)"x";

	assert_int_equal(sg_store_sbx_begin(fx->st, "cntr_s1", TENANT_A,
	    "python", getpid(), sg_proc_start(getpid()), 1), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_begin(fx->st, "cntr_s2", TENANT_A,
	    "python", getpid(), sg_proc_start(getpid()), 1), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_seen(fx->st, "cntr_s1", &seen),
	    SG_STORE_OK);
	assert_null(seen);
	assert_int_equal(sg_store_sbx_set_seen(fx->st, "cntr_s1",
	    "{\"/mnt/data/a\":\"1|t\"}"), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_seen(fx->st, "cntr_s1", &seen),
	    SG_STORE_OK);
	assert_string_equal(seen, "{\"/mnt/data/a\":\"1|t\"}");
	free(seen);
	assert_int_equal(sg_store_sbx_seen(fx->st, "cntr_s2", &seen),
	    SG_STORE_OK);
	assert_null(seen);
	assert_int_equal(sg_store_sbx_seen(fx->st, "cntr_none", &seen),
	    SG_STORE_NOTFOUND);
	assert_null(seen);
}

/* Owner fields are 64-bit, and kept exactly. */
static void
begin_keeps_wide_values(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	const int64_t big = (int64_t)1 << 40, exp = (int64_t)1 << 33;

	assert_int_equal(sg_store_sbx_begin(fx->st, "cntr_wide", "anonymous",
	    "t", big + 1, big + 2, exp), SG_STORE_OK);
	get_ok(fx, "cntr_wide", NULL, &row);
	assert_true(row.owner_pid == big + 1);
	assert_true(row.owner_start == big + 2);
	assert_true(row.expires_at == exp);
	sg_store_sbx_clear(&row);
}

static void
ready_stores_handle(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	int64_t created;

	begin(fx, "cntr_0001", TENANT_A, "python", 1000);
	get_ok(fx, "cntr_0001", NULL, &row);
	created = row.created_at;
	sg_store_sbx_clear(&row);
	assert_int_equal(sg_store_sbx_ready(fx->st, "cntr_0001", HANDLE_E2B,
	    2000), SG_STORE_OK);
	get_ok(fx, "cntr_0001", TENANT_A, &row);
	assert_string_equal(row.state, "ready");
	assert_non_null(row.handle);
	assert_string_equal(row.handle, HANDLE_E2B);
	assert_int_equal(row.expires_at, 2000);
	/* The rest is as begin left it. */
	assert_string_equal(row.tenant, TENANT_A);
	assert_string_equal(row.tool, "python");
	assert_int_equal(row.owner_pid, 4242);
	assert_int_equal(row.owner_start, 987654321);
	assert_int_equal(row.created_at, created);
	sg_store_sbx_clear(&row);
	assert_null(row.handle);
}

static void
ready_unknown_id(void **state)
{
	struct tu_store_fx *fx = *state;
	struct listing l = { 0 };

	assert_int_equal(sg_store_sbx_ready(fx->st, "cntr_nope", HANDLE_E2B,
	    2000), SG_STORE_NOTFOUND);
	list_ok(fx, NULL, &l);
	assert_int_equal(l.n, 0);
}

/* ---------------------------------------------------------------------
 * get, per tenant
 * ------------------------------------------------------------------- */

static void
get_by_tenant(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;

	begin(fx, "cntr_a1", TENANT_A, "python", 1000);
	assert_int_equal(sg_store_sbx_ready(fx->st, "cntr_a1", HANDLE_E2B,
	    2000), SG_STORE_OK);
	/* Its tenant finds it. */
	get_ok(fx, "cntr_a1", TENANT_A, &row);
	assert_string_equal(row.id, "cntr_a1");
	sg_store_sbx_clear(&row);
	/* Another tenant does not, nor does "anonymous". */
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_a1", TENANT_B, &row),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_a1", "anonymous",
	    &row), SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_a1", "", &row),
	    SG_STORE_NOTFOUND);
	/* NULL: any tenant (the reaper, the CLI). */
	get_ok(fx, "cntr_a1", NULL, &row);
	assert_string_equal(row.tenant, TENANT_A);
	assert_string_equal(row.handle, HANDLE_E2B);
	sg_store_sbx_clear(&row);
	/* An id nobody has. */
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_a2", NULL, &row),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_a2", TENANT_A, &row),
	    SG_STORE_NOTFOUND);
}

/* ---------------------------------------------------------------------
 * list
 * ------------------------------------------------------------------- */

/* Rows begun out of age order; created_at then set so the order is
 * known: c (oldest), a, d, b. */
static void
four_rows(struct tu_store_fx *fx)
{
	begin(fx, "cntr_b", TENANT_A, "python", 1000);
	begin(fx, "cntr_a", TENANT_A, "python", 1000);
	begin(fx, "cntr_x", TENANT_B, "python", 1000);
	begin(fx, "cntr_c", TENANT_A, "python", 1000);
	begin(fx, "cntr_d", "anonymous", "python", 1000);
	assert_int_equal(sg_store_sbx_ready(fx->st, "cntr_a", HANDLE_E2B,
	    2000), SG_STORE_OK);
	raw_sql(fx, "UPDATE sandboxes SET created_at = CASE id "
	    "WHEN 'cntr_c' THEN 100 WHEN 'cntr_a' THEN 200 "
	    "WHEN 'cntr_x' THEN 250 WHEN 'cntr_d' THEN 300 "
	    "WHEN 'cntr_b' THEN 400 END");
}

static void
list_per_tenant_oldest_first(void **state)
{
	struct tu_store_fx *fx = *state;
	struct listing l = { 0 };

	four_rows(fx);
	list_ok(fx, TENANT_A, &l);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.id[0], "cntr_c");
	assert_string_equal(l.id[1], "cntr_a");
	assert_string_equal(l.id[2], "cntr_b");
	assert_string_equal(l.tenant[0], TENANT_A);
	assert_string_equal(l.tenant[1], TENANT_A);
	assert_string_equal(l.tenant[2], TENANT_A);
	/* The handle is there for the callback, only where ready. */
	assert_int_equal(l.has_handle[0], 0);
	assert_int_equal(l.has_handle[1], 1);
	assert_int_equal(l.has_handle[2], 0);

	list_ok(fx, TENANT_B, &l);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.id[0], "cntr_x");

	list_ok(fx, "tenant-with-nothing", &l);
	assert_int_equal(l.n, 0);
}

static void
list_all_oldest_first(void **state)
{
	static const char *const want[] = { "cntr_c", "cntr_a", "cntr_x",
	    "cntr_d", "cntr_b" };
	struct tu_store_fx *fx = *state;
	struct listing l = { 0 };
	int i;

	four_rows(fx);
	list_ok(fx, NULL, &l);
	assert_int_equal(l.n, 5);
	for (i = 0; i < 5; i++)
		assert_string_equal(l.id[i], want[i]);
}

static void
list_stops_early(void **state)
{
	struct tu_store_fx *fx = *state;
	struct listing l = { .stop_after = 2 };

	four_rows(fx);
	list_ok(fx, NULL, &l);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.id[0], "cntr_c");
	assert_string_equal(l.id[1], "cntr_a");
}

static void
list_empty(void **state)
{
	struct tu_store_fx *fx = *state;
	struct listing l = { 0 };

	list_ok(fx, NULL, &l);
	assert_int_equal(l.n, 0);
	list_ok(fx, TENANT_A, &l);
	assert_int_equal(l.n, 0);
}

/* ---------------------------------------------------------------------
 * touch, mark, remove
 * ------------------------------------------------------------------- */

static void
touch_updates_use_and_expiry(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	int64_t t0, t1;

	begin(fx, "cntr_t", TENANT_A, "python", 1000);
	begin(fx, "cntr_other", TENANT_A, "python", 1000);
	assert_int_equal(sg_store_sbx_ready(fx->st, "cntr_t", HANDLE_E2B,
	    2000), SG_STORE_OK);
	/* Long unused. */
	raw_sql(fx, "UPDATE sandboxes SET created_at = 10, last_used_at = 10");
	t0 = (int64_t)time(NULL);
	assert_int_equal(sg_store_sbx_touch(fx->st, "cntr_t", t0 + 3600),
	    SG_STORE_OK);
	t1 = (int64_t)time(NULL);
	get_ok(fx, "cntr_t", TENANT_A, &row);
	assert_true(row.last_used_at >= t0 && row.last_used_at <= t1);
	assert_int_equal(row.expires_at, t0 + 3600);
	assert_int_equal(row.created_at, 10);
	assert_string_equal(row.state, "ready");
	assert_string_equal(row.handle, HANDLE_E2B);
	sg_store_sbx_clear(&row);
	/* Only that row. */
	get_ok(fx, "cntr_other", TENANT_A, &row);
	assert_int_equal(row.last_used_at, 10);
	assert_int_equal(row.expires_at, 1000);
	sg_store_sbx_clear(&row);
}

/* Touching an id that is not there creates nothing. */
static void
touch_unknown_creates_nothing(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	struct listing l = { 0 };

	sg_store_sbx_touch(fx->st, "cntr_gone", 5000);
	sg_store_sbx_mark(fx->st, "cntr_gone", "deleting");
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_gone", NULL, &row),
	    SG_STORE_NOTFOUND);
	list_ok(fx, NULL, &l);
	assert_int_equal(l.n, 0);
}

static void
mark_changes_state(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;

	begin(fx, "cntr_m", TENANT_A, "python", 1000);
	begin(fx, "cntr_n", TENANT_A, "python", 1000);
	assert_int_equal(sg_store_sbx_ready(fx->st, "cntr_m", HANDLE_E2B,
	    2000), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_mark(fx->st, "cntr_m", "deleting"),
	    SG_STORE_OK);
	get_ok(fx, "cntr_m", TENANT_A, &row);
	assert_string_equal(row.state, "deleting");
	assert_string_equal(row.handle, HANDLE_E2B);	/* kept for retries */
	assert_int_equal(row.expires_at, 2000);
	sg_store_sbx_clear(&row);
	/* Back to ready, as sg_sbx_delete does when the provider fails. */
	assert_int_equal(sg_store_sbx_mark(fx->st, "cntr_m", "ready"),
	    SG_STORE_OK);
	get_ok(fx, "cntr_m", TENANT_A, &row);
	assert_string_equal(row.state, "ready");
	sg_store_sbx_clear(&row);
	/* The other row did not move. */
	get_ok(fx, "cntr_n", TENANT_A, &row);
	assert_string_equal(row.state, "creating");
	sg_store_sbx_clear(&row);
}

static void
remove_row(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	struct listing l = { 0 };

	begin(fx, "cntr_r", TENANT_A, "python", 1000);
	begin(fx, "cntr_keep", TENANT_A, "python", 1000);
	assert_int_equal(sg_store_sbx_remove(fx->st, "cntr_r"), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_r", NULL, &row),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_sbx_ready(fx->st, "cntr_r", HANDLE_E2B,
	    2000), SG_STORE_NOTFOUND);
	list_ok(fx, TENANT_A, &l);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.id[0], "cntr_keep");
	/* The id is free again. */
	begin(fx, "cntr_r", TENANT_B, "python", 1000);
	get_ok(fx, "cntr_r", TENANT_B, &row);
	assert_string_equal(row.state, "creating");
	sg_store_sbx_clear(&row);
}

/* ---------------------------------------------------------------------
 * Duplicates and hostile text
 * ------------------------------------------------------------------- */

static void
duplicate_id_exists(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	struct listing l = { 0 };

	begin(fx, "cntr_dup", TENANT_A, "python", 1000);
	assert_int_equal(sg_store_sbx_begin(fx->st, "cntr_dup", TENANT_B,
	    "other", 1, 2, 3), SG_STORE_EXISTS);
	/* Even for the same tenant. */
	assert_int_equal(sg_store_sbx_begin(fx->st, "cntr_dup", TENANT_A,
	    "python", 1, 2, 3), SG_STORE_EXISTS);
	/* The first row is untouched. */
	get_ok(fx, "cntr_dup", NULL, &row);
	assert_string_equal(row.tenant, TENANT_A);
	assert_string_equal(row.tool, "python");
	assert_int_equal(row.owner_pid, 4242);
	assert_int_equal(row.expires_at, 1000);
	sg_store_sbx_clear(&row);
	list_ok(fx, NULL, &l);
	assert_int_equal(l.n, 1);
	/* The store still works after the failed insert. */
	begin(fx, "cntr_dup2", TENANT_A, "python", 1000);
}

static void
sql_text_is_data(void **state)
{
	static const char id[] = "cntr_'; DROP TABLE sandboxes; --";
	static const char tenant[] = "o'hara\" OR 1=1 --";
	static const char tool[] = "t'); DELETE FROM sandboxes; --";
	static const char handle[] = "{\"id\":\"x'); DROP TABLE keys; --\","
	    "\"q\":\"\\\"\\u00e9\"}";
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	struct listing l = { 0 };

	begin(fx, "cntr_plain", TENANT_A, "python", 1000);
	begin(fx, id, tenant, tool, 1000);
	assert_int_equal(sg_store_sbx_ready(fx->st, id, handle, 2000),
	    SG_STORE_OK);
	get_ok(fx, id, tenant, &row);
	assert_string_equal(row.id, id);
	assert_string_equal(row.tenant, tenant);
	assert_string_equal(row.tool, tool);
	assert_string_equal(row.handle, handle);
	sg_store_sbx_clear(&row);
	/* Injection through the lookup finds nothing. */
	assert_int_equal(sg_store_sbx_get(fx->st, "x' OR '1'='1", NULL, &row),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_plain",
	    "x' OR '1'='1", &row), SG_STORE_NOTFOUND);
	list_ok(fx, "' OR 1=1 --", &l);
	assert_int_equal(l.n, 0);
	/* Both rows, and the table, are still there. */
	list_ok(fx, NULL, &l);
	assert_int_equal(l.n, 2);
	assert_int_equal(sg_store_sbx_mark(fx->st, id, "deleting"), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_remove(fx->st, id), SG_STORE_OK);
	list_ok(fx, NULL, &l);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.id[0], "cntr_plain");
}

/*
 * A value the row cannot hold must not come back cut: a tool name of 64+
 * characters (config accepts any length) read back truncated names no
 * configured tool, so core's open_sandbox() fails and the sandbox can be
 * neither run nor deleted through sandgate. Either begin refuses it (and
 * leaves no row), or get returns it whole.
 */
static void
long_tool_name_not_truncated(void **state)
{
	/* 70 characters; volatile: the compiler must not judge the compare
	 * below from the array sizes. */
	const char *volatile tool = "python-with-a-very-long-descriptive-"
	    "name-for-the-data-science-team-gpu";
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	int rc;

	assert_true(strlen(tool) >= sizeof(row.tool));
	rc = sg_store_sbx_begin(fx->st, "cntr_long", TENANT_A, tool, 1, 2,
	    1000);
	if (rc != SG_STORE_OK) {	/* refused: fine, if nothing is left */
		assert_int_equal(sg_store_sbx_get(fx->st, "cntr_long", NULL,
		    &row), SG_STORE_NOTFOUND);
		return;
	}
	get_ok(fx, "cntr_long", TENANT_A, &row);
	sg_store_sbx_clear(&row);
	if (strcmp(row.tool, tool) != 0)
		fail_msg("tool stored as \"%s\", read back as \"%s\"", tool,
		    row.tool);
}

/* ---------------------------------------------------------------------
 * sg_proc_start
 * ------------------------------------------------------------------- */

static void
proc_start_self(void **state)
{
	int64_t a, b;

	(void)state;
	a = sg_proc_start(getpid());
	b = sg_proc_start(getpid());
	assert_true(a > 0);
	assert_true(a == b);
	/* Our parent started no later than we did. */
	if (sg_proc_start(getppid()) != 0)
		assert_true(sg_proc_start(getppid()) <= a);
}

/* The command name may hold spaces and ")": the start stays the same. */
static void
proc_start_odd_name(void **state)
{
	char old[17] = "";
	int64_t before, after;

	(void)state;
	before = sg_proc_start(getpid());
	assert_int_equal(prctl(PR_GET_NAME, old, 0, 0, 0), 0);
	assert_int_equal(prctl(PR_SET_NAME, "a) 1 2 (3) 4 5", 0, 0, 0), 0);
	after = sg_proc_start(getpid());
	prctl(PR_SET_NAME, old, 0, 0, 0);
	assert_true(before > 0);
	assert_true(after == before);
}

static void
proc_start_no_such_pid(void **state)
{
	(void)state;
	/* Above any pid_max (at most 2^22). */
	assert_true(sg_proc_start(INT_MAX) == 0);
	assert_true(sg_proc_start((1 << 22) + 1) == 0);
	assert_true(sg_proc_start(0) == 0);
	assert_true(sg_proc_start(-1) == 0);
}

#define T(f) \
	cmocka_unit_test_setup_teardown(f, tu_store_setup, tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(begin_records_creating),
		T(seen_is_kept_per_sandbox),
		T(begin_keeps_wide_values),
		T(ready_stores_handle),
		T(ready_unknown_id),
		T(get_by_tenant),
		T(list_per_tenant_oldest_first),
		T(list_all_oldest_first),
		T(list_stops_early),
		T(list_empty),
		T(touch_updates_use_and_expiry),
		T(touch_unknown_creates_nothing),
		T(mark_changes_state),
		T(remove_row),
		T(duplicate_id_exists),
		T(sql_text_is_data),
		T(long_tool_name_not_truncated),
		cmocka_unit_test(proc_start_self),
		cmocka_unit_test(proc_start_odd_name),
		cmocka_unit_test(proc_start_no_such_pid),
	};

	TU_STORE_MAIN(tests);
}
