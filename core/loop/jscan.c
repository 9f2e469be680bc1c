/*
 * A checking JSON scanner (jscan.h). Every rule here refuses at least
 * what Jansson refuses; where checking exactly would cost code (a long
 * number, an exponent, an escaped key) it refuses more, and the caller's
 * whole parse decides.
 */
#include <string.h>

#include "jscan.h"

#define DEPTH_MAX	2048	/* Jansson's JSON_PARSER_MAX_DEPTH */
#define NAMES_MAX	16

struct scan {
	const char	*p;
	size_t		 n, i;
	int		 depth;
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
		while (s->i < s->n && (c = (unsigned char)s->p[s->i]) >= 0x20 &&
		    c < 0x80 && c != '"' && c != '\\')
			s->i++;
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

/* The members of the object at s->i; those named go to out. */
static int
object(struct scan *s, const char *const *names, struct sg_jspan *out)
{
	size_t kfrom, klen, vfrom;
	int esc, k;

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
		if (value(s) == -1)
			return -1;
		for (k = 0; names != NULL && names[k] != NULL; k++)
			if (strlen(names[k]) == klen &&
			    memcmp(names[k], s->p + kfrom, klen) == 0) {
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
		return object(s, NULL, NULL);
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
	struct scan s = { .p = p, .n = n };
	int k;

	for (k = 0; names[k] != NULL; k++) {
		if (k >= NAMES_MAX)
			return -1;
		out[k].p = NULL;
		out[k].len = 0;
	}
	ws(&s);
	if (s.i >= s.n || s.p[s.i] != '{' || object(&s, names, out) == -1)
		return -1;
	ws(&s);
	return s.i == s.n ? 0 : -1;
}
