/*
 * providers/: the stream parsers (e2b's NDJSON, OpenSandbox execd's JSON
 * lines), the line splitter and its output cap, the shape of a run's
 * result, the request bodies and URLs, handles, and provider names.
 *
 * Transcripts are written with ' for " (see q() below) so they read like
 * the wire; tests that need raw bytes spell them out.  Every transcript is
 * fed whole, split in two at every byte position, and one byte at a time:
 * the result must never depend on how the network cut the stream.
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

#include "../../providers/provider.h"
#include "../../providers/internal.h"
#include "../../lib/util.h"
#include "testutil.h"

typedef void (*line_fn)(struct sg_exec *, const char *, size_t);

/* ---------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------- */

#define q tu_q
#define qjson tu_qjson

static void
assert_json_equal(const json_t *got, const json_t *want, const char *what)
{
	char *g, *w;

	if (json_equal((json_t *)got, (json_t *)want))
		return;
	g = got != NULL ? json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY) :
	    NULL;
	w = json_dumps(want, JSON_SORT_KEYS | JSON_ENCODE_ANY);
	print_error("%s:\n   got: %s\n  want: %s\n", what, g ? g : "(null)",
	    w ? w : "(null)");
	free(g);
	free(w);
	fail();
}

/*
 * Feed text[0..len) to a fresh sg_exec through sg_lines: first `first`
 * bytes, then the rest in chunks of `step` bytes (0: the rest at once),
 * then sg_lines_finish. Returns sg_exec_json; *ended the end marker.
 */
static json_t *
feed(line_fn fn, const char *text, size_t len, size_t first, size_t step,
    int *ended)
{
	struct sg_exec r;
	struct sg_lines l = { .fn = fn, .res = &r };
	size_t at, n;
	json_t *j;

	sg_exec_init(&r, 0);
	assert_int_equal(sg_lines_feed(&l, text, first), 0);
	for (at = first; at < len; at += n) {
		n = step == 0 || len - at < step ? len - at : step;
		assert_int_equal(sg_lines_feed(&l, text + at, n), 0);
	}
	sg_lines_finish(&l);
	assert_null(l.line.p);
	j = sg_exec_json(&r);
	assert_non_null(j);
	*ended = r.ended;
	sg_exec_free(&r);
	return j;
}

/*
 * The run of text (whole) must equal want (JSON, ' for ") and want_ended;
 * so must every two-feed split and the byte-at-a-time feed.
 */
static void
check_stream(const char *label, line_fn fn, const char *text, size_t len,
    const char *want_text, int want_ended)
{
	json_t *want = qjson(want_text), *got;
	char what[160];
	size_t i;
	int ended;

	for (i = 0; i <= len + 1; i++) {
		if (i <= len) {
			got = feed(fn, text, len, i, 0, &ended);
			snprintf(what, sizeof(what), "%s, split at byte %zu of "
			    "%zu", label, i, len);
		} else {
			got = feed(fn, text, len, 0, 1, &ended);
			snprintf(what, sizeof(what), "%s, one byte at a time",
			    label);
		}
		/* i == 0 and i == len: fed whole. */
		assert_json_equal(got, want, what);
		if (ended != want_ended)
			fail_msg("%s: ended %d, want %d", what, ended, want_ended);
		json_decref(got);
	}
	json_decref(want);
}

/* check_stream of a transcript written with ' for ". */
static void
check_q(line_fn fn, const char *transcript, const char *want_text,
    int want_ended)
{
	char *t = q(transcript);

	check_stream("transcript", fn, t, strlen(t), want_text, want_ended);
	free(t);
}

/* One line straight to the parser (no splitter), ' for ". */
static void
line(struct sg_exec *r, line_fn fn, const char *text)
{
	char *t = q(text);

	fn(r, t, strlen(t));
	free(t);
}

/* One parse of a whole stream; caller frees the returned sg_exec_json. */
static json_t *
run_once(line_fn fn, const char *text, size_t len, int *ended)
{
	return feed(fn, text, len, len, 0, ended);
}

/*
 * execd framing variants of one stream. PLAIN as execd writes it;
 * DATA_SP "data: " before each event; DATA "data:" without the space;
 * SSE full SSE framing with event:/id:/retry: and ": comment" lines;
 * CRLF every "\n" as "\r\n".
 */
enum framing { PLAIN, DATA_SP, DATA, SSE, CRLF, NFRAMINGS };

static const char *const framing_names[] = {
	"plain", "data: prefix", "data: prefix without space",
	"SSE fields and comments", "CRLF",
};

/* New string: text re-framed. An unterminated last line stays so. */
static char *
reframe(const char *text, enum framing f)
{
	size_t cap = strlen(text) * 4 + 256, o = 0, n;
	char *out = malloc(cap);
	const char *p = text, *nl;
	int id = 0;

	assert_non_null(out);
	while (*p != '\0') {
		nl = strchr(p, '\n');
		n = nl != NULL ? (size_t)(nl - p) : strlen(p);
		if (n > 0 && f == SSE)
			o += (size_t)snprintf(out + o, cap - o, ": keepalive "
			    "comment\nevent: message\nid: %d\nretry: 3000\n", ++id);
		if (n > 0 && (f == DATA_SP || f == SSE))
			o += (size_t)snprintf(out + o, cap - o, "data: ");
		else if (n > 0 && f == DATA)
			o += (size_t)snprintf(out + o, cap - o, "data:");
		memcpy(out + o, p, n);
		o += n;
		if (nl == NULL)
			break;
		if (f == CRLF)
			out[o++] = '\r';
		out[o++] = '\n';
		p = nl + 1;
	}
	out[o] = '\0';
	return out;
}

/* check_stream of an execd transcript in every framing. */
static void
check_osb_framings(const char *transcript, const char *want_text,
    int want_ended)
{
	char *t = q(transcript), *v;
	int f;

	for (f = 0; f < NFRAMINGS; f++) {
		v = reframe(t, (enum framing)f);
		check_stream(framing_names[f], sg_exec_osb_line, v, strlen(v),
		    want_text, want_ended);
		free(v);
	}
	free(t);
}

/* The "stdout" of an sg_exec_json, with its length. */
static const char *
out_of(const json_t *j, const char *key, size_t *len)
{
	const json_t *s = json_object_get(j, key);

	assert_true(json_is_string(s));
	*len = json_string_length(s);
	return json_string_value(s);
}

/* A tool as core fills it from a config entry with nothing optional. */
static struct sg_tool
tool_of(enum sg_provider_kind k)
{
	struct sg_tool t;

	memset(&t, 0, sizeof(t));
	t.name = "python";
	t.provider = k;
	t.memory_mb = 1024;	/* config's default */
	t.disk_mb = 512;
	t.max_procs = 64;
	return t;
}

/* ---------------------------------------------------------------------
 * Transcripts
 * ------------------------------------------------------------------- */

