/*
 * core/render/cite: a link to a container file (sandbox:/mnt/data/...) in the
 * model's text gets a container_file_citation covering exactly the URL,
 * its indexes in code points (not bytes); the newest copy of the path in
 * this container of this key is named; a link to no file, another
 * container's or another key's, is left alone; a sentence's final
 * punctuation is not part of the link; percent-encoded names are found;
 * the store's paths and file rows are real (SQLite).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../../core/render/cite.h"
#include "testutil.h"

#define A	"aaaa"
#define C	"cntr_1"

static void
put(struct sg_store *st, const char *id, const char *tenant,
    const char *container, const char *path, int64_t created)
{
	struct sg_store_file f;

	memset(&f, 0, sizeof(f));
	snprintf(f.id, sizeof(f.id), "%s", id);
	snprintf(f.tenant, sizeof(f.tenant), "%s", tenant);
	snprintf(f.container_id, sizeof(f.container_id), "%s", container);
	snprintf(f.path, sizeof(f.path), "%s", path);
	snprintf(f.filename, sizeof(f.filename), "%s", strrchr(path, '/') + 1);
	snprintf(f.source, sizeof(f.source), "assistant");
	f.bytes = 1;
	f.created_at = created;
	f.expires_at = created + 1000;
	assert_int_equal(sg_store_file_begin(st, &f,
	    &(struct sg_store_quota){ 1 << 20, 100, 0, 0 }), SG_STORE_OK);
	assert_int_equal(sg_store_file_ready(st, &f), SG_STORE_OK);
}

static void
files(struct sg_store *st)
{
	put(st, "cfile_old", A, C, "/mnt/data/out.csv", 10);
	put(st, "cfile_out", A, C, "/mnt/data/out.csv", 20);
	put(st, "cfile_png", A, C, "/mnt/data/sub/plot.png", 20);
	put(st, "cfile_sp", A, C, "/mnt/data/my file.txt", 20);
	put(st, "cfile_dot", A, C, "/mnt/data/v1.", 20);
	put(st, "cfile_other", A, "cntr_2", "/mnt/data/x.csv", 20);
	put(st, "cfile_bob", "bbbb", C, "/mnt/data/b.csv", 20);
}

/* The annotation i of text: its file, and its indexes. */
static void
cited(json_t *anns, size_t i, const char *file, const char *name,
    long long start, long long end)
{
	json_t *a = json_array_get(anns, i);

	assert_non_null(a);
	assert_string_equal(json_string_value(json_object_get(a, "type")),
	    "container_file_citation");
	assert_string_equal(json_string_value(json_object_get(a,
	    "container_id")), C);
	assert_string_equal(json_string_value(json_object_get(a, "file_id")),
	    file);
	assert_string_equal(json_string_value(json_object_get(a, "filename")),
	    name);
	assert_int_equal(json_integer_value(json_object_get(a, "start_index")),
	    start);
	assert_int_equal(json_integer_value(json_object_get(a, "end_index")),
	    end);
}

static json_t *
cite(struct sg_store *st, const char *container, const char *text)
{
	struct sg_cite c = { st, A, container, NULL };

	return sg_cite_text(&c, text, strlen(text));
}

static void
indexes_are_code_points(void **state)
{
	struct tu_store_fx *fx = *state;
	/* "é" is 2 bytes, "’" 3, the emoji 4: one code point each. */
	const char *text = "Caf\xc3\xa9 \xe2\x80\x99 \xf0\x9f\x98\x80 "
	    "[t](sandbox:/mnt/data/out.csv) and "
	    "![p](sandbox:/mnt/data/sub/plot.png).";
	json_t *anns;

	files(fx->st);
	anns = cite(fx->st, C, text);
	assert_int_equal(json_array_size(anns), 2);
	/* "Café ’ 😀 [t](" is 13 code points (18 bytes): the URL starts
	 * there; ") and ![p](" is 11 more. */
	cited(anns, 0, "cfile_out", "out.csv", 13, 13 + 25);
	cited(anns, 1, "cfile_png", "plot.png", 13 + 25 + 11, 13 + 25 + 11 +
	    30);
	json_decref(anns);
}

