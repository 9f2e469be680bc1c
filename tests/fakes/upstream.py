#!/usr/bin/env python3
"""Fake OpenAI-compatible model server ("the upstream") for sandgate tests and benchmarks.

Standard library only. Serves POST /v1/chat/completions, POST /v1/responses and GET /v1/models
in OpenAI's wire formats (reference: openai-shapes.md §1, §3-§7; output validates against the
OpenAPI spec), and injects faults chosen by the request's `model`:

  <any other name>   answer "echo: <last user text>"      fault-500 / fault-429 / fault-400
  verbatim           answer the last user text itself (a JSON answer, say)
  slow-N             sleep N s, then answer                json-error-stream  400 JSON even if streaming
  slowstream-N       stream with N s between events        drop-N  cut the stream after N events
  ci-*               scripted tool-calling models: see SCRIPTED below
  nostate-<model>    <model>, as a stateless upstream (vLLM, llama.cpp, Ollama): see STATE below
  chatonly-<model>   <model> on /v1/chat/completions only; /v1/responses answers llama.cpp's 404
                     {"error":{"code":404,"message":"File Not Found","type":"not_found_error"}};
                     chatonly-ci-reason streams reasoning_content "thinking" before each turn

A streamed chat answer honours max_tokens (a word-ish piece is a token): cut there, it ends with
finish_reason "length".

The ci-* models play the model side of the code_interpreter emulation loop: they call the
request's `litellm_code_execution` function tool (or answer in text) depending on how many tool
results the conversation already holds (Responses: `function_call_output` input items; Chat:
`role: "tool"` messages), on both endpoints, streaming or not.

STATE (POST /v1/responses only; as OpenAI keeps it, but in memory, per fake process, and only the
newest --max-responses responses):
  1. Every answer whose request has `store` other than false is persisted: its response id ->
     the full (expanded, see 2) input items and the output items; every output item id -> item.
  2. `previous_response_id` must name a persisted response, else 400 (param
     previous_response_id, code previous_response_not_found). The model then sees the expanded
     input: that response's full input + its output + this request's input (`instructions` are
     not carried over). A string `input` is one user message.
  3. `{"type":"item_reference","id":...}` is replaced by the persisted item; unknown -> 400
     "Item with id '<id>' not found." (param input, code null).
  4. An input item of an output type that carries an `id` (an assistant `message`,
     `function_call`, `reasoning`, `code_interpreter_call` -- which this fake never issues, so
     one with an id is always refused) must be one this fake persisted, else 400 "Item with id
     '<id>' not found. Items are not persisted when `store` is set to false. ..." (param input).
     As OpenAI, a `reasoning` item carrying `encrypted_content` is accepted anyway.
  5. In the expanded input, every `function_call` needs a `function_call_output` with its
     `call_id` later on, else 400 "No tool output found for function call <call_id>."; an output
     with no earlier call -> 400 "No tool call found for function call output with call_id
     <call_id>." (both param input, code null).
  6. `nostate-<model>` behaves as <model> but persists nothing: `previous_response_id` and
     `item_reference` always get the not-found 400s of 2 and 3; item ids are ignored (rule 4
     off); rule 5 still holds. (On /v1/chat/completions the prefix is simply dropped.)
  All scripted models (and the echo) script on the EXPANDED input, never on the body as sent.
  The recorder keeps the body exactly as received.

Every /v1 exchange is recorded; GET /__requests returns {"requests": [{"method", "path",
"headers" (lower-cased), "body" (parsed JSON or null), "raw_body", "response_status",
"response_body" (body text as sent; for SSE the event stream without HTTP chunk framing)}]}
and POST /__reset clears the record (not the persisted responses and items).

Usage: upstream.py [--host 127.0.0.1] [--port 0] [--port-file PATH] [--api-key KEY] [--quiet]
                   [--max-records N] [--max-responses N]
"""
import argparse
import collections
import ipaddress
import json
import math
import os
import re
import secrets
import signal
import socket
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DISCONNECTS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)
FINGERPRINT = "fp_fake0a1b2c"
LISTED_MODELS = ["echo", "gpt-4.1-mini", "slow-2", "slow-0.5", "slowstream-1", "drop-3",
                 "fault-500", "fault-429", "fault-400", "json-error-stream",
                 "ci-primes", "ci-two", "ci-raise", "ci-endless", "ci-repeat", "ci-reason",
                 "ci-clientfn", "ci-badargs", "ci-args", "ci-turn", "ci-convo", "nostate-ci-convo"]


