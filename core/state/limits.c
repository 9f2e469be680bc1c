/*
 * A key's limits (limits.h): one shared table of the keys seen, their
 * minute window (one box) and what their period cost, under one lock
 * (lib/shlock.h); the request under way is this process's.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "ledger.h"
#include "limits.h"
#include "../../lib/shlock.h"
#include "../../lib/util.h"
#include "../../store/store.h"

#define KEYS		1024	/* keys with limits a box tracks at once */
#define WINDOW_MS	60000
#define REFRESH_MS	1000	/* a period's spend read again after */
#define IDLE_MS		(2 * WINDOW_MS)	/* a slot may go to another key */

struct ent {
	char	 tenant[65];
	int64_t	 touched_ms;
	int64_t	 win_start, win_reqs, win_tokens;	/* one box's minute */
	int64_t	 period_start, fetched_ms;
	int64_t	 cost, sandbox_ms;	/* the period's, as last read + since */
};

/* Every responder can write the table: its lock is one garbage cannot
 * keep (lib/shlock.h), and a key's entry is found by its text. */
struct table {
	struct sg_shlock lock;
	struct ent	 ents[KEYS];
};

static struct table *tab;

/* The admitted request: where its tokens and cost go. */
static struct {
	int		 on;
	char		 tenant[65];
	struct sg_store	*store;		/* set when its window is the store's */
	int64_t		 win_start, period_start;
	int		 tpm;
} cur;

