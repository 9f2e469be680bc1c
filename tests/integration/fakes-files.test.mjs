// The files APIs of the sandbox fakes and of the local kernel, exercised as a
// client (the gateway) uses them: e2b's envd (GET/POST /files, Connect JSON
// ListDir/MakeDir), OpenSandbox's execd (/files/upload, /files/download,
// /files/info, /files/search, /directories/list), and the same envd subset in
// providers/sandboxd/kernel/kernel.py, started as sandboxd starts it (a listening Unix
// socket on fd 3) and inside a real local sandbox. In every sandbox, a file
// uploaded to /mnt/data is what the code reads there, and a file the code
// writes there is what a download returns.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { root, waitFor, startStack } from "./harness.mjs";

const PY = fs.existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
const hasPandas = (() => {
  try { execFileSync(PY, ["-c", "import pandas"], { stdio: "ignore" }); return true; } catch { return false; }
})();
const E2B_KEY = "e2b_" + crypto.randomBytes(8).toString("hex");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "sgff-"));
const procs = [];
let e2bPort, osbPort;

async function startFake(name, args) {
  const portFile = `${tmp}/${name}.port`;
  const p = spawn("python3", [path.join(root, `tests/fakes/${name}.py`), "--port", "0", "--port-file", portFile,
    "--quiet", ...args], { stdio: ["ignore", "ignore", "inherit"] });
  procs.push(p);
  await waitFor(() => fs.existsSync(portFile), `fake ${name}`);
  return Number(fs.readFileSync(portFile, "utf8").trim());
}

before(async () => {
  e2bPort = await startFake("e2b", ["--api-key", E2B_KEY, "--python", PY]);
  osbPort = await startFake("opensandbox", ["--start-delay", "0"]);
});
after(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGTERM");
  await Promise.all(procs.map((p) => p.exitCode !== null || p.signalCode ? null : new Promise((r) => p.once("exit", r))));
  fs.rmSync(tmp, { recursive: true, force: true });
});

// One raw HTTP request (no automatic decompression): {status, headers, body: Buffer}.
// opts: {port | socketPath, method, path, headers, body}. A body cut short rejects.
function raw({ port, socketPath, method = "GET", path: p, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, socketPath, method, path: p, headers, agent: false }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("aborted", () => reject(new Error("response aborted")));
      res.on("error", reject);
    });
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}
const json = (r) => JSON.parse(r.body.toString("utf8"));

// A multipart/form-data body: parts = [{name, filename?, type?, data}].
function multipart(parts, boundary = "sgff" + crypto.randomBytes(6).toString("hex")) {
  const bufs = [];
  for (const p of parts) {
    let cd = `form-data; name="${p.name}"`;
    if (p.filename !== undefined) cd += `; filename="${p.filename}"`;
    bufs.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${cd}\r\n` +
      (p.type ? `Content-Type: ${p.type}\r\n` : "") + "\r\n"));
    bufs.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data));
    bufs.push(Buffer.from("\r\n"));
  }
  bufs.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(bufs), type: `multipart/form-data; boundary=${boundary}` };
}

// ---------------------------------------------------------------- e2b

async function e2bSandbox(extra = {}) {
  const r = await fetch(`http://127.0.0.1:${e2bPort}/sandboxes`, {
    method: "POST", headers: { "x-api-key": E2B_KEY, "content-type": "application/json" },
    body: JSON.stringify({ templateID: "code-interpreter-v1", timeout: 120, secure: true, ...extra }),
  });
  assert.equal(r.status, 201);
  const sb = await r.json();
  const envd = (method, p, headers = {}, body) => raw({ port: e2bPort, method, path: p, body,
    headers: { "E2b-Sandbox-Id": sb.sandboxID, "E2b-Sandbox-Port": "49983", "X-Access-Token": sb.envdAccessToken, ...headers } });
  const rpc = (m, msg, headers = {}) => envd("POST", `/filesystem.Filesystem/${m}`,
    { "Content-Type": "application/json", ...headers }, msg === undefined ? undefined : JSON.stringify(msg));
  const run = async (code) => {
    const r = await raw({ port: e2bPort, method: "POST", path: "/execute", body: JSON.stringify({ code }),
      headers: { "E2b-Sandbox-Id": sb.sandboxID, "E2b-Sandbox-Port": "49999", "X-Access-Token": sb.envdAccessToken,
        "Content-Type": "application/json" } });
    assert.equal(r.status, 200);
    const lines = r.body.toString("utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(lines.at(-1).type, "end_of_execution");
    return { stdout: lines.filter((l) => l.type === "stdout").map((l) => l.text).join(""),
      error: lines.find((l) => l.type === "error") ?? null };
  };
  return { ...sb, envd, rpc, run };
}

const e2bFault = (body) => fetch(`http://127.0.0.1:${e2bPort}/__faults`, { method: "POST", body: JSON.stringify(body) });

