/*
 * sg_codedec: the code of a streamed call, decoded from its arguments as
 * they arrive, split anywhere.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "../../core/render/codedec.h"
#include "../../core/loop/rewrite.h"

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

/* Decode args byte by byte; the decoder in *d for its flags. */
static struct out
decode_all(const char *args, struct sg_codedec *d)
{
	struct out o = { .len = 0 };
	size_t i, len = strlen(args);

	sg_codedec_init(d, collect, &o);
	for (i = 0; i < len; i++)
		sg_codedec_feed(d, args + i, 1);
	/* d.arg points at this o: d is not fed again, only read. */
	return o;
}

/*
 * A key given twice: Jansson would keep the last value, so the client
 * would be shown one program while another ran. The decoder marks the
 * arguments invalid (sg_rw_code_arg refuses them) and never shows a
 * second code, however the key is spelled or split.
 */
static void
repeated_key_is_invalid(void **state)
{
	static const struct {
		const char *args, *shown;
	} cases[] = {
		{ "{\"code\":\"print('a')\",\"code\":\"print('b')\"}", "print('a')" },
		{ "{\"code\":\"a\",\"c\\u006fde\":\"b\"}", "a" },
		{ "{\"code\":\"a\",\"\\u0063ode\":\"b\"}", "a" },
		{ "{\"code\":\"a\", \"n\":1, \"n\":2}", "a" },
		{ "{\"x\":\"1\",\"x\":\"2\",\"code\":\"a\"}", "" },
		{ "{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2,\"code\":\"a\"}", "" },
	};
	struct sg_codedec d;
	struct out o;
	size_t i, split, len;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		len = strlen(cases[i].args);
		for (split = 0; split <= len; split++) {
			o = (struct out){ .len = 0 };
			sg_codedec_init(&d, collect, &o);
			sg_codedec_feed(&d, cases[i].args, split);
			sg_codedec_feed(&d, cases[i].args + split, len - split);
			if (!d.invalid || strcmp(o.buf, cases[i].shown) != 0)
				fail_msg("%s split at %zu: invalid %d, shown \"%s\"",
				    cases[i].args, split, d.invalid, o.buf);
		}
	}
}

/* Keys are decoded as Jansson decodes them: an escaped "code" is the
 * code, and what is shown is what Jansson reads. */
static void
escaped_code_key(void **state)
{
	(void)state;
	every_split("{\"c\\u006fde\":\"x = 1\"}");
	every_split("{\"\\u0063\\u006F\\u0064\\u0065\" : \"y\"}");
}

/* What the decoder cannot check, it stops on: a NUL in a key (Jansson
 * refuses those), more keys than it keeps. */
static void
keys_it_cannot_check(void **state)
{
	struct sg_codedec d;
	struct out o;
	char many[2048];
	size_t n = 0;
	int k;

	(void)state;
	o = decode_all("{\"co\\u0000de\":\"x\",\"code\":\"y\"}", &d);
	assert_true(d.lost);
	assert_int_equal(o.len, 0);
	n += (size_t)snprintf(many, sizeof(many), "{");
	for (k = 0; k < 60; k++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "\"key%d\":%d,",
		    k, k);
	snprintf(many + n, sizeof(many) - n, "\"code\":\"z\"}");
	o = decode_all(many, &d);
	assert_true(d.lost);
	assert_int_equal(o.len, 0);
}

/* The decoder's verdict and sg_rw_code_arg's agree: arguments it takes
 * as valid run exactly what it showed; arguments it finds invalid are
 * refused. */
static void
same_rule_as_the_run(void **state)
{
	static const char *const args[] = {
		"{\"code\":\"a\"}", "{\"code\":\"a\",\"code\":\"b\"}",
		"{\"code\":\"a\",\"c\\u006fde\":\"b\"}", "{\"n\":1,\"code\":\"a\"}",
		"{\"n\":1,\"n\":1,\"code\":\"a\"}", "{\"code\":\"a\",\"x\":null}",
		"{\"code\":\"a\",\"x\":null,\"x\":true}",
	};
	struct sg_codedec d;
	struct out o;
	char *code, *problem;
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		o = decode_all(args[i], &d);
		rc = sg_rw_code_arg(args[i], strlen(args[i]), &code, &problem);
		if (d.invalid != (rc == -1))
			fail_msg("%s: decoder invalid %d, run rc %d", args[i],
			    d.invalid, rc);
		if (rc == 0 && strcmp(code, o.buf) != 0)
			fail_msg("%s: shown \"%s\", runs \"%s\"", args[i], o.buf,
			    code);
		free(code);
		free(problem);
	}
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
		cmocka_unit_test(repeated_key_is_invalid),
		cmocka_unit_test(escaped_code_key),
		cmocka_unit_test(keys_it_cannot_check),
		cmocka_unit_test(same_rule_as_the_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
