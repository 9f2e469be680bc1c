/*
 * envd's files API: e2b's sandboxes serve it on port 49983, and the local
 * kernel serves the same subset on its socket, so one client does both
 * (../shared/reference/e2b-protocol.md §6). Paths are the sandbox's own;
 * files are written as envd's default user, "user".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../lib/util.h"

#define UPLOAD_MS	300000
#define DOWNLOAD_MS	300000
#define LIST_MS		30000
/* A ListDir answer is the whole tree, directories included, whatever
 * the caller's max (the local kernel sends 20000 entries at most). */
#define LIST_BODY_MAX	(8u << 20)

/* The files API's URL for path: OK, or FAILED when it does not fit. */
static int
files_url(const char *base, const char *path, char *url, size_t sz,
    struct sg_prov_error *err)
{
	char q[3072];

	if (sg_pct_encode(path, "-._~/", q, sizeof(q)) == -1 ||
	    snprintf(url, sz, "%s/files?path=%s&username=user", base, q) >=
	    (int)sz)
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "a path too long for "
		    "the sandbox");
	return SG_PROV_OK;
}

int
sg_envd_put(struct sg_prov *p, const char *base, struct sg_hdrs *h,
    const char *path, int fd, int64_t size, struct sg_prov_error *err)
{
	char url[4096];
	json_t *resp = NULL;
	long status = 0;
	int rc;

	if ((rc = files_url(base, path, url, sizeof(url), err)) != SG_PROV_OK)
		return rc;
	sg_hdrs_add(h, "Content-Type", "application/octet-stream");
	rc = sg_phttp_upload(p, url, h, fd, size, UPLOAD_MS, &status, &resp,
	    err);
	if (rc == SG_PROV_OK && status == 507)
		rc = sg_prov_fail(err, SG_PROV_FAILED, 507, "the sandbox has no "
		    "room for the file");
	else if (rc == SG_PROV_OK && status != 200)
		rc = sg_prov_fail(err, status == 404 || status == 502 ?
		    SG_PROV_GONE : SG_PROV_FAILED, (int)status, "the sandbox "
		    "refused the file (HTTP %ld: %s)", status,
		    sg_phttp_message(resp, "no message"));
	json_decref(resp);
	return rc;
}

/* An EntryInfo's size into *size: protojson writes an int64 as a string,
 * and leaves it out when 0. 0, or -1 when it is not a size. */
static int
entry_size(const json_t *v, int64_t *size)
{
	const char *s = json_string_value(v);
	long long n;
	char *end;

	*size = 0;
	if (v == NULL)
		return 0;
	if (json_is_integer(v))
		n = json_integer_value(v);
	else if (s != NULL && *s >= '0' && *s <= '9') {
		errno = 0;
		n = strtoll(s, &end, 10);
		if (*end != '\0' || errno == ERANGE)
			return -1;
	} else
		return -1;
	if (n < 0)
		return -1;
	*size = n;
	return 0;
}

json_t *
sg_envd_list_files(const json_t *resp, size_t max)
{
	const json_t *entries = json_object_get(resp, "entries"), *e;
	const char *type, *path, *mtime;
	json_t *files;
	int64_t size;
	size_t i;

	/* {} is an empty directory: protojson leaves empty lists out. */
	if (!json_is_object(resp) || (entries != NULL &&
	    !json_is_array(entries)) || (files = json_array()) == NULL)
		return NULL;
	json_array_foreach(entries, i, e) {
		if (json_array_size(files) >= max)
			break;
		type = json_string_value(json_object_get(e, "type"));
		path = json_string_value(json_object_get(e, "path"));
		mtime = json_string_value(json_object_get(e, "modifiedTime"));
		/* A symlink has its target's type: only its symlinkTarget
		 * tells it apart. */
		if (type == NULL || strcmp(type, "FILE_TYPE_FILE") != 0 ||
		    json_object_get(e, "symlinkTarget") != NULL ||
		    path == NULL || path[0] != '/' ||
		    entry_size(json_object_get(e, "size"), &size) == -1)
			continue;
		json_array_append_new(files, json_pack("{s:s,s:I,s:s}", "path",
		    path, "size", (json_int_t)size, "mtime",
		    mtime != NULL ? mtime : ""));
	}
	return files;
}

/* Whether a Connect error body names code ("not_found"...): its HTTP
 * status alone may be a proxy's. */
static int
is_connect_code(const json_t *resp, const char *code)
{
	const char *c = json_string_value(json_object_get(resp, "code"));

	return c != NULL && strcmp(c, code) == 0;
}

