/*
 * A request's trace (trace.h): recorded as plain rows while the request
 * runs, made JSON once at its end.
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
	json_t	*detail;	/* code and outputs; NULL: none, or dropped */
	int	 dropped;	/* it had detail, freed for the bound */
	size_t	 size;		/* detail's bytes as JSON */
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

/* New reference: the first max bytes of s[0..len) (its last max when
 * last), not cut inside a character, as a JSON string; *cut set when
 * shortened. */
static json_t *
part(const char *s, size_t len, size_t max, int last, int *cut)
{
	size_t from = 0, n = len;

	*cut = len > max;
	if (*cut && last) {
		for (from = len - max; from < len &&
		    ((unsigned char)s[from] & 0xC0) == 0x80; from++)
			;
		n = len - from;
	} else if (*cut)
		for (n = max; n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80; n--)
			;
	return sg_json_string_lossy(s + from, n);
}

/* Set o's key to s's part, and key_truncated when it was cut. */
static void
set_part(json_t *o, const char *key, const json_t *s, size_t max, int last)
{
	char flag[32];
	int cut;

	json_object_set_new(o, key, part(json_string_value(s) != NULL ?
	    json_string_value(s) : "", json_string_length(s), max, last, &cut));
	snprintf(flag, sizeof(flag), "%s_truncated", key);
	json_object_set_new(o, flag, json_boolean(cut));
}

/* New reference: a run's code and outputs, bounded. */
static json_t *
detail_of(const char *code, const json_t *result)
{
	const json_t *e = json_object_get(result, "error");
	json_t *d = json_object(), *c, *err;

	if (d == NULL)
		return NULL;
	c = json_string(code);
	set_part(d, "code", c, SG_TRACE_CODE_MAX, 0);
	json_decref(c);
	if (result == NULL)
		return d;
	set_part(d, "stdout", json_object_get(result, "stdout"),
	    SG_TRACE_OUT_MAX, 0);
	set_part(d, "stderr", json_object_get(result, "stderr"),
	    SG_TRACE_OUT_MAX, 0);
	if (!json_is_object(e)) {
		json_object_set_new(d, "error", json_null());
		return d;
	}
	/* A traceback's end says what raised. */
	if ((err = json_object()) != NULL) {
		set_part(err, "name", json_object_get(e, "name"), ENAME_MAX, 0);
		set_part(err, "value", json_object_get(e, "value"), EVALUE_MAX,
		    0);
		set_part(err, "traceback", json_object_get(e, "traceback"),
		    SG_TRACE_OUT_MAX, 1);
	}
	json_object_set_new(d, "error", err);
	return d;
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

/* Bytes of s[0..n) in a JSON string as Jansson writes it, quotes too. */
static size_t
string_size(const char *s, size_t n)
{
	size_t k = n + 2, i;
	unsigned char c;

	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' ||
		    c == '\r' || c == '\t')
			k += 1;
		else if (c < 0x20)
			k += 5;
	}
	return k;
}

/*
 * Bytes of v as compact JSON (json_dumps' length), counted without
 * writing it: the bound is checked on every run and round, and a dump
 * costs several times a count. A real (none is recorded) is dumped.
 */
static size_t
size_of(const json_t *v)
{
	char num[32], *text;
	const char *k;
	size_t n, i;
	json_t *m;

	if (v == NULL)	/* a round that could not be made */
		return SG_TRACE_MAX + 1;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		n = json_object_size(v) > 0 ? json_object_size(v) + 1 : 2;
		json_object_foreach((json_t *)v, k, m)
			n += string_size(k, strlen(k)) + 1 + size_of(m);
		return n;
	case JSON_ARRAY:
		n = json_array_size(v) > 0 ? json_array_size(v) + 1 : 2;
		json_array_foreach(v, i, m)
			n += size_of(m);
		return n;
	case JSON_STRING:
		return string_size(json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return (size_t)snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
		    json_integer_value(v));
	case JSON_TRUE:
	case JSON_NULL:
		return 4;
	case JSON_FALSE:
		return 5;
	default:
		text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		n = text != NULL ? strlen(text) : SG_TRACE_MAX + 1;
		free(text);
		return n;
	}
}

/* Keep run p's detail within the memory bound: the first runs' up to
 * SG_TRACE_MAX, then the latest up to as many, older ones of those
 * freed. */
static void
keep_detail(struct run *p, json_t *detail)
{
	p->detail = detail;
	p->size = size_of(detail);
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
		json_decref(o->detail);
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
	json_t *d;

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
		json_decref(tr.runs[i].detail);
	}
	free(tr.rounds);
	free(tr.runs);
	memset(&tr, 0, sizeof(tr));
	sg_timg_reset();
}

/* New reference: a string, or null for NULL and "". */
static json_t *
text_or_null(const char *s)
{
	return s != NULL && s[0] != '\0' ? json_string(s) : json_null();
}

