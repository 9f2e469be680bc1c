/*
 * OpenAI's Usage and Costs APIs over the ledger: to be written.
 */
#include "org.h"
#include "../http/error.h"

void
sg_org_usage(const struct sg_org_env *env, enum sg_route route,
    struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;

	(void)env;
	(void)route;
	sg_error_set(&err, 404, "invalid_request_error", NULL, NULL,
	    "Invalid URL (%s %s)", req->method, req->path);
	sg_http_error(out, req, &err);
}
