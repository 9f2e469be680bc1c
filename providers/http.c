#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "internal.h"
#include "../lib/log.h"
#include "../lib/util.h"
#include "../lib/jdump.h"
#include "../lib/jscan.h"

#define CONNECT_TIMEOUT_MS	10000
#define ERRBODY_MAX		65536
#define JSON_MAX		(1u << 20)	/* a JSON answer kept, at most */

void
sg_hdrs_add(struct sg_hdrs *h, const char *name, const char *value)
{
	size_t size;

	if (value == NULL)
		value = "";
	size = strlen(name) + 2 + strlen(value) + 1;
	if (h->n >= SG_HDR_MAX || (h->h[h->n] = malloc(size)) == NULL)
		return;
	sg_join(h->h[h->n++], size, name, ": ", value, NULL);
}

void
sg_hdrs_free(struct sg_hdrs *h)
{
	int i;

	for (i = 0; i < h->n; i++)
		free(h->h[i]);
	h->n = 0;
}

/* A download in progress: a 200's body goes to fd. */
struct dl {
	int		 fd;
	int64_t		 max, got;	/* bytes allowed, written */
	int		 werr;		/* errno of a failed write, or 0 */
};

/* One call in progress. */
struct call {
	struct sg_prov	*prov;
	int64_t		 deadline;	/* this call's, with the prov's */
	int		 timed_out, stopped, capped, stalled;
	long		 status;
	struct sg_lines	*lines;		/* stream: 200 bodies go here */
	struct dl	*dl;		/* or download: 200 bodies go there */
	char		*body;		/* everything else is kept */
	size_t		 len, max;
	int		 whole;		/* a body past max fails the call */
	int		 big;		/* ... and this one did */
	CURL		*h;
	int		 up_fd;		/* the request body, from a file */
	int64_t		 up_size;
	curl_mime	*mime;		/* or a multipart body */
};

/* The request body from up_fd, as libcurl asks for it. */
static size_t
on_upload(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct call *c = arg;
	ssize_t n;

	do
		n = read(c->up_fd, buf, size * nmemb);
	while (n == -1 && errno == EINTR);
	return n < 0 ? CURL_READFUNC_ABORT : (size_t)n;
}

/* A 200's bytes to the download's fd, max in all: n, or 0 to stop the
 * transfer (past max: what fits is written first; a failed write). */
static size_t
dl_write(struct call *c, const char *buf, size_t n)
{
	struct dl *d = c->dl;
	size_t want = n, left;
	ssize_t w;

	if ((uint64_t)n > (uint64_t)(d->max - d->got))
		want = (size_t)(d->max - d->got);
	for (left = want; left > 0; left -= (size_t)w, buf += w) {
		do
			w = write(d->fd, buf, left);
		while (w == -1 && errno == EINTR);
		if (w <= 0) {
			d->werr = w == -1 ? errno : EIO;
			return 0;
		}
	}
	d->got += (int64_t)want;
	if (want < n) {
		c->capped = 1;
		return 0;
	}
	return n;
}

static size_t
on_body(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct call *c = arg;
	size_t n = size * nmemb;
	char *nb;

	if (c->status == 0)
		curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
	if (c->dl != NULL && c->status == 200)
		return dl_write(c, buf, n);
	if (c->lines != NULL && c->status == 200) {
		if (sg_lines_feed(c->lines, buf, n) == -1) {
			if (c->lines->res->bytes > c->lines->res->cap)
				c->capped = 1;
			else
				c->stalled = 1;
			return 0;
		}
		if (c->prov->progress != NULL)
			c->prov->progress(c->prov->progress_arg, c->lines->res);
		return n;
	}
	if (c->len + n > c->max) {
		if (c->whole) {
			c->big = 1;
			return 0;
		}
		return n;	/* keep the head of an oversized error page */
	}
	if ((nb = realloc(c->body, c->len + n + 1)) == NULL)
		return 0;
	c->body = nb;
	memcpy(c->body + c->len, buf, n);
	c->len += n;
	c->body[c->len] = '\0';
	return n;
}

static int
on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
    curl_off_t un)
{
	struct call *c = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	if (c->deadline > 0 && sg_now_ms() >= c->deadline) {
		c->timed_out = 1;
		return 1;
	}
	if (c->prov->stop != NULL && c->prov->stop(c->prov->stop_arg)) {
		c->stopped = 1;
		return 1;
	}
	/* Output held back by the caller's pace goes out while none comes. */
	if (c->lines != NULL && c->prov->progress != NULL)
		c->prov->progress(c->prov->progress_arg, c->lines->res);
	return 0;
}

