/*
 * core/state/convo: what the upstream gets for previous_response_id (its own
 * id and the outputs it waits for, or the whole history), item_references
 * and replayed code calls, per key; what is stored, and when.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/state/convo.h"
#include "testutil.h"

struct fx {
	struct tu_store_fx	*sfx;
	struct sg_store		*st;
	struct sg_cfg_model	 up, gw;
	struct sg_req		 alice, bob;
	size_t			 max_bytes;	/* sg_conv_begin's bound */
	struct sg_error		 err;		/* begin()'s, when it failed */
};

static int
setup(void **state)
{
	struct tu_store_fx *sfx;
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL || tu_store_setup((void **)&sfx) == -1) {
		free(fx);
		return -1;
	}
	fx->st = sfx->st;
	fx->sfx = sfx;
	fx->up.api_base = fx->gw.api_base = "http://127.0.0.1:9/v1";
	fx->up.state = SG_STATE_UPSTREAM;
	fx->gw.state = SG_STATE_GATEWAY;
	snprintf(fx->alice.tenant, sizeof(fx->alice.tenant), "aaaa");
	snprintf(fx->bob.tenant, sizeof(fx->bob.tenant), "bbbb");
	snprintf(fx->alice.id, sizeof(fx->alice.id), "req_a");
	snprintf(fx->bob.id, sizeof(fx->bob.id), "req_b");
	fx->max_bytes = 1 << 20;
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	tu_store_teardown((void **)&fx->sfx);
	free(fx);
	return 0;
}

/* The body's input after sg_conv_begin, as compact text. */
static char *
begin(struct fx *fx, const struct sg_cfg_model *m, struct sg_req *req,
    const char *body, int expect, json_t **work_out)
{
	struct sg_conv c;
	json_t *work = tu_json(body);
	char *text;
	int rc;

	rc = sg_conv_begin(&c, fx->st, m, req, work, "run_code", fx->max_bytes,
	    &fx->err);
	assert_int_equal(rc, expect);
	text = rc == 0 ? json_dumps(work, JSON_COMPACT | JSON_SORT_KEYS) :
	    strdup(fx->err.message);
	sg_conv_free(&c);
	if (work_out != NULL)
		*work_out = work;
	else
		json_decref(work);
	return text;
}

/*
 * A first turn of alice: "hi", the model ran code (call c1, output "2")
 * and said "two". In upstream mode the upstream kept it as resp_up1.
 */
static const char first_answer[] = "{\"id\":\"resp_1\",\"object\":"
    "\"response\",\"model\":\"m\",\"output\":[{\"id\":\"ci_1\",\"type\":"
    "\"code_interpreter_call\",\"code\":\"1+1\"},{\"id\":\"msg_up\","
    "\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
    "\"output_text\",\"text\":\"two \\u00e9\\n\"}]}],\"store\":true}";

/* The first turn saved; text, when not NULL, given the answer's text. */
static void
first_turn_text(struct fx *fx, const struct sg_cfg_model *m, int store,
    const char *pending, struct sg_buf *text)
{
	struct sg_conv c;
	struct sg_error err;
	json_t *work = tu_json(store ? "{\"input\":\"hi\"}" :
	    "{\"input\":\"hi\",\"store\":false}"), *answer;

	assert_int_equal(sg_conv_begin(&c, fx->st, m, &fx->alice, work,
	    "run_code", fx->max_bytes, &err), 0);
	sg_conv_output(&c, tu_json("[{\"id\":\"fc_1\",\"type\":\"function_call\","
	    "\"call_id\":\"c1\",\"name\":\"run_code\",\"arguments\":\"{}\"},"
	    "{\"type\":\"function_call_output\",\"call_id\":\"c1\","
	    "\"output\":\"2\"}]"));
	sg_conv_output(&c, tu_json("[{\"id\":\"msg_up\",\"type\":\"message\","
	    "\"role\":\"assistant\",\"content\":\"two\"}]"));
	if (pending != NULL)
		sg_conv_pending(&c, tu_json(pending));
	answer = tu_json(first_answer);
	sg_conv_save(&c, answer, "resp_up1", "cntr_1", text);
	json_decref(answer);
	json_decref(work);
	sg_conv_free(&c);
}

static void
first_turn(struct fx *fx, const struct sg_cfg_model *m, int store,
    const char *pending)
{
	first_turn_text(fx, m, store, pending, NULL);
}

/* Each stored output item's text, in order, joined by commas. */
static int
join_item(void *arg, const struct sg_store_item *it)
{
	struct sg_buf *b = arg;

	if (b->len > 0)
		sg_buf_add(b, ",", 1);
	return sg_buf_add(b, it->item, strlen(it->item));
}

