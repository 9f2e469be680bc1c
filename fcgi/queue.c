/*
 * The queue: heavy requests (model and sandbox routes) run at most
 * workers_max at once; the rest wait for their turn, each in the
 * responder that read it, for up to server.queue_timeout seconds, and only
 * then are refused. A burst is served, slower, instead of refused.
 *
 * Turns are fair between keys and waste nothing: a free place goes to the
 * waiting request whose key has the fewest requests running (the oldest
 * of those first), so one key may use every responder nobody else waits
 * for, and a key that floods delays another key's single request by about
 * one request's time. A key's own max_concurrent (or auth.max_concurrent),
 * when the operator sets one, is a hard cap: its requests past it wait
 * even while places are free.
 *
 * The state is the slots of the scoreboard (a request's place, key, cap
 * and arrival) under one lock in the board, which a responder killed
 * holding it, or garbage written over it, cannot keep for good. Nothing is
 * counted apart from the slots: a
 * responder that dies running frees its place when the master clears its
 * slot. A waiter sleeps on its slot's word (a futex), woken when it is
 * given its turn, and looks again every WAIT_TICK_MS for what no one
 * wakes it for: a place freed by a death, its deadline, its client gone.
 * The master never takes the lock.
 */
#include <sys/syscall.h>

#include <linux/futex.h>

#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fcgi.h"
#include "../core/api/gateway.h"
#include "../core/http/error.h"
#include "../lib/util.h"

#define WAIT_TICK_MS	250

/*
 * A tenant (the hex SHA-256 of a key, or "anonymous") as one 64-bit word,
 * so a slot can publish it with a single atomic store. FNV-1a: two keys
 * colliding would only share one cap, and 64 bits make that moot.
 */
static uint64_t
tenant_word(const char *tenant)
{
	uint64_t h = sg_fnv1a(tenant);

	return h != 0 ? h : 1;
}

/* The queue's lock: see lib/shlock.h (garbage in it cannot keep it). */
static void
lock(struct sg_board *b)
{
	sg_shlock_take(&b->qlock);
}

static void
unlock(struct sg_board *b)
{
	sg_shlock_give(&b->qlock);
}

static int
qstate(const struct sg_slot *s)
{
	return __atomic_load_n(&s->q, __ATOMIC_SEQ_CST);
}

