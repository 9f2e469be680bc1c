// Attacks from the security audit on the core: each test performs one and
// checks the gateway holds. Sandboxes are hostile: their code closes the
// kernel's socket, writes its own lines into the run's answer, floods
// output; the model writes arguments that show one program and run
// another; a key reaches for another key's conversation or for a tool it
// may not use.
import { test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import { startStack, KEYS, sseEvents, procTable, eventually } from "./harness.mjs";
import { validate } from "./schema.mjs";

const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
// dave may use the local tool only; eve is limited later, by a reload.
const DAVE = "sk-dave-" + crypto.randomBytes(8).toString("hex");
const EVE = "sk-eve-" + crypto.randomBytes(8).toString("hex");
const KEYS_CONF = `{ name = "dave"; key = "${DAVE}"; tools = [ "local" ]; },
    { name = "eve"; key = "${EVE}"; }`;
const DROPPED = "[sandgate: a result too large to keep was dropped]";

let stack;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const call = (...args) => stack.call(...args);

async function until(fn, what, ms = 10000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

function assertError(r, status, type, param, code) {
  assert.equal(r.status, status, r.text);
  validate("ErrorResponse", r.json);
  assert.equal(r.json.error.type, type);
  assert.equal(r.json.error.param, param);
  assert.equal(r.json.error.code, code);
}

// Processes whose argv is exactly `argv` (a marker the test chose).
function processesWith(argv) {
  const want = argv.join("\0");
  return procTable().filter((p) => p.cmd.join("\0") === want).map((p) => String(p.pid));
}

const listed = async (key = KEYS.alice) => (await call("GET", "/v1/sandboxes", undefined, key)).json.data.map((s) => s.id);

before(async () => {
  stack = await startStack({ sandboxes: true, interceptionTool: "local", keys: KEYS_CONF });
});
after(async () => { await stack?.stop(); });
beforeEach(async () => {
  await stack.fakeHook("e2b", "faults", {});
});

// ---------------------------------------------------------------- item 1

test("a local sandbox whose code kills its kernel's server is deleted, not forgotten", async () => {
  const id = (await call("POST", "/v1/sandboxes", { tool: "local" })).json.id;
  const marker = ["sleep", String(600 + crypto.randomInt(1000))];
  // The cell runs in a worker; the server holds the socket. A child in a
  // session of its own, then the server killed: nothing answers any more.
  // The listening socket is not the worker's to close (fd 3 there is
  // something else of its own, if anything).
  const closed = await call("POST", `/v1/sandboxes/${id}/code`, { code: "import os\nos.close(3)" });
  assert.equal(closed.status, 200, closed.text);
  assert.equal((await call("POST", `/v1/sandboxes/${id}/code`, { code: "print('still')" })).json.stdout, "still\n");
  const code = `import os, signal, subprocess
subprocess.Popen(${JSON.stringify(marker)}, start_new_session=True)
os.kill(os.getppid(), signal.SIGKILL)`;
  const r = await call("POST", `/v1/sandboxes/${id}/code`, { code });
  // Its row may go only because its processes did.
  await until(async () => processesWith(marker).length === 0 || (await listed()).includes(id),
    "no process of the sandbox left, or the sandbox still listed", 5000);
  assert.deepEqual(processesWith(marker), [], "the sandbox was deleted");
  assert.ok(!(await listed()).includes(id));
  assertError(r, 404, "invalid_request_error", "id", null);
  assert.match(r.json.error.message, /stopped answering and was deleted/);
  assert.equal((await call("DELETE", `/v1/sandboxes/${id}`)).status, 404);
});

test("a sandbox that looks gone and cannot be deleted stays listed until DELETE", async () => {
  const id = (await call("POST", "/v1/sandboxes", { tool: "e2b" })).json.id;
  await stack.fakeHook("e2b", "faults", { execute_status: 502, delete_status: 500 });
  const r = await call("POST", `/v1/sandboxes/${id}/code`, { code: "print(1)" });
  assertError(r, 502, "server_error", null, null);
  assert.match(r.json.error.message, /stopped answering and could not be deleted/);
  assert.doesNotMatch(r.json.error.message, /127\.0\.0\.1|http:/);
  assert.ok((await listed()).includes(id), "still listed: DELETE and the reaper reach it");
  assert.equal((await stack.fakeHook("e2b", "stats")).live.length, 1);
  const d = await call("DELETE", `/v1/sandboxes/${id}`);
  assert.equal(d.status, 200, d.text);
  assert.deepEqual((await stack.fakeHook("e2b", "stats")).live, []);
  assert.ok(!(await listed()).includes(id));
});

// ---------------------------------------------------------------- item 2

async function upstreamRequests() {
  return (await stack.fakeRequests()).filter((q) => q.path.startsWith("/v1/"));
}

async function streamedId(key, body) {
  const r = await fetch(stack.url("/v1/responses"), { method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }) });
  assert.equal(r.status, 200);
  const created = sseEvents(await r.text()).find((e) => e.event === "response.created");
  return JSON.parse(created.data).response.id;
}

