/*
 * The SQLite backend: one file shared by every process of one box. WAL, a
 * busy timeout and short BEGIN IMMEDIATE transactions let all responders
 * write without SQLITE_BUSY escaping.
 */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "../lib/util.h"

#define BUSY_TIMEOUT_MS 10000

/*
 * How long the count'th wait for another connection's lock sleeps, in
 * µs. SQLite's own busy timeout sleeps 1 ms first, then 2, 5, 10 ...,
 * while a lock here is held for tens of µs (one short transaction): a
 * write that met another lost a millisecond or more for it, the loop's
 * slowest rounds. From 25 µs, doubling to 1.6 ms: a lock held long
 * (a checkpoint's fsync) is still asked for only about 600 times a
 * second.
 */
long
sg_sq_busy_us(int count)
{
	return count < 6 ? 25L << count : 1600L;
}

/* SQLite's busy handler: 1 to try again after a pause, 0 to give up
 * (SQLITE_BUSY) past BUSY_TIMEOUT_MS since the first wait. */
static int
busy_wait(void *arg, int count)
{
	struct sg_store *st = arg;
	int64_t now = sg_now_ms();

	if (count == 0)
		st->busy_since = now;
	else if (now - st->busy_since >= BUSY_TIMEOUT_MS)
		return 0;
	usleep((useconds_t)sg_sq_busy_us(count));
	return 1;
}

static int
dberr(struct sg_store *st, const char *what)
{
	return sg_st_err(st, "%s: %s", what, sqlite3_errmsg(st->db));
}

int
sg_sq_exec(struct sg_store *st, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		sg_st_err(st, "%s", msg != NULL ? msg : sqlite3_errmsg(st->db));
		sqlite3_free(msg);
		return SG_STORE_ERROR;
	}
	return SG_STORE_OK;
}

/* Each connection's WAL threshold, in pages of 4 KiB (32 MiB): past it a
 * commit checkpoints by itself (sg_sq_checkpoint says why so far). */
#define WAL_PAGES	"8000"

/*
 * Switching a new file to WAL takes a lock SQLite does not wait for with
 * the busy handler: a second process opening the store at that moment
 * would see "database is locked". Retry for as long as the busy timeout.
 */
static int
set_wal(struct sg_store *st)
{
	int waited, rc = SQLITE_BUSY;

	for (waited = 0; waited < BUSY_TIMEOUT_MS; waited += 10) {
		rc = sqlite3_exec(st->db, "PRAGMA journal_mode=WAL", NULL, NULL,
		    NULL);
		if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
			break;
		usleep(10000);
	}
	return rc == SQLITE_OK ? SG_STORE_OK : dberr(st, "journal_mode=WAL");
}

/*
 * Before SQLite's first use in the process (its settings are the
 * process's): no process of sandgate uses SQLite from two threads, so
 * none of its mutexes; and no count of the memory it holds, which took
 * a mutex at every malloc and free (with the trace's one buffer, 76 k
 * instructions of a three-round request, bench/RESULTS.md).
 */
static void
configure(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	(void)sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int
sg_sq_open(struct sg_store *st, const char *path, char *err, size_t errsz)
{
	int fd;

	configure();

	/* Create it ourselves: SQLite would take the umask (0644). */
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1) {
		snprintf(err, errsz, "%s: cannot open: %m", path);
		return SG_STORE_ERROR;
	}
	close(fd);
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, errsz, "%s: %s", path, st->db != NULL ?
		    sqlite3_errmsg(st->db) : "out of memory");
		return SG_STORE_ERROR;
	}
	sqlite3_busy_handler(st->db, busy_wait, st);
	if (set_wal(st) != SG_STORE_OK || sg_sq_exec(st,
	    "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
	    "PRAGMA wal_autocheckpoint=" WAL_PAGES ";") != SG_STORE_OK) {
		snprintf(err, errsz, "%s: %s", path, st->err);
		return SG_STORE_ERROR;
	}
	/* Every process of the store uses the table or none would be safe:
	 * one left on the rows' locks would run beside the others. */
	if (sg_st_runs_open(st, path) == -1) {
		snprintf(err, errsz, "%s-runs: cannot open: %m", path);
		return SG_STORE_ERROR;
	}
	return SG_STORE_OK;
}

/*
 * A log copied whole is started over by the next write, which first
 * writes the log's new header and syncs it (a millisecond on a disk):
 * that write made here, by the reaper, not by a request's commit.
 * Without waiting: a writer met is starting the log over itself.
 */
static void
restart_log(struct sg_store *st)
{
	sqlite3_stmt *q = NULL;
	char sql[48];
	int v = -1;

	sqlite3_busy_handler(st->db, NULL, NULL);
	if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &q,
		    NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
			v = sqlite3_column_int(q, 0);
		sqlite3_finalize(q);
		/* The same version again: a page written, nothing changed. */
		snprintf(sql, sizeof(sql), "PRAGMA user_version=%d", v);
		if (v < 0 || sqlite3_exec(st->db, sql, NULL, NULL, NULL) !=
		    SQLITE_OK || sqlite3_exec(st->db, "COMMIT", NULL, NULL,
		    NULL) != SQLITE_OK)
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	}
	sqlite3_busy_handler(st->db, busy_wait, st);
}

