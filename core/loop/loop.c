#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loop_int.h"
#include "../render/answer.h"
#include "../state/ledger.h"
#include "../state/metrics.h"
#include "../state/trace.h"
#include "../upstream/bridge.h"
#include "../../lib/util.h"
#include "../../lib/jscan.h"

/* The request's sandbox, made or found on its first need. */
static const char *
ensure_sandbox(void *arg, struct sg_error *err)
{
	struct run *r = arg;

	return sg_bind_sandbox(r->env->sbx, r->req, &r->bind, err);
}

/* What the client sees of a turn, in order: Responses items other than
 * calls of the code tool; Chat text. */
static void
keep_visible(struct run *r, struct sg_turn *t)
{
	const json_t *it;
	size_t i;

	if (r->s == SG_SURFACE_CHAT) {
		if (t->text.len > 0)
			json_array_append_new(r->texts, json_stringn(t->text.p,
			    t->text.len));
		return;
	}
	json_array_foreach(t->items, i, it) {
		const char *type = json_string_value(json_object_get(it, "type"));

		if (type != NULL && strcmp(type, "function_call") != 0) {
			json_array_append(r->output, (json_t *)it);
			sg_conv_output(&r->conv, json_pack("[O]", it));
		}
	}
}

/* Events for a streaming client: the turn learns from each, then the
 * renderer shows it; a NULL event is time passing. */
static int
stream_event(void *arg, const struct sg_sse_event *ev)
{
	struct run *r = arg;
	json_t *j;

	if (ev == NULL) {
		sg_stream_tick(r->stream);
		return 0;
	}
	sg_turn_event(&r->last, ev);
	if (!ev->has_data || strcmp(ev->data, "[DONE]") == 0 ||
	    (j = sg_jparse(ev->data, ev->datalen, 0)) == NULL)
		return 0;
	if (json_is_object(j) && (json_object_get(j, "error") == NULL ||
	    json_object_get(j, "type") != NULL))
		sg_stream_upstream(r->stream, j);
	json_decref(j);
	return 0;
}

/* While code runs: keepalives to the client, and stop if it left. */
static int
stream_stop(void *arg)
{
	struct run *r = arg;

	sg_stream_tick(r->stream);
	return r->stop != NULL ? r->stop(r->stop_arg) : 0;
}

static int
bridged(const struct run *r)
{
	return r->s == SG_SURFACE_RESPONSES && r->m->api == SG_API_CHAT;
}

/* One upstream call: its HTTP status in *status (0: none). 0; or -1 with
 * err filled (and the reply already sent when the upstream's error was
 * passed on as it came). */
static int
upstream_call(struct run *r, struct sg_turn *t, long *status,
    struct sg_error *err)
{
	int64_t deadline = r->req->start_ms +
	    (int64_t)r->env->cfg->server.request_timeout * 1000;
	sg_sse_fn fn = r->stream != NULL ? stream_event : sg_turn_event;
	void *arg = r->stream != NULL ? (void *)r : (void *)t;
	char *body = NULL, *errbody = NULL;
	size_t len;
	int rc;

	sg_turn_init(t, r->s);
	if (r->stream != NULL)
		sg_stream_next_turn(r->stream);
	/* A Chat-only upstream answers a Responses body through the
	 * bridge: the turn sees Responses events all the same. */
	if (bridged(r))
		rc = sg_bridge_events(r->env->up, r->m, r->work, deadline, r->req,
		    r->out, fn, arg, status, &errbody, err);
	else if ((body = sg_wdump_text(&r->wd, r->work, r->s ==
	    SG_SURFACE_CHAT ? "messages" : "input", &len)) == NULL)
		return sg_error_server(err, 500, "out of memory");
	else
		rc = sg_upstream_events(r->env->up, r->m, r->s, body,
		    len, deadline, r->req, r->out, fn, arg, status,
		    &errbody, err);
	free(body);
	if (rc == -1 && errbody != NULL) {
		json_t *e = json_loads(errbody, 0, NULL);
		const char *msg = json_string_value(json_object_get(
		    json_object_get(e, "error"), "message"));

		sg_error_set(err, (int)*status, "server_error", NULL, NULL,
		    "The upstream of model %s answered HTTP %ld: %s", r->m->name,
		    *status, msg != NULL ? msg : "no message");
		json_decref(e);
		/* The upstream's own error, with its own status; too late
		 * for a status, err is the stream's end. */
		if (!r->out->started && sg_http_begin(r->out, r->req,
		    (int)*status, "application/json", NULL) == 0)
			r->out->write(r->out, errbody, strlen(errbody));
		free(errbody);
		return -1;
	}
	if (rc == 0 && t->error != NULL) {
		const char *msg = json_string_value(json_object_get(t->error,
		    "message"));

		return sg_error_server(err, 502, "The upstream of model %s failed "
		    "mid-stream: %s", r->m->name, msg != NULL ? msg : "no message");
	}
	if (rc == 0 && t->usage != NULL) {
		sg_answer_add_usage(r->usage, t->usage);
		sg_use_tokens(t->usage);
	}
	return rc;
}

