/*
 * The ledger's rows in shared memory: one live row per responder slot,
 * and a ring of finished rows the reaper drains (see ledger.h). One
 * lock guards the ring and the slots' states (lib/shlock.h: a holder
 * that dies, or garbage written over it, leaves it to the next taker).
 * Every responder can write the page: nothing read from it may send a
 * loop past the ring or a scan past the slots.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ledger.h"
#include "../config/config.h"
#include "../http/http.h"
#include "../../lib/shlock.h"
#include "../../lib/util.h"

/* Finished rows the reaper has not written yet: 2048 rows are about a
 * MiB, some seconds of the busiest gateway's requests. */
#define RING		2048
#define BATCH		256	/* rows per store transaction */

enum { LIVE_FREE = 0, LIVE_BUSY = 1 };

struct live {
	int		 state;		/* LIVE_*, changed under the lock */
	int		 pid;
	int64_t		 start;		/* sg_proc_start of pid */
	int64_t		 mono;		/* sg_now_ms at the request's start */
	struct sg_store_use row;
};

struct page {
	struct sg_shlock lock;
	uint64_t	 head, tail;	/* ring[head % RING] is the oldest */
	struct sg_store_use ring[RING];
	struct live	 slots[];
};

static struct page *page;		/* NULL until mapped */
static int nslots;			/* page->slots[]: ours, not the page's */

/* src into the array dst (zeroed), cut to fit: a request's copies,
 * without printf's cost. */
#define PUT(dst, src)	put((dst), sizeof(dst), (src))

static void
put(char *dst, size_t sz, const char *src)
{
	memcpy(dst, src, strnlen(src, sz - 1));
}
static struct live own;			/* a process without a slot */
static struct live *cur = &own;		/* the row this process counts */
static void (*watcher)(int64_t);	/* told of tokens as counted */

