/*
 * The query of the Usage and Costs APIs, read as OpenAI's spec writes it
 * (/organization/usage/completions, .../code_interpreter_sessions and
 * /organization/costs): each parameter's first value, and the arrays as
 * often as they come, as name[]=v (what the Node SDK sends) and as
 * name=v alike. A parameter that is not the route's is ignored, as
 * OpenAI ignores it.
 *
 * The window is whole buckets, in UTC: start_time rounded down to its
 * bucket, end_time (exclusive; now when absent) rounded up, so every
 * bucket is whole and the same query always gives the same buckets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "org_query.h"
#include "../http/http.h"
#include "../../store/usage.h"

/* 9999-12-31T23:59:59Z: past it a time is a typo; ms still fit. */
#define MAX_TIME	253402300799LL
/* Values of one array parameter: ample for key ids and models. */
#define MAX_VALUES	256

enum { P_START, P_END, P_WIDTH, P_LIMIT, P_PAGE, P_BATCH, NSCALARS };
static const char *const scalars[NSCALARS] = { "start_time", "end_time",
	"bucket_width", "limit", "page", "batch" };
enum { L_GROUP, L_KEYS, L_MODELS, L_PROJECTS, L_USERS, NLISTS };
static const char *const lists[NLISTS] = { "group_by", "api_key_ids",
	"models", "project_ids", "user_ids" };

/* Which of them each kind reads (bit i: scalars[i], lists[i]). */
#define ALL(n)	((1u << (n)) - 1)
static const unsigned kind_scalars[] = { ALL(NSCALARS), ALL(P_BATCH),
	ALL(P_BATCH) };
static const unsigned kind_lists[] = { ALL(NLISTS),
	1u << L_GROUP | 1u << L_KEYS | 1u << L_PROJECTS,
	1u << L_GROUP | 1u << L_KEYS | 1u << L_PROJECTS };

/* The group_by values of each kind, and what each asks of the store.
 * sandgate has no projects, users, batches or service tiers: grouping by
 * them is taken, and they are null in every result. */
struct group {
	const char	*name;
	int		 by;	/* SG_USE_BY_* */
	int		 line;	/* costs' line items */
};
static const struct group compl_groups[] = { { "project_id", 0, 0 },
	{ "user_id", 0, 0 }, { "api_key_id", SG_USE_BY_KEY, 0 },
	{ "model", SG_USE_BY_MODEL, 0 }, { "batch", 0, 0 },
	{ "service_tier", 0, 0 }, { NULL, 0, 0 } };
/* api_key_id is sandgate's own here (OpenAI groups sessions by project
 * only): what each key's sandboxes cost in time is an operator's question. */
static const struct group ci_groups[] = { { "project_id", 0, 0 },
	{ "api_key_id", SG_USE_BY_KEY, 0 }, { NULL, 0, 0 } };
static const struct group costs_groups[] = { { "project_id", 0, 0 },
	{ "line_item", SG_USE_BY_MODEL | SG_USE_BY_TOOL, 1 },
	{ "api_key_id", SG_USE_BY_KEY, 0 }, { NULL, 0, 0 } };
static const struct group *const kind_groups[] = { compl_groups, ci_groups,
	costs_groups };

/* bucket_width: OpenAI's widths, with their default and largest limit;
 * costs have days only, up to 180 a page. */
struct width {
	const char	*name;
	int64_t		 seconds;
	long		 dflt, max;
};
static const struct width usage_widths[] = { { "1m", 60, 60, 1440 },
	{ "1h", 3600, 24, 168 }, { "1d", 86400, 7, 31 }, { NULL, 0, 0, 0 } };
static const struct width costs_widths[] = { { "1d", 86400, 7, 180 },
	{ NULL, 0, 0, 0 } };

struct list {
	char		**v;	/* owned, each owned */
	size_t		  n;
};

/* The parameters as they came, before they are checked. */
struct raw {
	enum sg_orgq_kind kind;
	char		*scalar[NSCALARS];	/* the first of each, owned */
	struct list	 list[NLISTS];
	struct sg_error	*err;
};

