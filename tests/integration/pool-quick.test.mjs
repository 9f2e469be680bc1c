// Quick requests and the pool: a burst of requests that are each over in
// a few milliseconds is served by the responders there are (forking more
// costs more than waiting for one), and a responder that has sent its
// whole answer is free at once, not after the web server's close.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startStack, waitFor as until, KEYS, request } from "./harness.mjs";
import { fcgiRequest, fcgiConn } from "./fcgi-client.mjs";

let stack;

before(async () => {
  // quick: the fake model answers after 2 ms (SG_GROW_WAIT_MS is 25).
  stack = await startStack({ models: (model) => model("quick", "slow-0.002") });
});
after(async () => { await stack?.stop(); });

const chat = (content) => JSON.stringify({ model: "quick", messages: [{ role: "user", content }] });

async function metric(sample) {
  const lines = (await request(stack, "GET", "/metrics", { key: null })).text.split("\n");
  const line = lines.find((l) => l.startsWith(sample + " "));
  return line ? Number(line.slice(sample.length + 1)) : NaN;
}

test("a burst of quick requests is served without growing the pool to its most", async () => {
  // --workers 2:8. 200 model requests, 6 at a time, each holding a
  // responder a few milliseconds: the pool used to fork one responder per
  // request under way (6 or more).
  await until(() => stack.processes().responders.length === 2, "workers MIN = 2", 15000);
  let next = 0, most = 0;
  const worker = async () => {
    while (next < 200) {
      const i = next++;
      const r = await request(stack, "POST", "/v1/chat/completions", { key: KEYS.bob, body: chat(`q${i}`), ms: 30000 });
      assert.equal(r.status, 200, r.text);
      if (i % 20 === 0) most = Math.max(most, stack.processes().responders.length);
    }
  };
  await Promise.all(Array.from({ length: 6 }, worker));
  // Spare responders stay for idle_retire (2 s): any the burst made are
  // still here.
  most = Math.max(most, stack.processes().responders.length);
  assert.ok(most <= 4, `the pool grew to ${most} responders for requests of a few milliseconds`);
});

test("a responder that answered is free while the web server has yet to close", async () => {
  // Four connections whose web server keeps its side open after the
  // answer (allowHalfOpen). Their responders closed theirs: none is busy
  // waiting for the web server's close (libfcgi's linger did, 2 s).
  const conns = Array.from({ length: 4 }, () => fcgiConn(stack.fcgiAddr, { halfOpen: true }));
  try {
    const outs = await Promise.all(conns.map((c, i) =>
      c.send(fcgiRequest("GET", "/healthz", { key: null, params: { N: String(i) } }))));
    for (const out of outs) assert.match(out, /^Status: 200 /);
    // Busy: only the responder answering /metrics itself.
    assert.equal(await metric('sandgate_responders{state="busy"}'), 1);
    // And each connection saw its end from sandgate's side.
    await until(() => conns.every((c) => c.s.readableEnded), "sandgate closed each connection", 2000);
  } finally {
    for (const c of conns) c.s.destroy();
  }
});
