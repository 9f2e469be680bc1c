/*
 * sg_store: what every process of sandgate shares, in a SQLite file (one
 * box) or a PostgreSQL database (one box or several). The only module
 * with SQL. One struct sg_store per process, opened after fork and never
 * carried across one.
 */
#ifndef SG_STORE_H
#define SG_STORE_H

#include <stddef.h>
#include <stdint.h>

enum sg_store_rc {
	SG_STORE_OK = 0,
	SG_STORE_ERROR = -1,	/* see sg_store_errmsg */
	SG_STORE_NOTFOUND = -2,
	SG_STORE_EXISTS = -3,
	SG_STORE_FULL = -4,	/* a key's kept sandboxes are all running */
	SG_STORE_THEIRS = -5,	/* it exists, but another tenant's */
};

#define SG_STORE_SCHEMA_VERSION 14
#define SG_STORE_BOX_MAX 63	/* bytes of a box name */

struct sg_store;

struct sg_store_key {
	int64_t		 id;
	const char	*name;		/* borrowed, valid during the callback */
	const char	*sha256;	/* hex */
	int64_t		 created_at;	/* unix seconds */
	int64_t		 revoked_at;	/* 0 while active */
	const char	*settings;	/* JSON of its limits and tools, or
					 * NULL: the defaults; borrowed */
};

/*
 * New: *out. where is a PostgreSQL URL ("postgresql://...", see
 * sg_store_is_url) or a SQLite file's path (created, mode 0600, when
 * missing). A PostgreSQL server that does not answer yet is not an error
 * here: every call fails as down (sg_store_down) until it answers.
 */
int	 sg_store_open(const char *where, struct sg_store **out, char *err,
	    size_t errsz);
int	 sg_store_is_url(const char *where);
void	 sg_store_close(struct sg_store *);
/* Borrowed message of the last failure: it names no host, socket or
 * user, so it may reach a client. */
const char *sg_store_errmsg(const struct sg_store *);
/* The box the rows this process makes are recorded for (default: the
 * host's name); borrowed. */
int	 sg_store_set_box(struct sg_store *, const char *box);
const char *sg_store_box(const struct sg_store *);
/* Whether several boxes may share this store (PostgreSQL). A SQLite
 * file lives on one box: every row is that box's, whatever the host was
 * called when it was made. */
int	 sg_store_shared(const struct sg_store *);

/* Bring the schema to SG_STORE_SCHEMA_VERSION; refuses a newer one. */
int	 sg_store_migrate(struct sg_store *);
int	 sg_store_version(struct sg_store *, int *version);
/*
 * Copy every row of from into to (`sandgate migrate --to`), both brought
 * to this schema first; to must hold no rows. Rows from before boxes are
 * given from's box. One transaction on to: all or nothing. The count of
 * rows copied into *rows; a failure's message is from's.
 */
int	 sg_store_copy(struct sg_store *from, struct sg_store *to,
	    int64_t *rows);
/* A cheap query: 0 when the store answers. */
int	 sg_store_ping(struct sg_store *);
/* SQLite: the WAL copied into the database as far as it can be without
 * waiting (the reaper's, off every request's path). PostgreSQL: nothing. */
int	 sg_store_checkpoint(struct sg_store *);

/* EXISTS when an active key already has this name. */
int	 sg_store_key_add(struct sg_store *, const char *name,
	    const char *sha256_hex);
/*
 * The active key of this hash with its settings, in one query: OK with
 * *out filled, its strings (name, sha256, settings or NULL) copied into
 * buf[bufsz] and pointing there; NOTFOUND (revoked keys are not found);
 * or ERROR when buf cannot hold them (the message says how much would).
 */
int	 sg_store_key_get(struct sg_store *, const char *sha256_hex,
	    struct sg_store_key *out, char *buf, size_t bufsz);
/* Set the active key name's settings (JSON text, opaque here; NULL: the
 * defaults): OK or NOTFOUND. */
int	 sg_store_key_settings(struct sg_store *, const char *name,
	    const char *settings_json);
/* NOTFOUND when no active key has this name. */
int	 sg_store_key_revoke(struct sg_store *, const char *name);
/* Calls fn for every key, oldest first; stops early when fn returns -1. */
int	 sg_store_key_list(struct sg_store *,
	    int (*fn)(void *, const struct sg_store_key *), void *arg);

/* A sandbox row. Recorded before the provider is called ("creating"),
 * completed with the handle ("ready"), removed only once the provider
 * confirmed the delete: what a dead responder left can always be found. */