test("e2b: a file uploaded to /mnt/data is what the code reads; what the code writes there downloads", async () => {
  const sb = await e2bSandbox();
  const csv = "name,qty\napple,3\npear,5\n";
  const up = await sb.envd("POST", "/files?path=/mnt/data/x.csv", { "Content-Type": "application/octet-stream" }, csv);
  assert.equal(up.status, 200, up.body.toString());
  assert.equal(up.headers["content-type"], "text/plain; charset=utf-8");  // envd sets none: net/http sniffs
  assert.equal(up.body.toString(), '[{"name":"x.csv","path":"/mnt/data/x.csv","type":"file"}]');

  const out = await sb.run([
    "import csv, os, pathlib",
    "rows = list(csv.DictReader(open('/mnt/data/x.csv')))",
    "total = sum(int(r['qty']) for r in rows)",
    "with open('/mnt/data/out.csv', 'w', newline='') as f:",
    "    csv.writer(f).writerows([['total'], [total]])",
    "pathlib.Path('/mnt/data/sub').mkdir()",
    "pathlib.Path('/mnt/data/sub/deep.txt').write_text('deep')",
    "open('rel.txt', 'w').write('relative')",
    "print(os.getcwd(), total)",
    "print(sorted(os.listdir('/mnt/data')), [e.path for e in sorted(os.scandir('/mnt/data'), key=lambda e: e.name)])",
    "print(sorted(str(p) for p in pathlib.Path('/mnt/data').rglob('*.txt')), os.path.exists('/mnt/data/x.csv'))",
    "print([d for d, _, _ in os.walk('/mnt/data')])",
  ].join("\n"));
  assert.equal(out.error, null, JSON.stringify(out.error));
  assert.equal(out.stdout, "/home/user 8\n" +
    "['out.csv', 'sub', 'x.csv'] ['/mnt/data/out.csv', '/mnt/data/sub', '/mnt/data/x.csv']\n" +
    "['/mnt/data/sub/deep.txt'] True\n['/mnt/data', '/mnt/data/sub']\n");

  const dl = await sb.envd("GET", "/files?path=/mnt/data/out.csv");
  assert.equal(dl.status, 200);
  assert.equal(dl.body.toString(), "total\r\n8\r\n");
  assert.equal(dl.headers["content-type"], "text/csv; charset=utf-8");
  assert.equal(dl.headers["content-disposition"], "inline; filename=out.csv");   // mime.FormatMediaType: a token is bare
  assert.equal(dl.headers["vary"], "Accept-Encoding");
  assert.equal(dl.headers["accept-ranges"], "bytes");
  assert.equal(dl.headers["content-length"], String(dl.body.length));
  // relative to the user's home, as the code's cwd is
  assert.equal((await sb.envd("GET", "/files?path=rel.txt")).body.toString(), "relative");
  assert.equal((await sb.envd("GET", "/files?path=/home/user/rel.txt")).body.toString(), "relative");
  // gzip when asked for
  const gz = await sb.envd("GET", "/files?path=/mnt/data/sub/deep.txt", { "Accept-Encoding": "gzip" });
  assert.equal(gz.headers["content-encoding"], "gzip");
  assert.equal(zlib.gunzipSync(gz.body).toString(), "deep");
  // a range
  const part = await sb.envd("GET", "/files?path=/mnt/data/x.csv", { Range: "bytes=5-7" });
  assert.equal(part.status, 206);
  assert.equal(part.headers["content-range"], `bytes 5-7/${csv.length}`);
  assert.equal(part.body.toString(), csv.slice(5, 8));
});

test("e2b: pandas in the code reads and writes /mnt/data", { skip: !hasPandas && "no pandas for the cells' Python" }, async () => {
  const sb = await e2bSandbox();
  await sb.envd("POST", "/files?path=/mnt/data/t.csv", { "Content-Type": "application/octet-stream" }, "a,b\n1,2\n3,4\n");
  const out = await sb.run("import pandas as pd\ndf = pd.read_csv('/mnt/data/t.csv')\n" +
    "df.assign(c=df.a + df.b).to_csv('/mnt/data/t2.csv', index=False)\nprint(len(df))");
  assert.equal(out.error, null, JSON.stringify(out.error));
  assert.equal(out.stdout, "2\n");
  assert.equal((await sb.envd("GET", "/files?path=/mnt/data/t2.csv")).body.toString(), "a,b,c\n1,2,3\n3,4,7\n");
});

