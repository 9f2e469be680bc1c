/*
 * sg_sse: an incremental Server-Sent Events parser. Bytes go in as the
 * network delivers them, split anywhere; each complete event (up to its
 * blank line) comes out once, with its raw bytes (for a faithful relay)
 * and its parsed event name and data (for the loop). Lines end at "\n",
 * "\r\n" or "\r", and a "\r\n" may be split across two feeds.
 */
#ifndef SG_SSE_H
#define SG_SSE_H

#include <stddef.h>

struct sg_sse_event {
	const char	*raw;		/* the event's bytes, terminator included */
	size_t		 rawlen;
	const char	*name;		/* "event:" field, "" when absent */
	const char	*data;		/* data lines joined by "\n", NUL-ended */
	size_t		 datalen;
	int		 has_data;	/* 0 for a comment-only block */
};

/* Return 0 to go on, -1 to stop: sg_sse_feed then returns -1 too. */
typedef int (*sg_sse_fn)(void *arg, const struct sg_sse_event *);

struct sg_sse;

/* New parser; events larger than max bytes make sg_sse_feed fail. */
struct sg_sse	*sg_sse_new(size_t max, sg_sse_fn, void *arg);
void		 sg_sse_free(struct sg_sse *);
int		 sg_sse_feed(struct sg_sse *, const char *buf, size_t len);
/* Bytes of an unfinished event (what a broken stream left), borrowed. */
const char	*sg_sse_pending(const struct sg_sse *, size_t *len);
/* Whether the last byte fed ended an event: the stream is between events. */
int		 sg_sse_at_boundary(const struct sg_sse *);

#endif
