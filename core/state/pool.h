/*
 * sg_pool: warm sandboxes. A sandbox tool with warm = N has N sandboxes
 * made ahead by the reaper and recorded in the store (kind warm, no
 * tenant). A create of any kind (a request's own, a session's, POST
 * /v1/sandboxes and /v1/containers) first claims one of them, in one
 * store transaction, and falls back to a cold create when there is none:
 * it never waits for a refill. The reaper refills what was claimed, keeps
 * the warm ones alive at their provider and checks them (one that fails is
 * deleted and replaced), drains those made with settings the config no
 * longer has, and drains its own when it stops (a stop or a reload).
 */
#ifndef SG_POOL_H
#define SG_POOL_H

#include "sandbox.h"

#define SG_POOL_CHECK_S	10	/* how often the reaper checks them */

/* The settings a warm sandbox of t is made with, hashed: one made with
 * others (a reload changed them) is never handed out. */
void	 sg_pool_gen(const struct sg_tool *t, char gen[24]);
/* A warm sandbox of t becomes row id (recorded "creating"): 0, or -1
 * when there is none (row id unchanged). Counts a hit or a miss. */
int	 sg_pool_take(struct sg_sbx_env *, const struct sg_tool *,
	    const char *id);
/* Whether any tool of cfg keeps warm sandboxes. */
int	 sg_pool_wanted(const struct sg_cfg *);
/* The reaper's parts: make what each tool's pool misses (a tool whose
 * creates fail waits, longer each time); check and extend the warm ones,
 * and delete those no tool wants any more; at its end, delete its own. */
void	 sg_pool_fill(struct sg_sbx_env *);
void	 sg_pool_tend(struct sg_sbx_env *);
void	 sg_pool_drain(struct sg_sbx_env *);

#endif
