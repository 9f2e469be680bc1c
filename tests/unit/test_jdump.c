/*
 * sg_jdump: byte for byte json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)
 * on many random values (every escape, multibyte characters, NULs in
 * strings and keys, the integers' ends, reals, empty and nested
 * containers), and a failure where Jansson fails (not UTF-8); an
 * array's parts where sg_jdump_marked says they are. sg_jtw:
 * its strings and integers as sg_jdump writes them, text that is not
 * UTF-8 made so, pieces put together.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/jdump.h"
#include "../../lib/jtw.h"

static unsigned seed = 7;

static unsigned
rnd(unsigned n)
{
	seed = seed * 1103515245 + 12345;
	return (seed >> 8) % n;
}

/* Random text of valid UTF-8 with every kind of byte that is escaped. */
static size_t
text(char *s, size_t max)
{
	static const char *const parts[] = { "a", "Z", " ", "\"", "\\", "/",
	    "\b", "\f", "\n", "\r", "\t", "\x01", "\x1f", "\x7f", "\xc3\xa9",
	    "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xef\xbf\xbf", "u0041" };
	size_t n = 0, k, len = rnd((unsigned)max / 6);
	const char *p;

	for (k = 0; k < len; k++) {
		if (rnd(40) == 0) {
			s[n++] = '\0';
			continue;
		}
		p = parts[rnd(sizeof(parts) / sizeof(parts[0]))];
		memcpy(s + n, p, strlen(p));
		n += strlen(p);
	}
	return n;
}

static json_t *
gen(int depth)
{
	static const json_int_t ints[] = { 0, -1, 42, 9007199254740993LL,
	    INT64_MAX, INT64_MIN };
	static const double reals[] = { 0.5, -1.25e-7, 1e300, 3.0, 0.1 };
	char s[256], k[64];
	json_t *v;
	size_t n, i, kl;

	switch (rnd(depth > 4 ? 6 : 8)) {
	case 0:	return json_integer(ints[rnd(6)]);
	case 1:	return json_real(reals[rnd(5)]);
	case 2:	return rnd(2) ? json_true() : json_false();
	case 3:	return json_null();
	case 4:
	case 5:
		n = text(s, sizeof(s));
		return json_stringn(s, n);
	case 6:
		v = json_array();
		for (i = rnd(5); i > 0; i--)
			json_array_append_new(v, gen(depth + 1));
		return v;
	default:
		v = json_object();
		for (i = rnd(6); i > 0; i--) {
			kl = text(k, sizeof(k));
			json_object_setn_new(v, k, kl, gen(depth + 1));
		}
		return v;
	}
}

static void
same_as_jansson(void **state)
{
	json_t *v;
	char *want, *got;
	size_t len;
	int i;

	(void)state;
	for (i = 0; i < 20000; i++) {
		v = gen(0);
		want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		got = sg_jdump_text(v, &len);
		assert_non_null(want);
		assert_non_null(got);
		assert_int_equal(len, strlen(want));
		assert_memory_equal(got, want, len);
		free(want);
		free(got);
		json_decref(v);
	}
}

/* sg_jdump_marked writes what sg_jdump writes, and the spans it gives
 * hold the marked array's text and each element's, on random objects
 * with the array anywhere among other members (and a member of the same
 * name inside them, not marked). */
