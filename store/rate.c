/*
 * Rate windows on a shared store (usage.h): one upsert a request, whose
 * SET reads the row as it was, so the window's reset, the check and the
 * count are one atomic step under the row's lock in both backends.
 */
#include <string.h>

#include "internal.h"
#include "usage.h"

int
sg_store_rate_take(struct sg_store *st, const char *tenant, int64_t now_ms,
    int64_t window_ms, int64_t max_requests, int64_t max_tokens,
    struct sg_store_rate *out)
{
	struct sg_st_cur *cur;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sg_st_run(st, &cur, "INSERT INTO rates (tenant, start_ms, "
	    "requests, tokens, ok) VALUES (?1, ?2, 1, 0, 1) ON CONFLICT (tenant) "
	    "DO UPDATE SET "
	    "ok = CASE WHEN rates.start_ms <= ?2 - ?3 THEN 1 "
	    "  WHEN (?4 = 0 OR rates.requests < ?4) AND "
	    "  (?5 = 0 OR rates.tokens < ?5) THEN 1 ELSE 0 END, "
	    "requests = CASE WHEN rates.start_ms <= ?2 - ?3 THEN 1 "
	    "  WHEN (?4 = 0 OR rates.requests < ?4) AND "
	    "  (?5 = 0 OR rates.tokens < ?5) THEN rates.requests + 1 "
	    "  ELSE rates.requests END, "
	    "tokens = CASE WHEN rates.start_ms <= ?2 - ?3 THEN 0 "
	    "  ELSE rates.tokens END, "
	    "start_ms = CASE WHEN rates.start_ms <= ?2 - ?3 THEN ?2 "
	    "  ELSE rates.start_ms END "
	    "RETURNING start_ms, requests, tokens, ok", "siiii", tenant, now_ms,
	    window_ms, max_requests, max_tokens);
	if (rc == SG_ST_ROW) {
		out->start_ms = sg_st_int(cur, 0);
		out->requests = sg_st_int(cur, 1);
		out->tokens = sg_st_int(cur, 2);
		out->ok = sg_st_int(cur, 3) != 0;
	}
	return sg_st_finish(st, cur, rc, "rate window");
}

int
sg_store_rate_tokens(struct sg_store *st, const char *tenant,
    int64_t start_ms, int64_t tokens)
{
	return sg_st_exec_args(st, NULL, "UPDATE rates SET tokens = tokens + ? "
	    "WHERE tenant = ? AND start_ms = ?", "isi", tokens, tenant,
	    start_ms);
}
