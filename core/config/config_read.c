/*
 * Typed readers of one config setting. Each either fills its output or
 * fails with "FILE:LINE: reason" pointing at the setting (or at the group
 * that lacks it); none ever dereferences a group that is not there.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

#define SECRET_FILE_MAX 65536

static int
line_of(const config_setting_t *s)
{
	return s != NULL ? (int)config_setting_source_line(s) : 0;
}

void
sg_cfgld_strip_slashes(char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
}

const config_setting_t *
sg_cfgld_at(const config_setting_t *grp, const char *name)
{
	const config_setting_t *s = grp != NULL ?
	    config_setting_get_member(grp, name) : NULL;

	return s != NULL ? s : grp;
}

int
sg_cfgld_fail(struct sg_cfgld *ld, const config_setting_t *s,
    const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ld->err, ld->errsz, "%s:%d: %s", ld->file, line_of(s), msg);
	return -1;
}

void
sg_cfgld_warn(struct sg_cfgld *ld, const config_setting_t *s,
    const char *fmt, ...)
{
	struct sg_cfg *cfg = ld->cfg;
	char msg[384], *line, **grown;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	grown = realloc(cfg->warnings, (cfg->nwarnings + 1) * sizeof(*grown));
	if (grown == NULL)
		return;
	cfg->warnings = grown;
	if (asprintf(&line, "%s:%d: %s", ld->file, line_of(s), msg) != -1)
		cfg->warnings[cfg->nwarnings++] = line;
}

void
sg_cfgld_check_keys(struct sg_cfgld *ld, const config_setting_t *grp,
    const char *const known[], const char *where)
{
	int i, n = config_setting_length(grp);
	size_t k;

	for (i = 0; i < n; i++) {
		config_setting_t *m = config_setting_get_elem(grp, (unsigned)i);
		const char *name = config_setting_name(m);

		if (name == NULL)
			continue;
		for (k = 0; known[k] != NULL; k++)
			if (strcmp(known[k], name) == 0)
				break;
		if (known[k] == NULL)
			sg_cfgld_warn(ld, m, "unknown setting %s%s%s", where,
			    *where != '\0' ? "." : "", name);
	}
}

int
sg_cfgld_str(struct sg_cfgld *ld, const config_setting_t *grp,
    const char *name, char **out, int required)
{
	config_setting_t *s = config_setting_get_member(grp, name);

	if (s == NULL) {
		if (required)
			return sg_cfgld_fail(ld, grp, "missing setting %s", name);
		return 0;
	}
	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return sg_cfgld_fail(ld, s, "%s must be a string", name);
	free(*out);
	if ((*out = strdup(config_setting_get_string(s))) == NULL)
		return sg_cfgld_fail(ld, s, "out of memory");
	return 0;
}

int
sg_cfgld_llong(struct sg_cfgld *ld, const config_setting_t *grp,
    const char *name, long long *out, long long min, long long max)
{
	config_setting_t *s = config_setting_get_member(grp, name);
	long long v;

	if (s == NULL)
		return 0;
	if (config_setting_type(s) == CONFIG_TYPE_INT)
		v = config_setting_get_int(s);
	else if (config_setting_type(s) == CONFIG_TYPE_INT64)
		v = config_setting_get_int64(s);
	else
		return sg_cfgld_fail(ld, s, "%s must be an integer", name);
	if (v < min || v > max)
		return sg_cfgld_fail(ld, s, "%s must be between %lld and %lld",
		    name, min, max);
	*out = v;
	return 0;
}

int
sg_cfgld_int(struct sg_cfgld *ld, const config_setting_t *grp,
    const char *name, int *out, long long min, long long max)
{
	long long v = *out;

	if (sg_cfgld_llong(ld, grp, name, &v, min, max) == -1)
		return -1;
	*out = (int)v;
	return 0;
}

int
sg_cfgld_bool(struct sg_cfgld *ld, const config_setting_t *grp,
    const char *name, int *out)
{
	config_setting_t *s = config_setting_get_member(grp, name);

	if (s == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_BOOL)
		return sg_cfgld_fail(ld, s, "%s must be true or false", name);
	*out = config_setting_get_bool(s);
	return 0;
}

int
sg_cfgld_word(struct sg_cfgld *ld, const config_setting_t *grp,
    const char *name, char **out, const char *const allowed[])
{
	char list[256];
	size_t i, len = 0;

	if (sg_cfgld_str(ld, grp, name, out, 0) == -1)
		return -1;
	if (*out == NULL)
		return 0;
	for (i = 0; allowed[i] != NULL; i++)
		if (strcmp(*out, allowed[i]) == 0)
			return 0;
	list[0] = '\0';
	for (i = 0; allowed[i] != NULL && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s\"%s\"",
		    i == 0 ? "" : allowed[i + 1] == NULL ? " or " : ", ",
		    allowed[i]);
	return sg_cfgld_fail(ld, config_setting_get_member(grp, name),
	    "%s must be %s", name, list);
}

int
sg_cfgld_strings(struct sg_cfgld *ld, const config_setting_t *grp,
    const char *name, char ***out, size_t *n)
{
	config_setting_t *s = config_setting_get_member(grp, name);
	int i, len;

	*out = NULL;
	*n = 0;
	if (s == NULL)
		return 0;
	if (!config_setting_is_aggregate(s) || config_setting_is_group(s))
		return sg_cfgld_fail(ld, s, "%s must be a list of strings, "
		    "like [ \"a\", \"b\" ]", name);
	len = config_setting_length(s);
	if ((*out = calloc((size_t)len + 1, sizeof(**out))) == NULL)
		return sg_cfgld_fail(ld, s, "out of memory");
	for (i = 0; i < len; i++) {
		config_setting_t *e = config_setting_get_elem(s, (unsigned)i);

		if (config_setting_type(e) != CONFIG_TYPE_STRING)
			return sg_cfgld_fail(ld, e, "%s must be a list of "
			    "strings", name);
		if (((*out)[*n] = strdup(config_setting_get_string(e))) == NULL)
			return sg_cfgld_fail(ld, e, "out of memory");
		(*n)++;
	}
	return 0;
}

static char *
read_secret_file(const char *path, char **problem)
{
	char *buf;
	size_t n;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL) {
		if (asprintf(problem, "cannot read %s: %s", path,
		    strerror(errno)) == -1)
			*problem = NULL;
		return NULL;
	}
	if ((buf = malloc(SECRET_FILE_MAX + 1)) == NULL) {
		fclose(f);
		return NULL;
	}
	n = fread(buf, 1, SECRET_FILE_MAX, f);
	fclose(f);
	buf[n] = '\0';
	/* Files written by `echo` end in a newline that is not the secret. */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	return buf;
}

