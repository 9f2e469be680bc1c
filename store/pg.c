/*
 * The PostgreSQL backend (libpq): one connection per process, opened
 * after the fork and never carried across one. Statements are prepared
 * once per connection. A server that goes away is reconnected with a
 * backoff: meanwhile every call fails at once as "down" (the gateway
 * answers 503), and a statement that found the connection lost outside a
 * transaction is run again once on a new one.
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "../lib/log.h"
#include "../lib/util.h"

#define CONNECT_TIMEOUT	"5"		/* s, unless the URL says */
#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	5000
#define INT8OID		20
#define TEXTOID		25

/* Limits of every session: a statement or a lock wait that long is a
 * fault, and a transaction left open must not hold the claims' lock. */
static const char session_setup[] =
	"SET statement_timeout = '10s';"
	"SET lock_timeout = '10s';"
	"SET idle_in_transaction_session_timeout = '60s';"
	"SET client_min_messages = warning";

struct sg_pg_prep {
	char		*sql;
	uint64_t	 hash;
};

struct sg_pg {
	PGconn			*conn;
	char			*url;
	int			 in_tx;
	int			 backoff_ms;
	int64_t			 retry_at;	/* ms: no reconnect before */
	struct sg_pg_prep	 prep[SG_ST_CACHE];
	int			 nprep;
	char			*later;		/* deferred writes' text */
	size_t			 nlater;
};

static void
forget_later(struct sg_pg *pg)
{
	free(pg->later);
	pg->later = NULL;
	pg->nlater = 0;
}

/* Notices (an index that exists, say) are not the operator's business. */
static void
quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static void
forget_prepared(struct sg_pg *pg)
{
	int i;

	for (i = 0; i < pg->nprep; i++)
		free(pg->prep[i].sql);
	pg->nprep = 0;
}

/*
 * The server does not answer: the client sees a message with no host,
 * socket or user in it; the log gets libpq's own.
 */
static int
down(struct sg_store *st, const char *detail)
{
	char line[512];
	size_t n;

	sg_copy(line, sizeof(line), detail);
	n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' '))
		line[--n] = '\0';
	for (n = 0; line[n] != '\0'; n++)
		if (line[n] == '\n')
			line[n] = ' ';
	sg_log("sandgate: store: PostgreSQL: %s", line);
	st->down = 1;
	return sg_st_err(st, "the PostgreSQL store does not answer");
}

static int
connect_now(struct sg_store *st)
{
	static const char *const keys[] = { "connect_timeout",
	    "application_name", "dbname", NULL };
	struct sg_pg *pg = st->pg;
	const char *vals[] = { CONNECT_TIMEOUT, "sandgate", pg->url, NULL };
	PGresult *res;

	if (pg->conn != NULL)
		PQfinish(pg->conn);
	forget_prepared(pg);
	pg->conn = PQconnectdbParams(keys, vals, 1);
	if (pg->conn == NULL)
		return down(st, "out of memory");
	if (PQstatus(pg->conn) != CONNECTION_OK)
		return down(st, PQerrorMessage(pg->conn));
	PQsetNoticeProcessor(pg->conn, quiet, NULL);
	res = PQexec(pg->conn, session_setup);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		PQclear(res);
		return down(st, PQerrorMessage(pg->conn));
	}
	PQclear(res);
	pg->backoff_ms = 0;
	st->down = 0;
	return SG_STORE_OK;
}

/* Forget a lost connection: the next use makes a new one at once. */
static void
drop(struct sg_pg *pg)
{
	PQfinish(pg->conn);
	pg->conn = NULL;
	pg->retry_at = 0;
}

/* A connection to use: the one we have, or a new one when the backoff
 * allows. Never inside a transaction: its work went with the old one. */
static int
ensure(struct sg_store *st)
{
	struct sg_pg *pg = st->pg;
	int64_t now = sg_now_ms();

	if (pg->conn != NULL && PQstatus(pg->conn) == CONNECTION_OK)
		return SG_STORE_OK;
	if (pg->in_tx) {
		st->down = 1;
		return sg_st_err(st, "the PostgreSQL store does not answer "
		    "(connection lost in a transaction)");
	}
	if (now < pg->retry_at) {
		st->down = 1;
		return sg_st_err(st, "the PostgreSQL store does not answer");
	}
	if (connect_now(st) == SG_STORE_OK)
		return SG_STORE_OK;
	pg->backoff_ms = pg->backoff_ms == 0 ? BACKOFF_MIN_MS :
	    pg->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
	    pg->backoff_ms * 2;
	pg->retry_at = sg_now_ms() + pg->backoff_ms;
	return SG_STORE_ERROR;
}

