/*
 * The settings of what keys spend (design §3.6): the limits of a key and
 * their defaults (auth.limits), the admin keys, the prices of models and
 * sandbox tools, how long the ledger and the traces are kept, where the
 * operator's console is served, how background responses run, and the
 * MCP server.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

static const char *const limit_keys[] = { "rpm", "tpm", "budget",
	"budget_period", "sandbox_seconds", NULL };
static const char *const admin_keys[] = { "name", "key", "key_sha256",
	NULL };
static const char *const model_price_keys[] = { "input", "cached_input",
	"output", NULL };
static const char *const tool_price_keys[] = { "per_session", "per_hour",
	NULL };
static const char *const usage_keys[] = { "retention", "traces", NULL };
static const char *const console_keys[] = { "enabled", "path", NULL };
static const char *const background_keys[] = { "runners", "max_per_key",
	NULL };
static const char *const mcp_keys[] = { "enabled", "path", "sandbox_tool",
	NULL };

/* A number (integer or float) in [0, max]: *set when present. */
static int
read_money(struct sg_cfgld *ld, const config_setting_t *grp,
    const char *name, double *out, double max, int *set)
{
	config_setting_t *s = config_setting_get_member(grp, name);
	double v;

	if (s == NULL)
		return 0;
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		v = (double)config_setting_get_int64(s);
		break;
	case CONFIG_TYPE_FLOAT:
		v = config_setting_get_float(s);
		break;
	default:
		return sg_cfgld_fail(ld, s, "%s must be a number", name);
	}
	if (!isfinite(v) || v < 0 || v > max)
		return sg_cfgld_fail(ld, s, "%s must be between 0 and %g", name,
		    max);
	*out = v;
	if (set != NULL)
		*set = 1;
	return 0;
}

void
sg_cfg_limits_unset(struct sg_cfg_limits *l)
{
	l->rpm = l->tpm = l->sandbox_seconds = -1;
	l->budget = -1;
	l->period = -1;
}

/* The limits written in grp (a key, or auth.limits) over what l holds. */
int
sg_cfgld_limits(struct sg_cfgld *ld, const config_setting_t *grp,
    struct sg_cfg_limits *l)
{
	static const char *const periods[] = { "day", "week", "month", NULL };
	char *period = NULL;
	size_t i;

	if (sg_cfgld_llong(ld, grp, "rpm", &l->rpm, 0, 100000000) == -1 ||
	    sg_cfgld_llong(ld, grp, "tpm", &l->tpm, 0, 1LL << 40) == -1 ||
	    read_money(ld, grp, "budget", &l->budget, 1e9, NULL) == -1 ||
	    sg_cfgld_llong(ld, grp, "sandbox_seconds", &l->sandbox_seconds, 0,
	    1LL << 40) == -1 ||
	    sg_cfgld_word(ld, grp, "budget_period", &period, periods) == -1)
		return -1;
	for (i = 0; period != NULL && periods[i] != NULL; i++)
		if (strcmp(period, periods[i]) == 0)
			l->period = (int)i;
	free(period);
	return 0;
}

static int
load_admin(struct sg_cfgld *ld, const config_setting_t *e, void *item)
{
	struct sg_cfg_key *k = item;
	char *key = NULL, *hash = NULL;
	int rc;

	rc = sg_cfgld_str(ld, e, "name", &k->name, 1) == -1 ||
	    sg_cfgld_secret(ld, e, "key", &key, &k->problem) == -1 ||
	    sg_cfgld_str(ld, e, "key_sha256", &hash, 0) == -1 ||
	    sg_cfgld_key_hash(ld, e, k, key, hash) == -1 ? -1 : 0;
	sg_cfg_limits_unset(&k->limits);
	free(key);
	free(hash);
	return rc;
}

/* auth.limits and auth.admin_keys. */
int
sg_cfgld_auth_usage(struct sg_cfgld *ld, const config_setting_t *g)
{
	struct sg_cfg *cfg = ld->cfg;
	config_setting_t *s;

	if ((s = config_setting_get_member(g, "limits")) != NULL) {
		if (!config_setting_is_group(s))
			return sg_cfgld_fail(ld, s, "auth.limits must be a group "
			    "{ ... }");
		sg_cfgld_check_keys(ld, s, limit_keys, "auth.limits");
		if (sg_cfgld_limits(ld, s, &cfg->auth.limits) == -1)
			return -1;
	}
	if ((s = config_setting_get_member(g, "admin_keys")) == NULL)
		return 0;
	return sg_cfgld_list(ld, s, "auth.admin_keys", admin_keys,
	    sizeof(struct sg_cfg_key), &cfg->auth.admins, &cfg->auth.nadmins,
	    load_admin);
}

