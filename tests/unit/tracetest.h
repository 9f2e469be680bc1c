/*
 * What the trace's unit tests share (test_trace.c, test_trace_img.c): the
 * capture's JSON read back, a sandbox's result, a PNG as base64, and a
 * teardown that leaves the capture empty. Static, as testutil.h's;
 * included after cmocka.h.
 */
#ifndef SG_TRACETEST_H
#define SG_TRACETEST_H

#include <openssl/evp.h>

#include "../../core/state/trace.h"

#define START	1000000		/* the request's start, sg_now_ms */

/* New reference: the rounds now, times from START; fails when there
 * are none or they pass the bound. */
static inline json_t *
rounds(void)
{
	char *text = sg_trace_json(START, NULL);
	json_t *j;

	assert_non_null(text);
	assert_true(strlen(text) <= SG_TRACE_MAX);
	assert_non_null(j = json_loads(text, 0, NULL));
	free(text);
	assert_true(json_is_array(j));
	return j;
}

static inline const json_t *
run_of(const json_t *all, size_t round, size_t k)
{
	return json_array_get(json_object_get(json_array_get(all, round),
	    "code_runs"), k);
}

static inline const char *
str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static inline json_int_t
num(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* A result of the sandbox's shape (sg_exec_json). New reference. */
static inline json_t *
result(const char *out, const char *err, json_t *error, json_t *results)
{
	return json_pack("{s:s,s:s,s:s,s:o,s:o,s:n}", "object",
	    "code_execution", "stdout", out, "stderr", err, "results",
	    results != NULL ? results : json_array(), "error", error != NULL ?
	    error : json_null(), "execution_count");
}

/* A PNG of n bytes (its signature, then bytes from seed) as base64:
 * new. */
static inline char *
png_b64(size_t n, unsigned char seed)
{
	unsigned char *raw = malloc(n);
	char *b64 = malloc(4 * ((n + 2) / 3) + 1);
	size_t i;

	assert_true(n >= 8 && raw != NULL && b64 != NULL);
	memcpy(raw, "\x89PNG\r\n\x1a\n", 8);
	for (i = 8; i < n; i++)
		raw[i] = (unsigned char)(seed + i * 7);
	EVP_EncodeBlock((unsigned char *)b64, raw, (int)n);
	free(raw);
	return b64;
}

/* A failed test leaves nothing for the next. */
static inline int
reset(void **state)
{
	(void)state;
	sg_trace_reset();
	return 0;
}

#define T(f)	cmocka_unit_test_teardown(f, reset)

#endif
