/*
 * The multipart parser's private parts, shared by multipart.c (the parser
 * and its delimiter search) and mp_head.c (the header grammar: the
 * request's Content-Type, a part's headers). Nothing outside those
 * includes it.
 */
#ifndef SG_MP_INT_H
#define SG_MP_INT_H

#include <stdio.h>
#include <string.h>

#include "multipart.h"

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

/* The parser's state changes, made by both halves: static inline, so
 * neither calls into the other for them. */
/*
 * Search from a line start: as if a "\r\n" had just been seen, so that
 * "--boundary" right there is a delimiter. The body opens this way (RFC
 * 2046: the first boundary needs no line end before it), and so does a
 * part's content: after a header block "\r\n\r\n--boundary" is a part
 * without content, the blank line's CRLF being the delimiter's.
 */
static inline void
mp_start(struct sg_mp *p)
{
	memcpy(p->hold, "\r\n", 2);
	p->m = p->nhold = p->virt = 2;
	p->sfx = SFX_START;
	p->npad = 0;
}

/* The first failure wins: its reason is what the caller reports. */
static inline int
mp_fail(struct sg_mp *p, const char *why)
{
	if (p->state != MP_ERR) {
		snprintf(p->err, sizeof(p->err), "%s", why);
		p->state = MP_ERR;
	}
	return -1;
}

static inline int
mp_stop(struct sg_mp *p)
{
	mp_fail(p, "the upload was stopped");
	p->stopped = 1;
	return -1;
}

/* mp_head.c */
/* Whether c is a control character (other than tab). */
int	 sg_mph_is_ctl(unsigned char c);
/* The boundary of ctype (a copy it writes to) into p->delim: NULL, or
 * why it is not usable. */
const char *sg_mph_boundary(struct sg_mp *p, char *ctype);
/* A part's header bytes, up to its blank line: how many of buf were
 * used in *used (the rest is its body); -1 with p failed. */
int	 sg_mph_headers(struct sg_mp *p, const unsigned char *buf, size_t len,
	    size_t *used);

#endif
