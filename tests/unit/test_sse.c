/*
 * core/upstream/sse: the incremental SSE parser. Every capture is checked against
 * the events it must give, then fed whole, split into two feeds at every
 * byte position, and one byte at a time: the events and the relayed bytes
 * must be the same whichever way the network cut the stream.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../core/upstream/sse.h"

#define MAX_EVENT (1 << 20)

/* ---- recording what the parser reports ---- */

struct ev {
	char	*name;
	char	*data;
	size_t	 datalen;
	int	 has_data;
	char	*raw;
	size_t	 rawlen;
	char	*cdata;		/* data read as a C string, as a consumer would */
};

struct rec {
	struct ev	*v;
	size_t		 n, cap;
	char		*raw;		/* every event's raw bytes, in order */
	size_t		 rawlen, rawcap;
	int		 stop_at;	/* callback returns -1 on this call (1-based) */
	int		 calls;
};

static char *
dupmem(const char *p, size_t n)
{
	char *d = malloc(n + 1);

	if (d != NULL) {
		memcpy(d, p, n);
		d[n] = '\0';
	}
	return d;
}

static int
on_event(void *arg, const struct sg_sse_event *e)
{
	struct rec *r = arg;
	struct ev *ev;

	r->calls++;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct ev *nv = realloc(r->v, cap * sizeof(*nv));

		if (nv == NULL)
			abort();
		r->v = nv;
		r->cap = cap;
	}
	ev = &r->v[r->n++];
	ev->name = dupmem(e->name, strlen(e->name));
	ev->data = dupmem(e->data, e->datalen);
	ev->datalen = e->datalen;
	ev->has_data = e->has_data;
	ev->raw = dupmem(e->raw, e->rawlen);
	ev->rawlen = e->rawlen;
	ev->cdata = strdup(e->data);
	if (ev->name == NULL || ev->data == NULL || ev->raw == NULL ||
	    ev->cdata == NULL)
		abort();
	if (r->rawlen + e->rawlen + 1 > r->rawcap) {
		size_t cap = r->rawcap ? r->rawcap : 1024;
		char *np;

		while (cap < r->rawlen + e->rawlen + 1)
			cap *= 2;
		if ((np = realloc(r->raw, cap)) == NULL)
			abort();
		r->raw = np;
		r->rawcap = cap;
	}
	memcpy(r->raw + r->rawlen, e->raw, e->rawlen);
	r->rawlen += e->rawlen;
	return r->stop_at != 0 && r->calls == r->stop_at ? -1 : 0;
}

static void
rec_free(struct rec *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		free(r->v[i].name);
		free(r->v[i].data);
		free(r->v[i].raw);
		free(r->v[i].cdata);
	}
	free(r->v);
	free(r->raw);
	memset(r, 0, sizeof(*r));
}

/* What the parser gave for one way of feeding, plus its leftovers. */
struct run {
	struct rec	 rec;
	int		 rc;		/* first non-zero feed result */
	char		*pending;
	size_t		 pendlen;
	int		 boundary;
};

static void
run_free(struct run *r)
{
	rec_free(&r->rec);
	free(r->pending);
	memset(r, 0, sizeof(*r));
}

/* Feed in[0..len) in pieces cut at cuts[0..ncuts) (increasing). */
static void
feed_cut(const char *in, size_t len, const size_t *cuts, size_t ncuts,
    struct run *out)
{
	struct sg_sse *p;
	const char *pend;
	size_t at = 0, i;

	memset(out, 0, sizeof(*out));
	p = sg_sse_new(MAX_EVENT, on_event, &out->rec);
	assert_non_null(p);
	for (i = 0; i <= ncuts && out->rc == 0; i++) {
		size_t end = i < ncuts ? cuts[i] : len;

		out->rc = sg_sse_feed(p, in + at, end - at);
		at = end;
	}
	pend = sg_sse_pending(p, &out->pendlen);
	out->pending = dupmem(pend != NULL ? pend : "", out->pendlen);
	out->boundary = sg_sse_at_boundary(p);
	sg_sse_free(p);
}

