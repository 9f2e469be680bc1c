// Findings of the third audit on the API, each performed against the real
// gateway: a key limited by `tools` reaching a sandbox through every other
// route (the Containers API, container files, sessions, a continuation, a
// replayed container id), also after a reload took the tool away; Chat
// bridge input it cannot translate; a gateway-state history too long to
// hold. Every refusal leaves what was stored as it was.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import { startStack, KEYS } from "./harness.mjs";
import { validate } from "./schema.mjs";

// dave may use no sandbox tool; eve any, until a reload limits her.
const DAVE = "sk-dave-" + crypto.randomBytes(8).toString("hex");
const EVE = "sk-eve-" + crypto.randomBytes(8).toString("hex");
const CI = [{ type: "code_interpreter", container: { type: "auto" } }];

let stack;
const call = (...args) => stack.call(...args);

before(async () => {
  stack = await startStack({
    keys: `{ name = "dave"; key = "${DAVE}"; tools = [ ]; },
    { name = "eve"; key = "${EVE}"; }`,
    // The default tool is local2 until the reload below makes it local.
    interception: 'sandbox_tool = "local2";',
    models: (model) => model("gw-echo", "nostate-echo", 'state = "gateway";') + ",\n  " +
      model("chat-echo", "chatonly-gpt-4.1-mini", 'state = "gateway"; api = "chat";'),
  });
});
after(async () => { await stack?.stop(); });

function assertError(r, status, param, code) {
  assert.equal(r.status, status, r.text);
  validate("ErrorResponse", r.json);
  assert.equal(r.json.error.type, "invalid_request_error");
  assert.equal(r.json.error.param, param, r.text);
  assert.equal(r.json.error.code, code, r.text);
}

const denied = (r, tool, param = "tool") => {
  assertError(r, 403, param, "tool_not_allowed");
  assert.equal(r.json.error.message, `This API key may not use the sandbox tool '${tool}'.`);
};

// The answer's text (what the SDKs call output_text).
const textOf = (r) => r.json.output.filter((o) => o.type === "message")
  .flatMap((o) => o.content.map((c) => c.text)).join("");

const sandboxes = () => stack.sql("SELECT id, tool, state FROM sandboxes ORDER BY id");

async function upload(id, name, text, key) {
  const form = new FormData();
  form.append("file", new Blob([text]), name);
  const r = await fetch(stack.url(`/v1/containers/${id}/files`), { method: "POST",
    headers: { authorization: `Bearer ${key}` }, body: form });
  return { status: r.status, json: await r.json() };
}

// A code_interpreter request running code (ci-turn runs the JSON it is
// given whenever the newest item is the user's).
const code = (src, more = {}) => ({ model: "ci-turn", input: JSON.stringify({ code: src }), tools: CI, ...more });

// ---------------------------------------------------------------- tools

test("a key with tools = [] makes no container, writes no file and runs nothing", async () => {
  const before = sandboxes();
  // The Files API touches no sandbox: dave may upload, not put it anywhere.
  const form = new FormData();
  form.append("purpose", "user_data");
  form.append("file", new Blob(["x"]), "x.txt");
  const file = await (await fetch(stack.url("/v1/files"), { method: "POST",
    headers: { authorization: `Bearer ${DAVE}` }, body: form })).json();
  assert.match(file.id, /^file-/);
  denied(await call("POST", "/v1/sandboxes", {}, DAVE), "local2");
  denied(await call("POST", "/v1/containers", { name: "mine" }, DAVE), "local2");
  denied(await call("POST", "/v1/containers", { name: "mine", file_ids: [file.id] }, DAVE), "local2");
  denied(await call("POST", "/v1/responses", code("print(1)", { tools: [{ type: "code_interpreter",
    container: { type: "auto", file_ids: [file.id] } }] }), DAVE), "local2", "tools");
  denied(await call("POST", "/v1/code", { code: "print(1)" }, DAVE), "local2");
  denied(await call("POST", "/v1/responses", code("print(1)"), DAVE), "local2", "tools");
  denied(await call("POST", "/v1/responses", code("print(1)", { metadata: { session_id: "s" } }), DAVE),
    "local2", "tools");
  assert.deepEqual(sandboxes(), before, "no sandbox was made");
  assert.deepEqual((await call("GET", "/v1/containers", undefined, DAVE)).json.data, []);
});

