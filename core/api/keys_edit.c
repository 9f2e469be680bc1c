/*
 * Making, changing and revoking store keys (keys.h), over HTTP and from
 * the command line alike: the name rules, the settings a key may have,
 * checked as keyset.h reads them, and the secret, made here only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys_int.h"
#include "../config/keyset.h"
#include "../state/ledger.h"
#include "../../lib/log.h"
#include "../../lib/util.h"
#include "../../store/store.h"

#define NAME_MAX_BYTES	63

static const char *const settings[] = { "rpm", "tpm", "budget",
	"budget_period", "sandbox_seconds", "max_concurrent", "tools", NULL };

static int
is_setting(const char *name)
{
	size_t i;

	for (i = 0; settings[i] != NULL; i++)
		if (strcmp(settings[i], name) == 0)
			return 1;
	return 0;
}

/* Every member of o is a setting (or "name" when name_ok): 0, or -1
 * with OpenAI's unknown_parameter 400. */
static int
known_members(const json_t *o, int name_ok, struct sg_error *err)
{
	/* err->param must outlive the call: one request at a time. */
	static char param[64];
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v) {
		if (is_setting(k) || (name_ok && strcmp(k, "name") == 0))
			continue;
		sg_copy(param, sizeof(param), k);
		if (strcmp(k, "name") == 0)
			return sg_error_invalid(err, "name", "invalid_value", "A "
			    "key's name cannot be changed: create a new key and "
			    "revoke this one.");
		return sg_error_invalid(err, param, "unknown_parameter",
		    "Unknown parameter: '%.60s'.", k);
	}
	return 0;
}

/* Every tool k names is one of the config's sandbox tools. */
static int
tools_known(const struct sg_cfg *cfg, const struct sg_cfg_key *k,
    struct sg_error *err)
{
	size_t i, j;

	for (i = 0; i < k->ntools; i++) {
		for (j = 0; j < cfg->ntools; j++)
			if (strcmp(cfg->tools[j].name, k->tools[i]) == 0)
				break;
		if (j == cfg->ntools)
			return sg_error_invalid(err, "tools", "invalid_value",
			    "Invalid 'tools': there is no sandbox tool named "
			    "'%.63s' (sandbox_tools in the config).",
			    k->tools[i]);
	}
	return 0;
}

/*
 * The settings of old (borrowed) with patch's members over them (null:
 * cleared), checked as keyset.h reads them and against the config's
 * tools: *k (sg_keyset_clear) and the stored text in *text (new), with
 * redacted kept in it when given. 0, or -1 with a 400 (param set).
 */
static int
merge(const struct sg_cfg *cfg, const struct sg_cfg_key *old,
    const json_t *patch, const char *redacted, struct sg_cfg_key *k,
    char **text, struct sg_error *err)
{
	const char *name, *param;
	json_t *o, *v, *norm;
	char why[256];

	o = old != NULL ? sg_keyset_json(old) : json_object();
	json_object_foreach((json_t *)patch, name, v)
		if (is_setting(name)) {
			if (json_is_null(v))
				json_object_del(o, name);
			else
				json_object_set(o, name, v);
		}
	sg_keyset_init(k);
	if (sg_keyset_read(o, k, why, sizeof(why), &param) == -1 ||
	    tools_known(cfg, k, err) == -1) {
		if (param != NULL)
			sg_error_invalid(err, param, "invalid_value", "%s", why);
		json_decref(o);
		sg_keyset_clear(k);
		return -1;
	}
	json_decref(o);
	norm = sg_keyset_json(k);
	if (redacted != NULL)
		json_object_set_new(norm, "redacted_value", json_string(redacted));
	*text = json_dumps(norm, JSON_COMPACT);
	json_decref(norm);
	if (*text == NULL) {
		sg_keyset_clear(k);
		return sg_error_server(err, 500, "Out of memory.");
	}
	return 0;
}

/* ---- making, changing, revoking ------------------------------------ */

/* The name rules (the command line's too): 1 to 63 bytes of UTF-8, no
 * control character (it is printed in terminals and logs), and not the
 * name of a key of the config file. */
static int
name_ok(const struct sg_cfg *cfg, const json_t *v, struct sg_error *err)
{
	const unsigned char *s;
	size_t i, len, n;

	if (v == NULL || json_is_null(v))
		return sg_error_invalid(err, "name", "missing_required_parameter",
		    "Missing required parameter: 'name'.");
	if (!json_is_string(v))
		return sg_error_invalid(err, "name", "invalid_type", "Invalid "
		    "type for 'name': expected a string.");
	s = (const unsigned char *)json_string_value(v);
	len = json_string_length(v);
	if (len == 0 || len > NAME_MAX_BYTES || strlen((const char *)s) != len)
		return sg_error_invalid(err, "name", "invalid_value", "Invalid "
		    "'name': a key's name has 1 to %d bytes.", NAME_MAX_BYTES);
	for (i = 0; i < len; i += n)
		if ((n = sg_utf8_len(s + i, len - i)) == 0 || s[i] < 0x20 ||
		    s[i] == 0x7f || (s[i] == 0xc2 && s[i + 1] < 0xa0))
			return sg_error_invalid(err, "name", "invalid_value",
			    "Invalid 'name': a key's name is UTF-8 text without "
			    "control characters.");
	for (i = 0; i < cfg->auth.nkeys; i++)
		if (strcmp(cfg->auth.keys[i].name, (const char *)s) == 0)
			return sg_error_set(err, 409, "invalid_request_error",
			    "already_exists", "name", "%s is a key of the config "
			    "file already: choose another name.", s);
	return 0;
}