/* e2b /execute, everything in one run (e2b-protocol.md §5.3). */
static const char e2b_full[] =
    "{'type': 'number_of_executions', 'execution_count': 3}\n"
    "{'type': 'stdout', 'text': 'hello\\n', 'timestamp': "
	"'2026-11-29T18:06:09.679137+00:00'}\n"
    "{'type': 'keepalive'}\n"
    "{'type': 'stdout', 'text': 'wor', 'timestamp': "
	"'2026-11-29T18:06:09.680001+00:00'}\n"
    "{'type': 'stdout', 'text': 'ld \\u00e9\\n', 'timestamp': "
	"'2026-11-29T18:06:09.680002+00:00'}\n"
    "\n"
    "{'type': 'stderr', 'text': 'warn: careful\\n', 'timestamp': "
	"'2026-11-29T18:06:09.809639+00:00'}\n"
    "this line is not JSON {'type': 'stdout', 'text': 'NOT OUTPUT'}\n"
    "['stdout', 'an array is not an event']\n"
    "{'type': 'some_future_type', 'text': 'NOT OUTPUT'}\n"
    "{'type': 7, 'text': 'NOT OUTPUT'}\n"
    "{'type': 'result', 'text': '<IPython.core.display.Image object>', "
	"'png': 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
	"nGNgYGBgAAAABQABh6FO1AAAAABJRU5ErkJggg==\\n', 'extra': {}, "
	"'is_main_result': false}\n"
    "{'type': 'result', 'text': 'custom', 'extra': "
	"{'application/x-custom': 'zzz'}, 'is_main_result': false}\n"
    "{'type': 'result', 'text': '[1, 2]', 'json': {'a': [1, 2]}, "
	"'extra': {}, 'is_main_result': true}\n"
    "{'type': 'error', 'name': 'ZeroDivisionError', 'value': "
	"'division by zero', 'traceback': 'Traceback (most recent call "
	"last):\\n  Cell In[3], line 1\\nZeroDivisionError: division by "
	"zero'}\n"
    "{'type': 'error', 'name': 'SecondError', 'value': 'only the first "
	"error counts', 'traceback': ''}\n"
    "{'type': 'end_of_execution'}\n";

static const char e2b_full_want[] =
    "{'object': 'code_execution',"
    " 'stdout': 'hello\\nworld \\u00e9\\n',"
    " 'stderr': 'warn: careful\\n',"
    " 'results': ["
    "  {'text': '<IPython.core.display.Image object>', 'png': "
	"'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
	"nGNgYGBgAAAABQABh6FO1AAAAABJRU5ErkJggg==', 'extra': {}, "
	"'is_main_result': false},"
    "  {'text': 'custom', 'extra': {'application/x-custom': 'zzz'}, "
	"'is_main_result': false},"
    "  {'text': '[1, 2]', 'json': {'a': [1, 2]}, 'extra': {}, "
	"'is_main_result': true}],"
    " 'error': {'name': 'ZeroDivisionError', 'value': 'division by zero', "
	"'traceback': 'Traceback (most recent call last):\\n  Cell In[3], "
	"line 1\\nZeroDivisionError: division by zero'},"
    " 'execution_count': 3}";

/* A stream cut before end_of_execution, its last line unterminated. */
static const char e2b_cut[] =
    "{'type': 'number_of_executions', 'execution_count': 1}\n"
    "{'type': 'stdout', 'text': 'partial\\n'}\n"
    "{'type': 'stdout', 'text': 'tail'}";

static const char e2b_cut_want[] =
    "{'object': 'code_execution', 'stdout': 'partial\\ntail', "
    "'stderr': '', 'results': [], 'error': null, 'execution_count': 1}";

/* execd /code for "print('hello'); fig" with a rich last value
 * (opensandbox-protocol.md §2.5-§2.7): ping also after the end. */
static const char osb_result[] =
    "{'type':'init','text':'8d3f0c1e2a7b4c5d9e0f1a2b3c4d5e6f',"
	"'timestamp':1718206536101}\n"
    "\n"
    "{'type':'ping','text':'pong','timestamp':1718206536102}\n"
    "\n"
    "{'type':'stdout','text':'hello\\n','timestamp':1718206536180}\n"
    "\n"
    "{'type':'stderr','text':'careful\\n','timestamp':1718206536181}\n"
    "\n"
    "{'type':'execution_count','execution_count':7,"
	"'timestamp':1718206536189}\n"
    "\n"
    "{'type':'result','timestamp':1718206536190,'results':{"
	"'application/x-unknown':{'k':[1,2]},"
	"'image/png':'iVBORw0KGgoAAAANSUhEUgAA\\n',"
	"'text':'\\u003cFigure size 640x480 with 1 Axes\\u003e',"
	"'text/html':'\\u003cdiv\\u003et\\u003c/div\\u003e\\n'}}\n"
    "\n"
    "{'type':'execution_complete','execution_time':81,"
	"'timestamp':1718206536191}\n"
    "\n"
    "{'type':'ping','text':'pong','timestamp':1718206536192}\n"
    "\n";

static const char osb_result_want[] =
    "{'object': 'code_execution', 'stdout': 'hello\\n', "
    "'stderr': 'careful\\n', 'results': [{"
	"'text': '<Figure size 640x480 with 1 Axes>', "
	"'png': 'iVBORw0KGgoAAAANSUhEUgAA', "
	"'html': '<div>t</div>\\n', "
	"'extra': {'application/x-unknown': {'k': [1, 2]}}, "
	"'is_main_result': true}], "
    "'error': null, 'execution_count': 7}";

/* execd for "print('before'); 1/0": status, error, then complete. */
static const char osb_error[] =
    "{'type':'init','text':'8d3f0c1e2a7b4c5d9e0f1a2b3c4d5e6f',"
	"'timestamp':1}\n"
    "\n"
    "{'type':'ping','text':'pong','timestamp':2}\n"
    "\n"
    "{'type':'stdout','text':'before\\n','timestamp':3}\n"
    "\n"
    "{'type':'status','text':'error','timestamp':4}\n"
    "\n"
    "{'type':'error','timestamp':5,'error':{'ename':'ZeroDivisionError',"
	"'evalue':'division by zero','traceback':["
	"'\\u001b[0;31m------\\u001b[0m',"
	"'\\u001b[0;31mZeroDivisionError\\u001b[0m  Traceback (most recent "
	"call last)',"
	"'ZeroDivisionError: division by zero']}}\n"
    "\n"
    "{'type':'execution_complete','timestamp':6}\n"
    "\n"
    "{'type':'ping','text':'pong','timestamp':7}\n"
    "\n";

static const char osb_error_want[] =
    "{'object': 'code_execution', 'stdout': 'before\\n', 'stderr': '', "
    "'results': [], 'error': {'name': 'ZeroDivisionError', "
	"'value': 'division by zero', 'traceback': "
	"'\\u001b[0;31m------\\u001b[0m\\n"
	"\\u001b[0;31mZeroDivisionError\\u001b[0m  Traceback (most recent "
	"call last)\\nZeroDivisionError: division by zero'}, "
    "'execution_count': null}";

/* A shell-style failure: traceback null, no execution_complete. */
static const char osb_tb_null[] =
    "{'type':'init','text':'cmd','timestamp':1}\n"
    "\n"
    "{'type':'stdout','text':'x\\n','timestamp':2}\n"
    "\n"
    "{'type':'error','timestamp':3,'error':{'ename':'CommandExecError',"
	"'evalue':'2','traceback':null}}\n"
    "\n";

static const char osb_tb_null_want[] =
    "{'object': 'code_execution', 'stdout': 'x\\n', 'stderr': '', "
    "'results': [], 'error': {'name': 'CommandExecError', 'value': '2', "
	"'traceback': ''}, 'execution_count': null}";

/* A busy context: a typeless error object as the final unterminated
 * line, no trailing blank line. */
static const char osb_busy[] =
    "{'type':'init','text':'8d3f0c1e2a7b4c5d9e0f1a2b3c4d5e6f',"
	"'timestamp':1}\n"
    "\n"
    "{'type':'ping','text':'pong','timestamp':2}\n"
    "\n"
    "{'code':'RUNTIME_ERROR','message':'error running codes session is "
	"busy'}";

static const char osb_busy_want[] =
    "{'object': 'code_execution', 'stdout': '', 'stderr': '', "
    "'results': [], 'error': {'name': 'RUNTIME_ERROR', "
	"'value': 'error running codes session is busy', 'traceback': ''}, "
    "'execution_count': null}";

/* execution_count as a numeric string. */
static const char osb_count_string[] =
    "{'type':'init','text':'c','timestamp':1}\n"
    "\n"
    "{'type':'execution_count','execution_count':'12','timestamp':2}\n"
    "\n"
    "{'type':'result','results':{'text':'4'},'timestamp':3}\n"
    "\n"
    "{'type':'execution_complete','timestamp':4}\n"
    "\n";

