#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "config.h"
#include "../lib/util.h"

#define SG_DEFAULT_CONFIG "/etc/sandgate/sandgate.conf"
#define SECRET_FILE_MAX   65536

/* One load in progress: where errors go and the config being built. */
struct loader {
	const char	*file;
	char		*err;
	size_t		 errsz;
	struct sg_cfg	*cfg;
};

static const char *const top_keys[] = { "server", "store", "auth", "models",
	"sandbox_tools", "interception", "sessions", NULL };
static const char *const server_keys[] = { "workers", "user", "mount_prefix",
	"max_body_bytes", "request_timeout", "idle_retire", "grace",
	"socket_mode", "socket_owner", NULL };
static const char *const store_keys[] = { "path", NULL };
static const char *const auth_keys[] = { "keys", "allow_anonymous", NULL };
static const char *const key_keys[] = { "name", "key", "key_sha256", NULL };
static const char *const model_keys[] = { "name", "api_base", "api_key",
	"model", "max_agentic_loops", "timeout", NULL };
static const char *const tool_keys[] = { "name", "provider", "api_key",
	"api_base", "template", "image", "sandbox_url", "isolation",
	"memory_mb", "disk_mb", "max_procs", "allow_internet_access", "cpu",
	NULL };
static const char *const icpt_keys[] = { "enabled", "sandbox_tool",
	"max_agentic_loops", "tool_name", "exec_timeout", NULL };
static const char *const sess_keys[] = { "max_per_key", "ttl", NULL };

static int
line_of(const config_setting_t *s)
{
	return s != NULL ? (int)config_setting_source_line(s) : 0;
}

/* "http://x/v1/" and "http://x/v1" are one base: paths are appended. */
static void
strip_slashes(char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
}

/* The setting named name in grp, else grp: where an error points. */
static const config_setting_t *
at(const config_setting_t *grp, const char *name)
{
	const config_setting_t *s = config_setting_get_member(grp, name);

	return s != NULL ? s : grp;
}

/* Element i of the list at path: where a duplicate is reported. */
static const config_setting_t *
elem(const config_t *lc, const char *path, size_t i)
{
	const config_setting_t *l = config_lookup(lc, path);

	return l != NULL ? config_setting_get_elem(l, (unsigned)i) : NULL;
}

static int
fail(struct loader *ld, const config_setting_t *s, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ld->err, ld->errsz, "%s:%d: %s", ld->file, line_of(s), msg);
	return -1;
}

static void
warn(struct loader *ld, const config_setting_t *s, const char *fmt, ...)
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

static void
check_keys(struct loader *ld, const config_setting_t *grp,
    const char *const known[], const char *where)
{
	int i, n = config_setting_length(grp);
	size_t k;

	for (i = 0; i < n; i++) {
		config_setting_t *m = config_setting_get_elem(grp, (unsigned)i);
		const char *name = config_setting_name(m);

		for (k = 0; known[k] != NULL; k++)
			if (strcmp(known[k], name) == 0)
				break;
		if (known[k] == NULL)
			warn(ld, m, "unknown setting %s%s%s", where,
			    *where != '\0' ? "." : "", name);
	}
}

static int
get_str(struct loader *ld, const config_setting_t *grp, const char *name,
    char **out, int required)
{
	config_setting_t *s = config_setting_get_member(grp, name);

	if (s == NULL) {
		if (required)
			return fail(ld, grp, "missing setting %s", name);
		return 0;
	}
	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return fail(ld, s, "%s must be a string", name);
	free(*out);
	if ((*out = strdup(config_setting_get_string(s))) == NULL)
		return fail(ld, s, "out of memory");
	return 0;
}

static int
get_int(struct loader *ld, const config_setting_t *grp, const char *name,
    int *out, long long min, long long max)
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
		return fail(ld, s, "%s must be an integer", name);
	if (v < min || v > max)
		return fail(ld, s, "%s must be between %lld and %lld", name,
		    min, max);
	*out = (int)v;
	return 0;
}

