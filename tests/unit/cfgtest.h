/*
 * The fixture of the config's tests (test_config.c, test_config_ops.c):
 * each test writes a config into its own temp dir and loads it. Bad
 * configs must name the offending setting as "FILE:LINE:"; the line is
 * found by a "# <-- HERE" marker on it, so the configs stay readable and
 * the numbers never drift. Include after cmocka.h and testutil.h.
 */
#ifndef SG_CFGTEST_H
#define SG_CFGTEST_H

#include "../../core/config/config.h"

#define HERE "# <-- HERE"

struct fx {
	char		 dir[64];
	char		 path[128];	/* dir/sandgate.conf */
	struct sg_cfg	*cfg;
	char		 err[512];
};

static inline int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL || tu_mkdtemp(fx->dir, sizeof(fx->dir)) == -1) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/sandgate.conf", fx->dir);
	*state = fx;
	return 0;
}

static inline int
teardown(void **state)
{
	struct fx *fx = *state;

	sg_cfg_free(fx->cfg);
	tu_rmrf(fx->dir);
	free(fx);
	unsetenv("SG_TEST_SECRET");
	unsetenv("SG_TEST_UNSET");
	unsetenv("SANDGATE_CONFIG");
	return 0;
}

/* Write text as the config and load it: the sg_cfg_load result. */
static inline int
load(struct fx *fx, const char *text)
{
	assert_int_equal(tu_write_file(fx->path, text, -1), 0);
	sg_cfg_free(fx->cfg);
	fx->cfg = NULL;
	fx->err[0] = '\0';
	return sg_cfg_load(fx->path, &fx->cfg, fx->err, sizeof(fx->err));
}

static inline void
load_ok(struct fx *fx, const char *text)
{
	if (load(fx, text) != 0)
		fail_msg("load failed: %s", fx->err);
	assert_non_null(fx->cfg);
}

/* 1-based line of the first line of text holding marker. */
static inline int
line_of(const char *text, const char *marker)
{
	const char *m = strstr(text, marker), *p;
	int line = 1;

	assert_non_null(m);
	for (p = text; p < m; p++)
		if (*p == '\n')
			line++;
	return line;
}

/* Assert the load fails and err starts with "PATH:LINE:" of the marked
 * line, and mentions what (when not NULL). */
static inline void
load_fails_at(struct fx *fx, const char *text, const char *what)
{
	char want[256];

	assert_int_equal(load(fx, text), -1);
	assert_null(fx->cfg);
	snprintf(want, sizeof(want), "%s:%d:", fx->path, line_of(text, HERE));
	if (strncmp(fx->err, want, strlen(want)) != 0)
		fail_msg("error \"%s\" does not start with \"%s\"", fx->err, want);
	if (what != NULL)
		assert_contains(fx->err, what);
}

/* Index of the warning that contains every one of a and b, or -1. */
static inline int
find_warning(const struct sg_cfg *cfg, const char *a, const char *b)
{
	size_t i;

	for (i = 0; i < cfg->nwarnings; i++)
		if (strstr(cfg->warnings[i], a) != NULL &&
		    (b == NULL || strstr(cfg->warnings[i], b) != NULL))
			return (int)i;
	return -1;
}

/* Assert a warning "PATH:LINE: ... what" exists for the marked line. */
static inline void
assert_warning_at(const struct fx *fx, const char *text, const char *marker,
    const char *what)
{
	char where[256];

	snprintf(where, sizeof(where), "%s:%d: ", fx->path,
	    line_of(text, marker));
	if (find_warning(fx->cfg, where, what) == -1)
		fail_msg("no warning \"%s...%s\" among %zu", where, what,
		    fx->cfg->nwarnings);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

#endif
