#include <string.h>

#include "codedec.h"
#include "../../lib/util.h"

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

/* Decoded bytes of the key being read; a key that does not fit in what
 * is left of keys[] (long, or too many before it) stops the decoder. */
static void
key_put(struct sg_codedec *d, const char *b, size_t n)
{
	if (d->keys_len + d->keylen + n >= sizeof(d->keys)) {
		d->lost = 1;
		return;
	}
	memcpy(d->keys + d->keys_len + d->keylen, b, n);
	d->keylen += n;
}

/* Decoded text of the current string: into the key, or out as code. */
static void
put(struct sg_codedec *d, const char *b, size_t n)
{
	if (d->state == S_KEY)
		key_put(d, b, n);
	else if (d->is_code)
		d->fn(d->arg, b, n);
}

static void
emit_cp(struct sg_codedec *d, unsigned cp)
{
	char b[4];
	size_t n;

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
	put(d, b, n);
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

/* One byte inside a string (key or value) that is an escape or ends a
 * run; 1 when the string ended. */
static int
string_byte(struct sg_codedec *d, char c, size_t *run_start, size_t i)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e;
	int h;

	if (d->esc == 'u') {
		if ((h = sg_hexval((unsigned char)c)) < 0) {
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
	/* A high surrogate may still meet its low half after a '\\'; the
	 * string's end leaves it alone. */
	if (d->high && c == '"') {
		emit_cp(d, 0xfffd);
		d->high = 0;
	}
	if (c == '\\')
		d->esc = '\\';
	*run_start = i + 1;
	return c == '"';
}

/*
 * A key has ended. Jansson, reading the whole arguments, refuses an
 * object that repeats a key (JSON_REJECT_DUPLICATES, sg_rw_code_arg):
 * the same rule here, on the decoded keys, so a second "code" (however
 * it is escaped) is never shown. A NUL in a key is refused there too.
 */
static void
key_done(struct sg_codedec *d)
{
	const char *k = d->keys + d->keys_len, *seen;

	if (memchr(k, '\0', d->keylen) != NULL) {
		d->lost = 1;
		return;
	}
	for (seen = d->keys; seen < k; seen += strlen(seen) + 1)
		if (strlen(seen) == d->keylen && memcmp(seen, k, d->keylen) == 0) {
			d->invalid = 1;
			return;
		}
	d->is_code = d->keylen == 4 && memcmp(k, "code", 4) == 0;
	d->keys[d->keys_len + d->keylen] = '\0';
	d->keys_len += d->keylen + 1;
	d->keylen = 0;
}

/* Inside a string: plain bytes pass in runs, the rest one by one. The
 * decoded text goes to the key, or out when it is the code. */
static void
in_string(struct sg_codedec *d, const char *buf, size_t i, size_t *run)
{
	char c = buf[i];

	if (!d->esc && c != '\\' && c != '"') {
		/* A high surrogate with no low one after it. */
		if (d->high) {
			emit_cp(d, 0xfffd);
			d->high = 0;
		}
		if (d->state == S_KEY)
			key_put(d, &c, 1);
		return;
	}
	if (d->state == S_STRING && d->is_code && i > *run && !d->esc)
		d->fn(d->arg, buf + *run, i - *run);
	if (!string_byte(d, c, run, i))
		return;
	if (d->state == S_KEY) {
		d->state = S_COLON;
		key_done(d);
	} else {
		d->state = S_COMMA;
		d->done |= d->is_code;
		d->is_code = 0;
	}
}

/* One structural byte outside strings. */
static void
outside(struct sg_codedec *d, char c, size_t i, size_t *run)
{
	int blank = strchr(" \t\r\n", c) != NULL && c != '\0';

	switch (d->state) {
	case S_START:
		if (c == '{')
			d->state = S_KEY_OR_END;
		else if (!blank)
			d->lost = 1;
		break;
	case S_KEY_OR_END:
		if (c == '"') {
			d->state = S_KEY;
			d->keylen = 0;
		} else if (c == '}')
			d->state = S_END;
		else if (!blank)
			d->lost = 1;
		break;
	case S_COLON:
		if (c == ':')
			d->state = S_VALUE;
		else if (!blank)
			d->lost = 1;
		break;
	case S_VALUE:
		if (c == '"') {
			d->state = S_STRING;
			*run = i + 1;
		} else if (strchr("-0123456789tfn", c) != NULL && c != '\0' &&
		    !d->is_code)
			d->state = S_SCALAR;
		else if (!blank)
			d->lost = 1;	/* nested, or code not a string */
		break;
	case S_SCALAR:
		if (c == ',' || c == '}')
			d->state = c == ',' ? S_KEY_OR_END : S_END;
		break;
	case S_COMMA:
		if (c == ',')
			d->state = S_KEY_OR_END;
		else if (c == '}')
			d->state = S_END;
		else if (!blank)
			d->lost = 1;
		break;
	default:
		break;
	}
}

/*
 * After the code string, the rest of the arguments is still read: a key
 * repeated later marks them invalid (they will be refused), though
 * nothing more is ever shown.
 */
void
sg_codedec_feed(struct sg_codedec *d, const char *buf, size_t len)
{
	size_t i, run = 0;

	for (i = 0; i < len && !d->lost && !d->invalid; i++) {
		if (d->state == S_KEY || d->state == S_STRING)
			in_string(d, buf, i, &run);
		else
			outside(d, buf[i], i, &run);
	}
	/* The plain run at the end of this piece: whole characters only,
	 * and the pieces themselves are whole UTF-8 (decoded JSON). */
	if (d->state == S_STRING && d->is_code && !d->esc && !d->lost &&
	    !d->invalid && len > run)
		d->fn(d->arg, buf + run, len - run);
}
