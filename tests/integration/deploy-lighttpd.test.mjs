// lighttpd in front of sandgate, configured by the shipped sample
// lighttpd.conf.example, both ways it describes:
//   bin-path: lighttpd spawns sandgate-fcgi on fd 0 ("max-procs" => 1), as
//     the sample ships. It runs the config and binaries of a stack started
//     with start: "binpath" (so, as root, the responders drop to the
//     service user): a second master on the same store, beside the stack's
//     own, as two gateways sharing a store by design. Its environment is
//     lighttpd's (lighttpd hands its own to a bin-path backend): the
//     stack's, with alice's key and the sanitizer options.
//   --listen: the sample's commented "socket" line in place of its
//     socket/bin-path/max-procs lines, to a start: "listen" stack's Unix
//     socket; a second such stack with mount_prefix = "/ai" behind the
//     sample's commented prefixed $HTTP["url"] line.
// Only paths, the port and server.max-request-size are substituted (twice
// the stack's max_body_bytes, in KiB, as the sample's 16384 is to sandgate's
// default 8 MiB: sandgate answers the 413). Each sample copy is included
// from a minimal lighttpd.conf of ours (port, document root, error log) in
// a temp directory, run with -D on a free loopback port. The stacks are
// started whatever SG_START says; SG_BUILD picks the build as for every
// other test. Skipped only when lighttpd is not installed.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { sub as subIn, call, client, bodyOf, EMPTY_BODY, assertStreamsUnbuffered, assertResumesUnbuffered, assertMcp, assertIntercepts, assertPrefixed,
  assertUploads, assertMetricsOnlyForScraper, assertConsole, CONSOLE_AUTH } from "./front.mjs";
import { startStack, freePort, waitFor, KEYS, root, procTable } from "./harness.mjs";

const LIGHTTPD = ["/usr/sbin/lighttpd", "/usr/local/sbin/lighttpd"].find((p) => fs.existsSync(p));
const SKIP = LIGHTTPD ? false : "lighttpd is not installed";
const SAMPLE = path.join(root, "lighttpd.conf.example");
const MAX_BODY = 65536; // the stacks' max_body_bytes (gatewayConfig's default)
const MAX_REQUEST_KIB = Math.ceil((2 * MAX_BODY) / 1024);
const PREFIX = "/ai";
const T = { timeout: 60000 };

// Every lighttpd we started, for the exit handler: none outlives the run.
const live = new Set();
process.on("exit", () => {
  for (const l of live) {
    for (const pid of [l.p.pid, l.master]) if (pid) try { process.kill(pid, "SIGKILL"); } catch { /* gone */ }
    if (!process.env.SG_KEEP) try { fs.rmSync(l.d, { recursive: true, force: true }); } catch { /* gone */ }
  }
});

// Replace what must be in the sample; a sample that lost it fails here.
const sub = (text, from, to, what) => subIn(text, from, to, what, "lighttpd.conf.example");

// The sample with this deployment's paths and limit. bin: the bin-path
// command line (the sample's socket is then ours); listen: the socket of a
// --listen sandgate, in the sample's commented socket line, its
// socket/bin-path/max-procs lines gone; prefix: its commented prefixed URL
// condition in place of the root one.
function renderSample({ d, bin, listen, prefix }) {
  let s = fs.readFileSync(SAMPLE, "utf8");
  assert.match(s, /^server\.stream-response-body = 2$/m, "the sample streams responses");
  assert.match(s, /^\s*"check-local" => "disable",$/m);
  s = sub(s, /^server\.max-request-size = \d+$/m, `server.max-request-size = ${MAX_REQUEST_KIB}`, "server.max-request-size");
  const three = /^(\s*)"socket" => "\/run\/lighttpd\/sandgate\.sock",\n\s*"bin-path" => "\/usr\/local\/bin\/sandgate-fcgi --config \/etc\/sandgate\/sandgate\.conf",\n\s*"max-procs" => 1,\n/m;
  if (bin) {
    s = sub(s, three, `$1"socket" => "${d}/sandgate.sock",\n$1"bin-path" => "${bin}",\n$1"max-procs" => 1,\n`,
      "socket, bin-path and max-procs lines");
  } else {
    s = sub(s, three, "", "socket, bin-path and max-procs lines");
    s = sub(s, /^(\s*)#"socket" => "\/run\/sandgate\/fcgi\.sock",$/m, `$1"socket" => "${listen}",`,
      "commented --listen socket line");
  }
  if (prefix) {
    const esc = prefix.replace(/[/]/g, "\\/");
    s = sub(s, new RegExp(`^#(\\$HTTP\\["url"\\] =~ "\\^${esc}/\\(v1/.*\\{)\\n\\$HTTP\\["url"\\] =~ "\\^/\\(v1/.*\\{$`, "m"), "$1",
      `commented ${prefix} URL condition followed by the root one`);
  }
  return s;
}

