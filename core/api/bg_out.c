/*
 * The runner's output (bg_out.h): the CGI head read for its status and
 * type, then either Server-Sent Events (parsed by core/upstream/sse.c,
 * each kept by its sequence_number) or a JSON body kept whole (bounded).
 * A tee does the same behind a client's output, which gets every byte
 * first: what the client is sent is what is kept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "bg_out.h"
#include "resp_stream.h"
#include "../upstream/sse.h"
#include "../../lib/util.h"
#include "../../store/background.h"

#define HEAD_MAX	8192		/* a CGI head, at most */
#define BODY_MAX	(1 << 20)	/* a non-stream answer kept, at most */
#define EVENT_MAX	(64 << 20)	/* one event, as the loop's own bound */
#define TEE_PENDING_MAX	4096		/* events a tee holds while the store
					 * fails, at most */

struct pending {
	int64_t	 seq;
	char	*event;		/* owned */
};

struct sg_bgo {
	struct sg_out	 out;		/* first: the gateway's handle */
	struct sg_store	*store;
	char		 id[64], tenant[65];
	char		 runner[SG_STORE_BG_RUNNER_MAX];
	struct sg_buf	 head;		/* until its blank line */
	int		 in_body, sse, http_status;
	struct sg_sse	*parser;
	struct sg_buf	 body;		/* a non-stream answer */
	struct pending	*ev;
	size_t		 nev, cap;
	int64_t		 next_seq;	/* an event without one gets this */
	char		*snapshot;	/* owned; dirty until stored */
	int		 snapshot_dirty;
	char		 status[16];
	int64_t		 flushed_ms, polled_ms;
	int		 stopped;
	struct sg_out	*inner;		/* a tee's client (borrowed), else NULL */
	int		 inner_gone;	/* a write to it failed */
	int		 broken;	/* a tee that keeps nothing more */
};

static void
drop_events(struct sg_bgo *b)
{
	size_t i;

	for (i = 0; i < b->nev; i++)
		free(b->ev[i].event);
	b->nev = 0;
}

static int
keep_event(struct sg_bgo *b, int64_t seq, const char *data, size_t len)
{
	struct pending *grown;

	if (b->nev == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		if ((grown = realloc(b->ev, b->cap * sizeof(*grown))) == NULL)
			return -1;
		b->ev = grown;
	}
	if ((b->ev[b->nev].event = strndup(data, len)) == NULL)
		return -1;
	b->ev[b->nev++].seq = seq;
	b->next_seq = seq + 1;
	return 0;
}

/* A response.* event's response is the snapshot; a terminal one's
 * status is the job's. */
static void
note_response(struct sg_bgo *b, const json_t *ev)
{
	const json_t *resp = json_object_get(ev, "response");
	const char *type = json_string_value(json_object_get(ev, "type"));
	const char *st;
	char *text;

	if (b->id[0] == '\0' && type != NULL && strcmp(type,
	    "response.created") == 0 && (st = json_string_value(
	    json_object_get(resp, "id"))) != NULL && strlen(st) < sizeof(b->id))
		sg_copy(b->id, sizeof(b->id), st);
	if (!json_is_object(resp) || (text = json_dumps(resp,
	    JSON_COMPACT)) == NULL)
		return;
	free(b->snapshot);
	b->snapshot = text;
	b->snapshot_dirty = 1;
	st = json_string_value(json_object_get(resp, "status"));
	if (type != NULL && st != NULL && sg_rstream_ends(type))
		sg_copy(b->status, sizeof(b->status), st);
}

static int
on_event(void *arg, const struct sg_sse_event *e)
{
	struct sg_bgo *b = arg;
	const json_t *seq;
	json_t *ev;
	int64_t n;
	int rc;

	if (!e->has_data)
		return 0;	/* a keepalive comment */
	ev = json_loadb(e->data, e->datalen, 0, NULL);
	seq = json_object_get(ev, "sequence_number");
	n = json_is_integer(seq) ? json_integer_value(seq) : b->next_seq;
	if (json_is_object(ev))
		note_response(b, ev);
	json_decref(ev);
	rc = keep_event(b, n, e->data, e->datalen);
	if (rc == 0 && (b->nev >= SG_BGO_FLUSH_EVENTS ||
	    sg_now_ms() - b->flushed_ms >= SG_BGO_FLUSH_MS))
		sg_bgo_flush(b);
	return rc;
}