test("a container whose tool a reload took away is refused on every route, and kept", async () => {
  // eve's container (the default tool, local2), a file in it, a session
  // and a response whose code ran in the container.
  const c = await call("POST", "/v1/containers", { name: "kept" }, EVE);
  assert.equal(c.status, 200, c.text);
  const id = c.json.id;
  const f = await upload(id, "a.txt", "hello", EVE);
  assert.equal(f.status, 200, JSON.stringify(f.json));
  const ran = await call("POST", "/v1/responses", code("x = 41; print(x)", { tools: [{ type: "code_interpreter", container: id }] }), EVE);
  assert.equal(ran.status, 200, ran.text);
  const sess = await call("POST", "/v1/responses", code("y = 1; print(y)", { metadata: { session_id: "s1" } }), EVE);
  assert.equal(sess.status, 200, sess.text);
  const kept = sandboxes();

  // The default tool becomes local, and eve may use only that.
  await stack.reload((conf) => conf.replace('sandbox_tool = "local2";', 'sandbox_tool = "local";')
    .replace(`key = "${EVE}"; }`, `key = "${EVE}"; tools = [ "local" ]; }`));
  try {
    denied(await call("GET", `/v1/containers/${id}`, undefined, EVE), "local2");
    assert.deepEqual((await call("GET", "/v1/containers", undefined, EVE)).json.data, [], "not listed");
    denied(await call("DELETE", `/v1/containers/${id}`, undefined, EVE), "local2");
    const up = await upload(id, "b.txt", "nope", EVE);
    assert.equal(up.status, 403, JSON.stringify(up.json));
    assert.equal(up.json.error.code, "tool_not_allowed");
    denied(await call("POST", `/v1/containers/${id}/files`, { file_id: "file-x" }, EVE), "local2");
    denied(await call("GET", `/v1/containers/${id}/files`, undefined, EVE), "local2");
    denied(await call("GET", `/v1/containers/${id}/files/${f.json.id}`, undefined, EVE), "local2");
    denied(await call("GET", `/v1/containers/${id}/files/${f.json.id}/content`, undefined, EVE), "local2");
    denied(await call("DELETE", `/v1/containers/${id}/files/${f.json.id}`, undefined, EVE), "local2");
    denied(await call("POST", `/v1/sandboxes/${id}/code`, { code: "print(1)" }, EVE), "local2");
    // Through the model routes, before any upstream call: the container
    // named, the session's, a continuation's, a replayed call's.
    await stack.resetFake();
    denied(await call("POST", "/v1/responses", code("print(x)", { tools: [{ type: "code_interpreter", container: id }] }), EVE),
      "local2", "tools");
    denied(await call("POST", "/v1/responses", code("print(y)", { metadata: { session_id: "s1" } }), EVE),
      "local2", "tools");
    denied(await call("POST", "/v1/responses", code("print(x)", { previous_response_id: ran.json.id }), EVE),
      "local2", "tools");
    const replay = [{ role: "user", content: "go" },
      ...ran.json.output.filter((o) => o.type === "code_interpreter_call"),
      { role: "user", content: JSON.stringify({ code: "print(x)" }) }];
    denied(await call("POST", "/v1/responses", { model: "ci-turn", input: replay, tools: CI }, EVE), "local2", "tools");
    assert.deepEqual(await stack.fakeRequests(), [], "the upstream was never asked");
    // Another key's container is still only not found.
    assert.equal((await call("GET", `/v1/containers/${id}`, undefined, DAVE)).status, 404);
    assert.equal((await call("GET", `/v1/containers/${id}/files`, undefined, KEYS.bob)).status, 404);
    // A tool eve may use still works: a new container of local.
    const fresh = await call("POST", "/v1/containers", { name: "new" }, EVE);
    assert.equal(fresh.status, 200, fresh.text);
    assert.equal((await call("DELETE", `/v1/containers/${fresh.json.id}`, undefined, EVE)).status, 200);
    assert.deepEqual(sandboxes(), kept, "every refusal left the sandboxes as they were");
  } finally {
    await stack.reload((conf) => conf.replace('sandbox_tool = "local";', 'sandbox_tool = "local2";')
      .replace(`key = "${EVE}"; tools = [ "local" ]; }`, `key = "${EVE}"; }`));
  }
  // Nothing was lost: the container, its file, its state and the session's.
  assert.equal((await call("GET", `/v1/containers/${id}`, undefined, EVE)).status, 200);
  const got = await fetch(stack.url(`/v1/containers/${id}/files/${f.json.id}/content`), { headers: { authorization: `Bearer ${EVE}` } });
  assert.equal(await got.text(), "hello");
  const again = await call("POST", "/v1/responses", code("print(x + 1)", { tools: [{ type: "code_interpreter", container: id }] }), EVE);
  assert.match(textOf(again), /args result: 42/);
  const s2 = await call("POST", "/v1/responses", code("print(y + 1)", { metadata: { session_id: "s1" } }), EVE);
  assert.match(textOf(s2), /args result: 2/);
  assert.equal((await call("DELETE", `/v1/containers/${id}`, undefined, EVE)).status, 200);
});

// ---------------------------------------------------------------- bridge

