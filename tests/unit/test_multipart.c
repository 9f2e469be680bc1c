/*
 * lib/multipart: the streaming multipart/form-data parser. Each body is
 * checked against the events it must give (a trace: "[name|filename|type]"
 * for a part's headers, its data bytes, "{end}" for its end), and most
 * are also fed split in two at every byte and one byte at a time: the
 * trace, results and error must not depend on where the network cut. Two
 * 10 MB parts are checked by a running hash, never kept.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/multipart.h"
#include "../../lib/util.h"
#include "testutil.h"

#define CT	"multipart/form-data; boundary=XyZ"

/* ---- recording what the parser reports ---- */

struct rec {
	struct sg_buf	 t;		/* the trace, unless hash_only */
	int		 hash_only;
	uint64_t	 h;		/* FNV-1a of every data byte */
	size_t		 total;		/* data bytes */
	int		 in_part;
	int		 events;	/* part and end callbacks */
	int		 stop_at;	/* that event returns nonzero */
	int		 stop_data;	/* that data callback returns nonzero */
	int		 ndata;
	int		 stopped;	/* a callback returned nonzero */
};

static void
rec_add(struct rec *r, const void *p, size_t n)
{
	if (!r->hash_only)
		assert_int_equal(sg_buf_add(&r->t, p, n), 0);
}

static void
rec_str(struct rec *r, const char *s)
{
	rec_add(r, s != NULL ? s : "(null)", strlen(s != NULL ? s : "(null)"));
}

static int
on_part(void *arg, const struct sg_mp_part *pt)
{
	struct rec *r = arg;

	assert_false(r->stopped);
	assert_false(r->in_part);
	assert_non_null(pt->name);
	r->in_part = 1;
	rec_add(r, "[", 1);
	rec_str(r, pt->name);
	rec_add(r, "|", 1);
	rec_str(r, pt->filename);
	rec_add(r, "|", 1);
	rec_str(r, pt->content_type);
	rec_add(r, "]", 1);
	if (++r->events == r->stop_at)
		r->stopped = 1;
	return r->events == r->stop_at;
}

static int
on_data(void *arg, const void *buf, size_t len)
{
	struct rec *r = arg;
	const unsigned char *b = buf;
	size_t i;

	assert_false(r->stopped);
	assert_true(r->in_part);
	assert_true(len > 0);
	for (i = 0; i < len; i++)
		r->h = (r->h ^ b[i]) * 0x100000001b3ULL;
	r->total += len;
	rec_add(r, buf, len);
	if (++r->ndata == r->stop_data)
		r->stopped = 1;
	return r->ndata == r->stop_data;
}

static int
on_end(void *arg)
{
	struct rec *r = arg;

	assert_false(r->stopped);
	assert_true(r->in_part);
	r->in_part = 0;
	rec_add(r, "{end}", 5);
	if (++r->events == r->stop_at)
		r->stopped = 1;
	return r->events == r->stop_at;
}

static const struct sg_mp_cb cbs = { on_part, on_data, on_end };

/* What one way of feeding a body gave. */
struct res {
	struct rec	 r;
	int		 feed;		/* -1 if any feed failed */
	int		 finish;
	int		 stopped;
	int		 parts;
	char		 err[200];
};

static void
res_free(struct res *o)
{
	free(o->r.t.p);
	memset(o, 0, sizeof(*o));
}

/* The trace as a C string ("" when empty). */
static const char *
trace(const struct res *o)
{
	return o->r.t.p != NULL ? o->r.t.p : "";
}

/* Feed body[0..len) cut at cuts[0..ncuts) (increasing), then finish. */
static void
run_cuts(const char *ctype, const char *body, size_t len, const size_t *cuts,
    size_t ncuts, int stop_at, struct res *o)
{
	struct sg_mp *p;
	char err[200];
	size_t at = 0, i;

	memset(o, 0, sizeof(*o));
	o->r.h = 0xcbf29ce484222325ULL;
	o->r.stop_at = stop_at;
	p = sg_mp_new(ctype, &cbs, &o->r, err, sizeof(err));
	if (p == NULL)
		fail_msg("sg_mp_new(%s): %s", ctype, err);
	for (i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;

		if (sg_mp_feed(p, body + at, end - at) == -1)
			o->feed = -1;
		at = end;
	}
	o->finish = sg_mp_finish(p);
	o->stopped = sg_mp_stopped(p);
	o->parts = sg_mp_parts(p);
	snprintf(o->err, sizeof(o->err), "%s", sg_mp_error(p));
	sg_mp_free(p);
}

static void
run(const char *ctype, const char *body, size_t len, struct res *o)
{
	run_cuts(ctype, body, len, NULL, 0, 0, o);
}

static void
assert_same(const struct res *a, const struct res *b, size_t cut)
{
	if (a->feed != b->feed || a->finish != b->finish ||
	    a->stopped != b->stopped || a->parts != b->parts ||
	    strcmp(a->err, b->err) != 0 || a->r.t.len != b->r.t.len ||
	    (a->r.t.len > 0 && memcmp(a->r.t.p, b->r.t.p, a->r.t.len) != 0))
		fail_msg("cut at %zu: \"%s\" (%d %d %s) vs \"%s\" (%d %d %s)",
		    cut, trace(a), a->feed, a->finish, a->err, trace(b),
		    b->feed, b->finish, b->err);
}

