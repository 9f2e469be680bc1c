#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "answer.h"
#include "cite.h"
#include "codedec.h"
#include "stream.h"
#include "stream_int.h"
#include "../../lib/util.h"
#include "../../lib/jdump.h"

struct sg_stream *
sg_stream_new(enum sg_surface surface, const struct sg_req *req,
    struct sg_out *out, const json_t *body, const char *tool,
    int include_outputs, sg_stream_sandbox_fn sandbox, void *arg)
{
	struct sg_stream *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->surface = surface;
	s->req = req;
	s->out = out;
	s->body = body;
	s->tool = tool;
	s->include_outputs = include_outputs;
	s->sandbox = sandbox;
	s->arg = arg;
	/* A background job's response was created when it was queued. */
	s->created = req->resp_id[0] != '\0' && req->wall_ms > 0 ?
	    req->wall_ms / 1000 : (int64_t)time(NULL);
	s->started = sg_now_ms();
	if (surface == SG_SURFACE_CHAT)
		sg_rand_id(s->id, sizeof(s->id), "chatcmpl-sg", 12);
	else
		sg_time_id(s->id, sizeof(s->id), "resp_", 24);
	if (surface == SG_SURFACE_RESPONSES && req->resp_id[0] != '\0')
		sg_copy(s->id, sizeof(s->id), req->resp_id);
	if ((s->done = json_array()) == NULL) {
		free(s);
		return NULL;
	}
	sg_stream_next_turn(s);
	s->any_text = 0;
	return s;
}

void
sg_stream_free(struct sg_stream *s)
{
	int i;

	if (s == NULL)
		return;
	for (i = 0; i < s->ncalls; i++)
		free(s->calls[i].shown.p);
	json_decref(s->done);
	free(s);
}

int
sg_stream_send(struct sg_stream *s, const char *event, json_t *data)
{
	char *text = sg_jdump_text(data, NULL);
	int rc = 0;

	if (text == NULL || s->dead)
		rc = -1;
	else if ((event != NULL && (s->out->write(s->out, "event: ", 7) == -1 ||
	    s->out->write(s->out, event, strlen(event)) == -1 ||
	    s->out->write(s->out, "\n", 1) == -1)) ||
	    s->out->write(s->out, "data: ", 6) == -1 ||
	    s->out->write(s->out, text, strlen(text)) == -1 ||
	    s->out->write(s->out, "\n\n", 2) == -1 || s->out->flush(s->out) == -1)
		rc = -1;
	if (rc == -1)
		s->dead = 1;
	s->last_write = sg_now_ms();
	free(text);
	return rc;
}

/* Keep a finished item the client is shown, at its output index. */
static void
keep_done(struct sg_stream *s, const json_t *data)
{
	json_int_t idx = json_integer_value(json_object_get(data,
	    "output_index"));
	json_t *item = json_object_get(data, "item");

	/* The index is ours (renumbered): bounded by what was shown. */
	if (item == NULL || idx < 0)
		return;
	while (json_array_size(s->done) <= (size_t)idx)
		if (json_array_append_new(s->done, json_null()) == -1)
			return;
	json_array_set(s->done, (size_t)idx, item);
}

/* A Responses event: type and sequence_number set here, first, as
 * OpenAI orders them. data is stolen. */
static void
emit(struct sg_stream *s, const char *type, json_t *data)
{
	json_t *ev = json_pack("{s:s,s:I}", "type", type, "sequence_number",
	    (json_int_t)s->seq++);

	if (strcmp(type, "response.output_item.done") == 0)
		keep_done(s, data);
	/* A relayed upstream event brings its own: ours replace them. */
	json_object_del(data, "type");
	json_object_del(data, "sequence_number");
	/* Without data (out of memory) send fails and ends the stream. */
	if (ev != NULL && (data == NULL || json_object_update(ev, data) == -1)) {
		json_decref(ev);
		ev = NULL;
	}
	sg_stream_send(s, type, ev);
	json_decref(ev);
	json_decref(data);
}

