/*
 * sg_sbx: sandboxes owned by a tenant, over the providers and the store.
 * Every sandbox is recorded before the provider is called and removed
 * only when the provider confirmed the delete (design §4), so none is
 * ever lost track of.
 */
#ifndef SG_SANDBOX_H
#define SG_SANDBOX_H

#include <jansson.h>

#include "../config/config.h"
#include "../http/error.h"
#include "../http/http.h"
#include "../../providers/provider.h"
#include "../../store/store.h"

struct sg_sbx_env {
	const struct sg_cfg	*cfg;
	struct sg_store		*store;
	struct sg_prov		*prov;
	/* The caller's key: the sandbox tools it may use (auth.keys[].tools).
	 * NULL: any (the CLI, the reaper, a store key). */
	const struct sg_cfg_key	*key;
};

/* sg_sbx_run: the sandbox stopped answering and was deleted (err says
 * so); a session or conversation may go on in a new one. */
#define SG_SBX_GONE (-2)

/*
 * Whether env's key may use tool (NULL: interception.sandbox_tool): 0, or
 * -1 with 403 tool_not_allowed naming param. Every create and every open
 * of a sandbox asks, so no route reaches one its key may not use (a
 * reload can take a tool away from a key that made sandboxes of it);
 * routes ask first too, to refuse before anything else.
 */
int	 sg_sbx_may_use(const struct sg_sbx_env *, const char *tool,
	    const char *param, struct sg_error *);
/*
 * Create a sandbox of tool (NULL: interception.sandbox_tool) for tenant,
 * of kind (enum sg_sbx_kind). An ephemeral one lives request_timeout +
 * 60 s at the provider; a kept one sessions.ttl + 60 s, extended on use,
 * and counts against the key's sessions.max_per_key: one too many evicts
 * the least recently used that runs nothing (429 when all run). *out
 * filled on success (sg_store_sbx_clear it).
 */
int	 sg_sbx_create(struct sg_sbx_env *, const char *tenant, const char *tool,
	    int kind, struct sg_store_sbx *out, struct sg_error *);
/*
 * The sandbox of the tenant's session (metadata.session_id; an MCP
 * session's), of tool (NULL: interception.sandbox_tool): the one it has,
 * or a new one made now.
 * Requests racing on a new session make one, the others wait for it (as
 * long as their request may); a creator that died is replaced. *lost set
 * when the session had a sandbox that is gone: its state is lost.
 */
int	 sg_sbx_session(struct sg_sbx_env *, const char *tenant,
	    const char *tool, const char *session_id, char id[48], int *lost,
	    struct sg_error *);
/* Run code in the tenant's sandbox id, one run at a time across
 * responders. timeout_s 0: exec_timeout. keep: the sandbox lives on (its
 * life slides with use); else it only has to outlast this run. New
 * CodeExecutionResult in *result. 0, -1 with err, or SG_SBX_GONE. */
int	 sg_sbx_run(struct sg_sbx_env *, const char *tenant, const char *id,
	    const char *code, int timeout_s, int keep, json_t **result,
	    struct sg_error *);
/* sg_sbx_run for session session_id (NULL: none), which a successful run
 * touches with its own writes (in their round trip). */
int	 sg_sbx_run_in(struct sg_sbx_env *, const char *tenant, const char *id,
	    const char *session_id, const char *code, int timeout_s, int keep,
	    json_t **result, struct sg_error *);
/* A run that ran leaves its sandbox's row, as the run's own writes left
 * it (with what its files were as the run's lock read them), for the
 * next sg_sbx_open of that sandbox in the process (the look at its files
 * right after: no read of the store); any other run, lock or delete, or
 * this, forgets it. */
void	 sg_sbx_forget_run(void);
int	 sg_sbx_delete(struct sg_sbx_env *, const char *tenant, const char *id,
	    struct sg_error *);
/* sbx_after.c: a request's own sandbox deleted once its answer is out:
 * sg_sbx_delete then, on its own time (after: the request's list, from
 * sg_req; NULL: now, in the request's). A failure leaves the row for the
 * reaper, as any failed delete does. */
void	 sg_sbx_delete_after(struct sg_sbx_env *, struct sg_after *after,
	    const char *tenant, const char *id);
/* Hold sandbox id for secs, as a run does: one holder at a time across
 * responders (a dead holder's claim dropped). 0, or -1 with err when the
 * request's time ran out waiting. */
int	 sg_sbx_lock(struct sg_sbx_env *, const char *id, int secs,
	    struct sg_error *);
void	 sg_sbx_unlock(struct sg_sbx_env *, const char *id);
/* The tenant's ready sandbox id: its row, tool, ops and parsed handle
 * (new: json_decref it, sg_store_sbx_clear the row). 0, or -1 with err. */
int	 sg_sbx_open(struct sg_sbx_env *, const char *tenant, const char *id,
	    struct sg_store_sbx *row, const struct sg_tool **t,
	    const struct sg_provider_ops **ops, json_t **handle,
	    struct sg_error *);
