/*
 * /metrics' counters in one shared page. Every field is only ever added
 * to with relaxed atomics (a scrape may see one counter a request ahead of
 * another, never a torn value). A tool gets its row the first time one of
 * its events is counted: the row's key is claimed with a compare-and-swap,
 * so two processes counting a new tool at once agree on one row; its name
 * is published after it, and a scrape skips a row whose name is not yet
 * there (and, as counted rows are only ever added, misses nothing else).
 */
#include <sys/mman.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "../config/config.h"
#include "../../lib/util.h"

#define MX_TOOLS	64	/* rows for tools; tools past them go uncounted */
#define MX_NAME		64
#define MX_BOUNDS	(SG_MX_BUCKETS - 1)

/* Histogram bounds, in ms: from a warm local run to a long generation. */
static const int64_t bounds_ms[MX_BOUNDS] = { 5, 10, 25, 50, 100, 250, 500,
	1000, 2500, 5000, 10000, 30000, 60000, 120000 };

/* Statuses counted by code; anything else is "other". */
static const int codes[] = { 200, 201, 204, 400, 401, 403, 404, 405, 408,
	409, 413, 415, 422, 429, 499, 500, 502, 503, 504 };
#define MX_CODES	(sizeof(codes) / sizeof(codes[0]) + 1)

struct mx_hist {
	uint64_t	 n[MX_BOUNDS + 1];	/* per bucket, not cumulative */
	uint64_t	 sum_ms;
};

struct mx_tool {
	uint64_t	 key;		/* sg_fnv1a of the name; 0: free */
	int		 named;		/* name below is complete */
	char		 name[MX_NAME];
	uint64_t	 events[SG_MX_NSBX];
	struct mx_hist	 create, run;
};

struct mx_page {
	uint64_t	 requests[SG_ROUTE_NROUTES][MX_CODES];
	/* The tenants' requests (what keys asked of the gateway, not the
	 * probes, the admin API or the console): their time and their 5xx,
	 * which the console's overview charts. */
	struct mx_hist	 tenant;
	uint64_t	 tenant_errors;
	uint64_t	 rounds;
	uint64_t	 upstream_failed;
	struct mx_hist	 first_byte, upstream;
	struct mx_tool	 tools[MX_TOOLS];
};

static struct mx_page *page;

