/*
 * core/state/convs: a conversation's items as a client adds them (ids
 * minted by kind, messages made parts, references resolved, bad items
 * refused), what the upstream gets when a request continues it (its
 * items, a code call as its call and output pair, no conversation, store
 * false, on an upstream that keeps state too), what the turn adds, its
 * container, and per key.
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
#include "../../core/state/convs.h"
#include "../../store/conversations.h"
#include "testutil.h"

struct fx {
	struct tu_store_fx	*sfx;
	struct sg_store		*st;
	struct sg_cfg_model	 up;
	struct sg_req		 alice, bob;
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
	fx->up.api_base = "http://127.0.0.1:9/v1";
	fx->up.state = SG_STATE_UPSTREAM;
	snprintf(fx->alice.tenant, sizeof(fx->alice.tenant), "aaaa");
	snprintf(fx->bob.tenant, sizeof(fx->bob.tenant), "bbbb");
	snprintf(fx->alice.id, sizeof(fx->alice.id), "req_a");
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

/* Items in, as sg_convs_items_in makes them: 0 or -1 (err filled). */
static int
items_in(struct fx *fx, struct sg_req *req, const char *items, json_t **kept,
    json_t **ups, struct sg_error *err)
{
	json_t *in = tu_json(items);
	int rc = sg_convs_items_in(fx->st, req, in, "items", kept, ups, err);

	json_decref(in);
	return rc;
}

static int
count(void *arg, const struct sg_store_item *it)
{
	(void)it;
	(*(int *)arg)++;
	return 0;
}

/* alice's conv_1: "hello", then a code call kept by a client (the Agents
 * SDK's items.create) in cntr_9. */
static void
make_conv(struct fx *fx)
{
	struct sg_error err;
	json_t *kept, *ups;

	assert_int_equal(items_in(fx, &fx->alice, "[{\"role\":\"user\","
	    "\"content\":\"hello\"},{\"type\":\"code_interpreter_call\","
	    "\"code\":\"x = 5\\nprint(x)\",\"container_id\":\"cntr_9\","
	    "\"status\":\"completed\",\"outputs\":[{\"type\":\"logs\","
	    "\"logs\":\"5\\n\"}]}]", &kept, &ups, &err), 0);
	assert_int_equal(sg_convs_create(fx->st, "conv_1", "aaaa", NULL, kept,
	    ups), SG_STORE_OK);
	json_decref(kept);
	json_decref(ups);
}

static void
items_in_shapes(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	json_t *kept, *ups;
	char *text;

	assert_int_equal(items_in(fx, &fx->alice, "[{\"role\":\"user\","
	    "\"content\":\"hi\"},{\"type\":\"function_call\",\"call_id\":\"c\","
	    "\"name\":\"f\",\"arguments\":\"{}\"},{\"type\":\"reasoning\","
	    "\"id\":\"rs_keep\",\"summary\":[]},{\"type\":\"something_new\"}]",
	    &kept, &ups, &err), 0);
	assert_int_equal(strncmp(json_string_value(json_object_get(
	    json_array_get(kept, 0), "id")), "msg_", 4), 0);
	assert_int_equal(strncmp(json_string_value(json_object_get(
	    json_array_get(kept, 1), "id")), "fc_", 3), 0);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    kept, 2), "id")), "rs_keep");
	assert_int_equal(strncmp(json_string_value(json_object_get(
	    json_array_get(kept, 3), "id")), "item_", 5), 0);
	text = json_dumps(json_array_get(kept, 0), JSON_COMPACT |
	    JSON_SORT_KEYS);
	assert_non_null(strstr(text, "\"content\":[{\"text\":\"hi\",\"type\":"
	    "\"input_text\"}],\"id\":\"msg_"));
	assert_non_null(strstr(text, "\"status\":\"completed\",\"type\":"
	    "\"message\""));
	free(text);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    kept, 1), "status")), "completed");
	/* The upstream gets what the client gave. */
	text = json_dumps(json_array_get(ups, 0), JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(text, "[{\"content\":\"hi\",\"role\":\"user\"}]");
	free(text);
	json_decref(kept);
	json_decref(ups);
	/* Not an item, no type, a reference to nothing. */
	assert_int_equal(items_in(fx, &fx->alice, "[1]", &kept, &ups, &err), -1);
	assert_string_equal(err.param, "items");
	assert_null(kept);
	assert_int_equal(items_in(fx, &fx->alice, "[{\"content\":\"x\"}]", &kept,
	    &ups, &err), -1);
	assert_int_equal(items_in(fx, &fx->alice, "[{\"type\":\"item_reference\","
	    "\"id\":\"msg_none\"}]", &kept, &ups, &err), -1);
	assert_string_equal(err.message, "Item with id 'msg_none' not found.");
}