static void
marked_spans(void **state)
{
	struct sg_jdump_at whole, at[8];
	struct sg_buf b = { 0 };
	json_t *o, *a;
	char *want;
	size_t k, n;
	int i;

	(void)state;
	for (i = 0; i < 3000; i++) {
		o = json_object();
		json_object_set_new(o, "a", gen(0));
		a = json_array();
		n = rnd(8);
		for (k = 0; k < n; k++)
			json_array_append_new(a, json_pack("{s:o}", "output",
			    gen(0)));
		json_object_set_new(o, rnd(2) ? "output" : "outputs", a);
		json_object_set_new(o, "z", gen(0));
		b.len = 0;
		assert_int_equal(sg_jdump_marked(&b, o, "output", &whole, at), 0);
		want = json_dumps(o, JSON_COMPACT);
		assert_string_equal(b.p, want);
		free(want);
		if (json_object_get(o, "output") == NULL) {
			assert_true(whole.start == 0 && whole.end == 0);
			json_decref(o);
			continue;
		}
		want = json_dumps(a, JSON_COMPACT);
		assert_int_equal(whole.end - whole.start, strlen(want));
		assert_memory_equal(b.p + whole.start, want, strlen(want));
		free(want);
		for (k = 0; k < n; k++) {
			want = json_dumps(json_array_get(a, k), JSON_COMPACT);
			assert_int_equal(at[k].end - at[k].start, strlen(want));
			assert_memory_equal(b.p + at[k].start, want,
			    strlen(want));
			free(want);
		}
		json_decref(o);
	}
	free(b.p);
}

static void
not_utf8(void **state)
{
	static const char *const bad[] = { "\xff", "a\xc3", "\xc0\x80",
	    "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80" };
	struct sg_buf b = { 0 };
	json_t *v;
	size_t i;

	(void)state;
	assert_int_equal(sg_buf_add(&b, "x", 1), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = json_pack("{s:[o]}", "k", json_stringn_nocheck(bad[i],
		    strlen(bad[i])));
		assert_null(json_dumps(v, JSON_COMPACT));
		assert_int_equal(sg_jdump(&b, v), -1);
		/* What was there stays, and only it. */
		assert_int_equal(b.len, 1);
		assert_string_equal(b.p, "x");
		assert_int_equal(sg_jdump_str(&b, bad[i], strlen(bad[i])), -1);
		assert_int_equal(b.len, 1);
		assert_string_equal(b.p, "x");
		json_decref(v);
	}
	free(b.p);
}

/* A string and an integer written alone are what Jansson writes. */
static void
pieces_as_jansson(void **state)
{
	char s[256], *want, *got;
	struct sg_jtw w;
	json_int_t n;
	json_t *v;
	size_t len;
	int i;

	(void)state;
	for (i = 0; i < 5000; i++) {
		memset(&w, 0, sizeof(w));
		len = text(s, sizeof(s) - 1);
		n = (json_int_t)rnd(1u << 30) * (rnd(2) ? -1 : 1) *
		    (json_int_t)rnd(1u << 30);
		sg_jtw_text(&w, s, len);
		sg_jtw_lit(&w, ",");
		sg_jtw_int(&w, n);
		v = json_pack("[s%,I]", s, len, n);
		assert_non_null(want = json_dumps(v, JSON_COMPACT));
		assert_non_null(got = sg_jtw_end(&w));
		/* Jansson's array, less its brackets. */
		want[strlen(want) - 1] = '\0';
		assert_string_equal(got, want + 1);
		free(want);
		free(got);
		json_decref(v);
	}
}

static void
jtw_pieces(void **state)
{
	struct sg_jtw w = { { 0 }, 0 };
	char *got;

	(void)state;
	assert_string_equal(got = sg_jtw_end(&w), "");
	free(got);
	memset(&w, 0, sizeof(w));
	sg_jtw_mint(&w, "{", "a", -12);
	sg_jtw_mstr(&w, ",", "b", NULL);
	sg_jtw_key(&w, ",", "c");
	sg_jtw_str(&w, "");
	sg_jtw_key(&w, ",", "d");
	sg_jtw_bool(&w, 1);
	sg_jtw_key(&w, ",", "e");
	sg_jtw_str(&w, "x\xffy\"");
	sg_jtw_lit(&w, "}");
	assert_non_null(got = sg_jtw_end(&w));
	assert_string_equal(got, "{\"a\":-12,\"b\":null,\"c\":null,"
	    "\"d\":true,\"e\":\"x\xef\xbf\xbdy\\\"\"}");
	free(got);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(same_as_jansson),
		cmocka_unit_test(marked_spans),
		cmocka_unit_test(not_utf8),
		cmocka_unit_test(pieces_as_jansson),
		cmocka_unit_test(jtw_pieces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
