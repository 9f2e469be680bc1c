#include <stdlib.h>
#include <string.h>

#include "sse.h"
#include "../../lib/util.h"


struct sg_sse {
	struct sg_buf	 raw;	/* current event, as received */
	size_t		 line_at; /* where in raw the current line begins */
	struct sg_buf	 data;	/* joined data lines */
	char		 name[64];
	int		 has_data;
	int		 prev_cr;	/* last byte was '\r': a '\n' may follow */
	size_t		 max;
	sg_sse_fn	 fn;
	void		*arg;
};

struct sg_sse *
sg_sse_new(size_t max, sg_sse_fn fn, void *arg)
{
	struct sg_sse *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->max = max;
	s->fn = fn;
	s->arg = arg;
	return s;
}

void
sg_sse_free(struct sg_sse *s)
{
	if (s == NULL)
		return;
	free(s->raw.p);
	free(s->data.p);
	free(s);
}

/* One complete line l[0..n) (read where raw holds it, its terminator
 * not counted): apply its field. */
static int
take_line(struct sg_sse *s, const char *l, size_t n)
{
	size_t flen;
	const char *val;
	size_t vlen;

	if (n == 0 || l[0] == ':')
		return 0;
	val = memchr(l, ':', n);
	flen = val != NULL ? (size_t)(val - l) : n;
	if (val != NULL) {
		val++;
		if (val < l + n && *val == ' ')
			val++;
		vlen = n - (size_t)(val - l);
	} else {
		val = "";
		vlen = 0;
	}
	if (flen == 4 && memcmp(l, "data", 4) == 0) {
		if (s->has_data && sg_buf_add(&s->data, "\n", 1) == -1)
			return -1;
		s->has_data = 1;
		return sg_buf_add(&s->data, val, vlen);
	}
	if (flen == 5 && memcmp(l, "event", 5) == 0) {
		if (vlen >= sizeof(s->name))
			vlen = sizeof(s->name) - 1;
		memcpy(s->name, val, vlen);
		s->name[vlen] = '\0';
	}
	return 0;
}

static int
dispatch(struct sg_sse *s)
{
	struct sg_sse_event ev;
	int rc;

	ev.raw = s->raw.p;
	ev.rawlen = s->raw.len;
	ev.name = s->name;
	/* A comment-only block must not show the previous event's data. */
	ev.data = s->has_data && s->data.p != NULL ? s->data.p : "";
	ev.datalen = s->data.len;
	ev.has_data = s->has_data;
	rc = s->fn(s->arg, &ev);
	s->raw.len = s->data.len = s->line_at = 0;
	s->name[0] = '\0';
	s->has_data = 0;
	return rc;
}

/* Where the line from i ends in buf[0..len): its first CR or LF, or len. */
static size_t
line_end(const char *buf, size_t i, size_t len)
{
	const char *lf = memchr(buf + i, '\n', len - i);
	size_t end = lf != NULL ? (size_t)(lf - buf) : len;
	const char *cr = memchr(buf + i, '\r', end - i);

	return cr != NULL ? (size_t)(cr - buf) : end;
}

int
sg_sse_feed(struct sg_sse *s, const char *buf, size_t len)
{
	size_t i = 0, j, n;
	char c;

	while (i < len) {
		c = buf[i];
		if (c != '\n' && c != '\r') {
			/* A run of a line's bytes, taken whole. */
			j = line_end(buf, i + 1, len);
			if (sg_buf_add(&s->raw, buf + i, j - i) == -1)
				return -1;
			s->prev_cr = 0;
			if (s->raw.len > s->max)
				return -1;
			i = j;
			continue;
		}
		n = s->raw.len - s->line_at;	/* the line that c ends */
		if (sg_buf_add(&s->raw, &c, 1) == -1)
			return -1;
		i++;
		if (c == '\n' && s->prev_cr) {
			/* Second half of "\r\n": the line already ended. */
			s->prev_cr = 0;
			s->line_at = s->raw.len;
			continue;
		}
		s->prev_cr = c == '\r';
		if (n == 0) {
			if (dispatch(s) == -1)
				return -1;
			continue;
		}
		if (take_line(s, s->raw.p + s->line_at, n) == -1)
			return -1;
		s->line_at = s->raw.len;
	}
	return 0;
}

const char *
sg_sse_pending(const struct sg_sse *s, size_t *len)
{
	*len = s->raw.len;
	return s->raw.p;
}

int
sg_sse_at_boundary(const struct sg_sse *s)
{
	/* A lone '\n' after "\r\r" belongs to the finished event's bytes. */
	return s->raw.len == 0 || (s->raw.len == 1 && s->raw.p[0] == '\n');
}
