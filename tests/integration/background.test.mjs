// Background responses through the official SDK and lighttpd: create
// answers at once with a queued response that runners the master
// supervises (comm sg-runner) take through in_progress to a terminal
// status; cancel stops a running code run promptly (the sandbox's run is
// interrupted, the loop asks the model nothing more) and is idempotent;
// OpenAI's errors for bad ids, another key's ids, finished and foreground
// responses and background without store; a background stream opens with
// the queued events and resumes after any sequence_number; and the faults:
// a runner SIGKILLed mid-run, the upstream breaking mid-turn, the gateway
// restarted with jobs queued, 200 jobs at once with /healthz answering
// throughout. Every response ends in a terminal status, and every local
// sandbox left is one the store tracks. The Agents SDK runs on it only
// streamed (modelSettings.providerData.background): it has no polling of
// its own. The 5-minute run through nginx is background-nginx.test.mjs.
// The fake's ci-args runs the user text ({"code": …}) and answers
// "args result: <its output>"; ci-cut runs code, then breaks its next turn
// (tests/fakes/upstream.py).
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import OpenAI from "openai";
import { Agent, Runner, OpenAIProvider, codeInterpreterTool, setTracingDisabled } from "@openai/agents";
import { startStack, KEYS, UPSTREAM_KEY, waitFor, procOf, request } from "./harness.mjs";
import { validate } from "./schema.mjs";
import { CI, code, TERMINAL, sleep, T, base, sdk, until, assertMonotone, running, runners, liveSandboxes,
  untracked } from "./bgutil.mjs";

setTracingDisabled(true); // the Agents SDK would export traces to OpenAI

// What the upstream was asked with this text somewhere in its body, and
// what it was asked for this model (since the last resetFake).
const asked = async (stack, text) => (await stack.fakeRequests()).filter((q) => q.raw_body.includes(text));
const turns = async (stack, model) => (await stack.fakeRequests()).filter((q) => q.body?.model === model);

// An OpenAI-shaped error body with this status and type.
function assertError(r, status, type) {
  assert.equal(r.status, status, r.text);
  assert.deepEqual(Object.keys(r.json?.error ?? {}).sort(), ["code", "message", "param", "type"], r.text);
  assert.equal(r.json.error.type, type, r.text);
}

