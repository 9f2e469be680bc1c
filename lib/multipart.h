/*
 * sg_mp: a streaming multipart/form-data parser (RFC 7578 on RFC 2046)
 * for uploads. The body goes in as it arrives, cut anywhere; each part's
 * headers come out once, then its body bytes as they are found, then its
 * end. A part's body is never kept: the parser holds back at most
 * SG_MP_MAX_HELD bytes that may be the start of a delimiter, so its
 * memory is one fixed allocation (about 8.5 KB, most of it the header
 * block) whatever the size of the body.
 *
 * What it accepts, and why:
 *  - Lines end in CRLF, but a bare LF is taken where it cannot be misread:
 *    at the end of a boundary line and of a header line (these are text
 *    lines). Inside a body only CRLF "--" boundary is a delimiter: body
 *    bytes are binary, and a "\n--boundary" there is content. A body that
 *    uses bare LF throughout therefore never finds its second boundary and
 *    sg_mp_finish refuses it as truncated.
 *  - CRLF "--" boundary is a delimiter only when "--" or any spaces/tabs
 *    (at most SG_MP_MAX_PAD) and a line end follow; otherwise those bytes
 *    are body bytes. More padding than that is refused, not guessed at.
 *  - Everything before the first boundary and after the closing one is
 *    ignored. A part's content may be left out altogether: "--boundary"
 *    right after its header block's blank line ends it (RFC 2046: the
 *    delimiter's CRLF is then the blank line's; Go reads it so too).
 *  - In part headers: names are case-insensitive tokens; a line without a
 *    colon, a folded (indented) line, a bare CR, a control character other
 *    than TAB, a second Content-Disposition or Content-Type, a repeated
 *    name/filename/filename* parameter, a disposition other than
 *    form-data and a Content-Transfer-Encoding other than binary, 8bit or
 *    7bit are all refused: each could make two readers see different
 *    fields.
 *  - Parameter values are tokens or quoted strings with backslash escapes
 *    (so an old client's filename="C:\dir\f" reads as "C:dirf").
 *    filename*=UTF-8''percent-encoded is decoded and preferred to
 *    filename=; another charset is refused. filename= is not
 *    percent-decoded: WHATWG clients (browsers, Node) send '"', CR and LF
 *    in it as %22, %0D, %0A, and those three bytes come out as sent.
 *
 * Filenames: name and filename never hold a NUL or another control
 * character except TAB (a body that would give one is refused), but they
 * are otherwise the client's bytes, not checked as UTF-8 or as a path:
 * "../x", "a/b", "%2e%2e" come out verbatim and the caller must validate
 * a filename before using it for anything.
 *
 * Parts come in the client's order: the openai SDK sends "file" before
 * "purpose", so a caller cannot wait for purpose before storing the file.
 * The total body size is the caller's to limit (it sees every byte).
 */
#ifndef SG_MULTIPART_H
#define SG_MULTIPART_H

#include <stddef.h>

#define SG_MP_MAX_BOUNDARY	70	/* RFC 2046 */
#define SG_MP_MAX_HEADER	8192	/* bytes of one part's header block */
#define SG_MP_MAX_PARTS		64
#define SG_MP_MAX_PAD		32	/* spaces/tabs after a boundary */
/* Body bytes the parser may hold back, because they could be the start
 * of a delimiter ("\r\n--", the boundary, padding, "\r"). */
#define SG_MP_MAX_HELD		(4 + SG_MP_MAX_BOUNDARY + SG_MP_MAX_PAD + 1)

struct sg_mp;

/* One part's headers. Borrowed: valid during the part callback only. */
struct sg_mp_part {
	const char	*name;		/* Content-Disposition name=, "" when
					 * absent (or no Content-Disposition) */
	const char	*filename;	/* filename*= (decoded) or filename=,
					 * NULL when absent, "" when sent empty
					 * (a file input with no file) */
	const char	*content_type;	/* the part's Content-Type, trimmed,
					 * NULL when absent; not parsed */
};

/*
 * The caller's callbacks, any of them NULL to ignore that event. Each
 * returns 0 to go on; nonzero stops the parse (sg_mp_feed returns -1 and
 * sg_mp_stopped is 1). They must not call sg_mp_feed, sg_mp_finish or
 * sg_mp_free on the parser that called them.
 */
struct sg_mp_cb {
	/* A part's headers are in; its data follows. */
	int	(*part)(void *arg, const struct sg_mp_part *);
	/* The next bytes of the current part's body, len > 0; buf is
	 * borrowed until the callback returns. */
	int	(*data)(void *arg, const void *buf, size_t len);
	/* The current part ended at a delimiter (not called for a part that
	 * a truncated or refused body leaves open). */
	int	(*end)(void *arg);
};

/*
 * A new parser for a request whose Content-Type header value is ctype:
 * multipart/form-data (any case) with a boundary parameter, quoted or
 * not, 1 to 70 printable ASCII characters not ending in a space, given
 * once; other parameters are ignored. cb is copied, ctype is not kept,
 * arg is passed to the callbacks. NULL when ctype is NULL, not that type,
 * malformed, without a usable boundary, or memory ran out: err (errsz
 * bytes, may be NULL) then holds a sentence that can go to the client.
 * Free with sg_mp_free.
 */
struct sg_mp	*sg_mp_new(const char *ctype, const struct sg_mp_cb *cb,
		    void *arg, char *err, size_t errsz);

/*
 * Feed the next len bytes of the body (buf may be NULL when len is 0).
 * 0, or -1 when the body is malformed, a limit was passed or a callback
 * stopped. Once -1, every later call returns -1 and no callback runs
 * again. Bytes after the closing boundary are ignored (0).
 */
int		 sg_mp_feed(struct sg_mp *, const void *buf, size_t len);

/*
 * The body ended: 0 when its closing boundary was seen, -1 when it was
 * not (a truncated body: whatever the callbacks received must be thrown
 * away) or an earlier call already failed. Call it once, after the last
 * sg_mp_feed; later feeds return -1 unless the body had closed.
 */
int		 sg_mp_finish(struct sg_mp *);

/* Why the last -1 came: a sentence for the client, borrowed from the
 * parser; "" when nothing failed. */
const char	*sg_mp_error(const struct sg_mp *);

/* 1 when the -1 came from a callback returning nonzero: the reason is
 * then the caller's own, and sg_mp_error only says that it stopped. */
int		 sg_mp_stopped(const struct sg_mp *);

/* Parts seen so far (started, whether or not they ended). */
int		 sg_mp_parts(const struct sg_mp *);

void		 sg_mp_free(struct sg_mp *);

#endif
