/*
 * sg_cntr: OpenAI's Containers API (/v1/containers), over sg_sbx: a
 * container is a kept sandbox with a name.
 */
#ifndef SG_CONTAINERS_H
#define SG_CONTAINERS_H

#include "../http/router.h"
#include "../state/sandbox.h"

/* Answer one of the SG_ROUTE_CNTR_* routes for req's tenant. */
void	 sg_cntr_api(struct sg_sbx_env *, enum sg_route, const char *id,
	    const struct sg_req *, struct sg_out *);

#endif