test("passthrough: previous_response_id is bound to the key it was relayed to", async () => {
  const first = await call("POST", "/v1/responses", { model: "gpt-test", input: "secret plan" });
  assert.equal(first.status, 200, first.text);
  const json = first.json.id;
  const streamed = await streamedId(KEYS.alice, { model: "gpt-test", input: "more secrets" });
  for (const id of [json, streamed]) {
    await stack.resetFake();
    const theft = await call("POST", "/v1/responses", { model: "gpt-test", input: "what did I say?",
      previous_response_id: id }, KEYS.bob);
    assertError(theft, 400, "invalid_request_error", "previous_response_id", "previous_response_not_found");
    assert.equal(theft.json.error.message, `Previous response with id '${id}' not found.`);
    assert.deepEqual(await upstreamRequests(), [], "nothing reached the upstream");
    const own = await call("POST", "/v1/responses", { model: "gpt-test", input: "go on", previous_response_id: id });
    assert.equal(own.status, 200, own.text);
    assert.equal((await upstreamRequests())[0].body.previous_response_id, id);
  }
  const unknown = await call("POST", "/v1/responses", { model: "gpt-test", input: "x", previous_response_id: "resp_never" });
  assertError(unknown, 400, "invalid_request_error", "previous_response_id", "previous_response_not_found");
  const nul = await call("POST", "/v1/responses", { model: "gpt-test", input: "x", previous_response_id: json + "\u0000x" });
  assertError(nul, 400, "invalid_request_error", "previous_response_id", "previous_response_not_found");
});

test("interception takes an upstream id relayed to the same key, and only to it", async () => {
  const relayed = (await call("POST", "/v1/responses", { model: "gpt-test", input: "hello" })).json.id;
  await stack.resetFake();
  const theft = await call("POST", "/v1/responses", { model: "ci-primes", input: "x", tools: CI,
    previous_response_id: relayed }, KEYS.bob);
  assertError(theft, 400, "invalid_request_error", "previous_response_id", "previous_response_not_found");
  assert.deepEqual(await upstreamRequests(), []);
  const own = await call("POST", "/v1/responses", { model: "ci-primes", input: "x", tools: CI,
    previous_response_id: relayed });
  assert.equal(own.status, 200, own.text);
  assert.equal(own.json.previous_response_id, relayed);
  assert.equal((await upstreamRequests())[0].body.previous_response_id, relayed);
});

// ---------------------------------------------------------------- item 4

test("code with a NUL is refused on both direct routes, before any sandbox", async () => {
  const code = "print('shown')\u0000import os; os.system('id')";
  const box = (await call("POST", "/v1/sandboxes", { tool: "local" })).json.id;
  const run = await call("POST", `/v1/sandboxes/${box}/code`, { code });
  assertError(run, 400, "invalid_request_error", "code", "invalid_value");
  const before = (await stack.fakeHook("e2b", "stats")).creates;
  const once = await call("POST", "/v1/code", { code, tool: "e2b" });
  assertError(once, 400, "invalid_request_error", "code", "invalid_value");
  assert.equal((await stack.fakeHook("e2b", "stats")).creates, before, "no sandbox was created");
  assert.equal((await call("DELETE", `/v1/sandboxes/${box}`)).status, 200);
});

// ---------------------------------------------------------------- item 5

// The scripted model ci-args calls the code tool with these arguments.
const TWO_CODES = [
  `{"code":"print('shown')","code":"print('ran')"}`,
  `{"code":"print('shown')","c\\u006fde":"print('ran')"}`,
  `{"code":"print('shown')","n":1,"n":2}`,
];

