/*
 * sg_st: the last hour of this gateway, for the console's overview: a
 * sample every SG_ST_INTERVAL seconds of the keys' requests (sg_mx_totals)
 * and of what is busy and alive, in one shared page the master maps
 * before its first fork. The reaper alone writes it; any responder reads
 * it (GET /v1/organization/overview), so the charts are there the moment
 * the console opens, and cost the requests nothing.
 */
#ifndef SG_STATS_H
#define SG_STATS_H

#include <stdint.h>

#include <jansson.h>

struct sg_store;

#define SG_ST_INTERVAL	10	/* seconds between samples */

/* The responders' state now (fcgi's scoreboard). */
struct sg_st_load {
	int	 responders;	/* alive */
	int	 busy;		/* with a request */
	int	 queued;	/* heavy requests waiting for their turn */
};
typedef void (*sg_load_fn)(void *arg, struct sg_st_load *);

/* What the store holds alive now, every box's. */
struct sg_st_alive {
	int64_t	 sandboxes;	/* made for keys (not warm) */
	int64_t	 sessions;	/* kept across requests: sessions and the
				 * sandboxes kept for conversations */
	int64_t	 warm;		/* made ahead (the pool) */
};

/* Map the page: 0, or -1 with errno. Once, in the master. */
int	 sg_st_map(void);
/* When the page was mapped (the gateway started), unix ms; 0 unmapped. */
int64_t	 sg_st_started_ms(void);
/* Add n sandboxes of kind (enum sg_sbx_kind) to a: the one reading of
 * which sandboxes are a key's, a session's or the pool's. */
void	 sg_st_alive_add(struct sg_st_alive *a, int kind, int64_t n);
/* Count what the store holds alive: 0, or -1 (the store's error). */
int	 sg_st_alive(struct sg_store *, struct sg_st_alive *);
/* Take a sample now (the reaper, every SG_ST_INTERVAL s). */
void	 sg_st_sample(const struct sg_st_load *, const struct sg_st_alive *);
/* New reference: {"interval", "points": [...]} of the last hour, oldest
 * first: each interval's requests, 5xx, p50 and p99 (ms; null with no
 * request) and the gauges at its end. */
json_t	*sg_st_series(void);

#endif
