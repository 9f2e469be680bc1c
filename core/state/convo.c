#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convo.h"
#include "convo_int.h"
#include "../../lib/log.h"
#include "../../lib/util.h"
#include "../../lib/jdump.h"

/* Responses walked back for one history: a bound on a request's work. */
#define HISTORY_MAX	1000

static int
is_type(const json_t *item, const char *type)
{
	const char *t = json_string_value(json_object_get(item, "type"));

	return t != NULL && strcmp(t, type) == 0;
}

/* A string with no NUL inside: the store's lookups would cut it short. */
static const char *
whole(const json_t *v)
{
	const char *s = json_string_value(v);

	return s != NULL && strlen(s) == json_string_length(v) ? s : NULL;
}

static int
store_down(struct sg_conv *c, struct sg_error *err)
{
	return sg_error_store(err, sg_store_errmsg(c->store));
}

/*
 * JSON text of the conversation, read from the store: 0, or -1 with
 * OpenAI's context error once past c->max_bytes or SG_JSON_MAX_VALUES.
 * Counted before it is parsed, so a long history is refused having cost
 * at most that much.
 */
int
sg_conv_grow(struct sg_conv *c, const char *text, struct sg_error *err)
{
	size_t n = strlen(text);
	int depth;

	c->bytes += n;
	c->values += sg_json_size(text, n, &depth);
	if (c->bytes <= c->max_bytes && c->values <= SG_JSON_MAX_VALUES)
		return 0;
	return sg_error_invalid(err, "input", "context_length_exceeded",
	    "Your input exceeds the context window of this model. Please "
	    "adjust your input and try again. (With what it continues, this "
	    "conversation is over what this gateway carries: %zu bytes, %d "
	    "JSON values.)", c->max_bytes, SG_JSON_MAX_VALUES);
}

int
sg_conv_needed(struct sg_store *st, const struct sg_req *req,
    const json_t *body)
{
	const json_t *it;
	const char *prev = whole(json_object_get(body, "previous_response_id"));
	char up[256];
	size_t i;

	if (!json_is_null(json_object_get(body, "conversation")) &&
	    json_object_get(body, "conversation") != NULL)
		return 1;
	json_array_foreach(json_object_get(body, "input"), i, it)
		if (is_type(it, "item_reference") ||
		    is_type(it, "code_interpreter_call"))
			return 1;
	return prev != NULL && st != NULL && sg_store_resp_get(st, prev,
	    req->tenant, up, sizeof(up), NULL, 0) == SG_STORE_OK;
}

/*
 * New reference: an input item as input_items lists it. OpenAI gives every
 * input item an id and a message its content parts; the id minted here is
 * one a later item_reference resolves.
 */
json_t *
sg_conv_client_form(const json_t *it)
{
	json_t *c = json_copy((json_t *)it), *content;
	const char *role, *prefix = "item_";
	char id[48];
	int msg;

	if (!json_is_object(c))
		return c;
	role = json_string_value(json_object_get(c, "role"));
	msg = is_type(c, "message") || (json_object_get(c, "type") == NULL &&
	    role != NULL);
	if (msg) {
		json_object_set_new(c, "type", json_string("message"));
		prefix = "msg_";
	} else if (is_type(c, "function_call_output"))
		prefix = "fco_";
	content = json_object_get(c, "content");
	if (msg && json_is_string(content))
		json_object_set_new(c, "content", role != NULL && strcmp(role,
		    "assistant") == 0 ? json_pack("[{s:s,s:O,s:[]}]", "type",
		    "output_text", "text", content, "annotations") :
		    json_pack("[{s:s,s:O}]", "type", "input_text", "text", content));
	if (json_object_get(c, "status") == NULL && (msg ||
	    is_type(c, "function_call_output")))
		json_object_set_new(c, "status", json_string("completed"));
	if (!json_is_string(json_object_get(c, "id")) &&
	    sg_time_id(id, sizeof(id), prefix, 16) == 0)
		json_object_set_new(c, "id", json_string(id));
	return c;
}

/* One input item: as the client saw it, and the upstream's items for it
 * (an array). Both stolen. */
