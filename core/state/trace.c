/*
 * A request's trace (trace.h): recorded as plain rows while the request
 * runs, made JSON once at its end, written as text: a run's detail is
 * its JSON text from the start, so its size is its length, and the
 * rounds are written out straight from the rows (no tree of values is
 * built, counted and dumped).
 *
 * Bounds: each run's code and outputs are cut as they are recorded; the
 * details (code, outputs) kept in memory are those of the first runs up
 * to SG_TRACE_MAX bytes and of the latest up to as many, the ones between
 * freed as they go, so a long loop holds at most twice the bound. At the
 * end the rounds' summaries come first, then as much detail as fits in
 * SG_TRACE_MAX, from both ends towards the middle; a run whose detail
 * did not fit says "omitted": true. Summaries that alone pass the bound
 * (a very long loop) keep the first and last rounds and one element
 * {"omitted_rounds": n} between them.
 *
 * Images are kept by trace_img.c under bounds of their own, and written
 * beside the rounds, but those of rounds left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "trace_img.h"
#include "ledger.h"
#include "../config/config.h"
#include "../http/http.h"
#include "../../store/store.h"
#include "../../store/usage.h"
#include "../../lib/util.h"
#include "../../lib/jtw.h"

#define MESSAGE_MAX	512	/* a failure's or an error's message */
#define ENAME_MAX	256	/* an exception's name */
#define EVALUE_MAX	1024	/* and its value */
/* The summaries' share is counted exactly; this is room for the
 * brackets, the commas and the omitted-rounds element. */
#define SLACK		256

struct round {
	int	 model;		/* began with an upstream turn */
	int64_t	 t0, ms;
	long	 status;
	char	*error;		/* owned; NULL: none */
	int64_t	 in, cached, out, reasoning;
};

struct run {
	size_t	 round;		/* its round, in tr.rounds */
	size_t	 nth;		/* its index among the round's runs */
	char	 call_id[64], tool[64], sandbox[48];
	int64_t	 t0, ms;
	int	 images;
	int	 images_omitted;	/* PNGs past the images' bounds */
	char	*failed;	/* owned; NULL: nothing failed */
	char	*detail;	/* owned: code and outputs as an object's
				 * members' text; NULL: none, or dropped */
	int	 dropped;	/* it had detail, freed for the bound */
	int	 shown;		/* its detail is in the text being written */
	size_t	 size;		/* detail's bytes as a JSON object */
};

static struct {
	struct round	*rounds;
	size_t		 nrounds, rcap;
	struct run	*runs;
	size_t		 nruns, cap;
	size_t		 untraced;	/* rounds and runs past the cap */
	char		 call_id[64];
	size_t		 head;		/* detail bytes of the first runs */
	size_t		 tail;		/* of the latest, past the head */
	size_t		 oldest;	/* where the tail's details begin */
	int		 tailing;	/* the head is full */
} tr;

/* A new round at the end: NULL past the cap or out of memory. */
static struct round *
new_round(void)
{
	struct round *p;
	size_t cap;

	if (tr.nrounds >= SG_TRACE_RUNS_MAX)
		return NULL;
	if (tr.nrounds == tr.rcap) {
		cap = tr.rcap != 0 ? tr.rcap * 2 : 8;
		if ((p = realloc(tr.rounds, cap * sizeof(*p))) == NULL)
			return NULL;
		tr.rounds = p;
		tr.rcap = cap;
	}
	p = &tr.rounds[tr.nrounds++];
	memset(p, 0, sizeof(*p));
	return p;
}

/* A new run in the last round (one without a model turn opened when
 * there is none): NULL past the cap or out of memory. */
