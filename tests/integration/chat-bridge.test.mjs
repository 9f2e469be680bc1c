// The Responses API on an upstream that speaks only Chat Completions (a
// model with api = "chat"): the fake's chatonly-<model> answers 404 on
// /v1/responses, as llama.cpp's server does, and sandgate serves
// /v1/responses itself on the upstream's /v1/chat/completions, JSON and
// streamed, with and without code_interpreter, through the official
// openai package; every answer and event is checked against OpenAI's
// OpenAPI schemas. The Vercel AI SDK and the OpenAI Agents SDK (pinned in
// package.json) run the same scenarios below, and their three-turn
// conversations in clients.test.mjs (model convo-chat).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { generateText, streamText, Output } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { Agent, Runner, OpenAIProvider, codeInterpreterTool, setTracingDisabled } from "@openai/agents";
import { z } from "zod";
import { Stack, KEYS, UPSTREAM_KEY } from "./harness.mjs";
import { validate } from "./schema.mjs";

const CHAT = { "chat-echo": "chatonly-gpt-4.1-mini", "chat-primes": "chatonly-ci-primes",
  "chat-endless": "chatonly-ci-endless", "chat-clientfn": "chatonly-ci-clientfn", "chat-fault": "chatonly-fault-400",
  "chat-500": "chatonly-fault-500", "chat-reason": "chatonly-ci-reason", "chat-verbatim": "chatonly-verbatim" };
const chatModels = (port) => Object.entries(CHAT).map(([name, model]) =>
  `{ name = "${name}"; api_base = "http://127.0.0.1:${port}/v1"; api_key = "${UPSTREAM_KEY}"; ` +
  `model = "${model}"; api = "chat"; ${name === "chat-endless" ? "max_agentic_loops = 3;" : ""} }`).join(",\n  ");

let stack, client;
before(async () => {
  stack = new Stack({ get models() { return chatModels(stack.fakePort); } });
  await stack.start();
  client = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
});
after(() => stack?.stop());

const CODE = [{ type: "code_interpreter", container: { type: "auto" } }];
const WEATHER = { type: "function", name: "get_weather", description: "The weather of a city", strict: true,
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false } };

// What went upstream since the last reset: every call a Chat one.
async function upstreamCalls() {
  const reqs = await stack.fakeRequests();
  for (const r of reqs) assert.equal(r.path, "/v1/chat/completions", `sandgate called ${r.path}`);
  return reqs.map((r) => r.body);
}

// A Chat message's text, whether its content is a string or text parts.
const textOf = (m) => typeof m.content === "string" ? m.content : (m.content ?? []).map((p) => p.text ?? "").join("");

// Chat's rule: every tool message answers a call of the assistant message
// before it, with only tool messages in between.
function chatOrderOk(msgs) {
  msgs.forEach((m, i) => {
    if (m.role !== "tool") return;
    let j = i - 1;
    while (j >= 0 && msgs[j].role === "tool") j--;
    assert.ok(j >= 0 && msgs[j].role === "assistant" && msgs[j].tool_calls?.some((c) => c.id === m.tool_call_id),
      `tool message ${i} follows the assistant's call ${m.tool_call_id}: ${JSON.stringify(msgs)}`);
  });
}

async function streamed(body) {
  const s = client.responses.stream(body);
  const events = [];
  for await (const e of s) events.push(e);
  const final = await s.finalResponse();
  for (const e of events) validate("ResponseStreamEvent", e);
  validate("Response", final);
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i), "sequence numbers 0..n");
  return { events, final };
}

test("plain text, JSON: the upstream's Chat answer as a Response", async () => {
  await stack.resetFake();
  const r = await client.responses.create({ model: "chat-echo", input: "hello there", instructions: "Be brief." });
  validate("Response", r);
  assert.equal(r.output_text, "echo: hello there");
  assert.equal(r.status, "completed");
  assert.equal(r.model, "chat-echo");
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0, JSON.stringify(r.usage));
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  const [sent] = await upstreamCalls();
  assert.deepEqual(sent.messages.map((m) => [m.role, textOf(m)]), [["system", "Be brief."], ["user", "hello there"]]);
  assert.equal(sent.stream, true);
  assert.deepEqual(sent.stream_options, { include_usage: true });
});