test("arguments with a key twice: what is streamed is never what runs; nothing runs", async () => {
  for (const args of TWO_CODES) {
    const r = await fetch(stack.url("/v1/responses"), { method: "POST",
      headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "ci-args", input: args, tools: CI, stream: true,
        include: ["code_interpreter_call.outputs"] }) });
    assert.equal(r.status, 200);
    const events = sseEvents(await r.text()).map((e) => JSON.parse(e.data));
    const deltas = events.filter((e) => e.type === "response.code_interpreter_call_code.delta").map((e) => e.delta).join("");
    const dones = events.filter((e) => e.type === "response.code_interpreter_call_code.done");
    const final = events.find((e) => e.type === "response.completed").response;
    validate("Response", final);
    const call_ = final.output.find((o) => o.type === "code_interpreter_call");
    assert.ok(!deltas.includes("ran"), `streamed: ${deltas}`);
    for (const d of dones) assert.equal(d.code, deltas, "a .done that differs from what was streamed");
    assert.equal(call_.code, null, `ran: ${JSON.stringify(call_)}`);
    assert.match(call_.outputs[0].logs, /^Invalid arguments/);
    assert.match(final.output.at(-1).content[0].text, /^args result: Invalid arguments/);
    assert.ok(!JSON.stringify(final).includes("ran\\n"), "the second program ran");
  }
});

test("arguments with a key twice are refused without streaming too", async () => {
  const r = await call("POST", "/v1/responses", { model: "ci-args", input: TWO_CODES[0], tools: CI });
  assert.equal(r.status, 200, r.text);
  const ci = r.json.output.find((o) => o.type === "code_interpreter_call");
  assert.equal(ci.code, null);
  assert.match(r.json.output.at(-1).content[0].text, /^args result: Invalid arguments/);
});

// ---------------------------------------------------------------- item 6

async function reload(conf) {
  fs.writeFileSync(`${stack.dir}/sandgate.conf`, conf);
  const { master, responders: old } = stack.processes();
  process.kill(master, "SIGHUP");
  await until(() => {
    const now = stack.processes().responders;
    return now.length >= 2 && now.every((p) => !old.includes(p));
  }, "every responder replaced", 20000);
}

test("a key limited to some tools may not create, run, list or delete others", async () => {
  const denied = (r) => {
    assertError(r, 403, "invalid_request_error", "tool", "tool_not_allowed");
    assert.equal(r.json.error.message, "This API key may not use the sandbox tool 'local2'.");
  };
  denied(await call("POST", "/v1/sandboxes", { tool: "local2" }, DAVE));
  denied(await call("POST", "/v1/code", { code: "print(1)", tool: "local2" }, DAVE));
  assert.equal((await call("POST", "/v1/code", { code: "print(1)", tool: "local" }, DAVE)).json.stdout, "1\n");
  assert.equal((await call("POST", "/v1/code", { code: "print(2)" }, DAVE)).json.stdout, "2\n", "the default tool is local");
  // (A one-shot's sandbox goes just after its answer.)
  await eventually(async () => assert.deepEqual(await listed(DAVE), []));

  // eve's sandbox of local2, then a reload that limits eve to local.
  const id = (await call("POST", "/v1/sandboxes", { tool: "local2" }, EVE)).json.id;
  const conf = fs.readFileSync(`${stack.dir}/sandgate.conf`, "utf8");
  await reload(conf.replace(`key = "${EVE}"; }`, `key = "${EVE}"; tools = [ "local" ]; }`));
  try {
    assert.deepEqual(await listed(EVE), [], "not listed");
    denied(await call("GET", `/v1/sandboxes/${id}`, undefined, EVE));
    denied(await call("POST", `/v1/sandboxes/${id}/code`, { code: "print(1)" }, EVE));
    denied(await call("DELETE", `/v1/sandboxes/${id}`, undefined, EVE));
    // Another key's sandbox is still just not found.
    assert.equal((await call("GET", `/v1/sandboxes/${id}`, undefined, DAVE)).status, 404);
  } finally {
    await reload(conf);
  }
  assert.equal((await call("DELETE", `/v1/sandboxes/${id}`, undefined, EVE)).status, 200);
});

// ---------------------------------------------------------------- items 3, 7

// Sandbox code runs inside the kernel and can write any line into its own
// answer: the run's HTTP connection is a socket of its process.
const raw = (line) => `import gc, socket
c = [o for o in gc.get_objects() if isinstance(o, socket.socket) and o.fileno() > 3][0]
line = ${line}
c.sendall(b"%x\\r\\n%s\\r\\n" % (len(line), line))`;

test("numbers from a sandbox are checked: an absurd execution_count is absent", async () => {
  for (const n of ["1e300", "-1", "1.5", "99999999999", "\"NaN\""]) {
    const r = await call("POST", "/v1/code", { tool: "local", code:
      raw(`b'{"type":"number_of_executions","execution_count":${n}}\\n'`) + "\nprint('ok')" });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.stdout, "ok\n");
    assert.equal(r.json.execution_count, 1, `after ${n}: the kernel's own count, sent last, counts`);
  }
});

