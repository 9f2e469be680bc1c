// Conversation state as OpenAI keeps it, through the official SDK and
// lighttpd, on an upstream that keeps state (the fake, as OpenAI: state
// "upstream") and on one that keeps none (the fake's nostate- models, as
// vLLM or llama.cpp: state "gateway"). The fake refuses what OpenAI
// refuses: an id it never issued, a reference it does not hold, a
// function call left without its output. The scripted model ci-convo
// runs print('turn U') after each user message (U: user messages in the
// whole conversation) and, asked about the weather, calls get_weather in
// the same turn; once every call is answered it says
// "turn U: <outputs>; seen users=U outputs=C" — what it saw of the history.
import { test, describe, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import OpenAI from "openai";
import { startStack, KEYS, serviceUser } from "./harness.mjs";
import { validate } from "./schema.mjs";

const CI = { type: "code_interpreter", container: { type: "auto" } };
const WEATHER = { type: "function", name: "get_weather", strict: false,
  parameters: { type: "object", properties: { city: { type: "string" } } } };
const TOOLS = [CI, WEATHER];
const MODES = [["upstream", "convo-up"], ["gateway", "convo-gw"]];

const isRoot = process.getuid() === 0;
let stack, alice, bob;

before(async () => {
  stack = await startStack({
    models: (model) => [
      model("convo-up", "ci-convo", 'state = "upstream";'),
      model("convo-gw", "nostate-ci-convo", 'state = "gateway";'),
      model("echo-gw", "nostate-echo", 'state = "gateway";'),
    ].join(","),
  });
  alice = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
  bob = new OpenAI({ apiKey: KEYS.bob, baseURL: stack.url("/v1"), maxRetries: 0 });
});
after(async () => {
  // Every request sandgate forwarded in the whole file: only ids the
  // upstream issued.
  if (stack) await noForeignIds();
  await stack?.stop();
});
beforeEach(async () => { await reset(); });

// Forget what the fake saw so far, once its ids are noted as issued.
async function reset() {
  await harvest();
  await stack.resetFake();
}

// Ids the fake issued (in anything it answered) and every id a forwarded
// request carries: each of the latter must be among the former.
const issued = new Set();
async function harvest() {
  const reqs = await stack.fakeRequests();
  for (const q of reqs) for (const m of (q.response_body ?? "").matchAll(/"id":"([^"]+)"/g)) issued.add(m[1]);
  for (const q of reqs) checkIds(q.body);
  return reqs;
}
const noForeignIds = harvest;
function checkIds(body) {
  if (!body || typeof body !== "object") return;
  if (typeof body.previous_response_id === "string") {
    assert.ok(issued.has(body.previous_response_id), `previous_response_id ${body.previous_response_id} was never the upstream's`);
  }
  for (const it of Array.isArray(body.input) ? body.input : []) {
    assert.notEqual(it.type, "item_reference", "no reference goes upstream unresolved: " + JSON.stringify(it));
    assert.notEqual(it.type, "code_interpreter_call", "no code_interpreter_call item goes upstream");
    if (typeof it.id === "string") assert.ok(issued.has(it.id), `input item id ${it.id} was never the upstream's`);
  }
}

async function upstreamBodies() {
  return (await harvest()).filter((q) => q.path.endsWith("/responses")).map((q) => q.body);
}

const codeCall = (r) => r.output.find((o) => o.type === "code_interpreter_call");
const fnCall = (r) => r.output.find((o) => o.type === "function_call");

for (const [mode, model] of MODES) {
  describe(`state held by the ${mode}`, () => {
    test("references to a code call and a message resolve", async () => {
      const r1 = await alice.responses.create({ model, input: "hello", tools: TOOLS });
      assert.equal(r1.output_text, "turn 1: turn 1; seen users=1 outputs=1");
      const ci = codeCall(r1), msg = r1.output.find((o) => o.type === "message");
      await reset();
      const r2 = await alice.responses.create({ model, tools: TOOLS, input: [
        { role: "user", content: "hello" }, { type: "item_reference", id: ci.id },
        { type: "item_reference", id: msg.id }, { role: "user", content: "more" }] });
      assert.equal(r2.output_text, "turn 2: turn 2; seen users=2 outputs=2");
      const first = (await upstreamBodies())[0];
      const types = first.input.map((i) => i.type ?? "message");
      assert.deepEqual(types, ["message", "function_call", "function_call_output", "message", "message"]);
      assert.equal(first.input[1].arguments, JSON.stringify({ code: "print('turn 1')" }));
      assert.equal(first.input[2].output.trim(), "turn 1", "the code's result, as the model read it");
      assert.equal(first.store, mode === "gateway" ? false : undefined);
    });

    test("a mixed turn continues in one step with references and the client's output", async () => {
      const r1 = await alice.responses.create({ model, input: "what is the weather", tools: TOOLS });
      assert.deepEqual(r1.output.map((o) => o.type), ["code_interpreter_call", "function_call"]);
      const fc = fnCall(r1);
      const r2 = await alice.responses.create({ model, tools: TOOLS, input: [
        { role: "user", content: "what is the weather" }, { type: "item_reference", id: codeCall(r1).id },
        { type: "item_reference", id: fc.id }, { type: "function_call_output", call_id: fc.call_id, output: "sunny" }] });
      assert.equal(r2.output_text, "turn 1: turn 1 | sunny; seen users=1 outputs=2");
    });

    test("a mixed turn continues with previous_response_id and only the client's output", async () => {
      const r1 = await alice.responses.create({ model, input: "what is the weather", tools: TOOLS });
      const fc = fnCall(r1);
      await reset();
      const r2 = await alice.responses.create({ model, tools: TOOLS, previous_response_id: r1.id,
        input: [{ type: "function_call_output", call_id: fc.call_id, output: "sunny" }] });
      assert.equal(r2.output_text, "turn 1: turn 1 | sunny; seen users=1 outputs=2");
      assert.equal(r2.previous_response_id, r1.id, "the client's own id is echoed");
      const first = (await upstreamBodies())[0];
      if (mode === "upstream") {
        assert.match(first.previous_response_id, /^resp_/);
        assert.notEqual(first.previous_response_id, r1.id);
        assert.deepEqual(first.input.map((i) => i.type), ["function_call_output", "function_call_output"],
          "sandgate answers its own code call, the client its function");
      } else {
        assert.equal(first.previous_response_id, undefined);
        assert.equal(first.store, false);
      }
    });

    test("streamed: a chain of turns, each continuing the last", async () => {
      let prev;
      for (const [i, word] of ["one", "two", "three"].entries()) {
        const stream = await alice.responses.create({ model, input: word, tools: TOOLS, previous_response_id: prev, stream: true });
        let done;
        for await (const ev of stream) if (ev.type === "response.completed") done = ev.response;
        assert.ok(done, "the stream completes");
        const text = done.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("");
        assert.equal(text, `turn ${i + 1}: turn ${i + 1}; seen users=${i + 1} outputs=${i + 1}`);
        // The streamed answer is the one stored.
        const got = await alice.responses.retrieve(done.id);
        assert.equal(got.output_text, text);
        prev = done.id;
      }
    });
  });
}

test("a chain of three turns on a stateless upstream: it receives the whole history", async () => {
  let prev;
  for (const word of ["one", "two", "three"]) {
    const r = await alice.responses.create({ model: "convo-gw", input: word, tools: TOOLS, previous_response_id: prev,
      instructions: "be brief" });
    prev = r.id;
  }
  const last = await alice.responses.retrieve(prev);
  assert.equal(last.output_text, "turn 3: turn 3; seen users=3 outputs=3");
  const bodies = await upstreamBodies();
  const final = bodies[bodies.length - 1];
  const users = final.input.filter((i) => i.role === "user").map((i) => i.content);
  assert.deepEqual(users, ["one", "two", "three"]);
  assert.equal(final.input.filter((i) => i.type === "function_call").length, 3);
  assert.equal(final.input.filter((i) => i.type === "function_call_output").length, 3);
  assert.equal(final.input.filter((i) => i.type === "message" && i.role === "assistant").length, 2);
  assert.equal(final.instructions, "be brief", "instructions are the request's own");
  assert.equal(final.store, false);
  assert.ok(!("previous_response_id" in final));
});

test("another key's response or item is not found", async () => {
  const r1 = await alice.responses.create({ model: "convo-gw", input: "hello", tools: TOOLS });
  const ci = codeCall(r1);
  await assert.rejects(bob.responses.create({ model: "convo-gw", previous_response_id: r1.id, input: "x" }),
    (e) => e.status === 400 && e.code === "previous_response_not_found" && e.param === "previous_response_id");
  await assert.rejects(bob.responses.create({ model: "convo-up", input: [{ type: "item_reference", id: ci.id }] }),
    (e) => e.status === 400 && e.param === "input" && e.error?.message === `Item with id '${ci.id}' not found.`);
  await assert.rejects(bob.responses.retrieve(r1.id), (e) => e.status === 404);
  await assert.rejects(bob.responses.inputItems.list(r1.id), (e) => e.status === 404);
  await assert.rejects(bob.responses.delete(r1.id), (e) => e.status === 404);
  // Still alice's, whole.
  assert.equal((await alice.responses.retrieve(r1.id)).output_text, r1.output_text);
});

test("retrieve, input items with pagination, delete", async () => {
  const input = ["a", "b", "c", "d", "e"].map((t) => ({ role: "user", content: t }));
  const r = await alice.responses.create({ model: "echo-gw", input, metadata: { k: "v" } });
  const got = await alice.responses.retrieve(r.id);
  validate("Response", got);
  assert.deepEqual(got, r, "retrieved as it was answered");

  const page1 = await stack.call("GET", `/v1/responses/${r.id}/input_items?limit=2`);
  assert.equal(page1.status, 200, page1.text);
  validate("ResponseItemList", page1.json);
  assert.deepEqual(page1.json.data.map((i) => i.content[0].text), ["e", "d"], "newest first by default");
  assert.equal(page1.json.has_more, true);
  assert.equal(page1.json.first_id, page1.json.data[0].id);
  assert.equal(page1.json.last_id, page1.json.data[1].id);
  const page2 = await stack.call("GET", `/v1/responses/${r.id}/input_items?limit=2&after=${page1.json.last_id}`);
  assert.deepEqual(page2.json.data.map((i) => i.content[0].text), ["c", "b"]);
  const asc = await stack.call("GET", `/v1/responses/${r.id}/input_items?order=asc`);
  assert.deepEqual(asc.json.data.map((i) => i.content[0].text), ["a", "b", "c", "d", "e"]);
  assert.equal(asc.json.has_more, false);
  for (const it of asc.json.data) assert.match(it.id, /^msg_/);
  // The SDK's own pagination walks every page.
  const all = [];
  for await (const it of alice.responses.inputItems.list(r.id, { limit: 2, order: "asc" })) all.push(it.content[0].text);
  assert.deepEqual(all, ["a", "b", "c", "d", "e"]);
  const bad = await stack.call("GET", `/v1/responses/${r.id}/input_items?limit=1000`);
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, "limit");

  const del = await stack.call("DELETE", `/v1/responses/${r.id}`);
  assert.equal(del.status, 200);
  assert.deepEqual(del.json, { id: r.id, object: "response", deleted: true });
  const raw = await stack.call("DELETE", `/v1/responses/${r.id}`);
  assert.equal(raw.status, 404);
  await assert.rejects(alice.responses.retrieve(r.id), (e) => e.status === 404 &&
    e.error?.message === `Response with id '${r.id}' not found.`);
  await assert.rejects(alice.responses.create({ model: "echo-gw", previous_response_id: r.id, input: "x" }),
    (e) => e.status === 400 && e.code === "previous_response_not_found");
});

