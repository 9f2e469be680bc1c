/*
 * core/api/org_keys (and keys.c, keys_edit.c): /v1/organization/api_keys
 * on a real store (a temp SQLite file; PostgreSQL too with SG_TEST_PG)
 * and a real config, answered through a memory-backed sg_out. What a key
 * is made with is what auth then holds it to; the ledger's rows are what
 * its spend says.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "../../core/api/auth.h"
#include "../../core/api/org.h"
#include "../../core/state/ledger.h"
#include "../../lib/util.h"
#include "../../store/store.h"
#include "../../store/usage.h"
#include "testutil.h"

#define KEY_TEAM	"sk-team-a-0123456789"
#define DAY_MS		86400000LL

static const char config[] =
	"auth: {\n"
	"  admin_keys = ( { name = \"ops\"; key = \"sk-admin-1\"; } );\n"
	"  limits = { rpm = 100; budget = 20.0; budget_period = \"month\"; };\n"
	"  keys = ( { name = \"team-a\"; key = \"" KEY_TEAM "\"; rpm = 600;\n"
	"             tpm = 200000; budget = 50.0; tools = [ \"local\" ]; },\n"
	"           { name = \"unset\"; key = \"env:SG_TEST_NEVER_SET_KEYS\"; } );\n"
	"};\n"
	"sandbox_tools = (\n"
	"  { name = \"local\"; provider = \"local\"; isolation = \"none\"; },\n"
	"  { name = \"other\"; provider = \"local\"; isolation = \"none\"; } );\n";


struct fx {
	struct tu_store_fx	 s;
	struct sg_cfg		*cfg;
	struct tu_capture		 c;
	int64_t			 now_ms;
	int			 status;
	json_t			*body;	/* the last answer's */
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char path[160], err[512];
	struct timespec ts;

	if (fx == NULL || tu_store_fresh(fx->s.dir, sizeof(fx->s.dir),
	    fx->s.path, sizeof(fx->s.path), &fx->s.st) == -1) {
		free(fx);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/sandgate.conf", fx->s.dir);
	unsetenv("SG_TEST_NEVER_SET_KEYS");
	if (tu_write_file(path, config, -1) == -1 ||
	    sg_cfg_load(path, &fx->cfg, err, sizeof(err)) == -1) {
		fprintf(stderr, "config: %s\n", err);
		return -1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	fx->now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	json_decref(fx->body);
	free(fx->c.b.p);
	sg_cfg_free(fx->cfg);
	sg_store_close(fx->s.st);
	tu_rmrf(fx->s.dir);
	free(fx);
	return 0;
}

/* One request to the keys routes: the status, and the body parsed into
 * fx->body (borrowed until the next call). */
static int
call(struct fx *fx, enum sg_route route, const char *id, const char *uri,
    const char *body)
{
	struct sg_org_env env = { fx->cfg, fx->s.st, fx->now_ms, NULL, NULL, NULL };
	struct sg_req req;
	const char *p;
	char *q = body != NULL ? tu_q(body) : NULL;

	memset(&req, 0, sizeof(req));
	req.method = route == SG_ROUTE_ORG_KEY_LIST || route ==
	    SG_ROUTE_ORG_KEY_GET ? "GET" : route == SG_ROUTE_ORG_KEY_DELETE ?
	    "DELETE" : "POST";
	req.uri = uri != NULL ? uri : "/v1/organization/api_keys";
	snprintf(req.path, sizeof(req.path), "/v1/organization/api_keys");
	snprintf(req.id, sizeof(req.id), "req_test");
	req.body = q;
	req.body_len = q != NULL ? strlen(q) : 0;
	free(fx->c.b.p);
	tu_capture_init(&fx->c);
	sg_org_keys(&env, route, id != NULL ? id : "", &req, &fx->c.out);
	free(q);
	json_decref(fx->body);
	assert_non_null(fx->c.b.p);
	assert_non_null(p = strstr(fx->c.b.p, "\r\n\r\n"));
	if ((fx->body = json_loads(p + 4, 0, NULL)) == NULL)
		fail_msg("not JSON: %s", fx->c.b.p);
	return fx->status = fx->c.out.status;
}

#define member(o, k)	json_object_get((o), (k))
#define str(o, k)	json_string_value(json_object_get((o), (k)))
#define num(o, k)	json_integer_value(json_object_get((o), (k)))

/* An error answer: status, OpenAI's four members, param and code. */
static void
assert_error(struct fx *fx, int status, const char *param, const char *code)
{
	json_t *e = member(fx->body, "error");

	if (fx->status != status)
		fail_msg("status %d, not %d: %s", fx->status, status,
		    json_dumps(fx->body, 0));
	assert_non_null(e);
	assert_int_equal(json_object_size(e), 4);
	assert_non_null(str(e, "message"));
	assert_non_null(member(e, "type"));
	if (param == NULL)
		assert_true(json_is_null(member(e, "param")));
	else
		assert_string_equal(str(e, "param"), param);
	if (code != NULL)
		assert_string_equal(str(e, "code"), code);
}

static int
matches(const char *s, const char *re)
{
	regex_t r;
	int rc;

	assert_int_equal(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0);
	rc = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return rc;
}

/* Whether o's JSON text holds needle. */
static int
dumps_has(const json_t *o, const char *needle)
{
	char *t = json_dumps(o, 0);
	int rc = t != NULL && strstr(t, needle) != NULL;

	free(t);
	return rc;
}

/* A key object: OpenAI's required members, sandgate's, and no secret. */
static void
assert_key(const json_t *o, const char *name, const char *source)
{
	const json_t *owner = member(o, "owner"), *sa;

	assert_string_equal(str(o, "object"), "organization.project.api_key");
	assert_true(matches(str(o, "id"), "^key_[0-9a-f]{24}$"));
	assert_string_equal(str(o, "name"), name);
	assert_non_null(str(o, "redacted_value"));
	assert_true(json_is_integer(member(o, "created_at")));
	assert_true(json_is_integer(member(o, "last_used_at")) ||
	    json_is_null(member(o, "last_used_at")));
	assert_non_null(str(o, "owner_project_access"));
	assert_string_equal(str(owner, "type"), "service_account");
	sa = member(owner, "service_account");
	assert_non_null(str(sa, "id"));
	assert_string_equal(str(sa, "name"), name);
	assert_true(json_is_integer(member(sa, "created_at")));
	assert_non_null(str(sa, "role"));
	assert_string_equal(str(o, "source"), source);
	assert_true(json_is_object(member(o, "limits")));
	assert_true(json_is_object(member(o, "effective_limits")));
	assert_true(json_is_object(member(o, "spend")));
}

/* Make key name with the settings in more (",..." or ""); its secret
 * into secret[80]; the object stays in fx->body. */
static const json_t *
make(struct fx *fx, const char *name, const char *more, char *secret)
{
	char body[512];

	snprintf(body, sizeof(body), "{'name':'%s'%s}", name, more);
	if (call(fx, SG_ROUTE_ORG_KEY_CREATE, NULL, NULL, body) != 200)
		fail_msg("create %s: %s", name, json_dumps(fx->body, 0));
	snprintf(secret, 80, "%s", str(fx->body, "value"));
	return fx->body;
}

/* Who the secret is, as the gateway asks for each request. */
static int
auth(struct fx *fx, const char *secret, struct sg_auth *who)
{
	struct sg_error err;
	char h[128];

	snprintf(h, sizeof(h), "Bearer %s", secret);
	return sg_auth_check(fx->cfg, fx->s.st, h, who, &err) == 0 ? 0 :
	    err.status;
}

/* ---- tests --------------------------------------------------------- */

static void
create_shows_the_secret_once_and_auth_holds_the_key_to_it(void **state)
{
	struct fx *fx = *state;
	struct sg_auth who;
	char secret[80], hash[65], id[32], red[40], buf[8192];
	const json_t *o;
	struct sg_store_key k;
	json_t *stored;

	o = make(fx, "ci-bot", ",'rpm':7,'budget':2.5,'budget_period':'day',"
	    "'tools':['other'],'max_concurrent':3", secret);
	assert_key(o, "ci-bot", "api");
	assert_true(matches(secret, "^sk-sg-[0-9a-f]{48}$"));
	sg_sha256_hex(secret, strlen(secret), hash);
	sg_use_key_id(hash, id);
	assert_string_equal(str(o, "id"), id);
	snprintf(red, sizeof(red), "sk-sg-...%s", secret + strlen(secret) - 4);
	assert_string_equal(str(o, "redacted_value"), red);
	assert_string_equal(str(o, "owner_project_access"), "active");
	assert_true(json_is_null(member(o, "last_used_at")));
	assert_int_equal(num(member(o, "limits"), "rpm"), 7);
	assert_int_equal(num(member(o, "limits"), "max_concurrent"), 3);
	assert_null(member(member(o, "limits"), "tpm"));
	/* After auth.limits: rpm its own, tpm none (0), budget its own. */
	assert_int_equal(num(member(o, "effective_limits"), "rpm"), 7);
	assert_int_equal(num(member(o, "effective_limits"), "tpm"), 0);
	assert_true(json_real_value(member(member(o, "effective_limits"),
	    "budget")) == 2.5);
	assert_string_equal(str(member(o, "effective_limits"),
	    "budget_period"), "day");
	assert_int_equal(json_array_size(member(member(o, "effective_limits"),
	    "tools")), 1);
	assert_string_equal(str(member(o, "spend"), "period"), "day");
	assert_int_equal(num(member(o, "spend"), "period_start"),
	    sg_use_period_start(SG_PERIOD_DAY, fx->now_ms) / 1000);
	assert_false(dumps_has(o, hash));

	/* The store keeps the hash, never the secret; its settings are
	 * what auth reads (the redacted form ignored by it). */
	assert_int_equal(sg_store_key_get(fx->s.st, hash, &k, buf,
	    sizeof(buf)), SG_STORE_OK);
	assert_null(strstr(k.settings, secret));
	assert_non_null(stored = json_loads(k.settings, 0, NULL));
	assert_string_equal(str(stored, "redacted_value"), red);
	json_decref(stored);
	assert_int_equal(auth(fx, secret, &who), 0);
	assert_string_equal(who.name, "ci-bot");
	assert_string_equal(who.tenant, hash);
	assert_non_null(who.key);
	assert_int_equal(who.key->limits.rpm, 7);
	assert_true(who.key->limits.budget == 2.5);
	assert_int_equal(who.key->limits.period, SG_PERIOD_DAY);
	assert_int_equal(who.key->max_concurrent, 3);
	assert_false(sg_cfg_key_may_use(who.key, "local"));
	assert_true(sg_cfg_key_may_use(who.key, "other"));
	sg_auth_clear(&who);

	/* Shown once: GET and the list never carry it. */
	assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_GET, id, NULL, NULL), 200);
	assert_key(fx->body, "ci-bot", "api");
	assert_null(member(fx->body, "value"));
	assert_false(dumps_has(fx->body, secret));
	assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_LIST, NULL, NULL, NULL), 200);
	assert_false(dumps_has(fx->body, secret));
	assert_false(dumps_has(fx->body, hash));
}

