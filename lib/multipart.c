/*
 * The multipart/form-data parser (see multipart.h). Two states read
 * bytes: the delimiter search (before the first boundary, then in each
 * part's body) and the header lines of a part. The search looks for
 * CRLF "--" boundary with memchr on '\r'; bytes from a '\r' on are a
 * candidate, matched one at a time. The boundary holds no CR or LF (its
 * characters are checked), so CR occurs only first in the delimiter and a
 * candidate that fails can only restart at the byte that failed it: no
 * backtracking, and the candidate's bytes from earlier feeds are all that
 * must be kept (hold).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multipart.h"
#include "util.h"

#define MP_STR(x)	MP_STR2(x)
#define MP_STR2(x)	#x

enum mp_state {
	MP_PREAMBLE,		/* before the first boundary: bytes dropped */
	MP_HEADERS,		/* a part's header lines */
	MP_BODY,		/* a part's body: bytes go to cb.data */
	MP_DONE,		/* after the closing boundary: bytes dropped */
	MP_ERR			/* refused or stopped: nothing more */
};

/* Where a candidate is once the whole "\r\n--boundary" matched. */
enum mp_sfx {
	SFX_START,		/* right after the boundary */
	SFX_DASH,		/* after one '-': a second closes the body */
	SFX_PAD,		/* after spaces/tabs */
	SFX_CR			/* after '\r': '\n' ends the boundary line */
};

/* What one byte did to a candidate. */
enum mp_step {
	STEP_MORE,		/* still a delimiter, maybe */
	STEP_FAIL,		/* not one: its bytes were content */
	STEP_PART,		/* a delimiter: a part follows */
	STEP_CLOSE,		/* the closing delimiter */
	STEP_ERR		/* too much padding: refused */
};

struct sg_mp {
	struct sg_mp_cb	 cb;
	void		*arg;
	enum mp_state	 state;
	int		 stopped;
	int		 nparts;
	char		 delim[4 + SG_MP_MAX_BOUNDARY]; /* "\r\n--" boundary */
	size_t		 dlen;
	/* The candidate delimiter. */
	size_t		 m;		/* its bytes so far, 0 when none */
	enum mp_sfx	 sfx;
	size_t		 npad;
	unsigned char	 hold[SG_MP_MAX_HELD];
	size_t		 nhold;		/* bytes in hold: the candidate's from
					 * earlier feeds */
	size_t		 virt;		/* how many of them are a "\r\n" that
					 * was not in the body (mp_start) */
	/* The header block: each line without its line end, NUL-ended. */
	size_t		 hraw;		/* bytes received, line ends included */
	size_t		 hlen;		/* bytes in hbuf */
	size_t		 hline;		/* where the current line starts */
	int		 hcr;		/* the last byte was '\r' */
	char		*hcd, *hct;	/* Content-Disposition and Content-Type
					 * values, in hbuf; NULL until seen */
	char		 err[160];
	char		 hbuf[SG_MP_MAX_HEADER];
};

/* ---- small helpers ---- */

static int
mp_is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr("!#$%&'*+-.^_`|~",
	    c) != NULL);
}

static int
mp_is_ctl(unsigned char c)
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

/*
 * Search from a line start: as if a "\r\n" had just been seen, so that
 * "--boundary" right there is a delimiter. The body opens this way (RFC
 * 2046: the first boundary needs no line end before it), and so does a
 * part's content: after a header block "\r\n\r\n--boundary" is a part
 * without content, the blank line's CRLF being the delimiter's.
 */
