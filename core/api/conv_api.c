/*
 * The Conversations API's routes, in OpenAI's shapes: a conversation
 * (ConversationResource), its items (ConversationItemList) paged with
 * limit, after and order, include as OpenAI reads it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_api.h"
#include "include.h"
#include "../state/convo.h"
#include "../state/convs.h"
#include "../../lib/util.h"
#include "../../store/conversations.h"

#define ITEMS_LIMIT	20
#define ITEMS_LIMIT_MAX	100
#define MD_PAIRS	16	/* metadata, as OpenAI bounds it */
#define MD_KEY		64
#define MD_VALUE	512

static int
not_found(struct sg_error *err, const char *id)
{
	return sg_error_set(err, 404, "invalid_request_error", NULL, NULL,
	    "Conversation with id '%s' not found.", id);
}

static int
item_not_found(struct sg_error *err, const char *id)
{
	return sg_error_set(err, 404, "invalid_request_error", NULL, NULL,
	    "Item with id '%s' not found.", id);
}

static int
store_down(struct sg_store *st, struct sg_error *err)
{
	return sg_error_store(err, sg_store_errmsg(st));
}

/* Characters of a UTF-8 string (Jansson's are well formed). */
static size_t
chars(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The body as an object, bounded as a model route's: NULL with err. */
static json_t *
body_of(const struct sg_req *req, struct sg_error *err)
{
	if (sg_http_body_bounded(req, SG_JSON_MAX_VALUES, err) == -1)
		return NULL;
	return sg_http_body_object(req, err);
}

/* metadata (borrowed; NULL or null: none) as text to store in *text (new,
 * NULL for none): 0, or -1 with OpenAI's 400. */
static int
metadata_in(const json_t *md, char **text, struct sg_error *err)
{
	const char *k;
	json_t *v;

	*text = NULL;
	if (md == NULL || json_is_null(md))
		return 0;
	if (!json_is_object(md))
		return sg_error_invalid(err, "metadata", "invalid_type",
		    "Invalid type for 'metadata': expected an object.");
	if (json_object_size(md) > MD_PAIRS)
		return sg_error_invalid(err, "metadata",
		    "object_above_max_properties", "Invalid 'metadata': too "
		    "many properties. Expected an object with at most %d "
		    "properties, but got an object with %zu properties "
		    "instead.", MD_PAIRS, json_object_size(md));
	json_object_foreach((json_t *)md, k, v) {
		if (chars(k) > MD_KEY)
			return sg_error_invalid(err, "metadata",
			    "string_above_max_length", "Invalid 'metadata': "
			    "string too long. Expected a string with maximum "
			    "length %d, but got a string with length %zu "
			    "instead.", MD_KEY, chars(k));
		if (!json_is_string(v))
			return sg_error_invalid(err, "metadata", "invalid_type",
			    "Invalid type for 'metadata.%.64s': expected a "
			    "string.", k);
		if (chars(json_string_value(v)) > MD_VALUE)
			return sg_error_invalid(err, "metadata",
			    "string_above_max_length", "Invalid 'metadata."
			    "%.64s': string too long. Expected a string with "
			    "maximum length %d, but got a string with length "
			    "%zu instead.", k, MD_VALUE,
			    chars(json_string_value(v)));
	}
	if ((*text = json_dumps(md, JSON_COMPACT)) == NULL)
		return sg_error_server(err, 500, "out of memory");
	return 0;
}

/* items (borrowed; absent or null allowed when optional) checked as an
 * array of at most SG_CONVS_ITEMS_MAX: 0, or -1 with err. */
static int
items_shape(const json_t *items, int optional, struct sg_error *err)
{
	if ((items == NULL || json_is_null(items)) && optional)
		return 0;
	if (items == NULL)
		return sg_error_invalid(err, "items",
		    "missing_required_parameter", "Missing required parameter: "
		    "'items'.");
	if (!json_is_array(items))
		return sg_error_invalid(err, "items", "invalid_type", "Invalid "
		    "type for 'items': expected an array of items.");
	if (json_array_size(items) > SG_CONVS_ITEMS_MAX)
		return sg_error_invalid(err, "items", "array_above_max_length",
		    "Invalid 'items': array too long. Expected an array with "
		    "maximum length %d, but got an array with length %zu "
		    "instead.", SG_CONVS_ITEMS_MAX, json_array_size(items));
	return 0;
}

/* New reference: the ConversationResource of tenant's id, or NULL with
 * err. */
static json_t *
load(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_error *err)
{
	struct sg_store_conv c;
	json_t *md, *conv;
	int rc;

	rc = sg_store_conv_get(st, id, req->tenant, &c);
	if (rc != SG_STORE_OK) {
		if (rc == SG_STORE_NOTFOUND)
			not_found(err, id);
		else
			store_down(st, err);
		return NULL;
	}
	md = c.metadata != NULL ? json_loads(c.metadata, 0, NULL) : NULL;
	conv = json_pack("{s:s,s:s,s:I,s:o}", "id", c.id, "object",
	    "conversation", "created_at", (json_int_t)c.created_at, "metadata",
	    json_is_object(md) ? md : json_object());
	if (!json_is_object(md))
		json_decref(md);
	sg_store_conv_clear(&c);
	if (conv == NULL)
		sg_error_server(err, 500, "out of memory");
	return conv;
}

/* Answer body (stolen) with 200. */
static int
answer(struct sg_out *out, const struct sg_req *req, json_t *body)
{
	sg_http_json(out, req, 200, body);
	json_decref(body);
	return 0;
}

/* The list of items kept (borrowed) as this request shows them. */
static json_t *
list_of(const json_t *kept, const struct sg_incl *shown, int more)
{
	json_t *data = json_array(), *it;
	size_t i;

	json_array_foreach(kept, i, it)
		json_array_append_new(data, sg_incl_item(it, NULL, shown));
	return sg_http_list(data, more);
}

static int
create(struct sg_store *st, const struct sg_req *req, struct sg_out *out,
    struct sg_error *err)
{
	json_t *body, *items, *kept = NULL, *ups = NULL, *conv = NULL;
	char id[64], *md = NULL;
	int rc = -1;

	if ((body = body_of(req, err)) == NULL)
		return -1;
	items = json_object_get(body, "items");
	if (metadata_in(json_object_get(body, "metadata"), &md, err) == -1 ||
	    items_shape(items, 1, err) == -1 ||
	    sg_convs_items_in(st, req, json_is_array(items) ? items : NULL,
	    "items", &kept, &ups, err) == -1)
		goto out;
	if (sg_time_id(id, sizeof(id), "conv_", 24) == -1) {
		sg_error_server(err, 500, "no randomness for an id");
		goto out;
	}
	rc = sg_convs_create(st, id, req->tenant, md, kept, ups);
	if (rc != SG_STORE_OK) {
		rc = rc == SG_STORE_ERROR ? store_down(st, err) :
		    sg_error_server(err, 500, "The conversation could not be "
		    "made (out of memory).");
		goto out;
	}
	rc = (conv = load(st, id, req, err)) != NULL ? answer(out, req, conv) :
	    -1;
out:
	free(md);
	json_decref(kept);
	json_decref(ups);
	json_decref(body);
	return rc;
}

static int
get(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	json_t *conv = load(st, id, req, err);

	return conv != NULL ? answer(out, req, conv) : -1;
}

static int
update(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	json_t *body, *conv;
	char *md = NULL;
	int rc = -1;

	if ((body = body_of(req, err)) == NULL)
		return -1;
	if (json_object_get(body, "metadata") == NULL)
		sg_error_invalid(err, "metadata", "missing_required_parameter",
		    "Missing required parameter: 'metadata'.");
	else if (metadata_in(json_object_get(body, "metadata"), &md,
	    err) == 0) {
		rc = sg_store_conv_update(st, id, req->tenant, md);
		if (rc == SG_STORE_OK && (conv = load(st, id, req, err)) != NULL)
			rc = answer(out, req, conv);
		else
			rc = rc == SG_STORE_NOTFOUND ? not_found(err, id) :
			    rc == SG_STORE_OK ? -1 : store_down(st, err);
	}
	free(md);
	json_decref(body);
	return rc;
}

static int
delete(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	int rc = sg_store_conv_delete(st, id, req->tenant);

	if (rc == SG_STORE_NOTFOUND)
		return not_found(err, id);
	if (rc != SG_STORE_OK)
		return store_down(st, err);
	return answer(out, req, json_pack("{s:s,s:s,s:b}", "id", id, "object",
	    "conversation.deleted", "deleted", 1));
}

/* sg_store_conv_items callback: each item as the client sees it. */
static int
collect(void *arg, const struct sg_store_item *it)
{
	json_t *item = json_loads(it->item, 0, NULL);

	if (item != NULL)
		json_array_append_new(arg, item);
	return 0;
}

static int
list(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	struct sg_incl shown;
	char after[256];
	json_t *conv, *all;
	long limit;
	int desc, more, rc;

	if (sg_http_page_args(req, ITEMS_LIMIT, ITEMS_LIMIT_MAX, &limit, &desc,
	    after, sizeof(after), err) == -1 || sg_incl_parse(req, &shown,
	    err) == -1 || (conv = load(st, id, req, err)) == NULL)
		return -1;
	json_decref(conv);
	all = json_array();
	rc = sg_store_conv_items(st, id, after, (int)limit, desc, collect, all,
	    &more);
	if (rc == SG_STORE_OK)
		rc = answer(out, req, list_of(all, &shown, more));
	else if (rc == SG_STORE_NOTFOUND)
		rc = sg_error_invalid(err, "after", "invalid_value", "Invalid "
		    "'after': no item with id '%s' in this conversation.", after);
	else
		rc = store_down(st, err);
	json_decref(all);
	return rc;
}

static int
add(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	struct sg_incl shown;
	json_t *body, *conv, *items, *kept = NULL, *ups = NULL;
	int rc = -1;

	if (sg_incl_parse(req, &shown, err) == -1 ||
	    (conv = load(st, id, req, err)) == NULL)
		return -1;
	json_decref(conv);
	if ((body = body_of(req, err)) == NULL)
		return -1;
	items = json_object_get(body, "items");
	if (items_shape(items, 0, err) == 0 && sg_convs_items_in(st, req,
	    items, "items", &kept, &ups, err) == 0) {
		rc = sg_convs_add(st, id, req->tenant, kept, ups);
		rc = rc == SG_STORE_OK ? answer(out, req, list_of(kept, &shown,
		    0)) : rc == SG_STORE_NOTFOUND ? not_found(err, id) :
		    rc == SG_STORE_ERROR ? store_down(st, err) :
		    sg_error_server(err, 500, "The items could not be added "
		    "(out of memory).");
	}
	json_decref(kept);
	json_decref(ups);
	json_decref(body);
	return rc;
}

/* GET or DELETE one item. */
static int
one_item(struct sg_store *st, enum sg_route route, const char *id,
    const struct sg_req *req, struct sg_out *out, struct sg_error *err)
{
	struct sg_incl shown;
	char item_id[256], *text = NULL;
	json_t *conv, *item;
	int rc;

	if (sg_route_second(req->path, item_id, sizeof(item_id)) == -1)
		return item_not_found(err, "");
	if (sg_incl_parse(req, &shown, err) == -1 ||
	    (conv = load(st, id, req, err)) == NULL)
		return -1;
	if (route == SG_ROUTE_CONV_ITEM_DELETE) {
		rc = sg_store_conv_item_delete(st, id, req->tenant, item_id);
		if (rc == SG_STORE_OK)
			return answer(out, req, conv);
		json_decref(conv);
		return rc == SG_STORE_NOTFOUND ? item_not_found(err, item_id) :
		    store_down(st, err);
	}
	json_decref(conv);
	rc = sg_store_conv_item_get(st, id, req->tenant, item_id, &text);
	if (rc != SG_STORE_OK)
		return rc == SG_STORE_NOTFOUND ? item_not_found(err, item_id) :
		    store_down(st, err);
	item = json_loads(text, 0, NULL);
	free(text);
	if (item == NULL)
		return item_not_found(err, item_id);
	rc = answer(out, req, sg_incl_item(item, NULL, &shown));
	json_decref(item);
	return rc;
}

void
sg_conv_api(struct sg_store *st, enum sg_route route, const char *id,
    const struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;
	int rc = -1;

	sg_error_server(&err, 500, "The conversations failed.");
	switch (route) {
	case SG_ROUTE_CONV_CREATE:
		rc = create(st, req, out, &err);
		break;
	case SG_ROUTE_CONV_GET:
		rc = get(st, id, req, out, &err);
		break;
	case SG_ROUTE_CONV_UPDATE:
		rc = update(st, id, req, out, &err);
		break;
	case SG_ROUTE_CONV_DELETE:
		rc = delete(st, id, req, out, &err);
		break;
	case SG_ROUTE_CONV_ITEM_LIST:
		rc = list(st, id, req, out, &err);
		break;
	case SG_ROUTE_CONV_ITEM_ADD:
		rc = add(st, id, req, out, &err);
		break;
	case SG_ROUTE_CONV_ITEM_GET:
	case SG_ROUTE_CONV_ITEM_DELETE:
		rc = one_item(st, route, id, req, out, &err);
		break;
	default:
		break;
	}
	if (rc == -1 && !out->started)
		sg_http_error(out, req, &err);
}
