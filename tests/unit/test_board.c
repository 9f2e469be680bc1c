/*
 * fcgi/board: the slots' states and the /metrics text (admission is the
 * queue's, test_queue.c). board.c is built in here: fcgi/ is not part of
 * libsandgate.
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

/* A busy slot with a route class and a place in the queue. */
static void
busy(struct fx *fx, int slot, int cls, int q)
{
	sg_board_set(&fx->board, slot, SG_SLOT_BUSY);
	fx->board.slots[slot].cls = cls;
	fx->board.slots[slot].q = q;
}

/* A new state clears whom the slot served and its place in the queue. */
static void
state_clears_the_request(void **state)
{
	struct fx *fx = *state;

	busy(fx, 3, SG_CLASS_HEAVY, SG_Q_RUNNING);
	fx->board.slots[3].tenant = 42;
	sg_board_set(&fx->board, 3, SG_SLOT_FREE);
	assert_int_equal(fx->board.slots[3].q, SG_Q_NONE);
	assert_int_equal(fx->board.slots[3].cls, SG_CLASS_NONE);
	assert_int_equal(fx->board.slots[3].tenant, 0);
}

static void
metrics_text(void **state)
{
	struct fx *fx = *state;
	char buf[8192];
	size_t n;

	busy(fx, 0, SG_CLASS_HEAVY, SG_Q_RUNNING);
	busy(fx, 1, SG_CLASS_LIGHT, SG_Q_NONE);
	sg_board_set(&fx->board, 2, SG_SLOT_BUSY);
	sg_board_set(&fx->board, 3, SG_SLOT_IDLE);
	sg_board_set(&fx->board, 4, SG_SLOT_KEPT);
	/* A slot a responder scribbled over counts for nothing. */
	fx->board.slots[5].state = 12345;
	busy(fx, 6, SG_CLASS_HEAVY, SG_Q_WAITING);
	busy(fx, 7, SG_CLASS_HEAVY, SG_Q_WAITING);
	sg_board_set(&fx->board, 7, SG_SLOT_IDLE);
	sg_board_count(&fx->board, 200, 7);
	fx->board.refused[SG_REFUSED_KEY] = 1;
	fx->board.waited = 3;
	fx->board.waited_ms = 1500;
	n = sg_board_metrics(&fx->seat, buf, sizeof(buf));
	assert_true(n > 0 && n < sizeof(buf));
	assert_contains(buf, "sandgate_requests_total{code=\"2xx\"} 1\n");
	assert_contains(buf, "sandgate_request_duration_ms_total 7\n");
	assert_contains(buf, "sandgate_responders{state=\"busy\"} 4\n");
	assert_contains(buf, "sandgate_responders{state=\"idle\"} 2\n");
	assert_contains(buf, "sandgate_responders{state=\"kept\"} 1\n");
	assert_contains(buf, "sandgate_busy_responders{class=\"heavy\"} 2\n");
	/* Slot 7's wait ended with its state: one waits. */
	assert_contains(buf, "sandgate_queued_requests 1\n");
	assert_contains(buf, "sandgate_queue_waits_total 3\n");
	assert_contains(buf, "sandgate_queue_wait_ms_total 1500\n");
	assert_contains(buf, "sandgate_busy_responders{class=\"light\"} 1\n");
	assert_contains(buf, "sandgate_busy_responders{class=\"reading\"} 1\n");
	assert_contains(buf, "sandgate_refused_total{reason=\"key_limit\"} 1\n");
	assert_contains(buf, "sandgate_refused_total{reason=\"capacity\"} 0\n");
}

/* Growth: up to min at once; past it, one more only when none is free
 * and the longest-busy one has been for SG_GROW_WAIT_MS; never past most.
 * A burst of quick requests waits for a free responder instead. */
static void
grows_when_one_is_held(void **state)
{
	int64_t now = 100000, again;

	(void)state;
	/* Below min: up to it, whatever the rest. */
	assert_int_equal(sg_board_grow(1, 1, 4, 8, now, now, &again), 3);
	assert_int_equal(again, 0);
	assert_int_equal(sg_board_grow(0, 0, 2, 8, now, now, &again), 2);
	/* None free, the longest busy for 3 ms: none now, a look at 25. */
	assert_int_equal(sg_board_grow(4, 0, 4, 8, now - 3, now, &again), 0);
	assert_int_equal(again, now - 3 + SG_GROW_WAIT_MS);
	/* The same once it has been busy that long: one more. */
	assert_int_equal(sg_board_grow(4, 0, 4, 8, now - SG_GROW_WAIT_MS, now,
	    &again), 1);
	assert_int_equal(again, 0);
	/* One free: no growth, no look. */
	assert_int_equal(sg_board_grow(4, 1, 4, 8, now - 1000, now, &again), 0);
	assert_int_equal(again, 0);
	/* At most: none, and no look either (reserves are the master's). */
	assert_int_equal(sg_board_grow(8, 0, 4, 8, now - 3, now, &again), 0);
	assert_int_equal(again, 0);
	/* A start time from the future (a forged board) waits no longer
	 * than SG_GROW_WAIT_MS past now: the master clamps it to now. */
	assert_int_equal(sg_board_grow(4, 0, 4, 8, now, now, &again), 0);
	assert_int_equal(again, now + SG_GROW_WAIT_MS);
}

/* A full pool's backlog: a reserve only for a connection that waited
 * SG_GROW_WAIT_MS, not for one a responder ending its request takes a
 * moment later (with workers [1, 1] at one connection, the next request
 * waited out the last one's store writes and forked a reserve, ~3 a
 * second). */
static void
reserve_waits_for_a_wait(void **state)
{
	int64_t now = 1000000, since = 0;

	(void)state;
	/* Not full: nothing watched, nothing remembered. */
	assert_int_equal(sg_board_backlog(0, 1, now, &since), 0);
	assert_int_equal(since, 0);
	/* Full, a connection seen: not yet. */
	assert_int_equal(sg_board_backlog(1, 1, now, &since), 0);
	assert_int_equal(since, now);
	assert_int_equal(sg_board_backlog(1, 0, now + SG_GROW_WAIT_MS - 1,
	    &since), 0);
	assert_int_equal(since, now);
	/* Waited long enough: due (if one still waits), and looked for
	 * again afresh. */
	assert_int_equal(sg_board_backlog(1, 0, now + SG_GROW_WAIT_MS,
	    &since), 1);
	assert_int_equal(since, 0);
	/* The pool got a free responder meanwhile: forgotten. */
	assert_int_equal(sg_board_backlog(1, 1, now, &since), 0);
	assert_int_equal(sg_board_backlog(0, 0, now + SG_GROW_WAIT_MS, &since),
	    0);
	assert_int_equal(since, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(state_clears_the_request, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(metrics_text, setup, teardown),
		cmocka_unit_test(grows_when_one_is_held),
		cmocka_unit_test(reserve_waits_for_a_wait),
		cmocka_unit_test_setup_teardown(short_of_free_responders, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
