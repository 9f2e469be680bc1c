// The third audit's findings on files and logs, each attack performed for
// real (each of these tests failed before its fix):
//   * a file the code wrote, listed small and swapped for a large sparse
//     one before it is copied, passed the key's byte quota: what is copied
//     now stops at what was reserved (the local sandbox's code times the
//     swap with inotify; the OpenSandbox fake's listing lies outright); an
//     upload whose body is longer than its Content-Length stops likewise;
//   * a directory under /mnt/data whose name holds a newline forged log
//     lines when a file in it could not be copied;
//   * empty files cost no bytes, so a key could hold any number of them:
//     files.max_files_per_key counts uploads, container files and the
//     files the code wrote, racing uploads included.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import OpenAI, { toFile } from "openai";
import { startStack, KEYS, waitFor } from "./harness.mjs";
import { fcgiRequest, fcgiConn } from "./fcgi-client.mjs";
import { validate } from "./schema.mjs";

const MiB = 1 << 20;
const QUOTA = 8 * MiB; // files.max_bytes_per_key
const BIG = 12 * MiB; // past the quota; under max_bytes and the sandbox's disk_mb
const MAX_FILES = 6; // files.max_files_per_key
const FILES = `max_bytes = ${16 * MiB}; max_bytes_per_key = ${QUOTA}; max_files_per_key = ${MAX_FILES};`;
const DAVE = "sk-dave-" + crypto.randomBytes(8).toString("hex");
const EVE = "sk-eve-" + crypto.randomBytes(8).toString("hex");
const sha256 = (s) => crypto.createHash("sha256").update(s).digest("hex");

// What a key's files hold: their count and bytes (uploading ones too).
function held(stack, key) {
  const [r] = stack.sql(`SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes FROM files WHERE tenant = '${sha256(key)}'`);
  return { n: Number(r.n), bytes: Number(r.bytes) };
}

const codeBody = (code) => ({ model: "ci-args", input: JSON.stringify({ code }),
  tools: [{ type: "code_interpreter", container: { type: "auto" } }] });

const containerOf = (r) => r.output.find((o) => o.type === "code_interpreter_call").container_id;