static struct run *
new_run(void)
{
	struct run *p;
	size_t cap;

	if (tr.nruns >= SG_TRACE_RUNS_MAX || (tr.nrounds == 0 &&
	    new_round() == NULL))
		return NULL;
	if (tr.nruns == tr.cap) {
		cap = tr.cap != 0 ? tr.cap * 2 : 8;
		if ((p = realloc(tr.runs, cap * sizeof(*p))) == NULL)
			return NULL;
		tr.runs = p;
		tr.cap = cap;
	}
	p = &tr.runs[tr.nruns++];
	memset(p, 0, sizeof(*p));
	p->round = tr.nrounds - 1;
	if (tr.nruns > 1 && p[-1].round == p->round)
		p->nth = p[-1].nth + 1;
	return p;
}

/* How many of s's len bytes to keep for at most max, not cutting inside
 * a character. */
static size_t
head(const char *s, size_t len, size_t max)
{
	size_t n = len;

	if (n > max)
		for (n = max; n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80; n--)
			;
	return n;
}

/* New copy of s, at most max bytes and not cut inside a character. */
static char *
bounded(const char *s, size_t max)
{
	return strndup(s, head(s, strlen(s), max));
}

/*
 * sep"key":"…","key_truncated":cut: the first max bytes of p[0..len)
 * (its last max when last), not cut inside a character.
 */
static void
tw_part(struct sg_jtw *w, const char *sep, const char *key, const char *p,
    size_t len, size_t max, int last)
{
	size_t from = 0, n = head(p, len, max);

	if (len > max && last) {
		for (from = len - max; from < len &&
		    ((unsigned char)p[from] & 0xC0) == 0x80; from++)
			;
		n = len - from;
	}
	sg_jtw_key(w, sep, key);
	sg_jtw_text(w, p + from, n);
	sg_jtw_lit(w, ",\"");
	sg_jtw_lit(w, key);
	sg_jtw_lit(w, "_truncated\":");
	sg_jtw_bool(w, len > max);
}

/* tw_part of o's member key: a string, else "". */
static void
tw_member(struct sg_jtw *w, const char *sep, const json_t *o, const char *key,
    size_t max, int last)
{
	const json_t *s = json_object_get(o, key);

	tw_part(w, sep, key, json_is_string(s) ? json_string_value(s) : "",
	    json_string_length(s), max, last);
}

/* New text: a run's code and outputs, bounded, as an object's members
 * (no braces); NULL when out of memory. */
static char *
detail_of(const char *code, const json_t *result)
{
	const json_t *e = json_object_get(result, "error");
	struct sg_jtw w = { { 0 }, 0 };

	tw_part(&w, "", "code", code, strlen(code), SG_TRACE_CODE_MAX, 0);
	if (result == NULL)
		return sg_jtw_end(&w);
	tw_member(&w, ",", result, "stdout", SG_TRACE_OUT_MAX, 0);
	tw_member(&w, ",", result, "stderr", SG_TRACE_OUT_MAX, 0);
	if (!json_is_object(e)) {
		sg_jtw_lit(&w, ",\"error\":null");
		return sg_jtw_end(&w);
	}
	/* A traceback's end says what raised. */
	tw_member(&w, ",\"error\":{", e, "name", ENAME_MAX, 0);
	tw_member(&w, ",", e, "value", EVALUE_MAX, 0);
	tw_member(&w, ",", e, "traceback", SG_TRACE_OUT_MAX, 1);
	sg_jtw_lit(&w, "}");
	return sg_jtw_end(&w);
}

/* Images in a result, of any kind (trace_img.c keeps the PNGs). */
static int
images_in(const json_t *result)
{
	const json_t *r;
	size_t i;
	int n = 0;

	json_array_foreach(json_object_get(result, "results"), i, r)
		n += json_object_get(r, "png") != NULL || json_object_get(r,
		    "jpeg") != NULL || json_object_get(r, "svg") != NULL;
	return n;
}

/* Keep run p's detail within the memory bound: the first runs' up to
 * SG_TRACE_MAX, then the latest up to as many, older ones of those
 * freed. */
