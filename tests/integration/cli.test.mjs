// The command line tool against the live gateway's store.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import OpenAI from "openai";
import { startStack, serviceUser, KEYS, waitFor, storeKind } from "./harness.mjs";

let stack;
// Tests of the SQLite file itself (SG_PG runs the store on PostgreSQL).
const sqliteOnly = storeKind !== "sqlite" && "the store is a SQLite file only without SG_PG";

before(async () => {
  stack = await startStack({ models: (model) => model("echo-gw", "nostate-echo", 'state = "gateway";') });
});
after(async () => { await stack?.stop(); });

function cli(...args) {
  const r = spawnSync(`${stack.dir}/bin/sandgate`, ["--config", `${stack.dir}/sandgate.conf`, ...args],
    { encoding: "utf8", env: { ...process.env, SG_TEST_KEY_ALICE: "unused" } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

async function models(key) {
  const c = new OpenAI({ apiKey: key, baseURL: stack.url("/v1"), maxRetries: 0 });
  return c.models.list();
}

test("keys create prints a key once; it works; list never shows it; revoke stops it", async () => {
  const made = cli("keys", "create", "dave");
  assert.equal(made.code, 0, made.err);
  const key = made.out.trim();
  assert.match(key, /^sk-sg-[0-9a-f]{48}$/);
  assert.ok((await models(key)).data.length > 0);
  // The line is written once the answer is out: wait for it.
  await waitFor(() => /key=dave method=GET path=\/v1\/models /.test(stack.log()), "the request's log line");

  const list = cli("keys", "list");
  assert.equal(list.code, 0, list.err);
  assert.match(list.out, /^dave\s+[0-9a-f]{12}…\s+created \S+\s+active$/m);
  assert.match(list.out, /^alice\s/m, "config keys listed too");
  assert.ok(!list.out.includes(key), "the key itself is never shown again");

  const again = cli("keys", "create", "dave");
  assert.equal(again.code, 1);
  assert.match(again.err, /active key named dave exists/);

  const rev = cli("keys", "revoke", "dave");
  assert.equal(rev.code, 0, rev.err);
  await assert.rejects(models(key), (e) => e.status === 401);
  assert.equal(cli("keys", "revoke", "dave").code, 1, "nothing left to revoke");
});

test("run as root, the tool leaves every store file owned by the service user", { skip: sqliteOnly || process.getuid() !== 0 }, () => {
  assert.equal(cli("keys", "create", "erin").code, 0);
  const dir = `${stack.dir}/state/store`;
  const uid = Number(spawnSync("id", ["-u", serviceUser], { encoding: "utf8" }).stdout.trim());
  const files = fs.readdirSync(dir);
  assert.ok(files.includes("sandgate.db"));
  for (const f of files) assert.equal(fs.statSync(`${dir}/${f}`).uid, uid, `${f} owned by ${serviceUser}`);
});

test("keys create before the gateway ever ran makes the store's directory, private", { skip: sqliteOnly }, () => {
  const parent = fs.mkdtempSync(`${stack.dir}/fresh-`);
  if (process.getuid() === 0) {
    const id = (o) => Number(spawnSync("id", [o, serviceUser], { encoding: "utf8" }).stdout.trim());
    fs.chownSync(parent, id("-u"), id("-g"));
  }
  const conf = `${parent}/sandgate.conf`;
  fs.writeFileSync(conf, fs.readFileSync(`${stack.dir}/sandgate.conf`, "utf8")
    .replace(/store: \{ path = "[^"]*"; \};/, `store: { path = "${parent}/state/sandgate.db"; };`));
  const r = spawnSync(`${stack.dir}/bin/sandgate`, ["--config", conf, "keys", "create", "first"],
    { encoding: "utf8", env: { ...process.env, SG_TEST_KEY_ALICE: "unused" } });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^sk-sg-/);
  assert.equal(fs.statSync(`${parent}/state`).mode & 0o777, 0o700);
  assert.ok(fs.existsSync(`${parent}/state/sandgate.db`));
});

test("check-config: ok, unknown keys are errors with file:line, syntax errors too", () => {
  const good = `${stack.dir}/good.conf`;
  fs.writeFileSync(good, 'models = ( { name = "m"; api_base = "http://127.0.0.1:9/v1"; } );\n');
  const ok = cli("--config", good, "check-config");
  assert.equal(ok.code, 0, ok.err);
  assert.match(ok.out, /ok \(1 models/);

  const unknown = `${stack.dir}/unknown.conf`;
  fs.writeFileSync(unknown, 'server: {\n  workers = [1, 2];\n  wrokers = 3;\n};\n');
  const u = cli("--config", unknown, "check-config");
  assert.equal(u.code, 1);
  assert.match(u.err, /unknown\.conf:3: unknown setting server\.wrokers/);

  const broken = `${stack.dir}/broken.conf`;
  fs.writeFileSync(broken, 'server: {\n  workers = [1, ;\n};\n');
  const b = cli("--config", broken, "check-config");
  assert.equal(b.code, 1);
  assert.match(b.err, /broken\.conf:2: /);
});

test("backup: consistent copies of the store taken while it serves, under load", { skip: sqliteOnly }, async () => {
  const store = `${stack.dir}/state/store`;
  const count = (db) => {
    const r = spawnSync("sqlite3", [db, "SELECT count(*) FROM responses"], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    return Number(r.stdout.trim());
  };
  const before = count(`${store}/sandgate.db`);
  // Load that writes the store: every answer of a gateway-state model is
  // stored for previous_response_id.
  let sent = 0;
  const statuses = {};
  const load = Promise.all(Array.from({ length: 6 }, async () => {
    while (sent < 150) {
      sent++;
      const r = await fetch(stack.url("/v1/responses"), { method: "POST",
        headers: { authorization: `Bearer ${KEYS.alice}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "echo-gw", input: `load ${sent}` }) });
      await r.text();
      statuses[r.status] = (statuses[r.status] || 0) + 1;
    }
  }));
  const backups = [];
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 150));
    const copy = `${store}/copy-${i}.db`;
    backups.push(await new Promise((resolve) => {
      const p = spawn(`${stack.dir}/bin/sandgate`, ["--config", `${stack.dir}/sandgate.conf`, "backup", copy]);
      let out = "", err = "";
      p.stdout.on("data", (d) => { out += d; });
      p.stderr.on("data", (d) => { err += d; });
      p.on("close", (code) => resolve({ code, out, err, copy }));
    }));
  }
  await load;
  assert.deepEqual(statuses, { 200: 150 }, "the gateway served throughout");
  const after = count(`${store}/sandgate.db`);
  let last = before;
  for (const b of backups) {
    assert.equal(b.code, 0, b.err);
    assert.match(b.out, /^backed up \d+ pages to /);
    const check = spawnSync("sqlite3", [b.copy, "PRAGMA integrity_check"], { encoding: "utf8" });
    assert.equal(check.stdout.trim(), "ok");
    const n = count(b.copy);
    assert.ok(n >= last && n <= after, `copy ${b.copy}: ${n} responses, between ${last} and ${after}`);
    last = n;
    assert.ok(!fs.existsSync(`${b.copy}-wal`), "a copy is one file");
    fs.rmSync(b.copy);
  }
  assert.ok(after >= before + 150);
});
