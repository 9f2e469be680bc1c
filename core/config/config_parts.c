/*
 * One loader per top-level group of the config (design §3.2, §3.4).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_int.h"
#include "../../lib/util.h"
#include "../../store/store.h"

static const char *const server_keys[] = { "workers", "user", "mount_prefix",
	"max_body_bytes", "request_timeout", "idle_retire", "grace",
	"socket_mode", "socket_owner", "read_timeout", "recycle_mb",
	"queue_timeout", NULL };
static const char *const store_keys[] = { "path", "url", "box", NULL };
static const char *const auth_keys[] = { "keys", "allow_anonymous",
	"max_concurrent", "limits", "admin_keys", NULL };
static const char *const key_keys[] = { "name", "key", "key_sha256",
	"max_concurrent", "tools", "rpm", "tpm", "budget", "budget_period",
	"sandbox_seconds", NULL };
static const char *const model_keys[] = { "name", "api_base", "api_key",
	"model", "max_agentic_loops", "timeout", "state", "api", "price",
	NULL };
static const char *const tool_keys[] = { "name", "provider", "api_key",
	"api_base", "template", "image", "sandbox_url", "isolation",
	"memory_mb", "disk_mb", "max_procs", "allow_internet_access", "cpu",
	"limits", "kernel", "warm", "price", NULL };
static const char *const icpt_keys[] = { "enabled", "sandbox_tool",
	"max_agentic_loops", "tool_name", "exec_timeout", "container_reuse",
	NULL };
static const char *const sess_keys[] = { "max_per_key", "ttl", NULL };
static const char *const resp_keys[] = { "retention", NULL };
static const char *const file_keys[] = { "dir", "max_bytes",
	"max_bytes_per_key", "max_files_per_key", "retention", NULL };

static int
load_workers(struct sg_cfgld *ld, const config_setting_t *g)
{
	struct sg_cfg *cfg = ld->cfg;
	config_setting_t *w = config_setting_get_member(g, "workers");

	if (w == NULL)
		return 0;
	if (config_setting_is_array(w) && config_setting_length(w) == 2) {
		cfg->server.workers_min = config_setting_get_int_elem(w, 0);
		cfg->server.workers_max = config_setting_get_int_elem(w, 1);
	} else if (config_setting_type(w) == CONFIG_TYPE_INT)
		cfg->server.workers_min = cfg->server.workers_max =
		    config_setting_get_int(w);
	else
		return sg_cfgld_fail(ld, w, "workers must be N or [MIN, MAX]");
	if (cfg->server.workers_min < 1 ||
	    cfg->server.workers_max > SG_CFG_WORKERS_MAX ||
	    cfg->server.workers_min > cfg->server.workers_max)
		return sg_cfgld_fail(ld, w, "workers needs 1 <= MIN <= MAX <= %d",
		    SG_CFG_WORKERS_MAX);
	return 0;
}

static int
load_body_cap(struct sg_cfgld *ld, const config_setting_t *g)
{
	long long bytes = (long long)ld->cfg->server.max_body_bytes;

	if (sg_cfgld_llong(ld, g, "max_body_bytes", &bytes, 1024,
	    1LL << 31) == -1)
		return -1;
	ld->cfg->server.max_body_bytes = (size_t)bytes;
	return 0;
}

static int
load_socket_mode(struct sg_cfgld *ld, const config_setting_t *g)
{
	char *mode = NULL, *end;
	long m;
	int bad;

	if (sg_cfgld_str(ld, g, "socket_mode", &mode, 0) == -1)
		return -1;
	if (mode == NULL)
		return 0;
	m = strtol(mode, &end, 8);
	bad = *end != '\0' || end == mode || m < 0 || m > 0777;
	free(mode);
	if (bad)
		return sg_cfgld_fail(ld, config_setting_get_member(g,
		    "socket_mode"), "socket_mode must be octal, like \"0660\"");
	ld->cfg->server.socket_mode = (int)m;
	return 0;
}

int
sg_cfgld_server(struct sg_cfgld *ld, const config_setting_t *g)
{
	struct sg_cfg *cfg = ld->cfg;

	sg_cfgld_check_keys(ld, g, server_keys, "server");
	if (load_workers(ld, g) == -1 || load_body_cap(ld, g) == -1 ||
	    load_socket_mode(ld, g) == -1 ||
	    sg_cfgld_str(ld, g, "user", &cfg->server.user, 0) == -1 ||
	    sg_cfgld_str(ld, g, "mount_prefix", &cfg->server.mount_prefix,
	    0) == -1 ||
	    sg_cfgld_int(ld, g, "request_timeout",
	    &cfg->server.request_timeout, 1, 86400) == -1 ||
	    sg_cfgld_int(ld, g, "idle_retire", &cfg->server.idle_retire, 1,
	    86400) == -1 ||
	    sg_cfgld_int(ld, g, "grace", &cfg->server.grace, 0, 86400) == -1 ||
	    sg_cfgld_int(ld, g, "read_timeout", &cfg->server.read_timeout, 1,
	    3600) == -1 ||
	    sg_cfgld_int(ld, g, "recycle_mb", &cfg->server.recycle_mb, 0,
	    1 << 20) == -1 ||
	    sg_cfgld_int(ld, g, "queue_timeout", &cfg->server.queue_timeout, 0,
	    3600) == -1 ||
	    sg_cfgld_str(ld, g, "socket_owner", &cfg->server.socket_owner,
	    0) == -1)
		return -1;
	/* A trailing slash would make "/v1/..." fail to match. */
	sg_cfgld_strip_slashes(cfg->server.mount_prefix);
	return 0;
}