static void
feed_bytes(const char *in, size_t len, struct run *out)
{
	size_t *cuts = malloc((len + 1) * sizeof(*cuts)), i;

	assert_non_null(cuts);
	for (i = 0; i < len; i++)
		cuts[i] = i;
	feed_cut(in, len, cuts, len, out);
	free(cuts);
}

/* The relayed bytes plus what is pending are the input, exactly. */
static int
run_conserves(const struct run *r, const char *in, size_t len)
{
	return r->rc == 0 && r->rec.rawlen + r->pendlen == len &&
	    (r->rec.rawlen == 0 || memcmp(r->rec.raw, in, r->rec.rawlen) == 0) &&
	    memcmp(r->pending, in + r->rec.rawlen, r->pendlen) == 0;
}

static int
runs_equal(const struct run *a, const struct run *b)
{
	size_t i;

	if (a->rc != b->rc || a->rec.n != b->rec.n ||
	    a->rec.rawlen != b->rec.rawlen ||
	    memcmp(a->rec.raw, b->rec.raw, a->rec.rawlen) != 0 ||
	    a->pendlen != b->pendlen ||
	    memcmp(a->pending, b->pending, a->pendlen) != 0 ||
	    a->boundary != b->boundary)
		return 0;
	for (i = 0; i < a->rec.n; i++) {
		const struct ev *x = &a->rec.v[i], *y = &b->rec.v[i];

		if (strcmp(x->name, y->name) != 0 || x->has_data != y->has_data ||
		    x->datalen != y->datalen ||
		    memcmp(x->data, y->data, x->datalen) != 0)
			return 0;
	}
	return 1;
}

/* ---- the expected parse of a capture ---- */

struct want {
	const char	*name;
	const char	*data;		/* NULL: has_data is 0 */
};

#define W_END { NULL, NULL }
#define W_COMMENT { "", NULL }

static void
check_events(const struct run *r, const struct want *w)
{
	size_t i;

	for (i = 0; w[i].name != NULL; i++) {
		const struct ev *e;

		if (i >= r->rec.n)
			fail_msg("only %zu events, want more (next: \"%s\")",
			    r->rec.n, w[i].name);
		e = &r->rec.v[i];
		if (strcmp(e->name, w[i].name) != 0)
			fail_msg("event %zu: name \"%s\", want \"%s\"", i,
			    e->name, w[i].name);
		if (w[i].data == NULL) {
			if (e->has_data)
				fail_msg("event %zu: has data \"%s\", want none",
				    i, e->data);
			continue;
		}
		if (!e->has_data)
			fail_msg("event %zu: no data, want \"%s\"", i, w[i].data);
		if (e->datalen != strlen(w[i].data) ||
		    memcmp(e->data, w[i].data, e->datalen) != 0)
			fail_msg("event %zu: data \"%s\", want \"%s\"", i,
			    e->data, w[i].data);
	}
	if (i != r->rec.n)
		fail_msg("%zu events, want %zu", r->rec.n, i);
}

/*
 * The whole check for one capture: the expected events from one feed,
 * then the same result for every two-feed split and for byte-by-byte.
 */
static void
check_capture(const char *in, size_t len, const struct want *w)
{
	struct run whole, other;
	size_t cut;

	feed_cut(in, len, NULL, 0, &whole);
	assert_int_equal(whole.rc, 0);
	check_events(&whole, w);
	if (!run_conserves(&whole, in, len))
		fail_msg("whole feed: raw bytes + pending != input");

	for (cut = 0; cut <= len; cut++) {
		feed_cut(in, len, &cut, 1, &other);
		if (!run_conserves(&other, in, len) || !runs_equal(&whole, &other)) {
			run_free(&other);
			run_free(&whole);
			fail_msg("split at byte %zu of %zu differs from one feed",
			    cut, len);
		}
		run_free(&other);
	}

	feed_bytes(in, len, &other);
	if (!run_conserves(&other, in, len) || !runs_equal(&whole, &other)) {
		run_free(&other);
		run_free(&whole);
		fail_msg("byte-by-byte feed differs from one feed");
	}
	run_free(&other);
	run_free(&whole);
}

