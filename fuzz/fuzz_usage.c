/*
 * The usage scanner against Jansson: whatever the text, when the scanner
 * decides (SG_USESCAN_OK), Jansson must read the same object and the
 * counts the ledger takes from its tree (sg_use_counts) must be the
 * scanner's. The scanner may always ask Jansson instead.
 *
 * Input: the text from its usage object's '{' on.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../core/state/ledger.h"
#include "../core/state/usage_scan.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sg_usage_counts c, want;
	json_t *o;

	if (sg_usescan((const char *)data, size, &c) != SG_USESCAN_OK)
		return 0;
	o = json_loadb((const char *)data, size, JSON_DISABLE_EOF_CHECK, NULL);
	if (!json_is_object(o))
		abort();
	/* The ledger's own reading of the tree: one reading, checked. */
	sg_use_counts(o, &want);
	if (c.input != want.input || c.output != want.output ||
	    c.cached != want.cached || c.reasoning != want.reasoning)
		abort();
	json_decref(o);
	return 0;
}
