#include <sys/stat.h>

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store.h"

#define BUSY_TIMEOUT_MS 10000

struct sg_store {
	sqlite3	*db;
	char	 err[256];
};

/*
 * Each entry takes the schema from version i to i + 1. Append only: a
 * released entry never changes, so every store can be brought forward.
 */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE keys ("
	"  id INTEGER PRIMARY KEY,"
	"  name TEXT NOT NULL,"
	"  sha256 TEXT NOT NULL UNIQUE,"
	"  created_at INTEGER NOT NULL,"
	"  revoked_at INTEGER);"
	"CREATE UNIQUE INDEX keys_active_name ON keys(name)"
	"  WHERE revoked_at IS NULL;"
	"CREATE TABLE sandboxes ("
	"  id TEXT PRIMARY KEY,"		/* cntr_... */
	"  tenant TEXT NOT NULL,"		/* key hash or 'anonymous' */
	"  tool TEXT NOT NULL,"
	"  state TEXT NOT NULL,"		/* creating, ready, deleting */
	"  handle TEXT,"			/* provider JSON */
	"  owner_pid INTEGER,"
	"  owner_start INTEGER,"
	"  created_at INTEGER NOT NULL,"
	"  last_used_at INTEGER NOT NULL,"
	"  expires_at INTEGER NOT NULL);"
	"CREATE INDEX sandboxes_tenant ON sandboxes(tenant);"
	"CREATE TABLE sessions ("
	"  tenant TEXT NOT NULL,"
	"  session_id TEXT NOT NULL,"
	"  sandbox_id TEXT NOT NULL REFERENCES sandboxes(id),"
	"  created_at INTEGER NOT NULL,"
	"  last_used_at INTEGER NOT NULL,"
	"  PRIMARY KEY (tenant, session_id));"
	"CREATE TABLE responses ("
	"  id TEXT PRIMARY KEY,"		/* sandgate's resp_... */
	"  tenant TEXT NOT NULL,"
	"  upstream_id TEXT NOT NULL,"
	"  model TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL);",
};

static int
set_err(struct sg_store *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	return SG_STORE_ERROR;
}

static int
db_err(struct sg_store *st, const char *what)
{
	return set_err(st, "%s: %s", what, sqlite3_errmsg(st->db));
}

const char *
sg_store_errmsg(const struct sg_store *st)
{
	return st->err;
}

static int
exec(struct sg_store *st, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		set_err(st, "%s", msg != NULL ? msg : sqlite3_errmsg(st->db));
		sqlite3_free(msg);
		return SG_STORE_ERROR;
	}
	return SG_STORE_OK;
}

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
	return rc == SQLITE_OK ? SG_STORE_OK : db_err(st, "journal_mode=WAL");
}

int
sg_store_open(const char *path, struct sg_store **out, char *err, size_t errsz)
{
	struct sg_store *st;
	int fd;

	*out = NULL;
	/* Create it ourselves: SQLite would take the umask (0644). */
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1) {
		snprintf(err, errsz, "%s: cannot open: %m", path);
		return SG_STORE_ERROR;
	}
	close(fd);
	if ((st = calloc(1, sizeof(*st))) == NULL) {
		snprintf(err, errsz, "%s: out of memory", path);
		return SG_STORE_ERROR;
	}
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, errsz, "%s: %s", path, st->db != NULL ?
		    sqlite3_errmsg(st->db) : "out of memory");
		sg_store_close(st);
		return SG_STORE_ERROR;
	}
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	if (set_wal(st) != SG_STORE_OK || exec(st, "PRAGMA synchronous=NORMAL;"
	    "PRAGMA foreign_keys=ON;") != SG_STORE_OK) {
		snprintf(err, errsz, "%s: %s", path, st->err);
		sg_store_close(st);
		return SG_STORE_ERROR;
	}
	*out = st;
	return SG_STORE_OK;
}

void
sg_store_close(struct sg_store *st)
{
	if (st == NULL)
		return;
	sqlite3_close_v2(st->db);
	free(st);
}

int
sg_store_version(struct sg_store *st, int *version)
{
	sqlite3_stmt *stmt;
	int rc;

	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &stmt,
	    NULL) != SQLITE_OK)
		return db_err(st, "user_version");
	rc = sqlite3_step(stmt);
	*version = rc == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : -1;
	sqlite3_finalize(stmt);
	return rc == SQLITE_ROW ? SG_STORE_OK : db_err(st, "user_version");
}

