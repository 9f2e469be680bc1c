#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "respids.h"
#include "sse.h"
#include "target.h"
#include "upstream.h"
#include "../state/ledger.h"
#include "../state/metrics.h"
#include "../../lib/jdump.h"
#include "../../lib/jscan.h"
#include "../../lib/util.h"

#define CONNECT_TIMEOUT_MS	10000
#define MAX_BODY		(64u << 20)	/* a buffered JSON answer */
#define MAX_EVENT		(32u << 20)	/* one SSE event */
#define ALIVE_EVERY_MS		250

struct sg_upstream {
	CURL		*h;
	struct sg_store	*store;		/* relayed response ids */
	struct sg_targets targets;	/* where models' requests go */
};

/* One relay in progress. */
struct relay {
	struct sg_out		*out;
	const struct sg_req	*req;
	enum sg_surface		 surface;
	CURL			*h;
	char			 ctype[128];
	char			 headers[2048];	/* relayed to the client */
	size_t			 hlen;
	int			 decided, sse;
	struct sg_buf		 body;		/* buffered non-SSE answer */
	struct sg_sse		*parser;
	long			 events;	/* data events relayed */
	int64_t			 deadline, next_alive;
	int64_t			 last_rx, silence_ms;
	int			 client_gone, deadline_hit, too_big, silent;
	sg_sse_fn		 consume;	/* events mode: SSE goes here */
	void			*consume_arg;
	struct sg_store		*ids;		/* Responses: where relayed ids
						 * are noted; NULL: not noted */
	const char		*api_base;	/* whose ids they are */
};

/* Upstream headers worth a client's while; everything else (hop-by-hop,
 * cookies, the upstream's server and framing) stops here. */
static const char *const relay_prefixes[] = { "openai-", "x-ratelimit-",
	"retry-after", "x-should-retry", NULL };

struct sg_upstream *
sg_upstream_new(void)
{
	struct sg_upstream *up;

	if ((up = calloc(1, sizeof(*up))) == NULL)
		return NULL;
	if ((up->h = curl_easy_init()) == NULL) {
		free(up);
		return NULL;
	}
	/* Kept: the handle is never reset. */
	if (!sg_proxy_env()) {
		curl_easy_setopt(up->h, CURLOPT_PROXY, "");
		curl_easy_setopt(up->h, CURLOPT_NOPROXY, "");
	}
	return up;
}

void
sg_upstream_use_store(struct sg_upstream *up, struct sg_store *store)
{
	up->store = store;
}

void
sg_upstream_free(struct sg_upstream *up)
{
	if (up == NULL)
		return;
	curl_easy_cleanup(up->h);
	sg_targets_clear(&up->targets);
	free(up);
}

static void
add_header(struct relay *r, const char *name, size_t nlen, const char *val,
    size_t vlen)
{
	int n;

	n = snprintf(r->headers + r->hlen, sizeof(r->headers) - r->hlen,
	    "%.*s: %.*s\r\n", (int)nlen, name, (int)vlen, val);
	if (n > 0 && (size_t)n < sizeof(r->headers) - r->hlen)
		r->hlen += (size_t)n;
	else
		r->headers[r->hlen] = '\0';
}

