// Requests: the recent ones with filters, and one request's loop round
// by round (#/requests/req_...): each upstream turn, the code the model
// ran, its stdout/stderr, images and errors, and when each step ran.
// Code and outputs are the model's and the sandbox's: shown as text only.
import { get, listAll, qs } from "./api.js";
import { h, table, field, select, notice, fmtTime, fmtMs, fmtNum, fmtUsd } from "./dom.js";

const PATH = "/v1/organization/requests";

export async function render(ctx) {
  return ctx.arg ? detail(ctx) : list(ctx);
}

// Filters stay while the tab lives: back from a request keeps them.
const filters = { api_key_id: "", model: "", status: "", from: "", to: "" };
const day = (s, end) => (s ? Math.floor(new Date(`${s}T00:00:00`).getTime() / 1000) + (end ? 86400 : 0) : "");

async function list({ el }) {
  const keys = await listAll("/v1/organization/api_keys").catch(() => []);
  const form = h("form.filters", { "aria-label": "Filter requests" },
    field("Key", select("api_key_id", [["", "any"], ...keys.map((k) => [k.id, k.name])], filters.api_key_id)),
    field("Model", h("input", { name: "model", type: "text", value: filters.model, placeholder: "any", autocomplete: "off" })),
    field("Status", select("status", [["", "any"], ["200", "200"], ["error", "errors"]], filters.status)),
    field("From", h("input", { name: "from", type: "date", value: filters.from })),
    field("To", h("input", { name: "to", type: "date", value: filters.to })),
    h("button", { type: "submit" }, "Show"));
  const rows = h("div");
  const more = h("button", { type: "button", hidden: true }, "Older");
  let after = null;
  const load = async (append) => {
    const page = await get(PATH + qs({ limit: 50, after: append ? after : null, api_key_id: filters.api_key_id,
      model: filters.model, status: filters.status, start_time: day(filters.from), end_time: day(filters.to, true) }));
    after = page.last_id;
    more.hidden = !page.has_more;
    const tbl = requestTable(page.data);
    if (append && tbl.querySelector("tbody") && rows.querySelector("tbody"))
      rows.querySelector("tbody").append(...tbl.querySelector("tbody").children);
    else rows.replaceChildren(tbl);
  };
  const fail = (e) => rows.replaceChildren(notice(e.message));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    for (const k of Object.keys(filters)) filters[k] = form.elements[k].value.trim();
    load(false).catch(fail);
  });
  more.addEventListener("click", () => load(true).catch(fail));
  el.append(h("div.pagehead", null, h("h1", null, "Requests")), form, rows, h("div.actions", null, more));
  await load(false);
}

function requestTable(data) {
  return table([
    { label: "Time", nowrap: true, cell: (r) => fmtTime(r.created_at) },
    { label: "Request", cell: (r) => h("a", { href: `#/requests/${encodeURIComponent(r.id)}` }, h("code", null, r.id)) },
    { label: "Key", cell: (r) => r.key_name ?? r.api_key_id ?? "—" },
    { label: "Model", cell: (r) => r.model ?? h("span.muted", null, r.surface) },
    { label: "Status", cell: (r) => statusText(r) },
    { label: "Duration", cell: (r) => fmtMs(r.duration_ms), num: true },
    { label: "Tokens in / out", cell: (r) => `${fmtNum(r.usage?.input_tokens)} / ${fmtNum(r.usage?.output_tokens)}`, num: true },
    { label: "Code runs", cell: (r) => fmtNum(r.code_runs), num: true },
    { label: "Sandbox", cell: (r) => `${fmtNum(r.sandbox_seconds, 2)} s`, num: true },
    { label: "Cost", cell: (r) => fmtUsd(r.cost?.value), num: true },
  ], data, "No request matches.", (r) => ({ "data-id": r.id }));
}

function statusText(r) {
  const s = r.aborted ? "aborted" : r.status === null ? "running" : String(r.status);
  return h(r.status >= 400 || r.aborted ? "span.bad" : "span", null, s);
}

