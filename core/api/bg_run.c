/*
 * A runner's work (bg_run.h): take a queued job, run it through the
 * gateway as its key's request, and end it with what came of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "bg_api.h"
#include "bg_out.h"
#include "bg_run.h"
#include "gw_int.h"
#include "../http/after.h"
#include "../../lib/util.h"
#include "../../store/background.h"

#define FLUSH_TRIES	20	/* the last events, a store that hiccups */
#define FLUSH_PAUSE_US	250000

/* The capture's output, with the gateway's stop as one more reason for
 * "the client is gone". */
struct hurried {
	struct sg_out			 out;	/* first: the gateway's handle */
	struct sg_out			*inner;	/* the capture's */
	const volatile sig_atomic_t	*hurry;
	int64_t				 grace_ms, until;	/* 0: not yet */
	int				 expired;
};

static int
h_write(struct sg_out *o, const void *p, size_t n)
{
	struct sg_out *in = ((struct hurried *)o)->inner;

	return in->write(in, p, n);
}

static int
h_flush(struct sg_out *o)
{
	struct sg_out *in = ((struct hurried *)o)->inner;

	return in->flush(in);
}

static int
h_alive(struct sg_out *o)
{
	struct hurried *h = (struct hurried *)o;

	if (h->hurry != NULL && *h->hurry && h->until == 0)
		h->until = sg_now_ms() + (h->grace_ms > SG_BG_WRAP_UP_MS ?
		    h->grace_ms - SG_BG_WRAP_UP_MS : 0);
	if (h->until != 0 && sg_now_ms() >= h->until)
		h->expired = 1;
	return !h->expired && h->inner->alive(h->inner);
}

/* New: the job's error as OpenAI's response.error ({code, message}). */
static char *
error_text(const char *code, const char *message)
{
	json_t *e = json_pack("{s:s,s:s}", "code", code, "message", message);
	char *text = e != NULL ? json_dumps(e, JSON_COMPACT) : NULL;

	json_decref(e);
	return text;
}

/* An answer that was not a stream (an error before it began): its
 * message, in the response's error. */
static char *
answer_error(const char *body)
{
	json_t *b = json_loads(body != NULL ? body : "", 0, NULL);
	const char *msg = json_string_value(json_object_get(json_object_get(b,
	    "error"), "message"));
	char *text = error_text("server_error", msg != NULL ? msg :
	    "The response could not be made.");

	json_decref(b);
	return text;
}

/* The request a job is, as its runner hands it to the gateway: the body
 * the client sent, streamed (the capture reads events). */
static int
job_request(const struct sg_cfg *cfg, const struct sg_store_bg *job,
    struct sg_req *req, char *uri, size_t urisz)
{
	json_t *body = json_loads(job->body != NULL ? job->body : "", 0, NULL);

	memset(req, 0, sizeof(*req));	/* req->body freed on every path */
	if (!json_is_object(body)) {
		json_decref(body);
		return -1;
	}
	json_object_set_new(body, "stream", json_true());
	snprintf(uri, urisz, "%s/v1/responses", cfg->server.mount_prefix);
	req->method = "POST";
	req->uri = uri;
	req->content_type = "application/json";
	req->content_length = -1;
	sg_gw_req_init(cfg, req);
	req->wall_ms = job->created_ms;
	sg_copy(req->resp_id, sizeof(req->resp_id), job->id);
	req->body = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (req->body == NULL)
		return -1;
	req->body_len = strlen(req->body);
	return 0;
}

/* What the job ends as, from what the capture saw. */
static const char *
ending(const struct sg_bgo *b, const struct hurried *h, char **error)
{
	const char *st = sg_bgo_status(b);

	*error = NULL;
	if (sg_bgo_stopped(b) == 1)
		return "cancelled";
	/* The loop may have said "failed" as it stopped: the reason is ours. */
	if (h->expired && strcmp(st, "completed") != 0) {
		*error = error_text("server_error", SG_BG_STOPPED);
		return "failed";
	}
	if (st[0] != '\0')
		return st;
	if (sg_bgo_body(b) != NULL)
		*error = answer_error(sg_bgo_body(b));
	else
		*error = error_text("server_error", "The response ended before "
		    "it was finished.");
	return "failed";
}

