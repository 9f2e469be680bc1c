/*
 * core/state/stats: the overview's samples. Differences of the keys'
 * counters between samples (probes, the admin API and the console not
 * counted), percentiles read off the latency buckets, null when nothing
 * was answered, a ring that keeps the last hour and no more, and counts
 * taken in a forked child seen by the parent.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/wait.h>

#include <unistd.h>

#include "../../core/state/metrics.h"
#include "../../core/state/stats.h"

static const struct sg_st_load load = { 4, 2, 1 };
static const struct sg_st_alive alive = { 3, 2, 1 };

static int
setup(void **state)
{
	(void)state;
	assert_int_equal(sg_mx_map(), 0);
	assert_int_equal(sg_st_map(), 0);
	return 0;
}

/* The series' points (borrowed from *series, a new reference). */
static json_t *
points(json_t **series)
{
	*series = sg_st_series();
	assert_non_null(*series);
	assert_int_equal(json_integer_value(json_object_get(*series,
	    "interval")), SG_ST_INTERVAL);
	return json_object_get(*series, "points");
}

static json_int_t
num(const json_t *p, const char *name)
{
	const json_t *v = json_object_get(p, name);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static void
differences_and_percentiles(void **state)
{
	json_t *series, *p;
	pid_t pid;
	int i, st;

	(void)state;
	sg_st_sample(&load, &alive);
	assert_int_equal(json_array_size(points(&series)), 0);
	json_decref(series);
	/* 98 answered in 30 ms, one in 200 ms, one 502 in 4 s: counted by a
	 * child, as responders do. */
	if ((pid = fork()) == 0) {
		for (i = 0; i < 98; i++)
			sg_mx_request(SG_ROUTE_RESPONSES, 200, 30);
		sg_mx_request(SG_ROUTE_CHAT, 200, 200);
		sg_mx_request(SG_ROUTE_SBX_RUN, 502, 4000);
		/* Not the keys' traffic. */
		sg_mx_request(SG_ROUTE_HEALTHZ, 200, 1);
		sg_mx_request(SG_ROUTE_ORG_OVERVIEW, 200, 1);
		sg_mx_request(SG_ROUTE_CONSOLE, 200, 1);
		sg_mx_request(SG_ROUTE_NONE, 404, 1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	sg_st_sample(&load, &alive);
	sg_st_sample(&load, &alive);
	p = points(&series);
	assert_int_equal(json_array_size(p), 2);
	assert_int_equal(num(json_array_get(p, 0), "requests"), 100);
	assert_int_equal(num(json_array_get(p, 0), "errors"), 1);
	/* 30 ms is in (25, 50]: the 50th of 98 there, read linearly. */
	assert_in_range(num(json_array_get(p, 0), "p50_ms"), 26, 50);
	/* The 99th of 100 is the 200 ms one, in (100, 250]. */
	assert_in_range(num(json_array_get(p, 0), "p99_ms"), 101, 250);
	assert_int_equal(num(json_array_get(p, 0), "busy"), 2);
	assert_int_equal(num(json_array_get(p, 0), "queued"), 1);
	assert_int_equal(num(json_array_get(p, 0), "sandboxes"), 3);
	assert_int_equal(num(json_array_get(p, 0), "sessions"), 2);
	assert_int_equal(num(json_array_get(p, 0), "warm"), 1);
	/* Nothing answered in the second: no percentile to make up. */
	assert_int_equal(num(json_array_get(p, 1), "requests"), 0);
	assert_true(json_is_null(json_object_get(json_array_get(p, 1),
	    "p50_ms")));
	assert_true(json_is_null(json_object_get(json_array_get(p, 1),
	    "p99_ms")));
	json_decref(series);
}

/* A lone request (or any in one bucket) reads as its mean, not the
 * bucket's bound. */
static void
one_bucket_is_its_mean(void **state)
{
	json_t *series, *p;
	size_t n;

	(void)state;
	sg_mx_request(SG_ROUTE_RESPONSES, 200, 320);
	sg_st_sample(&load, &alive);
	p = points(&series);
	n = json_array_size(p);
	assert_int_equal(num(json_array_get(p, n - 1), "requests"), 1);
	assert_int_equal(num(json_array_get(p, n - 1), "p50_ms"), 320);
	assert_int_equal(num(json_array_get(p, n - 1), "p99_ms"), 320);
	json_decref(series);
}

static void
an_hour_and_no_more(void **state)
{
	json_t *series, *p;
	int i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		sg_mx_request(SG_ROUTE_MODELS, 200, 5);
		sg_st_sample(&load, &alive);
	}
	p = points(&series);
	assert_int_equal(json_array_size(p), 3600 / SG_ST_INTERVAL);
	/* Every kept point is one interval of one request, oldest first. */
	for (i = 0; i < (int)json_array_size(p); i++) {
		assert_int_equal(num(json_array_get(p, i), "requests"), 1);
		assert_int_equal(num(json_array_get(p, i), "p99_ms"), 5);
		if (i > 0)
			assert_true(num(json_array_get(p, i), "t") >=
			    num(json_array_get(p, i - 1), "t"));
	}
	json_decref(series);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(differences_and_percentiles),
		cmocka_unit_test(one_bucket_is_its_mean),
		cmocka_unit_test(an_hour_and_no_more),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
