// Files the code writes: after each round, new or changed files under
// /mnt/data become container files (cfile_..., source "assistant") that
// stay downloadable once the sandbox is gone; the model is told their
// paths; the answer's links to them (sandbox:/mnt/data/...) carry
// container_file_citation annotations with code-point indexes, in JSON
// and streamed; hidden files, caches and the user's own files are not
// copied. On the local sandbox, e2b and OpenSandbox (their fakes).
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { toFile } from "openai";
import { startStack, KEYS } from "./harness.mjs";
import { validate } from "./schema.mjs";

const CSV = "x,y\n1,2\n3,4\n";
// A 1x1 PNG, and bytes that are not UTF-8.
const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
  "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e227e1a10000000049454e44ae426082", "hex");
const OUT = "x,y2\n1,4\n3,8\n";
const WRITE = [
  "import csv, os",
  "rows = list(csv.DictReader(open('/mnt/data/data.csv')))",
  "open('/mnt/data/out.csv', 'w').write('x,y2\\n' + ''.join('%s,%d\\n' % (r['x'], 2 * int(r['y'])) for r in rows))",
  `open('/mnt/data/plot.png', 'wb').write(bytes.fromhex('${PNG.toString("hex")}'))`,
  "os.makedirs('/mnt/data/.cache', exist_ok=True); open('/mnt/data/.cache/c', 'w').write('c')",
  "open('/mnt/data/.secret', 'w').write('s')",
  "os.makedirs('/mnt/data/__pycache__', exist_ok=True); open('/mnt/data/__pycache__/m.pyc', 'w').write('p')",
  // Characters past ASCII before the links: indexes count code points.
  "print('Caf\\u00e9 \\u2019 \\U0001F600: [the table](sandbox:/mnt/data/out.csv) and ![plot](sandbox:/mnt/data/plot.png).')",
].join("\n");

const CODE = [{ type: "code_interpreter", container: { type: "auto" } }];
const LINK = /sandbox:\/mnt\/data\/[^\s)\]"'<>`|*]+/g;

// Each annotation covers exactly its link, counted in code points.
function checkCitations(part, files, container) {
  const cps = [...part.text];
  const anns = part.annotations.filter((a) => a.type === "container_file_citation");
  const links = [...part.text.matchAll(LINK)].map((m) => m[0].replace(/[.,;:!?]+$/, ""))
    .filter((l) => files.some((f) => "sandbox:" + f.path === l));
  assert.equal(anns.length, links.length, JSON.stringify(part));
  anns.forEach((a, i) => {
    const f = files.find((x) => x.id === a.file_id);
    assert.ok(f, `${a.file_id} is one of the container's files`);
    assert.equal(a.container_id, container);
    assert.equal(a.filename, f.path.split("/").pop());
    assert.equal(cps.slice(a.start_index, a.end_index).join(""), "sandbox:" + f.path);
    assert.equal(links[i], "sandbox:" + f.path);
  });
  return anns;
}

const bytesOf = async (client, id, container) =>
  Buffer.from(await (await client.containers.files.content.retrieve(id, { container_id: container })).arrayBuffer());

