/*
 * A Chat Completions stream as the Responses events a Responses upstream
 * sends (../shared/reference/openai-shapes.md §5): the text becomes a
 * message item (output_item.added, content_part.added, output_text.delta
 * ..., and their done events), each tool call a function_call item with
 * its argument deltas, and the end response.completed, or
 * response.incomplete when the answer was cut (finish_reason "length":
 * max_output_tokens; "content_filter"), with the usage in Responses'
 * names. A server's reasoning_content becomes a reasoning item. Responses items never interleave: a message is finished when a
 * tool call starts, and tool calls are finished at the end, in order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge.h"
#include "../../lib/util.h"

#define MAX_CALLS	64

struct call {
	int		 open;
	int		 index;		/* output index */
	char		 id[64];	/* the item's, fc_... */
	json_t		*call_id;	/* the upstream's, or ours */
	struct sg_buf	 name, args;
};

struct sg_bridge {
	sg_sse_fn	 fn;
	void		*arg;
	char		 model[256];
	char		 id[64];
	json_int_t	 created;
	json_int_t	 seq;
	int		 next_index;
	/* The message being written, if any. */
	int		 msg_open, msg_index;
	char		 msg_id[64];
	struct sg_buf	 text;
	/* The reasoning being written (Chat servers' reasoning_content). */
	int		 rs_open, rs_index;
	char		 rs_id[64];
	struct sg_buf	 thought;
	struct call	 calls[MAX_CALLS];
	char		 finish[32];
	json_t		*usage;		/* the upstream's, Chat's names */
	json_t		*output;	/* finished items, by output index */
	int		 ended, failed;
	int		 stop;		/* the consumer said stop */
};

struct sg_bridge *
sg_bridge_new(const char *model, sg_sse_fn fn, void *arg)
{
	struct sg_bridge *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->fn = fn;
	b->arg = arg;
	sg_copy(b->model, sizeof(b->model), model);
	sg_time_id(b->id, sizeof(b->id), "resp_", 24);
	b->created = (json_int_t)time(NULL);
	if ((b->output = json_array()) == NULL) {
		free(b);
		return NULL;
	}
	return b;
}

void
sg_bridge_free(struct sg_bridge *b)
{
	int i;

	if (b == NULL)
		return;
	for (i = 0; i < MAX_CALLS; i++) {
		json_decref(b->calls[i].call_id);
		free(b->calls[i].name.p);
		free(b->calls[i].args.p);
	}
	free(b->text.p);
	free(b->thought.p);
	json_decref(b->usage);
	json_decref(b->output);
	free(b);
}

/* One Responses event (data stolen) to the consumer, named as OpenAI
 * names it. */
static void
send(struct sg_bridge *b, const char *type, json_t *data)
{
	struct sg_sse_event ev;
	char *text;

	if (data == NULL)
		return;
	json_object_set_new(data, "type", json_string(type));
	json_object_set_new(data, "sequence_number", json_integer(b->seq++));
	if ((text = json_dumps(data, JSON_COMPACT)) != NULL) {
		ev = (struct sg_sse_event){ text, strlen(text), type, text,
		    strlen(text), 1 };
		if (b->fn(b->arg, &ev) == -1)
			b->stop = 1;
	}
	free(text);
	json_decref(data);
}

/* Keep a finished item at its output index. */
static void
keep(struct sg_bridge *b, int index, const json_t *item)
{
	while (json_array_size(b->output) <= (size_t)index)
		json_array_append_new(b->output, json_null());
	json_array_set(b->output, (size_t)index, (json_t *)item);
}

static json_t *
text_part(const char *text, size_t len)
{
	return json_pack("{s:s,s:s%,s:[],s:[]}", "type", "output_text", "text",
	    text != NULL ? text : "", len, "annotations", "logprobs");
}

/*
 * What a Chat server streams as the model's reasoning (reasoning_content:
 * vLLM, llama.cpp, DeepSeek; reasoning: Ollama, OpenRouter) is a
 * reasoning item with its text, as OpenAI's open reasoning models show it;
 * it is finished when the answer's text or a tool call starts.
 */
