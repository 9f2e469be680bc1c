/*
 * Sandbox rows: recorded before the provider is called, kept or not,
 * one run at a time, removed only once the provider confirmed a delete.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "../lib/util.h"

/* The row itself, inside the caller's transaction (or alone). */
static int
insert_row(struct sg_store *st, const char *id, const char *tenant,
    const char *tool, int kind, int64_t owner_pid, int64_t owner_start,
    int64_t expires_at)
{
	struct sg_store_sbx row;
	int64_t now = (int64_t)time(NULL);

	/* Rows are read back into fixed fields: refuse what would not fit. */
	if (strlen(id) >= sizeof(row.id) || strlen(tenant) >=
	    sizeof(row.tenant) || strlen(tool) >= sizeof(row.tool))
		return sg_st_err(st, "sandbox id, tenant or tool name too long");
	return sg_st_exec_args(st, NULL, "INSERT INTO sandboxes (id, tenant, "
	    "tool, state, kind, owner_pid, owner_start, created_at, "
	    "last_used_at, expires_at, box) VALUES (?, ?, ?, 'creating', ?, ?, "
	    "?, ?, ?, ?, ?)", "sssiiiiiis", id, tenant, tool, (int64_t)kind,
	    owner_pid, owner_start, now, now, expires_at, st->box);
}

int
sg_store_sbx_begin(struct sg_store *st, const char *id, const char *tenant,
    const char *tool, int64_t owner_pid, int64_t owner_start,
    int64_t expires_at)
{
	return insert_row(st, id, tenant, tool, SG_SBX_EPHEMERAL, owner_pid,
	    owner_start, expires_at);
}

/* Whether a run holds id now, by the runs' table (a SQLite store's). */
static int
held(struct sg_store *st, const char *id)
{
	int64_t pid, start, until;

	if (st->runs == NULL)
		return 0;	/* the query's runner_until said */
	sg_st_runs_get(st, id, &pid, &start, &until);
	return until >= (int64_t)time(NULL);
}

/* Whether the row id is there (a lock in the runs' table is for one). */
static int
exists(struct sg_store *st, const char *id)
{
	struct sg_st_cur *stmt;
	int rc;

	rc = sg_st_run(st, &stmt, "SELECT 1 FROM sandboxes WHERE id = ?", "s",
	    id);
	sg_st_done(st, stmt);
	return rc < 0 ? rc : rc == SG_ST_ROW;
}

/*
 * With the new row in, one kept sandbox too many: mark the least recently
 * used one that runs nothing "deleting" and name it. FULL when all run.
 */
int
sg_st_evict(struct sg_store *st, const char *tenant, int max_kept,
    char victim[48])
{
	struct sg_st_cur *stmt;
	int64_t n = 0;
	int rc;

	victim[0] = '\0';
	rc = sg_st_run(st, &stmt, "SELECT count(*) FROM sandboxes WHERE "
	    "tenant = ? AND kind != 0 AND state != 'deleting'", "s", tenant);
	if (rc < 0)
		return rc;
	n = sg_st_int(stmt, 0);
	sg_st_done(st, stmt);
	if (n <= max_kept)
		return SG_STORE_OK;
	/* With the runs' table the rows do not say which run: the first
	 * of them (a key's kept ones, a few) that none holds. */
	for (rc = sg_st_run(st, &stmt, "SELECT id FROM sandboxes WHERE tenant "
	    "= ? AND kind != 0 AND state = 'ready' AND runner_until < ? ORDER "
	    "BY last_used_at, rowid", "si", tenant, (int64_t)time(NULL));
	    rc == SG_ST_ROW; rc = sg_st_next(st, stmt))
		if (!held(st, sg_st_text(stmt, 0))) {
			sg_copy(victim, 48, sg_st_text(stmt, 0));
			break;
		}
	if ((rc = sg_st_finish(st, stmt, rc, "evict")) != SG_STORE_OK)
		return rc;
	if (victim[0] == '\0')
		return SG_STORE_FULL;
	return sg_st_exec_args(st, NULL, "UPDATE sandboxes SET state = "
	    "'deleting' WHERE id = ?", "s", victim);
}

int
sg_store_sbx_begin_kind(struct sg_store *st, const char *id,
    const char *tenant, const char *tool, int kind, int64_t owner_pid,
    int64_t owner_start, int64_t expires_at, int max_kept, char victim[48])
{
	int rc;

	victim[0] = '\0';
	if (kind == SG_SBX_EPHEMERAL)
		return insert_row(st, id, tenant, tool, kind, owner_pid,
		    owner_start, expires_at);
	if ((rc = sg_st_begin(st)) != SG_STORE_OK)
		return rc;
	rc = insert_row(st, id, tenant, tool, kind, owner_pid, owner_start,
	    expires_at);
	if (rc == SG_STORE_OK)
		rc = sg_st_evict(st, tenant, max_kept, victim);
	return sg_st_end(st, rc);
}

