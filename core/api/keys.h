/*
 * sg_keys: the gateway's client keys as one list, whoever manages them:
 * the config file's (auth.keys, read-only here) and the store's (made,
 * changed and revoked by the admin API, org_keys.c, and by `sandgate
 * keys`). One way to make a key, one set of name rules, one reading of a
 * key's settings and of what it spent, for both.
 *
 * A key is named publicly by its id, "key_" and 24 hex digits
 * (sg_use_key_id of its hash): the ledger's key_id, the same for config
 * and store keys. A store key's settings JSON (keyset.h) also keeps its
 * redacted form ("redacted_value"), made when the key was: the store
 * keeps only the key's hash.
 */
#ifndef SG_KEYS_H
#define SG_KEYS_H

#include <stdint.h>

#include <jansson.h>

#include "../config/config.h"
#include "../http/error.h"

struct sg_store;

#define SG_KEYS_SECRET_MAX	80	/* "sk-sg-" and 48 hex digits, NUL */

/* A key as the list shows it. */
struct sg_keys_ent {
	char			 id[32];	/* key_... */
	char			 name[64];
	char			 tenant[65];	/* the key's hash; "" for a config
						 * key whose secret is not set */
	char			 redacted[40];
	int			 config;	/* from the config file */
	int64_t			 created_at;	/* unix s */
	/* Its own settings: the config's key (borrowed), or own. */
	const struct sg_cfg_key	*key;
	struct sg_cfg_key	 own;
};

/* What a key spent in its budget period (its effective one). */
struct sg_keys_spend {
	int			 period;	/* enum sg_period */
	int64_t			 period_start;	/* unix s */
	int64_t			 cost;		/* nano-USD */
	int64_t			 tokens, sandbox_ms, requests;
	int64_t			 last_ms;	/* newest use ever; 0: none */
};

/*
 * Every active key: the config's in file order, then the store's, oldest
 * first. *out (new, sg_keys_free) and *n. 0, or -1 with a 503 in err.
 */
int	 sg_keys_all(const struct sg_cfg *, struct sg_store *,
	    struct sg_keys_ent **out, size_t *n, struct sg_error *);
void	 sg_keys_free(struct sg_keys_ent *, size_t n);
/* The active key whose id (by_name 0) or name (by_name 1) is what:
 * 0 and *ent (sg_keys_clear), or -1 with a 404 or a 503 in err. */
int	 sg_keys_find(const struct sg_cfg *, struct sg_store *,
	    const char *what, int by_name, struct sg_keys_ent *,
	    struct sg_error *);
void	 sg_keys_clear(struct sg_keys_ent *);

/*
 * Make a store key: body (borrowed) is {"name": ..., and any of the
 * settings keyset.h reads}. The secret into secret[SG_KEYS_SECRET_MAX],
 * shown once by the caller; *ent filled (sg_keys_clear). 0, or -1 with
 * err: 400 (a bad member, param set), 409 (the name is taken), 503.
 */
int	 sg_keys_create(const struct sg_cfg *, struct sg_store *,
	    const json_t *body, char *secret, struct sg_keys_ent *,
	    struct sg_error *);
/*
 * Change a store key's settings: the members of patch (borrowed) replace
 * its own, a null one clears it. *ent updated. 0, or -1 with err: 400 (a
 * bad member; a config key's, which the config file sets), 503.
 */
int	 sg_keys_update(const struct sg_cfg *, struct sg_store *,
	    struct sg_keys_ent *, const json_t *patch, struct sg_error *);
/* Revoke a store key: 0, or -1 with err (400 for a config key, 404 when
 * it is gone already, 503). */
int	 sg_keys_revoke(const struct sg_cfg *, struct sg_store *,
	    const struct sg_keys_ent *, struct sg_error *);

/* What ent spent in its budget period holding now_ms: 0, or -1 with a
 * 503 in err. */
int	 sg_keys_spend(const struct sg_cfg *, struct sg_store *,
	    const struct sg_keys_ent *, int64_t now_ms, struct sg_keys_spend *,
	    struct sg_error *);
/* New reference: {"rpm",...} limits after auth.limits, with
 * max_concurrent (0: none) and the tools it may use. */
json_t	*sg_keys_effective(const struct sg_cfg *, const struct sg_keys_ent *);
/* The name of a period ("day", "week", "month"). */
const char *sg_keys_period_name(int period);

#endif