/*
 * body whole, in two pieces cut at every byte, and byte by byte: the
 * same every time. The whole run is left in *o for the caller's checks.
 */
static void
run_all(const char *ctype, const char *body, size_t len, int stop_at,
    struct res *o)
{
	struct res cut;
	size_t *cuts, i;

	run_cuts(ctype, body, len, NULL, 0, stop_at, o);
	for (i = 0; i <= len; i++) {
		run_cuts(ctype, body, len, &i, 1, stop_at, &cut);
		assert_same(o, &cut, i);
		res_free(&cut);
	}
	assert_non_null(cuts = malloc((len + 1) * sizeof(*cuts)));
	for (i = 0; i < len; i++)
		cuts[i] = i;
	run_cuts(ctype, body, len, cuts, len, stop_at, &cut);
	assert_same(o, &cut, (size_t)-1);
	res_free(&cut);
	free(cuts);
}

static void
run_all_str(const char *body, struct res *o)
{
	run_all(CT, body, strlen(body), 0, o);
}

/* body is accepted, whole and cut anywhere, and gives the trace want. */
static void
expect_ok(const char *body, const char *want)
{
	struct res o;

	run_all_str(body, &o);
	if (o.feed != 0 || o.finish != 0)
		fail_msg("refused (%s): %s", o.err, body);
	assert_string_equal(trace(&o), want);
	assert_string_equal(o.err, "");
	res_free(&o);
}

/* body is refused, whole and cut anywhere, with an error naming why. */
static void
expect_refused(const char *body, const char *why)
{
	struct res o;

	run_all_str(body, &o);
	if (o.finish != -1)
		fail_msg("accepted: %s", body);
	assert_false(o.stopped);
	assert_contains(o.err, why);
	res_free(&o);
}

/* ---- the request's Content-Type ---- */

/* ctype is usable, and its boundary is b. */
static void
expect_ctype(const char *ctype, const char *b)
{
	struct res o;
	char body[256];

	snprintf(body, sizeof(body), "--%s\r\n\r\nv\r\n--%s--\r\n", b, b);
	run(ctype, body, strlen(body), &o);
	if (o.feed != 0 || o.finish != 0)
		fail_msg("%s: %s", ctype, o.err);
	assert_string_equal(trace(&o), "[|(null)|(null)]v{end}");
	res_free(&o);
}

static void
ctype_accepted(void **state)
{
	(void)state;
	expect_ctype("multipart/form-data; boundary=abc", "abc");
	expect_ctype("multipart/form-data; boundary=\"abc\"", "abc");
	expect_ctype("Multipart/Form-Data; BOUNDARY=abc", "abc");
	expect_ctype("multipart/form-data; charset=utf-8; boundary=abc", "abc");
	expect_ctype("multipart/form-data;boundary=abc;", "abc");
	expect_ctype("  multipart/form-data ; boundary = abc ;; x=\"y;z\"",
	    "abc");
	expect_ctype("multipart/form-data; boundary=\"a\\\"b c\"", "a\"b c");
	expect_ctype("multipart/form-data; boundary=----formdata-undici-"
	    "033777029149", "----formdata-undici-033777029149");
	expect_ctype("multipart/form-data; boundary=\"'()+_,-./:=?\"",
	    "'()+_,-./:=?");
	expect_ctype("multipart/form-data; boundary=0123456789012345678901234"
	    "567890123456789012345678901234567890123456789",
	    "0123456789012345678901234567890123456789012345678901234567890"
	    "123456789");
}

static void
expect_ctype_refused(const char *ctype, const char *why)
{
	char err[200] = "unset";

	assert_null(sg_mp_new(ctype, &cbs, NULL, err, sizeof(err)));
	assert_contains(err, why);
}

static void
ctype_refused(void **state)
{
	(void)state;
	expect_ctype_refused(NULL, "no Content-Type");
	expect_ctype_refused("", "not multipart/form-data");
	expect_ctype_refused("text/plain; boundary=abc", "not multipart");
	expect_ctype_refused("multipart/mixed; boundary=abc", "not multipart");
	expect_ctype_refused("multipart/form-dataX; boundary=abc",
	    "not multipart");
	expect_ctype_refused("multipart/form-data/x; boundary=abc",
	    "not multipart");
	expect_ctype_refused("multipart/form-data", "no boundary");
	expect_ctype_refused("multipart/form-data; charset=utf-8",
	    "no boundary");
	expect_ctype_refused("multipart/form-data; boundary=", "malformed");
	expect_ctype_refused("multipart/form-data; boundary", "malformed");
	expect_ctype_refused("multipart/form-data boundary=abc", "malformed");
	expect_ctype_refused("multipart/form-data; boundary=\"abc",
	    "malformed");
	expect_ctype_refused("multipart/form-data; boundary=\"\"",
	    "1 to 70");
	expect_ctype_refused("multipart/form-data; boundary=0123456789012345"
	    "6789012345678901234567890123456789012345678901234567890",
	    "1 to 70");
	expect_ctype_refused("multipart/form-data; boundary=a; boundary=a",
	    "two boundaries");
	expect_ctype_refused("multipart/form-data; boundary=\"a\r\nb\"",
	    "control character");
	expect_ctype_refused("multipart/form-data; boundary=\"a\xc3\xa9\"",
	    "printable ASCII");
	expect_ctype_refused("multipart/form-data; boundary=\"abc \"",
	    "ends in a space");
	/* err may be NULL. */
	assert_null(sg_mp_new("text/plain", &cbs, NULL, NULL, 0));
}

