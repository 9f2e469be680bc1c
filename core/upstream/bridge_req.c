/*
 * A Responses request as a Chat Completions request: instructions and
 * input items become messages, function tools Chat tools, the sampling
 * and format settings their Chat names. What has no Chat form is refused
 * up front (sg_bridge_check), never dropped on the way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"

static const char *
type_of(const json_t *v)
{
	const char *t = json_string_value(json_object_get(v, "type"));

	return t != NULL ? t : "";
}

static int
unsupported(struct sg_error *err, const char *param, const char *what)
{
	return sg_error_set(err, 400, "invalid_request_error",
	    "unsupported_parameter", param, "Unsupported parameter: '%s'%s%s "
	    "is not supported with this model: its upstream speaks only Chat "
	    "Completions.", param, what[0] != '\0' ? " " : "", what);
}

/* ---------------------------------------------------------------- check */

/* A part of a message's content that Chat can carry. */
static int
part_ok(const json_t *p, int text_only)
{
	const char *t = type_of(p);

	if (strcmp(t, "input_text") == 0 || strcmp(t, "output_text") == 0 ||
	    strcmp(t, "text") == 0 || strcmp(t, "refusal") == 0)
		return 1;
	/* An image by URL (a data: URL too), not by file_id, and only in
	 * what Chat lets carry one: a user's message (a tool's output, the
	 * system's and the assistant's are text there). */
	return !text_only && strcmp(t, "input_image") == 0 &&
	    json_is_string(json_object_get(p, "image_url"));
}

static int
content_ok(const json_t *c, int text_only)
{
	const json_t *p;
	size_t i;

	if (json_is_string(c) || c == NULL)
		return 1;
	if (!json_is_array(c))
		return 0;
	json_array_foreach(c, i, p)
		if (!part_ok(p, text_only))
			return 0;
	return 1;
}

/* OpenAI's words for a JSON value's type. */
static const char *
a_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a decimal";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "a string";
	}
}

/*
 * Member key of input item i, which its Chat form cannot go without (a
 * string, or with any_type anything but null): 0, or -1 with OpenAI's 400
 * naming it, "input[3].call_id". The name is kept in a static buffer: a
 * responder answers one request at a time, and its error goes out before
 * the next is checked.
 */
static int
required(const json_t *it, size_t i, const char *key, int any_type,
    struct sg_error *err)
{
	static char param[48];
	const json_t *v = json_object_get(it, key);

	if (json_is_string(v) || (any_type && v != NULL && !json_is_null(v)))
		return 0;
	snprintf(param, sizeof(param), "input[%zu].%s", i, key);
	if (v == NULL || json_is_null(v))
		return sg_error_invalid(err, param, "missing_required_parameter",
		    "Missing required parameter: '%s'.", param);
	return sg_error_invalid(err, param, "invalid_type", "Invalid type for "
	    "'%s': expected a string, but got %s instead.", param, a_type(v));
}

/* What an item's Chat form is made of: what it lacks would be dropped on
 * the way (a tool message without its call, a call without its id). */
static int
complete(const json_t *it, size_t i, const char *t, struct sg_error *err)
{
	if (t[0] == '\0' || strcmp(t, "message") == 0)
		return required(it, i, "role", 0, err) == -1 ||
		    required(it, i, "content", 1, err) == -1 ? -1 : 0;
	if (strcmp(t, "function_call") == 0)
		return required(it, i, "call_id", 0, err) == -1 ||
		    required(it, i, "name", 0, err) == -1 ||
		    required(it, i, "arguments", 0, err) == -1 ? -1 : 0;
	if (strcmp(t, "function_call_output") == 0)
		return required(it, i, "call_id", 0, err) == -1 ||
		    required(it, i, "output", 1, err) == -1 ? -1 : 0;
	return 0;
}

