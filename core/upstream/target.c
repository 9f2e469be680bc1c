#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

static void
clear(struct sg_target *t)
{
	free(t->url);
	free(t->key);
	curl_url_cleanup(t->u);
	curl_slist_free_all(t->hdrs);
	memset(t, 0, sizeof(*t));
}

void
sg_targets_clear(struct sg_targets *ts)
{
	size_t i;

	for (i = 0; i < SG_TARGETS; i++)
		clear(&ts->t[i]);
	ts->next = 0;
}

/* t made for url and key: 0, or -1 out of memory (t left clear). */
static int
make(struct sg_target *t, const char *url, const char *key)
{
	struct curl_slist *nh;
	char auth[1024];
	size_t i;

	snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
	    key != NULL ? key : "");
	/* An empty Expect: curl would wait a second for 100-continue on
	 * large bodies from servers that never send it. */
	const char *lines[] = { "Content-Type: application/json",
	    "Accept: application/json, text/event-stream", "Expect:",
	    "User-Agent: sandgate/0.1", key != NULL ? auth : NULL };
	if ((t->url = strdup(url)) == NULL ||
	    (key != NULL && (t->key = strdup(key)) == NULL) ||
	    (t->u = curl_url()) == NULL)
		goto fail;
	/* One curl cannot parse goes as a string: the transfer then fails
	 * as it always did, with curl's own message. */
	if (curl_url_set(t->u, CURLUPART_URL, url, 0) != CURLUE_OK) {
		curl_url_cleanup(t->u);
		t->u = NULL;
	}
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		if (lines[i] == NULL)
			continue;
		if ((nh = curl_slist_append(t->hdrs, lines[i])) == NULL)
			goto fail;
		t->hdrs = nh;
	}
	return 0;
fail:
	clear(t);
	return -1;
}

static int
same_key(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

const struct sg_target *
sg_targets_get(struct sg_targets *ts, const char *url, const char *key)
{
	struct sg_target *t;
	size_t i;

	for (i = 0; i < SG_TARGETS; i++) {
		t = &ts->t[i];
		if (t->url != NULL && strcmp(t->url, url) == 0 &&
		    same_key(t->key, key))
			return t;
	}
	t = &ts->t[ts->next++ % SG_TARGETS];
	clear(t);
	return make(t, url, key) == 0 ? t : NULL;
}
