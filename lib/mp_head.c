/*
 * The multipart parser's header grammar (RFC 7578, RFC 9110's tokens and
 * quoted strings): the boundary of the request's Content-Type, and each
 * part's header lines, of which Content-Disposition (name, filename,
 * filename*) and Content-Type are kept. The parser: multipart.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp_int.h"
#include "util.h"

static int
mp_is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr("!#$%&'*+-.^_`|~",
	    c) != NULL);
}

int
sg_mph_is_ctl(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

static size_t
mp_token_len(const char *s)
{
	size_t n = 0;

	while (mp_is_tchar((unsigned char)s[n]))
		n++;
	return n;
}

static char *
mp_ows(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Whether s[0..n) is lit, ASCII case-insensitively (no locale). */
static int
mp_ieq(const char *s, size_t n, const char *lit)
{
	size_t i;

	if (strlen(lit) != n)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char a = (unsigned char)s[i];
		unsigned char b = (unsigned char)lit[i];

		if (a >= 'A' && a <= 'Z')
			a += 'a' - 'A';
		if (b >= 'A' && b <= 'Z')
			b += 'a' - 'A';
		if (a != b)
			return 0;
	}
	return 1;
}

/*
 * The next parameter of a header value at *sp, "; name=value": 1 with
 * its name in name[0..nlen) and its value unquoted and NUL-ended in *val,
 * 0 at the end of the value, -1 when malformed. The value is written from
 * the '=' on, in front of where it was read, so the rest of the string
 * from the new *sp is never touched and the name stays readable.
 */
static int
mp_param(char **sp, const char **name, size_t *nlen, char **val)
{
	char *s = mp_ows(*sp), *w;

	/* Empty parameters (";;", a trailing ';') are skipped. */
	for (;;) {
		if (*s == '\0')
			return 0;
		if (*s != ';')
			return -1;
		s = mp_ows(s + 1);
		if (*s != ';' && *s != '\0')
			break;
	}
	*name = s;
	if ((*nlen = mp_token_len(s)) == 0)
		return -1;
	s = mp_ows(s + *nlen);
	if (*s != '=')
		return -1;
	*val = w = s;
	s = mp_ows(s + 1);
	if (*s == '"') {
		for (s++; *s != '"'; s++) {
			if (*s == '\\')
				s++;
			if (*s == '\0')
				return -1;
			*w++ = *s;
		}
		s++;
	} else {
		if (mp_token_len(s) == 0)
			return -1;
		while (mp_is_tchar((unsigned char)*s))
			*w++ = *s++;
	}
	*w = '\0';
	*sp = s;
	return 1;
}

/* ---- the Content-Type of the request ---- */

/* The boundary of ctype into p->delim: NULL, or the reason it is not
 * usable. ctype is a copy this may write to. */
const char *
sg_mph_boundary(struct sg_mp *p, char *ctype)
{
	const char *pname, *b = NULL;
	char *s = mp_ows(ctype), *val;
	size_t nlen, blen, i;
	int r;

	nlen = strcspn(s, "; \t");
	if (!mp_ieq(s, nlen, "multipart/form-data"))
		return "the Content-Type is not multipart/form-data";
	s += nlen;
	while ((r = mp_param(&s, &pname, &nlen, &val)) == 1) {
		if (!mp_ieq(pname, nlen, "boundary"))
			continue;
		if (b != NULL)
			return "the Content-Type names two boundaries";
		b = val;
	}
	if (r == -1)
		return "the Content-Type is malformed";
	if (b == NULL)
		return "the Content-Type has no boundary";
	if ((blen = strlen(b)) == 0 || blen > SG_MP_MAX_BOUNDARY)
		return "the multipart boundary must be 1 to "
		    MP_STR(SG_MP_MAX_BOUNDARY) " characters";
	/* Printable ASCII: looser than RFC 2046's bchars, but enough for the
	 * search, which needs a boundary without CR and LF. */
	for (i = 0; i < blen; i++)
		if (b[i] < 0x20 || b[i] > 0x7e)
			return "the multipart boundary holds a character "
			    "other than printable ASCII";
	if (b[blen - 1] == ' ')
		return "the multipart boundary ends in a space";
	memcpy(p->delim, "\r\n--", 4);
	memcpy(p->delim + 4, b, blen);
	p->dlen = 4 + blen;
	return NULL;
}

/* ---- a part's headers ---- */

/*
 * The ext-value of filename*= (RFC 8187), charset'language'pct-encoded,
 * decoded in place: NULL, or why it is refused.
 */