static void
keep_detail(struct run *p, char *detail)
{
	p->detail = detail;
	p->size = strlen(detail) + 2;
	if (!tr.tailing && tr.head + p->size <= SG_TRACE_MAX) {
		tr.head += p->size;
		return;
	}
	if (!tr.tailing) {
		tr.tailing = 1;
		tr.oldest = (size_t)(p - tr.runs);
	}
	tr.tail += p->size;
	for (; tr.tail > SG_TRACE_MAX && tr.oldest < tr.nruns; tr.oldest++) {
		struct run *o = &tr.runs[tr.oldest];

		if (o->detail == NULL)
			continue;
		tr.tail -= o->size;
		free(o->detail);
		o->detail = NULL;
		o->dropped = 1;
	}
}

void
sg_trace_turn(int64_t t0, int64_t ms, long status, const char *error,
    const json_t *usage)
{
	struct sg_usage_counts c;
	struct round *r;

	tr.call_id[0] = '\0';
	if ((r = new_round()) == NULL) {
		tr.untraced++;
		return;
	}
	r->model = 1;
	r->t0 = t0;
	r->ms = ms;
	r->status = status;
	r->error = error != NULL ? bounded(error, MESSAGE_MAX) : NULL;
	/* As the ledger counts them: the round's tokens add up to its row. */
	sg_use_counts(usage, &c);
	r->in = c.input;
	r->out = c.output;
	r->cached = c.cached;
	r->reasoning = c.reasoning;
}

void
sg_trace_call(const char *call_id, const char *refused)
{
	struct run *p;

	sg_copy(tr.call_id, sizeof(tr.call_id), call_id);
	if (refused == NULL)
		return;
	if ((p = new_run()) == NULL) {
		tr.untraced++;
		return;
	}
	sg_copy(p->call_id, sizeof(p->call_id), tr.call_id);
	p->t0 = sg_now_ms();
	p->failed = bounded(refused, MESSAGE_MAX);
}

void
sg_trace_run(const char *tool, const char *id, const char *code, int64_t t0,
    int64_t ms, const json_t *result, const char *failed)
{
	struct run *p;
	char *d;

	if ((p = new_run()) == NULL) {
		tr.untraced++;
		return;
	}
	sg_copy(p->call_id, sizeof(p->call_id), tr.call_id);
	sg_copy(p->tool, sizeof(p->tool), tool);
	sg_copy(p->sandbox, sizeof(p->sandbox), id);
	p->t0 = t0;
	p->ms = ms;
	p->images = images_in(result);
	p->images_omitted = sg_timg_add(p->round, p->nth, result);
	p->failed = failed != NULL ? bounded(failed, MESSAGE_MAX) : NULL;
	if ((d = detail_of(code != NULL ? code : "", result)) != NULL)
		keep_detail(p, d);
}

void
sg_trace_reset(void)
{
	size_t i;

	for (i = 0; i < tr.nrounds; i++)
		free(tr.rounds[i].error);
	for (i = 0; i < tr.nruns; i++) {
		free(tr.runs[i].failed);
		free(tr.runs[i].detail);
	}
	free(tr.rounds);
	free(tr.runs);
	memset(&tr, 0, sizeof(tr));
	sg_timg_reset();
}

/* Run p's summary, and its detail when shown. */
static void
run_text(struct sg_jtw *w, const struct run *p, int64_t start)
{
	sg_jtw_mstr(w, "{", "call_id", p->call_id);
	sg_jtw_mstr(w, ",", "tool", p->tool);
	sg_jtw_mstr(w, ",", "sandbox_id", p->sandbox);
	sg_jtw_mint(w, ",", "started_ms", p->t0 - start);
	sg_jtw_mint(w, ",", "duration_ms", p->ms);
	sg_jtw_mint(w, ",", "images", p->images);
	sg_jtw_mint(w, ",", "images_omitted", p->images_omitted);
	sg_jtw_mstr(w, ",", "failed", p->failed);
	sg_jtw_key(w, ",", "omitted");
	sg_jtw_bool(w, !p->shown && (p->detail != NULL || p->dropped));
	if (p->shown) {
		sg_jtw_lit(w, ",");
		sg_jtw_lit(w, p->detail);
	}
	sg_jtw_lit(w, "}");
}

