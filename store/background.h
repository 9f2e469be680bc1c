/*
 * Background responses and the events of streamed ones (background.c):
 * what the responders, the runners and the reaper share. The JSON is
 * opaque text here; core decides what a body, a snapshot, an error or an
 * event is.
 *
 * A job (table bg) is a response asked for with background: its id is
 * the response's (resp_...), its tenant the key's. Its life:
 *
 *   queued --claim--> in_progress --finish--> completed, failed,
 *      |                   |                  incomplete or cancelled
 *      +--cancel--> cancelled  (in_progress: cancel asked, the runner
 *                               finishes it, as cancelled)
 *
 * Guarantees:
 * - A claim takes each job once: no two claimers, on any box, get the
 *   same job, and no tenant ever has more than max_per_key jobs
 *   in_progress through claims (claims run one at a time: SQLite's write
 *   lock; on PostgreSQL the claims' advisory lock, sg_st_begin). Among the
 *   queued jobs of tenants below their cap, the oldest goes first, so a
 *   key with many queued jobs holds at most max_per_key runners and the
 *   others' jobs pass it. A claim that finds nothing takes no lock.
 * - Only the runner holding a job changes it while it runs (snapshot,
 *   finish), and only while it is in_progress: a job failed by the
 *   reaper, or finished, stays as it ended. The runner is named by text
 *   "box:pid:start" (its box, pid and sg_proc_start), made by the claim.
 * - A terminal job never changes again (cancel leaves it, answering its
 *   status), until the prune removes it.
 * - The reaper lists the in_progress jobs whose runner is on its box
 *   (sg_store_bg_held), judges each runner's pid and start, and fails a
 *   dead one's job with sg_store_bg_finish(.., runner, "failed", ..): it
 *   acts only while that runner still holds the job, so a runner that
 *   finished meanwhile keeps its own ending.
 * - Another tenant's job is not found, for every call that takes a
 *   tenant (NULL: any tenant's, for the runners and the reaper).
 *
 * Events (table resp_events): the events of a streamed response, each
 * with its sequence_number (seq), so a stream can be replayed after any
 * point. An append is one transaction and skips a seq already there: a
 * batch retried after an error adds nothing twice. Events are kept per
 * tenant (a response that is still streaming has no stored row to say
 * whose it is) and pruned by the time they were added, a response's
 * events all at once.
 */
#ifndef SG_STORE_BACKGROUND_H
#define SG_STORE_BACKGROUND_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* Bytes of a runner's name, "box:pid:start", with its NUL. */
#define SG_STORE_BG_RUNNER_MAX	(SG_STORE_BOX_MAX + 2 * 21 + 2)

/* A job read back; its strings new (NULL when the column is), freed by
 * sg_store_bg_clear. */
struct sg_store_bg {
	char		 id[64];
	char		 tenant[65];
	char		 status[16];	/* queued, in_progress, completed,
					 * failed, incomplete, cancelled */
	char		 runner[SG_STORE_BG_RUNNER_MAX];	/* "" when
					 * none holds it */
	char		 box[SG_STORE_BOX_MAX + 1];	/* where it was asked
					 * for */
	char		*key_name;	/* the key's name, or NULL */
	char		*body;		/* the request as the client sent it */
	char		*snapshot;	/* the response so far, or NULL */
	char		*error;		/* JSON, or NULL */
	int		 cancel;	/* a cancel was asked */
	int64_t		 created_ms, started_ms, ended_ms;	/* unix ms;
					 * 0: not yet */
};

/* A new queued job: OK, or EXISTS (its id). created_ms: when it was
 * asked for (the response's created_at), unix ms. */
int	 sg_store_bg_add(struct sg_store *, const char *id, const char *tenant,
	    const char *key_name, const char *body, int64_t created_ms);
/*
 * Take the oldest queued job whose tenant has fewer than max_per_key
 * jobs in_progress (max_per_key 0: no cap) for the runner pid (started
 * at start, sg_proc_start) on this store's box: it becomes in_progress,
 * out filled with it (out->runner is the runner's name the other calls
 * take). OK, or NOTFOUND when no job can be taken now.
 */
int	 sg_store_bg_claim(struct sg_store *, int64_t pid, int64_t start,
	    int max_per_key, struct sg_store_bg *out);
/* OK and *out filled, or NOTFOUND (tenant NULL: any tenant's). */
int	 sg_store_bg_get(struct sg_store *, const char *id, const char *tenant,
	    struct sg_store_bg *out);
void	 sg_store_bg_clear(struct sg_store_bg *);
/* The response so far, by the runner holding it: OK, or NOTFOUND when
 * it is not in_progress in runner's hands (ended, or reaped). */
