/*
 * sg_jscan: never accepts what Jansson refuses, and finds the members
 * Jansson finds. Checked on hand-picked texts and on many random
 * mutations of real events (a byte changed, dropped or doubled).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "../../lib/jscan.h"

static const char *const names[] = { "type", "item", "response", "id",
    NULL };

/* sg_jparse's value of p[0..n) is Jansson's j (NULL: none), to the
 * key order and the kind of number; with any, a scalar's too; refusing
 * a repeated key, what Jansson refuses. */
static void
same_parse(const char *p, size_t n, const json_t *j)
{
	json_t *v = sg_jparse(p, n, 0), *w, *a;
	json_error_t we, ae;
	char *x, *y;

	if (j == NULL)
		assert_null(v);
	else {
		assert_non_null(v);
		x = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		y = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
		assert_string_equal(x, y);
		assert_true(json_equal(v, j));
		free(x);
		free(y);
	}
	json_decref(v);
	w = sg_jparse(p, n, SG_JPARSE_ANY);
	a = json_loadb(p, n, JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
	assert_true(w == NULL ? a == NULL : a != NULL && json_equal(w, a));
	json_decref(w);
	json_decref(a);
	/* A key twice in any object, however deep, refuses the text; why
	 * and where, as Jansson says it. */
	w = sg_jparse_err(p, n, SG_JPARSE_NODUP, &we);
	a = json_loadb(p, n, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &ae);
	assert_true(w == NULL ? a == NULL : a != NULL && json_equal(w, a));
	if (w == NULL) {
		assert_string_equal(we.text, ae.text);
		assert_int_equal(json_error_code(&we), json_error_code(&ae));
		assert_int_equal(we.line, ae.line);
		assert_int_equal(we.column, ae.column);
		assert_int_equal(we.position, ae.position);
	}
	json_decref(w);
	json_decref(a);
}

/* jscan's verdict on p[0..n) against Jansson's; the spans it found are
 * the values Jansson has for those keys. Returns jscan's verdict. */
static int
agrees(const char *p, size_t n)
{
	struct sg_jspan m[4];
	json_t *j = json_loadb(p, n, JSON_ALLOW_NUL, NULL), *v;
	int rc = sg_jscan_object(p, n, names, m), k;

	same_parse(p, n, j);
	if (rc == 0) {
		assert_true(json_is_object(j));
		for (k = 0; names[k] != NULL; k++) {
			if (m[k].p == NULL) {
				assert_null(json_object_get(j, names[k]));
				continue;
			}
			v = json_loadb(m[k].p, m[k].len, JSON_DECODE_ANY |
			    JSON_ALLOW_NUL, NULL);
			assert_true(json_equal(v, json_object_get(j, names[k])));
			json_decref(v);
		}
	}
	json_decref(j);
	return rc;
}

static const char *const good[] = {
	"{\"x\":[1,2.5,-0,-0.0,\"\\u0000x\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\",{\"a\":{}}]}",
	"{\"a\":1,\"b\":2,\"a\":[3]}",
	"{\"x\":[{\"k\":1,\"j\":{\"k\":2},\"k\":3}],\"k\":4}",
	"{\"n\":-123456789012345678,\"r\":123.000000001,\"s\":\"plain\"}",
	"{}",
	" {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"output\":[]}} \n",
	"{\"id\":1,\"id\":2}",
	"{\"a\":[1,-0,0.5,-12.25,true,false,null,{},[],\"\\u00e9\\ud83d\\ude00\\n\\/\"]}",
	"{\"a\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\",\"b\":\"\\u0000\"}",
	"{\"item\":{\"type\":\"message\",\"content\":[{\"text\":\"x\"}]}}",
	NULL
};

static const char *const bad[] = {
	"", "[]", "\"s\"", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{,}",
	"{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":-}", "{\"a\":tru}",
	"{\"a\":truex}", "{\"a\":nul}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}",
	"{\"a\":\"\\ud83d\"}", "{\"a\":\"\\ude00\"}", "{\"a\":\"\\ud83dx\"}",
	"{\"a\":\"\x01\"}", "{\"a\":\"\xff\"}", "{\"a\":\"\xc0\x80\"}",
	"{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xf4\x90\x80\x80\"}",
	"{\"a\":\"\xe2\x82\"}", "{\"a\":1} x", "{\"a\":1}}", "{\"a\" 1}",
	"{\"a\":[1 2]}", "{\"a\":99999999999999999999}", "{\"a\":1e999}",
	"{'a':1}", "{\"\\u0069d\":1}",
	NULL
};

static void
hand_picked(void **state)
{
	int i;

	(void)state;
	for (i = 0; good[i] != NULL; i++)
		assert_int_equal(agrees(good[i], strlen(good[i])), 0);
	for (i = 0; bad[i] != NULL; i++)
		assert_int_equal(agrees(bad[i], strlen(bad[i])), -1);
}

/* A member's own members in the same pass: those of its last value. */
static void
sub_members(void **state)
{
	static const char *const top[] = { "type", "response", NULL };
	static const char *const in[] = { "id", "x", NULL };
	static const char twice[] = "{\"response\":{\"id\":\"a\",\"x\":1},"
	    "\"type\":\"t\",\"response\":{\"id\":\"b\"}}";
	struct sg_jspan m[2], sm[2];
	struct sg_jscan_sub sub = { 1, in, sm };

	(void)state;
	assert_int_equal(sg_jscan_object_sub(twice, strlen(twice), top, m, &sub),
	    0);
	assert_int_equal(m[1].len, strlen("{\"id\":\"b\"}"));
	assert_int_equal(sm[0].len, 3);
	assert_memory_equal(sm[0].p, "\"b\"", 3);
	assert_null(sm[1].p);
	/* Checked as deep as ever: a bad value inside is refused. */
	assert_int_equal(sg_jscan_object_sub("{\"response\":{\"x\":01}}", 21,
	    top, m, &sub), -1);
}

/* Deep nesting: past Jansson's depth, refused. */
static void
too_deep(void **state)
{
	size_t n = 3000, i;
	char *p = malloc(2 * n + 16);

	(void)state;
	strcpy(p, "{\"a\":");
	for (i = 0; i < n; i++)
		p[5 + i] = '[';
	for (i = 0; i < n; i++)
		p[5 + n + i] = ']';
	strcpy(p + 5 + 2 * n, "}");
	assert_int_equal(agrees(p, strlen(p)), -1);
	free(p);
}

static void
mutations(void **state)
{
	static const char alphabet[] = "{}[]\",:\\/ 0123456789.eE+-tfnu\x01\x7f"
	    "\x80\xbf\xc3\xe2\xed\xf0\xff";
	char buf[2048];
	size_t n, len, at;
	unsigned seed = 33;
	int i, k, ok = 0;

	(void)state;
	for (i = 0; good[i] != NULL; i++) {
		len = strlen(good[i]);
		for (k = 0; k < 20000; k++) {
			memcpy(buf, good[i], len);
			n = len;
			seed = seed * 1103515245 + 12345;
			at = (seed >> 8) % (len + 1);
			switch ((seed >> 4) % 3) {
			case 0:	/* one byte changed */
				if (at < n)
					buf[at] = alphabet[(seed >> 16) %
					    (sizeof(alphabet) - 1)];
				break;
			case 1:	/* one dropped */
				if (at < n) {
					memmove(buf + at, buf + at + 1, n - at - 1);
					n--;
				}
				break;
			default: /* one inserted */
				memmove(buf + at + 1, buf + at, n - at);
				buf[at] = alphabet[(seed >> 16) %
				    (sizeof(alphabet) - 1)];
				n++;
			}
			ok += agrees(buf, n) == 0;
		}
	}
	/* Not only refusals: many mutants are still valid. */
	assert_true(ok > 1000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hand_picked),
		cmocka_unit_test(sub_members),
		cmocka_unit_test(too_deep),
		cmocka_unit_test(mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