/* Written once for the client and the store: the client's text is the
 * answer's dump; the stored body is it with output [], and the stored
 * items are its output's elements, byte for byte. */
static void
saved_as_sent(void **state)
{
	struct fx *fx = *state;
	struct sg_buf text = { 0 }, items = { 0 };
	struct sg_store_resp_row row;
	json_t *answer = tu_json(first_answer), *out;
	char *want;

	first_turn_text(fx, &fx->gw, 1, NULL, &text);
	want = json_dumps(answer, JSON_COMPACT);
	assert_int_equal(text.len, strlen(want));
	assert_string_equal(text.p, want);
	free(want);
	assert_int_equal(sg_store_resp_load(fx->st, "resp_1", "aaaa", &row),
	    SG_STORE_OK);
	out = json_incref(json_object_get(answer, "output"));
	json_object_set_new(answer, "output", json_array());
	want = json_dumps(answer, JSON_COMPACT);
	assert_string_equal(row.body, want);
	free(want);
	sg_store_resp_clear(&row);
	assert_int_equal(sg_store_resp_items(fx->st, "resp_1", 1, join_item,
	    &items), SG_STORE_OK);
	want = json_dumps(out, JSON_COMPACT);
	assert_int_equal(items.len + 2, strlen(want));
	assert_memory_equal(items.p, want + 1, items.len);
	free(want);
	free(items.p);
	free(text.p);
	json_decref(out);
	json_decref(answer);
}

/* store:false: nothing stored, the client's text written all the same. */
static void
unsaved_still_written(void **state)
{
	struct fx *fx = *state;
	struct sg_buf text = { 0 };
	struct sg_store_resp_row row;
	json_t *answer = tu_json(first_answer);
	char *want = json_dumps(answer, JSON_COMPACT);

	first_turn_text(fx, &fx->gw, 0, NULL, &text);
	assert_string_equal(text.p, want);
	assert_int_equal(sg_store_resp_load(fx->st, "resp_1", "aaaa", &row),
	    SG_STORE_NOTFOUND);
	free(want);
	free(text.p);
	json_decref(answer);
}

static void
gateway_expands_history(void **state)
{
	struct fx *fx = *state;
	char *in;

	first_turn(fx, &fx->gw, 1, NULL);
	in = begin(fx, &fx->gw, &fx->alice, "{\"previous_response_id\":"
	    "\"resp_1\",\"input\":\"more\",\"store\":true}", 0, NULL);
	/* The upstream keeps nothing: no id of its items, store false. */
	assert_string_equal(in, "{\"input\":[{\"content\":\"hi\",\"role\":"
	    "\"user\"},{\"arguments\":\"{}\",\"call_id\":\"c1\",\"name\":"
	    "\"run_code\",\"type\":\"function_call\"},{\"call_id\":\"c1\","
	    "\"output\":\"2\",\"type\":\"function_call_output\"},{\"content\":"
	    "\"two\",\"role\":\"assistant\",\"type\":\"message\"},{\"content\":"
	    "\"more\",\"role\":\"user\"}],\"store\":false}");
	free(in);
}

static void
upstream_continues_with_pending(void **state)
{
	struct fx *fx = *state;
	char *in;

	first_turn(fx, &fx->up, 1, "[{\"type\":\"function_call_output\","
	    "\"call_id\":\"c9\",\"output\":\"ran\"}]");
	in = begin(fx, &fx->up, &fx->alice, "{\"previous_response_id\":"
	    "\"resp_1\",\"input\":[{\"type\":\"function_call_output\","
	    "\"call_id\":\"w1\",\"output\":\"sunny\"}]}", 0, NULL);
	assert_string_equal(in, "{\"input\":[{\"call_id\":\"c9\",\"output\":"
	    "\"ran\",\"type\":\"function_call_output\"},{\"call_id\":\"w1\","
	    "\"output\":\"sunny\",\"type\":\"function_call_output\"}],"
	    "\"previous_response_id\":\"resp_up1\"}");
	free(in);
}

static void
previous_of_another_key(void **state)
{
	struct fx *fx = *state;
	char *msg;

	first_turn(fx, &fx->gw, 1, NULL);
	msg = begin(fx, &fx->gw, &fx->bob, "{\"previous_response_id\":"
	    "\"resp_1\",\"input\":\"x\"}", -1, NULL);
	assert_string_equal(msg, "Previous response with id 'resp_1' not "
	    "found.");
	free(msg);
}

