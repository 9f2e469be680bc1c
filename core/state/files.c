/*
 * The tenants' files, as /v1/files and containers' files share them: a
 * file belongs to the key that uploaded it (or whose code wrote it);
 * another key's is not found. Bytes in files.dir under the file's id
 * (ours, never the client's name), metadata in the store, counted
 * against the key's quota from the first byte. The routes are
 * core/api/files_api.c's and cfiles.c's.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "sandbox.h"
#include "../http/upload.h"
#include "../../lib/util.h"

/* New reference: the file object OpenAI answers. */
json_t *
sg_files_json(const struct sg_store_file *f)
{
	/* status_details is deprecated, and a string when present: left
	 * out rather than null (the spec has no null for it). */
	return json_pack("{s:s,s:s,s:I,s:I,s:o,s:s,s:s,s:s}", "id", f->id,
	    "object", "file", "bytes", (json_int_t)f->bytes, "created_at",
	    (json_int_t)f->created_at, "expires_at", f->expires_at > 0 &&
	    f->expires_at != INT64_MAX ? json_integer(f->expires_at) :
	    json_null(), "filename", f->filename, "purpose", f->purpose,
	    "status", "processed");
}

int
sg_files_path(const struct sg_cfg *cfg, const char *id, char *out, size_t sz)
{
	return snprintf(out, sz, "%s/%s", cfg->files.dir, id) < (int)sz ? 0 : -1;
}

int
sg_files_each_id(const struct sg_files_env *env, const char *tenant,
    const json_t *ids, const char *param, const char *name,
    void (*fn)(void *, const struct sg_store_file *), void *arg,
    struct sg_error *err)
{
	struct sg_store_file f;
	const json_t *v;
	const char *id;
	size_t i;
	int rc;

	if (ids == NULL)
		return 0;
	if (!json_is_array(ids) || json_array_size(ids) > SG_FILES_IDS_MAX)
		return sg_error_set(err, 400, "invalid_request_error",
		    "invalid_value", param, "Invalid '%s': expected an array of "
		    "at most %d file ids.", name, SG_FILES_IDS_MAX);
	json_array_foreach(ids, i, v) {
		/* Ours have 48 bytes at most, with their NUL. */
		if ((id = json_string_value(v)) == NULL ||
		    strlen(id) >= sizeof(f.id))
			return sg_error_set(err, 400, "invalid_request_error",
			    "invalid_value", param, "Invalid '%s': expected file "
			    "ids.", name);
		rc = sg_store_file_get(env->store, id, tenant, NULL, &f);
		if (rc == SG_STORE_OK && strcmp(f.state, "ready") != 0)
			rc = SG_STORE_NOTFOUND;
		if (rc == SG_STORE_NOTFOUND)
			return sg_error_set(err, 404, "invalid_request_error",
			    NULL, param, "No such File object: %s", id);
		if (rc != SG_STORE_OK)
			return sg_error_store(err, sg_store_errmsg(env->store));
		fn(arg, &f);
	}
	return 0;
}

int
sg_files_begin(const struct sg_files_env *env, const char *tenant,
    const char *prefix, size_t idbytes, int64_t reserve,
    struct sg_store_file *f, struct sg_store_quota *held,
    struct sg_error *err)
{
	const struct sg_cfg *cfg = env->cfg;
	struct sg_store_quota q = { cfg->files.max_bytes_per_key,
	    cfg->files.max_files_per_key, 0, 0 };
	int64_t now = (int64_t)time(NULL);
	int rc;

