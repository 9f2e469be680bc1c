// Mounted under a prefix: routes match REQUEST_URI minus the prefix, with
// the query stripped, whatever SCRIPT_NAME/PATH_INFO the server sets.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startStack, KEYS } from "./harness.mjs";

let stack;

before(async () => { stack = await startStack({ mount_prefix: "/api" }); });
after(async () => { await stack?.stop(); });

test("the SDK works with baseURL under the prefix", async () => {
  const c = new OpenAI({ apiKey: KEYS.bob, baseURL: stack.url("/v1"), maxRetries: 0 });
  const r = await c.responses.create({ model: "gpt-test", input: "prefixed" });
  assert.equal(r.output_text, "echo: prefixed");
});

test("query strings are ignored for routing; the prefix is not part of the route", async () => {
  const r = await fetch(stack.url("/v1/models?limit=2&after=x"), { headers: { authorization: `Bearer ${KEYS.bob}` } });
  assert.equal(r.status, 200);
  const h = await fetch(`${stack.base}/api/healthz?probe=1`);
  assert.equal(h.status, 200);
  const miss = await fetch(stack.url("/v1/api/v1/models?x=1"), { headers: { authorization: `Bearer ${KEYS.bob}` } });
  assert.equal(miss.status, 404);
  assert.equal((await miss.json()).error.message, "Invalid URL (GET /v1/api/v1/models)");
});
