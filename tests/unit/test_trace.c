/*
 * core/state/trace: a request's rounds as JSON (the upstream turn's
 * time, status, error and tokens; each run's code and outputs), every
 * part bounded without cutting a character, images counted, the whole
 * under SG_TRACE_MAX with the middle's detail (or, past that, the middle
 * rounds) left out and said so; the runs' PNGs kept apart (trace_img),
 * the first SG_TRACE_IMAGES_MAX within SG_TRACE_IMAGES_BYTES, those past
 * counted, anything sent as "png" that is not base64 of a PNG dropped,
 * those of left-out rounds not written; written to a real store once at
 * the request's end, only when something was recorded and the config
 * keeps traces, and the capture empty after.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "../../core/config/config.h"
#include "../../core/http/http.h"
#include "../../core/state/trace.h"
#include "../../core/state/trace_img.h"
#include "../../store/store.h"
#include "../../store/usage.h"
#include "../../lib/util.h"
#include "testutil.h"

#define START	1000000		/* the request's start, sg_now_ms */

/* New reference: the rounds now, times from START; fails when there
 * are none or they pass the bound. */
static json_t *
rounds(void)
{
	char *text = sg_trace_json(START, NULL);
	json_t *j;

	assert_non_null(text);
	assert_true(strlen(text) <= SG_TRACE_MAX);
	assert_non_null(j = json_loads(text, 0, NULL));
	free(text);
	assert_true(json_is_array(j));
	return j;
}

static const json_t *
run_of(const json_t *all, size_t round, size_t k)
{
	return json_array_get(json_object_get(json_array_get(all, round),
	    "code_runs"), k);
}