test("plain text, streamed: text deltas as they come, in OpenAI's order", async () => {
  const { events, final } = await streamed({ model: "chat-echo", input: "one two three" });
  assert.equal(final.output_text, "echo: one two three");
  const types = events.map((e) => e.type);
  assert.equal(types[0], "response.created");
  assert.equal(types.at(-1), "response.completed");
  const deltas = events.filter((e) => e.type === "response.output_text.delta");
  assert.ok(deltas.length >= 3, "more than one delta");
  assert.equal(deltas.map((d) => d.delta).join(""), "echo: one two three");
  const order = ["response.output_item.added", "response.content_part.added", "response.output_text.delta",
    "response.output_text.done", "response.content_part.done", "response.output_item.done"];
  const firstOf = order.map((t) => types.indexOf(t));
  assert.deepEqual([...firstOf].sort((a, b) => a - b), firstOf, types.join(" "));
});

test("code interpreter, one round and three: the loop runs code on the Chat upstream", async () => {
  await stack.resetFake();
  const r = await client.responses.create({ model: "chat-primes", input: "primes", tools: CODE,
    include: ["code_interpreter_call.outputs"] });
  validate("Response", r);
  assert.equal(r.output_text, "The product of the first six primes is 30030");
  const call = r.output.find((o) => o.type === "code_interpreter_call");
  assert.equal(call.code, "print(2*3*5*7*11*13)");
  assert.equal(call.outputs[0].logs.trim(), "30030");
  const sent = await upstreamCalls();
  assert.equal(sent.length, 2);
  const tools = sent[0].tools;
  assert.equal(tools[0].type, "function");
  assert.equal(tools[0].function.name, "litellm_code_execution");
  // The follow-up carries the call and its result as Chat messages.
  const [asst, tool] = sent[1].messages.slice(-2);
  assert.equal(asst.role, "assistant");
  assert.equal(asst.tool_calls[0].function.name, "litellm_code_execution");
  assert.equal(tool.role, "tool");
  assert.equal(tool.tool_call_id, asst.tool_calls[0].id);
  assert.match(textOf(tool), /30030/);
  chatOrderOk(sent[1].messages);

  const { events, final } = await streamed({ model: "chat-endless", input: "go", tools: CODE });
  assert.equal(final.output.filter((o) => o.type === "code_interpreter_call").length, 3);
  assert.equal(final.output_text, "gave up after 3");
  assert.ok(events.some((e) => e.type === "response.code_interpreter_call_code.delta"), "code streamed as written");
});

test("a function tool round trip with code in the same turn, then previous_response_id", async () => {
  await stack.resetFake();
  const r1 = await client.responses.create({ model: "chat-clientfn", input: "weather?", tools: [...CODE, WEATHER],
    tool_choice: "auto", parallel_tool_calls: true });
  validate("Response", r1);
  const fc = r1.output.find((o) => o.type === "function_call");
  assert.equal(fc.name, "get_weather");
  assert.deepEqual(JSON.parse(fc.arguments), { city: "Paris" });
  const sent1 = (await upstreamCalls())[0];
  assert.deepEqual(sent1.tools.find((t) => t.function.name === "get_weather").function,
    { name: "get_weather", description: WEATHER.description, parameters: WEATHER.parameters, strict: true });
  assert.equal(sent1.tool_choice, "auto");
  assert.equal(sent1.parallel_tool_calls, true);
  await stack.resetFake();
  const r2 = await client.responses.create({ model: "chat-clientfn", previous_response_id: r1.id, tools: [...CODE, WEATHER],
    input: [{ type: "function_call_output", call_id: fc.call_id, output: "sunny" }] });
  validate("Response", r2);
  assert.match(r2.output_text, /^The product of the first six primes is/);
  // The whole history went as Chat messages: the user, the turn's two
  // calls, both results.
  const msgs = (await upstreamCalls())[0].messages;
  assert.equal(msgs[0].role, "user");
  const calls = msgs.filter((m) => m.role === "assistant").flatMap((m) => m.tool_calls ?? []);
  assert.deepEqual(calls.map((c) => c.function.name).sort(), ["get_weather", "litellm_code_execution"]);
  assert.deepEqual(msgs.filter((m) => m.role === "tool").map((m) => m.tool_call_id).sort(), calls.map((c) => c.id).sort());
  assert.equal(textOf(msgs.find((m) => m.role === "tool" && m.tool_call_id === calls.find((c) => c.function.name === "get_weather").id)), "sunny");
  chatOrderOk(msgs);
  assert.equal((await client.responses.retrieve(r2.id)).id, r2.id);
});

