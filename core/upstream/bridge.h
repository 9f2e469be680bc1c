/*
 * sg_bridge: the Responses API on an upstream that speaks only Chat
 * Completions (a model with api = "chat": llama.cpp's server, older vLLM
 * and Ollama, many hosted providers). Each upstream turn of the loop is
 * sent as a Chat request made from the Responses body, and the Chat
 * stream that comes back is turned, chunk by chunk, into the Responses
 * events a Responses upstream would have sent: the loop, its renderers
 * and its state see a Responses upstream.
 */
#ifndef SG_BRIDGE_H
#define SG_BRIDGE_H

#include <jansson.h>

#include "sse.h"
#include "upstream.h"
#include "../http/error.h"
#include "../http/http.h"

/*
 * Whether the client's Responses body (borrowed) asks for nothing a Chat
 * upstream cannot do: 0, or -1 with OpenAI's 400 naming the parameter
 * (err's param may point into body: send err while body lives).
 */
int	 sg_bridge_check(const json_t *body, struct sg_error *);

/* New reference: the Chat Completions body (streamed, with usage) for a
 * Responses body (the loop's, borrowed), or NULL when out of memory. */
json_t	*sg_bridge_request(const json_t *work);

/* The chat stream's translator: Responses events go to fn(arg, ...). */
struct sg_bridge;

struct sg_bridge *sg_bridge_new(const char *model, sg_sse_fn fn, void *arg);
/* An sg_sse_fn: one Chat chunk (or NULL: time passing). */
int	 sg_bridge_event(void *bridge, const struct sg_sse_event *);
/* The Chat stream ended: the items still open are finished and the
 * response's last event (completed, or incomplete) is sent, once. */
void	 sg_bridge_end(struct sg_bridge *);
void	 sg_bridge_free(struct sg_bridge *);

/*
 * sg_upstream_events for a Responses body (work, borrowed) on the model's
 * Chat upstream: fn gets Responses events. An upstream error answer comes
 * back in *errbody in OpenAI's error shape whatever the upstream wrote.
 */
int	 sg_bridge_events(struct sg_upstream *, const struct sg_cfg_model *,
	    const json_t *work, int64_t deadline_ms, const struct sg_req *,
	    struct sg_out *, sg_sse_fn fn, void *arg, long *status,
	    char **errbody, struct sg_error *);

#endif
