/*
 * core/state/ledger: a request's spending is counted across turns in
 * either API's names, found in relayed text without being fooled by
 * text that only looks like usage, priced from the config, queued
 * through the shared ring and written to a real store by the drain;
 * a row a dead responder left is written with status 0, once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/config/config.h"
#include "../../core/http/http.h"
#include "../../core/state/ledger.h"
#include "../../store/store.h"
#include "../../lib/util.h"

static struct sg_cfg_model models[1] = { { .name = "m",
	.price = { .input = 2.0, .cached_input = 0.5, .output = 8.0,
	.cached_set = 1 } } };
static struct sg_tool tools[1] = { { .name = "local",
	.price_session = 0.03, .price_hour = 3.6 } };
static struct sg_cfg cfg = { .models = models, .nmodels = 1,
	.tools = tools, .ntools = 1 };

static void
req_of(struct sg_req *req, const char *id)
{
	memset(req, 0, sizeof(*req));
	snprintf(req->id, sizeof(req->id), "%s", id);
	snprintf(req->tenant, sizeof(req->tenant), "%064d", 7);
	snprintf(req->key_name, sizeof(req->key_name), "team-a");
	snprintf(req->model, sizeof(req->model), "m");
	req->start_ms = sg_now_ms();
	req->wall_ms = sg_wall_ms();
}

/* Without a mapped ring the finished row comes back to the caller. */
static void
counts_and_prices(void **state)
{
	struct sg_store_use row;
	struct sg_req req;
	json_t *chat, *resp;

	(void)state;
	req_of(&req, "req_1");
	sg_use_begin(&req, "responses");
	sg_use_model("m", "upstream-m");
	sg_use_call();
	resp = json_pack("{s:i,s:i,s:{s:i},s:{s:i}}", "input_tokens", 1000,
	    "output_tokens", 100, "input_tokens_details", "cached_tokens", 400,
	    "output_tokens_details", "reasoning_tokens", 30);
	sg_use_tokens(resp);
	sg_use_call();
	chat = json_pack("{s:i,s:i,s:{s:i}}", "prompt_tokens", 10,
	    "completion_tokens", 5, "prompt_tokens_details", "cached_tokens", 0);
	sg_use_tokens(chat);
	sg_use_run("local", 1800);
	sg_use_session("local");
	assert_int_equal(sg_use_end(&cfg, 200, 0, &row), 1);
	assert_string_equal(row.id, "req_1");
	assert_string_equal(row.upstream_model, "upstream-m");
	assert_string_equal(row.surface, "responses");
	assert_string_equal(row.tool, "local");
	assert_int_equal(row.model_requests, 2);
	assert_int_equal(row.input_tokens, 1010);
	assert_int_equal(row.cached_tokens, 400);
	assert_int_equal(row.output_tokens, 105);
	assert_int_equal(row.reasoning_tokens, 30);
	assert_int_equal(row.code_runs, 1);
	assert_int_equal(row.sandbox_ms, 1800);
	assert_int_equal(row.sessions, 1);
	/* 610 uncached at $2/M, 400 cached at $0.5/M; 105 out at $8/M. */
	assert_int_equal(row.cost_input, 610 * 2000 + 400 * 500);
	assert_int_equal(row.cost_output, 105 * 8000);
	/* $0.03 a session, $3.6 an hour: 1.8 s is $0.0018. */
	assert_int_equal(row.cost_sandbox, 30000000 + 1800000);
	assert_memory_equal(row.key_id, "key_", 4);
	assert_int_equal(strlen(row.key_id), 28);
	json_decref(resp);
	json_decref(chat);
}

/* A request that reached no model and no sandbox leaves no row. */
static void
nothing_spent_no_row(void **state)
{
	struct sg_store_use row;
	struct sg_req req;

	(void)state;
	req_of(&req, "req_2");
	sg_use_begin(&req, "files");
	assert_int_equal(sg_use_end(&cfg, 200, 0, &row), 0);
}

static int64_t
tokens_in(const char *text)
{
	struct sg_store_use row;
	struct sg_req req;

	req_of(&req, "req_t");
	sg_use_begin(&req, "chat");
	sg_use_call();
	sg_use_tokens_in(text, strlen(text));
	assert_int_equal(sg_use_end(&cfg, 200, 0, &row), 1);
	return row.input_tokens * 1000 + row.output_tokens;
}

/* The top-level usage of a relayed answer; text that quotes one is not. */
static void
usage_found_in_text(void **state)
{
	(void)state;
	assert_int_equal(tokens_in("{\"id\":\"x\",\"usage\":{\"prompt_tokens\":"
	    "7,\"completion_tokens\":3}}"), 7003);
	assert_int_equal(tokens_in("{\"output\":[{\"text\":\"say \\\"usage\\\""
	    ": {\\\"input_tokens\\\": 99}\"}],\"usage\" : {\"input_tokens\":5,"
	    "\"output_tokens\":2},\"user\":null}"), 5002);
	/* Quoted only: nothing. */
	assert_int_equal(tokens_in("{\"text\":\"\\\"usage\\\":{\\\"input_tokens"
	    "\\\":9}\"}"), 0);
	assert_int_equal(tokens_in("{\"usage\":null}"), 0);
	assert_int_equal(tokens_in("{\"usage\":{\"input_tokens\":"), 0);
	assert_int_equal(tokens_in("\"usage\""), 0);
	assert_int_equal(tokens_in(""), 0);
}