#define CHECK(capture, want) check_capture(capture, sizeof(capture) - 1, want)

/* ---- captures ---- */

/* Responses API: event: + data:, no [DONE] (openai-shapes §5.4). */
#define RESP_CREATED "{\"type\":\"response.created\",\"sequence_number\":0," \
	"\"response\":{\"id\":\"resp_abc\",\"object\":\"response\"," \
	"\"status\":\"in_progress\",\"model\":\"gpt-4.1\",\"output\":[]," \
	"\"tools\":[{\"type\":\"code_interpreter\",\"container\":" \
	"{\"type\":\"auto\"}}]}}"
#define RESP_ADDED "{\"type\":\"response.output_item.added\"," \
	"\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"ci_abc\"," \
	"\"type\":\"code_interpreter_call\",\"status\":\"in_progress\"," \
	"\"code\":\"\",\"container_id\":\"cntr_abc\",\"outputs\":[]}}"
#define RESP_DELTA "{\"type\":\"response.code_interpreter_call_code.delta\"," \
	"\"sequence_number\":2,\"output_index\":0,\"item_id\":\"ci_abc\"," \
	"\"delta\":\"print(1+1)\\n\"}"
#define RESP_TEXT "{\"type\":\"response.output_text.delta\"," \
	"\"sequence_number\":3,\"item_id\":\"msg_abc\",\"output_index\":1," \
	"\"content_index\":0,\"delta\":\"The answer is 2.\",\"logprobs\":[]}"
#define RESP_DONE "{\"type\":\"response.completed\",\"sequence_number\":4," \
	"\"response\":{\"id\":\"resp_abc\",\"object\":\"response\"," \
	"\"status\":\"completed\",\"usage\":{\"input_tokens\":10," \
	"\"output_tokens\":5,\"total_tokens\":15}}}"

static const char responses_lf[] =
	"event: response.created\n"
	"data: " RESP_CREATED "\n\n"
	"event: response.output_item.added\n"
	"data: " RESP_ADDED "\n\n"
	"event: response.code_interpreter_call_code.delta\n"
	"data: " RESP_DELTA "\n\n"
	"event: response.output_text.delta\n"
	"data: " RESP_TEXT "\n\n"
	"event: response.completed\n"
	"data: " RESP_DONE "\n\n";

static const char responses_crlf[] =
	"event: response.created\r\n"
	"data: " RESP_CREATED "\r\n\r\n"
	"event: response.output_item.added\r\n"
	"data: " RESP_ADDED "\r\n\r\n"
	"event: response.code_interpreter_call_code.delta\r\n"
	"data: " RESP_DELTA "\r\n\r\n"
	"event: response.output_text.delta\r\n"
	"data: " RESP_TEXT "\r\n\r\n"
	"event: response.completed\r\n"
	"data: " RESP_DONE "\r\n\r\n";

static const char responses_cr[] =
	"event: response.created\r"
	"data: " RESP_CREATED "\r\r"
	"event: response.output_item.added\r"
	"data: " RESP_ADDED "\r\r"
	"event: response.code_interpreter_call_code.delta\r"
	"data: " RESP_DELTA "\r\r"
	"event: response.output_text.delta\r"
	"data: " RESP_TEXT "\r\r"
	"event: response.completed\r"
	"data: " RESP_DONE "\r\r";

static const struct want responses_want[] = {
	{ "response.created", RESP_CREATED },
	{ "response.output_item.added", RESP_ADDED },
	{ "response.code_interpreter_call_code.delta", RESP_DELTA },
	{ "response.output_text.delta", RESP_TEXT },
	{ "response.completed", RESP_DONE },
	W_END
};

