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
#include "../../lib/jdump.h"

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

/* New copy of s, at most max bytes and not cut inside a character. */
static char *
bounded(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max)
		for (n = max; n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80; n--)
			;
	return strndup(s, n);
}

/* Append s[0..n) as a JSON string, made UTF-8 where it is not (as
 * sg_json_string_lossy makes it): 0, or -1. */
static int
put_text(struct sg_buf *b, const char *s, size_t n)
{
	size_t flen;
	char *fixed;
	int rc;

	if (sg_jdump_str(b, s, n) == 0)
		return 0;
	if ((fixed = sg_utf8_fix(s, n, &flen)) == NULL)
		return -1;
	rc = sg_jdump_str(b, fixed, flen);
	free(fixed);
	return rc;
}

/* Append a string, or null for NULL and "": 0, or -1. */
static int
put_or_null(struct sg_buf *b, const char *s)
{
	return s != NULL && s[0] != '\0' ? put_text(b, s, strlen(s)) :
	    sg_buf_add(b, "null", 4);
}

/* Append a literal: 0, or -1. */
static int
put_lit(struct sg_buf *b, const char *lit)
{
	return sg_buf_add(b, lit, strlen(lit));
}

static int
put_bool(struct sg_buf *b, int yes)
{
	return yes ? sg_buf_add(b, "true", 4) : sg_buf_add(b, "false", 5);
}

/*
 * Append `"key":"…","key_truncated":cut` (sep first): the first max bytes
 * of p[0..len) (its last max when last), not cut inside a character.
 * 0, or -1.
 */
static int
put_part(struct sg_buf *b, const char *sep, const char *key, const char *p,
    size_t len, size_t max, int last)
{
	size_t from = 0, n = len;

	if (len > max && last) {
		for (from = len - max; from < len &&
		    ((unsigned char)p[from] & 0xC0) == 0x80; from++)
			;
		n = len - from;
	} else if (len > max)
		for (n = max; n > 0 && ((unsigned char)p[n] & 0xC0) == 0x80; n--)
			;
	return put_lit(b, sep) == -1 || sg_buf_printf(b, "\"%s\":", key) ==
	    -1 || put_text(b, p + from, n) == -1 || sg_buf_printf(b,
	    ",\"%s_truncated\":", key) == -1 || put_bool(b, len > max) == -1 ?
	    -1 : 0;
}

/* put_part of o's member key: a string, else "". */
static int
put_member(struct sg_buf *b, const char *sep, const json_t *o, const char *key,
    size_t max, int last)
{
	const json_t *s = json_object_get(o, key);

	return put_part(b, sep, key, json_is_string(s) ? json_string_value(s) :
	    "", json_string_length(s), max, last);
}

/* New text: a run's code and outputs, bounded, as an object's members
 * (no braces); NULL when out of memory. */