static void
reasoning_delta(struct sg_bridge *b, const json_t *v)
{
	if (!b->rs_open) {
		b->rs_open = 1;
		b->rs_index = b->next_index++;
		b->thought.len = 0;
		sg_time_id(b->rs_id, sizeof(b->rs_id), "rs_", 24);
		send(b, "response.output_item.added", json_pack("{s:i,s:{s:s,s:s,"
		    "s:[],s:[]}}", "output_index", b->rs_index, "item", "id",
		    b->rs_id, "type", "reasoning", "summary", "content"));
		send(b, "response.content_part.added", json_pack("{s:s,s:i,s:i,"
		    "s:{s:s,s:s}}", "item_id", b->rs_id, "output_index", b->rs_index,
		    "content_index", 0, "part", "type", "reasoning_text", "text",
		    ""));
	}
	sg_buf_add(&b->thought, json_string_value(v), json_string_length(v));
	send(b, "response.reasoning_text.delta", json_pack("{s:s,s:i,s:i,s:O}",
	    "item_id", b->rs_id, "output_index", b->rs_index, "content_index", 0,
	    "delta", v));
}

static void
reasoning_close(struct sg_bridge *b)
{
	const char *text = b->thought.p != NULL ? b->thought.p : "";
	json_t *item;

	if (!b->rs_open)
		return;
	b->rs_open = 0;
	send(b, "response.reasoning_text.done", json_pack("{s:s,s:i,s:i,s:s%}",
	    "item_id", b->rs_id, "output_index", b->rs_index, "content_index", 0,
	    "text", text, b->thought.len));
	send(b, "response.content_part.done", json_pack("{s:s,s:i,s:i,"
	    "s:{s:s,s:s%}}", "item_id", b->rs_id, "output_index", b->rs_index,
	    "content_index", 0, "part", "type", "reasoning_text", "text", text,
	    b->thought.len));
	item = json_pack("{s:s,s:s,s:[],s:[{s:s,s:s%}]}", "id", b->rs_id,
	    "type", "reasoning", "summary", "content", "type", "reasoning_text",
	    "text", text, b->thought.len);
	keep(b, b->rs_index, item);
	send(b, "response.output_item.done", json_pack("{s:i,s:o}",
	    "output_index", b->rs_index, "item", item));
}

static void
message_open(struct sg_bridge *b)
{
	reasoning_close(b);
	if (b->msg_open)
		return;
	b->msg_open = 1;
	b->msg_index = b->next_index++;
	b->text.len = 0;
	sg_time_id(b->msg_id, sizeof(b->msg_id), "msg_", 24);
	send(b, "response.output_item.added", json_pack("{s:i,s:{s:s,s:s,s:s,"
	    "s:s,s:[]}}", "output_index", b->msg_index, "item", "id", b->msg_id,
	    "type", "message", "status", "in_progress", "role", "assistant",
	    "content"));
	send(b, "response.content_part.added", json_pack("{s:s,s:i,s:i,s:o}",
	    "item_id", b->msg_id, "output_index", b->msg_index, "content_index",
	    0, "part", text_part("", 0)));
}

static void
message_close(struct sg_bridge *b, const char *status)
{
	json_t *item;

	if (!b->msg_open)
		return;
	b->msg_open = 0;
	send(b, "response.output_text.done", json_pack("{s:s,s:i,s:i,s:s%,s:[]}",
	    "item_id", b->msg_id, "output_index", b->msg_index, "content_index",
	    0, "text", b->text.p != NULL ? b->text.p : "", b->text.len,
	    "logprobs"));
	send(b, "response.content_part.done", json_pack("{s:s,s:i,s:i,s:o}",
	    "item_id", b->msg_id, "output_index", b->msg_index, "content_index",
	    0, "part", text_part(b->text.p, b->text.len)));
	item = json_pack("{s:s,s:s,s:s,s:s,s:[o]}", "id", b->msg_id, "type",
	    "message", "status", status, "role", "assistant", "content",
	    text_part(b->text.p, b->text.len));
	keep(b, b->msg_index, item);
	send(b, "response.output_item.done", json_pack("{s:i,s:o}",
	    "output_index", b->msg_index, "item", item));
}

static json_t *
call_item(const struct call *c, const char *status)
{
	return json_pack("{s:s,s:s,s:s,s:s%,s:O,s:s%}", "id", c->id, "type",
	    "function_call", "status", status, "arguments", c->args.p != NULL ?
	    c->args.p : "", c->args.len, "call_id", c->call_id, "name",
	    c->name.p != NULL ? c->name.p : "", c->name.len);
}

