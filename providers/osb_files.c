/*
 * OpenSandbox's files: execd's POST /files/upload, a metadata part (its
 * path) then the file part, both with a filename, as execd reads them
 * from Go's form.File; GET /files/search and /files/download
 * (../shared/reference/opensandbox-protocol.md §2.9).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../lib/util.h"

#define UPLOAD_MS	300000
#define DOWNLOAD_MS	300000
#define LIST_MS		30000
/* A search answer holds every file under the directory, at any depth,
 * whatever the caller's max. */
#define LIST_BODY_MAX	(8u << 20)

/* The headers a handle says every execd call carries. */
void
sg_osb_execd_headers(const json_t *handle, struct sg_hdrs *h)
{
	const char *name;
	json_t *v;

	json_object_foreach(json_object_get(handle, "headers"), name, v)
		if (json_is_string(v))
			sg_hdrs_add(h, name, json_string_value(v));
}

int
sg_osb_put(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *path, int fd, int64_t size, struct sg_prov_error *err)
{
	const char *execd = json_string_value(json_object_get(handle, "execd"));
	struct sg_hdrs h = { 0 };
	struct sg_form_part parts[2];
	char url[1100], *meta;
	json_t *m, *resp = NULL;
	long status = 0;
	int rc;

	(void)t;
	if (execd == NULL)
		return sg_prov_fail(err, SG_PROV_GONE, 0, "OpenSandbox handle "
		    "without an execd endpoint");
	/* mode: the octal digits as a decimal number (644 is 0644). */
	m = json_pack("{s:s,s:i}", "path", path, "mode", 644);
	meta = m != NULL ? json_dumps(m, JSON_COMPACT) : NULL;
	json_decref(m);
	if (meta == NULL)
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "out of memory");
	parts[0] = (struct sg_form_part){ "metadata", "metadata",
	    "application/json", meta, -1, 0 };
	parts[1] = (struct sg_form_part){ "file", path,
	    "application/octet-stream", NULL, fd, size };
	snprintf(url, sizeof(url), "%s/files/upload", execd);
	sg_osb_execd_headers(handle, &h);
	rc = sg_phttp_upload_form(p, url, &h, parts, 2, UPLOAD_MS, &status,
	    &resp, err);
	if (rc == SG_PROV_OK && status != 200)
		rc = sg_prov_fail(err, status == 404 || status == 502 ?
		    SG_PROV_GONE : SG_PROV_FAILED, (int)status, "OpenSandbox "
		    "refused the file (HTTP %ld: %s)", status,
		    sg_phttp_message(resp, "no message"));
	json_decref(resp);
	sg_hdrs_free(&h);
	free(meta);
	return rc;
}

/* How many levels below dir path is (1: in dir itself), or -1 when it is
 * not under dir. */
static int
depth_below(const char *dir, const char *path)
{
	size_t n = strlen(dir);
	int depth = 1;

	while (n > 0 && dir[n - 1] == '/')
		n--;
	if (strncmp(path, dir, n) != 0 || path[n] != '/' || path[n + 1] == '\0')
		return -1;
	for (path += n + 1; *path != '\0'; path++)
		if (*path == '/')
			depth++;
	return depth;
}

json_t *
sg_osb_search_files(const json_t *resp, const char *dir, size_t max)
{
	const char *type, *path, *mtime;
	const json_t *e, *size;
	json_t *files;
	size_t i;
	int depth;

	if (!json_is_array(resp) || (files = json_array()) == NULL)
		return NULL;
	json_array_foreach(resp, i, e) {
		if (json_array_size(files) >= max)
			break;
		type = json_string_value(json_object_get(e, "type"));
		path = json_string_value(json_object_get(e, "path"));
		mtime = json_string_value(json_object_get(e, "modified_at"));
		size = json_object_get(e, "size");
		/* The search walks the whole tree: the list stops where
		 * envd's ListDir would. */
		if (type == NULL || strcmp(type, "file") != 0 || path == NULL ||
		    (depth = depth_below(dir, path)) == -1 ||
		    depth > SG_PROV_LIST_DEPTH || (size != NULL &&
		    (!json_is_integer(size) || json_integer_value(size) < 0)))
			continue;
		json_array_append_new(files, json_pack("{s:s,s:I,s:s}", "path",
		    path, "size", size != NULL ? json_integer_value(size) : 0,
		    "mtime", mtime != NULL ? mtime : ""));
	}
	return files;
}

