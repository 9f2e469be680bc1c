// The console's shell: theme, sign-in, and the hash router that hands
// each page a fresh container. Pages live in their own modules and export
// render(ctx); ctx.onLeave(fn) registers what to stop (timers, charts)
// when the operator navigates away.
import { api, getKey, setKey, clearKey, whenUnauthorized } from "./api.js";
import { h, notice } from "./dom.js";
import * as overview from "./overview.js";
import * as keys from "./keys.js";
import * as usage from "./usage.js";
import * as sandboxes from "./sandboxes.js";
import * as requests from "./requests.js";

const PAGES = { overview, keys, usage, sandboxes, requests };
const $ = (id) => document.getElementById(id);

// Theme: the operator's choice (localStorage) or else the system's. The
// effective one is always written to <html data-theme>, so the CSS and
// the charts read a single source.
const THEME = "sandgate.theme";
const dark = matchMedia("(prefers-color-scheme: dark)");
function applyTheme() {
  const t = localStorage.getItem(THEME) ?? (dark.matches ? "dark" : "light");
  document.documentElement.dataset.theme = t;
  $("theme").textContent = t === "dark" ? "Light" : "Dark";
  $("theme").setAttribute("aria-label", `Switch to ${t === "dark" ? "light" : "dark"} theme`);
}

let leave = [];
function leavePage() {
  for (const fn of leave) {
    try { fn(); } catch { /* a page's cleanup must not block the next page */ }
  }
  leave = [];
}

function showSignin(message) {
  leavePage();
  $("page").replaceChildren();
  $("nav").hidden = true;
  $("signout").hidden = true;
  $("signin").hidden = false;
  const err = $("signin-error");
  err.hidden = !message;
  err.textContent = message ?? "";
  $("signin-form").elements.key.focus();
}

// #/name/arg → the page's render; anything else goes to the overview.
async function route(focus = false) {
  if (!getKey()) return showSignin();
  const [, name, ...rest] = location.hash.split("/");
  const page = PAGES[name];
  if (!page) {
    location.replace("#/overview");
    return;
  }
  leavePage();
  $("signin").hidden = true;
  $("nav").hidden = false;
  $("signout").hidden = false;
  for (const a of $("nav").querySelectorAll("a"))
    a.toggleAttribute("aria-current", a.getAttribute("href") === `#/${name}`);
  const el = h("div.page");
  $("page").replaceChildren(el);
  document.title = `${name[0].toUpperCase()}${name.slice(1)} · sandgate`;
  // A keyboard user who followed a link starts at the new page.
  if (focus) $("main").focus({ preventScroll: true });
  // aria-busy until the page has its data: screen readers wait, and so
  // do the browser tests.
  el.setAttribute("aria-busy", "true");
  try {
    await page.render({ el, arg: rest.map(decodeURIComponent).join("/"), onLeave: (fn) => leave.push(fn) });
  } catch (e) {
    // A 401 already sent us to sign-in.
    if (e.status !== 401) el.append(notice(e.message));
  } finally {
    el.removeAttribute("aria-busy");
  }
}

async function signIn(ev) {
  ev.preventDefault(); // form-action 'none': the form never submits
  const form = ev.target;
  const key = form.elements.key.value.trim();
  const button = form.querySelector("button");
  if (!key) return;
  button.disabled = true;
  try {
    await api("GET", "/v1/organization/overview", undefined, key);
    setKey(key);
    form.reset();
    $("signin-error").hidden = true;
    if (!location.hash.startsWith("#/")) location.replace("#/overview");
    await route(true);
  } catch (e) {
    showSignin(e.status === 403 ? `This key is not an admin key. (${e.message})` : e.message);
  } finally {
    button.disabled = false;
  }
}

applyTheme();
dark.addEventListener("change", () => { applyTheme(); route(); });
$("theme").addEventListener("click", () => {
  localStorage.setItem(THEME, document.documentElement.dataset.theme === "dark" ? "light" : "dark");
  applyTheme();
  // Charts take their colours when drawn: draw the page again.
  if (getKey()) route();
});
$("signout").addEventListener("click", () => {
  clearKey();
  showSignin();
});
$("signin-form").addEventListener("submit", signIn);
// The skip link must not touch the hash: the hash is the router's.
document.querySelector(".skip").addEventListener("click", (e) => {
  e.preventDefault();
  $("main").focus();
});
whenUnauthorized((e) => showSignin(`Signed out: ${e.message}`));
addEventListener("hashchange", () => route(true));
route();
