// Usage and costs: per UTC day over a date range, by model or by key —
// requests, tokens, cost and sandbox time — as charts, a totals table and
// a CSV made here in the browser (a Blob, no extra request). Tokens and
// model requests come from the Usage API, cost from the Costs API
// (OpenAI's shapes), sandbox seconds and sessions from the code
// interpreter sessions usage, which groups by key but not by model (a
// sandbox outlives a model's turn): by model, those are the day's totals.
import { listAll, buckets } from "./api.js";
import { h, table, field, select, notice, fmtNum, fmtUsd, fmtDuration } from "./dom.js";
import { timeChart } from "./chart.js";

const DAY = 86400;
const MAX_SERIES = 6; // more groups than this fold into "other"
const isoDay = (t) => new Date(t * 1000).toISOString().slice(0, 10);
const utcDay = (s) => Date.parse(`${s}T00:00:00Z`) / 1000;

const state = { from: isoDay(Date.now() / 1000 - 6 * DAY), to: isoDay(Date.now() / 1000), by: "model" };

export async function render({ el, onLeave }) {
  const out = h("div", null, h("p.muted", null, "Loading…"));
  let charts = [];
  const drop = () => { for (const c of charts) c.destroy?.(); charts = []; };
  onLeave(drop);
  const form = h("form.filters", { "aria-label": "Usage range" },
    field("From (UTC)", h("input", { name: "from", type: "date", value: state.from, required: true })),
    field("To (UTC)", h("input", { name: "to", type: "date", value: state.to, required: true })),
    field("By", select("by", [["model", "model"], ["key", "key"]], state.by)),
    h("button", { type: "submit" }, "Show"));
  const show = async () => {
    out.replaceChildren(h("p.muted", null, "Loading…"));
    out.setAttribute("aria-busy", "true");
    try {
      const data = await load(state);
      drop();
      const view = draw(data);
      charts = [...view.querySelectorAll("figure.chart")];
      out.replaceChildren(view);
    } finally {
      out.removeAttribute("aria-busy");
    }
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = form.elements;
    if (f.from.value > f.to.value) return out.replaceChildren(notice("The range ends before it starts."));
    Object.assign(state, { from: f.from.value, to: f.to.value, by: f.by.value });
    show().catch((e) => out.replaceChildren(notice(e.message)));
  });
  el.append(h("div.pagehead", null, h("h1", null, "Usage and costs")), form, out);
  await show();
}

// Everything for the range, pivoted into rows {day, group, requests,
// input_tokens, output_tokens, cost, sandbox_seconds, sessions}; by model,
// sandbox seconds and sessions are per day only (sandbox).
async function load({ from, to, by }) {
  const start = utcDay(from), end = utcDay(to) + DAY;
  const range = { start_time: start, end_time: end, bucket_width: "1d", limit: 31 };
  const byKey = by === "key";
  const [keys, usage, costs, sessions] = await Promise.all([
    listAll("/v1/organization/api_keys").catch(() => []),
    buckets("/v1/organization/usage/completions", { ...range, group_by: byKey ? "api_key_id" : "model" }),
    buckets("/v1/organization/costs", { ...range, group_by: byKey ? "api_key_id" : "line_item" }),
    buckets("/v1/organization/usage/code_interpreter_sessions", { ...range, group_by: byKey ? "api_key_id" : null }),
  ]);
  const names = new Map(keys.map((k) => [k.id, k.name]));
  const keyName = (id) => (id ? names.get(id) ?? id : "(no key)");
  const rows = new Map();
  const row = (day, group) => {
    const id = `${day}\n${group}`;
    if (!rows.has(id)) rows.set(id, { day, group, requests: 0, input_tokens: 0, output_tokens: 0, cost: 0, sandbox_seconds: 0, sessions: 0 });
    return rows.get(id);
  };
  for (const b of usage) for (const r of b.results) {
    const x = row(b.start_time, byKey ? keyName(r.api_key_id) : r.model ?? "(none)");
    x.requests += r.num_model_requests ?? 0;
    x.input_tokens += r.input_tokens ?? 0;
    x.output_tokens += r.output_tokens ?? 0;
  }
  // A line item is "MODEL, input|output" or "code interpreter sessions, TOOL".
  for (const b of costs) for (const r of b.results) {
    const item = r.line_item ?? "";
    const group = byKey ? keyName(r.api_key_id) : item.startsWith("code interpreter sessions, ")
      ? `sandbox: ${item.slice(27)}` : item.replace(/, (input|output|cached input)$/, "");
    row(b.start_time, group).cost += r.amount?.value ?? 0;
  }
  const sandbox = sessions.map((b) => ({ day: b.start_time, sandbox_seconds: 0, sessions: 0 }));
  sessions.forEach((b, i) => {
    for (const r of b.results) {
      for (const x of byKey ? [sandbox[i], row(b.start_time, keyName(r.api_key_id))] : [sandbox[i]]) {
        x.sandbox_seconds += r.sandbox_seconds ?? 0;
        x.sessions += r.num_sessions ?? 0;
      }
    }
  });
  return { by, days: usage.map((b) => b.start_time), sandbox,
    rows: [...rows.values()].sort((a, b) => a.day - b.day || a.group.localeCompare(b.group)) };
}

