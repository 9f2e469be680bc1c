/*
 * core/api/bg_run: a runner's job, end to end through the gateway on
 * SQLite (the model's upstream a closed port: a run that gets that far
 * fails at once). No job waiting: nothing run. A job ends, always, with
 * a status and an error that says why: its body unreadable, its key gone,
 * its upstream unreachable, or the gateway stopping (once told to hurry,
 * its grace spent). A job queued through the HTTP route is the one run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/api/auth.h"
#include "../../core/api/bg_api.h"
#include "../../core/api/bg_run.h"
#include "../../core/api/gateway.h"
#include "../../lib/util.h"
#include "../../store/store.h"
#include "../../store/background.h"
#include "testutil.h"

#define CONFIG \
	"server: { workers = [1, 4]; grace = 1; };\n" \
	"store: { path = \"%s/sg.db\"; };\n" \
	"auth: { keys = ( { name = \"erin\"; key = \"sk-erin\"; } ); };\n" \
	"models = ( { name = \"m\"; api_base = \"http://127.0.0.1:1/v1\"; " \
	    "api_key = \"x\"; } );\n"

struct fx {
	char		 dir[64];
	struct sg_cfg	*cfg;
	struct sg_gw	*gw;
	struct sg_store	*st;	/* the test's own connection */
	char		 tenant[65];
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char path[128], text[1024], err[512];
	struct sg_auth who;
	struct sg_error e;

	if (fx == NULL || tu_mkdtemp(fx->dir, sizeof(fx->dir)) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/sandgate.conf", fx->dir);
	snprintf(text, sizeof(text), CONFIG, fx->dir);
	if (tu_write_file(path, text, -1) == -1 ||
	    sg_cfg_load(path, &fx->cfg, err, sizeof(err)) == -1)
		fail_msg("config: %s", err);
	snprintf(path, sizeof(path), "%s/sg.db", fx->dir);
	if (sg_store_open(path, &fx->st, err, sizeof(err)) != 0 ||
	    sg_store_migrate(fx->st) != SG_STORE_OK)
		fail_msg("store: %s", err);
	if (sg_gw_new(fx->cfg, &fx->gw, err, sizeof(err)) == -1)
		fail_msg("gateway: %s", err);
	if (sg_auth_check(fx->cfg, fx->st, "Bearer sk-erin", &who, &e) == -1)
		fail_msg("auth: %s", e.message);
	memcpy(fx->tenant, who.tenant, sizeof(fx->tenant));
	sg_auth_clear(&who);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	sg_gw_free(fx->gw);
	sg_store_close(fx->st);
	sg_cfg_free(fx->cfg);
	tu_rmrf(fx->dir);
	free(fx);
	return 0;
}

/* Run the one job waiting; its ending into *job. */
static void
run_one(struct fx *fx, const char *id, const volatile sig_atomic_t *hurry,
    struct sg_store_bg *job)
{
	assert_int_equal(sg_bg_run(fx->gw, getpid(), sg_self_start(), hurry),
	    1);
	assert_int_equal(sg_store_bg_get(fx->st, id, NULL, job), SG_STORE_OK);
}

/* The message of a job's error. */
static void
error_says(const struct sg_store_bg *job, const char *text)
{
	json_t *e;

	assert_non_null(job->error);
	e = tu_json(job->error);
	assert_string_equal(json_string_value(json_object_get(e, "code")),
	    "server_error");
	assert_non_null(strstr(json_string_value(json_object_get(e,
	    "message")), text));
	json_decref(e);
}

/* sg_store_ev_list's fn: the event, parsed, into *arg. */
static int
keep_event(void *arg, const struct sg_store_ev *e)
{
	json_t **into = arg;

	json_decref(*into);
	*into = tu_json(e->event);
	return 0;
}

static void
nothing_waiting(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(sg_bg_run(fx->gw, getpid(), sg_self_start(), NULL), 0);
}

