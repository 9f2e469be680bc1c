/*
 * core/upstream/bridge: the Responses API on a Chat-only upstream. The request
 * side (sg_bridge_request: a Responses body as a Chat body; sg_bridge_check:
 * a 400 naming what Chat cannot carry) is checked body by body; the stream
 * side (sg_bridge_event / sg_bridge_end) is fed Chat chunks as the SSE
 * parser hands them over, and every Responses event it sends is recorded
 * and checked against ../shared/reference/openai-shapes.md §5 and §6.
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

#include "../../core/upstream/bridge.h"
#include "testutil.h"

/* ================================================== JSON helpers */

static char *
dump(const json_t *j)
{
	return j != NULL ? json_dumps(j, JSON_SORT_KEYS | JSON_ENCODE_ANY) :
	    NULL;
}

/* got must equal the literal want (' for "), key order aside. */
static void
assert_json_(const json_t *got, const char *want_lit, const char *file,
    int line)
{
	json_t *want = tu_qjson(want_lit);
	char *g, *w;

	if (!json_equal(got, want)) {
		g = dump(got);
		w = dump(want);
		fail_msg("%s:%d: JSON differs\n  got:  %s\n  want: %s", file,
		    line, g != NULL ? g : "(null)", w != NULL ? w : "(null)");
	}
	json_decref(want);
}
#define assert_json(got, want) assert_json_((got), (want), __FILE__, __LINE__)

static const char *
str(const json_t *j, const char *key)
{
	return json_string_value(json_object_get(j, key));
}

/* ================================================== request helpers */

/* New reference: sg_bridge_request on the literal body. */
static json_t *
chat_of(const char *lit)
{
	json_t *body = tu_qjson(lit), *chat = sg_bridge_request(body);

	json_decref(body);
	if (chat == NULL)
		fail_msg("sg_bridge_request returned NULL for %s", lit);
	return chat;
}

/* The Chat messages made from the literal body must be exactly want. */
static void
check_messages_(const char *lit, const char *want, const char *file,
    int line)
{
	json_t *chat = chat_of(lit);

	assert_json_(json_object_get(chat, "messages"), want, file, line);
	json_decref(chat);
}
#define check_messages(lit, want) check_messages_((lit), (want), __FILE__, \
	__LINE__)

/* The whole Chat body made from the literal body must be exactly want. */
static void
check_chat_(const char *lit, const char *want, const char *file, int line)
{
	json_t *chat = chat_of(lit);

	assert_json_(chat, want, file, line);
	json_decref(chat);
}
#define check_chat(lit, want) check_chat_((lit), (want), __FILE__, __LINE__)

/* The body must be refused: 400 code naming param. */
static void
refused_(const char *lit, const char *param, const char *code,
    const char *file, int line)
{
	json_t *body = tu_qjson(lit);
	struct sg_error err;

	memset(&err, 0, sizeof(err));
	if (sg_bridge_check(body, &err) != -1)
		fail_msg("%s:%d: not refused: %s", file, line, lit);
	if (err.status != 400 || err.code == NULL ||
	    strcmp(err.code, code) != 0 ||
	    err.type == NULL || strcmp(err.type, "invalid_request_error") != 0 ||
	    err.param == NULL || strcmp(err.param, param) != 0)
		fail_msg("%s:%d: refused as %d %s/%s param %s (want 400 "
		    "invalid_request_error/%s param %s): %s",
		    file, line, err.status, err.type != NULL ? err.type : "-",
		    err.code != NULL ? err.code : "-", err.param != NULL ?
		    err.param : "-", code, param, err.message);
	/* The message names the parameter too (an SDK shows only it). */
	if (strcasestr(err.message, param) == NULL)
		fail_msg("%s:%d: the message does not name %s: %s", file, line,
		    param, err.message);
	/* err.param may point into the body (an unknown key): read first. */
	json_decref(body);
}
#define refused(lit, param) \
	refused_((lit), (param), "unsupported_parameter", __FILE__, __LINE__)
#define refused_as(lit, param, code) \
	refused_((lit), (param), (code), __FILE__, __LINE__)

static void
passes_(const char *lit, const char *file, int line)
{
	json_t *body = tu_qjson(lit);
	struct sg_error err;

	memset(&err, 0, sizeof(err));
	if (sg_bridge_check(body, &err) != 0)
		fail_msg("%s:%d: refused (%s): %s", file, line, err.message, lit);
	json_decref(body);
}
#define passes(lit) passes_((lit), __FILE__, __LINE__)

/* ================================================== 1. the request */

/* The instructions lead as the system message; a string input is the
 * user's message. */
static void
req_instructions_and_string_input(void **state)
{
	(void)state;
	check_messages("{'model':'m','instructions':'Be brief.','input':'Hi'}",
	    "[{'role':'system','content':'Be brief.'},"
	    "{'role':'user','content':'Hi'}]");
	/* Without instructions the user's message is the only one. */
	check_messages("{'model':'m','input':'Hi'}",
	    "[{'role':'user','content':'Hi'}]");
}

/* A user message's input_text and input_image parts become Chat's text
 * and image_url parts, the detail kept (and left out when not given). */
static void
req_user_text_and_image_parts(void **state)
{
	(void)state;
	check_messages("{'model':'m','input':[{'type':'message','role':'user',"
	    "'content':[{'type':'input_text','text':'What is this?'},"
	    "{'type':'input_image','image_url':'https://x.test/cat.png',"
	    "'detail':'low'},{'type':'input_image','image_url':"
	    "'data:image/png;base64,AAAA'}]}]}",
	    "[{'role':'user','content':[{'type':'text','text':'What is this?'},"
	    "{'type':'image_url','image_url':{'url':'https://x.test/cat.png',"
	    "'detail':'low'}},{'type':'image_url','image_url':{'url':"
	    "'data:image/png;base64,AAAA'}}]}]");
	/* An easy message (no type) with a string content stays a string. */
	check_messages("{'model':'m','input':[{'role':'user','content':'Hi'}]}",
	    "[{'role':'user','content':'Hi'}]");
}

/* An assistant message's output_text parts become its string content;
 * the developer (and the system) speak as Chat's system. */
static void
req_assistant_text_and_developer_role(void **state)
{
	(void)state;
	check_messages("{'model':'m','input':["
	    "{'type':'message','role':'developer','content':'Use metric.'},"
	    "{'type':'message','role':'system','content':[{'type':'input_text',"
	    "'text':'Be '},{'type':'input_text','text':'kind.'}]},"
	    "{'type':'message','role':'user','content':'Hi'},"
	    "{'type':'message','role':'assistant','id':'msg_1','status':"
	    "'completed','content':[{'type':'output_text','text':'Hel',"
	    "'annotations':[]},{'type':'output_text','text':'lo',"
	    "'annotations':[]}]}]}",
	    "[{'role':'system','content':'Use metric.'},"
	    "{'role':'system','content':'Be kind.'},"
	    "{'role':'user','content':'Hi'},"
	    "{'role':'assistant','content':'Hello'}]");
}

/* Two function_call items in a row are ONE assistant message with two
 * tool_calls (Chat's form of parallel calls), each id the call_id. */