/* ---- what real clients send ---- */

/* The openai SDK (7.x) uploading a file from fs.createReadStream, as
 * captured: its own encoder, "file" before "purpose". */
static void
openai_sdk_stream(void **state)
{
	const char *ct = "multipart/form-data; boundary=openai-rq1svqtkfvh";
	const char *body =
	    "--openai-rq1svqtkfvh\r\n"
	    "Content-Disposition: form-data; name=\"file\"; "
	    "filename=\"data.jsonl\"\r\n"
	    "Content-Type: application/octet-stream\r\n"
	    "\r\n"
	    "{\"prompt\":\"a\"}\r\n{\"prompt\":\"b\"}\n"
	    "\r\n"
	    "--openai-rq1svqtkfvh\r\n"
	    "Content-Disposition: form-data; name=\"purpose\"\r\n"
	    "\r\n"
	    "assistants\r\n"
	    "--openai-rq1svqtkfvh--\r\n";
	struct res o;

	(void)state;
	run_all(ct, body, strlen(body), 0, &o);
	assert_int_equal(o.feed, 0);
	assert_int_equal(o.finish, 0);
	assert_int_equal(o.parts, 2);
	assert_string_equal(trace(&o),
	    "[file|data.jsonl|application/octet-stream]"
	    "{\"prompt\":\"a\"}\r\n{\"prompt\":\"b\"}\n{end}"
	    "[purpose|(null)|(null)]assistants{end}");
	res_free(&o);
}

/* The SDK with toFile(): Node's own FormData (undici), which writes '"',
 * CR and LF of a filename as %22, %0D, %0A; those come out as sent. */
static void
undici_formdata(void **state)
{
	const char *ct = "multipart/form-data; "
	    "boundary=----formdata-undici-033777029149";
	const char *body =
	    "------formdata-undici-033777029149\r\n"
	    "Content-Disposition: form-data; name=\"file\"; "
	    "filename=\"na%22me \xc3\xbc%0D%0A.csv\"\r\n"
	    "Content-Type: text/csv\r\n"
	    "\r\n"
	    "col1,col2\n1,2\n"
	    "\r\n"
	    "------formdata-undici-033777029149\r\n"
	    "Content-Disposition: form-data; name=\"purpose\"\r\n"
	    "\r\n"
	    "user_data\r\n"
	    "------formdata-undici-033777029149--\r\n";
	struct res o;

	(void)state;
	run_all(ct, body, strlen(body), 0, &o);
	assert_int_equal(o.finish, 0);
	assert_string_equal(trace(&o),
	    "[file|na%22me \xc3\xbc%0D%0A.csv|text/csv]col1,col2\n1,2\n{end}"
	    "[purpose|(null)|(null)]user_data{end}");
	res_free(&o);
}

/* ---- framing ---- */

static void
preamble_and_epilogue_ignored(void **state)
{
	(void)state;
	expect_ok("This is the preamble.\r\n--XyZ x\r\n--XyZ\r\n"
	    "Content-Disposition: form-data; name=a\r\n\r\n1\r\n--XyZ--"
	    "\r\nepilogue\r\n--XyZ\r\n\r\nnot a part\r\n--XyZ--\r\n",
	    "[a|(null)|(null)]1{end}");
	/* Garbage right after the closing "--" is epilogue too. */
	expect_ok("--XyZ\r\n\r\n1\r\n--XyZ--garbage", "[|(null)|(null)]1{end}");
	/* The first boundary must begin a line: here the closing one is
	 * the first, and the form is empty. */
	expect_ok("x--XyZ\r\n\r\n1\r\n--XyZ--", "");
	expect_refused("x--XyZ\r\n\r\n1\r\n", "no multipart boundary");
}

static void
empty_form_and_parts(void **state)
{
	(void)state;
	/* No parts at all: a form without fields. */
	expect_ok("--XyZ--\r\n", "");
	expect_ok("--XyZ--", "");
	/* A part without headers and without content. */
	expect_ok("--XyZ\r\n\r\n\r\n--XyZ--\r\n", "[|(null)|(null)]{end}");
	/* Headers only, empty content, twice. */
	expect_ok("--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n"
	    "\r\n--XyZ\r\nContent-Disposition: form-data; name=b; "
	    "filename=\"\"\r\nContent-Type: text/plain\r\n\r\n\r\n--XyZ--",
	    "[a|(null)|(null)]{end}[b||text/plain]{end}");
	/* Content that is only line ends. */
	expect_ok("--XyZ\r\n\r\n\r\n\r\n\r\n--XyZ--", "[|(null)|(null)]\r\n\r\n"
	    "{end}");
}