	if (sg_rand_id(f->id, sizeof(f->id), prefix, idbytes) == -1)
		return sg_error_server(err, 500, "no randomness for an id");
	sg_copy(f->tenant, sizeof(f->tenant), tenant);
	f->created_at = now;
	f->expires_at = now + cfg->files.retention;
	f->bytes = reserve;
	f->owner_pid = getpid();
	f->owner_start = sg_self_start();
	rc = sg_store_file_begin(env->store, f, &q);
	if (held != NULL)
		*held = q;
	if (rc == SG_STORE_FULL && q.files >= q.max_files)
		return sg_error_set(err, 413, "invalid_request_error",
		    "quota_exceeded", "file", "This key holds %lld files, as "
		    "many as it may; delete some first.", (long long)q.files);
	if (rc == SG_STORE_FULL)
		return sg_error_set(err, 413, "invalid_request_error",
		    "quota_exceeded", "file", "This key's files would pass its "
		    "quota of %lld bytes; delete some first.",
		    (long long)q.max_bytes);
	if (rc != SG_STORE_OK)
		return sg_error_store(err, sg_store_errmsg(env->store));
	return 0;
}

int
sg_files_upload(const struct sg_files_env *env, struct sg_req *req,
    const char *prefix, size_t idbytes, struct sg_store_file *f,
    struct sg_upload *u, struct sg_error *err)
{
	const struct sg_cfg *cfg = env->cfg;

	/* The bytes the body may hold, held from the key's quota until the
	 * file is whole; the file may have no more (a body longer than its
	 * Content-Length gets 413). */
	if (sg_files_begin(env, req->tenant, prefix, idbytes,
	    req->content_length >= 0 && req->content_length <
	    cfg->files.max_bytes ? req->content_length : cfg->files.max_bytes,
	    f, NULL, err) == -1)
		return -1;
	memset(u, 0, sizeof(*u));
	u->dir = cfg->files.dir;
	u->name = f->id;
	u->max_bytes = f->bytes;
	if (sg_upload_recv(req, u, err) == -1) {
		sg_store_file_remove(env->store, f->id, NULL);
		return -1;
	}
	sg_copy(f->filename, sizeof(f->filename), u->filename);
	f->bytes = u->bytes;
	return 0;
}

void
sg_files_unlink(const struct sg_cfg *cfg, const char *id)
{
	char path[4096], part[4200];

	if (sg_files_path(cfg, id, path, sizeof(path)) == -1)
		return;
	unlink(path);
	/* A writer that died leaves its part behind. */
	snprintf(part, sizeof(part), "%s.part", path);
	unlink(part);
}

/* The ids of a page of files, to remove once the listing is done. */
struct ids {
	char	 id[100][48];
	int	 n;
};

static int
take_id(void *arg, const struct sg_store_file *f)
{
	struct ids *ids = arg;

	sg_copy(ids->id[ids->n++], sizeof(ids->id[0]), f->id);
	return 0;
}

void
sg_files_drop(const struct sg_files_env *env, const char *tenant,
    const char *container)
{
	struct ids ids;
	int i, more = 1, gone = 1;

	/* Page by page from the start; a page none of which could be
	 * removed (the store failing) ends it: the reaper has the rest. */
	while (more && gone > 0) {
		ids.n = gone = 0;
		if (sg_store_file_list(env->store, tenant, container, NULL, NULL,
		    100, 1, take_id, &ids, &more) != SG_STORE_OK)
			return;
		for (i = 0; i < ids.n; i++)
			if (sg_store_file_remove(env->store, ids.id[i], tenant) ==
			    SG_STORE_OK) {
				sg_files_unlink(env->cfg, ids.id[i]);
				gone++;
			}
	}
}

/* The name for Content-Disposition: filename*= carries it whole (RFC
 * 6266/5987); filename= an ASCII stand-in without quotes or escapes. */
static void
disposition(const char *name, char *out, size_t sz)
{
	char ascii[256], enc[800];
	size_t i, a = 0;
	unsigned char c;

	for (i = 0; name[i] != '\0' && a < sizeof(ascii) - 1; i++) {
		c = (unsigned char)name[i];
		ascii[a++] = c < 0x80 && c != '"' && c != '\\' ? (char)c : '_';
	}
	ascii[a] = '\0';
	/* A name is at most 255 bytes: its encoding fits. */
	if (sg_pct_encode(name, "!#$&+-.^_`|~", enc, sizeof(enc)) == -1)
		enc[0] = '\0';
	snprintf(out, sz, "Content-Disposition: attachment; filename=\"%s\"; "
	    "filename*=UTF-8''%s\r\nContent-Length: ", ascii, enc);
}

