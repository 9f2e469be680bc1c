/*
 * A checking JSON scanner (jscan.h). Every rule here refuses at least
 * what Jansson refuses; where checking exactly would cost code (a long
 * number, an exponent, an escaped key) it refuses more, and the caller's
 * whole parse decides.
 */
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "util.h"

#define DEPTH_MAX	2048	/* Jansson's JSON_PARSER_MAX_DEPTH */

struct scan {
	const char	*p;
	size_t		 n, i;
	int		 depth;
	int		 nodup;		/* a key twice in an object fails */
};

static int	 value(struct scan *);

static void
ws(struct scan *s)
{
	while (s->i < s->n && (s->p[s->i] == ' ' || s->p[s->i] == '\t' ||
	    s->p[s->i] == '\n' || s->p[s->i] == '\r'))
		s->i++;
}

/* One UTF-8 character at s->i (its first byte >= 0x80), as Jansson
 * checks it: no overlong form, no surrogate, nothing past U+10FFFF. */
static int
utf8(struct scan *s)
{
	const unsigned char *u = (const unsigned char *)s->p + s->i;
	unsigned v, min;
	size_t k, len;

	if (u[0] >= 0xC2 && u[0] <= 0xDF)
		len = 2, v = u[0] & 0x1F, min = 0x80;
	else if (u[0] >= 0xE0 && u[0] <= 0xEF)
		len = 3, v = u[0] & 0x0F, min = 0x800;
	else if (u[0] >= 0xF0 && u[0] <= 0xF4)
		len = 4, v = u[0] & 0x07, min = 0x10000;
	else
		return -1;
	if (s->n - s->i < len)
		return -1;
	for (k = 1; k < len; k++) {
		if ((u[k] & 0xC0) != 0x80)
			return -1;
		v = (v << 6) | (u[k] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return -1;
	s->i += len;
	return 0;
}

/* Four hex digits at s->i: their value, or -1. */
static long
hex4(struct scan *s)
{
	long v = 0;
	int k;
	char c;

	if (s->n - s->i < 4)
		return -1;
	for (k = 0; k < 4; k++) {
		c = s->p[s->i + (size_t)k];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	s->i += 4;
	return v;
}

/* An escape, s->i past the backslash: a surrogate only in a pair. */
static int
escape(struct scan *s)
{
	long v, lo;

	if (s->i >= s->n)
		return -1;
	if (strchr("\"\\/bfnrt", s->p[s->i]) != NULL && s->p[s->i] != '\0') {
		s->i++;
		return 0;
	}
	if (s->p[s->i++] != 'u' || (v = hex4(s)) == -1)
		return -1;
	if (v >= 0xDC00 && v <= 0xDFFF)
		return -1;
	if (v < 0xD800 || v > 0xDBFF)
		return 0;
	if (s->n - s->i < 2 || s->p[s->i] != '\\' || s->p[s->i + 1] != 'u')
		return -1;
	s->i += 2;
	lo = hex4(s);
	return lo >= 0xDC00 && lo <= 0xDFFF ? 0 : -1;
}

/* A string at s->i (its quote); *esc set when it has an escape. */
static int
string(struct scan *s, int *esc)
{
	unsigned char c;

	*esc = 0;
	for (s->i++; s->i < s->n; ) {
		/* A run of plain ASCII first: most of a string. */
		s->i += sg_json_plain(s->p + s->i, s->n - s->i);
		if (s->i >= s->n)
			break;
		c = (unsigned char)s->p[s->i];
		if (c == '"') {
			s->i++;
			return 0;
		}
		if (c < 0x20)
			return -1;
		if (c == '\\') {
			*esc = 1;
			s->i++;
			if (escape(s) == -1)
				return -1;
		} else if (c >= 0x80) {
			if (utf8(s) == -1)
				return -1;
		} else
			s->i++;
	}
	return -1;
}

static size_t
digits(struct scan *s)
{
	size_t from = s->i;

	while (s->i < s->n && s->p[s->i] >= '0' && s->p[s->i] <= '9')
		s->i++;
	return s->i - from;
}

/* A number. What Jansson could find too large is left to it: an
 * integer of more than 18 digits, a fraction of more than 300, any
 * exponent. */
static int
number(struct scan *s)
{
	size_t k;

	if (s->p[s->i] == '-')
		s->i++;
	if (s->i < s->n && s->p[s->i] == '0') {
		s->i++;
		if (s->i < s->n && s->p[s->i] >= '0' && s->p[s->i] <= '9')
			return -1;
		k = 1;
	} else if ((k = digits(s)) == 0)
		return -1;
	if (s->i < s->n && (s->p[s->i] == 'e' || s->p[s->i] == 'E'))
		return -1;
	if (s->i >= s->n || s->p[s->i] != '.')
		return k > 18 ? -1 : 0;
	s->i++;
	k += digits(s);
	if (s->p[s->i - 1] == '.' || k > 300)
		return -1;
	if (s->i < s->n && (s->p[s->i] == 'e' || s->p[s->i] == 'E'))
		return -1;
	return 0;
}

static int
literal(struct scan *s, const char *w)
{
	size_t len = strlen(w);
	char c;

	if (s->n - s->i < len || memcmp(s->p + s->i, w, len) != 0)
		return -1;
	s->i += len;
	/* "truex" is one bad token to Jansson. */
	c = s->i < s->n ? s->p[s->i] : ' ';
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ? -1 : 0;
}

/* Empty spans for the names. */
static void
clear(const char *const *names, struct sg_jspan *out)
{
	int k;

	for (k = 0; names[k] != NULL; k++) {
		out[k].p = NULL;
		out[k].len = 0;
	}
}

/* The members of the object at s->i; those named go to out, and those
 * of the member sub names, when an object, to sub's. */
static int
object(struct scan *s, const char *const *names, struct sg_jspan *out,
    const struct sg_jscan_sub *sub)
{
	size_t kfrom, klen, vfrom;
	int esc, k, rc;

	if (++s->depth > DEPTH_MAX)
		return -1;
	s->i++;
	ws(s);
	if (s->i < s->n && s->p[s->i] == '}') {
		s->i++;
		s->depth--;
		return 0;
	}
	for (;;) {
		if (s->i >= s->n || s->p[s->i] != '"')
			return -1;
		kfrom = s->i + 1;
		if (string(s, &esc) == -1 || esc)
			return -1;
		klen = s->i - 1 - kfrom;
		ws(s);
		if (s->i >= s->n || s->p[s->i++] != ':')
			return -1;
		ws(s);
		vfrom = s->i;
		for (k = 0; names != NULL && names[k] != NULL; k++)
			if (strlen(names[k]) == klen &&
			    memcmp(names[k], s->p + kfrom, klen) == 0)
				break;
		if (sub != NULL && names[k] != NULL && k == sub->at &&
		    s->i < s->n && s->p[s->i] == '{') {
			clear(sub->names, sub->out);
			rc = object(s, sub->names, sub->out, NULL);
		} else
			rc = value(s);
		if (rc == -1)
			return -1;
		if (names != NULL && names[k] != NULL) {
			out[k].p = s->p + vfrom;
			out[k].len = s->i - vfrom;
		}
		ws(s);
		if (s->i >= s->n)
			return -1;
		if (s->p[s->i] == '}') {
			s->i++;
			s->depth--;
			return 0;
		}
		if (s->p[s->i++] != ',')
			return -1;
		ws(s);
	}
}

static int
array(struct scan *s)
{
	if (++s->depth > DEPTH_MAX)
		return -1;
	s->i++;
	ws(s);
	if (s->i < s->n && s->p[s->i] == ']') {
		s->i++;
		s->depth--;
		return 0;
	}
	for (;;) {
		if (value(s) == -1)
			return -1;
		ws(s);
		if (s->i >= s->n)
			return -1;
		if (s->p[s->i] == ']') {
			s->i++;
			s->depth--;
			return 0;
		}
		if (s->p[s->i++] != ',')
			return -1;
		ws(s);
	}
}

/* A value at s->i (no whitespace before it). */
static int
value(struct scan *s)
{
	int esc;

	if (s->i >= s->n)
		return -1;
	switch (s->p[s->i]) {
	case '{':
		return object(s, NULL, NULL, NULL);
	case '[':
		return array(s);
	case '"':
		return string(s, &esc);
	case 't':
		return literal(s, "true");
	case 'f':
		return literal(s, "false");
	case 'n':
		return literal(s, "null");
	default:
		if (s->p[s->i] == '-' || (s->p[s->i] >= '0' && s->p[s->i] <= '9'))
			return number(s);
		return -1;
	}
}

int
sg_jscan_object(const char *p, size_t n, const char *const *names,
    struct sg_jspan *out)
{
	return sg_jscan_object_sub(p, n, names, out, NULL);
}

int
sg_jscan_object_sub(const char *p, size_t n, const char *const *names,
    struct sg_jspan *out, const struct sg_jscan_sub *sub)
{
	struct scan s = { .p = p, .n = n };

	clear(names, out);
	if (sub != NULL)
		clear(sub->names, sub->out);
	ws(&s);
	if (s.i >= s.n || s.p[s.i] != '{' || object(&s, names, out, sub) == -1)
		return -1;
	ws(&s);
	return s.i == s.n ? 0 : -1;
}

/* The value at s->i, checked before: built. */
static json_t	*build(struct scan *);

/* Four hex digits at q, checked before. */
static unsigned
hexval(const char *q)
{
	unsigned v = 0;
	int k;

	for (k = 0; k < 4; k++)
		v = (v << 4) | (unsigned)(q[k] <= '9' ? q[k] - '0' :
		    (q[k] | 0x20) - 'a' + 10);
	return v;
}

/* One code point as UTF-8 at o: its length. */
static size_t
put_utf8(char *o, unsigned v)
{
	if (v < 0x80) {
		o[0] = (char)v;
		return 1;
	}
	if (v < 0x800) {
		o[0] = (char)(0xC0 | v >> 6);
		o[1] = (char)(0x80 | (v & 0x3F));
		return 2;
	}
	if (v < 0x10000) {
		o[0] = (char)(0xE0 | v >> 12);
		o[1] = (char)(0x80 | ((v >> 6) & 0x3F));
		o[2] = (char)(0x80 | (v & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | v >> 18);
	o[1] = (char)(0x80 | ((v >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((v >> 6) & 0x3F));
	o[3] = (char)(0x80 | (v & 0x3F));
	return 4;
}

/* The string at s->i: its bytes, unescaped. Text without an escape is
 * taken as it is (its UTF-8 was checked). */
static json_t *
build_string(struct scan *s)
{
	const char *q = s->p + s->i + 1, *end;
	json_t *v;
	char *o, *buf;
	size_t n;
	unsigned c, lo;

	for (end = q; *end != '"'; end += *end == '\\' ? 2 : 1)
		;
	s->i = (size_t)(end - s->p) + 1;
	if (memchr(q, '\\', (size_t)(end - q)) == NULL)
		return json_stringn_nocheck(q, (size_t)(end - q));
	/* Unescaped, it is never longer. */
	if ((buf = malloc((size_t)(end - q))) == NULL)
		return NULL;
	for (o = buf; q < end; ) {
		if (*q != '\\') {
			*o++ = *q++;
			continue;
		}
		switch (q[1]) {
		case 'b':	*o++ = '\b'; break;
		case 'f':	*o++ = '\f'; break;
		case 'n':	*o++ = '\n'; break;
		case 'r':	*o++ = '\r'; break;
		case 't':	*o++ = '\t'; break;
		case 'u':
			c = hexval(q + 2);
			if (c >= 0xD800 && c <= 0xDBFF) {
				lo = hexval(q + 8);
				c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
				q += 6;
			}
			o += put_utf8(o, c);
			q += 4;
			break;
		default:	*o++ = q[1];
		}
		q += 2;
	}
	n = (size_t)(o - buf);
	v = json_stringn_nocheck(buf, n);
	free(buf);
	return v;
}

/* The number at s->i: an integer made here (at most 18 digits: the
 * check said), a real by Jansson (its locale-proof strtod). */
static json_t *
build_number(struct scan *s)
{
	size_t from = s->i;
	json_int_t v = 0;
	int neg = s->p[s->i] == '-', real = 0;

	size_t at;

	if (neg)
		s->i++;
	/* Its end first: a real's digits before its point may be many
	 * more than an integer's 18 (they are not summed). */
	for (at = s->i; s->i < s->n; s->i++) {
		char c = s->p[s->i];

		if (c == '.')
			real = 1;
		else if (c < '0' || c > '9')
			break;
	}
	if (real)
		return json_loadb(s->p + from, s->i - from, JSON_DECODE_ANY,
		    NULL);
	for (; at < s->i; at++)
		v = v * 10 + (s->p[at] - '0');
	return json_integer(neg ? -v : v);
}

static json_t *
build_object(struct scan *s)
{
	json_t *o = json_object(), *v;
	const char *k;
	size_t kl;

	s->i++;
	ws(s);
	while (o != NULL && s->p[s->i] != '}') {
		/* A key has no escape (the check said). */
		k = s->p + s->i + 1;
		kl = (size_t)((const char *)memchr(k, '"', s->n - s->i - 1) - k);
		s->i += kl + 2;
		ws(s);
		s->i++;
		ws(s);
		if ((s->nodup && json_object_getn(o, k, kl) != NULL) ||
		    (v = build(s)) == NULL ||
		    json_object_setn_new_nocheck(o, k, kl, v) == -1) {
			json_decref(o);
			return NULL;
		}
		ws(s);
		if (s->p[s->i] == ',') {
			s->i++;
			ws(s);
		}
	}
	s->i++;
	return o;
}

static json_t *
build_array(struct scan *s)
{
	json_t *a = json_array();

	s->i++;
	ws(s);
	while (a != NULL && s->p[s->i] != ']') {
		if (json_array_append_new(a, build(s)) == -1) {
			json_decref(a);
			return NULL;
		}
		ws(s);
		if (s->p[s->i] == ',') {
			s->i++;
			ws(s);
		}
	}
	s->i++;
	return a;
}

static json_t *
build(struct scan *s)
{
	switch (s->p[s->i]) {
	case '{':
		return build_object(s);
	case '[':
		return build_array(s);
	case '"':
		return build_string(s);
	case 't':
		s->i += 4;
		return json_true();
	case 'f':
		s->i += 5;
		return json_false();
	case 'n':
		s->i += 4;
		return json_null();
	default:
		return build_number(s);
	}
}

json_t *
sg_jparse_err(const char *p, size_t n, int flags, json_error_t *err)
{
	struct scan s = { .p = p, .n = n, .nodup = flags & SG_JPARSE_NODUP };
	size_t jflags = JSON_ALLOW_NUL | (flags & SG_JPARSE_ANY ?
	    JSON_DECODE_ANY : 0) | (s.nodup ? JSON_REJECT_DUPLICATES : 0);
	json_t *v;
	size_t at;

	ws(&s);
	at = s.i;
	if (s.i >= s.n || (!(flags & SG_JPARSE_ANY) && s.p[s.i] != '{' &&
	    s.p[s.i] != '[') || value(&s) == -1 || (ws(&s), s.i != s.n))
		return json_loadb(p, n, jflags, err);
	s.i = at;
	/* Only a repeated key fails a build of checked text (or memory):
	 * Jansson says which and where. */
	if ((v = build(&s)) == NULL && err != NULL)
		json_decref(json_loadb(p, n, jflags, err));
	return v;
}

json_t *
sg_jparse(const char *p, size_t n, int flags)
{
	return sg_jparse_err(p, n, flags, NULL);
}