static void
finish(struct sg_store *st, const struct sg_store_bg *job, struct sg_bgo *b,
    const struct hurried *h)
{
	const char *status;
	char *error;
	int i;

	for (i = 0; i < FLUSH_TRIES && sg_bgo_flush(b) == -1; i++)
		usleep(FLUSH_PAUSE_US);
	if (sg_bgo_stopped(b) == 2)
		return;		/* no longer ours: reaped or deleted */
	status = ending(b, h, &error);
	for (i = 0; i < FLUSH_TRIES && sg_store_bg_finish(st, job->id,
	    job->runner, status, sg_bgo_snapshot(b), error) == SG_STORE_ERROR;
	    i++)
		usleep(FLUSH_PAUSE_US);
	if (strcmp(status, "failed") == 0)
		sg_bg_end_stream(st, job->id);
	fprintf(stderr, "event=background id=%s status=%s\n", job->id, status);
	free(error);
}

/* A job that cannot run at all (its key gone, its body unreadable). */
static void
fail(struct sg_store *st, const struct sg_store_bg *job, const char *message)
{
	char *error = error_text("server_error", message);

	if (sg_store_bg_finish(st, job->id, job->runner, "failed", NULL,
	    error) == SG_STORE_OK)
		sg_bg_end_stream(st, job->id);
	fprintf(stderr, "event=background id=%s status=failed\n", job->id);
	free(error);
}

static void
run_job(struct sg_gw *gw, const struct sg_store_bg *job,
    const volatile sig_atomic_t *hurry)
{
	struct hurried h = { { h_write, h_flush, h_alive, 0, 0 }, NULL, hurry,
	    (int64_t)gw->cfg->server.grace * 1000, 0, 0 };
	char uri[1200];
	struct sg_after after = SG_AFTER_INIT;
	struct sg_req req;
	struct sg_auth who;
	struct sg_error err;
	struct sg_bgo *b;

	if (job_request(gw->cfg, job, &req, uri, sizeof(uri)) == -1) {
		free(req.body);
		fail(gw->store, job, "The request could not be read again.");
		return;
	}
	if (sg_auth_tenant(gw->cfg, gw->store, job->tenant, &who, &err) == -1) {
		free(req.body);
		fail(gw->store, job, err.status == 401 ? "The API key that "
		    "made this response is no longer valid." : "The store "
		    "failed; the response was not run.");
		return;
	}
	sg_copy(req.key_name, sizeof(req.key_name), who.name);
	memcpy(req.tenant, who.tenant, sizeof(req.tenant));
	req.key = who.key;
	req.after = &after;
	if ((b = sg_bgo_new(gw->store, job->id, job->tenant, job->runner)) ==
	    NULL)
		fail(gw->store, job, "The gateway ran out of memory.");
	else {
		h.inner = sg_bgo_out(b);
		sg_gw_job(gw, &req, &h.out);
		finish(gw->store, job, b, &h);
		sg_bgo_free(b);
		/* Its sandbox goes once its end is stored, as a responder's
		 * goes once its answer is sent. */
		sg_after_run(&after);
	}
	req.key = NULL;
	sg_auth_clear(&who);
	free(req.body);
}

int
sg_bg_run(struct sg_gw *gw, int64_t pid, int64_t start,
    const volatile sig_atomic_t *hurry)
{
	struct sg_store_bg job;
	int rc;

	rc = sg_store_bg_claim(gw->store, pid, start,
	    gw->cfg->background.max_per_key, &job);
	if (rc == SG_STORE_NOTFOUND)
		return 0;
	if (rc != SG_STORE_OK)
		return -1;
	run_job(gw, &job, hurry);
	sg_store_bg_clear(&job);
	return 1;
}
