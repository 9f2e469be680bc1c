/*
 * store: a SQLite store's run locks live in a table beside the database
 * (PATH-runs, store/runs.c), not in the rows: another process that opens
 * the store sees them, nothing is written to the database for them, a
 * store whose table cannot be made keeps them in the rows as before, and
 * a table of another layout, or scribbled over, is no wrong answer. The
 * locks' rules themselves are test_store_trips' and test_sandbox_store's,
 * which run on both kinds of store.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../store/store.h"
#include "testutil.h"

#define ID	"cntr_runs"

/* A fresh store (SQLite) with one ready sandbox row ID. */
static void
with_row(struct tu_store_fx *fx)
{
	assert_int_equal(sg_store_sbx_begin(fx->st, ID, "tenant", "e2b", 1, 1,
	    time(NULL) + 600), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_ready(fx->st, ID, "{}", time(NULL) +
	    600), SG_STORE_OK);
}

static int64_t
runner_in_row(struct tu_store_fx *fx)
{
	char out[32];

	assert_int_equal(tu_raw_sql(fx->path, "SELECT coalesce(runner_pid, 0) "
	    "FROM sandboxes WHERE id = '" ID "'", out, sizeof(out)), 0);
	return atoll(out);
}

/* A lock taken is seen by a child process's own store, which cannot take
 * it; the row's columns are not written; released, the child takes it. */
