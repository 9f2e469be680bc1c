/*
 * glibc's malloc keeps seven freed chunks of each size per thread (its
 * tcache) and sends the rest through its bins. A request frees a couple
 * of thousand small values at once (Jansson's trees, libcurl's headers,
 * SQLite's statements), so most of a responder's mallocs and frees took
 * the slow path: 16 % of a three-round request's instructions (callgrind,
 * bench/RESULTS.md). 100 deep takes nearly all of that gain (250 saves
 * 0.5 % more) for a third of the memory kept: a responder that ran code
 * rounds holds ~360 kB more (~900 kB at 250). How deep the cache is can
 * be set only by the GLIBC_TUNABLES variable, read once when a program
 * starts: the master sets it and executes itself again, once, before it
 * opens anything. An operator's own GLIBC_TUNABLES is kept, and a
 * tcache_count in it wins (no exec then). After the start the variable
 * is put back as it was, so nothing sandgate starts inherits it.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fcgi.h"

#define TCACHE		"glibc.malloc.tcache_count"
#define TCACHE_COUNT	TCACHE "=100"
/* What GLIBC_TUNABLES was before the exec: "" unset, "=value" set. */
#define WAS		"SANDGATE_GLIBC_TUNABLES_WAS"

/* GLIBC_TUNABLES with the deeper cache added to tunables (NULL: the
 * operator's says how deep already, or out of memory); new. */
static char *
tune_value(const char *tunables)
{
	const char *p, *colon;
	char *v;

	if (tunables == NULL || *tunables == '\0')
		return strdup(TCACHE_COUNT);
	for (p = tunables;; p = colon + 1) {
		if (strncmp(p, TCACHE "=", sizeof(TCACHE)) == 0)
			return NULL;
		if ((colon = strchr(p, ':')) == NULL)
			break;
	}
	if (asprintf(&v, "%s:%s", tunables, TCACHE_COUNT) == -1)
		return NULL;
	return v;
}

/* GLIBC_TUNABLES as WAS says it was, and WAS gone. */
static void
put_back(void)
{
	char *was = getenv(WAS);

	if (was == NULL)
		return;
	if (was[0] == '=')
		setenv("GLIBC_TUNABLES", was + 1, 1);
	else
		unsetenv("GLIBC_TUNABLES");
	unsetenv(WAS);
}

void
sg_tune_malloc(char *argv[])
{
	const char *old = getenv("GLIBC_TUNABLES");
	char exe[PATH_MAX], *value, *was;
	ssize_t n;

	if (getenv(WAS) != NULL) {	/* started again, tuned */
		put_back();
		return;
	}
	if ((value = tune_value(old)) == NULL)
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0 && asprintf(&was, "%s%s", old != NULL ? "=" : "",
	    old != NULL ? old : "") != -1) {
		exe[n] = '\0';
		setenv(WAS, was, 1);
		free(was);
		setenv("GLIBC_TUNABLES", value, 1);
		execv(exe, argv);
		/* Not started again (the binary replaced on disk): untuned. */
		put_back();
	}
	free(value);
}
