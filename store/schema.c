/*
 * The schema, versioned: SQLite's and PostgreSQL's, one version counter
 * (SQLite's user_version; PostgreSQL's sg_schema table), so a store of
 * either kind knows which steps it has had and `sandgate migrate` copies
 * between stores of one version.
 */
#include <stdio.h>

#include "internal.h"

/* 8 -> 9, both dialects: the box (store.box) whose processes own a row,
 * so a box judges only its own processes' liveness, and a local sandbox
 * or file asked for on another box is named, not lost. */
#define STEP_BOX \
	"ALTER TABLE sandboxes ADD COLUMN box TEXT;" \
	"ALTER TABLE files ADD COLUMN box TEXT;"

/*
 * 9 -> 10, both dialects (INT: their integer type; ROWID: PostgreSQL's
 * rowid column, "" in SQLite, which has its own): the usage ledger, one
 * row per request with the box that wrote it; the request traces; and a
 * key's own settings (JSON of its limits and tools; NULL: the defaults).
 * Counters are NOT NULL DEFAULT 0 so a sum never meets a NULL. The
 * traces' index, and the ledger's, serve their newest-first pages
 * (started_ms, id) and their prune; usage_key a key's requests. spend
 * sums the ledger per key and UTC day as rows are added (a budget reads
 * a month in 31 rows, not a month of requests);
 * rates holds each key's minute window on a store boxes share.
 */
#define STEP_LEDGER(INT, ROWID) \
	"ALTER TABLE keys ADD COLUMN settings TEXT;" \
	"CREATE TABLE usage (" ROWID \
	"  id TEXT PRIMARY KEY," \
	"  tenant TEXT, key_id TEXT, key_name TEXT, model TEXT," \
	"  upstream_model TEXT, surface TEXT, tool TEXT, box TEXT," \
	"  status " INT " NOT NULL DEFAULT 0," \
	"  aborted " INT " NOT NULL DEFAULT 0," \
	"  started_ms " INT " NOT NULL DEFAULT 0," \
	"  duration_ms " INT " NOT NULL DEFAULT 0," \
	"  input_tokens " INT " NOT NULL DEFAULT 0," \
	"  cached_tokens " INT " NOT NULL DEFAULT 0," \
	"  output_tokens " INT " NOT NULL DEFAULT 0," \
	"  reasoning_tokens " INT " NOT NULL DEFAULT 0," \
	"  model_requests " INT " NOT NULL DEFAULT 0," \
	"  code_runs " INT " NOT NULL DEFAULT 0," \
	"  sandbox_ms " INT " NOT NULL DEFAULT 0," \
	"  sessions " INT " NOT NULL DEFAULT 0," \
	"  file_bytes " INT " NOT NULL DEFAULT 0," \
	"  cost_input " INT " NOT NULL DEFAULT 0," \
	"  cost_output " INT " NOT NULL DEFAULT 0," \
	"  cost_sandbox " INT " NOT NULL DEFAULT 0);" \
	"CREATE INDEX usage_started ON usage(started_ms, id);" \
	"CREATE INDEX usage_key ON usage(key_id, started_ms, id);" \
	"CREATE TABLE traces (" ROWID \
	"  id TEXT PRIMARY KEY," \
	"  tenant TEXT, key_id TEXT, model TEXT," \
	"  status " INT "," \
	"  started_ms " INT " NOT NULL DEFAULT 0," \
	"  duration_ms " INT " NOT NULL DEFAULT 0," \
	"  box TEXT," \
	"  rounds TEXT);" \
	"CREATE INDEX traces_started ON traces(started_ms, id);" \
	"CREATE TABLE spend (" ROWID \
	"  tenant TEXT NOT NULL," \
	"  day " INT " NOT NULL," \
	"  cost " INT " NOT NULL DEFAULT 0," \
	"  tokens " INT " NOT NULL DEFAULT 0," \
	"  sandbox_ms " INT " NOT NULL DEFAULT 0," \
	"  requests " INT " NOT NULL DEFAULT 0," \
	"  last_ms " INT " NOT NULL DEFAULT 0," \
	"  PRIMARY KEY (tenant, day));" \
	"CREATE TABLE rates (" ROWID \
	"  tenant TEXT PRIMARY KEY," \
	"  start_ms " INT " NOT NULL," \
	"  requests " INT " NOT NULL DEFAULT 0," \
	"  tokens " INT " NOT NULL DEFAULT 0," \
	"  ok " INT " NOT NULL DEFAULT 0);"

/* 10 -> 11, both dialects: the images a request's code made, kept with
 * its trace apart from its rounds (a list of traces never reads them). */
#define STEP_TRACE_IMAGES \
	"ALTER TABLE traces ADD COLUMN images TEXT;"

