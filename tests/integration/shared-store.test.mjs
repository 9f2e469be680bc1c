// Two gateways (two masters, as mod_fcgid or two web servers start them)
// on one store file: each local sandbox is reachable from both, a second
// gateway's start leaves the first one's sandboxes alone, one reaper
// sweeps at a time, and a gateway whose master is SIGKILLed leaves
// nothing behind: no responder, reaper, sandboxd or kernel, no runtime
// directory, and its sandboxes' rows are cleared by the other.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { startStack, waitFor, procTable, storeKind } from "./harness.mjs";

let a, b;
// One SQLite file between two gateways: on PostgreSQL (SG_PG) there is
// no such file (the multibox tests share a database).
const skip = storeKind !== "sqlite" && "one SQLite store file shared: SQLite only (SG_PG is set)";
const SESSION = { session_id: "shared" };

let early; // made through a before b started
before(async () => {
  if (skip) return;
  a = await startStack();
  const r = await a.call("POST", "/v1/sandboxes", { tool: "local" });
  assert.equal(r.status, 201, r.text);
  early = r.json.id;
  assert.equal((await a.call("POST", `/v1/sandboxes/${early}/code`, { code: "early = 7" })).status, 200);
  b = await startStack({ storePath: `${a.storeDir}/sandgate.db` });
});
after(async () => {
  await b?.stop();
  await a?.stop();
});

// A Responses request whose model runs `code` in the session's sandbox.
async function ask(stack, code) {
  const r = await stack.call("POST", "/v1/responses", {
    model: "ci-turn", input: JSON.stringify({ code }), metadata: SESSION,
    tools: [{ type: "code_interpreter", container: { type: "auto" } }],
  });
  assert.equal(r.status, 200, r.text);
  return r.json.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("");
}

const run = (stack, id, code) => stack.call("POST", `/v1/sandboxes/${id}/code`, { code });

// Every process whose command line names this stack's directory (the
// gateway's binary, and the kernels' files), but lighttpd and the fakes.
const leftovers = (stack) => procTable().map((p) => `${p.pid}: ${p.cmd.join(" ")}`)
  .filter((c) => c.includes(stack.dir) && !c.includes("lighttpd") && !c.includes("tests/fakes/"));

test("each gateway has a sandboxd of its own, in its own directory beside the one store", { skip }, async () => {
  const ma = a.processes().master, mb = b.processes().master;
  await waitFor(() => fs.existsSync(`${a.storeDir}/local/m${ma}/sandboxd.sock`) &&
    fs.existsSync(`${a.storeDir}/local/m${mb}/sandboxd.sock`), "both sandboxds");
});

test("a second gateway's start leaves the first one's sandboxes alone", { skip }, async () => {
  for (const s of [a, b]) {
    const r = await run(s, early, "print(early)");
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.stdout, "7\n");
  }
  assert.equal((await b.call("DELETE", `/v1/sandboxes/${early}`)).status, 200);
});

test("a sandbox made through one gateway runs through the other, and the first keeps it", { skip }, async () => {
  const r = await a.call("POST", "/v1/sandboxes", { tool: "local" });
  assert.equal(r.status, 201, r.text);
  const id = r.json.id;
  assert.equal((await run(a, id, "x = 41")).status, 200);
  const viaB = await run(b, id, "print(x + 1)");
  assert.equal(viaB.status, 200, viaB.text);
  assert.equal(viaB.json.stdout, "42\n");
  const viaA = await run(a, id, "print(x)");
  assert.equal(viaA.json.stdout, "41\n");
  // A session too: made through b, continued through a.
  assert.match(await ask(b, "s = 'kept'"), /args result/);
  assert.match(await ask(a, "print(s)"), /kept/);
  const del = await b.call("DELETE", `/v1/sandboxes/${id}`);
  assert.equal(del.status, 200, del.text);
  assert.equal((await run(a, id, "1")).status, 404);
});

test("on a SQLite store every row is this box's, whatever the host was called when it was made", { skip }, async () => {
  const r = await a.call("POST", "/v1/sandboxes", { tool: "local" });
  assert.equal(r.status, 201, r.text);
  a.sql(`UPDATE sandboxes SET box = 'renamed-host' WHERE id = '${r.json.id}'`);
  const ran = await run(b, r.json.id, "print(6 * 7)");
  assert.equal(ran.status, 200, ran.text);
  assert.equal(ran.json.stdout, "42\n");
  assert.equal((await a.call("DELETE", `/v1/sandboxes/${r.json.id}`)).status, 200);
});

test("a gateway whose master is SIGKILLed leaves nothing; the other clears its rows and goes on", { skip }, async () => {
  const ofA = await a.call("POST", "/v1/sandboxes", { tool: "local" });
  const ofB = await b.call("POST", "/v1/sandboxes", { tool: "local" });
  assert.equal(ofA.status, 201, ofA.text);
  assert.equal(ofB.status, 201, ofB.text);
  assert.equal((await run(b, ofA.json.id, "print(1)")).json.stdout, "1\n");
  const pa = a.processes();
  assert.ok(pa.responders.length >= 2 && pa.master);
  assert.ok(leftovers(a).length > pa.responders.length, "a's kernel runs");
  a.lighttpd.kill("SIGKILL"); // so that it does not start another
  process.kill(pa.master, "SIGKILL");
  await waitFor(() => leftovers(a).length === 0, "every process of a gone", 15000)
    .catch(() => assert.fail(`left: ${leftovers(a).join("\n")}`));
  assert.ok(!fs.existsSync(`${a.storeDir}/local/m${pa.master}`), "a's runtime directory removed");
  // b's sandbox lives on; a's is gone, and b says so and forgets it.
  assert.equal((await run(b, ofB.json.id, "print(2)")).json.stdout, "2\n");
  const gone = await run(b, ofA.json.id, "print(3)");
  assert.equal(gone.status, 404, gone.text);
  const list = await b.call("GET", "/v1/sandboxes");
  assert.ok(!list.json.data.some((s) => s.id === ofA.json.id), "a's sandbox is no longer listed");
  assert.equal((await b.call("DELETE", `/v1/sandboxes/${ofB.json.id}`)).status, 200);
});
