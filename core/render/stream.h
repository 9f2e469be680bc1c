/*
 * sg_stream: the loop's live renderer (issue 6). The loop hands it each
 * upstream event as it arrives and tells it when code runs; it writes
 * OpenAI's own events to the client at once: Responses events with their
 * sequence numbers and output indexes renumbered across turns, calls of
 * the code tool shown as code_interpreter_call items whose code streams
 * as it is written; Chat chunks with the internal calls hidden.
 */
#ifndef SG_STREAM_H
#define SG_STREAM_H

#include <jansson.h>

#include "cite.h"
#include "../http/http.h"
#include "../upstream/upstream.h"

struct sg_stream;

/* A background job's stream: response.created and response.queued are
 * kept when it is queued, so its runner's stream begins with the next. */
#define SG_STREAM_QUEUED_EVENTS	2

/* The request's sandbox id, created on first need; NULL with err. */
typedef const char *(*sg_stream_sandbox_fn)(void *arg, struct sg_error *err);

/* New renderer. body (borrowed, the client's) must outlive it. */
struct sg_stream *sg_stream_new(enum sg_surface, const struct sg_req *,
	    struct sg_out *, const json_t *body, const char *tool,
	    int include_outputs, sg_stream_sandbox_fn, void *arg);
void	 sg_stream_free(struct sg_stream *);
/* Annotate links to container files in the text shown (cite borrowed,
 * read at each finished part: its container may come later). */
void	 sg_stream_cite(struct sg_stream *, const struct sg_cite *cite);
/* The response's (or completion's) id, the same on every event. */
const char *sg_stream_id(const struct sg_stream *);
/* Whether anything of the stream went out yet. */
int	 sg_stream_begun(const struct sg_stream *);
/* The head and the opening events. -1 when the client is gone. */
int	 sg_stream_begin(struct sg_stream *);
/* One upstream event (parsed, borrowed), as it arrived. */
void	 sg_stream_upstream(struct sg_stream *, const json_t *ev);
/* A new upstream turn starts (Chat: a blank line between turns' text). */
void	 sg_stream_next_turn(struct sg_stream *);
/* The client item id of the code call call_id (Responses), or NULL. */
const char *sg_stream_item_id(struct sg_stream *, const char *call_id);
/*
 * Whether code[0..len), about to run for call_id, is what the client was
 * shown streaming: all of it when the decoder saw the code string end,
 * else a beginning of it (the decoder lost track and the .done event
 * brings the rest). 0 when the shown code differs, or the arguments
 * repeat a key: the call must not run.
 */
int	 sg_stream_code_agrees(struct sg_stream *, const char *call_id,
	    const char *code, size_t len);
/* A code call runs now / has run (item: the finished
 * code_interpreter_call, borrowed). */
void	 sg_stream_code_running(struct sg_stream *, const char *call_id,
	    const char *code);
void	 sg_stream_code_done(struct sg_stream *, const char *call_id,
	    const json_t *item);
/* Time passes: a ": keepalive" comment after 10 s of silence. */
void	 sg_stream_tick(struct sg_stream *);
/* The end: the final answer (borrowed, sg_answer_responses's or
 * sg_answer_chat's) as the last events. Responses: response.completed,
 * or response.incomplete when the answer's status is "incomplete", with
 * the id and created_at of the opening snapshot. */
void	 sg_stream_finish(struct sg_stream *, const json_t *answer);
/* An error after the first byte: the error events, then the end.
 * Responses: the nested error event, then response.failed, whose output
 * is every item the client saw finished. */
void	 sg_stream_fail(struct sg_stream *, const struct sg_error *);

#endif
