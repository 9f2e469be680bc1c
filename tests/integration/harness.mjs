// Starts the real stack for a test file: the fake upstream, sandgate-fcgi
// and lighttpd in front of it, in a fresh directory. How it starts is set
// by the environment (tests/integration/run.sh runs every combination):
//   SG_BUILD   directory with sandgate-fcgi and sandgate (default: build)
//   SG_START   "binpath": lighttpd spawns sandgate on fd 0 (as root, the
//              responders drop to SG_USER); "listen": sandgate is started
//              by us with --listen, as SG_USER when we are root
//   SG_USER    the unprivileged service user (default: sgtest)
//   SG_PG      the libpq URL of a PostgreSQL maintenance database
//              (tests/pg/start.sh prints it): each Stack then keeps its
//              store in a database of its own made there (store.url), and
//              drops it when it stops; unset, the store is SQLite
import { spawn, spawnSync, execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, "../..");
const build = path.resolve(root, process.env.SG_BUILD || "build");
const startMode = process.env.SG_START || "binpath";
const isRoot = process.getuid() === 0;
export const serviceUser = isRoot ? (process.env.SG_USER || "sgtest") : os.userInfo().username;
const pgMaintenance = process.env.SG_PG || "";
// What the stacks' stores are: "sqlite" or "postgresql" (SG_PG).
export const storeKind = pgMaintenance ? "postgresql" : "sqlite";

// PostgreSQL's programs: the newest /usr/lib/postgresql/N/bin's, as
// tests/pg finds them (Debian puts only pg_wrapper in PATH, and that looks
// for packaged clusters).
function pgBin(prog) {
  let dirs = [];
  try {
    dirs = fs.readdirSync("/usr/lib/postgresql").filter((v) => fs.existsSync(`/usr/lib/postgresql/${v}/bin/${prog}`));
  } catch { /* none */ }
  dirs.sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  return process.env.SG_PG_BIN ? `${process.env.SG_PG_BIN}/${prog}` :
    dirs.length ? `/usr/lib/postgresql/${dirs[dirs.length - 1]}/bin/${prog}` : prog;
}

// psql on the database at url (as whoever we are: the cluster trusts
// local connections, and url names the role): its output (-At), or an
// error with what psql said. libpq's PG* variables are left out: url says
// it all.
export function psql(url, sql) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("PG")));
  const r = spawnSync(pgBin("psql"), ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql],
    { encoding: "utf8", env: { ...env, PGCONNECT_TIMEOUT: "10" }, timeout: 60000 });
  if (r.status !== 0) throw new Error(`psql ${url} -c ${JSON.stringify(sql)}: ${r.error?.message ?? r.stderr.trim()}`);
  return r.stdout;
}

// The URL of database name on the cluster of url (a postgresql:// URL
// whose host, port and role stay).
export function pgDatabaseUrl(url, name) {
  const m = /^(postgres(?:ql)?:\/\/[^/?]*)(?:\/[^?]*)?(\?.*)?$/.exec(url);
  if (!m) throw new Error(`not a postgresql:// URL: ${url}`);
  return `${m[1]}/${name}${m[2] ?? ""}`;
}

