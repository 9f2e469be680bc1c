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
