// The admin API's requests (GET /v1/organization/requests[/{id}]) on a
// real stack: every request that reached a model or a sandbox is listed
// from the ledger, newest first, filtered and paged as OpenAI's lists; a
// request that went through the interception loop, or ran code through
// the sandbox routes, has a trace (each round: the upstream turn and its
// code runs, outputs bounded, timings, the PNGs the code made as OpenAI's
// image outputs, bounded); a relayed one has none and costs no store
// write. Nothing shown is a key, a key's hash or an internal
// host. With usage.traces = 0 no trace is written.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { startStack, KEYS, UPSTREAM_KEY, request } from "./harness.mjs";
import { validate } from "./schema.mjs";

const ADMIN = "sk-admin-" + crypto.randomBytes(8).toString("hex");
const sha256 = (s) => crypto.createHash("sha256").update(s).digest("hex");
const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
const AUTH = `admin_keys = ( { name = "ops"; key = "${ADMIN}"; } );`;
const LIST = "/v1/organization/requests";
let stack;

before(async () => {
  stack = await startStack({ sandboxes: true, interceptionTool: "local", auth: AUTH });
});
after(async () => { await stack?.stop(); });

const get = (s, p, key = ADMIN) => request(s, "GET", p, { key });

// A request with alice's key (bob's with key): its answer and its id.
async function send(s, p, body, key = KEYS.alice) {
  const r = await s.call("POST", p, body, key);
  return { ...r, id: r.headers.get("x-request-id") };
}

// The list once it holds every one of ids (the reaper writes the ledger
// within moments): polled for at most 10 s.
async function listed(s, ids, query = "") {
  let r;
  for (let i = 0; i < 100; i++) {
    r = await get(s, `${LIST}?limit=100${query}`);
    assert.equal(r.status, 200, r.text);
    if (ids.every((id) => r.json.data.some((x) => x.id === id))) return r.json;
    await sleep(100);
  }
  assert.fail(`not listed in 10 s: ${ids.filter((id) => !r.json.data.some((x) => x.id === id))}`);
}

const count = (s, where = "") => Number(s.sql(`SELECT count(*) AS n FROM traces ${where}`)[0].n);

function assertError(r, status, param) {
  assert.equal(r.status, status, r.text);
  validate("ErrorResponse", r.json);
  assert.deepEqual(Object.keys(r.json.error).sort(), ["code", "message", "param", "type"]);
  if (param !== undefined) assert.equal(r.json.error.param, param, r.text);
}

// Nothing an operator sees names a key, a key's hash or the hosts behind.
function assertNoSecrets(text) {
  for (const s of [ADMIN, KEYS.alice, KEYS.bob, sha256(KEYS.alice), sha256(KEYS.bob), UPSTREAM_KEY, "127.0.0.1", "tenant"])
    assert.ok(!text.includes(s), `shows ${s}`);
}

const ids = {};

