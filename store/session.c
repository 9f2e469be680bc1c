/*
 * Sessions (a tenant's metadata.session_id and its sandbox) and leases.
 * A session outlives its sandbox (sandbox_id becomes NULL when the row
 * goes), so the request that next uses it can tell the model its earlier
 * state is lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "../lib/util.h"

/* In the claim's transaction: the session's sandbox, if it has one. */
static int
session_sandbox(struct sg_store *st, const char *tenant,
    const char *session_id, char sbx[48], int *exists)
{
	const char *id;
	struct sg_st_cur *stmt;
	int rc;

	sbx[0] = '\0';
	*exists = 0;
	rc = sg_st_run(st, &stmt, "SELECT sandbox_id FROM sessions WHERE "
	    "tenant = ? AND session_id = ?", "ss", tenant, session_id);
	if (rc < 0)
		return rc;
	if (rc == SG_ST_ROW) {
		*exists = 1;
		if ((id = sg_st_text(stmt, 0)) != NULL)
			sg_copy(sbx, 48, (const char *)id);
	}
	sg_st_done(st, stmt);
	return SG_STORE_OK;
}

int
sg_store_sess_claim(struct sg_store *st, const char *tenant,
    const char *session_id, const char *new_id, const char *tool,
    int64_t owner_pid, int64_t owner_start, int64_t expires_at, int max_kept,
    char sbx[48], char victim[48], int *created, int *lost)
{
	int64_t now = (int64_t)time(NULL);
	int rc, exists;

	*created = *lost = 0;
	victim[0] = '\0';
	if (strlen(session_id) > SG_STORE_SESSION_MAX)
		return sg_st_err(st, "session id too long");
	if ((rc = sg_st_begin(st)) != SG_STORE_OK)
		return rc;
	rc = session_sandbox(st, tenant, session_id, sbx, &exists);
	if (rc == SG_STORE_OK && sbx[0] == '\0') {
		*lost = exists;
		rc = sg_st_exec_args(st, NULL, "INSERT INTO sandboxes (id, "
		    "tenant, tool, state, kind, owner_pid, owner_start, "
		    "created_at, last_used_at, expires_at, box) VALUES (?, ?, ?, "
		    "'creating', 1, ?, ?, ?, ?, ?, ?)", "sssiiiiis", new_id,
		    tenant, tool, owner_pid, owner_start, now, now, expires_at,
		    st->box);
		if (rc == SG_STORE_OK)
			rc = sg_st_exec_args(st, NULL, "INSERT INTO sessions "
			    "(tenant, session_id, sandbox_id, created_at, "
			    "last_used_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT "
			    "(tenant, session_id) DO UPDATE SET sandbox_id = "
			    "excluded.sandbox_id, last_used_at = "
			    "excluded.last_used_at", "sssii", tenant, session_id,
			    new_id, now, now);
		if (rc == SG_STORE_OK)
			rc = sg_st_evict(st, tenant, max_kept, victim);
		if (rc == SG_STORE_OK) {
			sg_copy(sbx, 48, new_id);
			*created = 1;
		}
	}
	return sg_st_end(st, rc);
}

int
sg_store_sess_detach(struct sg_store *st, const char *tenant,
    const char *session_id, const char *sbx)
{
	return sg_st_exec_args(st, NULL, "UPDATE sessions SET sandbox_id = NULL "
	    "WHERE tenant = ? AND session_id = ? AND sandbox_id = ?", "sss",
	    tenant, session_id, sbx);
}

int
sg_store_sess_touch(struct sg_store *st, const char *tenant,
    const char *session_id)
{
	int64_t now = (int64_t)time(NULL);
	int rc;

	if (sg_st_touch_done(st, tenant, session_id, now))
		return SG_STORE_OK;
	if ((rc = sg_st_exec_args(st, NULL, SG_ST_SESS_TOUCH_SQL, "iss", now,
	    tenant, session_id)) == SG_STORE_OK)
		sg_st_touch_mark(st, tenant, session_id, now);
	return rc;
}

/* The session's sandbox, and the session touched when touch: one
 * statement either way. */
