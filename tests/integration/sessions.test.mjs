// Sticky sessions, explicit containers and conversations that follow
// their container, on the local sandbox and on the e2b fake: state lives
// across requests and responders, per key, within limits, and goes when
// it should. The scripted model ci-turn runs the newest user text as its
// code call's arguments ({"code": ...}) and answers "args result: <what
// the model read>".
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { startStack, waitFor as until, KEYS, E2B_KEY, serviceUser, sseEvents, sandgateCli, reapNow } from "./harness.mjs";

const isRoot = process.getuid() === 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const LOST = "[sandgate: this conversation's sandbox was lost";

// One code_interpreter request whose model runs code; the text the model
// read comes back. opts: session, key, chat, stream, container, prev,
// input (extra Responses input items before the prompt).
async function ask(stack, code, opts = {}) {
  const args = JSON.stringify({ code });
  const tool = { type: "code_interpreter", container: opts.container ?? { type: "auto" } };
  const metadata = opts.session ? { session_id: opts.session } : undefined;
  const body = opts.chat ?
    { model: "ci-turn", messages: [{ role: "user", content: args }], tools: [tool], metadata, stream: !!opts.stream } :
    { model: "ci-turn", input: opts.input ? [...opts.input, { role: "user", content: args }] : args, tools: [tool],
      metadata, stream: !!opts.stream, previous_response_id: opts.prev, include: ["code_interpreter_call.outputs"] };
  let r;
  for (;;) {
    r = await stack.call("POST", opts.chat ? "/v1/chat/completions" : "/v1/responses", body, opts.key ?? KEYS.alice);
    // As the SDKs do: 429 and 503 carry retry-after.
    if (!opts.retry || (r.status !== 429 && r.status !== 503)) break;
    await sleep(200);
  }
  if (r.status !== 200) return { status: r.status, error: r.json?.error, text: "" };
  if (opts.stream) {
    const evs = sseEvents(r.text).filter((e) => e.data && e.data !== "[DONE]").map((e) => JSON.parse(e.data));
    const text = opts.chat ? evs.map((c) => c.choices?.[0]?.delta?.content ?? "").join("") :
      evs.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join("");
    const done = evs.find((e) => e.type === "response.completed")?.response;
    return { status: 200, text, response: done };
  }
  const text = opts.chat ? r.json.choices[0].message.content :
    r.json.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("");
  return { status: 200, text, response: opts.chat ? null : r.json };
}

const read = (t) => t.replace(/^args result: /, "");
const containerOf = (resp) => resp.output.find((o) => o.type === "code_interpreter_call")?.container_id;

