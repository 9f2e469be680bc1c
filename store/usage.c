/*
 * The usage ledger (usage.h): rows added in batches by the reaper, read
 * back summed per time bucket (the Usage and Costs APIs) and per tenant
 * (budgets), pruned in bounded batches.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "usage.h"
#include "../lib/util.h"

/* Bytes of s[0..sz) that are not well-formed UTF-8 become '?', in place,
 * and s ends within its array: what PostgreSQL takes as text. */
static void
clean(char *s, size_t sz)
{
	size_t len, i, n;

	s[sz - 1] = '\0';
	len = strlen(s);
	for (i = 0; i < len; i += n)
		if ((n = sg_utf8_len((const unsigned char *)s + i,
		    len - i)) == 0) {
			s[i] = '?';
			n = 1;
		}
}

#define CLEAN(f)	clean((f), sizeof(f))

#define DAY_MS	86400000LL

/* A key's day, summed over the rows of one batch: the batch writes one
 * upsert a key and day, not one a row. */
struct day_sum {
	char		 tenant[65];
	int64_t		 day, cost, tokens, sandbox_ms, requests, last_ms;
};

/* Add row r (just inserted) to its key-day in sums[*n]. */
static void
sum_day(struct day_sum *sums, size_t *n, const struct sg_store_use *r)
{
	int64_t day = r->started_ms / DAY_MS * DAY_MS;
	struct day_sum *d;
	size_t i;

	for (i = 0; i < *n; i++)
		if (sums[i].day == day && strncmp(sums[i].tenant, r->tenant,
		    sizeof(sums[i].tenant) - 1) == 0)
			break;
	d = &sums[i];
	if (i == *n) {
		memset(d, 0, sizeof(*d));
		memcpy(d->tenant, r->tenant, sizeof(d->tenant) - 1);
		d->day = day;
		(*n)++;
	}
	d->cost += r->cost_input + r->cost_output + r->cost_sandbox;
	d->tokens += r->input_tokens + r->output_tokens;
	d->sandbox_ms += r->sandbox_ms;
	d->requests++;
	if (r->started_ms > d->last_ms)
		d->last_ms = r->started_ms;
}

static int
add_day(struct sg_store *st, const struct day_sum *d)
{
	return sg_st_exec_args(st, NULL, "INSERT INTO spend (tenant, day, "
	    "cost, tokens, sandbox_ms, requests, last_ms) VALUES (?1, ?2, ?3, "
	    "?4, ?5, ?6, ?7) ON CONFLICT (tenant, day) DO UPDATE SET cost = "
	    "spend.cost + ?3, tokens = spend.tokens + ?4, sandbox_ms = "
	    "spend.sandbox_ms + ?5, requests = spend.requests + ?6, last_ms = "
	    "CASE WHEN spend.last_ms > ?7 THEN spend.last_ms ELSE ?7 END",
	    "siiiiii", d->tenant, d->day, d->cost, d->tokens, d->sandbox_ms,
	    d->requests, d->last_ms);
}

