/*
 * libcurl's own cost of the passthrough's upstream transfer, without
 * sandgate: the same options upstream.c sets (a prepared CURLU, the same
 * header list, a progress callback, keep-alive), N POSTs of the bench's
 * chat body on one handle. bench/curl_floor.sh runs it under callgrind at
 * two counts: the difference over the extra transfers is libcurl's
 * instructions a transfer, the floor under sandgate's passthrough. With
 * -t it prints the wall time a transfer takes (p50 and p99 over the N,
 * in µs, the first left out): what one HTTP exchange costs on this
 * machine before the gateway does anything with it. What a handle's
 * use costs on top: -r resets the handle before each transfer (every
 * option set again), -s gives the URL as text (parsed each transfer)
 * instead of a prepared CURLU.
 *   curl_floor [-t] [-r] [-s] URL N
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
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
	double *took = NULL, t0;
	int n, k, timed = 0, reset = 0, text = 0;
	size_t i;

	for (; argc > 1 && argv[1][0] == '-'; argc--, argv++)
		if (strcmp(argv[1], "-t") == 0)
			timed = 1;
		else if (strcmp(argv[1], "-r") == 0)
			reset = 1;
		else if (strcmp(argv[1], "-s") == 0)
			text = 1;
		else
			break;
	if (argc != 3 || (n = atoi(argv[2])) < 2 ||
	    (took = calloc((size_t)n, sizeof(*took))) == NULL) {
		fprintf(stderr, "usage: curl_floor [-t] [-r] [-s] URL N "
		    "(N > 1)\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_ALL);
	if ((h = curl_easy_init()) == NULL || (u = curl_url()) == NULL ||
	    curl_url_set(u, CURLUPART_URL, argv[1], 0) != CURLUE_OK)
		return 1;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		hdrs = curl_slist_append(hdrs, lines[i]);
	for (k = 0; k < n; k++) {
		if (reset)
			curl_easy_reset(h);
		if (text)
			curl_easy_setopt(h, CURLOPT_URL, argv[1]);
		else
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
		t0 = now_us();
		if (curl_easy_perform(h) != CURLE_OK) {
			fprintf(stderr, "curl_floor: transfer %d failed\n", k);
			return 1;
		}
		took[k] = now_us() - t0;
	}
	if (timed) {
		qsort(took + 1, (size_t)n - 1, sizeof(*took), by_value);
		printf("a transfer: p50 %.0f µs, p99 %.0f µs (%d)\n",
		    took[1 + (n - 1) / 2], took[1 + (n - 1) * 99 / 100], n - 1);
	}
	free(took);
	curl_slist_free_all(hdrs);
	curl_url_cleanup(u);
	curl_easy_cleanup(h);
	curl_global_cleanup();
	return 0;
}
