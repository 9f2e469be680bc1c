/*
 * A tenant request's limits, ledger row and trace (meter.h).
 */
#include <stdio.h>

#include "meter.h"
#include "../state/ledger.h"
#include "../state/limits.h"
#include "../state/trace.h"
#include "../../store/store.h"

/* What the ledger calls the surface a tenant route spends on; NULL for
 * the routes it does not count. */
static const char *
surface_of(enum sg_route r)
{
	if (r == SG_ROUTE_CHAT)
		return "chat";
	if (r == SG_ROUTE_RESPONSES)
		return "responses";
	if (r >= SG_ROUTE_SBX_CREATE && r <= SG_ROUTE_CODE)
		return "sandboxes";
	if (r >= SG_ROUTE_FILE_CREATE && r <= SG_ROUTE_FILE_CONTENT)
		return "files";
	if (r >= SG_ROUTE_CNTR_CREATE && r <= SG_ROUTE_CFILE_CONTENT)
		return "containers";
	if (r == SG_ROUTE_MCP)
		return "mcp";
	return NULL;
}

/* The routes a key's limits hold: those that call a model, make a
 * sandbox or run code. Reading, listing and deleting spend nothing. */
static int
spends(enum sg_route r)
{
	return r == SG_ROUTE_CHAT || r == SG_ROUTE_RESPONSES ||
	    r == SG_ROUTE_SBX_CREATE || r == SG_ROUTE_SBX_RUN ||
	    r == SG_ROUTE_CODE || r == SG_ROUTE_CNTR_CREATE ||
	    r == SG_ROUTE_MCP;
}

int
sg_meter_admit(const struct sg_cfg *cfg, struct sg_store *store,
    enum sg_route route, struct sg_req *req, struct sg_out *out)
{
	struct sg_cfg_limits lim;
	struct sg_error err;

	/* One let in before that never ended (the queue refused it) counts
	 * no more tokens: this request's are its own. */
	sg_lim_end(0, 0);
	if (!spends(route))
		return 0;
	sg_cfg_limits_of(cfg, req->key != NULL ? &req->key->limits : NULL, &lim);
	if (lim.rpm <= 0 && lim.tpm <= 0 && lim.budget <= 0 &&
	    lim.sandbox_seconds <= 0)
		return 0;
	req->metered = lim.tpm > 0 || lim.budget > 0;
	if (sg_lim_admit(store, req->tenant, &lim, route == SG_ROUTE_CHAT ||
	    route == SG_ROUTE_RESPONSES ? SG_LIM_MODEL : SG_LIM_SANDBOX,
	    req->wall_ms, req->head, sizeof(req->head), &err) == 0)
		return 0;
	sg_http_error(out, req, &err);
	return -1;
}

void
sg_meter_begin(enum sg_route route, const struct sg_req *req)
{
	if (surface_of(route) != NULL)
		sg_use_begin(req, surface_of(route));
}

void
sg_meter_end(const struct sg_cfg *cfg, struct sg_store *store,
    enum sg_route route, const struct sg_req *req, struct sg_out *out)
{
	struct sg_store_use row;
	int rc;

	if (surface_of(route) == NULL)
		return;
	rc = sg_use_end(cfg, out->started ? out->status : 0,
	    !out->alive(out), &row);
	sg_lim_end(row.cost_input + row.cost_output + row.cost_sandbox,
	    row.sandbox_ms);
	/* The ring had no room (or there is none: no master mapped it). */
	if (rc == 1 && sg_store_use_add(store, &row, 1) != SG_STORE_OK)
		fprintf(stderr, "event=usage_lost request=%s reason=store\n",
		    req->id);
	sg_trace_end(cfg, store, req, out->started ? out->status : 0);
}

/*
 * A Chat stream reports its usage only when asked (stream_options.
 * include_usage): for a key whose tokens are held to a limit, it is
 * asked, so the key's tpm and budget see them, and the client that did
 * not ask is sent the stream it would have had (core/upstream strips the
 * usage out).
 */
int
sg_meter_stream(enum sg_surface surface, json_t *body, struct sg_req *req)
{
	json_t *opts = json_object_get(body, "stream_options");

	if (!req->metered || surface != SG_SURFACE_CHAT ||
	    !json_is_true(json_object_get(body, "stream")) ||
	    json_is_true(json_object_get(opts, "include_usage")))
		return 0;
	if (!json_is_object(opts)) {
		opts = json_object();
		json_object_set_new(body, "stream_options", opts);
	}
	json_object_set_new(opts, "include_usage", json_true());
	req->strip_usage = 1;
	return 1;
}
