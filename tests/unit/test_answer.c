/*
 * core/render/answer: usage summed over turns (the upstream's numbers may be
 * anything: a sum never overflows), and the answers leave what they are
 * given unchanged (they share it rather than copy it). The Responses
 * objects carry OpenAI's fields in OpenAI's order at each moment (the
 * reference's §5.4 transcript), echo the client's request, never the
 * upstream's; core/render/stream shows them in its lifecycle events.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "../../core/render/answer.h"
#include "../../core/render/stream.h"

/* OpenAI's response keys in order (§5.4). usage and user are always
 * there, null while unknown, as on OpenAI's wire (its spec types neither
 * as nullable: the wire wins). */
#define HEAD_KEYS "id,object,created_at,status,background,completed_at," \
	"error,incomplete_details,instructions,max_output_tokens," \
	"max_tool_calls,model,output,parallel_tool_calls," \
	"previous_response_id,prompt_cache_key,reasoning,safety_identifier," \
	"service_tier,store,temperature,text,tool_choice,tools,top_logprobs," \
	"top_p,truncation,"
#define KEYS		HEAD_KEYS "usage,user,metadata"
#define CI_TOOL	"{\"type\":\"code_interpreter\",\"container\":{\"type\":\"auto\"}}"

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

/* The exact text, key order included (assert_json ignores order). */
static void
assert_dump(const json_t *got, const char *want)
{
	char *g = json_dumps(got, JSON_COMPACT);

	if (g == NULL || strcmp(g, want) != 0)
		fail_msg("got  %s\nwant %s", g != NULL ? g : "(null)", want);
	free(g);
}

/* Its keys in order, comma-joined. */
static void
assert_keys(const json_t *obj, const char *want)
{
	char got[1024] = "";
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v) {
		if (got[0] != '\0')
			strncat(got, ",", sizeof(got) - strlen(got) - 1);
		strncat(got, k, sizeof(got) - strlen(got) - 1);
	}
	assert_string_equal(got, want);
}

static json_t *
ci_body(void)
{
	return j("{\"model\":\"gpt-4.1\",\"input\":\"go\",\"tools\":[" CI_TOOL
	    "],\"include\":[\"code_interpreter_call.outputs\"]}");
}

