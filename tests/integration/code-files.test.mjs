// Files given to the code interpreter: a CSV uploaded with files.create
// and named in the tool's container.file_ids is in the sandbox's /mnt/data
// before the model's code runs, on the local sandbox, e2b and OpenSandbox
// (their fakes); another key's file, or a bad list, is refused before any
// upstream call.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { toFile } from "openai";
import { startStack, KEYS } from "./harness.mjs";

const CSV = "x,y\n1,2\n3,4\n";
const SUM = "import csv\nprint(sum(int(r['y']) for r in csv.DictReader(open('/mnt/data/data.csv'))))";

for (const provider of ["local", "e2b", "osb"]) {
  describe(provider, () => {
    let stack, alice, bob, file;

    before(async () => {
      stack = await startStack({ sandboxes: true, interceptionTool: provider });
      alice = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
      bob = new OpenAI({ apiKey: KEYS.bob, baseURL: stack.url("/v1"), maxRetries: 0 });
      file = await alice.files.create({ file: await toFile(Buffer.from(CSV), "data.csv"), purpose: "user_data" });
    });
    after(async () => { await stack?.stop(); });

    const ask = (client, code, fileIds) => client.responses.create({
      model: "ci-args", input: JSON.stringify({ code }),
      tools: [{ type: "code_interpreter", container: { type: "auto", ...(fileIds ? { file_ids: fileIds } : {}) } }],
    });

    test("the code reads the uploaded file at /mnt/data/<its name>", async () => {
      const r = await ask(alice, SUM, [file.id]);
      assert.match(r.output_text, /args result: 6\b/, JSON.stringify(r.output));
    });

    test("the working directory is /mnt/data: a relative name finds the file", async () => {
      const r = await ask(alice, "import os\nprint(os.getcwd(), open('data.csv').read().count(','))", [file.id]);
      assert.match(r.output_text, /\/mnt\/data 3/, JSON.stringify(r.output));
    });

    test("without file_ids the file is not there", async () => {
      const r = await ask(alice, "import os\nprint(os.path.exists('/mnt/data/data.csv'))");
      assert.match(r.output_text, /False/);
    });

    test("two files, one of them binary, both whole", async () => {
      const bin = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
      const f2 = await alice.files.create({ file: await toFile(bin, "raw.bin"), purpose: "assistants" });
      const r = await ask(alice, "print(open('/mnt/data/raw.bin','rb').read().hex(), open('/mnt/data/data.csv').read().count(','))",
        [file.id, f2.id]);
      assert.match(r.output_text, /000102fffe0a0d 3/);
      await alice.files.delete(f2.id);
    });

    test("another key's file id is 404 before the model is asked", async () => {
      const before = (await stack.fakeRequests()).length;
      await assert.rejects(ask(bob, SUM, [file.id]), (e) => e.status === 404 && /No such File object/.test(e.message));
      assert.equal((await stack.fakeRequests()).length, before, "no upstream call");
      await assert.rejects(ask(alice, SUM, "file-x"), (e) => e.status === 400);
      await assert.rejects(ask(alice, SUM, [1]), (e) => e.status === 400);
    });
  });
}