static char *
detail_of(const char *code, const json_t *result)
{
	const json_t *e = json_object_get(result, "error");
	struct sg_buf b = { 0 };
	int rc;

	rc = put_part(&b, "", "code", code, strlen(code), SG_TRACE_CODE_MAX, 0);
	if (rc == 0 && result != NULL)
		rc = put_member(&b, ",", result, "stdout", SG_TRACE_OUT_MAX,
		    0) == -1 || put_member(&b, ",", result, "stderr",
		    SG_TRACE_OUT_MAX, 0) == -1 ? -1 : 0;
	/* A traceback's end says what raised. */
	if (rc == 0 && result != NULL)
		rc = !json_is_object(e) ? put_lit(&b, ",\"error\":null") :
		    put_member(&b, ",\"error\":{", e, "name", ENAME_MAX, 0) ==
		    -1 || put_member(&b, ",", e, "value", EVALUE_MAX, 0) == -1 ||
		    put_member(&b, ",", e, "traceback", SG_TRACE_OUT_MAX, 1) ==
		    -1 || put_lit(&b, "}") == -1 ? -1 : 0;
	if (rc == -1) {
		free(b.p);
		return NULL;
	}
	return b.p;
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

	snprintf(tr.call_id, sizeof(tr.call_id), "%s", call_id != NULL ?
	    call_id : "");
	if (refused == NULL)
		return;
	if ((p = new_run()) == NULL) {
		tr.untraced++;
		return;
	}
	snprintf(p->call_id, sizeof(p->call_id), "%s", tr.call_id);
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
	snprintf(p->call_id, sizeof(p->call_id), "%s", tr.call_id);
	snprintf(p->tool, sizeof(p->tool), "%s", tool != NULL ? tool : "");
	snprintf(p->sandbox, sizeof(p->sandbox), "%s", id != NULL ? id : "");
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

/* Append run p's summary, and its detail when shown: 0, or -1. */
static int
run_text(struct sg_buf *b, const struct run *p, int64_t start)
{
	return put_lit(b, "{\"call_id\":") == -1 ||
	    put_or_null(b, p->call_id) == -1 ||
	    put_lit(b, ",\"tool\":") == -1 || put_or_null(b, p->tool) == -1 ||
	    put_lit(b, ",\"sandbox_id\":") == -1 ||
	    put_or_null(b, p->sandbox) == -1 ||
	    put_lit(b, ",\"started_ms\":") == -1 ||
	    sg_jdump_int(b, p->t0 - start) == -1 ||
	    put_lit(b, ",\"duration_ms\":") == -1 ||
	    sg_jdump_int(b, p->ms) == -1 ||
	    put_lit(b, ",\"images\":") == -1 || sg_jdump_int(b, p->images) == -1 ||
	    put_lit(b, ",\"images_omitted\":") == -1 ||
	    sg_jdump_int(b, p->images_omitted) == -1 ||
	    put_lit(b, ",\"failed\":") == -1 || put_or_null(b, p->failed) == -1 ||
	    put_lit(b, ",\"omitted\":") == -1 ||
	    put_bool(b, !p->shown && (p->detail != NULL || p->dropped)) == -1 ||
	    (p->shown && (put_lit(b, ",") == -1 ||
	    put_lit(b, p->detail) == -1)) ||
	    put_lit(b, "}") == -1 ? -1 : 0;
}

/* Append round i's model turn: 0, or -1. */
static int
model_text(struct sg_buf *b, const struct round *r, int64_t start)
{
	if (!r->model)
		return put_lit(b, "null");
	return put_lit(b, "{\"started_ms\":") == -1 ||
	    sg_jdump_int(b, r->t0 - start) == -1 ||
	    put_lit(b, ",\"duration_ms\":") == -1 ||
	    sg_jdump_int(b, r->ms) == -1 ||
	    put_lit(b, ",\"status\":") == -1 || (r->status > 0 ?
	    sg_jdump_int(b, r->status) : put_lit(b, "null")) == -1 ||
	    put_lit(b, ",\"error\":") == -1 || put_or_null(b, r->error) == -1 ||
	    put_lit(b, ",\"usage\":{\"input_tokens\":") == -1 ||
	    sg_jdump_int(b, r->in) == -1 ||
	    put_lit(b, ",\"input_cached_tokens\":") == -1 ||
	    sg_jdump_int(b, r->cached) == -1 ||
	    put_lit(b, ",\"output_tokens\":") == -1 ||
	    sg_jdump_int(b, r->out) == -1 ||
	    put_lit(b, ",\"reasoning_tokens\":") == -1 ||
	    sg_jdump_int(b, r->reasoning) == -1 || put_lit(b, "}}") == -1 ?
	    -1 : 0;
}

/* Append round i (its runs from *k on, *k moved past them): 0, or -1.
 * Past the rounds, the element counting the runs left out. */
static int
round_text(struct sg_buf *b, size_t i, int64_t start, size_t *k)
{
	size_t first = *k;

	if (i == tr.nrounds)
		return put_lit(b, "{\"omitted_runs\":") == -1 ||
		    sg_jdump_int(b, (json_int_t)tr.untraced) == -1 ||
		    put_lit(b, "}") == -1 ? -1 : 0;
	if (put_lit(b, "{\"round\":") == -1 ||
	    sg_jdump_int(b, (json_int_t)(i + 1)) == -1 ||
	    put_lit(b, ",\"model\":") == -1 ||
	    model_text(b, &tr.rounds[i], start) == -1 ||
	    put_lit(b, ",\"code_runs\":[") == -1)
		return -1;
	for (; *k < tr.nruns && tr.runs[*k].round == i; (*k)++)
		if ((*k > first && put_lit(b, ",") == -1) ||
		    run_text(b, &tr.runs[*k], start) == -1)
			return -1;
	return put_lit(b, "]}");
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
 * fit, then the first runs' again.
 */
static void
details(size_t left)
{
	size_t i = 0, j = tr.nruns, half = left / 2, used;

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

/* Append the elements, but [from, to) (one element counting them in
 * their place, when cut): 0, or -1. */
static int
all_text(struct sg_buf *b, size_t n, int64_t start, int cut, size_t from,
    size_t to)
{
	size_t i, k = 0, sep = 0;

	if (put_lit(b, "[") == -1)
		return -1;
	for (i = 0; i < n; i++) {
		if (cut && i == from && ((sep++ > 0 && put_lit(b, ",") == -1) ||
		    put_lit(b, "{\"omitted_rounds\":") == -1 ||
		    sg_jdump_int(b, (json_int_t)(to - from)) == -1 ||
		    put_lit(b, "}") == -1))
			return -1;
		if (cut && i >= from && i < to) {
			while (k < tr.nruns && tr.runs[k].round == i)
				k++;
			continue;
		}
		if ((sep++ > 0 && put_lit(b, ",") == -1) ||
		    round_text(b, i, start, &k) == -1)
			return -1;
	}
	return put_lit(b, "]");
}

char *
sg_trace_json(int64_t start, char **images)
{
	struct sg_buf b = { 0 }, one = { 0 };
	size_t i, k = 0, total = SLACK, *sizes = NULL, n, from = 0, to = 0;
	int cut = 0, rc = -1;

	if (images != NULL)
		*images = NULL;
	if (tr.nrounds == 0 && tr.untraced == 0)
		return NULL;
	/* The rounds, and the element counting the runs past the cap. */
	n = tr.nrounds + (tr.untraced > 0);
	for (i = 0; i < tr.nruns; i++)
		tr.runs[i].shown = 0;
	if ((sizes = calloc(n + 1, sizeof(*sizes))) == NULL)
		goto done;
	for (i = 0; i < tr.nrounds; i++) {
		one.len = 0;
		if (round_text(&one, i, start, &k) == -1)
			goto done;
		sizes[i] = one.len;
		total += sizes[i] + 1;
	}
	if (total <= SG_TRACE_MAX)
		details(SG_TRACE_MAX - total);
	else {
		cut = 1;
		ends_only(sizes, n, &from, &to);
	}
	rc = all_text(&b, n, start, cut, from, to);
	if (rc == 0 && images != NULL)
		*images = sg_timg_json(from, to);
done:
	free(one.p);
	free(sizes);
	if (rc == -1) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

void
sg_trace_end(const struct sg_cfg *cfg, struct sg_store *store,
    const struct sg_req *req, int status)
{
	struct sg_store_trace t;
	char key_id[32], *rounds, *images;

	if (cfg->usage.traces <= 0 || (tr.nrounds == 0 && tr.untraced == 0) ||
	    (rounds = sg_trace_json(req->start_ms, &images)) == NULL) {
		sg_trace_reset();
		return;
	}
	sg_use_key_id(req->tenant, key_id);
	memset(&t, 0, sizeof(t));
	t.id = req->id;
	t.tenant = req->tenant;
	t.key_id = key_id;
	t.model = req->model;
	t.status = status;
	t.started_ms = req->wall_ms;
	t.duration_ms = sg_now_ms() - req->start_ms;
	t.rounds = rounds;
	t.images = images;
	if (sg_store_trace_add(store, &t) != SG_STORE_OK)
		fprintf(stderr, "event=trace_lost request=%s reason=store\n",
		    req->id);
	free(rounds);
	free(images);
	sg_trace_reset();
}
