// The direct sandbox API against the e2b and OpenSandbox fakes, through
// lighttpd: state across runs, errors, images, every injected fault, and
// no sandbox left behind.
import { test, describe, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { startStack, KEYS, E2B_KEY, OSB_KEY, procTable, eventually, reapNow } from "./harness.mjs";
import { validate } from "./schema.mjs";

let stack;
// A 1x1 PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

before(async () => { stack = await startStack({ sandboxes: true }); });
after(async () => { await stack?.stop(); });

const call = (...args) => stack.call(...args);

function assertError(r, status, message) {
  assert.equal(r.status, status, r.text);
  validate("ErrorResponse", r.json);
  if (message) assert.match(r.json.error.message, message);
}

// Nothing left: the provider has no sandbox, the store has no row (a
// one-shot's sandbox goes just after its answer).
async function assertClean(fake) {
  await eventually(async () => {
    const s = await stack.fakeHook(fake, "stats");
    assert.deepEqual(s.live, [], `${fake} still has sandboxes`);
    // The OpenSandbox fake counts attempts as creates, successes as created.
    assert.equal(s.created ?? s.creates, s.deletes, `${fake}: creates == deletes`);
    for (const key of [KEYS.alice, KEYS.bob]) {
      const l = await call("GET", "/v1/sandboxes", undefined, key);
      assert.deepEqual(l.json.data, [], "the store has no row left");
    }
  });
}

const pngCode = {
  e2b: `display_png("${PNG}")`,
  osb: `import base64\nclass Img:\n    def _repr_png_(self):\n        return base64.b64decode("${PNG}")\nImg()`,
};

for (const tool of ["e2b", "osb"]) {
  describe(`${tool}`, () => {
    beforeEach(async () => {
      await stack.fakeHook(tool, "faults", {});
      await stack.fakeHook(tool, "reset", {});
    });

    test("create → x = 6*7 → print(x) → 42 → delete", async () => {
      const c = await call("POST", "/v1/sandboxes", { tool });
      assert.equal(c.status, 201, c.text);
      assert.match(c.json.id, /^cntr_[0-9a-f]{32}$/);
      assert.equal(c.json.object, "sandbox");
      assert.equal(c.json.tool, tool);
      const r1 = await call("POST", `/v1/sandboxes/${c.json.id}/code`, { code: "x = 6*7" });
      assert.equal(r1.status, 200, r1.text);
      assert.equal(r1.json.object, "code_execution");
      const r2 = await call("POST", `/v1/sandboxes/${c.json.id}/code`, { code: "print(x)" });
      assert.equal(r2.json.stdout, "42\n");
      assert.equal(r2.json.error, null);
      const g = await call("GET", `/v1/sandboxes/${c.json.id}`);
      assert.equal(g.json.status, "running");
      const d = await call("DELETE", `/v1/sandboxes/${c.json.id}`);
      assert.deepEqual(d.json, { id: c.json.id, object: "sandbox.deleted", deleted: true });
      assertError(await call("GET", `/v1/sandboxes/${c.json.id}`), 404, /not found/);
      await assertClean(tool);
    });

    test("an exception comes back as error with name, value and traceback", async () => {
      const r = await call("POST", "/v1/code", { tool, code: "print('before')\n1/0" });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.stdout, "before\n");
      assert.equal(r.json.error.name, "ZeroDivisionError");
      assert.equal(r.json.error.value, "division by zero");
      assert.match(r.json.error.traceback, /ZeroDivisionError/);
      await assertClean(tool);
    });

    test("stdout, stderr, the last value and a PNG result pass through", async () => {
      const r = await call("POST", "/v1/code", { tool, code: "import sys\nprint('out')\nprint('err', file=sys.stderr)\n6*7" });
      assert.equal(r.json.stdout, "out\n");
      assert.equal(r.json.stderr, "err\n");
      const main = r.json.results.find((x) => x.is_main_result);
      assert.equal(main.text, "42");
      const p = await call("POST", "/v1/code", { tool, code: pngCode[tool] });
      assert.equal(p.status, 200, p.text);
      const img = p.json.results.find((x) => x.png);
      assert.ok(img, JSON.stringify(p.json));
      assert.equal(Buffer.from(img.png, "base64").subarray(1, 4).toString(), "PNG");
      await assertClean(tool);
    });

    test("create 500 → 502, create 429 → 429, bad credentials → 502 naming the tool; nothing left", async () => {
      await stack.fakeHook(tool, "faults", { create_status: 500, count: 1 });
      assertError(await call("POST", "/v1/sandboxes", { tool }), 502);
      await stack.fakeHook(tool, "faults", { create_status: 429, count: 1 });
      assertError(await call("POST", "/v1/code", { tool, code: "1" }), 429);
      const bad = await call("POST", "/v1/sandboxes", { tool: `${tool}-badkey` });
      assertError(bad, 502, new RegExp(`${tool}-badkey.*credentials`));
      assert.ok(!bad.text.includes(E2B_KEY) && !bad.text.includes(OSB_KEY) && !bad.text.includes("e2b_0000"));
      await assertClean(tool);
    });

    test("a slow create still succeeds", async () => {
      await stack.fakeHook(tool, "faults", { create_delay: 1, count: 1 });
      const r = await call("POST", "/v1/code", { tool, code: "print('slow ok')" });
      assert.equal(r.json.stdout, "slow ok\n");
      await assertClean(tool);
    });

    test("a stream dropped mid-run → 502; one that never answers → 504, not to be retried; one that started and hangs → TimeoutError; all clean up", async () => {
      await stack.fakeHook(tool, "faults", tool === "e2b" ? { execute_drop: true, count: 1 } : { code_drop: true, count: 1 });
      assertError(await call("POST", "/v1/code", { tool, code: "print('a')\nprint('b')" }), 502);
      await stack.fakeHook(tool, "faults", tool === "e2b" ? { execute_hang: true, lines: 0, count: 1 } : { code_hang: true, count: 1 });
      const r = await call("POST", "/v1/code", { tool, code: "print('x')", timeout: 2 });
      assertError(r, 504);
      assert.equal(r.headers.get("x-should-retry"), "false");
      const cut = await call("POST", "/v1/code", { tool, code: "print('x', flush=True)\nimport time\ntime.sleep(20)", timeout: 2 });
      assert.equal(cut.status, 200, cut.text);
      assert.equal(cut.json.error.name, "TimeoutError");
      assert.equal(cut.json.stdout, "x\n");
      await assertClean(tool);
    });

    test("output over the 10 MiB cap → a clear 400, and the sandbox is cleaned up", async () => {
      const r = await call("POST", "/v1/code", { tool, code: "print('x' * (11 * 1024 * 1024))" });
      assertError(r, 400, /exceeded 10485760 bytes/);
      assert.equal(r.json.error.code, "output_too_large");
      await assertClean(tool);
    });

    test("a run that could outlast the sandbox extends it first (keepalive)", async () => {
      // request_timeout is 30 here: a one-shot sandbox lives 90 s, a run of
      // 30 s needs 90 s, so the provider is asked to keep it longer.
      const r = await call("POST", "/v1/code", { tool, code: "print('long')", timeout: 30 });
      assert.equal(r.json.stdout, "long\n");
      const s = await stack.fakeHook(tool, "stats");
      if (tool === "e2b") {
        assert.equal(s.keepalives, 1);
        assert.equal(s.timeouts[0].timeout, 90);
      } else {
        assert.equal(s.renews, 1);
        assert.ok(Date.parse(s.renew_bodies[0].expiresAt) > Date.now() + 60000);
      }
      const quick = await call("POST", "/v1/code", { tool, code: "1", timeout: 5 });
      assert.equal(quick.status, 200);
      const s2 = await stack.fakeHook(tool, "stats");
      assert.equal(s2.keepalives ?? s2.renews, 1, "a short run needs no keepalive");
    });

    test("a sandbox that vanished at the provider → 404, and its row is gone", async () => {
      const c = await call("POST", "/v1/sandboxes", { tool });
      await stack.fakeHook(tool, "reset", {});
      assertError(await call("POST", `/v1/sandboxes/${c.json.id}/code`, { code: "1" }), 404);
      assertError(await call("GET", `/v1/sandboxes/${c.json.id}`), 404);
    });

    test("key B cannot see, run in or delete key A's sandbox", async () => {
      const c = await call("POST", "/v1/sandboxes", { tool });
      const id = c.json.id;
      assertError(await call("GET", `/v1/sandboxes/${id}`, undefined, KEYS.bob), 404);
      assertError(await call("POST", `/v1/sandboxes/${id}/code`, { code: "1" }, KEYS.bob), 404);
      assertError(await call("DELETE", `/v1/sandboxes/${id}`, undefined, KEYS.bob), 404);
      assert.deepEqual((await call("GET", "/v1/sandboxes", undefined, KEYS.bob)).json.data, []);
      assert.equal((await call("GET", "/v1/sandboxes")).json.data.length, 1, "A still sees it");
      assert.equal((await call("DELETE", `/v1/sandboxes/${id}`)).status, 200);
      await assertClean(tool);
    });
  });
}

