// OpenAI's Conversations API through the official SDK and lighttpd:
// conversations and their items per key (another key's is 404, as if
// absent), OpenAI's objects and paging, checked against the vendored
// spec; responses.create({conversation}) continuing from a conversation
// on an upstream that keeps state and on one that keeps none, its
// container following it; the Agents SDK's OpenAIConversationsSession
// (which sends no `conversation`: it lists, replays and appends items
// itself) keeping a sandbox's variables across runs; and bad input.
// The fake's ci-turn runs the newest user text ({"code": …}) and answers
// "args result: <its output>" (tests/fakes/upstream.py).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { Agent, Runner, OpenAIProvider, OpenAIConversationsSession, codeInterpreterTool, setTracingDisabled }
  from "@openai/agents";
import { startStack, KEYS, reapNow } from "./harness.mjs";
import { validate } from "./schema.mjs";

setTracingDisabled(true); // the Agents SDK would export traces to OpenAI

const CI = { type: "code_interpreter", container: { type: "auto" } };
const code = (c) => JSON.stringify({ code: c });
const TIMEOUT = { timeout: 120000 };

let stack, alice, bob;

before(async () => {
  stack = await startStack({
    // ci-turn (the harness's) leaves state to the upstream; turn-gw is
    // the same model on an upstream that keeps none.
    models: (model) => model("turn-gw", "nostate-ci-turn", 'state = "gateway";'),
  });
  alice = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0, timeout: 60000 });
  bob = new OpenAI({ apiKey: KEYS.bob, baseURL: stack.url("/v1"), maxRetries: 0, timeout: 60000 });
});
after(() => stack?.stop());

// Every item of a conversation, oldest first, through the SDK's pages.
async function allItems(client, id, query = {}) {
  const out = [];
  for await (const it of client.conversations.items.list(id, { order: "asc", limit: 2, ...query })) out.push(it);
  return out;
}

async function status(p) {
  try {
    await p;
    return 200;
  } catch (e) {
    return e.status ?? e;
  }
}

test("create, retrieve, update, list, add, retrieve and delete items, delete: OpenAI's objects", TIMEOUT, async () => {
  const c = await alice.conversations.create({ metadata: { topic: "demo" },
    items: [{ type: "message", role: "user", content: "hello" }, { role: "assistant", content: "hi there" }] });
  validate("ConversationResource", c);
  assert.match(c.id, /^conv_[0-9a-f]{48}$/);
  assert.equal(c.object, "conversation");
  assert.deepEqual(c.metadata, { topic: "demo" });
  const got = await alice.conversations.retrieve(c.id);
  validate("ConversationResource", got);
  assert.deepEqual(got, c);

  const up = await alice.conversations.update(c.id, { metadata: { topic: "other", n: "2" } });
  validate("ConversationResource", up);
  assert.deepEqual(up.metadata, { topic: "other", n: "2" });
  assert.equal(up.created_at, c.created_at);

  const added = await alice.conversations.items.create(c.id, { items: [
    { type: "message", role: "user", content: [{ type: "input_text", text: "third" }] },
    { type: "function_call", call_id: "call_1", name: "f", arguments: "{}" },
    { type: "function_call_output", call_id: "call_1", output: "out" },
  ] });
  validate("ConversationItemList", added);
  assert.equal(added.data.length, 3);
  assert.equal(added.has_more, false);
  assert.deepEqual(added.data.map((i) => i.id.split("_")[0]), ["msg", "fc", "fco"]);

  // Paged both ways: 5 items, 2 a page.
  const asc = await allItems(alice, c.id);
  assert.deepEqual(asc.map((i) => i.type), ["message", "message", "message", "function_call", "function_call_output"]);
  assert.deepEqual(asc[0].content, [{ type: "input_text", text: "hello" }], "a string content becomes parts");
  assert.equal(asc[1].role, "assistant");
  for (const it of asc) validate("ConversationItem", it);
  const desc = [];
  for await (const it of alice.conversations.items.list(c.id, { limit: 2 })) desc.push(it.id);
  assert.deepEqual(desc, asc.map((i) => i.id).reverse(), "the default order is desc");
  const page = (await stack.call("GET", `/v1/conversations/${c.id}/items?order=asc&limit=2&after=${asc[1].id}`)).json;
  validate("ConversationItemList", page);
  assert.deepEqual(page.data.map((i) => i.id), [asc[2].id, asc[3].id]);
  assert.equal(page.first_id, asc[2].id);
  assert.equal(page.last_id, asc[3].id);
  assert.equal(page.has_more, true);

  const one = await alice.conversations.items.retrieve(asc[3].id, { conversation_id: c.id });
  validate("ConversationItem", one);
  assert.deepEqual(one, asc[3]);
  const afterDelete = await alice.conversations.items.delete(asc[3].id, { conversation_id: c.id });
  validate("ConversationResource", afterDelete);
  assert.equal(afterDelete.id, c.id);
  assert.equal(await status(alice.conversations.items.retrieve(asc[3].id, { conversation_id: c.id })), 404);
  assert.equal((await allItems(alice, c.id)).length, 4);

  const del = await alice.conversations.delete(c.id);
  validate("DeletedConversationResource", del);
  assert.deepEqual(del, { id: c.id, object: "conversation.deleted", deleted: true });
  assert.equal(await status(alice.conversations.retrieve(c.id)), 404);
  assert.equal(await status(alice.conversations.items.list(c.id)), 404);
  // Its items went with it, in the store too.
  assert.equal(stack.sql(`SELECT count(*) AS n FROM conversation_items WHERE conversation_id = '${c.id}'`)[0].n, 0);
});

