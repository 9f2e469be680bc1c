/*
 * Resumable streams: the tee (core/api/bg_out.c) keeps a client's
 * Responses stream as it is sent, under the response's id and the key's
 * tenant, and goes on keeping it once the client is gone; the follower
 * (core/api/resp_stream.c) replays the events after a sequence number,
 * follows the ones still to come, ends at the response's end, at its
 * job's, or after a quiet idle_s, and refuses what OpenAI refuses before
 * writing anything. On SQLite, then on PostgreSQL when SG_TEST_PG is set.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "../../core/api/bg_out.h"
#include "../../core/api/resp_stream.h"
#include "../../lib/util.h"
#include "../../store/store.h"
#include "../../store/background.h"
#include "testutil.h"

#define HEAD	"Status: 200 OK\r\nContent-Type: text/event-stream; " \
		"charset=utf-8\r\nx-request-id: req_1\r\n\r\n"

static const char *const EVENTS[] = {
	"{\"type\":\"response.created\",\"sequence_number\":0,\"response\":"
	    "{\"id\":\"resp_t\",\"status\":\"in_progress\"}}",
	"{\"type\":\"response.in_progress\",\"sequence_number\":1,"
	    "\"response\":{\"id\":\"resp_t\",\"status\":\"in_progress\"}}",
	"{\"type\":\"response.output_text.delta\",\"sequence_number\":2,"
	    "\"delta\":\"4\"}",
	"{\"type\":\"response.completed\",\"sequence_number\":3,\"response\":"
	    "{\"id\":\"resp_t\",\"status\":\"completed\"}}",
};
#define NEVENTS	(int)(sizeof(EVENTS) / sizeof(EVENTS[0]))

/* Event i as sent: event line, data line, blank line. */
static void
framed(int i, char *buf, size_t sz)
{
	const char *t = EVENTS[i] + 9;

	snprintf(buf, sz, "event: %.*s\ndata: %s\n\n", (int)(strchr(t, '"') -
	    t), t, EVENTS[i]);
}

/* The frames of events from..to-1. */
static void
frames(int from, int to, char *buf, size_t sz)
{
	size_t len;

	buf[0] = '\0';
	for (; from < to; from++) {
		len = strlen(buf);
		framed(from, buf + len, sz - len);
	}
}

/* A client: what it is sent, and it leaves once fail_at bytes came (0:
 * never). each(), when set, runs at every alive(): what goes on
 * meanwhile elsewhere. */
struct client {
	struct tu_capture	 cap;	/* first */
	size_t			 fail_at;
	int			 gone, alives;
	void			(*each)(struct client *);
	struct sg_store		*st;
};

static int
client_write(struct sg_out *o, const void *p, size_t n)
{
	struct client *c = (struct client *)o;

	if (c->gone || (c->fail_at > 0 && c->cap.b.len + n > c->fail_at)) {
		c->gone = 1;
		return -1;
	}
	return sg_buf_add(&c->cap.b, p, n);
}

static int
client_alive(struct sg_out *o)
{
	struct client *c = (struct client *)o;

	c->alives++;
	if (c->each != NULL)
		c->each(c);
	return !c->gone;
}

static void
client_init(struct client *c, struct sg_store *st)
{
	memset(c, 0, sizeof(*c));
	tu_capture_init(&c->cap);
	c->cap.out.write = client_write;
	c->cap.out.alive = client_alive;
	c->st = st;
}

/* What the client got, NUL-ended. */
static const char *
got(struct client *c)
{
	assert_int_equal(sg_buf_add(&c->cap.b, "", 1), 0);
	c->cap.b.len--;
	return c->cap.b.p;
}

static struct sg_req
request(const char *tenant)
{
	struct sg_req req;

	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.uri = "/v1/responses/resp_t?stream=true";
	snprintf(req.id, sizeof(req.id), "req_1");
	snprintf(req.tenant, sizeof(req.tenant), "%s", tenant);
	return req;
}