/* Bytes like a delimiter that are not one are content, byte for byte. */
static void
lookalikes_are_content(void **state)
{
	static const char *c[] = {
		"\r\n--XyZx",		/* boundary + more */
		"\r\n--XyZX\r\n",
		"\r\n--Xy",		/* a prefix */
		"\r\n--XYZ\r\n",	/* another case */
		"\r\n--XyZ-x",		/* one dash */
		"\r\n--XyZ \tx",	/* padding then more */
		"\r\n--XyZ\rx",		/* CR without LF */
		"\r\n--XyZ \r--",
		"--XyZ\r\n",		/* no line end before it */
		"x--XyZ--",
		"\n--XyZ\r\n",		/* a delimiter needs CR LF */
		"\r\r\n--XyZx",
		"\r\n-\r\n--\r\n--X\r\n--XyZ-\r\n",
		"\r",			/* a CR at the very end */
		"\r\r\r",
	};
	char body[256], want[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		snprintf(body, sizeof(body), "--XyZ\r\n\r\nA%s\r\n--XyZ--\r\n",
		    c[i]);
		snprintf(want, sizeof(want), "[|(null)|(null)]A%s{end}", c[i]);
		expect_ok(body, want);
		/* And as the very first bytes of the content (but for the
		 * one that is a delimiter there: see no_content). */
		if (strcmp(c[i], "--XyZ\r\n") == 0)
			continue;
		snprintf(body, sizeof(body), "--XyZ\r\n\r\n%s\r\n--XyZ--\r\n",
		    c[i]);
		snprintf(want, sizeof(want), "[|(null)|(null)]%s{end}", c[i]);
		expect_ok(body, want);
	}
	/* A CR right before the delimiter is content. */
	expect_ok("--XyZ\r\n\r\nA\r\r\n--XyZ--", "[|(null)|(null)]A\r{end}");
	/* NUL and high bytes are content like any other. */
	{
		static const char b[] = "--XyZ\r\n\r\n\0\xff\r\0\r\n--XyZ--";
		static const char w[] = "[|(null)|(null)]\0\xff\r\0{end}";
		struct res o;

		run_all(CT, b, sizeof(b) - 1, 0, &o);
		assert_int_equal(o.finish, 0);
		assert_int_equal(o.r.t.len, sizeof(w) - 1);
		assert_memory_equal(o.r.t.p, w, sizeof(w) - 1);
		res_free(&o);
	}
}

/* "--boundary" right after the blank line: a part without content. */
static void
no_content(void **state)
{
	(void)state;
	expect_ok("--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n"
	    "--XyZ\r\nContent-Disposition: form-data; name=b\r\n\r\n--XyZ--",
	    "[a|(null)|(null)]{end}[b|(null)|(null)]{end}");
	expect_ok("--XyZ\r\n\r\n--XyZ\r\n\n--XyZ \r\n\r\n--XyZ--",
	    "[|(null)|(null)]{end}[|(null)|(null)]{end}[|(null)|(null)]{end}");
	/* Not a delimiter there either: content, from its first byte. */
	expect_ok("--XyZ\r\n\r\n--XyZx\r\n--XyZ--",
	    "[|(null)|(null)]--XyZx{end}");
	expect_ok("--XyZ\r\n\r\n--Xy\r\n--XyZ--", "[|(null)|(null)]--Xy{end}");
	/* A header line that is a boundary (no blank line before it). */
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=a\r\n"
	    "--XyZ--\r\n", "no colon");
}

static void
transport_padding(void **state)
{
	char body[256];

	(void)state;
	expect_ok("--XyZ \t\r\n\r\n1\r\n--XyZ  \r\n\r\n2\r\n--XyZ--",
	    "[|(null)|(null)]1{end}[|(null)|(null)]2{end}");
	/* SG_MP_MAX_PAD is the most; one more is refused, not guessed. */
	snprintf(body, sizeof(body), "--XyZ\r\n\r\n1\r\n--XyZ%*s\r\n\r\n2"
	    "\r\n--XyZ--", SG_MP_MAX_PAD, "");
	expect_ok(body, "[|(null)|(null)]1{end}[|(null)|(null)]2{end}");
	snprintf(body, sizeof(body), "--XyZ\r\n\r\n1\r\n--XyZ%*s\r\n\r\n2"
	    "\r\n--XyZ--", SG_MP_MAX_PAD + 1, "");
	expect_refused(body, "too many spaces");
	snprintf(body, sizeof(body), "--XyZ\r\n\r\n1\r\n--XyZ%*sx\r\n--XyZ--",
	    SG_MP_MAX_PAD + 1, "");
	expect_refused(body, "too many spaces");
}

/* Bare LF ends boundary and header lines; a delimiter needs its CRLF. */
static void
bare_lf(void **state)
{
	struct res o;

	(void)state;
	expect_ok("--XyZ\nContent-Disposition: form-data; name=a\n"
	    "Content-Type: text/plain\n\n1\r\n--XyZ\n\n2\r\n--XyZ--\n",
	    "[a|(null)|text/plain]1{end}[|(null)|(null)]2{end}");
	/* LF throughout: the second boundary is content, and the body never
	 * closes. */
	run_all_str("--XyZ\nContent-Disposition: form-data; name=a\n\n1\n"
	    "--XyZ--\n", &o);
	assert_int_equal(o.feed, 0);
	assert_int_equal(o.finish, -1);
	assert_contains(o.err, "before its closing boundary");
	assert_string_equal(trace(&o), "[a|(null)|(null)]1\n--XyZ--\n");
	res_free(&o);
}

