// Shared hosting: Apache's mod_fcgid spawns sandgate itself from an
// .htaccess, as an unprivileged user, with no daemon and no root. The
// samples of etc/shared-hosting are laid out as a user would: the
// .htaccess and the wrapper sandgate.fcgi copied into a web directory
// (public_html/ai, mount_prefix "/ai"), only the wrapper's
// /home/USER/sandgate replaced by the test's "home", where the binaries and
// kernel files sit as `make install PREFIX=...` lays them out, beside a
// gateway config (the harness's gatewayConfig with the sample's workers
// and limits = "process": a gateway that is not root has no cgroup).
// Apache runs in the foreground from a minimal httpd.conf of ours (loopback
// ports, User/Group the unprivileged service user, AllowOverride AuthConfig
// FileInfo Options=ExecCGI so the shipped .htaccess is honoured, and the
// mod_fcgid settings docs/shared-hosting.md asks a host for). A second virtual host
// keeps mod_fcgid's defaults and allows no AuthConfig: there the shipped
// .htaccess is refused and its E=HTTP_AUTHORIZATION variant works.
//
// Then several copies: mod_fcgid sends one request at a time to each copy
// and starts another (up to FcgidMaxProcessesPerClass 2) when all are busy.
// A session made through one copy must continue in the other (e2b fake, and
// in a second Apache run the local bubblewrap sandbox), every copy must use
// the one store, reapers must share its lease, and stopping Apache (graceful-
// stop, and with the copies SIGKILLed first) must leave no process, no
// sandbox at the e2b fake that the store does not keep, and no live socket.
// Which copy serves a request is read from /proc: a copy is busy while a
// connection to its mod_fcgid socket (its fd 0) is open.
//
// Installs nothing (tests/install-deps.sh installs libapache2-mod-fcgid);
// skipped when Apache or one of its modules is missing. SG_BUILD picks the
// build; SG_START does not apply (mod_fcgid starts the gateway).
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { sub as subIn, call, client, bodyOf, EMPTY_BODY, assertStreamsUnbuffered, assertResumesUnbuffered, assertMcp, assertIntercepts, assertPrefixed,
  assertMetricsOnlyForScraper, assertConsole, CONSOLE_AUTH } from "./front.mjs";
import { startFakes, gatewayConfig, freePort, waitFor, KEYS, root, serviceUser, procOf, procTable } from "./harness.mjs";

const APACHE = "/usr/sbin/apache2";
const MODULES = "/usr/lib/apache2/modules";
const NEEDED = ["mod_mpm_event.so", "mod_authz_core.so", "mod_mime.so", "mod_rewrite.so", "mod_fcgid.so"];
const missing = [APACHE, ...NEEDED.map((m) => `${MODULES}/${m}`)].filter((f) => !fs.existsSync(f));
const SKIP = missing.length ? `Apache httpd / mod_fcgid / mod_rewrite not installed (missing ${missing.join(", ")})` : false;

const build = path.resolve(root, process.env.SG_BUILD || "build");
const SAMPLES = path.join(root, "etc/shared-hosting");
const PREFIX = "/ai";               // the web directory, and mount_prefix
const MAX_BODY = 65536;             // the gateway's max_body_bytes
const MAX_REQUEST_LEN = 2 * MAX_BODY; // FcgidMaxRequestLen on the main virtual host
const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
const LOST = "[sandgate: this conversation's sandbox was lost";
const isRoot = process.getuid() === 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const T = (s) => ({ timeout: s * 1000 });

// ---------------------------------------------------------------- processes

const proc = procOf;
const procs = procTable;
const alive = (p) => proc(p.pid)?.start === p.start;

// ---------------------------------------------------------------- the deployment

let W;            // the whole deployment: dirs, fakes, Apache, what we saw
// If the run dies under us: Apache, and every gateway process we saw that
// is still the same process (pid and start time), are killed.
process.on("exit", () => {
  const pids = [...(W?.seen?.values() ?? [])].filter(alive).map((p) => p.pid);
  if (W?.apache && W.apache.exitCode === null && W.apache.signalCode === null) pids.push(W.apache.pid);
  for (const pid of pids) try { process.kill(pid, "SIGKILL"); } catch { /* gone */ }
  if (W?.dir && !process.env.SG_KEEP) try { fs.rmSync(W.dir, { recursive: true, force: true }); } catch { /* gone */ }
});

function ids(user) {
  return { uid: Number(execFileSync("id", ["-u", user]).toString()), gid: Number(execFileSync("id", ["-g", user]).toString()) };
}

// A command as the service user (as root), or as ourselves.
function asUser(cmd, args) {
  const env = { ...process.env, ASAN_OPTIONS: `log_path=${W.dir}/san/asan:detect_leaks=1`,
    UBSAN_OPTIONS: `log_path=${W.dir}/san/ubsan:print_stacktrace=1` };
  return execFileSync(isRoot ? "setpriv" : cmd, isRoot ? [`--reuid=${serviceUser}`, `--regid=${serviceUser}`,
    "--init-groups", cmd, ...args] : args, { timeout: 20000, env, stdio: ["ignore", "pipe", "pipe"] }).toString();
}
const sqlite = (...sql) => asUser("sqlite3", ["-cmd", ".timeout 5000", "-json", W.db, ...sql]);
const sandgate = (...args) => asUser(`${W.sg}/bin/sandgate`, ["--config", `${W.sg}/sandgate.conf`, ...args]);