static void
usage_adds_up(void **state)
{
	json_t *acc = json_object(), *u = j("{\"input_tokens\":10,"
	    "\"output_tokens\":5,\"details\":{\"cached\":2},\"cost\":0.5,"
	    "\"model\":\"m\"}");

	json_t *held;

	(void)state;
	sg_answer_add_usage(acc, u);
	/* A count someone else holds too is not changed under them. */
	held = json_incref(json_object_get(acc, "input_tokens"));
	sg_answer_add_usage(acc, u);
	assert_json(acc, "{\"input_tokens\":20,\"output_tokens\":10,"
	    "\"details\":{\"cached\":4},\"cost\":1.0}");
	assert_int_equal(json_integer_value(held), 10);
	json_decref(held);
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
	assert_ptr_equal(json_object_get(a, "metadata"), json_object_get(body,
	    "metadata"));
	assert_json(json_object_get(a, "tool_choice"), "\"auto\"");
	assert_true(json_is_false(json_object_get(a, "store")));
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

/* A client that sent only model, input and tools gets OpenAI's snapshot
 * byte for byte (§5.4's response.created, without usage and user). */
static void
head_is_openai_snapshot(void **state)
{
	json_t *body = ci_body();
	json_t *h = sg_answer_head(body, "resp_abc", 1757603567, "in_progress");

	(void)state;
	assert_dump(h, "{\"id\":\"resp_abc\",\"object\":\"response\","
	    "\"created_at\":1757603567,\"status\":\"in_progress\","
	    "\"background\":false,\"completed_at\":null,\"error\":null,"
	    "\"incomplete_details\":null,\"instructions\":null,"
	    "\"max_output_tokens\":null,\"max_tool_calls\":null,\"model\":"
	    "\"gpt-4.1\",\"output\":[],\"parallel_tool_calls\":true,"
	    "\"previous_response_id\":null,\"prompt_cache_key\":null,"
	    "\"reasoning\":{\"effort\":null,\"summary\":null},"
	    "\"safety_identifier\":null,\"service_tier\":\"auto\",\"store\":true,"
	    "\"temperature\":1,\"text\":{\"format\":{\"type\":\"text\"}},"
	    "\"tool_choice\":\"auto\",\"tools\":[" CI_TOOL "],\"top_logprobs\":0,"
	    "\"top_p\":1,\"truncation\":\"disabled\",\"usage\":null,"
	    "\"user\":null,\"metadata\":{}}");
	json_decref(h);
	json_decref(body);
}

/* Every request field echoes the client's value; what is not a response
 * field (input, include, stream) stays out; a function tool gets the
 * strict and parameters OpenAI echoes; a conversation shows as {"id"}. */
static void
head_echoes_the_client(void **state)
{
	json_t *body = j("{\"model\":\"m\",\"input\":\"x\",\"stream\":true,"
	    "\"include\":[\"a\"],\"instructions\":\"be brief\","
	    "\"max_output_tokens\":99,\"max_tool_calls\":3,"
	    "\"parallel_tool_calls\":false,\"previous_response_id\":\"resp_p\","
	    "\"prompt_cache_key\":\"pk\",\"reasoning\":{\"effort\":\"low\"},"
	    "\"safety_identifier\":\"si\",\"service_tier\":\"flex\","
	    "\"store\":false,\"temperature\":0.5,\"text\":{\"verbosity\":"
	    "\"low\"},\"tool_choice\":\"required\",\"tools\":[{\"type\":"
	    "\"function\",\"name\":\"f\"}],\"top_logprobs\":2,\"top_p\":0.25,"
	    "\"truncation\":\"auto\",\"user\":\"u1\",\"metadata\":{\"k\":\"v\"},"
	    "\"conversation\":\"conv_1\",\"background\":true}");
	json_t *h = sg_answer_head(body, "resp_e", 7, "in_progress");

	(void)state;
	assert_dump(h, "{\"id\":\"resp_e\",\"object\":\"response\","
	    "\"created_at\":7,\"status\":\"in_progress\",\"background\":true,"
	    "\"completed_at\":null,\"conversation\":{\"id\":\"conv_1\"},"
	    "\"error\":null,\"incomplete_details\":null,\"instructions\":"
	    "\"be brief\",\"max_output_tokens\":99,\"max_tool_calls\":3,"
	    "\"model\":\"m\",\"output\":[],\"parallel_tool_calls\":false,"
	    "\"previous_response_id\":\"resp_p\",\"prompt_cache_key\":\"pk\","
	    "\"reasoning\":{\"effort\":\"low\",\"summary\":null},"
	    "\"safety_identifier\":\"si\",\"service_tier\":\"flex\","
	    "\"store\":false,\"temperature\":0.5,\"text\":{\"format\":{\"type\":"
	    "\"text\"},\"verbosity\":\"low\"},\"tool_choice\":\"required\","
	    "\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":"
	    "null,\"strict\":true}],\"top_logprobs\":2,\"top_p\":0.25,"
	    "\"truncation\":\"auto\",\"usage\":null,\"user\":\"u1\","
	    "\"metadata\":{\"k\":\"v\"}}");
	/* The client's function tool itself is not changed. */
	assert_null(json_object_get(json_array_get(json_object_get(body,
	    "tools"), 0), "strict"));
	json_decref(h);
	json_decref(body);
}

/* A null or mistyped request value echoes OpenAI's default: the answer
 * keeps the spec's types whatever a lenient upstream let through. */
static void
head_defaults_over_nulls(void **state)
{
	json_t *body = j("{\"model\":\"m\",\"store\":null,\"tools\":null,"
	    "\"tool_choice\":null,\"text\":null,\"reasoning\":null,\"user\":null,"
	    "\"metadata\":null,\"temperature\":\"hot\",\"parallel_tool_calls\":"
	    "\"yes\",\"max_output_tokens\":1.5,\"truncation\":7}");
	json_t *ref = j("{\"model\":\"m\"}");
	json_t *h = sg_answer_head(body, "resp_n", 1, "in_progress");
	json_t *want = sg_answer_head(ref, "resp_n", 1, "in_progress");

	(void)state;
	assert_keys(h, KEYS);
	assert_true(json_equal(h, want));
	assert_json(json_object_get(h, "tools"), "[]");
	json_decref(h);
	json_decref(want);
	json_decref(body);
	json_decref(ref);
}

/* At completion: the client's echo (not the upstream's store:false,
 * previous_response_id, tools or model, which the loop rewrote), the
 * upstream's service_tier, completed_at, usage with every key the spec
 * requires, nothing else of the upstream's. */
static void
completed_echoes_the_client_not_the_upstream(void **state)
{
	json_t *body = ci_body();
	json_t *last = j("{\"id\":\"resp_up\",\"object\":\"response\","
	    "\"created_at\":5,\"status\":\"completed\",\"store\":false,"
	    "\"previous_response_id\":\"resp_up0\",\"model\":\"real-model\","
	    "\"tools\":[{\"type\":\"function\",\"name\":\"exec\"}],"
	    "\"tool_choice\":\"none\",\"service_tier\":\"priority\","
	    "\"billing\":{\"payer\":\"x\"},\"user\":null,\"usage\":{}}");
	json_t *output = j("[]"), *usage = j("{\"input_tokens\":10,"
	    "\"output_tokens\":5,\"total_tokens\":15}");
	time_t before = time(NULL);
	json_t *a = sg_answer_responses(last, body, output, usage, "resp_sg");

	(void)state;
	assert_keys(a, KEYS);
	assert_string_equal(json_string_value(json_object_get(a, "status")),
	    "completed");
	assert_true(json_integer_value(json_object_get(a, "completed_at")) >=
	    before);
	assert_true(json_is_true(json_object_get(a, "store")));
	assert_true(json_is_null(json_object_get(a, "previous_response_id")));
	assert_json(json_object_get(a, "model"), "\"gpt-4.1\"");
	assert_json(json_object_get(a, "tools"), "[" CI_TOOL "]");
	assert_json(json_object_get(a, "tool_choice"), "\"auto\"");
	assert_json(json_object_get(a, "service_tier"), "\"priority\"");
	assert_true(json_is_null(json_object_get(a, "error")));
	assert_true(json_is_null(json_object_get(a, "incomplete_details")));
	assert_dump(json_object_get(a, "usage"), "{\"input_tokens\":10,"
	    "\"input_tokens_details\":{\"cached_tokens\":0,"
	    "\"cache_write_tokens\":0},\"output_tokens\":5,"
	    "\"output_tokens_details\":{\"reasoning_tokens\":0},"
	    "\"total_tokens\":15}");
	json_decref(a);
	/* No tier from the upstream: "default"; no usage at all: none. */
	json_object_del(last, "service_tier");
	json_object_clear(usage);
	a = sg_answer_responses(last, body, output, usage, "resp_sg");
	assert_json(json_object_get(a, "service_tier"), "\"default\"");
	assert_keys(a, KEYS);
	json_decref(a);
	json_decref(body);
	json_decref(last);
	json_decref(output);
	json_decref(usage);
}

/* An upstream that stopped short makes the answer incomplete, with its
 * reason and no completed_at; a created_at from a clock ahead of ours
 * is never after now. */
static void
incomplete_keeps_the_reason(void **state)
{
	json_t *body = ci_body(), *output = j("[]"), *usage = j("{}");
	json_t *last = j("{\"status\":\"incomplete\",\"created_at\":"
	    "99999999999,\"incomplete_details\":{\"reason\":"
	    "\"max_output_tokens\"}}");
	json_t *a = sg_answer_responses(last, body, output, usage, "resp_i");

	(void)state;
	assert_keys(a, KEYS);
	assert_string_equal(json_string_value(json_object_get(a, "status")),
	    "incomplete");
	assert_true(json_is_null(json_object_get(a, "completed_at")));
	assert_json(json_object_get(a, "incomplete_details"),
	    "{\"reason\":\"max_output_tokens\"}");
	assert_true(json_integer_value(json_object_get(a, "created_at")) <=
	    time(NULL));
	json_decref(a);
	json_decref(body);
	json_decref(last);
	json_decref(output);
	json_decref(usage);
}

/* failed: error {code, message} with a code of the spec's closed set,
 * the output given, no usage. */
static void
failed_has_error_and_no_usage(void **state)
{
	json_t *body = ci_body(), *output = j("[{\"type\":\"message\"}]");
	json_t *f = sg_answer_failed(body, "resp_f", 3, "upstream_error",
	    "broke", output);

	(void)state;
	assert_keys(f, KEYS);
	assert_string_equal(json_string_value(json_object_get(f, "status")),
	    "failed");
	assert_dump(json_object_get(f, "error"),
	    "{\"code\":\"server_error\",\"message\":\"broke\"}");
	assert_ptr_equal(json_object_get(f, "output"), output);
	assert_json(json_object_get(f, "service_tier"), "\"auto\"");
	json_decref(f);
	f = sg_answer_failed(body, "resp_f", 3, "rate_limit_exceeded", NULL,
	    NULL);
	assert_dump(json_object_get(f, "error"),
	    "{\"code\":\"rate_limit_exceeded\",\"message\":\"\"}");
	assert_json(json_object_get(f, "output"), "[]");
	json_decref(f);
	json_decref(body);
	json_decref(output);
}

/* An sg_out that keeps what is written. */
struct memout {
	struct sg_out	 out;	/* first: the callbacks get &out */
	char		*buf;
	size_t		 len;
};

static int
mem_write(struct sg_out *o, const void *p, size_t n)
{
	struct memout *m = (struct memout *)o;
	char *nb = realloc(m->buf, m->len + n + 1);

	if (nb == NULL)
		return -1;
	memcpy(nb + m->len, p, n);
	m->buf = nb;
	m->len += n;
	m->buf[m->len] = '\0';
	return 0;
}

static int
mem_flush(struct sg_out *o)
{
	(void)o;
	return 0;
}

static int
mem_alive(struct sg_out *o)
{
	(void)o;
	return 1;
}

static const char *
no_sandbox(void *arg, struct sg_error *err)
{
	(void)arg;
	(void)err;
	return "sbx_test";
}

/* The data of every event written, in order (a new array). */
static json_t *
events_of(const struct memout *m)
{
	json_t *evs = json_array();
	const char *p = m->buf;

	while (p != NULL && (p = strstr(p, "\ndata: ")) != NULL) {
		const char *end = strstr(p + 7, "\n\n");

		json_array_append_new(evs, json_loadb(p + 7, end != NULL ?
		    (size_t)(end - p - 7) : strlen(p + 7), 0, NULL));
		p = end;
	}
	return evs;
}

static const char *
ev_type(const json_t *evs, size_t i)
{
	return json_string_value(json_object_get(json_array_get(evs, i),
	    "type"));
}

static const json_t *
ev_response(const json_t *evs, size_t i)
{
	return json_object_get(json_array_get(evs, i), "response");
}

/* Event i's response has the id and created_at of the first one. */
static void
assert_same_head(const json_t *evs, size_t i)
{
	const json_t *a = ev_response(evs, 0), *b = ev_response(evs, i);

	assert_true(json_equal(json_object_get(a, "id"), json_object_get(b,
	    "id")));
	assert_true(json_equal(json_object_get(a, "created_at"),
	    json_object_get(b, "created_at")));
}

/* One upstream event, given as JSON text. */
static void
feed(struct sg_stream *s, const char *text)
{
	json_t *ev = j(text);

	sg_stream_upstream(s, ev);
	json_decref(ev);
}

/* response.failed: the head failed, with every item the client saw
 * finished, in output order (not the one left unfinished), no usage. */
static void
stream_failed_shows_finished_items(void **state)
{
	struct memout m = { { mem_write, mem_flush, mem_alive, 0, 0 }, NULL, 0 };
	struct sg_req req = { .id = "req_test" };
	struct sg_error err = { .status = 502, .type = "server_error",
	    .message = "boom" };
	json_t *body = ci_body(), *ci = j("{\"id\":\"ci_1\",\"type\":"
	    "\"code_interpreter_call\",\"status\":\"completed\"}"), *evs;
	struct sg_stream *s = sg_stream_new(SG_SURFACE_RESPONSES, &req, &m.out,
	    body, "exec", 1, no_sandbox, NULL);
	const json_t *f;
	size_t n;

	(void)state;
	feed(s, "{\"type\":\"response.output_item.added\",\"output_index\":0,"
	    "\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"name\":"
	    "\"exec\",\"call_id\":\"call_1\",\"arguments\":\"\"}}");
	feed(s, "{\"type\":\"response.output_item.added\",\"output_index\":1,"
	    "\"item\":{\"id\":\"msg_1\",\"type\":\"message\"}}");
	feed(s, "{\"type\":\"response.output_item.done\",\"output_index\":1,"
	    "\"sequence_number\":40,\"item\":{\"id\":\"msg_1\",\"type\":"
	    "\"message\",\"status\":\"completed\"}}");
	sg_stream_next_turn(s);
	feed(s, "{\"type\":\"response.output_item.added\",\"output_index\":0,"
	    "\"item\":{\"id\":\"msg_2\",\"type\":\"message\"}}");
	sg_stream_code_done(s, "call_1", ci);
	sg_stream_fail(s, &err);
	evs = events_of(&m);
	n = json_array_size(evs);
	assert_string_equal(ev_type(evs, n - 2), "error");
	assert_string_equal(ev_type(evs, n - 1), "response.failed");
	/* Our sequence numbers, not the upstream's. */
	assert_int_equal(json_integer_value(json_object_get(json_array_get(evs,
	    n - 1), "sequence_number")), n - 1);
	f = ev_response(evs, n - 1);
	assert_keys(f, KEYS);
	assert_same_head(evs, n - 1);
	assert_json(json_object_get(f, "status"), "\"failed\"");
	assert_dump(json_object_get(f, "error"),
	    "{\"code\":\"server_error\",\"message\":\"boom\"}");
	assert_json(json_object_get(f, "output"), "[{\"id\":\"ci_1\",\"type\":"
	    "\"code_interpreter_call\",\"status\":\"completed\"},{\"id\":"
	    "\"msg_1\",\"type\":\"message\",\"status\":\"completed\"}]");
	json_decref(evs);
	sg_stream_free(s);
	free(m.buf);
	json_decref(body);
	json_decref(ci);
}

/* The stream's snapshots and its last response share id and created_at;
 * an incomplete answer ends as response.incomplete. */
static void
stream_lifecycle_incomplete(void **state)
{
	struct memout m = { { mem_write, mem_flush, mem_alive, 0, 0 }, NULL, 0 };
	struct sg_req req = { .id = "req_test" };
	json_t *body = ci_body(), *output = j("[]"), *usage = j("{}"), *evs;
	json_t *last = j("{\"status\":\"incomplete\",\"created_at\":1,"
	    "\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}"), *a;
	struct sg_stream *s = sg_stream_new(SG_SURFACE_RESPONSES, &req, &m.out,
	    body, "exec", 1, no_sandbox, NULL);
	const json_t *first;

	(void)state;
	assert_int_equal(sg_stream_begin(s), 0);
	a = sg_answer_responses(last, body, output, usage, sg_stream_id(s));
	sg_stream_finish(s, a);
	evs = events_of(&m);
	assert_int_equal(json_array_size(evs), 3);
	assert_string_equal(ev_type(evs, 0), "response.created");
	assert_string_equal(ev_type(evs, 1), "response.in_progress");
	assert_string_equal(ev_type(evs, 2), "response.incomplete");
	assert_keys(json_array_get(evs, 0), "type,sequence_number,response");
	first = ev_response(evs, 0);
	assert_keys(first, KEYS);
	assert_true(json_is_null(json_object_get(first, "usage")));
	assert_true(json_is_null(json_object_get(first, "user")));
	assert_true(json_equal((json_t *)first, (json_t *)ev_response(evs, 1)));
	assert_keys(ev_response(evs, 2), KEYS);
	assert_same_head(evs, 2);
	assert_json(json_object_get(ev_response(evs, 2), "incomplete_details"),
	    "{\"reason\":\"max_output_tokens\"}");
	json_decref(evs);
	json_decref(a);
	sg_stream_free(s);
	free(m.buf);
	json_decref(body);
	json_decref(last);
	json_decref(output);
	json_decref(usage);
}

/* A background job's id, given with the request, is the stream's and
 * every snapshot's; its stream goes on after the events kept when it was
 * queued (response.created, response.queued), created when it was. */
static void
stream_takes_a_given_id(void **state)
{
	struct memout m = { { mem_write, mem_flush, mem_alive, 0, 0 }, NULL, 0 };
	struct sg_req req = { .id = "req_test", .resp_id = "resp_given01",
	    .wall_ms = 1700000000123 };
	json_t *body = ci_body(), *output = j("[]"), *usage = j("{}"), *evs;
	json_t *last = j("{\"status\":\"completed\",\"created_at\":1}"), *a;
	struct sg_stream *s = sg_stream_new(SG_SURFACE_RESPONSES, &req, &m.out,
	    body, "exec", 1, no_sandbox, NULL);
	size_t i;

	(void)state;
	assert_string_equal(sg_stream_id(s), "resp_given01");
	assert_int_equal(sg_stream_begin(s), 0);
	a = sg_answer_responses(last, body, output, usage, sg_stream_id(s));
	sg_stream_finish(s, a);
	evs = events_of(&m);
	assert_int_equal(json_array_size(evs), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    evs, 0), "type")), "response.in_progress");
	for (i = 0; i < json_array_size(evs); i++) {
		assert_int_equal(json_integer_value(json_object_get(
		    json_array_get(evs, i), "sequence_number")),
		    SG_STREAM_QUEUED_EVENTS + i);
		assert_string_equal(json_string_value(json_object_get(
		    ev_response(evs, i), "id")), "resp_given01");
		assert_int_equal(json_integer_value(json_object_get(
		    ev_response(evs, i), "created_at")), 1700000000);
	}
	json_decref(evs);
	json_decref(a);
	sg_stream_free(s);
	free(m.buf);
	json_decref(body);
	json_decref(last);
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
		cmocka_unit_test(head_is_openai_snapshot),
		cmocka_unit_test(head_echoes_the_client),
		cmocka_unit_test(head_defaults_over_nulls),
		cmocka_unit_test(completed_echoes_the_client_not_the_upstream),
		cmocka_unit_test(incomplete_keeps_the_reason),
		cmocka_unit_test(failed_has_error_and_no_usage),
		cmocka_unit_test(stream_lifecycle_incomplete),
		cmocka_unit_test(stream_takes_a_given_id),
		cmocka_unit_test(stream_failed_shows_finished_items),
		cmocka_unit_test(chat_answer_joins_turns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
