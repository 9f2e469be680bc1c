// The warm pool (sandbox_tools[].warm): sandboxes made ahead by the reaper
// and handed out at once. On the local sandbox and the e2b fake: the pool
// fills; 20 concurrent creates never get the same sandbox (each writes a
// mark in its /tmp and finds only its own); the pool refills; a claimed
// sandbox is the claimer's like any other; a pool sandbox that dies is
// replaced; a reload that changes the tool drains the old pool; a stop
// leaves nothing at the provider; /metrics counts hits and misses.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { Stack, KEYS, E2B_KEY, waitFor, procTable, localLimits } from "./harness.mjs";

// A key that may have 20 requests under way (alice may have 8).
const POOLER = "sk-pooler-" + crypto.randomBytes(8).toString("hex");

let stack;
before(async () => {
  stack = new Stack({
    sandboxes: true, sessions: "max_per_key = 64;", workers: "4:32",
    keys: `{ name = "pooler"; key_sha256 = "${crypto.createHash("sha256").update(POOLER).digest("hex")}"; max_concurrent = 32; }`,
    // Read once the fakes run: the e2b tool needs its port.
    get localTools() {
      const e2b = `http://127.0.0.1:${stack.e2bPort}`;
      // max_procs is per uid: unprivileged, all 22 sandboxes share one.
      return `{ name = "warm-local"; provider = "local"; memory_mb = 512; disk_mb = 16; max_procs = 512; warm = 2; ${localLimits} },
  { name = "warm-e2b"; provider = "e2b"; api_key = "${E2B_KEY}"; api_base = "${e2b}"; sandbox_url = "${e2b}"; warm = 2; }`;
    },
  });
  await stack.start();
});
after(() => stack?.stop());

// The store's rows, as another process sees them.
function rows(where) {
  return stack.sql(`SELECT id, tenant, tool, state, kind, handle, pool_gen FROM sandboxes WHERE ${where}`);
}
const warm = (tool) => rows(`tool = '${tool}' AND kind = 4 AND state = 'warm'`);
const live = async () => (await stack.fakeHook("e2b", "stats")).live;

async function metric(name, ...labels) {
  const r = await stack.call("GET", "/metrics");
  const line = r.text.split("\n").find((l) => l.startsWith(name + "{") && labels.every((x) => l.includes(x)));
  return line ? Number(line.split(" ").pop()) : 0;
}

for (const tool of ["warm-local", "warm-e2b"]) {
  test(`${tool}: the pool fills; 20 concurrent creates never share a sandbox; it refills`, async () => {
    await waitFor(() => warm(tool).length === 2, `${tool}'s pool of 2`, 30000);
    const before = warm(tool).map((r) => r.handle);
    const hits0 = await metric("sandgate_pool_claims_total", `tool="${tool}"`, 'result="hit"');
    const miss0 = await metric("sandgate_pool_claims_total", `tool="${tool}"`, 'result="miss"');
    const made = await Promise.all(Array.from({ length: 20 }, () => stack.call("POST", "/v1/sandboxes", { tool }, POOLER)));
    for (const r of made) assert.equal(r.status, 201, r.text);
    const ids = made.map((r) => r.json.id);
    assert.equal(new Set(ids).size, 20);
    const handles = rows(`id IN (${ids.map((i) => `'${i}'`).join(",")})`).map((r) => r.handle);
    assert.equal(new Set(handles).size, 20, "20 different sandboxes at the provider");
    // Both warm ones were handed out, each once.
    for (const h of before) assert.equal(handles.filter((x) => x === h).length, 1, `${h} handed out once`);
    const hits = await metric("sandgate_pool_claims_total", `tool="${tool}"`, 'result="hit"') - hits0;
    const misses = await metric("sandgate_pool_claims_total", `tool="${tool}"`, 'result="miss"') - miss0;
    assert.ok(hits >= 2, `hits ${hits}`);
    assert.equal(hits + misses, 20);
    // Each is its own: a mark written in one is not seen in another.
    // (The e2b fake's sandboxes share the host's /tmp: its mark goes home.)
    const mark = tool === "warm-e2b" ? "/home/user/mark" : "/tmp/mark";
    const marks = await Promise.all(ids.map((id) => stack.call("POST", `/v1/sandboxes/${id}/code`,
      { code: `open('${mark}', 'a').write('x')\nprint(len(open('${mark}').read()))` }, POOLER)));
    for (const m of marks) assert.equal(m.json?.stdout?.trim(), "1", m.text);
    // A claimed one belongs to its key alone, like any other.
    assert.equal((await stack.call("GET", `/v1/sandboxes/${ids[0]}`, undefined, KEYS.bob)).status, 404);
    await Promise.all(ids.map((id) => stack.call("DELETE", `/v1/sandboxes/${id}`, undefined, POOLER)));
    await waitFor(() => warm(tool).length === 2, `${tool}'s pool refilled`, 30000);
    assert.deepEqual(rows(`tool = '${tool}' AND kind = 4`).map((r) => r.tenant), ["", ""], "no key's");
  });
}

