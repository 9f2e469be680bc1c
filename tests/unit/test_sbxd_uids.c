/*
 * Sandbox uids claimed across the host's gateways (sbxd_uids.c): a claim
 * is one process's alone and ends with it, concurrent searches never
 * return one uid twice, a uid a process runs is never handed out, and the
 * claims file is refused wherever another user could reach it.
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

/* Far above any account, and not sandgate's own range. */
#define BASE	3000000000u

struct fx {
	char	tmp[64];
	char	dir[128];	/* tmp/run: where uids.lock goes */
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL || tu_mkdtemp(fx->tmp, sizeof(fx->tmp)) == -1)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "%s/run", fx->tmp);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	tu_rmrf(fx->tmp);
	free(fx);
	return 0;
}

static int
open_claims(const struct fx *fx)
{
	char why[512];
	int fd = sg_sbxd_uids_open(fx->dir, why, sizeof(why));

	if (fd == -1)
		fail_msg("%s", why);
	return fd;
}

/* In a child (no cmocka there): the claims file, or exit. Children end
 * by themselves should the test fail before it stops them. */
static int
child_claims(const struct fx *fx)
{
	char why[512];
	int fd;

	alarm(60);
	if ((fd = sg_sbxd_uids_open(fx->dir, why, sizeof(why))) == -1)
		_exit(2);
	return fd;
}

