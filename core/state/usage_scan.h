/*
 * sg_usescan: the token counts of an upstream's usage object, read from
 * its JSON text without building a tree.
 *
 * Why not Jansson: a relayed answer is otherwise never parsed, and
 * json_loadb of its small usage object alone cost about 10,000
 * instructions a request (callgrind), a third of what the passthrough may
 * spend on the ledger. This reader takes only the plain case (ASCII, no
 * escapes in keys, shallow) and hands anything else back to Jansson, so
 * the counts are Jansson's whatever the text: fuzz/fuzz_usage.c compares
 * the two on every input.
 */
#ifndef SG_USAGE_SCAN_H
#define SG_USAGE_SCAN_H

#include <stddef.h>
#include <stdint.h>

struct sg_usage_counts {
	int64_t	 input, cached, output, reasoning;
};

enum {
	SG_USESCAN_OK = 0,	/* *c filled (0 for what is absent) */
	SG_USESCAN_ASK = -1,	/* not the plain case, or not JSON: ask
				 * Jansson, whose answer stands */
};

/*
 * The object at text (its '{') in len bytes, the rest ignored: input
 * ("input_tokens", else "prompt_tokens"), cached (in
 * "input_tokens_details", else "prompt_tokens_details"), output and
 * reasoning likewise; each counts only as a positive integer, and a key
 * given twice counts as its last, as Jansson reads them.
 */
int	 sg_usescan(const char *text, size_t len, struct sg_usage_counts *c);

#endif
