/*
 * lib/util: lossy JSON strings, random ids, SHA-256, constant-time compare.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "../../lib/util.h"

#define FFFD "\xef\xbf\xbd"

/* The JSON string lossy() makes of buf[0..len), as bytes and length. */
static json_t *
lossy(const char *buf, size_t len)
{
	json_t *j = sg_json_string_lossy(buf, len);

	assert_non_null(j);
	assert_true(json_is_string(j));
	return j;
}

/* Assert that lossy(in) is exactly want[0..wantlen). */
static void
check_exact(const char *in, size_t inlen, const char *want, size_t wantlen)
{
	json_t *j = lossy(in, inlen);
	size_t got = json_string_length(j);

	if (got != wantlen || memcmp(json_string_value(j), want, got) != 0) {
		json_decref(j);
		fail_msg("lossy result has length %zu, want %zu or differs",
		    got, wantlen);
	}
	json_decref(j);
}

/*
 * Assert that lossy(in) is head, then one or more U+FFFD, then tail: the
 * bad bytes are replaced (how many replacement characters one broken
 * sequence gives is a policy choice), nothing else is lost or altered.
 */
static void
check_replaced(const char *in, size_t inlen, const char *head,
    const char *tail)
{
	json_t *j = lossy(in, inlen);
	const char *s = json_string_value(j);
	size_t len = json_string_length(j), hl = strlen(head), tl = strlen(tail);
	size_t mid, i;
	int ok;

	ok = len >= hl + 3 + tl && memcmp(s, head, hl) == 0 &&
	    memcmp(s + len - tl, tail, tl) == 0;
	mid = ok ? len - hl - tl : 0;
	ok = ok && mid % 3 == 0;
	for (i = 0; ok && i < mid; i += 3)
		ok = memcmp(s + hl + i, FFFD, 3) == 0;
	json_decref(j);
	if (!ok)
		fail_msg("lossy(\"%s...\") is not head + U+FFFD... + tail", head);
}

static void
lossy_valid_ascii_unchanged(void **state)
{
	(void)state;
	check_exact("hello, world", 12, "hello, world", 12);
}

static void
lossy_valid_multibyte_unchanged(void **state)
{
	/* 2-, 3- and 4-byte sequences, and the extremes U+FFFF, U+10FFFF. */
	static const char s[] = "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac "
	    "\xf0\x9f\x98\x80 \xef\xbf\xbf \xf4\x8f\xbf\xbf";

	(void)state;
	check_exact(s, sizeof(s) - 1, s, sizeof(s) - 1);
}

static void
lossy_empty(void **state)
{
	(void)state;
	check_exact("", 0, "", 0);
}

static void
lossy_stray_byte_replaced(void **state)
{
	(void)state;
	check_exact("a\xff" "b", 3, "a" FFFD "b", 5);
	check_exact("\x80", 1, FFFD, 3);
	check_exact("x\xfe\xffy", 4, "x" FFFD FFFD "y", 8);
}

static void
lossy_valid_char_after_bad_byte_kept(void **state)
{
	/* The character right after a bad lead byte must not be swallowed. */
	(void)state;
	check_exact("\xff\xc3\xa9!", 4, FFFD "\xc3\xa9!", 6);
	check_exact("\xe2\xf0\x9f\x98\x80", 5, FFFD "\xf0\x9f\x98\x80", 7);
}

static void
lossy_truncated_at_end(void **state)
{
	/* What a byte cap leaves of "é", "€" and "😀". */
	(void)state;
	check_replaced("ab\xc3", 3, "ab", "");
	check_replaced("ab\xe2\x82", 4, "ab", "");
	check_replaced("ab\xf0\x9f\x98", 5, "ab", "");
}

static void
lossy_truncated_in_middle(void **state)
{
	(void)state;
	check_replaced("a\xe2\x82z", 4, "a", "z");
	check_replaced("a\xf0\x9f" "bc", 5, "a", "bc");
}

static void
lossy_overlong_replaced(void **state)
{
	/* "/" as C0 AF, E0 80 AF and F0 80 80 AF; NUL as C0 80. */
	(void)state;
	check_replaced("a\xc0\xaf" "b", 4, "a", "b");
	check_replaced("a\xe0\x80\xaf" "b", 5, "a", "b");
	check_replaced("a\xf0\x80\x80\xaf" "b", 6, "a", "b");
	check_replaced("a\xc0\x80" "b", 4, "a", "b");
}

