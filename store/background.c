/*
 * Background jobs and response events (background.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "background.h"
#include "internal.h"
#include "../lib/util.h"

#define BG_COLUMNS "id, tenant, status, coalesce(runner, ''), " \
	"coalesce(box, ''), key_name, body, snapshot, error, cancel, " \
	"created_ms, coalesce(started_ms, 0), coalesce(ended_ms, 0)"

/* The oldest queued job whose tenant is below its cap (?1). The tenants
 * at their cap are found once, among the running jobs (a few: one per
 * runner), not once per queued job. */
#define CLAIMABLE "SELECT id FROM bg WHERE status = 'queued' AND tenant " \
	"NOT IN (SELECT tenant FROM bg WHERE status = 'in_progress' GROUP BY " \
	"tenant HAVING count(*) >= ?1) ORDER BY created_ms, rowid LIMIT 1"

static int
copy_text(struct sg_store *st, const char *s, char **out)
{
	*out = NULL;
	if (s != NULL && (*out = strdup(s)) == NULL)
		return sg_st_err(st, "background job: out of memory");
	return SG_STORE_OK;
}

/* A row of BG_COLUMNS into out (cleared first). */
static int
row(struct sg_store *st, struct sg_st_cur *cur, struct sg_store_bg *out)
{
	char **texts[] = { &out->key_name, &out->body, &out->snapshot,
	    &out->error };
	int i, rc = SG_STORE_OK;

	memset(out, 0, sizeof(*out));
	sg_copy(out->id, sizeof(out->id), sg_st_text(cur, 0));
	sg_copy(out->tenant, sizeof(out->tenant), sg_st_text(cur, 1));
	sg_copy(out->status, sizeof(out->status), sg_st_text(cur, 2));
	sg_copy(out->runner, sizeof(out->runner), sg_st_text(cur, 3));
	sg_copy(out->box, sizeof(out->box), sg_st_text(cur, 4));
	out->cancel = sg_st_int(cur, 9) != 0;
	out->created_ms = sg_st_int(cur, 10);
	out->started_ms = sg_st_int(cur, 11);
	out->ended_ms = sg_st_int(cur, 12);
	for (i = 0; i < 4 && rc == SG_STORE_OK; i++)
		rc = copy_text(st, sg_st_text(cur, 5 + i), texts[i]);
	if (rc != SG_STORE_OK)
		sg_store_bg_clear(out);
	return rc;
}

void
sg_store_bg_clear(struct sg_store_bg *j)
{
	free(j->key_name);
	free(j->body);
	free(j->snapshot);
	free(j->error);
	memset(j, 0, sizeof(*j));
}

int
sg_store_bg_add(struct sg_store *st, const char *id, const char *tenant,
    const char *key_name, const char *body, int64_t created_ms)
{
	return sg_st_exec_args(st, NULL, "INSERT INTO bg (id, tenant, key_name, "
	    "status, body, created_ms, box) VALUES (?, ?, ?, 'queued', ?, ?, "
	    "?)", "ssssis", id, tenant, key_name, body, created_ms, st->box);
}

/* Whether a job can be claimed now, read without a lock: idle runners
 * poll, and must not queue up on the claims' lock to learn nothing. */
