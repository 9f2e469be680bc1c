/*
 * What the MCP server's files share (mcp_http.c: the transport;
 * mcp_sess.c: a session's stream and sandbox; mcp_rpc.c: the methods;
 * mcp_tools.c, mcp_ftools.c, mcp_box.c, mcp_result.c: the tools;
 * mcp_res.c: the resources), and no one else.
 */
#ifndef SG_MCP_INT_H
#define SG_MCP_INT_H

#include <jansson.h>

#include "mcp.h"
#include "../../store/mcp.h"

/* JSON-RPC's error codes (and the SDKs' two for the transport). */
#define SG_MCP_PARSE_ERROR	(-32700)
#define SG_MCP_INVALID_REQUEST	(-32600)
#define SG_MCP_NO_METHOD	(-32601)
#define SG_MCP_INVALID_PARAMS	(-32602)
#define SG_MCP_INTERNAL		(-32603)
#define SG_MCP_BAD_REQUEST	(-32000)	/* the transport refused it */
#define SG_MCP_NO_SESSION	(-32001)	/* no such session (404) */
#define SG_MCP_NO_RESOURCE	(-32002)

#define SG_MCP_VERSION		"2025-11-25"	/* the latest we speak */
#define SG_MCP_VERSION_PREV	"2025-06-18"
/* Where the files of a sandbox are, as resource URIs: sandbox:/mnt/data/… */
#define SG_MCP_URI_PREFIX	"sandbox:"

/* A JSON-RPC error to answer: code, message, and data (new, or NULL). */
struct sg_mcp_err {
	int	 code;
	char	 message[512];
	json_t	*data;
};

/* One POST being served: the session, the request in it, its stream. */
struct sg_mcp {
	struct sg_sbx_env	*env;	/* cfg, store, prov, key: borrowed */
	const struct sg_req	*req;	/* tenant */
	struct sg_out		*out;
	char			 session[SG_STORE_MCP_ID_MAX + 1];	/* "" before
					 * initialize */
	char			 version[16];	/* the session's */
	const json_t		*id;	/* the request's JSON-RPC id */
	char			 id_text[80];	/* ... as JSON text: its
					 * cancel's key */
	const json_t		*progress;	/* _meta.progressToken, or NULL */
	double			 progressed;	/* the last progress sent */
	int			 sse_ok;	/* the client takes a stream */
	int			 json_ok;	/* ... and JSON: else all is a
					 * stream */
	int			 streaming;	/* the SSE head went out */
	int			 cancelled;	/* the client cancelled it */
	int			 ended;		/* its session ended meanwhile */
	int64_t			 polled_ms;	/* the cancel last asked */
	int64_t			 wrote_ms;	/* the stream last written */
};

/* mcp_sess.c: the request's answer becomes a stream (SSE head now). 0,
 * or -1 when the client left. */
int	 sg_mcp_begin(struct sg_mcp *);
/* mcp_sess.c: a message to the client on the request's stream (begun
 * now if it was not: SSE); msg borrowed. 0, or -1 when the client left. */
int	 sg_mcp_send(struct sg_mcp *, const json_t *msg);
/* mcp_sess.c: notifications/progress for the request, when its client
 * gave a progress token (else nothing): progress rises with each call;
 * message borrowed, may be NULL. */
void	 sg_mcp_progress(struct sg_mcp *, double progress, const char *message);
/* mcp_sess.c: whether the client cancelled the request, left, or its
 * session ended (DELETE, expiry): polled while a tool runs (the store
 * asked at most once a second). */
int	 sg_mcp_stopped(struct sg_mcp *);
/* mcp_sess.c: the session's sandbox, made now if it has none: 0 with
 * its id and *lost (it had one, which is gone: state lost), or -1 with
 * err (the tool's error, for an isError result). */
int	 sg_mcp_sandbox(struct sg_mcp *, char id[48], int *lost,
	    struct sg_error *);
/* mcp_sess.c: the session's sandbox if it has one, none made: 1 with
 * its id, 0 when it has none, -1 when the store failed (resources list
 * and read a session's files without making a sandbox for them). */
int	 sg_mcp_sandbox_peek(struct sg_mcp *, char id[48]);
/* mcp_sess.c: a request in the session keeps its sandbox alive too, as
 * a run would: a client that only lists and pings between runs does not
 * lose its state to the idle sweep. */
void	 sg_mcp_keep(struct sg_mcp *);
/* mcp_sess.c: end the session's sandbox (reset; DELETE). 0 or -1. */
int	 sg_mcp_sandbox_end(struct sg_mcp *, struct sg_error *);

/* mcp_sess.c: fill e; returns -1. */
int	 sg_mcp_err(struct sg_mcp_err *, int code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* mcp_rpc.c: the result (new) of one request, or -1 with e filled. */
int	 sg_mcp_call(struct sg_mcp *, const char *method, const json_t *params,
	    json_t **result, struct sg_mcp_err *e);

/* mcp_tools.c: the tools (new array, tools/list's), and one call:
 * 0 with *result (new CallToolResult: a tool's own failure is a result
 * with isError), or -1 with a protocol error in e (no such tool, params
 * not an object). */
json_t	*sg_mcp_tools(const struct sg_cfg *);
int	 sg_mcp_tool_call(struct sg_mcp *, const json_t *params,
	    json_t **result, struct sg_mcp_err *e);

/* mcp_res.c: resources/list, resources/read, resources/templates/list:
 * 0 with *result (new), or -1 with e. */
int	 sg_mcp_res_list(struct sg_mcp *, const json_t *params,
	    json_t **result, struct sg_mcp_err *e);
int	 sg_mcp_res_read(struct sg_mcp *, const json_t *params,
	    json_t **result, struct sg_mcp_err *e);
json_t	*sg_mcp_res_templates(void);

#endif