static void
references_resolve_per_key(void **state)
{
	struct fx *fx = *state;
	char *in;

	first_turn(fx, &fx->up, 1, NULL);
	in = begin(fx, &fx->up, &fx->alice, "{\"input\":[{\"type\":"
	    "\"item_reference\",\"id\":\"ci_1\"},{\"type\":\"item_reference\","
	    "\"id\":\"msg_up\"},{\"type\":\"item_reference\",\"id\":"
	    "\"msg_theirs\"}]}", 0, NULL);
	/* Upstream mode, the upstream stores: its own ids stay; an id
	 * sandgate never saw is the upstream's to resolve. */
	assert_string_equal(in, "{\"input\":[{\"arguments\":\"{}\",\"call_id\":"
	    "\"c1\",\"id\":\"fc_1\",\"name\":\"run_code\",\"type\":"
	    "\"function_call\"},{\"call_id\":\"c1\",\"output\":\"2\",\"type\":"
	    "\"function_call_output\"},{\"content\":\"two\",\"id\":\"msg_up\","
	    "\"role\":\"assistant\",\"type\":\"message\"},{\"id\":"
	    "\"msg_theirs\",\"type\":\"item_reference\"}]}");
	free(in);
	in = begin(fx, &fx->up, &fx->bob, "{\"input\":[{\"type\":"
	    "\"item_reference\",\"id\":\"msg_up\"}]}", -1, NULL);
	assert_string_equal(in, "Item with id 'msg_up' not found.");
	free(in);
	/* A code call id sandgate no longer holds was never the upstream's. */
	in = begin(fx, &fx->up, &fx->alice, "{\"input\":[{\"type\":"
	    "\"item_reference\",\"id\":\"ci_gone\"}]}", -1, NULL);
	assert_string_equal(in, "Item with id 'ci_gone' not found.");
	free(in);
}

static void
replayed_code_calls(void **state)
{
	struct fx *fx = *state;
	char *in;

	first_turn(fx, &fx->gw, 1, NULL);
	/* Held: the exact pair the upstream saw (ids dropped: it keeps
	 * nothing). Not held: made from what the client kept. */
	in = begin(fx, &fx->gw, &fx->alice, "{\"input\":[{\"type\":"
	    "\"code_interpreter_call\",\"id\":\"ci_1\",\"code\":\"1+1\"},"
	    "{\"type\":\"code_interpreter_call\",\"id\":\"ci_abc\",\"code\":"
	    "\"x\",\"outputs\":[{\"type\":\"logs\",\"logs\":\"7\"}]}]}", 0,
	    NULL);
	assert_string_equal(in, "{\"input\":[{\"arguments\":\"{}\",\"call_id\":"
	    "\"c1\",\"name\":\"run_code\",\"type\":\"function_call\"},"
	    "{\"call_id\":\"c1\",\"output\":\"2\",\"type\":"
	    "\"function_call_output\"},{\"arguments\":\"{\\\"code\\\":"
	    "\\\"x\\\"}\",\"call_id\":\"call_abc\",\"name\":\"run_code\","
	    "\"type\":\"function_call\"},{\"call_id\":\"call_abc\",\"output\":"
	    "\"7\",\"type\":\"function_call_output\"}],\"store\":false}");
	free(in);
}

/* Refused as OpenAI refuses a context too long (the bound is max). */
static void
assert_too_long(struct fx *fx, const char *msg, size_t max)
{
	char want[256];

	snprintf(want, sizeof(want), "Your input exceeds the context window of "
	    "this model. Please adjust your input and try again. (With what it "
	    "continues, this conversation is over what this gateway carries: "
	    "%zu bytes, 100000 JSON values.)", max);
	assert_string_equal(msg, want);
	assert_int_equal(fx->err.status, 400);
	assert_string_equal(fx->err.type, "invalid_request_error");
	assert_string_equal(fx->err.code, "context_length_exceeded");
	assert_string_equal(fx->err.param, "input");
}

/*
 * A history read from the store is bounded as a body is: a continuation
 * could load a thousand stored responses and all their items into one
 * responder. Past the bound (this request's body with what it continues)
 * it is refused, having read no more than that; nothing stored changes.
 */
static void
history_past_the_bound(void **state)
{
	struct fx *fx = *state;
	struct sg_store_resp_row row;
	const char *body = "{\"previous_response_id\":\"resp_1\",\"input\":"
	    "\"more\"}";
	char *msg;

	first_turn(fx, &fx->gw, 1, NULL);
	fx->max_bytes = 100;
	msg = begin(fx, &fx->gw, &fx->alice, body, -1, NULL);
	assert_too_long(fx, msg, 100);
	free(msg);
	/* The body counts: the bound is the whole conversation's. */
	fx->max_bytes = 4096;
	fx->alice.body_len = 4000;
	msg = begin(fx, &fx->gw, &fx->alice, body, -1, NULL);
	assert_too_long(fx, msg, 4096);
	free(msg);
	fx->alice.body_len = 0;
	free(begin(fx, &fx->gw, &fx->alice, body, 0, NULL));
	/* Refused, not lost. */
	assert_int_equal(sg_store_resp_load(fx->st, "resp_1", "aaaa", &row),
	    SG_STORE_OK);
	sg_store_resp_clear(&row);
}

