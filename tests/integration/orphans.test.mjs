// A sandboxd that is SIGKILLed (or crashes) leaves no sandbox running.
// Started as root, it runs each kernel under a uid of its own: the kernel's
// parent-death signal is checked against the dying sandboxd's credentials
// (the gateway's user, no capability effective) and dropped, so kernels
// outlived it by up to their lifetime (21 minutes by default). The master
// starts sandboxd again, and that one ends them at once; a second gateway
// on the same store keeps its own; records a compromised responder forges
// in the runtime directory make it kill nothing that is not a leftover
// sandbox. Started as the service user, kernels run as that user and die
// with sandboxd: that is checked too.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { startStack, waitFor, procTable, procOf, serviceUser, storeKind, KEYS } from "./harness.mjs";

const isRoot = process.getuid() === 0;
// One SQLite store file shared by two gateways (as shared-store.test.mjs).
const skip = storeKind !== "sqlite" && "two gateways on one SQLite store file: SQLite only (SG_PG is set)";
const rootGateway = () => isRoot && a.mode === "binpath";
const SANDBOX_UIDS = [1900000000, 1900000000 + 1024];
// Started as root, a tool without per-sandbox cgroups: its kernels are
// found by the record their sandboxd wrote, not by their group.
const proc = `{ name = "proc"; provider = "local"; memory_mb = 256; disk_mb = 16; max_procs = 32; limits = "process"; }`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let a, b;
const mine = []; // processes this file starts, stopped at the end

before(async () => {
  if (skip) return;
  a = await startStack({ localTools: proc });
  b = await startStack({ storePath: `${a.storeDir}/sandgate.db` });
});
after(async () => {
  for (const p of mine) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  await b?.stop();
  await a?.stop();
});

// Every live process below pid (not pid itself), as [pid, start time].
function descendants(pid) {
  const all = procTable();
  const out = [];
  let gen = [pid];
  while (gen.length) {
    const next = all.filter((p) => gen.includes(p.ppid));
    out.push(...next);
    gen = next.map((p) => p.pid);
  }
  return out.map((p) => [p.pid, p.start]);
}
// Which of [pid, start] still run (a pid reused since is another process).
const alive = (procs) => procs.filter(([pid, start]) => procOf(pid)?.start === start);
const show = (procs) => procs.map(([pid]) => `${pid}: ${procOf(pid)?.cmd.join(" ").slice(0, 70)}`).join("\n");

const asUser = (cmd) => execFileSync(isRoot ? "setpriv" : "/bin/sh", isRoot ? [`--reuid=${serviceUser}`,
  `--regid=${serviceUser}`, "--init-groups", "/bin/sh", "-c", cmd] : ["-c", cmd]).toString();

// SIGKILL stack's sandboxd; resolves to the new one's pid once it answers.
async function killSandboxd(stack) {
  const old = stack.processes().sandboxd;
  assert.ok(old, "sandboxd runs");
  process.kill(old, "SIGKILL");
  let now;
  await waitFor(() => (now = stack.processes().sandboxd) && now !== old, "sandboxd started again", 20000);
  await waitFor(() => fs.existsSync(`${stack.localDir()}/sandboxd.sock`), "its socket", 10000);
  return now;
}

// A sleep of ours (as user, when given) that nothing should kill.
function bystander(user) {
  const argv = ["sleep", "300"];
  const p = user ? spawn("setpriv", [`--reuid=${user}`, `--regid=${user}`, "--clear-groups", ...argv], { stdio: "ignore" }) :
    spawn(argv[0], argv.slice(1), { stdio: "ignore" });
  mine.push(p);
  return p;
}
// setpriv execs sleep: the same pid, once it is sleep.
const running = async (p) => waitFor(() => procOf(p.pid)?.comm === "sleep", "the bystander", 5000).then(() => [p.pid, procOf(p.pid).start]);

