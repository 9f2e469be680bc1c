/*
 * The incremental decoder of a code call's arguments: fed whole, or in
 * pieces cut at points the input chooses, it must emit the same text, and
 * what it emits is always valid UTF-8.
 *
 * Input: cuts as cuts.h reads them, then the arguments text. The text
 * is a JSON string's value decoded by Jansson (a delta event's), so valid
 * UTF-8: other inputs are skipped.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuts.h"
#include "../core/render/codedec.h"
#include "../lib/util.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
collect(void *arg, const char *text, size_t len)
{
	sg_buf_add(arg, text, len);
}

/* Valid UTF-8 is what repairing leaves unchanged. */
static int
utf8_ok(const char *s, size_t n)
{
	size_t fl;
	char *fixed = sg_utf8_fix(s, n, &fl);
	int ok = fixed != NULL && fl == n && memcmp(fixed, s, n) == 0;

	free(fixed);
	return ok;
}

static void
decode(const char *s, size_t n, const size_t *cuts, int ncuts,
    struct sg_buf *out, struct sg_codedec *d)
{
	size_t at = 0;
	int i;

	sg_codedec_init(d, collect, out);
	for (i = 0; i < ncuts; i++) {
		sg_codedec_feed(d, s + at, cuts[i] - at);
		at = cuts[i];
	}
	sg_codedec_feed(d, s + at, n - at);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sg_buf whole = { 0 }, split = { 0 };
	struct sg_codedec d1, d2;
	size_t cuts[FUZZ_MAX_CUTS], n;
	const char *s;
	int ncuts;

	if (fuzz_cuts(data, size, cuts, &ncuts, &s, &n) == -1 ||
	    !utf8_ok(s, n))
		return 0;
	decode(s, n, cuts, 0, &whole, &d1);
	decode(s, n, cuts, ncuts, &split, &d2);
	if (whole.len != split.len || (whole.len > 0 &&
	    memcmp(whole.p, split.p, whole.len) != 0) || d1.done != d2.done ||
	    d1.invalid != d2.invalid)
		abort();
	if (whole.len > 0 && !utf8_ok(whole.p, whole.len))
		abort();
	free(whole.p);
	free(split.p);
	return 0;
}
