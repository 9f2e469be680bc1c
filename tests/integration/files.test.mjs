// OpenAI's Files API on sandgate, driven by the official openai package
// unchanged: upload (multipart, streamed to disk), list, retrieve, the
// bytes back exactly, delete; per key; limits (per file, per key) refused
// early; filenames that are paths refused; the reaper's retention.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import OpenAI, { toFile } from "openai";
import { startStack, KEYS, waitFor } from "./harness.mjs";
import { fcgiRequest, fcgiConn } from "./fcgi-client.mjs";
import { validate } from "./schema.mjs";

const MAX = 1 << 20; // files.max_bytes here
const QUOTA = 3 * MAX + 4096;
let stack, alice, bob;

before(async () => {
  stack = await startStack({ files: `max_bytes = ${MAX}; max_bytes_per_key = ${QUOTA};` });
  alice = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
  bob = new OpenAI({ apiKey: KEYS.bob, baseURL: stack.url("/v1"), maxRetries: 0 });
});
after(async () => { await stack?.stop(); });

const CSV = "x,y\n1,2\n3,4\n";

test("a CSV uploaded with files.create comes back whole: retrieve, list, content, delete", async () => {
  const f = await alice.files.create({ file: await toFile(Buffer.from(CSV), "data.csv"), purpose: "user_data" });
  validate("OpenAIFile", f);
  assert.match(f.id, /^file-[0-9a-f]{24}$/);
  assert.equal(f.bytes, CSV.length);
  assert.equal(f.filename, "data.csv");
  assert.equal(f.purpose, "user_data");
  assert.equal(f.status, "processed");
  assert.deepEqual(await alice.files.retrieve(f.id), f);
  const list = await alice.files.list();
  assert.ok(list.data.some((x) => x.id === f.id));
  const body = await alice.files.content(f.id);
  assert.equal(await body.text(), CSV);
  assert.match(body.headers.get("content-disposition"), /attachment; filename="data.csv"/);
  const del = await alice.files.delete(f.id);
  assert.deepEqual(del, { id: f.id, object: "file", deleted: true });
  await assert.rejects(alice.files.retrieve(f.id), (e) => e.status === 404);
  assert.ok(!fs.readdirSync(`${stack.storeDir}/files`).some((n) => n.startsWith(f.id)), "its bytes are gone");
});

test("binary bytes, a non-ASCII name, and exactly max_bytes arrive intact", async () => {
  const bytes = crypto.randomBytes(MAX);
  const f = await alice.files.create({ file: await toFile(bytes, "données €.bin"), purpose: "assistants" });
  assert.equal(f.bytes, MAX);
  assert.equal(f.filename, "données €.bin");
  const back = Buffer.from(await (await alice.files.content(f.id)).arrayBuffer());
  assert.ok(back.equals(bytes), "the same bytes");
  await alice.files.delete(f.id);
});

test("another key's file is not found, for every route", async () => {
  const f = await alice.files.create({ file: await toFile(Buffer.from(CSV), "mine.csv"), purpose: "user_data" });
  await assert.rejects(bob.files.retrieve(f.id), (e) => e.status === 404 && /No such File object/.test(e.message));
  await assert.rejects(bob.files.content(f.id), (e) => e.status === 404);
  await assert.rejects(bob.files.delete(f.id), (e) => e.status === 404);
  assert.ok(!(await bob.files.list()).data.some((x) => x.id === f.id));
  assert.equal((await alice.files.retrieve(f.id)).id, f.id, "still there for its owner");
  await alice.files.delete(f.id);
});

test("list pages newest first, by purpose, with after", async () => {
  const made = [];
  for (let i = 0; i < 3; i++)
    made.push(await bob.files.create({ file: await toFile(Buffer.from(`${i}`), `p${i}.txt`), purpose: i === 1 ? "batch" : "user_data" }));
  const page = await bob.files.list({ limit: 2 });
  assert.deepEqual(page.data.map((x) => x.id), [made[2].id, made[1].id]);
  assert.equal(page.has_more, true);
  const all = [];
  for await (const x of bob.files.list({ limit: 1 })) all.push(x.id);
  assert.deepEqual(all, made.map((x) => x.id).reverse());
  assert.deepEqual((await bob.files.list({ purpose: "batch" })).data.map((x) => x.id), [made[1].id]);
  assert.deepEqual((await bob.files.list({ order: "asc", limit: 1 })).data.map((x) => x.id), [made[0].id]);
  for (const m of made) await bob.files.delete(m.id);
});

test("a purpose missing or unknown, and no file part, are OpenAI's 400s", async () => {
  await assert.rejects(alice.files.create({ file: await toFile(Buffer.from("a"), "a.txt"), purpose: "nope" }),
    (e) => e.status === 400 && e.param === "purpose");
  const form = new FormData();
  form.append("purpose", "user_data");
  const r = await fetch(stack.url("/v1/files"), { method: "POST", body: form, headers: { authorization: `Bearer ${KEYS.alice}` } });
  assert.equal(r.status, 400);
  const j = await r.json();
  validate("ErrorResponse", j);
  assert.equal(j.error.param, "file");
  assert.equal((await alice.files.list()).data.length, 0, "nothing was kept");
});

