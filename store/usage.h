/*
 * The store's ledger (usage.c): one row per request that reached a model
 * or a sandbox, what OpenAI's Usage and Costs APIs are answered from and
 * what a key's budget is counted against; and the request traces
 * (traces.c), each request's loop rounds, kept a shorter while.
 *
 * Rows reach the store in batches (the reaper drains the box's shared
 * ring), so a row may be written twice after a crash between the write
 * and the ring's advance: a row's id (its request id) makes the second
 * write a no-op.
 */
#ifndef SG_STORE_USAGE_H
#define SG_STORE_USAGE_H

#include <stddef.h>
#include <stdint.h>

struct sg_store;

/* Costs are kept in nano-dollars (USD * 1e9): integers sum exactly. */
struct sg_store_use {
	char	 id[40];		/* the request's req_ id */
	char	 tenant[65];		/* key hash, or "anonymous" */
	char	 key_id[32];		/* "key_..." (sg_auth_key_id) */
	char	 key_name[64];
	char	 model[128];		/* as the client named it; "" none */
	char	 upstream_model[128];	/* as the upstream was asked */
	char	 surface[16];		/* responses, chat, files, ... */
	char	 tool[64];		/* the sandbox tool used, or "" */
	int	 status;		/* HTTP status the client got; 0: the
					 * responder died before answering */
	int	 aborted;		/* the client went away first */
	int64_t	 started_ms;		/* unix ms */
	int64_t	 duration_ms;
	int64_t	 input_tokens;		/* cached ones included, as OpenAI */
	int64_t	 cached_tokens;
	int64_t	 output_tokens;		/* reasoning ones included */
	int64_t	 reasoning_tokens;
	int64_t	 model_requests;	/* upstream calls (loop turns) */
	int64_t	 code_runs;
	int64_t	 sandbox_ms;		/* time the sandbox ran code */
	int64_t	 sessions;		/* sandboxes created for the key */
	int64_t	 file_bytes;		/* bytes of files stored */
	int64_t	 cost_input;		/* nano-USD: input (cached included) */
	int64_t	 cost_output;		/* nano-USD: output */
	int64_t	 cost_sandbox;		/* nano-USD: sessions and hours */
};

/*
 * Write n rows in one transaction; a row whose id is there already is
 * skipped. The box (sg_store_box) is recorded with each. A text field is
 * taken up to its array's end, its bytes that are not UTF-8 (a cut
 * character) as '?': PostgreSQL would refuse the whole batch for one.
 * ERROR, nothing written, when a row has no id.
 */
int	 sg_store_use_add(struct sg_store *, const struct sg_store_use *rows,
	    size_t n);

/*
 * What the Usage and Costs APIs read: the rows started in [from_ms,
 * to_ms), summed per bucket (bucket_ms wide, counted from from_ms) and
 * per the columns q->by names, among the rows whose key_id and model are
 * in q's lists (an empty list: any; at most SG_STORE_USE_LIST_MAX each,
 * else ERROR). fn gets each sum in bucket order, then by key_id, model
 * and tool; the columns not grouped by as NULL; it returns -1 to stop.
 * ERROR too when bucket_ms < 1 or to_ms < from_ms. One query.
 */
#define SG_STORE_USE_LIST_MAX	32
enum {
	SG_USE_BY_KEY = 1,	/* key_id (and key_name) */
	SG_USE_BY_MODEL = 2,	/* model */
	SG_USE_BY_TOOL = 4,	/* tool */
};
struct sg_store_use_q {
	int64_t		  from_ms, to_ms, bucket_ms;
	int		  by;			/* SG_USE_BY_* */
	const char	**key_ids;		/* borrowed */
	size_t		  nkey_ids;
	const char	**models;		/* borrowed */
	size_t		  nmodels;
	int		  models_only;	/* only rows with model_requests > 0 */
	int		  sessions_only;	/* only rows that made a sandbox or ran code */
};
struct sg_store_use_sum {
	int64_t		 bucket;		/* 0, 1, ... from from_ms */
	const char	*key_id, *key_name, *model, *tool;	/* borrowed */
	int64_t		 requests;		/* rows */
	int64_t		 input_tokens, cached_tokens, output_tokens,
			 reasoning_tokens, model_requests, code_runs,
			 sandbox_ms, sessions, file_bytes, cost_input,
			 cost_output, cost_sandbox;
};
int	 sg_store_use_sum(struct sg_store *, const struct sg_store_use_q *,
	    int (*fn)(void *, const struct sg_store_use_sum *), void *arg);

/* A key's (tenant's) totals from the start of the UTC day holding
 * since_ms (the ledger's day sums): what its budget and sandbox_seconds
 * are held to. Every box's rows count. */
struct sg_store_use_tot {
	int64_t	 cost;			/* nano-USD, all three parts */
	int64_t	 tokens;		/* input + output */
	int64_t	 sandbox_ms;
	int64_t	 requests;
	int64_t	 last_ms;		/* the newest row's start, 0: none */
};
int	 sg_store_use_total(struct sg_store *, const char *tenant,
	    int64_t since_ms, struct sg_store_use_tot *);