static void
truncated(void **state)
{
	(void)state;
	expect_refused("", "no multipart boundary");
	expect_refused("preamble only\r\n", "no multipart boundary");
	expect_refused("--XyZ", "no multipart boundary");
	expect_refused("--XyZ-", "no multipart boundary");
	expect_refused("--XyZ\r\n", "in a part's headers");
	expect_refused("--XyZ\r\nContent-Type: a\r\n", "in a part's headers");
	expect_refused("--XyZ\r\n\r\n", "before its closing boundary");
	expect_refused("--XyZ\r\n\r\nabc", "before its closing boundary");
	expect_refused("--XyZ\r\n\r\nabc\r\n--XyZ", "before its closing");
	expect_refused("--XyZ\r\n\r\nabc\r\n--XyZ-", "before its closing");
	expect_refused("--XyZ\r\n\r\nabc\r\n--XyZ\r", "before its closing");
}

static void
many_parts(void **state)
{
	const char *one = "--XyZ\r\nContent-Disposition: form-data; "
	    "name=f\r\n\r\nv\r\n";
	struct sg_buf b = { 0 };
	struct res o;
	int i;

	(void)state;
	for (i = 0; i < SG_MP_MAX_PARTS; i++)
		assert_int_equal(sg_buf_add(&b, one, strlen(one)), 0);
	assert_int_equal(sg_buf_add(&b, "--XyZ--\r\n", 9), 0);
	run(CT, b.p, b.len, &o);
	assert_int_equal(o.finish, 0);
	assert_int_equal(o.parts, SG_MP_MAX_PARTS);
	assert_int_equal(o.r.events, 2 * SG_MP_MAX_PARTS);
	res_free(&o);
	/* One more is refused when it starts. */
	b.len -= 9;
	assert_int_equal(sg_buf_add(&b, "--XyZ\r\n\r\nv\r\n--XyZ--\r\n", 21),
	    0);
	run(CT, b.p, b.len, &o);
	assert_int_equal(o.feed, -1);
	assert_int_equal(o.finish, -1);
	assert_contains(o.err, "more than 64 parts");
	assert_int_equal(o.r.events, 2 * SG_MP_MAX_PARTS);
	res_free(&o);
	free(b.p);
}

/* ---- part headers ---- */

static void
header_names_any_case(void **state)
{
	(void)state;
	expect_ok("--XyZ\r\ncontent-disposition: FORM-DATA; NAME=a; FileName="
	    "b.txt\r\nCONTENT-TYPE:text/plain;charset=utf-8  \r\nX-Other: "
	    "whatever: it is\r\ncontent-transfer-encoding: Binary\r\n\r\n1\r\n"
	    "--XyZ--",
	    "[a|b.txt|text/plain;charset=utf-8]1{end}");
	expect_ok("--XyZ\r\nContent-Transfer-Encoding: 8bit\r\n\r\n1\r\n"
	    "--XyZ\r\nContent-Transfer-Encoding:7bit\r\n\r\n2\r\n--XyZ--",
	    "[|(null)|(null)]1{end}[|(null)|(null)]2{end}");
}

static void
disposition_values(void **state)
{
	(void)state;
	/* Quoted strings with escapes, tokens, white space around. */
	expect_ok("--XyZ\r\nContent-Disposition: form-data ;name = "
	    "\"a\\\"b\\\\c;d\" ; filename=x.bin\r\n\r\n\r\n--XyZ--",
	    "[a\"b\\c;d|x.bin|(null)]{end}");
	/* Unknown parameters are skipped; order is free. */
	expect_ok("--XyZ\r\nContent-Disposition: form-data; filename=\"f\"; "
	    "size=3; name=\"n\"\r\n\r\n\r\n--XyZ--", "[n|f|(null)]{end}");
	/* No name: "". An empty name and an empty filename stay empty. */
	expect_ok("--XyZ\r\nContent-Disposition: form-data\r\n\r\n\r\n--XyZ--",
	    "[|(null)|(null)]{end}");
	expect_ok("--XyZ\r\nContent-Disposition: form-data; name=\"\"; "
	    "filename=\"\"\r\n\r\n\r\n--XyZ--", "[||(null)]{end}");
	/* An old client's Windows path: backslashes are escapes. */
	expect_ok("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename=\"C:\\dir\\f.txt\"\r\n\r\n\r\n--XyZ--",
	    "[f|C:dirf.txt|(null)]{end}");
	/* A TAB is kept. */
	expect_ok("--XyZ\r\nContent-Disposition: form-data; name=\"a\tb\"\r\n"
	    "\r\n\r\n--XyZ--", "[a\tb|(null)|(null)]{end}");
}

/* The caller validates filenames: traversal comes out verbatim. */
static void
filenames_verbatim(void **state)
{
	(void)state;
	expect_ok("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename=\"../../etc/passwd\"\r\n\r\n\r\n--XyZ--",
	    "[f|../../etc/passwd|(null)]{end}");
	expect_ok("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename*=UTF-8''..%2F..%2Fx%20y\r\n\r\n\r\n--XyZ--",
	    "[f|../../x y|(null)]{end}");
	/* Raw bytes (UTF-8 or not) as sent. */
	expect_ok("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename=\"\xc3\xa9t\xe9.txt\"\r\n\r\n\r\n--XyZ--",
	    "[f|\xc3\xa9t\xe9.txt|(null)]{end}");
}

