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
	{ "POST", "/v1/sandboxes", SG_ROUTE_SBX_CREATE, 1 },
	{ "GET", "/v1/sandboxes", SG_ROUTE_SBX_LIST, 1 },
	{ "GET", "/v1/sandboxes/{id}", SG_ROUTE_SBX_GET, 1 },
	{ "DELETE", "/v1/sandboxes/{id}", SG_ROUTE_SBX_DELETE, 1 },
	{ "POST", "/v1/sandboxes/{id}/code", SG_ROUTE_SBX_RUN, 1 },
	{ "POST", "/v1/code", SG_ROUTE_CODE, 1 },
	{ "GET", "/v1/responses/{id}", SG_ROUTE_RESP_GET, 1 },
	{ "DELETE", "/v1/responses/{id}", SG_ROUTE_RESP_DELETE, 1 },
	{ "GET", "/v1/responses/{id}/input_items", SG_ROUTE_RESP_ITEMS, 1 },
	{ "POST", "/v1/responses/{id}/cancel", SG_ROUTE_RESP_CANCEL, 1 },
	{ "POST", "/v1/files", SG_ROUTE_FILE_CREATE, 1 },
	{ "GET", "/v1/files", SG_ROUTE_FILE_LIST, 1 },
	{ "GET", "/v1/files/{id}", SG_ROUTE_FILE_GET, 1 },
	{ "DELETE", "/v1/files/{id}", SG_ROUTE_FILE_DELETE, 1 },
	{ "GET", "/v1/files/{id}/content", SG_ROUTE_FILE_CONTENT, 1 },
	{ "POST", "/v1/containers", SG_ROUTE_CNTR_CREATE, 1 },
	{ "GET", "/v1/containers", SG_ROUTE_CNTR_LIST, 1 },
	{ "GET", "/v1/containers/{id}", SG_ROUTE_CNTR_GET, 1 },
	{ "DELETE", "/v1/containers/{id}", SG_ROUTE_CNTR_DELETE, 1 },
	{ "POST", "/v1/containers/{id}/files", SG_ROUTE_CFILE_CREATE, 1 },
	{ "GET", "/v1/containers/{id}/files", SG_ROUTE_CFILE_LIST, 1 },
	{ "GET", "/v1/containers/{id}/files/{*}", SG_ROUTE_CFILE_GET, 1 },
	{ "DELETE", "/v1/containers/{id}/files/{*}", SG_ROUTE_CFILE_DELETE, 1 },
	{ "GET", "/v1/containers/{id}/files/{*}/content", SG_ROUTE_CFILE_CONTENT,
	    1 },
	{ "GET", "/v1/organization/usage/completions", SG_ROUTE_ORG_USAGE_COMPL,
	    2 },
	{ "GET", "/v1/organization/usage/code_interpreter_sessions",
	    SG_ROUTE_ORG_USAGE_CI, 2 },
	{ "GET", "/v1/organization/costs", SG_ROUTE_ORG_COSTS, 2 },
	{ "GET", "/v1/organization/api_keys", SG_ROUTE_ORG_KEY_LIST, 2 },
	{ "POST", "/v1/organization/api_keys", SG_ROUTE_ORG_KEY_CREATE, 2 },
	{ "GET", "/v1/organization/api_keys/{id}", SG_ROUTE_ORG_KEY_GET, 2 },
	{ "POST", "/v1/organization/api_keys/{id}", SG_ROUTE_ORG_KEY_UPDATE, 2 },
	{ "DELETE", "/v1/organization/api_keys/{id}", SG_ROUTE_ORG_KEY_DELETE,
	    2 },
	{ "GET", "/v1/organization/requests", SG_ROUTE_ORG_REQ_LIST, 2 },
	{ "GET", "/v1/organization/requests/{id}", SG_ROUTE_ORG_REQ_GET, 2 },
	{ "GET", "/v1/organization/overview", SG_ROUTE_ORG_OVERVIEW, 2 },
	{ "GET", "/v1/organization/sandboxes", SG_ROUTE_ORG_SBX_LIST, 2 },
	{ "DELETE", "/v1/organization/sandboxes/{id}", SG_ROUTE_ORG_SBX_DELETE,
	    2 },
	{ "POST", "/v1/conversations", SG_ROUTE_CONV_CREATE, 1 },
	{ "GET", "/v1/conversations/{id}", SG_ROUTE_CONV_GET, 1 },
	{ "POST", "/v1/conversations/{id}", SG_ROUTE_CONV_UPDATE, 1 },
	{ "DELETE", "/v1/conversations/{id}", SG_ROUTE_CONV_DELETE, 1 },
	{ "GET", "/v1/conversations/{id}/items", SG_ROUTE_CONV_ITEM_LIST, 1 },
	{ "POST", "/v1/conversations/{id}/items", SG_ROUTE_CONV_ITEM_ADD, 1 },
	{ "GET", "/v1/conversations/{id}/items/{*}", SG_ROUTE_CONV_ITEM_GET, 1 },
	{ "DELETE", "/v1/conversations/{id}/items/{*}", SG_ROUTE_CONV_ITEM_DELETE,
	    1 },
};

