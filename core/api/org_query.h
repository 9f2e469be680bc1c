/*
 * sg_orgq: the query of a Usage or Costs request (org_query.c), read and
 * checked as OpenAI's spec has it: the window in whole buckets, the page
 * of it this request answers, the grouping and the filters. org_usage.c
 * answers it.
 */
#ifndef SG_ORG_QUERY_H
#define SG_ORG_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "../http/error.h"

enum sg_orgq_kind {
	SG_ORGQ_COMPL,		/* /organization/usage/completions */
	SG_ORGQ_CI,		/* .../usage/code_interpreter_sessions */
	SG_ORGQ_COSTS,		/* /organization/costs */
};

struct sg_orgq {
	enum sg_orgq_kind kind;
	int64_t		 width;		/* a bucket, in seconds */
	int64_t		 start, end;	/* the window, unix s, on buckets */
	int64_t		 page;		/* this page's first bucket */
	long		 limit;		/* buckets a page */
	int		 by;		/* SG_USE_BY_*: the store's grouping */
	int		 by_line;	/* costs: group_by=line_item */
	int		 none;		/* a filter nothing of sandgate's
					 * matches (projects, users, batch) */
	char		**key_ids;	/* api_key_ids, owned */
	size_t		 nkey_ids;
	char		**models;	/* models, owned */
	size_t		 nmodels;
};

/* q from uri's query for kind, now_ms the wall clock's now in unix ms
 * (end_time's default; not a monotonic clock): 0, or -1 with OpenAI's
 * 400 in err. q is to be freed by sg_orgq_free either way. */
int	sg_orgq_read(const char *uri, enum sg_orgq_kind, int64_t now_ms,
	    struct sg_orgq *q, struct sg_error *err);
void	sg_orgq_free(struct sg_orgq *);

/* The cursor of the page that starts at the bucket start: "page_" and 16
 * hex digits. */
void	sg_orgq_cursor(int64_t start, char out[24]);

#endif