test("e2b: multipart uploads, users, relative paths and envd's 400/401s", async () => {
  const sb = await e2bSandbox();
  let m = multipart([{ name: "file", filename: "ignored.txt", type: "application/octet-stream", data: "A" }]);
  let r = await sb.envd("POST", "/files?path=notes/a.txt", { "Content-Type": m.type }, m.body);
  assert.equal(r.body.toString(), '[{"name":"a.txt","path":"/home/user/notes/a.txt","type":"file"}]');
  r = await sb.envd("POST", "/files?path=r.txt&username=root", { "Content-Type": m.type }, m.body);
  assert.deepEqual(json(r), [{ name: "r.txt", path: "/root/r.txt", type: "file" }]);
  // no path: each part's filename, kept whole, is its destination; other form names are skipped
  m = multipart([{ name: "file", filename: "/mnt/data/one.txt", data: "1" }, { name: "other", data: "x" },
    { name: "file", filename: "two.txt", data: "2" }]);
  r = await sb.envd("POST", "/files", { "Content-Type": m.type }, m.body);
  assert.deepEqual(json(r), [{ name: "one.txt", path: "/mnt/data/one.txt", type: "file" },
    { name: "two.txt", path: "/home/user/two.txt", type: "file" }]);
  assert.equal((await sb.envd("GET", "/files?path=/mnt/data/one.txt")).body.toString(), "1");
  // two parts to one path: the first is written, then 400
  m = multipart([{ name: "file", filename: "a", data: "first" }, { name: "file", filename: "b", data: "second" }]);
  r = await sb.envd("POST", "/files?path=/mnt/data/dup.txt", { "Content-Type": m.type }, m.body);
  assert.equal(r.status, 400);
  assert.equal(r.body.toString(), JSON.stringify({ code: 400, message: "you cannot upload multiple files to the same " +
    "path '/mnt/data/dup.txt' in one upload request, only the first specified file was uploaded" }) + "\n");
  assert.equal((await sb.envd("GET", "/files?path=/mnt/data/dup.txt")).body.toString(), "first");
  // overwrite
  await sb.envd("POST", "/files?path=/mnt/data/dup.txt", { "Content-Type": "application/octet-stream" }, "new");
  assert.equal((await sb.envd("GET", "/files?path=/mnt/data/dup.txt")).body.toString(), "new");
  // errors
  r = await sb.envd("POST", "/files?path=x&username=bob", { "Content-Type": "application/octet-stream" }, "x");
  assert.equal(r.status, 401);
  assert.deepEqual(json(r), { code: 401, message: "error looking up user 'bob': user: unknown user bob" });
  r = await sb.envd("POST", "/files", { "Content-Type": "application/octet-stream" }, "x");
  assert.deepEqual([r.status, json(r).message], [400, "path query parameter is required for raw body upload"]);
  r = await sb.envd("POST", "/files?path=x", { "Content-Type": "text/plain" }, "x");
  assert.deepEqual([r.status, json(r).message],
    [400, "unsupported content type: text/plain, expected multipart/form-data or application/octet-stream"]);
  r = await sb.envd("POST", "/files?path=/mnt/data", { "Content-Type": "application/octet-stream" }, "x");
  assert.deepEqual([r.status, json(r).message], [400, "path is a directory: /mnt/data"]);
  r = await sb.envd("POST", "/files?path=/mnt/data/one.txt/under", { "Content-Type": "application/octet-stream" }, "x");
  assert.deepEqual([r.status, json(r).message], [500, "error ensuring directories: path is a file: /mnt/data/one.txt"]);
  // gzip-encoded octet-stream upload
  r = await sb.envd("POST", "/files?path=/mnt/data/z.txt", { "Content-Type": "application/octet-stream",
    "Content-Encoding": "gzip" }, zlib.gzipSync("unzipped"));
  assert.equal(r.status, 200);
  assert.equal((await sb.envd("GET", "/files?path=/mnt/data/z.txt")).body.toString(), "unzipped");
});

test("e2b: download errors, and /files' own authentication (token or signature)", async () => {
  const sb = await e2bSandbox();
  let r = await sb.envd("GET", "/files?path=/mnt/data/nope.csv");
  assert.equal(r.status, 404);
  assert.equal(r.headers["content-type"], "application/json; charset=utf-8");
  assert.equal(r.body.toString(), `{"code":404,"message":"path '/mnt/data/nope.csv' does not exist"}\n`);
  r = await sb.envd("GET", "/files?path=/home/user");
  assert.deepEqual(json(r), { code: 400, message: "path '/home/user' is a directory" });
  r = await sb.envd("GET", "/files?path=~bob/x");
  assert.equal(r.status, 400);
  assert.match(json(r).message, /cannot expand user-specific home dir/);
  await sb.envd("POST", "/files?path=/mnt/data/s.txt", { "Content-Type": "application/octet-stream" }, "signed");
  const bare = { "E2b-Sandbox-Id": sb.sandboxID, "E2b-Sandbox-Port": "49983" };
  r = await raw({ port: e2bPort, path: "/files?path=/mnt/data/s.txt", headers: bare });
  assert.deepEqual([r.status, json(r).message], [401, "missing signature query parameter"]);
  r = await raw({ port: e2bPort, path: "/files?path=/mnt/data/s.txt", headers: { ...bare, "X-Access-Token": "nope" } });
  assert.deepEqual([r.status, json(r).message], [401, "access token present in header but does not match"]);
  const sig = "v1_" + crypto.createHash("sha256").update(`/mnt/data/s.txt:read::${sb.envdAccessToken}`)
    .digest("base64").replace(/=+$/, "");
  r = await raw({ port: e2bPort, path: `/files?path=/mnt/data/s.txt&signature=${encodeURIComponent(sig)}`, headers: bare });
  assert.equal(r.status, 200);
  assert.equal(r.body.toString(), "signed");
  r = await raw({ port: e2bPort, path: `/files?path=/mnt/data/s.txt&signature=v1_x`, headers: bare });
  assert.deepEqual([r.status, json(r).message], [401, "invalid signature"]);
  // the Connect routes take the general token check
  r = await raw({ port: e2bPort, method: "POST", path: "/filesystem.Filesystem/ListDir", body: "{}",
    headers: { ...bare, "Content-Type": "application/json" } });
  assert.equal(r.status, 401);
  assert.match(json(r).message, /^unauthorized access/);
});

