/*
 * The client keys as one list (see keys.h): the config's and the store's,
 * read with their settings, and what each may spend and spent. Making,
 * changing and revoking them: keys_edit.c.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys_int.h"
#include "../config/keyset.h"
#include "../state/ledger.h"
#include "../../lib/log.h"
#include "../../store/store.h"
#include "../../store/usage.h"

/* What a key of the config file (whose secret sandgate never keeps)
 * shows for its redacted form. */
#define REDACTED_CONFIG	"sk-...(config)"

const char *
sg_keys_period_name(int period)
{
	static const char *const names[] = { "day", "week", "month" };

	return period >= 0 && period <= SG_PERIOD_MONTH ? names[period] :
	    "month";
}

/* The store failed: what went wrong is logged (it names no host or
 * key); the client is told no more than that. */
int
sg_keys_store_failed(struct sg_store *store, struct sg_error *err,
    const char *what)
{
	sg_log("sandgate: keys: %s: %s", what, sg_store_errmsg(store));
	return sg_error_set(err, 503, "server_error", NULL, NULL, "The key "
	    "store is unavailable right now; try again later.");
}

void
sg_keys_clear(struct sg_keys_ent *e)
{
	sg_keyset_clear(&e->own);
	e->key = NULL;
}

void
sg_keys_free(struct sg_keys_ent *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		sg_keys_clear(&e[i]);
	free(e);
}

/* ---- reading the keys ---------------------------------------------- */

struct list {
	struct sg_keys_ent	*v;
	size_t			 n, cap;
	int			 oom;
	int			 broken;	/* a row's settings unreadable */
	char			 broken_name[64];
};

static struct sg_keys_ent *
grow(struct list *l)
{
	struct sg_keys_ent *nv;

	if (l->n == l->cap) {
		if ((nv = realloc(l->v, (l->cap ? l->cap * 2 : 16) *
		    sizeof(*nv))) == NULL) {
			l->oom = 1;
			return NULL;
		}
		l->v = nv;
		l->cap = l->cap ? l->cap * 2 : 16;
	}
	memset(&l->v[l->n], 0, sizeof(l->v[0]));
	sg_keyset_init(&l->v[l->n].own);
	return &l->v[l->n];
}

/* A store key's settings text into e->own and e->redacted: 0, or -1
 * when the row cannot be read. */
static int
read_settings(struct sg_keys_ent *e, const char *text)
{
	const char *param, *red;
	char why[256];
	json_t *o;
	int rc;

	sg_copy(e->redacted, sizeof(e->redacted), SG_KEYS_REDACTED_NONE);
	if (text == NULL || *text == '\0')
		return 0;
	if ((o = json_loads(text, 0, NULL)) == NULL)
		return -1;
	rc = sg_keyset_read(o, &e->own, why, sizeof(why), &param);
	if ((red = json_string_value(json_object_get(o, "redacted_value"))))
		sg_copy(e->redacted, sizeof(e->redacted), red);
	json_decref(o);
	return rc;
}

static int
add_stored(void *arg, const struct sg_store_key *k)
{
	struct list *l = arg;
	struct sg_keys_ent *e;

	if (k->revoked_at != 0)
		return 0;
	if ((e = grow(l)) == NULL)
		return -1;
	sg_copy(e->name, sizeof(e->name), k->name);
	sg_copy(e->tenant, sizeof(e->tenant), k->sha256);
	sg_use_key_id(e->tenant, e->id);
	e->created_at = k->created_at;
	if (read_settings(e, k->settings) == -1) {
		sg_keyset_clear(&e->own);
		l->broken = 1;
		sg_copy(l->broken_name, sizeof(l->broken_name), k->name);
		return -1;
	}
	l->n++;
	return 0;
}

/* A config key: its hash is its tenant; one whose secret is not set has
 * none, and an id of its own from its name (a label no hash can be). */
static void
add_config(struct list *l, const struct sg_cfg_key *k, int64_t mtime)
{
	struct sg_keys_ent *e;
	char label[96];

	if ((e = grow(l)) == NULL)
		return;
	sg_copy(e->name, sizeof(e->name), k->name);
	sg_copy(e->tenant, sizeof(e->tenant), k->sha256);
	if (k->sha256[0] != '\0')
		sg_use_key_id(k->sha256, e->id);
	else {
		snprintf(label, sizeof(label), "unresolved:%.63s", k->name);
		sg_use_key_id(label, e->id);
	}
	sg_copy(e->redacted, sizeof(e->redacted), REDACTED_CONFIG);
	e->config = 1;
	/* The file says no date: the key is as old as the file's text. */
	e->created_at = mtime;
	e->key = k;
	l->n++;
}

