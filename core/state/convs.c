#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convo_int.h"
#include "../../lib/log.h"
#include "../../lib/util.h"
#include "../../store/conversations.h"
#include "../../lib/jdump.h"

static int
is_type(const json_t *item, const char *type)
{
	const char *t = json_string_value(json_object_get(item, "type"));

	return t != NULL && strcmp(t, type) == 0;
}

const char *
sg_convs_id(const json_t *body)
{
	const json_t *v = json_object_get(body, "conversation");

	if (json_is_object(v))
		v = json_object_get(v, "id");
	return json_string_value(v);
}

/* An id for an item given without one, by its kind, as OpenAI's. */
static void
mint(json_t *item)
{
	static const char *const kinds[][2] = {
		{ "message", "msg_" }, { "function_call", "fc_" },
		{ "function_call_output", "fco_" },
		{ "code_interpreter_call", "ci_" }, { "reasoning", "rs_" },
	};
	const char *prefix = json_object_get(item, "type") == NULL ? "msg_" :
	    "item_";
	char id[48];
	size_t i;

	if (json_is_string(json_object_get(item, "id")))
		return;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (is_type(item, kinds[i][0]))
			prefix = kinds[i][1];
	if (sg_time_id(id, sizeof(id), prefix, 16) == 0)
		json_object_set_new(item, "id", json_string(id));
}

/* A message's output_text parts with the members OpenAI lists them with
 * (annotations, logprobs), when the client left them out. */
static void
output_parts(json_t *item)
{
	json_t *part;
	size_t i;

	if (!is_type(item, "message"))
		return;
	json_array_foreach(json_object_get(item, "content"), i, part) {
		if (!is_type(part, "output_text"))
			continue;
		if (json_object_get(part, "annotations") == NULL)
			json_object_set_new(part, "annotations", json_array());
		if (json_object_get(part, "logprobs") == NULL)
			json_object_set_new(part, "logprobs", json_array());
	}
}

/* An item_reference to one of the key's stored items: that item, and
 * what the upstream saw for it. */
static int
referenced(struct sg_store *st, const struct sg_req *req, const json_t *it,
    const char *param, json_t **client, json_t **up, struct sg_error *err)
{
	const char *id = json_string_value(json_object_get(it, "id"));
	char *item = NULL, *upstream = NULL;
	int rc;

	*client = *up = NULL;
	rc = id != NULL ? sg_store_item_find(st, id, req->tenant, &item,
	    &upstream) : SG_STORE_NOTFOUND;
	if (rc == SG_STORE_ERROR)
		return sg_error_store(err, sg_store_errmsg(st));
	if (rc == SG_STORE_OK) {
		*client = json_loads(item, 0, NULL);
		*up = json_loads(upstream, 0, NULL);
	}
	free(item);
	free(upstream);
	if (rc == SG_STORE_OK && json_is_object(*client) && json_is_array(*up))
		return 0;
	json_decref(*client);
	json_decref(*up);
	*client = *up = NULL;
	return sg_error_invalid(err, param, NULL, "Item with id '%s' not found.",
	    id != NULL ? id : "");
}

int
sg_convs_items_in(struct sg_store *st, const struct sg_req *req,
    const json_t *items, const char *param, json_t **kept, json_t **ups,
    struct sg_error *err)
{
	const json_t *it;
	json_t *client = NULL, *up = NULL, *copy;
	size_t i;

	*kept = json_array();
	*ups = json_array();
	json_array_foreach(items, i, it) {
		if (!json_is_object(it) || (!json_is_string(json_object_get(it,
		    "type")) && (json_object_get(it, "type") != NULL ||
		    !json_is_string(json_object_get(it, "role"))))) {
			sg_error_invalid(err, param, "invalid_type", "Invalid "
			    "'%s[%zu]': expected an item object with a 'type'.",
			    param, i);
			goto fail;
		}
		if (is_type(it, "item_reference")) {
			if (referenced(st, req, it, param, &client, &up, err) == -1)
				goto fail;
		} else {
			copy = json_deep_copy(it);
			mint(copy);
			client = sg_conv_client_form(copy);
			json_decref(copy);
			output_parts(client);
			if (is_type(client, "function_call") &&
			    json_object_get(client, "status") == NULL)
				json_object_set_new(client, "status",
				    json_string("completed"));
			/* A code call becomes its call and output pair when the
			 * conversation goes on: the tool's name is known then. */
			up = is_type(it, "code_interpreter_call") ? json_null() :
			    json_pack("[O]", it);
		}
		json_array_append_new(*kept, client);
		json_array_append_new(*ups, up);
	}
	return 0;
fail:
	json_decref(*kept);
	json_decref(*ups);
	*kept = *ups = NULL;
	return -1;
}

