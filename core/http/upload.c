/*
 * Uploads read as they arrive: the multipart parser (lib/multipart.c)
 * hands each part's bytes over as they come, the file part's go to disk
 * at once, and the whole body never sits in memory.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "upload.h"
#include "../../lib/multipart.h"
#include "../../lib/util.h"

#define CHUNK		65536
/* A body may hold a little besides the file: its fields and boundaries. */
#define OVERHEAD	(64 * 1024)

/* What the parser's callbacks share. */
struct recv {
	struct sg_upload	*u;
	struct sg_error		*err;
	int			 failed;	/* err is set */
	int			 in_file;	/* the current part is the file */
	char			*value;		/* the current field's, or NULL */
	size_t			 vlen;
};

int
sg_upload_name_ok(const char *name)
{
	size_t n = strlen(name), i, fixed_len;
	char *fixed;
	int ok;

	if (n == 0 || n > 255 || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f ||
		    name[i] == '/' || name[i] == '\\')
			return 0;
	/* Valid UTF-8: repairing it changes nothing. */
	if ((fixed = sg_utf8_fix(name, n, &fixed_len)) == NULL)
		return 0;
	ok = fixed_len == n && memcmp(fixed, name, n) == 0;
	free(fixed);
	return ok;
}

static int
part_path(const struct sg_upload *u, char *out, size_t sz, int part)
{
	return snprintf(out, sz, "%s/%s%s", u->dir, u->name, part ? ".part" :
	    "") < (int)sz ? 0 : -1;
}

static int
fail(struct recv *r, int status, const char *code, const char *param,
    const char *msg)
{
	if (!r->failed) {
		r->failed = 1;
		if (status >= 500)
			sg_error_server(r->err, status, "%s", msg);
		else
			sg_error_set(r->err, status, "invalid_request_error", code,
			    param, "%s", msg);
	}
	return 1;
}

