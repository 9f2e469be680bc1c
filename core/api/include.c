/*
 * include[] as OpenAI reads it (include.h).
 */
#include <stdio.h>
#include <string.h>

#include "include.h"
#include "../../lib/util.h"

struct parse {
	struct sg_incl	*incl;
	const char	*bad;	/* the first value OpenAI does not know */
	char		 badbuf[64];
};

static int
is_type(const json_t *item, const char *type)
{
	const char *t = json_string_value(json_object_get(item, "type"));

	return t != NULL && strcmp(t, type) == 0;
}

/* sg_http_query_each's fn: include=... and include[]=... */
static int
take(void *arg, const char *name, const char *value)
{
	static const char *const known[] = { "file_search_call.results",
	    "web_search_call.results", "web_search_call.action.sources",
	    "message.input_image.image_url",
	    "computer_call_output.output.image_url",
	    "code_interpreter_call.outputs", "reasoning.encrypted_content",
	    "message.output_text.logprobs" };
	struct parse *p = arg;
	size_t i;

	if (strcmp(name, "include") != 0 && strcmp(name, "include[]") != 0)
		return 0;
	for (i = 0; value != NULL && i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(value, known[i]) == 0)
			break;
	if (value == NULL || i == sizeof(known) / sizeof(known[0])) {
		sg_copy(p->badbuf, sizeof(p->badbuf), value);
		p->bad = p->badbuf;
		return -1;
	}
	if (strcmp(value, "code_interpreter_call.outputs") == 0)
		p->incl->outputs = 1;
	return 0;
}

int
sg_incl_parse(const struct sg_req *req, struct sg_incl *incl,
    struct sg_error *err)
{
	struct parse p = { incl, NULL, "" };

	memset(incl, 0, sizeof(*incl));
	if (sg_http_query_each(req->uri, take, &p) == -1)
		return sg_error_invalid(err, "include", "invalid_value",
		    "Invalid value for 'include': '%s' is not one of the "
		    "supported values.", p.bad != NULL ? p.bad : "");
	return 0;
}

/* The text the upstream was given for a code call (up: its items), or
 * NULL. Borrowed. */
static const char *
logs_of(const json_t *up)
{
	const char *logs = NULL;
	const json_t *u;
	size_t i;

	json_array_foreach(up, i, u)
		if (is_type(u, "function_call_output"))
			logs = json_string_value(json_object_get(u, "output"));
	return logs;
}

json_t *
sg_incl_item(json_t *item, const json_t *up, const struct sg_incl *incl)
{
	const char *logs = NULL;
	json_t *c;

	if (!is_type(item, "code_interpreter_call"))
		return json_incref(item);
	if (incl->outputs && (!json_is_null(json_object_get(item, "outputs")) ||
	    (logs = logs_of(up)) == NULL))
		return json_incref(item);
	c = json_copy(item);
	json_object_set_new(c, "outputs", incl->outputs ? json_pack(
	    "[{s:s,s:s}]", "type", "logs", "logs", logs) : json_null());
	return c;
}
