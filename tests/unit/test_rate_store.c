/*
 * store/rate: a key's minute on a store several boxes share, taken one
 * request at a time. On SQLite, then on PostgreSQL when SG_TEST_PG is set.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "../../store/store.h"
#include "../../store/usage.h"
#include "testutil.h"

#define T0	1700000000000LL		/* unix ms */

/* A window lets in max_requests, then refuses, until it ends; tokens
 * counted in it refuse too; a new window starts with the next request. */
static void
rate_windows(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_rate r;
	int i, in = 0;

	for (i = 0; i < 5; i++) {
		assert_int_equal(sg_store_rate_take(fx->st, "t", T0 + i, 60000, 3,
		    0, &r), SG_STORE_OK);
		in += r.ok;
	}
	assert_int_equal(in, 3);
	assert_int_equal(r.requests, 3);
	assert_int_equal(r.start_ms, T0);
	assert_int_equal(sg_store_rate_take(fx->st, "t", T0 + 60000, 60000, 3,
	    0, &r), SG_STORE_OK);
	assert_true(r.ok);
	assert_int_equal(r.start_ms, T0 + 60000);
	assert_int_equal(r.requests, 1);
	assert_int_equal(sg_store_rate_tokens(fx->st, "t", T0 + 60000, 500),
	    SG_STORE_OK);
	/* An old window's tokens do not count in this one. */
	assert_int_equal(sg_store_rate_tokens(fx->st, "t", T0, 99999),
	    SG_STORE_OK);
	assert_int_equal(sg_store_rate_take(fx->st, "t", T0 + 60001, 60000, 0,
	    500, &r), SG_STORE_OK);
	assert_false(r.ok);
	assert_int_equal(r.tokens, 500);
	assert_int_equal(sg_store_rate_take(fx->st, "t", T0 + 60001, 60000, 0,
	    501, &r), SG_STORE_OK);
	assert_true(r.ok);
	assert_int_equal(r.requests, 2);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(rate_windows),
	};

	TU_STORE_MAIN(tests);
}
