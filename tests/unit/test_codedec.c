/*
 * sg_codedec: the code of a streamed call, decoded from its arguments as
 * they arrive, split anywhere.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "../../core/codedec.h"

struct out {
	char	buf[4096];
	size_t	len;
	int	calls;
};

static void
collect(void *arg, const char *text, size_t len)
{
	struct out *o = arg;

	assert_true(o->len + len < sizeof(o->buf));
	memcpy(o->buf + o->len, text, len);
	o->len += len;
	o->buf[o->len] = '\0';
	o->calls++;
}

/* Decode args fed in pieces of `step` bytes (0: two pieces split at
 * `split`). */
static struct out
decode(const char *args, size_t split, size_t step, int *lost)
{
	struct sg_codedec d;
	struct out o = { .len = 0 };
	size_t len = strlen(args), i;

	sg_codedec_init(&d, collect, &o);
	if (step == 0) {
		sg_codedec_feed(&d, args, split);
		sg_codedec_feed(&d, args + split, len - split);
	} else
		for (i = 0; i < len; i += step)
			sg_codedec_feed(&d, args + i, len - i < step ? len - i : step);
	*lost = d.lost;
	return o;
}

/* What Jansson makes of the same arguments: the reference. */
static char *
reference(const char *args)
{
	json_t *j = json_loads(args, 0, NULL);
	char *code = strdup(json_string_value(json_object_get(j, "code")));

	json_decref(j);
	return code;
}

static void
every_split(const char *args)
{
	char *want = reference(args);
	size_t len = strlen(args), i;
	int lost;

	for (i = 0; i <= len; i++) {
		struct out o = decode(args, i, 0, &lost);

		assert_false(lost);
		assert_string_equal(o.buf, want);
	}
	for (i = 1; i <= 3; i++) {
		struct out o = decode(args, 0, i, &lost);

		assert_false(lost);
		assert_string_equal(o.buf, want);
	}
	free(want);
}

static void
plain_code(void **state)
{
	(void)state;
	every_split("{\"code\":\"print(2*3*5*7*11*13)\"}");
}

static void
escapes_split_anywhere(void **state)
{
	(void)state;
	every_split("{\"code\": \"print(\\\"hi\\\")\\nx = 1\\t# tab\\\\ done\\/\\r\\b\\f\"}");
}

static void
unicode_and_surrogates(void **state)
{
	(void)state;
	/* é raw, é escaped, an emoji as a surrogate pair, a CJK escape. */
	every_split("{\"code\":\"s = '\xc3\xa9\\u00e9\\uD83D\\uDE00\\u4e16'\"}");
}

static void
other_keys_first(void **state)
{
	(void)state;
	every_split("{ \"lang\" : \"python\", \"n\": 5, \"ok\": true, \"code\" : \"x = 1\" }");
}

static void
lone_surrogates_become_fffd(void **state)
{
	struct out o;
	int lost;

	(void)state;
	o = decode("{\"code\":\"a\\ud83db\\ude00c\\ud83d\"}", 0, 1, &lost);
	assert_false(lost);
	assert_string_equal(o.buf, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbd");
}

static void
output_comes_as_it_arrives(void **state)
{
	struct sg_codedec d;
	struct out o = { .len = 0 };

	(void)state;
	sg_codedec_init(&d, collect, &o);
	sg_codedec_feed(&d, "{\"code\":\"pri", 12);
	assert_string_equal(o.buf, "pri");
	sg_codedec_feed(&d, "nt(1)\\", 6);
	assert_string_equal(o.buf, "print(1)");
	sg_codedec_feed(&d, "n\"}", 3);
	assert_string_equal(o.buf, "print(1)\n");
	assert_true(d.done);
}

static void
what_it_cannot_follow(void **state)
{
	static const char *const bad[] = {
		"[\"code\"]", "\"print(1)\"", "{\"meta\":{\"a\":1},\"code\":\"x\"}",
		"{\"code\": 42}", "{\"code\":\"\\x\"}", "{\"code\" \"x\"}",
	};
	size_t i;
	int lost;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct out o = decode(bad[i], 0, 1, &lost);

		assert_true(lost);
		(void)o;
	}
}

static void
no_code_key_emits_nothing(void **state)
{
	struct out o;
	int lost;

	(void)state;
	o = decode("{\"source\": \"print(1)\"}", 0, 2, &lost);
	assert_false(lost);
	assert_int_equal(o.len, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_code),
		cmocka_unit_test(escapes_split_anywhere),
		cmocka_unit_test(unicode_and_surrogates),
		cmocka_unit_test(other_keys_first),
		cmocka_unit_test(lone_surrogates_become_fffd),
		cmocka_unit_test(output_comes_as_it_arrives),
		cmocka_unit_test(what_it_cannot_follow),
		cmocka_unit_test(no_code_key_emits_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
