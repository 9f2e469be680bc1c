// sandgate as an MCP server on the remote providers: the same official SDK
// client (@modelcontextprotocol/client 2.4.0) with mcp.sandbox_tool set to
// an e2b tool and to an OpenSandbox tool (the fakes of tests/fakes, which
// follow the real services' wire). For each: state across run_code calls,
// an image part, files both ways, list_files and the resources, and
// terminateSession deleting the sandbox at the provider. mcp.test.mjs
// covers the rest of the surface on the local sandbox.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { startStack, KEYS, waitFor } from "./harness.mjs";
import { sandboxIds } from "./mcp.mjs";

const T = (s) => ({ timeout: s * 1000 });
const PNG_MAGIC = "89504e470d0a1a0a";
const textOf = (r) => r.content.filter((p) => p.type === "text").map((p) => p.text).join("");

async function connect(stack) {
  const transport = new StreamableHTTPClientTransport(new URL(stack.url("/mcp")),
    { requestInit: { headers: { Authorization: `Bearer ${KEYS.alice}` } } });
  const client = new Client({ name: "sandgate-providers", version: "1.0.0" });
  await client.connect(transport, { timeout: 15000 });
  await client.listTools(undefined, { timeout: 15000 });
  return { client, transport };
}

const call = (c, name, args) => c.client.callTool({ name, arguments: args }, { timeout: 60000 });
async function ok(c, name, args) {
  const r = await call(c, name, args);
  assert.notEqual(r.isError, true, `${name}: ${textOf(r)}`);
  return r;
}

// The provider's own id of sandgate's sandbox id (the handle it keeps).
function providerId(stack, id) {
  const [{ handle }] = stack.sql(`SELECT handle FROM sandboxes WHERE id = '${id}'`);
  return JSON.parse(handle).id;
}

// A 40×40 red PNG, made in the sandbox, shown as each provider's kernel
// shows one: e2b's with display_png (its template's hook; a matplotlib
// figure goes the same way); OpenSandbox's execd forwards no display_data,
// so as a value's _repr_png_ (an execute_result).
const MAKE_PNG = "import base64, struct, zlib\n" +
  "def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))\n" +
  "raw = b''.join(b'\\x00' + b'\\xff\\x00\\x00' * 40 for _ in range(40))\n" +
  "png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 40, 40, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')\n" +
  "print('drawn')\n";
const PROVIDERS = [
  { tool: "e2b", fake: "e2b", plot: MAKE_PNG + "display_png(base64.b64encode(png).decode())" },
  { tool: "osb", fake: "opensandbox", plot: MAKE_PNG + "class Img:\n    def _repr_png_(self): return png\nImg()" },
];

for (const p of PROVIDERS) {
  describe(`MCP on ${p.fake}`, () => {
    let stack;
    before(async () => {
      stack = await startStack({ sandboxes: true, request_timeout: 60,
        top: `mcp: { enabled = true; path = "/mcp"; sandbox_tool = "${p.tool}"; };` });
    });
    after(async () => { await stack?.stop(); });

    test("run_code keeps state in one remote sandbox; an image part; files, list_files and resources; terminateSession deletes it at the provider", T(180), async () => {
      const before = (await stack.fakeHook(p.fake, "stats")).creates;
      const c = await connect(stack);
      let ended = false;
      try {
        await ok(c, "run_code", { code: "x = 41" });
        const r = await ok(c, "run_code", { code: "print(x + 1)" });
        assert.equal(r.structuredContent.stdout, "42\n");
        const ids = await sandboxIds(stack);
        assert.equal(ids.length, 1, "the session's one sandbox");
        const pid = providerId(stack, ids[0]);
        assert.ok((await stack.fakeHook(p.fake, "stats")).live.includes(pid), "live at the provider");

        const img = await ok(c, "run_code", { code: p.plot });
        const parts = img.content.filter((x) => x.type === "image");
        assert.equal(parts.length, 1, JSON.stringify(img).slice(0, 600));
        assert.equal(parts[0].mimeType, "image/png");
        assert.equal(Buffer.from(parts[0].data, "base64").subarray(0, 8).toString("hex"), PNG_MAGIC);
        assert.match(textOf(img), /drawn/);

        const text = "héllo ✓\n";
        await ok(c, "write_file", { path: "notes.txt", content: text });
        const bin = Buffer.concat([Buffer.from([0, 0xff, 0x80]), crypto.randomBytes(200)]);
        await ok(c, "write_file", { path: "/mnt/data/blob.bin", content: bin.toString("base64"), encoding: "base64" });
        const seen = await ok(c, "run_code", { code: "print(open('/mnt/data/notes.txt', encoding='utf-8').read(), end='')" });
        assert.equal(seen.structuredContent.stdout, text);
        assert.equal((await ok(c, "read_file", { path: "/mnt/data/notes.txt" })).content[0].text, text);
        const rb = await ok(c, "read_file", { path: "blob.bin" });
        const part = rb.content.find((x) => x.type === "resource");
        assert.ok(part, JSON.stringify(rb.content).slice(0, 300));
        assert.deepEqual(Buffer.from(part.resource.blob, "base64"), bin);

        const listed = await ok(c, "list_files", {});
        assert.match(textOf(listed), /notes\.txt/);
        assert.match(textOf(listed), /blob\.bin/);
        const { resources } = await c.client.listResources(undefined, { timeout: 30000 });
        const uris = resources.map((x) => x.uri);
        assert.ok(uris.includes("sandbox:/mnt/data/notes.txt"), JSON.stringify(uris));
        const rr = await c.client.readResource({ uri: "sandbox:/mnt/data/notes.txt" }, { timeout: 30000 });
        assert.equal(rr.contents[0].text, text);

        await c.transport.terminateSession();
        ended = true;
        await waitFor(async () => !(await stack.fakeHook(p.fake, "stats")).live.includes(pid), "deleted at the provider", 15000);
        assert.deepEqual(await sandboxIds(stack), [], "no sandbox left tracked");
        assert.equal((await stack.fakeHook(p.fake, "stats")).creates - before, 1, "one sandbox made for the session");
      } finally {
        if (!ended) await c.transport.terminateSession().catch(() => {});
        await c.client.close();
      }
    });
  });
}