int
sg_lim_map(void)
{
	void *p;

	if ((p = mmap(NULL, sizeof(*tab), PROT_READ | PROT_WRITE, MAP_SHARED |
	    MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		return -1;
	tab = p;
	return 0;
}

/* A process without the shared table (the CLI, unit tests) has its own. */
static struct table *
table(void)
{
	static struct table own;

	return tab != NULL ? tab : &own;
}

static void
lock(void)
{
	sg_shlock_take(&table()->lock);
}

static void
unlock(void)
{
	sg_shlock_give(&table()->lock);
}

/* tenant's entry, made when new (taking an idle one's place), under the
 * lock; NULL when every slot is busy. */
static struct ent *
entry(const char *tenant, int64_t now)
{
	struct ent *e, *free_one = NULL;
	size_t h = (size_t)sg_fnv1a(tenant), i;

	for (i = 0; i < KEYS; i++) {
		e = &table()->ents[(h + i) % KEYS];
		if (strcmp(e->tenant, tenant) == 0) {
			e->touched_ms = now;
			return e;
		}
		if (free_one == NULL && (e->tenant[0] == '\0' ||
		    now - e->touched_ms > IDLE_MS))
			free_one = e;
		if (e->tenant[0] == '\0')
			break;
	}
	if ((e = free_one) == NULL)
		return NULL;
	memset(e, 0, sizeof(*e));
	sg_copy(e->tenant, sizeof(e->tenant), tenant);
	e->touched_ms = now;
	return e;
}

void
sg_lim_duration(int64_t ms, char *out, size_t sz)
{
	int64_t s;

	if (ms < 0)
		ms = 0;
	if (ms < 1000) {
		snprintf(out, sz, "%lldms", (long long)ms);
		return;
	}
	s = (ms + 999) / 1000;
	if (s < 60)
		snprintf(out, sz, "%llds", (long long)s);
	else
		snprintf(out, sz, "%lldm%llds", (long long)(s / 60),
		    (long long)(s % 60));
}

/* The x-ratelimit-* lines of a key's minute. */
static void
rate_head(const struct sg_cfg_limits *lim, int64_t reqs, int64_t tokens,
    int64_t reset_ms, char *head, size_t sz)
{
	char reset[32];
	size_t n = strlen(head);

	sg_lim_duration(reset_ms, reset, sizeof(reset));
	if (lim->rpm > 0 && n < sz)
		n += (size_t)snprintf(head + n, sz - n,
		    "x-ratelimit-limit-requests: %lld\r\n"
		    "x-ratelimit-remaining-requests: %lld\r\n"
		    "x-ratelimit-reset-requests: %s\r\n", lim->rpm,
		    reqs < lim->rpm ? lim->rpm - reqs : 0, reset);
	if (lim->tpm > 0 && n < sz)
		snprintf(head + n, sz - n, "x-ratelimit-limit-tokens: %lld\r\n"
		    "x-ratelimit-remaining-tokens: %lld\r\n"
		    "x-ratelimit-reset-tokens: %s\r\n", lim->tpm,
		    tokens < lim->tpm ? lim->tpm - tokens : 0, reset);
}

static int
refuse_rate(const struct sg_cfg_limits *lim, int64_t reqs, int64_t tokens,
    int64_t retry_ms, char *head, size_t sz, struct sg_error *err)
{
	int by_requests = lim->rpm > 0 && reqs >= lim->rpm;
	char wait[32];
	size_t n;

	sg_lim_duration(retry_ms, wait, sizeof(wait));
	n = strlen(head);
	snprintf(head + n, sz - n, "retry-after: %lld\r\nretry-after-ms: %lld\r\n",
	    (long long)((retry_ms + 999) / 1000), (long long)retry_ms);
	return sg_error_set(err, 429, by_requests ? "requests" : "tokens",
	    "rate_limit_exceeded", NULL, "Rate limit reached for this key on %s per "
	    "min (%s): Limit %lld, Used %lld, Requested 1. Please try again in "
	    "%s.", by_requests ? "requests" : "tokens", by_requests ? "RPM" :
	    "TPM", by_requests ? lim->rpm : lim->tpm, (long long)(by_requests ?
	    reqs : tokens), wait);
}

/*
 * What is left of a minute that started at start, at most the minute: a
 * request is timed when it came, and another that came after it may
 * have started the window first (another responder, another box).
 */
static int64_t
left_ms(int64_t start, int64_t now)
{
	int64_t left = start + WINDOW_MS - now;

	return left < 0 ? 0 : left > WINDOW_MS ? WINDOW_MS : left;
}

/* The minute's headers in head, as the window stood after this request;
 * refused (-1, err filled) when it was not let in. */
static int
window_answer(const struct sg_cfg_limits *lim, int ok, int64_t reqs,
    int64_t tokens, int64_t start, int64_t now, char *head, size_t sz,
    struct sg_error *err)
{
	int64_t left = left_ms(start, now);

	rate_head(lim, reqs, tokens, left, head, sz);
	return ok ? 0 : refuse_rate(lim, reqs, tokens, left, head, sz, err);
}

/* The minute of a key on this box's table. */
static int
take_local(const char *tenant, const struct sg_cfg_limits *lim,
    int64_t now, char *head, size_t sz, struct sg_error *err)
{
	struct ent *e;
	int64_t reqs, tokens, start;
	int ok;

	lock();
	if ((e = entry(tenant, now)) == NULL) {
		unlock();
		return sg_error_set(err, 503, "server_error", NULL, NULL,
		    "Too many keys with rate limits are active at once on this "
		    "gateway; try again shortly.");
	}
	if (now >= e->win_start + WINDOW_MS) {
		e->win_start = now;
		e->win_reqs = e->win_tokens = 0;
	}
	ok = (lim->rpm <= 0 || e->win_reqs < lim->rpm) &&
	    (lim->tpm <= 0 || e->win_tokens < lim->tpm);
	if (ok)
		e->win_reqs++;
	reqs = e->win_reqs;
	tokens = e->win_tokens;
	start = e->win_start;
	unlock();
	if (window_answer(lim, ok, reqs, tokens, start, now, head, sz,
	    err) == -1)
		return -1;
	cur.win_start = start;
	return 0;
}

/* The minute of a key on a store boxes share. */
static int
take_shared(struct sg_store *st, const char *tenant,
    const struct sg_cfg_limits *lim, int64_t now, char *head, size_t sz,
    struct sg_error *err)
{
	struct sg_store_rate r;

	if (sg_store_rate_take(st, tenant, now, WINDOW_MS, lim->rpm > 0 ?
	    lim->rpm : 0, lim->tpm > 0 ? lim->tpm : 0, &r) != SG_STORE_OK)
		return sg_error_set(err, 503, "server_error", NULL, NULL,
		    "The store does not answer: %s", sg_store_errmsg(st));
	if (window_answer(lim, r.ok, r.requests, r.tokens, r.start_ms, now,
	    head, sz, err) == -1)
		return -1;
	cur.store = st;
	cur.win_start = r.start_ms;
	return 0;
}

/* tenant's spend this period, read again when a second old. */
static int
spent(struct sg_store *st, const char *tenant, int64_t ps, int64_t now,
    int64_t *cost, int64_t *sbx_ms, struct sg_error *err)
{
	struct sg_store_use_tot t;
	struct ent *e;
	int64_t pcost, psbx;
	int fresh;

	lock();
	e = entry(tenant, now);
	fresh = e != NULL && e->period_start == ps &&
	    now - e->fetched_ms < REFRESH_MS;
	if (fresh) {
		*cost = e->cost;
		*sbx_ms = e->sandbox_ms;
	}
	unlock();
	if (fresh)
		return 0;
	/* The rows not written yet first: one written meanwhile is then
	 * counted twice (too much, for a moment), never not at all. */
	sg_use_pending(tenant, ps, &pcost, &psbx);
	if (sg_store_use_total(st, tenant, ps, &t) != SG_STORE_OK)
		return sg_error_set(err, 503, "server_error", NULL, NULL,
		    "The store does not answer: %s", sg_store_errmsg(st));
	*cost = t.cost + pcost;
	*sbx_ms = t.sandbox_ms + psbx;
	lock();
	if ((e = entry(tenant, now)) != NULL) {
		e->period_start = ps;
		e->fetched_ms = now;
		e->cost = *cost;
		e->sandbox_ms = *sbx_ms;
	}
	unlock();
	return 0;
}

static int
check_period(struct sg_store *st, const char *tenant,
    const struct sg_cfg_limits *lim, int64_t now, char *head, size_t sz,
    struct sg_error *err)
{
	int64_t ps = sg_use_period_start(lim->period, now), cost = 0, sbx = 0;
	static const char *const names[] = { "day", "week", "month" };
	const char *period = names[lim->period >= 0 && lim->period <= 2 ?
	    lim->period : 2];
	size_t n;

	cur.period_start = ps;
	if (lim->budget <= 0 && lim->sandbox_seconds <= 0)
		return 0;
	if (spent(st, tenant, ps, now, &cost, &sbx, err) == -1)
		return -1;
	n = strlen(head);
	if (lim->budget > 0 && (double)cost >= lim->budget * 1e9) {
		snprintf(head + n, sz - n, "x-should-retry: false\r\n");
		return sg_error_set(err, 429, "insufficient_quota",
		    "insufficient_quota", NULL, "You exceeded this key's budget of "
		    "%.2f USD for the %s; ask the operator of this gateway to "
		    "raise it, or wait for the next %s.", lim->budget, period,
		    period);
	}
	if (lim->sandbox_seconds > 0 && sbx >= lim->sandbox_seconds * 1000) {
		snprintf(head + n, sz - n, "x-should-retry: false\r\n");
		return sg_error_set(err, 429, "insufficient_quota",
		    "insufficient_quota", NULL, "You exceeded this key's %lld sandbox "
		    "seconds for the %s; ask the operator of this gateway to "
		    "raise them, or wait for the next %s.", lim->sandbox_seconds,
		    period, period);
	}
	return 0;
}

int
sg_lim_admit(struct sg_store *st, const char *tenant,
    const struct sg_cfg_limits *lim, enum sg_lim_what what, int64_t now,
    char *head, size_t headsz, struct sg_error *err)
{
	int minute = what == SG_LIM_MODEL && (lim->rpm > 0 || lim->tpm > 0);

	head[0] = '\0';
	memset(&cur, 0, sizeof(cur));
	sg_copy(cur.tenant, sizeof(cur.tenant), tenant);
	/* The period first: a spent budget takes nothing of the minute. */
	if (check_period(st, tenant, lim, now, head, headsz, err) == -1)
		return -1;
	if (minute && (sg_store_shared(st) ? take_shared(st, tenant, lim, now,
	    head, headsz, err) : take_local(tenant, lim, now, head, headsz,
	    err)) == -1)
		return -1;
	cur.tpm = minute && lim->tpm > 0;
	cur.on = 1;
	sg_use_watch(cur.tpm ? sg_lim_tokens : NULL);
	return 0;
}

void
sg_lim_tokens(int64_t tokens)
{
	struct ent *e;

	if (!cur.on || !cur.tpm || tokens <= 0)
		return;
	if (cur.store != NULL) {
		/* Not counted if the store fails: the next request's take
		 * tells. */
		sg_store_rate_tokens(cur.store, cur.tenant, cur.win_start,
		    tokens);
		return;
	}
	lock();
	if ((e = entry(cur.tenant, sg_wall_ms())) != NULL &&
	    e->win_start == cur.win_start)
		e->win_tokens += tokens;
	unlock();
}

void
sg_lim_end(int64_t cost, int64_t sandbox_ms)
{
	struct ent *e;

	if (!cur.on)
		return;
	cur.on = 0;
	sg_use_watch(NULL);
	lock();
	if ((e = entry(cur.tenant, sg_wall_ms())) != NULL &&
	    e->period_start == cur.period_start) {
		e->cost += cost;
		e->sandbox_ms += sandbox_ms;
	}
	unlock();
}
