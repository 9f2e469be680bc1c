// Safe to install and to run beside other things: what tests/install-deps.sh
// installs for `make run` and for `make test` and which services it touches
// (run against stand-ins for apt-get, dpkg-query and systemctl: nothing is
// installed, nothing on this host is started or stopped), that the shipped
// etc/sandgate.conf lets no one in, that a backup is as private as the
// store even in a directory others can write, that a revoked key's
// sessions are found by its name, and that a change of server.user does
// not leave the local sandboxes unable to start.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { root, freePort, waitFor, startStack, serviceUser, storeKind, sandgateCli } from "./harness.mjs";
import { fcgiRequest, fcgiConn } from "./fcgi-client.mjs";

const isRoot = process.getuid() === 0;
const build = path.resolve(root, process.env.SG_BUILD || "build");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- tests/install-deps.sh ----

// The packages each mode asks for, read from the script itself.
const script = fs.readFileSync(path.join(root, "tests/install-deps.sh"), "utf8");
const listOf = (name) => new RegExp(`^${name}="([^"]*)"`, "m").exec(script)?.[1].split(/\s+/).filter(Boolean) ?? [];
const SERVE = listOf("serve");
const TEST_ONLY = listOf("test");
const SERVICES = ["lighttpd", "nginx", "apache2", "postgresql"];

// A machine of stand-ins: dpkg-query answers from installed, apt-get logs
// and "installs" (a package named like a service brings its unit),
// systemctl and npm log, sudo runs its command. Units live in units/.
function fakeMachine() {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "sgdeps-"));
  for (const sub of ["bin", "units"]) fs.mkdirSync(`${d}/${sub}`);
  fs.writeFileSync(`${d}/installed`, "");
  fs.writeFileSync(`${d}/log`, "");
  const stub = (name, body) => fs.writeFileSync(`${d}/bin/${name}`, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  stub("dpkg-query", `p=$(eval echo "\\$$#"); grep -qx "$p" ${d}/installed && printf 'install ok installed' || exit 1`);
  stub("apt-get", `echo "apt-get $*" >> ${d}/log
[ -e ${d}/policy-rc.d ] && echo "policy-rc.d present" >> ${d}/log
[ "$1" = update ] && exit 0
for p in "$@"; do
  case $p in -*|install) continue ;; esac
  echo "$p" >> ${d}/installed
  case " ${SERVICES.join(" ")} " in *" $p "*) touch ${d}/units/$p.service ;; esac
done`);
  stub("systemctl", `echo "systemctl $*" >> ${d}/log`);
  stub("npm", `echo "npm $*" >> ${d}/log`);
  stub("sudo", `exec "$@"`);
  const run = (mode) => {
    const r = spawnSync("sh", [path.join(root, "tests/install-deps.sh"), ...(mode ? [mode] : [])], {
      encoding: "utf8", timeout: 60000,
      env: { ...process.env, PATH: `${d}/bin:${process.env.PATH}`, SG_DEPS_UNIT_DIRS: `${d}/units`, SG_DEPS_POLICY_RC: `${d}/policy-rc.d` },
    });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const log = fs.readFileSync(`${d}/log`, "utf8").split("\n").filter(Boolean);
    fs.writeFileSync(`${d}/log`, "");
    const install = log.find((l) => l.startsWith("apt-get install"));
    return {
      out: r.stdout,
      log,
      installed: install ? install.split(" ").slice(2).filter((a) => !a.startsWith("-")) : [],
      systemctl: log.filter((l) => l.startsWith("systemctl")),
    };
  };
  return { d, run, has: (p) => fs.readFileSync(`${d}/installed`, "utf8").split("\n").includes(p),
    unit: (s) => fs.writeFileSync(`${d}/units/${s}.service`, ""), done: () => fs.rmSync(d, { recursive: true, force: true }) };
}

