/*
 * The overview's samples: a ring in shared memory, one writer (the
 * reaper), many readers. A sample is written in full before the count
 * of samples is published, and readers stop one short of the ring's
 * size: the slot being written is never one they read. A reader that
 * took longer than an interval could see the oldest slot change under
 * it; it only ever sees numbers, never a bound to trust: every index is
 * taken modulo the ring.
 */
#include <sys/mman.h>

#include <string.h>

#include "metrics.h"
#include "stats.h"
#include "../../lib/util.h"
#include "../../store/store.h"

/* An hour of intervals needs one sample more; one more is the slot in
 * writing. */
#define ST_SLOTS	(3600 / SG_ST_INTERVAL + 2)

struct st_sample {
	int64_t		 t_ms;		/* wall clock */
	struct sg_mx_totals tot;
	struct sg_st_load load;
	struct sg_st_alive alive;
};

struct st_page {
	int64_t		 started_ms;
	uint64_t	 count;		/* samples ever written */
	struct st_sample s[ST_SLOTS];
};

static struct st_page *page;

int
sg_st_map(void)
{
	void *p = mmap(NULL, sizeof(*page), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	page = p;
	page->started_ms = sg_wall_ms();
	return 0;
}

int64_t
sg_st_started_ms(void)
{
	return page != NULL ? page->started_ms : 0;
}

void
sg_st_alive_add(struct sg_st_alive *a, int kind, int64_t n)
{
	if (kind == SG_SBX_WARM)
		a->warm += n;
	else {
		a->sandboxes += n;
		if (kind == SG_SBX_SESSION || kind == SG_SBX_CONVERSATION)
			a->sessions += n;
	}
}

static int
count_one(void *arg, const char *tool, int kind, int64_t n)
{
	(void)tool;
	sg_st_alive_add(arg, kind, n);
	return 0;
}

int
sg_st_alive(struct sg_store *st, struct sg_st_alive *a)
{
	memset(a, 0, sizeof(*a));
	return sg_store_sbx_counts(st, count_one, a) == SG_STORE_OK ? 0 : -1;
}

void
sg_st_sample(const struct sg_st_load *load, const struct sg_st_alive *alive)
{
	struct st_sample *s;
	uint64_t n;

	if (page == NULL)
		return;
	n = __atomic_load_n(&page->count, __ATOMIC_RELAXED);
	s = &page->s[n % ST_SLOTS];
	s->t_ms = sg_wall_ms();
	sg_mx_totals(&s->tot);
	s->load = *load;
	s->alive = *alive;
	__atomic_store_n(&page->count, n + 1, __ATOMIC_RELEASE);
}

/* b - a, 0 when a counter seems to have gone back (a torn read). */
static uint64_t
delta(uint64_t b, uint64_t a)
{
	return b >= a ? b - a : 0;
}

/* The pct-th percentile in ms of the requests counted between a and b,
 * linear within a bucket; the last bucket (past every bound) gives its
 * floor. When one bucket holds them all, the mean (clamped to the
 * bucket) is the better guess: a lone request is its own time, not its
 * bucket's bound. null when there were none. */
static json_t *
quantile(const struct sg_mx_totals *a, const struct sg_mx_totals *b,
    uint64_t pct)
{
	uint64_t n[SG_MX_BUCKETS], total = 0, want, seen = 0;
	double lo = 0, hi, mean;
	int i;

	for (i = 0; i < SG_MX_BUCKETS; i++)
		total += n[i] = delta(b->n[i], a->n[i]);
	if (total == 0)
		return json_null();
	want = (total * pct + 99) / 100;
	for (i = 0; i < SG_MX_BUCKETS; i++) {
		hi = (double)sg_mx_bound_ms(i);
		if (seen + n[i] >= want && n[i] > 0) {
			if (n[i] == total) {
				mean = (double)delta(b->sum_ms, a->sum_ms) /
				    (double)total;
				if (mean < lo)
					mean = lo;
				if (hi >= 0 && mean > hi)
					mean = hi;
				return json_integer((json_int_t)(mean + 0.5));
			}
			if (hi < 0)
				return json_integer((json_int_t)lo);
			return json_integer((json_int_t)(lo + (hi - lo) *
			    (double)(want - seen) / (double)n[i] + 0.5));
		}
		seen += n[i];
		if (hi >= 0)
			lo = hi;
	}
	return json_integer((json_int_t)lo);
}

static json_t *
point(const struct st_sample *a, const struct st_sample *b)
{
	return json_pack("{s:I,s:I,s:I,s:o,s:o,s:i,s:i,s:i,s:I,s:I,s:I}",
	    "t", (json_int_t)(b->t_ms / 1000),
	    "requests", (json_int_t)delta(b->tot.requests, a->tot.requests),
	    "errors", (json_int_t)delta(b->tot.errors, a->tot.errors),
	    "p50_ms", quantile(&a->tot, &b->tot, 50),
	    "p99_ms", quantile(&a->tot, &b->tot, 99),
	    "responders", b->load.responders, "busy", b->load.busy,
	    "queued", b->load.queued, "sandboxes",
	    (json_int_t)b->alive.sandboxes, "sessions",
	    (json_int_t)b->alive.sessions, "warm", (json_int_t)b->alive.warm);
}

json_t *
sg_st_series(void)
{
	json_t *points = json_array();
	uint64_t n, first, i;

	if (page != NULL && points != NULL) {
		n = __atomic_load_n(&page->count, __ATOMIC_ACQUIRE);
		first = n > ST_SLOTS - 1 ? n - (ST_SLOTS - 1) : 0;
		for (i = first + 1; i < n; i++)
			json_array_append_new(points, point(
			    &page->s[(i - 1) % ST_SLOTS], &page->s[i % ST_SLOTS]));
	}
	return json_pack("{s:i,s:o}", "interval", SG_ST_INTERVAL, "points",
	    points != NULL ? points : json_array());
}