// The directory of SG_PG's cluster (its socket's, host=), and a restart of
// it (tests/pg/restart.sh: every session ended), for a test that restarts
// PostgreSQL under a gateway: resolves once it accepts connections again.
// Asynchronous, so that a test's load goes on while it restarts.
export const pgDir = pgMaintenance ? decodeURIComponent(/[?&]host=([^&]*)/.exec(pgMaintenance)?.[1] ?? "") : "";
export function restartPostgres() {
  if (!pgDir) return Promise.reject(new Error("restartPostgres: SG_PG names no host=DIR"));
  return new Promise((resolve, reject) => {
    const p = spawn("sh", [path.join(root, "tests/pg/restart.sh"), pgDir], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    p.stderr.on("data", (d) => { err += d; });
    p.on("error", reject);
    p.on("close", (code, sig) => code === 0 ? resolve() :
      reject(new Error(`tests/pg/restart.sh ${pgDir}: ${sig ?? `exit ${code}`}\n${err}`)));
  });
}

// Databases of running stacks: URL → { stacks using it, the one to drop
// when the last of them stops (made by one of them) }.
const pgLive = new Map();

export const KEYS = {
  alice: "sk-alice-" + crypto.randomBytes(8).toString("hex"),
  bob: "sk-bob-" + crypto.randomBytes(8).toString("hex"),
  carol: "sk-carol-" + crypto.randomBytes(8).toString("hex"),
};
export const UPSTREAM_KEY = "upstream-secret-" + crypto.randomBytes(4).toString("hex");
export const E2B_KEY = "e2b_" + crypto.randomBytes(8).toString("hex");
export const OSB_KEY = "osb-" + crypto.randomBytes(8).toString("hex");
const sha256 = (s) => crypto.createHash("sha256").update(s).digest("hex");

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(fn, what, ms = 15000) {
  const until = Date.now() + ms;
  let last;
  while (Date.now() < until) {
    try {
      if (await fn()) return;
    } catch (e) {
      last = e;
    }
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}${last ? ": " + last.message : ""}`);
}

// An assertion that comes true a moment after the answer (a request's own
// sandbox is deleted once its answer is out): fn retried until it passes,
// for at most ms; its last failure is thrown.
export async function eventually(fn, ms = 10000) {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() >= until) throw e;
    }
    await sleep(50);
  }
}

function ids(user) {
  const uid = Number(execFileSync("id", ["-u", user]).toString().trim());
  const gid = Number(execFileSync("id", ["-g", user]).toString().trim());
  return { uid, gid };
}

// Per-sandbox cgroups need root, or a cgroup delegated to the gateway's
// user (as systemd's Delegate=yes does): Stack gives the gateway one when
// it can; a run that is not root has neither, so its local tools say
// limits = "process".
export const localLimits = isRoot ? "" : 'limits = "process";';

// The store's directory: state/store, or state/SUB with extra.storeSub
// (a longer path, say).
export const storeDirOf = (dir, extra = {}) => `${dir}/state/${extra.storeSub ?? "store"}`;

// The gateway's config; extra is spliced into the server group (extra.server
// is raw settings for it), extra.keys into auth.keys and extra.auth into
// auth (admin_keys, limits); extra.storeUrl and extra.box go into the
// store group (url, box); extra.top is raw top-level groups (usage).
export function gatewayConfig(dir, fakePort, extra = {}) {
  const up = `http://127.0.0.1:${fakePort}/v1`;
  // The fake keeps state as OpenAI does: these models leave it to it
  // unless more says otherwise (a loopback upstream defaults to "gateway").
  const model = (name, upstream, more = "") =>
    `{ name = "${name}"; api_base = "${up}"; api_key = "${UPSTREAM_KEY}"; model = "${upstream}"; ${/state\s*=/.test(more) ? "" : 'state = "upstream";'} ${more} }`;
  return `
server: {
  workers = [2, 8];
  user = "${serviceUser}";
  max_body_bytes = ${extra.max_body_bytes ?? 65536};
  request_timeout = ${extra.request_timeout ?? 30};
  idle_retire = ${extra.idle_retire ?? 2};
  ${extra.socket ?? ""}
  grace = 5;
  ${extra.server ?? ""}
  mount_prefix = "${extra.mount_prefix ?? ""}";
};
store: { path = "${extra.storePath ?? storeDirOf(dir, extra) + "/sandgate.db"}";${extra.storeUrl ? ` url = "${extra.storeUrl}";` : ""}${extra.box ? ` box = "${extra.box}";` : ""} };
auth: {
  keys = (
    { name = "alice"; key = "env:SG_TEST_KEY_ALICE"; max_concurrent = 8; },
    { name = "bob"; key_sha256 = "${sha256(KEYS.bob)}"; },
    { name = "carol"; key = "file:${dir}/carol.key"; }${extra.keys ? "," + extra.keys : ""}
  );
  ${extra.auth ?? ""}
};
models = (
  ${model("gpt-test", "echo")},
  ${model("gpt-4.1-mini", "gpt-4.1-mini")},
  ${model("fault-500", "fault-500")},
  ${model("fault-429", "fault-429")},
  ${model("fault-400", "fault-400")},
  ${model("json-error-stream", "json-error-stream")},
  ${model("drop", "drop-3")},
  ${model("slowstream", "slowstream-0.4")},
  ${model("slow", "slow-4", "timeout = 1;")},
  ${model("slow11", "slow-11", "timeout = 30;")},
  { name = "unreachable"; api_base = "http://127.0.0.1:1/v1"; api_key = "x"; },
  { name = "nokey"; api_base = "${up}"; api_key = "env:SG_TEST_NEVER_SET"; },
  ${["ci-primes", "ci-two", "ci-raise", "ci-repeat", "ci-reason", "ci-clientfn", "ci-badargs", "ci-args", "ci-turn"].map((n) => model(n, n)).join(",\n  ")},
  ${model("ci-endless", "ci-endless", "max_agentic_loops = 3;")}${extra.models ? "," + (typeof extra.models === "function" ? extra.models(model) : extra.models) : ""}
);
sandbox_tools = (
  { name = "local"; provider = "local"; memory_mb = 512; disk_mb = 16; max_procs = 32; ${localLimits} },
  { name = "local2"; provider = "local"; memory_mb = 512; disk_mb = 16; max_procs = 32; ${localLimits} }${extra.localTools ? "," + extra.localTools : ""}${extra.sandboxTools ? "," + extra.sandboxTools : ""}
);
interception: { ${extra.sandboxTools ? `sandbox_tool = "${extra.interceptionTool ?? "e2b"}"; exec_timeout = ${extra.execTimeout ?? 20};` : ""} ${extra.interception ?? ""} };
${extra.sessions ? `sessions: { ${extra.sessions} };` : ""}
${extra.files ? `files: { ${extra.files} };` : ""}
${extra.top ?? ""}
`;
}

export class Stack {
  constructor(opts = {}) {
    this.opts = opts;
    this.procs = [];
  }

  // Starts it all; a start that fails stops what it started (and drops
  // its database) before it throws.
  async start() {
    try {
      return await this.startAll();
    } catch (e) {
      await this.stop().catch(() => {});
      throw e;
    }
  }

  async startAll() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sgit-"));
    this.dir = dir;
    this.mode = this.opts.start ?? startMode;
    fs.chmodSync(dir, 0o755);
    // Our own copies: the clone may sit in a directory the service user
    // cannot enter.
    fs.mkdirSync(`${dir}/bin`);
    for (const b of ["sandgate-fcgi", "sandgate"]) fs.copyFileSync(`${build}/${b}`, `${dir}/bin/${b}`);
    for (const b of ["sandgate-fcgi", "sandgate"]) fs.chmodSync(`${dir}/bin/${b}`, 0o755);
    fs.mkdirSync(`${dir}/state`);
    // The local kernel's files, readable by whoever runs the gateway.
    fs.mkdirSync(`${dir}/kernel`);
    for (const f of ["kernel.py", "sg_cells.py", "sg_ipython.py", "sg_mpl.py"]) fs.copyFileSync(path.join(root, "providers/sandboxd/kernel", f), `${dir}/kernel/${f}`);
    fs.mkdirSync(`${dir}/san`, { mode: 0o777 });
    fs.chmodSync(`${dir}/san`, 0o777);
    fs.mkdirSync(`${dir}/www`);
    fs.writeFileSync(`${dir}/carol.key`, KEYS.carol + "\n", { mode: 0o600 });
    if (isRoot) {
      const { uid, gid } = ids(serviceUser);
      // Root mode: the master makes state/store for the service user.
      // Listen mode: the whole gateway runs as that user.
      fs.chownSync(`${dir}/state`, this.mode === "listen" ? uid : 0, this.mode === "listen" ? gid : 0);
      fs.chownSync(`${dir}/carol.key`, uid, gid);
    }
    this.storeDir = storeDirOf(dir, this.opts);
    this.makeStoreParents();
    this.dbPath = this.opts.storePath ?? `${this.storeDir}/sandgate.db`;
    this.localHome = `${path.dirname(this.dbPath)}/local`;
    storeStacks.set(this.localHome, (storeStacks.get(this.localHome) ?? 0) + 1);
    // PostgreSQL: another stack's database (opts.storeUrl, for gateways
    // sharing one), or a new one of our own on SG_PG's cluster.
    if (this.opts.storeUrl) {
      this.storeUrl = this.opts.storeUrl;
    } else if (pgMaintenance) {
      const name = "sgit_" + crypto.randomBytes(6).toString("hex");
      psql(pgMaintenance, `CREATE DATABASE ${name}`);
      this.storeUrl = pgDatabaseUrl(pgMaintenance, name);
      pgLive.set(this.storeUrl, { stacks: 0, drop: name });
    }
    this.storeKind = this.storeUrl ? "postgresql" : "sqlite";
    if (this.storeUrl) {
      const live = pgLive.get(this.storeUrl) ?? { stacks: 0, drop: null };
      live.stacks++;
      pgLive.set(this.storeUrl, live);
    }

    this.fakePort = await this.startFake();
    if (this.opts.sandboxes) {
      this.e2bPort = await this.startPy("e2b", ["--api-key", E2B_KEY]);
      this.osbPort = await this.startPy("opensandbox", ["--api-key", OSB_KEY]);
      const e2b = `http://127.0.0.1:${this.e2bPort}`, osb = `http://127.0.0.1:${this.osbPort}/v1`;
      this.opts.sandboxTools = `
  { name = "e2b"; provider = "e2b"; api_key = "${E2B_KEY}"; api_base = "${e2b}"; sandbox_url = "${e2b}"; },
  { name = "osb"; provider = "opensandbox"; api_key = "${OSB_KEY}"; api_base = "${osb}"; },
  { name = "e2b-badkey"; provider = "e2b"; api_key = "e2b_0000"; api_base = "${e2b}"; sandbox_url = "${e2b}"; },
  { name = "osb-badkey"; provider = "opensandbox"; api_key = "nope"; api_base = "${osb}"; }`;
    }
    this.gwPort = await freePort();
    fs.writeFileSync(`${dir}/sandgate.conf`, gatewayConfig(dir, this.fakePort, { ...this.opts, storeUrl: this.storeUrl }));
    this.env = {
      ...process.env,
      ...(this.opts.env ?? {}),
      SG_TEST_KEY_ALICE: KEYS.alice,
      SANDGATE_KERNEL_DIR: this.opts.kernelDir ?? `${dir}/kernel`,
      ASAN_OPTIONS: `log_path=${dir}/san/asan:detect_leaks=1`,
      UBSAN_OPTIONS: `log_path=${dir}/san/ubsan:print_stacktrace=1`,
    };
    this.httpPort = await freePort();
    await this.startGateway();
    this.base = `http://127.0.0.1:${this.httpPort}`;
    await waitFor(async () => (await fetch(this.url("/healthz"))).status === 200, "gateway /healthz");
    // A run on PostgreSQL that quietly kept a SQLite file would prove
    // nothing.
    if (this.storeKind === "postgresql" && fs.existsSync(this.dbPath))
      throw new Error(`store.url is ${this.storeUrl}, yet the gateway made ${this.dbPath}`);
    return this;
  }

  // The rows query gives on this stack's store, whichever it is, as an
  // array of objects ([] for a statement that gives none: UPDATE, DELETE,
  // an INSERT without RETURNING). SQLite: sqlite3 -json on its file, as the
  // service user (another process of the gateway's user, waiting up to
  // 5 s for its locks). PostgreSQL: psql on its database, the rows made
  // JSON by json_agg, so that numbers are numbers there too; json and jsonb
  // values come back as JSON text and booleans as 1 and 0, as SQLite keeps
  // them. Synchronous, as the store's own user would poke at it.
  sql(query) {
    const q = query.trim().replace(/;\s*$/, "");
    if (this.storeKind === "postgresql") {
      let wrapped = q;
      if (/^(select|with|values|table)\b/i.test(q)) wrapped = `SELECT coalesce(json_agg(t), '[]'::json) FROM (${q}) t`;
      else if (/\breturning\b/i.test(q)) wrapped = `WITH t AS (${q}) SELECT coalesce(json_agg(t), '[]'::json) FROM t`;
      const out = psql(this.storeUrl, wrapped);
      if (wrapped === q) return [];
      return JSON.parse(out).map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) =>
        [k, typeof v === "boolean" ? Number(v) : v !== null && typeof v === "object" ? JSON.stringify(v) : v])));
    }
    const argv = ["sqlite3", "-cmd", ".timeout 5000", "-json", this.dbPath, q];
    const r = isRoot ? spawnSync("setpriv", [`--reuid=${serviceUser}`, `--regid=${serviceUser}`, "--init-groups", ...argv],
      { encoding: "utf8", timeout: 60000 }) : spawnSync(argv[0], argv.slice(1), { encoding: "utf8", timeout: 60000 });
    if (r.status !== 0) throw new Error(`sqlite3 ${this.dbPath} ${JSON.stringify(q)}: ${r.error?.message ?? r.stderr.trim()}`);
    return r.stdout.trim() ? JSON.parse(r.stdout) : [];
  }

  // With opts.storeSub, the directories above the store's own (which the
  // master makes): owned as state/ is, so whoever makes it can.
  makeStoreParents() {
    const st = fs.statSync(`${this.dir}/state`);
    let d = `${this.dir}/state`;
    for (const part of path.dirname(path.relative(d, this.storeDir)).split("/").filter((p) => p !== ".")) {
      d = `${d}/${part}`;
      fs.mkdirSync(d, { mode: 0o755 });
      fs.chownSync(d, st.uid, st.gid);
    }
  }

  async startFake() {
    const portFile = `${this.dir}/fake.port`;
    const p = spawn("python3", [path.join(root, "tests/fakes/upstream.py"), "--port", "0",
      "--port-file", portFile, "--api-key", UPSTREAM_KEY, "--quiet"], { stdio: ["ignore", "ignore", "inherit"] });
    this.procs.push(p);
    this.fake = p;
    await waitFor(() => fs.existsSync(portFile), "fake upstream");
    return Number(fs.readFileSync(portFile, "utf8").trim());
  }

  // A sandbox fake (tests/fakes/NAME.py); resolves to its main port.
  async startPy(name, args) {
    const portFile = `${this.dir}/${name}.port`;
    const p = spawn("python3", [path.join(root, `tests/fakes/${name}.py`), "--port", "0",
      "--port-file", portFile, "--quiet", ...args], { stdio: ["ignore", "ignore", "inherit"] });
    this.procs.push(p);
    await waitFor(() => fs.existsSync(portFile), `fake ${name}`);
    return Number(fs.readFileSync(portFile, "utf8").trim());
  }

  // The test hooks of a sandbox fake: stats, faults, reset.
  async fakeHook(name, hook, body) {
    const port = name === "e2b" ? this.e2bPort : this.osbPort;
    const r = await fetch(`http://127.0.0.1:${port}/__${hook}`, body === undefined ? {} :
      { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return r.status === 204 ? null : r.json();
  }

  async startGateway() {
    const { dir } = this;
    const bin = `${dir}/bin/sandgate-fcgi`;
    const cfgArgs = `--config ${dir}/sandgate.conf --workers ${this.opts.workers ?? "2:8"}`;
    let backend;
    if (this.mode === "listen") {
      const port = await freePort();
      const sock = `${dir}/state/sg.sock`; // state/ is the gateway user's
      const where = this.opts.unixSocket ? sock : `127.0.0.1:${port}`;
      const log = fs.openSync(`${dir}/sandgate.log`, "a");
      const args = [bin, ...cfgArgs.split(" "), "--listen", where];
      let cmd = isRoot ? "setpriv" : args.shift();
      let argv = isRoot ? [`--reuid=${serviceUser}`, `--regid=${serviceUser}`, "--init-groups", ...args] : args;
      if (isRoot && !this.opts.noDelegate) {
        // Start it inside cgroups of its own, given to its user.
        this.cgroups = delegateCgroups(serviceUser);
        const enter = this.cgroups.map((d) => `echo $$ > ${d}/cgroup.procs`).join("; ");
        argv = ["-c", `${enter}; exec "$0" "$@"`, cmd, ...argv];
        cmd = "/bin/sh";
      }
      this.gateway = spawn(cmd, argv, { env: this.env, stdio: ["ignore", log, log] });
      this.procs.push(this.gateway);
      // lighttpd marks a refusing backend down for a while: wait first.
      await waitFor(() => new Promise((res) => {
        const c = this.opts.unixSocket ? net.connect(sock) : net.connect(port, "127.0.0.1");
        c.on("connect", () => { c.destroy(); res(true); });
        c.on("error", () => res(false));
      }), "sandgate --listen");
      backend = this.opts.unixSocket ? `"socket" => "${sock}",` : `"host" => "127.0.0.1", "port" => ${port},`;
      this.fcgiAddr = this.opts.unixSocket ? { path: sock } : { port, host: "127.0.0.1" };
    } else {
      const envs = ["SG_TEST_KEY_ALICE", "ASAN_OPTIONS", "UBSAN_OPTIONS", "SANDGATE_KERNEL_DIR",
        ...Object.keys(this.opts.env ?? {})]
        .map((k) => `"${k}" => "${this.env[k]}"`).join(", ");
      backend = `"socket" => "${dir}/fcgi.sock", "bin-path" => "${bin} ${cfgArgs}",
        "max-procs" => 1, "bin-environment" => ( ${envs} ),`;
      this.fcgiAddr = { path: `${dir}/fcgi.sock-0` }; // lighttpd appends -N
    }
    fs.writeFileSync(`${dir}/lighttpd.conf`, `
server.port = ${this.httpPort}
server.bind = "127.0.0.1"
server.document-root = "${dir}/www"
server.modules += ( "mod_fastcgi" )
server.stream-response-body = 2
server.max-request-size = 16384
$HTTP["url"] =~ "^${this.opts.mount_prefix ?? ""}/(v1/|console(/|$)|mcp$|healthz$|metrics$)" {
  fastcgi.server = ( "/" => (( ${backend} "check-local" => "disable" )) )
}
`);
    // A bin-path backend writes its log lines to lighttpd's stderr.
    const log = fs.openSync(`${dir}/sandgate.log`, "a");
    this.lighttpd = spawn("/usr/sbin/lighttpd", ["-D", "-f", `${dir}/lighttpd.conf`], { stdio: ["ignore", log, log] });
    this.procs.push(this.lighttpd);
  }

  // The sandgate master's pid, its responders', sandboxd's and its
  // background runners' pids, from /proc.
  processes() {
    const bin = `${this.dir}/bin/sandgate-fcgi`;
    const all = procTable().filter((p) => p.cmd.includes(bin) && p.cmd[0] !== "setpriv");
    const pids = new Set(all.map((p) => p.pid));
    const master = all.find((p) => !pids.has(p.ppid));
    const children = all.filter((p) => p.ppid === master?.pid);
    return { master: master?.pid, responders: children.filter((p) => !p.comm.startsWith("sg-")).map((p) => p.pid),
      sandboxd: children.find((p) => p.comm === "sg-sandboxd")?.pid,
      runners: children.filter((p) => p.comm === "sg-runner").map((p) => p.pid) };
  }

  // The local sandboxes' directory of this gateway's sandboxd: one per
  // master, in local/ beside the store.
  localDir() {
    return `${this.storeDir}/local/m${this.processes().master}`;
  }

  // Stop the gateway (lighttpd stops its bin-path backend; a --listen one
  // is ours to stop; its sandboxd and every local sandbox go with it) and
  // start it again on the same store and port.
  async restart(stopMs = 30000) {
    const { master } = this.processes();
    this.lighttpd.kill("SIGTERM");
    if (this.mode === "listen") process.kill(master, "SIGTERM");
    await waitFor(() => !this.processes().master, "the gateway to stop", stopMs);
    if (this.lighttpd.exitCode === null && this.lighttpd.signalCode === null)
      await new Promise((r) => this.lighttpd.once("exit", r));
    const cgroups = this.cgroups ?? [];
    await this.startGateway();
    this.cgroups = [...cgroups, ...(this.cgroups ?? [])];
    await waitFor(async () => (await fetch(this.url("/healthz"))).status === 200, "the new gateway", 20000);
    if (this.processes().master === master) throw new Error("the same master after a restart");
  }

  // Rewrite the running config with edit and SIGHUP the master; resolves
  // once every responder runs the new one.
  async reload(edit) {
    const cfgPath = `${this.dir}/sandgate.conf`;
    fs.writeFileSync(cfgPath, edit(fs.readFileSync(cfgPath, "utf8")));
    const { master, responders: old } = this.processes();
    process.kill(master, "SIGHUP");
    await waitFor(() => {
      const now = this.processes().responders;
      return now.length >= 2 && now.every((p) => !old.includes(p));
    }, "every responder replaced");
  }

  log() {
    try {
      return fs.readFileSync(`${this.dir}/sandgate.log`, "utf8");
    } catch {
      return "";
    }
  }

  async fakeRequests() {
    const r = await fetch(`http://127.0.0.1:${this.fakePort}/__requests`);
    return (await r.json()).requests;
  }

  async resetFake() {
    await fetch(`http://127.0.0.1:${this.fakePort}/__reset`, { method: "POST" });
  }

  // One request with a Bearer key: {status, json (or null), text, headers}.
  // A sandbox of this tool (201), and one run in it (200): what most
  // sandbox tests start with.
  async newSandbox(tool) {
    const r = await this.call("POST", "/v1/sandboxes", { tool });
    if (r.status !== 201) throw new Error(`POST /v1/sandboxes ${tool}: ${r.status} ${r.text}`);
    return r.json.id;
  }

  async runCode(id, code, timeout) {
    const r = await this.call("POST", `/v1/sandboxes/${id}/code`, { code, ...(timeout ? { timeout } : {}) });
    if (r.status !== 200) throw new Error(`run in ${id}: ${r.status} ${r.text}`);
    return r.json;
  }

  async call(method, p, body, key = KEYS.alice) {
    const r = await fetch(this.url(p), {
      method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: r.status, json, text, headers: r.headers };
  }

  url(p) {
    return `${this.base}${this.opts.mount_prefix ?? ""}${p}`;
  }

  // Sanitizer reports written by any gateway process so far.
  sanitizerReports() {
    return fs.readdirSync(`${this.dir}/san`).map((f) => fs.readFileSync(`${this.dir}/san/${f}`, "utf8"));
  }

  async stop() {
    const { master } = this.processes();
    // lighttpd stops its bin-path backend; a --listen one is ours to stop.
    for (const p of this.procs.reverse()) if (p.exitCode === null) p.kill("SIGTERM");
    if (master) try { process.kill(master, "SIGTERM"); } catch { /* gone */ }
    await waitFor(() => !this.processes().master, "sandgate to stop", 10000).catch(() => {});
    await Promise.all(this.procs.map((p) => p.exitCode !== null || p.signalCode ? null :
      new Promise((r) => p.once("exit", r))));
    const reports = this.dir && fs.existsSync(`${this.dir}/san`) ? this.sanitizerReports() : [];
    for (const d of this.cgroups ?? []) removeCgroup(d);
    if (this.localHome && !this.stopped) dropGatewayGroups(this);
    if (this.dir && !process.env.SG_KEEP) fs.rmSync(this.dir, { recursive: true, force: true });
    // The database goes with the last stack using it (SG_KEEP keeps it).
    let dropped = null;
    const live = this.storeUrl && !this.stopped ? pgLive.get(this.storeUrl) : null;
    this.stopped = true;
    if (live && --live.stacks === 0) {
      pgLive.delete(this.storeUrl);
      if (live.drop && !process.env.SG_KEEP) {
        try {
          psql(pgMaintenance, `DROP DATABASE IF EXISTS ${live.drop} WITH (FORCE)`);
        } catch (e) { dropped = e; }
      }
    }
    if (reports.length) throw new Error("sanitizer reports:\n" + reports.join("\n"));
    if (dropped) throw dropped;
  }
}

// The directory of our own cgroup in each cgroup v1 hierarchy of ctls.
function ownCgroups(ctls) {
  const mounts = fs.readFileSync("/proc/self/mountinfo", "utf8").split("\n");
  const self = fs.readFileSync("/proc/self/cgroup", "utf8").split("\n");
  const out = [];
  for (const ctl of ctls) {
    const m = mounts.map((l) => l.split(" - ")).find(([, tail]) => tail?.startsWith("cgroup ") &&
      tail.split(" ")[2].split(",").includes(ctl));
    const line = self.find((l) => l.split(":")[1]?.split(",").includes(ctl));
    if (!m || !line) continue;
    const [, , , root, mnt] = m[0].split(" ");
    let own = line.split(":").slice(2).join(":");
    if (root !== "/" && own.startsWith(root)) own = own.slice(root.length);
    out.push(path.join(mnt, own));
  }
  return out;
}

// Stacks running on each store (its local/ directory): the gateways of
// one store share the cgroup v1 group a root-started one makes in its
// own cgroups (sandgate-UID-HASH, HASH of that directory), and the last
// of them to stop removes it, as it would outlive the test's directory.
const storeStacks = new Map();
function dropGatewayGroups(stack) {
  const left = storeStacks.get(stack.localHome) - 1;
  if (left > 0) return void storeStacks.set(stack.localHome, left);
  storeStacks.delete(stack.localHome);
  const name = new RegExp(`^sandgate-\\d+-${sha256(stack.localHome).slice(0, 12)}$`);
  for (const own of isRoot ? ownCgroups(["memory", "pids", "cpu"]) : [])
    for (const g of fs.readdirSync(own).filter((f) => name.test(f))) removeCgroup(path.join(own, g));
}

// A cgroup per v1 controller, given to user: what systemd's Delegate=yes
// does for a service.
export function delegateCgroups(user) {
  const { uid, gid } = ids(user);
  const name = "sgtest-" + crypto.randomBytes(4).toString("hex");
  const dirs = [];
  for (const own of ownCgroups(["memory", "pids", "cpu"])) {
    const d = path.join(own, name);
    fs.mkdirSync(d);
    for (const f of ["", "cgroup.procs", "tasks"]) fs.chownSync(path.join(d, f), uid, gid);
    dirs.push(d);
  }
  return dirs;
}

// Remove a cgroup and the groups in it, deepest first.
export function removeCgroup(d) {
  let subs = [];
  try {
    subs = fs.readdirSync(d, { withFileTypes: true }).filter((e) => e.isDirectory());
  } catch { return; }
  for (const e of subs) removeCgroup(path.join(d, e.name));
  try { fs.rmdirSync(d); } catch { /* busy or gone */ }
}

// One request on stack with a raw body, bounded in time: {status, json,
// text, headers}.
export async function request(stack, method, p, { key = KEYS.alice, body, ms = 15000 } = {}) {
  const headers = key ? { authorization: `Bearer ${key}` } : {};
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(stack.url(p), { method, headers, body, signal: AbortSignal.timeout(ms) });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, json, text, headers: r.headers };
}

// A slow stream holding one responder on a heavy route (the fake's
// "slowstream": words 0.4 s apart, cut short by stop()); resolves once its
// first bytes are in, so it runs, not waits. { ended, stop(), done }.
export async function holdStream(stack, key, words = 40) {
  const ctrl = new AbortController();
  const text = Array.from({ length: words }, (_, i) => `w${i}`).join(" ");
  const r = await fetch(stack.url("/v1/chat/completions"), {
    method: "POST", signal: ctrl.signal,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "slowstream", stream: true, messages: [{ role: "user", content: text }] }),
  });
  if (r.status !== 200) throw new Error(`a hold stream did not start: ${r.status} ${await r.text()}`);
  const reader = r.body.getReader();
  await reader.read();
  const h = { ended: false, stop: () => ctrl.abort() };
  h.done = (async () => {
    try { while (!(await reader.read()).done); } catch { /* aborted */ }
    h.ended = true;
  })();
  return h;
}

