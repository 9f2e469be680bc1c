/*
 * store/background: background jobs claimed oldest first within each
 * key's cap, never twice and never past the cap with claimers racing on
 * their own connections (and, on PostgreSQL, in the two interleavings
 * the claim guards against, made to happen: a pick gone stale while the
 * claim waited, a job cancelled meanwhile); changed only by the runner
 * holding them while they run; cancelled as OpenAI does for each status;
 * listed per box for the reaper, whose fail never overrides a runner's
 * own ending; counted and pruned. Response events kept in order, a
 * retried batch adding nothing twice, per tenant, pruned a response at a
 * time. Both copied by `migrate --to`, and added to a store of schema 12
 * with its rows kept. On SQLite, then on PostgreSQL when SG_TEST_PG is
 * set.
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
#include <unistd.h>

#include <sqlite3.h>

#include "../../store/store.h"
#include "../../store/background.h"
#include "../../lib/util.h"
#include "testutil.h"

#define A "aaaa"
#define B "bbbb"
#define BODY "{\"model\":\"m\",\"background\":true}"

static void
add(struct sg_store *st, const char *id, const char *tenant, int64_t at)
{
	if (sg_store_bg_add(st, id, tenant, "name", BODY, at) != SG_STORE_OK)
		fail_msg("bg_add %s: %s", id, sg_store_errmsg(st));
}

/* Claim by pid 7 (start 70): the id taken, or "" when none. */
static const char *
claim(struct sg_store *st, int cap, struct sg_store_bg *j)
{
	int rc = sg_store_bg_claim(st, 7, 70, cap, j);

	if (rc != SG_STORE_OK && rc != SG_STORE_NOTFOUND)
		fail_msg("claim: %s", sg_store_errmsg(st));
	return rc == SG_STORE_OK ? j->id : "";
}

/* Claim, as pid 7, the job want ("": none). */
static void
take(struct sg_store *st, int cap, const char *want)
{
	struct sg_store_bg j;

	assert_string_equal(claim(st, cap, &j), want);
	sg_store_bg_clear(&j);
}

static void
done(struct sg_store *st, const char *id)
{
	assert_int_equal(sg_store_bg_finish(st, id, "box-1:7:70", "completed",
	    NULL, NULL), SG_STORE_OK);
}

static void
test_add_get(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_bg j;

	assert_int_equal(sg_store_set_box(fx->st, "box-1"), SG_STORE_OK);
	add(fx->st, "resp_1", A, 1000);
	assert_int_equal(sg_store_bg_add(fx->st, "resp_1", B, NULL, "{}", 1),
	    SG_STORE_EXISTS);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_1", A, &j), SG_STORE_OK);
	assert_string_equal(j.id, "resp_1");
	assert_string_equal(j.tenant, A);
	assert_string_equal(j.status, "queued");
	assert_string_equal(j.key_name, "name");
	assert_string_equal(j.body, BODY);
	assert_string_equal(j.box, "box-1");
	assert_string_equal(j.runner, "");
	assert_null(j.snapshot);
	assert_null(j.error);
	assert_int_equal(j.cancel, 0);
	assert_int_equal(j.created_ms, 1000);
	assert_int_equal(j.started_ms, 0);
	assert_int_equal(j.ended_ms, 0);
	sg_store_bg_clear(&j);
	/* Another key's is not there; NULL is anyone's (the runners'). */
	assert_int_equal(sg_store_bg_get(fx->st, "resp_1", B, &j),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_1", NULL, &j),
	    SG_STORE_OK);
	sg_store_bg_clear(&j);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_x", NULL, &j),
	    SG_STORE_NOTFOUND);
}

/* The oldest job of a key below its cap goes first: a key with a queue
 * holds at most its cap, and the other keys' jobs pass it. */
static void
test_claim_fair(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_bg j;
	int64_t q, r;

	assert_int_equal(sg_store_set_box(fx->st, "box-1"), SG_STORE_OK);
	assert_string_equal(claim(fx->st, 1, &j), "");
	add(fx->st, "resp_a1", A, 10);
	add(fx->st, "resp_a2", A, 20);
	add(fx->st, "resp_a3", A, 30);
	add(fx->st, "resp_b1", B, 40);
	add(fx->st, "resp_a0", A, 5);
	assert_string_equal(claim(fx->st, 1, &j), "resp_a0");
	/* The claim hands the runner its job, named as its holder. */
	assert_string_equal(j.status, "in_progress");
	assert_string_equal(j.runner, "box-1:7:70");
	assert_string_equal(j.body, BODY);
	assert_true(j.started_ms > 0);
	sg_store_bg_clear(&j);
	take(fx->st, 1, "resp_b1");
	take(fx->st, 1, "");
	assert_int_equal(sg_store_bg_counts(fx->st, NULL, &q, &r), SG_STORE_OK);
	assert_int_equal(q, 3);
	assert_int_equal(r, 2);
	assert_int_equal(sg_store_bg_counts(fx->st, A, &q, &r), SG_STORE_OK);
	assert_int_equal(q, 3);
	assert_int_equal(r, 1);
	assert_int_equal(sg_store_bg_counts(fx->st, "nobody", &q, &r),
	    SG_STORE_OK);
	assert_int_equal(q + r, 0);
	/* A cap of 2 lets A's next in; then A is full again. */
	take(fx->st, 2, "resp_a1");
	take(fx->st, 2, "");
	done(fx->st, "resp_a0");
	take(fx->st, 2, "resp_a2");
	/* 0: no cap. */
	take(fx->st, 0, "resp_a3");
	take(fx->st, 0, "");
	assert_int_equal(sg_store_bg_counts(fx->st, NULL, &q, &r), SG_STORE_OK);
	assert_int_equal(q, 0);
	assert_int_equal(r, 4);
}