test("a SIGKILLed sandboxd's kernels end when the master starts it again; the other gateway's run on", { skip }, async () => {
  const ids = [await a.newSandbox("local"), ...(rootGateway() ? [await a.newSandbox("proc")] : [])];
  for (const id of ids) assert.equal((await a.runCode(id, "x = 1; print(x)")).stdout, "1\n");
  const ofB = await b.newSandbox("local");
  await b.runCode(ofB, "y = 2");
  // A session whose code sleeps when sandboxd dies.
  const kernelsBefore = descendants(a.processes().sandboxd).length;
  // (Once its sandbox is lost the gateway makes another and runs it again:
  // the request is dropped, not waited for.)
  const drop = new AbortController();
  const busy = fetch(a.url("/v1/responses"), {
    method: "POST", signal: drop.signal, headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "ci-turn", input: JSON.stringify({ code: "import time; time.sleep(60)" }),
      metadata: { session_id: "sleeper" }, tools: [{ type: "code_interpreter", container: { type: "auto" } }] }),
  }).catch(() => null);
  await waitFor(() => descendants(a.processes().sandboxd).length > kernelsBefore, "the session's kernel", 20000);
  await sleep(1500); // its code is sleeping by now
  const olds = descendants(a.processes().sandboxd);
  const ofBs = descendants(b.processes().sandboxd);
  assert.ok(olds.length >= 3 * ids.length, show(olds));
  if (rootGateway())
    assert.ok(olds.every(([pid]) => procOf(pid).uid >= SANDBOX_UIDS[0] && procOf(pid).uid < SANDBOX_UIDS[1]), show(olds));

  const t0 = Date.now();
  await killSandboxd(a);
  await waitFor(() => alive(olds).length === 0, "the dead sandboxd's kernels to end", 5000)
    .catch(() => assert.fail(`${(Date.now() - t0) / 1000} s after the SIGKILL, still running:\n${show(alive(olds))}`));
  // The other gateway's sandbox was left alone, state and all.
  assert.deepEqual(alive(ofBs), ofBs, "b's kernel was killed");
  assert.equal((await b.runCode(ofB, "print(y)")).stdout, "2\n");
  drop.abort();
  await busy;
  // New sandboxes work.
  const fresh = await a.newSandbox("local");
  assert.equal((await a.runCode(fresh, "print(6 * 7)")).stdout, "42\n");
  assert.equal((await a.call("DELETE", `/v1/sandboxes/${fresh}`)).status, 200);
  assert.equal((await b.call("DELETE", `/v1/sandboxes/${ofB}`)).status, 200);
});

