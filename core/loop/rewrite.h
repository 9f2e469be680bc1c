/*
 * sg_rw: what the interception loop (issue 5) does to request bodies and
 * tool results, as pure functions over Jansson values:
 *  - OpenAI's built-in code_interpreter tool becomes a function tool with
 *    one string parameter "code", in each surface's own shape;
 *  - forced tool choices naming it become the function's forced form on
 *    the first call, and are relaxed on follow-ups;
 *  - control fields a client could forge are stripped;
 *  - a run's CodeExecutionResult becomes the text the model reads.
 * Ownership: bodies are borrowed and changed in place.
 */
#ifndef SG_REWRITE_H
#define SG_REWRITE_H

#include <stddef.h>
#include <jansson.h>

#include "../upstream/upstream.h"

#define SG_RW_DESCRIPTION "Execute python code in a sandbox and return stdout."
#define SG_RW_RESULT_MAX  20000	/* bytes of tool result text for the model */

struct sg_rw_info {
	int	include_outputs;	/* the client asked for
					 * code_interpreter_call.outputs */
	int	forced;			/* its tool_choice forced the code tool */
	int	store;			/* Responses "store" (default true) */
};

/* Whether body has a tool of type "code_interpreter". */
int	 sg_rw_wants_code(const json_t *body);

/*
 * Rewrite the client's body for the first upstream call: code_interpreter
 * tools (order kept, others untouched) and forced choices naming it,
 * control fields stripped (the reference's list and every top-level key
 * starting with "_"), "code_interpreter_call.outputs" taken out of
 * include, and the upstream asked to stream (Chat with usage; Responses
 * with reasoning.encrypted_content when store is false). 0, or -1 when
 * body is not an object.
 */
int	 sg_rw_first(json_t *body, enum sg_surface, const char *tool_name,
	    struct sg_rw_info *info);

/*
 * A follow-up's tool_choice: a forced code choice is dropped and
 * "required" becomes "auto"; with final, tool_choice is "none" (the loop
 * is over: the model must answer).
 */
void	 sg_rw_followup(json_t *body, enum sg_surface, const char *tool_name,
	    int final);

/* Remove the control fields a client could forge; exposed for tests. */
void	 sg_rw_strip(json_t *body);

/* What the model reads when a call's arguments are refused. */
#define SG_RW_INVALID_ARGS "Invalid arguments: expected a JSON object with " \
	"a string \"code\" holding the Python to run. Nothing was run."

/*
 * The arguments of a call of the code tool: 0 and a new *code, or -1 and
 * a new *problem, the message the model gets instead (nothing is run).
 * Arguments that repeat a key, or whose code holds a NUL, are refused.
 */
int	 sg_rw_code_arg(const char *arguments, size_t len, char **code,
	    char **problem);

/*
 * The text the model reads for a run (result borrowed, a
 * CodeExecutionResult): stdout, then stderr, then the last expression's
 * value, then an error as "Name: value" and the traceback's last lines,
 * ANSI escapes removed; images noted as "[image/png output]"; nothing as
 * "(no output)". At most SG_RW_RESULT_MAX bytes, valid UTF-8. New string.
 */
char	*sg_rw_tool_result(const json_t *result);

#endif