/* The head is complete: its status and whether a stream follows. */
static int
read_head(struct sg_bgo *b)
{
	const char *p = b->head.p, *ct;

	if (strncasecmp(p, "Status: ", 8) == 0)
		b->http_status = atoi(p + 8);
	ct = strcasestr(p, "\ncontent-type:");
	b->sse = ct != NULL && strncasecmp(ct + 14 + strspn(ct + 14, " "),
	    "text/event-stream", 17) == 0;
	if (b->sse && (b->parser = sg_sse_new(EVENT_MAX, on_event, b)) == NULL)
		return -1;
	b->in_body = 1;
	return 0;
}

/* Head bytes from buf: how many were the head's, or -1. */
static long
take_head(struct sg_bgo *b, const char *buf, size_t len)
{
	const char *end;
	size_t used;

	if (sg_buf_add(&b->head, buf, len) == -1 ||
	    sg_buf_add(&b->head, "", 1) == -1)
		return -1;
	b->head.len--;	/* the NUL kept for strstr, not counted */
	if ((end = strstr(b->head.p, "\r\n\r\n")) == NULL)
		return b->head.len > HEAD_MAX ? -1 : (long)len;
	used = (size_t)(end + 4 - b->head.p) - (b->head.len - len);
	b->head.len = (size_t)(end + 4 - b->head.p);
	b->head.p[b->head.len] = '\0';
	return read_head(b) == -1 ? -1 : (long)used;
}

/* The capture of len bytes: 0, or -1 when they cannot be kept. */
static int
capture(struct sg_bgo *b, const char *p, size_t len)
{
	long used = 0;

	if (!b->in_body && (used = take_head(b, p, len)) == -1)
		return -1;
	p += used;
	len -= (size_t)used;
	if (len == 0)
		return 0;
	if (b->sse)
		return sg_sse_feed(b->parser, p, len);
	if (b->body.len + len > BODY_MAX)
		return 0;	/* the rest of a huge error is not needed */
	if (sg_buf_add(&b->body, p, len) == -1 ||
	    sg_buf_add(&b->body, "", 1) == -1)
		return -1;
	b->body.len--;	/* a NUL after it, not counted */
	return 0;
}

/*
 * A tee's write: the client first, then the capture. Neither failing
 * stops the other, and the writer is told 0 either way: the loop learns
 * that the client left from alive(), and what it writes until then
 * (its ending too) is kept.
 */
static int
tee_write(struct sg_bgo *b, const char *p, size_t len)
{
	/* The head went out through the tee: the client's output says so
	 * too (its status is logged, an error is not sent twice). */
	b->inner->started = b->out.started;
	b->inner->status = b->out.status;
	if (!b->inner_gone && b->inner->write(b->inner, p, len) == -1)
		b->inner_gone = 1;
	if (!b->broken && capture(b, p, len) == -1)
		b->broken = 1;
	return 0;
}

static int
bgo_write(struct sg_out *o, const void *buf, size_t len)
{
	struct sg_bgo *b = (struct sg_bgo *)o;

	if (b->inner != NULL)
		return tee_write(b, buf, len);
	return capture(b, buf, len);
}

/* A tee's events wait at most SG_BGO_FLUSH_MS, and a batch at most
 * SG_BGO_FLUSH_EVENTS: a follower sees them soon, and a burst of deltas
 * is one transaction. */
static void
tee_due(struct sg_bgo *b)
{
	if (b->nev > 0 && (b->nev >= SG_BGO_FLUSH_EVENTS ||
	    sg_now_ms() - b->flushed_ms >= SG_BGO_FLUSH_MS) &&
	    sg_bgo_flush(b) == -1 && b->nev >= TEE_PENDING_MAX) {
		/* A store down for long: the client's stream goes on. */
		b->broken = 1;
		drop_events(b);
	}
}

static int
bgo_flush(struct sg_out *o)
{
	struct sg_bgo *b = (struct sg_bgo *)o;

	if (b->inner == NULL) {
		sg_bgo_flush(b);
		return 0;
	}
	if (!b->inner_gone && b->inner->flush(b->inner) == -1)
		b->inner_gone = 1;
	tee_due(b);
	return 0;
}

