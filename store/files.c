/*
 * Files: uploaded ones (/v1/files) and container files. The quota check
 * and the row that reserves its bytes are one transaction, so two uploads
 * racing for the last bytes (or the last file) of a key's quota cannot
 * both have them.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "store.h"

#define FILE_COLUMNS "id, tenant, coalesce(container_id, ''), filename, " \
	"coalesce(path, ''), coalesce(purpose, ''), coalesce(source, ''), " \
	"state, bytes, coalesce(owner_pid, 0), coalesce(owner_start, 0), " \
	"created_at, expires_at, coalesce(box, '')"

static void
text(struct sg_st_cur *stmt, int i, char *out, size_t sz)
{
	const char *t = sg_st_text(stmt, i);

	snprintf(out, sz, "%s", t != NULL ? (const char *)t : "");
}

static void
row(struct sg_st_cur *stmt, struct sg_store_file *f)
{
	text(stmt, 0, f->id, sizeof(f->id));
	text(stmt, 1, f->tenant, sizeof(f->tenant));
	text(stmt, 2, f->container_id, sizeof(f->container_id));
	text(stmt, 3, f->filename, sizeof(f->filename));
	text(stmt, 4, f->path, sizeof(f->path));
	text(stmt, 5, f->purpose, sizeof(f->purpose));
	text(stmt, 6, f->source, sizeof(f->source));
	text(stmt, 7, f->state, sizeof(f->state));
	f->bytes = sg_st_int(stmt, 8);
	f->owner_pid = sg_st_int(stmt, 9);
	f->owner_start = sg_st_int(stmt, 10);
	f->created_at = sg_st_int(stmt, 11);
	f->expires_at = sg_st_int(stmt, 12);
	text(stmt, 13, f->box, sizeof(f->box));
}

/* "" as NULL, for the columns that are NULL when unused. */
static const char *
opt(const char *s)
{
	return s[0] != '\0' ? s : NULL;
}

int
sg_store_file_begin(struct sg_store *st, const struct sg_store_file *f,
    struct sg_store_quota *q)
{
	struct sg_st_cur *stmt;
	int rc;

	if ((rc = sg_st_begin(st)) != SG_STORE_OK)
		return rc;
	rc = sg_st_run(st, &stmt, "SELECT coalesce(sum(bytes), 0), count(*) "
	    "FROM files WHERE tenant = ?", "s", f->tenant);
	if (rc < 0)
		return sg_st_end(st, rc);
	q->bytes = sg_st_int(stmt, 0);
	q->files = sg_st_int(stmt, 1);
	sg_st_done(st, stmt);
	if (q->bytes + f->bytes > q->max_bytes || q->files >= q->max_files)
		return sg_st_end(st, SG_STORE_FULL);
	rc = sg_st_exec_args(st, NULL, "INSERT INTO files (id, tenant, "
	    "container_id, filename, path, purpose, source, state, bytes, "
	    "owner_pid, owner_start, created_at, expires_at, box) VALUES (?, ?, "
	    "?, ?, ?, ?, ?, 'uploading', ?, ?, ?, ?, ?, ?)", "sssssssiiiiis",
	    f->id, f->tenant, opt(f->container_id), f->filename, opt(f->path),
	    opt(f->purpose), opt(f->source), f->bytes, f->owner_pid,
	    f->owner_start, f->created_at, f->expires_at, st->box);
	return sg_st_end(st, rc);
}

int
sg_store_file_ready(struct sg_store *st, const struct sg_store_file *f)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "UPDATE files SET state = 'ready', "
	    "bytes = ?, filename = ?, purpose = ?, path = ?, expires_at = ?, "
	    "owner_pid = NULL, owner_start = NULL WHERE id = ?", "isssis",
	    f->bytes, f->filename, opt(f->purpose), opt(f->path), f->expires_at,
	    f->id);
	return rc == SG_STORE_OK && changes == 0 ? SG_STORE_NOTFOUND : rc;
}