/* Only the runner holding a job changes it, and only while it runs. */
static void
test_runner_only(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_bg j;
	const char *me = "box-1:7:70";

	assert_int_equal(sg_store_set_box(fx->st, "box-1"), SG_STORE_OK);
	add(fx->st, "resp_1", A, 10);
	/* Queued: nobody holds it. */
	assert_int_equal(sg_store_bg_snapshot(fx->st, "resp_1", me, "{}"),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_1", me, "completed",
	    NULL, NULL), SG_STORE_NOTFOUND);
	take(fx->st, 0, "resp_1");
	assert_int_equal(sg_store_bg_snapshot(fx->st, "resp_1", "box-1:8:70",
	    "{\"x\":1}"), SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_snapshot(fx->st, "resp_1", me,
	    "{\"n\":1}"), SG_STORE_OK);
	assert_int_equal(sg_store_bg_snapshot(fx->st, "resp_1", me,
	    "{\"n\":2}"), SG_STORE_OK);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_1", A, &j), SG_STORE_OK);
	assert_string_equal(j.snapshot, "{\"n\":2}");
	sg_store_bg_clear(&j);
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_1", "box-2:7:70",
	    "failed", NULL, "{}"), SG_STORE_NOTFOUND);
	/* Only an end ends it. */
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_1", me, "queued",
	    NULL, NULL), SG_STORE_ERROR);
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_1", me,
	    "in_progress", NULL, NULL), SG_STORE_ERROR);
	/* NULL keeps the snapshot set before. */
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_1", me, "incomplete",
	    NULL, "{\"e\":1}"), SG_STORE_OK);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_1", A, &j), SG_STORE_OK);
	assert_string_equal(j.status, "incomplete");
	assert_string_equal(j.snapshot, "{\"n\":2}");
	assert_string_equal(j.error, "{\"e\":1}");
	assert_string_equal(j.runner, "");
	assert_true(j.ended_ms >= j.started_ms && j.ended_ms > 0);
	sg_store_bg_clear(&j);
	/* Ended: nobody changes it again. */
	assert_int_equal(sg_store_bg_snapshot(fx->st, "resp_1", me, "{}"),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_1", me, "completed",
	    "{}", NULL), SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_1", A, &j), SG_STORE_OK);
	assert_string_equal(j.status, "incomplete");
	assert_string_equal(j.snapshot, "{\"n\":2}");
	sg_store_bg_clear(&j);
}

/* A deleted job is gone for everyone, its runner included. */
static void
test_delete(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_bg j;
	const char *me = "box-1:7:70";
	int c;

	assert_int_equal(sg_store_set_box(fx->st, "box-1"), SG_STORE_OK);
	add(fx->st, "resp_1", A, 10);
	add(fx->st, "resp_2", A, 20);
	take(fx->st, 0, "resp_1");
	assert_int_equal(sg_store_bg_delete(fx->st, "resp_1", B),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_delete(fx->st, "resp_1", A), SG_STORE_OK);
	assert_int_equal(sg_store_bg_delete(fx->st, "resp_1", A),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_1", NULL, &j),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_cancelled(fx->st, "resp_1", me, &c),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_snapshot(fx->st, "resp_1", me, "{}"),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_1", me, "completed",
	    NULL, NULL), SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_delete(fx->st, "resp_2", NULL),
	    SG_STORE_OK);
	take(fx->st, 0, "");
}

static const char *
cancel(struct sg_store *st, const char *id, const char *tenant)
{
	static char status[16];
	int rc = sg_store_bg_cancel(st, id, tenant, status);

	return rc == SG_STORE_NOTFOUND ? "notfound" : rc == SG_STORE_OK ?
	    status : "error";
}

/* Cancel on each status: queued ends at once, in_progress is asked of
 * its runner, an ended one is left. */
