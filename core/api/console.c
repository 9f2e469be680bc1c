/*
 * The console's files. Every answer carries a strict policy: the page
 * runs only its own scripts, talks only to its own origin, is framed by
 * nobody, and the browser guesses no type. A page that renders API data
 * as text (console/dom.js) is still the first defence; this is the one
 * that holds when a bug lets markup through.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"
#include "../http/error.h"
#include "../../lib/util.h"

#define BASE_MARK	"{{SANDGATE_BASE}}"

#define POLICY \
	"content-security-policy: default-src 'none'; script-src 'self'; " \
	"style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; " \
	"font-src 'self'; manifest-src 'self'; base-uri 'none'; " \
	"form-action 'none'; frame-ancestors 'none'\r\n" \
	"x-frame-options: DENY\r\n" \
	"x-content-type-options: nosniff\r\n" \
	"referrer-policy: no-referrer\r\n" \
	"cross-origin-opener-policy: same-origin\r\n"

int
sg_console_match(const struct sg_cfg *cfg, const char *path)
{
	size_t n = strlen(cfg->console.path);

	if (!cfg->console.enabled || cfg->auth.nadmins == 0)
		return 0;
	/* "/console" without its "/" is redirected to it. */
	return strncmp(path, cfg->console.path, n) == 0 ||
	    (strncmp(path, cfg->console.path, n - 1) == 0 && path[n - 1] == '\0');
}

static const struct sg_console_file *
find(const char *rel)
{
	const struct sg_console_file *f;

	if (rel[0] == '\0')
		rel = "index.html";
	for (f = sg_console_files; f->path != NULL; f++)
		if (strcmp(f->path, rel) == 0)
			return f;
	return NULL;
}

static void
not_found(const struct sg_req *req, struct sg_out *out)
{
	struct sg_error err;

	sg_error_set(&err, 404, "invalid_request_error", NULL, NULL,
	    "Invalid URL (%s %s)", req->method, req->path);
	sg_http_error(out, req, &err);
}

/* The prefix, escaped for an HTML attribute: new string, or NULL. */
static char *
escaped(const char *s)
{
	struct sg_buf b = { 0 };
	const char *rep;
	char one[2] = { 0 };

	for (; *s != '\0'; s++) {
		switch (*s) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&#39;"; break;
		default: one[0] = *s; rep = one; break;
		}
		if (sg_buf_add(&b, rep, strlen(rep)) == -1) {
			free(b.p);
			return NULL;
		}
	}
	if (sg_buf_add(&b, "", 1) == -1) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* index.html with the mount prefix where it says BASE_MARK: new text in
 * *out (*len), 0; -1 when out of memory. */
static int
page(const struct sg_cfg *cfg, const struct sg_console_file *f, char **out,
    size_t *len)
{
	struct sg_buf b = { 0 };
	const char *p = (const char *)f->data, *mark;
	char *base;

	if ((base = escaped(cfg->server.mount_prefix)) == NULL)
		return -1;
	while ((mark = strstr(p, BASE_MARK)) != NULL) {
		if (sg_buf_add(&b, p, (size_t)(mark - p)) == -1 ||
		    sg_buf_add(&b, base, strlen(base)) == -1)
			goto fail;
		p = mark + strlen(BASE_MARK);
	}
	if (sg_buf_add(&b, p, strlen(p)) == -1)
		goto fail;
	free(base);
	*out = b.p;
	*len = b.len;
	return 0;
fail:
	free(base);
	free(b.p);
	return -1;
}

static int
fresh(const struct sg_req *req, const struct sg_console_file *f)
{
	return req->if_none_match != NULL && (strstr(req->if_none_match,
	    f->etag) != NULL || strcmp(req->if_none_match, "*") == 0);
}

static void
send_file(const struct sg_cfg *cfg, const struct sg_req *req,
    struct sg_out *out, const struct sg_console_file *f)
{
	char head[1024], *text = NULL;
	const void *body = f->data;
	size_t len = f->len;
	struct sg_error err;
	int index = strcmp(f->path, "index.html") == 0;

	/* The page names the prefix, which the config may change: it is
	 * never cached; the rest is revalidated by its ETag. */
	if (index) {
		if (page(cfg, f, &text, &len) == -1) {
			sg_error_server(&err, 500, "out of memory");
			sg_http_error(out, req, &err);
			return;
		}
		body = text;
		snprintf(head, sizeof(head), POLICY "cache-control: no-store\r\n");
	} else
		snprintf(head, sizeof(head), POLICY "cache-control: no-cache\r\n"
		    "etag: %s\r\n", f->etag);
	if (!index && fresh(req, f))
		sg_http_begin(out, req, 304, f->type, head);
	else if (sg_http_begin(out, req, 200, f->type, head) == 0 &&
	    strcmp(req->method, "HEAD") != 0)
		out->write(out, body, len);
	free(text);
}

void
sg_console_serve(const struct sg_cfg *cfg, const struct sg_req *req,
    struct sg_out *out)
{
	const struct sg_console_file *f;
	size_t n = strlen(cfg->console.path);
	char head[1200];
	struct sg_error err;

	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
		sg_error_set(&err, 405, "invalid_request_error", NULL, NULL,
		    "The console's files answer GET only, not %s.",
		    req->method);
		sg_http_error_head(out, req, &err, "allow: GET, HEAD\r\n");
		return;
	}
	if (strlen(req->path) < n) {
		/* Relative URLs in the page need its "/". */
		snprintf(head, sizeof(head), "location: %s%s\r\n",
		    cfg->server.mount_prefix, cfg->console.path);
		sg_http_begin(out, req, 302, "text/plain; charset=utf-8", head);
		return;
	}
	if ((f = find(req->path + n)) == NULL) {
		not_found(req, out);
		return;
	}
	send_file(cfg, req, out, f);
}