/* The price group of e: NULL when absent, or on error (*rc). */
static const config_setting_t *
price_group(struct sg_cfgld *ld, const config_setting_t *e, const char *what,
    int *rc)
{
	config_setting_t *s = config_setting_get_member(e, "price");

	*rc = 0;
	if (s == NULL)
		return NULL;
	if (!config_setting_is_group(s)) {
		*rc = sg_cfgld_fail(ld, s, "%s: price must be a group { ... }",
		    what);
		return NULL;
	}
	return s;
}

int
sg_cfgld_model_price(struct sg_cfgld *ld, const config_setting_t *e,
    struct sg_cfg_model *m)
{
	const config_setting_t *p;
	int rc;

	if ((p = price_group(ld, e, m->name, &rc)) == NULL)
		return rc;
	sg_cfgld_check_keys(ld, p, model_price_keys, "models[].price");
	return read_money(ld, p, "input", &m->price.input, 1e6, NULL) == -1 ||
	    read_money(ld, p, "cached_input", &m->price.cached_input, 1e6,
	    &m->price.cached_set) == -1 ||
	    read_money(ld, p, "output", &m->price.output, 1e6, NULL) == -1 ?
	    -1 : 0;
}

int
sg_cfgld_tool_price(struct sg_cfgld *ld, const config_setting_t *e,
    struct sg_tool *t)
{
	const config_setting_t *p;
	int rc;

	if ((p = price_group(ld, e, t->name, &rc)) == NULL)
		return rc;
	sg_cfgld_check_keys(ld, p, tool_price_keys, "sandbox_tools[].price");
	return read_money(ld, p, "per_session", &t->price_session, 1e6,
	    NULL) == -1 || read_money(ld, p, "per_hour", &t->price_hour, 1e6,
	    NULL) == -1 ? -1 : 0;
}

int
sg_cfgld_usage(struct sg_cfgld *ld, const config_setting_t *g)
{
	sg_cfgld_check_keys(ld, g, usage_keys, "usage");
	return sg_cfgld_int(ld, g, "retention", &ld->cfg->usage.retention,
	    3600, 86400 * 3650) == -1 || sg_cfgld_int(ld, g, "traces",
	    &ld->cfg->usage.traces, 0, 86400 * 3650) == -1 ? -1 : 0;
}

/*
 * console.path: an absolute path ending in "/", of plain segments: it is
 * matched as a prefix of the route path and must not hide an API route.
 */
static int
console_path_ok(const char *p)
{
	size_t n = strlen(p);

	if (n < 2 || p[0] != '/' || p[n - 1] != '/' || n > 64 ||
	    strstr(p, "//") != NULL || strstr(p, "/.") != NULL ||
	    strncmp(p, "/v1/", 4) == 0 || strcmp(p, "/healthz/") == 0 ||
	    strcmp(p, "/metrics/") == 0)
		return 0;
	return strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789/_.-") == n;
}

int
sg_cfgld_console(struct sg_cfgld *ld, const config_setting_t *g)
{
	char *path = NULL;

	sg_cfgld_check_keys(ld, g, console_keys, "console");
	if (sg_cfgld_bool(ld, g, "enabled", &ld->cfg->console.enabled) == -1 ||
	    sg_cfgld_str(ld, g, "path", &path, 0) == -1)
		return -1;
	if (path == NULL)
		return 0;
	if (!console_path_ok(path)) {
		free(path);
		return sg_cfgld_fail(ld, config_setting_get_member(g, "path"),
		    "console.path must be a path such as \"/console/\": "
		    "starting and ending with \"/\", of letters, digits and "
		    "\"_.-\", and not under /v1/");
	}
	free(ld->cfg->console.path);
	ld->cfg->console.path = path;
	return 0;
}

