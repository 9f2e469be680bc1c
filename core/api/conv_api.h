/*
 * sg_conv_api: OpenAI's Conversations API (/v1/conversations and its
 * items), per key: another key's conversation or item is not found, as
 * if it did not exist. What a conversation is, and how a Responses
 * request continues one, is sg_convs' (core/state/convs.h).
 */
#ifndef SG_CONV_API_H
#define SG_CONV_API_H

#include "../http/http.h"
#include "../http/router.h"
#include "../../store/store.h"

/* Answer route for conversation id on behalf of req's key. Never fails:
 * an error becomes an OpenAI-shaped reply. */
void	 sg_conv_api(struct sg_store *, enum sg_route, const char *id,
	    const struct sg_req *, struct sg_out *);

#endif