/* Why a sandbox lives: for one request, or kept across requests. */
enum sg_sbx_kind {
	SG_SBX_EPHEMERAL = 0,	/* deleted when its request ends */
	SG_SBX_SESSION = 1,	/* metadata.session_id's */
	SG_SBX_CONVERSATION = 2,	/* kept for a conversation's follow-ups */
	SG_SBX_EXPLICIT = 3,	/* POST /v1/sandboxes */
	SG_SBX_WARM = 4,	/* made ahead, no tenant's yet (pool.c) */
};

struct sg_store_sbx {
	char	 id[48];		/* cntr_... */
	char	 tenant[65];
	char	 tool[64];
	char	 state[16];		/* creating, ready, deleting */
	char	*handle;		/* provider JSON, owned; NULL while creating */
	int	 kind;			/* enum sg_sbx_kind */
	int64_t	 owner_pid, owner_start;
	int64_t	 created_at, last_used_at, expires_at;	/* unix seconds */
	int64_t	 runner_pid, runner_start, runner_until; /* a run, else 0 */
	char	 name[257];		/* a container's name, or "" */
	char	 pool_gen[24];		/* warm: its tool's settings, hashed */
	char	 box[SG_STORE_BOX_MAX + 1];	/* whose processes own it; ""
					 * for rows from before boxes */
	char	*seen;			/* its files when last listed ("{}":
					 * none), owned; read by
					 * sg_store_sbx_run_take only (or
					 * out of memory), else NULL */
};

/* An ephemeral sandbox's row. */
int	 sg_store_sbx_begin(struct sg_store *, const char *id,
	    const char *tenant, const char *tool, int64_t owner_pid,
	    int64_t owner_start, int64_t expires_at);
/*
 * A row of any kind. A kept kind counts against the tenant's max_kept
 * kept sandboxes: when this one makes one too many, the least recently
 * used kept one that runs nothing is marked "deleting" in the same
 * transaction and its id copied to victim (else victim is ""): the
 * caller deletes it at its provider. FULL (nothing recorded) when every
 * one of them is running.
 */
int	 sg_store_sbx_begin_kind(struct sg_store *, const char *id,
	    const char *tenant, const char *tool, int kind, int64_t owner_pid,
	    int64_t owner_start, int64_t expires_at, int max_kept,
	    char victim[48]);
/* A run in sandbox id by process pid (started at start, see
 * sg_proc_start), until the unix second until: OK, or EXISTS while
 * another run (its deadline not passed) holds it. */
int	 sg_store_sbx_run_begin(struct sg_store *, const char *id, int64_t pid,
	    int64_t start, int64_t until);
int	 sg_store_sbx_run_end(struct sg_store *, const char *id, int64_t pid);
/* sg_store_sbx_run_begin that reads the row (seen too) in the same
 * statement: OK with it in *out (sg_store_sbx_clear), or EXISTS. */
int	 sg_store_sbx_run_take(struct sg_store *, const char *id, int64_t pid,
	    int64_t start, int64_t until, struct sg_store_sbx *out);
/* The end of pid's run, in one transaction (one round trip): its lock
 * released as sg_store_sbx_run_end does; with expires_at > 0 the sandbox
 * touched as sg_store_sbx_touch does (held or not); with session_id, the
 * session touched as sg_store_sess_touch does. With later, on PostgreSQL,
 * these writes go with the store's next statement (in its round trip)
 * or at sg_store_flush, whichever comes first. */
int	 sg_store_sbx_run_done(struct sg_store *, const char *id, int64_t pid,
	    int64_t expires_at, const char *tenant, const char *session_id,
	    int later);
/* Send the writes deferred so far (PostgreSQL): before the process waits
 * on anything (a request's end), so no lock they release is held on. */
int	 sg_store_flush(struct sg_store *);
/* Take the run away from process pid started at start (it died). */
int	 sg_store_sbx_run_drop(struct sg_store *, const char *id, int64_t pid,
	    int64_t start);
/* Hand a sandbox to the reaper as an ephemeral one of a dead owner. */
int	 sg_store_sbx_abandon(struct sg_store *, const char *id);
/* Calls fn for each tool and kind with the count of their live rows. */
int	 sg_store_sbx_counts(struct sg_store *, int (*fn)(void *, const char *tool,
	    int kind, int64_t n), void *arg);
