/*
 * core/answer: usage summed over turns (the upstream's numbers may be
 * anything: a sum never overflows), and the answers leave what they are
 * given unchanged (they share it rather than copy it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../core/answer.h"

static json_t *
j(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &e);

	if (v == NULL)
		fail_msg("bad test JSON (%s): %s", e.text, text);
	return v;
}

static void
assert_json(const json_t *got, const char *want_text)
{
	json_t *want = j(want_text);
	char *g;

	if (!json_equal((json_t *)got, want)) {
		g = json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY);
		fail_msg("got %s, want %s", g, want_text);
	}
	json_decref(want);
}

static void
usage_adds_up(void **state)
{
	json_t *acc = json_object(), *u = j("{\"input_tokens\":10,"
	    "\"output_tokens\":5,\"details\":{\"cached\":2},\"cost\":0.5,"
	    "\"model\":\"m\"}");

	(void)state;
	sg_answer_add_usage(acc, u);
	sg_answer_add_usage(acc, u);
	assert_json(acc, "{\"input_tokens\":20,\"output_tokens\":10,"
	    "\"details\":{\"cached\":4},\"cost\":1.0}");
	json_decref(u);
	json_decref(acc);
}

/* A signed overflow is undefined (UBSan stops on it): sums stay at the
 * ends of the range instead. */
static void
usage_never_overflows(void **state)
{
	json_t *acc = json_object(), *big = json_pack("{s:I,s:I}", "a",
	    (json_int_t)LLONG_MAX, "b", (json_int_t)LLONG_MIN);
	json_t *one = j("{\"a\":1,\"b\":-1}"), *huge = j("{\"r\":1e308}");

	(void)state;
	sg_answer_add_usage(acc, big);
	sg_answer_add_usage(acc, one);
	sg_answer_add_usage(acc, big);
	assert_true(json_integer_value(json_object_get(acc, "a")) == LLONG_MAX);
	assert_true(json_integer_value(json_object_get(acc, "b")) == LLONG_MIN);
	/* An infinite real cannot be JSON: the last finite sum stays. */
	sg_answer_add_usage(acc, huge);
	sg_answer_add_usage(acc, huge);
	assert_true(json_real_value(json_object_get(acc, "r")) == 1e308);
	json_decref(big);
	json_decref(one);
	json_decref(huge);
	json_decref(acc);
}

/* The answer shares the upstream's response and the client's body, and
 * changes neither. */
static void
responses_answer_changes_nothing(void **state)
{
	json_t *last = j("{\"id\":\"resp_up\",\"created_at\":5,\"output\":"
	    "[{\"type\":\"message\"}],\"usage\":{\"x\":1},\"extra\":{\"k\":[1]}}");
	json_t *body = j("{\"model\":\"m\",\"tools\":[{\"type\":"
	    "\"code_interpreter\"}],\"metadata\":{\"a\":\"b\"},\"store\":false}");
	json_t *output = j("[{\"type\":\"code_interpreter_call\"}]");
	json_t *usage = j("{\"total_tokens\":3}");
	json_t *lc = json_deep_copy(last), *bc = json_deep_copy(body), *a;

	(void)state;
	a = sg_answer_responses(last, body, output, usage, "resp_sg");
	assert_non_null(a);
	assert_string_equal(json_string_value(json_object_get(a, "id")),
	    "resp_sg");
	assert_int_equal(json_integer_value(json_object_get(a, "created_at")), 5);
	assert_ptr_equal(json_object_get(a, "output"), output);
	assert_ptr_equal(json_object_get(a, "extra"), json_object_get(last,
	    "extra"));
	assert_json(json_object_get(a, "tool_choice"), "\"auto\"");
	assert_true(json_is_null(json_object_get(a, "previous_response_id")));
	assert_true(json_equal(last, lc));
	assert_true(json_equal(body, bc));
	json_decref(a);
	a = sg_answer_responses(NULL, body, output, usage, NULL);
	assert_int_equal(strncmp(json_string_value(json_object_get(a, "id")),
	    "resp_", 5), 0);
	json_decref(a);
	json_decref(lc);
	json_decref(bc);
	json_decref(last);
	json_decref(body);
	json_decref(output);
	json_decref(usage);
}

static void
chat_answer_joins_turns(void **state)
{
	json_t *head = j("{\"id\":\"chatcmpl-1\",\"created\":7,"
	    "\"system_fingerprint\":\"fp\"}"), *body = j("{\"model\":\"m\"}");
	json_t *texts = j("[\"a\",\"b\"]"), *calls = j("[]"), *usage = j("{}");
	json_t *a = sg_answer_chat(head, body, texts, calls, "", usage);

	(void)state;
	assert_json(a, "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\","
	    "\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":"
	    "{\"role\":\"assistant\",\"content\":\"a\\n\\nb\",\"refusal\":null,"
	    "\"annotations\":[]},\"logprobs\":null,\"finish_reason\":\"stop\"}],"
	    "\"usage\":{},\"system_fingerprint\":\"fp\"}");
	json_decref(a);
	json_decref(head);
	json_decref(body);
	json_decref(texts);
	json_decref(calls);
	json_decref(usage);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(usage_adds_up),
		cmocka_unit_test(usage_never_overflows),
		cmocka_unit_test(responses_answer_changes_nothing),
		cmocka_unit_test(chat_answer_joins_turns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
