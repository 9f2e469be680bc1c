/*
 * The MCP tools' results as values, and the sandbox's paths and URIs:
 * pure functions (mcp_tool.h), so they are tested without a sandbox.
 * A run's result is the sandbox's, the attacker's: what is sent is
 * rebuilt to the schema the tool declares (clients validate it), never
 * copied through.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "mcp_tool.h"
#include "../loop/rewrite.h"
#include "../state/sandbox.h"

static const char B64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

json_t *
sg_mcp_text(int is_error, json_t *sc, const char *fmt, ...)
{
	va_list ap;
	char *text;
	int n;
	json_t *r;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0) {
		json_decref(sc);
		return NULL;
	}
	r = json_pack("{s:[{s:s,s:o}],s:b}", "content", "type", "text", "text",
	    sg_json_string_lossy(text, (size_t)n), "isError", is_error);
	free(text);
	if (r != NULL && sc != NULL)
		json_object_set(r, "structuredContent", sc);
	json_decref(sc);
	return r;
}

int
sg_mcp_arg_string(const json_t *args, const char *name, int required,
    size_t max, const char **s, json_t **bad)
{
	const json_t *v = json_object_get(args, name);

	*s = NULL;
	*bad = NULL;
	if (v == NULL && !required)
		return 0;
	if (v == NULL)
		*bad = sg_mcp_text(1, NULL, "Invalid arguments: the argument "
		    "'%s' is required.", name);
	else if (!json_is_string(v))
		*bad = sg_mcp_text(1, NULL, "Invalid arguments: '%s' must be a "
		    "string.", name);
	else if (strlen(json_string_value(v)) != json_string_length(v))
		*bad = sg_mcp_text(1, NULL, "Invalid arguments: '%s' may not "
		    "hold a NUL character.", name);
	else if (json_string_length(v) > max)
		*bad = sg_mcp_text(1, NULL, "'%s' is too large (%zu bytes; at "
		    "most %zu).", name, json_string_length(v), max);
	else {
		*s = json_string_value(v);
		return 0;
	}
	return -1;
}

json_t *
sg_mcp_run_schema(void)
{
	return json_pack("{s:s,s:{s:{s:s},s:{s:s},s:{s:s,s:{s:s}},"
	    "s:{s:[ss],s:{s:{s:s},s:{s:s},s:{s:[ss]}}},s:{s:[ss]}},"
	    "s:[sssss]}",
	    "type", "object", "properties",
	    "stdout", "type", "string",
	    "stderr", "type", "string",
	    "results", "type", "array", "items", "type", "object",
	    "error", "type", "object", "null", "properties",
	    "name", "type", "string", "value", "type", "string",
	    "traceback", "type", "string", "null",
	    "execution_count", "type", "integer", "null",
	    "required", "stdout", "stderr", "results", "error",
	    "execution_count");
}

/* A result's formats whose bytes are not text: they go as parts (or not
 * at all), never twice. */
static int
binary(const char *key)
{
	return strcmp(key, "png") == 0 || strcmp(key, "jpeg") == 0 ||
	    strcmp(key, "pdf") == 0;
}

/* The same of a MIME type in a result's "extra". */
static int
binary_mime(const char *mime)
{
	if (strcmp(mime, "image/svg+xml") == 0)
		return 0;
	return strncmp(mime, "image/", 6) == 0 || strncmp(mime, "audio/",
	    6) == 0 || strncmp(mime, "video/", 6) == 0 ||
	    strcmp(mime, "application/pdf") == 0;
}