const char *
sg_convs_container(const json_t *items)
{
	const json_t *it;
	const char *c = NULL, *v;
	size_t i;

	json_array_foreach(items, i, it)
		if (is_type(it, "code_interpreter_call") && (v =
		    json_string_value(json_object_get(it, "container_id"))) !=
		    NULL && strlen(v) < 48)
			c = v;
	return c;
}

/* A string with no NUL inside, or NULL. */
static const char *
whole(const json_t *v)
{
	const char *s = json_string_value(v);

	return s != NULL && strlen(s) == json_string_length(v) ? s : NULL;
}

struct sg_store_item *
sg_conv_dump(const json_t *clients, const json_t *ups, const char *text,
    const struct sg_jdump_at *at, size_t *n)
{
	struct sg_store_item *out;
	const json_t *it, *up;
	json_t *one;
	size_t i;

	*n = json_array_size(clients);
	if ((out = calloc(*n + 1, sizeof(*out))) == NULL) {
		*n = 0;
		return NULL;
	}
	json_array_foreach(clients, i, it) {
		up = json_array_get(ups, i);
		out[i].id = whole(json_object_get(it, "id"));
		out[i].item = text != NULL ? strndup(text + at[i].start,
		    at[i].end - at[i].start) : sg_jdump_text(it, NULL);
		/* null: none kept (made when needed); none given: the item. */
		if (json_is_null(up))
			continue;
		one = up != NULL ? NULL : json_pack("[O]", it);
		out[i].upstream = sg_jdump_text(up != NULL ? up : one, NULL);
		json_decref(one);
		if (out[i].upstream == NULL) {
			free((char *)out[i].item);
			out[i].item = NULL;
		}
	}
	return out;
}

int
sg_conv_dump_ok(const struct sg_store_item *items, size_t n)
{
	size_t i;

	if (items == NULL)
		return n == 0;
	for (i = 0; i < n; i++)
		if (items[i].item == NULL)
			return 0;
	return 1;
}

void
sg_conv_dump_free(struct sg_store_item *items, size_t n)
{
	size_t i;

	for (i = 0; items != NULL && i < n; i++) {
		free((char *)items[i].item);
		free((char *)items[i].upstream);
	}
	free(items);
}

void
sg_convs_sandbox(struct sg_store *st, const char *tenant, const char *id,
    char sandbox[48])
{
	struct sg_store_conv c;

	sandbox[0] = '\0';
	if (sg_store_conv_get(st, id, tenant, &c) == SG_STORE_OK) {
		sg_copy(sandbox, 48, c.sandbox_id);
		sg_store_conv_clear(&c);
	}
}

static int
put(struct sg_store *st, int create, const char *id, const char *tenant,
    const char *metadata, const json_t *kept, const json_t *ups)
{
	struct sg_store_item *items;
	size_t n;
	int rc = SG_STORE_FULL;

	items = sg_conv_dump(kept, ups, NULL, NULL, &n);
	if (sg_conv_dump_ok(items, n))
		rc = create ? sg_store_conv_create(st, id, tenant, metadata,
		    items, n, sg_convs_container(kept)) :
		    sg_store_conv_append(st, id, tenant, items, n,
		    sg_convs_container(kept));
	sg_conv_dump_free(items, n);
	return rc;
}

int
sg_convs_create(struct sg_store *st, const char *id, const char *tenant,
    const char *metadata, const json_t *kept, const json_t *ups)
{
	return put(st, 1, id, tenant, metadata, kept, ups);
}

int
sg_convs_add(struct sg_store *st, const char *id, const char *tenant,
    const json_t *kept, const json_t *ups)
{
	return put(st, 0, id, tenant, NULL, kept, ups);
}

/* ---- the loop's side: a Responses request naming a conversation ---- */

int
sg_convs_take(struct sg_conv *c, json_t *work, struct sg_error *err)
{
	const json_t *v = json_object_get(work, "conversation");
	const json_t *prev = json_object_get(work, "previous_response_id");
	struct sg_store_conv row;
	const char *id = sg_convs_id(work);
	int rc;

	if (v == NULL || json_is_null(v)) {
		json_object_del(work, "conversation");
		return 0;
	}
	if (id == NULL)
		return sg_error_invalid(err, "conversation", "invalid_type",
		    "Invalid type for 'conversation': expected a string or an "
		    "object with an 'id'.");
	if (prev != NULL && !json_is_null(prev))
		return sg_error_invalid(err, NULL, "mutually_exclusive_parameters",
		    "Mutually exclusive parameters: Ensure you are only "
		    "providing one of: 'previous_response_id' or "
		    "'conversation'.");
	rc = strlen(id) < sizeof(c->conv) && c->store != NULL ?
	    sg_store_conv_get(c->store, id, c->req->tenant, &row) :
	    SG_STORE_NOTFOUND;
	if (rc == SG_STORE_ERROR)
		return sg_error_store(err, sg_store_errmsg(c->store));
	if (rc != SG_STORE_OK)
		return sg_error_set(err, 404, "invalid_request_error", NULL,
		    "conversation", "Conversation with id '%s' not found.", id);
	sg_store_conv_clear(&row);
	sg_copy(c->conv, sizeof(c->conv), id);
	json_object_del(work, "conversation");
	return 0;
}

