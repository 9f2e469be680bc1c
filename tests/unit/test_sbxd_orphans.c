/*
 * Leftover sandboxes a dead sandboxd left (sbxd_orphans.c): a record names
 * a kernel, and the sweep kills it only while it is a leftover (its uid a
 * sandbox uid nobody claims and not ours, its start time the record's);
 * a sandbox group's processes likewise; the runtime directory hands a
 * dead instance's records to the sweep, never a live one's. The tests put
 * our own uid in the sandbox range, so children of ours play the kernels.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../providers/sandboxd/sbxd.h"
#include "testutil.h"


struct fx {
	char		 tmp[64];
	int		 uids;		/* the claims file */
	int		 kernels;	/* tmp/k: a kernels/ directory */
	unsigned	 base, slot;	/* the range the tests use, our uid's */
	unsigned char	 taken[SG_SBXD_MAX];
	struct sg_cg	 cg;		/* none, or a fake tree in tmp/cg */
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char path[128], why[512];

	if (fx == NULL || tu_mkdtemp(fx->tmp, sizeof(fx->tmp)) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/run", fx->tmp);
	if ((fx->uids = sg_sbxd_uids_open(path, why, sizeof(why))) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/k", fx->tmp);
	if (mkdir(path, 0700) == -1 || (fx->kernels = open(path, O_RDONLY |
	    O_DIRECTORY)) == -1)
		return -1;
	fx->base = getuid() >= 7 ? getuid() - 7 : 0;
	fx->slot = getuid() - fx->base;
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	close(fx->uids);
	close(fx->kernels);
	tu_rmrf(fx->tmp);
	free(fx);
	return 0;
}

/* A child that waits to be killed (or for a minute). */
static pid_t
kernel(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		alarm(60);
		for (;;)
			pause();
	}
	assert_true(pid > 0);
	return pid;
}

/* 1 when pid was killed by SIGKILL (and is reaped), 0 while it runs. */
static int
killed_within(pid_t pid, int ms)
{
	int status, i;

	for (i = 0; i < ms / 5; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
		usleep(5000);
	}
	return 0;
}

#define killed(pid)	killed_within(pid, 2000)
#define runs(pid)	(!killed_within(pid, 100))

static void
stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* One sweep of the records in fx->kernels and the groups of fx->cg. */
static int
sweep(struct fx *fx)
{
	struct sg_sbxd_sweep sw;

	sg_sbxd_sweep_begin(&sw, fx->uids, fx->base, fx->taken);
	sg_sbxd_sweep_records(&sw, fx->kernels);
	return sg_sbxd_sweep_end(&sw, &fx->cg);
}

static void
put(int dfd, const char *name, const char *text)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* What sg_sbxd_record wrote for id. */
static void
record_of(struct fx *fx, const char *id, char *out, size_t outsz)
{
	char name[64];
	ssize_t n;
	int fd;

	snprintf(name, sizeof(name), "%s.pid", id);
	assert_true((fd = openat(fx->kernels, name, O_RDONLY)) >= 0);
	n = read(fd, out, outsz - 1);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
}

static void
a_recorded_leftover_is_killed(void **state)
{
	struct fx *fx = *state;
	char text[64], want[64];
	unsigned long long start;
	pid_t pid = kernel();
	int p;

	assert_int_equal(sg_sbxd_record(fx->kernels, "cntr_1", pid), 0);
	record_of(fx, "cntr_1", text, sizeof(text));
	assert_int_equal(sscanf(text, "%d %llu", &p, &start), 2);
	snprintf(want, sizeof(want), "%d %llu\n", (int)pid, start);
	assert_string_equal(text, want);
	assert_true(start > 0);
	assert_int_equal(sweep(fx), 1);
	assert_true(killed(pid));
	/* The uid's claim was the sweep's only while it ran. */
	assert_int_equal(sg_sbxd_uid_claim(fx->uids, fx->base + fx->slot), 1);
}

/* A record only says where to look: what it names must be a leftover. */
static void
a_record_names_no_one_else(void **state)
{
	struct fx *fx = *state;
	char text[64], bad[80], path[128];
	unsigned long long start;
	pid_t pid = kernel();
	int p, other;

	assert_int_equal(sg_sbxd_record(fx->kernels, "cntr_1", pid), 0);
	record_of(fx, "cntr_1", text, sizeof(text));
	assert_int_equal(sscanf(text, "%d %llu", &p, &start), 2);
	/* Another start time: a pid used again since. */
	snprintf(bad, sizeof(bad), "%d %llu\n", (int)pid, start + 1);
	put(fx->kernels, "cntr_1.pid", bad);
	assert_int_equal(sweep(fx), 0);
	put(fx->kernels, "cntr_1.pid", text);
	/* One of our own sandboxes' uid. */
	fx->taken[fx->slot] = 1;
	assert_int_equal(sweep(fx), 0);
	fx->taken[fx->slot] = 0;
	/* A uid out of the range. */
	fx->base += SG_SBXD_MAX;
	assert_int_equal(sweep(fx), 0);
	fx->base -= SG_SBXD_MAX;
	/* A uid a live sandboxd claims (another open of the file). */
	snprintf(path, sizeof(path), "%s/run", fx->tmp);
	assert_true((other = sg_sbxd_uids_open(path, bad, sizeof(bad))) >= 0);
	assert_int_equal(sg_sbxd_uid_claim(other, fx->base + fx->slot), 1);
	assert_int_equal(sweep(fx), 0);
	/* The record through a link, a FIFO (no hang), junk, pid 1. */
	unlinkat(fx->kernels, "cntr_1.pid", 0);
	snprintf(path, sizeof(path), "%s/elsewhere", fx->tmp);
	put(AT_FDCWD, path, text);
	assert_int_equal(symlinkat(path, fx->kernels, "cntr_2.pid"), 0);
	assert_int_equal(mkfifoat(fx->kernels, "cntr_3.pid", 0600), 0);
	put(fx->kernels, "cntr_4.pid", "x 1\n");
	snprintf(bad, sizeof(bad), "1 %llu\n", start);
	put(fx->kernels, "cntr_5.pid", bad);
	close(other);
	assert_int_equal(sweep(fx), 0);
	assert_true(runs(pid));
	/* No claims file (not root): the sweep kills nothing. */
	put(fx->kernels, "cntr_1.pid", text);
	p = fx->uids;
	fx->uids = -1;
	assert_int_equal(sweep(fx), 0);
	fx->uids = p;
	assert_true(runs(pid));
	assert_int_equal(sweep(fx), 1);
	assert_true(killed(pid));
}

