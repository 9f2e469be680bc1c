// Resumable streams: a stored Responses stream keeps its events, and
// GET /v1/responses/{id}?stream=true&starting_after=N (the official SDK's
// responses.retrieve(id, {stream: true, starting_after})) replays those
// after N and follows the live ones to the end, sequence numbers unbroken;
// OpenAI's errors for what cannot be streamed; include honoured on GET.
import { test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startStack, KEYS } from "./harness.mjs";

const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
const OUTPUTS = ["code_interpreter_call.outputs"];
const ENDS = ["response.completed", "response.failed", "response.incomplete"];
// A code run slow enough to attach to, or to drop in the middle of.
const SLOW = JSON.stringify({ code: "import time; time.sleep(2); print(42)" });
let stack, alice, bob;

before(async () => {
  stack = await startStack({ sandboxes: true, interceptionTool: "local" });
  alice = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0, timeout: 60000 });
  bob = new OpenAI({ apiKey: KEYS.bob, baseURL: stack.url("/v1"), maxRetries: 0, timeout: 60000 });
});
after(async () => { await stack?.stop(); });
beforeEach(async () => { await stack.resetFake(); });

// Every event of an SDK stream; an error event (which the SDK raises)
// ends the list as {type: "error", ...} with what it said.
async function drain(stream) {
  const events = [];
  try {
    for await (const e of stream) events.push(e);
  } catch (e) {
    if (!(e instanceof OpenAI.APIError)) throw e;
    events.push({ type: "error", thrown: e.message });
  }
  return events;
}

function contiguous(events, from) {
  events.forEach((e, i) => assert.equal(e.sequence_number, from + i, `event ${i} follows the one before`));
}

// POST a stream and read it raw until the event with sequence number
// `upto` came, then drop the connection: the events read, as parsed JSON.
async function streamUntil(body, upto) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), 30000);
  const r = await fetch(stack.url("/v1/responses"), {
    method: "POST", signal: ctl.signal,
    headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(r.status, 200);
  const reader = r.body.getReader(), dec = new TextDecoder(), got = [];
  let buf = "";
  try {
    while (got.length === 0 || got.at(-1).sequence_number < upto) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) !== -1) {
        const data = buf.slice(0, cut).split("\n").find((l) => l.startsWith("data: "));
        buf = buf.slice(cut + 2);
        if (data) got.push(JSON.parse(data.slice(6)));
      }
    }
  } finally {
    ctl.abort();
    clearTimeout(timer);
  }
  return got;
}

const replay = (client, id, starting_after) =>
  client.responses.retrieve(id, starting_after === undefined ? { stream: true } : { stream: true, starting_after });

test("a streamed response is kept: replayed whole, and after any N exactly the rest", async () => {
  const events = await drain(await alice.responses.create({ model: "ci-two", input: "go", tools: CI, stream: true,
    include: OUTPUTS }));
  assert.equal(events.at(-1).type, "response.completed");
  contiguous(events, 0);
  const id = events[0].response.id;
  assert.deepEqual(await drain(await replay(alice, id)), events, "the replay is the stream as it was sent");
  for (const n of [0, 3, events.length - 2]) {
    const rest = await drain(await replay(alice, id, n));
    assert.deepEqual(rest, events.slice(n + 1), `after ${n}`);
  }
  // After the last: nothing to send, the stream just ends.
  assert.deepEqual(await drain(await replay(alice, id, events.length - 1)), []);
  // Beyond it: OpenAI's 400, on starting_after.
  await assert.rejects(replay(alice, id, events.length), (e) => e.status === 400 && e.param === "starting_after");
  // The SSE as OpenAI frames it: event line, one data line, blank line.
  const raw = await stack.call("GET", `/v1/responses/${id}?stream=true&starting_after=${events.length - 2}`);
  assert.equal(raw.status, 200);
  assert.match(raw.headers.get("content-type"), /^text\/event-stream/);
  assert.equal(raw.headers.get("x-accel-buffering"), "no");
  assert.equal(raw.text, `event: response.completed\ndata: ${JSON.stringify(events.at(-1))}\n\n`);
});

test("a follower that attaches while the code runs gets the live events, the same as the client", async () => {
  const stream = await alice.responses.create({ model: "ci-turn", input: SLOW, tools: CI, stream: true });
  const events = [];
  let follower, late;
  for await (const e of stream) {
    events.push(e);
    // While the code runs: one follows from the start, one from here.
    if (e.type === "response.code_interpreter_call.interpreting") {
      const id = events[0].response.id;
      follower = drain(await replay(alice, id));
      late = drain(await replay(alice, id, e.sequence_number));
    }
  }
  assert.equal(events.at(-1).type, "response.completed");
  assert.match(events.at(-1).response.output_text ?? JSON.stringify(events.at(-1).response.output), /42/);
  assert.ok(follower, "the code ran while the stream was read");
  assert.deepEqual(await follower, events);
  const n = events.findIndex((e) => e.type === "response.code_interpreter_call.interpreting");
  assert.deepEqual(await late, events.slice(n + 1));
});