static int
begin(struct sg_stream *s)
{
	if (s->begun)
		return s->dead ? -1 : 0;
	s->begun = 1;
	if (sg_http_begin(s->out, s->req, 200, "text/event-stream; charset=utf-8",
	    "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n") == -1) {
		s->dead = 1;
		return -1;
	}
	if (s->surface == SG_SURFACE_RESPONSES) {
		/* Both events show the same snapshot; the SDKs need every
		 * field, and the same id to the end. */
		json_t *r = sg_answer_head(s->body, s->id, (json_int_t)s->created,
		    "in_progress");

		/* A background job's stream was begun when it was queued
		 * (response.created and response.queued, kept then): it goes
		 * on from there. */
		if (s->req->resp_id[0] != '\0')
			s->seq = SG_STREAM_QUEUED_EVENTS;
		else
			emit(s, "response.created", json_pack("{s:O}",
			    "response", r));
		emit(s, "response.in_progress", json_pack("{s:o}", "response", r));
	}
	return s->dead ? -1 : 0;
}

void
sg_stream_cite(struct sg_stream *s, const struct sg_cite *cite)
{
	s->cite = cite;
}

const char *
sg_stream_id(const struct sg_stream *s)
{
	return s->id;
}

int
sg_stream_begun(const struct sg_stream *s)
{
	return s->begun;
}

int
sg_stream_begin(struct sg_stream *s)
{
	return begin(s);
}

void
sg_stream_next_turn(struct sg_stream *s)
{
	int i;

	for (i = 0; i < MAX_INDEX; i++)
		s->map[i] = -1;
	for (i = 0; i < 64; i++)
		s->tmap[i] = -2;	/* not seen yet */
	s->any_text |= s->turn_text;
	s->turn_text = 0;
}

static struct code_call *
call_by_item(struct sg_stream *s, const char *up_item)
{
	int i;

	for (i = 0; up_item != NULL && i < s->ncalls; i++)
		if (strcmp(s->calls[i].up_item, up_item) == 0)
			return &s->calls[i];
	return NULL;
}

static struct code_call *
call_by_id(struct sg_stream *s, const char *call_id)
{
	int i;

	for (i = 0; call_id != NULL && i < s->ncalls; i++)
		if (strcmp(s->calls[i].call_id, call_id) == 0)
			return &s->calls[i];
	return NULL;
}

const char *
sg_stream_item_id(struct sg_stream *s, const char *call_id)
{
	struct code_call *c = call_by_id(s, call_id);

	return c != NULL ? c->id : NULL;
}

/* The code as the model writes it. */
static void
code_delta(void *arg, const char *text, size_t len)
{
	struct code_call *c = arg;

	if (sg_buf_add(&c->shown, text, len) == -1) {
		/* Not kept, so not shown: what runs is checked against it. */
		c->dec.lost = 1;
		return;
	}
	emit(c->s, "response.code_interpreter_call_code.delta", json_pack(
	    "{s:i,s:s,s:o}", "output_index", c->index, "item_id", c->id,
	    "delta", sg_json_string_lossy(text, len)));
}

static void
code_call_added(struct sg_stream *s, const json_t *item)
{
	struct code_call *c;
	struct sg_error err;
	const char *box;

	if (s->ncalls == MAX_CALLS)
		return;
	c = &s->calls[s->ncalls++];
	memset(c, 0, sizeof(*c));
	c->s = s;
	sg_copy(c->up_item, sizeof(c->up_item),
	    json_string_value(json_object_get(item, "id")) ?
	    json_string_value(json_object_get(item, "id")) : "");
	sg_copy(c->call_id, sizeof(c->call_id),
	    json_string_value(json_object_get(item, "call_id")) ?
	    json_string_value(json_object_get(item, "call_id")) : "");
	sg_time_id(c->id, sizeof(c->id), "ci_", 16);
	c->index = s->next_index++;
	sg_codedec_init(&c->dec, code_delta, c);
	/* The sandbox exists by the time its first call is shown. */
	box = s->sandbox(s->arg, &err);
	emit(s, "response.output_item.added", json_pack("{s:i,s:{s:s,s:s,s:s,"
	    "s:s,s:s,s:o}}", "output_index", c->index, "item", "id", c->id,
	    "type", "code_interpreter_call", "status", "in_progress", "code", "",
	    "container_id", box != NULL ? box : "", "outputs",
	    s->include_outputs ? json_array() : json_null()));
	emit(s, "response.code_interpreter_call.in_progress", json_pack(
	    "{s:i,s:s}", "output_index", c->index, "item_id", c->id));
}

static int
is_code_item(struct sg_stream *s, const json_t *item)
{
	const char *type = json_string_value(json_object_get(item, "type"));
	const char *name = json_string_value(json_object_get(item, "name"));

	return type != NULL && strcmp(type, "function_call") == 0 &&
	    name != NULL && strcmp(name, s->tool) == 0;
}

/* A part's text is whole: its links' annotations come first, numbered
 * after the upstream's own, as OpenAI sends them. */
