// Running the local provider: a store directory of any length (sandboxd's
// sockets live beside it), nothing left in /tmp by a start, a stop or a
// sandboxd that dies, and a sandboxd that cannot start is retried with a
// back-off and a line saying so, not in a tight loop.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { startStack, waitFor, eventually } from "./harness.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Create a local sandbox, run code in it, delete it; and one one-shot run.
async function useLocal(stack) {
  const c = await stack.call("POST", "/v1/sandboxes", { tool: "local" });
  assert.equal(c.status, 201, c.text);
  const r = await stack.call("POST", `/v1/sandboxes/${c.json.id}/code`, { code: "print(1)" });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout, "1\n", r.text);
  const d = await stack.call("DELETE", `/v1/sandboxes/${c.json.id}`);
  assert.equal(d.status, 200, d.text);
  const once = await stack.call("POST", "/v1/code", { tool: "local", code: "print(2)" });
  assert.equal(once.status, 200, once.text);
  assert.equal(once.json.stdout, "2\n", once.text);
}

// What sandgate may have put in /tmp: entries named sandgate-*.
const ours = () => new Set(fs.readdirSync("/tmp").filter((n) => n.startsWith("sandgate-")));

// Entries new since before that are still there a while later (another
// gateway on this machine may hold one for a moment: a leak stays).
async function leftSince(before) {
  const fresh = () => [...ours()].filter((n) => !before.has(n));
  if (fresh().length === 0) return [];
  await sleep(3000);
  return fresh();
}

test("a store directory of over 100 bytes: local sandboxes are made, run and deleted", async () => {
  // Two long components: the sockets' paths pass AF_UNIX's 107 bytes
  // both for sandboxd's own and for each kernel's.
  const storeSub = `${"d".repeat(70)}/${"e".repeat(70)}/store`;
  const stack = await startStack({ storeSub });
  try {
    assert.ok(stack.storeDir.length >= 100, stack.storeDir);
    assert.ok(`${stack.localDir()}/sandboxd.sock`.length > 107);
    const sandboxd = stack.processes().sandboxd;
    await useLocal(stack);
    await useLocal(stack);
    // No restart of sandboxd meanwhile, and no socket left behind.
    assert.equal(stack.processes().sandboxd, sandboxd, stack.log());
    assert.doesNotMatch(stack.log(), /sandboxd (died|ended|exited)|cannot make/, stack.log());
    // (A one-shot's sandbox goes just after its answer.)
    await eventually(() => assert.deepEqual(fs.readdirSync(`${stack.localDir()}/kernels`), []));
  } finally {
    await stack.stop();
  }
});

test("start, use, a killed sandboxd and stop leave nothing in /tmp", async () => {
  const before = ours();
  const stack = await startStack();
  try {
    await useLocal(stack);
    // sandboxd killed while it prepares (its first second: the font list
    // for matplotlib is built then), and again once it serves.
    for (let i = 0; i < 2; i++) {
      let pid;
      await waitFor(() => (pid = stack.processes().sandboxd), "sandboxd", 30000);
      await waitFor(() => [...ours()].some((n) => !before.has(n)) ||
        fs.existsSync(`${stack.localDir()}/mpl`), "sandboxd preparing", 3000).catch(() => {});
      process.kill(pid, "SIGKILL");
      await waitFor(() => { const p = stack.processes().sandboxd; return p && p !== pid; },
        "sandboxd restarted", 30000);
    }
    await useLocal(stack);
    assert.ok(!fs.existsSync(`${stack.localDir()}/mpl`), "the font list's directory is removed");
  } finally {
    await stack.stop();
  }
  assert.deepEqual(await leftSince(before), []);
});

test("a sandboxd that cannot start says why and is retried with a back-off", async () => {
  const stack = await startStack({ kernelDir: "/nonexistent/sandgate-kernel" });
  try {
    const t0 = Date.now();
    const r = await stack.call("POST", "/v1/sandboxes", { tool: "local" });
    assert.ok(r.status >= 500, r.text);
    await sleep(Math.max(0, 9000 - (Date.now() - t0)));
    const log = stack.log();
    const starts = log.match(/cannot read the kernel's directory from \/nonexistent\/sandgate-kernel/g) ?? [];
    // Back-off from 1 s, doubling: started at about 0, 1, 3 and 7 s; a
    // tight loop (every second) would have made nine or ten.
    assert.ok(starts.length >= 2 && starts.length <= 5, `${starts.length} starts:\n${log}`);
    assert.match(log, /sandboxd exited .* next start in \d+ s/, log);
  } finally {
    await stack.stop();
  }
});