static void
create_refuses_bad_bodies_with_their_param(void **state)
{
	struct fx *fx = *state;
	char secret[80];
	static const struct {
		const char	*body;
		int		 status;
		const char	*param, *code;
	} bad[] = {
		{ "{}", 400, "name", "missing_required_parameter" },
		{ "{'name':5}", 400, "name", "invalid_type" },
		{ "{'name':''}", 400, "name", "invalid_value" },
		{ "{'name':'a234567890123456789012345678901234567890123456789"
		    "012345678901234'}", 400, "name", "invalid_value" },
		{ "{'name':'bad\\nname'}", 400, "name", "invalid_value" },
		{ "{'name':'bad\\u0000nul'}", 400, "name", "invalid_value" },
		{ "{'name':'c1\\u0085'}", 400, "name", "invalid_value" },
		{ "{'name':'x','rpm':'600'}", 400, "rpm", "invalid_value" },
		{ "{'name':'x','rpm':-1}", 400, "rpm", "invalid_value" },
		{ "{'name':'x','tpm':1.5}", 400, "tpm", "invalid_value" },
		{ "{'name':'x','budget':'5'}", 400, "budget", "invalid_value" },
		{ "{'name':'x','budget_period':'year'}", 400, "budget_period",
		    "invalid_value" },
		{ "{'name':'x','max_concurrent':0}", 400, "max_concurrent",
		    "invalid_value" },
		{ "{'name':'x','tools':'local'}", 400, "tools", "invalid_value" },
		{ "{'name':'x','tools':['local','nope']}", 400, "tools",
		    "invalid_value" },
		{ "{'name':'x','rmp':5}", 400, "rmp", "unknown_parameter" },
		{ "{'name':'x','value':'sk-mine'}", 400, "value",
		    "unknown_parameter" },
		{ "{'name':'team-a'}", 409, "name", "already_exists" },
		{ "[1]", 400, NULL, "invalid_type" },
		{ "{'name':", 400, NULL, NULL },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		call(fx, SG_ROUTE_ORG_KEY_CREATE, NULL, NULL, bad[i].body);
		if (fx->status != bad[i].status)
			fail_msg("%s: %d %s", bad[i].body, fx->status,
			    json_dumps(fx->body, 0));
		assert_error(fx, bad[i].status, bad[i].param, bad[i].code);
	}
	/* Nothing was made by any of them. */
	assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_LIST, NULL, NULL, NULL), 200);
	assert_int_equal(json_array_size(member(fx->body, "data")), 2);
	/* An active name is taken; once revoked, it is free again. */
	make(fx, "dup", "", secret);
	call(fx, SG_ROUTE_ORG_KEY_CREATE, NULL, NULL, "{'name':'dup'}");
	assert_error(fx, 409, "name", "already_exists");
	assert_non_null(strstr(str(member(fx->body, "error"), "message"),
	    "active key named dup exists"));
	call(fx, SG_ROUTE_ORG_KEY_LIST, NULL, NULL, NULL);
	call(fx, SG_ROUTE_ORG_KEY_DELETE, str(json_array_get(member(fx->body,
	    "data"), 2), "id"), NULL, NULL);
	assert_int_equal(fx->status, 200);
	make(fx, "dup", "", secret);
}

