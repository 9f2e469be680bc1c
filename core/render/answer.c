#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "answer.h"
#include "../../lib/util.h"

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
		/* A count only acc holds is changed where it is (each turn
		 * adds to every count: a new value for each was most of the
		 * cost). */
		if (json_is_integer(v) && json_is_integer(a) && a->refcount == 1)
			json_integer_set(a, add_int(json_integer_value(a),
			    json_integer_value(v)));
		else if (json_is_integer(v))
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

/* JSON types a request field may have, as a mask. */
#define JBIT(t)		(1u << (t))
#define JBIT_BOOL	(JBIT(JSON_TRUE) | JBIT(JSON_FALSE))
#define JBIT_NUM	(JBIT(JSON_INTEGER) | JBIT(JSON_REAL))

/* What changes with the response's state; everything else is the
 * request's echo. Borrowed references; NULL means the in-progress value. */
struct state {
	const char	*status;
	json_int_t	 completed_at;	/* 0: null */
	json_t		*error;		/* NULL: null */
	json_t		*incomplete;	/* NULL: null */
	json_t		*output;	/* NULL: [] */
	const char	*tier;		/* NULL: the client's, else "auto" */
	json_t		*usage;		/* NULL: left out */
};

/*
 * New reference: the client's value of key when it has one of the types
 * in mask, else dflt (stolen). Shared, not copied: nothing changes it.
 * A null or mistyped value (an upstream may ignore what OpenAI refuses)
 * echoes OpenAI's default, so the answer keeps the spec's types.
 */
static json_t *
echo(const json_t *body, const char *key, unsigned mask, json_t *dflt)
{
	json_t *v = json_object_get(body, key);

	if (v == NULL || !(mask & JBIT(json_typeof(v))))
		return dflt;
	json_decref(dflt);
	return json_incref(v);
}

/* New reference: dflt (stolen) with the members of the client's object
 * key over it: OpenAI's reasoning and text show every default. */
static json_t *
merged(const json_t *body, const char *key, json_t *dflt)
{
	json_t *v = json_object_get(body, key);

	if (dflt != NULL && json_is_object(v))
		json_object_update(dflt, v);
	return dflt;
}

static int
is_type(const json_t *v, const char *type)
{
	const char *t = json_string_value(json_object_get(v, "type"));

	return t != NULL && strcmp(t, type) == 0;
}

/* New reference: the client's tools as OpenAI echoes them: a function
 * tool gets the strict (true by default in Responses) and parameters
 * its spec requires. */
static json_t *
tools_echo(const json_t *body)
{
	json_t *tools = json_object_get(body, "tools"), *out = json_array();
	json_t *t, *c;
	size_t i;

	json_array_foreach(tools, i, t) {
		if (!is_type(t, "function") || (json_object_get(t, "strict") &&
		    json_object_get(t, "parameters"))) {
			json_array_append(out, t);
			continue;
		}
		/* Shallow: only the two members are added. */
		c = json_copy(t);
		if (json_object_get(c, "parameters") == NULL)
			json_object_set_new(c, "parameters", json_null());
		if (json_object_get(c, "strict") == NULL)
			json_object_set_new(c, "strict", json_true());
		json_array_append_new(out, c);
	}
	return out;
}

/* New reference: the conversation as the Response names it, {"id"}. */
static json_t *
conversation(const json_t *body)
{
	json_t *c = json_object_get(body, "conversation");

	if (json_is_object(c))
		c = json_object_get(c, "id");
	return json_is_string(c) ? json_pack("{s:O}", "id", c) : NULL;
}

static json_t *
or_null(json_t *v)
{
	return v != NULL ? json_incref(v) : json_null();
}