static int
open_file(struct recv *r, const char *filename)
{
	struct sg_upload *u = r->u;
	char path[4096];

	if (u->have_file)
		return fail(r, 400, "invalid_value", "file", "Only one file may "
		    "be uploaded per request.");
	if (filename == NULL || !sg_upload_name_ok(filename))
		return fail(r, 400, "invalid_value", "file", "The file's name "
		    "must be a plain file name: no path, no '/' or '\\', no "
		    "control characters, at most 255 bytes of UTF-8.");
	sg_copy(u->filename, sizeof(u->filename), filename);
	if ((mkdir(u->dir, 0700) == -1 && errno != EEXIST) ||
	    part_path(u, path, sizeof(path), 1) == -1 ||
	    (u->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1)
		return fail(r, 500, NULL, NULL, "The gateway cannot store "
		    "files.");
	u->have_file = 1;
	r->in_file = 1;
	return 0;
}

static int
on_part(void *arg, const struct sg_mp_part *p)
{
	struct recv *r = arg;
	struct sg_upload *u = r->u;

	if (strcmp(p->name, "file") == 0)
		return open_file(r, p->filename);
	if (u->nfields == SG_UPLOAD_FIELDS || strlen(p->name) >=
	    sizeof(u->fields[0].name))
		return fail(r, 400, "invalid_value", NULL, "Too many form "
		    "fields, or a field name too long.");
	sg_copy(u->fields[u->nfields].name, sizeof(u->fields[0].name),
	    p->name);
	r->value = u->fields[u->nfields++].value;
	r->vlen = 0;
	return 0;
}

static int
write_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
on_data(void *arg, const void *buf, size_t len)
{
	struct recv *r = arg;
	struct sg_upload *u = r->u;
	char msg[160];

	if (r->in_file) {
		if ((u->bytes += (long long)len) > u->max_bytes) {
			snprintf(msg, sizeof(msg), "The file is larger than this "
			    "gateway's limit of %lld bytes.", u->max_bytes);
			return fail(r, 413, "file_too_large", "file", msg);
		}
		if (write_all(u->fd, buf, len) == -1)
			return fail(r, errno == ENOSPC || errno == EDQUOT ? 507 :
			    500, NULL, NULL, "The gateway could not store the "
			    "file.");
		return 0;
	}
	if (r->vlen + len >= SG_UPLOAD_VALUE)
		return fail(r, 400, "invalid_value", NULL, "A form field's value "
		    "is too long.");
	memcpy(r->value + r->vlen, buf, len);
	r->vlen += len;
	r->value[r->vlen] = '\0';
	return 0;
}

static int
on_end(void *arg)
{
	struct recv *r = arg;

	r->in_file = 0;
	r->value = NULL;
	return 0;
}

/* Feed the whole body to mp: 0, or -1 with r's error set. */
static int
pump(struct sg_req *req, struct sg_mp *mp, struct recv *r)
{
	char *buf = malloc(CHUNK);
	long n;

	if (buf == NULL) {
		fail(r, 500, NULL, NULL, "out of memory");
		return -1;
	}
	while ((n = req->in->read(req->in, buf, CHUNK)) > 0)
		if (sg_mp_feed(mp, buf, (size_t)n) == -1)
			break;
	free(buf);
	if (r->failed)
		return -1;
	if (n < 0)
		fail(r, 400, "invalid_value", NULL, "The upload broke off.");
	else if (n > 0 || sg_mp_finish(mp) == -1)
		fail(r, 400, "invalid_value", NULL, sg_mp_error(mp));
	return r->failed ? -1 : 0;
}

int
sg_upload_recv(struct sg_req *req, struct sg_upload *u, struct sg_error *err)
{
	static const struct sg_mp_cb cb = { on_part, on_data, on_end };
	struct recv r = { u, err, 0, 0, NULL, 0 };
	char why[256];
	struct sg_mp *mp;
	int rc;

	u->fd = -1;
	u->bytes = 0;
	u->nfields = 0;
	u->have_file = 0;
	/* Known too large before a byte is read. */
	if (req->content_length > u->max_bytes + OVERHEAD)
		return sg_error_set(err, 413, "invalid_request_error",
		    "file_too_large", "file", "The upload of %lld bytes is "
		    "larger than this gateway's limit of %lld bytes per file.",
		    req->content_length, u->max_bytes);
	if (req->in == NULL || (mp = sg_mp_new(req->content_type != NULL ?
	    req->content_type : "", &cb, &r, why, sizeof(why))) == NULL)
		return sg_error_invalid(err, NULL, "invalid_value", "%s",
		    req->in == NULL ? "Expected a multipart/form-data body with "
		    "a 'file' part." : why);
	rc = pump(req, mp, &r);
	sg_mp_free(mp);
	if (rc == 0 && !u->have_file) {
		fail(&r, 400, NULL, "file", "Missing required parameter: "
		    "'file'.");
		rc = -1;
	}
	if (u->fd != -1 && (fsync(u->fd) == -1 || close(u->fd) == -1) &&
	    rc == 0) {
		fail(&r, 500, NULL, NULL, "The gateway could not store the "
		    "file.");
		rc = -1;
	}
	u->fd = -1;
	if (rc == -1)
		sg_upload_discard(u);
	return rc;
}

const char *
sg_upload_field(const struct sg_upload *u, const char *name)
{
	size_t i;

	for (i = 0; i < u->nfields; i++)
		if (strcmp(u->fields[i].name, name) == 0)
			return u->fields[i].value;
	return NULL;
}

int
sg_upload_commit(struct sg_upload *u, struct sg_error *err)
{
	char from[4096], to[4096];

	if (part_path(u, from, sizeof(from), 1) == -1 ||
	    part_path(u, to, sizeof(to), 0) == -1 || rename(from, to) == -1) {
		sg_upload_discard(u);
		return sg_error_server(err, 500, "The gateway could not store "
		    "the file.");
	}
	return 0;
}

void
sg_upload_discard(struct sg_upload *u)
{
	char path[4096];

	if (u->fd != -1)
		close(u->fd);
	u->fd = -1;
	if (u->have_file && part_path(u, path, sizeof(path), 1) == 0)
		unlink(path);
}
