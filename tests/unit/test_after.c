/*
 * core/http/after.c: the work a request leaves for after its answer (each
 * job once, in order, with its own copy of its argument; at once when the
 * request has no list), and core/state/sbx_after.c: a sandbox's delete
 * left there runs on its own time, not the request's, and without the
 * request's client or key. The Makefile links this test with ld's
 * --wrap=sg_sbx_delete: every delete reaches __wrap_sg_sbx_delete below,
 * which records what it was called with.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../../core/http/after.h"
#include "../../core/state/sandbox.h"
#include "../../lib/util.h"

/* ---- the facility ---- */

struct seen {
	char	 log[256];
	int	 calls;
};

static struct seen seen;

struct job {
	char		 tag[16];
	struct sg_after	*more;		/* add one more job from this one */
	int		 first;		/* ... with sg_after_first */
};

static void
note(const void *arg)
{
	const struct job *j = arg;
	struct job next = { "", NULL, 0 };

	strncat(seen.log, j->tag, sizeof(seen.log) - strlen(seen.log) - 1);
	strncat(seen.log, ";", sizeof(seen.log) - strlen(seen.log) - 1);
	seen.calls++;
	assert_true(seen.calls < 64);	/* no job runs again and again */
	if (j->more != NULL) {
		snprintf(next.tag, sizeof(next.tag), "%.14s+", j->tag);
		(j->first ? sg_after_first : sg_after_add)(j->more, note,
		    &next, sizeof(next));
	}
}

static int
reset(void **state)
{
	(void)state;
	memset(&seen, 0, sizeof(seen));
	return 0;
}

static void
test_order_and_copies(void **state)
{
	struct sg_after a = SG_AFTER_INIT;
	struct job j = { "", NULL, 0 };
	int i;

	(void)state;
	/* Past the first allocation, and the caller's arg reused each time:
	 * each job keeps what it was given. */
	for (i = 0; i < 9; i++) {
		snprintf(j.tag, sizeof(j.tag), "j%d", i);
		sg_after_add(&a, note, &j, sizeof(j));
	}
	memset(&j, 'x', sizeof(j));
	assert_int_equal(sg_after_pending(&a), 9);
	assert_int_equal(seen.calls, 0);
	sg_after_run(&a);
	assert_string_equal(seen.log, "j0;j1;j2;j3;j4;j5;j6;j7;j8;");
	assert_int_equal(sg_after_pending(&a), 0);
	assert_null(a.jobs);
	/* Run, it is empty: a second run does nothing. */
	sg_after_run(&a);
	assert_int_equal(seen.calls, 9);
}

static void
test_no_list_runs_now(void **state)
{
	struct job j = { "now", NULL, 0 };

	(void)state;
	sg_after_add(NULL, note, &j, sizeof(j));
	assert_string_equal(seen.log, "now;");
	assert_int_equal(sg_after_pending(NULL), 0);
}

static void
test_job_adds_job(void **state)
{
	struct sg_after a = SG_AFTER_INIT;
	struct job j = { "a", &a, 0 };
	int i;

	(void)state;
	/* Four jobs that each add one: the added ones move the array as it
	 * is walked, and still run in the same run. */
	for (i = 0; i < 4; i++) {
		j.tag[0] = (char)('a' + i);
		sg_after_add(&a, note, &j, sizeof(j));
	}
	sg_after_run(&a);
	assert_string_equal(seen.log, "a;b;c;d;a+;b+;c+;d+;");
	assert_int_equal(sg_after_pending(&a), 0);
}

/* A first job runs before those waiting; one a running job adds first
 * runs next, after the one that added it (never again before it), and
 * before the rest; without a list, at once. */
static void
test_first_jumps_the_queue(void **state)
{
	struct sg_after a = SG_AFTER_INIT;
	struct job j = { "", NULL, 0 };

	(void)state;
	sg_after_first(&a, note, &(struct job){ "f0", NULL, 0 }, sizeof(j));
	sg_after_add(&a, note, &(struct job){ "j0", NULL, 0 }, sizeof(j));
	sg_after_add(&a, note, &(struct job){ "j1", &a, 1 }, sizeof(j));
	sg_after_add(&a, note, &(struct job){ "j2", NULL, 0 }, sizeof(j));
	sg_after_first(&a, note, &(struct job){ "f1", NULL, 0 }, sizeof(j));
	assert_int_equal(sg_after_pending(&a), 5);
	assert_int_equal(seen.calls, 0);
	sg_after_run(&a);
	assert_string_equal(seen.log, "f1;f0;j0;j1;j1+;j2;");
	assert_int_equal(sg_after_pending(&a), 0);
	/* A list run is empty, and takes a first job as any other. */
	sg_after_first(&a, note, &(struct job){ "f2", NULL, 0 }, sizeof(j));
	sg_after_run(&a);
	assert_string_equal(seen.log, "f1;f0;j0;j1;j1+;j2;f2;");
	sg_after_first(NULL, note, &(struct job){ "now", NULL, 0 },
	    sizeof(j));
	assert_string_equal(seen.log, "f1;f0;j0;j1;j1+;j2;f2;now;");
}

