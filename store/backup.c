/*
 * A consistent copy of the store while it serves: SQLite's online backup
 * API copies one snapshot (WAL readers do not stop writers) into a new
 * file beside the target, checked, then renamed over it, so a failed or
 * interrupted backup never leaves a half file under the name asked for.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "internal.h"

static int
fail(char *err, size_t errsz, sqlite3 *db, const char *what)
{
	snprintf(err, errsz, "%s: %s", what, db != NULL ? sqlite3_errmsg(db) :
	    strerror(errno));
	return SG_STORE_ERROR;
}

/* The copy reads back whole (a quick_check): OK, or ERROR with err. */
static int
check(sqlite3 *db, char *err, size_t errsz)
{
	sqlite3_stmt *stmt;
	const char *v;
	int rc;

	if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &stmt, NULL) !=
	    SQLITE_OK)
		return fail(err, errsz, db, "check the copy");
	rc = sqlite3_step(stmt);
	v = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(stmt, 0) : NULL;
	rc = v != NULL && strcmp(v, "ok") == 0 ? SG_STORE_OK : SG_STORE_ERROR;
	if (rc != SG_STORE_OK)
		snprintf(err, errsz, "the copy does not check: %s", v != NULL ? v :
		    sqlite3_errmsg(db));
	sqlite3_finalize(stmt);
	return rc;
}

int
sg_store_backup(struct sg_store *st, const char *path, int *pages,
    char *err, size_t errsz)
{
	sqlite3_backup *b;
	sqlite3 *dst = NULL;
	char tmp[4096];
	int rc;

	*pages = 0;
	if (st->kind != SG_ST_SQLITE) {
		snprintf(err, errsz, "the store is PostgreSQL: back it up "
		    "with pg_dump");
		return SG_STORE_ERROR;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp-%d", path, (int)getpid()) >=
	    (int)sizeof(tmp)) {
		snprintf(err, errsz, "%s: path too long", path);
		return SG_STORE_ERROR;
	}
	unlink(tmp);	/* a leftover of a backup killed with our pid */
	if (sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		rc = fail(err, errsz, dst, tmp);
		goto out;
	}
	if ((b = sqlite3_backup_init(dst, "main", st->db, "main")) == NULL) {
		rc = fail(err, errsz, dst, "backup");
		goto out;
	}
	/* All pages in one step: one read transaction, so one snapshot;
	 * busy only while a checkpoint holds the file, then retried. */
	while ((rc = sqlite3_backup_step(b, -1)) == SQLITE_BUSY ||
	    rc == SQLITE_LOCKED)
		sqlite3_sleep(20);
	*pages = sqlite3_backup_pagecount(b);
	if (sqlite3_backup_finish(b) != SQLITE_OK || rc != SQLITE_DONE) {
		rc = fail(err, errsz, dst, "backup");
		goto out;
	}
	if ((rc = check(dst, err, errsz)) != SG_STORE_OK)
		goto out;
	/* A copy stands alone: out of WAL, so it is one file. */
	if (sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) !=
	    SQLITE_OK) {
		rc = fail(err, errsz, dst, "backup");
		goto out;
	}
	sqlite3_close(dst);
	dst = NULL;
	if (rename(tmp, path) == -1) {
		rc = fail(err, errsz, NULL, path);
		goto out;
	}
	return SG_STORE_OK;
out:
	sqlite3_close(dst);
	unlink(tmp);
	return rc;
}
