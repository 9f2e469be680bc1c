/*
 * core/http/error + core/http/http: the OpenAI error shape, and CGI-style responses
 * written through a memory-backed struct sg_out.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../core/http/error.h"
#include "../../core/http/http.h"
#include "testutil.h"

#define FFFD "\xef\xbf\xbd"

/* An sg_out that appends to a buffer; fail makes every write fail. */
struct memout {
	struct sg_out	 out;	/* first: the callbacks get &out */
	char		*buf;
	size_t		 len, cap;
	int		 writes, flushes, fail;
};

static int
mem_write(struct sg_out *o, const void *p, size_t n)
{
	struct memout *m = (struct memout *)o;

	m->writes++;
	if (m->fail)
		return -1;
	if (m->len + n + 1 > m->cap) {
		size_t cap = m->cap ? m->cap : 256;
		char *np;

		while (cap < m->len + n + 1)
			cap *= 2;
		if ((np = realloc(m->buf, cap)) == NULL)
			return -1;
		m->buf = np;
		m->cap = cap;
	}
	memcpy(m->buf + m->len, p, n);
	m->len += n;
	m->buf[m->len] = '\0';
	return 0;
}

static int
mem_flush(struct sg_out *o)
{
	((struct memout *)o)->flushes++;
	return 0;
}

static int
mem_alive(struct sg_out *o)
{
	(void)o;
	return 1;
}

/* Per-test state: the output and a request with a known id. */
struct fx {
	struct memout	 m;
	struct sg_req	 req;
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		return -1;
	fx->m.out.write = mem_write;
	fx->m.out.flush = mem_flush;
	fx->m.out.alive = mem_alive;
	fx->req.method = "GET";
	fx->req.uri = "/v1/foo";
	snprintf(fx->req.id, sizeof(fx->req.id), "req_0123456789abcdef");
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	free(fx->m.buf);
	free(fx);
	return 0;
}

/* The head (up to and including the blank line) and where the body is. */
static size_t
head_len(const struct memout *m)
{
	const char *end;

	assert_non_null(m->buf);
	end = memmem(m->buf, m->len, "\r\n\r\n", 4);
	assert_non_null(end);
	return (size_t)(end - m->buf) + 4;
}

/* The head as its own string, for substring checks confined to it. */
static char *
head_of(const struct memout *m)
{
	size_t n = head_len(m);
	char *h = malloc(n + 1);

	assert_non_null(h);
	memcpy(h, m->buf, n);
	h[n] = '\0';
	return h;
}

/* The body parsed as JSON (asserting it is exactly one JSON value). */
static json_t *
body_of(const struct memout *m)
{
	size_t n = head_len(m);
	json_error_t je;
	json_t *j = json_loadb(m->buf + n, m->len - n, 0, &je);

	if (j == NULL)
		fail_msg("body is not JSON: %s", je.text);
	return j;
}

/* Assert err's JSON is exactly {"error":{message,type,param,code}}. */
static json_t *
inner_of(json_t *doc)
{
	json_t *inner;

	assert_non_null(doc);
	assert_true(json_is_object(doc));
	assert_int_equal(json_object_size(doc), 1);
	inner = json_object_get(doc, "error");
	assert_non_null(inner);
	assert_true(json_is_object(inner));
	assert_int_equal(json_object_size(inner), 4);
	assert_true(json_is_string(json_object_get(inner, "message")));
	assert_true(json_is_string(json_object_get(inner, "type")));
	assert_non_null(json_object_get(inner, "param"));
	assert_non_null(json_object_get(inner, "code"));
	return inner;
}

static void
error_json_shape_nulls(void **state)
{
	struct sg_error err;
	json_t *doc, *inner;

	(void)state;
	sg_error_set(&err, 404, "invalid_request_error", NULL, NULL,
	    "Invalid URL (%s %s)", "GET", "/v1/foo");
	doc = sg_error_json(&err);
	inner = inner_of(doc);
	assert_string_equal(json_string_value(json_object_get(inner,
	    "message")), "Invalid URL (GET /v1/foo)");
	assert_string_equal(json_string_value(json_object_get(inner, "type")),
	    "invalid_request_error");
	assert_true(json_is_null(json_object_get(inner, "param")));
	assert_true(json_is_null(json_object_get(inner, "code")));
	json_decref(doc);
}

