/*
 * A whole store copied into another (`sandgate migrate --to`): every
 * table, row by row in the order they were made, in one transaction on
 * the target, from one snapshot of the source. The target must be
 * empty; both are brought to this sandgate's schema first.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The tables in the order their references need; each column 's' (text)
 * or 'n' (an integer, copied as its text). Leases are not copied: they
 * belong to the processes running now. */
static const struct table {
	const char	*name;
	const char	*cols;
	const char	*kinds;
} tables[] = {
	{ "keys", "id, name, sha256, created_at, revoked_at, settings",
	    "nssnns" },
	{ "sandboxes", "id, tenant, tool, state, handle, owner_pid, "
	    "owner_start, created_at, last_used_at, expires_at, kind, "
	    "runner_pid, runner_start, runner_until, name, seen, pool_gen, box",
	    "sssssnnnnnnnnnssss" },
	{ "relayed", "upstream_id, tenant, upstream, created_at", "sssn" },
	{ "sessions", "tenant, session_id, sandbox_id, created_at, "
	    "last_used_at", "sssnn" },
	{ "responses", "id, tenant, upstream_id, model, created_at, "
	    "sandbox_id, prev, body, pending", "ssssnssss" },
	{ "response_items", "response_id, tenant, output, seq, item_id, "
	    "item, upstream", "ssnnsss" },
	{ "files", "id, tenant, container_id, filename, path, purpose, "
	    "source, state, bytes, owner_pid, owner_start, created_at, "
	    "expires_at, box", "ssssssssnnnnns" },
	{ "usage", "id, tenant, key_id, key_name, model, upstream_model, "
	    "surface, tool, status, aborted, started_ms, duration_ms, "
	    "input_tokens, cached_tokens, output_tokens, reasoning_tokens, "
	    "model_requests, code_runs, sandbox_ms, sessions, file_bytes, "
	    "cost_input, cost_output, cost_sandbox, box",
	    "ssssssssnnnnnnnnnnnnnnnns" },
	{ "traces", "id, tenant, key_id, model, status, started_ms, "
	    "duration_ms, rounds, images, box", "ssssnnnsss" },
	{ "spend", "tenant, day, cost, tokens, sandbox_ms, requests, last_ms",
	    "snnnnnn" },
	{ "conversations", "id, tenant, metadata, sandbox_id, created_at, "
	    "used_at", "ssssnn" },
	{ "conversation_items", "conversation_id, tenant, item_id, item, "
	    "upstream, created_at", "sssssn" },
	{ "bg", "id, tenant, key_name, status, body, snapshot, runner, "
	    "cancel, error, created_ms, started_ms, ended_ms, box",
	    "sssssssnsnnns" },
	{ "resp_events", "response_id, seq, tenant, event, created_ms",
	    "snssn" },
	{ "mcp_sessions", "id, tenant, version, client, created_ms, used_ms",
	    "ssssnn" },
	{ "mcp_cancels", "session, request, at_ms", "ssn" },
};

#define NTABLES	(sizeof(tables) / sizeof(tables[0]))

/* rc of a call on the target; its failure's message becomes from's (the
 * copy's messages are the source's). */
static int
blame(struct sg_store *from, struct sg_store *to, int rc)
{
	if (rc != SG_STORE_OK)
		sg_st_err(from, "target: %.200s", to->err);
	return rc;
}

static int
empty(struct sg_store *to)
{
	struct sg_st_cur *cur;
	char sql[128];
	size_t i;
	int rc;

	for (i = 0; i < NTABLES; i++) {
		snprintf(sql, sizeof(sql), "SELECT 1 FROM %s LIMIT 1",
		    tables[i].name);
		if ((rc = sg_st_run(to, &cur, sql, "")) < 0)
			return rc;
		sg_st_done(to, cur);
		if (rc == SG_ST_ROW)
			return sg_st_err(to, "it is not empty (%s has rows): "
			    "copy only into a new database", tables[i].name);
	}
	return SG_STORE_OK;
}

/* Copy one table; rows without a box get box (they were made before
 * boxes, on the source's box). */
static int
copy_table(struct sg_store *from, struct sg_store *to,
    const struct table *t, const char *box, int64_t *rows)
{
	struct sg_st_arg args[SG_ST_MAX_ARGS];
	struct sg_st_cur *src, *dst;
	char get[1024], put[1024], marks[3 * SG_ST_MAX_ARGS];
	const char *c;
	int i, n = (int)strlen(t->kinds), cols = 1, boxed, rc;

	for (c = t->cols; *c != '\0'; c++)
		cols += *c == ',';
	if (cols != n || n > SG_ST_MAX_ARGS)
		return sg_st_err(from, "%s: %d columns, %d kinds", t->name,
		    cols, n);
	boxed = strcmp(strrchr(t->cols, ' ') + 1, "box") == 0;
	for (i = 0; i < n; i++)
		memcpy(marks + 3 * i, i > 0 ? ", ?" : "?  ", 3);
	marks[3 * n] = '\0';
	if (snprintf(get, sizeof(get), "SELECT %s FROM %s ORDER BY rowid",
	    t->cols, t->name) >= (int)sizeof(get) || snprintf(put, sizeof(put),
	    "INSERT INTO %s (%s) VALUES (%s)", t->name, t->cols, marks) >=
	    (int)sizeof(put))
		return sg_st_err(from, "%s: too many columns", t->name);
	for (rc = sg_st_run(from, &src, get, ""); rc == SG_ST_ROW;
	    rc = sg_st_next(from, src)) {
		for (i = 0; i < n; i++) {
			args[i].kind = t->kinds[i];
			args[i].s = sg_st_text(src, i);
		}
		if (boxed && args[n - 1].s == NULL)
			args[n - 1].s = box;
		if ((rc = blame(from, to, sg_st_runa(to, &dst, put, args, n))) <
		    0)
			break;
		sg_st_done(to, dst);
		(*rows)++;
	}
	return sg_st_finish(from, src, rc, t->name);
}

int
sg_store_copy(struct sg_store *from, struct sg_store *to, int64_t *rows)
{
	size_t i;
	int rc;

	*rows = 0;
	if ((rc = sg_store_migrate(from)) != SG_STORE_OK)
		return rc;
	if ((rc = blame(from, to, sg_store_migrate(to))) != SG_STORE_OK)
		return rc;
	/* One snapshot of the source; one transaction on the target. */
	if ((rc = sg_st_exec(from, from->kind == SG_ST_PG ? "BEGIN ISOLATION "
	    "LEVEL REPEATABLE READ READ ONLY" : "BEGIN")) != SG_STORE_OK)
		return rc;
	if ((rc = blame(from, to, sg_st_begin(to))) != SG_STORE_OK) {
		sg_st_exec(from, "ROLLBACK");
		return rc;
	}
	rc = blame(from, to, empty(to));
	for (i = 0; i < NTABLES && rc == SG_STORE_OK; i++)
		rc = copy_table(from, to, &tables[i], from->box, rows);
	/* keys.id is copied: the target's own numbering goes on after. */
	if (rc == SG_STORE_OK && to->kind == SG_ST_PG)
		rc = blame(from, to, sg_st_exec(to, "SELECT setval("
		    "pg_get_serial_sequence('keys', 'id'), coalesce((SELECT "
		    "max(id) FROM keys), 0) + 1, false)"));
	/* Committed only when all went in; else rolled back, from's
	 * message kept. */
	if (rc == SG_STORE_OK)
		rc = blame(from, to, sg_st_end(to, rc));
	else
		sg_st_end(to, rc);
	sg_st_exec(from, "ROLLBACK");
	return rc;
}
