/*
 * core/api/bg_api: background responses over HTTP. A job queued answers
 * the response, queued, and keeps the request as sent with the stream's
 * first events; what cannot be a background response is refused with
 * nothing kept; GET shows a job as it stands (the output its stream has
 * finished so far), only to its key; cancel ends a queued job at once,
 * answers the same again, and refuses a finished one; a job running past
 * any request's time is failed by the reaper's rule. On SQLite, then on
 * PostgreSQL when SG_TEST_PG is set.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "../../core/api/bg_api.h"
#include "../../core/http/http.h"
#include "../../lib/util.h"
#include "../../store/store.h"
#include "../../store/background.h"
#include "testutil.h"

#define BODY	"{\"model\":\"m\",\"input\":\"hi\",\"background\":true," \
		"\"metadata\":{\"k\":\"v\"}}"

static struct sg_cfg cfg;
static struct sg_cfg_model model;

static void
request(struct sg_req *req, const char *tenant, char *body)
{
	memset(req, 0, sizeof(*req));
	snprintf(req->id, sizeof(req->id), "req_1");
	snprintf(req->tenant, sizeof(req->tenant), "%s", tenant);
	snprintf(req->key_name, sizeof(req->key_name), "alice");
	req->uri = "/v1/responses";
	req->wall_ms = 1700000000500;
	req->body = body;
	req->body_len = body != NULL ? strlen(body) : 0;
}

/* The JSON body of what c captured (after the CGI head), new. */
static json_t *
answered(struct tu_capture *c, int status)
{
	char want[32];
	const char *body;
	json_t *j;

	assert_non_null(c->b.p);
	assert_int_equal(sg_buf_add(&c->b, "", 1), 0);
	snprintf(want, sizeof(want), "Status: %d", status);
	assert_true(strncmp(c->b.p, want, strlen(want)) == 0);
	body = strstr(c->b.p, "\r\n\r\n");
	assert_non_null(body);
	j = tu_json(body + 4);
	free(c->b.p);
	tu_capture_init(c);
	return j;
}

/* A job queued for tenant t: its id into id. */
static void
queue(struct sg_store *st, const char *t, char *id, size_t idsz)
{
	struct tu_capture c;
	struct sg_error err;
	struct sg_req req;
	char body[] = BODY;
	json_t *b = tu_json(body), *r;

	tu_capture_init(&c);
	request(&req, t, body);
	assert_int_equal(sg_bg_queue(&cfg, st, &model, b, &req, &c.out, &err), 0);
	r = answered(&c, 200);
	snprintf(id, idsz, "%s", json_string_value(json_object_get(r, "id")));
	assert_string_equal(req.resp_id, id);
	json_decref(r);
	json_decref(b);
}

static int
first_events(void *arg, const struct sg_store_ev *e)
{
	json_t *evs = arg;

	json_array_append_new(evs, tu_json(e->event));
	return 0;
}

static void
queued_is_answered_and_kept(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_bg job;
	struct tu_capture c;
	struct sg_error err;
	struct sg_req req;
	char body[] = BODY;
	json_t *b = tu_json(body), *r, *evs = json_array();

	tu_capture_init(&c);
	request(&req, "t", body);
	assert_int_equal(sg_bg_queue(&cfg, fx->st, &model, b, &req, &c.out, &err), 0);
	r = answered(&c, 200);
	assert_string_equal(json_string_value(json_object_get(r, "status")),
	    "queued");
	assert_true(json_is_true(json_object_get(r, "background")));
	assert_int_equal(json_integer_value(json_object_get(r, "created_at")),
	    1700000000);
	assert_int_equal(json_array_size(json_object_get(r, "output")), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    r, "metadata"), "k")), "v");
	assert_int_equal(strncmp(json_string_value(json_object_get(r, "id")),
	    "resp_", 5), 0);
	/* The request as sent, for its runner; the stream's first events. */
	assert_int_equal(sg_store_bg_get(fx->st, req.resp_id, "t", &job),
	    SG_STORE_OK);
	assert_string_equal(job.status, "queued");
	assert_string_equal(job.body, BODY);
	assert_string_equal(job.key_name, "alice");
	sg_store_bg_clear(&job);
	assert_int_equal(sg_store_ev_list(fx->st, req.resp_id, "t", -1, 0,
	    first_events, evs), SG_STORE_OK);
	assert_int_equal(json_array_size(evs), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    evs, 0), "type")), "response.created");
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    evs, 1), "type")), "response.queued");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(evs,
	    1), "sequence_number")), 1);
	assert_true(json_equal(json_object_get(json_array_get(evs, 1),
	    "response"), r));
	json_decref(evs);
	json_decref(r);
	json_decref(b);
}