static void
tokens_text(const char *text)
{
	sg_use_tokens_in(text, strlen(text));
}

static struct sg_store *
store_new(char *path, size_t sz)
{
	struct sg_store *st;
	char err[256];

	snprintf(path, sz, "/tmp/sg-ledger-%d.db", (int)getpid());
	unlink(path);
	assert_int_equal(sg_store_open(path, &st, err, sizeof(err)), 0);
	assert_int_equal(sg_store_migrate(st), 0);
	return st;
}

/* Rows go through the shared ring to the store; a child killed
 * mid-request leaves its row, written with status 0. */
static void
ring_to_store(void **state)
{
	struct sg_store_use_tot tot;
	struct sg_store_use row;
	struct sg_store *st;
	struct sg_req req;
	char path[64];
	int n, i, ws;
	pid_t pid;

	(void)state;
	assert_int_equal(sg_use_map(4), 0);
	for (i = 0; i < 3; i++) {
		char id[32];

		snprintf(id, sizeof(id), "req_r%d", i);
		sg_use_slot(i);
		req_of(&req, id);
		sg_use_begin(&req, "chat");
		sg_use_call();
		tokens_text("{\"usage\":{\"prompt_tokens\":10,"
		    "\"completion_tokens\":1}}");
		assert_int_equal(sg_use_end(&cfg, 200, 0, &row), 0);
	}
	if ((pid = fork()) == 0) {
		sg_use_slot(3);
		req_of(&req, "req_dead");
		sg_use_begin(&req, "responses");
		sg_use_call();
		tokens_text("{\"usage\":{\"input_tokens\":100,"
		    "\"output_tokens\":1}}");
		kill(getpid(), SIGKILL);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	/* Opened only now: a store is never carried across a fork. */
	st = store_new(path, sizeof(path));
	assert_int_equal(sg_use_drain(&cfg, st, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(sg_use_drain(&cfg, st, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(sg_store_use_total(st, req.tenant, 0, &tot), 0);
	assert_int_equal(tot.requests, 4);
	assert_int_equal(tot.tokens, 3 * 11 + 101);
	/* Priced at the drain: 100 in at $2/M + 1 out at $8/M, and 3 x
	 * (10 in + 1 out). */
	assert_int_equal(tot.cost, 100 * 2000 + 8000 + 3 * (10 * 2000 + 8000));
	sg_store_close(st);
	unlink(path);
}

/* Periods are calendar UTC: 2026-12-03 (a Thursday) 15:04:05. */
static void
periods(void **state)
{
	int64_t now = 1796310245000LL;

	(void)state;
	assert_int_equal(sg_use_period_start(SG_PERIOD_DAY, now),
	    1796256000000LL);	/* 2026-12-03 00:00 */
	assert_int_equal(sg_use_period_start(SG_PERIOD_WEEK, now),
	    1795996800000LL);	/* Monday 2026-11-30 */
	assert_int_equal(sg_use_period_start(SG_PERIOD_MONTH, now),
	    1796083200000LL);	/* 2026-12-01 */
	assert_int_equal(sg_use_period_end(SG_PERIOD_MONTH, now),
	    1798761600000LL);	/* 2027-01-01 */
	assert_int_equal(sg_use_period_end(SG_PERIOD_WEEK, now),
	    1796601600000LL);	/* Monday 2026-12-07 */
	/* On a Monday's midnight, that Monday. */
	assert_int_equal(sg_use_period_start(SG_PERIOD_WEEK, 1795996800000LL),
	    1795996800000LL);
}

/* Each tenant its own id, whichever was asked for last (the last one
 * made is kept). */
static void
key_ids_by_tenant(void **state)
{
	const char *tenants[] = { "aa11", "bb22", "aa11", "anonymous", "bb22",
	    "bb22", "aa11" };
	char id[32], label[96], hash[65], want[32];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(tenants) / sizeof(tenants[0]); i++) {
		sg_use_key_id(tenants[i], id);
		if (strcmp(tenants[i], "anonymous") == 0) {
			assert_string_equal(id, "key_anonymous");
			continue;
		}
		snprintf(label, sizeof(label), "sandgate key id %s", tenants[i]);
		sg_sha256_hex(label, strlen(label), hash);
		snprintf(want, sizeof(want), "key_%.24s", hash);
		assert_string_equal(id, want);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counts_and_prices),
		cmocka_unit_test(key_ids_by_tenant),
		cmocka_unit_test(nothing_spent_no_row),
		cmocka_unit_test(usage_found_in_text),
		cmocka_unit_test(ring_to_store),
		cmocka_unit_test(periods),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