int
sg_pg_open(struct sg_store *st, const char *url, char *err, size_t errsz)
{
	if ((st->pg = calloc(1, sizeof(*st->pg))) == NULL ||
	    (st->pg->url = strdup(url)) == NULL) {
		snprintf(err, errsz, "out of memory");
		return SG_STORE_ERROR;
	}
	/* A server that is down now is a store that is down: the caller
	 * learns it from its first query, and it is retried from there. */
	(void)ensure(st);
	return SG_STORE_OK;
}

void
sg_pg_close(struct sg_store *st)
{
	if (st->pg == NULL)
		return;
	if (st->pg->later != NULL && st->pg->conn != NULL)
		(void)sg_pg_flush(st);
	forget_later(st->pg);
	if (st->pg->conn != NULL)
		PQfinish(st->pg->conn);
	forget_prepared(st->pg);
	free(st->pg->url);
	free(st->pg);
	st->pg = NULL;
}

void
sg_pg_in_tx(struct sg_store *st, int in)
{
	st->pg->in_tx = in;
}

/* Whether res failed because the connection did (not the statement). */
static int
lost(struct sg_store *st, PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	if (PQstatus(st->pg->conn) != CONNECTION_OK)
		return 1;
	/* 08: connection exception; 57P0x: the server shuts down. */
	return state != NULL && (strncmp(state, "08", 2) == 0 ||
	    strncmp(state, "57P", 3) == 0);
}

/* res's failure as an SG_STORE_* code (res is cleared). */
static int
failed(struct sg_store *st, PGresult *res, const char *what)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	int rc;

	if (lost(st, res)) {
		rc = down(st, res != NULL ? PQresultErrorMessage(res) :
		    PQerrorMessage(st->pg->conn));
		PQclear(res);
		return rc;
	}
	rc = state != NULL && strncmp(state, "23", 2) == 0 ? SG_STORE_EXISTS :
	    SG_STORE_ERROR;
	sg_st_err(st, "%s: %s", what, msg != NULL ? msg :
	    PQerrorMessage(st->pg->conn));
	PQclear(res);
	return rc;
}

/*
 * What a statement's result res means on its try: 1 done; 0 run it again
 * (the connection was lost before it could run, a restarted server
 * closing idle ones: once, on a new connection, outside a transaction);
 * else an SG_STORE_* error (res cleared).
 */
static int
outcome(struct sg_store *st, PGresult *res, int try, const char *what)
{
	int status = PQresultStatus(res);

	if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK)
		return 1;
	if (try == 0 && !st->pg->in_tx && lost(st, res)) {
		PQclear(res);
		drop(st->pg);
		return 0;
	}
	return failed(st, res, what);
}

/* sql as a simple query (several statements: one implicit transaction):
 * SG_STORE_OK, its last result in *keep when not NULL; or an error. */
static int
simple(struct sg_store *st, const char *sql, PGresult **keep)
{
	PGresult *res = NULL;
	int try, rc = 0;

	for (try = 0; try < 2 && rc == 0; try++) {
		if (ensure(st) != SG_STORE_OK)
			return SG_STORE_ERROR;
		res = PQexec(st->pg->conn, sql);
		st->trips++;
		if ((rc = outcome(st, res, try, "exec")) < 0)
			return rc;
	}
	if (rc == 0)
		return sg_st_err(st, "exec: the connection was lost twice");
	/* COMMIT of a transaction a statement broke rolls it back. */
	if (strcmp(sql, "COMMIT") == 0 && strcmp(PQcmdStatus(res),
	    "ROLLBACK") == 0) {
		PQclear(res);
		return sg_st_err(st, "commit: the transaction was rolled back");
	}
	if (keep != NULL)
		*keep = res;
	else
		PQclear(res);
	return SG_STORE_OK;
}

int
sg_pg_flush(struct sg_store *st)
{
	char why[sizeof(st->err)];
	int rc;

	if (st->pg == NULL || st->pg->later == NULL)
		return SG_STORE_OK;
	/* Kept while the server does not answer: sent once it does. */
	if ((rc = simple(st, st->pg->later, NULL)) == SG_STORE_OK ||
	    !st->down) {
		if (rc != SG_STORE_OK) {
			sg_copy(why, sizeof(why), st->err);
			sg_log("sandgate: store: deferred writes failed: %s",
			    why);
		}
		forget_later(st->pg);
	}
	return rc;
}

int
sg_pg_defer(struct sg_store *st, const char *text, size_t len)
{
	struct sg_pg *pg = st->pg;
	char *p;

	if ((p = realloc(pg->later, pg->nlater + len + 1)) == NULL)
		return sg_st_err(st, "out of memory");
	memcpy(p + pg->nlater, text, len + 1);
	pg->later = p;
	pg->nlater += len;
	return SG_STORE_OK;
}