test("e2b: ListDir and MakeDir over Connect's unary JSON protocol", async () => {
  const sb = await e2bSandbox();
  let r = await sb.rpc("MakeDir", { path: "/mnt/data/sub/deep" });
  assert.equal(r.status, 200, r.body.toString());
  assert.equal(r.headers["content-type"], "application/json");
  const made = json(r).entry;
  assert.deepEqual({ ...made, modifiedTime: "T" }, { name: "deep", type: "FILE_TYPE_DIRECTORY", path: "/mnt/data/sub/deep",
    size: "4096", mode: 0o755, permissions: "drwxr-xr-x", owner: "user", group: "user", modifiedTime: "T" });
  assert.match(made.modifiedTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6}|\.\d{9})?Z$/);
  r = await sb.rpc("MakeDir", { path: "/mnt/data/sub/deep" });
  assert.equal(r.status, 409);
  assert.deepEqual(json(r), { code: "already_exists", message: "directory already exists: /mnt/data/sub/deep" });

  await sb.envd("POST", "/files?path=/mnt/data/b.txt", { "Content-Type": "application/octet-stream" }, "bb");
  await sb.envd("POST", "/files?path=/mnt/data/a.txt", { "Content-Type": "application/octet-stream" }, "");
  await sb.envd("POST", "/files?path=/mnt/data/sub/c.txt", { "Content-Type": "application/octet-stream" }, "ccc");
  r = await sb.rpc("ListDir", { path: "/mnt/data" });       // depth 0 (absent) means 1
  const one = json(r).entries;
  assert.deepEqual(one.map((e) => [e.path, e.type, e.size]), [
    ["/mnt/data/a.txt", "FILE_TYPE_FILE", undefined],        // an int64 0 is left out, as protojson does
    ["/mnt/data/b.txt", "FILE_TYPE_FILE", "2"],
    ["/mnt/data/sub", "FILE_TYPE_DIRECTORY", "4096"]]);
  assert.deepEqual(Object.keys(one[1]), ["name", "type", "path", "size", "mode", "permissions", "owner", "group", "modifiedTime"]);
  assert.deepEqual([one[1].mode, one[1].permissions], [0o644, "-rw-r--r--"]);
  r = await sb.rpc("ListDir", { path: "/mnt/data", depth: 2 });
  assert.deepEqual(json(r).entries.map((e) => e.path), ["/mnt/data/a.txt", "/mnt/data/b.txt", "/mnt/data/sub",
    "/mnt/data/sub/c.txt", "/mnt/data/sub/deep"]);
  r = await sb.rpc("ListDir", { path: "/mnt/data/sub/deep" });
  assert.deepEqual(json(r), {});                               // no entries: the empty message
  // code that writes lands in the listing
  await sb.run("open('/mnt/data/sub/deep/by_code.bin', 'wb').write(bytes(range(10)))");
  r = await sb.rpc("ListDir", { path: "/mnt/data/sub/deep" });
  assert.deepEqual(json(r).entries.map((e) => [e.name, e.size]), [["by_code.bin", "10"]]);

  // Connect errors: {code, message}, the code's HTTP status
  r = await sb.rpc("ListDir", { path: "/mnt/nope/x" });
  assert.equal(r.status, 404);
  assert.deepEqual(json(r), { code: "not_found", message: "path not found: lstat /mnt/nope: no such file or directory" });
  r = await sb.rpc("ListDir", { path: "/mnt/data/b.txt" });
  assert.deepEqual([r.status, json(r)], [400, { code: "invalid_argument", message: "path is not a directory: /mnt/data/b.txt" }]);
  r = await sb.rpc("ListDir", undefined);
  assert.deepEqual([r.status, json(r).code], [400, "invalid_argument"]);
  r = await sb.rpc("ListDir", { path: "/mnt/data" }, { Authorization: "Basic " + Buffer.from("bob:").toString("base64") });
  assert.deepEqual([r.status, json(r)], [401, { code: "unauthenticated", message: "invalid username: 'bob'" }]);
  r = await sb.envd("GET", "/filesystem.Filesystem/ListDir");
  assert.equal(r.status, 405);
  r = await sb.rpc("ListDir", { path: "/mnt/data" }, { "Content-Type": "text/plain" });
  assert.equal(r.status, 415);
  // relative to the (Basic-auth) user's home
  r = await sb.rpc("ListDir", { path: "" }, { Authorization: "Basic " + Buffer.from("user:").toString("base64") });
  assert.equal(r.status, 200);
});

test("e2b: fault knobs files_status, download_drop, listdir_status", async () => {
  const sb = await e2bSandbox();
  await sb.envd("POST", "/files?path=/mnt/data/f.bin", { "Content-Type": "application/octet-stream" }, Buffer.alloc(10000, 7));
  await e2bFault({ files_status: 507 });
  let r = await sb.envd("POST", "/files?path=/mnt/data/g.bin", { "Content-Type": "application/octet-stream" }, "xyz");
  assert.equal(r.status, 507);
  assert.match(json(r).message, /not enough disk space available/);
  r = await sb.envd("GET", "/files?path=/mnt/data/g.bin");
  assert.equal(r.status, 404, "nothing written");
  await e2bFault({ download_drop: true });
  await assert.rejects(sb.envd("GET", "/files?path=/mnt/data/f.bin"), /aborted|socket hang up|ECONNRESET/);
  assert.equal((await sb.envd("GET", "/files?path=/mnt/data/f.bin")).body.length, 10000, "one time only");
  await e2bFault({ listdir_status: 503 });
  r = await sb.rpc("ListDir", { path: "/mnt/data" });
  assert.deepEqual([r.status, json(r).code], [503, "unavailable"]);
  r = await sb.rpc("ListDir", { path: "/mnt/data" });
  assert.equal(r.status, 200);
});

