/*
 * The passthrough's floor: a bare libfcgi responder that sends each
 * request's body upstream with libcurl and answers with what comes back,
 * as it comes (a stream flushed a chunk at a time), on one easy handle
 * kept across requests (keep-alive) with the options upstream.c sets
 * (bench/curl_floor.c). No key check, no rewrite, no log, no limits, no
 * pool: what lighttpd, FastCGI, libcurl and the kernel cost a passthrough,
 * for `make bench` to measure sandgate's own share against. The upstream
 * URL comes from PROXY_FLOOR_URL (lighttpd's bin-environment).
 */
#include <fcgiapp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

struct reply {
	FCGX_Request	*r;
	CURL		*h;
	int		 started;	/* our headers written */
	int		 stream;	/* flush each chunk */
};

static void
start(struct reply *rp)
{
	const char *type = NULL;
	long code = 502;

	curl_easy_getinfo(rp->h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(rp->h, CURLINFO_CONTENT_TYPE, &type);
	if (type == NULL)
		type = "application/json";
	rp->stream = strncmp(type, "text/event-stream", 17) == 0;
	FCGX_FPrintF(rp->r->out, "Status: %ld\r\nContent-Type: %s\r\n\r\n",
	    code, type);
	rp->started = 1;
}

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	struct reply *rp = arg;

	if (!rp->started)
		start(rp);
	FCGX_PutStr(p, (int)(size * n), rp->r->out);
	if (rp->stream)
		FCGX_FFlush(rp->r->out);
	return size * n;
}

/* The request's body, in *buf (grown as needed); its length, -1 on error. */
static long
read_body(FCGX_Request *r, char **buf, size_t *cap)
{
	const char *cl = FCGX_GetParam("CONTENT_LENGTH", r->envp);
	long want = cl != NULL ? atol(cl) : 0;
	char *p;

	if (want < 0 || want > (1L << 24))
		return -1;
	if ((size_t)want + 1 > *cap) {
		if ((p = realloc(*buf, (size_t)want + 1)) == NULL)
			return -1;
		*buf = p;
		*cap = (size_t)want + 1;
	}
	if (want > 0 && FCGX_GetStr(*buf, (int)want, r->in) != (int)want)
		return -1;
	return want;
}

static void
serve(FCGX_Request *r, CURL *h, char **buf, size_t *cap)
{
	struct reply rp = { r, h, 0, 0 };
	long len;

	if ((len = read_body(r, buf, cap)) < 0) {
		FCGX_PutS("Status: 400\r\n\r\n", r->out);
		return;
	}
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, *buf);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &rp);
	if (curl_easy_perform(h) != CURLE_OK && !rp.started)
		FCGX_PutS("Status: 502\r\n\r\n", r->out);
	else if (!rp.started)
		start(&rp);
}

int
main(void)
{
	static const char *const lines[] = { "Content-Type: application/json",
	    "Accept: application/json, text/event-stream", "Expect:",
	    "User-Agent: sandgate/0.1", "Authorization: Bearer x" };
	const char *url = getenv("PROXY_FLOOR_URL");
	struct curl_slist *hdrs = NULL;
	FCGX_Request r;
	size_t i, cap = 0;
	char *buf = NULL;
	CURLU *u;
	CURL *h;

	if (url == NULL || curl_global_init(CURL_GLOBAL_ALL) != 0 ||
	    (h = curl_easy_init()) == NULL || (u = curl_url()) == NULL ||
	    curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    FCGX_Init() != 0 || FCGX_InitRequest(&r, 0, 0) != 0)
		return 1;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		hdrs = curl_slist_append(hdrs, lines[i]);
	curl_easy_setopt(h, CURLOPT_CURLU, u);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	while (FCGX_Accept_r(&r) >= 0) {
		serve(&r, h, &buf, &cap);
		FCGX_Finish_r(&r);
	}
	return 0;
}