/* Events from..to-1 kept for tenant. */
static void
keep(struct sg_store *st, const char *tenant, int from, int to)
{
	struct sg_store_ev ev;

	for (; from < to; from++) {
		ev.seq = from;
		ev.event = EVENTS[from];
		assert_int_equal(sg_store_ev_append(st, "resp_t", tenant, &ev, 1,
		    NULL), SG_STORE_OK);
	}
}

static int
count(void *arg, const struct sg_store_ev *e)
{
	(void)e;
	(*(int *)arg)++;
	return 0;
}

static int
kept(struct sg_store *st, const char *tenant)
{
	int n = 0;

	assert_int_equal(sg_store_ev_list(st, "resp_t", tenant, -1, 0, count,
	    &n), SG_STORE_OK);
	return n;
}

/* The tee: the client gets every byte as written, the store every event
 * under response.created's id and the tenant, the head's status mirrored
 * on the client's output. */
static void
tee_keeps_what_the_client_gets(void **state)
{
	struct tu_store_fx *fx = *state;
	char all[4096], text[8192];
	size_t pieces[] = { 1, 5, 4096 }, i, off, n;
	struct client c;
	struct sg_bgo *tee;
	struct sg_out *out;

	frames(0, NEVENTS, all, sizeof(all));
	snprintf(text, sizeof(text), "%s%s", HEAD, all);
	for (i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		client_init(&c, fx->st);
		assert_non_null(tee = sg_bgo_tee(fx->st, "alice", &c.cap.out));
		out = sg_bgo_out(tee);
		out->started = 1;
		out->status = 200;
		for (off = 0; off < strlen(text); off += n) {
			n = strlen(text) - off < pieces[i] ? strlen(text) - off :
			    pieces[i];
			assert_int_equal(out->write(out, text + off, n), 0);
			assert_int_equal(out->flush(out), 0);
		}
		assert_int_equal(c.cap.out.started, 1);
		assert_int_equal(c.cap.out.status, 200);
		assert_string_equal(sg_bgo_status(tee), "completed");
		sg_bgo_free(tee);
		assert_string_equal(got(&c), text);
		free(c.cap.b.p);
		assert_int_equal(kept(fx->st, "alice"), NEVENTS);
		assert_int_equal(kept(fx->st, "bob"), 0);
	}
}

/* The client leaves mid-stream: the writer is told nothing by write (the
 * loop ends its stream as it does), alive() turns 0, and every event
 * written, the ones after the client left too, is kept. */
static void
tee_keeps_on_once_the_client_left(void **state)
{
	struct tu_store_fx *fx = *state;
	char ev[1024];
	struct client c;
	struct sg_bgo *tee;
	struct sg_out *out;
	int i;

	client_init(&c, fx->st);
	assert_non_null(tee = sg_bgo_tee(fx->st, "alice", &c.cap.out));
	out = sg_bgo_out(tee);
	c.fail_at = strlen(HEAD) + 20;
	assert_int_equal(out->write(out, HEAD, strlen(HEAD)), 0);
	assert_int_equal(out->alive(out), 1);
	for (i = 0; i < NEVENTS; i++) {
		framed(i, ev, sizeof(ev));
		assert_int_equal(out->write(out, ev, strlen(ev)), 0);
		assert_int_equal(out->flush(out), 0);
	}
	assert_true(c.gone);
	assert_int_equal(out->alive(out), 0);
	sg_bgo_free(tee);
	assert_int_equal(kept(fx->st, "alice"), NEVENTS);
	free(c.cap.b.p);
}

/* A burst is kept in batches, each within SG_BGO_FLUSH_MS: alive(),
 * which the loop polls, stores what waits. */
