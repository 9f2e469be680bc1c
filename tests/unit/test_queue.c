/*
 * fcgi/queue: heavy requests wait for their turn, fairly between keys, a
 * key's own max_concurrent is a hard cap, and the wait ends in a refusal
 * only past queue_timeout. The waits run in real processes over a shared
 * board, as responders do. queue.c and board.c are built in here: fcgi/
 * is not part of libsandgate.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/mman.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../fcgi/board.c"
#include "../../fcgi/queue.c"
#include "../../core/http/http.h"
#include "testutil.h"

struct fx {
	struct sg_board	*board;		/* shared with the children */
	struct sg_cfg	 cfg;
	struct sg_seat	 seat;
	pid_t		 kids[8];	/* forked by this case */
	int		 nkids;
};

/* sg_out that is always there, or gone after `alive` checks. */
struct tout {
	struct sg_out	 base;
	int		 alive;
};

static int
tout_alive(struct sg_out *o)
{
	struct tout *t = (struct tout *)o;

	return t->alive < 0 || t->alive-- > 0;
}

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		return -1;
	fx->board = mmap(NULL, sizeof(*fx->board), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fx->board == MAP_FAILED)
		return -1;
	fx->cfg.server.workers_max = 2;
	fx->cfg.server.queue_timeout = 5;
	fx->board->used = 16;
	fx->seat.board = fx->board;
	fx->seat.cfg = &fx->cfg;
	*state = fx;
	return 0;
}

/*
 * A failed case ends at its assertion, before it reaps what it forked:
 * a child left waiting would outlive the binary and keep its output
 * open, so whatever reads it would never see the end.
 */
static int
teardown(void **state)
{
	struct fx *fx = *state;
	int i, status;

	for (i = 0; i < fx->nkids; i++)
		if (waitpid(fx->kids[i], &status, WNOHANG) == 0) {
			kill(fx->kids[i], SIGKILL);
			waitpid(fx->kids[i], &status, 0);
		}
	munmap(fx->board, sizeof(*fx->board));
	free(fx);
	return 0;
}

/* fork(), the child noted for teardown. */
static pid_t
kid(struct fx *fx)
{
	pid_t pid;

	assert_true(fx->nkids < (int)(sizeof(fx->kids) / sizeof(fx->kids[0])));
	if ((pid = fork()) > 0)
		fx->kids[fx->nkids++] = pid;
	return pid;
}

/* Admit a heavy request of tenant on slot (cap: its key's; -1 none). */
static int
admit(struct fx *fx, int slot, const char *tenant, int cap, int alive,
    struct sg_error *err)
{
	struct sg_cfg_key k = { .max_concurrent = cap > 0 ? cap : 0 };
	struct sg_req req;
	struct tout out = { { NULL, NULL, tout_alive, 0, 0 }, alive };

	memset(&req, 0, sizeof(req));
	snprintf(req.tenant, sizeof(req.tenant), "%s", tenant);
	req.key = &k;
	req.start_ms = sg_now_ms();
	sg_board_set(fx->board, slot, SG_SLOT_BUSY);
	fx->seat.slot = slot;
	return sg_queue_admit(&fx->seat, &req, 1, &out.base, err);
}

/* A child that admits on slot and, once running, waits for SIGTERM
 * (then releases) or exits at once when `leave`. */
static pid_t
child(struct fx *fx, int slot, const char *tenant, int cap)
{
	struct sg_error err;
	sigset_t set;
	pid_t pid;
	int sig;

	if ((pid = kid(fx)) != 0)
		return pid;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (admit(fx, slot, tenant, cap, -1, &err) != 0)
		_exit(err.status == 429 ? 29 : 3);
	sigwait(&set, &sig);
	sg_queue_release(fx->board, slot, fx->cfg.server.workers_max);
	_exit(0);
}