/* execd's error code for a file or directory that is not there. */
static int
file_not_found(long status, const json_t *resp)
{
	const char *c = json_string_value(json_object_get(resp, "code"));

	return status == 404 && c != NULL && strcmp(c, "FILE_NOT_FOUND") == 0;
}

/* An execd URL for path: 0, or -1 when it does not fit. */
static int
execd_url(const json_t *handle, const char *route, const char *path,
    const char *more, char *url, size_t sz)
{
	const char *execd = json_string_value(json_object_get(handle, "execd"));
	char q[3072];

	if (sg_pct_encode(path, "-._~/", q, sizeof(q)) == -1 ||
	    snprintf(url, sz, "%s%s?path=%s%s", execd, route, q, more) >=
	    (int)sz)
		return -1;
	return 0;
}

/* A 404 that is not execd's FILE_NOT_FOUND is the sandbox's: gone, as a
 * 502 from a proxy in front of it. */
static int
execd_error(long status, const json_t *resp, const char *what,
    const char *path, struct sg_prov_error *err)
{
	return sg_prov_fail(err, status == 404 || status == 502 ?
	    SG_PROV_GONE : SG_PROV_FAILED, (int)status, "OpenSandbox did not "
	    "%s %s (HTTP %ld: %s)", what, path, status, sg_phttp_message(resp,
	    "no message"));
}

/* The URL of execd's route for path, and the headers every execd call
 * carries: OK, or why not. */
static int
execd_begin(const json_t *handle, const char *route, const char *path,
    const char *extra, char *url, size_t sz, struct sg_hdrs *h,
    struct sg_prov_error *err)
{
	if (json_string_value(json_object_get(handle, "execd")) == NULL)
		return sg_prov_fail(err, SG_PROV_GONE, 0, "OpenSandbox handle "
		    "without an execd endpoint");
	if (execd_url(handle, route, path, extra, url, sz) == -1)
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "a path too long for "
		    "the sandbox");
	sg_osb_execd_headers(handle, h);
	return SG_PROV_OK;
}

int
sg_osb_list(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *dir, size_t max, json_t **files, struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	json_t *resp = NULL;
	char url[4096];
	long status = 0;
	int rc;

	(void)t;
	*files = NULL;
	if ((rc = execd_begin(handle, "/files/search", dir, "&pattern=**", url,
	    sizeof(url), &h, err)) != SG_PROV_OK)
		return rc;
	sg_hdrs_add(&h, "Accept", "application/json");
	rc = sg_phttp_call_max(p, "GET", url, &h, NULL, LIST_BODY_MAX, LIST_MS,
	    &status, &resp, err);
	sg_hdrs_free(&h);
	if (rc == SG_PROV_OK && status == 200 &&
	    (*files = sg_osb_search_files(resp, dir, max)) == NULL)
		rc = sg_prov_fail(err, SG_PROV_FAILED, 200, "OpenSandbox's list "
		    "of %s is unreadable", dir);
	else if (rc == SG_PROV_OK && file_not_found(status, resp))
		/* The directory is not there: nothing in it. */
		rc = (*files = json_array()) != NULL ? SG_PROV_OK :
		    sg_prov_fail(err, SG_PROV_FAILED, 0, "out of memory");
	else if (rc == SG_PROV_OK && status != 200)
		rc = execd_error(status, resp, "list", dir, err);
	json_decref(resp);
	return rc;
}

int
sg_osb_get(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *path, int fd, int64_t max, struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	json_t *resp = NULL;
	char url[4096];
	long status = 0;
	int rc;

	(void)t;
	if ((rc = execd_begin(handle, "/files/download", path, "", url,
	    sizeof(url), &h, err)) != SG_PROV_OK)
		return rc;
	rc = sg_phttp_download(p, url, &h, fd, max, DOWNLOAD_MS, &status, &resp,
	    err);
	sg_hdrs_free(&h);
	if (rc == SG_PROV_OK && file_not_found(status, resp))
		rc = sg_prov_fail(err, SG_PROV_FAILED, 404, "OpenSandbox has no "
		    "file %s (%s)", path, sg_phttp_message(resp, "not found"));
	else if (rc == SG_PROV_OK && status != 200)
		rc = execd_error(status, resp, "give", path, err);
	json_decref(resp);
	return rc;
}
