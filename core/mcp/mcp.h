/*
 * sg_mcp: sandgate's sandboxes as a Model Context Protocol server, over
 * the Streamable HTTP transport at mcp.path (POST for JSON-RPC messages,
 * answered as JSON or as an SSE stream; DELETE ends a session; GET is
 * 405: the server sends nothing unasked). Protocol versions 2025-11-25
 * and 2025-06-18. A session is a key's and holds one sticky sandbox of
 * mcp.sandbox_tool, made at its first tool call; tools run Python and
 * move files in it, resources show its /mnt/data.
 */
#ifndef SG_MCP_H
#define SG_MCP_H

#include "../config/config.h"
#include "../http/http.h"
#include "../state/sandbox.h"

/* Whether path (a route path, the mount prefix taken off) is the MCP
 * endpoint, and the server is on (mcp.enabled, a sandbox tool). */
int	 sg_mcp_match(const struct sg_cfg *, const char *path);
/* Before the key is checked: a browser's page may not drive the endpoint
 * with a key it holds (DNS rebinding): an Origin, when sent, must be the
 * request's own host (clients that are not browsers send none). 1 when
 * refused (403 answered), else 0. */
int	 sg_mcp_origin_refused(const struct sg_req *, struct sg_out *);
/* A request to the endpoint refused before it was routed (its body too
 * large, or unreadable): err answered as a JSON-RPC error, 1; 0 when the
 * request is not the endpoint's (the caller answers err its own way). */
int	 sg_mcp_refused_early(const struct sg_cfg *, const struct sg_req *,
	    struct sg_out *, const struct sg_error *);
/* The head lines of a 401 to an MCP client (RFC 6750): a Bearer key, no
 * OAuth server to find one at. */
const char *sg_mcp_challenge(const struct sg_req *);
/* Whether the POST may run code (tools/call): it then waits its turn and
 * counts against the key's limits as a sandbox run does; the rest of the
 * protocol answers at once. Read before the body is parsed: a false match
 * only queues a light message. */
int	 sg_mcp_runs(const struct sg_req *);
/* Serve one HTTP request to the endpoint; req's key is known (the
 * gateway's auth). Never fails: errors are the transport's or JSON-RPC's
 * answers. env's prov is watched as for any sandbox route. */
void	 sg_mcp_serve(struct sg_sbx_env *, struct sg_req *, struct sg_out *);
/* The reaper: sessions idle past sessions.ttl end (their sandbox with
 * them). 0, or -1 when the store failed. */
int	 sg_mcp_prune(struct sg_sbx_env *, int *ended);

#endif
