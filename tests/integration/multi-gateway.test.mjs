// Several gateways on one host: two started by root (lighttpd's bin-path)
// in the same cgroup, their responders running as two different users,
// both running local code side by side and restarted in turn. Each must
// keep a cgroup v1 group of its own, given to its own user, with every
// sandbox's limits in force: when they shared one, the second to start
// took it over and the other's sandboxes failed ("502 cannot set the
// sandbox's cgroup limits: Permission denied") until it restarted, which
// broke the second. Each sandbox's kernel runs under a uid of its own from
// one range every gateway on the host shares: two gateways creating
// sandboxes at the same moment once both took the first uid no process
// ran yet, and two tenants' sandboxes ran as one uid (one RLIMIT_NPROC).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Stack, waitFor, serviceUser, procOf, procTable, sharedMemoryBomb } from "./harness.mjs";

const isRoot = process.getuid() === 0;
const otherUser = process.env.SG_USER2 || "sgtest2";
const small = `{ name = "small"; provider = "local"; memory_mb = 256; disk_mb = 16; max_procs = 32; }`;

// The cgroup v1 directory pid is in for controller ctl ("" when none).
function cgroupDir(pid, ctl) {
  const mount = fs.readFileSync("/proc/self/mountinfo", "utf8").split("\n").map((l) => l.split(" - "))
    .find(([, tail]) => tail?.startsWith("cgroup ") && tail.split(" ")[2].split(",").includes(ctl));
  const line = fs.readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n")
    .find((l) => l.split(":")[1]?.split(",").includes(ctl));
  if (!mount || !line) return "";
  const [, , , root, mnt] = mount[0].split(" ");
  let own = line.split(":").slice(2).join(":");
  if (root !== "/" && own.startsWith(root)) own = own.slice(root.length);
  return path.join(mnt, own);
}

// Why this host cannot show the problem, or null: root may make groups
// in its own memory and pids cgroups.
function unusable() {
  if (!isRoot) return "needs root (gateways started by root share the host's cgroups)";
  for (const ctl of ["memory", "pids"]) {
    const own = cgroupDir(process.pid, ctl);
    if (!own) return `no cgroup v1 ${ctl} hierarchy (v2 gives each service its own delegated cgroup)`;
    const probe = path.join(own, `sgprobe-${crypto.randomBytes(4).toString("hex")}`);
    try {
      fs.mkdirSync(probe);
      fs.rmdirSync(probe);
    } catch (e) {
      return `cgroup v1 ${ctl} at ${own} is not writable here (${e.code})`;
    }
  }
  return null;
}
const skip = unusable();

const uidOf = (user) => Number(execFileSync("id", ["-u", user], { timeout: 10000 }).toString().trim());

// A root-started gateway whose responders (and sandboxes' owner) are
// user: the harness's config and key file, given to user.
class UserStack extends Stack {
  constructor(user, opts = {}) {
    super({ ...opts, start: "binpath" });
    this.user = user;
  }

