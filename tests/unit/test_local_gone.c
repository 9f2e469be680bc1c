/*
 * providers/local.c sg_local_gone: whether a local sandbox is known gone
 * from its files alone, as the reaper asks of every local row of its box
 * (no sandboxd is asked). An instance directory base/mPID holds the
 * sandboxd's lock (held while it lives) and its kernels' sockets in
 * kernels/: here a test holds the lock itself (flock conflicts between
 * two opens of one file, even in one process), and a plain file stands
 * in for a socket.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/file.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../../providers/provider.h"
#include "testutil.h"

struct fx {
	char	 dir[64];
	char	 sock[160];	/* dir/m7/kernels/cntr_a.sock */
	int	 lock;		/* the "sandboxd"'s, held; -1 when not */
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char path[160];
	int fd;

	if (fx == NULL || tu_mkdtemp(fx->dir, sizeof(fx->dir)) == -1) {
		free(fx);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/m7", fx->dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/m7/kernels", fx->dir);
	mkdir(path, 0700);
	snprintf(fx->sock, sizeof(fx->sock), "%s/m7/kernels/cntr_a.sock",
	    fx->dir);
	if ((fd = open(fx->sock, O_WRONLY | O_CREAT, 0600)) != -1)
		close(fd);
	snprintf(path, sizeof(path), "%s/m7/lock", fx->dir);
	fx->lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fx->lock == -1 || flock(fx->lock, LOCK_EX | LOCK_NB) == -1) {
		tu_rmrf(fx->dir);
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

	if (fx->lock != -1)
		close(fx->lock);
	tu_rmrf(fx->dir);
	free(fx);
	return 0;
}

/* sg_local_gone of a handle whose socket is sock (NULL: none). */
static int
gone(const char *sock)
{
	json_t *h = sock != NULL ? json_pack("{s:s,s:s}", "id", "cntr_a",
	    "socket", sock) : json_pack("{s:s}", "id", "cntr_a");
	int rc;

	assert_non_null(h);
	rc = sg_local_gone(h);
	json_decref(h);
	return rc;
}

static void
lives_while_its_sandboxd_does(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(gone(fx->sock), 0);
}

/* The gateway stopped or restarted: its sandboxd's lock is free, the
 * kernels died with it, their sockets may still be there. */
static void
gone_with_its_sandboxd(void **state)
{
	struct fx *fx = *state;

	close(fx->lock);
	fx->lock = -1;
	assert_int_equal(gone(fx->sock), 1);
}

/* A sandboxd started again in the same place emptied kernels/. */
static void
gone_without_its_socket(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(unlink(fx->sock), 0);
	assert_int_equal(gone(fx->sock), 1);
}

/* A dead instance's directory removed by the next sandboxd's start. */
static void
gone_with_its_directory(void **state)
{
	struct fx *fx = *state;

	close(fx->lock);
	fx->lock = -1;
	tu_rmrf(fx->dir);
	assert_int_equal(gone(fx->sock), 1);
	mkdir(fx->dir, 0700);	/* for teardown */
}

/* What cannot be told is not gone: no socket in the handle, one outside
 * any kernels/ directory, an instance without a lock file. */
static void
unknown_is_not_gone(void **state)
{
	struct fx *fx = *state;
	char path[160], other[160];
	int fd;

	assert_int_equal(gone(NULL), 0);
	snprintf(other, sizeof(other), "%s/m7/stray.sock", fx->dir);
	if ((fd = open(other, O_WRONLY | O_CREAT, 0600)) != -1)
		close(fd);
	close(fx->lock);
	fx->lock = -1;
	assert_int_equal(gone(other), 0);
	snprintf(path, sizeof(path), "%s/m7/lock", fx->dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(gone(fx->sock), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(lives_while_its_sandboxd_does),
		T(gone_with_its_sandboxd),
		T(gone_without_its_socket),
		T(gone_with_its_directory),
		T(unknown_is_not_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