/* Insert row in: *added set when it was not there. */
static int
add_row(struct sg_store *st, const struct sg_store_use *in, int *added)
{
	struct sg_store_use r = *in;
	int rc, changes = 0;

	/* The names come from clients and configs, cut to fit; the ids and
	 * the surface are sandgate's ASCII, their ends checked only. */
	r.id[sizeof(r.id) - 1] = r.tenant[sizeof(r.tenant) - 1] = '\0';
	r.key_id[sizeof(r.key_id) - 1] = '\0';
	r.surface[sizeof(r.surface) - 1] = '\0';
	CLEAN(r.key_name);
	CLEAN(r.model);
	CLEAN(r.upstream_model);
	CLEAN(r.tool);
	if (r.id[0] == '\0')
		return sg_st_err(st, "usage: a row without an id");
	rc = sg_st_exec_args(st, &changes, "INSERT INTO usage (id, tenant, "
	    "key_id, key_name, model, upstream_model, surface, tool, box, "
	    "status, aborted, started_ms, duration_ms, input_tokens, "
	    "cached_tokens, output_tokens, reasoning_tokens, model_requests, "
	    "code_runs, sandbox_ms, sessions, file_bytes, cost_input, "
	    "cost_output, cost_sandbox) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
	    "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO "
	    "NOTHING", "sssssssssiiiiiiiiiiiiiiii", r.id, r.tenant, r.key_id,
	    r.key_name, r.model, r.upstream_model, r.surface, r.tool, st->box,
	    (int64_t)r.status, (int64_t)r.aborted, r.started_ms, r.duration_ms,
	    r.input_tokens, r.cached_tokens, r.output_tokens,
	    r.reasoning_tokens, r.model_requests, r.code_runs, r.sandbox_ms,
	    r.sessions, r.file_bytes, r.cost_input, r.cost_output,
	    r.cost_sandbox);
	*added = rc == SG_STORE_OK && changes > 0;
	return rc;
}

int
sg_store_use_add(struct sg_store *st, const struct sg_store_use *rows,
    size_t n)
{
	struct day_sum *sums;
	size_t i, nsums = 0;
	int rc, added;

	if (n == 0)
		return SG_STORE_OK;
	if ((sums = calloc(n, sizeof(*sums))) == NULL)
		return sg_st_err(st, "usage: out of memory");
	if ((rc = sg_st_begin_batch(st)) == SG_STORE_OK) {
		for (i = 0; i < n && rc == SG_STORE_OK; i++) {
			rc = add_row(st, &rows[i], &added);
			/* Only a row added now counts in its key's day: one
			 * written again after a crash was skipped. */
			if (rc == SG_STORE_OK && added)
				sum_day(sums, &nsums, &rows[i]);
		}
		for (i = 0; i < nsums && rc == SG_STORE_OK; i++)
			rc = add_day(st, &sums[i]);
		rc = sg_st_end(st, rc);
	}
	free(sums);
	return rc;
}

/*
 * The sums' one statement, whatever is asked, so it is prepared once
 * and kept (a text per combination would crowd the statement caches):
 * ?1-?3 the range and bucket, ?4-?6 whether key_id, model and tool are
 * grouped by (1) or NULL (0), ?7-?8 the row filters, then each list as
 * SG_STORE_USE_LIST_MAX placeholders, the unused ones NULL (which IN
 * never matches; a NULL first one: an empty list, any). A key's name is
 * its id's (max: one row per id even if the name changed).
 */
#define SUM_KEYS	9	/* the first list's first placeholder */
#define SUM_MODELS	(SUM_KEYS + SG_STORE_USE_LIST_MAX)
#define SUM_ARGS	(SUM_MODELS - 1 + SG_STORE_USE_LIST_MAX)
_Static_assert(SUM_ARGS <= SG_ST_MAX_ARGS, "the sums' arguments fit");

/* printf's text at sql[*o], which stops growing once sql is full. */
static void __attribute__((format(printf, 4, 5)))
add(char *sql, size_t sz, size_t *o, const char *fmt, ...)
{
	va_list ap;

	if (*o >= sz)
		return;
	va_start(ap, fmt);
	*o += (size_t)vsnprintf(sql + *o, sz - *o, fmt, ap);
	va_end(ap);
}