static void
list_free(struct list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int
oom(struct sg_error *err)
{
	return sg_error_server(err, 500, "Out of memory reading the query.");
}

static int
push(struct list *l, const char *value, const char *param,
    struct sg_error *err)
{
	char **v;

	if (l->n == MAX_VALUES)
		return sg_error_invalid(err, param, "invalid_value", "Invalid "
		    "'%s': at most %d values.", param, MAX_VALUES);
	if ((v = realloc(l->v, (l->n + 1) * sizeof(*v))) == NULL)
		return oom(err);
	l->v = v;
	if ((v[l->n] = strdup(value)) == NULL)
		return oom(err);
	l->n++;
	return 0;
}

static int
undecodable(struct sg_error *err, const char *param)
{
	return sg_error_invalid(err, param, "invalid_value", "Invalid '%s': "
	    "it does not decode to text.", param);
}

/* name is list's, as list=v or list[]=v. */
static int
is_list(const char *name, const char *list)
{
	size_t n = strlen(list);

	return strncmp(name, list, n) == 0 && (name[n] == '\0' ||
	    strcmp(name + n, "[]") == 0);
}

/* sg_http_query_each's fn: one parameter into r. */
static int
take(void *arg, const char *name, const char *value)
{
	struct raw *r = arg;
	size_t i;

	for (i = 0; i < NSCALARS; i++) {
		if (!(kind_scalars[r->kind] & 1u << i) ||
		    strcmp(name, scalars[i]) != 0)
			continue;
		if (value == NULL)
			return undecodable(r->err, scalars[i]);
		if (r->scalar[i] == NULL &&
		    (r->scalar[i] = strdup(value)) == NULL)
			return oom(r->err);
		return 0;
	}
	for (i = 0; i < NLISTS; i++)
		if ((kind_lists[r->kind] & 1u << i) && is_list(name, lists[i]))
			return value == NULL ? undecodable(r->err, lists[i]) :
			    push(&r->list[i], value, lists[i], r->err);
	return 0;
}

/* v as an integer in [0, max] into *out: 0; -1 when it is no integer,
 * -2 when it is one out of range. */
static int
integer(const char *v, long long max, long long *out)
{
	const char *p = v[0] == '-' ? v + 1 : v;
	long long n = 0;

	if (*p == '\0' || strspn(p, "0123456789") != strlen(p))
		return -1;
	for (; *p != '\0'; p++) {
		if (n > max)
			return -2;
		n = n * 10 + (*p - '0');
	}
	if (v[0] == '-' && n != 0)
		return -2;
	*out = n;
	return n > max ? -2 : 0;
}

static int
read_time(const char *v, const char *param, int64_t *out,
    struct sg_error *err)
{
	long long t;

	switch (integer(v, MAX_TIME, &t)) {
	case 0:
		*out = t;
		return 0;
	case -1:
		return sg_error_invalid(err, param, "invalid_type", "Invalid "
		    "'%s': expected an integer (unix seconds).", param);
	default:
		return sg_error_invalid(err, param, "invalid_value", "Invalid "
		    "'%s': expected unix seconds between 0 and %lld.", param,
		    MAX_TIME);
	}
}

/* The names of table, quoted, into out: "'a', 'b' or 'c'". */
static void
names_of(const struct group *g, const struct width *w, char *out,
    size_t outsz)
{
	size_t i, n = 0, len = 0;
	const char *name;

	out[0] = '\0';
	while ((g != NULL ? g[n].name : w[n].name) != NULL)
		n++;
	for (i = 0; i < n; i++) {
		name = g != NULL ? g[i].name : w[i].name;
		len += (size_t)snprintf(out + len, outsz - len, "%s'%s'",
		    i == 0 ? "" : i + 1 == n ? " or " : ", ", name);
		if (len >= outsz)
			return;
	}
}

static int
read_groups(const struct list *l, struct sg_orgq *q, struct sg_error *err)
{
	const struct group *g;
	char names[160];
	size_t i;

	for (i = 0; i < l->n; i++) {
		for (g = kind_groups[q->kind]; g->name != NULL; g++)
			if (strcmp(l->v[i], g->name) == 0)
				break;
		if (g->name == NULL) {
			names_of(kind_groups[q->kind], NULL, names,
			    sizeof(names));
			return sg_error_invalid(err, "group_by",
			    "invalid_value", "Invalid 'group_by': '%.64s' is "
			    "not one of %s.", l->v[i], names);
		}
		q->by |= g->by;
		q->by_line |= g->line;
	}
	return 0;
}

static int
read_width(const char *v, const struct width **w, enum sg_orgq_kind kind,
    struct sg_error *err)
{
	const struct width *t = kind == SG_ORGQ_COSTS ? costs_widths :
	    usage_widths;
	char names[64];

	*w = &t[kind == SG_ORGQ_COSTS ? 0 : 2];		/* 1d */
	if (v == NULL)
		return 0;
	for (; t->name != NULL; t++)
		if (strcmp(v, t->name) == 0) {
			*w = t;
			return 0;
		}
	names_of(NULL, kind == SG_ORGQ_COSTS ? costs_widths : usage_widths,
	    names, sizeof(names));
	return sg_error_invalid(err, "bucket_width", "invalid_value",
	    "Invalid 'bucket_width': expected %s.", names);
}

static int
read_limit(const char *v, const struct width *w, long *limit,
    struct sg_error *err)
{
	long long n;

	*limit = w->dflt;
	if (v == NULL)
		return 0;
	switch (integer(v, w->max, &n)) {
	case -1:
		return sg_error_invalid(err, "limit", "invalid_type", "Invalid "
		    "'limit': expected an integer.");
	case 0:
		if (n >= 1)
			break;
		/* FALLTHROUGH */
	default:
		return sg_error_invalid(err, "limit", "integer_out_of_range",
		    "Invalid 'limit': expected an integer between 1 and %ld "
		    "for bucket_width=%s.", w->max, w->name);
	}
	*limit = (long)n;
	return 0;
}

/* The window from start_time and end_time, on whole buckets. */
static int
read_window(char *const *s, int64_t now_ms, struct sg_orgq *q,
    struct sg_error *err)
{
	int64_t t0, t1;

	if (s[P_START] == NULL)
		return sg_error_invalid(err, "start_time",
		    "missing_required_parameter", "Missing required "
		    "parameter: 'start_time'.");
	if (read_time(s[P_START], "start_time", &t0, err) == -1)
		return -1;
	if (s[P_END] != NULL) {
		if (read_time(s[P_END], "end_time", &t1, err) == -1)
			return -1;
		if (t1 <= t0)
			return sg_error_invalid(err, "end_time",
			    "invalid_value", "Invalid 'end_time': it must be "
			    "after start_time.");
	} else
		/* Up to now, the bucket now is in included. */
		t1 = now_ms / 1000 + 1;
	q->start = t0 - t0 % q->width;
	q->end = t1 + (q->width - t1 % q->width) % q->width;
	if (q->end < q->start)		/* start_time in the future */
		q->end = q->start;
	return 0;
}

/* The page: "page_" and the hex of its first bucket's start, which must
 * be a bucket of the window. */
static int
read_page(const char *v, struct sg_orgq *q, struct sg_error *err)
{
	char *end;
	long long p;

	q->page = q->start;
	if (v == NULL)
		return 0;
	if (strncmp(v, "page_", 5) != 0 || strlen(v) != 21 ||
	    strspn(v + 5, "0123456789abcdef") != 16)
		goto bad;
	p = strtoll(v + 5, &end, 16);
	if (*end != '\0' || p < q->start || p >= q->end ||
	    (p - q->start) % q->width != 0)
		goto bad;
	q->page = p;
	return 0;
bad:
	return sg_error_invalid(err, "page", "invalid_value", "Invalid 'page': "
	    "not a cursor of this query (give next_page as it came).");
}

static int
read_filters(struct raw *r, struct sg_orgq *q, struct sg_error *err)
{
	const char *b = r->scalar[P_BATCH];

	if (b != NULL && strcmp(b, "true") != 0 && strcmp(b, "false") != 0)
		return sg_error_invalid(err, "batch", "invalid_type", "Invalid "
		    "'batch': expected true or false.");
	/* No usage of sandgate's is a batch's, a project's or a user's. */
	q->none = (b != NULL && strcmp(b, "true") == 0) ||
	    r->list[L_PROJECTS].n > 0 || r->list[L_USERS].n > 0;
	q->key_ids = r->list[L_KEYS].v;
	q->nkey_ids = r->list[L_KEYS].n;
	q->models = r->list[L_MODELS].v;
	q->nmodels = r->list[L_MODELS].n;
	r->list[L_KEYS].v = r->list[L_MODELS].v = NULL;
	r->list[L_KEYS].n = r->list[L_MODELS].n = 0;
	return 0;
}

int
sg_orgq_read(const char *uri, enum sg_orgq_kind kind, int64_t now_ms,
    struct sg_orgq *q, struct sg_error *err)
{
	struct raw r;
	const struct width *w;
	size_t i;
	int rc = -1;

	memset(q, 0, sizeof(*q));
	memset(&r, 0, sizeof(r));
	memset(err, 0, sizeof(*err));
	q->kind = r.kind = kind;
	r.err = err;
	if (sg_http_query_each(uri, take, &r) == -1) {
		if (r.err->status == 0)
			oom(err);
		goto done;
	}
	if (read_width(r.scalar[P_WIDTH], &w, kind, err) == -1)
		goto done;
	q->width = w->seconds;
	if (read_window(r.scalar, now_ms, q, err) == -1 ||
	    read_groups(&r.list[L_GROUP], q, err) == -1 ||
	    read_limit(r.scalar[P_LIMIT], w, &q->limit, err) == -1 ||
	    read_page(r.scalar[P_PAGE], q, err) == -1 ||
	    read_filters(&r, q, err) == -1)
		goto done;
	rc = 0;
done:
	for (i = 0; i < NSCALARS; i++)
		free(r.scalar[i]);
	for (i = 0; i < NLISTS; i++)
		list_free(&r.list[i]);
	return rc;
}

void
sg_orgq_free(struct sg_orgq *q)
{
	struct list keys = { q->key_ids, q->nkey_ids };
	struct list models = { q->models, q->nmodels };

	list_free(&keys);
	list_free(&models);
	q->key_ids = q->models = NULL;
	q->nkey_ids = q->nmodels = 0;
}

void
sg_orgq_cursor(int64_t start, char out[24])
{
	snprintf(out, 24, "page_%016llx", (unsigned long long)start);
}
