#include <sys/stat.h>

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "../lib/util.h"

#define BUSY_TIMEOUT_MS 10000

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
	"  sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,"
	"  created_at INTEGER NOT NULL,"
	"  last_used_at INTEGER NOT NULL,"
	"  PRIMARY KEY (tenant, session_id));"
	"CREATE TABLE responses ("
	"  id TEXT PRIMARY KEY,"		/* sandgate's resp_... */
	"  tenant TEXT NOT NULL,"
	"  upstream_id TEXT NOT NULL,"
	"  model TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL);",
	/* 1 -> 2 */
	"CREATE TABLE relayed ("
	"  upstream_id TEXT NOT NULL,"		/* the upstream's response id */
	"  tenant TEXT NOT NULL,"		/* the key it was relayed to */
	"  upstream TEXT NOT NULL,"		/* whose id: the model's api_base */
	"  created_at INTEGER NOT NULL,"
	"  PRIMARY KEY (upstream_id, tenant, upstream));"
	"CREATE INDEX relayed_created ON relayed(created_at);",
	/* 2 -> 3: kept sandboxes (sessions, conversations, explicit ones),
	 * one run at a time in each, the container of each response, and
	 * the reaper's lease. Sandboxes from before are explicit ones: an
	 * ephemeral one still in use is deleted by its request anyway. The
	 * old sessions table was never written; a session now outlives its
	 * sandbox (sandbox_id NULL), so the next request knows state was
	 * lost. */
	"ALTER TABLE sandboxes ADD COLUMN kind INTEGER NOT NULL DEFAULT 0;"
	"UPDATE sandboxes SET kind = 3;"
	"ALTER TABLE sandboxes ADD COLUMN runner_pid INTEGER;"
	"ALTER TABLE sandboxes ADD COLUMN runner_start INTEGER;"
	"ALTER TABLE sandboxes ADD COLUMN runner_until INTEGER NOT NULL "
	"  DEFAULT 0;"
	"CREATE INDEX sandboxes_kept ON sandboxes(tenant, kind, last_used_at);"
	"ALTER TABLE responses ADD COLUMN sandbox_id TEXT;"
	"DROP TABLE sessions;"
	"CREATE TABLE sessions ("
	"  tenant TEXT NOT NULL,"
	"  session_id TEXT NOT NULL,"
	"  sandbox_id TEXT REFERENCES sandboxes(id) ON DELETE SET NULL,"
	"  created_at INTEGER NOT NULL,"
	"  last_used_at INTEGER NOT NULL,"
	"  PRIMARY KEY (tenant, session_id));"
	"CREATE INDEX sessions_sandbox ON sessions(sandbox_id);"
	"CREATE TABLE leases ("
	"  name TEXT PRIMARY KEY,"
	"  holder TEXT NOT NULL,"
	"  until INTEGER NOT NULL);",
	/* 3 -> 4: stored responses as OpenAI keeps them: the answer (body,
	 * without its output), the response it continued, the outputs the
	 * upstream still waits for, and every input and output item as the
	 * client saw it with what the upstream saw for it. Rows from before
	 * have no body: they continue, but cannot be retrieved. */
	"ALTER TABLE responses ADD COLUMN prev TEXT;"
	"ALTER TABLE responses ADD COLUMN body TEXT;"
	"ALTER TABLE responses ADD COLUMN pending TEXT;"
	"CREATE INDEX responses_created ON responses(created_at);"
	"CREATE TABLE response_items ("
	"  response_id TEXT NOT NULL REFERENCES responses(id) ON DELETE CASCADE,"
	"  tenant TEXT NOT NULL,"
	"  output INTEGER NOT NULL,"		/* 0 input, 1 output */
	"  seq INTEGER NOT NULL,"
	"  item_id TEXT,"			/* the id the client knows */
	"  item TEXT NOT NULL,"			/* JSON, as the client saw it */
	"  upstream TEXT NOT NULL,"		/* JSON array the upstream saw */
	"  PRIMARY KEY (response_id, output, seq));"
	"CREATE INDEX response_items_id ON response_items(item_id);",
	/* 4 -> 5: files, uploaded (/v1/files, container NULL) or in a
	 * container (cfile_...). Their bytes live in files.dir under their
	 * id; a row is "uploading" (holding its reserved bytes of the key's
	 * quota, its writer named) until they are whole. */
	"CREATE TABLE files ("
	"  id TEXT PRIMARY KEY,"
	"  tenant TEXT NOT NULL,"
	"  container_id TEXT,"
	"  filename TEXT NOT NULL,"
	"  path TEXT,"				/* in the container */
	"  purpose TEXT,"
	"  source TEXT,"			/* user, assistant */
	"  state TEXT NOT NULL,"		/* uploading, ready */
	"  bytes INTEGER NOT NULL,"
	"  owner_pid INTEGER,"
	"  owner_start INTEGER,"
	"  created_at INTEGER NOT NULL,"
	"  expires_at INTEGER NOT NULL);"
	"CREATE INDEX files_list ON files(tenant, container_id, created_at);"
	"CREATE INDEX files_expires ON files(expires_at);",
	/* 5 -> 6: a container's name (POST /v1/containers). */
	"ALTER TABLE sandboxes ADD COLUMN name TEXT;",
	/* 6 -> 7: what a sandbox's /mnt/data held when last looked at (its
	 * files' sizes and times), so only what the code wrote since is
	 * copied out; and a container's file found by its path. */
	"ALTER TABLE sandboxes ADD COLUMN seen TEXT;"
	"CREATE INDEX files_path ON files(container_id, path);",
	/* 7 -> 8: warm sandboxes made ahead, by tool and the settings they
	 * were made with. */
	"ALTER TABLE sandboxes ADD COLUMN pool_gen TEXT;"
	"CREATE INDEX sandboxes_pool ON sandboxes(tool, kind, state);",
};

