// The MCP Inspector's command-line mode (@modelcontextprotocol/inspector-cli
// 1.0.3, on @modelcontextprotocol/sdk 1.x: one process, one session, closed
// without a DELETE) against sandgate's MCP server: listing and calling the
// tools, a wrong argument type as an isError result, no key refused, the
// resource template and a missing resource; and the sessions it leaves
// behind swept with their sandboxes once idle past sessions.ttl.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startStack, reapNow } from "./harness.mjs";
import { mcpConfig, sandboxIds } from "./mcp.mjs";

const T = (s) => ({ timeout: s * 1000 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Its package.json is found relative to the working directory: run it in
// build/ (see the package's build/index.js).
const CLI = path.join(path.dirname(fileURLToPath(import.meta.url)), "node_modules/@modelcontextprotocol/inspector-cli/build");
const GINA = "sk-gina-" + crypto.randomBytes(8).toString("hex");

let stack;
before(async () => {
  stack = await startStack({ top: mcpConfig(), request_timeout: 60, sessions: "ttl = 3;",
    keys: `{ name = "gina"; key = "${GINA}"; }` });
});
after(async () => { await stack?.stop(); });

// One run of the CLI (URL first: --header and --tool-arg take several
// values): { code, signal, out, err, json (stdout parsed, or null) }.
function inspector(args, key = GINA) {
  return new Promise((resolve, reject) => {
    const argv = ["index.js", stack.url("/mcp"), "--transport", "http",
      ...(key ? ["--header", `Authorization: Bearer ${key}`] : []), ...args];
    const p = spawn(process.execPath, argv, { cwd: CLI, stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    const timer = setTimeout(() => p.kill("SIGKILL"), 60000);
    p.stdout.on("data", (d) => { out += d; });
    p.stderr.on("data", (d) => { err += d; });
    p.on("error", (e) => { clearTimeout(timer); reject(e); });
    p.on("close", (code, signal) => {
      clearTimeout(timer);
      let json = null;
      try { json = JSON.parse(out); } catch { /* not JSON */ }
      resolve({ code, signal, out, err, json });
    });
  });
}

test("tools/list: the six tools, each with an object inputSchema", T(90), async () => {
  const r = await inspector(["--method", "tools/list"]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.json.tools.map((t) => t.name).sort(), ["list_files", "read_file", "reset", "run_code", "upload_file", "write_file"]);
  for (const t of r.json.tools) assert.equal(t.inputSchema.type, "object", t.name);
});

test("tools/call run_code code=print(6*7): 42, as text and structuredContent", T(90), async () => {
  const r = await inspector(["--method", "tools/call", "--tool-name", "run_code", "--tool-arg", "code=print(6*7)"]);
  assert.equal(r.code, 0, r.err);
  assert.notEqual(r.json.isError, true, r.out);
  assert.match(r.json.content.find((p) => p.type === "text").text, /42/);
  assert.equal(r.json.structuredContent.stdout, "42\n");
});

test("tools/call with code=42 (a number): an isError result, exit 0", T(90), async () => {
  const r = await inspector(["--method", "tools/call", "--tool-name", "run_code", "--tool-arg", "code=42"]);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.json.isError, true, r.out);
  assert.match(r.json.content[0].text, /Invalid arguments/);
});

test("write_file then read_file in one CLI run each: files do not outlive the session (each run is a new one)", T(90), async () => {
  const w = await inspector(["--method", "tools/call", "--tool-name", "write_file", "--tool-arg", "path=x.txt", 'content="12"']);
  assert.equal(w.code, 0, w.err);
  assert.notEqual(w.json.isError, true, w.out);
  assert.deepEqual(w.json.structuredContent, { path: "/mnt/data/x.txt", size: 2 });
  const r = await inspector(["--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=x.txt"]);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.json.isError, true, "another session, another sandbox");
});

test("no key, or a wrong one: exit 1, the 401's message shown (the SDK prints the body, not the status)", T(90), async () => {
  for (const key of [null, "sk-wrong"]) {
    const r = await inspector(["--method", "tools/list"], key);
    assert.equal(r.code, 1, `${key}: ${r.out} ${r.err}`);
    assert.match(r.err, /Failed to connect/, r.err);
    assert.match(r.err, /API key/, r.err);
    assert.doesNotMatch(r.err, /sk-wrong/, "the key is not echoed");
  }
});

test("resources: the template; an empty list in a new session; a missing file fails with -32002", T(90), async () => {
  const t = await inspector(["--method", "resources/templates/list"]);
  assert.equal(t.code, 0, t.err);
  assert.deepEqual(t.json.resourceTemplates.map((x) => x.uriTemplate), ["sandbox:/mnt/data/{+path}"]);
  const l = await inspector(["--method", "resources/list"]);
  assert.equal(l.code, 0, l.err);
  assert.deepEqual(l.json.resources, []);
  const m = await inspector(["--method", "resources/read", "--uri", "sandbox:/mnt/data/nope.txt"]);
  assert.equal(m.code, 1, m.out);
  assert.match(m.err, /-32002|not found/i);
});

test("the sessions the CLI left (it sends no DELETE) are swept with their sandboxes once idle past the ttl", T(90), async () => {
  const r = await inspector(["--method", "tools/call", "--tool-name", "run_code", "--tool-arg", "code=left = 1"]);
  assert.equal(r.code, 0, r.err);
  assert.ok((await sandboxIds(stack, GINA)).length >= 1, "the CLI's runs left sandboxes");
  await sleep(4000);
  await reapNow(stack);
  assert.deepEqual(await sandboxIds(stack, GINA), [], "every one swept");
});