test("records forged in the runtime directory make sandboxd kill nothing but leftover sandboxes", { skip }, async (t) => {
  if (!rootGateway()) return t.skip("only a root-started sandboxd kills processes of other uids");
  const ofB = await b.newSandbox("local");
  await b.runCode(ofB, "y = 3");
  const ofA = await a.newSandbox("local");
  await a.runCode(ofA, "1");
  // What the gateway's user may name: root's process, its own, the other
  // gateway's live kernel (its first process, start time and all), the
  // master, this gateway's live kernel.
  const rootSleep = await running(bystander());
  const userSleep = await running(bystander(serviceUser));
  const kernelOfB = descendants(b.processes().sandboxd)[0];
  const master = [a.processes().master, procOf(a.processes().master).start];
  const victims = [rootSleep, userSleep, kernelOfB, master];
  const ofAs = descendants(a.processes().sandboxd);
  const ofBs = descendants(b.processes().sandboxd);
  const records = [...victims, ...ofAs, ...ofBs].map(([pid, start], i) => [`cntr_${(0xf00 + i).toString(16)}`, `${pid} ${start}\n`]);
  // In this gateway's own directory, and in a dead one's beside it.
  const own = a.localDir(), dead = `${path.dirname(own)}/m999999`;
  const write = (dir) => records.map(([id, text]) => `printf '${text.trim()}\\n' > '${dir}/kernels/${id}.pid'`).join("; ");
  asUser(`mkdir -p '${dead}/kernels' && ${write(own)}; ${write(dead)}`);
  // The user's own sleep moved into a group of its own among the sandboxes'.
  const group = fs.readFileSync(`/proc/${ofAs[0][0]}/cgroup`, "utf8").match(/^\d+:pids:(.*)$/m)?.[1];
  const fake = group ? `/sys/fs/cgroup/pids${path.dirname(group)}/cntr_fa4e` : null;
  if (fake && fs.existsSync(path.dirname(fake)))
    asUser(`mkdir '${fake}' && echo ${userSleep[0]} > '${fake}/cgroup.procs'`);
  try {
    await killSandboxd(a);
    await sleep(1500);
    // a's own kernels are leftovers of the dead sandboxd: they go.
    await waitFor(() => alive(ofAs).length === 0, "a's kernels to end", 5000);
    assert.deepEqual(alive(victims), victims, "a process that is no leftover sandbox was killed");
    assert.deepEqual(alive(ofBs), ofBs, "b's kernel was killed");
    assert.equal((await b.runCode(ofB, "print(y)")).stdout, "3\n");
    const fresh = await a.newSandbox("local");
    assert.equal((await a.runCode(fresh, "print(7)")).stdout, "7\n");
  } finally {
    for (const p of mine) p.kill("SIGKILL");
    if (fake) await waitFor(() => { try { fs.rmdirSync(fake); } catch (e) { return e.code === "ENOENT"; } return true; }, "the fake group removed", 5000);
  }
  assert.equal((await b.call("DELETE", `/v1/sandboxes/${ofB}`)).status, 200);
});

test("started as the service user, kernels run as that user and end with sandboxd", { skip }, async (t) => {
  if (rootGateway()) return t.skip("the gateway is root in this run (see the tests above)");
  const id = await a.newSandbox("local");
  await a.runCode(id, "1");
  const olds = descendants(a.processes().sandboxd);
  assert.ok(olds.length >= 3, show(olds));
  assert.ok(olds.every(([pid]) => procOf(pid).uid === procOf(a.processes().sandboxd).uid), show(olds));
  await killSandboxd(a);
  await waitFor(() => alive(olds).length === 0, "the kernels to end", 5000)
    .catch(() => assert.fail(`still running:\n${show(alive(olds))}`));
});

// Last: it leaves a dead. Its sandboxd is SIGKILLed, then its master
// before it could start another: the next sandboxd on the store, as it
// starts, ends what the dead one left.
test("a gateway killed whole: the next sandboxd on its store ends the kernels it left", { skip }, async () => {
  const ids = [await a.newSandbox("local"), ...(rootGateway() ? [await a.newSandbox("proc")] : [])];
  for (const id of ids) await a.runCode(id, "1");
  const ofB = await b.newSandbox("local");
  await b.runCode(ofB, "y = 4");
  const olds = descendants(a.processes().sandboxd);
  const ofBs = descendants(b.processes().sandboxd);
  const { master, sandboxd } = a.processes();
  a.lighttpd.kill("SIGKILL"); // so that it does not start another
  process.kill(sandboxd, "SIGKILL");
  process.kill(master, "SIGKILL");
  await waitFor(() => !a.processes().master, "a's master gone", 10000);
  if (rootGateway()) {
    await sleep(1000);
    assert.ok(alive(olds).length > 0, "a root-started sandboxd's kernels outlive it");
  }
  const c = await startStack({ storePath: `${a.storeDir}/sandgate.db` });
  try {
    await waitFor(() => alive(olds).length === 0, "the dead gateway's kernels to end", 5000)
      .catch(() => assert.fail(`still running:\n${show(alive(olds))}`));
    assert.deepEqual(alive(ofBs), ofBs, "b's kernel was killed");
    assert.equal((await c.runCode(ofB, "print(y)")).stdout, "4\n");
  } finally {
    await c.stop();
  }
});
