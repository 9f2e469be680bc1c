/*
 * The usage object's counts, read in one pass (usage_scan.h). Only the
 * plain case is decided here: printable ASCII, strings without escapes,
 * integers, nesting at most MAX_DEPTH. Anything else, malformed text
 * included, is SG_USESCAN_ASK: Jansson reads it, and its answer stands.
 */
#include <string.h>

#include "usage_scan.h"

#define MAX_DEPTH	16

struct rd {
	const char	*p, *end;
};

/* A key's value as read: present at all, and an integer's value. */
struct field {
	int	 present, is_int;
	int64_t	 v;
};

/* The top level's keys, and the details objects' two. */
enum { F_IN, F_PROMPT, F_OUT, F_COMPL, NFIELDS };
enum { D_IN, D_PROMPT, D_OUT, D_COMPL, NDETAILS };

struct counts {
	struct field	 f[NFIELDS];
	struct field	 d[NDETAILS];	/* present: the details key is */
	struct field	 inner[NDETAILS];	/* its cached/reasoning */
};

static void
ws(struct rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' ||
	    *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static int
take(struct rd *r, char c)
{
	ws(r);
	if (r->p >= r->end || *r->p != c)
		return 0;
	r->p++;
	return 1;
}

/* A string at r->p ('"'): its bytes in [*s, *s + *n). */
static int
str(struct rd *r, const char **s, size_t *n)
{
	const char *q;

	if (!take(r, '"'))
		return SG_USESCAN_ASK;
	for (q = r->p; q < r->end && *q != '"'; q++)
		if ((unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e ||
		    *q == '\\')
			return SG_USESCAN_ASK;
	if (q >= r->end)
		return SG_USESCAN_ASK;
	*s = r->p;
	*n = (size_t)(q - r->p);
	r->p = q + 1;
	return SG_USESCAN_OK;
}

/* An integer (JSON's grammar, int64's range); a real is asked about. */
static int
integer(struct rd *r, int64_t *v)
{
	int neg = 0;
	uint64_t u = 0;

	ws(r);
	if (r->p < r->end && *r->p == '-') {
		neg = 1;
		r->p++;
	}
	if (r->p >= r->end || *r->p < '0' || *r->p > '9')
		return SG_USESCAN_ASK;
	if (*r->p == '0' && r->p + 1 < r->end && r->p[1] >= '0' &&
	    r->p[1] <= '9')
		return SG_USESCAN_ASK;
	for (; r->p < r->end && *r->p >= '0' && *r->p <= '9'; r->p++) {
		if (u > (UINT64_C(1) << 62))
			return SG_USESCAN_ASK;
		u = u * 10 + (uint64_t)(*r->p - '0');
	}
	if (r->p < r->end && (*r->p == '.' || *r->p == 'e' || *r->p == 'E'))
		return SG_USESCAN_ASK;
	if (u > (uint64_t)INT64_MAX)
		return SG_USESCAN_ASK;
	*v = neg ? -(int64_t)u : (int64_t)u;
	return SG_USESCAN_OK;
}

static int value(struct rd *, int depth, struct field *);

/* An object or array, its members skipped. */
static int
skip_group(struct rd *r, int depth, char open, char close)
{
	const char *s;
	size_t n;
	int rc;

	if (depth > MAX_DEPTH || !take(r, open))
		return SG_USESCAN_ASK;
	if (take(r, close))
		return SG_USESCAN_OK;
	do {
		if (open == '{' && ((rc = str(r, &s, &n)) != SG_USESCAN_OK ||
		    !take(r, ':')))
			return SG_USESCAN_ASK;
		if ((rc = value(r, depth + 1, NULL)) != SG_USESCAN_OK)
			return rc;
	} while (take(r, ','));
	return take(r, close) ? SG_USESCAN_OK : SG_USESCAN_ASK;
}

/* Any value, skipped; a number's read into f when f is not NULL. */
static int
value(struct rd *r, int depth, struct field *f)
{
	static const char *const words[] = { "true", "false", "null" };
	size_t i, k;
	const char *s;
	int64_t v;

	ws(r);
	if (r->p >= r->end)
		return SG_USESCAN_ASK;
	if (*r->p == '"')
		return str(r, &s, &k);
	if (*r->p == '{')
		return skip_group(r, depth, '{', '}');
	if (*r->p == '[')
		return skip_group(r, depth, '[', ']');
	if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')) {
		if (integer(r, &v) != SG_USESCAN_OK)
			return SG_USESCAN_ASK;
		if (f != NULL) {
			f->is_int = 1;
			f->v = v;
		}
		return SG_USESCAN_OK;
	}
	for (i = 0; i < 3; i++) {
		k = strlen(words[i]);
		if ((size_t)(r->end - r->p) >= k && memcmp(r->p, words[i], k) == 0) {
			r->p += k;
			return SG_USESCAN_OK;
		}
	}
	return SG_USESCAN_ASK;
}

/* Which of names (NULL-ended) the key s[0..n) is, or -1. */
static int
which(const char *s, size_t n, const char *const names[])
{
	int i;

	for (i = 0; names[i] != NULL; i++)
		if (strlen(names[i]) == n && memcmp(s, names[i], n) == 0)
			return i;
	return -1;
}

/* An object's members: the one named want read into *f (the last time
 * it comes), the rest skipped. */
static int
details(struct rd *r, int depth, const char *want, struct field *f)
{
	const char *const names[] = { want, NULL };
	struct field got;
	const char *s;
	size_t n;
	int rc, k;

	if (depth > MAX_DEPTH || !take(r, '{'))
		return SG_USESCAN_ASK;
	if (take(r, '}'))
		return SG_USESCAN_OK;
	do {
		if (str(r, &s, &n) != SG_USESCAN_OK || !take(r, ':'))
			return SG_USESCAN_ASK;
		k = which(s, n, names);
		memset(&got, 0, sizeof(got));
		if ((rc = value(r, depth + 1, k == 0 ? &got : NULL)) !=
		    SG_USESCAN_OK)
			return rc;
		if (k == 0) {
			*f = got;
			f->present = 1;
		}
	} while (take(r, ','));
	return take(r, '}') ? SG_USESCAN_OK : SG_USESCAN_ASK;
}

static int
member(struct rd *r, struct counts *c, const char *s, size_t n)
{
	static const char *const top[] = { "input_tokens", "prompt_tokens",
	    "output_tokens", "completion_tokens", NULL };
	static const char *const det[] = { "input_tokens_details",
	    "prompt_tokens_details", "output_tokens_details",
	    "completion_tokens_details", NULL };
	struct field got;
	int k, rc;

	memset(&got, 0, sizeof(got));
	if ((k = which(s, n, top)) >= 0) {
		if ((rc = value(r, 2, &got)) != SG_USESCAN_OK)
			return rc;
		c->f[k] = got;
		c->f[k].present = 1;
		return SG_USESCAN_OK;
	}
	if ((k = which(s, n, det)) < 0)
		return value(r, 2, NULL);
	/* The last one given counts, whatever it is. */
	c->d[k].present = 1;
	memset(&c->inner[k], 0, sizeof(c->inner[k]));
	ws(r);
	if (r->p < r->end && *r->p == '{')
		return details(r, 2, k <= D_PROMPT ? "cached_tokens" :
		    "reasoning_tokens", &c->inner[k]);
	return value(r, 2, NULL);
}

/* A count as sg_use_tokens reads one: a's field, or b's when a is
 * absent; a positive integer, else 0. */
static int64_t
pick(const struct field *a, const struct field *b)
{
	const struct field *f = a->present ? a : b;

	return f->present && f->is_int && f->v > 0 ? f->v : 0;
}

static int64_t
pick_inner(const struct counts *c, int a, int b)
{
	const struct field *f = c->d[a].present ? &c->inner[a] : &c->inner[b];

	return f->present && f->is_int && f->v > 0 ? f->v : 0;
}

int
sg_usescan(const char *text, size_t len, struct sg_usage_counts *out)
{
	struct rd r = { text, text + len };
	struct counts c;
	const char *s;
	size_t n;
	int rc;

	memset(&c, 0, sizeof(c));
	memset(out, 0, sizeof(*out));
	if (!take(&r, '{'))
		return SG_USESCAN_ASK;
	if (!take(&r, '}')) {
		do {
			if (str(&r, &s, &n) != SG_USESCAN_OK || !take(&r, ':'))
				return SG_USESCAN_ASK;
			if ((rc = member(&r, &c, s, n)) != SG_USESCAN_OK)
				return rc;
		} while (take(&r, ','));
		if (!take(&r, '}'))
			return SG_USESCAN_ASK;
	}
	out->input = pick(&c.f[F_IN], &c.f[F_PROMPT]);
	out->output = pick(&c.f[F_OUT], &c.f[F_COMPL]);
	out->cached = pick_inner(&c, D_IN, D_PROMPT);
	out->reasoning = pick_inner(&c, D_OUT, D_COMPL);
	return SG_USESCAN_OK;
}
