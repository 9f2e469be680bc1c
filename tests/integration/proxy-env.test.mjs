// The operator's proxy variables reach every call sandgate makes: it tells
// libcurl there is no proxy only when the environment names none (libcurl
// would otherwise read five variables again on each transfer). With
// http_proxy set, the upstream and the sandbox provider are reached through
// the proxy; with no_proxy naming the host, directly.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { startStack } from "./harness.mjs";

// A forward proxy for plain http: each request in absolute form, recorded,
// then sent on to where it names.
function startProxy() {
  const seen = [];
  const server = http.createServer((req, res) => {
    seen.push(req.url);
    const u = new URL(req.url);
    const up = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search,
      method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on("error", () => { res.writeHead(502); res.end(); });
    req.pipe(up);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({
    seen, url: `http://127.0.0.1:${server.address().port}`,
    close: () => { server.closeAllConnections(); return new Promise((r) => server.close(r)); },
  })));
}

const stacks = [], proxies = [];
after(async () => {
  for (const s of stacks) await s.stop();
  for (const p of proxies) await p.close();
});

async function gatewayBehind(env) {
  const proxy = await startProxy();
  proxies.push(proxy);
  const stack = await startStack({ sandboxes: true, interceptionTool: "e2b",
    env: { ...env(proxy.url) } });
  stacks.push(stack);
  return { proxy, stack };
}

const chat = { model: "gpt-test", messages: [{ role: "user", content: "hi" }] };

test("http_proxy set: the upstream and the sandbox provider are reached through it", async () => {
  const { proxy, stack } = await gatewayBehind((url) => ({ http_proxy: url }));
  const r = await stack.call("POST", "/v1/chat/completions", chat);
  assert.equal(r.status, 200, r.text);
  assert.ok(proxy.seen.some((u) => u.includes(`:${stack.fakePort}/`) && u.endsWith("/chat/completions")),
    JSON.stringify(proxy.seen));
  const code = await stack.call("POST", "/v1/code", { tool: "e2b", code: "print(1)" });
  assert.equal(code.status, 200, code.text);
  assert.ok(proxy.seen.some((u) => u.includes(`:${stack.e2bPort}/`)), JSON.stringify(proxy.seen));
});

test("no_proxy naming the host: reached directly though http_proxy is set", async () => {
  const { proxy, stack } = await gatewayBehind((url) => ({ http_proxy: url, no_proxy: "127.0.0.1" }));
  const r = await stack.call("POST", "/v1/chat/completions", chat);
  assert.equal(r.status, 200, r.text);
  const code = await stack.call("POST", "/v1/code", { tool: "e2b", code: "print(1)" });
  assert.equal(code.status, 200, code.text);
  assert.deepEqual(proxy.seen, []);
});
