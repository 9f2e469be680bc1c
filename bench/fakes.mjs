// Zero-latency fakes for `make bench`, in one Node process so both share
// one clock: a model upstream and an e2b sandbox service, each answering
// from templates with no work of its own, so the gateway is what gets
// measured. (tests/fakes/ are faithful and record everything; these are
// fast and record only timings.)
//
//   node bench/fakes.mjs UPSTREAM_PORT E2B_PORT
//
// Upstream, on UPSTREAM_PORT:
//   POST /v1/chat/completions  one fixed answer, JSON or a 7-event stream
//                              ("stream":true in the body)
//   POST /v1/responses         models ci-N: a code call while the input
//                              holds fewer than N function_call_output
//                              items, then a text answer; always streamed
//                              (the gateway's loop asks for a stream).
//                              Model "slow": a chat stream that sends one
//                              delta every 200 ms for SLOW_S seconds (the
//                              held-open streams of the memory benchmark).
//                              Model "delay": the JSON answer after
//                              DELAY_MS (100 ms; the queue's bursts).
// e2b, on E2B_PORT: POST /sandboxes, DELETE /sandboxes/ID,
//   POST /sandboxes/ID/timeout, POST /execute, POST /contexts, envd's
//   MakeDir and ListDir (an empty /mnt/data), routed by E2b-Sandbox-Id.
//
// Timing: a request whose input (upstream) or code (sandbox) carries a
// tag "req-<digits>" is timed by tag, a sandbox call by the sandbox's tag
// (the last run in it names it). GET /__times on UPSTREAM_PORT returns
// {tag: [[kind, arrived_us, done_us], ...]} and forgets them; the client
// subtracts them from its own totals and finds the gaps between them.
import http from "node:http";
import crypto from "node:crypto";

const [upPort, e2bPort] = process.argv.slice(2).map(Number);
const SLOW_S = Number(process.env.SLOW_S || 10);
const DELAY_MS = Number(process.env.DELAY_MS || 100);
const now = () => Number(process.hrtime.bigint() / 1000n);
const times = new Map();
const sandboxTag = new Map();	// sandboxID -> tag
const untagged = new Map();	// sandboxID -> [[kind, t0, t1]] before its first run

function note(tag, kind, t0) {
  if (!tag) return;
  if (!times.has(tag)) times.set(tag, []);
  times.get(tag).push([kind, t0, now()]);
}

function body(req) {
  return new Promise((resolve) => {
    const parts = [];
    req.on("data", (c) => parts.push(c));
    req.on("end", () => resolve(Buffer.concat(parts).toString()));
  });
}

