/*
 * sg_gw: one responder's view of the gateway: the config (borrowed from
 * the master), its own store connection and upstream client. fcgi/ reads
 * a request into struct sg_req and hands it to sg_gw_handle.
 */
#ifndef SG_GATEWAY_H
#define SG_GATEWAY_H

#include <stddef.h>

#include "config.h"
#include "http.h"

struct sg_gw;

/* Renders extra Prometheus text for /metrics into buf; returns bytes. */
typedef size_t (*sg_metrics_fn)(void *arg, char *buf, size_t bufsz);

/* New: *out. cfg is borrowed and must outlive the gateway. Opens the
 * store: call after fork, never before. */
int	 sg_gw_new(const struct sg_cfg *, struct sg_gw **out, char *err,
	    size_t errsz);
void	 sg_gw_free(struct sg_gw *);
void	 sg_gw_set_metrics(struct sg_gw *, sg_metrics_fn, void *arg);
/* Answer one request; never fails: errors become OpenAI-shaped replies. */
void	 sg_gw_handle(struct sg_gw *, struct sg_req *, struct sg_out *);
/* The request-id, route path and start time every request needs. */
void	 sg_gw_req_init(const struct sg_cfg *, struct sg_req *);

#endif
