/*
 * sg_bg_run: what a runner (fcgi/runner.c) does with its gateway: take
 * the next background job it may (oldest first, within each key's
 * background.max_per_key) and run it to its end, its events and snapshot
 * kept as it goes (bg_out.h), its ending written (completed, failed,
 * incomplete, or cancelled when a cancel stopped it).
 */
#ifndef SG_BG_RUN_H
#define SG_BG_RUN_H

#include <stdint.h>

struct sg_gw;

/* One job, for the runner pid started at start (sg_proc_start): 1 when
 * one ran, 0 when none was waiting, -1 when the store failed. */
int	 sg_bg_run(struct sg_gw *, int64_t pid, int64_t start);

#endif