static void
filename_star(void **state)
{
	(void)state;
	/* Preferred to filename=, whichever comes first. */
	expect_ok("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename=\"plain.txt\"; filename*=UTF-8''%C3%A9t%C3%A9.txt\r\n"
	    "\r\n\r\n--XyZ--", "[f|\xc3\xa9t\xc3\xa9.txt|(null)]{end}");
	expect_ok("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename*=utf-8'en'a%20b; filename=\"plain.txt\"\r\n\r\n\r\n"
	    "--XyZ--", "[f|a b|(null)]{end}");
	expect_ok("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename*=UTF-8''\r\n\r\n\r\n--XyZ--", "[f||(null)]{end}");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename*=ISO-8859-1''%E9\r\n\r\n\r\n--XyZ--", "charset");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename*=a.txt\r\n\r\n\r\n--XyZ--", "filename* is malformed");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename*=UTF-8''a%2\r\n\r\n\r\n--XyZ--", "is malformed");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename*=UTF-8''a%zz\r\n\r\n\r\n--XyZ--", "is malformed");
	/* A NUL or a line end, decoded: refused, never cut short. */
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename*=UTF-8''evil.sh%00.txt\r\n\r\n\r\n--XyZ--",
	    "control character");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename*=UTF-8''a%0Ab\r\n\r\n\r\n--XyZ--", "control character");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=f; "
	    "filename*=UTF-8''a%7Fb\r\n\r\n\r\n--XyZ--", "control character");
}

static void
headers_refused(void **state)
{
	(void)state;
	expect_refused("--XyZ\r\nContent-Disposition: form-data;\r\n "
	    "name=a\r\n\r\n\r\n--XyZ--", "folded");
	expect_refused("--XyZ\r\n\tContent-Type: a\r\n\r\n\r\n--XyZ--",
	    "folded");
	expect_refused("--XyZ\r\nno colon here\r\n\r\n\r\n--XyZ--", "no colon");
	expect_refused("--XyZ\r\nContent-Type: a\r\n--XyZ\r\n\r\n\r\n--XyZ--",
	    "no colon");
	expect_refused("--XyZ\r\nContent Type: a\r\n\r\n\r\n--XyZ--",
	    "name is malformed");
	expect_refused("--XyZ\r\nContent-Type : a\r\n\r\n\r\n--XyZ--",
	    "name is malformed");
	expect_refused("--XyZ\r\n: a\r\n\r\n\r\n--XyZ--", "name is malformed");
	expect_refused("--XyZ\r\nContent-Type: a\rb\r\n\r\n\r\n--XyZ--",
	    "CR without LF");
	expect_refused("--XyZ\r\nContent-Type: a\x01\r\n\r\n\r\n--XyZ--",
	    "control character");
	expect_refused("--XyZ\r\nContent-Type: a\x7f\r\n\r\n\r\n--XyZ--",
	    "control character");
	{
		static const char b[] = "--XyZ\r\nContent-Disposition: "
		    "form-data; name=f; filename=\"a\0.txt\"\r\n\r\n\r\n"
		    "--XyZ--";
		struct res o;

		run_all(CT, b, sizeof(b) - 1, 0, &o);
		assert_int_equal(o.finish, -1);
		assert_contains(o.err, "control character");
		assert_int_equal(o.r.events, 0);
		res_free(&o);
	}
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=a\r\n"
	    "content-disposition: form-data; name=b\r\n\r\n\r\n--XyZ--",
	    "two Content-Disposition");
	expect_refused("--XyZ\r\nContent-Type: a\r\nContent-Type: b\r\n\r\n"
	    "\r\n--XyZ--", "two Content-Type");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=a; "
	    "NAME=b\r\n\r\n\r\n--XyZ--", "repeats a parameter");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=a; "
	    "filename=b; filename=c\r\n\r\n\r\n--XyZ--", "repeats a parameter");
	expect_refused("--XyZ\r\nContent-Disposition: attachment; name=a\r\n"
	    "\r\n\r\n--XyZ--", "not form-data");
	expect_refused("--XyZ\r\nContent-Disposition:\r\n\r\n\r\n--XyZ--",
	    "not form-data");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n"
	    "\r\n\r\n--XyZ--", "malformed");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name\r\n"
	    "\r\n\r\n--XyZ--", "malformed");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=\r\n"
	    "\r\n\r\n--XyZ--", "malformed");
	expect_refused("--XyZ\r\nContent-Disposition: form-data; name=\"a\"b"
	    "\r\n\r\n\r\n--XyZ--", "malformed");
	expect_refused("--XyZ\r\nContent-Disposition: form-data name=a\r\n"
	    "\r\n\r\n--XyZ--", "malformed");
	expect_refused("--XyZ\r\nContent-Transfer-Encoding: base64\r\n\r\n"
	    "YQ==\r\n--XyZ--", "Content-Transfer-Encoding");
}

