/*
 * core/config/keyset: a key's settings read from JSON with the config
 * file's bounds, each bad member named; written back with only what is
 * set; members it does not know are left alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../core/config/keyset.h"

static void
round_trip(void **state)
{
	struct sg_cfg_key k;
	char err[256], *text;
	json_t *o;

	(void)state;
	sg_keyset_init(&k);
	assert_int_equal(sg_keyset_parse("{\"rpm\":600,\"tpm\":200000,\"budget\":"
	    "50.5,\"budget_period\":\"week\",\"sandbox_seconds\":3600,"
	    "\"max_concurrent\":4,\"tools\":[\"local\",\"e2b\"],"
	    "\"redacted_value\":\"sk-...abcd\"}", &k, err, sizeof(err)), 0);
	assert_int_equal(k.limits.rpm, 600);
	assert_int_equal(k.limits.tpm, 200000);
	assert_true(k.limits.budget == 50.5);
	assert_int_equal(k.limits.period, SG_PERIOD_WEEK);
	assert_int_equal(k.limits.sandbox_seconds, 3600);
	assert_int_equal(k.max_concurrent, 4);
	assert_int_equal(k.ntools, 2);
	assert_string_equal(k.tools[1], "e2b");
	o = sg_keyset_json(&k);
	text = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(text, "{\"budget\":50.5,\"budget_period\":\"week\","
	    "\"max_concurrent\":4,\"rpm\":600,\"sandbox_seconds\":3600,"
	    "\"tools\":[\"local\",\"e2b\"],\"tpm\":200000}");
	free(text);
	json_decref(o);
	sg_keyset_clear(&k);
}

/* Nothing set: nothing written, every limit left to auth.limits. */
static void
nothing_set(void **state)
{
	struct sg_cfg_key k;
	char err[256], *text;
	json_t *o;

	(void)state;
	sg_keyset_init(&k);
	assert_int_equal(sg_keyset_parse(NULL, &k, err, sizeof(err)), 0);
	assert_int_equal(sg_keyset_parse("{\"rpm\":null}", &k, err,
	    sizeof(err)), 0);
	assert_int_equal(k.limits.rpm, -1);
	assert_true(k.limits.budget < 0);
	assert_null(k.tools);
	o = sg_keyset_json(&k);
	text = json_dumps(o, JSON_COMPACT);
	assert_string_equal(text, "{}");
	free(text);
	json_decref(o);
	/* An empty list is no tool at all, not every tool. */
	assert_int_equal(sg_keyset_parse("{\"tools\":[]}", &k, err,
	    sizeof(err)), 0);
	assert_non_null(k.tools);
	assert_int_equal(k.ntools, 0);
	sg_keyset_clear(&k);
}

static void
bad_members_named(void **state)
{
	static const struct {
		const char *json, *param;
	} bad[] = {
		{ "{\"rpm\":-1}", "rpm" },
		{ "{\"rpm\":1.5}", "rpm" },
		{ "{\"tpm\":\"x\"}", "tpm" },
		{ "{\"budget\":-0.01}", "budget" },
		{ "{\"budget\":\"5\"}", "budget" },
		{ "{\"budget_period\":\"year\"}", "budget_period" },
		{ "{\"sandbox_seconds\":1e3}", "sandbox_seconds" },
		{ "{\"max_concurrent\":0}", "max_concurrent" },
		{ "{\"tools\":\"local\"}", "tools" },
		{ "{\"tools\":[1]}", "tools" },
		{ "{\"tools\":[\"\"]}", "tools" },
	};
	struct sg_cfg_key k;
	const char *param;
	char err[256];
	json_t *o;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sg_keyset_init(&k);
		assert_non_null(o = json_loads(bad[i].json, 0, NULL));
		assert_int_equal(sg_keyset_read(o, &k, err, sizeof(err), &param),
		    -1);
		assert_string_equal(param, bad[i].param);
		assert_non_null(strstr(err, bad[i].param));
		assert_null(k.tools);
		json_decref(o);
	}
	sg_keyset_init(&k);
	assert_int_equal(sg_keyset_parse("not json", &k, err, sizeof(err)), -1);
	assert_int_equal(sg_keyset_parse("[1]", &k, err, sizeof(err)), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(nothing_set),
		cmocka_unit_test(bad_members_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
