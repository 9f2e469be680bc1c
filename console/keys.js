// Keys: every key with its limits, this period's spend and last use;
// create one (its secret is in the create answer only, so it is shown
// once here), change a key's limits, revoke it. Keys from the config file
// change only in the file: the API refuses them, so they show read-only.
import { api, listAll } from "./api.js";
import { h, table, field, select, confirmDialog, notice, fmtAgo, fmtTime, fmtNum, fmtUsd, fmtDuration } from "./dom.js";

const PATH = "/v1/organization/api_keys";
const PERIODS = [["", "default"], ["day", "day"], ["week", "week"], ["month", "month"]];
// The limits a key can have, as the API names them, and how to show them.
const LIMITS = [
  ["rpm", "Requests / minute", "number"],
  ["tpm", "Tokens / minute", "number"],
  ["budget", "Budget (USD)", "money"],
  ["budget_period", "Budget period", "period"],
  ["sandbox_seconds", "Sandbox seconds / period", "number"],
  ["max_concurrent", "Concurrent requests", "number"],
  ["tools", "Sandbox tools (comma-separated)", "tools"],
];

export async function render({ el }) {
  const status = h("div");
  const list = h("div", null, h("p.muted", null, "Loading…"));
  const reload = async () => list.replaceChildren(keyTable(await listAll(PATH), reload, status));
  el.append(h("div.pagehead", null, h("h1", null, "Keys")), createForm(reload), status, list);
  await reload();
}

function keyTable(keys, reload, status) {
  return table([
    { label: "Name", cell: (k) => h("strong.name", null, k.name) },
    { label: "ID", cell: (k) => h("code", null, k.id) },
    { label: "Key", cell: (k) => h("code", null, k.redacted_value) },
    { label: "Limits", cell: (k) => limitsText(k.effective_limits, k.limits) },
    { label: "Spend this period", cell: (k) => spendText(k.spend) },
    { label: "Last used", nowrap: true, cell: (k) => h("span", { title: fmtTime(k.last_used_at) }, fmtAgo(k.last_used_at)) },
    { label: "Created", nowrap: true, cell: (k) => fmtTime(k.created_at) },
    { label: "", cell: (k) => k.source === "config" ? h("span.muted", { title: "Change it in sandgate's config file" }, "config file")
      : h("span.actions", null,
        h("button", { type: "button", "aria-label": `Edit limits of ${k.name}`, onclick: () => editDialog(k, reload, status) }, "Edit limits"),
        h("button.danger", { type: "button", "aria-label": `Revoke ${k.name}`, onclick: () => revoke(k, reload, status) }, "Revoke")) },
  ], keys, "No keys.", (k) => ({ "data-id": k.id }));
}

// The limits in force; those set on the key itself are marked, the rest
// come from auth.limits. 0 means none.
function limitsText(eff = {}, own = {}) {
  const parts = [];
  const mark = (k) => (k in own ? "" : " (default)");
  if (eff.rpm) parts.push(`${fmtNum(eff.rpm)} rpm${mark("rpm")}`);
  if (eff.tpm) parts.push(`${fmtNum(eff.tpm)} tpm${mark("tpm")}`);
  if (eff.budget) parts.push(`${fmtUsd(eff.budget)} / ${eff.budget_period}${mark("budget")}`);
  if (eff.sandbox_seconds) parts.push(`${fmtDuration(eff.sandbox_seconds)} sandbox / ${eff.budget_period}`);
  if (eff.max_concurrent) parts.push(`${fmtNum(eff.max_concurrent)} at once`);
  if ("tools" in own) parts.push(`tools: ${(own.tools ?? []).join(", ") || "none"}`);
  return parts.length ? parts.join(" · ") : h("span.muted", null, "none");
}

function spendText(s) {
  if (!s) return "—";
  return `${fmtUsd(s.amount)} · ${fmtNum(s.tokens)} tokens · ${fmtDuration(s.sandbox_seconds)} sandbox · ${fmtNum(s.requests)} req (${s.period})`;
}

// An input for one limit, holding value (null: empty).
function limitInput(name, kind, value, placeholder) {
  if (kind === "period") return select(name, PERIODS, value ?? "");
  const v = value === null || value === undefined ? "" : kind === "tools" ? value.join(", ") : String(value);
  const attrs = kind === "tools" ? { type: "text" } : { type: "number", min: "0", step: kind === "money" ? "0.01" : "1", inputmode: "decimal" };
  return h("input", { name, ...attrs, value: v, placeholder: placeholder ?? "" });
}

