// Two boxes on one PostgreSQL: two lighttpd + sandgate pairs, each with
// its own directory and box name (store.box), sharing one database and
// one e2b (the fake): a session made through one continues through the
// other, racing requests of one new session across both make one sandbox,
// one reaper sweeps at a time and never judges the other box's processes,
// a local sandbox asked for on the other box is a 421 naming its box, and
// a restart of PostgreSQL under load loses no session. Needs SG_PG (make
// test starts a cluster for its PostgreSQL pass).
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { execFileSync } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { startStack, waitFor, storeKind, restartPostgres, pgDir, root, sandgateCli, reapNow } from "./harness.mjs";

// A key allowed 32 requests at once on each box (alice's 8 would refuse
// the race's requests with 429 before they meet in the store).
const RACER = "sk-racer-" + crypto.randomBytes(8).toString("hex");
const racerKey = `{ name = "racer"; key_sha256 = "${crypto.createHash("sha256").update(RACER).digest("hex")}"; max_concurrent = 32; }`;

const sandgate = sandgateCli;
const reap = reapNow;

// A Responses request whose model runs code in the session's sandbox: the
// answer's text (it holds the run's output).
async function ask(stack, session, code, key) {
  const r = await stack.call("POST", "/v1/responses", {
    model: "ci-turn", input: JSON.stringify({ code }), metadata: { session_id: session },
    tools: [{ type: "code_interpreter", container: { type: "auto" } }],
  }, key);
  return { status: r.status, text: r.text, answer: r.status === 200 ?
    r.json.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("") : "" };
}

