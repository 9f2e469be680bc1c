/*
 * sg_meter: what a tenant's request spends, around its handler: held to
 * its key's limits before (core/state/limits.h), counted in the ledger
 * while it runs and after (core/state/ledger.h).
 */
#ifndef SG_METER_H
#define SG_METER_H

#include "../config/config.h"
#include "../http/http.h"
#include "../http/router.h"
#include "../upstream/upstream.h"

struct sg_store;

/* 0 when the request may go on (its answer then carries the key's
 * x-ratelimit-* lines, req->head); -1 when a limit refused it (answered:
 * OpenAI's 429). Only the routes that spend are held. */
int	 sg_meter_admit(const struct sg_cfg *, struct sg_store *,
	    enum sg_route, struct sg_req *, struct sg_out *);
/* The ledger's row begins (for the routes it counts). */
void	 sg_meter_begin(enum sg_route, const struct sg_req *);
/* The request was answered: its row to the ledger (queued, or written
 * here), its cost to its key's period, its trace (when it ran code) to
 * the store. */
void	 sg_meter_end(const struct sg_cfg *, struct sg_store *, enum sg_route,
	    const struct sg_req *, struct sg_out *);

/* A relayed Chat stream of a key whose tokens are held to a limit asks
 * its upstream for the usage (req->strip_usage set when the client did
 * not ask). 1 when body was changed, else 0. */
int	 sg_meter_stream(enum sg_surface, json_t *body, struct sg_req *);

#endif
