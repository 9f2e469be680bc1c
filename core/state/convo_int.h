/*
 * What convo.c (a request's conversation state) and convs.c (the
 * Conversations API's part of it) share, and no one else.
 */
#ifndef SG_CONVO_INT_H
#define SG_CONVO_INT_H

#include "convo.h"
#include "convs.h"
#include "../../lib/jdump.h"

/* Count text read from the store against the conversation's bound: 0, or
 * -1 with OpenAI's context error once past it. */
int	 sg_conv_grow(struct sg_conv *, const char *text, struct sg_error *);

/* New reference: an input item as input_items lists it (an id minted
 * when it has none, a message's content as parts). */
json_t	*sg_conv_client_form(const json_t *item);

/*
 * One client item: as it is kept (*client) and what the upstream gets for
 * it (*up, an array), both new: an item_reference resolved, a replayed
 * code_interpreter_call turned back into its call and output. 0, or -1
 * with err (both NULL).
 */
int	 sg_conv_item_up(struct sg_conv *, const json_t *item, const char *tool,
	    json_t **client, json_t **up, struct sg_error *);

/* Items to store: each client item (its id) with its upstream items (an
 * array each, or none: then the item alone), as new text; n of them.
 * text, when not NULL, holds the client items written already, item i at
 * at[i] (sg_jdump_marked): copied, not written again. NULL when out of
 * memory. Checked by sg_conv_dump_ok, freed by sg_conv_dump_free. */
struct sg_store_item *sg_conv_dump(const json_t *clients, const json_t *ups,
	    const char *text, const struct sg_jdump_at *at, size_t *n);
int	 sg_conv_dump_ok(const struct sg_store_item *, size_t n);
void	 sg_conv_dump_free(struct sg_store_item *, size_t n);

/*
 * The request's conversation (work's "conversation", taken out: the
 * upstream never sees it) into c->conv when there is one of this key:
 * 0; or -1 with OpenAI's error (with previous_response_id, not a string
 * or {"id"}, not found, the store down).
 */
int	 sg_convs_take(struct sg_conv *, json_t *work, struct sg_error *);
/* c->conv's items, as the upstream is to see them, into head: 0, or -1
 * with err (past the bound, the store down). */
int	 sg_convs_history(struct sg_conv *, json_t *head, const char *tool,
	    struct sg_error *);
/* Add the request's input and the answer's output to c->conv (sandbox_id:
 * the container code ran in, or NULL). A failure is logged. */
void	 sg_convs_append(struct sg_conv *, const json_t *answer,
	    const char *sandbox_id);

#endif
