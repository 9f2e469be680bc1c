/*
 * Conversations and their items (conversations.h). Items are ordered by
 * rowid, the order they came; an id given twice names the newest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conversations.h"
#include "internal.h"
#include "../lib/util.h"

/* Inside the caller's transaction. */
static int
put_items(struct sg_store *st, const char *id, const char *tenant,
    const struct sg_store_item *items, size_t n, int64_t now)
{
	size_t i;
	int rc = SG_STORE_OK;

	for (i = 0; i < n && rc == SG_STORE_OK; i++)
		rc = sg_st_exec_args(st, NULL, "INSERT INTO conversation_items "
		    "(conversation_id, tenant, item_id, item, upstream, "
		    "created_at) VALUES (?, ?, ?, ?, ?, ?)", "sssssi", id, tenant,
		    items[i].id, items[i].item, items[i].upstream, now);
	return rc;
}

int
sg_store_conv_create(struct sg_store *st, const char *id, const char *tenant,
    const char *metadata, const struct sg_store_item *items, size_t n,
    const char *sandbox_id)
{
	int64_t now = (int64_t)time(NULL);
	int rc;

	if ((rc = sg_st_begin(st)) != SG_STORE_OK)
		return rc;
	rc = sg_st_exec_args(st, NULL, "INSERT INTO conversations (id, tenant, "
	    "metadata, sandbox_id, created_at, used_at) VALUES (?, ?, ?, ?, ?, "
	    "?)", "ssssii", id, tenant, metadata, sandbox_id, now, now);
	if (rc == SG_STORE_OK)
		rc = put_items(st, id, tenant, items, n, now);
	return sg_st_end(st, rc);
}

int
sg_store_conv_get(struct sg_store *st, const char *id, const char *tenant,
    struct sg_store_conv *out)
{
	struct sg_st_cur *cur;
	const char *md;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sg_st_run(st, &cur, "SELECT id, metadata, coalesce(sandbox_id, "
	    "''), created_at, used_at FROM conversations WHERE id = ? AND "
	    "tenant = ?", "ss", id, tenant);
	if (rc < 0)
		return rc;
	if (rc != SG_ST_ROW) {
		sg_st_done(st, cur);
		return SG_STORE_NOTFOUND;
	}
	sg_copy(out->id, sizeof(out->id), sg_st_text(cur, 0));
	sg_copy(out->sandbox_id, sizeof(out->sandbox_id),
	    sg_st_text(cur, 2));
	out->created_at = sg_st_int(cur, 3);
	out->used_at = sg_st_int(cur, 4);
	rc = SG_STORE_OK;
	if ((md = sg_st_text(cur, 1)) != NULL &&
	    (out->metadata = strdup(md)) == NULL)
		rc = sg_st_err(st, "load conversation: out of memory");
	sg_st_done(st, cur);
	return rc;
}

void
sg_store_conv_clear(struct sg_store_conv *c)
{
	free(c->metadata);
	memset(c, 0, sizeof(*c));
}

int
sg_store_conv_update(struct sg_store *st, const char *id, const char *tenant,
    const char *metadata)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "UPDATE conversations SET metadata "
	    "= ?, used_at = ? WHERE id = ? AND tenant = ?", "siss", metadata,
	    (int64_t)time(NULL), id, tenant);
	if (rc != SG_STORE_OK)
		return rc;
	return changes > 0 ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_conv_delete(struct sg_store *st, const char *id, const char *tenant)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "DELETE FROM conversations WHERE id "
	    "= ? AND tenant = ?", "ss", id, tenant);
	if (rc != SG_STORE_OK)
		return rc;
	return changes > 0 ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_conv_append(struct sg_store *st, const char *id, const char *tenant,
    const struct sg_store_item *items, size_t n, const char *sandbox_id)
{
	int64_t now = (int64_t)time(NULL);
	int changes = 0, rc;

	if ((rc = sg_st_begin(st)) != SG_STORE_OK)
		return rc;
	/* The claim first: a conversation deleted meanwhile takes none. */
	rc = sg_st_exec_args(st, &changes, "UPDATE conversations SET used_at = "
	    "?, sandbox_id = coalesce(?, sandbox_id) WHERE id = ? AND tenant = "
	    "?", "isss", now, sandbox_id, id, tenant);
	if (rc == SG_STORE_OK && changes == 0)
		rc = SG_STORE_NOTFOUND;
	if (rc == SG_STORE_OK)
		rc = put_items(st, id, tenant, items, n, now);
	return sg_st_end(st, rc);
}