/* Whether path matches pattern, where "{id}" stands for one non-empty
 * segment, copied to id (only when the whole path matches), and "{*}"
 * for another (its handler reads it from the path: sg_route_second). */
static int
matches(const char *pattern, const char *path, char *id, size_t idsz)
{
	const char *brace, *found = NULL;
	size_t pre, seg, foundlen = 0;
	int capture;

	while ((brace = strchr(pattern, '{')) != NULL) {
		pre = (size_t)(brace - pattern);
		if (strncmp(pattern, path, pre) != 0)
			return 0;
		path += pre;
		if ((seg = strcspn(path, "/")) == 0)
			return 0;
		if ((capture = strncmp(brace, "{id}", 4) == 0)) {
			found = path;
			foundlen = seg;
		}
		pattern = brace + (capture ? 4 : 3);
		path += seg;
	}
	if (strcmp(pattern, path) != 0)
		return 0;
	if (found != NULL && id != NULL) {
		if (foundlen >= idsz)
			return 0;
		memcpy(id, found, foundlen);
		id[foundlen] = '\0';
	}
	return 1;
}

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
sg_route_match(const char *method, const char *path, char *id, size_t idsz)
{
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(routes[i].method, method) == 0 &&
		    matches(routes[i].path, path, id, idsz))
			return routes[i].route;
	return SG_ROUTE_NONE;
}

enum sg_route
sg_route_find(const char *method, const char *path)
{
	char id[128];

	return sg_route_match(method, path, id, sizeof(id));
}

int
sg_route_authed(enum sg_route r)
{
	size_t i;

	if (r == SG_ROUTE_CONSOLE)
		return SG_AUTH_NONE;
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (routes[i].route == r)
			return routes[i].authed;
	return 1;
}

int
sg_route_streams(enum sg_route r)
{
	return r == SG_ROUTE_FILE_CREATE || r == SG_ROUTE_CFILE_CREATE;
}

const char *
sg_route_path_of(enum sg_route r, const char **method)
{
	size_t i;

	if (r == SG_ROUTE_CONSOLE) {
		*method = "GET";
		return "/console/";
	}
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (routes[i].route == r) {
			*method = routes[i].method;
			return routes[i].path;
		}
	*method = "";
	return "unmatched";
}

int
sg_route_second(const char *path, char *out, size_t outsz)
{
	const char *p = path;
	size_t n;
	int slash;

	/* /v1/containers/{id}/files/{*}, /v1/conversations/{id}/items/{*}:
	 * the fifth segment. */
	for (slash = 0; *p != '\0' && slash < 5; p++)
		if (*p == '/')
			slash++;
	n = strcspn(p, "/");
	if (slash < 5 || n == 0 || n >= outsz)
		return -1;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}
