// Real third-party clients through the whole stack (lighttpd + sandgate +
// the fake upstream), in multi-turn conversations that use the code
// interpreter AND an application function tool, streamed and not:
//   - the Vercel AI SDK (npm `ai` + `@ai-sdk/openai`), generateText/streamText
//   - the OpenAI Agents SDK for JS (npm `@openai/agents`), run() / run(stream)
// against three sandgate models over the fake's scripted `ci-convo`:
//   convo-up  state = "upstream": the upstream (ci-convo) keeps the state
//   convo-gw  state = "gateway":  the upstream (nostate-ci-convo) keeps none,
//             sandgate expands the history itself and sends store:false.
// ci-convo answers "turn U: <tool outputs since the last user message>;
// seen users=U outputs=C" once it has the outputs, so the final text tells
// that the model saw the WHOLE conversation (tests/fakes/upstream.py).
//
// What these clients send (recorded against an OpenAI stand-in with a built-in
// code interpreter; ai@6.0.325 + @ai-sdk/openai@3.0.141, @openai/agents@0.20.0):
//
// AI SDK (openai.tools.codeInterpreter + a tool() with execute; the
// conversation is the app's `messages` plus each turn's response.messages):
//   - never previous_response_id; no `store` key unless providerOptions set
//     it (so store defaults to true); always
//     "include":["code_interpreter_call.outputs"] and
//     {"type":"code_interpreter","container":{"type":"auto"}}.
//   - store true (default): every earlier output item it can name goes back as
//     an item_reference: the code interpreter call (one reference for call +
//     result) and the assistant's text; its own function calls go back whole
//     WITHOUT an id, followed by their outputs. Turn 2, step 1:
//       [{"role":"user","content":[{"type":"input_text","text":"…"}]},
//        {"type":"item_reference","id":"ci_…"},
//        {"type":"function_call","call_id":"call_…","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
//        {"type":"function_call_output","call_id":"call_…","output":"sunny in Paris"},
//        {"type":"item_reference","id":"msg_…"},
//        {"role":"user","content":[{"type":"input_text","text":"…"}]}]
//     Step 2 of a turn (after its tool ran) resends all of it plus the new
//     item_reference ci_…, function_call and function_call_output.
//   - store false: "store":false; code interpreter calls are DROPPED from the
//     input (warning "Results for OpenAI tool code_interpreter are not sent to
//     the API when store is false"); assistant text goes back as
//     {"role":"assistant","content":[{"type":"output_text","text":"…"}],"id":"msg_…"}
//     WITH its id (which real OpenAI refuses for store:false items).
//   - streamText sends the same bodies plus "stream":true.
//
// Agents SDK (codeInterpreterTool({includeOutputs:true}) + tool()):
//   - always "instructions", "include" ([] or
//     ["code_interpreter_call.outputs"] with includeOutputs), "stream":
//     false|true, function tools with "strict":true; never `store`.
//   - within one run() without previousResponseId, step 2 replays the step's
//     output items verbatim, WITH their ids, then the tool outputs:
//       [{"role":"user","content":"…"},
//        {"id":"ci_…","type":"code_interpreter_call","code":"…","container_id":"…","outputs":[{"type":"logs","logs":"…"}],"status":"completed"},
//        {"id":"fc_…","type":"function_call","name":"get_weather","call_id":"call_…","arguments":"{\"city\":\"Paris\"}","status":"completed"},
//        {"type":"function_call_output","call_id":"call_…","output":"sunny in Paris","status":"completed"}]
//     (without includeOutputs the replayed call has "outputs":[]).
//   - run(agent, text, {previousResponseId}) sends "previous_response_id" and
//     only the new user message; its step 2 chains "previous_response_id" to
//     step 1's response id and sends only
//       [{"type":"function_call_output","call_id":"call_…","output":"sunny in Paris","status":"completed"}]
//     so the upstream (or sandgate) must know step 1's code call AND its output.
//   - run(agent, result.history.concat(user(...))) replays everything with ids,
//     assistant messages as {"type":"message","id":"msg_…","role":"assistant",…}.
//   - stream:true sends the same bodies with "stream":true.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { generateText, streamText, tool as aiTool, stepCountIs } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { Agent, Runner, OpenAIProvider, codeInterpreterTool, tool as agentTool, setTracingDisabled, user }
  from "@openai/agents";
import { z } from "zod";
import { Stack, KEYS, UPSTREAM_KEY, sseEvents } from "./harness.mjs";

setTracingDisabled(true); // the Agents SDK would export traces to OpenAI

