// The fake upstream on its own (no sandgate): it keeps conversation state
// the way OpenAI does (stored responses, previous_response_id,
// item_reference, ids that must name persisted items, calls paired with
// outputs), and its nostate- models are stateless upstreams. The gateway's
// tests rely on these rules, so they are pinned here (tests/fakes/upstream.py,
// STATE in its docstring).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { root, waitFor, sseEvents } from "./harness.mjs";

let fake, port, dir;
const KEY = "fake-state-key";

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sgfake-"));
  fake = spawn("python3", [path.join(root, "tests/fakes/upstream.py"), "--port", "0",
    "--port-file", `${dir}/port`, "--api-key", KEY, "--quiet"], { stdio: ["ignore", "ignore", "inherit"] });
  await waitFor(() => fs.existsSync(`${dir}/port`), "fake upstream");
  port = Number(fs.readFileSync(`${dir}/port`, "utf8"));
});

after(async () => {
  fake.kill("SIGTERM");
  await new Promise((r) => (fake.exitCode !== null ? r() : fake.once("exit", r)));
  fs.rmSync(dir, { recursive: true, force: true });
});

const CODE = { type: "function", name: "litellm_code_execution", parameters: { type: "object",
  properties: { code: { type: "string" } }, required: ["code"] } };
const WEATHER = { type: "function", name: "get_weather", parameters: { type: "object",
  properties: { city: { type: "string" } }, required: ["city"] } };
const TOOLS = [CODE, WEATHER];

