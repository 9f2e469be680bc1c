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
 * The Responses `response` object, as OpenAI sends it at each moment:
 * every field, in OpenAI's order (id, object, created_at, status,
 * background, completed_at, error, …, truncation, usage, user, metadata).
 * The request's fields echo body (borrowed, the client's) or OpenAI's
 * defaults, never what went upstream (the loop rewrites it). usage and
 * user are left out while unknown: the spec types neither as nullable.
 * The values are shared with body and the arguments, not copied; change
 * a member by replacing it (json_object_set keeps its place).
 */

/* New reference: the head in its in-progress state (completed_at, error,
 * incomplete_details null, output [], service_tier the client's or
 * "auto", no usage), with status. */
json_t	*sg_answer_head(const json_t *body, const char *id,
	    json_int_t created, const char *status);

/* New reference: the head failed, error {code, message} (code: one of
 * the spec's ResponseErrorCode, else "server_error"); output (borrowed)
 * is what the client saw finished, NULL for []. */
json_t	*sg_answer_failed(const json_t *body, const char *id,
	    json_int_t created, const char *code, const char *message,
	    json_t *output);

/*
 * New reference: the final answer. last: the upstream's last response
 * (borrowed, NULL when none came), read only for what the upstream alone
 * knows: an "incomplete" status and its incomplete_details, the
 * service_tier ("default" without one), created_at (its start, never
 * later than now). output (borrowed): the items the client sees. usage
 * (borrowed): summed, completed with the keys the spec requires; left
 * out when empty. id: the response id (NULL: a new one). Status
 * "completed" with completed_at now, or "incomplete" with a null one.
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