for (const provider of ["local", "e2b", "osb"]) {
  describe(provider, () => {
    let stack, alice, bob, data;

    before(async () => {
      stack = await startStack({ sandboxes: true, interceptionTool: provider, files: "max_bytes = 4096;",
        models: (m) => m("verbatim", "verbatim") });
      alice = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
      bob = new OpenAI({ apiKey: KEYS.bob, baseURL: stack.url("/v1"), maxRetries: 0 });
      data = await alice.files.create({ file: await toFile(Buffer.from(CSV), "data.csv"), purpose: "user_data" });
    });
    after(async () => { await stack?.stop(); });

    const body = (code, more = {}) => ({
      model: "ci-args", input: JSON.stringify({ code }), include: ["code_interpreter_call.outputs"],
      tools: [{ type: "code_interpreter", container: { type: "auto", file_ids: [data.id] } }], ...more,
    });

    async function checkFiles(r) {
      const call = r.output.find((o) => o.type === "code_interpreter_call");
      const container = call.container_id;
      const msg = r.output.find((o) => o.type === "message");
      const files = (await alice.containers.files.list(container)).data;
      // The code's two files, not the user's data.csv, nor hidden ones or caches.
      assert.deepEqual(files.map((f) => f.path).sort(), ["/mnt/data/out.csv", "/mnt/data/plot.png"]);
      for (const f of files) {
        validate("ContainerFileResource", f);
        assert.equal(f.source, "assistant");
        assert.equal(f.container_id, container);
      }
      const anns = checkCitations(msg.content[0], files, container);
      assert.ok(anns.some((a) => a.filename === "out.csv") && anns.some((a) => a.filename === "plot.png"));
      // The model was told which files there are, and how to link them.
      assert.match(msg.content[0].text, /files written to \/mnt\/data this round:\n- \/mnt\/data\/out\.csv \(13 bytes\)/);
      const out = files.find((f) => f.path.endsWith("out.csv")), png = files.find((f) => f.path.endsWith(".png"));
      assert.equal(out.bytes, OUT.length);
      // The container is kept for the conversation's follow-ups.
      assert.equal((await alice.containers.retrieve(container)).id, container);
      assert.equal((await bytesOf(alice, out.id, container)).toString(), OUT);
      assert.deepEqual(await bytesOf(alice, png.id, container), PNG);
      // Another key sees none of it.
      await assert.rejects(bytesOf(bob, out.id, container), (e) => e.status === 404);
      await assert.rejects(bob.containers.files.list(container), (e) => e.status === 404);
      return { container, files };
    }

    test("JSON: the code's files are container files, cited where the answer links them", async () => {
      const r = await alice.responses.create(body(WRITE));
      validate("Response", r);
      assert.match(r.output_text, /Café ’ 😀: \[the table\]\(sandbox:\/mnt\/data\/out\.csv\)/);
      await checkFiles(r);
    });

    test("streamed: annotation events after the text, the same annotations in every later event", async () => {
      const stream = alice.responses.stream(body(WRITE));
      const events = [];
      for await (const e of stream) events.push(e);
      const final = await stream.finalResponse();
      for (const e of events) validate("ResponseStreamEvent", e);
      const added = events.filter((e) => e.type === "response.output_text.annotation.added");
      const textDone = events.findIndex((e) => e.type === "response.output_text.done");
      const lastDelta = events.findLastIndex((e) => e.type === "response.output_text.delta");
      assert.ok(added.length >= 2, "an annotation event per link");
      for (const e of added) {
        const i = events.indexOf(e);
        assert.ok(i > lastDelta && i < textDone, "after the last delta, before output_text.done");
      }
      assert.deepEqual(added.map((e) => e.annotation_index), added.map((_, i) => i));
      const anns = added.map((e) => e.annotation);
      const partDone = events.find((e) => e.type === "response.content_part.done" && e.part.type === "output_text");
      assert.deepEqual(partDone.part.annotations, anns);
      const itemDone = events.find((e) => e.type === "response.output_item.done" && e.item.type === "message");
      assert.deepEqual(itemDone.item.content[0].annotations, anns);
      const msg = final.output.find((o) => o.type === "message");
      assert.deepEqual(msg.content[0].annotations, anns);
      await checkFiles(final);
    });

    test("a file past files.max_bytes is not kept, and the model is told", async () => {
      const r = await alice.responses.create(body("open('/mnt/data/big.bin', 'wb').write(b'x' * 5000)\nprint('ok')"));
      assert.match(r.output_text, /big\.bin \(not kept: larger than the 4096 bytes a file may have\)/);
      const call = r.output.find((o) => o.type === "code_interpreter_call");
      assert.deepEqual((await alice.containers.files.list(call.container_id)).data, []);
    });

    test("a session's later requests copy only what changed; a rewritten file replaces its copy", async () => {
      const session = { metadata: { session_id: `files-${provider}` } };
      const ask = (code) => alice.responses.create(body(code, session));
      // A relative name: the working directory is /mnt/data on every provider.
      const r1 = await ask("open('a.txt', 'w').write('one')\nprint('a')");
      const container = r1.output.find((o) => o.type === "code_interpreter_call").container_id;
      const list = async () => (await alice.containers.files.list(container)).data;
      const first = await list();
      assert.deepEqual(first.map((f) => f.path), ["/mnt/data/a.txt"]);
      const r2 = await ask("open('/mnt/data/b.txt', 'w').write('two')\nprint('b')");
      assert.match(r2.output_text, /- \/mnt\/data\/b\.txt \(3 bytes\)/);
      assert.doesNotMatch(r2.output_text, /a\.txt/, "unchanged: not copied again");
      assert.deepEqual((await list()).map((f) => f.path).sort(), ["/mnt/data/a.txt", "/mnt/data/b.txt"]);
      const r3 = await ask("open('/mnt/data/a.txt', 'w').write('three!')\nprint('c')");
      assert.match(r3.output_text, /- \/mnt\/data\/a\.txt \(6 bytes\)/);
      const now = await list();
      assert.equal(now.length, 2);
      const a = now.find((f) => f.path === "/mnt/data/a.txt");
      assert.notEqual(a.id, first[0].id);
      assert.equal((await bytesOf(alice, a.id, container)).toString(), "three!");
      await assert.rejects(bytesOf(alice, first[0].id, container), (e) => e.status === 404);
      // A later request that runs no code still cites the session's files
      // (the fake's verbatim model answers the input itself).
      const again = await alice.responses.create({ model: "verbatim", ...session, tools: CODE,
        input: "Here it is again: [a](sandbox:/mnt/data/a.txt)" });
      const part = again.output.find((o) => o.type === "message").content[0];
      assert.deepEqual(part.annotations.map((x) => [x.file_id, x.container_id, x.start_index, x.end_index]),
        [[a.id, container, 22, 45]], JSON.stringify(part));
      // Deleting the container deletes its files, as OpenAI's does.
      await alice.containers.delete(container);
      await assert.rejects(bytesOf(alice, a.id, container), (e) => e.status === 404);
    });

    test("Chat: the text keeps the links", async () => {
      const r = await alice.chat.completions.create({
        model: "ci-args", messages: [{ role: "user", content: JSON.stringify({ code: WRITE }) }],
        tools: [{ type: "code_interpreter", container: { type: "auto", file_ids: [data.id] } }],
      });
      assert.match(r.choices[0].message.content, /\[the table\]\(sandbox:\/mnt\/data\/out\.csv\)/);
      assert.match(r.choices[0].message.content, /files written to \/mnt\/data this round/);
    });
  });
}
