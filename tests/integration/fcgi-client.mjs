// A FastCGI client of our own, for the tests that talk to sandgate's
// socket as a web server would (without one in between): records, a
// request, and a connection that collects the answer.
import net from "node:net";

export function record(type, content = Buffer.alloc(0)) {
  const pad = (8 - (content.length % 8)) % 8;
  const h = Buffer.from([1, type, 0, 1, content.length >> 8, content.length & 255, pad, 0]);
  return Buffer.concat([h, content, Buffer.alloc(pad)]);
}

const paramsOf = (p) => Buffer.concat(Object.entries(p).map(([k, v]) => {
  const len = (n) => (n < 128 ? Buffer.from([n]) : Buffer.from([(n >>> 24) | 0x80, (n >> 16) & 255, (n >> 8) & 255, n & 255]));
  return Buffer.concat([len(Buffer.byteLength(k)), len(Buffer.byteLength(v)), Buffer.from(k + v)]);
}));

// A GET as nginx with fastcgi_keep_conn sends it: the responder is asked
// to keep the connection open.
export function keptRequest(uri) {
  const FCGI_KEEP_CONN = 1;
  return Buffer.concat([record(1, Buffer.from([0, 1, FCGI_KEEP_CONN, 0, 0, 0, 0, 0])),
    record(4, paramsOf({ REQUEST_METHOD: "GET", REQUEST_URI: uri, SCRIPT_NAME: uri })), record(4), record(5)]);
}

// A request as a web server that closes the connection itself (no
// FCGI_KEEP_CONN), with a body and a key. params override or add CGI
// parameters (CONTENT_LENGTH may claim more than body holds); with open,
// stdin is left unfinished.
export function fcgiRequest(method, uri, { key, body = "", params = {}, open = false }) {
  const p = { REQUEST_METHOD: method, REQUEST_URI: uri, SCRIPT_NAME: uri, CONTENT_TYPE: "application/json",
    CONTENT_LENGTH: String(Buffer.byteLength(body)), HTTP_AUTHORIZATION: `Bearer ${key}`, ...params };
  const chunks = [];
  for (let o = 0; o < Buffer.byteLength(body); o += 65535) chunks.push(record(5, Buffer.from(body).subarray(o, o + 65535)));
  return Buffer.concat([record(1, Buffer.from([0, 1, 0, 0, 0, 0, 0, 0])), record(4, paramsOf(p)), record(4),
    ...chunks, ...(open ? [] : [record(5)])]);
}

// Open a connection to the FastCGI socket at addr ({path} or {host,
// port}); ask(uri) resolves to the response's stdout once END_REQUEST
// came, send(request) likewise. With halfOpen, the connection stays open
// after sandgate's end of it closes (a web server slow to close).
export function fcgiConn(addr, { halfOpen = false } = {}) {
  const s = net.connect({ ...addr, allowHalfOpen: halfOpen });
  const c = { s, closed: false, buf: Buffer.alloc(0), waiter: null };
  s.on("error", () => {});
  s.on("close", () => { c.closed = true; c.waiter?.reject(new Error("closed")); });
  s.on("data", (d) => {
    c.buf = Buffer.concat([c.buf, d]);
    let out = Buffer.alloc(0), o = 0;
    while (o + 8 <= c.buf.length) {
      const len = c.buf.readUInt16BE(o + 4), end = o + 8 + len + c.buf[o + 6];
      if (end > c.buf.length) break;
      if (c.buf[o + 1] === 6) out = Buffer.concat([out, c.buf.subarray(o + 8, o + 8 + len)]);
      if (c.buf[o + 1] === 3) { c.buf = c.buf.subarray(end); c.waiter?.resolve(out.toString()); return; }
      o = end;
    }
  });
  c.send = (request) => new Promise((resolve, reject) => {
    c.buf = Buffer.alloc(0);
    c.waiter = { resolve, reject };
    s.write(request);
  });
  c.ask = (uri) => c.send(keptRequest(uri));
  return c;
}