static void
annotate_text(struct sg_stream *s, const json_t *ev)
{
	const json_t *text = json_object_get(ev, "text");
	json_t *anns, *a;
	size_t i;

	anns = sg_cite_text(s->cite, json_string_value(text),
	    json_string_length(text));
	json_array_foreach(anns, i, a)
		emit(s, "response.output_text.annotation.added", json_pack(
		    "{s:O?,s:O?,s:O?,s:I,s:O}", "item_id", json_object_get(ev,
		    "item_id"), "output_index", json_object_get(ev,
		    "output_index"), "content_index", json_object_get(ev,
		    "content_index"), "annotation_index", (json_int_t)(s->ann_up +
		    i), "annotation", a));
	s->ann_up = 0;
	json_decref(anns);
}

/* The annotations again wherever the finished part is shown (ev is our
 * shallow copy: what changes below it is copied first). */
static void
cite_event(struct sg_stream *s, const char *type, json_t *ev)
{
	json_t *it;

	if (strcmp(type, "response.output_text.annotation.added") == 0)
		s->ann_up++;
	else if (strcmp(type, "response.output_text.done") == 0)
		annotate_text(s, ev);
	else if (strcmp(type, "response.content_part.done") == 0 &&
	    json_is_object(json_object_get(ev, "part"))) {
		it = json_pack("{s:s,s:[o]}", "type", "message", "content",
		    json_deep_copy(json_object_get(ev, "part")));
		sg_cite_message(s->cite, it);
		json_object_set(ev, "part", json_array_get(json_object_get(it,
		    "content"), 0));
		json_decref(it);
	} else if (strcmp(type, "response.output_item.done") == 0 &&
	    json_is_object(json_object_get(ev, "item"))) {
		it = json_deep_copy(json_object_get(ev, "item"));
		sg_cite_message(s->cite, it);
		json_object_set_new(ev, "item", it);
	}
}

static void
responses_event(struct sg_stream *s, const json_t *ev)
{
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_int_t idx = json_integer_value(json_object_get(ev, "output_index"));
	const json_t *item = json_object_get(ev, "item");
	struct code_call *c;
	json_t *copy;

	if (type == NULL || strncmp(type, "response.", 9) != 0 ||
	    strcmp(type, "response.created") == 0 ||
	    strcmp(type, "response.in_progress") == 0 ||
	    strcmp(type, "response.queued") == 0 ||
	    strcmp(type, "response.completed") == 0 ||
	    strcmp(type, "response.incomplete") == 0 ||
	    strcmp(type, "response.failed") == 0)
		return;	/* the lifecycle is ours; errors end the loop */
	if (strcmp(type, "response.output_item.added") == 0 &&
	    is_code_item(s, item)) {
		code_call_added(s, item);
		return;
	}
	if ((c = call_by_item(s, json_string_value(json_object_get(ev,
	    "item_id")))) != NULL || (item != NULL && (c = call_by_item(s,
	    json_string_value(json_object_get(item, "id")))) != NULL)) {
		if (strcmp(type, "response.function_call_arguments.delta") == 0) {
			c->fed = 1;
			sg_codedec_feed(&c->dec, json_string_value(json_object_get(ev,
			    "delta")), json_string_length(json_object_get(ev,
			    "delta")));
		} else if (strcmp(type,
		    "response.function_call_arguments.done") == 0 && !c->fed)
			/* Arguments that arrive only whole. */
			sg_codedec_feed(&c->dec, json_string_value(json_object_get(ev,
			    "arguments")), json_string_length(json_object_get(ev,
			    "arguments")));
		return;
	}
	if (idx < 0 || idx >= MAX_INDEX)
		return;
	if (strcmp(type, "response.output_item.added") == 0 && s->map[idx] < 0)
		s->map[idx] = s->next_index++;
	if (s->map[idx] < 0)
		return;
	/* Shallow: only top-level members change. */
	copy = json_copy((json_t *)ev);
	if (json_object_get(copy, "output_index") != NULL)
		json_object_set_new(copy, "output_index", json_integer(s->map[idx]));
	if (s->cite != NULL)
		cite_event(s, type, copy);
	emit(s, type, copy);
}

void
sg_stream_upstream(struct sg_stream *s, const json_t *ev)
{
	if (begin(s) == -1)
		return;
	if (s->surface == SG_SURFACE_RESPONSES)
		responses_event(s, ev);
	else
		sg_stream_chat_event(s, ev);
}