// The sample read, with what a test substitutes checked to be there.
const sample = (name) => fs.readFileSync(path.join(SAMPLES, name), "utf8");
const sub = (text, from, to, what, name) => subIn(text, from, to, what, `etc/shared-hosting/${name}`);

// The gateway's config: the harness's, as the sample sizes it.
function gatewayConf(prefix, tool) {
  const workers = /^\s*(workers = \[\d+, \d+\];)/m.exec(sample("sandgate.conf"));
  assert.ok(workers, "etc/shared-hosting/sandgate.conf sets workers");
  let c = gatewayConfig(W.sg, W.fakes.fakePort, { mount_prefix: prefix, max_body_bytes: MAX_BODY, auth: CONSOLE_AUTH,
    sandboxTools: W.fakes.e2bTool, interceptionTool: tool });
  c = subIn(c, /^\s*workers = \[2, 8\];$/m, `  ${workers[1]}`, "workers", "gatewayConfig");
  // Started by mod_fcgid as an ordinary user: no cgroup of its own.
  c = c.replace(/(provider = "local";)(?![^}]*limits =)/g, '$1 limits = "process";');
  assert.equal(c.match(/provider = "local";/g).length, c.match(/limits = "process";/g).length);
  return c;
}

function layout() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sgfcgid-"));
  fs.chmodSync(dir, 0o755);
  const home = `${dir}/home`, sg = `${home}/sandgate`, web = `${home}/public_html`, ap = `${dir}/apache`;
  W = { dir, home, sg, web, ap, db: `${sg}/state/store/sandgate.db`, seen: new Map() };
  // The store's directory, made as a user would before `sandgate keys
  // create` (the CLI makes the store, not its directory).
  for (const d of [`${sg}/bin`, `${sg}/share/sandgate/kernel`, path.dirname(W.db), `${web}/ai`, `${web}/fb`, `${web}/na`, `${ap}/fcgid`])
    fs.mkdirSync(d, { recursive: true, mode: 0o755 });
  fs.mkdirSync(`${dir}/san`, { mode: 0o777 });
  fs.chmodSync(`${dir}/san`, 0o777);
  // As `make install PREFIX=$HOME/sandgate` lays them out: the kernel's
  // files are found beside the binary (mod_fcgid passes no environment).
  for (const b of ["sandgate-fcgi", "sandgate"]) {
    fs.copyFileSync(`${build}/${b}`, `${sg}/bin/${b}`);
    fs.chmodSync(`${sg}/bin/${b}`, 0o755);
  }
  for (const f of ["kernel.py", "sg_cells.py", "sg_ipython.py", "sg_mpl.py"])
    fs.copyFileSync(path.join(root, "providers/sandboxd/kernel", f), `${sg}/share/sandgate/kernel/${f}`);
  fs.writeFileSync(`${sg}/carol.key`, KEYS.carol + "\n", { mode: 0o600 });

  // The samples, copied as a user would; only the install path replaced.
  const wrapperMode = fs.statSync(path.join(SAMPLES, "sandgate.fcgi")).mode;
  assert.equal(wrapperMode & 0o755, 0o755, "the shipped sandgate.fcgi is executable");
  const htaccess = sample(".htaccess");
  for (const re of [/^Options \+ExecCGI$/m, /^AddHandler fcgid-script \.fcgi$/m, /^CGIPassAuth On$/m, /^RewriteEngine On$/m])
    assert.match(htaccess, re);
  const wrapper = (conf) => {
    let w = sub(sample("sandgate.fcgi"), /\/home\/USER\/sandgate/g, sg, "install path", "sandgate.fcgi");
    if (conf) w = sub(w, new RegExp(`--config ${sg}/sandgate\\.conf`), `--config ${sg}/${conf}`, "--config", "sandgate.fcgi");
    return w;
  };
  const put = (file, text) => { fs.writeFileSync(file, text); };
  put(`${web}/ai/.htaccess`, htaccess);
  put(`${web}/ai/sandgate.fcgi`, wrapper());
  // A host without AllowOverride AuthConfig: as shipped, and the
  // variant the sample describes for it (CGIPassAuth out, the
  // E=HTTP_AUTHORIZATION rule in), mounted at /fb with a config of its own.
  put(`${web}/na/.htaccess`, htaccess);
  put(`${web}/na/sandgate.fcgi`, wrapper());
  let fb = sub(htaccess, /^CGIPassAuth On\n/m, "", "CGIPassAuth", ".htaccess");
  fb = sub(fb, /^#(RewriteRule \^ - \[E=HTTP_AUTHORIZATION:%\{HTTP:Authorization\}\])$/m, "$1", "commented E=HTTP_AUTHORIZATION rule", ".htaccess");
  put(`${web}/fb/.htaccess`, fb);
  put(`${web}/fb/sandgate.fcgi`, wrapper("fb.conf"));
  for (const d of ["ai", "fb", "na"]) fs.chmodSync(`${web}/${d}/sandgate.fcgi`, 0o755);
  if (isRoot) {
    const { uid, gid } = ids(serviceUser);
    execFileSync("chown", ["-R", `${uid}:${gid}`, home, `${ap}/fcgid`]);
  }
}

