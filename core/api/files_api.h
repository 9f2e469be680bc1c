/*
 * sg_files_api: OpenAI's Files API (/v1/files) over the tenants' files
 * (core/state/files.h).
 */
#ifndef SG_FILES_API_H
#define SG_FILES_API_H

#include "../http/router.h"
#include "../state/files.h"

/* Answer one of the SG_ROUTE_FILE_* routes for req's tenant. */
void	 sg_files_api(const struct sg_files_env *, enum sg_route,
	    const char *id, struct sg_req *, struct sg_out *);

#endif