int
sg_mx_map(void)
{
	void *p = mmap(NULL, sizeof(*page), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	page = p;
	return 0;
}

static void
add(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static uint64_t
get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static void
observe(struct mx_hist *h, int64_t ms)
{
	int i;

	if (ms < 0)
		ms = 0;
	for (i = 0; i < MX_BOUNDS && ms > bounds_ms[i]; i++)
		;
	add(&h->n[i], 1);
	add(&h->sum_ms, (uint64_t)ms);
}

void
sg_mx_request(enum sg_route route, int status, int64_t ms)
{
	size_t i;

	if (page == NULL || (int)route < 0 || route >= SG_ROUTE_NROUTES)
		return;
	for (i = 0; i < MX_CODES - 1 && codes[i] != status; i++)
		;
	add(&page->requests[route][i], 1);
	if (route == SG_ROUTE_NONE || sg_route_authed(route) != SG_AUTH_TENANT)
		return;
	observe(&page->tenant, ms);
	if (status >= 500)
		add(&page->tenant_errors, 1);
}

void
sg_mx_totals(struct sg_mx_totals *t)
{
	int i;

	memset(t, 0, sizeof(*t));
	if (page == NULL)
		return;
	t->errors = get(&page->tenant_errors);
	t->sum_ms = get(&page->tenant.sum_ms);
	for (i = 0; i <= MX_BOUNDS; i++) {
		t->n[i] = get(&page->tenant.n[i]);
		t->requests += t->n[i];
	}
}

int64_t
sg_mx_bound_ms(int i)
{
	return i >= 0 && i < MX_BOUNDS ? bounds_ms[i] : -1;
}

void
sg_mx_upstream(int64_t first_ms, int64_t total_ms, int failed)
{
	if (page == NULL)
		return;
	if (failed) {
		add(&page->upstream_failed, 1);
		return;
	}
	observe(&page->first_byte, first_ms);
	observe(&page->upstream, total_ms);
}

void
sg_mx_round(void)
{
	if (page != NULL)
		add(&page->rounds, 1);
}

/* The row of tool name, claimed when claim is set: NULL when it has none
 * (or every row is taken). */
static struct mx_tool *
tool_row(const char *name, int claim)
{
	uint64_t key = sg_fnv1a(name), seen;
	struct mx_tool *t;
	int i;

	if (key == 0)
		key = 1;
	for (i = 0; i < MX_TOOLS; i++) {
		t = &page->tools[i];
		seen = __atomic_load_n(&t->key, __ATOMIC_ACQUIRE);
		if (seen == 0 && claim) {
			if (__atomic_compare_exchange_n(&t->key, &seen, key, 0,
			    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				sg_copy(t->name, sizeof(t->name), name);
				__atomic_store_n(&t->named, 1, __ATOMIC_RELEASE);
				return t;
			}
		}
		if (seen == key)
			return t;
		if (seen == 0)
			return NULL;
	}
	return NULL;
}

void
sg_mx_sbx(const char *tool, enum sg_mx_sbx ev, int64_t ms)
{
	struct mx_tool *t;

	if (page == NULL || tool == NULL || (int)ev < 0 || ev >= SG_MX_NSBX ||
	    (t = tool_row(tool, 1)) == NULL)
		return;
	add(&t->events[ev], 1);
	if (ev == SG_MX_CREATED)
		observe(&t->create, ms);
	else if (ev == SG_MX_RAN)
		observe(&t->run, ms);
}

/* printf onto b; a failed append is remembered in *bad. */
static void
put(struct sg_buf *b, int *bad, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) ||
	    sg_buf_add(b, line, (size_t)n) == -1)
		*bad = 1;
}

static void
head(struct sg_buf *b, int *bad, const char *name, const char *type,
    const char *help)
{
	put(b, bad, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One histogram's samples, in seconds; labels: "" or `tool="x"`. */
static void
hist(struct sg_buf *b, int *bad, const char *name, const char *labels,
    const struct mx_hist *h)
{
	const char *sep = labels[0] != '\0' ? "," : "";
	const char *open = labels[0] != '\0' ? "{" : "";
	const char *close = labels[0] != '\0' ? "}" : "";
	char le[16];
	uint64_t cum = 0;
	int i;

	for (i = 0; i <= MX_BOUNDS; i++) {
		cum += get(&h->n[i]);
		if (i < MX_BOUNDS)
			snprintf(le, sizeof(le), "%g",
			    (double)bounds_ms[i] / 1000);
		else
			snprintf(le, sizeof(le), "+Inf");
		put(b, bad, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, sep,
		    le, (unsigned long long)cum);
	}
	put(b, bad, "%s_sum%s%s%s %.3f\n%s_count%s%s%s %llu\n", name, open,
	    labels, close, (double)get(&h->sum_ms) / 1000, name, open, labels,
	    close, (unsigned long long)cum);
}

static void
render_requests(struct sg_buf *b, int *bad)
{
	const char *method, *path;
	uint64_t v;
	int r;
	size_t c;

	head(b, bad, "sandgate_http_requests_total", "counter", "Requests "
	    "answered, by route (method and path pattern) and HTTP status.");
	for (r = 0; r < SG_ROUTE_NROUTES; r++)
		for (c = 0; c < MX_CODES; c++) {
			if ((v = get(&page->requests[r][c])) == 0)
				continue;
			path = sg_route_path_of((enum sg_route)r, &method);
			if (c < MX_CODES - 1)
				put(b, bad, "sandgate_http_requests_total{method="
				    "\"%s\",route=\"%s\",code=\"%d\"} %llu\n",
				    method, path, codes[c], (unsigned long long)v);
			else
				put(b, bad, "sandgate_http_requests_total{method="
				    "\"%s\",route=\"%s\",code=\"other\"} %llu\n",
				    method, path, (unsigned long long)v);
		}
}

static void
render_upstream(struct sg_buf *b, int *bad)
{
	head(b, bad, "sandgate_request_seconds", "histogram", "Keys' "
	    "requests (not /healthz, /metrics, the admin API or the console): "
	    "time to answer.");
	hist(b, bad, "sandgate_request_seconds", "", &page->tenant);
	head(b, bad, "sandgate_request_server_errors_total", "counter",
	    "Keys' requests answered with a 5xx.");
	put(b, bad, "sandgate_request_server_errors_total %llu\n",
	    (unsigned long long)get(&page->tenant_errors));
	head(b, bad, "sandgate_loop_rounds_total", "counter", "Code rounds "
	    "the interception loop ran (model turn, then the code it asked "
	    "for).");
	put(b, bad, "sandgate_loop_rounds_total %llu\n",
	    (unsigned long long)get(&page->rounds));
	head(b, bad, "sandgate_upstream_failures_total", "counter", "Upstream "
	    "calls that got no HTTP answer (refused, timed out, cut).");
	put(b, bad, "sandgate_upstream_failures_total %llu\n",
	    (unsigned long long)get(&page->upstream_failed));
	head(b, bad, "sandgate_upstream_first_byte_seconds", "histogram",
	    "Upstream calls: time to the first byte of the answer.");
	hist(b, bad, "sandgate_upstream_first_byte_seconds", "",
	    &page->first_byte);
	head(b, bad, "sandgate_upstream_seconds", "histogram", "Upstream "
	    "calls: time to the end of the answer (a stream's last event).");
	hist(b, bad, "sandgate_upstream_seconds", "", &page->upstream);
}

/* The counted row of a configured tool, or one of zeros. */
static const struct mx_tool *
row_of(const char *name)
{
	static const struct mx_tool none;
	const struct mx_tool *t = tool_row(name, 0);

	return t != NULL && __atomic_load_n(&t->named, __ATOMIC_ACQUIRE) ?
	    t : &none;
}

/* Counters of every configured tool; zeros for one not yet counted. */
static void
render_tools(const struct sg_cfg *cfg, struct sg_buf *b, int *bad)
{
	static const struct {
		const char	*name, *help;
		int		 ev;
		const char	*by;	/* a label's value (its key: key) */
		const char	*key;
	} ctr[] = {
		{ "sandgate_sandbox_creates_total", "Sandboxes created.",
		    SG_MX_CREATED, NULL, NULL },
		{ "sandgate_sandbox_create_failures_total", "Sandbox creates "
		    "that failed.", SG_MX_CREATE_FAILED, NULL, NULL },
		{ "sandgate_sandbox_deletes_total", "Sandboxes deleted: by a "
		    "request, by the reaper's sweep, or found gone.",
		    SG_MX_DELETED, "request", "by" },
		{ NULL, NULL, SG_MX_SWEPT, "sweep", "by" },
		{ NULL, NULL, SG_MX_GONE, "gone", "by" },
		{ "sandgate_sandbox_delete_failures_total", "Sandbox deletes "
		    "the provider failed (the sandbox stays tracked).",
		    SG_MX_DELETE_FAILED, NULL, NULL },
		{ "sandgate_sandbox_run_failures_total", "Code runs the "
		    "sandbox failed (not errors raised by the code).",
		    SG_MX_RUN_FAILED, NULL, NULL },
		{ "sandgate_pool_claims_total", "Creates of a tool with warm "
		    "sandboxes: one taken from the pool, or none there (a cold "
		    "create).", SG_MX_POOL_HIT, "hit", "result" },
		{ NULL, NULL, SG_MX_POOL_MISS, "miss", "result" },
	};
	const struct mx_tool *t;
	const char *metric = NULL;
	char labels[MX_NAME + 16];
	size_t i, k;

	for (k = 0; k < sizeof(ctr) / sizeof(ctr[0]); k++) {
		if (ctr[k].name != NULL)
			head(b, bad, metric = ctr[k].name, "counter",
			    ctr[k].help);
		for (i = 0; i < cfg->ntools; i++) {
			t = row_of(cfg->tools[i].name);
			put(b, bad, "%s{tool=\"%s\"%s%s%s%s%s} %llu\n", metric,
			    cfg->tools[i].name, ctr[k].by != NULL ? "," : "",
			    ctr[k].by != NULL ? ctr[k].key : "",
			    ctr[k].by != NULL ? "=\"" : "",
			    ctr[k].by != NULL ? ctr[k].by : "",
			    ctr[k].by != NULL ? "\"" : "",
			    (unsigned long long)get(&t->events[ctr[k].ev]));
		}
	}
	head(b, bad, "sandgate_sandbox_create_seconds", "histogram",
	    "Sandbox creates: time the provider took.");
	for (i = 0; i < cfg->ntools; i++) {
		t = row_of(cfg->tools[i].name);
		snprintf(labels, sizeof(labels), "tool=\"%s\"",
		    cfg->tools[i].name);
		hist(b, bad, "sandgate_sandbox_create_seconds", labels,
		    &t->create);
	}
	head(b, bad, "sandgate_sandbox_run_seconds", "histogram", "Code "
	    "runs: time from sending the code to its whole result.");
	for (i = 0; i < cfg->ntools; i++) {
		t = row_of(cfg->tools[i].name);
		snprintf(labels, sizeof(labels), "tool=\"%s\"",
		    cfg->tools[i].name);
		hist(b, bad, "sandgate_sandbox_run_seconds", labels, &t->run);
	}
}

int
sg_mx_render(const struct sg_cfg *cfg, struct sg_buf *b)
{
	int bad = 0;

	if (page == NULL)
		return 0;
	render_requests(b, &bad);
	render_upstream(b, &bad);
	render_tools(cfg, b, &bad);
	return bad ? -1 : 0;
}