/* New reference: a run's result for structuredContent. */
static json_t *
sc_result(const json_t *r)
{
	json_t *o = json_object(), *formats = json_array(), *v, *extra, *x;
	const char *k, *mk;

	json_object_foreach((json_t *)r, k, v) {
		if (strcmp(k, "formats") == 0)
			continue;
		if (strcmp(k, "is_main_result") == 0) {
			json_object_set_new(o, k, json_boolean(json_is_true(v)));
			continue;
		}
		if (strcmp(k, "extra") == 0) {
			if (!json_is_object(v))
				continue;
			extra = json_object();
			json_object_foreach(v, mk, x)
				if (!binary_mime(mk))
					json_object_set(extra, mk, x);
			json_object_set_new(o, k, extra);
			continue;
		}
		json_array_append_new(formats, json_string(k));
		if (!binary(k))
			json_object_set(o, k, v);
	}
	json_object_set_new(o, "formats", formats);
	return o;
}

/* New reference: the run's error as the schema has it, or null. */
static json_t *
sc_error(const json_t *e)
{
	const json_t *tb = json_object_get(e, "traceback");

	if (!json_is_object(e))
		return json_null();
	return json_pack("{s:s,s:s,s:O}",
	    "name", json_is_string(json_object_get(e, "name")) ?
	    json_string_value(json_object_get(e, "name")) : "Error",
	    "value", json_is_string(json_object_get(e, "value")) ?
	    json_string_value(json_object_get(e, "value")) : "",
	    "traceback", json_is_string(tb) ? tb : json_null());
}

static json_t *
sc_string(const json_t *run, const char *key)
{
	const json_t *v = json_object_get(run, key);

	return json_is_string(v) ? json_copy((json_t *)v) : json_string("");
}

static json_t *
structured(const json_t *run)
{
	const json_t *count = json_object_get(run, "execution_count"), *r;
	json_t *sc, *results = json_array();
	size_t i;

	json_array_foreach(json_object_get(run, "results"), i, r)
		if (json_is_object(r))
			json_array_append_new(results, sc_result(r));
	sc = json_pack("{s:o,s:o,s:o,s:o,s:o}",
	    "stdout", sc_string(run, "stdout"),
	    "stderr", sc_string(run, "stderr"),
	    "results", results,
	    "error", sc_error(json_object_get(run, "error")),
	    "execution_count", json_is_integer(count) ?
	    json_integer(json_integer_value(count)) : json_null());
	return sc;
}

/* The image parts of a run's results, in their order. */
static void
images(json_t *content, const json_t *run)
{
	static const struct {
		const char *key, *mime;
	} kinds[] = { { "png", "image/png" }, { "jpeg", "image/jpeg" } };
	const json_t *r, *v;
	size_t i, k;

	json_array_foreach(json_object_get(run, "results"), i, r)
		for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			v = json_object_get(r, kinds[k].key);
			/* Clients check the base64 and fail the whole result
			 * on a bad one: a sandbox's is checked first. */
			if (json_is_string(v) && sg_mcp_b64_ok(
			    json_string_value(v), json_string_length(v)))
				json_array_append_new(content, json_pack(
				    "{s:s,s:O,s:s}", "type", "image", "data", v,
				    "mimeType", kinds[k].mime));
		}
}

json_t *
sg_mcp_run_result(const json_t *run, const char *note)
{
	char *text = sg_rw_tool_result(run);
	json_t *content, *r;

	if (text == NULL)
		return NULL;
	content = json_pack("[{s:s,s:s+}]", "type", "text", "text",
	    note != NULL ? note : "", text);
	free(text);
	if (content == NULL)
		return NULL;
	images(content, run);
	r = json_pack("{s:o,s:o,s:b}", "content", content,
	    "structuredContent", structured(run), "isError", 0);
	return r;
}