static int
get_bool(struct loader *ld, const config_setting_t *grp, const char *name,
    int *out)
{
	config_setting_t *s = config_setting_get_member(grp, name);

	if (s == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_BOOL)
		return fail(ld, s, "%s must be true or false", name);
	*out = config_setting_get_bool(s);
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

/* A secret setting: resolved into *out, or NULL with *problem set. */
static int
get_secret(struct loader *ld, const config_setting_t *grp, const char *name,
    char **out, char **problem)
{
	config_setting_t *s = config_setting_get_member(grp, name);
	char *spec = NULL, *why;
	int rc;

	if (get_str(ld, grp, name, &spec, 0) == -1)
		return -1;
	if (spec == NULL)
		return 0;
	rc = sg_cfg_secret(spec, out, &why);
	free(spec);
	if (rc == -1)
		return fail(ld, s, "out of memory");
	if (why == NULL)
		return 0;
	warn(ld, s, "%s: %s", name, why);
	/* Several secrets of one entry share a reason: keep the first. */
	if (*problem == NULL)
		*problem = why;
	else
		free(why);
	return 0;
}

static int
load_server(struct loader *ld, const config_setting_t *g)
{
	struct sg_cfg *cfg = ld->cfg;
	config_setting_t *w;
	char *mode = NULL;
	long long bytes;

	check_keys(ld, g, server_keys, "server");
	if ((w = config_setting_get_member(g, "workers")) != NULL) {
		if (config_setting_is_array(w) && config_setting_length(w) == 2) {
			cfg->server.workers_min = config_setting_get_int_elem(w, 0);
			cfg->server.workers_max = config_setting_get_int_elem(w, 1);
		} else if (config_setting_type(w) == CONFIG_TYPE_INT)
			cfg->server.workers_min = cfg->server.workers_max =
			    config_setting_get_int(w);
		else
			return fail(ld, w, "workers must be N or [MIN, MAX]");
		if (cfg->server.workers_min < 1 || cfg->server.workers_max > 256 ||
		    cfg->server.workers_min > cfg->server.workers_max)
			return fail(ld, w, "workers needs 1 <= MIN <= MAX <= 256");
	}
	if ((w = config_setting_get_member(g, "max_body_bytes")) != NULL) {
		bytes = config_setting_get_int64(w);
		if (config_setting_type(w) == CONFIG_TYPE_INT)
			bytes = config_setting_get_int(w);
		if (bytes < 1024 || bytes > (1LL << 31))
			return fail(ld, w, "max_body_bytes must be between "
			    "1024 and 2147483648");
		cfg->server.max_body_bytes = (size_t)bytes;
	}
	/* socket_mode last: it is the one string held across returns. */
	if (get_str(ld, g, "user", &cfg->server.user, 0) == -1 ||
	    get_str(ld, g, "mount_prefix", &cfg->server.mount_prefix, 0) == -1 ||
	    get_int(ld, g, "request_timeout", &cfg->server.request_timeout,
	    1, 86400) == -1 ||
	    get_int(ld, g, "idle_retire", &cfg->server.idle_retire, 1,
	    86400) == -1 ||
	    get_int(ld, g, "grace", &cfg->server.grace, 0, 86400) == -1 ||
	    get_str(ld, g, "socket_owner", &cfg->server.socket_owner, 0) == -1 ||
	    get_str(ld, g, "socket_mode", &mode, 0) == -1)
		return -1;
	if (mode != NULL) {
		char *end;
		long m = strtol(mode, &end, 8);
		int bad = *end != '\0' || end == mode || m < 0 || m > 0777;

		free(mode);
		if (bad)
			return fail(ld, config_setting_get_member(g,
			    "socket_mode"), "socket_mode must be octal, "
			    "like \"0660\"");
		cfg->server.socket_mode = (int)m;
	}
	/* A trailing slash would make "/v1/..." fail to match. */
	if (cfg->server.mount_prefix != NULL) {
		size_t n = strlen(cfg->server.mount_prefix);

		while (n > 0 && cfg->server.mount_prefix[n - 1] == '/')
			cfg->server.mount_prefix[--n] = '\0';
	}
	return 0;
}

/*
 * A list of groups ( {...}, ... ): each entry is checked for unknown keys
 * and read by fn into the next item of an array of itemsz-byte items.
 * The array is stored in *arrayp (a pointer of the caller's item type)
 * before any entry is read, so sg_cfg_free frees what a failure leaves.
 */
static int
load_list(struct loader *ld, const config_setting_t *list, const char *what,
    const char *const known[], size_t itemsz, void *arrayp, size_t *n,
    int (*fn)(struct loader *, const config_setting_t *, void *))
{
	char where[64];
	char *items;
	int i, len;

	if (!config_setting_is_list(list))
		return fail(ld, list, "%s must be a list ( {...}, ... )", what);
	len = config_setting_length(list);
	if ((items = calloc((size_t)len + 1, itemsz)) == NULL)
		return fail(ld, list, "out of memory");
	memcpy(arrayp, &items, sizeof(items));
	snprintf(where, sizeof(where), "%s[]", what);
	for (i = 0; i < len; i++) {
		config_setting_t *e = config_setting_get_elem(list, (unsigned)i);

		if (!config_setting_is_group(e))
			return fail(ld, e, "%s entries must be { ... }", what);
		check_keys(ld, e, known, where);
		if (fn(ld, e, items + (*n)++ * itemsz) == -1)
			return -1;
	}
	return 0;
}

static int
load_key(struct loader *ld, const config_setting_t *e, void *item)
{
	struct sg_cfg_key *k = item;
	char *key = NULL, *hash = NULL;

	if (get_str(ld, e, "name", &k->name, 1) == -1 ||
	    get_secret(ld, e, "key", &key, &k->problem) == -1 ||
	    get_str(ld, e, "key_sha256", &hash, 0) == -1) {
		free(key);
		return -1;
	}
	if (key != NULL && hash != NULL) {
		free(key);
		free(hash);
		return fail(ld, e, "key %s: set key or key_sha256, not both",
		    k->name);
	}
	if (key != NULL) {
		sg_sha256_hex(key, strlen(key), k->sha256);
		free(key);
	} else if (hash != NULL) {
		size_t j, len = strlen(hash);

		for (j = 0; j < len; j++)
			if (!strchr("0123456789abcdefABCDEF", hash[j]))
				break;
		if (len != 64 || j != len) {
			free(hash);
			return fail(ld, at(e, "key_sha256"), "key %s: "
			    "key_sha256 must be "
			    "64 hex digits", k->name);
		}
		for (j = 0; j < len; j++)
			k->sha256[j] = (char)(hash[j] | 0x20);
		k->sha256[64] = '\0';
		free(hash);
	} else if (k->problem == NULL)
		return fail(ld, e, "key %s: needs key or key_sha256",
		    k->name);
	return 0;
}

static int
load_keys(struct loader *ld, const config_setting_t *list)
{
	return load_list(ld, list, "auth.keys", key_keys, sizeof(struct sg_cfg_key),
	    &ld->cfg->auth.keys, &ld->cfg->auth.nkeys, load_key);
}

static int
load_auth(struct loader *ld, const config_setting_t *g)
{
	config_setting_t *keys;

	check_keys(ld, g, auth_keys, "auth");
	if (get_bool(ld, g, "allow_anonymous", &ld->cfg->auth.allow_anonymous) == -1)
		return -1;
	if ((keys = config_setting_get_member(g, "keys")) != NULL)
		return load_keys(ld, keys);
	return 0;
}

static int
load_model(struct loader *ld, const config_setting_t *e, void *item)
{
	struct sg_cfg_model *m = item;

	m->timeout = 600;
	if (get_str(ld, e, "name", &m->name, 1) == -1 ||
	    get_secret(ld, e, "api_base", &m->api_base,
	    &m->api_key_problem) == -1 ||
	    get_secret(ld, e, "api_key", &m->api_key,
	    &m->api_key_problem) == -1 ||
	    get_str(ld, e, "model", &m->model, 0) == -1 ||
	    get_int(ld, e, "max_agentic_loops", &m->max_agentic_loops,
	    1, 100) == -1 ||
	    get_int(ld, e, "timeout", &m->timeout, 1, 86400) == -1)
		return -1;
	if (m->api_base == NULL && m->api_key_problem == NULL)
		return fail(ld, e, "model %s: missing api_base", m->name);
	if (m->api_base != NULL && strncmp(m->api_base, "http://", 7) != 0 &&
	    strncmp(m->api_base, "https://", 8) != 0)
		return fail(ld, at(e, "api_base"), "model %s: api_base must "
		    "start with http:// or https://", m->name);
	strip_slashes(m->api_base);
	return 0;
}

static int
load_models(struct loader *ld, const config_setting_t *list)
{
	return load_list(ld, list, "models", model_keys,
	    sizeof(struct sg_cfg_model), &ld->cfg->models, &ld->cfg->nmodels,
	    load_model);
}

static int
load_tool(struct loader *ld, const config_setting_t *e, void *item)
{
	struct sg_tool *t = item;
	char *prov = NULL;
	int rc;

	t->memory_mb = 1024;
	t->disk_mb = 512;
	t->max_procs = 64;
	if (get_str(ld, e, "name", &t->name, 1) == -1 ||
	    get_str(ld, e, "provider", &prov, 1) == -1)
		return -1;
	rc = sg_provider_parse(prov, &t->provider);
	free(prov);
	if (rc == -1)
		return fail(ld, at(e, "provider"), "tool %s: provider must be "
		    "local, e2b or "
		    "opensandbox", t->name);
	if (get_secret(ld, e, "api_key", &t->api_key, &t->api_key_problem) == -1 ||
	    get_secret(ld, e, "api_base", &t->api_base, &t->api_key_problem) == -1 ||
	    get_str(ld, e, "template", &t->template, 0) == -1 ||
	    get_str(ld, e, "image", &t->image, 0) == -1 ||
	    get_str(ld, e, "sandbox_url", &t->sandbox_url, 0) == -1 ||
	    get_str(ld, e, "isolation", &t->isolation, 0) == -1 ||
	    get_int(ld, e, "memory_mb", &t->memory_mb, 16, 1 << 20) == -1 ||
	    get_int(ld, e, "disk_mb", &t->disk_mb, 1, 1 << 20) == -1 ||
	    get_int(ld, e, "max_procs", &t->max_procs, 1, 65536) == -1 ||
	    get_int(ld, e, "cpu", &t->cpu, 0, 1024) == -1 ||
	    get_bool(ld, e, "allow_internet_access",
	    &t->allow_internet_access) == -1)
		return -1;
	/* The store keeps a tool's name in 64 bytes. */
	if (strlen(t->name) > 63)
		return fail(ld, at(e, "name"), "tool %.20s...: a name has at "
		    "most 63 characters", t->name);
	strip_slashes(t->api_base);
	strip_slashes(t->sandbox_url);
	if (t->isolation != NULL && strcmp(t->isolation, "bubblewrap") != 0 &&
	    strcmp(t->isolation, "none") != 0)
		return fail(ld, at(e, "isolation"), "tool %s: isolation must be "
		    "\"bubblewrap\" "
		    "or \"none\"", t->name);
	return 0;
}

static int
load_tools(struct loader *ld, const config_setting_t *list)
{
	return load_list(ld, list, "sandbox_tools", tool_keys,
	    sizeof(struct sg_tool), &ld->cfg->tools, &ld->cfg->ntools,
	    load_tool);
}

static int
load_interception(struct loader *ld, const config_setting_t *g)
{
	struct sg_cfg *cfg = ld->cfg;

	check_keys(ld, g, icpt_keys, "interception");
	return get_bool(ld, g, "enabled", &cfg->interception.enabled) == -1 ||
	    get_str(ld, g, "sandbox_tool", &cfg->interception.sandbox_tool,
	    0) == -1 ||
	    get_int(ld, g, "max_agentic_loops",
	    &cfg->interception.max_agentic_loops, 1, 100) == -1 ||
	    get_str(ld, g, "tool_name", &cfg->interception.tool_name, 0) == -1 ||
	    get_int(ld, g, "exec_timeout", &cfg->interception.exec_timeout, 1,
	    86400) == -1 ? -1 : 0;
}

static int
load_sessions(struct loader *ld, const config_setting_t *g)
{
	check_keys(ld, g, sess_keys, "sessions");
	return get_int(ld, g, "max_per_key", &ld->cfg->sessions.max_per_key, 1,
	    10000) == -1 || get_int(ld, g, "ttl", &ld->cfg->sessions.ttl, 1,
	    86400 * 30) == -1 ? -1 : 0;
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
	cfg->interception.enabled = 1;
	cfg->interception.max_agentic_loops = 4;
	cfg->interception.exec_timeout = 120;
	cfg->sessions.max_per_key = 10;
	cfg->sessions.ttl = 900;
	cfg->server.mount_prefix = strdup("");
	cfg->store.path = strdup("/var/lib/sandgate/sandgate.db");
	cfg->interception.sandbox_tool = strdup("local");
	cfg->interception.tool_name = strdup("litellm_code_execution");
	return cfg->server.mount_prefix && cfg->store.path &&
	    cfg->interception.sandbox_tool && cfg->interception.tool_name ? 0 : -1;
}

/* Cross-setting rules, checked once everything is read. */
static int
validate(struct loader *ld, const config_t *lc)
{
	struct sg_cfg *cfg = ld->cfg;
	size_t i, j;

	for (i = 0; i < cfg->nmodels; i++)
		for (j = 0; j < i; j++)
			if (strcmp(cfg->models[i].name, cfg->models[j].name) == 0)
				return fail(ld, elem(lc, "models", i), "model %s "
				    "is defined twice",
				    cfg->models[i].name);
	for (i = 0; i < cfg->ntools; i++)
		for (j = 0; j < i; j++)
			if (strcmp(cfg->tools[i].name, cfg->tools[j].name) == 0)
				return fail(ld, elem(lc, "sandbox_tools", i),
				    "sandbox tool %s is "
				    "defined twice", cfg->tools[i].name);
	for (i = 0; i < cfg->auth.nkeys; i++)
		for (j = 0; j < i; j++)
			if (strcmp(cfg->auth.keys[i].name,
			    cfg->auth.keys[j].name) == 0)
				return fail(ld, elem(lc, "auth.keys", i), "key %s "
				    "is defined twice",
				    cfg->auth.keys[i].name);
	if (cfg->interception.enabled && cfg->ntools > 0 &&
	    sg_cfg_tool(cfg, cfg->interception.sandbox_tool) == NULL)
		return fail(ld, at(config_lookup(lc, "interception"),
		    "sandbox_tool"), "interception.sandbox_tool %s is not in sandbox_tools",
		    cfg->interception.sandbox_tool);
	if (cfg->interception.tool_name[0] == '\0')
		return fail(ld, at(config_lookup(lc, "interception"),
		    "tool_name"), "interception.tool_name must not be empty");
	return 0;
}

/* Local sandboxes live in a directory beside the store. */
static int
set_local_dirs(struct sg_cfg *cfg)
{
	const char *slash = strrchr(cfg->store.path, '/');
	size_t i;

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
load_root(struct loader *ld, const config_t *lc)
{
	static const struct {
		const char *name;
		int (*load)(struct loader *, const config_setting_t *);
		int group;
	} parts[] = {
		{ "server", load_server, 1 },
		{ "auth", load_auth, 1 },
		{ "models", load_models, 0 },
		{ "sandbox_tools", load_tools, 0 },
		{ "interception", load_interception, 1 },
		{ "sessions", load_sessions, 1 },
	};
	config_setting_t *s;
	size_t i;

	check_keys(ld, config_root_setting(lc), top_keys, "");
	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if ((s = config_lookup(lc, parts[i].name)) == NULL)
			continue;
		if (parts[i].group && !config_setting_is_group(s))
			return fail(ld, s, "%s must be a group { ... }",
			    parts[i].name);
		if (parts[i].load(ld, s) == -1)
			return -1;
	}
	if ((s = config_lookup(lc, "store")) != NULL) {
		if (!config_setting_is_group(s))
			return fail(ld, s, "store must be a group { ... }");
		check_keys(ld, s, store_keys, "store");
		if (get_str(ld, s, "path", &ld->cfg->store.path, 0) == -1)
			return -1;
	}
	if (set_local_dirs(ld->cfg) == -1)
		return fail(ld, config_root_setting(lc), "out of memory");
	return validate(ld, lc);
}

int
sg_cfg_load(const char *path, struct sg_cfg **out, char *err, size_t errsz)
{
	struct loader ld = { path, err, errsz, NULL };
	config_t lc;
	int rc;

	*out = NULL;
	if ((ld.cfg = calloc(1, sizeof(*ld.cfg))) == NULL ||
	    (ld.cfg->path = strdup(path)) == NULL || set_defaults(ld.cfg) == -1) {
		snprintf(err, errsz, "%s: out of memory", path);
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

void
sg_cfg_free(struct sg_cfg *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->auth.nkeys; i++) {
		free(cfg->auth.keys[i].name);
		free(cfg->auth.keys[i].problem);
	}
	for (i = 0; i < cfg->nmodels; i++) {
		struct sg_cfg_model *m = &cfg->models[i];

		free(m->name);
		free(m->api_base);
		free(m->api_key);
		free(m->api_key_problem);
		free(m->model);
	}
	for (i = 0; i < cfg->ntools; i++) {
		struct sg_tool *t = &cfg->tools[i];

		free(t->name);
		free(t->api_key);
		free(t->api_key_problem);
		free(t->api_base);
		free(t->template);
		free(t->image);
		free(t->sandbox_url);
		free(t->isolation);
		free(t->local_dir);
	}
	for (i = 0; i < cfg->nwarnings; i++)
		free(cfg->warnings[i]);
	free(cfg->warnings);
	free(cfg->auth.keys);
	free(cfg->models);
	free(cfg->tools);
	free(cfg->server.user);
	free(cfg->server.mount_prefix);
	free(cfg->server.socket_owner);
	free(cfg->store.path);
	free(cfg->interception.sandbox_tool);
	free(cfg->interception.tool_name);
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
