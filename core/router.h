/*
 * sg_route: which handler a request goes to. Matching is on REQUEST_URI
 * minus the mount prefix, query stripped: SCRIPT_NAME and PATH_INFO are
 * split differently by lighttpd, nginx and Apache, REQUEST_URI is not.
 */
#ifndef SG_ROUTER_H
#define SG_ROUTER_H

#include <stddef.h>

enum sg_route {
	SG_ROUTE_NONE = 0,	/* unknown path, or known path, wrong method */
	SG_ROUTE_HEALTHZ,
	SG_ROUTE_METRICS,
	SG_ROUTE_MODELS,
	SG_ROUTE_CHAT,
	SG_ROUTE_RESPONSES,
};

/* The route path of uri under prefix into out[outsz]: 0, or -1 when uri
 * is not under prefix or does not fit. */
int		 sg_route_path(const char *prefix, const char *uri, char *out,
		    size_t outsz);
enum sg_route	 sg_route_find(const char *method, const char *path);
/* Whether the route needs a key (healthz and metrics do not). */
int		 sg_route_authed(enum sg_route);

#endif