async function sandboxes(stack, key = KEYS.alice) {
  const r = await stack.call("GET", "/v1/sandboxes", undefined, key);
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

const sandgate = sandgateCli;
const reap = reapNow;

// Delete a sandbox behind sandgate's back, at its provider.
async function vanish(stack, id, provider) {
  if (provider === "local") {
    const sock = `${stack.localDir()}/sandboxd.sock`;
    const got = await new Promise((res) => {
      const c = net.connect(sock, () => c.write(JSON.stringify({ op: "delete", id }) + "\n"));
      let t = "";
      c.on("data", (d) => { t += d; });
      c.on("close", () => res(t));
      c.on("error", () => res(t));
    });
    assert.match(got, /"ok":true/);
    return;
  }
  const [{ handle }] = stack.sql(`SELECT handle FROM sandboxes WHERE id = '${id}'`);
  const pid = JSON.parse(handle).id;
  const r = await fetch(`http://127.0.0.1:${stack.e2bPort}/sandboxes/${pid}`, {
    method: "DELETE", headers: { "X-API-Key": E2B_KEY } });
  assert.ok(r.status < 300, `fake delete: ${r.status}`);
}

for (const provider of ["local", "e2b"]) {
  describe(`sessions on ${provider}`, () => {
    let stack;
    before(async () => {
      stack = await startStack(provider === "e2b" ? { sandboxes: true, sessions: "max_per_key = 3;" } :
        { sessions: "max_per_key = 3;" });
    });
    after(async () => { await stack?.stop(); });

    test("a session keeps its state across requests and responders, JSON and streamed, on both endpoints", async () => {
      assert.equal(read((await ask(stack, "x = 42\nprint('set')", { session: "s-state" })).text), "set\n");
      assert.equal(read((await ask(stack, "x += 1\nprint(x)", { session: "s-state", chat: true })).text), "43\n");
      // Every responder killed: the next request is served by new ones.
      for (const pid of stack.processes().responders) process.kill(pid, "SIGKILL");
      await until(async () => (await fetch(stack.url("/healthz"))).status === 200, "the pool again");
      let r;
      for (let i = 0; i < 20; i++) {
        r = await ask(stack, "x += 1\nprint(x)", { session: "s-state", stream: true });
        if (r.status === 200) break;
        await sleep(100);
      }
      assert.equal(read(r.text), "44\n");
      assert.equal(read((await ask(stack, "print(x)", { session: "s-state", chat: true, stream: true })).text), "44\n");
      // Without a session: a new conversation's fresh sandbox, kept for
      // its follow-ups.
      const before = (await sandboxes(stack)).length;
      assert.match(read((await ask(stack, "print(x)")).text), /NameError/);
      assert.equal((await sandboxes(stack)).length, before + 1);
    });

    test("two keys with one session id never share a sandbox", async () => {
      await ask(stack, "secret = 'alice'", { session: "same" });
      await ask(stack, "secret = 'bob'", { session: "same", key: KEYS.bob });
      assert.equal(read((await ask(stack, "print(secret)", { session: "same" })).text), "alice\n");
      assert.equal(read((await ask(stack, "print(secret)", { session: "same", key: KEYS.bob })).text), "bob\n");
      const a = (await sandboxes(stack)).map((s) => s.id), b = (await sandboxes(stack, KEYS.bob)).map((s) => s.id);
      assert.ok(b.length >= 1 && b.every((id) => !a.includes(id)));
    });

    test("an explicit container runs the code; another key's or an unknown id is a 404 before any upstream call", async () => {
      const c = await stack.call("POST", "/v1/sandboxes", { tool: provider });
      assert.equal(c.status, 201, c.text);
      const id = c.json.id;
      const r = await ask(stack, "y = 5\nprint('ok')", { container: id });
      assert.equal(read(r.text), "ok\n");
      assert.equal(containerOf(r.response), id);
      const run = await stack.call("POST", `/v1/sandboxes/${id}/code`, { code: "print(y)" });
      assert.equal(run.json.stdout, "5\n");
      await stack.resetFake();
      for (const [cid, key] of [[id, KEYS.bob], ["cntr_00000000000000000000000000000000", KEYS.alice]]) {
        const bad = await ask(stack, "print(1)", { container: cid, key });
        assert.equal(bad.status, 404);
        assert.equal(bad.error.param, "tools");
        assert.match(bad.error.message, /not found/);
      }
      assert.equal((await stack.fakeRequests()).length, 0, "the upstream was never called");
      await stack.call("DELETE", `/v1/sandboxes/${id}`);
    });

    test("past max_per_key, the least recently used idle sandbox goes; never one running; 429 when all run", async () => {
      for (const s of await sandboxes(stack)) await stack.call("DELETE", `/v1/sandboxes/${s.id}`);
      for (const s of ["l1", "l2", "l3"]) await ask(stack, `name = '${s}'`, { session: s });
      assert.equal((await sandboxes(stack)).length, 3);
      // l1 is the least recently used; while it runs, l2 goes instead.
      const busy = ask(stack, "import time\ntime.sleep(3)\nprint(name)", { session: "l1" });
      await sleep(1200);
      await ask(stack, "name = 'l4'", { session: "l4" });
      const ids = await sandboxes(stack);
      assert.equal(ids.length, 3, JSON.stringify(ids));
      assert.equal(read((await busy).text), "l1\n");
      const l2 = await ask(stack, "print(name)", { session: "l2" });
      assert.ok(read(l2.text).startsWith(LOST), l2.text);
      assert.match(l2.text, /NameError/);
      assert.equal(read((await ask(stack, "print(name)", { session: "l4" })).text), "l4\n");
      // All three running at once: a fourth cannot evict any.
      const runs = ["l1", "l2", "l4"].map((s) => ask(stack, "import time\ntime.sleep(3)", { session: s }));
      await sleep(1500);
      const full = await ask(stack, "print(1)", { session: "l5" });
      assert.equal(full.status, 429);
      assert.equal(full.error.code, "rate_limit_exceeded");
      await Promise.all(runs);
    });

    test("a kept sandbox near its end at the provider is extended by its ttl, not by a request's life", { skip: provider !== "e2b" && "the e2b fake counts keepalives" }, async () => {
      await ask(stack, "k = 1", { session: "slide" });
      const id = containerOf((await ask(stack, "print(k)", { session: "slide" })).response);
      // 70 s left at the provider: less than ttl (1200 s), more than a run needs.
      stack.sql(`UPDATE sandboxes SET expires_at = ${Math.floor(Date.now() / 1000) + 70} WHERE id = '${id}'`);
      const before = (await stack.fakeHook("e2b", "stats")).timeouts?.length ?? 0;
      assert.equal(read((await ask(stack, "print(k)", { session: "slide" })).text), "1\n");
      const t = (await stack.fakeHook("e2b", "stats")).timeouts ?? [];
      assert.equal(t.length, before + 1, "one keepalive");
      assert.equal(t[t.length - 1].timeout, 1260, "ttl + 60 s");
    });

    test("20 requests on one new session at once create exactly one sandbox", async () => {
      for (const s of await sandboxes(stack, KEYS.carol)) await stack.call("DELETE", `/v1/sandboxes/${s.id}`, undefined, KEYS.carol);
      const st = provider === "e2b" ? (await stack.fakeHook("e2b", "stats")).creates : 0;
      const rs = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        ask(stack, `import os\nprint(os.getpid() > 0, ${i})`, { session: "crowd", key: KEYS.carol, retry: true })));
      for (const r of rs) assert.equal(r.status, 200, JSON.stringify(r.error));
      assert.equal((await sandboxes(stack, KEYS.carol)).length, 1);
      if (provider === "e2b") assert.equal((await stack.fakeHook("e2b", "stats")).creates - st, 1);
    });

    test("a session whose sandbox vanished at the provider gets a new one, and the model is told", { skip: !isRoot && "needs root" }, async () => {
      await ask(stack, "kept = 1", { session: "vanish", key: KEYS.bob });
      const ids = (await sandboxes(stack, KEYS.bob)).map((s) => s.id);
      const r0 = await ask(stack, "print(kept)", { session: "vanish", key: KEYS.bob });
      assert.equal(read(r0.text), "1\n");
      const id = containerOf(r0.response);
      assert.ok(ids.includes(id));
      await vanish(stack, id, provider);
      const r = await ask(stack, "print(kept)", { session: "vanish", key: KEYS.bob });
      assert.equal(r.status, 200, JSON.stringify(r.error));
      assert.ok(read(r.text).startsWith(LOST), r.text);
      assert.match(r.text, /NameError/);
      assert.equal(read((await ask(stack, "kept = 2\nprint(kept)", { session: "vanish", key: KEYS.bob })).text), "2\n");
    });
  });
}

