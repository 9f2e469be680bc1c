/*
 * core/upstream/target: where a model's requests go, made once and kept.
 * The same URL and key give the same target; another key (a rotated one
 * after a reload) gives its own, with its own Authorization line; no key,
 * no Authorization line; past SG_TARGETS the oldest is made again; a URL
 * curl cannot parse is kept as a string.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../../core/upstream/target.h"

/* Whether t's header lines hold line. */
static int
has(const struct sg_target *t, const char *line)
{
	const struct curl_slist *l;

	for (l = t->hdrs; l != NULL; l = l->next)
		if (strcmp(l->data, line) == 0)
			return 1;
	return 0;
}

static int
auths(const struct sg_target *t)
{
	const struct curl_slist *l;
	int n = 0;

	for (l = t->hdrs; l != NULL; l = l->next)
		n += strncmp(l->data, "Authorization:", 14) == 0;
	return n;
}

static void
same_url_and_key_is_kept(void **state)
{
	struct sg_targets ts = { 0 };
	const struct sg_target *a, *b;
	char *got = NULL;

	(void)state;
	a = sg_targets_get(&ts, "http://127.0.0.1:9/v1/chat/completions", "k1");
	assert_non_null(a);
	assert_non_null(a->u);
	assert_int_equal(curl_url_get(a->u, CURLUPART_PATH, &got, 0), CURLUE_OK);
	assert_string_equal(got, "/v1/chat/completions");
	curl_free(got);
	assert_true(has(a, "Authorization: Bearer k1"));
	assert_true(has(a, "Content-Type: application/json"));
	assert_true(has(a, "Expect:"));
	b = sg_targets_get(&ts, "http://127.0.0.1:9/v1/chat/completions", "k1");
	assert_ptr_equal(a, b);
	sg_targets_clear(&ts);
}

static void
another_key_is_another_target(void **state)
{
	struct sg_targets ts = { 0 };
	const struct sg_target *a, *b, *c;
	const char *url = "http://127.0.0.1:9/v1/responses";

	(void)state;
	a = sg_targets_get(&ts, url, "old");
	b = sg_targets_get(&ts, url, "new");
	assert_ptr_not_equal(a, b);
	assert_true(has(b, "Authorization: Bearer new"));
	assert_int_equal(auths(b), 1);
	c = sg_targets_get(&ts, url, NULL);
	assert_ptr_not_equal(c, a);
	assert_ptr_not_equal(c, b);
	assert_int_equal(auths(c), 0);
	/* The first is still kept. */
	assert_ptr_equal(sg_targets_get(&ts, url, "old"), a);
	assert_true(has(a, "Authorization: Bearer old"));
	sg_targets_clear(&ts);
}

static void
oldest_is_made_again_past_the_slots(void **state)
{
	struct sg_targets ts = { 0 };
	const struct sg_target *t;
	char url[64];
	int i;

	(void)state;
	for (i = 0; i < SG_TARGETS + 3; i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/responses", 1000 + i);
		t = sg_targets_get(&ts, url, "k");
		assert_non_null(t);
		assert_string_equal(t->url, url);
		assert_true(has(t, "Authorization: Bearer k"));
	}
	/* The newest are there; the first was dropped and is made anew. */
	t = sg_targets_get(&ts, "http://127.0.0.1:1000/v1/responses", "k");
	assert_string_equal(t->url, "http://127.0.0.1:1000/v1/responses");
	sg_targets_clear(&ts);
	sg_targets_clear(&ts);	/* twice is harmless */
}

static void
unparsable_url_is_kept_as_a_string(void **state)
{
	struct sg_targets ts = { 0 };
	const struct sg_target *t;

	(void)state;
	t = sg_targets_get(&ts, "ht tp://no such\x01url/v1/responses", "k");
	assert_non_null(t);
	assert_null(t->u);
	assert_non_null(t->hdrs);
	sg_targets_clear(&ts);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(same_url_and_key_is_kept),
		cmocka_unit_test(another_key_is_another_target),
		cmocka_unit_test(oldest_is_made_again_past_the_slots),
		cmocka_unit_test(unparsable_url_is_kept_as_a_string),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
