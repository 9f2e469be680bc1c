/*
 * core/state/usage_scan: the plain usage objects of both APIs are read
 * without Jansson, as the ledger would read them with it (the later of
 * two keys, the Responses name before the Chat one, positive integers
 * only); anything else is handed back (the fuzz target compares the two
 * readers on every input).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "../../core/state/usage_scan.h"

static int
scan(const char *text, struct sg_usage_counts *c)
{
	return sg_usescan(text, strlen(text), c);
}

static void
plain_objects(void **state)
{
	struct sg_usage_counts c;

	(void)state;
	assert_int_equal(scan("{\"input_tokens\":36,\"input_tokens_details\":"
	    "{\"cached_tokens\":12},\"output_tokens\":87,\"output_tokens_details"
	    "\":{\"reasoning_tokens\":64},\"total_tokens\":123}", &c), 0);
	assert_int_equal(c.input, 36);
	assert_int_equal(c.cached, 12);
	assert_int_equal(c.output, 87);
	assert_int_equal(c.reasoning, 64);
	assert_int_equal(scan(" { \"prompt_tokens\" : 19 , \"completion_tokens\""
	    ":10,\"prompt_tokens_details\":{\"cached_tokens\":3,\"audio_tokens\""
	    ":0},\"x\":[1,[2,{\"a\":[true,false,null]}]],\"s\":\"t\"}tail", &c), 0);
	assert_int_equal(c.input, 19);
	assert_int_equal(c.output, 10);
	assert_int_equal(c.cached, 3);
	assert_int_equal(scan("{}", &c), 0);
	assert_int_equal(c.input + c.output + c.cached + c.reasoning, 0);
}

/* As Jansson's tree is read: the last of a key, the first name when it
 * is there at all (whatever its value), positive integers only. */
static void
as_the_tree_reads(void **state)
{
	struct sg_usage_counts c;

	(void)state;
	assert_int_equal(scan("{\"input_tokens\":5,\"input_tokens\":7,"
	    "\"prompt_tokens\":99,\"output_tokens\":\"3\",\"completion_tokens\""
	    ":4,\"input_tokens_details\":null,\"prompt_tokens_details\":"
	    "{\"cached_tokens\":2}}", &c), 0);
	assert_int_equal(c.input, 7);
	assert_int_equal(c.output, 0);
	assert_int_equal(c.cached, 0);
	assert_int_equal(scan("{\"input_tokens\":-5,\"output_tokens\":0}", &c),
	    0);
	assert_int_equal(c.input + c.output, 0);
}

/* Not the plain case, or not JSON: Jansson's to read. */
static void
handed_back(void **state)
{
	static const char *const ask[] = {
		"{\"input_tokens\":1.0}", "{\"cost\":1e3,\"input_tokens\":1}",
		"{\"k\\u0065y\":1}", "{\"s\":\"\\n\"}", "{\"s\":\"\xc3\xa9\"}",
		"{\"input_tokens\":99999999999999999999}", "{\"a\":01}",
		"{\"a\":1,}", "{\"a\" 1}", "{\"a\":1", "[1]", "", "{\"a\":tru}",
		"{\"a\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}",
	};
	struct sg_usage_counts c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ask) / sizeof(ask[0]); i++)
		assert_int_equal(scan(ask[i], &c), SG_USESCAN_ASK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_objects),
		cmocka_unit_test(as_the_tree_reads),
		cmocka_unit_test(handed_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