/* The response's own head: what it is and where it stands. */
static void
put_head(json_t *r, const json_t *body, const char *id, json_int_t created,
    const struct state *st)
{
	json_t *conv = conversation(body);

	json_object_set_new(r, "id", json_string(id));
	json_object_set_new(r, "object", json_string("response"));
	json_object_set_new(r, "created_at", json_integer(created));
	json_object_set_new(r, "status", json_string(st->status));
	/* true only in a runner's (a background job's): the body it runs
	 * is the one the client sent. */
	json_object_set_new(r, "background", echo(body, "background", JBIT_BOOL,
	    json_false()));
	json_object_set_new(r, "completed_at", st->completed_at > 0 ?
	    json_integer(st->completed_at) : json_null());
	if (conv != NULL)
		json_object_set_new(r, "conversation", conv);
	json_object_set_new(r, "error", or_null(st->error));
	json_object_set_new(r, "incomplete_details", or_null(st->incomplete));
}

/* instructions … prompt_cache_key: the request's echo, and the output. */
static void
put_first_half(json_t *r, const json_t *body, const struct state *st)
{
	json_t *prompt = json_object_get(body, "prompt");

	json_object_set_new(r, "instructions", echo(body, "instructions",
	    JBIT(JSON_STRING) | JBIT(JSON_ARRAY), json_null()));
	json_object_set_new(r, "max_output_tokens", echo(body,
	    "max_output_tokens", JBIT(JSON_INTEGER), json_null()));
	json_object_set_new(r, "max_tool_calls", echo(body, "max_tool_calls",
	    JBIT(JSON_INTEGER), json_null()));
	json_object_set_new(r, "model", echo(body, "model", JBIT(JSON_STRING),
	    json_string("")));
	json_object_set_new(r, "output", st->output != NULL ?
	    json_incref(st->output) : json_array());
	json_object_set_new(r, "parallel_tool_calls", echo(body,
	    "parallel_tool_calls", JBIT_BOOL, json_true()));
	json_object_set_new(r, "previous_response_id", echo(body,
	    "previous_response_id", JBIT(JSON_STRING), json_null()));
	if (json_is_object(prompt))
		json_object_set(r, "prompt", prompt);
	json_object_set_new(r, "prompt_cache_key", echo(body,
	    "prompt_cache_key", JBIT(JSON_STRING), json_null()));
}

/* reasoning … metadata: the request's echo, the tier and the usage. */
static void
put_second_half(json_t *r, const json_t *body, const struct state *st)
{
	json_t *user = json_object_get(body, "user");

	json_object_set_new(r, "reasoning", merged(body, "reasoning",
	    json_pack("{s:n,s:n}", "effort", "summary")));
	json_object_set_new(r, "safety_identifier", echo(body,
	    "safety_identifier", JBIT(JSON_STRING), json_null()));
	json_object_set_new(r, "service_tier", st->tier != NULL ?
	    json_string(st->tier) : echo(body, "service_tier",
	    JBIT(JSON_STRING), json_string("auto")));
	json_object_set_new(r, "store", echo(body, "store", JBIT_BOOL,
	    json_true()));
	json_object_set_new(r, "temperature", echo(body, "temperature",
	    JBIT_NUM, json_integer(1)));
	json_object_set_new(r, "text", merged(body, "text", json_pack(
	    "{s:{s:s}}", "format", "type", "text")));
	json_object_set_new(r, "tool_choice", echo(body, "tool_choice",
	    JBIT(JSON_STRING) | JBIT(JSON_OBJECT), json_string("auto")));
	json_object_set_new(r, "tools", tools_echo(body));
	json_object_set_new(r, "top_logprobs", echo(body, "top_logprobs",
	    JBIT(JSON_INTEGER), json_integer(0)));
	json_object_set_new(r, "top_p", echo(body, "top_p", JBIT_NUM,
	    json_integer(1)));
	json_object_set_new(r, "truncation", echo(body, "truncation",
	    JBIT(JSON_STRING), json_string("disabled")));
	json_object_set_new(r, "usage", st->usage != NULL ?
	    json_incref(st->usage) : json_null());
	json_object_set_new(r, "user", json_is_string(user) ?
	    json_incref(user) : json_null());
	json_object_set_new(r, "metadata", echo(body, "metadata",
	    JBIT(JSON_OBJECT), json_object()));
}

