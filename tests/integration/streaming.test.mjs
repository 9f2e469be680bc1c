// Live streaming through the loop: OpenAI's events and chunks as the
// model and the sandbox produce them, read by the SDKs' strict helpers.
import { test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startStack, KEYS, sseEvents } from "./harness.mjs";
import { validate } from "./schema.mjs";

const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
// OpenAI's response keys in order (the reference's §5.4 transcript and
// captured stream): every response has usage and user, null while unknown
// (the spec types both as non-nullable: schema.mjs lets the wire win).
const RESPONSE_KEYS = ["id", "object", "created_at", "status", "background", "completed_at", "error",
  "incomplete_details", "instructions", "max_output_tokens", "max_tool_calls", "model", "output",
  "parallel_tool_calls", "previous_response_id", "prompt_cache_key", "reasoning", "safety_identifier",
  "service_tier", "store", "temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p",
  "truncation", "usage", "user", "metadata"];
const LIFECYCLE = ["response.created", "response.in_progress", "response.completed", "response.incomplete",
  "response.failed"];
let stack, client;

before(async () => {
  stack = await startStack({ sandboxes: true, interceptionTool: "local" });
  client = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
});
after(async () => { await stack?.stop(); });
beforeEach(async () => { await stack.resetFake(); });

async function rawStream(path, body) {
  const r = await fetch(stack.url(path), {
    method: "POST", headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type"), /^text\/event-stream/);
  return sseEvents(await r.text());
}

for (const [model, rounds, want] of [["ci-primes", 1, /30030/], ["ci-two", 2, /43/], ["ci-endless", 3, /gave up after 3/],
  ["ci-reason", 1, /30030/], ["ci-raise", 1, /ZeroDivisionError/]]) {
  test(`Responses stream helper, ${model}: ${rounds} code round(s), final equals the events`, async () => {
    const stream = client.responses.stream({ model, input: "go", tools: CI, include: ["code_interpreter_call.outputs"] });
    const events = [];
    for await (const e of stream) events.push(e);
    const final = await stream.finalResponse();
    assert.match(final.output_text, want);
    validate("Response", final);
    assert.equal(final.output.filter((o) => o.type === "code_interpreter_call").length, rounds);
    events.forEach((e, i) => assert.equal(e.sequence_number, i, "contiguous sequence numbers"));
    for (const e of events) validate("ResponseStreamEvent", e);
    assert.equal(events[0].type, "response.created");
    assert.equal(events.at(-1).type, "response.completed");
    // The code deltas join to the code, per item; indexes 0,1,2… in order.
    const added = events.filter((e) => e.type === "response.output_item.added");
    assert.deepEqual(added.map((e) => e.output_index), added.map((_, i) => i));
    for (const ci of final.output.filter((o) => o.type === "code_interpreter_call")) {
      const deltas = events.filter((e) => e.type === "response.code_interpreter_call_code.delta" && e.item_id === ci.id);
      assert.ok(deltas.length >= (ci.code.length > 5 ? 2 : 1), "the code arrives in pieces");
      assert.equal(deltas.map((e) => e.delta).join(""), ci.code);
      const kinds = events.filter((e) => e.item_id === ci.id || e.item?.id === ci.id).map((e) => e.type);
      assert.deepEqual(kinds.filter((k) => !k.endsWith("code.delta")), ["response.output_item.added",
        "response.code_interpreter_call.in_progress", "response.code_interpreter_call_code.done",
        "response.code_interpreter_call.interpreting", "response.code_interpreter_call.completed",
        "response.output_item.done"]);
    }
    assert.equal(final.id, events[0].response.id, "one id throughout");
  });
}

test("streamed and non-streamed answers to the same script are equal", async () => {
  const plain = await client.responses.create({ model: "ci-two", input: "go", tools: CI });
  const stream = client.responses.stream({ model: "ci-two", input: "go", tools: CI });
  const streamed = await stream.finalResponse();
  const shape = (r) => r.output.map((o) => [o.type, o.type === "code_interpreter_call" ? o.code : o.content?.[0]?.text]);
  assert.deepEqual(shape(streamed), shape(plain));
  assert.deepEqual(streamed.usage, plain.usage);
});

test("Chat stream helper: text of every turn, internal calls hidden, one finish, usage, [DONE]", async () => {
  const stream = client.chat.completions.stream({
    model: "ci-primes", messages: [{ role: "user", content: "primes" }], tools: CI, stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  const final = await stream.finalChatCompletion();
  assert.match(final.choices[0].message.content, /30030/);
  assert.equal(final.choices[0].message.tool_calls, undefined);
  assert.equal(final.choices[0].finish_reason, "stop");
  for (const c of chunks) validate("CreateChatCompletionStreamResponse", c);
  assert.equal(chunks.filter((c) => c.choices[0]?.delta?.role).length, 1, "role once");
  assert.equal(chunks.filter((c) => c.choices[0]?.finish_reason).length, 1, "one finish_reason");
  assert.ok(chunks.at(-1).usage && chunks.at(-1).choices.length === 0, "the usage chunk last");
  const raw = await rawStream("/v1/chat/completions", { model: "ci-primes", messages: [{ role: "user", content: "x" }], tools: CI });
  assert.equal(raw.at(-1).data, "[DONE]");
});

test("a client function call streams as a function_call item / tool_calls chunk", async () => {
  const WR = { type: "function", name: "get_weather", parameters: { type: "object", properties: {} } };
  const s = client.responses.stream({ model: "ci-clientfn", input: "w", tools: [...CI, WR] });
  const final = await s.finalResponse();
  assert.ok(final.output.some((o) => o.type === "function_call" && o.name === "get_weather"));
  const WC = { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } };
  const c = client.chat.completions.stream({ model: "ci-clientfn", messages: [{ role: "user", content: "w" }], tools: [...CI, WC] });
  const fc = await c.finalChatCompletion();
  assert.equal(fc.choices[0].finish_reason, "tool_calls");
  assert.deepEqual(fc.choices[0].message.tool_calls.map((t) => t.function.name), ["get_weather"]);
});

test("errors before the first byte are plain HTTP errors; after it, the error events", async () => {
  await assert.rejects(client.responses.create({ model: "fault-429", input: "x", tools: CI, stream: true }),
    (e) => e instanceof OpenAI.RateLimitError && e.status === 429);
  // The upstream breaks after a few events: the stream ends with the
  // nested error event and response.failed, which the SDK raises.
  const raw = await rawStream("/v1/responses", { model: "drop", input: "a b c d e f", tools: CI });
  assert.equal(raw.at(-2).event, "error");
  assert.equal(raw.at(-1).event, "response.failed");
  const err = JSON.parse(raw.at(-2).data);
  assert.match(err.error.message, /broke its stream|mid-stream/);
  const s = client.responses.stream({ model: "drop", input: "a b c d e f", tools: CI });
  await assert.rejects((async () => { for await (const _ of s); })(), (e) => e instanceof OpenAI.APIError);
  const c = await client.chat.completions.create({ model: "drop", messages: [{ role: "user", content: "a b c d e f" }], tools: CI, stream: true });
  await assert.rejects((async () => { for await (const _ of c); })(), (e) => e instanceof OpenAI.APIError);
});

test("the first text delta reaches the client before the upstream finished its turn", async () => {
  const stream = await client.chat.completions.create({
    model: "slowstream", stream: true, tools: CI, messages: [{ role: "user", content: "one two three four" }],
  });
  let first = true;
  for await (const c of stream) {
    if (first && c.choices[0]?.delta?.content) {
      first = false;
      const done = (await stack.fakeRequests()).filter((q) => q.body?.model === "slowstream-0.4");
      assert.equal(done.length, 0, "the upstream is still streaming its turn");
    }
  }
  assert.equal(first, false);
});

test("a client that disconnects mid-stream stops the loop and leaves no sandbox", async () => {
  // Earlier tests' answers keep their conversations' containers.
  const ids = async () => (await stack.call("GET", "/v1/sandboxes")).json.data.map((s) => s.id);
  const before = await ids();
  const ac = new AbortController();
  const r = await fetch(stack.url("/v1/responses"), {
    method: "POST", signal: ac.signal,
    headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "ci-endless", input: "go", tools: CI, stream: true }),
  });
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let text = "";
  // A stream that ends first (a sandbox that failed) is a failure, not a
  // wait: read() keeps answering done, and a loop on it never yields.
  while (!text.includes("code_interpreter_call.interpreting")) {
    const { done, value } = await reader.read();
    assert.ok(!done, `the stream ended before the code ran: ${text.slice(-2000)}`);
    text += dec.decode(value, { stream: true });
  }
  ac.abort();
  for (let i = 0; i < 100; i++) {
    if ((await ids()).length === before.length) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.deepEqual(await ids(), before);
  const calls = (await stack.fakeRequests()).filter((q) => q.body?.model === "ci-endless").length;
  assert.ok(calls < 4, `the loop stopped early (${calls} upstream calls)`);
});

test("a silent upstream gets the stream opened and kept alive with comments", async () => {
  // slow-11 says nothing for 11 s: after 10 s the client has the opening
  // events and a ": keepalive" comment, then the answer.
  const r = await fetch(stack.url("/v1/responses"), {
    method: "POST", headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "slow11", input: "hi", tools: CI, stream: true }),
  });
  const text = await r.text();
  const k = text.indexOf(": keepalive\n\n");
  assert.ok(k > text.indexOf("response.in_progress") && k < text.indexOf("response.output_item.added"), text.slice(0, 400));
  const events = sseEvents(text).filter((e) => e.event);
  assert.equal(events.at(-1).event, "response.completed");
});

