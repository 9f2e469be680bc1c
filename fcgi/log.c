/*
 * The line each request leaves on stderr. Its fields carry a client's
 * bytes (the path, the model name) and the config's (the key name), so
 * each is escaped as a field (sg_log_field: spaces too): one request
 * always makes exactly one line, and the line always splits on spaces
 * into the same fields.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fcgi.h"
#include "../core/http/http.h"
#include "../lib/log.h"
#include "../lib/util.h"

/* A line being put together; its fields are bounded, so it always fits. */
struct line {
	char	 buf[3072];
	size_t	 len;
};

static void
put(struct line *l, const char *s)
{
	size_t n = strlen(s);

	if (n > sizeof(l->buf) - 1 - l->len)
		n = sizeof(l->buf) - 1 - l->len;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void
put_int(struct line *l, long long v)
{
	char digits[24];

	put(l, sg_dec(digits, sizeof(digits), v));
}

/*
 * One write of at most ~3 KiB, made without stdio's formatting (a
 * request's most frequent cost after its own work): a line under
 * PIPE_BUF goes out in one write, so lines of responders sharing stderr
 * never interleave (stderr is line-buffered: nothing of ours waits in its
 * buffer between lines). Never the key, only its name.
 */
void
sg_log_request(const struct sg_req *req, int status, int64_t ms)
{
	char field[2048];
	struct line l = { .len = 0 };

	put(&l, "event=request id=");
	put(&l, req->id);
	put(&l, " key=");
	sg_log_field(field, 128, req->key_name[0] != '\0' ? req->key_name :
	    "-");
	put(&l, field);
	put(&l, " method=");
	sg_log_field(field, 32, req->method);
	put(&l, field);
	put(&l, " path=");
	sg_log_field(field, sizeof(field), req->path[0] != '\0' ? req->path :
	    req->uri);
	put(&l, field);
	put(&l, " model=");
	sg_log_field(field, 512, req->model[0] != '\0' ? req->model : "-");
	put(&l, field);
	put(&l, " status=");
	put_int(&l, status);
	put(&l, " ms=");
	put_int(&l, (long long)ms);
	l.buf[l.len++] = '\n';
	fflush(stderr);
	(void)!write(STDERR_FILENO, l.buf, l.len);
}