static int
check_input(const json_t *input, struct sg_error *err)
{
	const json_t *it;
	size_t i;

	if (json_is_string(input) || input == NULL)
		return 0;
	json_array_foreach(input, i, it) {
		const char *t = type_of(it);
		const char *role = json_string_value(json_object_get(it, "role"));

		if (complete(it, i, t, err) == -1)
			return -1;
		if ((t[0] == '\0' || strcmp(t, "message") == 0) &&
		    content_ok(json_object_get(it, "content"), role == NULL ||
		    strcmp(role, "user") != 0))
			continue;
		if (strcmp(t, "function_call_output") == 0 &&
		    content_ok(json_object_get(it, "output"), 1))
			continue;
		/* The gateway's own items, and reasoning (Chat has no input
		 * form for it: dropped, as its upstream could not read it). */
		if (strcmp(t, "function_call") == 0 ||
		    strcmp(t, "code_interpreter_call") == 0 ||
		    strcmp(t, "item_reference") == 0 ||
		    strcmp(t, "reasoning") == 0)
			continue;
		return sg_error_set(err, 400, "invalid_request_error",
		    "unsupported_parameter", "input", "Input item %zu (%s) is "
		    "not supported with this model: its upstream speaks only "
		    "Chat Completions (text and image URLs, function calls and "
		    "their text outputs are).", i, t[0] != '\0' ? t : "message");
	}
	return 0;
}

static int
check_tools(const json_t *body, struct sg_error *err)
{
	const json_t *tools = json_object_get(body, "tools"), *t;
	const json_t *choice = json_object_get(body, "tool_choice");
	size_t i;

	json_array_foreach(tools, i, t)
		if (strcmp(type_of(t), "function") != 0 &&
		    strcmp(type_of(t), "code_interpreter") != 0)
			return sg_error_set(err, 400, "invalid_request_error",
			    "unsupported_parameter", "tools", "Tool type '%s' is "
			    "not supported with this model: its upstream speaks "
			    "only Chat Completions (function tools and "
			    "code_interpreter are).", type_of(t));
	if (json_is_object(choice) && strcmp(type_of(choice), "function") != 0 &&
	    strcmp(type_of(choice), "code_interpreter") != 0)
		return unsupported(err, "tool_choice", type_of(choice));
	return 0;
}

/* A setting that is there and not its default. */
static int
set_to(const json_t *v, int (*is_default)(const json_t *))
{
	return v != NULL && !json_is_null(v) && !is_default(v);
}

static int
is_zero(const json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) == 0;
}

static int
is_disabled(const json_t *v)
{
	return json_is_string(v) && strcmp(json_string_value(v), "disabled") == 0;
}

static int
never(const json_t *v)
{
	(void)v;
	return 0;
}

int
sg_bridge_check(const json_t *body, struct sg_error *err)
{
	static const char *const known[] = { "model", "input", "instructions",
	    "tools", "tool_choice", "parallel_tool_calls", "max_output_tokens",
	    "temperature", "top_p", "text", "stream", "stream_options",
	    "store", "metadata", "previous_response_id", "include", "user",
	    "reasoning", "service_tier", "prompt_cache_key",
	    /* background: the gateway runs it (a runner's job), never the
	     * upstream. */
	    "safety_identifier", "truncation", "background", "top_logprobs",
	    NULL };
	const json_t *v, *reasoning = json_object_get(body, "reasoning");
	const char *key;
	size_t i;

	json_object_foreach((json_t *)body, key, v) {
		for (i = 0; known[i] != NULL && strcmp(known[i], key) != 0; i++)
			;
		if (known[i] == NULL && !json_is_null(v))
			return unsupported(err, key, "");
	}
	if (set_to(json_object_get(body, "truncation"), is_disabled))
		return unsupported(err, "truncation", "\"auto\"");
	if (set_to(json_object_get(body, "top_logprobs"), is_zero))
		return unsupported(err, "top_logprobs", "");
	if (set_to(json_object_get(reasoning, "summary"), never))
		return unsupported(err, "reasoning.summary", "");
	json_array_foreach(json_object_get(body, "include"), i, v)
		if (json_is_string(v) && strcmp(json_string_value(v),
		    "message.output_text.logprobs") == 0)
			return unsupported(err, "include", "with "
			    "message.output_text.logprobs");
	if (check_tools(body, err) == -1)
		return -1;
	return check_input(json_object_get(body, "input"), err);
}

/* -------------------------------------------------------------- request */

