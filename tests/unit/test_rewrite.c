/*
 * core/loop/rewrite: what the interception loop does to request bodies and to
 * a run's result. Bodies are compared whole with json_equal against
 * expected literals (single quotes stand for double quotes), on both
 * surfaces; tool results are checked for order, ANSI stripping, image
 * notes, the size bound and UTF-8 validity.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../core/loop/rewrite.h"

#define R	SG_SURFACE_RESPONSES
#define C	SG_SURFACE_CHAT
#define TN	"litellm_code_execution"

/* The function tool literals of litellm-behaviour.md §3.1, per surface. */
#define PARAMS	"{'type':'object','properties':{'code':{'type':'string'}}," \
		"'required':['code']}"
#define DESC	"Execute python code in a sandbox and return stdout."
#define RTOOL(n) "{'type':'function','name':'" n "','description':'" DESC \
		"','parameters':" PARAMS "}"
#define CTOOL(n) "{'type':'function','function':{'name':'" n \
		"','description':'" DESC "','parameters':" PARAMS "}}"
#define RFORCE(n) "{'type':'function','name':'" n "'}"
#define CFORCE(n) "{'type':'function','function':{'name':'" n "'}}"

#define CI	"{'type':'code_interpreter','container':{'type':'auto'}}"
#define RWEATHER "{'type':'function','name':'get_weather','description':" \
		"'Get weather','parameters':{'type':'object','properties':" \
		"{'city':{'type':'string'}},'required':['city']},'strict':true}"
#define CWEATHER "{'type':'function','function':{'name':'get_weather'," \
		"'description':'Get weather','parameters':{'type':'object'," \
		"'properties':{'city':{'type':'string'}}}}}"

/* ---- JSON helpers ---- */

/* Parse a literal whose single quotes stand for double quotes. */
static json_t *
tj_(const char *lit, const char *file, int line)
{
	char *s = strdup(lit), *p;
	json_error_t e;
	json_t *j;

	assert_non_null(s);
	for (p = s; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	j = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	if (j == NULL)
		fail_msg("%s:%d: bad test literal (%s): %s", file, line,
		    e.text, s);
	free(s);
	return j;
}
#define tj(lit) tj_((lit), __FILE__, __LINE__)

static void
assert_json_(const json_t *got, const char *want_lit, const char *file,
    int line)
{
	json_t *want = tj_(want_lit, file, line);
	char *g, *w;

	if (!json_equal(got, want)) {
		g = got != NULL ? json_dumps(got, JSON_SORT_KEYS |
		    JSON_ENCODE_ANY) : NULL;
		w = json_dumps(want, JSON_SORT_KEYS | JSON_ENCODE_ANY);
		fail_msg("%s:%d: JSON differs\n  got:  %s\n  want: %s", file,
		    line, g != NULL ? g : "(null)", w != NULL ? w : "(null)");
	}
	json_decref(want);
}
#define assert_json(got, want) assert_json_((got), (want), __FILE__, __LINE__)

/* sg_rw_first on a literal, asserting it returns 0. */
static json_t *
first_(const char *in, enum sg_surface s, const char *name,
    struct sg_rw_info *info, const char *file, int line)
{
	json_t *b = tj_(in, file, line);
	int rc;

	memset(info, 0, sizeof(*info));
	rc = sg_rw_first(b, s, name, info);
	if (rc != 0)
		fail_msg("%s:%d: sg_rw_first returned %d", file, line, rc);
	return b;
}
#define first(in, s, name, info) first_((in), (s), (name), (info), \
	__FILE__, __LINE__)

/* in through sg_rw_first must give exactly want. */
static void
check_first_(const char *in, enum sg_surface s, const char *name,
    const char *want, const char *file, int line)
{
	struct sg_rw_info info;
	json_t *b = first_(in, s, name, &info, file, line);

	assert_json_(b, want, file, line);
	json_decref(b);
}
#define check_first(in, s, name, want) check_first_((in), (s), (name), \
	(want), __FILE__, __LINE__)

/* in through sg_rw_followup must give exactly want. */
static void
check_followup_(const char *in, enum sg_surface s, const char *name,
    int final, const char *want, const char *file, int line)
{
	json_t *b = tj_(in, file, line);

	sg_rw_followup(b, s, name, final);
	assert_json_(b, want, file, line);
	json_decref(b);
}
#define check_followup(in, s, name, final, want) check_followup_((in), (s), \
	(name), (final), (want), __FILE__, __LINE__)

/* The tool_choice sg_rw_first gives for choice, and whether forced. */
static void
check_choice_(enum sg_surface s, const char *choice, const char *want,
    int forced, const char *file, int line)
{
	const char *tools = s == R ? "[" CI "," RWEATHER "]" :
	    "[" CI "," CWEATHER "]";
	const char *otools = s == R ? "[" RTOOL(TN) "," RWEATHER "]" :
	    "[" CTOOL(TN) "," CWEATHER "]";
	char in[2048], out[2048];
	struct sg_rw_info info;
	json_t *b;

	snprintf(in, sizeof(in), "{'model':'m','stream':true,%s"
	    "'tools':%s%s%s}",
	    s == C ? "'stream_options':{'include_usage':true}," : "",
	    tools, choice != NULL ? ",'tool_choice':" : "",
	    choice != NULL ? choice : "");
	snprintf(out, sizeof(out), "{'model':'m','stream':true,%s"
	    "'tools':%s%s%s}",
	    s == C ? "'stream_options':{'include_usage':true}," : "",
	    otools, want != NULL ? ",'tool_choice':" : "",
	    want != NULL ? want : "");
	b = first_(in, s, TN, &info, file, line);
	assert_json_(b, out, file, line);
	if (info.forced != forced)
		fail_msg("%s:%d: forced is %d for tool_choice %s, want %d",
		    file, line, info.forced, choice != NULL ? choice :
		    "(none)", forced);
	json_decref(b);
}
#define check_choice(s, choice, want, forced) check_choice_((s), (choice), \
	(want), (forced), __FILE__, __LINE__)

/* ---- UTF-8 and text helpers ---- */

/* Strict UTF-8: no overlongs, no surrogates, nothing past U+10FFFF. */
static int
valid_utf8(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n;
	unsigned int cp, need, i;

	while (p < e) {
		if (*p < 0x80) {
			p++;
			continue;
		}
		if (*p >= 0xc2 && *p <= 0xdf) {
			need = 1;
			cp = *p & 0x1f;
		} else if (*p >= 0xe0 && *p <= 0xef) {
			need = 2;
			cp = *p & 0x0f;
		} else if (*p >= 0xf0 && *p <= 0xf4) {
			need = 3;
			cp = *p & 0x07;
		} else
			return 0;
		if ((size_t)(e - p) <= need)
			return 0;
		for (i = 1; i <= need; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return 0;
		p += need + 1;
	}
	return 1;
}

static size_t
count_of(const char *hay, const char *needle)
{
	size_t n = 0, l = strlen(needle);
	const char *p = hay;

	while ((p = strstr(p, needle)) != NULL) {
		n++;
		p += l;
	}
	return n;
}

#define assert_has(hay, needle) do {					\
	const char *h_ = (hay), *n_ = (needle);				\
	if (h_ == NULL || strstr(h_, n_) == NULL)			\
		fail_msg("expected \"%s\" to contain \"%s\"",		\
		    h_ != NULL ? h_ : "(null)", n_);			\
} while (0)

#define assert_lacks(hay, needle) do {					\
	const char *h_ = (hay), *n_ = (needle);				\
	if (h_ != NULL && strstr(h_, n_) != NULL)			\
		fail_msg("expected \"%s\" not to contain \"%s\"", h_, n_); \
} while (0)

/* a occurs in hay, and before b. */
#define assert_before(hay, a, b) do {					\
	const char *h_ = (hay), *pa_ = strstr(h_, (a)),			\
	    *pb_ = strstr(h_, (b));					\
	if (pa_ == NULL || pb_ == NULL || pa_ >= pb_)			\
		fail_msg("expected \"%s\" before \"%s\" in \"%s\"",	\
		    (a), (b), h_);					\
} while (0)

/* sg_rw_tool_result of a literal, checked for the bound and UTF-8. */
static char *
result_of_(const char *lit, const char *file, int line)
{
	json_t *r = tj_(lit, file, line);
	char *t = sg_rw_tool_result(r);

	json_decref(r);
	if (t == NULL)
		fail_msg("%s:%d: sg_rw_tool_result returned NULL", file, line);
	if (strlen(t) > SG_RW_RESULT_MAX)
		fail_msg("%s:%d: %zu bytes", file, line, strlen(t));
	if (!valid_utf8(t, strlen(t)))
		fail_msg("%s:%d: not UTF-8: %s", file, line, t);
	return t;
}
#define result_of(lit) result_of_((lit), __FILE__, __LINE__)