// ---------------------------------------------------------------- OpenSandbox

async function osbSandbox() {
  const base = `http://127.0.0.1:${osbPort}/v1`;
  let r = await fetch(`${base}/sandboxes`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ image: { uri: "opensandbox/code-interpreter:v1.1.0" }, entrypoint: ["/opt/code-interpreter/code-interpreter.sh"],
      timeout: 600, resourceLimits: { cpu: "1", memory: "2Gi" } }) });
  assert.equal(r.status, 202);
  const { id } = await r.json();
  r = await fetch(`${base}/sandboxes/${id}/endpoints/44772`);
  const ep = await r.json();
  const [hostPort, ...rest] = ep.endpoint.split("/");
  const prefix = "/" + rest.join("/");
  const port = Number(hostPort.split(":")[1]);
  const execd = (method, p, headers = {}, body) => raw({ port, method, path: prefix + p, headers: { ...ep.headers, ...headers }, body });
  const upload = (pairs) => {
    const m = multipart(pairs.flatMap(([meta, data]) => [
      { name: "metadata", filename: "metadata", type: "application/json", data: JSON.stringify(meta) },
      { name: "file", filename: meta.path, type: "application/octet-stream", data }]));
    return execd("POST", "/files/upload", { "Content-Type": m.type }, m.body);
  };
  const run = async (code) => {
    const r = await execd("POST", "/code", { "Content-Type": "application/json" }, JSON.stringify({ code, context: { language: "python" } }));
    assert.equal(r.status, 200);
    const ev = r.body.toString().split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
    return { stdout: ev.filter((e) => e.type === "stdout").map((e) => e.text).join(""), error: ev.find((e) => e.type === "error") ?? null };
  };
  return { id, execd, upload, run };
}

const osbFault = (body) => fetch(`http://127.0.0.1:${osbPort}/__faults`, { method: "POST", body: JSON.stringify(body) });