static const char *
str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static json_int_t
num(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* A result of the sandbox's shape (sg_exec_json). New reference. */
static json_t *
result(const char *out, const char *err, json_t *error, json_t *results)
{
	return json_pack("{s:s,s:s,s:s,s:o,s:o,s:n}", "object",
	    "code_execution", "stdout", out, "stderr", err, "results",
	    results != NULL ? results : json_array(), "error", error != NULL ?
	    error : json_null(), "execution_count");
}

/* A PNG of n bytes (its signature, then bytes from seed) as base64:
 * new. */
static char *
png_b64(size_t n, unsigned char seed)
{
	unsigned char *raw = malloc(n);
	char *b64 = malloc(4 * ((n + 2) / 3) + 1);
	size_t i;

	assert_true(n >= 8 && raw != NULL && b64 != NULL);
	memcpy(raw, "\x89PNG\r\n\x1a\n", 8);
	for (i = 8; i < n; i++)
		raw[i] = (unsigned char)(seed + i * 7);
	EVP_EncodeBlock((unsigned char *)b64, raw, (int)n);
	free(raw);
	return b64;
}

/* The images now, but those of rounds the rounds left out: new
 * reference, [] when none. */
static json_t *
images_now(void)
{
	char *img, *text = sg_trace_json(START, &img);
	json_t *j;

	assert_non_null(text);
	free(text);
	if (img == NULL)
		return json_array();
	assert_non_null(j = json_loads(img, 0, NULL));
	free(img);
	return j;
}

/* Image i of all is round's run's, with url "data:image/png;base64,"
 * b64. */
static void
assert_image(const json_t *all, size_t i, json_int_t round, json_int_t run,
    const char *b64)
{
	const json_t *im = json_array_get(all, i);
	const char *url = str(im, "url");

	assert_non_null(url);
	assert_int_equal(num(im, "round"), round);
	assert_int_equal(num(im, "run"), run);
	assert_int_equal(strncmp(url, "data:image/png;base64,", 22), 0);
	assert_string_equal(url + 22, b64);
}

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
	char dir[64], path[128], err[256];
	char *png = png_b64(120, 3), *url;
	json_t *res = result("30030\n", "", NULL, json_pack("[{s:s}]", "png",
	    png));

	(void)state;
	assert_non_null(url = malloc(strlen(png) + 64));
	sprintf(url, "\"url\":\"data:image/png;base64,%s\"", png);
	assert_int_equal(tu_mkdtemp(dir, sizeof(dir)), 0);
	snprintf(path, sizeof(path), "%s/sg.db", dir);
	assert_int_equal(sg_store_open(path, &st, err, sizeof(err)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_migrate(st), SG_STORE_OK);
	memset(&req, 0, sizeof(req));
	snprintf(req.id, sizeof(req.id), "req_1");
	snprintf(req.tenant, sizeof(req.tenant), "%064d", 7);
	snprintf(req.model, sizeof(req.model), "ci-primes");
	req.start_ms = sg_now_ms();
	req.wall_ms = 1700000000000LL;

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

/* What a sandbox sends as "png" is kept only when it is well-formed,
 * padded base64 whose bytes begin with PNG's signature. */
static void
png_checked(void **state)
{
	char *ok = png_b64(100, 1), *padded = png_b64(97, 2), bad[256];
	const char *gif = "R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs=";
	size_t n = strlen(ok);

	(void)state;
	assert_true(sg_timg_png(ok, n));
	/* 97 bytes: two '=' of padding. */
	assert_string_equal(padded + strlen(padded) - 2, "==");
	assert_true(sg_timg_png(padded, strlen(padded)));
	/* A GIF, well-formed base64: not a PNG. */
	assert_false(sg_timg_png(gif, strlen(gif)));
	assert_false(sg_timg_png("SECRETPNGBYTES!!", 16));
	assert_false(sg_timg_png(NULL, 0));
	assert_false(sg_timg_png("iVBORw0K", 8));
	/* Not whole groups of four. */
	assert_false(sg_timg_png(ok, n - 1));
	/* A '=', a space, a newline, a '-' inside (OpenSSL's decoder would
	 * take some of these). */
	snprintf(bad, sizeof(bad), "%s", ok);
	bad[40] = '=';
	assert_false(sg_timg_png(bad, n));
	bad[40] = ' ';
	assert_false(sg_timg_png(bad, n));
	bad[40] = '\n';
	assert_false(sg_timg_png(bad, n));
	bad[40] = '-';
	assert_false(sg_timg_png(bad, n));
	/* A NUL within its length. */
	bad[40] = '\0';
	assert_false(sg_timg_png(bad, n));
	/* A trailing newline, as e2b's server sends (providers strip it). */
	snprintf(bad, sizeof(bad), "%s\n", ok);
	assert_false(sg_timg_png(bad, n + 1));
	/* The signature changed in its last byte. */
	snprintf(bad, sizeof(bad), "%s", ok);
	bad[10] = bad[10] == 'A' ? 'B' : 'A';
	assert_false(sg_timg_png(bad, n));
	free(ok);
	free(padded);
}

/* Each run's PNGs are kept in order with its round and index, a forged
 * one, a jpeg and a NUL-cut one are not; every image is counted; the
 * rounds hold no image bytes. */
static void
images_kept_forged_dropped(void **state)
{
	char *a = png_b64(300, 1), *b = png_b64(301, 2), *c = png_b64(302, 3),
	    *cut = strdup(b), *text;
	json_t *r1, *r2, *r3, *all, *im;

	(void)state;
	/* b with a NUL inside: C would read a shorter, well-formed PNG. */
	cut[40] = '\0';
	r1 = result("", "", NULL, json_pack("[{s:s},{s:s},{s:s},{s:s},{s:s%},"
	    "{s:s}]", "png", a, "png",
	    "R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs=", "png",
	    "SECRETPNGBYTES", "jpeg", "/9j/4AAQ", "png", cut, strlen(b),
	    "text", "42"));
	r2 = result("", "", NULL, json_pack("[{s:s}]", "png", b));
	r3 = result("", "", NULL, json_pack("[{s:s}]", "png", c));
	sg_trace_turn(START, 5, 200, NULL, NULL);
	sg_trace_run("local", "cntr_i", "plot()", START + 6, 1, r1, NULL);
	sg_trace_run("local", "cntr_i", "plot()", START + 8, 1, r2, NULL);
	sg_trace_turn(START + 10, 5, 200, NULL, NULL);
	sg_trace_run("local", "cntr_i", "plot()", START + 16, 1, r3, NULL);
	im = images_now();
	assert_int_equal(json_array_size(im), 3);
	assert_image(im, 0, 1, 0, a);
	assert_image(im, 1, 1, 1, b);
	assert_image(im, 2, 2, 0, c);
	json_decref(im);
	text = sg_trace_json(START, NULL);
	assert_null(strstr(text, "iVBORw0KGgo"));
	assert_null(strstr(text, "SECRETPNGBYTES"));
	free(text);
	all = rounds();
	/* Five images (the text is not one), none past the bounds. */
	assert_int_equal(num(run_of(all, 0, 0), "images"), 5);
	assert_int_equal(num(run_of(all, 0, 0), "images_omitted"), 0);
	assert_int_equal(num(run_of(all, 1, 0), "images"), 1);
	json_decref(all);
	json_decref(r1);
	json_decref(r2);
	json_decref(r3);
	free(a);
	free(b);
	free(c);
	free(cut);
	sg_trace_reset();
	assert_null(sg_trace_json(START, &text));
	assert_null(text);
}

/* Past SG_TRACE_IMAGES_MAX images, or SG_TRACE_IMAGES_BYTES of base64,
 * an image is counted in its run's images_omitted, not kept; a smaller
 * one that still fits is. */
static void
images_bounded(void **state)
{
	char *small = png_b64(200, 4), *big = png_b64(SG_TRACE_IMAGES_BYTES /
	    4 * 3 * 3 / 4, 5), *half = png_b64(SG_TRACE_IMAGES_BYTES / 4 * 3 /
	    2, 6);
	json_t *res = result("", "", NULL, json_pack("[{s:s}]", "png", small));
	json_t *two = result("", "", NULL, json_pack("[{s:s},{s:s}]", "png",
	    big, "png", half));
	json_t *all, *im;
	size_t i, bytes = 0;

	(void)state;
	for (i = 0; i < SG_TRACE_IMAGES_MAX + 4; i++)
		sg_trace_run("local", "cntr_b", "plot()", START + (int64_t)i, 1,
		    res, NULL);
	all = rounds();
	for (i = 0; i < SG_TRACE_IMAGES_MAX + 4; i++)
		assert_int_equal(num(run_of(all, 0, i), "images_omitted"),
		    i < SG_TRACE_IMAGES_MAX ? 0 : 1);
	json_decref(all);
	im = images_now();
	assert_int_equal(json_array_size(im), SG_TRACE_IMAGES_MAX);
	assert_image(im, SG_TRACE_IMAGES_MAX - 1, 1, SG_TRACE_IMAGES_MAX - 1,
	    small);
	json_decref(im);
	sg_trace_reset();

	/* 3/4 of the bytes, then half: the half is left out; a small one
	 * after still fits. */
	sg_trace_run("local", "cntr_b", "plot()", START, 1, two, NULL);
	sg_trace_run("local", "cntr_b", "plot()", START + 1, 1, res, NULL);
	all = rounds();
	assert_int_equal(num(run_of(all, 0, 0), "images"), 2);
	assert_int_equal(num(run_of(all, 0, 0), "images_omitted"), 1);
	assert_int_equal(num(run_of(all, 0, 1), "images_omitted"), 0);
	json_decref(all);
	im = images_now();
	assert_int_equal(json_array_size(im), 2);
	assert_image(im, 0, 1, 0, big);
	assert_image(im, 1, 1, 1, small);
	for (i = 0; i < 2; i++)
		bytes += strlen(str(json_array_get(im, i), "url")) - 22;
	assert_true(bytes <= SG_TRACE_IMAGES_BYTES);
	json_decref(im);
	json_decref(res);
	json_decref(two);
	free(small);
	free(big);
	free(half);
	sg_trace_reset();
}

/* Rounds left out of a very long loop take their images with them: the
 * images written are those of the rounds shown. */
static void
images_of_left_out_rounds(void **state)
{
	char *a = png_b64(100, 7), *b = png_b64(100, 8), *c = png_b64(100, 9);
	json_t *ra = result("", "", NULL, json_pack("[{s:s}]", "png", a));
	json_t *rb = result("", "", NULL, json_pack("[{s:s}]", "png", b));
	json_t *rc = result("", "", NULL, json_pack("[{s:s}]", "png", c));
	json_t *im;
	size_t i;

	(void)state;
	for (i = 0; i < SG_TRACE_RUNS_MAX; i++) {
		sg_trace_turn(START + (int64_t)i, 1, 200, NULL, NULL);
		if (i == 0 || i == SG_TRACE_RUNS_MAX / 2 || i ==
		    SG_TRACE_RUNS_MAX - 1)
			sg_trace_run("local", "cntr_l", "plot()", START +
			    (int64_t)i, 1, i == 0 ? ra : i == SG_TRACE_RUNS_MAX -
			    1 ? rc : rb, NULL);
	}
	im = images_now();
	assert_int_equal(json_array_size(im), 2);
	assert_image(im, 0, 1, 0, a);
	assert_image(im, 1, SG_TRACE_RUNS_MAX, 0, c);
	json_decref(im);
	json_decref(ra);
	json_decref(rb);
	json_decref(rc);
	free(a);
	free(b);
	free(c);
	sg_trace_reset();
}

/* A failed test leaves nothing for the next. */
static int
reset(void **state)
{
	(void)state;
	sg_trace_reset();
	return 0;
}

#define T(f)	cmocka_unit_test_teardown(f, reset)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(two_rounds),
		T(bounds),
		T(refused_and_failed),
		T(middle_detail_dropped),
		T(middle_rounds_dropped),
		T(end_writes_once),
		T(png_checked),
		T(images_kept_forged_dropped),
		T(images_bounded),
		T(images_of_left_out_rounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
