/*
 * sandgate sessions list [--key NAME] | purge (--key NAME | --all): the
 * sessions in the store, and deleting them with their sandboxes (at the
 * provider first; a sandbox that cannot be deleted keeps its session).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "cli.h"
#include "../core/sandbox.h"

struct names {
	const struct sg_cfg *cfg;
	const char	*want;		/* a key name to find */
	char		 tenant[65];	/* its hash, when found */
	const char	*hash;		/* a hash to name */
	char		 name[64];	/* its name, when found */
};

static int
store_key(void *arg, const struct sg_store_key *k)
{
	struct names *n = arg;

	if (k->revoked_at != 0)
		return 0;
	if (n->want != NULL && strcmp(k->name, n->want) == 0)
		snprintf(n->tenant, sizeof(n->tenant), "%s", k->sha256);
	if (n->hash != NULL && strcmp(k->sha256, n->hash) == 0)
		snprintf(n->name, sizeof(n->name), "%s", k->name);
	return 0;
}

/* The tenant of key name (config's, the store's, or "anonymous"). */
static int
tenant_of(const struct sg_cfg *cfg, struct sg_store *st, const char *name,
    char tenant[65])
{
	struct names n = { cfg, name, "", NULL, "" };
	size_t i;

	if (strcmp(name, "anonymous") == 0) {
		snprintf(tenant, 65, "anonymous");
		return 0;
	}
	for (i = 0; i < cfg->auth.nkeys; i++)
		if (strcmp(cfg->auth.keys[i].name, name) == 0) {
			snprintf(tenant, 65, "%s", cfg->auth.keys[i].sha256);
			return 0;
		}
	sg_store_key_list(st, store_key, &n);
	if (n.tenant[0] == '\0') {
		fprintf(stderr, "sandgate: no key named %s\n", name);
		return -1;
	}
	snprintf(tenant, 65, "%s", n.tenant);
	return 0;
}

/* A tenant's key name for display, else the start of its hash. */
static void
name_of(const struct sg_cfg *cfg, struct sg_store *st, const char *tenant,
    char *out, size_t outsz)
{
	struct names n = { cfg, NULL, "", tenant, "" };
	size_t i;

	for (i = 0; i < cfg->auth.nkeys; i++)
		if (strcmp(cfg->auth.keys[i].sha256, tenant) == 0) {
			snprintf(out, outsz, "%s", cfg->auth.keys[i].name);
			return;
		}
	sg_store_key_list(st, store_key, &n);
	if (n.name[0] != '\0')
		snprintf(out, outsz, "%s", n.name);
	else
		snprintf(out, outsz, "%.12s", tenant);
}

struct listing {
	const struct sg_cfg *cfg;
	struct sg_store	*st;
	int		 n;
};

static void
when(int64_t t, char *out, size_t outsz)
{
	time_t tt = (time_t)t;

	if (t <= 0)
		snprintf(out, outsz, "-");
	else
		strftime(out, outsz, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
}

static int
print_session(void *arg, const struct sg_store_sess *s)
{
	struct listing *l = arg;
	char key[64], used[32], expires[32];

	name_of(l->cfg, l->st, s->tenant, key, sizeof(key));
	when(s->last_used_at, used, sizeof(used));
	when(s->expires_at, expires, sizeof(expires));
	printf("%-16s %-24s %-38s %-10s %-9s used %s  expires %s\n", key,
	    s->session_id, s->sandbox_id[0] != '\0' ? s->sandbox_id :
	    "(lost)", s->tool[0] != '\0' ? s->tool : "-", s->state[0] != '\0' ?
	    s->state : "-", used, expires);
	l->n++;
	return 0;
}

/* The sessions to purge, collected first: no read is held across a
 * provider call. */
struct doomed {
	struct sg_store_sess *v;
	size_t		 n, cap;
};

static int
collect(void *arg, const struct sg_store_sess *s)
{
	struct doomed *d = arg;
	struct sg_store_sess *grown;

	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 16;
		if ((grown = realloc(d->v, d->cap * sizeof(*d->v))) == NULL)
			return -1;
		d->v = grown;
	}
	d->v[d->n++] = *s;
	return 0;
}

static int
purge(const struct sg_cfg *cfg, struct sg_store *st, const char *tenant)
{
	struct sg_prov prov;
	struct sg_sbx_env env = { cfg, st, &prov, NULL };
	struct doomed d = { NULL, 0, 0 };
	struct sg_store_sbx row;
	char why[512];
	size_t i;
	int failed = 0, done = 0, rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	sg_prov_init(&prov);
	if (sg_store_sess_list(st, tenant, collect, &d) != SG_STORE_OK)
		failed = -1;
	for (i = 0; i < d.n && failed >= 0; i++) {
		const struct sg_store_sess *s = &d.v[i];

		rc = s->sandbox_id[0] == '\0' ? SG_STORE_NOTFOUND :
		    sg_store_sbx_get(st, s->sandbox_id, NULL, &row);
		if (rc == SG_STORE_OK) {
			rc = sg_sbx_destroy_row(&env, &row, why, sizeof(why));
			sg_store_sbx_clear(&row);
			if (rc == -1) {
				fprintf(stderr, "sandgate: session %s: sandbox "
				    "%s: %s\n", s->session_id, s->sandbox_id, why);
				failed++;
				continue;
			}
		}
		sg_store_sess_remove(st, s->tenant, s->session_id);
		done++;
	}
	free(d.v);
	sg_prov_free(&prov);
	curl_global_cleanup();
	if (failed < 0) {
		fprintf(stderr, "sandgate: %s\n", sg_store_errmsg(st));
		return 1;
	}
	printf("purged %d sessions, %d failed\n", done, failed);
	return failed > 0;
}

int
sg_cli_sessions(const struct sg_cfg *cfg, int argc, char *argv[])
{
	struct listing l = { cfg, NULL, 0 };
	const char *key = NULL;
	char tenant[65];
	int i, all = 0, rc;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--key") == 0 && i + 1 < argc)
			key = argv[++i];
		else if (strcmp(argv[i], "--all") == 0)
			all = 1;
		else
			return -1;
	}
	if (strcmp(argv[0], "purge") == 0 ? (key != NULL) == all :
	    strcmp(argv[0], "list") != 0 || all)
		return -1;
	if ((l.st = sg_cli_open_store(cfg)) == NULL)
		return 1;
	if (key != NULL && tenant_of(cfg, l.st, key, tenant) == -1) {
		sg_store_close(l.st);
		return 1;
	}
	if (strcmp(argv[0], "purge") == 0)
		rc = purge(cfg, l.st, key != NULL ? tenant : NULL);
	else if (sg_store_sess_list(l.st, key != NULL ? tenant : NULL,
	    print_session, &l) != SG_STORE_OK) {
		fprintf(stderr, "sandgate: %s\n", sg_store_errmsg(l.st));
		rc = 1;
	} else {
		if (l.n == 0)
			printf("no sessions\n");
		rc = 0;
	}
	sg_store_close(l.st);
	return rc;
}