/* Round r's model turn. */
static void
model_text(struct sg_jtw *w, const struct round *r, int64_t start)
{
	if (!r->model) {
		sg_jtw_lit(w, "null");
		return;
	}
	sg_jtw_mint(w, "{", "started_ms", r->t0 - start);
	sg_jtw_mint(w, ",", "duration_ms", r->ms);
	sg_jtw_key(w, ",", "status");
	if (r->status > 0)
		sg_jtw_int(w, r->status);
	else
		sg_jtw_lit(w, "null");
	sg_jtw_mstr(w, ",", "error", r->error);
	sg_jtw_key(w, ",", "usage");
	sg_jtw_mint(w, "{", "input_tokens", r->in);
	sg_jtw_mint(w, ",", "input_cached_tokens", r->cached);
	sg_jtw_mint(w, ",", "output_tokens", r->out);
	sg_jtw_mint(w, ",", "reasoning_tokens", r->reasoning);
	sg_jtw_lit(w, "}}");
}

/* Round i, its runs from *k on (*k moved past them); past the rounds,
 * the element counting the runs left out. */
static void
round_text(struct sg_jtw *w, size_t i, int64_t start, size_t *k)
{
	size_t first = *k;

	if (i == tr.nrounds) {
		sg_jtw_mint(w, "{", "omitted_runs", (int64_t)tr.untraced);
		sg_jtw_lit(w, "}");
		return;
	}
	sg_jtw_mint(w, "{", "round", (int64_t)(i + 1));
	sg_jtw_key(w, ",", "model");
	model_text(w, &tr.rounds[i], start);
	sg_jtw_key(w, ",", "code_runs");
	sg_jtw_lit(w, "[");
	for (; *k < tr.nruns && tr.runs[*k].round == i; (*k)++) {
		if (*k > first)
			sg_jtw_lit(w, ",");
		run_text(w, &tr.runs[*k], start);
	}
	sg_jtw_lit(w, "]}");
}

/* Show run k's detail when it fits in *left. */
static int
attach(size_t k, size_t *left)
{
	struct run *p = &tr.runs[k];

	if (p->detail == NULL || p->size > *left)
		return 0;
	*left -= p->size;
	p->shown = 1;
	return 1;
}

/*
 * The details that fit in left, from both ends towards the middle: the
 * first runs' while they fit in half, then the last runs' while they
 * fit, then the first runs' again. The bytes they take.
 */
static size_t
details(size_t left)
{
	size_t i = 0, j = tr.nruns, half = left / 2, used, start = left;

	for (; i < j; i++) {
		if (tr.runs[i].detail == NULL)
			continue;
		if (tr.runs[i].size > half)
			break;
		used = left;
		attach(i, &left);
		half -= used - left;
	}
	for (; j > i; j--)
		if (tr.runs[j - 1].detail != NULL && !attach(j - 1, &left))
			break;
	for (; i < j; i++)
		if (tr.runs[i].detail != NULL && !attach(i, &left))
			break;
	return start - left;
}

/* The elements (n, each sizes[] long) whose summaries pass the bound:
 * the first and the last that fit; those of [*from, *to) left out. */
static void
ends_only(const size_t *sizes, size_t n, size_t *from, size_t *to)
{
	size_t room = SG_TRACE_MAX - SLACK, used = 0, i, j = n;

	for (i = 0; i < n && used + sizes[i] + 1 <= room / 2; i++)
		used += sizes[i] + 1;
	for (; j > i && used + sizes[j - 1] + 1 <= room; j--)
		used += sizes[j - 1] + 1;
	*from = i;
	*to = j;
}

/* The elements, but [from, to) when cut (one element counting them in
 * their place). */
