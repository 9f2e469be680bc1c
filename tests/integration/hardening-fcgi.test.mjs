// Attacks on the FastCGI front, each performed for real: a forged log
// line, a key or heavy work taking every responder, connections that send
// nothing, bodies that would build huge trees, a responder grown too big,
// and a compromised responder pointing the root master at another process.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import { startStack, waitFor as until, KEYS, request, holdStream, stopHolds } from "./harness.mjs";
import { fcgiRequest, fcgiConn as connTo } from "./fcgi-client.mjs";

const fcgiConn = (opts) => connTo(stack.fcgiAddr, opts);

const DAVE = "sk-dave-" + crypto.randomBytes(8).toString("hex");
const ERIN = "sk-erin-" + crypto.randomBytes(8).toString("hex");
const MAX_BODY = 8 << 20;
const READ_TIMEOUT = 3;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let stack;

before(async () => {
  stack = await startStack({
    max_body_bytes: MAX_BODY,
    server: `read_timeout = ${READ_TIMEOUT}; queue_timeout = 2;`,
    keys: `{ name = "dave"; key = "${DAVE}"; tools = [ "local2" ]; },
      { name = "erin"; key = "${ERIN}"; max_concurrent = 4; }`,
  });
});
after(async () => { await stack?.stop(); });

// One request, bounded in time: {status, json, text, headers}.
const call = (method, path, opts) => request(stack, method, path, opts);

const chat = (content, model = "gpt-test") =>
  JSON.stringify({ model, messages: [{ role: "user", content }] });

// A slow stream holding one responder on a heavy route (40 words, 0.4 s
// apart: long enough for a loaded machine, and it is cut short anyway).
const hold = (key) => holdStream(stack, key);

// One sample of /metrics, by its name with labels as written there.
async function metric(sample) {
  const lines = (await call("GET", "/metrics", { key: null })).text.split("\n");
  const line = lines.find((l) => l.startsWith(sample + " "));
  return line ? Number(line.slice(sample.length + 1)) : NaN;
}

// Stop the holds; resolves once no responder works on them any more.
async function release(holds) {
  await stopHolds(holds);
  // Busy: the responder answering /metrics itself.
  await until(async () => (await metric('sandgate_responders{state="busy"}')) <= 1, "the holds to end");
}

function hwm(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmHWM:\s+(\d+) kB/m);
  return m ? Number(m[1]) * 1024 : 0;
}

test("a model with a newline leaves one escaped log line and forges none", async () => {
  const r = await call("POST", "/v1/chat/completions", { body: chat("hi", "x\nFORGED 200 1ms") });
  assert.equal(r.status, 404);
  const id = r.headers.get("x-request-id");
  await until(() => stack.log().includes(id), "the request's log line");
  const lines = stack.log().split("\n");
  assert.deepEqual(lines.filter((l) => l.includes(id)).length, 1, "exactly one line for the request");
  assert.equal(lines.filter((l) => l.startsWith("FORGED")).length, 0, "no forged line");
  assert.ok(lines.some((l) => l.startsWith(`event=request id=${id} `) &&
    l.includes("model=x\\x0aFORGED\\x20200\\x201ms status=404 ")),
    "the model is logged escaped");
});

test("a key without the interception tool gets 403 before any upstream call", async () => {
  await stack.resetFake();
  const r = await call("POST", "/v1/responses", { key: DAVE, body: JSON.stringify({
    model: "ci-primes", input: "primes?", tools: [{ type: "code_interpreter", container: { type: "auto" } }] }) });
  assert.equal(r.status, 403, r.text);
  assert.deepEqual(r.json, { error: { message: "This API key may not use the sandbox tool 'local'.",
    type: "invalid_request_error", param: "tools", code: "tool_not_allowed" } });
  assert.deepEqual(await stack.fakeRequests(), [], "the upstream was never asked");
  const ok = await call("POST", "/v1/chat/completions", { key: DAVE, body: chat("plain") });
  assert.equal(ok.status, 200, "the same key without code_interpreter is served");
});