static const char osb_count_string_want[] =
    "{'object': 'code_execution', 'stdout': '', 'stderr': '', "
    "'results': [{'text': '4', 'extra': {}, 'is_main_result': true}], "
    "'error': null, 'execution_count': 12}";

/* ---------------------------------------------------------------------
 * e2b NDJSON
 * ------------------------------------------------------------------- */

static void
e2b_full_transcript(void **state)
{
	(void)state;
	check_q(sg_exec_e2b_line, e2b_full, e2b_full_want, 1);
}

/* The same, looked at piece by piece, for clearer failures. */
static void
e2b_full_details(void **state)
{
	char *t = q(e2b_full);
	const json_t *res, *r;
	const char *png;
	json_t *j;
	size_t i;
	int ended;

	(void)state;
	j = run_once(sg_exec_e2b_line, t, strlen(t), &ended);
	assert_int_equal(ended, 1);
	assert_string_equal(json_string_value(json_object_get(j, "stdout")),
	    "hello\nworld \xc3\xa9\n");
	assert_not_contains(json_string_value(json_object_get(j, "stdout")),
	    "NOT OUTPUT");
	assert_not_contains(json_string_value(json_object_get(j, "stderr")),
	    "NOT OUTPUT");
	res = json_object_get(j, "results");
	assert_int_equal(json_array_size(res), 3);
	json_array_foreach(res, i, r)
		assert_null(json_object_get(r, "type"));
	png = json_string_value(json_object_get(json_array_get(res, 0), "png"));
	/* The server's trailing "\n" is gone: a data URL holds none. */
	assert_non_null(png);
	assert_null(strpbrk(png, "\n\r "));
	assert_true(json_is_true(json_object_get(json_array_get(res, 2),
	    "is_main_result")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    json_array_get(res, 1), "extra"), "application/x-custom")), "zzz");
	/* The first error, not the second. */
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    j, "error"), "name")), "ZeroDivisionError");
	assert_int_equal(json_integer_value(json_object_get(j,
	    "execution_count")), 3);
	json_decref(j);
	free(t);
}

static void
e2b_without_end_marker(void **state)
{
	(void)state;
	check_q(sg_exec_e2b_line, e2b_cut, e2b_cut_want, 0);
}

/* The unterminated last line is processed by sg_lines_finish, and not
 * before it. */
static void
e2b_last_line_needs_finish(void **state)
{
	char *t = q("{'type': 'stdout', 'text': 'a\\n'}\n"
	    "{'type': 'end_of_execution'}");
	struct sg_exec r;
	struct sg_lines l = { .fn = sg_exec_e2b_line, .res = &r };

	(void)state;
	sg_exec_init(&r, 0);
	assert_int_equal(sg_lines_feed(&l, t, strlen(t)), 0);
	assert_int_equal(r.out.len, 2);
	assert_int_equal(r.ended, 0);
	sg_lines_finish(&l);
	assert_int_equal(r.ended, 1);
	assert_null(l.line.p);
	assert_int_equal(l.line.len, 0);
	/* A second finish has nothing left to process. */
	sg_lines_finish(&l);
	assert_int_equal(r.out.len, 2);
	sg_exec_free(&r);
	free(t);
}

/* Lines far longer than the splitter's first buffer, cut anywhere. */
static void
e2b_long_lines(void **state)
{
	enum { N = 3000 };
	char *t = malloc(2 * N + 256), *want = malloc(2 * N + 256), *p;
	size_t i;

	(void)state;
	assert_non_null(t);
	assert_non_null(want);
	p = t + sprintf(t, "{'type': 'stdout', 'text': '");
	for (i = 0; i < N; i++)
		*p++ = (char)('a' + i % 26);
	p += sprintf(p, "\\n'}\n{'type': 'stderr', 'text': '");
	for (i = 0; i < N; i++)
		*p++ = 'e';
	sprintf(p, "'}\n{'type': 'end_of_execution'}\n");
	p = want + sprintf(want, "{'object': 'code_execution', 'stdout': '");
	for (i = 0; i < N; i++)
		*p++ = (char)('a' + i % 26);
	p += sprintf(p, "\\n', 'stderr': '");
	for (i = 0; i < N; i++)
		*p++ = 'e';
	sprintf(p, "', 'results': [], 'error': null, 'execution_count': null}");
	check_q(sg_exec_e2b_line, t, want, 1);
	free(t);
	free(want);
}

/* An error line missing its fields still gives a complete error. */
static void
e2b_error_defaults(void **state)
{
	(void)state;
	check_q(sg_exec_e2b_line, "{'type': 'error'}\n"
	    "{'type': 'end_of_execution'}\n",
	    "{'object': 'code_execution', 'stdout': '', 'stderr': '', "
	    "'results': [], 'error': {'name': 'Error', 'value': '', "
	    "'traceback': ''}, 'execution_count': null}", 1);
}

/* ---------------------------------------------------------------------
 * OpenSandbox execd
 * ------------------------------------------------------------------- */

static void
osb_result_stream(void **state)
{
	(void)state;
	check_osb_framings(osb_result, osb_result_want, 1);
}

static void
osb_error_stream(void **state)
{
	(void)state;
	check_osb_framings(osb_error, osb_error_want, 1);
}

static void
osb_traceback_null(void **state)
{
	(void)state;
	check_osb_framings(osb_tb_null, osb_tb_null_want, 1);
}

static void
osb_busy_final_line(void **state)
{
	(void)state;
	check_osb_framings(osb_busy, osb_busy_want, 1);
}

static void
osb_execution_count_string(void **state)
{
	(void)state;
	check_osb_framings(osb_count_string, osb_count_string_want, 1);
}

/* Without execution_complete (nor an error) the run has not ended. */
static void
osb_without_complete(void **state)
{
	(void)state;
	check_osb_framings("{'type':'init','text':'c','timestamp':1}\n\n"
	    "{'type':'stdout','text':'so far','timestamp':2}\n\n",
	    "{'object': 'code_execution', 'stdout': 'so far', 'stderr': '', "
	    "'results': [], 'error': null, 'execution_count': null}", 0);
}

/* ---------------------------------------------------------------------
 * The output cap
 * ------------------------------------------------------------------- */

/* Byte by byte: -1 exactly when the line that passes the cap ends; what
 * came before is kept. The cap counts output, not the lines around it. */
static void
cap_passed_not_before(void **state)
{
	static const char t[] =
	    "{\"type\": \"number_of_executions\", \"execution_count\": 3}\n"
	    "{\"type\": \"stdout\", \"text\": \"hello\\n\"}\n"
	    "{\"type\": \"keepalive\"}\n"
	    "{\"type\": \"stderr\", \"text\": \"1234\"}\n"
	    "{\"type\": \"stdout\", \"text\": \"x\"}\n";
	size_t len = strlen(t), i, last = len - strlen("{\"type\": "
	    "\"stdout\", \"text\": \"x\"}\n");
	struct sg_exec r;
	struct sg_lines l = { .fn = sg_exec_e2b_line, .res = &r };

	(void)state;
	sg_exec_init(&r, 10);
	for (i = 0; i < len - 1; i++)
		if (sg_lines_feed(&l, t + i, 1) != 0)
			fail_msg("-1 after %zu bytes, the cap is passed at %zu",
			    i + 1, len);
	assert_true(last < len - 1);
	assert_int_equal(sg_lines_feed(&l, t + len - 1, 1), -1);
	assert_int_equal(r.execution_count, 3);
	assert_string_equal(r.out.p, "hello\nx");
	assert_string_equal(r.err.p, "1234");
	sg_lines_finish(&l);
	sg_exec_free(&r);
}