static void
list_config_keys_first_then_the_store_s_oldest_first_in_pages(void **state)
{
	struct fx *fx = *state;
	const char *names[] = { "team-a", "unset", "k1", "k2", "k3" };
	char secret[80], uri[160], last[40];
	const json_t *d, *o;
	size_t i;

	make(fx, "k1", "", secret);
	make(fx, "k2", "", secret);
	make(fx, "k3", "", secret);
	/* A revoked key is not listed. */
	make(fx, "gone", "", secret);
	call(fx, SG_ROUTE_ORG_KEY_DELETE, str(fx->body, "id"), NULL, NULL);
	assert_int_equal(fx->status, 200);

	assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_LIST, NULL, NULL, NULL), 200);
	assert_string_equal(str(fx->body, "object"), "list");
	assert_false(json_is_true(member(fx->body, "has_more")));
	d = member(fx->body, "data");
	assert_int_equal(json_array_size(d), 5);
	for (i = 0; i < 5; i++)
		assert_string_equal(str(json_array_get(d, i), "name"), names[i]);
	assert_string_equal(str(fx->body, "first_id"),
	    str(json_array_get(d, 0), "id"));
	assert_string_equal(str(fx->body, "last_id"),
	    str(json_array_get(d, 4), "id"));
	/* The config's: read-only, the file's limits; one whose secret is
	 * not set lets no one in. */
	o = json_array_get(d, 0);
	assert_key(o, "team-a", "config");
	assert_string_equal(str(o, "redacted_value"), "sk-...(config)");
	assert_int_equal(num(member(o, "limits"), "rpm"), 600);
	assert_int_equal(num(member(o, "effective_limits"), "tpm"), 200000);
	assert_string_equal(str(o, "owner_project_access"), "active");
	o = json_array_get(d, 1);
	assert_key(o, "unset", "config");
	assert_string_equal(str(o, "owner_project_access"), "inactive");
	assert_int_equal(num(member(o, "effective_limits"), "rpm"), 100);
	assert_true(json_real_value(member(member(o, "effective_limits"),
	    "budget")) == 20.0);
	assert_string_equal(str(member(o, "spend"), "period"), "month");

	/* Pages of two: after each last id, to the end. */
	last[0] = '\0';
	for (i = 0; i < 3; i++) {
		snprintf(uri, sizeof(uri), "/v1/organization/api_keys?limit=2%s%s",
		    last[0] ? "&after=" : "", last);
		assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_LIST, NULL, uri, NULL),
		    200);
		d = member(fx->body, "data");
		assert_int_equal(json_array_size(d), i < 2 ? 2 : 1);
		assert_string_equal(str(json_array_get(d, 0), "name"),
		    names[2 * i]);
		assert_int_equal(json_is_true(member(fx->body, "has_more")),
		    i < 2);
		snprintf(last, sizeof(last), "%s", str(fx->body, "last_id"));
	}
	call(fx, SG_ROUTE_ORG_KEY_LIST, NULL,
	    "/v1/organization/api_keys?after=key_000000000000000000000000", NULL);
	assert_error(fx, 400, "after", NULL);
	call(fx, SG_ROUTE_ORG_KEY_LIST, NULL, "/v1/organization/api_keys?limit=0",
	    NULL);
	assert_error(fx, 400, "limit", NULL);
	call(fx, SG_ROUTE_ORG_KEY_LIST, NULL,
	    "/v1/organization/api_keys?limit=101", NULL);
	assert_error(fx, 400, "limit", NULL);
	assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_LIST, NULL,
	    "/v1/organization/api_keys?limit=100", NULL), 200);
	assert_int_equal(json_array_size(member(fx->body, "data")), 5);
	/* OpenAI's key lists take no order; asked for, it turns the list. */
	assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_LIST, NULL,
	    "/v1/organization/api_keys?order=desc&limit=1", NULL), 200);
	assert_string_equal(str(json_array_get(member(fx->body, "data"), 0),
	    "name"), "k3");
	call(fx, SG_ROUTE_ORG_KEY_LIST, NULL, "/v1/organization/api_keys?"
	    "order=up", NULL);
	assert_error(fx, 400, "order", NULL);
}