int
sg_store_sbx_run_begin(struct sg_store *st, const char *id, int64_t pid,
    int64_t start, int64_t until)
{
	int changes = 0, rc;

	if (st->runs != NULL) {
		if ((rc = sg_st_runs_take(st, id, pid, start, until,
		    (int64_t)time(NULL), -1)) != SG_STORE_OK)
			return rc;
		/* As the row's update: none, no lock. */
		if ((rc = exists(st, id)) == 1)
			return SG_STORE_OK;
		sg_st_runs_give(st, id, pid, start);
		return rc < 0 ? rc : SG_STORE_EXISTS;
	}
	rc = sg_st_exec_args(st, &changes, "UPDATE sandboxes SET runner_pid = "
	    "?, runner_start = ?, runner_until = ? WHERE id = ? AND "
	    "runner_until < ?", "iiisi", pid, start, until, id,
	    (int64_t)time(NULL));
	return rc != SG_STORE_OK ? rc : changes > 0 ? SG_STORE_OK :
	    SG_STORE_EXISTS;
}

int
sg_store_sbx_run_end(struct sg_store *st, const char *id, int64_t pid)
{
	if (st->runs != NULL) {
		sg_st_runs_give(st, id, pid, 0);
		return SG_STORE_OK;
	}
	return sg_st_exec_args(st, NULL, "UPDATE sandboxes SET runner_pid = "
	    "NULL, runner_start = NULL, runner_until = 0 WHERE id = ? AND "
	    "runner_pid = ?", "si", id, pid);
}

int
sg_store_sbx_run_take(struct sg_store *st, const char *id, int64_t pid,
    int64_t start, int64_t until, struct sg_store_sbx *out)
{
	struct sg_st_cur *stmt;
	const char *seen;
	int rc;

	if (st->runs != NULL) {
		if ((rc = sg_st_runs_take(st, id, pid, start, until,
		    (int64_t)time(NULL), -1)) != SG_STORE_OK)
			return rc;
		rc = sg_st_run(st, &stmt, "SELECT " SG_ST_SBX_COLUMNS ", seen "
		    "FROM sandboxes WHERE id = ?", "s", id);
		if (rc != SG_ST_ROW)	/* no row, no lock */
			sg_st_runs_give(st, id, pid, start);
	} else
		rc = sg_st_run(st, &stmt, "UPDATE sandboxes SET runner_pid = "
		    "?, runner_start = ?, runner_until = ? WHERE id = ? AND "
		    "runner_until < ? RETURNING " SG_ST_SBX_COLUMNS ", seen",
		    "iiisi", pid, start, until, id, (int64_t)time(NULL));
	if (rc < 0)
		return rc;
	if (rc == SG_ST_ROW) {
		sg_st_sbx_row(st, stmt, out);
		/* Nothing listed yet is nothing seen. */
		seen = sg_st_text(stmt, SG_ST_SBX_NCOLUMNS);
		out->seen = strdup(seen != NULL ? seen : "{}");
	}
	sg_st_done(st, stmt);
	return rc == SG_ST_ROW ? SG_STORE_OK : SG_STORE_EXISTS;
}

int
sg_store_sbx_run_done(struct sg_store *st, const char *id, int64_t pid,
    int64_t expires_at, const char *tenant, const char *session_id,
    int later)
{
	struct sg_st_batch b = { .n = 0 };
	int64_t now = (int64_t)time(NULL);
	int rc;

	/* Every SET reads the row as it was: the lock goes only if ours. */
	if (st->runs != NULL) {
		sg_st_runs_give(st, id, pid, 0);
		if (expires_at > 0)
			sg_st_batch_add(st, &b, "UPDATE sandboxes SET "
			    "last_used_at = ?, expires_at = ? WHERE id = ?",
			    "iis", now, expires_at, id);
	} else if (expires_at > 0)
		sg_st_batch_add(st, &b, "UPDATE sandboxes SET last_used_at = "
		    "?1, expires_at = ?2, runner_start = CASE WHEN runner_pid = "
		    "?4 THEN NULL ELSE runner_start END, runner_until = CASE "
		    "WHEN runner_pid = ?4 THEN 0 ELSE runner_until END, "
		    "runner_pid = CASE WHEN runner_pid = ?4 THEN NULL ELSE "
		    "runner_pid END WHERE id = ?3", "iisi", now, expires_at, id,
		    pid);
	else
		sg_st_batch_add(st, &b, "UPDATE sandboxes SET runner_pid = "
		    "NULL, runner_start = NULL, runner_until = 0 WHERE id = ? "
		    "AND runner_pid = ?", "si", id, pid);
	if (session_id != NULL && !sg_st_touch_done(st, tenant, session_id,
	    now))
		sg_st_batch_add(st, &b, SG_ST_SESS_TOUCH_SQL, "iss", now,
		    tenant, session_id);
	if ((rc = later ? sg_st_batch_later(st, &b) : sg_st_batch_run(st, &b,
	    0)) == SG_STORE_OK && session_id != NULL)
		sg_st_touch_mark(st, tenant, session_id, now);
	return rc;
}

