/*
 * sg_outf: the files code writes. After a round of code, what the
 * sandbox's /mnt/data holds that is new or changed since it was last
 * looked at is copied out into files.dir as the tenant's container files
 * (cfile_..., source "assistant"), so they stay downloadable after the
 * sandbox is gone, for the files' retention. What was last seen is kept
 * with the sandbox's row, so a session's later requests copy only what
 * changed.
 */
#ifndef SG_OUTFILES_H
#define SG_OUTFILES_H

#include "../state/sandbox.h"

/*
 * Copy out what changed in sandbox id of tenant. *note (new, or NULL
 * when nothing changed) tells the model which files there are and how to
 * link them. Never fails a request: a provider or store failure is
 * logged, and what could not be copied is tried again next round.
 */
void	 sg_outf_collect(struct sg_sbx_env *, const char *tenant,
	    const char *id, char **note);
/*
 * The files at paths (n of them) were just put into sandbox id by the
 * gateway: they are the user's, so remember them as seen, not as the
 * code's. Best effort, as sg_outf_collect.
 */
void	 sg_outf_seen(struct sg_sbx_env *, const char *tenant, const char *id,
	    const char *const *paths, int n);

#endif
