// The queue's figures for `make bench`: a burst of N requests of one key
// on a gateway whose workers_max is small, and another key's request sent
// while the burst waits. The fake upstream's "delay" model answers each
// after DELAY_MS, so one request's time is known.
//
//   node bench/queue_client.mjs URL KEY_A KEY_B N
//
// Prints Markdown for bench/RESULTS.md: the time of one request alone
// (median of 5), the burst's statuses and how long it took, and the other
// key's request time during it (a table run.sh adds a row to).
const [url, keyA, keyB, nArg] = process.argv.slice(2);
const N = Number(nArg || 40);
const body = JSON.stringify({ model: "delay", messages: [{ role: "user", content: "hi" }] });

async function one(key) {
  const t0 = performance.now();
  const r = await fetch(url, { method: "POST", body, signal: AbortSignal.timeout(120000),
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } });
  await r.text();
  return { status: r.status, ms: performance.now() - t0 };
}

const alone = [];
for (let i = 0; i < 5; i++) alone.push((await one(keyA)).ms);
alone.sort((a, b) => a - b);
const t0 = performance.now();
const burst = Array.from({ length: N }, () => one(keyA));
await new Promise((r) => setTimeout(r, 300));
const other = await one(keyB);
const answers = await Promise.all(burst);
const statuses = {};
for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
const burstMs = performance.now() - t0, one1 = alone[2];
const others = Object.entries(statuses).filter(([s]) => s !== "200").map(([s, c]) => `${c}× ${s}`).join(", ");
console.log(`\`bench/queue_client.mjs\`: \`workers = 4\`, keys without \`max_concurrent\`, the fake model answering`);
console.log(`each request after 100 ms. One request alone: ${Math.round(one1)} ms (median of 5).`);
console.log("");
console.log("| what | answered 200 | other answers | time |");
console.log("| --- | --- | --- | --- |");
console.log(`| ${N} requests of one key at once | ${statuses[200] ?? 0} of ${N} | ${others || "none"} | ` +
  `${Math.round(burstMs)} ms for all (${(burstMs / one1).toFixed(1)}× one request; ${N} / 4 = ${N / 4} rounds) |`);
console.log(`| another key's request, sent 300 ms into them | ${other.status === 200 ? 1 : 0} of 1 | ` +
  `${other.status === 200 ? "none" : other.status} | ${Math.round(other.ms)} ms (${(other.ms / one1).toFixed(1)}× ` +
  "one request: it waited for a place, not for the requests before it) |");