int
sg_store_file_get(struct sg_store *st, const char *id, const char *tenant,
    const char *container, struct sg_store_file *out)
{
	struct sg_st_cur *stmt;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sg_st_run(st, &stmt, "SELECT " FILE_COLUMNS " FROM files WHERE "
	    "id = ? AND (?2 IS NULL OR tenant = ?2) AND (?3 = '*' OR "
	    "coalesce(container_id, '') = ?3)", "sss", id, tenant,
	    container != NULL ? container : "");
	if (rc < 0)
		return rc;
	if (rc == SG_ST_ROW)
		row(stmt, out);
	sg_st_done(st, stmt);
	return rc == SG_ST_ROW ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_file_list(struct sg_store *st, const char *tenant,
    const char *container, const char *purpose, const char *after, int limit,
    int asc, int (*fn)(void *, const struct sg_store_file *), void *arg,
    int *more)
{
	struct sg_store_file f;
	struct sg_st_cur *stmt;
	const char *sql;
	int rc, n = 0;

	*more = 0;
	if (after != NULL && sg_store_file_get(st, after, tenant, container,
	    &f) != SG_STORE_OK)
		return SG_STORE_NOTFOUND;
	/* One more than asked: whether there are more. */
	sql = asc ? "SELECT " FILE_COLUMNS " FROM files WHERE tenant = ?1 AND "
	    "coalesce(container_id, '') = ?2 AND state = 'ready' AND (?3 IS "
	    "NULL OR purpose = ?3) AND (?4 IS NULL OR (created_at, rowid) > "
	    "(SELECT created_at, rowid FROM files WHERE id = ?4)) ORDER BY "
	    "created_at, rowid LIMIT ?5" :
	    "SELECT " FILE_COLUMNS " FROM files WHERE tenant = ?1 AND "
	    "coalesce(container_id, '') = ?2 AND state = 'ready' AND (?3 IS "
	    "NULL OR purpose = ?3) AND (?4 IS NULL OR (created_at, rowid) < "
	    "(SELECT created_at, rowid FROM files WHERE id = ?4)) ORDER BY "
	    "created_at DESC, rowid DESC LIMIT ?5";
	for (rc = sg_st_run(st, &stmt, sql, "ssssi", tenant, container != NULL ?
	    container : "", purpose, after, (int64_t)limit + 1);
	    rc == SG_ST_ROW; rc = sg_st_next(st, stmt)) {
		if (n++ == limit) {
			*more = 1;
			break;
		}
		row(stmt, &f);
		if (fn(arg, &f) == -1)
			break;
	}
	return sg_st_finish(st, stmt, rc, "list files");
}

int
sg_store_file_at(struct sg_store *st, const char *tenant,
    const char *container, const char *path, const char *except,
    struct sg_store_file *out)
{
	struct sg_st_cur *stmt;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sg_st_run(st, &stmt, "SELECT " FILE_COLUMNS " FROM files WHERE "
	    "container_id = ? AND path = ? AND tenant = ? AND state = 'ready' "
	    "AND (?4 IS NULL OR id <> ?4) ORDER BY created_at DESC, rowid DESC "
	    "LIMIT 1", "ssss", container, path, tenant, except);
	if (rc < 0)
		return rc;
	if (rc == SG_ST_ROW)
		row(stmt, out);
	sg_st_done(st, stmt);
	return rc == SG_ST_ROW ? SG_STORE_OK : SG_STORE_NOTFOUND;
}

int
sg_store_file_remove(struct sg_store *st, const char *id, const char *tenant)
{
	int changes = 0, rc;

	rc = sg_st_exec_args(st, &changes, "DELETE FROM files WHERE id = ? AND "
	    "(?2 IS NULL OR tenant = ?2)", "ss", id, tenant);
	return rc == SG_STORE_OK && changes == 0 ? SG_STORE_NOTFOUND : rc;
}

int
sg_store_file_due(struct sg_store *st, int64_t now, int64_t forget,
    int limit, int (*fn)(void *, const struct sg_store_file *), void *arg)
{
	struct sg_store_file f;
	struct sg_st_cur *stmt;
	int rc;

	/* Another box's files are left out in the query, not after it: a
	 * batch of them must not hide this box's. */
	for (rc = sg_st_run(st, &stmt, "SELECT " FILE_COLUMNS " FROM files "
	    "WHERE (expires_at < ?1 OR state = 'uploading') AND (?2 IS NULL OR "
	    "box IS NULL OR box = ?2 OR expires_at < ?3) ORDER BY expires_at "
	    "LIMIT ?4", "isii", now, sg_store_shared(st) ? st->box : NULL,
	    forget, (int64_t)limit); rc == SG_ST_ROW;
	    rc = sg_st_next(st, stmt)) {
		row(stmt, &f);
		if (fn(arg, &f) == -1)
			break;
	}
	return sg_st_finish(st, stmt, rc, "files due");
}