int
sg_mcp_path(const char *in, int dir_ok, char *out, char *why, size_t whysz)
{
	const size_t dl = strlen(SG_SBX_DATA_DIR);
	const char *p = in, *c;
	size_t n, len = dl, parts = 0;

	if (in[0] == '/') {
		if (strncmp(in, SG_SBX_DATA_DIR, dl) != 0 || (in[dl] != '\0' &&
		    in[dl] != '/')) {
			snprintf(why, whysz, "the path must be under %s",
			    SG_SBX_DATA_DIR);
			return -1;
		}
		p = in + dl;
	}
	for (c = p; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			snprintf(why, whysz, "the path holds a control "
			    "character");
			return -1;
		}
	memcpy(out, SG_SBX_DATA_DIR, dl + 1);
	for (;;) {
		p += strspn(p, "/");
		if (*p == '\0')
			break;
		n = strcspn(p, "/");
		if (n == 2 && strncmp(p, "..", 2) == 0) {
			snprintf(why, whysz, "the path may not hold \"..\"");
			return -1;
		}
		if (!(n == 1 && p[0] == '.')) {
			if (len + 1 + n >= SG_MCP_PATH_MAX) {
				snprintf(why, whysz, "the path is too long");
				return -1;
			}
			out[len++] = '/';
			memcpy(out + len, p, n);
			out[len += n] = '\0';
			parts++;
		}
		p += n;
	}
	if (parts == 0 && !dir_ok) {
		snprintf(why, whysz, "the path must name a file under %s",
		    SG_SBX_DATA_DIR);
		return -1;
	}
	return 0;
}

/* What a URI's path keeps as it is (RFC 3986 pchar and "/"): no '?',
 * '#', '%' or '+'. */
#define URI_KEEP	"-._~/!$&'()*,;=:@"

char *
sg_mcp_uri(const char *path)
{
	size_t pl = strlen(SG_MCP_URI_PREFIX), sz = pl + 3 * strlen(path) + 1;
	char *uri = malloc(sz);

	if (uri == NULL)
		return NULL;
	memcpy(uri, SG_MCP_URI_PREFIX, pl);
	if (sg_pct_encode(path, URI_KEEP, uri + pl, sz - pl) == -1) {
		free(uri);
		return NULL;
	}
	return uri;
}

int
sg_mcp_uri_path(const char *uri, char *out)
{
	size_t pl = strlen(SG_MCP_URI_PREFIX), o = 0;
	char dec[SG_MCP_PATH_MAX], why[128];
	const char *p;
	int hi, lo;

	if (strncmp(uri, SG_MCP_URI_PREFIX, pl) != 0 || uri[pl] != '/')
		return -1;
	for (p = uri + pl; *p != '\0'; p++) {
		if (o + 1 >= sizeof(dec) || *p == '?' || *p == '#')
			return -1;
		if (*p != '%') {
			dec[o++] = *p;
			continue;
		}
		if ((hi = sg_hexval(p[1])) == -1 || (lo = sg_hexval(p[2])) == -1 ||
		    hi * 16 + lo == 0)
			return -1;
		dec[o++] = (char)(hi * 16 + lo);
		p += 2;
	}
	dec[o] = '\0';
	return sg_mcp_path(dec, 0, out, why, sizeof(why));
}

const char *
sg_mcp_mime(const char *path)
{
	static const char *const types[][2] = {
		{ "txt", "text/plain" }, { "log", "text/plain" },
		{ "md", "text/markdown" }, { "csv", "text/csv" },
		{ "tsv", "text/tab-separated-values" }, { "html", "text/html" },
		{ "htm", "text/html" }, { "css", "text/css" },
		{ "js", "text/javascript" }, { "py", "text/x-python" },
		{ "sh", "text/x-shellscript" }, { "tex", "text/x-tex" },
		{ "json", "application/json" }, { "xml", "application/xml" },
		{ "yaml", "application/yaml" }, { "yml", "application/yaml" },
		{ "toml", "application/toml" },
		{ "ipynb", "application/x-ipynb+json" },
		{ "svg", "image/svg+xml" }, { "png", "image/png" },
		{ "jpg", "image/jpeg" }, { "jpeg", "image/jpeg" },
		{ "gif", "image/gif" }, { "webp", "image/webp" },
		{ "pdf", "application/pdf" }, { "zip", "application/zip" },
		{ "gz", "application/gzip" }, { "parquet",
		    "application/vnd.apache.parquet" },
		{ "xlsx", "application/vnd.openxmlformats-officedocument."
		    "spreadsheetml.sheet" },
		{ "docx", "application/vnd.openxmlformats-officedocument."
		    "wordprocessingml.document" },
		{ "pptx", "application/vnd.openxmlformats-officedocument."
		    "presentationml.presentation" },
	};
	const char *base = strrchr(path, '/'), *dot;
	size_t i;

	base = base != NULL ? base + 1 : path;
	if ((dot = strrchr(base, '.')) == NULL || dot == base)
		return NULL;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcasecmp(dot + 1, types[i][0]) == 0)
			return types[i][1];
	return NULL;
}

