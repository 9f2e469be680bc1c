/*
 * core/state/trace: a request's rounds as JSON (the upstream turn's
 * time, status, error and tokens; each run's code and outputs), every
 * part bounded without cutting a character, images counted, the whole
 * under SG_TRACE_MAX with the middle's detail (or, past that, the middle
 * rounds) left out and said so; written to a real store once at the
 * request's end, with its images apart from the rounds, only when
 * something was recorded and the config keeps traces, and the capture
 * empty after. The images' own tests are test_trace_img.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/config/config.h"
#include "../../core/http/after.h"
#include "../../core/http/http.h"
#include "../../core/state/trace.h"
#include "../../store/store.h"
#include "../../store/usage.h"
#include "../../lib/util.h"
#include "testutil.h"
#include "tracetest.h"

/* A loop's two rounds: the turn that asked for code, its run, the turn
 * that answered; times counted from the request's start. */
static void
two_rounds(void **state)
{
	json_t *usage = json_pack("{s:i,s:i,s:{s:i},s:{s:i}}", "input_tokens",
	    120, "output_tokens", 30, "input_tokens_details", "cached_tokens",
	    100, "output_tokens_details", "reasoning_tokens", 7);
	json_t *chat = json_pack("{s:i,s:i}", "prompt_tokens", 5,
	    "completion_tokens", 2);
	json_t *res = result("30030\n", "", NULL, NULL), *all;
	const json_t *m, *r;

	(void)state;
	sg_trace_turn(START + 5, 40, 200, NULL, usage);
	sg_trace_call("call_1", NULL);
	sg_trace_run("local", "cntr_abc", "print(2*3*5*7*11*13)", START + 50, 12,
	    res, NULL);
	sg_trace_turn(START + 70, 30, 200, NULL, chat);
	all = rounds();
	assert_int_equal(json_array_size(all), 2);
	m = json_object_get(json_array_get(all, 0), "model");
	assert_int_equal(num(json_array_get(all, 0), "round"), 1);
	assert_int_equal(num(m, "started_ms"), 5);
	assert_int_equal(num(m, "duration_ms"), 40);
	assert_int_equal(num(m, "status"), 200);
	assert_true(json_is_null(json_object_get(m, "error")));
	m = json_object_get(m, "usage");
	assert_int_equal(num(m, "input_tokens"), 120);
	assert_int_equal(num(m, "input_cached_tokens"), 100);
	assert_int_equal(num(m, "output_tokens"), 30);
	assert_int_equal(num(m, "reasoning_tokens"), 7);
	r = run_of(all, 0, 0);
	assert_string_equal(str(r, "call_id"), "call_1");
	assert_string_equal(str(r, "tool"), "local");
	assert_string_equal(str(r, "sandbox_id"), "cntr_abc");
	assert_string_equal(str(r, "code"), "print(2*3*5*7*11*13)");
	assert_string_equal(str(r, "stdout"), "30030\n");
	assert_false(json_is_true(json_object_get(r, "stdout_truncated")));
	assert_false(json_is_true(json_object_get(r, "omitted")));
	assert_true(json_is_null(json_object_get(r, "error")));
	assert_true(json_is_null(json_object_get(r, "failed")));
	assert_int_equal(num(r, "started_ms"), 50);
	assert_int_equal(num(r, "duration_ms"), 12);
	/* The second turn, in Chat's names, ran nothing. */
	m = json_object_get(json_array_get(all, 1), "model");
	assert_int_equal(num(json_object_get(m, "usage"), "input_tokens"), 5);
	assert_int_equal(num(json_object_get(m, "usage"), "output_tokens"), 2);
	assert_int_equal(json_array_size(json_object_get(json_array_get(all, 1),
	    "code_runs")), 0);
	json_decref(all);
	json_decref(usage);
	json_decref(chat);
	json_decref(res);
	sg_trace_reset();
	assert_null(sg_trace_json(START, NULL));
}

/* s: n bytes of "é" (2 bytes each) after one "a": a cut at an even
 * bound would fall inside a character. New. */
static char *
accents(size_t n)
{
	char *s = malloc(n + 1);
	size_t i;

	s[0] = 'a';
	for (i = 1; i + 1 < n; i += 2)
		memcpy(s + i, "\xc3\xa9", 2);
	s[i] = '\0';
	return s;
}

/* Each part is cut at its bound, on a character's edge, and says so;
 * a traceback keeps its end; images are counted, their bytes never
 * kept; a failed run keeps its code and what failed. */
