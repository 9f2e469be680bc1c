// sandgate as an MCP server, driven by real clients over Streamable HTTP
// on the local sandbox: the official TypeScript SDK client
// (@modelcontextprotocol/client 2.4.0: Client + StreamableHTTPClientTransport)
// through every tool (run_code with state across calls, a matplotlib plot
// as an image part, text and binary files both ways, list_files, an
// upload from /v1/files, reset), resources (list, read text and blob,
// templates), progress, cancel, two sessions apart, another key refused,
// idle expiry and the reaper, terminateSession deleting the sandbox; and
// the OpenAI Agents SDK (@openai/agents 0.20.0, MCPServerStreamableHttp)
// with a scripted model that calls run_code then read_file and answers:
// what the model was given, its server/discover probe answered with a 4xx
// (never a 5xx), and close() ending the session and its sandbox.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Agent, run, MCPServerStreamableHttp, Usage, setTracingDisabled } from "@openai/agents";
import { startStack, KEYS, reapNow, waitFor } from "./harness.mjs";
import { mcpConfig, mcp, LATEST, sandboxIds } from "./mcp.mjs";

const T = (s) => ({ timeout: s * 1000 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const PNG_MAGIC = "89504e470d0a1a0a";
const TOOLS = ["list_files", "read_file", "reset", "run_code", "upload_file", "write_file"];
// Keys of their own, so that a test counts only its own sandboxes.
const key = (name) => "sk-" + name + "-" + crypto.randomBytes(8).toString("hex");
const DAVE = key("dave"), EVE = key("eve"), FRANK = key("frank");
const extraKeys = [["dave", DAVE], ["eve", EVE], ["frank", FRANK]].map(([n, k]) => `{ name = "${n}"; key = "${k}"; }`).join(", ");

setTracingDisabled(true);

// A fetch for a client that records each exchange in http: { method, rpc
// (the JSON-RPC method posted), status }.
const recording = (http) => async (url, init = {}) => {
  const r = await fetch(url, init);
  let rpc = null;
  try { rpc = JSON.parse(init.body).method ?? "(response)"; } catch { /* no body */ }
  http.push({ method: init.method ?? "GET", rpc, status: r.status });
  return r;
};

// An SDK client connected to stack as key, its tools listed (which turns
// on the client's check of structuredContent against outputSchema), its
// HTTP exchanges in http.
async function connect(stack, k = KEYS.alice) {
  const http = [];
  const transport = new StreamableHTTPClientTransport(new URL(stack.url("/mcp")),
    { requestInit: { headers: { Authorization: `Bearer ${k}` } }, fetch: recording(http) });
  const client = new Client({ name: "sandgate-test", version: "1.0.0" });
  await client.connect(transport, { timeout: 15000 });
  const { tools } = await client.listTools(undefined, { timeout: 15000 });
  return { client, transport, tools, http, key: k };
}

const call = (c, name, args, opts = {}) => c.client.callTool({ name, arguments: args }, { timeout: 60000, ...opts });
const textOf = (r) => r.content.filter((p) => p.type === "text").map((p) => p.text).join("");

// run_code's answer, which must have run: its structuredContent.
async function runOk(c, code) {
  const r = await call(c, "run_code", { code });
  assert.notEqual(r.isError, true, textOf(r));
  return r;
}

async function upload(stack, k, name, bytes) {
  const form = new FormData();
  form.append("purpose", "user_data");
  form.append("file", new Blob([bytes]), name);
  const r = await fetch(stack.url("/v1/files"), { method: "POST", body: form, headers: { authorization: `Bearer ${k}` },
    signal: AbortSignal.timeout(15000) });
  const j = await r.json();
  assert.equal(r.status, 200, JSON.stringify(j));
  return j.id;
}

// What a request with session id of key is answered, raw.
const rawPing = (stack, k, session) => mcp(stack, { jsonrpc: "2.0", id: 1, method: "ping" }, { key: k, session, version: LATEST });

describe("the official SDK client", () => {
  let stack;
  before(async () => {
    stack = await startStack({ top: mcpConfig(), request_timeout: 60, sessions: "max_per_key = 30;", keys: extraKeys });
  });
  after(async () => { await stack?.stop(); });

  test("connect: a session mcp_…, 2025-11-25, serverInfo sandgate; six tools with object schemas and annotations; no sandbox yet", T(60), async () => {
    const c = await connect(stack, DAVE);
    assert.match(c.transport.sessionId, /^mcp_[0-9a-f]{32}$/);
    assert.equal(c.client.getNegotiatedProtocolVersion(), LATEST);
    assert.equal(c.client.getServerVersion().name, "sandgate");
    const caps = c.client.getServerCapabilities();
    assert.ok(caps.tools && caps.resources, JSON.stringify(caps));
    assert.ok(!caps.logging && !caps.prompts, "only what is served is advertised");
    assert.equal(typeof c.client.getInstructions(), "string");
    assert.deepEqual(c.tools.map((t) => t.name).sort(), TOOLS);
    const byName = Object.fromEntries(c.tools.map((t) => [t.name, t]));
    for (const t of c.tools) {
      assert.equal(t.inputSchema.type, "object", t.name);
      assert.equal(t.inputSchema.additionalProperties, false, t.name);
      assert.equal(typeof t.description, "string", t.name);
      assert.equal(typeof t.annotations, "object", `${t.name}: annotations`);
    }
    assert.deepEqual(byName.run_code.inputSchema.required, ["code"]);
    assert.equal(byName.run_code.inputSchema.properties.code.type, "string");
    assert.deepEqual([...byName.write_file.inputSchema.required].sort(), ["content", "path"]);
    assert.deepEqual([...byName.write_file.inputSchema.properties.encoding.enum].sort(), ["base64", "utf-8"]);
    assert.deepEqual(byName.read_file.inputSchema.required, ["path"]);
    assert.deepEqual(byName.upload_file.inputSchema.required, ["file_id"]);
    assert.ok(!byName.list_files.inputSchema.required?.length, "list_files' path is optional");
    assert.ok(!byName.reset.inputSchema.required?.length);
    assert.equal(byName.read_file.annotations.readOnlyHint, true);
    assert.equal(byName.list_files.annotations.readOnlyHint, true);
    assert.equal(byName.run_code.annotations.readOnlyHint, false);
    assert.equal(byName.run_code.annotations.destructiveHint, true);
    assert.deepEqual([...byName.run_code.outputSchema.required].sort(), ["error", "execution_count", "results", "stderr", "stdout"]);
    // The client's GET for a server stream was told 405; nothing was a 5xx.
    // (The client sends that GET on its own, after notifications/initialized.)
    await waitFor(() => c.http.some((h) => h.method === "GET"), "the client's GET", 5000);
    assert.ok(c.http.some((h) => h.method === "GET" && h.status === 405), JSON.stringify(c.http));
    assert.ok(c.http.every((h) => h.status < 500), JSON.stringify(c.http));
    assert.deepEqual(await sandboxIds(stack, DAVE), [], "initialize and tools/list make no sandbox");
    await c.transport.terminateSession();
    await c.client.close();
  });

  test("run_code: state across calls, one sandbox made at the first call; an exception is a result, not isError", T(120), async () => {
    const c = await connect(stack, EVE);
    try {
      const first = await runOk(c, "x = 41");
      assert.equal(first.structuredContent.stdout, "");
      assert.equal((await sandboxIds(stack, EVE)).length, 1, "the session's sandbox");
      const r = await runOk(c, "import sys\nprint(x + 1)\nprint('warn', file=sys.stderr)");
      assert.match(textOf(r), /42/);
      const sc = r.structuredContent;
      assert.equal(sc.stdout, "42\n");
      assert.equal(sc.stderr, "warn\n");
      assert.equal(sc.error, null);
      assert.ok(Number.isInteger(sc.execution_count), JSON.stringify(sc));
      assert.ok(Array.isArray(sc.results));
      const v = await runOk(c, "x * 2");
      assert.match(textOf(v), /82/);
      assert.ok(v.structuredContent.results.some((res) => res.text === "82"), JSON.stringify(v.structuredContent));
      const e = await call(c, "run_code", { code: "print('before')\n1/0" });
      assert.equal(e.isError ?? false, false, "code that raised is still a result");
      assert.equal(e.structuredContent.error.name, "ZeroDivisionError");
      assert.equal(e.structuredContent.stdout, "before\n");
      assert.match(textOf(e), /ZeroDivisionError/);
      assert.equal((await sandboxIds(stack, EVE)).length, 1, "every call ran in the one sandbox");
    } finally {
      await c.transport.terminateSession();
      await c.client.close();
    }
  });

  test("a matplotlib plot is an image part (image/png, PNG bytes); its bytes are not repeated in structuredContent", T(120), async () => {
    const c = await connect(stack);
    try {
      const r = await runOk(c, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('t')\nplt.show()\nprint('drawn')");
      const images = r.content.filter((p) => p.type === "image");
      assert.equal(images.length, 1, JSON.stringify(r.content.map((p) => p.type)));
      assert.equal(images[0].mimeType, "image/png");
      const png = Buffer.from(images[0].data, "base64");
      assert.equal(png.subarray(0, 8).toString("hex"), PNG_MAGIC);
      assert.ok(png.length > 1000, "a real plot");
      assert.deepEqual([...new Set(r.content.map((p) => p.type))].sort(), ["image", "text"], "text and image parts only");
      assert.match(textOf(r), /drawn/);
      const res = r.structuredContent.results;
      assert.ok(res.some((x) => x.formats?.includes("png")), JSON.stringify(res));
      assert.doesNotMatch(JSON.stringify(r.structuredContent), /iVBORw0KGgo/, "no base64 image in structuredContent");
    } finally {
      await c.transport.terminateSession();
      await c.client.close();
    }
  });

  test("write_file, read_file, list_files: text and binary round trips, seen by run_code too; paths relative or under /mnt/data", T(120), async () => {
    const c = await connect(stack);
    try {
      const text = "héllo\nwörld ✓\n";
      const w = await call(c, "write_file", { path: "notes.txt", content: text });
      assert.notEqual(w.isError, true, textOf(w));
      assert.match(textOf(w), /\/mnt\/data\/notes\.txt/);
      assert.deepEqual(w.structuredContent, { path: "/mnt/data/notes.txt", size: Buffer.byteLength(text) });
      const r = await call(c, "read_file", { path: "/mnt/data/notes.txt" });
      assert.notEqual(r.isError, true, textOf(r));
      assert.equal(r.content.length, 1);
      assert.equal(r.content[0].type, "text");
      assert.equal(r.content[0].text, text);
      assert.equal(r.structuredContent.path, "/mnt/data/notes.txt");
      assert.equal(r.structuredContent.size, Buffer.byteLength(text));
      assert.equal(r.structuredContent.encoding, "utf-8");
      assert.equal((await runOk(c, "print(open('/mnt/data/notes.txt', encoding='utf-8').read(), end='')")).structuredContent.stdout, text);
      // Binary: NUL bytes, bytes that are not UTF-8, every byte value.
      const bin = Buffer.concat([Buffer.from([0, 0, 0xff, 0xfe, 0x80, 0x89]), crypto.randomBytes(300), Buffer.from([...Array(256).keys()])]);
      const wb = await call(c, "write_file", { path: "/mnt/data/blob.bin", content: bin.toString("base64"), encoding: "base64" });
      assert.notEqual(wb.isError, true, textOf(wb));
      assert.equal(wb.structuredContent.size, bin.length);
      assert.equal((await runOk(c, "print(open('/mnt/data/blob.bin', 'rb').read().hex())")).structuredContent.stdout, bin.toString("hex") + "\n");
      const rb = await call(c, "read_file", { path: "blob.bin" });
      assert.notEqual(rb.isError, true, textOf(rb));
      const part = rb.content.find((p) => p.type === "resource");
      assert.ok(part, `a resource part: ${JSON.stringify(rb.content).slice(0, 300)}`);
      assert.equal(part.resource.uri, "sandbox:/mnt/data/blob.bin");
      assert.deepEqual(Buffer.from(part.resource.blob, "base64"), bin);
      assert.equal(rb.structuredContent.encoding, "base64");
      assert.equal(rb.structuredContent.size, bin.length);
      // A file the code made, read back.
      await runOk(c, "open('made.csv', 'w').write('a,b\\n1,2\\n')");
      const mc = await call(c, "read_file", { path: "made.csv" });
      assert.equal(textOf(mc), "a,b\n1,2\n");
      // list_files: all three, sizes right.
      const l = await call(c, "list_files", {});
      assert.notEqual(l.isError, true, textOf(l));
      const files = l.structuredContent.files;
      const find = (n) => files.find((f) => f.path === `/mnt/data/${n}` || f.path === n);
      assert.equal(find("notes.txt")?.size, Buffer.byteLength(text), JSON.stringify(files));
      assert.equal(find("blob.bin")?.size, bin.length);
      assert.equal(find("made.csv")?.size, 8);
      for (const n of ["notes.txt", "blob.bin", "made.csv"]) assert.match(textOf(l), new RegExp(n.replace(".", "\\.")));
      assert.equal((await call(c, "list_files", { path: "/mnt/data" })).structuredContent.files.length, files.length);
    } finally {
      await c.transport.terminateSession();
      await c.client.close();
    }
  });

  test("upload_file puts a /v1/files upload in the sandbox; another key's file id is 'No such file', as an unknown one", T(120), async () => {
    const csv = "a,b\n1,2\n3,4\n";
    const mine = await upload(stack, KEYS.alice, "data.csv", Buffer.from(csv));
    const bobs = await upload(stack, KEYS.bob, "secret.csv", Buffer.from("bob's\n"));
    const c = await connect(stack);
    try {
      const u = await call(c, "upload_file", { file_id: mine });
      assert.notEqual(u.isError, true, textOf(u));
      assert.match(textOf(u), new RegExp(`${mine}.*/mnt/data/data\\.csv`));
      assert.deepEqual(u.structuredContent, { path: "/mnt/data/data.csv", size: csv.length, file_id: mine });
      assert.equal((await runOk(c, "print(open('/mnt/data/data.csv').read(), end='')")).structuredContent.stdout, csv);
      const to = await call(c, "upload_file", { file_id: mine, path: "renamed.csv" });
      assert.notEqual(to.isError, true, textOf(to));
      assert.equal(to.structuredContent.path, "/mnt/data/renamed.csv");
      assert.equal(textOf(await call(c, "read_file", { path: "renamed.csv" })), csv);
      const other = await call(c, "upload_file", { file_id: bobs });
      assert.equal(other.isError, true);
      assert.match(textOf(other), /No such file/);
      const none = await call(c, "upload_file", { file_id: "file-" + "0".repeat(24) });
      assert.equal(none.isError, true);
      assert.equal(textOf(none).replace(/file-\w+/g, "ID"), textOf(other).replace(/file-\w+/g, "ID"), "the same words");
      assert.doesNotMatch(textOf(await call(c, "list_files", {})), /secret/);
    } finally {
      await c.transport.terminateSession();
      await c.client.close();
    }
  });

  test("reset: the sandbox goes; the next call starts a new one without the old state", T(120), async () => {
    const c = await connect(stack, FRANK);
    try {
      await runOk(c, "y = 1\nopen('/mnt/data/keep.txt', 'w').write('k')");
      const [old] = await sandboxIds(stack, FRANK);
      assert.ok(old);
      const r = await call(c, "reset", {});
      assert.notEqual(r.isError, true, textOf(r));
      assert.match(textOf(r), /reset/i);
      assert.ok(!(await sandboxIds(stack, FRANK)).includes(old), "the old sandbox was deleted");
      const later = await call(c, "run_code", { code: "import os\nprint(os.path.exists('/mnt/data/keep.txt'))\nprint(y)" });
      assert.equal(later.structuredContent.stdout, "False\n");
      assert.equal(later.structuredContent.error?.name, "NameError");
      const now = await sandboxIds(stack, FRANK);
      assert.equal(now.length, 1);
      assert.notEqual(now[0], old);
    } finally {
      await c.transport.terminateSession();
      await c.client.close();
    }
  });

  test("resources: the files of /mnt/data listed with sandbox: URIs and read as text or blob; the template; a missing one is not found", T(120), async () => {
    const c = await connect(stack);
    try {
      assert.deepEqual((await c.client.listResources(undefined, { cacheMode: "refresh" })).resources, [], "no sandbox, no files");
      const bin = Buffer.from([0x89, 0x50, 0, 1, 2, 0xff]);
      await call(c, "write_file", { path: "r.csv", content: "x,y\n1,2\n" });
      await call(c, "write_file", { path: "r.bin", content: bin.toString("base64"), encoding: "base64" });
      const { resources } = await c.client.listResources(undefined, { cacheMode: "refresh" });
      const csv = resources.find((r) => r.uri === "sandbox:/mnt/data/r.csv");
      const raw = resources.find((r) => r.uri === "sandbox:/mnt/data/r.bin");
      assert.ok(csv && raw, JSON.stringify(resources));
      assert.equal(csv.name, "r.csv");
      assert.equal(csv.size, 8);
      assert.equal(raw.size, bin.length);
      const t = await c.client.readResource({ uri: csv.uri }, { cacheMode: "refresh" });
      assert.equal(t.contents.length, 1);
      assert.equal(t.contents[0].uri, csv.uri);
      assert.equal(t.contents[0].text, "x,y\n1,2\n");
      const b = await c.client.readResource({ uri: raw.uri }, { cacheMode: "refresh" });
      assert.ok(!("text" in b.contents[0]), "binary is not text");
      assert.deepEqual(Buffer.from(b.contents[0].blob, "base64"), bin);
      const { resourceTemplates } = await c.client.listResourceTemplates(undefined, { cacheMode: "refresh" });
      assert.deepEqual(resourceTemplates.map((x) => x.uriTemplate), ["sandbox:/mnt/data/{+path}"]);
      // The server says -32002 (checked raw in mcp-wire); the SDK client
      // turns that into its ResourceNotFoundError (code -32602, data.uri).
      await assert.rejects(c.client.readResource({ uri: "sandbox:/mnt/data/nope.txt" }, { cacheMode: "bypass" }),
        (e) => e.constructor.name === "ResourceNotFoundError" && e.data?.uri === "sandbox:/mnt/data/nope.txt", "a missing file: not found");
      await assert.rejects(c.client.readResource({ uri: "file:///etc/passwd" }, { cacheMode: "bypass" }),
        (e) => e.code === -32602 && e.data?.uri === undefined, "not a sandbox: URI: -32602, not a miss");
      await assert.rejects(c.client.readResource({ uri: "sandbox:/mnt/data/../../etc/passwd" }, { cacheMode: "bypass" }),
        (e) => e.code === -32602 || e.code === -32002, "out of /mnt/data");
    } finally {
      await c.transport.terminateSession();
      await c.client.close();
    }
  });

  test("progress: onprogress gets increasing progress with the output as it comes, before the result", T(120), async () => {
    const c = await connect(stack);
    try {
      await runOk(c, "import time");
      const got = [];
      const t0 = Date.now();
      const r = await call(c, "run_code", { code: "for i in range(3):\n    print('step', i, flush=True)\n    time.sleep(1)" },
        { onprogress: (p) => got.push({ ...p, at: Date.now() }), resetTimeoutOnProgress: true });
      const done = Date.now();
      assert.equal(r.structuredContent.stdout, "step 0\nstep 1\nstep 2\n");
      assert.ok(got.length >= 2, `progress notifications: ${JSON.stringify(got)}`);
      for (let i = 1; i < got.length; i++) assert.ok(got[i].progress > got[i - 1].progress, JSON.stringify(got));
      const said = got.map((p) => p.message ?? "").join("");
      assert.match(said, /step 0/);
      assert.match(said, /step 1/);
      assert.ok(done - got[0].at >= 1000, `first progress at ${got[0].at - t0} ms, result at ${done - t0} ms`);
    } finally {
      await c.transport.terminateSession();
      await c.client.close();
    }
  });

  test("cancel: an aborted call stops its run; the next call answers at once and the run's later effect never happens", T(120), async () => {
    const c = await connect(stack);
    try {
      await runOk(c, "import time, os\nkept = 'yes'");
      const ac = new AbortController();
      setTimeout(() => ac.abort("user"), 1500);
      const t0 = Date.now();
      await assert.rejects(call(c, "run_code", { code: "time.sleep(20)\nopen('/mnt/data/late', 'w').write('x')" }, { signal: ac.signal }));
      assert.ok(Date.now() - t0 < 5000);
      const t1 = Date.now();
      const r = await runOk(c, "print(os.path.exists('/mnt/data/late'))");
      assert.ok(Date.now() - t1 < 5000, `the next call waited ${Date.now() - t1} ms: the run went on`);
      assert.equal(r.structuredContent.stdout, "False\n");
      // Past the run's own end: still no file.
      await sleep(20000 - (Date.now() - t0) + 1000);
      assert.equal((await runOk(c, "print(os.path.exists('/mnt/data/late'))")).structuredContent.stdout, "False\n");
    } finally {
      await c.transport.terminateSession();
      await c.client.close();
    }
  });

  test("two sessions of one key: their own sandboxes, variables and files; distinct session ids", T(120), async () => {
    const had = await sandboxIds(stack);
    const a = await connect(stack), b = await connect(stack);
    try {
      assert.notEqual(a.transport.sessionId, b.transport.sessionId);
      await runOk(a, "who = 'a'");
      await call(a, "write_file", { path: "only-a.txt", content: "a" });
      await runOk(b, "who = 'b'");
      assert.equal((await runOk(a, "print(who)")).structuredContent.stdout, "a\n");
      assert.equal((await runOk(b, "print(who)")).structuredContent.stdout, "b\n");
      assert.equal((await call(b, "read_file", { path: "only-a.txt" })).isError, true);
      assert.ok(!(await call(b, "list_files", {})).structuredContent.files.some((f) => /only-a/.test(f.path)));
      const made = (await sandboxIds(stack)).filter((id) => !had.includes(id));
      assert.equal(made.length, 2, "two sandboxes");
    } finally {
      for (const c of [a, b]) {
        await c.transport.terminateSession();
        await c.client.close();
      }
    }
  });

  test("another key presenting a session id is 404 (-32001) as an unknown id, on POST and DELETE; the session is untouched", T(120), async () => {
    const c = await connect(stack);
    try {
      await runOk(c, "mine = 'alice'");
      const sid = c.transport.sessionId;
      const unknown = await rawPing(stack, KEYS.bob, "mcp_" + "0".repeat(32));
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json?.error?.code, -32001, unknown.text);
      const ping = await rawPing(stack, KEYS.bob, sid);
      assert.equal(ping.status, 404);
      assert.equal(ping.text, unknown.text);
      const steal = await mcp(stack, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "run_code", arguments: { code: "mine = 'bob'" } } },
        { key: KEYS.bob, session: sid, version: LATEST });
      assert.equal(steal.status, 404);
      assert.equal(steal.text, unknown.text);
      const read = await mcp(stack, { jsonrpc: "2.0", id: 1, method: "resources/list" }, { key: KEYS.bob, session: sid, version: LATEST });
      assert.equal(read.status, 404);
      const del = await mcp(stack, undefined, { method: "DELETE", key: KEYS.bob, session: sid, version: LATEST });
      assert.equal(del.status, 404);
      assert.equal((await runOk(c, "print(mine)")).structuredContent.stdout, "alice\n");
    } finally {
      await c.transport.terminateSession();
      await c.client.close();
    }
  });

  test("terminateSession (DELETE) deletes the session's sandbox; the id is then 404", T(120), async () => {
    const c = await connect(stack, DAVE);
    await runOk(c, "z = 1");
    const [box] = await sandboxIds(stack, DAVE);
    assert.ok(box);
    const sid = c.transport.sessionId;
    await c.transport.terminateSession();
    assert.ok(c.http.some((h) => h.method === "DELETE" && h.status === 200), JSON.stringify(c.http.slice(-3)));
    await c.client.close();
    assert.equal((await stack.call("GET", `/v1/sandboxes/${box}`, undefined, DAVE)).status, 404);
    assert.deepEqual(await sandboxIds(stack, DAVE), []);
    const gone = await rawPing(stack, DAVE, sid);
    assert.equal(gone.status, 404);
    assert.equal(gone.json?.error?.code, -32001);
  });

  test("the Agents SDK: probe 4xx then initialize; a scripted model calls run_code and read_file and is given their output; close() sends DELETE", T(180), async () => {
    const http = [];
    const server = new MCPServerStreamableHttp({ url: stack.url("/mcp"), name: "sandgate", fetch: recording(http), timeout: 60000,
      requestInit: { headers: { Authorization: `Bearer ${FRANK}` } } });
    const had = await sandboxIds(stack, FRANK);
    const requests = [];
    const fc = (callId, name, args) => ({ type: "function_call", callId, name, arguments: JSON.stringify(args), status: "completed" });
    const turns = [
      [fc("c1", "run_code", { code: "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n" +
        "open('/mnt/data/t.txt', 'w').write('from the sandbox')\nprint('six', 6 * 7)" })],
      [fc("c2", "read_file", { path: "t.txt" })],
      [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }],
    ];
    const model = {
      async getResponse(req) {
        requests.push(JSON.parse(JSON.stringify({ input: req.input, tools: req.tools })));
        const output = turns[requests.length - 1];
        if (!output) throw new Error("the model was called once too often");
        return { usage: new Usage(), output, responseId: `resp_${requests.length}` };
      },
      async *getStreamedResponse() { throw new Error("not streamed"); },
    };
    const agent = new Agent({ name: "coder", instructions: "Use the sandbox.", model, mcpServers: [server] });
    await server.connect();
    let closed = false;
    try {
      // The probe, before initialize: a 4xx, not 401/403, never a 5xx.
      assert.equal(http[0].rpc, "server/discover", JSON.stringify(http));
      assert.ok(http[0].status >= 400 && http[0].status < 500 && http[0].status !== 401 && http[0].status !== 403, JSON.stringify(http[0]));
      const init = http.find((h) => h.rpc === "initialize");
      assert.equal(init?.status, 200, JSON.stringify(http));
      const result = await run(agent, "plot, then read the file", { maxTurns: 5 });
      assert.equal(result.finalOutput, "done");
      assert.equal(requests.length, 3);
      assert.deepEqual(requests[0].tools.map((t) => t.name).sort(), TOOLS, "the model was offered the six tools");
      const given = (req, callId) => {
        const item = req.input.find((i) => i.type === "function_call_result" && i.callId === callId);
        assert.ok(item, `the result of ${callId}: ${JSON.stringify(req.input).slice(0, 500)}`);
        return JSON.stringify(item.output);
      };
      const first = given(requests[1], "c1");
      assert.match(first, /six 42/);
      assert.match(first, /input_image/);
      assert.match(first, /data:image\/png;base64,iVBORw0KGgo/);
      assert.match(given(requests[2], "c2"), /from the sandbox/);
      assert.equal((await sandboxIds(stack, FRANK)).filter((id) => !had.includes(id)).length, 1, "one sandbox for the session");
      await server.close();
      closed = true;
      assert.ok(http.some((h) => h.method === "DELETE" && h.status === 200), JSON.stringify(http.slice(-3)));
      assert.ok(http.every((h) => h.status < 500), JSON.stringify(http));
      assert.deepEqual((await sandboxIds(stack, FRANK)).filter((id) => !had.includes(id)), [], "close() ended the sandbox");
    } finally {
      if (!closed) await server.close().catch(() => {});
    }
  });
});

