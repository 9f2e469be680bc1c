/*
 * store/session and the kept half of store/sandbox: claiming a session
 * (one sandbox however many race for it, across processes), a session
 * that lost its sandbox, the per-key limit with its least-recently-used
 * eviction (never a running sandbox), one run at a time, the lease.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "../../store/store.h"
#include "testutil.h"

#define A "aaaa"
#define B "bbbb"

/* Claim tenant's session for new_id; returns the id got. */
static const char *
claim(struct tu_store_fx *fx, const char *tenant, const char *session,
    const char *new_id, int *created, int *lost)
{
	static char sbx[48];
	char victim[48];

	assert_int_equal(sg_store_sess_claim(fx->st, tenant, session, new_id,
	    "local", getpid(), 1, time(NULL) + 600, 10, sbx, victim, created,
	    lost), SG_STORE_OK);
	assert_string_equal(victim, "");
	return sbx;
}

static void
ready(struct tu_store_fx *fx, const char *id)
{
	assert_int_equal(sg_store_sbx_ready(fx->st, id, "{}", time(NULL) + 600),
	    SG_STORE_OK);
}

/* Set a row's last use, as time passing would. */
static void
used_at(struct tu_store_fx *fx, const char *id, int64_t t)
{
	char sql[160];

	snprintf(sql, sizeof(sql), "UPDATE sandboxes SET last_used_at = %lld "
	    "WHERE id = '%s'", (long long)t, id);
	assert_int_equal(tu_raw_sql(fx->path, sql, NULL, 0), 0);
}

static void
session_claimed_once_per_tenant(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	int created, lost;

	assert_string_equal(claim(fx, A, "s1", "cntr_a1", &created, &lost),
	    "cntr_a1");
	assert_true(created);
	assert_false(lost);
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_a1", A, &row),
	    SG_STORE_OK);
	assert_int_equal(row.kind, SG_SBX_SESSION);
	assert_string_equal(row.state, "creating");
	sg_store_sbx_clear(&row);
	/* Again, even while it is being created: the same sandbox. */
	assert_string_equal(claim(fx, A, "s1", "cntr_a2", &created, &lost),
	    "cntr_a1");
	assert_false(created);
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_a2", NULL, &row),
	    SG_STORE_NOTFOUND);
	/* Another key's session of the same name is another sandbox. */
	assert_string_equal(claim(fx, B, "s1", "cntr_b1", &created, &lost),
	    "cntr_b1");
	assert_true(created);
}

static void
session_knows_its_sandbox_was_lost(void **state)
{
	struct tu_store_fx *fx = *state;
	int created, lost;

	claim(fx, A, "s1", "cntr_a1", &created, &lost);
	ready(fx, "cntr_a1");
	/* The sandbox went (deleted, expired): the session stays. */
	assert_int_equal(sg_store_sbx_remove(fx->st, "cntr_a1"), SG_STORE_OK);
	assert_string_equal(claim(fx, A, "s1", "cntr_a2", &created, &lost),
	    "cntr_a2");
	assert_true(created);
	assert_true(lost);
	/* A dead creator's sandbox is detached: the next claim takes over. */
	assert_int_equal(sg_store_sess_detach(fx->st, A, "s1", "cntr_a2"),
	    SG_STORE_OK);
	assert_string_equal(claim(fx, A, "s1", "cntr_a3", &created, &lost),
	    "cntr_a3");
	assert_true(created);
	/* A session with no sandbox for long is pruned, one with is not. */
	assert_int_equal(sg_store_sbx_remove(fx->st, "cntr_a3"), SG_STORE_OK);
	claim(fx, B, "s2", "cntr_b2", &created, &lost);
	assert_int_equal(sg_store_sess_prune(fx->st, time(NULL) + 1, &created),
	    SG_STORE_OK);
	assert_int_equal(created, 1);
}

struct listing {
	int	 n;
	char	 last[SG_STORE_SESSION_MAX + 1];
	char	 sandbox[48], tool[64];
};