// Stop holdStream()s; resolves once each has ended at the client.
export async function stopHolds(holds) {
  for (const h of holds) h.stop();
  await Promise.all(holds.map((h) => h.done));
}

// Python for a sandbox: n children each map 150 MiB of shared memory
// (MAP_SHARED: no rlimit counts it) and say so once they hold it all; it
// prints how many did, and how many of them ended well. Under a memory
// limit of 256 MiB at most one can.
export function sharedMemoryBomb(n) {
  return `import mmap, os, time
r, w = os.pipe()
kids = []
for i in range(${n}):
    pid = os.fork()
    if pid == 0:
        held = []
        for step in range(15):
            m = mmap.mmap(-1, 10 << 20)
            m.write(b'x' * (10 << 20))
            held.append(m)
        os.write(w, b'1')
        time.sleep(3)
        os._exit(0)
    kids.append(pid)
os.close(w)
full = 0
while True:
    b = os.read(r, 16)
    if not b:
        break
    full += len(b)
ends = [os.waitpid(p, 0)[1] for p in kids]
print(full, sum(1 for s in ends if s == 0))`;
}

// Parse an SSE body into [{event, data}] (what a test compares).
export function sseEvents(text) {
  return text.split(/\r\n\r\n|\n\n|\r\r/).filter((b) => b.trim()).map((b) => {
    const lines = b.split(/\r\n|\n|\r/);
    const ev = lines.find((l) => l.startsWith("event:"));
    const data = lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
    return { event: ev ? ev.slice(6).trim() : null, data };
  });
}

