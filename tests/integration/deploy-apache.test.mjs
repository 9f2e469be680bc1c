// Apache httpd with mod_proxy_fcgi in front of sandgate-fcgi --listen on a
// Unix socket, configured by the shipped etc/apache.conf.example: only its
// socket path and LimitRequestBody (set to the stack's max_body_bytes) are
// replaced (and, for the prefix checks, its commented prefixed
// LocationMatch swapped in). Apache runs in
// the foreground from a minimal httpd.conf of our own in a temp directory.
// The stack is always a listen-mode one (whatever SG_START says); SG_BUILD
// picks the build as for every other test. Its lighttpd is not used.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { startStack, KEYS, freePort, waitFor, root, serviceUser, sseEvents } from "./harness.mjs";
import { assertUploads, assertMetricsOnlyForScraper, assertConsole, assertResumesUnbuffered, assertMcp, CONSOLE_AUTH } from "./front.mjs";

const APACHE = "/usr/sbin/apache2";
const MODULES = "/usr/lib/apache2/modules";
const NEEDED = ["mod_mpm_event.so", "mod_authz_core.so", "mod_authz_host.so", "mod_proxy.so", "mod_proxy_fcgi.so"];
const missing = [APACHE, ...NEEDED.map((m) => `${MODULES}/${m}`)].filter((f) => !fs.existsSync(f));
const skip = missing.length ? `Apache httpd / mod_proxy_fcgi not installed (missing ${missing.join(", ")})` : false;

const SAMPLE = path.join(root, "etc/apache.conf.example");
const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
const MAX_BODY = 65536; // the stack's max_body_bytes (gatewayConfig's default)
const isRoot = process.getuid() === 0;

// Every Apache we started, for the exit handler: none outlives the run.
const live = new Set();
process.on("exit", () => {
  for (const a of live) {
    try { a.proc.kill("SIGKILL"); } catch { /* gone */ }
    try { fs.rmSync(a.dir, { recursive: true, force: true }); } catch { /* gone */ }
  }
});