// The harness knows the fake's port only once it runs, and gatewayConfig
// splices extra.models in as a string: a getter reads the port when the
// config is written (after the fake started).
// convo-chat  api = "chat": the upstream (chatonly-ci-convo) has only Chat
//             Completions; sandgate serves the Responses API on it.
const STATES = { "convo-up": ["ci-convo", "upstream"], "convo-gw": ["nostate-ci-convo", "gateway"],
  "convo-chat": ["chatonly-ci-convo", "gateway", "chat"] };
const convoModels = (port) => Object.entries(STATES).map(([name, [model, state, api]]) =>
  `{ name = "${name}"; api_base = "http://127.0.0.1:${port}/v1"; api_key = "${UPSTREAM_KEY}"; ` +
  `model = "${model}"; state = "${state}"; ${api ? `api = "${api}";` : ""} }`).join(",\n  ");

let stack;
before(async () => {
  stack = new Stack({ get models() { return convoModels(stack.fakePort); } });
  await stack.start();
});
after(() => stack?.stop());

// Three user turns: two "mixed" ones (code + the app's weather function in
// one model turn), then code alone (sandgate's own loop).
const PROMPTS = ["What's the weather in Paris? And run a bit of code.", "And the weather tomorrow?",
  "Thanks. Once more, just the code."];
const EXPECTED = ["turn 1: turn 1 | sunny in Paris; seen users=1 outputs=2",
  "turn 2: turn 2 | sunny in Paris; seen users=2 outputs=4", "turn 3: turn 3; seen users=3 outputs=5"];
const TIMEOUT = { timeout: 120000 };

function weatherTool(kind, calls) {
  const execute = async ({ city }) => {
    calls.push(city);
    return `sunny in ${city}`;
  };
  const parameters = z.object({ city: z.string() });
  return kind === "ai" ? aiTool({ description: "The weather of a city", inputSchema: parameters, execute })
    : agentTool({ name: "get_weather", description: "The weather of a city", parameters, execute });
}

// The ids the fake itself issued (response ids, output item ids), from the
// answers it recorded.
function issuedIds(reqs) {
  const ids = new Set();
  for (const r of reqs) {
    let resp = null;
    try {
      resp = JSON.parse(r.response_body);
    } catch {
      const done = sseEvents(r.response_body).map((e) => { try { return JSON.parse(e.data); } catch { return {}; } })
        .find((e) => e.type === "response.completed");
      resp = done?.response ?? null;
    }
    if (!resp?.id) continue;
    ids.add(resp.id);
    for (const it of resp.output ?? []) if (it?.id) ids.add(it.id);
  }
  return ids;
}

// What sandgate forwarded upstream in this conversation: nothing the
// upstream refused, no item_reference, no item id (so no ci_ id, no id
// sandgate minted) and no previous_response_id that the upstream did not
// issue itself; in gateway mode store:false and never previous_response_id.
// call_ids are not checked: sandgate replays a client's code_interpreter_call
// as a function_call whose call_id is the ci_ id (interception.test.mjs pins
// that), and a call_id is never looked up in the upstream's storage.
async function forwardedProblems(name) {
  const [model, state, api] = STATES[name];
  if (api === "chat") return chatForwardedProblems(model);
  const reqs = (await stack.fakeRequests()).filter((r) => r.path.startsWith("/v1/responses"));
  const mine = reqs.filter((r) => r.body?.model === model);
  if (mine.length === 0) return ["sandgate forwarded nothing"];
  const issued = issuedIds(reqs);
  const problems = [];
  mine.forEach((r, n) => {
    const b = r.body;
    const at = `forwarded request #${n}`;
    if (r.response_status !== 200) problems.push(`${at}: the upstream answered ${r.response_status} ${r.response_body}`);
    if (typeof b.previous_response_id === "string" && !issued.has(b.previous_response_id))
      problems.push(`${at}: previous_response_id ${b.previous_response_id} is not the upstream's`);
    if (state === "gateway") {
      if (b.store !== false) problems.push(`${at}: store is ${JSON.stringify(b.store)}, not false`);
      if (b.previous_response_id != null) problems.push(`${at}: previous_response_id sent to a stateless upstream`);
    }
    for (const it of Array.isArray(b.input) ? b.input : []) {
      if (it?.type === "item_reference") problems.push(`${at}: item_reference ${it.id}`);
      else if (typeof it?.id === "string" && !issued.has(it.id))
        problems.push(`${at}: ${it.type ?? it.role} item with id ${it.id}, which the upstream never issued`);
    }
  });
  return problems;
}

