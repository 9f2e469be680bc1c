#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "../config/keyset.h"
#include "../../lib/util.h"
#include "../../store/store.h"

/* The token of "Bearer <token>", or NULL. */
static const char *
bearer(const char *authorization)
{
	const char *p;

	if (authorization == NULL || strncasecmp(authorization, "Bearer", 6) != 0)
		return NULL;
	p = authorization + 6;
	if (*p != ' ' && *p != '\t')
		return NULL;
	while (*p == ' ' || *p == '\t')
		p++;
	return *p != '\0' ? p : NULL;
}

static int
missing(struct sg_error *err)
{
	return sg_error_set(err, 401, "invalid_request_error", NULL, NULL,
	    "You didn't provide an API key. You need to provide your API key "
	    "in an Authorization header using Bearer auth (i.e. "
	    "Authorization: Bearer YOUR_KEY).");
}

/* The admin key whose hash is hash, compared with every one. */
static const struct sg_cfg_key *
admin_of(const struct sg_cfg *cfg, const char *hash)
{
	const struct sg_cfg_key *found = NULL;
	size_t i;

	for (i = 0; i < cfg->auth.nadmins; i++) {
		const struct sg_cfg_key *k = &cfg->auth.admins[i];

		if (k->sha256[0] != '\0' && sg_secret_eq(k->sha256, hash, 64) &&
		    found == NULL)
			found = k;
	}
	return found;
}

static int
admin_only(struct sg_error *err)
{
	return sg_error_set(err, 403, "invalid_request_error", NULL, NULL,
	    "This is an admin key: it reads usage and manages keys, and is "
	    "never used for model or sandbox requests. Use a project key.");
}

/* A key of the store, with its settings: 0, -1 when there is none, -2
 * with a 503 in err. */
static int
stored(struct sg_store *store, const char *hash, struct sg_auth *who,
    struct sg_error *err)
{
	struct sg_store_key k;
	char buf[8192], why[256];
	int rc;

	rc = sg_store_key_get(store, hash, &k, buf, sizeof(buf));
	if (rc == SG_STORE_NOTFOUND)
		return -1;
	if (rc != SG_STORE_OK) {
		sg_error_set(err, 503, "server_error", NULL, NULL, "The key store "
		    "is unavailable: %s", sg_store_errmsg(store));
		return -2;
	}
	sg_copy(who->name, sizeof(who->name), k.name);
	if (k.settings == NULL)
		return 0;
	/* Settings the API wrote, checked then: a broken row is the
	 * store's fault, and the key must not slip its limits. */
	if (sg_keyset_parse(k.settings, &who->own, why, sizeof(why)) == -1) {
		sg_error_set(err, 503, "server_error", NULL, NULL, "The key's "
		    "stored settings cannot be read: %s", why);
		return -2;
	}
	who->own.name = who->name;
	who->key = &who->own;
	return 0;
}

/* The tenant key whose hash is hash, from the config's keys (every one
 * compared, match or not: timing says nothing), then the store's: 0 and
 * who filled, or -1 with a 401 (or a 503 from the store) in err. */
static int
tenant_of(const struct sg_cfg *cfg, struct sg_store *store, const char *hash,
    struct sg_auth *who, struct sg_error *err)
{
	size_t i;
	int rc = -1;

	for (i = 0; i < cfg->auth.nkeys; i++) {
		const struct sg_cfg_key *k = &cfg->auth.keys[i];

		if (k->sha256[0] != '\0' && sg_secret_eq(k->sha256, hash, 64) &&
		    rc == -1) {
			sg_copy(who->name, sizeof(who->name), k->name);
			who->key = k;
			rc = 0;
		}
	}
	if (rc == -1 && store != NULL)
		rc = stored(store, hash, who, err);
	if (rc == -2)
		return -1;
	if (rc == -1)
		return sg_error_set(err, 401, "invalid_request_error",
		    "invalid_api_key", NULL, "Incorrect API key provided. "
		    "Ask the operator of this gateway for a valid key.");
	memcpy(who->tenant, hash, sizeof(who->tenant));
	return 0;
}

int
sg_auth_check(const struct sg_cfg *cfg, struct sg_store *store,
    const char *authorization, struct sg_auth *who, struct sg_error *err)
{
	const char *token = bearer(authorization);
	char hash[65];

	who->key = NULL;
	sg_keyset_init(&who->own);
	if (cfg->auth.allow_anonymous) {
		snprintf(who->name, sizeof(who->name), "anonymous");
		snprintf(who->tenant, sizeof(who->tenant), "anonymous");
		return 0;
	}
	if (token == NULL)
		return missing(err);
	sg_sha256_hex(token, strlen(token), hash);
	if (admin_of(cfg, hash) != NULL)
		return admin_only(err);
	return tenant_of(cfg, store, hash, who, err);
}

int
sg_auth_admin(const struct sg_cfg *cfg, struct sg_store *store,
    const char *authorization, struct sg_auth *who, struct sg_error *err)
{
	const char *token = bearer(authorization);
	const struct sg_cfg_key *k;
	char hash[65];

	who->key = NULL;
	who->tenant[0] = '\0';
	sg_keyset_init(&who->own);
	if (token == NULL)
		return missing(err);
	sg_sha256_hex(token, strlen(token), hash);
	if ((k = admin_of(cfg, hash)) != NULL) {
		sg_copy(who->name, sizeof(who->name), k->name);
		return 0;
	}
	/* A tenant's key is known but not allowed here (403); anything
	 * else is no key at all (401). Anonymous access is for tenant
	 * routes only: the admin API always wants an admin key. */
	if (tenant_of(cfg, store, hash, who, err) == -1)
		return -1;
	return sg_error_set(err, 403, "invalid_request_error", NULL, NULL,
	    "You have insufficient permissions for this operation: it needs "
	    "an admin key (auth.admin_keys), and this is a project key.");
}

int
sg_auth_tenant(const struct sg_cfg *cfg, struct sg_store *store,
    const char *tenant, struct sg_auth *who, struct sg_error *err)
{
	who->key = NULL;
	sg_keyset_init(&who->own);
	if (strcmp(tenant, "anonymous") == 0 && cfg->auth.allow_anonymous) {
		snprintf(who->name, sizeof(who->name), "anonymous");
		snprintf(who->tenant, sizeof(who->tenant), "anonymous");
		return 0;
	}
	if (strlen(tenant) != 64 || strspn(tenant, "0123456789abcdef") != 64)
		return sg_error_set(err, 401, "invalid_request_error",
		    "invalid_api_key", NULL, "Incorrect API key provided. "
		    "Ask the operator of this gateway for a valid key.");
	return tenant_of(cfg, store, tenant, who, err);
}

void
sg_auth_clear(struct sg_auth *who)
{
	sg_keyset_clear(&who->own);
	who->key = NULL;
}
