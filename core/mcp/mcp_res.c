/*
 * The MCP server's resources: the files under the session's sandbox's
 * /mnt/data, as sandbox:/mnt/data/<path> URIs. Listing and reading never
 * make a sandbox: a session without one has none. Pages of PAGE files,
 * sorted by path; the cursor is opaque to clients (the base64 of the
 * next offset).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp_tool.h"
#include "../../lib/log.h"

#define PAGE	100

/* A failure reading the sandbox as a JSON-RPC error: the store's detail
 * is logged, not sent. */
static int
failed(struct sg_mcp *m, const struct sg_error *err, struct sg_mcp_err *e)
{
	json_t *r = sg_mcp_failed(m, "resources", err, e);

	if (r == NULL)
		return -1;
	json_decref(r);
	return sg_mcp_err(e, SG_MCP_INTERNAL, "%s", err->message);
}

/* The offset a cursor holds: 0, or -1 when it is not one of ours. */
static int
cursor_offset(const json_t *params, size_t *off)
{
	const json_t *c = json_object_get(params, "cursor");
	struct sg_buf b = { 0 };
	char *end;
	long v;
	int rc = -1;

	*off = 0;
	if (c == NULL || json_is_null(c))
		return 0;
	if (json_is_string(c) && json_string_length(c) <= 16 &&
	    sg_mcp_unb64(json_string_value(c), json_string_length(c), &b) == 0 &&
	    b.len > 0 && b.len < 12 && b.p[0] >= '0' && b.p[0] <= '9') {
		v = strtol(b.p, &end, 10);
		if (*end == '\0' && v >= 0 && v <= SG_MCP_LIST_MAX) {
			*off = (size_t)v;
			rc = 0;
		}
	}
	free(b.p);
	return rc;
}

/* New reference: a listed file as a resource. */
static json_t *
resource(const json_t *f)
{
	const char *path = json_string_value(json_object_get(f, "path"));
	const char *mime = sg_mcp_mime(path);
	char *uri = sg_mcp_uri(path);
	json_t *r;

	if (uri == NULL)
		return NULL;
	r = json_pack("{s:s,s:s,s:I}", "uri", uri, "name", path +
	    strlen(SG_SBX_DATA_DIR) + 1, "size", json_integer_value(
	    json_object_get(f, "size")));
	if (r != NULL && mime != NULL)
		json_object_set_new(r, "mimeType", json_string(mime));
	free(uri);
	return r;
}

int
sg_mcp_res_list(struct sg_mcp *m, const json_t *params, json_t **result,
    struct sg_mcp_err *e)
{
	struct sg_error err;
	json_t *files, *list, *f;
	size_t off, i, seen = 0;
	char next[16];
	int lost = 0;

	*result = NULL;
	if (params != NULL && !json_is_object(params))
		return sg_mcp_err(e, SG_MCP_INVALID_PARAMS, "Invalid params: "
		    "expected an object.");
	if (cursor_offset(params, &off) == -1)
		return sg_mcp_err(e, SG_MCP_INVALID_PARAMS, "Invalid params: "
		    "the cursor is not one this server gave.");
	if (sg_mcp_file_list(m, 0, SG_SBX_DATA_DIR, &files, &lost,
	    &err) != SG_MCP_FILE_OK)
		return failed(m, &err, e);
	list = json_array();
	json_array_foreach(files, i, f) {
		if (sg_sbx_hidden(json_string_value(json_object_get(f, "path")) +
		    strlen(SG_SBX_DATA_DIR) + 1))
			continue;
		if (seen++ < off)
			continue;
		if (json_array_size(list) == PAGE)
			break;
		json_array_append_new(list, resource(f));
	}
	*result = json_pack("{s:o}", "resources", list);
	if (i < json_array_size(files)) {
		snprintf(next, sizeof(next), "%zu", off + PAGE);
		json_object_set_new(*result, "nextCursor", sg_mcp_b64(next,
		    strlen(next)));
	}
	json_decref(files);
	return 0;
}

int
sg_mcp_res_read(struct sg_mcp *m, const json_t *params, json_t **result,
    struct sg_mcp_err *e)
{
	const char *uri = json_string_value(json_object_get(params, "uri"));
	const char *mime;
	char path[SG_MCP_PATH_MAX];
	struct sg_buf b = { 0 };
	struct sg_error err;
	json_t *c;
	size_t n;
	int cut = 0, lost = 0, rc;

	*result = NULL;
	if (uri == NULL)
		return sg_mcp_err(e, SG_MCP_INVALID_PARAMS, "Invalid params: "
		    "'uri' must be a string.");
	if (sg_mcp_uri_path(uri, path) == -1)
		return sg_mcp_err(e, SG_MCP_INVALID_PARAMS, "Invalid params: "
		    "not a file's URI (%s<path>).", SG_MCP_URI_PREFIX
		    SG_SBX_DATA_DIR "/");
	rc = sg_mcp_file_get(m, 0, path, SG_MCP_FILE_MAX, &b, &cut, &lost, &err);
	if (rc == SG_MCP_FILE_NONE) {
		free(b.p);
		sg_mcp_err(e, SG_MCP_NO_RESOURCE, "Resource not found");
		e->data = json_pack("{s:s}", "uri", uri);
		return -1;
	}
	if (rc != SG_MCP_FILE_OK) {
		free(b.p);
		return failed(m, &err, e);
	}
	if (cut) {
		free(b.p);
		return sg_mcp_err(e, SG_MCP_INVALID_PARAMS, "The file is larger "
		    "than %d bytes: too large to read as a resource.",
		    SG_MCP_FILE_MAX);
	}
	mime = sg_mcp_mime(path);
	n = b.len;
	if (sg_mcp_is_text(mime, b.p, &n, 0))
		c = json_pack("{s:s,s:s,s:s%}", "uri", uri, "mimeType",
		    mime != NULL ? mime : "text/plain", "text", b.p, n);
	else
		c = json_pack("{s:s,s:s,s:o}", "uri", uri, "mimeType",
		    mime != NULL ? mime : "application/octet-stream", "blob",
		    sg_mcp_b64(b.p, n));
	free(b.p);
	if (c == NULL)
		return sg_mcp_err(e, SG_MCP_INTERNAL, "Internal error");
	*result = json_pack("{s:[o]}", "contents", c);
	return 0;
}

json_t *
sg_mcp_res_templates(void)
{
	return json_pack("{s:[{s:s,s:s,s:s,s:s}]}", "resourceTemplates",
	    "uriTemplate", SG_MCP_URI_PREFIX SG_SBX_DATA_DIR "/{+path}",
	    "name", "sandbox-file", "title", "A file in the sandbox's "
	    SG_SBX_DATA_DIR, "description", "A file under " SG_SBX_DATA_DIR
	    " in this session's sandbox (resources/list lists them).");
}
