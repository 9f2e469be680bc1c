/*
 * The live renderer's Chat Completions side: the upstream's chunks as the
 * client's, the code tool's calls hidden, a blank line between turns'
 * texts, and the end (finish_reason, the usage chunk, [DONE]).
 */
#include <string.h>

#include "stream.h"
#include "stream_int.h"

/* A chunk of ours: data is the delta (stolen). */
static void
chunk(struct sg_stream *s, json_t *delta, const char *finish, json_t *usage)
{
	json_t *c = json_pack("{s:s,s:s,s:I,s:O,s:[{s:i,s:o,s:n,s:s?}]}", "id",
	    s->id, "object", "chat.completion.chunk", "created",
	    (json_int_t)s->created, "model", json_object_get(s->body, "model"),
	    "choices", "index", 0, "delta", delta, "logprobs", "finish_reason",
	    finish);

	if (json_object_get(c, "choices") != NULL && finish == NULL)
		json_object_set_new(json_array_get(json_object_get(c, "choices"), 0),
		    "finish_reason", json_null());
	if (json_is_true(json_object_get(json_object_get(s->body,
	    "stream_options"), "include_usage")))
		json_object_set(c, "usage", usage != NULL ? usage : json_null());
	sg_stream_send(s, NULL, c);
	json_decref(c);
}

/* The first delta the client sees carries the role, once. */
static json_t *
delta_with_role(struct sg_stream *s)
{
	json_t *d = json_object();

	if (!s->role_sent) {
		json_object_set_new(d, "role", json_string("assistant"));
		s->role_sent = 1;
	}
	return d;
}

void
sg_stream_chat_event(struct sg_stream *s, const json_t *ev)
{
	const json_t *choice = json_array_get(json_object_get(ev, "choices"), 0);
	const json_t *delta = json_object_get(choice, "delta"), *tc, *text;
	json_t *d, *calls;
	size_t i;

	text = json_object_get(delta, "content");
	if (json_is_string(text) && json_string_length(text) > 0) {
		d = delta_with_role(s);
		if (!s->turn_text && s->any_text) {
			/* A blank line between the texts of two turns. */
			json_t *sep = json_pack("{s:s}", "content", "\n\n");

			json_object_update(sep, d);
			chunk(s, sep, NULL, NULL);
			d = json_object();
		}
		s->turn_text = 1;
		json_object_set(d, "content", (json_t *)text);
		chunk(s, d, NULL, NULL);
	}
	calls = json_array();
	json_array_foreach(json_object_get(delta, "tool_calls"), i, tc) {
		json_int_t up = json_integer_value(json_object_get(tc, "index"));
		const char *name = json_string_value(json_object_get(
		    json_object_get(tc, "function"), "name"));
		json_t *c;

		if (up < 0 || up >= 64)
			continue;
		if (s->tmap[up] == -2)
			s->tmap[up] = name != NULL && strcmp(name, s->tool) == 0 ?
			    -1 : s->next_tool++;
		if (s->tmap[up] < 0)
			continue;	/* the code tool: internal */
		c = json_copy((json_t *)tc);
		json_object_set_new(c, "index", json_integer(s->tmap[up]));
		json_array_append_new(calls, c);
	}
	if (json_array_size(calls) > 0) {
		d = delta_with_role(s);
		json_object_set(d, "tool_calls", calls);
		chunk(s, d, NULL, NULL);
	}
	json_decref(calls);
}

void
sg_stream_chat_finish(struct sg_stream *s, const json_t *answer)
{
	const json_t *choice = json_array_get(json_object_get(answer,
	    "choices"), 0);
	json_t *c;

	/* Node's helper needs a role even when no text came. */
	if (!s->role_sent)
		chunk(s, delta_with_role(s), NULL, NULL);
	chunk(s, json_object(), json_string_value(json_object_get(choice,
	    "finish_reason")), NULL);
	if (json_is_true(json_object_get(json_object_get(s->body,
	    "stream_options"), "include_usage"))) {
		c = json_pack("{s:s,s:s,s:I,s:O,s:[],s:O}", "id", s->id,
		    "object", "chat.completion.chunk", "created",
		    (json_int_t)s->created, "model", json_object_get(s->body,
		    "model"), "choices", "usage", json_object_get(answer, "usage"));
		sg_stream_send(s, NULL, c);
		json_decref(c);
	}
	if (!s->dead && (s->out->write(s->out, "data: [DONE]\n\n", 14) == -1 ||
	    s->out->flush(s->out) == -1))
		s->dead = 1;
}
