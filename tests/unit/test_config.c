/*
 * core/config/config: the libconfig file of design §3.2. Each test writes a
 * config into its own temp dir and loads it. Bad configs must name the
 * offending setting as "FILE:LINE:"; the line is found by a "# <-- HERE"
 * marker on it, so the configs stay readable and the numbers never drift.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/config/config.h"
#include "../../lib/util.h"
#include "testutil.h"

#include "cfgtest.h"

static char *
sha_of(const char *s, char out[65])
{
	sg_sha256_hex(s, strlen(s), out);
	return out;
}

/* ---- a good config, every section ---- */

static const char good[] =
	"# every section and field of design 3.2\n"
	"server: {\n"
	"  workers = [2, 16];\n"
	"  user = \"www-data\";\n"
	"  mount_prefix = \"/api\";\n"
	"  max_body_bytes = 1048576;\n"
	"  request_timeout = 300;\n"
	"  idle_retire = 45;\n"
	"  grace = 5;\n"
	"  socket_mode = \"0660\";\n"
	"  socket_owner = \"www-data:www-data\";\n"
	"};\n"
	"store: { path = \"/srv/sg/store.db\"; };\n"
	"auth: {\n"
	"  keys = ( { name = \"alice\"; key = \"sk-alice\"; },\n"
	"           { name = \"bob\"; key_sha256 = "
	"\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"; } );\n"
	"  allow_anonymous = false;\n"
	"};\n"
	"models = (\n"
	"  { name = \"gpt-4.1-mini\";\n"
	"    api_base = \"https://api.openai.com/v1\";\n"
	"    api_key = \"sk-upstream\";\n"
	"    model = \"gpt-4.1-mini-2025-04-14\";\n"
	"    max_agentic_loops = 6;\n"
	"    timeout = 120;\n"
	"  },\n"
	"  { name = \"*\"; api_base = \"http://127.0.0.1:11434/v1/\"; }\n"
	");\n"
	"sandbox_tools = (\n"
	"  { name = \"local\"; provider = \"local\"; memory_mb = 2048; disk_mb = 256;\n"
	"    max_procs = 32; allow_internet_access = true; isolation = \"none\";\n"
	"    kernel = \"python\"; },\n"
	"  { name = \"my-e2b\"; provider = \"e2b\"; api_key = \"e2b-key\";\n"
	"    template = \"code-interpreter-v1\"; api_base = \"https://api.e2b.app\";\n"
	"    sandbox_url = \"http://127.0.0.1:49999\"; },\n"
	"  { name = \"my-osb\"; provider = \"opensandbox\";\n"
	"    api_base = \"http://osb.local/v1\"; api_key = \"osb-key\";\n"
	"    image = \"opensandbox/code-interpreter:v1.1.0\"; cpu = 2; }\n"
	");\n"
	"interception: {\n"
	"  enabled = false;\n"
	"  sandbox_tool = \"my-e2b\";\n"
	"  max_agentic_loops = 7;\n"
	"  tool_name = \"run_code\";\n"
	"  exec_timeout = 30;\n"
	"  container_reuse = \"none\";\n"
	"};\n"
	"sessions: { max_per_key = 3; ttl = 60; };\n";

static void
good_server(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg *c;

	load_ok(fx, good);
	c = fx->cfg;
	assert_string_equal(c->path, fx->path);
	assert_int_equal(c->server.workers_min, 2);
	assert_int_equal(c->server.workers_max, 16);
	assert_string_equal(c->server.user, "www-data");
	assert_string_equal(c->server.mount_prefix, "/api");
	assert_int_equal(c->server.max_body_bytes, 1048576);
	assert_int_equal(c->server.request_timeout, 300);
	assert_int_equal(c->server.idle_retire, 45);
	assert_int_equal(c->server.grace, 5);
	assert_int_equal(c->server.socket_mode, 0660);
	assert_string_equal(c->server.socket_owner, "www-data:www-data");
	assert_string_equal(c->store.path, "/srv/sg/store.db");
	assert_int_equal(c->nwarnings, 0);
}

