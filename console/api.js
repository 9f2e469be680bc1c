// The admin API, with the key from sessionStorage as a Bearer token. The
// key lives only for this tab (sessionStorage, never a URL or a cookie),
// and a 401 anywhere means it no longer works: forget it and sign in.

const STORE = "sandgate.admin_key";

// The mount prefix, put into index.html by the server ("" or "/ai"); the
// raw placeholder means the file was opened some other way: same origin.
const meta = document.querySelector('meta[name="sandgate-base"]')?.content ?? "";
export const base = meta.startsWith("{{") ? "" : meta.replace(/\/+$/, "");

export const getKey = () => sessionStorage.getItem(STORE);
export const setKey = (k) => sessionStorage.setItem(STORE, k);
export const clearKey = () => sessionStorage.removeItem(STORE);

// An error with the API's own message (OpenAI's {"error":{...}} shape).
export class ApiError extends Error {
  constructor(status, body, fallback) {
    super(body?.error?.message || fallback || `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code ?? null;
    this.param = body?.error?.param ?? null;
  }
}

// Called when a request answers 401: app.js shows the sign-in form.
let onUnauthorized = () => {};
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

// One call: the parsed JSON, or an ApiError. key overrides the stored one
// (the sign-in check). A slow gateway must not hang the page for ever.
export async function api(method, path, body, key = getKey()) {
  const headers = { authorization: `Bearer ${key ?? ""}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  let r;
  try {
    r = await fetch(`${base}${path}`, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store", credentials: "omit", signal: AbortSignal.timeout(30000),
    });
  } catch (e) {
    throw new ApiError(0, null, `The gateway did not answer (${e.name === "TimeoutError" ? "timed out" : "network error"}).`);
  }
  let json = null;
  try { json = await r.json(); } catch { /* not JSON: the message says the status */ }
  if (r.ok) return json;
  const err = new ApiError(r.status, json);
  if (r.status === 401 && key === getKey()) {
    clearKey();
    onUnauthorized(err);
  }
  throw err;
}

export const get = (path) => api("GET", path);

// A query string from an object, leaving out empty members; arrays repeat
// the name (group_by=model&group_by=api_key_id).
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === "") continue;
    for (const one of Array.isArray(v) ? v : [v]) u.append(k, String(one));
  }
  const s = u.toString();
  return s ? `?${s}` : "";
}

// Every item of a cursor list (after=last_id while has_more), at most max.
export async function listAll(path, params = {}, max = 1000) {
  const out = [];
  let after = null;
  for (;;) {
    const page = await get(path + qs({ ...params, limit: 100, after }));
    out.push(...page.data);
    if (!page.has_more || !page.last_id || out.length >= max) return out;
    after = page.last_id;
  }
}

// Every bucket of a usage or costs page chain (page=next_page).
export async function buckets(path, params) {
  const out = [];
  let page = null;
  for (let i = 0; i < 50; i++) {
    const r = await get(path + qs({ ...params, page }));
    out.push(...r.data);
    if (!r.has_more || !r.next_page) break;
    page = r.next_page;
  }
  return out;
}