/*
 * The prov's handle, kept between calls, and the URLs it went to,
 * parsed once (a URL given as text is parsed again on every transfer,
 * and a reset costs as much: ~16 k instructions a call together, against
 * ~72 k for a whole transfer). A call that sets only the options every
 * call sets (perform) and a JSON body, or none, is "plain"; the next one
 * of the same kind sets them all again over it, without a reset. Any
 * other (a file up, a form) is reset before it, and the call after it
 * resets what it set.
 */
#define URLS_KEPT	4

struct sg_phttp {
	CURL	*h;
	int	 kind;			/* the last call's: KIND_* */
	CURLU	*u[URLS_KEPT];
	char	*text[URLS_KEPT];	/* u[i]'s URL as given */
	unsigned next;			/* the slot to take next */
};

enum { KIND_NOBODY, KIND_JSON, KIND_OTHER };

void
sg_phttp_free(struct sg_prov *prov)
{
	struct sg_phttp *ph = prov->http;
	int i;

	if (ph == NULL)
		return;
	if (ph->h != NULL)
		curl_easy_cleanup(ph->h);
	for (i = 0; i < URLS_KEPT; i++) {
		curl_url_cleanup(ph->u[i]);
		free(ph->text[i]);
	}
	free(ph);
	prov->http = NULL;
}

/* The handle for a call of kind, reset unless the last call was of the
 * same plain kind; NULL when out of memory. */
static CURL *
handle(struct sg_prov *prov, int kind)
{
	struct sg_phttp *ph = prov->http;

	if (ph == NULL && (ph = prov->http = calloc(1, sizeof(*ph))) == NULL)
		return NULL;
	if (ph->h == NULL) {
		if ((ph->h = curl_easy_init()) == NULL)
			return NULL;
	} else if (kind != ph->kind || kind == KIND_OTHER)
		curl_easy_reset(ph->h);
	else
		return ph->h;
	ph->kind = kind;
	/* No proxy named: libcurl is told so, not left to look again in
	 * the environment on each transfer (five getenv calls). */
	if (!sg_proxy_env()) {
		curl_easy_setopt(ph->h, CURLOPT_PROXY, "");
		curl_easy_setopt(ph->h, CURLOPT_NOPROXY, "");
	}
	return ph->h;
}

/* url parsed, kept among the last URLS_KEPT; NULL when it cannot be
 * (curl then parses the text, and says what is wrong with it). */
static CURLU *
parsed(struct sg_prov *prov, const char *url)
{
	struct sg_phttp *ph = prov->http;
	unsigned i;

	for (i = 0; i < URLS_KEPT; i++)
		if (ph->text[i] != NULL && strcmp(ph->text[i], url) == 0)
			return ph->u[i];
	i = ph->next++ % URLS_KEPT;
	curl_url_cleanup(ph->u[i]);
	free(ph->text[i]);
	ph->text[i] = NULL;
	if ((ph->u[i] = curl_url()) == NULL)
		return NULL;
	if (curl_url_set(ph->u[i], CURLUPART_URL, url, 0) != CURLUE_OK ||
	    (ph->text[i] = strdup(url)) == NULL) {
		curl_url_cleanup(ph->u[i]);
		ph->u[i] = NULL;
		return NULL;
	}
	return ph->u[i];
}

/*
 * A call that got no usable answer. The message may reach a client, so
 * it names neither the URL nor the host (a sandbox's endpoint, the
 * provider's address): those go to the log, with curl's own detail.
 */
static int
transport_error(struct call *c, CURLcode rc, const char *url,
    const char *detail, struct sg_prov_error *err)
{
	const char *what = curl_easy_strerror(rc);

	if (c->capped && c->dl != NULL)
		return sg_prov_fail(err, SG_PROV_CAP, 0, "the file is larger than "
		    "%lld bytes", (long long)c->dl->max);
	if (c->capped)
		return sg_prov_fail(err, SG_PROV_CAP, 0, "Sandbox output exceeded "
		    "%zu bytes; the run was stopped.", c->lines->res->cap);
	if (c->dl != NULL && c->dl->werr != 0)
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "cannot write the "
		    "file: %s", strerror(c->dl->werr));
	if (c->big)
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "the provider's answer "
		    "is larger than %zu bytes", c->max);
	if (c->stopped)
		return sg_prov_fail(err, SG_PROV_STOPPED, 0, "stopped: the "
		    "client went away");
	if (c->stalled)
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "the run never "
		    "started");
	sg_log("sandgate: provider call to %s: %s", url,
	    c->timed_out ? "no answer in time" : detail[0] != '\0' ? detail :
	    what);
	if (c->timed_out || rc == CURLE_OPERATION_TIMEDOUT)
		return sg_prov_fail(err, SG_PROV_TIMEOUT, 0, "no answer in time");
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
		return sg_prov_fail(err, SG_PROV_UNREACHABLE, 0, "cannot reach "
		    "the provider (%s)", what);
	return sg_prov_fail(err, SG_PROV_FAILED, 0, "the connection to the "
	    "provider broke (%s)", what);
}