int
sg_keys_all(const struct sg_cfg *cfg, struct sg_store *store,
    struct sg_keys_ent **out, size_t *n, struct sg_error *err)
{
	struct list l = { NULL, 0, 0, 0, 0, "" };
	struct stat sb;
	int64_t mtime;
	size_t i;
	int rc = SG_STORE_OK;

	mtime = cfg->path != NULL && stat(cfg->path, &sb) == 0 ?
	    (int64_t)sb.st_mtime : 0;
	for (i = 0; i < cfg->auth.nkeys && !l.oom; i++)
		add_config(&l, &cfg->auth.keys[i], mtime);
	if (!l.oom)
		rc = sg_store_key_list(store, add_stored, &l);
	/* Pointers into the array, set once it stops moving. */
	for (i = 0; i < l.n; i++)
		if (!l.v[i].config)
			l.v[i].key = &l.v[i].own;
	if (l.oom)
		sg_error_server(err, 500, "Out of memory.");
	else if (l.broken)
		sg_error_set(err, 503, "server_error", NULL, NULL, "The stored "
		    "settings of key %s cannot be read.", l.broken_name);
	else if (rc != SG_STORE_OK)
		sg_keys_store_failed(store, err, "list");
	if (l.oom || l.broken || rc != SG_STORE_OK) {
		sg_keys_free(l.v, l.n);
		return -1;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

int
sg_keys_find(const struct sg_cfg *cfg, struct sg_store *store,
    const char *what, int by_name, struct sg_keys_ent *ent,
    struct sg_error *err)
{
	struct sg_keys_ent *all;
	size_t i, n;

	if (sg_keys_all(cfg, store, &all, &n, err) == -1)
		return -1;
	for (i = 0; i < n; i++)
		if (strcmp(by_name ? all[i].name : all[i].id, what) == 0)
			break;
	if (i == n) {
		sg_keys_free(all, n);
		if (by_name)
			return sg_error_set(err, 404, "invalid_request_error",
			    NULL, NULL, "No active key is named %s.", what);
		return sg_error_set(err, 404, "invalid_request_error", NULL,
		    NULL, "No API key found with id '%s'.", what);
	}
	*ent = all[i];
	if (!ent->config)
		ent->key = &ent->own;
	/* all[i]'s tools are ent's now. */
	sg_keyset_init(&all[i].own);
	sg_keys_free(all, n);
	return 0;
}

/* ---- what a key may spend, and spent --------------------------------- */

int
sg_keys_spend(const struct sg_cfg *cfg, struct sg_store *store,
    const struct sg_keys_ent *ent, int64_t now_ms, struct sg_keys_spend *s,
    struct sg_error *err)
{
	struct sg_cfg_limits lim;
	struct sg_store_use_tot t, ever;
	int64_t since;

	memset(s, 0, sizeof(*s));
	sg_cfg_limits_of(cfg, ent->key != NULL ? &ent->key->limits : NULL, &lim);
	s->period = lim.period >= 0 ? lim.period : SG_PERIOD_MONTH;
	since = sg_use_period_start(s->period, now_ms);
	s->period_start = since / 1000;
	if (ent->tenant[0] == '\0')
		return 0;
	if (sg_store_use_total(store, ent->tenant, since, &t) != SG_STORE_OK)
		return sg_keys_store_failed(store, err, "spend");
	s->cost = t.cost;
	s->tokens = t.tokens;
	s->sandbox_ms = t.sandbox_ms;
	s->requests = t.requests;
	s->last_ms = t.last_ms;
	/* Not used this period: when then, if ever (the ledger keeps
	 * usage.retention). */
	if (s->last_ms == 0) {
		if (sg_store_use_total(store, ent->tenant, 0, &ever) !=
		    SG_STORE_OK)
			return sg_keys_store_failed(store, err, "last use");
		s->last_ms = ever.last_ms;
	}
	return 0;
}

json_t *
sg_keys_effective(const struct sg_cfg *cfg, const struct sg_keys_ent *ent)
{
	struct sg_cfg_limits lim;
	json_t *tools = json_array();
	size_t i;

	sg_cfg_limits_of(cfg, ent->key != NULL ? &ent->key->limits : NULL, &lim);
	for (i = 0; i < cfg->ntools; i++)
		if (sg_cfg_key_may_use(ent->key, cfg->tools[i].name))
			json_array_append_new(tools,
			    json_string(cfg->tools[i].name));
	return json_pack("{s:I,s:I,s:f,s:s,s:I,s:i,s:o}", "rpm",
	    (json_int_t)lim.rpm, "tpm", (json_int_t)lim.tpm, "budget",
	    lim.budget, "budget_period", sg_keys_period_name(lim.period),
	    "sandbox_seconds", (json_int_t)lim.sandbox_seconds,
	    "max_concurrent", sg_cfg_key_limit(cfg, ent->key), "tools", tools);
}
