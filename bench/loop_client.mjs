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
import http from "node:http";

const [url, key, model, conc, secs, sticky] = process.argv.slice(2);
const C = Number(conc);
const agent = new http.Agent({ keepAlive: true, maxSockets: C });
const u = new URL(url);
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

// The sticky warm-up makes each slot's session (and sandbox) untimed.
if (sticky) await Promise.all([...Array(C).keys()].map((s) => post("warm", s)));
const t0 = now();
await Promise.all([...Array(C).keys()].map((s) => worker(s, t0 + Number(secs) * 1e6)));
const elapsed = (now() - t0) / 1e6;
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
