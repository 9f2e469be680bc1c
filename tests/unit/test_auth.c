/*
 * core/api/auth: who is calling. Config keys come from a real config file,
 * store keys from a real (temp) store, as in production.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/api/auth.h"
#include "../../core/config/config.h"
#include "../../lib/util.h"
#include "../../store/store.h"
#include "testutil.h"

#define KEY_ALICE	"sk-alice-0123456789"
#define KEY_BOB		"sk-bob-abcdef"
#define KEY_STORE	"sk-store-key-42"

static const char config_keys[] =
	"auth: {\n"
	"  keys = ( { name = \"alice\"; key = \"" KEY_ALICE "\"; },\n"
	"           { name = \"bob\"; key_sha256 = \"%s\"; } );\n"
	"};\n";

static const char config_anonymous[] =
	"auth: {\n"
	"  keys = ( { name = \"alice\"; key = \"" KEY_ALICE "\"; } );\n"
	"  allow_anonymous = true;\n"
	"};\n";

struct fx {
	char		 dir[64];
	struct sg_cfg	*cfg;
	struct sg_store	*st;
	struct sg_auth	 who;
	struct sg_error	 err;
};

static void
load_config(struct fx *fx, const char *text)
{
	char path[128], err[512];

	snprintf(path, sizeof(path), "%s/sandgate.conf", fx->dir);
	assert_int_equal(tu_write_file(path, text, -1), 0);
	if (sg_cfg_load(path, &fx->cfg, err, sizeof(err)) != 0)
		fail_msg("config: %s", err);
}

static int
setup_dir(struct fx **out)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL || tu_mkdtemp(fx->dir, sizeof(fx->dir)) == -1) {
		free(fx);
		return -1;
	}
	*out = fx;
	return 0;
}

/* alice by literal key, bob by key_sha256; no store. */
static int
setup(void **state)
{
	struct fx *fx;
	char text[1024], bob[65];

	if (setup_dir(&fx) == -1)
		return -1;
	sg_sha256_hex(KEY_BOB, strlen(KEY_BOB), bob);
	snprintf(text, sizeof(text), config_keys, bob);
	*state = fx;
	load_config(fx, text);
	return 0;
}

static int
setup_anonymous(void **state)
{
	struct fx *fx;

	if (setup_dir(&fx) == -1)
		return -1;
	*state = fx;
	load_config(fx, config_anonymous);
	return 0;
}

/* The config of setup(), plus a migrated store holding one key. */
static int
setup_store(void **state)
{
	struct fx *fx;
	char path[128], err[256], h[65];

	if (setup(state) == -1)
		return -1;
	fx = *state;
	snprintf(path, sizeof(path), "%s/sandgate.db", fx->dir);
	if (sg_store_open(path, &fx->st, err, sizeof(err)) != SG_STORE_OK ||
	    sg_store_migrate(fx->st) != SG_STORE_OK)
		return -1;
	sg_sha256_hex(KEY_STORE, strlen(KEY_STORE), h);
	return sg_store_key_add(fx->st, "ci-bot", h) == SG_STORE_OK ? 0 : -1;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	sg_store_close(fx->st);
	sg_cfg_free(fx->cfg);
	tu_rmrf(fx->dir);
	free(fx);
	return 0;
}

static int
check(struct fx *fx, const char *authorization)
{
	memset(&fx->who, 0x55, sizeof(fx->who));
	memset(&fx->err, 0, sizeof(fx->err));
	return sg_auth_check(fx->cfg, fx->st, authorization, &fx->who,
	    &fx->err);
}

static void
assert_accepted(struct fx *fx, const char *authorization, const char *name,
    const char *key)
{
	char tenant[65];

	if (check(fx, authorization) != 0)
		fail_msg("\"%s\" refused: %d %s", authorization, fx->err.status,
		    fx->err.message);
	assert_string_equal(fx->who.name, name);
	sg_sha256_hex(key, strlen(key), tenant);
	assert_string_equal(fx->who.tenant, tenant);
}

static void
assert_refused(struct fx *fx, const char *authorization, const char *code)
{
	if (check(fx, authorization) != -1)
		fail_msg("\"%s\" accepted as %s", authorization, fx->who.name);
	assert_int_equal(fx->err.status, 401);
	assert_string_equal(fx->err.type, "invalid_request_error");
	if (code == NULL)
		assert_null(fx->err.code);
	else {
		assert_non_null(fx->err.code);
		assert_string_equal(fx->err.code, code);
	}
	assert_true(fx->err.message[0] != '\0');
}

/* ---- config keys ---- */

static void
literal_key_accepted(void **state)
{
	assert_accepted(*state, "Bearer " KEY_ALICE, "alice", KEY_ALICE);
}

static void
sha256_key_accepted(void **state)
{
	assert_accepted(*state, "Bearer " KEY_BOB, "bob", KEY_BOB);
}

