/*
 * The statement and row interface every query of the store goes through,
 * over its two backends (sqlite.c, pg.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../lib/util.h"

const char *
sg_store_errmsg(const struct sg_store *st)
{
	return st->err;
}

int
sg_st_exec(struct sg_store *st, const char *sql)
{
	return st->kind == SG_ST_PG ? sg_pg_exec(st, sql) : sg_sq_exec(st, sql);
}

int
sg_st_runa(struct sg_store *st, struct sg_st_cur **cur, const char *sql,
    const struct sg_st_arg *args, int n)
{
	struct sg_st_cur *c;
	int rc;

	*cur = NULL;
	if (n > SG_ST_MAX_ARGS)
		return sg_st_err(st, "too many arguments");
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return sg_st_err(st, "out of memory");
	st->changes = 0;
	rc = st->kind == SG_ST_PG ? sg_pg_run(st, c, sql, args, n) :
	    sg_sq_run(st, c, sql, args, n);
	if (rc < 0) {
		free(c);
		return rc;
	}
	*cur = c;
	return rc;
}

static int
run(struct sg_store *st, struct sg_st_cur **cur, const char *sql,
    const char *fmt, va_list ap)
{
	struct sg_st_arg args[SG_ST_MAX_ARGS];
	int i;

	*cur = NULL;
	for (i = 0; fmt[i] != '\0'; i++) {
		if (i == SG_ST_MAX_ARGS)
			return sg_st_err(st, "too many arguments");
		args[i].kind = fmt[i];
		if (fmt[i] == 'i')
			args[i].i = va_arg(ap, int64_t);
		else
			args[i].s = va_arg(ap, const char *);
	}
	return sg_st_runa(st, cur, sql, args, i);
}

int
sg_st_run(struct sg_store *st, struct sg_st_cur **cur, const char *sql,
    const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = run(st, cur, sql, fmt, ap);
	va_end(ap);
	return rc;
}

int
sg_st_exec_args(struct sg_store *st, int *changes, const char *sql,
    const char *fmt, ...)
{
	struct sg_st_cur *cur;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = run(st, &cur, sql, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return rc;
	sg_st_done(st, cur);
	if (changes != NULL)
		*changes = st->changes;
	return SG_STORE_OK;
}

int
sg_st_next(struct sg_store *st, struct sg_st_cur *c)
{
	if (c->res == NULL)
		return sg_sq_next(st, c);
	return ++c->row < c->nrows ? SG_ST_ROW : SG_ST_DONE;
}

void
sg_st_done(struct sg_store *st, struct sg_st_cur *c)
{
	if (c == NULL)
		return;
	if (c->res != NULL)
		sg_pg_done(c);
	else
		sg_sq_done(st, c);
	free(c);
}

int
sg_st_finish(struct sg_store *st, struct sg_st_cur *c, int rc,
    const char *what)
{
	char why[sizeof(st->err)];

	/* A step that failed mid-loop still holds its cursor. */
	sg_st_done(st, c);
	if (rc >= 0)
		return SG_STORE_OK;
	/* The failure's own message is in st->err: name the query too. */
	sg_copy(why, sizeof(why), st->err);
	sg_st_err(st, "%s: %.200s", what, why);
	return rc;
}

int
sg_st_begin(struct sg_store *st)
{
	int rc;

	if (st->kind == SG_ST_SQLITE)
		return sg_st_exec(st, "BEGIN IMMEDIATE");
	/* One lock for every gateway's transactions: they are few and
	 * short (claims, evictions, a response and its items), and taking
	 * one lock keeps SQLite's semantics, so no claim needs its own
	 * row locks to stay correct. */
	rc = sg_st_exec(st, "BEGIN; SELECT pg_advisory_xact_lock(5347)");
	if (rc == SG_STORE_OK)
		sg_pg_in_tx(st, 1);
	else
		sg_st_exec(st, "ROLLBACK");
	return rc;
}

int
sg_st_begin_batch(struct sg_store *st)
{
	int rc;

	if (st->kind == SG_ST_SQLITE)
		return sg_st_begin(st);
	if ((rc = sg_st_exec(st, "BEGIN")) == SG_STORE_OK)
		sg_pg_in_tx(st, 1);
	return rc;
}

int
sg_st_end(struct sg_store *st, int rc)
{
	int ended = SG_STORE_ERROR;

	if (rc == SG_STORE_OK)
		ended = sg_st_exec(st, "COMMIT");
	if (ended != SG_STORE_OK) {
		/* Keep the first failure's message. */
		char why[sizeof(st->err)];

		sg_copy(why, sizeof(why), st->err);
		sg_st_exec(st, "ROLLBACK");
		sg_copy(st->err, sizeof(st->err), why);
	}
	if (st->kind == SG_ST_PG)
		sg_pg_in_tx(st, 0);
	return rc != SG_STORE_OK ? rc : ended;
}

const char *
sg_st_text(struct sg_st_cur *c, int i)
{
	return c->res != NULL ? sg_pg_text(c, i) : sg_sq_text(c, i);
}

int64_t
sg_st_int(struct sg_st_cur *c, int i)
{
	return c->res != NULL ? sg_pg_int(c, i) : sg_sq_int(c, i);
}