static void
add_input(struct sg_conv *c, json_t *client, json_t *up)
{
	json_array_append_new(c->input, client);
	json_array_append_new(c->input_up, up);
}

/* The text a replayed call's outputs gave the model, as near as the
 * client kept it. New reference. */
static json_t *
replayed_output(const json_t *item)
{
	const json_t *outs = json_object_get(item, "outputs"), *o;
	json_t *text = NULL;
	size_t i;

	json_array_foreach(outs, i, o)
		if (text == NULL && json_is_string(json_object_get(o, "logs")))
			text = json_copy(json_object_get(o, "logs"));
	return text != NULL ? text : json_string(json_is_array(outs) ?
	    "(no output)" : "(output not kept)");
}

/* New reference: the function call and output pair the upstream expects
 * for a code_interpreter_call sandgate no longer holds (or never did). */
static json_t *
replayed_pair(const json_t *it, const char *id, const char *tool)
{
	json_t *args, *pair;
	char *a, call[64];

	args = json_pack("{s:o}", "code", json_is_string(json_object_get(it,
	    "code")) ? json_copy(json_object_get(it, "code")) : json_string(""));
	a = sg_jdump_text(args, NULL);
	json_decref(args);
	/* The client's id is sandgate's, not a call id the upstream issued;
	 * derived, so the same replay reads the same (prompt caches). */
	snprintf(call, sizeof(call), "call_%.48s", strncmp(id, "ci_", 3) == 0 ?
	    id + 3 : id);
	pair = json_pack("[{s:s,s:s,s:s,s:s},{s:s,s:s,s:o}]", "type",
	    "function_call", "call_id", call, "name", tool, "arguments",
	    a != NULL ? a : "{}", "type", "function_call_output", "call_id",
	    call, "output", replayed_output(it));
	free(a);
	return pair;
}

/* The upstream's items stored for item_id of this tenant, or NULL; *rc
 * SG_STORE_FULL (err filled) when they would pass the bound. */
static json_t *
stored_up(struct sg_conv *c, const char *item_id, json_t **client, int *rc,
    struct sg_error *err)
{
	char *item = NULL, *up = NULL;
	json_t *u = NULL;

	*client = NULL;
	*rc = item_id != NULL ? sg_store_item_find(c->store, item_id,
	    c->req->tenant, &item, &up) : SG_STORE_NOTFOUND;
	if (*rc == SG_STORE_OK && sg_conv_grow(c, up, err) == -1)
		*rc = SG_STORE_FULL;
	if (*rc == SG_STORE_OK) {
		u = json_loads(up, 0, NULL);
		*client = json_loads(item, 0, NULL);
		if (!json_is_array(u) || *client == NULL) {
			json_decref(u);
			json_decref(*client);
			*client = u = NULL;
			*rc = SG_STORE_NOTFOUND;
		}
	}
	free(item);
	free(up);
	return u;
}

/*
 * An item_reference to an item sandgate answered becomes it; one sandgate
 * never saw passes on (the upstream's own). Another key's, or a code call
 * sandgate minted and no longer holds, was never the upstream's.
 */
static int
reference(struct sg_conv *c, const json_t *it, json_t **client, json_t **up,
    struct sg_error *err)
{
	const json_t *v = json_object_get(it, "id");
	const char *id = whole(v);
	int rc;

	*up = stored_up(c, id, client, &rc, err);
	if (rc == SG_STORE_OK)
		return 0;
	if (rc == SG_STORE_FULL)
		return -1;
	if (rc == SG_STORE_ERROR)
		return store_down(c, err);
	if (rc == SG_STORE_THEIRS || id == NULL || strncmp(id, "ci_", 3) == 0)
		return sg_error_invalid(err, "input", NULL, "Item with id '%s' "
		    "not found.", json_is_string(v) ? json_string_value(v) : "");
	*client = json_incref((json_t *)it);
	*up = json_pack("[O]", it);
	return 0;
}

/* A replayed code_interpreter_call: the exact pair the upstream saw when
 * sandgate holds it, else one made from what the client kept. */
