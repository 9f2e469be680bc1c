/*
 * Background responses over HTTP (bg_api.h): queue, show, cancel. The
 * runner's side is bg_run.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bg_api.h"
#include "resp_stream.h"
#include "../state/convo.h"
#include "../upstream/bridge.h"
#include "../render/answer.h"
#include "../render/stream.h"
#include "../../lib/util.h"
#include "../../store/background.h"

#define CANCEL_WAIT_MS	3000	/* a running job's runner stops within */
#define CANCEL_POLL_MS	50

int
sg_bg_wanted(const json_t *body)
{
	return json_is_true(json_object_get(body, "background"));
}

/* What is refused before anything is kept: OpenAI's 400s. */
static int
refused(const struct sg_cfg *cfg, const json_t *body, struct sg_error *err)
{
	if (cfg->background.runners == 0)
		return sg_error_set(err, 400, "invalid_request_error",
		    "unsupported_parameter", "background", "Background "
		    "responses are not enabled on this gateway.");
	if (json_is_false(json_object_get(body, "store")))
		return sg_error_invalid(err, "background", "invalid_value",
		    "Background responses must be stored: 'store' cannot be "
		    "false when 'background' is true.");
	return 0;
}

/* The events a queued job's stream begins with, kept at once: a client
 * following it sees them before any runner takes it. */
static int
keep_queued_events(struct sg_store *st, const char *id, const char *tenant,
    const json_t *head)
{
	static const char *const types[SG_STREAM_QUEUED_EVENTS] = {
	    "response.created", "response.queued" };
	struct sg_store_ev evs[SG_STREAM_QUEUED_EVENTS];
	char *text[SG_STREAM_QUEUED_EVENTS] = { NULL };
	int i, rc = -1;

	for (i = 0; i < SG_STREAM_QUEUED_EVENTS; i++) {
		json_t *ev = json_pack("{s:s,s:i,s:O}", "type", types[i],
		    "sequence_number", i, "response", head);

		text[i] = ev != NULL ? json_dumps(ev, JSON_COMPACT) : NULL;
		json_decref(ev);
		if (text[i] == NULL)
			goto out;
		evs[i].seq = i;
		evs[i].event = text[i];
	}
	rc = sg_store_ev_append(st, id, tenant, evs, SG_STREAM_QUEUED_EVENTS,
	    NULL) == SG_STORE_OK ? 0 : -1;
out:
	for (i = 0; i < SG_STREAM_QUEUED_EVENTS; i++)
		free(text[i]);
	return rc;
}

/* What the request names of the key's state (its previous response, its
 * conversation, items by id) is there, and what it asks its upstream can
 * do: a job would fail on it later,
 * where the client's request is answered OpenAI's error now. The loop's
 * own first step, on a copy, the store only read. */
static int
names_found(const struct sg_cfg *cfg, struct sg_store *st,
    const struct sg_cfg_model *m, const json_t *body,
    const struct sg_req *req, struct sg_error *err)
{
	struct sg_conv c;
	json_t *work;
	int rc;

	/* What a Chat-only upstream cannot carry is refused as it would be
	 * at once. */
	if (m->api == SG_API_CHAT && sg_bridge_check(body, err) == -1)
		return -1;
	if ((work = json_deep_copy(body)) == NULL)
		return sg_error_server(err, 500, "out of memory");
	rc = sg_conv_begin(&c, st, m, req, work, cfg->interception.tool_name,
	    cfg->server.max_body_bytes, err);
	sg_conv_free(&c);
	json_decref(work);
	return rc;
}

int
sg_bg_queue(const struct sg_cfg *cfg, struct sg_store *st,
    const struct sg_cfg_model *m, const json_t *body, struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	char id[64];
	json_t *head;
	int rc;

	if (refused(cfg, body, err) == -1 ||
	    names_found(cfg, st, m, body, req, err) == -1)
		return -1;
	if (sg_time_id(id, sizeof(id), "resp_", 24) == -1)
		return sg_error_server(err, 500, "out of randomness");
	head = sg_answer_head(body, id, (json_int_t)(req->wall_ms / 1000),
	    "queued");
	if (head == NULL)
		return sg_error_server(err, 500, "out of memory");
	/* Its first events before the job: a runner may take it at once. */
	if (keep_queued_events(st, id, req->tenant, head) == -1 ||
	    (rc = sg_store_bg_add(st, id, req->tenant, req->key_name,
	    req->body, req->wall_ms)) != SG_STORE_OK) {
		sg_store_ev_delete(st, id, req->tenant, NULL);
		json_decref(head);
		return sg_error_store(err, sg_store_errmsg(st));
	}
	sg_copy(req->resp_id, sizeof(req->resp_id), id);
	/* Streamed: the job as its events go, from the first. */
	rc = 0;
	if (json_is_true(json_object_get(body, "stream")))
		rc = sg_rstream_follow(st, id, req, -1,
		    cfg->server.request_timeout, out, err);
	else
		sg_http_json(out, req, 200, head);
	json_decref(head);
	return rc;
}

