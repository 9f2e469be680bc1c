/*
 * sg_org: the admin API, for admin keys only (auth.admin_keys): OpenAI's
 * Usage and Costs APIs over sandgate's ledger (org_usage.c), key
 * management and request traces. Its routes answer at once from the
 * store: none holds a responder long.
 */
#ifndef SG_ORG_H
#define SG_ORG_H

#include "../config/config.h"
#include "../http/http.h"
#include "../http/router.h"
#include "../state/stats.h"

struct sg_prov;
struct sg_store;

struct sg_org_env {
	const struct sg_cfg	*cfg;	/* borrowed */
	struct sg_store		*store;	/* borrowed */
	int64_t			 now_ms;	/* the request's start, unix ms */
	struct sg_prov		*prov;	/* borrowed: ending a sandbox */
	sg_load_fn		 load;	/* the responders' state, or NULL */
	void			*load_arg;
};

/* Answer route (one of SG_ROUTE_ORG_*); id is the path's {id} or "". */
void	sg_org_api(const struct sg_org_env *, enum sg_route, const char *id,
	    struct sg_req *, struct sg_out *);

/* org_usage.c: GET /v1/organization/usage/{completions,
 * code_interpreter_sessions} and /v1/organization/costs. */
void	sg_org_usage(const struct sg_org_env *, enum sg_route,
	    struct sg_req *, struct sg_out *);

/* org_keys.c: /v1/organization/api_keys[/{id}]: list, create, get,
 * update, revoke. */
void	sg_org_keys(const struct sg_org_env *, enum sg_route, const char *id,
	    struct sg_req *, struct sg_out *);

/* org_requests.c: /v1/organization/requests[/{id}]: request traces. */
void	sg_org_requests(const struct sg_org_env *, enum sg_route,
	    const char *id, struct sg_req *, struct sg_out *);

/* org_overview.c: GET /v1/organization/overview: the console's live
 * figures and the last hour's samples (core/state/stats.h). */
void	sg_org_overview(const struct sg_org_env *, struct sg_req *,
	    struct sg_out *);

/* org_sandboxes.c: GET /v1/organization/sandboxes, DELETE .../{id}:
 * every key's live sandboxes, and ending one. */
void	sg_org_sandboxes(const struct sg_org_env *, enum sg_route,
	    const char *id, struct sg_req *, struct sg_out *);

#endif