describe("background responses (runners = 2, max_per_key = 4)", () => {
  let stack, alice, bob;
  before(async () => {
    stack = await startStack(base("runners = 2; max_per_key = 4;"));
    alice = sdk(stack, KEYS.alice);
    bob = sdk(stack, KEYS.bob);
  });
  after(() => stack?.stop());

  test("create answers at once with a queued response; retrieve goes on to completed with the code call and the message", T(90), async () => {
    await waitFor(() => runners(stack).length === 2, "two sg-runner processes", 15000);
    const t0 = Date.now();
    const r = await alice.responses.create({ model: "ci-primes", input: "primes", tools: [CI], background: true,
      include: ["code_interpreter_call.outputs"] });
    assert.ok(Date.now() - t0 < 2000, `answered in ${Date.now() - t0} ms`);
    validate("Response", r);
    assert.match(r.id, /^resp_/);
    assert.equal(r.object, "response");
    assert.equal(r.status, "queued");
    assert.equal(r.background, true);
    assert.equal(r.store, true);
    assert.deepEqual(r.output, []);
    assert.equal(r.model, "ci-primes");
    const { r: done, seen } = await until(alice, r.id);
    assertMonotone(seen, "completed");
    assert.equal(done.id, r.id);
    assert.equal(done.created_at, r.created_at);
    assert.deepEqual(done.output.map((o) => o.type), ["code_interpreter_call", "message"]);
    const ci = done.output[0];
    assert.equal(ci.code, "print(2*3*5*7*11*13)");
    assert.equal(ci.status, "completed");
    assert.match(done.output_text, /30030/);
    assert.ok(done.usage?.total_tokens > 0);
    assert.ok(done.completed_at >= done.created_at);
    // Stored: a later retrieve gives the same, and the item is there.
    assert.deepEqual(await alice.responses.retrieve(r.id), done);
    // Its container is kept for a follow-up, tracked (and the leak check
    // looks where the sandboxes are).
    assert.ok(liveSandboxes(stack).includes(ci.container_id), `${ci.container_id} in ${liveSandboxes(stack)}`);
    assert.deepEqual(untracked(stack), []);
  });

  test("the answer does not wait for the model; cancel while the upstream call hangs is prompt, and that call is dropped", T(60), async () => {
    // slow11: the upstream says nothing for 11 s.
    const t0 = Date.now();
    const r = await alice.responses.create({ model: "slow11", input: "hang on", background: true });
    assert.ok(Date.now() - t0 < 2000, `answered in ${Date.now() - t0} ms`);
    assert.equal(r.status, "queued");
    await until(alice, r.id, { done: (x) => x.status === "in_progress", ms: 10000, every: 100 });
    await waitFor(async () => (await asked(stack, "hang on")).length > 0, "the upstream call", 5000).catch(() => {});
    const t1 = Date.now();
    const c = await alice.responses.cancel(r.id);
    assert.ok(Date.now() - t1 < 3000, `cancel took ${Date.now() - t1} ms`);
    validate("Response", c);
    assert.equal(c.status, "cancelled");
    assert.equal(c.background, true);
    assert.equal(c.id, r.id);
    // It stays cancelled: the upstream's answer, 11 s later, changes nothing.
    await sleep(12000 - (Date.now() - t0));
    const later = await alice.responses.retrieve(r.id);
    assert.equal(later.status, "cancelled");
    const q = await asked(stack, "hang on");
    assert.ok(q.length <= 1, `${q.length} upstream calls`);
  });

  test("cancel during a 60 s code run: cancelled in < 3 s, the sandbox's run interrupted, no more model turns; idempotent", T(120), async () => {
    const box = await alice.containers.create({ name: "bg-cancel" });
    await stack.resetFake();
    const marker = `cancel-me-${Date.now()}`;
    const r = await alice.responses.create({ model: "ci-args", background: true,
      input: code(`# ${marker}\nopen('/mnt/data/before', 'w').write('1')\nimport time\ntime.sleep(60)\nopen('/mnt/data/after', 'w').write('1')`),
      tools: [{ type: "code_interpreter", container: box.id }] });
    const { r: mid } = await until(alice, r.id, { done: running, ms: 30000 });
    // The output so far: the code call, still running.
    const call = mid.output.find((o) => o.type === "code_interpreter_call");
    assert.notEqual(call.status, "completed");
    assert.equal(call.container_id, box.id);
    await sleep(1500); // inside time.sleep by now
    const t0 = Date.now();
    const c = await alice.responses.cancel(r.id);
    const took = Date.now() - t0;
    assert.ok(took < 3000, `cancel took ${took} ms`);
    validate("Response", c);
    assert.equal(c.status, "cancelled");
    assert.equal(c.background, true);
    assert.equal((await alice.responses.retrieve(r.id)).status, "cancelled");
    // The container's kernel is free at once (a run still sleeping would
    // hold it for a minute), and the code after the sleep never ran.
    const t1 = Date.now();
    const check = await request(stack, "POST", `/v1/sandboxes/${box.id}/code`, { ms: 20000,
      body: JSON.stringify({ code: "import os\nprint(os.path.exists('/mnt/data/before'), os.path.exists('/mnt/data/after'))" }) });
    assert.equal(check.status, 200, check.text);
    assert.equal(check.json.stdout, "True False\n", check.text);
    assert.ok(Date.now() - t1 < 15000, `the kernel answered after ${Date.now() - t1} ms`);
    // Idempotent, and the loop asked the model nothing after the call.
    const again = await alice.responses.cancel(r.id);
    assert.equal(again.status, "cancelled");
    await sleep(1000);
    assert.equal((await asked(stack, marker)).length, 1, "the code was asked for once");
    assert.equal((await turns(stack, "ci-args")).length, 1, "one model turn: the one that called the code");
    assert.equal((await alice.responses.retrieve(r.id)).status, "cancelled");
    assert.deepEqual(untracked(stack), []);
    await alice.containers.delete(box.id);
  });

  test("bad input: OpenAI's errors (store false, finished and foreground responses, unknown and another key's ids)", T(60), async () => {
    const noStore = await stack.call("POST", "/v1/responses", { model: "gpt-test", input: "x", background: true, store: false });
    assertError(noStore, 400, "invalid_request_error");
    assert.ok(["background", "store"].includes(noStore.json.error.param), noStore.text);
    await assert.rejects(alice.responses.create({ model: "gpt-test", input: "x", background: true, store: false }),
      (e) => e instanceof OpenAI.BadRequestError);

    const bg = await alice.responses.create({ model: "gpt-test", input: "finish me", background: true });
    const { r: done } = await until(alice, bg.id);
    assert.equal(done.status, "completed");
    assert.equal(done.output_text, "echo: finish me");
    assertError(await stack.call("POST", `/v1/responses/${bg.id}/cancel`), 400, "invalid_request_error");
    await assert.rejects(alice.responses.cancel(bg.id), (e) => e instanceof OpenAI.BadRequestError);
    assert.equal((await alice.responses.retrieve(bg.id)).status, "completed", "a refused cancel changes nothing");

    // A foreground response the gateway keeps (a looped one: a plain
    // pass-through on an upstream that keeps state is the upstream's).
    const fg = await alice.responses.create({ model: "ci-primes", input: "foreground", tools: [CI] });
    assert.equal(fg.background, false);
    assert.equal((await alice.responses.retrieve(fg.id)).status, "completed");
    assertError(await stack.call("POST", `/v1/responses/${fg.id}/cancel`), 400, "invalid_request_error");

    for (const id of ["resp_" + "0".repeat(48), "resp_nope"]) {
      assertError(await stack.call("POST", `/v1/responses/${id}/cancel`), 404, "invalid_request_error");
      await assert.rejects(alice.responses.cancel(id), (e) => e instanceof OpenAI.NotFoundError);
    }
    // Another key's: as if absent, for a running one too.
    const mine = await alice.responses.create({ model: "slow11", input: "not yours", background: true });
    await assert.rejects(bob.responses.retrieve(mine.id), (e) => e instanceof OpenAI.NotFoundError);
    await assert.rejects(bob.responses.cancel(mine.id), (e) => e instanceof OpenAI.NotFoundError);
    assertError(await stack.call("POST", `/v1/responses/${mine.id}/cancel`, undefined, KEYS.bob), 404, "invalid_request_error");
    assert.ok(["queued", "in_progress"].includes((await alice.responses.retrieve(mine.id)).status), "bob's cancel did nothing");
    assert.equal((await alice.responses.cancel(mine.id)).status, "cancelled");
  });

  test("background + stream: created (queued), queued, in_progress … completed, sequence numbers unbroken; retrieve agrees", T(90), async () => {
    const s = await alice.responses.create({ model: "ci-two", input: "two rounds", tools: [CI], background: true, stream: true });
    const events = [];
    for await (const e of s) events.push(e);
    events.forEach((e, i) => assert.equal(e.sequence_number, i, "contiguous sequence numbers"));
    for (const e of events) validate("ResponseStreamEvent", e);
    assert.deepEqual(events.slice(0, 3).map((e) => e.type), ["response.created", "response.queued", "response.in_progress"]);
    assert.equal(events[0].response.status, "queued");
    assert.equal(events[1].response.status, "queued");
    assert.equal(events[2].response.status, "in_progress");
    const withResponse = events.filter((e) => e.response);
    assert.ok(withResponse.every((e) => e.response.background === true && e.response.id === events[0].response.id));
    const last = events.at(-1);
    assert.equal(last.type, "response.completed");
    assert.deepEqual(last.response.output.map((o) => o.type), ["code_interpreter_call", "code_interpreter_call", "message"]);
    assert.match(last.response.output.at(-1).content[0].text, /Done: 43/);
    const got = await alice.responses.retrieve(last.response.id);
    assert.equal(got.status, "completed");
    assert.deepEqual(got.output, last.response.output);
    assert.deepEqual(got.usage, last.response.usage);
  });

  test("a dropped background stream resumes after any sequence_number: no gap, no duplicate; a replay is the same events", T(120), async () => {
    const s = await alice.responses.create({ model: "ci-two", input: "resume me", tools: [CI], background: true, stream: true });
    const head = [];
    for await (const e of s) {
      head.push(e);
      if (e.type === "response.code_interpreter_call.interpreting") break; // breaking aborts the connection
    }
    const id = head[0].response.id;
    const n = head.at(-1).sequence_number;
    assert.equal(head.at(-1).type, "response.code_interpreter_call.interpreting", "the stream got that far");
    // The official SDK's resume: GET …?stream=true&starting_after=N.
    const tail = [];
    for await (const e of await alice.responses.retrieve(id, { stream: true, starting_after: n })) tail.push(e);
    const all = [...head, ...tail];
    all.forEach((e, i) => assert.equal(e.sequence_number, i, "no gap, no duplicate at the seam"));
    assert.equal(all.at(-1).type, "response.completed");
    for (const e of tail) validate("ResponseStreamEvent", e);
    // Finished: a replay from the start is the same events, and so is one
    // from the middle; the SDK's stream helper resumes by response_id.
    const replay = [];
    for await (const e of await alice.responses.retrieve(id, { stream: true })) replay.push(e);
    assert.deepEqual(replay, all);
    const mid = Math.floor(all.length / 2);
    const part = [];
    for await (const e of await alice.responses.retrieve(id, { stream: true, starting_after: mid })) part.push(e);
    assert.deepEqual(part, all.slice(mid + 1));
    const helper = alice.responses.stream({ response_id: id, starting_after: n });
    const fromHelper = [];
    for await (const e of helper) fromHelper.push(e.sequence_number);
    assert.deepEqual(fromHelper, tail.map((e) => e.sequence_number));
    const final = await helper.finalResponse();
    assert.equal(final.status, "completed");
    assert.match(final.output_text, /Done: 43/);
    // starting_after past the end: nothing, or OpenAI's 400; never a hang.
    const beyond = await request(stack, "GET", `/v1/responses/${id}?stream=true&starting_after=${all.length + 5}`, { ms: 10000 });
    assert.ok(beyond.status === 400 || (beyond.status === 200 && !/"sequence_number"/.test(beyond.text)), `${beyond.status} ${beyond.text.slice(0, 300)}`);
  });

  test("the upstream breaking mid-turn: the response ends failed with a server_error, before and after the code ran", T(90), async () => {
    await stack.resetFake();
    for (const [model, tools] of [["drop", []], ["ci-cut", [CI]]]) {
      const r = await alice.responses.create({ model, input: "a b c d e f", tools, background: true });
      const { r: end, seen } = await until(alice, r.id, { ms: 45000 });
      assertMonotone(seen, "failed");
      assert.equal(end.error?.code, "server_error", `${model}: ${JSON.stringify(end.error)}`);
      assert.ok(end.error.message.length > 0);
      assert.ok(!end.error.message.includes("127.0.0.1") && !end.error.message.includes(UPSTREAM_KEY), end.error.message);
      if (model === "ci-cut") {
        assert.equal((await turns(stack, "ci-cut")).length, 2, "the code ran, then the next turn broke");
      }
    }
    // Streamed, too: the stream ends with response.failed (the SDK raises).
    const s = await alice.responses.create({ model: "drop", input: "a b c d e f", background: true, stream: true });
    const types = [];
    await assert.rejects((async () => { for await (const e of s) types.push(e.type); })(), (e) => e instanceof OpenAI.APIError);
    assert.equal(types[0], "response.created");
    assert.deepEqual(untracked(stack), []);
  });

  test("a runner SIGKILLed mid-run: the response ends failed (server_error) within 45 s, a new runner starts, later jobs run", T(150), async (t) => {
    await waitFor(() => runners(stack).length === 2, "two sg-runner processes", 15000);
    const r = await alice.responses.create({ model: "ci-args", background: true, tools: [CI],
      input: code("import time\ntime.sleep(40)\nprint('survived')") });
    await until(alice, r.id, { done: running, ms: 30000 });
    const killed = runners(stack);
    for (const [pid] of killed) process.kill(pid, "SIGKILL");
    const t0 = Date.now();
    const { r: end, seen } = await until(alice, r.id, { ms: 45000, every: 500 });
    assert.equal(end.status, "failed", seen.join(" → "));
    assert.deepEqual(seen.filter((x) => x !== "in_progress"), ["failed"], seen.join(" → "));
    assert.equal(end.error?.code, "server_error", JSON.stringify(end.error));
    t.diagnostic(`failed ${Date.now() - t0} ms after the kill`);
    // The master starts new ones; the old are gone.
    await waitFor(() => runners(stack).filter(([pid, start]) => !killed.some(([p, s]) => p === pid && s === start)).length === 2,
      "two new sg-runner processes", 20000);
    assert.ok(killed.every(([pid, start]) => procOf(pid)?.start !== start), "the killed runners are gone");
    const next = await alice.responses.create({ model: "ci-primes", input: "after the kill", tools: [CI], background: true });
    const { r: ok } = await until(alice, next.id);
    assert.equal(ok.status, "completed");
    assert.match(ok.output_text, /30030/);
    assert.deepEqual(untracked(stack), []);
  });

  test("the Agents SDK, streamed, with modelSettings.providerData.background: a code run to the end", T(90), async () => {
    const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: alice, useResponses: true }),
      tracingDisabled: true });
    const agent = new Agent({ name: "coder", instructions: "Run the code.", model: "ci-primes",
      tools: [codeInterpreterTool()], modelSettings: { providerData: { background: true } } });
    const result = await runner.run(agent, "primes in the background", { stream: true });
    for await (const _ of result); // drain
    await result.completed;
    assert.match(result.finalOutput, /30030/);
    const resp = await alice.responses.retrieve(result.lastResponseId);
    assert.equal(resp.background, true, "it really ran in the background");
    assert.equal(resp.status, "completed");
  });

  // Each job waits 0.3 s on the upstream: two runners take 30 s or more
  // for them all, /healthz probed all along.
  test("200 background responses at once: all accepted and completed, /healthz < 2 s throughout", T(300), async (t) => {
    const N = 200, IN_FLIGHT = 20;
    const probes = [];
    let probing = true;
    const prober = (async () => {
      while (probing) {
        const t0 = Date.now();
        let status;
        try {
          status = (await fetch(stack.url("/healthz"), { signal: AbortSignal.timeout(2000) })).status;
        } catch (e) { status = e.name; }
        probes.push({ status, ms: Date.now() - t0 });
        await sleep(100);
      }
    })();
    const rss = [];
    const sampler = setInterval(() => {
      for (const [pid] of runners(stack)) {
        try {
          rss.push(Number(/^VmRSS:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]));
        } catch { /* gone */ }
      }
    }, 500);
    try {
      const t0 = Date.now();
      const made = new Array(N);
      let next = 0;
      await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
        for (let i = next++; i < N; i = next++) {
          made[i] = await alice.responses.create({ model: "slow03", input: `load ${i}`, background: true });
        }
      }));
      const accepted = Date.now() - t0;
      assert.ok(made.every((r) => r.status === "queued" && r.background === true), "every one answered queued");
      assert.equal(new Set(made.map((r) => r.id)).size, N, "distinct ids");
      // Poll them all, IN_FLIGHT at a time, until each is terminal.
      const left = new Map(made.map((r, i) => [r.id, i]));
      const done = new Map();
      const end = Date.now() + 240000;
      while (left.size && Date.now() < end) {
        const ids = [...left.keys()];
        let k = 0;
        await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
          for (let j = k++; j < ids.length; j = k++) {
            const r = await alice.responses.retrieve(ids[j]);
            if (TERMINAL.includes(r.status)) {
              done.set(r.id, r);
              left.delete(r.id);
            }
          }
        }));
        if (left.size) await sleep(500);
      }
      const all = Date.now() - t0;
      t.diagnostic(`${N} accepted in ${accepted} ms, all terminal after ${all} ms; runner RSS max ${Math.max(0, ...rss)} kB`);
      assert.equal(left.size, 0, `${left.size} never ended`);
      const bad = [...done.values()].filter((r) => r.status !== "completed" || r.output_text !== `echo: load ${made.findIndex((m) => m.id === r.id)}`);
      assert.deepEqual(bad.map((r) => `${r.id} ${r.status} ${r.output_text}`), []);
    } finally {
      probing = false;
      clearInterval(sampler);
      await prober;
    }
    const slow = probes.filter((p) => p.status !== 200 || p.ms >= 2000);
    t.diagnostic(`${probes.length} /healthz probes, slowest ${Math.max(...probes.map((p) => p.ms))} ms`);
    assert.ok(probes.length > 100, `the prober ran all along (${probes.length} probes)`);
    assert.deepEqual(slow, [], "every /healthz probe answered 200 in < 2 s");
  });
});