test("a key may run code in a container of a tool it may use, whatever the interception tool", async () => {
  // dave may use local2 only; the interception tool is local. A container
  // of local2 dave names is where the code runs: no 403 for local.
  const c = await call("POST", "/v1/sandboxes", { key: DAVE, body: JSON.stringify({ tool: "local2" }) });
  assert.equal(c.status, 201, c.text);
  try {
    const r = await call("POST", "/v1/responses", { key: DAVE, ms: 60000, body: JSON.stringify({
      model: "ci-primes", input: "primes?", tools: [{ type: "code_interpreter", container: c.json.id }] }) });
    assert.equal(r.status, 200, r.text);
    const ci = r.json.output.find((o) => o.type === "code_interpreter_call");
    assert.equal(ci?.container_id, c.json.id, "the code ran in dave's own container");
  } finally {
    await call("DELETE", `/v1/sandboxes/${c.json.id}`, { key: DAVE });
  }
});

test("a body that would build a huge tree is refused before parsing, memory bounded", async () => {
  const before = stack.processes().responders.map(hwm);
  const base = Math.max(...before);
  const head = '{"model":"gpt-test","messages":[{"role":"user","content":"x"}],"pad":[';
  const n = Math.floor((MAX_BODY - head.length - 8) / 2);
  const body = head + "0,".repeat(n) + "0]}";
  assert.ok(body.length <= MAX_BODY);
  const r = await call("POST", "/v1/chat/completions", { body, ms: 60000 });
  assert.equal(r.status, 400, r.text.slice(0, 300));
  assert.equal(r.json.error.code, "request_too_complex");
  assert.equal(r.json.error.type, "invalid_request_error");
  assert.equal(r.json.error.param, null);
  // The body is read into one buffer of CONTENT_LENGTH bytes and counted
  // in place, so a responder's peak grows by that buffer (measured: 8 MiB;
  // 18 MiB under ASan, whose allocator adds its own), never by a tree: 4
  // million values made Jansson peak at 199 MiB before the check.
  const bound = base + 3 * MAX_BODY;
  for (const pid of stack.processes().responders)
    assert.ok(hwm(pid) <= bound, `responder ${pid} peaked at ${hwm(pid) >> 20} MiB (bound ${bound >> 20} MiB)`);
  const deep = '{"model":"gpt-test","messages":[{"role":"user","content":"x"}],"pad":' +
    "[".repeat(200) + "]".repeat(200) + "}";
  const d = await call("POST", "/v1/chat/completions", { body: deep });
  assert.equal(d.status, 400);
  assert.equal(d.json.error.code, "request_too_complex");
  const fine = '{"model":"gpt-test","messages":[{"role":"user","content":"ok"}],"pad":[' +
    "0,".repeat(50000) + "0]}";
  assert.equal((await call("POST", "/v1/chat/completions", { body: fine })).status, 200,
    "50 000 values are not too many");
});

test("one key cannot take more than its max_concurrent responders: 429 with retry-after, past its wait", async () => {
  // erin's max_concurrent is 4: a hard cap, even with places free.
  const holds = [];
  try {
    for (let i = 0; i < 4; i++) holds.push(await hold(ERIN));
    const r = await call("POST", "/v1/chat/completions", { key: ERIN, body: chat("fifth") });
    assert.equal(r.status, 429, r.text);
    assert.deepEqual(r.json, { error: { message: "Too many concurrent requests for this key (limit 4), waited its " +
      "turn for server.queue_timeout; retry shortly.", type: "requests", param: null, code: "rate_limit_exceeded" } });
    assert.equal(r.headers.get("retry-after"), "1");
    const other = await call("POST", "/v1/chat/completions", { body: chat("alice meanwhile") });
    assert.equal(other.status, 200, "another key is still served");
    assert.ok(holds.every((h) => !h.ended), "all of it happened while bob's 4 were under way");
    assert.ok((await metric('sandgate_refused_total{reason="key_limit"}')) >= 1);
  } finally {
    await release(holds);
  }
});

