/*
 * core/api/gateway: what it checks before any upstream or sandbox work — the
 * size of a body's JSON tree, the key's sandbox tools, and admission (the
 * hook fcgi/ fills from the scoreboard). Model calls go to a closed port,
 * so whatever passes the checks ends as a quick 502.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "../../core/api/gateway.h"
#include "../../lib/util.h"
#include "../../store/store.h"
#include "testutil.h"

#define CONFIG \
	"server: { workers = [1, 4]; };\n" \
	"store: { path = \"%s/sg.db\"; };\n" \
	"auth: { keys = ( { name = \"dave\"; key = \"sk-dave\"; " \
	    "tools = [ \"other\" ]; },\n" \
	"  { name = \"erin\"; key = \"sk-erin\"; } ); };\n" \
	"models = ( { name = \"m\"; api_base = \"http://127.0.0.1:1/v1\"; " \
	    "api_key = \"x\"; } );\n" \
	"sandbox_tools = ( { name = \"local\"; provider = \"local\"; " \
	    "isolation = \"none\"; },\n" \
	"  { name = \"other\"; provider = \"local\"; isolation = \"none\"; } );\n"

#define CODE_TOOL "\"tools\":[{\"type\":\"code_interpreter\"," \
	"\"container\":{\"type\":\"auto\"}}]"


/* What the admission hook was told, and whether it refuses. */
struct seen {
	int			 calls, heavy, refuse, alive;
	char			 tenant[80];
	const struct sg_cfg_key	*key;
};

struct fx {
	char		 dir[64];
	struct sg_cfg	*cfg;
	struct sg_gw	*gw;
	struct tu_capture	 c;
	struct seen	 seen;
};

static int
record_admit(void *arg, const struct sg_req *req, int heavy,
    struct sg_out *out, struct sg_error *err)
{
	struct seen *s = arg;

	s->calls++;
	s->heavy = heavy;
	s->key = req->key;
	s->alive = out->alive(out);
	snprintf(s->tenant, sizeof(s->tenant), "%s", req->tenant[0] != '\0' ?
	    req->tenant : "(none)");
	if (s->refuse)
		return sg_error_set(err, 429, "requests", "rate_limit_exceeded",
		    NULL, "Too many concurrent requests for this key (limit "
		    "1); retry shortly.");
	return 0;
}

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char path[128], text[2048], err[512];
	struct sg_store *st;

	if (fx == NULL || tu_mkdtemp(fx->dir, sizeof(fx->dir)) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/sandgate.conf", fx->dir);
	snprintf(text, sizeof(text), CONFIG, fx->dir);
	if (tu_write_file(path, text, -1) == -1 ||
	    sg_cfg_load(path, &fx->cfg, err, sizeof(err)) == -1)
		fail_msg("config: %s", err);
	snprintf(path, sizeof(path), "%s/sg.db", fx->dir);
	if (sg_store_open(path, &st, err, sizeof(err)) != 0 ||
	    sg_store_migrate(st) != SG_STORE_OK)
		fail_msg("store: %s", err);
	sg_store_close(st);
	if (sg_gw_new(fx->cfg, &fx->gw, err, sizeof(err)) == -1)
		fail_msg("gateway: %s", err);
	tu_capture_init(&fx->c);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	sg_gw_free(fx->gw);
	sg_cfg_free(fx->cfg);
	tu_rmrf(fx->dir);
	free(fx->c.b.p);
	free(fx);
	return 0;
}

/* Handle one request; the status it got (the reply is in fx->c.b). */
static int
handle(struct fx *fx, const char *method, const char *uri, const char *key,
    const char *body)
{
	char auth[64];
	struct sg_req req;
	int status = 0;

	memset(&req, 0, sizeof(req));
	free(fx->c.b.p);
	memset(&fx->c.b, 0, sizeof(fx->c.b));
	fx->c.out.started = fx->c.out.status = 0;
	snprintf(auth, sizeof(auth), "Bearer %s", key != NULL ? key : "");
	req.method = method;
	req.uri = uri;
	req.authorization = key != NULL ? auth : NULL;
	if (body != NULL) {
		req.body = strdup(body);
		req.body_len = strlen(body);
	}
	sg_gw_req_init(fx->cfg, &req);
	sg_gw_handle(fx->gw, &req, &fx->c.out);
	free(req.body);
	assert_non_null(fx->c.b.p);
	sscanf(fx->c.b.p, "Status: %d", &status);
	return status;
}

/* A chat body with pad spliced in as the value of "pad". */
static char *
chat_with(const char *pad)
{
	struct sg_buf b = { NULL, 0, 0 };
	const char *head = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\"}],\"pad\":";

	assert_int_equal(sg_buf_add(&b, head, strlen(head)), 0);
	assert_int_equal(sg_buf_add(&b, pad, strlen(pad)), 0);
	assert_int_equal(sg_buf_add(&b, "}", 1), 0);
	return b.p;
}