static const char *
mp_ext_value(char *v)
{
	char *q1, *q2, *r, *w;
	int hi, lo;

	if ((q1 = strchr(v, '\'')) == NULL ||
	    (q2 = strchr(q1 + 1, '\'')) == NULL)
		return "a part's filename* is malformed";
	if (!mp_ieq(v, (size_t)(q1 - v), "utf-8"))
		return "a part's filename* is in a charset other than UTF-8";
	for (r = q2 + 1, w = v; *r != '\0'; w++) {
		if (*r != '%') {
			*w = *r++;
			continue;
		}
		if ((hi = sg_hexval((unsigned char)r[1])) == -1 ||
		    (lo = sg_hexval((unsigned char)r[2])) == -1)
			return "a part's filename* is malformed";
		*w = (char)(hi << 4 | lo);
		if (sg_mph_is_ctl((unsigned char)*w))
			return "a part's filename holds a control character";
		r += 3;
	}
	*w = '\0';
	return NULL;
}

/* Content-Disposition: form-data; name=...; filename=... into part. */
static int
mp_disposition(struct sg_mp *p, char *v, struct sg_mp_part *part)
{
	char *name = NULL, *fname = NULL, *fstar = NULL, **slot, *val;
	const char *pname, *why;
	size_t n = mp_token_len(v), nlen;
	int r;

	if (!mp_ieq(v, n, "form-data"))
		return mp_fail(p, "a part's Content-Disposition is not "
		    "form-data");
	v += n;
	while ((r = mp_param(&v, &pname, &nlen, &val)) == 1) {
		if (mp_ieq(pname, nlen, "name"))
			slot = &name;
		else if (mp_ieq(pname, nlen, "filename"))
			slot = &fname;
		else if (mp_ieq(pname, nlen, "filename*"))
			slot = &fstar;
		else
			continue;
		if (*slot != NULL)
			return mp_fail(p, "a part's Content-Disposition "
			    "repeats a parameter");
		*slot = val;
	}
	if (r == -1)
		return mp_fail(p, "a part's Content-Disposition is malformed");
	if (fstar != NULL && (why = mp_ext_value(fstar)) != NULL)
		return mp_fail(p, why);
	part->name = name != NULL ? name : "";
	part->filename = fstar != NULL ? fstar : fname;
	return 0;
}

/* One header line (NUL-ended, in hbuf): note the fields we read. */
static int
mp_header(struct sg_mp *p, char *line)
{
	char *colon = strchr(line, ':'), *v, *e;
	size_t nlen;

	if (colon == NULL)
		return mp_fail(p, "a part header has no colon");
	nlen = (size_t)(colon - line);
	if (nlen == 0 || mp_token_len(line) != nlen)
		return mp_fail(p, "a part header's name is malformed");
	v = mp_ows(colon + 1);
	for (e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
		;
	*e = '\0';
	if (mp_ieq(line, nlen, "content-disposition")) {
		if (p->hcd != NULL)
			return mp_fail(p, "a part has two Content-Disposition "
			    "headers");
		p->hcd = v;
	} else if (mp_ieq(line, nlen, "content-type")) {
		if (p->hct != NULL)
			return mp_fail(p, "a part has two Content-Type "
			    "headers");
		p->hct = v;
	} else if (mp_ieq(line, nlen, "content-transfer-encoding") &&
	    !mp_ieq(v, strlen(v), "binary") &&
	    !mp_ieq(v, strlen(v), "8bit") && !mp_ieq(v, strlen(v), "7bit"))
		return mp_fail(p, "a part has a Content-Transfer-Encoding "
		    "other than binary");
	return 0;
}

/* The blank line ended a header block: read it, tell the caller. */
static int
mp_part(struct sg_mp *p)
{
	struct sg_mp_part part = { "", NULL, NULL };

	if (p->hcd != NULL && mp_disposition(p, p->hcd, &part) == -1)
		return -1;
	part.content_type = p->hct;
	p->state = MP_BODY;
	mp_start(p);
	if (p->cb.part != NULL && p->cb.part(p->arg, &part) != 0)
		return mp_stop(p);
	return 0;
}

/* Header bytes until the blank line: how many of buf were used, or -1. */
int
sg_mph_headers(struct sg_mp *p, const unsigned char *buf, size_t len,
    size_t *used)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = buf[i];

		if (++p->hraw > SG_MP_MAX_HEADER)
			return mp_fail(p, "a part's headers are longer than "
			    MP_STR(SG_MP_MAX_HEADER) " bytes");
		if (p->hcr && c != '\n')
			return mp_fail(p, "a part header holds a CR without "
			    "LF");
		if (c == '\r') {
			p->hcr = 1;
			continue;
		}
		if (c == '\n') {
			p->hcr = 0;
			if (p->hlen == p->hline) {
				*used = i + 1;
				return mp_part(p);
			}
			p->hbuf[p->hlen++] = '\0';
			if (mp_header(p, p->hbuf + p->hline) == -1)
				return -1;
			p->hline = p->hlen;
			continue;
		}
		if (sg_mph_is_ctl(c))
			return mp_fail(p, "a part header holds a control "
			    "character");
		/* Folding (obsolete since RFC 7230) would join this line to
		 * the one before: a reader that does not would see another
		 * header. */
		if (p->hlen == p->hline && (c == ' ' || c == '\t'))
			return mp_fail(p, "a part header is folded");
		p->hbuf[p->hlen++] = (char)c;
	}
	*used = len;
	return 0;
}
