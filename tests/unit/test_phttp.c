/*
 * providers/http: one prov's handle is kept from call to call (no reset
 * between calls of the same plain kind, URLs kept parsed). Whatever a
 * call set must not reach the next: a GET after a POST sends no body, a
 * JSON POST after an upload sends its own body, each call goes to its
 * own URL with its own method, and a URL that cannot be parsed fails
 * alone. Against the canned server (canned.h), request by request.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../../providers/provider.h"
#include "../../providers/internal.h"
#include "testutil.h"
#include "canned.h"

static void
assert_lacks(const char *s, const char *sub)
{
	if (strcasestr(s, sub) != NULL)
		fail_msg("\"%s\" in:\n%s", sub, s);
}

/* Request i's first line is line, and its body (after the head) is
 * body ("" none). */
static void
assert_req(struct canned *c, int i, const char *line, const char *body)
{
	char *r = request(c, i), *end;

	if (strncmp(r, line, strlen(line)) != 0)
		fail_msg("request %d: want \"%s\", got:\n%s", i, line, r);
	assert_non_null(end = strstr(r, "\r\n\r\n"));
	assert_string_equal(end + 4, body);
	if (body[0] == '\0')
		assert_lacks(r, "\r\nContent-Type:");
	free(r);
}

static int
call(struct canned *c, const char *method, const char *url, const char *body)
{
	struct sg_prov_error err = { 0 };
	json_t *b = body != NULL ? json_loads(body, 0, NULL) : NULL, *resp = NULL;
	long status = 0;
	int rc;

	rc = sg_phttp_call(&c->prov, method, url, NULL, b, 5000, &status, &resp,
	    &err);
	json_decref(b);
	json_decref(resp);
	return rc;
}

static void
calls_do_not_leak(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	char path[128];
	json_t *resp = NULL;
	long status = 0;
	int i, fd;

	for (i = 0; i < 7; i++)
		answer(c, 200, "application/json", "{}", -1);
	serve(c);
	assert_int_equal(call(c, "POST", "http://localhost/a", "{\"x\":1}"),
	    SG_PROV_OK);
	assert_int_equal(call(c, "GET", "http://localhost/b", NULL), SG_PROV_OK);
	assert_int_equal(call(c, "DELETE", "http://localhost/c", NULL),
	    SG_PROV_OK);
	snprintf(path, sizeof(path), "%s/up", c->dir);
	assert_true((fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600)) != -1);
	assert_int_equal(write(fd, "hello", 5), 5);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(sg_phttp_upload(&c->prov, "http://localhost/d", NULL,
	    fd, 5, 5000, &status, &resp, &err), SG_PROV_OK);
	json_decref(resp);
	close(fd);
	assert_int_equal(call(c, "POST", "http://localhost/a", "{\"y\":2}"),
	    SG_PROV_OK);
	/* Not a URL: this call fails, before any connection. */
	assert_int_equal(call(c, "POST", "http://local host/", "{\"v\":0}"),
	    SG_PROV_FAILED);
	assert_int_equal(call(c, "POST", "http://localhost/e", "{\"z\":3}"),
	    SG_PROV_OK);
	assert_int_equal(call(c, "GET", "http://localhost/b", NULL), SG_PROV_OK);
	served(c);
	assert_req(c, 0, "POST /a HTTP/1.1\r\n", "{\"x\":1}");
	assert_req(c, 1, "GET /b HTTP/1.1\r\n", "");
	assert_req(c, 2, "DELETE /c HTTP/1.1\r\n", "");
	assert_req(c, 3, "POST /d HTTP/1.1\r\n", "hello");
	assert_req(c, 4, "POST /a HTTP/1.1\r\n", "{\"y\":2}");
	assert_req(c, 5, "POST /e HTTP/1.1\r\n", "{\"z\":3}");
	assert_req(c, 6, "GET /b HTTP/1.1\r\n", "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(calls_do_not_leak, fx_setup,
		    fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