// An upload written by hand: the SDK itself keeps only a path's last
// part, so a hostile name has to be written raw. disposition is the
// file part's Content-Disposition parameters after name="file".
async function rawUpload(disposition, key = KEYS.alice) {
  const boundary = "b0undary";
  const body = `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; ${disposition}\r\n` +
    `Content-Type: text/csv\r\n\r\na,b\r\n--${boundary}--\r\n`;
  const r = await fetch(stack.url("/v1/files"), { method: "POST", body,
    headers: { authorization: `Bearer ${key}`, "content-type": `multipart/form-data; boundary=${boundary}` } });
  return { status: r.status, json: await r.json() };
}

test("filenames that are paths are refused: ../, an absolute path, a backslash, NUL, control characters", async () => {
  const ok = await rawUpload('filename="fine.csv"');
  assert.equal(ok.status, 200, JSON.stringify(ok.json));
  assert.equal(ok.json.filename, "fine.csv");
  await alice.files.delete(ok.json.id);
  for (const d of ['filename="../../etc/passwd"', 'filename="/etc/passwd"', 'filename="a/b.csv"', 'filename=".."',
    "filename*=UTF-8''a%5Cb.csv", "filename*=UTF-8''..%2F..%2Fx", 'filename="a\u0001b"', 'filename="ok.csv\u0000../../x"',
    "filename*=UTF-8''ok%00.csv", `filename="${"x".repeat(256)}"`, "filename*=UTF-8''%FF%FE.csv"]) {
    const r = await rawUpload(d);
    assert.equal(r.status, 400, `${d}: ${JSON.stringify(r.json)}`);
    validate("ErrorResponse", r.json);
  }
  assert.equal((await alice.files.list()).data.length, 0, "nothing was kept");
  assert.deepEqual(fs.readdirSync(`${stack.storeDir}/files`), [], "no bytes left on disk");
});

test("a file over max_bytes is 413, and nothing of it is kept", async () => {
  await assert.rejects(alice.files.create({ file: await toFile(crypto.randomBytes(MAX + 1), "big.bin"), purpose: "user_data" }),
    (e) => e.status === 413 && e.code === "file_too_large");
  assert.deepEqual(fs.readdirSync(`${stack.storeDir}/files`), []);
  assert.equal((await alice.files.list()).data.length, 0);
});

test("a 1 GB upload is refused at once, before its body is read", async () => {
  // Straight to sandgate's socket, as a web server that streams request
  // bodies would: the params claim 1 GB and not one byte of it is sent.
  const c = fcgiConn(stack.fcgiAddr);
  try {
    const out = await Promise.race([
      c.send(fcgiRequest("POST", `${stack.opts.mount_prefix ?? ""}/v1/files`, { key: KEYS.alice, open: true, params: {
        CONTENT_LENGTH: String(1 << 30), CONTENT_TYPE: "multipart/form-data; boundary=xyz" } })),
      new Promise((_, no) => setTimeout(() => no(new Error("no answer without the body")), 10000)),
    ]);
    assert.match(out, /^Status: 413 /);
    assert.match(out, /"code":"file_too_large"/);
  } finally {
    c.s.destroy();
  }
});

test("a key's quota counts every file: past it, 413 quota_exceeded; deleting frees it", async () => {
  const made = [];
  for (let i = 0; i < 3; i++)
    made.push(await bob.files.create({ file: await toFile(crypto.randomBytes(MAX - 100), `q${i}.bin`), purpose: "user_data" }));
  await assert.rejects(bob.files.create({ file: await toFile(crypto.randomBytes(8192), "one-more.bin"), purpose: "user_data" }),
    (e) => e.status === 413 && e.code === "quota_exceeded");
  // Another key is not affected.
  const other = await alice.files.create({ file: await toFile(crypto.randomBytes(8192), "fine.bin"), purpose: "user_data" });
  await alice.files.delete(other.id);
  await bob.files.delete(made[0].id);
  const again = await bob.files.create({ file: await toFile(crypto.randomBytes(8192), "now.bin"), purpose: "user_data" });
  for (const m of [...made.slice(1), again]) await bob.files.delete(m.id);
});

test("expires_after is kept, and the reaper deletes an expired file with its bytes", async () => {
  const f = await alice.files.create({ file: await toFile(Buffer.from(CSV), "soon.csv"), purpose: "user_data",
    expires_after: { anchor: "created_at", seconds: 3600 } });
  assert.equal(f.expires_at, f.created_at + 3600);
  // Make it expired, then have the reaper (started again by a reload) sweep.
  stack.sql(`UPDATE files SET expires_at = 1 WHERE id = '${f.id}'`);
  await stack.reload((c) => c);
  await waitFor(async () => {
    try { await alice.files.retrieve(f.id); return false; } catch (e) { return e.status === 404; }
  }, "the reaper's sweep");
  assert.ok(!fs.readdirSync(`${stack.storeDir}/files`).includes(f.id));
});
