/*
 * The multipart/form-data parser (see multipart.h). Two states read
 * bytes: the delimiter search (before the first boundary, then in each
 * part's body) and the header lines of a part. The search looks for
 * CRLF "--" boundary with memchr on '\r'; bytes from a '\r' on are a
 * candidate, matched one at a time. The boundary holds no CR or LF (its
 * characters are checked), so CR occurs only first in the delimiter and a
 * candidate that fails can only restart at the byte that failed it: no
 * backtracking, and the candidate's bytes from earlier feeds are all that
 * must be kept (hold). The header lines and the Content-Type are read by
 * mp_head.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp_int.h"
#include "util.h"

/* What one byte did to a candidate. */
enum mp_step {
	STEP_MORE,		/* still a delimiter, maybe */
	STEP_FAIL,		/* not one: its bytes were content */
	STEP_PART,		/* a delimiter: a part follows */
	STEP_CLOSE,		/* the closing delimiter */
	STEP_ERR		/* too much padding: refused */
};

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
		if (sg_mph_is_ctl((unsigned char)ctype[i]))
			why = "the Content-Type holds a control character";
	if (why == NULL && ((p = calloc(1, sizeof(*p))) == NULL ||
	    (copy = strdup(ctype)) == NULL))
		why = "out of memory";
	if (why == NULL)
		why = sg_mph_boundary(p, copy);
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
			rc = sg_mph_headers(p, b, len, &used);
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