static void
bounds(void **state)
{
	char *code = accents(SG_TRACE_CODE_MAX + 1000), *out = accents(10000),
	    *tb = malloc(10000), *text;
	json_t *res, *all;
	const json_t *r, *e;

	(void)state;
	memset(tb, 'x', 9999);
	memcpy(tb + 9999 - 17, "ZeroDivisionError", 17);
	tb[9999] = '\0';
	res = result(out, out, json_pack("{s:s,s:s,s:s}", "name",
	    "ZeroDivisionError", "value", "division by zero", "traceback", tb),
	    json_pack("[{s:s},{s:s},{s:s}]", "png", "SECRETPNGBYTES", "jpeg",
	    "SECRETJPEGBYTES", "text", "42"));
	sg_trace_run("local", "cntr_x", code, START + 1, 2, res, NULL);
	sg_trace_run("local", "cntr_x", "1/0", START + 3, 4, NULL,
	    "The sandbox cntr_x stopped answering.");
	text = sg_trace_json(START, NULL);
	assert_null(strstr(text, "SECRETPNGBYTES"));
	assert_null(strstr(text, "SECRETJPEGBYTES"));
	free(text);
	all = rounds();
	/* Runs without a turn: a round of their own, no model. */
	assert_true(json_is_null(json_object_get(json_array_get(all, 0),
	    "model")));
	r = run_of(all, 0, 0);
	assert_true(json_string_length(json_object_get(r, "code")) <=
	    SG_TRACE_CODE_MAX);
	assert_true(json_string_length(json_object_get(r, "code")) >
	    SG_TRACE_CODE_MAX - 4);
	assert_true(json_is_true(json_object_get(r, "code_truncated")));
	assert_true(json_string_length(json_object_get(r, "stdout")) <=
	    SG_TRACE_OUT_MAX);
	assert_true(json_is_true(json_object_get(r, "stdout_truncated")));
	assert_true(json_is_true(json_object_get(r, "stderr_truncated")));
	assert_int_equal(strncmp(str(r, "stdout"), "a\xc3\xa9", 3), 0);
	assert_int_equal(num(r, "images"), 2);
	e = json_object_get(r, "error");
	assert_string_equal(str(e, "name"), "ZeroDivisionError");
	assert_string_equal(str(e, "value"), "division by zero");
	assert_true(json_is_true(json_object_get(e, "traceback_truncated")));
	assert_true(json_string_length(json_object_get(e, "traceback")) <=
	    SG_TRACE_OUT_MAX);
	assert_non_null(strstr(str(e, "traceback"), "ZeroDivisionError"));
	r = run_of(all, 0, 1);
	assert_string_equal(str(r, "code"), "1/0");
	assert_string_equal(str(r, "failed"),
	    "The sandbox cntr_x stopped answering.");
	json_decref(all);
	json_decref(res);
	free(code);
	free(out);
	free(tb);
	sg_trace_reset();
}

/* A call the model made with bad arguments ran nothing: it is a run
 * without code that says why; a turn that failed says how. */
static void
refused_and_failed(void **state)
{
	json_t *all;
	const json_t *r, *m;

	(void)state;
	sg_trace_turn(START, 10, 200, NULL, NULL);
	sg_trace_call("call_9", "Invalid arguments: expected a JSON object");
	sg_trace_turn(START + 20, 10, 429, "The upstream of model m answered "
	    "HTTP 429: slow down", NULL);
	all = rounds();
	r = run_of(all, 0, 0);
	assert_string_equal(str(r, "call_id"), "call_9");
	assert_string_equal(str(r, "failed"),
	    "Invalid arguments: expected a JSON object");
	assert_null(json_object_get(r, "code"));
	assert_false(json_is_true(json_object_get(r, "omitted")));
	m = json_object_get(json_array_get(all, 1), "model");
	assert_int_equal(num(m, "status"), 429);
	assert_string_equal(str(m, "error"),
	    "The upstream of model m answered HTTP 429: slow down");
	json_decref(all);
	sg_trace_reset();
}

/* Text that is not UTF-8 (code the model sent, a message with a cut
 * provider's line) is kept, its bad bytes replaced: the code is not
 * lost, and the other rounds are not left out for it. */
