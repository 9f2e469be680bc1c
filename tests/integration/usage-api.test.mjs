// OpenAI's Usage and Costs APIs (GET /v1/organization/usage/completions,
// .../code_interpreter_sessions, /v1/organization/costs) on a real stack:
// who may call them, every 200 against OpenAI's schema (UsageResponse)
// on the empty ledger, every malformed parameter as OpenAI's 400, and an
// admin key kept off the tenant routes. The sums over real rows come once
// the ledger (store/usage.c) is in; test_org_usage covers them on a
// made-up one.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import { spawnSync } from "node:child_process";
import OpenAI from "openai";
import { startStack, KEYS, request } from "./harness.mjs";
import { validate } from "./schema.mjs";

const ADMIN = "sk-admin-" + crypto.randomBytes(8).toString("hex");
const sha256 = (s) => crypto.createHash("sha256").update(s).digest("hex");
const DAY = 86400;
const ROUTES = ["/v1/organization/usage/completions",
  "/v1/organization/usage/code_interpreter_sessions", "/v1/organization/costs"];
// Three whole days, a week back.
const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
const T0 = today - 7 * DAY;

let stack, admin;

before(async () => {
  stack = await startStack();
  // The harness's config has no admin key: one is added as an operator
  // would, by editing the config and reloading.
  await stack.reload((c) => c.replace(/^auth: \{$/m,
    `auth: {\n  admin_keys = ( { name = "ops"; key_sha256 = "${sha256(ADMIN)}"; } );`));
  admin = new OpenAI({ apiKey: "unused", adminAPIKey: ADMIN, baseURL: stack.url("/v1"), maxRetries: 0, timeout: 15000 });
});
after(async () => { await stack?.stop(); });

const get = (p, key = ADMIN) => request(stack, "GET", p, { key });

function assertError(r, status, { param, code, type = "invalid_request_error" } = {}) {
  assert.equal(r.status, status, r.text);
  validate("ErrorResponse", r.json);
  assert.deepEqual(Object.keys(r.json.error).sort(), ["code", "message", "param", "type"]);
  assert.equal(r.json.error.type, type);
  if (param !== undefined) assert.equal(r.json.error.param, param, r.text);
  if (code !== undefined) assert.equal(r.json.error.code, code, r.text);
  assert.ok(r.json.error.message.length > 10);
}

// A 200 that is OpenAI's page, its buckets whole and in order.
function assertPage(r, { buckets, width = DAY, start = T0, more = false }) {
  assert.equal(r.status, 200, r.text);
  assert.match(r.headers.get("content-type"), /^application\/json/);
  assert.ok(r.headers.get("x-request-id"));
  validate("UsageResponse", r.json);
  assert.equal(r.json.object, "page");
  assert.equal(r.json.has_more, more);
  if (more) assert.match(r.json.next_page, /^page_/);
  else assert.equal(r.json.next_page, null);
  assert.equal(r.json.data.length, buckets);
  r.json.data.forEach((b, i) => {
    assert.deepEqual(b, { object: "bucket", start_time: start + i * width, end_time: start + (i + 1) * width, results: [] });
  });
}

test("no key → 401, a tenant's key → 403, on all three routes", async () => {
  for (const p of ROUTES) {
    assertError(await get(`${p}?start_time=${T0}`, null), 401);
    assertError(await get(`${p}?start_time=${T0}`, "sk-nobody"), 401);
    assertError(await get(`${p}?start_time=${T0}`, KEYS.alice), 403);
    assertError(await get(`${p}?start_time=${T0}`, KEYS.bob), 403);
  }
});

test("an admin key gets every bucket of the empty ledger, as OpenAI's schema says", async () => {
  for (const p of ROUTES) {
    assertPage(await get(`${p}?start_time=${T0}&end_time=${T0 + 3 * DAY}`), { buckets: 3 });
    // start_time is rounded down to its bucket, end_time up.
    assertPage(await get(`${p}?start_time=${T0 + 3600 + 7}&end_time=${T0 + 2 * DAY + 1}`), { buckets: 3 });
  }
  for (const p of ROUTES.slice(0, 2)) {
    assertPage(await get(`${p}?start_time=${T0 + 60}&end_time=${T0 + 3 * 3600}&bucket_width=1h`),
      { buckets: 3, width: 3600 });
    assertPage(await get(`${p}?start_time=${T0 + 59}&end_time=${T0 + 300}&bucket_width=1m`),
      { buckets: 5, width: 60 });
  }
  for (const q of ["group_by=model&group_by=api_key_id", "group_by[]=project_id&group_by[]=user_id",
    "group_by=batch&group_by=service_tier", "api_key_ids[]=key_x&models[]=gpt-test", "batch=false", "project_ids=p"])
    assertPage(await get(`${ROUTES[0]}?start_time=${T0}&end_time=${T0 + DAY}&${q}`), { buckets: 1 });
  for (const q of ["group_by=project_id", "group_by=api_key_id&api_key_ids=key_x"])
    assertPage(await get(`${ROUTES[1]}?start_time=${T0}&end_time=${T0 + DAY}&${q}`), { buckets: 1 });
  for (const q of ["group_by=line_item", "group_by[]=api_key_id&group_by[]=project_id", "api_key_ids=key_x"])
    assertPage(await get(`${ROUTES[2]}?start_time=${T0}&end_time=${T0 + DAY}&${q}`), { buckets: 1 });
});

test("pages: up to now, limit buckets each, next_page leads through all of them once", async () => {
  for (const p of ROUTES) {
    const seen = [];
    let cursor = null, pages = 0;
    do {
      const r = await get(`${p}?start_time=${T0}&limit=3${cursor ? "&page=" + cursor : ""}`);
      assert.equal(r.status, 200, r.text);
      validate("UsageResponse", r.json);
      assert.ok(r.json.data.length <= 3);
      seen.push(...r.json.data.map((b) => b.start_time));
      cursor = r.json.has_more ? r.json.next_page : null;
      if (!r.json.has_more) assert.equal(r.json.next_page, null);
      assert.ok(++pages <= 4, "at most 4 pages for 8 days");
    } while (cursor);
    // T0 .. today: 8 days, the last the one now is in.
    assert.deepEqual(seen, Array.from({ length: 8 }, (_, i) => T0 + i * DAY));
  }
});

test("the Node SDK's group_by[]= and curl's group_by= are both read", async () => {
  const page = await admin.admin.organization.usage.completions({ start_time: T0, end_time: T0 + 2 * DAY,
    group_by: ["model", "api_key_id"], api_key_ids: ["key_x"], models: ["gpt-test"] });
  validate("UsageResponse", page);
  assert.equal(page.data.length, 2);
  const costs = await admin.admin.organization.usage.costs({ start_time: T0, end_time: T0 + DAY, group_by: ["line_item"] });
  validate("UsageResponse", costs);
  // A value that is not OpenAI's is refused however it is written: the
  // parameter was read.
  await assert.rejects(admin.admin.organization.usage.completions({ start_time: T0, group_by: ["model", "nope"] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "group_by");
  for (const q of ["group_by=nope", "group_by[]=nope", "group_by%5B%5D=nope", "group_by=model&group_by=nope"])
    assertError(await get(`${ROUTES[0]}?start_time=${T0}&${q}`), 400, { param: "group_by", code: "invalid_value" });
});

test("each malformed parameter → OpenAI's 400 naming it", async () => {
  const [compl, ci, costs] = ROUTES;
  const cases = [
    [compl, "", "start_time", "missing_required_parameter"],
    [costs, `end_time=${T0}`, "start_time", "missing_required_parameter"],
    [compl, "start_time=yesterday", "start_time", "invalid_type"],
    [ci, "start_time=1.5", "start_time", "invalid_type"],
    [compl, "start_time=-5", "start_time", "invalid_value"],
    [compl, "start_time=99999999999999999999", "start_time", "invalid_value"],
    [compl, `start_time=${T0}&end_time=${T0}`, "end_time", "invalid_value"],
    [costs, `start_time=${T0}&end_time=${T0 - 1}`, "end_time", "invalid_value"],
    [ci, `start_time=${T0}&end_time=soon`, "end_time", "invalid_type"],
    [compl, `start_time=${T0}&bucket_width=1w`, "bucket_width", "invalid_value"],
    [costs, `start_time=${T0}&bucket_width=1h`, "bucket_width", "invalid_value"],
    [compl, `start_time=${T0}&group_by=line_item`, "group_by", "invalid_value"],
    [ci, `start_time=${T0}&group_by[]=model`, "group_by", "invalid_value"],
    [costs, `start_time=${T0}&group_by=model`, "group_by", "invalid_value"],
    [compl, `start_time=${T0}&limit=0`, "limit", "integer_out_of_range"],
    [compl, `start_time=${T0}&limit=32`, "limit", "integer_out_of_range"],
    [compl, `start_time=${T0}&bucket_width=1h&limit=169`, "limit", "integer_out_of_range"],
    [ci, `start_time=${T0}&bucket_width=1m&limit=1441`, "limit", "integer_out_of_range"],
    [costs, `start_time=${T0}&limit=181`, "limit", "integer_out_of_range"],
    [compl, `start_time=${T0}&limit=ten`, "limit", "invalid_type"],
    [compl, `start_time=${T0}&page=page_nope`, "page", "invalid_value"],
    [compl, `start_time=${T0}&page=page_${(T0 + 5).toString(16).padStart(16, "0")}`, "page", "invalid_value"],
    [compl, `start_time=${T0}&end_time=${T0 + DAY}&page=page_${(T0 + DAY).toString(16).padStart(16, "0")}`, "page", "invalid_value"],
    [compl, `start_time=${T0}&batch=maybe`, "batch", "invalid_type"],
  ];
  for (const [p, q, param, code] of cases) assertError(await get(`${p}?${q}`), 400, { param, code });
  // The largest limits are taken.
  assert.equal((await get(`${compl}?start_time=${T0}&limit=31`)).status, 200);
  assert.equal((await get(`${costs}?start_time=${T0}&limit=180`)).status, 200);
  // And the responders lived through it all.
  assert.equal((await fetch(stack.url("/healthz"))).status, 200);
});

test("an admin key is no tenant's: 403 on the model routes", async () => {
  const r = await request(stack, "POST", "/v1/responses", { key: ADMIN,
    body: JSON.stringify({ model: "gpt-test", input: "hi" }) });
  assertError(r, 403);
  assert.match(r.json.error.message, /admin key/);
  assertError(await request(stack, "GET", "/v1/models", { key: ADMIN }), 403);
});

test("check-config refuses an admin key that is also a tenant's", () => {
  const conf = `${stack.dir}/same-key.conf`;
  fs.writeFileSync(conf, fs.readFileSync(`${stack.dir}/sandgate.conf`, "utf8")
    .replace(/admin_keys = \([^)]*\);/, `admin_keys = ( { name = "ops"; key_sha256 = "${sha256(KEYS.bob)}"; } );`));
  const run = (c) => spawnSync(`${stack.dir}/bin/sandgate`, ["--config", c, "check-config"],
    { encoding: "utf8", env: stack.env, timeout: 15000 });
  const bad = run(conf);
  assert.equal(bad.status, 1, bad.stderr);
  assert.match(bad.stderr, /admin key ops is also key bob: an admin key is never a tenant's/);
  // The running config, with its own admin key, is fine.
  const ok = run(`${stack.dir}/sandgate.conf`);
  assert.doesNotMatch(ok.stderr, /never a tenant/);
});