/* "[0,0,...]" of n values, or n nested empty arrays when nested. */
static char *
pad_of(size_t n, int nested)
{
	struct sg_buf b = { NULL, 0, 0 };
	size_t i;

	if (nested) {
		for (i = 0; i < n; i++)
			assert_int_equal(sg_buf_add(&b, "[", 1), 0);
		for (i = 0; i < n; i++)
			assert_int_equal(sg_buf_add(&b, "]", 1), 0);
		return b.p;
	}
	assert_int_equal(sg_buf_add(&b, "[0", 2), 0);
	for (i = 1; i < n; i++)
		assert_int_equal(sg_buf_add(&b, ",0", 2), 0);
	assert_int_equal(sg_buf_add(&b, "]", 1), 0);
	return b.p;
}

static void
complex_body(struct fx *fx, size_t n, int nested, int want)
{
	char *pad = pad_of(n, nested), *body = chat_with(pad);

	assert_int_equal(handle(fx, "POST", "/v1/chat/completions", "sk-erin",
	    body), want);
	if (want == 400) {
		assert_contains(fx->c.b.p, "\"code\":\"request_too_complex\"");
		assert_contains(fx->c.b.p, "\"type\":\"invalid_request_error\"");
		assert_contains(fx->c.b.p, "\"param\":null");
	}
	free(pad);
	free(body);
}

static void
too_many_values(void **state)
{
	complex_body(*state, 200000, 0, 400);
	complex_body(*state, 1000, 0, 502);
}

static void
too_deep(void **state)
{
	/* The object around pad is one level: 127 arrays make 128. */
	complex_body(*state, 128, 1, 400);
	complex_body(*state, 127, 1, 502);
}

static void
key_without_the_tool(void **state)
{
	struct fx *fx = *state;
	const char *body = "{\"model\":\"m\",\"input\":\"hi\"," CODE_TOOL "}";

	assert_int_equal(handle(fx, "POST", "/v1/responses", "sk-dave", body),
	    403);
	assert_contains(fx->c.b.p, "{\"error\":{\"message\":\"This API key "
	    "may not use the sandbox tool 'local'.\",\"type\":"
	    "\"invalid_request_error\",\"param\":\"tools\",\"code\":"
	    "\"tool_not_allowed\"}}");
	/* Another key may; the closed upstream port answers it. */
	assert_int_equal(handle(fx, "POST", "/v1/responses", "sk-erin", body),
	    502);
	/* Without code_interpreter there is nothing to refuse. */
	assert_int_equal(handle(fx, "POST", "/v1/responses", "sk-dave",
	    "{\"model\":\"m\",\"input\":\"hi\"}"), 502);
}

static void
admission_told_route_and_caller(void **state)
{
	struct fx *fx = *state;
	char dave[65];

	sg_sha256_hex("sk-dave", 7, dave);
	sg_gw_set_admit(fx->gw, record_admit, &fx->seen);
	assert_int_equal(handle(fx, "GET", "/healthz", NULL, NULL), 200);
	assert_int_equal(fx->seen.calls, 1);
	assert_int_equal(fx->seen.heavy, 0);
	assert_string_equal(fx->seen.tenant, "(none)");
	assert_int_equal(handle(fx, "GET", "/v1/models", "sk-dave", NULL), 200);
	assert_int_equal(fx->seen.heavy, 0);
	assert_string_equal(fx->seen.tenant, dave);
	assert_non_null(fx->seen.key);
	assert_string_equal(fx->seen.key->name, "dave");
	handle(fx, "POST", "/v1/chat/completions", "sk-dave", "{}");
	assert_int_equal(fx->seen.heavy, 1);
	/* The client's connection, for a wait to watch. */
	assert_int_equal(fx->seen.alive, 1);
	handle(fx, "GET", "/v1/sandboxes", "sk-dave", NULL);
	assert_int_equal(fx->seen.heavy, 1);
	/* Unknown routes and bad keys are answered before admission. */
	fx->seen.calls = 0;
	assert_int_equal(handle(fx, "GET", "/v1/nope", "sk-dave", NULL), 404);
	assert_int_equal(handle(fx, "GET", "/v1/models", "sk-nobody", NULL),
	    401);
	assert_int_equal(fx->seen.calls, 0);
}

static void
admission_refusal_has_retry_after(void **state)
{
	struct fx *fx = *state;

	sg_gw_set_admit(fx->gw, record_admit, &fx->seen);
	fx->seen.refuse = 1;
	assert_int_equal(handle(fx, "GET", "/healthz", NULL, NULL), 429);
	assert_contains(fx->c.b.p, "\r\nretry-after: 1\r\n");
	assert_contains(fx->c.b.p, "\"code\":\"rate_limit_exceeded\"");
	assert_not_contains(fx->c.b.p, "\"status\":\"ok\"");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(too_many_values, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(too_deep, setup, teardown),
		cmocka_unit_test_setup_teardown(key_without_the_tool, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(admission_told_route_and_caller,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(admission_refusal_has_retry_after,
		    setup, teardown),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
