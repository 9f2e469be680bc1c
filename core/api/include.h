/*
 * sg_incl: the include[] query parameter of the routes that show stored
 * items (GET /v1/responses/{id}, the Conversations API's items), read as
 * OpenAI reads it, and an item shown as it asks: a code_interpreter_call's
 * outputs are null unless code_interpreter_call.outputs is included.
 */
#ifndef SG_INCLUDE_H
#define SG_INCLUDE_H

#include <jansson.h>

#include "../http/http.h"

/* What a request's include asks for. */
struct sg_incl {
	int	 outputs;	/* code_interpreter_call.outputs */
};

/* include=... and include[]=... of req, each one of OpenAI's values: 0,
 * or -1 with OpenAI's 400 on the first it does not know. */
int	 sg_incl_parse(const struct sg_req *, struct sg_incl *,
	    struct sg_error *);
/*
 * New reference: item (borrowed) as incl shows it. A code call kept
 * without outputs (answered without the include) shows, when they are
 * asked for, the logs its output gave the model: up, when not NULL, is
 * what the upstream saw for it (its function_call_output).
 */
json_t	*sg_incl_item(json_t *item, const json_t *up, const struct sg_incl *);

#endif
