/*
 * A runner: a child of the master that runs background responses (core/
 * api/bg_run.h), one at a time, never holding a responder. The master
 * keeps background.runners of them; each has its own store connection
 * and upstream client, and a ledger row of its own (slot SG_SLOTS + its
 * index), so what a job spends is counted as a responder's request is,
 * and a runner killed mid-job leaves its row for the reaper.
 */
#include <sys/prctl.h>
#include <sys/wait.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fcgi.h"
#include "../core/api/bg_run.h"
#include "../core/api/gateway.h"
#include "../core/state/ledger.h"
#include "../lib/util.h"

#define IDLE_MS		250	/* how soon a queued job is seen, idle */
#define BACKOFF_MS	1000	/* after a runner died, before the next */
#define STORE_PAUSE_MS	2000	/* after the store failed */

static volatile sig_atomic_t stopping, hurry;

/* SIGTERM (a reload, or the master gone): the job under way finishes,
 * then the runner goes. SIGINT (the gateway stops): it has the grace. */
static void
on_stop(int sig)
{
	stopping = 1;
	if (sig == SIGINT)
		hurry = 1;
}

/* Jobs until told to stop. */
static void
runner_loop(struct sg_gw *gw)
{
	int64_t pid = getpid(), start = sg_self_start();
	int rc, failing = 0;

	while (!stopping) {
		rc = sg_bg_run(gw, pid, start, &hurry);
		if (rc == 1)
			continue;
		if (rc == -1 && !failing)
			fprintf(stderr, "sandgate: runner: the store failed; "
			    "trying again\n");
		failing = rc == -1;
		poll(NULL, 0, rc == -1 ? STORE_PAUSE_MS : IDLE_MS);
	}
}

void
sg_runner_run(const struct sg_cfg *cfg, int index)
{
	char err[SG_ERR_MAX];
	struct sg_gw *gw;

	prctl(PR_SET_NAME, "sg-runner");
	sg_child_signals(on_stop);
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (sg_drop_privileges(cfg) == -1)
		_exit(3);
	sg_child_follow();
	if (sg_gw_new(cfg, &gw, err, sizeof(err)) == -1) {
		fprintf(stderr, "sandgate: runner: %s\n", err);
		_exit(1);
	}
	sg_use_slot(SG_SLOTS + index);
	runner_loop(gw);
	sg_gw_free(gw);
	curl_global_cleanup();
	_exit(0);
}

/* A runner is replaced only once it is gone: its index is its ledger
 * slot, never two processes' at once. */
void
sg_runners_balance(struct sg_runners *r, const struct sg_cfg *cfg,
    int64_t now, pid_t (*fork_fn)(void *), void *arg)
{
	int i;
	pid_t pid;

	for (i = 0; i < SG_CFG_RUNNERS_MAX; i++) {
		if (i >= cfg->background.runners) {
			if (r->pid[i] != 0)
				kill(r->pid[i], SIGTERM);
			continue;
		}
		if (r->pid[i] != 0 || now < r->after)
			continue;
		if ((pid = fork_fn(arg)) == 0)
			sg_runner_run(cfg, i);
		if (pid > 0)
			r->pid[i] = pid;
	}
}

int
sg_runners_ended(struct sg_runners *r, pid_t pid, int status, int stopping)
{
	int i;

	for (i = 0; i < SG_CFG_RUNNERS_MAX && r->pid[i] != pid; i++)
		;
	if (i == SG_CFG_RUNNERS_MAX)
		return 0;
	r->pid[i] = 0;
	if (!stopping && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		fprintf(stderr, "sandgate: runner %d died (%s %d); its job, if "
		    "it had one, ends failed; replacing it\n", (int)pid,
		    WIFSIGNALED(status) ? "signal" : "exit", WIFSIGNALED(status) ?
		    WTERMSIG(status) : WEXITSTATUS(status));
		r->after = sg_now_ms() + BACKOFF_MS;
	}
	return 1;
}

int
sg_runners_signal(const struct sg_runners *r, int sig)
{
	int i, n = 0;

	for (i = 0; i < SG_CFG_RUNNERS_MAX; i++)
		if (r->pid[i] != 0) {
			kill(r->pid[i], sig);
			n++;
		}
	return n;
}
