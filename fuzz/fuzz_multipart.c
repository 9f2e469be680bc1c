/*
 * The multipart/form-data parser: the same parts, content, ends, result
 * and error whether the body comes whole, cut at points the input
 * chooses, or a byte at a time; a callback that stops, stops at the same
 * place; and what comes out keeps multipart.h's promises (a name always,
 * no control character but TAB in name and filename, data only inside a
 * part and never empty, no callback after a stop). With the fixed
 * boundary, a body it accepts must also split into the parts a plain
 * reading of the whole body finds (oracle()): cutting alone cannot show a
 * delimiter missed or invented the same way at every cut.
 *
 * Input: cuts as cuts.h reads them, then the stream. Bit 3 of byte 0
 * set: the stream's first line is the Content-Type and the rest the body;
 * clear: the stream is a body with boundary "xyz". A nonzero high nibble
 * k of byte 0 makes the k-th part or end callback stop the parse.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/multipart.h"
#include "../lib/util.h"
#include "cuts.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct rec {
	struct sg_buf	 t;		/* the events */
	struct sg_buf	 data;		/* the current part's data so far */
	struct sg_buf	 parts;		/* each ended part's data, as flush()
					 * writes it */
	int		 in_part;
	int		 events;	/* part and end callbacks */
	int		 stop_at;
	int		 stopped;
};

static void
add(struct sg_buf *b, const void *p, size_t n)
{
	if (sg_buf_add(b, p, n) == -1)
		abort();
}

/* A part's data goes into the events as one piece, however it came. */
static void
flush(struct rec *r)
{
	uint64_t n = r->data.len;

	add(&r->t, "D", 1);
	add(&r->t, &n, sizeof(n));
	add(&r->t, r->data.p != NULL ? r->data.p : "", r->data.len);
	add(&r->parts, &n, sizeof(n));
	add(&r->parts, r->data.p != NULL ? r->data.p : "", r->data.len);
	r->data.len = 0;
}

static void
add_str(struct rec *r, char tag, const char *s, int check)
{
	size_t i;

	add(&r->t, &tag, 1);
	if (s == NULL)
		return;
	for (i = 0; check && s[i] != '\0'; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\t') ||
		    s[i] == 0x7f)
			abort();
	add(&r->t, s, strlen(s) + 1);
}

static int
on_part(void *arg, const struct sg_mp_part *pt)
{
	struct rec *r = arg;

	if (r->stopped || r->in_part || pt->name == NULL)
		abort();
	r->in_part = 1;
	add_str(r, 'P', pt->name, 1);
	add_str(r, pt->filename != NULL ? 'F' : 'f', pt->filename, 1);
	add_str(r, pt->content_type != NULL ? 'T' : 't', pt->content_type, 0);
	if (++r->events == r->stop_at)
		r->stopped = 1;
	return r->stopped;
}

static int
on_data(void *arg, const void *buf, size_t len)
{
	struct rec *r = arg;

	if (r->stopped || !r->in_part || buf == NULL || len == 0)
		abort();
	add(&r->data, buf, len);
	return 0;
}

static int
on_end(void *arg)
{
	struct rec *r = arg;

	if (r->stopped || !r->in_part)
		abort();
	r->in_part = 0;
	flush(r);
	add(&r->t, "E", 1);
	if (++r->events == r->stop_at)
		r->stopped = 1;
	return r->stopped;
}

static const struct sg_mp_cb cbs = { on_part, on_data, on_end };

/* What one way of feeding gave. */
struct out {
	struct rec	 rec;
	int		 feed, finish, stopped, parts;
	char		 err[256];
};

/* Feed body[0..n) cut at cuts[0..ncuts), or a byte at a time when
 * bytewise; stop feeding at the first -1, as a caller would. */
static void
parse(const char *ctype, const char *body, size_t n, const size_t *cuts,
    int ncuts, int bytewise, int stop_at, struct out *o)
{
	struct sg_mp *p;
	size_t at = 0, end;
	int i;

	memset(o, 0, sizeof(*o));
	o->rec.stop_at = stop_at;
	if ((p = sg_mp_new(ctype, &cbs, &o->rec, NULL, 0)) == NULL)
		abort();	/* the caller checked ctype */
	for (i = 0; o->feed == 0 && at < n; i++) {
		if (bytewise)
			end = at + 1;
		else
			end = i < ncuts ? cuts[i] : n;
		o->feed = sg_mp_feed(p, body + at, end - at);
		at = end;
	}
	o->finish = sg_mp_finish(p);
	/* Data of a part the body left open (truncated, refused). */
	if (o->rec.in_part)
		flush(&o->rec);
	o->stopped = sg_mp_stopped(p);
	o->parts = sg_mp_parts(p);
	strncpy(o->err, sg_mp_error(p), sizeof(o->err) - 1);
	if ((o->feed == -1 || o->finish == -1) && o->err[0] == '\0')
		abort();
	if (o->stopped != (stop_at != 0 && o->rec.stopped))
		abort();
	sg_mp_free(p);
}

static void
same(const struct out *a, const struct out *b)
{
	if (a->feed != b->feed || a->finish != b->finish ||
	    a->stopped != b->stopped || a->parts != b->parts ||
	    strcmp(a->err, b->err) != 0 || a->rec.t.len != b->rec.t.len ||
	    (a->rec.t.len > 0 && memcmp(a->rec.t.p, b->rec.t.p,
	    a->rec.t.len) != 0))
		abort();
}

