/*
 * sandgate's own JSON reader and writer against Jansson, whose behaviour
 * they promise (lib/jscan.h, lib/jdump.h). They read what sandboxes and
 * upstreams send, so any text: sg_jparse must accept exactly what
 * json_loadb accepts and build a value that dumps to the same bytes;
 * refused, for Jansson's reason at its place;
 * sg_jscan_object must refuse what Jansson refuses as an object, and find
 * each member's value as Jansson reads it; sg_jdump of any value parsed
 * must be json_dumps's compact bytes; sg_jtw_text of the text, whatever
 * its bytes, must be Jansson's dump of it made UTF-8
 * (sg_json_string_lossy).
 *
 * Input: the first byte chooses JSON_DECODE_ANY (bit 0) and
 * JSON_REJECT_DUPLICATES (bit 1); the rest is the text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../lib/jdump.h"
#include "../lib/jscan.h"
#include "../lib/jtw.h"
#include "../lib/util.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char *
dumped(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* sg_jdump's bytes are json_dumps's. */
static void
same_dump(const json_t *v)
{
	char *want = dumped(v), *got;
	size_t len = 0;

	got = sg_jdump_text(v, &len);
	if ((want == NULL) != (got == NULL))
		abort();
	if (want != NULL && (strlen(want) != len || memcmp(want, got, len)))
		abort();
	free(want);
	free(got);
}

/* Any bytes written as a string by sg_jtw are Jansson's dump of them
 * made UTF-8. */
static void
same_text(const char *p, size_t n)
{
	struct sg_jtw w = { { 0 }, 0 };
	json_t *s = sg_json_string_lossy(p, n);
	char *want = s != NULL ? dumped(s) : NULL, *got;

	sg_jtw_text(&w, p, n);
	got = sg_jtw_end(&w);
	if (want == NULL || got == NULL || strcmp(want, got) != 0)
		abort();
	free(want);
	free(got);
	json_decref(s);
}

/* The members the scanner found are Jansson's. */
static void
same_members(const char *p, size_t n, const json_t *o)
{
	static const char *const names[] = { "id", "type", "item", "response",
	    "output", "usage", "status", "", NULL };
	struct sg_jspan out[8];
	json_t *v;
	size_t i;
	int rc = sg_jscan_object(p, n, names, out);

	if (!json_is_object(o)) {
		if (rc == 0)
			abort();	/* accepted what is no object */
		return;
	}
	if (rc != 0)
		return;		/* may leave escaped keys to Jansson */
	for (i = 0; names[i] != NULL; i++) {
		json_t *want = json_object_get(o, names[i]);

		if ((want == NULL) != (out[i].p == NULL))
			abort();
		if (want == NULL)
			continue;
		v = json_loadb(out[i].p, out[i].len, JSON_DECODE_ANY |
		    JSON_ALLOW_NUL, NULL);
		if (v == NULL || !json_equal(v, want))
			abort();
		json_decref(v);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 1;
	size_t n;
	json_t *want, *got;
	json_error_t we, ge;
	int any, nodup;
	char *a, *b;

	if (size == 0)
		return 0;
	any = data[0] & 1;
	nodup = data[0] & 2;
	n = size - 1;
	want = json_loadb(p, n, JSON_ALLOW_NUL | (any ? JSON_DECODE_ANY : 0) |
	    (nodup ? JSON_REJECT_DUPLICATES : 0), &we);
	got = sg_jparse_err(p, n, (any ? SG_JPARSE_ANY : 0) |
	    (nodup ? SG_JPARSE_NODUP : 0), &ge);
	if ((want == NULL) != (got == NULL))
		abort();
	/* Refused, for Jansson's reason at Jansson's place. */
	if (want == NULL && (strcmp(we.text, ge.text) != 0 ||
	    we.position != ge.position || we.line != ge.line ||
	    we.column != ge.column))
		abort();
	if (want != NULL) {
		a = dumped(want);
		b = dumped(got);
		if ((a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b)))
			abort();
		free(a);
		free(b);
		same_dump(want);
	}
	json_decref(got);
	/* The scanner takes a repeated key (the last), as a parse that
	 * does not refuse it. */
	if (nodup) {
		json_decref(want);
		want = json_loadb(p, n, JSON_ALLOW_NUL | (any ? JSON_DECODE_ANY :
		    0), NULL);
	}
	same_members(p, n, want);
	same_text(p, n);
	json_decref(want);
	return 0;
}