static void
update_merges_settings_and_auth_sees_them_at_once(void **state)
{
	struct fx *fx = *state;
	struct sg_auth who;
	char secret[80], id[40], red[40], path[200];
	const json_t *lim;

	make(fx, "upd", ",'rpm':10,'tpm':1000,'tools':['local']", secret);
	snprintf(id, sizeof(id), "%s", str(fx->body, "id"));
	snprintf(red, sizeof(red), "%s", str(fx->body, "redacted_value"));

	/* Given members replace, null clears, the rest stay. */
	assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_UPDATE, id, NULL,
	    "{'rpm':20,'tpm':null,'budget':5,'budget_period':'week'}"), 200);
	assert_key(fx->body, "upd", "api");
	assert_null(member(fx->body, "value"));
	assert_string_equal(str(fx->body, "redacted_value"), red);
	lim = member(fx->body, "limits");
	assert_int_equal(num(lim, "rpm"), 20);
	assert_null(member(lim, "tpm"));
	assert_true(json_real_value(member(lim, "budget")) == 5.0);
	assert_string_equal(str(lim, "budget_period"), "week");
	assert_string_equal(json_string_value(json_array_get(member(lim,
	    "tools"), 0)), "local");
	assert_string_equal(str(member(fx->body, "spend"), "period"), "week");
	assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_GET, id, NULL, NULL), 200);
	assert_int_equal(num(member(fx->body, "limits"), "rpm"), 20);
	assert_string_equal(str(fx->body, "redacted_value"), red);
	assert_int_equal(auth(fx, secret, &who), 0);
	assert_int_equal(who.key->limits.rpm, 20);
	assert_int_equal(who.key->limits.tpm, -1);
	assert_int_equal(who.key->limits.period, SG_PERIOD_WEEK);
	sg_auth_clear(&who);
	/* tools null: every tool again. */
	assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_UPDATE, id, NULL,
	    "{'tools':null}"), 200);
	assert_null(member(member(fx->body, "limits"), "tools"));
	assert_int_equal(json_array_size(member(member(fx->body,
	    "effective_limits"), "tools")), 2);

	/* Refused, and nothing changed. */
	call(fx, SG_ROUTE_ORG_KEY_UPDATE, id, NULL, "{'rpm':'x'}");
	assert_error(fx, 400, "rpm", "invalid_value");
	call(fx, SG_ROUTE_ORG_KEY_UPDATE, id, NULL, "{'tools':['nope']}");
	assert_error(fx, 400, "tools", "invalid_value");
	call(fx, SG_ROUTE_ORG_KEY_UPDATE, id, NULL, "{'rpm':1,'colour':'red'}");
	assert_error(fx, 400, "colour", "unknown_parameter");
	call(fx, SG_ROUTE_ORG_KEY_UPDATE, id, NULL, "{'name':'other'}");
	assert_error(fx, 400, "name", NULL);
	call(fx, SG_ROUTE_ORG_KEY_UPDATE, id, NULL, "\"x\"");
	assert_error(fx, 400, NULL, NULL);
	call(fx, SG_ROUTE_ORG_KEY_GET, id, NULL, NULL);
	assert_int_equal(num(member(fx->body, "limits"), "rpm"), 20);
	call(fx, SG_ROUTE_ORG_KEY_UPDATE, "key_000000000000000000000000", NULL,
	    "{'rpm':1}");
	assert_error(fx, 404, NULL, NULL);

	/* A config key: read-only here, and the message says where. */
	call(fx, SG_ROUTE_ORG_KEY_LIST, NULL, NULL, NULL);
	snprintf(id, sizeof(id), "%s", str(fx->body, "first_id"));
	call(fx, SG_ROUTE_ORG_KEY_UPDATE, id, NULL, "{'rpm':1}");
	assert_error(fx, 400, NULL, NULL);
	snprintf(path, sizeof(path), "%s/sandgate.conf", fx->s.dir);
	assert_non_null(strstr(str(member(fx->body, "error"), "message"),
	    path));
	call(fx, SG_ROUTE_ORG_KEY_DELETE, id, NULL, NULL);
	assert_error(fx, 400, NULL, NULL);
	assert_non_null(strstr(str(member(fx->body, "error"), "message"),
	    "config file"));
	assert_int_equal(auth(fx, KEY_TEAM, &who), 0);
	sg_auth_clear(&who);
}