static void
not_utf8_kept(void **state)
{
	json_t *res = result("ok", "", NULL, NULL), *all;
	const json_t *r;

	(void)state;
	sg_trace_turn(START, 10, 200, "bad \xff byte", NULL);
	sg_trace_call("call_1", NULL);
	sg_trace_run("e2b", "cntr_1", "print('\xff')", START + 20, 5, res,
	    NULL);
	sg_trace_call("call_2", NULL);
	sg_trace_run("e2b", "cntr_1", "x = 1", START + 30, 5, NULL,
	    "it failed: \xfe");
	all = rounds();
	assert_int_equal(json_array_size(all), 1);
	r = run_of(all, 0, 0);
	assert_string_equal(str(r, "code"), "print('\xef\xbf\xbd')");
	assert_string_equal(str(r, "stdout"), "ok");
	r = run_of(all, 0, 1);
	assert_string_equal(str(r, "failed"), "it failed: \xef\xbf\xbd");
	assert_string_equal(str(json_object_get(json_array_get(all, 0),
	    "model"), "error"), "bad \xef\xbf\xbd byte");
	json_decref(all);
	json_decref(res);
	sg_trace_reset();
}

/* Many big runs: the JSON stays under its bound, the first and the last
 * runs keep their code, the middle's say "omitted". */
static void
middle_detail_dropped(void **state)
{
	char *code = malloc(12001);
	json_t *res = result("ok", "", NULL, NULL), *all;
	const json_t *r;
	size_t i, n = 40, kept = 0, omitted = 0;

	(void)state;
	memset(code, 'c', 12000);
	code[12000] = '\0';
	for (i = 0; i < n; i++) {
		sg_trace_turn(START + (int64_t)i * 10, 5, 200, NULL, NULL);
		code[0] = (char)('A' + i % 26);
		sg_trace_run("local", "cntr_y", code, START + (int64_t)i * 10 + 5,
		    1, res, NULL);
	}
	all = rounds();
	assert_int_equal(json_array_size(all), n);
	for (i = 0; i < n; i++) {
		r = run_of(all, i, 0);
		if (json_is_true(json_object_get(r, "omitted"))) {
			omitted++;
			assert_null(json_object_get(r, "code"));
			/* Its summary stays. */
			assert_int_equal(num(r, "duration_ms"), 1);
		} else
			kept++;
	}
	assert_true(kept >= 2);
	assert_true(omitted > 0);
	assert_false(json_is_true(json_object_get(run_of(all, 0, 0),
	    "omitted")));
	assert_false(json_is_true(json_object_get(run_of(all, n - 1, 0),
	    "omitted")));
	assert_true(json_is_true(json_object_get(run_of(all, n / 2, 0),
	    "omitted")));
	json_decref(all);
	json_decref(res);
	free(code);
	sg_trace_reset();
}

/* The bound is counted exactly, escapes too (a quote, a newline, a
 * control character, a NUL in an output): the details kept fill it to
 * within two runs' detail, never past it. */
static void
bound_counts_escapes(void **state)
{
	static const char unit[] = "\x01\"\\\n\t\xc3\xa9/x";
	char *code = malloc(2001), *text;
	json_t *res, *all;
	size_t i, n = 30, kept = 0, len;

	(void)state;
	for (i = 0; i < 2000; i++)
		code[i] = unit[i % (sizeof(unit) - 1)];
	code[2000] = '\0';
	res = result("", "", NULL, NULL);
	json_object_set_new(res, "stdout", json_string("a\"b\x1f\n"));
	for (i = 0; i < n; i++) {
		sg_trace_turn(START + (int64_t)i * 10, 5, 200, NULL, NULL);
		sg_trace_run("local", "cntr_z", code, START + (int64_t)i * 10 + 5,
		    1, res, NULL);
	}
	text = sg_trace_json(START, NULL);
	len = strlen(text);
	free(text);
	all = rounds();
	for (i = 0; i < n; i++)
		kept += json_object_get(run_of(all, i, 0), "code") != NULL;
	assert_true(kept >= 2 && kept < n);
	/* A run's detail here is about 5.3 kB as JSON. */
	assert_true(len <= SG_TRACE_MAX);
	assert_true(len > SG_TRACE_MAX - 2 * 5400);
	json_decref(all);
	json_decref(res);
	free(code);
	sg_trace_reset();
}

/* Rounds whose summaries alone pass the bound: the first and the last
 * stay, one element says how many are left out between; past the cap,
 * runs are only counted. */