int
sg_cfg_secret(const char *spec, char **out, char **problem)
{
	const char *env = NULL, *v;

	*out = NULL;
	*problem = NULL;
	if (strncmp(spec, "env:", 4) == 0)
		env = spec + 4;
	else if (strncmp(spec, "os.environ/", 11) == 0)
		env = spec + 11;
	else if (strncmp(spec, "file:", 5) == 0) {
		*out = read_secret_file(spec + 5, problem);
		return *out != NULL || *problem != NULL ? 0 : -1;
	}
	if (env == NULL)
		return (*out = strdup(spec)) != NULL ? 0 : -1;
	if ((v = getenv(env)) == NULL || *v == '\0') {
		if (asprintf(problem, "environment variable %s is not set",
		    env) == -1)
			return -1;
		return 0;
	}
	return (*out = strdup(v)) != NULL ? 0 : -1;
}

int
sg_cfgld_secret(struct sg_cfgld *ld, const config_setting_t *grp,
    const char *name, char **out, char **problem)
{
	config_setting_t *s = config_setting_get_member(grp, name);
	char *spec = NULL, *why;
	int rc;

	if (sg_cfgld_str(ld, grp, name, &spec, 0) == -1)
		return -1;
	if (spec == NULL)
		return 0;
	rc = sg_cfg_secret(spec, out, &why);
	free(spec);
	if (rc == -1)
		return sg_cfgld_fail(ld, s, "out of memory");
	if (why == NULL)
		return 0;
	sg_cfgld_warn(ld, s, "%s: %s", name, why);
	/* Several secrets of one entry share a reason: keep the first. */
	if (*problem == NULL)
		*problem = why;
	else
		free(why);
	return 0;
}

int
sg_cfgld_list(struct sg_cfgld *ld, const config_setting_t *list,
    const char *what, const char *const known[], size_t itemsz, void *arrayp,
    size_t *n, int (*fn)(struct sg_cfgld *, const config_setting_t *, void *))
{
	char where[64];
	char *items;
	int i, len;

	if (!config_setting_is_list(list))
		return sg_cfgld_fail(ld, list, "%s must be a list ( {...}, ... )",
		    what);
	len = config_setting_length(list);
	if ((items = calloc((size_t)len + 1, itemsz)) == NULL)
		return sg_cfgld_fail(ld, list, "out of memory");
	memcpy(arrayp, &items, sizeof(items));
	snprintf(where, sizeof(where), "%s[]", what);
	for (i = 0; i < len; i++) {
		config_setting_t *e = config_setting_get_elem(list, (unsigned)i);

		if (!config_setting_is_group(e))
			return sg_cfgld_fail(ld, e, "%s entries must be { ... }",
			    what);
		sg_cfgld_check_keys(ld, e, known, where);
		if (fn(ld, e, items + (*n)++ * itemsz) == -1)
			return -1;
	}
	return 0;
}

int
sg_cfgld_key_hash(struct sg_cfgld *ld, const config_setting_t *e,
    struct sg_cfg_key *k, char *key, char *hash)
{
	size_t j, len;

	if (key != NULL && hash != NULL)
		return sg_cfgld_fail(ld, e, "key %s: set key or key_sha256, not "
		    "both", k->name);
	if (key != NULL) {
		sg_sha256_hex(key, strlen(key), k->sha256);
		return 0;
	}
	if (hash == NULL)
		return k->problem != NULL ? 0 : sg_cfgld_fail(ld, e, "key %s: "
		    "needs key or key_sha256", k->name);
	len = strlen(hash);
	for (j = 0; j < len; j++)
		if (!strchr("0123456789abcdefABCDEF", hash[j]))
			break;
	if (len != 64 || j != len)
		return sg_cfgld_fail(ld, sg_cfgld_at(e, "key_sha256"), "key %s: "
		    "key_sha256 must be 64 hex digits", k->name);
	for (j = 0; j < len; j++)
		k->sha256[j] = (char)(hash[j] | 0x20);
	k->sha256[64] = '\0';
	return 0;
}