static int
sum_sql(struct sg_store *st, char *sql, size_t sz)
{
	size_t o = 0;
	int i;

	add(sql, sz, &o, "SELECT (started_ms - ?1) / ?3, "
	    "CASE WHEN ?4 = 1 THEN key_id END, "
	    "CASE WHEN ?4 = 1 THEN max(key_name) END, "
	    "CASE WHEN ?5 = 1 THEN model END, "
	    "CASE WHEN ?6 = 1 THEN tool END, "
	    "count(*), sum(input_tokens), sum(cached_tokens), "
	    "sum(output_tokens), sum(reasoning_tokens), sum(model_requests), "
	    "sum(code_runs), sum(sandbox_ms), sum(sessions), sum(file_bytes), "
	    "sum(cost_input), sum(cost_output), sum(cost_sandbox) "
	    "FROM usage WHERE started_ms >= ?1 AND started_ms < ?2 "
	    "AND (?7 = 0 OR model_requests > 0) "
	    "AND (?8 = 0 OR sessions > 0 OR code_runs > 0) "
	    "AND (?%d IS NULL OR key_id IN (", SUM_KEYS);
	for (i = SUM_KEYS; i < SUM_MODELS + SG_STORE_USE_LIST_MAX; i++) {
		if (i == SUM_MODELS)
			add(sql, sz, &o, ")) AND (?%d IS NULL OR model IN (", i);
		add(sql, sz, &o, "%s?%d", i == SUM_KEYS || i == SUM_MODELS ?
		    "" : ", ", i);
	}
	add(sql, sz, &o, ")) GROUP BY 1, 2, 4, 5 ORDER BY 1, 2, 4, 5");
	return o < sz ? SG_STORE_OK : sg_st_err(st, "usage: sum query too long");
}

/* List l (n long) as SG_STORE_USE_LIST_MAX arguments: its n, then
 * NULLs. */
static int
bind_list(struct sg_store *st, struct sg_st_arg *args, const char **l,
    size_t n, const char *what)
{
	size_t i;

	if (n > SG_STORE_USE_LIST_MAX)
		return sg_st_err(st, "usage: at most %d %s", SG_STORE_USE_LIST_MAX,
		    what);
	for (i = 0; i < SG_STORE_USE_LIST_MAX; i++) {
		if (i < n && l[i] == NULL)
			return sg_st_err(st, "usage: a NULL in the %s", what);
		args[i].kind = 's';
		args[i].s = i < n ? l[i] : NULL;
	}
	return SG_STORE_OK;
}

static void
sum_row(struct sg_st_cur *cur, struct sg_store_use_sum *s)
{
	int64_t *counters[] = { &s->requests, &s->input_tokens,
	    &s->cached_tokens, &s->output_tokens, &s->reasoning_tokens,
	    &s->model_requests, &s->code_runs, &s->sandbox_ms, &s->sessions,
	    &s->file_bytes, &s->cost_input, &s->cost_output, &s->cost_sandbox };
	size_t i;

	s->bucket = sg_st_int(cur, 0);
	s->key_id = sg_st_text(cur, 1);
	s->key_name = sg_st_text(cur, 2);
	s->model = sg_st_text(cur, 3);
	s->tool = sg_st_text(cur, 4);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		*counters[i] = sg_st_int(cur, 5 + (int)i);
}

int
sg_store_use_sum(struct sg_store *st, const struct sg_store_use_q *q,
    int (*fn)(void *, const struct sg_store_use_sum *), void *arg)
{
	struct sg_st_arg args[SUM_ARGS];
	struct sg_store_use_sum s;
	struct sg_st_cur *cur;
	char sql[2048];
	int64_t head[] = { q->from_ms, q->to_ms, q->bucket_ms,
	    (q->by & SG_USE_BY_KEY) != 0, (q->by & SG_USE_BY_MODEL) != 0,
	    (q->by & SG_USE_BY_TOOL) != 0, q->models_only != 0,
	    q->sessions_only != 0 };
	int i, rc;

	if (q->bucket_ms < 1 || q->to_ms < q->from_ms)
		return sg_st_err(st, "usage: bucket_ms < 1 or to_ms < from_ms");
	if ((rc = sum_sql(st, sql, sizeof(sql))) != SG_STORE_OK ||
	    (rc = bind_list(st, args + SUM_KEYS - 1, q->key_ids, q->nkey_ids,
	    "key ids")) != SG_STORE_OK ||
	    (rc = bind_list(st, args + SUM_MODELS - 1, q->models, q->nmodels,
	    "models")) != SG_STORE_OK)
		return rc;
	for (i = 0; i < SUM_KEYS - 1; i++) {
		args[i].kind = 'i';
		args[i].i = head[i];
	}
	memset(&s, 0, sizeof(s));
	for (rc = sg_st_runa(st, &cur, sql, args, SUM_ARGS); rc == SG_ST_ROW;
	    rc = sg_st_next(st, cur)) {
		sum_row(cur, &s);
		if (fn(arg, &s) == -1)
			break;
	}
	return sg_st_finish(st, cur, rc, "usage sums");
}