static void
revoke_answers_deleted_and_the_key_gets_401(void **state)
{
	struct fx *fx = *state;
	struct sg_auth who;
	char secret[80], id[40];

	make(fx, "bye", "", secret);
	snprintf(id, sizeof(id), "%s", str(fx->body, "id"));
	assert_int_equal(auth(fx, secret, &who), 0);
	sg_auth_clear(&who);
	assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_DELETE, id, NULL, NULL), 200);
	assert_int_equal(json_object_size(fx->body), 3);
	assert_string_equal(str(fx->body, "object"),
	    "organization.project.api_key.deleted");
	assert_string_equal(str(fx->body, "id"), id);
	assert_true(json_is_true(member(fx->body, "deleted")));
	assert_int_equal(auth(fx, secret, &who), 401);
	sg_auth_clear(&who);
	call(fx, SG_ROUTE_ORG_KEY_GET, id, NULL, NULL);
	assert_error(fx, 404, NULL, NULL);
	call(fx, SG_ROUTE_ORG_KEY_DELETE, id, NULL, NULL);
	assert_error(fx, 404, NULL, NULL);
}

/* A ledger row of tenant started at ms, costing nano nano-USD. */
static struct sg_store_use
use(const char *rid, const char *tenant, int64_t ms, int64_t nano)
{
	struct sg_store_use r;

	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "%s", rid);
	snprintf(r.tenant, sizeof(r.tenant), "%s", tenant);
	sg_use_key_id(tenant, r.key_id);
	snprintf(r.model, sizeof(r.model), "m");
	r.status = 200;
	r.started_ms = ms;
	r.input_tokens = 100;
	r.output_tokens = 20;
	r.model_requests = 1;
	r.sandbox_ms = 1500;
	r.cost_input = nano;
	return r;
}

