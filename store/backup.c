/*
 * A consistent copy of the store while it serves: SQLite's online backup
 * API copies one snapshot (WAL readers do not stop writers) into a new
 * file, checked, then renamed over the target, so a failed or interrupted
 * backup never leaves a half file under the name asked for.
 *
 * The copy holds what the store holds (key hashes, conversations), so it
 * gets the store's mode, and it is written where no one else can reach:
 * in a directory of its own made beside the target (mkdtemp: 0700, a name
 * no one could have made first). A fixed name in the target's directory,
 * which others may be able to write, could be a file of theirs or a link
 * by the time SQLite opens it (and SQLite's journal beside it too).
 * rename() onto the target replaces a link there, never follows it.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "internal.h"

/* The copy in its directory, and what SQLite may make beside it. */
static const char *const parts[] = { "copy.db", "copy.db-journal",
    "copy.db-wal", "copy.db-shm" };

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

/*
 * The private directory beside path (dir) and the empty copy in it (tmp),
 * made with the store's permission bits before a byte is in it: OK, or
 * ERROR with err (and nothing made).
 */
static int
make_tmp(sqlite3 *src, const char *path, char *dir, char *tmp, size_t sz,
    char *err, size_t errsz)
{
	const char *slash = strrchr(path, '/');
	const char *store = sqlite3_db_filename(src, "main");
	struct stat sb;
	int fd, n;

	if (store == NULL || *store == '\0' || stat(store, &sb) == -1)
		return fail(err, errsz, NULL, "the store's file");
	n = slash == NULL ? snprintf(dir, sz, "./.sandgate-backup-XXXXXX") :
	    snprintf(dir, sz, "%.*s/.sandgate-backup-XXXXXX",
	    (int)(slash - path), path);
	if (n < 0 || (size_t)n + 32 >= sz) {
		snprintf(err, errsz, "%s: path too long", path);
		return SG_STORE_ERROR;
	}
	if (mkdtemp(dir) == NULL)
		return fail(err, errsz, NULL, path);
	memcpy(tmp, dir, (size_t)n);
	tmp[n] = '/';
	memcpy(tmp + n + 1, parts[0], strlen(parts[0]) + 1);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	/* Exactly the store's bits, whatever the umask; never exec. */
	if (fd == -1 || fchmod(fd, sb.st_mode & 0666) == -1) {
		fail(err, errsz, NULL, tmp);
		if (fd != -1)
			close(fd);
		unlink(tmp);
		rmdir(dir);
		return SG_STORE_ERROR;
	}
	close(fd);
	return SG_STORE_OK;
}

/* The private directory and whatever SQLite left in it. */
static void
remove_tmp(const char *dir)
{
	char p[4096];
	size_t i;

	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (snprintf(p, sizeof(p), "%s/%s", dir, parts[i]) <
		    (int)sizeof(p))
			unlink(p);
	rmdir(dir);
}

int
sg_store_backup(struct sg_store *st, const char *path, int *pages,
    char *err, size_t errsz)
{
	sqlite3_backup *b;
	sqlite3 *dst = NULL;
	char dir[4096], tmp[4096];
	int rc;

	*pages = 0;
	if (st->kind != SG_ST_SQLITE) {
		snprintf(err, errsz, "the store is PostgreSQL: back it up "
		    "with pg_dump");
		return SG_STORE_ERROR;
	}
	if ((rc = make_tmp(st->db, path, dir, tmp, sizeof(dir), err, errsz)) !=
	    SG_STORE_OK)
		return rc;
	/* The file is there: SQLite opens it, never makes it. */
	if (sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK) {
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
	if (rename(tmp, path) == -1)
		rc = fail(err, errsz, NULL, path);
out:
	sqlite3_close(dst);
	remove_tmp(dir);
	return rc;
}
