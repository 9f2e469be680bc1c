// The Debian package (packaging/deb/build.sh): built into a temp dir,
// checked by lintian (when installed), installed with dpkg -i, checked
// (files, man pages, owners, conffile, unit), run from its installed paths
// as its own user with --listen (one FastCGI request straight to the
// socket, one local sandbox run that needs the installed kernel), then
// purged: nothing may be left. Needs root and dpkg; skipped when sandgate
// is already installed (never touch a real installation).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { root, freePort, waitFor, UPSTREAM_KEY } from "./harness.mjs";

const has = (cmd) => spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;
const installed = () => spawnSync("dpkg-query", ["-W", "-f=${Status}", "sandgate"]).stdout?.toString().includes("installed");
const userExists = (u) => spawnSync("getent", ["passwd", u]).status === 0;
const groupExists = (g) => spawnSync("getent", ["group", g]).status === 0;

let skip = false;
if (process.getuid() !== 0) skip = "needs root (dpkg -i, a system user)";
else if (!has("dpkg") || !has("dpkg-deb") || !has("dpkg-shlibdeps")) skip = "needs dpkg, dpkg-deb and dpkg-shlibdeps";
else if (installed()) skip = "a sandgate package is installed here already: not touching it";
else if (userExists("sandgate") || fs.existsSync("/var/lib/sandgate") || fs.existsSync("/etc/sandgate"))
  skip = "a sandgate user, /var/lib/sandgate or /etc/sandgate exists already";

const MAN_PAGES = ["/usr/share/man/man1/sandgate.1.gz", "/usr/share/man/man5/sandgate.conf.5.gz",
  "/usr/share/man/man8/sandgate-fcgi.8.gz"];
const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: "utf8", timeout: 120000, ...opts });
const KEY = "sk-deb-test-0123456789";
let dir, deb, fake, gw, purged = false;
const procs = [];

// One FastCGI request (FCGI_RESPONDER) to addr: {status, headers, body}.
function fcgiRequest(addr, params, body = "") {
  const rec = (type, content) => {
    const pad = (8 - (content.length % 8)) % 8;
    const h = Buffer.alloc(8);
    h.writeUInt8(1, 0); h.writeUInt8(type, 1); h.writeUInt16BE(1, 2);
    h.writeUInt16BE(content.length, 4); h.writeUInt8(pad, 6);
    return Buffer.concat([h, content, Buffer.alloc(pad)]);
  };
  const len = (n) => n < 128 ? Buffer.from([n]) : (() => { const b = Buffer.alloc(4); b.writeUInt32BE(n | 0x80000000); return b; })();
  const kv = Buffer.concat(Object.entries(params).flatMap(([k, v]) => {
    const kb = Buffer.from(k), vb = Buffer.from(String(v));
    return [len(kb.length), len(vb.length), kb, vb];
  }));
  const bodyBuf = Buffer.from(body);
  const out = [rec(1, Buffer.from([0, 1, 0, 0, 0, 0, 0, 0])), rec(4, kv), rec(4, Buffer.alloc(0))];
  for (let i = 0; i < bodyBuf.length; i += 65535) out.push(rec(5, bodyBuf.subarray(i, i + 65535)));
  out.push(rec(5, Buffer.alloc(0)));
  return new Promise((resolve, reject) => {
    const c = net.connect(addr);
    let buf = Buffer.alloc(0), stdout = Buffer.alloc(0), done = false;
    c.setTimeout(30000, () => c.destroy(new Error("FastCGI request timed out")));
    c.on("connect", () => c.write(Buffer.concat(out)));
    c.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 8) {
        const type = buf[1], clen = buf.readUInt16BE(4), pad = buf[6];
        if (buf.length < 8 + clen + pad) break;
        if (type === 6) stdout = Buffer.concat([stdout, buf.subarray(8, 8 + clen)]);
        if (type === 3) done = true;
        buf = buf.subarray(8 + clen + pad);
      }
      if (done) c.end();
    });
    c.on("error", reject);
    c.on("close", () => {
      if (!done) return reject(new Error("no FCGI_END_REQUEST"));
      const s = stdout.toString();
      const i = s.indexOf("\r\n\r\n");
      const head = s.slice(0, i).split("\r\n");
      const headers = Object.fromEntries(head.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
      resolve({ status: Number((headers.status ?? "200").split(" ")[0]), headers, body: s.slice(i + 4) });
    });
  });
}

