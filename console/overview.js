// Overview: the gateway's live figures (GET /v1/organization/overview,
// which folds /metrics and the store together, since /metrics itself is
// usually loopback-only) and its last hour as small charts. Polled every
// 10 s while the tab is visible; a hidden tab costs the gateway nothing.
import { get } from "./api.js";
import { h, table, notice, fmtNum, fmtMs, fmtDuration, fmtTime } from "./dom.js";
import { timeChart } from "./chart.js";

const POLL_MS = 10000;

export async function render({ el, onLeave }) {
  let charts = [];
  const body = h("div");
  const stamp = h("span.muted");
  el.append(h("div.pagehead", null, h("h1", null, "Overview"), stamp), body);
  const drop = () => { for (const c of charts) c.destroy?.(); charts = []; };

  // Registered first: the operator may leave before the first answer.
  let stopped = false, timer = null;
  const onVisible = () => { if (document.visibilityState === "visible") refresh(); };
  onLeave(() => {
    stopped = true;
    clearInterval(timer);
    document.removeEventListener("visibilitychange", onVisible);
    drop();
  });

  async function refresh() {
    let o;
    try {
      o = await get("/v1/organization/overview");
    } catch (e) {
      if (e.status !== 401 && !stopped) body.replaceChildren(notice(e.message));
      return;
    }
    if (stopped) return;
    drop();
    const view = draw(o);
    charts = [...view.querySelectorAll("figure.chart")];
    body.replaceChildren(view);
    stamp.textContent = `Updated ${fmtTime(o.now)} · every ${POLL_MS / 1000} s`;
  }

  await refresh();
  if (stopped) return;
  timer = setInterval(onVisible, POLL_MS);
  document.addEventListener("visibilitychange", onVisible);
}

// The figures of the newest interval and the charts of the hour.
function draw(o) {
  const pts = o.series?.points ?? [];
  const step = o.series?.interval || 10;
  const last = pts[pts.length - 1] ?? {};
  const rate = last.requests !== undefined ? last.requests / step : null;
  const errRate = last.requests ? last.errors / last.requests : last.requests === 0 ? 0 : null;
  const r = o.responders ?? {};
  const sandboxCount = (o.sandboxes ?? []).reduce((n, s) => n + s.count, 0);
  const tiles = h("div.tiles", null,
    tile("Requests / s", rate === null ? "—" : fmtNum(rate, 2), `last ${step} s`),
    tile("Error rate", errRate === null ? "—" : `${fmtNum(errRate * 100, 1)} %`, "status ≥ 500"),
    tile("Latency p50 / p99", `${fmtMs(last.p50_ms)} / ${fmtMs(last.p99_ms)}`, `last ${step} s`),
    tile("Busy responders", `${fmtNum(r.busy)} / ${fmtNum(r.total)}`, `${fmtNum(r.queued)} queued · max ${fmtNum(r.workers_max)}`),
    tile("Sandboxes", fmtNum(sandboxCount), `${fmtNum(o.sessions)} sessions`),
    tile("Up", fmtDuration(o.now - o.started_at), [o.version ? `sandgate ${o.version}` : null, o.box ? `box ${o.box}` : null].filter(Boolean).join(" · ")));

  const x = pts.map((p) => p.t);
  const hour = { xRange: [o.now - 3600, o.now], empty: `No sample yet: one is taken every ${step} s.` };
  const col = (k, f = (v) => v) => pts.map((p) => (p[k] === null || p[k] === undefined ? null : f(p[k])));
  const charts = h("div.charts", null,
    timeChart("Requests per second", x, [
      { label: "requests/s", values: col("requests", (v) => v / step) },
      { label: "errors/s", values: col("errors", (v) => v / step) }], { ...hour, format: (v) => fmtNum(v, 2) }),
    timeChart("Latency", x, [{ label: "p50", values: col("p50_ms") }, { label: "p99", values: col("p99_ms") }],
      { ...hour, format: fmtMs }),
    timeChart("Responders", x, [{ label: "busy", values: col("busy") }, { label: "queued", values: col("queued") }], { ...hour, integer: true }),
    timeChart("Sandboxes", x, [{ label: "sandboxes", values: col("sandboxes") },
      { label: "sessions", values: col("sessions") }, { label: "warm", values: col("warm") }], { ...hour, integer: true }));

  const kinds = table([
    { label: "Tool", cell: (s) => s.tool },
    { label: "Kind", cell: (s) => s.kind },
    { label: "Alive", cell: (s) => fmtNum(s.count), num: true },
  ], o.sandboxes ?? [], "No sandbox is alive.");
  const pool = table([
    { label: "Tool", cell: (p) => p.tool },
    { label: "Warm", cell: (p) => fmtNum(p.warm), num: true },
    { label: "Target", cell: (p) => fmtNum(p.target), num: true },
  ], o.pool ?? [], "No warm pool is configured.");
  return h("div", null, tiles, h("h2", null, "Last hour"), charts,
    h("div.columns", null,
      h("section", null, h("h2", null, "Sandboxes by tool and kind"), kinds),
      h("section", null, h("h2", null, "Warm pool"), pool)));
}

function tile(label, value, sub) {
  return h("div.tile", null, h("div.label", null, label), h("div.value", null, value), sub ? h("div.sub", null, sub) : null);
}
