// The usage ledger: every request that reached a model or a sandbox is one
// row, its tokens summed over the loop's turns exactly as the upstream
// reported them (what the fake sent is the truth), relayed answers and
// streams included, written by the reaper within a moment.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startStack, KEYS, sseEvents } from "./harness.mjs";

const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
let stack, alice, bob;

before(async () => {
  stack = await startStack({ sandboxes: true, interceptionTool: "local" });
  alice = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
  bob = new OpenAI({ apiKey: KEYS.bob, baseURL: stack.url("/v1"), maxRetries: 0 });
});
after(async () => { await stack?.stop(); });

// The store's rows, numbers as numbers (PostgreSQL's BIGINT comes as text).
function sql(q) {
  return stack.sql(q).map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) =>
    [k, typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v])));
}

// The usage in what the fake sent: a JSON answer's, or each stream event's.
function sent(q) {
  const add = (acc, u) => {
    if (!u) return;
    acc.input += u.input_tokens ?? u.prompt_tokens ?? 0;
    acc.output += u.output_tokens ?? u.completion_tokens ?? 0;
  };
  const acc = { input: 0, output: 0 };
  const body = q.response_body ?? "";
  if (body.startsWith("{")) add(acc, JSON.parse(body).usage);
  else for (const e of sseEvents(body)) {
    if (e.data === "[DONE]" || !e.data) continue;
    const d = JSON.parse(e.data);
    add(acc, d.usage ?? (d.type === "response.completed" ? d.response.usage : null));
  }
  return acc;
}

async function rows(n) {
  for (let i = 0; i < 50; i++) {
    const r = sql("SELECT * FROM usage ORDER BY started_ms");
    if (r.length >= n) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
  return sql("SELECT * FROM usage ORDER BY started_ms");
}

test("each request is one row, its tokens those the upstream sent", async () => {
  await stack.resetFake();
  await alice.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "one" }] });
  const s = await alice.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "two two" }],
    stream: true, stream_options: { include_usage: true } });
  for await (const _ of s);
  await bob.responses.create({ model: "gpt-test", input: "three three three" });
  const rs = await bob.responses.create({ model: "gpt-test", input: "four", stream: true });
  for await (const _ of rs);
  const r = await alice.responses.create({ model: "ci-primes", input: "Multiply the first six primes.", tools: CI });
  assert.match(r.output_text, /30030/);
  await alice.models.list(); // reaches neither: no row

  const got = await rows(5);
  assert.equal(got.length, 5, "one row a request that spent, none for /v1/models");
  const fake = { input: 0, output: 0, calls: 0 };
  for (const q of await stack.fakeRequests()) {
    const u = sent(q);
    fake.input += u.input;
    fake.output += u.output;
    fake.calls++;
  }
  const sum = (k) => got.reduce((a, x) => a + x[k], 0);
  assert.equal(sum("input_tokens"), fake.input);
  assert.equal(sum("output_tokens"), fake.output);
  assert.equal(sum("model_requests"), fake.calls);
  const loop = got.find((x) => x.model === "ci-primes");
  assert.equal(loop.model_requests, 2, "both turns of the loop");
  assert.equal(loop.input_tokens, r.usage.input_tokens);
  assert.equal(loop.code_runs, 1);
  assert.equal(loop.sessions, 1);
  assert.equal(loop.tool, "local");
  assert.ok(loop.sandbox_ms >= 0);
  assert.equal(loop.surface, "responses");
  assert.equal(loop.status, 200);
  assert.equal(loop.key_name, "alice");
  assert.match(loop.key_id, /^key_[0-9a-f]{24}$/);
  assert.equal(new Set(got.map((x) => x.key_id)).size, 2, "two keys, two ids");
  assert.deepEqual([...new Set(got.map((x) => x.surface))].sort(), ["chat", "responses"]);
});

test("an upstream error is counted as a call, with the status the client got", async () => {
  const before = sql("SELECT count(*) AS n FROM usage")[0].n;
  await assert.rejects(alice.chat.completions.create({ model: "fault-500", messages: [{ role: "user", content: "x" }] }));
  const got = await rows(before + 1);
  assert.equal(got.length, before + 1);
  const last = got.find((x) => x.model === "fault-500");
  assert.equal(last.status, 500);
  assert.equal(last.model_requests, 1);
  assert.equal(last.input_tokens, 0);
});