describe("osb only", () => {
  beforeEach(async () => {
    await stack.fakeHook("osb", "faults", {});
    await stack.fakeHook("osb", "reset", {});
  });

  test("Pending for a few polls and an endpoint that 404s first: still works", async () => {
    await stack.fakeHook("osb", "faults", { pending_polls: 3, count: 1 });
    await stack.fakeHook("osb", "faults", { endpoint_404: 2, count: 1 });
    const r = await call("POST", "/v1/code", { tool: "osb", code: "print('ready')" });
    assert.equal(r.json.stdout, "ready\n", r.text);
    await assertClean("osb");
  });

  test("a sandbox that fails to start → 502 and it is deleted", async () => {
    await stack.fakeHook("osb", "faults", { fail_start: true, count: 1 });
    assertError(await call("POST", "/v1/sandboxes", { tool: "osb" }), 502, /Failed/);
    await assertClean("osb");
  });

  test("data:-framed streams and the typeless {code,message} error object", async () => {
    await stack.fakeHook("osb", "faults", { framing_sse: true, count: 1 });
    const r = await call("POST", "/v1/code", { tool: "osb", code: "print('framed')" });
    assert.equal(r.json.stdout, "framed\n", r.text);
    await stack.fakeHook("osb", "faults", { code_error_object: "error running codes session is busy", count: 1 });
    const e = await call("POST", "/v1/code", { tool: "osb", code: "print(1)" });
    assert.equal(e.status, 200, e.text);
    assert.equal(e.json.error.name, "RUNTIME_ERROR");
    assert.match(e.json.error.value, /busy/);
    await assertClean("osb");
  });

  test("the create body: image, entrypoint, timeout ≥ 60, limits, deny-all egress, short id label", async () => {
    await call("POST", "/v1/code", { tool: "osb", code: "1" });
    const s = await stack.fakeHook("osb", "stats");
    const b = s.create_bodies[0];
    assert.equal(b.image.uri, "opensandbox/code-interpreter:v1.1.0");
    assert.deepEqual(b.entrypoint, ["/opt/code-interpreter/code-interpreter.sh"]);
    assert.ok(b.timeout >= 60);
    assert.deepEqual(b.resourceLimits, { cpu: "1", memory: "1024Mi" });
    assert.deepEqual(b.networkPolicy, { defaultAction: "deny", egress: [] });
    assert.match(b.metadata["sandgate-id"], /^cntr_[0-9a-f]{32}$/);
  });
});

