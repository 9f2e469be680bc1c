// The console's server side on a real stack (the browser's side is
// console.test.mjs): its files, embedded in sandgate-fcgi, are served under
// the mount prefix with a policy that lets the page run only its own
// scripts and talk only to its origin, and only where admin keys exist;
// the admin routes behind its pages: the overview (this box's last hour,
// sampled by the reaper every 10 s) and every key's sandboxes, which an
// operator can end. Tenants get 403 there, callers without a key 401.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startStack, KEYS, request, localLimits } from "./harness.mjs";
import { validate } from "./schema.mjs";

const ADMIN = "sk-admin-" + crypto.randomBytes(8).toString("hex");
const AUTH = `admin_keys = ( { name = "ops"; key = "${ADMIN}"; } );`;
const PREFIX = "/ai";
const POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
  "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; " +
  "frame-ancestors 'none'";
const CONSOLE_DIR = path.resolve(import.meta.dirname, "../../console");
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png",
  "": "text/plain; charset=utf-8" };

let stack, bare;

before(async () => {
  [stack, bare] = await Promise.all([
    startStack({ sandboxes: true, interceptionTool: "local", auth: AUTH, mount_prefix: PREFIX,
      localTools: `{ name = "warm"; provider = "local"; warm = 1; memory_mb = 256; disk_mb = 16; max_procs = 32; ${localLimits} }` }),
    // Admin keys, but the console turned off; and below, none at all.
    startStack({ auth: AUTH, top: "console: { enabled = false; };" }),
  ]);
});
after(async () => { await Promise.all([stack?.stop(), bare?.stop()]); });

const get = (s, p, key = ADMIN) => request(s, "GET", p, { key });
const raw = (s, p, init = {}) => fetch(`${s.base}${p}`, { redirect: "manual", signal: AbortSignal.timeout(15000), ...init });