int
sg_stream_code_agrees(struct sg_stream *s, const char *call_id,
    const char *code, size_t len)
{
	struct code_call *c = call_by_id(s, call_id);

	if (c == NULL)
		return 1;	/* never shown */
	if (c->dec.invalid || c->shown.len > len || (c->shown.len > 0 &&
	    memcmp(c->shown.p, code, c->shown.len) != 0))
		return 0;
	return !c->dec.done || c->shown.len == len;
}

void
sg_stream_code_running(struct sg_stream *s, const char *call_id,
    const char *code)
{
	struct code_call *c = call_by_id(s, call_id);

	if (c == NULL || begin(s) == -1)
		return;
	emit(s, "response.code_interpreter_call_code.done", json_pack(
	    "{s:i,s:s,s:s}", "output_index", c->index, "item_id", c->id, "code",
	    code != NULL ? code : ""));
	emit(s, "response.code_interpreter_call.interpreting", json_pack(
	    "{s:i,s:s}", "output_index", c->index, "item_id", c->id));
}

void
sg_stream_code_done(struct sg_stream *s, const char *call_id,
    const json_t *item)
{
	struct code_call *c = call_by_id(s, call_id);

	if (c == NULL || begin(s) == -1)
		return;
	emit(s, "response.code_interpreter_call.completed", json_pack(
	    "{s:i,s:s}", "output_index", c->index, "item_id", c->id));
	emit(s, "response.output_item.done", json_pack("{s:i,s:O}",
	    "output_index", c->index, "item", item));
}

void
sg_stream_tick(struct sg_stream *s)
{
	if (!s->begun) {
		/* A long first silence opens the stream: a proxy must see
		 * bytes, and the comment says why they stop. */
		if (sg_now_ms() - s->started < KEEPALIVE_MS || begin(s) == -1)
			return;
	} else if (s->dead || sg_now_ms() - s->last_write < KEEPALIVE_MS)
		return;
	/* A comment: the SDKs skip it; proxies see the stream is alive. */
	if (s->out->write(s->out, ": keepalive\n\n", 13) == -1 ||
	    s->out->flush(s->out) == -1)
		s->dead = 1;
	s->last_write = sg_now_ms();
}

void
sg_stream_finish(struct sg_stream *s, const json_t *answer)
{
	const char *status;
	json_t *done;

	if (begin(s) == -1)
		return;
	if (s->surface == SG_SURFACE_RESPONSES) {
		/* Shallow: the outputs (images too) are not copied. The id and
		 * created_at of the opening snapshot, in their places. */
		done = json_copy((json_t *)answer);
		json_object_set_new(done, "id", json_string(s->id));
		json_object_set_new(done, "created_at", json_integer(s->created));
		status = json_string_value(json_object_get(done, "status"));
		emit(s, status != NULL && strcmp(status, "incomplete") == 0 ?
		    "response.incomplete" : "response.completed", json_pack(
		    "{s:o}", "response", done));
		return;
	}
	sg_stream_chat_finish(s, answer);
}

/*
 * New reference: response.failed's output, every item the client saw
 * finished, in output order. OpenAI's failed response keeps the output
 * made so far; an item left unfinished has no final form to show.
 */
static json_t *
shown_done(const struct sg_stream *s)
{
	json_t *out = json_array(), *item;
	size_t i;

	json_array_foreach(s->done, i, item)
		if (!json_is_null(item))
			json_array_append(out, item);
	return out;
}

void
sg_stream_fail(struct sg_stream *s, const struct sg_error *err)
{
	json_t *e = sg_error_json(err), *inner = json_object_get(e, "error");
	json_t *failed, *output;

	if (begin(s) == -1) {
		json_decref(e);
		return;
	}
	if (s->surface == SG_SURFACE_CHAT) {
		sg_stream_send(s, NULL, e);
		json_decref(e);
		return;
	}
	/* The nested form both SDKs raise on, with the flat fields too. */
	emit(s, "error", json_pack("{s:O,s:O,s:O,s:O}", "code",
	    json_object_get(inner, "code") ? json_object_get(inner, "code") :
	    json_object_get(inner, "type"), "message", json_object_get(inner,
	    "message"), "param", json_object_get(inner, "param"), "error", inner));
	output = shown_done(s);
	failed = sg_answer_failed(s->body, s->id, (json_int_t)s->created,
	    err->code, json_string_value(json_object_get(inner, "message")),
	    output);
	json_decref(output);
	emit(s, "response.failed", json_pack("{s:o}", "response", failed));
	json_decref(e);
}