describe("local sandbox", () => {
  let stack, alice, bob, carol, dave, eve;

  before(async () => {
    stack = await startStack({ sandboxes: true, interceptionTool: "local", files: FILES,
      keys: `{ name = "dave"; key_sha256 = "${sha256(DAVE)}"; }, { name = "eve"; key_sha256 = "${sha256(EVE)}"; }` });
    const client = (apiKey) => new OpenAI({ apiKey, baseURL: stack.url("/v1"), maxRetries: 0 });
    [alice, bob, carol, dave, eve] = [KEYS.alice, KEYS.bob, KEYS.carol, DAVE, EVE].map(client);
    // The store names a key by its hash.
    assert.equal(held(stack, KEYS.alice).n, 0);
  });
  after(async () => { await stack?.stop(); });

  // Writes a.bin (1 byte) and a 12 MiB sparse .big beside it; a process
  // of its own waits for the gateway's second listing of /mnt/data (the
  // first tells it something changed, the second is the one it copies
  // from) to have looked at a.bin, then renames .big over it: the listing
  // said 1 byte, the download finds 12 MiB. The listing walks in lexical
  // order, so it opens zz/ just after it has looked at a.bin.
  const SWAP = `
import os, subprocess, sys
WATCH = r'''
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init()
assert libc.inotify_add_watch(fd, b'/mnt/data/zz', 0x20) >= 0  # IN_OPEN
print('watching', flush=True)
opens = 0
while opens < 2:
    buf, off = os.read(fd, 4096), 0
    while off < len(buf):
        _, mask, _, n = struct.unpack_from('iIII', buf, off)
        off += 16 + n
        opens += 1 if mask & 0x20 else 0
os.rename('/mnt/data/.big', '/mnt/data/a.bin')
'''
open('/mnt/data/a.bin', 'wb').write(b'x')
os.makedirs('/mnt/data/zz', exist_ok=True)
with open('/mnt/data/.big', 'wb') as f:
    f.truncate(${BIG})
p = subprocess.Popen([sys.executable, '-c', WATCH], stdout=subprocess.PIPE, start_new_session=True)
print(p.stdout.readline().decode().strip())
`;

  test("a file listed at 1 byte and swapped for 12 MiB is not copied past what was reserved", async () => {
    const r = await alice.responses.create(codeBody(SWAP));
    assert.match(r.output_text, /watching/, "the watcher was in place before the run ended");
    const h = held(stack, KEYS.alice);
    assert.ok(h.bytes <= QUOTA, `the key holds ${h.bytes} bytes, past its quota of ${QUOTA}`);
    // The swap lands between the listing and the download (it always did
    // here); on a machine too busy for the watcher, a.bin is copied whole
    // before it, at 1 byte.
    const landed = /files not copied out: \/mnt\/data\/a\.bin: it grew past the 1 bytes it was listed with/.test(stack.log());
    assert.deepEqual(h, landed ? { n: 0, bytes: 0 } : { n: 1, bytes: 1 });
  });

  test("an upload whose body is longer than its Content-Length is refused, not kept whole", async () => {
    // Straight to sandgate's socket, as a web server that forwarded more
    // than it announced would: 1 KiB announced, 9 MiB sent.
    const boundary = "b0undary";
    const body = Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n` +
      `user_data\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="long.bin"\r\n` +
      "Content-Type: application/octet-stream\r\n\r\n"), Buffer.alloc(9 * MiB, 7), Buffer.from(`\r\n--${boundary}--\r\n`)]);
    // What the key held before: the test above may leave its 1-byte file
    // (on a machine too busy for its watcher).
    const before = held(stack, KEYS.alice);
    const c = fcgiConn(stack.fcgiAddr);
    try {
      const out = await Promise.race([
        c.send(fcgiRequest("POST", "/v1/files", { key: KEYS.alice, body, params: {
          CONTENT_LENGTH: "1024", CONTENT_TYPE: `multipart/form-data; boundary=${boundary}` } })),
        new Promise((_, no) => setTimeout(() => no(new Error("no answer")), 30000)),
      ]);
      assert.match(out, /^Status: 413 /);
      assert.match(out, /"code":"file_too_large"/);
    } finally {
      c.s.destroy();
    }
    assert.deepEqual(held(stack, KEYS.alice), before, "nothing of the refused upload is kept");
  });

  test("a directory whose name holds a newline forges no log line when its file cannot be copied", async () => {
    // A file the sandbox's own server cannot read: copying it fails, and
    // the failure is logged with its path.
    const r = await eve.responses.create(codeBody(
      "import os\nd = '/mnt/data/x\\nsandgate: FORGED by the sandbox\\r'\nos.makedirs(d)\n" +
      "open(d + '/f.csv', 'w').write('a,b')\nos.chmod(d + '/f.csv', 0)\nprint('ok')"));
    assert.match(r.output_text, /ok/);
    await waitFor(() => stack.log().includes("FORGED"), "the failure's log line");
    const lines = stack.log().split("\n");
    assert.deepEqual(lines.filter((l) => /^sandgate: FORGED/.test(l)), [], "no line of the sandbox's own");
    assert.ok(lines.some((l) => l.includes(`sandbox ${containerOf(r)}: files not copied out: ` +
      "/mnt/data/x\\x0asandgate: FORGED by the sandbox\\x0d/f.csv: ")), lines.filter((l) => l.includes("FORGED")).join("\n"));
    assert.ok(lines.every((l) => !l.includes("\r")), "no carriage return either");
  });

  const empty = async (client, name) =>
    client.files.create({ file: await toFile(Buffer.alloc(0), name), purpose: "user_data" });
  const refusedForCount = (e) => e.status === 413 && e.code === "quota_exceeded" &&
    e.error?.message === `This key holds ${MAX_FILES} files, as many as it may; delete some first.`;

  test("empty uploads and container files count: one past files.max_files_per_key is 413", async () => {
    const made = [];
    for (let i = 0; i < MAX_FILES - 1; i++) made.push(await empty(bob, `e${i}.txt`));
    // The last one a container file; then neither kind is taken.
    const box = await bob.containers.create({ name: "count" });
    const cf = await bob.containers.files.create(box.id, { file: await toFile(Buffer.alloc(0), "c.txt") });
    await assert.rejects(empty(bob, "one-more.txt"), refusedForCount);
    await assert.rejects(bob.containers.files.create(box.id, { file: await toFile(Buffer.alloc(0), "c2.txt") }),
      refusedForCount);
    await assert.rejects(bob.containers.files.create(box.id, { file_id: made[0].id }), refusedForCount);
    const r = await empty(bob, "x.txt").catch((e) => e);
    validate("ErrorResponse", { error: r.error });
    assert.equal(r.param, "file");
    assert.deepEqual(held(stack, KEYS.bob), { n: MAX_FILES, bytes: 0 });
    // Another key is not affected; deleting frees a place.
    await alice.files.delete((await empty(alice, "fine.txt")).id);
    await bob.containers.files.delete(cf.id, { container_id: box.id });
    await bob.files.delete((await empty(bob, "now.txt")).id);
    for (const m of made) await bob.files.delete(m.id);
    await bob.containers.delete(box.id);
    assert.equal(held(stack, KEYS.bob).n, 0);
  });

  test("uploads racing for a key's last files: exactly as many as it may hold", async () => {
    const all = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => empty(carol, `r${i}.txt`)));
    const ok = all.filter((x) => x.status === "fulfilled");
    assert.equal(ok.length, MAX_FILES, all.filter((x) => x.status === "rejected").map((x) => x.reason.message).join("\n"));
    assert.ok(all.filter((x) => x.status === "rejected").every((x) => refusedForCount(x.reason)));
    assert.deepEqual(held(stack, KEYS.carol), { n: MAX_FILES, bytes: 0 });
    for (const x of ok) await carol.files.delete(x.value.id);
  });

  test("the code's empty files: copied up to the key's most files, the rest told once", async () => {
    const r = await dave.responses.create(codeBody(
      "for i in range(30):\n    open('/mnt/data/f%02d.txt' % i, 'w').close()\nprint('wrote')"));
    const container = containerOf(r);
    const files = (await dave.containers.files.list(container)).data;
    assert.equal(files.length, MAX_FILES);
    assert.deepEqual(held(stack, DAVE), { n: MAX_FILES, bytes: 0 });
    // The model is told which were kept, and in one line what was not.
    for (const f of files) assert.ok(r.output_text.includes(`- ${f.path} (0 bytes)`), r.output_text);
    assert.match(r.output_text, new RegExp(`- /mnt/data/f\\d\\d\\.txt and ${29 - MAX_FILES} more \\(not kept: this key ` +
      `holds ${MAX_FILES} files, as many as it may\\)`));
    assert.match(stack.log(), new RegExp(`sandbox ${container}: ${30 - MAX_FILES} files not copied out: this key holds ` +
      `${MAX_FILES} files, as many as it may \\(files\\.max_files_per_key\\)`));
  });
});

describe("OpenSandbox fake", () => {
  let stack, alice;

  before(async () => {
    stack = await startStack({ sandboxes: true, interceptionTool: "osb", files: FILES });
    alice = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
  });
  after(async () => { await stack?.stop(); });

  test("a listing that says 1 byte for a 12 MiB file gets 1 byte's copy, which fails", async () => {
    // Both listings of the round (did anything change; what to copy) lie.
    await stack.fakeHook("osb", "faults", { search_size: { value: 1, count: 2 } });
    const r = await alice.responses.create(codeBody(
      `with open('/mnt/data/big.bin', 'wb') as f:\n    f.truncate(${BIG})\nprint('ok')`));
    assert.match(r.output_text, /ok/);
    const h = held(stack, KEYS.alice);
    assert.ok(h.bytes <= QUOTA, `the key holds ${h.bytes} bytes, past its quota of ${QUOTA}`);
    assert.deepEqual(h, { n: 0, bytes: 0 });
    assert.match(stack.log(), /files not copied out: \/mnt\/data\/big\.bin: it grew past the 1 bytes it was listed with/);
    // Listed as it is, it is refused for what it is: past the quota.
    const again = await alice.responses.create(codeBody(
      `with open('/mnt/data/big.bin', 'wb') as f:\n    f.truncate(${BIG})\nprint('ok')`));
    assert.match(again.output_text, /big\.bin \(not kept: this key's files are at their quota\)/);
    assert.deepEqual(held(stack, KEYS.alice), { n: 0, bytes: 0 });
  });
});