/* A CodeExecutionResult with the given parts (results, error literals). */
#define RES(out, err, results, error) \
	"{'object':'code_execution','stdout':'" out "','stderr':'" err \
	"','results':" results ",'error':" error ",'execution_count':1}"

/* ================= sg_rw_wants_code ================= */

static int
wants(const char *lit)
{
	json_t *b = tj(lit);
	int rc = sg_rw_wants_code(b);

	json_decref(b);
	return rc;
}

static void
wants_code_single(void **state)
{
	(void)state;
	assert_true(wants("{'model':'m','tools':[" CI "]}"));
	assert_true(wants("{'tools':[{'type':'code_interpreter'}]}"));
}

static void
wants_code_among_others(void **state)
{
	(void)state;
	assert_true(wants("{'tools':[" RWEATHER ",{'type':'web_search'}," CI
	    "]}"));
	assert_true(wants("{'tools':[" CWEATHER "," CI "]}"));
}

static void
wants_code_function_tools_only(void **state)
{
	(void)state;
	assert_false(wants("{'tools':[" RWEATHER "]}"));
	assert_false(wants("{'tools':[" CWEATHER "]}"));
	assert_false(wants("{'tools':[]}"));
	/* A function merely named like the tool is not the built-in. */
	assert_false(wants("{'tools':[{'type':'function','function':"
	    "{'name':'code_interpreter'}}]}"));
	assert_false(wants("{'tools':[" RTOOL(TN) "]}"));
}

static void
wants_code_no_tools(void **state)
{
	(void)state;
	assert_false(wants("{'model':'m','input':'hi'}"));
	assert_false(wants("{'model':'m','tool_choice':"
	    "{'type':'code_interpreter'}}"));
	assert_false(wants("{'model':'m','include':"
	    "['code_interpreter_call.outputs']}"));
}

static void
wants_code_malformed(void **state)
{
	(void)state;
	assert_false(wants("{'tools':{'type':'code_interpreter'}}"));
	assert_false(wants("{'tools':'code_interpreter'}"));
	assert_false(wants("{'tools':['code_interpreter']}"));
	assert_false(wants("{'tools':[{'name':'code_interpreter'}]}"));
	assert_false(wants("[{'tools':[" CI "]}]"));
	assert_false(wants("{'extra_body':{'tools':[" CI "]}}"));
}

/* ================= sg_rw_first: tools ================= */

static void
tools_single_responses(void **state)
{
	(void)state;
	check_first("{'model':'m','input':'hi','stream':true,'tools':[" CI "]}",
	    R, TN,
	    "{'model':'m','input':'hi','stream':true,'tools':[" RTOOL(TN) "]}");
}

static void
tools_single_chat(void **state)
{
	(void)state;
	check_first("{'model':'m','messages':[{'role':'user','content':'hi'}],"
	    "'stream':true,'stream_options':{'include_usage':true},"
	    "'tools':[" CI "]}", C, TN,
	    "{'model':'m','messages':[{'role':'user','content':'hi'}],"
	    "'stream':true,'stream_options':{'include_usage':true},"
	    "'tools':[" CTOOL(TN) "]}");
}

static void
tools_mixed_order_responses(void **state)
{
	(void)state;
	check_first("{'stream':true,'tools':[" RWEATHER ",{'type':'web_search'},"
	    CI ",{'type':'mcp','server_label':'deepwiki','server_url':"
	    "'https://x.example/mcp','require_approval':'never'}]}", R, TN,
	    "{'stream':true,'tools':[" RWEATHER ",{'type':'web_search'},"
	    RTOOL(TN) ",{'type':'mcp','server_label':'deepwiki','server_url':"
	    "'https://x.example/mcp','require_approval':'never'}]}");
}

static void
tools_mixed_order_chat(void **state)
{
	(void)state;
	check_first("{'stream':true,'stream_options':{'include_usage':true},"
	    "'tools':[" CI "," CWEATHER ",{'type':'custom','custom':"
	    "{'name':'grammar'}}]}", C, TN,
	    "{'stream':true,'stream_options':{'include_usage':true},"
	    "'tools':[" CTOOL(TN) "," CWEATHER ",{'type':'custom','custom':"
	    "{'name':'grammar'}}]}");
}

static void
tools_several_responses(void **state)
{
	(void)state;
	check_first("{'stream':true,'tools':[" CI "," RWEATHER ","
	    "{'type':'code_interpreter','container':'cntr_abc'}]}", R, TN,
	    "{'stream':true,'tools':[" RTOOL(TN) "," RWEATHER "," RTOOL(TN)
	    "]}");
}

static void
tools_several_chat(void **state)
{
	(void)state;
	check_first("{'stream':true,'stream_options':{'include_usage':true},"
	    "'tools':[" CI "," CI "]}", C, TN,
	    "{'stream':true,'stream_options':{'include_usage':true},"
	    "'tools':[" CTOOL(TN) "," CTOOL(TN) "]}");
}

static void
tools_extra_keys_dropped_responses(void **state)
{
	(void)state;
	check_first("{'stream':true,'tools':[{'type':'code_interpreter',"
	    "'container':{'type':'auto','file_ids':['file-abc123'],"
	    "'memory_limit':'4g'},'allowed_callers':['direct'],"
	    "'file_ids':['file-x']}]}", R, TN,
	    "{'stream':true,'tools':[" RTOOL(TN) "]}");
	check_first("{'stream':true,'tools':[{'type':'code_interpreter',"
	    "'container':'cntr_682e0e7318108198aa783fd921ff305e'}]}", R, TN,
	    "{'stream':true,'tools':[" RTOOL(TN) "]}");
}

static void
tools_extra_keys_dropped_chat(void **state)
{
	(void)state;
	check_first("{'stream':true,'stream_options':{'include_usage':true},"
	    "'tools':[{'type':'code_interpreter','container':{'type':'auto',"
	    "'file_ids':['file-abc123']},'file_ids':['file-y']}]}", C, TN,
	    "{'stream':true,'stream_options':{'include_usage':true},"
	    "'tools':[" CTOOL(TN) "]}");
}

static void
tools_custom_name_responses(void **state)
{
	(void)state;
	check_first("{'stream':true,'tools':[" CI "],'tool_choice':"
	    "{'type':'code_interpreter'}}", R, "run_python",
	    "{'stream':true,'tools':[" RTOOL("run_python") "],'tool_choice':"
	    RFORCE("run_python") "}");
}

static void
tools_custom_name_chat(void **state)
{
	(void)state;
	check_first("{'stream':true,'stream_options':{'include_usage':true},"
	    "'tools':[" CI "],'tool_choice':{'type':'code_interpreter'}}", C,
	    "run_python",
	    "{'stream':true,'stream_options':{'include_usage':true},"
	    "'tools':[" CTOOL("run_python") "],'tool_choice':"
	    CFORCE("run_python") "}");
}

static void
tools_description_literal(void **state)
{
	(void)state;
	assert_string_equal(SG_RW_DESCRIPTION,
	    "Execute python code in a sandbox and return stdout.");
}

/* ================= sg_rw_first: tool_choice ================= */

static void
choice_type_ci_responses(void **state)
{
	(void)state;
	check_choice(R, "{'type':'code_interpreter'}", RFORCE(TN), 1);
}

static void
choice_type_ci_chat(void **state)
{
	(void)state;
	check_choice(C, "{'type':'code_interpreter'}", CFORCE(TN), 1);
}

static void
choice_name_ci_responses(void **state)
{
	(void)state;
	check_choice(R, "{'name':'code_interpreter'}", RFORCE(TN), 1);
	check_choice(R, "{'type':'function','name':'code_interpreter'}",
	    RFORCE(TN), 1);
}

static void
choice_name_ci_chat(void **state)
{
	(void)state;
	check_choice(C, "{'name':'code_interpreter'}", CFORCE(TN), 1);
	check_choice(C, "{'type':'function','name':'code_interpreter'}",
	    CFORCE(TN), 1);
}

static void
choice_function_tool_responses(void **state)
{
	(void)state;
	check_choice(R, RFORCE(TN), RFORCE(TN), 1);
	check_choice(R, CFORCE(TN), RFORCE(TN), 1);
	check_choice(R, "{'name':'" TN "'}", RFORCE(TN), 1);
}

static void
choice_function_tool_chat(void **state)
{
	(void)state;
	check_choice(C, CFORCE(TN), CFORCE(TN), 1);
	check_choice(C, RFORCE(TN), CFORCE(TN), 1);
	check_choice(C, "{'name':'" TN "'}", CFORCE(TN), 1);
}

static void
choice_strings_responses(void **state)
{
	(void)state;
	check_choice(R, "'auto'", "'auto'", 0);
	check_choice(R, "'none'", "'none'", 0);
	check_choice(R, "'required'", "'required'", 0);
}

