/*
 * sg_sbx_api: the direct sandbox routes (design §3.3) over sg_sbx
 * (core/state/sandbox.h).
 */
#ifndef SG_SANDBOX_API_H
#define SG_SANDBOX_API_H

#include "../state/sandbox.h"

/* Answer one request. The route and its {id} come from the router. */
void	 sg_sbx_api(struct sg_sbx_env *, int route, const char *id,
	    const struct sg_req *, struct sg_out *);

#endif