static void
req_function_calls_one_assistant_message(void **state)
{
	(void)state;
	check_messages("{'model':'m','input':["
	    "{'role':'user','content':'Weather and time?'},"
	    "{'type':'function_call','id':'fc_1','call_id':'call_1','name':"
	    "'get_weather','arguments':'{}','status':'completed'},"
	    "{'type':'function_call','id':'fc_2','call_id':'call_2','name':"
	    "'get_time','arguments':'{\\\"tz\\\":\\\"CET\\\"}'}]}",
	    "[{'role':'user','content':'Weather and time?'},"
	    "{'role':'assistant','content':null,'tool_calls':["
	    "{'id':'call_1','type':'function','function':{'name':'get_weather',"
	    "'arguments':'{}'}},"
	    "{'id':'call_2','type':'function','function':{'name':'get_time',"
	    "'arguments':'{\\\"tz\\\":\\\"CET\\\"}'}}]}]");
}

/* A function_call_output is a tool message answering its call; an output
 * given as input_text parts is joined into one string. */
static void
req_function_call_output_tool_message(void **state)
{
	(void)state;
	check_messages("{'model':'m','input':["
	    "{'type':'function_call','call_id':'call_1','name':'a',"
	    "'arguments':'{}'},"
	    "{'type':'function_call','call_id':'call_2','name':'b',"
	    "'arguments':'{}'},"
	    "{'type':'function_call_output','call_id':'call_1','output':"
	    "'sunny'},"
	    "{'type':'function_call_output','call_id':'call_2','output':["
	    "{'type':'input_text','text':'12:'},{'type':'input_text','text':"
	    "'00'}]}]}",
	    "[{'role':'assistant','content':null,'tool_calls':["
	    "{'id':'call_1','type':'function','function':{'name':'a',"
	    "'arguments':'{}'}},"
	    "{'id':'call_2','type':'function','function':{'name':'b',"
	    "'arguments':'{}'}}]},"
	    "{'role':'tool','tool_call_id':'call_1','content':'sunny'},"
	    "{'role':'tool','tool_call_id':'call_2','content':'12:00'}]");
}

/* Reasoning items have no Chat form and are dropped, without splitting
 * the calls around them into two assistant messages. */
static void
req_reasoning_dropped(void **state)
{
	(void)state;
	check_messages("{'model':'m','input':["
	    "{'role':'user','content':'Go'},"
	    "{'type':'reasoning','id':'rs_1','summary':[],"
	    "'encrypted_content':'xyz'},"
	    "{'type':'function_call','call_id':'call_1','name':'a',"
	    "'arguments':'{}'},"
	    "{'type':'reasoning','id':'rs_2','summary':[]},"
	    "{'type':'function_call','call_id':'call_2','name':'b',"
	    "'arguments':'{}'}]}",
	    "[{'role':'user','content':'Go'},"
	    "{'role':'assistant','content':null,'tool_calls':["
	    "{'id':'call_1','type':'function','function':{'name':'a',"
	    "'arguments':'{}'}},"
	    "{'id':'call_2','type':'function','function':{'name':'b',"
	    "'arguments':'{}'}}]}]");
}

/* Responses' flat function tools are nested the Chat way; tools of other
 * types (the gateway's own code_interpreter) stay out of the Chat body. */
static void
req_tools_function_only(void **state)
{
	json_t *chat;

	(void)state;
	chat = chat_of("{'model':'m','input':'x','tools':["
	    "{'type':'code_interpreter','container':{'type':'auto'}},"
	    "{'type':'function','name':'get_weather','description':'Get "
	    "weather','parameters':{'type':'object','properties':{'city':"
	    "{'type':'string'}},'required':['city']},'strict':true},"
	    "{'type':'function','name':'ping'}]}");
	assert_json(json_object_get(chat, "tools"),
	    "[{'type':'function','function':{'name':'get_weather',"
	    "'description':'Get weather','parameters':{'type':'object',"
	    "'properties':{'city':{'type':'string'}},'required':['city']},"
	    "'strict':true}},"
	    "{'type':'function','function':{'name':'ping'}}]");
	json_decref(chat);
	/* Only non-function tools: no tools key at all. */
	chat = chat_of("{'model':'m','input':'x','tools':[{'type':"
	    "'code_interpreter','container':{'type':'auto'}}]}");
	assert_null(json_object_get(chat, "tools"));
	json_decref(chat);
}

/* tool_choice: a string as it is; a forced function in Chat's nesting. */
static void
req_tool_choice_forms(void **state)
{
	json_t *chat;

	(void)state;
	chat = chat_of("{'model':'m','input':'x','tool_choice':'required',"
	    "'tools':[{'type':'function','name':'f'}]}");
	assert_json(json_object_get(chat, "tool_choice"), "'required'");
	json_decref(chat);
	chat = chat_of("{'model':'m','input':'x','tool_choice':{'type':"
	    "'function','name':'f'},'tools':[{'type':'function','name':'f'}]}");
	assert_json(json_object_get(chat, "tool_choice"),
	    "{'type':'function','function':{'name':'f'}}");
	json_decref(chat);
	chat = chat_of("{'model':'m','input':'x'}");
	assert_null(json_object_get(chat, "tool_choice"));
	json_decref(chat);
}

/* The settings Chat has, under their Chat names; the ones that concern
 * only the gateway (store, metadata, include, previous_response_id)
 * never reach the upstream. The whole body is compared: nothing else. */
static void
req_settings_renamed_and_passed(void **state)
{
	(void)state;
	check_chat("{'model':'m','input':'hi','max_output_tokens':50,"
	    "'temperature':0.5,'top_p':0.25,'parallel_tool_calls':false,"
	    "'user':'u1','reasoning':{'effort':'low'},'text':{'format':"
	    "{'type':'text'},'verbosity':'low'},'store':true,'metadata':"
	    "{'k':'v'},'include':['reasoning.encrypted_content'],"
	    "'previous_response_id':'resp_1','stream':true}",
	    "{'model':'m','messages':[{'role':'user','content':'hi'}],"
	    "'stream':true,'stream_options':{'include_usage':true},"
	    "'max_tokens':50,'temperature':0.5,'top_p':0.25,"
	    "'parallel_tool_calls':false,'user':'u1','reasoning_effort':'low',"
	    "'verbosity':'low'}");
}

/* text.format: json_schema as Chat's response_format json_schema (name,
 * schema, strict), json_object as json_object, text as nothing. */
static void
req_text_format(void **state)
{
	json_t *chat;

	(void)state;
	chat = chat_of("{'model':'m','input':'x','text':{'format':{'type':"
	    "'json_schema','name':'answer','schema':{'type':'object',"
	    "'properties':{'n':{'type':'integer'}}},'strict':true}}}");
	assert_json(json_object_get(chat, "response_format"),
	    "{'type':'json_schema','json_schema':{'name':'answer','schema':"
	    "{'type':'object','properties':{'n':{'type':'integer'}}},"
	    "'strict':true}}");
	json_decref(chat);
	chat = chat_of("{'model':'m','input':'x','text':{'format':{'type':"
	    "'json_object'}}}");
	assert_json(json_object_get(chat, "response_format"),
	    "{'type':'json_object'}");
	json_decref(chat);
	chat = chat_of("{'model':'m','input':'x','text':{'format':{'type':"
	    "'text'}}}");
	assert_null(json_object_get(chat, "response_format"));
	assert_null(json_object_get(chat, "verbosity"));
	json_decref(chat);
}

/* The Chat request always streams with usage, whatever the client asked
 * (the bridge reads a stream, and usage is billed). */