function writeConfigs(tool) {
  fs.writeFileSync(`${W.sg}/sandgate.conf`, gatewayConf(PREFIX, tool));
  fs.writeFileSync(`${W.sg}/fb.conf`, gatewayConf("/fb", tool));
  if (isRoot) {
    const { uid, gid } = ids(serviceUser);
    for (const f of ["sandgate.conf", "fb.conf"]) fs.chownSync(`${W.sg}/${f}`, uid, gid);
  }
}

function httpdConf(port, port2) {
  const { ap, web, dir } = W;
  const env = {
    SG_TEST_KEY_ALICE: KEYS.alice,
    ASAN_OPTIONS: `log_path=${dir}/san/asan:detect_leaks=1`,
    UBSAN_OPTIONS: `log_path=${dir}/san/ubsan:print_stacktrace=1`,
  };
  return `
ServerRoot "${ap}"
ServerName 127.0.0.1
Listen 127.0.0.1:${port}
Listen 127.0.0.1:${port2}
PidFile "${ap}/httpd.pid"
ErrorLog "${ap}/error.log"
LogLevel warn fcgid:info
DefaultRuntimeDir "${ap}"
Mutex file:${ap} default
${NEEDED.map((m) => `LoadModule ${m.replace(/^mod_(.*)\.so$/, "$1")}_module ${MODULES}/${m}`).join("\n")}
TypesConfig /dev/null
${isRoot ? `User ${serviceUser}\nGroup #${ids(serviceUser).gid}` : ""}
StartServers 1
ServerLimit 2
ThreadsPerChild 16
MaxRequestWorkers 32
Timeout 60
GracefulShutdownTimeout 20
FcgidIPCDir "${ap}/fcgid"
FcgidProcessTableFile "${ap}/fcgid_shm"
FcgidMinProcessesPerClass 2
FcgidMaxProcessesPerClass 2
${Object.entries(env).map(([k, v]) => `FcgidInitialEnv ${k} "${v}"`).join("\n")}
DocumentRoot "${web}"
<Directory />
    AllowOverride None
    Require all denied
</Directory>
<Directory "${web}">
    Options SymLinksIfOwnerMatch
    AllowOverride AuthConfig FileInfo Options=ExecCGI
    Require all granted
</Directory>
<Directory "${web}/fb">
    AllowOverride FileInfo Options=ExecCGI
</Directory>
<Directory "${web}/na">
    AllowOverride FileInfo Options=ExecCGI
</Directory>
<Files ".ht*">
    Require all denied
</Files>
# What docs/shared-hosting.md asks of a host.
<VirtualHost 127.0.0.1:${port}>
    FcgidOutputBufferSize 0
    FcgidMaxRequestLen ${MAX_REQUEST_LEN}
    FcgidIOTimeout 120
    FcgidBusyTimeout 300
</VirtualHost>
# mod_fcgid's defaults.
<VirtualHost 127.0.0.1:${port2}>
</VirtualHost>
`;
}

async function startApache() {
  const port = await freePort(), port2 = await freePort();
  fs.writeFileSync(`${W.ap}/httpd.conf`, httpdConf(port, port2));
  const log = fs.openSync(`${W.ap}/stderr.log`, "a");
  const p = spawn(APACHE, ["-f", `${W.ap}/httpd.conf`, "-DFOREGROUND"], {
    stdio: ["ignore", log, log], env: { PATH: process.env.PATH, LANG: "C" } });
  fs.closeSync(log);
  W.apache = p;
  W.base = `http://127.0.0.1:${port}`;
  W.base2 = `http://127.0.0.1:${port2}`;
  W.front = W.base + PREFIX;
  W.logFrom = W.logFrom ?? 0;
  await waitFor(async () => {
    if (p.exitCode !== null) throw new Error(`apache2 exited ${p.exitCode}: ${logs()}`);
    return (await fetch(`${W.base}/`, { signal: AbortSignal.timeout(2000) })).status > 0;
  }, "apache2 to listen", 15000);
}

// Apache's error log (where mod_fcgid sends the copies' stderr too) and stderr.
function logs() {
  return ["stderr.log", "error.log"].map((f) => { try { return fs.readFileSync(`${W.ap}/${f}`, "utf8"); } catch { return ""; } }).join("");
}
const errorLog = () => { try { return fs.readFileSync(`${W.ap}/error.log`, "utf8"); } catch { return ""; } };

async function stopApache(sig) {
  const p = W.apache;
  if (!p || p.exitCode !== null || p.signalCode !== null) return 0;
  const t0 = Date.now();
  const gone = new Promise((r) => p.once("exit", r));
  p.kill(sig);
  const t = setTimeout(() => p.kill("SIGKILL"), 25000);
  await gone;
  clearTimeout(t);
  return Date.now() - t0;
}