// ---------------------------------------------------------------- chat
const CHAT = JSON.stringify({
  id: "chatcmpl-bench", object: "chat.completion", created: 1770000000, model: "echo",
  choices: [{ index: 0, message: { role: "assistant", content: "echo: hi", refusal: null, annotations: [] },
    logprobs: null, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
});
const chunk = (d, f = null) => `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk",
  created: 1770000000, model: "echo", choices: [{ index: 0, delta: d, logprobs: null, finish_reason: f }] })}\n\n`;
const CHAT_STREAM = chunk({ role: "assistant", content: "" }) + ["echo", ":", " hi", " there", " friend"]
  .map((w) => chunk({ content: w })).join("") + chunk({}, "stop") + "data: [DONE]\n\n";

function slowStream(res) {
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.write(chunk({ role: "assistant", content: "" }));
  let n = 0;
  const t = setInterval(() => {
    if (++n * 200 >= SLOW_S * 1000) {
      clearInterval(t);
      res.end(chunk({}, "stop") + "data: [DONE]\n\n");
    } else res.write(chunk({ content: "." }));
  }, 200);
  res.on("close", () => clearInterval(t));
}

// ---------------------------------------------------------------- responses
const USAGE = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5,
  output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
let seq = 0;
const rid = (p) => p + crypto.randomBytes(12).toString("hex");

function responseObj(id, model, status, output) {
  return { id, object: "response", created_at: 1770000000, status, error: null,
    incomplete_details: null, instructions: null, max_output_tokens: null, model, output,
    parallel_tool_calls: true, previous_response_id: null, reasoning: { effort: null, summary: null },
    store: false, temperature: 1, text: { format: { type: "text" } }, tool_choice: "auto", tools: [],
    top_p: 1, truncation: "disabled", usage: status === "completed" ? USAGE : null, metadata: {} };
}

function sse(events) {
  seq = 0;
  return events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify({ ...e, sequence_number: seq++ })}\n\n`)
    .join("");
}

// One turn: a code call printing the tag, or the answer.
function responsesTurn(model, tag, outputs, toolName) {
  const want = Number(/^ci-(\d+)$/.exec(model)?.[1] ?? 0);
  const id = rid("resp_");
  const head = [{ type: "response.created", response: responseObj(id, model, "in_progress", []) },
    { type: "response.in_progress", response: responseObj(id, model, "in_progress", []) }];
  let item, deltas;
  if (outputs < want && toolName) {
    const args = JSON.stringify({ code: `print("${tag} ${outputs}")` });
    item = { id: rid("fc_"), type: "function_call", status: "completed", arguments: args,
      call_id: rid("call_"), name: toolName };
    deltas = [{ type: "response.function_call_arguments.delta", item_id: item.id, output_index: 0, delta: args },
      { type: "response.function_call_arguments.done", item_id: item.id, output_index: 0, arguments: args }];
    return sse([...head,
      { type: "response.output_item.added", output_index: 0, item: { ...item, arguments: "", status: "in_progress" } },
      ...deltas, { type: "response.output_item.done", output_index: 0, item },
      { type: "response.completed", response: responseObj(id, model, "completed", [item]) }]);
  }
  const text = `done after ${outputs} runs`;
  const part = { type: "output_text", annotations: [], text };
  item = { id: rid("msg_"), type: "message", status: "completed", role: "assistant", content: [part] };
  return sse([...head,
    { type: "response.output_item.added", output_index: 0, item: { ...item, status: "in_progress", content: [] } },
    { type: "response.content_part.added", item_id: item.id, output_index: 0, content_index: 0, part: { ...part, text: "" } },
    { type: "response.output_text.delta", item_id: item.id, output_index: 0, content_index: 0, delta: text },
    { type: "response.output_text.done", item_id: item.id, output_index: 0, content_index: 0, text },
    { type: "response.content_part.done", item_id: item.id, output_index: 0, content_index: 0, part },
    { type: "response.output_item.done", output_index: 0, item },
    { type: "response.completed", response: responseObj(id, model, "completed", [item]) }]);
}

http.createServer(async (req, res) => {
  const t0 = now();
  if (req.method === "GET" && req.url === "/__times") {
    const out = Object.fromEntries(times);
    times.clear();
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(out));
  }
  const text = await body(req);
  if (req.url.endsWith("/chat/completions")) {
    if (text.includes('"model":"slow"')) return slowStream(res);
    if (text.includes('"model":"delay"')) {
      return setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(CHAT) });
        res.end(CHAT);
      }, DELAY_MS);
    }
    if (text.includes('"stream":true')) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      return res.end(CHAT_STREAM);
    }
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(CHAT) });
    return res.end(CHAT);
  }
  if (req.url.endsWith("/responses")) {
    const r = JSON.parse(text);
    const tag = /req-\d+/.exec(text)?.[0];
    const outputs = Array.isArray(r.input) ? r.input.filter((i) => i.type === "function_call_output").length : 0;
    const tool = (r.tools || []).find((t) => t.type === "function")?.name;
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(responsesTurn(r.model, tag, outputs, tool));
    return res.on("finish", () => note(tag, "model", t0));
  }
  res.writeHead(404, { "content-type": "application/json" });
  res.end('{"error":{"message":"not found","type":"invalid_request_error","param":null,"code":null}}');
}).listen(upPort, "127.0.0.1");

// ---------------------------------------------------------------- e2b
function sandboxNote(id, kind, t0) {
  const tag = sandboxTag.get(id);
  if (tag) return note(tag, kind, t0);
  if (!untagged.has(id)) untagged.set(id, []);
  untagged.get(id).push([kind, t0, now()]);
}

http.createServer(async (req, res) => {
  const t0 = now();
  const text = await body(req);
  const url = req.url;
  if (req.method === "POST" && url === "/sandboxes") {
    const id = "i" + crypto.randomBytes(10).toString("hex");
    const out = JSON.stringify({ templateID: "nlhz8vlwyupq845jsdg9", sandboxID: id, alias: "code-interpreter-v1",
      clientID: "6532622b", envdVersion: "0.5.9", envdAccessToken: crypto.randomBytes(32).toString("hex") });
    res.writeHead(201, { "content-type": "application/json" });
    res.end(out);
    return res.on("finish", () => sandboxNote(id, "create", t0));
  }
  let m;
  if (req.method === "DELETE" && (m = /^\/sandboxes\/([a-z0-9]+)$/.exec(url))) {
    res.writeHead(204);
    res.end();
    return res.on("finish", () => {
      sandboxNote(m[1], "delete", t0);
      sandboxTag.delete(m[1]);
      untagged.delete(m[1]);
    });
  }
  if (req.method === "POST" && /^\/sandboxes\/[a-z0-9]+\/timeout$/.test(url)) {
    res.writeHead(204);
    return res.end();
  }
  if (req.method === "POST" && url === "/execute") {
    const id = req.headers["e2b-sandbox-id"];
    const code = JSON.parse(text).code || "";
    const tag = /req-\d+/.exec(code)?.[0];
    // A sandbox's calls count for the request that ran in it last: a
    // session's listing after a run is that request's, not the first's.
    if (tag && id) {
      sandboxTag.set(id, tag);
      for (const [kind, a, b] of untagged.get(id) || []) {
        if (!times.has(tag)) times.set(tag, []);
        times.get(tag).push([kind, a, b]);
      }
      untagged.delete(id);
    }
    const printed = /print\("([^"]*)"\)/.exec(code)?.[1] ?? "";
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"type": "number_of_executions", "execution_count": 1}\n' +
      JSON.stringify({ type: "stdout", text: printed + "\n", timestamp: "2026-11-29T18:06:09.679137+00:00" }) +
      '\n{"type": "end_of_execution"}\n');
    return res.on("finish", () => note(tag, "run", t0));
  }
  // envd and the code interpreter's contexts: the working directory made
  // at create, and the listing of /mnt/data after each round (empty).
  const sid = req.headers["e2b-sandbox-id"];
  if (req.method === "POST" && url === "/filesystem.Filesystem/MakeDir") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"entry":{"name":"data","type":"FILE_TYPE_DIRECTORY","path":"/mnt/data"}}');
    return res.on("finish", () => sid && sandboxNote(sid, "mkdir", t0));
  }
  if (req.method === "POST" && url === "/contexts") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ id: crypto.randomUUID(), language: "python", cwd: "/mnt/data" }));
    return res.on("finish", () => sid && sandboxNote(sid, "context", t0));
  }
  if (req.method === "POST" && url === "/filesystem.Filesystem/ListDir") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end("{}");
    return res.on("finish", () => sid && sandboxNote(sid, "list", t0));
  }
  res.writeHead(404, { "content-type": "application/json" });
  res.end('{"code":404,"message":"not found"}');
}).listen(e2bPort, "127.0.0.1");
