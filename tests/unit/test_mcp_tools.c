/*
 * core/mcp's tools and resources without a sandbox: the tool list's
 * shape, arguments refused before any sandbox is asked for, paths and
 * URIs, a run's result as content parts and structuredContent (checked
 * against run_code's own outputSchema), and a file id of another key.
 * The session's sandbox (mcp_http.c's) is stood in for by the linker
 * (--wrap): a test says what it answers and counts the asks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/mcp/mcp_tool.h"
#include "../../store/store.h"
#include "testutil.h"

/* The session's sandbox, as the test wants it. */
static struct {
	int		 asked;		/* sg_mcp_sandbox calls */
	int		 peeked;
	int		 rc;		/* what it answers */
	struct sg_error	 err;
} box;

int	__wrap_sg_mcp_sandbox(struct sg_mcp *, char id[48], int *lost,
	    struct sg_error *);
int	__wrap_sg_mcp_sandbox_peek(struct sg_mcp *, char id[48]);
int	__wrap_sg_mcp_sandbox_end(struct sg_mcp *, struct sg_error *);
int	__wrap_sg_mcp_stopped(struct sg_mcp *);
void	__wrap_sg_mcp_progress(struct sg_mcp *, double, const char *);
int	__wrap_sg_mcp_err(struct sg_mcp_err *, int code, const char *fmt, ...);

int
__wrap_sg_mcp_sandbox(struct sg_mcp *m, char id[48], int *lost,
    struct sg_error *err)
{
	(void)m;
	box.asked++;
	*lost = 0;
	snprintf(id, 48, "cntr_test");
	if (box.rc == -1)
		*err = box.err;
	return box.rc;
}

int
__wrap_sg_mcp_sandbox_peek(struct sg_mcp *m, char id[48])
{
	(void)m;
	(void)id;
	box.peeked++;
	return 0;		/* no sandbox: no files */
}

int
__wrap_sg_mcp_sandbox_end(struct sg_mcp *m, struct sg_error *err)
{
	(void)m;
	(void)err;
	return 0;
}

int
__wrap_sg_mcp_stopped(struct sg_mcp *m)
{
	(void)m;
	return 0;
}

/* The progress sent. */
static struct {
	int	 n;
	double	 last;
	char	 msg[4096];
} prog;

void
__wrap_sg_mcp_progress(struct sg_mcp *m, double p, const char *msg)
{
	(void)m;
	assert_true(p > prog.last);
	prog.n++;
	prog.last = p;
	snprintf(prog.msg, sizeof(prog.msg), "%s", msg);
}

/* A run, as the test wants it: its output grows as a provider's does. */
static struct {
	int	 calls, gone_first, stop_asked;
} fake;

int	__wrap_sg_sbx_run(struct sg_sbx_env *, const char *tenant,
	    const char *id, const char *code, int timeout_s, int keep,
	    json_t **result, struct sg_error *);

int
__wrap_sg_sbx_run(struct sg_sbx_env *env, const char *tenant, const char *id,
    const char *code, int timeout_s, int keep, json_t **result,
    struct sg_error *err)
{
	struct sg_prov *p = env->prov;
	struct sg_exec res;
	char big[3000];
	size_t i;

	assert_string_equal(tenant, "bbbb");
	assert_string_equal(id, "cntr_test");
	assert_string_equal(code, "print(1)");
	assert_int_equal(timeout_s, 0);
	assert_int_equal(keep, 1);
	if (++fake.calls == 1 && fake.gone_first) {
		sg_error_server(err, 502, "gone");
		return SG_SBX_GONE;
	}
	assert_non_null(p->stop);
	fake.stop_asked = p->stop(p->stop_arg);
	sg_exec_init(&res, 1 << 20);
	if (p->progress != NULL) {
		sg_buf_add(&res.out, "one\n", 4);
		p->progress(p->progress_arg, &res);
		/* Within 500 ms of the last: held. */
		sg_buf_add(&res.out, "two\n", 4);
		p->progress(p->progress_arg, &res);
		assert_int_equal(prog.n, 1);
		usleep(550 * 1000);
		/* 1500 two-byte characters and a "z": the newest 2 KiB
		 * would begin inside one; whole ones are sent. */
		for (i = 0; i < sizeof(big); i += 2)
			memcpy(big + i, "\xc3\xa9", 2);
		sg_buf_add(&res.err, big, sizeof(big));
		sg_buf_add(&res.err, "z", 1);
		p->progress(p->progress_arg, &res);
	}
	*result = sg_exec_json(&res);
	sg_exec_free(&res);
	return 0;
}

