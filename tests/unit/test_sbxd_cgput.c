/*
 * providers/sandboxd/sbxd_cgroup.c: a cgroup file written while a signal
 * is pending. cgroup v1's memory.limit_in_bytes answers EINTR then (the
 * kernel looks for a pending signal before anything else), which a CI run
 * met: a sandbox refused with "cannot set the sandbox's cgroup limits:
 * Interrupted system call". The Makefile links this test with ld's
 * --wrap=write: the library's writes reach __wrap_write below, which
 * fails the next `eintr` of them with EINTR, as the kernel would.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../providers/sandboxd/sbxd.h"

static int eintr;	/* writes still to interrupt */
static int calls;	/* writes seen */

ssize_t __real_write(int, const void *, size_t);
ssize_t __wrap_write(int, const void *, size_t);

ssize_t
__wrap_write(int fd, const void *buf, size_t n)
{
	calls++;
	if (eintr > 0) {
		eintr--;
		errno = EINTR;
		return -1;
	}
	return __real_write(fd, buf, n);
}

static char dir[64];

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sg-cgput-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	eintr = calls = 0;
	return 0;
}

static int
teardown(void **state)
{
	char f[128];

	(void)state;
	snprintf(f, sizeof(f), "%s/memory.limit_in_bytes", dir);
	unlink(f);
	rmdir(dir);
	return 0;
}

static void
content(const char *want)
{
	char buf[64];

	assert_true(sg_cg_get(dir, "memory.limit_in_bytes", buf,
	    sizeof(buf)) >= 0);
	assert_string_equal(buf, want);
}

static void
put_file(const char *text)
{
	char f[128];
	FILE *fp;

	snprintf(f, sizeof(f), "%s/memory.limit_in_bytes", dir);
	assert_non_null(fp = fopen(f, "w"));
	fputs(text, fp);
	fclose(fp);
}

/* A few interrupted writes: the limit is written all the same. */
static void
interrupted_write_is_retried(void **state)
{
	(void)state;
	put_file("0");
	eintr = 3;
	assert_int_equal(sg_cg_put(dir, "memory.limit_in_bytes", "268435456"),
	    0);
	assert_int_equal(calls, 4);
	content("268435456");
}

/* A write interrupted for good ends, with EINTR, not in a loop. */
static void
endless_interruption_is_bounded(void **state)
{
	(void)state;
	put_file("0");
	eintr = 1000000;
	assert_int_equal(sg_cg_put(dir, "memory.limit_in_bytes", "1"), -1);
	assert_int_equal(errno, EINTR);
	assert_true(calls < 1000);
	eintr = 0;
}

/* Any other failure is not tried again. */
static void
missing_file_fails_once(void **state)
{
	(void)state;
	assert_int_equal(sg_cg_put(dir, "memory.memsw.limit_in_bytes", "1"),
	    -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(calls, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(interrupted_write_is_retried,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(endless_interruption_is_bounded,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(missing_file_fails_once,
		    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
