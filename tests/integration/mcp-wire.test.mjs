// The MCP server on the wire, with plain fetch: every check of the
// Streamable HTTP endpoint in its order (Origin 403, key 401 with
// WWW-Authenticate, GET and other methods 405, content type 415, Accept
// 406, size 413, bad JSON, batches, JSON-RPC shapes, the version header,
// sessions required, unknown and another key's sessions 404 alike,
// notifications and responses 202), the Agents SDK's server/discover probe
// as it sends it (a 4xx, never a 5xx), version negotiation, ids echoed
// with their type, unknown methods and tools, bad tool arguments as
// isError results, oversized code, tools/call as SSE (no event ids),
// progress with a string token, a cancel that ends the stream without a
// response, and a DELETE during a run. Exact statuses and JSON-RPC codes
// are the contract of docs (issue 32's wire design).
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { startStack, KEYS } from "./harness.mjs";
import { mcpConfig, mcp, initialize, openSession, rpc, callTool, textOf, openStream, sandboxIds, LATEST } from "./mcp.mjs";

const T = (s) => ({ timeout: s * 1000 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// A key that only the no-sandbox test uses, so its sandboxes are counted alone.
const DAVE = "sk-dave-" + crypto.randomBytes(8).toString("hex");
const MAX_BODY = 3 << 20;

let stack;
before(async () => {
  stack = await startStack({ top: mcpConfig(), max_body_bytes: MAX_BODY, request_timeout: 60,
    sessions: "max_per_key = 30;", keys: `{ name = "dave"; key = "${DAVE}"; }` });
});
after(async () => { await stack?.stop(); });

// A transport-level answer: status, a JSON-RPC error with code, never a
// 5xx. Its id: id (null unless told); with echo, null or echo (a refusal
// may echo the id of a request it could read: JSON-RPC asks for that).
function assertRpcError(r, status, code, { id = null, echo, message } = {}) {
  assert.equal(r.status, status, `${r.status} ${r.text.slice(0, 400)}`);
  assert.ok(r.json, `a JSON body: ${r.text.slice(0, 200)}`);
  assert.equal(r.json.jsonrpc, "2.0", r.text.slice(0, 200));
  assert.equal(r.json.error?.code, code, r.text);
  assert.equal(typeof r.json.error.message, "string");
  if (echo === undefined) assert.deepEqual(r.json.id, id);
  else assert.ok(r.json.id === null || r.json.id === echo, `id ${JSON.stringify(r.json.id)}`);
  assert.ok(!("result" in r.json));
  if (message) assert.match(r.json.error.message, message);
}

// A JSON-RPC error inside a 200 (a request that was dispatched).
function assertDispatchError(r, id, code, message) {
  assert.equal(r.status, 200, r.text.slice(0, 400));
  assert.ok(r.response, `a response: ${r.text.slice(0, 300)}`);
  assert.deepEqual(r.response.id, id);
  assert.equal(r.response.error?.code, code, r.text.slice(0, 400));
  if (message) assert.match(r.response.error.message, message);
}

const allow = (r) => (r.headers.get("allow") ?? "").split(",").map((m) => m.trim()).sort();

describe("before a session: Origin, key, method, framing", () => {
  test("an Origin that is not the request's own host is 403 (-32000), before the key is looked at", T(30), async () => {
    for (const origin of ["http://evil.example", "null", "http://127.0.0.1:1", `http://localhost.evil.example:${stack.httpPort}`]) {
      assertRpcError(await mcp(stack, initialize(), { headers: { origin } }), 403, -32000);
      assertRpcError(await mcp(stack, initialize(), { key: null, headers: { origin } }), 403, -32000);
    }
    // Its own host is fine: a browser on the same origin.
    const own = await mcp(stack, initialize(), { headers: { origin: `http://127.0.0.1:${stack.httpPort}` } });
    assert.equal(own.status, 200, own.text);
    assert.ok(own.headers.get("mcp-session-id"));
    // No Origin at all (every non-browser client): fine.
    assert.equal((await mcp(stack, initialize())).status, 200);
  });

  test("no key is 401 with WWW-Authenticate: Bearer realm; a wrong key adds error=invalid_token; on every method", T(30), async () => {
    for (const method of ["POST", "GET", "DELETE"]) {
      const body = method === "POST" ? initialize() : undefined;
      const none = await mcp(stack, body, { method, key: null });
      assert.equal(none.status, 401, `${method}: ${none.text}`);
      const h = none.headers.get("www-authenticate") ?? "";
      assert.match(h, /^Bearer realm="sandgate"/, method);
      assert.doesNotMatch(h, /error=/, method);
      const wrong = await mcp(stack, body, { method, key: "sk-not-a-key" });
      assert.equal(wrong.status, 401, `${method}: ${wrong.text}`);
      assert.match(wrong.headers.get("www-authenticate") ?? "", /^Bearer realm="sandgate".*error="invalid_token"/, method);
      assert.doesNotMatch(wrong.text, /sk-not-a-key/, "the key is not echoed");
    }
  });

  test("GET is 405 with Allow: POST, DELETE (no server stream); PUT, PATCH and OPTIONS too", T(30), async () => {
    const s = await openSession(stack);
    for (const [method, opts] of [["GET", { accept: "text/event-stream" }], ["GET", { accept: "text/event-stream", session: s.session, version: s.version }],
      ["PUT", {}], ["PATCH", {}], ["OPTIONS", {}]]) {
      const r = await mcp(stack, method === "PUT" || method === "PATCH" ? initialize() : undefined, { method, ...opts });
      assert.equal(r.status, 405, `${method}: ${r.status} ${r.text.slice(0, 200)}`);
      assert.deepEqual(allow(r), ["DELETE", "POST"], `${method}: Allow ${r.headers.get("allow")}`);
    }
    // The session is untouched by them.
    assert.equal((await rpc(stack, s, "ping")).status, 200);
  });

  test("Content-Type not application/json is 415 (-32000); its parameters are ignored", T(30), async () => {
    for (const contentType of ["text/plain", "application/x-www-form-urlencoded", "application/jsonx", null])
      assertRpcError(await mcp(stack, JSON.stringify(initialize()), { contentType }), 415, -32000);
    const ok = await mcp(stack, initialize(), { contentType: "application/json; charset=utf-8" });
    assert.equal(ok.status, 200, ok.text);
  });

  test("Accept: neither JSON nor SSE is 406 (-32000); either one alone, or */*, is answered in that form", T(30), async () => {
    assertRpcError(await mcp(stack, initialize(), { accept: "text/html" }), 406, -32000);
    assertRpcError(await mcp(stack, initialize(), { accept: "image/png, text/plain" }), 406, -32000);
    const json = await mcp(stack, initialize(), { accept: "application/json" });
    assert.equal(json.status, 200, json.text);
    assert.match(json.type, /^application\/json/);
    assert.equal(json.json.result.protocolVersion, LATEST);
    const sse = await mcp(stack, initialize(), { accept: "text/event-stream" });
    assert.equal(sse.status, 200, sse.text);
    assert.match(sse.type, /^text\/event-stream/);
    assert.equal(sse.response?.result?.protocolVersion, LATEST, sse.text);
    assert.ok(sse.headers.get("mcp-session-id"));
    const any = await mcp(stack, initialize(), { accept: "*/*" });
    assert.equal(any.status, 200, any.text);
    assert.equal(any.response?.result?.protocolVersion, LATEST);
  });

  test("a body over server.max_body_bytes is 413 (-32600)", T(60), async () => {
    const big = JSON.stringify({ ...initialize(), pad: "x".repeat(MAX_BODY) });
    assertRpcError(await mcp(stack, big), 413, -32600);
  });

  test("not JSON is 400 (-32700); a batch, even [], is 400 (-32600)", T(30), async () => {
    for (const body of ['{"jsonrpc":"2.0","id":1,"method":', "", "\u00ff\u00fe", "{'jsonrpc': '2.0'}", "1 2"])
      assertRpcError(await mcp(stack, body), 400, -32700);
    assertRpcError(await mcp(stack, "[]"), 400, -32600);
    assertRpcError(await mcp(stack, [initialize()]), 400, -32600, { message: /batch/i });
    const s = await openSession(stack);
    assertRpcError(await mcp(stack, [{ jsonrpc: "2.0", id: 1, method: "ping" }, { jsonrpc: "2.0", id: 2, method: "ping" }],
      { session: s.session, version: s.version }), 400, -32600, { message: /batch/i });
  });

  test("not a JSON-RPC 2.0 message is 400 (-32600), its id echoed when it can be read", T(30), async () => {
    const bad = [
      [{ jsonrpc: "1.0", id: 7, method: "initialize", params: {} }, 7],
      [{ id: 7, method: "initialize", params: {} }, 7],
      [{ jsonrpc: 2, id: 7, method: "initialize", params: {} }, 7],
      [{ jsonrpc: "2.0", id: null, method: "initialize", params: {} }, null],
      [{ jsonrpc: "2.0", id: 1.5, method: "initialize", params: {} }, null],
      [{ jsonrpc: "2.0", id: {}, method: "initialize", params: {} }, null],
      [{ jsonrpc: "2.0", id: [1], method: "initialize", params: {} }, null],
      [{ jsonrpc: "2.0", id: true, method: "initialize", params: {} }, null],
      [{ jsonrpc: "2.0", id: 9, method: 5 }, 9],
      [{ jsonrpc: "2.0", id: 9, method: "initialize", params: [] }, 9],
      [{ jsonrpc: "2.0", id: 9, method: "initialize", params: "x" }, 9],
      ["hi", null],
      [42, null],
      [null, null],
      [{}, null],
    ];
    for (const [body, id] of bad) assertRpcError(await mcp(stack, JSON.stringify(body)), 400, -32600, { id });
    // The same inside a session.
    const s = await openSession(stack);
    assertRpcError(await mcp(stack, { jsonrpc: "2.0", id: 9, method: "ping", params: [] },
      { session: s.session, version: s.version }), 400, -32600, { id: 9 });
    assertRpcError(await mcp(stack, { jsonrpc: "2.0", id: "x", method: null },
      { session: s.session, version: s.version }), 400, -32600, { id: "x" });
  });
});

describe("versions and initialize", () => {
  test("initialize: 200 JSON, a session id mcp_ + 32 hex, serverInfo sandgate, tools and resources only", T(30), async () => {
    const a = await mcp(stack, initialize());
    assert.equal(a.status, 200, a.text);
    assert.match(a.type, /^application\/json/, "initialize is answered as JSON");
    assert.match(a.headers.get("mcp-session-id"), /^mcp_[0-9a-f]{32}$/);
    const { result } = a.json;
    assert.equal(a.json.id, 0);
    assert.equal(result.protocolVersion, LATEST);
    assert.equal(result.serverInfo.name, "sandgate");
    assert.equal(typeof result.serverInfo.version, "string");
    assert.equal(typeof result.capabilities.tools, "object");
    assert.equal(typeof result.capabilities.resources, "object");
    for (const c of ["logging", "prompts", "completions", "tasks"]) assert.ok(!(c in result.capabilities), `no ${c}`);
    // Each initialize is a session of its own.
    const b = await mcp(stack, initialize());
    assert.notEqual(b.headers.get("mcp-session-id"), a.headers.get("mcp-session-id"));
    // A session id presented on initialize is ignored: a new one.
    const c = await mcp(stack, initialize(), { session: a.headers.get("mcp-session-id") });
    assert.equal(c.status, 200, c.text);
    assert.match(c.headers.get("mcp-session-id"), /^mcp_[0-9a-f]{32}$/);
    assert.notEqual(c.headers.get("mcp-session-id"), a.headers.get("mcp-session-id"));
    const d = await mcp(stack, initialize(), { session: "mcp_" + "0".repeat(32) });
    assert.equal(d.status, 200, d.text);
  });

  test("negotiation: 2025-11-25 and 2025-06-18 echoed; anything else (older, newer, none) answered 2025-11-25", T(30), async () => {
    for (const [asked, got] of [["2025-11-25", "2025-11-25"], ["2025-06-18", "2025-06-18"], ["2025-03-26", LATEST],
      ["2024-11-05", LATEST], ["2026-07-28", LATEST], ["2099-01-01", LATEST], ["", LATEST], [null, LATEST]]) {
      const body = initialize(null);
      if (asked !== null) body.params.protocolVersion = asked;
      const r = await mcp(stack, body);
      assert.equal(r.status, 200, `${asked}: ${r.text}`);
      assert.equal(r.json.result.protocolVersion, got, `asked ${asked}`);
    }
  });

  test("the Agents SDK's server/discover probe, verbatim, is a 4xx with a JSON-RPC error (-32000), never a 5xx", T(30), async () => {
    const probe = '{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{"_meta":{' +
      '"io.modelcontextprotocol/protocolVersion":"2026-07-28",' +
      '"io.modelcontextprotocol/clientInfo":{"name":"sg","version":"1.0.0"},' +
      '"io.modelcontextprotocol/clientCapabilities":{}}}}';
    const r = await mcp(stack, probe, { version: "2026-07-28", headers: { "mcp-method": "server/discover" } });
    assertRpcError(r, 400, -32000);
    assert.ok(!r.headers.get("mcp-session-id"), "no session for a probe");
    // Without the header it is still no session: 400, not a 5xx.
    const bare = await mcp(stack, probe);
    assert.equal(bare.status, 400, bare.text);
    // Within a session, with a valid header: an unknown method.
    const s = await openSession(stack);
    assertDispatchError(await rpc(stack, s, "server/discover", {}, { id: 3 }), 3, -32601);
  });

  test("MCP-Protocol-Version: absent is the session's; 2025-11-25 or 2025-06-18 pass; any other value is 400 (-32000)", T(30), async () => {
    const s = await openSession(stack);
    for (const version of [undefined, "2025-11-25", "2025-06-18"]) {
      const r = await rpc(stack, s, "ping", undefined, { id: 1, version });
      assert.equal(r.status, 200, `${version}: ${r.text}`);
      assert.deepEqual(r.json, { jsonrpc: "2.0", id: 1, result: {} });
    }
    for (const version of ["2026-07-28", "2025-03-26", "2024-11-05", "garbage", "2025-11-25, 2025-06-18"])
      assertRpcError(await rpc(stack, s, "ping", undefined, { id: 1, version }), 400, -32000);
    // Also before a session (an initialize with a bad header).
    assertRpcError(await mcp(stack, initialize(), { version: "2026-07-28" }), 400, -32000);
  });
});

describe("sessions", () => {
  test("no Mcp-Session-Id on anything but initialize is 400 (-32000): requests, notifications, DELETE", T(30), async () => {
    assertRpcError(await mcp(stack, { jsonrpc: "2.0", id: 1, method: "tools/list" }), 400, -32000, { echo: 1 });
    assertRpcError(await mcp(stack, { jsonrpc: "2.0", id: 1, method: "ping" }, { version: LATEST }), 400, -32000, { echo: 1 });
    assertRpcError(await mcp(stack, { jsonrpc: "2.0", method: "notifications/initialized" }), 400, -32000);
    const del = await mcp(stack, undefined, { method: "DELETE" });
    assert.equal(del.status, 400, del.text);
  });

  test("unknown, malformed, deleted and another key's session ids: 404 (-32001), all the same answer", T(60), async () => {
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
    const unknown = await mcp(stack, ping, { session: "mcp_" + "0".repeat(32), version: LATEST });
    assertRpcError(unknown, 404, -32001, { echo: 1 });
    for (const session of ["nonsense", "mcp_" + "f".repeat(32), "mcp_" + "0".repeat(31) + "g", "x".repeat(200), "mcp_%00"]) {
      const r = await mcp(stack, ping, { session, version: LATEST });
      assert.equal(r.status, 404, `${session}: ${r.text}`);
      assert.equal(r.text, unknown.text, "the same answer");
    }
    const s = await openSession(stack);
    await rpc(stack, s, "tools/call", { name: "run_code", arguments: { code: "secret = 'alice'" } });
    // Another key: the same answer as an unknown id, on POST and DELETE.
    const bob = { ...s, key: KEYS.bob };
    const other = await rpc(stack, bob, "tools/call", { name: "run_code", arguments: { code: "secret = 'bob'" } }, { id: 1 });
    assert.equal(other.status, 404, other.text);
    assert.equal(other.text, unknown.text, "another key's session looks unknown");
    assert.equal((await rpc(stack, bob, "ping", undefined, { id: 1 })).text, unknown.text);
    const bobDel = await mcp(stack, undefined, { method: "DELETE", key: KEYS.bob, session: s.session, version: s.version });
    assert.equal(bobDel.status, 404, bobDel.text);
    // Nothing of it happened to alice's session.
    const still = await callTool(stack, s, "run_code", { code: "print(secret)" });
    assert.equal(still.response?.result?.structuredContent?.stdout, "alice\n", still.text.slice(0, 400));
    // DELETE: 200 with an empty body; then the id is unknown.
    const del = await mcp(stack, undefined, { method: "DELETE", session: s.session, version: s.version });
    assert.equal(del.status, 200, del.text);
    assert.equal(del.text, "");
    const gone = await rpc(stack, s, "ping", undefined, { id: 1 });
    assert.equal(gone.status, 404);
    assert.equal(gone.text, unknown.text);
    const again = await mcp(stack, undefined, { method: "DELETE", session: s.session, version: s.version });
    assert.equal(again.status, 404, again.text);
  });

  test("notifications and responses are 202 with an empty body", T(30), async () => {
    const s = await openSession(stack);
    const o = { session: s.session, version: s.version };
    for (const body of [
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 12345, reason: "none such" } },
      { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } },
      { jsonrpc: "2.0", method: "notifications/roots/list_changed" },
      { jsonrpc: "2.0", method: "notifications/made-up" },
      { jsonrpc: "2.0", id: 5, result: {} },
      { jsonrpc: "2.0", id: "s-1", error: { code: -32601, message: "no" } },
    ]) {
      const r = await mcp(stack, body, o);
      assert.equal(r.status, 202, `${JSON.stringify(body)}: ${r.status} ${r.text}`);
      assert.equal(r.text, "", JSON.stringify(body));
    }
    assert.equal((await rpc(stack, s, "ping")).status, 200);
  });
});