int
__wrap_sg_mcp_err(struct sg_mcp_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return -1;
}

struct fx {
	char			 dir[64];
	struct sg_tool		 tool;
	struct sg_cfg		 cfg;
	struct sg_store		*st;
	struct sg_prov		 prov;
	struct sg_sbx_env	 env;
	struct sg_req		 req;
	struct sg_mcp		 m;
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char path[128], err[256];

	if (fx == NULL || tu_mkdtemp(fx->dir, sizeof(fx->dir)) == -1)
		return -1;
	fx->tool.name = "local";
	fx->tool.provider = SG_PROVIDER_LOCAL;
	fx->cfg.tools = &fx->tool;
	fx->cfg.ntools = 1;
	fx->cfg.interception.sandbox_tool = "local";
	fx->cfg.interception.exec_timeout = 30;
	snprintf(path, sizeof(path), "%s/store.db", fx->dir);
	if (sg_store_open(path, &fx->st, err, sizeof(err)) != SG_STORE_OK ||
	    sg_store_migrate(fx->st) != SG_STORE_OK)
		return -1;
	sg_prov_init(&fx->prov);
	fx->env = (struct sg_sbx_env){ &fx->cfg, fx->st, &fx->prov, NULL };
	snprintf(fx->req.tenant, sizeof(fx->req.tenant), "bbbb");
	fx->m.env = &fx->env;
	fx->m.req = &fx->req;
	memset(&box, 0, sizeof(box));
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	sg_store_close(fx->st);
	sg_prov_free(&fx->prov);
	tu_rmrf(fx->dir);
	free(fx);
	return 0;
}

/* A call by JSON text: its rc, *r the result (NULL on -1). */
static int
call(struct fx *fx, const char *params, json_t **r, struct sg_mcp_err *e)
{
	json_t *p = json_loads(params, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	int rc;

	assert_non_null(p);
	memset(e, 0, sizeof(*e));
	rc = sg_mcp_tool_call(&fx->m, p, r, e);
	json_decref(p);
	return rc;
}

/* A call that must be a tool's error: its one text part. */
static void
assert_tool_error(struct fx *fx, const char *params, const char *text)
{
	struct sg_mcp_err e;
	json_t *r = NULL;
	const char *got;

	if (call(fx, params, &r, &e) != 0)
		fail_msg("%s: a protocol error: %s", params, e.message);
	assert_true(json_is_true(json_object_get(r, "isError")));
	assert_int_equal(json_array_size(json_object_get(r, "content")), 1);
	got = json_string_value(json_object_get(json_array_get(
	    json_object_get(r, "content"), 0), "text"));
	if (got == NULL || strstr(got, text) == NULL)
		fail_msg("%s: %s, not %s", params, got, text);
	json_decref(r);
}

static void
tools_listed(void **state)
{
	static const char *const names[] = { "run_code", "write_file",
	    "read_file", "list_files", "upload_file", "reset" };
	struct fx *fx = *state;
	json_t *tools = sg_mcp_tools(&fx->cfg), *t, *s;
	size_t i;

	assert_int_equal(json_array_size(tools), 6);
	json_array_foreach(tools, i, t) {
		assert_string_equal(json_string_value(json_object_get(t, "name")),
		    names[i]);
		assert_true(strspn(names[i], "abcdefghijklmnopqrstuvwxyz_") ==
		    strlen(names[i]));
		assert_non_null(json_string_value(json_object_get(t, "title")));
		assert_non_null(json_string_value(json_object_get(t,
		    "description")));
		/* The v2 client refuses the whole list for one that is not
		 * an object schema. */
		s = json_object_get(t, "inputSchema");
		assert_string_equal(json_string_value(json_object_get(s, "type")),
		    "object");
		assert_true(json_is_object(json_object_get(s, "properties")));
		assert_true(json_is_false(json_object_get(s,
		    "additionalProperties")));
		assert_true(json_is_object(json_object_get(t, "annotations")));
		assert_int_equal(json_object_get(t, "outputSchema") != NULL,
		    i == 0);
	}
	/* The sandbox has no internet: run_code's world is closed. */
	assert_true(json_is_false(json_object_get(json_object_get(
	    json_array_get(tools, 0), "annotations"), "openWorldHint")));
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_array_get(tools, 2), "annotations"), "readOnlyHint")));
	json_decref(tools);
	fx->tool.allow_internet_access = 1;
	tools = sg_mcp_tools(&fx->cfg);
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_array_get(tools, 0), "annotations"), "openWorldHint")));
	json_decref(tools);
}