/* One upstream call (upstream_call), a round of the request's trace. */
static int
upstream_turn(struct run *r, struct sg_turn *t, struct sg_error *err)
{
	int64_t t0 = sg_now_ms();
	long status = 0;
	int rc = upstream_call(r, t, &status, err);

	sg_trace_turn(t0, sg_now_ms() - t0, status, rc == 0 ? NULL :
	    err->message, rc == 0 ? t->usage : NULL);
	return rc;
}

/* Calls of the client's own functions end the loop: Responses shows them
 * as output items (Chat as the message's tool_calls, in chat_answer). */
static void
client_calls_out(struct run *r)
{
	json_t *c;
	size_t i;

	if (r->s == SG_SURFACE_RESPONSES)
		json_array_foreach(r->client_calls, i, c) {
			json_array_append(r->output, c);
			sg_conv_output(&r->conv, json_pack("[O]", c));
		}
}

static int
loop(struct run *r, struct sg_error *err)
{
	int max = r->m->max_agentic_loops > 0 ? r->m->max_agentic_loops :
	    r->env->cfg->interception.max_agentic_loops;
	struct call calls[32];
	char *texts[32];
	json_t *item, *outs;
	int rounds = 0, n, k, final = 0, rc;

	for (;;) {
		sg_turn_free(&r->last);
		if (upstream_turn(r, &r->last, err) == -1)
			return -1;
		keep_visible(r, &r->last);
		n = sg_call_collect(r, &r->last, calls, 32);
		/* The loop ends with an answer, a call for the client, or the
		 * one call made with tool_choice none. */
		if (n == 0 || final) {
			client_calls_out(r);
			return 0;
		}
		for (k = 0; k < n; k++)
			texts[k] = NULL;
		for (rc = 0, k = 0; k < n && rc == 0; k++) {
			rc = sg_call_run(r, &calls[k], &texts[k], &item, err);
			if (rc == 0 && r->s == SG_SURFACE_RESPONSES)
				json_array_append_new(r->output, item);
			else
				json_decref(item);
		}
		if (rc == -1) {
			for (k = 0; k < n; k++)
				free(texts[k]);
			return -1;
		}
		sg_call_files(r, &texts[n - 1]);
		outs = sg_call_outputs(r, calls, n, texts);
		if (json_array_size(r->client_calls) == 0)
			sg_call_followup(r, &r->last, calls, n, texts, outs);
		for (k = 0; k < n; k++)
			free(texts[k]);
		/* A client function call: the client continues from here, and
		 * the upstream still waits for the code calls' outputs. */
		if (json_array_size(r->client_calls) > 0) {
			sg_conv_pending(&r->conv, outs);
			client_calls_out(r);
			return 0;
		}
		json_decref(outs);
		rounds++;
		sg_mx_round();
		final = rounds >= max || sg_call_repeated(r, calls, n);
		sg_rw_followup(r->work, r->s, r->tool, final);
	}
}

void
sg_loop_run(struct sg_loop_env *env, const struct sg_cfg_model *m,
    enum sg_surface s, const json_t *body, const struct sg_req *req,
    struct sg_out *out)
{
	struct run r = { .env = env, .m = m, .s = s, .req = req, .out = out,
	    .tool = sg_rw_wants_code(body) ? env->cfg->interception.tool_name :
	    "" };
	json_int_t created = (json_int_t)time(NULL);
	struct sg_error err;
	struct sg_buf text = { 0 };	/* the answer's, when stored */
	json_t *answer = NULL;
	int rc, new_conv;