describe("two boxes on one PostgreSQL", { skip: storeKind !== "postgresql" && "needs SG_PG (the PostgreSQL pass of make test)" }, () => {
  let a, b;
  before(async () => {
    a = await startStack({ sandboxes: true, box: "box-a", keys: racerKey, workers: "2:16" });
    b = await startStack({ box: "box-b", storeUrl: a.storeUrl, sandboxTools: a.opts.sandboxTools,
      keys: racerKey, workers: "2:16" });
  });
  after(async () => {
    await b?.stop();
    await a?.stop();
  });

  test("a session made through one box continues through the other, both ways", async () => {
    let r = await ask(a, "carry", "x = 41");
    assert.equal(r.status, 200, r.text);
    r = await ask(b, "carry", "print(x + 1)");
    assert.equal(r.status, 200, r.text);
    assert.match(r.answer, /42/);
    r = await ask(b, "carry", "x = 7");
    r = await ask(a, "carry", "print(x * 6)");
    assert.match(r.answer, /42/);
    // One sandbox, made on box-a, at the provider both reach.
    const rows = a.sql("SELECT s.sandbox_id, b.box, b.tool FROM sessions s JOIN sandboxes b ON b.id = s.sandbox_id " +
      "WHERE s.session_id = 'carry'");
    assert.equal(rows.length, 1);
    assert.equal(rows[0].box, "box-a");
    assert.equal(rows[0].tool, "e2b");
  });

  test("20 racing requests of one new session across both boxes make one sandbox", async () => {
    const before = (await a.fakeHook("e2b", "stats")).creates;
    const code = "n = globals().get('n', 0) + 1\nprint('n=%d' % n)";
    const all = await Promise.all(Array.from({ length: 20 }, (_, i) => ask(i % 2 ? b : a, "race", code, RACER)));
    for (const r of all) assert.equal(r.status, 200, r.text);
    // Every run saw the one interpreter: n counted 1..20, no value twice.
    const ns = all.map((r) => Number(/n=(\d+)/.exec(r.answer)?.[1])).sort((x, y) => x - y);
    assert.deepEqual(ns, Array.from({ length: 20 }, (_, i) => i + 1));
    assert.equal((await a.fakeHook("e2b", "stats")).creates - before, 1, "one create at the provider");
    const rows = a.sql("SELECT count(*) AS n FROM sandboxes WHERE kind = 1 AND id IN " +
      "(SELECT sandbox_id FROM sessions WHERE session_id = 'race')");
    assert.equal(rows[0].n, 1);
  });

  test("a local sandbox lives on its box: asked for on the other, a 421 naming it", async () => {
    const made = await a.call("POST", "/v1/sandboxes", { tool: "local" });
    assert.equal(made.status, 201, made.text);
    const id = made.json.id;
    assert.equal((await a.call("POST", `/v1/sandboxes/${id}/code`, { code: "y = 5" })).status, 200);
    for (const [method, p, body] of [["POST", `/v1/sandboxes/${id}/code`, { code: "print(y)" }],
      ["DELETE", `/v1/sandboxes/${id}`, undefined]]) {
      const r = await b.call(method, p, body);
      assert.equal(r.status, 421, r.text);
      assert.equal(r.json.error.code, "sandbox_on_another_box");
      assert.match(r.json.error.message, /box 'box-a'.*box 'box-b'/);
      assert.doesNotMatch(r.text, /postgres|\.s\.PGSQL|127\.0\.0\.1/);
    }
    // Untouched on its own box, and deleted there.
    const again = await a.call("POST", `/v1/sandboxes/${id}/code`, { code: "print(y)" });
    assert.equal(again.json.stdout, "5\n");
    assert.equal((await a.call("DELETE", `/v1/sandboxes/${id}`)).status, 200);
  });

  test("one reaper sweeps at a time, and a box never judges the other box's processes", async () => {
    // An e2b sandbox of box-a whose owner is a process that is not alive
    // (on this host, so either box could see it): box-b must not take it
    // for dead; box-a does, and deletes it at the provider.
    const made = await a.call("POST", "/v1/sandboxes", {});
    assert.equal(made.status, 201, made.text);
    const id = made.json.id;
    a.sql(`UPDATE sandboxes SET kind = 0, owner_pid = 999999, owner_start = 1 WHERE id = '${id}'`);
    // The lease held by another sweep: both boxes skip.
    a.sql(`INSERT INTO leases (name, holder, until) VALUES ('reaper', 'elsewhere:1', ${Math.floor(Date.now() / 1000) + 600}) ` +
      "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until");
    assert.match(sandgate(a, "reap"), /^skipped/);
    assert.match(sandgate(b, "reap"), /^skipped/);
    a.sql("UPDATE leases SET until = 1 WHERE name = 'reaper'");
    await reap(b);
    assert.equal(a.sql(`SELECT id FROM sandboxes WHERE id = '${id}'`).length, 1, "box-b left box-a's row alone");
    await reap(a);
    assert.equal(a.sql(`SELECT id FROM sandboxes WHERE id = '${id}'`).length, 0, "box-a swept its dead owner's row");
    const gone = await a.call("POST", `/v1/sandboxes/${id}/code`, { code: "1" });
    assert.equal(gone.status, 404, gone.text);
  });

  test("another box's rows long past their life are forgotten; recent ones are left to that box", async () => {
    const now = Math.floor(Date.now() / 1000);
    const row = (id, box, tool, expires) => a.sql("INSERT INTO sandboxes (id, tenant, tool, state, handle, kind, " +
      "owner_pid, owner_start, created_at, last_used_at, expires_at, box) VALUES " +
      `('${id}', 'gone-tenant', '${tool}', 'ready', '{}', 1, 1, 1, ${now - 9000}, ${now - 9000}, ${expires}, '${box}')`);
    row("cntr_gonebox_old", "box-gone", "local", now - 7200);
    row("cntr_gonebox_new", "box-gone", "local", now - 120);
    a.sql(`INSERT INTO files (id, tenant, filename, state, bytes, created_at, expires_at, box) VALUES ` +
      `('file-gonebox', 'gone-tenant', 'x', 'ready', 1, ${now - 9000}, ${now - 7200}, 'box-gone')`);
    a.sql(`INSERT INTO files (id, tenant, filename, state, bytes, created_at, expires_at, box) VALUES ` +
      `('file-gonebox-new', 'gone-tenant', 'x', 'ready', 1, ${now - 9000}, ${now - 120}, 'box-gone')`);
    await reap(b);
    const left = a.sql("SELECT id FROM sandboxes WHERE id LIKE 'cntr_gonebox%' UNION ALL " +
      "SELECT id FROM files WHERE id LIKE 'file-gonebox%' ORDER BY id").map((r) => r.id);
    assert.deepEqual(left, ["cntr_gonebox_new", "file-gonebox-new"]);
    a.sql("DELETE FROM sandboxes WHERE id = 'cntr_gonebox_new'");
    a.sql("DELETE FROM files WHERE id = 'file-gonebox-new'");
  });

  test("a restart of PostgreSQL under load loses no session, and leaves no run locked; what fails meanwhile is a clean 503", async (t) => {
    let r = await ask(a, "survive", "kept = 'still here'");
    assert.equal(r.status, 200, r.text);
    // Load on both boxes, bounded: 4 clients for at most 12 s.
    let stop = false, ok = 0;
    const statuses = {};
    const load = Array.from({ length: 4 }, async (_, i) => {
      for (let n = 0; !stop && n < 200; n++) {
        const s = i % 2 ? b : a;
        const x = await ask(s, `load-${i}`, `print(${n})`, RACER);
        statuses[x.status] = (statuses[x.status] ?? 0) + 1;
        if (x.status === 200) ok++;
        else {
          assert.equal(x.status, 503, x.text);
          const e = JSON.parse(x.text).error;
          assert.equal(e.type, "server_error");
          assert.doesNotMatch(x.text, /\.s\.PGSQL|host=|sgtest@|\/tmp\//);
        }
      }
    });
    await sleep(1000);
    await restartPostgres();
    await sleep(1500);
    stop = true;
    await Promise.all(load);
    assert.ok(ok > 0, `some requests served: ${JSON.stringify(statuses)}`);
    t.diagnostic(`answers under load across the restart: ${JSON.stringify(statuses)}`);
    // Both boxes answer again, and the session kept its sandbox.
    await waitFor(async () => (await fetch(a.url("/healthz"))).status === 200 &&
      (await fetch(b.url("/healthz"))).status === 200, "both /healthz 200 again", 20000);
    r = await ask(b, "survive", "print(kept)");
    assert.equal(r.status, 200, r.text);
    assert.match(r.answer, /still here/);
    assert.doesNotMatch(r.answer, /sandbox was lost/);
    for (let i = 0; i < 4; i++) {
      const x = await ask(i % 2 ? a : b, `load-${i}`, "print('after')", RACER);
      assert.equal(x.status, 200, x.text);
      assert.doesNotMatch(x.answer, /sandbox was lost/);
    }
  });

  test("PostgreSQL down: /healthz and the store's requests answer 503 without naming it, then serve again", async () => {
    execFileSync("sh", [`${root}/tests/pg/stop.sh`, pgDir], { stdio: "ignore" });
    try {
      // The 503's own body: a responder whose store answered less than a
      // second ago still says ok (/healthz asks the store at most once a
      // second), so the next request may well be 200.
      let h = "";
      await waitFor(async () => {
        const r = await fetch(a.url("/healthz"));
        h = await r.text();
        return r.status === 503;
      }, "/healthz 503", 10000);
      assert.match(h, /store/i);
      assert.doesNotMatch(h, /\.s\.PGSQL|host=|sgtest|\/tmp\//);
      const r = await ask(b, "survive", "print(kept)");
      assert.equal(r.status, 503, r.text);
      assert.doesNotMatch(r.text, /\.s\.PGSQL|host=|sgtest|\/tmp\//);
    } finally {
      execFileSync("sh", [`${root}/tests/pg/start.sh`, pgDir], { stdio: "ignore" });
    }
    await waitFor(async () => (await fetch(a.url("/healthz"))).status === 200 &&
      (await fetch(b.url("/healthz"))).status === 200, "both /healthz 200 again", 20000);
    const r = await ask(b, "survive", "print(kept)");
    assert.equal(r.status, 200, r.text);
    assert.match(r.answer, /still here/);
  });
});
