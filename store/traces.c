/*
 * Request traces (usage.h): each request's loop rounds as JSON text, and
 * its images in a column of their own the lists never read, written once
 * at its end, listed newest first, pruned by age (the images with them).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "usage.h"
#include "../lib/util.h"

/* s as text PostgreSQL takes: s itself when it is well-formed UTF-8,
 * else a new copy in *fixed with each bad byte U+FFFD (NULL: s is NULL,
 * or out of memory). */
static const char *
text(const char *s, char **fixed)
{
	size_t len, fixed_len;

	*fixed = NULL;
	if (s == NULL)
		return NULL;
	len = strlen(s);
	if (sg_utf8_prefix(s, len) < len)
		return *fixed = sg_utf8_fix(s, len, &fixed_len);
	return s;
}

int
sg_store_trace_add(struct sg_store *st, const struct sg_store_trace *t)
{
	const char *in[] = { t->id, t->tenant, t->key_id, t->model,
	    t->rounds, t->images }, *s[6];
	char *fixed[6];
	int i, rc = SG_STORE_OK;

	if (t->id == NULL || t->id[0] == '\0')
		return sg_st_err(st, "trace: no id");
	for (i = 0; i < 6; i++)
		if ((s[i] = text(in[i], &fixed[i])) == NULL && in[i] != NULL)
			rc = sg_st_err(st, "trace: out of memory");
	/* Written again (a retried batch): the first stays. */
	if (rc == SG_STORE_OK)
		rc = sg_st_exec_args(st, NULL, "INSERT INTO traces (id, tenant, "
		    "key_id, model, status, started_ms, duration_ms, box, "
		    "rounds, images) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON "
		    "CONFLICT (id) DO NOTHING", "ssssiiisss", s[0], s[1], s[2],
		    s[3], (int64_t)t->status, t->started_ms, t->duration_ms,
		    st->box, s[4], s[5]);
	for (i = 0; i < 6; i++)
		free(fixed[i]);
	return rc;
}

/* New copy of column i, or NULL when it is NULL; *oom set when a copy
 * failed. */
static char *
column(struct sg_st_cur *cur, int i, int *oom)
{
	const char *v = sg_st_text(cur, i);
	char *c;

	if (v == NULL)
		return NULL;
	if ((c = strdup(v)) == NULL)
		*oom = 1;
	return c;
}

/* A trace's columns, rounds and images aside (a list does not read
 * them). */
#define TRACE_COLUMNS "id, tenant, key_id, model, box, status, started_ms, " \
	"duration_ms"

/* A row of TRACE_COLUMNS, then rounds and images as the ninth and
 * tenth columns when asked. */
static int
row(struct sg_store *st, struct sg_st_cur *cur, int rounds,
    struct sg_store_trace_row *r)
{
	int oom = 0;

	memset(r, 0, sizeof(*r));
	r->id = column(cur, 0, &oom);
	r->tenant = column(cur, 1, &oom);
	r->key_id = column(cur, 2, &oom);
	r->model = column(cur, 3, &oom);
	r->box = column(cur, 4, &oom);
	r->status = (int)sg_st_int(cur, 5);
	r->started_ms = sg_st_int(cur, 6);
	r->duration_ms = sg_st_int(cur, 7);
	if (rounds) {
		r->rounds = column(cur, 8, &oom);
		r->images = column(cur, 9, &oom);
	}
	if (oom) {
		sg_store_trace_clear(r);
		return sg_st_err(st, "trace: out of memory");
	}
	return SG_STORE_OK;
}

void
sg_store_trace_clear(struct sg_store_trace_row *r)
{
	free(r->id);
	free(r->tenant);
	free(r->key_id);
	free(r->model);
	free(r->rounds);
	free(r->images);
	free(r->box);
	memset(r, 0, sizeof(*r));
}

int
sg_store_trace_get(struct sg_store *st, const char *id,
    struct sg_store_trace_row *out)
{
	struct sg_st_cur *cur;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sg_st_run(st, &cur, "SELECT " TRACE_COLUMNS ", rounds, images FROM "
	    "traces WHERE id = ?", "s", id);
	if (rc == SG_ST_ROW)
		rc = row(st, cur, 1, out);
	else if (rc == SG_ST_DONE)
		rc = SG_STORE_NOTFOUND;
	sg_st_done(st, cur);
	return rc;
}

/*
 * A list's filters, ?1-?5: key_id, model, status (0 any, -1 not 2xx),
 * from_ms, to_ms (0: open). The page's start, after, must pass them too.
 */
#define TRACE_FILTERS "(?1 IS NULL OR key_id = ?1) AND (?2 IS NULL OR " \
	"model = ?2) AND (?3 = 0 OR status = ?3 OR (?3 = -1 AND (status < " \
	"200 OR status >= 300))) AND (?4 = 0 OR started_ms >= ?4) AND (?5 = " \
	"0 OR started_ms < ?5)"

/* Where the page after trace q->after starts: its started_ms, or
 * NOTFOUND when it is not one of the listed. */
static int
page_start(struct sg_store *st, const struct sg_store_trace_q *q,
    int64_t *started_ms)
{
	struct sg_st_cur *cur;
	int rc;

	rc = sg_st_run(st, &cur, "SELECT started_ms FROM traces WHERE "
	    TRACE_FILTERS " AND id = ?6", "ssiiis", q->key_id, q->model,
	    (int64_t)q->status, q->from_ms, q->to_ms, q->after);
	if (rc == SG_ST_ROW)
		*started_ms = sg_st_int(cur, 0);
	sg_st_done(st, cur);
	return rc == SG_ST_ROW ? SG_STORE_OK : rc == SG_ST_DONE ?
	    SG_STORE_NOTFOUND : rc;
}

int
sg_store_trace_list(struct sg_store *st, const struct sg_store_trace_q *q,
    int (*fn)(void *, const struct sg_store_trace_row *), void *arg,
    int *more)
{
	struct sg_store_trace_row r;
	struct sg_st_cur *cur;
	int64_t after_ms = 0;
	int n = 0, stop, rc;

	*more = 0;
	if (q->limit < 1)
		return sg_st_err(st, "traces: limit < 1");
	if (q->after != NULL && (rc = page_start(st, q, &after_ms)) !=
	    SG_STORE_OK)
		return rc;
	/* One more than asked: whether there are more. */
	for (rc = sg_st_run(st, &cur, "SELECT " TRACE_COLUMNS " FROM traces "
	    "WHERE " TRACE_FILTERS " AND (?6 IS NULL OR (started_ms, id) < (?7, "
	    "?6)) ORDER BY started_ms DESC, id DESC LIMIT ?8", "ssiiisii",
	    q->key_id, q->model, (int64_t)q->status, q->from_ms, q->to_ms,
	    q->after, after_ms, (int64_t)q->limit + 1); rc == SG_ST_ROW;
	    rc = sg_st_next(st, cur)) {
		if (n++ == q->limit) {
			*more = 1;
			break;
		}
		if ((rc = row(st, cur, 0, &r)) != SG_STORE_OK)
			break;
		stop = fn(arg, &r) == -1;
		sg_store_trace_clear(&r);
		if (stop)
			break;
	}
	return sg_st_finish(st, cur, rc, "list traces");
}

int
sg_store_trace_prune(struct sg_store *st, int64_t before_ms, int limit,
    int *removed)
{
	*removed = 0;
	return sg_st_exec_args(st, removed, "DELETE FROM traces WHERE id IN "
	    "(SELECT id FROM traces WHERE started_ms < ? LIMIT ?)", "ii",
	    before_ms, (int64_t)limit);
}