static void
choice_strings_chat(void **state)
{
	(void)state;
	check_choice(C, "'auto'", "'auto'", 0);
	check_choice(C, "'none'", "'none'", 0);
	check_choice(C, "'required'", "'required'", 0);
}

static void
choice_unrelated_responses(void **state)
{
	(void)state;
	check_choice(R, "{'type':'function','name':'get_weather'}",
	    "{'type':'function','name':'get_weather'}", 0);
	check_choice(R, "{'type':'mcp','server_label':'deepwiki'}",
	    "{'type':'mcp','server_label':'deepwiki'}", 0);
	check_choice(R, "{'type':'web_search_preview'}",
	    "{'type':'web_search_preview'}", 0);
	check_choice(R, "{'type':'custom','name':'my_tool'}",
	    "{'type':'custom','name':'my_tool'}", 0);
}

static void
choice_unrelated_chat(void **state)
{
	(void)state;
	check_choice(C, "{'type':'function','function':{'name':'get_weather'}}",
	    "{'type':'function','function':{'name':'get_weather'}}", 0);
	check_choice(C, "{'type':'custom','custom':{'name':'grammar'}}",
	    "{'type':'custom','custom':{'name':'grammar'}}", 0);
}

static void
choice_absent_responses(void **state)
{
	(void)state;
	check_choice(R, NULL, NULL, 0);
}

static void
choice_absent_chat(void **state)
{
	(void)state;
	check_choice(C, NULL, NULL, 0);
}

static void
choice_allowed_tools_responses(void **state)
{
	(void)state;
	check_choice(R, "{'type':'allowed_tools','mode':'auto','tools':["
	    "{'type':'code_interpreter'},{'type':'function','name':"
	    "'get_weather'}]}",
	    "{'type':'allowed_tools','mode':'auto','tools':["
	    RFORCE(TN) ",{'type':'function','name':'get_weather'}]}", 0);
}

static void
choice_allowed_tools_required_responses(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'stream':true,'tools':[" CI "],'tool_choice':"
	    "{'type':'allowed_tools','mode':'required','tools':["
	    "{'type':'web_search'},{'type':'code_interpreter'}]}}", R, TN,
	    &info);
	assert_json(json_object_get(b, "tool_choice"),
	    "{'type':'allowed_tools','mode':'required','tools':["
	    "{'type':'web_search'}," RFORCE(TN) "]}");
	json_decref(b);
}

static void
choice_allowed_tools_chat(void **state)
{
	(void)state;
	check_choice(C, "{'type':'allowed_tools','allowed_tools':{'mode':'auto',"
	    "'tools':[{'type':'code_interpreter'},{'type':'function',"
	    "'function':{'name':'get_weather'}}]}}",
	    "{'type':'allowed_tools','allowed_tools':{'mode':'auto',"
	    "'tools':[" CFORCE(TN) ",{'type':'function','function':"
	    "{'name':'get_weather'}}]}}", 0);
}

static void
choice_allowed_tools_unrelated(void **state)
{
	(void)state;
	check_choice(R, "{'type':'allowed_tools','mode':'auto','tools':["
	    "{'type':'function','name':'get_weather'}]}",
	    "{'type':'allowed_tools','mode':'auto','tools':["
	    "{'type':'function','name':'get_weather'}]}", 0);
	check_choice(C, "{'type':'allowed_tools','allowed_tools':{'mode':"
	    "'required','tools':[{'type':'function','function':{'name':"
	    "'get_weather'}}]}}",
	    "{'type':'allowed_tools','allowed_tools':{'mode':"
	    "'required','tools':[{'type':'function','function':{'name':"
	    "'get_weather'}}]}}", 0);
}

/* ================= sg_rw_first / sg_rw_strip: control fields ========= */

#define CONTROL \
	"'_agentic_loop_depth':3,'_agentic_loop_fingerprints':['a','b']," \
	"'_agentic_loop_api_surface':'responses','max_agentic_loops':99," \
	"'_code_interpreter_interception_active':true," \
	"'_code_interpreter_interception_sandbox_key':'victim'," \
	"'_code_interpreter_interception_converted_stream':true," \
	"'_code_interpreter_interception_session_scoped':true," \
	"'litellm_metadata':{'_code_interpreter_interception_active':true," \
	"'session_id':'s'}"

static void
strip_every_control_field(void **state)
{
	json_t *b = tj("{'model':'m'," CONTROL ",'input':'hi',"
	    "'metadata':{'session_id':'s1','user':'u'},'temperature':0.2,"
	    "'top_p':1,'user':'x','tools':[" CI "]}");

	(void)state;
	sg_rw_strip(b);
	assert_json(b, "{'model':'m','input':'hi','metadata':"
	    "{'session_id':'s1','user':'u'},'temperature':0.2,'top_p':1,"
	    "'user':'x','tools':[" CI "]}");
	json_decref(b);
}

static void
strip_underscore_keys(void **state)
{
	json_t *b = tj("{'model':'m','_':1,'_x':'y','__proto__':{},"
	    "'_websearch_interception_active':true,'a_b':1,'x_':2,"
	    "'messages':[{'role':'user','content':'_hi'}]}");

	(void)state;
	sg_rw_strip(b);
	assert_json(b, "{'model':'m','a_b':1,'x_':2,"
	    "'messages':[{'role':'user','content':'_hi'}]}");
	json_decref(b);
}

static void
strip_extra_body(void **state)
{
	json_t *b = tj("{'model':'m','extra_body':{" CONTROL ",'_other':1,"
	    "'reasoning_effort':'low','seed':7},'seed':1}");

	(void)state;
	sg_rw_strip(b);
	assert_json(b, "{'model':'m','extra_body':{'reasoning_effort':'low',"
	    "'seed':7},'seed':1}");
	json_decref(b);
}

static void
strip_nothing_to_strip(void **state)
{
	static const char in[] = "{'model':'m','input':[{'role':'user',"
	    "'content':'hi'}],'metadata':{},'temperature':1,'extra_body':"
	    "{'x':1},'store':false}";
	json_t *b = tj(in);

	(void)state;
	sg_rw_strip(b);
	assert_json(b, in);
	json_decref(b);
}

static void
strip_not_an_object(void **state)
{
	json_t *b = tj("[{'_agentic_loop_depth':1}]");

	(void)state;
	sg_rw_strip(b);
	assert_json(b, "[{'_agentic_loop_depth':1}]");
	json_decref(b);
}

static void
first_strips_responses(void **state)
{
	(void)state;
	check_first("{'model':'m'," CONTROL ",'_x':1,'input':'hi','metadata':"
	    "{'a':'b'},'stream':true,'tools':[" CI "],'extra_body':{" CONTROL
	    ",'_y':2,'k':'v'}}", R, TN,
	    "{'model':'m','input':'hi','metadata':{'a':'b'},'stream':true,"
	    "'tools':[" RTOOL(TN) "],'extra_body':{'k':'v'}}");
}

static void
first_strips_chat(void **state)
{
	(void)state;
	check_first("{'model':'m'," CONTROL ",'_x':1,'messages':[],"
	    "'metadata':{'a':'b'},'temperature':0,'stream':true,"
	    "'stream_options':{'include_usage':true},'tools':[" CI "],"
	    "'extra_body':{" CONTROL ",'_y':2,'k':'v'}}", C, TN,
	    "{'model':'m','messages':[],'metadata':{'a':'b'},'temperature':0,"
	    "'stream':true,'stream_options':{'include_usage':true},"
	    "'tools':[" CTOOL(TN) "],'extra_body':{'k':'v'}}");
}

/* ================= sg_rw_first: include ================= */

static void
include_outputs_removed(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'stream':true,'tools':[" CI "],'include':["
	    "'file_search_call.results','code_interpreter_call.outputs',"
	    "'message.output_text.logprobs','web_search_call.results']}", R,
	    TN, &info);
	assert_json(b, "{'stream':true,'tools':[" RTOOL(TN) "],'include':["
	    "'file_search_call.results','message.output_text.logprobs',"
	    "'web_search_call.results']}");
	assert_int_equal(info.include_outputs, 1);
	json_decref(b);
}

static void
include_only_outputs_key_removed(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'stream':true,'tools':[" CI "],'include':["
	    "'code_interpreter_call.outputs']}", R, TN, &info);
	assert_json(b, "{'stream':true,'tools':[" RTOOL(TN) "]}");
	assert_int_equal(info.include_outputs, 1);
	json_decref(b);
}

static void
include_outputs_twice(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'stream':true,'tools':[" CI "],'include':["
	    "'code_interpreter_call.outputs','web_search_call.results',"
	    "'code_interpreter_call.outputs']}", R, TN, &info);
	assert_json(b, "{'stream':true,'tools':[" RTOOL(TN) "],'include':["
	    "'web_search_call.results']}");
	assert_int_equal(info.include_outputs, 1);
	json_decref(b);
}