static void
protocol_errors(void **state)
{
	static const char *const bad[] = {
		"[1]", "{}", "{\"name\":3}", "{\"name\":\"rm_rf\"}",
		"{\"name\":\"run_code\",\"arguments\":\"print(1)\"}",
		"{\"name\":\"run_code\",\"arguments\":[]}",
	};
	struct fx *fx = *state;
	struct sg_mcp_err e;
	json_t *r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(call(fx, bad[i], &r, &e), -1);
		assert_null(r);
		assert_int_equal(e.code, SG_MCP_INVALID_PARAMS);
	}
	assert_int_equal(call(fx, "{\"name\":\"rm_rf\"}", &r, &e), -1);
	assert_string_equal(e.message, "Unknown tool: rm_rf");
	assert_int_equal(box.asked, 0);
}

/* Arguments a tool refuses: an isError result, and no sandbox asked
 * for (nothing is made for a call that cannot run). */
static void
arguments_refused(void **state)
{
	static const struct {
		const char *params, *text;
	} cases[] = {
		{ "{\"name\":\"run_code\"}", "'code' is required" },
		{ "{\"name\":\"run_code\",\"arguments\":{\"code\":1}}",
		    "'code' must be a string" },
		{ "{\"name\":\"run_code\",\"arguments\":{\"code\":\"a\\u0000b\"}}",
		    "NUL" },
		{ "{\"name\":\"run_code\",\"arguments\":{\"code\":\"1\","
		    "\"timeout\":5}}", "no argument 'timeout'" },
		{ "{\"name\":\"reset\",\"arguments\":{\"x\":1}}",
		    "no argument 'x'" },
		{ "{\"name\":\"write_file\",\"arguments\":{\"path\":\"a\","
		    "\"content\":\"x\",\"encoding\":\"latin1\"}}", "'encoding'" },
		{ "{\"name\":\"write_file\",\"arguments\":{\"path\":\"a\","
		    "\"content\":\"!!!!\",\"encoding\":\"base64\"}}",
		    "not base64" },
		{ "{\"name\":\"write_file\",\"arguments\":{\"path\":\"a\"}}",
		    "'content' is required" },
		{ "{\"name\":\"write_file\",\"arguments\":{\"path\":\"../x\","
		    "\"content\":\"x\"}}", "\"..\"" },
		{ "{\"name\":\"write_file\",\"arguments\":{\"path\":"
		    "\"/mnt/data/a/../../../etc/passwd\",\"content\":\"x\"}}",
		    "\"..\"" },
		{ "{\"name\":\"write_file\",\"arguments\":{\"path\":"
		    "\"/etc/passwd\",\"content\":\"x\"}}", "under /mnt/data" },
		{ "{\"name\":\"write_file\",\"arguments\":{\"path\":"
		    "\"/mnt/database/x\",\"content\":\"x\"}}", "under /mnt/data" },
		{ "{\"name\":\"write_file\",\"arguments\":{\"path\":"
		    "\"a\\u0000b\",\"content\":\"x\"}}", "NUL" },
		{ "{\"name\":\"write_file\",\"arguments\":{\"path\":"
		    "\"a\\nb\",\"content\":\"x\"}}", "control character" },
		{ "{\"name\":\"write_file\",\"arguments\":{\"path\":"
		    "\"/mnt/data/\",\"content\":\"x\"}}", "must name a file" },
		{ "{\"name\":\"read_file\",\"arguments\":{\"path\":"
		    "\"/proc/self/environ\"}}", "under /mnt/data" },
		{ "{\"name\":\"read_file\",\"arguments\":{}}",
		    "'path' is required" },
		{ "{\"name\":\"list_files\",\"arguments\":{\"path\":\"..\"}}",
		    "\"..\"" },
		{ "{\"name\":\"upload_file\",\"arguments\":{\"file_id\":"
		    "\"file-1\",\"path\":\"/tmp/x\"}}", "under /mnt/data" },
		{ "{\"name\":\"upload_file\",\"arguments\":{}}",
		    "'file_id' is required" },
	};
	struct fx *fx = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_tool_error(fx, cases[i].params, cases[i].text);
	assert_int_equal(box.asked, 0);
	assert_int_equal(box.peeked, 0);
}

