/*
 * The MCP server's tools: their list (schemas, annotations) and one
 * call. A tool's own failure (its arguments, the sandbox, the provider,
 * a file not there, a key that may not use the tool) is a result with
 * isError and a text the model can act on; only a call that is not one
 * (no such tool, params not an object) or a store that failed is a
 * JSON-RPC error. run_code's output goes out as progress while it runs,
 * when the client asked for progress; the client cancelling, or
 * leaving, stops whatever a tool waits for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp_tool.h"
#include "../../lib/log.h"

#define PROGRESS_MS	500	/* at most one progress message per ... */
#define PROGRESS_TEXT	2048	/* ... of at most these bytes */

/* New reference: an annotations object. */
static json_t *
hints(const char *title, int ro, int destructive, int idempotent, int open)
{
	json_t *a = json_pack("{s:s,s:b,s:b}", "title", title,
	    "readOnlyHint", ro, "openWorldHint", open);

	if (!ro) {
		json_object_set_new(a, "destructiveHint", json_boolean(
		    destructive));
		json_object_set_new(a, "idempotentHint", json_boolean(
		    idempotent));
	}
	return a;
}

/* New reference: a tool of the list; props and required stolen. */
static json_t *
tool(const char *name, const char *title, const char *description,
    json_t *props, json_t *required, json_t *annotations)
{
	json_t *schema = json_pack("{s:s,s:o,s:b}", "type", "object",
	    "properties", props, "additionalProperties", 0);

	if (required != NULL)
		json_object_set_new(schema, "required", required);
	return json_pack("{s:s,s:s,s:s,s:o,s:o}", "name", name, "title", title,
	    "description", description, "inputSchema", schema, "annotations",
	    annotations);
}

static json_t *
str_prop(const char *description)
{
	return json_pack("{s:s,s:s}", "type", "string", "description",
	    description);
}

json_t *
sg_mcp_tools(const struct sg_cfg *cfg)
{
	const char *name = cfg->mcp.sandbox_tool != NULL ?
	    cfg->mcp.sandbox_tool : cfg->interception.sandbox_tool;
	const struct sg_tool *t = name != NULL ? sg_cfg_tool(cfg, name) : NULL;
	int internet = t != NULL && t->allow_internet_access;
	char run_desc[800];
	json_t *run, *tools;

	snprintf(run_desc, sizeof(run_desc), "Run Python code in this "
	    "session's sandbox, a Jupyter kernel: variables, imports and files "
	    "in %s persist across calls until reset. Returns stdout, stderr, "
	    "the last expression's value and any error with its traceback; "
	    "plots come back as images. A run may take at most %d seconds.%s",
	    SG_SBX_DATA_DIR, cfg->interception.exec_timeout, internet ? "" :
	    " The sandbox has no internet access.");
	run = tool("run_code", "Run Python", run_desc, json_pack("{s:o}",
	    "code", str_prop("The Python code to run.")), json_pack("[s]",
	    "code"), hints("Run Python", 0, 1, 0, internet));
	json_object_set_new(run, "outputSchema", sg_mcp_run_schema());
	tools = json_pack("[o,o,o,o,o,o]", run,
	    tool("write_file", "Write a file", "Write a file into the sandbox's "
	    SG_SBX_DATA_DIR " (parent directories are made; an existing file is "
	    "replaced).", json_pack("{s:o,s:o,s:{s:s,s:[ss],s:s,s:s}}",
	    "path", str_prop("Where: a path relative to " SG_SBX_DATA_DIR ", "
	    "or absolute under it."), "content", str_prop("The file's "
	    "content, as encoding says."), "encoding", "type", "string",
	    "enum", "utf-8", "base64", "default", "utf-8", "description",
	    "utf-8 (text, the default) or base64 (any bytes)."),
	    json_pack("[ss]", "path", "content"),
	    hints("Write a file", 0, 1, 1, 0)),
	    tool("read_file", "Read a file", "Read a file from the sandbox's "
	    SG_SBX_DATA_DIR ": text as text, images as images, other bytes as "
	    "base64 (at most 10 MiB).", json_pack("{s:o}", "path",
	    str_prop("A path relative to " SG_SBX_DATA_DIR ", or absolute "
	    "under it.")), json_pack("[s]", "path"),
	    hints("Read a file", 1, 0, 0, 0)),
	    tool("list_files", "List files", "List the files under the "
	    "sandbox's " SG_SBX_DATA_DIR " (or a directory in it), "
	    "recursively, with their sizes.", json_pack("{s:o}", "path",
	    str_prop("A directory relative to " SG_SBX_DATA_DIR ", or absolute "
	    "under it; default " SG_SBX_DATA_DIR ".")), NULL,
	    hints("List files", 1, 0, 0, 0)),
	    tool("upload_file", "Put an uploaded file into the sandbox",
	    "Copy a file uploaded with the Files API (its file-... id) into the "
	    "sandbox, by default as " SG_SBX_DATA_DIR "/<its filename>.",
	    json_pack("{s:o,s:o}", "file_id", str_prop("The file's id "
	    "(file-...)."), "path", str_prop("Where: a path relative to "
	    SG_SBX_DATA_DIR ", or absolute under it; default its filename.")),
	    json_pack("[s]", "file_id"),
	    hints("Put an uploaded file into the sandbox", 0, 1, 1, 0)),
	    tool("reset", "Reset the sandbox", "End this session's sandbox: "
	    "its variables and files are gone; a new one starts at the next "
	    "call.", json_object(), NULL,
	    hints("Reset the sandbox", 0, 1, 1, 0)));
	return tools;
}