static void
include_without_outputs(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'stream':true,'tools':[" CI "],'include':["
	    "'web_search_call.results','message.input_image.image_url']}", R,
	    TN, &info);
	assert_json(b, "{'stream':true,'tools':[" RTOOL(TN) "],'include':["
	    "'web_search_call.results','message.input_image.image_url']}");
	assert_int_equal(info.include_outputs, 0);
	json_decref(b);
	b = first("{'stream':true,'tools':[" CI "]}", R, TN, &info);
	assert_json(b, "{'stream':true,'tools':[" RTOOL(TN) "]}");
	assert_int_equal(info.include_outputs, 0);
	json_decref(b);
}

static void
include_empty_array(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'stream':true,'tools':[" CI "],'include':[]}", R, TN,
	    &info);
	assert_int_equal(info.include_outputs, 0);
	assert_false(json_array_size(json_object_get(b, "include")) > 0);
	json_decref(b);
}

/* ================= sg_rw_first: streaming, store ================= */

static void
stream_forced_responses(void **state)
{
	(void)state;
	check_first("{'model':'m','tools':[" CI "]}", R, TN,
	    "{'model':'m','stream':true,'tools':[" RTOOL(TN) "]}");
	check_first("{'model':'m','stream':false,'tools':[" CI "]}", R, TN,
	    "{'model':'m','stream':true,'tools':[" RTOOL(TN) "]}");
}

static void
stream_options_kept_responses(void **state)
{
	(void)state;
	/* Responses has no include_usage: none must be added. */
	check_first("{'model':'m','stream':false,'stream_options':"
	    "{'include_obfuscation':false},'tools':[" CI "]}", R, TN,
	    "{'model':'m','stream':true,'stream_options':"
	    "{'include_obfuscation':false},'tools':[" RTOOL(TN) "]}");
}

static void
stream_forced_chat(void **state)
{
	(void)state;
	check_first("{'model':'m','messages':[],'tools':[" CI "]}", C, TN,
	    "{'model':'m','messages':[],'stream':true,'stream_options':"
	    "{'include_usage':true},'tools':[" CTOOL(TN) "]}");
	check_first("{'model':'m','messages':[],'stream':false,"
	    "'tools':[" CI "]}", C, TN,
	    "{'model':'m','messages':[],'stream':true,'stream_options':"
	    "{'include_usage':true},'tools':[" CTOOL(TN) "]}");
}

static void
stream_options_merged_chat(void **state)
{
	(void)state;
	check_first("{'model':'m','messages':[],'stream':true,'stream_options':"
	    "{'include_obfuscation':false},'tools':[" CI "]}", C, TN,
	    "{'model':'m','messages':[],'stream':true,'stream_options':"
	    "{'include_obfuscation':false,'include_usage':true},"
	    "'tools':[" CTOOL(TN) "]}");
	check_first("{'model':'m','messages':[],'stream':true,'stream_options':"
	    "{'include_usage':false},'tools':[" CI "]}", C, TN,
	    "{'model':'m','messages':[],'stream':true,'stream_options':"
	    "{'include_usage':true},'tools':[" CTOOL(TN) "]}");
}

static void
store_false_adds_encrypted(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'store':false,'tools':[" CI "]}", R, TN, &info);
	assert_json(b, "{'store':false,'stream':true,'tools':[" RTOOL(TN) "],"
	    "'include':['reasoning.encrypted_content']}");
	assert_int_equal(info.store, 0);
	json_decref(b);
}

static void
store_false_not_duplicated(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'store':false,'tools':[" CI "],'include':["
	    "'reasoning.encrypted_content','web_search_call.results']}", R, TN,
	    &info);
	assert_json(b, "{'store':false,'stream':true,'tools':[" RTOOL(TN) "],"
	    "'include':['reasoning.encrypted_content',"
	    "'web_search_call.results']}");
	assert_int_equal(info.store, 0);
	json_decref(b);
}

static void
store_false_with_outputs(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'store':false,'tools':[" CI "],'include':["
	    "'code_interpreter_call.outputs']}", R, TN, &info);
	assert_json(b, "{'store':false,'stream':true,'tools':[" RTOOL(TN) "],"
	    "'include':['reasoning.encrypted_content']}");
	assert_int_equal(info.store, 0);
	assert_int_equal(info.include_outputs, 1);
	json_decref(b);
}

static void
store_false_keeps_client_order(void **state)
{
	struct sg_rw_info info;
	json_t *b, *inc;
	const char *want[] = { "web_search_call.results",
	    "file_search_call.results", "message.output_text.logprobs" };
	size_t i, k = 0, enc = 0;

	(void)state;
	b = first("{'store':false,'tools':[" CI "],'include':["
	    "'web_search_call.results','code_interpreter_call.outputs',"
	    "'file_search_call.results','message.output_text.logprobs']}", R,
	    TN, &info);
	inc = json_object_get(b, "include");
	assert_int_equal(json_array_size(inc), 4);
	for (i = 0; i < json_array_size(inc); i++) {
		const char *s = json_string_value(json_array_get(inc, i));

		assert_non_null(s);
		if (strcmp(s, "reasoning.encrypted_content") == 0)
			enc++;
		else {
			assert_true(k < 3);
			assert_string_equal(s, want[k]);
			k++;
		}
	}
	assert_int_equal(enc, 1);
	assert_int_equal(k, 3);
	assert_int_equal(info.include_outputs, 1);
	json_decref(b);
}

static void
store_true_or_absent(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'store':true,'tools':[" CI "]}", R, TN, &info);
	assert_json(b, "{'store':true,'stream':true,'tools':[" RTOOL(TN) "]}");
	assert_int_equal(info.store, 1);
	json_decref(b);
	b = first("{'tools':[" CI "]}", R, TN, &info);
	assert_json(b, "{'stream':true,'tools':[" RTOOL(TN) "]}");
	assert_int_equal(info.store, 1);
	json_decref(b);
}

static void
store_false_chat_no_include(void **state)
{
	(void)state;
	check_first("{'model':'m','messages':[],'store':false,"
	    "'tools':[" CI "]}", C, TN,
	    "{'model':'m','messages':[],'store':false,'stream':true,"
	    "'stream_options':{'include_usage':true},'tools':[" CTOOL(TN) "]}");
}

/* Every field of info is set, whatever it held before. */
static void
info_fully_set(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	memset(&info, 0x5a, sizeof(info));
	b = tj("{'tools':[" CI "],'tool_choice':'auto'}");
	assert_int_equal(sg_rw_first(b, R, TN, &info), 0);
	assert_int_equal(info.include_outputs, 0);
	assert_int_equal(info.forced, 0);
	assert_int_equal(info.store, 1);
	json_decref(b);
	memset(&info, 0x5a, sizeof(info));
	b = tj("{'tools':[" CI "],'tool_choice':{'type':'code_interpreter'},"
	    "'include':['code_interpreter_call.outputs'],'store':false}");
	assert_int_equal(sg_rw_first(b, R, TN, &info), 0);
	assert_int_equal(info.include_outputs, 1);
	assert_int_equal(info.forced, 1);
	assert_int_equal(info.store, 0);
	json_decref(b);
}

static void
first_not_an_object(void **state)
{
	static const char *bad[] = { "[{'tools':[" CI "]}]", "'body'", "null",
	    "42", "true" };
	struct sg_rw_info info;
	size_t i;
	json_t *b;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = tj(bad[i]);
		memset(&info, 0, sizeof(info));
		if (sg_rw_first(b, R, TN, &info) != -1)
			fail_msg("sg_rw_first accepted %s", bad[i]);
		assert_json(b, bad[i]);
		if (sg_rw_first(b, C, TN, &info) != -1)
			fail_msg("sg_rw_first (chat) accepted %s", bad[i]);
		assert_json(b, bad[i]);
		json_decref(b);
	}
}

/* ================= sg_rw_first: whole requests ================= */

static void
whole_request_responses(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'model':'gpt-5','instructions':'Be brief.','input':["
	    "{'role':'user','content':[{'type':'input_text','text':'plot it'}]}"
	    "],'tools':[" RWEATHER ",{'type':'code_interpreter','container':"
	    "{'type':'auto','file_ids':['file-1']}}],'tool_choice':"
	    "{'type':'code_interpreter'},'include':["
	    "'code_interpreter_call.outputs','web_search_call.action.sources']"
	    ",'metadata':{'session_id':'abc'},'stream':false,'store':true,"
	    "'previous_response_id':'resp_1','reasoning':{'effort':'low'},"
	    "'max_output_tokens':500,'parallel_tool_calls':true,"
	    "'_agentic_loop_depth':9,'max_agentic_loops':100,"
	    "'litellm_metadata':{},'extra_body':{'_code_interpreter_"
	    "interception_active':true,'service_tier':'flex'}}", R,
	    "sg_python", &info);
	assert_json(b, "{'model':'gpt-5','instructions':'Be brief.','input':["
	    "{'role':'user','content':[{'type':'input_text','text':'plot it'}]}"
	    "],'tools':[" RWEATHER "," RTOOL("sg_python") "],'tool_choice':"
	    RFORCE("sg_python") ",'include':['web_search_call.action.sources']"
	    ",'metadata':{'session_id':'abc'},'stream':true,'store':true,"
	    "'previous_response_id':'resp_1','reasoning':{'effort':'low'},"
	    "'max_output_tokens':500,'parallel_tool_calls':true,"
	    "'extra_body':{'service_tier':'flex'}}");
	assert_int_equal(info.include_outputs, 1);
	assert_int_equal(info.forced, 1);
	assert_int_equal(info.store, 1);
	json_decref(b);
}

