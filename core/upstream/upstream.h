/*
 * sg_upstream: the client of the configured OpenAI-compatible model
 * servers. One per responder: its libcurl handle is reused, so the
 * connection to the upstream stays alive between requests.
 */
#ifndef SG_UPSTREAM_H
#define SG_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "sse.h"
#include "../config/config.h"
#include "../http/error.h"
#include "../http/http.h"
#include "../../store/store.h"

struct sg_upstream;

enum sg_surface {
	SG_SURFACE_CHAT,	/* /chat/completions: data-only SSE */
	SG_SURFACE_RESPONSES,	/* /responses: event: + data: SSE */
};

/* New, or NULL when libcurl cannot make a handle. */
struct sg_upstream *sg_upstream_new(void);
void	 sg_upstream_free(struct sg_upstream *);
/*
 * The store (borrowed, the responder's) where the response ids relayed
 * on /v1/responses are bound to the key they went to. Without one, a
 * relayed request that names a previous_response_id is refused (500):
 * it could not be checked.
 */
void	 sg_upstream_use_store(struct sg_upstream *, struct sg_store *);

/*
 * POST body to the model's upstream and relay its answer to out
 * unchanged: status, JSON, or an SSE stream event by event as it arrives.
 * On /v1/responses, a previous_response_id must name a response relayed
 * to the same key from the same upstream (else 400
 * previous_response_not_found, before any upstream call), and the id of
 * each answer is noted for its key.
 * Returns 0 when an answer went out (whatever its status); -1 with err
 * filled when nothing did (the caller sends err); -1 with out->started
 * when the client vanished or the stream broke (an error event was sent).
 */
int	 sg_upstream_relay(struct sg_upstream *, const struct sg_cfg_model *,
	    enum sg_surface, const char *body, size_t len, int64_t deadline_ms,
	    const struct sg_req *, struct sg_out *, struct sg_error *);

/*
 * POST body (asking for a stream) and hand each SSE event of the answer to
 * fn, as it arrives (and, while waiting, fn with a NULL event about once
 * a second, so the caller can keep its own client alive). 0 when the
 * stream ended. -1 otherwise: an upstream
 * error answer (status >= 400, JSON) is left in *errbody (new) with its
 * *status, to be passed on as it came; anything else fills err.
 */
int	 sg_upstream_events(struct sg_upstream *, const struct sg_cfg_model *,
	    enum sg_surface, const char *body, size_t len, int64_t deadline_ms,
	    const struct sg_req *, struct sg_out *, sg_sse_fn fn, void *arg,
	    long *status, char **errbody, struct sg_error *);

#endif
