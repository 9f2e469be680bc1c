// nginx in front of sandgate-fcgi --listen on a Unix socket, configured by
// the shipped sample etc/nginx.conf.example: the test reads that file and
// only substitutes the socket path, the listen address, the body limit (to
// the stack's server.max_body_bytes) and, for the prefix case, the location
// line (the sample's commented /ai variant). Each sample copy sits in the
// http block of a minimal nginx.conf of ours (events, temp paths inside the
// test's directory, and the worker user when we are root), run by nginx
// itself (not the system service) on a free loopback port. Two stacks: one
// at the root, one with mount_prefix = "/ai", each with its own nginx.
// Skipped only when nginx is not installed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { sub as subIn, call, client, bodyOf, EMPTY_BODY, assertStreamsUnbuffered, assertResumesUnbuffered, assertMcp, assertIntercepts, assertPrefixed,
  assertUploads, assertMetricsOnlyForScraper, assertConsole, CONSOLE_AUTH } from "./front.mjs";
import { startStack, freePort, waitFor, KEYS, root, serviceUser } from "./harness.mjs";

const NGINX = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"].find((p) => fs.existsSync(p));
const SKIP = NGINX ? false : "nginx is not installed";
const SAMPLE = path.join(root, "etc/nginx.conf.example");
const MAX_BODY = 65536;
const PREFIX = "/ai";
const isRoot = process.getuid() === 0;
const T = { timeout: 60000 };

let dir; // ours: the nginx configs, logs, temp paths
const stacks = [];
const nginxes = [];
let front; // { base } of the nginx before the root-mounted stack
let prefixed; // { base } of the nginx before the /ai one

// Replace what must be in the sample; a sample that lost it fails here.
const sub = (text, from, to, what) => subIn(text, from, to, what, "etc/nginx.conf.example");

// The sample with this deployment's socket, port and limit; with prefix,
// its commented prefixed location line in place of the root one.
function renderSample({ sock, port, maxBody, prefix }) {
  let s = fs.readFileSync(SAMPLE, "utf8");
  s = sub(s, /unix:\/run\/sandgate\/fcgi\.sock;/, `unix:${sock};`, "socket path");
  s = sub(s, /^(\s*)listen 127\.0\.0\.1:8080;/m, `$1listen 127.0.0.1:${port};`, "listen line");
  s = sub(s, /^(\s*)client_max_body_size \S+;/m, `$1client_max_body_size ${maxBody};`, "client_max_body_size");
  if (prefix) {
    const esc = prefix.replace(/[/]/g, "\\/");
    s = sub(s, new RegExp(`^(\\s*)#(location ~ \\^${esc}/.*\\{)\\n\\s*location ~ \\^/\\(.*\\{$`, "m"), "$1$2",
      `commented ${prefix} location line followed by the root one`);
  }
  return s;
}

async function startNginx(name, stack, prefix) {
  const port = await freePort();
  const d = path.join(dir, name);
  fs.mkdirSync(d);
  // include fastcgi_params is relative to the config's directory, as in
  // /etc/nginx: the distribution's file.
  fs.copyFileSync("/etc/nginx/fastcgi_params", `${d}/fastcgi_params`);
  fs.writeFileSync(`${d}/sandgate.conf`, renderSample({ sock: stack.fcgiAddr.path, port, maxBody: MAX_BODY, prefix }));
  fs.writeFileSync(`${d}/nginx.conf`, `
${isRoot ? `user ${serviceUser};` : ""}
worker_processes 1;
events { worker_connections 128; }
http {
  access_log ${d}/access.log;
  client_body_temp_path ${d}/tmp/body;
  fastcgi_temp_path ${d}/tmp/fastcgi;
  proxy_temp_path ${d}/tmp/proxy;
  uwsgi_temp_path ${d}/tmp/uwsgi;
  scgi_temp_path ${d}/tmp/scgi;
  include ${d}/sandgate.conf;
}
`);
  fs.mkdirSync(`${d}/tmp`);
  const log = fs.openSync(`${d}/stderr.log`, "a");
  const p = spawn(NGINX, ["-p", `${d}/`, "-c", `${d}/nginx.conf`, "-e", `${d}/error.log`,
    "-g", `daemon off; pid ${d}/nginx.pid;`], { stdio: ["ignore", log, log] });
  const n = { p, d, base: `http://127.0.0.1:${port}` };
  nginxes.push(n);
  const why = () => ["stderr.log", "error.log"].map((f) => { try { return fs.readFileSync(`${d}/${f}`, "utf8"); } catch { return ""; } }).join("\n");
  try {
    await waitFor(async () => {
      if (p.exitCode !== null) throw new Error(`nginx exited ${p.exitCode}`);
      return (await fetch(`${n.base}${prefix ?? ""}/healthz`, { signal: AbortSignal.timeout(2000) })).status === 200;
    }, `nginx (${name}) /healthz`, 15000);
  } catch (e) {
    throw new Error(`${e.message}\n${why()}`);
  }
  return n;
}