/* A text part's text (a refusal's refusal), borrowed, or NULL. */
static const json_t *
part_text(const json_t *p)
{
	const json_t *t = json_object_get(p, strcmp(type_of(p), "refusal") ==
	    0 ? "refusal" : "text");

	return json_is_string(t) ? t : NULL;
}

/* New string reference: a content's text parts joined ("" for none). */
static json_t *
joined(const json_t *c)
{
	struct sg_buf b = { 0 };
	const json_t *p, *t;
	json_t *s;
	size_t i;

	if (json_is_string(c))
		return json_incref((json_t *)c);
	json_array_foreach(c, i, p)
		if ((t = part_text(p)) != NULL)
			sg_buf_add(&b, json_string_value(t), json_string_length(t));
	s = json_stringn(b.p != NULL ? b.p : "", b.len);
	free(b.p);
	return s;
}

/* New reference: a user message's content as Chat parts (a string stays
 * one). */
static json_t *
user_content(const json_t *c)
{
	json_t *parts, *img;
	const json_t *p;
	size_t i;

	if (!json_is_array(c))
		return joined(c);
	parts = json_array();
	json_array_foreach(c, i, p) {
		if (strcmp(type_of(p), "input_image") == 0) {
			img = json_pack("{s:O}", "url", json_object_get(p,
			    "image_url"));
			if (json_is_string(json_object_get(p, "detail")))
				json_object_set(img, "detail", json_object_get(p,
				    "detail"));
			json_array_append_new(parts, json_pack("{s:s,s:o}", "type",
			    "image_url", "image_url", img));
		} else if (part_text(p) != NULL)
			json_array_append_new(parts, json_pack("{s:s,s:O}", "type",
			    "text", "text", part_text(p)));
	}
	return parts;
}

/* The last message, when it is the assistant's and open for tool calls
 * (nothing came after it). */
static json_t *
open_assistant(json_t *msgs)
{
	json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
	const char *role = json_string_value(json_object_get(last, "role"));

	return role != NULL && strcmp(role, "assistant") == 0 ? last : NULL;
}

static void
add_call(json_t *msgs, const json_t *it)
{
	json_t *a = open_assistant(msgs), *calls;

	if (a == NULL) {
		a = json_pack("{s:s,s:n}", "role", "assistant", "content");
		json_array_append_new(msgs, a);
	}
	if (!json_is_array(calls = json_object_get(a, "tool_calls"))) {
		calls = json_array();
		json_object_set_new(a, "tool_calls", calls);
	}
	json_array_append_new(calls, json_pack("{s:O,s:s,s:{s:O,s:O}}", "id",
	    json_object_get(it, "call_id"), "type", "function", "function",
	    "name", json_object_get(it, "name"), "arguments",
	    json_object_get(it, "arguments")));
}

static void
add_item(json_t *msgs, const json_t *it)
{
	const char *t = type_of(it);
	const char *role = json_string_value(json_object_get(it, "role"));
	const json_t *c = json_object_get(it, "content");

	if (strcmp(t, "function_call") == 0)
		add_call(msgs, it);
	else if (strcmp(t, "function_call_output") == 0)
		json_array_append_new(msgs, json_pack("{s:s,s:O,s:o}", "role",
		    "tool", "tool_call_id", json_object_get(it, "call_id"),
		    "content", joined(json_object_get(it, "output"))));
	else if ((t[0] != '\0' && strcmp(t, "message") != 0) || role == NULL)
		return;		/* reasoning: no Chat form */
	else if (strcmp(role, "user") == 0)
		json_array_append_new(msgs, json_pack("{s:s,s:o}", "role", "user",
		    "content", user_content(c)));
	else
		/* The assistant's, the system's and the developer's: text (the
		 * developer as the system, which every Chat server knows). */
		json_array_append_new(msgs, json_pack("{s:s,s:o}", "role",
		    strcmp(role, "assistant") == 0 ? "assistant" : "system",
		    "content", joined(c)));
}