// The sample, as a user would install it: socket path and body limit ours.
function sampleFor(sock, { prefixed = false } = {}) {
  let text = fs.readFileSync(SAMPLE, "utf8");
  const n = (re) => (text.match(re) ?? []).length;
  assert.equal(n(/unix:\/run\/sandgate\/fcgi\.sock\|/g), 1, "the sample's socket path");
  assert.equal(n(/^LimitRequestBody \d+$/gm), 1, "the sample's LimitRequestBody");
  assert.match(text, /^\s*CGIPassAuth On$/m);
  assert.match(text, /flushpackets=on/);
  text = text.replace("unix:/run/sandgate/fcgi.sock|", `unix:${sock}|`)
    .replace(/^LimitRequestBody \d+$/m, `LimitRequestBody ${MAX_BODY}`);
  if (prefixed) {
    // Each LocationMatch of sandgate's routes, and its commented /ai twin.
    assert.equal(n(/^<LocationMatch "\^\/(\(v1\/|metrics\$)/gm), 2, "the sample's LocationMatch lines");
    assert.equal(n(/^#<LocationMatch "\^\/ai\/(\(v1\/|metrics\$)/gm), 2, "the sample's commented prefixed LocationMatch lines");
    text = text.replace(/^<LocationMatch "\^\/(\(v1\/|metrics\$).*\n/gm, "").replace(/^#(<LocationMatch "\^\/ai\/)/gm, "$1");
  }
  return text;
}

async function startApache(stack, opts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sgapache-"));
  fs.chmodSync(dir, 0o755); // nothing secret; lets the workers (another user) reach it if they need to
  const port = await freePort();
  fs.writeFileSync(`${dir}/sandgate.conf`, sampleFor(stack.fcgiAddr.path, opts));
  // The harness's socket sits in state/, the gateway user's 0755 directory,
  // and only that user may connect to it: Apache's workers run as that user
  // rather than loosening its permissions.
  fs.writeFileSync(`${dir}/httpd.conf`, `
ServerRoot "${dir}"
ServerName 127.0.0.1
Listen 127.0.0.1:${port}
PidFile "${dir}/httpd.pid"
ErrorLog "${dir}/error.log"
LogLevel warn
DefaultRuntimeDir "${dir}"
Mutex file:${dir} default
LoadModule mpm_event_module ${MODULES}/mod_mpm_event.so
LoadModule authz_core_module ${MODULES}/mod_authz_core.so
LoadModule authz_host_module ${MODULES}/mod_authz_host.so
LoadModule proxy_module ${MODULES}/mod_proxy.so
LoadModule proxy_fcgi_module ${MODULES}/mod_proxy_fcgi.so
${isRoot ? `User ${serviceUser}\nGroup #${fs.statSync(path.dirname(stack.fcgiAddr.path)).gid}` : ""}
StartServers 1
ServerLimit 2
ThreadsPerChild 16
MaxRequestWorkers 32
Timeout 60
KeepAlive On
DocumentRoot "${dir}"
<Directory />
    Require all denied
</Directory>
<Location "/">
    Require all granted
</Location>
Include "${dir}/sandgate.conf"
`);
  const log = fs.openSync(`${dir}/stderr.log`, "a");
  const proc = spawn(APACHE, ["-f", `${dir}/httpd.conf`, "-DFOREGROUND"], {
    stdio: ["ignore", log, log],
    env: { PATH: process.env.PATH, LANG: "C" },
  });
  fs.closeSync(log);
  const a = { proc, dir, port, base: `http://127.0.0.1:${port}` };
  live.add(a);
  a.logs = () => ["stderr.log", "error.log"].map((f) => {
    try { return fs.readFileSync(`${dir}/${f}`, "utf8"); } catch { return ""; }
  }).join("");
  a.stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const gone = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 10000);
      await gone;
      clearTimeout(timer);
    }
    live.delete(a);
    if (!process.env.SG_KEEP) fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(async () => {
      if (proc.exitCode !== null) throw new Error(`apache2 exited ${proc.exitCode}: ${a.logs()}`);
      return (await fetch(`${a.base}/`)).status > 0;
    }, "apache2 to listen", 15000);
  } catch (e) {
    await a.stop();
    throw e;
  }
  return a;
}

const json = (key) => ({ authorization: `Bearer ${key}`, "content-type": "application/json" });

describe("Apache (mod_proxy_fcgi) with etc/apache.conf.example", { skip }, () => {
  let stack, apache, client;

  before(async () => {
    stack = await startStack({ start: "listen", unixSocket: true });
    apache = await startApache(stack);
    client = new OpenAI({ apiKey: KEYS.alice, baseURL: `${apache.base}/v1`, maxRetries: 0 });
  });
  after(async () => {
    try { await apache?.stop(); } finally { await stack?.stop(); }
  });

  test("GET /healthz → 200", async () => {
    const r = await fetch(`${apache.base}/healthz`);
    assert.equal(r.status, 200, apache.logs());
    await r.arrayBuffer();
  });

  test("code_interpreter is intercepted: ci-primes completes with a code_interpreter_call", async () => {
    const r = await client.responses.create({ model: "ci-primes", input: "Multiply the first six primes.", tools: CI });
    assert.equal(r.status, "completed");
    assert.ok(r.output.some((o) => o.type === "code_interpreter_call"), JSON.stringify(r.output));
    assert.match(r.output_text, /30030/);
  });

  test("a stream is not buffered: the first delta arrives well before the end", async () => {
    const t0 = Date.now();
    const r = await fetch(`${apache.base}/v1/chat/completions`, {
      method: "POST", headers: json(KEYS.alice),
      body: JSON.stringify({ model: "slowstream", stream: true, messages: [{ role: "user", content: "a b c d e f g h" }] }),
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type"), /^text\/event-stream/);
    const dec = new TextDecoder();
    let text = "", firstDelta = null;
    for await (const chunk of r.body) {
      text += dec.decode(chunk, { stream: true });
      if (firstDelta === null && sseEvents(text).some((e) => /"delta":\{[^}]*"content":"[^"]/.test(e.data))) firstDelta = Date.now();
    }
    const end = Date.now();
    assert.ok(text.endsWith("data: [DONE]\n\n"), "the stream ends with [DONE]");
    assert.ok(firstDelta !== null, "a content delta arrived");
    assert.ok(firstDelta < end - 1000, `first delta at ${firstDelta - t0} ms, end at ${end - t0} ms`);
  });

  test("a body just under max_body_bytes → 200; one over → 413, and the gateway keeps serving", async () => {
    const body = (n) => {
      const shell = JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "" }] });
      return JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "x".repeat(n - shell.length) }] });
    };
    const near = body(MAX_BODY - 16);
    assert.equal(Buffer.byteLength(near), MAX_BODY - 16);
    const ok = await fetch(`${apache.base}/v1/chat/completions`, { method: "POST", headers: json(KEYS.alice), body: near });
    assert.equal(ok.status, 200);
    const sent = JSON.parse(near).messages[0].content;
    assert.equal((await ok.json()).choices[0].message.content, `echo: ${sent}`);
    const over = await fetch(`${apache.base}/v1/chat/completions`, { method: "POST", headers: json(KEYS.alice), body: body(MAX_BODY + 1) });
    assert.equal(over.status, 413);
    // Apache 2.4 does not apply LimitRequestBody to mod_proxy_fcgi's
    // requests, so this is sandgate's 413 (Apache's own would be HTML).
    if (/json/.test(over.headers.get("content-type") ?? "")) assert.equal((await over.json()).error.code, "request_too_large");
    else await over.arrayBuffer();
    const after = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "after" }] });
    assert.equal(after.choices[0].message.content, "echo: after");
  });

  // An upload is held to files.max_bytes by sandgate itself, not to
  // max_body_bytes (here 64 KiB, the sample's LimitRequestBody too).
  test("an upload larger than max_body_bytes passes", async () => {
    await assertUploads(apache.base, 9 << 20);
  });

  test("/metrics answers only the scraper's addresses", async () => {
    await assertMetricsOnlyForScraper(apache.base);
  });

  test("Authorization reaches sandgate (CGIPassAuth On): wrong key → 401, valid key → 200", async () => {
    const bad = await fetch(`${apache.base}/v1/models`, { headers: { authorization: "Bearer sk-wrong-key" } });
    assert.equal(bad.status, 401);
    assert.equal((await bad.json()).error.code, "invalid_api_key");
    const none = await fetch(`${apache.base}/v1/models`);
    assert.equal(none.status, 401);
    await none.arrayBuffer();
    for (const key of [KEYS.alice, KEYS.bob]) {
      const r = await fetch(`${apache.base}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(r.status, 200);
      assert.ok((await r.json()).data.some((m) => m.id === "gpt-test"));
    }
    // The log line follows the response: wait for it.
    await waitFor(() => /key=bob method=GET path=\/v1\/models model=- status=200 /.test(stack.log()), "bob's request in sandgate's log", 5000);
  });
});

describe("Apache with the sample's prefixed variant, mount_prefix = \"/ai\"", { skip }, () => {
  let stack, apache;

  before(async () => {
    stack = await startStack({ start: "listen", unixSocket: true, mount_prefix: "/ai", auth: CONSOLE_AUTH });
    apache = await startApache(stack, { prefixed: true });
  });
  after(async () => {
    try { await apache?.stop(); } finally { await stack?.stop(); }
  });

  test("/ai/healthz and /ai/v1/chat/completions through Apache", async () => {
    const h = await fetch(`${apache.base}/ai/healthz`);
    assert.equal(h.status, 200, apache.logs());
    await h.arrayBuffer();
    const c = new OpenAI({ apiKey: KEYS.bob, baseURL: `${apache.base}/ai/v1`, maxRetries: 0 });
    const r = await c.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "prefixed" }] });
    assert.equal(r.choices[0].message.content, "echo: prefixed");
    // Outside the prefix nothing is proxied.
    const miss = await fetch(`${apache.base}/v1/models`, { headers: { authorization: `Bearer ${KEYS.bob}` } });
    assert.equal(miss.status, 404);
    await miss.arrayBuffer();
  });

  test("/ai/metrics answers only the scraper's addresses", async () => {
    await assertMetricsOnlyForScraper(apache.base, "/ai");
  });

  test("the console under /ai: its page, its modules and the admin API through Apache", async () => {
    await assertConsole(apache.base, "/ai");
  });

  test("a background stream dropped and resumed under /ai through Apache: the rest whole and live", async (t) => {
    await assertResumesUnbuffered(apache.base, t, "/ai");
  });

  test("MCP under /ai through Apache: a session, a run's progress before its result, GET 405 and DELETE", async (t) => {
    await assertMcp(apache.base, t, "/ai");
  });
});
