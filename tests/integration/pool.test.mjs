// The prefork pool: dead responders are replaced, a busy pool grows to
// its maximum, spare responders retire, SIGHUP reloads or refuses.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import OpenAI from "openai";
import { startStack, KEYS, procTable } from "./harness.mjs";

let stack, client;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  stack = await startStack();
  client = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
});
after(async () => { await stack?.stop(); });

async function until(fn, what, ms = 10000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return;
    await sleep(50);
  }
  assert.fail(`timed out: ${what}`);
}

async function metric(name) {
  const text = await (await fetch(`${stack.base}/metrics`)).text();
  const m = text.match(new RegExp(`^${name.replace(/[{}"]/g, "\\$&")} (\\d+)$`, "m"));
  return m ? Number(m[1]) : NaN;
}

test("a responder killed with SIGKILL is replaced and the next request succeeds", async () => {
  // At MIN = 2 (the start's probes can grow the pool by one for a moment
  // on a slow build: it shrinks back after idle_retire, 2 s).
  await until(() => stack.processes().responders.length === 2, "workers MIN = 2");
  const before = stack.processes();
  const victim = before.responders[0];
  process.kill(victim, "SIGKILL");
  await until(() => {
    const now = stack.processes();
    return !now.responders.includes(victim) && now.responders.length === 2;
  }, "replacement responder");
  assert.equal(stack.processes().master, before.master, "the master survived");
  for (let i = 0; i < 4; i++) {
    const r = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: `after ${i}` }] });
    assert.equal(r.choices[0].message.content, `echo: after ${i}`);
  }
  assert.match(stack.log(), new RegExp(`responder ${victim} died \\(signal 9\\); replacing it`));
});

test("8 slow streams at once with --workers 2:8 are all served; /healthz still answers", async () => {
  const firsts = [];
  let finished = 0;
  const one = async (i) => {
    const stream = await client.chat.completions.create({
      model: "slowstream", stream: true, messages: [{ role: "user", content: `s${i} a b c d` }],
    });
    let text = "", got = false;
    for await (const c of stream) {
      if (!got) { got = true; firsts.push({ i, finishedBefore: finished }); }
      text += c.choices[0]?.delta?.content ?? "";
    }
    finished++;
    return text;
  };
  const all = Promise.all(Array.from({ length: 8 }, (_, i) => one(i)));
  // While the 8 are streaming, the pool is at its maximum: every one busy.
  await until(async () => (await metric('sandgate_responders{state="busy"}')) >= 7, "8 busy responders");
  const h = await fetch(`${stack.base}/healthz`);
  assert.equal(h.status, 200, "/healthz answered while the pool was full of streams");
  const texts = await all;
  texts.forEach((t, i) => assert.equal(t, `echo: s${i} a b c d`));
  // All 8 were served concurrently: each got its first chunk before any
  // stream had finished (arrival order, not wall time).
  assert.equal(firsts.length, 8);
  for (const f of firsts) assert.equal(f.finishedBefore, 0, `stream ${f.i} waited for another to end`);
  // Past MAX the pool only holds requests that wait their turn and the
  // light routes (at most MAX + max(MAX, 64)); 8 streams never waited.
  assert.ok(stack.processes().responders.length <= 8 + 64, "never above MAX + 64");
});

test("spare responders above MIN retire after idle_retire", async () => {
  await until(() => stack.processes().responders.length === 2, "pool back to MIN", 20000);
});

test("SIGHUP with a broken config is refused and the old one keeps serving", async () => {
  const cfgPath = `${stack.dir}/sandgate.conf`;
  const good = fs.readFileSync(cfgPath, "utf8");
  fs.writeFileSync(cfgPath, good + "\nserver: { workers = [1, ; }\n");
  const { master, responders } = stack.processes();
  process.kill(master, "SIGHUP");
  await until(() => /reload refused, keeping the running config/.test(stack.log()), "refusal logged");
  assert.deepEqual(stack.processes().responders.sort(), responders.sort(), "responders untouched");
  const r = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "old" }] });
  assert.equal(r.choices[0].message.content, "echo: old");
  fs.writeFileSync(cfgPath, good);
});

test("SIGHUP with a good config rolls the responders onto it", async () => {
  const cfgPath = `${stack.dir}/sandgate.conf`;
  const good = fs.readFileSync(cfgPath, "utf8");
  await assert.rejects(client.chat.completions.create({ model: "gpt-new", messages: [] }), (e) => e.status === 404);
  await stack.reload((c) => c.replace('models = (', 'models = (\n  { name = "gpt-new"; api_base = "http://127.0.0.1:1/v1"; api_key = "x"; model = "echo"; },'));
  const r = await fetch(stack.url("/v1/models"), { headers: { authorization: `Bearer ${KEYS.alice}` } });
  const names = (await r.json()).data.map((m) => m.id);
  assert.ok(names.includes("gpt-new"), "new config in force");
  fs.writeFileSync(cfgPath, good);
});

test("--workers holds across a reload; the reaper runs without sandbox tools (it also ends stored responses)", async () => {
  const own = await startStack({ workers: "3:3" });
  const reaper = () => procTable().find((p) => p.comm === "sg-reaper" && p.ppid === own.processes().master);
  try {
    // (Slow under ASan: the third may still be starting.)
    await until(() => own.processes().responders.length === 3, "three responders");
    // No sandbox tools any more (and nothing that names one).
    await own.reload((c) => c.replace(/sandbox_tools = \([\s\S]*?\n\);/, "").replace(/interception: \{[^\n]*\};/, ""));
    assert.match(own.log(), /reloaded/);
    // Past idle_retire (2 s): the config's [2, 8] would have let one go.
    await sleep(3500);
    assert.equal(own.processes().responders.length, 3, own.log());
    await until(() => reaper() !== undefined, "a reaper with no sandbox tool");
  } finally {
    await own.stop();
  }
});