/*
 * sql after the deferred writes, in one simple query (one round trip, one
 * implicit transaction): SG_STORE_OK with the last result in *keep (when
 * not NULL), or an error, or 1 when the caller is to run sql alone (a
 * statement failed: the deferred writes were run alone, then, and sql
 * is tried on its own).
 */
static int
with_later(struct sg_store *st, const char *sql, size_t len, PGresult **keep)
{
	struct sg_pg *pg = st->pg;
	char *text;
	int rc;

	if ((text = malloc(pg->nlater + len + 1)) == NULL)
		return sg_st_err(st, "out of memory");
	memcpy(text, pg->later, pg->nlater);
	memcpy(text + pg->nlater, sql, len + 1);
	rc = simple(st, text, keep);
	free(text);
	if (rc == SG_STORE_OK) {
		forget_later(pg);
		return SG_STORE_OK;
	}
	if (st->down)
		return rc;
	sg_pg_flush(st);
	return 1;
}

int
sg_pg_exec(struct sg_store *st, const char *sql)
{
	struct sg_pg *pg = st->pg;
	int rc;

	if (pg->later == NULL)
		return simple(st, sql, NULL);
	/* Never into a transaction that may roll back: before it. */
	if (pg->in_tx || strncmp(sql, "BEGIN", 5) == 0 ||
	    strcmp(sql, "COMMIT") == 0 || strcmp(sql, "ROLLBACK") == 0) {
		if (!pg->in_tx && sg_pg_flush(st) != SG_STORE_OK && st->down)
			return SG_STORE_ERROR;
		return simple(st, sql, NULL);
	}
	if ((rc = with_later(st, sql, strlen(sql), NULL)) != 1)
		return rc;
	return simple(st, sql, NULL);
}

/* The number of the placeholder at **p ('?'), *p left on its last
 * character: "?N" is N, a bare "?" one more than *max (SQLite's rule). */
static int
placeholder(const char **p, int *max)
{
	int n;

	if ((*p)[1] >= '0' && (*p)[1] <= '9') {
		n = (int)strtol(*p + 1, (char **)p, 10);
		(*p)--;
	} else
		n = *max + 1;
	if (n > *max)
		*max = n;
	return n;
}

/*
 * SQLite's placeholders as PostgreSQL's: "?N" is "$N", and a bare "?" is
 * one more than the largest number so far (SQLite's rule). Quoted text is
 * copied as it is. New string, or NULL.
 */
static char *
dollars(const char *sql)
{
	size_t len = strlen(sql), o = 0;
	int q = 0, max = 0, n;
	const char *p;
	char *out;

	if ((out = malloc(len * 4 + 1)) == NULL)
		return NULL;
	for (p = sql; *p != '\0'; p++) {
		if (*p == '\'')
			q = !q;
		if (q || *p != '?') {
			out[o++] = *p;
			continue;
		}
		n = placeholder(&p, &max);
		o += (size_t)sprintf(out + o, "$%d", n);
	}
	out[o] = '\0';
	return out;
}

int
sg_pg_inline(struct sg_store *st, char **buf, size_t *len, const char *sql,
    const struct sg_st_arg *args, int n)
{
	size_t cap = *len + strlen(sql) + 2, o = *len;
	const char *p, *v;
	char *out, *lit, num[24];
	int q = 0, k, next = 0;

	if (ensure(st) != SG_STORE_OK)
		return SG_STORE_ERROR;
	for (k = 0; k < n; k++)
		cap += args[k].kind == 'i' ? sizeof(num) : args[k].s == NULL ?
		    4 : strlen(args[k].s) * 2 + 8;
	if ((out = realloc(*buf, cap)) == NULL)
		return sg_st_err(st, "out of memory");
	*buf = out;
	/* As dollars(): "?N" is argument N, a bare "?" the next one. */
	for (p = sql; *p != '\0'; p++) {
		if (*p == '\'')
			q = !q;
		if (q || *p != '?') {
			out[o++] = *p;
			continue;
		}
		k = placeholder(&p, &next);
		if (k < 1 || k > n)
			return sg_st_err(st, "batch: no argument %d", k);
		v = args[k - 1].s;
		if (args[k - 1].kind == 'i') {
			snprintf(num, sizeof(num), "%lld",
			    (long long)args[k - 1].i);
			v = num;
		} else if (v == NULL)
			v = "NULL";
		else if ((lit = PQescapeLiteral(st->pg->conn, v,
		    strlen(v))) == NULL)
			return sg_st_err(st, "batch: %s",
			    PQerrorMessage(st->pg->conn));
		else {
			/* At most twice the text and its quotes, as counted. */
			memcpy(out + o, lit, strlen(lit));
			o += strlen(lit);
			PQfreemem(lit);
			continue;
		}
		memcpy(out + o, v, strlen(v));
		o += strlen(v);
	}
	out[o++] = ';';
	out[o] = '\0';
	*len = o;
	return SG_STORE_OK;
}

