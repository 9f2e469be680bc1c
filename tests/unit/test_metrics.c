/*
 * core/state/metrics: counts from forked children reach the parent's scrape;
 * histograms are cumulative with +Inf equal to the count; a tool's row is
 * shared by everyone counting it; nothing is counted before sg_mx_map.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/wait.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/config/config.h"
#include "../../core/state/metrics.h"
#include "../../lib/util.h"

static struct sg_tool tools[2] = { { .name = "e2b" }, { .name = "local" } };
static struct sg_cfg cfg = { .tools = tools, .ntools = 2 };

static char *
scrape(void)
{
	struct sg_buf b = { 0 };

	assert_int_equal(sg_mx_render(&cfg, &b), 0);
	return b.p != NULL ? b.p : strdup("");
}

/* The value of the sample line that starts with key, or -1. */
static double
sample(const char *text, const char *key)
{
	size_t n = strlen(key);
	const char *p = text;

	while ((p = strstr(p, key)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p += n;
	}
	return -1;
}

static void
before_map_nothing(void **state)
{
	char *t;

	(void)state;
	sg_mx_request(SG_ROUTE_HEALTHZ, 200, 1);
	sg_mx_sbx("e2b", SG_MX_CREATED, 10);
	t = scrape();
	assert_string_equal(t, "");
	free(t);
}

static void
children_count_into_one_page(void **state)
{
	pid_t pid[4];
	char *t;
	int i, st;

	(void)state;
	assert_int_equal(sg_mx_map(), 0);
	for (i = 0; i < 4; i++) {
		if ((pid[i] = fork()) == 0) {
			/* Each child claims "local" first: one row for all. */
			sg_mx_sbx("local", SG_MX_RAN, 30);
			sg_mx_sbx("local", SG_MX_RAN, 3000);
			sg_mx_request(SG_ROUTE_RESPONSES, 200, 5);
			sg_mx_request(SG_ROUTE_RESPONSES, 418, 5);
			_exit(0);
		}
		assert_true(pid[i] > 0);
	}
	for (i = 0; i < 4; i++)
		assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
	sg_mx_upstream(40, 900, 0);
	sg_mx_upstream(0, 0, 1);
	sg_mx_round();
	t = scrape();
	assert_true(sample(t, "sandgate_http_requests_total{method=\"POST\","
	    "route=\"/v1/responses\",code=\"200\"}") == 4);
	assert_true(sample(t, "sandgate_http_requests_total{method=\"POST\","
	    "route=\"/v1/responses\",code=\"other\"}") == 4);
	assert_true(sample(t, "sandgate_sandbox_run_seconds_bucket{tool="
	    "\"local\",le=\"0.025\"}") == 0);
	assert_true(sample(t, "sandgate_sandbox_run_seconds_bucket{tool="
	    "\"local\",le=\"0.05\"}") == 4);
	assert_true(sample(t, "sandgate_sandbox_run_seconds_bucket{tool="
	    "\"local\",le=\"2.5\"}") == 4);
	assert_true(sample(t, "sandgate_sandbox_run_seconds_bucket{tool="
	    "\"local\",le=\"5\"}") == 8);
	assert_true(sample(t, "sandgate_sandbox_run_seconds_bucket{tool="
	    "\"local\",le=\"+Inf\"}") == 8);
	assert_true(sample(t, "sandgate_sandbox_run_seconds_count{tool="
	    "\"local\"}") == 8);
	assert_true(sample(t, "sandgate_sandbox_run_seconds_sum{tool="
	    "\"local\"}") == 12.12);
	/* A configured tool never counted shows zeros. */
	assert_true(sample(t, "sandgate_sandbox_creates_total{tool=\"e2b\"}")
	    == 0);
	assert_true(sample(t, "sandgate_upstream_seconds_count") == 1);
	assert_true(sample(t, "sandgate_upstream_first_byte_seconds_bucket"
	    "{le=\"0.05\"}") == 1);
	assert_true(sample(t, "sandgate_upstream_failures_total") == 1);
	assert_true(sample(t, "sandgate_loop_rounds_total") == 1);
	free(t);
}

static void
many_tools_never_overflow(void **state)
{
	char name[32];
	char *t;
	int i;

	(void)state;
	/* More tools than rows: the rest go uncounted, nothing breaks. */
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "tool%d", i);
		sg_mx_sbx(name, SG_MX_CREATED, 1);
	}
	sg_mx_sbx("e2b", SG_MX_CREATE_FAILED, 0);
	sg_mx_sbx("e2b", SG_MX_NSBX, 0);
	sg_mx_request(SG_ROUTE_NROUTES, 200, 0);
	t = scrape();
	/* "local" and the first tools took rows before the table filled. */
	assert_true(sample(t, "sandgate_sandbox_create_failures_total{tool="
	    "\"e2b\"}") == 0);
	assert_true(sample(t, "sandgate_sandbox_run_seconds_count{tool="
	    "\"local\"}") == 8);
	free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(before_map_nothing),
		cmocka_unit_test(children_count_into_one_page),
		cmocka_unit_test(many_tools_never_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
