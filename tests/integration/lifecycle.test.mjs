// A gateway on its own Unix socket (as behind nginx or Apache), and how it
// stops: idle responders at once, a busy one finishes its stream.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { execFileSync } from "node:child_process";
import OpenAI from "openai";
import { startStack, KEYS, serviceUser } from "./harness.mjs";

let stack, client;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
// The socket's group: the service user's own (the gateway runs as it).
const group = execFileSync("id", ["-gn", serviceUser]).toString().trim();

before(async () => {
  stack = await startStack({ start: "listen", unixSocket: true,
    socket: `socket_mode = "0660"; socket_owner = ":${group}";` });
  client = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
});
after(async () => { await stack?.stop(); });

test("--listen /path: the socket gets socket_mode and socket_owner", async () => {
  const st = fs.statSync(`${stack.dir}/state/sg.sock`);
  assert.ok(st.isSocket());
  assert.equal(st.mode & 0o777, 0o660);
  const gid = Number(execFileSync("id", ["-g", serviceUser]).toString().trim());
  assert.equal(st.gid, gid);
  const r = await client.responses.create({ model: "gpt-test", input: "over a unix socket" });
  assert.equal(r.output_text, "echo: over a unix socket");
});

test("SIGTERM: idle responders exit at once, a busy stream finishes", async () => {
  const stream = await client.chat.completions.create({
    model: "slowstream", stream: true, messages: [{ role: "user", content: "a b c d e f" }],
  });
  const it = stream[Symbol.asyncIterator]();
  let text = (await it.next()).value.choices[0].delta.content ?? "";
  const { master, responders } = stack.processes();
  assert.ok(responders.length >= 2);
  process.kill(master, "SIGTERM");
  // The busy one is still streaming; the idle ones are gone quickly.
  const until = Date.now() + 3000;
  while (Date.now() < until && responders.filter(alive).length > 1) await sleep(20);
  assert.equal(responders.filter(alive).length, 1, "only the busy responder is left");
  for (let n = await it.next(); !n.done; n = await it.next()) text += n.value.choices[0]?.delta?.content ?? "";
  assert.equal(text, "echo: a b c d e f", "the stream was completed, not cut");
  const end = Date.now() + 5000;
  while (Date.now() < end && alive(master)) await sleep(20);
  assert.ok(!alive(master), "the master exits once its responders are gone");
});