def dumps(obj):
    # Compact, non-ASCII kept verbatim: the gateway must relay UTF-8 byte for byte.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def rand_id(prefix, nhex=48):
    return prefix + secrets.token_hex((nhex + 1) // 2)[:nhex]


def err(message, etype="invalid_request_error", param=None, code=None):
    return {"error": {"message": message, "type": etype, "param": param, "code": code}}


# model -> (status, body, extra headers). Errors are always plain JSON, even when the
# request asked for a stream: OpenAI reports pre-stream failures as ordinary HTTP errors.
FAULTS = {
    "fault-500": (500, err("The server had an error while processing your request. Sorry about that!",
                           "server_error"), {}),
    "fault-429": (429, err("Rate limit reached for fault-429 in organization org-fake on requests per min "
                           "(RPM): Limit 3, Used 3, Requested 1. Please try again in 1s. Visit "
                           "https://platform.openai.com/account/rate-limits to learn more.",
                           "requests", None, "rate_limit_exceeded"), {"retry-after": "1"}),
    "fault-400": (400, err("Invalid value for 'temperature': expected a number between 0 and 2.",
                           "invalid_request_error", "temperature", "invalid_value"), {}),
    "json-error-stream": (400, err("Streaming is not supported for this model (fake json-error-stream).",
                                   "invalid_request_error", "stream", "unsupported_value"), {}),
}


def model_arg(model, prefix):
    """The N of `prefix-N` as a float (finite, >= 0), or None."""
    if not model.startswith(prefix):
        return None
    try:
        n = float(model[len(prefix):])
    except ValueError:
        return None
    return n if math.isfinite(n) and n >= 0 else None


def split_text(text):
    """Word-ish pieces (whitespace kept, so they join back to `text`), at least 3 of them."""
    pieces = re.findall(r"\S+\s*|\s+", text)
    while len(pieces) < 3:
        i = max(range(len(pieces)), key=lambda k: len(pieces[k]), default=None)
        if i is None or len(pieces[i]) < 2:
            break
        half = len(pieces[i]) // 2
        pieces[i:i + 1] = [pieces[i][:half], pieces[i][half:]]
    return pieces


def parts_text(content, kinds):
    """A message content: a string, or an array whose parts of type in `kinds` are joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content
                       if isinstance(p, dict) and p.get("type") in kinds and isinstance(p.get("text"), str))
    return ""


def last_user(items, kinds):
    for m in reversed(items if isinstance(items, list) else []):
        if isinstance(m, dict) and m.get("role") == "user":
            return parts_text(m.get("content"), kinds)
    return ""


def ntokens(text):
    return max(1, len(text.split()))


# ---------------------------------------------------------------- Chat Completions (§6)

def chat_usage(prompt, pieces):
    p, c = ntokens(prompt), len(pieces)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}


def chat_completion(model, prompt, text, usage=None):
    return {"id": rand_id("chatcmpl-", 29), "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0,
                         "message": {"role": "assistant", "content": text, "refusal": None, "annotations": []},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": usage or chat_usage(prompt, split_text(text)),
            "service_tier": "default", "system_fingerprint": FINGERPRINT}


def chat_frames(req, model, prompt, text, usage=None):
    """SSE frames (data-only, §6.3), ending with `data: [DONE]`."""
    opts = req.get("stream_options")
    with_usage = isinstance(opts, dict) and opts.get("include_usage") is True
    head = {"id": rand_id("chatcmpl-", 29), "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "service_tier": "default", "system_fingerprint": FINGERPRINT}
    pieces = split_text(text)

    def chunk(delta, finish=None):
        c = dict(head, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])
        if with_usage:  # the usage key exists only when include_usage was asked for
            c["usage"] = None
        return c

    # max_tokens: a piece is a token; an answer cut short ends with finish_reason "length".
    cap = req.get("max_tokens")
    finish = "stop"
    if isinstance(cap, int) and not isinstance(cap, bool) and 0 < cap < len(pieces):
        pieces, finish = pieces[:cap], "length"
    # role is sent once only: the Python SDK concatenates repeated string fields (§6.4).
    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    chunks += [chunk({"content": p}) for p in pieces]
    chunks.append(chunk({}, finish))
    if with_usage:
        chunks.append(dict(head, choices=[], usage=usage or chat_usage(prompt, pieces)))
    return ["data: %s\n\n" % dumps(c) for c in chunks] + ["data: [DONE]\n\n"]


# ---------------------------------------------------------------- Responses (§3-§5)

def response_obj(req, model, rid, created, output, usage=None):
    """A full `response` object. usage=None means the in-progress snapshot."""
    def pick(key, default, types):
        v = req.get(key, default)
        return v if v is None or isinstance(v, types) else default

    reasoning = req.get("reasoning") if isinstance(req.get("reasoning"), dict) else {}
    done = usage is not None
    r = {"id": rid, "object": "response", "created_at": created,
         "status": "completed" if done else "in_progress",
         "background": bool(req.get("background", False)),
         "completed_at": int(time.time()) if done else None,
         "error": None, "incomplete_details": None,
         "instructions": pick("instructions", None, (str, list)),
         "max_output_tokens": pick("max_output_tokens", None, int),
         "max_tool_calls": pick("max_tool_calls", None, int),
         "model": model, "output": output,
         "parallel_tool_calls": bool(req.get("parallel_tool_calls", True)),
         "previous_response_id": pick("previous_response_id", None, str),
         "prompt_cache_key": pick("prompt_cache_key", None, str),
         "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
         "safety_identifier": pick("safety_identifier", None, str),
         "service_tier": "default" if done else "auto",
         "store": bool(req.get("store", True)),
         "temperature": pick("temperature", 1, (int, float)),
         "text": req["text"] if isinstance(req.get("text"), dict) else {"format": {"type": "text"},
                                                                          "verbosity": "medium"},
         "tool_choice": pick("tool_choice", "auto", (str, dict)) or "auto",
         "tools": pick("tools", [], list) or [],
         "top_logprobs": pick("top_logprobs", 0, int),
         "top_p": pick("top_p", 1, (int, float)),
         "truncation": pick("truncation", "disabled", str) or "disabled",
         "metadata": pick("metadata", {}, dict) or {}}
    # Real OpenAI sends "usage": null / "user": null, but the spec types both as non-nullable
    # (ResponseUsage, string), so absent values are omitted to keep the output schema-valid.
    if done:
        r["usage"] = usage
    if isinstance(req.get("user"), str):
        r["user"] = req["user"]
    return r


def responses_usage(prompt, pieces):
    i, o = ntokens(prompt), len(pieces)
    return {"input_tokens": i, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": o, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": i + o}


def responses_prompt(req):
    inp = req.get("input")
    return inp if isinstance(inp, str) else last_user(inp, ("input_text", "text"))


def text_part(text):
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def message_item(mid, text, done):
    return {"id": mid, "type": "message", "status": "completed" if done else "in_progress",
            "role": "assistant", "content": [text_part(text)] if done else []}


def response_full(req, model, prompt, text, rid, mid):
    item = message_item(mid, text, True)
    return response_obj(req, model, rid, int(time.time()), [item],
                        responses_usage(prompt, split_text(text)))


def responses_frames(req, model, prompt, text, rid, mid):
    """SSE frames (`event:` + `data:`, §5.1) of the official text-answer sequence (§5.2),
    generated lazily as they are sent."""
    created = int(time.time())
    pieces = split_text(text)
    snapshot = response_obj(req, model, rid, created, [])
    loc = {"item_id": mid, "output_index": 0, "content_index": 0}
    events = [("response.created", {"response": snapshot}),
              ("response.in_progress", {"response": snapshot}),
              ("response.output_item.added", {"output_index": 0, "item": message_item(mid, "", False)}),
              ("response.content_part.added", dict(loc, part=text_part("")))]
    events += [("response.output_text.delta", dict(loc, delta=p, logprobs=[])) for p in pieces]
    events += [("response.output_text.done", dict(loc, text=text, logprobs=[])),
               ("response.content_part.done", dict(loc, part=text_part(text))),
               ("response.output_item.done", {"output_index": 0, "item": message_item(mid, text, True)})]
    events.append(("response.completed", None))  # built when about to be sent: real completed_at
    for seq, (etype, fields) in enumerate(events):
        if fields is None:
            fields = {"response": response_obj(req, model, rid, created, [message_item(mid, text, True)],
                                               responses_usage(prompt, pieces))}
        yield "event: %s\ndata: %s\n\n" % (etype, dumps(dict({"type": etype, "sequence_number": seq}, **fields)))


# ---------------------------------------------------------------- Scripted tool-calling models
#
# Each ci-* model looks at the conversation it is sent and either calls functions or answers in
# text. n = number of tool results in the request, last = the newest one's text ("none" if n == 0).
# Common rule first: tool_choice "none", or no `litellm_code_execution` function tool in `tools`
# -> text "final: <last>" (ci-endless / ci-repeat have their own tool_choice "none" texts).
#
#   ci-primes    n=0: code "print(2*3*5*7*11*13)"   else "The product of the first six primes is <last.strip()>"
#   ci-two       n=0: code "x = 6*7"   n=1: code "print(x + 1)"   else "Done: <last.strip()>"
#   ci-raise     n=0: code "1/0"                     else "The code failed: <last>"
#   ci-endless   always code "print(<n>)";  tool_choice "none": "gave up after <n>"
#   ci-repeat    always code "print('same')";  tool_choice "none": "stopped repeating"
#   ci-reason    as ci-primes; on /v1/responses every turn starts with a reasoning item
#                (summary "thinking"; encrypted_content only if include has reasoning.encrypted_content)
#   ci-clientfn  n=0: two calls in one turn: the code tool ("print(1)") and the first other function
#                tool with {"city":"Paris"} (only the code call if there is none)   else as ci-primes
#   ci-badargs   n=0: the code tool with arguments '{"source": 1}' (no "code")   else "bad args: <last>"
#   ci-args      n=0: the code tool with the last user text, verbatim, as its arguments (a test
#                writes any arguments, malformed or hostile)   else "args result: <last>"
#   ci-turn      as ci-args, but it calls whenever the newest item of the conversation is a user
#                message (a follow-up that replays earlier calls and results still runs its code)
#   ci-convo     a multi-turn conversation (Responses; Chat alike with its messages). U = user
#                messages in the whole (expanded) input, C = its function_call_output items;
#                looking only at the items after the last user message:
#                  no tool output there yet -> the code tool with code "print('turn U')"; and if
#                    another function tool is declared and the last user text has the word
#                    "weather", also the first such function with {"city":"Paris"} (a mixed turn)
#                  else -> "turn U: <those outputs, in order, each stripped, joined by ' | '>;
#                    seen users=U outputs=C"
#   ci-cut       n=0: code "print('ran')"   else the upstream breaks mid-turn: a stream is cut after 3
#                events (as drop-3), a JSON answer is truncated
#
# Code calls carry arguments {"code":"<code>"} (compact JSON). Usage of every turn:
# prompt/input tokens 10*(n+1), completion/output tokens 5+n (ci-reason on Responses: 2 of them
# reasoning tokens).

CODE_TOOL = "litellm_code_execution"
SCRIPTED = ("ci-primes", "ci-two", "ci-raise", "ci-endless", "ci-repeat", "ci-reason", "ci-clientfn",
            "ci-badargs", "ci-args", "ci-turn", "ci-convo", "ci-cut")


def function_tools(req, chat):
    """Names of the request's function tools, in order (Chat nests them under `function`)."""
    names = []
    for t in req.get("tools") if isinstance(req.get("tools"), list) else []:
        if not isinstance(t, dict) or t.get("type") != "function":
            continue
        holder = t.get("function") if chat else t
        if isinstance(holder, dict) and isinstance(holder.get("name"), str):
            names.append(holder["name"])
    return names


def tool_results(req, chat):
    """Texts of the tool results already in the conversation, oldest first."""
    if chat:
        items = req.get("messages")
        return [parts_text(m.get("content"), ("text",)) for m in (items if isinstance(items, list) else [])
                if isinstance(m, dict) and m.get("role") == "tool"]
    items = req.get("input")
    return [parts_text(m.get("output"), ("input_text", "output_text", "text"))
            for m in (items if isinstance(items, list) else [])
            if isinstance(m, dict) and m.get("type") == "function_call_output"]


def script_turn(model, req, chat):
    """(calls, text, n): calls is a list of (function name, arguments JSON string), or None when
    the turn is a text answer `text`; n is the number of tool results seen."""
    results = tool_results(req, chat)
    n = len(results)
    last = results[-1] if results else "none"
    names = function_tools(req, chat)
    none = req.get("tool_choice") == "none"

    def code(c):
        return [(CODE_TOOL, dumps({"code": c}))], None, n

    def say(t):
        return None, t, n

    if none and model == "ci-endless":
        return say("gave up after %d" % n)
    if none and model == "ci-repeat":
        return say("stopped repeating")
    if none or CODE_TOOL not in names:
        return say("final: " + last)
    if model == "ci-two":
        return code("x = 6*7") if n == 0 else code("print(x + 1)") if n == 1 else say("Done: " + last.strip())
    if model == "ci-raise":
        return code("1/0") if n == 0 else say("The code failed: " + last)
    if model == "ci-endless":
        return code("print(%d)" % n)
    if model == "ci-repeat":
        return code("print('same')")
    if model == "ci-badargs":
        return ([(CODE_TOOL, '{"source": 1}')], None, n) if n == 0 else say("bad args: " + last)
    if model == "ci-args":
        args = last_user(req.get("messages"), ("text",)) if chat else responses_prompt(req)
        return ([(CODE_TOOL, args)], None, n) if n == 0 else say("args result: " + last)
    if model == "ci-turn":
        items = req.get("messages") if chat else req.get("input")
        items = items if isinstance(items, list) else [{"role": "user"}]
        newest = items[-1] if items and isinstance(items[-1], dict) else {}
        args = last_user(req.get("messages"), ("text",)) if chat else responses_prompt(req)
        return ([(CODE_TOOL, args)], None, n) if newest.get("role") == "user" else say("args result: " + last)
    if model == "ci-convo":
        return convo_turn(req, chat, names, n)
    if model == "ci-cut":
        return code("print('ran')") if n == 0 else say("never delivered: " + last)
    if model == "ci-clientfn" and n == 0:
        calls = [(CODE_TOOL, dumps({"code": "print(1)"}))]
        other = [x for x in names if x != CODE_TOOL]
        if other:
            calls.append((other[0], dumps({"city": "Paris"})))
        return calls, None, n
    # ci-primes, ci-reason, ci-clientfn with results
    return code("print(2*3*5*7*11*13)") if n == 0 else say(
        "The product of the first six primes is " + last.strip())


def convo_turn(req, chat, names, n):
    """ci-convo: see SCRIPTED above."""
    items = req.get("messages") if chat else req.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    items = [m for m in (items if isinstance(items, list) else []) if isinstance(m, dict)]
    users = [i for i, m in enumerate(items) if m.get("role") == "user" and m.get("type", "message") == "message"]
    u = len(users)
    tail = items[users[-1] + 1:] if users else items
    if chat:
        outs = [parts_text(m.get("content"), ("text",)) for m in tail if m.get("role") == "tool"]
    else:
        outs = [parts_text(m.get("output"), ("input_text", "output_text", "text")) for m in tail
                if m.get("type") == "function_call_output"]
    if outs:
        return None, "turn %d: %s; seen users=%d outputs=%d" % (
            u, " | ".join(o.strip() for o in outs), u, n), n
    calls = [(CODE_TOOL, dumps({"code": "print('turn %d')" % u}))]
    kinds = ("text",) if chat else ("input_text", "text")
    other = [x for x in names if x != CODE_TOOL]
    if other and re.search(r"\bweather\b", last_user(items, kinds), re.IGNORECASE):
        calls.append((other[0], dumps({"city": "Paris"})))
    return calls, None, n


def split_args(args, size=5):
    """Arguments JSON in pieces of `size` characters (at least 3 pieces when possible)."""
    size = max(1, min(size, len(args) // 3 or 1))
    return [args[i:i + size] for i in range(0, len(args), size)] or [""]


def scripted_chat_usage(n):
    p, c = 10 * (n + 1), 5 + n
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}


def scripted_responses_usage(n, reasoning):
    i, o = 10 * (n + 1), 5 + n
    return {"input_tokens": i, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": o, "output_tokens_details": {"reasoning_tokens": 2 if reasoning else 0},
            "total_tokens": i + o}


def chat_tool_calls(calls):
    return [{"id": rand_id("call_", 24), "type": "function", "function": {"name": name, "arguments": args}}
            for name, args in calls]


def chat_calls_completion(model, calls, usage):
    return {"id": rand_id("chatcmpl-", 29), "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0,
                         "message": {"role": "assistant", "content": None, "refusal": None, "annotations": [],
                                     "tool_calls": chat_tool_calls(calls)},
                         "logprobs": None, "finish_reason": "tool_calls"}],
            "usage": usage, "service_tier": "default", "system_fingerprint": FINGERPRINT}


