#include <string.h>

#include "codedec.h"

enum {
	S_START,	/* before '{' */
	S_KEY_OR_END,	/* expecting a key or '}' */
	S_KEY,		/* inside a key string */
	S_COLON,
	S_VALUE,	/* expecting a value */
	S_STRING,	/* inside a string value */
	S_SCALAR,	/* inside a number, true, false or null */
	S_COMMA,	/* after a value: ',' or '}' */
	S_END,
};

void
sg_codedec_init(struct sg_codedec *d, sg_codedec_fn fn, void *arg)
{
	memset(d, 0, sizeof(*d));
	d->fn = fn;
	d->arg = arg;
}

static void
emit_cp(struct sg_codedec *d, unsigned cp)
{
	char b[4];
	size_t n;

	if (!d->is_code)
		return;
	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18);
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	d->fn(d->arg, b, n);
}

/* A \uXXXX unit: surrogate halves are joined, a lone half is U+FFFD. */
static void
unit(struct sg_codedec *d, unsigned u)
{
	if (u >= 0xd800 && u <= 0xdbff) {
		if (d->high)
			emit_cp(d, 0xfffd);
		d->high = u;
		return;
	}
	if (u >= 0xdc00 && u <= 0xdfff) {
		if (d->high) {
			emit_cp(d, 0x10000 + ((d->high - 0xd800) << 10) + (u - 0xdc00));
			d->high = 0;
		} else
			emit_cp(d, 0xfffd);
		return;
	}
	if (d->high) {
		emit_cp(d, 0xfffd);
		d->high = 0;
	}
	emit_cp(d, u);
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One byte inside a string (key or value); 1 when the string ended. */
static int
string_byte(struct sg_codedec *d, const char *p, size_t *run_start,
    size_t i, const char *buf)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	char c = *p;
	const char *e;
	int h;

	(void)buf;
	if (d->esc == 'u') {
		if ((h = hexval(c)) < 0) {
			d->lost = 1;
			return 0;
		}
		d->u = d->u << 4 | (unsigned)h;
		if (++d->udigits == 4) {
			d->esc = 0;
			unit(d, d->u);
		}
		*run_start = i + 1;
		return 0;
	}
	if (d->esc == '\\') {
		d->esc = 0;
		*run_start = i + 1;
		if (c == 'u') {
			d->esc = 'u';
			d->u = 0;
			d->udigits = 0;
			return 0;
		}
		if ((e = strchr(from, c)) == NULL || c == '\0') {
			d->lost = 1;
			return 0;
		}
		unit(d, (unsigned char)to[e - from]);
		return 0;
	}
	if (c == '\\' || c == '"') {
		/* A high surrogate may still meet its low half after a '\\';
		 * the string's end leaves it alone. */
		if (d->high && c == '"') {
			emit_cp(d, 0xfffd);
			d->high = 0;
		}
		if (c == '\\')
			d->esc = '\\';
		*run_start = i + 1;
		return c == '"';
	}
	return 0;
}

void
sg_codedec_feed(struct sg_codedec *d, const char *buf, size_t len)
{
	size_t i, run = 0;
	char c;

	for (i = 0; i < len && !d->lost && !d->done; i++) {
		c = buf[i];
		switch (d->state) {
		case S_START:
			if (c == '{')
				d->state = S_KEY_OR_END;
			else if (!strchr(" \t\r\n", c))
				d->lost = 1;
			break;
		case S_KEY_OR_END:
			if (c == '"') {
				d->state = S_KEY;
				d->keylen = 0;
			} else if (c == '}')
				d->state = S_END;
			else if (!strchr(" \t\r\n", c))
				d->lost = 1;
			break;
		case S_KEY:
			if (d->esc || c == '\\') {
				/* An escaped key is never "code" as written. */
				d->keylen = sizeof(d->key);
				d->esc = d->esc ? 0 : '\\';
			} else if (c == '"')
				d->state = S_COLON;
			else if (d->keylen < sizeof(d->key))
				d->key[d->keylen++] = c;
			break;
		case S_COLON:
			if (c == ':') {
				d->state = S_VALUE;
				d->is_code = d->keylen == 4 &&
				    memcmp(d->key, "code", 4) == 0;
			} else if (!strchr(" \t\r\n", c))
				d->lost = 1;
			break;
		case S_VALUE:
			if (c == '"') {
				d->state = S_STRING;
				run = i + 1;
			} else if (strchr("-0123456789tfn", c) != NULL &&
			    !d->is_code)
				d->state = S_SCALAR;
			else if (!strchr(" \t\r\n", c))
				d->lost = 1;	/* nested, or code not a string */
			break;
		case S_STRING:
			if (!d->esc && c != '\\' && c != '"') {
				/* A high surrogate with no low one after it. */
				if (d->high) {
					emit_cp(d, 0xfffd);
					d->high = 0;
				}
				break;	/* plain bytes go out in runs */
			}
			if (d->is_code && i > run && !d->esc)
				d->fn(d->arg, buf + run, i - run);
			if (string_byte(d, buf + i, &run, i, buf)) {
				d->state = S_COMMA;
				if (d->is_code)
					d->done = 1;
			}
			break;
		case S_SCALAR:
			if (c == ',' || c == '}') {
				d->state = c == ',' ? S_KEY_OR_END : S_END;
			}
			break;
		case S_COMMA:
			if (c == ',')
				d->state = S_KEY_OR_END;
			else if (c == '}')
				d->state = S_END;
			else if (!strchr(" \t\r\n", c))
				d->lost = 1;
			break;
		default:
			break;
		}
	}
	/* The plain run at the end of this piece: whole characters only,
	 * and the pieces themselves are whole UTF-8 (decoded JSON). */
	if (d->state == S_STRING && d->is_code && !d->esc && !d->lost &&
	    !d->done && len > run)
		d->fn(d->arg, buf + run, len - run);
}