static void
tee_batches_within_the_flush_time(void **state)
{
	struct tu_store_fx *fx = *state;
	char ev[1024];
	struct client c;
	struct sg_bgo *tee;
	struct sg_out *out;
	int i;

	client_init(&c, fx->st);
	assert_non_null(tee = sg_bgo_tee(fx->st, "alice", &c.cap.out));
	out = sg_bgo_out(tee);
	assert_int_equal(out->write(out, HEAD, strlen(HEAD)), 0);
	for (i = 0; i < 3; i++) {
		framed(i, ev, sizeof(ev));
		assert_int_equal(out->write(out, ev, strlen(ev)), 0);
		assert_int_equal(out->flush(out), 0);
	}
	/* The first is kept at once (a follower finds the response from
	 * then); the rest wait, within SG_BGO_FLUSH_MS... */
	assert_int_equal(kept(fx->st, "alice"), 1);
	/* ... and alive(), which the loop polls, stores them after it. */
	usleep((SG_BGO_FLUSH_MS + 20) * 1000);
	assert_int_equal(out->alive(out), 1);
	assert_int_equal(kept(fx->st, "alice"), 3);
	sg_bgo_free(tee);
	free(c.cap.b.p);
}

/* Kept events after N are replayed in order, framed as OpenAI's, and the
 * stream ends at the response's end. */
static void
replays_after_n(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_req req = request("alice");
	char want[4096], head[512];
	struct sg_error err;
	struct client c;
	int n;

	keep(fx->st, "alice", 0, NEVENTS);
	for (n = -1; n < NEVENTS; n++) {
		client_init(&c, fx->st);
		assert_int_equal(sg_rstream_follow(fx->st, "resp_t", &req, n, 1,
		    &c.cap.out, &err), 0);
		snprintf(head, sizeof(head), "%s", HEAD);
		head[strlen(head) - 2] = '\0';
		frames(n + 1, NEVENTS, want, sizeof(want));
		assert_true(strncmp(got(&c), head, strlen(head)) == 0);
		assert_non_null(strstr(got(&c), "X-Accel-Buffering: no\r\n"));
		assert_string_equal(strstr(got(&c), "\r\n\r\n") + 4, want);
		free(c.cap.b.p);
	}
}

/* Refused before anything is written: no such response, another
 * tenant's, one stored without events, starting_after beyond the end of
 * one that ended. */
static void
refusals(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_req alice = request("alice"), bob = request("bob");
	struct sg_store_item out = { "msg_1", "{\"type\":\"message\"}", "[]" };
	struct sg_store_resp r = { .id = "resp_plain", .tenant = "alice",
	    .model = "m", .upstream_id = "", .body = "{\"id\":\"resp_plain\"}" };
	struct sg_error err;
	struct client c;

	client_init(&c, fx->st);
	assert_int_equal(sg_rstream_follow(fx->st, "resp_t", &alice, -1, 1,
	    &c.cap.out, &err), -1);
	assert_int_equal(err.status, 404);
	assert_string_equal(err.message, "Response with id 'resp_t' not found.");
	keep(fx->st, "alice", 0, NEVENTS);
	assert_int_equal(sg_rstream_follow(fx->st, "resp_t", &bob, -1, 1,
	    &c.cap.out, &err), -1);
	assert_int_equal(err.status, 404);
	assert_int_equal(sg_rstream_follow(fx->st, "resp_t", &alice, NEVENTS,
	    1, &c.cap.out, &err), -1);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.param, "starting_after");
	assert_int_equal(sg_store_resp_save(fx->st, &r, NULL, 0, &out, 1),
	    SG_STORE_OK);
	assert_int_equal(sg_rstream_follow(fx->st, "resp_plain", &alice, -1, 1,
	    &c.cap.out, &err), -1);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.param, "stream");
	assert_int_equal(sg_rstream_follow(fx->st, "resp_plain", &bob, -1, 1,
	    &c.cap.out, &err), -1);
	assert_int_equal(err.status, 404);
	assert_int_equal(c.cap.b.len, 0);
	assert_int_equal(c.cap.out.started, 0);
}

/* While the follower waits, the rest of the stream comes, one event at
 * a time: it is sent as it comes, up to the end. */
static void
more_each_poll(struct client *c)
{
	int n = kept(c->st, "alice");

	if (n < NEVENTS)
		keep(c->st, "alice", n, n + 1);
}