test("validation: code required, bad timeout, unknown tool", async () => {
  assertError(await call("POST", "/v1/code", {}), 400, /'code'/);
  assertError(await call("POST", "/v1/code", { code: "1", timeout: -1 }), 400, /timeout/);
  assertError(await call("POST", "/v1/code", { code: "1", tool: "nope" }), 400, /nope/);
  assertError(await call("POST", "/v1/sandboxes/cntr_nope/code", { code: "1" }), 404);
});

test("the default tool is interception.sandbox_tool (e2b here)", async () => {
  const r = await call("POST", "/v1/sandboxes", {});
  assert.equal(r.json.tool, "e2b");
  await call("DELETE", `/v1/sandboxes/${r.json.id}`);
});

test("sandgate exec: a one-shot run, a raising one, and one in an existing sandbox", async () => {
  const { spawnSync } = await import("node:child_process");
  const exec = (args, input) => spawnSync(`${stack.dir}/bin/sandgate`,
    ["--config", `${stack.dir}/sandgate.conf`, "exec", ...args], { input, encoding: "utf8" });
  const ok = exec(["--tool", "osb", "-"], "x = 6*7\nprint(x)\n");
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(ok.stdout, "42\n");
  const bad = exec(["--tool", "e2b"], "raise ValueError('nope')\n");
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /ValueError: nope/);
  const c = await call("POST", "/v1/sandboxes", { tool: "e2b" });
  await call("POST", `/v1/sandboxes/${c.json.id}/code`, { code: "kept = 'state'" });
  const inBox = exec(["--sandbox", c.json.id], "print(kept)\n");
  assert.equal(inBox.stdout, "state\n", inBox.stderr);
  await call("DELETE", `/v1/sandboxes/${c.json.id}`);
  await assertClean("e2b");
  await assertClean("osb");
});

