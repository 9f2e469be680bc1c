// The gateway starts itself once more with a larger per-thread cache of
// freed blocks (GLIBC_TUNABLES: glibc reads it only at a start), keeping
// its name for ps and pkill and an operator's own setting.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { startStack, procOf } from "./harness.mjs";

const stacks = [];
after(async () => { for (const s of stacks) await s.stop(); });

// What the process was started with (glibc splits GLIBC_TUNABLES in
// place as it reads it: a ':' may read as a NUL here).
const environ = (pid) => fs.readFileSync(`/proc/${pid}/environ`, "latin1");
const startedWith = (pid, value) => ("\0" + environ(pid)).includes(`\0GLIBC_TUNABLES=${value}\0`) ||
  ("\0" + environ(pid)).includes(`\0GLIBC_TUNABLES=${value.replaceAll(":", "\0")}\0`);

async function started(env) {
  const stack = await startStack(env ? { env } : {});
  stacks.push(stack);
  const { master, responders } = stack.processes();
  assert.ok(master && responders.length > 0, "the master and its responders");
  return { stack, master, responders };
}

test("the master and its responders run with glibc's larger cache, under their own name", async () => {
  const { master, responders } = await started(null);
  for (const pid of [master, ...responders])
    assert.ok(startedWith(pid, "glibc.malloc.tcache_count=200"), `pid ${pid}`);
  assert.equal(procOf(master).comm, "sandgate-fcgi", "not \"exe\"");
});

test("an operator's own tcache_count is kept; other tunables are kept beside ours", async () => {
  const own = await started({ GLIBC_TUNABLES: "glibc.malloc.tcache_count=7" });
  for (const pid of [own.master, ...own.responders])
    assert.ok(startedWith(pid, "glibc.malloc.tcache_count=7") &&
      !environ(pid).includes("tcache_count=200"), `pid ${pid}`);
  const other = await started({ GLIBC_TUNABLES: "glibc.malloc.mxfast=0" });
  for (const pid of [other.master, ...other.responders])
    assert.ok(startedWith(pid, "glibc.malloc.mxfast=0:glibc.malloc.tcache_count=200"), `pid ${pid}`);
  assert.equal((await other.stack.call("GET", "/healthz")).status, 200);
});