test("OpenSandbox: uploaded pairs are what the code reads in /mnt/data; what it writes downloads", async () => {
  const sb = await osbSandbox();
  let r = await sb.upload([[{ path: "/mnt/data/a.csv", owner: "root", group: "root", mode: 600 }, "x,y\n1,2\n"],
    [{ path: "/mnt/data/in/b.txt" }, "bee"]]);
  assert.equal(r.status, 200, r.body.toString());
  assert.equal(r.body.length, 0);
  const out = await sb.run("import os\nrows = open('/mnt/data/a.csv').read().split()\n" +
    "open('/mnt/data/out.txt', 'w').write(str(len(rows)) + open('/mnt/data/in/b.txt').read())\n" +
    "print(os.getcwd(), sorted(os.listdir('/mnt/data')))");
  assert.equal(out.error, null, JSON.stringify(out.error));
  assert.equal(out.stdout, "/workspace ['a.csv', 'in', 'out.txt']\n");
  r = await sb.execd("GET", "/files/download?path=/mnt/data/out.txt");
  assert.equal(r.status, 200);
  assert.equal(r.body.toString(), "2bee");
  assert.equal(r.headers["content-type"], "application/octet-stream");
  assert.equal(r.headers["content-disposition"], 'attachment; filename="out.txt"');
  assert.equal(r.headers["content-length"], "4");
  r = await sb.execd("GET", "/files/download?path=/mnt/data/a.csv", { Range: "bytes=2-4" });
  assert.deepEqual([r.status, r.headers["content-range"], r.body.toString()], [206, "bytes 2-4/8", "y\n1"]);
  r = await sb.execd("GET", "/files/download?path=/mnt/data/a.csv", { Range: "lines=1" });
  assert.deepEqual([r.status, json(r)], [416, { code: "UNKNOWN" }]);
  r = await sb.execd("GET", "/files/download?path=/mnt/data/none.csv");
  assert.deepEqual([r.status, json(r)], [404, { code: "FILE_NOT_FOUND", message: "file not found. open /mnt/data/none.csv: no such file or directory" }]);
  r = await sb.execd("GET", "/files/download");
  assert.deepEqual([r.status, json(r)], [400, { code: "MISSING_QUERY", message: "missing query parameter 'path'" }]);
  // the mode's octal digits, as a decimal number; a file without one gets 0777 less the umask
  r = await sb.execd("GET", "/files/info?path=/mnt/data/a.csv&path=/mnt/data/in/b.txt");
  const info = json(r);
  assert.deepEqual(Object.keys(info), ["/mnt/data/a.csv", "/mnt/data/in/b.txt"]);
  assert.deepEqual({ ...info["/mnt/data/a.csv"], modified_at: "T", created_at: "T" }, { path: "/mnt/data/a.csv", type: "file", size: 8,
    modified_at: "T", created_at: "T", owner: "root", group: "root", mode: 600 });
  assert.match(info["/mnt/data/a.csv"].modified_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  const umask = process.umask();
  assert.equal(info["/mnt/data/in/b.txt"].mode, Number((0o777 & ~umask).toString(8)));
  r = await sb.execd("GET", "/files/info?path=/mnt/data/zz");
  assert.deepEqual([r.status, json(r).code], [404, "FILE_NOT_FOUND"]);
});

test("OpenSandbox: /files/upload's 400s", async () => {
  const sb = await osbSandbox();
  const post = (parts) => { const m = multipart(parts); return sb.execd("POST", "/files/upload", { "Content-Type": m.type }, m.body); };
  let r = await post([{ name: "metadata", data: '{"path":"/mnt/data/x"}' }, { name: "file", filename: "x", data: "x" }]);
  assert.deepEqual([r.status, json(r)], [400, { code: "INVALID_FILE_METADATA", message: "metadata file is missing" }]);
  r = await post([{ name: "metadata", filename: "metadata", data: '{"path":"/mnt/data/x"}' }, { name: "file", data: "x" }]);
  assert.deepEqual([r.status, json(r)], [400, { code: "INVALID_FILE_CONTENT", message: "file is missing" }]);
  r = await post([{ name: "metadata", filename: "m", data: '{"path":"/a"}' }, { name: "metadata", filename: "m", data: '{"path":"/b"}' },
    { name: "file", filename: "a", data: "a" }]);
  assert.deepEqual([r.status, json(r)], [400, { code: "INVALID_FILE", message: "metadata and file count mismatch: 2 vs 1" }]);
  r = await post([{ name: "metadata", filename: "m", data: '{"owner":"root"}' }, { name: "file", filename: "a", data: "a" }]);
  assert.deepEqual([r.status, json(r)], [400, { code: "INVALID_FILE_METADATA", message: "metadata path is empty" }]);
  r = await post([{ name: "metadata", filename: "m", data: '{"path":"/a","mode":"644"}' }, { name: "file", filename: "a", data: "a" }]);
  assert.deepEqual([r.status, json(r).code], [400, "INVALID_FILE_METADATA"]);
  r = await sb.execd("POST", "/files/upload", { "Content-Type": "application/octet-stream" }, "x");
  assert.deepEqual([r.status, json(r)], [400, { code: "INVALID_FILE", message: "multipart form is empty" }]);
});

test("OpenSandbox: /directories/list, /files/search, POST /directories", async () => {
  const sb = await osbSandbox();
  let r = await sb.execd("POST", "/directories", {}, JSON.stringify({ "/mnt/data/d/e": { mode: 755 } }));
  assert.equal(r.status, 200);
  await sb.upload([[{ path: "/mnt/data/top.csv" }, "1"], [{ path: "/mnt/data/d/mid.py" }, "22"], [{ path: "/mnt/data/d/e/low.csv" }, "333"]]);
  const paths = (r) => json(r).map((e) => e.path);
  r = await sb.execd("GET", "/directories/list?path=/mnt/data");
  assert.deepEqual(paths(r), ["/mnt/data/d", "/mnt/data/top.csv"]);
  assert.deepEqual(Object.keys(json(r)[0]), ["path", "type", "size", "modified_at", "created_at", "owner", "group", "mode"]);
  assert.deepEqual(json(r).map((e) => e.type), ["directory", "file"]);
  r = await sb.execd("GET", "/directories/list?path=/mnt/data&depth=3");
  assert.deepEqual(paths(r), ["/mnt/data/d", "/mnt/data/d/e", "/mnt/data/d/e/low.csv", "/mnt/data/d/mid.py", "/mnt/data/top.csv"]);
  r = await sb.execd("GET", "/directories/list?path=/mnt/data&depth=0");
  assert.deepEqual(json(r), []);
  r = await sb.execd("GET", "/directories/list?path=/mnt/data&depth=-1");
  assert.deepEqual([r.status, json(r)], [400, { code: "INVALID_REQUEST_BODY", message: "invalid query parameter 'depth': -1" }]);
  r = await sb.execd("GET", "/directories/list?path=/mnt/data/top.csv");
  assert.deepEqual([r.status, json(r)], [400, { code: "INVALID_REQUEST_BODY", message: "path is not a directory: /mnt/data/top.csv" }]);
  r = await sb.execd("GET", "/directories/list?path=/mnt/none");
  assert.deepEqual([r.status, json(r).code], [404, "FILE_NOT_FOUND"]);
  // search: files only, anywhere below, the pattern matched against the base name
  r = await sb.execd("GET", "/files/search?path=/mnt/data&pattern=" + encodeURIComponent("**/*.csv"));
  assert.deepEqual(paths(r), ["/mnt/data/d/e/low.csv", "/mnt/data/top.csv"]);
  r = await sb.execd("GET", "/files/search?path=/mnt/data&pattern=*.{py,csv}");
  assert.deepEqual(paths(r), ["/mnt/data/d/e/low.csv", "/mnt/data/d/mid.py", "/mnt/data/top.csv"]);
  r = await sb.execd("GET", "/files/search?path=/mnt/data");
  assert.equal(json(r).length, 3);
  r = await sb.execd("GET", "/files/search?path=/mnt/data&pattern=nothing");
  assert.deepEqual(json(r), []);
  r = await sb.execd("GET", "/files/search?pattern=x");
  assert.deepEqual([r.status, json(r).code], [400, "MISSING_QUERY"]);
  // code's files appear
  await sb.run("import os\nos.makedirs('/mnt/data/made/by', exist_ok=True)\nopen('/mnt/data/made/by/code.csv','w').write('c')");
  r = await sb.execd("GET", "/files/search?path=/mnt/data/made&pattern=*.csv");
  assert.deepEqual(paths(r), ["/mnt/data/made/by/code.csv"]);
});

test("OpenSandbox: fault knobs files_status, download_drop, listdir_status", async () => {
  const sb = await osbSandbox();
  await sb.upload([[{ path: "/mnt/data/f.bin" }, Buffer.alloc(5000, 1)]]);
  await osbFault({ files_status: 500 });
  let r = await sb.upload([[{ path: "/mnt/data/g.bin" }, "g"]]);
  assert.deepEqual([r.status, json(r).code], [500, "RUNTIME_ERROR"]);
  await osbFault({ download_drop: true });
  await assert.rejects(sb.execd("GET", "/files/download?path=/mnt/data/f.bin"), /aborted|socket hang up|ECONNRESET/);
  await osbFault({ listdir_status: 500 });
  r = await sb.execd("GET", "/directories/list?path=/mnt/data");
  assert.equal(r.status, 500);
  r = await sb.execd("GET", "/directories/list?path=/mnt/data");
  assert.deepEqual([r.status, json(r).map((e) => e.path)], [200, ["/mnt/data/f.bin"]]);
});

// ---------------------------------------------------------------- the local kernel

// kernel.py as sandboxd runs it: a listening Unix socket on fd 3, cwd its home.
const sockOf = (dir) => `${dir}/k.sock`;
async function startKernel(dir) {
  const sock = sockOf(dir);
  const boot = "import os, socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\ns.listen(16)\n" +
    "os.dup2(s.fileno(), 3)\nos.set_inheritable(3, True)\nos.execv(sys.argv[2], sys.argv[2:])";
  const p = spawn(PY, ["-c", boot, sock, PY, "-I", path.join(root, "providers/sandboxd/kernel/kernel.py"), "--lifetime", "120",
    "--kernel", "python"], { cwd: dir, stdio: ["ignore", "inherit", "inherit"] });
  procs.push(p);
  const k = (method, p, headers = {}, body) => raw({ socketPath: sock, method, path: p, headers, body });
  await waitFor(async () => (await k("GET", "/health")).status === 200, "the kernel");
  return { pid: p.pid, k, proc: p };
}

const hwm = (pid) => Number(/^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]) * 1024;