// A Chat-only upstream: everything went to /v1/chat/completions and was
// answered, as Chat messages (no Responses item leaked through).
async function chatForwardedProblems(model) {
  const mine = (await stack.fakeRequests()).filter((r) => r.body?.model === model);
  if (mine.length === 0) return ["sandgate forwarded nothing"];
  const problems = [];
  mine.forEach((r, n) => {
    const at = `forwarded request #${n}`;
    if (r.path !== "/v1/chat/completions") problems.push(`${at}: sent to ${r.path}`);
    if (r.response_status !== 200) problems.push(`${at}: the upstream answered ${r.response_status} ${r.response_body}`);
    if ("input" in (r.body ?? {}) || "previous_response_id" in (r.body ?? {})) problems.push(`${at}: a Responses body`);
    for (const m of r.body?.messages ?? [])
      if (!["system", "user", "assistant", "tool"].includes(m.role)) problems.push(`${at}: a message of role ${m.role}`);
  });
  return problems;
}

// Runs a conversation (fn gets turn(i, body) to label each user turn); a
// failure names its turn and adds what was wrong upstream; then checks what
// was forwarded.
async function conversation(name, fn) {
  await stack.resetFake();
  let label = "before the first turn";
  const turn = async (i, body) => {
    label = `turn ${i + 1}`;
    return body();
  };
  try {
    await fn(turn);
  } catch (e) {
    const problems = await forwardedProblems(name).catch(() => []);
    e.message = `${label}: ${e.message}${problems.length ? "\nupstream side:\n" + problems.join("\n") : ""}`;
    throw e;
  }
  const problems = await forwardedProblems(name);
  assert.deepEqual(problems, [], problems.join("\n"));
}

// ------------------------------------------------------------ Vercel AI SDK

async function aiSdkConversation(name, stream, turn) {
  const openai = createOpenAI({ baseURL: stack.url("/v1"), apiKey: KEYS.alice });
  const weather = [];
  const tools = { code_interpreter: openai.tools.codeInterpreter({}), get_weather: weatherTool("ai", weather) };
  const messages = [];
  for (const [i, prompt] of PROMPTS.entries()) {
    messages.push({ role: "user", content: prompt });
    const args = { model: openai(name), tools, messages, stopWhen: stepCountIs(5), maxRetries: 0 };
    const out = await turn(i, async () => {
      if (!stream) return generateText(args);
      const r = streamText({ ...args, onError: () => {} });
      for await (const part of r.fullStream) if (part.type === "error") throw part.error;
      return { text: await r.text, steps: await r.steps, response: await r.response };
    });
    checkAiTurn(out, i);
    messages.push(...out.response.messages);
  }
  assert.deepEqual(weather, ["Paris", "Paris"], "the app's tool ran once in each mixed turn");
}

function checkAiTurn(t, i) {
  assert.equal(t.text, EXPECTED[i], `turn ${i + 1}'s answer`);
  const content = t.steps.flatMap((s) => s.content);
  const call = content.find((c) => c.type === "tool-call" && c.toolName === "code_interpreter");
  assert.ok(call, `turn ${i + 1} shows its code interpreter call`);
  assert.equal(call.providerExecuted, true);
  assert.equal(call.input.code, `print('turn ${i + 1}')`);
  const result = content.find((c) => c.type === "tool-result" && c.toolName === "code_interpreter");
  assert.ok(result, `turn ${i + 1} shows its code interpreter result`);
  assert.equal(result.output.outputs?.find((o) => o.type === "logs")?.logs.trim(), `turn ${i + 1}`);
  const app = content.filter((c) => c.type === "tool-result" && c.toolName === "get_weather");
  assert.deepEqual(app.map((c) => c.output), i < 2 ? ["sunny in Paris"] : [], `turn ${i + 1}'s app tool results`);
}

for (const name of Object.keys(STATES)) {
  for (const stream of [false, true]) {
    test(`AI SDK ${stream ? "streamText" : "generateText"}, ${name}: three turns of code + an app tool`, TIMEOUT, async () => {
      await conversation(name, (turn) => aiSdkConversation(name, stream, turn));
    });
  }
}

// ------------------------------------------------------------ OpenAI Agents SDK

function agentsSetup(name) {
  const client = new OpenAI({ baseURL: stack.url("/v1"), apiKey: KEYS.alice, maxRetries: 0 });
  const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: client, useResponses: true }),
    tracingDisabled: true });
  const weather = [];
  const agent = new Agent({ name: "analyst", instructions: "Use the tools you have.", model: name,
    tools: [codeInterpreterTool({ includeOutputs: true }), weatherTool("agents", weather)] });
  return { runner, agent, weather };
}

async function agentsRun(runner, agent, input, stream, opts = {}) {
  const r = await runner.run(agent, input, { stream, ...opts });
  if (stream) {
    for await (const _ of r) { /* drain the events */ } // eslint-disable-line no-unused-vars
    await r.completed;
    if (r.error) throw r.error;
  }
  return r;
}

