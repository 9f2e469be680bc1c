// A minimal OpenAI-compatible upstream for benchmarks: one fixed answer,
// no recording, so the gateway (not the fake) is what gets measured.
// node bench/fast-upstream.mjs PORT
import http from "node:http";

const body = JSON.stringify({
  id: "chatcmpl-bench", object: "chat.completion", created: 1770000000, model: "echo",
  choices: [{ index: 0, message: { role: "assistant", content: "echo: hi", refusal: null, annotations: [] },
    logprobs: null, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
});
const chunk = (d, f = null) => `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk",
  created: 1770000000, model: "echo", choices: [{ index: 0, delta: d, logprobs: null, finish_reason: f }] })}\n\n`;
const stream = chunk({ role: "assistant", content: "" }) + ["echo", ":", " hi", " there", " friend"]
  .map((w) => chunk({ content: w })).join("") + chunk({}, "stop") + "data: [DONE]\n\n";

http.createServer((req, res) => {
  let n = 0;
  const parts = [];
  req.on("data", (c) => { parts.push(c); n += c.length; });
  req.on("end", () => {
    const streaming = Buffer.concat(parts, n).includes('"stream":true');
    if (streaming) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(stream);
    } else {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    }
  });
}).listen(Number(process.argv[2]), "127.0.0.1");
