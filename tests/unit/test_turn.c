/*
 * sg_turn: one upstream turn accumulated from its stream of events, fed
 * through the real SSE parser split at every byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../core/upstream/sse.h"
#include "../../core/loop/turn.h"

static const char chat_stream[] =
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Let me \"},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"compute. \\u00e9\"},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"litellm_code_execution\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"code\\\":\\\"pri\"}}]},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{}\"}}]},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"nt(1)\\\"}\"}}]},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\n"
    "data: [DONE]\n\n";

static const char responses_stream[] =
    "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"output\":[]}}\n\n"
    "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[]}}\n\n"
    "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":2,\"output_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"litellm_code_execution\",\"arguments\":\"{\\\"code\\\":\\\"1\\\"}\"}}\n\n"
    "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_1\",\"output\":[{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[]},{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"litellm_code_execution\",\"arguments\":\"{\\\"code\\\":\\\"1\\\"}\"}],\"usage\":{\"input_tokens\":5,\"output_tokens\":6,\"total_tokens\":11}}}\n\n";

/* Feed text through a real parser into a turn, split at byte `split`. */
static void
feed(struct sg_turn *t, const char *text, size_t split)
{
	struct sg_sse *p = sg_sse_new(1 << 20, sg_turn_event, t);
	size_t len = strlen(text);

	assert_non_null(p);
	if (split > len)
		split = len;
	assert_int_equal(sg_sse_feed(p, text, split), 0);
	assert_int_equal(sg_sse_feed(p, text + split, len - split), 0);
	sg_sse_free(p);
}

static void
check_chat(struct sg_turn *t)
{
	json_t *c0 = json_array_get(t->tool_calls, 0);
	json_t *c1 = json_array_get(t->tool_calls, 1);

	assert_string_equal(t->text.p, "Let me compute. \xc3\xa9");
	assert_int_equal(json_array_size(t->tool_calls), 2);
	assert_string_equal(json_string_value(json_object_get(c0, "id")), "call_a");
	assert_string_equal(json_string_value(json_object_get(json_object_get(c0,
	    "function"), "name")), "litellm_code_execution");
	assert_string_equal(json_string_value(json_object_get(json_object_get(c0,
	    "function"), "arguments")), "{\"code\":\"print(1)\"}");
	assert_string_equal(json_string_value(json_object_get(json_object_get(c1,
	    "function"), "name")), "get_weather");
	assert_string_equal(t->finish_reason, "tool_calls");
	assert_int_equal(json_integer_value(json_object_get(t->usage,
	    "total_tokens")), 7);
	assert_string_equal(json_string_value(json_object_get(t->head, "id")),
	    "chatcmpl-1");
	assert_null(t->error);
}

static void
chat_turn_any_split(void **state)
{
	size_t i, len = strlen(chat_stream);

	(void)state;
	for (i = 0; i <= len; i++) {
		struct sg_turn t;

		sg_turn_init(&t, SG_SURFACE_CHAT);
		feed(&t, chat_stream, i);
		check_chat(&t);
		sg_turn_free(&t);
	}
}

static void
responses_turn_any_split(void **state)
{
	size_t i, len = strlen(responses_stream);

	(void)state;
	for (i = 0; i <= len; i++) {
		struct sg_turn t;

		sg_turn_init(&t, SG_SURFACE_RESPONSES);
		feed(&t, responses_stream, i);
		assert_int_equal(json_array_size(t.items), 2);
		assert_string_equal(json_string_value(json_object_get(
		    json_array_get(t.items, 1), "call_id")), "call_1");
		assert_string_equal(json_string_value(json_object_get(t.response,
		    "id")), "resp_1");
		assert_int_equal(json_integer_value(json_object_get(t.usage,
		    "output_tokens")), 6);
		sg_turn_free(&t);
	}
}