static void
middle_rounds_dropped(void **state)
{
	json_t *all;
	size_t i, n;
	json_int_t left_out = 0;

	(void)state;
	for (i = 0; i < SG_TRACE_RUNS_MAX + 10; i++)
		sg_trace_turn(START + (int64_t)i, 1, 200, NULL, NULL);
	all = rounds();
	n = json_array_size(all);
	assert_true(n > 20 && n < SG_TRACE_RUNS_MAX);
	assert_int_equal(num(json_array_get(all, 0), "round"), 1);
	for (i = 0; i < n; i++)
		left_out += num(json_array_get(all, i), "omitted_rounds");
	assert_true(left_out > 0);
	/* Every round is either shown or counted; the capped ones too. */
	assert_int_equal(num(json_array_get(all, n - 1), "omitted_runs"), 10);
	assert_int_equal((json_int_t)n - 2 + left_out, SG_TRACE_RUNS_MAX);
	assert_int_equal(num(json_array_get(all, n - 2), "round"),
	    SG_TRACE_RUNS_MAX);
	json_decref(all);
	sg_trace_reset();
}

/* A migrated store in a new folder dir (dir[64]), and a request named id
 * for model, begun ago_ms back. */
static struct sg_store *
store_and_req(char *dir, struct sg_req *req, const char *id,
    const char *model, int64_t ago_ms)
{
	struct sg_store *st;
	char path[128], err[256];

	assert_int_equal(tu_mkdtemp(dir, 64), 0);
	snprintf(path, sizeof(path), "%s/sg.db", dir);
	assert_int_equal(sg_store_open(path, &st, err, sizeof(err)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_migrate(st), SG_STORE_OK);
	memset(req, 0, sizeof(*req));
	snprintf(req->id, sizeof(req->id), "%s", id);
	snprintf(req->tenant, sizeof(req->tenant), "%064d", 7);
	snprintf(req->model, sizeof(req->model), "%s", model);
	req->start_ms = sg_now_ms() - ago_ms;
	req->wall_ms = 1700000000000LL;
	return st;
}

/* The end writes the trace once to a real store, with the request's
 * id, key id (not the tenant) and status; with usage.traces = 0, or
 * with nothing recorded, it writes nothing; either way the capture is
 * empty after. */
static void
end_writes_once(void **state)
{
	struct sg_cfg cfg = { .usage = { .traces = 3600 } };
	struct sg_store_trace_row row;
	struct sg_store *st;
	struct sg_req req;
	char dir[64];
	char *png = png_b64(120, 3), *url;
	json_t *res = result("30030\n", "", NULL, json_pack("[{s:s}]", "png",
	    png));

	(void)state;
	assert_non_null(url = malloc(strlen(png) + 64));
	sprintf(url, "\"url\":\"data:image/png;base64,%s\"", png);
	st = store_and_req(dir, &req, "req_1", "ci-primes", 0);

	/* Nothing recorded (a relayed request): nothing written. */
	sg_trace_end(&cfg, st, &req, 200);
	assert_int_equal(sg_store_trace_get(st, "req_1", &row),
	    SG_STORE_NOTFOUND);

	sg_trace_run("local", "cntr_z", "print(1)", req.start_ms, 3, res, NULL);
	sg_trace_end(&cfg, st, &req, 200);
	assert_null(sg_trace_json(START, NULL));
	assert_int_equal(sg_store_trace_get(st, "req_1", &row), SG_STORE_OK);
	assert_int_equal(row.status, 200);
	assert_int_equal(row.started_ms, 1700000000000LL);
	assert_string_equal(row.model, "ci-primes");
	assert_int_equal(strncmp(row.key_id, "key_", 4), 0);
	assert_null(strstr(row.rounds, req.tenant));
	assert_non_null(strstr(row.rounds, "\"stdout\":\"30030\\n\""));
	/* Its image, apart from the rounds. */
	assert_non_null(row.images);
	assert_non_null(strstr(row.images, url));
	assert_null(strstr(row.rounds, png));
	sg_store_trace_clear(&row);

	/* Traces off: recorded, then dropped. */
	cfg.usage.traces = 0;
	snprintf(req.id, sizeof(req.id), "req_2");
	sg_trace_run("local", "cntr_z", "print(2)", req.start_ms, 3, res, NULL);
	sg_trace_end(&cfg, st, &req, 200);
	assert_null(sg_trace_json(START, NULL));
	assert_int_equal(sg_store_trace_get(st, "req_2", &row),
	    SG_STORE_NOTFOUND);
	json_decref(res);
	free(png);
	free(url);
	sg_store_close(st);
	tu_rmrf(dir);
}

struct probe {
	struct sg_store	*st;
	int		*written;	/* the trace was there when it ran */
};

static void
probe(const void *arg)
{
	const struct probe *p = arg;
	struct sg_store_trace_row row;

	*p->written = sg_store_trace_get(p->st, "req_3", &row) ==
	    SG_STORE_OK;
	if (*p->written)
		sg_store_trace_clear(&row);
}

/* With a list of work for after the answer (a responder's), the end
 * writes nothing until the list runs, and then first of it; the row
 * takes the request's time to its end, not to the write, and the
 * request's fields though the request is gone. */
static void
end_writes_after_the_answer(void **state)
{
	struct sg_cfg cfg = { .usage = { .traces = 3600 } };
	struct sg_after after = SG_AFTER_INIT;
	struct sg_store_trace_row row;
	struct sg_store *st;
	struct sg_req req;
	char dir[64];
	int64_t ended;
	int written = -1;
	json_t *res = result("6\n", "", NULL, NULL);

	(void)state;
	st = store_and_req(dir, &req, "req_3", "ci-after", 5000);
	req.after = &after;
	/* A job the request left before (a sandbox's delete). */
	sg_after_add(&after, probe, &(struct probe){ st, &written },
	    sizeof(struct probe));

	sg_trace_run("local", "cntr_y", "print(6)", req.start_ms, 3, res,
	    NULL);
	sg_trace_end(&cfg, st, &req, 201);
	assert_int_equal(sg_after_pending(&after), 2);
	assert_int_equal(sg_store_trace_get(st, "req_3", &row),
	    SG_STORE_NOTFOUND);
	memset(&req, 'x', sizeof(req));
	ended = sg_now_ms();
	while (sg_now_ms() < ended + 30)
		;
	/* The trace's job first: the earlier job finds it written. */
	sg_after_run(&after);
	assert_int_equal(written, 1);
	assert_null(sg_trace_json(START, NULL));
	assert_int_equal(sg_store_trace_get(st, "req_3", &row), SG_STORE_OK);
	assert_int_equal(row.status, 201);
	assert_string_equal(row.model, "ci-after");
	assert_int_equal(row.started_ms, 1700000000000LL);
	assert_true(row.duration_ms >= 5000 && row.duration_ms < 5030);
	assert_non_null(strstr(row.rounds, "\"stdout\":\"6\\n\""));
	sg_store_trace_clear(&row);
	json_decref(res);
	sg_store_close(st);
	tu_rmrf(dir);
}

/* Three runs of big code and a fourth of x bytes: whether every run's
 * code is in the text, and its length. */
static int
all_kept(size_t x, size_t *len)
{
	char *code = malloc(16001), *last = malloc(x + 1), *text;
	json_t *all;
	int i, kept = 1;

	memset(code, 'c', 16000);
	code[16000] = '\0';
	memset(last, 'l', x);
	last[x] = '\0';
	for (i = 0; i < 4; i++) {
		sg_trace_turn(START + i * 10, 5, 200, NULL, NULL);
		sg_trace_run("local", "cntr_b", i < 3 ? code : last,
		    START + i * 10 + 5, 1, NULL, NULL);
	}
	text = sg_trace_json(START, NULL);
	*len = strlen(text);
	assert_true(*len <= SG_TRACE_MAX);
	assert_non_null(all = json_loads(text, 0, NULL));
	for (i = 0; i < 4; i++)
		if (json_object_get(run_of(all, (size_t)i, 0), "code") == NULL)
			kept = 0;
	json_decref(all);
	free(text);
	free(code);
	free(last);
	sg_trace_reset();
	return kept;
}

/* At the bound: every detail is shown while all of them fit, to the
 * byte, and one byte more leaves one out. */
static void
details_fill_to_the_bound(void **state)
{
	size_t lo = 0, hi = SG_TRACE_CODE_MAX, mid, len;

	(void)state;
	assert_true(all_kept(lo, &len));
	assert_false(all_kept(hi, &len));
	while (hi - lo > 1) {
		mid = (lo + hi) / 2;
		if (all_kept(mid, &len))
			lo = mid;
		else
			hi = mid;
	}
	/* Summaries and details are counted against SG_TRACE_MAX less 256
	 * bytes kept for the brackets and commas (trace.c's SLACK): the text
	 * of four rounds is one byte longer than what was counted. */
	assert_true(all_kept(lo, &len));
	assert_int_equal(len, SG_TRACE_MAX - 256 + 1);
	assert_false(all_kept(lo + 1, &len));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(two_rounds),
		T(bounds),
		T(refused_and_failed),
		T(not_utf8_kept),
		T(middle_detail_dropped),
		T(bound_counts_escapes),
		T(middle_rounds_dropped),
		T(end_writes_once),
		T(end_writes_after_the_answer),
		T(details_fill_to_the_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
