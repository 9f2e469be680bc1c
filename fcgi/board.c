/*
 * The scoreboard as the responders use it: each one reports its state in
 * its own slot and, while busy, whom it serves, how heavy the route is and
 * where it stands in the queue (queue.c); /metrics reads it all.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fcgi.h"
#include "../core/http/error.h"
#include "../lib/util.h"

/* A new state for a slot; whom it serves and the route class are
 * published by admission, once known, so every state change clears them. */
void
sg_board_set(struct sg_board *b, int slot, int state)
{
	struct sg_slot *s = &b->slots[slot];

	__atomic_store_n(&s->tenant, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->cls, SG_CLASS_NONE, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->q, SG_Q_NONE, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->since_ms, sg_now_ms(), __ATOMIC_RELAXED);
	__atomic_store_n(&s->state, state, __ATOMIC_SEQ_CST);
}

/* How many slots to scan: the master's count, bounded (the board is
 * shared with every responder, and one could be made to scribble on it). */
int
sg_board_used(const struct sg_board *b)
{
	int used = __atomic_load_n(&b->used, __ATOMIC_SEQ_CST);

	return used < 0 ? 0 : used > SG_SLOTS ? SG_SLOTS : used;
}

/* Whether fewer than n slots are free to take a connection (idle or
 * starting): a responder going busy wakes the master only then, not on
 * every request (a wake costs the master a context switch each time). */
int
sg_board_short(const struct sg_board *b, int n)
{
	int i, st, used = sg_board_used(b);

	for (i = 0; i < used && n > 0; i++) {
		st = __atomic_load_n(&b->slots[i].state, __ATOMIC_SEQ_CST);
		if (st == SG_SLOT_IDLE || st == SG_SLOT_STARTING)
			n--;
	}
	return n > 0;
}

/*
 * How many responders the pool forks now: up to min, and one more when
 * none of the live ones is free, up to most. held_since is when the
 * longest-busy responder began (now when none is busy). When none is free
 * but none has been busy SG_GROW_WAIT_MS yet, it forks none and sets
 * *recheck_at to when that one will have: a quick request is over sooner
 * than a fork would help, and more processes than cores only add
 * switches. Else *recheck_at is 0.
 */
int
sg_board_grow(int live, int spare, int min, int most, int64_t held_since,
    int64_t now, int64_t *recheck_at)
{
	int n = 0;

	*recheck_at = 0;
	if (spare == 0 && live >= min && live < most &&
	    held_since > now - SG_GROW_WAIT_MS) {
		*recheck_at = held_since + SG_GROW_WAIT_MS;
		return 0;
	}
	for (; live < min || (spare == 0 && live < most); live++, spare++)
		n++;
	return n;
}

/*
 * The backlog while the pool is full (want): a connection seen waiting
 * (seen) starts *since; once one has waited SG_GROW_WAIT_MS, 1: the
 * master forks a reserve if a connection still waits. As growth does, it
 * lets a quick request end first: most connections seen are taken a
 * moment later by a responder ending its request (its work after the
 * answer), and a reserve is a process started for one connection. The
 * listen socket (readable all the while) is polled only while *since is
 * 0.
 */
int
sg_board_backlog(int want, int seen, int64_t now, int64_t *since)
{
	if (!want)
		*since = 0;
	else if (seen)
		*since = now;
	else if (*since != 0 && now - *since >= SG_GROW_WAIT_MS) {
		*since = 0;
		return 1;
	}
	return 0;
}

/* Busy slots on heavy routes, running or waiting their turn. */
int
sg_board_heavy(const struct sg_board *b)
{
	int i, n = 0, used = sg_board_used(b);

	for (i = 0; i < used; i++)
		n += __atomic_load_n(&b->slots[i].state, __ATOMIC_ACQUIRE) ==
		    SG_SLOT_BUSY && __atomic_load_n(&b->slots[i].cls,
		    __ATOMIC_RELAXED) == SG_CLASS_HEAVY;
	return n;
}

void
sg_board_count(struct sg_board *b, int status, int64_t ms)
{
	int cls = status >= 100 && status < 600 ? status / 100 - 1 : 5;

	__atomic_fetch_add(&b->requests[cls], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&b->duration_ms, (uint64_t)ms, __ATOMIC_RELAXED);
}

static void
emit(char *buf, size_t sz, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + *len, sz - *len, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sz - *len)
		*len += (size_t)n;
}