static void
code_too_large(void **state)
{
	struct fx *fx = *state;
	size_t n = SG_MCP_CODE_MAX + 1;
	char *code = malloc(n + 1);
	json_t *p, *r = NULL;
	struct sg_mcp_err e;

	memset(code, 'x', n);
	code[n] = '\0';
	p = json_pack("{s:s,s:{s:s}}", "name", "run_code", "arguments", "code",
	    code);
	free(code);
	assert_int_equal(sg_mcp_tool_call(&fx->m, p, &r, &e), 0);
	assert_true(json_is_true(json_object_get(r, "isError")));
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(
	    json_object_get(r, "content"), 0), "text")), "too large"));
	assert_int_equal(box.asked, 0);
	json_decref(p);
	json_decref(r);
}

/* The sandbox cannot be had: the tool's error, said as the API says it;
 * a store that failed is the protocol's -32603, its detail not sent. */
static void
sandbox_refused(void **state)
{
	struct fx *fx = *state;
	struct sg_mcp_err e;
	json_t *r;

	box.rc = -1;
	sg_error_set(&box.err, 403, "invalid_request_error", "tool_not_allowed",
	    "tools", "This API key may not use the sandbox tool 'local'.");
	assert_tool_error(fx, "{\"name\":\"run_code\",\"arguments\":"
	    "{\"code\":\"1\"}}", "may not use the sandbox tool 'local'");
	assert_tool_error(fx, "{\"name\":\"write_file\",\"arguments\":"
	    "{\"path\":\"a.txt\",\"content\":\"x\"}}", "may not use");
	assert_int_equal(box.asked, 2);
	sg_error_store(&box.err, "disk I/O error at /secret/path");
	assert_int_equal(call(fx, "{\"name\":\"run_code\",\"arguments\":"
	    "{\"code\":\"1\"}}", &r, &e), -1);
	assert_int_equal(e.code, SG_MCP_INTERNAL);
	assert_null(strstr(e.message, "secret"));
}

/* A session without a sandbox has no files, and none is made to say so. */
static void
no_sandbox_no_files(void **state)
{
	struct fx *fx = *state;
	struct sg_mcp_err e;
	json_t *r, *p;

	assert_tool_error(fx, "{\"name\":\"read_file\",\"arguments\":{\"path\":"
	    "\"a.csv\"}}", "No such file: /mnt/data/a.csv.");
	assert_int_equal(call(fx, "{\"name\":\"list_files\"}", &r, &e), 0);
	assert_true(json_is_false(json_object_get(r, "isError")));
	assert_int_equal(json_array_size(json_object_get(json_object_get(r,
	    "structuredContent"), "files")), 0);
	json_decref(r);
	p = json_object();
	assert_int_equal(sg_mcp_res_list(&fx->m, p, &r, &e), 0);
	assert_int_equal(json_array_size(json_object_get(r, "resources")), 0);
	assert_null(json_object_get(r, "nextCursor"));
	json_decref(r);
	json_object_set_new(p, "uri", json_string("sandbox:/mnt/data/a.csv"));
	e.data = NULL;
	assert_int_equal(sg_mcp_res_read(&fx->m, p, &r, &e), -1);
	assert_int_equal(e.code, SG_MCP_NO_RESOURCE);
	assert_string_equal(json_string_value(json_object_get(e.data, "uri")),
	    "sandbox:/mnt/data/a.csv");
	json_decref(e.data);
	json_object_set_new(p, "uri", json_string("sandbox:/etc/passwd"));
	assert_int_equal(sg_mcp_res_read(&fx->m, p, &r, &e), -1);
	assert_int_equal(e.code, SG_MCP_INVALID_PARAMS);
	json_object_set_new(p, "cursor", json_string("bm9wZQ=="));
	assert_int_equal(sg_mcp_res_list(&fx->m, p, &r, &e), -1);
	assert_int_equal(e.code, SG_MCP_INVALID_PARAMS);
	json_decref(p);
	assert_int_equal(box.asked, 0);
}

static int	route_stop_calls;

static int
route_stop(void *arg)
{
	(void)arg;
	route_stop_calls++;
	return 0;
}