static void
req_always_streams_with_usage(void **state)
{
	(void)state;
	check_chat("{'model':'m','input':'hi','stream':false}",
	    "{'model':'m','messages':[{'role':'user','content':'hi'}],"
	    "'stream':true,'stream_options':{'include_usage':true}}");
	check_chat("{'model':'m','input':'hi','stream':true,'stream_options':"
	    "{'include_obfuscation':false}}",
	    "{'model':'m','messages':[{'role':'user','content':'hi'}],"
	    "'stream':true,'stream_options':{'include_usage':true}}");
}

/* ================================================== 2. the check */

/* A key the bridge does not know, with a value, is refused by name: it
 * would otherwise be silently dropped. */
static void
check_refuses_unknown_keys(void **state)
{
	(void)state;
	refused("{'model':'m','input':'x','prompt':{'id':'pmpt_1'}}",
	    "prompt");
	refused("{'model':'m','input':'x','conversation':'conv_1'}",
	    "conversation");
}

/* Background is the gateway's to run (a runner's job): the upstream is
 * never asked for it, so the bridge takes it. */
static void
check_takes_background(void **state)
{
	json_t *body = tu_qjson("{'model':'m','input':'x','background':true}");
	struct sg_error err;

	(void)state;
	assert_int_equal(sg_bridge_check(body, &err), 0);
	json_decref(body);
}

static void
check_refuses_truncation_auto(void **state)
{
	(void)state;
	refused("{'model':'m','input':'x','truncation':'auto'}", "truncation");
}

static void
check_refuses_top_logprobs(void **state)
{
	(void)state;
	refused("{'model':'m','input':'x','top_logprobs':3}", "top_logprobs");
}

/* A Chat stream has no reasoning summary to give. */
static void
check_refuses_reasoning_summary(void **state)
{
	(void)state;
	refused("{'model':'m','input':'x','reasoning':{'effort':'low',"
	    "'summary':'auto'}}", "reasoning.summary");
}

static void
check_refuses_include_logprobs(void **state)
{
	(void)state;
	refused("{'model':'m','input':'x','include':["
	    "'reasoning.encrypted_content','message.output_text.logprobs']}",
	    "include");
}

static void
check_refuses_web_search_tool(void **state)
{
	(void)state;
	refused("{'model':'m','input':'x','tools':[{'type':'function','name':"
	    "'f'},{'type':'web_search'}]}", "tools");
}

/* A forced tool of another type than function (or the gateway's own). */
static void
check_refuses_other_tool_choice(void **state)
{
	(void)state;
	refused("{'model':'m','input':'x','tool_choice':{'type':"
	    "'web_search_preview'}}", "tool_choice");
	refused("{'model':'m','input':'x','tool_choice':{'type':"
	    "'allowed_tools','mode':'auto','tools':[]}}", "tool_choice");
}

static void
check_refuses_input_file(void **state)
{
	(void)state;
	refused("{'model':'m','input':[{'role':'user','content':[{'type':"
	    "'input_text','text':'Read this'},{'type':'input_file','file_id':"
	    "'file_1'}]}]}", "input");
}

/* Chat takes images by URL only, not by an uploaded file's id. */
static void
check_refuses_image_by_file_id(void **state)
{
	(void)state;
	refused("{'model':'m','input':[{'type':'message','role':'user',"
	    "'content':[{'type':'input_image','file_id':'file_1','detail':"
	    "'auto'}]}]}", "input");
}

/* A Chat tool message is text only. */
static void
check_refuses_image_in_tool_output(void **state)
{
	(void)state;
	refused("{'model':'m','input':[{'type':'function_call_output',"
	    "'call_id':'call_1','output':[{'type':'input_text','text':'see'},"
	    "{'type':'input_image','image_url':'https://x.test/a.png'}]}]}",
	    "input");
}

static void
check_refuses_unknown_item_type(void **state)
{
	(void)state;
	refused("{'model':'m','input':[{'role':'user','content':'x'},"
	    "{'type':'computer_call_output','call_id':'c','output':{'type':"
	    "'computer_screenshot','image_url':'https://x.test/s.png'}}]}",
	    "input");
}

/*
 * An item without what its Chat form is made of was dropped on the way: a
 * function_call_output without call_id vanished, a function_call without
 * one became "tool_calls": [], and the upstream answered 200. Refused as
 * OpenAI refuses a missing parameter, naming it.
 */
static void
check_refuses_incomplete_items(void **state)
{
	static const char *const cases[][3] = {
	    { "{'type':'function_call','name':'f','arguments':'{}'}",
	      "input[1].call_id", "missing_required_parameter" },
	    { "{'type':'function_call','call_id':null,'name':'f','arguments':"
	      "'{}'}", "input[1].call_id", "missing_required_parameter" },
	    { "{'type':'function_call','call_id':'c','arguments':'{}'}",
	      "input[1].name", "missing_required_parameter" },
	    { "{'type':'function_call','call_id':'c','name':'f'}",
	      "input[1].arguments", "missing_required_parameter" },
	    { "{'type':'function_call','call_id':7,'name':'f','arguments':'{}'}",
	      "input[1].call_id", "invalid_type" },
	    { "{'type':'function_call_output','output':'ok'}",
	      "input[1].call_id", "missing_required_parameter" },
	    { "{'type':'function_call_output','call_id':'c'}",
	      "input[1].output", "missing_required_parameter" },
	    { "{'type':'message','content':'x'}",
	      "input[1].role", "missing_required_parameter" },
	    { "{'role':'user'}", "input[1].content",
	      "missing_required_parameter" },
	};
	struct sg_error err;
	char lit[512];
	json_t *body;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(lit, sizeof(lit), "{'model':'m','input':[{'role':"
		    "'user','content':'hi'},%s]}", cases[i][0]);
		refused_as(lit, cases[i][1], cases[i][2]);
	}
	/* OpenAI's words. */
	body = tu_qjson("{'model':'m','input':[{'type':'function_call_output',"
	    "'output':'ok'},{'type':'function_call','call_id':[],'name':'f',"
	    "'arguments':'{}'}]}");
	assert_int_equal(sg_bridge_check(body, &err), -1);
	assert_string_equal(err.message, "Missing required parameter: "
	    "'input[0].call_id'.");
	json_array_remove(json_object_get(body, "input"), 0);
	assert_int_equal(sg_bridge_check(body, &err), -1);
	assert_string_equal(err.message, "Invalid type for 'input[0].call_id': "
	    "expected a string, but got an array instead.");
	json_decref(body);
}

/* The defaults the SDKs send (and nulls for keys the bridge does not
 * know) are not refusals: only what would change the answer is. */
static void
check_passes_defaults(void **state)
{
	(void)state;
	passes("{'model':'m','input':'x','background':false,'truncation':"
	    "'disabled','top_logprobs':0,'prompt':null,'conversation':null,"
	    "'reasoning':{'effort':null,'summary':null},'tool_choice':'auto',"
	    "'include':[],'tools':[]}");
	passes("{'model':'m','input':'x','background':null,'truncation':null,"
	    "'top_logprobs':null}");
	passes("{'model':'m'}");
}

/* Everything the bridge carries (or, for the gateway's own, handles)
 * passes the check. */
