/*
 * The store's private parts, shared by its files: db.c (the statement
 * and row interface every query goes through), sqlite.c and pg.c (its two
 * backends), schema.c (migrations), store.c (opening, keys, relayed ids),
 * copy.c (`sandgate migrate --to`), backup.c (SQLite's online backup),
 * and one file per kind of row. Nothing outside store/ includes it but
 * the store's unit tests.
 *
 * SQL is written once, in the dialect both backends speak: "?" or "?N"
 * placeholders (PostgreSQL's "$N" is made from them), ON CONFLICT upserts,
 * row values, "rowid" (a real column in PostgreSQL's tables), CASE rather
 * than a bare comparison in a select list (PostgreSQL has booleans).
 */
#ifndef SG_STORE_INTERNAL_H
#define SG_STORE_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "store.h"

struct sqlite3;
struct sqlite3_stmt;
struct pg_result;
struct sg_pg;
struct sg_st_runs;

/* What a statement's run or a row step gave, besides SG_STORE_* errors
 * (negative): SQLite's own values, so callers read naturally. */
#define SG_ST_ROW	100
#define SG_ST_DONE	101

enum sg_st_kind { SG_ST_SQLITE, SG_ST_PG };

/* Prepared statements kept for the next use: parsing one costs more than
 * running it. Keyed by the SQL text; a statement in use is never handed
 * out twice. */
#define SG_ST_CACHE	48

struct sg_st_cached {
	char			*sql;
	const char		*seen;	/* the caller's text when last found:
					 * most SQL is a literal, the same
					 * pointer each time */
	uint64_t		 hash;
	struct sqlite3_stmt	*stmt;
	int			 busy;
};

/* The rows of one statement run: a SQLite statement stepped as it is
 * read, or a PostgreSQL result holding every row. */
struct sg_st_cur {
	struct sqlite3_stmt	*stmt;
	struct pg_result	*res;
	int			 row, nrows;
};

struct sg_store {
	enum sg_st_kind		 kind;
	struct sqlite3		*db;		/* SG_ST_SQLITE */
	struct sg_pg		*pg;		/* SG_ST_PG */
	char			 err[256];
	int			 changes;	/* rows the last statement changed */
	int			 down;		/* the last failure: unreachable */
	char			 box[SG_STORE_BOX_MAX + 1];	/* rows made here */
	struct sg_st_cached	 cache[SG_ST_CACHE];
	int			 ncache;
	uint64_t		 trips;		/* round trips (PostgreSQL) */
	/* The session this connection last touched, and when (unix s). */
	char			 touched[65 + SG_STORE_SESSION_MAX + 2];
	int64_t			 touched_at;
	int64_t			 busy_since;	/* a wait's first (sg_now_ms) */
	/* SQLite: the run locks' table (runs.c); NULL: in the rows. */
	struct sg_st_runs	*runs;
};

/*
 * runs.c: a SQLite store's run locks, in a table mapped from PATH-runs
 * (st->runs; NULL on PostgreSQL: the rows' runner columns there).
 * take: pid's lock on id until until (unix s) when no lock of it lasts
 * at now (seen_until < 0), or when its lock is still the one read, with
 * that deadline (seen_until >= 0; 0: none): OK or EXISTS. give: the lock
 * dropped if pid's (and start's, when nonzero). get: the lock as held
 * now (zeros: none).
 */
int	 sg_st_runs_open(struct sg_store *, const char *db_path);
void	 sg_st_runs_close(struct sg_store *);
int	 sg_st_runs_take(struct sg_store *, const char *id, int64_t pid,
	    int64_t start, int64_t until, int64_t now, int64_t seen_until);
void	 sg_st_runs_give(struct sg_store *, const char *id, int64_t pid,
	    int64_t start);
void	 sg_st_runs_get(struct sg_store *, const char *id, int64_t *pid,
	    int64_t *start, int64_t *until);

/* Fill st->err; SG_STORE_ERROR. Inline: db.c and the backends it calls
 * (sqlite.c, pg.c) all set it, and none calls back into db.c for it. */
