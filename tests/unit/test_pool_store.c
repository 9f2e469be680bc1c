/*
 * store/pool.c and sg_store_sbx_claim_delete: warm sandboxes claimed by
 * creates, and rows claimed by whoever deletes them. A deleter reads a
 * row, then (after a provider call, maybe) deletes its sandbox: a create
 * that took the row in between must keep its sandbox, and a create after
 * the deleter's claim must not get the one on its way out. Each test
 * interleaves the two by hand, the deleter on a connection of its own,
 * as the reaper is another process.
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
#include <unistd.h>

#include "../../store/store.h"
#include "testutil.h"

#define TENANT	"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define GEN	"0123456789abcdef"
#define H1	"{\"id\":\"warm-one\"}"
#define H2	"{\"id\":\"warm-two\"}"

struct fx {
	struct tu_store_fx	 base;	/* the creates' connection */
	struct sg_store		*reaper;	/* the deleter's */
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	void *base = NULL;
	char err[256];

	if (fx == NULL || tu_store_setup(&base) == -1) {
		free(fx);
		return -1;
	}
	fx->base = *(struct tu_store_fx *)base;
	free(base);
	if (tu_store_open(fx->base.path, &fx->reaper, err, sizeof(err), 0) !=
	    SG_STORE_OK) {
		fprintf(stderr, "second connection: %s\n", err);
		sg_store_close(fx->base.st);
		tu_rmrf(fx->base.dir);
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	sg_store_close(fx->reaper);
	sg_store_close(fx->base.st);
	tu_rmrf(fx->base.dir);
	free(fx);
	return 0;
}

/* A warm sandbox of tool "py" made by the reaper, its handle h. */
static void
warm(struct fx *fx, const char *id, const char *h)
{
	int64_t life = (int64_t)time(NULL) + 600;

	assert_int_equal(sg_store_pool_begin(fx->reaper, id, "py", GEN, 1, 2,
	    life), SG_STORE_OK);
	assert_int_equal(sg_store_pool_ready(fx->reaper, id, h, life),
	    SG_STORE_OK);
}

/* A create's row, recorded, then its claim on the pool: its rc. */
static int
take(struct fx *fx, const char *id)
{
	assert_int_equal(sg_store_sbx_begin(fx->base.st, id, TENANT, "py", 3,
	    4, (int64_t)time(NULL) + 60), SG_STORE_OK);
	return sg_store_pool_take(fx->base.st, id, "py", GEN);
}

/* Row id as one connection reads it (clear it after). */
static void
read_row(struct sg_store *st, const char *id, struct sg_store_sbx *row)
{
	int rc = sg_store_sbx_get(st, id, NULL, row);

	if (rc != SG_STORE_OK)
		fail_msg("get %s: %d %s", id, rc, sg_store_errmsg(st));
}

static int
pool_count(struct fx *fx)
{
	int n = -1;

	assert_int_equal(sg_store_pool_count(fx->base.st, "py", GEN, &n),
	    SG_STORE_OK);
	return n;
}

/* The deleter read the warm row, a create took it, then the deleter
 * claims it: refused, and the create's row keeps the sandbox. */
static void
taken_then_claimed(void **state)
{
	struct fx *fx = *state;
	struct sg_store_sbx seen, row;

	warm(fx, "cntr_w1", H1);
	read_row(fx->reaper, "cntr_w1", &seen);
	assert_string_equal(seen.state, "warm");
	assert_int_equal(take(fx, "cntr_c1"), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_claim_delete(fx->reaper, &seen),
	    SG_STORE_NOTFOUND);
	sg_store_sbx_clear(&seen);
	read_row(fx->base.st, "cntr_c1", &row);
	assert_string_equal(row.state, "ready");
	assert_string_equal(row.handle, H1);
	sg_store_sbx_clear(&row);
	assert_int_equal(sg_store_sbx_get(fx->base.st, "cntr_w1", NULL, &row),
	    SG_STORE_NOTFOUND);
}

/* The deleter claimed the oldest warm row: a create gets the next one,
 * and once none is left, none; the claimed row stays for its delete. */