static size_t
on_header(char *line, size_t size, size_t nitems, void *arg)
{
	struct relay *r = arg;
	size_t len = size * nitems, nlen, vlen, i;
	const char *colon, *val;

	r->last_rx = sg_now_ms();
	/* A status line starts a new header block (after a 100 Continue). */
	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		r->hlen = 0;
		r->headers[0] = r->ctype[0] = '\0';
		return len;
	}
	if ((colon = memchr(line, ':', len)) == NULL)
		return len;
	nlen = (size_t)(colon - line);
	val = colon + 1;
	vlen = len - nlen - 1;
	while (vlen > 0 && (*val == ' ' || *val == '\t'))
		val++, vlen--;
	while (vlen > 0 && (val[vlen - 1] == '\r' || val[vlen - 1] == '\n'))
		vlen--;
	if (nlen == 12 && strncasecmp(line, "content-type", 12) == 0) {
		/* Cut to fit, as "%.*s" would, without printf. */
		i = vlen < sizeof(r->ctype) - 1 ? vlen : sizeof(r->ctype) - 1;
		memcpy(r->ctype, val, i);
		r->ctype[i] = '\0';
		return len;
	}
	if (nlen == 12 && strncasecmp(line, "x-request-id", 12) == 0) {
		add_header(r, "x-upstream-request-id", 21, val, vlen);
		return len;
	}
	for (i = 0; relay_prefixes[i] != NULL; i++) {
		size_t plen = strlen(relay_prefixes[i]);

		/* A key with limits of its own sees its own, not the
		 * upstream's (whose limits are the operator's). */
		if (r->req->head[0] != '\0' && plen == 12 &&
		    strncasecmp(relay_prefixes[i], "x-ratelimit-", 12) == 0)
			continue;
		if (nlen >= plen && strncasecmp(line, relay_prefixes[i], plen) == 0)
			add_header(r, line, nlen, val, vlen);
	}
	return len;
}

/*
 * A Chat chunk's data without the usage the client did not ask for: the
 * last chunk (no choices, a usage) goes whole (1); another loses its
 * "usage": null member (its text, new, in *out; 0). -1: the chunk is
 * sent as it came.
 */
static int
unasked_usage(const char *data, size_t len, char **out)
{
	json_t *c = sg_jparse(data, len, 0), *u;
	size_t n;
	int rc = -1;

	*out = NULL;
	if (!json_is_object(c) || (u = json_object_get(c, "usage")) == NULL) {
		json_decref(c);
		return -1;
	}
	if (json_is_object(u) && json_array_size(json_object_get(c,
	    "choices")) == 0)
		rc = 1;
	else if (json_is_null(u)) {
		json_object_del(c, "usage");
		rc = (*out = sg_jdump_text(c, &n)) != NULL ? 0 : -1;
	}
	json_decref(c);
	return rc;
}

/* Send event ev as the client asked for it. */
static int
relay_write(struct relay *r, const struct sg_sse_event *ev)
{
	char *text;
	int rc;

	if (!r->req->strip_usage || !ev->has_data ||
	    (rc = unasked_usage(ev->data, ev->datalen, &text)) == -1)
		return r->out->write(r->out, ev->raw, ev->rawlen);
	if (rc == 1)
		return 0;
	rc = r->out->write(r->out, "data: ", 6) == -1 ||
	    r->out->write(r->out, text, strlen(text)) == -1 ||
	    r->out->write(r->out, "\n\n", 2) == -1 ? -1 : 0;
	free(text);
	return rc;
}

static int
relay_event(void *arg, const struct sg_sse_event *ev)
{
	struct relay *r = arg;

	if (r->ids != NULL)
		sg_respids_note_event(r->ids, r->api_base, r->req, ev);
	if (ev->has_data) {
		r->events++;
		sg_use_tokens_in(ev->data, ev->datalen);
	}
	if (relay_write(r, ev) == -1) {
		r->client_gone = 1;
		return -1;
	}
	return 0;
}

/* At the first byte of the answer: stream it, or buffer it? */
static int
decide(struct relay *r)
{
	long status = 0;
	char extra[2200];

	r->decided = 1;
	curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
	r->sse = status >= 200 && status < 300 &&
	    strncasecmp(r->ctype, "text/event-stream", 17) == 0;
	if (!r->sse)
		return 0;
	if (r->consume != NULL)
		return (r->parser = sg_sse_new(MAX_EVENT, r->consume,
		    r->consume_arg)) != NULL ? 0 : -1;
	if ((r->parser = sg_sse_new(MAX_EVENT, relay_event, r)) == NULL)
		return -1;
	snprintf(extra, sizeof(extra), "%sCache-Control: no-cache\r\n"
	    "X-Accel-Buffering: no\r\n", r->headers);
	if (sg_http_begin(r->out, r->req, (int)status, r->ctype, extra) == -1) {
		r->client_gone = 1;
		return -1;
	}
	return 0;
}