describe("tests/install-deps.sh", () => {
  test("the script lists what serving needs apart from what only the tests need", () => {
    for (const p of ["build-essential", "libfcgi-dev", "libpq-dev", "lighttpd", "bubblewrap", "python3"]) assert.ok(SERVE.includes(p), p);
    for (const p of ["nginx", "apache2", "postgresql", "valgrind", "libcmocka-dev"]) {
      assert.ok(!SERVE.includes(p), `${p} is not needed to serve`);
      assert.ok(TEST_ONLY.includes(p), `${p} is for make test`);
    }
    // make run asks for that set; make test for all of it.
    const mk = fs.readFileSync(path.join(root, "Makefile"), "utf8");
    assert.match(/^run:.*\n((?:\t.*\n)+)/m.exec(mk)?.[1] ?? "", /install-deps\.sh serve/);
    assert.match(mk, /^test: deps$/m);
    assert.match(mk, /^deps:\n\t@sh tests\/install-deps\.sh\n/m);
  });

  test("make run's install: the serving packages only, and no service it did not bring is touched", () => {
    const m = fakeMachine();
    try {
      // The host's own nginx, there before (running or not: not ours).
      m.unit("nginx");
      const r = m.run("serve");
      assert.deepEqual(r.installed.sort(), [...SERVE].sort());
      assert.ok(r.log.includes("policy-rc.d present"), "services kept from starting during the install");
      assert.ok(!fs.existsSync(`${m.d}/policy-rc.d`), "our policy-rc.d is gone after");
      // lighttpd came with this run: disabled at boot; nothing else.
      assert.deepEqual(r.systemctl, ["systemctl disable --now lighttpd"]);
      assert.ok(!r.log.some((l) => l.startsWith("npm")), "no npm for make run");
      // Everything there: nothing to do at all.
      const again = m.run("serve");
      assert.deepEqual(again.log, []);
    } finally {
      m.done();
    }
  });

  test("make test's install: the rest; services that were there before (ours from an earlier run too) are left alone", () => {
    const m = fakeMachine();
    try {
      m.unit("nginx");
      m.run("serve"); // lighttpd: installed by an earlier run
      const r = m.run(); // make test (deps)
      assert.deepEqual(r.installed.sort(), [...TEST_ONLY].sort());
      assert.deepEqual(r.systemctl.sort(), ["systemctl disable --now apache2", "systemctl disable --now postgresql"]);
      for (const p of [...SERVE, ...TEST_ONLY]) assert.ok(m.has(p), p);
      assert.deepEqual(m.run().systemctl, [], "a run that installs nothing touches no service");
    } finally {
      m.done();
    }
  });
});

// ---- a gateway of our own config, sandgate-fcgi --listen on loopback ----
// (its store a SQLite file whatever SG_PG says: these tests are about
// files on this host)

// A directory others may enter (the service users read the binaries and
// the kernel there), with our copies of both.
function workDir(prefix) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(d, 0o755);
  for (const sub of ["bin", "kernel", "state"]) fs.mkdirSync(`${d}/${sub}`, { mode: 0o755 });
  for (const b of ["sandgate-fcgi", "sandgate"]) fs.copyFileSync(`${build}/${b}`, `${d}/bin/${b}`);
  for (const b of ["sandgate-fcgi", "sandgate"]) fs.chmodSync(`${d}/bin/${b}`, 0o755);
  for (const f of ["kernel.py", "sg_cells.py", "sg_ipython.py", "sg_mpl.py"])
    fs.copyFileSync(path.join(root, "providers/sandboxd/kernel", f), `${d}/kernel/${f}`);
  return d;
}

const live = new Set();
process.on("exit", () => { for (const p of live) try { p.kill("SIGKILL"); } catch { /* gone */ } });

// Started as we are: as root its responders and sandboxd drop to
// server.user. ask(method, uri, {key, body}) → {status, text}.
async function gateway(dir, name, conf) {
  fs.writeFileSync(`${dir}/${name}.conf`, conf);
  const port = await freePort();
  const logPath = `${dir}/${name}.log`;
  const out = fs.openSync(logPath, "a");
  const p = spawn(`${dir}/bin/sandgate-fcgi`, ["--config", `${dir}/${name}.conf`, "--listen", `127.0.0.1:${port}`],
    { env: { ...process.env, SANDGATE_KERNEL_DIR: `${dir}/kernel` }, stdio: ["ignore", out, out] });
  fs.closeSync(out);
  live.add(p);
  p.once("exit", () => live.delete(p));
  const g = { p, log: () => fs.readFileSync(logPath, "utf8") };
  g.ask = async (method, uri, { key = "", body = "" } = {}) => {
    const c = fcgiConn({ host: "127.0.0.1", port });
    try {
      const text = await Promise.race([c.send(fcgiRequest(method, uri, { key, body })),
        sleep(60000).then(() => { throw new Error(`${method} ${uri}: no answer in 60 s`); })]);
      return { status: Number(/^Status: (\d+)/.exec(text)?.[1] ?? 200), text };
    } finally {
      c.s.destroy();
    }
  };
  g.stop = async (signal = "SIGTERM") => {
    if (p.exitCode === null && p.signalCode === null) {
      const gone = new Promise((r) => p.once("exit", r));
      p.kill(signal);
      const t = setTimeout(() => p.kill("SIGKILL"), 15000);
      await gone;
      clearTimeout(t);
    }
    // An ASan+UBSan build (SG_BUILD=build/asan) reports here.
    assert.doesNotMatch(g.log(), /Sanitizer|runtime error:/, g.log());
  };
  try {
    await waitFor(async () => {
      if (p.exitCode !== null) throw new Error(`sandgate-fcgi exited ${p.exitCode}`);
      return (await g.ask("GET", "/healthz")).status === 200;
    }, `${name}: /healthz`, 20000);
  } catch (e) {
    await g.stop("SIGKILL");
    throw new Error(`${e.message}\n${g.log()}`);
  }
  return g;
}

