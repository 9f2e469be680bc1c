#include <stdlib.h>
#include <string.h>

#include "rewrite.h"
#include "../../lib/jscan.h"
#include "../../lib/util.h"

#define TRACEBACK_LINES 12	/* the end of a traceback says the most */

/* Fields a client could send to forge the loop's own state. */
static const char *const control_fields[] = {
	"_agentic_loop_depth", "_agentic_loop_fingerprints",
	"_agentic_loop_api_surface", "max_agentic_loops",
	"_code_interpreter_interception_active",
	"_code_interpreter_interception_sandbox_key",
	"_code_interpreter_interception_converted_stream",
	"_code_interpreter_interception_session_scoped", "litellm_metadata",
	NULL,
};

int
sg_rw_wants_code(const json_t *body)
{
	const json_t *t;
	size_t i;

	json_array_foreach(json_object_get(body, "tools"), i, t) {
		const char *type = json_string_value(json_object_get(t, "type"));

		if (type != NULL && strcmp(type, "code_interpreter") == 0)
			return 1;
	}
	return 0;
}

static void
strip_object(json_t *o)
{
	const char *key;
	void *tmp;
	json_t *v;
	size_t i;

	if (!json_is_object(o))
		return;
	for (i = 0; control_fields[i] != NULL; i++)
		json_object_del(o, control_fields[i]);
	json_object_foreach_safe(o, tmp, key, v) {
		(void)v;
		if (key[0] == '_')
			json_object_del(o, key);
	}
}

void
sg_rw_strip(json_t *body)
{
	strip_object(body);
	strip_object(json_object_get(body, "extra_body"));
}

/* New reference: the function tool in the surface's shape. */
static json_t *
function_tool(enum sg_surface s, const char *name)
{
	json_t *params = json_pack("{s:s,s:{s:{s:s}},s:[s]}", "type", "object",
	    "properties", "code", "type", "string", "required", "code");

	if (s == SG_SURFACE_CHAT)
		return json_pack("{s:s,s:{s:s,s:s,s:o}}", "type", "function",
		    "function", "name", name, "description", SG_RW_DESCRIPTION,
		    "parameters", params);
	return json_pack("{s:s,s:s,s:s,s:o}", "type", "function", "name", name,
	    "description", SG_RW_DESCRIPTION, "parameters", params);
}

/* New reference: the forced choice of the function, in the surface's shape. */
static json_t *
forced_choice(enum sg_surface s, const char *name)
{
	if (s == SG_SURFACE_CHAT)
		return json_pack("{s:s,s:{s:s}}", "type", "function", "function",
		    "name", name);
	return json_pack("{s:s,s:s}", "type", "function", "name", name);
}

