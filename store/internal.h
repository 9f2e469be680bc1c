/*
 * The store's private parts, shared by its files (store.c: the file, the
 * schema, keys and response ids; sandbox.c: sandbox rows; session.c:
 * sessions and leases). Nothing outside store/ includes it.
 */
#ifndef SG_STORE_INTERNAL_H
#define SG_STORE_INTERNAL_H

#include <stdint.h>

#include <sqlite3.h>

#include "store.h"

/* Prepared statements kept for the next use: parsing one cost more than
 * running it. Keyed by the SQL text; a statement in use is never handed
 * out twice. */
#define SG_ST_CACHE	48

struct sg_st_cached {
	char		*sql;
	uint64_t	 hash;
	sqlite3_stmt	*stmt;
	int		 busy;
};

struct sg_store {
	sqlite3			*db;
	char			 err[256];
	struct sg_st_cached	 cache[SG_ST_CACHE];
	int			 ncache;
};

/* Fill st->err; SG_STORE_ERROR. */
int	 sg_st_err(struct sg_store *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* st->err from SQLite's last error, after what; SG_STORE_ERROR. */
int	 sg_st_dberr(struct sg_store *, const char *what);
/* A prepared statement for sql: a cached one when it is free, else a new
 * one (cached while there is room). SQLITE_OK or SQLite's error. Give it
 * back with sg_st_done. */
int	 sg_st_prepare(struct sg_store *, const char *sql, sqlite3_stmt **);
/* Done with a statement of sg_st_prepare or sg_st_run: a cached one is
 * reset (its bindings cleared) for the next use, another finalized. */
void	 sg_st_done(struct sg_store *, sqlite3_stmt *);
/* Statements without arguments ("BEGIN IMMEDIATE", a migration). */
int	 sg_st_exec(struct sg_store *, const char *sql);
/*
 * Prepare sql, bind the arguments described by fmt in order ('s' a
 * string or NULL, 'i' an int64_t), step once. SQLITE_ROW or SQLITE_DONE
 * with *stmt to give back (sg_st_done), or an SG_STORE_* error with *stmt
 * NULL.
 */
int	 sg_st_run(struct sg_store *, sqlite3_stmt **, const char *sql,
	    const char *fmt, ...);
/* sg_st_run() for statements whose rows do not matter; the count of
 * changed rows in *changes when not NULL. */
int	 sg_st_exec_args(struct sg_store *, int *changes, const char *sql,
	    const char *fmt, ...);
/* A write transaction, so concurrent writers queue (busy timeout) rather
 * than fail. End it with sg_st_end: commit when rc is SG_STORE_OK, else
 * roll back; returns rc (or the commit's failure). */
/* The end of a loop of sqlite3_step over stmt (rc: its last step, or an
 * error sg_st_run returned, stmt NULL): OK when the rows ran out or the
 * loop stopped early, else the error, with what naming the query. */
int	 sg_st_finish(struct sg_store *, sqlite3_stmt *, int rc,
	    const char *what);
int	 sg_st_begin(struct sg_store *);
int	 sg_st_end(struct sg_store *, int rc);

/* sandbox.c: a row of SG_ST_SBX_COLUMNS into out. */
#define SG_ST_SBX_COLUMNS "id, tenant, tool, state, handle, " \
	"coalesce(owner_pid, 0), coalesce(owner_start, 0), created_at, " \
	"last_used_at, expires_at, kind, coalesce(runner_pid, 0), runner_until, " \
	"coalesce(runner_start, 0), coalesce(name, ''), coalesce(pool_gen, '')"
void	 sg_st_sbx_row(sqlite3_stmt *, struct sg_store_sbx *out);
/* Inside a transaction, after a kept row went in: sg_store_sbx_begin_kind's
 * eviction. */
int	 sg_st_evict(struct sg_store *, const char *tenant, int max_kept,
	    char victim[48]);

#endif
