/*
 * sg_lim: a key's limits held (design §3.6): requests and tokens per
 * minute, a budget and sandbox seconds per period.
 *
 * Minutes are fixed windows of 60 s opened by a key's first request:
 * within one, at most rpm requests start, and none once tpm tokens were
 * reported. On a store only this box uses, the window is a counter in
 * shared memory (no store round trip); on a store boxes share, it is a
 * row taken in one atomic statement, so two boxes never both take the
 * last of it. Either way the count is exact under any concurrency.
 *
 * A budget (and sandbox seconds) is held to what the ledger knows of the
 * period: the store's day sums, read at most once a second per key and
 * box, plus the rows this box has not written yet, plus what ended here
 * since the read. What can pass a spent budget is the requests already
 * under way, and on several boxes about a second of the others' spend.
 */
#ifndef SG_LIMITS_H
#define SG_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "../config/config.h"
#include "../http/error.h"

struct sg_store;

/* Map the shared table: 0, or -1 with errno. Once, in the master. */
int	 sg_lim_map(void);

/* What a request is held to: the minute (model routes) or only the
 * period's budget and sandbox seconds (sandbox routes). */
enum sg_lim_what { SG_LIM_MODEL, SG_LIM_SANDBOX };

/*
 * Before a request of tenant, held to lim (sg_cfg_limits_of): 0 when it
 * may start, head then holding the x-ratelimit-* lines its answer
 * carries (when the key has rpm or tpm); -1 when refused with OpenAI's
 * 429 in err (rate_limit_exceeded, or insufficient_quota, which no retry
 * mends) and its head lines (retry-after ...) in head; -1 with a 503 when
 * the store failed.
 */
int	 sg_lim_admit(struct sg_store *, const char *tenant,
	    const struct sg_cfg_limits *, enum sg_lim_what, int64_t now_ms,
	    char *head, size_t headsz, struct sg_error *err);
/* Tokens the upstream reported for the admitted request (its tpm). */
void	 sg_lim_tokens(int64_t tokens);
/* The admitted request ended having cost nano-USD and sandbox_ms. */
void	 sg_lim_end(int64_t cost, int64_t sandbox_ms);

/* A duration as OpenAI writes one in x-ratelimit-reset-*: "20ms", "6s",
 * "1m0s". */
void	 sg_lim_duration(int64_t ms, char *out, size_t sz);

#endif
