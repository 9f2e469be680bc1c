/*
 * sg_wdump: the upstream body's text is json_dumps' text at every turn,
 * the list's items dumped once: through appends, the list made anew
 * (a string input turned into a list, a shorter list), members changed
 * around it, an empty list, and no list at all.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../core/loop/wdump.h"

/* w's text of work is json_dumps' text. */
static void
same(struct sg_wdump *w, const json_t *work, const char *key)
{
	char *want = json_dumps(work, JSON_COMPACT), *got;
	size_t len;

	assert_non_null(want);
	got = sg_wdump_text(w, work, key, &len);
	assert_non_null(got);
	assert_int_equal(len, strlen(want));
	assert_string_equal(got, want);
	free(got);
	free(want);
}

static void
turns(void **state)
{
	struct sg_wdump w = { 0 };
	json_t *work = json_pack("{s:s,s:s,s:[{s:s,s:{}}],s:s,s:b}", "model",
	    "m", "input", "hi \"there\"\n\xc3\xa9", "tools", "type", "function",
	    "parameters", "tool_choice", "required", "stream", 1);
	json_t *list;
	int k;

	(void)state;
	same(&w, work, "input");
	list = json_pack("[{s:s,s:s}]", "role", "user", "content", "hi");
	json_object_set_new(work, "input", list);
	same(&w, work, "input");
	for (k = 0; k < 4; k++) {
		json_array_append_new(list, json_pack("{s:s,s:s,s:s}", "type",
		    "function_call", "call_id", "c\x01", "arguments",
		    "{\"code\":\"print(1)\"}"));
		json_array_append_new(list, json_pack("{s:s,s:s,s:s}", "type",
		    "function_call_output", "call_id", "c", "output", "1\n"));
		if (k == 1)
			json_object_set_new(work, "tool_choice", json_string("auto"));
		if (k == 2)
			json_object_del(work, "tool_choice");
		same(&w, work, "input");
	}
	/* A new list in its place, as long and longer; then shorter. */
	list = json_deep_copy(list);
	json_array_set_new(list, 0, json_string("other"));
	json_array_append_new(list, json_true());
	json_object_set_new(work, "input", list);
	same(&w, work, "input");
	/* A new, shorter list in its place. */
	json_object_set_new(work, "input", json_pack("[{s:s}]", "k", "v"));
	same(&w, work, "input");
	json_object_set_new(work, "input", json_array());
	same(&w, work, "input");
	json_object_del(work, "input");
	same(&w, work, "input");
	json_object_set_new(work, "k\xc3\xa9y \"q\"", json_integer(-3));
	json_object_set_new(work, "input", json_pack("[i,n]", 1));
	same(&w, work, "input");
	/* More members than are kept: the rest dumped each time. */
	for (k = 0; k < SG_WDUMP_MEMBERS + 5; k++) {
		char name[16];

		snprintf(name, sizeof(name), "m%d", k);
		json_object_set_new(work, name, json_pack("{s:i}", "v", k));
		same(&w, work, "input");
	}
	json_object_set_new(work, "m3", json_string("new"));
	json_object_set_new(work, "m28", json_string("newer"));
	json_array_append_new(json_object_get(work, "input"), json_false());
	same(&w, work, "input");
	sg_wdump_free(&w);
	json_decref(work);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(turns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