static void
error_json_param_and_code(void **state)
{
	struct sg_error err;
	json_t *doc, *inner;

	(void)state;
	assert_int_equal(sg_error_invalid(&err, "model",
	    "missing_required_parameter", "Missing required parameter: '%s'.",
	    "model"), -1);
	assert_int_equal(err.status, 400);
	doc = sg_error_json(&err);
	inner = inner_of(doc);
	assert_string_equal(json_string_value(json_object_get(inner, "type")),
	    "invalid_request_error");
	assert_string_equal(json_string_value(json_object_get(inner, "param")),
	    "model");
	assert_string_equal(json_string_value(json_object_get(inner, "code")),
	    "missing_required_parameter");
	assert_string_equal(json_string_value(json_object_get(inner,
	    "message")), "Missing required parameter: 'model'.");
	json_decref(doc);
}

static void
error_server_kind(void **state)
{
	struct sg_error err;
	json_t *doc, *inner;

	(void)state;
	assert_int_equal(sg_error_server(&err, 502, "upstream %d", 7), -1);
	assert_int_equal(err.status, 502);
	assert_string_equal(err.type, "server_error");
	assert_null(err.code);
	assert_null(err.param);
	doc = sg_error_json(&err);
	inner = inner_of(doc);
	assert_string_equal(json_string_value(json_object_get(inner,
	    "message")), "upstream 7");
	json_decref(doc);
}

static void
error_retry_flag(void **state)
{
	struct sg_error err;

	(void)state;
	sg_error_server(&err, 500, "x");
	assert_true(err.no_retry);
	sg_error_server(&err, 503, "x");
	assert_false(err.no_retry);
	sg_error_invalid(&err, NULL, NULL, "x");
	assert_false(err.no_retry);
	sg_error_set(&err, 429, "requests", "rate_limit_exceeded", NULL, "x");
	assert_false(err.no_retry);
}

static void
error_json_invalid_utf8_message(void **state)
{
	struct sg_error err;
	json_t *doc, *inner;
	const char *msg;

	(void)state;
	/* A message quoting a client's bytes. */
	sg_error_invalid(&err, "model", NULL, "The model `%s` does not exist.",
	    "gpt\xff\xfe-4");
	doc = sg_error_json(&err);
	inner = inner_of(doc);
	msg = json_string_value(json_object_get(inner, "message"));
	assert_non_null(msg);
	assert_string_equal(msg, "The model `gpt" FFFD FFFD
	    "-4` does not exist.");
	json_decref(doc);
}

static void
error_json_message_cut_mid_character(void **state)
{
	/* vsnprintf cuts at 511 bytes, here inside a 2-byte "é". */
	struct sg_error err;
	char long_msg[600];
	json_t *doc, *inner;
	const char *msg;

	(void)state;
	memset(long_msg, 'a', 510);
	long_msg[510] = '\xc3';
	long_msg[511] = '\xa9';
	long_msg[512] = '\0';
	sg_error_server(&err, 500, "%s", long_msg);
	assert_int_equal(strlen(err.message), 511);
	doc = sg_error_json(&err);
	inner = inner_of(doc);
	msg = json_string_value(json_object_get(inner, "message"));
	assert_non_null(msg);
	assert_int_equal(strlen(msg), 510 + 3);
	assert_memory_equal(msg + 510, FFFD, 3);
	json_decref(doc);
}

static void
error_json_null_type_defaults(void **state)
{
	struct sg_error err;
	json_t *doc, *inner;

	(void)state;
	sg_error_set(&err, 500, NULL, NULL, NULL, "x");
	doc = sg_error_json(&err);
	inner = inner_of(doc);
	assert_string_equal(json_string_value(json_object_get(inner, "type")),
	    "server_error");
	json_decref(doc);
}

