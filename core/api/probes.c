/*
 * The gateway's own routes that answer at once: /healthz (the store
 * asked at most once a second while it answers), /metrics (the
 * scoreboard's, the counters' and the store's live sandboxes) and
 * /v1/models (the config's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gw_int.h"
#include "../http/error.h"
#include "../state/metrics.h"
#include "../../lib/util.h"
#include "../../store/background.h"
#include "../../store/store.h"

/* /healthz asks the store at most this often while it answers: a health
 * check polled hard should cost the store nothing. */
#define STORE_CHECK_MS	1000

void
sg_gw_healthz(struct sg_gw *gw, const struct sg_req *req, struct sg_out *out)
{
	static const char ok[] = "{\"status\":\"ok\"}";
	struct sg_error err;

	if (req->start_ms - gw->store_ok_ms >= STORE_CHECK_MS) {
		if (sg_store_ping(gw->store) != 0) {
			gw->store_ok_ms = INT64_MIN / 2;
			sg_error_set(&err, 503, "server_error", NULL, NULL,
			    "The store does not answer: %s",
			    sg_store_errmsg(gw->store));
			sg_http_error(out, req, &err);
			return;
		}
		gw->store_ok_ms = req->start_ms;
	}
	/* Written as it is: a probe asked many times a second. */
	if (sg_http_begin(out, req, 200, "application/json", NULL) == 0)
		sg_http_write(out, ok, sizeof(ok) - 1);
}

struct sbx_counts {
	char	*buf;
	size_t	 sz, n;
};

static int
sbx_count(void *arg, const char *tool, int kind, int64_t count)
{
	const char *name = sg_sbx_kind_name(kind);
	struct sbx_counts *c = arg;
	int w;

	if (name == NULL || c->n >= c->sz)
		return 0;
	w = snprintf(c->buf + c->n, c->sz - c->n, "sandgate_sandboxes{tool=\"%s\","
	    "kind=\"%s\"} %lld\n", tool, name, (long long)count);
	if (w > 0 && (size_t)w < c->sz - c->n)
		c->n += (size_t)w;
	return 0;
}

/* Background responses waiting and running, every box's: a queue that
 * only grows wants more runners. */
static size_t
bg_metrics(struct sg_gw *gw, char *buf, size_t sz)
{
	int64_t queued, running;
	int w;

	if (sg_store_bg_counts(gw->store, NULL, &queued, &running) !=
	    SG_STORE_OK)
		return 0;
	w = snprintf(buf, sz, "# HELP sandgate_background_responses Background "
	    "responses queued and in progress (every box's).\n# TYPE "
	    "sandgate_background_responses gauge\n"
	    "sandgate_background_responses{status=\"queued\"} %lld\n"
	    "sandgate_background_responses{status=\"in_progress\"} %lld\n",
	    (long long)queued, (long long)running);
	return w < 0 || (size_t)w >= sz ? 0 : (size_t)w;
}

/* The store's live sandboxes by tool and kind: sessions and the
 * containers kept for conversations among them. */
static size_t
sbx_metrics(struct sg_gw *gw, char *buf, size_t sz)
{
	struct sbx_counts c = { buf, sz, 0 };
	int w;

	w = snprintf(buf, sz, "# HELP sandgate_sandboxes Live sandboxes, by tool "
	    "and kind.\n# TYPE sandgate_sandboxes gauge\n");
	if (w < 0 || (size_t)w >= sz)
		return 0;
	c.n = (size_t)w;
	sg_store_sbx_counts(gw->store, sbx_count, &c);
	return c.n + bg_metrics(gw, buf + c.n, sz - c.n);
}

void
sg_gw_metrics(struct sg_gw *gw, const struct sg_req *req, struct sg_out *out)
{
	char buf[8192], sbx[4096];
	struct sg_buf more = { 0 };
	struct sg_error err;
	size_t n = 0, m;

	if (gw->metrics != NULL)
		n = gw->metrics(gw->metrics_arg, buf, sizeof(buf));
	m = sbx_metrics(gw, sbx, sizeof(sbx));
	if (sg_mx_render(gw->cfg, &more) == -1) {
		free(more.p);
		sg_error_server(&err, 500, "out of memory");
		sg_http_error(out, req, &err);
		return;
	}
	if (sg_http_begin(out, req, 200, "text/plain; version=0.0.4", NULL) == 0 &&
	    out->write(out, buf, n) == 0 && out->write(out, sbx, m) == 0)
		out->write(out, more.p, more.len);
	free(more.p);
}

void
sg_gw_models(struct sg_gw *gw, const struct sg_req *req, struct sg_out *out)
{
	json_t *data = json_array(), *body;
	size_t i;

	for (i = 0; i < gw->cfg->nmodels; i++) {
		const char *name = gw->cfg->models[i].name;

		if (strcmp(name, "*") != 0)
			json_array_append_new(data, json_pack("{s:s,s:s,s:i,s:s}",
			    "id", name, "object", "model", "created", 0,
			    "owned_by", "sandgate"));
	}
	body = json_pack("{s:s,s:o}", "object", "list", "data", data);
	sg_http_json(out, req, 200, body);
	json_decref(body);
}
