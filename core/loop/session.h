/*
 * sg_bind: which sandbox a request's code runs in. In order:
 *  - an explicit container, OpenAI's way: a code_interpreter tool with
 *    "container": "cntr_..." (the caller's, else 404 before any upstream
 *    call);
 *  - a session: metadata.session_id, per key (the upstream never sees it);
 *  - a continuation's container when it is still alive: the one the
 *    previous_response_id used, or the last replayed
 *    code_interpreter_call's container_id;
 *  - with interception.container_reuse = "conversation", a new sandbox
 *    kept for the conversation's follow-ups;
 *  - else the request's own, deleted when it ends.
 * The sandbox is made or found on first need, so a request whose model
 * never runs code costs none.
 */
#ifndef SG_SESSION_H
#define SG_SESSION_H

#include <jansson.h>

#include "../http/http.h"
#include "../state/files.h"
#include "../state/sandbox.h"

struct sg_bind {
	int	 kind;			/* enum sg_sbx_kind it runs in */
	char	 session[SG_STORE_SESSION_MAX + 1];
	char	 sandbox[48];		/* "" until first needed */
	int	 lost;			/* tell the model: earlier state gone */
	/* The tool's container.file_ids: written into the sandbox's
	 * /mnt/data before the request's first run there. */
	char	 files[SG_FILES_IDS_MAX][48];
	int	 nfiles;
	int	 files_in;		/* they are in b->sandbox */
	/* A session's sandbox as sg_bind_init found it (for sg_bind_peek),
	 * the session touched with it; ready: the first run claims it
	 * without asking the store again (a run that finds it gone since
	 * claims the session's anew). */
	char	 peeked[48];
	int	 peeked_ok;
	int	 ready;
};

/* Decide from the request (work: the body, borrowed; metadata.session_id
 * is taken out of it). 0, or -1 with err (an explicit container that is
 * not the caller's, a session id that is not a string, a file id that is
 * not one of the caller's files, a sandbox code would run in of a tool
 * the key may not use). */
int	 sg_bind_init(struct sg_sbx_env *, const struct sg_req *, json_t *work,
	    struct sg_bind *, struct sg_error *);
/* The sandbox, made or found on first need. Borrowed id, or NULL. */
const char *sg_bind_sandbox(struct sg_sbx_env *, const struct sg_req *,
	    struct sg_bind *, struct sg_error *);
/* Run code as sg_sbx_run does, in the bound sandbox. A sandbox that
 * stopped answering is replaced (unless the client named it) and the
 * code runs again there; the model is told its earlier state is lost,
 * before its result, in *note (new, or NULL). */
int	 sg_bind_run(struct sg_sbx_env *, const struct sg_req *,
	    struct sg_bind *, const char *code, json_t **result, char **note,
	    struct sg_error *);
/* The sandbox a session has now, into id ("" when none or not a
 * session), without making one: what its earlier requests' files are
 * cited from when this one runs no code. */
void	 sg_bind_peek(struct sg_sbx_env *, const struct sg_req *,
	    const struct sg_bind *, char id[48]);
/* The request is over: its own sandbox is deleted (once the answer is
 * out, when the request has an after list), a kept one stays. */
void	 sg_bind_end(struct sg_sbx_env *, const struct sg_req *,
	    struct sg_bind *);

#endif
