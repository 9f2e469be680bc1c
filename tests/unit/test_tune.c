/*
 * fcgi/tune: the master starts again once with a deeper malloc cache in
 * GLIBC_TUNABLES, unless the operator's says how deep; after the start
 * the variable is as it was. The start again is real: the test runs
 * itself as the child ("child" in argv) and the child reports what it
 * sees. fcgi/ is not part of libsandgate: tune.c is built in here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/wait.h>

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../fcgi/tune.c"

static void
value_added_or_left(void **state)
{
	char *v;

	(void)state;
	assert_string_equal(v = tune_value(NULL), TCACHE_COUNT);
	free(v);
	assert_string_equal(v = tune_value(""), TCACHE_COUNT);
	free(v);
	assert_string_equal(v = tune_value("glibc.malloc.mxfast=0"),
	    "glibc.malloc.mxfast=0:" TCACHE_COUNT);
	free(v);
	/* A name that only begins like it is another tunable. */
	assert_string_equal(v = tune_value("glibc.malloc.tcache_countx=1"),
	    "glibc.malloc.tcache_countx=1:" TCACHE_COUNT);
	free(v);
	assert_null(tune_value("glibc.malloc.tcache_count=7"));
	assert_null(tune_value("a=1:glibc.malloc.tcache_count=7:b=2"));
	assert_null(tune_value("a=1:glibc.malloc.tcache_count=0"));
}

/* Bytes in malloc's fast bins after 100 small chunks freed: 0 when the
 * cache took them all (or when malloc is not glibc's: ASan, valgrind). */
static size_t
spilled(void)
{
	void *p[100];
	int i;

	for (i = 0; i < 100; i++)
		p[i] = malloc(32);
	for (i = 0; i < 100; i++)
		free(p[i]);
	return mallinfo2().fsmblks;
}

/* The child: tuned as the master is, then what it sees, as its status:
 * 1 GLIBC_TUNABLES not as it was, 2 the marker left, 3 spilled. */
static int
child(char *argv[])
{
	const char *want = argv[2];
	const char *now;

	sg_tune_malloc(argv);
	now = getenv("GLIBC_TUNABLES");
	if (strcmp(want, "-") == 0 ? now != NULL : now == NULL ||
	    strcmp(now, want) != 0)
		return 1;
	if (getenv(WAS) != NULL)
		return 2;
	return spilled() > 0 ? 3 : 0;
}

/* The child's status, run with GLIBC_TUNABLES tunables (NULL: unset). */
static int
run_child(const char *self, const char *tunables)
{
	char *argv[] = { (char *)self, "child",
	    (char *)(tunables != NULL ? tunables : "-"), NULL };
	int status;
	pid_t pid;

	if ((pid = fork()) == 0) {
		if (tunables != NULL)
			setenv("GLIBC_TUNABLES", tunables, 1);
		else
			unsetenv("GLIBC_TUNABLES");
		unsetenv(WAS);
		execv(self, argv);
		_exit(100);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static char self[4096];

static void
started_again_tuned(void **state)
{
	/* The operator's depth: no start again, the fast bins used (unless
	 * malloc is not glibc's here, when only the variables are told). */
	int plain = run_child(self, "glibc.malloc.tcache_count=7");

	(void)state;
	assert_true(plain == 3 || plain == 0);
	assert_int_equal(run_child(self, "glibc.malloc.mxfast=64"), 0);
	assert_int_equal(run_child(self, NULL), 0);
	if (plain == 0)
		skip();
}

int
main(int argc, char *argv[])
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(value_added_or_left),
		cmocka_unit_test(started_again_tuned),
	};
	ssize_t n;

	if (argc == 3 && strcmp(argv[1], "child") == 0)
		return child(argv);
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		return 1;
	self[n] = '\0';
	return cmocka_run_group_tests(tests, NULL, NULL);
}