/* What a run passes on as it goes: new output as progress. */
struct run {
	struct sg_mcp	*m;
	size_t		 out, err;	/* bytes of each already sent */
	double		 sent;		/* output bytes sent in all */
	int64_t		 last_ms;
};

/* Append the bytes of b past *from; *from moves to its end. */
static void
take_new(struct sg_buf *to, const struct sg_buf *b, size_t *from)
{
	if (b->len > *from)
		sg_buf_add(to, b->p + *from, b->len - *from);
	*from = b->len;
}

static void
run_progress(void *arg, const struct sg_exec *res)
{
	struct run *r = arg;
	struct sg_buf text = { 0 };
	const char *p;
	char *msg;
	size_t n, skip = 0, len;
	int64_t now = sg_now_ms();

	/* A run sent again (e2b's stalled one) starts its output anew. */
	if (res->out.len < r->out || res->err.len < r->err)
		r->out = r->err = 0;
	if ((res->out.len == r->out && res->err.len == r->err) ||
	    now - r->last_ms < PROGRESS_MS)
		return;
	take_new(&text, &res->out, &r->out);
	take_new(&text, &res->err, &r->err);
	if (text.p == NULL)
		return;
	r->sent += (double)text.len;
	r->last_ms = now;
	/* The newest of it, whole characters only. */
	if (text.len > PROGRESS_TEXT) {
		skip = text.len - PROGRESS_TEXT;
		while (skip < text.len && ((unsigned char)text.p[skip] & 0xc0) ==
		    0x80)
			skip++;
	}
	p = text.p + skip;
	n = text.len - skip;
	if ((msg = sg_utf8_fix(p, n, &len)) != NULL)
		sg_mcp_progress(r->m, r->sent, msg);
	free(msg);
	free(text.p);
}

static json_t *
run_code(struct sg_mcp *m, const json_t *args, struct sg_mcp_err *e)
{
	struct sg_prov *prov = m->env->prov;
	void (*prev)(void *, const struct sg_exec *) = prov->progress;
	void *prev_arg = prov->progress_arg;
	struct run r = { m, 0, 0, 0, 0 };
	struct sg_error err;
	const char *code;
	char id[48];
	json_t *bad, *run = NULL, *out;
	int lost, lost_any = 0, rc = -1, tries;

	if (sg_mcp_arg_string(args, "code", 1, SG_MCP_CODE_MAX, &code,
	    &bad) == -1)
		return bad;
	if (m->progress != NULL) {
		prov->progress = run_progress;
		prov->progress_arg = &r;
	}
	/* A sandbox that died is replaced once: the code runs again in
	 * the session's new one, and the result says its state is gone. */
	for (tries = 0; tries < 2; tries++) {
		if ((rc = sg_mcp_sandbox(m, id, &lost, &err)) == -1)
			break;
		lost_any |= lost;
		rc = sg_sbx_run(m->env, m->req->tenant, id, code, 0, 1, &run,
		    &err);
		if (rc != SG_SBX_GONE)
			break;
		lost_any = 1;
	}
	prov->progress = prev;
	prov->progress_arg = prev_arg;
	if (rc == SG_SBX_GONE)
		return sg_mcp_text(1, NULL, "The sandbox stopped answering, and "
		    "so did the new one that replaced it: nothing was run.");
	if (rc != 0)
		return sg_mcp_failed(m, "run_code", &err, e);
	out = sg_mcp_run_result(run, lost_any ? SG_MCP_LOST_NOTE : NULL);
	json_decref(run);
	if (out == NULL)
		sg_mcp_err(e, SG_MCP_INTERNAL, "Internal error");
	return out;
}