// The gateway copies mod_fcgid started: sandgate-fcgi masters (their parent
// is mod_fcgid's process manager), each with its children.
const isGateway = (p) => p.cmd[0] === `${W.sg}/bin/sandgate-fcgi`;
function copies() {
  const all = procs(), gw = all.filter(isGateway), pids = new Set(gw.map((p) => p.pid));
  return gw.filter((p) => !pids.has(p.ppid)).map((m) => ({ ...m, kids: all.filter((p) => p.ppid === m.pid) }));
}

// Every process under the copies, remembered (pid and start time) so that
// one left behind is found after its parent is gone.
function track() {
  const all = procs(), byParent = new Map();
  for (const p of all) byParent.set(p.ppid, [...(byParent.get(p.ppid) ?? []), p]);
  const todo = all.filter(isGateway);
  while (todo.length) {
    const p = todo.pop();
    const k = `${p.pid}:${p.start}`;
    if (!W.seen.has(k)) W.seen.set(k, p);
    todo.push(...(byParent.get(p.pid) ?? []));
  }
}
// What is left of the gateway: tracked processes still alive, and any
// process running from the user's home (the binaries, the config).
function leftovers() {
  track();
  const out = [...W.seen.values()].filter(alive);
  for (const p of procs()) if (p.cmd.some((a) => a.includes(W.home)) && !out.some((o) => o.pid === p.pid)) out.push(p);
  return out;
}
const describeProcs = (ps) => ps.map((p) => `${p.pid} (ppid ${proc(p.pid)?.ppid ?? "?"}) ${p.comm}: ${p.cmd.join(" ").slice(0, 120)}`).join("\n");