static void
tenant_is_key_hash(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(check(fx, "Bearer " KEY_ALICE), 0);
	/* printf %s sk-alice-0123456789 | sha256sum */
	assert_string_equal(fx->who.tenant,
	    "767ce15891988db0e684a53b3a796188526d8ba43dc03acd89e7fdf3c126cdcc");
	/* The name is the key's name, never the key. */
	assert_null(strstr(fx->who.name, KEY_ALICE));
	assert_null(strstr(fx->who.tenant, KEY_ALICE));
}

static void
two_keys_two_tenants(void **state)
{
	struct fx *fx = *state;
	char a[65];

	assert_int_equal(check(fx, "Bearer " KEY_ALICE), 0);
	memcpy(a, fx->who.tenant, sizeof(a));
	assert_int_equal(check(fx, "Bearer " KEY_BOB), 0);
	assert_string_not_equal(a, fx->who.tenant);
	assert_string_not_equal(a, "anonymous");
}

static void
wrong_key_refused(void **state)
{
	struct fx *fx = *state;

	assert_refused(fx, "Bearer sk-wrong", "invalid_api_key");
	/* A prefix or an extension of a real key is not that key. */
	assert_refused(fx, "Bearer sk-alice", "invalid_api_key");
	assert_refused(fx, "Bearer " KEY_ALICE "x", "invalid_api_key");
	/* Nor is the key's hash sent as the key. */
	{
		char h[65], hdr[80];

		sg_sha256_hex(KEY_BOB, strlen(KEY_BOB), h);
		snprintf(hdr, sizeof(hdr), "Bearer %s", h);
		assert_refused(fx, hdr, "invalid_api_key");
	}
}

static void
missing_header_refused(void **state)
{
	struct fx *fx = *state;

	assert_refused(fx, NULL, NULL);
	assert_contains(fx->err.message, "API key");
	assert_refused(fx, "", NULL);
}

static void
basic_scheme_refused(void **state)
{
	struct fx *fx = *state;

	if (check(fx, "Basic YWxpY2U6c2stYWxpY2U=") != -1)
		fail_msg("Basic accepted");
	assert_int_equal(fx->err.status, 401);
	/* Basic with the key itself as credentials is no Bearer either. */
	if (check(fx, "Basic " KEY_ALICE) != -1)
		fail_msg("Basic with the key accepted");
	assert_int_equal(fx->err.status, 401);
}

static void
malformed_bearer_refused(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(check(fx, "Bearer"), -1);
	assert_int_equal(fx->err.status, 401);
	assert_int_equal(check(fx, "Bearer "), -1);
	assert_int_equal(fx->err.status, 401);
	assert_int_equal(check(fx, "Bearer" KEY_ALICE), -1);
	assert_int_equal(fx->err.status, 401);
	assert_int_equal(check(fx, KEY_ALICE), -1);
	assert_int_equal(fx->err.status, 401);
	assert_int_equal(check(fx, "Bearerx " KEY_ALICE), -1);
	assert_int_equal(fx->err.status, 401);
}

static void
scheme_case_insensitive(void **state)
{
	struct fx *fx = *state;

	assert_accepted(fx, "bearer " KEY_ALICE, "alice", KEY_ALICE);
	assert_accepted(fx, "BEARER " KEY_ALICE, "alice", KEY_ALICE);
	assert_accepted(fx, "BeArEr " KEY_BOB, "bob", KEY_BOB);
	/* The key itself is case-sensitive. */
	assert_refused(fx, "Bearer SK-ALICE-0123456789", "invalid_api_key");
}

static void
extra_spaces_after_scheme(void **state)
{
	assert_accepted(*state, "Bearer   " KEY_ALICE, "alice", KEY_ALICE);
}

/* ---- anonymous ---- */

static void
anonymous_without_header(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(check(fx, NULL), 0);
	assert_string_equal(fx->who.tenant, "anonymous");
	assert_true(strlen(fx->who.name) < sizeof(fx->who.name));
}

static void
anonymous_with_any_header(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(check(fx, "Bearer whatever"), 0);
	assert_string_equal(fx->who.tenant, "anonymous");
	assert_int_equal(check(fx, "Basic xxx"), 0);
	assert_string_equal(fx->who.tenant, "anonymous");
	/* One tenant for everybody, whatever key is sent. */
	assert_int_equal(check(fx, "Bearer " KEY_ALICE), 0);
	assert_string_equal(fx->who.tenant, "anonymous");
}

/* ---- store keys ---- */

static void
store_key_accepted(void **state)
{
	assert_accepted(*state, "Bearer " KEY_STORE, "ci-bot", KEY_STORE);
}

static void
config_keys_still_work_with_store(void **state)
{
	struct fx *fx = *state;

	assert_accepted(fx, "Bearer " KEY_ALICE, "alice", KEY_ALICE);
	assert_refused(fx, "Bearer sk-unknown", "invalid_api_key");
}

