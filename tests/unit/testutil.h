/*
 * Small helpers shared by the unit tests: temp dirs under /tmp, files,
 * substring asserts. Everything is static inline so a test file that uses
 * only part of it still builds with -Wall -Wextra -Werror.
 */
#ifndef SG_TESTUTIL_H
#define SG_TESTUTIL_H

#include <sys/stat.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A fresh directory /tmp/sg-unit-XXXXXX into out; 0 or -1. */
static inline int
tu_mkdtemp(char *out, size_t outsz)
{
	if (snprintf(out, outsz, "/tmp/sg-unit-XXXXXX") >= (int)outsz)
		return -1;
	return mkdtemp(out) != NULL ? 0 : -1;
}

static inline int
tu_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* rm -rf dir (only ever called on our own mkdtemp directories). */
static inline void
tu_rmrf(const char *dir)
{
	if (dir != NULL && strncmp(dir, "/tmp/sg-unit-", 13) == 0)
		nftw(dir, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#ifdef SG_STORE_H
#include <sqlite3.h>

#include "../../store/internal.h"

/* The active key of hash h's name into name[namesz], through the
 * store's one lookup of a key (sg_store_key_get): OK or NOTFOUND. */
static inline int
tu_key_find(struct sg_store *st, const char *h, char *name, size_t namesz)
{
	struct sg_store_key k;
	char buf[4096];
	int rc = sg_store_key_get(st, h, &k, buf, sizeof(buf));

	if (rc == SG_STORE_OK)
		snprintf(name, namesz, "%s", k.name);
	return rc;
}

/*
 * The store tests run twice: on SQLite files, then, when SG_TEST_PG names
 * a PostgreSQL database they may wipe (make test starts a server), on it:
 * tu_store_url is that URL during the second run, else NULL.
 */
static const char *tu_store_url;

/* Open the store of a test: the file path, or in the PostgreSQL run the
 * database, emptied when wipe is set. SG_STORE_* as sg_store_open. */
static inline int
tu_store_open(const char *path, struct sg_store **st, char *err,
    size_t errsz, int wipe)
{
	int rc;

	rc = sg_store_open(tu_store_url != NULL ? tu_store_url : path, st, err,
	    errsz);
	if (rc == SG_STORE_OK && tu_store_url != NULL && wipe &&
	    (rc = sg_st_exec(*st, "DROP SCHEMA public CASCADE; CREATE SCHEMA "
	    "public")) != SG_STORE_OK)
		snprintf(err, errsz, "wipe: %s", sg_store_errmsg(*st));
	return rc;
}

/* main() of a store test: tests on SQLite, then on PostgreSQL. */
#define TU_STORE_MAIN(tests) do {					\
	int failed_ = cmocka_run_group_tests_name("sqlite", tests, NULL,	\
	    NULL);							\
	tu_store_url = getenv("SG_TEST_PG");				\
	if (tu_store_url != NULL && tu_store_url[0] != '\0')		\
		failed_ += cmocka_run_group_tests_name("postgresql", tests,	\
		    NULL, NULL);					\
	return failed_;							\
} while (0)

/*
 * Run one statement on a connection of its own, as another process would
 * (a SQLite file by path, or the PostgreSQL run's database); its first
 * column as text into out when out is not NULL. 0, or -1 with the error
 * printed.
 */
static inline int
tu_raw_sql(const char *path, const char *sql, char *out, size_t outsz)
{
	struct sg_store *st = NULL;
	struct sg_st_cur *cur = NULL;
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;
	char err[256];
	const char *v;
	int rc;

	if (out != NULL)
		out[0] = '\0';
	if (tu_store_url != NULL) {
		if (tu_store_open(path, &st, err, sizeof(err), 0) != SG_STORE_OK ||
		    (rc = sg_st_run(st, &cur, sql, "")) < 0) {
			fprintf(stderr, "%s: %s\n", sql, st != NULL ?
			    sg_store_errmsg(st) : err);
			sg_store_close(st);
			return -1;
		}
		if (out != NULL && rc == SG_ST_ROW && (v = sg_st_text(cur, 0)))
			snprintf(out, outsz, "%s", v);
		sg_st_done(st, cur);
		sg_store_close(st);
		return 0;
	}
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) !=
	    SQLITE_OK || sqlite3_busy_timeout(db, 10000) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK ||
	    ((rc = sqlite3_step(stmt)) != SQLITE_ROW && rc != SQLITE_DONE)) {
		fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
		sqlite3_finalize(stmt);
		sqlite3_close(db);
		return -1;
	}
	if (out != NULL && rc == SQLITE_ROW && (v = (const char *)
	    sqlite3_column_text(stmt, 0)) != NULL)
		snprintf(out, outsz, "%s", v);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return 0;
}

/* A statement on an open store: 0, or -1 with the error printed. */
static inline int
tu_raw_sql_store(struct sg_store *st, const char *sql)
{
	if (sg_st_exec(st, sql) == SG_STORE_OK)
		return 0;
	fprintf(stderr, "%s: %s\n", sql, sg_store_errmsg(st));
	return -1;
}

/* A test about SQLite's file itself: skipped in the PostgreSQL run. */
#define TU_SQLITE_ONLY() do {						\
	if (tu_store_url != NULL)					\
		skip();							\
} while (0)

/* A fresh store at dir/sandgate.db (dir made with tu_mkdtemp), migrated:
 * 0, or -1 with nothing left behind. */
