// Sandboxes and sessions: what is alive now, whose, since when and idle
// for how long; End deletes one at its provider (after a confirmation:
// the code running in it stops and its files are gone).
import { api, get, qs } from "./api.js";
import { h, table, field, select, confirmDialog, notice, fmtTime, fmtDuration, fmtAgo } from "./dom.js";

const PATH = "/v1/organization/sandboxes";
const KINDS = [["", "any"], ["session", "session"], ["conversation", "conversation"], ["explicit", "explicit"],
  ["ephemeral", "ephemeral"], ["warm", "warm"]];

export async function render({ el }) {
  const status = h("div");
  const list = h("div", null, h("p.muted", null, "Loading…"));
  const filters = h("form.filters", { "aria-label": "Filter sandboxes" },
    field("Kind", select("kind", KINDS, "")),
    field("Tool", h("input", { name: "tool", type: "text", placeholder: "any", autocomplete: "off" })),
    h("button", { type: "submit" }, "Refresh"));
  const load = async () => {
    const q = { kind: filters.elements.kind.value, tool: filters.elements.tool.value.trim() };
    const r = await get(PATH + qs(q));
    list.replaceChildren(boxTable(r.data, load, status, r.now ?? Date.now() / 1000));
  };
  filters.addEventListener("submit", (ev) => {
    ev.preventDefault();
    load().catch((e) => list.replaceChildren(notice(e.message)));
  });
  el.append(h("div.pagehead", null, h("h1", null, "Sandboxes and sessions")), filters, status, list);
  await load();
}

function boxTable(rows, reload, status, now) {
  return table([
    { label: "Sandbox", cell: (s) => h("code", null, s.id) },
    { label: "Tool", cell: (s) => s.provider && s.provider !== s.tool ? `${s.tool} (${s.provider})` : s.tool },
    { label: "Kind", cell: (s) => s.kind },
    { label: "Status", cell: (s) => s.running_code ? `${s.status}, running code` : s.status },
    { label: "Key", cell: (s) => s.key_name ?? (s.api_key_id ? h("code", null, s.api_key_id) : h("span.muted", null, "pool")) },
    { label: "Session", cell: (s) => s.session_id ? h("code", null, s.session_id) : s.name ?? "—" },
    { label: "Since", nowrap: true, cell: (s) => h("span", { title: fmtTime(s.created_at) }, fmtAgo(s.created_at, now)) },
    { label: "Idle for", nowrap: true, cell: (s) => fmtDuration(s.idle_seconds) },
    { label: "Expires", nowrap: true, cell: (s) => fmtTime(s.expires_at) },
    { label: "", cell: (s) => h("button.danger", { type: "button", "aria-label": `End ${s.id}`, onclick: () => end(s, reload, status) }, "End") },
  ], rows, "No sandbox is alive.", (s) => ({ "data-id": s.id }));
}

async function end(s, reload, status) {
  const whose = s.key_name ? ` of ${s.key_name}` : "";
  if (!(await confirmDialog(`End sandbox ${s.id}${whose}? Code running in it stops and its files are lost.`, "End sandbox")))
    return;
  try {
    await api("DELETE", `${PATH}/${encodeURIComponent(s.id)}`);
    status.replaceChildren(notice(`Sandbox ${s.id} ended.`, "ok"));
  } catch (e) {
    status.replaceChildren(notice(e.message));
  }
  await reload();
}
