/*
 * A request's trace written (trace.h): after its answer. The client's
 * answer is held in the responder's output until the request ends, so a
 * store write made before then (the trace's text and its commit, ~0.1 ms
 * on a three-round request) is time the client waits for; written as the
 * first of the request's after-the-answer jobs, it is not. What was
 * recorded stays this process's until then: a responder takes no other
 * request before its jobs have run, and nothing after the answer records.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "ledger.h"
#include "../config/config.h"
#include "../http/after.h"
#include "../http/http.h"
#include "../../store/store.h"
#include "../../store/usage.h"
#include "../../lib/util.h"

/* What of the request the row takes, copied: the request is gone when
 * the job runs. */
struct later {
	struct sg_store		*store;
	char			 id[sizeof(((struct sg_req *)0)->id)];
	char			 tenant[sizeof(((struct sg_req *)0)->tenant)];
	char			 model[sizeof(((struct sg_req *)0)->model)];
	int			 status;
	int64_t			 start_ms, wall_ms, duration_ms;
};

static void
write_trace(const void *arg)
{
	const struct later *l = arg;
	struct sg_store_trace t;
	char key_id[32], *rounds, *images;

	if ((rounds = sg_trace_json(l->start_ms, &images)) == NULL) {
		sg_trace_reset();
		return;
	}
	sg_use_key_id(l->tenant, key_id);
	memset(&t, 0, sizeof(t));
	t.id = l->id;
	t.tenant = l->tenant;
	t.key_id = key_id;
	t.model = l->model;
	t.status = l->status;
	t.started_ms = l->wall_ms;
	t.duration_ms = l->duration_ms;
	t.rounds = rounds;
	t.images = images;
	if (sg_store_trace_add(l->store, &t) != SG_STORE_OK)
		fprintf(stderr, "event=trace_lost request=%s reason=store\n",
		    l->id);
	free(rounds);
	free(images);
	sg_trace_reset();
}

void
sg_trace_end(const struct sg_cfg *cfg, struct sg_store *store,
    const struct sg_req *req, int status)
{
	struct later l;

	if (cfg->usage.traces <= 0 || !sg_trace_recorded()) {
		sg_trace_reset();
		return;
	}
	memset(&l, 0, sizeof(l));
	l.store = store;
	memcpy(l.id, req->id, sizeof(l.id));
	memcpy(l.tenant, req->tenant, sizeof(l.tenant));
	memcpy(l.model, req->model, sizeof(l.model));
	l.status = status;
	l.start_ms = req->start_ms;
	l.wall_ms = req->wall_ms;
	/* The request's time is until its answer, not its write. */
	l.duration_ms = sg_now_ms() - req->start_ms;
	sg_after_first(req->after, write_trace, &l, sizeof(l));
}