// One live process from /proc (null when gone or a zombie): pid, ppid,
// start (clock ticks since boot), comm, cmd (argv), uid.
export function procOf(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (f[0] === "Z") return null;
    const uid = Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
    return { pid: Number(pid), ppid: Number(f[1]), start: f[19], comm: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
      cmd: fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean), uid };
  } catch { return null; }
}

// Every live process on the host, as procOf gives them.
export const procTable = () => fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)).map(procOf).filter(Boolean);

// The sandgate command on stack's config, as the gateway's user (root
// runs drop to it): its standard output.
export function sandgateCli(stack, ...args) {
  const cmd = [`${stack.dir}/bin/sandgate`, "--config", `${stack.dir}/sandgate.conf`, ...args];
  return execFileSync(isRoot ? "setpriv" : cmd.shift(), isRoot ? [`--reuid=${serviceUser}`,
    `--regid=${serviceUser}`, "--init-groups", ...cmd] : cmd, { env: stack.env }).toString();
}

// A sweep by hand (sandgate reap) as stack's box, retried while a reaper
// child holds the lease (they sweep every 30 s): its output.
export async function reapNow(stack) {
  for (let i = 0; i < 50; i++) {
    const out = sandgateCli(stack, "reap");
    if (!out.startsWith("skipped")) return out;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("the reaper lease was never free");
}

export async function startStack(opts) {
  return new Stack(opts).start();
}

// The fakes alone, for a test whose gateway is started by someone else (a
// web server that spawns it, say): the fake upstream and, with e2b, the
// e2b fake, their port files in dir. Resolves to { fakePort, e2bPort,
// e2bTool (a sandbox_tools entry named "e2b" for gatewayConfig's
// sandboxTools), fakeHook(name, hook, body), stop() }.
export async function startFakes(dir, { e2b = false } = {}) {
  const s = new Stack({});
  s.dir = dir;
  const stop = async () => {
    for (const p of s.procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGTERM");
    await Promise.all(s.procs.map((p) => p.exitCode !== null || p.signalCode ? null :
      new Promise((r) => p.once("exit", r))));
  };
  try {
    s.fakePort = await s.startFake();
    if (e2b) s.e2bPort = await s.startPy("e2b", ["--api-key", E2B_KEY]);
  } catch (e) {
    await stop();
    throw e;
  }
  const base = `http://127.0.0.1:${s.e2bPort}`;
  return {
    fakePort: s.fakePort, e2bPort: s.e2bPort, stop,
    e2bTool: e2b ? `{ name = "e2b"; provider = "e2b"; api_key = "${E2B_KEY}"; api_base = "${base}"; sandbox_url = "${base}"; }` : null,
    fakeHook: (name, hook, body) => s.fakeHook(name, hook, body),
  };
}