static void
good_auth(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg *c;
	char sha[65];

	load_ok(fx, good);
	c = fx->cfg;
	assert_int_equal(c->auth.allow_anonymous, 0);
	assert_int_equal(c->auth.nkeys, 2);
	assert_string_equal(c->auth.keys[0].name, "alice");
	assert_string_equal(c->auth.keys[0].sha256, sha_of("sk-alice", sha));
	assert_null(c->auth.keys[0].problem);
	assert_string_equal(c->auth.keys[1].name, "bob");
	assert_string_equal(c->auth.keys[1].sha256,
	    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
	assert_null(c->auth.keys[1].problem);
}

static void
good_models(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg_model *m;

	load_ok(fx, good);
	assert_int_equal(fx->cfg->nmodels, 2);
	m = &fx->cfg->models[0];
	assert_string_equal(m->name, "gpt-4.1-mini");
	assert_string_equal(m->api_base, "https://api.openai.com/v1");
	assert_string_equal(m->api_key, "sk-upstream");
	assert_null(m->api_key_problem);
	assert_string_equal(m->model, "gpt-4.1-mini-2025-04-14");
	assert_int_equal(m->max_agentic_loops, 6);
	assert_int_equal(m->timeout, 120);
	m = &fx->cfg->models[1];
	assert_string_equal(m->name, "*");
	/* Trailing slash stripped; optional fields at their defaults. */
	assert_string_equal(m->api_base, "http://127.0.0.1:11434/v1");
	assert_null(m->api_key);
	assert_null(m->api_key_problem);
	assert_null(m->model);
	assert_int_equal(m->max_agentic_loops, 0);
	assert_int_equal(m->timeout, 600);
}

static void
good_tools(void **state)
{
	struct fx *fx = *state;
	const struct sg_tool *t;

	load_ok(fx, good);
	assert_int_equal(fx->cfg->ntools, 3);
	t = &fx->cfg->tools[0];
	assert_string_equal(t->name, "local");
	assert_int_equal(t->provider, SG_PROVIDER_LOCAL);
	assert_int_equal(t->memory_mb, 2048);
	assert_int_equal(t->disk_mb, 256);
	assert_int_equal(t->max_procs, 32);
	assert_int_equal(t->allow_internet_access, 1);
	assert_string_equal(t->isolation, "none");
	assert_string_equal(t->kernel, "python");
	assert_null(t->api_key);
	t = &fx->cfg->tools[1];
	assert_string_equal(t->name, "my-e2b");
	assert_int_equal(t->provider, SG_PROVIDER_E2B);
	assert_string_equal(t->api_key, "e2b-key");
	assert_string_equal(t->template, "code-interpreter-v1");
	assert_string_equal(t->api_base, "https://api.e2b.app");
	assert_string_equal(t->sandbox_url, "http://127.0.0.1:49999");
	/* Defaults of the fields it leaves out. */
	assert_int_equal(t->memory_mb, 1024);
	assert_int_equal(t->disk_mb, 512);
	assert_int_equal(t->max_procs, 64);
	assert_int_equal(t->allow_internet_access, 0);
	assert_null(t->isolation);
	assert_null(t->kernel);
	assert_int_equal(t->cpu, 0);
	t = &fx->cfg->tools[2];
	assert_string_equal(t->name, "my-osb");
	assert_int_equal(t->provider, SG_PROVIDER_OPENSANDBOX);
	assert_string_equal(t->api_base, "http://osb.local/v1");
	assert_string_equal(t->api_key, "osb-key");
	assert_string_equal(t->image, "opensandbox/code-interpreter:v1.1.0");
	assert_int_equal(t->cpu, 2);
	assert_null(t->api_key_problem);
	assert_ptr_equal(sg_cfg_tool(fx->cfg, "my-osb"), t);
	assert_null(sg_cfg_tool(fx->cfg, "nope"));
	assert_string_equal(sg_provider_name(SG_PROVIDER_LOCAL), "local");
	assert_string_equal(sg_provider_name(SG_PROVIDER_E2B), "e2b");
	assert_string_equal(sg_provider_name(SG_PROVIDER_OPENSANDBOX),
	    "opensandbox");
}

static void
good_interception_sessions(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg *c;

	load_ok(fx, good);
	c = fx->cfg;
	assert_int_equal(c->interception.enabled, 0);
	assert_string_equal(c->interception.sandbox_tool, "my-e2b");
	assert_int_equal(c->interception.max_agentic_loops, 7);
	assert_string_equal(c->interception.tool_name, "run_code");
	assert_int_equal(c->interception.exec_timeout, 30);
	assert_int_equal(c->interception.reuse_conversation, 0);
	assert_int_equal(c->sessions.max_per_key, 3);
	assert_int_equal(c->sessions.ttl, 60);
}

/* ---- defaults ---- */

static void
defaults_when_absent(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg *c;

	load_ok(fx, "# nothing set\n");
	c = fx->cfg;
	assert_int_equal(c->server.workers_min, 4);
	assert_int_equal(c->server.workers_max, 64);
	assert_int_equal(c->server.max_body_bytes, 8 * 1024 * 1024);
	assert_int_equal(c->server.request_timeout, 600);
	assert_int_equal(c->server.socket_mode, -1);
	assert_null(c->server.socket_owner);
	assert_null(c->server.user);
	assert_string_equal(c->server.mount_prefix, "");
	assert_non_null(c->store.path);
	assert_int_equal(c->auth.nkeys, 0);
	assert_int_equal(c->auth.allow_anonymous, 0);
	assert_int_equal(c->nmodels, 0);
	assert_int_equal(c->ntools, 0);
	assert_int_equal(c->interception.enabled, 1);
	assert_string_equal(c->interception.sandbox_tool, "local");
	assert_int_equal(c->interception.max_agentic_loops, 4);
	assert_string_equal(c->interception.tool_name, "litellm_code_execution");
	/* OpenAI's auto containers: kept for the conversation, 20 idle
	 * minutes. */
	assert_int_equal(c->interception.reuse_conversation, 1);
	assert_int_equal(c->sessions.max_per_key, 10);
	assert_int_equal(c->sessions.ttl, 1200);
	assert_int_equal(c->nwarnings, 0);
}

static void
defaults_in_empty_groups(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg *c;

	load_ok(fx, "server: { };\ninterception: { };\nsessions: { };\n");
	c = fx->cfg;
	assert_int_equal(c->server.workers_min, 4);
	assert_int_equal(c->server.workers_max, 64);
	assert_int_equal(c->server.max_body_bytes, 8 << 20);
	assert_int_equal(c->server.request_timeout, 600);
	assert_string_equal(c->interception.tool_name, "litellm_code_execution");
	assert_int_equal(c->interception.max_agentic_loops, 4);
	assert_int_equal(c->interception.reuse_conversation, 1);
	assert_int_equal(c->sessions.max_per_key, 10);
	assert_int_equal(c->sessions.ttl, 1200);
}

/* ---- workers ---- */

static void
workers_single_int(void **state)
{
	struct fx *fx = *state;

	load_ok(fx, "server: { workers = 3; };\n");
	assert_int_equal(fx->cfg->server.workers_min, 3);
	assert_int_equal(fx->cfg->server.workers_max, 3);
}

static void
workers_min_max(void **state)
{
	struct fx *fx = *state;

	load_ok(fx, "server: { workers = [2, 8]; };\n");
	assert_int_equal(fx->cfg->server.workers_min, 2);
	assert_int_equal(fx->cfg->server.workers_max, 8);
	/* A responder per stream: 1,000 streams at once, not more. */
	load_ok(fx, "server: { workers = [4, 1024]; };\n");
	assert_int_equal(fx->cfg->server.workers_max, 1024);
	load_fails_at(fx, "server: {\n  workers = [4, 1025]; " HERE "\n};\n",
	    "workers");
}

static void
workers_min_gt_max(void **state)
{
	load_fails_at(*state,
	    "server: {\n"
	    "  user = \"www-data\";\n"
	    "  workers = [8, 2];  " HERE "\n"
	    "};\n", "workers");
}

static void
workers_bad_shapes(void **state)
{
	struct fx *fx = *state;

	load_fails_at(fx, "server: {\n  workers = [0, 4]; " HERE "\n};\n",
	    "workers");
	load_fails_at(fx, "server: {\n  workers = [1, 2, 3]; " HERE "\n};\n",
	    "workers");
	load_fails_at(fx, "server: {\n  workers = \"4\"; " HERE "\n};\n",
	    "workers");
	load_fails_at(fx, "server: {\n  workers = 0; " HERE "\n};\n",
	    "workers");
}

/* ---- bad configs ---- */

static void
syntax_error(void **state)
{
	load_fails_at(*state,
	    "server: {\n"
	    "  workers = 4;\n"
	    "  grace = = 5; " HERE "\n"
	    "  user = \"www-data\";\n"
	    "};\n", NULL);
}

static void
missing_file(void **state)
{
	struct fx *fx = *state;
	char path[192];

	snprintf(path, sizeof(path), "%s/nope.conf", fx->dir);
	assert_int_equal(sg_cfg_load(path, &fx->cfg, fx->err,
	    sizeof(fx->err)), -1);
	assert_null(fx->cfg);
	assert_contains(fx->err, path);
}

static void
wrong_type_int(void **state)
{
	load_fails_at(*state,
	    "server: {\n"
	    "  workers = 4;\n"
	    "  request_timeout = \"600\"; " HERE "\n"
	    "};\n", "request_timeout");
}

static void
wrong_type_bool(void **state)
{
	load_fails_at(*state,
	    "auth: {\n"
	    "  allow_anonymous = 1; " HERE "\n"
	    "};\n", "allow_anonymous");
}

static void
wrong_type_string(void **state)
{
	load_fails_at(*state,
	    "models = (\n"
	    "  { name = \"m\";\n"
	    "    api_base = 8080; " HERE "\n"
	    "  }\n"
	    ");\n", "api_base");
}

static void
wrong_type_group(void **state)
{
	load_fails_at(*state,
	    "# server must be a group\n"
	    "server = 4; " HERE "\n", "server");
}

static void
int_out_of_range(void **state)
{
	load_fails_at(*state,
	    "interception: {\n"
	    "  max_agentic_loops = 0; " HERE "\n"
	    "};\n", "max_agentic_loops");
}

static void
max_body_bytes_out_of_range(void **state)
{
	/* Also frees what was read before it (socket_mode). */
	load_fails_at(*state,
	    "server: {\n"
	    "  socket_mode = \"0660\";\n"
	    "  max_body_bytes = 10; " HERE "\n"
	    "};\n", "max_body_bytes");
}

static void
duplicate_model_names(void **state)
{
	load_fails_at(*state,
	    "models = (\n"
	    "  { name = \"gpt-4.1\";\n"
	    "    api_base = \"https://a.example/v1\"; },\n"
	    "  { name = \"gpt-4.1\"; " HERE "\n"
	    "    api_base = \"https://b.example/v1\"; }\n"
	    ");\n", "gpt-4.1");
}

static void
duplicate_key_names(void **state)
{
	load_fails_at(*state,
	    "auth: {\n"
	    "  keys = ( { name = \"alice\"; key = \"k1\"; },\n"
	    "           { name = \"alice\"; key = \"k2\"; } " HERE "\n"
	    "  );\n"
	    "};\n", "alice");
}

static void
provider_unknown(void **state)
{
	load_fails_at(*state,
	    "sandbox_tools = (\n"
	    "  { name = \"box\";\n"
	    "    provider = \"docker\"; " HERE "\n"
	    "  }\n"
	    ");\n", "provider");
}

/* A NUL byte (a binary file, a bad copy) is refused with its line, before
 * libconfig's lexer, which loses track there. */
static void
nul_byte_refused(void **state)
{
	static const char text[] = "server: {\n  workers = [1, 2]; # \0 x\n};\n";
	struct fx *fx = *state;
	char want[256];

	assert_int_equal(tu_write_file(fx->path, text, sizeof(text) - 1), 0);
	assert_int_equal(sg_cfg_load(fx->path, &fx->cfg, fx->err,
	    sizeof(fx->err)), -1);
	assert_null(fx->cfg);
	snprintf(want, sizeof(want), "%s:2: a NUL byte", fx->path);
	assert_string_equal(fx->err, strcat(want, ": not a text file"));
}

static void
kernel_unknown(void **state)
{
	load_fails_at(*state,
	    "sandbox_tools = (\n"
	    "  { name = \"local\";\n"
	    "    provider = \"local\";\n"
	    "    kernel = \"jupyter\"; " HERE "\n"
	    "  }\n"
	    ");\n", "kernel");
}

static void
isolation_unknown(void **state)
{
	load_fails_at(*state,
	    "sandbox_tools = (\n"
	    "  { name = \"local\";\n"
	    "    provider = \"local\";\n"
	    "    isolation = \"maybe\"; " HERE "\n"
	    "  }\n"
	    ");\n", "isolation");
}

static void
key_and_key_sha256(void **state)
{
	load_fails_at(*state,
	    "auth: {\n"
	    "  keys = ( { name = \"alice\"; key = \"k\"; key_sha256 = "
	    "\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"; "
	    "} " HERE "\n"
	    "  );\n"
	    "};\n", "alice");
}

static void
key_sha256_short(void **state)
{
	load_fails_at(*state,
	    "auth: {\n"
	    "  keys = ( { name = \"bob\";\n"
	    "             key_sha256 = \"9f86d0\"; } " HERE "\n"
	    "  );\n"
	    "};\n", "key_sha256");
}

static void
key_sha256_not_hex(void **state)
{
	/* 64 characters, one of them not a hex digit. */
	load_fails_at(*state,
	    "auth: {\n"
	    "  keys = ( { name = \"bob\";\n"
	    "             key_sha256 = "
	    "\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a0g\"; "
	    "} " HERE "\n"
	    "  );\n"
	    "};\n", "key_sha256");
}

static void
key_without_secret(void **state)
{
	load_fails_at(*state,
	    "auth: {\n"
	    "  keys = ( { name = \"carol\"; } " HERE "\n"
	    "  );\n"
	    "};\n", "carol");
}

static void
api_base_not_http(void **state)
{
	load_fails_at(*state,
	    "models = (\n"
	    "  { name = \"m\";\n"
	    "    api_base = \"ftp://example.com/v1\"; " HERE "\n"
	    "  }\n"
	    ");\n", "api_base");
}

static void
api_base_missing(void **state)
{
	load_fails_at(*state,
	    "models = (\n"
	    "  { name = \"m\"; api_key = \"k\"; } " HERE "\n"
	    ");\n", "api_base");
}

/* What a provider cannot work without is an error at load, so
 * check-config finds it, not the first create. */
static void
provider_needs_what_it_needs(void **state)
{
	load_fails_at(*state,
	    "sandbox_tools = (\n"
	    "  { name = \"e\"; provider = \"e2b\"; } " HERE "\n"
	    ");\n", "needs api_key");
	load_fails_at(*state,
	    "sandbox_tools = (\n"
	    "  { name = \"o\"; provider = \"opensandbox\"; api_key = \"k\"; } "
	    HERE "\n);\n", "needs api_base");
	/* A secret only missing now is a warning, as for models. */
	load_ok(*state, "sandbox_tools = (\n  { name = \"e\"; provider = "
	    "\"e2b\"; api_key = \"env:SG_UNIT_NEVER_SET\"; }\n);\n");
}

/* The sandbox routes default to it even with interception off. */
static void
sandbox_tool_checked_when_disabled(void **state)
{
	load_fails_at(*state,
	    "sandbox_tools = (\n"
	    "  { name = \"local\"; provider = \"local\"; }\n"
	    ");\n"
	    "interception: {\n"
	    "  enabled = false;\n"
	    "  sandbox_tool = \"gone\"; " HERE "\n"
	    "};\n", "gone");
}

static void
sandbox_tool_not_in_tools(void **state)
{
	load_fails_at(*state,
	    "sandbox_tools = (\n"
	    "  { name = \"local\"; provider = \"local\"; }\n"
	    ");\n"
	    "interception: {\n"
	    "  enabled = true;\n"
	    "  sandbox_tool = \"my-e2b\"; " HERE "\n"
	    "};\n", "my-e2b");
}

/* ---- secrets ---- */

static const char secret_model[] =
	"models = (\n"
	"  { name = \"m\";\n"
	"    api_base = \"https://api.example/v1\";\n"
	"    api_key = \"%s\"; # <-- KEY\n"
	"  }\n"
	");\n";

/* Load a config whose single model's api_key is spec. */
static const struct sg_cfg_model *
load_model_key(struct fx *fx, const char *spec, char *text, size_t textsz)
{
	snprintf(text, textsz, secret_model, spec);
	load_ok(fx, text);
	assert_int_equal(fx->cfg->nmodels, 1);
	return &fx->cfg->models[0];
}

static void
secret_literal(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg_model *m;
	char text[512];

	m = load_model_key(fx, "sk-literal-123", text, sizeof(text));
	assert_string_equal(m->api_key, "sk-literal-123");
	assert_null(m->api_key_problem);
	assert_int_equal(fx->cfg->nwarnings, 0);
}

static void
secret_env_set(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg_model *m;
	char text[512];

	setenv("SG_TEST_SECRET", "sk-from-env", 1);
	m = load_model_key(fx, "env:SG_TEST_SECRET", text, sizeof(text));
	assert_string_equal(m->api_key, "sk-from-env");
	assert_null(m->api_key_problem);
	assert_int_equal(fx->cfg->nwarnings, 0);
}

static void
secret_env_unset(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg_model *m;
	char text[512];

	unsetenv("SG_TEST_UNSET");
	m = load_model_key(fx, "env:SG_TEST_UNSET", text, sizeof(text));
	assert_null(m->api_key);
	assert_non_null(m->api_key_problem);
	assert_contains(m->api_key_problem, "SG_TEST_UNSET");
	assert_warning_at(fx, text, "# <-- KEY", "SG_TEST_UNSET");
}

static void
secret_env_empty(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg_model *m;
	char text[512];

	setenv("SG_TEST_SECRET", "", 1);
	m = load_model_key(fx, "env:SG_TEST_SECRET", text, sizeof(text));
	assert_null(m->api_key);
	assert_non_null(m->api_key_problem);
}

static void
secret_os_environ(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg_model *m;
	char text[512];

	setenv("SG_TEST_SECRET", "sk-litellm-style", 1);
	m = load_model_key(fx, "os.environ/SG_TEST_SECRET", text, sizeof(text));
	assert_string_equal(m->api_key, "sk-litellm-style");
	assert_null(m->api_key_problem);
}

static void
secret_os_environ_unset(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg_model *m;
	char text[512];

	m = load_model_key(fx, "os.environ/SG_TEST_UNSET", text, sizeof(text));
	assert_null(m->api_key);
	assert_contains(m->api_key_problem, "SG_TEST_UNSET");
	assert_warning_at(fx, text, "# <-- KEY", "SG_TEST_UNSET");
}

static void
secret_file_newline_stripped(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg_model *m;
	char text[512], file[192], spec[200];

	snprintf(file, sizeof(file), "%s/key", fx->dir);
	assert_int_equal(tu_write_file(file, "sk-from-file\n", -1), 0);
	snprintf(spec, sizeof(spec), "file:%s", file);
	m = load_model_key(fx, spec, text, sizeof(text));
	assert_string_equal(m->api_key, "sk-from-file");
	assert_null(m->api_key_problem);
}

static void
secret_file_crlf_stripped(void **state)
{
	struct fx *fx = *state;
	char file[192], spec[200], *out = NULL, *problem = NULL;

	snprintf(file, sizeof(file), "%s/key", fx->dir);
	assert_int_equal(tu_write_file(file, "sk-x y\r\n", -1), 0);
	snprintf(spec, sizeof(spec), "file:%s", file);
	assert_int_equal(sg_cfg_secret(spec, &out, &problem), 0);
	assert_non_null(out);
	assert_string_equal(out, "sk-x y");
	assert_null(problem);
	free(out);
}

static void
secret_file_missing(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg_model *m;
	char text[512], spec[200];

	snprintf(spec, sizeof(spec), "file:%s/absent", fx->dir);
	m = load_model_key(fx, spec, text, sizeof(text));
	assert_null(m->api_key);
	assert_non_null(m->api_key_problem);
	assert_contains(m->api_key_problem, "absent");
	assert_warning_at(fx, text, "# <-- KEY", "absent");
}

static void
secret_direct_forms(void **state)
{
	char *out, *problem;

	(void)state;
	assert_int_equal(sg_cfg_secret("plain", &out, &problem), 0);
	assert_string_equal(out, "plain");
	assert_null(problem);
	free(out);

	setenv("SG_TEST_SECRET", "v", 1);
	assert_int_equal(sg_cfg_secret("env:SG_TEST_SECRET", &out, &problem), 0);
	assert_string_equal(out, "v");
	assert_null(problem);
	free(out);

	unsetenv("SG_TEST_UNSET");
	assert_int_equal(sg_cfg_secret("env:SG_TEST_UNSET", &out, &problem), 0);
	assert_null(out);
	assert_non_null(problem);
	assert_contains(problem, "SG_TEST_UNSET");
	free(problem);
}

static void
secret_auth_key_from_env(void **state)
{
	struct fx *fx = *state;
	char sha[65];

	setenv("SG_TEST_SECRET", "sk-alice-env", 1);
	load_ok(fx, "auth: { keys = ( { name = \"alice\"; "
	    "key = \"env:SG_TEST_SECRET\"; } ); };\n");
	assert_int_equal(fx->cfg->auth.nkeys, 1);
	assert_string_equal(fx->cfg->auth.keys[0].sha256,
	    sha_of("sk-alice-env", sha));
	assert_null(fx->cfg->auth.keys[0].problem);
}

static void
secret_auth_key_unresolved(void **state)
{
	/* Loads, but the key can match nothing and says why. */
	struct fx *fx = *state;
	static const char text[] =
	    "auth: {\n"
	    "  keys = ( { name = \"alice\";\n"
	    "             key = \"env:SG_TEST_UNSET\"; } # <-- KEY\n"
	    "  );\n"
	    "};\n";

	load_ok(fx, text);
	assert_int_equal(fx->cfg->auth.nkeys, 1);
	assert_string_equal(fx->cfg->auth.keys[0].sha256, "");
	assert_non_null(fx->cfg->auth.keys[0].problem);
	assert_warning_at(fx, text, "# <-- KEY", "SG_TEST_UNSET");
}

/* ---- unknown keys ---- */

static const char unknown[] =
	"colour = \"blue\"; # <-- TOP\n"
	"server: {\n"
	"  workers = 4;\n"
	"  turbo = true; # <-- SERVER\n"
	"};\n"
	"models = (\n"
	"  { name = \"m\";\n"
	"    api_base = \"https://api.example/v1\";\n"
	"    temprature = 0.5; # <-- MODEL\n"
	"  }\n"
	");\n";

static void
unknown_keys_warn(void **state)
{
	struct fx *fx = *state;

	load_ok(fx, unknown);
	assert_int_equal(fx->cfg->nwarnings, 3);
	assert_warning_at(fx, unknown, "# <-- TOP", "colour");
	assert_warning_at(fx, unknown, "# <-- SERVER", "turbo");
	assert_warning_at(fx, unknown, "# <-- MODEL", "temprature");
	/* The known settings around them still count. */
	assert_int_equal(fx->cfg->server.workers_min, 4);
	assert_int_equal(fx->cfg->nmodels, 1);
}

/* ---- normalisation ---- */

static void
key_sha256_upper_case_normalised(void **state)
{
	struct fx *fx = *state;

	load_ok(fx, "auth: { keys = ( { name = \"bob\"; key_sha256 = "
	    "\"9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08\"; "
	    "} ); };\n");
	assert_string_equal(fx->cfg->auth.keys[0].sha256,
	    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
}

static void
mount_prefix_trailing_slash(void **state)
{
	struct fx *fx = *state;

	load_ok(fx, "server: { mount_prefix = \"/api/\"; };\n");
	assert_string_equal(fx->cfg->server.mount_prefix, "/api");
	load_ok(fx, "server: { mount_prefix = \"/a/b//\"; };\n");
	assert_string_equal(fx->cfg->server.mount_prefix, "/a/b");
	load_ok(fx, "server: { mount_prefix = \"/\"; };\n");
	assert_string_equal(fx->cfg->server.mount_prefix, "");
}

static void
socket_mode_octal(void **state)
{
	struct fx *fx = *state;

	load_ok(fx, "server: { socket_mode = \"0660\"; };\n");
	assert_int_equal(fx->cfg->server.socket_mode, 0660);
	assert_int_equal(fx->cfg->server.socket_mode, 432);
	load_ok(fx, "server: { socket_mode = \"600\"; };\n");
	assert_int_equal(fx->cfg->server.socket_mode, 0600);
}

static void
socket_mode_not_octal(void **state)
{
	struct fx *fx = *state;

	load_fails_at(fx, "server: {\n  socket_mode = \"999\"; " HERE "\n};\n",
	    "socket_mode");
	load_fails_at(fx, "server: {\n  socket_mode = \"01777\"; " HERE "\n};\n",
	    "socket_mode");
	load_fails_at(fx, "server: {\n  socket_mode = \"rw-rw----\"; " HERE
	    "\n};\n", "socket_mode");
}

static void
socket_mode_empty_refused(void **state)
{
	/* "" is no mode: it must not silently become 0000 (a socket nobody
	 * but root can connect to). */
	load_fails_at(*state, "server: {\n  socket_mode = \"\"; " HERE "\n};\n",
	    "socket_mode");
}

/* Who keeps conversations: OpenAI's hosts keep their own; anything else
 * is assumed to keep none unless the model says. */
static void
model_state(void **state)
{
	struct fx *fx = *state;

	load_ok(fx, "models = (\n"
	    "  { name = \"a\"; api_base = \"https://api.openai.com/v1\"; },\n"
	    "  { name = \"b\"; api_base = \"https://x.openai.azure.com/openai\"; },\n"
	    "  { name = \"c\"; api_base = \"http://127.0.0.1:8000/v1\"; },\n"
	    "  { name = \"d\"; api_base = \"https://api.openai.com.evil/v1\"; },\n"
	    "  { name = \"e\"; api_base = \"https://api.openai.com/v1\";\n"
	    "    state = \"gateway\"; },\n"
	    "  { name = \"f\"; api_base = \"http://vllm:8000/v1\";\n"
	    "    state = \"upstream\"; }\n"
	    ");\n");
	assert_int_equal(fx->cfg->models[0].state, SG_STATE_UPSTREAM);
	assert_int_equal(fx->cfg->models[1].state, SG_STATE_UPSTREAM);
	assert_int_equal(fx->cfg->models[2].state, SG_STATE_GATEWAY);
	assert_int_equal(fx->cfg->models[3].state, SG_STATE_GATEWAY);
	assert_int_equal(fx->cfg->models[4].state, SG_STATE_GATEWAY);
	assert_int_equal(fx->cfg->models[5].state, SG_STATE_UPSTREAM);
	assert_int_equal(fx->cfg->responses.retention, 30 * 86400);
	load_fails_at(fx, "models = ( { name = \"a\"; api_base = \"http://h/v1\";\n"
	    "  state = \"both\"; " HERE "\n} );\n", "state");
	load_ok(fx, "responses: { retention = 3600; };\n");
	assert_int_equal(fx->cfg->responses.retention, 3600);
	load_fails_at(fx, "responses: {\n  retention = 0; " HERE "\n};\n",
	    "retention");
}

/* ---- lookups ---- */

static void
model_lookup(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg_model *m;

	/* "*" first: an exact name must still win over it. */
	load_ok(fx,
	    "models = (\n"
	    "  { name = \"*\"; api_base = \"http://any.example\"; },\n"
	    "  { name = \"gpt-4.1\"; api_base = \"http://exact.example\"; }\n"
	    ");\n");
	m = sg_cfg_model(fx->cfg, "gpt-4.1");
	assert_non_null(m);
	assert_string_equal(m->api_base, "http://exact.example");
	m = sg_cfg_model(fx->cfg, "anything-else");
	assert_non_null(m);
	assert_string_equal(m->name, "*");
	m = sg_cfg_model(fx->cfg, "");
	assert_non_null(m);
	assert_string_equal(m->name, "*");
	/* No prefix matching against the exact name. */
	m = sg_cfg_model(fx->cfg, "gpt-4.1-mini");
	assert_non_null(m);
	assert_string_equal(m->name, "*");
}

static void
model_lookup_no_wildcard(void **state)
{
	struct fx *fx = *state;

	load_ok(fx,
	    "models = (\n"
	    "  { name = \"gpt-4.1\"; api_base = \"http://exact.example\"; }\n"
	    ");\n");
	assert_non_null(sg_cfg_model(fx->cfg, "gpt-4.1"));
	assert_null(sg_cfg_model(fx->cfg, "gpt-4"));
	assert_null(sg_cfg_model(fx->cfg, "GPT-4.1"));
	assert_null(sg_cfg_model(fx->cfg, "*x"));
}

static void
default_path_order(void **state)
{
	(void)state;
	unsetenv("SANDGATE_CONFIG");
	assert_string_equal(sg_cfg_default_path(NULL),
	    "/etc/sandgate/sandgate.conf");
	setenv("SANDGATE_CONFIG", "/srv/env.conf", 1);
	assert_string_equal(sg_cfg_default_path(NULL), "/srv/env.conf");
	assert_string_equal(sg_cfg_default_path("/srv/arg.conf"),
	    "/srv/arg.conf");
	setenv("SANDGATE_CONFIG", "", 1);
	assert_string_equal(sg_cfg_default_path(NULL),
	    "/etc/sandgate/sandgate.conf");
	unsetenv("SANDGATE_CONFIG");
	assert_string_equal(sg_cfg_default_path("/srv/arg.conf"),
	    "/srv/arg.conf");
}

/* ---- hardening (audit) ---- */

/* Found by fuzzing the loader: a sandbox tool, none named "local", and no
 * interception group made the error path look the setting up in a group
 * that is not there (SIGSEGV). Now the first tool is the default. */
static void
no_interception_group_no_local_tool(void **state)
{
	struct fx *fx = *state;

	load_ok(fx, "sandbox_tools = ( { name = \"my-e2b\"; provider = \"e2b\"; "
	    "api_key = \"k\"; } );\n");
	assert_string_equal(fx->cfg->interception.sandbox_tool, "my-e2b");
	/* "local" stays the default when there is one, wherever it is. */
	load_ok(fx, "sandbox_tools = ( { name = \"e\"; provider = \"e2b\"; "
	    "api_key = \"k\"; }, { name = \"local\"; provider = \"local\"; } );\n");
	assert_string_equal(fx->cfg->interception.sandbox_tool, "local");
	/* An empty interception group is as good as none. */
	load_ok(fx, "interception: { };\nsandbox_tools = ( { name = \"x\"; "
	    "provider = \"e2b\"; api_key = \"k\"; } );\n");
	assert_string_equal(fx->cfg->interception.sandbox_tool, "x");
}

static void
interception_tool_named_but_missing(void **state)
{
	load_fails_at(*state, "sandbox_tools = ( { name = \"my-e2b\"; provider = "
	    "\"e2b\"; api_key = \"k\"; } );\ninterception: {\n"
	    "  sandbox_tool = \"local\"; " HERE "\n};\n", "sandbox_tool");
}

/* Every setting of the wrong type, or a group given as a scalar, is an
 * error with a line, never a crash. */
static void
wrong_shapes_are_errors(void **state)
{
	struct fx *fx = *state;
	static const char *const bad[] = {
		"interception = 3;\n",
		"interception: { sandbox_tool = 3; };\n",
		"server = \"x\";\n",
		"store = 1;\n",
		"store: { path = 1; };\n",
		"auth: { keys = 1; };\n",
		"auth: { keys = ( 1 ); };\n",
		"auth: { keys = ( { name = \"a\"; key = \"k\"; tools = 1; } ); };\n",
		"auth: { keys = ( { name = \"a\"; key = \"k\"; tools = [ 1 ]; } ); };\n",
		"models = { };\n",
		"models = ( { } );\n",
		"sandbox_tools = ( { name = \"a\"; } );\n",
		"sandbox_tools = ( { provider = \"local\"; } );\n",
		"sandbox_tools = ( { name = \"a\"; provider = \"local\"; "
		    "limits = \"none\"; } );\n",
		"sessions = [ 1, 2 ];\n",
		"server: { workers = \"many\"; };\n",
		"server: { max_body_bytes = \"big\"; };\n",
		"server: { read_timeout = 0; };\n",
		"server: { recycle_mb = -1; };\n",
		"auth: { max_concurrent = 0; };\n",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (load(fx, bad[i]) != -1)
			fail_msg("loaded: %s", bad[i]);
		assert_non_null(strstr(fx->err, "sandgate.conf:"));
	}
}

/* store.url is a secret like any other, but one the gateway cannot do
 * without: unreadable or not PostgreSQL's, the load fails. */
static void
store_url_and_box(void **state)
{
	struct fx *fx = *state;

	setenv("SG_TEST_SECRET", "postgresql://sg:pw@db.internal/sg", 1);
	load_ok(fx, "store: { url = \"env:SG_TEST_SECRET\"; box = \"box-1.a_b\"; };\n");
	assert_string_equal(fx->cfg->store.url, "postgresql://sg:pw@db.internal/sg");
	assert_string_equal(fx->cfg->store.box, "box-1.a_b");
	assert_non_null(fx->cfg->store.path);
	sg_cfg_free(fx->cfg);
	fx->cfg = NULL;
	load_ok(fx, "store: { url = \"postgres://sg@/sg?host=/run/pg\"; };\n");
	assert_null(fx->cfg->store.box);
	sg_cfg_free(fx->cfg);
	fx->cfg = NULL;
	load_fails_at(fx, "store: {\n  url = \"env:SG_TEST_UNSET\"; " HERE "\n};\n",
	    "store.url cannot be read");
	load_fails_at(fx, "store: {\n  url = \"mysql://x\"; " HERE "\n};\n",
	    "postgresql://");
	load_fails_at(fx, "store: {\n  url = \"/var/lib/sandgate/x.db\"; " HERE
	    "\n};\n", "postgresql://");
	load_fails_at(fx, "store: {\n  box = \"\"; " HERE "\n};\n", "store.box");
	load_fails_at(fx, "store: {\n  box = \"a b\"; " HERE "\n};\n", "store.box");
	load_fails_at(fx, "store: {\n  box = \"a/b\"; " HERE "\n};\n", "store.box");
}

static void
key_limits_and_tools(void **state)
{
	struct fx *fx = *state;
	const struct sg_cfg_key *a, *b;

	load_ok(fx,
	    "server: { workers = [2, 10]; };\n"
	    "auth: { max_concurrent = 3; keys = (\n"
	    "  { name = \"a\"; key = \"ka\"; max_concurrent = 1; tools = [ \"e\" ]; },\n"
	    "  { name = \"b\"; key = \"kb\"; }\n"
	    "); };\n"
	    "sandbox_tools = ( { name = \"e\"; provider = \"e2b\"; api_key = \"k\"; },\n"
	    "  { name = \"local\"; provider = \"local\"; limits = \"process\"; } );\n");
	a = &fx->cfg->auth.keys[0];
	b = &fx->cfg->auth.keys[1];
	assert_int_equal(sg_cfg_key_limit(fx->cfg, a), 1);
	assert_int_equal(sg_cfg_key_limit(fx->cfg, b), 3);
	assert_int_equal(sg_cfg_key_limit(fx->cfg, NULL), 3);
	assert_true(sg_cfg_key_may_use(a, "e"));
	assert_false(sg_cfg_key_may_use(a, "local"));
	assert_true(sg_cfg_key_may_use(b, "local"));
	assert_true(sg_cfg_key_may_use(NULL, "local"));
	assert_true(sg_cfg_tool(fx->cfg, "local")->limits_process);
	assert_false(sg_cfg_tool(fx->cfg, "e")->limits_process);
	/* Without auth.max_concurrent: no cap (the queue's fair share). */
	load_ok(fx, "server: { workers = [2, 10]; };\n");
	assert_int_equal(sg_cfg_key_limit(fx->cfg, NULL), 0);
	assert_int_equal(fx->cfg->server.queue_timeout, 30);
	load_ok(fx, "server: { queue_timeout = 0; };\n");
	assert_int_equal(fx->cfg->server.queue_timeout, 0);
	/* A key may not name a tool that does not exist. */
	load_fails_at(fx, "sandbox_tools = ( { name = \"e\"; provider = \"e2b\"; "
	    "api_key = \"k\"; } );\nauth: { keys = ( { name = \"a\"; key = \"k\";\n"
	    "  tools = [ \"e\", \"typo\" ]; " HERE "\n} ); };\n", "typo");
}

static void
server_read_timeout_recycle(void **state)
{
	struct fx *fx = *state;

	load_ok(fx, "# defaults\n");
	assert_int_equal(fx->cfg->server.read_timeout, 30);
	assert_int_equal(fx->cfg->server.recycle_mb, 512);
	load_ok(fx, "server: { read_timeout = 5; recycle_mb = 0; };\n");
	assert_int_equal(fx->cfg->server.read_timeout, 5);
	assert_int_equal(fx->cfg->server.recycle_mb, 0);
}

/* api: "responses" by default; "chat" makes the gateway hold the state
 * (an upstream that has no /responses keeps none), and says so when the
 * config asks for the upstream's. */
static void
model_api(void **state)
{
	struct fx *fx = *state;

	load_ok(fx, "models = ( { name = \"a\"; api_base = \"http://x/v1\"; },\n"
	    "  { name = \"b\"; api_base = \"https://api.openai.com/v1\"; "
	    "api = \"chat\"; },\n"
	    "  { name = \"c\"; api_base = \"http://x/v1\"; api = \"chat\"; "
	    "state = \"gateway\"; } );\n");
	assert_int_equal(fx->cfg->models[0].api, SG_API_RESPONSES);
	assert_int_equal(fx->cfg->models[1].api, SG_API_CHAT);
	assert_int_equal(fx->cfg->models[1].state, SG_STATE_GATEWAY);
	assert_int_equal(fx->cfg->models[2].state, SG_STATE_GATEWAY);
	load_fails_at(fx, "models = ( { name = \"b\"; api_base = \"http://x/v1\";\n"
	    "  api = \"chat\";\n  state = \"upstream\"; " HERE "\n} );\n",
	    "api \"chat\"");
	load_fails_at(fx, "models = ( { name = \"b\"; api_base = \"http://x/v1\";\n"
	    "  api = \"completions\"; " HERE "\n} );\n", "api");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(good_server),
		T(good_auth),
		T(good_models),
		T(model_api),
		T(store_url_and_box),
		T(good_tools),
		T(good_interception_sessions),
		T(defaults_when_absent),
		T(defaults_in_empty_groups),
		T(workers_single_int),
		T(workers_min_max),
		T(workers_min_gt_max),
		T(workers_bad_shapes),
		T(syntax_error),
		T(missing_file),
		T(wrong_type_int),
		T(wrong_type_bool),
		T(wrong_type_string),
		T(wrong_type_group),
		T(int_out_of_range),
		T(max_body_bytes_out_of_range),
		T(duplicate_model_names),
		T(duplicate_key_names),
		T(provider_unknown),
		T(isolation_unknown),
		T(kernel_unknown),
		T(nul_byte_refused),
		T(key_and_key_sha256),
		T(key_sha256_short),
		T(key_sha256_not_hex),
		T(key_without_secret),
		T(api_base_not_http),
		T(api_base_missing),
		T(provider_needs_what_it_needs),
		T(sandbox_tool_checked_when_disabled),
		T(sandbox_tool_not_in_tools),
		T(secret_literal),
		T(secret_env_set),
		T(secret_env_unset),
		T(secret_env_empty),
		T(secret_os_environ),
		T(secret_os_environ_unset),
		T(secret_file_newline_stripped),
		T(secret_file_crlf_stripped),
		T(secret_file_missing),
		T(secret_direct_forms),
		T(secret_auth_key_from_env),
		T(secret_auth_key_unresolved),
		T(unknown_keys_warn),
		T(key_sha256_upper_case_normalised),
		T(mount_prefix_trailing_slash),
		T(model_state),
		T(socket_mode_octal),
		T(socket_mode_not_octal),
		T(socket_mode_empty_refused),
		T(model_lookup),
		T(model_lookup_no_wildcard),
		T(default_path_order),
		T(no_interception_group_no_local_tool),
		T(interception_tool_named_but_missing),
		T(wrong_shapes_are_errors),
		T(key_limits_and_tools),
		T(server_read_timeout_recycle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