test("store: false is not kept", async () => {
  const r = await alice.responses.create({ model: "convo-gw", input: "hello", tools: TOOLS, store: false });
  assert.equal(r.store, false);
  await assert.rejects(alice.responses.retrieve(r.id), (e) => e.status === 404);
  await assert.rejects(alice.responses.create({ model: "convo-gw", previous_response_id: r.id, input: "x" }),
    (e) => e.status === 400 && e.code === "previous_response_not_found");
  await assert.rejects(alice.responses.create({ model: "convo-gw", input: [{ type: "item_reference", id: codeCall(r).id }] }),
    (e) => e.status === 400 && e.param === "input");
  // Replayed whole (as a client without a store does), the call still
  // reaches the model as its function call and output.
  const r2 = await alice.responses.create({ model: "convo-gw", tools: TOOLS, store: false,
    input: [{ role: "user", content: "hello" }, ...r.output, { role: "user", content: "more" }] });
  assert.equal(r2.output_text, "turn 2: turn 2; seen users=2 outputs=2");
});

// A command as the gateway's user (the store's files are its).
function asGateway(cmd, ...args) {
  return execFileSync(isRoot ? "setpriv" : cmd, isRoot ? [`--reuid=${serviceUser}`, `--regid=${serviceUser}`,
    "--init-groups", cmd, ...args] : args, { env: stack.env }).toString();
}

test("responses older than the retention are swept", async () => {
  const old = await alice.responses.create({ model: "convo-gw", input: "old", tools: TOOLS });
  const keep = await alice.responses.create({ model: "echo-gw", input: "new" });
  // Made two minutes ago, as far as the store knows.
  stack.sql(`UPDATE responses SET created_at = created_at - 120 WHERE id = '${old.id}'`);
  const conf = `${stack.dir}/sandgate.conf`;
  fs.writeFileSync(conf, fs.readFileSync(conf, "utf8") + "\nresponses: { retention = 60; };\n");
  let out = "";
  for (let i = 0; i < 50 && !/deleted/.test(out); i++) {
    out = asGateway(`${stack.dir}/bin/sandgate`, "--config", conf, "reap");
    if (!/deleted/.test(out)) await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal((await stack.call("GET", `/v1/responses/${old.id}`)).status, 404);
  await assert.rejects(alice.responses.create({ model: "echo-gw", input: [{ type: "item_reference", id: codeCall(old).id }] }),
    (e) => e.status === 400, "its items went with it");
  assert.equal((await stack.call("GET", `/v1/responses/${keep.id}`)).status, 200);
});
