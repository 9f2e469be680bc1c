// The e2b provider against a fake that reproduces the real code-interpreter
// server's quirks (tests/fakes/e2b.py): a run cut by its time limit, a run
// that never answers, non-ASCII escaped on the wire, PNGs with a trailing
// "\n", the "aborted" run after an interrupted one, a dead kernel. Each
// case once went wrong against the real server.
import { test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startStack, KEYS, eventually } from "./harness.mjs";
import { validate } from "./schema.mjs";

const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const SLOW = "print('before', flush=True)\nimport time\ntime.sleep(30)\nprint('after')";

let stack;
before(async () => { stack = await startStack({ sandboxes: true, interceptionTool: "e2b", execTimeout: 3 }); });
after(async () => { await stack?.stop(); });
beforeEach(async () => {
  await stack.resetFake();
  await stack.fakeHook("e2b", "faults", {});
});

const call = (...args) => stack.call(...args);

// No address of the provider or of a sandbox in what a client sees.
function noInternals(text) {
  assert.doesNotMatch(text, /https?:\/\//);
  assert.ok(!text.includes("127.0.0.1"), text);
  assert.ok(!text.includes(String(stack.e2bPort)), text);
}

async function sandbox() {
  const r = await call("POST", "/v1/sandboxes", { tool: "e2b" });
  assert.equal(r.status, 201, r.text);
  return r.json.id;
}

// (A request's own sandbox goes just after its answer.)
async function noSandboxLeft() {
  await eventually(async () => {
    const s = await stack.fakeHook("e2b", "stats");
    assert.deepEqual(s.live, []);
    assert.equal(s.creates, s.deletes);
  });
}

test("a run its time limit cuts is a result: TimeoutError, the output so far kept", async () => {
  const r = await call("POST", "/v1/code", { tool: "e2b", code: SLOW, timeout: 2 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.error.name, "TimeoutError");
  assert.match(r.json.error.value, /time limit of 2 s/);
  assert.equal(r.json.stdout, "before\n");
  await noSandboxLeft();
});

test("in the loop, a cut run goes back to the model and the answer completes", async () => {
  const r = await call("POST", "/v1/responses", { model: "ci-args", input: JSON.stringify({ code: SLOW }),
    tools: CI, include: ["code_interpreter_call.outputs"] });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.status, "completed");
  const ci = r.json.output.find((o) => o.type === "code_interpreter_call");
  assert.equal(ci.status, "completed");
  const logs = ci.outputs.filter((o) => o.type === "logs").map((o) => o.logs).join("");
  assert.match(logs, /^before\n/);
  assert.match(logs, /TimeoutError/);
  // What the model was told names the timeout.
  const reqs = (await stack.fakeRequests()).filter((q) => q.body?.model === "ci-args");
  assert.equal(reqs.length, 2);
  assert.match(JSON.stringify(reqs[1].body), /TimeoutError/);
  // Kept for the conversation's follow-ups until deleted.
  assert.equal((await call("DELETE", `/v1/sandboxes/${ci.container_id}`)).status, 200);
  await noSandboxLeft();
});

test("a run that never answers → 504 that invites no retry and names no address", async () => {
  await stack.fakeHook("e2b", "faults", { execute_hang: true, lines: 0, count: 1 });
  const r = await call("POST", "/v1/code", { tool: "e2b", code: "print(1)", timeout: 2 });
  assert.equal(r.status, 504, r.text);
  assert.equal(r.headers.get("x-should-retry"), "false");
  validate("ErrorResponse", r.json);
  assert.match(r.json.error.message, /Sandbox tool e2b/);
  noInternals(r.text);
  await noSandboxLeft();
});

test("the official SDK does not retry it: one model call, one sandbox", async () => {
  const before = (await stack.fakeHook("e2b", "stats")).creates;
  await stack.fakeHook("e2b", "faults", { execute_hang: true, lines: 0, count: -1 });
  const client = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 2 });
  await assert.rejects(client.responses.create({ model: "ci-primes", input: "go", tools: CI }),
    (e) => e.status === 504 || e.status === 502 || (console.error(e), false));
  await stack.fakeHook("e2b", "faults", {});
  const s = await stack.fakeHook("e2b", "stats");
  assert.equal(s.creates - before, 1, "one sandbox: the SDK did not retry");
  const reqs = (await stack.fakeRequests()).filter((q) => q.body?.model === "ci-primes");
  assert.equal(reqs.length, 1, "one model call");
  await noSandboxLeft();
});