int
sg_store_sbx_run_drop(struct sg_store *st, const char *id, int64_t pid,
    int64_t start)
{
	if (st->runs != NULL) {
		sg_st_runs_give(st, id, pid, start);
		return SG_STORE_OK;
	}
	return sg_st_exec_args(st, NULL, "UPDATE sandboxes SET runner_pid = "
	    "NULL, runner_start = NULL, runner_until = 0 WHERE id = ? AND "
	    "runner_pid = ? AND runner_start = ?", "sii", id, pid, start);
}

int
sg_store_sbx_abandon(struct sg_store *st, const char *id)
{
	return sg_st_exec_args(st, NULL, "UPDATE sandboxes SET kind = 0 WHERE "
	    "id = ?", "s", id);
}

int
sg_store_sbx_counts(struct sg_store *st, int (*fn)(void *, const char *,
    int, int64_t), void *arg)
{
	struct sg_st_cur *stmt;
	int rc;

	for (rc = sg_st_run(st, &stmt, "SELECT tool, kind, count(*) FROM "
	    "sandboxes WHERE state != 'deleting' GROUP BY tool, kind ORDER BY "
	    "tool, kind", ""); rc == SG_ST_ROW; rc = sg_st_next(st, stmt))
		if (fn(arg, sg_st_text(stmt, 0), (int)sg_st_int(stmt, 1),
		    sg_st_int(stmt, 2)) == -1)
			break;
	return sg_st_finish(st, stmt, rc, "count sandboxes");
}

int
sg_store_sbx_ready(struct sg_store *st, const char *id, const char *handle,
    int64_t expires_at)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "UPDATE sandboxes SET state = 'ready', "
	    "handle = ?, expires_at = ? WHERE id = ?", "sis", handle,
	    expires_at, id);
	return rc != SG_STORE_OK ? rc : changes > 0 ? SG_STORE_OK :
	    SG_STORE_NOTFOUND;
}

int
sg_store_sbx_touch(struct sg_store *st, const char *id, int64_t expires_at)
{
	return sg_st_exec_args(st, NULL, "UPDATE sandboxes SET last_used_at = ?, "
	    "expires_at = ? WHERE id = ?", "iis", (int64_t)time(NULL),
	    expires_at, id);
}

