/*
 * sg_respids: previous_response_id on the passthrough. An upstream
 * continues whatever conversation it is given the id of, so an id is
 * taken only when it was relayed to the same key from the same upstream
 * (its api_base): the store keeps, for 30 days, which key each relayed
 * response id went to. The interception loop accepts these ids too.
 */
#ifndef SG_RESPIDS_H
#define SG_RESPIDS_H

#include <stddef.h>

#include "sse.h"
#include "../http/error.h"
#include "../http/http.h"
#include "../../store/store.h"

/*
 * Check every previous_response_id of a request body (JSON text): 0, or
 * -1 with err: 400 previous_response_not_found for an id not relayed to
 * req's key from api_base (another key's, one sandgate minted, one never
 * seen); 500 when there is no store to ask (st NULL); 503 when it fails.
 */
int	 sg_respids_check(struct sg_store *st, const char *api_base,
	    const struct sg_req *req, const char *body, size_t len,
	    struct sg_error *err);
/* Note that the response object obj[0..len) (JSON text; its top-level
 * "id") was relayed to req's key from api_base. A failure is logged. */
void	 sg_respids_note(struct sg_store *st, const char *api_base,
	    const struct sg_req *req, const char *obj, size_t len);
/* The same for a streamed answer: the response of its response.created
 * event. Other events are ignored. */
void	 sg_respids_note_event(struct sg_store *st, const char *api_base,
	    const struct sg_req *req, const struct sg_sse_event *ev);

#endif
