// The soak behind `make soak` (entry point: tests/soak/run.sh [N]).
//
// N mixed requests against the real stack (lighttpd, sandgate-fcgi, the
// fake upstream and the fake e2b of the integration tests) while the fakes
// inject faults and a responder is SIGKILLed every few seconds; then the
// checks of the issue:
//   1. every client got a well-formed OpenAI answer or error (answers of
//      requests on a responder we killed only need to be well-formed HTTP);
//   2. no responder died on its own: every death in the log is one of our
//      SIGKILLs, and sandboxd never died;
//   3. every sandbox created at the e2b fake was deleted, or is tracked in
//      the store and swept by the reaper; no local sandbox is left. One
//      exception, checked and counted: a responder or runner killed while
//      its create was under way leaves a "creating" row with no handle;
//      the reaper finds that sandbox by its label and deletes it once any
//      create would have ended (90 s after it began: longer than the soak
//      waits), and at worst it ends at its provider life (request_timeout
//      + 60 s), which the row outlives (see orphanRow). A create its
//      creator stopped (a background job cancelled during it) leaves the
//      same row, its owner alive: that one ends at its provider life only;
//      the row goes at its expiry;
//   4. PRAGMA integrity_check is ok; the gateway still answers; no
//      sanitizer report (with SOAK_BUILD=build/asan);
//   5. background responses (about a tenth of the operations: plain,
//      with code runs, a few with a slow run, some cancelled after a
//      random delay; each polled to its end) while the killer SIGKILLs a
//      runner instead of a responder now and then (a busy one if any):
//      every job ends (completed, failed, incomplete, cancelled) within
//      BG_GRACE_S of the load's end, none left queued or in_progress; a
//      killed runner's job ends failed with an error object, within
//      BG_KILL_END_S of the kill; a job the reaper failed was a killed
//      runner's; a job whose cancel answered "cancelled" ends so (or
//      failed, its runner killed); every runner death in the log is one
//      of our SIGKILLs. A runner's sandboxes are its pid's, as a
//      responder's: check 3 covers them.
// Figures go to stdout as a Markdown section for bench/RESULTS.md.
//
// Environment: SOAK_SEED (default 1), SOAK_CONCURRENCY (16), SOAK_KILL_MS
// (2000), SOAK_RUNNERS (background.runners, 4), SOAK_BUDGET_S (420: the whole run, set-up to report), SG_BUILD,
// SG_START, SG_USER (as for the integration tests), SG_KEEP=1 keeps the
// stack's directory (it is kept anyway when a check fails), SOAK_DUMP=FILE
// writes every request and its verdict there.
import { execFile } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startStack, root, KEYS, UPSTREAM_KEY, E2B_KEY, OSB_KEY, serviceUser, sseEvents, waitFor }
  from "../integration/harness.mjs";
import { validate } from "../integration/schema.mjs";

const run = promisify(execFile);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const T0 = Date.now();
const now = () => Date.now() - T0;

const N = Number(process.argv[2] ?? 2000);
const SEED = Number(process.env.SOAK_SEED ?? 1);
const CONC = Number(process.env.SOAK_CONCURRENCY ?? 16);
const KILL_MS = Number(process.env.SOAK_KILL_MS ?? 2000);
const FAULT_MS = 1500;          // how often the e2b fake gets its next fault
const BUDGET_S = Number(process.env.SOAK_BUDGET_S ?? 420);
const BUILD = process.env.SG_BUILD || "build";
const RUNNERS = Number(process.env.SOAK_RUNNERS ?? 4);
if (!(N > 0) || !Number.isInteger(SEED) || !(CONC > 0) || !(KILL_MS > 0) || !(RUNNERS > 0 && RUNNERS <= 64)) {
  console.error("usage: soak.mjs [N]  (SOAK_SEED an integer, SOAK_CONCURRENCY and SOAK_KILL_MS > 0, SOAK_RUNNERS 1-64)");
  process.exit(2);
}

// Gateway settings the checks depend on.
const REQUEST_TIMEOUT = 20;     // server.request_timeout: an ephemeral sandbox lives this + 60 s
const TTL = 8;                  // sessions.ttl: kept sandboxes idle this long are the reaper's
const REAP_EVERY = 30;          // fcgi/reaper.c REAP_EVERY (not configurable)
const EXEC_TIMEOUT = 3;         // interception.exec_timeout: what a hung run costs
const CLIENT_TIMEOUT_MS = (REQUEST_TIMEOUT + 15) * 1000;
const SANDBOX_UID_BASE = 1900000000;  // fcgi/master.c: local sandboxes run as these uids
// A request that starts just after a kill may still land on the victim:
// woken by the SIGKILL but not yet scheduled, a responder blocked in
// accept() takes a connection that arrived meanwhile before it dies.
const KILL_SLACK_MS = 250;
const RUNNER_KILL_SHARE = 0.3;  // of the kills, a runner's (when there are runners)
const BG_GRACE_S = 30;          // after the load, every background job has ended within
const BG_KILL_END_S = 12;       // a killed runner's job is failed within (the reaper looks every 5 s)
const BG_TERMINAL = new Set(["completed", "failed", "incomplete", "cancelled"]);
const RUNNER_GONE = "The gateway stopped while this response was in progress.";  // fcgi/reaper.c

// xorshift32: the plan (which requests, in which order, with which
// arguments), the kills' victims and the faults' order come from the seed.
function rng(seed) {
  let s = (seed >>> 0) || 0x9e3779b9;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}
const pick = (r, xs) => xs[Math.floor(r * xs.length)];

// ---------------------------------------------------------------- the mix
//
// Weights of the kinds of operation; an operation is one request, except
// "sbx" and "local-sbx" (create, run, delete: three) and "local-ci" (create,
// a code_interpreter request in it, delete). A plan of N requests holds
// operations worth N requests when all goes well (a failed create skips
// the rest of its operation; a few sandboxes are left to the reaper).
// "bg" counts its create only: its polls and its cancel come on top.
const MIX = [
  ["chat", 10], ["chat-stream", 10], ["resp", 10], ["resp-stream", 9],
  ["followup", 6],
  ["ci", 9], ["ci-stream", 8],
  ["session", 10],
  ["sbx", 4],
  ["local-code", 1], ["local-sbx", 1], ["local-ci", 1],
  ["fault", 7],
  ["timeout", 3],
  ["drop", 5],
  ["bg", 11],
];
const TOTAL_W = MIX.reduce((a, [, w]) => a + w, 0);
const COST = { "sbx": 3, "local-sbx": 3, "local-ci": 3 };

function plan(n, seed) {
  const r = rng(seed);
  const ops = [];
  for (let sent = 0, i = 0; sent < n; i++) {
    let x = r() * TOTAL_W, kind = "chat";
    for (const [k, w] of MIX) if ((x -= w) < 0) { kind = k; break; }
    if ((COST[kind] ?? 1) > n - sent) kind = "chat";
    sent += COST[kind] ?? 1;
    // Each op gets its own numbers, so it means the same whatever ran before.
    ops.push({ i, kind, a: r(), b: r(), c: r(), d: r() });
  }
  return ops;
}

// e2b faults the chaos loop sets in turn (POST /__faults), seeded too.
const E2B_FAULTS = [
  { create_status: 500, count: 2 },
  { create_status: 503, count: 1 },
  { create_status: 429, count: 1 },
  { create_delay: 1, count: 2 },
  { execute_drop: true, lines: 1, count: 1 },
  { execute_hang: true, lines: 0, count: 1 },
  {},
];

// Every status an operation may answer besides its own: the key's
// concurrency limit (429) and a full pool (503) shed load, well-formed.
const SHED = [429, 503];

// ---------------------------------------------------------------- requests

const SOAK_KEY = "sk-soak-" + crypto.randomBytes(8).toString("hex");
const records = [];   // one per HTTP request
let stack;

