/*
 * core/http/router: REQUEST_URI minus the mount prefix, and the route table.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "../../core/http/router.h"

/* The route path of uri under prefix, asserting it is accepted. */
static void
path_ok(const char *prefix, const char *uri, const char *want)
{
	char out[1024];

	memset(out, 'Z', sizeof(out));
	if (sg_route_path(prefix, uri, out, sizeof(out)) != 0)
		fail_msg("prefix \"%s\" refused uri \"%s\"", prefix, uri);
	assert_string_equal(out, want);
}

static void
path_refused(const char *prefix, const char *uri)
{
	char out[1024];

	if (sg_route_path(prefix, uri, out, sizeof(out)) != -1)
		fail_msg("prefix \"%s\" accepted uri \"%s\" as \"%s\"", prefix,
		    uri, out);
}

static void
path_no_prefix(void **state)
{
	(void)state;
	path_ok("", "/v1/models", "/v1/models");
	path_ok("", "/v1/models?x=1", "/v1/models");
	path_ok("", "/healthz", "/healthz");
	path_ok(NULL, "/v1/responses", "/v1/responses");
}

static void
path_with_prefix(void **state)
{
	(void)state;
	path_ok("/api", "/api/v1/models?x=1", "/v1/models");
	path_ok("/api", "/api/v1/chat/completions", "/v1/chat/completions");
	path_ok("/a/b", "/a/b/healthz", "/healthz");
}

static void
path_prefix_must_end_at_slash(void **state)
{
	(void)state;
	path_refused("/api", "/apiv1/models");
	path_refused("/api", "/api2/v1/models");
	/* The prefix alone names no route. */
	path_refused("/api", "/api");
	path_refused("/api", "/api?x=1");
}

static void
path_other_prefix_refused(void **state)
{
	(void)state;
	path_refused("/api", "/other/v1/models");
	path_refused("/api", "/v1/models");
	path_refused("/api", "/ap");
	path_refused("/api", "");
}

static void
path_relative_uri_refused(void **state)
{
	(void)state;
	path_refused("", "v1/models");
	path_refused("", "");
	path_refused("", "?x=1");
	path_refused("", NULL);
}

static void
path_query_and_fragment_stripped(void **state)
{
	(void)state;
	path_ok("", "/v1/models#frag", "/v1/models");
	path_ok("", "/v1/models?a=1#frag", "/v1/models");
	path_ok("/api", "/api/v1/models#x?y", "/v1/models");
	path_ok("", "/v1/models?", "/v1/models");
	/* A '?' inside the query does not matter; only the first counts. */
	path_ok("", "/healthz?a=/v1/models?b", "/healthz");
}

static void
path_too_long_refused(void **state)
{
	char uri[2100], out[16];

	(void)state;
	/* "/0123456789abcd" is 15 bytes: fits 16 with its NUL, 16 does not. */
	assert_int_equal(sg_route_path("", "/0123456789abcd", out,
	    sizeof(out)), 0);
	assert_string_equal(out, "/0123456789abcd");
	assert_int_equal(sg_route_path("", "/0123456789abcde", out,
	    sizeof(out)), -1);
	/* Only the path counts toward the size, not the query. */
	assert_int_equal(sg_route_path("", "/0123456789abcd?long-query", out,
	    sizeof(out)), 0);
	assert_string_equal(out, "/0123456789abcd");

	memset(uri, 'a', sizeof(uri) - 1);
	uri[0] = '/';
	uri[sizeof(uri) - 1] = '\0';
	path_refused("", uri);
}

static void
find_every_route(void **state)
{
	(void)state;
	assert_int_equal(sg_route_find("GET", "/healthz"), SG_ROUTE_HEALTHZ);
	assert_int_equal(sg_route_find("GET", "/metrics"), SG_ROUTE_METRICS);
	assert_int_equal(sg_route_find("GET", "/v1/models"), SG_ROUTE_MODELS);
	assert_int_equal(sg_route_find("POST", "/v1/chat/completions"),
	    SG_ROUTE_CHAT);
	assert_int_equal(sg_route_find("POST", "/v1/responses"),
	    SG_ROUTE_RESPONSES);
}

