/*
 * Opening the store (a SQLite file, or a PostgreSQL database by its URL),
 * API keys and their settings, and the response ids relayed to each key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "../lib/util.h"

/* Relayed ids are kept this long (OpenAI keeps responses 30 days). */
#define RELAYED_TTL	(30 * 86400)
/* Rows pruned per insert: the index finds them, and the work per
 * request stays small however many expired at once. */
#define RELAYED_PRUNE	64

int
sg_store_is_url(const char *where)
{
	return strncmp(where, "postgresql://", 13) == 0 ||
	    strncmp(where, "postgres://", 11) == 0;
}

int
sg_store_open(const char *where, struct sg_store **out, char *err,
    size_t errsz)
{
	struct sg_store *st;
	int rc;

	*out = NULL;
	if ((st = calloc(1, sizeof(*st))) == NULL) {
		snprintf(err, errsz, "out of memory");
		return SG_STORE_ERROR;
	}
	if (gethostname(st->box, sizeof(st->box)) == -1 || st->box[0] == '\0')
		snprintf(st->box, sizeof(st->box), "localhost");
	st->box[sizeof(st->box) - 1] = '\0';
	st->kind = sg_store_is_url(where) ? SG_ST_PG : SG_ST_SQLITE;
	rc = st->kind == SG_ST_PG ? sg_pg_open(st, where, err, errsz) :
	    sg_sq_open(st, where, err, errsz);
	if (rc != SG_STORE_OK) {
		sg_store_close(st);
		return rc;
	}
	*out = st;
	return SG_STORE_OK;
}

void
sg_store_close(struct sg_store *st)
{
	if (st == NULL)
		return;
	if (st->kind == SG_ST_PG)
		sg_pg_close(st);
	else
		sg_sq_close(st);
	free(st);
}

int
sg_store_set_box(struct sg_store *st, const char *box)
{
	if (box == NULL || box[0] == '\0' || strlen(box) > SG_STORE_BOX_MAX)
		return sg_st_err(st, "box name empty or too long");
	sg_copy(st->box, sizeof(st->box), box);
	return SG_STORE_OK;
}

const char *
sg_store_box(const struct sg_store *st)
{
	return st->box;
}

int
sg_store_shared(const struct sg_store *st)
{
	return st->kind == SG_ST_PG;
}

int
sg_store_ping(struct sg_store *st)
{
	struct sg_st_cur *cur;
	int rc;

	rc = sg_st_run(st, &cur, "SELECT 1", "");
	sg_st_done(st, cur);
	return rc < 0 ? rc : SG_STORE_OK;
}

int
sg_store_key_add(struct sg_store *st, const char *name, const char *sha256)
{
	return sg_st_exec_args(st, NULL, "INSERT INTO keys (name, sha256, "
	    "created_at) VALUES (?, ?, ?)", "ssi", name, sha256,
	    (int64_t)time(NULL));
}

/* s copied into buf at *used, which grows by its size whether or not it
 * fits: the copy, or NULL (s NULL, or buf full). */
static const char *
stash(const char *s, char *buf, size_t bufsz, size_t *used)
{
	size_t n;

	if (s == NULL)
		return NULL;
	n = strlen(s) + 1;
	*used += n;
	if (*used > bufsz)
		return NULL;
	return memcpy(buf + *used - n, s, n);
}

int
sg_store_key_get(struct sg_store *st, const char *sha256,
    struct sg_store_key *out, char *buf, size_t bufsz)
{
	struct sg_st_cur *stmt;
	size_t used = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sg_st_run(st, &stmt, "SELECT id, name, sha256, created_at, "
	    "settings FROM keys WHERE sha256 = ? AND revoked_at IS NULL", "s",
	    sha256);
	if (rc < 0)
		return rc;
	if (rc != SG_ST_ROW) {
		sg_st_done(st, stmt);
		return SG_STORE_NOTFOUND;
	}
	out->id = sg_st_int(stmt, 0);
	out->name = stash(sg_st_text(stmt, 1), buf, bufsz, &used);
	out->sha256 = stash(sg_st_text(stmt, 2), buf, bufsz, &used);
	out->created_at = sg_st_int(stmt, 3);
	out->settings = stash(sg_st_text(stmt, 4), buf, bufsz, &used);
	sg_st_done(st, stmt);
	if (used > bufsz) {
		memset(out, 0, sizeof(*out));
		return sg_st_err(st, "key: %zu bytes needed for its name and "
		    "settings, %zu given", used, bufsz);
	}
	return SG_STORE_OK;
}

int
sg_store_key_settings(struct sg_store *st, const char *name,
    const char *settings)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "UPDATE keys SET settings = ? WHERE "
	    "name = ? AND revoked_at IS NULL", "ss", settings, name);
	if (rc != SG_STORE_OK)
		return rc;
	return changes > 0 ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_key_revoke(struct sg_store *st, const char *name)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "UPDATE keys SET revoked_at = ? WHERE "
	    "name = ? AND revoked_at IS NULL", "is", (int64_t)time(NULL), name);
	if (rc != SG_STORE_OK)
		return rc;
	return changes > 0 ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_key_list(struct sg_store *st,
    int (*fn)(void *, const struct sg_store_key *), void *arg)
{
	struct sg_store_key k;
	struct sg_st_cur *stmt;
	int rc;

	for (rc = sg_st_run(st, &stmt, "SELECT id, name, sha256, created_at, "
	    "coalesce(revoked_at, 0), settings FROM keys ORDER BY id", "");
	    rc == SG_ST_ROW; rc = sg_st_next(st, stmt)) {
		k.id = sg_st_int(stmt, 0);
		k.name = sg_st_text(stmt, 1);
		k.sha256 = sg_st_text(stmt, 2);
		k.created_at = sg_st_int(stmt, 3);
		k.revoked_at = sg_st_int(stmt, 4);
		k.settings = sg_st_text(stmt, 5);
		if (fn(arg, &k) == -1)
			break;
	}
	return sg_st_finish(st, stmt, rc, "list keys");
}

int
sg_store_relayed_put(struct sg_store *st, const char *upstream_id,
    const char *tenant, const char *upstream)
{
	int64_t now = (int64_t)time(NULL);
	int rc;

	rc = sg_st_exec_args(st, NULL, "INSERT INTO relayed (upstream_id, tenant, "
	    "upstream, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (upstream_id, "
	    "tenant, upstream) DO UPDATE SET created_at = excluded.created_at", "sssi",
	    upstream_id, tenant, upstream, now);
	if (rc != SG_STORE_OK)
		return rc;
	return sg_st_exec_args(st, NULL, "DELETE FROM relayed WHERE rowid IN (SELECT "
	    "rowid FROM relayed WHERE created_at < ? LIMIT ?)", "ii",
	    now - RELAYED_TTL, (int64_t)RELAYED_PRUNE);
}

int
sg_store_relayed_has(struct sg_store *st, const char *upstream_id,
    const char *tenant, const char *upstream)
{
	struct sg_st_cur *stmt;
	int rc;

	rc = sg_st_run(st, &stmt, "SELECT 1 FROM relayed WHERE upstream_id = ? AND "
	    "tenant = ? AND upstream = ? AND created_at >= ?", "sssi",
	    upstream_id, tenant, upstream, (int64_t)time(NULL) - RELAYED_TTL);
	if (rc < 0)
		return rc;
	rc = rc == SG_ST_ROW ? SG_STORE_OK : SG_STORE_NOTFOUND;
	sg_st_done(st, stmt);
	return rc;
}
