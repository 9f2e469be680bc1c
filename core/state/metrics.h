/*
 * sg_mx: the counters and latency histograms behind /metrics. They live
 * in one shared page the master maps before its first fork, so every
 * responder, the reaper and the master count into the same numbers and
 * any responder can answer /metrics for all of them. Until sg_mx_map is
 * called (the CLI, unit tests) counting does nothing.
 */
#ifndef SG_METRICS_H
#define SG_METRICS_H

#include <stdint.h>

#include "../http/router.h"

struct sg_buf;
struct sg_cfg;

enum sg_mx_sbx {
	SG_MX_CREATED = 0,	/* ms: how long the provider took */
	SG_MX_CREATE_FAILED,
	SG_MX_DELETED,		/* by a request (DELETE, end of a request) */
	SG_MX_SWEPT,		/* by the reaper */
	SG_MX_GONE,		/* found gone (stopped answering) */
	SG_MX_DELETE_FAILED,
	SG_MX_RAN,		/* ms: one code run, its answer included */
	SG_MX_RUN_FAILED,	/* the provider failed a run (not the code) */
	SG_MX_POOL_HIT,		/* a create took a warm sandbox */
	SG_MX_POOL_MISS,	/* ... found none: a cold create */
	SG_MX_NSBX
};

#define SG_MX_BUCKETS	15	/* a histogram's buckets, +Inf the last */

/* What keys asked of the gateway since it started (the console's
 * overview takes differences of these). */
struct sg_mx_totals {
	uint64_t	 requests;		/* answered */
	uint64_t	 errors;		/* with a 5xx */
	uint64_t	 n[SG_MX_BUCKETS];	/* by time, not cumulative */
	uint64_t	 sum_ms;		/* their times, summed */
};

/* Map the shared page: 0, or -1 with errno. Once, in the master. */
int	 sg_mx_map(void);
/* One answered request: its route, HTTP status and time. */
void	 sg_mx_request(enum sg_route, int status, int64_t ms);
/* The tenants' totals now; zeros before sg_mx_map. */
void	 sg_mx_totals(struct sg_mx_totals *);
/* Bucket i's upper bound in ms; -1 for the last (+Inf). */
int64_t	 sg_mx_bound_ms(int i);
/* One upstream call: time to its first byte and in all, or failed. */
void	 sg_mx_upstream(int64_t first_ms, int64_t total_ms, int failed);
/* One code round of the interception loop. */
void	 sg_mx_round(void);
/* A sandbox event of tool (a name from the config); ms where it is timed
 * (SG_MX_CREATED, SG_MX_RAN), else ignored. */
void	 sg_mx_sbx(const char *tool, enum sg_mx_sbx, int64_t ms);
/* Append the Prometheus text of everything counted, the tools as cfg
 * names them: 0, or -1 when out of memory. */
int	 sg_mx_render(const struct sg_cfg *, struct sg_buf *);

#endif
