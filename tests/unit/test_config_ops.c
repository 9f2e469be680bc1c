/*
 * core/config: the settings of what runs beside the API (config_usage.c):
 * where the console is served, the background runners, the MCP server.
 * The fixture is cfgtest.h's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "cfgtest.h"

/* The console's path is a prefix of the route path: it may not hide an
 * API route or step out of its folder. */
static void
console_path(void **state)
{
	struct fx *fx = *state;
	static const char *const bad[] = { "console", "/console", "/",
	    "/v1/console/", "/a//b/", "/a/../", "/a/./", "/metrics/",
	    "/healthz/", "/a b/", "/a%2f/" };
	char text[256];
	size_t i;

	load_ok(fx, "");
	assert_int_equal(fx->cfg->console.enabled, 1);
	assert_string_equal(fx->cfg->console.path, "/console/");
	load_ok(fx, "console: { enabled = false; path = \"/ops/console/\"; };\n");
	assert_int_equal(fx->cfg->console.enabled, 0);
	assert_string_equal(fx->cfg->console.path, "/ops/console/");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "console: {\n  path = \"%s\"; "
		    HERE "\n};\n", bad[i]);
		load_fails_at(fx, text, "console.path");
	}
	load_ok(fx, "console: { colour = 1; };\n");
	assert_true(find_warning(fx->cfg, "console", "colour") >= 0);
}

/* Runners: 2 by default, 0 (background refused) to 64; each key's cap
 * 0 (none) and up. */
static void
background_group(void **state)
{
	struct fx *fx = *state;

	load_ok(fx, "");
	assert_int_equal(fx->cfg->background.runners, 2);
	assert_int_equal(fx->cfg->background.max_per_key, 4);
	load_ok(fx, "background: { runners = 0; max_per_key = 0; };\n");
	assert_int_equal(fx->cfg->background.runners, 0);
	assert_int_equal(fx->cfg->background.max_per_key, 0);
	load_fails_at(fx, "background: {\n  runners = 65; " HERE "\n};\n",
	    "runners");
	load_fails_at(fx, "background: {\n  max_per_key = -1; " HERE
	    "\n};\n", "max_per_key");
}

/* The MCP endpoint: on, at /mcp, its sessions' sandboxes of the
 * intercepted code's tool unless it names one of the tools; a path is
 * one exact path, not under the API's. */
static void
mcp_group(void **state)
{
	struct fx *fx = *state;
	static const char tools[] = "sandbox_tools = ( { name = \"a\"; "
	    "provider = \"local\"; }, { name = \"b\"; provider = \"local\"; "
	    "} );\n";
	static const char *const bad[] = { "mcp", "/mcp/", "/", "/v1/mcp",
	    "/v1", "/a//b", "/a/../b", "/metrics", "/healthz", "/a b" };
	char text[512];
	size_t i;

	snprintf(text, sizeof(text), "%s", tools);
	load_ok(fx, text);
	assert_int_equal(fx->cfg->mcp.enabled, 1);
	assert_string_equal(fx->cfg->mcp.path, "/mcp");
	assert_string_equal(fx->cfg->mcp.sandbox_tool, "a");
	snprintf(text, sizeof(text), "%smcp: { enabled = false; path = "
	    "\"/tools/mcp\"; sandbox_tool = \"b\"; };\n", tools);
	load_ok(fx, text);
	assert_int_equal(fx->cfg->mcp.enabled, 0);
	assert_string_equal(fx->cfg->mcp.path, "/tools/mcp");
	assert_string_equal(fx->cfg->mcp.sandbox_tool, "b");
	snprintf(text, sizeof(text), "%smcp: {\n  sandbox_tool = \"c\"; "
	    HERE "\n};\n", tools);
	load_fails_at(fx, text, "mcp.sandbox_tool c is not in sandbox_tools");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "mcp: {\n  path = \"%s\"; " HERE
		    "\n};\n", bad[i]);
		load_fails_at(fx, text, "mcp.path");
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(console_path),
		T(background_group),
		T(mcp_group),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