static inline int sg_st_err(struct sg_store *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
static inline int
sg_st_err(struct sg_store *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	return SG_STORE_ERROR;
}
/* Statements without arguments ("BEGIN", a migration); several may be
 * separated by ";". */
int	 sg_st_exec(struct sg_store *, const char *sql);
/*
 * Prepare sql, bind the arguments described by fmt in order ('s' a
 * string or NULL, 'i' an int64_t), run it: SG_ST_ROW (the first row
 * readable) or SG_ST_DONE with *cur to give back (sg_st_done), or an
 * SG_STORE_* error with *cur NULL: EXISTS for a constraint.
 */
int	 sg_st_run(struct sg_store *, struct sg_st_cur **, const char *sql,
	    const char *fmt, ...);
/* The next row: SG_ST_ROW, SG_ST_DONE, or an error. */
int	 sg_st_next(struct sg_store *, struct sg_st_cur *);
/* Column i of the current row: NULL (text) or 0 when it is NULL. The text
 * is borrowed until the next step or sg_st_done. */
const char *sg_st_text(struct sg_st_cur *, int i);
int64_t	 sg_st_int(struct sg_st_cur *, int i);
/* Done with a run's rows (NULL: nothing). */
void	 sg_st_done(struct sg_store *, struct sg_st_cur *);
/* The most a statement binds: the ledger's sums (usage.c) bind two
 * lists of SG_STORE_USE_LIST_MAX values and their other arguments. */
#define SG_ST_MAX_ARGS	80
/* A statement's argument: 's' text (s, NULL: NULL), 'i' an integer (i),
 * 'n' an integer given as text (s, NULL: NULL). */
struct sg_st_arg {
	char		 kind;
	int64_t		 i;
	const char	*s;
};
/* sg_st_run with the arguments in an array, n of them. */
int	 sg_st_runa(struct sg_store *, struct sg_st_cur **, const char *sql,
	    const struct sg_st_arg *, int n);
/* sg_st_run() for statements whose rows do not matter; the count of
 * changed rows in *changes when not NULL. */
int	 sg_st_exec_args(struct sg_store *, int *changes, const char *sql,
	    const char *fmt, ...);
/* The end of a loop over a run's rows (rc: its last step, or an error
 * sg_st_run returned, cur NULL): the cursor given back; OK when the rows
 * ran out or the loop stopped early, else the error, with what naming the
 * query. */
int	 sg_st_finish(struct sg_store *, struct sg_st_cur *, int rc,
	    const char *what);
/* A write transaction, so concurrent writers queue rather than fail and
 * a claim (select, then write) is never interleaved with another: SQLite's
 * BEGIN IMMEDIATE; PostgreSQL's BEGIN and one advisory lock every
 * gateway's transactions take. End it with sg_st_end: commit when rc is
 * SG_STORE_OK, else roll back; returns rc (or the commit's failure). */
int	 sg_st_begin(struct sg_store *);
int	 sg_st_end(struct sg_store *, int rc);
/* A write transaction for a batch that conflicts with no claim (rows
 * only added, each by its own key): sg_st_begin without PostgreSQL's
 * lock, so a long batch never holds up every gateway's claims. Ended by
 * sg_st_end. */
int	 sg_st_begin_batch(struct sg_store *);

/*
 * Writes whose rows do not matter, run together as one transaction: on
 * PostgreSQL one round trip and one commit (their text, the arguments
 * inlined as literals, sent as one simple query, which the server runs
 * as one implicit transaction), on SQLite between BEGIN IMMEDIATE and
 * COMMIT. With lock, the transaction takes sg_st_begin's lock first. Add
 * statements with sg_st_batch_add (arguments copied), run them with
 * sg_st_batch_run, which empties the batch, run or not.
 */
#define SG_ST_BATCH_MAX	16
struct sg_st_batch_stmt {
	const char		*sql;	/* borrowed: a literal */
	struct sg_st_arg	 args[12];
	char			*strs;	/* the 's' and 'n' arguments' copies */
	int			 n;
};
struct sg_st_batch {
	struct sg_st_batch_stmt	 s[SG_ST_BATCH_MAX];
	int			 n;
	int			 failed;	/* an add failed: run fails */
};
void	 sg_st_batch_add(struct sg_store *, struct sg_st_batch *,
	    const char *sql, const char *fmt, ...);
int	 sg_st_batch_run(struct sg_store *, struct sg_st_batch *, int lock);
/* sg_st_batch_run (no lock; never inside a transaction), deferred on
 * PostgreSQL: the writes go with the store's next statement, in its
 * round trip and its transaction, or at sg_store_flush (the caller's to
 * call before it waits on anything). Run at once on SQLite. */
int	 sg_st_batch_later(struct sg_store *, struct sg_st_batch *);
/* A session's touch ("iss": now, tenant, session id), with its use and
 * a run's end. Once a second at most: a request's runs in one second
 * leave the row (its page, its WAL frame, its dead tuple) as it was, and
 * a later time is never set back. */
#define SG_ST_SESS_TOUCH_SQL	"UPDATE sessions SET last_used_at = ?1 " \
	"WHERE tenant = ?2 AND session_id = ?3 AND last_used_at < ?1"
/* Whether this connection set the session's last_used_at to now already
 * (its touch would then change nothing: the statement is left out, and
 * with it, on SQLite, a transaction); sg_st_touch_mark says it did. */
int	 sg_st_touch_done(struct sg_store *, const char *tenant,
	    const char *session_id, int64_t now);
void	 sg_st_touch_mark(struct sg_store *, const char *tenant,
	    const char *session_id, int64_t now);

/* The backends (sqlite.c, pg.c), as db.c calls them. */
int	 sg_sq_open(struct sg_store *, const char *path, char *err,
	    size_t errsz);
void	 sg_sq_close(struct sg_store *);
int	 sg_sq_checkpoint(struct sg_store *);
/* The pause (µs) before the count'th try for a lock another holds. */
long	 sg_sq_busy_us(int count);
int	 sg_sq_exec(struct sg_store *, const char *sql);
int	 sg_sq_run(struct sg_store *, struct sg_st_cur *, const char *sql,
	    const struct sg_st_arg *, int n);
int	 sg_sq_next(struct sg_store *, struct sg_st_cur *);
void	 sg_sq_done(struct sg_store *, struct sg_st_cur *);
const char *sg_sq_text(struct sg_st_cur *, int);
int64_t	 sg_sq_int(struct sg_st_cur *, int);
int	 sg_pg_open(struct sg_store *, const char *url, char *err,
	    size_t errsz);
void	 sg_pg_close(struct sg_store *);
int	 sg_pg_exec(struct sg_store *, const char *sql);
int	 sg_pg_run(struct sg_store *, struct sg_st_cur *, const char *sql,
	    const struct sg_st_arg *, int n);
/* Append sql with its arguments inlined as literals, and ";", to *buf
 * (grown, *len its length): SG_STORE_OK or an error. */
int	 sg_pg_inline(struct sg_store *, char **buf, size_t *len,
	    const char *sql, const struct sg_st_arg *, int n);
void	 sg_pg_done(struct sg_st_cur *);
const char *sg_pg_text(struct sg_st_cur *, int);
int64_t	 sg_pg_int(struct sg_st_cur *, int);
/* Deferred writes (sg_st_batch_later): text ("...;") kept; sent now. */
int	 sg_pg_defer(struct sg_store *, const char *text, size_t len);
int	 sg_pg_flush(struct sg_store *);
/* Whether a transaction is open (no reconnect may hide its loss). */
void	 sg_pg_in_tx(struct sg_store *, int);

/* sandbox.c: a row of SG_ST_SBX_COLUMNS into out. */
#define SG_ST_SBX_COLUMNS "id, tenant, tool, state, handle, " \
	"coalesce(owner_pid, 0), coalesce(owner_start, 0), created_at, " \
	"last_used_at, expires_at, kind, coalesce(runner_pid, 0), runner_until, " \
	"coalesce(runner_start, 0), coalesce(name, ''), coalesce(pool_gen, ''), " \
	"coalesce(box, '')"
#define SG_ST_SBX_NCOLUMNS	17	/* how many: one put after them is read here */
void	 sg_st_sbx_row(struct sg_store *, struct sg_st_cur *,
	    struct sg_store_sbx *out);
/* Inside a transaction, after a kept row went in: sg_store_sbx_begin_kind's
 * eviction. */
int	 sg_st_evict(struct sg_store *, const char *tenant, int max_kept,
	    char victim[48]);

#endif
