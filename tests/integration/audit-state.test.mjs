// What the store says of a sandbox stays true across reloads and restarts.
// A warm sandbox handed out while a reload drains the pool is never the
// one being deleted (a create answers 201 and its first run works), and a
// session whose local sandbox died with its gateway is not listed ready
// once a new gateway runs: its next request gets a new sandbox and tells
// the model so.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { Stack, startStack, waitFor, E2B_KEY, sandgateCli } from "./harness.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const LOST = "[sandgate: this conversation's sandbox was lost";

// A key that may have many requests under way (alice may have 8).
const BUSY = "sk-busy-" + crypto.randomBytes(8).toString("hex");
const busyKey = `{ name = "busy"; key_sha256 = "${crypto.createHash("sha256").update(BUSY).digest("hex")}"; max_concurrent = 32; }`;

// A sandbox of tool made, then, a second later (as a model's first code
// call comes), one run in it: the statuses of both.
async function createAndRun(stack, tool) {
  const c = await stack.call("POST", "/v1/sandboxes", { tool }, BUSY);
  if (c.status !== 201) return { create: c.status, run: null, text: c.text };
  await sleep(1000);
  const r = await stack.call("POST", `/v1/sandboxes/${c.json.id}/code`, { code: "print(6*7)" }, BUSY);
  await stack.call("DELETE", `/v1/sandboxes/${c.json.id}`, undefined, BUSY);
  return { create: c.status, run: r.status, text: r.text, stdout: r.json?.stdout };
}

describe("warm sandboxes around reloads", () => {
  let stack;
  const warm = () => stack.sql("SELECT id, handle FROM sandboxes WHERE tool = 'warm-e2b' AND kind = 4 AND state = 'warm' " +
    "ORDER BY created_at, rowid");
  const attempts = async () => (await stack.fakeHook("e2b", "stats")).attempts.delete ?? 0;

  before(async () => {
    stack = new Stack({
      sandboxes: true, sessions: "max_per_key = 64;", workers: "4:16", keys: busyKey,
      get localTools() {
        const e2b = `http://127.0.0.1:${stack.e2bPort}`;
        return `{ name = "warm-e2b"; provider = "e2b"; api_key = "${E2B_KEY}"; api_base = "${e2b}"; sandbox_url = "${e2b}"; warm = 3; }`;
      },
    });
    await stack.start();
  });
  after(() => stack?.stop());

  // A reload with the same settings: the old reaper drains the pool while
  // the new responders claim from it (same settings, same pool). Its first
  // delete is held at the provider: the sandbox it deletes must not be
  // the one a create takes meanwhile.
  test("a create while the drain deletes a warm sandbox gets a live one", { timeout: 120000 }, async () => {
    await waitFor(() => warm().length === 3, "a pool of 3", 30000);
    const [oldest] = warm();
    const before = await attempts();
    await stack.fakeHook("e2b", "faults", { delete_delay: 3, count: 1 });
    const reload = stack.reload((c) => c + "\n# reloaded\n");
    await waitFor(async () => await attempts() > before, "the drain's first delete under way", 20000);
    const c = await stack.call("POST", "/v1/sandboxes", { tool: "warm-e2b" }, BUSY);
    assert.equal(c.status, 201, c.text);
    const [row] = stack.sql(`SELECT handle FROM sandboxes WHERE id = '${c.json.id}'`);
    assert.notEqual(row.handle, oldest.handle, "the create was handed the sandbox being deleted");
    // Its run comes after that delete ended.
    await sleep(3500);
    const r = await stack.call("POST", `/v1/sandboxes/${c.json.id}/code`, { code: "print(6*7)" }, BUSY);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.stdout, "42\n");
    await reload;
    await stack.call("DELETE", `/v1/sandboxes/${c.json.id}`, undefined, BUSY);
  });

  test("creates around three reloads: every one answers 201 and runs", { timeout: 240000 }, async () => {
    await stack.fakeHook("e2b", "faults", {});
    const results = [];
    for (let i = 0; i < 3; i++) {
      await waitFor(() => warm().length === 3, "a full pool", 30000);
      // Every delete a little slow, as a real provider's is.
      await stack.fakeHook("e2b", "faults", { delete_delay: 0.5, count: -1 });
      const reload = stack.reload((c) => c + `\n# reload ${i}\n`);
      const burst = [];
      for (let k = 0; k < 12; k++) {
        burst.push(createAndRun(stack, "warm-e2b"));
        await sleep(200);
      }
      results.push(...await Promise.all(burst));
      await reload;
      await stack.fakeHook("e2b", "faults", {});
    }
    const bad = results.filter((x) => x.create !== 201 || x.run !== 200 || x.stdout !== "42\n");
    assert.deepEqual(bad, [], `${bad.length} of ${results.length} creates failed`);
  });
});

describe("local sessions across a restart", () => {
  let stack;
  before(async () => { stack = await startStack({ sessions: "max_per_key = 8; ttl = 3600;" }); });
  after(() => stack?.stop());

  const restart = () => stack.restart(20000);

  async function ask(code, session) {
    const r = await stack.call("POST", "/v1/responses", { model: "ci-turn", input: JSON.stringify({ code }),
      tools: [{ type: "code_interpreter", container: { type: "auto" } }], metadata: { session_id: session } });
    assert.equal(r.status, 200, r.text);
    return r.json.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("");
  }
  const listed = (session) => sandgateCli(stack, "sessions", "list", "--key", "alice").split("\n")
    .find((l) => l.includes(` ${session} `)) ?? "";

  test("a session whose sandbox died with the gateway is not listed ready, and its next request says it was lost", { timeout: 120000 }, async () => {
    assert.match(await ask("x = 41\nprint('set')", "survivor"), /set/);
    assert.match(listed("survivor"), /\bready\b/);
    const [{ sandbox_id: id }] = stack.sql("SELECT sandbox_id FROM sessions WHERE session_id = 'survivor'");
    await restart();
    // The new gateway's reaper, at its start, finds the sandbox gone
    // with the old sandboxd, without asking anyone.
    // (Within two sweeps: the old sandboxd may outlive its master briefly.)
    await waitFor(() => stack.sql("SELECT sandbox_id FROM sessions WHERE session_id = 'survivor'")[0].sandbox_id === null,
      "the session without its sandbox", 45000);
    assert.deepEqual(stack.sql(`SELECT id FROM sandboxes WHERE id = '${id}'`), [], "its row is gone");
    assert.match(listed("survivor"), /survivor/);
    assert.doesNotMatch(listed("survivor"), /\bready\b/);
    // The model read that its sandbox was lost, then the run's NameError.
    const text = (await ask("print(x + 1)", "survivor")).replace(/^args result: /, "");
    assert.ok(text.startsWith(LOST), text);
    assert.match(text, /NameError/);
    assert.match(listed("survivor"), /\bready\b/);
    assert.equal((await ask("x = 1\nprint(x + 1)", "survivor")).replace(/^args result: /, ""), "2\n");
  });
});