static void
claimed_then_taken(void **state)
{
	struct fx *fx = *state;
	struct sg_store_sbx seen, row;

	warm(fx, "cntr_w1", H1);
	warm(fx, "cntr_w2", H2);
	tu_raw_sql(fx->base.path, "UPDATE sandboxes SET created_at = "
	    "created_at - 10 WHERE id = 'cntr_w1'", NULL, 0);
	read_row(fx->reaper, "cntr_w1", &seen);
	assert_int_equal(sg_store_sbx_claim_delete(fx->reaper, &seen),
	    SG_STORE_OK);
	sg_store_sbx_clear(&seen);
	assert_int_equal(pool_count(fx), 1);
	assert_int_equal(take(fx, "cntr_c1"), SG_STORE_OK);
	read_row(fx->base.st, "cntr_c1", &row);
	assert_string_equal(row.handle, H2);
	sg_store_sbx_clear(&row);
	assert_int_equal(take(fx, "cntr_c2"), SG_STORE_NOTFOUND);
	read_row(fx->base.st, "cntr_c2", &row);
	assert_string_equal(row.state, "creating");	/* a cold create's */
	assert_null(row.handle);
	sg_store_sbx_clear(&row);
	read_row(fx->base.st, "cntr_w1", &row);
	assert_string_equal(row.state, "deleting");
	assert_string_equal(row.handle, H1);		/* for its delete */
	sg_store_sbx_clear(&row);
	assert_int_equal(pool_count(fx), 0);
}

/* A claim holds only on the row as it was read: a run begun, a state
 * changed or a row removed since refuse it; a delete that failed is
 * claimed again; a row still "creating" stays so (its handle is looked
 * for by its label). */
static void
claim_only_as_read(void **state)
{
	struct fx *fx = *state;
	struct sg_store_sbx seen, row;
	int64_t now = (int64_t)time(NULL);

	assert_int_equal(sg_store_sbx_begin(fx->base.st, "cntr_r", TENANT, "py",
	    3, 4, now + 60), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_ready(fx->base.st, "cntr_r", H1, now + 60),
	    SG_STORE_OK);
	read_row(fx->reaper, "cntr_r", &seen);
	assert_int_equal(sg_store_sbx_run_begin(fx->base.st, "cntr_r", 3, 4,
	    now + 30), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_claim_delete(fx->reaper, &seen),
	    SG_STORE_NOTFOUND);
	sg_store_sbx_clear(&seen);
	read_row(fx->base.st, "cntr_r", &row);
	assert_string_equal(row.state, "ready");
	sg_store_sbx_clear(&row);

	assert_int_equal(sg_store_sbx_run_end(fx->base.st, "cntr_r", 3),
	    SG_STORE_OK);
	read_row(fx->reaper, "cntr_r", &seen);
	assert_int_equal(sg_store_sbx_claim_delete(fx->reaper, &seen),
	    SG_STORE_OK);
	sg_store_sbx_clear(&seen);
	read_row(fx->reaper, "cntr_r", &seen);
	assert_string_equal(seen.state, "deleting");
	assert_int_equal(sg_store_sbx_claim_delete(fx->reaper, &seen),
	    SG_STORE_OK);
	sg_store_sbx_clear(&seen);

	assert_int_equal(sg_store_sbx_mark(fx->base.st, "cntr_r", "ready"),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_remove(fx->base.st, "cntr_r"),
	    SG_STORE_OK);
	memset(&seen, 0, sizeof(seen));
	snprintf(seen.id, sizeof(seen.id), "cntr_r");
	snprintf(seen.state, sizeof(seen.state), "ready");
	assert_int_equal(sg_store_sbx_claim_delete(fx->reaper, &seen),
	    SG_STORE_NOTFOUND);

	assert_int_equal(sg_store_sbx_begin(fx->base.st, "cntr_new", TENANT,
	    "py", 3, 4, now + 60), SG_STORE_OK);
	read_row(fx->reaper, "cntr_new", &seen);
	assert_int_equal(sg_store_sbx_claim_delete(fx->reaper, &seen),
	    SG_STORE_OK);
	sg_store_sbx_clear(&seen);
	read_row(fx->reaper, "cntr_new", &row);
	assert_string_equal(row.state, "creating");
	sg_store_sbx_clear(&row);
}

/* A warm one read while it was being made has a handle by the time its
 * deleter claims it: refused (that reading would have lost the sandbox,
 * the row removed as one never made). */
static void
made_since_read(void **state)
{
	struct fx *fx = *state;
	struct sg_store_sbx seen, row;
	int64_t life = (int64_t)time(NULL) + 600;

	assert_int_equal(sg_store_pool_begin(fx->base.st, "cntr_w1", "py", GEN,
	    1, 2, life), SG_STORE_OK);
	read_row(fx->reaper, "cntr_w1", &seen);
	assert_null(seen.handle);
	assert_int_equal(sg_store_pool_ready(fx->base.st, "cntr_w1", H1, life),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_claim_delete(fx->reaper, &seen),
	    SG_STORE_NOTFOUND);
	read_row(fx->base.st, "cntr_w1", &row);
	assert_string_equal(row.state, "warm");
	sg_store_sbx_clear(&row);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(taken_then_claimed),
		T(claimed_then_taken),
		T(claim_only_as_read),
		T(made_since_read),
	};

	TU_STORE_MAIN(tests);
}
