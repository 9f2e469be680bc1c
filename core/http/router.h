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
	SG_ROUTE_SBX_CREATE,	/* POST /v1/sandboxes */
	SG_ROUTE_SBX_LIST,	/* GET /v1/sandboxes */
	SG_ROUTE_SBX_GET,	/* GET /v1/sandboxes/{id} */
	SG_ROUTE_SBX_DELETE,	/* DELETE /v1/sandboxes/{id} */
	SG_ROUTE_SBX_RUN,	/* POST /v1/sandboxes/{id}/code */
	SG_ROUTE_CODE,		/* POST /v1/code */
	SG_ROUTE_RESP_GET,	/* GET /v1/responses/{id} */
	SG_ROUTE_RESP_DELETE,	/* DELETE /v1/responses/{id} */
	SG_ROUTE_RESP_ITEMS,	/* GET /v1/responses/{id}/input_items */
	SG_ROUTE_RESP_CANCEL,	/* POST /v1/responses/{id}/cancel */
	SG_ROUTE_FILE_CREATE,	/* POST /v1/files (multipart, streamed) */
	SG_ROUTE_FILE_LIST,	/* GET /v1/files */
	SG_ROUTE_FILE_GET,	/* GET /v1/files/{id} */
	SG_ROUTE_FILE_DELETE,	/* DELETE /v1/files/{id} */
	SG_ROUTE_FILE_CONTENT,	/* GET /v1/files/{id}/content */
	SG_ROUTE_CNTR_CREATE,	/* POST /v1/containers */
	SG_ROUTE_CNTR_LIST,	/* GET /v1/containers */
	SG_ROUTE_CNTR_GET,	/* GET /v1/containers/{id} */
	SG_ROUTE_CNTR_DELETE,	/* DELETE /v1/containers/{id} */
	SG_ROUTE_CFILE_CREATE,	/* POST /v1/containers/{id}/files */
	SG_ROUTE_CFILE_LIST,	/* GET /v1/containers/{id}/files */
	SG_ROUTE_CFILE_GET,	/* GET /v1/containers/{id}/files/{fid} */
	SG_ROUTE_CFILE_DELETE,	/* DELETE /v1/containers/{id}/files/{fid} */
	SG_ROUTE_CFILE_CONTENT,	/* GET .../files/{fid}/content */
	/* The admin API (admin keys only): OpenAI's Usage and Costs APIs,
	 * key management and request traces. */
	SG_ROUTE_ORG_USAGE_COMPL,	/* GET /v1/organization/usage/completions */
	SG_ROUTE_ORG_USAGE_CI,	/* GET .../usage/code_interpreter_sessions */
	SG_ROUTE_ORG_COSTS,	/* GET /v1/organization/costs */
	SG_ROUTE_ORG_KEY_LIST,	/* GET /v1/organization/api_keys */
	SG_ROUTE_ORG_KEY_CREATE,	/* POST /v1/organization/api_keys */
	SG_ROUTE_ORG_KEY_GET,	/* GET /v1/organization/api_keys/{id} */
	SG_ROUTE_ORG_KEY_UPDATE,	/* POST /v1/organization/api_keys/{id} */
	SG_ROUTE_ORG_KEY_DELETE,	/* DELETE /v1/organization/api_keys/{id} */
	SG_ROUTE_ORG_REQ_LIST,	/* GET /v1/organization/requests */
	SG_ROUTE_ORG_REQ_GET,	/* GET /v1/organization/requests/{id} */
	SG_ROUTE_ORG_OVERVIEW,	/* GET /v1/organization/overview */
	SG_ROUTE_ORG_SBX_LIST,	/* GET /v1/organization/sandboxes */
	SG_ROUTE_ORG_SBX_DELETE,	/* DELETE /v1/organization/sandboxes/{id} */
	/* OpenAI's Conversations API, per key. */
	SG_ROUTE_CONV_CREATE,	/* POST /v1/conversations */
	SG_ROUTE_CONV_GET,	/* GET /v1/conversations/{id} */
	SG_ROUTE_CONV_UPDATE,	/* POST /v1/conversations/{id} */
	SG_ROUTE_CONV_DELETE,	/* DELETE /v1/conversations/{id} */
	SG_ROUTE_CONV_ITEM_LIST,	/* GET /v1/conversations/{id}/items */
	SG_ROUTE_CONV_ITEM_ADD,	/* POST /v1/conversations/{id}/items */
	SG_ROUTE_CONV_ITEM_GET,	/* GET .../items/{item_id} */
	SG_ROUTE_CONV_ITEM_DELETE,	/* DELETE .../items/{item_id} */
	/* The console's static files (console.path, set in the config): the
	 * gateway routes there itself, sg_route_match never does. */
	SG_ROUTE_CONSOLE,
	/* The MCP server's endpoint (mcp.path, set in the config): the
	 * gateway routes there itself too. */
	SG_ROUTE_MCP,
	SG_ROUTE_NROUTES
};

/* The route path of uri under prefix into out[outsz]: 0, or -1 when uri
 * is not under prefix or does not fit. */
int		 sg_route_path(const char *prefix, const char *uri, char *out,
		    size_t outsz);
enum sg_route	 sg_route_find(const char *method, const char *path);
/* Like sg_route_find; a {id} segment of the path is copied to id[idsz]. */
enum sg_route	 sg_route_match(const char *method, const char *path, char *id,
		    size_t idsz);
/* The route's method and path pattern ("/v1/sandboxes/{id}"); for
 * SG_ROUTE_NONE (and out of range) "" and "unmatched". Static strings. */
const char	*sg_route_path_of(enum sg_route, const char **method);
/* The fifth segment of path (a container file's id in
 * /v1/containers/{id}/files/{fid}..., a conversation item's in
 * /v1/conversations/{id}/items/{item_id}) into out: 0, or -1. */
int		 sg_route_second(const char *path, char *out, size_t outsz);
/* Whether the route's handler reads the body as it goes (uploads) rather
 * than being given it whole. */
int		 sg_route_streams(enum sg_route);
/* Whether the route needs a key: SG_AUTH_NONE (healthz, metrics, the
 * console's files: its page asks for the key), a
 * tenant's, or an admin key (the admin API). */
enum { SG_AUTH_NONE = 0, SG_AUTH_TENANT = 1, SG_AUTH_ADMIN = 2 };
int		 sg_route_authed(enum sg_route);

#endif