test("heavy work past workers_max waits, then 503, while /healthz, /metrics and /v1/models answer", async () => {
  const holds = [];
  try {
    for (const key of [KEYS.bob, KEYS.carol]) for (let i = 0; i < 4; i++) holds.push(await hold(key));
    const r = await call("POST", "/v1/chat/completions", { body: chat("ninth"), ms: 8000 });
    assert.equal(r.status, 503, r.text);
    assert.deepEqual(r.json, { error: { message: "The gateway is at capacity (8 requests under way), and this one " +
      "waited its turn for server.queue_timeout; retry shortly.", type: "server_error", param: null, code: null } });
    assert.equal(r.headers.get("retry-after"), "1");
    assert.equal((await call("GET", "/healthz", { key: null, ms: 8000 })).status, 200);
    const m = await call("GET", "/metrics", { key: null, ms: 8000 });
    assert.equal(m.status, 200);
    assert.match(m.text, /^sandgate_busy_responders\{class="heavy"\} 8$/m);
    assert.match(m.text, /^sandgate_refused_total\{reason="capacity"\} [1-9]/m);
    assert.equal((await call("GET", "/v1/models", { ms: 8000 })).status, 200);
    assert.ok(holds.every((h) => !h.ended), "all of it answered while the 8 heavy requests were under way");
  } finally {
    await release(holds);
  }
});

test("connections that send nothing or half a header neither freeze the pool nor stay open", async () => {
  const socks = [];
  for (let i = 0; i < 14; i++) {
    const s = net.connect(stack.fcgiAddr);
    const rec = { closed: false, connected: false };
    s.on("error", () => {});
    s.on("close", () => { rec.closed = true; });
    // A FastCGI header is 8 bytes: send 3 of them, or nothing at all.
    s.on("connect", () => {
      rec.connected = true;
      if (i % 3) s.write(Buffer.from([1, 1, 0]));
    });
    socks.push({ s, rec });
  }
  try {
    await until(() => socks.every((x) => x.rec.connected), "the stale connections are open");
    const h = await call("GET", "/healthz", { key: null, ms: 10000 });
    assert.equal(h.status, 200, "/healthz answers within a few seconds");
    const r = await call("POST", "/v1/chat/completions", { body: chat("after the stall"), ms: 10000 });
    assert.equal(r.status, 200);
    assert.equal(r.json.choices[0].message.content, "echo: after the stall");
    await until(() => socks.every((x) => x.rec.closed), "sandgate closed every stale connection", 15000);
  } finally {
    for (const x of socks) x.s.destroy();
  }
});

test("an answered request no longer counts against its key while the web server has yet to close", async () => {
  // Finishing, libfcgi waits for the web server to close the connection.
  // A responder that has sent its whole answer must not count against
  // the key meanwhile: else a client that sends its next request at once
  // gets a 429 it did not earn (seen with max_concurrent clients under
  // load). erin's limit is 4: four answered, unclosed, and a fifth.
  const conns = Array.from({ length: 4 }, () => fcgiConn({ halfOpen: true }));
  try {
    const outs = await Promise.all(conns.map((c, i) =>
      c.send(fcgiRequest("POST", "/v1/chat/completions", { key: ERIN, body: chat(`answered ${i}`) }))));
    for (const out of outs) assert.match(out, /^Status: 200 /);
    assert.ok(conns.every((c) => !c.closed), "the four connections are still open");
    const r = await call("POST", "/v1/chat/completions", { key: ERIN, body: chat("fifth") });
    assert.equal(r.status, 200, r.text);
  } finally {
    for (const c of conns) c.s.destroy();
  }
});

test("kept connections (FCGI_KEEP_CONN) are served, do not freeze the pool, and close when idle", async () => {
  const conns = Array.from({ length: 10 }, fcgiConn);
  try {
    let timer;
    const first = await Promise.race([Promise.all(conns.map((c) => c.ask("/healthz"))),
      new Promise((_, no) => { timer = setTimeout(() => no(new Error("the 10 kept connections were not all answered")), 10000); })])
      .finally(() => clearTimeout(timer));
    for (const out of first) assert.match(out, /^Status: 200 /);
    const open = conns.find((c) => !c.closed);
    assert.ok(open, "a kept connection is still open");
    assert.match(await open.ask("/healthz"), /"status":"ok"/, "a second request on the kept connection");
    assert.equal((await call("GET", "/healthz", { key: null, ms: 10000 })).status, 200,
      "the web server's own requests still answer");
    await until(() => conns.every((c) => c.closed), "sandgate closed every idle kept connection", 15000);
  } finally {
    for (const c of conns) c.s.destroy();
  }
});