test("warm-e2b: a pool sandbox that died is replaced", async () => {
  await waitFor(() => warm("warm-e2b").length === 2, "pool of 2", 30000);
  const [victim] = warm("warm-e2b");
  const id = JSON.parse(victim.handle).id;
  const r = await fetch(`http://127.0.0.1:${stack.e2bPort}/sandboxes/${id}`, { method: "DELETE",
    headers: { "X-API-Key": E2B_KEY } });
  assert.equal(r.status, 204);
  await waitFor(() => {
    const now = warm("warm-e2b");
    return now.length === 2 && now.every((w) => w.id !== victim.id);
  }, "the dead one replaced", 30000);
});

test("warm-e2b: a reload that changes the tool drains the old pool and fills a new one", async () => {
  await waitFor(() => warm("warm-e2b").length === 2, "pool of 2", 30000);
  const old = warm("warm-e2b");
  const oldIds = old.map((w) => JSON.parse(w.handle).id);
  await stack.reload((c) => c.replace(/(name = "warm-e2b";[^}]*)warm = 2;/, "$1warm = 1; allow_internet_access = true;"));
  await waitFor(async () => {
    const now = warm("warm-e2b");
    const up = await live();
    return now.length === 1 && now[0].pool_gen !== old[0].pool_gen && oldIds.every((i) => !up.includes(i));
  }, "the old pool deleted at the provider, the new one made", 30000);
  const made = (await stack.fakeHook("e2b", "stats")).create_bodies.at(-1);
  assert.equal(made.allow_internet_access, true);
});

test("stop: no warm sandbox is left at the provider or in the store", async () => {
  await waitFor(() => warm("warm-local").length === 2 && warm("warm-e2b").length === 1, "pools full", 30000);
  const e2bIds = warm("warm-e2b").map((w) => JSON.parse(w.handle).id);
  // lighttpd stops (and would restart) the sandgate it spawned; a
  // --listen sandgate is stopped by its own SIGTERM.
  if (stack.mode === "listen") process.kill(stack.processes().master, "SIGTERM");
  else stack.lighttpd.kill("SIGTERM");
  await waitFor(() => !stack.processes().master, "sandgate to stop", 20000);
  const up = await live();
  for (const i of e2bIds) assert.ok(!up.includes(i), `${i} deleted at e2b`);
  assert.deepEqual(rows("kind = 4"), [], "no warm row left");
  const kernels = procTable().filter((p) => p.cmd.join(" ").includes(stack.dir) && !p.cmd.join(" ").includes("lighttpd") &&
    !p.cmd.join(" ").includes("tests/fakes/"));
  assert.deepEqual(kernels.map((p) => p.cmd.join(" ")), [], "no kernel left");
});