static void
responses_items_without_completed(void **state)
{
	struct sg_turn t;
	const char *cut = strstr(responses_stream, "event: response.completed");
	char *head = strndup(responses_stream, (size_t)(cut - responses_stream));

	(void)state;
	sg_turn_init(&t, SG_SURFACE_RESPONSES);
	feed(&t, head, 0);
	/* Items come from output_item.done when no completed event came. */
	assert_int_equal(json_array_size(t.items), 2);
	assert_null(t.response);
	sg_turn_free(&t);
	free(head);
}

static void
errors_are_kept(void **state)
{
	struct sg_turn t;

	(void)state;
	sg_turn_init(&t, SG_SURFACE_CHAT);
	feed(&t, "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n", 3);
	assert_non_null(t.error);
	assert_string_equal(json_string_value(json_object_get(t.error,
	    "message")), "boom");
	sg_turn_free(&t);
	sg_turn_init(&t, SG_SURFACE_RESPONSES);
	feed(&t, "event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,"
	    "\"error\":{\"type\":\"insufficient_quota\",\"message\":\"quota\"}}\n\n",
	    10);
	assert_string_equal(json_string_value(json_object_get(t.error,
	    "message")), "quota");
	sg_turn_free(&t);
}

static void
junk_is_ignored(void **state)
{
	struct sg_turn t;

	(void)state;
	sg_turn_init(&t, SG_SURFACE_CHAT);
	feed(&t, ": keepalive\n\ndata: not json\n\ndata: [1,2]\n\n"
	    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n", 5);
	assert_string_equal(t.text.p, "ok");
	assert_null(t.error);
	sg_turn_free(&t);
}

/* Responses events the turn does not keep are known by their SSE name
 * and not read (so not even a bad body there matters); the same events
 * without a name are read, and an unnamed top-level error still counts. */
static void
named_events_it_ignores_are_not_read(void **state)
{
	struct sg_turn t;

	(void)state;
	sg_turn_init(&t, SG_SURFACE_RESPONSES);
	feed(&t, "event: response.in_progress\ndata: {\"error\":{\"message\":"
	    "\"not read\"}}\n\n"
	    "event: response.output_text.delta\ndata: {not json\n\n"
	    "event: response.completed\ndata: {\"type\":\"response.completed\","
	    "\"response\":{\"id\":\"resp_2\",\"output\":[],\"usage\":"
	    "{\"input_tokens\":1,\"output_tokens\":2,\"total_tokens\":3}}}\n\n", 7);
	assert_null(t.error);
	assert_non_null(t.response);
	sg_turn_free(&t);
	sg_turn_init(&t, SG_SURFACE_RESPONSES);
	feed(&t, "data: {\"error\":{\"message\":\"read\"}}\n\n", 4);
	assert_string_equal(json_string_value(json_object_get(t.error,
	    "message")), "read");
	sg_turn_free(&t);
}

/* An upstream that sends only the final response: its output is the
 * items, and its members the loop reads are kept. */
static void
final_response_alone(void **state)
{
	const char *kinds[] = { "completed", "incomplete" };
	struct sg_turn t;
	char text[1024];
	int k;

	(void)state;
	for (k = 0; k < 2; k++) {
		snprintf(text, sizeof(text), "event: response.%s\ndata: "
		    "{\"type\":\"response.%s\",\"response\":{\"id\":\"resp_9\","
		    "\"created_at\":42,\"status\":\"%s\",\"incomplete_details\":"
		    "{\"reason\":\"max_output_tokens\"},\"service_tier\":\"flex\","
		    "\"output\":[{\"type\":\"message\",\"id\":\"m1\"},{\"type\":"
		    "\"function_call\",\"call_id\":\"c1\"}],\"tools\":[],"
		    "\"usage\":{\"total_tokens\":3}}}\n\n", kinds[k], kinds[k],
		    kinds[k]);
		sg_turn_init(&t, SG_SURFACE_RESPONSES);
		feed(&t, text, 9);
		assert_int_equal(json_array_size(t.items), 2);
		assert_string_equal(json_string_value(json_object_get(
		    json_array_get(t.items, 1), "call_id")), "c1");
		assert_string_equal(json_string_value(json_object_get(t.response,
		    "id")), "resp_9");
		assert_string_equal(json_string_value(json_object_get(t.response,
		    "status")), kinds[k]);
		assert_int_equal(json_integer_value(json_object_get(t.response,
		    "created_at")), 42);
		assert_string_equal(json_string_value(json_object_get(t.response,
		    "service_tier")), "flex");
		assert_string_equal(json_string_value(json_object_get(
		    json_object_get(t.response, "incomplete_details"), "reason")),
		    "max_output_tokens");
		assert_int_equal(json_integer_value(json_object_get(t.usage,
		    "total_tokens")), 3);
		sg_turn_free(&t);
	}
}

/* A final output that is not the items streamed wins over them; one
 * written with other spacing is the same items. */
static void
final_output_wins(void **state)
{
	static const char item[] = "event: response.output_item.done\ndata: "
	    "{\"type\":\"response.output_item.done\",\"item\":{\"type\":"
	    "\"message\",\"id\":\"m1\"}}\n\n";
	static const char other[] = "event: response.completed\ndata: "
	    "{\"type\":\"response.completed\",\"response\":{\"id\":\"r\","
	    "\"output\":[{\"type\":\"message\",\"id\":\"m2\"},{\"type\":"
	    "\"message\",\"id\":\"m3\"}]}}\n\n";
	static const char spaced[] = "event: response.completed\ndata: "
	    "{\"type\":\"response.completed\",\"response\":{\"id\":\"r\","
	    "\"output\": [ {\"type\": \"message\", \"id\": \"m1\"} ]}}\n\n";
	struct sg_turn t;
	char text[1024];

	(void)state;
	snprintf(text, sizeof(text), "%s%s", item, other);
	sg_turn_init(&t, SG_SURFACE_RESPONSES);
	feed(&t, text, 0);
	assert_int_equal(json_array_size(t.items), 2);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(t.items, 0), "id")), "m2");
	sg_turn_free(&t);
	snprintf(text, sizeof(text), "%s%s", item, spaced);
	sg_turn_init(&t, SG_SURFACE_RESPONSES);
	feed(&t, text, 0);
	assert_int_equal(json_array_size(t.items), 1);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(t.items, 0), "id")), "m1");
	sg_turn_free(&t);
}