/* A tool_calls delta: the first of an index opens its item. */
static void
call_delta(struct sg_bridge *b, const json_t *d)
{
	json_int_t i = json_integer_value(json_object_get(d, "index"));
	const json_t *fn = json_object_get(d, "function");
	const json_t *name = json_object_get(fn, "name");
	const json_t *args = json_object_get(fn, "arguments");
	struct call *c;
	char id[48];

	if (i < 0 || i >= MAX_CALLS)
		return;
	c = &b->calls[i];
	if (json_is_string(name))
		sg_buf_add(&c->name, json_string_value(name),
		    json_string_length(name));
	if (!c->open) {
		reasoning_close(b);
		message_close(b, "completed");
		c->open = 1;
		c->index = b->next_index++;
		sg_time_id(c->id, sizeof(c->id), "fc_", 24);
		if (json_is_string(json_object_get(d, "id")))
			c->call_id = json_incref(json_object_get(d, "id"));
		else if (sg_rand_id(id, sizeof(id), "call_", 12) == 0)
			c->call_id = json_string(id);
		send(b, "response.output_item.added", json_pack("{s:i,s:o}",
		    "output_index", c->index, "item", call_item(c,
		    "in_progress")));
	}
	if (json_is_string(args) && json_string_length(args) > 0) {
		sg_buf_add(&c->args, json_string_value(args),
		    json_string_length(args));
		send(b, "response.function_call_arguments.delta", json_pack(
		    "{s:s,s:i,s:O}", "item_id", c->id, "output_index", c->index,
		    "delta", args));
	}
}

static void
calls_close(struct sg_bridge *b, const char *status)
{
	json_t *item;
	int i;

	for (i = 0; i < MAX_CALLS; i++) {
		struct call *c = &b->calls[i];

		if (!c->open)
			continue;
		c->open = 0;
		send(b, "response.function_call_arguments.done", json_pack(
		    "{s:s,s:i,s:s%,s:s%}", "item_id", c->id, "output_index",
		    c->index, "arguments", c->args.p != NULL ? c->args.p : "",
		    c->args.len, "name", c->name.p != NULL ? c->name.p : "",
		    c->name.len));
		/* Cut short, its arguments may be too. */
		item = call_item(c, status);
		keep(b, c->index, item);
		send(b, "response.output_item.done", json_pack("{s:i,s:o}",
		    "output_index", c->index, "item", item));
	}
}

/* New reference: Chat's usage in Responses' names. */
static json_t *
usage_of(const json_t *u)
{
	json_int_t in = json_integer_value(json_object_get(u, "prompt_tokens"));
	json_int_t out = json_integer_value(json_object_get(u,
	    "completion_tokens"));
	const json_t *total = json_object_get(u, "total_tokens");

	return json_pack("{s:I,s:{s:I},s:I,s:{s:I},s:I}", "input_tokens", in,
	    "input_tokens_details", "cached_tokens", json_integer_value(
	    json_object_get(json_object_get(u, "prompt_tokens_details"),
	    "cached_tokens")), "output_tokens", out, "output_tokens_details",
	    "reasoning_tokens", json_integer_value(json_object_get(
	    json_object_get(u, "completion_tokens_details"),
	    "reasoning_tokens")), "total_tokens", json_is_integer(total) ?
	    json_integer_value(total) : in + out);
}

static void
chunk(struct sg_bridge *b, const json_t *c)
{
	const json_t *choice = json_array_get(json_object_get(c, "choices"), 0);
	const json_t *delta = json_object_get(choice, "delta"), *v;
	const char *fr = json_string_value(json_object_get(choice,
	    "finish_reason"));
	size_t i;

	if (json_is_object(v = json_object_get(c, "usage"))) {
		json_decref(b->usage);
		b->usage = json_incref((json_t *)v);
	}
	if ((json_is_string(v = json_object_get(delta, "reasoning_content")) ||
	    json_is_string(v = json_object_get(delta, "reasoning"))) &&
	    json_string_length(v) > 0)
		reasoning_delta(b, v);
	if (json_is_string(v = json_object_get(delta, "content")) &&
	    json_string_length(v) > 0) {
		message_open(b);
		sg_buf_add(&b->text, json_string_value(v), json_string_length(v));
		send(b, "response.output_text.delta", json_pack("{s:s,s:i,s:i,"
		    "s:O,s:[]}", "item_id", b->msg_id, "output_index",
		    b->msg_index, "content_index", 0, "delta", v, "logprobs"));
	}
	json_array_foreach(json_object_get(delta, "tool_calls"), i, v)
		call_delta(b, v);
	if (fr != NULL)
		sg_copy(b->finish, sizeof(b->finish), fr);
}