/* A run: its output as progress while it runs (paced, at most 2 KiB,
 * whole characters, rising), the route's stop hook still asked, and the
 * hooks gone after. */
static void
run_progress(void **state)
{
	struct fx *fx = *state;
	struct sg_mcp_err e;
	json_t *r, *token = json_integer(7);
	const char *text;

	memset(&fake, 0, sizeof(fake));
	memset(&prog, 0, sizeof(prog));
	route_stop_calls = 0;
	fx->prov.stop = route_stop;
	fx->m.progress = token;
	assert_int_equal(call(fx, "{\"name\":\"run_code\",\"arguments\":"
	    "{\"code\":\"print(1)\"}}", &r, &e), 0);
	assert_int_equal(prog.n, 2);
	assert_true(prog.last == 3009.0);
	assert_int_equal(strlen(prog.msg), 2047);
	assert_int_equal(strncmp(prog.msg, "\xc3\xa9", 2), 0);
	assert_int_equal(prog.msg[2046], 'z');
	assert_int_equal(route_stop_calls, 1);
	assert_int_equal(fake.stop_asked, 0);
	assert_ptr_equal(fx->prov.stop, route_stop);
	assert_null(fx->prov.progress);
	text = json_string_value(json_object_get(json_array_get(
	    json_object_get(r, "content"), 0), "text"));
	assert_non_null(strstr(text, "one\ntwo\n"));
	assert_null(strstr(text, "sandgate: this session's sandbox was lost"));
	json_decref(r);
	json_decref(token);
	fx->m.progress = NULL;
}

/* A sandbox gone during the run: the code runs again in the session's
 * next one, and the result says the state was lost. */
static void
run_gone(void **state)
{
	struct fx *fx = *state;
	struct sg_mcp_err e;
	json_t *r;

	memset(&fake, 0, sizeof(fake));
	fake.gone_first = 1;
	assert_int_equal(call(fx, "{\"name\":\"run_code\",\"arguments\":"
	    "{\"code\":\"print(1)\"}}", &r, &e), 0);
	assert_int_equal(fake.calls, 2);
	assert_int_equal(box.asked, 2);
	assert_true(json_is_false(json_object_get(r, "isError")));
	assert_int_equal(strncmp(json_string_value(json_object_get(
	    json_array_get(json_object_get(r, "content"), 0), "text")),
	    SG_MCP_LOST_NOTE, strlen(SG_MCP_LOST_NOTE)), 0);
	json_decref(r);
}

/* Record a file of tenant, in state. */
static void
add_file(struct fx *fx, const char *id, const char *tenant, int ready)
{
	struct sg_store_quota q = { 1 << 30, 1000, 0, 0 };
	struct sg_store_file f;

	memset(&f, 0, sizeof(f));
	snprintf(f.id, sizeof(f.id), "%s", id);
	snprintf(f.tenant, sizeof(f.tenant), "%s", tenant);
	snprintf(f.filename, sizeof(f.filename), "data.csv");
	snprintf(f.purpose, sizeof(f.purpose), "user_data");
	f.bytes = 4;
	f.owner_pid = 1;
	f.created_at = 1;
	f.expires_at = 4000000000;
	if (sg_store_file_begin(fx->st, &f, &q) != SG_STORE_OK)
		fail_msg("begin: %s", sg_store_errmsg(fx->st));
	if (ready)
		assert_int_equal(sg_store_file_ready(fx->st, &f), SG_STORE_OK);
}

/* Another key's file is no file: the same words as one that never was,
 * and no sandbox asked for. */
static void
upload_other_keys_file(void **state)
{
	struct fx *fx = *state;

	add_file(fx, "file-aaaa1", "aaaa", 1);
	add_file(fx, "file-bbbb2", "bbbb", 0);
	assert_tool_error(fx, "{\"name\":\"upload_file\",\"arguments\":"
	    "{\"file_id\":\"file-aaaa1\"}}", "No such file: file-aaaa1.");
	assert_tool_error(fx, "{\"name\":\"upload_file\",\"arguments\":"
	    "{\"file_id\":\"file-nope\"}}", "No such file: file-nope.");
	/* Its own, still uploading, is not one yet. */
	assert_tool_error(fx, "{\"name\":\"upload_file\",\"arguments\":"
	    "{\"file_id\":\"file-bbbb2\"}}", "No such file: file-bbbb2.");
	assert_int_equal(box.asked, 0);
}