test("another key's conversation and items are not found, and stay as they were", TIMEOUT, async () => {
  const c = await alice.conversations.create({ items: [{ role: "user", content: "mine" }] });
  const [item] = await allItems(alice, c.id);
  const calls = [
    () => bob.conversations.retrieve(c.id),
    () => bob.conversations.update(c.id, { metadata: { x: "y" } }),
    () => bob.conversations.items.list(c.id),
    () => bob.conversations.items.create(c.id, { items: [{ role: "user", content: "theirs" }] }),
    () => bob.conversations.items.retrieve(item.id, { conversation_id: c.id }),
    () => bob.conversations.items.delete(item.id, { conversation_id: c.id }),
    () => bob.conversations.delete(c.id),
    () => bob.responses.create({ model: "ci-turn", conversation: c.id, input: code("print(1)"), tools: [CI] }),
  ];
  for (const [i, call] of calls.entries()) assert.equal(await status(call()), 404, `bob's call ${i}`);
  const r = await stack.call("GET", `/v1/conversations/${c.id}`, undefined, KEYS.bob);
  assert.equal(r.json.error.message, `Conversation with id '${c.id}' not found.`);
  assert.equal(r.json.error.type, "invalid_request_error");
  // Alice's is untouched.
  assert.deepEqual((await alice.conversations.retrieve(c.id)).metadata, {});
  assert.deepEqual((await allItems(alice, c.id)).map((i) => i.id), [item.id]);
});