static void
whole_request_chat(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'model':'gpt-4o-mini','messages':[{'role':'developer',"
	    "'content':'You are helpful.'},{'role':'user','content':'2+2?'}],"
	    "'tools':[" CWEATHER "," CI "],'tool_choice':"
	    "{'type':'function','function':{'name':'sg_python'}},"
	    "'parallel_tool_calls':false,'temperature':0.5,'n':1,"
	    "'metadata':{'k':'v'},'stream':true,'stream_options':"
	    "{'include_obfuscation':true},'_code_interpreter_interception_"
	    "sandbox_key':'other-user','_agentic_loop_fingerprints':[]}", C,
	    "sg_python", &info);
	assert_json(b, "{'model':'gpt-4o-mini','messages':[{'role':'developer',"
	    "'content':'You are helpful.'},{'role':'user','content':'2+2?'}],"
	    "'tools':[" CWEATHER "," CTOOL("sg_python") "],'tool_choice':"
	    CFORCE("sg_python") ",'parallel_tool_calls':false,"
	    "'temperature':0.5,'n':1,'metadata':{'k':'v'},'stream':true,"
	    "'stream_options':{'include_obfuscation':true,"
	    "'include_usage':true}}");
	assert_int_equal(info.include_outputs, 0);
	assert_int_equal(info.forced, 1);
	json_decref(b);
}

/* ================= sg_rw_followup ================= */

#define RBODY(choice) "{'model':'m','input':[{'type':'function_call_output'," \
	"'call_id':'c1','output':'4'}],'stream':true,'tools':[" RTOOL(TN) \
	"]" choice "}"
#define CBODY(choice) "{'model':'m','messages':[{'role':'tool'," \
	"'tool_call_id':'c1','content':'4'}],'stream':true,'stream_options'" \
	":{'include_usage':true},'tools':[" CTOOL(TN) "]" choice "}"

static void
followup_forced_dropped_responses(void **state)
{
	(void)state;
	check_followup(RBODY(",'tool_choice':" RFORCE(TN)), R, TN, 0,
	    RBODY(""));
}

static void
followup_forced_dropped_chat(void **state)
{
	(void)state;
	check_followup(CBODY(",'tool_choice':" CFORCE(TN)), C, TN, 0,
	    CBODY(""));
}

static void
followup_code_choice_dropped_responses(void **state)
{
	(void)state;
	check_followup(RBODY(",'tool_choice':{'type':'code_interpreter'}"), R,
	    TN, 0, RBODY(""));
}

static void
followup_code_choice_dropped_chat(void **state)
{
	(void)state;
	check_followup(CBODY(",'tool_choice':{'type':'code_interpreter'}"), C,
	    TN, 0, CBODY(""));
}

static void
followup_custom_name(void **state)
{
	(void)state;
	check_followup("{'tool_choice':" RFORCE("run_python") "}", R,
	    "run_python", 0, "{}");
	check_followup("{'tool_choice':" CFORCE("run_python") "}", C,
	    "run_python", 0, "{}");
	/* Another function's forced form stays. */
	check_followup("{'tool_choice':" RFORCE(TN) "}", R, "run_python", 0,
	    "{'tool_choice':" RFORCE(TN) "}");
}

static void
followup_required_to_auto_responses(void **state)
{
	(void)state;
	check_followup(RBODY(",'tool_choice':'required'"), R, TN, 0,
	    RBODY(",'tool_choice':'auto'"));
}

static void
followup_required_to_auto_chat(void **state)
{
	(void)state;
	check_followup(CBODY(",'tool_choice':'required'"), C, TN, 0,
	    CBODY(",'tool_choice':'auto'"));
}

static void
followup_others_stay_responses(void **state)
{
	(void)state;
	check_followup(RBODY(",'tool_choice':'auto'"), R, TN, 0,
	    RBODY(",'tool_choice':'auto'"));
	check_followup(RBODY(",'tool_choice':'none'"), R, TN, 0,
	    RBODY(",'tool_choice':'none'"));
	check_followup(RBODY(""), R, TN, 0, RBODY(""));
	check_followup(RBODY(",'tool_choice':{'type':'function','name':"
	    "'get_weather'}"), R, TN, 0,
	    RBODY(",'tool_choice':{'type':'function','name':'get_weather'}"));
	check_followup(RBODY(",'tool_choice':{'type':'allowed_tools','mode':"
	    "'auto','tools':[" RFORCE(TN) "]}"), R, TN, 0,
	    RBODY(",'tool_choice':{'type':'allowed_tools','mode':"
	    "'auto','tools':[" RFORCE(TN) "]}"));
}

static void
followup_others_stay_chat(void **state)
{
	(void)state;
	check_followup(CBODY(",'tool_choice':'auto'"), C, TN, 0,
	    CBODY(",'tool_choice':'auto'"));
	check_followup(CBODY(",'tool_choice':'none'"), C, TN, 0,
	    CBODY(",'tool_choice':'none'"));
	check_followup(CBODY(""), C, TN, 0, CBODY(""));
	check_followup(CBODY(",'tool_choice':" CFORCE("get_weather")), C, TN,
	    0, CBODY(",'tool_choice':" CFORCE("get_weather")));
}

static void
followup_final_responses(void **state)
{
	(void)state;
	check_followup(RBODY(",'tool_choice':" RFORCE(TN)), R, TN, 1,
	    RBODY(",'tool_choice':'none'"));
	check_followup(RBODY(",'tool_choice':'required'"), R, TN, 1,
	    RBODY(",'tool_choice':'none'"));
	check_followup(RBODY(",'tool_choice':'auto'"), R, TN, 1,
	    RBODY(",'tool_choice':'none'"));
	check_followup(RBODY(""), R, TN, 1, RBODY(",'tool_choice':'none'"));
	check_followup(RBODY(",'tool_choice':{'type':'function','name':"
	    "'get_weather'}"), R, TN, 1, RBODY(",'tool_choice':'none'"));
}

static void
followup_final_chat(void **state)
{
	(void)state;
	check_followup(CBODY(",'tool_choice':" CFORCE(TN)), C, TN, 1,
	    CBODY(",'tool_choice':'none'"));
	check_followup(CBODY(",'tool_choice':'required'"), C, TN, 1,
	    CBODY(",'tool_choice':'none'"));
	check_followup(CBODY(",'tool_choice':'auto'"), C, TN, 1,
	    CBODY(",'tool_choice':'none'"));
	check_followup(CBODY(""), C, TN, 1, CBODY(",'tool_choice':'none'"));
}

/* First call then follow-ups, as the loop chains them. */
static void
followup_after_first(void **state)
{
	struct sg_rw_info info;
	json_t *b;

	(void)state;
	b = first("{'tools':[" CI "],'tool_choice':{'type':'code_interpreter'}"
	    ",'input':'x'}", R, TN, &info);
	assert_int_equal(info.forced, 1);
	sg_rw_followup(b, R, TN, 0);
	assert_json(b, "{'tools':[" RTOOL(TN) "],'input':'x','stream':true}");
	sg_rw_followup(b, R, TN, 1);
	assert_json(b, "{'tools':[" RTOOL(TN) "],'input':'x','stream':true,"
	    "'tool_choice':'none'}");
	json_decref(b);
	b = first("{'tools':[" CI "],'tool_choice':{'type':'code_interpreter'}"
	    ",'messages':[]}", C, TN, &info);
	sg_rw_followup(b, C, TN, 0);
	assert_json(b, "{'tools':[" CTOOL(TN) "],'messages':[],'stream':true,"
	    "'stream_options':{'include_usage':true}}");
	json_decref(b);
}

/* ================= sg_rw_code_arg ================= */

static void
code_ok_(const char *args, size_t len, const char *want, const char *file,
    int line)
{
	char *code = NULL, *problem = NULL;
	int rc = sg_rw_code_arg(args, len, &code, &problem);

	if (rc != 0)
		fail_msg("%s:%d: rc %d for %.*s (problem: %s)", file, line, rc,
		    (int)len, args, problem != NULL ? problem : "(null)");
	if (code == NULL)
		fail_msg("%s:%d: no code", file, line);
	if (problem != NULL)
		fail_msg("%s:%d: problem set too: %s", file, line, problem);
	if (strcmp(code, want) != 0)
		fail_msg("%s:%d: code \"%s\", want \"%s\"", file, line, code,
		    want);
	free(code);
}
#define code_ok(args, want) code_ok_((args), strlen(args), (want), \
	__FILE__, __LINE__)

