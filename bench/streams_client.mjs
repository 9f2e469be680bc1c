// N streaming chat requests held open at once (the fake upstream's "slow"
// model sends a delta every 200 ms). Prints a JSON line when every stream
// has its first delta (the moment to look at memory), and another when
// all have ended: {open, firstAllMs, done, bad}.
// node bench/streams_client.mjs URL KEY N
import http from "node:http";

const [url, key, count] = process.argv.slice(2);
const N = Number(count);
const u = new URL(url);
const body = '{"model":"slow","stream":true,"messages":[{"role":"user","content":"hi"}]}';
const t0 = Date.now();
let open = 0, done = 0, bad = 0, firstAllMs = null;

function one() {
  return new Promise((resolve) => {
    let first = false, text = "";
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: "POST",
      agent: false, headers: { "content-type": "application/json", authorization: `Bearer ${key}`,
        "content-length": Buffer.byteLength(body) } }, (res) => {
      res.setEncoding("utf8");
      res.on("data", (c) => {
        text += c;
        if (!first && text.includes('"content":"."')) {
          first = true;
          if (++open === N) {
            firstAllMs = Date.now() - t0;
            console.log(JSON.stringify({ open, firstAllMs }));
          }
        }
      });
      res.on("end", () => {
        if (res.statusCode === 200 && text.endsWith("data: [DONE]\n\n")) done++;
        else bad++;
        resolve();
      });
    });
    req.on("error", () => { bad++; resolve(); });
    req.end(body);
  });
}

await Promise.all(Array.from({ length: N }, one));
console.log(JSON.stringify({ open, firstAllMs, done, bad }));
