/*
 * fcgi/log and lib/log: every field of the request log line escaped, so
 * a client's bytes can neither end the line nor shift its fields; and
 * every other line (sg_log) escaped whole, so a sandbox's bytes (a path,
 * a provider's message) cannot end it either. fcgi/log.c is built in
 * here: fcgi/ is not part of libsandgate.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* What sg_log calls wrote on stderr, into buf[sz]. */
static void
logged(char *buf, size_t sz, const char *path)
{
	char big[5000];
	int fds[2], saved;
	size_t got = 0;
	ssize_t n;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(pipe(fds), 0);
	fflush(stderr);
	assert_true((saved = dup(2)) != -1);
	assert_int_equal(dup2(fds[1], 2), 2);
	sg_log("sandgate: sandbox %s: files not copied out: %s: %s", "cntr_1",
	    path, "denied");
	sg_log("sandgate: %s", big);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	close(fds[1]);
	while ((n = read(fds[0], buf + got, sz - 1 - got)) > 0)
		got += (size_t)n;
	close(fds[0]);
	buf[got] = '\0';
}

static void
whole_lines_escaped(void **state)
{
	char buf[8192], *second;

	(void)state;
	logged(buf, sizeof(buf), "/mnt/data/d\nsandgate: FORGED\r\x1b[2K"
	    "\xc2\x85\xe2\x80\xa8\\x0a caf\xc3\xa9\xff/f.csv");
	second = strchr(buf, '\n');
	assert_non_null(second);
	*second++ = '\0';
	/* Spaces stay: the line is text, not fields. */
	assert_string_equal(buf, "sandgate: sandbox cntr_1: files not copied "
	    "out: /mnt/data/d\\x0asandgate: FORGED\\x0d\\x1b[2K\\xc2\\x85"
	    "\\xe2\\x80\\xa8\\x5cx0a caf\xc3\xa9\\xff/f.csv: denied");
	/* A line too long is cut, marked, and still one line. */
	assert_true(strlen(second) < 3100);
	assert_memory_equal(second + strlen(second) - 4, "...\n", 4);
	assert_ptr_equal(strchr(second, '\n'), second + strlen(second) - 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(controls_spaces_backslash),
		cmocka_unit_test(utf8_kept_invalid_escaped),
		cmocka_unit_test(long_fields_cut),
		cmocka_unit_test(whole_lines_escaped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
