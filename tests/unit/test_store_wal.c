/*
 * store: SQLite's write-ahead log is checkpointed by the reaper
 * (sg_store_checkpoint), not by whichever request's commit finds it past
 * SQLite's default 1,000 pages; a write that meets another connection's
 * write lock waits for it in short pauses (sg_sq_busy_us), not SQLite's
 * own 1, 2, 5 ... milliseconds, and gets through once the other commits.
 * On PostgreSQL there is nothing to check.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <sqlite3.h>

#include "../../store/store.h"
#include "testutil.h"

#define PAGE		4096
#define ROWS		1500	/* commits of a page each: past 1,000 */

struct fx {
	char		 dir[64];
	char		 path[128];
	char		 wal[160];
	struct sg_store	*st;
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char err[256];

	if (fx == NULL || tu_mkdtemp(fx->dir, sizeof(fx->dir)) == -1) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/sandgate.db", fx->dir);
	snprintf(fx->wal, sizeof(fx->wal), "%s-wal", fx->path);
	*state = fx;
	if (tu_store_open(fx->path, &fx->st, err, sizeof(err), 1) !=
	    SG_STORE_OK || sg_store_migrate(fx->st) != SG_STORE_OK) {
		fprintf(stderr, "open: %s\n", fx->st != NULL ?
		    sg_store_errmsg(fx->st) : err);
		return -1;
	}
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	sg_store_close(fx->st);
	tu_rmrf(fx->dir);
	free(fx);
	return 0;
}

static off_t
size_of(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? sb.st_size : -1;
}

/* ROWS commits, each of a row that fills a page of its own. */
static void
write_pages(struct sg_store *st)
{
	int i;

	assert_int_equal(sg_st_exec(st, "CREATE TABLE filler (b BLOB)"),
	    SG_STORE_OK);
	for (i = 0; i < ROWS; i++)
		assert_int_equal(sg_st_exec(st, "INSERT INTO filler VALUES "
		    "(zeroblob(4000))"), SG_STORE_OK);
}

/* SQLite's default would have copied the log into the file at 1,000
 * pages and started it over: the log holds them all, the file none. */
static void
commits_leave_the_log_alone(void **state)
{
	struct fx *fx = *state;

	if (tu_store_url != NULL)
		skip();
	write_pages(fx->st);
	assert_true(size_of(fx->wal) >= (off_t)ROWS * PAGE);
	assert_true(size_of(fx->path) < (off_t)ROWS * PAGE / 2);
}

static void
checkpoint_copies_the_log(void **state)
{
	struct fx *fx = *state;

	if (tu_store_url != NULL) {
		assert_int_equal(sg_store_checkpoint(fx->st), SG_STORE_OK);
		skip();
	}
	write_pages(fx->st);
	assert_int_equal(sg_store_checkpoint(fx->st), SG_STORE_OK);
	assert_true(size_of(fx->path) >= (off_t)ROWS * PAGE);
	/* Again with nothing new: still fine. */
	assert_int_equal(sg_store_checkpoint(fx->st), SG_STORE_OK);
}

/* The log's checkpoint count (its header's bytes 12-15), bumped by the
 * write that starts the log over. */
static unsigned
log_round(const char *wal)
{
	unsigned char h[16];
	FILE *f = fopen(wal, "rb");

	assert_non_null(f);
	assert_int_equal(fread(h, 1, sizeof(h), f), sizeof(h));
	fclose(f);
	return (unsigned)h[12] << 24 | (unsigned)h[13] << 16 |
	    (unsigned)h[14] << 8 | h[15];
}

/* A log copied whole is started over by the checkpoint's side (with its
 * header's sync there), so a request's commit after it only appends. */
