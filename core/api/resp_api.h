/*
 * sg_resp_api: the stored responses routes (GET and DELETE
 * /v1/responses/{id}, GET /v1/responses/{id}/input_items). What is
 * stored, and when, is sg_conv's (convo.h).
 */
#ifndef SG_RESP_API_H
#define SG_RESP_API_H

#include "../config/config.h"
#include "../http/http.h"
#include "../http/router.h"
#include "../../store/store.h"

/* Answer route for response id on behalf of req's key. Never fails: an
 * error becomes an OpenAI-shaped reply. cfg: server.request_timeout
 * bounds how long a replayed stream waits for news. */
void	 sg_resp_api(const struct sg_cfg *, struct sg_store *, enum sg_route,
	    const char *id, const struct sg_req *, struct sg_out *);

#endif