static int
replay_call(struct sg_conv *c, const json_t *it, const char *tool,
    json_t **client, json_t **up, struct sg_error *err)
{
	const char *id = whole(json_object_get(it, "id"));
	json_t *stored;
	int rc;

	*up = stored_up(c, id, &stored, &rc, err);
	json_decref(stored);
	if (rc == SG_STORE_FULL)
		return -1;
	*client = json_incref((json_t *)it);
	if (*up == NULL)
		*up = replayed_pair(it, id != NULL ? id : "ci_replayed", tool);
	return 0;
}

int
sg_conv_item_up(struct sg_conv *c, const json_t *it, const char *tool,
    json_t **client, json_t **up, struct sg_error *err)
{
	*client = *up = NULL;
	if (is_type(it, "item_reference"))
		return reference(c, it, client, up, err);
	if (is_type(it, "code_interpreter_call"))
		return replay_call(c, it, tool, client, up, err);
	*client = sg_conv_client_form(it);
	*up = json_pack("[O]", it);
	return 0;
}

static int
take_input(struct sg_conv *c, const json_t *in, const char *tool,
    struct sg_error *err)
{
	const json_t *it;
	json_t *client, *up;
	size_t i;

	if (json_is_string(in)) {
		json_t *msg = json_pack("{s:s,s:O}", "role", "user", "content",
		    in);

		add_input(c, sg_conv_client_form(msg), json_pack("[O]", msg));
		json_decref(msg);
		return 0;
	}
	json_array_foreach(in, i, it) {
		if (sg_conv_item_up(c, it, tool, &client, &up, err) == -1)
			return -1;
		add_input(c, client, up);
	}
	return 0;
}

struct loading {
	struct sg_conv	*c;
	json_t		*head;
	struct sg_error	*err;
	int		 over;	/* past the bound: err says so */
};

/* sg_store_resp_items callback: a stored item's upstream items into
 * l->head, while the conversation stays within its bound. */
static int
add_up(void *arg, const struct sg_store_item *it)
{
	struct loading *l = arg;
	json_t *up, *x;
	size_t i;

	if (sg_conv_grow(l->c, it->upstream, l->err) == -1) {
		l->over = 1;
		return -1;
	}
	up = json_loads(it->upstream, 0, NULL);
	json_array_foreach(up, i, x)
		json_array_append(l->head, x);
	json_decref(up);
	return 0;
}

/*
 * The whole conversation up to and including response id, as the upstream
 * saw it, into head. A response deleted or expired ends the walk: the
 * history starts after it. One past the bound is refused, the store left
 * as it is.
 */
static int
history(struct sg_conv *c, const char *id, json_t *head, struct sg_error *err)
{
	struct sg_store_resp_row row;
	struct loading l = { c, head, err, 0 };
	char (*chain)[64];
	size_t n = 0, i;
	int rc = SG_STORE_OK;

	if ((chain = malloc(HISTORY_MAX * sizeof(*chain))) == NULL)
		return sg_error_server(err, 500, "out of memory");
	sg_copy(chain[0], sizeof(chain[0]), id);
	while (n < HISTORY_MAX) {
		rc = sg_store_resp_load(c->store, chain[n], c->req->tenant, &row);
		if (rc != SG_STORE_OK)
			break;
		n++;
		if (row.prev == NULL || n == HISTORY_MAX ||
		    strlen(row.prev) >= sizeof(chain[0])) {
			sg_store_resp_clear(&row);
			break;
		}
		sg_copy(chain[n], sizeof(chain[0]), row.prev);
		sg_store_resp_clear(&row);
	}
	for (i = n; rc != SG_STORE_ERROR && !l.over && i-- > 0;)
		if (sg_store_resp_items(c->store, chain[i], 0, add_up,
		    &l) != SG_STORE_OK || (!l.over &&
		    sg_store_resp_items(c->store, chain[i], 1, add_up, &l) !=
		    SG_STORE_OK))
			rc = SG_STORE_ERROR;
	free(chain);
	if (l.over)
		return -1;
	return rc == SG_STORE_ERROR ? store_down(c, err) : 0;
}

/* The stored outputs the upstream waits for (row's pending) into head. */
static void
add_pending(const char *pending, json_t *head)
{
	json_t *p = pending != NULL ? json_loads(pending, 0, NULL) : NULL;

	if (json_is_array(p))
		json_array_extend(head, p);
	json_decref(p);
}

