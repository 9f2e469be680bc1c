/*
 * sandgate keys: make, list, change and revoke the store's keys, and sum
 * what keys spent. Keys are made and changed as the admin API makes and
 * changes them (core/api/keys.c): one way to make a key, one set of rules.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "../core/api/keys.h"
#include "../store/usage.h"

#define DAY_MS	86400000LL

static int
store_error(struct sg_store *st)
{
	fprintf(stderr, "sandgate: %s\n", sg_store_errmsg(st));
	return 1;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
day_of(int64_t unix_s, char *out, size_t outsz)
{
	time_t t = (time_t)unix_s;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, outsz, "%Y-%m-%d", &tm);
}

static int
create(const struct sg_cfg *cfg, const char *name)
{
	struct sg_keys_ent ent;
	struct sg_store *st;
	struct sg_error err;
	char secret[SG_KEYS_SECRET_MAX];
	json_t *body = json_pack("{s:s}", "name", name);
	int rc = 1;

	/* Not UTF-8: JSON has no string for it. */
	if (body == NULL) {
		fprintf(stderr, "sandgate: a key's name is UTF-8 text without "
		    "control characters\n");
		return 1;
	}
	if ((st = sg_cli_open_store(cfg)) == NULL) {
		json_decref(body);
		return 1;
	}
	if (sg_keys_create(cfg, st, body, secret, &ent, &err) == -1)
		fprintf(stderr, "sandgate: %s\n", err.message);
	else {
		printf("%s\n", secret);
		sg_keys_clear(&ent);
		rc = 0;
	}
	memset(secret, 0, sizeof(secret));
	json_decref(body);
	sg_store_close(st);
	return rc;
}

/* "600" or "none" (0: no limit). */
static const char *
lim(long long v, char *buf, size_t bufsz)
{
	if (v <= 0)
		return "none";
	snprintf(buf, bufsz, "%lld", v);
	return buf;
}

/* A key's limits as they hold (after auth.limits) and what it spent in
 * its budget period, on two indented lines. */
static int
print_limits(const struct sg_cfg *cfg, struct sg_store *st,
    const struct sg_keys_ent *e, int64_t now)
{
	struct sg_keys_spend s;
	struct sg_error err;
	json_t *eff = sg_keys_effective(cfg, e), *t;
	char a[32], b[32], c[32], d[32], since[16], budget[32];
	size_t i;

	if (sg_keys_spend(cfg, st, e, now, &s, &err) == -1) {
		json_decref(eff);
		fprintf(stderr, "sandgate: %s\n", err.message);
		return -1;
	}
	if (json_real_value(json_object_get(eff, "budget")) > 0)
		snprintf(budget, sizeof(budget), "$%.2f a %s",
		    json_real_value(json_object_get(eff, "budget")),
		    sg_keys_period_name(s.period));
	else
		snprintf(budget, sizeof(budget), "none");
	printf("    limits: rpm %s, tpm %s, budget %s, sandbox_seconds %s, "
	    "max_concurrent %s, tools ", lim(json_integer_value(
	    json_object_get(eff, "rpm")), a, sizeof(a)), lim(json_integer_value(
	    json_object_get(eff, "tpm")), b, sizeof(b)), budget,
	    lim(json_integer_value(json_object_get(eff, "sandbox_seconds")), c,
	    sizeof(c)), lim(json_integer_value(json_object_get(eff,
	    "max_concurrent")), d, sizeof(d)));
	t = json_object_get(eff, "tools");
	if (e->key == NULL || e->key->tools == NULL)
		printf("all\n");
	else if (json_array_size(t) == 0)
		printf("none\n");
	else {
		for (i = 0; i < json_array_size(t); i++)
			printf("%s%s", i > 0 ? "," : "",
			    json_string_value(json_array_get(t, i)));
		printf("\n");
	}
	json_decref(eff);
	day_of(s.period_start, since, sizeof(since));
	printf("    this %s (since %s): $%.4f, %lld tokens, %.1f s of sandbox, "
	    "%lld requests\n", sg_keys_period_name(s.period), since,
	    (double)s.cost / 1e9, (long long)s.tokens,
	    (double)s.sandbox_ms / 1000.0, (long long)s.requests);
	return 0;
}

/* The store's keys, revoked ones too, read before any is printed: a
 * key's spend is another query. */
