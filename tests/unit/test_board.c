/*
 * fcgi/board: admission over the scoreboard (a key's max_concurrent, heavy
 * work capped at workers_max) and the /metrics text. board.c is built in
 * here: fcgi/ is not part of libsandgate.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../fcgi/board.c"
#include "testutil.h"

struct fx {
	struct sg_board	 board;
	struct sg_cfg	 cfg;
	struct sg_seat	 seat;
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		return -1;
	fx->cfg.server.workers_max = 8;
	fx->board.used = 16;	/* as the master sets it, spawning */
	fx->seat.board = &fx->board;
	fx->seat.cfg = &fx->cfg;
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	free(*state);
	return 0;
}

/* Admit on slot, as a responder that just accepted a connection does. */
static int
admit(struct fx *fx, int slot, const char *tenant,
    const struct sg_cfg_key *key, int heavy, struct sg_error *err)
{
	sg_board_set(&fx->board, slot, SG_SLOT_BUSY);
	fx->seat.slot = slot;
	return sg_board_admit(&fx->seat, tenant, key, heavy, err);
}

/* A responder going busy wakes the master only when fewer than two
 * responders are left free to accept (idle or starting); slots past
 * `used` were never given one and do not count. */
static void
short_of_free_responders(void **state)
{
	struct fx *fx = *state;

	assert_true(sg_board_short(&fx->board, 2));
	sg_board_set(&fx->board, 0, SG_SLOT_IDLE);
	sg_board_set(&fx->board, 1, SG_SLOT_BUSY);
	assert_true(sg_board_short(&fx->board, 2));
	sg_board_set(&fx->board, 7, SG_SLOT_STARTING);
	assert_false(sg_board_short(&fx->board, 2));
	sg_board_set(&fx->board, 0, SG_SLOT_KEPT);
	assert_true(sg_board_short(&fx->board, 2));
	sg_board_set(&fx->board, 20, SG_SLOT_IDLE);
	assert_true(sg_board_short(&fx->board, 2));
	fx->board.used = 21;
	assert_false(sg_board_short(&fx->board, 2));
}

static void
refused(const struct sg_error *err, int status, const char *type,
    const char *code, const char *message)
{
	assert_int_equal(err->status, status);
	assert_string_equal(err->type, type);
	if (code == NULL)
		assert_null(err->code);
	else
		assert_string_equal(err->code, code);
	assert_null(err->param);
	assert_string_equal(err->message, message);
}

static void
tenants_differ(void **state)
{
	(void)state;
	assert_int_not_equal(tenant_word("a"), tenant_word("b"));
	assert_int_not_equal(tenant_word(""), 0);
	assert_int_equal(tenant_word("anonymous"), tenant_word("anonymous"));
}

static void
key_limit_default_half_the_pool(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	int i;

	for (i = 0; i < 4; i++)
		assert_int_equal(admit(fx, i, "bob", NULL, 1, &err), 0);
	assert_int_equal(admit(fx, 4, "bob", NULL, 0, &err), -1);
	refused(&err, 429, "requests", "rate_limit_exceeded", "Too many "
	    "concurrent requests for this key (limit 4); retry shortly.");
	assert_int_equal(fx->board.refused[SG_REFUSED_KEY], 1);
	/* Another key is not affected; nor is a route without a key. */
	assert_int_equal(admit(fx, 5, "carol", NULL, 1, &err), 0);
	assert_int_equal(admit(fx, 6, NULL, NULL, 0, &err), 0);
}

static void
key_limit_from_the_key(void **state)
{
	struct fx *fx = *state;
	struct sg_cfg_key k = { .max_concurrent = 2 };
	struct sg_error err;

	assert_int_equal(admit(fx, 0, "t", &k, 1, &err), 0);
	assert_int_equal(admit(fx, 1, "t", &k, 1, &err), 0);
	assert_int_equal(admit(fx, 2, "t", &k, 1, &err), -1);
	assert_contains(err.message, "(limit 2)");
}

/* Only busy slots count: a finished request no longer holds its key. */
static void
only_busy_slots_count(void **state)
{
	struct fx *fx = *state;
	struct sg_cfg_key k = { .max_concurrent = 1 };
	struct sg_error err;

	assert_int_equal(admit(fx, 0, "t", &k, 1, &err), 0);
	sg_board_set(&fx->board, 0, SG_SLOT_IDLE);
	assert_int_equal(admit(fx, 1, "t", &k, 1, &err), 0);
	sg_board_set(&fx->board, 1, SG_SLOT_KEPT);
	fx->board.slots[1].tenant = tenant_word("t");
	assert_int_equal(admit(fx, 2, "t", &k, 1, &err), 0);
}

static void
heavy_capped_at_workers_max(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	char tenant[16];
	int i;

	for (i = 0; i < 8; i++) {
		snprintf(tenant, sizeof(tenant), "k%d", i);
		assert_int_equal(admit(fx, i, tenant, NULL, 1, &err), 0);
	}
	assert_int_equal(admit(fx, 8, "k8", NULL, 1, &err), -1);
	refused(&err, 503, "server_error", NULL, "The gateway is at capacity "
	    "(8 requests under way); retry shortly.");
	assert_int_equal(fx->board.refused[SG_REFUSED_CAPACITY], 1);
	/* Light routes go on, on the reserve. */
	assert_int_equal(admit(fx, 9, "k8", NULL, 0, &err), 0);
	assert_int_equal(admit(fx, 8, NULL, NULL, 0, &err), 0);
}

static void
metrics_text(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	char buf[4096];
	size_t n;

	assert_int_equal(admit(fx, 0, "a", NULL, 1, &err), 0);
	assert_int_equal(admit(fx, 1, "b", NULL, 0, &err), 0);
	sg_board_set(&fx->board, 2, SG_SLOT_BUSY);
	sg_board_set(&fx->board, 3, SG_SLOT_IDLE);
	sg_board_set(&fx->board, 4, SG_SLOT_KEPT);
	/* A slot a responder scribbled over counts for nothing. */
	fx->board.slots[5].state = 12345;
	sg_board_count(&fx->board, 200, 7);
	assert_int_equal(admit(fx, 6, "b", &(struct sg_cfg_key){
	    .max_concurrent = 1 }, 1, &err), -1);
	sg_board_set(&fx->board, 6, SG_SLOT_IDLE);
	n = sg_board_metrics(&fx->seat, buf, sizeof(buf));
	assert_true(n > 0 && n < sizeof(buf));
	assert_contains(buf, "sandgate_requests_total{code=\"2xx\"} 1\n");
	assert_contains(buf, "sandgate_request_duration_ms_total 7\n");
	assert_contains(buf, "sandgate_responders{state=\"busy\"} 3\n");
	assert_contains(buf, "sandgate_responders{state=\"idle\"} 2\n");
	assert_contains(buf, "sandgate_responders{state=\"kept\"} 1\n");
	assert_contains(buf, "sandgate_busy_responders{class=\"heavy\"} 1\n");
	assert_contains(buf, "sandgate_busy_responders{class=\"light\"} 1\n");
	assert_contains(buf, "sandgate_busy_responders{class=\"reading\"} 1\n");
	assert_contains(buf, "sandgate_refused_total{reason=\"key_limit\"} 1\n");
	assert_contains(buf, "sandgate_refused_total{reason=\"capacity\"} 0\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tenants_differ),
		cmocka_unit_test_setup_teardown(key_limit_default_half_the_pool,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(key_limit_from_the_key, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(only_busy_slots_count, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(heavy_capped_at_workers_max,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(metrics_text, setup, teardown),
		cmocka_unit_test_setup_teardown(short_of_free_responders, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