/* Output sent as \uXXXX (e2b's server) or as raw UTF-8 (the local
 * kernel) costs the same: 3 bytes a character, decoded. */
static void
cap_counts_decoded_bytes(void **state)
{
	const int n = 1000;
	struct sg_buf esc = { 0 }, raw = { 0 };
	struct sg_exec r;
	int i, cut;

	(void)state;
	sg_buf_add(&esc, "{\"type\":\"stdout\",\"text\":\"", 25);
	sg_buf_add(&raw, "{\"type\":\"stdout\",\"text\":\"", 25);
	for (i = 0; i < n; i++) {
		sg_buf_add(&esc, "\\u65e5", 6);
		sg_buf_add(&raw, "\xe6\x97\xa5", 3);
	}
	sg_buf_add(&esc, "\"}\n", 3);
	sg_buf_add(&raw, "\"}\n", 3);
	for (cut = 0; cut < 2; cut++) {
		const struct sg_buf *b = cut ? &raw : &esc;
		struct sg_lines l = { .fn = sg_exec_e2b_line, .res = &r };

		sg_exec_init(&r, 3 * n);
		assert_int_equal(sg_lines_feed(&l, b->p, b->len), 0);
		assert_int_equal(r.out.len, 3 * n);
		sg_lines_finish(&l);
		sg_exec_free(&r);
		sg_exec_init(&r, 3 * n - 1);
		assert_int_equal(sg_lines_feed(&l, b->p, b->len), -1);
		sg_lines_finish(&l);
		sg_exec_free(&r);
	}
	free(esc.p);
	free(raw.p);
}

/* A line is held until it ends only up to what the most escaping
 * ("\u0000", six bytes for one) could make of a full cap, and a little
 * framing: padding costs nothing decoded, yet cannot grow without end.
 * Many short lines are no such line: only their output counts. */
static void
cap_bounds_a_line(void **state)
{
	static const char one[] = "{\"type\": \"stdout\", \"text\": \"x\", "
	    "\"timestamp\": \"2026-11-29T18:06:09.679137+00:00\"}\n";
	char pad[1000];
	struct sg_exec r;
	struct sg_lines l = { .fn = sg_exec_e2b_line, .res = &r };
	int i;

	(void)state;
	sg_exec_init(&r, 1000);
	for (i = 0; i < 1000; i++)
		assert_int_equal(sg_lines_feed(&l, one, strlen(one)), 0);
	assert_int_equal(r.out.len, 1000);
	sg_lines_finish(&l);
	sg_exec_free(&r);

	memset(pad, ' ', sizeof(pad));
	sg_exec_init(&r, 1000);
	for (i = 0; i < 6 + 24; i++)
		assert_int_equal(sg_lines_feed(&l, pad, sizeof(pad)), 0);
	assert_int_equal(sg_lines_feed(&l, pad, sizeof(pad)), -1);
	sg_lines_finish(&l);
	sg_exec_free(&r);
}

/* cap 0 means the default, 10 MiB. */
static void
cap_default(void **state)
{
	static const char abc[] = "{\"type\":\"stdout\",\"text\":\"abc\"}\n";
	static const char d[] = "{\"type\":\"stdout\",\"text\":\"d\"}\n";
	struct sg_exec r;
	struct sg_lines l = { .fn = sg_exec_e2b_line, .res = &r };

	(void)state;
	sg_exec_init(&r, 0);
	assert_int_equal(r.cap, 10u << 20);
	r.bytes = (10u << 20) - 3;	/* as if 10 MiB - 3 had been read */
	assert_int_equal(sg_lines_feed(&l, abc, strlen(abc)), 0);
	assert_int_equal(sg_lines_feed(&l, d, strlen(d)), -1);
	sg_lines_finish(&l);
	sg_exec_free(&r);
}

/* ---------------------------------------------------------------------
 * Invalid UTF-8
 * ------------------------------------------------------------------- */

/* Raw 0xff and a truncated 3-byte sequence inside JSON strings: the lines
 * are kept, their text repaired with U+FFFD. */
static const char bad_utf8_e2b[] =
    "{\"type\": \"stdout\", \"text\": \"ok \xff end\\n\"}\n"
    "{\"type\": \"stdout\", \"text\": \"a\xe2\x82z\\n\"}\n"
    "{\"type\": \"stderr\", \"text\": \"e \xff\"}\n"
    "{\"type\": \"end_of_execution\"}\n";

static void
check_bad_utf8(const json_t *j)
{
	const char *out, *err;
	size_t outlen, errlen;

	out = out_of(j, "stdout", &outlen);
	err = out_of(j, "stderr", &errlen);
	/* The first line: exactly one byte, one replacement. */
	assert_true(outlen > 12);
	assert_memory_equal(out, "ok \xef\xbf\xbd end\na\xef\xbf\xbd", 15);
	/* The second: the truncated sequence replaced, the text after it
	 * still there. */
	assert_memory_equal(out + outlen - 2, "z\n", 2);
	assert_null(memchr(out, '\xe2', outlen));
	assert_string_equal(err, "e \xef\xbf\xbd");
	assert_int_equal(errlen, 5);
}

static void
utf8_e2b_lines_repaired(void **state)
{
	json_t *want, *got;
	size_t i, len = sizeof(bad_utf8_e2b) - 1;
	int ended;

	(void)state;
	want = run_once(sg_exec_e2b_line, bad_utf8_e2b, len, &ended);
	assert_int_equal(ended, 1);
	check_bad_utf8(want);
	/* A cut inside the bad bytes must not change anything. */
	for (i = 0; i <= len + 1; i++) {
		got = i <= len ? feed(sg_exec_e2b_line, bad_utf8_e2b, len, i, 0,
		    &ended) : feed(sg_exec_e2b_line, bad_utf8_e2b, len, 0, 1,
		    &ended);
		assert_json_equal(got, want, "invalid UTF-8, cut");
		json_decref(got);
	}
	json_decref(want);
}

static void
utf8_osb_lines_repaired(void **state)
{
	static const char s[] =
	    "data: {\"type\":\"stdout\",\"text\":\"ok \xff end\\n\"}\n\n"
	    "{\"type\":\"stdout\",\"text\":\"a\xe2\x82z\\n\"}\n\n"
	    "{\"type\":\"stderr\",\"text\":\"e \xff\"}\n\n"
	    "{\"type\":\"execution_complete\"}\n\n";
	json_t *j;
	int ended;

	(void)state;
	j = run_once(sg_exec_osb_line, s, sizeof(s) - 1, &ended);
	assert_int_equal(ended, 1);
	check_bad_utf8(j);
	json_decref(j);
}

/* Output that holds invalid bytes (a cap that cut a character) still
 * gives the "stdout" and "stderr" keys, repaired. */
static void
utf8_exec_json_lossy(void **state)
{
	struct sg_exec r;
	json_t *j;

	(void)state;
	sg_exec_init(&r, 0);
	assert_int_equal(sg_buf_add(&r.out, "ab\xff" "cd", 5), 0);
	/* cut inside a character */
	assert_int_equal(sg_buf_add(&r.err, "x\xe2\x82", 3), 0);
	j = sg_exec_json(&r);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "stdout")),
	    "ab\xef\xbf\xbd" "cd");
	assert_true(json_is_string(json_object_get(j, "stderr")));
	assert_memory_equal(json_string_value(json_object_get(j, "stderr")),
	    "x\xef\xbf\xbd", 4);
	json_decref(j);
	sg_exec_free(&r);
}

/* A NUL inside the text (JSON "\u0000") is kept, not a terminator. */
static void
nul_in_text_kept(void **state)
{
	json_t *j;
	const char *out;
	size_t len;
	char *t = q("{'type': 'stdout', 'text': 'a\\u0000b'}\n");
	int ended;

	(void)state;
	j = run_once(sg_exec_e2b_line, t, strlen(t), &ended);
	out = out_of(j, "stdout", &len);
	assert_int_equal(len, 3);
	assert_memory_equal(out, "a\0b", 3);
	json_decref(j);
	free(t);
}