static void
mp_start(struct sg_mp *p)
{
	memcpy(p->hold, "\r\n", 2);
	p->m = p->nhold = p->virt = 2;
	p->sfx = SFX_START;
	p->npad = 0;
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

/* The first failure wins: its reason is what the caller reports. */
static int
mp_fail(struct sg_mp *p, const char *why)
{
	if (p->state != MP_ERR) {
		snprintf(p->err, sizeof(p->err), "%s", why);
		p->state = MP_ERR;
	}
	return -1;
}

static int
mp_stop(struct sg_mp *p)
{
	mp_fail(p, "the upload was stopped");
	p->stopped = 1;
	return -1;
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
static const char *
mp_boundary(struct sg_mp *p, char *ctype)
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

struct sg_mp *
sg_mp_new(const char *ctype, const struct sg_mp_cb *cb, void *arg,
    char *err, size_t errsz)
{
	const char *why = NULL;
	struct sg_mp *p = NULL;
	char *copy = NULL;
	size_t i;

	if (ctype == NULL)
		why = "the request has no Content-Type";
	for (i = 0; why == NULL && ctype[i] != '\0'; i++)
		if (mp_is_ctl((unsigned char)ctype[i]))
			why = "the Content-Type holds a control character";
	if (why == NULL && ((p = calloc(1, sizeof(*p))) == NULL ||
	    (copy = strdup(ctype)) == NULL))
		why = "out of memory";
	if (why == NULL)
		why = mp_boundary(p, copy);
	free(copy);
	if (why != NULL) {
		if (err != NULL && errsz > 0)
			snprintf(err, errsz, "%s", why);
		free(p);
		return NULL;
	}
	if (cb != NULL)
		p->cb = *cb;
	p->arg = arg;
	p->state = MP_PREAMBLE;
	mp_start(p);
	return p;
}

void
sg_mp_free(struct sg_mp *p)
{
	free(p);
}

const char *
sg_mp_error(const struct sg_mp *p)
{
	return p->err;
}

int
sg_mp_stopped(const struct sg_mp *p)
{
	return p->stopped;
}

int
sg_mp_parts(const struct sg_mp *p)
{
	return p->nparts;
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
		if (mp_is_ctl((unsigned char)*w))
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
static int
mp_headers(struct sg_mp *p, const unsigned char *buf, size_t len,
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
		if (mp_is_ctl(c))
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

/* ---- the delimiter search ---- */

/* Body bytes for the caller; before the first boundary, dropped. */
static int
mp_emit(struct sg_mp *p, const void *buf, size_t len)
{
	if (p->state != MP_BODY || len == 0 || p->cb.data == NULL)
		return 0;
	if (p->cb.data(p->arg, buf, len) != 0)
		return mp_stop(p);
	return 0;
}

static void
mp_reset(struct sg_mp *p)
{
	p->m = p->nhold = p->virt = p->npad = 0;
	p->sfx = SFX_START;
}

/* The next byte of a candidate (p->m > 0). */
static enum mp_step
mp_step(struct sg_mp *p, unsigned char c)
{
	if (p->m < p->dlen) {
		if (c != (unsigned char)p->delim[p->m])
			return STEP_FAIL;
		p->m++;
		return STEP_MORE;
	}
	switch (p->sfx) {
	case SFX_START:
		if (c == '-') {
			p->sfx = SFX_DASH;
			break;
		}
		/* FALLTHROUGH */
	case SFX_PAD:
		if (c == ' ' || c == '\t') {
			if (++p->npad > SG_MP_MAX_PAD)
				return STEP_ERR;
			p->sfx = SFX_PAD;
			break;
		}
		if (c == '\r') {
			p->sfx = SFX_CR;
			break;
		}
		return c == '\n' ? STEP_PART : STEP_FAIL;
	case SFX_DASH:
		return c == '-' ? STEP_CLOSE : STEP_FAIL;
	case SFX_CR:
		return c == '\n' ? STEP_PART : STEP_FAIL;
	}
	p->m++;
	return STEP_MORE;
}

/* A delimiter ended the preamble or a part. */
static int
mp_delimiter(struct sg_mp *p, int close)
{
	if (p->state == MP_BODY && p->cb.end != NULL && p->cb.end(p->arg) != 0)
		return mp_stop(p);
	if (close) {
		p->state = MP_DONE;
		return 0;
	}
	if (++p->nparts > SG_MP_MAX_PARTS)
		return mp_fail(p, "the body has more than "
		    MP_STR(SG_MP_MAX_PARTS) " parts");
	p->state = MP_HEADERS;
	p->hraw = p->hlen = p->hline = 0;
	p->hcr = 0;
	p->hcd = p->hct = NULL;
	return 0;
}

/*
 * Body (or preamble) bytes up to the next delimiter: how many of buf
 * were used, or -1. Body bytes go out in runs straight from buf; only a
 * candidate that began in an earlier feed comes from hold. cstart is where
 * the candidate starts (0 when it began in an earlier feed). The bytes
 * before it, buf[0..cstart), are content: a call ends at a delimiter,
 * so they are given out at most once.
 */
static int
mp_search(struct sg_mp *p, const unsigned char *buf, size_t len,
    size_t *used)
{
	const unsigned char *cr;
	size_t i = 0, cstart = 0;
	enum mp_step st;

	while (i < len) {
		if (p->m == 0) {
			if ((cr = memchr(buf + i, '\r', len - i)) == NULL) {
				i = len;
				break;
			}
			cstart = i = (size_t)(cr - buf);
			p->m = 1;
			i++;
			continue;
		}
		switch ((st = mp_step(p, buf[i]))) {
		case STEP_MORE:
			i++;
			continue;
		case STEP_FAIL:
			/* The candidate was content, and buf[i] may start the
			 * next one; its bytes in buf are content, given out
			 * with what comes before the next candidate. */
			if (p->nhold > p->virt && mp_emit(p, p->hold + p->virt,
			    p->nhold - p->virt) == -1)
				return -1;
			mp_reset(p);
			continue;
		case STEP_ERR:
			/* What came before the candidate was content: out
			 * with it first, as a cut before it would have. */
			if (p->nhold == 0 && mp_emit(p, buf, cstart) == -1)
				return -1;
			return mp_fail(p, "a multipart boundary is followed "
			    "by too many spaces");
		case STEP_PART:
		case STEP_CLOSE:
			break;
		}
		/* A delimiter: the bytes before it are the last of the part,
		 * its own bytes are dropped. */
		if (p->nhold == 0 && mp_emit(p, buf, cstart) == -1)
			return -1;
		mp_reset(p);
		*used = i + 1;
		return mp_delimiter(p, st == STEP_CLOSE);
	}
	/* The end of buf: what may be a delimiter waits for the next feed. */
	if (p->m > 0) {
		if (p->nhold == 0 && mp_emit(p, buf, cstart) == -1)
			return -1;
		memcpy(p->hold + p->nhold, buf + cstart, len - cstart);
		p->nhold = p->m;
	} else if (mp_emit(p, buf, len) == -1)
		return -1;
	*used = len;
	return 0;
}

int
sg_mp_feed(struct sg_mp *p, const void *buf, size_t len)
{
	const unsigned char *b = buf;
	size_t used;
	int rc = 0;

	while (len > 0) {
		used = len;
		switch (p->state) {
		case MP_PREAMBLE:
		case MP_BODY:
			rc = mp_search(p, b, len, &used);
			break;
		case MP_HEADERS:
			rc = mp_headers(p, b, len, &used);
			break;
		case MP_DONE:
			return 0;
		case MP_ERR:
			return -1;
		}
		if (rc == -1)
			return -1;
		b += used;
		len -= used;
	}
	return p->state == MP_ERR ? -1 : 0;
}

int
sg_mp_finish(struct sg_mp *p)
{
	switch (p->state) {
	case MP_DONE:
		return 0;
	case MP_PREAMBLE:
		return mp_fail(p, "the body has no multipart boundary");
	case MP_HEADERS:
		return mp_fail(p, "the body ended in a part's headers");
	case MP_BODY:
		return mp_fail(p, "the body ended before its closing boundary");
	case MP_ERR:
		break;
	}
	return -1;
}
