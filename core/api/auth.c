#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
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

int
sg_auth_check(const struct sg_cfg *cfg, struct sg_store *store,
    const char *authorization, struct sg_auth *who, struct sg_error *err)
{
	const char *token = bearer(authorization);
	char hash[65];
	size_t i;
	int rc;

	who->key = NULL;
	if (cfg->auth.allow_anonymous) {
		snprintf(who->name, sizeof(who->name), "anonymous");
		snprintf(who->tenant, sizeof(who->tenant), "anonymous");
		return 0;
	}
	if (token == NULL)
		return missing(err);
	sg_sha256_hex(token, strlen(token), hash);
	/* Compare every configured key, match or not: timing says nothing. */
	rc = -1;
	for (i = 0; i < cfg->auth.nkeys; i++) {
		const struct sg_cfg_key *k = &cfg->auth.keys[i];

		if (k->sha256[0] != '\0' && sg_secret_eq(k->sha256, hash, 64) &&
		    rc == -1) {
			snprintf(who->name, sizeof(who->name), "%s", k->name);
			who->key = k;
			rc = 0;
		}
	}
	if (rc == -1 && store != NULL) {
		rc = sg_store_key_find(store, hash, who->name, sizeof(who->name));
		if (rc == SG_STORE_ERROR)
			return sg_error_set(err, 503, "server_error", NULL, NULL,
			    "The key store is unavailable: %s",
			    sg_store_errmsg(store));
		rc = rc == SG_STORE_OK ? 0 : -1;
	}
	if (rc == -1)
		return sg_error_set(err, 401, "invalid_request_error",
		    "invalid_api_key", NULL, "Incorrect API key provided. "
		    "Ask the operator of this gateway for a valid key.");
	memcpy(who->tenant, hash, sizeof(who->tenant));
	return 0;
}