int
sg_cfgld_store(struct sg_cfgld *ld, const config_setting_t *g)
{
	struct sg_cfg *cfg = ld->cfg;
	char *problem = NULL;
	size_t n;

	sg_cfgld_check_keys(ld, g, store_keys, "store");
	if (sg_cfgld_str(ld, g, "path", &cfg->store.path, 0) == -1 ||
	    sg_cfgld_secret(ld, g, "url", &cfg->store.url, &problem) == -1 ||
	    sg_cfgld_str(ld, g, "box", &cfg->store.box, 0) == -1)
		return -1;
	/* Without its store a gateway can serve nothing: a URL that
	 * cannot be read is not deferred as a model's key is. */
	if (problem != NULL) {
		free(problem);
		return sg_cfgld_fail(ld, config_setting_get_member(g, "url"),
		    "store.url cannot be read");
	}
	if (cfg->store.url != NULL && !sg_store_is_url(cfg->store.url))
		return sg_cfgld_fail(ld, config_setting_get_member(g, "url"),
		    "store.url must be a postgresql:// URL");
	if (cfg->store.box != NULL) {
		n = strlen(cfg->store.box);
		if (n == 0 || n > 63 || strspn(cfg->store.box,
		    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789.-_") != n)
			return sg_cfgld_fail(ld, config_setting_get_member(g,
			    "box"), "store.box must be 1-63 letters, digits, "
			    "'.', '-' or '_'");
	}
	return 0;
}

static int
load_key(struct sg_cfgld *ld, const config_setting_t *e, void *item)
{
	struct sg_cfg_key *k = item;
	char *key = NULL, *hash = NULL;
	int rc;

	sg_cfg_limits_unset(&k->limits);
	rc = sg_cfgld_str(ld, e, "name", &k->name, 1) == -1 ||
	    sg_cfgld_secret(ld, e, "key", &key, &k->problem) == -1 ||
	    sg_cfgld_str(ld, e, "key_sha256", &hash, 0) == -1 ||
	    sg_cfgld_int(ld, e, "max_concurrent", &k->max_concurrent, 1,
	    100000) == -1 ||
	    sg_cfgld_strings(ld, e, "tools", &k->tools, &k->ntools) == -1 ||
	    sg_cfgld_limits(ld, e, &k->limits) == -1 ||
	    sg_cfgld_key_hash(ld, e, k, key, hash) == -1 ? -1 : 0;
	free(key);
	free(hash);
	return rc;
}

int
sg_cfgld_auth(struct sg_cfgld *ld, const config_setting_t *g)
{
	struct sg_cfg *cfg = ld->cfg;
	config_setting_t *keys;

	sg_cfgld_check_keys(ld, g, auth_keys, "auth");
	if (sg_cfgld_bool(ld, g, "allow_anonymous",
	    &cfg->auth.allow_anonymous) == -1 ||
	    sg_cfgld_int(ld, g, "max_concurrent", &cfg->auth.max_concurrent, 1,
	    100000) == -1 || sg_cfgld_auth_usage(ld, g) == -1)
		return -1;
	if ((keys = config_setting_get_member(g, "keys")) == NULL)
		return 0;
	return sg_cfgld_list(ld, keys, "auth.keys", key_keys,
	    sizeof(struct sg_cfg_key), &cfg->auth.keys, &cfg->auth.nkeys,
	    load_key);
}

/*
 * Only OpenAI's own hosts are known to keep every response they answer;
 * vLLM, llama.cpp, Ollama and most gateways keep none, and state held
 * here works on any upstream. So the gateway holds it unless told.
 */
static enum sg_state
default_state(const char *api_base)
{
	static const char *const keepers[] = { "api.openai.com",
	    ".openai.azure.com", NULL };
	const char *host, *end;
	size_t i, n, k;

	if (api_base == NULL || (host = strstr(api_base, "://")) == NULL)
		return SG_STATE_GATEWAY;
	host += 3;
	end = host + strcspn(host, ":/");
	n = (size_t)(end - host);
	for (i = 0; keepers[i] != NULL; i++) {
		k = strlen(keepers[i]);
		if (keepers[i][0] == '.' ? n > k && strncasecmp(end - k,
		    keepers[i], k) == 0 : n == k && strncasecmp(host, keepers[i],
		    k) == 0)
			return SG_STATE_UPSTREAM;
	}
	return SG_STATE_GATEWAY;
}

/* api, then state: a Chat-only upstream keeps no responses, so the
 * gateway holds them (state "upstream" cannot be). */
static int
load_state(struct sg_cfgld *ld, const config_setting_t *e,
    struct sg_cfg_model *m)
{
	static const char *const states[] = { "upstream", "gateway", NULL };
	static const char *const apis[] = { "responses", "chat", NULL };
	char *state = NULL, *api = NULL;
	int rc = 0;

	if (sg_cfgld_word(ld, e, "state", &state, states) == -1 ||
	    sg_cfgld_word(ld, e, "api", &api, apis) == -1)
		rc = -1;
	else {
		m->api = api != NULL && strcmp(api, "chat") == 0 ? SG_API_CHAT :
		    SG_API_RESPONSES;
		m->state = m->api == SG_API_CHAT ? SG_STATE_GATEWAY :
		    state == NULL ? default_state(m->api_base) :
		    strcmp(state, "gateway") == 0 ? SG_STATE_GATEWAY :
		    SG_STATE_UPSTREAM;
		if (m->api == SG_API_CHAT && state != NULL &&
		    strcmp(state, "upstream") == 0)
			rc = sg_cfgld_fail(ld, sg_cfgld_at(e, "state"), "model %s: "
			    "state \"upstream\" needs an upstream that keeps "
			    "responses; api \"chat\" has none (leave state out)",
			    m->name);
	}
	free(state);
	free(api);
	return rc;
}

static int
load_model(struct sg_cfgld *ld, const config_setting_t *e, void *item)
{
	struct sg_cfg_model *m = item;

	m->timeout = 600;
	if (sg_cfgld_str(ld, e, "name", &m->name, 1) == -1 ||
	    sg_cfgld_secret(ld, e, "api_base", &m->api_base,
	    &m->api_key_problem) == -1 ||
	    sg_cfgld_secret(ld, e, "api_key", &m->api_key,
	    &m->api_key_problem) == -1 ||
	    sg_cfgld_str(ld, e, "model", &m->model, 0) == -1 ||
	    sg_cfgld_int(ld, e, "max_agentic_loops", &m->max_agentic_loops,
	    1, 100) == -1 ||
	    sg_cfgld_int(ld, e, "timeout", &m->timeout, 1, 86400) == -1 ||
	    sg_cfgld_model_price(ld, e, m) == -1)
		return -1;
	if (m->api_base == NULL && m->api_key_problem == NULL)
		return sg_cfgld_fail(ld, e, "model %s: missing api_base", m->name);
	if (m->api_base != NULL && strncmp(m->api_base, "http://", 7) != 0 &&
	    strncmp(m->api_base, "https://", 8) != 0)
		return sg_cfgld_fail(ld, sg_cfgld_at(e, "api_base"), "model %s: "
		    "api_base must start with http:// or https://", m->name);
	sg_cfgld_strip_slashes(m->api_base);
	return load_state(ld, e, m);
}

int
sg_cfgld_models(struct sg_cfgld *ld, const config_setting_t *list)
{
	return sg_cfgld_list(ld, list, "models", model_keys,
	    sizeof(struct sg_cfg_model), &ld->cfg->models, &ld->cfg->nmodels,
	    load_model);
}

static int
load_tool(struct sg_cfgld *ld, const config_setting_t *e, void *item)
{
	static const char *const isolations[] = { "bubblewrap", "none", NULL };
	static const char *const limits[] = { "cgroup", "process", NULL };
	static const char *const kernels[] = { "auto", "ipython", "python",
	    NULL };
	struct sg_tool *t = item;
	char *prov = NULL, *lim = NULL;
	int rc;

	t->memory_mb = 1024;
	t->disk_mb = 512;
	t->max_procs = 64;
	if (sg_cfgld_str(ld, e, "name", &t->name, 1) == -1 ||
	    sg_cfgld_str(ld, e, "provider", &prov, 1) == -1)
		return -1;
	rc = sg_provider_parse(prov, &t->provider);
	free(prov);
	if (rc == -1)
		return sg_cfgld_fail(ld, sg_cfgld_at(e, "provider"), "tool %s: "
		    "provider must be local, e2b or opensandbox", t->name);
	if (sg_cfgld_secret(ld, e, "api_key", &t->api_key,
	    &t->api_key_problem) == -1 ||
	    sg_cfgld_secret(ld, e, "api_base", &t->api_base,
	    &t->api_key_problem) == -1 ||
	    sg_cfgld_str(ld, e, "template", &t->template, 0) == -1 ||
	    sg_cfgld_str(ld, e, "image", &t->image, 0) == -1 ||
	    sg_cfgld_str(ld, e, "sandbox_url", &t->sandbox_url, 0) == -1 ||
	    sg_cfgld_word(ld, e, "isolation", &t->isolation, isolations) == -1 ||
	    sg_cfgld_word(ld, e, "limits", &lim, limits) == -1 ||
	    sg_cfgld_word(ld, e, "kernel", &t->kernel, kernels) == -1 ||
	    sg_cfgld_int(ld, e, "memory_mb", &t->memory_mb, 16, 1 << 20) == -1 ||
	    sg_cfgld_int(ld, e, "disk_mb", &t->disk_mb, 1, 1 << 20) == -1 ||
	    sg_cfgld_int(ld, e, "max_procs", &t->max_procs, 1, 65536) == -1 ||
	    sg_cfgld_int(ld, e, "cpu", &t->cpu, 0, 1024) == -1 ||
	    sg_cfgld_int(ld, e, "warm", &t->warm, 0, 64) == -1 ||
	    sg_cfgld_bool(ld, e, "allow_internet_access",
	    &t->allow_internet_access) == -1 ||
	    sg_cfgld_tool_price(ld, e, t) == -1) {
		free(lim);
		return -1;
	}
	t->limits_process = lim != NULL && strcmp(lim, "process") == 0;
	free(lim);
	/* What a provider cannot work without, unless a secret that would
	 * give it is only missing now (a warning already says so). */
	if (t->api_key_problem == NULL && t->provider == SG_PROVIDER_E2B &&
	    t->api_key == NULL)
		return sg_cfgld_fail(ld, e, "tool %s: the e2b provider needs "
		    "api_key", t->name);
	if (t->api_key_problem == NULL && t->provider ==
	    SG_PROVIDER_OPENSANDBOX && t->api_base == NULL)
		return sg_cfgld_fail(ld, e, "tool %s: the opensandbox provider "
		    "needs api_base (its server's URL, with /v1)", t->name);
	/* The store keeps a tool's name in 64 bytes. */
	if (strlen(t->name) > 63)
		return sg_cfgld_fail(ld, sg_cfgld_at(e, "name"), "tool %.20s...: "
		    "a name has at most 63 characters", t->name);
	sg_cfgld_strip_slashes(t->api_base);
	sg_cfgld_strip_slashes(t->sandbox_url);
	return 0;
}

int
sg_cfgld_tools(struct sg_cfgld *ld, const config_setting_t *list)
{
	return sg_cfgld_list(ld, list, "sandbox_tools", tool_keys,
	    sizeof(struct sg_tool), &ld->cfg->tools, &ld->cfg->ntools,
	    load_tool);
}

int
sg_cfgld_interception(struct sg_cfgld *ld, const config_setting_t *g)
{
	static const char *const reuse[] = { "none", "conversation", NULL };
	struct sg_cfg *cfg = ld->cfg;
	char *mode = NULL;
	int rc;

	sg_cfgld_check_keys(ld, g, icpt_keys, "interception");
	rc = sg_cfgld_bool(ld, g, "enabled", &cfg->interception.enabled) ==
	    -1 || sg_cfgld_str(ld, g, "sandbox_tool",
	    &cfg->interception.sandbox_tool, 0) == -1 ||
	    sg_cfgld_int(ld, g, "max_agentic_loops",
	    &cfg->interception.max_agentic_loops, 1, 100) == -1 ||
	    sg_cfgld_str(ld, g, "tool_name", &cfg->interception.tool_name,
	    0) == -1 ||
	    sg_cfgld_int(ld, g, "exec_timeout", &cfg->interception.exec_timeout,
	    1, 86400) == -1 ||
	    sg_cfgld_word(ld, g, "container_reuse", &mode, reuse) == -1 ? -1 : 0;
	if (mode != NULL)
		cfg->interception.reuse_conversation = strcmp(mode,
		    "conversation") == 0;
	free(mode);
	return rc;
}

int
sg_cfgld_sessions(struct sg_cfgld *ld, const config_setting_t *g)
{
	sg_cfgld_check_keys(ld, g, sess_keys, "sessions");
	return sg_cfgld_int(ld, g, "max_per_key", &ld->cfg->sessions.max_per_key,
	    1, 10000) == -1 || sg_cfgld_int(ld, g, "ttl", &ld->cfg->sessions.ttl,
	    1, 86400 * 30) == -1 ? -1 : 0;
}

int
sg_cfgld_responses(struct sg_cfgld *ld, const config_setting_t *g)
{
	sg_cfgld_check_keys(ld, g, resp_keys, "responses");
	return sg_cfgld_int(ld, g, "retention", &ld->cfg->responses.retention,
	    60, 86400 * 3650);
}

int
sg_cfgld_files(struct sg_cfgld *ld, const config_setting_t *g)
{
	struct sg_cfg *cfg = ld->cfg;

	sg_cfgld_check_keys(ld, g, file_keys, "files");
	if (sg_cfgld_str(ld, g, "dir", &cfg->files.dir, 0) == -1 ||
	    sg_cfgld_llong(ld, g, "max_bytes", &cfg->files.max_bytes, 1,
	    1LL << 40) == -1 || sg_cfgld_llong(ld, g, "max_bytes_per_key",
	    &cfg->files.max_bytes_per_key, 1, 1LL << 50) == -1 ||
	    sg_cfgld_int(ld, g, "max_files_per_key",
	    &cfg->files.max_files_per_key, 1, 100000000) == -1 ||
	    sg_cfgld_int(ld, g, "retention", &cfg->files.retention, 60,
	    86400 * 3650) == -1)
		return -1;
	if (cfg->files.dir != NULL && cfg->files.dir[0] != '/')
		return sg_cfgld_fail(ld, sg_cfgld_at(g, "dir"), "files.dir must "
		    "be an absolute path");
	return 0;
}