static void
test_cancel(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_bg j;
	const char *me = "box-1:7:70";
	int c = -1;

	assert_int_equal(sg_store_set_box(fx->st, "box-1"), SG_STORE_OK);
	add(fx->st, "resp_q", A, 10);
	add(fx->st, "resp_r", A, 20);
	add(fx->st, "resp_d", A, 30);
	assert_string_equal(cancel(fx->st, "resp_x", A), "notfound");
	assert_string_equal(cancel(fx->st, "resp_q", B), "notfound");
	assert_string_equal(cancel(fx->st, "resp_q", A), "cancelled");
	assert_int_equal(sg_store_bg_get(fx->st, "resp_q", A, &j), SG_STORE_OK);
	assert_string_equal(j.status, "cancelled");
	assert_true(j.ended_ms > 0);
	sg_store_bg_clear(&j);
	/* A cancelled job is never claimed. */
	take(fx->st, 0, "resp_r");
	take(fx->st, 0, "resp_d");
	done(fx->st, "resp_d");
	take(fx->st, 0, "");
	/* Running: the runner learns it, and ends it. */
	assert_int_equal(sg_store_bg_cancelled(fx->st, "resp_r", me, &c),
	    SG_STORE_OK);
	assert_int_equal(c, 0);
	assert_string_equal(cancel(fx->st, "resp_r", B), "notfound");
	assert_int_equal(sg_store_bg_cancelled(fx->st, "resp_r", me, &c),
	    SG_STORE_OK);
	assert_int_equal(c, 0);
	assert_string_equal(cancel(fx->st, "resp_r", A), "in_progress");
	assert_string_equal(cancel(fx->st, "resp_r", NULL), "in_progress");
	assert_int_equal(sg_store_bg_cancelled(fx->st, "resp_r", me, &c),
	    SG_STORE_OK);
	assert_int_equal(c, 1);
	/* Another runner's question gets no answer but "not yours". */
	assert_int_equal(sg_store_bg_cancelled(fx->st, "resp_r", "box-1:8:70",
	    &c), SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_r", me, "cancelled",
	    "{}", NULL), SG_STORE_OK);
	assert_int_equal(sg_store_bg_cancelled(fx->st, "resp_r", me, &c),
	    SG_STORE_NOTFOUND);
	assert_string_equal(cancel(fx->st, "resp_r", A), "cancelled");
	/* Ended: left as it ended, no cancel recorded. */
	assert_string_equal(cancel(fx->st, "resp_d", A), "completed");
	assert_int_equal(sg_store_bg_get(fx->st, "resp_d", A, &j), SG_STORE_OK);
	assert_string_equal(j.status, "completed");
	assert_int_equal(j.cancel, 0);
	sg_store_bg_clear(&j);
}

struct held {
	char	 text[512];
};

static int
note_held(void *arg, const struct sg_store_bg_hold *h)
{
	struct held *s = arg;
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%s%s/%s/%lld/%lld",
	    len > 0 ? ";" : "", h->id, h->tenant, (long long)h->pid,
	    (long long)h->start);
	return 0;
}

static const char *
held(struct sg_store *st, const char *box, struct held *s)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(sg_store_bg_held(st, box, note_held, s), SG_STORE_OK);
	return s->text;
}

/* The reaper finds its box's runners' jobs, and its fail never
 * overrides a runner that ended its job first. */
static void
test_held_and_reaped(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_bg j1, j2, j3, j4;
	struct held s;
	const char *dead = "{\"code\":\"server_error\"}";

	add(fx->st, "resp_1", A, 10);
	add(fx->st, "resp_2", B, 20);
	add(fx->st, "resp_3", A, 30);
	add(fx->st, "resp_4", A, 40);
	add(fx->st, "resp_5", A, 50);
	assert_int_equal(sg_store_set_box(fx->st, "box-1"), SG_STORE_OK);
	assert_int_equal(sg_store_bg_claim(fx->st, 11, 110, 0, &j1),
	    SG_STORE_OK);
	assert_int_equal(sg_store_bg_claim(fx->st, 12, 120, 0, &j2),
	    SG_STORE_OK);
	assert_int_equal(sg_store_set_box(fx->st, "box-2"), SG_STORE_OK);
	assert_int_equal(sg_store_bg_claim(fx->st, 11, 110, 0, &j3),
	    SG_STORE_OK);
	/* A box whose name starts as "box-1:" does not pass for box-1. */
	assert_int_equal(sg_store_set_box(fx->st, "box-1:9"), SG_STORE_OK);
	assert_int_equal(sg_store_bg_claim(fx->st, 13, 130, 0, &j4),
	    SG_STORE_OK);
	assert_string_equal(j4.runner, "box-1:9:13:130");
	assert_string_equal(held(fx->st, "box-1", &s),
	    "resp_1/" A "/11/110;resp_2/" B "/12/120");
	assert_string_equal(held(fx->st, "box-2", &s), "resp_3/" A "/11/110");
	assert_string_equal(held(fx->st, "box-1:9", &s),
	    "resp_4/" A "/13/130");
	assert_string_equal(held(fx->st, "box-3", &s), "");
	/* Runner 11 of box-1 is dead: failed. Its late finish is refused. */
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_1", j1.runner,
	    "failed", NULL, dead), SG_STORE_OK);
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_1", j1.runner,
	    "completed", "{}", NULL), SG_STORE_NOTFOUND);
	/* Runner 12 ended its job before the reaper got to it. */
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_2", j2.runner,
	    "completed", "{\"ok\":1}", NULL), SG_STORE_OK);
	assert_int_equal(sg_store_bg_finish(fx->st, "resp_2", j2.runner,
	    "failed", NULL, dead), SG_STORE_NOTFOUND);
	assert_string_equal(held(fx->st, "box-1", &s), "");
	sg_store_bg_clear(&j1);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_1", NULL, &j1),
	    SG_STORE_OK);
	assert_string_equal(j1.status, "failed");
	assert_string_equal(j1.error, dead);
	sg_store_bg_clear(&j2);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_2", NULL, &j2),
	    SG_STORE_OK);
	assert_string_equal(j2.status, "completed");
	assert_null(j2.error);
	assert_string_equal(j2.snapshot, "{\"ok\":1}");
	sg_store_bg_clear(&j1);
	sg_store_bg_clear(&j2);
	sg_store_bg_clear(&j3);
	sg_store_bg_clear(&j4);
}