static void
http_error_404(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	json_t *body, *want;
	char *head;

	sg_error_set(&err, 404, "invalid_request_error", NULL, NULL,
	    "Invalid URL (GET /v1/foo)");
	assert_int_equal(sg_http_error(&fx->m.out, &fx->req, &err), 0);
	assert_true(fx->m.len > 0);
	assert_memory_equal(fx->m.buf, "Status: 404 Not Found\r\n", 23);
	head = head_of(&fx->m);
	assert_contains(head, "\r\nContent-Type: application/json\r\n");
	assert_contains(head, "\r\nx-request-id: req_0123456789abcdef\r\n");
	assert_not_contains(head, "x-should-retry");
	free(head);
	body = body_of(&fx->m);
	want = sg_error_json(&err);
	assert_true(json_equal(body, want));
	inner_of(body);
	json_decref(body);
	json_decref(want);
	assert_int_equal(fx->m.out.started, 1);
	assert_int_equal(fx->m.out.status, 404);
}

static void
http_error_500_no_retry(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	char *head;

	sg_error_server(&err, 500, "Model x is not usable");
	assert_int_equal(sg_http_error(&fx->m.out, &fx->req, &err), 0);
	assert_memory_equal(fx->m.buf, "Status: 500 Internal Server Error\r\n",
	    35);
	head = head_of(&fx->m);
	assert_contains(head, "\r\nx-should-retry: false\r\n");
	assert_contains(head, "\r\nContent-Type: application/json\r\n");
	free(head);
}

static void
http_error_503_may_retry(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	char *head;

	sg_error_set(&err, 503, "server_error", NULL, NULL, "store down");
	assert_int_equal(sg_http_error(&fx->m.out, &fx->req, &err), 0);
	assert_memory_equal(fx->m.buf, "Status: 503 Service Unavailable\r\n",
	    33);
	head = head_of(&fx->m);
	assert_not_contains(head, "x-should-retry");
	free(head);
}

static void
http_error_4xx_may_retry(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	char *head;

	sg_error_set(&err, 401, "invalid_request_error", "invalid_api_key",
	    NULL, "Incorrect API key provided.");
	assert_int_equal(sg_http_error(&fx->m.out, &fx->req, &err), 0);
	assert_memory_equal(fx->m.buf, "Status: 401 Unauthorized\r\n", 26);
	head = head_of(&fx->m);
	assert_not_contains(head, "x-should-retry");
	free(head);
}

static void
http_error_second_writes_nothing(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	size_t len;
	int writes;

	sg_error_set(&err, 400, "invalid_request_error", NULL, NULL, "one");
	assert_int_equal(sg_http_error(&fx->m.out, &fx->req, &err), 0);
	len = fx->m.len;
	writes = fx->m.writes;
	sg_error_server(&err, 500, "two");
	sg_http_error(&fx->m.out, &fx->req, &err);
	assert_int_equal(fx->m.len, len);
	assert_int_equal(fx->m.writes, writes);
	assert_int_equal(fx->m.out.status, 400);
	assert_null(strstr(fx->m.buf, "two"));
}

static void
http_error_after_stream_began_writes_nothing(void **state)
{
	/* A stream's head went out: an error can no longer be a response. */
	struct fx *fx = *state;
	struct sg_error err;
	size_t len;

	assert_int_equal(sg_http_begin(&fx->m.out, &fx->req, 200,
	    "text/event-stream", NULL), 0);
	len = fx->m.len;
	sg_error_server(&err, 502, "upstream broke");
	sg_http_error(&fx->m.out, &fx->req, &err);
	assert_int_equal(fx->m.len, len);
	assert_int_equal(fx->m.out.status, 200);
}

