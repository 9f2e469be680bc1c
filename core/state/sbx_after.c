/*
 * A request's own sandbox deleted once its answer is out (sg_after). The
 * row stays, as for any delete, until the provider confirmed it: a delete
 * that fails leaves it for the reaper, and so does a responder killed
 * before it came to it (an ephemeral row whose owner died is due).
 */
#include <stdio.h>
#include <string.h>

#include "sandbox.h"
#include "../http/after.h"
#include "../../lib/log.h"
#include "../../lib/util.h"

/* What the delete needs once the request is gone: the responder's
 * config, store and provider client outlive it. */
struct later {
	const struct sg_cfg	*cfg;
	struct sg_store		*store;
	struct sg_prov		*prov;
	char			 tenant[65];	/* as sg_req's */
	char			 id[48];
};

static void
delete_later(const void *arg)
{
	const struct later *l = arg;
	/* No key: the tool was the key's when the sandbox was made, and a
	 * reload that took it away since must not keep it alive. */
	struct sg_sbx_env env = { l->cfg, l->store, l->prov, NULL };
	struct sg_prov *p = l->prov;
	int64_t deadline = p->deadline_ms;
	int (*stop)(void *) = p->stop;
	void *stop_arg = p->stop_arg;
	struct sg_error err;

	/* Its own time, as long as a request's, and no client to stop it:
	 * the answer went already, whether or not anyone took it. */
	p->deadline_ms = sg_now_ms() +
	    (int64_t)l->cfg->server.request_timeout * 1000;
	p->stop = NULL;
	p->stop_arg = NULL;
	if (sg_sbx_delete(&env, l->tenant, l->id, &err) == -1 &&
	    err.status >= 500)
		sg_log("sandgate: sandbox %s: delete after the answer failed "
		    "(%s); left for the reaper", l->id, err.message);
	p->deadline_ms = deadline;
	p->stop = stop;
	p->stop_arg = stop_arg;
}

void
sg_sbx_delete_after(struct sg_sbx_env *env, struct sg_after *after,
    const char *tenant, const char *id)
{
	struct sg_error ignored;
	struct later l;

	if (after == NULL) {
		sg_sbx_delete(env, tenant, id, &ignored);
		return;
	}
	memset(&l, 0, sizeof(l));
	l.cfg = env->cfg;
	l.store = env->store;
	l.prov = env->prov;
	sg_copy(l.tenant, sizeof(l.tenant), tenant);
	sg_copy(l.id, sizeof(l.id), id);
	sg_after_add(after, delete_later, &l, sizeof(l));
}
