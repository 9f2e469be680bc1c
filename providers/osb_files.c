/*
 * OpenSandbox's files: execd's POST /files/upload, a metadata part (its
 * path) then the file part, both with a filename, as execd reads them
 * from Go's form.File (../shared/reference/opensandbox-protocol.md §2.9).
 */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

#define UPLOAD_MS	300000

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