function checkAgentTurn(r, i) {
  assert.equal(r.finalOutput, EXPECTED[i], `turn ${i + 1}'s answer`);
  const ci = r.newItems.filter((it) => it.type === "tool_call_item" && it.rawItem.type === "hosted_tool_call" &&
    it.rawItem.providerData?.type === "code_interpreter_call");
  assert.equal(ci.length, 1, `turn ${i + 1} shows one code interpreter call`);
  assert.equal(ci[0].rawItem.providerData.code, `print('turn ${i + 1}')`);
  assert.equal(ci[0].rawItem.providerData.outputs?.find((o) => o.type === "logs")?.logs.trim(), `turn ${i + 1}`);
  const app = r.newItems.filter((it) => it.type === "tool_call_output_item" && it.rawItem.name === "get_weather");
  assert.deepEqual(app.map((it) => it.output), i < 2 ? ["sunny in Paris"] : [], `turn ${i + 1}'s app tool results`);
}

for (const name of Object.keys(STATES)) {
  for (const stream of [false, true]) {
    test(`Agents SDK run${stream ? " (stream)" : ""}, ${name}: three turns over previousResponseId`, TIMEOUT, async () => {
      await conversation(name, async (turn) => {
        const { runner, agent, weather } = agentsSetup(name);
        let prev;
        for (const [i, prompt] of PROMPTS.entries()) {
          const r = await turn(i, () => agentsRun(runner, agent, prompt, stream, prev ? { previousResponseId: prev } : {}));
          checkAgentTurn(r, i);
          assert.match(r.lastResponseId ?? "", /^resp_/);
          prev = r.lastResponseId;
        }
        assert.deepEqual(weather, ["Paris", "Paris"], "the app's tool ran once in each mixed turn");
      });
    });
  }

  test(`Agents SDK run, ${name}: three turns replaying result.history`, TIMEOUT, async () => {
    await conversation(name, async (turn) => {
      const { runner, agent, weather } = agentsSetup(name);
      let history = [];
      for (const [i, prompt] of PROMPTS.entries()) {
        const r = await turn(i, () => agentsRun(runner, agent, [...history, user(prompt)], false));
        checkAgentTurn(r, i);
        history = r.history;
      }
      assert.deepEqual(weather, ["Paris", "Paris"], "the app's tool ran once in each mixed turn");
    });
  });
}

// ------------------------------------------------------------ state across turns, default config

// OpenAI reuses an auto container for the conversation's follow-ups, and
// clients rely on it: x set in one turn is read in the next. sandgate's
// default (container_reuse = "conversation") does the same. ci-turn runs the
// newest user text ({"code": …}) and answers "args result: <its output>".
const code = (c) => JSON.stringify({ code: c });

test("Agents SDK, default config: x set in one turn is there in the next (previousResponseId, replayed history)", TIMEOUT, async () => {
  const client = new OpenAI({ baseURL: stack.url("/v1"), apiKey: KEYS.alice, maxRetries: 0 });
  const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: client, useResponses: true }),
    tracingDisabled: true });
  const agent = new Agent({ name: "coder", instructions: "Run the code.", model: "ci-turn",
    tools: [codeInterpreterTool({ includeOutputs: true })] });
  for (const stream of [false, true]) {
    const r1 = await agentsRun(runner, agent, code("x = 42\nprint('set')"), stream);
    assert.equal(r1.finalOutput, "args result: set\n");
    const r2 = await agentsRun(runner, agent, code("print(x)"), stream, { previousResponseId: r1.lastResponseId });
    assert.equal(r2.finalOutput, "args result: 42\n", "previousResponseId: the same container");
    const r3 = await agentsRun(runner, agent, [...r1.history, user(code("print(x + 1)"))], stream);
    assert.equal(r3.finalOutput, "args result: 43\n", "replayed history: the same container");
  }
});

test("AI SDK, default config: x set in one turn is there in the next (replayed messages)", TIMEOUT, async () => {
  const openai = createOpenAI({ baseURL: stack.url("/v1"), apiKey: KEYS.alice });
  const tools = { code_interpreter: openai.tools.codeInterpreter({}) };
  for (const stream of [false, true]) {
    const messages = [];
    for (const [c, want] of [["x = 42\nprint('set')", "args result: set\n"], ["print(x)", "args result: 42\n"]]) {
      messages.push({ role: "user", content: code(c) });
      const args = { model: openai("ci-turn"), tools, messages, stopWhen: stepCountIs(3), maxRetries: 0 };
      const out = stream ? await (async () => {
        const r = streamText({ ...args, onError: () => {} });
        for await (const part of r.fullStream) if (part.type === "error") throw part.error;
        return { text: await r.text, response: await r.response };
      })() : await generateText(args);
      assert.equal(out.text, want);
      messages.push(...out.response.messages);
    }
  }
});
