// Every failure is an OpenAI-shaped error with the status the SDKs map
// to the right exception, and never a crashed responder.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startStack, KEYS } from "./harness.mjs";
import { validate } from "./schema.mjs";

let stack, client;

before(async () => {
  stack = await startStack();
  client = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
});
after(async () => { await stack?.stop(); });

async function raw(path, { method = "POST", key = KEYS.alice, body, headers = {} } = {}) {
  const h = { ...headers };
  if (key) h.authorization = `Bearer ${key}`;
  if (body !== undefined && !h["content-type"]) h["content-type"] = "application/json";
  const r = await fetch(stack.url(path), { method, headers: h, body });
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, json: (() => { try { return JSON.parse(text); } catch { return null; } })() };
}

// The shape every error has, on every path.
function assertError(r, status, { code, type, message } = {}) {
  assert.equal(r.status, status, r.text);
  assert.match(r.headers.get("content-type"), /^application\/json/);
  assert.ok(r.headers.get("x-request-id"), "x-request-id on errors");
  validate("ErrorResponse", r.json);
  assert.deepEqual(Object.keys(r.json.error).sort(), ["code", "message", "param", "type"]);
  if (code !== undefined) assert.equal(r.json.error.code, code);
  if (type !== undefined) assert.equal(r.json.error.type, type);
  if (message !== undefined) assert.match(r.json.error.message, message);
}

test("bad JSON → 400", async () => {
  const r = await raw("/v1/chat/completions", { body: '{"model": "gpt-test", "messages": [' });
  assertError(r, 400, { type: "invalid_request_error", message: /parse the JSON/ });
  // Where the text stops being JSON, not the repeated key before it.
  const twice = await raw("/v1/chat/completions", { body: '{"model":"gpt-test","model":"gpt-test",\n "messages": [}' });
  assertError(twice, 400, { type: "invalid_request_error", message: /parse the JSON.*line 2, column 15/ });
  assert.doesNotMatch(twice.json.error.message, /duplicate/);
});

test("JSON that is not an object, or without a model → 400", async () => {
  assertError(await raw("/v1/responses", { body: "[1,2]" }), 400);
  assertError(await raw("/v1/responses", { body: '{"input":"x"}' }), 400, { code: "missing_required_parameter" });
  assertError(await raw("/v1/responses", { body: '{"model":7}' }), 400, { code: "invalid_type" });
});

test("no key → 401, bad key → 401 (SDK: AuthenticationError)", async () => {
  assertError(await raw("/v1/models", { method: "GET", key: null }), 401, { message: /didn't provide an API key/ });
  assertError(await raw("/v1/models", { method: "GET", key: "sk-wrong" }), 401, { code: "invalid_api_key" });
  assertError(await raw("/v1/models", { method: "GET", key: null, headers: { authorization: "Basic Zm9vOmJhcg==" } }), 401);
  const bad = new OpenAI({ apiKey: "sk-nope", baseURL: stack.url("/v1"), maxRetries: 0 });
  await assert.rejects(bad.chat.completions.create({ model: "gpt-test", messages: [] }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401 && e.code === "invalid_api_key");
});

test("unknown model → 404 model_not_found (SDK: NotFoundError)", async () => {
  await assert.rejects(client.responses.create({ model: "gpt-nope", input: "x" }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === "model_not_found" && /gpt-nope/.test(e.message));
  assertError(await raw("/v1/chat/completions", { body: '{"model":"gpt-nope","messages":[]}' }), 404, { code: "model_not_found" });
});

test("a body of exactly max_body_bytes is read; one byte more is 413", async () => {
  // The harness's max_body_bytes: 65536.
  const of = (n) => {
    const head = '{"model":"gpt-test","messages":[{"role":"user","content":"';
    const tail = '"}]}';
    return head + "x".repeat(n - head.length - tail.length) + tail;
  };
  const exact = await raw("/v1/chat/completions", { body: of(65536) });
  assert.equal(exact.status, 200, exact.text?.slice(0, 300));
  assertError(await raw("/v1/chat/completions", { body: of(65537) }), 413, { code: "request_too_large" });
});

test("body over max_body_bytes → 413, and the next request is fine", async () => {
  const big = JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "x".repeat(70000) }] });
  assertError(await raw("/v1/chat/completions", { body: big }), 413, { code: "request_too_large" });
  const ok = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "after" }] });
  assert.equal(ok.choices[0].message.content, "echo: after");
});