// The `response` of every lifecycle event, parsed, in order; each event's
// keys start with type and sequence_number, as OpenAI's do.
function lifecycle(raw) {
  return raw.filter((e) => LIFECYCLE.includes(e.event)).map((e) => {
    const data = JSON.parse(e.data);
    assert.deepEqual(Object.keys(data), ["type", "sequence_number", "response"]);
    assert.equal(data.type, e.event);
    return { type: e.event, r: data.response };
  });
}

// One response object: the spec's Response, OpenAI's keys in OpenAI's order.
function assertOpenAIShape(r, keys, what) {
  validate("Response", r);
  assert.deepEqual(Object.keys(r), keys, `${what}: OpenAI's keys in order`);
}

test("every response of an intercepted stream, and the JSON answer, has OpenAI's fields in order", async () => {
  const body = { model: "ci-primes", input: "go", tools: CI, include: ["code_interpreter_call.outputs"] };
  const t0 = Math.floor(Date.now() / 1000);
  const life = lifecycle(await rawStream("/v1/responses", body));
  assert.deepEqual(life.map((e) => e.type), ["response.created", "response.in_progress", "response.completed"]);
  const [created, progress, done] = life.map((e) => e.r);
  for (const r of [created, progress]) {
    assertOpenAIShape(r, RESPONSE_KEYS, "in progress");
    assert.equal(r.usage, null);
    assert.equal(r.user, null);
    assert.equal(r.status, "in_progress");
    assert.equal(r.completed_at, null);
    assert.equal(r.service_tier, "auto");
    assert.deepEqual(r.output, []);
  }
  assert.deepEqual(progress, created, "both opening events show the same snapshot");
  assertOpenAIShape(done, RESPONSE_KEYS, "completed");
  assert.equal(done.user, null, "no user given: null, as OpenAI");
  assert.equal(done.status, "completed");
  assert.equal(done.id, created.id);
  assert.equal(done.created_at, created.created_at, "one created_at throughout");
  assert.ok(created.created_at >= t0 - 1 && Number.isInteger(done.completed_at) &&
    done.completed_at >= done.created_at, "completed_at: unix seconds, not before created_at");
  assert.equal(done.service_tier, "default", "the upstream's tier at completion");
  assert.deepEqual(done.output.map((o) => o.type), ["code_interpreter_call", "message"]);
  assert.ok(done.usage.total_tokens > 0);
  // The request's echo: the client's, with OpenAI's defaults.
  for (const r of [created, done]) {
    assert.equal(r.model, "ci-primes");
    assert.deepEqual(r.tools, CI);
    assert.equal(r.tool_choice, "auto");
    assert.equal(r.store, true);
    assert.equal(r.background, false);
    assert.deepEqual(r.reasoning, { effort: null, summary: null });
    assert.deepEqual(r.text, { format: { type: "text" } });
    assert.equal(r.truncation, "disabled");
    assert.equal(r.top_logprobs, 0);
    assert.deepEqual(r.metadata, {});
  }
  const plain = await stack.call("POST", "/v1/responses", body);
  assert.equal(plain.status, 200);
  assertOpenAIShape(plain.json, RESPONSE_KEYS, "JSON answer");
  assert.equal(plain.json.user, null);
  assert.equal(plain.json.status, "completed");
  assert.ok(plain.json.completed_at >= plain.json.created_at);
  // Everything but the ids, times and the run's own items is the same.
  const fixed = (r) => Object.fromEntries(Object.entries(r).filter(([k]) =>
    !["id", "created_at", "completed_at", "output"].includes(k)));
  assert.deepEqual(fixed(plain.json), fixed(done));
});