/* What only a whole parse reads right is read by one: an escaped key;
 * and a final event that is not valid JSON anywhere is dropped whole, as
 * Jansson drops it, even where the loop reads nothing. */
static void
final_read_as_jansson_reads_it(void **state)
{
	struct sg_turn t;

	(void)state;
	sg_turn_init(&t, SG_SURFACE_RESPONSES);
	feed(&t, "event: response.completed\ndata: {\"type\":\"response."
	    "completed\",\"response\":{\"\\u0069d\":\"resp_e\",\"output\":[]}}"
	    "\n\n", 0);
	assert_string_equal(json_string_value(json_object_get(t.response,
	    "id")), "resp_e");
	sg_turn_free(&t);
	sg_turn_init(&t, SG_SURFACE_RESPONSES);
	feed(&t, "event: response.completed\ndata: {\"type\":\"response."
	    "completed\",\"response\":{\"id\":\"resp_x\",\"instructions\":"
	    "\"\xff\",\"output\":[]}}\n\n", 0);
	assert_null(t.response);
	sg_turn_free(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(chat_turn_any_split),
		cmocka_unit_test(responses_turn_any_split),
		cmocka_unit_test(responses_items_without_completed),
		cmocka_unit_test(errors_are_kept),
		cmocka_unit_test(junk_is_ignored),
		cmocka_unit_test(named_events_it_ignores_are_not_read),
		cmocka_unit_test(final_response_alone),
		cmocka_unit_test(final_output_wins),
		cmocka_unit_test(final_read_as_jansson_reads_it),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