describe("methods", () => {
  let s;
  before(async () => { s = await openSession(stack); });

  test("ping answers {} with the request's id, its type kept", T(30), async () => {
    for (const id of ["123", 7, "7", 0, -1, "", 9007199254740991]) {
      const r = await rpc(stack, s, "ping", undefined, { id });
      assert.equal(r.status, 200, r.text);
      assert.match(r.type, /^application\/json/);
      assert.deepEqual(r.json, { jsonrpc: "2.0", id, result: {} }, `id ${JSON.stringify(id)}: ${r.text}`);
    }
    // The raw text keeps a string id a string.
    assert.match((await rpc(stack, s, "ping", undefined, { id: "7" })).text, /"id":\s*"7"/);
    assert.match((await rpc(stack, s, "ping", {}, { id: 7 })).text, /"id":\s*7[,}]/);
  });

  test("methods sandgate does not serve are -32601 (HTTP 200, id echoed)", T(30), async () => {
    for (const method of ["prompts/list", "prompts/get", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
      "completion/complete", "tasks/list", "sampling/createMessage", "nope", ""])
      assertDispatchError(await rpc(stack, s, method, {}, { id: "m" }), "m", -32601);
  });

  test("tools/list: six tools, JSON, no nextCursor; a cursor is -32602", T(30), async () => {
    const r = await rpc(stack, s, "tools/list", undefined, { id: 2 });
    assert.equal(r.status, 200, r.text);
    assert.match(r.type, /^application\/json/);
    assert.deepEqual(r.json.result.tools.map((t) => t.name).sort(),
      ["list_files", "read_file", "reset", "run_code", "upload_file", "write_file"]);
    assert.ok(!("nextCursor" in r.json.result));
    assertDispatchError(await rpc(stack, s, "tools/list", { cursor: "abc" }, { id: 3 }), 3, -32602);
  });

  test("tools/call: an unknown tool, no name, arguments not an object are -32602", T(30), async () => {
    assertDispatchError(await rpc(stack, s, "tools/call", { name: "rm_rf", arguments: {} }, { id: 4 }), 4, -32602, /Unknown tool/);
    assertDispatchError(await rpc(stack, s, "tools/call", { arguments: { code: "1" } }, { id: 5 }), 5, -32602);
    assertDispatchError(await rpc(stack, s, "tools/call", { name: 5, arguments: {} }, { id: 6 }), 6, -32602);
    assertDispatchError(await rpc(stack, s, "tools/call", { name: "run_code", arguments: "print(1)" }, { id: 7 }), 7, -32602);
    assertDispatchError(await rpc(stack, s, "tools/call", { name: "run_code", arguments: [] }, { id: 8 }), 8, -32602);
    assertDispatchError(await rpc(stack, s, "tools/call", undefined, { id: 9 }), 9, -32602);
  });

  test("initialize, tools/list, resources/list and read (-32002 for a missing file), protocol errors: no sandbox made", T(30), async () => {
    const d = await openSession(stack, DAVE);
    await rpc(stack, d, "tools/list");
    const list = await rpc(stack, d, "resources/list");
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.response.result.resources, []);
    await rpc(stack, d, "tools/call", { name: "nope", arguments: {} });
    const miss = await rpc(stack, d, "resources/read", { uri: "sandbox:/mnt/data/nope.txt" }, { id: 11 });
    assertDispatchError(miss, 11, -32002);
    assert.deepEqual(miss.response.error.data, { uri: "sandbox:/mnt/data/nope.txt" });
    assertDispatchError(await rpc(stack, d, "resources/read", { uri: "file:///etc/passwd" }, { id: 12 }), 12, -32602);
    assert.deepEqual(await sandboxIds(stack, DAVE), []);
    const del = await mcp(stack, undefined, { method: "DELETE", key: DAVE, session: d.session, version: d.version });
    assert.equal(del.status, 200, del.text);
  });
});

