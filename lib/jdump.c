#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jdump.h"

/* Bytes that end a run of plain ones: a quote, a backslash, a control
 * character, the start of a multibyte character. */
static int
plain(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* The length of the UTF-8 character at s (n bytes left), as Jansson's
 * utf8_check_full accepts it, or 0. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	unsigned v, min;
	size_t len, k;

	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2, v = s[0] & 0x1F, min = 0x80;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, v = s[0] & 0x0F, min = 0x800;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, v = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	for (k = 1; k < len; k++) {
		if ((s[k] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (s[k] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	return len;
}

static int
string(struct sg_buf *b, const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, from, k;
	char esc[8];

	if (sg_buf_add(b, "\"", 1) == -1)
		return -1;
	while (i < n) {
		for (from = i; i < n && plain(s[i]); i++)
			;
		if (i > from && sg_buf_add(b, p + from, i - from) == -1)
			return -1;
		if (i >= n)
			break;
		if (s[i] >= 0x80) {
			if ((k = utf8_len(s + i, n - i)) == 0 ||
			    sg_buf_add(b, p + i, k) == -1)
				return -1;
			i += k;
			continue;
		}
		switch (s[i]) {
		case '"':	strcpy(esc, "\\\""); break;
		case '\\':	strcpy(esc, "\\\\"); break;
		case '\b':	strcpy(esc, "\\b"); break;
		case '\f':	strcpy(esc, "\\f"); break;
		case '\n':	strcpy(esc, "\\n"); break;
		case '\r':	strcpy(esc, "\\r"); break;
		case '\t':	strcpy(esc, "\\t"); break;
		default:	snprintf(esc, sizeof(esc), "\\u%04X", s[i]);
		}
		if (sg_buf_add(b, esc, strlen(esc)) == -1)
			return -1;
		i++;
	}
	return sg_buf_add(b, "\"", 1);
}

static int
value(struct sg_buf *b, const json_t *v)
{
	char num[32], *text;
	const char *k;
	void *it;
	size_t i;
	int rc;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (sg_buf_add(b, "{", 1) == -1)
			return -1;
		for (it = json_object_iter((json_t *)v), i = 0; it != NULL;
		    it = json_object_iter_next((json_t *)v, it), i++) {
			k = json_object_iter_key(it);
			if ((i > 0 && sg_buf_add(b, ",", 1) == -1) ||
			    string(b, k, json_object_iter_key_len(it)) == -1 ||
			    sg_buf_add(b, ":", 1) == -1 ||
			    value(b, json_object_iter_value(it)) == -1)
				return -1;
		}
		return sg_buf_add(b, "}", 1);
	case JSON_ARRAY:
		if (sg_buf_add(b, "[", 1) == -1)
			return -1;
		for (i = 0; i < json_array_size(v); i++)
			if ((i > 0 && sg_buf_add(b, ",", 1) == -1) ||
			    value(b, json_array_get(v, i)) == -1)
				return -1;
		return sg_buf_add(b, "]", 1);
	case JSON_STRING:
		return string(b, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		rc = snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
		    json_integer_value(v));
		return sg_buf_add(b, num, (size_t)rc);
	case JSON_TRUE:
		return sg_buf_add(b, "true", 4);
	case JSON_FALSE:
		return sg_buf_add(b, "false", 5);
	case JSON_NULL:
		return sg_buf_add(b, "null", 4);
	default:
		if ((text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) == NULL)
			return -1;
		rc = sg_buf_add(b, text, strlen(text));
		free(text);
		return rc;
	}
}

int
sg_jdump(struct sg_buf *b, const json_t *v)
{
	size_t len = b->len;

	if (v == NULL || value(b, v) == -1) {
		b->len = len;
		if (b->p != NULL)
			b->p[len] = '\0';
		return -1;
	}
	return 0;
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