test("sandboxes whose life has passed are reaped: deleted at the provider, rows removed", async () => {
  const { spawnSync } = await import("node:child_process");
  await stack.fakeHook("e2b", "reset", {});
  const c = await call("POST", "/v1/sandboxes", { tool: "e2b" });
  const kept = await call("POST", "/v1/sandboxes", { tool: "e2b" });
  // Age one row past its life, as the store's own user would.
  stack.sql(`UPDATE sandboxes SET expires_at = 1 WHERE id = '${c.json.id}'`);
  // Retried while the gateway's own reaper holds the sweep's lease; that
  // sweep may then have deleted it first ("deleted 0").
  let r;
  for (let i = 0; i < 50; i++) {
    r = spawnSync(`${stack.dir}/bin/sandgate`, ["--config", `${stack.dir}/sandgate.conf`, "reap"], { encoding: "utf8" });
    if (r.status !== 0 || !r.stdout.startsWith("skipped")) break;
    await new Promise((res) => setTimeout(res, 200));
  }
  assert.equal(r.status, 0, r.stderr);
  if (r.stdout.trim() !== "deleted 0, failed 0") {
    assert.equal(r.stdout.trim(), "deleted 1, failed 0");
    assert.match(r.stderr, new RegExp(`^event=sandbox_delete id=${c.json.id} tool=e2b by=sweep$`, "m"));
  }
  assert.equal((await call("GET", `/v1/sandboxes/${c.json.id}`)).status, 404);
  assert.equal((await call("GET", `/v1/sandboxes/${kept.json.id}`)).status, 200, "a live one stays");
  const s = await stack.fakeHook("e2b", "stats");
  assert.equal(s.live.length, 1, "only the live sandbox is left at the provider");
  assert.equal(s.deletes, 1);
  await call("DELETE", `/v1/sandboxes/${kept.json.id}`);
});

test("a create whose responder died before it had the handle: the reaper finds the sandbox by its label and deletes it", async () => {
  // The e2b create answers late; OpenSandbox's sandbox stays Pending a
  // while: either way the responder is killed while its row says creating.
  const slow = { e2b: { create_delay: 2 }, osb: { pending_polls: { value: 30 } } };
  for (const tool of ["e2b", "osb"]) {
    await stack.fakeHook(tool, "reset", {});
    await stack.fakeHook(tool, "faults", slow[tool]);
    const pending = call("POST", "/v1/sandboxes", { tool }).catch(() => null);
    let owner = "";
    const until = Date.now() + 10000;
    while (!(owner = stack.sql("SELECT owner_pid FROM sandboxes WHERE state = 'creating'")[0]?.owner_pid) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
    assert.ok(owner, `${tool}: a row is being created`);
    process.kill(Number(owner), "SIGKILL");
    await pending;
    const made = Date.now() + 10000;
    while ((await stack.fakeHook(tool, "stats")).live.length === 0 && Date.now() < made)
      await new Promise((r) => setTimeout(r, 100));
    assert.equal((await stack.fakeHook(tool, "stats")).live.length, 1, `${tool}: the provider made it anyway`);
    await stack.fakeHook(tool, "faults", {});
    // Long enough ago that any create would have ended.
    stack.sql("UPDATE sandboxes SET created_at = created_at - 600 WHERE state = 'creating'");
    // A sweep by hand; when the gateway's own reaper held the lease just
    // then, its sweep found the orphan instead.
    assert.match((await reapNow(stack)).trim(), /^deleted [01], failed 0$/, tool);
    assert.deepEqual((await stack.fakeHook(tool, "stats")).live, [], `${tool}: nothing left at the provider`);
    assert.equal(stack.sql("SELECT count(*) AS n FROM sandboxes")[0].n, 0, `${tool}: no row left`);
  }
});

test("logfmt lines: a sandbox made and deleted, and each reaper sweep", async () => {
  const c = await call("POST", "/v1/sandboxes", { tool: "e2b" });
  assert.equal(c.status, 201, c.text);
  assert.equal((await call("DELETE", `/v1/sandboxes/${c.json.id}`)).status, 200);
  const log = stack.log();
  assert.match(log, new RegExp(`^event=sandbox_create id=${c.json.id} tool=e2b kind=explicit ms=\\d+$`, "m"));
  assert.match(log, new RegExp(`^event=sandbox_delete id=${c.json.id} tool=e2b$`, "m"));
  // The reaper sweeps once at start, then every half minute.
  assert.match(log, /^event=reaper_sweep tool=\* deleted=\d+ failed=\d+ skipped=[01] ms=\d+$/m);
});

test("the reaper runs as a child of the master, beside the responders", () => {
  const p = stack.processes();
  assert.ok(p.master);
  const comms = procTable().filter((q) => q.ppid === p.master).map((q) => q.comm);
  assert.ok(comms.includes("sg-reaper"), comms.join(","));
  assert.ok(comms.includes("sg-sandboxd"), comms.join(","));
});
