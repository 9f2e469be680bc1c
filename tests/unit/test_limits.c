/*
 * core/state/limits: a minute lets in rpm requests and then refuses with
 * OpenAI's 429 and headers until it ends; reported tokens close it at
 * tpm; a budget and sandbox seconds are held to the ledger's day sums;
 * durations are written as OpenAI writes them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../core/config/config.h"
#include "../../core/state/ledger.h"
#include "../../core/state/limits.h"
#include "../../store/store.h"

#define T0	1796310245000LL		/* 2026-12-03 15:04:05 UTC */

static struct sg_store *st;
static char path[64];

static int
setup(void **state)
{
	char err[256];

	(void)state;
	snprintf(path, sizeof(path), "/tmp/sg-limits-%d.db", (int)getpid());
	unlink(path);
	if (sg_store_open(path, &st, err, sizeof(err)) != 0 ||
	    sg_store_migrate(st) != 0)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	sg_store_close(st);
	unlink(path);
	return 0;
}

static struct sg_cfg_limits
limits(long long rpm, long long tpm, double budget, long long sbx)
{
	struct sg_cfg_limits l = { rpm, tpm, budget, SG_PERIOD_DAY, sbx };

	return l;
}

static void
durations(void **state)
{
	char b[32];

	(void)state;
	sg_lim_duration(20, b, sizeof(b));
	assert_string_equal(b, "20ms");
	sg_lim_duration(1001, b, sizeof(b));
	assert_string_equal(b, "2s");
	sg_lim_duration(60000, b, sizeof(b));
	assert_string_equal(b, "1m0s");
	sg_lim_duration(-5, b, sizeof(b));
	assert_string_equal(b, "0ms");
}

static void
rpm_window(void **state)
{
	struct sg_cfg_limits l = limits(3, 0, 0, 0);
	struct sg_error err;
	char head[640];
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		assert_int_equal(sg_lim_admit(st, "t-rpm", &l, SG_LIM_MODEL,
		    T0 + i, head, sizeof(head), &err), 0);
		sg_lim_end(0, 0);
	}
	assert_non_null(strstr(head, "x-ratelimit-remaining-requests: 0\r\n"));
	assert_int_equal(sg_lim_admit(st, "t-rpm", &l, SG_LIM_MODEL, T0 + 10,
	    head, sizeof(head), &err), -1);
	assert_int_equal(err.status, 429);
	assert_string_equal(err.code, "rate_limit_exceeded");
	assert_non_null(strstr(head, "retry-after: 60\r\n"));
	assert_non_null(strstr(head, "x-ratelimit-reset-requests: 1m0s\r\n"));
	/* A sandbox route is not held to the minute. */
	assert_int_equal(sg_lim_admit(st, "t-rpm", &l, SG_LIM_SANDBOX, T0 + 10,
	    head, sizeof(head), &err), 0);
	sg_lim_end(0, 0);
	assert_int_equal(sg_lim_admit(st, "t-rpm", &l, SG_LIM_MODEL,
	    T0 + 60000, head, sizeof(head), &err), 0);
	sg_lim_end(0, 0);
}

/* A request timed before the window's start (it came first, another
 * started the window): told to wait the minute at most, as OpenAI's
 * SDKs expect retry-after within it. */
static void
window_started_after(void **state)
{
	struct sg_cfg_limits l = limits(1, 0, 0, 0);
	struct sg_error err;
	char head[640];

	(void)state;
	assert_int_equal(sg_lim_admit(st, "t-late", &l, SG_LIM_MODEL, T0 + 900,
	    head, sizeof(head), &err), 0);
	sg_lim_end(0, 0);
	assert_int_equal(sg_lim_admit(st, "t-late", &l, SG_LIM_MODEL, T0, head,
	    sizeof(head), &err), -1);
	assert_non_null(strstr(head, "retry-after: 60\r\n"));
	assert_non_null(strstr(head, "retry-after-ms: 60000\r\n"));
	assert_non_null(strstr(head, "x-ratelimit-reset-requests: 1m0s\r\n"));
	assert_non_null(strstr(err.message, "Please try again in 1m0s."));
}

static void
tpm_window(void **state)
{
	struct sg_cfg_limits l = limits(0, 100, 0, 0);
	struct sg_error err;
	char head[640];

	(void)state;
	assert_int_equal(sg_lim_admit(st, "t-tpm", &l, SG_LIM_MODEL, T0, head,
	    sizeof(head), &err), 0);
	sg_lim_tokens(60);
	sg_lim_tokens(40);
	sg_lim_end(0, 0);
	assert_int_equal(sg_lim_admit(st, "t-tpm", &l, SG_LIM_MODEL, T0 + 5,
	    head, sizeof(head), &err), -1);
	assert_string_equal(err.type, "tokens");
	assert_non_null(strstr(head, "x-ratelimit-remaining-tokens: 0\r\n"));
}

static void
budget_and_sandbox(void **state)
{
	struct sg_cfg_limits l = limits(0, 0, 0.5, 0), s = limits(0, 0, 0, 2);
	struct sg_store_use u;
	struct sg_error err;
	char head[640];
	int64_t now = T0;

	(void)state;
	assert_int_equal(sg_lim_admit(st, "t-b", &l, SG_LIM_MODEL, now, head,
	    sizeof(head), &err), 0);
	sg_lim_end(0, 0);
	memset(&u, 0, sizeof(u));
	snprintf(u.id, sizeof(u.id), "req_b1");
	snprintf(u.tenant, sizeof(u.tenant), "t-b");
	u.started_ms = now;
	u.cost_output = 500000000;	/* $0.5 */
	u.sandbox_ms = 2500;
	assert_int_equal(sg_store_use_add(st, &u, 1), 0);
	/* Read again a second later: spent. */
	assert_int_equal(sg_lim_admit(st, "t-b", &l, SG_LIM_MODEL, now + 1500,
	    head, sizeof(head), &err), -1);
	assert_string_equal(err.code, "insufficient_quota");
	assert_non_null(strstr(head, "x-should-retry: false\r\n"));
	assert_null(strstr(head, "retry-after:"));
	/* Sandbox seconds of another key are its own. */
	assert_int_equal(sg_lim_admit(st, "t-s", &s, SG_LIM_SANDBOX, now, head,
	    sizeof(head), &err), 0);
	sg_lim_end(0, 2100);
	assert_int_equal(sg_lim_admit(st, "t-s", &s, SG_LIM_SANDBOX, now + 10,
	    head, sizeof(head), &err), -1);
	assert_string_equal(err.code, "insufficient_quota");
	/* The next day's period starts anew. */
	assert_int_equal(sg_lim_admit(st, "t-b", &l, SG_LIM_MODEL,
	    now + 86400000, head, sizeof(head), &err), 0);
	sg_lim_end(0, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(durations),
		cmocka_unit_test(rpm_window),
		cmocka_unit_test(window_started_after),
		cmocka_unit_test(tpm_window),
		cmocka_unit_test(budget_and_sandbox),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
