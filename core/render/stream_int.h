/*
 * Private to the live renderer (stream.c, stream_chat.c): its state, and
 * what both write with.
 */
#ifndef SG_STREAM_INT_H
#define SG_STREAM_INT_H

#include "cite.h"
#include "codedec.h"
#include "stream.h"
#include "../../lib/util.h"

#define MAX_CALLS	64
#define MAX_INDEX	256
#define KEEPALIVE_MS	10000

struct code_call {
	char		 up_item[128];	/* the upstream's function_call item id */
	char		 call_id[128];
	char		 id[48];	/* our ci_ id */
	int		 index;		/* client output index */
	int		 fed;		/* argument deltas seen */
	struct sg_codedec dec;
	struct sg_buf	 shown;		/* the code the client was shown */
	struct sg_stream *s;
};

struct sg_stream {
	enum sg_surface		 surface;
	const struct sg_req	*req;
	struct sg_out		*out;
	const json_t		*body;
	const char		*tool;
	int			 include_outputs;
	sg_stream_sandbox_fn	 sandbox;
	void			*arg;
	int			 begun, dead;
	int64_t			 last_write;
	long			 seq;
	int			 next_index;
	int			 map[MAX_INDEX];	/* upstream index → ours */
	struct code_call	 calls[MAX_CALLS];
	int			 ncalls;
	char			 id[64];		/* resp_ or chatcmpl- */
	int64_t			 created;
	/* Responses: each finished item the client was shown, at its
	 * output index (null where none finished): response.failed's. */
	json_t			*done;
	int64_t			 started;		/* sg_now_ms() at new */
	/* Links to container files: annotated (NULL: never). */
	const struct sg_cite	*cite;
	int			 ann_up;	/* the upstream's own annotations
						 * of the part being written */
	/* Chat */
	int			 role_sent, turn_text, any_text;
	int			 tmap[64];	/* upstream tool index → ours, -1 code */
	int			 next_tool;
};

/* One SSE event (event NULL: a data-only one, Chat's), data borrowed;
 * -1 once the client is gone. */
int	 sg_stream_send(struct sg_stream *, const char *event, json_t *data);
/* Chat: one upstream chunk, and the stream's end. */
void	 sg_stream_chat_event(struct sg_stream *, const json_t *ev);
void	 sg_stream_chat_finish(struct sg_stream *, const json_t *answer);

#endif
