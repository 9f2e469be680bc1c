// `sandgate migrate --to URL`: the one box's SQLite store copied into an
// empty PostgreSQL database, which a gateway then serves from: a key made
// on the SQLite store authenticates there, a revoked one does not, and a
// second copy into the same database is refused with nothing changed.
// Needs SG_PG (the PostgreSQL pass of make test).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import { spawnSync } from "node:child_process";
import { startStack, storeKind, psql, pgDatabaseUrl, root } from "./harness.mjs";

const skip = storeKind !== "postgresql" && "needs SG_PG (the PostgreSQL pass of make test)";
const build = path.resolve(root, process.env.SG_BUILD || "build");
let dir, conf, url, dbName, stack;

// The sandgate command on the SQLite store's config.
function sandgate(...args) {
  return spawnSync(`${build}/sandgate`, ["--config", conf, ...args], { encoding: "utf8", timeout: 60000 });
}

before(() => {
  if (skip) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sgmig-"));
  conf = `${dir}/sandgate.conf`;
  fs.writeFileSync(conf, `store: { path = "${dir}/store/sandgate.db"; };\n`);
  dbName = "sgmig_" + crypto.randomBytes(6).toString("hex");
  psql(process.env.SG_PG, `CREATE DATABASE ${dbName}`);
  url = pgDatabaseUrl(process.env.SG_PG, dbName);
});
after(async () => {
  if (skip) return;
  await stack?.stop();
  psql(process.env.SG_PG, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  fs.rmSync(dir, { recursive: true, force: true });
});

test("a SQLite store copied into PostgreSQL serves its keys there; a second copy is refused", { skip }, async () => {
  const made = sandgate("keys", "create", "moved");
  assert.equal(made.status, 0, made.stderr);
  const key = made.stdout.trim();
  assert.match(key, /^sk-sg-/);
  const old = sandgate("keys", "create", "old").stdout.trim();
  assert.equal(sandgate("keys", "revoke", "old").status, 0);

  const copy = sandgate("migrate", "--to", url);
  assert.equal(copy.status, 0, copy.stderr);
  assert.match(copy.stdout, /^copied 2 rows \(schema \d+\)/);
  assert.equal(psql(url, "SELECT string_agg(name || ':' || (revoked_at IS NULL)::text, ',' ORDER BY id) FROM keys").trim(),
    "moved:true,old:false");

  // A gateway on the copy: the moved key is a key there, the revoked one not.
  stack = await startStack({ storeUrl: url });
  const ok = await stack.call("GET", "/v1/sandboxes", undefined, key);
  assert.equal(ok.status, 200, ok.text);
  const no = await stack.call("GET", "/v1/sandboxes", undefined, old);
  assert.equal(no.status, 401, no.text);

  // Into a database that holds rows: refused, and it says why.
  const again = sandgate("migrate", "--to", url);
  assert.equal(again.status, 1);
  assert.match(again.stderr, /not empty.*nothing was copied/);
  assert.equal(psql(url, "SELECT count(*) FROM keys").trim(), "2");
});

test("migrate --to a server that does not answer fails clearly, naming no password", { skip }, async () => {
  const r = sandgate("migrate", "--to", "postgresql://someone:s3cret@/nowhere?host=/nonexistent-dir");
  assert.equal(r.status, 1);
  assert.match(r.stderr, /does not answer/);
  assert.doesNotMatch(r.stderr + r.stdout, /s3cret/);
});
