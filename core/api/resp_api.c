/*
 * Stored responses over HTTP: GET and DELETE /v1/responses/{id}, and GET
 * /v1/responses/{id}/input_items, in OpenAI's shapes. A response belongs
 * to the key that made it; another key's is not found.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bg_api.h"
#include "resp_api.h"
#include "../../store/background.h"

#define ITEMS_LIMIT_MAX	100
#define ITEMS_LIMIT	20

static int
not_found(struct sg_error *err, const char *id)
{
	return sg_error_set(err, 404, "invalid_request_error", NULL, NULL,
	    "Response with id '%s' not found.", id);
}

static int
store_down(struct sg_store *st, struct sg_error *err)
{
	return sg_error_store(err, sg_store_errmsg(st));
}

/* sg_store_resp_items callback: each item as the client saw it. */
static int
collect(void *arg, const struct sg_store_item *it)
{
	json_t *into = arg, *item = json_loads(it->item, JSON_DECODE_ANY, NULL);

	if (item != NULL)
		json_array_append_new(into, item);
	return 0;
}

/* New reference: tenant's stored response id as it was answered, or NULL
 * with err. */
static json_t *
load(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_error *err)
{
	struct sg_store_resp_row row;
	json_t *resp = NULL, *output;
	int rc;

	rc = sg_store_resp_load(st, id, req->tenant, &row);
	if (rc == SG_STORE_ERROR) {
		store_down(st, err);
		return NULL;
	}
	/* A row from before responses were kept whole only continues. */
	if (rc == SG_STORE_OK && row.body != NULL)
		resp = json_loads(row.body, 0, NULL);
	sg_store_resp_clear(&row);
	if (!json_is_object(resp)) {
		json_decref(resp);
		not_found(err, id);
		return NULL;
	}
	output = json_array();
	if (sg_store_resp_items(st, id, 1, collect, output) != SG_STORE_OK) {
		json_decref(output);
		json_decref(resp);
		store_down(st, err);
		return NULL;
	}
	json_object_set_new(resp, "output", output);
	return resp;
}

static int
get(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	char v[16];
	json_t *resp;
	int rc;

	/* Replaying a stored response as events is not offered: say so
	 * rather than answer JSON to a client that parses a stream. */
	if (sg_http_query(req->uri, "stream", v, sizeof(v)) != 0 &&
	    strcmp(v, "false") != 0)
		return sg_error_invalid(err, "stream", "unsupported_value",
		    "This gateway does not replay a stored response as a "
		    "stream; retrieve it without 'stream'.");
	/* A background job answers as it stands, until it is pruned. */
	if ((rc = sg_bg_get(st, id, req, out, err)) != 0)
		return rc == 1 ? 0 : -1;
	if ((resp = load(st, id, req, err)) == NULL)
		return -1;
	sg_http_json(out, req, 200, resp);
	json_decref(resp);
	return 0;
}

static int
delete(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	json_t *done;
	int rc, bg;

	/* A background job (running: its runner stops at its next call)
	 * and the events kept for a replay go with it. */
	bg = sg_store_bg_delete(st, id, req->tenant);
	if (bg == SG_STORE_ERROR ||
	    sg_store_ev_delete(st, id, req->tenant, NULL) == SG_STORE_ERROR)
		return store_down(st, err);
	rc = sg_store_resp_delete(st, id, req->tenant);
	if (rc == SG_STORE_NOTFOUND && bg == SG_STORE_OK)
		rc = SG_STORE_OK;
	if (rc == SG_STORE_NOTFOUND)
		return not_found(err, id);
	if (rc != SG_STORE_OK)
		return store_down(st, err);
	done = json_pack("{s:s,s:s,s:b}", "id", id, "object", "response",
	    "deleted", 1);
	sg_http_json(out, req, 200, done);
	json_decref(done);
	return 0;
}

static int
input_items(struct sg_store *st, const char *id, const struct sg_req *req,
    struct sg_out *out, struct sg_error *err)
{
	char after[256];
	json_t *resp, *all, *data, *list;
	long limit;
	int desc, more;

	if (sg_http_page_args(req, ITEMS_LIMIT, ITEMS_LIMIT_MAX, &limit, &desc,
	    after, sizeof(after), err) == -1 ||
	    (resp = load(st, id, req, err)) == NULL)
		return -1;
	json_decref(resp);
	all = json_array();
	if (sg_store_resp_items(st, id, 0, collect, all) != SG_STORE_OK) {
		json_decref(all);
		return store_down(st, err);
	}
	data = sg_http_page(all, limit, desc, after, &more);
	list = sg_http_list(data, more);
	sg_http_json(out, req, 200, list);
	json_decref(list);
	json_decref(all);
	return 0;
}

void
sg_resp_api(struct sg_store *st, enum sg_route route, const char *id,
    const struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;
	int rc = -1;

	sg_error_server(&err, 500, "The stored responses failed.");
	if (route == SG_ROUTE_RESP_GET)
		rc = get(st, id, req, out, &err);
	else if (route == SG_ROUTE_RESP_DELETE)
		rc = delete(st, id, req, out, &err);
	else if (route == SG_ROUTE_RESP_ITEMS)
		rc = input_items(st, id, req, out, &err);
	else if (route == SG_ROUTE_RESP_CANCEL)
		rc = sg_bg_cancel(st, id, req, out, &err);
	if (rc == -1 && !out->started)
		sg_http_error(out, req, &err);
}
