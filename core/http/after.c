/*
 * The after-the-answer list (after.h): jobs with their own copy of their
 * argument, so what a request added outlives the request's stack.
 */
#include <stdlib.h>
#include <string.h>

#include "after.h"

struct sg_after_job {
	sg_after_fn	 fn;
	void		*arg;		/* owned */
};

void
sg_after_add(struct sg_after *a, sg_after_fn fn, const void *arg,
    size_t argsz)
{
	struct sg_after_job *grown;
	void *copy;

	if (a == NULL) {
		fn(arg);
		return;
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 4;

		if ((grown = realloc(a->jobs, cap * sizeof(*grown))) == NULL) {
			fn(arg);
			return;
		}
		a->jobs = grown;
		a->cap = cap;
	}
	if ((copy = malloc(argsz > 0 ? argsz : 1)) == NULL) {
		fn(arg);
		return;
	}
	memcpy(copy, arg, argsz);
	a->jobs[a->n].fn = fn;
	a->jobs[a->n].arg = copy;
	a->n++;
}

void
sg_after_first(struct sg_after *a, sg_after_fn fn, const void *arg,
    size_t argsz)
{
	struct sg_after_job job;
	size_t n = a != NULL ? a->n : 0;

	sg_after_add(a, fn, arg, argsz);
	/* Not kept (done at once), or nothing waits before it. */
	if (a == NULL || a->n == n || n == a->next)
		return;
	job = a->jobs[n];
	memmove(a->jobs + a->next + 1, a->jobs + a->next,
	    (n - a->next) * sizeof(*a->jobs));
	a->jobs[a->next] = job;
}

size_t
sg_after_pending(const struct sg_after *a)
{
	return a != NULL ? a->n : 0;
}

void
sg_after_run(struct sg_after *a)
{
	size_t i;

	/* By index: a job that adds one may move the array. */
	while (a->next < a->n) {
		i = a->next++;
		a->jobs[i].fn(a->jobs[i].arg);
	}
	for (i = 0; i < a->n; i++)
		free(a->jobs[i].arg);
	free(a->jobs);
	a->jobs = NULL;
	a->n = a->cap = a->next = 0;
}