/*
 * Events that came in one read go out in one write: the client sees each
 * as soon as it would with a flush an event, for one system call (and one
 * wakeup of the web server) a read instead of one an event. The headers
 * go with the first read's events.
 */
static size_t
relay_chunk(struct relay *r, const char *buf, size_t len)
{
	if (sg_sse_feed(r->parser, buf, len) != 0)
		return 0;
	if (r->consume == NULL && r->out->flush(r->out) == -1) {
		r->client_gone = 1;
		return 0;
	}
	return len;
}

static size_t
on_body(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct relay *r = arg;
	size_t len = size * nmemb;

	r->last_rx = sg_now_ms();
	if (!r->decided && decide(r) == -1)
		return 0;
	if (r->sse)
		return relay_chunk(r, buf, len);
	if (r->body.len + len > MAX_BODY) {
		r->too_big = 1;
		return 0;
	}
	return sg_buf_add(&r->body, buf, len) == 0 ? len : 0;
}

/* Called by libcurl at least once a second: the request's deadline and
 * the client's presence are checked here, not only when bytes flow. */
static int
on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
    curl_off_t un)
{
	struct relay *r = arg;
	int64_t now = sg_now_ms();

	(void)dt, (void)dn, (void)ut, (void)un;
	if (now >= r->deadline) {
		r->deadline_hit = 1;
		return 1;
	}
	/* libcurl's low-speed check counts the upload too, so a silent
	 * upstream after a quick request body would never trip it. */
	if (now - r->last_rx >= r->silence_ms) {
		r->silent = 1;
		return 1;
	}
	/* Events mode: time passing is an event too (keepalives). */
	if (r->consume != NULL)
		r->consume(r->consume_arg, NULL);
	if (now >= r->next_alive) {
		r->next_alive = now + ALIVE_EVERY_MS;
		if (!r->out->alive(r->out)) {
			r->client_gone = 1;
			return 1;
		}
	}
	return 0;
}

/* The stream broke after it started: end it with an error the SDKs raise
 * (openai-shapes §5.6, §6.4) rather than a silent, truncated success. */
static void
stream_error(struct relay *r, const char *msg)
{
	json_t *inner, *ev;
	char *text;

	inner = json_pack("{s:o,s:s,s:n,s:n}", "message",
	    sg_json_string_lossy(msg, strlen(msg)), "type", "server_error",
	    "param", "code");
	if (inner == NULL)
		return;
	if (r->surface == SG_SURFACE_CHAT)
		ev = json_pack("{s:O}", "error", inner);
	else
		ev = json_pack("{s:s,s:I,s:s,s:O,s:n,s:O}", "type", "error",
		    "sequence_number", (json_int_t)r->events, "code",
		    "upstream_error", "message", json_object_get(inner, "message"),
		    "param", "error", inner);
	json_decref(inner);
	if (ev == NULL || (text = json_dumps(ev, JSON_COMPACT)) == NULL) {
		json_decref(ev);
		return;
	}
	json_decref(ev);
	/* A half-received event is dropped: never relay half an event. */
	if (r->surface == SG_SURFACE_RESPONSES)
		r->out->write(r->out, "event: error\n", 13);
	r->out->write(r->out, "data: ", 6);
	r->out->write(r->out, text, strlen(text));
	r->out->write(r->out, "\n\n", 2);
	r->out->flush(r->out);
	free(text);
}

/* The buffered answer: relayed as it came when it is JSON (or a 2xx of
 * any kind); a non-JSON error page becomes an OpenAI-shaped 502. */
static int
send_buffered(struct relay *r, const struct sg_cfg_model *m,
    struct sg_error *err)
{
	long status = 0;

	curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 400 && strstr(r->ctype, "json") == NULL)
		return sg_error_server(err, 502, "The upstream of model %s "
		    "answered HTTP %ld with a non-JSON body.", m->name, status);
	if (status / 100 == 2)
		sg_use_tokens_in(r->body.p, r->body.len);
	/* Noted before the client has it: it may continue at once. */
	if (r->ids != NULL && status / 100 == 2 && r->body.len > 0)
		sg_respids_note(r->ids, r->api_base, r->req, r->body.p,
		    r->body.len);
	if (sg_http_begin(r->out, r->req, (int)status,
	    r->ctype[0] != '\0' ? r->ctype : "application/json",
	    r->headers) == -1 ||
	    (r->body.len > 0 && r->out->write(r->out, r->body.p, r->body.len) ==
	    -1))
		r->client_gone = 1;
	return r->client_gone ? -1 : 0;
}

static int
fail_transfer(struct relay *r, const struct sg_cfg_model *m, CURLcode rc,
    const char *detail, struct sg_error *err)
{
	char msg[400];

	if (r->client_gone)
		return sg_error_set(err, 499, "server_error", NULL, NULL,
		    "The client closed the connection.");
	if (r->deadline_hit)
		snprintf(msg, sizeof(msg), "The request took longer than the "
		    "gateway's request_timeout.");
	else if (r->silent)
		snprintf(msg, sizeof(msg), "The upstream of model %s sent "
		    "nothing for %d s.", m->name, m->timeout);
	else if (r->too_big)
		snprintf(msg, sizeof(msg), "The upstream of model %s sent an "
		    "answer larger than %u bytes.", m->name, MAX_BODY);
	else
		snprintf(msg, sizeof(msg), "The upstream of model %s could "
		    "not be reached: %s", m->name,
		    detail[0] != '\0' ? detail : curl_easy_strerror(rc));
	if (r->out->started) {
		stream_error(r, msg);
		return -1;
	}
	return sg_error_server(err, r->deadline_hit || r->silent ||
	    rc == CURLE_OPERATION_TIMEDOUT ? 504 : 502, "%s", msg);
}

/* The call just made, for /metrics: no HTTP status means no answer. */
static void
measure(CURL *h)
{
	curl_off_t first = 0, total = 0;
	long status = 0;

	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(h, CURLINFO_STARTTRANSFER_TIME_T, &first);
	curl_easy_getinfo(h, CURLINFO_TOTAL_TIME_T, &total);
	sg_mx_upstream((int64_t)first / 1000, (int64_t)total / 1000,
	    status == 0);
}

