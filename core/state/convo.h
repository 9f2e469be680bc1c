/*
 * sg_conv: conversation state on /v1/responses as OpenAI keeps it (design
 * §3.4, §5). An id sandgate minted never reaches an upstream:
 *  - before the first upstream call, previous_response_id becomes the
 *    upstream's own id (state "upstream"), or the whole history from the
 *    store (state "gateway": the upstream then gets store:false);
 *    item_references to items sandgate answered and replayed
 *    code_interpreter_call items become the items the upstream saw; the
 *    outputs of code calls the upstream still waits for are supplied;
 *  - after the answer, the response, its input and output items and what
 *    the upstream saw for each are stored, unless store is false;
 *  - a request naming a conversation (Conversations API, convs.h) gets
 *    its items as the history, and its input and output are added to it.
 * Another key's response or item is not found, as if it did not exist.
 */
#ifndef SG_CONVO_H
#define SG_CONVO_H

#include <jansson.h>

#include "../config/config.h"
#include "../http/error.h"
#include "../http/http.h"
#include "../../store/store.h"

/* JSON values one request may hold, its body and the history it loads
 * together: Jansson spends tens of bytes on each, so max_body_bytes of
 * small values would build a tree of 150 MiB. */
#define SG_JSON_MAX_VALUES	100000

struct sg_conv {
	struct sg_store		*store;		/* borrowed */
	const struct sg_req	*req;		/* borrowed */
	int			 keep;		/* the client's store is not false */
	int			 upstream_keeps; /* the upstream is asked to store */
	json_t			*input;		/* the client's items as it saw them */
	json_t			*input_up;	/* for each: what the upstream saw */
	json_t			*output_up;	/* for each output item, in order */
	json_t			*pending;	/* outputs the upstream waits for */
	char			 prev[64];	/* previous_response_id, if ours */
	char			 conv[64];	/* the conversation it continues
						 * and adds to (convs.h), or "" */
	size_t			 bytes;		/* the conversation's, so far */
	size_t			 max_bytes;	/* ... and at most */
	size_t			 values;	/* JSON values read from the store */
};

/*
 * Whether a Responses body (borrowed) needs the loop for its state even
 * without a code tool: it names one of tenant's responses, refers to items
 * by id, or replays code_interpreter_call items.
 */
int	 sg_conv_needed(struct sg_store *, const struct sg_req *,
	    const json_t *body);

/*
 * Make work (the body to send upstream, changed in place: input,
 * previous_response_id, store) what the upstream needs. tool: the name the
 * code tool has upstream. max_bytes bounds what is loaded from the store
 * (the history, referenced and replayed items) with the request's body,
 * and so does a body's bound on JSON values: no more than a client could
 * send itself (server.max_body_bytes), so a long conversation costs a
 * responder no more memory than a large body.
 * 0, or -1 with err (400 for a response or item not found, 400
 * context_length_exceeded past max_bytes, 503 when the store fails; the
 * store is only read). sg_conv_free in either case.
 */
int	 sg_conv_begin(struct sg_conv *, struct sg_store *,
	    const struct sg_cfg_model *, const struct sg_req *, json_t *work,
	    const char *tool, size_t max_bytes, struct sg_error *);

/* New reference: an item the upstream gave, fit to be sent back to it. An
 * upstream asked not to store knows no item by id: the id goes, except on
 * reasoning carrying its encrypted content. */
json_t	*sg_conv_upitem(const struct sg_conv *, const json_t *item);

/* What the upstream saw for the answer's next output item: a new array,
 * stolen. */
void	 sg_conv_output(struct sg_conv *, json_t *upstream_items);

/* The function_call_output items the upstream still waits for when the
 * answer ends with calls for the client (stolen array). */
void	 sg_conv_pending(struct sg_conv *, json_t *outputs);

/*
 * Store the answer (borrowed) unless the client said store:false.
 * upstream_id: the upstream's last response id (or NULL); sandbox_id: the
 * container code ran in (or NULL). text, when not NULL: a buffer given the
 * answer's JSON text (what the client is sent: written once for both;
 * its length 0 when out of memory). A failure is logged: the client
 * has its answer either way.
 */
void	 sg_conv_save(struct sg_conv *, const json_t *answer,
	    const char *upstream_id, const char *sandbox_id, struct sg_buf *text);

void	 sg_conv_free(struct sg_conv *);

#endif