static int
sess_one(struct sg_store *st, const char *tenant, const char *session_id,
    int touch, struct sg_store_sess *out)
{
	static const char use[] = "UPDATE sessions SET last_used_at = ?3 "
	    "WHERE tenant = ?1 AND session_id = ?2 RETURNING sandbox_id, "
	    "(SELECT tool FROM sandboxes WHERE id = sessions.sandbox_id), "
	    "(SELECT state FROM sandboxes WHERE id = sessions.sandbox_id)";
	static const char get[] = "SELECT s.sandbox_id, b.tool, b.state FROM "
	    "sessions s LEFT JOIN sandboxes b ON b.id = s.sandbox_id WHERE "
	    "s.tenant = ?1 AND s.session_id = ?2";
	struct sg_st_cur *stmt;
	const char *v;
	int64_t now = (int64_t)time(NULL);
	int rc;

	memset(out, 0, sizeof(*out));
	rc = touch ? sg_st_run(st, &stmt, use, "ssi", tenant, session_id,
	    now) : sg_st_run(st, &stmt, get, "ss", tenant, session_id);
	if (rc < 0)
		return rc;
	if (touch && rc == SG_ST_ROW)
		sg_st_touch_mark(st, tenant, session_id, now);
	if (rc == SG_ST_ROW) {
		sg_copy(out->tenant, sizeof(out->tenant), tenant);
		sg_copy(out->session_id, sizeof(out->session_id),
		    session_id);
		if ((v = sg_st_text(stmt, 0)) != NULL)
			sg_copy(out->sandbox_id, sizeof(out->sandbox_id),
			    v);
		if ((v = sg_st_text(stmt, 1)) != NULL)
			sg_copy(out->tool, sizeof(out->tool), v);
		if ((v = sg_st_text(stmt, 2)) != NULL)
			sg_copy(out->state, sizeof(out->state), v);
	}
	sg_st_done(st, stmt);
	return rc == SG_ST_ROW ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_sess_use(struct sg_store *st, const char *tenant,
    const char *session_id, struct sg_store_sess *out)
{
	struct sg_st_batch b = { .n = 0 };
	int64_t now = (int64_t)time(NULL);
	int rc;

	if (st->kind != SG_ST_PG)
		return sess_one(st, tenant, session_id, !sg_st_touch_done(st,
		    tenant, session_id, now), out);
	/* PostgreSQL: read now, touched with the next statement (the run's
	 * lock, the answer's save): a commit less. */
	if ((rc = sess_one(st, tenant, session_id, 0, out)) != SG_STORE_OK ||
	    sg_st_touch_done(st, tenant, session_id, now))
		return rc;
	sg_st_batch_add(st, &b, SG_ST_SESS_TOUCH_SQL, "iss", now, tenant,
	    session_id);
	if ((rc = sg_st_batch_later(st, &b)) == SG_STORE_OK)
		sg_st_touch_mark(st, tenant, session_id, now);
	return rc;
}

int
sg_store_sess_get(struct sg_store *st, const char *tenant,
    const char *session_id, struct sg_store_sess *out)
{
	return sess_one(st, tenant, session_id, 0, out);
}

static void
sess_row(struct sg_st_cur *stmt, struct sg_store_sess *s)
{
	const char *v;

	memset(s, 0, sizeof(*s));
	sg_copy(s->tenant, sizeof(s->tenant), sg_st_text(stmt,
	    0));
	sg_copy(s->session_id, sizeof(s->session_id),
	    sg_st_text(stmt, 1));
	if ((v = sg_st_text(stmt, 2)) != NULL)
		sg_copy(s->sandbox_id, sizeof(s->sandbox_id), v);
	if ((v = sg_st_text(stmt, 3)) != NULL)
		sg_copy(s->tool, sizeof(s->tool), v);
	if ((v = sg_st_text(stmt, 4)) != NULL)
		sg_copy(s->state, sizeof(s->state), v);
	s->created_at = sg_st_int(stmt, 5);
	s->last_used_at = sg_st_int(stmt, 6);
	s->expires_at = sg_st_int(stmt, 7);
}

int
sg_store_sess_list(struct sg_store *st, const char *tenant,
    int (*fn)(void *, const struct sg_store_sess *), void *arg)
{
	struct sg_store_sess s;
	struct sg_st_cur *stmt;
	int rc;

	for (rc = sg_st_run(st, &stmt, "SELECT s.tenant, s.session_id, "
	    "s.sandbox_id, b.tool, b.state, s.created_at, s.last_used_at, "
	    "coalesce(b.expires_at, 0) FROM sessions s LEFT JOIN sandboxes b "
	    "ON b.id = s.sandbox_id WHERE ?1 IS NULL OR s.tenant = ?1 ORDER BY "
	    "s.created_at, s.rowid", "s", tenant); rc == SG_ST_ROW;
	    rc = sg_st_next(st, stmt)) {
		sess_row(stmt, &s);
		if (fn(arg, &s) == -1)
			break;
	}
	return sg_st_finish(st, stmt, rc, "list sessions");
}

int
sg_store_sess_remove(struct sg_store *st, const char *tenant,
    const char *session_id)
{
	return sg_st_exec_args(st, NULL, "DELETE FROM sessions WHERE tenant = ? "
	    "AND session_id = ?", "ss", tenant, session_id);
}

int
sg_store_sess_prune(struct sg_store *st, int64_t before, int *removed)
{
	return sg_st_exec_args(st, removed, "DELETE FROM sessions WHERE "
	    "sandbox_id IS NULL AND last_used_at < ?", "i", before);
}

int
sg_store_lease(struct sg_store *st, const char *name, const char *holder,
    int secs)
{
	int64_t now = (int64_t)time(NULL);
	int changes = 0, rc;

	/* One statement: taken when free, expired, or already ours. */
	rc = sg_st_exec_args(st, &changes, "INSERT INTO leases (name, holder, "
	    "until) VALUES (?1, ?2, ?3) ON CONFLICT (name) DO UPDATE SET "
	    "holder = ?2, until = ?3 WHERE leases.until < ?4 OR leases.holder "
	    "= ?2", "ssii", name, holder, now + secs, now);
	return rc != SG_STORE_OK ? rc : changes > 0 ? SG_STORE_OK :
	    SG_STORE_EXISTS;
}

int
sg_store_lease_release(struct sg_store *st, const char *name,
    const char *holder)
{
	return sg_st_exec_args(st, NULL, "DELETE FROM leases WHERE name = ? AND "
	    "holder = ?", "ss", name, holder);
}