describe("sessions: lifetimes, the reaper, conversations, the CLI", () => {
  let stack;
  before(async () => {
    stack = await startStack({ sessions: "ttl = 2;", interception: 'container_reuse = "conversation";' });
  });
  after(async () => { await stack?.stop(); });

  test("a session idle past its ttl is swept by the reaper; the next request is told its state is gone", async () => {
    await ask(stack, "v = 1", { session: "short" });
    const id = (await sandboxes(stack)).find((s) => s.status === "running").id;
    await sleep(3000);
    assert.match(await reap(stack), /deleted [1-9]/);
    assert.equal((await stack.call("GET", `/v1/sandboxes/${id}`)).status, 404);
    const r = await ask(stack, "print(v)", { session: "short" });
    assert.ok(read(r.text).startsWith(LOST), r.text);
  });

  test("with container_reuse = conversation, a follow-up runs in its conversation's container", async () => {
    const first = await ask(stack, "z = 7\nprint('set')");
    const c = containerOf(first.response);
    assert.match(c, /^cntr_/);
    // previous_response_id
    const second = await ask(stack, "print(z)", { prev: first.response.id });
    assert.equal(read(second.text), "7\n");
    assert.equal(containerOf(second.response), c);
    // Replayed items carry the container.
    const third = await ask(stack, "print(z + 1)", { input: first.response.output.filter((o) => o.type === "code_interpreter_call") });
    assert.equal(read(third.text), "8\n");
    // Another key cannot continue into it.
    const bob = await ask(stack, "print(z)", { key: KEYS.bob, input: first.response.output.filter((o) => o.type === "code_interpreter_call") });
    assert.match(read(bob.text), /NameError/);
    assert.notEqual(containerOf(bob.response), c);
  });

  test("sandgate sessions list and purge", async () => {
    await ask(stack, "p = 1", { session: "cli-a" });
    await ask(stack, "p = 2", { session: "cli-b", key: KEYS.bob });
    const bobs = (await sandboxes(stack, KEYS.bob)).length;
    const list = sandgate(stack, "sessions", "list", "--key", "alice");
    assert.match(list, /alice\s+cli-a\s+cntr_/);
    assert.doesNotMatch(list, /cli-b/);
    assert.match(sandgate(stack, "sessions", "list"), /bob\s+cli-b/);
    assert.match(sandgate(stack, "sessions", "purge", "--key", "bob"), /purged 1 sessions, 0 failed/);
    assert.doesNotMatch(sandgate(stack, "sessions", "list"), /cli-b/);
    assert.equal((await sandboxes(stack, KEYS.bob)).length, bobs - 1, "the session's sandbox went with it");
    assert.match(sandgate(stack, "sessions", "list"), /cli-a/);
  });

  test("/metrics counts live sandboxes by tool and kind", async () => {
    await ask(stack, "m = 1", { session: "metrics" });
    const text = await (await fetch(stack.url("/metrics"))).text();
    assert.match(text, /^sandgate_sandboxes\{tool="local",kind="session"\} [1-9]/m);
  });
});

