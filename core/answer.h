/*
 * sg_answer: the interception loop's final answer in each surface's shape
 * (what a non-streaming client gets, and what a stream's last event
 * carries), and usage summed over every turn. Pure functions over
 * Jansson values; nothing passed in is changed.
 */
#ifndef SG_ANSWER_H
#define SG_ANSWER_H

#include <jansson.h>

/* Add every number of u into acc (usage objects), recursively. The
 * upstream's numbers: a sum that would overflow stays at the largest
 * value, a real that is not finite is left out. */
void	 sg_answer_add_usage(json_t *acc, const json_t *u);

/*
 * New reference: the Responses answer. last: the upstream's last
 * response (NULL when none came); body: the client's; output: the items
 * the client sees; usage: summed; id: the response id (NULL: a new one).
 */
json_t	*sg_answer_responses(const json_t *last, const json_t *body,
	    json_t *output, json_t *usage, const char *id);

/*
 * New reference: the Chat answer, one assistant message. head: the
 * upstream's first chunk (id, created, fingerprint), or NULL; texts: each
 * turn's text; calls: calls of the client's own tools; finish: the last
 * turn's finish_reason ("" when none).
 */
json_t	*sg_answer_chat(const json_t *head, const json_t *body,
	    const json_t *texts, json_t *calls, const char *finish,
	    json_t *usage);

#endif
