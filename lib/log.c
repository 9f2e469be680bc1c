/*
 * Escaped log lines (see log.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "util.h"

#define LINE_MAX_BYTES	3072	/* of a line, escaped, with its "..." */

/* Whether the well-formed UTF-8 sequence s[0..n) is shown escaped. */
static int
unsafe(const unsigned char *s, size_t n, int spaces)
{
	if (n == 1)
		return s[0] < ' ' || s[0] == 0x7f || s[0] == '\\' ||
		    (spaces && s[0] == ' ');
	if (n == 2)
		return s[0] == 0xc2 && s[1] < 0xa0;	/* C1 controls */
	return n == 3 && s[0] == 0xe2 && s[1] == 0x80 &&
	    (s[2] == 0xa8 || s[2] == 0xa9);	/* line, paragraph separators */
}

/* src escaped into dst[dstsz] (dstsz >= 8), cut with "..." when it does
 * not fit: 1 when cut. */
static int
escape(char *dst, size_t dstsz, const char *src, int spaces)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)src;
	size_t len = strlen(src), room = dstsz - 4, i, k, n, o = 0;
	int bad;

	for (i = 0; i < len; i += n) {
		/* Printable ASCII, the common case, byte by byte. */
		if (s[i] > ' ' && s[i] < 0x7f && s[i] != '\\') {
			if (o + 1 > room) {
				memcpy(dst + o, "...", 4);
				return 1;
			}
			dst[o++] = (char)s[i];
			n = 1;
			continue;
		}
		n = sg_utf8_len(s + i, len - i);
		bad = n == 0 || unsafe(s + i, n, spaces);
		if (n == 0)
			n = 1;
		if (o + (bad ? 4 * n : n) > room) {
			memcpy(dst + o, "...", 4);
			return 1;
		}
		for (k = 0; k < n; k++) {
			if (bad) {
				dst[o++] = '\\';
				dst[o++] = 'x';
				dst[o++] = hex[s[i + k] >> 4];
				dst[o++] = hex[s[i + k] & 0xf];
			} else
				dst[o++] = (char)s[i + k];
		}
	}
	dst[o] = '\0';
	return 0;
}

void
sg_log_field(char *dst, size_t dstsz, const char *src)
{
	(void)escape(dst, dstsz, src, 1);
}

void
sg_log(const char *fmt, ...)
{
	char raw[LINE_MAX_BYTES], line[LINE_MAX_BYTES];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* Cut by vsnprintf: marked as escape marks its own cuts. */
	if (escape(line, sizeof(line) - 3, raw, 0) == 0 &&
	    (size_t)n >= sizeof(raw))
		strcat(line, "...");
	fprintf(stderr, "%s\n", line);
}