static inline int
tu_store_fresh(char *dir, size_t dirsz, char *path, size_t pathsz,
    struct sg_store **st)
{
	char err[256];

	*st = NULL;
	if (tu_mkdtemp(dir, dirsz) == -1)
		return -1;
	snprintf(path, pathsz, "%s/sandgate.db", dir);
	if (tu_store_open(path, st, err, sizeof(err), 1) != SG_STORE_OK ||
	    sg_store_migrate(*st) != SG_STORE_OK) {
		fprintf(stderr, "store: %s\n", *st != NULL ?
		    sg_store_errmsg(*st) : err);
		sg_store_close(*st);
		*st = NULL;
		tu_rmrf(dir);
		return -1;
	}
	return 0;
}

/* The fixture of the store's tests: a fresh store per test. Use as a
 * cmocka setup/teardown pair; *state is the struct tu_store_fx. */
struct tu_store_fx {
	char		 dir[64];
	char		 path[128];
	struct sg_store	*st;
};

static inline int
tu_store_setup(void **state)
{
	struct tu_store_fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL || tu_store_fresh(fx->dir, sizeof(fx->dir), fx->path,
	    sizeof(fx->path), &fx->st) == -1) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static inline int
tu_store_teardown(void **state)
{
	struct tu_store_fx *fx = *state;

	sg_store_close(fx->st);
	tu_rmrf(fx->dir);
	free(fx);
	return 0;
}

#ifdef SG_STORE_USAGE_H
/* A trace of one round, by tenant "tenant", 7 ms long: fails the test
 * when the store refuses it. */
static inline void
tu_trace_add(struct sg_store *st, const char *id, const char *key,
    const char *model, int status, int64_t started_ms)
{
	struct sg_store_trace t = { .id = id, .tenant = "tenant", .key_id =
	    key, .model = model, .status = status, .started_ms = started_ms,
	    .duration_ms = 7, .rounds = "[{\"code\":\"print(1)\"}]" };

	if (sg_store_trace_add(st, &t) != SG_STORE_OK)
		fail_msg("trace_add: %s", sg_store_errmsg(st));
}
#endif
#endif

/* Write len bytes (or strlen(text) when len is -1) to path; 0 or -1. */
static inline int
tu_write_file(const char *path, const char *text, long len)
{
	size_t n = len < 0 ? strlen(text) : (size_t)len;
	FILE *f = fopen(path, "w");
	int rc;

	if (f == NULL)
		return -1;
	rc = fwrite(text, 1, n, f) == n ? 0 : -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* memmem that tolerates NULL haystacks (a failed call's output). */
static inline int
tu_contains(const char *hay, size_t haylen, const char *needle)
{
	return hay != NULL && memmem(hay, haylen, needle, strlen(needle)) != NULL;
}

/* Fail the test, showing both strings, unless hay contains needle. */
#define assert_contains(hay, needle) do {				\
	const char *tu_h_ = (hay), *tu_n_ = (needle);			\
	if (tu_h_ == NULL || strstr(tu_h_, tu_n_) == NULL)		\
		fail_msg("expected \"%s\" to contain \"%s\"",		\
		    tu_h_ != NULL ? tu_h_ : "(null)", tu_n_);		\
} while (0)

#define assert_not_contains(hay, needle) do {				\
	const char *tu_h_ = (hay), *tu_n_ = (needle);			\
	if (tu_h_ != NULL && strstr(tu_h_, tu_n_) != NULL)		\
		fail_msg("expected \"%s\" not to contain \"%s\"",	\
		    tu_h_, tu_n_);					\
} while (0)

#if defined(JANSSON_H) && defined(assert_non_null)
/* New copy of s with every ' turned into ": JSON in tests stays readable
 * (for tests that include cmocka and Jansson first). */
static inline char *
tu_q(const char *s)
{
	char *c = strdup(s), *p;

	assert_non_null(c);
	for (p = c; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	return c;
}

/* New reference: text parsed; fails the test when it is not JSON. */
static inline json_t *
tu_json(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &e);

	if (j == NULL)
		fail_msg("bad JSON in the test (%s): %s", e.text, text);
	return j;
}

/* New reference: tu_q(text) parsed; fails the test when it is not JSON. */
static inline json_t *
tu_qjson(const char *text)
{
	char *s = tu_q(text);
	json_t *j = tu_json(s);

	free(s);
	return j;
}
#endif

#ifdef SG_HTTP_H
#include "../../lib/util.h"

/* An sg_out that keeps what is written in b, its client always there:
 * tu_capture_init, then hand &c.out to a handler. */
struct tu_capture {
	struct sg_out	 out;	/* first: the callbacks get &out */
	struct sg_buf	 b;
};

static inline int
tu_cap_write(struct sg_out *o, const void *p, size_t n)
{
	return sg_buf_add(&((struct tu_capture *)o)->b, p, n);
}

static inline int
tu_cap_flush(struct sg_out *o)
{
	(void)o;
	return 0;
}

static inline int
tu_cap_alive(struct sg_out *o)
{
	(void)o;
	return 1;
}

static inline void
tu_capture_init(struct tu_capture *c)
{
	memset(c, 0, sizeof(*c));
	c->out.write = tu_cap_write;
	c->out.flush = tu_cap_flush;
	c->out.alive = tu_cap_alive;
}
#endif

#endif
