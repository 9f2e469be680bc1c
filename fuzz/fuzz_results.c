/*
 * The provider result parsers: e2b's NDJSON (spoken by the local kernel
 * too) and OpenSandbox execd's JSON lines, fed through the line splitter
 * whole and split at a point the input chooses. A sandbox is hostile: any
 * bytes may come. The result must not depend on the split, must stay
 * within the cap, and must always make a result object.
 *
 * Input: byte 0 picks the parser (bit 0) and the cap (bits 1-3: 256 B to
 * 32 KiB); bytes 1-2 the split point; the rest is the stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../providers/provider.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* New JSON text of what the stream makes, fed in two pieces at cut. */
static char *
parse(void (*fn)(struct sg_exec *, const char *, size_t), size_t cap,
    const char *s, size_t n, size_t cut, size_t *bytes)
{
	struct sg_exec r;
	struct sg_lines l = { .fn = fn, .res = &r };
	json_t *j;
	char *text;

	sg_exec_init(&r, cap);
	if (sg_lines_feed(&l, s, cut) == 0)
		sg_lines_feed(&l, s + cut, n - cut);
	sg_lines_finish(&l);
	*bytes = r.bytes;
	if ((j = sg_exec_json(&r)) == NULL)
		abort();
	text = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(j);
	sg_exec_free(&r);
	return text;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	void (*fn)(struct sg_exec *, const char *, size_t);
	size_t cap, cut, n, b1, b2;
	const char *s;
	char *whole, *split;

	if (size < 3)
		return 0;
	fn = data[0] & 1 ? sg_exec_osb_line : sg_exec_e2b_line;
	cap = (size_t)256 << ((data[0] >> 1) & 7);
	s = (const char *)data + 3;
	n = size - 3;
	cut = n > 0 ? ((size_t)data[1] << 8 | data[2]) % (n + 1) : 0;
	whole = parse(fn, cap, s, n, n, &b1);
	split = parse(fn, cap, s, n, cut, &b2);
	/* Past the cap the run stops where the cap was passed: what was
	 * kept may then depend on the cut. Within it, never. */
	if (b1 <= cap && b2 <= cap && (whole == NULL || split == NULL ||
	    strcmp(whole, split) != 0))
		abort();
	free(whole);
	free(split);
	return 0;
}