int
sg_bridge_event(void *arg, const struct sg_sse_event *ev)
{
	struct sg_bridge *b = arg;
	json_t *j;

	if (ev == NULL)
		return b->fn(b->arg, NULL);
	if (!ev->has_data || b->ended)
		return 0;
	if (strcmp(ev->data, "[DONE]") == 0) {
		sg_bridge_end(b);
		return 0;
	}
	if ((j = json_loadb(ev->data, ev->datalen, JSON_ALLOW_NUL, NULL)) ==
	    NULL || !json_is_object(j)) {
		json_decref(j);
		return 0;
	}
	/* An error mid-stream goes on as it came: the turn fails on it. */
	if (json_object_get(j, "error") != NULL &&
	    !json_is_null(json_object_get(j, "error"))) {
		b->failed = 1;
		if (b->fn(b->arg, ev) == -1)
			b->stop = 1;
	} else
		chunk(b, j);
	json_decref(j);
	return b->stop ? -1 : 0;
}

void
sg_bridge_end(struct sg_bridge *b)
{
	int cut = strcmp(b->finish, "length") == 0 ||
	    strcmp(b->finish, "content_filter") == 0;
	json_t *r;

	if (b->ended)
		return;
	b->ended = 1;
	reasoning_close(b);
	message_close(b, cut ? "incomplete" : "completed");
	calls_close(b, cut ? "incomplete" : "completed");
	if (b->failed)
		return;
	r = json_pack("{s:s,s:s,s:I,s:s,s:s,s:O,s:o,s:n}", "id", b->id,
	    "object", "response", "created_at", b->created, "status", cut ?
	    "incomplete" : "completed", "model", b->model, "output", b->output,
	    "incomplete_details", cut ? json_pack("{s:s}", "reason",
	    strcmp(b->finish, "length") == 0 ? "max_output_tokens" :
	    "content_filter") : json_null(), "error");
	if (r != NULL && b->usage != NULL)
		json_object_set_new(r, "usage", usage_of(b->usage));
	send(b, cut ? "response.incomplete" : "response.completed", json_pack(
	    "{s:o}", "response", r));
}

/* An upstream's error answer in OpenAI's shape: kept when it is one,
 * else its message (a bare string, Ollama's {"error":"..."}) wrapped. */
static void
error_shape(char **errbody, long status)
{
	json_t *e = json_loads(*errbody, 0, NULL), *inner, *out;
	const char *msg;
	char *text;

	inner = json_object_get(e, "error");
	if (json_is_object(inner) && json_is_string(json_object_get(inner,
	    "message"))) {
		json_decref(e);
		return;
	}
	msg = json_is_string(inner) ? json_string_value(inner) :
	    json_is_string(json_object_get(e, "message")) ? json_string_value(
	    json_object_get(e, "message")) : *errbody;
	out = json_pack("{s:{s:s,s:s,s:n,s:n}}", "error", "message", msg,
	    "type", status >= 500 ? "server_error" : "invalid_request_error",
	    "param", "code");
	text = out != NULL ? json_dumps(out, JSON_COMPACT) : NULL;
	json_decref(out);
	json_decref(e);
	if (text != NULL) {
		free(*errbody);
		*errbody = text;
	}
}

int
sg_bridge_events(struct sg_upstream *up, const struct sg_cfg_model *m,
    const json_t *work, int64_t deadline_ms, const struct sg_req *req,
    struct sg_out *out, sg_sse_fn fn, void *arg, long *status,
    char **errbody, struct sg_error *err)
{
	json_t *chat = sg_bridge_request(work);
	char *text = chat != NULL ? json_dumps(chat, JSON_COMPACT) : NULL;
	struct sg_bridge *b = sg_bridge_new(json_string_value(json_object_get(
	    work, "model")), fn, arg);
	int rc;

	json_decref(chat);
	if (text == NULL || b == NULL) {
		free(text);
		sg_bridge_free(b);
		return sg_error_server(err, 500, "out of memory");
	}
	rc = sg_upstream_events(up, m, SG_SURFACE_CHAT, text, strlen(text),
	    deadline_ms, req, out, sg_bridge_event, b, status, errbody, err);
	if (rc == 0)
		sg_bridge_end(b);
	else if (*errbody != NULL)
		error_shape(errbody, *status);
	free(text);
	sg_bridge_free(b);
	return rc;
}
