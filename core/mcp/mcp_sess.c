/*
 * What a request's handling needs of its session (mcp_int.h): its stream
 * (the SSE head, messages, progress, keepalives), whether its client
 * cancelled it, and the session's sandbox, a sticky session "mcp:<id>";
 * and the reaper's end of idle sessions. Nothing here answers a message:
 * that is mcp_http.c's, over mcp_rpc.c's methods.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp_int.h"
#include "../../lib/util.h"

#define SSE_HEAD	"Cache-Control: no-cache, no-transform\r\n" \
			"X-Accel-Buffering: no\r\n"
#define KEEPALIVE_MS	15000	/* a comment on a quiet stream */
#define CANCEL_POLL_MS	1000	/* the store asked for a cancel */
#define PRUNE_BATCH	100

int
sg_mcp_err(struct sg_mcp_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- the session's sandbox: a sticky session "mcp:<id>" ---------- */

static void
sess_key(const char *session, char *out, size_t sz)
{
	snprintf(out, sz, "mcp:%s", session);
}

struct peek {
	const char	*key;
	char		*id;
	int		 found;
};

static int
peek_one(void *arg, const struct sg_store_sess *s)
{
	struct peek *p = arg;

	if (strcmp(s->session_id, p->key) != 0 || s->sandbox_id[0] == '\0')
		return 0;
	sg_copy(p->id, 48, s->sandbox_id);
	p->found = 1;
	return -1;
}

/* Whether tenant's MCP session has a sandbox: 1 (id filled), 0, -1. */
static int
peek(struct sg_sbx_env *env, const char *tenant, const char *session,
    char id[48])
{
	char key[SG_STORE_MCP_ID_MAX + 8];
	struct peek p = { key, id, 0 };

	sess_key(session, key, sizeof(key));
	if (sg_store_sess_list(env->store, tenant, peek_one, &p) !=
	    SG_STORE_OK)
		return -1;
	return p.found;
}

int
sg_mcp_sandbox_peek(struct sg_mcp *m, char id[48])
{
	return peek(m->env, m->req->tenant, m->session, id);
}

int
sg_mcp_sandbox(struct sg_mcp *m, char id[48], int *lost, struct sg_error *err)
{
	char key[SG_STORE_MCP_ID_MAX + 8];

	sess_key(m->session, key, sizeof(key));
	return sg_sbx_session(m->env, m->req->tenant, m->env->cfg->mcp.sandbox_tool,
	    key, id, lost, err);
}

/* End tenant's session's sandbox, and its sticky session row. */
static int
end_sandbox(struct sg_sbx_env *env, const char *tenant, const char *session,
    struct sg_error *err)
{
	char key[SG_STORE_MCP_ID_MAX + 8], id[48];
	int rc;

	if ((rc = peek(env, tenant, session, id)) == -1)
		return sg_error_store(err, sg_store_errmsg(env->store));
	if (rc == 1 && sg_sbx_delete(env, tenant, id, err) == -1 &&
	    err->status != 404)
		return -1;
	sess_key(session, key, sizeof(key));
	sg_store_sess_remove(env->store, tenant, key);
	return 0;
}

void
sg_mcp_keep(struct sg_mcp *m)
{
	char key[SG_STORE_MCP_ID_MAX + 8], id[48];

	if (sg_mcp_sandbox_peek(m, id) != 1)
		return;
	sess_key(m->session, key, sizeof(key));
	sg_store_sess_touch(m->env->store, m->req->tenant, key);
	sg_store_sbx_touch(m->env->store, id, (int64_t)time(NULL) +
	    m->env->cfg->sessions.ttl + 60);
}

int
sg_mcp_sandbox_end(struct sg_mcp *m, struct sg_error *err)
{
	return end_sandbox(m->env, m->req->tenant, m->session, err);
}

struct pruning {
	struct sg_sbx_env	*env;
	int			 ended;
};

static int
prune_one(void *arg, const char *id, const char *tenant)
{
	struct pruning *p = arg;
	struct sg_error err;

	/* A sandbox whose delete fails stays the reaper's, as any kept. */
	end_sandbox(p->env, tenant, id, &err);
	p->ended++;
	return 0;
}

int
sg_mcp_prune(struct sg_sbx_env *env, int *ended)
{
	struct pruning p = { env, 0 };
	int removed = 0;

	*ended = 0;
	if (sg_store_mcp_prune(env->store, sg_wall_ms() -
	    (int64_t)env->cfg->sessions.ttl * 1000, PRUNE_BATCH, prune_one, &p,
	    &removed) != SG_STORE_OK)
		return -1;
	*ended = removed;
	return 0;
}

int
sg_mcp_begin(struct sg_mcp *m)
{
	if (m->streaming)
		return 0;
	m->streaming = 1;
	m->wrote_ms = sg_now_ms();
	if (sg_http_begin(m->out, m->req, 200, "text/event-stream", SSE_HEAD) ==
	    -1 || m->out->flush(m->out) == -1)
		return -1;
	return 0;
}

int
sg_mcp_send(struct sg_mcp *m, const json_t *msg)
{
	char *text = json_dumps(msg, JSON_COMPACT);
	int rc = -1;

	if (text != NULL && sg_mcp_begin(m) == 0 &&
	    m->out->write(m->out, "event: message\ndata: ", 21) == 0 &&
	    m->out->write(m->out, text, strlen(text)) == 0 &&
	    m->out->write(m->out, "\n\n", 2) == 0 && m->out->flush(m->out) == 0)
		rc = 0;
	m->wrote_ms = sg_now_ms();
	free(text);
	return rc;
}

void
sg_mcp_progress(struct sg_mcp *m, double progress, const char *message)
{
	json_t *n;

	if (m->progress == NULL || progress <= m->progressed)
		return;
	m->progressed = progress;
	n = json_pack("{s:s,s:s,s:{s:O,s:f}}", "jsonrpc", "2.0", "method",
	    "notifications/progress", "params", "progressToken", m->progress,
	    "progress", progress);
	if (n != NULL && message != NULL)
		json_object_set_new(json_object_get(n, "params"), "message",
		    json_string(message));
	if (n != NULL)
		sg_mcp_send(m, n);
	json_decref(n);
}

int
sg_mcp_stopped(struct sg_mcp *m)
{
	int64_t now = sg_now_ms();
	char version[16];
	int yes = 0;

	if (m->cancelled || m->ended || !m->out->alive(m->out))
		return 1;
	if (m->streaming && now - m->wrote_ms >= KEEPALIVE_MS) {
		m->wrote_ms = now;
		if (m->out->write(m->out, ": keepalive\n\n", 13) == -1 ||
		    m->out->flush(m->out) == -1)
			return 1;
	}
	if (m->id_text[0] == '\0' || now - m->polled_ms < CANCEL_POLL_MS)
		return 0;
	m->polled_ms = now;
	if (sg_store_mcp_cancelled(m->env->store, m->session, m->id_text,
	    &yes) == SG_STORE_OK && yes)
		m->cancelled = 1;
	else if (sg_store_mcp_touch(m->env->store, m->session, m->req->tenant,
	    sg_wall_ms() - (int64_t)m->env->cfg->sessions.ttl * 1000,
	    sg_wall_ms(), version) == SG_STORE_NOTFOUND)
		m->ended = 1;
	return m->cancelled || m->ended;
}