static void
lossy_surrogates_replaced(void **state)
{
	/* U+D800 and U+DFFF encoded (CESU / WTF-8 leftovers). */
	(void)state;
	check_replaced("a\xed\xa0\x80" "b", 5, "a", "b");
	check_replaced("a\xed\xbf\xbf" "b", 5, "a", "b");
	/* A whole CESU-8 pair for U+1F600. */
	check_replaced("a\xed\xa0\xbd\xed\xb8\x80" "b", 8, "a", "b");
}

static void
lossy_beyond_u10ffff_replaced(void **state)
{
	(void)state;
	check_replaced("a\xf4\x90\x80\x80" "b", 6, "a", "b");
	check_replaced("a\xf5\x80\x80\x80" "b", 6, "a", "b");
}

static void
lossy_embedded_nul_kept(void **state)
{
	(void)state;
	/* Valid input: the NUL and what follows it stay. */
	check_exact("a\0b", 3, "a\0b", 3);
	/* Invalid input takes the repair path: still length-aware. */
	check_exact("a\0b\xff" "c", 5, "a\0b" FFFD "c", 7);
}

static void
lossy_result_is_valid_utf8(void **state)
{
	/* Every byte value at every position: the result must always be a
	 * string jansson accepts, so never NULL. */
	char buf[3];
	int b;

	(void)state;
	for (b = 0; b < 256; b++) {
		json_t *j;

		buf[0] = 'x';
		buf[1] = (char)b;
		buf[2] = (char)(b ^ 0x40);
		j = sg_json_string_lossy(buf, sizeof(buf));
		assert_non_null(j);
		assert_non_null(json_string_value(j));
		json_decref(j);
	}
}

static int
all_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return 0;
	return 1;
}

static void
rand_id_shape(void **state)
{
	char id[64];

	(void)state;
	assert_int_equal(sg_rand_id(id, sizeof(id), "req_", 16), 0);
	assert_int_equal(strlen(id), 4 + 32);
	assert_memory_equal(id, "req_", 4);
	assert_true(all_hex(id + 4, 32));
}

static void
rand_id_exact_fit(void **state)
{
	/* prefix + 2 * nbytes + 1 is enough, one less is not. */
	char id[5 + 16 + 1];

	(void)state;
	memset(id, 'Z', sizeof(id));
	assert_int_equal(sg_rand_id(id, sizeof(id), "cntr_", 8), 0);
	assert_int_equal(strlen(id), 5 + 16);
	assert_true(all_hex(id + 5, 16));
	assert_int_equal(sg_rand_id(id, sizeof(id) - 1, "cntr_", 8), -1);
}

static void
rand_id_too_small(void **state)
{
	char id[8];

	(void)state;
	assert_int_equal(sg_rand_id(id, sizeof(id), "req_", 16), -1);
	assert_int_equal(sg_rand_id(id, 0, "", 1), -1);
}

static void
rand_id_differs(void **state)
{
	char a[64], b[64];

	(void)state;
	assert_int_equal(sg_rand_id(a, sizeof(a), "req_", 16), 0);
	assert_int_equal(sg_rand_id(b, sizeof(b), "req_", 16), 0);
	assert_string_not_equal(a, b);
}

/* A number as so many hex digits, the highest first, the rest cut. */
static void
hex_fixed_width(void **state)
{
	char out[20];

	(void)state;
	memset(out, 'Z', sizeof(out));
	sg_hex(out, 0x1a2bULL, 6);
	assert_memory_equal(out, "001a2bZ", 7);
	sg_hex(out, 0xfedcba9876543210ULL, 16);
	assert_memory_equal(out, "fedcba9876543210Z", 17);
	sg_hex(out, 0x12345ULL, 4);
	assert_memory_equal(out, "2345", 4);
	sg_hex(out, 7, 0);
	assert_memory_equal(out, "2345", 4);
}

/* The time first, in order, then random digits. */
static void
time_id_sorts_by_time(void **state)
{
	char prev[64] = "", id[64], tail[64] = "";
	unsigned long sec;
	struct timespec before, after;
	int i;

	(void)state;
	/* The id's clock: time() reads the coarse clock, which can be a
	 * second behind it just after a second turns. */
	clock_gettime(CLOCK_REALTIME, &before);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(sg_time_id(id, sizeof(id), "ci_", 16), 0);
		assert_int_equal(strlen(id), 3 + 32);
		assert_memory_equal(id, "ci_", 3);
		assert_true(all_hex(id + 3, 32));
		/* Later or the same microsecond, never earlier. */
		assert_true(memcmp(prev, id, 3 + 13) <= 0 || prev[0] == '\0');
		assert_string_not_equal(id + 16, tail);
		memcpy(prev, id, sizeof(id));
		memcpy(tail, id + 16, strlen(id + 16) + 1);
	}
	clock_gettime(CLOCK_REALTIME, &after);
	assert_int_equal(sscanf(id + 3, "%8lx", &sec), 1);
	assert_true(sec >= (unsigned long)before.tv_sec &&
	    sec <= (unsigned long)after.tv_sec);
	/* Fewer than 8 bytes would leave too little to chance. */
	assert_int_equal(sg_time_id(id, sizeof(id), "ci_", 7), -1);
	assert_int_equal(sg_time_id(id, 3 + 32, "ci_", 16), -1);
}