// The form's value for one limit: a number, a period, a list of tools,
// or null (empty: no limit of its own).
function readLimit(form, name, kind) {
  const raw = form.elements[name].value.trim();
  if (raw === "") return null;
  if (kind === "period") return raw;
  if (kind === "tools") return raw.split(",").map((t) => t.trim()).filter(Boolean);
  return Number(raw);
}

function createForm(reload) {
  const out = h("div");
  const form = h("form.card", { "aria-label": "Create a key" },
    h("h2", null, "Create a key"),
    h("div.grid", null,
      field("Name", h("input", { name: "name", type: "text", required: true, maxlength: "128", autocomplete: "off" })),
      LIMITS.map(([name, label, kind]) => field(label, limitInput(name, kind, null, kind === "tools" ? "all" : "none")))),
    h("div.actions", null, h("button.primary", { type: "submit" }, "Create key")), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault(); // form-action 'none': nothing submits
    const body = { name: form.elements.name.value.trim() };
    for (const [name, , kind] of LIMITS) {
      const v = readLimit(form, name, kind);
      if (v !== null) body[name] = v;
    }
    try {
      const k = await api("POST", PATH, body);
      form.reset();
      out.replaceChildren(secretBox(k));
      await reload();
    } catch (e) {
      out.replaceChildren(notice(e.message));
    }
  });
  return form;
}

// The new secret, once, with a copy button.
function secretBox(k) {
  const secret = h("code.secret", { "data-secret": "" }, k.value);
  const copied = h("span.muted", { role: "status" });
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(k.value);
      copied.textContent = "Copied.";
    } catch {
      // No clipboard (a plain-http origin): select it for Ctrl+C.
      getSelection().selectAllChildren(secret);
      copied.textContent = "Selected: press Ctrl+C.";
    }
  };
  return h("div.notice.secretbox", { role: "status" },
    h("p", null, h("strong", null, `Key “${k.name}” created. `), "Copy its secret now: it is shown only once."),
    h("div.secretline", null, secret, h("button", { type: "button", onclick: copy }, "Copy"), copied));
}

function editDialog(k, reload, status) {
  const own = k.limits ?? {};
  const err = h("div");
  const form = h("form", { method: "dialog" },
    h("h2", null, `Limits of ${k.name}`),
    h("p.muted", null, "Empty: the default (auth.limits) applies."),
    h("div.grid", null, LIMITS.map(([name, label, kind]) =>
      field(label, limitInput(name, kind, own[name] ?? null, placeholderOf(k.effective_limits?.[name]))))),
    err,
    h("div.actions", null,
      h("button", { type: "button", onclick: () => close() }, "Cancel"),
      h("button.primary", { type: "submit" }, "Save")));
  const dlg = h("dialog.edit", { "aria-label": `Limits of ${k.name}` }, form);
  const close = () => { dlg.close(); dlg.remove(); };
  dlg.addEventListener("cancel", (e) => { e.preventDefault(); close(); });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    // Only what changed: null clears a limit of the key's own.
    const body = {};
    for (const [name, , kind] of LIMITS) {
      const v = readLimit(form, name, kind);
      if (JSON.stringify(v) !== JSON.stringify(own[name] ?? null)) body[name] = v;
    }
    try {
      if (Object.keys(body).length) await api("POST", `${PATH}/${encodeURIComponent(k.id)}`, body);
      close();
      status.replaceChildren(notice(`Limits of “${k.name}” saved.`, "ok"));
      await reload();
    } catch (e) {
      err.replaceChildren(notice(e.message));
    }
  });
  document.body.append(dlg);
  dlg.showModal();
}

const placeholderOf = (v) => (v === undefined || v === null || v === 0 ? "none" : Array.isArray(v) ? v.join(", ") : String(v));

async function revoke(k, reload, status) {
  if (!(await confirmDialog(`Revoke the key “${k.name}” (${k.id})? Its next request gets 401. This cannot be undone.`, "Revoke")))
    return;
  try {
    await api("DELETE", `${PATH}/${encodeURIComponent(k.id)}`);
    status.replaceChildren(notice(`Key “${k.name}” revoked.`, "ok"));
  } catch (e) {
    status.replaceChildren(notice(e.message));
  }
  await reload();
}
