/*
 * The loop's floor: a code round's HTTP exchanges without the gateway.
 * One request at a time for SECS seconds, what the gateway sends the
 * fakes (bench/fakes.mjs) for a sticky `ci-N` request, with libcurl as
 * the gateway uses it (a kept handle for the model and one for the
 * sandbox, a prepared URL each, the gateway's header lists) and nothing
 * else done between them: a model turn read to its end, then for each of
 * the N rounds the run and the listing of /mnt/data, and the next turn
 * with one more function_call_output. Each request is tagged req-<n>
 * (from FIRST) in its input and its code, so the fakes time it as they
 * time the gateway's; prints "req-<n> <µs>" a request (the client's
 * total). bench/loop_client.mjs (LOOP_FLOOR) reads the fakes' clock for
 * it as for the gateway: the iteration here is what three exchanges cost
 * on this machine, under the gateway's. LOOP_GAP_MS in the environment:
 * a pause that long after each request, as bench/loop_client.mjs makes.
 *   loop_floor UPSTREAM_BASE E2B_BASE MODEL SECS FIRST
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

struct peer {
	CURL			*h;
	CURLU			*u[2];
	struct curl_slist	*hdrs[2];
};

static size_t
drop(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static struct curl_slist *
list(const char *const *lines)
{
	struct curl_slist *l = NULL;

	for (; *lines != NULL; lines++)
		l = curl_slist_append(l, *lines);
	return l;
}

/* POST body to peer p's URL k with its header list k, read to the end. */
static int
post(struct peer *p, int k, const char *body)
{
	curl_easy_setopt(p->h, CURLOPT_CURLU, p->u[k]);
	curl_easy_setopt(p->h, CURLOPT_HTTPHEADER, p->hdrs[k]);
	curl_easy_setopt(p->h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(p->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p->h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(p->h, CURLOPT_HTTP_VERSION,
	    (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(p->h, CURLOPT_WRITEFUNCTION, drop);
	if (curl_easy_perform(p->h) != CURLE_OK) {
		fprintf(stderr, "loop_floor: a transfer failed\n");
		return -1;
	}
	return 0;
}

static int
peer_init(struct peer *p, const char *base, const char *const paths[2],
    const char *const *hdrs[2])
{
	char url[512];
	int k;

	if ((p->h = curl_easy_init()) == NULL)
		return -1;
	for (k = 0; k < 2 && paths[k] != NULL; k++) {
		snprintf(url, sizeof(url), "%s%s", base, paths[k]);
		if ((p->u[k] = curl_url()) == NULL ||
		    curl_url_set(p->u[k], CURLUPART_URL, url, 0) != CURLUE_OK)
			return -1;
		p->hdrs[k] = list(hdrs[k]);
	}
	return 0;
}

/* Turn k's body: the input so far, k runs' calls and outputs in it. */
static void
turn_body(char *b, size_t sz, const char *model, const char *tag, int k)
{
	size_t n;
	int i;

	n = (size_t)snprintf(b, sz, "{\"model\":\"%s\",\"input\":[{\"role\":"
	    "\"user\",\"content\":\"bench %s\"}", model, tag);
	for (i = 0; i < k && n < sz; i++)
		n += (size_t)snprintf(b + n, sz - n, ",{\"type\":\"function_call"
		    "\",\"call_id\":\"call_%d\",\"name\":\"python\",\"arguments"
		    "\":\"{}\"},{\"type\":\"function_call_output\",\"call_id\":"
		    "\"call_%d\",\"output\":\"%s %d\\n\"}", i, i, tag, i);
	if (n < sz)
		snprintf(b + n, sz - n, "],\"tools\":[{\"type\":\"function\","
		    "\"name\":\"python\",\"parameters\":{\"type\":\"object\"}}],"
		    "\"stream\":true}");
}

int
main(int argc, char **argv)
{
	static const char *const model_hdrs[] = {
	    "Content-Type: application/json",
	    "Accept: application/json, text/event-stream", "Expect:",
	    "User-Agent: sandgate/0.1", "Authorization: Bearer x", NULL };
	static const char *const run_hdrs[] = { "E2b-Sandbox-Id: ifloor",
	    "E2b-Sandbox-Port: 49999", "X-Access-Token: "
	    "0000000000000000000000000000000000000000000000000000000000000000",
	    "Accept: application/json", "Expect:",
	    "Content-Type: application/json", NULL };
	static const char *const list_hdrs[] = { "E2b-Sandbox-Id: ifloor",
	    "E2b-Sandbox-Port: 49983", "X-Access-Token: "
	    "0000000000000000000000000000000000000000000000000000000000000000",
	    "Connect-Protocol-Version: 1", "Authorization: Basic dXNlcjo=",
	    "Expect:", "Content-Type: application/json", NULL };
	const char *const up_paths[2] = { "/v1/responses", NULL };
	const char *const *up_hdrs[2] = { model_hdrs, NULL };
	const char *const sb_paths[2] = { "/execute",
	    "/filesystem.Filesystem/ListDir" };
	const char *const *sb_hdrs[2] = { run_hdrs, list_hdrs };
	struct peer up = { 0 }, sb = { 0 };
	char tag[32], body[8192], code[128];
	double until, t0;
	const char *gap_ms = getenv("LOOP_GAP_MS");
	long n, ms = gap_ms != NULL ? atol(gap_ms) : 0;
	struct timespec gap = { ms / 1000, (ms % 1000) * 1000000L };
	int rounds, k;

	if (argc != 6) {
		fprintf(stderr, "usage: loop_floor UPSTREAM_BASE E2B_BASE "
		    "MODEL SECS FIRST\n");
		return 2;
	}
	rounds = strncmp(argv[3], "ci-", 3) == 0 ? atoi(argv[3] + 3) : 0;
	curl_global_init(CURL_GLOBAL_ALL);
	if (peer_init(&up, argv[1], up_paths, up_hdrs) == -1 ||
	    peer_init(&sb, argv[2], sb_paths, sb_hdrs) == -1)
		return 1;
	until = now_us() + atof(argv[4]) * 1e6;
	for (n = atol(argv[5]); now_us() < until; n++) {
		snprintf(tag, sizeof(tag), "req-%ld", n);
		t0 = now_us();
		for (k = 0; k <= rounds; k++) {
			turn_body(body, sizeof(body), argv[3], tag, k);
			if (post(&up, 0, body) == -1)
				return 1;
			if (k == rounds)
				break;
			snprintf(code, sizeof(code), "{\"code\":\"print(\\\"%s %d"
			    "\\\")\",\"context_id\":\"ctx\"}", tag, k);
			if (post(&sb, 0, code) == -1 || post(&sb, 1,
			    "{\"path\":\"/mnt/data\",\"depth\":1}") == -1)
				return 1;
		}
		printf("%s %.0f\n", tag, now_us() - t0);
		if (gap.tv_nsec > 0 || gap.tv_sec > 0)
			nanosleep(&gap, NULL);
	}
	return 0;
}