// The pids whose parent is pid.
const childrenOf = (pid) => procTable().filter((p) => p.ppid === pid).map((p) => p.pid);
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };

async function startLighttpd(name, { env, prefix, ...how }) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `sglighttpd-${name}-`));
  fs.chmodSync(d, 0o755);
  fs.mkdirSync(`${d}/www`);
  const port = await freePort();
  fs.writeFileSync(`${d}/sandgate.conf`, renderSample({ d, prefix, ...how }));
  fs.writeFileSync(`${d}/lighttpd.conf`, `
server.port = ${port}
server.bind = "127.0.0.1"
server.document-root = "${d}/www"
server.errorlog = "${d}/error.log"
include "${d}/sandgate.conf"
`);
  const log = fs.openSync(`${d}/stderr.log`, "a");
  const p = spawn(LIGHTTPD, ["-D", "-f", `${d}/lighttpd.conf`], { env, stdio: ["ignore", log, log] });
  fs.closeSync(log);
  const l = { p, d, base: `http://127.0.0.1:${port}` };
  live.add(l);
  l.logs = () => ["stderr.log", "error.log"].map((f) => { try { return fs.readFileSync(`${d}/${f}`, "utf8"); } catch { return ""; } }).join("\n");
  l.stop = async () => {
    // The bin-path master, to wait for: lighttpd signals it on the way out.
    l.master ??= childrenOf(p.pid)[0];
    if (p.exitCode === null && p.signalCode === null) {
      const gone = new Promise((r) => p.once("exit", r));
      p.kill("SIGTERM");
      const t = setTimeout(() => p.kill("SIGKILL"), 10000);
      await gone;
      clearTimeout(t);
    }
    if (l.master) {
      try {
        await waitFor(() => !alive(l.master), `the bin-path sandgate master ${l.master} to stop`, 10000);
      } catch (e) {
        try { process.kill(l.master, "SIGKILL"); } catch { /* gone */ }
        throw new Error(`${e.message}\n${l.logs()}`);
      }
    }
    live.delete(l);
    if (!process.env.SG_KEEP) fs.rmSync(d, { recursive: true, force: true });
  };
  try {
    await waitFor(async () => {
      if (p.exitCode !== null) throw new Error(`lighttpd exited ${p.exitCode}`);
      return (await fetch(`${l.base}${prefix ?? ""}/healthz`, { signal: AbortSignal.timeout(2000) })).status === 200;
    }, `lighttpd (${name}) /healthz`, 20000);
    if (how.bin) {
      l.master = childrenOf(p.pid)[0];
      assert.ok(l.master, "lighttpd spawned a sandgate master");
    }
  } catch (e) {
    const logs = l.logs();
    await l.stop().catch(() => {});
    throw new Error(`${e.message}\n${logs}`);
  }
  return l;
}




const WAYS = [
  {
    name: "bin-path",
    title: "lighttpd spawning sandgate-fcgi (bin-path), lighttpd.conf.example as shipped",
    async start(keep) {
      const stack = keep(await startStack({ start: "binpath", max_body_bytes: MAX_BODY }));
      const bin = `${stack.dir}/bin/sandgate-fcgi --config ${stack.dir}/sandgate.conf`;
      return startLighttpd("binpath", { bin, env: stack.env });
    },
  },
  {
    name: "--listen",
    title: "lighttpd to sandgate-fcgi --listen SOCKET, the sample's commented socket line",
    async start(keep) {
      const stack = keep(await startStack({ start: "listen", unixSocket: true, max_body_bytes: MAX_BODY }));
      return startLighttpd("listen", { listen: stack.fcgiAddr.path, env: process.env });
    },
  },
];

