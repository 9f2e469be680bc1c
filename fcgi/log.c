/*
 * The line each request leaves on stderr. Its fields carry a client's
 * bytes (the path, the model name) and the config's (the key name), so
 * each is escaped: one request always makes exactly one line, and the
 * line always splits on spaces into the same fields. A control character,
 * a space, DEL, a backslash and any byte that is not part of well-formed
 * UTF-8 become \xNN; well-formed UTF-8 stays readable.
 */
#include <stdio.h>
#include <string.h>

#include "fcgi.h"
#include "../core/http.h"

/* Bytes of the well-formed UTF-8 sequence at s[0..n) (the Unicode
 * standard's table 3-7: no overlongs, surrogates or values past
 * U+10FFFF), or 0. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t need, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	need = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (n < need)
		return 0;
	for (i = 1; i < need; i++, lo = 0x80, hi = 0xbf)
		if (s[i] < lo || s[i] > hi)
			return 0;
	return need;
}

/* src escaped into dst[dstsz] (dstsz >= 8); a field too long for it is
 * cut at a character boundary and ends in "...". */
void
sg_log_field(char *dst, size_t dstsz, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)src;
	size_t len = strlen(src), room = dstsz - 4, i, n, o = 0;

	for (i = 0; i < len; i += n) {
		n = utf8_len(s + i, len - i);
		if (n == 1 && (s[i] <= ' ' || s[i] == 0x7f || s[i] == '\\'))
			n = 0;
		if (o + (n == 0 ? 4 : n) > room) {
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		if (n == 0) {
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[s[i] >> 4];
			dst[o++] = hex[s[i] & 0xf];
			n = 1;
		} else {
			memcpy(dst + o, s + i, n);
			o += n;
		}
	}
	dst[o] = '\0';
}

/*
 * One fprintf of at most ~3 KiB: stderr is line-buffered and shared by
 * every responder, and a line under PIPE_BUF goes out in one write, so
 * lines of different responders never interleave. Never the key, only
 * its name.
 */
void
sg_log_request(const struct sg_req *req, int status, int64_t ms)
{
	char key[128], method[32], path[2048], model[512];

	sg_log_field(key, sizeof(key), req->key_name[0] != '\0' ?
	    req->key_name : "-");
	sg_log_field(method, sizeof(method), req->method);
	sg_log_field(path, sizeof(path), req->path[0] != '\0' ? req->path :
	    req->uri);
	sg_log_field(model, sizeof(model), req->model[0] != '\0' ?
	    req->model : "-");
	fprintf(stderr, "event=request id=%s key=%s method=%s path=%s model=%s "
	    "status=%d ms=%lld\n", req->id, key, method, path, model, status,
	    (long long)ms);
}
