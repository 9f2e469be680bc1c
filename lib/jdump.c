#include <stdlib.h>
#include <string.h>

#include "jdump.h"

/* Room for k more bytes and the NUL after them: 0, or -1. */
static int
reserve(struct sg_buf *b, size_t k)
{
	size_t cap = b->cap != 0 ? b->cap : 256;
	char *np;

	if (b->len + k + 1 <= b->cap)
		return 0;
	while (cap < b->len + k + 1)
		cap *= 2;
	if ((np = realloc(b->p, cap)) == NULL)
		return -1;
	b->p = np;
	b->cap = cap;
	return 0;
}

/* Append n bytes (room made or not): 0, or -1. */
static int
put(struct sg_buf *b, const char *p, size_t n)
{
	if (reserve(b, n) == -1)
		return -1;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

/* One byte: most puts of a dump are a brace, a comma or a colon. */
static int
put1(struct sg_buf *b, char c)
{
	if (b->len + 2 > b->cap && reserve(b, 1) == -1)
		return -1;
	b->p[b->len++] = c;
	return 0;
}

static int
string(struct sg_buf *b, const char *p, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *s = (const unsigned char *)p;
	size_t i, from, k;
	char *o;

	/* Room for the plain case; an escape makes its own. */
	if (reserve(b, n + 2) == -1)
		return -1;
	/* Most strings (every key) have nothing to escape: one piece. */
	if ((i = sg_json_plain(p, n)) == n) {
		o = b->p + b->len;
		o[0] = '"';
		if (n > 0)
			memcpy(o + 1, p, n);
		o[n + 1] = '"';
		b->len += n + 2;
		return 0;
	}
	b->p[b->len++] = '"';
	for (from = 0;; from = i, i += sg_json_plain(p + i, n - i)) {
		if (i > from && put(b, p + from, i - from) == -1)
			return -1;
		if (i >= n)
			break;
		if (s[i] >= 0x80) {
			if ((k = sg_utf8_len(s + i, n - i)) == 0 ||
			    put(b, p + i, k) == -1)
				return -1;
			i += k;
			continue;
		}
		if (reserve(b, 6) == -1)
			return -1;
		o = b->p + b->len;
		o[0] = '\\';
		switch (s[i]) {
		case '"':	o[1] = '"'; break;
		case '\\':	o[1] = '\\'; break;
		case '\b':	o[1] = 'b'; break;
		case '\f':	o[1] = 'f'; break;
		case '\n':	o[1] = 'n'; break;
		case '\r':	o[1] = 'r'; break;
		case '\t':	o[1] = 't'; break;
		default:
			/* Jansson's \u%04X. */
			memcpy(o + 1, "u00", 3);
			o[4] = hex[s[i] >> 4];
			o[5] = hex[s[i] & 0xF];
			b->len += 4;
		}
		b->len += 2;
		i++;
	}
	return put(b, "\"", 1);
}

/* An integer as "%" JSON_INTEGER_FORMAT writes it. */
static int
integer(struct sg_buf *b, json_int_t v)
{
	char num[24];

	sg_dec(num, sizeof(num), (long long)v);
	return put(b, num, strlen(num));
}

/* The i-th member's key of an object, up to its value: 0, or -1. */
static int
key(struct sg_buf *b, void *it, size_t i)
{
	return (i > 0 && put1(b, ',') == -1) || string(b,
	    json_object_iter_key(it), json_object_iter_key_len(it)) == -1 ||
	    put1(b, ':') == -1 ? -1 : 0;
}

static int	value(struct sg_buf *, const json_t *);

/* The array a; when at is not NULL, each element's span in b put in it. */
static int
array(struct sg_buf *b, const json_t *a, struct sg_jdump_at *at)
{
	size_t i;

	if (put1(b, '[') == -1)
		return -1;
	for (i = 0; i < json_array_size(a); i++) {
		if (i > 0 && put1(b, ',') == -1)
			return -1;
		if (at != NULL)
			at[i].start = b->len;
		if (value(b, json_array_get(a, i)) == -1)
			return -1;
		if (at != NULL)
			at[i].end = b->len;
	}
	return put1(b, ']');
}

static int
value(struct sg_buf *b, const json_t *v)
{
	char *text;
	void *it;
	size_t i;
	int rc;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (put1(b, '{') == -1)
			return -1;
		for (it = json_object_iter((json_t *)v), i = 0; it != NULL;
		    it = json_object_iter_next((json_t *)v, it), i++)
			if (key(b, it, i) == -1 ||
			    value(b, json_object_iter_value(it)) == -1)
				return -1;
		return put1(b, '}');
	case JSON_ARRAY:
		return array(b, v, NULL);
	case JSON_STRING:
		return string(b, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return integer(b, json_integer_value(v));
	case JSON_TRUE:
		return put(b, "true", 4);
	case JSON_FALSE:
		return put(b, "false", 5);
	case JSON_NULL:
		return put(b, "null", 4);
	default:
		if ((text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) == NULL)
			return -1;
		rc = sg_buf_add(b, text, strlen(text));
		free(text);
		return rc;
	}
}

/* rc; when -1, b's length and its NUL put back as they were (len). */
static int
ended(struct sg_buf *b, size_t len, int rc)
{
	if (rc == -1) {
		b->len = len;
		if (b->p != NULL)
			b->p[len] = '\0';
		return -1;
	}
	b->p[b->len] = '\0';
	return 0;
}

int
sg_jdump(struct sg_buf *b, const json_t *v)
{
	size_t len = b->len;

	/* A buffer is NUL-terminated once anything was added. */
	return ended(b, len, v == NULL ? -1 : value(b, v));
}

static int
marked(struct sg_buf *b, const json_t *o, const char *name,
    struct sg_jdump_at *whole, struct sg_jdump_at *at)
{
	const json_t *v;
	void *it;
	size_t i, n = strlen(name);

	if (put1(b, '{') == -1)
		return -1;
	for (it = json_object_iter((json_t *)o), i = 0; it != NULL;
	    it = json_object_iter_next((json_t *)o, it), i++) {
		v = json_object_iter_value(it);
		if (key(b, it, i) == -1)
			return -1;
		if (!json_is_array(v) || json_object_iter_key_len(it) != n ||
		    memcmp(json_object_iter_key(it), name, n) != 0) {
			if (value(b, v) == -1)
				return -1;
			continue;
		}
		whole->start = b->len;
		if (array(b, v, at) == -1)
			return -1;
		whole->end = b->len;
	}
	return put1(b, '}');
}

int
sg_jdump_marked(struct sg_buf *b, const json_t *o, const char *name,
    struct sg_jdump_at *whole, struct sg_jdump_at *at)
{
	size_t len = b->len;

	whole->start = whole->end = 0;
	return ended(b, len, json_is_object(o) ? marked(b, o, name, whole,
	    at) : -1);
}

int
sg_jdump_str(struct sg_buf *b, const char *s, size_t n)
{
	size_t len = b->len;

	return ended(b, len, string(b, s, n));
}

int
sg_jdump_int(struct sg_buf *b, json_int_t v)
{
	size_t len = b->len;

	return ended(b, len, integer(b, v));
}

char *
sg_jdump_text(const json_t *v, size_t *len)
{
	struct sg_buf b = { 0 };

	if (sg_jdump(&b, v) == -1) {
		free(b.p);
		return NULL;
	}
	if (len != NULL)
		*len = b.len;
	return b.p;
}