/*
 * 11 -> 12, both dialects: the Conversations API's conversations, per
 * tenant, with the container their code last ran in; and their items in
 * the order they came (rowid), each as the client sees it and, for those
 * a turn of the loop added, what the upstream saw (NULL: the item itself
 * stands for it). used_at is the last change: the prune's clock.
 */
#define STEP_CONVERSATIONS(INT, ROWID) \
	"CREATE TABLE conversations (" ROWID \
	"  id TEXT PRIMARY KEY," \
	"  tenant TEXT NOT NULL," \
	"  metadata TEXT," \
	"  sandbox_id TEXT," \
	"  created_at " INT " NOT NULL," \
	"  used_at " INT " NOT NULL);" \
	"CREATE INDEX conversations_used ON conversations(used_at);" \
	"CREATE TABLE conversation_items (" ROWID \
	"  conversation_id TEXT NOT NULL REFERENCES conversations(id)" \
	"    ON DELETE CASCADE," \
	"  tenant TEXT NOT NULL," \
	"  item_id TEXT NOT NULL," \
	"  item TEXT NOT NULL," \
	"  upstream TEXT," \
	"  created_at " INT " NOT NULL);" \
	"CREATE INDEX conversation_items_id ON " \
	"  conversation_items(conversation_id, item_id);"

/*
 * 12 -> 13, both dialects: background responses (bg), one row per job
 * from queued to its end, with the request as sent, the response so far
 * and the runner holding it ("box:pid:start"); and the events of streamed
 * responses (resp_events) by their sequence_number, so a stream can be
 * resumed, with the tenant (a response still streaming has no other row
 * saying whose it is) and the time each was added (the prune's clock).
 * bg_queue serves the claim's pick and the counts, bg_tenant its count of
 * a tenant's running jobs, bg_ended the prune.
 */
/*
 * 13 -> 14, both dialects: the MCP server's transport sessions (their
 * sandbox is a sticky session's, in sessions) and the requests their
 * clients cancelled; mcp_idle serves the prune.
 */
#define STEP_MCP(INT, ROWID) \
	"CREATE TABLE mcp_sessions (" ROWID \
	"  id TEXT PRIMARY KEY," \
	"  tenant TEXT NOT NULL," \
	"  version TEXT NOT NULL," \
	"  client TEXT," \
	"  created_ms " INT " NOT NULL," \
	"  used_ms " INT " NOT NULL);" \
	"CREATE INDEX mcp_idle ON mcp_sessions(used_ms);" \
	"CREATE TABLE mcp_cancels (" ROWID \
	"  session TEXT NOT NULL," \
	"  request TEXT NOT NULL," \
	"  at_ms " INT " NOT NULL," \
	"  PRIMARY KEY (session, request));"

#define STEP_BACKGROUND(INT, ROWID) \
	"CREATE TABLE bg (" ROWID \
	"  id TEXT PRIMARY KEY," \
	"  tenant TEXT NOT NULL," \
	"  key_name TEXT," \
	"  status TEXT NOT NULL," \
	"  body TEXT NOT NULL," \
	"  snapshot TEXT," \
	"  runner TEXT," \
	"  cancel " INT " NOT NULL DEFAULT 0," \
	"  error TEXT," \
	"  created_ms " INT " NOT NULL," \
	"  started_ms " INT "," \
	"  ended_ms " INT "," \
	"  box TEXT);" \
	"CREATE INDEX bg_queue ON bg(status, created_ms);" \
	"CREATE INDEX bg_tenant ON bg(tenant, status);" \
	"CREATE INDEX bg_ended ON bg(ended_ms);" \
	"CREATE TABLE resp_events (" ROWID \
	"  response_id TEXT NOT NULL," \
	"  seq " INT " NOT NULL," \
	"  tenant TEXT NOT NULL," \
	"  event TEXT NOT NULL," \
	"  created_ms " INT " NOT NULL," \
	"  PRIMARY KEY (response_id, seq));" \
	"CREATE INDEX resp_events_created ON resp_events(created_ms);"

/*
 * Each entry takes the schema from version i to i + 1. Append only: a
 * released entry never changes, so every store can be brought forward.
 */
static const char *const sqlite_steps[] = {
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
	/* 8 -> 9 */
	STEP_BOX,
	/* 9 -> 10 */
	STEP_LEDGER("INTEGER", ""),
	/* 10 -> 11 */
	STEP_TRACE_IMAGES,
	/* 11 -> 12 */
	STEP_CONVERSATIONS("INTEGER", ""),
	/* 12 -> 13 */
	STEP_BACKGROUND("INTEGER", ""),
	/* 13 -> 14 */
	STEP_MCP("INTEGER", ""),
};