const call = (addr, method, uri, body) => fcgiRequest(addr, {
  REQUEST_METHOD: method, REQUEST_URI: uri, SCRIPT_NAME: "", PATH_INFO: uri, QUERY_STRING: "",
  SERVER_PROTOCOL: "HTTP/1.1", SERVER_NAME: "localhost", SERVER_PORT: "80", REMOTE_ADDR: "127.0.0.1",
  GATEWAY_INTERFACE: "CGI/1.1", HTTP_AUTHORIZATION: `Bearer ${KEY}`,
  ...(body === undefined ? {} : { CONTENT_TYPE: "application/json", CONTENT_LENGTH: Buffer.byteLength(body) }),
}, body ?? "");

function purge() {
  if (purged) return;
  purged = true;
  spawnSync("dpkg", ["--purge", "sandgate"], { stdio: "inherit", timeout: 120000 });
}

before(async () => {
  if (skip) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sgdeb-"));
  fs.chmodSync(dir, 0o755);
  deb = sh("sh", [path.join(root, "packaging/deb/build.sh"), `${dir}/out`], { timeout: 300000 }).trim().split("\n").pop();
  assert.match(deb, /sandgate_.*_amd64\.deb$/);
}, { timeout: 320000 });

after(async () => {
  for (const p of procs.reverse()) if (p.exitCode === null && p.signalCode === null) p.kill("SIGTERM");
  await Promise.all(procs.map((p) => p.exitCode !== null || p.signalCode ? null :
    new Promise((r) => { const t = setTimeout(() => { p.kill("SIGKILL"); r(); }, 10000); p.once("exit", () => { clearTimeout(t); r(); }); })));
  // Responders and sandboxd of a master that died first: all the sandgate user's.
  if (!skip && userExists("sandgate")) spawnSync("pkill", ["-KILL", "-u", "sandgate"]);
  if (!skip) purge();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// packaging/deb/lintian.md: no error, warning, info or pedantic tag (an
// experimental one it explains is allowed); its man page checks included.
test("lintian finds nothing in the package", { skip: skip || (!has("lintian") && "no lintian"), timeout: 300000 }, () => {
  const r = spawnSync("lintian", ["-I", "-E", "--pedantic", "--fail-on", "error,warning,info,pedantic", deb],
    { encoding: "utf8", timeout: 280000 });
  const tags = r.stdout.split("\n").filter((l) => /^[EWIP]: /.test(l));
  assert.deepEqual(tags, [], r.stdout + r.stderr);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test("dpkg -i installs files, user, state dir and conffile", { skip, timeout: 120000 }, () => {
  sh("dpkg", ["-i", deb]);
  for (const f of ["/usr/bin/sandgate", "/usr/bin/sandgate-fcgi", "/usr/share/sandgate/kernel/kernel.py",
    "/usr/share/sandgate/kernel/sg_cells.py", "/usr/share/sandgate/kernel/sg_ipython.py",
    "/usr/share/sandgate/kernel/sg_mpl.py", "/lib/systemd/system/sandgate.service",
    "/usr/share/doc/sandgate/copyright", "/usr/share/doc/sandgate/changelog.Debian.gz",
    "/usr/share/doc/sandgate/examples/lighttpd.conf.example",
    "/usr/share/doc/sandgate/examples/nginx.conf.example",
    "/usr/share/doc/sandgate/examples/apache.conf.example",
    "/usr/share/doc/sandgate/examples/shared-hosting/.htaccess",
    "/usr/share/doc/sandgate/examples/shared-hosting/sandgate.fcgi",
    "/usr/share/doc/sandgate/examples/shared-hosting/sandgate.conf",
    "/usr/share/doc/sandgate/docs/configuration.md.gz", "/usr/share/doc/sandgate/docs/deployment.md.gz",
    ...MAN_PAGES]) assert.ok(fs.existsSync(f), f);
  // man finds each page where the package put it.
  for (const [sect, name] of [["1", "sandgate"], ["5", "sandgate.conf"], ["8", "sandgate-fcgi"]])
    if (has("man")) assert.ok(sh("man", ["-aw", sect, name]).split("\n").includes(`/usr/share/man/man${sect}/${name}.${sect}.gz`));
  assert.ok(userExists("sandgate") && groupExists("sandgate"));
  const uid = Number(sh("id", ["-u", "sandgate"])), gid = Number(sh("id", ["-g", "sandgate"]));
  assert.ok(uid < 1000, "a system user");
  assert.match(sh("getent", ["passwd", "sandgate"]), /:\/var\/lib\/sandgate:\/usr\/sbin\/nologin$/m);
  const st = fs.statSync("/var/lib/sandgate");
  assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [uid, gid, 0o750]);
  const cf = fs.statSync("/etc/sandgate/sandgate.conf");
  assert.deepEqual([cf.uid, cf.gid, cf.mode & 0o7777], [0, gid, 0o640]);
  const conf = fs.readFileSync("/etc/sandgate/sandgate.conf", "utf8");
  assert.match(conf, /path = "\/var\/lib\/sandgate\/sandgate\.db"/);
  assert.match(conf, /^\s*user = "sandgate";/m);
  assert.match(sh("dpkg-query", ["-W", "-f=${Conffiles}", "sandgate"]), /^ \/etc\/sandgate\/sandgate\.conf [0-9a-f]{32}$/m);
  const unit = fs.readFileSync("/lib/systemd/system/sandgate.service", "utf8");
  assert.match(unit, /^ExecStart=\/usr\/bin\/sandgate-fcgi --config \/etc\/sandgate\/sandgate\.conf --listen /m);
  assert.doesNotMatch(unit, /usr\/local/);
  assert.doesNotMatch(fs.readFileSync("/usr/share/doc/sandgate/examples/lighttpd.conf.example", "utf8"), /usr\/local/);
  // Installing twice (a reinstall runs postinst again) is harmless.
  sh("dpkg", ["-i", deb]);
  assert.equal(Number(sh("id", ["-u", "sandgate"])), uid);
});

test("systemd-analyze verify accepts the installed unit", { skip: skip || (!has("systemd-analyze") && "no systemd-analyze"), timeout: 60000 }, () => {
  const r = spawnSync("systemd-analyze", ["verify", "/lib/systemd/system/sandgate.service"], { encoding: "utf8", timeout: 60000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

// The conffile ships no usable key: every secret is a placeholder, which
// check-config names (and says how to go on) until it is set.
test("the shipped conffile has no usable key: check-config names what to set, then passes", { skip, timeout: 30000 }, () => {
  const check = (env) => spawnSync("/usr/bin/sandgate", ["check-config"], { encoding: "utf8", timeout: 20000,
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SANDGATE_KEY_"))), ...env } });
  const conf = fs.readFileSync("/etc/sandgate/sandgate.conf", "utf8");
  assert.doesNotMatch(conf, /^\s*[^#\n]*key_sha256\s*=/m, "no key hash in the conffile");
  for (const m of conf.matchAll(/^[^#\n]*\bkey = "([^"]*)"/gm))
    assert.match(m[1], /^(env:|file:)/, `key = "${m[1]}" is a key itself, not a placeholder`);
  const bare = check({});
  assert.equal(bare.status, 1, bare.stdout + bare.stderr);
  assert.match(bare.stderr, /environment variable SANDGATE_KEY_ALICE is not set/);
  assert.match(bare.stderr, /cannot read \/etc\/sandgate\/ci\.key/);
  assert.match(bare.stderr, /cannot read \/etc\/sandgate\/openai\.key/);
  assert.match(bare.stderr, /2 of the 2 keys .* have no secret yet and let no one in.*sandgate keys create NAME/);
  // Set, it passes.
  const files = ["/etc/sandgate/openai.key", "/etc/sandgate/ci.key"];
  for (const f of files) fs.writeFileSync(f, "sk-placeholder\n", { mode: 0o640 });
  try {
    const r = check({ SANDGATE_KEY_ALICE: "sk-alice-placeholder" });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  } finally {
    for (const f of files) fs.rmSync(f, { force: true });
  }
});

test("the installed gateway serves as the sandgate user with --listen", { skip, timeout: 120000 }, async () => {
  const portFile = `${dir}/fake.port`;
  fake = spawn("python3", [path.join(root, "tests/fakes/upstream.py"), "--port", "0", "--port-file", portFile,
    "--api-key", UPSTREAM_KEY, "--quiet"], { stdio: ["ignore", "ignore", "inherit"] });
  procs.push(fake);
  await waitFor(() => fs.existsSync(portFile) && fs.readFileSync(portFile, "utf8").trim(), "fake upstream");
  const fakePort = Number(fs.readFileSync(portFile, "utf8").trim());
  const port = await freePort();
  // The shipped config with the test's upstream, key and a small pool; the
  // store where the package put it. No cgroup for a non-root gateway
  // outside systemd: limits = "process".
  fs.writeFileSync(`${dir}/sandgate.conf`, `
server: { workers = [1, 2]; user = "sandgate"; request_timeout = 60; grace = 2; };
store: { path = "/var/lib/sandgate/sandgate.db"; };
auth: { keys = ( { name = "t"; key = "${KEY}"; } ); };
models = ( { name = "gpt-test"; api_base = "http://127.0.0.1:${fakePort}/v1"; api_key = "${UPSTREAM_KEY}";
  model = "echo"; state = "upstream"; } );
sandbox_tools = ( { name = "local"; provider = "local"; memory_mb = 256; disk_mb = 16; max_procs = 32;
  limits = "process"; } );
`, { mode: 0o644 });
  const env = { ...process.env };
  delete env.SANDGATE_KERNEL_DIR; // the installed kernel, found beside /usr/bin
  const log = fs.openSync(`${dir}/sandgate.log`, "a");
  gw = spawn("setpriv", ["--reuid=sandgate", "--regid=sandgate", "--init-groups", "/usr/bin/sandgate-fcgi",
    "--config", `${dir}/sandgate.conf`, "--listen", `127.0.0.1:${port}`], { env, stdio: ["ignore", log, log] });
  procs.push(gw);
  const addr = { host: "127.0.0.1", port };
  const logText = () => fs.readFileSync(`${dir}/sandgate.log`, "utf8");
  await waitFor(async () => (await call(addr, "GET", "/healthz")).status === 200, "healthz", 20000)
    .catch((e) => { throw new Error(`${e.message}\n${logText()}`); });
  const r = await call(addr, "POST", "/v1/chat/completions",
    JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "hello deb" }] }));
  assert.equal(r.status, 200, r.body);
  assert.match(JSON.parse(r.body).choices[0].message.content, /hello deb/);
  // The store is the sandgate user's, in /var/lib/sandgate.
  const db = fs.statSync("/var/lib/sandgate/sandgate.db");
  assert.equal(db.uid, Number(sh("id", ["-u", "sandgate"])));
  // A local sandbox runs the kernel from /usr/share/sandgate/kernel.
  const sb = await call(addr, "POST", "/v1/sandboxes", JSON.stringify({ tool: "local" }));
  assert.equal(sb.status, 201, sb.body + logText());
  const id = JSON.parse(sb.body).id;
  const run = await call(addr, "POST", `/v1/sandboxes/${id}/code`, JSON.stringify({ code: "print(6*7)" }));
  assert.equal(run.status, 200, run.body);
  assert.match(run.body, /42/);
  await call(addr, "DELETE", `/v1/sandboxes/${id}`);
  gw.kill("SIGTERM");
  await new Promise((res) => (gw.exitCode !== null || gw.signalCode ? res() : gw.once("exit", res)));
  await waitFor(() => spawnSync("pgrep", ["-u", "sandgate"]).status !== 0, "the sandgate user's processes to end", 15000);
});

test("dpkg --purge leaves nothing behind", { skip, timeout: 120000 }, () => {
  purge();
  assert.ok(!installed(), "package gone");
  assert.equal(spawnSync("dpkg-query", ["-W", "sandgate"]).status !== 0 ||
    !sh("dpkg-query", ["-W", "-f=${Status}", "sandgate"]).includes("config-files"), true);
  for (const f of ["/usr/bin/sandgate", "/usr/bin/sandgate-fcgi", "/usr/share/sandgate", "/etc/sandgate",
    "/var/lib/sandgate", "/lib/systemd/system/sandgate.service", "/usr/share/doc/sandgate", ...MAN_PAGES])
    assert.ok(!fs.existsSync(f), `${f} left behind`);
  assert.ok(!userExists("sandgate"), "user left behind");
  assert.ok(!groupExists("sandgate"), "group left behind");
});
