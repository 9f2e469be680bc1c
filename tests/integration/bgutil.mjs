// What the background tests share (background.test.mjs,
// background-nginx.test.mjs): the requests they make, polling a response
// to its end, the runners and sandboxes of a stack.
import assert from "node:assert/strict";
import fs from "node:fs";
import OpenAI from "openai";
import { procTable } from "./harness.mjs";
import { validate } from "./schema.mjs";

export const CI = { type: "code_interpreter", container: { type: "auto" } };
export const code = (c) => JSON.stringify({ code: c });
export const TERMINAL = ["completed", "failed", "incomplete", "cancelled"];
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const T = (s) => ({ timeout: s * 1000 });
// The harness's request_timeout (30 s) would cut the long runs short;
// slow03 answers after 0.3 s (the load test's jobs).
export const base = (bg) => ({ request_timeout: 900, top: `background = { ${bg} };`,
  models: (model) => [model("ci-cut", "ci-cut"), model("slow03", "slow-0.3")].join(",\n") });
export const sdk = (stack, key) => new OpenAI({ apiKey: key, baseURL: stack.url("/v1"), maxRetries: 0, timeout: 30000 });

// Poll retrieve until done(r) (default: a terminal status), at most ms:
// the last response, and every status seen in order (each shape checked
// against the spec, background true throughout).
export async function until(client, id, { done = (r) => TERMINAL.includes(r.status), ms = 60000, every = 200 } = {}) {
  const seen = [];
  const end = Date.now() + ms;
  let r;
  for (;;) {
    r = await client.responses.retrieve(id);
    validate("Response", r);
    assert.equal(r.background, true, `${id}: background in every shape (${r.status})`);
    if (seen.at(-1) !== r.status) seen.push(r.status);
    if (done(r)) return { r, seen };
    if (Date.now() > end) assert.fail(`${id}: still ${r.status} after ${ms} ms (seen ${seen.join(" → ")})`);
    await sleep(every);
  }
}

// The statuses seen, in order, follow queued → in_progress → the end.
export function assertMonotone(seen, end) {
  const order = ["queued", "in_progress", end];
  assert.equal(seen.at(-1), end, seen.join(" → "));
  assert.deepEqual(seen, [...seen].sort((a, b) => order.indexOf(a) - order.indexOf(b)), `in order: ${seen.join(" → ")}`);
  assert.ok(seen.every((s) => order.includes(s)), seen.join(" → "));
}

// A running code_interpreter_call in the output so far: the sandbox runs.
export const running = (r) => r.status === "in_progress" && r.output.some((o) => o.type === "code_interpreter_call");

// The runners of stack's master (their pid and start): its children named
// sg-runner, never another gateway's.
export function runners(stack) {
  const { master } = stack.processes();
  return procTable().filter((p) => p.ppid === master && p.comm === "sg-runner").map((p) => [p.pid, p.start]);
}

// The local sandboxes alive: a kernel socket in sandboxd's directory each.
export function liveSandboxes(stack) {
  try {
    return fs.readdirSync(`${stack.localDir()}/kernels`).filter((f) => f.endsWith(".sock")).map((f) => f.slice(0, -5));
  } catch { return []; } // none yet
}

// Those the store does not track: a leak.
export function untracked(stack) {
  const known = new Set(stack.sql("SELECT id FROM sandboxes").map((r) => r.id));
  return liveSandboxes(stack).filter((id) => !known.has(id));
}