int	 sg_store_sbx_ready(struct sg_store *, const char *id,
	    const char *handle, int64_t expires_at);
int	 sg_store_sbx_touch(struct sg_store *, const char *id,
	    int64_t expires_at);
int	 sg_store_sbx_mark(struct sg_store *, const char *id, const char *state);
/*
 * Before a sandbox is deleted at its provider, its row is the deleter's:
 * "deleting" (one still "creating" stays so: its creator is gone), in a
 * transaction as a claim's (sg_store_pool_take), and only while it is as
 * seen when read (state and run): OK, or NOTFOUND when it was claimed,
 * used or removed since, and is not to be deleted on that reading.
 */
int	 sg_store_sbx_claim_delete(struct sg_store *,
	    const struct sg_store_sbx *seen);
/*
 * pool.c: warm sandboxes, made ahead of need for a tool by the reaper
 * (kind SG_SBX_WARM, tenant "", state creating then "warm"), gen naming
 * the tool's settings they were made with. Each box keeps its own: they
 * are counted and claimed on the box (sg_store_set_box) that made them.
 */
int	 sg_store_pool_begin(struct sg_store *, const char *id,
	    const char *tool, const char *gen, int64_t owner_pid,
	    int64_t owner_start, int64_t expires_at);
/* Made: handle and its life at the provider. OK, or NOTFOUND when the
 * row went meanwhile (the caller deletes the sandbox). */
int	 sg_store_pool_ready(struct sg_store *, const char *id,
	    const char *handle, int64_t expires_at);
/*
 * One transaction: the oldest warm sandbox of tool and gen becomes row id
 * (recorded, still "creating"): its handle and life move there, ready,
 * and the warm row goes, so no two claims get the same. OK, or NOTFOUND
 * when there is none (then row id is unchanged).
 */
int	 sg_store_pool_take(struct sg_store *, const char *id,
	    const char *tool, const char *gen);
/* Warm sandboxes of tool and gen, made or being made, into *n. */
int	 sg_store_pool_count(struct sg_store *, const char *tool,
	    const char *gen, int *n);
/* Extend a warm sandbox's life (after its keepalive). */
int	 sg_store_pool_touch(struct sg_store *, const char *id,
	    int64_t expires_at);
/* What sandbox id's files were when last listed (new string in *seen,
 * NULL when never): OK or NOTFOUND. */
int	 sg_store_sbx_seen(struct sg_store *, const char *id, char **seen);
int	 sg_store_sbx_set_seen(struct sg_store *, const char *id,
	    const char *seen);
int	 sg_store_sbx_name(struct sg_store *, const char *id, const char *name);
int	 sg_store_sbx_remove(struct sg_store *, const char *id);
/* OK and *out filled (free with sg_store_sbx_clear), or NOTFOUND. With a
 * tenant, only that tenant's sandbox is found. */
int	 sg_store_sbx_get(struct sg_store *, const char *id, const char *tenant,
	    struct sg_store_sbx *out);
void	 sg_store_sbx_clear(struct sg_store_sbx *);
/* Every sandbox of tenant (NULL: all), oldest first. */
int	 sg_store_sbx_list(struct sg_store *, const char *tenant,
	    int (*fn)(void *, const struct sg_store_sbx *), void *arg);

/*
 * Stored responses (responses.c): sandgate's resp_ ids, per tenant, with
 * the upstream's last response id behind each (so previous_response_id
 * works through the loop), the container its code ran in, and, for the
 * answers kept as OpenAI keeps them, the answer and its items.
 */
struct sg_store_item {
	const char	*id;		/* the id the client knows; NULL: none */
	const char	*item;		/* JSON text, as the client saw it */
	const char	*upstream;	/* JSON array text: what the upstream
					 * saw for it */
};
struct sg_store_resp {
	const char	*id, *tenant, *model;
	const char	*upstream_id;	/* "" when none came */
	const char	*sandbox_id;	/* NULL: no code ran */
	const char	*prev;		/* the response it continued, or NULL */
	const char	*body;		/* the answer without its output (JSON
					 * text); NULL: not retrievable */
	const char	*pending;	/* JSON array: outputs the upstream
					 * waits for, or NULL */
};
/* Record a response and its items in one transaction. */
int	 sg_store_resp_save(struct sg_store *, const struct sg_store_resp *,
	    const struct sg_store_item *in, size_t nin,
	    const struct sg_store_item *out, size_t nout);