static int
one(void *arg, const struct sg_store_sess *s)
{
	struct listing *l = arg;

	l->n++;
	snprintf(l->last, sizeof(l->last), "%s", s->session_id);
	snprintf(l->sandbox, sizeof(l->sandbox), "%s", s->sandbox_id);
	snprintf(l->tool, sizeof(l->tool), "%s", s->tool);
	return 0;
}

static void
sessions_listed_per_tenant(void **state)
{
	struct tu_store_fx *fx = *state;
	struct listing l;
	int created, lost;
	char longid[SG_STORE_SESSION_MAX + 2], sbx[48], victim[48];

	claim(fx, A, "s1", "cntr_a1", &created, &lost);
	claim(fx, A, "s2", "cntr_a2", &created, &lost);
	claim(fx, B, "s1", "cntr_b1", &created, &lost);
	memset(&l, 0, sizeof(l));
	assert_int_equal(sg_store_sess_list(fx->st, A, one, &l), SG_STORE_OK);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.last, "s2");
	assert_string_equal(l.sandbox, "cntr_a2");
	assert_string_equal(l.tool, "local");
	memset(&l, 0, sizeof(l));
	assert_int_equal(sg_store_sess_list(fx->st, NULL, one, &l), SG_STORE_OK);
	assert_int_equal(l.n, 3);
	assert_int_equal(sg_store_sess_remove(fx->st, A, "s1"), SG_STORE_OK);
	memset(&l, 0, sizeof(l));
	sg_store_sess_list(fx->st, A, one, &l);
	assert_int_equal(l.n, 1);
	/* A session id longer than the store keeps is refused. */
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	assert_int_equal(sg_store_sess_claim(fx->st, A, longid, "cntr_x",
	    "local", 1, 1, 1, 10, sbx, victim, &created, &lost),
	    SG_STORE_ERROR);
}

/* Begin a kept (explicit) row made ready, used at t. */
static int
kept(struct tu_store_fx *fx, const char *id, int64_t t, int max, char victim[48])
{
	int rc = sg_store_sbx_begin_kind(fx->st, id, A, "local",
	    SG_SBX_EXPLICIT, 1, 1, time(NULL) + 600, max, victim);

	if (rc == SG_STORE_OK) {
		ready(fx, id);
		used_at(fx, id, t);
	}
	return rc;
}

static void
limit_evicts_the_least_recently_used_idle_one(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	char victim[48];
	int64_t now = time(NULL);

	assert_int_equal(kept(fx, "cntr_1", now - 30, 3, victim), SG_STORE_OK);
	assert_int_equal(kept(fx, "cntr_2", now - 50, 3, victim), SG_STORE_OK);
	assert_int_equal(kept(fx, "cntr_3", now - 10, 3, victim), SG_STORE_OK);
	assert_string_equal(victim, "");
	/* Ephemeral sandboxes do not count, and never go. */
	assert_int_equal(sg_store_sbx_begin(fx->st, "cntr_e", A, "local", 1, 1,
	    now + 600), SG_STORE_OK);
	/* The fourth: the least recently used goes (cntr_2)... */
	assert_int_equal(kept(fx, "cntr_4", now, 3, victim), SG_STORE_OK);
	assert_string_equal(victim, "cntr_2");
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_2", A, &row),
	    SG_STORE_OK);
	assert_string_equal(row.state, "deleting");
	sg_store_sbx_clear(&row);
	assert_int_equal(sg_store_sbx_remove(fx->st, "cntr_2"), SG_STORE_OK);
	/* ...unless it runs code: then the next one. */
	assert_int_equal(sg_store_sbx_run_begin(fx->st, "cntr_1", 77, 1, now + 60),
	    SG_STORE_OK);
	assert_int_equal(kept(fx, "cntr_5", now, 3, victim), SG_STORE_OK);
	assert_string_equal(victim, "cntr_3");
	sg_store_sbx_remove(fx->st, "cntr_3");
	/* Everything running: full, and nothing recorded. */
	assert_int_equal(sg_store_sbx_run_begin(fx->st, "cntr_4", 77, 1, now + 60),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_run_begin(fx->st, "cntr_5", 77, 1, now + 60),
	    SG_STORE_OK);
	assert_int_equal(kept(fx, "cntr_6", now, 3, victim), SG_STORE_FULL);
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_6", A, &row),
	    SG_STORE_NOTFOUND);
	/* Another tenant is not limited by A's. */
	assert_int_equal(sg_store_sbx_begin_kind(fx->st, "cntr_b", B, "local",
	    SG_SBX_SESSION, 1, 1, now + 600, 3, victim), SG_STORE_OK);
	assert_string_equal(victim, "");
}

