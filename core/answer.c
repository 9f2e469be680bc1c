#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "answer.h"
#include "../lib/util.h"

#if JSON_INTEGER_IS_LONG_LONG
#define JSON_INT_MAX	LLONG_MAX
#define JSON_INT_MIN	LLONG_MIN
#else
#define JSON_INT_MAX	LONG_MAX
#define JSON_INT_MIN	LONG_MIN
#endif

/* a + b, held at the ends of json_int_t's range: the upstream's numbers
 * may be anything, and a signed overflow is undefined. */
static json_int_t
add_int(json_int_t a, json_int_t b)
{
	json_int_t sum;

	if (__builtin_add_overflow(a, b, &sum))
		return b > 0 ? JSON_INT_MAX : JSON_INT_MIN;
	return sum;
}

void
sg_answer_add_usage(json_t *acc, const json_t *u)
{
	const char *k;
	json_t *v, *a, *sum;

	json_object_foreach((json_t *)u, k, v) {
		a = json_object_get(acc, k);
		if (json_is_integer(v))
			json_object_set_new(acc, k, json_integer(add_int(
			    json_integer_value(a), json_integer_value(v))));
		else if (json_is_number(v)) {
			/* json_real refuses an infinite sum: keep what was. */
			if ((sum = json_real(json_number_value(a) +
			    json_number_value(v))) != NULL)
				json_object_set_new(acc, k, sum);
		} else if (json_is_object(v)) {
			if (!json_is_object(a)) {
				a = json_object();
				json_object_set_new(acc, k, a);
			}
			sg_answer_add_usage(a, v);
		}
	}
}

/* Every field the SDKs read, whatever the upstream sent ("user" is a
 * string or absent in OpenAI's schema, never null). */
static void
responses_defaults(json_t *resp)
{
	static const char *const nulls[] = { "error", "incomplete_details",
	    "instructions", "previous_response_id", "max_output_tokens",
	    "max_tool_calls", NULL };
	size_t i;

	for (i = 0; nulls[i] != NULL; i++)
		if (json_object_get(resp, nulls[i]) == NULL)
			json_object_set_new(resp, nulls[i], json_null());
	if (!json_is_object(json_object_get(resp, "metadata")))
		json_object_set_new(resp, "metadata", json_object());
	if (json_object_get(resp, "temperature") == NULL)
		json_object_set_new(resp, "temperature", json_integer(1));
	if (json_object_get(resp, "top_p") == NULL)
		json_object_set_new(resp, "top_p", json_integer(1));
	if (json_object_get(resp, "parallel_tool_calls") == NULL)
		json_object_set_new(resp, "parallel_tool_calls", json_true());
}

json_t *
sg_answer_responses(const json_t *last, const json_t *body, json_t *output,
    json_t *usage, const char *given_id)
{
	/* Shallow: members are replaced below, never changed in place. */
	json_t *resp = last != NULL ? json_copy((json_t *)last) : json_object();
	static const char *const echo[] = { "instructions", "metadata",
	    "previous_response_id", "user", "temperature", "top_p",
	    "max_output_tokens", "max_tool_calls", "parallel_tool_calls",
	    "store", NULL };
	const json_t *v;
	char id[64];
	size_t i;

	if (resp == NULL)
		return NULL;
	if (given_id != NULL)
		snprintf(id, sizeof(id), "%s", given_id);
	else
		sg_rand_id(id, sizeof(id), "resp_", 24);
	json_object_set_new(resp, "id", json_string(id));
	json_object_set_new(resp, "object", json_string("response"));
	if (!json_is_integer(json_object_get(resp, "created_at")))
		json_object_set_new(resp, "created_at", json_integer(time(NULL)));
	json_object_set_new(resp, "status", json_string("completed"));
	json_object_set(resp, "model", json_object_get(body, "model"));
	json_object_set(resp, "output", output);
	json_object_set(resp, "tools", json_object_get(body, "tools"));
	v = json_object_get(body, "tool_choice");
	json_object_set_new(resp, "tool_choice", v != NULL ?
	    json_incref((json_t *)v) : json_string("auto"));
	json_object_set(resp, "usage", usage);
	for (i = 0; echo[i] != NULL; i++)
		if ((v = json_object_get(body, echo[i])) != NULL)
			json_object_set(resp, echo[i], (json_t *)v);
	responses_defaults(resp);
	return resp;
}

/* New reference: the assistant message, every turn's text joined. */
static json_t *
chat_message(const json_t *texts, json_t *calls)
{
	struct sg_buf joined = { 0 };
	const json_t *t;
	json_t *msg;
	size_t i;

	json_array_foreach(texts, i, t) {
		/* A blank line between the texts of two turns. */
		if (i > 0)
			sg_buf_add(&joined, "\n\n", 2);
		sg_buf_add(&joined, json_string_value(t), json_string_length(t));
	}
	msg = json_pack("{s:s,s:o,s:n,s:[]}", "role", "assistant", "content",
	    json_array_size(texts) > 0 ? json_stringn(joined.p != NULL ?
	    joined.p : "", joined.len) : json_null(), "refusal", "annotations");
	free(joined.p);
	if (msg != NULL && json_array_size(calls) > 0)
		json_object_set(msg, "tool_calls", calls);
	return msg;
}

json_t *
sg_answer_chat(const json_t *head, const json_t *body, const json_t *texts,
    json_t *calls, const char *finish, json_t *usage)
{
	const json_t *created = json_object_get(head, "created");
	json_t *ans;
	char id[64];

	if (json_is_string(json_object_get(head, "id")))
		snprintf(id, sizeof(id), "%s", json_string_value(
		    json_object_get(head, "id")));
	else
		sg_rand_id(id, sizeof(id), "chatcmpl-", 14);
	ans = json_pack("{s:s,s:s,s:I,s:O,s:[{s:i,s:o,s:n,s:s}],s:O}",
	    "id", id, "object", "chat.completion", "created",
	    json_is_integer(created) ? json_integer_value(created) :
	    (json_int_t)time(NULL), "model", json_object_get(body, "model"),
	    "choices", "index", 0, "message", chat_message(texts, calls),
	    "logprobs", "finish_reason", json_array_size(calls) > 0 ?
	    "tool_calls" : finish[0] != '\0' ? finish : "stop", "usage", usage);
	if (ans != NULL && json_object_get(head, "system_fingerprint") != NULL)
		json_object_set(ans, "system_fingerprint", json_object_get(head,
		    "system_fingerprint"));
	if (ans != NULL && json_object_get(head, "service_tier") != NULL)
		json_object_set(ans, "service_tier", json_object_get(head,
		    "service_tier"));
	return ans;
}