static void
rand_id_empty_prefix(void **state)
{
	char id[16];

	(void)state;
	assert_int_equal(sg_rand_id(id, sizeof(id), "", 4), 0);
	assert_int_equal(strlen(id), 8);
	assert_true(all_hex(id, 8));
}

static void
sha256_known_vectors(void **state)
{
	char out[65];

	(void)state;
	sg_sha256_hex("abc", 3, out);
	assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	sg_sha256_hex("", 0, out);
	assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
	sg_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	    56, out);
	assert_string_equal(out, "248d6a61d20638b8e5c026930c3e6039"
	    "a33ce45964ff2167f6ecedd419db06c1");
}

static void
sha256_length_aware(void **state)
{
	char a[65], b[65];

	(void)state;
	/* Bytes after a NUL count. */
	sg_sha256_hex("a\0b", 3, a);
	sg_sha256_hex("a", 1, b);
	assert_string_not_equal(a, b);
	assert_int_equal(strlen(a), 64);
}

static void
secret_eq_compares(void **state)
{
	(void)state;
	assert_int_equal(sg_secret_eq("abcdef", "abcdef", 6), 1);
	assert_int_equal(sg_secret_eq("abcdef", "abcdeF", 6), 0);
	assert_int_equal(sg_secret_eq("xbcdef", "abcdef", 6), 0);
	/* Only len bytes are compared. */
	assert_int_equal(sg_secret_eq("abcX", "abcY", 3), 1);
	assert_int_equal(sg_secret_eq("a\0c", "a\0d", 3), 0);
	assert_int_equal(sg_secret_eq("", "", 0), 1);
}

static void
now_ms_monotonic(void **state)
{
	int64_t a, b;

	(void)state;
	a = sg_now_ms();
	b = sg_now_ms();
	assert_true(a > 0);
	assert_true(b >= a);
}

static void
json_size_counts_outside_strings(void **state)
{
	static const char many[] = "[0,0,0,0,[1,2],{\"a\":[[[]]]}]";
	static const char quoted[] = "\"[,{\\\",]\"";
	int depth;

	(void)state;
	assert_int_equal(sg_json_size("1", 1, &depth), 1);
	assert_int_equal(depth, 0);
	assert_int_equal(sg_json_size(many, sizeof(many) - 1, &depth), 13);
	assert_int_equal(depth, 5);
	/* Brackets, commas and escaped quotes inside a string count nothing. */
	assert_int_equal(sg_json_size(quoted, sizeof(quoted) - 1, &depth), 1);
	assert_int_equal(depth, 0);
	/* Unbalanced input is only counted: the parser refuses it later. */
	assert_int_equal(sg_json_size("]]]]", 4, &depth), 1);
	assert_int_equal(depth, 0);
}

/* sg_copy is snprintf's "%s": cut to fit and ended, NULL as "", and a
 * size of 0 writes nothing. */
static void
copy_as_snprintf(void **state)
{
	char a[8], b[8];
	const char *srcs[] = { "", "abc", "1234567", "12345678", "123456789abc",
	    NULL };
	size_t i, sz;

	(void)state;
	for (i = 0; srcs[i] != NULL; i++)
		for (sz = 1; sz <= sizeof(a); sz++) {
			memset(a, 'x', sizeof(a));
			memset(b, 'x', sizeof(b));
			snprintf(a, sz, "%s", srcs[i]);
			assert_ptr_equal(sg_copy(b, sz, srcs[i]), b);
			assert_memory_equal(a, b, sizeof(a));
		}
	memset(b, 'x', sizeof(b));
	assert_string_equal(sg_copy(b, sizeof(b), NULL), "");
	assert_int_equal(b[1], 'x');
	memset(b, 'x', sizeof(b));
	assert_ptr_equal(sg_copy(b, 0, "abc"), b);
	assert_memory_equal(b, "xxxxxxxx", sizeof(b));
}

/* Two and three parts, every size from 0 to past their length: what
 * snprintf writes and says, byte for byte. */
