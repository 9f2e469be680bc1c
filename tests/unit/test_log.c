/*
 * fcgi/log: every field of the request log line escaped, so a client's
 * bytes can neither end the line nor shift its fields. log.c is built in
 * here: fcgi/ is not part of libsandgate.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "../../fcgi/log.c"

static void
escaped(const char *in, const char *want)
{
	char out[256];

	sg_log_field(out, sizeof(out), in);
	assert_string_equal(out, want);
}

static void
controls_spaces_backslash(void **state)
{
	(void)state;
	escaped("gpt-4.1-mini", "gpt-4.1-mini");
	escaped("x\nFORGED 200", "x\\x0aFORGED\\x20200");
	escaped("a\rb\tc\x1b[31m", "a\\x0db\\x09c\\x1b[31m");
	escaped("back\\x0a", "back\\x5cx0a");
	escaped("del\x7f", "del\\x7f");
	escaped("", "");
}

static void
utf8_kept_invalid_escaped(void **state)
{
	(void)state;
	escaped("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	    "caf\xc3\xa9\\x20\xe2\x82\xac\\x20\xf0\x9f\x98\x80");
	escaped("\xff", "\\xff");
	escaped("\xc0\x80", "\\xc0\\x80");		/* overlong NUL */
	escaped("\xed\xa0\x80", "\\xed\\xa0\\x80");	/* a surrogate */
	escaped("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */
	escaped("\xe2\x82", "\\xe2\\x82");		/* cut short */
	escaped("\xe0\x9f\xbf", "\\xe0\\x9f\\xbf");	/* overlong */
}

/* A field too long is cut where a character or an escape ends. */
static void
long_fields_cut(void **state)
{
	char out[12];

	(void)state;
	sg_log_field(out, sizeof(out), "abcdefghijklmnop");
	assert_string_equal(out, "abcdefgh...");
	sg_log_field(out, sizeof(out), "abcde\n\n");
	assert_string_equal(out, "abcde...");
	sg_log_field(out, sizeof(out), "abcdef\xe2\x82\xac");
	assert_string_equal(out, "abcdef...");
	sg_log_field(out, sizeof(out), "abcdefgh");
	assert_string_equal(out, "abcdefgh");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(controls_spaces_backslash),
		cmocka_unit_test(utf8_kept_invalid_escaped),
		cmocka_unit_test(long_fields_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