static void
bare_links_and_punctuation(void **state)
{
	struct tu_store_fx *fx = *state;
	json_t *anns;

	files(fx->st);
	/* The sentence's period is not the file's; v1. keeps its own. */
	anns = cite(fx->st, C, "See sandbox:/mnt/data/out.csv. Also "
	    "sandbox:/mnt/data/v1.");
	assert_int_equal(json_array_size(anns), 2);
	cited(anns, 0, "cfile_out", "out.csv", 4, 29);
	cited(anns, 1, "cfile_dot", "v1.", 36, 57);
	json_decref(anns);
	/* Percent-encoded: the file with a space. */
	anns = cite(fx->st, C, "[f](sandbox:/mnt/data/my%20file.txt)");
	assert_int_equal(json_array_size(anns), 1);
	cited(anns, 0, "cfile_sp", "my file.txt", 4, 35);
	json_decref(anns);
}

static void
only_this_containers_files(void **state)
{
	struct tu_store_fx *fx = *state;
	json_t *anns;

	files(fx->st);
	/* No such file, another container's, another key's, a bad escape,
	 * an encoded NUL, a bare prefix, no container at all. */
	anns = cite(fx->st, C, "sandbox:/mnt/data/none.csv "
	    "sandbox:/mnt/data/x.csv sandbox:/mnt/data/b.csv "
	    "sandbox:/mnt/data/out%2.csv sandbox:/mnt/data/out.csv%00 "
	    "sandbox:/mnt/data/ sandbox:/mnt/data");
	assert_int_equal(json_array_size(anns), 0);
	json_decref(anns);
	anns = cite(fx->st, "", "sandbox:/mnt/data/out.csv");
	assert_int_equal(json_array_size(anns), 0);
	json_decref(anns);
	anns = cite(fx->st, NULL, "sandbox:/mnt/data/out.csv");
	assert_int_equal(json_array_size(anns), 0);
	json_decref(anns);
}

/* A request that bound no sandbox cites its session's (the fallback);
 * the bound one wins when there is one. */
static void
fallback_when_none_bound(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_cite c = { fx->st, A, "", C };
	json_t *anns;

	files(fx->st);
	anns = sg_cite_text(&c, "sandbox:/mnt/data/out.csv", 25);
	assert_int_equal(json_array_size(anns), 1);
	cited(anns, 0, "cfile_out", "out.csv", 0, 25);
	json_decref(anns);
	c.container = "cntr_2";
	anns = sg_cite_text(&c, "sandbox:/mnt/data/out.csv", 25);
	assert_int_equal(json_array_size(anns), 0);
	json_decref(anns);
	c.container = NULL;
	c.fallback = "";
	anns = sg_cite_text(&c, "sandbox:/mnt/data/out.csv", 25);
	assert_int_equal(json_array_size(anns), 0);
	json_decref(anns);
}

static void
messages_keep_their_own_annotations(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_cite c = { fx->st, A, C, NULL };
	json_t *out, *anns;

	files(fx->st);
	out = json_loads("[{\"type\":\"reasoning\",\"summary\":[]},"
	    "{\"type\":\"message\",\"content\":["
	    "{\"type\":\"output_text\",\"text\":\"sandbox:/mnt/data/out.csv\","
	    "\"annotations\":[{\"type\":\"url_citation\"}]},"
	    "{\"type\":\"refusal\",\"refusal\":\"sandbox:/mnt/data/out.csv\"},"
	    "{\"type\":\"output_text\",\"text\":\"(sandbox:/mnt/data/out.csv)\"}"
	    "]}]", 0, NULL);
	assert_non_null(out);
	sg_cite_output(&c, out);
	anns = json_object_get(json_array_get(json_object_get(json_array_get(
	    out, 1), "content"), 0), "annotations");
	assert_int_equal(json_array_size(anns), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    anns, 0), "type")), "url_citation");
	cited(anns, 1, "cfile_out", "out.csv", 0, 25);
	assert_null(json_object_get(json_array_get(json_object_get(
	    json_array_get(out, 1), "content"), 1), "annotations"));
	anns = json_object_get(json_array_get(json_object_get(json_array_get(
	    out, 1), "content"), 2), "annotations");
	cited(anns, 0, "cfile_out", "out.csv", 1, 26);
	assert_null(json_object_get(json_array_get(out, 0), "content"));
	json_decref(out);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)
	const struct CMUnitTest tests[] = {
		T(indexes_are_code_points),
		T(bare_links_and_punctuation),
		T(only_this_containers_files),
		T(messages_keep_their_own_annotations),
		T(fallback_when_none_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