struct row {
	char	 name[64], sha256[65];
	int64_t	 created_at, revoked_at;
};
struct rows {
	struct row	*v;
	size_t		 n, cap;
};

static int
keep_row(void *arg, const struct sg_store_key *k)
{
	struct rows *r = arg;
	struct row *nv;

	if (r->n == r->cap) {
		if ((nv = realloc(r->v, (r->cap ? r->cap * 2 : 16) *
		    sizeof(*nv))) == NULL)
			return -1;
		r->v = nv;
		r->cap = r->cap ? r->cap * 2 : 16;
	}
	sg_copy(r->v[r->n].name, sizeof(r->v[0].name), k->name);
	sg_copy(r->v[r->n].sha256, sizeof(r->v[0].sha256), k->sha256);
	r->v[r->n].created_at = k->created_at;
	r->v[r->n].revoked_at = k->revoked_at;
	r->n++;
	return 0;
}

static int
list(const struct sg_cfg *cfg)
{
	struct sg_keys_ent *all = NULL;
	struct rows r = { NULL, 0, 0 };
	struct sg_store *st;
	struct sg_error err;
	char when[32];
	int64_t now = now_ms();
	size_t i, j, n = 0;
	int rc = 1;
	time_t t;

	if ((st = sg_cli_open_store(cfg)) == NULL)
		return 1;
	if (sg_keys_all(cfg, st, &all, &n, &err) == -1) {
		fprintf(stderr, "sandgate: %s\n", err.message);
		goto out;
	}
	if (sg_store_key_list(st, keep_row, &r) != SG_STORE_OK) {
		store_error(st);
		goto out;
	}
	rc = 0;
	for (i = 0; i < n && all[i].config; i++) {
		printf("%-24s %.12s…  from %s\n", all[i].name,
		    all[i].tenant[0] != '\0' ? all[i].tenant : "(unresolved)",
		    cfg->path);
		rc |= print_limits(cfg, st, &all[i], now) == -1;
	}
	for (j = 0; j < r.n; j++) {
		t = (time_t)r.v[j].created_at;
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
		printf("%-24s %.12s…  created %s  %s\n", r.v[j].name,
		    r.v[j].sha256, when, r.v[j].revoked_at != 0 ? "revoked" :
		    "active");
		for (i = 0; i < n && r.v[j].revoked_at == 0; i++)
			if (!all[i].config &&
			    strcmp(all[i].tenant, r.v[j].sha256) == 0)
				rc |= print_limits(cfg, st, &all[i], now) == -1;
	}
out:
	free(r.v);
	sg_keys_free(all, n);
	sg_store_close(st);
	return rc;
}

static int
revoke(const struct sg_cfg *cfg, const char *name)
{
	struct sg_keys_ent ent;
	struct sg_store *st;
	struct sg_error err;
	int rc = 1;

	if ((st = sg_cli_open_store(cfg)) == NULL)
		return 1;
	if (sg_keys_find(cfg, st, name, 1, &ent, &err) == -1)
		fprintf(stderr, "sandgate: %s\n", err.message);
	else {
		if (sg_keys_revoke(cfg, st, &ent, &err) == -1)
			fprintf(stderr, "sandgate: %s\n", err.message);
		else {
			printf("revoked %s\n", name);
			rc = 0;
		}
		sg_keys_clear(&ent);
	}
	sg_store_close(st);
	return rc;
}

/* The option's setting, as keyset.h names it ("--sandbox-seconds" and
 * "sandbox-seconds" are "sandbox_seconds"; "period" is "budget_period"):
 * its name, or NULL. */
static const char *
setting_of(const char *opt)
{
	static const char *const names[] = { "rpm", "tpm", "budget",
		"budget_period", "sandbox_seconds", "max_concurrent", "tools",
		NULL };
	char norm[32];
	size_t i;

	if (strncmp(opt, "--", 2) == 0)
		opt += 2;
	if (strcmp(opt, "period") == 0)
		return "budget_period";
	sg_copy(norm, sizeof(norm), opt);
	for (i = 0; norm[i] != '\0'; i++)
		if (norm[i] == '-')
			norm[i] = '_';
	for (i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], norm) == 0)
			return names[i];
	return NULL;
}

/* New reference: opt's value as the JSON the setting takes, or NULL
 * (said) when it is not one. The bounds are keyset.h's to check. */