static void
wake(struct sg_slot *s)
{
	syscall(SYS_futex, &s->q, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Sleep while the slot's word is SG_Q_WAITING, ms at most. */
static void
sleep_on(struct sg_slot *s, int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };

	syscall(SYS_futex, &s->q, FUTEX_WAIT, SG_Q_WAITING, &ts, NULL, 0);
}

/* Requests running; their keys into keys[] (SG_SLOTS of room). */
static int
running(const struct sg_board *b, int used, uint64_t *keys)
{
	int i, n = 0;

	for (i = 0; i < used; i++)
		if (qstate(&b->slots[i]) == SG_Q_RUNNING)
			keys[n++] = __atomic_load_n(&b->slots[i].tenant,
			    __ATOMIC_SEQ_CST);
	return n;
}

static int
count(const uint64_t *keys, int n, uint64_t key)
{
	int i, c = 0;

	for (i = 0; i < n; i++)
		c += keys[i] == key;
	return c;
}

/* The waiting slot whose turn it is, or -1: its key below its cap, the
 * fewest of its key's requests running, the oldest. */
static int
next_turn(const struct sg_board *b, int used, const uint64_t *keys, int nrun)
{
	int i, best = -1, best_n = 0, n, cap;
	uint64_t best_t = 0, t;

	for (i = 0; i < used; i++) {
		const struct sg_slot *s = &b->slots[i];

		if (qstate(s) != SG_Q_WAITING)
			continue;
		n = count(keys, nrun, __atomic_load_n(&s->tenant,
		    __ATOMIC_SEQ_CST));
		cap = __atomic_load_n(&s->cap, __ATOMIC_SEQ_CST);
		t = __atomic_load_n(&s->ticket, __ATOMIC_SEQ_CST);
		if (cap > 0 && n >= cap)
			continue;
		if (best == -1 || n < best_n || (n == best_n && t < best_t)) {
			best = i;
			best_n = n;
			best_t = t;
		}
	}
	return best;
}

/*
 * Under the lock: give free places to waiting requests, in turn. A slot
 * the master cleared meanwhile (its responder died) is not WAITING any
 * more, and the exchange then gives it nothing. self, the caller's slot,
 * is awake: it needs no futex wake.
 */
static void
dispatch(struct sg_board *b, int max, const struct sg_slot *self)
{
	uint64_t keys[SG_SLOTS];
	int used = sg_board_used(b), nrun, next, want;

	for (;;) {
		if ((nrun = running(b, used, keys)) >= max)
			return;
		if ((next = next_turn(b, used, keys, nrun)) == -1)
			return;
		want = SG_Q_WAITING;
		if (__atomic_compare_exchange_n(&b->slots[next].q, &want,
		    SG_Q_RUNNING, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) &&
		    &b->slots[next] != self)	/* self is not asleep */
			wake(&b->slots[next]);
	}
}

/* Whether a place is free, without the lock: worth a dispatch. */
static int
place_free(const struct sg_board *b, int max)
{
	int i, used = sg_board_used(b), n = 0;

	for (i = 0; i < used && n < max; i++)
		n += qstate(&b->slots[i]) == SG_Q_RUNNING;
	return n < max;
}

/* Leave the queue: 1 when the turn came meanwhile (then keep it). */
static int
withdraw(struct sg_board *b, struct sg_slot *s)
{
	int want = SG_Q_WAITING, left;

	lock(b);
	left = __atomic_compare_exchange_n(&s->q, &want, SG_Q_NONE, 0,
	    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	unlock(b);
	return !left && want == SG_Q_RUNNING;
}

/* The refusal once the wait is over: the key's own cap held it, else
 * the gateway is full. */
static int
refuse(struct sg_board *b, struct sg_slot *s, int waited,
    struct sg_error *err)
{
	uint64_t keys[SG_SLOTS];
	int cap = __atomic_load_n(&s->cap, __ATOMIC_SEQ_CST), nrun, mine;

	lock(b);
	nrun = running(b, sg_board_used(b), keys);
	mine = count(keys, nrun, __atomic_load_n(&s->tenant, __ATOMIC_SEQ_CST));
	unlock(b);
	if (cap > 0 && mine >= cap) {
		__atomic_fetch_add(&b->refused[SG_REFUSED_KEY], 1,
		    __ATOMIC_RELAXED);
		return sg_error_set(err, 429, "requests", "rate_limit_exceeded",
		    NULL, "Too many concurrent requests for this key (limit "
		    "%d)%s; retry shortly.", cap, waited ? ", waited its turn "
		    "for server.queue_timeout" : "");
	}
	__atomic_fetch_add(&b->refused[SG_REFUSED_CAPACITY], 1,
	    __ATOMIC_RELAXED);
	return sg_error_server(err, 503, "The gateway is at capacity (%d "
	    "requests under way)%s; retry shortly.", nrun, waited ? ", and "
	    "this one waited its turn for server.queue_timeout" : "");
}

/*
 * Wait for the slot's turn until deadline. 0 when it came; -1 when the
 * deadline passed or the client left (out says which).
 */
static int
wait_turn(struct sg_board *b, struct sg_slot *s, int max,
    const struct sg_req *req, struct sg_out *out, int64_t deadline)
{
	int64_t now, left;

	for (;;) {
		if (qstate(s) == SG_Q_RUNNING)
			return 0;
		now = sg_now_ms();
		/* A body still to be read (an upload) makes the connection
		 * readable: only a request read whole can be watched. */
		if (now >= deadline || (req->in == NULL && !out->alive(out)))
			return withdraw(b, s) ? 0 : -1;
		left = deadline - now;
		sleep_on(s, left < WAIT_TICK_MS ? left : WAIT_TICK_MS);
		/* A place no one gave: its responder died (the master
		 * cleared the slot), or it went to a capped key's waiter. */
		if (qstate(s) == SG_Q_WAITING && place_free(b, max)) {
			lock(b);
			dispatch(b, max, s);
			unlock(b);
		}
	}
}

/*
 * sg_admit_fn. A light route goes at once. A heavy one takes its place in
 * the queue and its turn comes at once when a place is free and no one
 * is before it; else it waits. A reserve responder (forked while every
 * responder of the pool held a connection) waits too, unless the queue is
 * full (as many heavy requests as the pool may ever hold): then its work
 * is the light routes, and a heavy request is refused at once.
 */
int
sg_queue_admit(void *arg, const struct sg_req *req, int heavy,
    struct sg_out *out, struct sg_error *err)
{
	struct sg_seat *seat = arg;
	struct sg_board *b = seat->board;
	struct sg_slot *s = &b->slots[seat->slot];
	const struct sg_cfg *cfg = seat->cfg;
	int max = cfg->server.workers_max, timeout = cfg->server.queue_timeout;
	int64_t start;

	__atomic_store_n(&s->tenant, req->tenant[0] != '\0' ?
	    tenant_word(req->tenant) : 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->cls, heavy ? SG_CLASS_HEAVY : SG_CLASS_LIGHT,
	    __ATOMIC_SEQ_CST);
	if (!heavy)
		return 0;
	__atomic_store_n(&s->cap, sg_cfg_key_limit(cfg, req->key),
	    __ATOMIC_SEQ_CST);
	lock(b);
	__atomic_store_n(&s->ticket, b->qticket++, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->q, SG_Q_WAITING, __ATOMIC_SEQ_CST);
	dispatch(b, max, s);
	unlock(b);
	if (qstate(s) == SG_Q_RUNNING)
		return 0;
	if (timeout == 0 || (seat->reserve &&
	    sg_board_heavy(b) > SG_POOL_MAX(max)))
		return withdraw(b, s) ? 0 : refuse(b, s, 0, err);
	start = sg_now_ms();
	__atomic_fetch_add(&b->waited, 1, __ATOMIC_RELAXED);
	if (wait_turn(b, s, max, req, out, req->start_ms + (int64_t)timeout *
	    1000) == 0) {
		__atomic_fetch_add(&b->waited_ms, (uint64_t)(sg_now_ms() -
		    start), __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_fetch_add(&b->waited_ms, (uint64_t)(sg_now_ms() - start),
	    __ATOMIC_RELAXED);
	return refuse(b, s, 1, err);
}

/*
 * The request is answered (its last bytes may still be on their way):
 * its place goes to the next in turn, and its key and class are cleared,
 * so the client's next request never finds this one counted.
 */
void
sg_queue_release(struct sg_board *b, int slot, int workers_max)
{
	struct sg_slot *s = &b->slots[slot];

	__atomic_store_n(&s->tenant, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->cls, SG_CLASS_NONE, __ATOMIC_SEQ_CST);
	if (qstate(s) == SG_Q_NONE)
		return;
	lock(b);
	__atomic_store_n(&s->q, SG_Q_NONE, __ATOMIC_SEQ_CST);
	dispatch(b, workers_max, s);
	unlock(b);
}