// Copies busy now: a connection to a copy's listening socket (its fd 0, the
// socket mod_fcgid made for it) is open. Accepted Unix sockets carry the
// listener's path in /proc/net/unix.
function busyCopies() {
  const rows = fs.readFileSync("/proc/net/unix", "utf8").split("\n").slice(1).map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length >= 7).map((f) => ({ st: f[5], inode: f[6], path: f[7] }));
  const busy = new Set();
  for (const c of copies()) {
    let ino;
    try { ino = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${c.pid}/fd/0`))?.[1]; } catch { continue; }
    const where = rows.find((r) => r.inode === ino)?.path;
    if (where && rows.some((r) => r.path === where && r.st === "03")) busy.add(c.pid);
  }
  return busy;
}
// Run fn, noting which copies were busy meanwhile.
async function during(fn) {
  const busy = new Set();
  let done = false;
  const watch = (async () => {
    while (!done) {
      for (const pid of busyCopies()) busy.add(pid);
      track();
      await sleep(20);
    }
  })();
  try {
    return { value: await fn(), busy };
  } finally {
    done = true;
    await watch;
  }
}

// A session's code run through ci-turn (it runs the newest user text as its
// code): what the model read.
async function ask(base, code, session) {
  const r = await call(base, "POST", "/v1/responses", { body: { model: "ci-turn", input: JSON.stringify({ code }), tools: CI,
    ...(session ? { metadata: { session_id: session } } : {}) } });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  return r.json.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("").replace(/^args result: /, "");
}

// A slow stream (the fake's slowstream model, 0.4 s an event).
const slowStream = (base, words = 9) => call(base, "POST", "/v1/chat/completions", { body: { model: "slowstream", stream: true,
  messages: [{ role: "user", content: Array.from({ length: words }, (_, i) => `w${i}`).join(" ") }] } });

// A session made in one copy and continued in another: the first request
// (x = 42) is served by copy A; a slow stream then holds A (mod_fcgid hands
// a request to the copy that went idle last), so the next one (x += 1) is
// served by another copy B, started for it when there is none.
async function acrossCopies(t, session) {
  // Start from quiet copies (an earlier request may still be closing).
  await waitFor(() => busyCopies().size === 0, "every copy idle", 5000);
  const r1 = await during(() => ask(W.front, "import time\ntime.sleep(1)\nx = 42\nprint('set')", session));
  assert.equal(r1.busy.size, 1, `one copy served the first request (busy: ${[...r1.busy]})`);
  const [a] = r1.busy;
  assert.equal(r1.value, "set\n", `the session's first run, in copy ${a}`);
  const sockets1 = await runtimeSockets();
  const hold = slowStream(W.front);
  await waitFor(() => busyCopies().has(a), `the slow stream on copy ${a}`, 5000);
  const r2 = await during(() => ask(W.front, "import time\ntime.sleep(1)\nx += 1\nprint(x)", session));
  const held = await hold;
  assert.equal(held.status, 200);
  const others = [...r2.busy].filter((p) => p !== a);
  assert.equal(others.length, 1, `another copy served the second request (busy: ${[...r2.busy]}, first: ${a})`);
  t.diagnostic(`session ${session}: first run in copy ${a}, second in copy ${others[0]}: ${JSON.stringify(r2.value)}`);
  t.diagnostic(`local runtime dir after the first run: ${JSON.stringify(sockets1)}; after the second: ${JSON.stringify(await runtimeSockets())}`);
  return { a, b: others[0], value: r2.value };
}

// Sandboxes live at the e2b fake, and those the store keeps (sessions,
// conversations' containers: any but a request's own, kind 0).
async function e2bState() {
  const stats = await W.fakes.fakeHook("e2b", "stats");
  const rows = JSON.parse(sqlite("SELECT s.id, s.handle, s.kind <> 0 AS kept FROM sandboxes s WHERE s.tool = 'e2b'") || "[]");
  const kept = new Set(rows.filter((r) => r.kept > 0).map((r) => JSON.parse(r.handle).id));
  return { live: stats.live, kept, rows };
}

// Sockets under the local sandboxes' runtime directory: each, and whether
// anything still listens on it.
async function runtimeSockets() {
  const dir = `${path.dirname(W.db)}/local`;
  const out = [];
  for (const sub of ["", "kernels"]) {
    let names = [];
    try { names = fs.readdirSync(path.join(dir, sub)); } catch { continue; }
    for (const n of names) {
      const f = path.join(dir, sub, n);
      if (!fs.lstatSync(f).isSocket()) continue;
      const listening = await new Promise((res) => {
        const c = net.connect(f);
        c.on("connect", () => { c.destroy(); res(true); });
        c.on("error", () => res(false));
      });
      out.push({ file: path.relative(dir, f), listening });
    }
  }
  return out;
}

// After a stop: no gateway process, no e2b sandbox the store does not keep,
// no kernel socket, nothing listening in the runtime directory.
async function assertNothingLeft(t, what) {
  let left = [];
  await waitFor(() => (left = leftovers()).length === 0, "every gateway process to end", 10000).catch(() => {});
  const { live: e2b, kept } = await e2bState();
  const socks = await runtimeSockets();
  t.diagnostic(`${what}: runtime dir sockets ${JSON.stringify(socks)}; e2b live ${JSON.stringify(e2b)}, kept by the store ${JSON.stringify([...kept])}`);
  const ipc = fs.readdirSync(`${W.ap}/fcgid`);
  t.diagnostic(`${what}: mod_fcgid's own socket files left in FcgidIPCDir: ${JSON.stringify(ipc)}`);
  const problems = [];
  if (left.length) problems.push(`processes left:\n${describeProcs(left)}`);
  const stray = e2b.filter((id) => !kept.has(id));
  if (stray.length) problems.push(`e2b sandboxes live that the store does not keep: ${stray.join(", ")}`);
  const kernelSocks = socks.filter((s) => s.file.startsWith("kernels/"));
  if (kernelSocks.length) problems.push(`kernel sockets left: ${kernelSocks.map((s) => s.file).join(", ")}`);
  const listening = socks.filter((s) => s.listening);
  if (listening.length) problems.push(`sockets still answering: ${listening.map((s) => s.file).join(", ")}`);
  // Kill what is left, so the next part starts clean (after the verdict).
  for (const p of left) try { process.kill(p.pid, "SIGKILL"); } catch { /* gone */ }
  assert.equal(problems.length, 0, `${what}: ${problems.join("\n")}`);
}

const fcgidExits = (from) => errorLog().slice(from).split("\n").filter((l) => /mod_fcgid: process .*\(\d+\) exit|graceful kill fail|terminating forcefully|still did not exit/.test(l));

// Bounded: about 35 s when all is well; the suite gives up at 75 s.
describe("Apache mod_fcgid spawning sandgate from the shipped .htaccess (etc/shared-hosting)", { skip: SKIP, timeout: 75000 }, () => {
  before(async () => {
    layout();
    W.fakes = await startFakes(W.dir, { e2b: true });
    writeConfigs("e2b");
    // As a user sets up: a key from the CLI (which makes the store).
    W.dave = sandgate("keys", "create", "dave").trim();
    assert.match(W.dave, /^sk-/);
    // A sweep held by someone else (as `sandgate reap` from cron would)
    // while the copies start: every copy's reaper must see it.
    sqlite(`INSERT INTO leases (name, holder, until) VALUES ('reaper', 'deploy-fcgid-test:1', CAST(strftime('%s','now') AS INTEGER) + 600)`);
    await startApache();
  }, T(30));

  after(async () => {
    if (!W) return;
    const errors = [];
    await stopApache("SIGKILL").catch((e) => errors.push(e));
    for (const p of leftovers()) try { process.kill(p.pid, "SIGKILL"); } catch { /* gone */ }
    await W?.fakes?.stop().catch((e) => errors.push(e));
    const reports = fs.existsSync(`${W.dir}/san`) ? fs.readdirSync(`${W.dir}/san`).map((f) => fs.readFileSync(`${W.dir}/san/${f}`, "utf8")) : [];
    if (process.env.SG_KEEP) console.error(`kept ${W.dir}`);
    else fs.rmSync(W.dir, { recursive: true, force: true });
    if (reports.length) errors.push(new Error("sanitizer reports:\n" + reports.join("\n")));
    if (errors.length) throw errors[0];
  }, T(40));

  test("the shipped sandgate.conf passes check-config (paths and key files of a home)", T(10), () => {
    const conf = sample("sandgate.conf").replaceAll("/home/USER/sandgate", W.sg);
    fs.writeFileSync(`${W.dir}/sample.conf`, conf);
    fs.writeFileSync(`${W.sg}/me.key`, "sk-me\n", { mode: 0o600 });
    fs.writeFileSync(`${W.sg}/openai.key`, "sk-openai\n", { mode: 0o600 });
    if (isRoot) for (const f of ["me.key", "openai.key"]) execFileSync("chown", [serviceUser, `${W.sg}/${f}`]);
    const out = asUser(`${W.sg}/bin/sandgate`, ["--config", `${W.dir}/sample.conf`, "check-config"]);
    assert.doesNotMatch(out, /warning|error/i, out);
    assert.match(conf, /mount_prefix = "\/ai";/);
    assert.match(conf, new RegExp(`path = "${W.sg}/state/sandgate\\.db";`));
  });

  test("GET /ai/healthz; only v1/, healthz and metrics under /ai reach sandgate; the wrapper is never shown", T(15), async (t) => {
    const h = await call(W.front, "GET", "/healthz", { key: null });
    assert.equal(h.status, 200, logs());
    assert.deepEqual(h.json, { status: "ok" });
    const m = await call(W.front, "GET", "/metrics", { key: null });
    assert.equal(m.status, 200);
    assert.match(m.text, /^sandgate_requests_total/m);
    await assertMetricsOnlyForScraper(W.front);
    // Not sandgate: Apache's own 404s, not JSON.
    for (const p of ["/healthz", "/v1/models", `${PREFIX}/other`, `${PREFIX}/v1`]) {
      const r = await call(W.base, "GET", p, { key: null });
      assert.equal(r.status, 404, `${p}: ${r.status}`);
      assert.equal(r.json, null, `${p} is not sandgate's`);
    }
    // The wrapper itself runs (sandgate then answers 404 for its URI), its
    // text is never served; the .htaccess neither.
    const w = await call(W.front, "GET", "/sandgate.fcgi", { key: null });
    assert.doesNotMatch(w.text, /exec |\/bin\/sh/);
    t.diagnostic(`GET ${PREFIX}/sandgate.fcgi: ${w.status} ${w.text.slice(0, 100)}`);
    assert.equal((await call(W.front, "GET", "/.htaccess", { key: null })).status, 403);
    // mod_fcgid started the copy as the unprivileged user, not root.
    const cs = copies();
    assert.ok(cs.length >= 1, "a copy of sandgate-fcgi runs");
    for (const c of cs) assert.equal(c.uid, ids(serviceUser).uid, `copy ${c.pid} runs as ${serviceUser}`);
    const pm = proc(cs[0].ppid);
    t.diagnostic(`copies ${cs.map((c) => c.pid)} as ${serviceUser}, children of ${pm?.comm} ${pm?.pid} (mod_fcgid's process manager, uid ${pm?.uid})`);
  });

  test("an intercepted code_interpreter request completes (official openai SDK)", T(15), async () => {
    await assertIntercepts(W.front);
  });

  test("a stream's first delta arrives long before the upstream finished (FcgidOutputBufferSize 0)", T(15), async (t) => {
    await assertStreamsUnbuffered(W.front, t);
  });

  test("a background stream dropped and resumed through mod_fcgid: the rest whole and live", T(30), async (t) => {
    await assertResumesUnbuffered(W.front, t);
  });

  test("MCP through mod_fcgid: a session, a run's progress before its result, GET 405 and DELETE", T(30), async (t) => {
    await assertMcp(W.front, t);
  });

  test("bodies: exactly max_body_bytes 200, one over sandgate's JSON 413, over FcgidMaxRequestLen mod_fcgid's 500", T(15), async (t) => {
    const ok = await call(W.front, "POST", "/v1/chat/completions", { raw: bodyOf(MAX_BODY) });
    assert.equal(ok.status, 200, ok.text.slice(0, 300));
    assert.equal(ok.json.choices[0].message.content, "echo: " + "x".repeat(MAX_BODY - EMPTY_BODY.length));
    const over = await call(W.front, "POST", "/v1/chat/completions", { raw: bodyOf(MAX_BODY + 1) });
    assert.equal(over.status, 413);
    assert.equal(over.json?.error?.code, "request_too_large", `sandgate's JSON 413: ${over.text.slice(0, 200)}`);
    // Up to FcgidMaxRequestLen it is still sandgate's 413 ...
    const at = await call(W.front, "POST", "/v1/chat/completions", { raw: bodyOf(MAX_REQUEST_LEN) });
    assert.equal(at.status, 413);
    assert.equal(at.json?.error?.code, "request_too_large");
    // ... past it mod_fcgid refuses it itself, before sandgate sees it:
    // Apache's HTML 500 (not a 413), and a line in Apache's log.
    const from = errorLog().length;
    const huge = await call(W.front, "POST", "/v1/chat/completions", { raw: bodyOf(MAX_REQUEST_LEN + 1) });
    t.diagnostic(`over FcgidMaxRequestLen: ${huge.status} ${huge.headers.get("content-type")} ${JSON.stringify(huge.text.slice(0, 60))}`);
    assert.equal(huge.status, 500);
    assert.equal(huge.json, null);
    await waitFor(() => /exceeds MaxRequestLen/.test(errorLog().slice(from)), "mod_fcgid's MaxRequestLen line", 5000);
    t.diagnostic(errorLog().slice(from).split("\n").find((l) => /MaxRequestLen/.test(l)));
    assert.equal((await call(W.front, "GET", "/healthz", { key: null })).status, 200);
    const again = await client(W.front).chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "still here" }] });
    assert.equal(again.choices[0].message.content, "echo: still here");
  });

  test("Authorization reaches sandgate (CGIPassAuth On): a wrong key 401 from sandgate, valid ones 200", T(15), async () => {
    const wrong = await call(W.front, "POST", "/v1/chat/completions", { key: "sk-wrong-0000", body: { model: "gpt-test", messages: [{ role: "user", content: "hi" }] } });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.json?.error?.code, "invalid_api_key", "sandgate's JSON error, not Apache's page");
    assert.equal((await call(W.front, "GET", "/v1/models", { key: null })).status, 401);
    for (const key of [KEYS.alice, KEYS.bob, KEYS.carol, W.dave]) {
      const right = await call(W.front, "POST", "/v1/chat/completions", { key, body: { model: "gpt-test", messages: [{ role: "user", content: "hi" }] } });
      assert.equal(right.status, 200, right.text.slice(0, 300));
      assert.equal(right.json.choices[0].message.content, "echo: hi");
    }
    await assert.rejects(client(W.front, "sk-nope").models.list(), (e) => e instanceof OpenAI.AuthenticationError);
    await waitFor(() => /key=dave method=POST path=\/v1\/chat\/completions model=gpt-test status=200 /.test(errorLog()), "dave's request in the log", 5000);
  });

  test(`mounted under ${PREFIX}: healthz, chat and an intercepted request (assertPrefixed)`, T(15), async () => {
    await assertPrefixed(W.base, PREFIX);
    await assertConsole(W.base, PREFIX);
  });

  test("no AllowOverride AuthConfig: the shipped .htaccess is a 500; its E=HTTP_AUTHORIZATION variant works; mod_fcgid's default output buffer holds a stream to its end", T(20), async (t) => {
    const from = errorLog().length;
    const na = await call(W.base2, "GET", "/na/healthz", { key: null });
    assert.equal(na.status, 500);
    await waitFor(() => /\/na\/\.htaccess: CGIPassAuth not allowed here/.test(errorLog().slice(from)), "Apache's reason", 5000);
    const fb = W.base2 + "/fb";
    assert.equal((await call(fb, "GET", "/healthz", { key: null })).status, 200);
    const wrong = await call(fb, "GET", "/v1/models", { key: "sk-wrong-0000" });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.json?.error?.code, "invalid_api_key");
    assert.equal((await call(fb, "GET", "/v1/models", { key: null })).status, 401);
    const right = await call(fb, "GET", "/v1/models", { key: KEYS.bob });
    assert.equal(right.status, 200, right.text.slice(0, 200));
    // FcgidOutputBufferSize left at 65536: the client gets nothing until
    // the stream ends (fcgid_filter flushes past the buffer size or at the end).
    const t0 = Date.now();
    const r = await fetch(`${fb}/v1/chat/completions`, { method: "POST", signal: AbortSignal.timeout(20000),
      headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "slowstream", stream: true, messages: [{ role: "user", content: "a b c d" }] }) });
    const head = Date.now() - t0;
    const chunks = [];
    for await (const c of r.body) chunks.push({ at: Date.now() - t0, n: c.length });
    const end = Date.now() - t0;
    t.diagnostic(`default FcgidOutputBufferSize: headers at +${head} ms, body chunks ${JSON.stringify(chunks)}, end +${end} ms`);
    assert.equal(r.status, 200);
    assert.ok(end > 1500, "the upstream streams for seconds");
    assert.ok(head > end - 500 && chunks[0].at > end - 500, "buffered to the end");
  });

  test("two copies: an e2b session made in one continues in the other, on one store; their reapers honour one lease", T(30), async (t) => {
    const { a, b, value } = await acrossCopies(t, "s-e2b");
    assert.equal(value, "43\n", `the e2b session's x continued in copy ${b}`);
    // Both copies (and fb's) use the one store file: each has it open.
    const cs = copies();
    assert.ok(cs.length >= 2, `at least two copies: ${cs.map((c) => c.pid)}`);
    const dbIno = `${fs.statSync(W.db).dev}:${fs.statSync(W.db).ino}`;
    for (const pid of [a, b]) {
      const c = cs.find((x) => x.pid === pid);
      assert.ok(c, `copy ${pid} still runs`);
      const opened = new Set();
      for (const p of [c, ...c.kids]) {
        let fds = [];
        try { fds = fs.readdirSync(`/proc/${p.pid}/fd`); } catch { continue; }
        for (const fd of fds) {
          let target;
          try { target = fs.readlinkSync(`/proc/${p.pid}/fd/${fd}`); } catch { continue; }
          if (!/\.db$/.test(target)) continue;
          const st = fs.statSync(`/proc/${p.pid}/fd/${fd}`);
          opened.add(`${target} ${st.dev}:${st.ino}`);
        }
      }
      assert.deepEqual([...opened], [`${W.db} ${dbIno}`], `copy ${pid} has the store open, and only it`);
    }
    // The reapers: one per copy, each swept at its start and found the
    // lease held (by us, since before Apache started): none swept.
    const reapers = cs.flatMap((c) => c.kids.filter((k) => k.comm === "sg-reaper").map((k) => k.pid));
    assert.equal(reapers.length, cs.length, `one reaper per copy: ${reapers}`);
    const sweeps = errorLog().split("\n").filter((l) => /^event=reaper_sweep /.test(l));
    t.diagnostic(`${cs.length} copies, reapers ${reapers}; sweeps logged: ${JSON.stringify(sweeps)}`);
    assert.ok(sweeps.length >= cs.length, "each copy's reaper swept once at its start");
    assert.ok(sweeps.every((l) => / skipped=1 /.test(l)), "every sweep skipped: the lease was held");
    assert.equal(JSON.parse(sqlite("SELECT holder FROM leases WHERE name = 'reaper'"))[0].holder, "deploy-fcgid-test:1");
    sqlite("DELETE FROM leases WHERE name = 'reaper'");
    assert.match(sandgate("reap"), /^deleted \d+, failed 0/);
  });

  test("graceful-stop with a request in flight: the copies end, nothing is left", T(30), async (t) => {
    track();
    const before = copies().map((c) => c.pid);
    const { live: live0 } = await e2bState();
    const flight = ask(W.front, "import time\ntime.sleep(3)\nprint('finished')").then((v) => ({ v }), (e) => ({ e }));
    await waitFor(async () => (await e2bState()).live.length > live0.length, "the in-flight request's e2b sandbox", 10000);
    track();
    const from = errorLog().length;
    const ms = await stopApache("SIGWINCH");
    const res = await flight;
    t.diagnostic(`graceful-stop took ${ms} ms; the in-flight request: ${res.e ? "failed: " + res.e.message.slice(0, 200) : JSON.stringify(res.v)}`);
    t.diagnostic(`copies before: ${before}; mod_fcgid at stop:\n${fcgidExits(from).join("\n")}`);
    t.diagnostic(`sandgate at stop:\n${errorLog().slice(from).split("\n").filter((l) => /^sandgate:|status=/.test(l)).join("\n")}`);
    await assertNothingLeft(t, "after graceful-stop");
  });

  test("Apache again, interception on the local sandbox: bubblewrap runs as the Apache user; a local session made in one copy continues in the other", T(30), async (t) => {
    W.seen.clear();
    writeConfigs("local");
    fs.writeFileSync(`${W.ap}/error.log`, "");
    await startApache();
    const { a, b, value } = await acrossCopies(t, "s-local");
    const lines = errorLog().split("\n").filter((l) => /sandboxd/.test(l));
    t.diagnostic(`sandboxd said:\n${lines.join("\n")}`);
    assert.ok(lines.some((l) => /bubblewrap works/.test(l)), "bubblewrap works under Apache's user");
    // Each copy has a sandboxd of its own: which kernels run, under which.
    const cs = copies();
    for (const c of cs) {
      const sbxd = c.kids.find((k) => k.comm === "sg-sandboxd");
      const kernels = sbxd ? procs().filter((p) => p.ppid === sbxd.pid) : [];
      t.diagnostic(`copy ${c.pid}: sandboxd ${sbxd?.pid}, its children ${kernels.map((k) => `${k.pid} ${k.comm}`).join(", ") || "none"}`);
    }
    assert.ok(!value.startsWith(LOST), `copy ${b} lost the session's sandbox made by copy ${a}: ${JSON.stringify(value)}`);
    assert.equal(value, "43\n", `the local session's x continued in copy ${b}`);
  });

  test("the copies SIGKILLed, then Apache stopped: nothing is left", T(30), async (t) => {
    track();
    const cs = copies();
    assert.ok(cs.length >= 1, "copies to kill");
    t.diagnostic(`killing copies ${cs.map((c) => `${c.pid} (children ${c.kids.map((k) => `${k.pid} ${k.comm}`).join(", ")})`).join("; ")}`);
    const from = errorLog().length;
    for (const c of cs) process.kill(c.pid, "SIGKILL");
    await sleep(500);
    const ms = await stopApache("SIGTERM");
    t.diagnostic(`Apache stopped in ${ms} ms; mod_fcgid:\n${fcgidExits(from).join("\n")}`);
    await assertNothingLeft(t, "after SIGKILL of the copies and Apache's stop");
  });
});