/* Chat Completions: data-only, ends in [DONE] (openai-shapes §6.3). */
#define CHUNK(delta, finish) "{\"id\":\"chatcmpl-D8Z5oo6uDh67AD85p73ksdT1KxhE0\"," \
	"\"object\":\"chat.completion.chunk\",\"created\":1770933892," \
	"\"model\":\"gpt-4.1-nano-2025-04-14\",\"choices\":[{\"index\":0," \
	"\"delta\":" delta ",\"logprobs\":null,\"finish_reason\":" finish \
	"}],\"usage\":null}"
#define CHAT1 CHUNK("{\"role\":\"assistant\",\"content\":\"\"}", "null")
#define CHAT2 CHUNK("{\"content\":\"Hello\"}", "null")
#define CHAT3 CHUNK("{}", "\"stop\"")

static const char chat_stream[] =
	"data: " CHAT1 "\n\n"
	"data: " CHAT2 "\n\n"
	"data: " CHAT3 "\n\n"
	"data: [DONE]\n\n";

static const struct want chat_want[] = {
	{ "", CHAT1 }, { "", CHAT2 }, { "", CHAT3 }, { "", "[DONE]" }, W_END
};

/* Keepalive comments between (and inside) events. */
static const char comments[] =
	": keepalive\n\n"
	"event: response.created\n"
	": a comment inside an event\n"
	"data: {\"a\":1}\n\n"
	":\n\n"
	": keepalive\n"
	": another\n\n"
	"data: {\"b\":2}\n\n";

static const struct want comments_want[] = {
	W_COMMENT,
	{ "response.created", "{\"a\":1}" },
	W_COMMENT,
	W_COMMENT,
	{ "", "{\"b\":2}" },
	W_END
};

/* Several data lines join with "\n"; an empty one adds an empty line. */
static const char multiline[] =
	"event: message\n"
	"data: line one\n"
	"data: line two\n"
	"data:\n"
	"data: line four\n\n"
	"data\n\n"
	"data: {\n"
	"data:   \"k\": 1\n"
	"data: }\n\n";

static const struct want multiline_want[] = {
	{ "message", "line one\nline two\n\nline four" },
	{ "", "" },
	{ "", "{\n  \"k\": 1\n}" },
	W_END
};

/* One space after the colon is stripped, no more; none needed. */
static const char nospace[] =
	"event:ping\n"
	"data:{\"x\":1}\n\n"
	"data:  two spaces\n\n"
	"event:\tdone\n"
	"data:a:b: c\n\n";

static const struct want nospace_want[] = {
	{ "ping", "{\"x\":1}" },
	{ "", " two spaces" },
	{ "\tdone", "a:b: c" },
	W_END
};

/* Every line ending in one stream, "\r\r\n" and "\n\r" included. */
static const char mixed[] =
	"event: a\r\n"
	"data: 1\r\r\n"		/* "\r" ends the data line, "\r\n" the event */
	"data: 2\n\r"		/* "\n" ends the line, "\r" the event */
	"data: 3\r\n\n"
	"event: b\r"
	"data: 4\r\n\r";

static const struct want mixed_want[] = {
	{ "a", "1" }, { "", "2" }, { "", "3" }, { "b", "4" }, W_END
};

/* Unknown fields (id:, retry:, other) are ignored but relayed. */
static const char fields[] =
	"id: 7\n"
	"retry: 1000\n"
	"foo: bar\n"
	"data: x\n\n"
	"id: 8\n\n";

static const struct want fields_want[] = {
	{ "", "x" }, W_COMMENT, W_END
};

/* Multi-byte UTF-8 and a JSON surrogate-pair escape. */
#define UTF8_JSON "{\"type\":\"response.output_text.delta\"," \
	"\"delta\":\"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e " \
	"\xf0\x9f\x98\x80 \\uD83D\\uDE00 \\u00e9\"}"

static const char utf8[] =
	"event: response.output_text.delta\n"
	"data: " UTF8_JSON "\n\n"
	"event: x\xc3\xa9\n"
	"data: \xf0\x9f\x98\x80\n\n";

static const struct want utf8_want[] = {
	{ "response.output_text.delta", UTF8_JSON },
	{ "x\xc3\xa9", "\xf0\x9f\x98\x80" },
	W_END
};