test("a code_interpreter request is listed with its trace: both rounds, the code, its output, timings", async () => {
  const t = Math.floor(Date.now() / 1000);
  const r = await send(stack, "/v1/responses", { model: "ci-primes", input: "Multiply the first six primes.", tools: CI });
  assert.equal(r.status, 200, r.text);
  ids.ci = r.id;
  const list = await listed(stack, [r.id]);
  const it = list.data.find((x) => x.id === r.id);
  assert.deepEqual(Object.keys(it).sort(), ["aborted", "api_key_id", "box", "code_runs", "cost", "created_at",
    "duration_ms", "has_trace", "id", "key_name", "model", "object", "sandbox_seconds", "sessions", "status",
    "surface", "upstream_model", "usage"]);
  assert.equal(it.object, "organization.request");
  assert.ok(it.created_at >= t - 1 && it.created_at <= t + 30, `created_at ${it.created_at}`);
  assert.match(it.api_key_id, /^key_[0-9a-f]{24}$/);
  assert.equal(it.key_name, "alice");
  assert.equal(it.model, "ci-primes");
  assert.equal(it.upstream_model, "ci-primes");
  assert.equal(it.surface, "responses");
  assert.equal(it.status, 200);
  assert.equal(it.aborted, false);
  // The fake's two turns: 10 and 20 input tokens, 5 and 6 output.
  assert.deepEqual(it.usage, { input_tokens: 30, input_cached_tokens: 0, output_tokens: 11, reasoning_tokens: 0, num_model_requests: 2 });
  assert.equal(it.code_runs, 1);
  assert.ok(it.sandbox_seconds > 0);
  assert.equal(it.cost.currency, "usd");
  assert.equal(typeof it.cost.value, "number");
  assert.equal(it.has_trace, true);

  const one = await get(stack, `${LIST}/${r.id}`);
  assert.equal(one.status, 200, one.text);
  assertNoSecrets(one.text);
  const { rounds, ...rest } = one.json;
  assert.deepEqual(rest, it, "the same object as listed");
  assert.equal(rounds.length, 2, JSON.stringify(rounds));
  const [a, b] = rounds;
  assert.equal(a.round, 1);
  assert.equal(a.model.status, 200);
  assert.equal(a.model.error, null);
  assert.equal(a.model.usage.input_tokens, 10);
  assert.equal(a.model.usage.output_tokens, 5);
  assert.equal(a.code_runs.length, 1);
  const run = a.code_runs[0];
  assert.equal(run.code, "print(2*3*5*7*11*13)");
  assert.equal(run.stdout, "30030\n");
  assert.equal(run.stdout_truncated, false);
  assert.equal(run.error, null);
  assert.equal(run.failed, null);
  assert.equal(run.tool, "local");
  assert.match(run.sandbox_id, /^cntr_[0-9a-f]{32}$/);
  assert.equal(run.sandbox_id, r.json.output.find((o) => o.type === "code_interpreter_call").container_id);
  assert.ok(run.call_id, "the model's call");
  // Timings: in order, within the request.
  assert.ok(a.model.started_ms >= 0 && a.model.duration_ms >= 0);
  assert.ok(run.started_ms >= a.model.started_ms + a.model.duration_ms, JSON.stringify(rounds));
  assert.ok(run.duration_ms >= 0);
  assert.ok(b.model.started_ms >= run.started_ms + run.duration_ms, JSON.stringify(rounds));
  assert.ok(b.model.started_ms + b.model.duration_ms <= it.duration_ms + 1);
  assert.equal(b.model.usage.input_tokens, 20);
  assert.deepEqual(b.code_runs, []);
  assert.equal(count(stack, `WHERE id = '${r.id}'`), 1);
});

test("a loop whose upstream failed: its round says with what status and why", async () => {
  const r = await send(stack, "/v1/responses", { model: "fault-500", input: "x", tools: CI });
  assert.equal(r.status, 500, r.text);
  await listed(stack, [r.id]);
  const one = (await get(stack, `${LIST}/${r.id}`)).json;
  assert.equal(one.status, 500);
  assert.equal(one.has_trace, true);
  assert.equal(one.rounds.length, 1);
  assert.equal(one.rounds[0].model.status, 500);
  assert.match(one.rounds[0].model.error, /^The upstream of model fault-500 answered HTTP 500/);
  assertNoSecrets(JSON.stringify(one));
  ids.loopFail = r.id;
});

test("a relayed request is listed without a trace, and no trace row is written", async () => {
  const before = count(stack);
  const r = await send(stack, "/v1/chat/completions", { model: "gpt-test", messages: [{ role: "user", content: "hi" }] });
  assert.equal(r.status, 200, r.text);
  ids.relay = r.id;
  const it = (await listed(stack, [r.id])).data.find((x) => x.id === r.id);
  assert.equal(it.has_trace, false);
  assert.equal(it.surface, "chat");
  assert.equal(it.usage.num_model_requests, 1);
  assert.equal(count(stack), before, "no store write for a relayed request");
  const one = await get(stack, `${LIST}/${r.id}`);
  assert.equal(one.status, 200, one.text);
  assert.deepEqual(one.json.rounds, []);
});

test("code run through the sandbox routes is traced; a huge stdout is bounded", async () => {
  const r = await send(stack, "/v1/code", { tool: "local", code: "import sys\nsys.stdout.write('x' * 200000)\nprint('a' + 'é' * 5000, file=sys.stderr)" });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout.length, 200000);
  ids.code = r.id;
  const it = (await listed(stack, [r.id])).data.find((x) => x.id === r.id);
  assert.equal(it.surface, "sandboxes");
  assert.equal(it.model, null);
  assert.equal(it.has_trace, true);
  const one = (await get(stack, `${LIST}/${r.id}`)).json;
  assert.equal(one.rounds.length, 1);
  assert.equal(one.rounds[0].model, null);
  const run = one.rounds[0].code_runs[0];
  assert.equal(run.stdout_truncated, true);
  assert.ok(run.stdout.length <= 4096 && run.stdout.length > 4000, `${run.stdout.length}`);
  assert.equal(run.stderr_truncated, true);
  assert.ok(Buffer.byteLength(run.stderr) <= 4096);
  assert.match(run.stderr, /^aé+$/, "cut on a character's edge");
  assert.equal(run.call_id, null);
  const [{ n }] = stack.sql(`SELECT length(rounds) AS n FROM traces WHERE id = '${r.id}'`);
  assert.ok(Number(n) <= 65536, `the trace is ${n} bytes`);

  // A run in a kept sandbox, too.
  const sbx = await stack.newSandbox("local");
  const k = await send(stack, `/v1/sandboxes/${sbx}/code`, { code: "1/0" });
  assert.equal(k.status, 200, k.text);
  await listed(stack, [k.id]);
  const kr = (await get(stack, `${LIST}/${k.id}`)).json.rounds[0].code_runs[0];
  assert.equal(kr.sandbox_id, sbx);
  assert.equal(kr.code, "1/0");
  assert.equal(kr.error.name, "ZeroDivisionError");
  assert.match(kr.error.traceback, /ZeroDivisionError/);
  ids.kept = k.id;
  await stack.call("DELETE", `/v1/sandboxes/${sbx}`);
});

