/*
 * To be written (see org.h): answers 404 until then.
 */
#include "org.h"
#include "../http/error.h"

void
sg_org_keys(const struct sg_org_env *env, enum sg_route route, const char *id,
    struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;

	(void)env;
	(void)route;
	(void)id;
	sg_error_set(&err, 404, "invalid_request_error", NULL, NULL,
	    "Invalid URL (%s %s)", req->method, req->path);
	sg_http_error(out, req, &err);
}