/* ---- tests ---- */

static void
capture_responses_lf(void **state)
{
	(void)state;
	CHECK(responses_lf, responses_want);
}

static void
capture_responses_crlf(void **state)
{
	(void)state;
	CHECK(responses_crlf, responses_want);
}

static void
capture_responses_cr(void **state)
{
	(void)state;
	CHECK(responses_cr, responses_want);
}

static void
capture_chat_done(void **state)
{
	(void)state;
	CHECK(chat_stream, chat_want);
}

static void
capture_comments(void **state)
{
	(void)state;
	CHECK(comments, comments_want);
}

static void
capture_multiline_data(void **state)
{
	(void)state;
	CHECK(multiline, multiline_want);
}

static void
capture_no_space_after_colon(void **state)
{
	(void)state;
	CHECK(nospace, nospace_want);
}

static void
capture_mixed_line_endings(void **state)
{
	(void)state;
	CHECK(mixed, mixed_want);
}

static void
capture_unknown_fields(void **state)
{
	(void)state;
	CHECK(fields, fields_want);
}

static void
capture_utf8(void **state)
{
	(void)state;
	CHECK(utf8, utf8_want);
}

static void
utf8_data_decodes(void **state)
{
	/* The data of the UTF-8 event is the JSON it was, escapes intact. */
	struct run r;
	json_error_t je;
	json_t *j;

	(void)state;
	feed_cut(utf8, sizeof(utf8) - 1, NULL, 0, &r);
	assert_true(r.rec.n >= 1);
	j = json_loads(r.rec.v[0].data, 0, &je);
	run_free(&r);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "delta")),
	    "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80 "
	    "\xf0\x9f\x98\x80 \xc3\xa9");
	json_decref(j);
}

static void
raw_is_each_event_verbatim(void **state)
{
	/* With "\n" endings each event's raw is exactly its own bytes, so a
	 * relay that forwards raw event by event is faithful. */
	static const char *const want[] = {
		"event: response.created\ndata: " RESP_CREATED "\n\n",
		"event: response.output_item.added\ndata: " RESP_ADDED "\n\n",
		"event: response.code_interpreter_call_code.delta\ndata: "
		    RESP_DELTA "\n\n",
		"event: response.output_text.delta\ndata: " RESP_TEXT "\n\n",
		"event: response.completed\ndata: " RESP_DONE "\n\n",
	};
	struct run r;
	size_t i;

	(void)state;
	feed_bytes(responses_lf, sizeof(responses_lf) - 1, &r);
	assert_int_equal(r.rec.n, 5);
	for (i = 0; i < 5; i++) {
		assert_int_equal(r.rec.v[i].rawlen, strlen(want[i]));
		assert_memory_equal(r.rec.v[i].raw, want[i], strlen(want[i]));
	}
	assert_int_equal(r.pendlen, 0);
	run_free(&r);
}

static void
crlf_split_across_feeds(void **state)
{
	/* "\r" | "\n" | "\r" | "\n": one event, no empty extra one. */
	struct rec rec = { 0 };
	struct sg_sse *p = sg_sse_new(MAX_EVENT, on_event, &rec);
	size_t len;

	(void)state;
	assert_non_null(p);
	assert_int_equal(sg_sse_feed(p, "data: a\r", 8), 0);
	assert_int_equal(sg_sse_feed(p, "\n", 1), 0);
	assert_int_equal(rec.n, 0);
	assert_int_equal(sg_sse_feed(p, "\r", 1), 0);
	assert_int_equal(rec.n, 1);
	assert_int_equal(sg_sse_feed(p, "\n", 1), 0);
	assert_int_equal(rec.n, 1);
	assert_string_equal(rec.v[0].data, "a");
	/* The next event follows without any phantom in between. */
	assert_int_equal(sg_sse_feed(p, "data: b\r", 8), 0);
	assert_int_equal(sg_sse_feed(p, "\n\r", 2), 0);
	assert_int_equal(sg_sse_feed(p, "\n", 1), 0);
	assert_int_equal(rec.n, 2);
	assert_string_equal(rec.v[1].data, "b");
	assert_true(rec.v[1].has_data);
	sg_sse_pending(p, &len);
	assert_int_equal(rec.rawlen + len, 8 + 1 + 1 + 1 + 8 + 2 + 1);
	sg_sse_free(p);
	rec_free(&rec);
}