function draw({ by, days, sandbox, rows }) {
  const byKey = by === "key";
  const METRICS = ["requests", "input_tokens", "output_tokens", "cost", "sandbox_seconds", "sessions"];
  // Groups by weight (tokens, then cost), the tail folded into "other".
  const totals = new Map();
  for (const r of rows) {
    const t = totals.get(r.group) ?? Object.fromEntries([["group", r.group], ...METRICS.map((k) => [k, 0])]);
    for (const k of METRICS) t[k] += r[k];
    totals.set(r.group, t);
  }
  const ranked = [...totals.values()].sort((a, b) => b.input_tokens + b.output_tokens - (a.input_tokens + a.output_tokens) || b.cost - a.cost);
  const shown = ranked.slice(0, MAX_SERIES).map((t) => t.group);
  const seriesOf = (metric) => {
    const groups = ranked.length > MAX_SERIES ? [...shown, "other"] : shown;
    return groups.map((g) => ({
      label: g,
      values: days.map((d) => rows.filter((r) => r.day === d && (g === "other" ? !shown.includes(r.group) : r.group === g))
        .reduce((n, r) => n + metric(r), 0)),
    }));
  };
  const perDay = (k, label) => (byKey ? seriesOf((r) => r[k]) : [{ label, values: days.map((d) => sandbox.find((s) => s.day === d)?.[k] ?? 0) }]);
  // Half a day either side, so that a range of one day still reads.
  const xRange = [days[0] - DAY / 2, days[days.length - 1] + DAY / 2];
  const count = { xRange, integer: true, format: (v) => fmtNum(v) };
  const charts = h("div.charts", null,
    timeChart("Model requests per day", days, seriesOf((r) => r.requests), count),
    timeChart("Tokens per day (in + out)", days, seriesOf((r) => r.input_tokens + r.output_tokens), count),
    timeChart("Cost per day (USD)", days, seriesOf((r) => r.cost), { xRange, format: fmtUsd }),
    timeChart(`Sandbox seconds per day${byKey ? "" : " (all keys)"}`, days, perDay("sandbox_seconds", "seconds"),
      { xRange, bars: true, format: (v) => fmtNum(v, 1) }),
    timeChart(`Sandbox sessions per day${byKey ? "" : " (all keys)"}`, days, perDay("sessions", "sessions"), { ...count, bars: true }));
  const csv = h("button", { type: "button", onclick: () => download(rows, by) }, "Download CSV");
  return h("div", null, charts,
    h("div.pagehead", null, h("h2", null, `Totals by ${by}`), csv),
    table([
      { label: byKey ? "Key" : "Model", cell: (t) => t.group },
      { label: "Model requests", cell: (t) => fmtNum(t.requests), num: true },
      { label: "Input tokens", cell: (t) => fmtNum(t.input_tokens), num: true },
      { label: "Output tokens", cell: (t) => fmtNum(t.output_tokens), num: true },
      { label: "Cost", cell: (t) => fmtUsd(t.cost), num: true },
      ...(byKey ? [{ label: "Sandbox time", cell: (t) => fmtDuration(t.sandbox_seconds), num: true },
        { label: "Sessions", cell: (t) => fmtNum(t.sessions), num: true }] : []),
    ], ranked, "No usage in this range."));
}

// CSV by RFC 4180: every field quoted, quotes doubled. A leading = + - @
// is defused so that a spreadsheet never reads a key name as a formula.
function download(rows, by) {
  const q = (v) => {
    let s = String(v);
    if (/^[=+\-@\t\r]/.test(s) && typeof v === "string") s = `'${s}`;
    return `"${s.replaceAll('"', '""')}"`;
  };
  const head = ["day", by, "model_requests", "input_tokens", "output_tokens", "cost_usd",
    ...(by === "key" ? ["sandbox_seconds", "sessions"] : [])];
  const lines = [head, ...rows.map((r) => [isoDay(r.day), r.group, r.requests, r.input_tokens, r.output_tokens,
    r.cost.toFixed(6), ...(by === "key" ? [r.sandbox_seconds.toFixed(3), r.sessions] : [])])].map((l) => l.map(q).join(","));
  const url = URL.createObjectURL(new Blob([lines.join("\r\n") + "\r\n"], { type: "text/csv" }));
  const a = h("a", { href: url, download: `sandgate-usage-${state.from}-${state.to}-by-${by}.csv`, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