static int
claimable(struct sg_store *st, int64_t cap)
{
	struct sg_st_cur *cur;
	int rc;

	if ((rc = sg_st_run(st, &cur, CLAIMABLE, "i", cap)) < 0)
		return rc;
	sg_st_done(st, cur);
	return rc == SG_ST_ROW ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_bg_claim(struct sg_store *st, int64_t pid, int64_t start,
    int max_per_key, struct sg_store_bg *out)
{
	struct sg_st_cur *cur = NULL;
	int64_t cap = max_per_key > 0 ? max_per_key : INT64_MAX;
	char runner[SG_STORE_BG_RUNNER_MAX];
	int rc, end, tries;

	memset(out, 0, sizeof(*out));
	snprintf(runner, sizeof(runner), "%s:%" PRId64 ":%" PRId64, st->box,
	    pid, start);
	if ((rc = claimable(st, cap)) != SG_STORE_OK)
		return rc;
	/*
	 * Under the claims' lock each claim counts a tenant's running jobs
	 * with every claim before it seen (only a claim raises that count).
	 * Without it two claims whose picks differ (a job older than the
	 * rest came between them: clocks of boxes differ) would each count
	 * without the other, and both take one. A job cancelled between the
	 * pick and the update is not taken (the update asks again that it
	 * is queued): then the next pick.
	 */
	if ((rc = sg_st_begin(st)) != SG_STORE_OK)
		return rc;
	for (tries = 0; tries < 3; tries++) {
		rc = sg_st_run(st, &cur, "UPDATE bg SET status = 'in_progress', "
		    "runner = ?2, started_ms = ?3 WHERE id = (" CLAIMABLE ") "
		    "AND status = 'queued' RETURNING " BG_COLUMNS, "isi", cap,
		    runner, sg_wall_ms());
		if (rc != SG_ST_DONE)
			break;
		sg_st_done(st, cur);
		cur = NULL;
		if ((rc = claimable(st, cap)) != SG_STORE_OK)
			break;
	}
	if (rc == SG_ST_ROW)
		rc = row(st, cur, out);
	else if (rc >= 0)
		rc = SG_STORE_NOTFOUND;
	sg_st_done(st, cur);
	/* NOTFOUND changed nothing: committed as well as rolled back. */
	if ((end = sg_st_end(st, rc == SG_STORE_NOTFOUND ? SG_STORE_OK : rc)) !=
	    SG_STORE_OK)
		rc = end;
	if (rc != SG_STORE_OK)
		sg_store_bg_clear(out);
	return rc;
}

int
sg_store_bg_get(struct sg_store *st, const char *id, const char *tenant,
    struct sg_store_bg *out)
{
	struct sg_st_cur *cur;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sg_st_run(st, &cur, "SELECT " BG_COLUMNS " FROM bg WHERE id = ?1 "
	    "AND (?2 IS NULL OR tenant = ?2)", "ss", id, tenant);
	if (rc < 0)
		return rc;
	rc = rc == SG_ST_ROW ? row(st, cur, out) : SG_STORE_NOTFOUND;
	sg_st_done(st, cur);
	return rc;
}

/* OK when a change of id's row was made, NOTFOUND when none. */
static int
changed(int rc, int changes)
{
	if (rc != SG_STORE_OK)
		return rc;
	return changes > 0 ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_bg_snapshot(struct sg_store *st, const char *id, const char *runner,
    const char *snapshot)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "UPDATE bg SET snapshot = ? WHERE "
	    "id = ? AND runner = ? AND status = 'in_progress'", "sss", snapshot,
	    id, runner);
	return changed(rc, changes);
}

static int
terminal(const char *status)
{
	return strcmp(status, "completed") == 0 ||
	    strcmp(status, "failed") == 0 ||
	    strcmp(status, "incomplete") == 0 ||
	    strcmp(status, "cancelled") == 0;
}

int
sg_store_bg_finish(struct sg_store *st, const char *id, const char *runner,
    const char *status, const char *snapshot, const char *error)
{
	int changes = 0, rc;

	if (status == NULL || !terminal(status))
		return sg_st_err(st, "background job: %s is not an end",
		    status != NULL ? status : "(null)");
	rc = sg_st_exec_args(st, &changes, "UPDATE bg SET status = ?, snapshot "
	    "= coalesce(?, snapshot), error = ?, ended_ms = ?, runner = NULL "
	    "WHERE id = ? AND runner = ? AND status = 'in_progress'", "sssiss",
	    status, snapshot, error, sg_wall_ms(), id, runner);
	return changed(rc, changes);
}