static void
empty_feed_is_harmless(void **state)
{
	struct rec rec = { 0 };
	struct sg_sse *p = sg_sse_new(MAX_EVENT, on_event, &rec);

	(void)state;
	assert_non_null(p);
	assert_int_equal(sg_sse_feed(p, "", 0), 0);
	assert_int_equal(sg_sse_feed(p, "data: a\r", 8), 0);
	assert_int_equal(sg_sse_feed(p, "", 0), 0);
	assert_int_equal(sg_sse_feed(p, "\n\n", 2), 0);
	assert_int_equal(rec.n, 1);
	assert_string_equal(rec.v[0].data, "a");
	sg_sse_free(p);
	rec_free(&rec);
}

static void
event_larger_than_max_fails(void **state)
{
	struct rec rec = { 0 };
	struct sg_sse *p = sg_sse_new(64, on_event, &rec);
	char big[300];

	(void)state;
	assert_non_null(p);
	memcpy(big, "data: ", 6);
	memset(big + 6, 'x', sizeof(big) - 6 - 2);
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = '\n';
	assert_int_equal(sg_sse_feed(p, big, sizeof(big)), -1);
	assert_int_equal(rec.n, 0);
	sg_sse_free(p);
	rec_free(&rec);
}

static void
event_larger_than_max_fails_bytewise(void **state)
{
	/* The limit holds however the big event arrives. */
	struct rec rec = { 0 };
	struct sg_sse *p = sg_sse_new(64, on_event, &rec);
	size_t i;
	int rc = 0;

	(void)state;
	assert_non_null(p);
	rc = sg_sse_feed(p, "data: ", 6);
	for (i = 0; i < 200 && rc == 0; i++)
		rc = sg_sse_feed(p, "y", 1);
	assert_int_equal(rc, -1);
	assert_true(i <= 64);
	assert_int_equal(rec.n, 0);
	sg_sse_free(p);
	rec_free(&rec);
}

static void
max_is_per_event(void **state)
{
	/* Many small events, far more than max in total, all pass. */
	struct rec rec = { 0 };
	struct sg_sse *p = sg_sse_new(64, on_event, &rec);
	int i;

	(void)state;
	assert_non_null(p);
	for (i = 0; i < 100; i++)
		assert_int_equal(sg_sse_feed(p, "event: e\ndata: 0123456789\n\n",
		    27), 0);
	assert_int_equal(rec.n, 100);
	sg_sse_free(p);
	rec_free(&rec);
}

static void
callback_stop_stops_feed(void **state)
{
	struct rec rec = { 0 };
	struct sg_sse *p = sg_sse_new(MAX_EVENT, on_event, &rec);

	(void)state;
	assert_non_null(p);
	rec.stop_at = 2;
	assert_int_equal(sg_sse_feed(p, "data: 1\n\ndata: 2\n\ndata: 3\n\n",
	    27), -1);
	assert_int_equal(rec.calls, 2);
	assert_int_equal(rec.n, 2);
	assert_string_equal(rec.v[1].data, "2");
	sg_sse_free(p);
	rec_free(&rec);
}

