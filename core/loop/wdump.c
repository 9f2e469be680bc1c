#include <stdlib.h>
#include <string.h>

#include "wdump.h"

/* Append v's compact dump to b: 0, or -1. */
static int
add(struct sg_buf *b, const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	int rc = s != NULL ? sg_buf_add(b, s, strlen(s)) : -1;

	free(s);
	return rc;
}

/* The list's items not dumped yet, after the others: 0, or -1. */
static int
grow(struct sg_wdump *w, const json_t *list)
{
	size_t i;

	if (list != w->list || json_array_size(list) < w->n) {
		w->list = list;
		w->n = w->items.len = 0;
	}
	for (i = w->n; i < json_array_size(list); i++)
		if ((i > 0 && sg_buf_add(&w->items, ",", 1) == -1) ||
		    add(&w->items, json_array_get(list, i)) == -1) {
			w->list = NULL;
			return -1;
		}
	w->n = i;
	return 0;
}

char *
sg_wdump_text(struct sg_wdump *w, const json_t *work, const char *key,
    size_t *len)
{
	const json_t *list = json_object_get(work, key);
	struct sg_buf b = { 0 };
	const char *k;
	json_t *v, *name;
	int rc = 0;

	if (!json_is_array(list) || grow(w, list) == -1) {
		char *text = json_dumps(work, JSON_COMPACT);

		*len = text != NULL ? strlen(text) : 0;
		return text;
	}
	/* What json_dumps writes: the members in order, "key":value. */
	rc |= sg_buf_add(&b, "{", 1);
	json_object_foreach((json_t *)work, k, v) {
		if (b.len > 1)
			rc |= sg_buf_add(&b, ",", 1);
		name = json_string(k);
		rc |= name != NULL ? add(&b, name) : -1;
		json_decref(name);
		rc |= sg_buf_add(&b, ":", 1);
		if (v != list)
			rc |= add(&b, v);
		else
			rc |= sg_buf_add(&b, "[", 1) | (w->items.len > 0 ?
			    sg_buf_add(&b, w->items.p, w->items.len) : 0) |
			    sg_buf_add(&b, "]", 1);
	}
	rc |= sg_buf_add(&b, "}", 1);
	if (rc != 0) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

void
sg_wdump_free(struct sg_wdump *w)
{
	free(w->items.p);
	memset(w, 0, sizeof(*w));
}