static void
check_passes_supported(void **state)
{
	(void)state;
	passes("{'model':'m','instructions':'Be brief.','input':["
	    "{'role':'developer','content':'Use metric.'},"
	    "{'type':'message','role':'user','content':[{'type':'input_text',"
	    "'text':'What?'},{'type':'input_image','image_url':"
	    "'https://x.test/a.png','detail':'high'}]},"
	    "{'type':'message','role':'assistant','content':[{'type':"
	    "'output_text','text':'A cat.','annotations':[]},{'type':"
	    "'refusal','refusal':'no'}]},"
	    "{'type':'reasoning','id':'rs_1','summary':[]},"
	    "{'type':'function_call','call_id':'call_1','name':'f',"
	    "'arguments':'{}'},"
	    "{'type':'function_call_output','call_id':'call_1','output':"
	    "[{'type':'input_text','text':'ok'}]},"
	    "{'type':'code_interpreter_call','id':'ci_1','code':'1',"
	    "'container_id':'cntr_1','outputs':[]},"
	    "{'type':'item_reference','id':'msg_1'}],"
	    "'tools':[{'type':'function','name':'f'},{'type':"
	    "'code_interpreter','container':{'type':'auto'}}],"
	    "'tool_choice':{'type':'function','name':'f'},"
	    "'parallel_tool_calls':true,'max_output_tokens':100,"
	    "'temperature':1,'top_p':1,'text':{'format':{'type':'json_object'},"
	    "'verbosity':'medium'},'stream':true,'stream_options':{},"
	    "'store':false,'metadata':{'a':'b'},'previous_response_id':"
	    "'resp_1','include':['reasoning.encrypted_content',"
	    "'code_interpreter_call.outputs'],'user':'u','reasoning':"
	    "{'effort':'high'},'service_tier':'auto','prompt_cache_key':'k',"
	    "'safety_identifier':'s','truncation':'disabled','background':"
	    "false,'top_logprobs':0}");
	passes("{'model':'m','input':'x','tool_choice':{'type':"
	    "'code_interpreter'}}");
}

/*
 * What has no Chat form is refused up front, never dropped on the way: an
 * input_image in a developer (or system) message, which Chat keeps to
 * text, once passed the check and vanished from the request (found by
 * this test). Either the check refuses it, or the Chat body carries it.
 */
static void
check_image_in_developer_message_not_dropped(void **state)
{
	const char *lit = "{'model':'m','input':[{'type':'message','role':"
	    "'developer','content':[{'type':'input_text','text':'Style:'},"
	    "{'type':'input_image','image_url':'https://x.test/style.png'}]},"
	    "{'role':'user','content':'Draw a cat.'}]}";
	json_t *body = tu_qjson(lit), *chat;
	struct sg_error err;
	char *text, shown[1024];
	int rc, kept;

	(void)state;
	memset(&err, 0, sizeof(err));
	rc = sg_bridge_check(body, &err);
	if (rc == -1) {
		json_decref(body);
		assert_int_equal(err.status, 400);
		assert_string_equal(err.code, "unsupported_parameter");
		return;
	}
	chat = sg_bridge_request(body);
	text = dump(chat);
	kept = text != NULL && strstr(text, "https://x.test/style.png") != NULL;
	snprintf(shown, sizeof(shown), "%s", text != NULL ? text : "(null)");
	free(text);
	json_decref(chat);
	json_decref(body);
	if (!kept)
		fail_msg("the check passed a developer message's image and "
		    "the Chat body dropped it: %s", shown);
}

/* ================================================== the stream: recording */

#define MAX_EVENTS	128

struct got {
	int	 null;		/* a NULL event: time passing */
	char	*name;
	char	*data;
	size_t	 datalen;
	char	*raw;
	size_t	 rawlen;
	json_t	*j;		/* data parsed (NULL when not JSON) */
};

struct rec {
	struct got	 ev[MAX_EVENTS];
	size_t		 n;
};

static char *
memdup0(const char *p, size_t n)
{
	char *d = malloc(n + 1);

	assert_non_null(d);
	if (n > 0)
		memcpy(d, p, n);
	d[n] = '\0';
	return d;
}

static int
on_event(void *arg, const struct sg_sse_event *e)
{
	struct rec *r = arg;
	struct got *g;

	if (r->n >= MAX_EVENTS)
		fail_msg("more than %d events", MAX_EVENTS);
	g = &r->ev[r->n++];
	if (e == NULL) {
		g->null = 1;
		return 0;
	}
	g->name = memdup0(e->name, strlen(e->name));
	g->data = memdup0(e->data, e->datalen);
	g->datalen = e->datalen;
	g->raw = memdup0(e->raw, e->rawlen);
	g->rawlen = e->rawlen;
	g->j = json_loadb(e->data, e->datalen, 0, NULL);
	return 0;
}

struct fx {
	struct sg_bridge	*b;
	struct rec		 r;
};

static int
fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		return -1;
	if ((fx->b = sg_bridge_new("gpt-test", on_event, &fx->r)) == NULL) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int
fx_teardown(void **state)
{
	struct fx *fx = *state;
	size_t i;

	sg_bridge_free(fx->b);
	for (i = 0; i < fx->r.n; i++) {
		free(fx->r.ev[i].name);
		free(fx->r.ev[i].data);
		free(fx->r.ev[i].raw);
		json_decref(fx->r.ev[i].j);
	}
	free(fx);
	return 0;
}

/* One SSE event with this data (taken as it is), as the parser gives it. */
static void
feed_data(struct fx *fx, const char *data, size_t len)
{
	struct sg_sse_event ev;
	char *raw = malloc(len + 9);

	assert_non_null(raw);
	memcpy(raw, "data: ", 6);
	memcpy(raw + 6, data, len);
	memcpy(raw + 6 + len, "\n\n", 3);
	ev = (struct sg_sse_event){ raw, len + 8, "", data, len, 1 };
	assert_int_equal(sg_bridge_event(fx->b, &ev), 0);
	free(raw);
}

/* One Chat chunk written with ' for ". */
static void
feed(struct fx *fx, const char *lit)
{
	char *d = tu_q(lit);

	feed_data(fx, d, strlen(d));
	free(d);
}

static void
feed_done(struct fx *fx)
{
	feed_data(fx, "[DONE]", 6);
}

/* The Chat chunks of §6.3. */
#define HEAD	"'id':'chatcmpl-1','object':'chat.completion.chunk'," \
		"'created':7,'model':'m'"
#define CHUNK(delta, fr) "{" HEAD ",'choices':[{'index':0,'delta':" delta \
		",'logprobs':null,'finish_reason':" fr "}],'usage':null}"
#define ROLE	CHUNK("{'role':'assistant','content':'','refusal':null}", \
		"null")
#define TEXT(s)	CHUNK("{'content':'" s "'}", "null")
#define FINISH(fr) CHUNK("{}", "'" fr "'")
#define CALLS(c) CHUNK("{'tool_calls':[" c "]}", "null")
#define USAGE	"{" HEAD ",'choices':[],'usage':{'prompt_tokens':7," \
		"'completion_tokens':3,'total_tokens':10," \
		"'prompt_tokens_details':{'cached_tokens':2,'audio_tokens':0}," \
		"'completion_tokens_details':{'reasoning_tokens':1," \
		"'audio_tokens':0}}}"

static const json_t *
data_at(const struct fx *fx, size_t i)
{
	assert_true(i < fx->r.n);
	return fx->r.ev[i].j;
}

