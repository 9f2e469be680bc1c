/*
 * The request as core sees it, and the output interface fcgi/ implements.
 * core/ never includes fcgi/: it writes CGI-style responses ("Status:",
 * headers, blank line, body) through struct sg_out, so every handler can be
 * driven by a unit test with a memory-backed sg_out.
 */
#ifndef SG_HTTP_H
#define SG_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "error.h"

struct sg_after;
struct sg_cfg_key;

struct sg_out {
	/* 0 on success, -1 when the client is gone. */
	int	(*write)(struct sg_out *, const void *, size_t);
	int	(*flush)(struct sg_out *);
	/* 1 while the client is still connected. Cheap: may be polled. */
	int	(*alive)(struct sg_out *);
	/* Set by sg_http_*: whether the head went out, and its status. */
	int	 started;
	int	 status;
};

/*
 * A request body its handler reads as it goes (uploads: never whole in
 * memory) instead of sg_req.body. read: up to len bytes into buf; 0 at
 * the body's end, -1 when the client broke off or went quiet past
 * read_timeout.
 */
struct sg_in {
	long	(*read)(struct sg_in *, void *buf, size_t len);
};

struct sg_req {
	const char	*method;	/* borrowed from the server's params */
	const char	*uri;		/* REQUEST_URI, raw */
	char		 path[1024];	/* uri minus mount prefix, no query */
	const char	*authorization;	/* HTTP_AUTHORIZATION or NULL */
	const char	*content_type;
	const char	*if_none_match;	/* HTTP_IF_NONE_MATCH or NULL */
	/* Any other CGI parameter ("HTTP_ORIGIN"...) of the request: the
	 * server's; NULL (unit tests) reads as none. sg_http_param. */
	const char	*(*param)(void *arg, const char *name);
	void		*param_arg;
	char		*body;		/* owned, NUL-terminated */
	size_t		 body_len;
	struct sg_in	*in;		/* instead of body, for the routes
					 * sg_gw_streams says */
	long long	 content_length;	/* -1 when not given */
	char		 id[40];	/* "req_" + hex, x-request-id */
	/* When set, the request is a background job its runner runs: the
	 * id its Responses answer takes (given when it was queued, with its
	 * first events and wall_ms, its created_at); else the answer makes
	 * its own. */
	char		 resp_id[64];
	/* Work left for after the answer (after.h), its caller's: NULL
	 * when the caller runs none (it is done at once). */
	struct sg_after	*after;
	int64_t		 start_ms;	/* sg_now_ms: for timing */
	int64_t		 wall_ms;	/* when it came, unix ms */
	/* Filled as the request is handled, for the log line. */
	char		 key_name[64];
	char		 tenant[65];
	const struct sg_cfg_key *key;	/* borrowed; NULL: store key or
					 * anonymous */
	char		 model[128];
	int		 route;		/* enum sg_route, once routed */
	/* Head lines every answer to it carries ("Name: value\r\n"...):
	 * the key's rate limits (core/state/limits.h). */
	char		 head[640];
	/* The key's tokens are held to a limit (tpm, a budget): a Chat
	 * stream relayed for it asks the upstream for its usage... */
	int		 metered;
	/* ... and, when the client did not ask, the usage the client would
	 * not have had is taken out of what it is sent. */
	int		 strip_usage;
};

/*
 * The value of query parameter name in uri (percent- and '+'-decoded) into
 * out[outsz]: 1; 0 when absent; -1 when it does not fit or holds a NUL.
 * "name[]" is matched by name[] as given.
 */
int	 sg_http_query(const char *uri, const char *name, char *out,
	    size_t outsz);

/*
 * Each parameter of uri's query, in order: fn(arg, name, value), both
 * percent- and '+'-decoded and borrowed for the call; value NULL when it
 * does not decode or holds a NUL (a name that does not is skipped). For
 * what repeats (a=1&a=2, a[]=1): sg_http_query gives only the first. fn
 * returns -1 to stop: then -1 (or when out of memory), else 0.
 */
int	 sg_http_query_each(const char *uri,
	    int (*fn)(void *, const char *name, const char *value), void *arg);

/* CGI parameter name of req ("HTTP_ORIGIN"), or NULL. */
const char *sg_http_param(const struct sg_req *, const char *name);

/* A list's limit (dflt when absent, 1..max), order (desc unless "asc")
 * and after (the cursor id, "" when absent) from the query, checked as
 * OpenAI does: 0, or -1 with err. */
int	 sg_http_page_args(const struct sg_req *, long dflt, long max,
	    long *limit, int *desc, char *after, size_t aftersz,
	    struct sg_error *err);
/* New reference: one page of all (oldest first, borrowed): after the item
 * whose "id" is after ("" from the start), newest first when desc, at
 * most limit; *more when items are left. */
json_t	*sg_http_page(const json_t *all, long limit, int desc,
	    const char *after, int *more);
/* New reference: {"object":"list","data","first_id","last_id","has_more"};
 * data is stolen. */
json_t	*sg_http_list(json_t *data, int more);

/* New reference: the body as a JSON object ({} when empty), or NULL with
 * OpenAI's 400 in err. */
json_t	*sg_http_body_object(const struct sg_req *, struct sg_error *);
/*
 * Whether the body may be parsed: at most max_values JSON values and
 * nested at most SG_HTTP_BODY_DEPTH deep (Jansson spends tens of bytes on
 * each value, so a body of max_body_bytes made of "0," would build a tree
 * of hundreds of MiB). 0, or -1 with OpenAI's 400 request_too_complex.
 */
#define SG_HTTP_BODY_DEPTH	128
int	 sg_http_body_bounded(const struct sg_req *, size_t max_values,
	    struct sg_error *);

/* Head of a response; extra is NULL or "Name: value\r\n..." lines. */
int	 sg_http_begin(struct sg_out *, const struct sg_req *, int status,
	    const char *content_type, const char *extra);
int	 sg_http_write(struct sg_out *, const void *, size_t);
/* Whole JSON response. body is borrowed. */
int	 sg_http_json(struct sg_out *, const struct sg_req *, int status,
	    const json_t *body);
/* OpenAI-shaped error response; a no-op if the head already went out. */
int	 sg_http_error(struct sg_out *, const struct sg_req *,
	    const struct sg_error *);
/* The same with extra head lines ("Name: value\r\n...", e.g. retry-after). */
int	 sg_http_error_head(struct sg_out *, const struct sg_req *,
	    const struct sg_error *, const char *extra);
const char *sg_http_reason(int status);

#endif
