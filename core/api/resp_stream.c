/*
 * A response's kept events, replayed then followed (resp_stream.h): read
 * from the store in batches by sequence number, written as OpenAI frames
 * them (an event: line, one data: line, a blank line), polling for new
 * ones at SG_RSTREAM_POLL_MS and less often while nothing comes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "resp_stream.h"
#include "../../lib/util.h"
#include "../../store/store.h"
#include "../../store/background.h"

#define BATCH		256	/* events read at once */
#define JOB_EVERY_MS	1000	/* a job's status asked at most so often */
#define ERROR_GRACE_MS	2000	/* after an error event, its response.failed */
#define TYPE_MAX	96

struct follow {
	struct sg_out	*out;
	int64_t		 last;		/* the last sequence number sent */
	int		 n;		/* events sent by this read */
	int		 ended;		/* an event that ends it was sent */
	int		 gone;		/* a write failed */
	int64_t		 error_ms;	/* when an error event was sent */
	int64_t		 wrote_ms;
};

int
sg_rstream_not_found(struct sg_error *err, const char *id)
{
	return sg_error_set(err, 404, "invalid_request_error", NULL, NULL,
	    "Response with id '%s' not found.", id);
}

static int
store_down(struct sg_store *st, struct sg_error *err)
{
	return sg_error_store(err, sg_store_errmsg(st));
}

int
sg_rstream_ends(const char *type)
{
	return strcmp(type, "response.completed") == 0 ||
	    strcmp(type, "response.failed") == 0 ||
	    strcmp(type, "response.incomplete") == 0;
}

/* An event's type into type[TYPE_MAX] ("" when it has none): sandgate's
 * events begin with it, anything else is parsed. */
static void
type_of(const char *event, char type[TYPE_MAX])
{
	const char *p, *end;
	json_t *ev;

	type[0] = '\0';
	if (strncmp(event, "{\"type\":\"", 9) == 0 && (end = strchr(p =
	    event + 9, '"')) != NULL && end - p < TYPE_MAX &&
	    memchr(p, '\\', (size_t)(end - p)) == NULL) {
		memcpy(type, p, (size_t)(end - p));
		type[end - p] = '\0';
		return;
	}
	ev = json_loads(event, 0, NULL);
	if ((p = json_string_value(json_object_get(ev, "type"))) != NULL &&
	    strlen(p) < TYPE_MAX && strpbrk(p, "\r\n") == NULL)
		sg_copy(type, TYPE_MAX, p);
	json_decref(ev);
}

static int
put(struct follow *f, const char *s, size_t len)
{
	if (!f->gone && f->out->write(f->out, s, len) == -1)
		f->gone = 1;
	return f->gone ? -1 : 0;
}

/* sg_store_ev_list's fn: one event to the client. */
static int
send_one(void *arg, const struct sg_store_ev *e)
{
	struct follow *f = arg;
	char type[TYPE_MAX];

	type_of(e->event, type);
	if ((type[0] != '\0' && (put(f, "event: ", 7) == -1 ||
	    put(f, type, strlen(type)) == -1 || put(f, "\n", 1) == -1)) ||
	    put(f, "data: ", 6) == -1 ||
	    put(f, e->event, strlen(e->event)) == -1 ||
	    put(f, "\n\n", 2) == -1)
		return -1;
	f->last = e->seq;
	f->n++;
	f->wrote_ms = sg_now_ms();
	if (strcmp(type, "error") == 0)
		f->error_ms = f->wrote_ms;
	if (sg_rstream_ends(type))
		f->ended = 1;
	return f->ended ? -1 : 0;
}

static int
job_ended(const char *status)
{
	return strcmp(status, "queued") != 0 &&
	    strcmp(status, "in_progress") != 0;
}

/* Whether a job runs id: 1 (queued, in progress), 0 (none, or ended), -1
 * the store failed. *had: a job exists (ended too). */
static int
job_runs(struct sg_store *st, const char *id, const char *tenant, int *had)
{
	struct sg_store_bg job;
	int rc = sg_store_bg_get(st, id, tenant, &job), runs;

	if (rc == SG_STORE_NOTFOUND)
		return 0;
	if (rc != SG_STORE_OK)
		return -1;
	*had = 1;
	runs = !job_ended(job.status);
	sg_store_bg_clear(&job);
	return runs;
}

/* sg_store_ev_list's fn: whether the (last) event ends the response. */
static int
note_end(void *arg, const struct sg_store_ev *e)
{
	char type[TYPE_MAX];

	type_of(e->event, type);
	*(int *)arg = sg_rstream_ends(type);
	return 0;
}

int
sg_rstream_last(struct sg_store *st, const char *id, const char *tenant,
    int64_t *last, int *ended)
{
	int rc;

	*ended = 0;
	if ((rc = sg_store_ev_last(st, id, tenant, last)) != SG_STORE_OK ||
	    *last < 0)
		return rc;
	return sg_store_ev_list(st, id, tenant, *last - 1, 1, note_end, ended);
}