/* Whether a type's bytes are text when they are valid UTF-8. */
static int
textish(const char *mime)
{
	static const char *const text[] = { "application/json",
	    "application/xml", "application/yaml", "application/toml",
	    "application/x-ipynb+json", "image/svg+xml" };
	size_t i;

	if (mime == NULL || strncmp(mime, "text/", 5) == 0)
		return 1;
	for (i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		if (strcmp(mime, text[i]) == 0)
			return 1;
	return 0;
}

int
sg_mcp_is_text(const char *mime, const char *p, size_t *n, int cut)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, k;

	if (!textish(mime))
		return 0;
	while (i < *n) {
		if (s[i] == '\0')
			return 0;
		if ((k = sg_utf8_len(s + i, *n - i)) == 0) {
			/* A character the cut split: at most 3 bytes, each
			 * of a sequence that is only too short. */
			if (cut && *n - i < 4 && s[i] >= 0xc2) {
				*n = i;
				return 1;
			}
			return 0;
		}
		i += k;
	}
	return 1;
}

int
sg_mcp_b64_ok(const char *s, size_t n)
{
	size_t body = n;

	if (s == NULL || n == 0 || n % 4 != 0)
		return 0;
	if (s[n - 1] == '=')
		body -= s[n - 2] == '=' ? 2 : 1;
	/* strspn stops at a NUL inside the string too. */
	return strspn(s, B64) == body;
}

json_t *
sg_mcp_b64(const void *p, size_t n)
{
	size_t sz = 4 * ((n + 2) / 3) + 1;
	unsigned char *out;
	json_t *s;
	int len;

	if (n > (size_t)(SG_MCP_FILE_MAX * 2) || (out = malloc(sz)) == NULL)
		return NULL;
	len = EVP_EncodeBlock(out, p, (int)n);
	s = json_stringn((const char *)out, (size_t)len);
	free(out);
	return s;
}

int
sg_mcp_unb64(const char *s, size_t n, struct sg_buf *out)
{
	struct sg_buf clean = { 0 };
	size_t i, pad, cap;
	int len, rc = -1;

	for (i = 0; i < n; i++)
		if (strchr(" \t\r\n", s[i]) == NULL || s[i] == '\0')
			if (sg_buf_add(&clean, s + i, 1) == -1)
				goto done;
	out->len = 0;
	if (clean.len == 0) {
		rc = sg_buf_add(out, "", 0);
		goto done;
	}
	if (!sg_mcp_b64_ok(clean.p, clean.len))
		goto done;
	pad = clean.p[clean.len - 1] != '=' ? 0 : clean.p[clean.len - 2] ==
	    '=' ? 2 : 1;
	cap = clean.len / 4 * 3 + 1;
	if (out->cap < cap) {
		char *np = realloc(out->p, cap);

		if (np == NULL)
			goto done;
		out->p = np;
		out->cap = cap;
	}
	len = EVP_DecodeBlock((unsigned char *)out->p,
	    (const unsigned char *)clean.p, (int)clean.len);
	if (len < 0)
		goto done;
	out->len = (size_t)len - pad;
	out->p[out->len] = '\0';
	rc = 0;
done:
	free(clean.p);
	return rc;
}
