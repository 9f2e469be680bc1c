/*
 * Which box a sandbox's row belongs to (store.box), and what a box can
 * tell of a row's processes: only its own are visible to it.
 */
#include <string.h>
#include <time.h>

#include "sandbox.h"
#include "../../lib/util.h"

int
sg_sbx_ours(const struct sg_sbx_env *env, const struct sg_store_sbx *row)
{
	return !sg_store_shared(env->store) || row->box[0] == '\0' ||
	    strcmp(row->box, sg_store_box(env->store)) == 0;
}

/* Whether the process that recorded a row is gone. Another box's
 * processes cannot be seen from here: they count as alive, and their
 * rows go when their life at the provider has passed. */
int
sg_sbx_owner_dead(const struct sg_sbx_env *env, const struct sg_store_sbx *row)
{
	if (!sg_sbx_ours(env, row))
		return 0;
	return row->owner_pid <= 0 || sg_proc_start((int)row->owner_pid) !=
	    row->owner_start;
}

/* A local sandbox lives on one box: asked for on another, the client
 * learns which box holds it rather than a sandbox that seems gone. */
int
sg_sbx_other_box(struct sg_sbx_env *env, const struct sg_store_sbx *row,
    struct sg_error *err)
{
	return sg_error_set(err, 421, "invalid_request_error",
	    "sandbox_on_another_box", "id", "Container with id '%s' is a local "
	    "sandbox on box '%s', and this request reached box '%s'. Route "
	    "its requests to that box (by key or session), or use an e2b or "
	    "OpenSandbox tool when several boxes serve one store.", row->id,
	    row->box, sg_store_box(env->store));
}

int
sg_sbx_running(const struct sg_sbx_env *env, const struct sg_store_sbx *row)
{
	/* A run holds it until its deadline, unless its responder (on
	 * this box) is gone. */
	if (row->runner_until < (int64_t)time(NULL) || row->runner_pid <= 0)
		return 0;
	return !sg_sbx_ours(env, row) || sg_proc_start((int)row->runner_pid) ==
	    row->runner_start;
}