/* Relayed ids are kept this long (OpenAI keeps responses 30 days). */
#define RELAYED_TTL	(30 * 86400)
/* Rows pruned per insert: the index finds them, and the work per
 * request stays small however many expired at once. */
#define RELAYED_PRUNE	64

int
sg_st_err(struct sg_store *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	return SG_STORE_ERROR;
}

int
sg_st_dberr(struct sg_store *st, const char *what)
{
	return sg_st_err(st, "%s: %s", what, sqlite3_errmsg(st->db));
}

const char *
sg_store_errmsg(const struct sg_store *st)
{
	return st->err;
}

int
sg_st_exec(struct sg_store *st, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		sg_st_err(st, "%s", msg != NULL ? msg : sqlite3_errmsg(st->db));
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
	return rc == SQLITE_OK ? SG_STORE_OK : sg_st_dberr(st, "journal_mode=WAL");
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
	if (set_wal(st) != SG_STORE_OK || sg_st_exec(st, "PRAGMA synchronous=NORMAL;"
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
	int i;

	if (st == NULL)
		return;
	for (i = 0; i < st->ncache; i++) {
		sqlite3_finalize(st->cache[i].stmt);
		free(st->cache[i].sql);
	}
	sqlite3_close_v2(st->db);
	free(st);
}

int
sg_st_prepare(struct sg_store *st, const char *sql, sqlite3_stmt **stmt)
{
	uint64_t h = sg_fnv1a(sql);
	struct sg_st_cached *c;
	char *copy;
	int i, rc;

	for (i = 0; i < st->ncache; i++) {
		c = &st->cache[i];
		if (c->hash != h || strcmp(c->sql, sql) != 0)
			continue;
		if (c->busy)
			break;	/* in use (a nested query): a fresh one */
		c->busy = 1;
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
	st->cache[st->ncache++] = (struct sg_st_cached){ copy, h, *stmt, 1 };
	return SQLITE_OK;
}

void
sg_st_done(struct sg_store *st, sqlite3_stmt *stmt)
{
	int i;

	if (stmt == NULL)
		return;
	for (i = 0; i < st->ncache; i++)
		if (st->cache[i].stmt == stmt) {
			sqlite3_reset(stmt);
			sqlite3_clear_bindings(stmt);
			st->cache[i].busy = 0;
			return;
		}
	sqlite3_finalize(stmt);
}

int
sg_store_version(struct sg_store *st, int *version)
{
	sqlite3_stmt *stmt;
	int rc;

	if (sg_st_prepare(st, "PRAGMA user_version", &stmt) != SQLITE_OK)
		return sg_st_dberr(st, "user_version");
	rc = sqlite3_step(stmt);
	*version = rc == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : -1;
	sg_st_done(st, stmt);
	return rc == SQLITE_ROW ? SG_STORE_OK : sg_st_dberr(st, "user_version");
}

int
sg_store_migrate(struct sg_store *st)
{
	const int latest = (int)(sizeof(migrations) / sizeof(migrations[0]));
	char sql[64];
	int v;

	/* IMMEDIATE: two starting masters must not both migrate. */
	if (sg_st_exec(st, "BEGIN IMMEDIATE") != SG_STORE_OK)
		return SG_STORE_ERROR;
	if (sg_store_version(st, &v) != SG_STORE_OK)
		goto fail;
	if (v > latest) {
		sg_st_err(st, "store schema version %d is newer than this "
		    "sandgate (%d)", v, latest);
		goto fail;
	}
	for (; v < latest; v++)
		if (sg_st_exec(st, migrations[v]) != SG_STORE_OK)
			goto fail;
	snprintf(sql, sizeof(sql), "PRAGMA user_version=%d", latest);
	if (sg_st_exec(st, sql) != SG_STORE_OK || sg_st_exec(st, "COMMIT") != SG_STORE_OK)
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

/* Bind arguments described by fmt: 's' a string or NULL, 'i' an int64_t. */
static void
bind_args(sqlite3_stmt *stmt, const char *fmt, va_list ap)
{
	int i;

	for (i = 0; fmt[i] != '\0'; i++) {
		if (fmt[i] == 'i')
			sqlite3_bind_int64(stmt, i + 1, va_arg(ap, int64_t));
		else
			sqlite3_bind_text(stmt, i + 1, va_arg(ap, const char *),
			    -1, SQLITE_STATIC);
	}
}

int
sg_st_run(struct sg_store *st, sqlite3_stmt **stmt, const char *sql,
    const char *fmt, ...)
{
	va_list ap;
	int rc;

	if (sg_st_prepare(st, sql, stmt) != SQLITE_OK)
		return sg_st_dberr(st, "prepare");
	va_start(ap, fmt);
	bind_args(*stmt, fmt, ap);
	va_end(ap);
	rc = sqlite3_step(*stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		sg_st_dberr(st, "step");
		sg_st_done(st, *stmt);
		*stmt = NULL;
		return rc == SQLITE_CONSTRAINT ? SG_STORE_EXISTS : SG_STORE_ERROR;
	}
	return rc;
}

int
sg_st_exec_args(struct sg_store *st, int *changes, const char *sql,
    const char *fmt, ...)
{
	sqlite3_stmt *stmt;
	va_list ap;
	int rc;

	if (sg_st_prepare(st, sql, &stmt) != SQLITE_OK)
		return sg_st_dberr(st, "prepare");
	va_start(ap, fmt);
	bind_args(stmt, fmt, ap);
	va_end(ap);
	rc = sqlite3_step(stmt);
	sg_st_done(st, stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		sg_st_dberr(st, "step");
		return rc == SQLITE_CONSTRAINT ? SG_STORE_EXISTS : SG_STORE_ERROR;
	}
	if (changes != NULL)
		*changes = sqlite3_changes(st->db);
	return SG_STORE_OK;
}

int
sg_st_begin(struct sg_store *st)
{
	return sg_st_exec(st, "BEGIN IMMEDIATE");
}

int
sg_st_end(struct sg_store *st, int rc)
{
	if (rc == SG_STORE_OK && sg_st_exec(st, "COMMIT") == SG_STORE_OK)
		return SG_STORE_OK;
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc == SG_STORE_OK ? SG_STORE_ERROR : rc;
}

int
sg_store_key_add(struct sg_store *st, const char *name, const char *sha256)
{
	return sg_st_exec_args(st, NULL, "INSERT INTO keys (name, sha256, "
	    "created_at) VALUES (?, ?, ?)", "ssi", name, sha256,
	    (int64_t)time(NULL));
}

int
sg_store_key_find(struct sg_store *st, const char *sha256, char *name,
    size_t namesz)
{
	sqlite3_stmt *stmt;
	int rc;

	rc = sg_st_run(st, &stmt, "SELECT name FROM keys WHERE sha256 = ? AND "
	    "revoked_at IS NULL", "s", sha256);
	if (rc < 0)
		return rc;
	if (rc == SQLITE_ROW) {
		snprintf(name, namesz, "%s", sqlite3_column_text(stmt, 0));
		rc = SG_STORE_OK;
	} else
		rc = SG_STORE_NOTFOUND;
	sg_st_done(st, stmt);
	return rc;
}

int
sg_store_key_revoke(struct sg_store *st, const char *name)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "UPDATE keys SET revoked_at = ? WHERE "
	    "name = ? AND revoked_at IS NULL", "is", (int64_t)time(NULL), name);
	if (rc != SG_STORE_OK)
		return rc;
	return changes > 0 ? SG_STORE_OK : SG_STORE_NOTFOUND;
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
		return sg_st_dberr(st, "prepare");
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
		sg_st_dberr(st, "list keys");
		sg_st_done(st, stmt);
		return SG_STORE_ERROR;
	}
	sg_st_done(st, stmt);
	return SG_STORE_OK;
}


int
sg_store_relayed_put(struct sg_store *st, const char *upstream_id,
    const char *tenant, const char *upstream)
{
	int64_t now = (int64_t)time(NULL);
	int rc;

	rc = sg_st_exec_args(st, NULL, "INSERT OR REPLACE INTO relayed (upstream_id, "
	    "tenant, upstream, created_at) VALUES (?, ?, ?, ?)", "sssi",
	    upstream_id, tenant, upstream, now);
	if (rc != SG_STORE_OK)
		return rc;
	return sg_st_exec_args(st, NULL, "DELETE FROM relayed WHERE rowid IN (SELECT "
	    "rowid FROM relayed WHERE created_at < ? LIMIT ?)", "ii",
	    now - RELAYED_TTL, (int64_t)RELAYED_PRUNE);
}

int
sg_store_relayed_has(struct sg_store *st, const char *upstream_id,
    const char *tenant, const char *upstream)
{
	sqlite3_stmt *stmt;
	int rc;

	rc = sg_st_run(st, &stmt, "SELECT 1 FROM relayed WHERE upstream_id = ? AND "
	    "tenant = ? AND upstream = ? AND created_at >= ?", "sssi",
	    upstream_id, tenant, upstream, (int64_t)time(NULL) - RELAYED_TTL);
	if (rc < 0)
		return rc;
	rc = rc == SQLITE_ROW ? SG_STORE_OK : SG_STORE_NOTFOUND;
	sg_st_done(st, stmt);
	return rc;
}

int
sg_st_finish(struct sg_store *st, sqlite3_stmt *stmt, int rc, const char *what)
{
	if (rc < 0)
		return rc;
	rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SG_STORE_OK :
	    sg_st_dberr(st, what);
	sg_st_done(st, stmt);
	return rc;
}
