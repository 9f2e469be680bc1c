// Passthrough: requests without code_interpreter reach the upstream and
// its answer comes back unchanged, streamed event by event.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startStack, KEYS, UPSTREAM_KEY, sseEvents } from "./harness.mjs";
import { validate } from "./schema.mjs";

let stack, client;

before(async () => {
  stack = await startStack();
  client = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
});
after(async () => { await stack?.stop(); });

async function lastFake() {
  const reqs = await stack.fakeRequests();
  return reqs[reqs.length - 1];
}

// A body the gateway changes nothing in goes upstream byte for byte (no
// parse-and-dump); one whose model is mapped is rewritten; one that names
// a key twice is rewritten too, so the upstream sees the one model the
// gateway checked (Jansson keeps the last; an upstream might take the first).
async function rawChat(text) {
  const r = await fetch(stack.url("/v1/chat/completions"), { method: "POST", body: text,
    headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" }, signal: AbortSignal.timeout(15000) });
  const answer = await r.text();
  assert.equal(r.status, 200, answer);
  return lastFake();
}

test("a body nothing changes reaches the upstream as sent, byte for byte", async () => {
  const text = '{ "model" : "gpt-4.1-mini",\n  "messages": [ {"role":"user", "content":"h\\u00e9 \\/ 1.50"} ],\n  "temperature": 1.50, "x_extra": [1e2, -0.0] }';
  const seen = await rawChat(text);
  assert.equal(seen.raw_body, text);
});

test("a mapped model, or a key named twice, is rewritten: the upstream sees one model, the one checked", async () => {
  const mapped = await rawChat('{ "model": "gpt-test", "messages": [{"role":"user","content":"x"}] }');
  assert.equal(mapped.body.model, "echo");
  assert.doesNotMatch(mapped.raw_body, /gpt-test/);
  const twice = await rawChat('{"model":"gpt-test","messages":[{"role":"user","content":"x"}],"model":"gpt-4.1-mini"}');
  assert.equal(twice.raw_body.match(/"model"/g).length, 1, twice.raw_body);
  assert.equal(twice.body.model, "gpt-4.1-mini", "the last, as the gateway read it");
});

test("chat non-streaming: the upstream's JSON, model mapped, upstream key used", async () => {
  const { data, response } = await client.chat.completions.create({
    model: "gpt-test", messages: [{ role: "user", content: "héllo wörld ✓ 😀" }], temperature: 0.1,
  }).withResponse();
  validate("CreateChatCompletionResponse", data);
  assert.equal(data.choices[0].message.content, "echo: héllo wörld ✓ 😀");
  assert.match(response.headers.get("x-request-id"), /^req_[0-9a-f]{32}$/);
  const seen = await lastFake();
  assert.equal(seen.body.model, "echo", "client model name mapped to the upstream id");
  assert.equal(seen.body.temperature, 0.1);
  assert.equal(seen.headers.authorization, `Bearer ${UPSTREAM_KEY}`, "the upstream key, never the client's");
  assert.equal(seen.headers.expect, undefined, "no Expect: 100-continue");
  assert.deepEqual(JSON.parse(JSON.stringify(data)), JSON.parse(seen.response_body), "body unchanged");
});

test("responses non-streaming: unchanged and schema-valid", async () => {
  const r = await client.responses.create({ model: "gpt-test", input: "ça va?" });
  validate("Response", r);
  assert.equal(r.output_text, "echo: ça va?");
  const seen = await lastFake();
  assert.equal(seen.path, "/v1/responses");
  const got = JSON.parse(JSON.stringify(r));
  delete got.output_text; // added by the SDK
  assert.deepEqual(got, JSON.parse(seen.response_body));
});

test("chat streaming through the SDK helper: raw events equal what the fake sent", async () => {
  const stream = client.chat.completions.stream({
    model: "gpt-test", messages: [{ role: "user", content: "stream me, please" }],
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  const final = await stream.finalChatCompletion();
  assert.equal(final.choices[0].message.content, "echo: stream me, please");
  const seen = await lastFake();
  const sent = sseEvents(seen.response_body).filter((e) => e.data !== "[DONE]").map((e) => JSON.parse(e.data));
  assert.deepEqual(JSON.parse(JSON.stringify(chunks)), sent);
  for (const c of chunks) validate("CreateChatCompletionStreamResponse", c);
});

test("responses streaming through the SDK helper: every event relayed in order", async () => {
  const stream = client.responses.stream({ model: "gpt-test", input: "Hello there 世界" });
  const events = [];
  for await (const e of stream) events.push(e);
  const final = await stream.finalResponse();
  assert.equal(final.output_text, "echo: Hello there 世界");
  const seen = await lastFake();
  const sent = sseEvents(seen.response_body);
  assert.deepEqual(events.map((e) => e.type), sent.map((e) => e.event));
  assert.deepEqual(JSON.parse(JSON.stringify(events)), sent.map((e) => JSON.parse(e.data)));
  for (const e of events) validate("ResponseStreamEvent", e);
});

test("streaming: raw bytes identical, hop-by-hop headers dropped, SSE headers set", async () => {
  const r = await fetch(stack.url("/v1/chat/completions"), {
    method: "POST",
    headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", stream: true, messages: [{ role: "user", content: "raw" }] }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type"), /^text\/event-stream/);
  assert.equal(r.headers.get("x-accel-buffering"), "no");
  assert.equal(r.headers.get("openai-processing-ms"), "1", "upstream's openai-* headers relayed");
  assert.match(r.headers.get("x-upstream-request-id"), /^req_fake/);
  assert.match(r.headers.get("x-request-id"), /^req_[0-9a-f]{32}$/);
  const text = await r.text();
  const seen = await lastFake();
  assert.equal(text, seen.response_body);
  assert.ok(text.endsWith("data: [DONE]\n\n"));
});

test("events reach the client as the upstream sends them, not at the end", async () => {
  // slowstream waits 0.4 s between events: the first must arrive while the
  // upstream is still streaming (before it has sent its last event).
  const stream = await client.chat.completions.create({
    model: "slowstream", stream: true, messages: [{ role: "user", content: "one two three four" }],
  });
  let first = null;
  for await (const c of stream) {
    if (first === null) {
      first = c;
      const pending = (await stack.fakeRequests()).filter((q) => q.body?.model === "slowstream-0.4");
      assert.equal(pending.length, 0, "the fake records a request only when it has sent everything");
    }
  }
  assert.ok(first);
});

test("GET /v1/models lists the configured names", async () => {
  const list = await client.models.list();
  const names = list.data.map((m) => m.id);
  assert.ok(names.includes("gpt-test") && names.includes("fault-500"));
  validate("ListModelsResponse", { object: "list", data: list.data });
});

test("keys: config literal/env, key_sha256 and file: keys all authenticate", async () => {
  for (const key of [KEYS.alice, KEYS.bob, KEYS.carol]) {
    const c = new OpenAI({ apiKey: key, baseURL: stack.url("/v1"), maxRetries: 0 });
    const r = await c.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "k" }] });
    assert.equal(r.choices[0].message.content, "echo: k");
  }
  const log = stack.log();
  assert.match(log, /key=bob method=POST path=\/v1\/chat\/completions model=gpt-test status=200 /);
  for (const key of Object.values(KEYS)) assert.ok(!log.includes(key), "a key never reaches the log");
});
