/*
 * sg_turn: one upstream turn of the interception loop, accumulated from
 * the upstream's stream of events, in either surface's shape.
 */
#ifndef SG_TURN_H
#define SG_TURN_H

#include <jansson.h>

#include "../upstream/sse.h"
#include "../upstream/upstream.h"
#include "../../lib/util.h"

struct sg_turn {
	enum sg_surface	 surface;
	/* Responses: the turn's output items in order, and the final
	 * response object (response.completed), when it came: at least the
	 * members the loop reads (id, created_at, status, incomplete_details,
	 * service_tier, usage). */
	json_t		*items;
	json_t		*response;
	/* The items' text as the upstream sent them, "[a,b]", while items
	 * holds exactly those (raw_ok): a final response whose output is
	 * the same text is not parsed again. */
	struct sg_buf	 raw;
	int		 raw_ok;
	/* Chat: the text, the tool calls ({"id","type","function":{"name",
	 * "arguments"}}, by index), the finish reason, the first chunk. */
	struct sg_buf	 text;
	json_t		*tool_calls;
	char		 finish_reason[32];
	json_t		*head;
	/* Both: the usage, and an error event the upstream sent. */
	json_t		*usage;
	json_t		*error;
};

void	 sg_turn_init(struct sg_turn *, enum sg_surface);
void	 sg_turn_free(struct sg_turn *);
/* An sg_sse_fn: feed one upstream event (arg is the turn). */
int	 sg_turn_event(void *turn, const struct sg_sse_event *);

#endif
