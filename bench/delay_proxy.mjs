// A model upstream that thinks: forwards every request to TARGET (the
// zero-latency bench/fakes.mjs) DELAY_MS after it arrived, the answer
// streamed back as it comes; it exits when its parent does. For the background part of bench/run.sh,
// whose jobs would otherwise end before there is anything to measure.
//
//   node bench/delay_proxy.mjs PORT TARGET_PORT DELAY_MS
import http from "node:http";

const [port, target, delay] = process.argv.slice(2).map(Number);
const agent = new http.Agent({ keepAlive: true });

http.createServer((req, res) => {
  const parts = [];
  req.on("data", (c) => parts.push(c));
  req.on("end", () => setTimeout(() => {
    const up = http.request({ host: "127.0.0.1", port: target, path: req.url, method: req.method, agent,
      headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    up.on("error", () => { res.writeHead(502); res.end(); });
    up.end(Buffer.concat(parts));
  }, delay));
}).listen(port, "127.0.0.1");

// Gone with the script that started it, however that ended.
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) process.exit(0); }, 1000).unref();
