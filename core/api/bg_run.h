/*
 * sg_bg_run: what a runner (fcgi/runner.c) does with its gateway: take
 * the next background job it may (oldest first, within each key's
 * background.max_per_key) and run it to its end, its events and snapshot
 * kept as it goes (bg_out.h), its ending written (completed, failed,
 * incomplete, or cancelled when a cancel stopped it).
 */
#ifndef SG_BG_RUN_H
#define SG_BG_RUN_H

#include <signal.h>
#include <stdint.h>

struct sg_gw;

/*
 * One job, for the runner pid started at start (sg_proc_start): 1 when
 * one ran, 0 when none was waiting, -1 when the store failed. Once
 * *hurry is set (the gateway stops: its signal handler's), the job under
 * way has what is left of server.grace, less SG_BG_WRAP_UP_MS to write
 * its ending, and is then stopped and ended failed, "The gateway stopped
 * ...": never left in_progress for a restart to find.
 */
#define SG_BG_WRAP_UP_MS	3000
/* The error of a job the gateway stopped (or whose runner died). */
#define SG_BG_STOPPED	"The gateway stopped while this response was in " \
			"progress."
int	 sg_bg_run(struct sg_gw *, int64_t pid, int64_t start,
	    const volatile sig_atomic_t *hurry);

#endif