void
sg_st_batch_add(struct sg_store *st, struct sg_st_batch *b, const char *sql,
    const char *fmt, ...)
{
	struct sg_st_batch_stmt *s;
	size_t need = 0, off = 0;
	va_list ap;
	int i;

	if (b->n == SG_ST_BATCH_MAX || strlen(fmt) > sizeof(s->args) /
	    sizeof(s->args[0])) {
		b->failed = sg_st_err(st, "batch: too many statements");
		return;
	}
	s = &b->s[b->n];
	memset(s, 0, sizeof(*s));
	s->sql = sql;
	/* Copied, so a caller may add what it frees before the run. */
	va_start(ap, fmt);
	for (i = 0; fmt[i] != '\0'; i++) {
		const char *v;

		if (fmt[i] == 'i') {
			(void)va_arg(ap, int64_t);
			continue;
		}
		if ((v = va_arg(ap, const char *)) != NULL)
			need += strlen(v) + 1;
	}
	va_end(ap);
	if (need > 0 && (s->strs = malloc(need)) == NULL) {
		b->failed = sg_st_err(st, "out of memory");
		return;
	}
	va_start(ap, fmt);
	for (i = 0; fmt[i] != '\0'; i++) {
		const char *v;

		s->args[i].kind = fmt[i];
		if (fmt[i] == 'i') {
			s->args[i].i = va_arg(ap, int64_t);
			continue;
		}
		if ((v = va_arg(ap, const char *)) == NULL)
			continue;
		s->args[i].s = s->strs + off;
		memcpy(s->strs + off, v, strlen(v) + 1);
		off += strlen(v) + 1;
	}
	va_end(ap);
	s->n = i;
	b->n++;
}

static int
batch_pg(struct sg_store *st, struct sg_st_batch *b, int lock)
{
	char *text = NULL;
	size_t len = 0;
	int i, rc = SG_STORE_OK;

	/* A lock taken in an implicit transaction holds to its end. */
	if (lock)
		rc = sg_pg_inline(st, &text, &len,
		    "SELECT pg_advisory_xact_lock(5347)", NULL, 0);
	for (i = 0; i < b->n && rc == SG_STORE_OK; i++)
		rc = sg_pg_inline(st, &text, &len, b->s[i].sql, b->s[i].args,
		    b->s[i].n);
	if (rc == SG_STORE_OK && text != NULL)
		rc = sg_pg_exec(st, text);
	free(text);
	return rc;
}

static void
batch_free(struct sg_st_batch *b)
{
	int i;

	for (i = 0; i < b->n; i++)
		free(b->s[i].strs);
	b->n = 0;
	b->failed = SG_STORE_OK;
}

int
sg_st_batch_later(struct sg_store *st, struct sg_st_batch *b)
{
	char *text = NULL;
	size_t len = 0;
	int i, rc = b->failed;

	if (st->kind != SG_ST_PG || rc != SG_STORE_OK || b->n == 0)
		return sg_st_batch_run(st, b, 0);
	for (i = 0; i < b->n && rc == SG_STORE_OK; i++)
		rc = sg_pg_inline(st, &text, &len, b->s[i].sql, b->s[i].args,
		    b->s[i].n);
	if (rc == SG_STORE_OK)
		rc = sg_pg_defer(st, text, len);
	free(text);
	batch_free(b);
	return rc;
}

int
sg_store_flush(struct sg_store *st)
{
	return st->kind == SG_ST_PG ? sg_pg_flush(st) : SG_STORE_OK;
}

int
sg_store_checkpoint(struct sg_store *st)
{
	return st->kind == SG_ST_SQLITE ? sg_sq_checkpoint(st) : SG_STORE_OK;
}

/* The key sg_st_touch_* keep: "" when it does not fit (never kept). */
static void
touch_key(const char *tenant, const char *session_id, char *key, size_t sz)
{
	if (sg_join(key, sz, tenant, "\n", session_id, NULL) >= sz)
		key[0] = '\0';
}

int
sg_st_touch_done(struct sg_store *st, const char *tenant,
    const char *session_id, int64_t now)
{
	char key[sizeof(st->touched)];

	touch_key(tenant, session_id, key, sizeof(key));
	return st->touched_at == now && key[0] != '\0' &&
	    strcmp(key, st->touched) == 0;
}

void
sg_st_touch_mark(struct sg_store *st, const char *tenant,
    const char *session_id, int64_t now)
{
	touch_key(tenant, session_id, st->touched, sizeof(st->touched));
	st->touched_at = now;
}

/* b's statements in order, on SQLite, until one fails. */
static int
batch_sq(struct sg_store *st, struct sg_st_batch *b)
{
	struct sg_st_cur *cur;
	int i, rc = SG_STORE_OK;

	for (i = 0; i < b->n && rc == SG_STORE_OK; i++) {
		rc = sg_st_runa(st, &cur, b->s[i].sql, b->s[i].args, b->s[i].n);
		sg_st_done(st, cur);
		rc = rc < 0 ? rc : SG_STORE_OK;
	}
	return rc;
}

int
sg_st_batch_run(struct sg_store *st, struct sg_st_batch *b, int lock)
{
	int rc = b->failed;

	if (rc == SG_STORE_OK && b->n > 0) {
		if (st->kind == SG_ST_PG)
			rc = batch_pg(st, b, lock);
		/* One statement is a transaction of its own on SQLite (a
		 * write takes the write lock as it starts, as BEGIN
		 * IMMEDIATE does): no BEGIN and COMMIT to run around it. */
		else if (b->n == 1)
			rc = batch_sq(st, b);
		else if ((rc = sg_st_begin(st)) == SG_STORE_OK)
			rc = sg_st_end(st, batch_sq(st, b));
	}
	batch_free(b);
	return rc;
}
