/*
 * core/upstream/respids: previous_response_id on the passthrough is checked
 * against the ids relayed to the same key from the same upstream, and
 * the ids of answers and streams are noted; the members are found in the
 * JSON text without building it. A real store in a temp dir.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/upstream/respids.h"
#include "testutil.h"

#define UP	"http://127.0.0.1:9/v1"

struct fx {
	char		 dir[64];
	struct sg_store	*st;
	struct sg_req	 alice, bob;
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char path[128];

	if (fx == NULL || tu_store_fresh(fx->dir, sizeof(fx->dir), path,
	    sizeof(path), &fx->st) == -1) {
		free(fx);
		return -1;
	}
	snprintf(fx->alice.tenant, sizeof(fx->alice.tenant), "alice");
	snprintf(fx->alice.id, sizeof(fx->alice.id), "req_a");
	snprintf(fx->bob.tenant, sizeof(fx->bob.tenant), "bob");
	snprintf(fx->bob.id, sizeof(fx->bob.id), "req_b");
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	sg_store_close(fx->st);
	tu_rmrf(fx->dir);
	free(fx);
	return 0;
}

/* sg_respids_check of body for req: its return, err filled. */
static int
check(struct fx *fx, const struct sg_req *req, const char *body,
    struct sg_error *err)
{
	memset(err, 0, sizeof(*err));
	return sg_respids_check(fx->st, UP, req, body, strlen(body), err);
}

static void
assert_not_found(struct fx *fx, const struct sg_req *req, const char *body,
    const char *id)
{
	struct sg_error err;
	char want[128];

	if (check(fx, req, body, &err) != -1)
		fail_msg("%s for %s: accepted", body, req->tenant);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.type, "invalid_request_error");
	assert_string_equal(err.param, "previous_response_id");
	assert_string_equal(err.code, "previous_response_not_found");
	snprintf(want, sizeof(want), "Previous response with id '%s' not found.",
	    id);
	assert_string_equal(err.message, want);
}

static void
assert_accepted(struct fx *fx, const struct sg_req *req, const char *body)
{
	struct sg_error err;

	if (check(fx, req, body, &err) != 0)
		fail_msg("%s for %s: refused: %s", body, req->tenant, err.message);
}

static void
nothing_to_check(void **state)
{
	struct fx *fx = *state;

	assert_accepted(fx, &fx->alice, "{\"model\":\"m\",\"input\":\"hi\"}");
	assert_accepted(fx, &fx->alice, "{\"previous_response_id\":null}");
	/* Not a string: the upstream says what is wrong with it. */
	assert_accepted(fx, &fx->alice, "{\"previous_response_id\":42}");
	/* Deeper down it is not the request's. */
	assert_accepted(fx, &fx->alice, "{\"metadata\":{\"previous_response_id\":"
	    "\"resp_x\"},\"input\":[{\"previous_response_id\":\"resp_y\"}]}");
	assert_accepted(fx, &fx->alice, "");
	assert_accepted(fx, &fx->alice, "[\"previous_response_id\"]");
}

static void
bound_to_the_key(void **state)
{
	struct fx *fx = *state;
	static const char body[] = "{\"model\":\"m\",\"previous_response_id\":"
	    "\"resp_1\",\"input\":\"go on\"}";

	assert_not_found(fx, &fx->alice, body, "resp_1");
	sg_respids_note(fx->st, UP, &fx->alice, "{\"id\":\"resp_1\"}", 15);
	assert_accepted(fx, &fx->alice, body);
	assert_not_found(fx, &fx->bob, body, "resp_1");
	/* The same id from another upstream is another response. */
	{
		struct sg_error err;

		assert_int_equal(sg_respids_check(fx->st, "http://other/v1",
		    &fx->alice, body, strlen(body), &err), -1);
		assert_string_equal(err.code, "previous_response_not_found");
	}
}

/* However the member is written, every occurrence is checked. */
static void
every_spelling_checked(void **state)
{
	struct fx *fx = *state;

	sg_respids_note(fx->st, UP, &fx->alice, "{\"id\":\"resp_mine\"}", 18);
	assert_not_found(fx, &fx->alice, "{\"previous_response_id\":\"resp_mine\","
	    "\"previous_response_id\":\"resp_theirs\"}", "resp_theirs");
	assert_not_found(fx, &fx->alice, "{\"previous\\u005fresponse_id\":"
	    "\"resp_theirs\"}", "resp_theirs");
	assert_accepted(fx, &fx->alice, " { \"x\" : [1, {\"a\":\"}\"}] ,"
	    "\"previous_response_id\" : \"resp_\\u006dine\" } ");
	/* A NUL would cut the id short in a lookup. */
	assert_not_found(fx, &fx->alice, "{\"previous_response_id\":"
	    "\"resp_mine\\u0000x\"}", "resp_mine");
}

