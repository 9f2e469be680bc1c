/*
 * The usage scanner against Jansson: whatever the text, when the scanner
 * decides (SG_USESCAN_OK), Jansson must read the same object and the
 * counts taken from its tree (as the ledger takes them) must be the
 * scanner's. The scanner may always ask Jansson instead.
 *
 * Input: the text from its usage object's '{' on.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../core/state/usage_scan.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* A positive integer at a (else b when a is absent), else 0. */
static int64_t
count_of(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	if (v == NULL && b != NULL)
		v = json_object_get(o, b);
	return json_is_integer(v) && json_integer_value(v) > 0 ?
	    (int64_t)json_integer_value(v) : 0;
}

static const json_t *
either(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	return v != NULL ? v : json_object_get(o, b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sg_usage_counts c;
	json_t *o;

	if (sg_usescan((const char *)data, size, &c) != SG_USESCAN_OK)
		return 0;
	o = json_loadb((const char *)data, size, JSON_DISABLE_EOF_CHECK, NULL);
	if (!json_is_object(o))
		abort();
	if (c.input != count_of(o, "input_tokens", "prompt_tokens") ||
	    c.output != count_of(o, "output_tokens", "completion_tokens") ||
	    c.cached != count_of(either(o, "input_tokens_details",
	    "prompt_tokens_details"), "cached_tokens", NULL) ||
	    c.reasoning != count_of(either(o, "output_tokens_details",
	    "completion_tokens_details"), "reasoning_tokens", NULL))
		abort();
	json_decref(o);
	return 0;
}