int
sg_use_map(int n)
{
	size_t sz = sizeof(struct page) + (size_t)n * sizeof(struct live);
	void *p;

	if ((p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED |
	    MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		return -1;
	page = p;
	nslots = n;
	return 0;
}

/*
 * Under the lock, a ring whose ends say more than it holds (written over)
 * is emptied: what it held is lost, the loops over it stay bounded.
 */
static void
lock(void)
{
	sg_shlock_take(&page->lock);
	if (page->tail - page->head > RING)
		page->head = page->tail;
}

static void
unlock(void)
{
	sg_shlock_give(&page->lock);
}

/* Queue a finished row, under the lock: 0, or -1 when the ring is full. */
static int
push(const struct sg_store_use *row)
{
	if (page->tail - page->head >= RING)
		return -1;
	page->ring[page->tail % RING] = *row;
	page->tail++;
	return 0;
}

/* Whether slot s holds a live row of a process that is gone. */
static int
orphaned(const struct live *s)
{
	return s->state == LIVE_BUSY && s->pid > 0 && (s->pid != sg_pid() ||
	    s->start != sg_self_start()) && sg_proc_start(s->pid) != s->start;
}

/* Finish slot s's row, left by a dead responder, under the lock. */
static void
finish_orphan(struct live *s)
{
	if (!orphaned(s))
		return;
	s->row.status = 0;
	if (s->row.duration_ms == 0)
		s->row.duration_ms = sg_now_ms() - s->mono;
	/* With the ring full it stays live: the next drain takes it. */
	if (push(&s->row) == 0)
		s->state = LIVE_FREE;
}

void
sg_use_slot(int slot)
{
	if (page == NULL || slot < 0 || slot >= nslots)
		return;
	cur = &page->slots[slot];
	lock();
	finish_orphan(cur);
	cur->pid = sg_pid();
	cur->start = sg_self_start();
	unlock();
}

void
sg_use_begin(const struct sg_req *req, const char *surface)
{
	struct sg_store_use *u = &cur->row;

	/* A predecessor's row the ring had no room for goes first. */
	if (page != NULL && cur != &own && cur->state == LIVE_BUSY) {
		lock();
		finish_orphan(cur);
		unlock();
	}
	memset(u, 0, sizeof(*u));
	PUT(u->id, req->id);
	PUT(u->tenant, req->tenant);
	sg_use_key_id(req->tenant, u->key_id);
	PUT(u->key_name, req->key_name);
	PUT(u->model, req->model);
	PUT(u->surface, surface);
	u->started_ms = req->wall_ms;
	cur->mono = req->start_ms;
	/* A responder's slot knows its process (sg_use_slot). */
	if (cur == &own) {
		cur->pid = sg_pid();
		cur->start = sg_self_start();
	}
	__atomic_store_n(&cur->state, LIVE_BUSY, __ATOMIC_RELEASE);
}

void
sg_use_watch(void (*fn)(int64_t))
{
	watcher = fn;
}

void
sg_use_model(const char *model, const char *upstream_model)
{
	sg_copy(cur->row.model, sizeof(cur->row.model), model);
	sg_copy(cur->row.upstream_model, sizeof(cur->row.upstream_model),
	    upstream_model != NULL ? upstream_model : "");
}

void
sg_use_call(void)
{
	cur->row.model_requests++;
}

static int64_t
count_of(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	if (v == NULL && b != NULL)
		v = json_object_get(o, b);
	return json_is_integer(v) && json_integer_value(v) > 0 ?
	    (int64_t)json_integer_value(v) : 0;
}

/* Counts of one usage into the request's row; its tokens to whoever
 * watches them (a key's tpm). */
static void
add_counts(const struct sg_usage_counts *c)
{
	struct sg_store_use *u = &cur->row;

	u->input_tokens += c->input;
	u->output_tokens += c->output;
	u->cached_tokens += c->cached;
	u->reasoning_tokens += c->reasoning;
	if (watcher != NULL)
		watcher(c->input + c->output);
}

void
sg_use_counts(const json_t *usage, struct sg_usage_counts *c)
{
	const json_t *in, *out;

	memset(c, 0, sizeof(*c));
	if (!json_is_object(usage))
		return;
	in = json_object_get(usage, "input_tokens_details");
	if (in == NULL)
		in = json_object_get(usage, "prompt_tokens_details");
	out = json_object_get(usage, "output_tokens_details");
	if (out == NULL)
		out = json_object_get(usage, "completion_tokens_details");
	c->input = count_of(usage, "input_tokens", "prompt_tokens");
	c->output = count_of(usage, "output_tokens", "completion_tokens");
	c->cached = count_of(in, "cached_tokens", NULL);
	c->reasoning = count_of(out, "reasoning_tokens", NULL);
}

void
sg_use_tokens(const json_t *usage)
{
	struct sg_usage_counts c;

	if (!json_is_object(usage))
		return;
	sg_use_counts(usage, &c);
	add_counts(&c);
}

/* Whether the quote at p (in text from start) opens a key: a quote
 * escaped inside a string has an odd run of backslashes before it. */
static int
unescaped(const char *start, const char *p)
{
	size_t n = 0;

	while (p > start && p[-1] == '\\')
		p--, n++;
	return n % 2 == 0;
}

void
sg_use_tokens_in(const char *text, size_t len)
{
	static const char key[] = "\"usage\"";
	const char *p = NULL, *q, *end = text + len;
	struct sg_usage_counts c;
	json_t *v;

	/* The last "usage" key: an answer's own is at its top level and
	 * after its output, in both APIs. */
	for (q = text; (q = memmem(q, (size_t)(end - q), key,
	    sizeof(key) - 1)) != NULL; q += sizeof(key) - 1)
		if (unescaped(text, q))
			p = q;
	if (p == NULL)
		return;
	for (p += sizeof(key) - 1; p < end && (*p == ' ' || *p == '\t' ||
	    *p == '\n' || *p == '\r'); p++)
		;
	if (p >= end || *p++ != ':')
		return;
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if (p >= end || *p != '{')
		return;
	if (sg_usescan(p, (size_t)(end - p), &c) == SG_USESCAN_OK) {
		add_counts(&c);
		return;
	}
	if ((v = json_loadb(p, (size_t)(end - p), JSON_DISABLE_EOF_CHECK,
	    NULL)) == NULL)
		return;
	sg_use_tokens(v);
	json_decref(v);
}

void
sg_use_run(const char *tool, int64_t ms)
{
	struct sg_store_use *u = &cur->row;

	if (tool != NULL && u->tool[0] == '\0')
		sg_copy(u->tool, sizeof(u->tool), tool);
	u->code_runs++;
	u->sandbox_ms += ms > 0 ? ms : 0;
}

void
sg_use_session(const char *tool)
{
	struct sg_store_use *u = &cur->row;

	if (tool != NULL && u->tool[0] == '\0')
		sg_copy(u->tool, sizeof(u->tool), tool);
	u->sessions++;
}

void
sg_use_file(int64_t bytes)
{
	cur->row.file_bytes += bytes > 0 ? bytes : 0;
}

/* nano-USD of n units at price USD per per units. */
static int64_t
nano(int64_t n, double price, double per)
{
	/* Non-negative: rounding is adding a half. */
	return (int64_t)((double)n * price * 1e9 / per + 0.5);
}

void
sg_use_price(const struct sg_cfg *cfg, struct sg_store_use *u)
{
	const struct sg_cfg_model *m = u->model[0] != '\0' ?
	    sg_cfg_model(cfg, u->model) : NULL;
	const struct sg_tool *t = u->tool[0] != '\0' ? sg_cfg_tool(cfg, u->tool) :
	    NULL;
	int64_t cached = u->cached_tokens < u->input_tokens ? u->cached_tokens :
	    u->input_tokens;

	u->cost_input = u->cost_output = u->cost_sandbox = 0;
	if (m != NULL) {
		u->cost_input = nano(u->input_tokens - cached, m->price.input,
		    1e6) + nano(cached, m->price.cached_set ?
		    m->price.cached_input : m->price.input, 1e6);
		u->cost_output = nano(u->output_tokens, m->price.output, 1e6);
	}
	if (t != NULL)
		u->cost_sandbox = nano(u->sessions, t->price_session, 1) +
		    nano(u->sandbox_ms, t->price_hour, 3600e3);
}

static int
spent(const struct sg_store_use *u)
{
	return u->model_requests > 0 || u->code_runs > 0 || u->sessions > 0 ||
	    u->file_bytes > 0;
}

int
sg_use_end(const struct sg_cfg *cfg, int status, int aborted,
    struct sg_store_use *out)
{
	struct sg_store_use *u = &cur->row;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (cur->state != LIVE_BUSY)
		return 0;
	u->status = status;
	u->aborted = aborted;
	u->duration_ms = sg_now_ms() - cur->mono;
	sg_use_price(cfg, u);
	*out = *u;
	if (!spent(u)) {
		cur->state = LIVE_FREE;
		return 0;
	}
	if (page == NULL || cur == &own) {
		cur->state = LIVE_FREE;
		return 1;
	}
	lock();
	if (push(u) == -1)
		rc = 1;
	cur->state = LIVE_FREE;
	unlock();
	return rc;
}

int
sg_use_filling(void)
{
	/* Unlocked: a stale count only moves the drain by a tick. */
	return page != NULL && __atomic_load_n(&page->tail, __ATOMIC_RELAXED) -
	    __atomic_load_n(&page->head, __ATOMIC_RELAXED) >= RING / 4;
}

int
sg_use_drain(const struct sg_cfg *cfg, struct sg_store *store, int *n)
{
	static struct sg_store_use batch[BATCH];
	uint64_t head;
	size_t k, i;
	int s;

	*n = 0;
	if (page == NULL)
		return 0;
	lock();
	for (s = 0; s < nslots; s++)
		finish_orphan(&page->slots[s]);
	unlock();
	for (;;) {
		/* Only the reaper moves the head: the rows copied stay
		 * where they are until the store has them. */
		lock();
		head = page->head;
		k = page->tail - head < BATCH ? (size_t)(page->tail - head) :
		    BATCH;
		for (i = 0; i < k; i++)
			batch[i] = page->ring[(head + i) % RING];
		unlock();
		/* A dead responder's row was never priced. */
		for (i = 0; i < k; i++)
			sg_use_price(cfg, &batch[i]);
		if (k == 0)
			return 0;
		if (sg_store_use_add(store, batch, k) != 0)
			return -1;
		lock();
		page->head = head + k;
		unlock();
		*n += (int)k;
	}
}

void
sg_use_pending(const char *tenant, int64_t since_ms, int64_t *cost,
    int64_t *sandbox_ms)
{
	const struct sg_store_use *u;
	uint64_t i, end;

	*cost = *sandbox_ms = 0;
	if (page == NULL)
		return;
	lock();
	end = page->tail;
	for (i = page->head; i != end && end - i <= RING; i++) {
		u = &page->ring[i % RING];
		if (u->started_ms >= since_ms && strcmp(u->tenant, tenant) == 0) {
			*cost += u->cost_input + u->cost_output + u->cost_sandbox;
			*sandbox_ms += u->sandbox_ms;
		}
	}
	unlock();
}

void
sg_use_key_id(const char *tenant, char out[32])
{
	/* The last one made: a responder's requests are mostly one key's,
	 * and a hash costs ~6 k instructions. */
	static char last_tenant[72], last_id[32];
	char label[96], hash[65];

	if (strcmp(tenant, "anonymous") == 0) {
		snprintf(out, 32, "key_anonymous");
		return;
	}
	if (last_id[0] != '\0' && strcmp(tenant, last_tenant) == 0) {
		memcpy(out, last_id, 32);
		return;
	}
	/* Hashed again, with a label: the id is public, the key's hash
	 * (the tenant) is what the store finds the key by. */
	snprintf(label, sizeof(label), "sandgate key id %.64s", tenant);
	sg_sha256_hex(label, strlen(label), hash);
	snprintf(out, 32, "key_%.24s", hash);
	if (strlen(tenant) < sizeof(last_tenant)) {
		memcpy(last_tenant, tenant, strlen(tenant) + 1);
		memcpy(last_id, out, 32);
	}
}

int64_t
sg_use_period_start(int period, int64_t now_ms)
{
	time_t t = (time_t)(now_ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	if (period == SG_PERIOD_WEEK)
		tm.tm_mday -= (tm.tm_wday + 6) % 7;	/* back to Monday */
	else if (period == SG_PERIOD_MONTH)
		tm.tm_mday = 1;
	return (int64_t)timegm(&tm) * 1000;
}

int64_t
sg_use_period_end(int period, int64_t now_ms)
{
	time_t t = (time_t)(sg_use_period_start(period, now_ms) / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	if (period == SG_PERIOD_DAY)
		tm.tm_mday += 1;
	else if (period == SG_PERIOD_WEEK)
		tm.tm_mday += 7;
	else
		tm.tm_mon += 1;
	return (int64_t)timegm(&tm) * 1000;
}
