/*
 * sg_loop: the interception loop (design §5). A request carrying OpenAI's
 * code_interpreter tool is sent upstream with a function tool instead;
 * each call of it runs in the request's sandbox (created on the first
 * call, deleted at the end), its result goes back to the model, and the
 * loop ends when the model answers, at most max_agentic_loops sandbox
 * rounds later. The upstream is always read as a stream of events; this
 * first renderer collects them into the JSON a non-streaming client gets.
 */
#ifndef SG_LOOP_H
#define SG_LOOP_H

#include "../config/config.h"
#include "../http/http.h"
#include "../state/sandbox.h"
#include "../upstream/upstream.h"

struct sg_loop_env {
	const struct sg_cfg	*cfg;
	struct sg_upstream	*up;
	struct sg_sbx_env	*sbx;
};

/* Answer one request whose body (borrowed, parsed) has a code_interpreter
 * tool. Errors become OpenAI-shaped replies; never fails otherwise. */
void	 sg_loop_run(struct sg_loop_env *, const struct sg_cfg_model *,
	    enum sg_surface, const json_t *body, const struct sg_req *,
	    struct sg_out *);

#endif
