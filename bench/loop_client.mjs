// Load for the interception benchmark: code_interpreter requests through
// the gateway, C at a time for SECS seconds, each tagged "req-<n>" so the
// fakes (bench/fakes.mjs) can say how long they spent on it. Prints one
// JSON line:
//   total     the client's latency per request (µs)
//   gateway   total minus the fakes' time on that request
//   iter      per loop iteration, from the fakes' clock: from the end of a
//             model turn to the start of the next, minus the fakes' own
//             time in between (the sandbox run, a create). What the
//             gateway spends turning one model answer into the next call.
//   fakes     the fakes' own time per call, by kind
//   gaps      each exchange's gap, from one call's end to the next call's
//             start by the fakes' clock ("model->run": the turn's end to
//             the run; "run->list", "list->model"), for the first round
//             ("first model->run") and the later ones ("later ..."): where
//             in a round the iteration's time goes
//   stalled   iterations over 1 ms and over 2 ms, a second of the run: set
//             against the machine's own stalls (bench/stalls.c)
//
// node bench/loop_client.mjs URL KEY MODEL C SECS [sticky]
// With LOOP_FLOOR (bench/loop_floor, E2B_BASE its fake) the requests are
// that program's, the same exchanges without the gateway (URL and KEY
// unused, c=1): the same figures, the loop's floor. LOOP_GAP_MS pauses
// that long after each request (for the floor too): nothing of the last
// request (its trace written after its answer, the client reading it)
// then runs beside the next one's rounds.
import http from "node:http";
import { execFileSync } from "node:child_process";

const [url, key, model, conc, secs, sticky] = process.argv.slice(2);
const C = Number(conc);
const agent = new http.Agent({ keepAlive: true, maxSockets: C });
const floorBin = process.env.LOOP_FLOOR;
const u = floorBin ? null : new URL(url);
const upBase = process.env.FAKE_UPSTREAM;
const gapMs = Number(process.env.LOOP_GAP_MS || 0);
const now = () => Number(process.hrtime.bigint() / 1000n);
const totals = new Map();
let n = 0, bad = 0, firstBad = "";

function post(tag, slot) {
  const meta = sticky ? `,"metadata":{"session_id":"bench-${slot}"}` : "";
  const body = `{"model":"${model}","input":"bench ${tag}","tools":[{"type":"code_interpreter",` +
    `"container":{"type":"auto"}}]${meta}}`;
  return new Promise((resolve) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: "POST", agent,
      headers: { "content-type": "application/json", authorization: `Bearer ${key}`,
        "content-length": Buffer.byteLength(body) } }, (res) => {
      const parts = [];
      res.on("data", (c) => parts.push(c));
      res.on("end", () => resolve([res.statusCode, Buffer.concat(parts).toString()]));
    });
    req.on("error", (e) => resolve([0, String(e)]));
    req.end(body);
  });
}

async function worker(slot, until) {
  while (now() < until) {
    const tag = `req-${++n}`;
    const t0 = now();
    const [status, text] = await post(tag, slot);
    if (status !== 200 || !text.includes('"status":"completed"')) {
      bad++;
      firstBad ||= `${status} ${text.slice(0, 300)}`;
      continue;
    }
    totals.set(tag, now() - t0);
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
  }
}

const pct = (a, p) => {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const stats = (a) => ({ n: a.length, p50: pct(a, 0.5), p99: pct(a, 0.99) });

let elapsed;
if (floorBin) {
  // Tags of their own: a late event of the gateway's runs never joins one.
  const out = execFileSync(floorBin, [upBase, process.env.E2B_BASE, model, secs, "1000000000"],
    { encoding: "utf8" });
  for (const line of out.trim().split("\n")) {
    const [tag, us] = line.split(" ");
    totals.set(tag, Number(us));
  }
  elapsed = Number(secs);
} else {
  // The sticky warm-up makes each slot's session (and sandbox) untimed.
  if (sticky) await Promise.all([...Array(C).keys()].map((s) => post("warm", s)));
  const t0 = now();
  await Promise.all([...Array(C).keys()].map((s) => worker(s, t0 + Number(secs) * 1e6)));
  elapsed = (now() - t0) / 1e6;
}
const times = await (await fetch(`${upBase}/__times`)).json();
const gateway = [], iter = [], fakes = {}, gaps = {};
const LOOPED = new Set(["model", "run", "list"]);
for (const [tag, total] of totals) {
  const ev = (times[tag] || []).sort((a, b) => a[1] - b[1]);
  let own = 0;
  for (const [kind, a, b] of ev) {
    own += b - a;
    (fakes[kind] ||= []).push(b - a);
  }
  gateway.push(total - own);
  for (let i = 0, round = 0; i + 1 < ev.length; i++) {
    const [k0, , end] = ev[i], [k1, start] = ev[i + 1];
    if (k0 === "model") round++;
    if (LOOPED.has(k0) && LOOPED.has(k1) && round > 0)
      (gaps[`${round === 1 ? "first" : "later"} ${k0}->${k1}`] ||= []).push(start - end);
  }
  const turns = ev.filter((e) => e[0] === "model");
  for (let i = 0; i + 1 < turns.length; i++) {
    const from = turns[i][2], to = turns[i + 1][1];
    let between = 0;
    for (const [kind, a, b] of ev)
      if (kind !== "model" && a >= from && b <= to) between += b - a;
    iter.push(to - from - between);
  }
}
console.log(JSON.stringify({ model, conc: C, sticky: !!sticky, reqs: totals.size, bad, firstBad,
  rps: totals.size / elapsed, total: stats([...totals.values()]), gateway: stats(gateway), iter: stats(iter),
  stalled: [1000, 2000].map((us) => +(iter.filter((v) => v > us).length / elapsed).toFixed(1)),
  fakes: Object.fromEntries(Object.entries(fakes).map(([k, v]) => [k, stats(v)])),
  gaps: Object.fromEntries(Object.entries(gaps).map(([k, v]) => [k, stats(v)])) }));
agent.destroy();