/*
 * Before the stream: is there one to send, and from where? 0 with *live:
 * 1 a job runs it (more may come), 0 all of it is kept (its job ended,
 * or its ending event is kept), -1 unknown (no job, no ending yet: it
 * may be streaming still); or -1 with err.
 */
static int
check(struct sg_store *st, const char *id, const struct sg_req *req,
    int64_t after, int *live, struct sg_error *err)
{
	struct sg_store_resp_row row;
	int64_t last;
	int had = 0, ended = 0, rc;

	if ((rc = job_runs(st, id, req->tenant, &had)) == -1 ||
	    sg_store_ev_last(st, id, req->tenant, &last) != SG_STORE_OK)
		return store_down(st, err);
	if (!had && last < 0) {
		rc = sg_store_resp_load(st, id, req->tenant, &row);
		sg_store_resp_clear(&row);
		if (rc == SG_STORE_ERROR)
			return store_down(st, err);
		if (rc != SG_STORE_OK)
			return sg_rstream_not_found(err, id);
		return sg_error_invalid(err, "stream", "invalid_value",
		    "Response with id '%s' cannot be streamed: it was not "
		    "created with 'stream': true, or its events are no longer "
		    "kept. Retrieve it without 'stream'.", id);
	}
	if (!had && sg_store_ev_list(st, id, req->tenant, last - 1, 1,
	    note_end, &ended) != SG_STORE_OK)
		return store_down(st, err);
	*live = had ? rc : ended ? 0 : -1;
	/* Beyond the end of one that ended: an error; of one that runs or
	 * may, what comes is waited for. */
	if (after > last && *live == 0)
		return sg_error_invalid(err, "starting_after", "invalid_value",
		    "Invalid 'starting_after': %lld is beyond the last event of "
		    "response '%s' (sequence_number %lld).", (long long)after, id,
		    (long long)last);
	return 0;
}

static void
pause_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) *
	    1000000L };

	nanosleep(&ts, NULL);
}

/* A comment now and then while nothing comes: proxies keep the stream
 * open, the SDKs skip it. -1 when the client is gone. */
static int
keepalive(struct follow *f, int64_t now)
{
	if (now - f->wrote_ms < SG_RSTREAM_KEEPALIVE_MS)
		return 0;
	f->wrote_ms = now;
	if (put(f, ": keepalive\n\n", 13) == -1 || f->out->flush(f->out) == -1)
		return -1;
	return 0;
}

int
sg_rstream_follow(struct sg_store *st, const char *id,
    const struct sg_req *req, int64_t after, int idle_s, struct sg_out *out,
    struct sg_error *err)
{
	struct follow f = { out, after, 0, 0, 0, 0, 0 };
	int64_t now, idle_ms = (int64_t)idle_s * 1000, fresh_ms, ok_ms, job_ms,
	    wait = SG_RSTREAM_POLL_MS;
	int live = -1, had = 1, rc;

	if (check(st, id, req, after, &live, err) == -1)
		return -1;
	if (sg_http_begin(out, req, 200, "text/event-stream; charset=utf-8",
	    "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n") == -1 ||
	    out->flush(out) == -1)
		return 0;
	f.wrote_ms = fresh_ms = ok_ms = job_ms = sg_now_ms();
	for (;;) {
		f.n = 0;
		rc = sg_store_ev_list(st, id, req->tenant, f.last, BATCH,
		    send_one, &f);
		if (f.gone || f.ended || (f.n > 0 && out->flush(out) == -1))
			break;
		now = sg_now_ms();
		if (rc == SG_STORE_OK)
			ok_ms = now;
		if (f.n > 0) {
			fresh_ms = now;
			wait = SG_RSTREAM_POLL_MS;
			if (f.n == BATCH)
				continue;
		}
		/* All was kept (its job ended, or went) and has been read
		 * since: all was sent. */
		if (live == 0 || (f.error_ms != 0 && now - f.error_ms >=
		    ERROR_GRACE_MS))
			break;
		if (live == 1 && now - job_ms >= JOB_EVERY_MS) {
			job_ms = now;
			if ((rc = job_runs(st, id, req->tenant, &had)) != -1)
				live = rc;
			if (live == 0)
				continue;
		}
		/* Without a job running it, a quiet response has ended
		 * without its last events (its responder died); a store
		 * failing for as long ends the stream too. */
		if ((live != 1 && now - fresh_ms >= idle_ms) ||
		    now - ok_ms >= idle_ms || !out->alive(out) ||
		    keepalive(&f, now) == -1)
			break;
		pause_ms(wait);
		wait = wait * 3 / 2 < SG_RSTREAM_POLL_MAX_MS ? wait * 3 / 2 :
		    SG_RSTREAM_POLL_MAX_MS;
	}
	return 0;
}