static void
refused_keeps_nothing(void **state)
{
	struct tu_store_fx *fx = *state;
	struct tu_capture c;
	struct sg_error err;
	struct sg_req req;
	char body[] = "{\"model\":\"m\",\"background\":true,\"store\":false}";
	json_t *b = tu_json(body);
	int64_t queued, running;

	tu_capture_init(&c);
	request(&req, "t", body);
	assert_int_equal(sg_bg_queue(&cfg, fx->st, &model, b, &req, &c.out, &err), -1);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.param, "background");
	cfg.background.runners = 0;
	json_object_del(b, "store");
	assert_int_equal(sg_bg_queue(&cfg, fx->st, &model, b, &req, &c.out, &err), -1);
	cfg.background.runners = 2;
	assert_int_equal(err.status, 400);
	assert_null(c.b.p);
	assert_int_equal(sg_store_bg_counts(fx->st, NULL, &queued, &running),
	    SG_STORE_OK);
	assert_int_equal(queued + running, 0);
	json_decref(b);
}

/* GET: 0 for another key's (as for none), the job as it stands. */
static void
get_shows_it_as_it_stands(void **state)
{
	struct tu_store_fx *fx = *state;
	static const char done[] = "{\"type\":\"response.output_item.done\","
	    "\"sequence_number\":3,\"output_index\":0,\"item\":{\"id\":"
	    "\"ci_1\",\"type\":\"code_interpreter_call\",\"status\":"
	    "\"completed\",\"code\":\"print(1)\"}}";
	struct sg_store_ev ev = { 3, done };
	struct sg_store_bg job;
	struct tu_capture c;
	struct sg_error err;
	struct sg_req req;
	char id[64];
	json_t *r;

	queue(fx->st, "t", id, sizeof(id));
	tu_capture_init(&c);
	request(&req, "other", NULL);
	assert_int_equal(sg_bg_get(fx->st, id, &req, &c.out, &err), 0);
	assert_int_equal(sg_bg_get(fx->st, "resp_nope", &req, &c.out, &err), 0);
	assert_null(c.b.p);
	assert_int_equal(sg_store_bg_claim(fx->st, getpid(), sg_self_start(), 0,
	    &job), SG_STORE_OK);
	assert_int_equal(sg_store_ev_append(fx->st, id, "t", &ev, 1, NULL),
	    SG_STORE_OK);
	request(&req, "t", NULL);
	assert_int_equal(sg_bg_get(fx->st, id, &req, &c.out, &err), 1);
	r = answered(&c, 200);
	assert_string_equal(json_string_value(json_object_get(r, "status")),
	    "in_progress");
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(r, "output"), 0), "code")), "print(1)");
	json_decref(r);
	assert_int_equal(sg_store_bg_finish(fx->st, id, job.runner, "failed",
	    NULL, "{\"code\":\"server_error\",\"message\":\"gone\"}"),
	    SG_STORE_OK);
	assert_int_equal(sg_bg_get(fx->st, id, &req, &c.out, &err), 1);
	r = answered(&c, 200);
	assert_string_equal(json_string_value(json_object_get(r, "status")),
	    "failed");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    r, "error"), "message")), "gone");
	json_decref(r);
	sg_store_bg_clear(&job);
}

static void
cancel_queued_again_and_finished(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_bg job;
	struct tu_capture c;
	struct sg_error err;
	struct sg_req req;
	char id[64], id2[64];
	json_t *r;
	int i;

	queue(fx->st, "t", id, sizeof(id));
	tu_capture_init(&c);
	request(&req, "other", NULL);
	assert_int_equal(sg_bg_cancel(fx->st, id, &req, &c.out, &err), -1);
	assert_int_equal(err.status, 404);
	request(&req, "t", NULL);
	for (i = 0; i < 2; i++) {
		assert_int_equal(sg_bg_cancel(fx->st, id, &req, &c.out, &err),
		    0);
		r = answered(&c, 200);
		assert_string_equal(json_string_value(json_object_get(r,
		    "status")), "cancelled");
		assert_string_equal(json_string_value(json_object_get(r, "id")),
		    id);
		json_decref(r);
	}
	/* Never taken by a runner once cancelled. */
	assert_int_equal(sg_store_bg_claim(fx->st, getpid(), sg_self_start(), 0,
	    &job), SG_STORE_NOTFOUND);
	queue(fx->st, "t", id2, sizeof(id2));
	assert_int_equal(sg_store_bg_claim(fx->st, getpid(), sg_self_start(), 0,
	    &job), SG_STORE_OK);
	assert_int_equal(sg_store_bg_finish(fx->st, id2, job.runner,
	    "completed", NULL, NULL), SG_STORE_OK);
	sg_store_bg_clear(&job);
	assert_int_equal(sg_bg_cancel(fx->st, id2, &req, &c.out, &err), -1);
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.message, "completed"));
	assert_null(c.b.p);
}