def chat_calls_frames(req, model, calls, usage):
    """Tool-call stream (§6.3): a call's first delta has id, type, name and empty arguments; later
    deltas only index + arguments pieces; finish_reason "tool_calls"; optional usage chunk; [DONE]."""
    opts = req.get("stream_options")
    with_usage = isinstance(opts, dict) and opts.get("include_usage") is True
    head = {"id": rand_id("chatcmpl-", 29), "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "service_tier": "default", "system_fingerprint": FINGERPRINT}

    def chunk(delta, finish=None):
        c = dict(head, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])
        if with_usage:
            c["usage"] = None
        return c

    chunks = []
    for index, call in enumerate(chat_tool_calls(calls)):
        first = {"index": index, "id": call["id"], "type": "function",
                 "function": {"name": call["function"]["name"], "arguments": ""}}
        if index == 0:
            chunks.append(chunk({"role": "assistant", "content": None, "tool_calls": [first], "refusal": None}))
        else:
            chunks.append(chunk({"tool_calls": [first]}))
        chunks += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                   for piece in split_args(call["function"]["arguments"])]
    chunks.append(chunk({}, "tool_calls"))
    if with_usage:
        chunks.append(dict(head, choices=[], usage=usage))
    return ["data: %s\n\n" % dumps(c) for c in chunks] + ["data: [DONE]\n\n"]


