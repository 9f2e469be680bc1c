/*
 * sg_trace: what a request did, round by round, for operators (GET
 * /v1/organization/requests/{id}): each upstream turn of the loop (when
 * it began, how long it took, its status or error, the tokens it
 * reported) and each code run (its code, outputs, time, sandbox and
 * tool), bounded, and the PNG images the code made, kept apart from the
 * rounds (trace_img.h). As the ledger's row (ledger.h), it is this
 * process's "current" request's: a responder serves one at a time, and
 * the parts record into it without a handle passed down.
 *
 * Written once, at the request's end (sg_trace_end), and only when
 * something was recorded: a request relayed as it is records nothing and
 * costs no store write. Nothing recorded is a key or a host: the code
 * and outputs are the sandbox's, the errors those the client was shown.
 */
#ifndef SG_TRACE_H
#define SG_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct sg_cfg;
struct sg_req;
struct sg_store;

#define SG_TRACE_CODE_MAX	16384	/* bytes of a run's code kept */
#define SG_TRACE_OUT_MAX	4096	/* of its stdout, stderr, traceback */
#define SG_TRACE_MAX		65536	/* the rounds' JSON, at most */
#define SG_TRACE_RUNS_MAX	4096	/* runs recorded; more are counted */
#define SG_TRACE_IMAGES_MAX	16	/* PNG images kept; more are counted */
#define SG_TRACE_IMAGES_BYTES	(2 * 1024 * 1024) /* of their base64 */

/*
 * An upstream turn ended: begun at t0 (sg_now_ms), ms long, the HTTP
 * status it got (0: none), error (NULL: none; what the client would be
 * told), its usage object (Responses' or Chat's names; NULL: none). It
 * opens a round: the code runs after it are the round's.
 */
void	 sg_trace_turn(int64_t t0, int64_t ms, long status, const char *error,
	    const json_t *usage);
/* The next runs are the model's call call_id's (NULL: none); refused
 * non-NULL: the call ran nothing, and why (recorded as a run). */
void	 sg_trace_call(const char *call_id, const char *refused);
/*
 * Code ran in sandbox id of tool, begun at t0 (sg_now_ms), ms long:
 * result its CodeExecutionResult (borrowed; NULL when it failed), failed
 * what failed (NULL: nothing; what the client would be told). The code
 * and outputs are kept bounded, its PNGs while the request's image bounds
 * allow (the run counts those they left out as images_omitted).
 */
void	 sg_trace_run(const char *tool, const char *id, const char *code,
	    int64_t t0, int64_t ms, const json_t *result, const char *failed);
/*
 * The request ended with status: its trace written to store when
 * something was recorded and cfg keeps traces (usage.traces > 0), once
 * its answer is out (the first of req->after's jobs; at once without a
 * list): nothing records after the answer. The capture then starts anew,
 * whatever was written. A store that fails loses the trace (logged),
 * never the request. (trace_end.c)
 */
void	 sg_trace_end(const struct sg_cfg *, struct sg_store *,
	    const struct sg_req *, int status);
/* Something was recorded since the last reset. */
int	 sg_trace_recorded(void);
/* The rounds as they would be written, times counted from start_ms
 * (sg_now_ms): new text, NULL when nothing was recorded; and when images
 * is not NULL, the images of the rounds shown there as sg_timg_json
 * writes them (new text, NULL: none) in *images. */
char	*sg_trace_json(int64_t start_ms, char **images);
/* Forget what was recorded. */
void	 sg_trace_reset(void);

#endif
