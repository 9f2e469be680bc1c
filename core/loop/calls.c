/*
 * sg_call: the calls of the code tool in one upstream turn: found among
 * the turn's items (or tool calls), run in the request's sandbox, shown
 * to the client as code_interpreter_call items, and answered to the
 * model in the follow-up. The round's order is loop.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop_int.h"
#include "outfiles.h"
#include "rewrite.h"
#include "../state/trace.h"
#include "../../lib/util.h"
#include "../../lib/jdump.h"

int
sg_call_collect(struct run *r, struct sg_turn *t, struct call *calls, int max)
{
	const json_t *it, *fn;
	const char *name;
	int n = 0;
	size_t i;

	if (r->s == SG_SURFACE_RESPONSES) {
		json_array_foreach(t->items, i, it) {
			if (strcmp(json_string_value(json_object_get(it, "type")) ?
			    json_string_value(json_object_get(it, "type")) : "",
			    "function_call") != 0)
				continue;
			name = json_string_value(json_object_get(it, "name"));
			if (name != NULL && r->tool[0] != '\0' &&
			    strcmp(name, r->tool) == 0 && n < max) {
				calls[n].id = json_string_value(json_object_get(it,
				    "call_id"));
				calls[n].args = json_string_value(json_object_get(it,
				    "arguments"));
				calls[n].argslen = json_string_length(
				    json_object_get(it, "arguments"));
				calls[n++].raw = it;
			} else
				json_array_append(r->client_calls, (json_t *)it);
		}
		return n;
	}
	json_array_foreach(t->tool_calls, i, it) {
		fn = json_object_get(it, "function");
		name = json_string_value(json_object_get(fn, "name"));
		if (name != NULL && r->tool[0] != '\0' &&
		    strcmp(name, r->tool) == 0 && n < max) {
			calls[n].id = json_string_value(json_object_get(it, "id"));
			calls[n].args = json_string_value(json_object_get(fn,
			    "arguments"));
			calls[n].argslen = json_string_length(json_object_get(fn,
			    "arguments"));
			calls[n++].raw = it;
		} else
			json_array_append(r->client_calls, (json_t *)it);
	}
	return n;
}

/* The calls compared without their ids: an identical round repeats. */
int
sg_call_repeated(struct run *r, struct call *calls, int n)
{
	json_t *fp = json_array(), *p;
	char *text;
	size_t i;
	int k, seen = 0;

	for (k = 0; k < n; k++)
		json_array_append_new(fp, json_stringn(calls[k].args ?
		    calls[k].args : "", calls[k].argslen));
	text = sg_jdump_text(fp, NULL);
	json_decref(fp);
	json_array_foreach(r->prints, i, p)
		if (text != NULL && strcmp(json_string_value(p), text) == 0)
			seen = 1;
	if (text != NULL)
		json_array_append_new(r->prints, json_string(text));
	free(text);
	return seen;
}

/* New reference: a call's outputs. An image is made once, straight into
 * its string (a PNG may be megabytes). */
static json_t *
call_outputs(const json_t *result, const char *logs)
{
	json_t *outs = json_array(), *res, *url;
	size_t i;

	json_array_append_new(outs, json_pack("{s:s,s:s}", "type", "logs",
	    "logs", logs));
	json_array_foreach(json_object_get(result, "results"), i, res) {
		const char *png = json_string_value(json_object_get(res, "png"));

		if (png != NULL && (url = json_sprintf("data:image/png;base64,%s",
		    png)) != NULL)
			json_array_append_new(outs, json_pack("{s:s,s:o}", "type",
			    "image", "url", url));
	}
	return outs;
}

/* note (new, or NULL) before text (new): one new string. */
static char *
with_note(char *note, char *text)
{
	char *both;

	if (note == NULL || text == NULL) {
		free(note);
		return text;
	}
	if (asprintf(&both, "%s%s", note, text) == -1)
		both = NULL;
	free(note);
	if (both == NULL)
		return text;
	free(text);
	return both;
}

/* Run one call; its text for the model in *text (new). -1 with err when
 * the sandbox failed (the request then fails). */
int
sg_call_run(struct run *r, const struct call *c, char **text, json_t **item,
    struct sg_error *err)
{
	const char *sid = r->stream != NULL ? sg_stream_item_id(r->stream,
	    c->id) : NULL;
	json_t *result = NULL;
	char *code, *problem, *note = NULL, id[48];

