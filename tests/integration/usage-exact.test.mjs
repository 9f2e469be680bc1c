// The ledger is exact: 500 mixed requests of four keys (on PostgreSQL,
// spread over two boxes sharing the store), with faults injected (upstream
// 500s, cut streams, clients that abort, a responder killed while its code
// runs, another mid-stream), and the Usage API's totals equal what the fake
// upstreams sent, to the token and to the call.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import OpenAI from "openai";
import { startStack, KEYS, sseEvents, storeKind, holdStream } from "./harness.mjs";

const ADMIN = "sk-admin-" + crypto.randomBytes(8).toString("hex");
const DAVE = "sk-dave-" + crypto.randomBytes(8).toString("hex");
const keys = [KEYS.alice, KEYS.bob, KEYS.carol, DAVE];
const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
const t0 = Math.floor(Date.now() / 1000) - 60;
let boxes = [];

before(async () => {
  const extra = { sandboxes: true, interceptionTool: "local", workers: "2:16",
    keys: `{ name = "dave"; key = "${DAVE}"; max_concurrent = 16; }`,
    auth: `admin_keys = ( { name = "ops"; key = "${ADMIN}"; } );` };
  const a = await startStack({ ...extra, box: storeKind === "postgresql" ? "box-a" : undefined });
  boxes = [a];
  if (storeKind === "postgresql")
    boxes.push(await startStack({ ...extra, box: "box-b", storeUrl: a.storeUrl }));
});
after(async () => { for (const b of boxes.reverse()) await b?.stop(); });

// What a fake sent: the usage of each answer it finished, and its calls.
function sentBy(reqs) {
  const acc = { input: 0, output: 0, cached: 0, calls: 0 };
  const add = (u) => {
    if (!u) return;
    acc.input += u.input_tokens ?? u.prompt_tokens ?? 0;
    acc.output += u.output_tokens ?? u.completion_tokens ?? 0;
    acc.cached += (u.input_tokens_details ?? u.prompt_tokens_details)?.cached_tokens ?? 0;
  };
  for (const q of reqs) {
    if (!/\/(chat\/completions|responses)$/.test(q.path)) continue;
    acc.calls++;
    const body = q.response_body ?? "";
    if (body.startsWith("{")) {
      try { if (q.response_status < 300) add(JSON.parse(body).usage); } catch { /* cut */ }
      continue;
    }
    for (const e of sseEvents(body)) {
      if (!e.data || e.data === "[DONE]") continue;
      let d;
      try { d = JSON.parse(e.data); } catch { continue; }
      add(d.type === "response.completed" ? d.response.usage : d.type ? null : d.usage);
    }
  }
  return acc;
}

async function one(i) {
  const box = boxes[i % boxes.length];
  const c = new OpenAI({ apiKey: keys[i % 4], baseURL: box.url("/v1"), maxRetries: 0 });
  const msg = [{ role: "user", content: `request ${i} ${"x ".repeat(i % 7)}` }];
  const kind = i % 100;
  try {
    if (kind < 40) await c.chat.completions.create({ model: "gpt-test", messages: msg });
    else if (kind < 58) {
      const s = await c.chat.completions.create({ model: "gpt-test", messages: msg, stream: true, stream_options: { include_usage: true } });
      for await (const _ of s);
    } else if (kind < 72) await c.responses.create({ model: "gpt-test", input: `in ${i}` });
    else if (kind < 86) {
      const s = await c.responses.create({ model: "gpt-test", input: `in ${i}`, stream: true });
      for await (const _ of s);
    } else if (kind < 90) await c.chat.completions.create({ model: "fault-500", messages: msg });
    else if (kind < 93) {
      const s = await c.chat.completions.create({ model: "drop", messages: msg, stream: true, stream_options: { include_usage: true } });
      for await (const _ of s);
    } else if (kind < 96) {
      const ctl = new AbortController();
      const s = await c.chat.completions.create({ model: "slowstream", messages: msg, stream: true,
        stream_options: { include_usage: true } }, { signal: ctl.signal });
      for await (const _ of s) { ctl.abort(); }
    } else await c.responses.create({ model: "ci-primes", input: "Multiply the first six primes.", tools: CI });
  } catch { /* the faults: counted all the same */ }
}

async function usageTotals() {
  const box = boxes[0];
  const r = await box.call("GET", `/v1/organization/usage/completions?start_time=${t0}&bucket_width=1d&group_by[]=api_key_id&limit=2`,
    undefined, ADMIN);
  assert.equal(r.status, 200, r.text);
  const acc = { input: 0, output: 0, cached: 0, calls: 0, keys: new Set() };
  for (const b of r.json.data) for (const x of b.results) {
    acc.input += x.input_tokens;
    acc.output += x.output_tokens;
    acc.cached += x.input_cached_tokens;
    acc.calls += x.num_model_requests;
    acc.keys.add(x.api_key_id);
  }
  return acc;
}

test("500 mixed requests with faults: the Usage API equals what the upstreams sent", { timeout: 600000 }, async () => {
  for (const b of boxes) await b.resetFake();
  for (let i = 0; i < 500; i += 10)
    await Promise.all(Array.from({ length: 10 }, (_, k) => one(i + k)));

  // A responder killed while its code runs: the turn before the kill was
  // reported, the request never ends, and its row is written all the same.
  // Another killed while the upstream streams to it: the call is the
  // upstream's as soon as it is sent, so the ledger owns it too.
  const box = boxes[0];
  const held = await holdStream(box, DAVE, 60);
  const dying = box.call("POST", "/v1/responses", { model: "ci-turn", input: JSON.stringify({ code: "import time; time.sleep(8)" }),
    tools: CI }, DAVE).catch(() => null);
  for (let i = 0; i < 100; i++) {
    const calls = (await box.fakeRequests()).filter((q) => q.body?.model === "ci-turn");
    if (calls.length > 0) break;
    await sleep(50);
  }
  await sleep(500);
  for (const pid of box.processes().responders) try { process.kill(pid, "SIGKILL"); } catch { /* gone */ }
  await dying;
  await held.done;

  // Both sides settle: the ledger within the reaper's drain, the fakes
  // once each cut exchange's next write fails (a slow stream's, 0.4 s on).
  const fakes = async () => {
    const want = { input: 0, output: 0, cached: 0, calls: 0 };
    for (const b of boxes) {
      const s = sentBy(await b.fakeRequests());
      for (const k of Object.keys(want)) want[k] += s[k];
    }
    return want;
  };
  let want, got;
  for (let i = 0; i < 100; i++) {
    want = await fakes();
    got = await usageTotals();
    if (got.calls === want.calls && got.input === want.input) break;
    await sleep(200);
  }
  assert.ok(want.calls > 500, `the fakes saw ${want.calls} calls`);
  assert.deepEqual({ input: got.input, output: got.output, cached: got.cached, calls: got.calls }, want);
  assert.equal(got.keys.size, 4, "four keys");
  const killed = box.sql("SELECT status, model_requests FROM usage WHERE model = 'ci-turn'");
  assert.deepEqual(killed.map((r) => [Number(r.status), Number(r.model_requests)]), [[0, 1]],
    "the killed responder's row: no status, its one call");
  // Ours, and any of the last batch's aborted streams the kill caught.
  const cut = box.sql("SELECT model_requests FROM usage WHERE model = 'slowstream' AND status = 0").map((r) => Number(r.model_requests));
  assert.ok(cut.length >= 1 && cut.every((n) => n === 1), `killed mid-stream, each its one call: ${cut}`);
});
