// Load for the background part of bench/run.sh: N background responses
// created C at a time, each then polled (every POLL_MS, C requests at a
// time in all) until it ends, while a child process probes /healthz every
// 100 ms. Prints one JSON line: what the jobs ended as, the time from the
// first create to the last end seen, the creates' latency and the probes'.
//
//   node bench/bg_client.mjs run BASE KEY N C MODEL [MARK]
//       BASE the gateway's URL (http://127.0.0.1:PORT); MARK, a file made
//       once every create is answered (the jobs then queued or running)
//   node bench/bg_client.mjs probe URL [SECS]
//       GET URL every 100 ms for SECS seconds (without: until stdin ends): one
//       JSON line, the latencies in µs and the failures
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import { fileURLToPath } from "node:url";

const PROBE_MS = 100;
const PROBE_TIMEOUT_MS = 2000;
const POLL_MS = 500;
const DEADLINE_MS = 300000;     // the whole run, whatever happens
const TERMINAL = new Set(["completed", "failed", "incomplete", "cancelled"]);
const now = () => Number(process.hrtime.bigint() / 1000n);   // µs
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const pct = (a, p) => {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const stats = (a) => ({ n: a.length, p50: pct(a, 0.5), p99: pct(a, 0.99), max: a.length ? Math.max(...a) : null });

function request(agent, url, { method = "GET", key, body, timeout = 30000 } = {}) {
  const u = new URL(url);
  return new Promise((resolve) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method, agent, timeout,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body ? { "content-type": "application/json", "content-length": Buffer.byteLength(body) } : {}) } }, (res) => {
      const parts = [];
      res.on("data", (c) => parts.push(c));
      res.on("end", () => resolve([res.statusCode, Buffer.concat(parts).toString()]));
      res.on("error", (e) => resolve([0, String(e)]));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (e) => resolve([0, String(e)]));
    req.end(body);
  });
}

// The probe: its own process, so the load's client work does not delay it.
async function probe(url, secs) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const lat = [];
  let fail = 0, stop = false;
  if (!secs) process.stdin.on("end", () => { stop = true; }).resume();
  const until = secs ? Date.now() + secs * 1000 : Infinity;
  while (!stop && Date.now() < until) {
    const t0 = now();
    const [status] = await request(agent, url, { timeout: PROBE_TIMEOUT_MS });
    const us = now() - t0;
    if (status === 200) lat.push(us); else fail++;
    await sleep(Math.max(0, PROBE_MS - us / 1000));
  }
  console.log(JSON.stringify({ probes: lat.length + fail, fail, ...stats(lat) }));
  agent.destroy();
}

// At most c of fn at once.
function limiter(c) {
  let active = 0;
  const waiting = [];
  return async (fn) => {
    while (active >= c) await new Promise((r) => waiting.push(r));
    active++;
    try { return await fn(); } finally { active--; waiting.shift()?.(); }
  };
}

async function run(base, key, n, c, model, mark) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: c });
  const limit = limiter(c);
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "probe", `${base}/healthz`],
    { stdio: ["pipe", "pipe", "inherit"] });
  let probeOut = "";
  child.stdout.on("data", (d) => { probeOut += d; });
  const probeDone = new Promise((r) => child.on("exit", r));
  await sleep(300);

  const t0 = now(), deadline = Date.now() + DEADLINE_MS;
  const createUs = [], endUs = [], ended = {};
  let bad = 0, firstBad = "", polls = 0, lastEnd = 0;
  const body = JSON.stringify({ model, input: "bench bg", background: true,
    tools: [{ type: "code_interpreter", container: { type: "auto" } }] });
  const one = async () => {
    const ts = now();
    const [status, text] = await limit(() => request(agent, `${base}/v1/responses`, { method: "POST", key, body }));
    let r = null;
    try { r = JSON.parse(text); } catch { /* below */ }
    if (status !== 200 || r?.status !== "queued") {
      bad++;
      firstBad ||= `create: ${status} ${text.slice(0, 300)}`;
      return null;
    }
    createUs.push(now() - ts);
    return r.id;
  };
  const ids = (await Promise.all(Array.from({ length: n }, one))).filter(Boolean);
  const created = now();
  if (mark) fs.writeFileSync(mark, "");
  await Promise.all(ids.map(async (id) => {
    while (Date.now() < deadline) {
      await sleep(POLL_MS);
      polls++;
      const [status, text] = await limit(() => request(agent, `${base}/v1/responses/${id}`, { key }));
      let r = null;
      try { r = JSON.parse(text); } catch { /* below */ }
      if (status !== 200 || !r) {
        bad++;
        firstBad ||= `poll: ${status} ${text.slice(0, 300)}`;
        continue;
      }
      if (TERMINAL.has(r.status)) {
        ended[r.status] = (ended[r.status] ?? 0) + 1;
        if (r.status !== "completed") firstBad ||= `ended ${r.status}: ${JSON.stringify(r.error)}`;
        lastEnd = now();
        endUs.push(lastEnd - t0);
        return;
      }
    }
  }));
  child.stdin.end();
  await probeDone;
  agent.destroy();
  console.log(JSON.stringify({ n, model, conc: c, created: ids.length, ended, unended: ids.length - endUs.length,
    bad, firstBad, polls, createAllMs: Math.round((created - t0) / 1000), spanMs: Math.round((lastEnd - t0) / 1000),
    create: stats(createUs), probe: JSON.parse(probeOut || "{}") }));
}

const [mode, ...args] = process.argv.slice(2);
if (mode === "probe") await probe(args[0], Number(args[1] ?? 0));
else if (mode === "run") await run(args[0], args[1], Number(args[2]), Number(args[3]), args[4], args[5]);
else {
  console.error("usage: bg_client.mjs run BASE KEY N C MODEL [MARK] | probe URL [SECS]");
  process.exit(2);
}