static json_t *
reset(struct sg_mcp *m, const json_t *args, struct sg_mcp_err *e)
{
	struct sg_error err;

	(void)args;
	if (sg_mcp_sandbox_end(m, &err) == -1)
		return sg_mcp_failed(m, "reset", &err, e);
	return sg_mcp_text(0, NULL, "The sandbox was reset: a new one starts "
	    "at the next call.");
}

static const struct {
	const char	*name;
	const char	*keys[3];	/* the arguments it takes */
	json_t		*(*fn)(struct sg_mcp *, const json_t *,
			    struct sg_mcp_err *);
} TOOLS[] = {
	{ "run_code", { "code" }, run_code },
	{ "write_file", { "path", "content", "encoding" }, sg_mcp_write_file },
	{ "read_file", { "path" }, sg_mcp_read_file },
	{ "list_files", { "path" }, sg_mcp_list_files },
	{ "upload_file", { "file_id", "path" }, sg_mcp_upload_file },
	{ "reset", { NULL }, reset },
};

/* An isError result naming an argument the tool does not take, or NULL. */
static json_t *
unknown_arg(const json_t *args, const char *const keys[3])
{
	const char *k;
	json_t *v;
	size_t i;

	json_object_foreach((json_t *)args, k, v) {
		for (i = 0; i < 3 && keys[i] != NULL; i++)
			if (strcmp(k, keys[i]) == 0)
				break;
		if (i == 3 || keys[i] == NULL)
			return sg_mcp_text(1, NULL, "Invalid arguments: this "
			    "tool takes no argument '%s'.", strlen(k) <= 100 ?
			    k : "(a name too long)");
	}
	return NULL;
}

/* The provider's stop hook while a tool runs: the one set before (the
 * route's), and the client cancelling the call or leaving. */
struct stop {
	struct sg_mcp	*m;
	int		(*prev)(void *);
	void		*prev_arg;
};

static int
stopped(void *arg)
{
	struct stop *s = arg;

	if (s->prev != NULL && s->prev(s->prev_arg))
		return 1;
	return sg_mcp_stopped(s->m);
}

int
sg_mcp_tool_call(struct sg_mcp *m, const json_t *params, json_t **result,
    struct sg_mcp_err *e)
{
	struct sg_prov *prov = m->env->prov;
	const json_t *args = json_object_get(params, "arguments");
	const char *name = json_string_value(json_object_get(params, "name"));
	struct stop s;
	json_t *empty = NULL;
	size_t i;

	*result = NULL;
	if (!json_is_object(params))
		return sg_mcp_err(e, SG_MCP_INVALID_PARAMS, "Invalid params: "
		    "expected an object with the tool's name and arguments.");
	if (name == NULL)
		return sg_mcp_err(e, SG_MCP_INVALID_PARAMS, "Invalid params: "
		    "'name' must be a string.");
	for (i = 0; i < sizeof(TOOLS) / sizeof(TOOLS[0]); i++)
		if (strcmp(TOOLS[i].name, name) == 0)
			break;
	if (i == sizeof(TOOLS) / sizeof(TOOLS[0]))
		return sg_mcp_err(e, SG_MCP_INVALID_PARAMS, "Unknown tool: "
		    "%s", strlen(name) <= 100 ? name : "(a name too long)");
	if (args == NULL || json_is_null(args))
		args = empty = json_object();
	else if (!json_is_object(args))
		return sg_mcp_err(e, SG_MCP_INVALID_PARAMS, "Invalid params: "
		    "'arguments' must be an object.");
	if ((*result = unknown_arg(args, TOOLS[i].keys)) == NULL) {
		s = (struct stop){ m, prov->stop, prov->stop_arg };
		prov->stop = stopped;
		prov->stop_arg = &s;
		*result = TOOLS[i].fn(m, args, e);
		prov->stop = s.prev;
		prov->stop_arg = s.prev_arg;
	}
	json_decref(empty);
	return *result != NULL ? 0 : -1;
}
