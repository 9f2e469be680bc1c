/*
 * The request rewriter on both surfaces, the code-argument parser and the
 * text the model reads for a run, over any JSON a client or a model may
 * send. Nothing may crash; what the model reads stays within its bound
 * and is valid UTF-8.
 *
 * Input: byte 0 picks the surface (bit 0) and a final follow-up (bit 1);
 * the rest is a request body, arguments text or a run result.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/loop/rewrite.h"
#include "../lib/util.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_text(const char *t)
{
	size_t n, fl;
	char *fixed;

	if (t == NULL)
		return;
	n = strlen(t);
	if (n > SG_RW_RESULT_MAX + 64)
		abort();
	fixed = sg_utf8_fix(t, n, &fl);
	if (fixed == NULL || fl != n || memcmp(fixed, t, n) != 0)
		abort();
	free(fixed);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum sg_surface surface;
	struct sg_rw_info info;
	char *code = NULL, *problem = NULL, *text, *dump;
	const char *s;
	json_t *body;
	size_t n;

	if (size < 1)
		return 0;
	surface = data[0] & 1 ? SG_SURFACE_RESPONSES : SG_SURFACE_CHAT;
	s = (const char *)data + 1;
	n = size - 1;
	if (sg_rw_code_arg(s, n, &code, &problem) == 0 && code == NULL)
		abort();
	free(code);
	free(problem);
	if ((body = json_loadb(s, n, 0, NULL)) == NULL)
		return 0;
	text = sg_rw_tool_result(body);
	check_text(text);
	free(text);
	memset(&info, 0, sizeof(info));
	sg_rw_wants_code(body);
	if (sg_rw_first(body, surface, "python", &info) == 0) {
		sg_rw_followup(body, surface, "python", data[0] & 2);
		sg_rw_strip(body);
		if ((dump = json_dumps(body, JSON_COMPACT)) == NULL)
			abort();
		free(dump);
	}
	json_decref(body);
	return 0;
}