/* The prepared statement of sql on this connection ("" when it cannot be
 * kept: run it unnamed), preparing it when new. */
static int
prepared(struct sg_store *st, const char *sql, const struct sg_st_arg *args,
    int n, char name[16])
{
	struct sg_pg *pg = st->pg;
	Oid types[SG_ST_MAX_ARGS];
	uint64_t h = sg_fnv1a(sql);
	PGresult *res;
	char *text;
	int i;

	for (i = 0; i < pg->nprep; i++)
		if (pg->prep[i].hash == h && strcmp(pg->prep[i].sql, sql) == 0) {
			snprintf(name, 16, "sg%d", i);
			return SG_STORE_OK;
		}
	for (i = 0; i < n; i++)
		types[i] = args[i].kind == 's' ? TEXTOID : INT8OID;
	if ((text = dollars(sql)) == NULL)
		return sg_st_err(st, "out of memory");
	if (pg->nprep < SG_ST_CACHE && (pg->prep[pg->nprep].sql =
	    strdup(sql)) != NULL)
		snprintf(name, 16, "sg%d", pg->nprep);
	else
		name[0] = '\0';
	res = PQprepare(pg->conn, name, text, n, types);
	st->trips++;
	free(text);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		if (name[0] != '\0')
			free(pg->prep[pg->nprep].sql);
		return failed(st, res, "prepare");
	}
	PQclear(res);
	if (name[0] != '\0')
		pg->prep[pg->nprep++].hash = h;
	return SG_STORE_OK;
}

static PGresult *
execute(struct sg_store *st, const char *name, const struct sg_st_arg *args,
    int n)
{
	char nums[SG_ST_MAX_ARGS][24];
	const char *vals[SG_ST_MAX_ARGS];
	int i;

	for (i = 0; i < n; i++) {
		if (args[i].kind == 'i') {
			snprintf(nums[i], sizeof(nums[i]), "%lld",
			    (long long)args[i].i);
			vals[i] = nums[i];
		} else
			vals[i] = args[i].s;
	}
	return PQexecPrepared(st->pg->conn, name, n, vals, NULL, NULL, 0);
}

int
sg_pg_run(struct sg_store *st, struct sg_st_cur *c, const char *sql,
    const struct sg_st_arg *args, int n)
{
	char name[16], *text = NULL;
	size_t len = 0;
	PGresult *res = NULL;
	int try, rc = 0;

	/* Deferred writes go with the next statement: inlined, in one. */
	if (st->pg->later != NULL && !st->pg->in_tx) {
		if ((rc = sg_pg_inline(st, &text, &len, sql, args, n)) ==
		    SG_STORE_OK)
			rc = with_later(st, text, len, &res);
		free(text);
		if (rc < 0)
			return rc;
		if (rc == SG_STORE_OK)
			goto done;
		rc = 0;
	}
	for (try = 0; try < 2 && rc == 0; try++) {
		if (ensure(st) != SG_STORE_OK)
			return SG_STORE_ERROR;
		if (prepared(st, sql, args, n, name) != SG_STORE_OK) {
			if (try == 0 && st->down && !st->pg->in_tx) {
				drop(st->pg);
				continue;
			}
			return SG_STORE_ERROR;
		}
		res = execute(st, name, args, n);
		st->trips++;
		if ((rc = outcome(st, res, try, "query")) < 0)
			return rc;
	}
	if (rc == 0)
		return sg_st_err(st, "query: the connection was lost twice");
done:
	c->res = res;
	c->nrows = PQntuples(res);
	c->row = 0;
	st->changes = atoi(PQcmdTuples(res));
	return c->nrows > 0 ? SG_ST_ROW : SG_ST_DONE;
}

void
sg_pg_done(struct sg_st_cur *c)
{
	PQclear(c->res);
}

const char *
sg_pg_text(struct sg_st_cur *c, int i)
{
	if (c->row >= c->nrows || PQgetisnull(c->res, c->row, i))
		return NULL;
	return PQgetvalue(c->res, c->row, i);
}

int64_t
sg_pg_int(struct sg_st_cur *c, int i)
{
	const char *v = sg_pg_text(c, i);

	return v != NULL ? strtoll(v, NULL, 10) : 0;
}
