/*
 * envd's files API: e2b's sandboxes serve it on port 49983, and the local
 * kernel serves the same subset on its socket, so one client does both
 * (../shared/reference/e2b-protocol.md §6). Paths are the sandbox's own;
 * files are written as envd's default user, "user".
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "../lib/util.h"

#define UPLOAD_MS	300000

int
sg_envd_put(struct sg_prov *p, const char *base, struct sg_hdrs *h,
    const char *path, int fd, int64_t size, struct sg_prov_error *err)
{
	char url[4096], q[3072];
	json_t *resp = NULL;
	long status = 0;
	int rc;

	if (sg_pct_encode(path, "-._~/", q, sizeof(q)) == -1 || snprintf(url, sizeof(url),
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
