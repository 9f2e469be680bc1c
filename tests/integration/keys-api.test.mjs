// Key management over HTTP (/v1/organization/api_keys[/{id}]) on a real
// stack: an admin key makes a key whose secret is shown once and works on
// /v1/responses at once; what it spends reaches its object (last_used_at,
// spend) once the reaper wrote the ledger; new limits are what GET then
// shows; a revoked key gets 401. The config file's keys are listed and
// read-only. Tenant keys get 403, no key 401; bad bodies 400 with their
// param. Every 200 is OpenAI's shape (ProjectApiKey, its list, its delete
// answer: the spec allows members beyond its own, so sandgate's source,
// limits, effective_limits and spend stay in what is validated).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { startStack, KEYS, request, waitFor } from "./harness.mjs";
import { validate } from "./schema.mjs";

const ADMIN = "sk-admin-" + crypto.randomBytes(8).toString("hex");
const sha256 = (s) => crypto.createHash("sha256").update(s).digest("hex");
const BASE = "/v1/organization/api_keys";
// USD per 1M tokens: a few tokens cost a visible amount.
const PRICED = 'price = { input = 1000.0; output = 2000.0; };';

let stack;

before(async () => {
  stack = await startStack({ models: (model) => model("priced", "echo", PRICED) });
  // An admin key, added as an operator would: edit the config, reload.
  await stack.reload((c) => c.replace(/^auth: \{$/m,
    `auth: {\n  admin_keys = ( { name = "ops"; key_sha256 = "${sha256(ADMIN)}"; } );`));
});
after(async () => { await stack?.stop(); });

const admin = (method, p, body, key = ADMIN) =>
  request(stack, method, p, { key, body: body === undefined ? undefined : JSON.stringify(body) });

function assertError(r, status, param) {
  assert.equal(r.status, status, r.text);
  validate("ErrorResponse", r.json);
  assert.deepEqual(Object.keys(r.json.error).sort(), ["code", "message", "param", "type"]);
  if (param !== undefined) assert.equal(r.json.error.param, param, r.text);
  assert.ok(r.json.error.message.length > 10);
}

// A 200 key object: OpenAI's schema, and sandgate's members.
function assertKey(r, { name, source = "api" } = {}) {
  assert.equal(r.status, 200, r.text);
  assert.match(r.headers.get("content-type"), /^application\/json/);
  const k = r.json;
  validate("ProjectApiKey", k);
  assert.equal(k.object, "organization.project.api_key");
  assert.match(k.id, /^key_[0-9a-f]{24}$/);
  if (name) assert.equal(k.name, name);
  assert.equal(k.source, source);
  assert.equal(typeof k.limits, "object");
  for (const m of ["rpm", "tpm", "budget", "budget_period", "sandbox_seconds", "max_concurrent", "tools"])
    assert.ok(m in k.effective_limits, m);
  assert.deepEqual(Object.keys(k.spend).sort(), ["amount", "period", "period_start", "requests", "sandbox_seconds", "tokens"]);
  return k;
}

async function respond(key, input = "hello there") {
  return request(stack, "POST", "/v1/responses", { key, body: JSON.stringify({ model: "priced", input }) });
}

test("no key → 401, a tenant's key → 403, on every keys route", async () => {
  const routes = [["GET", BASE], ["POST", BASE, { name: "x" }], ["GET", `${BASE}/key_x`],
    ["POST", `${BASE}/key_x`, { rpm: 1 }], ["DELETE", `${BASE}/key_x`]];
  for (const [m, p, b] of routes) {
    assertError(await admin(m, p, b, null), 401);
    assertError(await admin(m, p, b, "sk-nobody"), 401);
    assertError(await admin(m, p, b, KEYS.alice), 403);
    assertError(await admin(m, p, b, KEYS.bob), 403);
  }
  // Nothing was made by the refused create.
  const list = await admin("GET", BASE);
  assert.ok(!list.json.data.some((k) => k.name === "x"));
});

test("create → the secret works at once, spend shows once the ledger has it, update, revoke → 401", async () => {
  const made = await admin("POST", BASE, { name: "team-x", budget: 25, budget_period: "week", rpm: 600 });
  const k = assertKey(made, { name: "team-x" });
  const secret = k.value;
  assert.match(secret, /^sk-sg-[0-9a-f]{48}$/);
  assert.equal(k.redacted_value, `${secret.slice(0, 6)}...${secret.slice(-4)}`);
  assert.equal(k.last_used_at, null);
  assert.equal(k.owner_project_access, "active");
  assert.deepEqual(k.limits, { rpm: 600, budget: 25, budget_period: "week" });
  assert.equal(k.effective_limits.budget, 25);
  assert.equal(k.spend.period, "week");
  assert.equal(k.spend.amount, 0);

  // It works on the model routes from its first request.
  const r = await respond(secret);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.object, "response");

  // The reaper writes the ledger within a moment: poll, bounded.
  let got;
  await waitFor(async () => {
    got = await admin("GET", `${BASE}/${k.id}`);
    return got.json?.last_used_at !== null;
  }, "the key's use in the ledger", 15000);
  const used = assertKey(got, { name: "team-x" });
  assert.equal(used.value, undefined, "the secret is shown once");
  assert.ok(Math.abs(used.last_used_at - Date.now() / 1000) < 120, `${used.last_used_at}`);
  assert.equal(used.spend.requests, 1);
  const u = r.json.usage;
  assert.equal(used.spend.tokens, u.input_tokens + u.output_tokens);
  const usd = (u.input_tokens * 1000 + u.output_tokens * 2000) / 1e6;
  assert.ok(Math.abs(used.spend.amount - usd) < 1e-9, `${used.spend.amount} vs ${usd}`);
  const monday = new Date();
  monday.setUTCHours(0, 0, 0, 0);
  monday.setUTCDate(monday.getUTCDate() - ((monday.getUTCDay() + 6) % 7));
  assert.equal(used.spend.period_start, monday.getTime() / 1000);

  // Update: given members replace, null clears, the rest stay.
  const updR = await admin("POST", `${BASE}/${k.id}`, { rpm: 60, budget: null, tools: ["local"] });
  const upd = assertKey(updR, { name: "team-x" });
  assert.deepEqual(upd.limits, { rpm: 60, budget_period: "week", tools: ["local"] });
  assert.equal(upd.value, undefined);
  const againR = await admin("GET", `${BASE}/${k.id}`);
  const again = assertKey(againR, { name: "team-x" });
  assert.deepEqual(again.limits, upd.limits);
  assert.deepEqual(again.effective_limits.tools, ["local"]);
  assert.equal(again.effective_limits.rpm, 60);
  assert.equal(again.redacted_value, k.redacted_value);
  assert.equal((await respond(secret)).status, 200, "still works");

  // Revoke: OpenAI's answer, then 401 on the model routes; gone from the list.
  const del = await admin("DELETE", `${BASE}/${k.id}`);
  assert.equal(del.status, 200, del.text);
  validate("ProjectApiKeyDeleteResponse", del.json);
  assert.deepEqual(del.json, { object: "organization.project.api_key.deleted", id: k.id, deleted: true });
  const refused = await respond(secret);
  assertError(refused, 401);
  assertError(await admin("GET", `${BASE}/${k.id}`), 404);
  assertError(await admin("DELETE", `${BASE}/${k.id}`), 404);
  const list = await admin("GET", BASE);
  assert.ok(!list.json.data.some((x) => x.id === k.id));

  // The secret and its hash were never in any answer but the first, nor
  // in the log.
  for (const t of [got.text, updR.text, againR.text, del.text, list.text, stack.log()]) {
    assert.ok(!t.includes(secret));
    assert.ok(!t.includes(sha256(secret)));
  }
});