async function stopNginx({ p }) {
  if (p.exitCode !== null || p.signalCode) return;
  const gone = new Promise((r) => p.once("exit", r));
  p.kill("SIGTERM");
  const t = setTimeout(() => p.kill("SIGKILL"), 5000);
  await gone;
  clearTimeout(t);
}

before(async () => {
  if (SKIP) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sgnginx-"));
  fs.chmodSync(dir, 0o755);
  stacks.push(await startStack({ start: "listen", unixSocket: true, max_body_bytes: MAX_BODY }));
  front = await startNginx("root", stacks[0]);
  stacks.push(await startStack({ start: "listen", unixSocket: true, max_body_bytes: MAX_BODY, mount_prefix: PREFIX,
    auth: CONSOLE_AUTH }));
  prefixed = await startNginx("prefix", stacks[1], PREFIX);
});

after(async () => {
  for (const n of nginxes) await stopNginx(n).catch(() => {});
  const errors = [];
  for (const s of stacks) await s.stop().catch((e) => errors.push(e));
  if (dir && !process.env.SG_KEEP) fs.rmSync(dir, { recursive: true, force: true });
  if (errors.length) throw errors[0];
});



test("GET /healthz through nginx", { skip: SKIP, ...T }, async () => {
  const r = await call(front.base, "GET", "/healthz", { key: null });
  assert.equal(r.status, 200);
  // Only the sample's paths reach sandgate.
  assert.equal((await call(front.base, "GET", "/other", { key: null })).status, 404);
});

test("an intercepted code_interpreter request completes through nginx", { skip: SKIP, ...T }, async () => {
  await assertIntercepts(front.base);
});

test("a stream's first delta reaches the client long before the upstream finished", { skip: SKIP, ...T }, async (t) => {
  await assertStreamsUnbuffered(front.base, t);
});

test("a background stream dropped and resumed through nginx: the rest whole and live", { skip: SKIP, ...T }, async (t) => {
  await assertResumesUnbuffered(front.base, t);
});

test("MCP through nginx: a session, a run's progress before its result, GET 405 and DELETE from sandgate", { skip: SKIP, ...T }, async (t) => {
  await assertMcp(front.base, t);
});


test("a body just under max_body_bytes passes, one over is a clean 413, and the gateway keeps serving", { skip: SKIP, ...T }, async () => {
  const ok = await call(front.base, "POST", "/v1/chat/completions", { raw: bodyOf(MAX_BODY - 1) });
  assert.equal(ok.status, 200, ok.text.slice(0, 300));
  assert.equal(ok.json.choices[0].message.content, "echo: " + "x".repeat(MAX_BODY - 1 - EMPTY_BODY.length));
  // nginx's client_max_body_size refuses these before sandgate sees them,
  // with the sample's JSON error_page.
  for (const n of [MAX_BODY + 1, 4 * MAX_BODY]) {
    const big = await call(front.base, "POST", "/v1/chat/completions", { raw: bodyOf(n) });
    assert.equal(big.status, 413, `${n} bytes`);
    assert.equal(big.json?.error?.code, "request_too_large", `the sample's JSON 413: ${big.text.slice(0, 200)}`);
  }
  assert.equal((await call(front.base, "GET", "/healthz", { key: null })).status, 200);
  const again = await client(front.base).chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "still here" }] });
  assert.equal(again.choices[0].message.content, "echo: still here");
});