/* ---------------------------------------------------------------------
 * sg_exec_json's shape
 * ------------------------------------------------------------------- */

static void
exec_json_shape_empty(void **state)
{
	static const char *const keys[] = { "object", "stdout", "stderr",
	    "results", "error", "execution_count" };
	json_t *j, *want;
	struct sg_exec r;
	size_t i;

	(void)state;
	sg_exec_init(&r, 0);
	j = sg_exec_json(&r);
	assert_non_null(j);
	assert_int_equal(json_object_size(j), 6);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (json_object_get(j, keys[i]) == NULL)
			fail_msg("no key %s", keys[i]);
	want = qjson("{'object': 'code_execution', 'stdout': '', 'stderr': '', "
	    "'results': [], 'error': null, 'execution_count': null}");
	assert_json_equal(j, want, "empty run");
	json_decref(want);
	json_decref(j);
	sg_exec_free(&r);
}

/* Count 0 is a count; the json does not take r's parts away. */
static void
exec_json_shape_filled(void **state)
{
	json_t *j1, *j2, *want;
	struct sg_exec r;

	(void)state;
	sg_exec_init(&r, 0);
	r.execution_count = 0;
	line(&r, sg_exec_e2b_line, "{'type':'result','text':'1'}");
	line(&r, sg_exec_e2b_line, "{'type':'error','name':'E','value':'v',"
	    "'traceback':'t'}");
	j1 = sg_exec_json(&r);
	j2 = sg_exec_json(&r);
	want = qjson("{'object': 'code_execution', 'stdout': '', 'stderr': '', "
	    "'results': [{'text': '1'}], 'error': {'name': 'E', 'value': 'v', "
	    "'traceback': 't'}, 'execution_count': 0}");
	assert_json_equal(j1, want, "filled run");
	assert_json_equal(j2, want, "filled run, again");
	assert_int_equal(json_object_size(j1), 6);
	json_decref(j1);
	json_decref(j2);
	json_decref(want);
	/* r still owns its results and error. */
	assert_int_equal(json_array_size(r.results), 1);
	assert_non_null(r.error);
	sg_exec_free(&r);
}

/* ---------------------------------------------------------------------
 * Request bodies and URLs
 * ------------------------------------------------------------------- */

static void
check_body(json_t *got, const char *want_text, const char *what)
{
	json_t *want = qjson(want_text);

	assert_non_null(got);
	assert_json_equal(got, want, what);
	json_decref(want);
	json_decref(got);
}

static void
e2b_body_defaults(void **state)
{
	struct sg_tool t = tool_of(SG_PROVIDER_E2B);

	(void)state;
	check_body(sg_e2b_create_body(&t, "cntr_0123abcd", 660),
	    "{'templateID': 'code-interpreter-v1', 'timeout': 660, "
	    "'secure': true, 'allow_internet_access': false, "
	    "'metadata': {'sandgate_id': 'cntr_0123abcd'}}", "e2b defaults");
}

static void
e2b_body_tool_settings(void **state)
{
	struct sg_tool t = tool_of(SG_PROVIDER_E2B);

	(void)state;
	t.template = "team/my-template:v2";
	t.allow_internet_access = 1;
	check_body(sg_e2b_create_body(&t, "cntr_x", 300),
	    "{'templateID': 'team/my-template:v2', 'timeout': 300, "
	    "'secure': true, 'allow_internet_access': true, "
	    "'metadata': {'sandgate_id': 'cntr_x'}}", "e2b tool settings");
}

/* timeout is always sent and never above the plan's 3600 s. */
static void
e2b_body_timeout_cap(void **state)
{
	static const int life[] = { 1, 3599, 3600, 3601, 86400 };
	static const int want[] = { 1, 3599, 3600, 3600, 3600 };
	struct sg_tool t = tool_of(SG_PROVIDER_E2B);
	json_t *b, *to;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(life) / sizeof(life[0]); i++) {
		b = sg_e2b_create_body(&t, "cntr_x", life[i]);
		to = json_object_get(b, "timeout");
		assert_true(json_is_integer(to));
		if (json_integer_value(to) != want[i])
			fail_msg("lifetime %d: timeout %lld, want %d", life[i],
			    (long long)json_integer_value(to), want[i]);
		json_decref(b);
	}
}

static void
osb_body_defaults(void **state)
{
	struct sg_tool t = tool_of(SG_PROVIDER_OPENSANDBOX);

	(void)state;
	t.api_base = "http://osb.test:8080/v1";
	check_body(sg_osb_create_body(&t, "cntr_0123abcd", 660),
	    "{'image': {'uri': 'opensandbox/code-interpreter:v1.1.0'}, "
	    "'entrypoint': ['/opt/code-interpreter/code-interpreter.sh'], "
	    "'timeout': 660, "
	    "'resourceLimits': {'cpu': '1', 'memory': '1024Mi'}, "
	    "'metadata': {'sandgate-id': 'cntr_0123abcd'}, "
	    "'networkPolicy': {'defaultAction': 'deny', 'egress': []}}",
	    "opensandbox defaults");
}

static void
osb_body_tool_settings(void **state)
{
	struct sg_tool t = tool_of(SG_PROVIDER_OPENSANDBOX);

	(void)state;
	t.image = "registry.test/ci:2";
	t.cpu = 2;
	t.memory_mb = 512;
	t.allow_internet_access = 1;
	check_body(sg_osb_create_body(&t, "cntr_y", 900),
	    "{'image': {'uri': 'registry.test/ci:2'}, "
	    "'entrypoint': ['/opt/code-interpreter/code-interpreter.sh'], "
	    "'timeout': 900, "
	    "'resourceLimits': {'cpu': '2', 'memory': '512Mi'}, "
	    "'metadata': {'sandgate-id': 'cntr_y'}}",
	    "opensandbox tool settings, internet allowed");
}

/* The server refuses timeouts below 60 s. */
static void
osb_body_timeout_floor(void **state)
{
	static const int life[] = { 1, 59, 60, 61, 7200 };
	static const int want[] = { 60, 60, 60, 61, 7200 };
	struct sg_tool t = tool_of(SG_PROVIDER_OPENSANDBOX);
	json_t *b;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(life) / sizeof(life[0]); i++) {
		b = sg_osb_create_body(&t, "cntr_x", life[i]);
		if (json_integer_value(json_object_get(b, "timeout")) != want[i])
			fail_msg("lifetime %d: timeout %lld, want %d", life[i],
			    (long long)json_integer_value(json_object_get(b,
			    "timeout")), want[i]);
		json_decref(b);
	}
}

static void
check_url(const struct sg_tool *t, const char *handle_text, const char *want)
{
	json_t *h = qjson(handle_text);
	char url[1024];

	memset(url, 'X', sizeof(url));
	sg_e2b_execute_url(t, h, url, sizeof(url));
	assert_string_equal(url, want);
	json_decref(h);
}

static void
e2b_execute_urls(void **state)
{
	struct sg_tool t = tool_of(SG_PROVIDER_E2B);

	(void)state;
	/* Default domain. */
	check_url(&t, "{'id': 'isb123'}", "https://49999-isb123.e2b.app/execute");
	/* The sandbox's own domain, from create. */
	check_url(&t, "{'id': 'isb123', 'domain': 'eu.e2b.dev'}",
	    "https://49999-isb123.eu.e2b.dev/execute");
	/* api_base https://api.<domain>: sandboxes live on <domain>. */
	t.api_base = "https://api.example.test";
	check_url(&t, "{'id': 'isb123'}",
	    "https://49999-isb123.example.test/execute");
	/* ... unless the handle names the domain. */
	check_url(&t, "{'id': 'isb123', 'domain': 'other.test'}",
	    "https://49999-isb123.other.test/execute");
	/* sandbox_url wins over everything. */
	t.sandbox_url = "http://127.0.0.1:49999";
	check_url(&t, "{'id': 'isb123', 'domain': 'other.test'}",
	    "http://127.0.0.1:49999/execute");
}

