/*
 * sg_rstream: a stored response's events as a stream, again (GET
 * /v1/responses/{id}?stream=true&starting_after=N, and the stream of a
 * response created with background and stream). The events are the ones
 * sent when it streamed (bg_out.h keeps them: a runner's, or a tee's
 * behind a client), each with its sequence_number, so a client that lost
 * its connection resumes after the last it saw with no gap and no event
 * twice, and a second client can follow one still running.
 */
#ifndef SG_RESP_STREAM_H
#define SG_RESP_STREAM_H

#include <stdint.h>

#include "../http/http.h"

struct sg_store;

#define SG_RSTREAM_POLL_MS	100	/* the store asked for new events,
					 * backing off to ... */
#define SG_RSTREAM_POLL_MAX_MS	500	/* ... while nothing comes */
#define SG_RSTREAM_KEEPALIVE_MS	15000	/* a comment while waiting */

/*
 * Write response id's events with a sequence_number above after (-1:
 * all), on behalf of req's tenant, then the ones still to come, until
 *   - an event that ends it was sent (response.completed, .failed,
 *     .incomplete; an error event with nothing after it for 2 s),
 *   - its background job, if it has one, ended and all was sent,
 *   - the client left (out->alive),
 *   - or, without a running job, nothing new came for idle_s seconds (a
 *     responder that died leaves no ending).
 * Decided before anything is written: a response of no one's (another
 * tenant's too): 404; one stored without events (not streamed, or its
 * events pruned): 400 on stream; after beyond its last event when it has
 * ended: 400 on starting_after (a response still running may yet reach
 * it: then it is waited for).
 * 0 once the stream began (however it ended), or -1 with err and nothing
 * written.
 */
int	 sg_rstream_follow(struct sg_store *, const char *id,
	    const struct sg_req *, int64_t after, int idle_s, struct sg_out *,
	    struct sg_error *);

/* Whether an event of this type ends a Responses stream
 * (response.completed, .failed, .incomplete). */
int	 sg_rstream_ends(const char *type);
/* The last sequence number kept of id (-1: none) into *last, and whether
 * that event ends the stream into *ended (tenant NULL: any tenant's). A
 * store's rc. */
int	 sg_rstream_last(struct sg_store *, const char *id, const char *tenant,
	    int64_t *last, int *ended);

/* OpenAI's 404 for a response id this key does not have. */
int	 sg_rstream_not_found(struct sg_error *, const char *id);

#endif
