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
	if (sg_store_open(path, st, err, sizeof(err)) != SG_STORE_OK ||
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

/* New reference: tu_q(text) parsed; fails the test when it is not JSON. */
static inline json_t *
tu_qjson(const char *text)
{
	json_error_t e;
	char *s = tu_q(text);
	json_t *j = json_loads(s, JSON_DECODE_ANY, &e);

	if (j == NULL)
		fail_msg("bad JSON in the test (%s): %s", e.text, s);
	free(s);
	return j;
}
#endif

#endif
