/*
 * GET /v1/organization/overview, for admin keys: what the console's
 * first page shows. Now: this box's responders (the scoreboard), every
 * box's live sandboxes by tool and kind and the warm pool against its
 * target (the store); and the last hour of this box, sampled by the
 * reaper (core/state/stats.h). It reads shared memory and one store
 * count: cheap enough to poll.
 */
#include <stdio.h>
#include <string.h>

#include "org.h"
#include "../http/error.h"
#include "../state/sandbox.h"
#include "../../store/store.h"

struct counts {
	json_t	*sandboxes;	/* [{tool, kind, count}] */
	json_t	*warm;		/* {tool: count} */
	struct sg_st_alive alive;
};

static int
count_one(void *arg, const char *tool, int kind, int64_t n)
{
	struct counts *c = arg;
	const char *name = sg_sbx_kind_name(kind);

	json_array_append_new(c->sandboxes, json_pack("{s:s,s:s,s:I}", "tool",
	    tool, "kind", name != NULL ? name : "other", "count",
	    (json_int_t)n));
	if (kind == SG_SBX_WARM)
		json_object_set_new(c->warm, tool, json_integer(n));
	sg_st_alive_add(&c->alive, kind, n);
	return 0;
}

/* New reference: each tool with warm sandboxes wanted, and how many are. */
static json_t *
pool(const struct sg_cfg *cfg, const json_t *warm)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < cfg->ntools; i++)
		if (cfg->tools[i].warm > 0)
			json_array_append_new(a, json_pack("{s:s,s:I,s:i}",
			    "tool", cfg->tools[i].name, "warm", json_integer_value(
			    json_object_get(warm, cfg->tools[i].name)), "target",
			    cfg->tools[i].warm));
	return a;
}

void
sg_org_overview(const struct sg_org_env *env, struct sg_req *req,
    struct sg_out *out)
{
	struct counts c = { json_array(), json_object(), { 0, 0, 0 } };
	struct sg_st_load load = { 0, 0, 0 };
	struct sg_error err;
	json_t *body;

	if (env->load != NULL)
		env->load(env->load_arg, &load);
	if (sg_store_sbx_counts(env->store, count_one, &c) != SG_STORE_OK) {
		json_decref(c.sandboxes);
		json_decref(c.warm);
		sg_error_server(&err, 503, "The store does not answer; try "
		    "again shortly.");
		sg_http_error(out, req, &err);
		return;
	}
	body = json_pack("{s:s,s:I,s:s,s:I,s:{s:i,s:i,s:i,s:i},s:o,s:I,s:o,"
	    "s:o}", "object", "organization.overview", "now",
	    (json_int_t)(env->now_ms / 1000), "box", sg_store_box(env->store),
	    "started_at", (json_int_t)(sg_st_started_ms() / 1000),
	    "responders", "total", load.responders, "busy", load.busy,
	    "queued", load.queued, "workers_max", env->cfg->server.workers_max,
	    "sandboxes", c.sandboxes, "sessions", (json_int_t)c.alive.sessions,
	    "pool", pool(env->cfg, c.warm), "series", sg_st_series());
	json_decref(c.warm);
	if (body == NULL) {
		sg_error_server(&err, 500, "out of memory");
		sg_http_error(out, req, &err);
		return;
	}
	sg_http_json(out, req, 200, body);
	json_decref(body);
}