/* A running job whose runner does not answer in time: cancelled all the
 * same (the cancel is asked; the runner ends it at its next check). */
static void
cancel_running(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_bg job;
	struct tu_capture c;
	struct sg_error err;
	struct sg_req req;
	char id[64];
	json_t *r;
	int cancel = 0;

	queue(fx->st, "t", id, sizeof(id));
	assert_int_equal(sg_store_bg_claim(fx->st, getpid(), sg_self_start(), 0,
	    &job), SG_STORE_OK);
	tu_capture_init(&c);
	request(&req, "t", NULL);
	assert_int_equal(sg_bg_cancel(fx->st, id, &req, &c.out, &err), 0);
	r = answered(&c, 200);
	assert_string_equal(json_string_value(json_object_get(r, "status")),
	    "cancelled");
	json_decref(r);
	assert_int_equal(sg_store_bg_cancelled(fx->st, id, job.runner, &cancel),
	    SG_STORE_OK);
	assert_int_equal(cancel, 1);
	/* Its runner ends it with the stream's last snapshot, which says
	 * why the stream stopped: a cancelled response has no error. */
	assert_int_equal(sg_store_bg_finish(fx->st, id, job.runner, "cancelled",
	    "{\"id\":\"x\",\"status\":\"failed\",\"output\":[],\"error\":"
	    "{\"code\":\"server_error\",\"message\":\"gone\"}}", NULL),
	    SG_STORE_OK);
	assert_int_equal(sg_bg_get(fx->st, id, &req, &c.out, &err), 1);
	r = answered(&c, 200);
	assert_string_equal(json_string_value(json_object_get(r, "status")),
	    "cancelled");
	assert_true(json_is_null(json_object_get(r, "error")));
	json_decref(r);
	sg_store_bg_clear(&job);
}

/* The reaper's last resort (store/background.h): a job in_progress past
 * any request's time fails, whoever holds it; a younger one is left, and
 * its runner learns it lost an overdue one at its next call. */
static void
overdue_fails_whoever_holds_it(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_bg job;
	char id[64], id2[64];
	int n = -1, cancel;

	queue(fx->st, "t", id, sizeof(id));
	assert_int_equal(sg_store_bg_claim(fx->st, 999999, 1, 0, &job),
	    SG_STORE_OK);
	queue(fx->st, "t", id2, sizeof(id2));
	assert_int_equal(sg_store_bg_fail_overdue(fx->st, sg_wall_ms() - 60000,
	    "{}", &n), SG_STORE_OK);
	assert_int_equal(n, 0);
	assert_int_equal(sg_store_bg_fail_overdue(fx->st, sg_wall_ms() + 1000,
	    "{\"code\":\"server_error\"}", &n), SG_STORE_OK);
	assert_int_equal(n, 1);
	assert_int_equal(sg_store_bg_cancelled(fx->st, id, job.runner, &cancel),
	    SG_STORE_NOTFOUND);
	sg_store_bg_clear(&job);
	assert_int_equal(sg_store_bg_get(fx->st, id, "t", &job), SG_STORE_OK);
	assert_string_equal(job.status, "failed");
	assert_string_equal(job.error, "{\"code\":\"server_error\"}");
	sg_store_bg_clear(&job);
	assert_int_equal(sg_store_bg_get(fx->st, id2, "t", &job), SG_STORE_OK);
	assert_string_equal(job.status, "queued");
	sg_store_bg_clear(&job);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(queued_is_answered_and_kept),
		T(refused_keeps_nothing),
		T(get_shows_it_as_it_stands),
		T(cancel_queued_again_and_finished),
		T(cancel_running),
		T(overdue_fails_whoever_holds_it),
	};

	cfg.background.runners = 2;
	TU_STORE_MAIN(tests);
}