/* POST body to the model's upstream with r's callbacks; a curl code. */
static CURLcode
post(struct sg_upstream *up, const struct sg_cfg_model *m, const char *body,
    size_t len, struct relay *r, char *detail)
{
	const struct sg_target *t;
	char url[1024];
	int64_t left = r->deadline - sg_now_ms();
	CURLcode rc;

	sg_join(url, sizeof(url), m->api_base, r->surface == SG_SURFACE_CHAT ?
	    "/chat/completions" : "/responses", NULL);
	if ((t = sg_targets_get(&up->targets, url, m->api_key)) == NULL)
		return CURLE_OUT_OF_MEMORY;
	/* No curl_easy_reset: every option is set here on every transfer,
	 * and a reset costs more than the transfer's own setup. The handle
	 * keeps its connection cache: keep-alive to the upstream. */
	curl_easy_setopt(up->h, CURLOPT_CURLU, t->u);
	if (t->u == NULL)
		curl_easy_setopt(up->h, CURLOPT_URL, url);
	curl_easy_setopt(up->h, CURLOPT_HTTPHEADER, t->hdrs);
	curl_easy_setopt(up->h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(up->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(up->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(up->h, CURLOPT_ERRORBUFFER, detail);
	curl_easy_setopt(up->h, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(left < CONNECT_TIMEOUT_MS ? (left > 1 ? left : 1) :
	    CONNECT_TIMEOUT_MS));
	curl_easy_setopt(up->h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(up->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(up->h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(up->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(up->h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(up->h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(up->h, CURLOPT_XFERINFODATA, r);
	curl_easy_setopt(up->h, CURLOPT_NOPROGRESS, 0L);
	/* Silence, not total time, bounds a stream (on_progress). */
	r->last_rx = sg_now_ms();
	r->silence_ms = (int64_t)m->timeout * 1000;
	r->next_alive = r->last_rx + ALIVE_EVERY_MS;
	/* Counted before it is made: the ledger's row lives in shared
	 * memory, so a responder killed mid-stream still owns the call the
	 * upstream is answering. */
	sg_use_call();
	rc = curl_easy_perform(up->h);
	measure(up->h);
	if (rc == CURLE_OK && !r->decided && decide(r) == -1)
		rc = CURLE_WRITE_ERROR;
	return rc;
}

int
sg_upstream_relay(struct sg_upstream *up, const struct sg_cfg_model *m,
    enum sg_surface surface, const char *body, size_t len,
    int64_t deadline_ms, const struct sg_req *req, struct sg_out *out,
    struct sg_error *err)
{
	struct relay r = { .out = out, .req = req, .surface = surface,
	    .h = up->h, .deadline = deadline_ms, .api_base = m->api_base };
	char detail[CURL_ERROR_SIZE] = "";
	CURLcode rc;
	int ret;

	if (surface == SG_SURFACE_RESPONSES) {
		if (sg_respids_check(up->store, m->api_base, req, body, len,
		    err) == -1)
			return -1;
		r.ids = up->store;
	}
	rc = post(up, m, body, len, &r, detail);
	if (rc != CURLE_OK)
		ret = fail_transfer(&r, m, rc, detail, err);
	else if (r.sse) {
		size_t rest;
		const char *p = sg_sse_pending(r.parser, &rest);

		/* A stream that ends without its final blank line. */
		if (p != NULL && rest > 0 && !sg_sse_at_boundary(r.parser))
			out->write(out, p, rest);
		ret = out->flush(out);
	} else
		ret = send_buffered(&r, m, err);
	sg_sse_free(r.parser);
	free(r.body.p);
	return ret;
}

int
sg_upstream_events(struct sg_upstream *up, const struct sg_cfg_model *m,
    enum sg_surface surface, const char *body, size_t len,
    int64_t deadline_ms, const struct sg_req *req, struct sg_out *out,
    sg_sse_fn fn, void *arg, long *status, char **errbody,
    struct sg_error *err)
{
	struct relay r = { .out = out, .req = req, .surface = surface,
	    .h = up->h, .deadline = deadline_ms, .consume = fn,
	    .consume_arg = arg };
	char detail[CURL_ERROR_SIZE] = "";
	CURLcode rc;
	int ret = 0;

	*status = 0;
	*errbody = NULL;
	rc = post(up, m, body, len, &r, detail);
	curl_easy_getinfo(up->h, CURLINFO_RESPONSE_CODE, status);
	if (rc != CURLE_OK) {
		/* The stream started but broke: nothing reached the client. */
		r.out = &(struct sg_out){ 0 };
		ret = fail_transfer(&r, m, rc, detail, err);
		if (r.client_gone)
			sg_error_set(err, 499, "server_error", NULL, NULL,
			    "The client closed the connection.");
		else if (r.sse)
			sg_error_server(err, 502, "The upstream of model %s broke "
			    "its stream: %s", m->name, detail[0] != '\0' ? detail :
			    curl_easy_strerror(rc));
	} else if (!r.sse) {
		/* Not a stream: an error answer to hand back as it came. */
		if (*status >= 400 && strstr(r.ctype, "json") != NULL) {
			*errbody = r.body.p;
			r.body.p = NULL;
		} else
			sg_error_server(err, 502, "The upstream of model %s answered "
			    "HTTP %ld without an event stream.", m->name, *status);
		ret = -1;
	}
	sg_sse_free(r.parser);
	free(r.body.p);
	return ret;
}
