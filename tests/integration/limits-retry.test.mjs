// The official SDK retries a 429 rate_limit_exceeded after the retry-after
// sandgate sends, and is then served in the key's next minute: a key with
// rpm = 1 asks again near its minute's end; one retry, once the minute
// is over, succeeds. (A minute is a minute: this test takes one.)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import OpenAI from "openai";
import { startStack } from "./harness.mjs";

const ONE = "sk-one-" + crypto.randomBytes(8).toString("hex");
let stack;

before(async () => { stack = await startStack({ keys: `{ name = "one"; key = "${ONE}"; rpm = 1; }` }); });
after(async () => { await stack?.stop(); });

test("a 429 rate_limit_exceeded is retried by the SDK after retry-after, and then served", { timeout: 150000 }, async () => {
  const ask = (c) => c.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] }).withResponse();
  const first = await ask(new OpenAI({ apiKey: ONE, baseURL: stack.url("/v1"), maxRetries: 0 }));
  const reset = first.response.headers.get("x-ratelimit-reset-requests");
  assert.match(reset, /^(59s|1m0s)$/, "a fresh minute");
  // Near the minute's end (it opened with the first request).
  await sleep(57000);
  await stack.resetFake();
  const sdk = new OpenAI({ apiKey: ONE, baseURL: stack.url("/v1"), maxRetries: 2 });
  const t = Date.now();
  const again = await ask(sdk);
  const waited = Date.now() - t;
  assert.equal(again.data.choices[0].message.content, "echo: hi");
  assert.ok(waited >= 1000 && waited < 20000, `the SDK waited ${waited} ms, as retry-after said`);
  assert.equal(again.response.headers.get("x-ratelimit-remaining-requests"), "0", "the new minute's one request");
  assert.equal((await stack.fakeRequests()).length, 1, "the refused attempt never reached the upstream");
});
