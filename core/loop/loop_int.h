/*
 * The interception loop's private parts, shared by loop.c (a request:
 * its turns, its answer) and calls.c (a turn's calls of the code tool).
 * Nothing outside those includes it.
 */
#ifndef SG_LOOP_INT_H
#define SG_LOOP_INT_H

#include <jansson.h>

#include "loop.h"
#include "rewrite.h"
#include "session.h"
#include "turn.h"
#include "wdump.h"
#include "../render/cite.h"
#include "../render/stream.h"
#include "../state/convo.h"

/* One request in the loop. */
struct run {
	struct sg_loop_env	*env;
	const struct sg_cfg_model *m;
	enum sg_surface		 s;
	const struct sg_req	*req;
	struct sg_out		*out;
	const char		*tool;		/* the function tool's name; ""
						 * when the client has no code tool */
	struct sg_rw_info	 info;
	json_t			*work;		/* the body sent upstream */
	struct sg_wdump		 wd;		/* and its text, in part */
	json_t			*output;	/* Responses: items for the client */
	json_t			*texts;		/* Chat: each turn's text */
	json_t			*client_calls;	/* calls of the client's tools */
	json_t			*usage;		/* summed over every turn */
	json_t			*prints;	/* fingerprints of code rounds */
	struct sg_bind		 bind;		/* the sandbox code runs in */
	struct sg_conv		 conv;		/* Responses: its state */
	struct sg_turn		 last;
	struct sg_stream	*stream;	/* a streaming client's renderer */
	struct sg_cite		 cite;		/* links to the sandbox's files */
	char			 peek[48];	/* a session's sandbox, unbound */
	int			(*stop)(void *);	/* the provider's, saved */
	void			*stop_arg;
};

/* A code call of this turn: {call_id, arguments}. Both surfaces. */
struct call {
	const char	*id;
	const char	*args;
	size_t		 argslen;
	const json_t	*raw;	/* the upstream's item or tool call */
};

/* calls.c */
/* The code tool's calls of turn t into calls (at most max): their count.
 * Calls of the client's own tools go to r->client_calls. */
int	 sg_call_collect(struct run *, struct sg_turn *t, struct call *calls,
	    int max);
/* Whether this round's calls, without their ids, were made before. */
int	 sg_call_repeated(struct run *, struct call *calls, int n);
/* Run one call; its text for the model in *text (new), its client item
 * in *item (new). -1 with err when the sandbox failed. */
int	 sg_call_run(struct run *, const struct call *c, char **text,
	    json_t **item, struct sg_error *err);
/* The follow-up body gets turn t as it came, then the calls' results. */
void	 sg_call_followup(struct run *, struct sg_turn *t, struct call *calls,
	    int n, char **texts, const json_t *outs);
/* New reference: the round's function_call_output items (Responses). */
json_t	*sg_call_outputs(struct run *, struct call *calls, int n,
	    char **texts);
/* The files the round's code wrote, copied out and told after *text. */
void	 sg_call_files(struct run *, char **text);

#endif