static void
seen_by_another_process(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	int64_t now = time(NULL);
	pid_t pid;
	int status;

	with_row(fx);
	assert_int_equal(sg_store_sbx_run_take(fx->st, ID, 4242, 7, now + 60,
	    &row), SG_STORE_OK);
	assert_int_equal(row.runner_pid, 4242);
	sg_store_sbx_clear(&row);
	assert_int_equal(runner_in_row(fx), 0);
	if ((pid = fork()) == 0) {
		struct sg_store *st;
		char err[256];
		int rc;

		if (sg_store_open(fx->path, &st, err, sizeof(err)) != 0)
			_exit(10);
		rc = sg_store_sbx_run_begin(st, ID, getpid(), 1, now + 60) ==
		    SG_STORE_EXISTS ? 0 : 11;
		if (rc == 0 && sg_store_sbx_get(st, ID, NULL, &row) ==
		    SG_STORE_OK) {
			if (row.runner_pid != 4242 || row.runner_until !=
			    now + 60)
				rc = 12;
			sg_store_sbx_clear(&row);
		} else if (rc == 0)
			rc = 13;
		sg_store_close(st);
		_exit(rc);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(sg_store_sbx_run_done(fx->st, ID, 4242, 0, NULL,
	    NULL, 0), SG_STORE_OK);
	if ((pid = fork()) == 0) {
		struct sg_store *st;
		char err[256];

		int rc;

		if (sg_store_open(fx->path, &st, err, sizeof(err)) != 0)
			_exit(10);
		rc = sg_store_sbx_run_begin(st, ID, getpid(), 1, now + 60);
		sg_store_close(st);
		_exit(rc == SG_STORE_OK ? 0 : 14);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The child is gone: its lock stays until dropped, as a dead
	 * runner's did in the row (the caller checks and drops it). */
	assert_int_equal(sg_store_sbx_run_begin(fx->st, ID, 1, 1, now + 60),
	    SG_STORE_EXISTS);
	assert_int_equal(sg_store_sbx_run_drop(fx->st, ID, pid, 1),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_run_begin(fx->st, ID, 1, 1, now + 60),
	    SG_STORE_OK);
}

/* No lock for a sandbox that has no row, as the row's update had none. */
static void
no_row_no_lock(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	int64_t now = time(NULL);

	assert_int_equal(sg_store_sbx_run_begin(fx->st, "cntr_none", 1, 1,
	    now + 60), SG_STORE_EXISTS);
	assert_int_equal(sg_store_sbx_run_take(fx->st, "cntr_none", 1, 1,
	    now + 60, &row), SG_STORE_EXISTS);
	with_row(fx);
	assert_int_equal(sg_store_sbx_run_begin(fx->st, ID, 1, 1, now + 60),
	    SG_STORE_OK);
}

/* A claim to delete takes the lock as it was read: a run that began
 * since makes it fail; one read free, and still free, succeeds. */
static void
claim_as_seen(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx seen;
	int64_t now = time(NULL);

	with_row(fx);
	assert_int_equal(sg_store_sbx_get(fx->st, ID, NULL, &seen),
	    SG_STORE_OK);
	assert_int_equal(seen.runner_until, 0);
	assert_int_equal(sg_store_sbx_run_begin(fx->st, ID, 5, 5, now + 60),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_claim_delete(fx->st, &seen),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_sbx_run_end(fx->st, ID, 5), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_claim_delete(fx->st, &seen),
	    SG_STORE_OK);
	sg_store_sbx_clear(&seen);
	/* The claim's own hold is gone with it. */
	assert_int_equal(sg_store_sbx_run_begin(fx->st, ID, 6, 6, now + 60),
	    SG_STORE_OK);
	/* Read while that run held it, and claimed: the run keeps its lock
	 * until it ends, as it did in the row. */
	assert_int_equal(sg_store_sbx_get(fx->st, ID, NULL, &seen),
	    SG_STORE_OK);
	assert_int_equal(seen.runner_pid, 6);
	assert_int_equal(sg_store_sbx_claim_delete(fx->st, &seen),
	    SG_STORE_OK);
	sg_store_sbx_clear(&seen);
	assert_int_equal(sg_store_sbx_run_begin(fx->st, ID, 7, 7, now + 60),
	    SG_STORE_EXISTS);
	assert_int_equal(sg_store_sbx_get(fx->st, ID, NULL, &seen),
	    SG_STORE_OK);
	assert_int_equal(seen.runner_pid, 6);
	assert_string_equal(seen.state, "deleting");
	sg_store_sbx_clear(&seen);
}

/* Where the table cannot be made, the locks are the rows' again. */
static void
rows_without_the_table(void **state)
{
	struct tu_store_fx *fx = *state;
	char runs[160], err[256];
	struct sg_store *st;
	int64_t now = time(NULL);

	with_row(fx);
	sg_store_close(fx->st);
	snprintf(runs, sizeof(runs), "%s-runs", fx->path);
	assert_int_equal(unlink(runs), 0);
	assert_int_equal(mkdir(runs, 0700), 0);	/* not a file: no table */
	assert_int_equal(sg_store_open(fx->path, &st, err, sizeof(err)),
	    SG_STORE_OK);
	fx->st = st;
	assert_int_equal(sg_store_sbx_run_begin(st, ID, 77, 1, now + 60),
	    SG_STORE_OK);
	assert_int_equal(runner_in_row(fx), 77);
	assert_int_equal(sg_store_sbx_run_begin(st, ID, 78, 1, now + 60),
	    SG_STORE_EXISTS);
	assert_int_equal(rmdir(runs), 0);
}

/* A table scribbled over (another layout, garbage) is started again or
 * costs slots: never a lock for an id it does not name. */
static void
garbage_is_no_lock(void **state)
{
	struct tu_store_fx *fx = *state;
	char runs[160], err[256], junk[8192];
	struct sg_store *st;
	int64_t now = time(NULL);
	size_t i;
	int fd;

	with_row(fx);
	sg_store_close(fx->st);
	fx->st = NULL;
	snprintf(runs, sizeof(runs), "%s-runs", fx->path);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 131 + 7);
	assert_true((fd = open(runs, O_WRONLY)) >= 0);
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 0), sizeof(junk));
	close(fd);
	assert_int_equal(sg_store_open(fx->path, &st, err, sizeof(err)),
	    SG_STORE_OK);
	fx->st = st;
	assert_int_equal(sg_store_sbx_run_begin(st, ID, 9, 9, now + 60),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_run_begin(st, ID, 10, 10, now + 60),
	    SG_STORE_EXISTS);
	/* Past the header: slots of garbage, the magic kept. */
	assert_true((fd = open(runs, O_WRONLY)) >= 0);
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 4096), sizeof(junk));
	close(fd);
	assert_int_equal(sg_store_sbx_run_end(st, ID, 9), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_run_begin(st, ID, 11, 11, now + 60),
	    SG_STORE_OK);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
    tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(seen_by_another_process),
		T(no_row_no_lock),
		T(claim_as_seen),
		T(rows_without_the_table),
		T(garbage_is_no_lock),
	};

	return cmocka_run_group_tests_name("sqlite", tests, NULL, NULL);
}
