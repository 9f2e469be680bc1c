/*
 * Stored responses and their items (store.h). The JSON is opaque text
 * here: the store keeps what core hands it and gives it back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static const char resp_sql[] = "INSERT INTO responses (id, tenant, "
    "upstream_id, model, sandbox_id, prev, body, pending, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
static const char item_sql[] = "INSERT INTO response_items (response_id, "
    "tenant, output, seq, item_id, item, upstream) VALUES (?, ?, ?, ?, ?, "
    "?, ?)";

static int
put_items(struct sg_store *st, const struct sg_store_resp *r, int output,
    const struct sg_store_item *items, size_t n)
{
	size_t i;
	int rc = SG_STORE_OK;

	for (i = 0; i < n && rc == SG_STORE_OK; i++)
		rc = sg_st_exec_args(st, NULL, item_sql, "ssiisss", r->id,
		    r->tenant, (int64_t)output, (int64_t)i, items[i].id,
		    items[i].item, items[i].upstream);
	return rc;
}

/* A response of a few items: one batch, so one round trip. Rows only
 * added, each under its own new key, conflict with no claim: no lock
 * (on PostgreSQL, every box's saves would queue behind one another's
 * commits). */
static int
save_batch(struct sg_store *st, const struct sg_store_resp *r,
    const struct sg_store_item *in, size_t nin,
    const struct sg_store_item *out, size_t nout)
{
	struct sg_st_batch b = { .n = 0 };
	size_t i;

	sg_st_batch_add(st, &b, resp_sql, "ssssssssi", r->id, r->tenant,
	    r->upstream_id != NULL ? r->upstream_id : "", r->model,
	    r->sandbox_id, r->prev, r->body, r->pending, (int64_t)time(NULL));
	for (i = 0; i < nin; i++)
		sg_st_batch_add(st, &b, item_sql, "ssiisss", r->id, r->tenant,
		    (int64_t)0, (int64_t)i, in[i].id, in[i].item, in[i].upstream);
	for (i = 0; i < nout; i++)
		sg_st_batch_add(st, &b, item_sql, "ssiisss", r->id, r->tenant,
		    (int64_t)1, (int64_t)i, out[i].id, out[i].item,
		    out[i].upstream);
	return sg_st_batch_run(st, &b, 0);
}

int
sg_store_resp_save(struct sg_store *st, const struct sg_store_resp *r,
    const struct sg_store_item *in, size_t nin,
    const struct sg_store_item *out, size_t nout)
{
	int rc;

	if (1 + nin + nout <= SG_ST_BATCH_MAX)
		return save_batch(st, r, in, nin, out, nout);
	if ((rc = sg_st_begin_batch(st)) != SG_STORE_OK)
		return rc;
	rc = sg_st_exec_args(st, NULL, resp_sql, "ssssssssi", r->id, r->tenant,
	    r->upstream_id != NULL ? r->upstream_id : "", r->model,
	    r->sandbox_id, r->prev, r->body, r->pending, (int64_t)time(NULL));
	if (rc == SG_STORE_OK)
		rc = put_items(st, r, 0, in, nin);
	if (rc == SG_STORE_OK)
		rc = put_items(st, r, 1, out, nout);
	return sg_st_end(st, rc);
}

int
sg_store_resp_put(struct sg_store *st, const char *id, const char *tenant,
    const char *upstream_id, const char *model, const char *sandbox_id)
{
	struct sg_store_resp r = { .id = id, .tenant = tenant, .model = model,
	    .upstream_id = upstream_id, .sandbox_id = sandbox_id };

	return sg_store_resp_save(st, &r, NULL, 0, NULL, 0);
}

int
sg_store_resp_get(struct sg_store *st, const char *id, const char *tenant,
    char *upstream_id, size_t sz, char *sandbox_id, size_t sbxsz)
{
	struct sg_store_resp_row row;
	int rc;

	if ((rc = sg_store_resp_load(st, id, tenant, &row)) != SG_STORE_OK)
		return rc;
	snprintf(upstream_id, sz, "%s", row.upstream_id != NULL ?
	    row.upstream_id : "");
	if (sandbox_id != NULL)
		snprintf(sandbox_id, sbxsz, "%s", row.sandbox_id != NULL ?
		    row.sandbox_id : "");
	sg_store_resp_clear(&row);
	return SG_STORE_OK;
}