/* New reference: run p's summary, without its detail. */
static json_t *
run_json(const struct run *p, int64_t start)
{
	return json_pack("{s:o,s:o,s:o,s:I,s:I,s:i,s:i,s:o,s:b}", "call_id",
	    text_or_null(p->call_id), "tool", text_or_null(p->tool),
	    "sandbox_id", text_or_null(p->sandbox), "started_ms",
	    (json_int_t)(p->t0 - start), "duration_ms",
	    (json_int_t)p->ms, "images", p->images, "images_omitted",
	    p->images_omitted, "failed",
	    text_or_null(p->failed), "omitted", p->detail != NULL ||
	    p->dropped);
}

/* New reference: round i's summary (its runs' in runs, borrowed). */
static json_t *
round_json(size_t i, int64_t start, json_t *runs)
{
	const struct round *r = &tr.rounds[i];
	json_t *model = json_null();

	if (r->model)
		model = json_pack("{s:I,s:I,s:o,s:o,s:{s:I,s:I,s:I,s:I}}",
		    "started_ms", (json_int_t)(r->t0 - start), "duration_ms",
		    (json_int_t)r->ms, "status", r->status > 0 ?
		    json_integer(r->status) : json_null(), "error",
		    text_or_null(r->error), "usage", "input_tokens",
		    (json_int_t)r->in, "input_cached_tokens",
		    (json_int_t)r->cached, "output_tokens", (json_int_t)r->out,
		    "reasoning_tokens", (json_int_t)r->reasoning);
	return json_pack("{s:I,s:o,s:O}", "round", (json_int_t)(i + 1),
	    "model", model, "code_runs", runs);
}

/* Attach run k's detail to its summary o when it fits in *left. */
static int
attach(size_t k, json_t *o, size_t *left)
{
	struct run *p = &tr.runs[k];

	if (p->detail == NULL || p->size > *left)
		return 0;
	*left -= p->size;
	json_object_update(o, p->detail);
	json_object_set_new(o, "omitted", json_false());
	return 1;
}

/*
 * The details that fit in left, from both ends towards the middle: the
 * first runs' while they fit in half, then the last runs' while they
 * fit, then the first runs' again. sums holds each run's summary.
 */
static void
details(json_t **sums, size_t left)
{
	size_t i = 0, j = tr.nruns, half = left / 2, used;

	for (; i < j; i++) {
		if (tr.runs[i].detail == NULL)
			continue;
		if (tr.runs[i].size > half)
			break;
		used = left;
		attach(i, sums[i], &left);
		half -= used - left;
	}
	for (; j > i; j--)
		if (tr.runs[j - 1].detail != NULL && !attach(j - 1, sums[j - 1],
		    &left))
			break;
	for (; i < j; i++)
		if (tr.runs[i].detail != NULL && !attach(i, sums[i], &left))
			break;
}

/* The rounds whose summaries pass the bound: the first and the last
 * that fit, one element between them saying how many are left out
 * (rounds [*from, *to)). */
static json_t *
ends_only(json_t *all, const size_t *sizes, size_t *from, size_t *to)
{
	size_t n = json_array_size(all), room = SG_TRACE_MAX - SLACK, used = 0,
	    i, j = n, k;
	json_t *kept = json_array();

	for (i = 0; i < n && used + sizes[i] + 1 <= room / 2; i++)
		used += sizes[i] + 1;
	for (; j > i && used + sizes[j - 1] + 1 <= room; j--)
		used += sizes[j - 1] + 1;
	*from = i;
	*to = j;
	for (k = 0; k < n; k++) {
		if (k == i)
			json_array_append_new(kept, json_pack("{s:I}",
			    "omitted_rounds", (json_int_t)(j - i)));
		if (k < i || k >= j)
			json_array_append(kept, json_array_get(all, k));
	}
	json_decref(all);
	return kept;
}

char *
sg_trace_json(int64_t start, char **images)
{
	json_t *all = json_array(), **sums = NULL, *runs, *r;
	size_t i, k = 0, total = SLACK, *sizes = NULL, from = 0, to = 0;
	char *text = NULL;

	if (images != NULL)
		*images = NULL;
	if (tr.nrounds == 0 && tr.untraced == 0)
		goto done;
	if (all == NULL || (sums = calloc(tr.nruns + 1, sizeof(*sums))) ==
	    NULL || (sizes = calloc(tr.nrounds + 1, sizeof(*sizes))) == NULL)
		goto done;
	for (i = 0; i < tr.nrounds; i++) {
		runs = json_array();
		for (; k < tr.nruns && tr.runs[k].round == i; k++) {
			sums[k] = run_json(&tr.runs[k], start);
			json_array_append_new(runs, sums[k]);
		}
		r = round_json(i, start, runs);
		json_decref(runs);
		sizes[i] = size_of(r);
		total += sizes[i] + 1;
		json_array_append_new(all, r);
	}
	if (tr.untraced > 0)
		json_array_append_new(all, json_pack("{s:I}", "omitted_runs",
		    (json_int_t)tr.untraced));
	if (total <= SG_TRACE_MAX)
		details(sums, SG_TRACE_MAX - total);
	else
		all = ends_only(all, sizes, &from, &to);
	text = sg_jdump_text(all, NULL);
	if (text != NULL && images != NULL)
		*images = sg_timg_json(from, to);
done:
	json_decref(all);
	free(sums);
	free(sizes);
	return text;
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