/* A new secret, its hash and its redacted form ("sk-sg-...abcd", as
 * OpenAI shows its keys: the start, "...", the last four). */
static int
new_secret(char *secret, char hash[65], char *redacted, size_t redsz,
    struct sg_error *err)
{
	size_t len;

	if (sg_rand_id(secret, SG_KEYS_SECRET_MAX, "sk-sg-", 24) == -1)
		return sg_error_final(err, 500, "No randomness from the kernel "
		    "to make a key with.");
	len = strlen(secret);
	sg_sha256_hex(secret, len, hash);
	snprintf(redacted, redsz, "%.6s...%s", secret, secret + len - 4);
	return 0;
}

/* A key half made goes, or says why it could not. */
static void
undo(struct sg_store *store, const char *name)
{
	if (sg_store_key_revoke(store, name) != SG_STORE_OK)
		sg_log("sandgate: keys: key %s, half made, could not be "
		    "revoked: %s", name, sg_store_errmsg(store));
}

int
sg_keys_create(const struct sg_cfg *cfg, struct sg_store *store,
    const json_t *body, char *secret, struct sg_keys_ent *ent,
    struct sg_error *err)
{
	const json_t *name = json_object_get(body, "name");
	struct sg_cfg_key k;
	char hash[65], redacted[40], id[32], *text = NULL;
	int rc;

	secret[0] = '\0';
	if (known_members(body, 1, err) == -1 || name_ok(cfg, name, err) == -1 ||
	    new_secret(secret, hash, redacted, sizeof(redacted), err) == -1 ||
	    merge(cfg, NULL, body, redacted, &k, &text, err) == -1)
		goto fail;
	sg_keyset_clear(&k);
	rc = sg_store_key_add(store, json_string_value(name), hash);
	if (rc == SG_STORE_EXISTS) {
		sg_error_set(err, 409, "invalid_request_error", "already_exists",
		    "name", "An active key named %s exists already: revoke it "
		    "first, or choose another name.", json_string_value(name));
		goto fail;
	}
	if (rc != SG_STORE_OK) {
		sg_keys_store_failed(store, err, "create");
		goto fail;
	}
	/* Two writes, then a read: a key left without the settings asked
	 * for, or one whose answer fails, must not stay (its secret was
	 * never shown, but its name is taken). */
	sg_use_key_id(hash, id);
	if (sg_store_key_settings(store, json_string_value(name), text) !=
	    SG_STORE_OK) {
		sg_keys_store_failed(store, err, "create: settings");
		undo(store, json_string_value(name));
		goto fail;
	}
	if (sg_keys_find(cfg, store, id, 0, ent, err) == -1) {
		undo(store, json_string_value(name));
		goto fail;
	}
	free(text);
	return 0;
fail:
	free(text);
	memset(secret, 0, SG_KEYS_SECRET_MAX);
	return -1;
}

static int
read_only(const struct sg_cfg *cfg, const struct sg_keys_ent *ent,
    struct sg_error *err)
{
	return sg_error_invalid(err, NULL, "config_key", "Key %s is set in the "
	    "config file (%s), and is read-only here: change it there and "
	    "reload.", ent->name, cfg->path != NULL ? cfg->path : "auth.keys");
}

int
sg_keys_update(const struct sg_cfg *cfg, struct sg_store *store,
    struct sg_keys_ent *ent, const json_t *patch, struct sg_error *err)
{
	struct sg_cfg_key k;
	const char *kept;
	char *text;
	int rc;

	if (ent->config)
		return read_only(cfg, ent, err);
	/* The redacted form made with the key stays; a key made before
	 * there was one gets none. */
	kept = strcmp(ent->redacted, SG_KEYS_REDACTED_NONE) != 0 ?
	    ent->redacted : NULL;
	if (known_members(patch, 0, err) == -1 || merge(cfg, &ent->own, patch,
	    kept, &k, &text, err) == -1)
		return -1;
	rc = sg_store_key_settings(store, ent->name, text);
	free(text);
	if (rc != SG_STORE_OK) {
		sg_keyset_clear(&k);
		if (rc == SG_STORE_NOTFOUND)
			return sg_error_set(err, 404, "invalid_request_error",
			    NULL, NULL, "No API key found with id '%s'.", ent->id);
		return sg_keys_store_failed(store, err, "update");
	}
	sg_keyset_clear(&ent->own);
	ent->own = k;
	ent->key = &ent->own;
	return 0;
}

int
sg_keys_revoke(const struct sg_cfg *cfg, struct sg_store *store,
    const struct sg_keys_ent *ent, struct sg_error *err)
{
	int rc;

	if (ent->config)
		return read_only(cfg, ent, err);
	rc = sg_store_key_revoke(store, ent->name);
	if (rc == SG_STORE_NOTFOUND)
		return sg_error_set(err, 404, "invalid_request_error", NULL, NULL,
		    "No API key found with id '%s'.", ent->id);
	if (rc != SG_STORE_OK)
		return sg_keys_store_failed(store, err, "revoke");
	return 0;
}