describe("sessions: what the reaper sweeps after a crash or a reload", () => {
  let stack;
  // A request's own sandbox (container_reuse = "none") whose responder died.
  before(async () => { stack = await startStack({ request_timeout: 60, interception: 'container_reuse = "none";' }); });
  after(async () => { await stack?.stop(); });

  test("a responder SIGKILLed mid-request leaves a sandbox the reaper sweeps", async () => {
    const pending = ask(stack, "import time\ntime.sleep(30)");
    let id;
    // Made, not being made: a kill mid-create leaves a row the reaper
    // only takes once the create could no longer be under way (90 s).
    await until(async () => {
      const s = (await sandboxes(stack))[0];
      id = s?.id;
      return s?.status === "running";
    }, "the request's sandbox");
    await sleep(500);
    const busy = stack.processes().responders;
    for (const pid of busy) process.kill(pid, "SIGKILL");
    await pending.catch(() => {});
    await until(async () => { await reap(stack); return (await stack.call("GET", `/v1/sandboxes/${id}`)).status === 404; },
      "the orphaned sandbox swept");
  });

  test("a tool removed on SIGHUP has its sandboxes deleted with its old settings", async () => {
    const c = await stack.call("POST", "/v1/sandboxes", { tool: "local2" });
    assert.equal(c.status, 201, c.text);
    await stack.reload((text) => text.replace(/,\s*\{ name = "local2";[^}]*\}/, ""));
    assert.doesNotMatch(fs.readFileSync(`${stack.dir}/sandgate.conf`, "utf8"), /local2/);
    await until(async () => (await stack.call("GET", `/v1/sandboxes/${c.json.id}`)).status === 404,
      "the removed tool's sandbox deleted");
    await until(() => /^event=reaper_sweep tool=local2 deleted=1 failed=0 /m.test(stack.log()),
      "the removed tool's sweep in the log");
  });
});