static void
paths(void **state)
{
	static const struct {
		const char *in, *out;
		int dir_ok;
	} ok[] = {
		{ "a.csv", "/mnt/data/a.csv", 0 },
		{ "./sub//b.txt", "/mnt/data/sub/b.txt", 0 },
		{ "/mnt/data/x/./y", "/mnt/data/x/y", 0 },
		{ "/mnt/data", "/mnt/data", 1 },
		{ "", "/mnt/data", 1 },
		{ "sub/", "/mnt/data/sub", 1 },
		{ "..a/b..", "/mnt/data/..a/b..", 0 },
		{ "caf\xc3\xa9 plot.png", "/mnt/data/caf\xc3\xa9 plot.png", 0 },
	};
	static const char *const bad[] = { "..", "a/../b", "/mnt/data/..",
	    "/mnt/data2/x", "/mnt", "/", "/etc/passwd", "a\tb", "a\x7f", "",
	    "/mnt/data", "." };
	char out[SG_MCP_PATH_MAX], why[128], *longp;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (sg_mcp_path(ok[i].in, ok[i].dir_ok, out, why,
		    sizeof(why)) != 0)
			fail_msg("%s: %s", ok[i].in, why);
		assert_string_equal(out, ok[i].out);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sg_mcp_path(bad[i], 0, out, why, sizeof(why)) == 0)
			fail_msg("%s taken as %s", bad[i], out);
	longp = malloc(SG_MCP_PATH_MAX);
	memset(longp, 'a', SG_MCP_PATH_MAX - 1);
	longp[SG_MCP_PATH_MAX - 1] = '\0';
	assert_int_equal(sg_mcp_path(longp, 0, out, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "too long"));
	free(longp);
}

static void
uris(void **state)
{
	static const char *const bad[] = { "sandbox:/etc/passwd",
	    "sandbox:/mnt/data/../etc/passwd", "sandbox:/mnt/data/%2e%2e/x",
	    "sandbox:/mnt/data/a%00b", "sandbox:/mnt/data/a%2", "sandbox:/mnt/data/%zz",
	    "sandbox:mnt/data/a", "file:///mnt/data/a", "sandbox:/mnt/data/",
	    "sandbox:/mnt/data/a?b", "sandbox:/mnt/data/a#b", "sandbox:",
	    "sandbox:/mnt/data/a%0Ab" };
	char out[SG_MCP_PATH_MAX], *uri;
	size_t i;

	(void)state;
	uri = sg_mcp_uri("/mnt/data/my plot #1?%.png");
	assert_string_equal(uri, "sandbox:/mnt/data/my%20plot%20%231%3F%25.png");
	assert_int_equal(sg_mcp_uri_path(uri, out), 0);
	assert_string_equal(out, "/mnt/data/my plot #1?%.png");
	free(uri);
	uri = sg_mcp_uri("/mnt/data/caf\xc3\xa9/a+b.csv");
	assert_string_equal(uri, "sandbox:/mnt/data/caf%C3%A9/a%2Bb.csv");
	assert_int_equal(sg_mcp_uri_path(uri, out), 0);
	assert_string_equal(out, "/mnt/data/caf\xc3\xa9/a+b.csv");
	free(uri);
	assert_int_equal(sg_mcp_uri_path("sandbox:/mnt/data/sub/x.txt", out), 0);
	assert_string_equal(out, "/mnt/data/sub/x.txt");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sg_mcp_uri_path(bad[i], out) == 0)
			fail_msg("%s taken as %s", bad[i], out);
}

/* 1x1 PNG. */
#define PNG "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgY" \
	"PgPAAEDAQAIicLsAAAAAElFTkSuQmCC"

/* structuredContent as run_code's outputSchema says it (the checks the
 * SDK clients make, on this schema). */
