/*
 * sg_cfile: a container's files (/v1/containers/{id}/files), OpenAI's
 * container file objects over the store's files and the sandbox.
 */
#ifndef SG_CFILES_H
#define SG_CFILES_H

#include "../http/router.h"
#include "../state/sandbox.h"

/* Answer one of the SG_ROUTE_CFILE_* routes (req->in set for a form
 * upload) for req's tenant. */
void	 sg_cfile_api(struct sg_sbx_env *, enum sg_route, const char *id,
	    struct sg_req *, struct sg_out *);

#endif
