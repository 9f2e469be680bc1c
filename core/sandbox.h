/*
 * sg_sbx: sandboxes owned by a tenant, over the providers and the store.
 * Every sandbox is recorded before the provider is called and removed
 * only when the provider confirmed the delete (design §4), so none is
 * ever lost track of.
 */
#ifndef SG_SANDBOX_H
#define SG_SANDBOX_H

#include <jansson.h>

#include "config.h"
#include "error.h"
#include "http.h"
#include "../providers/provider.h"
#include "../store/store.h"

struct sg_sbx_env {
	const struct sg_cfg	*cfg;
	struct sg_store		*store;
	struct sg_prov		*prov;
};

/* Create a sandbox of tool (NULL: interception.sandbox_tool) for tenant.
 * ephemeral: it lives request_timeout + 60 s at the provider, else
 * sessions.ttl + 60 s, extended on use. *out filled on success
 * (sg_store_sbx_clear it). */
int	 sg_sbx_create(struct sg_sbx_env *, const char *tenant, const char *tool,
	    int ephemeral, struct sg_store_sbx *out, struct sg_error *);
/* Run code in the tenant's sandbox id. timeout_s 0: exec_timeout. keep:
 * the sandbox lives on (its life slides with use); else it only has to
 * outlast this run. New CodeExecutionResult in *result. */
int	 sg_sbx_run(struct sg_sbx_env *, const char *tenant, const char *id,
	    const char *code, int timeout_s, int keep, json_t **result,
	    struct sg_error *);
int	 sg_sbx_delete(struct sg_sbx_env *, const char *tenant, const char *id,
	    struct sg_error *);
/*
 * One sweep: every sandbox whose life at its provider has passed (its
 * expires_at, with a minute's grace) is deleted there (gone counts) and
 * its row removed; a row still "creating" then has nothing left to
 * delete, since every sandbox is made with a bounded life. Counts in
 * *deleted and *failed. 0, or -1 when the store failed.
 */
int	 sg_sbx_reap(struct sg_sbx_env *, int *deleted, int *failed);

/* The direct sandbox routes (design §3.3): answer one request. The
 * route and its {id} come from the router. */
void	 sg_sbx_api(struct sg_sbx_env *, int route, const char *id,
	    const struct sg_req *, struct sg_out *);
/* New reference: the sandbox object clients see. */
json_t	*sg_sbx_json(const struct sg_cfg *, const struct sg_store_sbx *);

#endif
