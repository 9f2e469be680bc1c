// OpenAI's Containers API on sandgate with the official SDK unchanged:
// create (a name, file_ids put into /mnt/data), retrieve, list (pages,
// name filter), delete; a container is a sandbox (one id space) that
// "container": "cntr_..." in the tool runs in; per key.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { toFile } from "openai";
import { startStack, KEYS } from "./harness.mjs";
import { validate } from "./schema.mjs";

let stack, alice, bob;

before(async () => {
  stack = await startStack({ sandboxes: true, interceptionTool: "e2b" });
  alice = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
  bob = new OpenAI({ apiKey: KEYS.bob, baseURL: stack.url("/v1"), maxRetries: 0 });
});
after(async () => { await stack?.stop(); });

test("create with a file, run code in it by its id, retrieve, delete", async () => {
  const f = await alice.files.create({ file: await toFile(Buffer.from("a,b\n1,2\n"), "in.csv"), purpose: "user_data" });
  const c = await alice.containers.create({ name: "analysis", file_ids: [f.id] });
  validate("ContainerResource", c);
  assert.match(c.id, /^cntr_[0-9a-f]{32}$/);
  assert.equal(c.object, "container");
  assert.equal(c.name, "analysis");
  assert.equal(c.status, "running");
  assert.deepEqual(c.expires_after, { anchor: "last_active_at", minutes: 20 });
  const r = await alice.responses.create({ model: "ci-args", input: JSON.stringify({ code: "print(open('/mnt/data/in.csv').read().split()[1])" }),
    tools: [{ type: "code_interpreter", container: c.id }] });
  assert.match(r.output_text, /args result: 1,2/);
  const ci = r.output.find((o) => o.type === "code_interpreter_call");
  assert.equal(ci.container_id, c.id);
  const got = await alice.containers.retrieve(c.id);
  validate("ContainerResource", got);
  assert.equal(got.name, "analysis");
  // One id space: the sandbox routes see it too.
  assert.equal((await stack.call("GET", `/v1/sandboxes/${c.id}`)).status, 200);
  await alice.containers.delete(c.id);
  await assert.rejects(alice.containers.retrieve(c.id), (e) => e.status === 404 && /Container with id/.test(e.message));
  const s = await stack.fakeHook("e2b", "stats");
  assert.ok(!s.live.some((id) => s.history?.[id]?.metadata?.sandgate_id === c.id), "deleted at the provider");
});

test("list pages newest first and filters by name", async () => {
  const made = [];
  for (const name of ["one", "two", "three"]) made.push(await bob.containers.create({ name }));
  const page = await bob.containers.list({ limit: 2 });
  const raw = await stack.call("GET", "/v1/containers?limit=2", undefined, KEYS.bob);
  validate("ContainerListResource", raw.json);
  assert.equal(raw.json.has_more, true);
  assert.deepEqual(page.data.map((c) => c.name), ["three", "two"]);
  const all = [];
  for await (const c of bob.containers.list({ limit: 1 })) all.push(c.name);
  assert.deepEqual(all, ["three", "two", "one"]);
  assert.deepEqual((await bob.containers.list({ name: "two" })).data.map((c) => c.id), [made[1].id]);
  assert.deepEqual((await bob.containers.list({ order: "asc", limit: 1 })).data.map((c) => c.name), ["one"]);
  for (const c of made) await bob.containers.delete(c.id);
  assert.equal((await bob.containers.list()).data.length, 0);
});

test("another key's container is not found; bad bodies are 400; a bad file id leaves no container", async () => {
  const c = await alice.containers.create({ name: "mine" });
  await assert.rejects(bob.containers.retrieve(c.id), (e) => e.status === 404);
  await assert.rejects(bob.containers.delete(c.id), (e) => e.status === 404);
  await assert.rejects(bob.responses.create({ model: "ci-args", input: JSON.stringify({ code: "1" }),
    tools: [{ type: "code_interpreter", container: c.id }] }), (e) => e.status === 404);
  await alice.containers.delete(c.id);
  const before = (await alice.containers.list()).data.length;
  await assert.rejects(alice.containers.create({}), (e) => e.status === 400 && e.param === "name");
  await assert.rejects(alice.containers.create({ name: "x".repeat(300) }), (e) => e.status === 400);
  await assert.rejects(alice.containers.create({ name: "bad", file_ids: ["file-nope"] }),
    (e) => e.status === 404 && e.param === "file_ids");
  const theirs = await bob.files.create({ file: await toFile(Buffer.from("x"), "x.txt"), purpose: "user_data" });
  await assert.rejects(alice.containers.create({ name: "bad", file_ids: [theirs.id] }), (e) => e.status === 404);
  assert.equal((await alice.containers.list()).data.length, before, "no container was left");
});

test("a container's files: uploaded or copied from a file, in /mnt/data, listed, read back exactly, deleted", async () => {
  const c = await alice.containers.create({ name: "files" });
  const bytes = Buffer.from([0, 1, 2, 250, 251, 10, 65]);
  const up = await alice.containers.files.create(c.id, { file: await toFile(bytes, "raw.bin") });
  validate("ContainerFileResource", up);
  assert.match(up.id, /^cfile_[0-9a-f]{32}$/);
  assert.deepEqual([up.object, up.container_id, up.path, up.source, up.bytes],
    ["container.file", c.id, "/mnt/data/raw.bin", "user", bytes.length]);
  const f = await alice.files.create({ file: await toFile(Buffer.from("k,v\n1,2\n"), "table.csv"), purpose: "user_data" });
  const cp = await alice.containers.files.create(c.id, { file_id: f.id });
  assert.equal(cp.path, "/mnt/data/table.csv");
  const r = await alice.responses.create({ model: "ci-args", input: JSON.stringify({
    code: "print(open('/mnt/data/raw.bin','rb').read().hex(), open('/mnt/data/table.csv').read().split()[1])" }),
    tools: [{ type: "code_interpreter", container: c.id }] });
  assert.match(r.output_text, /000102fafb0a41 1,2/);
  const list = await alice.containers.files.list(c.id);
  assert.deepEqual(list.data.map((x) => x.id).sort(), [up.id, cp.id].sort());
  assert.deepEqual(await alice.containers.files.retrieve(up.id, { container_id: c.id }), up);
  const back = Buffer.from(await (await alice.containers.files.content.retrieve(up.id, { container_id: c.id })).arrayBuffer());
  assert.ok(back.equals(bytes), "the exact bytes");
  // Not reachable through another container, nor by another key.
  const other = await alice.containers.create({ name: "other" });
  await assert.rejects(alice.containers.files.retrieve(up.id, { container_id: other.id }), (e) => e.status === 404);
  await assert.rejects(bob.containers.files.list(c.id), (e) => e.status === 404);
  await assert.rejects(bob.containers.files.create(c.id, { file_id: f.id }), (e) => e.status === 404);
  await assert.rejects(alice.containers.files.create(c.id, { file_id: "file-nope" }), (e) => e.status === 404);
  await alice.containers.files.delete(up.id, { container_id: c.id });
  await assert.rejects(alice.containers.files.retrieve(up.id, { container_id: c.id }), (e) => e.status === 404);
  // Deleting the uploaded file leaves the container's copy whole.
  await alice.files.delete(f.id);
  const copyBack = await (await alice.containers.files.content.retrieve(cp.id, { container_id: c.id })).text();
  assert.equal(copyBack, "k,v\n1,2\n");
  for (const x of [c, other]) await alice.containers.delete(x.id);
});
