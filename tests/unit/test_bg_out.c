/*
 * core/api/bg_out: a runner's output. A stream written in pieces split
 * anywhere (the head too) reaches the store as its events, by their
 * sequence numbers, in order, once each, with the response's latest
 * snapshot and its terminal status; an error answered before any stream
 * is kept as a body; alive() turns 0 once a cancel is asked, or once the
 * job is no longer the runner's. On SQLite, then on PostgreSQL when
 * SG_TEST_PG is set.
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
#include "../../lib/util.h"
#include "../../store/store.h"
#include "../../store/background.h"
#include "testutil.h"

#define HEAD	"Status: 200 OK\r\nContent-Type: text/event-stream\r\n" \
		"x-request-id: req_1\r\n\r\n"

/* A claimed job "resp_1" of tenant "t": its runner's name in runner. */
static void
claimed(struct sg_store *st, char *runner, size_t sz)
{
	struct sg_store_bg job;

	assert_int_equal(sg_store_bg_add(st, "resp_1", "t", "alice", "{}",
	    sg_wall_ms()), SG_STORE_OK);
	assert_int_equal(sg_store_bg_claim(st, getpid(), sg_self_start(), 0,
	    &job), SG_STORE_OK);
	snprintf(runner, sz, "%s", job.runner);
	sg_store_bg_clear(&job);
}

/* Write text to out in pieces of n bytes. */
static void
write_split(struct sg_out *out, const char *text, size_t n)
{
	size_t len = strlen(text), i;

	for (i = 0; i < len; i += n)
		assert_int_equal(out->write(out, text + i, len - i < n ? len - i :
		    n), 0);
}

struct seen {
	char	 text[4096];
	int	 n;
};

static int
note(void *arg, const struct sg_store_ev *e)
{
	struct seen *s = arg;
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%lld:%s\n",
	    (long long)e->seq, e->event);
	s->n++;
	return 0;
}

static const char STREAM[] =
    HEAD
    "event: response.created\n"
    "data: {\"type\":\"response.created\",\"sequence_number\":0,"
    "\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n"
    ": keepalive\n\n"
    "event: response.output_text.delta\r\n"
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,"
    "\"delta\":\"4\"}\r\n\r\n"
    "event: response.completed\n"
    "data: {\"type\":\"response.completed\",\"sequence_number\":2,"
    "\"response\":{\"id\":\"resp_1\",\"status\":\"completed\"}}\n\n";

static void
stream_split_anywhere(void **state)
{
	struct tu_store_fx *fx = *state;
	char runner[SG_STORE_BG_RUNNER_MAX];
	size_t pieces[] = { 1, 7, 64, 4096 };
	struct sg_store_bg job;
	struct sg_bgo *b;
	struct seen s;
	size_t i;

	claimed(fx->st, runner, sizeof(runner));
	for (i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		assert_non_null(b = sg_bgo_new(fx->st, "resp_1", "t", runner));
		write_split(sg_bgo_out(b), STREAM, pieces[i]);
		assert_int_equal(sg_bgo_flush(b), 0);
		assert_int_equal(sg_bgo_http_status(b), 200);
		assert_string_equal(sg_bgo_status(b), "completed");
		assert_null(sg_bgo_body(b));
		sg_bgo_free(b);
		/* Written again (a retried run): nothing twice. */
		memset(&s, 0, sizeof(s));
		assert_int_equal(sg_store_ev_list(fx->st, "resp_1", "t", -1, 0,
		    note, &s), SG_STORE_OK);
		assert_int_equal(s.n, 3);
	}
	assert_string_equal(s.text,
	    "0:{\"type\":\"response.created\",\"sequence_number\":0,"
	    "\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n"
	    "1:{\"type\":\"response.output_text.delta\",\"sequence_number\":1,"
	    "\"delta\":\"4\"}\n"
	    "2:{\"type\":\"response.completed\",\"sequence_number\":2,"
	    "\"response\":{\"id\":\"resp_1\",\"status\":\"completed\"}}\n");
	assert_int_equal(sg_store_bg_get(fx->st, "resp_1", "t", &job),
	    SG_STORE_OK);
	assert_string_equal(job.snapshot,
	    "{\"id\":\"resp_1\",\"status\":\"completed\"}");
	sg_store_bg_clear(&job);
}

/* Events reach the store while the stream goes on, not only at its end:
 * a follower sees them within SG_BGO_FLUSH_MS. */
