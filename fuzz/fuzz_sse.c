/*
 * The upstream SSE parser: the same events, raw bytes and data whether the
 * stream comes whole or cut at points the input chooses (inside a "\r\n"
 * too), and an event over the size limit fails the same way.
 *
 * Input: cuts as cuts.h reads them, then the stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuts.h"
#include "../core/upstream/sse.h"
#include "../lib/util.h"

#define MAX_EVENT 4096

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Every event as name, data and raw bytes, with separators. */
static int
record(void *arg, const struct sg_sse_event *e)
{
	struct sg_buf *b = arg;

	sg_buf_add(b, e->name, strlen(e->name));
	sg_buf_add(b, "\x01", 1);
	sg_buf_add(b, e->data, e->datalen);
	sg_buf_add(b, e->has_data ? "\x02" : "\x03", 1);
	sg_buf_add(b, e->raw, e->rawlen);
	sg_buf_add(b, "\x04", 1);
	return 0;
}

/* -1 when the parser refused the stream. */
static int
parse(const char *s, size_t n, const size_t *cuts, int ncuts,
    struct sg_buf *out, int *boundary)
{
	struct sg_sse *p = sg_sse_new(MAX_EVENT, record, out);
	size_t at = 0;
	int i, rc = 0;

	if (p == NULL)
		abort();
	for (i = 0; i < ncuts && rc == 0; i++) {
		rc = sg_sse_feed(p, s + at, cuts[i] - at);
		at = cuts[i];
	}
	if (rc == 0)
		rc = sg_sse_feed(p, s + at, n - at);
	*boundary = sg_sse_at_boundary(p);
	sg_sse_free(p);
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sg_buf whole = { 0 }, split = { 0 };
	size_t cuts[FUZZ_MAX_CUTS], n;
	int ncuts, rc1, rc2, at1, at2;
	const char *s;

	if (fuzz_cuts(data, size, cuts, &ncuts, &s, &n) == -1)
		return 0;
	rc1 = parse(s, n, cuts, 0, &whole, &at1);
	rc2 = parse(s, n, cuts, ncuts, &split, &at2);
	/* Whole or cut, the same streams are refused, and the others make
	 * the same events and end in the same place. */
	if (rc1 != rc2)
		abort();
	if (rc1 == 0 && (whole.len != split.len || (whole.len > 0 &&
	    memcmp(whole.p, split.p, whole.len) != 0) || at1 != at2))
		abort();
	free(whole.p);
	free(split.p);
	return 0;
}
