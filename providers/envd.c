/*
 * envd's files API: e2b's sandboxes serve it on port 49983, and the local
 * kernel serves the same subset on its socket, so one client does both
 * (../shared/reference/e2b-protocol.md §6). Paths are the sandbox's own;
 * files are written as envd's default user, "user".
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define UPLOAD_MS	300000

/* path percent-encoded into out as a query value: 0, or -1 when it does
 * not fit. */
static int
query_value(const char *path, char *out, size_t sz)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	unsigned char c;

	for (; *path != '\0'; path++) {
		c = (unsigned char)*path;
		if (o + 4 > sz)
			return -1;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-._~/", c) != NULL)
			out[o++] = (char)c;
		else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

int
sg_envd_put(struct sg_prov *p, const char *base, struct sg_hdrs *h,
    const char *path, int fd, int64_t size, struct sg_prov_error *err)
{
	char url[4096], q[3072];
	json_t *resp = NULL;
	long status = 0;
	int rc;

	if (query_value(path, q, sizeof(q)) == -1 || snprintf(url, sizeof(url),
	    "%s/files?path=%s&username=user", base, q) >= (int)sizeof(url))
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "a path too long for "
		    "the sandbox");
	sg_hdrs_add(h, "Content-Type: application/octet-stream");
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
