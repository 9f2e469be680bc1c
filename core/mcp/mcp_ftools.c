/*
 * The MCP file tools: write_file, read_file, list_files, upload_file,
 * on the session's sandbox's /mnt/data. Reading and listing never make a
 * sandbox (a session without one has no files); writing does. A file id
 * of another key is "No such file", exactly as one that never was.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp_tool.h"
#include "../state/files.h"

/* The path argument name as an absolute path: 0, or -1 with *bad. */
static int
path_arg(const json_t *args, const char *name, int required, int dir_ok,
    char abs[SG_MCP_PATH_MAX], json_t **bad)
{
	const char *in;
	char why[128];

	if (sg_mcp_arg_string(args, name, required, SG_MCP_PATH_MAX - 1, &in,
	    bad) == -1)
		return -1;
	if (sg_mcp_path(in != NULL ? in : "", dir_ok, abs, why,
	    sizeof(why)) == 0)
		return 0;
	*bad = sg_mcp_text(1, NULL, "Invalid arguments: '%s': %s.", name, why);
	return -1;
}

static json_t *
no_file(const char *path)
{
	return sg_mcp_text(1, NULL, "No such file: %s.", path);
}

json_t *
sg_mcp_write_file(struct sg_mcp *m, const json_t *args, struct sg_mcp_err *e)
{
	const char *content, *enc;
	char path[SG_MCP_PATH_MAX];
	struct sg_buf bytes = { 0 };
	struct sg_error err;
	json_t *bad, *out;
	int lost = 0, b64;

	if (path_arg(args, "path", 1, 0, path, &bad) == -1 ||
	    sg_mcp_arg_string(args, "encoding", 0, 16, &enc, &bad) == -1)
		return bad;
	if (enc != NULL && strcmp(enc, "utf-8") != 0 && strcmp(enc,
	    "base64") != 0)
		return sg_mcp_text(1, NULL, "Invalid arguments: 'encoding' must "
		    "be \"utf-8\" or \"base64\".");
	b64 = enc != NULL && strcmp(enc, "base64") == 0;
	/* base64 holds 4 bytes for 3, and may be broken into lines. */
	if (sg_mcp_arg_string(args, "content", 1, b64 ? SG_MCP_FILE_MAX / 3 *
	    4 + SG_MCP_FILE_MAX / 8 : SG_MCP_FILE_MAX, &content, &bad) == -1)
		return bad;
	if (b64 && sg_mcp_unb64(content, strlen(content), &bytes) == -1) {
		free(bytes.p);
		return sg_mcp_text(1, NULL, "Invalid arguments: 'content' is not "
		    "base64.");
	}
	if (b64 && bytes.len > SG_MCP_FILE_MAX) {
		free(bytes.p);
		return sg_mcp_text(1, NULL, "'content' is too large (%zu bytes; "
		    "at most %d).", bytes.len, SG_MCP_FILE_MAX);
	}
	if (sg_mcp_file_put(m, path, b64 ? bytes.p : content, b64 ? bytes.len :
	    strlen(content), &lost, &err) != SG_MCP_FILE_OK)
		out = sg_mcp_failed(m, "write_file", &err, e);
	else
		out = sg_mcp_text(0, json_pack("{s:s,s:I}", "path", path, "size",
		    (json_int_t)(b64 ? bytes.len : strlen(content))),
		    "%sWrote %s (%zu bytes).", lost ? SG_MCP_LOST_NOTE : "", path,
		    b64 ? bytes.len : strlen(content));
	free(bytes.p);
	return out;
}

/* Whether a type is an image a client shows (an image part). */
static int
image(const char *mime)
{
	return mime != NULL && (strcmp(mime, "image/png") == 0 ||
	    strcmp(mime, "image/jpeg") == 0 || strcmp(mime, "image/gif") == 0 ||
	    strcmp(mime, "image/webp") == 0);
}

/* New CallToolResult of a file's bytes b (cut: there are more). */
static json_t *
file_result(const char *path, struct sg_buf *b, int cut)
{
	const char *mime = sg_mcp_mime(path);
	size_t n = b->len;
	json_t *part, *sc, *data, *r;
	char *uri;

	if (sg_mcp_is_text(mime, b->p, &n, cut)) {
		r = sg_mcp_text(0, json_pack("{s:s,s:I,s:s,s:s,s:b}", "path",
		    path, "size", (json_int_t)n, "mime_type", mime != NULL ?
		    mime : "text/plain", "encoding", "utf-8", "truncated", cut),
		    "%.*s", (int)n, b->p);
		if (cut && r != NULL)
			json_array_append_new(json_object_get(r, "content"),
			    json_pack("{s:s,s:s+}", "type", "text", "text",
			    "\n[sandgate: the file is larger than this: only its "
			    "first bytes are shown (at most 10 MiB); read the rest ",
			    "with run_code.]"));
		return r;
	}
	if (cut)
		return sg_mcp_text(1, NULL, "%s is larger than %d bytes: too "
		    "large to read whole; work on it with run_code.", path,
		    SG_MCP_FILE_MAX);
	if (mime == NULL)
		mime = "application/octet-stream";
	if ((data = sg_mcp_b64(b->p, n)) == NULL)
		return NULL;
	if (image(mime))
		part = json_pack("{s:s,s:o,s:s}", "type", "image", "data", data,
		    "mimeType", mime);
	else {
		if ((uri = sg_mcp_uri(path)) == NULL) {
			json_decref(data);
			return NULL;
		}
		part = json_pack("{s:s,s:{s:s,s:s,s:o}}", "type", "resource",
		    "resource", "uri", uri, "mimeType", mime, "blob", data);
		free(uri);
	}
	sc = json_pack("{s:s,s:I,s:s,s:s,s:b}", "path", path, "size",
	    (json_int_t)n, "mime_type", mime, "encoding", "base64",
	    "truncated", 0);
	return json_pack("{s:[o],s:o,s:b}", "content", part,
	    "structuredContent", sc, "isError", 0);
}

