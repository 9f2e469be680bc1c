/*
 * The admin API's routes, each to the file that answers it.
 */
#include <stdio.h>

#include "org.h"
#include "../http/error.h"

void
sg_org_api(const struct sg_org_env *env, enum sg_route route, const char *id,
    struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;

	switch (route) {
	case SG_ROUTE_ORG_USAGE_COMPL:
	case SG_ROUTE_ORG_USAGE_CI:
	case SG_ROUTE_ORG_COSTS:
		sg_org_usage(env, route, req, out);
		return;
	case SG_ROUTE_ORG_KEY_LIST:
	case SG_ROUTE_ORG_KEY_CREATE:
	case SG_ROUTE_ORG_KEY_GET:
	case SG_ROUTE_ORG_KEY_UPDATE:
	case SG_ROUTE_ORG_KEY_DELETE:
		sg_org_keys(env, route, id, req, out);
		return;
	case SG_ROUTE_ORG_REQ_LIST:
	case SG_ROUTE_ORG_REQ_GET:
		sg_org_requests(env, route, id, req, out);
		return;
	case SG_ROUTE_ORG_OVERVIEW:
		sg_org_overview(env, req, out);
		return;
	case SG_ROUTE_ORG_SBX_LIST:
	case SG_ROUTE_ORG_SBX_DELETE:
		sg_org_sandboxes(env, route, id, req, out);
		return;
	default:
		break;
	}
	sg_error_set(&err, 404, "invalid_request_error", NULL, NULL,
	    "Invalid URL (%s %s)", req->method, req->path);
	sg_http_error(out, req, &err);
}
