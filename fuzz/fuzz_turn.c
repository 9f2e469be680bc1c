/*
 * The turn accumulator of the interception loop, on both surfaces, fed
 * an upstream's SSE stream cut where the input says: whatever a model
 * server sends, nothing may crash, and the turn's parts are JSON again.
 *
 * Input: byte 0 picks the surface (bit 0); bytes 1-2 a cut; the stream.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../core/loop/turn.h"
#include "../core/upstream/sse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
dumpable(const json_t *j)
{
	char *s;

	if (j == NULL)
		return;
	if ((s = json_dumps(j, JSON_ENCODE_ANY)) == NULL)
		abort();
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sg_turn turn;
	struct sg_sse *p;
	const char *s;
	size_t n, cut;

	if (size < 3)
		return 0;
	s = (const char *)data + 3;
	n = size - 3;
	cut = ((size_t)data[1] << 8 | data[2]) % (n + 1);
	sg_turn_init(&turn, data[0] & 1 ? SG_SURFACE_RESPONSES : SG_SURFACE_CHAT);
	if ((p = sg_sse_new(1 << 16, sg_turn_event, &turn)) == NULL)
		abort();
	if (sg_sse_feed(p, s, cut) == 0)
		sg_sse_feed(p, s + cut, n - cut);
	sg_sse_free(p);
	dumpable(turn.items);
	dumpable(turn.response);
	dumpable(turn.tool_calls);
	dumpable(turn.head);
	dumpable(turn.usage);
	dumpable(turn.error);
	sg_turn_free(&turn);
	return 0;
}