static const char *
type_at(const struct fx *fx, size_t i)
{
	const char *t = str(data_at(fx, i), "type");

	return t != NULL ? t : "(none)";
}

/* The recorded events' types must be exactly want (NULL-ended). */
static void
assert_types_(const struct fx *fx, const char *const *want, const char *file,
    int line)
{
	size_t i, n;
	char got[4096] = "";

	for (n = 0; want[n] != NULL; n++)
		;
	for (i = 0; i < fx->r.n; i++) {
		strncat(got, fx->r.ev[i].null ? "(NULL)" : type_at(fx, i),
		    sizeof(got) - strlen(got) - 1);
		strncat(got, " ", sizeof(got) - strlen(got) - 1);
	}
	if (fx->r.n != n)
		fail_msg("%s:%d: %zu events, want %zu: %s", file, line, fx->r.n,
		    n, got);
	for (i = 0; i < n; i++)
		if (fx->r.ev[i].null || strcmp(type_at(fx, i), want[i]) != 0)
			fail_msg("%s:%d: event %zu is %s, want %s; all: %s", file,
			    line, i, fx->r.ev[i].null ? "(NULL)" : type_at(fx, i),
			    want[i], got);
}
#define assert_types(fx, ...) do {					\
	static const char *const tu_w_[] = { __VA_ARGS__, NULL };	\
	assert_types_((fx), tu_w_, __FILE__, __LINE__);			\
} while (0)

/* Index of the first event of this type at or after from, or fail. */
static size_t
find_(const struct fx *fx, const char *type, size_t from, const char *file,
    int line)
{
	size_t i;

	for (i = from; i < fx->r.n; i++)
		if (!fx->r.ev[i].null && strcmp(type_at(fx, i), type) == 0)
			return i;
	fail_msg("%s:%d: no %s at or after event %zu", file, line, type, from);
	return 0;
}
#define find(fx, type, from) find_((fx), (type), (from), __FILE__, __LINE__)

static const json_t *
last_response(const struct fx *fx)
{
	assert_true(fx->r.n > 0);
	return json_object_get(data_at(fx, fx->r.n - 1), "response");
}

/* ================================================== 3. a text stream */

static void
text_stream(struct fx *fx)
{
	feed(fx, ROLE);
	feed(fx, TEXT("Hel"));
	feed(fx, TEXT("lo"));
	feed(fx, FINISH("stop"));
	feed(fx, USAGE);
	feed_done(fx);
}

/* The events of a message, in the order the Responses SDKs require:
 * added, part added, the deltas, then text/part/item done, completed
 * (the role chunk and the usage chunk give none of their own). */
static void
text_event_order(void **state)
{
	struct fx *fx = *state;

	text_stream(fx);
	assert_types(fx, "response.output_item.added",
	    "response.content_part.added", "response.output_text.delta",
	    "response.output_text.delta", "response.output_text.done",
	    "response.content_part.done", "response.output_item.done",
	    "response.completed");
	assert_string_equal(str(data_at(fx, 2), "delta"), "Hel");
	assert_string_equal(str(data_at(fx, 3), "delta"), "lo");
}

/* Each event is named as its data's type (Node reads the name) and
 * carries sequence_number 0, 1, 2, ... with no gap. */
static void
text_names_and_sequence(void **state)
{
	struct fx *fx = *state;
	size_t i;

	text_stream(fx);
	assert_true(fx->r.n > 0);
	for (i = 0; i < fx->r.n; i++) {
		const struct got *g = &fx->r.ev[i];

		assert_false(g->null);
		assert_non_null(g->j);
		assert_string_equal(g->name, type_at(fx, i));
		assert_true(json_is_integer(json_object_get(g->j,
		    "sequence_number")));
		assert_int_equal(json_integer_value(json_object_get(g->j,
		    "sequence_number")), i);
		/* One compact line of JSON. */
		assert_null(memchr(g->data, '\n', g->datalen));
	}
}

/* One message id, given at output_item.added, names the item in every
 * later event and in the completed response; output index 0. */
static void
text_one_item_id(void **state)
{
	struct fx *fx = *state;
	const json_t *item;
	const char *id;
	size_t i;

	text_stream(fx);
	item = json_object_get(data_at(fx, 0), "item");
	assert_json(json_object_get(item, "content"), "[]");
	assert_string_equal(str(item, "type"), "message");
	assert_string_equal(str(item, "status"), "in_progress");
	assert_string_equal(str(item, "role"), "assistant");
	id = str(item, "id");
	assert_non_null(id);
	assert_int_equal(strncmp(id, "msg_", 4), 0);
	assert_true(strlen(id) > 4);
	for (i = 0; i < fx->r.n - 1; i++) {
		const json_t *d = data_at(fx, i);

		assert_int_equal(json_integer_value(json_object_get(d,
		    "output_index")), 0);
		if (i > 0 && i < 6) {
			assert_string_equal(str(d, "item_id"), id);
			assert_int_equal(json_integer_value(json_object_get(d,
			    "content_index")), 0);
		}
	}
	assert_string_equal(str(json_object_get(data_at(fx, 6), "item"), "id"),
	    id);
	assert_string_equal(str(json_array_get(json_object_get(last_response(
	    fx), "output"), 0), "id"), id);
}

/* The done events carry the whole text, and each part has the shape the
 * SDKs need (empty text at first, annotations and logprobs arrays). */
static void
text_done_events(void **state)
{
	struct fx *fx = *state;
	const json_t *item;

	text_stream(fx);
	assert_json(json_object_get(data_at(fx, 1), "part"),
	    "{'type':'output_text','text':'','annotations':[],'logprobs':[]}");
	assert_json(json_object_get(data_at(fx, 2), "logprobs"), "[]");
	assert_string_equal(str(data_at(fx, 4), "text"), "Hello");
	assert_json(json_object_get(data_at(fx, 4), "logprobs"), "[]");
	assert_json(json_object_get(data_at(fx, 5), "part"),
	    "{'type':'output_text','text':'Hello','annotations':[],"
	    "'logprobs':[]}");
	item = json_object_get(data_at(fx, 6), "item");
	assert_string_equal(str(item, "status"), "completed");
	assert_json(json_object_get(item, "content"),
	    "[{'type':'output_text','text':'Hello','annotations':[],"
	    "'logprobs':[]}]");
}

/* response.completed: the response whole, its output the done item, the
 * usage in Responses' names (Chat's prompt/completion tokens and their
 * details mapped). */
static void
text_completed_response(void **state)
{
	struct fx *fx = *state;
	const json_t *r;

	text_stream(fx);
	r = last_response(fx);
	assert_non_null(r);
	assert_string_equal(str(r, "object"), "response");
	assert_string_equal(str(r, "status"), "completed");
	assert_string_equal(str(r, "model"), "gpt-test");
	assert_int_equal(strncmp(str(r, "id"), "resp_", 5), 0);
	assert_true(json_is_integer(json_object_get(r, "created_at")));
	assert_true(json_is_null(json_object_get(r, "error")));
	assert_true(json_is_null(json_object_get(r, "incomplete_details")));
	assert_int_equal(json_array_size(json_object_get(r, "output")), 1);
	assert_true(json_equal(json_array_get(json_object_get(r, "output"), 0),
	    json_object_get(data_at(fx, 6), "item")));
	assert_json(json_object_get(r, "usage"),
	    "{'input_tokens':7,'input_tokens_details':{'cached_tokens':2},"
	    "'output_tokens':3,'output_tokens_details':{'reasoning_tokens':1},"
	    "'total_tokens':10}");
}