async function post(body, p = "/v1/responses") {
  const r = await fetch(`http://127.0.0.1:${port}${p}`, { method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const text = await r.text();
  if (body.stream && r.status === 200) {
    const done = sseEvents(text).map((e) => JSON.parse(e.data)).find((e) => e.type === "response.completed");
    return { status: r.status, json: done.response };
  }
  return { status: r.status, json: JSON.parse(text) };
}

async function ok(body) {
  const r = await post(body);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return r.json;
}

const user = (text) => ({ role: "user", content: text });
const out = (call, output) => ({ type: "function_call_output", call_id: call.call_id, output });
const calls = (r) => r.output.filter((o) => o.type === "function_call");
const text = (r) => r.output.filter((o) => o.type === "message").flatMap((m) => m.content).map((c) => c.text).join("");

function refused(r, message, param, code = null) {
  assert.equal(r.status, 400, JSON.stringify(r.json));
  assert.deepEqual(r.json, { error: { message, type: "invalid_request_error", param, code } });
}

const NOT_PERSISTED = (id) => `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. ` +
  "Try again with `store` set to true, or remove this item from your input.";

for (const stream of [false, true]) {
  test(`ci-convo over previous_response_id, a mixed turn included (stream ${stream})`, async () => {
    const r1 = await ok({ model: "ci-convo", input: "hello", tools: TOOLS, stream });
    assert.deepEqual(calls(r1).map((c) => [c.name, c.arguments]), [["litellm_code_execution", '{"code":"print(\'turn 1\')"}']]);
    assert.match(calls(r1)[0].id, /^fc_/);
    const r2 = await ok({ model: "ci-convo", previous_response_id: r1.id, input: [out(calls(r1)[0], "turn 1\n")],
      tools: TOOLS, stream });
    assert.equal(text(r2), "turn 1: turn 1; seen users=1 outputs=1");
    const r3 = await ok({ model: "ci-convo", previous_response_id: r2.id, input: "and the Weather?", tools: TOOLS, stream });
    assert.deepEqual(calls(r3).map((c) => [c.name, c.arguments]),
      [["litellm_code_execution", '{"code":"print(\'turn 2\')"}'], ["get_weather", '{"city":"Paris"}']]);
    const r4 = await ok({ model: "ci-convo", previous_response_id: r3.id,
      input: [out(calls(r3)[0], " turn 2 "), out(calls(r3)[1], [{ type: "input_text", text: "sunny" }])], tools: TOOLS, stream });
    assert.equal(text(r4), "turn 2: turn 2 | sunny; seen users=2 outputs=3");
    assert.equal(r4.previous_response_id, r3.id);
  });
}

test("ci-convo: no weather call without another function tool or without the word", async () => {
  const a = await ok({ model: "ci-convo", input: "weather please", tools: [CODE] });
  assert.equal(calls(a).length, 1);
  const b = await ok({ model: "ci-convo", input: "weatherman", tools: TOOLS });
  assert.equal(calls(b).length, 1);
  const c = await ok({ model: "ci-convo", input: "no tools" });
  assert.equal(text(c), "final: none", "the scripted models' common rule");
});

test("the whole history replayed (store true or false) is the same conversation", async () => {
  const r1 = await ok({ model: "ci-convo", input: [user("a")], tools: TOOLS, store: false });
  const [c1] = calls(r1);
  // store:false: its items are not persisted, so they go back without their ids.
  const { id, ...bare } = c1;
  refused(await post({ model: "ci-convo", input: [user("a"), c1, out(c1, "x")], tools: TOOLS }), NOT_PERSISTED(id), "input");
  const r2 = await ok({ model: "ci-convo", input: [user("a"), bare, out(c1, "x")], tools: TOOLS, store: false });
  assert.equal(text(r2), "turn 1: x; seen users=1 outputs=1");
  const r3 = await ok({ model: "ci-convo", input: [user("a"), bare, out(c1, "x"), user("b")], tools: TOOLS });
  assert.deepEqual(JSON.parse(calls(r3)[0].arguments), { code: "print('turn 2')" });
});

test("previous_response_id: unknown, or a store:false response → 400 previous_response_not_found", async () => {
  refused(await post({ model: "ci-convo", previous_response_id: "resp_nope", input: "x" }),
    "Previous response with id 'resp_nope' not found.", "previous_response_id", "previous_response_not_found");
  const r = await ok({ model: "echo", input: "x", store: false });
  refused(await post({ model: "echo", previous_response_id: r.id, input: "y" }),
    `Previous response with id '${r.id}' not found.`, "previous_response_id", "previous_response_not_found");
  refused(await post({ model: "echo", previous_response_id: r.id, input: "y", stream: true }),
    `Previous response with id '${r.id}' not found.`, "previous_response_id", "previous_response_not_found");
});

test("instructions are not carried over; the echo model sees the expanded input", async () => {
  const r1 = await ok({ model: "echo", input: "first", instructions: "be brief" });
  const r2 = await ok({ model: "echo", previous_response_id: r1.id, input: [{ role: "assistant", content: "hm" }] });
  assert.equal(text(r2), "echo: first", "the last user message is the previous response's");
  assert.equal(r2.instructions, null);
});

test("item_reference resolves to the persisted item; unknown → 400", async () => {
  const r1 = await ok({ model: "ci-convo", input: "hi", tools: TOOLS });
  const [c1] = calls(r1);
  const r2 = await ok({ model: "ci-convo", input: [user("hi"), { type: "item_reference", id: c1.id }, out(c1, "42")], tools: TOOLS });
  assert.equal(text(r2), "turn 1: 42; seen users=1 outputs=1");
  const [msg] = r2.output;
  const r3 = await ok({ model: "ci-convo", tools: TOOLS, input: [user("hi"), { type: "item_reference", id: c1.id },
    out(c1, "42"), { type: "item_reference", id: msg.id }, user("again")] });
  assert.deepEqual(JSON.parse(calls(r3)[0].arguments), { code: "print('turn 2')" });
  refused(await post({ model: "ci-convo", input: [user("hi"), { type: "item_reference", id: "fc_nope" }] }),
    "Item with id 'fc_nope' not found.", "input");
  refused(await post({ model: "ci-convo", input: [{ type: "item_reference", id: "ci_abc" }] }),
    "Item with id 'ci_abc' not found.", "input");
});

test("output-type items with ids must be persisted ones; encrypted reasoning and input ids are fine", async () => {
  const r1 = await ok({ model: "ci-convo", input: "hi", tools: TOOLS });
  const [c1] = calls(r1);
  await ok({ model: "ci-convo", input: [user("hi"), c1, out(c1, "1")], tools: TOOLS });
  const cases = [
    { type: "function_call", id: "fc_unknown", call_id: "call_x", name: "get_weather", arguments: "{}" },
    { type: "message", role: "assistant", id: "msg_unknown", status: "completed",
      content: [{ type: "output_text", text: "hi", annotations: [] }] },
    { role: "assistant", id: "msg_unknown2", content: "easy form" },
    { type: "reasoning", id: "rs_unknown", summary: [] },
    { type: "code_interpreter_call", id: "ci_abc", status: "completed", code: "1", container_id: "cntr_x", outputs: null },
  ];
  for (const item of cases) {
    const input = [user("hi"), item];
    if (item.type === "function_call") input.push(out(item, "1"));
    refused(await post({ model: "ci-convo", input, tools: TOOLS }), NOT_PERSISTED(item.id), "input");
  }
  await ok({ model: "ci-convo", tools: TOOLS, input: [{ type: "message", role: "user", id: "msg_user_given", content: "hi" },
    { type: "reasoning", id: "rs_unknown", summary: [], encrypted_content: "gAAAA" },
    { type: "function_call", call_id: "call_noid", name: "get_weather", arguments: "{}" },
    { type: "function_call_output", id: "fco_any", call_id: "call_noid", output: "1" }] });
});

test("every function_call needs a later output, every output an earlier call", async () => {
  const fc = { type: "function_call", call_id: "call_a", name: "get_weather", arguments: "{}" };
  refused(await post({ model: "ci-convo", input: [user("x"), fc], tools: TOOLS }), "No tool output found for function call call_a.", "input");
  refused(await post({ model: "echo", input: [user("x"), out(fc, "1")] }),
    "No tool call found for function call output with call_id call_a.", "input");
  refused(await post({ model: "echo", input: [user("x"), out(fc, "1"), fc] }),
    "No tool call found for function call output with call_id call_a.", "input");
  // Across previous_response_id too: a response that ended with a call needs its output.
  const r1 = await ok({ model: "ci-convo", input: "hi", tools: TOOLS });
  refused(await post({ model: "ci-convo", previous_response_id: r1.id, input: "ignoring the call", tools: TOOLS }),
    `No tool output found for function call ${calls(r1)[0].call_id}.`, "input");
});

test("nostate-: the same model, nothing persisted, ids ignored, calls still paired", async () => {
  const r1 = await ok({ model: "nostate-ci-convo", input: "hi", tools: TOOLS });
  assert.equal(r1.model, "nostate-ci-convo");
  const [c1] = calls(r1);
  refused(await post({ model: "nostate-ci-convo", previous_response_id: r1.id, input: [out(c1, "1")], tools: TOOLS }),
    `Previous response with id '${r1.id}' not found.`, "previous_response_id", "previous_response_not_found");
  refused(await post({ model: "ci-convo", previous_response_id: r1.id, input: [out(c1, "1")], tools: TOOLS }),
    `Previous response with id '${r1.id}' not found.`, "previous_response_id", "previous_response_not_found");
  refused(await post({ model: "nostate-ci-convo", input: [user("hi"), { type: "item_reference", id: c1.id }, out(c1, "1")] }),
    `Item with id '${c1.id}' not found.`, "input");
  // A stateful response's items are no more known to a stateless model.
  const s1 = await ok({ model: "ci-convo", input: "hi", tools: TOOLS });
  refused(await post({ model: "nostate-ci-convo", previous_response_id: s1.id, input: [out(calls(s1)[0], "1")] }),
    `Previous response with id '${s1.id}' not found.`, "previous_response_id", "previous_response_not_found");
  // Item ids are ignored: the full history, ids and all, is what it needs.
  const r2 = await ok({ model: "nostate-ci-convo", input: [user("hi"), c1, out(c1, "1"),
    { type: "code_interpreter_call", id: "ci_x", status: "completed", code: "", container_id: "c", outputs: null }], tools: TOOLS });
  assert.equal(text(r2), "turn 1: 1; seen users=1 outputs=1");
  refused(await post({ model: "nostate-ci-convo", input: [user("hi"), c1], tools: TOOLS }),
    `No tool output found for function call ${c1.call_id}.`, "input");
  // Its items were never persisted, even with store true (the default).
  refused(await post({ model: "ci-convo", input: [user("hi"), c1, out(c1, "1")], tools: TOOLS }), NOT_PERSISTED(c1.id), "input");
  const streamed = await ok({ model: "nostate-ci-convo", input: "hi", tools: TOOLS, stream: true });
  assert.equal(streamed.model, "nostate-ci-convo");
  const chat = await post({ model: "nostate-ci-convo", messages: [{ role: "user", content: "hi" }],
    tools: [{ type: "function", function: CODE }] }, "/v1/chat/completions");
  assert.equal(chat.status, 200);
  assert.equal(chat.json.choices[0].message.tool_calls[0].function.arguments, '{"code":"print(\'turn 1\')"}');
});

test("the recorder keeps the body as sent, not the expanded input", async () => {
  await fetch(`http://127.0.0.1:${port}/__reset`, { method: "POST" });
  const r1 = await ok({ model: "ci-convo", input: "hi", tools: TOOLS });
  const body = { model: "ci-convo", previous_response_id: r1.id, input: [out(calls(r1)[0], "1")], tools: TOOLS };
  await ok(body);
  const recs = (await (await fetch(`http://127.0.0.1:${port}/__requests`)).json()).requests;
  assert.deepEqual(recs[1].body, body);
});

test("the existing scripted models script on the expanded input", async () => {
  const r1 = await ok({ model: "ci-two", input: "go", tools: [CODE] });
  const r2 = await ok({ model: "ci-two", previous_response_id: r1.id, input: [out(calls(r1)[0], "")], tools: [CODE] });
  assert.deepEqual(JSON.parse(calls(r2)[0].arguments), { code: "print(x + 1)" }, "n=1 counted from the stored history");
  const r3 = await ok({ model: "ci-two", previous_response_id: r2.id, input: [out(calls(r2)[0], "43\n")], tools: [CODE] });
  assert.equal(text(r3), "Done: 43");
  // ci-reason, store false, encrypted reasoning replayed with its id: accepted.
  const a = await ok({ model: "ci-reason", input: "think", tools: [CODE], store: false, include: ["reasoning.encrypted_content"] });
  const [rs] = a.output;
  assert.ok(rs.encrypted_content);
  const b = await ok({ model: "ci-reason", input: [user("think"), rs, { ...calls(a)[0], id: undefined }, out(calls(a)[0], "30030")],
    tools: [CODE], store: false });
  assert.equal(text(b), "The product of the first six primes is 30030");
});