static void
spend_and_last_use_come_from_the_ledger(void **state)
{
	struct fx *fx = *state;
	struct sg_store_use rows[3];
	char secret[80], hash[65], team[65], id[40];
	int64_t month = sg_use_period_start(SG_PERIOD_MONTH, fx->now_ms);
	const json_t *s;

	make(fx, "spender", ",'budget':10", secret);
	snprintf(id, sizeof(id), "%s", str(fx->body, "id"));
	sg_sha256_hex(secret, strlen(secret), hash);
	sg_sha256_hex(KEY_TEAM, strlen(KEY_TEAM), team);
	/* Two rows this month; one before it (last used, not spent now);
	 * and another key's. */
	rows[0] = use("req_a", hash, month + 1000, 1250000000);
	rows[1] = use("req_b", hash, fx->now_ms - 5, 250000000);
	rows[2] = use("req_c", team, month - DAY_MS, 7000000000);
	assert_int_equal(sg_store_use_add(fx->s.st, rows, 3), SG_STORE_OK);

	assert_int_equal(call(fx, SG_ROUTE_ORG_KEY_GET, id, NULL, NULL), 200);
	s = member(fx->body, "spend");
	assert_string_equal(str(s, "period"), "month");
	assert_int_equal(num(s, "period_start"), month / 1000);
	assert_true(json_real_value(member(s, "amount")) == 1.5);
	assert_int_equal(num(s, "tokens"), 240);
	assert_true(json_real_value(member(s, "sandbox_seconds")) == 3.0);
	assert_int_equal(num(s, "requests"), 2);
	assert_int_equal(num(fx->body, "last_used_at"), (fx->now_ms - 5) / 1000);

	/* The config key: nothing this month, but used last month. */
	call(fx, SG_ROUTE_ORG_KEY_LIST, NULL, NULL, NULL);
	s = json_array_get(member(fx->body, "data"), 0);
	assert_string_equal(str(s, "name"), "team-a");
	assert_int_equal(num(s, "last_used_at"), (month - DAY_MS) / 1000);
	assert_true(json_real_value(member(member(s, "spend"), "amount")) == 0);
	assert_int_equal(num(member(s, "spend"), "requests"), 0);
}

