/*
 * store: a SQLite store's run locks live in a table beside the database
 * (PATH-runs, store/runs.c), not in the rows: another process that opens
 * the store sees them, nothing is written to the database for them, a
 * store whose table cannot be opened does not open, and
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

/* What a child process's own store of path says: fn's exit code (0: as
 * expected). The child's pid in *child. */
static int
in_child(const char *path, int64_t now, int (*fn)(struct sg_store *,
    int64_t), pid_t *child)
{
	struct sg_store *st;
	char err[256];
	int rc, status;

	if ((*child = fork()) == 0) {
		if (sg_store_open(path, &st, err, sizeof(err)) != 0)
			_exit(10);
		rc = fn(st, now);
		sg_store_close(st);
		_exit(rc);
	}
	assert_true(*child > 0);
	assert_int_equal(waitpid(*child, &status, 0), *child);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

/* Refused the lock 4242 holds, and reads it as 4242's. */
static int
refused(struct sg_store *st, int64_t now)
{
	struct sg_store_sbx row;
	int rc;

	if (sg_store_sbx_run_begin(st, ID, getpid(), 1, now + 60) !=
	    SG_STORE_EXISTS)
		return 11;
	if (sg_store_sbx_get(st, ID, NULL, &row) != SG_STORE_OK)
		return 13;
	rc = row.runner_pid == 4242 && row.runner_until == now + 60 ? 0 : 12;
	sg_store_sbx_clear(&row);
	return rc;
}

static int
takes_it(struct sg_store *st, int64_t now)
{
	return sg_store_sbx_run_begin(st, ID, getpid(), 1, now + 60) ==
	    SG_STORE_OK ? 0 : 14;
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

	with_row(fx);
	assert_int_equal(sg_store_sbx_run_take(fx->st, ID, 4242, 7, now + 60,
	    &row), SG_STORE_OK);
	assert_int_equal(row.runner_pid, 4242);
	sg_store_sbx_clear(&row);
	assert_int_equal(runner_in_row(fx), 0);
	assert_int_equal(in_child(fx->path, now, refused, &pid), 0);
	assert_int_equal(sg_store_sbx_run_done(fx->st, ID, 4242, 0, NULL,
	    NULL, 0), SG_STORE_OK);
	assert_int_equal(in_child(fx->path, now, takes_it, &pid), 0);
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

/* Where the table cannot be opened the store does not open, and says
 * why: a process on the rows' locks would run beside the others. */
static void
no_table_no_store(void **state)
{
	struct tu_store_fx *fx = *state;
	char runs[160], err[256];
	struct sg_store *st = NULL;

	with_row(fx);
	sg_store_close(fx->st);
	fx->st = NULL;
	snprintf(runs, sizeof(runs), "%s-runs", fx->path);
	assert_int_equal(unlink(runs), 0);
	assert_int_equal(mkdir(runs, 0700), 0);	/* not a file: no table */
	assert_int_equal(sg_store_open(fx->path, &st, err, sizeof(err)),
	    SG_STORE_ERROR);
	assert_null(st);
	assert_non_null(strstr(err, "-runs: cannot open"));
	assert_int_equal(rmdir(runs), 0);
	assert_int_equal(sg_store_open(fx->path, &st, err, sizeof(err)),
	    SG_STORE_OK);
	fx->st = st;
	assert_int_equal(sg_store_sbx_run_begin(st, ID, 77, 1, time(NULL) +
	    60), SG_STORE_OK);
	assert_int_equal(runner_in_row(fx), 0);
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
		T(no_table_no_store),
		T(garbage_is_no_lock),
	};

	return cmocka_run_group_tests_name("sqlite", tests, NULL, NULL);
}