static void
out_free(struct out *o)
{
	free(o->rec.t.p);
	free(o->rec.data.p);
	free(o->rec.parts.p);
}

/* ---- the oracle: multipart.h's framing rules, read off a whole body ---- */

/* What follows a whole "\r\n--boundary" at b[j..n): 1 a part (*after
 * past its line end), 2 the close, 0 not a delimiter, -1 refused. */
static int
suffix(const char *b, size_t n, size_t j, size_t *after)
{
	size_t pad = 0;

	if (j + 1 < n && b[j] == '-' && b[j + 1] == '-')
		return 2;
	for (; j < n && (b[j] == ' ' || b[j] == '\t'); j++)
		pad++;
	if (pad > SG_MP_MAX_PAD)
		return -1;
	if (j < n && b[j] == '\n') {
		*after = j + 1;
		return 1;
	}
	if (j + 1 < n && b[j] == '\r' && b[j + 1] == '\n') {
		*after = j + 2;
		return 1;
	}
	return 0;
}

/* The first delimiter d[0..dlen) from b[from], or "--boundary" at from
 * itself when atstart (a line start): where it begins in *at, the rest
 * as suffix(). */
static int
next_delim(const char *b, size_t n, const char *d, size_t dlen, size_t from,
    int atstart, size_t *at, size_t *after)
{
	const char *k;
	int r;

	if (atstart && n - from >= dlen - 2 &&
	    memcmp(b + from, d + 2, dlen - 2) == 0 &&
	    (r = suffix(b, n, from + dlen - 2, after)) != 0) {
		*at = from;
		return r;
	}
	while ((k = memmem(b + from, n - from, d, dlen)) != NULL) {
		from = (size_t)(k - b);
		if ((r = suffix(b, n, from + dlen, after)) != 0) {
			*at = from;
			return r;
		}
		from++;
	}
	return 0;
}

/* Each part's data of body b[0..n) with boundary bnd into out, as
 * flush() writes it: 0, or -1 when the body does not close. Header
 * lines are skipped unread: the parser accepted them. */
static int
oracle(const char *b, size_t n, const char *bnd, struct sg_buf *out)
{
	char d[4 + SG_MP_MAX_BOUNDARY];
	size_t dlen = 4 + strlen(bnd), at, after = 0, pos;
	const char *nl;
	uint64_t len;
	int r;

	memcpy(d, "\r\n--", 4);
	memcpy(d + 4, bnd, dlen - 4);
	r = next_delim(b, n, d, dlen, 0, 1, &at, &after);
	while (r == 1) {
		for (pos = after;; pos = (size_t)(nl - b) + 1) {
			if ((nl = memchr(b + pos, '\n', n - pos)) == NULL)
				return -1;
			if (nl == b + pos || (nl == b + pos + 1 &&
			    b[pos] == '\r'))
				break;
		}
		pos = (size_t)(nl - b) + 1;
		if ((r = next_delim(b, n, d, dlen, pos, 1, &at, &after)) <= 0)
			return -1;
		len = at - pos;
		add(out, &len, sizeof(len));
		add(out, b + pos, at - pos);
	}
	return r == 2 ? 0 : -1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char fixed[] = "multipart/form-data; boundary=xyz";
	struct out whole, split, bytes;
	size_t cuts[FUZZ_MAX_CUTS], n, off = 0;
	const char *s, *nl;
	char *ctype = NULL, err[256];
	struct sg_mp *p;
	int ncuts, i, stop_at;

	if (fuzz_cuts(data, size, cuts, &ncuts, &s, &n) == -1)
		return 0;
	stop_at = data[0] >> 4;
	if (data[0] & 8) {
		nl = memchr(s, '\n', n);
		off = nl != NULL ? (size_t)(nl - s) + 1 : n;
		if ((ctype = malloc(off + 1)) == NULL)
			abort();
		memcpy(ctype, s, off);
		ctype[nl != NULL ? off - 1 : off] = '\0';
	}
	/* An unusable Content-Type says why; nothing more to check. */
	err[0] = '\0';
	if ((p = sg_mp_new(ctype != NULL ? ctype : fixed, &cbs, NULL, err,
	    sizeof(err))) == NULL) {
		if (err[0] == '\0')
			abort();
		free(ctype);
		return 0;
	}
	sg_mp_free(p);
	for (i = 0; i < ncuts; i++)
		cuts[i] = cuts[i] > off ? cuts[i] - off : 0;
	parse(ctype != NULL ? ctype : fixed, s + off, n - off, cuts, 0, 0,
	    stop_at, &whole);
	parse(ctype != NULL ? ctype : fixed, s + off, n - off, cuts, ncuts, 0,
	    stop_at, &split);
	parse(ctype != NULL ? ctype : fixed, s + off, n - off, cuts, 0, 1,
	    stop_at, &bytes);
	same(&whole, &split);
	same(&whole, &bytes);
	if (ctype == NULL && whole.feed == 0 && whole.finish == 0) {
		struct sg_buf want = { 0 };

		if (oracle(s, n, "xyz", &want) == -1 ||
		    want.len != whole.rec.parts.len || (want.len > 0 &&
		    memcmp(want.p, whole.rec.parts.p, want.len) != 0))
			abort();
		free(want.p);
	}
	out_free(&whole);
	out_free(&split);
	out_free(&bytes);
	free(ctype);
	return 0;
}