static void
one_run_at_a_time(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_sbx row;
	char victim[48];
	int64_t now = time(NULL);

	assert_int_equal(kept(fx, "cntr_1", now, 3, victim), SG_STORE_OK);
	assert_int_equal(sg_store_sbx_run_begin(fx->st, "cntr_1", 11, 1, now + 60),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_run_begin(fx->st, "cntr_1", 22, 1, now + 60),
	    SG_STORE_EXISTS);
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_1", A, &row),
	    SG_STORE_OK);
	assert_int_equal(row.runner_pid, 11);
	sg_store_sbx_clear(&row);
	/* Only its runner ends a run. */
	assert_int_equal(sg_store_sbx_run_end(fx->st, "cntr_1", 22),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_run_begin(fx->st, "cntr_1", 22, 1, now + 60),
	    SG_STORE_EXISTS);
	assert_int_equal(sg_store_sbx_run_end(fx->st, "cntr_1", 11),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_run_begin(fx->st, "cntr_1", 22, 1, now + 60),
	    SG_STORE_OK);
	/* A run past its deadline (its responder died) is taken over. */
	assert_int_equal(sg_store_sbx_run_end(fx->st, "cntr_1", 22),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_run_begin(fx->st, "cntr_1", 33, 1, now - 1),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_run_begin(fx->st, "cntr_1", 44, 1, now + 60),
	    SG_STORE_OK);
}

static void
lease_held_by_one(void **state)
{
	struct tu_store_fx *fx = *state;

	assert_int_equal(sg_store_lease(fx->st, "reaper", "h1", 60),
	    SG_STORE_OK);
	assert_int_equal(sg_store_lease(fx->st, "reaper", "h2", 60),
	    SG_STORE_EXISTS);
	/* Its holder extends it. */
	assert_int_equal(sg_store_lease(fx->st, "reaper", "h1", 60),
	    SG_STORE_OK);
	assert_int_equal(sg_store_lease(fx->st, "other", "h2", 60),
	    SG_STORE_OK);
	/* Released, or expired, another takes it. */
	assert_int_equal(sg_store_lease_release(fx->st, "reaper", "h1"),
	    SG_STORE_OK);
	assert_int_equal(sg_store_lease(fx->st, "reaper", "h2", 60),
	    SG_STORE_OK);
	assert_int_equal(tu_raw_sql(fx->path, "UPDATE leases SET until = 1",
	    NULL, 0), 0);
	assert_int_equal(sg_store_lease(fx->st, "reaper", "h3", 60),
	    SG_STORE_OK);
}

static int
count_one(void *arg, const char *tool, int kind, int64_t n)
{
	int64_t *counts = arg;

	if (strcmp(tool, "local") == 0 && kind >= 0 && kind < 4)
		counts[kind] += n;
	return 0;
}

static void
counts_per_tool_and_kind(void **state)
{
	struct tu_store_fx *fx = *state;
	int64_t counts[4] = { 0, 0, 0, 0 };
	char victim[48];
	int created, lost;

	claim(fx, A, "s1", "cntr_s1", &created, &lost);
	claim(fx, A, "s2", "cntr_s2", &created, &lost);
	kept(fx, "cntr_x", time(NULL), 10, victim);
	sg_store_sbx_begin(fx->st, "cntr_e", A, "local", 1, 1, time(NULL));
	assert_int_equal(sg_store_sbx_counts(fx->st, count_one, counts),
	    SG_STORE_OK);
	assert_int_equal(counts[SG_SBX_EPHEMERAL], 1);
	assert_int_equal(counts[SG_SBX_SESSION], 2);
	assert_int_equal(counts[SG_SBX_EXPLICIT], 1);
}