struct loading {
	struct sg_conv	*c;
	json_t		*items;	/* [item text, upstream text or null]... */
	struct sg_error	*err;
	int		 over;
};

/* sg_store_conv_items callback: the item kept for later (no store call
 * while the rows are read), counted against the bound. */
static int
collect(void *arg, const struct sg_store_item *it)
{
	struct loading *l = arg;

	if (sg_conv_grow(l->c, it->upstream != NULL ? it->upstream : it->item,
	    l->err) == -1) {
		l->over = 1;
		return -1;
	}
	json_array_append_new(l->items, json_pack("[s,s?]", it->item,
	    it->upstream));
	return 0;
}

/* One kept item's upstream items onto head. */
static int
unfold(struct sg_conv *c, const json_t *pair, json_t *head, const char *tool,
    struct sg_error *err)
{
	const char *upstream = json_string_value(json_array_get(pair, 1));
	json_t *item = NULL, *client = NULL, *up = NULL;
	int rc = 0;

	if (upstream != NULL)
		up = json_loads(upstream, 0, NULL);
	else if ((item = json_loads(json_string_value(json_array_get(pair, 0)),
	    0, NULL)) != NULL)
		rc = sg_conv_item_up(c, item, tool, &client, &up, err);
	if (rc == 0 && json_is_array(up))
		json_array_extend(head, up);
	json_decref(item);
	json_decref(client);
	json_decref(up);
	return rc;
}

int
sg_convs_history(struct sg_conv *c, json_t *head, const char *tool,
    struct sg_error *err)
{
	struct loading l = { c, json_array(), err, 0 };
	const json_t *pair;
	size_t i;
	int more, rc;

	rc = sg_store_conv_items(c->store, c->conv, NULL, 0, 0, collect, &l,
	    &more);
	if (rc == SG_STORE_OK && !l.over)
		json_array_foreach(l.items, i, pair)
			if ((rc = unfold(c, pair, head, tool, err)) == -1)
				break;
	json_decref(l.items);
	if (l.over || rc == -1)
		return -1;
	return rc == SG_STORE_OK ? 0 : sg_error_store(err,
	    sg_store_errmsg(c->store));
}

/*
 * A code call answered without include's code_interpreter_call.outputs
 * (outputs null) keeps, in the conversation, the logs its output gave the
 * model (up: what the upstream saw for it): the same text include would
 * have shown, so a later listing with include has it. Its images were not
 * kept.
 */
static void
keep_logs(json_t *item, const json_t *up)
{
	const json_t *u;
	const char *logs = NULL;
	size_t i;

	if (!is_type(item, "code_interpreter_call") ||
	    !json_is_null(json_object_get(item, "outputs")))
		return;
	json_array_foreach(up, i, u)
		if (is_type(u, "function_call_output"))
			logs = json_string_value(json_object_get(u, "output"));
	if (logs != NULL)
		json_object_set_new(item, "outputs", json_pack("[{s:s,s:s}]",
		    "type", "logs", "logs", logs));
}

void
sg_convs_append(struct sg_conv *c, const json_t *answer,
    const char *sandbox_id)
{
	const json_t *out = json_object_get(answer, "output"), *it;
	json_t *kept = json_array(), *ups = json_array(), *one;
	struct sg_store_item *items;
	size_t i, n;
	int rc = SG_STORE_FULL;

	/* The input as it was kept (ids minted, as listed), then the
	 * output. */
	json_array_foreach(c->input, i, it) {
		one = json_deep_copy(it);
		if (json_is_object(one))
			mint(one);
		output_parts(one);
		json_array_append_new(kept, one);
		json_array_append(ups, json_array_get(c->input_up, i));
	}
	json_array_foreach(out, i, it) {
		one = json_copy((json_t *)it);
		if (json_is_object(one))
			mint(one);
		keep_logs(one, json_array_get(c->output_up, i));
		json_array_append_new(kept, one);
		json_array_append(ups, json_array_get(c->output_up, i));
	}
	items = sg_conv_dump(kept, ups, NULL, NULL, &n);
	if (sg_conv_dump_ok(items, n))
		rc = sg_store_conv_append(c->store, c->conv, c->req->tenant, items,
		    n, sandbox_id);
	if (rc != SG_STORE_OK)
		sg_log("sandgate: %s: cannot add to conversation %s: %s",
		    c->req->id, c->conv, rc == SG_STORE_NOTFOUND ? "it was "
		    "deleted" : rc == SG_STORE_ERROR ? sg_store_errmsg(c->store) :
		    "out of memory");
	sg_conv_dump_free(items, n);
	json_decref(kept);
	json_decref(ups);
}
