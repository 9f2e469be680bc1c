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
//
// node bench/loop_client.mjs URL KEY MODEL C SECS [sticky]
// With LOOP_FLOOR (bench/loop_floor, E2B_BASE its fake) the requests are
// that program's, the same exchanges without the gateway (URL and KEY
// unused, c=1): the same figures, the loop's floor.
import http from "node:http";
import { execFileSync } from "node:child_process";

const [url, key, model, conc, secs, sticky] = process.argv.slice(2);
const C = Number(conc);
const agent = new http.Agent({ keepAlive: true, maxSockets: C });
const floorBin = process.env.LOOP_FLOOR;
const u = floorBin ? null : new URL(url);
const upBase = process.env.FAKE_UPSTREAM;
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
const gateway = [], iter = [], fakes = {};
for (const [tag, total] of totals) {
  const ev = (times[tag] || []).sort((a, b) => a[1] - b[1]);
  let own = 0;
  for (const [kind, a, b] of ev) {
    own += b - a;
    (fakes[kind] ||= []).push(b - a);
  }
  gateway.push(total - own);
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
  fakes: Object.fromEntries(Object.entries(fakes).map(([k, v]) => [k, stats(v)])) }));
agent.destroy();