/* ---------------------------------------------------------------------
 * Handles
 * ------------------------------------------------------------------- */

static void
check_roundtrip(json_t *h)
{
	char *text = json_dumps(h, JSON_COMPACT);
	json_error_t e;
	json_t *back;

	assert_non_null(text);
	assert_null(strchr(text, '\n'));
	back = json_loads(text, 0, &e);
	if (back == NULL)
		fail_msg("handle does not load back (%s): %s", e.text, text);
	assert_json_equal(back, h, "handle after dump and load");
	json_decref(back);
	free(text);
}

/* As e2b_create builds it from the create answer. */
static void
e2b_handle_roundtrip(void **state)
{
	struct sg_tool t = tool_of(SG_PROVIDER_E2B);
	char before[1024], after[1024];
	json_t *h, *back;
	char *text;

	(void)state;
	h = json_pack("{s:s}", "id", "i8x0ok2n5a3c7d1e9f4b");
	json_object_set_new(h, "token", json_string("ea9c-\"tok\"\\/\xc3\xa9"));
	json_object_set_new(h, "traffic", json_string("tr_0123456789"));
	json_object_set_new(h, "domain", json_string("e2b.dev"));
	check_roundtrip(h);
	/* The loaded handle reaches the same sandbox. */
	text = json_dumps(h, JSON_COMPACT);
	back = json_loads(text, 0, NULL);
	sg_e2b_execute_url(&t, h, before, sizeof(before));
	sg_e2b_execute_url(&t, back, after, sizeof(after));
	assert_string_equal(before, after);
	assert_string_equal(after,
	    "https://49999-i8x0ok2n5a3c7d1e9f4b.e2b.dev/execute");
	json_decref(back);
	free(text);
	json_decref(h);
}

/* As resolve_endpoint builds it: id, execd base URL, headers object. */
static void
osb_handle_roundtrip(void **state)
{
	json_t *hdrs, *h, *empty;

	(void)state;
	hdrs = json_pack("{s:s,s:s}", "OpenSandbox-Ingress-To",
	    "3f0c2a4e-8b1d-4c1e-9b8e-2f5a6d7c8e9f-44772",
	    "X-EXECD-ACCESS-TOKEN", "secret \"quoted\"");
	h = json_pack("{s:s,s:s,s:O}", "id",
	    "3f0c2a4e-8b1d-4c1e-9b8e-2f5a6d7c8e9f", "execd",
	    "http://127.0.0.1:32768/sandboxes/3f0c2a4e/port/44772",
	    "headers", hdrs);
	check_roundtrip(h);
	json_decref(h);
	json_decref(hdrs);
	/* Without headers from the server: an empty object. */
	empty = json_object();
	h = json_pack("{s:s,s:s,s:O}", "id", "abc", "execd",
	    "https://10.0.0.7:44772", "headers", empty);
	check_roundtrip(h);
	json_decref(h);
	json_decref(empty);
}

/* ---------------------------------------------------------------------
 * Provider names
 * ------------------------------------------------------------------- */

static void
provider_names(void **state)
{
	static const struct {
		const char *name;
		enum sg_provider_kind kind;
	} all[] = {
		{ "local", SG_PROVIDER_LOCAL },
		{ "e2b", SG_PROVIDER_E2B },
		{ "opensandbox", SG_PROVIDER_OPENSANDBOX },
	};
	static const char *const bad[] = { "E2B", "e2b ", "", "docker",
	    "open-sandbox", "localx" };
	enum sg_provider_kind k;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		k = (enum sg_provider_kind)-1;
		assert_int_equal(sg_provider_parse(all[i].name, &k), 0);
		assert_int_equal(k, all[i].kind);
		assert_string_equal(sg_provider_name(all[i].kind), all[i].name);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		k = SG_PROVIDER_E2B;
		if (sg_provider_parse(bad[i], &k) != -1)
			fail_msg("\"%s\" parsed as a provider", bad[i]);
		assert_int_equal(k, SG_PROVIDER_E2B);
	}
	assert_string_equal(sg_provider_name((enum sg_provider_kind)42),
	    "unknown");
}

/* ---------------------------------------------------------------------
 * Numbers from a provider (it may be hostile): a count that is not a
 * whole number in [0, INT_MAX] is as good as none. Casting 1e300 to int
 * is undefined behaviour, which the ASan+UBSan run catches.
 * ------------------------------------------------------------------- */

static int
count_after(line_fn fn, const char *first, const char *then)
{
	struct sg_exec r;
	int n;

	sg_exec_init(&r, 0);
	if (first != NULL)
		line(&r, fn, first);
	line(&r, fn, then);
	n = r.execution_count;
	sg_exec_free(&r);
	return n;
}

static void
execution_count_out_of_range(void **state)
{
	static const char *const bad[] = { "1e300", "-1e300", "-1", "1.5",
	    "2147483648", "9223372036854775807", "-9223372036854775808",
	    "1e19", "'12abc'", "'NaN'", "'-3'", "''", "'99999999999'", "null",
	    "[1]", "true" };
	char e2b[128], osb[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(e2b, sizeof(e2b), "{'type':'number_of_executions',"
		    "'execution_count':%s}", bad[i]);
		snprintf(osb, sizeof(osb), "{'type':'execution_count',"
		    "'execution_count':%s}", bad[i]);
		if (count_after(sg_exec_e2b_line, NULL, e2b) != -1 ||
		    count_after(sg_exec_osb_line, NULL, osb) != -1)
			fail_msg("execution_count %s was taken", bad[i]);
		/* e2b: a later bad count leaves the good one. */
		if (count_after(sg_exec_e2b_line, "{'type':'number_of_executions',"
		    "'execution_count':4}", e2b) != 4)
			fail_msg("execution_count %s replaced a good one", bad[i]);
	}
	assert_int_equal(count_after(sg_exec_e2b_line, NULL,
	    "{'type':'number_of_executions','execution_count':2147483647}"),
	    2147483647);
	assert_int_equal(count_after(sg_exec_e2b_line, NULL,
	    "{'type':'number_of_executions','execution_count':7.0}"), 7);
	assert_int_equal(count_after(sg_exec_osb_line, NULL,
	    "{'type':'execution_count','execution_count':'12'}"), 12);
	assert_int_equal(count_after(sg_exec_osb_line, NULL,
	    "{'type':'execution_count','execution_count':0}"), 0);
}

/* ---------------------------------------------------------------------
 * What a run may cost: lines are measured before they are parsed, kept
 * values are charged to the cap, a line that would not fit is dropped
 * and stderr says so once.
 * ------------------------------------------------------------------- */

#define DROPPED "[sandgate: a result too large to keep was dropped]\n"

/* New string: {"type":"result","json":[0,0,...]}. */
static char *
result_of(size_t zeros)
{
	struct sg_buf b = { 0 };
	size_t i;

	sg_buf_add(&b, "{\"type\":\"result\",\"json\":[", 25);
	for (i = 0; i < zeros; i++)
		sg_buf_add(&b, i > 0 ? ",0" : "0", i > 0 ? 2 : 1);
	sg_buf_add(&b, "]}", 2);
	return b.p;
}

/* What keeping a line costs a run: 64 bytes for each value it makes,
 * and the decoded bytes of its strings and keys (a result's "type" is
 * not kept). */