test("bad input: OpenAI's 400s and 404s", TIMEOUT, async () => {
  const c = await alice.conversations.create({});
  const md17 = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"]));
  const item = { role: "user", content: "x" };
  const cases = [
    ["POST", "/v1/conversations", { metadata: md17 }, 400, "metadata"],
    ["POST", "/v1/conversations", { metadata: { ["k".repeat(65)]: "v" } }, 400, "metadata"],
    ["POST", "/v1/conversations", { metadata: { k: "v".repeat(513) } }, 400, "metadata"],
    ["POST", "/v1/conversations", { metadata: { k: 1 } }, 400, "metadata"],
    ["POST", "/v1/conversations", { items: Array(21).fill(item) }, 400, "items"],
    ["POST", "/v1/conversations", { items: [1] }, 400, "items"],
    ["POST", "/v1/conversations", { items: [{ content: "no type, no role" }] }, 400, "items"],
    ["POST", "/v1/conversations", { items: [{ type: "item_reference", id: "msg_nobody" }] }, 400, "items"],
    ["POST", `/v1/conversations/${c.id}`, {}, 400, "metadata"],
    ["POST", `/v1/conversations/${c.id}/items`, {}, 400, "items"],
    ["POST", `/v1/conversations/${c.id}/items`, { items: Array(21).fill(item) }, 400, "items"],
    ["GET", `/v1/conversations/${c.id}/items?limit=0`, undefined, 400, "limit"],
    ["GET", `/v1/conversations/${c.id}/items?limit=101`, undefined, 400, "limit"],
    ["GET", `/v1/conversations/${c.id}/items?order=sideways`, undefined, 400, "order"],
    ["GET", `/v1/conversations/${c.id}/items?after=msg_nothere`, undefined, 400, "after"],
    ["GET", `/v1/conversations/${c.id}/items?include=bogus`, undefined, 400, "include"],
    ["GET", "/v1/conversations/conv_nothere", undefined, 404, null],
    ["DELETE", "/v1/conversations/conv_nothere", undefined, 404, null],
    ["GET", `/v1/conversations/${c.id}/items/msg_nothere`, undefined, 404, null],
    ["DELETE", `/v1/conversations/${c.id}/items/msg_nothere`, undefined, 404, null],
    ["POST", "/v1/responses", { model: "ci-turn", conversation: "conv_nothere", input: "x", tools: [CI] }, 404,
      "conversation"],
    ["POST", "/v1/responses", { model: "ci-turn", conversation: 7, input: "x", tools: [CI] }, 400, "conversation"],
    ["POST", "/v1/responses", { model: "ci-turn", conversation: c.id, previous_response_id: "resp_x", input: "x",
      tools: [CI] }, 400, null],
  ];
  for (const [method, p, body, want, param] of cases) {
    const r = await stack.call(method, p, body);
    const what = `${method} ${p} ${JSON.stringify(body)?.slice(0, 80)}`;
    assert.equal(r.status, want, `${what}: ${r.text}`);
    assert.deepEqual(Object.keys(r.json.error).sort(), ["code", "message", "param", "type"], what);
    assert.equal(r.json.error.type, "invalid_request_error", what);
    assert.equal(r.json.error.param, param, what);
  }
  const both = await stack.call("POST", "/v1/responses", { model: "ci-turn", conversation: { id: c.id },
    previous_response_id: "resp_x", input: "x" });
  assert.equal(both.json.error.code, "mutually_exclusive_parameters");
  // Nothing bad input sent was kept.
  assert.deepEqual(await allItems(alice, c.id), []);
});