test("a client that drops mid-stream resumes after its last event: no gap, nothing twice", async () => {
  const seen = await streamUntil({ model: "ci-turn", input: SLOW, tools: CI }, 6);
  const last = seen.at(-1).sequence_number;
  const id = seen[0].response.id;
  const rest = await drain(await replay(alice, id, last));
  contiguous(rest.filter((e) => e.type !== "error" || e.sequence_number !== undefined), last + 1);
  assert.ok(rest.length > 0);
  // The whole of it, as kept, is what the client saw and then the rest.
  assert.deepEqual([...seen, ...rest], await drain(await replay(alice, id)));
  // Without background, the run stops with the client (background runs
  // on): the kept stream ends with that, never left open.
  assert.ok(ENDS.includes(rest.at(-1).type) || rest.at(-1).type === "error", rest.at(-1).type);
});

test("background with stream: dropped mid-stream, resumed to the end, equal to a full stream", async () => {
  const seen = await streamUntil({ model: "ci-turn", input: SLOW, tools: CI, background: true }, 4);
  const last = seen.at(-1).sequence_number;
  const rest = await drain(await replay(alice, seen[0].response.id, last));
  contiguous(rest, last + 1);
  assert.equal(rest.at(-1).type, "response.completed");
  const full = await drain(await alice.responses.create({ model: "ci-turn", input: SLOW, tools: CI, stream: true,
    background: true }));
  const shape = (evs) => evs.map((e) => e.type);
  assert.deepEqual(shape([...seen, ...rest]), shape(full));
  // OpenAI's background stream: created and queued (status queued), then
  // the run's own, every snapshot saying background.
  assert.deepEqual(shape(full).slice(0, 3), ["response.created", "response.queued", "response.in_progress"]);
  assert.equal(full[0].response.status, "queued");
  assert.ok(full.every((e) => !e.response || e.response.background === true));
});

test("what cannot be streamed: another key's id, an unknown one, a response made without stream, bad cursors", async () => {
  const events = await drain(await alice.responses.create({ model: "ci-primes", input: "go", tools: CI, stream: true }));
  const id = events[0].response.id;
  await assert.rejects(replay(bob, id), (e) => e.status === 404 && e.message.includes(`Response with id '${id}' not found.`));
  await assert.rejects(replay(alice, "resp_nosuchthing"), (e) => e.status === 404);
  const plain = await alice.responses.create({ model: "ci-primes", input: "go", tools: CI });
  await assert.rejects(replay(alice, plain.id), (e) => e.status === 400 && e.param === "stream");
  for (const bad of ["-1", "x", "1.5", ""]) {
    const r = await stack.call("GET", `/v1/responses/${id}?stream=true&starting_after=${bad}`);
    assert.equal(r.status, 400, bad);
    assert.equal(r.json.error.param, "starting_after");
  }
  const r = await stack.call("GET", `/v1/responses/${id}?stream=1`);
  assert.equal(r.status, 400);
  assert.equal(r.json.error.param, "stream");
  // Deleted: its events go with it.
  assert.equal((await stack.call("DELETE", `/v1/responses/${id}`)).status, 200);
  await assert.rejects(replay(alice, id), (e) => e.status === 404);
  // A response made with store: false keeps no events either.
  const unkept = await drain(await alice.responses.create({ model: "ci-primes", input: "go", tools: CI, stream: true,
    store: false }));
  await assert.rejects(replay(alice, unkept[0].response.id), (e) => e.status === 404);
});

test("include on GET: a code call's outputs shown only when included, as OpenAI's", async () => {
  const code = (r) => r.output.find((o) => o.type === "code_interpreter_call");
  const withOutputs = await alice.responses.create({ model: "ci-primes", input: "go", tools: CI, include: OUTPUTS });
  const without = await alice.responses.create({ model: "ci-primes", input: "go", tools: CI });
  assert.equal(code(without).outputs, null);
  const logs = code(withOutputs).outputs;
  assert.match(logs[0].logs, /30030/);
  for (const r of [withOutputs, without]) {
    assert.equal(code(await alice.responses.retrieve(r.id)).outputs, null, "not asked for: null");
    const got = await alice.responses.retrieve(r.id, { include: OUTPUTS });
    assert.deepEqual(code(got).outputs, logs, "asked for: the logs, kept or given to the model");
  }
  const bad = await stack.call("GET", `/v1/responses/${without.id}?include[]=nonsense`);
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, "include");
});