/* A child holding its own claim on uid until killed; its pid. */
static pid_t
holder(const struct fx *fx, uid_t uid)
{
	int ready[2];
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	if ((pid = fork()) == 0) {
		int fd = child_claims(fx);

		c = sg_sbxd_uid_claim(fd, uid) == 1 ? 'y' : 'n';
		(void)!write(ready[1], &c, 1);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_int_equal(c, 'y');
	return pid;
}

static void
kill_wait(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void
a_claim_is_one_holders_and_ends_with_it(void **state)
{
	struct fx *fx = *state;
	int fd = open_claims(fx), again;
	pid_t pid = holder(fx, BASE + 7);

	/* Taken by the other process: not ours; its neighbours are free. */
	assert_int_equal(sg_sbxd_uid_claim(fd, BASE + 7), 0);
	assert_int_equal(sg_sbxd_uid_claim(fd, BASE + 6), 1);
	assert_int_equal(sg_sbxd_uid_claim(fd, BASE + 8), 1);
	/* The holder dies (a crashed sandboxd): the uid is free again. */
	kill_wait(pid);
	assert_int_equal(sg_sbxd_uid_claim(fd, BASE + 7), 1);
	/* Ours again is no conflict; another open of the file, even in this
	 * process, is someone else (a lock of the open file, not the
	 * process: closing it does not drop ours). */
	assert_int_equal(sg_sbxd_uid_claim(fd, BASE + 7), 1);
	again = open_claims(fx);
	assert_int_equal(sg_sbxd_uid_claim(again, BASE + 7), 0);
	close(again);
	again = open_claims(fx);
	assert_int_equal(sg_sbxd_uid_claim(again, BASE + 7), 0);
	/* Released: the other may have it. */
	sg_sbxd_uid_release(fd, BASE + 7);
	assert_int_equal(sg_sbxd_uid_claim(again, BASE + 7), 1);
	assert_int_equal(sg_sbxd_uid_claim(fd, BASE + 7), 0);
	close(again);
	close(fd);
}

#define PICKERS	4
#define PICKS	100

/* Four processes (four gateways' sandboxd) pick 100 slots each at the
 * same moment, holding them all: no slot twice. */
static void
concurrent_picks_never_share_a_uid(void **state)
{
	struct fx *fx = *state;
	int go[2], out[2], hold[2], i, n, fd;
	unsigned char seen[SG_SBXD_MAX];
	pid_t pids[PICKERS];
	short slot;

	close(open_claims(fx));
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(hold), 0);
	for (i = 0; i < PICKERS; i++)
		if ((pids[i] = fork()) == 0) {
			unsigned char taken[SG_SBXD_MAX];
			char c;

			close(go[1]);
			close(hold[1]);
			memset(taken, 0, sizeof(taken));
			fd = child_claims(fx);
			(void)!read(go[0], &c, 1);
			for (n = 0; n < PICKS; n++) {
				slot = (short)sg_sbxd_uid_pick(fd, BASE, taken);
				if (slot >= 0)
					taken[slot] = 1;
				(void)!write(out[1], &slot, sizeof(slot));
			}
			(void)!read(hold[0], &c, 1);
			_exit(0);
		}
	close(go[0]);
	close(out[1]);
	close(hold[0]);
	close(go[1]);	/* all at once */
	memset(seen, 0, sizeof(seen));
	for (n = 0; n < PICKERS * PICKS; n++) {
		assert_int_equal(read(out[0], &slot, sizeof(slot)), sizeof(slot));
		assert_true(slot >= 0 && slot < SG_SBXD_MAX);
		if (seen[slot])
			fail_msg("slot %d picked twice", slot);
		seen[slot] = 1;
	}
	close(hold[1]);
	close(out[0]);
	for (i = 0; i < PICKERS; i++)
		waitpid(pids[i], NULL, 0);
	/* All gone with their holders. */
	fd = open_claims(fx);
	for (i = 0; i < SG_SBXD_MAX; i++)
		assert_int_equal(sg_sbxd_uid_claim(fd, BASE + (unsigned)i), 1);
	close(fd);
}

/* A uid some process runs (here: our own) is not handed out, even when
 * no one claims it: a kernel may outlive its sandboxd. */
static void
pick_skips_a_uid_a_process_runs(void **state)
{
	struct fx *fx = *state;
	unsigned char taken[SG_SBXD_MAX], busy[SG_SBXD_MAX];
	uid_t me = getuid();
	unsigned base = me >= 512 ? me - 512 : 0, mine = me - base, free_one;
	int fd = open_claims(fx), other;

	memset(busy, 0, sizeof(busy));
	sg_sbxd_scan_uids((uid_t)-1, base, busy);
	assert_true(busy[mine]);
	for (free_one = 0; free_one < SG_SBXD_MAX && busy[free_one]; free_one++)
		;
	assert_true(free_one < SG_SBXD_MAX);
	memset(taken, 1, sizeof(taken));
	taken[mine] = 0;
	assert_int_equal(sg_sbxd_uid_pick(fd, base, taken), -1);
	/* Its claim was let go again. */
	other = open_claims(fx);
	assert_int_equal(sg_sbxd_uid_claim(other, me), 1);
	close(other);
	taken[free_one] = 0;
	assert_int_equal(sg_sbxd_uid_pick(fd, base, taken), (int)free_one);
	close(fd);
}

/* Where a search starts is anyone's guess: two gateways starting
 * together do not walk the same first slots. */
static void
picks_start_anywhere(void **state)
{
	struct fx *fx = *state;
	unsigned char taken[SG_SBXD_MAX];
	int fd = open_claims(fx), first, i, differ = 0, slot;

	memset(taken, 0, sizeof(taken));
	first = sg_sbxd_uid_pick(fd, BASE, taken);
	for (i = 0; i < 20; i++) {
		slot = sg_sbxd_uid_pick(fd, BASE, taken);
		assert_true(slot >= 0);
		differ |= slot != first;
		sg_sbxd_uid_release(fd, BASE + (unsigned)slot);
	}
	assert_true(differ);
	close(fd);
}

static int
refused(const struct fx *fx)
{
	char why[512];
	int fd = sg_sbxd_uids_open(fx->dir, why, sizeof(why));

	if (fd != -1)
		close(fd);
	return fd == -1 && why[0] != '\0';
}

/* Made root's alone (here: ours), and refused where another user could
 * pre-create, redirect or open it. */
static void
claims_file_only_we_can_reach(void **state)
{
	struct fx *fx = *state;
	char path[256], other[256];
	struct stat st;

	close(open_claims(fx));
	assert_int_equal(stat(fx->dir, &st), 0);
	assert_int_equal(st.st_mode & 0022, 0);
	snprintf(path, sizeof(path), "%s/uids.lock", fx->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0077, 0);
	assert_int_equal(st.st_uid, geteuid());

	/* A file others may read (and so lock): refused. */
	assert_int_equal(chmod(path, 0644), 0);
	assert_true(refused(fx));
	/* A link in its place. */
	snprintf(other, sizeof(other), "%s/elsewhere", fx->tmp);
	assert_int_equal(rename(path, other), 0);
	assert_int_equal(chmod(other, 0600), 0);
	assert_int_equal(symlink(other, path), 0);
	assert_true(refused(fx));
	assert_int_equal(unlink(path), 0);
	close(open_claims(fx));
	/* A directory others may change. */
	assert_int_equal(chmod(fx->dir, 0777), 0);
	assert_true(refused(fx));
	assert_int_equal(chmod(fx->dir, 0755), 0);
	close(open_claims(fx));
	/* The directory a link (to ours, even). */
	snprintf(other, sizeof(other), "%s/realdir", fx->tmp);
	assert_int_equal(rename(fx->dir, other), 0);
	assert_int_equal(symlink(other, fx->dir), 0);
	assert_true(refused(fx));
	assert_int_equal(unlink(fx->dir), 0);
	assert_int_equal(rename(other, fx->dir), 0);
	/* Its parent open to all (not sticky): anyone could swap it. */
	assert_int_equal(chmod(fx->tmp, 0777), 0);
	assert_true(refused(fx));
	assert_int_equal(chmod(fx->tmp, 01777), 0);
	close(open_claims(fx));
	assert_int_equal(chmod(fx->tmp, 0700), 0);
	/* Another user's directory (only root can make one here). */
	if (geteuid() == 0) {
		assert_int_equal(chown(fx->dir, 65534, 65534), 0);
		assert_true(refused(fx));
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(a_claim_is_one_holders_and_ends_with_it),
		T(concurrent_picks_never_share_a_uid),
		T(pick_skips_a_uid_a_process_runs),
		T(picks_start_anywhere),
		T(claims_file_only_we_can_reach),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
