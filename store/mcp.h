/*
 * MCP sessions (mcp.c): what the responders share of the MCP server's
 * transport sessions (core/mcp). A session is a tenant's: every call
 * takes the tenant, and another tenant's session is not found, exactly
 * as one that never was. Its sandbox is a sticky session's (sessions
 * table, session id "mcp:" + its id); this table knows the transport's
 * side: the protocol version agreed, who the client said it is, when it
 * was last used (its idle life is sessions.ttl), and the requests its
 * client cancelled (notifications/cancelled comes as a request of its
 * own, to any responder; the one running the call polls for it).
 */
#ifndef SG_STORE_MCP_H
#define SG_STORE_MCP_H

#include <stdint.h>

#include "store.h"

#define SG_STORE_MCP_ID_MAX	64	/* bytes of a session id */

/* A new session (its id random: a clash is an error). */
int	 sg_store_mcp_add(struct sg_store *, const char *id, const char *tenant,
	    const char *version, const char *client, int64_t now_ms);
/* The tenant's session id, used since idle_before_ms (unix ms): OK with
 * its protocol version into version[16] and its last use now_ms;
 * NOTFOUND when none, another tenant's, or idle too long. */
int	 sg_store_mcp_touch(struct sg_store *, const char *id,
	    const char *tenant, int64_t idle_before_ms, int64_t now_ms,
	    char version[16]);
/* End it (its cancels with it): OK, or NOTFOUND. */
int	 sg_store_mcp_delete(struct sg_store *, const char *id,
	    const char *tenant);
/* The client cancelled request (its JSON-RPC id, as JSON text) of
 * session id: kept until the session goes. */
int	 sg_store_mcp_cancel(struct sg_store *, const char *id,
	    const char *request);
/* Whether request of session id was cancelled: OK with *yes. */
int	 sg_store_mcp_cancelled(struct sg_store *, const char *id,
	    const char *request, int *yes);
/* Sessions idle since before idle_before_ms, at most limit: fn(arg, id,
 * tenant) for each (its sandbox to end), then the rows removed; the count
 * into *removed. */
int	 sg_store_mcp_prune(struct sg_store *, int64_t idle_before_ms, int limit,
	    int (*fn)(void *, const char *id, const char *tenant), void *arg,
	    int *removed);

#endif