int	 sg_store_bg_snapshot(struct sg_store *, const char *id,
	    const char *runner, const char *snapshot);
/*
 * End it: status completed, failed, incomplete or cancelled (else
 * ERROR), with its last snapshot (NULL: the one set before) and error
 * (JSON or NULL); ended_ms now; no runner holds it after. Only while
 * runner holds it in_progress: OK, else NOTFOUND (nothing changed). The
 * runner ends its job so; the reaper fails a dead runner's so.
 */
int	 sg_store_bg_finish(struct sg_store *, const char *id,
	    const char *runner, const char *status, const char *snapshot,
	    const char *error);
/*
 * Ask to cancel it: a queued job is cancelled at once (ended now); an
 * in_progress one is marked, and its runner finishes it as cancelled; a
 * terminal one is left as it is. OK with the status after into
 * status[16] (the caller makes OpenAI's answer for a terminal one), or
 * NOTFOUND (tenant NULL: any tenant's).
 */
int	 sg_store_bg_cancel(struct sg_store *, const char *id,
	    const char *tenant, char status[16]);
/* For the runner's poll, one lookup by id: OK with *cancel 1 when a
 * cancel was asked, else 0; NOTFOUND when runner no longer holds it in
 * progress (reaped): the runner stops either way. */
int	 sg_store_bg_cancelled(struct sg_store *, const char *id,
	    const char *runner, int *cancel);
/* An in_progress job a runner of one box holds, as sg_store_bg_held
 * gives it; strings borrowed for the call. */
struct sg_store_bg_hold {
	const char	*id, *tenant, *runner;
	int64_t		 pid, start;	/* the runner's */
	int64_t		 started_ms;
};
/* Calls fn for each in_progress job whose runner is on box, oldest
 * first; fn returns -1 to stop. */
int	 sg_store_bg_held(struct sg_store *, const char *box,
	    int (*fn)(void *, const struct sg_store_bg_hold *), void *arg);
/* Fail every job in_progress since before started_before_ms (unix ms),
 * whatever box runs it, with error (JSON): a job past any runner's time
 * (its request's timeout) whose box is gone and cannot reap its own.
 * The count into *failed (may be NULL). */
int	 sg_store_bg_fail_overdue(struct sg_store *, int64_t started_before_ms,
	    const char *error, int *failed);
/* Remove a job, whatever its status (DELETE of the response): OK, or
 * NOTFOUND (tenant NULL: any tenant's). A runner holding it learns from
 * its next call (NOTFOUND) and stops; its events are not touched
 * (sg_store_ev_delete). */
int	 sg_store_bg_delete(struct sg_store *, const char *id,
	    const char *tenant);
/* The jobs queued and in_progress, of tenant (NULL: every tenant). */
int	 sg_store_bg_counts(struct sg_store *, const char *tenant,
	    int64_t *queued, int64_t *in_progress);
/* Remove at most limit terminal jobs ended before before_ms (unix ms). */
int	 sg_store_bg_prune(struct sg_store *, int64_t before_ms, int limit,
	    int *removed);

/* An event of a response: its sequence_number and its JSON text. */
struct sg_store_ev {
	int64_t		 seq;
	const char	*event;
};
/* Append n events of response id, tenant's, in one transaction; a seq
 * already kept is skipped. The count added into *added (may be NULL). */
int	 sg_store_ev_append(struct sg_store *, const char *id,
	    const char *tenant, const struct sg_store_ev *evs, size_t n,
	    int *added);
/* fn for each event of id with seq > after, in seq order, at most limit
 * (0: all); fn returns -1 to stop; the event is borrowed for the call.
 * tenant NULL: any tenant's. No events is OK (none called). */
int	 sg_store_ev_list(struct sg_store *, const char *id,
	    const char *tenant, int64_t after, int limit,
	    int (*fn)(void *, const struct sg_store_ev *), void *arg);
/* The last seq kept of id into *seq, -1 when none (tenant NULL: any). */
int	 sg_store_ev_last(struct sg_store *, const char *id,
	    const char *tenant, int64_t *seq);
/* Remove id's events (tenant NULL: any tenant's); the count into
 * *removed (may be NULL). */
int	 sg_store_ev_delete(struct sg_store *, const char *id,
	    const char *tenant, int *removed);
/* Remove the events of at most limit responses whose first event was
 * added before before_ms (unix ms), each response's all at once: a
 * replay never finds a gap. The events removed into *removed. */
int	 sg_store_ev_prune(struct sg_store *, int64_t before_ms, int limit,
	    int *removed);

#endif