/* The header block may be SG_MP_MAX_HEADER bytes, line ends and the
 * blank line included, and no more. */
static void
header_block_limit(void **state)
{
	const char *head = "--XyZ\r\n";
	char *b = malloc(SG_MP_MAX_HEADER + 64);
	struct res o;
	size_t n, fill;

	(void)state;
	assert_non_null(b);
	/* "X: " + fill + "\r\n" + "\r\n" == SG_MP_MAX_HEADER */
	fill = SG_MP_MAX_HEADER - 3 - 2 - 2;
	n = (size_t)sprintf(b, "%sX: ", head);
	memset(b + n, 'a', fill);
	n += fill;
	n += (size_t)sprintf(b + n, "\r\n\r\nv\r\n--XyZ--");
	run(CT, b, n, &o);
	assert_int_equal(o.finish, 0);
	assert_string_equal(trace(&o), "[|(null)|(null)]v{end}");
	res_free(&o);
	/* One byte more. */
	n = (size_t)sprintf(b, "%sX: ", head);
	memset(b + n, 'a', fill + 1);
	n += fill + 1;
	n += (size_t)sprintf(b + n, "\r\n\r\nv\r\n--XyZ--");
	run(CT, b, n, &o);
	assert_int_equal(o.feed, -1);
	assert_contains(o.err, "longer than 8192");
	assert_int_equal(o.r.events, 0);
	res_free(&o);
	free(b);
}

/* ---- callbacks that stop ---- */

static void
callback_stops(void **state)
{
	const char *body = "--XyZ\r\nContent-Disposition: form-data; name=a"
	    "\r\n\r\n12345\r\n--XyZ\r\n\r\n67\r\n--XyZ--\r\n";
	struct sg_mp *p;
	struct rec r;
	struct res o;
	int k;

	(void)state;
	/* Stopping at each part or end: the same whole or cut. */
	for (k = 1; k <= 4; k++) {
		run_all(CT, body, strlen(body), k, &o);
		assert_int_equal(o.feed, -1);
		assert_int_equal(o.finish, -1);
		assert_true(o.stopped);
		assert_string_equal(o.err, "the upload was stopped");
		assert_int_equal(o.r.events, k);
		res_free(&o);
	}
	/* Stopping in data: later feeds fail at once, with no callback. */
	memset(&r, 0, sizeof(r));
	r.stop_data = 1;
	assert_non_null(p = sg_mp_new(CT, &cbs, &r, NULL, 0));
	assert_int_equal(sg_mp_feed(p, body, 50), -1);
	assert_true(sg_mp_stopped(p));
	assert_int_equal(sg_mp_feed(p, body + 50, strlen(body) - 50), -1);
	assert_int_equal(sg_mp_feed(p, NULL, 0), -1);
	assert_int_equal(sg_mp_finish(p), -1);
	assert_int_equal(r.ndata, 1);
	assert_string_equal(sg_mp_error(p), "the upload was stopped");
	sg_mp_free(p);
	free(r.t.p);
}

/* A refusal is final, and its first reason stays. */
static void
errors_stick(void **state)
{
	struct sg_mp *p;
	struct rec r;

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_non_null(p = sg_mp_new(CT, &cbs, &r, NULL, 0));
	assert_string_equal(sg_mp_error(p), "");
	assert_int_equal(sg_mp_feed(p, "--XyZ\r\nbad\r\n\r\n", 14), -1);
	assert_false(sg_mp_stopped(p));
	assert_int_equal(sg_mp_feed(p, "\r\n--XyZ--", 9), -1);
	assert_int_equal(sg_mp_finish(p), -1);
	assert_contains(sg_mp_error(p), "no colon");
	assert_int_equal(r.events, 0);
	sg_mp_free(p);
	/* After the closing boundary, anything is ignored. */
	assert_non_null(p = sg_mp_new(CT, &cbs, &r, NULL, 0));
	assert_int_equal(sg_mp_feed(p, "--XyZ--\r\n", 9), 0);
	assert_int_equal(sg_mp_feed(p, "--XyZ\r\nbad\r\n\r\n", 14), 0);
	assert_int_equal(sg_mp_finish(p), 0);
	assert_int_equal(sg_mp_feed(p, "x", 1), 0);
	sg_mp_free(p);
	free(r.t.p);
	/* No callbacks at all, and sg_mp_free(NULL). */
	assert_non_null(p = sg_mp_new(CT, NULL, NULL, NULL, 0));
	assert_int_equal(sg_mp_feed(p, "--XyZ\r\n\r\nv\r\n--XyZ--", 20), 0);
	assert_int_equal(sg_mp_finish(p), 0);
	assert_int_equal(sg_mp_parts(p), 1);
	sg_mp_free(p);
	sg_mp_free(NULL);
}

/* ---- a 10 MB part ---- */

#define BIG		(10u << 20)
#define BIG_BND		"bNd-7Q"

/*
 * The content, made as it is fed: random bytes (never 'Q', so never the
 * boundary), one in four from "\r\n-" so candidates start often, and now
 * and then a near miss: the delimiter less its last byte, or whole and
 * followed by what makes it content.
 */
struct gen {
	uint64_t	 s;
	const char	*lit;		/* a near miss being written */
	size_t		 pos;		/* bytes of the content so far */
};