for (const model of ["ci-turn", "turn-gw"]) {
  test(`responses.create({conversation}), ${model}: each turn continues from it and adds to it; its container follows`,
    TIMEOUT, async () => {
      const c = await alice.conversations.create({ metadata: { m: model } });
      await stack.resetFake();
      const r1 = await alice.responses.create({ model, conversation: c.id, input: code("x = 42\nprint('set')"),
        tools: [CI], include: ["code_interpreter_call.outputs"] });
      validate("Response", r1);
      assert.equal(r1.output_text, "args result: set\n");
      assert.deepEqual(r1.conversation, { id: c.id });
      const ci1 = r1.output.find((o) => o.type === "code_interpreter_call");
      // The object form, as the SDKs also send it.
      const r2 = await alice.responses.create({ model, conversation: { id: c.id }, input: code("print(x)"),
        tools: [CI] });
      assert.equal(r2.output_text, "args result: 42\n", "the conversation's container, its variables");
      assert.equal(r2.output.find((o) => o.type === "code_interpreter_call").container_id, ci1.container_id);
      // Streamed turns add to it too.
      const s = await alice.responses.create({ model, conversation: c.id, input: code("print(x + 1)"), tools: [CI],
        stream: true });
      let done;
      for await (const ev of s) if (ev.type === "response.completed") done = ev.response;
      assert.equal(done.output_text ?? done.output.at(-1).content[0].text, "args result: 43\n");
      assert.deepEqual(done.conversation, { id: c.id });

      // The conversation holds each turn's input and output, in order.
      const items = await allItems(alice, c.id, { include: ["code_interpreter_call.outputs"] });
      assert.deepEqual(items.map((i) => i.type === "message" ? `${i.role}` : i.type),
        ["user", "code_interpreter_call", "assistant", "user", "code_interpreter_call", "assistant",
          "user", "code_interpreter_call", "assistant"]);
      for (const it of items) validate("ConversationItem", it);
      const calls = items.filter((i) => i.type === "code_interpreter_call");
      assert.deepEqual(calls.map((i) => i.container_id), Array(3).fill(ci1.container_id));
      // Turns 2 and 3 asked for no outputs: their logs are kept all the same.
      assert.deepEqual(calls.map((i) => i.outputs[0].logs), ["set\n", "42\n", "43\n"]);
      // Without the include, a code call's outputs are null, as OpenAI's.
      const plain = await alice.conversations.items.retrieve(calls[0].id, { conversation_id: c.id });
      assert.equal(plain.outputs, null);

      // What the upstream got: the history, never the conversation id, and
      // nothing it was asked to keep.
      const bodies = (await stack.fakeRequests()).filter((q) => q.path.endsWith("/responses")).map((q) => q.body);
      assert.ok(bodies.length >= 6);
      for (const b of bodies) {
        assert.equal(b.conversation, undefined);
        assert.equal(b.store, false);
      }
      const third = bodies.at(-2);
      assert.deepEqual(third.input.filter((i) => i.type === "function_call_output").map((i) => i.output),
        ["set\n", "42\n"], "turn 3 saw turns 1 and 2");
      assert.equal(third.input.at(-1).role, "user");
    });
}

test("Agents SDK, OpenAIConversationsSession: turn 2 sees turn 1's variables in the same sandbox", TIMEOUT, async () => {
  for (const model of ["ci-turn", "turn-gw"]) {
    const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: alice, useResponses: true }),
      tracingDisabled: true });
    const agent = new Agent({ name: "coder", instructions: "Run the code.", model,
      tools: [codeInterpreterTool({ includeOutputs: true })] });
    const session = new OpenAIConversationsSession({ client: alice });
    const r1 = await runner.run(agent, code("x = 42\nprint('set')"), { session });
    assert.equal(r1.finalOutput, "args result: set\n");
    const id = await session.getSessionId();
    assert.match(id, /^conv_/);
    const r2 = await runner.run(agent, code("print(x)"), { session });
    assert.equal(r2.finalOutput, "args result: 42\n", `${model}: the same sandbox`);
    // The session appended each run's items, the code calls with their
    // container: one container for both.
    const items = await allItems(alice, id, { include: ["code_interpreter_call.outputs"] });
    const calls = items.filter((i) => i.type === "code_interpreter_call");
    assert.equal(calls.length, 2, JSON.stringify(items.map((i) => i.type)));
    assert.match(calls[0].container_id, /^cntr_/);
    assert.equal(calls[1].container_id, calls[0].container_id);
    assert.deepEqual(items.filter((i) => i.role === "user").length, 2);
    await session.clearSession();
    assert.equal(await status(alice.conversations.retrieve(id)), 404);
  }
});

test("a conversation unused past responses.retention is pruned by the reaper, with its items", TIMEOUT, async () => {
  const old = await alice.conversations.create({ items: [{ role: "user", content: "old" }] });
  const fresh = await alice.conversations.create({ items: [{ role: "user", content: "new" }] });
  stack.sql(`UPDATE conversations SET used_at = used_at - 40 * 86400 WHERE id = '${old.id}'`);
  await reapNow(stack);
  assert.equal(await status(alice.conversations.retrieve(old.id)), 404);
  assert.equal(stack.sql(`SELECT count(*) AS n FROM conversation_items WHERE conversation_id = '${old.id}'`)[0].n, 0);
  assert.equal((await alice.conversations.retrieve(fresh.id)).id, fresh.id);
});
