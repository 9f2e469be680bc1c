/*
 * sg_convs: OpenAI's Conversations API as the loop and its routes see it.
 * A conversation (conv_...) is a key's history kept by the gateway, as a
 * chain of stored responses is for state "gateway": its items, each as
 * the client sees it and what the upstream saw for it. A Responses
 * request naming it continues from its items on any upstream and adds its
 * input and output to it (convo.h); the routes (core/api/conv_api.c) add,
 * list and delete items directly. Another key's is not found.
 */
#ifndef SG_CONVS_H
#define SG_CONVS_H

#include <jansson.h>

#include "../http/error.h"
#include "../http/http.h"
#include "../../store/store.h"

#define SG_CONVS_ITEMS_MAX	20	/* items one call adds, as OpenAI */

/* The conversation a Responses body names (a string, or {"id": ...}),
 * borrowed; NULL when none or not of that shape. */
const char *sg_convs_id(const json_t *body);

/*
 * Items a client adds (param: where they came, for errors): each checked
 * (an object with a string "type", or a message with a "role"), given an
 * id when it has none and OpenAI's item form (convo.h's), an
 * item_reference replaced by the key's item it names. New arrays: *kept,
 * the items as listed; *ups, for each what the upstream is to see (an
 * array), or null: made from the item when the conversation is continued
 * (a code_interpreter_call's call and output pair). 0, or -1 with err.
 */
int	 sg_convs_items_in(struct sg_store *, const struct sg_req *,
	    const json_t *items, const char *param, json_t **kept, json_t **ups,
	    struct sg_error *);

/* The container_id of the last code_interpreter_call of items (an array,
 * borrowed), or NULL: the container the conversation goes on in. */
const char *sg_convs_container(const json_t *items);

/* The container tenant's conversation id last ran code in, into
 * sandbox ("" when none, or when it is not tenant's). */
void	 sg_convs_sandbox(struct sg_store *, const char *tenant, const char *id,
	    char sandbox[48]);

/* Store items (sg_convs_items_in's) into a new conversation (metadata:
 * JSON text or NULL) or after conversation id's last, with the container
 * of the last code call among them: SG_STORE_* as the store's calls, or
 * SG_STORE_FULL when out of memory. */
int	 sg_convs_create(struct sg_store *, const char *id, const char *tenant,
	    const char *metadata, const json_t *kept, const json_t *ups);
int	 sg_convs_add(struct sg_store *, const char *id, const char *tenant,
	    const json_t *kept, const json_t *ups);

#endif