int
sg_store_use_total(struct sg_store *st, const char *tenant, int64_t since_ms,
    struct sg_store_use_tot *t)
{
	struct sg_st_cur *cur;
	int rc;

	memset(t, 0, sizeof(*t));
	/* The day sums: a month is 31 rows, not a month of requests. */
	rc = sg_st_run(st, &cur, "SELECT coalesce(sum(cost), 0), "
	    "coalesce(sum(tokens), 0), coalesce(sum(sandbox_ms), 0), "
	    "coalesce(sum(requests), 0), coalesce(max(last_ms), 0) FROM "
	    "spend WHERE tenant = ? AND day >= ?", "si", tenant,
	    since_ms / DAY_MS * DAY_MS);
	if (rc == SG_ST_ROW) {
		t->cost = sg_st_int(cur, 0);
		t->tokens = sg_st_int(cur, 1);
		t->sandbox_ms = sg_st_int(cur, 2);
		t->requests = sg_st_int(cur, 3);
		t->last_ms = sg_st_int(cur, 4);
	}
	return sg_st_finish(st, cur, rc, "usage total");
}

/* By id, the primary key in both dialects: PostgreSQL's rowid has no
 * index, and a batch must not scan the table. */
int
sg_store_use_prune(struct sg_store *st, int64_t before_ms, int limit,
    int *removed)
{
	int rc;

	*removed = 0;
	rc = sg_st_exec_args(st, removed, "DELETE FROM usage WHERE id IN "
	    "(SELECT id FROM usage WHERE started_ms < ? LIMIT ?)", "ii",
	    before_ms, (int64_t)limit);
	/* A day's sum goes with the day's last row. */
	if (rc == SG_STORE_OK)
		rc = sg_st_exec_args(st, NULL, "DELETE FROM spend WHERE day < ?",
		    "i", before_ms / DAY_MS * DAY_MS - DAY_MS);
	return rc;
}

/* A row's columns, and whether its trace is kept (1 or 0). */
#define USE_COLUMNS "id, tenant, key_id, key_name, model, upstream_model, " \
	"surface, tool, box, status, aborted, started_ms, duration_ms, " \
	"input_tokens, cached_tokens, output_tokens, reasoning_tokens, " \
	"model_requests, code_runs, sandbox_ms, sessions, file_bytes, " \
	"cost_input, cost_output, cost_sandbox, CASE WHEN EXISTS (SELECT 1 " \
	"FROM traces WHERE traces.id = usage.id) THEN 1 ELSE 0 END"

/* Column i as text into out[sz] ("" for NULL). */
static void
copy(struct sg_st_cur *cur, int i, char *out, size_t sz)
{
	const char *v = sg_st_text(cur, i);

	snprintf(out, sz, "%s", v != NULL ? v : "");
}

#define COPY(i, f)	copy(cur, (i), (f), sizeof(f))

