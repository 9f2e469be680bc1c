// A responder that has sent its whole answer is free at once, not after
// the web server's close. (When the pool grows for quick requests is
// test_board.c's: a burst's timing is the machine's, not the rule's.)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startStack, waitFor as until, request } from "./harness.mjs";
import { fcgiRequest, fcgiConn } from "./fcgi-client.mjs";

let stack;

before(async () => {
  stack = await startStack();
});
after(async () => { await stack?.stop(); });

async function metric(sample) {
  const lines = (await request(stack, "GET", "/metrics", { key: null })).text.split("\n");
  const line = lines.find((l) => l.startsWith(sample + " "));
  return line ? Number(line.slice(sample.length + 1)) : NaN;
}

test("a responder that answered is free while the web server has yet to close", async () => {
  // Four connections whose web server keeps its side open after the
  // answer (allowHalfOpen). Their responders closed theirs: none is busy
  // waiting for the web server's close (libfcgi's linger did, 2 s).
  const conns = Array.from({ length: 4 }, () => fcgiConn(stack.fcgiAddr, { halfOpen: true }));
  try {
    const outs = await Promise.all(conns.map((c, i) =>
      c.send(fcgiRequest("GET", "/healthz", { key: null, params: { N: String(i) } }))));
    for (const out of outs) assert.match(out, /^Status: 200 /);
    // Busy: only the responder answering /metrics itself. A responder
    // marks itself free just after its answer is out, so the client can
    // read the answer a moment before: looked at again for well under
    // libfcgi's 2 s linger, which is what this tells apart.
    await until(async () => await metric('sandgate_responders{state="busy"}') === 1,
      "only the /metrics responder busy", 1200);
    // And each connection saw its end from sandgate's side.
    await until(() => conns.every((c) => c.s.readableEnded), "sandgate closed each connection", 2000);
  } finally {
    for (const c of conns) c.s.destroy();
  }
});