// ---- the shipped etc/sandgate.conf ----

describe("the shipped etc/sandgate.conf", () => {
  const shipped = fs.readFileSync(path.join(root, "etc/sandgate.conf"), "utf8");
  const noKeys = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SANDGATE_KEY_")));

  test("check-config names every key still without a secret, and how to go on", () => {
    const r = spawnSync(`${build}/sandgate`, ["--config", path.join(root, "etc/sandgate.conf"), "check-config"],
      { encoding: "utf8", timeout: 20000, env: noKeys });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    const names = [...shipped.matchAll(/^[^#\n]*\{ name = "([^"]+)"; key/gm)].map((m) => m[1]);
    assert.ok(names.length >= 1, "the sample shows config keys");
    assert.match(r.stderr, new RegExp(`${names.length} of the ${names.length} keys of \\S+ have no secret yet and let no one in`));
    assert.match(r.stderr, /sandgate keys create NAME/);
    assert.doesNotMatch(shipped, /^[^#\n]*key_sha256\s*=/m, "no key's hash ships");
  });

  // The attack: the sample's ci key was SHA-256("foo"). Served as shipped
  // (only the store's path and the user are ours), no guess gets in.
  test("served as shipped, it lets no one in: not 'foo', not a placeholder's text", { timeout: 90000 }, async () => {
    const dir = workDir("sgconf-");
    let g;
    try {
      const conf = shipped.replace(/path = "\/var\/lib\/sandgate\/sandgate\.db"/, `path = "${dir}/state/store/sandgate.db"`)
        .replace(/user = "www-data";/, `user = "${serviceUser}";`).replace(/workers = \[\d+, \d+\];/, "workers = [1, 2];");
      assert.notEqual(conf, shipped);
      g = await gateway(dir, "shipped", conf);
      for (const key of ["foo", "", "env:SANDGATE_KEY_ALICE", "file:/etc/sandgate/ci.key", "sk-placeholder"]) {
        const r = await g.ask("GET", "/v1/models", { key });
        assert.equal(r.status, 401, `key ${JSON.stringify(key)}: ${r.text.slice(0, 300)}`);
      }
    } finally {
      await g?.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---- sandgate backup ----

describe("sandgate backup", { skip: storeKind !== "sqlite" && "the store is a SQLite file only without SG_PG" }, () => {
  let stack, drop;
  before(async () => {
    stack = await startStack({});
    sandgateCli(stack, "keys", "create", "backed-up");
    // A directory others may write (not sticky): a shared drop box.
    drop = fs.mkdtempSync(path.join(os.tmpdir(), "sgdrop-"));
    fs.chmodSync(drop, 0o777);
  });
  after(async () => {
    if (drop) fs.rmSync(drop, { recursive: true, force: true });
    await stack?.stop();
  });

  const backup = (copy, wrap = []) => {
    const argv = [...wrap, `${stack.dir}/bin/sandgate`, "--config", `${stack.dir}/sandgate.conf`, "backup", copy];
    return spawnSync(argv[0], argv.slice(1), { encoding: "utf8", timeout: 60000, env: stack.env });
  };

  test("the copy gets the store's mode and owner, whatever the umask", () => {
    const store = fs.statSync(`${stack.storeDir}/sandgate.db`);
    assert.equal(store.mode & 0o777, 0o600);
    const copy = `${drop}/mode.db`;
    const r = backup(copy);
    assert.equal(r.status, 0, r.stderr);
    const st = fs.statSync(copy);
    assert.equal(st.mode & 0o777, store.mode & 0o777, `copy ${(st.mode & 0o777).toString(8)}`);
    assert.equal(st.uid, store.uid);
    assert.deepEqual(fs.readdirSync(drop), ["mode.db"], "nothing else left beside it");
    const rows = spawnSync("sqlite3", [copy, "SELECT name FROM keys"], { encoding: "utf8" });
    assert.match(rows.stdout, /^backed-up$/m);
    // Another user cannot read it.
    if (isRoot) {
      const peek = spawnSync("setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "cat", copy], { encoding: "utf8" });
      assert.notEqual(peek.status, 0, "nobody read the copy");
    }
    fs.rmSync(copy);
  });

  // The attack: in a directory others can write, another user makes the
  // temporary file first (a file of theirs, world-writable) whenever it
  // is missing. The backup once wrote the copy into it and renamed it
  // into place: the copy, key hashes and all, was the attacker's. Its name
  // was COPY.tmp-PID: in a PID namespace of its own the backup is pid 1.
  test("another user racing to make the temporary file first never gets the copy", {
    skip: !isRoot && "needs root (unshare --pid, another user)", timeout: 120000 }, async () => {
    const copy = `${drop}/race.db`;
    const attacker = spawn("setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", "-c", `
import os, time
end = time.time() + 60
while time.time() < end:
    try:
        os.close(os.open(${JSON.stringify(`${copy}.tmp-1`)}, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        os.chmod(${JSON.stringify(`${copy}.tmp-1`)}, 0o666)
    except FileExistsError:
        pass
`], { stdio: "ignore" });
    live.add(attacker);
    try {
      await waitFor(() => fs.existsSync(`${copy}.tmp-1`), "the attacker's file", 10000);
      const nobody = Number(spawnSync("id", ["-u", "nobody"], { encoding: "utf8" }).stdout.trim());
      const modes = new Set(), failed = [];
      for (let i = 0; i < 20; i++) {
        const r = backup(copy, ["unshare", "--pid", "--fork"]);
        const st = fs.statSync(copy, { throwIfNoEntry: false });
        assert.notEqual(st?.uid, nobody, `backup ${i}: the copy is the attacker's`);
        assert.equal(fs.statSync(`${copy}.tmp-1`).size, 0, `backup ${i}: the attacker's file got the store`);
        if (r.status !== 0) failed.push(r.stderr);
        if (st) modes.add((st.mode & 0o777).toString(8));
        fs.rmSync(copy, { force: true });
        await sleep(20);
      }
      assert.deepEqual(failed, [], "the attacker's files never stopped a backup");
      assert.deepEqual([...modes], ["600"]);
    } finally {
      attacker.kill("SIGKILL");
      live.delete(attacker);
    }
  });
});

// ---- sessions of a revoked key ----

describe("sessions of a revoked key", () => {
  let stack;
  before(async () => { stack = await startStack({}); });
  after(async () => { await stack?.stop(); });

  test("sessions list and purge --key find a revoked key by its name and say it is revoked; list has a header", { timeout: 90000 }, async () => {
    const key = sandgateCli(stack, "keys", "create", "gone").trim();
    const r = await stack.call("POST", "/v1/responses", { model: "ci-turn", input: JSON.stringify({ code: "x = 1" }),
      tools: [{ type: "code_interpreter", container: { type: "auto" } }], metadata: { session_id: "left-behind" } }, key);
    assert.equal(r.status, 200, r.text);
    const live = stack.sql("SELECT tenant, sandbox_id FROM sessions WHERE session_id = 'left-behind'");
    assert.equal(live.length, 1);
    sandgateCli(stack, "keys", "revoke", "gone");

    const list = sandgateCli(stack, "sessions", "list", "--key", "gone");
    assert.match(list, /is revoked/);
    assert.match(list, /^KEY\s+SESSION\s+SANDBOX\s+TOOL\s+STATE\s+USED\s+EXPIRES$/m);
    assert.match(list, /^gone\(revoked\)\s+left-behind\s+cntr_/m);
    assert.match(sandgateCli(stack, "sessions", "list"), /^KEY\s+SESSION/m);

    const purge = sandgateCli(stack, "sessions", "purge", "--key", "gone");
    assert.match(purge, /key gone \([0-9a-f]{12}…\) is revoked/);
    assert.match(purge, /purged 1 sessions, 0 failed/);
    assert.deepEqual(stack.sql("SELECT session_id FROM sessions WHERE session_id = 'left-behind'"), []);
    assert.deepEqual(stack.sql(`SELECT id FROM sandboxes WHERE id = '${live[0].sandbox_id}'`), [], "its sandbox went with it");
    // A name no key ever had is still an error.
    assert.throws(() => sandgateCli(stack, "sessions", "purge", "--key", "never"), /no key named never/);
  });
});

// ---- server.user changed between two starts ----

const users = isRoot && ["nobody", serviceUser].every((u) => spawnSync("id", [u]).status === 0);
describe("local sandboxes after server.user changed", { skip: !users && "needs root, and the users nobody and SG_USER" }, () => {
  const conf = (dir, user) => `
server: { workers = [1, 2]; user = "${user}"; grace = 2; };
store: { path = "${dir}/state/store/sandgate.db"; };
auth: { allow_anonymous = true; };
models = ( { name = "m"; api_base = "http://127.0.0.1:9/v1"; api_key = "x"; } );
sandbox_tools = ( { name = "local"; provider = "local"; memory_mb = 256; disk_mb = 16; max_procs = 32;
  limits = "process"; } );
`;
  const started = /^sandgate: sandboxd: bubblewrap/m; // its first line once it runs
  // The store made over to the new user as its own error asks ("cannot
  // open: Permission denied"): its directory and files, not what is in
  // local/.
  const giveStore = (dir, user) => {
    const s = `${dir}/state/store`;
    for (const f of [s, ...fs.readdirSync(s).filter((n) => n.startsWith("sandgate.db")).map((n) => `${s}/${n}`)])
      spawnSync("chown", [`${user}:`, f]);
  };
  const runsCode = async (g) => {
    const r = await g.ask("POST", "/v1/code", { body: JSON.stringify({ tool: "local", code: "print(6*7)" }) });
    assert.equal(r.status, 200, r.text + g.log());
    assert.match(r.text, /"stdout":"42\\n"/);
  };

  test("a runtime directory the earlier user left empty is made anew: sandboxd starts", { timeout: 120000 }, async () => {
    const dir = workDir("sguser-");
    try {
      const a = await gateway(dir, "a", conf(dir, "nobody"));
      await waitFor(() => started.test(a.log()), "sandboxd as nobody", 20000);
      await a.stop();
      assert.equal(fs.statSync(`${dir}/state/store/local`).uid, Number(spawnSync("id", ["-u", "nobody"], { encoding: "utf8" }).stdout));
      giveStore(dir, serviceUser);
      const b = await gateway(dir, "b", conf(dir, serviceUser));
      try {
        await waitFor(() => started.test(b.log()), "sandboxd as the new user", 20000)
          .catch((e) => { throw new Error(`${e.message}\n${b.log()}`); });
        assert.doesNotMatch(b.log(), /cannot start/);
        await runsCode(b);
        const st = fs.statSync(`${dir}/state/store/local`);
        assert.equal(st.uid, Number(spawnSync("id", ["-u", serviceUser], { encoding: "utf8" }).stdout));
        assert.equal(st.mode & 0o777, 0o700);
      } finally {
        await b.stop();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("one the earlier user's killed sandboxd left full: the log says exactly what to run, and that is enough", { timeout: 180000 }, async () => {
    const dir = workDir("sguser-");
    try {
      const a = await gateway(dir, "a", conf(dir, "nobody"));
      await waitFor(() => started.test(a.log()), "sandboxd as nobody", 20000);
      // Killed, sandboxd and then its master: nothing is cleaned up.
      // (Master first, sandboxd could take the master's death for a stop
      // and tidy up before its own SIGKILL lands.)
      const sbxd = spawnSync("pgrep", ["-P", String(a.p.pid), "-x", "sg-sandboxd"], { encoding: "utf8" }).stdout.trim();
      assert.ok(sbxd, "sandboxd's pid");
      spawnSync("kill", ["-KILL", sbxd, String(a.p.pid)]);
      await a.stop();
      assert.notDeepEqual(fs.readdirSync(`${dir}/state/store/local`), [], "a killed sandboxd's leftovers");
      giveStore(dir, serviceUser);
      const b = await gateway(dir, "b", conf(dir, serviceUser));
      try {
        let cmd;
        await waitFor(() => (cmd = /as root, run: (.*)$/m.exec(b.log())?.[1]), "the advice", 20000)
          .catch((e) => { throw new Error(`${e.message}\n${b.log()}`); });
        assert.match(b.log(), /runtime directory \S+\/local: Permission denied \(it is uid \d+'s\); it must be \S+'s/);
        assert.equal(cmd, `rm -rf -- '${dir}/state/store/local'`);
        assert.equal(spawnSync("sh", ["-c", cmd]).status, 0);
        // The next try (its back-off is 1, 2, 4... s) starts.
        await waitFor(() => started.test(b.log()), "sandboxd after the advice was followed", 40000)
          .catch((e) => { throw new Error(`${e.message}\n${b.log()}`); });
        await runsCode(b);
      } finally {
        await b.stop();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
