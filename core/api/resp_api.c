/*
 * Stored responses over HTTP: GET and DELETE /v1/responses/{id}, and GET
 * /v1/responses/{id}/input_items, in OpenAI's shapes. A response belongs
 * to the key that made it; another key's is not found. GET with stream
 * replays its events (resp_stream.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bg_api.h"
#include "include.h"
#include "resp_api.h"
#include "resp_stream.h"
#include "../../store/background.h"

#define ITEMS_LIMIT_MAX	100
#define ITEMS_LIMIT	20

static int
store_down(struct sg_store *st, struct sg_error *err)
{
	return sg_error_store(err, sg_store_errmsg(st));
}

struct collect {
	json_t			*into;
	const struct sg_incl	*incl;	/* NULL: as kept */
};

/* sg_store_resp_items callback: each item as the client saw it, or as
 * the request's include shows it. */
static int
collect(void *arg, const struct sg_store_item *it)
{
	struct collect *c = arg;
	json_t *item = json_loads(it->item, JSON_DECODE_ANY, NULL), *up;

	if (item != NULL && c->incl != NULL) {
		up = it->upstream != NULL ? json_loads(it->upstream, 0, NULL) :
		    NULL;
		json_array_append_new(c->into, sg_incl_item(item, up,
		    c->incl));
		json_decref(up);
	} else if (item != NULL)
		json_array_append(c->into, item);
	json_decref(item);
	return 0;
}

/* New reference: tenant's stored response id as it was answered (its
 * items as incl shows them; NULL: as kept), or NULL with err. */
static json_t *
load(struct sg_store *st, const char *id, const struct sg_req *req,
    const struct sg_incl *incl, struct sg_error *err)
{
	struct collect c = { NULL, incl };
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
		sg_rstream_not_found(err, id);
		return NULL;
	}
	c.into = output = json_array();
	if (sg_store_resp_items(st, id, 1, collect, &c) != SG_STORE_OK) {
		json_decref(output);
		json_decref(resp);
		store_down(st, err);
		return NULL;
	}
	json_object_set_new(resp, "output", output);
	return resp;
}

/* starting_after into *after (-1 when absent): 0, or -1 with err. */
static int
starting_after(const struct sg_req *req, int64_t *after,
    struct sg_error *err)
{
	char v[32], *end;
	long long n = 0;
	int rc;

	*after = -1;
	if ((rc = sg_http_query(req->uri, "starting_after", v, sizeof(v))) == 0)
		return 0;
	if (rc == 1)
		n = strtoll(v, &end, 10);
	if (rc == -1 || v[0] == '\0' || *end != '\0')
		return sg_error_invalid(err, "starting_after", "invalid_type",
		    "Invalid type for 'starting_after': expected an integer.");
	if (n < 0)
		return sg_error_invalid(err, "starting_after",
		    "integer_below_min_value", "Invalid 'starting_after': "
		    "integer below minimum value. Expected a value >= 0, but got "
		    "%lld instead.", n);
	*after = (int64_t)n;
	return 0;
}

static int
get(const struct sg_cfg *cfg, struct sg_store *st, const char *id,
    const struct sg_req *req, struct sg_out *out, struct sg_error *err)
{
	struct sg_incl incl;
	int64_t after;
	char v[16];
	json_t *resp;
	int rc;

	if (sg_incl_parse(req, &incl, err) == -1)
		return -1;
	/* The stream replays the events as they were sent: include shaped
	 * them when the response was made. */
	if ((rc = sg_http_query(req->uri, "stream", v, sizeof(v))) != 0 &&
	    (rc == -1 || (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)))
		return sg_error_invalid(err, "stream", "invalid_type",
		    "Invalid type for 'stream': expected a boolean.");
	if (rc == 1 && strcmp(v, "true") == 0)
		return starting_after(req, &after, err) == -1 ? -1 :
		    sg_rstream_follow(st, id, req, after,
		    cfg->server.request_timeout, out, err);
	/* A background job answers as it stands, until it is pruned. */
	if ((rc = sg_bg_get(st, id, req, out, err)) != 0)
		return rc == 1 ? 0 : -1;
	if ((resp = load(st, id, req, &incl, err)) == NULL)
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
	int rc, bg, events = 0;

	/* A background job (running: its runner stops at its next call)
	 * and the events kept for a replay go with it: a deleted response
	 * is not replayed either. */
	bg = sg_store_bg_delete(st, id, req->tenant);
	if (bg == SG_STORE_ERROR || sg_store_ev_delete(st, id, req->tenant,
	    &events) != SG_STORE_OK)
		return store_down(st, err);
	rc = sg_store_resp_delete(st, id, req->tenant);
	if (rc == SG_STORE_NOTFOUND && events == 0 && bg != SG_STORE_OK)
		return sg_rstream_not_found(err, id);
	if (rc != SG_STORE_OK && rc != SG_STORE_NOTFOUND)
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
	struct collect c = { NULL, NULL };
	char after[256];
	json_t *resp, *all, *data, *list;
	long limit;
	int desc, more;

	if (sg_http_page_args(req, ITEMS_LIMIT, ITEMS_LIMIT_MAX, &limit, &desc,
	    after, sizeof(after), err) == -1 ||
	    (resp = load(st, id, req, NULL, err)) == NULL)
		return -1;
	json_decref(resp);
	all = c.into = json_array();
	if (sg_store_resp_items(st, id, 0, collect, &c) != SG_STORE_OK) {
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
sg_resp_api(const struct sg_cfg *cfg, struct sg_store *st,
    enum sg_route route, const char *id, const struct sg_req *req,
    struct sg_out *out)
{
	struct sg_error err;
	int rc = -1;

	sg_error_server(&err, 500, "The stored responses failed.");
	if (route == SG_ROUTE_RESP_GET)
		rc = get(cfg, st, id, req, out, &err);
	else if (route == SG_ROUTE_RESP_DELETE)
		rc = delete(st, id, req, out, &err);
	else if (route == SG_ROUTE_RESP_ITEMS)
		rc = input_items(st, id, req, out, &err);
	else if (route == SG_ROUTE_RESP_CANCEL)
		rc = sg_bg_cancel(st, id, req, out, &err);
	if (rc == -1 && !out->started)
		sg_http_error(out, req, &err);
}