/* A container's files: two ids, the second read back from the path. */
static void
container_files(void **state)
{
	char id[64], fid[64];

	(void)state;
	assert_int_equal(sg_route_match("GET", "/v1/containers/cntr_1/files/"
	    "cfile_2/content", id, sizeof(id)), SG_ROUTE_CFILE_CONTENT);
	assert_string_equal(id, "cntr_1");
	assert_int_equal(sg_route_second("/v1/containers/cntr_1/files/cfile_2/"
	    "content", fid, sizeof(fid)), 0);
	assert_string_equal(fid, "cfile_2");
	assert_int_equal(sg_route_find("DELETE", "/v1/containers/c/files/f"),
	    SG_ROUTE_CFILE_DELETE);
	assert_int_equal(sg_route_find("GET", "/v1/containers/c/files"),
	    SG_ROUTE_CFILE_LIST);
	assert_int_equal(sg_route_find("POST", "/v1/containers/c/files"),
	    SG_ROUTE_CFILE_CREATE);
	assert_int_equal(sg_route_find("GET", "/v1/containers/c"),
	    SG_ROUTE_CNTR_GET);
	/* An empty segment is no id; more segments are no route. */
	assert_int_equal(sg_route_find("GET", "/v1/containers/c/files/"),
	    SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("GET", "/v1/containers//files/f"),
	    SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("GET", "/v1/containers/c/files/f/x"),
	    SG_ROUTE_NONE);
	assert_int_equal(sg_route_second("/v1/containers/c/files", fid,
	    sizeof(fid)), -1);
	assert_int_equal(sg_route_second("/v1/containers/c/files/", fid,
	    sizeof(fid)), -1);
	assert_int_equal(sg_route_second("/v1/containers/c/files/0123456789",
	    fid, 5), -1);
	assert_true(sg_route_streams(SG_ROUTE_CFILE_CREATE));
	assert_false(sg_route_streams(SG_ROUTE_CNTR_CREATE));
}

static void
find_wrong_method(void **state)
{
	(void)state;
	assert_int_equal(sg_route_find("GET", "/v1/responses"), SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("GET", "/v1/chat/completions"),
	    SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("POST", "/v1/models"), SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("POST", "/healthz"), SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("DELETE", "/metrics"), SG_ROUTE_NONE);
	/* Methods are case-sensitive (RFC 9110 §9.1). */
	assert_int_equal(sg_route_find("get", "/v1/models"), SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("", "/v1/models"), SG_ROUTE_NONE);
}

static void
find_unknown_paths(void **state)
{
	(void)state;
	assert_int_equal(sg_route_find("GET", "/v1/foo"), SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("GET", "/v1/models/"), SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("GET", "/v1/model"), SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("GET", "/V1/MODELS"), SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("POST", "/v1/responsesX"),
	    SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("GET", ""), SG_ROUTE_NONE);
	assert_int_equal(sg_route_find("GET", "/"), SG_ROUTE_NONE);
}

static void
path_then_find(void **state)
{
	/* The two together, as the gateway uses them. */
	char out[1024];

	(void)state;
	assert_int_equal(sg_route_path("/api", "/api/v1/responses?stream=1",
	    out, sizeof(out)), 0);
	assert_int_equal(sg_route_find("POST", out), SG_ROUTE_RESPONSES);
}

static void
authed_routes(void **state)
{
	(void)state;
	assert_int_equal(sg_route_authed(SG_ROUTE_HEALTHZ), 0);
	assert_int_equal(sg_route_authed(SG_ROUTE_METRICS), 0);
	assert_int_equal(sg_route_authed(SG_ROUTE_MODELS), 1);
	assert_int_equal(sg_route_authed(SG_ROUTE_CHAT), 1);
	assert_int_equal(sg_route_authed(SG_ROUTE_RESPONSES), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(path_no_prefix),
		cmocka_unit_test(path_with_prefix),
		cmocka_unit_test(path_prefix_must_end_at_slash),
		cmocka_unit_test(path_other_prefix_refused),
		cmocka_unit_test(path_relative_uri_refused),
		cmocka_unit_test(path_query_and_fragment_stripped),
		cmocka_unit_test(path_too_long_refused),
		cmocka_unit_test(find_every_route),
		cmocka_unit_test(container_files),
		cmocka_unit_test(find_wrong_method),
		cmocka_unit_test(find_unknown_paths),
		cmocka_unit_test(path_then_find),
		cmocka_unit_test(authed_routes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