/* fd 2 into a file while fn runs: what was logged, new. */
static char *
stderr_of(void (*fn)(struct fx *), struct fx *fx)
{
	char path[160], *text;
	FILE *f;
	long n;
	int saved, fd;

	snprintf(path, sizeof(path), "%s/stderr", fx->s.dir);
	fflush(stderr);
	saved = dup(2);
	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0);
	dup2(fd, 2);
	close(fd);
	fn(fx);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	assert_non_null(f = fopen(path, "r"));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

static char broken_secret[80];

/* A key made, then its table gone: every route fails as the store. */
static void
break_the_store(struct fx *fx)
{
	static const enum sg_route routes[] = { SG_ROUTE_ORG_KEY_LIST,
		SG_ROUTE_ORG_KEY_CREATE, SG_ROUTE_ORG_KEY_GET,
		SG_ROUTE_ORG_KEY_UPDATE, SG_ROUTE_ORG_KEY_DELETE };
	char id[40];
	size_t i;

	make(fx, "doomed", "", broken_secret);
	snprintf(id, sizeof(id), "%s", str(fx->body, "id"));
	assert_int_equal(tu_raw_sql_store(fx->s.st, "DROP TABLE keys"), 0);
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		call(fx, routes[i], id, NULL, routes[i] == SG_ROUTE_ORG_KEY_CREATE ?
		    "{'name':'new'}" : "{'rpm':1}");
		assert_error(fx, 503, NULL, NULL);
		assert_string_equal(str(member(fx->body, "error"), "type"),
		    "server_error");
		/* No SQL, table or store detail reaches the client. */
		assert_null(strstr(fx->c.b.p, "keys"));
		assert_null(strstr(fx->c.b.p, "table"));
		assert_null(strstr(fx->c.b.p, "relation"));
	}
}