/* [DONE] ended the response: sg_bridge_end (the loop always calls it)
 * and anything more from the upstream send nothing. */
static void
text_end_after_done_sends_nothing(void **state)
{
	struct fx *fx = *state;
	size_t n;

	text_stream(fx);
	n = fx->r.n;
	assert_string_equal(type_at(fx, n - 1), "response.completed");
	sg_bridge_end(fx->b);
	sg_bridge_end(fx->b);
	feed(fx, TEXT("late"));
	feed_done(fx);
	assert_int_equal(fx->r.n, n);
}

/* ================================================== 4. tool calls */

/* Text, then two calls streamed by index, their argument pieces
 * interleaved (§6.3). */
static void
calls_stream(struct fx *fx)
{
	feed(fx, ROLE);
	feed(fx, TEXT("Let me check."));
	feed(fx, CALLS("{'index':0,'id':'call_a','type':'function','function':"
	    "{'name':'get_weather','arguments':'{\\\"city\\\":'}}"));
	feed(fx, CALLS("{'index':1,'id':'call_b','type':'function','function':"
	    "{'name':'get_time','arguments':''}}"));
	feed(fx, CALLS("{'index':0,'function':{'arguments':'\\\"Paris\\\"}'}}"));
	feed(fx, CALLS("{'index':1,'function':{'arguments':'{\\\"tz\\\":'}}"));
	feed(fx, CALLS("{'index':1,'function':{'arguments':'\\\"CET\\\"}'}}"));
	feed(fx, FINISH("tool_calls"));
	feed(fx, USAGE);
	feed_done(fx);
}

#define ARGS_A	"{\"city\":\"Paris\"}"
#define ARGS_B	"{\"tz\":\"CET\"}"

/* Responses items never interleave: the message is finished (all its done
 * events) before the first call's output_item.added. */
static void
calls_message_done_before_first_call(void **state)
{
	struct fx *fx = *state;

	calls_stream(fx);
	assert_types(fx,
	    "response.output_item.added", "response.content_part.added",
	    "response.output_text.delta", "response.output_text.done",
	    "response.content_part.done", "response.output_item.done",
	    /* call a opens with its first piece */
	    "response.output_item.added",
	    "response.function_call_arguments.delta",
	    /* call b opens, with no piece yet */
	    "response.output_item.added",
	    "response.function_call_arguments.delta",
	    "response.function_call_arguments.delta",
	    "response.function_call_arguments.delta",
	    "response.function_call_arguments.done",
	    "response.output_item.done",
	    "response.function_call_arguments.done",
	    "response.output_item.done",
	    "response.completed");
	assert_string_equal(str(data_at(fx, 3), "text"), "Let me check.");
	assert_string_equal(str(json_object_get(data_at(fx, 5), "item"),
	    "status"), "completed");
}

/* The calls take output indexes 1 and 2 after the message's 0; each
 * added item is an in-progress function_call with empty arguments, its
 * call_id the upstream's and its name. */
static void
calls_added_items(void **state)
{
	struct fx *fx = *state;
	const json_t *a, *b;

	calls_stream(fx);
	assert_int_equal(json_integer_value(json_object_get(data_at(fx, 6),
	    "output_index")), 1);
	assert_int_equal(json_integer_value(json_object_get(data_at(fx, 8),
	    "output_index")), 2);
	a = json_object_get(data_at(fx, 6), "item");
	b = json_object_get(data_at(fx, 8), "item");
	assert_string_equal(str(a, "type"), "function_call");
	assert_string_equal(str(a, "status"), "in_progress");
	assert_string_equal(str(a, "arguments"), "");
	assert_string_equal(str(a, "call_id"), "call_a");
	assert_string_equal(str(a, "name"), "get_weather");
	assert_int_equal(strncmp(str(a, "id"), "fc_", 3), 0);
	assert_string_equal(str(b, "type"), "function_call");
	assert_string_equal(str(b, "arguments"), "");
	assert_string_equal(str(b, "call_id"), "call_b");
	assert_string_equal(str(b, "name"), "get_time");
	assert_string_not_equal(str(a, "id"), str(b, "id"));
	assert_string_not_equal(str(a, "id"),
	    str(json_object_get(data_at(fx, 0), "item"), "id"));
}

/* Each argument piece goes to its own call's item id and output index. */
static void
calls_argument_deltas_to_right_items(void **state)
{
	struct fx *fx = *state;
	const char *a, *b;
	static const struct {
		size_t		 ev;
		int		 call;	/* 0: a, 1: b */
		const char	*delta;
	} want[] = {
		{ 7, 0, "{\"city\":" }, { 9, 0, "\"Paris\"}" },
		{ 10, 1, "{\"tz\":" }, { 11, 1, "\"CET\"}" },
	};
	size_t i;

	calls_stream(fx);
	a = str(json_object_get(data_at(fx, 6), "item"), "id");
	b = str(json_object_get(data_at(fx, 8), "item"), "id");
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const json_t *d = data_at(fx, want[i].ev);

		assert_string_equal(type_at(fx, want[i].ev),
		    "response.function_call_arguments.delta");
		assert_string_equal(str(d, "item_id"), want[i].call ? b : a);
		assert_int_equal(json_integer_value(json_object_get(d,
		    "output_index")), want[i].call ? 2 : 1);
		assert_string_equal(str(d, "delta"), want[i].delta);
	}
}

/* At the end, in index order, each call's arguments.done with the whole
 * arguments, then its output_item.done: completed, call_id, name. */
static void
calls_done_in_index_order(void **state)
{
	struct fx *fx = *state;
	const char *a, *b;
	const json_t *d, *item;

	calls_stream(fx);
	a = str(json_object_get(data_at(fx, 6), "item"), "id");
	b = str(json_object_get(data_at(fx, 8), "item"), "id");
	d = data_at(fx, 12);
	assert_string_equal(str(d, "item_id"), a);
	assert_int_equal(json_integer_value(json_object_get(d, "output_index")),
	    1);
	assert_string_equal(str(d, "arguments"), ARGS_A);
	d = data_at(fx, 13);
	item = json_object_get(d, "item");
	assert_int_equal(json_integer_value(json_object_get(d, "output_index")),
	    1);
	assert_string_equal(str(item, "id"), a);
	assert_string_equal(str(item, "type"), "function_call");
	assert_string_equal(str(item, "status"), "completed");
	assert_string_equal(str(item, "call_id"), "call_a");
	assert_string_equal(str(item, "name"), "get_weather");
	assert_string_equal(str(item, "arguments"), ARGS_A);
	d = data_at(fx, 14);
	assert_string_equal(str(d, "item_id"), b);
	assert_int_equal(json_integer_value(json_object_get(d, "output_index")),
	    2);
	assert_string_equal(str(d, "arguments"), ARGS_B);
	d = data_at(fx, 15);
	item = json_object_get(d, "item");
	assert_int_equal(json_integer_value(json_object_get(d, "output_index")),
	    2);
	assert_string_equal(str(item, "id"), b);
	assert_string_equal(str(item, "status"), "completed");
	assert_string_equal(str(item, "call_id"), "call_b");
	assert_string_equal(str(item, "name"), "get_time");
	assert_string_equal(str(item, "arguments"), ARGS_B);
}