/* A provider's failure as the error a client gets (never a credential). */
int	 sg_sbx_prov_error(const struct sg_tool *, const struct sg_prov_error *,
	    const char *id, struct sg_error *);
/* Where OpenAI's code interpreter keeps its files, in the sandbox: the
 * code's working directory, where given files go and written ones are
 * taken from. */
#define SG_SBX_DATA_DIR	"/mnt/data"
/* sbx_files.c: a file's path in the sandbox, SG_SBX_DATA_DIR/filename
 * (filename a plain name, checked at upload). */
void	 sg_sbx_data_path(const char *filename, char *out, size_t sz);
/* sbx_files.c: whether a path under the data dir (relative to it) is one
 * listings and collections leave out: a hidden file or directory
 * (.ipynb_checkpoints, .cache...), a Python cache. */
int	 sg_sbx_hidden(const char *rel);
/* Put file f (tenant's, ready) into sandbox id at its data path. 0, -1
 * with err, or SG_SBX_GONE. */
int	 sg_sbx_put_file(struct sg_sbx_env *, const char *tenant, const char *id,
	    const struct sg_store_file *f, struct sg_error *);
/* Delete a row's sandbox at its provider (a row without a handle has
 * nothing there) and remove the row, once the row is claimed for it
 * (sg_store_sbx_claim_delete). The row's tool must still be configured.
 * 0; 1 when the row was claimed, used or removed since it was read
 * (nothing done); or -1 with why. */
int	 sg_sbx_destroy_row(struct sg_sbx_env *, const struct sg_store_sbx *,
	    char *why, size_t whysz);
/* Whether the process that recorded row, on this box, is gone (another
 * box's never is: it cannot be seen from here). */
int	 sg_sbx_owner_dead(const struct sg_sbx_env *,
	    const struct sg_store_sbx *);
/* Whether a run holds row now (its responder alive, its deadline not
 * passed). */
int	 sg_sbx_running(const struct sg_sbx_env *, const struct sg_store_sbx *);
/* sbx_box.c: whether row was made on this box (store.box), or before
 * boxes, or the store is one box's (SQLite); and the 421 for a local
 * sandbox asked for on another box. */
int	 sg_sbx_ours(const struct sg_sbx_env *, const struct sg_store_sbx *);
int	 sg_sbx_other_box(struct sg_sbx_env *, const struct sg_store_sbx *,
	    struct sg_error *);
/* Seconds after its life passed that another box's row (a local
 * sandbox, a file) is forgotten here: that box's own sweep would have
 * removed it long since, so the box is gone. */
#define SG_BOX_GONE_AFTER	3600

/*
 * One sweep of the reaper (core/state/reap.c), under the store's "reaper"
 * lease so two sweepers never run at once (*skipped then). Deleted at
 * their provider, rows removed: sandboxes whose life there passed; kept
 * ones (sessions, conversations, explicit) idle past sessions.ttl and
 * running nothing; a request's own whose responder is gone; evictions
 * whose delete failed; this box's local ones whose sandboxd is gone.
 * Sessions left without a sandbox for a day go. With only_tool, every
 * sandbox of that tool instead (a tool removed from the config: env->cfg
 * is the old one, with its settings). Counts in *deleted and *failed (a
 * row claimed by another meanwhile is neither). 0, or -1 when the store
 * failed.
 */
int	 sg_sbx_reap(struct sg_sbx_env *, const char *only_tool, int *deleted,
	    int *failed, int *skipped);

/* sbx_prov.c: the configured tool named name and its provider's ops in
 * *ops; NULL with err (400: no such tool; 500: a provider this build
 * does not have). */
const struct sg_tool *sg_sbx_tool(struct sg_sbx_env *, const char *name,
	    const struct sg_provider_ops **ops, struct sg_error *);
/*
 * The provider's create for row id (recorded "creating"), of kind (for
 * the log) and life: OK with *handle (new) and the log's fields in extra
 * (counted as created); else the failure logged and counted, the row
 * removed (or left for the reaper when the provider may have made it),
 * and the provider's rc with pe.
 */
int	 sg_sbx_make(struct sg_sbx_env *, const struct sg_tool *,
	    const struct sg_provider_ops *, const char *id, int kind, int life,
	    json_t **handle, struct sg_prov_error *pe, char *extra, size_t sz);
/* One logfmt line for a sandbox made or deleted: event=EVENT id= tool=
 * and extra ("" or more fields, without spaces in their values). */
void	 sg_sbx_log(const char *event, const char *id, const char *tool,
	    const char *extra);
/* New reference: the sandbox object clients see. */
json_t	*sg_sbx_json(const struct sg_cfg *, const struct sg_store_sbx *);
/* "ephemeral", "session", "conversation" or "explicit" for a row's kind;
 * NULL for any other value. */
const char *sg_sbx_kind_name(int kind);

#endif