json_t *
sg_mcp_read_file(struct sg_mcp *m, const json_t *args, struct sg_mcp_err *e)
{
	char path[SG_MCP_PATH_MAX];
	struct sg_buf b = { 0 };
	struct sg_error err;
	json_t *bad, *out;
	int lost = 0, cut = 0, rc;

	if (path_arg(args, "path", 1, 0, path, &bad) == -1)
		return bad;
	rc = sg_mcp_file_get(m, 0, path, SG_MCP_FILE_MAX, &b, &cut, &lost,
	    &err);
	if (rc == SG_MCP_FILE_NONE)
		out = no_file(path);
	else if (rc != SG_MCP_FILE_OK)
		out = sg_mcp_failed(m, "read_file", &err, e);
	else if ((out = file_result(path, &b, cut)) == NULL)
		sg_mcp_err(e, SG_MCP_INTERNAL, "Internal error");
	free(b.p);
	return out;
}

json_t *
sg_mcp_list_files(struct sg_mcp *m, const json_t *args, struct sg_mcp_err *e)
{
	char dir[SG_MCP_PATH_MAX];
	struct sg_buf t = { 0 };
	struct sg_error err;
	json_t *bad, *files, *f, *out;
	size_t i;
	int lost = 0;

	if (path_arg(args, "path", 0, 1, dir, &bad) == -1)
		return bad;
	if (sg_mcp_file_list(m, 0, dir, &files, &lost, &err) != SG_MCP_FILE_OK)
		return sg_mcp_failed(m, "list_files", &err, e);
	json_array_foreach(files, i, f)
		sg_buf_printf(&t, "%s (%" JSON_INTEGER_FORMAT " bytes)\n",
		    json_string_value(json_object_get(f, "path")),
		    json_integer_value(json_object_get(f, "size")));
	if (json_array_size(files) == 0)
		sg_buf_printf(&t, "No files under %s.", dir);
	else if (json_array_size(files) == SG_MCP_LIST_MAX)
		sg_buf_printf(&t, "(only the first %d are listed)",
		    SG_MCP_LIST_MAX);
	out = sg_mcp_text(0, json_pack("{s:o}", "files", files), "%s",
	    t.p != NULL ? t.p : "");
	free(t.p);
	return out;
}

json_t *
sg_mcp_upload_file(struct sg_mcp *m, const json_t *args, struct sg_mcp_err *e)
{
	struct sg_files_env fenv = { m->env->cfg, m->env->store };
	const char *fid;
	char path[SG_MCP_PATH_MAX], why[128];
	struct sg_store_file f;
	struct sg_error err;
	struct stat st;
	json_t *bad, *out;
	int fd, lost = 0, rc;

	if (sg_mcp_arg_string(args, "file_id", 1, 64, &fid, &bad) == -1 ||
	    (json_object_get(args, "path") != NULL && path_arg(args, "path", 1,
	    0, path, &bad) == -1))
		return bad;
	rc = sg_store_file_get(m->env->store, fid, m->req->tenant, NULL, &f);
	if (rc != SG_STORE_OK && rc != SG_STORE_NOTFOUND) {
		sg_error_store(&err, sg_store_errmsg(m->env->store));
		return sg_mcp_failed(m, "upload_file", &err, e);
	}
	if (rc == SG_STORE_NOTFOUND || strcmp(f.state, "ready") != 0)
		return sg_mcp_text(1, NULL, "No such file: %s.", fid);
	if (json_object_get(args, "path") == NULL && sg_mcp_path(f.filename, 0,
	    path, why, sizeof(why)) == -1)
		return sg_mcp_text(1, NULL, "File %s cannot be put at its name "
		    "(%s): give a path.", fid, why);
	if ((fd = sg_files_open(&fenv, &f, &err)) == -1)
		return sg_mcp_failed(m, "upload_file", &err, e);
	if (fstat(fd, &st) == -1) {
		close(fd);
		return sg_mcp_text(1, NULL, "The bytes of file %s cannot be "
		    "read.", fid);
	}
	if (sg_mcp_file_put_fd(m, path, fd, (int64_t)st.st_size, &lost,
	    &err) != SG_MCP_FILE_OK)
		out = sg_mcp_failed(m, "upload_file", &err, e);
	else
		out = sg_mcp_text(0, json_pack("{s:s,s:I,s:s}", "path", path,
		    "size", (json_int_t)st.st_size, "file_id", fid),
		    "%sPut %s at %s (%lld bytes).", lost ? SG_MCP_LOST_NOTE : "",
		    fid, path, (long long)st.st_size);
	close(fd);
	return out;
}