/* background.runners: processes the master keeps (SG_RUNNERS_MAX at
 * most, fcgi/); each holds a store connection and one job at a time. */
int
sg_cfgld_background(struct sg_cfgld *ld, const config_setting_t *g)
{
	sg_cfgld_check_keys(ld, g, background_keys, "background");
	_Static_assert(SG_CFG_RUNNERS_MAX == 64, "the range below and the docs");
	return sg_cfgld_int(ld, g, "runners", &ld->cfg->background.runners, 0,
	    64) == -1 || sg_cfgld_int(ld, g, "max_per_key",
	    &ld->cfg->background.max_per_key, 0, 100000) == -1 ? -1 : 0;
}

/*
 * mcp.path: an absolute path of plain segments, no trailing "/", not
 * under /v1/ nor the probes': matched exactly (the transport has one
 * endpoint).
 */
static int
mcp_path_ok(const char *p)
{
	size_t n = strlen(p);

	if (n < 2 || p[0] != '/' || p[n - 1] == '/' || n > 64 ||
	    strstr(p, "//") != NULL || strstr(p, "/.") != NULL ||
	    strncmp(p, "/v1/", 4) == 0 || strcmp(p, "/v1") == 0 ||
	    strcmp(p, "/healthz") == 0 || strcmp(p, "/metrics") == 0)
		return 0;
	return strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789/_.-") == n;
}

int
sg_cfgld_mcp(struct sg_cfgld *ld, const config_setting_t *g)
{
	char *path = NULL;

	sg_cfgld_check_keys(ld, g, mcp_keys, "mcp");
	if (sg_cfgld_bool(ld, g, "enabled", &ld->cfg->mcp.enabled) == -1 ||
	    sg_cfgld_str(ld, g, "path", &path, 0) == -1 ||
	    sg_cfgld_str(ld, g, "sandbox_tool", &ld->cfg->mcp.sandbox_tool,
	    0) == -1) {
		free(path);
		return -1;
	}
	if (path == NULL)
		return 0;
	if (!mcp_path_ok(path)) {
		free(path);
		return sg_cfgld_fail(ld, config_setting_get_member(g, "path"),
		    "mcp.path must be a path such as \"/mcp\": starting with "
		    "\"/\", not ending with one, of letters, digits and "
		    "\"_.-\", and not under /v1/");
	}
	free(ld->cfg->mcp.path);
	ld->cfg->mcp.path = path;
	return 0;
}

/* An admin key is never a tenant: the same secret in both is a mistake
 * that would hand a tenant the admin API, or the admin a tenant's data. */
int
sg_cfgld_admins_apart(struct sg_cfgld *ld, const config_t *lc)
{
	struct sg_cfg *cfg = ld->cfg;
	size_t i, j;

	for (i = 0; i < cfg->auth.nadmins; i++) {
		const struct sg_cfg_key *a = &cfg->auth.admins[i];

		for (j = 0; j < i; j++)
			if (strcmp(a->name, cfg->auth.admins[j].name) == 0)
				return sg_cfgld_fail(ld, config_lookup(lc,
				    "auth.admin_keys"), "admin key %s is "
				    "defined twice", a->name);
		for (j = 0; a->sha256[0] != '\0' && j < cfg->auth.nkeys; j++)
			if (strcmp(a->sha256, cfg->auth.keys[j].sha256) == 0)
				return sg_cfgld_fail(ld, config_lookup(lc,
				    "auth.admin_keys"), "admin key %s is also "
				    "key %s: an admin key is never a tenant's",
				    a->name, cfg->auth.keys[j].name);
	}
	return 0;
}

void
sg_cfg_limits_of(const struct sg_cfg *cfg, const struct sg_cfg_limits *own,
    struct sg_cfg_limits *out)
{
	const struct sg_cfg_limits *d = &cfg->auth.limits;

	*out = *d;
	if (own == NULL)
		return;
	if (own->rpm >= 0)
		out->rpm = own->rpm;
	if (own->tpm >= 0)
		out->tpm = own->tpm;
	if (own->budget >= 0)
		out->budget = own->budget;
	if (own->period >= 0)
		out->period = own->period;
	if (own->sandbox_seconds >= 0)
		out->sandbox_seconds = own->sandbox_seconds;
}
