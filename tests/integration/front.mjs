// What the deployment tests (deploy-*.test.mjs) share: a web server in
// front of sandgate is checked the same way whichever it is.
import assert from "node:assert/strict";
import http from "node:http";
import OpenAI from "openai";
import { KEYS, sseEvents } from "./harness.mjs";

// text with from replaced by to; a sample that lost what a test
// substitutes fails loudly rather than being tested unchanged.
export function sub(text, from, to, what, sample) {
  assert.ok(from.test(text), `${sample} has no ${what} (${from}) to substitute`);
  return text.replace(from, to);
}

// One request through the front, bounded in time: {status, json, text}.
export async function call(base, method, p, { key = KEYS.alice, body, raw } = {}) {
  const headers = key ? { authorization: `Bearer ${key}` } : {};
  if (body !== undefined || raw !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(base + p, {
    method, headers, body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
    signal: AbortSignal.timeout(30000),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, json, text, headers: r.headers };
}

export const client = (base, key = KEYS.alice) =>
  new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0, timeout: 30000 });

// A chat body of exactly n bytes.
export const EMPTY_BODY = JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "" }] });
export function bodyOf(n) {
  const s = JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "x".repeat(n - EMPTY_BODY.length) }] });
  assert.equal(Buffer.byteLength(s), n);
  return s;
}

// A slowstream chat stream through base: its first delta must come long
// before its end (nothing buffers on the way).
export async function assertStreamsUnbuffered(base, t) {
  const t0 = Date.now();
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: "POST", signal: AbortSignal.timeout(30000),
    headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "slowstream", stream: true, messages: [{ role: "user", content: "one two three four five six seven" }] }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type"), /text\/event-stream/);
  const dec = new TextDecoder();
  let text = "", firstDelta = null;
  for await (const chunk of r.body) {
    text += dec.decode(chunk, { stream: true });
    if (firstDelta === null && sseEvents(text).some((e) => e.data.startsWith("{") && JSON.parse(e.data).choices?.[0]?.delta?.content))
      firstDelta = Date.now();
  }
  const end = Date.now();
  t.diagnostic(`first delta at +${firstDelta - t0} ms, end at +${end - t0} ms`);
  const events = sseEvents(text);
  assert.equal(events.at(-1).data, "[DONE]");
  const content = events.filter((e) => e.data.startsWith("{")).map((e) => JSON.parse(e.data).choices?.[0]?.delta?.content ?? "").join("");
  assert.match(content, /one two three four five six seven/);
  assert.ok(firstDelta !== null, "a content delta");
  assert.ok(end - t0 > 2000, `the upstream streams for seconds (took ${end - t0} ms)`);
  assert.ok(firstDelta < end - 1000, `first delta at +${firstDelta - t0} ms, end at +${end - t0} ms: nothing buffered`);
}

// A background response streamed through base, dropped after its first
// events and resumed (GET ?stream=true&starting_after): the rest comes
// whole, sequence numbers unbroken, and live: its first events (the code
// call's) long before its end (the code runs 3 s), nothing buffered on
// the way.
export async function assertResumesUnbuffered(base, t, prefix = "") {
  const headers = { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" };
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 30000);
  const r = await fetch(`${base}${prefix}/v1/responses`, {
    method: "POST", headers, signal: stop.signal,
    body: JSON.stringify({ model: "ci-turn", input: JSON.stringify({ code: "import time; time.sleep(3); print(7)" }),
      tools: [{ type: "code_interpreter", container: { type: "auto" } }], stream: true, background: true }),
  });
  assert.equal(r.status, 200);
  const dec = new TextDecoder();
  let text = "", seen = [];
  for await (const chunk of r.body) {
    text += dec.decode(chunk, { stream: true });
    seen = sseEvents(text).filter((e) => e.data.startsWith("{")).map((e) => JSON.parse(e.data));
    if (seen.some((e) => e.type === "response.in_progress")) break;
  }
  stop.abort();
  clearTimeout(timer);
  // Resumed after in_progress, whatever else the dropped read held: the
  // code call's first events are kept by then, its end 3 s later.
  const id = seen[0].response.id;
  const last = seen.find((e) => e.type === "response.in_progress").sequence_number;
  const t0 = Date.now();
  const g = await fetch(`${base}${prefix}/v1/responses/${id}?stream=true&starting_after=${last}`,
    { headers, signal: AbortSignal.timeout(30000) });
  assert.equal(g.status, 200);
  assert.match(g.headers.get("content-type"), /text\/event-stream/);
  let rest = "", first = null;
  for await (const chunk of g.body) {
    rest += dec.decode(chunk, { stream: true });
    if (first === null && sseEvents(rest).some((e) => e.data.startsWith("{"))) first = Date.now();
  }
  const end = Date.now();
  t.diagnostic(`resumed: first event at +${first - t0} ms, end at +${end - t0} ms`);
  const events = sseEvents(rest).filter((e) => e.data.startsWith("{")).map((e) => JSON.parse(e.data));
  events.forEach((e, i) => assert.equal(e.sequence_number, last + 1 + i, "unbroken"));
  assert.equal(events.at(-1).type, "response.completed");
  assert.match(events.at(-1).response.output_text ?? JSON.stringify(events.at(-1).response.output), /7/);
  assert.ok(end - t0 > 1500, `the code runs for seconds (took ${end - t0} ms)`);
  assert.ok(first !== null && first < end - 1000, `first at +${first - t0} ms, end at +${end - t0} ms: nothing buffered`);
}