test("the config's keys are listed first, read-only: update and delete are 400", async () => {
  const list = await admin("GET", BASE);
  assert.equal(list.status, 200, list.text);
  validate("ProjectApiKeyListResponse", list.json);
  const names = list.json.data.map((k) => k.name);
  assert.deepEqual(names.slice(0, 3), ["alice", "bob", "carol"]);
  const alice = list.json.data[0];
  for (const k of list.json.data.slice(0, 3)) {
    validate("ProjectApiKey", k);
    assert.equal(k.source, "config");
    assert.equal(k.redacted_value, "sk-...(config)");
  }
  assert.deepEqual(alice.limits, { max_concurrent: 8 });
  assert.equal(alice.effective_limits.max_concurrent, 8);
  // The ledger's id for alice is this one.
  assert.equal(alice.id, (await admin("GET", `${BASE}/${alice.id}`)).json.id);

  const upd = await admin("POST", `${BASE}/${alice.id}`, { rpm: 1 });
  assertError(upd, 400);
  assert.match(upd.json.error.message, /config file/);
  const del = await admin("DELETE", `${BASE}/${alice.id}`);
  assertError(del, 400);
  assert.match(del.json.error.message, /config file/);
  // Still the same, and still working.
  assert.deepEqual((await admin("GET", `${BASE}/${alice.id}`)).json.limits, { max_concurrent: 8 });
  assert.equal((await respond(KEYS.alice)).status, 200);
  // A config key's name is taken.
  assertError(await admin("POST", BASE, { name: "alice" }), 409, "name");
});