// PNG's signature, as the first bytes of a data URL's base64.
const isPng = (url) => url.startsWith("data:image/png;base64,") &&
  Buffer.from(url.slice(22), "base64").subarray(0, 8).toString("hex") === "89504e470d0a1a0a";

test("the images a run's code made are in its trace as OpenAI's image outputs; a forged png is not", async () => {
  // A matplotlib figure, then an object whose PNG is a GIF's bytes: a
  // hostile sandbox may call anything a png.
  const code = "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()\n" +
    "class Forged:\n    def _repr_png_(self):\n        return b'GIF89a, not a PNG at all'\nForged()";
  const r = await send(stack, "/v1/responses", { model: "ci-args", input: JSON.stringify({ code }), tools: CI,
    include: ["code_interpreter_call.outputs"] });
  assert.equal(r.status, 200, r.text);
  const call = r.json.output.find((o) => o.type === "code_interpreter_call");
  const figure = call.outputs.find((o) => o.type === "image" && isPng(o.url));
  assert.ok(figure, JSON.stringify(call.outputs).slice(0, 500));
  const it = (await listed(stack, [r.id])).data.find((x) => x.id === r.id);
  assert.equal(it.has_trace, true);
  const one = await get(stack, `${LIST}/${r.id}`);
  assert.equal(one.status, 200, one.text);
  assertNoSecrets(one.text);
  const run = one.json.rounds[0].code_runs[0];
  assert.equal(run.code, code);
  assert.equal(run.images, 2, "both counted");
  assert.equal(run.images_omitted, 0);
  // The figure the client was shown, byte for byte; not the forged one.
  assert.deepEqual(run.outputs, [{ type: "image", url: figure.url }]);
  assert.ok(figure.url.length > 1000);
  assert.deepEqual(one.json.rounds[1].code_runs, []);
  // Apart from the rounds in the store; the list carries none.
  const [row] = stack.sql(`SELECT rounds, images FROM traces WHERE id = '${r.id}'`);
  assert.ok(!row.rounds.includes("iVBORw0KGgo"), "no image in the rounds");
  assert.ok(row.images.includes(figure.url.slice(22)));
  const page = await get(stack, `${LIST}?limit=100`);
  assert.ok(!page.text.includes("iVBORw0KGgo"), "no image in the list");
});

test("images past the bound (16 a request) are counted, not kept; a run without images has none", async () => {
  const r = await send(stack, "/v1/code", { tool: "local", code:
    "import matplotlib.pyplot as plt\nfor i in range(20):\n    plt.figure(figsize=(1, 1), dpi=20)\n    plt.plot([0, i])\nplt.show()" });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.results.filter((x) => x.png).length, 20);
  await listed(stack, [r.id]);
  const run = (await get(stack, `${LIST}/${r.id}`)).json.rounds[0].code_runs[0];
  assert.equal(run.images, 20);
  assert.equal(run.images_omitted, 4);
  assert.equal(run.outputs.length, 16);
  // The first sixteen, in order.
  assert.deepEqual(run.outputs.map((o) => o.url), r.json.results.filter((x) => x.png).slice(0, 16)
    .map((x) => `data:image/png;base64,${x.png}`));
  assert.ok(run.outputs.every((o) => o.type === "image" && isPng(o.url)));
  const plain = (await get(stack, `${LIST}/${ids.code}`)).json.rounds[0].code_runs[0];
  assert.deepEqual(plain.outputs, []);
  assert.equal(plain.images, 0);
});