/* Whether f's bytes were written on another box of a shared store. */
static int
foreign(const struct sg_files_env *env, const struct sg_store_file *f)
{
	return sg_store_shared(env->store) && f->box[0] != '\0' &&
	    strcmp(f->box, sg_store_box(env->store)) != 0;
}

int
sg_files_open(const struct sg_files_env *env, const struct sg_store_file *f,
    struct sg_error *err)
{
	const char *box = sg_store_box(env->store);
	char path[4096];
	int fd;

	if (sg_files_path(env->cfg, f->id, path, sizeof(path)) == 0 &&
	    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) != -1)
		return fd;
	if (foreign(env, f))
		return sg_error_set(err, 421, "invalid_request_error",
		    "file_on_another_box", NULL, "The bytes of file %s are kept "
		    "on box '%s', and this request reached box '%s'. Share "
		    "files.dir between the boxes, or route the key's requests "
		    "to that box.", f->id, f->box, box);
	return sg_error_server(err, 500, "The bytes of file %s are gone.",
	    f->id);
}

int
sg_files_send(const struct sg_files_env *env, const struct sg_store_file *f,
    const struct sg_req *req, struct sg_out *out, struct sg_error *err)
{
	char head[1200], *buf;
	struct stat st;
	size_t n;
	ssize_t got;
	int fd;

	if ((fd = sg_files_open(env, f, err)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || (buf = malloc(65536)) == NULL) {
		close(fd);
		return sg_error_server(err, 500, "The file cannot be read.");
	}
	disposition(f->filename, head, sizeof(head));
	n = strlen(head);
	snprintf(head + n, sizeof(head) - n, "%lld\r\n", (long long)st.st_size);
	if (sg_http_begin(out, req, 200, "application/octet-stream", head) == 0)
		while ((got = read(fd, buf, 65536)) > 0 &&
		    out->write(out, buf, (size_t)got) == 0)
			;
	free(buf);
	close(fd);
	return 0;
}

struct due {
	struct sg_store_file	*rows;
	size_t			 n;
};

static int
collect(void *arg, const struct sg_store_file *f)
{
	struct due *d = arg;
	struct sg_store_file *more = realloc(d->rows, (d->n + 1) * sizeof(*f));

	if (more == NULL)
		return -1;
	d->rows = more;
	d->rows[d->n++] = *f;
	return 0;
}

int
sg_files_prune(const struct sg_files_env *env)
{
	struct due d = { NULL, 0 };
	int64_t now = (int64_t)time(NULL);
	size_t i;
	int removed = 0;

	/* Collect first: nothing is removed under a running read. */
	if (sg_store_file_due(env->store, now, now - SG_BOX_GONE_AFTER, 256,
	    collect, &d) != SG_STORE_OK) {
		free(d.rows);
		return 0;
	}
	for (i = 0; i < d.n; i++) {
		const struct sg_store_file *f = &d.rows[i];
		char path[4096];

		/* Another box's file comes here only long expired (that box
		 * sweeps no more: the query leaves the others out). An upload
		 * still being written by a live process of this box stays. */
		if (!foreign(env, f) && strcmp(f->state, "uploading") == 0 &&
		    f->owner_pid > 0 && sg_proc_start((int)f->owner_pid) ==
		    f->owner_start)
			continue;
		if (sg_store_file_remove(env->store, f->id, NULL) != SG_STORE_OK)
			continue;
		sg_files_unlink(env->cfg, f->id);
		if (sg_files_path(env->cfg, f->id, path, sizeof(path)) == 0 &&
		    strlen(path) + 5 < sizeof(path)) {
			strcat(path, ".part");
			unlink(path);
		}
		removed++;
	}
	free(d.rows);
	return removed;
}