static void
at_boundary_tracks_events(void **state)
{
	struct rec rec = { 0 };
	struct sg_sse *p = sg_sse_new(MAX_EVENT, on_event, &rec);

	(void)state;
	assert_non_null(p);
	assert_true(sg_sse_at_boundary(p));
	sg_sse_feed(p, "event: a\n", 9);
	assert_false(sg_sse_at_boundary(p));
	sg_sse_feed(p, "data: x", 7);
	assert_false(sg_sse_at_boundary(p));
	sg_sse_feed(p, "\n", 1);
	assert_false(sg_sse_at_boundary(p));
	sg_sse_feed(p, "\n", 1);
	assert_true(sg_sse_at_boundary(p));
	/* "\r\n" endings: between events after the blank line's "\r"... */
	sg_sse_feed(p, "data: y\r\n\r", 10);
	assert_true(sg_sse_at_boundary(p));
	/* ...and still after its "\n". */
	sg_sse_feed(p, "\n", 1);
	assert_true(sg_sse_at_boundary(p));
	sg_sse_feed(p, "d", 1);
	assert_false(sg_sse_at_boundary(p));
	sg_sse_feed(p, "ata: z\r", 7);
	assert_false(sg_sse_at_boundary(p));
	sg_sse_feed(p, "\n", 1);
	assert_false(sg_sse_at_boundary(p));
	assert_int_equal(rec.n, 2);
	sg_sse_free(p);
	rec_free(&rec);
}

static void
pending_holds_unfinished_event(void **state)
{
	static const char in[] = "data: done\n\nevent: e\ndata: partial";
	struct run r;

	(void)state;
	feed_cut(in, sizeof(in) - 1, NULL, 0, &r);
	assert_int_equal(r.rec.n, 1);
	assert_false(r.boundary);
	assert_int_equal(r.pendlen, strlen("event: e\ndata: partial"));
	assert_memory_equal(r.pending, "event: e\ndata: partial", r.pendlen);
	run_free(&r);
}

static void
data_is_nul_ended_after_comment(void **state)
{
	/* A keepalive after a data event: its data must read as "", not as
	 * the previous event's data (a consumer doing strcmp(data, "[DONE]")
	 * or json_loads(data) on every event would see it twice). */
	static const char in[] = "data: {\"a\":1}\n\n: keepalive\n\n";
	struct run r;
	char seen[64];

	(void)state;
	feed_cut(in, sizeof(in) - 1, NULL, 0, &r);
	assert_int_equal(r.rec.n, 2);
	assert_false(r.rec.v[1].has_data);
	assert_int_equal(r.rec.v[1].datalen, 0);
	snprintf(seen, sizeof(seen), "%s", r.rec.v[1].cdata);
	run_free(&r);
	assert_string_equal(seen, "");
}

static void
name_does_not_leak_into_next_event(void **state)
{
	struct run r;
	static const char in[] = "event: first\ndata: 1\n\ndata: 2\n\n";

	(void)state;
	feed_cut(in, sizeof(in) - 1, NULL, 0, &r);
	assert_int_equal(r.rec.n, 2);
	assert_string_equal(r.rec.v[0].name, "first");
	assert_string_equal(r.rec.v[1].name, "");
	assert_string_equal(r.rec.v[1].data, "2");
	run_free(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(capture_responses_lf),
		cmocka_unit_test(capture_responses_crlf),
		cmocka_unit_test(capture_responses_cr),
		cmocka_unit_test(capture_chat_done),
		cmocka_unit_test(capture_comments),
		cmocka_unit_test(capture_multiline_data),
		cmocka_unit_test(capture_no_space_after_colon),
		cmocka_unit_test(capture_mixed_line_endings),
		cmocka_unit_test(capture_unknown_fields),
		cmocka_unit_test(capture_utf8),
		cmocka_unit_test(utf8_data_decodes),
		cmocka_unit_test(raw_is_each_event_verbatim),
		cmocka_unit_test(crlf_split_across_feeds),
		cmocka_unit_test(empty_feed_is_harmless),
		cmocka_unit_test(event_larger_than_max_fails),
		cmocka_unit_test(event_larger_than_max_fails_bytewise),
		cmocka_unit_test(max_is_per_event),
		cmocka_unit_test(callback_stop_stops_feed),
		cmocka_unit_test(at_boundary_tracks_events),
		cmocka_unit_test(pending_holds_unfinished_event),
		cmocka_unit_test(data_is_nul_ended_after_comment),
		cmocka_unit_test(name_does_not_leak_into_next_event),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
