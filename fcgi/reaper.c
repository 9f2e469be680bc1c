/*
 * The reaper: one child of the master that sweeps, every REAP_EVERY
 * seconds, the sandboxes whose life at their provider has passed (design
 * §5, "No leaks"): what nobody deleted, and what a dead responder left.
 */
#include <sys/prctl.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fcgi.h"
#include "../core/sandbox.h"

#define REAP_EVERY 30

static volatile sig_atomic_t stopping;

static void
on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

static void
sweep(const struct sg_cfg *cfg, const char *only_tool)
{
	struct sg_prov prov;
	struct sg_sbx_env env = { cfg, NULL, &prov };
	char err[SG_ERR_MAX], tool[128];
	int deleted, failed, skipped;
	int64_t t0;

	if (sg_store_open(cfg->store.path, &env.store, err, sizeof(err)) != 0) {
		fprintf(stderr, "sandgate: reaper: %s\n", err);
		return;
	}
	sg_prov_init(&prov);
	t0 = sg_now_ms();
	if (sg_sbx_reap(&env, only_tool, &deleted, &failed, &skipped) == -1)
		fprintf(stderr, "sandgate: reaper: %s\n",
		    sg_store_errmsg(env.store));
	else {
		sg_log_field(tool, sizeof(tool), only_tool != NULL ? only_tool :
		    "*");
		/* One logfmt line a sweep; skipped: another sweeps now. */
		fprintf(stderr, "event=reaper_sweep tool=%s deleted=%d "
		    "failed=%d skipped=%d ms=%lld\n", tool, deleted, failed,
		    skipped, (long long)(sg_now_ms() - t0));
	}
	sg_prov_free(&prov);
	sg_store_close(env.store);
}

void
sg_reaper_run(const struct sg_cfg *cfg)
{
	int i;

	prctl(PR_SET_NAME, "sg-reaper");
	sg_child_signals(on_stop);
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (sg_drop_privileges(cfg) == -1)
		_exit(3);
	sg_child_follow();
	while (!stopping) {
		sweep(cfg, NULL);
		for (i = 0; i < REAP_EVERY && !stopping; i++)
			poll(NULL, 0, 1000);
	}
	curl_global_cleanup();
	_exit(0);
}

void
sg_reaper_removed(const struct sg_cfg *old, const struct sg_cfg *cfg)
{
	size_t i;

	prctl(PR_SET_NAME, "sg-reaper");
	sg_child_signals(on_stop);
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (sg_drop_privileges(old) == -1)
		_exit(3);
	sg_child_follow();
	for (i = 0; i < old->ntools; i++)
		if (sg_cfg_tool(cfg, old->tools[i].name) == NULL)
			sweep(old, old->tools[i].name);
	curl_global_cleanup();
	_exit(0);
}