// nginx passes a body of exactly client_max_body_size, and so must
// sandgate with the same max_body_bytes (it once answered 413 there).
test("a body of exactly max_body_bytes passes", { skip: SKIP, ...T }, async () => {
  const r = await call(front.base, "POST", "/v1/chat/completions", { raw: bodyOf(MAX_BODY) });
  assert.equal(r.status, 200, r.text.slice(0, 300));
});

test("the Authorization header reaches sandgate: a wrong key 401, a valid one 200", { skip: SKIP, ...T }, async () => {
  const wrong = await call(front.base, "POST", "/v1/chat/completions", { key: "sk-wrong-0000", body: { model: "gpt-test", messages: [{ role: "user", content: "hi" }] } });
  assert.equal(wrong.status, 401);
  assert.ok(wrong.json?.error, "sandgate's JSON error, not nginx's page");
  assert.equal((await call(front.base, "GET", "/v1/models", { key: null })).status, 401);
  const right = await call(front.base, "POST", "/v1/chat/completions", { key: KEYS.bob, body: { model: "gpt-test", messages: [{ role: "user", content: "hi" }] } });
  assert.equal(right.status, 200);
  assert.equal(right.json.choices[0].message.content, "echo: hi");
  await assert.rejects(client(front.base, "sk-nope").models.list(), (e) => e instanceof OpenAI.AuthenticationError);
});

// nginx's sizes in bytes ("513m").
const bytesOf = (v) => Number(/^(\d+)([kmg]?)$/i.exec(v)[1]) * { "": 1, k: 1024, m: 1 << 20, g: 1 << 30 }[/[kmg]?$/i.exec(v)[0].toLowerCase()];
// A default of docs/configuration.md's table, in bytes.
const docDefault = (key) => Number(new RegExp(`^\\| \`${key}\` \\| [^|]+\\| (\\d+)`, "m")
  .exec(fs.readFileSync(path.join(root, "docs/configuration.md"), "utf8"))[1]);

// An upload is held to files.max_bytes by sandgate itself, not to
// max_body_bytes: the sample let it through only up to 8 MiB once.
test("an upload larger than max_body_bytes passes; the sample's upload limit covers files.max_bytes' default", { skip: SKIP, ...T }, async () => {
  await assertUploads(front.base, 9 << 20);
  const sample = fs.readFileSync(SAMPLE, "utf8");
  const upload = /location ~ \S*files\S*\s*\{\s*client_max_body_size (\S+);/.exec(sample);
  assert.ok(upload, "the sample's upload location");
  assert.ok(bytesOf(upload[1]) > docDefault("max_bytes"), `${upload[1]} over files.max_bytes`);
  assert.equal(bytesOf(/^\s*client_max_body_size (\S+);/m.exec(sample)[1]), docDefault("max_body_bytes"));
  // A chat body that large is still nginx's JSON 413.
  const big = await call(front.base, "POST", "/v1/chat/completions", { raw: bodyOf(9 << 20) });
  assert.equal(big.status, 413);
  assert.equal(big.json?.error?.code, "request_too_large");
});

test("/metrics answers only the scraper's addresses, at the root and under a prefix", { skip: SKIP, ...T }, async () => {
  await assertMetricsOnlyForScraper(front.base);
  await assertMetricsOnlyForScraper(prefixed.base, PREFIX);
});

test(`mounted under ${PREFIX}: the sample's prefixed location and mount_prefix`, { skip: SKIP, ...T }, async () => {
  await assertPrefixed(prefixed.base, PREFIX);
  await assertConsole(prefixed.base, PREFIX);
  // Outside the prefix nothing reaches sandgate.
  assert.equal((await call(prefixed.base, "GET", "/healthz", { key: null })).status, 404);
  assert.equal((await call(prefixed.base, "POST", "/v1/chat/completions", { body: { model: "gpt-test", messages: [] } })).status, 404);
});