  async startGateway() {
    const cfg = `${this.dir}/sandgate.conf`;
    fs.writeFileSync(cfg, fs.readFileSync(cfg, "utf8").replace(/^(\s*user = )"[^"]*";/m, `$1"${this.user}";`));
    fs.chownSync(`${this.dir}/carol.key`, uidOf(this.user), Number(execFileSync("id", ["-g", this.user]).toString()));
    return super.startGateway();
  }

  starts() {
    return this.log().match(/sandboxd: limits: .*/g) ?? [];
  }

  // This gateway's group in the memory hierarchy, from its last start's
  // log line ("limits: cgroup v1 (memory, pids...) under DIR").
  group() {
    const all = this.starts();
    const m = /^sandboxd: limits: cgroup v1 \(memory, pids.*\) under (\S+)$/.exec(all[all.length - 1] ?? "");
    assert.ok(m, `sandboxd's limits line: ${all[all.length - 1]}\n${this.log()}`);
    return m[1];
  }

  // Stop it (lighttpd stops its bin-path backend) and start it again.
  async restart() {
    const { master } = this.processes();
    const seen = this.starts().length;
    const old = this.lighttpd;
    old.kill("SIGTERM");
    await new Promise((r) => {
      const t = setTimeout(() => { old.kill("SIGKILL"); r(); }, 10000);
      old.once("exit", () => { clearTimeout(t); r(); });
      if (old.exitCode !== null || old.signalCode !== null) { clearTimeout(t); r(); }
    });
    await waitFor(() => !this.processes().master, "the old master to stop", 15000);
    await this.startGateway();
    await waitFor(async () => (await fetch(this.url("/healthz"), { signal: AbortSignal.timeout(5000) })).status === 200,
      "/healthz after the restart");
    await waitFor(() => this.starts().length > seen, "the new sandboxd's limits line");
    assert.notEqual(this.processes().master, master);
  }
}

let a, b;

before(async () => {
  if (!isRoot) return;
  try {
    execFileSync("id", [otherUser], { stdio: "ignore", timeout: 10000 });
  } catch {
    execFileSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", otherUser], { timeout: 30000 });
  }
  // One after the other, as the second took the first's group over.
  const start = async (user) => {
    const s = await new UserStack(user, { localTools: small }).start();
    await waitFor(() => s.starts().length > 0, "sandboxd's limits line");
    return s;
  };
  a = await start(serviceUser);
  b = await start(otherUser);
});

after(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

// Code run in sandbox id of stack: 200, and the sandbox's processes are
// in its group inside this gateway's own (given to its user) in the
// memory and pids hierarchies, with the tool's limits in force (mb MiB,
// 32 processes). Started by lighttpd, our child, the gateways are in our
// cgroups.
async function runChecked(stack, id, mb = 512) {
  const r = await stack.call("POST", `/v1/sandboxes/${id}/code`, { code: "import os\nprint(os.getuid())" });
  assert.equal(r.status, 200, `run on ${stack.user}'s gateway: ${r.text}`);
  const uid = Number(r.json.stdout.trim());
  const name = path.basename(stack.group());
  assert.equal(stack.group(), path.join(cgroupDir(process.pid, "memory"), name));
  for (const [ctl, file, want] of [["memory", "memory.limit_in_bytes", String(mb * 1048576)], ["pids", "pids.max", "32"]]) {
    const group = path.join(cgroupDir(process.pid, ctl), name), dir = path.join(group, id);
    assert.equal(fs.statSync(group).uid, uidOf(stack.user), `${group} is ${stack.user}'s`);
    assert.equal(fs.readFileSync(path.join(dir, file), "utf8").trim(), want, `${dir}/${file}`);
    const procs = fs.readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean);
    assert.ok(procs.length > 0, `${dir} holds the sandbox's processes`);
    for (const p of procs) assert.ok([uid, undefined].includes(procOf(p)?.uid), `pid ${p} in ${dir} runs as the sandbox's uid ${uid}`);
  }
}

// A new sandbox of tool on stack, and a checked run in it.
async function fresh(stack, tool = "local", mb = 512) {
  const r = await stack.call("POST", "/v1/sandboxes", { tool });
  assert.equal(r.status, 201, `sandbox on ${stack.user}'s gateway: ${r.text}`);
  await runChecked(stack, r.json.id, mb);
  return r.json.id;
}

test("two gateways of two users run local code side by side, each restarted in turn", { skip: skip ?? false, timeout: 240000 }, async () => {
  let [sa, sb] = await Promise.all([fresh(a), fresh(b)]);
  const ga = path.basename(a.group()), gb = path.basename(b.group());
  assert.notEqual(ga, gb, "each gateway has a group of its own");
  assert.match(ga, new RegExp(`^sandgate-${uidOf(serviceUser)}-[0-9a-f]{12}$`));
  assert.match(gb, new RegExp(`^sandgate-${uidOf(otherUser)}-[0-9a-f]{12}$`));

  // The first restarted: its group again (the same name), the other's
  // sandbox still runs in the other's group.
  await a.restart();
  assert.equal(path.basename(a.group()), ga, "the same group after a restart");
  [sa] = await Promise.all([fresh(a), runChecked(b, sb)]);
  await Promise.all([runChecked(a, sa), runChecked(b, sb)]);

  await b.restart();
  assert.equal(path.basename(b.group()), gb, "the same group after a restart");
  [sb] = await Promise.all([fresh(b), runChecked(a, sa)]);
  await Promise.all([runChecked(a, sa), runChecked(b, sb)]);
  assert.equal(fs.statSync(a.group()).uid, uidOf(serviceUser));
  assert.equal(fs.statSync(b.group()).uid, uidOf(otherUser));
});

test("the memory limit holds in each gateway's sandboxes", { skip: skip ?? false, timeout: 120000 }, async () => {
  // Three children map 150 MiB each (MAP_SHARED: no rlimit counts it),
  // 450 MiB in all under memory_mb = 256: at most one holds it at once.
  const code = sharedMemoryBomb(3);
  for (const stack of [a, b]) {
    const id = await fresh(stack, "small", 256);
    const r = await stack.call("POST", `/v1/sandboxes/${id}/code`, { code, timeout: 30 });
    assert.equal(r.status, 200, r.text);
    const [full] = r.json.stdout.trim().split(" ").map(Number);
    assert.ok(full <= 1, `${full} of 3 children held 150 MiB at once on ${stack.user}'s gateway`);
    assert.equal((await stack.call("DELETE", `/v1/sandboxes/${id}`)).status, 200);
  }
});

// The sandbox uids (sandgate's reserved range) the processes under
// stack's sandboxd run as, from /proc.
const UID_BASE = 1900000000, UID_SLOTS = 1024;
function sandboxUids(stack) {
  const table = procTable(), under = new Set([stack.processes().sandboxd]), uids = new Set();
  for (let grew = true; grew;) {
    grew = false;
    for (const p of table)
      if (under.has(p.ppid) && !under.has(p.pid)) {
        under.add(p.pid);
        grew = true;
        if (p.uid >= UID_BASE && p.uid < UID_BASE + UID_SLOTS) uids.add(p.uid);
      }
  }
  return uids;
}

// The uids of the reserved range some sandboxd holds a claim on, probed
// in the host's claims file (an OFD lock on each uid's byte).
function claimed() {
  const probe = `import fcntl, os, struct
fd = os.open("/run/sandgate/uids.lock", os.O_RDONLY)
for u in range(${UID_BASE}, ${UID_BASE + UID_SLOTS}):
    r = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, u, 1, 0))
    if struct.unpack("hhqqi4x", r)[0] != fcntl.F_UNLCK:
        print(u)`;
  return new Set(execFileSync("python3", ["-c", probe], { timeout: 10000 }).toString().split("\n").filter(Boolean).map(Number));
}

// n new sandboxes on each of a and b at once, each run once: the uids
// they say they run as, a's first.
async function createBoth(n) {
  const made = await Promise.all([a, b].map((s) => Promise.all(Array.from({ length: n },
    () => s.call("POST", "/v1/sandboxes", { tool: "local" })))));
  for (const r of made.flat()) assert.equal(r.status, 201, r.text);
  // bubblewrap maps the sandbox's uid to itself inside.
  const ran = await Promise.all([a, b].flatMap((s, i) => made[i].map((r) =>
    s.call("POST", `/v1/sandboxes/${r.json.id}/code`, { code: "import os\nprint(os.getuid())" }))));
  for (const r of ran) assert.equal(r.status, 200, r.text);
  return { made, said: ran.map((r) => Number(r.json.stdout.trim())) };
}

const runBy = (uid) => procTable().some((p) => p.uid === uid);

test("two gateways creating sandboxes at once never run two tenants' sandboxes as one uid", { skip: isRoot ? false : "needs root (a uid per sandbox)", timeout: 300000 }, async () => {
  const n = 8;
  for (let round = 0; round < 3; round++) {
    const { made, said } = await createBoth(n);
    assert.equal(new Set(said).size, 2 * n, `round ${round}: the sandboxes' uids ${said}`);
    // /proc shows no uid under both gateways' sandboxd at once (the
    // sandboxes of earlier tests included), and each is claimed.
    const ua = sandboxUids(a), ub = sandboxUids(b), held = claimed();
    for (const [i, u] of said.entries()) {
      assert.ok((i < n ? ua : ub).has(u), `uid ${u} under its sandboxd`);
      assert.ok(held.has(u), `uid ${u} claimed`);
    }
    assert.deepEqual([...ua].filter((u) => ub.has(u)), [], `round ${round}: uids both gateways' sandboxes run as (${[...ua]} / ${[...ub]})`);
    // Deleted: no claim left.
    await Promise.all([a, b].flatMap((s, i) => made[i].map((r) => s.call("DELETE", `/v1/sandboxes/${r.json.id}`))));
    const after = claimed();
    assert.deepEqual(said.filter((u) => after.has(u)), [], "claims of deleted sandboxes");
  }
});

test("a sandboxd that dies leaves no claim on a uid behind", { skip: isRoot ? false : "needs root (a uid per sandbox)", timeout: 120000 }, async () => {
  const { said } = await createBoth(3);
  const mine = said.slice(0, 3), theirs = said.slice(3), old = a.processes().sandboxd;
  const under = sandboxUids(a), kernels = procTable().filter((p) => under.has(p.uid));
  try {
    process.kill(old, "SIGKILL");
    await waitFor(() => ![...under].some((u) => claimed().has(u)), "the killed sandboxd's claims to go", 15000);
    const held = claimed();
    assert.ok(theirs.every((u) => held.has(u) && runBy(u)), "the other gateway's sandboxes keep their uids");
    // The master starts another sandboxd, which has uids to give; not one
    // a kernel of the dead one may still run as.
    await waitFor(() => (a.processes().sandboxd ?? old) !== old, "a new sandboxd", 15000);
    const r = await a.call("POST", "/v1/sandboxes", { tool: "local" });
    assert.equal(r.status, 201, r.text);
    const ran = await a.call("POST", `/v1/sandboxes/${r.json.id}/code`, { code: "import os\nprint(os.getuid())" });
    assert.equal(ran.status, 200, ran.text);
    const uid = Number(ran.json.stdout.trim());
    assert.ok(claimed().has(uid));
    assert.ok(!kernels.some((p) => p.uid === uid && procOf(p.pid)), `uid ${uid} while a kernel of the dead sandboxd runs as it`);
  } finally {
    // A kernel may outlive its sandboxd (see the report); ours to end.
    for (const p of kernels) try { if (procOf(p.pid)?.uid === p.uid) process.kill(p.pid, "SIGKILL"); } catch { /* gone */ }
  }
});