describe("tools/call", () => {
  let s;
  before(async () => { s = await openSession(stack); });

  test("bad arguments are isError results with a message the model can act on, never a crash", T(120), async () => {
    const bad = [
      ["run_code", { code: 42 }, /Invalid arguments/],
      ["run_code", {}, /Invalid arguments/],
      ["run_code", { code: null }, /Invalid arguments/],
      ["run_code", { code: "print(1)", extra: 1 }, /Invalid arguments/],
      ["run_code", { code: "print(1)\u0000" }, /Invalid arguments/],
      ["write_file", { path: "a.txt" }, /Invalid arguments/],
      ["write_file", { path: "a.txt", content: "x", encoding: "latin1" }, /Invalid arguments/],
      ["write_file", { path: "a.txt", content: 5 }, /Invalid arguments/],
      ["write_file", { path: "../x", content: "x" }],
      ["write_file", { path: "/etc/x", content: "x" }],
      ["write_file", { path: "/mnt/data/../../tmp/x", content: "x" }],
      ["write_file", { path: "a\u0000b", content: "x" }],
      ["read_file", { path: 5 }, /Invalid arguments/],
      ["read_file", { path: "/etc/passwd" }],
      ["read_file", { path: "/mnt/data/../../etc/passwd" }],
      ["read_file", { path: "../../etc/passwd" }],
      ["read_file", { path: "never-written.txt" }],
      ["list_files", { path: "/etc" }],
      ["list_files", { path: 1 }, /Invalid arguments/],
      ["upload_file", {}, /Invalid arguments/],
      ["upload_file", { file_id: "file-doesnotexist" }, /No such file/],
      ["upload_file", { file_id: 12 }, /Invalid arguments/],
      ["reset", { hard: true }, /Invalid arguments/],
    ];
    for (const [name, args, message] of bad) {
      const r = await callTool(stack, s, name, args);
      const what = `${name} ${JSON.stringify(args)}`;
      assert.equal(r.status, 200, `${what}: ${r.text.slice(0, 300)}`);
      const res = r.response?.result;
      assert.ok(res, `${what}: a result, not a JSON-RPC error: ${r.text.slice(0, 300)}`);
      assert.equal(res.isError, true, `${what}: ${r.text.slice(0, 300)}`);
      assert.ok(textOf(res).length > 0, `${what}: a text part`);
      if (message) assert.match(textOf(res), message, what);
      assert.doesNotMatch(JSON.stringify(res), /root:x:0:0/, `${what}: nothing of the host's files`);
    }
    // The session lives on.
    const ok = await callTool(stack, s, "run_code", { code: "print('fine')" });
    assert.equal(ok.response?.result?.structuredContent?.stdout, "fine\n", ok.text.slice(0, 300));
  });

  test("oversized code (under max_body_bytes) is isError 'too large'; big content a file or 'too large'; the session lives on", T(120), async () => {
    const big = "#" + "x".repeat(2 << 20) + "\nprint('ran')";
    const r = await callTool(stack, s, "run_code", { code: big });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.equal(r.response?.result?.isError, true, r.text.slice(0, 300));
    assert.match(textOf(r.response.result), /too large/i);
    // content has a cap of its own, or is a file as big as the body allows.
    const w = await callTool(stack, s, "write_file", { path: "big.txt", content: "y".repeat(2 << 20) });
    assert.equal(w.status, 200, w.text.slice(0, 300));
    const wr = w.response?.result;
    if (wr?.isError) assert.match(textOf(wr), /too large/i);
    else assert.equal(wr?.structuredContent?.size, 2 << 20, w.text.slice(0, 300));
    const ok = await callTool(stack, s, "run_code", { code: "print(1 + 1)" });
    assert.equal(ok.response?.result?.structuredContent?.stdout, "2\n", ok.text.slice(0, 300));
  });

  test("answered as SSE when accepted (event: message, no id: fields, the response last), JSON when only JSON is", T(60), async () => {
    const r = await callTool(stack, s, "run_code", { code: "print('sse')" }, { id: 21 });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.match(r.type, /^text\/event-stream/);
    assert.match(r.headers.get("cache-control") ?? "", /no-cache/);
    assert.doesNotMatch(r.text, /^id:/m, "no event ids (no resumability)");
    const blocks = r.text.split(/\r?\n\r?\n/).filter((b) => /^data:/m.test(b));
    assert.ok(blocks.length >= 1);
    for (const b of blocks) assert.match(b, /^event: message$/m);
    assert.equal(r.messages.at(-1), r.response, "the response is the last message");
    assert.equal(r.response.id, 21);
    assert.equal(r.response.result.structuredContent.stdout, "sse\n");
    const j = await callTool(stack, s, "run_code", { code: "print('json')" }, { id: 22, accept: "application/json" });
    assert.equal(j.status, 200, j.text.slice(0, 300));
    assert.match(j.type, /^application\/json/);
    assert.equal(j.json.id, 22);
    assert.equal(j.json.result.structuredContent.stdout, "json\n");
  });

  test("progress: a string token echoed verbatim, progress increasing, output as it comes, all before the response", T(90), async () => {
    const code = "import time\nfor i in range(3):\n    print('line', i, flush=True)\n    time.sleep(1)\nprint('end')";
    const started = Date.now();
    const st = await openStream(stack, { jsonrpc: "2.0", id: 31, method: "tools/call",
      params: { name: "run_code", arguments: { code }, _meta: { progressToken: "tok-α" } } },
    { session: s.session, version: s.version, ms: 60000 });
    assert.equal(st.status, 200);
    await st.done;
    assert.equal(st.ended, "end");
    const msgs = st.messages.map((m) => m.msg);
    const last = msgs.at(-1);
    assert.equal(last.id, 31, st.raw.slice(0, 500));
    assert.equal(last.result.structuredContent.stdout, "line 0\nline 1\nline 2\nend\n");
    const prog = st.messages.filter((m) => m.msg.method === "notifications/progress");
    assert.equal(prog.length, msgs.length - 1, "nothing but progress before the response");
    assert.ok(prog.length >= 2, `at least 2 progress notifications: ${st.raw.slice(0, 800)}`);
    let prev = -Infinity;
    for (const p of prog) {
      assert.equal(p.msg.params.progressToken, "tok-α");
      assert.equal(typeof p.msg.params.progress, "number");
      assert.ok(p.msg.params.progress > prev, "progress increases");
      prev = p.msg.params.progress;
      assert.ok(!("total" in p.msg.params) || typeof p.msg.params.total === "number", "no null total");
      assert.ok(!("message" in p.msg.params) || typeof p.msg.params.message === "string", "no null message");
    }
    const said = prog.map((p) => p.msg.params.message ?? "").join("");
    assert.match(said, /line 0/);
    assert.match(said, /line 1/);
    // Streamed, not buffered: the first came a second or more before the answer.
    const answered = st.messages.at(-1).at;
    assert.ok(answered - prog[0].at >= 1000, `first progress ${prog[0].at - started} ms, answer ${answered - started} ms`);
    // No token, no notifications.
    const quiet = await callTool(stack, s, "run_code", { code: "import time\nprint(1, flush=True)\ntime.sleep(1.2)\nprint(2)" });
    assert.deepEqual(quiet.messages.filter((m) => m.method === "notifications/progress"), []);
    assert.equal(quiet.response.result.structuredContent.stdout, "1\n2\n");
  });

  test("notifications/cancelled (202) stops the run; its stream ends without a response; the next call runs at once", T(90), async () => {
    const st = await openStream(stack, { jsonrpc: "2.0", id: 41, method: "tools/call", params: { name: "run_code",
      arguments: { code: "import time\ntime.sleep(30)\nopen('/mnt/data/late', 'w').write('x')" } } },
    { session: s.session, version: s.version, ms: 45000 });
    assert.equal(st.status, 200);
    await sleep(1500);
    const c = await mcp(stack, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 41, reason: "test" } },
      { session: s.session, version: s.version });
    assert.equal(c.status, 202, c.text);
    assert.equal(c.text, "");
    const t0 = Date.now();
    await st.done;
    assert.equal(st.ended, "end", "the stream ended by itself");
    assert.ok(Date.now() - t0 < 10000, `the stream ended ${Date.now() - t0} ms after the cancel`);
    assert.ok(!st.messages.some((m) => m.msg.id === 41), `no response after a cancel: ${st.raw.slice(0, 300)}`);
    const t1 = Date.now();
    const next = await callTool(stack, s, "run_code", { code: "import os\nprint(os.path.exists('/mnt/data/late'))" });
    assert.ok(Date.now() - t1 < 5000, `the next run waited ${Date.now() - t1} ms`);
    assert.equal(next.response?.result?.structuredContent?.stdout, "False\n", next.text.slice(0, 300));
  });

  test("DELETE during a run: 200, the run stops, its stream ends with -32001, the sandbox is gone", T(90), async () => {
    const d = await openSession(stack, KEYS.carol);
    const had = await sandboxIds(stack, KEYS.carol);
    await callTool(stack, d, "run_code", { code: "x = 1" });
    const mine = (await sandboxIds(stack, KEYS.carol)).filter((id) => !had.includes(id));
    assert.equal(mine.length, 1, "the session's sandbox");
    const st = await openStream(stack, { jsonrpc: "2.0", id: 51, method: "tools/call", params: { name: "run_code",
      arguments: { code: "import time\ntime.sleep(30)" } } }, { key: KEYS.carol, session: d.session, version: d.version, ms: 45000 });
    await sleep(1500);
    const del = await mcp(stack, undefined, { method: "DELETE", key: KEYS.carol, session: d.session, version: d.version });
    assert.equal(del.status, 200, del.text);
    const t0 = Date.now();
    await st.done;
    assert.equal(st.ended, "end");
    assert.ok(Date.now() - t0 < 10000, `the stream ended ${Date.now() - t0} ms after the DELETE`);
    const last = st.messages.at(-1)?.msg;
    assert.equal(last?.id, 51, st.raw.slice(0, 300));
    assert.equal(last.error?.code, -32001, st.raw.slice(0, 300));
    assert.ok(!(await sandboxIds(stack, KEYS.carol)).includes(mine[0]), "the session's sandbox was deleted");
  });
});
