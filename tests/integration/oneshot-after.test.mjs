// A request's own sandbox is deleted after its answer is out: a one-shot
// POST /v1/code, and a code_interpreter request without a session whose
// sandbox is not kept (container_reuse = "none"), JSON or streamed, answer
// before the provider's delete ends, and the sandbox is deleted after. It
// stays tracked until the delete is confirmed: one that fails leaves it
// listed, and the reaper deletes it once its responder is gone; a reload
// mid-delete lets the responder finish it. A background job's goes once
// its end is stored. On the e2b fake, whose
// delete is made slow (delete_delay) or failing (delete_status).
import { test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { startStack, waitFor, eventually, reapNow, procOf, sseEvents } from "./harness.mjs";

const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
const DELAY = 3;		/* seconds the provider takes to delete */
const CODE = JSON.stringify({ code: "print(6*7)" });	/* ci-turn runs it */

let stack;
before(async () => {
  stack = await startStack({ sandboxes: true, interception: 'container_reuse = "none";' });
});
after(async () => { await stack?.stop(); });

const stats = () => stack.fakeHook("e2b", "stats");
const rows = () => stack.sql("SELECT id, state, kind, owner_pid FROM sandboxes");
const listed = async () => (await stack.call("GET", "/v1/sandboxes")).json.data.map((s) => s.id);

// Nothing left, soon: no sandbox at the provider, no row, none listed.
async function clean() {
  await eventually(async () => {
    const s = await stats();
    assert.deepEqual(s.live, [], "a sandbox left at the provider");
    assert.equal(s.creates, s.deletes);
    assert.deepEqual(rows(), [], "a row left in the store");
    assert.deepEqual(await listed(), []);
  }, 15000);
}

beforeEach(async () => {
  await stack.fakeHook("e2b", "faults", {});
  await clean();
  await stack.fakeHook("e2b", "reset", {});
});

// The request, how long its answer took, and what was left right then:
// the sandbox still live at the provider and its row still in the store
// (its delete under way), or not.
async function timed(fn) {
  const t0 = Date.now();
  const r = await fn();
  const ms = Date.now() - t0;
  return { r, ms, live: (await stats()).live.length, rows: rows().length };
}

// Answered well before the delete could have ended, the sandbox tracked
// meanwhile, then deleted (once).
async function answeredFirst(t) {
  assert.ok(t.ms < DELAY * 1000 - 1000, `answered in ${t.ms} ms: it waited for the ${DELAY} s delete`);
  assert.equal(t.live, 1, "the sandbox was gone at the provider when the answer came");
  assert.equal(t.rows, 1, "its row went before its delete was confirmed");
  await clean();
  assert.equal((await stats()).deletes, 1);
}

test("one-shot /v1/code: answered before its slow delete ends, deleted after", async () => {
  await stack.fakeHook("e2b", "faults", { delete_delay: DELAY, count: 1 });
  const t = await timed(() => stack.call("POST", "/v1/code", { tool: "e2b", code: "print(6*7)" }));
  assert.equal(t.r.status, 200, t.r.text);
  assert.equal(t.r.json.stdout, "42\n");
  await answeredFirst(t);
});

test("one-shot /v1/code whose delete fails: answered, still tracked, reaped once its responder is gone", async () => {
  await stack.fakeHook("e2b", "faults", { delete_status: 500, count: 1 });
  const r = await stack.call("POST", "/v1/code", { tool: "e2b", code: "print(6*7)" });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout, "42\n");
  await waitFor(async () => (await stats()).attempts.delete === 1, "the delete tried");
  // The failed delete gives the row back: listed, live at the provider.
  await eventually(() => assert.equal(rows()[0]?.state, "ready"));
  const [row] = rows();
  assert.equal(row.kind, 0, "an ephemeral sandbox");
  assert.deepEqual(await listed(), [row.id]);
  assert.equal((await stats()).live.length, 1);
  // Its responder killed (as if between the answer and the delete): the
  // row is the reaper's.
  try { process.kill(row.owner_pid, "SIGKILL"); } catch { /* retired already */ }
  await waitFor(() => procOf(row.owner_pid) === null, "its responder gone");
  // (The gateway's own reaper may sweep first: either deletes it.)
  assert.match(await reapNow(stack), /^deleted [01], failed 0$/m);
  await clean();
  assert.equal((await stats()).deletes, 1);
});

test("a reload while the delete runs: the responder finishes it, then goes", async () => {
  await stack.fakeHook("e2b", "faults", { delete_delay: DELAY, count: 1 });
  const r = await stack.call("POST", "/v1/code", { tool: "e2b", code: "print(6*7)" });
  assert.equal(r.status, 200, r.text);
  const [row] = rows();
  await waitFor(async () => (await stats()).attempts.delete === 1, "the delete under way");
  // SIGTERM to every responder, its own among them, mid-delete.
  await stack.reload((c) => c + "\n# reloaded\n");
  await waitFor(() => procOf(row.owner_pid) === null, "its responder gone", 20000);
  await clean();
  // Its own delete ended (no "by=sweep"). (The new reaper, sweeping as
  // it starts, may try it too: a row being deleted is due to it.)
  assert.match(stack.log(), new RegExp(`^event=sandbox_delete id=${row.id} tool=e2b$`, "m"));
});

for (const stream of [false, true]) {
  test(`Responses with code_interpreter, no session${stream ? ", streamed" : ""}: answered before the delete ends, deleted after`, async () => {
    await stack.fakeHook("e2b", "faults", { delete_delay: DELAY, count: 1 });
    const t = await timed(() => stack.call("POST", "/v1/responses", { model: "ci-turn", input: CODE, tools: CI, stream }));
    assert.equal(t.r.status, 200, t.r.text);
    let answer = t.r.json;
    if (stream) {
      // The whole stream came, its last event the response's end.
      const ev = sseEvents(t.r.text);
      assert.equal(ev.at(-1).event, "response.completed");
      answer = JSON.parse(ev.at(-1).data).response;
    }
    assert.equal(answer.status, "completed");
    const text = answer.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("");
    assert.match(text, /42/);
    await answeredFirst(t);
  });
}

test("Chat Completions with code_interpreter: answered before the delete ends, deleted after", async () => {
  await stack.fakeHook("e2b", "faults", { delete_delay: DELAY, count: 1 });
  const t = await timed(() => stack.call("POST", "/v1/chat/completions", { model: "ci-turn",
    messages: [{ role: "user", content: CODE }], tools: CI }));
  assert.equal(t.r.status, 200, t.r.text);
  assert.match(t.r.json.choices[0].message.content, /42/);
  await answeredFirst(t);
});

test("a background response's sandbox goes once the job has ended", async () => {
  const r = await stack.call("POST", "/v1/responses", { model: "ci-turn", input: CODE, tools: CI, background: true });
  assert.equal(r.status, 200, r.text);
  let done;
  await waitFor(async () => {
    done = (await stack.call("GET", `/v1/responses/${r.json.id}`)).json;
    return done.status === "completed";
  }, "the job completed", 30000);
  const text = done.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("");
  assert.match(text, /42/);
  await clean();
  assert.equal((await stats()).deletes, 1);
});