/* What the old callers keep: no body, no items. */
int	 sg_store_resp_put(struct sg_store *, const char *id, const char *tenant,
	    const char *upstream_id, const char *model, const char *sandbox_id);
/* OK and the upstream id copied (and the container, "" when none, when
 * sandbox_id is not NULL), or NOTFOUND (another tenant's too). */
int	 sg_store_resp_get(struct sg_store *, const char *id, const char *tenant,
	    char *upstream_id, size_t sz, char *sandbox_id, size_t sbxsz);
/* A stored response read back; every string new (NULL when the column
 * is), freed by sg_store_resp_clear. */
struct sg_store_resp_row {
	char		*id, *model, *upstream_id, *sandbox_id, *prev, *body,
			*pending;
	int64_t		 created_at;
};
/* OK, or NOTFOUND (another tenant's too). */
int	 sg_store_resp_load(struct sg_store *, const char *id,
	    const char *tenant, struct sg_store_resp_row *out);
void	 sg_store_resp_clear(struct sg_store_resp_row *);
/* Each input (output 0) or output (1) item of a response, in order; fn
 * returns -1 to stop. The strings are borrowed for the call. */
int	 sg_store_resp_items(struct sg_store *, const char *id, int output,
	    int (*fn)(void *, const struct sg_store_item *), void *arg);
/*
 * The newest item the client knows as item_id: OK with *item and
 * *upstream (new strings) when it is tenant's; THEIRS when only another
 * tenant has one; NOTFOUND when nobody does.
 */
int	 sg_store_item_find(struct sg_store *, const char *item_id,
	    const char *tenant, char **item, char **upstream);
/* OK, or NOTFOUND (another tenant's too). Its items go with it. */
int	 sg_store_resp_delete(struct sg_store *, const char *id,
	    const char *tenant);
/* Remove at most limit responses created before (unix seconds). */
int	 sg_store_resp_prune(struct sg_store *, int64_t before, int limit,
	    int *removed);

/* A session: a tenant's metadata.session_id and its sandbox. */
#define SG_STORE_SESSION_MAX 256	/* bytes of a session id */
struct sg_store_sess {
	char	 tenant[65];
	char	 session_id[SG_STORE_SESSION_MAX + 1];
	char	 sandbox_id[48];	/* "" when its sandbox went */
	char	 tool[64], state[16];	/* the sandbox's, or "" */
	int64_t	 created_at, last_used_at, expires_at;
};
/*
 * The session's sandbox, in one transaction: OK with its id in sbx (its
 * state may still be "creating": the caller waits for it); or, when the
 * session has none (new, or its sandbox went), a row begun for new_id as
 * sg_store_sbx_begin_kind does (kind session, victim too), *created set,
 * and *lost set when the session had a sandbox before. So requests racing
 * on one new session record exactly one sandbox.
 */
int	 sg_store_sess_claim(struct sg_store *, const char *tenant,
	    const char *session_id, const char *new_id, const char *tool,
	    int64_t owner_pid, int64_t owner_start, int64_t expires_at,
	    int max_kept, char sbx[48], char victim[48], int *created,
	    int *lost);
/* Detach sandbox sbx from the session (a dead creator's): the next claim
 * makes another. */
int	 sg_store_sess_detach(struct sg_store *, const char *tenant,
	    const char *session_id, const char *sbx);
int	 sg_store_sess_touch(struct sg_store *, const char *tenant,
	    const char *session_id);
/* The session's sandbox (its id, tool and state in *out, "" when it has
 * none), the session touched with it in one round trip (on PostgreSQL
 * the touch is deferred, see sg_store_sbx_run_done): OK, or NOTFOUND (no
 * such session, nothing written). */
int	 sg_store_sess_use(struct sg_store *, const char *tenant,
	    const char *session_id, struct sg_store_sess *out);
/* sg_store_sess_use without the touch. */
int	 sg_store_sess_get(struct sg_store *, const char *tenant,
	    const char *session_id, struct sg_store_sess *out);
/* Every session of tenant (NULL: all), oldest first. */
int	 sg_store_sess_list(struct sg_store *, const char *tenant,
	    int (*fn)(void *, const struct sg_store_sess *), void *arg);
int	 sg_store_sess_remove(struct sg_store *, const char *tenant,
	    const char *session_id);
/* Sessions without a sandbox, idle since before: NULL-sandbox rows are
 * kept a while only to tell the next request its state was lost. */
int	 sg_store_sess_prune(struct sg_store *, int64_t before, int *removed);