static void
assert_conforms(const json_t *sc)
{
	json_t *schema = sg_mcp_run_schema(), *req, *r, *err;
	size_t i;

	assert_true(json_is_object(sc));
	json_array_foreach(json_object_get(schema, "required"), i, req)
		assert_non_null(json_object_get(sc, json_string_value(req)));
	assert_true(json_is_string(json_object_get(sc, "stdout")));
	assert_true(json_is_string(json_object_get(sc, "stderr")));
	json_array_foreach(json_object_get(sc, "results"), i, r)
		assert_true(json_is_object(r));
	err = json_object_get(sc, "error");
	assert_true(json_is_null(err) || (json_is_object(err) &&
	    json_is_string(json_object_get(err, "name")) &&
	    json_is_string(json_object_get(err, "value")) &&
	    (json_is_string(json_object_get(err, "traceback")) ||
	    json_is_null(json_object_get(err, "traceback")))));
	assert_true(json_is_integer(json_object_get(sc, "execution_count")) ||
	    json_is_null(json_object_get(sc, "execution_count")));
	json_decref(schema);
}

static void
run_mapped(void **state)
{
	json_t *run = json_pack("{s:s,s:s,s:s,s:[{s:s,s:s,s:b},{s:s,s:s},"
	    "{s:s,s:s,s:{s:s,s:s}}],s:{s:s,s:s,s:s},s:i}",
	    "object", "code_execution", "stdout", "mean=2.0\n", "stderr", "",
	    "results", "png", PNG, "text", "<Figure>", "is_main_result", 0,
	    "jpeg", "not base64!", "pdf", "JVBERi0=",
	    "html", "<b>x</b>", "text", "x", "extra", "image/gif", "R0lGOD==",
	    "application/x-thing", "{}",
	    "error", "name", "ZeroDivisionError", "value", "division by zero",
	    "traceback", "Traceback...\nZeroDivisionError: division by zero",
	    "execution_count", 3);
	json_t *r = sg_mcp_run_result(run, SG_MCP_LOST_NOTE), *c, *sc, *res;
	const char *text, *dump;
	char *s;

	(void)state;
	assert_non_null(r);
	assert_true(json_is_false(json_object_get(r, "isError")));
	c = json_object_get(r, "content");
	/* The text the loop gives models, the lost note first; one image:
	 * the JPEG that is not base64 is not sent (clients would refuse
	 * the whole result), nor the PDF. */
	assert_int_equal(json_array_size(c), 2);
	text = json_string_value(json_object_get(json_array_get(c, 0), "text"));
	assert_int_equal(strncmp(text, SG_MCP_LOST_NOTE,
	    strlen(SG_MCP_LOST_NOTE)), 0);
	assert_non_null(strstr(text, "mean=2.0"));
	assert_non_null(strstr(text, "ZeroDivisionError: division by zero"));
	assert_string_equal(json_string_value(json_object_get(json_array_get(c,
	    1), "type")), "image");
	assert_string_equal(json_string_value(json_object_get(json_array_get(c,
	    1), "mimeType")), "image/png");
	assert_string_equal(json_string_value(json_object_get(json_array_get(c,
	    1), "data")), PNG);
	sc = json_object_get(r, "structuredContent");
	assert_conforms(sc);
	assert_null(json_object_get(sc, "object"));
	assert_int_equal(json_integer_value(json_object_get(sc,
	    "execution_count")), 3);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    sc, "error"), "name")), "ZeroDivisionError");
	/* No image's bytes twice: the binary formats only named. */
	s = json_dumps(sc, 0);
	assert_null(strstr(s, PNG));
	assert_null(strstr(s, "JVBERi0="));
	assert_null(strstr(s, "R0lGOD=="));
	free(s);
	res = json_object_get(sc, "results");
	assert_int_equal(json_array_size(res), 3);
	dump = json_dumps(json_object_get(json_array_get(res, 0), "formats"),
	    JSON_COMPACT);
	assert_string_equal(dump, "[\"png\",\"text\"]");
	free((char *)dump);
	assert_string_equal(json_string_value(json_object_get(json_array_get(res,
	    0), "text")), "<Figure>");
	assert_string_equal(json_string_value(json_object_get(json_array_get(res,
	    2), "html")), "<b>x</b>");
	assert_non_null(json_object_get(json_object_get(json_array_get(res, 2),
	    "extra"), "application/x-thing"));
	json_decref(r);
	json_decref(run);
}

