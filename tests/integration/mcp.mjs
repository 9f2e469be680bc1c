// Raw Streamable HTTP for the MCP tests: the config group, one request on
// mcp.path bounded in time and its JSON-RPC messages read whichever way
// they came (JSON or SSE), a session opened by hand, and a live stream
// read message by message (progress, cancel).
import { KEYS, sseEvents } from "./harness.mjs";

export const mcpConfig = (more = "") => `mcp: { enabled = true; path = "/mcp"; sandbox_tool = "local"; ${more} };`;
export const ACCEPT = "application/json, text/event-stream";
export const LATEST = "2025-11-25";

// The headers of one request. opts: key (null: none), session, version,
// accept (null: fetch's own */*), contentType (null: none), headers.
function headersOf(opts, hasBody) {
  const h = {};
  if (opts.key !== null) h.authorization = `Bearer ${opts.key ?? KEYS.alice}`;
  if (opts.session) h["mcp-session-id"] = opts.session;
  if (opts.version) h["mcp-protocol-version"] = opts.version;
  if (opts.accept !== null) h.accept = opts.accept ?? ACCEPT;
  if (hasBody && opts.contentType !== null) h["content-type"] = opts.contentType ?? "application/json";
  return { ...h, ...(opts.headers ?? {}) };
}

const bodyOf = (body) => body === undefined || typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body);

// One request (POST unless opts.method): { status, headers, type, text,
// json (a JSON body), messages (the JSON-RPC messages, from JSON or SSE),
// response (the one carrying an id and a result or error) }.
export async function mcp(stack, body, opts = {}) {
  const r = await fetch(stack.url("/mcp"), { method: opts.method ?? "POST", headers: headersOf(opts, body !== undefined),
    body: bodyOf(body), signal: AbortSignal.timeout(opts.ms ?? 30000) });
  const text = await r.text();
  const type = r.headers.get("content-type") ?? "";
  let json = null, messages = [];
  if (type.startsWith("text/event-stream")) {
    messages = sseEvents(text).filter((e) => e.data).map((e) => JSON.parse(e.data));
  } else {
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    if (json && typeof json === "object") messages = [json];
  }
  const response = messages.find((m) => m && "id" in m && ("result" in m || "error" in m)) ?? null;
  return { status: r.status, headers: r.headers, type, text, json, messages, response };
}

export const initialize = (protocolVersion = LATEST, id = 0) => ({ jsonrpc: "2.0", id, method: "initialize",
  params: { ...(protocolVersion ? { protocolVersion } : {}), capabilities: {}, clientInfo: { name: "wire", version: "1" } } });

// A session opened as the SDK clients open one: initialize, then
// notifications/initialized. { session, key, version }.
export async function openSession(stack, key = KEYS.alice) {
  const r = await mcp(stack, initialize(), { key });
  const session = r.headers.get("mcp-session-id");
  if (r.status !== 200 || !session) throw new Error(`initialize: ${r.status} ${r.text.slice(0, 300)}`);
  const version = r.response.result.protocolVersion;
  const n = await mcp(stack, { jsonrpc: "2.0", method: "notifications/initialized" }, { key, session, version });
  if (n.status !== 202) throw new Error(`notifications/initialized: ${n.status} ${n.text.slice(0, 300)}`);
  return { session, key, version };
}

// One request in session s: mcp()'s answer.
let nextId = 100;
export const rpc = (stack, s, method, params, opts = {}) => mcp(stack,
  { jsonrpc: "2.0", id: opts.id ?? nextId++, method, ...(params === undefined ? {} : { params }) },
  { key: s.key, session: s.session, version: s.version, ...opts });

export const callTool = (stack, s, name, args, opts = {}) => rpc(stack, s, "tools/call", { name, arguments: args }, opts);

// The text parts of a tools/call result, joined.
export const textOf = (result) => (result?.content ?? []).filter((p) => p.type === "text").map((p) => p.text).join("");

// A request whose answer is read as it comes: { status, headers, messages
// ([{at, msg}]), done (resolves to this once the stream ended: ended is
// "end", or "timeout" past ms, or "error: ..."), abort() }.
export async function openStream(stack, body, opts = {}) {
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), opts.ms ?? 60000);
  const r = await fetch(stack.url("/mcp"), { method: "POST", headers: headersOf(opts, true), body: bodyOf(body), signal: ctrl.signal });
  const s = { status: r.status, headers: r.headers, messages: [], raw: "", ended: null, abort: () => ctrl.abort() };
  s.done = (async () => {
    const dec = new TextDecoder();
    let buf = "";
    const take = () => {
      for (let m = /\r?\n\r?\n/.exec(buf); m; m = /\r?\n\r?\n/.exec(buf)) {
        const block = buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
        for (const e of sseEvents(block + "\n\n")) if (e.data) s.messages.push({ at: Date.now(), event: e.event, msg: JSON.parse(e.data) });
      }
    };
    try {
      for await (const chunk of r.body) {
        const t = dec.decode(chunk, { stream: true });
        s.raw += t;
        buf += t;
        take();
      }
      buf += "\n\n";
      take();
      s.ended = "end";
    } catch (e) {
      s.ended = ctrl.signal.aborted ? "timeout" : `error: ${e.message}`;
    } finally {
      clearTimeout(timer);
    }
    return s;
  })();
  return s;
}

// The key's sandboxes, by GET /v1/sandboxes.
export async function sandboxIds(stack, key = KEYS.alice) {
  const r = await stack.call("GET", "/v1/sandboxes", undefined, key);
  if (r.status !== 200) throw new Error(`GET /v1/sandboxes: ${r.status} ${r.text}`);
  return r.json.data.map((s) => s.id);
}