// A GET of path exactly as written: fetch would resolve "." and ".."
// segments (and their %2e forms) before sending.
function exact(s, p, headers = {}) {
  const u = new URL(s.base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: p, headers, timeout: 15000 }, (res) => {
      let body = "";
      res.on("data", (c) => { body += c; });
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

// Every file the console ships, as the build embeds it (the READMEs are
// not served; a vendored library's LICENSE is, as text).
function consoleFiles(dir = CONSOLE_DIR, rel = "") {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ?
    consoleFiles(path.join(dir, e.name), `${rel}${e.name}/`) :
    e.name === "README.md" ? [] : [`${rel}${e.name}`]);
}

function assertPolicy(r) {
  assert.equal(r.headers.get("content-security-policy"), POLICY);
  assert.equal(r.headers.get("x-frame-options"), "DENY");
  assert.equal(r.headers.get("x-content-type-options"), "nosniff");
  assert.equal(r.headers.get("referrer-policy"), "no-referrer");
}

test("the console's page is served under the prefix with its policy, the prefix written into it, never cached", async () => {
  const r = await raw(stack, `${PREFIX}/console/`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("content-type"), "text/html; charset=utf-8");
  assertPolicy(r);
  assert.equal(r.headers.get("cache-control"), "no-store");
  const html = await r.text();
  assert.ok(!html.includes("{{SANDGATE_BASE}}"), "the mark is replaced");
  assert.match(html, /<meta name="sandgate-base" content="\/ai">/);
  // The page runs no script of its own text and loads nothing from elsewhere.
  assert.ok(!/<script(?![^>]*\bsrc=)[^>]*>/i.test(html), "no inline script");
  assert.ok(!/\sstyle="/i.test(html) && !/<style/i.test(html), "no inline style");
  assert.ok(!/(src|href)="(https?:)?\/\//i.test(html), "nothing from another origin");
  // Without its slash, a redirect to it: relative URLs need the slash.
  const bareDir = await raw(stack, `${PREFIX}/console`);
  assert.equal(bareDir.status, 302);
  assert.equal(bareDir.headers.get("location"), `${PREFIX}/console/`);
});

test("every file of console/ is served with its type, an ETag, 304 when unchanged, and the policy", async () => {
  const files = consoleFiles();
  assert.ok(files.includes("index.html") && files.some((f) => f.endsWith(".js")), files.join(" "));
  assert.ok(files.includes("vendor/uplot/LICENSE"), "the vendored library's licence is served with it");
  for (const f of files) {
    const r = await raw(stack, `${PREFIX}/console/${f}`);
    assert.equal(r.status, 200, f);
    assert.equal(r.headers.get("content-type"), TYPES[path.extname(f)], f);
    assertPolicy(r);
    const body = Buffer.from(await r.arrayBuffer());
    if (f === "index.html") continue;
    assert.ok(body.equals(fs.readFileSync(path.join(CONSOLE_DIR, f))), `${f}: the bytes of the tree`);
    const etag = r.headers.get("etag");
    assert.match(etag, /^"[0-9a-f]{16}"$/, f);
    assert.equal(r.headers.get("cache-control"), "no-cache", f);
    const again = await raw(stack, `${PREFIX}/console/${f}`, { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304, f);
    assert.equal((await again.arrayBuffer()).byteLength, 0);
  }
});

test("HEAD has no body, other methods 405, unknown and crafted paths 404 without touching the API", async () => {
  const js = consoleFiles().find((f) => f.endsWith(".js"));
  const head = await raw(stack, `${PREFIX}/console/${js}`, { method: "HEAD" });
  assert.equal(head.status, 200);
  assert.equal((await head.arrayBuffer()).byteLength, 0);
  const post = await raw(stack, `${PREFIX}/console/`, { method: "POST", body: "x" });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get("allow"), "GET, HEAD");
  assert.equal((await post.json()).error.type, "invalid_request_error");
  for (const p of ["nope.js", "%2e%2e/v1/models", "..%2fv1%2fmodels", "index.html%2500.js", "README.md",
    "./index.html", "x/../index.html", "../v1/models"]) {
    const r = await exact(stack, `${PREFIX}/console/${p}`, { authorization: `Bearer ${KEYS.alice}` });
    assert.equal(r.status, 404, p);
    const e = JSON.parse(r.body).error;
    assert.equal(e.type, "invalid_request_error", p);
    assert.ok(!e.message.includes("127.0.0.1"), p);
  }
  // A NUL never reaches a file name: lighttpd refuses it first.
  assert.ok([400, 404].includes((await exact(stack, `${PREFIX}/console/index.html%00.js`)).status));
});

test("no console without admin keys, or with console.enabled = false: a 404 as any unknown URL", async () => {
  const noAdmin = await startStack({});
  try {
    for (const s of [noAdmin, bare]) {
      const r = await raw(s, "/console/");
      assert.equal(r.status, 404);
      assert.equal((await r.json()).error.message, "Invalid URL (GET /console/)");
    }
  } finally {
    await noAdmin.stop();
  }
});

test("the overview: admin keys only; responders, sandboxes and the pool now; the last hour in 10 s points", async () => {
  assert.equal((await request(stack, "GET", "/v1/organization/overview", { key: null })).status, 401);
  assert.equal((await get(stack, "/v1/organization/overview", KEYS.alice)).status, 403);
  const t0 = Math.floor(Date.now() / 1000);
  // Keys' requests: three answered, one a 5xx; the admin's own calls and
  // /healthz are not counted as traffic.
  for (const model of ["gpt-test", "gpt-test", "fault-500"])
    await stack.call("POST", "/v1/responses", { model, input: "hi" }, KEYS.alice);
  let o, mine;
  for (let i = 0; i < 60; i++) {
    o = await get(stack, "/v1/organization/overview");
    assert.equal(o.status, 200, o.text);
    mine = o.json.series.points.filter((p) => p.t >= t0);
    if (mine.reduce((n, p) => n + p.requests, 0) >= 3) break;
    await sleep(500);
  }
  const b = o.json;
  assert.equal(b.object, "organization.overview");
  assert.ok(Math.abs(b.now - Date.now() / 1000) < 5);
  assert.ok(b.started_at <= b.now && b.started_at >= t0 - 300, `${b.started_at}`);
  assert.deepEqual(Object.keys(b.responders).sort(), ["busy", "queued", "total", "workers_max"]);
  assert.ok(b.responders.total >= 1 && b.responders.busy >= 1, JSON.stringify(b.responders)); // this request
  assert.equal(b.responders.workers_max, 8);
  assert.equal(b.series.interval, 10);
  assert.equal(mine.reduce((n, p) => n + p.requests, 0), 3, JSON.stringify(mine));
  assert.equal(mine.reduce((n, p) => n + p.errors, 0), 1);
  const busy = mine.find((p) => p.requests > 0);
  assert.ok(busy.p50_ms >= 0 && busy.p99_ms >= busy.p50_ms, JSON.stringify(busy));
  for (const p of b.series.points) {
    assert.deepEqual(Object.keys(p).sort(), ["busy", "errors", "p50_ms", "p99_ms", "queued", "requests",
      "responders", "sandboxes", "sessions", "t", "warm"]);
    if (p.requests === 0) assert.equal(p.p50_ms, null);
  }
  // Ordered, 10 s apart (the reaper's ticks: give or take one).
  for (let i = 1; i < b.series.points.length; i++) {
    const d = b.series.points[i].t - b.series.points[i - 1].t;
    assert.ok(d >= 9 && d <= 12, `points ${d} s apart`);
  }
  // The warm tool's pool: its target and, once made, its sandbox.
  for (let i = 0; i < 60 && !(o.json.pool[0]?.warm >= 1); i++) {
    await sleep(500);
    o = await get(stack, "/v1/organization/overview");
  }
  assert.deepEqual(o.json.pool, [{ tool: "warm", warm: 1, target: 1 }]);
  assert.ok(o.json.sandboxes.some((x) => x.tool === "warm" && x.kind === "warm" && x.count === 1),
    JSON.stringify(o.json.sandboxes));
  assert.ok(!o.text.includes(ADMIN) && !o.text.includes("127.0.0.1"));
});

test("every key's sandboxes, whose and since when; an operator ends one at its provider", async () => {
  assert.equal((await get(stack, "/v1/organization/sandboxes", KEYS.alice)).status, 403);
  const a = await stack.call("POST", "/v1/sandboxes", { tool: "local" }, KEYS.alice);
  assert.equal(a.status, 201, a.text);
  const b = await stack.call("POST", "/v1/sandboxes", { tool: "local" }, KEYS.bob);
  assert.equal(b.status, 201, b.text);
  const run = await stack.call("POST", `/v1/sandboxes/${a.json.id}/code`, { code: "x = 42" }, KEYS.alice);
  assert.equal(run.status, 200, run.text);
  const r = await get(stack, "/v1/organization/sandboxes");
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.object, "list");
  assert.equal(r.json.has_more, false);
  const mine = r.json.data.find((x) => x.id === a.json.id);
  assert.deepEqual(Object.keys(mine).sort(), ["api_key_id", "box", "created_at", "expires_at", "id",
    "idle_seconds", "key_name", "kind", "last_active_at", "name", "object", "provider", "running_code",
    "session_id", "status", "tool"]);
  assert.equal(mine.object, "organization.sandbox");
  assert.equal(mine.key_name, "alice");
  assert.match(mine.api_key_id, /^key_[0-9a-f]{24}$/);
  assert.equal(mine.kind, "explicit");
  assert.equal(mine.status, "running");
  assert.equal(mine.running_code, false);
  assert.ok(mine.idle_seconds >= 0 && mine.idle_seconds < 60);
  assert.equal(r.json.data.find((x) => x.id === b.json.id).key_name, "bob");
  // Newest first; the pool's sandbox belongs to no key.
  const ids = r.json.data.map((x) => x.id);
  assert.ok(ids.indexOf(b.json.id) < ids.indexOf(a.json.id));
  const warm = r.json.data.find((x) => x.kind === "warm");
  assert.ok(warm && warm.api_key_id === null && warm.key_name === null, JSON.stringify(warm));
  // Filters.
  const onlyAlice = await get(stack, `/v1/organization/sandboxes?api_key_id=${mine.api_key_id}`);
  assert.ok(onlyAlice.json.data.length >= 1 && onlyAlice.json.data.every((x) => x.key_name === "alice"));
  const onlyWarm = await get(stack, "/v1/organization/sandboxes?kind=warm");
  assert.ok(onlyWarm.json.data.every((x) => x.kind === "warm"));
  assert.equal((await get(stack, "/v1/organization/sandboxes?tool=none")).json.data.length, 0);
  assert.ok(!r.text.includes(ADMIN) && !r.text.includes(KEYS.alice) && !r.text.includes("tenant"));
  // Ended by the operator: gone for alice too, at the provider.
  const del = await request(stack, "DELETE", `/v1/organization/sandboxes/${a.json.id}`, { key: ADMIN });
  assert.equal(del.status, 200, del.text);
  assert.deepEqual(del.json, { id: a.json.id, object: "sandbox.deleted", deleted: true });
  assert.equal((await get(stack, `/v1/sandboxes/${a.json.id}`, KEYS.alice)).status, 404);
  const gone = await stack.call("POST", `/v1/sandboxes/${a.json.id}/code`, { code: "x" }, KEYS.alice);
  assert.equal(gone.status, 404, gone.text);
  assert.ok(!(await get(stack, "/v1/organization/sandboxes")).json.data.some((x) => x.id === a.json.id));
  const again = await request(stack, "DELETE", `/v1/organization/sandboxes/${a.json.id}`, { key: ADMIN });
  assert.equal(again.status, 404);
  assert.equal((await request(stack, "DELETE", `/v1/organization/sandboxes/${b.json.id}`, { key: KEYS.alice })).status, 403);
  assert.equal((await request(stack, "DELETE", `/v1/organization/sandboxes/${b.json.id}`, { key: ADMIN })).status, 200);
});

test("the sessions usage carries sandgate's sandbox seconds and code runs, what the console charts by day", async () => {
  const start = Math.floor(Date.now() / 1000 / 86400) * 86400;
  const a = await stack.call("POST", "/v1/sandboxes", { tool: "local" }, KEYS.carol);
  assert.equal(a.status, 201, a.text);
  for (const code of ["import time; time.sleep(1.2)", "print(1)"]) {
    const r = await stack.call("POST", `/v1/sandboxes/${a.json.id}/code`, { code }, KEYS.carol);
    assert.equal(r.status, 200, r.text);
  }
  await request(stack, "DELETE", `/v1/sandboxes/${a.json.id}`, { key: KEYS.carol });
  const q = `/v1/organization/usage/code_interpreter_sessions?start_time=${start}&group_by=api_key_id`;
  let carol;
  for (let i = 0; i < 50 && !(carol?.num_code_runs >= 2); i++) {
    const r = await get(stack, q);
    assert.equal(r.status, 200, r.text);
    validate("UsageResponse", r.json);
    const keys = await get(stack, "/v1/organization/api_keys");
    const id = keys.json.data.find((k) => k.name === "carol").id;
    carol = r.json.data.at(-1).results.find((x) => x.api_key_id === id);
    if (!(carol?.num_code_runs >= 2)) await sleep(200);
  }
  assert.equal(carol.num_sessions, 1, JSON.stringify(carol));
  assert.equal(carol.num_code_runs, 2);
  assert.ok(carol.sandbox_seconds >= 1.2 && carol.sandbox_seconds < 30, JSON.stringify(carol));
});
