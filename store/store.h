/*
 * sg_store: the SQLite file shared by every process of sandgate. The only
 * module with SQL. One struct sg_store per process, opened after fork and
 * never carried across one. WAL, a busy timeout and short BEGIN IMMEDIATE
 * transactions let all responders write without SQLITE_BUSY escaping.
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
};

#define SG_STORE_SCHEMA_VERSION 2

struct sg_store;

struct sg_store_key {
	int64_t		 id;
	const char	*name;		/* borrowed, valid during the callback */
	const char	*sha256;	/* hex */
	int64_t		 created_at;	/* unix seconds */
	int64_t		 revoked_at;	/* 0 while active */
};

/* New: *out. Creates the file (mode 0600) when missing. */
int	 sg_store_open(const char *path, struct sg_store **out, char *err,
	    size_t errsz);
void	 sg_store_close(struct sg_store *);
/* Borrowed message of the last failure. */
const char *sg_store_errmsg(const struct sg_store *);

/* Bring the schema to SG_STORE_SCHEMA_VERSION; refuses a newer one. */
int	 sg_store_migrate(struct sg_store *);
int	 sg_store_version(struct sg_store *, int *version);
/* A cheap query: 0 when the store answers. */
int	 sg_store_ping(struct sg_store *);

/* EXISTS when an active key already has this name. */
int	 sg_store_key_add(struct sg_store *, const char *name,
	    const char *sha256_hex);
/* OK and the name copied into name[namesz], or NOTFOUND. Revoked keys
 * are not found. */
int	 sg_store_key_find(struct sg_store *, const char *sha256_hex,
	    char *name, size_t namesz);
/* NOTFOUND when no active key has this name. */
int	 sg_store_key_revoke(struct sg_store *, const char *name);
/* Calls fn for every key, oldest first; stops early when fn returns -1. */
int	 sg_store_key_list(struct sg_store *,
	    int (*fn)(void *, const struct sg_store_key *), void *arg);

/* A sandbox row. Recorded before the provider is called ("creating"),
 * completed with the handle ("ready"), removed only once the provider
 * confirmed the delete: what a dead responder left can always be found. */
struct sg_store_sbx {
	char	 id[48];		/* cntr_... */
	char	 tenant[65];
	char	 tool[64];
	char	 state[16];		/* creating, ready, deleting */
	char	*handle;		/* provider JSON, owned; NULL while creating */
	int64_t	 owner_pid, owner_start;
	int64_t	 created_at, last_used_at, expires_at;	/* unix seconds */
};

int	 sg_store_sbx_begin(struct sg_store *, const char *id,
	    const char *tenant, const char *tool, int64_t owner_pid,
	    int64_t owner_start, int64_t expires_at);
int	 sg_store_sbx_ready(struct sg_store *, const char *id,
	    const char *handle, int64_t expires_at);
int	 sg_store_sbx_touch(struct sg_store *, const char *id,
	    int64_t expires_at);
int	 sg_store_sbx_mark(struct sg_store *, const char *id, const char *state);
int	 sg_store_sbx_remove(struct sg_store *, const char *id);
/* OK and *out filled (free with sg_store_sbx_clear), or NOTFOUND. With a
 * tenant, only that tenant's sandbox is found. */
int	 sg_store_sbx_get(struct sg_store *, const char *id, const char *tenant,
	    struct sg_store_sbx *out);
void	 sg_store_sbx_clear(struct sg_store_sbx *);
/* Every sandbox of tenant (NULL: all), oldest first. */
int	 sg_store_sbx_list(struct sg_store *, const char *tenant,
	    int (*fn)(void *, const struct sg_store_sbx *), void *arg);

/* sandgate's resp_ ids and the upstream's last response id behind each,
 * so previous_response_id works through the loop. Per tenant. */
int	 sg_store_resp_put(struct sg_store *, const char *id, const char *tenant,
	    const char *upstream_id, const char *model);
/* OK and the upstream id copied, or NOTFOUND (another tenant's too). */
int	 sg_store_resp_get(struct sg_store *, const char *id, const char *tenant,
	    char *upstream_id, size_t sz);

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

#endif