def reasoning_frame(model):
    """A Chat server's reasoning before its answer, as vLLM and llama.cpp stream it."""
    c = {"id": rand_id("chatcmpl-", 29), "object": "chat.completion.chunk", "created": int(time.time()),
         "model": model, "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "thinking"},
                                      "logprobs": None, "finish_reason": None}]}
    return "data: %s\n\n" % dumps(c)


def echo_tools(req):
    """The request with its function tools completed the way OpenAI echoes them (`strict` and
    `parameters` are required in the spec's FunctionTool; an omitted `strict` is echoed as true)."""
    tools = req.get("tools")
    if not isinstance(tools, list):
        return req
    fixed = []
    for t in tools:
        if isinstance(t, dict) and t.get("type") == "function":
            t = dict(t)
            t.setdefault("parameters", None)
            t.setdefault("strict", True)
        fixed.append(t)
    return dict(req, tools=fixed)


def responses_turn_items(model, req, calls, text):
    """The finished output items of one scripted Responses turn."""
    items = []
    if model == "ci-reason":
        item = {"id": rand_id("rs_"), "type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]}
        include = req.get("include")
        if isinstance(include, list) and "reasoning.encrypted_content" in include:
            item["encrypted_content"] = rand_id("enc_", 64)
        items.append(item)
    if calls is None:
        items.append(message_item(rand_id("msg_"), text, True))
    else:
        items += [{"id": rand_id("fc_"), "type": "function_call", "call_id": rand_id("call_", 24), "name": name,
                   "arguments": args, "status": "completed"} for name, args in calls]
    return items


def item_events(index, item):
    """(type, fields) of the streaming events for one finished output item (§5.2, §5.5)."""
    iid, kind = item["id"], item["type"]
    loc = {"item_id": iid, "output_index": index}
    if kind == "message":
        text = item["content"][0]["text"]
        cloc = dict(loc, content_index=0)
        ev = [("response.output_item.added", {"output_index": index, "item": message_item(iid, "", False)}),
              ("response.content_part.added", dict(cloc, part=text_part("")))]
        ev += [("response.output_text.delta", dict(cloc, delta=p, logprobs=[])) for p in split_text(text)]
        ev += [("response.output_text.done", dict(cloc, text=text, logprobs=[])),
               ("response.content_part.done", dict(cloc, part=text_part(text)))]
    elif kind == "function_call":
        ev = [("response.output_item.added",
               {"output_index": index, "item": dict(item, status="in_progress", arguments="")})]
        ev += [("response.function_call_arguments.delta", dict(loc, delta=p)) for p in split_args(item["arguments"])]
        ev.append(("response.function_call_arguments.done", dict(loc, name=item["name"], arguments=item["arguments"])))
    else:  # reasoning, with one summary part
        summary = item["summary"][0]["text"]
        sloc = dict(loc, summary_index=0)
        ev = [("response.output_item.added", {"output_index": index, "item": dict(item, summary=[])}),
              ("response.reasoning_summary_part.added", dict(sloc, part={"type": "summary_text", "text": ""}))]
        ev += [("response.reasoning_summary_text.delta", dict(sloc, delta=p)) for p in split_text(summary)]
        ev += [("response.reasoning_summary_text.done", dict(sloc, text=summary)),
               ("response.reasoning_summary_part.done", dict(sloc, part={"type": "summary_text", "text": summary}))]
    ev.append(("response.output_item.done", {"output_index": index, "item": item}))
    return ev


def responses_turn_frames(req, model, rid, items, usage):
    created = int(time.time())
    snapshot = response_obj(req, model, rid, created, [])
    events = [("response.created", {"response": snapshot}), ("response.in_progress", {"response": snapshot})]
    for index, item in enumerate(items):
        events += item_events(index, item)
    events.append(("response.completed", None))
    for seq, (etype, fields) in enumerate(events):
        if fields is None:
            fields = {"response": response_obj(req, model, rid, created, items, usage)}
        yield "event: %s\ndata: %s\n\n" % (etype, dumps(dict({"type": etype, "sequence_number": seq}, **fields)))


def scripted(model, req, chat, stream, keep=None, shown=None):
    """(frames, None) for a stream, or (None, full object). Responses: keep(rid, output items)
    is called first (to persist the answer). `shown` is the model name answered (default model)."""
    calls, text, n = script_turn(model, req, chat)
    name = shown or model
    if chat:
        usage = scripted_chat_usage(n)
        if calls is None:
            return (chat_frames(req, name, "", text, usage), None) if stream else (
                None, chat_completion(name, "", text, usage))
        return (chat_calls_frames(req, name, calls, usage), None) if stream else (
            None, chat_calls_completion(name, calls, usage))
    req = echo_tools(req)
    usage = scripted_responses_usage(n, model == "ci-reason")
    items = responses_turn_items(model, req, calls, text)
    rid = rand_id("resp_")
    if keep is not None:
        keep(rid, items)
    if stream:
        return responses_turn_frames(req, name, rid, items, usage), None
    return None, response_obj(req, name, rid, int(time.time()), items, usage)


# ---------------------------------------------------------------- Conversation state (STATE above)

class Refused(Exception):
    """A request OpenAI would refuse with a 400: its error body."""

    def __init__(self, message, param, code=None):
        super().__init__(message)
        self.body = err(message, param=param, code=code)


class State:
    """Persisted responses and output items, shared by all handler threads. Only the newest
    `limit` responses (and their items) are kept, so a benchmark's memory stays bounded."""

    def __init__(self, limit):
        self.lock = threading.Lock()
        self.limit = limit
        self.responses = collections.OrderedDict()  # id -> {"input": [...], "output": [...]}
        self.items = {}                              # output item id -> item

    def response(self, rid):
        with self.lock:
            r = self.responses.get(rid)
            return None if r is None else json.loads(dumps(r))  # a deep copy

    def item(self, iid):
        with self.lock:
            it = self.items.get(iid)
            return None if it is None else json.loads(dumps(it))

    def persist(self, rid, inp, output):
        copy = json.loads(dumps({"input": inp, "output": output}))
        with self.lock:
            self.responses[rid] = copy
            for it in copy["output"]:
                if isinstance(it, dict) and isinstance(it.get("id"), str):
                    self.items[it["id"]] = it
            while self.limit and len(self.responses) > self.limit:
                _, old = self.responses.popitem(last=False)
                for it in old["output"]:
                    if isinstance(it, dict) and self.items.get(it.get("id")) is it:
                        del self.items[it["id"]]


STATELESS = "nostate-"
CHAT_ONLY = "chatonly-"
NOT_PERSISTED = ("Item with id '%s' not found. Items are not persisted when `store` is set to false. "
                 "Try again with `store` set to true, or remove this item from your input.")


def must_be_persisted(item):
    """An input item of an output type whose id must name a persisted item (rule 4)."""
    kind = item.get("type")
    if kind == "reasoning":
        return not (isinstance(item.get("encrypted_content"), str) and item["encrypted_content"])
    if kind == "message" or (kind is None and "role" in item):
        return item.get("role") == "assistant"
    return kind in ("function_call", "code_interpreter_call")


def check_calls(items):
    """Rule 5: calls and their outputs pair up, each output after its call."""
    called, answered = [], set()
    for it in items:
        if not isinstance(it, dict):
            continue
        if it.get("type") == "function_call":
            called.append(it.get("call_id"))
        elif it.get("type") == "function_call_output":
            cid = it.get("call_id")
            if cid not in called:
                raise Refused("No tool call found for function call output with call_id %s." % cid, "input")
            answered.add(cid)
    for cid in called:
        if cid not in answered:
            raise Refused("No tool output found for function call %s." % cid, "input")


def expand(state, body, stateless):
    """(the request as the model sees it, the full input to persist) for a /v1/responses body;
    Refused when OpenAI would refuse it. The body itself is never changed (the recorder has it)."""
    inp, prev = body.get("input"), body.get("previous_response_id")
    if isinstance(inp, str):
        items = [{"role": "user", "content": inp}]
    elif isinstance(inp, list):
        items = inp
    elif inp is None:
        items = []
    else:
        return body, []  # not an input at all: the model scripts cope with it as before
    history = []
    if prev is not None:
        stored = state.response(prev) if isinstance(prev, str) and not stateless else None
        if stored is None:
            raise Refused("Previous response with id '%s' not found." % prev, "previous_response_id",
                          "previous_response_not_found")
        history = stored["input"] + stored["output"]
    given = []
    for it in items:
        if isinstance(it, dict) and it.get("type") == "item_reference":
            iid = it.get("id")
            found = state.item(iid) if isinstance(iid, str) and not stateless else None
            if found is None:
                raise Refused("Item with id '%s' not found." % iid, "input")
            given.append(found)
            continue
        if (isinstance(it, dict) and not stateless and isinstance(it.get("id"), str)
                and must_be_persisted(it) and state.item(it["id"]) is None):
            raise Refused(NOT_PERSISTED % it["id"], "input")
        given.append(it)
    full = history + given
    check_calls(full)
    if prev is None and given == items and isinstance(inp, str):
        return body, full  # a plain string input: the model sees it as it came
    return dict(body, input=full), full


# ---------------------------------------------------------------- HTTP plumbing

class Recorder:
    """The /v1 exchanges seen so far (newest `limit`), shared by all handler threads."""

    def __init__(self, limit):
        self.lock = threading.Lock()
        self.items = collections.deque(maxlen=limit or None)

    def put(self, entry, add, **fields):
        with self.lock:
            entry.update(fields)
            if add:
                self.items.append(entry)

    def snapshot(self):
        with self.lock:
            return [dict(e) for e in self.items]

    def clear(self):
        with self.lock:
            self.items.clear()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked SSE bodies
    server_version = "fake-openai-upstream/1.0"
    sys_version = ""

    def version_string(self):
        return self.server_version

    def log_message(self, fmt, *args):
        if not self.server.quiet:
            sys.stderr.write("upstream: %s - %s\n" % (self.address_string(), fmt % args))

    def log_error(self, fmt, *args):
        sys.stderr.write("upstream: error: %s\n" % (fmt % args))

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle
        # plus the client's delayed ACK add 40 ms to every answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle(self):
        # A client (the gateway) hanging up mid-response is expected; never dump a traceback.
        try:
            super().handle()
        except DISCONNECTS:
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = lambda self: self.dispatch()

    # -- low-level output; everything sent as body is mirrored into self.sent for the record
    def publish(self, last=b""):
        """Record the exchange just *before* its last bytes go out, so a client that has seen the
        end of a response always finds it in /__requests (dispatch() corrects the entry if the
        write then fails)."""
        if self.rec is not None and not self.published:
            self.server.recorder.put(self.rec, True, response_status=self.status,
                                     response_body=(bytes(self.sent) + last).decode("utf-8", "replace"))
            self.published = True

    def begin(self, status, headers):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("x-request-id", rand_id("req_fake", 24))
        self.send_header("openai-processing-ms", "1")
        self.end_headers()
        self.status = status

    def send_json(self, status, obj, extra=None):
        body = dumps(obj).encode()
        self.begin(status, {"Content-Type": "application/json", "Content-Length": str(len(body)),
                            **(extra or {})})
        self.publish(body)
        self.wfile.write(body)
        self.sent += body

    def send_truncated(self, obj):
        # Promise 100 bytes, deliver 10, hang up: the gateway must notice the short body.
        body = dumps(obj).encode()[:10]
        self.begin(200, {"Content-Type": "application/json", "Content-Length": "100"})
        self.wfile.write(body)
        self.sent += body
        self.close_connection = True

    def send_stream(self, frames, gap=0.0, drop=None):
        """One HTTP/1.1 chunk per SSE event, flushed at once; the gateway must strip the
        hop-by-hop Transfer-Encoding when relaying, so it is sent for real."""
        self.begin(200, {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
                         "Transfer-Encoding": "chunked"})
        frames = iter(frames)
        frame, i = next(frames, None), 0
        while frame is not None and (drop is None or i < drop):
            if i and gap:
                time.sleep(gap)
            following = next(frames, None)  # look ahead: the last frame is published first
            data = frame.encode()
            if following is None and drop is None:
                self.publish(data)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            self.sent += data
            frame, i = following, i + 1
        if drop is not None:  # never send the terminating chunk: the body is left unfinished
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    # -- routing
    def dispatch(self):
        self.status, self.sent, self.rec, self.published = None, bytearray(), None, False
        path = self.path.split("?", 1)[0]
        raw = self.read_body()
        if not path.startswith("/v1/"):
            if (self.command, path) == ("GET", "/__requests"):
                return self.send_json(200, {"requests": self.server.recorder.snapshot()})
            if (self.command, path) == ("POST", "/__reset"):
                self.server.recorder.clear()
                return self.send_json(200, {})
            return self.send_json(404, err("Invalid URL (%s %s)" % (self.command, path)))
        text = raw.decode("utf-8", "replace")
        try:
            body = json.loads(text) if raw else None
        except ValueError:
            body = None
        headers = {}
        for k, v in self.headers.items():
            k = k.lower()
            headers[k] = headers[k] + ", " + v if k in headers else v
        self.rec = {"method": self.command, "path": self.path, "headers": headers, "body": body,
                    "raw_body": text, "response_status": None, "response_body": ""}
        try:
            self.handle_v1(path, body)
        except DISCONNECTS:
            raise
        except Exception:  # a bug in the fake: say so loudly, answer 500 if still possible
            traceback.print_exc()
            if self.status is None:
                self.send_json(500, err("fake upstream crashed: see its stderr", "server_error"))
        finally:
            # Final state: what was really written (a dropped client may have cut it short).
            self.server.recorder.put(self.rec, not self.published, response_status=self.status,
                                     response_body=self.sent.decode("utf-8", "replace"))

    def handle_v1(self, path, body):
        key = self.server.api_key
        if key is not None:
            auth = self.headers.get("Authorization", "")
            scheme, _, given = auth.partition(" ")
            given = given.strip()
            if scheme.lower() != "bearer" or not given:
                return self.send_json(401, err(
                    "You didn't provide an API key. You need to provide your API key in an Authorization "
                    "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY). You can obtain an API "
                    "key from https://platform.openai.com/account/api-keys.", code="invalid_api_key"))
            if given != key:
                shown = given[:6] + "*" * (len(given) - 10) + given[-4:] if len(given) > 10 else given
                return self.send_json(401, err(
                    "Incorrect API key provided: %s. You can find your API key at "
                    "https://platform.openai.com/account/api-keys." % shown, code="invalid_api_key"))
        route = (self.command, path)
        if route == ("GET", "/v1/models"):
            return self.send_json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 1700000000, "owned_by": "sandgate-fake"}
                for m in LISTED_MODELS]})
        if route not in (("POST", "/v1/chat/completions"), ("POST", "/v1/responses")):
            return self.send_json(404, err("Invalid URL (%s %s)" % (self.command, path)))
        if not isinstance(body, dict):
            return self.send_json(400, err(
                "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
                "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
                "sent was not valid JSON. If you have trouble figuring out how to fix this, please "
                "contact us through our help center at help.openai.com.)"))
        model = body.get("model")
        if model is None:
            return self.send_json(400, err("Missing required parameter: 'model'.", param="model",
                                           code="missing_required_parameter"))
        if not isinstance(model, str):
            return self.send_json(400, err("Invalid type for 'model': expected a string, but got %s instead."
                                           % type(model).__name__, param="model", code="invalid_type"))
        chat = path == "/v1/chat/completions"
        thinks = False
        if model.startswith(CHAT_ONLY):
            if not chat:        # llama.cpp's server has no /v1/responses
                return self.send_json(404, {"error": {"code": 404, "message": "File Not Found",
                                                      "type": "not_found_error"}})
            model = model[len(CHAT_ONLY):]
            thinks = model == "ci-reason"
        stateless = model.startswith(STATELESS)
        shown, model = model, model[len(STATELESS):] if stateless else model
        keep = None
        if not chat:
            try:
                body, full = expand(self.server.state, body, stateless)
            except Refused as e:
                return self.send_json(400, e.body)
            if body.get("store") is not False and not stateless:
                def keep(rid, output):
                    self.server.state.persist(rid, full, output)
        if model in FAULTS:
            status, payload, extra = FAULTS[model]
            return self.send_json(status, payload, extra)

        stream = body.get("stream") is True
        if model in SCRIPTED:
            frames, obj = scripted(model, body, chat, stream, keep, shown)
            if thinks and stream:
                frames = [reasoning_frame(shown)] + frames
            if model == "ci-cut" and tool_results(body, chat):
                return self.send_stream(frames, drop=3) if stream else self.send_truncated(obj)
            return self.send_stream(frames) if stream else self.send_json(200, obj)
        slow, gap = model_arg(model, "slow-"), model_arg(model, "slowstream-")
        drop = model_arg(model, "drop-")
        if slow is not None or (gap is not None and not stream):
            time.sleep(slow if slow is not None else gap)
            gap = None

        prompt = last_user(body.get("messages"), ("text",)) if chat else responses_prompt(body)
        answer = prompt if model == "verbatim" else "echo: " + prompt
        rid, mid = rand_id("resp_"), rand_id("msg_")
        if keep is not None:
            keep(rid, [message_item(mid, answer, True)])
        if stream:
            frames = (chat_frames(body, shown, prompt, answer) if chat else
                      responses_frames(body, shown, prompt, answer, rid, mid))
            return self.send_stream(frames, gap or 0.0, None if drop is None else int(drop))
        obj = (chat_completion(shown, prompt, answer) if chat else response_full(body, shown, prompt, answer, rid, mid))
        if drop is not None:
            return self.send_truncated(obj)
        return self.send_json(200, obj)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # benchmarks open many connections at once

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], DISCONNECTS):
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description="Fake OpenAI-compatible upstream for sandgate tests.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--port-file", help="write the chosen port here (atomically)")
    ap.add_argument("--api-key", help="require 'Authorization: Bearer KEY' on /v1 requests")
    ap.add_argument("--quiet", action="store_true", help="no per-request log lines")
    ap.add_argument("--max-records", type=int, default=10000,
                    help="keep only the newest N recorded requests (0 = unlimited)")
    ap.add_argument("--max-responses", type=int, default=10000,
                    help="persist only the newest N responses, with their items (0 = unlimited)")
    args = ap.parse_args()

    host = "127.0.0.1" if args.host == "localhost" else args.host
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        ap.error("--host must be a loopback address, got %r" % args.host)
    if ":" in host:
        Server.address_family = socket.AF_INET6

    server = Server((host, args.port), Handler)
    server.quiet, server.api_key = args.quiet, args.api_key
    server.recorder = Recorder(max(0, args.max_records))
    server.state = State(max(0, args.max_responses))
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, args.port_file)  # readers never see a partial file
    print("listening on %s:%d" % (host, port), flush=True)

    def stop(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
