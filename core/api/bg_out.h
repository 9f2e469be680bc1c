/*
 * sg_bgo: the output a background runner gives the gateway instead of a
 * client's connection. The gateway writes a response to it as to any
 * client (a CGI head, then a stream of Responses events, or a JSON error
 * answered before the stream began); the capture keeps each event in the
 * store under its sequence_number (store/background.h, resp_events), in
 * batches, so a client can replay and follow it (GET
 * /v1/responses/{id}?stream=true), and keeps the response's latest
 * snapshot with the job (what GET /v1/responses/{id} shows meanwhile).
 * "The client is gone" is how a cancel reaches the loop: alive() turns 0
 * once the job's cancel is asked, or once the runner no longer holds it,
 * and the loop then drops the upstream call and stops the sandbox run.
 */
#ifndef SG_BG_OUT_H
#define SG_BG_OUT_H

#include <stdint.h>

#include "../http/http.h"

struct sg_store;
struct sg_bgo;

#define SG_BGO_FLUSH_MS		100	/* events reach the store within */
#define SG_BGO_FLUSH_EVENTS	64	/* ... or once this many wait */
#define SG_BGO_POLL_MS		250	/* how often alive() asks the store */

/* New capture of job id (tenant's) that runner holds; store borrowed.
 * NULL when out of memory. */
struct sg_bgo	*sg_bgo_new(struct sg_store *, const char *id,
		    const char *tenant, const char *runner);
/*
 * New tee: every write goes to inner (the client's output, borrowed)
 * and the Responses events in it are kept under the response's id (from
 * its response.created) and tenant, as a runner's are, so a client that
 * lost the stream can replay and follow it (resp_stream.h). The client
 * failing stops nothing: its writes report 0, alive() is inner's, and
 * what the loop writes until it sees alive() turn 0 is kept. No job, no
 * snapshot, no cancel poll. sg_bgo_free keeps what is left. NULL when
 * out of memory.
 */
struct sg_bgo	*sg_bgo_tee(struct sg_store *, const char *tenant,
		    struct sg_out *inner);
void		 sg_bgo_free(struct sg_bgo *);
/* The output to hand the gateway (borrowed, the capture's). */
struct sg_out	*sg_bgo_out(struct sg_bgo *);
/* Write the events and the snapshot not yet in the store: 0, or -1 when
 * the store failed (they are kept and tried again). */
int		 sg_bgo_flush(struct sg_bgo *);
/* What came: the HTTP status (0: nothing yet); the response's status
 * from its last response.* event ("" when none: not a stream, or cut
 * short); the latest snapshot (JSON text or NULL); a non-stream answer's
 * body (an error before the stream began; NULL when none). Borrowed. */
int		 sg_bgo_http_status(const struct sg_bgo *);
const char	*sg_bgo_status(const struct sg_bgo *);
const char	*sg_bgo_snapshot(const struct sg_bgo *);
const char	*sg_bgo_body(const struct sg_bgo *);
/* Whether alive() said stop, and why: 1 a cancel was asked, 2 the job is
 * no longer this runner's (reaped, deleted); 0 not stopped. */
int		 sg_bgo_stopped(const struct sg_bgo *);

#endif