/* events callback: each output item by its index, the last word kept
 * (an item added, then done). */
static int
collect_item(void *arg, const struct sg_store_ev *e)
{
	json_t *output = arg, *ev = json_loads(e->event, 0, NULL), *item;
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_int_t idx = json_integer_value(json_object_get(ev,
	    "output_index"));

	item = json_object_get(ev, "item");
	/* A call's code, whole once written (the item added had none). */
	if (type != NULL && strcmp(type,
	    "response.code_interpreter_call_code.done") == 0 && idx >= 0 &&
	    (size_t)idx < json_array_size(output) &&
	    json_is_string(json_object_get(ev, "code")))
		json_object_set(json_array_get(output, (size_t)idx), "code",
		    json_object_get(ev, "code"));
	if (type != NULL && json_is_object(item) && idx >= 0 && idx < 4096 &&
	    (strcmp(type, "response.output_item.added") == 0 ||
	    strcmp(type, "response.output_item.done") == 0)) {
		while (json_array_size(output) <= (size_t)idx)
			if (json_array_append_new(output, json_null()) == -1)
				break;
		json_array_set(output, (size_t)idx, item);
	}
	json_decref(ev);
	return 0;
}

/* The items the stream finished (or began) so far, for a snapshot taken
 * before its end: a response.* event carries none of them. */
static int
output_so_far(struct sg_store *st, const struct sg_store_bg *job, json_t *r)
{
	json_t *output = json_array();
	size_t i, j;

	if (output == NULL || sg_store_ev_list(st, job->id, job->tenant,
	    SG_STREAM_QUEUED_EVENTS - 1, 0, collect_item, output) !=
	    SG_STORE_OK) {
		json_decref(output);
		return -1;
	}
	/* Indexes with nothing seen (cannot happen in order) are dropped. */
	for (i = j = 0; i < json_array_size(output); i++)
		if (!json_is_null(json_array_get(output, i)))
			json_array_set(output, j++, json_array_get(output, i));
	while (json_array_size(output) > j)
		json_array_remove(output, j);
	json_object_set_new(r, "output", output);
	return 0;
}

json_t *
sg_bg_response(struct sg_store *st, const struct sg_store_bg *job)
{
	json_t *r = NULL, *body, *err;

	if (job->snapshot != NULL)
		r = json_loads(job->snapshot, 0, NULL);
	if (!json_is_object(r)) {
		json_decref(r);
		body = json_loads(job->body != NULL ? job->body : "{}", 0, NULL);
		r = sg_answer_head(body, job->id, (json_int_t)(job->created_ms /
		    1000), "queued");
		json_decref(body);
		if (r == NULL)
			return NULL;
	}
	json_object_set_new(r, "status", json_string(job->status));
	if (job->error != NULL && (err = json_loads(job->error, 0, NULL)) !=
	    NULL)
		json_object_set_new(r, "error", err);
	/* A cancel stops the stream, whose last snapshot may say why it
	 * stopped: only a failed response has an error. */
	else if (strcmp(job->status, "failed") != 0)
		json_object_set_new(r, "error", json_null());
	if (json_array_size(json_object_get(r, "output")) == 0 &&
	    strcmp(job->status, "queued") != 0 &&
	    output_so_far(st, job, r) == -1) {
		json_decref(r);
		return NULL;
	}
	return r;
}

/* The job, tenant's: 1 found (*job filled), 0 not, -1 with err. */
static int
find(struct sg_store *st, const char *id, const char *tenant,
    struct sg_store_bg *job, struct sg_error *err)
{
	int rc = sg_store_bg_get(st, id, tenant, job);

	if (rc == SG_STORE_NOTFOUND)
		return 0;
	if (rc != SG_STORE_OK)
		return sg_error_store(err, sg_store_errmsg(st));
	return 1;
}