// One request. Its body is read to the end (or until the connection
// breaks: then `cut` says why); the verdict is given after the run, when
// every kill time is known. expect: { api, stream, ok: [statuses], ... }.
async function send(cls, method, path, body, expect, key = SOAK_KEY) {
  const rec = { cls, method, path, model: body?.model, t0: now(), t1: 0, status: 0, ctype: "", text: "", expect };
  records.push(rec);
  try {
    const r = await fetch(stack.url(path), {
      method, signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    rec.status = r.status;
    rec.ctype = r.headers.get("content-type") ?? "";
    rec.requestId = r.headers.get("x-request-id");
    rec.retryAfter = Number(r.headers.get("retry-after") ?? NaN);
    const dec = new TextDecoder();
    try {
      for await (const chunk of r.body ?? []) rec.text += dec.decode(chunk, { stream: true });
      rec.text += dec.decode();
    } catch (e) {
      rec.cut = `${e.message}${e.cause ? ": " + e.cause.message : ""}`;
    }
  } catch (e) {
    rec.neterr = `${e.name}: ${e.message}${e.cause ? ": " + e.cause.message : ""}`;
  }
  rec.t1 = now();
  try { rec.json = rec.ctype.startsWith("application/json") ? JSON.parse(rec.text) : null; } catch { rec.json = null; }
  // Shed (429, 503): wait as its retry-after says (at most 1 s), as the
  // SDKs do, rather than turn the soak into a loop of instant 503s.
  if (SHED.includes(rec.status) && rec.retryAfter > 0) await sleep(Math.min(rec.retryAfter, 1) * 1000);
  return rec;
}

const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
const words = (r) => `w${Math.floor(r * 1e6)} soak ${Math.floor(r * 97)}`;
const okStatus = (rec) => rec.status >= 200 && rec.status < 300 && !rec.cut;

// Ids answered on /v1/responses, for previous_response_id follow-ups.
const followable = [];
function responseIdOf(rec) {
  if (!okStatus(rec)) return null;
  if (rec.json?.object === "response") return rec.json.id;
  const done = sseEvents(rec.text).find((e) => e.event === "response.completed");
  try { return done ? JSON.parse(done.data).response.id : null; } catch { return null; }
}

// A chat or Responses request of the mix: body and expectation.
function chatBody(model, text, extra = {}) {
  return { model, messages: [{ role: "user", content: text }], ...extra };
}
function respBody(model, text, extra = {}) {
  return { model, input: text, ...extra };
}

async function opChat(op, stream) {
  const p = words(op.a);
  const key = op.b < 0.15 ? KEYS.bob : SOAK_KEY;  // bob's limit (4 at once) sheds some
  await send(stream ? "chat-stream" : "chat", "POST", "/v1/chat/completions",
    chatBody("gpt-test", p, { stream }), { api: "chat", stream, ok: [200], echo: "echo: " + p }, key);
}

async function opResp(op, stream) {
  const p = words(op.a);
  const rec = await send(stream ? "resp-stream" : "resp", "POST", "/v1/responses",
    respBody("gpt-test", p, { stream }), { api: "resp", stream, ok: [200], echo: "echo: " + p });
  const id = responseIdOf(rec);
  if (id) followable.push(id);
}

async function opFollowup(op) {
  if (followable.length === 0) return opResp(op, false);
  const prev = followable[Math.floor(op.a * followable.length)];
  const p = words(op.b);
  const stream = op.c < 0.3;
  const rec = await send("followup", "POST", "/v1/responses",
    respBody("gpt-test", p, { previous_response_id: prev, stream }),
    { api: "resp", stream, ok: [200], echo: "echo: " + p });
  const id = responseIdOf(rec);
  if (id) followable.push(id);
}

// Sandbox failures the e2b faults cause: 502 (create refused, run cut),
// 429 (create 429), 504 (no answer in time).
const SANDBOX_ERRS = [429, 502, 504];

async function opCi(op, stream) {
  const model = pick(op.a, ["ci-primes", "ci-primes", "ci-two", "ci-raise"]);
  const chat = op.b < 0.5;
  const body = chat ? chatBody(model, "compute", { tools: CI, stream }) :
    respBody(model, "compute", { tools: CI, stream, include: ["code_interpreter_call.outputs"] });
  const rec = await send(stream ? "ci-e2b-stream" : "ci-e2b", "POST", chat ? "/v1/chat/completions" : "/v1/responses",
    body, { api: chat ? "chat" : "resp", stream, ok: [200, ...SANDBOX_ERRS], errEnd: true,
      answer: model === "ci-primes" ? /30030|Error|error/ : null });
  if (!chat) {
    const id = responseIdOf(rec);
    if (id) followable.push(id);
  }
}

// A sandbox the key's cap on kept sandboxes evicts meanwhile (background
// jobs keep their containers too) is "deleting" for a moment: a run or a
// delete then is 409, "not ready (deleting)"; after it, 404.
const EVICTED = 409;

// Sessions: a few ids per key, reused; the code counts its own runs. 429:
// every kept sandbox of the key is running; 404: a sandbox gone meanwhile.
async function opSession(op) {
  const key = op.a < 0.2 ? KEYS.bob : SOAK_KEY;
  const sid = `soak-s${Math.floor(op.b * 5)}`;
  const chat = op.c < 0.5, stream = op.d < 0.4;
  const text = JSON.stringify({ code: "n = globals().get('n', 0) + 1\nprint('run', n)" });
  const metadata = { session_id: sid };
  const body = chat ? chatBody("ci-turn", text, { tools: CI, stream, metadata }) :
    respBody("ci-turn", text, { tools: CI, stream, metadata });
  await send("session", "POST", chat ? "/v1/chat/completions" : "/v1/responses", body,
    { api: chat ? "chat" : "resp", stream, ok: [200, 404, EVICTED, ...SANDBOX_ERRS], errEnd: true, answer: /run \d+|error|Error/ }, key);
}

// The sandbox API: create, run, delete (the delete whatever the run did).
async function sandboxFlow(prefix, tool, op) {
  const c = await send(`${prefix}-create`, "POST", "/v1/sandboxes", { tool },
    { api: "sandbox", ok: [201, ...SANDBOX_ERRS] });
  const id = c.status === 201 ? c.json?.id : null;
  if (!id) return;
  await send(`${prefix}-run`, "POST", `/v1/sandboxes/${id}/code`, { code: `print(6*7)` },
    { api: "exec", ok: [200, 404, EVICTED, ...SANDBOX_ERRS], stdout: "42\n" });
  if (op.b < 0.05) return;   // a few left to the reaper (kept sandboxes live TTL idle seconds)
  await send(`${prefix}-delete`, "DELETE", `/v1/sandboxes/${id}`, undefined,
    { api: "deleted", ok: [200, 404, EVICTED, 502] });
}

async function opLocalCode() {
  await send("local-code", "POST", "/v1/code", { tool: "local", code: "print(6*7)" },
    { api: "exec", ok: [200, 502, 504], stdout: "42\n" });
}

// code_interpreter in an explicit local container (the local loop).
async function opLocalCi(op) {
  const c = await send("local-create", "POST", "/v1/sandboxes", { tool: "local" },
    { api: "sandbox", ok: [201, 502, 504] });
  const id = c.status === 201 ? c.json?.id : null;
  if (!id) return;
  const stream = op.a < 0.5;
  await send("local-ci", "POST", "/v1/responses",
    respBody("ci-primes", "compute", { tools: [{ type: "code_interpreter", container: id }], stream }),
    { api: "resp", stream, ok: [200, 404, EVICTED, 502, 504], errEnd: true, answer: /30030|Error/ });
  await send("local-delete", "DELETE", `/v1/sandboxes/${id}`, undefined, { api: "deleted", ok: [200, 404, EVICTED, 502] });
}

// Upstream faults: status by model name, passed through.
async function opFault(op) {
  const [model, status] = pick(op.a, [["fault-500", 500], ["fault-429", 429], ["fault-400", 400]]);
  const chat = op.b < 0.5, stream = op.c < 0.3;
  await send("upstream-fault", "POST", chat ? "/v1/chat/completions" : "/v1/responses",
    chat ? chatBody(model, "x", { stream }) : respBody(model, "x", { stream }),
    { api: chat ? "chat" : "resp", stream, ok: [status] });
}

// An upstream silent past the model's timeout (1 s): 504 before the
// first byte; a stream that started ends with an error event.
async function opTimeout(op) {
  const chat = op.b < 0.5;
  if (op.a < 0.5) {
    await send("upstream-timeout", "POST", chat ? "/v1/chat/completions" : "/v1/responses",
      chat ? chatBody("slow", "x") : respBody("slow", "x"), { api: chat ? "chat" : "resp", stream: false, ok: [504] });
    return;
  }
  await send("upstream-timeout-stream", "POST", chat ? "/v1/chat/completions" : "/v1/responses",
    chat ? chatBody("soak-slowstream", "a b c d", { stream: true }) : respBody("soak-slowstream", "a b c d", { stream: true }),
    { api: chat ? "chat" : "resp", stream: true, ok: [200], mustErrEnd: true });
}

// An upstream that cuts its answer: a stream must still end well-formed
// (today: Chat's `data: {"error":…}`, Responses' `error` event); a JSON
// answer cut short is a 502.
async function opDrop(op) {
  const chat = op.b < 0.5;
  const model = op.c < 0.5 ? "drop" : "soak-drop1";
  if (op.a < 0.2) {
    await send("upstream-drop", "POST", chat ? "/v1/chat/completions" : "/v1/responses",
      chat ? chatBody(model, "a b c d e f") : respBody(model, "a b c d e f"), { api: chat ? "chat" : "resp", ok: [502] });
    return;
  }
  await send("upstream-drop-stream", "POST", chat ? "/v1/chat/completions" : "/v1/responses",
    chat ? chatBody(model, "a b c d e f", { stream: true }) : respBody(model, "a b c d e f", { stream: true }),
    { api: chat ? "chat" : "resp", stream: true, ok: [200], mustErrEnd: true });
}

// Background responses: created (answered at once, queued), then polled
// to their end by a poller of their own, so a worker is not held while the
// job waits for a runner; some cancelled after a random delay. What each
// ended as is judged after the run (bgChecks).
const bgJobs = [];          // { id, kind, t0, cancelAt, cancel, final, polls, t1 }
const bgPollers = [];
const bgStop = { at: Infinity };  // set when the load ends: pollers give up at it
const SLOW_CODE = JSON.stringify({ code: "import time\nfor i in range(5):\n    print('tick', i)\n    time.sleep(0.5)\nprint('slow done')" });

async function opBg(op) {
  const p = words(op.d);
  const [kind, body, answer] =
    op.a < 0.35 ? ["echo", respBody("gpt-test", p), "echo: " + p] :
    op.a < 0.70 ? ["code", respBody(pick(op.b, ["ci-primes", "ci-primes", "ci-two", "ci-raise"]), "compute", { tools: CI }), /30030|Done|failed|Error|error/] :
    op.a < 0.80 ? ["slow-code", respBody("ci-args", SLOW_CODE, { tools: CI }), /slow done|Error|error/] :
    op.a < 0.88 ? ["fault", respBody("fault-500", "x"), null] :
    ["echo", respBody("gpt-test", p), "echo: " + p];
  const rec = await send("bg-create", "POST", "/v1/responses", { ...body, background: true },
    { api: "bg", ok: [200], queued: true });
  if (!okStatus(rec) || rec.json?.status !== "queued" || !rec.json?.id) return;
  // A quarter are cancelled, within 3 s: queued, running or ended.
  const job = { id: rec.json.id, kind, answer, t0: rec.t1, cancelAt: op.c < 0.25 ? rec.t1 + Math.floor(op.b * 3000) : null,
    cancel: null, cancelTries: 0, final: null, polls: 0, t1: null };
  bgJobs.push(job);
  bgPollers.push(pollBg(job));
}

async function pollBg(job) {
  let wait = 250;
  while (now() < bgStop.at) {
    let pause = wait;
    if (job.cancelAt !== null && !job.cancel) pause = Math.min(pause, Math.max(0, job.cancelAt - now()));
    await sleep(pause);
    if (job.cancelAt !== null && !job.cancel && now() >= job.cancelAt) {
      if (++job.cancelTries >= 3) job.cancelAt = null;
      const c = await send("bg-cancel", "POST", `/v1/responses/${job.id}/cancel`, {},
        { api: "bg", ok: [200, 400] });
      // Broken by a kill: asked again at the next turn.
      if (c.status === 200 && c.json?.object === "response" || c.status === 400 && c.json?.error) {
        job.cancel = { status: c.status, as: c.json.status ?? null, message: c.json.error?.message ?? null, t: c.t1 };
      }
      continue;
    }
    const g = await send("bg-get", "GET", `/v1/responses/${job.id}`, undefined, { api: "bg", ok: [200] });
    job.polls++;
    if (okStatus(g) && g.json?.object === "response" && BG_TERMINAL.has(g.json.status)) {
      job.final = g.json;
      job.t1 = g.t1;
      return;
    }
    wait = Math.min(wait * 1.5, 2000);
  }
}

const OPS = {
  "chat": (op) => opChat(op, false), "chat-stream": (op) => opChat(op, true),
  "resp": (op) => opResp(op, false), "resp-stream": (op) => opResp(op, true),
  "followup": opFollowup,
  "ci": (op) => opCi(op, false), "ci-stream": (op) => opCi(op, true),
  "session": opSession,
  "sbx": (op) => sandboxFlow("sbx", "e2b", op),
  "local-code": opLocalCode, "local-sbx": (op) => sandboxFlow("local", "local", op), "local-ci": opLocalCi,
  "fault": opFault, "timeout": opTimeout, "drop": opDrop,
  "bg": opBg,
};

// ---------------------------------------------------------------- verdicts

// Internal addresses and secrets a client must never see.
function leaks(rec) {
  let t = rec.text;
  // lighttpd's own error page names the XHTML DTD: not ours.
  if (rec.ctype.startsWith("text/html")) t = t.replace(/http:\/\/www\.w3\.org\/[^"]*/g, "");
  return ["127.0.0.1", "localhost", "http://", UPSTREAM_KEY, E2B_KEY, OSB_KEY].filter((s) => t.includes(s));
}

function errorShape(obj, where, problems) {
  try { validate("ErrorResponse", obj); } catch (e) { problems.push(`${where}: ${e.message.slice(0, 300)}`); return; }
  const keys = Object.keys(obj.error).sort().join(",");
  if (keys !== "code,message,param,type") problems.push(`${where}: error keys ${keys}`);
}

function check(problems, what, fn) {
  try { fn(); } catch (e) { problems.push(`${what}: ${e.message.slice(0, 300)}`); }
}

// A chat stream: chunks, then [DONE]; or an error as its last data.
function judgeChatStream(rec, ex, p) {
  const evs = sseEvents(rec.text).filter((e) => e.data !== "");
  let done = false, err = false, text = "";
  for (const e of evs) {
    if (done || err && e.data !== "[DONE]") { p.push("data after the end of the stream"); break; }
    if (e.data === "[DONE]") { done = true; continue; }
    let o;
    try { o = JSON.parse(e.data); } catch { p.push(`unparsable SSE data: ${e.data.slice(0, 80)}`); break; }
    if (o.error) { err = true; errorShape(o, "stream error", p); continue; }
    check(p, "chunk", () => validate("CreateChatCompletionStreamResponse", o));
    text += o.choices?.[0]?.delta?.content ?? "";
  }
  return { ended: done || err, err, text };
}

const RESP_END = new Set(["response.completed", "response.failed", "response.incomplete", "error"]);

// A Responses stream: `event:` = data.type, sequence numbers 0, 1, 2, ...,
// and a last event that ends it (after `error`, a response.failed may come).
function judgeRespStream(rec, ex, p) {
  const evs = sseEvents(rec.text).filter((e) => e.data !== "");
  let last = null, seq = -1, err = false, text = "", id = null;
  for (const e of evs) {
    let o;
    try { o = JSON.parse(e.data); } catch { p.push(`unparsable SSE data: ${e.data.slice(0, 80)}`); break; }
    if (e.event !== o.type) p.push(`event ${e.event} carries type ${o.type}`);
    if (o.sequence_number !== seq + 1) p.push(`sequence_number ${o.sequence_number} after ${seq}`);
    seq = o.sequence_number;
    if (last === "response.completed" || last === "response.failed" || last === "response.incomplete") p.push(`${o.type} after ${last}`);
    check(p, o.type, () => validate("ResponseStreamEvent", o));
    if (o.type === "error") err = true;
    if (o.type === "response.failed") err = true;
    if (o.type === "response.output_text.delta") text += o.delta;
    if (o.type === "response.completed") id = o.response?.id;
    last = o.type;
  }
  return { ended: RESP_END.has(last), err, text, id };
}

function outputText(resp) {
  return (resp.output ?? []).filter((o) => o.type === "message").flatMap((o) => o.content ?? [])
    .filter((c) => c.type === "output_text").map((c) => c.text).join("");
}

// A background response as GET, cancel or the create show it: its own
// flag, a status it may have, and an error exactly when it failed.
const BG_STATUSES = new Set(["queued", "in_progress", ...BG_TERMINAL]);
function judgeBg(o, ex, p) {
  if (o.object !== "response" || !/^resp_/.test(o.id ?? "")) { p.push(`not a response: ${JSON.stringify(o).slice(0, 120)}`); return; }
  if (o.background !== true) p.push(`background ${JSON.stringify(o.background)}`);
  if (!BG_STATUSES.has(o.status)) p.push(`status ${JSON.stringify(o.status)}`);
  if (ex.queued && o.status !== "queued") p.push(`created as ${o.status}, not queued`);
  const errOk = o.error !== null && typeof o.error === "object" && typeof o.error.code === "string" && typeof o.error.message === "string";
  if (o.status === "failed" && !errOk) p.push(`failed with error ${JSON.stringify(o.error)}`);
  if (o.status !== "failed" && o.error !== null && o.error !== undefined) p.push(`${o.status} with error ${JSON.stringify(o.error)}`);
}

// The verdict on one record: outcome ("ok", "error", "error-end",
// "abnormal") and what is wrong with it, if anything.
function judge(rec) {
  const ex = rec.expect, p = [];
  rec.leaks = leaks(rec);
  if (rec.neterr) return { outcome: "abnormal", p: [`no HTTP answer: ${rec.neterr}`] };
  if (rec.status >= 400) {
    if (!ex.ok.includes(rec.status) && !SHED.includes(rec.status)) p.push(`unexpected status ${rec.status}`);
    if (!rec.ctype.startsWith("application/json") || !rec.json) {
      return { outcome: "abnormal", p: [...p, `${rec.status} ${rec.ctype || "no content-type"}, not an OpenAI error: ${rec.text.slice(0, 120)}`] };
    }
    errorShape(rec.json, "error", p);
    if (!rec.requestId) p.push("error without x-request-id");
    if (rec.cut) p.push(`error body cut: ${rec.cut}`);
    return { outcome: p.length ? "abnormal" : "error", p };
  }
  if (!ex.ok.includes(rec.status)) p.push(`unexpected status ${rec.status}`);
  if (ex.stream) {
    if (!rec.ctype.startsWith("text/event-stream")) return { outcome: "abnormal", p: [...p, `stream answered ${rec.ctype}`] };
    const s = ex.api === "chat" ? judgeChatStream(rec, ex, p) : judgeRespStream(rec, ex, p);
    if (rec.cut) p.push(`stream cut: ${rec.cut}`);
    else if (!s.ended) p.push("stream ended without [DONE], response.completed/failed or an error event");
    rec.unended = !s.ended;
    if (ex.mustErrEnd && s.ended && !s.err) p.push("an upstream fault ended as a success");
    if (s.err && !ex.errEnd && !ex.mustErrEnd) p.push("stream ended with an error");
    if (!s.err && ex.echo !== undefined && s.text !== ex.echo) p.push(`text ${JSON.stringify(s.text)}, want ${JSON.stringify(ex.echo)}`);
    if (!s.err && ex.answer && !ex.answer.test(s.text)) p.push(`answer ${JSON.stringify(s.text.slice(0, 120))}`);
    return { outcome: p.length ? "abnormal" : s.err ? "error-end" : "ok", p };
  }
  if (rec.cut) return { outcome: "abnormal", p: [...p, `body cut: ${rec.cut}`] };
  if (!rec.json) return { outcome: "abnormal", p: [...p, `${rec.status} ${rec.ctype}, not JSON: ${rec.text.slice(0, 120)}`] };
  const o = rec.json;
  if (ex.api === "chat") {
    check(p, "chat.completion", () => validate("CreateChatCompletionResponse", o));
    const text = o.choices?.[0]?.message?.content ?? "";
    if (ex.echo !== undefined && text !== ex.echo) p.push(`content ${JSON.stringify(text)}, want ${JSON.stringify(ex.echo)}`);
    if (ex.answer && !ex.answer.test(text)) p.push(`answer ${JSON.stringify(text.slice(0, 120))}`);
  } else if (ex.api === "resp") {
    check(p, "response", () => validate("Response", o));
    if (o.status !== "completed") p.push(`response status ${o.status}`);
    const text = outputText(o);
    if (ex.echo !== undefined && text !== ex.echo) p.push(`output_text ${JSON.stringify(text)}, want ${JSON.stringify(ex.echo)}`);
    if (ex.answer && !ex.answer.test(text)) p.push(`answer ${JSON.stringify(text.slice(0, 120))}`);
  } else if (ex.api === "sandbox") {
    if (!/^cntr_/.test(o.id ?? "") || o.object !== "sandbox") p.push(`sandbox ${rec.text.slice(0, 120)}`);
  } else if (ex.api === "exec") {
    if (o.object !== "code_execution" || typeof o.stdout !== "string" || !Array.isArray(o.results)) p.push(`code_execution ${rec.text.slice(0, 120)}`);
    // A hung run comes back as a result with a TimeoutError.
    else if (o.error === null && o.stdout !== ex.stdout) p.push(`stdout ${JSON.stringify(o.stdout)}`);
    else if (o.error !== null && o.error?.name !== "TimeoutError") p.push(`run error ${JSON.stringify(o.error).slice(0, 120)}`);
  } else if (ex.api === "bg") {
    check(p, "response", () => validate("Response", o));
    judgeBg(o, ex, p);
  } else if (ex.api === "deleted") {
    if (o.object !== "sandbox.deleted" || o.deleted !== true) p.push(`delete ${rec.text.slice(0, 120)}`);
  }
  return { outcome: p.length ? "abnormal" : "ok", p };
}

// ---------------------------------------------------------------- kills, faults, the store

const kills = [];         // responders: { t, pid }
const runnerKills = [];   // runners: { t, wall, pid, busy, before, jobs }
const faultsSet = {};     // fault kind -> times set
const seen = new Map();   // store row id -> its last state seen { state, kind, tool, owner_pid, handle }

function responders() {
  return stack.processes().responders;
}

function runners() {
  return stack.processes().runners ?? [];
}

// The background jobs running now and their runners' pids.
async function heldJobs() {
  const rows = await sql("SELECT id, runner FROM bg WHERE status = 'in_progress'");
  return rows.map((r) => ({ id: r.id, pid: Number(/:(\d+):\d+$/.exec(r.runner ?? "")?.[1] ?? 0) }));
}

// A runner, a busy one when there is one; what it held just before and
// just after the kill (after: what it died with, until the reaper fails
// it; before: in case the reaper was quicker than this look).
async function killRunner(x) {
  const before = await heldJobs().catch(() => []);
  const rs = runners();
  const busy = rs.filter((pid) => before.some((h) => h.pid === pid));
  if (rs.length === 0) return false;
  const pid = pick(x, busy.length ? busy : rs);
  const t = now(), wall = Date.now();
  try { process.kill(pid, "SIGKILL"); } catch { return false; }
  const after = await heldJobs().catch(() => []);
  runnerKills.push({ t, wall, pid, busy: busy.length > 0,
    before: before.filter((h) => h.pid === pid).map((h) => h.id), jobs: after.filter((h) => h.pid === pid).map((h) => h.id) });
  return true;
}

async function killLoop(stop, seed) {
  const r = rng(seed ^ 0x5eed);
  while (!stop.done) {
    await sleep(KILL_MS * (0.8 + 0.4 * r()));
    if (stop.done) break;
    const which = r(), x = r();
    if (which < RUNNER_KILL_SHARE && await killRunner(x)) continue;
    const rs = responders();
    if (rs.length === 0) continue;
    const pid = pick(x, rs);
    const t = now();
    try {
      process.kill(pid, "SIGKILL");
      kills.push({ t, pid });
    } catch { /* it exited meanwhile */ }
  }
}

async function chaosLoop(stop, seed) {
  const r = rng(seed ^ 0xfa17);
  while (!stop.done) {
    await sleep(FAULT_MS);
    if (stop.done) break;
    const f = pick(r(), E2B_FAULTS);
    const kind = Object.keys(f).find((k) => k !== "count" && k !== "lines") ?? "clear";
    faultsSet[kind] = (faultsSet[kind] ?? 0) + 1;
    await stack.fakeHook("e2b", "faults", f).catch(() => {});
  }
}

// The store, read as the gateway's user (root would leave root-owned
// -wal/-shm files behind) with sqlite3's JSON output.
async function sql(query) {
  const db = `${stack.storeDir}/sandgate.db`;
  const argv = ["-json", "-cmd", ".timeout 5000", db, query];
  const [cmd, args] = process.getuid() === 0 ?
    ["setpriv", [`--reuid=${serviceUser}`, `--regid=${serviceUser}`, "--init-groups", "sqlite3", ...argv]] : ["sqlite3", argv];
  const { stdout } = await run(cmd, args, { maxBuffer: 64 << 20 });
  return stdout.trim() ? JSON.parse(stdout) : [];
}

const ROWS = "SELECT id, state, kind, tool, owner_pid, expires_at, handle FROM sandboxes";

async function snapshotStore() {
  const rows = await sql(ROWS);
  for (const row of rows) seen.set(row.id, row);
  return rows;
}

async function storeLoop(stop) {
  while (!stop.done) {
    await snapshotStore().catch(() => {});
    await sleep(1000);
  }
}

const killedPids = () => new Set([...kills, ...runnerKills].map((k) => k.pid));
// Creates their creator gave up on (a cancelled background job stops its
// create; a timeout): the row is left "creating", no handle, with its
// owner alive, as a killed creator's is; the provider may have made it.
let abandoned = new Set();
function findAbandoned() {
  abandoned = new Set([...stack.log().matchAll(/event=sandbox_create_failed id=(cntr_[0-9a-f]+) [^\n]*reason=(stopped|timeout)/g)].map((m) => m[1]));
}
// A row left "creating" by a responder we killed in the middle of a
// create: the provider may have made the sandbox, with no handle for
// anyone to delete it by; the provider ends it at its life's end.
const orphanRow = (row) => row && row.state === "creating" && !row.handle && (killedPids().has(row.owner_pid) || abandoned.has(row.id));

// Local sandboxes are processes of uids from SANDBOX_UID_BASE, in a
// cgroup named after their sandbox (when sandboxd has cgroups), under the
// cgroup of this gateway's sandboxd: other gateways on the machine (other
// people's tests) have theirs too, not ours to count.
let ourCgroup = null;   // "sandgate-UID-HEX", from sandboxd's first lines
function findOurCgroup() {
  const m = /sandgate: sandboxd: limits: cgroup [^\n]* under (\S+)/.exec(stack.log());
  ourCgroup = m ? m[1].split("/").pop() : null;
  return ourCgroup !== null || /sandgate: sandboxd: limits: no cgroup/.test(stack.log());
}
function localSandboxProcs() {
  const out = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = fs.readFileSync(`/proc/${d}/status`, "utf8");
      const uid = Number(/^Uid:\s+(\d+)/m.exec(st)?.[1]);
      if (uid < SANDBOX_UID_BASE) continue;
      const cg = fs.readFileSync(`/proc/${d}/cgroup`, "utf8");
      if (ourCgroup && !cg.includes(`/${ourCgroup}/`)) continue;
      const sbx = /\/(cntr_[0-9a-f]+)$/m.exec(cg)?.[1] ?? null;
      out.push({ pid: Number(d), uid, sbx, comm: fs.readFileSync(`/proc/${d}/comm`, "utf8").trim() });
    } catch { /* gone */ }
  }
  return out;
}

// ---------------------------------------------------------------- figures

function quantile(xs, q) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

function table(head, rows) {
  const line = (cells) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

// ---------------------------------------------------------------- background: the verdicts

// After the grace: every job ended, each as it should; the figures.
async function bgChecks(fail, loadEndWall) {
  const rows = await sql("SELECT id, status, error, cancel, created_ms, started_ms, ended_ms FROM bg");
  const byId = new Map(rows.map((r) => [r.id, r]));
  // Jobs a killed runner held: as it died (jobs), or just before (when
  // the reaper was quicker than our look after).
  const killedJob = new Map();   // id -> the kill
  for (const k of runnerKills) for (const id of new Set([...k.jobs, ...k.before])) {
    const row = byId.get(id);
    // Held before the kill but finished by the runner before it: not the kill's.
    if (!k.jobs.includes(id) && row?.ended_ms && row.ended_ms < k.wall) continue;
    if (!k.jobs.includes(id) && row?.status !== "failed") continue;
    killedJob.set(id, k);
  }
  const f = { created: bgJobs.length, ended: {}, unended: 0, killedJobs: 0, killToEnd: [], failedOther: {},
    cancels: { asked: 0, cancelled: 0, refused: 0, other: 0 }, polls: 0, lifeMs: [], waitMs: [], afterLoadMs: 0 };
  const failedBy = (o) => o.error?.message === RUNNER_GONE;
  for (const job of bgJobs) {
    f.polls += job.polls;
    const row = byId.get(job.id);
    const o = job.final;
    if (!o) {
      f.unended++;
      fail(`background ${job.kind} ${job.id}: not ended ${BG_GRACE_S} s after the load (store: ${row?.status ?? "no row"})`);
      continue;
    }
    f.ended[o.status] = (f.ended[o.status] ?? 0) + 1;
    if (row?.status !== o.status) fail(`background ${job.id}: GET showed ${o.status}, the store has ${row?.status}`);
    if (row?.ended_ms) {
      f.lifeMs.push(row.ended_ms - row.created_ms);
      f.afterLoadMs = Math.max(f.afterLoadMs, row.ended_ms - loadEndWall);
    }
    if (row?.started_ms) f.waitMs.push(row.started_ms - row.created_ms);
    const kill = killedJob.get(job.id);
    if (job.cancel) {
      f.cancels.asked++;
      if (job.cancel.status === 200 && job.cancel.as === "cancelled") f.cancels.cancelled++;
      else if (job.cancel.status === 400) f.cancels.refused++;
      else f.cancels.other++;
    }
    // What it must have ended as.
    if (kill) {
      f.killedJobs++;
      if (o.status !== "failed" || !failedBy(o) || o.error?.code !== "server_error") {
        fail(`background ${job.id}: its runner ${kill.pid} was killed, it ended ${o.status} ${JSON.stringify(o.error)}`);
      } else if (row?.ended_ms) {
        f.killToEnd.push(row.ended_ms - kill.wall);
        if (row.ended_ms - kill.wall > BG_KILL_END_S * 1000) fail(`background ${job.id}: failed ${row.ended_ms - kill.wall} ms after its runner's kill`);
      }
      continue;
    }
    if (failedBy(o)) { fail(`background ${job.id}: failed as if its runner died, but we killed none of its`); continue; }
    if (job.cancel?.status === 200) {
      if (o.status !== job.cancel.as) fail(`background ${job.id}: the cancel answered ${job.cancel.as}, it ended ${o.status}`);
      continue;
    }
    if (job.cancel?.status === 400) {
      const m = /^Cannot cancel a (\w+) response\.$/.exec(job.cancel.message ?? "");
      if (!m || m[1] !== o.status) fail(`background ${job.id}: the cancel answered "${job.cancel.message}", it ended ${o.status}`);
    }
    if (o.status === "cancelled") { fail(`background ${job.id}: cancelled, never asked to`); continue; }
    const text = outputText(o);
    if (job.kind === "echo" && !(o.status === "completed" && text === job.answer)) {
      fail(`background echo ${job.id}: ${o.status} ${JSON.stringify(text).slice(0, 80)} ${JSON.stringify(o.error)}`);
    } else if (job.kind === "fault" && o.status !== "failed") {
      fail(`background fault ${job.id}: ${o.status}, not failed`);
    } else if (job.kind.endsWith("code") && !(o.status === "completed" && job.answer.test(text) || o.status === "failed")) {
      fail(`background ${job.kind} ${job.id}: ${o.status} ${JSON.stringify(text).slice(0, 120)}`);
    }
    if (o.status === "failed") {
      const why = `${job.kind}: ${o.error?.message?.slice(0, 60)}`;
      f.failedOther[why] = (f.failedOther[why] ?? 0) + 1;
    }
  }
  // Every job in the store ended, those whose create answer a kill broke too.
  for (const r of rows) if (!BG_TERMINAL.has(r.status)) fail(`background ${r.id}: ${r.status} in the store after the grace`);
  f.storeRows = rows.length;
  // The reaper failed only killed runners' jobs.
  const reaped = [...stack.log().matchAll(/event=background id=(\S+) status=failed reason=runner_gone/g)].map((m) => m[1]);
  for (const id of reaped) if (!killedJob.has(id)) fail(`the reaper failed background ${id}, not a job of a runner we killed`);
  f.reaped = reaped.length;
  return f;
}

// ---------------------------------------------------------------- main

async function main() {
  const failures = [];
  const fail = (msg) => failures.push(msg);
  const deadline = T0 + BUDGET_S * 1000;
  const ops = plan(N, SEED);

  stack = await startStack({
    sandboxes: true, interceptionTool: "e2b", execTimeout: EXEC_TIMEOUT,
    request_timeout: REQUEST_TIMEOUT,
    idle_retire: 3600,   // no responder retires: every death is one we caused
    sessions: `ttl = ${TTL};`,
    keys: `{ name = "soak"; key_sha256 = "${crypto.createHash("sha256").update(SOAK_KEY).digest("hex")}"; max_concurrent = 64; }`,
    models: (m) => [m("soak-slowstream", "slowstream-2", "timeout = 1;"), m("soak-drop1", "drop-1")].join(",\n  "),
    top: `background: { runners = ${RUNNERS}; };`,
  });
  await waitFor(findOurCgroup, "sandboxd's limits in the log", 10000).catch(() => {});
  const started = now();
  console.error(`soak: N=${N} seed=${SEED} concurrency=${CONC} runners=${RUNNERS} build=${BUILD} stack in ${stack.dir}`);

  // The run: CONC workers take the plan's operations in order.
  const stop = { done: false };
  const loops = [killLoop(stop, SEED), chaosLoop(stop, SEED), storeLoop(stop)];
  let next = 0, issued = 0, late = false;
  const worker = async () => {
    while (next < ops.length) {
      // Stop issuing when the time budget runs short: the checks need time.
      if (Date.now() > deadline - (TTL + REAP_EVERY + 60 + BG_GRACE_S) * 1000) { late = true; return; }
      const op = ops[next++];
      if (++issued % 250 === 0) console.error(`soak: ${issued}/${ops.length} operations, ${records.length} requests, ${kills.length}+${runnerKills.length} kills, ${bgJobs.length} background, ${now() / 1000 | 0} s`);
      await OPS[op.kind](op);
    }
  };
  await Promise.all(Array.from({ length: CONC }, worker));
  stop.done = true;
  await Promise.all(loops);
  const runMs = now() - started;
  if (late) fail(`time budget: only ${issued} of ${ops.length} operations issued in ${(runMs / 1000).toFixed(0)} s`);
  await stack.fakeHook("e2b", "faults", {});
  // 5. The background jobs end within BG_GRACE_S of the load's end.
  const loadEndWall = Date.now();
  bgStop.at = now() + BG_GRACE_S * 1000;
  await Promise.all(bgPollers);
  const bg = await bgChecks(fail, loadEndWall);
  const endOfRun = await stack.fakeHook("e2b", "stats");
  await snapshotStore();

  // 1. Every answer well-formed; abnormal ones only where we killed.
  const byClass = new Map();
  let killedAbnormal = 0;
  const badExamples = [];
  for (const rec of records) {
    const v = judge(rec);
    rec.outcome = v.outcome;
    rec.problems = v.p;
    rec.overlap = kills.some((k) => rec.t0 <= k.t + KILL_SLACK_MS && k.t <= rec.t1);
    if (rec.leaks.length) {
      fail(`${rec.cls} ${rec.method} ${rec.path} (${rec.model ?? ""}): client saw ${rec.leaks.join(", ")}`);
    }
    // What lighttpd makes of a responder killed under a request: its own
    // 5xx page before the headers, a body cut (or a stream that just
    // stops) after them. Only around our kills, and nothing else.
    const killedShape = !rec.neterr && ((rec.status >= 500 && rec.ctype.startsWith("text/html")) || rec.cut || rec.unended);
    if (rec.outcome === "abnormal") {
      if (rec.overlap && killedShape) { rec.outcome = "killed"; killedAbnormal++; } else badExamples.push(rec);
    }
    const c = byClass.get(rec.cls) ?? { n: 0, ok: 0, error: 0, errorEnd: 0, killed: 0, bad: 0, ms: [], statuses: {} };
    c.n++;
    c[{ ok: "ok", error: "error", "error-end": "errorEnd", killed: "killed", abnormal: "bad" }[rec.outcome]]++;
    c.ms.push(rec.t1 - rec.t0);
    const st = rec.neterr ? "neterr" : rec.cut ? `${rec.status}-cut` : String(rec.status);
    c.statuses[st] = (c.statuses[st] ?? 0) + 1;
    byClass.set(rec.cls, c);
  }
  for (const rec of badExamples.slice(0, 10)) {
    const near = kills.reduce((a, k) => Math.abs(k.t - rec.t0) < Math.abs(a - rec.t0) ? k.t : a, Infinity);
    fail(`malformed answer: ${rec.cls} ${rec.method} ${rec.path} model=${rec.model ?? "-"} status=${rec.status} ` +
      `t=${rec.t0}..${rec.t1} ms (nearest kill at ${near} ms) request-id=${rec.requestId ?? "-"}: ${rec.problems.join("; ")}`);
  }
  if (badExamples.length > 10) fail(`... and ${badExamples.length - 10} more malformed answers`);
  // A responder serves one request at a time: one kill breaks one answer at most.
  if (killedAbnormal > kills.length) fail(`${killedAbnormal} broken answers around ${kills.length} kills`);

  // The gateway still answers, once the pool has grown back.
  let healthy = false;
  await waitFor(async () => {
    const h = await fetch(stack.url("/healthz"));
    const r = await fetch(stack.url("/v1/chat/completions"), { method: "POST",
      headers: { authorization: `Bearer ${SOAK_KEY}`, "content-type": "application/json" },
      body: JSON.stringify(chatBody("gpt-test", "after the soak")) });
    const j = await r.json();
    healthy = h.status === 200 && r.status === 200 && j.choices?.[0]?.message?.content === "echo: after the soak";
    return healthy;
  }, "a normal answer after the soak", 15000).catch(() => {});
  if (!healthy) fail("after the soak, /healthz or a plain chat request does not answer 200 as it should");

  // 3. Sandboxes: wait for the reaper (kept ones idle past TTL; a request's
  // own whose responder we killed), then account for every sandbox the
  // fake made.
  const liveAtEnd = endOfRun.live.length;
  const sweepStart = now();
  let rows = [], stats = endOfRun, locals = [];
  const settled = async () => {
    findAbandoned();
    rows = await snapshotStore();
    stats = await stack.fakeHook("e2b", "stats");
    locals = localSandboxProcs();
    const orphanIds = new Set(rows.filter(orphanRow).map((r) => r.id));
    const tracked = rows.filter((r) => !orphanIds.has(r.id));
    const liveNotOrphan = stats.live.filter((id) => !orphanIds.has(stats.history[id]?.metadata?.sandgate_id));
    const localNotOrphan = locals.filter((p) => !orphanIds.has(p.sbx));
    return tracked.length === 0 && liveNotOrphan.length === 0 && localNotOrphan.length === 0;
  };
  const swept = await waitFor(settled, "the reaper's sweep", (TTL + REAP_EVERY + 15) * 1000).then(() => true, (e) => e.message);
  const sweepMs = now() - sweepStart;
  if (swept !== true) {
    fail(`the reaper did not sweep everything within ${TTL + REAP_EVERY + 15} s: store rows ` +
      JSON.stringify(rows.map(({ id, state, kind, tool, owner_pid }) => ({ id, state, kind, tool, owner_pid }))) +
      `; e2b live ${JSON.stringify(stats.live)}; local sandbox processes ${JSON.stringify(locals)}`);
  }
  // Every sandbox the fake made: deleted, or an orphan of a kill mid-create
  // (still live at the fake, or ended there by its life).
  findAbandoned();
  const fates = { deleted: 0, orphanLive: 0, orphanExpired: 0, orphanStopped: 0, leaked: 0 };
  const liveSet = new Set(stats.live), expiredSet = new Set(stats.expired);
  for (const [id, info] of Object.entries(stats.history)) {
    const sg = info.metadata?.sandgate_id;
    const row = seen.get(sg);
    const bounded = info.timeout <= REQUEST_TIMEOUT + 60;
    if (!liveSet.has(id) && !expiredSet.has(id)) fates.deleted++;
    else if (orphanRow(row) && bounded) {
      fates[liveSet.has(id) ? "orphanLive" : "orphanExpired"]++;
      if (abandoned.has(sg)) fates.orphanStopped++;
    }
    else {
      fates.leaked++;
      fail(`e2b sandbox ${id} (${sg}) ${liveSet.has(id) ? "still live" : "expired at the fake"}; last store row seen: ${JSON.stringify(row ?? null)}`);
    }
  }
  // An orphan still live at the fake must end there before the reaper
  // drops its row: its row outlives it (expires_at + the reaper's 60 s).
  if (fates.orphanLive) {
    const r = await fetch(`http://127.0.0.1:${stack.e2bPort}/sandboxes`, { headers: { "X-API-Key": E2B_KEY } });
    for (const sb of await r.json()) {
      const row = seen.get(sb.metadata?.sandgate_id);
      if (orphanRow(row) && Date.parse(sb.endAt) > (row.expires_at + 60) * 1000) {
        fail(`orphan ${sb.sandboxID} (${row.id}) outlives its row: ends ${sb.endAt}, row expires ${row.expires_at}`);
      }
    }
  }
  const reaperLines = [...stack.log().matchAll(/event=reaper_sweep tool=\* deleted=(\d+) /g)].map((m) => Number(m[1]));

  // 2. Deaths: each one of our SIGKILLs; sandboxd never died.
  const log = stack.log();
  const deaths = [...log.matchAll(/sandgate: responder (\d+) died \((signal|exit) (\d+)\)/g)]
    .map((m) => ({ pid: Number(m[1]), how: m[2], code: Number(m[3]) }));
  const killed = new Set(kills.map((k) => k.pid));
  for (const d of deaths) {
    if (!(d.how === "signal" && d.code === 9 && killed.has(d.pid))) fail(`responder ${d.pid} died on its own (${d.how} ${d.code})`);
  }
  const unlogged = kills.filter((k) => !deaths.some((d) => d.pid === k.pid));
  if (unlogged.length) fail(`${unlogged.length} of our kills never showed as a death in the log: ${unlogged.map((k) => k.pid).join(" ")}`);
  for (const m of log.matchAll(/sandgate: sandboxd (died|exited)[^\n]*/g)) fail(`sandboxd: ${m[0]}`);
  // The same for the runners: every death one of our SIGKILLs.
  const runnerDeaths = [...log.matchAll(/sandgate: runner (\d+) died \((signal|exit) (\d+)\)/g)]
    .map((m) => ({ pid: Number(m[1]), how: m[2], code: Number(m[3]) }));
  const runnerKilled = new Set(runnerKills.map((k) => k.pid));
  for (const d of runnerDeaths) {
    if (!(d.how === "signal" && d.code === 9 && runnerKilled.has(d.pid))) fail(`runner ${d.pid} died on its own (${d.how} ${d.code})`);
  }
  const runnerUnlogged = runnerKills.filter((k) => !runnerDeaths.some((d) => d.pid === k.pid));
  if (runnerUnlogged.length) fail(`${runnerUnlogged.length} of our runner kills never showed as a death in the log: ${runnerUnlogged.map((k) => k.pid).join(" ")}`);
  const cut = (log.match(/perhaps the fastcgi process died/g) ?? []).length;

  // 4. The store is sound; no sanitizer spoke.
  let integrity = "";
  try { integrity = (await sql("PRAGMA integrity_check")).map((r) => r.integrity_check).join(" "); } catch (e) { integrity = e.message; }
  if (integrity !== "ok") fail(`PRAGMA integrity_check: ${integrity}`);
  const san = stack.sanitizerReports();
  if (san.length) fail(`${san.length} sanitizer reports, first: ${san[0].slice(0, 2000)}`);

  // SOAK_DUMP=FILE: every request, one JSON line each (what it was, when,
  // what came back, the verdict), to look into a failure.
  if (process.env.SOAK_DUMP) {
    fs.writeFileSync(process.env.SOAK_DUMP, JSON.stringify({ kills }) + "\n" + records.map(({ json, expect, text, ...r }) =>
      JSON.stringify({ ...r, expect: { ...expect, answer: expect.answer?.source }, text: text.slice(0, 2000) })).join("\n") + "\n");
  }
  const keep = failures.length > 0 || process.env.SG_KEEP;
  if (keep) process.env.SG_KEEP = "1";
  const dir = stack.dir;
  try { await stack.stop(); } catch (e) { if (!san.length) fail(e.message.slice(0, 2000)); }
  // Stopped, the gateway takes every local sandbox with it (sandboxd's
  // kernels die with it).
  const afterStop = await waitFor(() => localSandboxProcs().length === 0, "local sandboxes gone", 10000).then(() => 0,
    () => localSandboxProcs().length);
  if (afterStop) fail(`${afterStop} local sandbox processes outlived the gateway`);
  const elapsed = now() / 1000;

  // ---- the report
  let commit = "";
  try { commit = (await run("git", ["-C", root, "rev-parse", "--short", "HEAD"])).stdout.trim(); } catch { /* not a clone */ }
  const cmd = `${process.env.SOAK_SEED ? `SOAK_SEED=${SEED} ` : ""}${BUILD !== "build" ? `SOAK_BUILD=${BUILD} ` : ""}sh tests/soak/run.sh ${N}`;
  const order = ["chat", "chat-stream", "resp", "resp-stream", "followup", "ci-e2b", "ci-e2b-stream", "session",
    "sbx-create", "sbx-run", "sbx-delete", "local-code", "local-create", "local-run", "local-ci", "local-delete",
    "upstream-fault", "upstream-timeout", "upstream-timeout-stream", "upstream-drop", "upstream-drop-stream",
    "bg-create", "bg-get", "bg-cancel"];
  const classes = [...byClass.keys()].sort((a, b) => order.indexOf(a) - order.indexOf(b));
  const total = { n: 0, ok: 0, error: 0, errorEnd: 0, killed: 0, bad: 0, ms: [] };
  for (const c of byClass.values()) for (const k of Object.keys(total)) total[k] = k === "ms" ? total.ms.concat(c.ms) : total[k] + c[k];
  const row = (name, c) => [name, c.n, c.ok, c.error, c.errorEnd, c.killed, c.bad,
    Math.round(quantile(c.ms, 0.5)), Math.round(quantile(c.ms, 0.99)),
    c.statuses ? Object.entries(c.statuses).sort().map(([s, n]) => `${s}×${n}`).join(" ") : ""];
  const out = [];
  out.push(`### Soak: ${N} requests (${records.length} sent in ${issued} operations), seed ${SEED}, ${failures.length ? "FAILED" : "passed"}`);
  out.push("");
  out.push(`\`${cmd}\` — ${commit ? `commit ${commit}, ` : ""}${BUILD}, ${os.cpus().length} cores, concurrency ${CONC}, a responder (or, one time in ${Math.round(1 / RUNNER_KILL_SHARE)}, a background runner of ${RUNNERS}) SIGKILLed every ~${KILL_MS / 1000} s; ` +
    `${new Date().toISOString().slice(0, 10)}. Run ${(runMs / 1000).toFixed(1)} s, sweep wait ${(sweepMs / 1000).toFixed(1)} s, ` +
    `whole soak ${elapsed.toFixed(1)} s.`);
  out.push("");
  out.push(table(["class", "requests", "ok", "error (well-formed)", "stream ended by error event", "killed by us", "malformed", "p50 ms", "p99 ms", "statuses"],
    [...classes.map((k) => row(k, byClass.get(k))), row("**all**", { ...total, statuses: null })]));
  out.push("");
  out.push(table(["figure", "value"], [
    ["operations issued / planned; requests sent", `${issued} / ${ops.length}; ${records.length}`],
    ["responders SIGKILLed by us", kills.length],
    ["responder deaths in the log (all signal 9, all ours)", deaths.length],
    ["answers broken by our kills: lighttpd's 500 page / a cut body or stream", `${killedAbnormal}: ` +
      `${records.filter((r) => r.outcome === "killed" && r.ctype.startsWith("text/html")).length} / ` +
      `${records.filter((r) => r.outcome === "killed" && !r.ctype.startsWith("text/html")).length}`],
    ["lighttpd \"fastcgi process died\" lines", cut],
    ["e2b faults set (kind×times)", Object.entries(faultsSet).sort().map(([k, n]) => `${k}×${n}`).join(" ")],
    ["e2b sandboxes created / deleted", `${Object.keys(stats.history).length} / ${fates.deleted}`],
    ["e2b sandboxes live at the end of the run, then swept by the reaper", `${liveAtEnd} → ${stats.live.length}`],
    ["sandboxes the reaper deleted (log, whole soak)", reaperLines.reduce((a, b) => a + b, 0)],
    ["e2b orphans of a kill or a cancel mid-create (row \"creating\", no handle: the reaper deletes a dead creator's by their label 90 s after the create began, later than this soak looks; a cancelled one's ends at its life)",
      `${fates.orphanLive} live, ${fates.orphanExpired} expired; ${fates.orphanStopped} of them a create stopped by a cancel`],
    ["e2b sandboxes leaked", fates.leaked],
    ["local sandboxes made (answers of /v1/code and of local creates)",
      records.filter((r) => (r.cls === "local-code" && r.status === 200) || (r.cls === "local-create" && r.status === 201)).length],
    ["local sandboxes left after the sweep (all orphans of a kill mid-create) / after the stop",
      `${new Set(locals.map((p) => p.sbx)).size} (${locals.length} processes) / ${afterStop}`],
    ["PRAGMA integrity_check", integrity],
    ["sanitizer reports", san.length],
  ]));
  out.push("");
  const ms = (xs) => xs.length ? `${Math.round(quantile(xs, 0.5))} / ${Math.round(quantile(xs, 0.99))} / ${Math.max(...xs)} ms` : "-";
  out.push(table(["background responses", "value"], [
    ["created (answered queued) / jobs in the store", `${bg.created} / ${bg.storeRows}`],
    ["ended: by status", Object.entries(bg.ended).sort().map(([k, n]) => `${k}×${n}`).join(" ") || "-"],
    [`not ended ${BG_GRACE_S} s after the load (queued or in_progress)`, bg.unended],
    ["runners SIGKILLed by us (busy / idle); runner deaths in the log (all signal 9, all ours)",
      `${runnerKills.length} (${runnerKills.filter((k) => k.busy).length} / ${runnerKills.filter((k) => !k.busy).length}); ${runnerDeaths.length}`],
    ["jobs of a killed runner: failed with its error / failed by the reaper (log)", `${bg.killedJobs} / ${bg.reaped}`],
    ["kill → job failed, p50 / p99 / max", ms(bg.killToEnd)],
    ["other failures (kind: message × n)", Object.entries(bg.failedOther).sort().map(([k, n]) => `${k} ×${n}`).join("; ") || "-"],
    ["cancels: asked / answered cancelled / refused (already ended) / other", `${bg.cancels.asked} / ${bg.cancels.cancelled} / ${bg.cancels.refused} / ${bg.cancels.other}`],
    ["created → started (queue wait), p50 / p99 / max", ms(bg.waitMs)],
    ["created → ended, p50 / p99 / max", ms(bg.lifeMs)],
    ["last job ended after the load's end", `${(bg.afterLoadMs / 1000).toFixed(1)} s`],
    ["polls (GET /v1/responses/{id})", bg.polls],
  ]));
  if (failures.length) {
    out.push("");
    out.push(`**Failures** (stack kept in ${dir}):`);
    out.push("");
    for (const f of failures) out.push(`- ${f}`);
  }
  console.log(out.join("\n"));
  return failures.length ? 1 : 0;
}

// The verdicts are exported for a test of the soak itself; run as a
// script, it soaks.
export { judge, leaks, plan };

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // A hard stop: whatever hangs, the soak ends within its budget (plus a
  // little to stop the stack).
  setTimeout(() => {
    console.error(`soak: over the ${BUDGET_S} s budget; stopping`);
    stack?.stop().catch(() => {}).finally(() => process.exit(1));
    setTimeout(() => process.exit(1), 15000).unref();
  }, (BUDGET_S + 30) * 1000).unref();
  // Stopped from outside (^C, run.sh's timeout): the stack goes too.
  for (const sig of ["SIGINT", "SIGTERM"]) {
    process.once(sig, () => {
      console.error(`soak: ${sig}; stopping the stack`);
      stack?.stop().catch(() => {}).finally(() => process.exit(1));
      setTimeout(() => process.exit(1), 15000).unref();
    });
  }
  main().then((code) => process.exit(code), async (e) => {
    console.error("soak: " + (e.stack ?? e));
    if (stack) {
      process.env.SG_KEEP = "1";
      await stack.stop().catch(() => {});
      console.error(`soak: stack kept in ${stack.dir}`);
    }
    process.exit(1);
  });
}