test("structured output, sampling and limits take their Chat names", async () => {
  await stack.resetFake();
  const schema = { type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: false };
  const r = await client.responses.create({ model: "chat-echo", input: "json please", temperature: 0.5, top_p: 0.9,
    max_output_tokens: 50, text: { format: { type: "json_schema", name: "thing", schema, strict: true } } });
  validate("Response", r);
  const [sent] = await upstreamCalls();
  assert.deepEqual(sent.response_format, { type: "json_schema", json_schema: { name: "thing", schema, strict: true } });
  assert.equal(sent.temperature, 0.5);
  assert.equal(sent.top_p, 0.9);
  assert.equal(sent.max_tokens, 50);
  assert.equal(sent.input, undefined);
});

test("an answer cut by max_output_tokens is incomplete, JSON and streamed", async () => {
  const body = { model: "chat-echo", input: "a b c d e f g h", max_output_tokens: 3 };
  const r = await client.responses.create(body);
  validate("Response", r);
  assert.equal(r.status, "incomplete");
  assert.deepEqual(r.incomplete_details, { reason: "max_output_tokens" });
  assert.equal(r.output[0].status, "incomplete");
  assert.equal(r.output_text, "echo: a b ");
  const { events, final } = await streamed(body);
  assert.equal(final.status, "incomplete");
  assert.equal(events.at(-1).type, "response.incomplete");
});

test("an upstream error comes back in the Responses error shape", async () => {
  await assert.rejects(client.responses.create({ model: "chat-fault", input: "x" }),
    (e) => e.status === 400 && typeof e.error?.message === "string" && e.error.type === "invalid_request_error");
  await assert.rejects(client.responses.create({ model: "chat-500", input: "x" }), (e) => e.status === 500);
});

test("a multi-turn conversation: the gateway holds the state, the upstream sees the history", async () => {
  const r1 = await client.responses.create({ model: "chat-echo", input: "first" });
  await stack.resetFake();
  const r2 = await client.responses.create({ model: "chat-echo", input: "second", previous_response_id: r1.id });
  assert.equal(r2.output_text, "echo: second");
  assert.equal(r2.previous_response_id, r1.id);
  const [sent] = await upstreamCalls();
  assert.deepEqual(sent.messages.map((m) => [m.role, textOf(m)]), [["user", "first"], ["assistant", "echo: first"],
    ["user", "second"]]);
  const got = await client.responses.retrieve(r2.id);
  assert.equal(got.output_text, "echo: second");
});

test("images go as Chat image parts; what Chat cannot carry is a 400 naming it, before any upstream call", async () => {
  await stack.resetFake();
  const url = "data:image/png;base64,iVBORw0KGgo=";
  await client.responses.create({ model: "chat-echo", input: [{ role: "user", content: [
    { type: "input_text", text: "what is this" }, { type: "input_image", image_url: url, detail: "low" }] }] });
  const [sent] = await upstreamCalls();
  assert.deepEqual(sent.messages[0].content, [{ type: "text", text: "what is this" },
    { type: "image_url", image_url: { url, detail: "low" } }]);
  await stack.resetFake();
  const refused = [
    [{ tools: [{ type: "web_search" }] }, "tools"],
    [{ truncation: "auto" }, "truncation"],
    [{ reasoning: { summary: "auto" } }, "reasoning.summary"],
    [{ input: [{ role: "user", content: [{ type: "input_file", file_id: "file-x" }] }] }, "input"],
    [{ prompt: { id: "pmpt_1" } }, "prompt"],
  ];
  for (const [more, param] of refused) {
    await assert.rejects(client.responses.create({ model: "chat-echo", input: "x", ...more }),
      (e) => e.status === 400 && e.error?.param === param && e.error?.code === "unsupported_parameter",
      JSON.stringify(more));
  }
  assert.equal((await stack.fakeRequests()).length, 0, "no upstream call");
  // Refused when queued too, in the background: never a job that fails.
  await assert.rejects(client.responses.create({ model: "chat-echo", input: "x", background: true,
    truncation: "auto" }), (e) => e.status === 400 && e.error?.param === "truncation");
});

test("background mode on a Chat-only upstream: sandgate runs it, the upstream never sees background", async () => {
  await stack.resetFake();
  const r = await client.responses.create({ model: "chat-echo", input: "in the background", background: true });
  assert.equal(r.status, "queued");
  let got = r;
  for (let i = 0; i < 100 && ["queued", "in_progress"].includes(got.status); i++) {
    await new Promise((res) => setTimeout(res, 100));
    got = await client.responses.retrieve(r.id);
  }
  assert.equal(got.status, "completed", JSON.stringify(got.error));
  assert.equal(got.background, true);
  assert.match(got.output_text, /in the background/);
  const [sent] = await upstreamCalls();
  assert.equal(sent.background, undefined);
});

