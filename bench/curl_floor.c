/*
 * libcurl's own cost of the passthrough's upstream transfer, without
 * sandgate: the same options upstream.c sets (a prepared CURLU, the same
 * header list, a progress callback, keep-alive), N POSTs of the bench's
 * chat body on one handle. bench/curl_floor.sh runs it under callgrind at
 * two counts: the difference over the extra transfers is libcurl's
 * instructions a transfer, the floor under sandgate's passthrough.
 *   curl_floor URL N
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

static size_t
drop(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static int
progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
    curl_off_t un)
{
	(void)arg;
	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return 0;
}

int
main(int argc, char **argv)
{
	static const char body[] = "{\"model\":\"echo\",\"messages\":[{\"role\":"
	    "\"user\",\"content\":\"hi\"}]}";
	static const char *const lines[] = { "Content-Type: application/json",
	    "Accept: application/json, text/event-stream", "Expect:",
	    "User-Agent: sandgate/0.1", "Authorization: Bearer x" };
	struct curl_slist *hdrs = NULL;
	CURLU *u;
	CURL *h;
	size_t i;
	int n, k;

	if (argc != 3 || (n = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: curl_floor URL N\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_ALL);
	if ((h = curl_easy_init()) == NULL || (u = curl_url()) == NULL ||
	    curl_url_set(u, CURLUPART_URL, argv[1], 0) != CURLUE_OK)
		return 1;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		hdrs = curl_slist_append(hdrs, lines[i]);
	for (k = 0; k < n; k++) {
		curl_easy_setopt(h, CURLOPT_CURLU, u);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)(sizeof(body) - 1));
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
		curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, drop);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, drop);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, progress);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		if (curl_easy_perform(h) != CURLE_OK) {
			fprintf(stderr, "curl_floor: transfer %d failed\n", k);
			return 1;
		}
	}
	curl_slist_free_all(hdrs);
	curl_url_cleanup(u);
	curl_easy_cleanup(h);
	curl_global_cleanup();
	return 0;
}