static json_t *
value_of(const char *setting, const char *v)
{
	json_t *tools;
	char *end, *copy, *tok, *save;
	long long n;
	double d;

	if (strcmp(setting, "budget_period") == 0)
		return json_string(v);
	if (strcmp(setting, "tools") == 0) {
		tools = json_array();
		if ((copy = strdup(v)) == NULL)
			return NULL;
		for (tok = strtok_r(copy, ",", &save); tok != NULL;
		    tok = strtok_r(NULL, ",", &save))
			json_array_append_new(tools, json_string(tok));
		free(copy);
		return tools;
	}
	errno = 0;
	if (strcmp(setting, "budget") == 0) {
		d = strtod(v, &end);
		if (*v != '\0' && *end == '\0' && errno == 0 && isfinite(d))
			return json_real(d);
		fprintf(stderr, "sandgate: --budget takes US dollars (5, "
		    "12.50), not %s\n", v);
		return NULL;
	}
	n = strtoll(v, &end, 10);
	if (*v != '\0' && *end == '\0' && errno == 0)
		return json_integer(n);
	fprintf(stderr, "sandgate: --%s takes a whole number, not %s\n",
	    setting, v);
	return NULL;
}

/* The options after NAME as the patch the admin API takes: 0, -1 for a
 * usage error, 1 for a bad value (said). */
static int
patch_of(int argc, char *argv[], json_t *patch)
{
	const char *setting;
	json_t *v;
	int i;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--all-tools") == 0) {
			json_object_set_new(patch, "tools", json_null());
			continue;
		}
		if (i + 1 >= argc)
			return -1;
		if (strcmp(argv[i], "--clear") == 0) {
			if ((setting = setting_of(argv[++i])) == NULL) {
				fprintf(stderr, "sandgate: --clear takes a setting "
				    "(rpm, tpm, budget, period, sandbox-seconds, "
				    "max-concurrent, tools), not %s\n", argv[i]);
				return 1;
			}
			json_object_set_new(patch, setting, json_null());
			continue;
		}
		if (strncmp(argv[i], "--", 2) != 0 ||
		    (setting = setting_of(argv[i])) == NULL)
			return -1;
		if ((v = value_of(setting, argv[++i])) == NULL)
			return 1;
		json_object_set_new(patch, setting, v);
	}
	return json_object_size(patch) > 0 ? 0 : -1;
}

/* keys set NAME OPTION...: a store key's settings changed as POST
 * /v1/organization/api_keys/{id} changes them. */
static int
set(const struct sg_cfg *cfg, int argc, char *argv[])
{
	struct sg_keys_ent ent;
	struct sg_store *st;
	struct sg_error err;
	json_t *patch = json_object();
	int rc;

	if ((rc = patch_of(argc - 1, argv + 1, patch)) != 0) {
		json_decref(patch);
		return rc;
	}
	if ((st = sg_cli_open_store(cfg)) == NULL) {
		json_decref(patch);
		return 1;
	}
	rc = 1;
	if (sg_keys_find(cfg, st, argv[0], 1, &ent, &err) == -1)
		fprintf(stderr, "sandgate: %s\n", err.message);
	else {
		if (sg_keys_update(cfg, st, &ent, patch, &err) == -1)
			fprintf(stderr, "sandgate: %s\n", err.message);
		else {
			printf("%s\n", ent.name);
			rc = print_limits(cfg, st, &ent, now_ms()) == -1;
		}
		sg_keys_clear(&ent);
	}
	json_decref(patch);
	sg_store_close(st);
	return rc;
}

/* ---- keys usage ---------------------------------------------------- */

struct usage {
	int		 by;		/* 'k', 'm' or 'd' */
	int64_t		 from_ms;
	struct sg_store_use_sum total;
	int		 rows;
};

/* One line of the table; id is the key's id (by key) or NULL. */
static void
print_row(const char *label, const char *id, const struct sg_store_use_sum *s)
{
	printf("%-24.24s ", label);
	if (id != NULL)
		printf("%-28s ", id);
	printf("%8lld %11lld %12lld %12lld %12lld %9lld %10.1f %12.4f\n",
	    (long long)s->requests, (long long)s->model_requests,
	    (long long)s->input_tokens, (long long)s->cached_tokens,
	    (long long)s->output_tokens, (long long)s->code_runs,
	    (double)s->sandbox_ms / 1000.0,
	    (double)(s->cost_input + s->cost_output + s->cost_sandbox) / 1e9);
}

