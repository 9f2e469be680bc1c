// sandgate keys set, keys usage and keys list's limits and spend, against
// a live gateway's store: what `keys set` writes is what the admin API
// then shows (one way to change a key), a config key and bad values are
// refused and change nothing; `keys usage` sums the ledger by key, model
// and day as the requests made spent, and `keys list` shows the period's
// spend.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { spawnSync } from "node:child_process";
import { startStack, KEYS, request, waitFor } from "./harness.mjs";

const ADMIN = "sk-admin-" + crypto.randomBytes(8).toString("hex");
const sha256 = (s) => crypto.createHash("sha256").update(s).digest("hex");
const PRICED = 'price = { input = 1000.0; output = 2000.0; };';

let stack;

before(async () => {
  stack = await startStack({ models: (model) => model("priced", "echo", PRICED) });
  await stack.reload((c) => c.replace(/^auth: \{$/m,
    `auth: {\n  admin_keys = ( { name = "ops"; key_sha256 = "${sha256(ADMIN)}"; } );`));
});
after(async () => { await stack?.stop(); });

function cli(...args) {
  const r = spawnSync(`${stack.dir}/bin/sandgate`, ["--config", `${stack.dir}/sandgate.conf`, ...args],
    { encoding: "utf8", env: stack.env, timeout: 30000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// The admin API's object of the key named name.
async function apiKey(name) {
  const r = await request(stack, "GET", "/v1/organization/api_keys?limit=100", { key: ADMIN });
  assert.equal(r.status, 200, r.text);
  return r.json.data.find((k) => k.name === name);
}

const respond = (key, model, input) =>
  request(stack, "POST", "/v1/responses", { key, body: JSON.stringify({ model, input }) });

test("keys set changes a store key's limits as the admin API shows them; refused changes change nothing", async () => {
  const made = cli("keys", "create", "eve");
  assert.equal(made.code, 0, made.err);
  const secret = made.out.trim();
  // Made as the admin API makes keys: its redacted form kept.
  assert.equal((await apiKey("eve")).redacted_value, `sk-sg-...${secret.slice(-4)}`);

  const set = cli("keys", "set", "eve", "--rpm", "60", "--budget", "5", "--period", "week", "--tools", "local");
  assert.equal(set.code, 0, set.err);
  assert.match(set.out, /^eve\n {4}limits: rpm 60, tpm none, budget \$5\.00 a week, sandbox_seconds none, max_concurrent none, tools local\n {4}this week \(since \d{4}-\d\d-\d\d\): \$0\.0000, 0 tokens, 0\.0 s of sandbox, 0 requests\n$/);
  assert.deepEqual((await apiKey("eve")).limits, { rpm: 60, budget: 5, budget_period: "week", tools: ["local"] });

  const more = cli("keys", "set", "eve", "--clear", "rpm", "--all-tools", "--max-concurrent", "2", "--sandbox-seconds", "600");
  assert.equal(more.code, 0, more.err);
  const eve = await apiKey("eve");
  assert.deepEqual(eve.limits, { budget: 5, budget_period: "week", sandbox_seconds: 600, max_concurrent: 2 });
  assert.equal(eve.effective_limits.tools.length, 2, "every tool again");

  for (const [args, why] of [
    [["--rpm", "lots"], /--rpm takes a whole number/],
    [["--rpm", "-3"], /'rpm' must be an integer from 0/],
    [["--budget", "five"], /--budget takes US dollars/],
    [["--period", "year"], /'budget_period' must be one of day, week or month/],
    [["--tools", "local,nope"], /no sandbox tool named 'nope'/],
    [["--max-concurrent", "0"], /'max_concurrent' must be an integer from 1/],
    [["--clear", "colour"], /--clear takes a setting/],
  ]) {
    const r = cli("keys", "set", "eve", ...args);
    assert.equal(r.code, 1, `${args}: ${r.out}${r.err}`);
    assert.match(r.err, why);
    assert.equal(r.out, "");
  }
  assert.deepEqual((await apiKey("eve")).limits, eve.limits, "nothing changed");

  const cfgKey = cli("keys", "set", "alice", "--rpm", "5");
  assert.equal(cfgKey.code, 1);
  assert.match(cfgKey.err, /alice is set in the config file .*sandgate\.conf.*change it there/);
  assert.deepEqual((await apiKey("alice")).limits, { max_concurrent: 8 });
  const nobody = cli("keys", "set", "nobody", "--rpm", "5");
  assert.equal(nobody.code, 1);
  assert.match(nobody.err, /No active key is named nobody/);
  assert.equal(cli("keys", "set", "eve").code, 2, "no option: the usage");
  assert.equal(cli("keys", "set", "eve", "--rpm").code, 2, "an option without its value: the usage");

  // The key still works, held to its new settings.
  assert.equal((await respond(secret, "gpt-test", "hi")).status, 200);
  const rev = cli("keys", "revoke", "eve");
  assert.equal(rev.code, 0, rev.err);
  const cfgRev = cli("keys", "revoke", "alice");
  assert.equal(cfgRev.code, 1);
  assert.match(cfgRev.err, /config file/);
});

// One table of keys usage: {header, rows: [[cells]], total: [cells]}.
function table(out) {
  const lines = out.trim().split("\n").map((l) => l.trim().split(/\s+/));
  return { header: lines[0], rows: lines.slice(1, -1), total: lines.at(-1) };
}

test("keys usage sums the ledger by key, model and day; keys list shows the period's spend", async () => {
  const made = cli("keys", "create", "frank");
  assert.equal(made.code, 0, made.err);
  const frank = made.out.trim();
  const answers = [];
  for (const [key, model, input] of [[KEYS.alice, "priced", "one two three"], [KEYS.alice, "priced", "four"],
    [frank, "gpt-test", "five six"]]) {
    const r = await respond(key, model, input);
    assert.equal(r.status, 200, r.text);
    answers.push({ key, model, usage: r.json.usage });
  }
  // The reaper writes the ledger within a moment: poll, bounded.
  let byKey;
  await waitFor(() => {
    const r = cli("keys", "usage");
    assert.equal(r.code, 0, r.err);
    byKey = table(r.out);
    return byKey.rows.find((x) => x[0] === "alice")?.[2] === "2" && byKey.rows.find((x) => x[0] === "frank")?.[2] === "1";
  }, "the three requests in the ledger", 15000);
  assert.deepEqual(byKey.header, ["KEY", "ID", "REQUESTS", "MODEL_CALLS", "INPUT", "CACHED", "OUTPUT", "CODE_RUNS",
    "SANDBOX_S", "COST_USD"]);
  const sum = (list, f) => list.reduce((a, x) => a + f(x), 0);
  const of = (key) => answers.filter((a) => a.key === key);
  const alice = byKey.rows.find((r) => r[0] === "alice");
  const fr = byKey.rows.find((r) => r[0] === "frank");
  assert.equal(alice[1], (await apiKey("alice")).id, "the ledger's key id is the admin API's");
  assert.equal(fr[1], (await apiKey("frank")).id);
  assert.deepEqual(alice.slice(2, 5).map(Number), [2, 2, sum(of(KEYS.alice), (a) => a.usage.input_tokens)]);
  assert.equal(Number(alice[6]), sum(of(KEYS.alice), (a) => a.usage.output_tokens));
  const usd = sum(of(KEYS.alice), (a) => a.usage.input_tokens * 1000 + a.usage.output_tokens * 2000) / 1e6;
  assert.equal(alice[9], usd.toFixed(4));
  assert.deepEqual(fr.slice(2, 4).map(Number), [1, 1]);
  assert.equal(fr[9], "0.0000", "gpt-test has no price");
  // The total is the sum of the lines, column by column.
  for (let c = 2; c < 9; c++)
    assert.equal(Number(byKey.total[c - 1]), sum(byKey.rows, (r) => Number(r[c])), byKey.header[c]);

  const byModel = table(cli("keys", "usage", "--by", "model", "--days", "1").out);
  assert.equal(byModel.header[0], "MODEL");
  assert.equal(Number(byModel.rows.find((r) => r[0] === "priced")[1]), 2);
  assert.ok(Number(byModel.rows.find((r) => r[0] === "gpt-test")[1]) >= 1);
  const byDay = table(cli("keys", "usage", "--by", "day", "--days", "7").out);
  assert.equal(byDay.header[0], "DAY");
  const today = new Date().toISOString().slice(0, 10);
  assert.deepEqual(byDay.rows.map((r) => r[0]), [today], "one day had requests");
  assert.equal(Number(byDay.rows[0][1]), Number(byKey.total[1]));

  for (const bad of [["--days", "0"], ["--days", "x"]]) {
    const r = cli("keys", "usage", ...bad);
    assert.equal(r.code, 1, bad.join(" "));
    assert.match(r.err, /--days takes a number of days/);
  }
  assert.equal(cli("keys", "usage", "--by", "week").code, 2);

  // keys list: under alice, this month's spend as the ledger has it.
  const list = cli("keys", "list");
  assert.equal(list.code, 0, list.err);
  const tokens = sum(of(KEYS.alice), (a) => a.usage.input_tokens + a.usage.output_tokens);
  const month = today.slice(0, 8) + "01";
  assert.match(list.out, new RegExp(`^alice\\s.*\\n {4}limits: .*max_concurrent 8, tools all\\n {4}this month \\(since ${month}\\): \\$${usd.toFixed(4)}, ${tokens} tokens, 0\\.0 s of sandbox, 2 requests$`, "m"));
  assert.match(list.out, /^frank\s+[0-9a-f]{12}…\s+created \S+\s+active\n {4}limits: /m);
  assert.ok(!list.out.includes(frank), "never the key");
});