static void
no_store_refuses(void **state)
{
	struct fx *fx = *state;
	struct sg_error err;
	static const char body[] = "{\"previous_response_id\":\"resp_1\"}";

	assert_int_equal(sg_respids_check(NULL, UP, &fx->alice, body,
	    strlen(body), &err), -1);
	assert_int_equal(err.status, 500);
	assert_true(err.no_retry);
	assert_int_equal(sg_respids_check(NULL, UP, &fx->alice, "{}", 2, &err),
	    0);
}

/* Only the answer's own top-level id is noted. */
static void
note_top_level_id(void **state)
{
	struct fx *fx = *state;
	static const char answer[] = "{\"output\":[{\"id\":\"msg_1\",\"type\":"
	    "\"message\"}],\"object\":\"response\",\"id\":\"resp_\\u0041\"}";

	sg_respids_note(fx->st, UP, &fx->alice, answer, strlen(answer));
	assert_accepted(fx, &fx->alice, "{\"previous_response_id\":\"resp_A\"}");
	assert_not_found(fx, &fx->alice, "{\"previous_response_id\":\"msg_1\"}",
	    "msg_1");
	sg_respids_note(fx->st, UP, &fx->alice, "{\"id\":7}", 8);
	sg_respids_note(fx->st, UP, &fx->alice, "{\"id\":\"a\\u0000b\"}", 16);
	assert_not_found(fx, &fx->alice, "{\"previous_response_id\":\"a\"}", "a");
}

static void
note_events(void **state)
{
	struct fx *fx = *state;
	static const char created[] = "{\"type\":\"response.created\","
	    "\"sequence_number\":0,\"response\":{\"output\":[],\"id\":\"resp_s\"}}";
	static const char done[] = "{\"type\":\"response.completed\","
	    "\"response\":{\"id\":\"resp_c\"}}";
	struct sg_sse_event ev = { .name = "response.created", .data = created,
	    .datalen = sizeof(created) - 1, .has_data = 1 };

	sg_respids_note_event(fx->st, UP, &fx->alice, &ev);
	assert_accepted(fx, &fx->alice, "{\"previous_response_id\":\"resp_s\"}");
	/* No "event:" line: the data's type says it. */
	ev = (struct sg_sse_event){ .name = "", .data = done, .datalen =
	    sizeof(done) - 1, .has_data = 1 };
	sg_respids_note_event(fx->st, UP, &fx->alice, &ev);
	assert_not_found(fx, &fx->alice, "{\"previous_response_id\":\"resp_c\"}",
	    "resp_c");
	ev.name = "response.completed";
	sg_respids_note_event(fx->st, UP, &fx->alice, &ev);
	assert_not_found(fx, &fx->alice, "{\"previous_response_id\":\"resp_c\"}",
	    "resp_c");
	ev = (struct sg_sse_event){ .name = "", .data = created, .datalen =
	    sizeof(created) - 1, .has_data = 1 };
	sg_respids_note_event(fx->st, UP, &fx->bob, &ev);
	assert_accepted(fx, &fx->bob, "{\"previous_response_id\":\"resp_s\"}");
}

/* Text that is not what it should be is skipped, never read past. */
static void
broken_text(void **state)
{
	struct fx *fx = *state;
	static const char *const bodies[] = { "{", "{\"", "{\"previous_response_id",
	    "{\"previous_response_id\":", "{\"previous_response_id\":\"resp",
	    "{\"a\":[[[[", "{\"a\":\"\\", "{\"a\"}", "{,,}", "nul" };
	size_t i;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		struct sg_error err;

		/* Refused or accepted, it must not crash or read past. */
		(void)check(fx, &fx->alice, bodies[i], &err);
		sg_respids_note(fx->st, UP, &fx->alice, bodies[i],
		    strlen(bodies[i]));
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(nothing_to_check),
		T(bound_to_the_key),
		T(every_spelling_checked),
		T(no_store_refuses),
		T(note_top_level_id),
		T(note_events),
		T(broken_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
