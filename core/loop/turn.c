#include <stdlib.h>
#include <string.h>

#include "turn.h"
#include "../../lib/jscan.h"

void
sg_turn_init(struct sg_turn *t, enum sg_surface s)
{
	memset(t, 0, sizeof(*t));
	t->surface = s;
	t->items = json_array();
	t->tool_calls = json_array();
	t->raw_ok = 1;
}

void
sg_turn_free(struct sg_turn *t)
{
	json_decref(t->items);
	json_decref(t->response);
	json_decref(t->tool_calls);
	json_decref(t->head);
	json_decref(t->usage);
	json_decref(t->error);
	free(t->text.p);
	free(t->raw.p);
	memset(t, 0, sizeof(*t));
}

/* Keep v (shared with the parsed event, which goes: nothing changes
 * what is kept, so it need not be copied). */
static void
set(json_t **slot, json_t *v)
{
	json_decref(*slot);
	*slot = json_incref(v);
}

/* Append src's string member key to dst's (both objects). */
static void
concat(json_t *dst, const char *key, const json_t *src)
{
	const char *a = json_string_value(json_object_get(dst, key));
	const char *b = json_string_value(json_object_get(src, key));
	size_t al = json_string_length(json_object_get(dst, key));
	size_t bl = json_string_length(json_object_get(src, key));
	char *both;

	if (b == NULL)
		return;
	if ((both = malloc(al + bl + 1)) == NULL)
		return;
	if (a != NULL)
		memcpy(both, a, al);
	memcpy(both + al, b, bl);
	json_object_set_new(dst, key, json_stringn(both, al + bl));
	free(both);
}

/* One tool_calls delta: the first for an index opens the call. */
static void
chat_tool_delta(struct sg_turn *t, const json_t *d)
{
	json_int_t idx = json_integer_value(json_object_get(d, "index"));
	const json_t *fn = json_object_get(d, "function");
	json_t *call;

	if (idx < 0 || idx > 1024)
		return;
	while ((json_int_t)json_array_size(t->tool_calls) <= idx)
		json_array_append_new(t->tool_calls, json_pack("{s:s,s:s,s:{s:s,s:s}}",
		    "id", "", "type", "function", "function", "name", "",
		    "arguments", ""));
	call = json_array_get(t->tool_calls, (size_t)idx);
	if (json_is_string(json_object_get(d, "id")))
		json_object_set(call, "id", json_object_get(d, "id"));
	concat(json_object_get(call, "function"), "name", fn);
	concat(json_object_get(call, "function"), "arguments", fn);
}

static void
chat_chunk(struct sg_turn *t, json_t *c)
{
	const json_t *choice = json_array_get(json_object_get(c, "choices"), 0);
	const json_t *delta = json_object_get(choice, "delta"), *tc, *v;
	const char *fr = json_string_value(json_object_get(choice,
	    "finish_reason"));
	size_t i;

	if (t->head == NULL)
		set(&t->head, c);
	if (json_is_object(json_object_get(c, "usage")))
		set(&t->usage, json_object_get(c, "usage"));
	if ((v = json_object_get(delta, "content")) != NULL && json_is_string(v))
		sg_buf_add(&t->text, json_string_value(v), json_string_length(v));
	json_array_foreach(json_object_get(delta, "tool_calls"), i, tc)
		chat_tool_delta(t, tc);
	if (fr != NULL)
		sg_copy(t->finish_reason, sizeof(t->finish_reason), fr);
}

static void
responses_event(struct sg_turn *t, json_t *e)
{
	const char *type = json_string_value(json_object_get(e, "type"));
	json_t *resp = json_object_get(e, "response");

	if (type == NULL)
		return;
	if (strcmp(type, "response.output_item.done") == 0) {
		json_array_append(t->items, json_object_get(e, "item"));
		t->raw_ok = 0;
	} else if (strcmp(type, "response.completed") == 0 ||
	    strcmp(type, "response.incomplete") == 0) {
		set(&t->response, resp);
		set(&t->usage, json_object_get(resp, "usage"));
		/* The final response's output is the authoritative list. */
		if (json_array_size(json_object_get(resp, "output")) > 0) {
			set(&t->items, json_object_get(resp, "output"));
			t->raw_ok = 0;
		}
	} else if (strcmp(type, "response.failed") == 0 ||
	    strcmp(type, "error") == 0) {
		if (t->error == NULL)
			set(&t->error, json_object_get(e, "error") ?
			    json_object_get(e, "error") :
			    json_object_get(resp, "error") ?
			    json_object_get(resp, "error") : e);
	}
}

static int
is_text(const struct sg_jspan *v, const char *s)
{
	size_t n = strlen(s);

	return v->p != NULL && v->len == n + 2 && v->p[0] == '"' &&
	    memcmp(v->p + 1, s, n) == 0 && v->p[n + 1] == '"';
}

/* New reference: the value text v[0..len), a member's. */
static json_t *
load(const struct sg_jspan *v)
{
	return sg_jparse(v->p, v->len, SG_JPARSE_ANY);
}

