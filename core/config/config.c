/*
 * sg_cfg: the load, the defaults and the rules that span settings. The
 * readers of single settings are in config_read.c, the groups in
 * config_parts.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

#define SG_DEFAULT_CONFIG "/etc/sandgate/sandgate.conf"

static const char *const top_keys[] = { "server", "store", "auth", "models",
	"sandbox_tools", "interception", "sessions", "responses", "files",
	"usage", "console", "background", "mcp", NULL };

/* Element i of the list at path: where a duplicate is reported. */
static const config_setting_t *
elem(const config_t *lc, const char *path, size_t i)
{
	const config_setting_t *l = config_lookup(lc, path);

	return l != NULL ? config_setting_get_elem(l, (unsigned)i) : NULL;
}

static int
set_defaults(struct sg_cfg *cfg)
{
	cfg->server.workers_min = 4;
	cfg->server.workers_max = 64;
	cfg->server.max_body_bytes = 8 << 20;
	cfg->server.request_timeout = 600;
	cfg->server.idle_retire = 30;
	cfg->server.grace = 30;
	cfg->server.socket_mode = -1;
	cfg->server.read_timeout = 30;
	cfg->server.recycle_mb = 512;
	cfg->server.queue_timeout = 30;
	cfg->interception.enabled = 1;
	cfg->interception.max_agentic_loops = 4;
	cfg->interception.exec_timeout = 120;
	/* As OpenAI's auto containers: a follow-up finds the variables and
	 * files of the turns before it, for 20 idle minutes. */
	cfg->interception.reuse_conversation = 1;
	cfg->sessions.max_per_key = 10;
	cfg->sessions.ttl = 1200;
	cfg->responses.retention = 30 * 86400;
	cfg->files.max_bytes = 512LL << 20;
	cfg->files.max_bytes_per_key = 2LL << 30;
	cfg->files.max_files_per_key = 10000;
	cfg->files.retention = 30 * 86400;
	cfg->auth.limits.period = SG_PERIOD_MONTH;
	cfg->usage.retention = 400 * 86400;
	cfg->usage.traces = 7 * 86400;
	cfg->console.enabled = 1;
	cfg->console.path = strdup("/console/");
	cfg->mcp.enabled = 1;
	cfg->mcp.path = strdup("/mcp");
	cfg->background.runners = 2;
	cfg->background.max_per_key = 4;
	cfg->server.mount_prefix = strdup("");
	cfg->store.path = strdup("/var/lib/sandgate/sandgate.db");
	cfg->interception.tool_name = strdup("litellm_code_execution");
	return cfg->server.mount_prefix && cfg->store.path && cfg->console.path &&
	    cfg->mcp.path &&
	    cfg->interception.tool_name ? 0 : -1;
}

static int
unique_names(struct sg_cfgld *ld, const config_t *lc)
{
	struct sg_cfg *cfg = ld->cfg;
	size_t i, j;

	for (i = 0; i < cfg->nmodels; i++)
		for (j = 0; j < i; j++)
			if (strcmp(cfg->models[i].name, cfg->models[j].name) == 0)
				return sg_cfgld_fail(ld, elem(lc, "models", i),
				    "model %s is defined twice",
				    cfg->models[i].name);
	for (i = 0; i < cfg->ntools; i++)
		for (j = 0; j < i; j++)
			if (strcmp(cfg->tools[i].name, cfg->tools[j].name) == 0)
				return sg_cfgld_fail(ld, elem(lc,
				    "sandbox_tools", i), "sandbox tool %s is "
				    "defined twice", cfg->tools[i].name);
	for (i = 0; i < cfg->auth.nkeys; i++)
		for (j = 0; j < i; j++)
			if (strcmp(cfg->auth.keys[i].name,
			    cfg->auth.keys[j].name) == 0)
				return sg_cfgld_fail(ld, elem(lc, "auth.keys", i),
				    "key %s is defined twice",
				    cfg->auth.keys[i].name);
	return 0;
}