/*
 * The WAL's frames copied into the database as far as no reader needs
 * them, waiting on no one. The reaper's, every tick: a commit that finds
 * the WAL past SQLite's threshold checkpoints it there and then, fsyncs
 * included, so one request in a few dozen paid milliseconds for all;
 * with the reaper's checkpoints each connection's own threshold
 * (WAL_PAGES) is only a net for a reaper held up.
 */
int
sg_sq_checkpoint(struct sg_store *st)
{
	int rc, frames = 0, copied = 0;

	rc = sqlite3_wal_checkpoint_v2(st->db, NULL,
	    SQLITE_CHECKPOINT_PASSIVE, &frames, &copied);
	/* One frame is the restart's own write: idle, nothing more. */
	if (rc == SQLITE_OK && frames > 1 && copied == frames)
		restart_log(st);
	return rc == SQLITE_OK || rc == SQLITE_BUSY ? SG_STORE_OK :
	    dberr(st, "checkpoint");
}

void
sg_sq_close(struct sg_store *st)
{
	int i;

	for (i = 0; i < st->ncache; i++) {
		sqlite3_finalize(st->cache[i].stmt);
		free(st->cache[i].sql);
	}
	sqlite3_close_v2(st->db);
	sg_st_runs_close(st);
}

/* A prepared statement for sql: a cached one when it is free, else a new
 * one (cached while there is room). */
static int
prepare(struct sg_store *st, const char *sql, sqlite3_stmt **stmt)
{
	struct sg_st_cached *c;
	uint64_t h;
	char *copy;
	int i, rc;

	/* The text seen here before, at the same address: a compare, not
	 * a hash of the whole text (a text built in a buffer may reuse an
	 * address, so the text is compared too). */
	for (i = 0; i < st->ncache; i++) {
		c = &st->cache[i];
		if (c->seen == sql && !c->busy && strcmp(c->sql, sql) == 0) {
			c->busy = 1;
			*stmt = c->stmt;
			return SQLITE_OK;
		}
	}
	h = sg_fnv1a(sql);
	for (i = 0; i < st->ncache; i++) {
		c = &st->cache[i];
		if (c->hash != h || strcmp(c->sql, sql) != 0)
			continue;
		if (c->busy)
			break;	/* in use (a nested query): a fresh one */
		c->busy = 1;
		c->seen = sql;
		*stmt = c->stmt;
		return SQLITE_OK;
	}
	if (i < st->ncache || st->ncache == SG_ST_CACHE ||
	    (copy = strdup(sql)) == NULL)
		return sqlite3_prepare_v2(st->db, sql, -1, stmt, NULL);
	rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	    stmt, NULL);
	if (rc != SQLITE_OK || *stmt == NULL) {
		free(copy);
		return rc;
	}
	st->cache[st->ncache++] = (struct sg_st_cached){ copy, sql, h, *stmt,
	    1 };
	return SQLITE_OK;
}

void
sg_sq_done(struct sg_store *st, struct sg_st_cur *c)
{
	int i;

	if (c->stmt == NULL)
		return;
	for (i = 0; i < st->ncache; i++)
		if (st->cache[i].stmt == c->stmt) {
			sqlite3_reset(c->stmt);
			sqlite3_clear_bindings(c->stmt);
			st->cache[i].busy = 0;
			return;
		}
	sqlite3_finalize(c->stmt);
}

/* A step's result: ROW, DONE, or an SG_STORE_* error (st->err said). */
static int
stepped(struct sg_store *st, int rc)
{
	if (rc == SQLITE_ROW)
		return SG_ST_ROW;
	if (rc == SQLITE_DONE) {
		st->changes = sqlite3_changes(st->db);
		return SG_ST_DONE;
	}
	dberr(st, "step");
	return (rc & 0xff) == SQLITE_CONSTRAINT ? SG_STORE_EXISTS :
	    SG_STORE_ERROR;
}

int
sg_sq_run(struct sg_store *st, struct sg_st_cur *c, const char *sql,
    const struct sg_st_arg *args, int n)
{
	int i, rc;

	if (prepare(st, sql, &c->stmt) != SQLITE_OK)
		return dberr(st, "prepare");
	for (i = 0; i < n; i++) {
		if (args[i].kind == 'i')
			sqlite3_bind_int64(c->stmt, i + 1, args[i].i);
		else if (args[i].kind == 'n' && args[i].s != NULL)
			sqlite3_bind_int64(c->stmt, i + 1, strtoll(args[i].s,
			    NULL, 10));
		else
			sqlite3_bind_text(c->stmt, i + 1, args[i].s, -1,
			    SQLITE_STATIC);
	}
	if ((rc = stepped(st, sqlite3_step(c->stmt))) < 0)
		sg_sq_done(st, c);
	return rc;
}

int
sg_sq_next(struct sg_store *st, struct sg_st_cur *c)
{
	return stepped(st, sqlite3_step(c->stmt));
}

const char *
sg_sq_text(struct sg_st_cur *c, int i)
{
	return (const char *)sqlite3_column_text(c->stmt, i);
}

int64_t
sg_sq_int(struct sg_st_cur *c, int i)
{
	return sqlite3_column_int64(c->stmt, i);
}