/* What ListDir answered, as the list op's result. */
static int
list_answer(long status, const json_t *resp, const char *dir, size_t max,
    json_t **files, struct sg_prov_error *err)
{
	if (status == 200 && (*files = sg_envd_list_files(resp, max)) == NULL)
		return sg_prov_fail(err, SG_PROV_FAILED, 200, "the sandbox's list "
		    "of %s is unreadable", dir);
	if (status == 200)
		return SG_PROV_OK;
	/* The directory is not there: nothing in it. */
	if (status == 404 && is_connect_code(resp, "not_found"))
		return (*files = json_array()) != NULL ? SG_PROV_OK :
		    sg_prov_fail(err, SG_PROV_FAILED, 0, "out of memory");
	/* 502: e2b's proxy has no such sandbox. */
	return sg_prov_fail(err, status == 502 ? SG_PROV_GONE : SG_PROV_FAILED,
	    (int)status, "the sandbox did not list %s (HTTP %ld: %s)", dir,
	    status, sg_phttp_message(resp, "no message"));
}

/* One call of envd's filesystem service (Connect unary, JSON codec), as
 * "user": Basic base64("user:"), the way e2b's SDK names it. */
static int
fs_rpc(struct sg_prov *p, const char *base, struct sg_hdrs *h,
    const char *method, const json_t *body, long *status, json_t **resp,
    struct sg_prov_error *err)
{
	char url[1100];

	if (sg_join(url, sizeof(url), base, "/filesystem.Filesystem/", method,
	    NULL) >= sizeof(url))
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "a sandbox URL too "
		    "long");
	sg_hdrs_add(h, "Connect-Protocol-Version", "1");
	sg_hdrs_add(h, "Authorization", "Basic dXNlcjo=");
	return sg_phttp_call_max(p, "POST", url, h, body, LIST_BODY_MAX,
	    LIST_MS, status, resp, err);
}

int
sg_envd_list(struct sg_prov *p, const char *base, struct sg_hdrs *h,
    const char *dir, size_t max, json_t **files, struct sg_prov_error *err)
{
	json_t *body, *resp = NULL;
	long status = 0;
	int rc;

	*files = NULL;
	if ((body = json_pack("{s:s,s:i}", "path", dir, "depth",
	    SG_PROV_LIST_DEPTH)) == NULL)
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "out of memory");
	rc = fs_rpc(p, base, h, "ListDir", body, &status, &resp, err);
	json_decref(body);
	if (rc == SG_PROV_OK)
		rc = list_answer(status, resp, dir, max, files, err);
	json_decref(resp);
	return rc;
}

int
sg_envd_mkdir(struct sg_prov *p, const char *base, struct sg_hdrs *h,
    const char *dir, struct sg_prov_error *err)
{
	json_t *body, *resp = NULL;
	long status = 0;
	int rc;

	if ((body = json_pack("{s:s}", "path", dir)) == NULL)
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "out of memory");
	rc = fs_rpc(p, base, h, "MakeDir", body, &status, &resp, err);
	json_decref(body);
	if (rc == SG_PROV_OK && status != 200 && !is_connect_code(resp,
	    "already_exists"))
		rc = sg_prov_fail(err, status == 502 ? SG_PROV_GONE :
		    SG_PROV_FAILED, (int)status, "the sandbox did not make %s "
		    "(HTTP %ld: %s)", dir, status, sg_phttp_message(resp,
		    "no message"));
	json_decref(resp);
	return rc;
}

int
sg_envd_get(struct sg_prov *p, const char *base, struct sg_hdrs *h,
    const char *path, int fd, int64_t max, struct sg_prov_error *err)
{
	char url[4096];
	json_t *resp = NULL;
	long status = 0;
	int rc;

	if ((rc = files_url(base, path, url, sizeof(url), err)) != SG_PROV_OK)
		return rc;
	rc = sg_phttp_download(p, url, h, fd, max, DOWNLOAD_MS, &status, &resp,
	    err);
	/* 404: no such file (the proxy says 502 for a sandbox it lost). */
	if (rc == SG_PROV_OK && status != 200)
		rc = sg_prov_fail(err, status == 502 ? SG_PROV_GONE :
		    SG_PROV_FAILED, (int)status, "the sandbox did not give the "
		    "file (HTTP %ld: %s)", status, sg_phttp_message(resp,
		    "no message"));
	json_decref(resp);
	return rc;
}

int
sg_envd(struct sg_prov *p, const char *base, struct sg_hdrs *h,
    const struct sg_envd_req *r, struct sg_prov_error *err)
{
	switch (r->op) {
	case SG_ENVD_PUT:
		return sg_envd_put(p, base, h, r->path, r->fd, r->size, err);
	case SG_ENVD_LIST:
		return sg_envd_list(p, base, h, r->path, r->max, r->files, err);
	case SG_ENVD_GET:
		return sg_envd_get(p, base, h, r->path, r->fd, r->size, err);
	}
	return sg_prov_fail(err, SG_PROV_FAILED, 0, "no such envd call");
}
