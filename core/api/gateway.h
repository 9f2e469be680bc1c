/*
 * sg_gw: one responder's view of the gateway: the config (borrowed from
 * the master), its own store connection and upstream client. fcgi/ reads
 * a request into struct sg_req and hands it to sg_gw_handle.
 */
#ifndef SG_GATEWAY_H
#define SG_GATEWAY_H

#include <stddef.h>

#include "../config/config.h"
#include "../http/http.h"
#include "../state/stats.h"

struct sg_gw;
struct sg_store;

/* Renders extra Prometheus text for /metrics into buf; returns bytes. */
typedef size_t (*sg_metrics_fn)(void *arg, char *buf, size_t bufsz);

/*
 * Admission, asked once the route and the caller are known (req's tenant
 * and key are set; NULL key: a store key or anonymous): 0 to go on, after
 * waiting for its turn if need be, or -1 with err filled (429, 503; the
 * reply carries retry-after). heavy is 1 for model and sandbox routes, 0
 * for the routes that answer at once. out tells whether the client is
 * still there while the request waits.
 */
typedef int (*sg_admit_fn)(void *arg, const struct sg_req *req, int heavy,
    struct sg_out *out, struct sg_error *err);

/* The config's store (store.url, else store.path) for this box
 * (store.box): 0, or -1 with err. */
int	 sg_gw_store_open(const struct sg_cfg *, struct sg_store **out,
	    char *err, size_t errsz);
/* Where the config's store is, for messages: its path, or "PostgreSQL
 * store" (a URL may hold a password). */
const char *sg_gw_store_name(const struct sg_cfg *);
/* New: *out. cfg is borrowed and must outlive the gateway. Opens the
 * store: call after fork, never before. */
int	 sg_gw_new(const struct sg_cfg *, struct sg_gw **out, char *err,
	    size_t errsz);
void	 sg_gw_free(struct sg_gw *);
void	 sg_gw_set_metrics(struct sg_gw *, sg_metrics_fn, void *arg);
void	 sg_gw_set_admit(struct sg_gw *, sg_admit_fn, void *arg);
/* The responders' state, for the console's overview. */
void	 sg_gw_set_load(struct sg_gw *, sg_load_fn, void *arg);
/* Answer one request; never fails: errors become OpenAI-shaped replies. */
void	 sg_gw_handle(struct sg_gw *, struct sg_req *, struct sg_out *);
/* The request-id, route path and start time every request needs. */
void	 sg_gw_req_init(const struct sg_cfg *, struct sg_req *);
/* Whether req (its method and path set by sg_gw_req_init) is one whose
 * body its handler reads as it goes: give it req->in, not req->body. */
int	 sg_gw_streams(const struct sg_req *);

#endif