test("local kernel: envd's files API, streamed, beside /execute", async () => {
  const dir = fs.mkdtempSync(`${tmp}/k-`);
  const { pid, k } = await startKernel(dir);
  const D = `${dir}/mnt/data`;
  const octet = { "Content-Type": "application/octet-stream" };
  let r = await k("POST", `/files?path=${D}/x.csv`, octet, "a,b\n1,2\n");
  assert.equal(r.status, 200, r.body.toString());
  assert.deepEqual(json(r), [{ name: "x.csv", path: `${D}/x.csv`, type: "file" }]);
  // the code sees it, and what it writes downloads
  r = await k("POST", "/execute", { "Content-Type": "application/json" },
    JSON.stringify({ code: `print(open('${D}/x.csv').read().split())\nopen('${D}/out.txt', 'w').write('from code')` }));
  assert.match(r.body.toString(), /\['a,b', '1,2'\]/);
  r = await k("GET", `/files?path=${D}/out.txt`);
  assert.deepEqual([r.status, r.body.toString(), r.headers["content-type"], r.headers["content-disposition"]],
    [200, "from code", "text/plain; charset=utf-8", "inline; filename=out.txt"]);
  // a big multipart upload streams: the server's peak memory does not grow by its size
  const before = hwm(pid);
  const big = crypto.randomBytes(24 << 20);
  const m = multipart([{ name: "file", filename: "big.bin", data: big }]);
  r = await k("POST", `/files?path=${D}/big.bin`, { "Content-Type": m.type }, m.body);
  assert.equal(r.status, 200, r.body.toString());
  assert.ok(hwm(pid) - before < 8 << 20, `the server's peak grew by ${hwm(pid) - before} bytes`);
  assert.ok(crypto.createHash("sha256").update(fs.readFileSync(`${D}/big.bin`)).digest("hex") ===
    crypto.createHash("sha256").update(big).digest("hex"), "written whole");
  r = await k("GET", `/files?path=${D}/big.bin`);
  assert.ok(r.body.equals(big), "downloaded whole");
  assert.ok(hwm(pid) - before < 8 << 20, "downloads stream too");
  r = await k("GET", `/files?path=${D}/big.bin`, { Range: "bytes=100-199" });
  assert.deepEqual([r.status, r.headers["content-range"]], [206, `bytes 100-199/${big.length}`]);
  assert.ok(r.body.equals(big.subarray(100, 200)));
  r = await k("GET", `/files?path=${D}/x.csv`, { "Accept-Encoding": "gzip" });
  assert.equal(zlib.gunzipSync(r.body).toString(), "a,b\n1,2\n");
  r = await k("POST", `/files?path=${D}/gz.txt`, { ...octet, "Content-Encoding": "gzip" }, zlib.gzipSync("was gzipped"));
  assert.equal(fs.readFileSync(`${D}/gz.txt`, "utf8"), "was gzipped");
  // envd's errors
  r = await k("GET", `/files?path=${D}/nope`);
  assert.equal(r.body.toString(), `{"code":404,"message":"path '${D}/nope' does not exist"}\n`);
  r = await k("GET", `/files?path=${D}`);
  assert.deepEqual([r.status, json(r).message], [400, `path '${D}' is a directory`]);
  r = await k("GET", `/files?path=${D}/a%00b`);
  assert.equal(r.status, 400);
  r = await k("POST", `/files?path=${D}/x.csv/under`, octet, "x");
  assert.deepEqual([r.status, json(r).message], [500, `error ensuring directories: path is a file: ${D}/x.csv`]);
  r = await k("POST", `/files?path=${D}/y`, { "Content-Type": "text/plain" }, "x");
  assert.equal(r.status, 400);
  // Connect
  const rpc = (mth, msg) => k("POST", `/filesystem.Filesystem/${mth}`, { "Content-Type": "application/json" }, JSON.stringify(msg));
  r = await rpc("MakeDir", { path: `${D}/sub/deeper` });
  assert.equal(json(r).entry.type, "FILE_TYPE_DIRECTORY");
  r = await rpc("MakeDir", { path: `${D}/sub/deeper` });
  assert.deepEqual([r.status, json(r).code], [409, "already_exists"]);
  r = await rpc("ListDir", { path: D, depth: 2 });
  assert.deepEqual(json(r).entries.map((e) => e.name), ["big.bin", "gz.txt", "out.txt", "sub", "deeper", "x.csv"]);
  const e = json(r).entries.find((x) => x.name === "big.bin");
  assert.deepEqual([e.size, e.type, e.permissions], [String(big.length), "FILE_TYPE_FILE", "-rw-r--r--"]);
  r = await rpc("ListDir", { path: `${dir}/none` });
  assert.deepEqual([r.status, json(r).code], [404, "not_found"]);
  r = await rpc("ListDir", { path: "a\0b" });
  assert.deepEqual([r.status, json(r).code], [400, "invalid_argument"]);
  // nothing a request does ends the server
  r = await k("POST", "/execute", { "Content-Type": "application/json", "Content-Length": String(64 << 20) }, "{");
  assert.equal(r.status, 413);
  // a client that leaves mid-upload
  await new Promise((resolve) => {
    const c = net.connect(sockOf(dir), () => {
      c.end(`POST /files?path=${D}/cut HTTP/1.1\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\nonly a bit`);
    });
    c.on("close", resolve);
    c.on("error", resolve);
    c.resume();
  });
  r = await k("GET", "/health");
  assert.equal(r.status, 200);
  const m2 = multipart([{ name: "file", filename: "f", data: "unterminated" }]);
  r = await k("POST", `/files?path=${D}/bad`, { "Content-Type": m2.type }, m2.body.subarray(0, m2.body.length - 12));
  assert.equal(r.status, 500);
  assert.equal((await k("GET", "/health")).status, 200);
});