static void
events_flow_while_streaming(void **state)
{
	struct tu_store_fx *fx = *state;
	char runner[SG_STORE_BG_RUNNER_MAX], ev[256];
	struct sg_bgo *b;
	struct seen s;
	int i;

	claimed(fx->st, runner, sizeof(runner));
	assert_non_null(b = sg_bgo_new(fx->st, "resp_1", "t", runner));
	write_split(sg_bgo_out(b), HEAD, 5);
	for (i = 0; i < SG_BGO_FLUSH_EVENTS; i++) {
		snprintf(ev, sizeof(ev), "data: {\"sequence_number\":%d}\n\n", i);
		write_split(sg_bgo_out(b), ev, 1000);
	}
	memset(&s, 0, sizeof(s));
	assert_int_equal(sg_store_ev_list(fx->st, "resp_1", "t", -1, 0, note,
	    &s), SG_STORE_OK);
	assert_int_equal(s.n, SG_BGO_FLUSH_EVENTS);
	/* One more, after the flush interval: stored at once. */
	usleep((SG_BGO_FLUSH_MS + 20) * 1000);
	write_split(sg_bgo_out(b), "data: {\"sequence_number\":999}\n\n", 9);
	memset(&s, 0, sizeof(s));
	assert_int_equal(sg_store_ev_list(fx->st, "resp_1", "t", 900, 0, note,
	    &s), SG_STORE_OK);
	assert_int_equal(s.n, 1);
	assert_string_equal(sg_bgo_status(b), "");	/* cut short: no end */
	sg_bgo_free(b);
}

static void
error_before_the_stream(void **state)
{
	struct tu_store_fx *fx = *state;
	char runner[SG_STORE_BG_RUNNER_MAX];
	struct sg_bgo *b;
	struct seen s;

	claimed(fx->st, runner, sizeof(runner));
	assert_non_null(b = sg_bgo_new(fx->st, "resp_1", "t", runner));
	write_split(sg_bgo_out(b), "Status: 404 Not Found\r\nContent-Type: "
	    "application/json\r\nx-request-id: req_1\r\n\r\n{\"error\":"
	    "{\"message\":\"no such model\"}}", 3);
	assert_int_equal(sg_bgo_http_status(b), 404);
	assert_string_equal(sg_bgo_body(b),
	    "{\"error\":{\"message\":\"no such model\"}}");
	assert_null(sg_bgo_snapshot(b));
	assert_int_equal(sg_bgo_flush(b), 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(sg_store_ev_list(fx->st, "resp_1", "t", -1, 0, note,
	    &s), SG_STORE_OK);
	assert_int_equal(s.n, 0);
	sg_bgo_free(b);
}

static void
alive_until_cancelled_or_lost(void **state)
{
	struct tu_store_fx *fx = *state;
	char runner[SG_STORE_BG_RUNNER_MAX], status[16];
	struct sg_out *out;
	struct sg_bgo *b;

	claimed(fx->st, runner, sizeof(runner));
	assert_non_null(b = sg_bgo_new(fx->st, "resp_1", "t", runner));
	out = sg_bgo_out(b);
	usleep((SG_BGO_POLL_MS + 20) * 1000);
	assert_int_equal(out->alive(out), 1);
	assert_int_equal(sg_store_bg_cancel(fx->st, "resp_1", "t", status),
	    SG_STORE_OK);
	/* Asked at most every SG_BGO_POLL_MS: not seen at once... */
	assert_int_equal(out->alive(out), 1);
	usleep((SG_BGO_POLL_MS + 20) * 1000);
	/* ... but within it, and for good. */
	assert_int_equal(out->alive(out), 0);
	assert_int_equal(out->alive(out), 0);
	assert_int_equal(sg_bgo_stopped(b), 1);
	sg_bgo_free(b);

	/* A job no longer the runner's (deleted): stop too. */
	assert_non_null(b = sg_bgo_new(fx->st, "resp_1", "t", runner));
	out = sg_bgo_out(b);
	assert_int_equal(sg_store_bg_delete(fx->st, "resp_1", "t"),
	    SG_STORE_OK);
	usleep((SG_BGO_POLL_MS + 20) * 1000);
	assert_int_equal(out->alive(out), 0);
	assert_int_equal(sg_bgo_stopped(b), 2);
	sg_bgo_free(b);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(stream_split_anywhere),
		T(events_flow_while_streaming),
		T(error_before_the_stream),
		T(alive_until_cancelled_or_lost),
	};

	TU_STORE_MAIN(tests);
}