static void
unreadable_body_and_gone_key(void **state)
{
	struct fx *fx = *state;
	struct sg_store_bg job;

	assert_int_equal(sg_store_bg_add(fx->st, "resp_a", fx->tenant, "erin",
	    "not json", sg_wall_ms()), SG_STORE_OK);
	run_one(fx, "resp_a", NULL, &job);
	assert_string_equal(job.status, "failed");
	error_says(&job, "could not be read");
	sg_store_bg_clear(&job);
	assert_int_equal(sg_store_bg_add(fx->st, "resp_b", "0123abcd", "gone",
	    "{\"model\":\"m\",\"input\":\"x\"}", sg_wall_ms()), SG_STORE_OK);
	run_one(fx, "resp_b", NULL, &job);
	assert_string_equal(job.status, "failed");
	error_says(&job, "no longer valid");
	assert_int_equal(job.ended_ms > 0, 1);
	sg_store_bg_clear(&job);
}

/* Queued through POST /v1/responses, run by the runner: the upstream
 * that cannot be reached ends it failed before its stream began, and its
 * kept stream (the two events kept when it was queued) ends as a live
 * one would: response.failed, the reason in it. */
static void
queued_then_run(void **state)
{
	struct fx *fx = *state;
	static const char body[] = "{\"model\":\"m\",\"input\":\"hi\","
	    "\"background\":true}";
	struct sg_store_bg job;
	struct tu_capture c;
	struct sg_req req;
	json_t *r, *snap, *ev = NULL;
	int64_t last = -1;

	memset(&req, 0, sizeof(req));
	req.method = "POST";
	req.uri = "/v1/responses";
	req.authorization = "Bearer sk-erin";
	req.body = strdup(body);
	req.body_len = strlen(body);
	sg_gw_req_init(fx->cfg, &req);
	tu_capture_init(&c);
	sg_gw_handle(fx->gw, &req, &c.out);
	free(req.body);
	assert_non_null(c.b.p);
	assert_int_equal(sg_buf_add(&c.b, "", 1), 0);
	r = tu_json(strstr(c.b.p, "\r\n\r\n") + 4);
	free(c.b.p);
	assert_string_equal(json_string_value(json_object_get(r, "status")),
	    "queued");
	run_one(fx, json_string_value(json_object_get(r, "id")), NULL, &job);
	assert_string_equal(job.status, "failed");
	error_says(&job, "");
	assert_int_equal(sg_store_ev_last(fx->st, job.id, fx->tenant, &last),
	    SG_STORE_OK);
	assert_int_equal(last, 2);
	assert_int_equal(sg_store_ev_list(fx->st, job.id, fx->tenant, 1, 0,
	    keep_event, &ev), SG_STORE_OK);
	assert_string_equal(json_string_value(json_object_get(ev, "type")),
	    "response.failed");
	snap = json_object_get(ev, "response");
	assert_string_equal(json_string_value(json_object_get(snap, "id")),
	    job.id);
	assert_string_equal(json_string_value(json_object_get(snap, "status")),
	    "failed");
	assert_true(json_is_true(json_object_get(snap, "background")));
	assert_true(json_is_object(json_object_get(snap, "error")));
	json_decref(ev);
	/* Once: a second end adds nothing. */
	assert_int_equal(sg_bg_end_stream(fx->st, job.id), 0);
	assert_int_equal(sg_store_ev_last(fx->st, job.id, fx->tenant, &last),
	    SG_STORE_OK);
	assert_int_equal(last, 2);
	sg_store_bg_clear(&job);
	json_decref(r);
}

/* The gateway stops: with grace 1 s less the wrap-up, the job is stopped
 * at its first check and ends failed, saying so. */
static void
hurried_job_ends_failed(void **state)
{
	struct fx *fx = *state;
	static volatile sig_atomic_t hurry = 1;
	struct sg_store_bg job;

	assert_int_equal(sg_store_bg_add(fx->st, "resp_h", fx->tenant, "erin",
	    "{\"model\":\"m\",\"input\":\"x\",\"background\":true}",
	    sg_wall_ms()), SG_STORE_OK);
	run_one(fx, "resp_h", &hurry, &job);
	assert_string_equal(job.status, "failed");
	error_says(&job, SG_BG_STOPPED);
	sg_store_bg_clear(&job);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(nothing_waiting),
		T(unreadable_body_and_gone_key),
		T(queued_then_run),
		T(hurried_job_ends_failed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
