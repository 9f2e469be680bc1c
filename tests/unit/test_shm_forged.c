/*
 * The pages responders share (the ledger's ring and slots, the limits'
 * table) can be written by any responder, so a compromised one can write
 * garbage over them. What it writes must not stall the others: here the
 * attack is made for real. Each page is found in /proc/self/maps as a
 * mapping made by its sg_*_map, its lock word set to the pid of a live
 * process (the rest of what a pthread mutex would hold zero: a normal
 * mutex "held" by a process that will never unlock it), and the ring's
 * ends set to say more than the ring holds. A child then does what a
 * responder does (take the lock, sum the rows not yet written) and must
 * be done in a few seconds, not hang.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/state/ledger.h"
#include "../../core/state/limits.h"
#include "../../store/store.h"
#include "../../lib/util.h"

#define MAPS_MAX	256

/* The start addresses of the shared anonymous mappings of this process. */
static size_t
shared_maps(uintptr_t *out, size_t max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	size_t n = 0;
	uintptr_t lo;

	assert_non_null(f);
	while (n < max && fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, " rw-s ") != NULL &&
		    strstr(line, "/dev/zero (deleted)") != NULL &&
		    sscanf(line, "%lx-", (unsigned long *)&lo) == 1)
			out[n++] = lo;
	fclose(f);
	return n;
}

/* The mapping map_fn makes: the one that was not there before. */
static unsigned char *
mapped_by(int (*map_fn)(void))
{
	uintptr_t before[MAPS_MAX], after[MAPS_MAX];
	size_t nb = shared_maps(before, MAPS_MAX), na, i, j;

	assert_int_equal(map_fn(), 0);
	na = shared_maps(after, MAPS_MAX);
	for (i = 0; i < na; i++) {
		for (j = 0; j < nb && before[j] != after[i]; j++)
			;
		if (j == nb)
			return (unsigned char *)after[i];
	}
	fail_msg("no new shared mapping");
	return NULL;
}

static int map_ledger(void) { return sg_use_map(8); }
static int map_limits(void) { return sg_lim_map(); }

static pid_t
live_process(void)
{
	pid_t p = fork();

	if (p == 0) {
		pause();
		_exit(0);
	}
	assert_true(p > 0);
	return p;
}

/* The lock word at the page's start names holder; the 40 bytes a pthread
 * mutex takes otherwise zero (its kind: a normal mutex). */
static void
forge_lock(unsigned char *page, pid_t holder)
{
	int word = (int)holder;

	memset(page, 0, 40);
	memcpy(page, &word, sizeof(word));
}

/* Run fn in a child: whether it was done within secs. */
static int
done_within(void (*fn)(void), int secs)
{
	pid_t c = fork();
	int st = 0, i;

	if (c == 0) {
		fn();
		_exit(0);
	}
	for (i = 0; i < secs * 20; i++) {
		if (waitpid(c, &st, WNOHANG) == c)
			return WIFEXITED(st) && WEXITSTATUS(st) == 0;
		usleep(50000);
	}
	kill(c, SIGKILL);
	waitpid(c, &st, 0);
	return 0;
}

static void
ledger_work(void)
{
	int64_t cost, sbx;

	sg_use_slot(0);
	sg_use_pending("t", 0, &cost, &sbx);
}

static void
a_forged_ledger_page_does_not_stall(void **state)
{
	unsigned char *page = mapped_by(map_ledger);
	pid_t holder = live_process();
	uint64_t ends[2] = { 5, 1 };	/* tail - head: about 2^64 */
	int ok;

	(void)state;
	forge_lock(page, holder);
	/* head and tail follow the lock (8 bytes in, aligned). */
	memcpy(page + 8, ends, sizeof(ends));
	ok = done_within(ledger_work, 5);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	assert_true(ok);
}

static struct sg_store *st;
static char path[64];

static void
limits_work(void)
{
	struct sg_cfg_limits lim = { 100, 0, 0, SG_PERIOD_DAY, 0 };
	struct sg_error err;
	char head[512];

	if (sg_lim_admit(st, "t", &lim, SG_LIM_MODEL, sg_wall_ms(), head,
	    sizeof(head), &err) != 0)
		_exit(1);
}

static void
a_forged_limits_table_does_not_stall(void **state)
{
	unsigned char *page = mapped_by(map_limits);
	pid_t holder = live_process();
	char err[256];
	int ok;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/sg-forged-%d.db", (int)getpid());
	unlink(path);
	assert_int_equal(sg_store_open(path, &st, err, sizeof(err)), 0);
	assert_int_equal(sg_store_migrate(st), 0);
	forge_lock(page, holder);
	ok = done_within(limits_work, 5);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	sg_store_close(st);
	unlink(path);
	assert_true(ok);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_forged_ledger_page_does_not_stall),
		cmocka_unit_test(a_forged_limits_table_does_not_stall),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
