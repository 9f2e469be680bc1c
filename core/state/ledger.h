/*
 * sg_use: what each request spends, on its way to the ledger (the store's
 * usage rows, store/usage.h). A responder serves one request at a time,
 * so its request's row is this process's "current" one, counted into by
 * the parts that spend (the upstream calls, the sandbox runs) as /metrics
 * is, without a handle passed down.
 *
 * The row lives in shared memory the master maps before its first fork:
 * a responder that dies mid-request leaves what it had counted, and the
 * reaper writes it (status 0). A finished row goes into a shared ring
 * the reaper drains into the store in batches, so a request costs a copy,
 * not a store write. Until sg_use_map is called (the CLI, unit tests) the
 * row is the process's own and a finished one is handed to the caller.
 */
#ifndef SG_LEDGER_H
#define SG_LEDGER_H

#include <stdint.h>

#include <jansson.h>

#include "usage_scan.h"
#include "../../store/usage.h"

struct sg_cfg;
struct sg_req;

/* Map the shared rows for nslots responders: 0, or -1 with errno. Once,
 * in the master. */
int	 sg_use_map(int nslots);
/* In a responder: its slot (below nslots). A row a dead responder left
 * in it is finished first. */
void	 sg_use_slot(int slot);

/* A request begins to count: its id, key and surface ("responses",
 * "chat", "sandboxes", "containers", "files"). */
void	 sg_use_begin(const struct sg_req *, const char *surface);
/* The model as the client named it, and as the upstream was asked. */
void	 sg_use_model(const char *model, const char *upstream_model);
/* One call to the model's upstream, whatever came of it. */
void	 sg_use_call(void);
/* fn is told the tokens (input + output) of each usage counted for this
 * process's request (NULL: nobody): how a key's tpm learns of them. */
void	 sg_use_watch(void (*fn)(int64_t tokens));
/* An upstream's usage object, in Responses' names or Chat's. */
void	 sg_use_tokens(const json_t *usage);
/* The counts sg_use_tokens takes from usage (zeros when it is none). */
void	 sg_use_counts(const json_t *usage, struct sg_usage_counts *);
/* The usage in an answer's JSON text, or in one stream event's data:
 * found without parsing the rest (a relayed answer is not parsed). */
void	 sg_use_tokens_in(const char *text, size_t len);
/* Code ran ms in a sandbox of tool; a sandbox of tool was made for the
 * request's key; bytes of a file were stored. */
void	 sg_use_run(const char *tool, int64_t ms);
void	 sg_use_session(const char *tool);
void	 sg_use_file(int64_t bytes);
/*
 * The request ended with status (0: none sent), aborted when the client
 * went first. A row that spent nothing is dropped. Its costs are priced
 * from cfg, and copied to *out. 0 when queued for the reaper (or
 * dropped, or there was none: *out zeroed); 1 when the ring is full or
 * not mapped: the caller writes *out itself.
 */
int	 sg_use_end(const struct sg_cfg *, int status, int aborted,
	    struct sg_store_use *out);

/*
 * The reaper: rows of responders that died mid-request finished (status
 * 0), then every queued row written to store in batches. The count
 * written in *n. 0, or -1 when the store failed (the rows stay queued).
 */
int	 sg_use_drain(const struct sg_cfg *, struct sg_store *, int *n);
/* Whether the ring is a quarter full: drain before the usual time. */
int	 sg_use_filling(void);

/* The cost (nano-USD) and sandbox ms of tenant's rows started since
 * since_ms that wait in the ring for the reaper. */
void	 sg_use_pending(const char *tenant, int64_t since_ms, int64_t *cost,
	    int64_t *sandbox_ms);

/* Price a row's tokens and sandbox time from cfg (nano-USD). */
void	 sg_use_price(const struct sg_cfg *, struct sg_store_use *);

/* The unix ms the budget period (enum sg_period) holding now_ms began:
 * calendar UTC, weeks from Monday. */
int64_t	 sg_use_period_start(int period, int64_t now_ms);
/* ... and the one after it. */
int64_t	 sg_use_period_end(int period, int64_t now_ms);

/* A key's public id ("key_" and 24 hex digits) from its tenant (the key's
 * hash): stable, and says nothing of the key. "key_anonymous" for
 * anonymous callers. */
void	 sg_use_key_id(const char *tenant, char out[32]);

#endif