// The MCP endpoint through base (+ prefix): a session made, a run whose
// progress reaches the client long before its result (nothing buffered
// on the way, the SSE stream's too), GET refused by sandgate (405, not
// by the web server), DELETE reaching it and ending the session.
export async function assertMcp(base, t, prefix = "") {
  const url = `${base}${prefix}/mcp`;
  const headers = { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json",
    accept: "application/json, text/event-stream" };
  const init = await fetch(url, { method: "POST", headers, signal: AbortSignal.timeout(30000),
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "deploy", version: "1" } } }) });
  assert.equal(init.status, 200, await init.clone().text());
  assert.equal((await init.json()).result.serverInfo.name, "sandgate");
  const session = { ...headers, "mcp-session-id": init.headers.get("mcp-session-id"), "mcp-protocol-version": "2025-11-25" };
  const t0 = Date.now();
  const r = await fetch(url, { method: "POST", headers: session, signal: AbortSignal.timeout(60000),
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "run_code",
      arguments: { code: "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(1)" },
      _meta: { progressToken: "p1" } } }) });
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type"), /text\/event-stream/);
  const dec = new TextDecoder();
  let text = "", first = null;
  for await (const chunk of r.body) {
    text += dec.decode(chunk, { stream: true });
    if (first === null && text.includes("notifications/progress")) first = Date.now();
  }
  const end = Date.now();
  t.diagnostic(`mcp: first progress at +${first - t0} ms, result at +${end - t0} ms`);
  const msgs = sseEvents(text).map((e) => JSON.parse(e.data));
  assert.equal(msgs.at(-1).id, 1);
  assert.match(msgs.at(-1).result.content[0].text, /tick 2/);
  assert.ok(first !== null && first < end - 1000, `progress at +${first - t0} ms, result at +${end - t0} ms: nothing buffered`);
  const get = await fetch(url, { headers: { ...session, accept: "text/event-stream" }, signal: AbortSignal.timeout(30000) });
  assert.equal(get.status, 405);
  assert.equal(get.headers.get("allow"), "POST, DELETE");
  await get.arrayBuffer();
  const del = await fetch(url, { method: "DELETE", headers: session, signal: AbortSignal.timeout(30000) });
  assert.equal(del.status, 200);
  const after = await fetch(url, { method: "POST", headers: session, signal: AbortSignal.timeout(30000),
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }) });
  assert.equal(after.status, 404);
  await after.arrayBuffer();
}

// The code interpreter on the fake's ci-primes model through base: one
// code_interpreter_call, then the answer.
export async function assertIntercepts(base) {
  const r = await client(base).responses.create({ model: "ci-primes", input: "Multiply the first six primes.",
    tools: [{ type: "code_interpreter", container: { type: "auto" } }] });
  assert.equal(r.status, "completed");
  assert.match(r.output_text, /30030/);
  const ci = r.output.find((o) => o.type === "code_interpreter_call");
  assert.ok(ci, "a code_interpreter_call item");
  assert.equal(ci.status, "completed");
  assert.equal(ci.code, "print(2*3*5*7*11*13)");
  assert.deepEqual(r.output.map((o) => o.type), ["code_interpreter_call", "message"]);
}

// Under a mount prefix: /healthz, a chat and a code interpreter request
// answer through base + prefix (the caller checks what lies outside it).
export async function assertPrefixed(base, prefix) {
  assert.equal((await call(base, "GET", `${prefix}/healthz`, { key: null })).status, 200);
  const c = new OpenAI({ apiKey: KEYS.carol, baseURL: `${base}${prefix}/v1`, maxRetries: 0, timeout: 30000 });
  const r = await c.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "prefixed" }] });
  assert.equal(r.choices[0].message.content, "echo: prefixed");
  const resp = await c.responses.create({ model: "ci-primes", input: "primes",
    tools: [{ type: "code_interpreter", container: { type: "auto" } }] });
  assert.ok(resp.output.some((o) => o.type === "code_interpreter_call"));
}