static int
bgo_alive(struct sg_out *o)
{
	struct sg_bgo *b = (struct sg_bgo *)o;
	int cancel = 0, rc;

	if (b->inner != NULL) {
		tee_due(b);
		return !b->inner_gone && b->inner->alive(b->inner);
	}
	if (b->stopped)
		return 0;
	if (sg_now_ms() - b->polled_ms < SG_BGO_POLL_MS)
		return 1;
	b->polled_ms = sg_now_ms();
	rc = sg_store_bg_cancelled(b->store, b->id, b->runner, &cancel);
	if (rc == SG_STORE_NOTFOUND)
		b->stopped = 2;
	else if (rc == SG_STORE_OK && cancel)
		b->stopped = 1;
	/* A store that fails is no reason to stop: the next poll asks again. */
	return !b->stopped;
}

struct sg_bgo *
sg_bgo_new(struct sg_store *store, const char *id, const char *tenant,
    const char *runner)
{
	struct sg_bgo *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->out.write = bgo_write;
	b->out.flush = bgo_flush;
	b->out.alive = bgo_alive;
	b->store = store;
	sg_copy(b->id, sizeof(b->id), id);
	sg_copy(b->tenant, sizeof(b->tenant), tenant);
	sg_copy(b->runner, sizeof(b->runner), runner);
	b->flushed_ms = b->polled_ms = sg_now_ms();
	return b;
}

struct sg_bgo *
sg_bgo_tee(struct sg_store *store, const char *tenant, struct sg_out *inner)
{
	struct sg_bgo *b = sg_bgo_new(store, "", tenant, "");

	if (b == NULL)
		return NULL;
	b->inner = inner;
	/* The first event (response.created) is kept at once: from then
	 * on, the response is found by a follower. */
	b->flushed_ms = 0;
	return b;
}

void
sg_bgo_free(struct sg_bgo *b)
{
	if (b == NULL)
		return;
	/* A tee's last events (the stream's ending) are kept as it goes. */
	if (b->inner != NULL) {
		b->inner->started = b->out.started;
		b->inner->status = b->out.status;
		sg_bgo_flush(b);
	}
	drop_events(b);
	free(b->ev);
	sg_sse_free(b->parser);
	free(b->head.p);
	free(b->body.p);
	free(b->snapshot);
	free(b);
}

struct sg_out *
sg_bgo_out(struct sg_bgo *b)
{
	return &b->out;
}

int
sg_bgo_flush(struct sg_bgo *b)
{
	struct sg_store_ev *evs;
	size_t i;
	int rc = 0;

	b->flushed_ms = sg_now_ms();
	/* A tee knows whose events they are at response.created; until
	 * then they wait, and a stream that never names its response is
	 * not kept. */
	if (b->id[0] == '\0') {
		if (b->nev >= SG_BGO_FLUSH_EVENTS) {
			b->broken = 1;
			drop_events(b);
		}
		return 0;
	}
	if (b->nev > 0) {
		if ((evs = calloc(b->nev, sizeof(*evs))) == NULL)
			return -1;
		for (i = 0; i < b->nev; i++) {
			evs[i].seq = b->ev[i].seq;
			evs[i].event = b->ev[i].event;
		}
		rc = sg_store_ev_append(b->store, b->id, b->tenant, evs,
		    b->nev, NULL) == SG_STORE_OK ? 0 : -1;
		free(evs);
		if (rc == -1)
			return -1;
		drop_events(b);
	}
	if (b->snapshot_dirty && b->runner[0] != '\0') {
		/* NOTFOUND: no longer ours; the caller learns it from alive(). */
		if (sg_store_bg_snapshot(b->store, b->id, b->runner,
		    b->snapshot) == SG_STORE_ERROR)
			return -1;
		b->snapshot_dirty = 0;
	}
	return 0;
}

int
sg_bgo_http_status(const struct sg_bgo *b)
{
	return b->http_status;
}

const char *
sg_bgo_status(const struct sg_bgo *b)
{
	return b->status;
}

const char *
sg_bgo_snapshot(const struct sg_bgo *b)
{
	return b->snapshot;
}

const char *
sg_bgo_body(const struct sg_bgo *b)
{
	return b->sse || b->body.len == 0 ? NULL : b->body.p;
}

int
sg_bgo_stopped(const struct sg_bgo *b)
{
	return b->stopped;
}