int
sg_store_bg_cancel(struct sg_store *st, const char *id, const char *tenant,
    char status[16])
{
	struct sg_st_cur *cur;
	int rc;

	status[0] = '\0';
	/* One statement: a claim takes the job before or after it, never
	 * half-way (each asks for the status it expects). */
	rc = sg_st_run(st, &cur, "UPDATE bg SET cancel = 1, status = CASE WHEN "
	    "status = 'queued' THEN 'cancelled' ELSE status END, ended_ms = "
	    "CASE WHEN status = 'queued' THEN ?1 ELSE ended_ms END WHERE id = "
	    "?2 AND (?3 IS NULL OR tenant = ?3) AND status IN ('queued', "
	    "'in_progress') RETURNING status", "iss", sg_wall_ms(), id, tenant);
	if (rc == SG_ST_DONE) {
		/* Not waiting or running: ended, or not there. */
		sg_st_done(st, cur);
		rc = sg_st_run(st, &cur, "SELECT status FROM bg WHERE id = ?1 "
		    "AND (?2 IS NULL OR tenant = ?2)", "ss", id, tenant);
	}
	if (rc < 0)
		return rc;
	if (rc == SG_ST_ROW)
		sg_copy(status, 16, sg_st_text(cur, 0));
	sg_st_done(st, cur);
	return rc == SG_ST_ROW ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_bg_cancelled(struct sg_store *st, const char *id, const char *runner,
    int *cancel)
{
	struct sg_st_cur *cur;
	int rc;

	*cancel = 0;
	rc = sg_st_run(st, &cur, "SELECT cancel FROM bg WHERE id = ? AND "
	    "runner = ? AND status = 'in_progress'", "ss", id, runner);
	if (rc < 0)
		return rc;
	if (rc == SG_ST_ROW)
		*cancel = sg_st_int(cur, 0) != 0;
	sg_st_done(st, cur);
	return rc == SG_ST_ROW ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

/* A runner's name "box:pid:start" into its parts, read from the right
 * (a box's name may hold ':'): 0, or -1 when it is not box's. */
static int
runner_of(const char *runner, const char *box, int64_t *pid, int64_t *start)
{
	const char *b, *a;
	char *end;

	if ((b = strrchr(runner, ':')) == NULL || b == runner)
		return -1;
	for (a = b - 1; a > runner && *a != ':'; a--)
		;
	if (*a != ':' || (size_t)(a - runner) != strlen(box) ||
	    strncmp(runner, box, (size_t)(a - runner)) != 0)
		return -1;
	*pid = strtoll(a + 1, &end, 10);
	if (end != b)
		return -1;
	*start = strtoll(b + 1, &end, 10);
	return *end == '\0' ? 0 : -1;
}

int
sg_store_bg_held(struct sg_store *st, const char *box,
    int (*fn)(void *, const struct sg_store_bg_hold *), void *arg)
{
	struct sg_store_bg_hold h;
	struct sg_st_cur *cur;
	char prefix[SG_STORE_BOX_MAX + 2];
	int rc;

	snprintf(prefix, sizeof(prefix), "%s:", box);
	for (rc = sg_st_run(st, &cur, "SELECT id, tenant, runner, started_ms "
	    "FROM bg WHERE status = 'in_progress' AND substr(runner, 1, "
	    "length(?1)) = ?1 ORDER BY started_ms, rowid", "s", prefix);
	    rc == SG_ST_ROW; rc = sg_st_next(st, cur)) {
		h.id = sg_st_text(cur, 0);
		h.tenant = sg_st_text(cur, 1);
		h.runner = sg_st_text(cur, 2);
		h.started_ms = sg_st_int(cur, 3);
		if (runner_of(h.runner, box, &h.pid, &h.start) == -1)
			continue;
		if (fn(arg, &h) == -1) {
			rc = SG_ST_DONE;
			break;
		}
	}
	return sg_st_finish(st, cur, rc, "background jobs held");
}

int
sg_store_bg_fail_overdue(struct sg_store *st, int64_t started_before_ms,
    const char *error, int *failed)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "UPDATE bg SET status = 'failed', "
	    "error = ?, ended_ms = ?, runner = NULL WHERE status = "
	    "'in_progress' AND started_ms < ?", "sii", error, sg_wall_ms(),
	    started_before_ms);
	if (failed != NULL)
		*failed = rc == SG_STORE_OK ? changes : 0;
	return rc;
}

int
sg_store_bg_delete(struct sg_store *st, const char *id, const char *tenant)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "DELETE FROM bg WHERE id = ?1 AND "
	    "(?2 IS NULL OR tenant = ?2)", "ss", id, tenant);
	return changed(rc, changes);
}

int
sg_store_bg_counts(struct sg_store *st, const char *tenant, int64_t *queued,
    int64_t *in_progress)
{
	struct sg_st_cur *cur;
	int rc;

	*queued = *in_progress = 0;
	for (rc = sg_st_run(st, &cur, "SELECT status, count(*) FROM bg WHERE "
	    "status IN ('queued', 'in_progress') AND (?1 IS NULL OR tenant = "
	    "?1) GROUP BY status", "s", tenant); rc == SG_ST_ROW;
	    rc = sg_st_next(st, cur))
		*(strcmp(sg_st_text(cur, 0), "queued") == 0 ? queued :
		    in_progress) = sg_st_int(cur, 1);
	return sg_st_finish(st, cur, rc, "background counts");
}