for (const way of WAYS) {
  describe(way.title, { skip: SKIP }, () => {
    let stack, lighttpd, front;

    before(async () => {
      // The stack is ours to stop in after() even when its lighttpd fails.
      lighttpd = await way.start((s) => (stack = s));
      front = lighttpd.base;
    });
    after(async () => {
      const errors = [];
      await lighttpd?.stop().catch((e) => errors.push(e));
      await stack?.stop().catch((e) => errors.push(e));
      if (errors.length) throw errors[0];
    });

    test(`GET /healthz through lighttpd (${way.name})`, T, async () => {
      const r = await call(front, "GET", "/healthz", { key: null });
      assert.equal(r.status, 200, lighttpd.logs());
      // Only the sample's paths reach sandgate.
      assert.equal((await call(front, "GET", "/other", { key: null })).status, 404);
    });

    test(`an intercepted code_interpreter request completes (${way.name})`, T, async () => {
      await assertIntercepts(front);
    });

    test(`a stream's first delta reaches the client long before the upstream finished (${way.name})`, T, async (t) => {
      await assertStreamsUnbuffered(front, t);
    });

    test(`a background stream dropped and resumed: the rest whole and live (${way.name})`, T, async (t) => {
      await assertResumesUnbuffered(front, t);
    });

    test(`MCP: a session, a run's progress before its result, GET 405 and DELETE from sandgate (${way.name})`, T, async (t) => {
      await assertMcp(front, t);
    });

    test(`a body of exactly max_body_bytes passes, one over is sandgate's JSON 413 (${way.name})`, T, async (t) => {
      const ok = await call(front, "POST", "/v1/chat/completions", { raw: bodyOf(MAX_BODY) });
      assert.equal(ok.status, 200, ok.text.slice(0, 300));
      assert.equal(ok.json.choices[0].message.content, "echo: " + "x".repeat(MAX_BODY - EMPTY_BODY.length));
      // Under server.max-request-size, so sandgate refuses it, as JSON.
      const over = await call(front, "POST", "/v1/chat/completions", { raw: bodyOf(MAX_BODY + 1) });
      assert.equal(over.status, 413);
      assert.equal(over.json?.error?.code, "request_too_large", `sandgate's JSON 413: ${over.text.slice(0, 200)}`);
      // Over server.max-request-size, lighttpd refuses it itself.
      const huge = await call(front, "POST", "/v1/chat/completions", { raw: bodyOf(MAX_REQUEST_KIB * 1024 + 1) });
      assert.equal(huge.status, 413);
      t.diagnostic(`over server.max-request-size: ${huge.status} ${huge.headers.get("content-type")} ${JSON.stringify(huge.text.slice(0, 80))}`);
      assert.equal((await call(front, "GET", "/healthz", { key: null })).status, 200);
      const again = await client(front).chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "still here" }] });
      assert.equal(again.choices[0].message.content, "echo: still here");
    });

    test(`an upload over server.max-request-size reaches sandgate; /metrics only from the scraper (${way.name})`, T, async () => {
      await assertUploads(front, 2 * MAX_REQUEST_KIB * 1024);
      await assertMetricsOnlyForScraper(front);
    });

    test(`the Authorization header reaches sandgate: a wrong key 401, a valid one 200 (${way.name})`, T, async () => {
      const wrong = await call(front, "POST", "/v1/chat/completions", { key: "sk-wrong-0000", body: { model: "gpt-test", messages: [{ role: "user", content: "hi" }] } });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.json?.error?.code, "invalid_api_key", "sandgate's JSON error, not lighttpd's page");
      assert.equal((await call(front, "GET", "/v1/models", { key: null })).status, 401);
      for (const key of [KEYS.alice, KEYS.bob, KEYS.carol]) {
        const right = await call(front, "POST", "/v1/chat/completions", { key, body: { model: "gpt-test", messages: [{ role: "user", content: "hi" }] } });
        assert.equal(right.status, 200, right.text.slice(0, 300));
        assert.equal(right.json.choices[0].message.content, "echo: hi");
      }
      await assert.rejects(client(front, "sk-nope").models.list(), (e) => e instanceof OpenAI.AuthenticationError);
    });
  });
}

describe(`lighttpd to sandgate-fcgi --listen mounted under ${PREFIX}: the sample's prefixed URL condition and mount_prefix`, { skip: SKIP }, () => {
  let stack, lighttpd;

  before(async () => {
    stack = await startStack({ start: "listen", unixSocket: true, max_body_bytes: MAX_BODY, mount_prefix: PREFIX,
      auth: CONSOLE_AUTH });
    lighttpd = await startLighttpd("prefix", { listen: stack.fcgiAddr.path, env: process.env, prefix: PREFIX });
  });
  after(async () => {
    try { await lighttpd?.stop(); } finally { await stack?.stop(); }
  });

  test(`${PREFIX}/healthz, chat and an intercepted request under ${PREFIX}; nothing outside it`, T, async () => {
    await assertPrefixed(lighttpd.base, PREFIX);
    await assertConsole(lighttpd.base, PREFIX);
    assert.equal((await call(lighttpd.base, "GET", `${PREFIX}/v1/models`, { key: "sk-wrong-0000" })).status, 401);
    // Outside the prefix nothing reaches sandgate.
    assert.equal((await call(lighttpd.base, "GET", "/healthz", { key: null })).status, 404);
    const miss = await call(lighttpd.base, "POST", "/v1/chat/completions", { body: { model: "gpt-test", messages: [] } });
    assert.ok(!miss.json?.error && miss.status >= 400, `lighttpd's own answer: ${miss.status}`);
    await assertMetricsOnlyForScraper(lighttpd.base, PREFIX);
  });
});