static void
follows_live_events(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_req req = request("alice");
	char want[4096];
	struct sg_error err;
	struct client c;

	int64_t t0 = sg_now_ms();

	keep(fx->st, "alice", 0, 1);
	client_init(&c, fx->st);
	c.each = more_each_poll;
	assert_int_equal(sg_rstream_follow(fx->st, "resp_t", &req, -1, 5,
	    &c.cap.out, &err), 0);
	/* Ended by its ending event, not by the quiet after it. */
	assert_true(sg_now_ms() - t0 < 2000);
	frames(0, NEVENTS, want, sizeof(want));
	assert_string_equal(strstr(got(&c), "\r\n\r\n") + 4, want);
	free(c.cap.b.p);
}

/* A background job's response: starting_after beyond what is kept is
 * waited for while the job runs; once it ends, what is left is sent and
 * the stream ends, with no ending event of its own. */
static void
end_job(struct client *c)
{
	struct sg_store_bg job;

	if (c->alives != 3)
		return;
	assert_int_equal(sg_store_bg_claim(c->st, getpid(), sg_self_start(), 0,
	    &job), SG_STORE_OK);
	keep(c->st, "alice", 1, 3);
	assert_int_equal(sg_store_bg_finish(c->st, "resp_t", job.runner,
	    "cancelled", NULL, NULL), SG_STORE_OK);
	sg_store_bg_clear(&job);
}

static void
follows_a_job_to_its_end(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_req req = request("alice");
	char want[4096];
	struct sg_error err;
	struct client c;

	assert_int_equal(sg_store_bg_add(fx->st, "resp_t", "alice", "alice",
	    "{}", sg_wall_ms()), SG_STORE_OK);
	keep(fx->st, "alice", 0, 1);
	client_init(&c, fx->st);
	c.each = end_job;
	/* Beyond the last kept, while queued: waited for, not refused. */
	assert_int_equal(sg_rstream_follow(fx->st, "resp_t", &req, 1, 1,
	    &c.cap.out, &err), 0);
	frames(2, 3, want, sizeof(want));
	assert_string_equal(strstr(got(&c), "\r\n\r\n") + 4, want);
	free(c.cap.b.p);
	/* Ended: beyond it is refused now. */
	client_init(&c, fx->st);
	assert_int_equal(sg_rstream_follow(fx->st, "resp_t", &req, 3, 1,
	    &c.cap.out, &err), -1);
	assert_int_equal(err.status, 400);
}

/* No job and no ending (its responder died): the stream ends once
 * nothing new came for idle_s; a client that left ends it at once. */
static void
ends_when_quiet_or_left(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_req req = request("alice");
	struct sg_error err;
	struct client c;
	int64_t t0;

	keep(fx->st, "alice", 0, 2);
	client_init(&c, fx->st);
	t0 = sg_now_ms();
	assert_int_equal(sg_rstream_follow(fx->st, "resp_t", &req, 5, 1,
	    &c.cap.out, &err), 0);
	assert_true(sg_now_ms() - t0 >= 1000);
	assert_true(sg_now_ms() - t0 < 3000);
	assert_null(strstr(got(&c), "data:"));
	free(c.cap.b.p);

	client_init(&c, fx->st);
	c.gone = 0;
	c.fail_at = 1;	/* the head fails: nothing more is tried */
	t0 = sg_now_ms();
	assert_int_equal(sg_rstream_follow(fx->st, "resp_t", &req, -1, 30,
	    &c.cap.out, &err), 0);
	assert_true(sg_now_ms() - t0 < 1000);
	free(c.cap.b.p);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(tee_keeps_what_the_client_gets),
		T(tee_keeps_on_once_the_client_left),
		T(tee_batches_within_the_flush_time),
		T(replays_after_n),
		T(refusals),
		T(follows_live_events),
		T(follows_a_job_to_its_end),
		T(ends_when_quiet_or_left),
	};

	TU_STORE_MAIN(tests);
}