/*
 * PostgreSQL's store began at version 8: its first step makes the schema
 * SQLite's steps 0-8 made, its later steps follow SQLite's one for one.
 * Integers are BIGINT (unix seconds, byte counts); each table has a
 * "rowid" (BIGSERIAL) as SQLite's tables do, for the insertion order the
 * queries sort by.
 */
#define PG_BASE	8
static const char *const pg_steps[] = {
	/* 0 -> 8 */
	"CREATE TABLE keys ("
	"  id BIGSERIAL PRIMARY KEY,"
	"  name TEXT NOT NULL,"
	"  sha256 TEXT NOT NULL UNIQUE,"
	"  created_at BIGINT NOT NULL,"
	"  revoked_at BIGINT);"
	"CREATE UNIQUE INDEX keys_active_name ON keys(name)"
	"  WHERE revoked_at IS NULL;"
	"CREATE TABLE sandboxes ("
	"  rowid BIGSERIAL,"
	"  id TEXT PRIMARY KEY,"
	"  tenant TEXT NOT NULL,"
	"  tool TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  handle TEXT,"
	"  owner_pid BIGINT,"
	"  owner_start BIGINT,"
	"  created_at BIGINT NOT NULL,"
	"  last_used_at BIGINT NOT NULL,"
	"  expires_at BIGINT NOT NULL,"
	"  kind BIGINT NOT NULL DEFAULT 0,"
	"  runner_pid BIGINT,"
	"  runner_start BIGINT,"
	"  runner_until BIGINT NOT NULL DEFAULT 0,"
	"  name TEXT,"
	"  seen TEXT,"
	"  pool_gen TEXT);"
	"CREATE INDEX sandboxes_tenant ON sandboxes(tenant);"
	"CREATE INDEX sandboxes_kept ON sandboxes(tenant, kind, last_used_at);"
	"CREATE INDEX sandboxes_pool ON sandboxes(tool, kind, state);"
	"CREATE TABLE relayed ("
	"  rowid BIGSERIAL,"
	"  upstream_id TEXT NOT NULL,"
	"  tenant TEXT NOT NULL,"
	"  upstream TEXT NOT NULL,"
	"  created_at BIGINT NOT NULL,"
	"  PRIMARY KEY (upstream_id, tenant, upstream));"
	"CREATE INDEX relayed_created ON relayed(created_at);"
	"CREATE TABLE sessions ("
	"  rowid BIGSERIAL,"
	"  tenant TEXT NOT NULL,"
	"  session_id TEXT NOT NULL,"
	"  sandbox_id TEXT REFERENCES sandboxes(id) ON DELETE SET NULL,"
	"  created_at BIGINT NOT NULL,"
	"  last_used_at BIGINT NOT NULL,"
	"  PRIMARY KEY (tenant, session_id));"
	"CREATE INDEX sessions_sandbox ON sessions(sandbox_id);"
	"CREATE TABLE leases ("
	"  name TEXT PRIMARY KEY,"
	"  holder TEXT NOT NULL,"
	"  until BIGINT NOT NULL);"
	"CREATE TABLE responses ("
	"  rowid BIGSERIAL,"
	"  id TEXT PRIMARY KEY,"
	"  tenant TEXT NOT NULL,"
	"  upstream_id TEXT NOT NULL,"
	"  model TEXT NOT NULL,"
	"  created_at BIGINT NOT NULL,"
	"  sandbox_id TEXT,"
	"  prev TEXT,"
	"  body TEXT,"
	"  pending TEXT);"
	"CREATE INDEX responses_created ON responses(created_at);"
	"CREATE TABLE response_items ("
	"  rowid BIGSERIAL,"
	"  response_id TEXT NOT NULL REFERENCES responses(id) ON DELETE CASCADE,"
	"  tenant TEXT NOT NULL,"
	"  output BIGINT NOT NULL,"
	"  seq BIGINT NOT NULL,"
	"  item_id TEXT,"
	"  item TEXT NOT NULL,"
	"  upstream TEXT NOT NULL,"
	"  PRIMARY KEY (response_id, output, seq));"
	"CREATE INDEX response_items_id ON response_items(item_id);"
	"CREATE TABLE files ("
	"  rowid BIGSERIAL,"
	"  id TEXT PRIMARY KEY,"
	"  tenant TEXT NOT NULL,"
	"  container_id TEXT,"
	"  filename TEXT NOT NULL,"
	"  path TEXT,"
	"  purpose TEXT,"
	"  source TEXT,"
	"  state TEXT NOT NULL,"
	"  bytes BIGINT NOT NULL,"
	"  owner_pid BIGINT,"
	"  owner_start BIGINT,"
	"  created_at BIGINT NOT NULL,"
	"  expires_at BIGINT NOT NULL);"
	"CREATE INDEX files_list ON files(tenant, container_id, created_at);"
	"CREATE INDEX files_expires ON files(expires_at);"
	"CREATE INDEX files_path ON files(container_id, path);",
	/* 8 -> 9 */
	STEP_BOX,
	/* 9 -> 10 */
	STEP_LEDGER("BIGINT", "  rowid BIGSERIAL,"),
	/* 10 -> 11 */
	STEP_TRACE_IMAGES,
	/* 11 -> 12 */
	STEP_CONVERSATIONS("BIGINT", "  rowid BIGSERIAL,"),
	/* 12 -> 13 */
	STEP_BACKGROUND("BIGINT", "  rowid BIGSERIAL,"),
	/* 13 -> 14 */
	STEP_MCP("BIGINT", "  rowid BIGSERIAL,"),
};