static void
checkpoint_starts_the_log_over(void **state)
{
	struct fx *fx = *state;
	struct sg_store *req;
	char err[256];
	struct stat was, now;
	unsigned before, after;
	int v0, v;

	if (tu_store_url != NULL)
		skip();
	assert_int_equal(sg_store_version(fx->st, &v0), SG_STORE_OK);
	assert_true(v0 > 0);
	assert_int_equal(tu_store_open(fx->path, &req, err, sizeof(err), 0),
	    SG_STORE_OK);
	assert_int_equal(sg_st_exec(req, "CREATE TABLE w (n INTEGER); "
	    "INSERT INTO w VALUES (1)"), SG_STORE_OK);
	before = log_round(fx->wal);
	assert_int_equal(sg_store_checkpoint(fx->st), SG_STORE_OK);
	after = log_round(fx->wal);
	assert_int_equal(after, before + 1);
	assert_int_equal(sg_st_exec(req, "INSERT INTO w VALUES (2)"),
	    SG_STORE_OK);
	assert_int_equal(log_round(fx->wal), after);
	assert_int_equal(sg_store_checkpoint(fx->st), SG_STORE_OK);
	assert_int_equal(log_round(fx->wal), after + 1);
	/* Idle, the log holds only that write: the reaper's ticks write
	 * nothing more. */
	assert_int_equal(stat(fx->wal, &was), 0);
	usleep(20000);
	assert_int_equal(sg_store_checkpoint(fx->st), SG_STORE_OK);
	assert_int_equal(sg_store_checkpoint(fx->st), SG_STORE_OK);
	assert_int_equal(stat(fx->wal, &now), 0);
	assert_true(now.st_mtim.tv_sec == was.st_mtim.tv_sec &&
	    now.st_mtim.tv_nsec == was.st_mtim.tv_nsec);
	assert_int_equal(log_round(fx->wal), after + 1);
	/* The schema's version written again as it was. */
	assert_int_equal(sg_store_version(req, &v), SG_STORE_OK);
	assert_int_equal(v, v0);
	sg_store_close(req);
}

/* The first pauses are far below SQLite's first millisecond; they grow,
 * and stop growing where a long hold is asked for a few hundred times
 * a second. */
static void
pauses_start_short(void **state)
{
	long prev = 0, us;
	int i;

	(void)state;
	assert_true(sg_sq_busy_us(0) <= 50);
	for (i = 0; i < 100; i++) {
		us = sg_sq_busy_us(i);
		assert_true(us >= prev);
		assert_true(us <= 2000);
		prev = us;
	}
	assert_true(prev >= 1000);
}

/* A child holds the write lock for a moment: the parent's write waits
 * for it (the busy handler tries again) and both rows land. */
static void
write_waits_for_another(void **state)
{
	struct fx *fx = *state;
	struct sg_store *cst;
	struct sg_st_cur *cur;
	char err[256], c;
	int fds[2], status;
	pid_t pid;

	if (tu_store_url != NULL)
		skip();
	assert_int_equal(sg_st_exec(fx->st, "CREATE TABLE w (n INTEGER)"),
	    SG_STORE_OK);
	assert_int_equal(pipe(fds), 0);
	if ((pid = fork()) == 0) {
		close(fds[0]);
		if (tu_store_open(fx->path, &cst, err, sizeof(err), 0) !=
		    SG_STORE_OK || sg_st_exec(cst, "BEGIN IMMEDIATE; "
		    "INSERT INTO w VALUES (1)") != SG_STORE_OK ||
		    write(fds[1], "x", 1) != 1)
			_exit(1);
		usleep(100000);
		_exit(sg_st_exec(cst, "COMMIT") == SG_STORE_OK ? 0 : 1);
	}
	assert_true(pid > 0);
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);	/* the child holds it */
	close(fds[0]);
	assert_int_equal(sg_st_exec(fx->st, "INSERT INTO w VALUES (2)"),
	    SG_STORE_OK);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(sg_st_run(fx->st, &cur, "SELECT count(*) FROM w",
	    ""), SG_ST_ROW);
	assert_int_equal(sg_st_int(cur, 0), 2);
	sg_st_done(fx->st, cur);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(commits_leave_the_log_alone,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(checkpoint_copies_the_log,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(checkpoint_starts_the_log_over,
		    setup, teardown),
		cmocka_unit_test(pauses_start_short),
		cmocka_unit_test_setup_teardown(write_waits_for_another,
		    setup, teardown),
	};

	TU_STORE_MAIN(tests);
}
