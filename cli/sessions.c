/*
 * sandgate sessions list [--key NAME] | purge (--key NAME | --all): the
 * sessions in the store, and deleting them with their sandboxes (at the
 * provider first; a sandbox that cannot be deleted keeps its session).
 * NAME is every key of that name, revoked ones too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "cli.h"
#include "../core/state/sandbox.h"

/*
 * Every key the config and the store know, read once before any session
 * is: names for the listing, tenants (key hashes) for --key. Revoked keys
 * too: their sessions stay until they expire or are purged, and the
 * operator knows them by name.
 */
struct key {
	char	 name[64];
	char	 tenant[65];
	int	 revoked;
};

struct keys {
	struct key	*v;
	size_t		 n, cap;
	int		 nomem;		/* one was left out */
};

static int
add_key(struct keys *ks, const char *name, const char *tenant, int revoked)
{
	struct key *grown;

	if (ks->n == ks->cap) {
		ks->cap = ks->cap ? ks->cap * 2 : 16;
		grown = realloc(ks->v, ks->cap * sizeof(*ks->v));
		if (grown == NULL) {
			ks->nomem = 1;
			return -1;
		}
		ks->v = grown;
	}
	sg_copy(ks->v[ks->n].name, sizeof(ks->v[ks->n].name), name);
	sg_copy(ks->v[ks->n].tenant, sizeof(ks->v[ks->n].tenant),
	    tenant);
	ks->v[ks->n++].revoked = revoked;
	return 0;
}

static int
store_key(void *arg, const struct sg_store_key *k)
{
	return add_key(arg, k->name, k->sha256, k->revoked_at != 0);
}

/* The config's keys, then the store's (oldest first): 0, or -1 said. */
static int
load_keys(const struct sg_cfg *cfg, struct sg_store *st, struct keys *ks)
{
	size_t i;

	for (i = 0; i < cfg->auth.nkeys; i++)
		add_key(ks, cfg->auth.keys[i].name, cfg->auth.keys[i].sha256,
		    0);
	add_key(ks, "anonymous", "anonymous", 0);
	if (sg_store_key_list(st, store_key, ks) != SG_STORE_OK) {
		fprintf(stderr, "sandgate: %s\n", sg_store_errmsg(st));
		return -1;
	}
	if (ks->nomem)
		fprintf(stderr, "sandgate: out of memory\n");
	return ks->nomem ? -1 : 0;
}

/* Keys named name, each said when revoked: how many (0 said too). */
static size_t
named(const struct keys *ks, const char *name)
{
	size_t i, n = 0;

	for (i = 0; i < ks->n; i++) {
		if (strcmp(ks->v[i].name, name) != 0)
			continue;
		if (ks->v[i].revoked)
			printf("key %s (%.12s…) is revoked; its sessions are "
			    "included\n", name, ks->v[i].tenant);
		n++;
	}
	if (n == 0)
		fprintf(stderr, "sandgate: no key named %s, active or "
		    "revoked\n", name);
	return n;
}

/* A tenant's key name for display (an active key's first), else the
 * start of its hash. */
static void
name_of(const struct keys *ks, const char *tenant, char *out, size_t outsz)
{
	const struct key *found = NULL;
	size_t i;

	for (i = 0; i < ks->n && (found == NULL || found->revoked); i++)
		if (strcmp(ks->v[i].tenant, tenant) == 0)
			found = &ks->v[i];
	if (found == NULL)
		snprintf(out, outsz, "%.12s", tenant);
	else
		snprintf(out, outsz, "%s%s", found->name, found->revoked ?
		    "(revoked)" : "");
}

/* fn for each session of the keys named name (NULL: every session). */
static int
each_session(struct sg_store *st, const struct keys *ks, const char *name,
    int (*fn)(void *, const struct sg_store_sess *), void *arg)
{
	size_t i;
	int rc = SG_STORE_OK;

	if (name == NULL)
		return sg_store_sess_list(st, NULL, fn, arg);
	for (i = 0; i < ks->n && rc == SG_STORE_OK; i++)
		if (strcmp(ks->v[i].name, name) == 0)
			rc = sg_store_sess_list(st, ks->v[i].tenant, fn, arg);
	return rc;
}

