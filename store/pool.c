/*
 * Warm sandboxes: rows of kind SG_SBX_WARM and no tenant, made ahead by
 * the reaper. A claim moves one into the claimer's row in one
 * transaction, so two claims never get the same sandbox; a delete claims
 * its row first (sg_store_sbx_claim_delete), so none gets one on its way
 * out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "store.h"
#include "../lib/util.h"

int
sg_store_pool_begin(struct sg_store *st, const char *id, const char *tool,
    const char *gen, int64_t owner_pid, int64_t owner_start,
    int64_t expires_at)
{
	int64_t now = (int64_t)time(NULL);

	return sg_st_exec_args(st, NULL, "INSERT INTO sandboxes (id, tenant, "
	    "tool, state, kind, owner_pid, owner_start, created_at, "
	    "last_used_at, expires_at, pool_gen, box) VALUES (?, '', ?, "
	    "'creating', ?, ?, ?, ?, ?, ?, ?, ?)", "ssiiiiiiss", id, tool,
	    (int64_t)SG_SBX_WARM, owner_pid, owner_start, now, now, expires_at,
	    gen, st->box);
}

int
sg_store_pool_ready(struct sg_store *st, const char *id, const char *handle,
    int64_t expires_at)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "UPDATE sandboxes SET state = "
	    "'warm', handle = ?, expires_at = ? WHERE id = ? AND state = "
	    "'creating'", "sis", handle, expires_at, id);
	return rc == SG_STORE_OK && changes == 0 ? SG_STORE_NOTFOUND : rc;
}

/* The oldest warm sandbox of tool and gen, inside the transaction. */
static int
oldest(struct sg_store *st, const char *tool, const char *gen, char id[48],
    char **handle, int64_t *expires_at)
{
	struct sg_st_cur *stmt;
	const char *h;
	int rc;

	rc = sg_st_run(st, &stmt, "SELECT id, handle, expires_at FROM sandboxes "
	    "WHERE tool = ? AND kind = ? AND state = 'warm' AND pool_gen = ? "
	    "AND (?4 IS NULL OR box = ?4) AND handle IS NOT NULL ORDER BY "
	    "created_at, rowid LIMIT 1", "siss", tool, (int64_t)SG_SBX_WARM,
	    gen, sg_store_shared(st) ? st->box : NULL);
	if (rc < 0)
		return rc;
	if (rc == SG_ST_ROW) {
		sg_copy(id, 48, sg_st_text(stmt, 0));
		h = sg_st_text(stmt, 1);
		*handle = h != NULL ? strdup(h) : NULL;
		*expires_at = sg_st_int(stmt, 2);
	}
	sg_st_done(st, stmt);
	if (rc == SG_ST_ROW && *handle == NULL)
		return sg_st_err(st, "out of memory");
	return rc == SG_ST_ROW ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_pool_take(struct sg_store *st, const char *id, const char *tool,
    const char *gen)
{
	char warm[48], *handle = NULL;
	int64_t expires_at = 0;
	int changes = 0, rc;

	if ((rc = sg_st_begin(st)) != SG_STORE_OK)
		return rc;
	rc = oldest(st, tool, gen, warm, &handle, &expires_at);
	/* Still warm, or a deleter has it (sg_store_sbx_claim_delete). */
	if (rc == SG_STORE_OK)
		rc = sg_st_exec_args(st, &changes, "DELETE FROM sandboxes WHERE "
		    "id = ? AND state = 'warm'", "s", warm);
	if (rc == SG_STORE_OK && changes == 1)
		rc = sg_st_exec_args(st, &changes, "UPDATE sandboxes SET handle = "
		    "?, state = 'ready', expires_at = ? WHERE id = ? AND state = "
		    "'creating'", "sis", handle, expires_at, id);
	if (rc == SG_STORE_OK && changes != 1)
		rc = SG_STORE_NOTFOUND;
	free(handle);
	return sg_st_end(st, rc);
}

int
sg_store_pool_count(struct sg_store *st, const char *tool, const char *gen,
    int *n)
{
	struct sg_st_cur *stmt;
	int rc;

	*n = 0;
	rc = sg_st_run(st, &stmt, "SELECT count(*) FROM sandboxes WHERE tool = ? "
	    "AND kind = ? AND state IN ('creating', 'warm') AND pool_gen = ? "
	    "AND (?4 IS NULL OR box = ?4)", "siss", tool, (int64_t)SG_SBX_WARM,
	    gen, sg_store_shared(st) ? st->box : NULL);
	if (rc < 0)
		return rc;
	if (rc == SG_ST_ROW)
		*n = (int)sg_st_int(stmt, 0);
	sg_st_done(st, stmt);
	return SG_STORE_OK;
}

int
sg_store_pool_touch(struct sg_store *st, const char *id, int64_t expires_at)
{
	return sg_st_exec_args(st, NULL, "UPDATE sandboxes SET expires_at = ? "
	    "WHERE id = ? AND state = 'warm'", "is", expires_at, id);
}