/* The rowid of conversation id's item item_id (the newest of that id):
 * OK, NOTFOUND or an error. */
static int
item_row(struct sg_store *st, const char *id, const char *item_id,
    int64_t *row)
{
	struct sg_st_cur *cur;
	int rc;

	rc = sg_st_run(st, &cur, "SELECT rowid FROM conversation_items WHERE "
	    "conversation_id = ? AND item_id = ? ORDER BY rowid DESC LIMIT 1",
	    "ss", id, item_id);
	if (rc < 0)
		return rc;
	if (rc == SG_ST_ROW)
		*row = sg_st_int(cur, 0);
	sg_st_done(st, cur);
	return rc == SG_ST_ROW ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_conv_items(struct sg_store *st, const char *id, const char *after,
    int limit, int desc, int (*fn)(void *, const struct sg_store_item *),
    void *arg, int *more)
{
	struct sg_store_item it;
	struct sg_st_cur *cur;
	int64_t from = desc ? INT64_MAX : -1;
	int rc, n = 0;

	*more = 0;
	if (after != NULL && after[0] != '\0' &&
	    (rc = item_row(st, id, after, &from)) != SG_STORE_OK)
		return rc;
	/* One more than the page: whether any are left. */
	for (rc = sg_st_run(st, &cur, desc ? "SELECT item_id, item, upstream "
	    "FROM conversation_items WHERE conversation_id = ? AND rowid < ? "
	    "ORDER BY rowid DESC LIMIT ?" : "SELECT item_id, item, upstream "
	    "FROM conversation_items WHERE conversation_id = ? AND rowid > ? "
	    "ORDER BY rowid LIMIT ?", "sii", id, from, limit > 0 ?
	    (int64_t)limit + 1 : INT64_MAX); rc == SG_ST_ROW;
	    rc = sg_st_next(st, cur)) {
		if (limit > 0 && n == limit) {
			*more = 1;
			rc = SG_ST_DONE;
			break;
		}
		n++;
		it.id = sg_st_text(cur, 0);
		it.item = sg_st_text(cur, 1);
		it.upstream = sg_st_text(cur, 2);
		if (fn(arg, &it) == -1) {
			rc = SG_ST_DONE;
			break;
		}
	}
	return sg_st_finish(st, cur, rc, "conversation items");
}

int
sg_store_conv_item_get(struct sg_store *st, const char *id,
    const char *tenant, const char *item_id, char **item)
{
	struct sg_st_cur *cur;
	int rc;

	*item = NULL;
	rc = sg_st_run(st, &cur, "SELECT item FROM conversation_items WHERE "
	    "conversation_id = ? AND tenant = ? AND item_id = ? ORDER BY rowid "
	    "DESC LIMIT 1", "sss", id, tenant, item_id);
	if (rc < 0)
		return rc;
	if (rc != SG_ST_ROW)
		rc = SG_STORE_NOTFOUND;
	else if ((*item = strdup(sg_st_text(cur, 0))) == NULL)
		rc = sg_st_err(st, "conversation item: out of memory");
	else
		rc = SG_STORE_OK;
	sg_st_done(st, cur);
	return rc;
}

int
sg_store_conv_item_delete(struct sg_store *st, const char *id,
    const char *tenant, const char *item_id)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "DELETE FROM conversation_items "
	    "WHERE rowid IN (SELECT rowid FROM conversation_items WHERE "
	    "conversation_id = ? AND tenant = ? AND item_id = ? ORDER BY rowid "
	    "DESC LIMIT 1)", "sss", id, tenant, item_id);
	if (rc == SG_STORE_OK && changes > 0)
		rc = sg_st_exec_args(st, NULL, "UPDATE conversations SET used_at "
		    "= ? WHERE id = ?", "is", (int64_t)time(NULL), id);
	if (rc != SG_STORE_OK)
		return rc;
	return changes > 0 ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_conv_prune(struct sg_store *st, int64_t before, int limit,
    int *removed)
{
	*removed = 0;
	return sg_st_exec_args(st, removed, "DELETE FROM conversations WHERE "
	    "rowid IN (SELECT rowid FROM conversations WHERE used_at < ? LIMIT "
	    "?)", "ii", before, (int64_t)limit);
}