/* Every tool a key names must exist: a typo would lock the key out. */
static int
key_tools(struct sg_cfgld *ld, const config_t *lc)
{
	struct sg_cfg *cfg = ld->cfg;
	size_t i, j;

	for (i = 0; i < cfg->auth.nkeys; i++)
		for (j = 0; j < cfg->auth.keys[i].ntools; j++)
			if (sg_cfg_tool(cfg, cfg->auth.keys[i].tools[j]) == NULL)
				return sg_cfgld_fail(ld, sg_cfgld_at(elem(lc,
				    "auth.keys", i), "tools"), "key %s: tool %s "
				    "is not in sandbox_tools",
				    cfg->auth.keys[i].name,
				    cfg->auth.keys[i].tools[j]);
	return 0;
}

/*
 * The tool intercepted code runs in: the one named, else "local" when
 * there is one, else the first tool. Only a name the file wrote can be
 * wrong, so only then is it an error (pointing at that line).
 */
static int
interception_tool(struct sg_cfgld *ld, const config_t *lc)
{
	struct sg_cfg *cfg = ld->cfg;
	const config_setting_t *s = config_lookup(lc, "interception.sandbox_tool");
	const char *name = "local";

	if (s != NULL) {
		/* Enabled or not: the sandbox routes and `sandgate exec`
		 * default to it too. */
		if (cfg->ntools > 0 &&
		    sg_cfg_tool(cfg, cfg->interception.sandbox_tool) == NULL)
			return sg_cfgld_fail(ld, s, "interception.sandbox_tool "
			    "%s is not in sandbox_tools",
			    cfg->interception.sandbox_tool);
		return 0;
	}
	if (sg_cfg_tool(cfg, name) == NULL && cfg->ntools > 0)
		name = cfg->tools[0].name;
	if ((cfg->interception.sandbox_tool = strdup(name)) == NULL)
		return sg_cfgld_fail(ld, config_root_setting(lc), "out of memory");
	return 0;
}

/* The tool MCP sessions' sandboxes are of: the one named, else the
 * intercepted code's. */
static int
mcp_tool(struct sg_cfgld *ld, const config_t *lc)
{
	struct sg_cfg *cfg = ld->cfg;

	if (cfg->mcp.sandbox_tool != NULL) {
		if (sg_cfg_tool(cfg, cfg->mcp.sandbox_tool) == NULL)
			return sg_cfgld_fail(ld, config_lookup(lc,
			    "mcp.sandbox_tool"), "mcp.sandbox_tool %s is not in "
			    "sandbox_tools", cfg->mcp.sandbox_tool);
		return 0;
	}
	if (cfg->interception.sandbox_tool != NULL &&
	    (cfg->mcp.sandbox_tool = strdup(cfg->interception.sandbox_tool)) ==
	    NULL)
		return sg_cfgld_fail(ld, config_root_setting(lc), "out of memory");
	return 0;
}

static int
validate(struct sg_cfgld *ld, const config_t *lc)
{
	if (unique_names(ld, lc) == -1 || key_tools(ld, lc) == -1 ||
	    interception_tool(ld, lc) == -1 || mcp_tool(ld, lc) == -1 ||
	    sg_cfgld_admins_apart(ld, lc) == -1)
		return -1;
	if (ld->cfg->interception.tool_name[0] == '\0')
		return sg_cfgld_fail(ld, sg_cfgld_at(config_lookup(lc,
		    "interception"), "tool_name"),
		    "interception.tool_name must not be empty");
	return 0;
}

/* Local sandboxes live in a directory beside the store, and files too
 * unless files.dir says elsewhere. */