static void
when(int64_t t, char *out, size_t outsz)
{
	time_t tt = (time_t)t;

	if (t <= 0)
		snprintf(out, outsz, "-");
	else
		strftime(out, outsz, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
}

#define ROW	"%-16s %-24s %-38s %-10s %-9s %-20s %s\n"

static void
print_session(const struct keys *ks, const struct sg_store_sess *s)
{
	char key[80], used[32], expires[32];

	name_of(ks, s->tenant, key, sizeof(key));
	when(s->last_used_at, used, sizeof(used));
	when(s->expires_at, expires, sizeof(expires));
	printf(ROW, key, s->session_id, s->sandbox_id[0] != '\0' ?
	    s->sandbox_id : "(lost)", s->tool[0] != '\0' ? s->tool : "-",
	    s->state[0] != '\0' ? s->state : "-", used, expires);
}

/* The sessions, collected first: the listing prints a header above them
 * (or says there are none), and a purge holds no read across a provider
 * call. */
struct sess_list {
	struct sg_store_sess *v;
	size_t		 n, cap;
};

static int
collect(void *arg, const struct sg_store_sess *s)
{
	struct sess_list *d = arg;
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

static void
list(const struct keys *ks, const struct sess_list *d)
{
	size_t i;

	if (d->n == 0) {
		printf("no sessions\n");
		return;
	}
	printf(ROW, "KEY", "SESSION", "SANDBOX", "TOOL", "STATE", "USED",
	    "EXPIRES");
	for (i = 0; i < d->n; i++)
		print_session(ks, &d->v[i]);
}

static int
purge(const struct sg_cfg *cfg, struct sg_store *st,
    const struct sess_list *d)
{
	struct sg_prov prov;
	struct sg_sbx_env env = { cfg, st, &prov, NULL };
	struct sg_store_sbx row;
	char why[512];
	size_t i;
	int failed = 0, done = 0, rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	sg_prov_init(&prov);
	for (i = 0; i < d->n; i++) {
		const struct sg_store_sess *s = &d->v[i];

		rc = s->sandbox_id[0] == '\0' ? SG_STORE_NOTFOUND :
		    sg_store_sbx_get(st, s->sandbox_id, NULL, &row);
		if (rc == SG_STORE_OK) {
			rc = sg_sbx_destroy_row(&env, &row, why, sizeof(why));
			sg_store_sbx_clear(&row);
			/* 1: gone meanwhile (fine), or taken: a run began, and
			 * its session stays for a purge once it is over. */
			if (rc == 1 && sg_store_sbx_get(st, s->sandbox_id, NULL,
			    &row) == SG_STORE_OK) {
				sg_store_sbx_clear(&row);
				snprintf(why, sizeof(why), "in use (a run began); "
				    "purge again once it is over");
				rc = -1;
			}
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
	sg_prov_free(&prov);
	curl_global_cleanup();
	printf("purged %d sessions, %d failed\n", done, failed);
	return failed > 0;
}

int
sg_cli_sessions(const struct sg_cfg *cfg, int argc, char *argv[])
{
	struct keys ks = { NULL, 0, 0, 0 };
	struct sess_list d = { NULL, 0, 0 };
	struct sg_store *st;
	const char *key = NULL;
	int i, all = 0, rc = 1;

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
	if ((st = sg_cli_open_store(cfg)) == NULL)
		return 1;
	if (load_keys(cfg, st, &ks) == -1 || (key != NULL && named(&ks,
	    key) == 0))
		goto out;
	if (each_session(st, &ks, key, collect, &d) != SG_STORE_OK) {
		fprintf(stderr, "sandgate: %s\n", sg_store_errmsg(st));
		goto out;
	}
	if (strcmp(argv[0], "purge") == 0)
		rc = purge(cfg, st, &d);
	else {
		list(&ks, &d);
		rc = 0;
	}
out:
	free(d.v);
	free(ks.v);
	sg_store_close(st);
	return rc;
}