/* A gauge with one label: HELP, TYPE and a sample per label value. */
static void
gauge(char *buf, size_t sz, size_t *len, const char *name, const char *help,
    const char *label, const char *const *values, const int *v, int n)
{
	int i;

	emit(buf, sz, len, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
	for (i = 0; i < n; i++)
		emit(buf, sz, len, "%s{%s=\"%s\"} %d\n", name, label, values[i],
		    v[i]);
}

static uint64_t
counter(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* The console's overview: sg_load_fn over the scoreboard. */
void
sg_board_load(void *arg, struct sg_st_load *l)
{
	const struct sg_board *b = ((struct sg_seat *)arg)->board;
	int i, st;

	memset(l, 0, sizeof(*l));
	for (i = 0; i < SG_SLOTS; i++) {
		st = __atomic_load_n(&b->slots[i].state, __ATOMIC_ACQUIRE);
		if (st < SG_SLOT_STARTING || st > SG_SLOT_KEPT)
			continue;
		l->responders++;
		if (st != SG_SLOT_BUSY)
			continue;
		l->busy++;
		l->queued += __atomic_load_n(&b->slots[i].q,
		    __ATOMIC_RELAXED) == SG_Q_WAITING;
	}
}

/* Prometheus text for /metrics: sg_metrics_fn over the scoreboard. */
size_t
sg_board_metrics(void *arg, char *buf, size_t sz)
{
	static const char *const codes[] = { "1xx", "2xx", "3xx", "4xx", "5xx",
	    "other" };
	static const char *const states[] = { "starting", "idle", "busy",
	    "kept" };
	static const char *const classes[] = { "reading", "light", "heavy" };
	const struct sg_board *b = ((struct sg_seat *)arg)->board;
	int state[4] = { 0 }, cls[3] = { 0 }, i, st, c, waiting = 0;
	size_t len = 0;

	for (i = 0; i < SG_SLOTS; i++) {
		st = __atomic_load_n(&b->slots[i].state, __ATOMIC_ACQUIRE);
		if (st < SG_SLOT_STARTING || st > SG_SLOT_KEPT)
			continue;
		state[st - SG_SLOT_STARTING]++;
		waiting += st == SG_SLOT_BUSY && __atomic_load_n(
		    &b->slots[i].q, __ATOMIC_RELAXED) == SG_Q_WAITING;
		c = __atomic_load_n(&b->slots[i].cls, __ATOMIC_RELAXED);
		if (st == SG_SLOT_BUSY && c >= SG_CLASS_NONE &&
		    c <= SG_CLASS_HEAVY)
			cls[c]++;
	}
	emit(buf, sz, &len, "# HELP sandgate_requests_total Requests answered, "
	    "by status class.\n# TYPE sandgate_requests_total counter\n");
	for (i = 0; i < 6; i++)
		emit(buf, sz, &len, "sandgate_requests_total{code=\"%s\"} %llu\n",
		    codes[i], (unsigned long long)counter(&b->requests[i]));
	emit(buf, sz, &len, "# HELP sandgate_request_duration_ms_total Time "
	    "spent answering.\n# TYPE sandgate_request_duration_ms_total "
	    "counter\nsandgate_request_duration_ms_total %llu\n",
	    (unsigned long long)counter(&b->duration_ms));
	gauge(buf, sz, &len, "sandgate_responders", "Responder processes, by "
	    "state.", "state", states, state, 4);
	gauge(buf, sz, &len, "sandgate_busy_responders", "Busy responders, by "
	    "route class (reading: the request is not in yet).", "class",
	    classes, cls, 3);
	emit(buf, sz, &len, "# HELP sandgate_queued_requests Heavy requests "
	    "waiting for their turn.\n# TYPE sandgate_queued_requests gauge\n"
	    "sandgate_queued_requests %d\n# HELP sandgate_queue_waits_total "
	    "Requests that had to wait for their turn.\n# TYPE "
	    "sandgate_queue_waits_total counter\nsandgate_queue_waits_total "
	    "%llu\n# HELP sandgate_queue_wait_ms_total Time they waited.\n"
	    "# TYPE sandgate_queue_wait_ms_total counter\n"
	    "sandgate_queue_wait_ms_total %llu\n", waiting,
	    (unsigned long long)counter(&b->waited),
	    (unsigned long long)counter(&b->waited_ms));
	emit(buf, sz, &len, "# HELP sandgate_refused_total Requests refused "
	    "after waiting server.queue_timeout: at a key's max_concurrent "
	    "(429) or at workers_max (503).\n# TYPE sandgate_refused_total "
	    "counter\n"
	    "sandgate_refused_total{reason=\"key_limit\"} %llu\n"
	    "sandgate_refused_total{reason=\"capacity\"} %llu\n",
	    (unsigned long long)counter(&b->refused[SG_REFUSED_KEY]),
	    (unsigned long long)counter(&b->refused[SG_REFUSED_CAPACITY]));
	return len;
}