/* Few bytes can still be many values: bounded as a body's are. */
static void
history_of_many_values(void **state)
{
	struct fx *fx = *state;
	struct sg_store_resp r = { .id = "resp_v", .tenant = "aaaa", .model =
	    "m", .upstream_id = "", .body = "{}" };
	struct sg_store_item in = { NULL, "{}", NULL };
	char *up, *msg;
	size_t i, n = 60000;

	/* [{},{},...]: three bytes and two values an item. */
	up = malloc(3 * n + 2);
	assert_non_null(up);
	up[0] = '[';
	for (i = 0; i < n; i++)
		memcpy(up + 1 + 3 * i, "{},", 3);
	memcpy(up + 3 * n, "]", 2);
	in.upstream = up;
	assert_int_equal(sg_store_resp_save(fx->st, &r, &in, 1, NULL, 0),
	    SG_STORE_OK);
	msg = begin(fx, &fx->gw, &fx->alice, "{\"previous_response_id\":"
	    "\"resp_v\",\"input\":\"x\"}", -1, NULL);
	assert_too_long(fx, msg, fx->max_bytes);
	free(msg);
	free(up);
}

/* Items a request names by id are read from the store too: an
 * item_reference, or a replayed code call, repeated in one body. */
static void
references_past_the_bound(void **state)
{
	struct fx *fx = *state;
	char body[4096], *msg;
	size_t n;
	int i;

	first_turn(fx, &fx->up, 1, NULL);
	n = (size_t)snprintf(body, sizeof(body), "{\"input\":[");
	for (i = 0; i < 20; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n, "%s{\"type\":"
		    "\"item_reference\",\"id\":\"ci_1\"}", i > 0 ? "," : "");
	snprintf(body + n, sizeof(body) - n, "]}");
	fx->max_bytes = 1000;
	msg = begin(fx, &fx->up, &fx->alice, body, -1, NULL);
	assert_too_long(fx, msg, 1000);
	free(msg);
	msg = begin(fx, &fx->up, &fx->alice, "{\"input\":[{\"type\":"
	    "\"code_interpreter_call\",\"id\":\"ci_1\",\"code\":\"1+1\"}]}",
	    0, NULL);
	free(msg);
	fx->max_bytes = 100;
	msg = begin(fx, &fx->up, &fx->alice, "{\"input\":[{\"type\":"
	    "\"code_interpreter_call\",\"id\":\"ci_1\",\"code\":\"1+1\"}]}",
	    -1, NULL);
	assert_too_long(fx, msg, 100);
	free(msg);
}

static void
store_false_not_kept(void **state)
{
	struct fx *fx = *state;
	struct sg_store_resp_row row;

	first_turn(fx, &fx->gw, 0, NULL);
	assert_int_equal(sg_store_resp_load(fx->st, "resp_1", "aaaa", &row),
	    SG_STORE_NOTFOUND);
}

static void
upitem_keeps_encrypted_reasoning(void **state)
{
	struct fx *fx = *state;
	struct sg_conv c;
	struct sg_error err;
	json_t *work = tu_json("{\"input\":[],\"store\":false}"), *it, *got;

	(void)fx;
	assert_int_equal(sg_conv_begin(&c, fx->st, &fx->up, &fx->alice, work,
	    "run_code", fx->max_bytes, &err), 0);
	it = tu_json("{\"id\":\"rs_1\",\"type\":\"reasoning\","
	    "\"encrypted_content\":\"e\"}");
	got = sg_conv_upitem(&c, it);
	assert_string_equal(json_string_value(json_object_get(got, "id")),
	    "rs_1");
	json_decref(got);
	json_decref(it);
	it = tu_json("{\"id\":\"rs_2\",\"type\":\"reasoning\"}");
	got = sg_conv_upitem(&c, it);
	assert_null(json_object_get(got, "id"));
	assert_non_null(json_object_get(it, "id"));
	json_decref(got);
	json_decref(it);
	sg_conv_free(&c);
	json_decref(work);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(gateway_expands_history),
		T(upstream_continues_with_pending),
		T(previous_of_another_key),
		T(references_resolve_per_key),
		T(replayed_code_calls),
		T(history_past_the_bound),
		T(history_of_many_values),
		T(references_past_the_bound),
		T(store_false_not_kept),
		T(upitem_keeps_encrypted_reasoning),
		T(saved_as_sent),
		T(unsaved_still_written),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