/* Children claim one new session at once, each through its own
 * connection: exactly one records a sandbox; all get the same id. Then
 * they race kept sandboxes past the limit: it holds. */
static void
racing_processes_on_one_store_file(void **state)
{
	struct tu_store_fx *fx = *state;
	struct listing l;
	int64_t counts[4] = { 0, 0, 0, 0 };
	int i, status, created_total = 0, pipefd[2], made = 0;
	char line[64];

	assert_int_equal(pipe(pipefd), 0);
	for (i = 0; i < 8; i++) {
		if (fork() == 0) {
			struct sg_store *st;
			char err[256], id[48], sbx[48], victim[48];
			int created, lost, rc;

			close(pipefd[0]);
			if (tu_store_open(fx->path, &st, err, sizeof(err), 0) != 0)
				_exit(2);
			snprintf(id, sizeof(id), "cntr_c%d", i);
			rc = sg_store_sess_claim(st, A, "shared", id, "local",
			    getpid(), 1, time(NULL) + 600, 100, sbx, victim,
			    &created, &lost);
			snprintf(line, sizeof(line), "%d %s\n", created, sbx);
			if (rc != SG_STORE_OK || write(pipefd[1], line,
			    strlen(line)) < 0)
				_exit(3);
			/* Kept sandboxes of B, limit 3: each evicts an idle
			 * one, or, when the others are all still being made
			 * (slow children, valgrind), is refused: FULL, exit 5. */
			snprintf(id, sizeof(id), "cntr_k%d", i);
			rc = sg_store_sbx_begin_kind(st, id, B, "local",
			    SG_SBX_EXPLICIT, 1, 1, time(NULL) + 600, 3, victim);
			if (rc == SG_STORE_OK)
				sg_store_sbx_ready(st, id, "{}", time(NULL) + 600);
			if (rc == SG_STORE_OK && victim[0] != '\0')
				sg_store_sbx_remove(st, victim);
			sg_store_close(st);
			_exit(rc == SG_STORE_OK ? 0 : rc == SG_STORE_FULL ? 5 : 4);
		}
	}
	close(pipefd[1]);
	for (i = 0; i < 8; i++) {
		assert_true(wait(&status) > 0);
		assert_true(WIFEXITED(status));
		assert_true(WEXITSTATUS(status) == 0 ||
		    WEXITSTATUS(status) == 5);
		made += WEXITSTATUS(status) == 0;
	}
	assert_true(made >= 3);
	{
		FILE *f = fdopen(pipefd[0], "r");
		char first[48] = "", id[48];
		int created;

		while (fgets(line, sizeof(line), f) != NULL) {
			assert_int_equal(sscanf(line, "%d %47s", &created, id), 2);
			created_total += created;
			if (first[0] == '\0')
				snprintf(first, sizeof(first), "%s", id);
			assert_string_equal(id, first);
		}
		fclose(f);
	}
	assert_int_equal(created_total, 1);
	memset(&l, 0, sizeof(l));
	sg_store_sess_list(fx->st, A, one, &l);
	assert_int_equal(l.n, 1);
	assert_int_equal(sg_store_sbx_counts(fx->st, count_one, counts),
	    SG_STORE_OK);
	/* B's kept sandboxes: at most the limit are left. */
	assert_true(counts[SG_SBX_EXPLICIT] <= 3);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(session_claimed_once_per_tenant),
		T(session_knows_its_sandbox_was_lost),
		T(sessions_listed_per_tenant),
		T(limit_evicts_the_least_recently_used_idle_one),
		T(one_run_at_a_time),
		T(lease_held_by_one),
		T(counts_per_tool_and_kind),
		T(racing_processes_on_one_store_file),
	};

	TU_STORE_MAIN(tests);
}