describe("expiry: sessions.ttl = 2 and the reaper", () => {
  let stack;
  before(async () => { stack = await startStack({ top: mcpConfig(), request_timeout: 60, sessions: "ttl = 2;", keys: extraKeys }); });
  after(async () => { await stack?.stop(); });

  test("a session in use lives past its ttl: every request slides it", T(60), async () => {
    const c = await connect(stack, EVE);
    try {
      await runOk(c, "alive = 1");
      for (let i = 0; i < 4; i++) {
        await sleep(1000);
        await c.client.ping({ timeout: 10000 });
        await reapNow(stack);
      }
      assert.equal((await runOk(c, "print(alive)")).structuredContent.stdout, "1\n");
    } finally {
      await c.transport.terminateSession();
      await c.client.close();
    }
  });

  test("an idle session is swept: its sandbox deleted, its id 404 (-32001) to the client; a new session works", T(90), async () => {
    const c = await connect(stack, DAVE);
    const bare = await connect(stack, DAVE);
    await runOk(c, "v = 1");
    const [box] = await sandboxIds(stack, DAVE);
    assert.ok(box);
    await sleep(3500);
    assert.match(await reapNow(stack), /deleted [1-9]/);
    assert.equal((await stack.call("GET", `/v1/sandboxes/${box}`, undefined, DAVE)).status, 404);
    assert.deepEqual(await sandboxIds(stack, DAVE), []);
    await assert.rejects(call(c, "run_code", { code: "print(v)" }), (e) => e.status === 404, "the SDK client sees a 404");
    for (const s of [c, bare]) {
      const r = await rawPing(stack, DAVE, s.transport.sessionId);
      assert.equal(r.status, 404, r.text);
      assert.equal(r.json?.error?.code, -32001);
    }
    await c.client.close();
    await bare.client.close();
    const again = await connect(stack, DAVE);
    try {
      const r = await call(again, "run_code", { code: "print(v)" });
      assert.equal(r.structuredContent.error?.name, "NameError", "a new session, a new sandbox");
    } finally {
      await again.transport.terminateSession();
      await again.client.close();
    }
  });
});