static int
streq(const json_t *v, const char *s)
{
	return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

/* Whether a tool_choice object (or allowed_tools entry) names the code
 * tool: by its native type, or by the function's name. */
static int
names_code(const json_t *c, const char *name)
{
	const json_t *fn = json_object_get(c, "function");

	return streq(json_object_get(c, "type"), "code_interpreter") ||
	    streq(json_object_get(c, "name"), "code_interpreter") ||
	    streq(json_object_get(c, "name"), name) ||
	    streq(json_object_get(fn, "name"), name);
}

/* allowed_tools: Responses {"type":"allowed_tools","tools":[…]}, Chat
 * {"type":"allowed_tools","allowed_tools":{"tools":[…]}}. */
static json_t *
allowed_list(json_t *choice)
{
	json_t *inner = json_object_get(choice, "allowed_tools");

	if (!streq(json_object_get(choice, "type"), "allowed_tools"))
		return NULL;
	return json_is_object(inner) ? json_object_get(inner, "tools") :
	    json_object_get(choice, "tools");
}

static int
rewrite_choice(json_t *body, enum sg_surface s, const char *name)
{
	json_t *choice = json_object_get(body, "tool_choice"), *list, *e;
	size_t i;
	int forced = 0;

	if (!json_is_object(choice))
		return 0;
	if ((list = allowed_list(choice)) != NULL) {
		json_array_foreach(list, i, e)
			if (json_is_object(e) && names_code(e, name))
				json_array_set_new(list, i, s == SG_SURFACE_CHAT ?
				    json_pack("{s:s,s:{s:s}}", "type", "function",
				    "function", "name", name) : json_pack("{s:s,s:s}",
				    "type", "function", "name", name));
		return 0;
	}
	if (names_code(choice, name)) {
		json_object_set_new(body, "tool_choice", forced_choice(s, name));
		forced = 1;
	}
	return forced;
}

static void
rewrite_tools(json_t *body, enum sg_surface s, const char *name)
{
	json_t *tools = json_object_get(body, "tools"), *t;
	size_t i;

	json_array_foreach(tools, i, t)
		if (streq(json_object_get(t, "type"), "code_interpreter"))
			json_array_set_new(tools, i, function_tool(s, name));
}

/* Take "code_interpreter_call.outputs" out of include (sandgate fills
 * outputs itself); 1 when it was there. */
static int
take_outputs_include(json_t *body)
{
	json_t *inc = json_object_get(body, "include");
	size_t i = 0;
	int found = 0;

	if (!json_is_array(inc))
		return 0;
	while (i < json_array_size(inc)) {
		if (streq(json_array_get(inc, i), "code_interpreter_call.outputs")) {
			json_array_remove(inc, i);
			found = 1;
		} else
			i++;
	}
	if (json_array_size(inc) == 0)
		json_object_del(body, "include");
	return found;
}

static void
add_include(json_t *body, const char *what)
{
	json_t *inc = json_object_get(body, "include"), *v;
	size_t i;

	if (!json_is_array(inc)) {
		inc = json_array();
		json_object_set_new(body, "include", inc);
	}
	json_array_foreach(inc, i, v)
		if (streq(v, what))
			return;
	json_array_append_new(inc, json_string(what));
}

int
sg_rw_first(json_t *body, enum sg_surface s, const char *name,
    struct sg_rw_info *info)
{
	json_t *opts, *store;

	memset(info, 0, sizeof(*info));
	if (!json_is_object(body))
		return -1;
	sg_rw_strip(body);
	rewrite_tools(body, s, name);
	info->forced = rewrite_choice(body, s, name);
	info->include_outputs = take_outputs_include(body);
	store = json_object_get(body, "store");
	info->store = !json_is_false(store);
	/* The loop always reads the upstream as a stream of events, in the
	 * call: a background response is sandgate's to run (a runner's),
	 * never the upstream's. */
	json_object_set_new(body, "stream", json_true());
	json_object_del(body, "background");
	if (s == SG_SURFACE_CHAT) {
		opts = json_object_get(body, "stream_options");
		if (!json_is_object(opts)) {
			opts = json_object();
			json_object_set_new(body, "stream_options", opts);
		}
		json_object_set_new(opts, "include_usage", json_true());
	} else if (!info->store)
		/* Without a stored response, reasoning can only be replayed
		 * on follow-ups in its encrypted form. */
		add_include(body, "reasoning.encrypted_content");
	return 0;
}

void
sg_rw_followup(json_t *body, enum sg_surface s, const char *name, int final)
{
	json_t *choice = json_object_get(body, "tool_choice");

	(void)s;
	if (final) {
		json_object_set_new(body, "tool_choice", json_string("none"));
		return;
	}
	if (streq(choice, "required"))
		json_object_set_new(body, "tool_choice", json_string("auto"));
	else if (json_is_object(choice) && allowed_list(choice) == NULL &&
	    names_code(choice, name))
		json_object_del(body, "tool_choice");
}

int
sg_rw_code_arg(const char *arguments, size_t len, char **code, char **problem)
{
	/* With a key twice, a reader could take either value: what the
	 * client was shown streaming (the first, sg_codedec) and what runs
	 * must never differ, so such arguments are refused. */
	json_t *args = sg_jparse(arguments != NULL ? arguments : "", len,
	    SG_JPARSE_NODUP);
	const json_t *c = json_object_get(args, "code");

	*code = *problem = NULL;
	/* A NUL would cut the program short: refuse it. */
	if (json_is_string(c) && memchr(json_string_value(c), '\0',
	    json_string_length(c)) == NULL) {
		*code = malloc(json_string_length(c) + 1);
		if (*code != NULL) {
			memcpy(*code, json_string_value(c), json_string_length(c));
			(*code)[json_string_length(c)] = '\0';
		}
	}
	json_decref(args);
	if (*code != NULL)
		return 0;
	*problem = strdup(SG_RW_INVALID_ARGS);
	return -1;
}

/*
 * Append what still fits: the text is cut at SG_RW_RESULT_MAX bytes in
 * the end, so nothing past one byte more is kept (a run's output may be
 * 10 MiB, and copying it all only to cut it would cost that much again).
 * 1 when full.
 */
static int
add_some(struct sg_buf *t, const char *s, size_t n)
{
	size_t room = t->len <= SG_RW_RESULT_MAX ? SG_RW_RESULT_MAX + 1 - t->len :
	    0;

	sg_buf_add(t, s, n < room ? n : room);
	return n >= room;
}

/* Append s without ANSI escape sequences (tracebacks are coloured) and
 * without NUL bytes (the result is a C string). A sequence ends at its
 * final byte (0x40-0x7e); a byte of a multi-byte character ends it too,
 * and is kept. */
static void
put_plain(struct sg_buf *t, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, start = 0;

	while (i < n) {
		if (u[i] != '\033' && u[i] != '\0') {
			i++;
			continue;
		}
		if (add_some(t, s + start, i - start))
			return;
		if (u[i++] == '\033') {
			if (i < n && u[i] == '[') {
				for (i++; i < n && u[i] >= 0x20 && u[i] < 0x40; i++)
					;
				if (i < n && u[i] >= 0x40 && u[i] <= 0x7e)
					i++;
			} else if (i < n && u[i] >= 0x40 && u[i] <= 0x7e)
				i++;
		}
		start = i;
	}
	add_some(t, s + start, n - start);
}

static void
put_section(struct sg_buf *t, const json_t *s)
{
	if (!json_is_string(s) || json_string_length(s) == 0)
		return;
	if (t->len > 0 && t->p[t->len - 1] != '\n')
		sg_buf_add(t, "\n", 1);
	put_plain(t, json_string_value(s), json_string_length(s));
}

/* The last lines of a traceback. */
static void
put_traceback(struct sg_buf *t, const char *tb)
{
	const char *p = tb + strlen(tb);
	int lines = 0;

	while (p > tb && lines <= TRACEBACK_LINES) {
		p--;
		if (*p == '\n' && p[1] != '\0')
			lines++;
	}
	if (lines > TRACEBACK_LINES)
		p++;
	if (t->len > 0 && t->p[t->len - 1] != '\n')
		sg_buf_add(t, "\n", 1);
	put_plain(t, p, strlen(p));
}

/* Valid UTF-8 first, then cut to SG_RW_RESULT_MAX bytes without
 * splitting a character. */
static char *
finish(struct sg_buf *t)
{
	static const char more[] = "\n[output truncated]";
	size_t n, flen, back;
	char *fixed;

	fixed = sg_utf8_fix(t->p != NULL ? t->p : "", t->len, &flen);
	free(t->p);
	if (fixed == NULL || flen <= SG_RW_RESULT_MAX)
		return fixed;
	n = SG_RW_RESULT_MAX - (sizeof(more) - 1);
	/* A UTF-8 character has at most three continuation bytes. */
	for (back = 0; back < 3 && ((unsigned char)fixed[n] & 0xc0) == 0x80;
	    back++)
		n--;
	memcpy(fixed + n, more, sizeof(more));
	return fixed;
}

char *
sg_rw_tool_result(const json_t *result)
{
	const json_t *err = json_object_get(result, "error"), *r;
	struct sg_buf t = { 0 };
	size_t i;

	put_section(&t, json_object_get(result, "stdout"));
	put_section(&t, json_object_get(result, "stderr"));
	json_array_foreach(json_object_get(result, "results"), i, r) {
		if (json_is_true(json_object_get(r, "is_main_result")))
			put_section(&t, json_object_get(r, "text"));
		if (json_object_get(r, "png") != NULL) {
			if (t.len > 0 && t.p[t.len - 1] != '\n')
				sg_buf_add(&t, "\n", 1);
			sg_buf_add(&t, "[image/png output]", 18);
		}
	}
	if (json_is_object(err)) {
		const char *name = json_string_value(json_object_get(err, "name"));
		const char *value = json_string_value(json_object_get(err, "value"));
		const char *tb = json_string_value(json_object_get(err,
		    "traceback"));

		if (t.len > 0 && t.p[t.len - 1] != '\n')
			sg_buf_add(&t, "\n", 1);
		put_plain(&t, name != NULL ? name : "Error", strlen(name != NULL ?
		    name : "Error"));
		sg_buf_add(&t, ": ", 2);
		put_plain(&t, value != NULL ? value : "", strlen(value != NULL ?
		    value : ""));
		if (tb != NULL && tb[0] != '\0')
			put_traceback(&t, tb);
	}
	if (t.len == 0)
		sg_buf_add(&t, "(no output)", 11);
	return finish(&t);
}