/* A sandbox's result that breaks the schema is rebuilt to it. */
static void
run_hostile(void **state)
{
	json_t *run = json_pack("{s:i,s:[i,s,{s:i}],s:{s:i,s:[],s:i},s:s}",
	    "stdout", 5, "results", 1, "x", "is_main_result", 7,
	    "error", "name", 1, "value", "traceback", 2,
	    "execution_count", "three");
	json_t *r = sg_mcp_run_result(run, NULL), *sc;

	(void)state;
	assert_non_null(r);
	sc = json_object_get(r, "structuredContent");
	assert_conforms(sc);
	assert_int_equal(json_array_size(json_object_get(sc, "results")), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    sc, "error"), "name")), "Error");
	assert_true(json_is_null(json_object_get(sc, "execution_count")));
	json_decref(r);
	json_decref(run);
	/* Nothing at all: "(no output)", error null. */
	run = json_object();
	r = sg_mcp_run_result(run, NULL);
	assert_conforms(json_object_get(r, "structuredContent"));
	assert_true(json_is_null(json_object_get(json_object_get(r,
	    "structuredContent"), "error")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(r, "content"), 0), "text")), "(no output)");
	json_decref(r);
	json_decref(run);
}

static void
base64(void **state)
{
	struct sg_buf b = { 0 };
	json_t *s;

	(void)state;
	assert_int_equal(sg_mcp_unb64("aGVs\nbG8=\r\n", 11, &b), 0);
	assert_int_equal(b.len, 5);
	assert_memory_equal(b.p, "hello", 5);
	assert_int_equal(sg_mcp_unb64("AA==", 4, &b), 0);
	assert_int_equal(b.len, 1);
	assert_int_equal(b.p[0], 0);
	assert_int_equal(sg_mcp_unb64("", 0, &b), 0);
	assert_int_equal(b.len, 0);
	assert_int_equal(sg_mcp_unb64("aGVsbG8", 7, &b), -1);
	assert_int_equal(sg_mcp_unb64("aG=sbG8=", 8, &b), -1);
	assert_int_equal(sg_mcp_unb64("aGVs\0G8=", 8, &b), -1);
	assert_int_equal(sg_mcp_unb64("aGVs-G8=", 8, &b), -1);
	free(b.p);
	s = sg_mcp_b64("\xff\x00hello", 7);
	assert_string_equal(json_string_value(s), "/wBoZWxsbw==");
	json_decref(s);
	assert_true(sg_mcp_b64_ok(PNG, strlen(PNG)));
	assert_false(sg_mcp_b64_ok("abc", 3));
	assert_false(sg_mcp_b64_ok("ab c", 4));
	assert_false(sg_mcp_b64_ok("a===", 4));
}

static void
text_or_bytes(void **state)
{
	size_t n;

	(void)state;
	n = 6;
	assert_true(sg_mcp_is_text("text/csv", "a,b\n1,", &n, 0));
	n = 5;
	assert_true(sg_mcp_is_text(NULL, "caf\xc3\xa9", &n, 0));
	n = 3;
	assert_false(sg_mcp_is_text("text/plain", "a\0b", &n, 0));
	n = 3;
	assert_false(sg_mcp_is_text(NULL, "a\xff" "b", &n, 0));
	n = 4;
	assert_false(sg_mcp_is_text("image/png", "abcd", &n, 0));
	/* A cut that split a character: text, the split one left out. */
	n = 4;
	assert_false(sg_mcp_is_text(NULL, "caf\xc3", &n, 0));
	assert_true(sg_mcp_is_text(NULL, "caf\xc3", &n, 1));
	assert_int_equal(n, 3);
	assert_string_equal(sg_mcp_mime("/mnt/data/a.CSV"), "text/csv");
	assert_string_equal(sg_mcp_mime("/mnt/data/p.png"), "image/png");
	assert_null(sg_mcp_mime("/mnt/data/.bashrc"));
	assert_null(sg_mcp_mime("/mnt/data/x.y/README"));
}

static void
templates(void **state)
{
	json_t *t = sg_mcp_res_templates();

	(void)state;
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(t, "resourceTemplates"), 0), "uriTemplate")),
	    "sandbox:/mnt/data/{+path}");
	json_decref(t);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(tools_listed),
		T(protocol_errors),
		T(arguments_refused),
		T(code_too_large),
		T(sandbox_refused),
		T(no_sandbox_no_files),
		T(upload_other_keys_file),
		T(run_progress),
		T(run_gone),
		cmocka_unit_test(paths),
		cmocka_unit_test(uris),
		cmocka_unit_test(run_mapped),
		cmocka_unit_test(run_hostile),
		cmocka_unit_test(base64),
		cmocka_unit_test(text_or_bytes),
		cmocka_unit_test(templates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
