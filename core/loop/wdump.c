#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wdump.h"
#include "../../lib/jdump.h"

/* Append v's compact dump to b: 0, or -1. */
static int
add(struct sg_buf *b, const json_t *v)
{
	return sg_jdump(b, v);
}

/* The list's items not dumped yet, after the others: 0, or -1. */
static int
grow(struct sg_wdump *w, json_t *list)
{
	size_t i;

	if (list != w->list || json_array_size(list) < w->n) {
		json_decref(w->list);
		w->list = json_incref(list);
		w->n = w->items.len = 0;
	}
	for (i = w->n; i < json_array_size(list); i++)
		if ((i > 0 && sg_buf_add(&w->items, ",", 1) == -1) ||
		    add(&w->items, json_array_get(list, i)) == -1) {
			json_decref(w->list);
			w->list = NULL;
			return -1;
		}
	w->n = i;
	return 0;
}

/* New text: "k":v as json_dumps writes a member. */
static char *
member(const char *k, const json_t *v)
{
	struct sg_buf b = { 0 };
	json_t *name = json_string(k);
	int rc = name != NULL ? add(&b, name) : -1;

	json_decref(name);
	if (rc == -1 || sg_buf_add(&b, ":", 1) == -1 || add(&b, v) == -1) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* Member k:v's text, dumped when v is not the value dumped for k
 * before; NULL out of memory. Borrowed, or new in *mine (no room). */
static const char *
text_of(struct sg_wdump *w, const char *k, json_t *v, char **mine)
{
	int i;

	*mine = NULL;
	for (i = 0; i < w->nm && strcmp(w->m[i].key, k) != 0; i++)
		;
	if (i < w->nm && w->m[i].v == v)
		return w->m[i].text;
	if (i == w->nm && w->nm == SG_WDUMP_MEMBERS)
		return *mine = member(k, v);
	if (i == w->nm) {
		if ((w->m[i].key = strdup(k)) == NULL)
			return NULL;
		w->nm++;
	}
	json_decref(w->m[i].v);
	free(w->m[i].text);
	w->m[i].v = NULL;
	if ((w->m[i].text = member(k, v)) != NULL)
		w->m[i].v = json_incref(v);
	return w->m[i].text;
}

/*
 * The sanitizer build (the one every integration test also runs) checks
 * the rule this rests on: the text made from parts is the whole dump. A
 * change of the loop's that edits a value in place fails there at once,
 * instead of sending a stale body upstream.
 */
static void
check(const json_t *work, const struct sg_buf *b)
{
#ifdef __SANITIZE_ADDRESS__
	char *whole = json_dumps(work, JSON_COMPACT);

	if (whole != NULL && (strlen(whole) != b->len ||
	    memcmp(whole, b->p, b->len) != 0)) {
		fprintf(stderr, "sandgate: wdump: the body made from its parts "
		    "is not its dump: a value was changed in place\n");
		abort();
	}
	free(whole);
#else
	(void)work;
	(void)b;
#endif
}

char *
sg_wdump_text(struct sg_wdump *w, const json_t *work, const char *key,
    size_t *len)
{
	json_t *list = json_object_get(work, key), *v;
	struct sg_buf b = { 0 };
	const char *k, *t;
	char *mine;
	int rc = 0;

	if (!json_is_array(list) || grow(w, list) == -1) {
		return sg_jdump_text(work, len);
	}
	/* What json_dumps writes: the members in order, "key":value. */
	rc |= sg_buf_add(&b, "{", 1);
	json_object_foreach((json_t *)work, k, v) {
		if (b.len > 1)
			rc |= sg_buf_add(&b, ",", 1);
		if (v == list) {
			/* Its key as "key":null has it, null left out. */
			rc |= (t = text_of(w, k, json_null(), &mine)) == NULL ? -1 :
			    sg_buf_add(&b, t, strlen(t) - 4);
			free(mine);
			rc |= sg_buf_add(&b, "[", 1) | (w->items.len > 0 ?
			    sg_buf_add(&b, w->items.p, w->items.len) : 0) |
			    sg_buf_add(&b, "]", 1);
			continue;
		}
		rc |= (t = text_of(w, k, v, &mine)) == NULL ? -1 :
		    sg_buf_add(&b, t, strlen(t));
		free(mine);
	}
	rc |= sg_buf_add(&b, "}", 1);
	if (rc != 0) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	check(work, &b);
	return b.p;
}

void
sg_wdump_free(struct sg_wdump *w)
{
	int i;

	json_decref(w->list);
	free(w->items.p);
	for (i = 0; i < w->nm; i++) {
		free(w->m[i].key);
		json_decref(w->m[i].v);
		free(w->m[i].text);
	}
	memset(w, 0, sizeof(*w));
}