/*
 * previous_response_id names one of this key's responses: the upstream
 * continues from its own id when it keeps state and holds that one, else
 * it gets the history. An upstream id relayed to this key goes on as it
 * is. Anything else is not found.
 */
static int
continue_from(struct sg_conv *c, const struct sg_cfg_model *m, json_t *work,
    json_t *head, struct sg_error *err)
{
	const json_t *v = json_object_get(work, "previous_response_id");
	const char *prev = whole(v);
	struct sg_store_resp_row row;
	int rc;

	if (!json_is_string(v))
		return 0;
	rc = prev != NULL ? sg_store_resp_load(c->store, prev, c->req->tenant,
	    &row) : SG_STORE_NOTFOUND;
	if (rc == SG_STORE_OK) {
		sg_copy(c->prev, sizeof(c->prev), prev);
		if (m->state == SG_STATE_UPSTREAM && c->upstream_keeps &&
		    row.upstream_id != NULL && row.upstream_id[0] != '\0') {
			json_object_set_new(work, "previous_response_id",
			    json_string(row.upstream_id));
			add_pending(row.pending, head);
		} else {
			/* prev goes with the member: the copy in c->prev stays. */
			json_object_del(work, "previous_response_id");
			rc = history(c, c->prev, head, err);
		}
		sg_store_resp_clear(&row);
		return rc == SG_STORE_OK ? 0 : -1;
	}
	if (rc == SG_STORE_NOTFOUND && prev != NULL)
		rc = sg_store_relayed_has(c->store, prev, c->req->tenant,
		    m->api_base);
	if (rc == SG_STORE_NOTFOUND)
		return sg_error_invalid(err, "previous_response_id",
		    "previous_response_not_found", "Previous response with id "
		    "'%s' not found.", json_string_value(v));
	return rc == SG_STORE_OK ? 0 : store_down(c, err);
}

json_t *
sg_conv_upitem(const struct sg_conv *c, const json_t *item)
{
	json_t *copy;

	if (c->upstream_keeps || json_object_get(item, "id") == NULL ||
	    (is_type(item, "reasoning") &&
	    json_is_string(json_object_get(item, "encrypted_content"))))
		return json_incref((json_t *)item);
	copy = json_copy((json_t *)item);
	json_object_del(copy, "id");
	return copy;
}

int
sg_conv_begin(struct sg_conv *c, struct sg_store *st,
    const struct sg_cfg_model *m, const struct sg_req *req, json_t *work,
    const char *tool, size_t max_bytes, struct sg_error *err)
{
	const json_t *in = json_object_get(work, "input"), *ups, *it;
	json_t *head, *all;
	size_t i, j;

	memset(c, 0, sizeof(*c));
	c->store = st;
	c->req = req;
	c->input = json_array();
	c->input_up = json_array();
	c->output_up = json_array();
	c->bytes = req->body_len;
	c->max_bytes = max_bytes;
	c->keep = !json_is_false(json_object_get(work, "store"));
	/* A conversation's history is the gateway's, on any upstream. */
	if (sg_convs_take(c, work, err) == -1)
		return -1;
	if (m->state == SG_STATE_GATEWAY || c->conv[0] != '\0')
		json_object_set_new(work, "store", json_false());
	c->upstream_keeps = !json_is_false(json_object_get(work, "store"));
	if (take_input(c, in, tool, err) == -1)
		return -1;
	head = json_array();
	if ((c->conv[0] != '\0' ? sg_convs_history(c, head, tool, err) :
	    continue_from(c, m, work, head, err)) == -1) {
		json_decref(head);
		return -1;
	}
	/* The upstream gets the history, then this request's input. */
	all = json_array();
	json_array_foreach(head, i, it)
		json_array_append_new(all, sg_conv_upitem(c, it));
	json_array_foreach(c->input_up, i, ups)
		json_array_foreach(ups, j, it)
			json_array_append_new(all, sg_conv_upitem(c, it));
	json_decref(head);
	if (in != NULL || json_array_size(all) > 0)
		json_object_set_new(work, "input", all);
	else
		json_decref(all);
	return 0;
}

void
sg_conv_output(struct sg_conv *c, json_t *upstream_items)
{
	json_array_append_new(c->output_up, upstream_items);
}