static size_t
cost(const char *line)
{
	struct sg_exec r;
	struct sg_lines l = { .fn = sg_exec_e2b_line, .res = &r };
	size_t c;

	sg_exec_init(&r, 1u << 30);
	assert_int_equal(sg_lines_feed(&l, line, strlen(line)), 0);
	assert_int_equal(sg_lines_feed(&l, "\n", 1), 0);
	sg_lines_finish(&l);
	c = r.bytes;
	sg_exec_free(&r);
	return c;
}

/* Feed lines, each with its "\n", through the splitter. */
static int
feed_lines(struct sg_exec *r, const char *const *lines, size_t n)
{
	struct sg_lines l = { .fn = sg_exec_e2b_line, .res = r };
	size_t i;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++)
		if ((rc = sg_lines_feed(&l, lines[i], strlen(lines[i]))) == 0)
			rc = sg_lines_feed(&l, "\n", 1);
	sg_lines_finish(&l);
	return rc;
}

static void
huge_result_dropped(void **state)
{
	char *big = result_of(200000), *small = result_of(3);
	const char *lines[] = { "{\"type\":\"stderr\",\"text\":\"before\"}", big,
	    small, "{\"type\":\"stdout\",\"text\":\"after\"}",
	    "{\"type\":\"end_of_execution\"}" };
	struct sg_exec r;

	(void)state;
	/* 200000 values would cost 12.8 MB of Jansson: more than the cap. */
	sg_exec_init(&r, 4u << 20);
	assert_int_equal(feed_lines(&r, lines, 5), 0);
	assert_int_equal(json_array_size(r.results), 1);
	assert_int_equal(json_array_size(json_object_get(json_array_get(
	    r.results, 0), "json")), 3);
	assert_null(json_object_get(json_array_get(r.results, 0), "type"));
	assert_string_equal(r.err.p, "before\n" DROPPED);
	assert_string_equal(r.out.p, "after");
	assert_true(r.ended);
	assert_true(r.bytes <= r.cap);
	sg_exec_free(&r);
	free(big);
	free(small);
}

static void
deep_result_dropped(void **state)
{
	char deep[200], ok[200];
	const char *lines[] = { deep, deep, ok };
	struct sg_exec r;
	int d;

	(void)state;
	/* 33 levels with the line's own object: one too many. */
	d = snprintf(deep, sizeof(deep), "{\"type\":\"result\",\"json\":");
	memset(deep + d, '[', 32);
	memset(deep + d + 32, ']', 32);
	snprintf(deep + d + 64, sizeof(deep) - (size_t)d - 64, "}");
	d = snprintf(ok, sizeof(ok), "{\"type\":\"result\",\"json\":");
	memset(ok + d, '[', 31);
	memset(ok + d + 31, ']', 31);
	snprintf(ok + d + 62, sizeof(ok) - (size_t)d - 62, "}");
	sg_exec_init(&r, 0);
	assert_int_equal(feed_lines(&r, lines, 3), 0);
	assert_int_equal(json_array_size(r.results), 1);
	/* Two drops in a row: one note. */
	assert_string_equal(r.err.p, DROPPED);
	sg_exec_free(&r);
}

/* Results are charged as they are kept: the budget runs out, later ones
 * are dropped, and the note comes again after other stderr. */
static void
results_share_one_budget(void **state)
{
	char *res = result_of(1000);
	const char *lines[] = { res, res, res, "{\"type\":\"stderr\",\"text\":"
	    "\"x\\n\"}", res, "{\"type\":\"stdout\",\"text\":\"still\"}" };
	struct sg_exec r;

	(void)state;
	/* Room for two results, the bytes of all, and the notes; not for a
	 * third result's values. */
	sg_exec_init(&r, 2 * cost(res) + 2 * (strlen(res) + 1) + 400);
	assert_int_equal(feed_lines(&r, lines, 6), 0);
	assert_int_equal(json_array_size(r.results), 2);
	assert_string_equal(r.err.p, DROPPED "x\n" DROPPED);
	assert_string_equal(r.out.p, "still");
	sg_exec_free(&r);
	free(res);
}

/* What kept values cost counts against the cap like output does. */
static void
charges_reach_the_cap(void **state)
{
	char *res = result_of(1000);
	static const char six[] = "{\"type\":\"stdout\",\"text\":\"123456\"}\n";
	struct sg_exec r;
	struct sg_lines l = { .fn = sg_exec_e2b_line, .res = &r };

	(void)state;
	assert_true(cost(res) > 64 * 1000);
	sg_exec_init(&r, cost(res) + 5);
	assert_int_equal(sg_lines_feed(&l, res, strlen(res)), 0);
	assert_int_equal(sg_lines_feed(&l, "\n", 1), 0);
	assert_int_equal(json_array_size(r.results), 1);
	/* Six bytes of output would fit alone, not with what was kept. */
	assert_int_equal(sg_lines_feed(&l, six, strlen(six)), -1);
	sg_lines_finish(&l);
	sg_exec_free(&r);
	free(res);
}

/* Text lines with a few values always parse, whatever the budget. */
static void
small_lines_always_parse(void **state)
{
	char *res = result_of(1000);
	const char *lines[] = { res, "{\"type\":\"stdout\",\"text\":\"a\","
	    "\"x\":[1,2,3]}", "{\"type\":\"number_of_executions\","
	    "\"execution_count\":2}", "{\"type\":\"end_of_execution\"}" };
	struct sg_exec r;

	(void)state;
	/* Nothing left for values once the result is kept. */
	sg_exec_init(&r, cost(res) + strlen(lines[1]) + strlen(lines[2]) +
	    strlen(lines[3]) + 3);
	assert_int_equal(feed_lines(&r, lines, 4), 0);
	assert_int_equal(json_array_size(r.results), 1);
	assert_string_equal(r.out.p, "a");
	assert_int_equal(r.execution_count, 2);
	assert_true(r.ended);
	sg_exec_free(&r);
	free(res);
}

/* Repairing invalid UTF-8 makes one byte three: the repaired text is
 * what counts. */
static void
repair_counts(void **state)
{
	static const char bad[] = "{\"type\":\"stdout\",\"text\":\"\xff\xff\xff"
	    "\xff\xff\xff\xff\xff\xff\xff\"}";
	const char *lines[] = { bad };
	struct sg_exec r;

	(void)state;
	sg_exec_init(&r, 1000);
	assert_int_equal(feed_lines(&r, lines, 1), 0);
	assert_int_equal(r.out.len, 30);
	assert_int_equal(r.bytes, 30);
	sg_exec_free(&r);

	sg_exec_init(&r, 29);
	assert_int_equal(feed_lines(&r, lines, 1), -1);
	sg_exec_free(&r);
}

/* execd's results are charged the same way. */
static void
osb_result_budget(void **state)
{
	struct sg_exec r;

	(void)state;
	sg_exec_init(&r, 64 * 6);
	line(&r, sg_exec_osb_line, "{'type':'result','results':{'text/plain':"
	    "'1'}}");
	line(&r, sg_exec_osb_line, "{'type':'result','results':{'text/plain':"
	    "'2'}}");
	assert_int_equal(json_array_size(r.results), 1);
	assert_string_equal(r.err.p, DROPPED);
	sg_exec_free(&r);
}

/* ---------------------------------------------------------------------
 * Runs that stall, and runs a time limit cut
 * ------------------------------------------------------------------- */

/* e2b's server answers a run its kernel aborted with keepalives only:
 * a keepalive before the run started stops the stream when watched for;
 * after it started, a keepalive is nothing. */