test("FCGI_WEB_SERVER_ADDRS, a filter only libfcgi's own accept applied, is refused at start", () => {
  const r = spawnSync(`${stack.dir}/bin/sandgate-fcgi`, ["--config", `${stack.dir}/sandgate.conf`,
    "--listen", "127.0.0.1:0"], { env: { ...process.env, FCGI_WEB_SERVER_ADDRS: "127.0.0.1" },
    encoding: "utf8", timeout: 10000 });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /FCGI_WEB_SERVER_ADDRS is not supported/);
});

test("a responder past recycle_mb answers, exits and is replaced", async () => {
  await stack.reload((c) => c.replace(`read_timeout = ${READ_TIMEOUT};`, `read_timeout = ${READ_TIMEOUT}; recycle_mb = 1;`));
  try {
    const r = await call("POST", "/v1/chat/completions", { body: chat("grow") });
    assert.equal(r.status, 200, "the request is answered");
    let pid;
    await until(() => {
      const m = stack.log().match(/responder (\d+): \d+ MiB resident after a request, over server\.recycle_mb = 1; exiting to be replaced/);
      pid = m && Number(m[1]);
      return pid;
    }, "the recycling line");
    await until(() => !stack.processes().responders.includes(pid) && stack.processes().responders.length >= 2,
      "the responder replaced");
    assert.doesNotMatch(stack.log(), new RegExp(`responder ${pid} died`), "a recycled responder is no death");
    const next = await call("POST", "/v1/chat/completions", { body: chat("next") });
    assert.equal(next.status, 200);
  } finally {
    await stack.reload((c) => c.replace(" recycle_mb = 1;", ""));
  }
});

// The scoreboard is shared memory every responder can write. Overwrite it
// as a compromised responder would, with the pid of a bystander, then make
// the root master signal its responders: the bystander must live.
test("a forged scoreboard never makes the root master signal another process", async (t) => {
  if (stack.mode !== "binpath" || process.getuid() !== 0) {
    t.skip("needs the root master that lighttpd spawns");
    return;
  }
  const victim = spawn("sleep", ["300"], { stdio: "ignore" });
  const alive = () => victim.exitCode === null && victim.signalCode === null;
  try {
    const { master, responders } = stack.processes();
    const pid = responders[0];
    const maps = fs.readFileSync(`/proc/${pid}/maps`, "utf8").split("\n")
      .filter((l) => / rw-s /.test(l) && l.includes("/dev/zero (deleted)"));
    assert.ok(maps.length > 0, "the responder maps the scoreboard");
    const fd = fs.openSync(`/proc/${pid}/mem`, "r+");
    for (const l of maps) {
      const [lo, hi] = l.split(" ")[0].split("-").map((h) => parseInt(h, 16));
      const buf = Buffer.alloc(hi - lo);
      for (let o = 0; o + 4 <= buf.length; o += 4) buf.writeInt32LE(victim.pid, o);
      fs.writeSync(fd, buf, 0, buf.length, lo);
    }
    fs.closeSync(fd);
    process.kill(master, "SIGHUP");
    await until(() => !alive() || stack.processes().responders.every((p) => !responders.includes(p)),
      "the reload to roll the responders (or the bystander to die)");
    assert.ok(alive(), "the bystander survived the reload");
    // The forged board (the queue's lock and counts, every slot) is
    // worked out by the responders that meet it; on a loaded machine that
    // has taken past the usual 15 s (twice in CI), so this one is given a
    // minute: what is asserted is that it serves again, not how soon.
    const r = await call("POST", "/v1/chat/completions", { body: chat("still here"), ms: 60000 });
    assert.equal(r.status, 200, "the gateway still serves");
    process.kill(master, "SIGTERM");
    await until(() => stack.processes().master !== master || !alive(), "the master to stop");
    assert.ok(alive(), "the bystander survived the stop");
  } finally {
    victim.kill("SIGKILL");
  }
});