test("the Chat bridge refuses a call or an output without call_id, before any upstream call", async () => {
  const call1 = { type: "function_call", call_id: "call_1", name: "f", arguments: "{}" };
  const out1 = { type: "function_call_output", call_id: "call_1", output: "ok" };
  const cases = [
    [[{ role: "user", content: "hi" }, { ...call1, call_id: undefined }, out1], "input[1].call_id", "missing_required_parameter"],
    [[{ role: "user", content: "hi" }, call1, { ...out1, call_id: undefined }], "input[2].call_id", "missing_required_parameter"],
    [[{ role: "user", content: "hi" }, call1, { ...out1, call_id: null }], "input[2].call_id", "missing_required_parameter"],
    [[{ role: "user", content: "hi" }, { ...call1, name: undefined }, out1], "input[1].name", "missing_required_parameter"],
    [[{ role: "user", content: "hi" }, { ...call1, arguments: undefined }, out1], "input[1].arguments", "missing_required_parameter"],
    [[{ role: "user", content: "hi" }, call1, { ...out1, output: undefined }], "input[2].output", "missing_required_parameter"],
    [[{ role: "user", content: "hi" }, { ...call1, call_id: 7 }, out1], "input[1].call_id", "invalid_type"],
  ];
  await stack.resetFake();
  for (const [input, param, errcode] of cases) {
    const r = await call("POST", "/v1/responses", { model: "chat-echo", input });
    assertError(r, 400, param, errcode);
    assert.equal(r.json.error.message, errcode === "invalid_type" ?
      `Invalid type for '${param}': expected a string, but got an integer instead.` :
      `Missing required parameter: '${param}'.`);
  }
  assert.deepEqual(await stack.fakeRequests(), [], "the upstream was never asked");
  const ok = await call("POST", "/v1/responses", { model: "chat-echo", input: [{ role: "user", content: "hi" }, call1, out1] });
  assert.equal(ok.status, 200, ok.text);
  const [sent] = (await stack.fakeRequests()).map((x) => x.body);
  assert.deepEqual(sent.messages[1].tool_calls.map((t) => t.id), ["call_1"]);
  assert.equal(sent.messages[2].tool_call_id, "call_1");
});

// ---------------------------------------------------------------- history

// The responder's peak resident memory, from /proc.
function hwm(pid) {
  try {
    const m = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmHWM:\s+(\d+) kB/m);
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

// A chain of n stored responses after first (eve's), each with an input
// item of bytes bytes, written straight into the store: what n long
// turns would have left. Its last id.
function chain(first, n, bytes, tag) {
  const big = stack.storeKind === "postgresql" ? `repeat('a', ${bytes})` :
    `substr(replace(hex(zeroblob(${bytes})), '0', 'a'), 1, ${bytes})`;
  const id = (k) => `'resp_${tag}_' || ${k}`;
  const k = `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ${n - 1})`;
  stack.sql(`INSERT INTO responses (id, tenant, upstream_id, model, created_at, prev, body) ${k}
    SELECT ${id("i")}, r.tenant, '', r.model, r.created_at, CASE WHEN i = 0 THEN r.id ELSE ${id("(i - 1)")} END, r.body
    FROM k, responses r WHERE r.id = '${first}'`);
  stack.sql(`INSERT INTO response_items (response_id, tenant, output, seq, item_id, item, upstream) ${k}
    SELECT ${id("i")}, r.tenant, 0, 0, 'msg_${tag}_' || i, '{"type":"message","role":"user","content":"x"}',
      '[{"role":"user","content":"' || ${big} || '"}]'
    FROM k, responses r WHERE r.id = '${first}'`);
  return `resp_${tag}_${n - 1}`;
}

test("a gateway-state history past max_body_bytes is refused 400 context_length_exceeded, memory bounded, nothing lost", async () => {
  const first = await call("POST", "/v1/responses", { model: "gw-echo", input: "start" }, EVE);
  assert.equal(first.status, 200, first.text);
  // Within the bound: a short chain goes on as before.
  const short = chain(first.json.id, 3, 1000, "short");
  const fine = await call("POST", "/v1/responses", { model: "gw-echo", input: "more", previous_response_id: short }, EVE);
  assert.equal(fine.status, 200, fine.text);
  assert.equal(textOf(fine), "echo: more");

  // 1,000 turns of 50 KB: 50 MB of history for one request, where the
  // harness's max_body_bytes is 64 KiB.
  const last = chain(first.json.id, 1000, 50000, "long");
  const base = Math.max(...stack.processes().responders.map(hwm));
  await stack.resetFake();
  const r = await call("POST", "/v1/responses", { model: "gw-echo", input: "and?", previous_response_id: last }, EVE);
  assertError(r, 400, "input", "context_length_exceeded");
  assert.match(r.json.error.message, /^Your input exceeds the context window of this model\. Please adjust your input and try again\./);
  assert.deepEqual(await stack.fakeRequests(), [], "nothing went upstream");
  // Loaded up to the bound and no further (measured: the peak grew by
  // 1 MiB, 6 MiB under ASan; by 145 MiB before the bound).
  const peak = Math.max(...stack.processes().responders.map(hwm));
  assert.ok(peak - base <= 32 << 20, `responders peaked ${(peak - base) >> 20} MiB above ${base >> 20} MiB`);
  // Refused, not lost: every response of the chain is still there.
  assert.equal(stack.sql("SELECT count(*) AS n FROM responses WHERE id LIKE 'resp_long_%'")[0].n, 1000);
  assert.equal((await call("GET", `/v1/responses/${last}`, undefined, EVE)).status, 200);
  const items = await call("GET", `/v1/responses/${last}/input_items`, undefined, EVE);
  assert.equal(items.status, 200, items.text);
  assert.equal(items.json.data.length, 1);
});