static int
usage_row(void *arg, const struct sg_store_use_sum *s)
{
	struct usage *u = arg;
	struct sg_store_use_sum *t = &u->total;
	char day[16];

	if (u->by == 'd') {
		day_of((u->from_ms + s->bucket * DAY_MS) / 1000, day, sizeof(day));
		print_row(day, NULL, s);
	} else if (u->by == 'k')
		print_row(s->key_name != NULL ? s->key_name : "-",
		    s->key_id != NULL ? s->key_id : "", s);
	else
		print_row(s->model != NULL && s->model[0] != '\0' ? s->model :
		    "(no model)", NULL, s);
	t->requests += s->requests;
	t->model_requests += s->model_requests;
	t->input_tokens += s->input_tokens;
	t->cached_tokens += s->cached_tokens;
	t->output_tokens += s->output_tokens;
	t->code_runs += s->code_runs;
	t->sandbox_ms += s->sandbox_ms;
	t->cost_input += s->cost_input;
	t->cost_output += s->cost_output;
	t->cost_sandbox += s->cost_sandbox;
	u->rows++;
	return 0;
}

/* keys usage [--by key|model|day] [--days N]: the ledger summed over the
 * last N days (today, UTC, and the N-1 before it). */
static int
usage(const struct sg_cfg *cfg, int argc, char *argv[])
{
	struct sg_store_use_q q;
	struct usage u;
	struct sg_store *st;
	const char *by = "key";
	char *end;
	long days = 30;
	int i, rc;

	for (i = 0; i < argc; i++) {
		if (i + 1 >= argc)
			return -1;
		if (strcmp(argv[i], "--by") == 0)
			by = argv[++i];
		else if (strcmp(argv[i], "--days") == 0) {
			days = strtol(argv[++i], &end, 10);
			if (*argv[i] == '\0' || *end != '\0' || days < 1 ||
			    days > 3660) {
				fprintf(stderr, "sandgate: --days takes a number "
				    "of days from 1 to 3660, not %s\n", argv[i]);
				return 1;
			}
		} else
			return -1;
	}
	if (strcmp(by, "key") != 0 && strcmp(by, "model") != 0 &&
	    strcmp(by, "day") != 0)
		return -1;
	memset(&q, 0, sizeof(q));
	memset(&u, 0, sizeof(u));
	u.by = by[0];
	q.to_ms = now_ms() + 1;
	q.from_ms = u.from_ms = q.to_ms / DAY_MS * DAY_MS - (days - 1) * DAY_MS;
	q.bucket_ms = u.by == 'd' ? DAY_MS : q.to_ms - q.from_ms;
	q.by = u.by == 'k' ? SG_USE_BY_KEY : u.by == 'm' ? SG_USE_BY_MODEL : 0;
	if ((st = sg_cli_open_store(cfg)) == NULL)
		return 1;
	printf("%-24s ", u.by == 'k' ? "KEY" : u.by == 'm' ? "MODEL" : "DAY");
	if (u.by == 'k')
		printf("%-28s ", "ID");
	printf("%8s %11s %12s %12s %12s %9s %10s %12s\n", "REQUESTS",
	    "MODEL_CALLS", "INPUT", "CACHED", "OUTPUT", "CODE_RUNS",
	    "SANDBOX_S", "COST_USD");
	rc = sg_store_use_sum(st, &q, usage_row, &u);
	if (rc != SG_STORE_OK)
		store_error(st);
	else
		print_row("total", u.by == 'k' ? "" : NULL, &u.total);
	sg_store_close(st);
	return rc == SG_STORE_OK ? 0 : 1;
}

int
sg_cli_keys(const struct sg_cfg *cfg, int argc, char *argv[])
{
	const char *sub = argv[0];

	if (strcmp(sub, "create") == 0 && argc == 2)
		return create(cfg, argv[1]);
	if (strcmp(sub, "list") == 0 && argc == 1)
		return list(cfg);
	if (strcmp(sub, "revoke") == 0 && argc == 2)
		return revoke(cfg, argv[1]);
	if (strcmp(sub, "set") == 0 && argc >= 3)
		return set(cfg, argc - 1, argv + 1);
	if (strcmp(sub, "usage") == 0)
		return usage(cfg, argc - 1, argv + 1);
	return -1;
}