async function detail({ el, arg }) {
  const r = await get(`${PATH}/${encodeURIComponent(arg)}`);
  const u = r.usage ?? {};
  const facts = [
    ["Time", fmtTime(r.created_at)], ["Key", `${r.key_name ?? "—"} (${r.api_key_id ?? "—"})`],
    ["Model", r.model === r.upstream_model || !r.upstream_model ? r.model ?? "—" : `${r.model} → ${r.upstream_model}`],
    ["Route", r.surface], ["Status", statusText(r)], ["Duration", fmtMs(r.duration_ms)],
    ["Tokens", `${fmtNum(u.input_tokens)} in (${fmtNum(u.input_cached_tokens)} cached) · ${fmtNum(u.output_tokens)} out (${fmtNum(u.reasoning_tokens)} reasoning) · ${fmtNum(u.num_model_requests)} model calls`],
    ["Code", `${fmtNum(r.code_runs)} runs · ${fmtNum(r.sandbox_seconds, 3)} s in sandboxes · ${fmtNum(r.sessions)} sessions`],
    ["Cost", fmtUsd(r.cost?.value)], ["Box", r.box ?? "—"],
  ];
  el.append(h("p", null, h("a", { href: "#/requests" }, "← Requests")),
    h("div.pagehead", null, h("h1", null, "Request ", h("code", null, r.id))),
    h("dl.facts", null, facts.map(([k, v]) => [h("dt", null, k), h("dd", null, v)])));
  const rounds = r.rounds ?? [];
  if (!r.has_trace || !rounds.length) {
    el.append(notice(r.has_trace ? "The trace is empty." : "No trace was kept for this request (relayed as is, or traces are off).", "info"));
    return;
  }
  el.append(h("h2", null, "Timeline"), timeline(rounds, r.duration_ms), h("h2", null, "Rounds"), h("div", null, rounds.map(round)));
}

// Every step on one time axis: a bar per upstream turn and per code run,
// placed by its start and length within the request.
function timeline(rounds, total) {
  const steps = [];
  for (const rd of rounds) {
    if (rd.model) steps.push({ label: `Round ${rd.round}: model`, cls: "model", ...rd.model });
    for (const run of rd.code_runs ?? []) steps.push({ label: `Round ${rd.round}: code (${run.tool})`, cls: run.error || run.failed ? "fail" : "code", ...run });
  }
  const end = Math.max(total ?? 0, ...steps.map((s) => (s.started_ms ?? 0) + (s.duration_ms ?? 0)), 1);
  return h("div.timeline", { role: "list" }, steps.map((s) => {
    const bar = h(`span.bar.${s.cls}`);
    // CSSOM, not a style attribute: allowed by style-src 'self'.
    bar.style.left = `${(100 * (s.started_ms ?? 0)) / end}%`;
    bar.style.width = `${Math.max(0.5, (100 * (s.duration_ms ?? 0)) / end)}%`;
    return h("div.step", { role: "listitem" }, h("span.steplabel", null, s.label),
      h("span.track", null, bar), h("span.steptime", null, `+${fmtMs(s.started_ms)} · ${fmtMs(s.duration_ms)}`));
  }));
}

function round(rd) {
  const m = rd.model;
  const head = m
    ? h("p.turn", null, `Model turn: at +${fmtMs(m.started_ms)}, took ${fmtMs(m.duration_ms)}, status ${m.status ?? "none"}`,
      m.usage ? ` · ${fmtNum(m.usage.input_tokens)} tokens in, ${fmtNum(m.usage.output_tokens)} out` : "")
    : null;
  return h("section.round", { "aria-label": `Round ${rd.round}` },
    h("h3", null, `Round ${rd.round}`), head,
    m?.error ? h("pre.out.err", null, m.error) : null,
    (rd.code_runs ?? []).map(codeRun));
}

function codeRun(run) {
  const cut = (t) => (t ? " (truncated)" : "");
  const block = (label, text, truncated, cls = "") => text
    ? h("div", null, h("h4", null, label + cut(truncated)), h(`pre.out${cls}`, null, text)) : null;
  const imgs = (run.outputs ?? []).filter((o) => o?.type === "image" && typeof o.url === "string" &&
    o.url.startsWith("data:image/png;base64,"));
  return h("article.run", null,
    h("p.runhead", null, `Code run in ${run.tool}`, run.sandbox_id ? [" · ", h("code", null, run.sandbox_id)] : null,
      ` · at +${fmtMs(run.started_ms)}, took ${fmtMs(run.duration_ms)}`),
    run.omitted ? notice("This run's details were left out (the trace was full).", "info") : null,
    block("Code", run.code, run.code_truncated, ".code"),
    block("stdout", run.stdout, run.stdout_truncated),
    block("stderr", run.stderr, run.stderr_truncated, ".err"),
    run.error ? block("Error", errorText(run.error), false, ".err") : null,
    run.failed ? block("Failed", typeof run.failed === "string" ? run.failed : JSON.stringify(run.failed, null, 2), false, ".err") : null,
    imgs.length ? h("div.images", null, imgs.map((o, i) => h("img", { src: o.url, alt: `Image ${i + 1} made by this run` })))
      : run.images ? h("p.muted", null, `${run.images} image(s) made (not kept in the trace).`) : null);
}

function errorText(e) {
  if (typeof e === "string") return e;
  return [`${e.name ?? "Error"}: ${e.value ?? ""}`, e.traceback].filter(Boolean).join("\n");
}