static void
code_bad_(const char *args, size_t len, const char *file, int line)
{
	char *code = NULL, *problem = NULL;
	int rc = sg_rw_code_arg(args, len, &code, &problem);

	if (rc != -1)
		fail_msg("%s:%d: rc %d for \"%.*s\" (code %s)", file, line, rc,
		    (int)len, args, code != NULL ? code : "(null)");
	if (code != NULL)
		fail_msg("%s:%d: code set too: %s", file, line, code);
	if (problem == NULL || strstr(problem, "code") == NULL)
		fail_msg("%s:%d: problem \"%s\" for \"%.*s\" does not mention "
		    "code", file, line, problem != NULL ? problem : "(null)",
		    (int)len, args);
	if (!valid_utf8(problem, strlen(problem)))
		fail_msg("%s:%d: problem not UTF-8", file, line);
	free(problem);
}
#define code_bad(args) code_bad_((args), strlen(args), __FILE__, __LINE__)

static void
code_arg_simple(void **state)
{
	(void)state;
	code_ok("{\"code\":\"print(2+2)\"}", "print(2+2)");
	code_ok("{\"code\": \"x = 1\"}", "x = 1");
}

static void
code_arg_escapes_and_unicode(void **state)
{
	(void)state;
	code_ok("{\"code\":\"import math\\nprint(\\\"caf\\u00e9\\\")\\n"
	    "\\tx = '\\\\n'\"}",
	    "import math\nprint(\"caf\xc3\xa9\")\n\tx = '\\n'");
	code_ok("{\"code\":\"print('\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80')\"}",
	    "print('\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80')");
	code_ok("{\"code\":\"s = '\\ud83d\\ude00'\"}",
	    "s = '\xf0\x9f\x98\x80'");
	code_ok("{\"code\":\"a\\r\\nb\\/c\"}", "a\r\nb/c");
}

static void
code_arg_extra_keys(void **state)
{
	(void)state;
	code_ok("{\"language\":\"python\",\"code\":\"1+1\",\"timeout\":5}",
	    "1+1");
	code_ok("  \n{\"code\":\"y\"}\n  ", "y");
}

static void
code_arg_empty_code(void **state)
{
	(void)state;
	code_ok("{\"code\":\"\"}", "");
}

/* Only len bytes are read: the buffer need not end at the object. */
static void
code_arg_len_respected(void **state)
{
	static const char buf[] = "{\"code\":\"print(1)\"}GARBAGE{\"x";
	char nonul[19];

	(void)state;
	code_ok_(buf, 19, "print(1)", __FILE__, __LINE__);
	memcpy(nonul, buf, sizeof(nonul));	/* no NUL anywhere */
	code_ok_(nonul, sizeof(nonul), "print(1)", __FILE__, __LINE__);
	/* A prefix of a valid object is not one. */
	code_bad_(buf, 12, __FILE__, __LINE__);
}

static void
code_arg_not_json(void **state)
{
	(void)state;
	code_bad("print(2+2)");
	code_bad("{code: 'print(1)'}");
	code_bad("{\"code\":\"print(1)\"");
	code_bad("{\"code\":\"print(1)\"} trailing");
	code_bad("{\"code\":\"x\"}{\"code\":\"y\"}");
}

static void
code_arg_not_object(void **state)
{
	(void)state;
	code_bad("[\"print(1)\"]");
	code_bad("[{\"code\":\"print(1)\"}]");
	code_bad("\"print(1)\"");
	code_bad("42");
	code_bad("null");
}

static void
code_arg_missing(void **state)
{
	(void)state;
	code_bad("{}");
	code_bad("{\"source\":\"print(1)\"}");
	code_bad("{\"input\":{\"code\":\"print(1)\"}}");
}

static void
code_arg_not_string(void **state)
{
	(void)state;
	code_bad("{\"code\":42}");
	code_bad("{\"code\":null}");
	code_bad("{\"code\":[\"print(1)\"]}");
	code_bad("{\"code\":{\"text\":\"print(1)\"}}");
	code_bad("{\"code\":true}");
}

static void
code_arg_empty_input(void **state)
{
	(void)state;
	code_bad("");
	code_bad("   ");
	code_bad_("{\"code\":\"x\"}", 0, __FILE__, __LINE__);
}

/* *code is a C string: code with a NUL in it cannot be given exactly, and
 * running only the part before the NUL would run another program. */
/* A key given twice: a reader could take either value, and the client is
 * shown the first while streaming. Refused, as the decoder refuses it. */
static void
code_arg_repeated_key(void **state)
{
	(void)state;
	code_bad("{\"code\":\"print('shown')\",\"code\":\"print('ran')\"}");
	code_bad("{\"code\":\"a\",\"c\\u006fde\":\"b\"}");
	code_bad("{\"code\":\"a\",\"n\":1,\"n\":2}");
	code_bad("{\"n\":{\"x\":1,\"x\":2},\"code\":\"a\"}");
	code_ok("{\"code\":\"a\",\"n\":{\"code\":\"b\"}}", "a");
	code_ok("{\"code\":\"a\",\"Code\":\"b\"}", "a");
}

static void
code_arg_nul_in_code(void **state)
{
	static const char args[] = "{\"code\":\"print(1)\\u0000import os\"}";
	char *code = NULL, *problem = NULL, got[64] = "";
	int rc, had_code, had_problem;

	(void)state;
	rc = sg_rw_code_arg(args, strlen(args), &code, &problem);
	had_code = code != NULL;
	had_problem = problem != NULL;
	if (had_code)
		snprintf(got, sizeof(got), "%s", code);
	free(code);
	free(problem);
	if (rc == 0 || had_code)
		fail_msg("code with a NUL accepted (rc %d), truncated to \"%s\"",
		    rc, got);
	assert_true(had_problem);
}

/* ================= sg_rw_tool_result ================= */

static void
result_stdout_only(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("hello\\nworld\\n", "", "[]", "null"));
	assert_has(t, "hello\nworld");
	assert_lacks(t, "(no output)");
	free(t);
}

static void
result_nothing(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("", "", "[]", "null"));
	assert_string_equal(t, "(no output)");
	free(t);
	t = result_of("{'object':'code_execution','stdout':'','stderr':'',"
	    "'results':[],'error':null,'execution_count':null}");
	assert_string_equal(t, "(no output)");
	free(t);
}

static void
result_nothing_sparse(void **state)
{
	char *t;

	(void)state;
	t = result_of("{'object':'code_execution'}");
	assert_string_equal(t, "(no output)");
	free(t);
}

static void
result_stderr_only(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("", "warn: careful\\n", "[]", "null"));
	assert_has(t, "warn: careful");
	assert_lacks(t, "(no output)");
	free(t);
}

static void
result_order(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("OUT-1\\n", "ERR-2\\n",
	    "[{'text':'MAIN-3','is_main_result':true,'extra':{}}]",
	    "{'name':'ValueError','value':'bad-4','traceback':"
	    "'Traceback (most recent call last):\\n  Cell In[1], line 9\\n"
	    "ValueError: bad-4'}"));
	assert_before(t, "OUT-1", "ERR-2");
	assert_before(t, "ERR-2", "MAIN-3");
	assert_before(t, "MAIN-3", "ValueError: bad-4");
	assert_lacks(t, "(no output)");
	free(t);
}

static void
result_main_value(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("", "", "[{'text':'[1, 2]','json':{'a':[1,2]},"
	    "'extra':{},'is_main_result':true}]", "null"));
	assert_has(t, "[1, 2]");
	assert_lacks(t, "(no output)");
	free(t);
	t = result_of(RES("printed\\n", "", "[{'text':'42',"
	    "'is_main_result':true}]", "null"));
	assert_before(t, "printed", "42");
	free(t);
}

static void
result_error_name_value(void **state)
{
	char *t;

	(void)state;
	/* The traceback's last line is not "Name: value" here. */
	t = result_of(RES("", "", "[]", "{'name':'CustomErr','value':'oops',"
	    "'traceback':'first frame\\nmiddle frame\\nat frame_last'}"));
	assert_has(t, "CustomErr: oops");
	assert_has(t, "at frame_last");
	assert_lacks(t, "(no output)");
	free(t);
}

static void
result_error_no_traceback(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("x\\n", "", "[]", "{'name':'RUNTIME_ERROR',"
	    "'value':'session is busy','traceback':''}"));
	assert_has(t, "RUNTIME_ERROR: session is busy");
	assert_before(t, "x", "RUNTIME_ERROR: session is busy");
	free(t);
}