static int
q_of(struct fx *fx, int slot)
{
	return __atomic_load_n(&fx->board->slots[slot].q, __ATOMIC_SEQ_CST);
}

/* Wait until slot's place is want (5 s at most). */
static void
until_q(struct fx *fx, int slot, int want)
{
	int i;

	for (i = 0; i < 500 && q_of(fx, slot) != want; i++)
		usleep(10000);
	assert_int_equal(q_of(fx, slot), want);
}

static int
reap(pid_t pid)
{
	int status;

	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void
tenants_differ(void **state)
{
	(void)state;
	assert_int_not_equal(tenant_word("a"), tenant_word("b"));
	assert_int_not_equal(tenant_word(""), 0);
	assert_int_equal(tenant_word("anonymous"), tenant_word("anonymous"));
}

/* Light routes never wait and take no place. */
static void
light_routes_go_at_once(void **state)
{
	struct fx *fx = *state;
	struct sg_req req;
	struct tout out = { { NULL, NULL, tout_alive, 0, 0 }, -1 };
	struct sg_error err;
	int i;

	memset(&req, 0, sizeof(req));
	snprintf(req.tenant, sizeof(req.tenant), "t");
	for (i = 0; i < 8; i++) {
		fx->seat.slot = i;
		sg_board_set(fx->board, i, SG_SLOT_BUSY);
		assert_int_equal(sg_queue_admit(&fx->seat, &req, 0, &out.base,
		    &err), 0);
		assert_int_equal(q_of(fx, i), SG_Q_NONE);
		assert_int_equal(fx->board->slots[i].cls, SG_CLASS_LIGHT);
	}
}

/* One key alone may use every place: nobody else waits. */
static void
one_key_uses_every_place(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;

	fx->cfg.server.workers_max = 3;
	assert_int_equal(admit(fx, 0, "a", -1, -1, &err), 0);
	assert_int_equal(admit(fx, 1, "a", -1, -1, &err), 0);
	assert_int_equal(admit(fx, 2, "a", -1, -1, &err), 0);
	assert_int_equal(q_of(fx, 2), SG_Q_RUNNING);
}

/*
 * The places are taken: a request waits, and gets the place freed.
 * Waiters of a key with fewer running go first; the same key, oldest
 * first.
 */
static void
turns_are_fair(void **state)
{
	struct fx *fx = *state;
	pid_t a0, a1, a2, a3, b0;

	a0 = child(fx, 0, "a", -1);
	until_q(fx, 0, SG_Q_RUNNING);
	a1 = child(fx, 1, "a", -1);
	until_q(fx, 1, SG_Q_RUNNING);
	a2 = child(fx, 2, "a", -1);	/* a has 2: waits */
	until_q(fx, 2, SG_Q_WAITING);
	a3 = child(fx, 3, "a", -1);
	until_q(fx, 3, SG_Q_WAITING);
	b0 = child(fx, 4, "b", -1);	/* b, later, has none running */
	until_q(fx, 4, SG_Q_WAITING);
	assert_int_equal(reap(a0), 0);	/* a place frees: b's turn */
	until_q(fx, 4, SG_Q_RUNNING);
	assert_int_equal(q_of(fx, 2), SG_Q_WAITING);
	assert_int_equal(reap(a1), 0);	/* then a's oldest */
	until_q(fx, 2, SG_Q_RUNNING);
	assert_int_equal(q_of(fx, 3), SG_Q_WAITING);
	assert_int_equal(reap(b0), 0);
	until_q(fx, 3, SG_Q_RUNNING);
	assert_int_equal(reap(a2), 0);
	assert_int_equal(reap(a3), 0);
}

/* A key's own cap holds with places free; its waiter is refused 429
 * past the wait, and the place goes to another key meanwhile. */
static void
a_key_cap_is_hard(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	pid_t c0;
	int64_t t0, spent;

	fx->cfg.server.workers_max = 4;
	fx->cfg.server.queue_timeout = 1;
	c0 = child(fx, 0, "c", 1);
	until_q(fx, 0, SG_Q_RUNNING);
	t0 = sg_now_ms();
	assert_int_equal(admit(fx, 1, "c", 1, -1, &err), -1);
	spent = sg_now_ms() - t0;
	assert_true(spent >= 1000);
	assert_int_equal(err.status, 429);
	assert_string_equal(err.code, "rate_limit_exceeded");
	assert_string_equal(err.message, "Too many concurrent requests for "
	    "this key (limit 1), waited its turn for server.queue_timeout; "
	    "retry shortly.");
	assert_int_equal(q_of(fx, 1), SG_Q_NONE);
	assert_int_equal(admit(fx, 2, "d", -1, -1, &err), 0);
	assert_int_equal(fx->board->refused[SG_REFUSED_KEY], 1);
	assert_int_equal(fx->board->waited, 1);
	/* The deadline runs from the request's start, the wait counted from
	 * its place in the queue: the bookkeeping between is not waiting,
	 * and on a loaded machine it can take a few milliseconds. */
	assert_true(fx->board->waited_ms >= 500);
	assert_true(fx->board->waited_ms <= (uint64_t)spent);
	assert_int_equal(reap(c0), 0);
}

/* Every place taken past the wait: 503; with queue_timeout 0, or on a
 * reserve responder once the queue is full, at once. */
static void
capacity_after_the_wait(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	pid_t k0, k1;
	int64_t t0;
	int i;

	fx->cfg.server.queue_timeout = 1;
	k0 = child(fx, 0, "k0", -1);
	k1 = child(fx, 1, "k1", -1);
	until_q(fx, 0, SG_Q_RUNNING);
	until_q(fx, 1, SG_Q_RUNNING);
	t0 = sg_now_ms();
	assert_int_equal(admit(fx, 2, "k2", -1, -1, &err), -1);
	assert_true(sg_now_ms() - t0 >= 1000);
	assert_int_equal(err.status, 503);
	assert_string_equal(err.message, "The gateway is at capacity (2 "
	    "requests under way), and this one waited its turn for "
	    "server.queue_timeout; retry shortly.");
	fx->cfg.server.queue_timeout = 0;
	t0 = sg_now_ms();
	assert_int_equal(admit(fx, 2, "k2", -1, -1, &err), -1);
	assert_true(sg_now_ms() - t0 < 1000);
	assert_string_equal(err.message, "The gateway is at capacity (2 "
	    "requests under way); retry shortly.");
	/* A reserve responder waits while the queue has room... */
	fx->cfg.server.queue_timeout = 1;
	fx->seat.reserve = 1;
	t0 = sg_now_ms();
	assert_int_equal(admit(fx, 2, "k2", -1, -1, &err), -1);
	assert_true(sg_now_ms() - t0 >= 1000);
	/* ... and refuses at once once it is full: its work is the light
	 * routes. */
	fx->cfg.server.queue_timeout = 30;
	fx->board->used = 3 + SG_POOL_MAX(2);
	for (i = 3; i < fx->board->used; i++) {
		sg_board_set(fx->board, i, SG_SLOT_BUSY);
		fx->board->slots[i].cls = SG_CLASS_HEAVY;
	}
	t0 = sg_now_ms();
	assert_int_equal(admit(fx, 2, "k2", -1, -1, &err), -1);
	assert_true(sg_now_ms() - t0 < 1000);
	assert_int_equal(err.status, 503);
	fx->seat.reserve = 0;
	assert_int_equal(fx->board->refused[SG_REFUSED_CAPACITY], 4);
	assert_int_equal(reap(k0), 0);
	assert_int_equal(reap(k1), 0);
}

/* A waiter whose client left gives its place in the queue up. */
static void
a_gone_client_leaves_the_queue(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	pid_t k0, k1;

	k0 = child(fx, 0, "k0", -1);
	k1 = child(fx, 1, "k1", -1);
	until_q(fx, 0, SG_Q_RUNNING);
	until_q(fx, 1, SG_Q_RUNNING);
	assert_int_equal(admit(fx, 2, "k2", -1, 2, &err), -1);
	assert_int_equal(q_of(fx, 2), SG_Q_NONE);
	assert_int_equal(reap(k0), 0);
	assert_int_equal(reap(k1), 0);
}

/*
 * A responder killed while running (its place never released) and one
 * killed holding the lock: once the master clears the dead slot, the
 * waiter gets the place, and the lock is taken again.
 */
static void
deaths_free_what_they_held(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	pid_t k0, k1, locker;
	int status;

	k0 = child(fx, 0, "k0", -1);
	k1 = child(fx, 1, "k1", -1);
	until_q(fx, 0, SG_Q_RUNNING);
	until_q(fx, 1, SG_Q_RUNNING);
	if ((locker = kid(fx)) == 0) {
		lock(fx->board);
		_exit(0);	/* dies holding it */
	}
	assert_int_equal(waitpid(locker, &status, 0), locker);
	kill(k0, SIGKILL);
	assert_int_equal(waitpid(k0, &status, 0), k0);
	/* As the master does, reaping it. */
	sg_board_set(fx->board, 0, SG_SLOT_FREE);
	assert_int_equal(admit(fx, 2, "k2", -1, -1, &err), 0);
	assert_int_equal(q_of(fx, 2), SG_Q_RUNNING);
	sg_queue_release(fx->board, 2, fx->cfg.server.workers_max);
	assert_int_equal(q_of(fx, 2), SG_Q_NONE);
	assert_int_equal(reap(k1), 0);
}

/*
 * Garbage over the lock (a responder can write the board): a word naming
 * no process is taken over at once; one naming a live process that never
 * lets go (a forged holder) after SG_SHLOCK_STALE_MS.
 */
static void
a_forged_lock_does_not_stall(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	pid_t sleeper;
	int64_t t0;

	fx->board->qlock.word = 0x7ffffff0;	/* no such pid */
	t0 = sg_now_ms();
	assert_int_equal(admit(fx, 0, "a", -1, -1, &err), 0);
	assert_true(sg_now_ms() - t0 < SG_SHLOCK_STALE_MS);
	assert_int_equal(fx->board->qlock.word, 0);
	if ((sleeper = kid(fx)) == 0) {
		pause();
		_exit(0);
	}
	fx->board->qlock.word = sleeper;
	t0 = sg_now_ms();
	assert_int_equal(admit(fx, 1, "b", -1, -1, &err), 0);
	assert_true(sg_now_ms() - t0 >= SG_SHLOCK_STALE_MS);
	assert_true(sg_now_ms() - t0 < 3 * SG_SHLOCK_STALE_MS);
	assert_int_equal(reap(sleeper), 128 + SIGTERM);
}

/* Released: the key and class are cleared, so the key's next request
 * never finds this one counted. */
static void
release_clears_the_slot(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;

	fx->cfg.server.queue_timeout = 0;
	assert_int_equal(admit(fx, 0, "one", 1, -1, &err), 0);
	sg_queue_release(fx->board, 0, fx->cfg.server.workers_max);
	assert_int_equal(fx->board->slots[0].tenant, 0);
	assert_int_equal(fx->board->slots[0].cls, SG_CLASS_NONE);
	assert_int_equal(admit(fx, 1, "one", 1, -1, &err), 0);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tenants_differ),
		T(light_routes_go_at_once),
		T(one_key_uses_every_place),
		T(turns_are_fair),
		T(a_key_cap_is_hard),
		T(capacity_after_the_wait),
		T(a_gone_client_leaves_the_queue),
		T(deaths_free_what_they_held),
		T(a_forged_lock_does_not_stall),
		T(release_clears_the_slot),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