static void
keepalive_before_start_stalls(void **state)
{
	static const char ka[] = "{\"type\": \"keepalive\"}\n";
	static const char start[] = "{\"type\": \"number_of_executions\", "
	    "\"execution_count\": 1}\n";
	struct sg_exec r;
	struct sg_lines l = { .fn = sg_exec_e2b_line, .res = &r,
	    .stall_check = 1 };
	struct sg_lines blind = { .fn = sg_exec_e2b_line, .res = &r };

	(void)state;
	sg_exec_init(&r, 0);
	assert_int_equal(sg_lines_feed(&l, ka, strlen(ka)), -1);
	assert_true(r.stalled);
	sg_lines_finish(&l);
	sg_exec_free(&r);

	sg_exec_init(&r, 0);
	assert_int_equal(sg_lines_feed(&blind, ka, strlen(ka)), 0);
	sg_lines_finish(&blind);
	sg_exec_free(&r);

	sg_exec_init(&r, 0);
	assert_int_equal(sg_lines_feed(&l, start, strlen(start)), 0);
	assert_int_equal(sg_lines_feed(&l, ka, strlen(ka)), 0);
	assert_false(r.stalled);
	sg_lines_finish(&l);
	sg_exec_free(&r);
}

/* Cut by its time limit after it started: a TimeoutError result with
 * the output so far. No answer, or no start, stays a timeout; an error
 * the run already sent is kept. */
static void
timeout_is_a_result(void **state)
{
	static const char part[] =
	    "{\"type\": \"number_of_executions\", \"execution_count\": 2}\n"
	    "{\"type\": \"stdout\", \"text\": \"so far\\n\"}\n";
	static const char err[] =
	    "{\"type\": \"error\", \"name\": \"ValueError\", \"value\": \"v\", "
	    "\"traceback\": \"\"}\n";
	struct sg_exec r;
	struct sg_lines l = { .fn = sg_exec_e2b_line, .res = &r };

	(void)state;
	sg_exec_init(&r, 0);
	assert_int_equal(sg_lines_feed(&l, part, strlen(part)), 0);
	sg_lines_finish(&l);
	assert_int_equal(sg_exec_timeout(&r, SG_PROV_TIMEOUT, 0, 3),
	    SG_PROV_TIMEOUT);
	assert_int_equal(sg_exec_timeout(&r, SG_PROV_STOPPED, 200, 3),
	    SG_PROV_STOPPED);
	assert_int_equal(sg_exec_timeout(&r, SG_PROV_TIMEOUT, 200, 3),
	    SG_PROV_OK);
	assert_true(r.ended);
	assert_string_equal(json_string_value(json_object_get(r.error, "name")),
	    "TimeoutError");
	assert_string_equal(json_string_value(json_object_get(r.error,
	    "value")), "Execution exceeded the time limit of 3 s");
	assert_string_equal(r.out.p, "so far\n");
	assert_int_equal(r.execution_count, 2);
	sg_exec_free(&r);

	/* 200 and keepalives only: the run never started. */
	sg_exec_init(&r, 0);
	assert_int_equal(sg_exec_timeout(&r, SG_PROV_TIMEOUT, 200, 3),
	    SG_PROV_TIMEOUT);
	sg_exec_free(&r);

	sg_exec_init(&r, 0);
	assert_int_equal(sg_lines_feed(&l, err, strlen(err)), 0);
	sg_lines_finish(&l);
	assert_int_equal(sg_exec_timeout(&r, SG_PROV_TIMEOUT, 200, 3),
	    SG_PROV_OK);
	assert_string_equal(json_string_value(json_object_get(r.error, "name")),
	    "ValueError");
	sg_exec_free(&r);
}

/* A provider's message may reach a client: no URL survives in it. */
static void
messages_hide_urls(void **state)
{
	struct sg_prov_error e;

	(void)state;
	sg_prov_fail(&e, SG_PROV_FAILED, 0, "no answer from "
	    "https://49999-abc.e2b.app/execute (%s) or http://10.1.2.3:8080/x, "
	    "see \"http://internal:1/\".", "timeout");
	assert_string_equal(e.message, "no answer from [url] (timeout) or "
	    "[url] see \"[url]\".");
	sg_prov_fail(&e, SG_PROV_FAILED, 0, "a bare :// stays");
	assert_string_equal(e.message, "a bare :// stays");
}

static void
provider_ops_remote(void **state)
{
	static const enum sg_provider_kind kinds[] = { SG_PROVIDER_E2B,
	    SG_PROVIDER_OPENSANDBOX };
	const struct sg_provider_ops *ops;
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		ops = sg_provider_ops(kinds[i]);
		assert_non_null(ops);
		assert_non_null(ops->create);
		assert_non_null(ops->run);
		assert_non_null(ops->destroy);
		assert_non_null(ops->keepalive);
	}
	assert_ptr_not_equal(sg_provider_ops(SG_PROVIDER_E2B),
	    sg_provider_ops(SG_PROVIDER_OPENSANDBOX));
}

/* An OpenSandbox key the config names but could not read: the create is
 * refused as a config error, never sent without the key. */
static void
osb_unread_key_refused(void **state)
{
	struct sg_tool t = { .name = "o", .provider = SG_PROVIDER_OPENSANDBOX,
	    .api_base = "http://127.0.0.1:1/v1",
	    .api_key_problem = "api_key: env:OSB_KEY is not set" };
	struct sg_prov_error err;
	struct sg_prov p;
	json_t *handle = NULL;

	(void)state;
	sg_prov_init(&p);
	assert_int_equal(sg_provider_ops(SG_PROVIDER_OPENSANDBOX)->create(&p, &t,
	    "cntr_00", 60, &handle, &err), SG_PROV_CONFIG);
	assert_null(handle);
	assert_non_null(strstr(err.message, "OSB_KEY is not set"));
	sg_prov_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(e2b_full_transcript),
		cmocka_unit_test(e2b_full_details),
		cmocka_unit_test(e2b_without_end_marker),
		cmocka_unit_test(e2b_last_line_needs_finish),
		cmocka_unit_test(e2b_long_lines),
		cmocka_unit_test(e2b_error_defaults),
		cmocka_unit_test(osb_result_stream),
		cmocka_unit_test(osb_error_stream),
		cmocka_unit_test(osb_traceback_null),
		cmocka_unit_test(osb_busy_final_line),
		cmocka_unit_test(osb_unread_key_refused),
		cmocka_unit_test(osb_execution_count_string),
		cmocka_unit_test(osb_without_complete),
		cmocka_unit_test(cap_passed_not_before),
		cmocka_unit_test(cap_counts_decoded_bytes),
		cmocka_unit_test(cap_bounds_a_line),
		cmocka_unit_test(cap_default),
		cmocka_unit_test(utf8_e2b_lines_repaired),
		cmocka_unit_test(utf8_osb_lines_repaired),
		cmocka_unit_test(utf8_exec_json_lossy),
		cmocka_unit_test(nul_in_text_kept),
		cmocka_unit_test(exec_json_shape_empty),
		cmocka_unit_test(exec_json_shape_filled),
		cmocka_unit_test(e2b_body_defaults),
		cmocka_unit_test(e2b_body_tool_settings),
		cmocka_unit_test(e2b_body_timeout_cap),
		cmocka_unit_test(osb_body_defaults),
		cmocka_unit_test(osb_body_tool_settings),
		cmocka_unit_test(osb_body_timeout_floor),
		cmocka_unit_test(e2b_execute_urls),
		cmocka_unit_test(e2b_handle_roundtrip),
		cmocka_unit_test(osb_handle_roundtrip),
		cmocka_unit_test(provider_names),
		cmocka_unit_test(provider_ops_remote),
		cmocka_unit_test(execution_count_out_of_range),
		cmocka_unit_test(huge_result_dropped),
		cmocka_unit_test(deep_result_dropped),
		cmocka_unit_test(results_share_one_budget),
		cmocka_unit_test(charges_reach_the_cap),
		cmocka_unit_test(small_lines_always_parse),
		cmocka_unit_test(repair_counts),
		cmocka_unit_test(keepalive_before_start_stalls),
		cmocka_unit_test(timeout_is_a_result),
		cmocka_unit_test(messages_hide_urls),
		cmocka_unit_test(osb_result_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
