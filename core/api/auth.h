/*
 * sg_auth: who is calling. A Bearer key is hashed (SHA-256) and looked up
 * among the config's keys, then the store's. The tenant is the key's hash:
 * sandboxes and sessions belong to it, so keys never see each other's.
 */
#ifndef SG_AUTH_H
#define SG_AUTH_H

#include "../config/config.h"
#include "../http/error.h"

struct sg_store;

struct sg_auth {
	char	name[64];	/* key name, for logs; never the key */
	char	tenant[65];	/* hex SHA-256 of the key, or "anonymous" */
	/* The key's limits and tools: borrowed from the config, or own's
	 * for a key of the store with settings; NULL for anonymous callers
	 * and a store key without settings (the auth defaults). */
	const struct sg_cfg_key *key;
	struct sg_cfg_key own;	/* a store key's settings, read */
};

/* 0 and *who filled (sg_auth_clear frees it), or -1 with a 401 (or a
 * 503 from the store) in err. store may be NULL (then only config keys
 * count). */
int	sg_auth_check(const struct sg_cfg *, struct sg_store *,
	    const char *authorization, struct sg_auth *who, struct sg_error *);

/*
 * The admin API's check: 0 and *who filled (name of the admin key, tenant
 * ""), or -1 with 401 (no key, or one nobody knows) or 403 (a tenant's
 * key: it works, but not here) in err.
 */
int	sg_auth_admin(const struct sg_cfg *, struct sg_store *,
	    const char *authorization, struct sg_auth *who, struct sg_error *);
/*
 * Who a tenant (a key's hash, or "anonymous") is now, for work done on
 * its behalf without its Authorization (a background response the key
 * asked for earlier): 0 and *who filled as sg_auth_check fills it, or -1
 * with a 401 in err when the key is gone (revoked, or taken out of the
 * config; anonymous access turned off), or a 503 from the store.
 */
int	sg_auth_tenant(const struct sg_cfg *, struct sg_store *,
	    const char *tenant, struct sg_auth *who, struct sg_error *);
void	sg_auth_clear(struct sg_auth *);

#endif