static json_t *
messages(const json_t *work)
{
	const json_t *input = json_object_get(work, "input"), *it;
	const json_t *ins = json_object_get(work, "instructions");
	json_t *msgs = json_array();
	size_t i;

	if (json_is_string(ins))
		json_array_append_new(msgs, json_pack("{s:s,s:O}", "role",
		    "system", "content", ins));
	if (json_is_string(input))
		json_array_append_new(msgs, json_pack("{s:s,s:O}", "role",
		    "user", "content", input));
	json_array_foreach(input, i, it)
		add_item(msgs, it);
	return msgs;
}

static json_t *
tools(const json_t *list)
{
	json_t *out = json_array(), *fn;
	const json_t *t;
	size_t i;

	json_array_foreach(list, i, t) {
		if (strcmp(type_of(t), "function") != 0)
			continue;
		fn = json_object();
		json_object_set(fn, "name", json_object_get(t, "name"));
		if (json_object_get(t, "description") != NULL)
			json_object_set(fn, "description", json_object_get(t,
			    "description"));
		if (json_object_get(t, "parameters") != NULL)
			json_object_set(fn, "parameters", json_object_get(t,
			    "parameters"));
		if (json_is_boolean(json_object_get(t, "strict")))
			json_object_set(fn, "strict", json_object_get(t, "strict"));
		json_array_append_new(out, json_pack("{s:s,s:o}", "type",
		    "function", "function", fn));
	}
	return out;
}

/* text.format as Chat's response_format (NULL for plain text). */
static json_t *
response_format(const json_t *format)
{
	json_t *schema, *v;
	const char *k;

	if (strcmp(type_of(format), "json_object") == 0)
		return json_pack("{s:s}", "type", "json_object");
	if (strcmp(type_of(format), "json_schema") != 0)
		return NULL;
	schema = json_object();
	json_object_foreach((json_t *)format, k, v)
		if (strcmp(k, "type") != 0)
			json_object_set(schema, k, v);
	return json_pack("{s:s,s:o}", "type", "json_schema", "json_schema",
	    schema);
}

/* Settings with the same meaning under another name, or the same. */
static void
settings(const json_t *work, json_t *chat)
{
	static const char *const same[][2] = {
	    { "max_output_tokens", "max_tokens" },
	    { "temperature", "temperature" }, { "top_p", "top_p" },
	    { "parallel_tool_calls", "parallel_tool_calls" },
	    { "user", "user" }, { "service_tier", "service_tier" },
	    { "prompt_cache_key", "prompt_cache_key" },
	    { "safety_identifier", "safety_identifier" },
	    { NULL, NULL } };
	const json_t *v, *text = json_object_get(work, "text");
	json_t *rf;
	size_t i;

	for (i = 0; same[i][0] != NULL; i++)
		if ((v = json_object_get(work, same[i][0])) != NULL &&
		    !json_is_null(v))
			json_object_set(chat, same[i][1], (json_t *)v);
	if ((v = json_object_get(json_object_get(work, "reasoning"),
	    "effort")) != NULL && json_is_string(v))
		json_object_set(chat, "reasoning_effort", (json_t *)v);
	if ((rf = response_format(json_object_get(text, "format"))) != NULL)
		json_object_set_new(chat, "response_format", rf);
	if (json_is_string(v = json_object_get(text, "verbosity")))
		json_object_set(chat, "verbosity", (json_t *)v);
}

json_t *
sg_bridge_request(const json_t *work)
{
	const json_t *choice = json_object_get(work, "tool_choice");
	json_t *chat, *t;

	chat = json_pack("{s:O,s:o,s:b,s:{s:b}}", "model",
	    json_object_get(work, "model"), "messages", messages(work),
	    "stream", 1, "stream_options", "include_usage", 1);
	if (chat == NULL)
		return NULL;
	t = tools(json_object_get(work, "tools"));
	if (json_array_size(t) > 0)
		json_object_set_new(chat, "tools", t);
	else
		json_decref(t);
	if (json_is_string(choice))
		json_object_set(chat, "tool_choice", (json_t *)choice);
	else if (strcmp(type_of(choice), "function") == 0)
		json_object_set_new(chat, "tool_choice", json_pack(
		    "{s:s,s:{s:O}}", "type", "function", "function", "name",
		    json_object_get(choice, "name")));
	settings(work, chat);
	return chat;
}