test("filters: key, model, status (a number or 'error'), time; pages as OpenAI's lists", async () => {
  const bob = await send(stack, "/v1/responses", { model: "gpt-test", input: "bob's" }, KEYS.bob);
  const fail = await send(stack, "/v1/chat/completions", { model: "fault-500", messages: [{ role: "user", content: "x" }] });
  assert.equal(fail.status, 500, fail.text);
  const all = await listed(stack, [bob.id, fail.id, ids.ci, ids.relay, ids.code, ids.kept]);
  assertNoSecrets(JSON.stringify(all));
  const mine = all.data.filter((x) => x.key_name === "alice");
  const aliceId = mine[0].api_key_id;
  const bobId = all.data.find((x) => x.id === bob.id).api_key_id;
  assert.notEqual(aliceId, bobId);
  // Newest first.
  const created = all.data.map((x) => x.created_at);
  assert.deepEqual(created, [...created].sort((p, q) => q - p));
  assert.equal(all.first_id, all.data[0].id);
  assert.equal(all.last_id, all.data.at(-1).id);
  assert.equal(all.has_more, false);

  const only = async (q) => (await get(stack, `${LIST}?limit=100&${q}`)).json.data.map((x) => x.id);
  assert.deepEqual(await only(`api_key_id=${bobId}`), [bob.id]);
  assert.ok(!(await only(`api_key_id=${aliceId}`)).includes(bob.id));
  assert.deepEqual(await only("model=ci-primes"), [ids.ci]);
  assert.deepEqual(await only("status=500"), [fail.id, ids.loopFail]);
  assert.ok((await only("status=error")).includes(fail.id));
  assert.ok(!(await only("status=error")).includes(ids.ci));
  assert.ok((await only("status=200")).includes(ids.ci));
  const now = Math.floor(Date.now() / 1000);
  assert.deepEqual(await only(`start_time=${now + 100}`), []);
  assert.deepEqual(await only(`end_time=${now - 3600}`), []);
  assert.equal((await only(`start_time=${now - 3600}&end_time=${now + 100}`)).length, all.data.length);

  // Page by page, two at a time: the same rows in the same order.
  const seen = [];
  let after = "";
  for (let i = 0; i < 20; i++) {
    const p = (await get(stack, `${LIST}?limit=2${after ? `&after=${after}` : ""}`)).json;
    assert.ok(p.data.length <= 2);
    seen.push(...p.data.map((x) => x.id));
    if (!p.has_more) break;
    assert.equal(p.last_id, p.data.at(-1).id);
    after = p.last_id;
  }
  assert.deepEqual(seen, all.data.map((x) => x.id));
  const asc = (await get(stack, `${LIST}?limit=100&order=asc`)).json.data.map((x) => x.id);
  assert.deepEqual(asc, [...seen].reverse());
  // A page after a row the filters leave out is refused.
  assertError(await get(stack, `${LIST}?api_key_id=${bobId}&after=${ids.ci}`), 400, "after");
});

test("bad parameters → OpenAI's 400 naming the param; an unknown id → 404", async () => {
  for (const [q, param] of [["limit=0", "limit"], ["limit=101", "limit"], ["limit=x", "limit"],
    ["order=sideways", "order"], ["status=abc", "status"], ["status=99", "status"], ["status=2000", "status"],
    ["start_time=-1", "start_time"], ["start_time=soon", "start_time"], ["end_time=1e9", "end_time"],
    ["after=req_nope", "after"], ["api_key_id=", "api_key_id"], ["model=" + "m".repeat(300), "model"]])
    assertError(await get(stack, `${LIST}?${q}`), 400, param);
  const r = await get(stack, `${LIST}/req_nope`);
  assertError(r, 404, "id");
  assert.match(r.json.error.message, /req_nope/);
});

test("a tenant's key → 403, no key → 401, on both routes", async () => {
  for (const p of [LIST, `${LIST}/${ids.ci}`]) {
    assertError(await get(stack, p, KEYS.alice), 403);
    assertError(await get(stack, p, KEYS.bob), 403);
    assertError(await get(stack, p, null), 401);
  }
});

test("usage.traces = 0: requests are listed, no trace is written", async () => {
  const s = await startStack({ sandboxes: true, interceptionTool: "local", auth: AUTH, top: "usage: { traces = 0; };" });
  try {
    const r = await send(s, "/v1/responses", { model: "ci-primes", input: "primes", tools: CI });
    assert.equal(r.status, 200, r.text);
    const c = await send(s, "/v1/code", { tool: "local", code: "print(1)" });
    assert.equal(c.status, 200, c.text);
    const list = await listed(s, [r.id, c.id]);
    for (const it of list.data) assert.equal(it.has_trace, false);
    assert.equal(count(s), 0);
    assert.deepEqual((await get(s, `${LIST}/${r.id}`)).json.rounds, []);
  } finally {
    await s.stop();
  }
});
