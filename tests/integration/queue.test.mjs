// Bursts are served, not refused: heavy requests past workers_max wait
// their turn (server.queue_timeout) and are answered; turns are fair
// between keys; a key's own max_concurrent stays a hard cap; light routes
// never wait. Order, not time, is asserted: a fair queue answers another
// key's request among the first of a flood, a FIFO one after it.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import OpenAI from "openai";
import { startStack, KEYS, request, holdStream, stopHolds } from "./harness.mjs";

const DAN = "sk-dan-" + crypto.randomBytes(8).toString("hex");
const stacks = [];
after(async () => { for (const s of stacks) await s.stop(); });

async function stackWith(opts) {
  const s = await startStack(opts);
  stacks.push(s);
  return s;
}

// One request, bounded in time: {status, json, text, headers}.
const call = (stack, method, path, { ms = 60000, ...opts } = {}) => request(stack, method, path, { ms, ...opts });

const chat = (content, model = "gpt-test") =>
  JSON.stringify({ model, messages: [{ role: "user", content }] });

// A slow stream holding one responder on a heavy route, running.
const hold = (stack, key) => holdStream(stack, key, 60);
const release = stopHolds;

async function metric(stack, sample) {
  const lines = (await call(stack, "GET", "/metrics", { key: null })).text.split("\n");
  const line = lines.find((l) => l.startsWith(sample + " "));
  return line ? Number(line.slice(sample.length + 1)) : NaN;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test("40 requests of one key on --workers 4 are all served, in turn, and another key's request goes first", async () => {
  const stack = await stackWith({ workers: "4:4", models: (m) => m("slow03", "slow-0.3") });
  const done = [];
  const flood = Array.from({ length: 40 }, (_, i) =>
    call(stack, "POST", "/v1/chat/completions", { key: KEYS.bob, body: chat(`b${i}`, "slow03") })
      .then((r) => { done.push(`bob${i}`); return r; }));
  // Once the flood is in (more than 4 requests wait), one of carol's.
  await (async () => {
    for (let i = 0; i < 200 && !((await metric(stack, "sandgate_queued_requests")) >= 20); i++) await sleep(50);
  })();
  const healthStart = Date.now();
  const h = await call(stack, "GET", "/healthz", { key: null, ms: 10000 });
  assert.equal(h.status, 200, "/healthz answers during the flood");
  assert.equal((await call(stack, "GET", "/v1/models", { ms: 10000 })).status, 200, "a light route does not wait");
  const healthMs = Date.now() - healthStart;
  // How many of bob's were answered before carol's was sent: on a loaded
  // machine the flood takes longer to arrive, and more are.
  const before = done.length;
  const carol = await call(stack, "POST", "/v1/chat/completions", { key: KEYS.carol, body: chat("me too", "slow03") })
    .then((r) => { done.push("carol"); return r; });
  assert.equal(carol.status, 200, carol.text);
  const answers = await Promise.all(flood);
  for (const r of answers) assert.equal(r.status, 200, r.text);
  assert.deepEqual(answers.map((r) => r.json.choices[0].message.content),
    Array.from({ length: 40 }, (_, i) => `echo: b${i}`));
  const at = done.indexOf("carol");
  // FIFO would answer carol after every one of bob's that waited before
  // her (20 or more, and the 4 running); her turn comes with the next
  // free place: among the next 4 or 5 answers, 11 allowing for slack.
  assert.ok(at < before + 12, `carol's request answered as number ${at + 1} of 41, ` +
    `${before} of bob's answered before it was sent (order: ${done.join(" ")})`);
  assert.ok((await metric(stack, "sandgate_queue_waits_total")) >= 20, "requests waited");
  assert.equal(await metric(stack, 'sandgate_refused_total{reason="capacity"}'), 0);
  assert.equal(await metric(stack, 'sandgate_refused_total{reason="key_limit"}'), 0);
  assert.equal(await metric(stack, "sandgate_queued_requests"), 0, "nothing left waiting");
  assert.ok(healthMs < 10000);
});

test("past queue_timeout: 429 at a key's own max_concurrent, 503 at workers_max, light routes answer throughout", async () => {
  const stack = await stackWith({ workers: "2:4", server: "queue_timeout = 2;",
    keys: `{ name = "dan"; key = "${DAN}"; max_concurrent = 1; }` });
  let holds = [];
  try {
    holds.push(await hold(stack, DAN));
    const t0 = Date.now();
    const r = await call(stack, "POST", "/v1/chat/completions", { key: DAN, body: chat("second") });
    const waited = Date.now() - t0;
    assert.equal(r.status, 429, r.text);
    assert.deepEqual(r.json, { error: { message: "Too many concurrent requests for this key (limit 1), waited its " +
      "turn for server.queue_timeout; retry shortly.", type: "requests", param: null, code: "rate_limit_exceeded" } });
    assert.equal(r.headers.get("retry-after"), "1");
    assert.ok(waited >= 1900, `it waited its turn first (${waited} ms)`);
    assert.equal((await call(stack, "POST", "/v1/chat/completions", { key: KEYS.bob, body: chat("bob") })).status, 200,
      "other keys use the places dan may not");
    assert.equal(await metric(stack, 'sandgate_refused_total{reason="key_limit"}'), 1);
    await release(holds);
    holds = [];
    // dan's place is free again: at once.
    assert.equal((await call(stack, "POST", "/v1/chat/completions", { key: DAN, body: chat("third") })).status, 200);

    for (let i = 0; i < 4; i++) holds.push(await hold(stack, i % 2 ? KEYS.bob : KEYS.carol));
    const late = call(stack, "POST", "/v1/chat/completions", { key: KEYS.alice, body: chat("fifth") });
    for (let i = 0; i < 100 && (await metric(stack, "sandgate_queued_requests")) !== 1; i++) await sleep(20);
    assert.equal(await metric(stack, "sandgate_queued_requests"), 1, "the fifth waits");
    assert.equal(await metric(stack, 'sandgate_busy_responders{class="heavy"}'), 5);
    assert.equal((await call(stack, "GET", "/healthz", { key: null, ms: 8000 })).status, 200);
    assert.equal((await call(stack, "GET", "/v1/models", { ms: 8000 })).status, 200);
    const c = await late;
    assert.equal(c.status, 503, c.text);
    assert.deepEqual(c.json, { error: { message: "The gateway is at capacity (4 requests under way), and this one " +
      "waited its turn for server.queue_timeout; retry shortly.", type: "server_error", param: null, code: null } });
    assert.equal(c.headers.get("retry-after"), "1");
    assert.equal(await metric(stack, 'sandgate_refused_total{reason="capacity"}'), 1);
    // A waiter whose client left gives its place up: the next one is served.
    const ctrl = new AbortController();
    const gone = fetch(stack.url("/v1/chat/completions"), { method: "POST", signal: ctrl.signal,
      headers: { authorization: `Bearer ${KEYS.bob}`, "content-type": "application/json" }, body: chat("gone") })
      .catch(() => null);
    await sleep(300);
    ctrl.abort();
    await gone;
    await release(holds);
    holds = [];
    assert.equal((await call(stack, "POST", "/v1/chat/completions", { key: KEYS.bob, body: chat("after") })).status, 200);
    for (let i = 0; i < 100 && (await metric(stack, "sandgate_queued_requests")) !== 0; i++) await sleep(100);
    assert.equal(await metric(stack, "sandgate_queued_requests"), 0, "the left waiter is out of the queue");
  } finally {
    await release(holds);
  }
});

test("one request at a time is never refused: 600 in a row on --workers 2, a light and a capped heavy route", async () => {
  // queue_timeout = 0 refuses at once: only an answered request still
  // counted against its key could refuse these.
  const stack = await stackWith({ workers: "2:2", server: "queue_timeout = 0;",
    keys: `{ name = "dan"; key = "${DAN}"; max_concurrent = 1; }` });
  const client = new OpenAI({ apiKey: DAN, baseURL: stack.url("/v1"), maxRetries: 0, timeout: 20000 });
  const statuses = {};
  for (let i = 0; i < 300; i++) {
    const r = await call(stack, "GET", "/v1/models", { key: DAN, ms: 20000 });
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  }
  for (let i = 0; i < 300; i++) {
    const c = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: `n${i}` }] });
    assert.equal(c.choices[0].message.content, `echo: n${i}`);
  }
  assert.deepEqual(statuses, { 200: 300 });
});

test("twice workers_max connections at once on the default pool: every request served", async () => {
  // Each held 50 ms upstream, so that they are under way together.
  const stack = await stackWith({ workers: "4:64", models: (m) => m("slow005", "slow-0.05") });
  const statuses = {};
  await Promise.all(Array.from({ length: 128 }, async (_, c) => {
    for (let i = 0; i < 8; i++) {
      const r = await call(stack, "POST", "/v1/chat/completions", { key: [KEYS.alice, KEYS.bob, KEYS.carol][c % 3],
        body: chat(`c${c}-${i}`, "slow005"), ms: 30000 });
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    }
  }));
  assert.deepEqual(statuses, { 200: 128 * 8 });
});