test("a local sandbox serves the files API on its kernel's socket", async () => {
  const stack = await startStack({});
  try {
    const id = await stack.newSandbox("local");
    const kdir = `${stack.localDir()}/kernels`;
    const socks = fs.readdirSync(kdir).filter((f) => f.endsWith(".sock"));
    assert.equal(socks.length, 1, `one kernel socket in ${kdir}: ${socks}`);
    const k = (method, p, headers = {}, body) => raw({ socketPath: `${kdir}/${socks[0]}`, method, path: p, headers, body });
    let r = await k("POST", "/files?path=/home/user/in.txt", { "Content-Type": "application/octet-stream" }, "from the gateway");
    assert.deepEqual(json(r), [{ name: "in.txt", path: "/home/user/in.txt", type: "file" }]);
    const run = await stack.runCode(id, "print(open('/home/user/in.txt').read())\nopen('made.txt', 'w').write('by code')");
    assert.equal(run.stdout, "from the gateway\n");
    // The code's working directory is /mnt/data (a tmpfs of its own).
    r = await k("GET", "/files?path=/mnt/data/made.txt");
    assert.equal(r.body.toString(), "by code");
    r = await k("POST", "/filesystem.Filesystem/ListDir", { "Content-Type": "application/json" }, JSON.stringify({ path: "/home/user" }));
    assert.ok(json(r).entries.map((e) => e.name).includes("in.txt"));
    r = await k("POST", "/filesystem.Filesystem/ListDir", { "Content-Type": "application/json" }, JSON.stringify({ path: "/mnt/data" }));
    assert.deepEqual(json(r).entries.map((e) => e.name), ["made.txt"]);
  } finally {
    await stack.stop();
  }
});