describe("one job per key at a time (max_per_key = 1), and a restart with jobs queued", () => {
  let stack, alice, bob;
  before(async () => {
    stack = await startStack(base("runners = 2; max_per_key = 1;"));
    alice = sdk(stack, KEYS.alice);
    bob = sdk(stack, KEYS.bob);
  });
  after(() => stack?.stop());

  const restart = () => stack.restart(30000);

  test("a key's second job waits while its first runs (another key's does not), and a queued job cancelled never runs", T(120), async () => {
    const long = await alice.responses.create({ model: "ci-args", background: true, tools: [CI],
      input: code("import time\ntime.sleep(30)\nprint('long')") });
    await until(alice, long.id, { done: running, ms: 30000 });
    const waiting = await alice.responses.create({ model: "gpt-test", input: "queued-b", background: true });
    // Bob's job passes alice's queued one.
    const other = await bob.responses.create({ model: "gpt-test", input: "bob's turn", background: true });
    const { r: bobDone } = await until(bob, other.id, { ms: 20000 });
    assert.equal(bobDone.status, "completed");
    assert.equal((await alice.responses.retrieve(waiting.id)).status, "queued", "alice's second job waits for her first");
    const t0 = Date.now();
    const c = await alice.responses.cancel(waiting.id);
    assert.ok(Date.now() - t0 < 3000);
    assert.equal(c.status, "cancelled");
    assert.equal((await alice.responses.cancel(waiting.id)).status, "cancelled");
    assert.equal((await alice.responses.cancel(long.id)).status, "cancelled");
    // Her slot is free again: a new job runs, the cancelled one never did.
    const after1 = await alice.responses.create({ model: "gpt-test", input: "after the cancels", background: true });
    assert.equal((await until(alice, after1.id, { ms: 30000 })).r.status, "completed");
    assert.equal((await alice.responses.retrieve(waiting.id)).status, "cancelled");
    assert.deepEqual(await asked(stack, "queued-b"), [], "the cancelled queued job never reached the model");
    assert.deepEqual(untracked(stack), []);
  });

  test("restarted with one job running and three queued: the queued ones all complete, the running one ends; none left unfinished", T(240), async () => {
    const long = await alice.responses.create({ model: "ci-args", background: true, tools: [CI],
      input: code("import time\ntime.sleep(25)\nprint('long')") });
    await until(alice, long.id, { done: running, ms: 30000 });
    const queued = [];
    for (const i of [1, 2, 3]) queued.push(await alice.responses.create({ model: "gpt-test", input: `queued ${i}`, background: true }));
    for (const q of queued) assert.equal((await alice.responses.retrieve(q.id)).status, "queued");
    await restart();
    for (const [i, q] of queued.entries()) {
      const { r } = await until(alice, q.id, { ms: 90000, every: 500 });
      assert.equal(r.status, "completed", `queued ${i + 1}: ${r.status} ${JSON.stringify(r.error)}`);
      assert.equal(r.output_text, `echo: queued ${i + 1}`);
    }
    const { r: end } = await until(alice, long.id, { ms: 90000, every: 500 });
    assert.ok(["failed", "completed"].includes(end.status), end.status);
    if (end.status === "failed") assert.equal(end.error?.code, "server_error", JSON.stringify(end.error));
    else assert.match(end.output_text, /long/);
    assert.deepEqual(untracked(stack), []);
    // The new gateway runs new work.
    const fresh = await alice.responses.create({ model: "ci-primes", input: "after the restart", tools: [CI], background: true });
    assert.equal((await until(alice, fresh.id)).r.status, "completed");
  });
});
