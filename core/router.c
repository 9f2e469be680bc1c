#include <string.h>

#include "router.h"

static const struct {
	const char	*method;
	const char	*path;
	enum sg_route	 route;
	int		 authed;
} routes[] = {
	{ "GET", "/healthz", SG_ROUTE_HEALTHZ, 0 },
	{ "GET", "/metrics", SG_ROUTE_METRICS, 0 },
	{ "GET", "/v1/models", SG_ROUTE_MODELS, 1 },
	{ "POST", "/v1/chat/completions", SG_ROUTE_CHAT, 1 },
	{ "POST", "/v1/responses", SG_ROUTE_RESPONSES, 1 },
};

int
sg_route_path(const char *prefix, const char *uri, char *out, size_t outsz)
{
	size_t plen = prefix != NULL ? strlen(prefix) : 0, n;

	if (uri == NULL || strncmp(uri, prefix != NULL ? prefix : "", plen) != 0)
		return -1;
	uri += plen;
	/* "/api" must not match "/apiv1/...". */
	if (*uri != '/')
		return -1;
	n = strcspn(uri, "?#");
	if (n >= outsz)
		return -1;
	memcpy(out, uri, n);
	out[n] = '\0';
	return 0;
}

enum sg_route
sg_route_find(const char *method, const char *path)
{
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(routes[i].path, path) == 0 &&
		    strcmp(routes[i].method, method) == 0)
			return routes[i].route;
	return SG_ROUTE_NONE;
}

int
sg_route_authed(enum sg_route r)
{
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (routes[i].route == r)
			return routes[i].authed;
	return 1;
}