static void
join_as_snprintf(void **state)
{
	const char *srcs[] = { "", "a", "abc", "1234567", NULL };
	char a[12], b[12];
	size_t i, j, sz;
	int n;

	(void)state;
	for (i = 0; srcs[i] != NULL; i++)
		for (j = 0; srcs[j] != NULL; j++)
			for (sz = 0; sz <= sizeof(a); sz++) {
				memset(a, 'x', sizeof(a));
				memset(b, 'x', sizeof(b));
				n = snprintf(a, sz, "%s/%s", srcs[i], srcs[j]);
				assert_int_equal(sg_join(b, sz, srcs[i], "/",
				    srcs[j], NULL), (size_t)n);
				assert_memory_equal(a, b, sizeof(a));
				n = snprintf(a, sz, "%s%s", srcs[i], srcs[j]);
				assert_int_equal(sg_join(b, sz, srcs[i],
				    srcs[j], NULL), (size_t)n);
				assert_memory_equal(a, b, sizeof(a));
			}
	assert_int_equal(sg_join(b, sizeof(b), NULL), 0);
	assert_string_equal(b, "");
	/* Parts past the first three, and past what fits. */
	assert_int_equal(sg_join(b, sizeof(b), "ab", "", "cd", "e", "fgh",
	    "ijklm", NULL), 13);
	assert_string_equal(b, "abcdefghijk");
}

/* What "%lld" writes, over the ends of the range and the sizes around a
 * number's length; "" when it does not fit whole. */
static void
dec_as_printf(void **state)
{
	const long long vs[] = { 0, 7, -7, 10, 49999, -100, LLONG_MAX,
	    LLONG_MIN };
	char want[32], got[32];
	size_t i, sz;

	(void)state;
	for (i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		snprintf(want, sizeof(want), "%lld", vs[i]);
		assert_string_equal(sg_dec(got, 24, vs[i]), want);
		for (sz = 1; sz <= strlen(want) + 1; sz++) {
			memset(got, 'x', sizeof(got));
			sg_dec(got, sz, vs[i]);
			assert_string_equal(got, sz > strlen(want) ? want : "");
		}
	}
	memset(got, 'x', sizeof(got));
	assert_ptr_equal(sg_dec(got, 0, 5), got);
	assert_int_equal(got[0], 'x');
}