static void
a_store_failure_is_a_503_that_says_no_more(void **state)
{
	struct fx *fx = *state;
	char hash[65], *log = stderr_of(break_the_store, fx);

	sg_sha256_hex(broken_secret, strlen(broken_secret), hash);
	/* Logged, with neither the secret nor its hash. */
	assert_non_null(strstr(log, "sandgate: keys: "));
	assert_null(strstr(log, broken_secret));
	assert_null(strstr(log, hash));
	free(log);
}

static void
a_broken_settings_row_is_a_503_not_a_key_without_limits(void **state)
{
	struct fx *fx = *state;
	char secret[80];

	make(fx, "warped", ",'rpm':1", secret);
	assert_int_equal(tu_raw_sql_store(fx->s.st, "UPDATE keys SET settings "
	    "= '{\"rpm\":\"many\"}' WHERE name = 'warped'"), 0);
	call(fx, SG_ROUTE_ORG_KEY_LIST, NULL, NULL, NULL);
	assert_error(fx, 503, NULL, NULL);
}

static int
count_active(void *arg, const struct sg_store_key *k)
{
	if (k->revoked_at == 0)
		(*(int *)arg)++;
	return 0;
}

/* Made in two writes: when the second (its settings) fails, the first
 * is undone, so no key stays without the limits it was made with. */
static void
a_key_whose_settings_cannot_be_written_is_not_left(void **state)
{
	struct fx *fx = *state;
	int active = 0;

	TU_SQLITE_ONLY();
	assert_int_equal(tu_raw_sql_store(fx->s.st, "CREATE TRIGGER no_settings "
	    "BEFORE UPDATE OF settings ON keys BEGIN SELECT RAISE(ABORT, "
	    "'refused'); END"), 0);
	call(fx, SG_ROUTE_ORG_KEY_CREATE, NULL, NULL, "{'name':'half','rpm':1}");
	assert_error(fx, 503, NULL, NULL);
	assert_null(strstr(fx->c.b.p, "sk-sg-"));
	assert_int_equal(sg_store_key_list(fx->s.st, count_active, &active),
	    SG_STORE_OK);
	assert_int_equal(active, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    create_shows_the_secret_once_and_auth_holds_the_key_to_it,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    create_refuses_bad_bodies_with_their_param, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    list_config_keys_first_then_the_store_s_oldest_first_in_pages,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    update_merges_settings_and_auth_sees_them_at_once, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    revoke_answers_deleted_and_the_key_gets_401, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    spend_and_last_use_come_from_the_ledger, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    a_store_failure_is_a_503_that_says_no_more, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    a_broken_settings_row_is_a_503_not_a_key_without_limits,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    a_key_whose_settings_cannot_be_written_is_not_left, setup,
		    teardown),
	};

	TU_STORE_MAIN(tests);
}