/* A lease: name held by holder until a unix second. OK when taken (or
 * already ours, then extended), EXISTS while another holds it. */
int	 sg_store_lease(struct sg_store *, const char *name, const char *holder,
	    int secs);
int	 sg_store_lease_release(struct sg_store *, const char *name,
	    const char *holder);

/*
 * The response ids an upstream (its api_base) gave that were relayed to a
 * tenant unchanged (the passthrough), so previous_response_id can be
 * bound to the key that received the id. Kept 30 days; each put prunes a
 * few expired rows.
 */
int	 sg_store_relayed_put(struct sg_store *, const char *upstream_id,
	    const char *tenant, const char *upstream);
/* OK when upstream_id was relayed to tenant from upstream (and is not
 * expired), else NOTFOUND. */
int	 sg_store_relayed_has(struct sg_store *, const char *upstream_id,
	    const char *tenant, const char *upstream);

/*
 * files.c: files uploaded with /v1/files (container_id "") and container
 * files (cfile_...). The bytes are the caller's to keep (files.dir); a
 * row first reserves the key's quota while its bytes are written.
 */
struct sg_store_file {
	char	 id[48];
	char	 tenant[65];
	char	 container_id[48];	/* "" for /v1/files */
	char	 filename[256];
	char	 path[1024];		/* in the container, or "" */
	char	 purpose[32];		/* /v1/files, or "" */
	char	 source[16];		/* container files: user, assistant */
	char	 state[16];		/* uploading, ready */
	int64_t	 bytes;			/* reserved while uploading */
	int64_t	 owner_pid, owner_start;	/* the writer, while uploading */
	char	 box[SG_STORE_BOX_MAX + 1];	/* where its bytes were written
					 * (sg_store_file_begin sets it) */
	int64_t	 created_at, expires_at;
};
/* What a tenant's files may hold together, and (FULL) what they held. */
struct sg_store_quota {
	int64_t	 max_bytes, max_files;
	int64_t	 bytes, files;		/* uploading ones included */
};
/* Record f (state uploading, f->bytes reserved) unless the tenant's files
 * with it would pass q's bytes or files, counted in the same transaction
 * (two racing for the last of a quota cannot both have it): OK, FULL (q's
 * bytes and files then say which), or EXISTS (its id). */
int	 sg_store_file_begin(struct sg_store *, const struct sg_store_file *f,
	    struct sg_store_quota *q);
/* f's bytes are whole: state ready, with f's bytes (their real size),
 * filename, purpose, path and expiry (known only once the body was
 * read). */
int	 sg_store_file_ready(struct sg_store *, const struct sg_store_file *f);
/* The file id of tenant (NULL: any) in container (NULL: a /v1/files
 * file, "*": any), ready or not: OK or NOTFOUND. */
int	 sg_store_file_get(struct sg_store *, const char *id,
	    const char *tenant, const char *container, struct sg_store_file *);
/*
 * tenant's ready files in container (NULL: /v1/files ones, purpose when
 * not NULL), newest first unless asc, after the file id after (NULL: from
 * the start), at most limit: fn for each; *more set when there are more.
 * NOTFOUND when after is not one of them.
 */
int	 sg_store_file_list(struct sg_store *, const char *tenant,
	    const char *container, const char *purpose, const char *after,
	    int limit, int asc, int (*fn)(void *, const struct sg_store_file *),
	    void *arg, int *more);
/* tenant's newest ready file at path in container, other than except
 * (NULL: any): OK or NOTFOUND. */
int	 sg_store_file_at(struct sg_store *, const char *tenant,
	    const char *container, const char *path, const char *except,
	    struct sg_store_file *);
/* OK, or NOTFOUND (another tenant's too). */
int	 sg_store_file_remove(struct sg_store *, const char *id,
	    const char *tenant);
/* fn for at most limit files expired before now or still uploading for a
 * writer fn may find dead (the caller decides; it removes what it took).
 * On a shared store, only this box's files, and another box's expired
 * before forget (that box sweeps no more). */
int	 sg_store_file_due(struct sg_store *, int64_t now, int64_t forget,
	    int limit,
	    int (*fn)(void *, const struct sg_store_file *), void *arg);

/* backup.c: a consistent copy of the store, taken while it serves, at
 * path (replaced only once the copy is whole and checks): OK with the
 * pages copied, or ERROR with err. */
int	 sg_store_backup(struct sg_store *, const char *path, int *pages,
	    char *err, size_t errsz);

#endif