int
sg_store_bg_prune(struct sg_store *st, int64_t before_ms, int limit,
    int *removed)
{
	*removed = 0;
	return sg_st_exec_args(st, removed, "DELETE FROM bg WHERE id IN (SELECT "
	    "id FROM bg WHERE ended_ms < ? AND status NOT IN ('queued', "
	    "'in_progress') LIMIT ?)", "ii", before_ms, (int64_t)limit);
}

int
sg_store_ev_append(struct sg_store *st, const char *id, const char *tenant,
    const struct sg_store_ev *evs, size_t n, int *added)
{
	int64_t now = sg_wall_ms();
	size_t i;
	int one = 0, sum = 0, rc;

	if (added != NULL)
		*added = 0;
	/* Rows only added, each by its own key: no claim's lock needed. */
	if ((rc = sg_st_begin_batch(st)) != SG_STORE_OK)
		return rc;
	for (i = 0; i < n && rc == SG_STORE_OK; i++) {
		rc = sg_st_exec_args(st, &one, "INSERT INTO resp_events "
		    "(response_id, seq, tenant, event, created_ms) VALUES (?, ?, "
		    "?, ?, ?) ON CONFLICT (response_id, seq) DO NOTHING",
		    "sissi", id, evs[i].seq, tenant, evs[i].event, now);
		sum += one;
	}
	if ((rc = sg_st_end(st, rc)) == SG_STORE_OK && added != NULL)
		*added = sum;
	return rc;
}

int
sg_store_ev_list(struct sg_store *st, const char *id, const char *tenant,
    int64_t after, int limit, int (*fn)(void *, const struct sg_store_ev *),
    void *arg)
{
	struct sg_store_ev ev;
	struct sg_st_cur *cur;
	int rc;

	for (rc = sg_st_run(st, &cur, "SELECT seq, event FROM resp_events "
	    "WHERE response_id = ?1 AND (?2 IS NULL OR tenant = ?2) AND seq > "
	    "?3 ORDER BY seq LIMIT ?4", "ssii", id, tenant, after, limit > 0 ?
	    (int64_t)limit : INT64_MAX); rc == SG_ST_ROW;
	    rc = sg_st_next(st, cur)) {
		ev.seq = sg_st_int(cur, 0);
		ev.event = sg_st_text(cur, 1);
		if (fn(arg, &ev) == -1) {
			rc = SG_ST_DONE;
			break;
		}
	}
	return sg_st_finish(st, cur, rc, "response events");
}

int
sg_store_ev_last(struct sg_store *st, const char *id, const char *tenant,
    int64_t *seq)
{
	struct sg_st_cur *cur;
	int rc;

	*seq = -1;
	rc = sg_st_run(st, &cur, "SELECT coalesce(max(seq), -1) FROM "
	    "resp_events WHERE response_id = ?1 AND (?2 IS NULL OR tenant = "
	    "?2)", "ss", id, tenant);
	if (rc == SG_ST_ROW)
		*seq = sg_st_int(cur, 0);
	return sg_st_finish(st, cur, rc, "last response event");
}

int
sg_store_ev_delete(struct sg_store *st, const char *id, const char *tenant,
    int *removed)
{
	int n = 0, rc;

	rc = sg_st_exec_args(st, &n, "DELETE FROM resp_events WHERE "
	    "response_id = ?1 AND (?2 IS NULL OR tenant = ?2)", "ss", id,
	    tenant);
	if (removed != NULL)
		*removed = rc == SG_STORE_OK ? n : 0;
	return rc;
}

int
sg_store_ev_prune(struct sg_store *st, int64_t before_ms, int limit,
    int *removed)
{
	*removed = 0;
	return sg_st_exec_args(st, removed, "DELETE FROM resp_events WHERE "
	    "response_id IN (SELECT DISTINCT response_id FROM resp_events WHERE "
	    "created_ms < ? LIMIT ?)", "ii", before_ms, (int64_t)limit);
}