static void
store_key_ignored_without_store(void **state)
{
	struct fx *fx = *state;
	struct sg_store *st = fx->st;

	fx->st = NULL;
	assert_refused(fx, "Bearer " KEY_STORE, "invalid_api_key");
	fx->st = st;
}

static void
revoked_store_key_refused(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(check(fx, "Bearer " KEY_STORE), 0);
	assert_int_equal(sg_store_key_revoke(fx->st, "ci-bot"), SG_STORE_OK);
	assert_refused(fx, "Bearer " KEY_STORE, "invalid_api_key");
}

static void
new_store_key_seen_at_once(void **state)
{
	/* `sandgate keys create` in another process: no restart needed. */
	struct fx *fx = *state;
	char h[65];

	assert_refused(fx, "Bearer sk-fresh", "invalid_api_key");
	sg_sha256_hex("sk-fresh", 8, h);
	assert_int_equal(sg_store_key_add(fx->st, "fresh", h), SG_STORE_OK);
	assert_accepted(fx, "Bearer sk-fresh", "fresh", "sk-fresh");
}

static void
broken_store_is_503(void **state)
{
	/* A store that cannot answer is the gateway's fault, not a bad key:
	 * 503, never 401. An unmigrated store has no keys table. */
	struct fx *fx = *state;
	struct sg_store *good = fx->st;
	char path[128], err[256];

	snprintf(path, sizeof(path), "%s/empty.db", fx->dir);
	assert_int_equal(sg_store_open(path, &fx->st, err, sizeof(err)),
	    SG_STORE_OK);
	assert_int_equal(check(fx, "Bearer sk-unknown"), -1);
	assert_int_equal(fx->err.status, 503);
	assert_false(fx->err.no_retry);
	/* Config keys are checked first and do not need the store. */
	assert_int_equal(check(fx, "Bearer " KEY_ALICE), 0);
	sg_store_close(fx->st);
	fx->st = good;
}

/* ---- a tenant's key found again, without its Authorization ---- */

static int
by_tenant(struct fx *fx, const char *key)
{
	char h[65];

	sg_sha256_hex(key, strlen(key), h);
	memset(&fx->who, 0x55, sizeof(fx->who));
	memset(&fx->err, 0, sizeof(fx->err));
	return sg_auth_tenant(fx->cfg, fx->st, h, &fx->who, &fx->err);
}

static void
tenant_found_again(void **state)
{
	struct fx *fx = *state;
	char h[65];

	/* A config key: its settings are the config's. */
	assert_int_equal(by_tenant(fx, KEY_ALICE), 0);
	assert_string_equal(fx->who.name, "alice");
	sg_sha256_hex(KEY_ALICE, strlen(KEY_ALICE), h);
	assert_string_equal(fx->who.tenant, h);
	assert_non_null(fx->who.key);
	sg_auth_clear(&fx->who);
	/* A store key, until it is revoked. */
	assert_int_equal(by_tenant(fx, KEY_STORE), 0);
	assert_string_equal(fx->who.name, "ci-bot");
	sg_auth_clear(&fx->who);
	assert_int_equal(sg_store_key_revoke(fx->st, "ci-bot"), SG_STORE_OK);
	assert_int_equal(by_tenant(fx, KEY_STORE), -1);
	assert_int_equal(fx->err.status, 401);
	assert_string_equal(fx->err.code, "invalid_api_key");
	/* Not a hash, or anonymous without allow_anonymous: nobody. */
	memset(&fx->err, 0, sizeof(fx->err));
	assert_int_equal(sg_auth_tenant(fx->cfg, fx->st, "anonymous", &fx->who,
	    &fx->err), -1);
	assert_int_equal(fx->err.status, 401);
	assert_int_equal(sg_auth_tenant(fx->cfg, fx->st, "ABC", &fx->who,
	    &fx->err), -1);
}

static void
anonymous_tenant_while_allowed(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(sg_auth_tenant(fx->cfg, fx->st, "anonymous",
	    &fx->who, &fx->err), 0);
	assert_string_equal(fx->who.tenant, "anonymous");
	assert_null(fx->who.key);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define TA(f) cmocka_unit_test_setup_teardown(f, setup_anonymous, teardown)
#define TS(f) cmocka_unit_test_setup_teardown(f, setup_store, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(literal_key_accepted),
		TS(tenant_found_again),
		TA(anonymous_tenant_while_allowed),
		T(sha256_key_accepted),
		T(tenant_is_key_hash),
		T(two_keys_two_tenants),
		T(wrong_key_refused),
		T(missing_header_refused),
		T(basic_scheme_refused),
		T(malformed_bearer_refused),
		T(scheme_case_insensitive),
		T(extra_spaces_after_scheme),
		TA(anonymous_without_header),
		TA(anonymous_with_any_header),
		TS(store_key_accepted),
		TS(config_keys_still_work_with_store),
		TS(store_key_ignored_without_store),
		TS(revoked_store_key_refused),
		TS(new_store_key_seen_at_once),
		TS(broken_store_is_503),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