static int
set_local_dirs(struct sg_cfg *cfg)
{
	const char *slash = strrchr(cfg->store.path, '/');
	size_t i;

	if (cfg->files.dir == NULL && asprintf(&cfg->files.dir, "%.*s/files",
	    slash != NULL ? (int)(slash - cfg->store.path) : 1,
	    slash != NULL ? cfg->store.path : ".") == -1) {
		cfg->files.dir = NULL;
		return -1;
	}
	for (i = 0; i < cfg->ntools; i++) {
		if (cfg->tools[i].provider != SG_PROVIDER_LOCAL)
			continue;
		if (asprintf(&cfg->tools[i].local_dir, "%.*s/local",
		    slash != NULL ? (int)(slash - cfg->store.path) : 1,
		    slash != NULL ? cfg->store.path : ".") == -1) {
			cfg->tools[i].local_dir = NULL;
			return -1;
		}
	}
	return 0;
}

static int
load_root(struct sg_cfgld *ld, const config_t *lc)
{
	static const struct {
		const char *name;
		int (*load)(struct sg_cfgld *, const config_setting_t *);
		int group;
	} parts[] = {
		{ "server", sg_cfgld_server, 1 },
		{ "store", sg_cfgld_store, 1 },
		{ "auth", sg_cfgld_auth, 1 },
		{ "models", sg_cfgld_models, 0 },
		{ "sandbox_tools", sg_cfgld_tools, 0 },
		{ "interception", sg_cfgld_interception, 1 },
		{ "sessions", sg_cfgld_sessions, 1 },
		{ "responses", sg_cfgld_responses, 1 },
		{ "files", sg_cfgld_files, 1 },
		{ "usage", sg_cfgld_usage, 1 },
		{ "console", sg_cfgld_console, 1 },
		{ "background", sg_cfgld_background, 1 },
		{ "mcp", sg_cfgld_mcp, 1 },
	};
	config_setting_t *s;
	size_t i;

	sg_cfgld_check_keys(ld, config_root_setting(lc), top_keys, "");
	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if ((s = config_lookup(lc, parts[i].name)) == NULL)
			continue;
		if (parts[i].group && !config_setting_is_group(s))
			return sg_cfgld_fail(ld, s, "%s must be a group { ... }",
			    parts[i].name);
		if (parts[i].load(ld, s) == -1)
			return -1;
	}
	if (set_local_dirs(ld->cfg) == -1)
		return sg_cfgld_fail(ld, config_root_setting(lc), "out of memory");
	return validate(ld, lc);
}

/*
 * A config file holding a NUL byte is refused before libconfig reads it:
 * its lexer loses track there (and leaks what it was building), and no
 * text editor writes one on purpose. 0, or -1 with err.
 */
static int
nul_line(const char *path, char *err, size_t errsz)
{
	char buf[8192], *p;
	int line = 1;
	size_t n, i;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		return 0;	/* libconfig says why */
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		if ((p = memchr(buf, '\0', n)) != NULL) {
			for (i = 0; i < (size_t)(p - buf); i++)
				line += buf[i] == '\n';
			fclose(f);
			snprintf(err, errsz, "%s:%d: a NUL byte: not a text file",
			    path, line);
			return -1;
		}
		for (i = 0; i < n; i++)
			line += buf[i] == '\n';
	}
	fclose(f);
	return 0;
}

int
sg_cfg_load(const char *path, struct sg_cfg **out, char *err, size_t errsz)
{
	struct sg_cfgld ld = { path, err, errsz, NULL };
	config_t lc;
	int rc;

	*out = NULL;
	if ((ld.cfg = calloc(1, sizeof(*ld.cfg))) == NULL ||
	    (ld.cfg->path = strdup(path)) == NULL || set_defaults(ld.cfg) == -1) {
		snprintf(err, errsz, "%s: out of memory", path);
		sg_cfg_free(ld.cfg);
		return -1;
	}
	if (nul_line(path, err, errsz) != 0) {
		sg_cfg_free(ld.cfg);
		return -1;
	}
	config_init(&lc);
	if (config_read_file(&lc, path) != CONFIG_TRUE) {
		if (config_error_type(&lc) == CONFIG_ERR_FILE_IO)
			snprintf(err, errsz, "%s: cannot read: %s", path,
			    strerror(errno));
		else
			snprintf(err, errsz, "%s:%d: %s",
			    config_error_file(&lc) ? config_error_file(&lc) : path,
			    config_error_line(&lc), config_error_text(&lc));
		rc = -1;
	} else
		rc = load_root(&ld, &lc);
	config_destroy(&lc);
	if (rc == -1) {
		sg_cfg_free(ld.cfg);
		return -1;
	}
	*out = ld.cfg;
	return 0;
}