test("bad bodies are 400 with their param, and make nothing", async () => {
  const before = (await admin("GET", BASE)).json.data.length;
  const cases = [
    [{}, "name"], [{ name: 7 }, "name"], [{ name: "" }, "name"], [{ name: "x".repeat(64) }, "name"],
    [{ name: "line\nbreak" }, "name"], [{ name: "ok", rpm: "fast" }, "rpm"], [{ name: "ok", tpm: -5 }, "tpm"],
    [{ name: "ok", budget: "5" }, "budget"], [{ name: "ok", budget_period: "year" }, "budget_period"],
    [{ name: "ok", max_concurrent: 0 }, "max_concurrent"], [{ name: "ok", tools: ["local", "nope"] }, "tools"],
    [{ name: "ok", tools: "local" }, "tools"], [{ name: "ok", colour: "red" }, "colour"],
  ];
  for (const [body, param] of cases) {
    const r = await admin("POST", BASE, body);
    assertError(r, 400, param);
  }
  const unknown = await admin("POST", BASE, { name: "ok", rmp: 5 });
  assert.equal(unknown.json.error.code, "unknown_parameter");
  const notJson = await request(stack, "POST", BASE, { key: ADMIN, body: "{\"name\":" });
  assertError(notJson, 400);
  assertError(await admin("POST", BASE, [1]), 400);
  assert.equal((await admin("GET", BASE)).json.data.length, before);

  // Updates too, and an unknown id is OpenAI's 404.
  const k = assertKey(await admin("POST", BASE, { name: "patchy" }));
  for (const [body, param] of [[{ rpm: 1.5 }, "rpm"], [{ tools: ["nope"] }, "tools"], [{ name: "renamed" }, "name"],
    [{ sandbox_seconds: "lots" }, "sandbox_seconds"], [{ value: "sk-mine" }, "value"]])
    assertError(await admin("POST", `${BASE}/${k.id}`, body), 400, param);
  assert.deepEqual((await admin("GET", `${BASE}/${k.id}`)).json.limits, {});
  assertError(await admin("GET", `${BASE}/key_000000000000000000000000`), 404);
  assertError(await admin("POST", `${BASE}/nope`, { rpm: 1 }), 404);
  assertError(await admin("GET", `${BASE}?limit=0`), 400, "limit");
  assertError(await admin("GET", `${BASE}?limit=101`), 400, "limit");
  assertError(await admin("GET", `${BASE}?after=key_000000000000000000000000`), 400, "after");
  assert.equal((await admin("DELETE", `${BASE}/${k.id}`)).status, 200);
  assertKey(await admin("POST", BASE, { name: "patchy" }), { name: "patchy" }); // the name is free again
});

test("the list pages as OpenAI's lists do: limit, after, has_more", async () => {
  const made = [];
  for (const n of ["page-1", "page-2", "page-3"])
    made.push(assertKey(await admin("POST", BASE, { name: n })).id);
  const all = (await admin("GET", `${BASE}?limit=100`)).json.data.map((k) => k.id);
  assert.deepEqual(all.slice(-3), made, "the store's keys oldest first, after the config's");
  const seen = [];
  let after = "";
  for (let i = 0; i < 20; i++) {
    const r = await admin("GET", `${BASE}?limit=2${after ? `&after=${after}` : ""}`);
    assert.equal(r.status, 200, r.text);
    validate("ProjectApiKeyListResponse", r.json);
    for (const k of r.json.data) validate("ProjectApiKey", k);
    assert.ok(r.json.data.length <= 2);
    assert.equal(r.json.first_id, r.json.data[0].id);
    assert.equal(r.json.last_id, r.json.data.at(-1).id);
    seen.push(...r.json.data.map((k) => k.id));
    if (!r.json.has_more) break;
    after = r.json.last_id;
  }
  assert.deepEqual(seen, all);
  assert.ok(!JSON.stringify(all).includes("value"));
});
