// The gateway as lighttpd starts it runs with the deeper malloc cache
// (fcgi/tune.c; what it does to malloc is test_tune.c's): the master
// started itself again with it, and serves.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { startStack, request } from "./harness.mjs";

let stack;

before(async () => {
  stack = await startStack();
});
after(async () => { await stack?.stop(); });

// The environment a process was started with (what exec gave it).
function started(pid) {
  return fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
}

test("the master started again with glibc's malloc cache deeper, and serves", async () => {
  const { master, responders } = stack.processes();
  assert.ok(master && responders.length > 0);
  const env = started(master);
  const tunables = env.find((e) => e.startsWith("GLIBC_TUNABLES="));
  if (process.env.GLIBC_TUNABLES?.includes("glibc.malloc.tcache_count="))
    assert.equal(tunables, `GLIBC_TUNABLES=${process.env.GLIBC_TUNABLES}`, "the operator's depth kept");
  else
    assert.match(tunables ?? "", /glibc\.malloc\.tcache_count=\d+/);
  const res = await request(stack, "GET", "/healthz", { key: null });
  assert.equal(res.status, 200);
});