static void
free_strings(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void
free_tool(struct sg_tool *t)
{
	free(t->name);
	free(t->api_key);
	free(t->api_key_problem);
	free(t->api_base);
	free(t->template);
	free(t->image);
	free(t->sandbox_url);
	free(t->isolation);
	free(t->kernel);
	free(t->local_dir);
}

void
sg_cfg_free(struct sg_cfg *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->auth.nkeys; i++) {
		free(cfg->auth.keys[i].name);
		free(cfg->auth.keys[i].problem);
		free_strings(cfg->auth.keys[i].tools, cfg->auth.keys[i].ntools);
	}
	for (i = 0; i < cfg->auth.nadmins; i++) {
		free(cfg->auth.admins[i].name);
		free(cfg->auth.admins[i].problem);
	}
	free(cfg->auth.admins);
	for (i = 0; i < cfg->nmodels; i++) {
		struct sg_cfg_model *m = &cfg->models[i];

		free(m->name);
		free(m->api_base);
		free(m->api_key);
		free(m->api_key_problem);
		free(m->model);
	}
	for (i = 0; i < cfg->ntools; i++)
		free_tool(&cfg->tools[i]);
	free_strings(cfg->warnings, cfg->nwarnings);
	free(cfg->auth.keys);
	free(cfg->models);
	free(cfg->tools);
	free(cfg->server.user);
	free(cfg->server.mount_prefix);
	free(cfg->server.socket_owner);
	free(cfg->store.path);
	free(cfg->store.url);
	free(cfg->store.box);
	free(cfg->interception.sandbox_tool);
	free(cfg->interception.tool_name);
	free(cfg->files.dir);
	free(cfg->console.path);
	free(cfg->mcp.path);
	free(cfg->mcp.sandbox_tool);
	free(cfg->path);
	free(cfg);
}

const char *
sg_cfg_default_path(const char *arg)
{
	const char *env;

	if (arg != NULL)
		return arg;
	if ((env = getenv("SANDGATE_CONFIG")) != NULL && *env != '\0')
		return env;
	return SG_DEFAULT_CONFIG;
}

const struct sg_cfg_model *
sg_cfg_model(const struct sg_cfg *cfg, const char *name)
{
	const struct sg_cfg_model *wild = NULL;
	size_t i;

	for (i = 0; i < cfg->nmodels; i++) {
		if (strcmp(cfg->models[i].name, name) == 0)
			return &cfg->models[i];
		if (wild == NULL && strcmp(cfg->models[i].name, "*") == 0)
			wild = &cfg->models[i];
	}
	return wild;
}

const struct sg_tool *
sg_cfg_tool(const struct sg_cfg *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->ntools; i++)
		if (strcmp(cfg->tools[i].name, name) == 0)
			return &cfg->tools[i];
	return NULL;
}

int
sg_cfg_key_limit(const struct sg_cfg *cfg, const struct sg_cfg_key *k)
{
	if (k != NULL && k->max_concurrent > 0)
		return k->max_concurrent;
	/* None set: no cap of its own; the queue shares the responders
	 * fairly between the keys that wait. */
	return cfg->auth.max_concurrent;
}

int
sg_cfg_key_may_use(const struct sg_cfg_key *k, const char *tool)
{
	size_t i;

	if (k == NULL || k->tools == NULL)
		return 1;
	for (i = 0; i < k->ntools; i++)
		if (strcmp(k->tools[i], tool) == 0)
			return 1;
	return 0;
}
