// /metrics: valid Prometheus text, and counters that move with what the
// gateway did — requests by route and status summed over every responder,
// loop rounds, sandbox creates/deletes/failures by tool, the sweep, and
// the upstream and sandbox latency histograms.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startStack, KEYS, waitFor } from "./harness.mjs";

let stack, client;

before(async () => {
  stack = await startStack({ sandboxes: true });
  client = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
});
after(async () => { await stack?.stop(); });

// Parse the exposition text, checking its grammar as it goes: every
// sample's family declared by HELP and TYPE first, names and labels well
// formed, values numbers, no sample twice.
function parse(text) {
  const samples = new Map(), types = new Map();
  const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    let m;
    if ((m = line.match(/^# (HELP|TYPE) (\S+) (.+)$/))) {
      assert.match(m[2], NAME, line);
      if (m[1] === "TYPE") {
        assert.ok(["counter", "gauge", "histogram"].includes(m[3]), line);
        assert.ok(!types.has(m[2]), `TYPE twice: ${line}`);
        types.set(m[2], m[3]);
      }
      continue;
    }
    m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\})? (\S+)$/);
    assert.ok(m, `not a sample: ${line}`);
    const family = m[1].replace(/_(bucket|sum|count)$/, (s) => (types.has(m[1]) ? s : ""));
    assert.ok(types.has(m[1]) || types.has(family), `no TYPE before ${line}`);
    if (m[2]) for (const l of m[2].slice(1, -1).match(/[^=,]+="(?:[^"\\]|\\.)*"|[^,]+/g))
      assert.match(l, /^[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"$/, line);
    assert.ok(Number.isFinite(Number(m[3])), line);
    const key = m[1] + (m[2] ?? "");
    assert.ok(!samples.has(key), `sample twice: ${key}`);
    samples.set(key, Number(m[3]));
  }
  return samples;
}

async function scrape() {
  const r = await fetch(stack.url("/metrics"));
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type"), /^text\/plain; version=0\.0\.4/);
  return parse(await r.text());
}

const val = (s, key) => s.get(key) ?? 0;
const req = (route, code, method = "POST") =>
  `sandgate_http_requests_total{method="${method}",route="${route}",code="${code}"}`;

// Each histogram: buckets cumulative, +Inf equal to _count.
function checkHistograms(s) {
  const series = new Map();
  for (const [k, v] of s) {
    const m = k.match(/^(\w+)_bucket\{(.*?),?le="([^"]+)"\}$/);
    if (!m) continue;
    const id = `${m[1]}{${m[2]}}`;
    if (!series.has(id)) series.set(id, []);
    series.get(id).push([m[3] === "+Inf" ? Infinity : Number(m[3]), v]);
  }
  assert.ok(series.size > 0, "no histograms");
  for (const [id, b] of series) {
    for (let i = 1; i < b.length; i++) {
      assert.ok(b[i][0] > b[i - 1][0], `${id}: bounds ascend`);
      assert.ok(b[i][1] >= b[i - 1][1], `${id}: buckets are cumulative`);
    }
    assert.equal(b.at(-1)[0], Infinity, `${id}: ends with +Inf`);
    const [name, labels] = id.split("{");
    const count = s.get(`${name}_count${labels === "}" ? "" : "{" + labels}`);
    assert.equal(b.at(-1)[1], count, `${id}: +Inf equals _count`);
  }
}

test("requests are counted by route and status across every responder", async () => {
  const before = await scrape();
  // 8 at once (alice's max_concurrent): several responders answer them.
  await Promise.all(Array.from({ length: 8 }, (_, i) =>
    client.chat.completions.create({ model: "slowstream", messages: [{ role: "user", content: `m${i} a b` }] })));
  const bad = await stack.call("POST", "/v1/chat/completions", { model: "gpt-test", messages: [] }, "sk-wrong");
  assert.equal(bad.status, 401);
  const miss = await stack.call("GET", "/v1/nothing-here");
  assert.equal(miss.status, 404);
  const after = await scrape();
  assert.equal(val(after, req("/v1/chat/completions", 200)) - val(before, req("/v1/chat/completions", 200)), 8);
  assert.equal(val(after, req("/v1/chat/completions", 401)) - val(before, req("/v1/chat/completions", 401)), 1);
  assert.equal(val(after, req("unmatched", 404, "")) - val(before, req("unmatched", 404, "")), 1);
  // The scrape before this one was counted by the time this one ran.
  assert.ok(val(after, req("/metrics", 200, "GET")) >= 1);
  assert.ok(val(after, "sandgate_upstream_seconds_count") - val(before, "sandgate_upstream_seconds_count") >= 8);
  checkHistograms(after);
});