void
sg_conv_pending(struct sg_conv *c, json_t *outputs)
{
	json_decref(c->pending);
	c->pending = outputs;
}

/* New text: the answer's, with its output array's bytes (arr) as []. */
static char *
head_text(const struct sg_buf *t, const struct sg_jdump_at *arr)
{
	size_t cut = arr->end - arr->start;
	char *h;

	if (cut == 0)
		return strdup(t->p);
	if ((h = malloc(t->len - cut + 3)) == NULL)
		return NULL;
	memcpy(h, t->p, arr->start);
	memcpy(h + arr->start, "[]", 2);
	memcpy(h + arr->start + 2, t->p + arr->end, t->len - arr->end + 1);
	return h;
}

/* The answer as t holds it: its output array at arr, its items at at. */
static void
store(struct sg_conv *c, const json_t *answer, const struct sg_buf *t,
    const struct sg_jdump_at *arr, const struct sg_jdump_at *at,
    const char *upstream_id, const char *sandbox_id)
{
	struct sg_store_resp r = { 0 };
	struct sg_store_item *in, *out;
	size_t nin, nout;
	int rc = SG_STORE_ERROR;

	r.id = whole(json_object_get(answer, "id"));
	r.tenant = c->req->tenant;
	r.model = json_string_value(json_object_get(answer, "model"));
	/* An id the upstream was told not to keep cannot be continued. */
	r.upstream_id = c->upstream_keeps && upstream_id != NULL ? upstream_id :
	    "";
	r.sandbox_id = sandbox_id;
	r.prev = c->prev[0] != '\0' ? c->prev : NULL;
	/* Stored without its output (the items hold it); the member stays,
	 * so a retrieved answer has OpenAI's order. */
	r.body = head_text(t, arr);
	r.pending = c->pending != NULL ? sg_jdump_text(c->pending, NULL) :
	    NULL;
	in = sg_conv_dump(c->input, c->input_up, NULL, NULL, &nin);
	out = sg_conv_dump(json_object_get(answer, "output"), c->output_up,
	    t->p, at, &nout);
	if (r.id != NULL && r.model != NULL && r.body != NULL &&
	    sg_conv_dump_ok(in, nin) && sg_conv_dump_ok(out, nout) &&
	    (c->pending == NULL || r.pending != NULL))
		rc = sg_store_resp_save(c->store, &r, in, nin, out, nout);
	if (rc != SG_STORE_OK)
		sg_log("sandgate: %s: cannot store response %s: %s",
		    c->req->id, r.id != NULL ? r.id : "?", rc == SG_STORE_ERROR &&
		    r.body != NULL ? sg_store_errmsg(c->store) : "out of memory");
	sg_conv_dump_free(in, nin);
	sg_conv_dump_free(out, nout);
	free((char *)r.body);
	free((char *)r.pending);
}

void
sg_conv_save(struct sg_conv *c, const json_t *answer, const char *upstream_id,
    const char *sandbox_id, struct sg_buf *text)
{
	struct sg_buf own = { 0 }, *t = text != NULL ? text : &own;
	struct sg_jdump_at arr, *at;
	int keep = c->keep && c->store != NULL;

	if (c->conv[0] != '\0' && c->store != NULL)
		sg_convs_append(c, answer, sandbox_id);
	if (!keep && text == NULL)
		return;
	t->len = 0;
	/* Written once: the client's text, and the stored rows cut from it. */
	at = calloc(json_array_size(json_object_get(answer, "output")) + 1,
	    sizeof(*at));
	if (at == NULL || sg_jdump_marked(t, answer, "output", &arr, at) ==
	    -1) {
		if (keep)
			sg_log("sandgate: %s: cannot store response: out of "
			    "memory", c->req->id);
	} else if (keep)
		store(c, answer, t, &arr, at, upstream_id, sandbox_id);
	free(at);
	free(own.p);
}

void
sg_conv_free(struct sg_conv *c)
{
	json_decref(c->input);
	json_decref(c->input_up);
	json_decref(c->output_up);
	json_decref(c->pending);
	c->input = c->input_up = c->output_up = c->pending = NULL;
}