/* New copy of column i, or NULL when it is NULL. */
static char *
column(struct sg_st_cur *stmt, int i)
{
	const char *v = sg_st_text(stmt, i);

	return v != NULL ? strdup((const char *)v) : NULL;
}

int
sg_store_resp_load(struct sg_store *st, const char *id, const char *tenant,
    struct sg_store_resp_row *out)
{
	struct sg_st_cur *stmt;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sg_st_run(st, &stmt, "SELECT id, model, upstream_id, sandbox_id, "
	    "prev, body, pending, created_at FROM responses WHERE id = ? AND "
	    "tenant = ?", "ss", id, tenant);
	if (rc < 0)
		return rc;
	if (rc != SG_ST_ROW) {
		sg_st_done(st, stmt);
		return SG_STORE_NOTFOUND;
	}
	out->id = column(stmt, 0);
	out->model = column(stmt, 1);
	out->upstream_id = column(stmt, 2);
	out->sandbox_id = column(stmt, 3);
	out->prev = column(stmt, 4);
	out->body = column(stmt, 5);
	out->pending = column(stmt, 6);
	out->created_at = sg_st_int(stmt, 7);
	sg_st_done(st, stmt);
	if (out->id == NULL) {
		sg_store_resp_clear(out);
		return sg_st_err(st, "load response: out of memory");
	}
	return SG_STORE_OK;
}

void
sg_store_resp_clear(struct sg_store_resp_row *r)
{
	free(r->id);
	free(r->model);
	free(r->upstream_id);
	free(r->sandbox_id);
	free(r->prev);
	free(r->body);
	free(r->pending);
	memset(r, 0, sizeof(*r));
}

int
sg_store_resp_items(struct sg_store *st, const char *id, int output,
    int (*fn)(void *, const struct sg_store_item *), void *arg)
{
	struct sg_store_item it;
	struct sg_st_cur *stmt;
	int rc;

	for (rc = sg_st_run(st, &stmt, "SELECT item_id, item, upstream FROM "
	    "response_items WHERE response_id = ? AND output = ? ORDER BY seq",
	    "si", id, (int64_t)output); rc == SG_ST_ROW;
	    rc = sg_st_next(st, stmt)) {
		it.id = sg_st_text(stmt, 0);
		it.item = sg_st_text(stmt, 1);
		it.upstream = sg_st_text(stmt, 2);
		if (fn(arg, &it) == -1) {
			rc = SG_ST_DONE;
			break;
		}
	}
	return sg_st_finish(st, stmt, rc, "response items");
}

int
sg_store_item_find(struct sg_store *st, const char *item_id,
    const char *tenant, char **item, char **upstream)
{
	struct sg_st_cur *stmt;
	int rc;

	*item = *upstream = NULL;
	/* The tenant's own first, then the newest. */
	rc = sg_st_run(st, &stmt, "SELECT CASE WHEN tenant = ? THEN 1 ELSE 0 "
	    "END, item, upstream FROM "
	    "response_items WHERE item_id = ? ORDER BY tenant = ? DESC, "
	    "rowid DESC LIMIT 1", "sss", tenant, item_id, tenant);
	if (rc < 0)
		return rc;
	if (rc != SG_ST_ROW)
		rc = SG_STORE_NOTFOUND;
	else if ((int)sg_st_int(stmt, 0) == 0)
		rc = SG_STORE_THEIRS;
	else {
		*item = column(stmt, 1);
		*upstream = column(stmt, 2);
		rc = *item != NULL && *upstream != NULL ? SG_STORE_OK :
		    sg_st_err(st, "find item: out of memory");
	}
	sg_st_done(st, stmt);
	if (rc == SG_STORE_ERROR) {
		free(*item);
		free(*upstream);
		*item = *upstream = NULL;
	}
	return rc;
}

int
sg_store_resp_delete(struct sg_store *st, const char *id, const char *tenant)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "DELETE FROM responses WHERE id = ? "
	    "AND tenant = ?", "ss", id, tenant);
	if (rc != SG_STORE_OK)
		return rc;
	return changes > 0 ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_resp_prune(struct sg_store *st, int64_t before, int limit,
    int *removed)
{
	*removed = 0;
	return sg_st_exec_args(st, removed, "DELETE FROM responses WHERE rowid "
	    "IN (SELECT rowid FROM responses WHERE created_at < ? LIMIT ?)",
	    "ii", before, (int64_t)limit);
}
