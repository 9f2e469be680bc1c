/*
 * What gateway.c and the files answering its own routes share (probes.c:
 * /healthz, /metrics, /v1/models; bg_run.c: a background job), and no one
 * else.
 */
#ifndef SG_GW_INT_H
#define SG_GW_INT_H

#include "gateway.h"
#include "../state/sandbox.h"

struct sg_gw {
	const struct sg_cfg	*cfg;
	struct sg_store		*store;
	struct sg_upstream	*up;
	struct sg_prov		 prov;
	sg_metrics_fn		 metrics;
	void			*metrics_arg;
	sg_admit_fn		 admit;
	void			*admit_arg;
	sg_load_fn		 load;
	void			*load_arg;
	int64_t			 store_ok_ms;	/* when the store last answered */
};

/* A background job's request (bg_run.c): req's key already found (by its
 * tenant), resp_id the job's; admitted when it was queued. */
void	 sg_gw_job(struct sg_gw *, struct sg_req *, struct sg_out *);
void	 sg_gw_healthz(struct sg_gw *, const struct sg_req *, struct sg_out *);
void	 sg_gw_metrics(struct sg_gw *, const struct sg_req *, struct sg_out *);
void	 sg_gw_models(struct sg_gw *, const struct sg_req *, struct sg_out *);

#endif
