/*
 * core/state/trace_img: the PNGs a request's code runs made, kept for its
 * trace apart from the rounds: each with its round and run, in order;
 * what a sandbox sends as "png" kept only when it is well-formed base64
 * of bytes that begin with PNG's signature; the first
 * SG_TRACE_IMAGES_MAX within SG_TRACE_IMAGES_BYTES kept, those past
 * counted in their run's images_omitted; those of rounds a long loop's
 * trace leaves out not written.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/state/trace.h"
#include "../../core/state/trace_img.h"
#include "tracetest.h"

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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(png_checked),
		T(images_kept_forged_dropped),
		T(images_bounded),
		T(images_of_left_out_rounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