	*item = NULL;
	/* What runs is what the client was shown streaming, or nothing. */
	if (sg_rw_code_arg(c->args, c->argslen, &code, &problem) == 0 &&
	    r->stream != NULL && !sg_stream_code_agrees(r->stream, c->id, code,
	    strlen(code))) {
		free(code);
		code = NULL;
		problem = strdup(SG_RW_INVALID_ARGS);
	}
	sg_trace_call(c->id, code == NULL ? problem : NULL);
	if (code == NULL) {
		*text = problem;
	} else {
		if (sg_bind_sandbox(r->env->sbx, r->req, &r->bind, err) == NULL) {
			free(code);
			return -1;
		}
		if (r->stream != NULL)
			sg_stream_code_running(r->stream, c->id, code);
		if (sg_bind_run(r->env->sbx, r->req, &r->bind, code, &result,
		    &note, err) == -1) {
			free(code);
			return -1;
		}
		*text = with_note(note, sg_rw_tool_result(result));
	}
	if (sid != NULL)
		sg_copy(id, sizeof(id), sid);
	else
		sg_time_id(id, sizeof(id), "ci_", 16);
	/* A call whose code raised is still completed: the traceback is in
	 * its logs, and the model reads it. */
	*item = json_pack("{s:s,s:s,s:s,s:s?,s:s,s:o}", "id", id, "type",
	    "code_interpreter_call", "status", "completed", "code", code,
	    "container_id", r->bind.sandbox, "outputs", r->info.include_outputs ?
	    call_outputs(result, *text) : json_null());
	if (r->stream != NULL)
		sg_stream_code_done(r->stream, c->id, *item);
	free(code);
	json_decref(result);
	return 0;
}

/* The follow-up carries this turn as it came, then the tool results
 * (Responses: outs, the function_call_output items). */
void
sg_call_followup(struct run *r, struct sg_turn *t, struct call *calls, int n,
    char **texts, const json_t *outs)
{
	const char *key = r->s == SG_SURFACE_CHAT ? "messages" : "input";
	json_t *list = json_object_get(r->work, key), *tcs, *msg;
	size_t i;
	int k;

	if (json_is_string(list)) {
		list = json_pack("[{s:s,s:O}]", "role", "user", "content", list);
		json_object_set_new(r->work, key, list);
	} else if (!json_is_array(list)) {
		list = json_array();
		json_object_set_new(r->work, key, list);
	}
	if (r->s == SG_SURFACE_RESPONSES) {
		json_t *it;

		json_array_foreach(t->items, i, it)
			json_array_append_new(list, sg_conv_upitem(&r->conv, it));
		json_array_extend(list, (json_t *)outs);
		return;
	}
	tcs = json_array();
	for (k = 0; k < n; k++)
		json_array_append(tcs, (json_t *)calls[k].raw);
	msg = json_pack("{s:s,s:o}", "role", "assistant", "tool_calls", tcs);
	if (t->text.len > 0)
		json_object_set_new(msg, "content", json_stringn(t->text.p,
		    t->text.len));
	json_array_append_new(list, msg);
	for (k = 0; k < n; k++)
		json_array_append_new(list, json_pack("{s:s,s:s,s:s}", "role",
		    "tool", "tool_call_id", calls[k].id ? calls[k].id : "",
		    "content", texts[k]));
}

/* New reference: the function_call_output items of a round (Responses),
 * and what the upstream saw of each call kept for the client's item. */
json_t *
sg_call_outputs(struct run *r, struct call *calls, int n, char **texts)
{
	json_t *outs = json_array(), *o;
	int k;

	if (r->s != SG_SURFACE_RESPONSES)
		return outs;
	for (k = 0; k < n; k++) {
		o = json_pack("{s:s,s:s,s:s}", "type", "function_call_output",
		    "call_id", calls[k].id ? calls[k].id : "", "output",
		    texts[k]);
		json_array_append(outs, o);
		sg_conv_output(&r->conv, json_pack("[O,o]", calls[k].raw, o));
	}
	return outs;
}

/* The files this round's code wrote, copied out; the model learns of
 * them after the round's last result. */
void
sg_call_files(struct run *r, char **text)
{
	char *note = NULL, *both;

	if (r->bind.sandbox[0] == '\0')
		return;
	sg_outf_collect(r->env->sbx, r->req->tenant, r->bind.sandbox, &note);
	if (note == NULL)
		return;
	if (asprintf(&both, "%s%s", *text, note) != -1) {
		free(*text);
		*text = both;
	}
	free(note);
}