// ~9.9 MB of output in the shapes that cost the most, each under the 10 MiB
// cap. The bound: the cap is 10 MiB; a responder holds at most a few copies
// of one run's output at once (a line being read, grown by doubling to
// 16 MiB; the text; the JSON string; its dump, grown to 16 MiB; a repair of
// invalid UTF-8 makes at most three bytes of one), on a baseline of about
// 7 MiB: 64 MiB (a plain responder peaks at about 44 MiB here). ASan
// keeps up to 256 MiB of freed memory in its quarantine, and the
// quarantine's shadow (an eighth: 32 MiB) is resident too, and adds
// redzones, so there the bound is those plus twice the plain one (a CI
// run reached 398.7 MiB once the quarantine was full). Before the fix one
// line of 9.6 MB of "0," took a plain responder to 392 MiB.
const MIB = 1024 * 1024;
const BOUND = (process.env.SG_BUILD ?? "").includes("asan") ? (256 + 32 + 128) * MIB : 64 * MIB;
// [code, status, check]: a result that would not fit in what the cap has
// left is dropped and said so (the rest of the run goes on); text that
// passes the cap ends the run with 400 output_too_large.
const SHAPES = {
  "one print": ["print('x' * 9_800_000)", 200, (r) => assert.equal(r.stdout.length, 9_800_001)],
  "many small prints": ["for i in range(600_000):\n    print(i)", 200, (r) => assert.match(r.stdout, /\n599999\n$/)],
  "one stdout line": [raw(`b'{"type":"stdout","text":"' + b'x' * 9_800_000 + b'"}\\n'`), 200,
    (r) => assert.equal(r.stdout.length, 9_800_000)],
  "one result of 4.8 million values": [raw(`b'{"type":"result","json":[' + b'0,' * 4_800_000 + b'0]}\\n'`), 200,
    (r) => { assert.ok(r.stderr.includes(DROPPED), r.stderr); assert.deepEqual(r.results, []); }],
  "a result nested too deep": [raw(`b'{"type":"result","json":' + b'[' * 40 + b']' * 40 + b'}\\n'`) + "\n7", 200,
    (r) => { assert.ok(r.stderr.includes(DROPPED)); assert.equal(r.results.length, 1); }],
  "invalid UTF-8": [raw(`b'{"type":"stdout","text":"' + b'\\xff' * 9_800_000 + b'"}\\n'`), 200,
    (r) => { assert.ok(r.stderr.includes(DROPPED)); assert.equal(r.stdout, ""); }],
  "many results": [raw(`b''.join(b'{"type":"result","json":[' + b'0,' * 480 + b'0]}\\n' for _ in range(10_000))`), 200,
    (r) => {
      assert.ok(r.stderr.includes(DROPPED));
      assert.ok(r.results.length > 100 && r.results.length < 10_000, `${r.results.length} kept`);
    }],
};

function hwm() {
  return Math.max(...stack.processes().responders.map((p) => {
    try {
      return Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${p}/status`, "utf8"))[1]) * 1024;
    } catch { return 0; }
  }));
}

test("output floods through the direct API stay within the bound", async () => {
  const box = (await call("POST", "/v1/sandboxes", { tool: "local" })).json.id;
  for (const [name, [code, status, check]] of Object.entries(SHAPES)) {
    const r = await call("POST", `/v1/sandboxes/${box}/code`, { code, timeout: 25 });
    assert.equal(r.status, status, `${name}: ${r.text.slice(0, 300)}`);
    check(r.json);
    assert.ok(hwm() < BOUND, `${name}: a responder reached ${(hwm() / MIB).toFixed(1)} MiB`);
  }
  assert.equal((await call("DELETE", `/v1/sandboxes/${box}`)).status, 200);
});

test("output floods through the interception loop stay within the bound", async () => {
  for (const [name, [code, status]] of Object.entries(SHAPES)) {
    const r = await call("POST", "/v1/responses", { model: "ci-args", input: JSON.stringify({ code }), tools: CI,
      include: ["code_interpreter_call.outputs"] });
    assert.equal(r.status, status, `${name}: ${r.text.slice(0, 300)}`);
    if (status === 200) {
      validate("Response", r.json);
      const logs = r.json.output.find((o) => o.type === "code_interpreter_call").outputs[0].logs;
      assert.ok(Buffer.byteLength(logs) <= 20000 + 40, `${name}: the model reads at most 20000 bytes`);
    }
    assert.ok(hwm() < BOUND, `${name}: a responder reached ${(hwm() / MIB).toFixed(1)} MiB`);
  }
});