/* ---- a sandbox's delete, after ---- */

struct del {
	int			 calls;
	char			 tenant[65], id[48];
	const struct sg_cfg_key	*key;
	struct sg_store		*store;
	int64_t			 deadline_ms, at_ms;
	int			 (*stop)(void *);
};

static struct del del;

int	__wrap_sg_sbx_delete(struct sg_sbx_env *, const char *, const char *,
	    struct sg_error *);

int
__wrap_sg_sbx_delete(struct sg_sbx_env *env, const char *tenant,
    const char *id, struct sg_error *err)
{
	del.calls++;
	snprintf(del.tenant, sizeof(del.tenant), "%s", tenant);
	snprintf(del.id, sizeof(del.id), "%s", id);
	del.key = env->key;
	del.store = env->store;
	del.deadline_ms = env->prov->deadline_ms;
	del.stop = env->prov->stop;
	del.at_ms = sg_now_ms();
	return sg_error_set(err, 502, "server_error", NULL, NULL,
	    "the provider failed");
}

static int
client_gone(void *arg)
{
	(void)arg;
	return 1;
}

struct fx {
	struct sg_cfg		 cfg;
	struct sg_prov		 prov;
	struct sg_cfg_key	 key;
	struct sg_sbx_env	 env;
};

static int
fx_up(void **state)
{
	static struct fx fx;

	memset(&fx, 0, sizeof(fx));
	memset(&del, 0, sizeof(del));
	fx.cfg.server.request_timeout = 30;
	/* The request's: nearly out of time, and its client gone. */
	fx.prov.deadline_ms = sg_now_ms() + 5;
	fx.prov.stop = client_gone;
	fx.env = (struct sg_sbx_env){ &fx.cfg, (struct sg_store *)&fx,
	    &fx.prov, &fx.key };
	*state = &fx;
	return 0;
}

static void
test_delete_now_without_list(void **state)
{
	struct fx *fx = *state;

	sg_sbx_delete_after(&fx->env, NULL, "tenant-a", "sbx_1");
	/* As before: at once, with the request's key and time. */
	assert_int_equal(del.calls, 1);
	assert_string_equal(del.id, "sbx_1");
	assert_string_equal(del.tenant, "tenant-a");
	assert_ptr_equal(del.key, &fx->key);
	assert_true(del.stop == client_gone);
}

static void
test_delete_after_the_answer(void **state)
{
	struct fx *fx = *state;
	struct sg_after a = SG_AFTER_INIT;
	char tenant[65] = "tenant-b", id[48] = "sbx_2";
	int64_t before = fx->prov.deadline_ms, t0;

	sg_sbx_delete_after(&fx->env, &a, tenant, id);
	assert_int_equal(del.calls, 0);
	assert_int_equal(sg_after_pending(&a), 1);
	/* The request is gone: its strings and env with it. */
	memset(tenant, 0, sizeof(tenant));
	memset(id, 0, sizeof(id));
	fx->env.key = NULL;
	t0 = sg_now_ms();
	sg_after_run(&a);
	assert_int_equal(del.calls, 1);
	assert_string_equal(del.tenant, "tenant-b");
	assert_string_equal(del.id, "sbx_2");
	assert_ptr_equal(del.store, (struct sg_store *)fx);
	/* No key (a reload may have taken the tool away), no client to
	 * stop it, and a request's time of its own. */
	assert_null(del.key);
	assert_null(del.stop);
	assert_true(del.deadline_ms >= t0 + 30 * 1000);
	assert_true(del.deadline_ms <= del.at_ms + 30 * 1000);
	/* The provider client is the responder's: left as it was found. */
	assert_true(fx->prov.deadline_ms == before);
	assert_true(fx->prov.stop == client_gone);
	assert_int_equal(sg_after_pending(&a), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_order_and_copies, reset),
		cmocka_unit_test_setup(test_no_list_runs_now, reset),
		cmocka_unit_test_setup(test_job_adds_job, reset),
		cmocka_unit_test_setup(test_first_jumps_the_queue, reset),
		cmocka_unit_test_setup(test_delete_now_without_list, fx_up),
		cmocka_unit_test_setup(test_delete_after_the_answer, fx_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