int
sg_store_sbx_seen(struct sg_store *st, const char *id, char **seen)
{
	const char *t;
	struct sg_st_cur *stmt;
	int rc;

	*seen = NULL;
	rc = sg_st_run(st, &stmt, "SELECT seen FROM sandboxes WHERE id = ?",
	    "s", id);
	if (rc < 0)
		return rc;
	if (rc == SG_ST_ROW && (t = sg_st_text(stmt, 0)) != NULL &&
	    (*seen = strdup((const char *)t)) == NULL)
		rc = sg_st_err(st, "out of memory");
	sg_st_done(st, stmt);
	if (rc < 0)
		return rc;
	return rc == SG_ST_ROW ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_sbx_set_seen(struct sg_store *st, const char *id, const char *seen)
{
	return sg_st_exec_args(st, NULL, "UPDATE sandboxes SET seen = ? WHERE "
	    "id = ?", "ss", seen, id);
}

int
sg_store_sbx_mark(struct sg_store *st, const char *id, const char *state)
{
	return sg_st_exec_args(st, NULL, "UPDATE sandboxes SET state = ? WHERE "
	    "id = ?", "ss", state, id);
}

int
sg_store_sbx_claim_delete(struct sg_store *st, const struct sg_store_sbx *seen)
{
	int64_t now = (int64_t)time(NULL);
	int changes = 0, rc;

	/* With the runs' table, its lock as seen is the claim's while it is
	 * made: no run begins in between (one after finds it deleting). */
	if (st->runs != NULL && sg_st_runs_take(st, seen->id, getpid(), 0,
	    now + 60, now, seen->runner_until) != SG_STORE_OK)
		return SG_STORE_NOTFOUND;
	if ((rc = sg_st_begin(st)) == SG_STORE_OK) {
		rc = sg_st_exec_args(st, &changes, "UPDATE sandboxes SET state "
		    "= CASE WHEN state = 'creating' THEN state ELSE "
		    "'deleting' END WHERE id = ? AND state = ? AND (? = 1 OR "
		    "runner_until = ?)", "ssii", seen->id, seen->state,
		    (int64_t)(st->runs != NULL), seen->runner_until);
		if (rc == SG_STORE_OK && changes == 0)
			rc = SG_STORE_NOTFOUND;
		rc = sg_st_end(st, rc);
	}
	/* The lock as it was (a run a deleter chose to end keeps its own
	 * until then), or none. */
	if (st->runs != NULL && seen->runner_until > 0)
		(void)sg_st_runs_take(st, seen->id, seen->runner_pid,
		    seen->runner_start, seen->runner_until, now, now + 60);
	else if (st->runs != NULL)
		sg_st_runs_give(st, seen->id, getpid(), 0);
	return rc;
}

int
sg_store_sbx_remove(struct sg_store *st, const char *id)
{
	return sg_st_exec_args(st, NULL, "DELETE FROM sandboxes WHERE id = ?", "s",
	    id);
}

void
sg_st_sbx_row(struct sg_store *st, struct sg_st_cur *stmt,
    struct sg_store_sbx *out)
{
	const char *h = sg_st_text(stmt, 4);

	memset(out, 0, sizeof(*out));
	sg_copy(out->id, sizeof(out->id), sg_st_text(stmt, 0));
	sg_copy(out->tenant, sizeof(out->tenant),
	    sg_st_text(stmt, 1));
	sg_copy(out->tool, sizeof(out->tool),
	    sg_st_text(stmt, 2));
	sg_copy(out->state, sizeof(out->state),
	    sg_st_text(stmt, 3));
	out->handle = h != NULL ? strdup(h) : NULL;
	out->owner_pid = sg_st_int(stmt, 5);
	out->owner_start = sg_st_int(stmt, 6);
	out->created_at = sg_st_int(stmt, 7);
	out->last_used_at = sg_st_int(stmt, 8);
	out->expires_at = sg_st_int(stmt, 9);
	out->kind = (int)sg_st_int(stmt, 10);
	out->runner_pid = sg_st_int(stmt, 11);
	out->runner_until = sg_st_int(stmt, 12);
	out->runner_start = sg_st_int(stmt, 13);
	if (st->runs != NULL)
		sg_st_runs_get(st, out->id, &out->runner_pid,
		    &out->runner_start, &out->runner_until);
	sg_copy(out->name, sizeof(out->name),
	    sg_st_text(stmt, 14));
	sg_copy(out->pool_gen, sizeof(out->pool_gen),
	    sg_st_text(stmt, 15));
	sg_copy(out->box, sizeof(out->box), sg_st_text(stmt, 16));
}

int
sg_store_sbx_name(struct sg_store *st, const char *id, const char *name)
{
	return sg_st_exec_args(st, NULL, "UPDATE sandboxes SET name = ? WHERE "
	    "id = ?", "ss", name, id);
}


int
sg_store_sbx_get(struct sg_store *st, const char *id, const char *tenant,
    struct sg_store_sbx *out)
{
	struct sg_st_cur *stmt;
	int rc;

	/* A tenant's own only: another key's sandbox is simply not found. */
	rc = sg_st_run(st, &stmt, "SELECT " SG_ST_SBX_COLUMNS " FROM sandboxes WHERE id = ? "
	    "AND (?2 IS NULL OR tenant = ?2)", "ss", id, tenant);
	if (rc < 0)
		return rc;
	if (rc == SG_ST_ROW) {
		sg_st_sbx_row(st, stmt, out);
		rc = SG_STORE_OK;
	} else
		rc = SG_STORE_NOTFOUND;
	sg_st_done(st, stmt);
	return rc;
}

void
sg_store_sbx_clear(struct sg_store_sbx *s)
{
	free(s->handle);
	s->handle = NULL;
	free(s->seen);
	s->seen = NULL;
}

int
sg_store_sbx_list(struct sg_store *st, const char *tenant,
    int (*fn)(void *, const struct sg_store_sbx *), void *arg)
{
	struct sg_store_sbx row;
	struct sg_st_cur *stmt;
	int rc, stop = 0;

	for (rc = sg_st_run(st, &stmt, "SELECT " SG_ST_SBX_COLUMNS " FROM "
	    "sandboxes WHERE ?1 IS NULL OR tenant = ?1 ORDER BY created_at, "
	    "rowid", "s", tenant); !stop && rc == SG_ST_ROW;
	    rc = sg_st_next(st, stmt)) {
		sg_st_sbx_row(st, stmt, &row);
		stop = fn(arg, &row) == -1;
		sg_store_sbx_clear(&row);
	}
	return sg_st_finish(st, stmt, rc, "list sandboxes");
}
