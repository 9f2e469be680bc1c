/*
 * sg_after: work a request leaves for after its answer, such as deleting
 * the sandbox it made, so the client has its answer without waiting for
 * it. Whoever answers requests (a responder, a runner) makes the list,
 * hands it in struct sg_req, and runs it once the answer is out, before
 * it takes another request. A request without a list (after NULL) has its
 * work done as it is added, where it would have been done anyway.
 */
#ifndef SG_AFTER_H
#define SG_AFTER_H

#include <stddef.h>

/* One job: arg is the list's copy of what was added, valid for the call. */
typedef void (*sg_after_fn)(const void *arg);

struct sg_after_job;

struct sg_after {
	struct sg_after_job	*jobs;
	size_t			 n, cap;
	size_t			 next;	/* the first not yet begun */
};

#define SG_AFTER_INIT	{ NULL, 0, 0, 0 }

/* fn with a copy of arg's argsz bytes, later; at once when after is NULL
 * or there is no memory to keep it (it is never lost). */
void	 sg_after_add(struct sg_after *, sg_after_fn fn, const void *arg,
	    size_t argsz);
/* As sg_after_add, but run before the jobs waiting (those not yet run,
 * when a job adds it): for quick work a client may look for at once (a
 * request's trace), not to queue behind a slow one (a sandbox's delete). */
void	 sg_after_first(struct sg_after *, sg_after_fn fn, const void *arg,
	    size_t argsz);
/* How many jobs wait. */
size_t	 sg_after_pending(const struct sg_after *);
/* Each job once, in the order added (a job may add more: they run too),
 * then the list is empty and holds no memory. */
void	 sg_after_run(struct sg_after *);

#endif