static int
perform(struct sg_prov *prov, struct call *c, const char *method,
    const char *url, const struct sg_hdrs *hdrs, const json_t *body,
    struct sg_prov_error *err)
{
	char detail[CURL_ERROR_SIZE] = "", *text = NULL;
	struct curl_slist *sl = NULL, *n;
	CURLU *u;
	CURLcode rc;
	int i, kind = c->mime != NULL || c->up_fd >= 0 ? KIND_OTHER :
	    body != NULL ? KIND_JSON : KIND_NOBODY;

	if ((c->h = handle(prov, kind)) == NULL)
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "out of memory");
	for (i = 0; hdrs != NULL && i < hdrs->n; i++)
		if ((n = curl_slist_append(sl, hdrs->h[i])) != NULL)
			sl = n;
	if ((n = curl_slist_append(sl, "Expect:")) != NULL)
		sl = n;
	if (c->mime != NULL)
		curl_easy_setopt(c->h, CURLOPT_MIMEPOST, c->mime);
	else if (c->up_fd >= 0) {
		curl_easy_setopt(c->h, CURLOPT_POST, 1L);
		curl_easy_setopt(c->h, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(c->h, CURLOPT_READDATA, c);
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)c->up_size);
	} else if (body != NULL) {
		text = sg_jdump_text(body, NULL);
		if ((n = curl_slist_append(sl, "Content-Type: application/json")))
			sl = n;
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, text != NULL ? text : "");
	}
	if (prov->deadline_ms > 0 && (c->deadline == 0 ||
	    prov->deadline_ms < c->deadline))
		c->deadline = prov->deadline_ms;
	if ((u = parsed(prov, url)) != NULL)
		curl_easy_setopt(c->h, CURLOPT_CURLU, u);
	else {
		curl_easy_setopt(c->h, CURLOPT_CURLU, NULL);
		curl_easy_setopt(c->h, CURLOPT_URL, url);
	}
	curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, sl);
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, detail);
	curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
	curl_easy_setopt(c->h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c->h, CURLOPT_XFERINFODATA, c);
	curl_easy_setopt(c->h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
	/* NULL (TCP) as well: a kept handle may have had a path. */
	curl_easy_setopt(c->h, CURLOPT_UNIX_SOCKET_PATH, prov->unix_socket);
	rc = curl_easy_perform(c->h);
	/* Nothing of this call's (its headers, body, buffers on this stack)
	 * is left pointed at by the kept handle. */
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, NULL);
	curl_easy_setopt(c->h, CURLOPT_XFERINFODATA, NULL);
	if (kind == KIND_JSON)
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, "");
	curl_slist_free_all(sl);
	free(text);
	if (rc != CURLE_OK)
		return transport_error(c, rc, url, detail, err);
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
	return SG_PROV_OK;
}

/* One call whose answer is JSON (at most max bytes of it; past them,
 * whole: the call fails, else the rest is dropped); the body is body,
 * size bytes from fd when fd >= 0, or mime. */
static int
json_call(struct sg_prov *prov, const char *method, const char *url,
    const struct sg_hdrs *hdrs, const json_t *body, int fd, int64_t size,
    curl_mime *mime, size_t max, int whole, long timeout_ms, long *status,
    json_t **resp, struct sg_prov_error *err)
{
	struct call c = { .prov = prov, .max = max, .whole = whole,
	    .up_fd = fd, .up_size = size, .mime = mime,
	    .deadline = timeout_ms > 0 ? sg_now_ms() + timeout_ms : 0 };
	int rc;

	*resp = NULL;
	rc = perform(prov, &c, method, url, hdrs, body, err);
	if (rc == SG_PROV_OK) {
		*status = c.status;
		if (c.len > 0)
			*resp = sg_jparse(c.body, c.len, 0);
	}
	free(c.body);
	return rc;
}

int
sg_phttp_call(struct sg_prov *prov, const char *method, const char *url,
    const struct sg_hdrs *hdrs, const json_t *body, long timeout_ms,
    long *status, json_t **resp, struct sg_prov_error *err)
{
	return json_call(prov, method, url, hdrs, body, -1, 0, NULL,
	    JSON_MAX, 0, timeout_ms, status, resp, err);
}

int
sg_phttp_call_max(struct sg_prov *prov, const char *method, const char *url,
    const struct sg_hdrs *hdrs, const json_t *body, size_t max,
    long timeout_ms, long *status, json_t **resp, struct sg_prov_error *err)
{
	return json_call(prov, method, url, hdrs, body, -1, 0, NULL, max, 1,
	    timeout_ms, status, resp, err);
}