static void
result_long_traceback_tail(void **state)
{
	char tb[8192], lit[9000];
	size_t n = 0;
	char *t;
	int i;

	(void)state;
	n += (size_t)snprintf(tb + n, sizeof(tb) - n,
	    "Traceback (most recent call last):");
	for (i = 0; i < 200; i++)
		n += (size_t)snprintf(tb + n, sizeof(tb) - n,
		    "\\n  File f%d.py, line %d", i, i);
	snprintf(tb + n, sizeof(tb) - n, "\\nRecursionError: too deep");
	snprintf(lit, sizeof(lit), RES("", "", "[]", "{'name':'RecursionError',"
	    "'value':'too deep','traceback':'%s'}"), tb);
	t = result_of(lit);
	assert_has(t, "RecursionError: too deep");
	assert_has(t, "File f199.py, line 199");
	free(t);
}

static void
result_ansi_traceback(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("before\\n", "", "[]",
	    "{'name':'ZeroDivisionError','value':'division by zero',"
	    "'traceback':'\\u001b[0;31m------------------\\u001b[0m\\n"
	    "\\u001b[0;31mZeroDivisionError\\u001b[0m  Traceback (most recent "
	    "call last)\\n\\u001b[1;32m----> 1\\u001b[0m \\u001b[38;5;241m1"
	    "\\u001b[39m/\\u001b[38;5;241m0\\u001b[39m\\n\\u001b[0;31m"
	    "ZeroDivisionError\\u001b[0m: division by zero'}"));
	assert_lacks(t, "\x1b");
	assert_lacks(t, "[0;31m");
	assert_lacks(t, "[0m");
	assert_lacks(t, "[38;5;241m");
	assert_has(t, "ZeroDivisionError: division by zero");
	free(t);
}

static void
result_ansi_streams(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("\\u001b[1mbold\\u001b[0m plain\\n",
	    "\\u001b[33mwarn\\u001b[0m\\n", "[]", "null"));
	assert_lacks(t, "\x1b");
	assert_has(t, "bold plain");
	assert_has(t, "warn");
	assert_lacks(t, "[33m");
	free(t);
}

static void
result_png_noted(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("", "", "[{'text':'<Figure size 640x480 with 1 Axes>',"
	    "'png':'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ','extra':{},"
	    "'is_main_result':false}]", "null"));
	assert_int_equal(count_of(t, "[image/png output]"), 1);
	assert_lacks(t, "iVBORw0KGgo");
	assert_lacks(t, "(no output)");
	free(t);
}

static void
result_each_png_noted(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("plots\\n", "", "[{'png':'iVBORw0KGgoAAAA1',"
	    "'is_main_result':false},{'text':'x','is_main_result':false},"
	    "{'png':'iVBORw0KGgoAAAA2','is_main_result':false},"
	    "{'png':'iVBORw0KGgoAAAA3','text':'<Figure>',"
	    "'is_main_result':true}]", "null"));
	assert_int_equal(count_of(t, "[image/png output]"), 3);
	assert_lacks(t, "iVBORw0KGgo");
	assert_before(t, "plots", "[image/png output]");
	free(t);
}

/* Only the main result's text is the value; a displayed figure is only
 * an image note. */
static void
result_display_text_not_value(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("shown\\n", "", "[{'text':'<Figure size 640x480 with "
	    "1 Axes>','png':'iVBORw0KGgoAAAA1','is_main_result':false},"
	    "{'text':'7','is_main_result':true}]", "null"));
	assert_lacks(t, "<Figure size");
	assert_has(t, "[image/png output]");
	assert_before(t, "shown", "7");
	free(t);
}

static void
result_non_png_not_noted(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("ok\\n", "", "[{'text':'1','html':'<b>1</b>',"
	    "'is_main_result':true}]", "null"));
	assert_lacks(t, "[image/png output]");
	free(t);
}

/* stdout (or stderr) of n bytes of unit repeated, after pre. */
static char *
big_result(const char *which, const char *pre, const char *unit, size_t n)
{
	size_t ul = strlen(unit), pl = strlen(pre), i;
	char *s = malloc(pl + n + ul + 1), *t;
	json_t *r;

	assert_non_null(s);
	memcpy(s, pre, pl);
	for (i = pl; i < pl + n; i += ul)
		memcpy(s + i, unit, ul);
	s[i] = '\0';
	r = tj("{'object':'code_execution','stdout':'','stderr':'',"
	    "'results':[],'error':null,'execution_count':1}");
	assert_int_equal(json_object_set_new(r, which, json_string(s)), 0);
	free(s);
	t = sg_rw_tool_result(r);
	json_decref(r);
	assert_non_null(t);
	return t;
}

static void
result_huge_stdout(void **state)
{
	char *t;

	(void)state;
	t = big_result("stdout", "", "xxxxxxxxx\n", 1 << 20);
	if (strlen(t) > SG_RW_RESULT_MAX)
		fail_msg("%zu bytes for 1 MB of stdout", strlen(t));
	assert_true(valid_utf8(t, strlen(t)));
	assert_has(t, "xxxxxxxxx\nxxxxxxxxx");
	free(t);
}

static void
result_huge_stderr(void **state)
{
	char *t;

	(void)state;
	t = big_result("stderr", "", "warning! ", 1 << 20);
	if (strlen(t) > SG_RW_RESULT_MAX)
		fail_msg("%zu bytes for 1 MB of stderr", strlen(t));
	assert_true(valid_utf8(t, strlen(t)));
	assert_has(t, "warning! warning!");
	free(t);
}

static void
result_huge_everything(void **state)
{
	char *s = malloc(300001), *t;
	json_t *r;

	(void)state;
	assert_non_null(s);
	memset(s, 'a', 300000);
	s[300000] = '\0';
	r = json_pack("{s:s,s:s,s:s,s:[{s:s,s:b}],s:{s:s,s:s,s:s},s:i}",
	    "object", "code_execution", "stdout", s, "stderr", s,
	    "results", "text", s, "is_main_result", 1,
	    "error", "name", "E", "value", s, "traceback", s,
	    "execution_count", 1);
	free(s);
	assert_non_null(r);
	t = sg_rw_tool_result(r);
	json_decref(r);
	assert_non_null(t);
	if (strlen(t) > SG_RW_RESULT_MAX)
		fail_msg("%zu bytes", strlen(t));
	assert_true(valid_utf8(t, strlen(t)));
	free(t);
}

/* Only what fits is copied, and the text is the same as if all were:
 * the first bytes, then the mark. */
static void
result_cut_exactly(void **state)
{
	static const char more[] = "\n[output truncated]";
	char *t;
	size_t i, keep = SG_RW_RESULT_MAX - (sizeof(more) - 1);

	(void)state;
	t = big_result("stdout", "", "0123456789", 8 << 20);
	assert_int_equal(strlen(t), SG_RW_RESULT_MAX);
	for (i = 0; i < keep; i++)
		if (t[i] != (char)('0' + i % 10))
			fail_msg("byte %zu is '%c'", i, t[i]);
	assert_string_equal(t + keep, more);
	free(t);
}

/* Escape sequences take no room: text after a megabyte of them is kept. */
static void
result_escapes_take_no_room(void **state)
{
	static const char esc[] = "\x1b[31m";
	size_t n = (1 << 20) / (sizeof(esc) - 1), i;
	char *s = malloc(n * (sizeof(esc) - 1) + 6), *t;
	json_t *r;

	(void)state;
	assert_non_null(s);
	for (i = 0; i < n; i++)
		memcpy(s + i * (sizeof(esc) - 1), esc, sizeof(esc) - 1);
	memcpy(s + n * (sizeof(esc) - 1), "tail\n", 6);
	r = json_pack("{s:s,s:s,s:s,s:[],s:n,s:i}", "object", "code_execution",
	    "stdout", s, "stderr", "", "results", "error", "execution_count", 1);
	free(s);
	assert_non_null(r);
	t = sg_rw_tool_result(r);
	json_decref(r);
	assert_string_equal(t, "tail\n");
	free(t);
}

/* Multi-byte characters of each width, shifted so any cut point falls
 * inside one of them for some shift. */
static void
result_cut_inside_character(void **state)
{
	static const char *units[] = { "\xc3\xa9", "\xe2\x82\xac",
	    "\xf0\x9f\x98\x80", "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" };
	static const char *pres[] = { "", "a", "ab", "abc" };
	static const char *where[] = { "stdout", "stderr" };
	size_t u, p, w;
	char *t;

	(void)state;
	for (w = 0; w < 2; w++)
		for (u = 0; u < 4; u++)
			for (p = 0; p < 4; p++) {
				t = big_result(where[w], pres[p], units[u],
				    SG_RW_RESULT_MAX + 4096);
				if (strlen(t) > SG_RW_RESULT_MAX)
					fail_msg("%s unit %zu shift %zu: %zu "
					    "bytes", where[w], u, p, strlen(t));
				if (!valid_utf8(t, strlen(t)))
					fail_msg("%s unit %zu shift %zu: cut "
					    "inside a character", where[w], u,
					    p);
				free(t);
			}
}