/* output_item.done: its item, and the item's text after the others'. */
static void
fast_item(struct sg_turn *t, const struct sg_jspan *item)
{
	json_t *v;

	if (item->p == NULL)
		return;
	v = load(item);
	if (json_array_append_new(t->items, v) == -1)
		t->raw_ok = 0;
	else if (t->raw_ok) {
		if (t->raw.len > 0)
			t->raw.p[t->raw.len - 1] = ',';
		if ((t->raw.len == 0 && sg_buf_add(&t->raw, "[", 1) == -1) ||
		    sg_buf_add(&t->raw, item->p, item->len) == -1 ||
		    sg_buf_add(&t->raw, "]", 1) == -1)
			t->raw_ok = 0;
	}
}

/* The members of a final response the loop reads, output last. */
static const char *const final_names[] = { "id", "created_at", "status",
    "incomplete_details", "service_tier", "usage", "output", NULL };

/* completed or incomplete, its response's members in m: those the loop
 * reads, and the output only when it is not the items already kept,
 * byte for byte. */
static void
fast_final(struct sg_turn *t, const struct sg_jspan *m)
{
	const struct sg_jspan *out = &m[6];
	json_t *r, *v;
	int k;

	if ((r = json_object()) == NULL)
		return;
	for (k = 0; k < 6; k++)
		if (m[k].p != NULL && (v = load(&m[k])) != NULL)
			json_object_set_new(r, final_names[k], v);
	json_decref(t->response);
	t->response = r;
	set(&t->usage, json_object_get(r, "usage"));
	if (out->p == NULL || out->p[0] != '[' || (t->raw_ok &&
	    t->raw.len == out->len && memcmp(t->raw.p, out->p, out->len) == 0))
		return;
	if (json_array_size(v = load(out)) > 0) {
		set(&t->items, v);
		t->raw.len = 0;
		t->raw_ok = sg_buf_add(&t->raw, out->p, out->len) == 0;
	}
	json_decref(v);
}

/*
 * The events a turn keeps of a Responses stream, read without parsing
 * the whole event: output_item.done's item, and of the final response
 * only what the loop reads (it repeats every item, and a long echo of
 * the request). 0; -1 when only a whole parse can tell (any other event,
 * or text that jscan leaves to Jansson).
 */
static int
fast_event(struct sg_turn *t, const struct sg_sse_event *ev)
{
	static const char *const names[] = { "type", "item", "response",
	    NULL };
	struct sg_jspan m[3], fm[7];
	struct sg_jscan_sub sub = { 2, final_names, fm };

	/* The response's members found in the same pass. */
	if (sg_jscan_object_sub(ev->data, ev->datalen, names, m, &sub) == -1)
		return -1;
	if (is_text(&m[0], "response.output_item.done")) {
		fast_item(t, &m[1]);
		return 0;
	}
	if ((is_text(&m[0], "response.completed") ||
	    is_text(&m[0], "response.incomplete")) && m[2].p != NULL &&
	    m[2].p[0] == '{') {
		fast_final(t, fm);
		return 0;
	}
	return -1;
}

/*
 * A Responses event the turn does not keep, known by its SSE name: not
 * parsed. Most of a turn's bytes are events it ignores (created and
 * in_progress carry the whole response object; deltas come again whole
 * in output_item.done), and parsing JSON is most of a turn's cost. An
 * event without a name is parsed, as every Chat chunk is.
 */
static int
ignored(const struct sg_turn *t, const struct sg_sse_event *ev)
{
	static const char *const kept[] = { "response.output_item.done",
	    "response.completed", "response.incomplete", "response.failed",
	    "error", NULL };
	int i;

	if (t->surface != SG_SURFACE_RESPONSES || ev->name[0] == '\0')
		return 0;
	for (i = 0; kept[i] != NULL; i++)
		if (strcmp(ev->name, kept[i]) == 0)
			return 0;
	return 1;
}

int
sg_turn_event(void *arg, const struct sg_sse_event *ev)
{
	struct sg_turn *t = arg;
	json_t *j;

	if (ev == NULL || !ev->has_data || strcmp(ev->data, "[DONE]") == 0 ||
	    ignored(t, ev))
		return 0;
	if (t->surface == SG_SURFACE_RESPONSES && fast_event(t, ev) == 0)
		return 0;
	if ((j = sg_jparse(ev->data, ev->datalen, 0)) ==
	    NULL || !json_is_object(j)) {
		json_decref(j);
		return 0;
	}
	/* A truthy top-level "error" is an error in either surface. */
	if (json_is_object(json_object_get(j, "error")) &&
	    json_object_get(j, "type") == NULL) {
		if (t->error == NULL)
			set(&t->error, json_object_get(j, "error"));
	} else if (t->surface == SG_SURFACE_CHAT)
		chat_chunk(t, j);
	else
		responses_event(t, j);
	json_decref(j);
	return 0;
}