static const char *near[] = {
	"\r\n--bNd-7", "\r\n--bNd-7Qx", "\r\n--bNd-7Q-x", "\r\n--bNd-7Q \tx",
	"\r\n--bNd-7Q\rx", "\r\n--bNd-7QQ", "\r\r\n--bNd-", "\r\n--bNd-7Q-\r\n",
};

static uint64_t
gen_rand(struct gen *g)
{
	g->s ^= g->s << 13;
	g->s ^= g->s >> 7;
	g->s ^= g->s << 17;
	return g->s;
}

static unsigned char
gen_byte(struct gen *g)
{
	uint64_t x;
	unsigned char c;

	g->pos++;
	if (g->lit != NULL && *g->lit != '\0')
		return (unsigned char)*g->lit++;
	x = gen_rand(g);
	/* No near miss in the last bytes: one would run past the end. */
	if ((x & 0xfff) == 0 && g->pos + 16 < BIG) {
		g->lit = near[(x >> 12) % (sizeof(near) / sizeof(near[0]))];
		return (unsigned char)*g->lit++;
	}
	if ((x >> 20 & 3) == 0)
		return (unsigned char)"\r\n-"[(x >> 24) % 3];
	c = (unsigned char)(x >> 32);
	return c == 'Q' ? 'q' : c;
}

/* The body: head, BIG bytes of content, tail; fed in chunks of chunk
 * bytes. At every feed the parser has given out all the content fed but
 * at most SG_MP_MAX_HELD bytes. */
static void
big_part(size_t chunk)
{
	static const char head[] = "--" BIG_BND "\r\nContent-Disposition: "
	    "form-data; name=\"file\"; filename=\"big.bin\"\r\nContent-Type: "
	    "application/octet-stream\r\n\r\n";
	static const char tail[] = "\r\n--" BIG_BND "--\r\n";
	const size_t hlen = sizeof(head) - 1, tlen = sizeof(tail) - 1;
	const size_t total = hlen + BIG + tlen;
	struct gen g = { 0x9e3779b97f4a7c15ULL, NULL, 0 };
	uint64_t want = 0xcbf29ce484222325ULL;
	unsigned char *buf = malloc(chunk);
	struct sg_mp *p;
	struct rec r;
	size_t at, i, n, fed;

	assert_non_null(buf);
	memset(&r, 0, sizeof(r));
	r.hash_only = 1;
	r.h = 0xcbf29ce484222325ULL;
	assert_non_null(p = sg_mp_new("multipart/form-data; boundary="
	    BIG_BND, &cbs, &r, NULL, 0));
	for (at = 0; at < total; at += n) {
		n = total - at < chunk ? total - at : chunk;
		for (i = 0; i < n; i++) {
			size_t k = at + i;
			unsigned char c;

			if (k < hlen)
				c = (unsigned char)head[k];
			else if (k < hlen + BIG) {
				c = gen_byte(&g);
				want = (want ^ c) * 0x100000001b3ULL;
			} else
				c = (unsigned char)tail[k - hlen - BIG];
			buf[i] = c;
		}
		assert_int_equal(sg_mp_feed(p, buf, n), 0);
		fed = at + n <= hlen ? 0 : at + n - hlen;
		if (fed > BIG)
			fed = BIG;
		assert_true(r.total <= fed);
		if (fed - r.total > SG_MP_MAX_HELD)
			fail_msg("%zu bytes held back", fed - r.total);
	}
	assert_int_equal(sg_mp_finish(p), 0);
	assert_int_equal(r.events, 2);
	assert_int_equal(r.total, BIG);
	assert_true(r.h == want);
	sg_mp_free(p);
	free(buf);
}

static void
big_part_64k(void **state)
{
	(void)state;
	big_part(64 << 10);
}

static void
big_part_bytewise(void **state)
{
	(void)state;
	big_part(1);
}

/* Odd chunk sizes around the boundary's length. */
static void
big_part_odd_chunks(void **state)
{
	(void)state;
	big_part(7);
	big_part(4 + sizeof(BIG_BND) - 1);
	big_part(4093);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ctype_accepted),
		cmocka_unit_test(ctype_refused),
		cmocka_unit_test(openai_sdk_stream),
		cmocka_unit_test(undici_formdata),
		cmocka_unit_test(preamble_and_epilogue_ignored),
		cmocka_unit_test(empty_form_and_parts),
		cmocka_unit_test(lookalikes_are_content),
		cmocka_unit_test(no_content),
		cmocka_unit_test(transport_padding),
		cmocka_unit_test(bare_lf),
		cmocka_unit_test(truncated),
		cmocka_unit_test(many_parts),
		cmocka_unit_test(header_names_any_case),
		cmocka_unit_test(disposition_values),
		cmocka_unit_test(filenames_verbatim),
		cmocka_unit_test(filename_star),
		cmocka_unit_test(headers_refused),
		cmocka_unit_test(header_block_limit),
		cmocka_unit_test(callback_stops),
		cmocka_unit_test(errors_stick),
		cmocka_unit_test(big_part_64k),
		cmocka_unit_test(big_part_bytewise),
		cmocka_unit_test(big_part_odd_chunks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