/* A lone ESC (not an escape sequence) before multi-byte characters, over
 * 1 MB: still at most SG_RW_RESULT_MAX bytes of valid UTF-8. */
static void
result_lone_esc_before_multibyte(void **state)
{
	static const char *units[] = { "a\x1b\xc3\xa9", "ab\x1b[\xe2\x82\xac" };
	static const char *where[] = { "stdout", "stderr" };
	size_t i, n;
	char *t;
	int ok;

	(void)state;
	for (i = 0; i < 2; i++) {
		t = big_result(where[i], "", units[i], 1 << 20);
		n = strlen(t);
		ok = valid_utf8(t, n);
		free(t);
		if (n > SG_RW_RESULT_MAX || !ok)
			fail_msg("%zu bytes (%s UTF-8) for 1 MB of %s with a "
			    "lone ESC before a multi-byte character", n,
			    ok ? "valid" : "invalid", where[i]);
	}
}

/* The text is a C string: a NUL written by the program must not hide
 * what follows it (stderr, the error) from the model. */
static void
result_nul_in_stdout(void **state)
{
	char *t;
	int ok;

	(void)state;
	t = result_of(RES("before\\u0000after\\n", "warned\\n", "[]",
	    "{'name':'ValueError','value':'late','traceback':''}"));
	ok = strstr(t, "before") != NULL && strstr(t, "warned") != NULL &&
	    strstr(t, "ValueError: late") != NULL;
	if (!ok) {
		char got[256];

		snprintf(got, sizeof(got), "%s", t);
		free(t);
		fail_msg("stderr and the error hidden behind a NUL: \"%s\"",
		    got);
	}
	free(t);
}

/* Output well under the bound comes through whole. */
static void
result_moderate_not_cut(void **state)
{
	char *s = malloc(10001), *t;
	size_t i;
	json_t *r;

	(void)state;
	assert_non_null(s);
	for (i = 0; i < 10000; i++)
		s[i] = i % 100 == 99 ? '\n' : (char)('a' + i % 26);
	s[10000] = '\0';
	r = tj(RES("", "", "[]", "null"));
	json_object_set_new(r, "stdout", json_string(s));
	t = sg_rw_tool_result(r);
	json_decref(r);
	assert_non_null(t);
	if (strstr(t, s) == NULL)
		fail_msg("10000 bytes of stdout did not come through whole "
		    "(%zu bytes out)", strlen(t));
	free(s);
	free(t);
}

static void
result_unicode_kept(void **state)
{
	char *t;

	(void)state;
	t = result_of(RES("caf\\u00e9 \\u65e5\\u672c \\ud83d\\ude00\\n", "",
	    "[]", "null"));
	assert_has(t, "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
	free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wants_code_single),
		cmocka_unit_test(wants_code_among_others),
		cmocka_unit_test(wants_code_function_tools_only),
		cmocka_unit_test(wants_code_no_tools),
		cmocka_unit_test(wants_code_malformed),

		cmocka_unit_test(tools_single_responses),
		cmocka_unit_test(tools_single_chat),
		cmocka_unit_test(tools_mixed_order_responses),
		cmocka_unit_test(tools_mixed_order_chat),
		cmocka_unit_test(tools_several_responses),
		cmocka_unit_test(tools_several_chat),
		cmocka_unit_test(tools_extra_keys_dropped_responses),
		cmocka_unit_test(tools_extra_keys_dropped_chat),
		cmocka_unit_test(tools_custom_name_responses),
		cmocka_unit_test(tools_custom_name_chat),
		cmocka_unit_test(tools_description_literal),

		cmocka_unit_test(choice_type_ci_responses),
		cmocka_unit_test(choice_type_ci_chat),
		cmocka_unit_test(choice_name_ci_responses),
		cmocka_unit_test(choice_name_ci_chat),
		cmocka_unit_test(choice_function_tool_responses),
		cmocka_unit_test(choice_function_tool_chat),
		cmocka_unit_test(choice_strings_responses),
		cmocka_unit_test(choice_strings_chat),
		cmocka_unit_test(choice_unrelated_responses),
		cmocka_unit_test(choice_unrelated_chat),
		cmocka_unit_test(choice_absent_responses),
		cmocka_unit_test(choice_absent_chat),
		cmocka_unit_test(choice_allowed_tools_responses),
		cmocka_unit_test(choice_allowed_tools_required_responses),
		cmocka_unit_test(choice_allowed_tools_chat),
		cmocka_unit_test(choice_allowed_tools_unrelated),

		cmocka_unit_test(strip_every_control_field),
		cmocka_unit_test(strip_underscore_keys),
		cmocka_unit_test(strip_extra_body),
		cmocka_unit_test(strip_nothing_to_strip),
		cmocka_unit_test(strip_not_an_object),
		cmocka_unit_test(first_strips_responses),
		cmocka_unit_test(first_strips_chat),

		cmocka_unit_test(include_outputs_removed),
		cmocka_unit_test(include_only_outputs_key_removed),
		cmocka_unit_test(include_outputs_twice),
		cmocka_unit_test(include_without_outputs),
		cmocka_unit_test(include_empty_array),

		cmocka_unit_test(stream_forced_responses),
		cmocka_unit_test(stream_options_kept_responses),
		cmocka_unit_test(stream_forced_chat),
		cmocka_unit_test(stream_options_merged_chat),
		cmocka_unit_test(store_false_adds_encrypted),
		cmocka_unit_test(store_false_not_duplicated),
		cmocka_unit_test(store_false_with_outputs),
		cmocka_unit_test(store_false_keeps_client_order),
		cmocka_unit_test(store_true_or_absent),
		cmocka_unit_test(store_false_chat_no_include),
		cmocka_unit_test(info_fully_set),
		cmocka_unit_test(first_not_an_object),

		cmocka_unit_test(whole_request_responses),
		cmocka_unit_test(whole_request_chat),

		cmocka_unit_test(followup_forced_dropped_responses),
		cmocka_unit_test(followup_forced_dropped_chat),
		cmocka_unit_test(followup_code_choice_dropped_responses),
		cmocka_unit_test(followup_code_choice_dropped_chat),
		cmocka_unit_test(followup_custom_name),
		cmocka_unit_test(followup_required_to_auto_responses),
		cmocka_unit_test(followup_required_to_auto_chat),
		cmocka_unit_test(followup_others_stay_responses),
		cmocka_unit_test(followup_others_stay_chat),
		cmocka_unit_test(followup_final_responses),
		cmocka_unit_test(followup_final_chat),
		cmocka_unit_test(followup_after_first),

		cmocka_unit_test(code_arg_simple),
		cmocka_unit_test(code_arg_escapes_and_unicode),
		cmocka_unit_test(code_arg_extra_keys),
		cmocka_unit_test(code_arg_empty_code),
		cmocka_unit_test(code_arg_len_respected),
		cmocka_unit_test(code_arg_not_json),
		cmocka_unit_test(code_arg_not_object),
		cmocka_unit_test(code_arg_missing),
		cmocka_unit_test(code_arg_not_string),
		cmocka_unit_test(code_arg_empty_input),
		cmocka_unit_test(code_arg_nul_in_code),
		cmocka_unit_test(code_arg_repeated_key),

		cmocka_unit_test(result_stdout_only),
		cmocka_unit_test(result_nothing),
		cmocka_unit_test(result_nothing_sparse),
		cmocka_unit_test(result_stderr_only),
		cmocka_unit_test(result_order),
		cmocka_unit_test(result_main_value),
		cmocka_unit_test(result_error_name_value),
		cmocka_unit_test(result_error_no_traceback),
		cmocka_unit_test(result_long_traceback_tail),
		cmocka_unit_test(result_ansi_traceback),
		cmocka_unit_test(result_ansi_streams),
		cmocka_unit_test(result_png_noted),
		cmocka_unit_test(result_each_png_noted),
		cmocka_unit_test(result_display_text_not_value),
		cmocka_unit_test(result_non_png_not_noted),
		cmocka_unit_test(result_huge_stdout),
		cmocka_unit_test(result_huge_stderr),
		cmocka_unit_test(result_huge_everything),
		cmocka_unit_test(result_cut_exactly),
		cmocka_unit_test(result_escapes_take_no_room),
		cmocka_unit_test(result_cut_inside_character),
		cmocka_unit_test(result_lone_esc_before_multibyte),
		cmocka_unit_test(result_nul_in_stdout),
		cmocka_unit_test(result_moderate_not_cut),
		cmocka_unit_test(result_unicode_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