static void
pct_encode(void **state)
{
	char out[32];

	(void)state;
	assert_int_equal(sg_pct_encode("a b/\xc3\xa9~", "-._~/", out,
	    sizeof(out)), 0);
	assert_string_equal(out, "a%20b/%C3%A9~");
	assert_int_equal(sg_pct_encode("", "", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	/* Exactly what fits, and one byte more. */
	assert_int_equal(sg_pct_encode("abc", "", out, 4), 0);
	assert_string_equal(out, "abc");
	assert_int_equal(sg_pct_encode("abcd", "", out, 4), -1);
	assert_int_equal(sg_pct_encode("%", "", out, 4), 0);
	assert_string_equal(out, "%25");
	assert_int_equal(sg_pct_encode("%", "", out, 3), -1);
	assert_int_equal(sg_pct_encode("", "", out, 0), -1);
	assert_int_equal(sg_hexval('f'), 15);
	assert_int_equal(sg_hexval('G'), -1);
}

/* printf's text appended, NUL-terminated, growing past the first
 * allocation. */
static void
buf_printf_appends(void **state)
{
	struct sg_buf b = { 0 };
	int i;

	(void)state;
	assert_int_equal(sg_buf_printf(&b, "%s=%d", "a", 1), 0);
	assert_int_equal(sg_buf_printf(&b, ";%05d", 42), 0);
	assert_string_equal(b.p, "a=1;00042");
	for (i = 0; i < 100; i++)
		assert_int_equal(sg_buf_printf(&b, "%s", "0123456789"), 0);
	assert_int_equal(b.len, 9 + 1000);
	assert_int_equal(strlen(b.p), b.len);
	free(b.p);
}

/* Every byte value at every place of a run longer than a word step: the
 * plain run ends exactly at the first byte a JSON string must escape or
 * that starts a multibyte character, and a run of all plain bytes is
 * taken whole, whatever its length. */
static void
json_plain_stops_at_the_first_special(void **state)
{
	/* Seven plain bytes at a bound, then the byte past it. */
	static const char *const edges[] = { "\x20\x20\x20\x20\x20\x20\x20\x1f",
	    "\x21\x21\x21\x21\x21\x21\x21\x22", "\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x80",
	    "\x5d\x5d\x5d\x5d\x5d\x5d\x5d\x5c", "\x23\x23\x23\x23\x23\x23\x23\x00" };
	char buf[40];
	size_t len, at, want;
	int c;

	(void)state;
	for (len = 0; len <= sizeof(buf); len++) {
		memset(buf, 'a', sizeof(buf));
		assert_int_equal(sg_json_plain(buf, len), len);
	}
	for (c = 0; c < 256; c++)
		for (at = 0; at < 24; at++) {
			memset(buf, 'x', sizeof(buf));
			buf[at] = (char)c;
			want = c >= 0x20 && c < 0x80 && c != '"' && c != '\\' ?
			    sizeof(buf) : at;
			assert_int_equal(sg_json_plain(buf, sizeof(buf)), want);
			/* And a special byte after the end is not looked at. */
			assert_int_equal(sg_json_plain(buf, at), at);
			/* Nor missed in the last bytes, past whole steps. */
			for (len = at + 1; len < 24; len++)
				assert_int_equal(sg_json_plain(buf, len),
				    want == at ? at : len);
		}
	/* Bytes just inside and outside each bound, side by side: a
	 * borrow across bytes must not hide one nor invent one. */
	memcpy(buf, "\x20\x7e!#[]~\x21\x5b\x5d\x7f", 11);
	assert_int_equal(sg_json_plain(buf, 11), 11);
	for (at = 0; at < sizeof(edges) / sizeof(edges[0]); at++)
		assert_int_equal(sg_json_plain(edges[at], 8), 7);
}

/* The well-formed prefix is what sg_utf8_len, a character at a time,
 * finds: a bad byte after a long ASCII run, inside a word step, or in a
 * character cut at the end, is where it stops. */
static void
utf8_prefix_stops_at_the_first_bad_byte(void **state)
{
	static const char *const bad[] = { "\xff", "\xc3", "\xe2\x82",
	    "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80" };
	char buf[64];
	size_t at, k, n, c, want;

	(void)state;
	assert_int_equal(sg_utf8_prefix("", 0), 0);
	memcpy(buf, "abcdefgh\xc3\xa9ijklmnop\xe2\x82\xac", 22);
	assert_int_equal(sg_utf8_prefix(buf, 22), 22);
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		for (at = 0; at < 20; at++) {
			memset(buf, 'a', sizeof(buf));
			n = strlen(bad[k]);
			memcpy(buf + at, bad[k], n);
			for (want = 0; want < at + n; want += c)
				if ((c = sg_utf8_len((unsigned char *)buf +
				    want, at + n - want)) == 0)
					break;
			assert_int_equal(sg_utf8_prefix(buf, at + n), want);
			assert_true(want <= at);
			assert_int_equal(sg_utf8_prefix(buf, at), at);
		}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(json_size_counts_outside_strings),
		cmocka_unit_test(json_plain_stops_at_the_first_special),
		cmocka_unit_test(utf8_prefix_stops_at_the_first_bad_byte),
		cmocka_unit_test(buf_printf_appends),
		cmocka_unit_test(lossy_valid_ascii_unchanged),
		cmocka_unit_test(lossy_valid_multibyte_unchanged),
		cmocka_unit_test(lossy_empty),
		cmocka_unit_test(lossy_stray_byte_replaced),
		cmocka_unit_test(lossy_valid_char_after_bad_byte_kept),
		cmocka_unit_test(lossy_truncated_at_end),
		cmocka_unit_test(lossy_truncated_in_middle),
		cmocka_unit_test(lossy_overlong_replaced),
		cmocka_unit_test(lossy_surrogates_replaced),
		cmocka_unit_test(lossy_beyond_u10ffff_replaced),
		cmocka_unit_test(lossy_embedded_nul_kept),
		cmocka_unit_test(lossy_result_is_valid_utf8),
		cmocka_unit_test(rand_id_shape),
		cmocka_unit_test(rand_id_exact_fit),
		cmocka_unit_test(rand_id_too_small),
		cmocka_unit_test(rand_id_differs),
		cmocka_unit_test(rand_id_empty_prefix),
		cmocka_unit_test(hex_fixed_width),
		cmocka_unit_test(time_id_sorts_by_time),
		cmocka_unit_test(sha256_known_vectors),
		cmocka_unit_test(sha256_length_aware),
		cmocka_unit_test(secret_eq_compares),
		cmocka_unit_test(now_ms_monotonic),
		cmocka_unit_test(pct_encode),
		cmocka_unit_test(copy_as_snprintf),
		cmocka_unit_test(join_as_snprintf),
		cmocka_unit_test(dec_as_printf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
