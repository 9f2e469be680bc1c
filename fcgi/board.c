/*
 * The scoreboard as the responders use it: each one reports its state in
 * its own slot and, while busy, whom it serves and how heavy the route is.
 * That is enough to refuse work that would let one key, or heavy work as
 * a whole, take every responder: admission counts the other slots.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fcgi.h"
#include "../core/error.h"
#include "../lib/util.h"

/*
 * A tenant (the hex SHA-256 of a key, or "anonymous") as one 64-bit word,
 * so a slot can publish it with a single atomic store. FNV-1a: two keys
 * colliding would only share one limit, and 64 bits make that moot.
 */
static uint64_t
tenant_word(const char *tenant)
{
	uint64_t h = sg_fnv1a(tenant);

	return h != 0 ? h : 1;
}

/* A new state for a slot; whom it serves and the route class are
 * published by admission, once known, so every state change clears them. */
void
sg_board_set(struct sg_board *b, int slot, int state)
{
	struct sg_slot *s = &b->slots[slot];

	__atomic_store_n(&s->tenant, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->cls, SG_CLASS_NONE, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->since_ms, sg_now_ms(), __ATOMIC_RELAXED);
	__atomic_store_n(&s->state, state, __ATOMIC_SEQ_CST);
}

/* How many slots to scan: the master's count, bounded (the board is
 * shared with every responder, and one could be made to scribble on it). */
static int
used_slots(const struct sg_board *b)
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
	int i, st, used = used_slots(b);

	for (i = 0; i < used && n > 0; i++) {
		st = __atomic_load_n(&b->slots[i].state, __ATOMIC_SEQ_CST);
		if (st == SG_SLOT_IDLE || st == SG_SLOT_STARTING)
			n--;
	}
	return n > 0;
}

/* Busy slots serving tenant t (0: none asked), and busy on heavy routes. */
static void
count_busy(const struct sg_board *b, uint64_t t, int *same, int *heavy)
{
	int i, used = used_slots(b);

	*same = *heavy = 0;
	for (i = 0; i < used; i++) {
		const struct sg_slot *s = &b->slots[i];

		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SG_SLOT_BUSY)
			continue;
		if (t != 0 && __atomic_load_n(&s->tenant, __ATOMIC_SEQ_CST) == t)
			(*same)++;
		if (__atomic_load_n(&s->cls, __ATOMIC_SEQ_CST) == SG_CLASS_HEAVY)
			(*heavy)++;
	}
}

/*
 * sg_admit_fn over the scoreboard. The slot publishes what it is about to
 * do and only then counts the busy slots, itself included. Of two racing
 * responders each sees at least the other's publication (sequentially
 * consistent stores and loads), so both may be refused where one would
 * have fitted, but never can both be admitted past a limit: this can
 * refuse too much, never admit too much.
 */
int
sg_board_admit(void *arg, const char *tenant, const struct sg_cfg_key *key,
    int heavy, struct sg_error *err)
{
	struct sg_seat *seat = arg;
	struct sg_board *b = seat->board;
	struct sg_slot *s = &b->slots[seat->slot];
	uint64_t t = tenant != NULL ? tenant_word(tenant) : 0;
	int same, busy_heavy, limit, max = seat->cfg->server.workers_max;

	__atomic_store_n(&s->tenant, t, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->cls, heavy ? SG_CLASS_HEAVY : SG_CLASS_LIGHT,
	    __ATOMIC_SEQ_CST);
	count_busy(b, t, &same, &busy_heavy);
	limit = sg_cfg_key_limit(seat->cfg, key);
	if (t != 0 && same > limit) {
		__atomic_fetch_add(&b->refused[SG_REFUSED_KEY], 1,
		    __ATOMIC_RELAXED);
		return sg_error_set(err, 429, "requests", "rate_limit_exceeded",
		    NULL, "Too many concurrent requests for this key (limit "
		    "%d); retry shortly.", limit);
	}
	/* Heavy work stops at workers_max: the reserve above it is kept
	 * for the light routes, and a queue would only hide the overload. */
	if (heavy && busy_heavy > max) {
		__atomic_fetch_add(&b->refused[SG_REFUSED_CAPACITY], 1,
		    __ATOMIC_RELAXED);
		return sg_error_server(err, 503, "The gateway is at capacity "
		    "(%d requests under way); retry shortly.", busy_heavy - 1);
	}
	return 0;
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
	int state[4] = { 0 }, cls[3] = { 0 }, i, st, c;
	size_t len = 0;

	for (i = 0; i < SG_SLOTS; i++) {
		st = __atomic_load_n(&b->slots[i].state, __ATOMIC_ACQUIRE);
		if (st < SG_SLOT_STARTING || st > SG_SLOT_KEPT)
			continue;
		state[st - SG_SLOT_STARTING]++;
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
	emit(buf, sz, &len, "# HELP sandgate_refused_total Requests refused "
	    "for concurrency: a key's max_concurrent (429) or heavy work at "
	    "workers_max (503).\n# TYPE sandgate_refused_total counter\n"
	    "sandgate_refused_total{reason=\"key_limit\"} %llu\n"
	    "sandgate_refused_total{reason=\"capacity\"} %llu\n",
	    (unsigned long long)counter(&b->refused[SG_REFUSED_KEY]),
	    (unsigned long long)counter(&b->refused[SG_REFUSED_CAPACITY]));
	return len;
}