/*
 * rate.c: a key's window (window_ms long, from the request that opened
 * it) on a store several boxes share, taken one request at a time in one
 * statement, so no two boxes both take the last of it: a request is let
 * in (ok 1) while the window's requests are below max_requests and its
 * tokens below max_tokens (0: no such limit); a window past its end
 * starts anew with this request. *out: the window after the take.
 */
struct sg_store_rate {
	int64_t	 start_ms, requests, tokens;
	int	 ok;
};
int	 sg_store_rate_take(struct sg_store *, const char *tenant,
	    int64_t now_ms, int64_t window_ms, int64_t max_requests,
	    int64_t max_tokens, struct sg_store_rate *out);
/* Tokens the upstream reported, counted in the window begun at start_ms
 * (none when a new one began since). */
int	 sg_store_rate_tokens(struct sg_store *, const char *tenant,
	    int64_t start_ms, int64_t tokens);

/*
 * One request's row read back (the admin API's requests): the row as it
 * was added (priced), the box that wrote it, and whether the request's
 * trace is kept (traces.c).
 */
struct sg_store_use_row {
	struct sg_store_use use;
	char		 box[64];	/* SG_STORE_BOX_MAX + 1 */
	int		 has_trace;
};
/* The row of request id: OK or NOTFOUND. */
int	 sg_store_use_get(struct sg_store *, const char *id,
	    struct sg_store_use_row *);
/*
 * Rows newest first (oldest first when asc), among those of key_id,
 * model and status when given (NULL / 0: any; status -1: any not 2xx,
 * a dead responder's 0 included) and started in [from_ms, to_ms) (0:
 * open), after the row id after (NULL: from the first), at most limit:
 * fn for each (-1 stops). *more set when more remain. Ties on started_ms
 * go by id. NOTFOUND when after is not one of them (unknown, or left
 * out by the filters); ERROR when limit < 1. One page is one query (and
 * one more to find after).
 */
struct sg_store_use_lq {
	const char	*key_id, *model, *after;
	int		 status;
	int64_t		 from_ms, to_ms;
	int		 limit;
	int		 asc;
};
int	 sg_store_use_list(struct sg_store *, const struct sg_store_use_lq *,
	    int (*fn)(void *, const struct sg_store_use_row *), void *arg,
	    int *more);

/* Remove at most limit rows started before before_ms (the reaper keeps
 * usage.retention): the count in *removed. */
int	 sg_store_use_prune(struct sg_store *, int64_t before_ms, int limit,
	    int *removed);

/*
 * traces.c: a request's trace: its rounds as JSON text (an array, each
 * round's code, outputs bounded, and timings), and apart from them the
 * images its code made (JSON text too, megabytes of base64 at most: read
 * only with one trace), written once at its end.
 */
struct sg_store_trace {
	const char	*id;		/* req_ */
	const char	*tenant, *key_id, *model;
	int		 status;
	int64_t		 started_ms, duration_ms;
	const char	*rounds;	/* JSON array text */
	const char	*images;	/* JSON array text; NULL: none */
};
/* The box is recorded with it; a trace whose id is there already is
 * skipped (the first stays); text that is not UTF-8 is kept with U+FFFD
 * for its bad bytes. ERROR when id is NULL or "". */
int	 sg_store_trace_add(struct sg_store *, const struct sg_store_trace *);
/* A trace read back: strings new, freed by sg_store_trace_clear. */
struct sg_store_trace_row {
	char		*id, *tenant, *key_id, *model, *rounds, *images, *box;
	int		 status;
	int64_t		 started_ms, duration_ms;
};
/* OK or NOTFOUND. */
int	 sg_store_trace_get(struct sg_store *, const char *id,
	    struct sg_store_trace_row *);
void	 sg_store_trace_clear(struct sg_store_trace_row *);
/*
 * Traces newest first, among those of key_id, model and status when
 * given (NULL / 0: any) and started in [from_ms, to_ms) (0: open), after
 * the trace id after (NULL: from the newest), at most limit: fn for each
 * (rounds and images NULL: a list does not read them); *more set when
 * more remain.
 * Ties on started_ms go by id, descending. NOTFOUND when after is not one
 * of them (unknown, or left out by the filters); ERROR when limit < 1.
 */
struct sg_store_trace_q {
	const char	*key_id, *model, *after;
	int		 status;		/* 0: any; -1: any not 2xx */
	int64_t		 from_ms, to_ms;
	int		 limit;
};
int	 sg_store_trace_list(struct sg_store *, const struct sg_store_trace_q *,
	    int (*fn)(void *, const struct sg_store_trace_row *), void *arg,
	    int *more);
/* Remove at most limit traces started before before_ms. */
int	 sg_store_trace_prune(struct sg_store *, int64_t before_ms, int limit,
	    int *removed);

#endif