#define NSTEPS(a)	((int)(sizeof(a) / sizeof((a)[0])))

_Static_assert(NSTEPS(sqlite_steps) == SG_STORE_SCHEMA_VERSION,
    "a step for each version");
_Static_assert(NSTEPS(pg_steps) == SG_STORE_SCHEMA_VERSION - PG_BASE + 1,
    "PostgreSQL's steps follow SQLite's");

int
sg_store_version(struct sg_store *st, int *version)
{
	struct sg_st_cur *cur;
	int rc;

	*version = -1;
	/* A database nothing was made in yet is at version 0. */
	if (st->kind == SG_ST_PG) {
		rc = sg_st_run(st, &cur, "SELECT CASE WHEN to_regclass("
		    "'sg_schema') IS NULL THEN 0 ELSE 1 END", "");
		if (rc == SG_ST_ROW && sg_st_int(cur, 0) == 0) {
			sg_st_done(st, cur);
			*version = 0;
			return SG_STORE_OK;
		}
		sg_st_done(st, cur);
		if (rc < 0)
			return rc;
	}
	rc = sg_st_run(st, &cur, st->kind == SG_ST_PG ? "SELECT coalesce(max("
	    "version), 0) FROM sg_schema" : "PRAGMA user_version", "");
	if (rc == SG_ST_ROW)
		*version = (int)sg_st_int(cur, 0);
	sg_st_done(st, cur);
	return rc == SG_ST_ROW ? SG_STORE_OK : rc < 0 ? rc :
	    sg_st_err(st, "schema version: no row");
}

/* st's dialect's steps into *list (n of them), and the index of the
 * step that takes version v on. */
static int
steps(struct sg_store *st, int v, const char *const **list, int *n)
{
	if (st->kind == SG_ST_SQLITE) {
		*list = sqlite_steps;
		*n = NSTEPS(sqlite_steps);
		return v;
	}
	*list = pg_steps;
	*n = NSTEPS(pg_steps);
	/* pg_steps[0] is 0 -> PG_BASE, then one step per version. */
	return v == 0 ? 0 : v - PG_BASE + 1;
}

static int
set_version(struct sg_store *st, int v)
{
	char sql[96];

	if (st->kind == SG_ST_PG)
		return sg_st_exec_args(st, NULL, "UPDATE sg_schema SET version "
		    "= ?", "i", (int64_t)v);
	snprintf(sql, sizeof(sql), "PRAGMA user_version=%d", v);
	return sg_st_exec(st, sql);
}

int
sg_store_migrate(struct sg_store *st)
{
	const int latest = SG_STORE_SCHEMA_VERSION;
	const char *const *list;
	int v, i, n, rc;

	/* In the claims' transaction: two starting masters must not both
	 * migrate. PostgreSQL's DDL is transactional too. */
	if ((rc = sg_st_begin(st)) != SG_STORE_OK)
		return rc;
	if (st->kind == SG_ST_PG && ((rc = sg_st_exec(st, "CREATE TABLE IF NOT "
	    "EXISTS sg_schema (version BIGINT NOT NULL)")) != SG_STORE_OK ||
	    (rc = sg_st_exec(st, "INSERT INTO sg_schema SELECT 0 WHERE NOT "
	    "EXISTS (SELECT 1 FROM sg_schema)")) != SG_STORE_OK))
		return sg_st_end(st, rc);
	if ((rc = sg_store_version(st, &v)) != SG_STORE_OK)
		return sg_st_end(st, rc);
	if (v > latest) {
		rc = sg_st_err(st, "store schema version %d is newer than this "
		    "sandgate (%d)", v, latest);
		return sg_st_end(st, rc);
	}
	if (v == latest)
		return sg_st_end(st, SG_STORE_OK);
	for (i = steps(st, v, &list, &n); i < n && rc == SG_STORE_OK; i++)
		rc = sg_st_exec(st, list[i]);
	if (rc == SG_STORE_OK)
		rc = set_version(st, latest);
	return sg_st_end(st, rc);
}
