/*
 * sg_bg: background responses over HTTP (OpenAI's background mode). A
 * POST /v1/responses with background: true is kept as a job (store/
 * background.h) and answered at once, queued; a runner (fcgi/runner.c,
 * through sg_bg_run) runs it later. GET /v1/responses/{id} shows the job
 * as it stands, POST /v1/responses/{id}/cancel stops it.
 */
#ifndef SG_BG_API_H
#define SG_BG_API_H

#include <jansson.h>

#include "../config/config.h"
#include "../http/http.h"

struct sg_store;

/* Whether body asks for background mode (background: true). */
int	 sg_bg_wanted(const json_t *body);
/*
 * Queue body (borrowed, checked as a model route's: its model is m) as a
 * job of req's tenant and answer it: the response, queued; or follow its
 * stream when body asks for one. What the request names (a previous
 * response, a conversation, items) must be there, as a request run at
 * once would be told. 0 when answered, -1 with err (nothing kept).
 */
int	 sg_bg_queue(const struct sg_cfg *, struct sg_store *,
	    const struct sg_cfg_model *m, const json_t *body, struct sg_req *,
	    struct sg_out *, struct sg_error *);
/*
 * GET /v1/responses/{id} of a background job: 1 when id is one of req's
 * tenant's jobs (answered, or -1 with err), 0 when it is not (a response
 * stored the usual way, or none).
 */
int	 sg_bg_get(struct sg_store *, const char *id, const struct sg_req *,
	    struct sg_out *, struct sg_error *);
/* POST /v1/responses/{id}/cancel: answered (the response, cancelled),
 * or -1 with OpenAI's error in err. */
int	 sg_bg_cancel(struct sg_store *, const char *id, const struct sg_req *,
	    struct sg_out *, struct sg_error *);

/* A job that ended failed with its kept stream not ended (it failed
 * before its stream began, or its runner died): response.failed added,
 * so a follower is told as a live client would be. 0, or -1 when the
 * store failed. */
int	 sg_bg_end_stream(struct sg_store *, const char *id);

/* New reference: a job's response as a client sees it now: its snapshot
 * (the job's body's head when none yet) with its status and error, and
 * the output items its stream has finished so far. NULL when out of
 * memory or the store failed. */
struct sg_store_bg;
json_t	*sg_bg_response(struct sg_store *, const struct sg_store_bg *);

#endif