test("unknown route or method → 404 Invalid URL", async () => {
  assertError(await raw("/v1/foo", { method: "GET" }), 404, { message: /^Invalid URL \(GET \/v1\/foo\)$/ });
  assertError(await raw("/v1/responses", { method: "GET" }), 404, { message: /^Invalid URL \(GET \/v1\/responses\)$/ });
  assertError(await raw("/v1/models?limit=3", { method: "DELETE" }), 404, { message: /^Invalid URL \(DELETE \/v1\/models\)$/ });
});

test("upstream 500 and 429 pass through with their bodies", async () => {
  await assert.rejects(client.chat.completions.create({ model: "fault-500", messages: [] }),
    (e) => e instanceof OpenAI.InternalServerError && e.status === 500 && e.type === "server_error");
  const r = await raw("/v1/responses", { body: '{"model":"fault-429","input":"x"}' });
  assertError(r, 429, { code: "rate_limit_exceeded" });
  assert.equal(r.headers.get("retry-after"), "1", "retry-after relayed");
  assertError(await raw("/v1/responses", { body: '{"model":"fault-400","input":"x"}' }), 400, { code: "invalid_value" });
});

test("an upstream asked to stream that answers a JSON error → that error, not SSE", async () => {
  const r = await raw("/v1/responses", { body: '{"model":"json-error-stream","input":"x","stream":true}' });
  assertError(r, 400, { code: "unsupported_value" });
});

test("upstream unreachable → 502, silent past its timeout → 504, both retryable", async () => {
  const r = await raw("/v1/chat/completions", { body: '{"model":"unreachable","messages":[]}' });
  assertError(r, 502, { type: "server_error", message: /could not be reached/ });
  assert.equal(r.headers.get("x-should-retry"), null, "a transient failure: the SDK may retry");
  const s = await raw("/v1/chat/completions", { body: '{"model":"slow","messages":[]}' });
  assertError(s, 504, { message: /sent nothing for 1 s/ });
  assert.equal(s.headers.get("x-should-retry"), null);
});

test("a model whose upstream key is unset → clear 500 naming the cause, not retried", async () => {
  const r = await raw("/v1/chat/completions", { body: '{"model":"nokey","messages":[]}' });
  assertError(r, 500, { message: /nokey is not usable.*SG_TEST_NEVER_SET is not set/ });
  assert.equal(r.headers.get("x-should-retry"), "false", "deterministic: retrying cannot fix it");
});

test("an upstream that drops mid-stream → the SDK raises, not a silent truncation", async () => {
  const stream = await client.chat.completions.create({
    model: "drop", stream: true, messages: [{ role: "user", content: "a b c d e f g h" }],
  });
  await assert.rejects((async () => { for await (const _ of stream); })(), (e) => e instanceof OpenAI.APIError);
  const rs = client.responses.stream({ model: "drop", input: "a b c d e f g h" });
  await assert.rejects((async () => { for await (const _ of rs); })(), (e) => e instanceof OpenAI.APIError);
});

test("a client that hangs up mid-stream leaves a working gateway", async () => {
  const ac = new AbortController();
  const r = await fetch(stack.url("/v1/chat/completions"), {
    method: "POST", signal: ac.signal,
    headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "slowstream", stream: true, messages: [{ role: "user", content: "a b c d e f g h i j" }] }),
  });
  const reader = r.body.getReader();
  await reader.read();
  ac.abort();
  const ok = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "still" }] });
  assert.equal(ok.choices[0].message.content, "echo: still");
});

test("/healthz needs no key and the log never shows a key", async () => {
  const r = await raw("/healthz", { method: "GET", key: null });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, { status: "ok" });
  const log = stack.log();
  assert.ok(!log.includes("sk-wrong") && !log.includes("sk-nope"));
  assert.match(log, /key=- method=GET path=\/v1\/models model=- status=401 /);
});