test("an intercepted request moves loop rounds, sandbox creates, runs, the kept containers and the upstream histogram", async () => {
  const before = await scrape();
  const r = await client.responses.create({ model: "ci-two", input: "go", tools: [{ type: "code_interpreter", container: { type: "auto" } }] });
  assert.match(r.output_text, /Done: 43/);
  const after = await scrape();
  const d = (k) => val(after, k) - val(before, k);
  assert.equal(d("sandgate_loop_rounds_total"), 2);
  assert.equal(d('sandgate_sandbox_creates_total{tool="e2b"}'), 1);
  assert.equal(d('sandgate_sandbox_run_seconds_count{tool="e2b"}'), 2);
  assert.equal(d('sandgate_sandbox_create_seconds_count{tool="e2b"}'), 1);
  // Kept for the conversation's follow-ups (container_reuse's default).
  assert.equal(d('sandgate_sandbox_deletes_total{tool="e2b",by="request"}'), 0);
  assert.equal(d('sandgate_sandboxes{tool="e2b",kind="conversation"}'), 1);
  assert.equal(d("sandgate_upstream_seconds_count"), 3, "three model turns");
  assert.equal(d("sandgate_upstream_first_byte_seconds_count"), 3);
  assert.ok(d("sandgate_upstream_seconds_sum") >= d("sandgate_upstream_first_byte_seconds_sum"));
  assert.equal(d(req("/v1/responses", 200)), 1);
  checkHistograms(after);
});

test("a failed create, a failed run and the reaper's sweep are counted by tool", async () => {
  const before = await scrape();
  await stack.fakeHook("e2b", "faults", { create_status: 500, count: 1 });
  const f = await stack.call("POST", "/v1/sandboxes", { tool: "e2b" });
  assert.equal(f.status, 502, f.text);
  assert.match(stack.log(), /event=sandbox_create_failed id=cntr_\w+ tool=e2b kind=explicit ms=\d+ reason=failed/);
  const id = await stack.newSandbox("e2b");
  await stack.fakeHook("e2b", "faults", { execute_status: 502, count: 1 });
  const run = await stack.call("POST", `/v1/sandboxes/${id}/code`, { code: "1" });
  assert.notEqual(run.status, 200);
  // The provider's answer said gone: counted as found gone, not swept.
  let after = await scrape();
  const d = (k) => val(after, k) - val(before, k);
  assert.equal(d('sandgate_sandbox_create_failures_total{tool="e2b"}'), 1);
  assert.equal(d('sandgate_sandbox_creates_total{tool="e2b"}'), 1);
  assert.equal(d('sandgate_sandbox_run_failures_total{tool="e2b"}'), 1);
  assert.equal(d('sandgate_sandbox_deletes_total{tool="e2b",by="gone"}'), 1);
  // Another tool's counters stand still.
  assert.equal(d('sandgate_sandbox_creates_total{tool="osb"}'), 0);
});

test("the reaper child's sweep is counted with everyone else's", async () => {
  const before = await scrape();
  const id = await stack.newSandbox("e2b");
  // Its row says it expired: the reaper, started again by a reload, sweeps
  // at once.
  stack.sql(`UPDATE sandboxes SET expires_at = 1 WHERE id = '${id}'`);
  await stack.reload((c) => c);
  await waitFor(() => new RegExp(`^event=sandbox_delete id=${id} tool=e2b by=sweep$`, "m").test(stack.log()), "the sweep");
  const after = await scrape();
  assert.equal(val(after, 'sandgate_sandbox_deletes_total{tool="e2b",by="sweep"}') -
    val(before, 'sandgate_sandbox_deletes_total{tool="e2b",by="sweep"}'), 1);
});