/* Only ended jobs go, those ended before the time, at most limit. */
static void
test_prune(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_bg j;
	int removed = -1;

	assert_int_equal(sg_store_set_box(fx->st, "box-1"), SG_STORE_OK);
	add(fx->st, "resp_1", A, 10);
	add(fx->st, "resp_2", A, 20);
	add(fx->st, "resp_3", A, 30);
	add(fx->st, "resp_4", A, 40);
	add(fx->st, "resp_5", A, 50);
	take(fx->st, 0, "resp_1");
	take(fx->st, 0, "resp_2");
	take(fx->st, 0, "resp_3");
	done(fx->st, "resp_1");
	done(fx->st, "resp_2");
	assert_string_equal(cancel(fx->st, "resp_4", A), "cancelled");
	assert_int_equal(tu_raw_sql_store(fx->st, "UPDATE bg SET ended_ms = "
	    "100 WHERE id IN ('resp_1', 'resp_4')"), 0);
	/* resp_3 runs, resp_5 waits: never pruned, whatever the time. */
	assert_int_equal(sg_store_bg_prune(fx->st, 101, 1, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(sg_store_bg_prune(fx->st, 101, 10, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_2", A, &j), SG_STORE_OK);
	sg_store_bg_clear(&j);
	assert_int_equal(sg_store_bg_prune(fx->st, INT64_MAX, 10, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_2", A, &j),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_3", A, &j), SG_STORE_OK);
	sg_store_bg_clear(&j);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_5", A, &j), SG_STORE_OK);
	sg_store_bg_clear(&j);
}

/*
 * Claimers racing, each a process with its own connection, while another
 * adds jobs, each older than the rest (a box whose clock is behind): the
 * pick changes under the claimers. Every job is taken exactly once and no
 * key ever goes past its cap: each claimer, once it holds a job, checks
 * its key's running count (a claim past the cap shows there), holds the
 * job a moment, ends it, and reports what it took on a pipe.
 */
#define RACE_JOBS	80
#define RACE_CAP	2
#define RACE_KIDS	4

/*
 * The children of the race tests are this program run again (--child
 * ROLE WHERE FD ME), not bare forks: a fork would carry the parent's open
 * store, which it may neither use nor close, and under valgrind its
 * memory would count as the child's leaks.
 */
static const char *self;

static const char *
store_of(const struct tu_store_fx *fx)
{
	return tu_store_url != NULL ? tu_store_url : fx->path;
}

static pid_t
spawn(const char *role, const struct tu_store_fx *fx, int fd, int me)
{
	char fds[16], mes[16];
	pid_t pid = fork();

	if (pid == 0) {
		snprintf(fds, sizeof(fds), "%d", fd);
		snprintf(mes, sizeof(mes), "%d", me);
		execl(self, self, "--child", role, store_of(fx), fds, mes,
		    (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	return pid;
}

/* The adder: job i is key A's but every fourth, B's. */
static int
adder(const char *where)
{
	struct sg_store *st = NULL;
	char err[256], id[32];
	int i, bad = 0;

	if (sg_store_open(where, &st, err, sizeof(err)) != SG_STORE_OK)
		return 2;
	for (i = 0; i < RACE_JOBS && !bad; i++) {
		snprintf(id, sizeof(id), "resp_%02d", i);
		if (sg_store_bg_add(st, id, i % 4 == 0 ? B : A, NULL, "{}",
		    1000 - i) != SG_STORE_OK)
			bad = 2;
		usleep(100);
	}
	sg_store_close(st);
	return bad;
}

/* Whether the adder is done and no job waits: 1, 0, or -1. */
static int
drained(struct sg_store *st)
{
	struct sg_store_bg j;
	char last[32];
	int64_t q, r;
	int rc;

	snprintf(last, sizeof(last), "resp_%02d", RACE_JOBS - 1);
	if ((rc = sg_store_bg_get(st, last, NULL, &j)) == SG_STORE_NOTFOUND)
		return 0;
	sg_store_bg_clear(&j);
	if (rc != SG_STORE_OK || sg_store_bg_counts(st, NULL, &q, &r) !=
	    SG_STORE_OK)
		return -1;
	return q == 0;
}

static int
racer(const char *where, int out, int me)
{
	struct sg_store *st = NULL;
	struct sg_store_bg j;
	char err[256], line[80];
	int64_t q, r, until = sg_now_ms() + 30000;
	int rc, bad = 0, len;

	if (sg_store_open(where, &st, err, sizeof(err)) != SG_STORE_OK)
		return 2;
	while (!bad) {
		rc = sg_store_bg_claim(st, 100 + me, 1, RACE_CAP, &j);
		if (rc == SG_STORE_NOTFOUND) {
			if ((rc = drained(st)) != 0) {
				bad = rc == -1 ? 2 : 0;
				break;
			}
			/* The adder died: the test ends all the same. */
			if (sg_now_ms() > until)
				bad = 4;
			usleep(100);
			continue;
		}
		if (rc != SG_STORE_OK) {
			bad = 2;
			break;
		}
		if (sg_store_bg_counts(st, j.tenant, &q, &r) != SG_STORE_OK)
			bad = 2;
		else if (r > RACE_CAP)
			bad = 3;
		len = snprintf(line, sizeof(line), "%s\n", j.id);
		if (write(out, line, (size_t)len) != len)
			bad = 2;
		usleep(300);
		if (sg_store_bg_finish(st, j.id, j.runner, "completed", NULL,
		    NULL) != SG_STORE_OK)
			bad = 2;
		sg_store_bg_clear(&j);
	}
	sg_store_close(st);
	return bad;
}

static void
test_race(void **state)
{
	struct tu_store_fx *fx = *state;
	static char got[RACE_JOBS * 32 + 1];
	char *p;
	pid_t kids[RACE_KIDS + 1];
	size_t n = 0;
	ssize_t r;
	int fds[2], i, status, seen[RACE_JOBS] = { 0 };

	assert_int_equal(pipe(fds), 0);
	for (i = 0; i <= RACE_KIDS; i++)
		kids[i] = spawn(i == RACE_KIDS ? "adder" : "racer", fx, fds[1],
		    i);
	close(fds[1]);
	while (n < sizeof(got) - 1 && (r = read(fds[0], got + n,
	    sizeof(got) - 1 - n)) > 0)
		n += (size_t)r;
	got[n] = '\0';
	close(fds[0]);
	for (i = 0; i <= RACE_KIDS; i++) {
		assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
		assert_true(WIFEXITED(status));
		if (WEXITSTATUS(status) == 3)
			fail_msg("a key went past its cap of %d", RACE_CAP);
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	for (p = strtok(got, "\n"); p != NULL; p = strtok(NULL, "\n")) {
		i = atoi(p + 5);
		assert_true(i >= 0 && i < RACE_JOBS);
		if (seen[i]++)
			fail_msg("%s was taken twice", p);
	}
	for (i = 0; i < RACE_JOBS; i++)
		if (!seen[i])
			fail_msg("resp_%02d was never taken", i);
}

/* A claim in a child process, as pid 100 + me: the id it took ("-"
 * none) written to out; its exit status 0, or 2. */
static int
claim_once(const char *where, int out, int me)
{
	struct sg_store *st = NULL;
	struct sg_store_bg j;
	char err[256], line[80];
	int rc, len;

	if (sg_store_open(where, &st, err, sizeof(err)) != SG_STORE_OK)
		return 2;
	rc = sg_store_bg_claim(st, 100 + me, 1, RACE_CAP, &j);
	len = snprintf(line, sizeof(line), "%s\n", rc == SG_STORE_OK ? j.id :
	    "-");
	sg_store_bg_clear(&j);
	sg_store_close(st);
	if (rc != SG_STORE_OK && rc != SG_STORE_NOTFOUND)
		return 2;
	return write(out, line, (size_t)len) == len ? 0 : 2;
}

/* PostgreSQL's sessions waiting for a lock, as pg_stat_activity shows. */
static int
waiting(struct sg_store *st)
{
	struct sg_st_cur *cur;
	int rc, n = -1;

	rc = sg_st_run(st, &cur, "SELECT count(*) FROM pg_stat_activity WHERE "
	    "wait_event_type = 'Lock'", "");
	if (rc == SG_ST_ROW)
		n = (int)sg_st_int(cur, 0);
	sg_st_done(st, cur);
	return n;
}

/*
 * The race the claims' lock closes, made to happen on PostgreSQL: a
 * claim picks key A's oldest job with A one below its cap and waits on
 * that row (another transaction holds it); meanwhile an older job of A
 * comes, and a second claim picks it. Without the lock both would take
 * theirs, each counting A's running jobs without the other's: A past its
 * cap. SQLite runs one write at a time: nothing to make happen there.
 */
static void
test_race_stale_pick(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store *other;
	char err[256], got[64];
	pid_t k1, k2;
	int fds[2], status, i, rc;
	int64_t q, r;
	ssize_t n;
	size_t len = 0;

	if (tu_store_url == NULL)
		skip();
	add(fx->st, "resp_a1", A, 10);
	add(fx->st, "resp_a5", A, 50);
	take(fx->st, RACE_CAP, "resp_a1");
	assert_int_equal(tu_store_open(fx->path, &other, err, sizeof(err), 0),
	    SG_STORE_OK);
	assert_int_equal(sg_st_begin_batch(other), SG_STORE_OK);
	assert_int_equal(sg_st_exec_args(other, NULL, "UPDATE bg SET snapshot "
	    "= '{}' WHERE id = 'resp_a5'", ""), SG_STORE_OK);
	assert_int_equal(pipe(fds), 0);
	k1 = spawn("claim", fx, fds[1], 1);
	for (i = 0; i < 500 && waiting(fx->st) < 1; i++)
		usleep(10000);
	add(fx->st, "resp_a4", A, 40);
	k2 = spawn("claim", fx, fds[1], 2);
	/* The second claim ends, or waits for the first. */
	for (i = 0; i < 500 && waiting(fx->st) < 2 && waitpid(k2, &status,
	    WNOHANG) == 0; i++)
		usleep(10000);
	assert_int_equal(sg_st_end(other, SG_STORE_OK), SG_STORE_OK);
	sg_store_close(other);
	close(fds[1]);
	while (len < sizeof(got) - 1 && (n = read(fds[0], got + len,
	    sizeof(got) - 1 - len)) > 0)
		len += (size_t)n;
	got[len] = '\0';
	close(fds[0]);
	rc = waitpid(k1, &status, 0);
	assert_int_equal(rc, k1);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	rc = waitpid(k2, &status, 0);
	assert_true(rc == k2 || rc == -1);
	assert_int_equal(sg_store_bg_counts(fx->st, A, &q, &r), SG_STORE_OK);
	if (r > RACE_CAP)
		fail_msg("A runs %lld jobs, past its cap of %d (claims: %s)",
		    (long long)r, RACE_CAP, got);
	assert_int_equal(r, RACE_CAP);
	assert_int_equal(q, 1);
}

/* On PostgreSQL: a job cancelled while a claim waits on its row is not
 * taken; the claim takes the next. */
static void
test_claim_skips_cancelled(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store *other;
	struct sg_store_bg j;
	char err[256], got[64], status[16];
	pid_t k;
	int fds[2], st, i;
	ssize_t n;

	if (tu_store_url == NULL)
		skip();
	add(fx->st, "resp_a5", A, 50);
	add(fx->st, "resp_a6", A, 60);
	assert_int_equal(tu_store_open(fx->path, &other, err, sizeof(err), 0),
	    SG_STORE_OK);
	assert_int_equal(sg_st_begin_batch(other), SG_STORE_OK);
	assert_int_equal(sg_store_bg_cancel(other, "resp_a5", A, status),
	    SG_STORE_OK);
	assert_int_equal(pipe(fds), 0);
	k = spawn("claim", fx, fds[1], 1);
	for (i = 0; i < 500 && waiting(fx->st) < 1; i++)
		usleep(10000);
	assert_int_equal(sg_st_end(other, SG_STORE_OK), SG_STORE_OK);
	sg_store_close(other);
	close(fds[1]);
	n = read(fds[0], got, sizeof(got) - 1);
	close(fds[0]);
	assert_true(n > 0);
	got[n] = '\0';
	assert_int_equal(waitpid(k, &st, 0), k);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_string_equal(got, "resp_a6\n");
	assert_int_equal(sg_store_bg_get(fx->st, "resp_a5", A, &j),
	    SG_STORE_OK);
	assert_string_equal(j.status, "cancelled");
	assert_string_equal(j.runner, "");
	sg_store_bg_clear(&j);
}

struct evs {
	char	 text[512];
};

static int
note_ev(void *arg, const struct sg_store_ev *ev)
{
	struct evs *s = arg;
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%s%lld=%s",
	    len > 0 ? ";" : "", (long long)ev->seq, ev->event);
	return ev->seq == 99 ? -1 : 0;
}

static const char *
evlist(struct sg_store *st, const char *id, const char *tenant,
    int64_t after, int limit, struct evs *s)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(sg_store_ev_list(st, id, tenant, after, limit,
	    note_ev, s), SG_STORE_OK);
	return s->text;
}

static void
append(struct sg_store *st, const char *id, int64_t from, int64_t to,
    int want)
{
	struct sg_store_ev evs[16];
	char text[16][16];
	size_t n = 0;
	int added = -1;

	for (; from <= to; from++, n++) {
		snprintf(text[n], sizeof(text[n]), "e%lld", (long long)from);
		evs[n].seq = from;
		evs[n].event = text[n];
	}
	if (sg_store_ev_append(st, id, A, evs, n, &added) != SG_STORE_OK)
		fail_msg("ev_append: %s", sg_store_errmsg(st));
	assert_int_equal(added, want);
}

/* Events in seq order whatever order they came in, a retried batch
 * adding nothing twice, read after any point, per tenant. */
static void
test_events(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_ev late[] = { { 9, "e9" }, { 7, "e7" }, { 8, "e8" } };
	struct evs s;
	int64_t seq = 0;
	int removed = -1;

	assert_int_equal(sg_store_ev_last(fx->st, "resp_1", A, &seq),
	    SG_STORE_OK);
	assert_int_equal(seq, -1);
	assert_string_equal(evlist(fx->st, "resp_1", A, -1, 0, &s), "");
	append(fx->st, "resp_1", 0, 4, 5);
	append(fx->st, "resp_1", 3, 6, 2);
	append(fx->st, "resp_1", 0, 6, 0);
	append(fx->st, "resp_2", 0, 1, 2);
	assert_int_equal(sg_store_ev_append(fx->st, "resp_1", A, late, 3, NULL),
	    SG_STORE_OK);
	assert_string_equal(evlist(fx->st, "resp_1", A, -1, 0, &s),
	    "0=e0;1=e1;2=e2;3=e3;4=e4;5=e5;6=e6;7=e7;8=e8;9=e9");
	assert_string_equal(evlist(fx->st, "resp_1", NULL, 3, 2, &s),
	    "4=e4;5=e5");
	assert_string_equal(evlist(fx->st, "resp_1", A, 9, 0, &s), "");
	assert_string_equal(evlist(fx->st, "resp_1", B, -1, 0, &s), "");
	assert_int_equal(sg_store_ev_last(fx->st, "resp_1", A, &seq),
	    SG_STORE_OK);
	assert_int_equal(seq, 9);
	assert_int_equal(sg_store_ev_last(fx->st, "resp_1", B, &seq),
	    SG_STORE_OK);
	assert_int_equal(seq, -1);
	/* The callback stops the list. */
	append(fx->st, "resp_3", 98, 100, 3);
	assert_string_equal(evlist(fx->st, "resp_3", A, -1, 0, &s),
	    "98=e98;99=e99");
	assert_int_equal(sg_store_ev_delete(fx->st, "resp_1", B, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 0);
	assert_int_equal(sg_store_ev_delete(fx->st, "resp_1", A, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 10);
	assert_string_equal(evlist(fx->st, "resp_1", A, -1, 0, &s), "");
	assert_string_equal(evlist(fx->st, "resp_2", A, -1, 0, &s),
	    "0=e0;1=e1");
}

/* A response's events go all at once, once its first is old enough,
 * at most limit responses a call. */
static void
test_events_pruned(void **state)
{
	struct tu_store_fx *fx = *state;
	struct evs s;
	int removed = -1;

	append(fx->st, "resp_old", 0, 2, 3);
	append(fx->st, "resp_older", 0, 1, 2);
	append(fx->st, "resp_new", 0, 1, 2);
	/* resp_old's first event is old, its last ones are not. */
	assert_int_equal(tu_raw_sql_store(fx->st, "UPDATE resp_events SET "
	    "created_ms = 50 WHERE response_id = 'resp_old' AND seq = 0; "
	    "UPDATE resp_events SET created_ms = 40 WHERE response_id = "
	    "'resp_older'"), 0);
	assert_int_equal(sg_store_ev_prune(fx->st, 40, 10, &removed),
	    SG_STORE_OK);
	assert_int_equal(removed, 0);
	assert_int_equal(sg_store_ev_prune(fx->st, 51, 1, &removed),
	    SG_STORE_OK);
	assert_true(removed == 2 || removed == 3);
	assert_int_equal(sg_store_ev_prune(fx->st, 51, 10, &removed),
	    SG_STORE_OK);
	assert_true(removed == 2 || removed == 3);
	assert_string_equal(evlist(fx->st, "resp_old", A, -1, 0, &s), "");
	assert_string_equal(evlist(fx->st, "resp_older", A, -1, 0, &s), "");
	assert_string_equal(evlist(fx->st, "resp_new", A, -1, 0, &s),
	    "0=e0;1=e1");
}

/* `migrate --to` takes the jobs, as they were, and the events. */
static void
test_copy(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store *src;
	struct sg_store_bg j;
	struct evs s;
	char path[192], err[256];
	int64_t rows = 0;

	snprintf(path, sizeof(path), "%s/source.db", fx->dir);
	assert_int_equal(sg_store_open(path, &src, err, sizeof(err)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_migrate(src), SG_STORE_OK);
	assert_int_equal(sg_store_set_box(src, "box-1"), SG_STORE_OK);
	add(src, "resp_1", A, 10);
	add(src, "resp_2", B, 20);
	add(src, "resp_3", A, 30);
	take(src, 0, "resp_1");
	assert_int_equal(sg_store_bg_snapshot(src, "resp_1", "box-1:7:70",
	    "{\"n\":1}"), SG_STORE_OK);
	assert_string_equal(cancel(src, "resp_1", A), "in_progress");
	take(src, 0, "resp_2");
	assert_int_equal(sg_store_bg_finish(src, "resp_2", "box-1:7:70",
	    "failed", "{}", "{\"e\":1}"), SG_STORE_OK);
	append(src, "resp_1", 0, 2, 3);
	if (sg_store_copy(src, fx->st, &rows) != SG_STORE_OK)
		fail_msg("copy: %s", sg_store_errmsg(src));
	assert_int_equal(rows, 3 + 3);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_1", A, &j), SG_STORE_OK);
	assert_string_equal(j.status, "in_progress");
	assert_string_equal(j.runner, "box-1:7:70");
	assert_string_equal(j.snapshot, "{\"n\":1}");
	assert_string_equal(j.body, BODY);
	assert_string_equal(j.key_name, "name");
	assert_string_equal(j.box, "box-1");
	assert_int_equal(j.cancel, 1);
	assert_int_equal(j.created_ms, 10);
	assert_true(j.started_ms > 0);
	sg_store_bg_clear(&j);
	assert_int_equal(sg_store_bg_get(fx->st, "resp_2", B, &j), SG_STORE_OK);
	assert_string_equal(j.status, "failed");
	assert_string_equal(j.error, "{\"e\":1}");
	assert_true(j.ended_ms > 0);
	sg_store_bg_clear(&j);
	/* The queue goes on where it was. */
	take(fx->st, 0, "resp_3");
	assert_string_equal(evlist(fx->st, "resp_1", A, -1, 0, &s),
	    "0=e0;1=e1;2=e2");
	sg_store_close(src);
}

/* A store of schema 12 (before background jobs) is brought to this one,
 * its rows kept, and then keeps jobs and events. */
static void
test_migrate_12(void **state)
{
	struct tu_store_fx *fx = *state;
	char err[256], up[64];
	int v = -1;

	assert_int_equal(sg_store_resp_put(fx->st, "resp_1", A, "up_1", "m",
	    NULL), SG_STORE_OK);
	assert_int_equal(tu_raw_sql_store(fx->st, "DROP TABLE resp_events; "
	    "DROP TABLE bg; DROP TABLE mcp_sessions; DROP TABLE mcp_cancels"),
	    0);
	assert_int_equal(tu_raw_sql_store(fx->st, tu_store_url != NULL ?
	    "UPDATE sg_schema SET version = 12" : "PRAGMA user_version=12"), 0);
	sg_store_close(fx->st);
	assert_int_equal(tu_store_open(fx->path, &fx->st, err, sizeof(err), 0),
	    SG_STORE_OK);
	assert_int_equal(sg_store_bg_add(fx->st, "resp_2", A, NULL, "{}", 1),
	    SG_STORE_ERROR);
	if (sg_store_migrate(fx->st) != SG_STORE_OK)
		fail_msg("migrate: %s", sg_store_errmsg(fx->st));
	assert_int_equal(sg_store_version(fx->st, &v), SG_STORE_OK);
	assert_int_equal(v, SG_STORE_SCHEMA_VERSION);
	assert_int_equal(sg_store_resp_get(fx->st, "resp_1", A, up, sizeof(up),
	    NULL, 0), SG_STORE_OK);
	assert_string_equal(up, "up_1");
	add(fx->st, "resp_2", A, 1);
	append(fx->st, "resp_2", 0, 0, 1);
}

/* A child of a race test (see spawn): its exit status. */
static int
child(char **argv)
{
	int fd = atoi(argv[2]), me = atoi(argv[3]);

	if (strcmp(argv[0], "adder") == 0)
		return adder(argv[1]);
	if (strcmp(argv[0], "racer") == 0)
		return racer(argv[1], fd, me);
	return claim_once(argv[1], fd, me);
}

int
main(int argc, char **argv)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)
	const struct CMUnitTest tests[] = {
		T(test_add_get),
		T(test_claim_fair),
		T(test_runner_only),
		T(test_delete),
		T(test_cancel),
		T(test_held_and_reaped),
		T(test_prune),
		T(test_race),
		T(test_race_stale_pick),
		T(test_claim_skips_cancelled),
		T(test_events),
		T(test_events_pruned),
		T(test_copy),
		T(test_migrate_12),
	};

	if (argc == 6 && strcmp(argv[1], "--child") == 0)
		return child(argv + 2);
	self = argv[0];
	TU_STORE_MAIN(tests);
}