test("a Chat server's reasoning_content becomes a reasoning item, streamed as reasoning text", async () => {
  await stack.resetFake();
  const { events, final } = await streamed({ model: "chat-reason", input: "think", tools: CODE });
  const rs = final.output.filter((o) => o.type === "reasoning");
  assert.equal(rs.length, 2, "one per upstream turn");
  assert.deepEqual(rs[0].content, [{ type: "reasoning_text", text: "thinking" }]);
  assert.equal(final.output_text, "The product of the first six primes is 30030");
  assert.ok(events.some((e) => e.type === "response.reasoning_text.delta" && e.delta === "thinking"));
  // Chat has no input form for it: the follow-up does not carry it back.
  const sent = await upstreamCalls();
  assert.equal(sent.length, 2);
  assert.ok(!JSON.stringify(sent[1].messages).includes("thinking"));
});

// ------------------------------------------------ the AI SDK and the Agents SDK

setTracingDisabled(true); // the Agents SDK would export traces to OpenAI

const aiModel = (name) => createOpenAI({ baseURL: stack.url("/v1"), apiKey: KEYS.alice })(name);

test("AI SDK: text, streamed text, a length cut, structured output, the code tool, an upstream error", async () => {
  const plain = await generateText({ model: aiModel("chat-echo"), prompt: "hello", maxRetries: 0 });
  assert.equal(plain.text, "echo: hello");
  assert.equal(plain.finishReason, "stop");
  assert.ok(plain.usage.inputTokens > 0);
  const st = streamText({ model: aiModel("chat-echo"), prompt: "one two three", maxRetries: 0, onError: () => {} });
  const parts = [];
  for await (const p of st.textStream) parts.push(p);
  assert.ok(parts.length >= 3, "text came in pieces");
  assert.equal(parts.join(""), "echo: one two three");
  const cut = await generateText({ model: aiModel("chat-echo"), prompt: "a b c d e f", maxOutputTokens: 2, maxRetries: 0 });
  assert.equal(cut.finishReason, "length");
  await stack.resetFake();
  const obj = await generateText({ model: aiModel("chat-verbatim"), prompt: '{"city":"Paris"}', maxRetries: 0,
    output: Output.object({ schema: z.object({ city: z.string() }) }) });
  assert.deepEqual(obj.output, { city: "Paris" });
  const [sent] = await upstreamCalls();
  assert.equal(sent.response_format?.type, "json_schema", JSON.stringify(sent.response_format));
  const openai = createOpenAI({ baseURL: stack.url("/v1"), apiKey: KEYS.alice });
  const code = await generateText({ model: aiModel("chat-primes"), prompt: "primes", maxRetries: 0,
    tools: { code_interpreter: openai.tools.codeInterpreter({}) } });
  assert.equal(code.text, "The product of the first six primes is 30030");
  assert.ok(code.steps.flatMap((x) => x.content).some((c) => c.type === "tool-call" && c.toolName === "code_interpreter"));
  await assert.rejects(generateText({ model: aiModel("chat-fault"), prompt: "x", maxRetries: 0 }),
    (e) => e.statusCode === 400);
});

test("Agents SDK: text, the code tool streamed, previousResponseId, an upstream error", async () => {
  const client = new OpenAI({ baseURL: stack.url("/v1"), apiKey: KEYS.alice, maxRetries: 0 });
  const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: client, useResponses: true }),
    tracingDisabled: true });
  const echo = new Agent({ name: "echo", instructions: "Answer.", model: "chat-echo" });
  const r1 = await runner.run(echo, "first");
  assert.equal(r1.finalOutput, "echo: first");
  const r2 = await runner.run(echo, "second", { previousResponseId: r1.lastResponseId });
  assert.equal(r2.finalOutput, "echo: second");
  const coder = new Agent({ name: "coder", instructions: "Use the tools you have.", model: "chat-primes",
    tools: [codeInterpreterTool({ includeOutputs: true })] });
  const rs = await runner.run(coder, "primes", { stream: true });
  for await (const _ of rs) { /* drain the events */ } // eslint-disable-line no-unused-vars
  await rs.completed;
  assert.equal(rs.finalOutput, "The product of the first six primes is 30030");
  const fail = new Agent({ name: "fail", instructions: "x", model: "chat-fault" });
  await assert.rejects(runner.run(fail, "x"), (e) => /400|invalid/i.test(String(e?.message ?? e)));
});
