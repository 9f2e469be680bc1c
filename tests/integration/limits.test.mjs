// A key's limits, held as OpenAI holds its own: rpm exact under any
// concurrency (64 at once against rpm = 10: exactly 10 served), the
// x-ratelimit-* headers on every model answer (the SDK reads them), a
// spent budget refused with insufficient_quota that the official SDK does
// not retry, and a key's sandbox seconds.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import OpenAI from "openai";
import { startStack, storeKind } from "./harness.mjs";

const RPM = "sk-rpm-" + crypto.randomBytes(8).toString("hex");
const BUDGET = "sk-budget-" + crypto.randomBytes(8).toString("hex");
const TPM = "sk-tpm-" + crypto.randomBytes(8).toString("hex");
const SBX = "sk-sbx-" + crypto.randomBytes(8).toString("hex");
const TPM2 = "sk-tpm2-" + crypto.randomBytes(8).toString("hex");
const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
let stack, other;

before(async () => {
  stack = await startStack({
    sandboxes: true, interceptionTool: "local",
    server: "queue_timeout = 5;",
    keys: `{ name = "rpm"; key = "${RPM}"; rpm = 10; },
    { name = "budget"; key = "${BUDGET}"; budget = 0.000001; budget_period = "day"; },
    { name = "tpm"; key = "${TPM}"; tpm = 20; },
    { name = "sbx"; key = "${SBX}"; sandbox_seconds = 1; },
    { name = "tpm2"; key = "${TPM2}"; tpm = 20; }`,
    // Priced: a dollar a token, so one request spends the budget.
    models: (model) => model("priced", "echo", "price = { input = 1000000.0; output = 1000000.0; };"),
    box: storeKind === "postgresql" ? "box-a" : undefined,
  });
  // On PostgreSQL a second box shares the store, and the keys' minutes.
  if (storeKind === "postgresql")
    other = await startStack({ ...stack.opts, box: "box-b", storeUrl: stack.storeUrl });
});
after(async () => {
  await other?.stop();
  await stack?.stop();
});

const client = (key, retries = 0, box = stack) => new OpenAI({ apiKey: key, baseURL: box.url("/v1"), maxRetries: retries });

test("rpm = 10: of 64 requests at once exactly 10 are served (across both boxes on PostgreSQL), the rest get 429", async () => {
  const cs = [client(RPM), ...(other ? [client(RPM, 0, other)] : [])];
  const all = await Promise.allSettled(Array.from({ length: 64 }, (_, i) =>
    cs[i % cs.length].chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: `n${i}` }] }).withResponse()));
  const ok = all.filter((r) => r.status === "fulfilled");
  const refused = all.filter((r) => r.status === "rejected");
  assert.equal(ok.length, 10, "exactly the limit served");
  for (const r of refused) {
    assert.equal(r.reason.status, 429, r.reason.message);
    assert.equal(r.reason.code, "rate_limit_exceeded");
    assert.equal(r.reason.type, "requests");
    const after = Number(r.reason.headers.get("retry-after"));
    assert.ok(after >= 1 && after <= 60, `retry-after ${after}: ${r.reason.message}`);
    assert.equal(r.reason.headers.get("x-ratelimit-limit-requests"), "10");
    assert.equal(r.reason.headers.get("x-ratelimit-remaining-requests"), "0");
  }
  const remaining = ok.map((r) => Number(r.value.response.headers.get("x-ratelimit-remaining-requests"))).sort((a, b) => a - b);
  assert.deepEqual(remaining, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "each answer tells what is left");
  for (const r of ok) {
    assert.equal(r.value.response.headers.get("x-ratelimit-limit-requests"), "10");
    assert.match(r.value.response.headers.get("x-ratelimit-reset-requests"), /^(\d+ms|\d+s|\d+m\d+s)$/);
    assert.equal(r.value.response.headers.get("x-ratelimit-limit-tokens"), null, "no tpm, no token headers");
  }
});