	/* Every path that fails fills err; this is only a safe default. */
	sg_error_server(&err, 500, "The interception loop failed.");
	/* What a Chat upstream cannot do is refused before anything. */
	if (bridged(&r) && sg_bridge_check(body, &err) == -1) {
		sg_http_error(out, req, &err);
		return;
	}
	r.work = json_deep_copy(body);
	r.output = json_array();
	r.texts = json_array();
	r.client_calls = json_array();
	r.usage = json_object();
	r.prints = json_array();
	sg_turn_init(&r.last, s);
	r.cite = (struct sg_cite){ env->sbx->store, req->tenant,
	    r.bind.sandbox, r.peek };
	/* Before the rewrite: it reads the client's own tools. */
	rc = sg_bind_init(env->sbx, req, r.work, &r.bind, &err);
	/* A conversation's container is found again by what a Responses
	 * follow-up carries; no Chat request can name it. */
	if (rc == 0 && s == SG_SURFACE_CHAT &&
	    r.bind.kind == SG_SBX_CONVERSATION)
		r.bind.kind = SG_SBX_EPHEMERAL;
	new_conv = rc == 0 && r.bind.kind == SG_SBX_CONVERSATION &&
	    r.bind.sandbox[0] == '\0';
	if (rc == 0 && s == SG_SURFACE_RESPONSES)
		sg_bind_peek(env->sbx, req, &r.bind, r.peek);
	/* Before the rewrite too: it asks for reasoning's encrypted form
	 * when the upstream is to keep nothing. */
	if (rc == 0 && s == SG_SURFACE_RESPONSES)
		rc = sg_conv_begin(&r.conv, env->sbx->store, m, req, r.work,
		    env->cfg->interception.tool_name,
		    env->cfg->server.max_body_bytes, &err);
	sg_rw_first(r.work, s, r.tool, &r.info);
	if (m->model != NULL)
		json_object_set_new(r.work, "model", json_string(m->model));
	if (json_is_true(json_object_get(body, "stream"))) {
		/* Live: the renderer writes as the loop goes; provider calls
		 * keep the client alive while code runs. */
		r.stream = sg_stream_new(s, req, out, body, r.tool,
		    r.info.include_outputs, ensure_sandbox, &r);
		if (s == SG_SURFACE_RESPONSES && r.stream != NULL)
			sg_stream_cite(r.stream, &r.cite);
		r.stop = env->sbx->prov->stop;
		r.stop_arg = env->sbx->prov->stop_arg;
		env->sbx->prov->stop = stream_stop;
		env->sbx->prov->stop_arg = &r;
	}
	if (rc == 0)
		rc = loop(&r, &err);
	if (rc == 0)
		answer = s == SG_SURFACE_CHAT ? sg_answer_chat(r.last.head, body,
		    r.texts, r.client_calls, r.last.finish_reason, r.usage) :
		    sg_answer_responses(r.last.response, body, r.output, r.usage,
		    r.stream != NULL ? sg_stream_id(r.stream) :
		    req->resp_id[0] != '\0' ? req->resp_id : NULL);
	if (answer != NULL && s == SG_SURFACE_RESPONSES)
		sg_cite_output(&r.cite, json_object_get(answer, "output"));
	/* OpenAI's created_at is when the request came, not the last turn
	 * (a stream's answer carries its own, from the same moment). */
	if (answer != NULL && s == SG_SURFACE_RESPONSES && r.stream == NULL)
		json_object_set_new(answer, "created_at", json_integer(created));
	/* The request's own sandbox goes with the request, on every path;
	 * so does a conversation's new one when no answer leads to it. */
	if (answer == NULL && new_conv)
		r.bind.kind = SG_SBX_EPHEMERAL;
	sg_bind_end(env->sbx, req, &r.bind);
	if (answer != NULL && s == SG_SURFACE_RESPONSES)
		sg_conv_save(&r.conv, answer, json_string_value(json_object_get(
		    r.last.response, "id")), r.bind.sandbox[0] != '\0' ?
		    r.bind.sandbox : NULL, r.stream == NULL ? &text : NULL);
	if (r.stream != NULL) {
		env->sbx->prov->stop = r.stop;
		env->sbx->prov->stop_arg = r.stop_arg;
		if (answer != NULL)
			sg_stream_finish(r.stream, answer);
		else if (sg_stream_begun(r.stream))
			sg_stream_fail(r.stream, &err);
		else if (!out->started)
			sg_http_error(out, req, &err);
		sg_stream_free(r.stream);
	} else if (text.len > 0) {
		if (sg_http_begin(out, req, 200, "application/json", NULL) == 0)
			sg_http_write(out, text.p, text.len);
	} else if (answer != NULL)
		sg_http_json(out, req, 200, answer);
	else if (!out->started)
		sg_http_error(out, req, &err);
	free(text.p);
	json_decref(answer);
	sg_turn_free(&r.last);
	json_decref(r.work);
	sg_wdump_free(&r.wd);
	json_decref(r.output);
	json_decref(r.texts);
	json_decref(r.client_calls);
	json_decref(r.usage);
	json_decref(r.prints);
	sg_conv_free(&r.conv);
}