// The admin key the deployment tests give their prefixed gateways, so
// that the console is served (auth.admin_keys); for the stack's extra.auth.
export const CONSOLE_ADMIN = "sk-admin-deploy-console";
export const CONSOLE_AUTH = `admin_keys = ( { name = "ops"; key = "${CONSOLE_ADMIN}"; } );`;

// The console through the front under prefix: the sample's location sends
// console.path to sandgate, the page names the prefix, its modules load
// by relative URLs under it, and the admin API answers its key there.
export async function assertConsole(base, prefix) {
  const redirect = await fetch(`${base}${prefix}/console`, { redirect: "manual", signal: AbortSignal.timeout(15000) });
  assert.equal(redirect.status, 302);
  assert.equal(redirect.headers.get("location"), `${prefix}/console/`);
  await redirect.arrayBuffer();
  const page = await fetch(`${base}${prefix}/console/`, { signal: AbortSignal.timeout(15000) });
  const html = await page.text();
  assert.equal(page.status, 200, html.slice(0, 300));
  assert.match(page.headers.get("content-security-policy") ?? "", /connect-src 'self'/);
  assert.ok(html.includes(`<meta name="sandgate-base" content="${prefix}">`), "the page names the prefix");
  const srcs = [...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((m) => m[1]);
  assert.ok(srcs.length > 0, "the page loads its modules");
  for (const src of srcs) {
    assert.ok(!/^(\/|https?:)/.test(src), `${src} is relative`);
    const js = await fetch(new URL(src, `${base}${prefix}/console/`), { signal: AbortSignal.timeout(15000) });
    assert.equal(js.status, 200, src);
    assert.equal(js.headers.get("content-type"), "text/javascript; charset=utf-8", src);
    await js.arrayBuffer();
  }
  const o = await call(base, "GET", `${prefix}/v1/organization/overview`, { key: CONSOLE_ADMIN });
  assert.equal(o.status, 200, o.text.slice(0, 300));
  assert.equal(o.json.object, "organization.overview");
}

// An upload of n bytes through base passes the front (its size is
// files.max_bytes' business, not max_body_bytes'), and is deleted again.
export async function assertUploads(base, n) {
  const form = new FormData();
  form.append("purpose", "user_data");
  form.append("file", new Blob([Buffer.alloc(n, 0x61)]), "big.txt");
  const r = await fetch(`${base}/v1/files`, { method: "POST", body: form,
    headers: { authorization: `Bearer ${KEYS.alice}` }, signal: AbortSignal.timeout(120000) });
  const text = await r.text();
  assert.equal(r.status, 200, `an upload of ${n} bytes: ${text.slice(0, 300)}`);
  const file = JSON.parse(text);
  assert.equal(file.bytes, n);
  assert.equal((await call(base, "DELETE", `/v1/files/${file.id}`)).status, 200);
}

// GET base+p from the local address from: {status, text}. Another
// loopback address than 127.0.0.1 plays a host that is not the scraper.
export function getFrom(base, p, from) {
  const u = new URL(base + p);
  return new Promise((resolve, reject) => {
    const req = http.get({ host: u.hostname, port: u.port, path: u.pathname, localAddress: from, timeout: 30000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => { text += d; });
      res.on("end", () => resolve({ status: res.statusCode, text }));
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${p} from ${from}: timed out`)));
    req.on("error", reject);
  });
}

// /metrics (no key) answers the scraper's address (127.0.0.1 in the
// samples) and refuses any other; the key routes stay open to all.
export async function assertMetricsOnlyForScraper(base, prefix = "") {
  const ok = await getFrom(base, `${prefix}/metrics`, "127.0.0.1");
  assert.equal(ok.status, 200, ok.text.slice(0, 300));
  assert.match(ok.text, /^sandgate_/m);
  const other = await getFrom(base, `${prefix}/metrics`, "127.0.0.2");
  assert.equal(other.status, 403, `/metrics from another address: ${other.text.slice(0, 300)}`);
  assert.doesNotMatch(other.text, /sandgate_/);
  assert.equal((await getFrom(base, `${prefix}/healthz`, "127.0.0.2")).status, 200);
  assert.equal((await getFrom(base, `${prefix}/v1/models`, "127.0.0.2")).status, 401, "sandgate itself answers the rest");
}
