// Element builders that only ever make text. Everything the API returns
// is attacker-influenced (key names, model output, code), so nothing here
// parses HTML: strings become text nodes, attributes are set one by one.

// h("tag.class", {attr: value, onclick: fn}, child, ...): children are
// nodes, strings (text), numbers, null/false (skipped) or arrays of those.
export function h(spec, attrs, ...children) {
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (classes.length) el.className = classes.join(" ");
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k in el && typeof v !== "string") el[k] = v; // value, checked, hidden...
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

// A table: columns [{label, cell(row) → node|string, num?, nowrap?}], rows; empty
// says so instead of showing a header over nothing. rowAttrs(row) gives a
// row's attributes (data-id, for tests and links).
export function table(columns, rows, empty = "Nothing yet.", rowAttrs = () => null) {
  if (!rows.length) return h("p.empty", null, empty);
  const head = h("tr", null, columns.map((c) => h(c.num ? "th.num" : "th", { scope: "col" }, c.label)));
  const td = (c) => (c.num ? "td.num" : c.nowrap ? "td.nowrap" : "td");
  const body = rows.map((r) => h("tr", rowAttrs(r), columns.map((c) => h(td(c), { "data-label": c.label }, c.cell(r)))));
  return h("div.scroll", null, h("table", null, h("thead", null, head), h("tbody", null, body)));
}

// A labelled input: the label wraps it, so no ids are needed.
export function field(label, input, hint) {
  return h("label.field", null, h("span", null, label), input, hint ? h("small", null, hint) : null);
}

export function select(name, options, value) {
  return h("select", { name }, options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
}

// A modal confirmation (a <dialog>, so focus is trapped and Escape
// cancels): resolves true only on the confirm button.
export function confirmDialog(message, okLabel = "Confirm") {
  return new Promise((resolve) => {
    const ok = h("button.danger", { type: "button", value: "ok" }, okLabel);
    const cancel = h("button", { type: "button" }, "Cancel");
    const dlg = h("dialog.confirm", { "aria-label": okLabel }, h("p", null, message), h("div.actions", null, cancel, ok));
    const done = (v) => { dlg.close(); dlg.remove(); resolve(v); };
    ok.addEventListener("click", () => done(true));
    cancel.addEventListener("click", () => done(false));
    dlg.addEventListener("cancel", (e) => { e.preventDefault(); done(false); });
    document.body.append(dlg);
    dlg.showModal();
    cancel.focus();
  });
}

// A notice line for errors and results; role=alert is read out at once.
export function notice(text, kind = "error") {
  return h(`p.notice.${kind}`, { role: kind === "error" ? "alert" : "status" }, text);
}

// Formatting. Times are shown in the browser's zone; ISO-like so that
// they sort and read the same everywhere.
const pad = (n) => String(n).padStart(2, "0");
export function fmtTime(unix) {
  if (unix === null || unix === undefined) return "—";
  const d = new Date(unix * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  // Tenths under 10 s: a code run of 0.3 s is not "0s".
  if (seconds > 0 && seconds < 10 && !Number.isInteger(seconds)) return `${seconds.toFixed(1)}s`;
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function fmtAgo(unix, now = Date.now() / 1000) {
  return unix ? `${fmtDuration(now - unix)} ago` : "never";
}

export function fmtNum(n, digits = 0) {
  if (n === null || n === undefined) return "—";
  return Number(n).toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

export function fmtUsd(v) {
  if (v === null || v === undefined) return "—";
  return "$" + Number(v).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: v < 1 && v > 0 ? 4 : 2 });
}

export function fmtMs(ms) {
  if (ms === null || ms === undefined) return "—";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}