/* A sandbox group's leftovers are killed and the group removed. */
static void
a_groups_leftovers_are_killed(void **state)
{
	struct fx *fx = *state;
	char path[160], text[32];
	pid_t pid = kernel(), forked = kernel();
	int dfd;

	fx->cg.mode = SG_CG_V1;
	snprintf(fx->cg.dir[SG_CG_PIDS], sizeof(fx->cg.dir[0]), "%s/cg", fx->tmp);
	snprintf(path, sizeof(path), "%s/cg/cntr_a", fx->tmp);
	assert_int_equal(mkdir(fx->cg.dir[SG_CG_PIDS], 0700), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_true((dfd = open(path, O_RDONLY | O_DIRECTORY)) >= 0);
	snprintf(text, sizeof(text), "%d\n%d\n", (int)pid, (int)forked);
	put(dfd, "cgroup.procs", text);
	close(dfd);
	/* Our own sandbox's: left alone. */
	fx->taken[fx->slot] = 1;
	assert_int_equal(sweep(fx), 0);
	assert_true(runs(pid));
	fx->taken[fx->slot] = 0;
	/* A leftover, all of it: one sandbox (uid), two processes. */
	assert_int_equal(sweep(fx), 1);
	assert_true(killed(pid));
	assert_true(killed(forked));
}

/* The records a dead instance left go to the sweep; a live one's never,
 * and a previous sandboxd of our own instance counts as dead. */
static void
only_dead_instances_are_swept(void **state)
{
	struct fx *fx = *state;
	struct sg_sbxd_sweep sw;
	struct sg_sbxd_dirs live, next;
	char base[128], why[900];
	pid_t a = kernel(), b = kernel(), c = kernel();
	int kfd;

	snprintf(base, sizeof(base), "%s/local", fx->tmp);
	assert_int_equal(sg_sbxd_rundir(base, "m1", &live, NULL, why,
	    sizeof(why)), 0);
	assert_int_equal(sg_sbxd_record(live.kernels, "cntr_a", a), 0);
	/* A dead one: no lock held (a link to elsewhere is not followed). */
	assert_int_equal(mkdirat(live.base, "m2", 0700), 0);
	assert_int_equal(mkdirat(live.base, "m2/kernels", 0700), 0);
	assert_true((kfd = openat(live.base, "m2/kernels", O_RDONLY |
	    O_DIRECTORY)) >= 0);
	assert_int_equal(sg_sbxd_record(kfd, "cntr_b", b), 0);
	close(kfd);
	assert_int_equal(symlinkat("m2", live.base, "m3"), 0);
	sg_sbxd_sweep_begin(&sw, fx->uids, fx->base, fx->taken);
	sg_sbxd_dead(live.base, "m9", &sw);
	assert_int_equal(sg_sbxd_sweep_end(&sw, &fx->cg), 1);
	assert_true(killed(b));
	assert_true(runs(a));
	/* m1's sandboxd dies; the next one of m1 sweeps what it left. */
	close(live.dir);
	close(live.kernels);
	close(live.lock);
	sg_sbxd_sweep_begin(&sw, fx->uids, fx->base, fx->taken);
	assert_int_equal(sg_sbxd_rundir(base, "m1", &next, &sw, why,
	    sizeof(why)), 0);
	assert_int_equal(sg_sbxd_sweep_end(&sw, &fx->cg), 1);
	assert_true(killed(a));
	assert_int_equal(faccessat(next.kernels, "cntr_a.pid", F_OK, 0), -1);
	/* A live sandboxd's own directory is never read by another. */
	assert_int_equal(sg_sbxd_record(next.kernels, "cntr_c", c), 0);
	sg_sbxd_sweep_begin(&sw, fx->uids, fx->base, fx->taken);
	sg_sbxd_dead(live.base, "m9", &sw);
	assert_int_equal(sg_sbxd_sweep_end(&sw, &fx->cg), 0);
	assert_true(runs(c));
	stop(c);
	close(live.base);
	close(next.base);
	close(next.dir);
	close(next.kernels);
	close(next.lock);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(a_recorded_leftover_is_killed),
		T(a_record_names_no_one_else),
		T(a_groups_leftovers_are_killed),
		T(only_dead_instances_are_swept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