static void
use_row(struct sg_st_cur *cur, struct sg_store_use_row *r)
{
	struct sg_store_use *u = &r->use;
	int64_t *counters[] = { &u->started_ms, &u->duration_ms,
	    &u->input_tokens, &u->cached_tokens, &u->output_tokens,
	    &u->reasoning_tokens, &u->model_requests, &u->code_runs,
	    &u->sandbox_ms, &u->sessions, &u->file_bytes, &u->cost_input,
	    &u->cost_output, &u->cost_sandbox };
	size_t i;

	memset(r, 0, sizeof(*r));
	COPY(0, u->id);
	COPY(1, u->tenant);
	COPY(2, u->key_id);
	COPY(3, u->key_name);
	COPY(4, u->model);
	COPY(5, u->upstream_model);
	COPY(6, u->surface);
	COPY(7, u->tool);
	COPY(8, r->box);
	u->status = (int)sg_st_int(cur, 9);
	u->aborted = (int)sg_st_int(cur, 10);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		*counters[i] = sg_st_int(cur, 11 + (int)i);
	r->has_trace = sg_st_int(cur, 25) != 0;
}

int
sg_store_use_get(struct sg_store *st, const char *id,
    struct sg_store_use_row *out)
{
	struct sg_st_cur *cur;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sg_st_run(st, &cur, "SELECT " USE_COLUMNS " FROM usage WHERE id = "
	    "?", "s", id);
	if (rc == SG_ST_ROW)
		use_row(cur, out);
	sg_st_done(st, cur);
	return rc == SG_ST_ROW ? SG_STORE_OK : rc == SG_ST_DONE ?
	    SG_STORE_NOTFOUND : rc;
}

/*
 * A list's filters, ?1-?5: key_id, model, status (0 any, -1 not 2xx),
 * from_ms, to_ms (0: open); as the traces' (traces.c). The page's start,
 * after, must pass them too.
 */
#define USE_FILTERS "(?1 IS NULL OR key_id = ?1) AND (?2 IS NULL OR " \
	"model = ?2) AND (?3 = 0 OR status = ?3 OR (?3 = -1 AND (status < " \
	"200 OR status >= 300))) AND (?4 = 0 OR started_ms >= ?4) AND (?5 = " \
	"0 OR started_ms < ?5)"

/* A page's statement, after (?6, its started_ms ?7) going by cmp, in
 * order dir, ?8 rows. */
#define USE_PAGE(cmp, dir) "SELECT " USE_COLUMNS " FROM usage WHERE " \
	USE_FILTERS " AND (?6 IS NULL OR (started_ms, id) " cmp " (?7, ?6)) " \
	"ORDER BY started_ms " dir ", id " dir " LIMIT ?8"

int
sg_store_use_list(struct sg_store *st, const struct sg_store_use_lq *q,
    int (*fn)(void *, const struct sg_store_use_row *), void *arg,
    int *more)
{
	struct sg_store_use_row r;
	struct sg_st_cur *cur;
	int64_t after_ms = 0;
	int n = 0, rc;

	*more = 0;
	if (q->limit < 1)
		return sg_st_err(st, "usage list: limit < 1");
	if (q->after != NULL) {
		rc = sg_st_run(st, &cur, "SELECT started_ms FROM usage WHERE "
		    USE_FILTERS " AND id = ?6", "ssiiis", q->key_id, q->model,
		    (int64_t)q->status, q->from_ms, q->to_ms, q->after);
		if (rc == SG_ST_ROW)
			after_ms = sg_st_int(cur, 0);
		sg_st_done(st, cur);
		if (rc != SG_ST_ROW)
			return rc == SG_ST_DONE ? SG_STORE_NOTFOUND : rc;
	}
	/* One more than asked: whether there are more. */
	for (rc = sg_st_run(st, &cur, q->asc ? USE_PAGE(">", "ASC") :
	    USE_PAGE("<", "DESC"), "ssiiisii", q->key_id, q->model,
	    (int64_t)q->status, q->from_ms, q->to_ms, q->after, after_ms,
	    (int64_t)q->limit + 1); rc == SG_ST_ROW; rc = sg_st_next(st, cur)) {
		if (n++ == q->limit) {
			*more = 1;
			break;
		}
		use_row(cur, &r);
		if (fn(arg, &r) == -1)
			break;
	}
	return sg_st_finish(st, cur, rc, "list usage");
}