/* response.completed holds the three items, in output-index order, as
 * their output_item.done events gave them. */
static void
calls_completed_output(void **state)
{
	struct fx *fx = *state;
	const json_t *r, *out;

	calls_stream(fx);
	r = last_response(fx);
	assert_string_equal(str(r, "status"), "completed");
	out = json_object_get(r, "output");
	assert_int_equal(json_array_size(out), 3);
	assert_true(json_equal(json_array_get(out, 0),
	    json_object_get(data_at(fx, 5), "item")));
	assert_true(json_equal(json_array_get(out, 1),
	    json_object_get(data_at(fx, 13), "item")));
	assert_true(json_equal(json_array_get(out, 2),
	    json_object_get(data_at(fx, 15), "item")));
	assert_string_equal(str(json_array_get(out, 0), "type"), "message");
	assert_string_equal(str(json_array_get(out, 1), "call_id"), "call_a");
	assert_string_equal(str(json_array_get(out, 2), "call_id"), "call_b");
}

/* A call whose first chunk has no id (some servers) still gets a call_id,
 * generated (call_...), the same from added to completed. */
static void
call_without_id_gets_call_id(void **state)
{
	struct fx *fx = *state;
	const char *id;
	size_t done;

	feed(fx, CALLS("{'index':0,'type':'function','function':{'name':'f',"
	    "'arguments':'{}'}}"));
	feed(fx, FINISH("tool_calls"));
	feed_done(fx);
	assert_string_equal(type_at(fx, 0), "response.output_item.added");
	id = str(json_object_get(data_at(fx, 0), "item"), "call_id");
	assert_non_null(id);
	assert_int_equal(strncmp(id, "call_", 5), 0);
	assert_true(strlen(id) > 5);
	/* The message never opened: the call is output 0. */
	assert_int_equal(json_integer_value(json_object_get(data_at(fx, 0),
	    "output_index")), 0);
	done = find(fx, "response.output_item.done", 0);
	assert_string_equal(str(json_object_get(data_at(fx, done), "item"),
	    "call_id"), id);
	assert_string_equal(str(json_array_get(json_object_get(last_response(
	    fx), "output"), 0), "call_id"), id);
}

/* ================================================== 5. cut answers */

/* finish_reason "length": the message is incomplete, and the response
 * ends with response.incomplete, reason max_output_tokens. */
static void
length_is_incomplete(void **state)
{
	struct fx *fx = *state;
	const json_t *r;
	size_t done;

	feed(fx, ROLE);
	feed(fx, TEXT("Once upon"));
	feed(fx, FINISH("length"));
	feed(fx, USAGE);
	feed_done(fx);
	done = find(fx, "response.output_item.done", 0);
	assert_string_equal(str(json_object_get(data_at(fx, done), "item"),
	    "status"), "incomplete");
	assert_string_equal(type_at(fx, fx->r.n - 1), "response.incomplete");
	assert_string_equal(fx->r.ev[fx->r.n - 1].name, "response.incomplete");
	r = last_response(fx);
	assert_string_equal(str(r, "status"), "incomplete");
	assert_json(json_object_get(r, "incomplete_details"),
	    "{'reason':'max_output_tokens'}");
	assert_string_equal(str(json_array_get(json_object_get(r, "output"), 0),
	    "status"), "incomplete");
	assert_non_null(json_object_get(r, "usage"));
	/* No response.completed besides. */
	for (done = 0; done < fx->r.n; done++)
		assert_string_not_equal(type_at(fx, done), "response.completed");
}

/* finish_reason "content_filter": incomplete too, with its own reason. */
static void
content_filter_is_incomplete(void **state)
{
	struct fx *fx = *state;
	const json_t *r;
	size_t done;

	feed(fx, TEXT("Some"));
	feed(fx, FINISH("content_filter"));
	feed_done(fx);
	done = find(fx, "response.output_item.done", 0);
	assert_string_equal(str(json_object_get(data_at(fx, done), "item"),
	    "status"), "incomplete");
	assert_string_equal(type_at(fx, fx->r.n - 1), "response.incomplete");
	r = last_response(fx);
	assert_string_equal(str(r, "status"), "incomplete");
	assert_json(json_object_get(r, "incomplete_details"),
	    "{'reason':'content_filter'}");
}

/* A server's reasoning_content before the answer is a reasoning item of
 * its own (item added, reasoning_text part added, deltas, done events),
 * finished before the message starts; the completed output holds both in
 * order. */
static void
reasoning_is_an_item(void **state)
{
	struct fx *fx = *state;
	const json_t *r, *out;
	json_t *item;
	size_t added, msg;

	feed(fx, CHUNK("{'role':'assistant','reasoning_content':'I think'}",
	    "null"));
	feed(fx, CHUNK("{'reasoning_content':', so'}", "null"));
	feed(fx, TEXT("Yes"));
	feed(fx, FINISH("stop"));
	feed_done(fx);
	added = find(fx, "response.output_item.added", 0);
	assert_string_equal(str(json_object_get(data_at(fx, added), "item"),
	    "type"), "reasoning");
	assert_string_equal(type_at(fx, added + 1),
	    "response.content_part.added");
	assert_string_equal(type_at(fx, added + 2),
	    "response.reasoning_text.delta");
	assert_string_equal(str(data_at(fx, added + 3), "delta"), ", so");
	assert_string_equal(str(data_at(fx, find(fx,
	    "response.reasoning_text.done", 0)), "text"), "I think, so");
	msg = find(fx, "response.output_item.added", added + 1);
	assert_true(find(fx, "response.output_item.done", 0) < msg);
	r = last_response(fx);
	out = json_object_get(r, "output");
	assert_int_equal(json_array_size(out), 2);
	item = json_deep_copy(json_array_get(out, 0));
	assert_true(strncmp(str(item, "id"), "rs_", 3) == 0);
	json_object_del(item, "id");
	assert_json(item, "{'type':'reasoning','summary':[],'content':[{'type':"
	    "'reasoning_text','text':'I think, so'}]}");
	json_decref(item);
	assert_string_equal(str(json_array_get(out, 1), "type"), "message");
}

/* A tool call cut by the length limit may have cut arguments: its item is
 * incomplete too; arguments.done names the function. */
static void
cut_call_is_incomplete(void **state)
{
	struct fx *fx = *state;
	size_t done;

	feed(fx, CALLS("{'index':0,'id':'call_a','type':'function',"
	    "'function':{'name':'f','arguments':'{\\\"x'}}"));
	feed(fx, FINISH("length"));
	feed_done(fx);
	done = find(fx, "response.function_call_arguments.done", 0);
	assert_string_equal(str(data_at(fx, done), "name"), "f");
	assert_string_equal(str(json_object_get(data_at(fx, find(fx,
	    "response.output_item.done", 0)), "item"), "status"), "incomplete");
}

/* ================================================== 6. odd streams */

/* An error chunk mid-stream goes to fn as it came (the turn fails on it:
 * Chat's error shape is also what the SDKs raise on), and the response is
 * then never reported completed. */