/* A turn naming the conversation: its items first, the code call as the
 * call and output the upstream expects; no conversation, store false
 * (even for an upstream that keeps state); then the turn is added. */
static void
turn_continues_and_adds(void **state)
{
	struct fx *fx = *state;
	struct sg_store_conv row;
	struct sg_error err;
	struct sg_conv c;
	json_t *work = tu_json("{\"conversation\":{\"id\":\"conv_1\"},\"input\":"
	    "\"next\"}"), *answer;
	char *text, sbx[48];
	int more, n = 0;

	make_conv(fx);
	assert_int_equal(sg_conv_needed(fx->st, &fx->alice, work), 1);
	sg_convs_sandbox(fx->st, "aaaa", "conv_1", sbx);
	assert_string_equal(sbx, "cntr_9");
	assert_int_equal(sg_conv_begin(&c, fx->st, &fx->up, &fx->alice, work,
	    "run_code", 1 << 20, &err), 0);
	text = json_dumps(work, JSON_COMPACT | JSON_SORT_KEYS);
	assert_non_null(strstr(text, "\"input\":[{\"content\":\"hello\","
	    "\"role\":\"user\"},{\"arguments\":\"{\\\"code\\\":\\\"x = "
	    "5\\\\nprint(x)\\\"}\",\"call_id\":\"call_"));
	assert_non_null(strstr(text, "\"name\":\"run_code\",\"type\":"
	    "\"function_call\"},{\"call_id\":\"call_"));
	assert_non_null(strstr(text, "\"output\":\"5\\n\",\"type\":"
	    "\"function_call_output\"},{\"content\":\"next\",\"role\":"
	    "\"user\"}]"));
	assert_null(strstr(text, "conversation"));
	assert_non_null(strstr(text, "\"store\":false"));
	free(text);
	answer = tu_json("{\"id\":\"resp_1\",\"object\":\"response\",\"model\":\"m\","
	    "\"output\":[{\"id\":\"msg_up\",\"type\":\"message\",\"role\":"
	    "\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":"
	    "\"ok\"}]}]}");
	sg_conv_output(&c, tu_json("[{\"type\":\"message\",\"role\":\"assistant\","
	    "\"content\":\"ok\"}]"));
	sg_conv_save(&c, answer, "resp_up", "cntr_new", NULL);
	sg_conv_free(&c);
	json_decref(answer);
	json_decref(work);
	/* Two items before, the input and the output now; its container is
	 * the turn's. */
	assert_int_equal(sg_store_conv_items(fx->st, "conv_1", NULL, 0, 0,
	    count, &n, &more), SG_STORE_OK);
	assert_int_equal(n, 4);
	assert_int_equal(sg_store_conv_get(fx->st, "conv_1", "aaaa", &row),
	    SG_STORE_OK);
	assert_string_equal(row.sandbox_id, "cntr_new");
	sg_store_conv_clear(&row);
}

/* Another key's is not found; with previous_response_id it is 400; a
 * conversation of the wrong type is 400. */
static void
refused(void **state)
{
	struct fx *fx = *state;
	static const struct {
		const char	*body;
		int		 status;
		const char	*message;
	} cases[] = {
		{ "{\"conversation\":\"conv_1\",\"input\":\"x\"}", 404,
		    "Conversation with id 'conv_1' not found." },
		{ "{\"conversation\":\"conv_1\",\"previous_response_id\":"
		    "\"resp_1\",\"input\":\"x\"}", 400, "Mutually exclusive "
		    "parameters: Ensure you are only providing one of: "
		    "'previous_response_id' or 'conversation'." },
		{ "{\"conversation\":[],\"input\":\"x\"}", 400, "Invalid type for "
		    "'conversation': expected a string or an object with an "
		    "'id'." },
	};
	struct sg_error err;
	struct sg_conv c;
	json_t *work;
	size_t i;

	make_conv(fx);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		work = tu_json(cases[i].body);
		assert_int_equal(sg_conv_begin(&c, fx->st, &fx->up, &fx->bob, work,
		    "run_code", 1 << 20, &err), -1);
		assert_int_equal(err.status, cases[i].status);
		assert_string_equal(err.message, cases[i].message);
		sg_conv_free(&c);
		json_decref(work);
	}
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(items_in_shapes),
		T(turn_continues_and_adds),
		T(refused),
	};

	TU_STORE_MAIN(tests);
}