static void
http_json_round_trip(void **state)
{
	struct fx *fx = *state;
	json_t *body, *got;
	char *head;

	body = json_pack("{s:s,s:[{s:s,s:i,s:b}],s:s,s:n}", "object", "list",
	    "data", "id", "gpt-4.1-mini", "created", 0, "ok", 1,
	    "note", "caf\xc3\xa9 \xf0\x9f\x98\x80 \"quoted\"\n", "none");
	assert_non_null(body);
	assert_int_equal(sg_http_json(&fx->m.out, &fx->req, 200, body), 0);
	assert_memory_equal(fx->m.buf, "Status: 200 OK\r\n", 16);
	head = head_of(&fx->m);
	assert_contains(head, "\r\nContent-Type: application/json\r\n");
	assert_contains(head, "\r\nx-request-id: req_0123456789abcdef\r\n");
	free(head);
	got = body_of(&fx->m);
	assert_true(json_equal(got, body));
	json_decref(got);
	json_decref(body);
	assert_int_equal(fx->m.out.started, 1);
	assert_int_equal(fx->m.out.status, 200);
}

static void
http_json_twice_refused(void **state)
{
	struct fx *fx = *state;
	json_t *body = json_pack("{s:i}", "n", 1);
	size_t len;

	assert_int_equal(sg_http_json(&fx->m.out, &fx->req, 200, body), 0);
	len = fx->m.len;
	assert_int_equal(sg_http_json(&fx->m.out, &fx->req, 200, body), -1);
	assert_int_equal(fx->m.len, len);
	json_decref(body);
}

static void
http_begin_extra_headers_in_head(void **state)
{
	struct fx *fx = *state;
	char *head;

	assert_int_equal(sg_http_begin(&fx->m.out, &fx->req, 200,
	    "text/event-stream", "Cache-Control: no-cache\r\n"), 0);
	assert_int_equal(sg_http_write(&fx->m.out, "data: x\n\n", 9), 0);
	head = head_of(&fx->m);
	assert_memory_equal(head, "Status: 200 OK\r\n", 16);
	assert_contains(head, "\r\nContent-Type: text/event-stream\r\n");
	assert_contains(head, "\r\nCache-Control: no-cache\r\n");
	free(head);
	assert_string_equal(fx->m.buf + head_len(&fx->m), "data: x\n\n");
}

static void
http_write_failure_reported(void **state)
{
	struct fx *fx = *state;
	json_t *body = json_pack("{s:i}", "n", 1);

	fx->m.fail = 1;
	assert_int_equal(sg_http_json(&fx->m.out, &fx->req, 200, body), -1);
	json_decref(body);
}

static void
http_reasons(void **state)
{
	(void)state;
	assert_string_equal(sg_http_reason(200), "OK");
	assert_string_equal(sg_http_reason(400), "Bad Request");
	assert_string_equal(sg_http_reason(401), "Unauthorized");
	assert_string_equal(sg_http_reason(404), "Not Found");
	assert_string_equal(sg_http_reason(413), "Payload Too Large");
	assert_string_equal(sg_http_reason(429), "Too Many Requests");
	assert_string_equal(sg_http_reason(502), "Bad Gateway");
	assert_string_equal(sg_http_reason(504), "Gateway Timeout");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(error_json_shape_nulls),
		cmocka_unit_test(error_json_param_and_code),
		cmocka_unit_test(error_server_kind),
		cmocka_unit_test(error_retry_flag),
		cmocka_unit_test(error_json_invalid_utf8_message),
		cmocka_unit_test(error_json_message_cut_mid_character),
		cmocka_unit_test(error_json_null_type_defaults),
		T(http_error_404),
		T(http_error_500_no_retry),
		T(http_error_503_may_retry),
		T(http_error_4xx_may_retry),
		T(http_error_second_writes_nothing),
		T(http_error_after_stream_began_writes_nothing),
		T(http_json_round_trip),
		T(http_json_twice_refused),
		T(http_begin_extra_headers_in_head),
		T(http_write_failure_reported),
		T(http_reasons),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