int
sg_store_migrate(struct sg_store *st)
{
	const int latest = (int)(sizeof(migrations) / sizeof(migrations[0]));
	char sql[64];
	int v;

	/* IMMEDIATE: two starting masters must not both migrate. */
	if (exec(st, "BEGIN IMMEDIATE") != SG_STORE_OK)
		return SG_STORE_ERROR;
	if (sg_store_version(st, &v) != SG_STORE_OK)
		goto fail;
	if (v > latest) {
		set_err(st, "store schema version %d is newer than this "
		    "sandgate (%d)", v, latest);
		goto fail;
	}
	for (; v < latest; v++)
		if (exec(st, migrations[v]) != SG_STORE_OK)
			goto fail;
	snprintf(sql, sizeof(sql), "PRAGMA user_version=%d", latest);
	if (exec(st, sql) != SG_STORE_OK || exec(st, "COMMIT") != SG_STORE_OK)
		goto fail;
	return SG_STORE_OK;
fail:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return SG_STORE_ERROR;
}

int
sg_store_ping(struct sg_store *st)
{
	int v;

	return sg_store_version(st, &v);
}

/* Prepare, bind text params in order (NULL binds NULL), step once. */
static int
run(struct sg_store *st, sqlite3_stmt **stmt, const char *sql, int n, ...)
{
	va_list ap;
	int i, rc;

	if (sqlite3_prepare_v2(st->db, sql, -1, stmt, NULL) != SQLITE_OK)
		return db_err(st, "prepare");
	va_start(ap, n);
	for (i = 1; i <= n; i++) {
		const char *v = va_arg(ap, const char *);

		sqlite3_bind_text(*stmt, i, v, -1, SQLITE_STATIC);
	}
	va_end(ap);
	rc = sqlite3_step(*stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		db_err(st, "step");
		sqlite3_finalize(*stmt);
		*stmt = NULL;
		return rc == SQLITE_CONSTRAINT ? SG_STORE_EXISTS : SG_STORE_ERROR;
	}
	return rc;
}

int
sg_store_key_add(struct sg_store *st, const char *name, const char *sha256)
{
	sqlite3_stmt *stmt;
	char now[32];
	int rc;

	snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
	rc = run(st, &stmt, "INSERT INTO keys (name, sha256, created_at) "
	    "VALUES (?, ?, CAST(? AS INTEGER))", 3, name, sha256, now);
	if (rc < 0)
		return rc;
	sqlite3_finalize(stmt);
	return SG_STORE_OK;
}

int
sg_store_key_find(struct sg_store *st, const char *sha256, char *name,
    size_t namesz)
{
	sqlite3_stmt *stmt;
	int rc;

	rc = run(st, &stmt, "SELECT name FROM keys WHERE sha256 = ? AND "
	    "revoked_at IS NULL", 1, sha256);
	if (rc < 0)
		return rc;
	if (rc == SQLITE_ROW) {
		snprintf(name, namesz, "%s", sqlite3_column_text(stmt, 0));
		rc = SG_STORE_OK;
	} else
		rc = SG_STORE_NOTFOUND;
	sqlite3_finalize(stmt);
	return rc;
}

int
sg_store_key_revoke(struct sg_store *st, const char *name)
{
	sqlite3_stmt *stmt;
	char now[32];
	int rc;

	snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
	rc = run(st, &stmt, "UPDATE keys SET revoked_at = CAST(? AS INTEGER) "
	    "WHERE name = ? AND revoked_at IS NULL", 2, now, name);
	if (rc < 0)
		return rc;
	sqlite3_finalize(stmt);
	return sqlite3_changes(st->db) > 0 ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_key_list(struct sg_store *st,
    int (*fn)(void *, const struct sg_store_key *), void *arg)
{
	struct sg_store_key k;
	sqlite3_stmt *stmt;
	int rc;

	if (sqlite3_prepare_v2(st->db, "SELECT id, name, sha256, created_at, "
	    "coalesce(revoked_at, 0) FROM keys ORDER BY id", -1, &stmt,
	    NULL) != SQLITE_OK)
		return db_err(st, "prepare");
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		k.id = sqlite3_column_int64(stmt, 0);
		k.name = (const char *)sqlite3_column_text(stmt, 1);
		k.sha256 = (const char *)sqlite3_column_text(stmt, 2);
		k.created_at = sqlite3_column_int64(stmt, 3);
		k.revoked_at = sqlite3_column_int64(stmt, 4);
		if (fn(arg, &k) == -1)
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		db_err(st, "list keys");
		sqlite3_finalize(stmt);
		return SG_STORE_ERROR;
	}
	sqlite3_finalize(stmt);
	return SG_STORE_OK;
}