static void
error_chunk_passed_on_no_completed(void **state)
{
	struct fx *fx = *state;
	char *err = tu_q("{'error':{'message':'overloaded','type':"
	    "'server_error','param':null,'code':null}}");
	size_t i, at;

	feed(fx, ROLE);
	feed(fx, TEXT("Hel"));
	at = fx->r.n;
	feed_data(fx, err, strlen(err));
	assert_int_equal(fx->r.n, at + 1);
	assert_false(fx->r.ev[at].null);
	assert_string_equal(fx->r.ev[at].name, "");
	assert_int_equal(fx->r.ev[at].datalen, strlen(err));
	assert_memory_equal(fx->r.ev[at].data, err, strlen(err));
	assert_int_equal(fx->r.ev[at].rawlen, strlen(err) + 8);
	assert_memory_equal(fx->r.ev[at].raw + 6, err, strlen(err));
	feed_done(fx);
	sg_bridge_end(fx->b);
	for (i = 0; i < fx->r.n; i++) {
		if (i == at)
			continue;
		assert_string_not_equal(type_at(fx, i), "response.completed");
		assert_string_not_equal(type_at(fx, i), "response.incomplete");
	}
	free(err);
}

/* What is not a chunk is ignored, without an event and without breaking
 * the stream: data that is not JSON, JSON that is not an object, empty
 * data, a comment-only block, an object without choices. */
static void
garbage_ignored(void **state)
{
	struct fx *fx = *state;
	struct sg_sse_event comment = { ": keepalive\n\n", 13, "", "", 0, 0 };

	feed(fx, ROLE);
	feed_data(fx, "not json", 8);
	feed_data(fx, "{\"choices\":[{\"delta\":{\"content\":\"x", 34);
	feed_data(fx, "[1,2]", 5);
	feed_data(fx, "\"text\"", 6);
	feed_data(fx, "", 0);
	assert_int_equal(sg_bridge_event(fx->b, &comment), 0);
	feed(fx, "{}");
	feed(fx, "{'choices':null,'usage':null}");
	feed(fx, "{'choices':[{'delta':null}]}");
	feed(fx, "{'error':null,'choices':[]}");
	assert_int_equal(fx->r.n, 0);
	feed(fx, TEXT("Hel"));
	feed(fx, TEXT("lo"));
	feed(fx, FINISH("stop"));
	feed_done(fx);
	assert_types(fx, "response.output_item.added",
	    "response.content_part.added", "response.output_text.delta",
	    "response.output_text.delta", "response.output_text.done",
	    "response.content_part.done", "response.output_item.done",
	    "response.completed");
	assert_string_equal(str(data_at(fx, 4), "text"), "Hello");
}

/* A NULL event (time passing, for keepalives) is passed on as NULL, and
 * is not counted as a Responses event. */
static void
null_event_passed_on(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(sg_bridge_event(fx->b, NULL), 0);
	assert_int_equal(fx->r.n, 1);
	assert_true(fx->r.ev[0].null);
	feed(fx, TEXT("a"));
	assert_int_equal(sg_bridge_event(fx->b, NULL), 0);
	assert_int_equal(fx->r.n, 5);
	assert_true(fx->r.ev[4].null);
	feed(fx, TEXT("b"));
	/* The sequence goes on from the last real event. */
	assert_int_equal(json_integer_value(json_object_get(data_at(fx, 5),
	    "sequence_number")), 3);
}

/* Without a usage chunk (an upstream that ignores include_usage) the
 * response has no usage key at all, not a made-up zero one. */
static void
no_usage_no_usage_key(void **state)
{
	struct fx *fx = *state;
	const json_t *r;

	feed(fx, TEXT("Hi"));
	feed(fx, FINISH("stop"));
	feed_done(fx);
	r = last_response(fx);
	assert_string_equal(str(r, "status"), "completed");
	assert_null(json_object_get(r, "usage"));
}

/* A stream that ends without [DONE] (older servers): sg_bridge_end
 * finishes the open items and completes the response, once. */
static void
end_without_done_completes(void **state)
{
	struct fx *fx = *state;
	const json_t *r;
	size_t n;

	feed(fx, ROLE);
	feed(fx, TEXT("Hel"));
	feed(fx, TEXT("lo"));
	feed(fx, CALLS("{'index':0,'id':'call_x','type':'function','function':"
	    "{'name':'f','arguments':'{}'}}"));
	assert_int_equal(fx->r.n, 9);
	sg_bridge_end(fx->b);
	assert_types(fx, "response.output_item.added",
	    "response.content_part.added", "response.output_text.delta",
	    "response.output_text.delta", "response.output_text.done",
	    "response.content_part.done", "response.output_item.done",
	    "response.output_item.added",
	    "response.function_call_arguments.delta",
	    "response.function_call_arguments.done",
	    "response.output_item.done", "response.completed");
	r = last_response(fx);
	assert_string_equal(str(r, "status"), "completed");
	assert_int_equal(json_array_size(json_object_get(r, "output")), 2);
	n = fx->r.n;
	sg_bridge_end(fx->b);
	assert_int_equal(fx->r.n, n);
}

#define FX(t)	cmocka_unit_test_setup_teardown(t, fx_setup, fx_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(req_instructions_and_string_input),
		cmocka_unit_test(req_user_text_and_image_parts),
		cmocka_unit_test(req_assistant_text_and_developer_role),
		cmocka_unit_test(req_function_calls_one_assistant_message),
		cmocka_unit_test(req_function_call_output_tool_message),
		cmocka_unit_test(req_reasoning_dropped),
		cmocka_unit_test(req_tools_function_only),
		cmocka_unit_test(req_tool_choice_forms),
		cmocka_unit_test(req_settings_renamed_and_passed),
		cmocka_unit_test(req_text_format),
		cmocka_unit_test(req_always_streams_with_usage),

		cmocka_unit_test(check_refuses_unknown_keys),
		cmocka_unit_test(check_takes_background),
		cmocka_unit_test(check_refuses_truncation_auto),
		cmocka_unit_test(check_refuses_top_logprobs),
		cmocka_unit_test(check_refuses_reasoning_summary),
		cmocka_unit_test(check_refuses_include_logprobs),
		cmocka_unit_test(check_refuses_web_search_tool),
		cmocka_unit_test(check_refuses_other_tool_choice),
		cmocka_unit_test(check_refuses_input_file),
		cmocka_unit_test(check_refuses_image_by_file_id),
		cmocka_unit_test(check_refuses_image_in_tool_output),
		cmocka_unit_test(check_refuses_unknown_item_type),
		cmocka_unit_test(check_refuses_incomplete_items),
		cmocka_unit_test(check_passes_defaults),
		cmocka_unit_test(check_passes_supported),
		cmocka_unit_test(check_image_in_developer_message_not_dropped),

		FX(text_event_order),
		FX(text_names_and_sequence),
		FX(text_one_item_id),
		FX(text_done_events),
		FX(text_completed_response),
		FX(text_end_after_done_sends_nothing),

		FX(calls_message_done_before_first_call),
		FX(calls_added_items),
		FX(calls_argument_deltas_to_right_items),
		FX(calls_done_in_index_order),
		FX(calls_completed_output),
		FX(call_without_id_gets_call_id),

		FX(length_is_incomplete),
		FX(content_filter_is_incomplete),
		FX(reasoning_is_an_item),
		FX(cut_call_is_incomplete),

		FX(error_chunk_passed_on_no_completed),
		FX(garbage_ignored),
		FX(null_event_passed_on),
		FX(no_usage_no_usage_key),
		FX(end_without_done_completes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