test("a key without limits gets no x-ratelimit headers of sandgate's", async () => {
  const { response } = await client((await import("./harness.mjs")).KEYS.bob).chat.completions
    .create({ model: "gpt-test", messages: [{ role: "user", content: "x" }] }).withResponse();
  assert.equal(response.headers.get("x-ratelimit-limit-requests"), null);
});

test("tpm: once the minute's tokens are reported, the next request waits for the window", async () => {
  const c = client(TPM);
  const first = await c.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "a long enough sentence to pass twenty tokens in all of it" }] }).withResponse();
  assert.equal(first.response.headers.get("x-ratelimit-limit-tokens"), "20");
  assert.ok(first.data.usage.total_tokens >= 20, "the fake reported the tokens");
  const err = await c.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "x" }] }).catch((e) => e);
  assert.equal(err.status, 429);
  assert.equal(err.code, "rate_limit_exceeded");
  assert.equal(err.type, "tokens");
  assert.equal(err.headers.get("x-ratelimit-remaining-tokens"), "0");
});

test("a Chat stream that did not ask for usage still counts against tpm, and the client sees no usage", async () => {
  // A key of its own: a fresh minute.
  const c = client(TPM2);
  await stack.resetFake();
  const s = await c.chat.completions.create({ model: "gpt-test", stream: true,
    messages: [{ role: "user", content: "a long enough sentence to pass twenty tokens in all of it" }] });
  const chunks = [];
  for await (const ch of s) chunks.push(ch);
  assert.ok(chunks.length > 1);
  for (const ch of chunks) assert.equal("usage" in ch, false, "no usage the client did not ask for");
  assert.ok(chunks.every((ch) => ch.choices.length > 0), "no usage-only last chunk");
  const seen = (await stack.fakeRequests()).find((q) => q.body?.stream === true);
  assert.deepEqual(seen.body.stream_options, { include_usage: true }, "the upstream was asked");
  const err = await c.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "x" }] }).catch((e) => e);
  assert.equal(err.status, 429, "its tokens counted");
  assert.equal(err.code, "rate_limit_exceeded");
});

test("budget: spent, the next request gets insufficient_quota, which the SDK does not retry", async () => {
  const c = client(BUDGET, 3);
  await c.chat.completions.create({ model: "priced", messages: [{ role: "user", content: "spend" }] });
  await stack.resetFake();
  let err;
  for (let i = 0; i < 20 && !err; i++) {
    err = await c.chat.completions.create({ model: "priced", messages: [{ role: "user", content: "again" }] }).then(() => null, (e) => e);
    if (!err) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(err, "refused once the ledger knows the spend");
  assert.equal(err.status, 429);
  assert.equal(err.code, "insufficient_quota");
  assert.equal(err.type, "insufficient_quota");
  assert.equal(err.headers.get("x-should-retry"), "false");
  // maxRetries 3, yet one attempt: the fake saw nothing after the reset
  // but the requests that were let in before the ledger knew.
  const before = (await stack.fakeRequests()).length;
  await assert.rejects(c.chat.completions.create({ model: "priced", messages: [{ role: "user", content: "no" }] }), { status: 429 });
  assert.equal((await stack.fakeRequests()).length, before, "refused before the upstream");
});

test("sandbox seconds: spent, a code request is refused with insufficient_quota", async () => {
  const c = client(SBX);
  const r = await c.responses.create({ model: "ci-primes", input: "go", tools: CI });
  assert.match(r.output_text, /30030/);
  // The run took well under a second: the key has time left until it has
  // spent a second in all; run code until refused, bounded.
  let err = null;
  for (let i = 0; i < 30 && !err; i++) {
    let sbx = null;
    try {
      sbx = await c.post("/sandboxes", { body: {} });
      await c.post(`/sandboxes/${sbx.id}/code`, { body: { code: "import time; time.sleep(0.4)" } });
    } catch (e) {
      err = e;
    }
    if (sbx) await stack.call("DELETE", `/v1/sandboxes/${sbx.id}`, undefined, SBX).catch(() => {});
    if (!err) await new Promise((res) => setTimeout(res, 250));
  }
  assert.ok(err, "refused once its sandbox seconds are spent");
  assert.equal(err.status, 429);
  assert.equal(err.code, "insufficient_quota");
});