int
sg_phttp_stream(struct sg_prov *prov, const char *url,
    const struct sg_hdrs *hdrs, const json_t *body, int timeout_s,
    struct sg_lines *lines, long *status, char **errbody,
    struct sg_prov_error *err)
{
	struct call c = { .prov = prov, .lines = lines, .max = ERRBODY_MAX,
	    .up_fd = -1,
	    .deadline = timeout_s > 0 ? sg_now_ms() + timeout_s * 1000LL : 0 };
	int rc;

	*errbody = NULL;
	rc = perform(prov, &c, "POST", url, hdrs, body, err);
	sg_lines_finish(lines);
	*status = c.status;
	*errbody = c.body;
	return rc;
}

int
sg_phttp_upload(struct sg_prov *prov, const char *url,
    const struct sg_hdrs *hdrs, int fd, int64_t size, long timeout_ms,
    long *status, json_t **resp, struct sg_prov_error *err)
{
	return json_call(prov, "POST", url, hdrs, NULL, fd, size, NULL,
	    JSON_MAX, 0, timeout_ms, status, resp, err);
}

int
sg_phttp_download(struct sg_prov *prov, const char *url,
    const struct sg_hdrs *hdrs, int fd, int64_t max, long timeout_ms,
    long *status, json_t **errresp, struct sg_prov_error *err)
{
	struct dl d = { .fd = fd, .max = max > 0 ? max : 0 };
	struct call c = { .prov = prov, .dl = &d, .max = ERRBODY_MAX,
	    .up_fd = -1,
	    .deadline = timeout_ms > 0 ? sg_now_ms() + timeout_ms : 0 };
	int rc;

	*errresp = NULL;
	rc = perform(prov, &c, "GET", url, hdrs, NULL, err);
	*status = c.status;
	if (rc == SG_PROV_OK && c.status != 200 && c.len > 0)
		*errresp = sg_jparse(c.body, c.len, 0);
	free(c.body);
	return rc;
}

/* A part's bytes from the fd of a file, for libcurl's mime API. */
static size_t
part_read(char *buf, size_t size, size_t nitems, void *arg)
{
	ssize_t n;

	do
		n = read(*(int *)arg, buf, size * nitems);
	while (n == -1 && errno == EINTR);
	return n < 0 ? CURL_READFUNC_ABORT : (size_t)n;
}

int
sg_phttp_upload_form(struct sg_prov *prov, const char *url,
    const struct sg_hdrs *hdrs, const struct sg_form_part *parts, int n,
    long timeout_ms, long *status, json_t **resp, struct sg_prov_error *err)
{
	curl_mimepart *mp;
	curl_mime *mime;
	CURL *h;
	int i, rc;

	if ((h = handle(prov, KIND_OTHER)) == NULL ||
	    (mime = curl_mime_init(h)) == NULL)
		return sg_prov_fail(err, SG_PROV_FAILED, 0, "out of memory");
	for (i = 0; i < n; i++) {
		if ((mp = curl_mime_addpart(mime)) == NULL)
			break;
		curl_mime_name(mp, parts[i].name);
		curl_mime_filename(mp, parts[i].filename);
		curl_mime_type(mp, parts[i].type);
		if (parts[i].fd >= 0)
			curl_mime_data_cb(mp, (curl_off_t)parts[i].size, part_read,
			    NULL, NULL, (void *)&parts[i].fd);
		else
			curl_mime_data(mp, parts[i].data, CURL_ZERO_TERMINATED);
	}
	rc = i < n ? sg_prov_fail(err, SG_PROV_FAILED, 0, "out of memory") :
	    json_call(prov, "POST", url, hdrs, NULL, -1, 0, mime, JSON_MAX, 0,
	    timeout_ms, status, resp, err);
	curl_mime_free(mime);
	return rc;
}

const char *
sg_phttp_message(const json_t *resp, const char *fallback)
{
	const char *m = json_string_value(json_object_get(resp, "message"));

	if (m == NULL)
		m = json_string_value(json_object_get(resp, "error"));
	return m != NULL ? m : fallback;
}

int
sg_phttp_status_error(const char *provider, const struct sg_tool *t,
    const char *what, long status, const json_t *resp,
    struct sg_prov_error *err)
{
	const char *msg = sg_phttp_message(resp, "no message");

	/* Never the key itself: only the tool's name. */
	if (status == 401 || status == 403)
		return sg_prov_fail(err, SG_PROV_AUTH, (int)status, "%s refused "
		    "the credentials of sandbox tool %s (%s)", provider, t->name,
		    what);
	if (status == 404)
		return sg_prov_fail(err, SG_PROV_GONE, 404, "%s: %s: %s",
		    provider, what, msg);
	if (status == 429)
		return sg_prov_fail(err, SG_PROV_RATE, 429, "%s: %s: %s",
		    provider, what, msg);
	return sg_prov_fail(err, SG_PROV_FAILED, (int)status, "%s: %s "
	    "answered HTTP %ld: %s", provider, what, status, msg);
}