/*
 * New reference: the one builder of every response object the loop
 * shows. Every key OpenAI sends, in its order (the head, then the rest
 * alphabetically, metadata last). usage and user are null while
 * unknown, as on OpenAI's wire (its spec types them as non-nullable).
 */
static json_t *
build(const json_t *body, const char *id, json_int_t created,
    const struct state *st)
{
	json_t *r = json_object();

	if (r == NULL)
		return NULL;
	put_head(r, body, id, created, st);
	put_first_half(r, body, st);
	put_second_half(r, body, st);
	return r;
}

json_t *
sg_answer_head(const json_t *body, const char *id, json_int_t created,
    const char *status)
{
	struct state st = { .status = status };

	return build(body, id, created, &st);
}

json_t *
sg_answer_failed(const json_t *body, const char *id, json_int_t created,
    const char *code, const char *message, json_t *output)
{
	/* ResponseErrorCode is a closed set: sandgate's other codes (and
	 * the upstream's) are a server_error here; the error event before
	 * response.failed carries them as they are. */
	int known = code != NULL && (strcmp(code, "rate_limit_exceeded") == 0 ||
	    strcmp(code, "invalid_prompt") == 0);
	struct state st = { .status = "failed", .output = output };
	json_t *r;

	st.error = json_pack("{s:s,s:s}", "code", known ? code : "server_error",
	    "message", message != NULL ? message : "");
	r = build(body, id, created, &st);
	json_decref(st.error);
	return r;
}

/* New reference: the summed usage with every key the spec requires
 * (an upstream may leave some out), or NULL when no turn reported any. */
static json_t *
usage_full(const json_t *usage)
{
	json_t *u;

	if (json_object_size(usage) == 0)
		return NULL;
	u = json_pack("{s:i,s:{s:i,s:i},s:i,s:{s:i},s:i}", "input_tokens", 0,
	    "input_tokens_details", "cached_tokens", 0, "cache_write_tokens", 0,
	    "output_tokens", 0, "output_tokens_details", "reasoning_tokens", 0,
	    "total_tokens", 0);
	if (u != NULL)
		sg_answer_add_usage(u, usage);
	return u;
}

json_t *
sg_answer_responses(const json_t *last, const json_t *body, json_t *output,
    json_t *usage, const char *given_id)
{
	const json_t *v = json_object_get(last, "created_at");
	json_int_t now = (json_int_t)time(NULL), created = now;
	const char *status = json_string_value(json_object_get(last, "status"));
	int incomplete = status != NULL && strcmp(status, "incomplete") == 0;
	struct state st = { .status = incomplete ? "incomplete" : "completed",
	    .completed_at = incomplete ? 0 : now, .output = output };
	json_t *r;
	char id[64];

	if (given_id != NULL)
		sg_copy(id, sizeof(id), given_id);
	else
		sg_time_id(id, sizeof(id), "resp_", 24);
	/* The last turn's start; never after completed_at, whatever the
	 * upstream's clock says. */
	if (json_is_integer(v) && json_integer_value(v) > 0 &&
	    json_integer_value(v) <= now)
		created = json_integer_value(v);
	if (incomplete && json_is_object(json_object_get(last,
	    "incomplete_details")))
		st.incomplete = json_object_get(last, "incomplete_details");
	/* Only the upstream knows the tier that served it. */
	v = json_object_get(last, "service_tier");
	st.tier = json_is_string(v) ? json_string_value(v) : "default";
	st.usage = usage_full(usage);
	r = build(body, id, created, &st);
	json_decref(st.usage);
	return r;
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
		sg_copy(id, sizeof(id), json_string_value(
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