static void
all_text(struct sg_jtw *w, size_t n, int64_t start, int cut, size_t from,
    size_t to)
{
	size_t i, k = 0, out = 0;

	sg_jtw_lit(w, "[");
	for (i = 0; i < n; i++) {
		if (cut && i == from) {
			sg_jtw_mint(w, out++ > 0 ? ",{" : "{", "omitted_rounds",
			    (int64_t)(to - from));
			sg_jtw_lit(w, "}");
		}
		if (cut && i >= from && i < to) {
			while (k < tr.nruns && tr.runs[k].round == i)
				k++;
			continue;
		}
		if (out++ > 0)
			sg_jtw_lit(w, ",");
		round_text(w, i, start, &k);
	}
	sg_jtw_lit(w, "]");
}

/*
 * The text with every detail shown, in one pass: the common case, where
 * the summaries and all the details fit. NULL when they do not (the
 * bounded text is made then), or out of memory. Every detail fits when
 * their sum does (details() would then show them all), so the text is
 * the one the bounded way makes.
 */
static char *
all_shown(size_t n, int64_t start)
{
	struct sg_jtw w = { { 0 }, 0 };
	size_t i, j, k = 0, first, before, summaries = SLACK, shown = 0;

	for (i = 0; i < tr.nruns; i++)
		if ((tr.runs[i].shown = tr.runs[i].detail != NULL))
			shown += tr.runs[i].size;
	sg_jtw_lit(&w, "[");
	/* Past the bound it cannot be the text: a long loop stops early. */
	for (i = 0; i < n && w.b.len <= SG_TRACE_MAX; i++) {
		if (i > 0)
			sg_jtw_lit(&w, ",");
		first = k;
		before = w.b.len;
		round_text(&w, i, start, &k);
		if (i == tr.nrounds)
			continue;	/* the element counting runs: SLACK's */
		/* The round's summary: its text but its runs' details. */
		summaries += w.b.len - before + 1;
		for (j = first; j < k; j++)
			if (tr.runs[j].shown)
				summaries -= tr.runs[j].size;
	}
	sg_jtw_lit(&w, "]");
	if (!w.failed && i == n && summaries <= SG_TRACE_MAX &&
	    shown <= SG_TRACE_MAX - summaries)
		return sg_jtw_end(&w);
	free(w.b.p);
	return NULL;
}

char *
sg_trace_json(int64_t start, char **images)
{
	struct sg_jtw w = { { 0 }, 0 }, one = { { 0 }, 0 };
	size_t i, k = 0, total = SLACK, *sizes, n, from = 0, to = 0;
	int cut = 0;
	char *text;

	if (images != NULL)
		*images = NULL;
	if (tr.nrounds == 0 && tr.untraced == 0)
		return NULL;
	/* The rounds, and the element counting the runs past the cap. */
	n = tr.nrounds + (tr.untraced > 0);
	if ((text = all_shown(n, start)) != NULL) {
		if (images != NULL)
			*images = sg_timg_json(0, 0);
		return text;
	}
	if ((sizes = calloc(n + 1, sizeof(*sizes))) == NULL)
		return NULL;
	for (i = 0; i < tr.nruns; i++)
		tr.runs[i].shown = 0;
	for (i = 0; i < tr.nrounds; i++) {
		one.b.len = 0;
		round_text(&one, i, start, &k);
		sizes[i] = one.b.len;
		total += sizes[i] + 1;
	}
	if (total <= SG_TRACE_MAX)
		total += details(SG_TRACE_MAX - total);
	else {
		cut = 1;
		ends_only(sizes, n, &from, &to);
		total = SG_TRACE_MAX;
	}
	/* The text's length is known: one buffer, not one per doubling. */
	w.failed = one.failed || sg_buf_reserve(&w.b, total) == -1;
	free(one.b.p);
	free(sizes);
	all_text(&w, n, start, cut, from, to);
	if ((text = sg_jtw_end(&w)) != NULL && images != NULL)
		*images = sg_timg_json(from, to);
	return text;
}

int
sg_trace_recorded(void)
{
	return tr.nrounds > 0 || tr.untraced > 0;
}
