// A background response through nginx left at its default timeouts
// (fastcgi_read_timeout 60 s) with a 5-minute code run: it completes and
// is read, where the same run asked in the foreground gets nginx's 504.
// Five minutes: run only with SG_SLOW=1 (tests/integration/run.sh does,
// once, in its first pass, with a longer bound).
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { startStack, KEYS, waitFor, freePort, root, serviceUser } from "./harness.mjs";
import { CI, code, T, base, until, untracked } from "./bgutil.mjs";

// A 5-minute run through nginx whose fastcgi timeouts are left at their
// defaults (60 s): the create and each poll are short requests.
const NGINX = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"].find((p) => fs.existsSync(p));
const SLOW = process.env.SG_SLOW !== "1" ? "SG_SLOW=1 runs it (5 minutes)" : !NGINX ? "nginx is not installed" : false;

describe("through nginx with its default timeouts", { skip: SLOW }, () => {
  let stack, dir, nginx;
  before(async () => {
    stack = await startStack({ ...base("runners = 2; max_per_key = 4;"), start: "listen", unixSocket: true,
      interception: "exec_timeout = 600;" });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sgbgnginx-"));
    fs.chmodSync(dir, 0o755);
    const port = await freePort();
    // The shipped sample, its socket and port ours, its timeouts removed.
    let s = fs.readFileSync(path.join(root, "etc/nginx.conf.example"), "utf8");
    s = s.replace(/unix:\/run\/sandgate\/fcgi\.sock;/, `unix:${stack.fcgiAddr.path};`)
      .replace(/^(\s*)listen 127\.0\.0\.1:8080;/m, `$1listen 127.0.0.1:${port};`)
      .replace(/^\s*fastcgi_(read|send)_timeout .*$/gm, "");
    assert.doesNotMatch(s, /fastcgi_read_timeout/);
    fs.copyFileSync("/etc/nginx/fastcgi_params", `${dir}/fastcgi_params`);
    fs.writeFileSync(`${dir}/sandgate.conf`, s);
    fs.mkdirSync(`${dir}/tmp`);
    fs.writeFileSync(`${dir}/nginx.conf`, `
${process.getuid() === 0 ? `user ${serviceUser};` : ""}
worker_processes 1;
events { worker_connections 128; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/tmp/body;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  proxy_temp_path ${dir}/tmp/proxy;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  include ${dir}/sandgate.conf;
}
`);
    const log = fs.openSync(`${dir}/stderr.log`, "a");
    nginx = spawn(NGINX, ["-p", `${dir}/`, "-c", `${dir}/nginx.conf`, "-e", `${dir}/error.log`,
      "-g", `daemon off; pid ${dir}/nginx.pid;`], { stdio: ["ignore", log, log] });
    nginx.base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${nginx.base}/healthz`, { signal: AbortSignal.timeout(2000) })).status === 200,
      "nginx /healthz", 15000);
  });
  after(async () => {
    if (nginx && nginx.exitCode === null && nginx.signalCode === null) {
      const gone = new Promise((r) => nginx.once("exit", r));
      nginx.kill("SIGTERM");
      await gone;
    }
    await stack?.stop();
    if (dir && !process.env.SG_KEEP) fs.rmSync(dir, { recursive: true, force: true });
  });

  test("a background response with a 5-minute code run completes and is read through nginx", T(540), async (t) => {
    const client = new OpenAI({ apiKey: KEYS.alice, baseURL: `${nginx.base}/v1`, maxRetries: 0, timeout: 30000 });
    // Meanwhile, the same kind of run asked in the foreground: nginx gives
    // up on it after its 60 s, which is why background mode is needed.
    const fg = (async () => {
      const t1 = Date.now();
      const r = await fetch(`${nginx.base}/v1/responses`, { method: "POST", signal: AbortSignal.timeout(200000),
        headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "ci-args", tools: [CI], input: code("import time\ntime.sleep(120)\nprint('foreground')") }) });
      await r.arrayBuffer();
      return { status: r.status, ms: Date.now() - t1 };
    })();
    const t0 = Date.now();
    const r = await client.responses.create({ model: "ci-args", background: true, tools: [CI],
      input: code("import time\ntime.sleep(300)\nprint('five minutes later')") });
    assert.equal(r.status, "queued");
    const { r: end, seen } = await until(client, r.id, { ms: 420000, every: 5000 });
    t.diagnostic(`${end.status} after ${Date.now() - t0} ms (${seen.join(" → ")})`);
    assert.equal(end.status, "completed", JSON.stringify(end.error));
    assert.ok(Date.now() - t0 >= 300000);
    assert.match(end.output_text, /five minutes later/);
    const { status, ms } = await fg;
    t.diagnostic(`the foreground run: ${status} after ${ms} ms`);
    assert.equal(status, 504, "nginx's default fastcgi_read_timeout cut the foreground run");
    assert.ok(ms >= 59000 && ms < 120000, `${ms} ms`);
    assert.deepEqual(untracked(stack), []);
  });
});