test("the response echoes the client's request, never what the gateway sent upstream", async () => {
  const echo = {
    instructions: "Be brief.", max_output_tokens: 500, max_tool_calls: 4, parallel_tool_calls: false,
    prompt_cache_key: "pck", safety_identifier: "sid", temperature: 0.5, top_p: 0.9, user: "u-1",
    metadata: { k: "v" }, reasoning: { effort: "low" }, text: { format: { type: "text" }, verbosity: "low" },
  };
  const first = (await stack.call("POST", "/v1/responses", { model: "ci-primes", input: "go", tools: CI, ...echo })).json;
  assertOpenAIShape(first, RESPONSE_KEYS, "JSON answer with user");
  // A follow-up: the gateway sends the upstream its own previous id.
  const body = { model: "ci-two", input: "again", tools: CI, previous_response_id: first.id, ...echo };
  const life = lifecycle(await rawStream("/v1/responses", body));
  const plain = (await stack.call("POST", "/v1/responses", body)).json;
  const ups = (await stack.fakeRequests()).filter((q) => q.body?.model === "ci-two").map((q) => q.body);
  assert.ok(ups.length > 0 && ups.every((b) => b.previous_response_id !== first.id), "upstream got its own id");
  for (const [what, r] of [...life.map((e) => [e.type, e.r]), ["JSON answer", plain]]) {
    const done = r.status === "completed";
    assertOpenAIShape(r, RESPONSE_KEYS, what);
    if (!done) assert.equal(r.usage, null, `${what}: usage not known yet`);
    for (const [k, v] of Object.entries(echo)) {
      if (k !== "reasoning") assert.deepEqual(r[k], v, `${what}: ${k}`);
    }
    assert.deepEqual(r.reasoning, { effort: "low", summary: null }, `${what}: reasoning`);
    assert.equal(r.previous_response_id, first.id, `${what}: the client's previous_response_id`);
    assert.equal(r.model, "ci-two");
    assert.deepEqual(r.tools, CI);
    assert.equal(r.store, true, `${what}: store as the client left it`);
  }
  const off = await stack.call("POST", "/v1/responses", { model: "ci-primes", input: "go", tools: CI, store: false });
  assert.equal(off.json.store, false, "the client's store:false");
});

test("response.failed is OpenAI's failed response: error, usage null, the same id", async () => {
  const life = lifecycle(await rawStream("/v1/responses", { model: "drop", input: "a b c d e f", tools: CI }));
  assert.deepEqual(life.map((e) => e.type), ["response.created", "response.in_progress", "response.failed"]);
  const [created, , failed] = life.map((e) => e.r);
  assertOpenAIShape(failed, RESPONSE_KEYS, "failed");
  assert.equal(failed.usage, null);
  assert.equal(failed.status, "failed");
  assert.equal(failed.id, created.id);
  assert.equal(failed.created_at, created.created_at);
  assert.equal(failed.completed_at, null);
  assert.equal(failed.error.code, "server_error");
  assert.match(failed.error.message, /broke its stream|mid-stream/);
  assert.equal(failed.model, "drop", "the client's model name, not the upstream's");
});