static int
answer(struct sg_store *st, const struct sg_store_bg *job,
    const char *status, const struct sg_req *req, struct sg_out *out,
    struct sg_error *err)
{
	json_t *r = sg_bg_response(st, job);

	if (r == NULL)
		return sg_error_store(err, sg_store_errmsg(st));
	if (status != NULL)
		json_object_set_new(r, "status", json_string(status));
	sg_http_json(out, req, 200, r);
	json_decref(r);
	return 0;
}

int
sg_bg_get(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	struct sg_store_bg job;
	int rc;

	if ((rc = find(st, id, req->tenant, &job, err)) != 1)
		return rc;
	rc = answer(st, &job, NULL, req, out, err);
	sg_store_bg_clear(&job);
	return rc == 0 ? 1 : -1;
}

/* Not a job: OpenAI's 400 for a response made in the request, else 404. */
static int
not_a_job(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_error *err)
{
	struct sg_store_resp_row row;
	int rc = sg_store_resp_load(st, id, req->tenant, &row);

	if (rc == SG_STORE_ERROR)
		return sg_error_store(err, sg_store_errmsg(st));
	if (rc == SG_STORE_OK)
		sg_store_resp_clear(&row);
	if (rc != SG_STORE_OK)
		return sg_rstream_not_found(err, id);
	return sg_error_invalid(err, NULL, NULL, "Cannot cancel a synchronous "
	    "response.");
}

/* A running job's runner ends it within CANCEL_WAIT_MS: its last state
 * into *job (refreshed). */
static int
await_end(struct sg_store *st, struct sg_store_bg *job, struct sg_error *err)
{
	int64_t until = sg_now_ms() + CANCEL_WAIT_MS;
	char id[64], tenant[65];

	sg_copy(id, sizeof(id), job->id);
	sg_copy(tenant, sizeof(tenant), job->tenant);
	while (strcmp(job->status, "in_progress") == 0 && sg_now_ms() < until) {
		usleep(CANCEL_POLL_MS * 1000);
		sg_store_bg_clear(job);
		if (find(st, id, tenant, job, err) != 1)
			return -1;
	}
	return 0;
}

int
sg_bg_cancel(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	struct sg_store_bg job;
	char status[16];
	int rc;

	rc = sg_store_bg_cancel(st, id, req->tenant, status);
	if (rc == SG_STORE_NOTFOUND)
		return not_a_job(st, id, req, err);
	if (rc != SG_STORE_OK)
		return sg_error_store(err, sg_store_errmsg(st));
	if (strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
	    strcmp(status, "incomplete") == 0)
		return sg_error_invalid(err, NULL, NULL, "Cannot cancel a %s "
		    "response.", status);
	if ((rc = find(st, id, req->tenant, &job, err)) != 1)
		return rc == 0 ? sg_rstream_not_found(err, id) : -1;
	rc = await_end(st, &job, err);
	/* A runner slower than the wait ends it cancelled all the same: the
	 * cancel is asked, and its loop stops at its next check. */
	if (rc == 0)
		rc = answer(st, &job, strcmp(job.status, "in_progress") == 0 ?
		    "cancelled" : NULL, req, out, err);
	sg_store_bg_clear(&job);
	return rc;
}

int
sg_bg_end_stream(struct sg_store *st, const char *id)
{
	struct sg_store_bg job;
	struct sg_store_ev ev = { 0, NULL };
	json_t *r = NULL, *e;
	int64_t last = -1;
	int ended = 0, rc = -1;

	if (sg_store_bg_get(st, id, NULL, &job) != SG_STORE_OK)
		return -1;
	if (strcmp(job.status, "failed") != 0) {
		rc = 0;
		goto out;
	}
	if (sg_rstream_last(st, id, NULL, &last, &ended) != SG_STORE_OK ||
	    (!ended && (r = sg_bg_response(st, &job)) == NULL))
		goto out;
	rc = 0;
	if (ended)
		goto out;
	e = json_pack("{s:s,s:I,s:o}", "type", "response.failed",
	    "sequence_number", (json_int_t)(last + 1), "response", r);
	ev.seq = last + 1;
	ev.event = e != NULL ? json_dumps(e, JSON_COMPACT) : NULL;
	json_decref(e);
	if (ev.event == NULL || sg_store_ev_append(st, id, job.tenant, &ev, 1,
	    NULL) != SG_STORE_OK)
		rc = -1;
	free((char *)ev.event);
out:
	sg_store_bg_clear(&job);
	return rc;
}
