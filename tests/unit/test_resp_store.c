/*
 * store/responses: a response kept with its items, found again by the
 * key that made it and by no other, its items by their ids (the newest,
 * the tenant's own first), deleted with its items, pruned by age.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "../../store/store.h"
#include "testutil.h"

#define A "aaaa"
#define B "bbbb"

static int
save(struct sg_store *st, const char *id, const char *tenant,
    const char *prev, const char *ci)
{
	struct sg_store_item in[] = {
		{ "msg_in", "{\"role\":\"user\"}", "[{\"role\":\"user\"}]" },
	};
	struct sg_store_item out[] = {
		{ ci, "{\"type\":\"code_interpreter_call\"}",
		    "[{\"type\":\"function_call\"},{\"type\":"
		    "\"function_call_output\"}]" },
		{ NULL, "{\"type\":\"message\"}", "[{\"type\":\"message\"}]" },
	};
	struct sg_store_resp r = { .id = id, .tenant = tenant, .model = "m",
	    .upstream_id = "resp_up", .prev = prev, .body = "{\"id\":1}",
	    .pending = "[]" };

	return sg_store_resp_save(st, &r, in, 1, out, 2);
}

struct seen {
	char	 text[512];
	int	 n;
};

static int
note(void *arg, const struct sg_store_item *it)
{
	struct seen *s = arg;
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%s%s=%s", s->n++ ? ";" :
	    "", it->id != NULL ? it->id : "-", it->upstream);
	return 0;
}

static void
test_save_load_items(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_resp_row row;
	struct seen s = { "", 0 };
	char up[64], sbx[64];

	assert_int_equal(save(fx->st, "resp_1", A, NULL, "ci_1"), SG_STORE_OK);
	assert_int_equal(sg_store_resp_load(fx->st, "resp_1", A, &row),
	    SG_STORE_OK);
	assert_string_equal(row.upstream_id, "resp_up");
	assert_string_equal(row.body, "{\"id\":1}");
	assert_string_equal(row.pending, "[]");
	assert_null(row.prev);
	assert_null(row.sandbox_id);
	sg_store_resp_clear(&row);
	assert_int_equal(sg_store_resp_get(fx->st, "resp_1", A, up, sizeof(up),
	    sbx, sizeof(sbx)), SG_STORE_OK);
	assert_string_equal(up, "resp_up");
	assert_string_equal(sbx, "");
	/* Another key's is not there. */
	assert_int_equal(sg_store_resp_load(fx->st, "resp_1", B, &row),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_resp_items(fx->st, "resp_1", 1, note, &s),
	    SG_STORE_OK);
	assert_string_equal(s.text, "ci_1=[{\"type\":\"function_call\"},"
	    "{\"type\":\"function_call_output\"}];-=[{\"type\":\"message\"}]");
	memset(&s, 0, sizeof(s));
	assert_int_equal(sg_store_resp_items(fx->st, "resp_1", 0, note, &s),
	    SG_STORE_OK);
	assert_string_equal(s.text, "msg_in=[{\"role\":\"user\"}]");
}

static void
test_item_find(void **state)
{
	struct tu_store_fx *fx = *state;
	char *item, *up;

	assert_int_equal(save(fx->st, "resp_1", A, NULL, "ci_a"), SG_STORE_OK);
	assert_int_equal(save(fx->st, "resp_2", B, NULL, "ci_b"), SG_STORE_OK);
	assert_int_equal(sg_store_item_find(fx->st, "ci_a", A, &item, &up),
	    SG_STORE_OK);
	assert_string_equal(item, "{\"type\":\"code_interpreter_call\"}");
	assert_string_equal(up, "[{\"type\":\"function_call\"},{\"type\":"
	    "\"function_call_output\"}]");
	free(item);
	free(up);
	assert_int_equal(sg_store_item_find(fx->st, "ci_a", B, &item, &up),
	    SG_STORE_THEIRS);
	assert_null(item);
	assert_int_equal(sg_store_item_find(fx->st, "ci_none", A, &item, &up),
	    SG_STORE_NOTFOUND);
	/* The same id on both keys: each finds its own. */
	assert_int_equal(save(fx->st, "resp_3", B, NULL, "ci_a"), SG_STORE_OK);
	assert_int_equal(sg_store_item_find(fx->st, "ci_a", A, &item, &up),
	    SG_STORE_OK);
	free(item);
	free(up);
	assert_int_equal(sg_store_item_find(fx->st, "ci_a", B, &item, &up),
	    SG_STORE_OK);
	free(item);
	free(up);
}

static void
test_delete_and_prune(void **state)
{
	struct tu_store_fx *fx = *state;
	char *item, *up;
	int removed;

	assert_int_equal(save(fx->st, "resp_1", A, NULL, "ci_a"), SG_STORE_OK);
	assert_int_equal(save(fx->st, "resp_2", A, "resp_1", "ci_b"),
	    SG_STORE_OK);
	assert_int_equal(sg_store_resp_delete(fx->st, "resp_1", B),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_resp_delete(fx->st, "resp_1", A), SG_STORE_OK);
	assert_int_equal(sg_store_resp_delete(fx->st, "resp_1", A),
	    SG_STORE_NOTFOUND);
	/* Its items went with it. */
	assert_int_equal(sg_store_item_find(fx->st, "ci_a", A, &item, &up),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_resp_prune(fx->st, (int64_t)time(NULL) - 60,
	    10, &removed), SG_STORE_OK);
	assert_int_equal(removed, 0);
	assert_int_equal(sg_store_resp_prune(fx->st, (int64_t)time(NULL) + 60,
	    10, &removed), SG_STORE_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(sg_store_item_find(fx->st, "ci_b", A, &item, &up),
	    SG_STORE_NOTFOUND);
}

static void
test_duplicate_id_refused(void **state)
{
	struct tu_store_fx *fx = *state;
	char *item, *up;

	assert_int_equal(save(fx->st, "resp_1", A, NULL, "ci_a"), SG_STORE_OK);
	/* The second save fails whole: no item of it is left behind. */
	assert_int_not_equal(save(fx->st, "resp_1", A, NULL, "ci_z"),
	    SG_STORE_OK);
	assert_int_equal(sg_store_item_find(fx->st, "ci_z", A, &item, &up),
	    SG_STORE_NOTFOUND);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)
	const struct CMUnitTest tests[] = {
		T(test_save_load_items),
		T(test_item_find),
		T(test_delete_and_prune),
		T(test_duplicate_id_refused),
	};

	TU_STORE_MAIN(tests);
}
