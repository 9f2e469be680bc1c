/*
 * MCP sessions (mcp.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mcp.h"
#include "../lib/util.h"

int
sg_store_mcp_add(struct sg_store *st, const char *id, const char *tenant,
    const char *version, const char *client, int64_t now_ms)
{
	return sg_st_exec_args(st, NULL, "INSERT INTO mcp_sessions (id, "
	    "tenant, version, client, created_ms, used_ms) VALUES (?, ?, ?, ?, "
	    "?, ?)", "ssssii", id, tenant, version, client, now_ms, now_ms);
}

int
sg_store_mcp_touch(struct sg_store *st, const char *id, const char *tenant,
    int64_t idle_before_ms, int64_t now_ms, char version[16])
{
	struct sg_st_cur *cur;
	int rc, found;

	version[0] = '\0';
	rc = sg_st_run(st, &cur, "UPDATE mcp_sessions SET used_ms = ? WHERE "
	    "id = ? AND tenant = ? AND used_ms >= ? RETURNING version", "issi",
	    now_ms, id, tenant, idle_before_ms);
	if ((found = rc == SG_ST_ROW))
		sg_copy(version, 16, sg_st_text(cur, 0));
	rc = sg_st_finish(st, cur, rc, "mcp session");
	return rc != SG_STORE_OK ? rc : found ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_mcp_delete(struct sg_store *st, const char *id, const char *tenant)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "DELETE FROM mcp_sessions WHERE id = "
	    "? AND tenant = ?", "ss", id, tenant);
	if (rc == SG_STORE_OK && changes > 0)
		rc = sg_st_exec_args(st, NULL, "DELETE FROM mcp_cancels WHERE "
		    "session = ?", "s", id);
	return rc == SG_STORE_OK && changes == 0 ? SG_STORE_NOTFOUND : rc;
}

int
sg_store_mcp_cancel(struct sg_store *st, const char *id, const char *request)
{
	return sg_st_exec_args(st, NULL, "INSERT INTO mcp_cancels (session, "
	    "request, at_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", "ssi",
	    id, request, sg_wall_ms());
}

int
sg_store_mcp_cancelled(struct sg_store *st, const char *id,
    const char *request, int *yes)
{
	struct sg_st_cur *cur;
	int rc;

	rc = sg_st_run(st, &cur, "SELECT 1 FROM mcp_cancels WHERE session = ? "
	    "AND request = ?", "ss", id, request);
	*yes = rc == SG_ST_ROW;
	return sg_st_finish(st, cur, rc, "mcp cancel");
}

struct idle {
	char	 id[SG_STORE_MCP_ID_MAX + 1];
	char	 tenant[65];
};

int
sg_store_mcp_prune(struct sg_store *st, int64_t idle_before_ms, int limit,
    int (*fn)(void *, const char *, const char *), void *arg, int *removed)
{
	struct sg_st_cur *cur;
	struct idle *list;
	int n = 0, i, rc;

	*removed = 0;
	if (limit <= 0 || (list = calloc((size_t)limit, sizeof(*list))) == NULL)
		return limit <= 0 ? SG_STORE_OK : sg_st_err(st, "mcp sessions: "
		    "out of memory");
	/* Read first, then act: fn may use the store. */
	for (rc = sg_st_run(st, &cur, "SELECT id, tenant FROM mcp_sessions "
	    "WHERE used_ms < ? ORDER BY used_ms LIMIT ?", "ii", idle_before_ms,
	    (int64_t)limit); rc == SG_ST_ROW && n < limit;
	    rc = sg_st_next(st, cur), n++) {
		sg_copy(list[n].id, sizeof(list[n].id), sg_st_text(cur, 0));
		sg_copy(list[n].tenant, sizeof(list[n].tenant),
		    sg_st_text(cur, 1));
	}
	rc = sg_st_finish(st, cur, rc, "mcp sessions");
	for (i = 0; i < n && rc == SG_STORE_OK; i++) {
		if (fn != NULL)
			fn(arg, list[i].id, list[i].tenant);
		rc = sg_store_mcp_delete(st, list[i].id, list[i].tenant);
		if (rc == SG_STORE_OK)
			(*removed)++;
		else if (rc == SG_STORE_NOTFOUND)
			rc = SG_STORE_OK;	/* a DELETE meanwhile */
	}
	free(list);
	return rc;
}