test("the run right after a cut-off one is not lost to the server's 'aborted' quirk", async () => {
  const id = await sandbox();
  try {
    assert.equal((await call("POST", `/v1/sandboxes/${id}/code`, { code: "x = 41" })).status, 200);
    const cut = await call("POST", `/v1/sandboxes/${id}/code`, { code: SLOW, timeout: 2 });
    assert.equal(cut.json.error?.name, "TimeoutError", cut.text);
    // The fake aborts a run sent within 0.5 s of the interrupt and then
    // sends only keepalives, as the real server does: without recovery
    // this run would wait out its whole 25 s and fail.
    const t0 = Date.now();
    const next = await call("POST", `/v1/sandboxes/${id}/code`, { code: "print(x + 1)", timeout: 25 });
    assert.equal(next.status, 200, next.text);
    assert.equal(next.json.stdout, "42\n");
    assert.equal(next.json.error, null);
    assert.ok(Date.now() - t0 < 15000, `took ${Date.now() - t0} ms`);
  } finally {
    await call("DELETE", `/v1/sandboxes/${id}`);
  }
});

test("6 MB of CJK text (12 MB escaped on the wire) is within the 10 MiB cap; 11 MB is not", async () => {
  const ok = await call("POST", "/v1/code", { tool: "e2b", code: "print('日' * 2_000_000)" });
  assert.equal(ok.status, 200, ok.text.slice(0, 300));
  assert.equal(ok.json.stdout.length, 2_000_001);
  assert.ok(!ok.json.stdout.includes("\ufffd"));
  assert.equal(ok.json.stdout, "日".repeat(2_000_000) + "\n");
  const big = await call("POST", "/v1/code", { tool: "e2b", code: "print('日' * 3_700_000)" });
  assert.equal(big.status, 400, big.text.slice(0, 300));
  assert.equal(big.json.error.code, "output_too_large");
  await noSandboxLeft();
});

test("PNGs lose the server's trailing newline, in results and in the Responses image URL", async () => {
  const r = await call("POST", "/v1/code", { tool: "e2b", code: `display_png("${PNG}")` });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.results[0].png, PNG);
  const resp = await call("POST", "/v1/responses", { model: "ci-args",
    input: JSON.stringify({ code: `display_png("${PNG}")` }), tools: CI, include: ["code_interpreter_call.outputs"] });
  assert.equal(resp.status, 200, resp.text);
  const ci = resp.json.output.find((o) => o.type === "code_interpreter_call");
  const img = ci.outputs.find((o) => o.type === "image");
  assert.equal(img.url, `data:image/png;base64,${PNG}`);
  assert.equal((await call("DELETE", `/v1/sandboxes/${ci.container_id}`)).status, 200);
  await noSandboxLeft();
});

test("a dead kernel: ContextRestarting, and the sandbox lives on with fresh state", async () => {
  const id = await sandbox();
  try {
    await call("POST", `/v1/sandboxes/${id}/code`, { code: "x = 1" });
    const dead = await call("POST", `/v1/sandboxes/${id}/code`, { code: "import os\nos._exit(1)" });
    assert.equal(dead.status, 200, dead.text);
    assert.equal(dead.json.error.name, "ContextRestarting");
    const after = await call("POST", `/v1/sandboxes/${id}/code`, { code: "print('x' in globals())" });
    assert.equal(after.status, 200, after.text);
    assert.equal(after.json.stdout, "False\n");
  } finally {
    assert.equal((await call("DELETE", `/v1/sandboxes/${id}`)).status, 200);
  }
});
