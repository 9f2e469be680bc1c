// The operator's console (console/, served by sandgate at /console/) in a
// real browser: Debian's chromium driven by puppeteer-core, against a real
// stack. Every page loads with no console error, no CSP violation and no
// request to anything but the gateway; a wrong key is refused at sign-in;
// a key made in the UI works with the official SDK, and the request it
// made shows in Requests (its code and output) and in Usage; a limit
// changed in the UI is what the API then says; a key revoked in the UI
// gets 401; a key named like HTML and code printing <script> show as
// text and never run; a sandbox ended in the UI is gone. Screenshots of
// every page go to artifacts/console/. Under a mount prefix the console
// is served with its CSP and {{SANDGATE_BASE}} is the prefix.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import puppeteer from "puppeteer-core";
import { startStack, KEYS, request, root, waitFor } from "./harness.mjs";

const CHROMIUM = process.env.SG_CHROMIUM || "/usr/bin/chromium";
// tests/install-deps.sh installs chromium: CI must never skip these.
const skip = !fs.existsSync(CHROMIUM) && !process.env.CI ? `no ${CHROMIUM} (tests/install-deps.sh installs it)` : false;

const ADMIN = "sk-admin-" + crypto.randomBytes(8).toString("hex");
const AUTH = `admin_keys = ( { name = "ops"; key = "${ADMIN}"; } );`;
// USD per 1M tokens: a few tokens cost a visible amount in Usage.
const PRICED = "price = { input = 1000.0; output = 2000.0; };";
const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
const ART = path.join(root, "tests/integration/artifacts/console");
const MS = 15000; // every wait in the browser
const XSS_NAME = "<img src=x onerror=window.__xss=1>";
const XSS_OUT = "<script>window.__xss=2</script>";

let stack, prefixed, browser, page, profile;
// What went wrong in the browser since the last check: console errors,
// uncaught exceptions, CSP violations, requests to another origin.
let problems = [];

before(async () => {
  if (skip) return;
  fs.mkdirSync(ART, { recursive: true });
  [stack, prefixed] = await Promise.all([
    startStack({ sandboxes: true, interceptionTool: "local", auth: AUTH,
      models: (model) => model("ci-priced", "ci-args", PRICED) }),
    startStack({ mount_prefix: "/ai", auth: AUTH }),
  ]);
  profile = fs.mkdtempSync(path.join(os.tmpdir(), "sgchrome-"));
  browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true, userDataDir: profile, timeout: 30000, protocolTimeout: 60000,
    // As root chromium needs --no-sandbox; nothing here is untrusted web.
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  page = await watchedPage(stack.base);
});

after(async () => {
  await browser?.close().catch(() => {});
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
  await Promise.all([stack?.stop(), prefixed?.stop()]);
});

// A 1280x800 page whose every request, console error, exception and CSP
// violation is checked against origin.
async function watchedPage(origin) {
  const p = await browser.newPage();
  p.setDefaultTimeout(MS);
  p.setDefaultNavigationTimeout(MS);
  await p.setViewport({ width: 1280, height: 800 });
  p.on("request", (r) => {
    const u = r.url();
    if (!u.startsWith(origin + "/") && !u.startsWith("data:") && !u.startsWith("blob:" + origin))
      problems.push(`request outside the gateway: ${u}`);
  });
  p.on("console", (m) => { if (m.type() === "error") problems.push(`console error: ${m.text()}`); });
  p.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  // Chromium logs most violations; this catches every one, report-only too.
  await p.evaluateOnNewDocument(() => {
    document.addEventListener("securitypolicyviolation", (e) =>
      console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
  });
  return p;
}

// No problem since the last call (allowed: what this test expects).
function assertClean(allowed = []) {
  const left = problems.filter((p) => !allowed.some((re) => re.test(p)));
  problems = [];
  assert.deepEqual(left, [], left.join("\n"));
}

const consoleUrl = (s, hash = "") => s.url(`/console/${hash}`);
const shot = (name, p = page, full = false) => p.screenshot({ path: path.join(ART, `${name}.png`), fullPage: full });
const admin = (method, p, body, s = stack) =>
  request(s, method, p, { key: ADMIN, body: body === undefined ? undefined : JSON.stringify(body) });
const text = (sel, p = page) => p.$eval(sel, (el) => el.textContent);
const visibleText = (sel, p = page) => p.$eval(sel, (el) => (el.checkVisibility() ? el.textContent : null));
const sdk = (apiKey) => new OpenAI({ apiKey, baseURL: stack.url("/v1"), maxRetries: 0, timeout: 30000 });

// Once the page has its data (nothing is aria-busy) and has painted
// (two animation frames: uPlot draws on one). Not the network's idleness:
// the overview polls, and a fetch cut by a navigation may never end.
async function settled(p = page) {
  await p.waitForFunction(() => !document.querySelector("[aria-busy]"), { timeout: MS });
  await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

// Load a page of the console afresh (a hash change alone would not fetch
// its files again) and wait until it has drawn its heading and data. The
// tab's sessionStorage (the key) stays.
async function open(hash, heading, p = page, s = stack) {
  await p.goto("about:blank");
  await p.goto(consoleUrl(s, hash), { waitUntil: "load" });
  await p.waitForFunction((h) => document.querySelector("#page h1")?.textContent.startsWith(h), { timeout: MS }, heading);
  await settled(p);
}

async function signIn(key, p = page, s = stack) {
  await p.goto(consoleUrl(s), { waitUntil: "load" });
  await p.waitForSelector("#signin-form input[name=key]", { visible: true });
  await p.type("#signin-form input[name=key]", key);
  await p.click("#signin-form button[type=submit]");
}

// Signed in as the admin, whatever the tests before did (each test runs
// alone too, with --test-name-pattern).
async function signedIn() {
  await page.goto(consoleUrl(stack), { waitUntil: "load" });
  if (await page.evaluate(() => sessionStorage.getItem("sandgate.admin_key"))) return;
  await signIn(ADMIN);
  await page.waitForFunction(() => !document.querySelector("#nav").hidden, { timeout: MS });
}

// Once the ledger lists request id (the reaper writes it within moments;
// a request's trace may be readable before): Requests and Usage show it.
async function ledgered(id) {
  await waitFor(async () => (await admin("GET", "/v1/organization/requests?limit=100")).json.data.some((r) => r.id === id),
    `request ${id} in the ledger`);
}

// Create a key in the UI: its id and the secret shown once.
async function createKey(name, limits = {}) {
  await open("#/keys", "Keys");
  await page.type("form[aria-label='Create a key'] input[name=name]", name);
  for (const [k, v] of Object.entries(limits)) await page.type(`form[aria-label='Create a key'] input[name=${k}]`, String(v));
  await page.click("form[aria-label='Create a key'] button[type=submit]");
  await page.waitForSelector("[data-secret]", { visible: true });
  const secret = await text("[data-secret]");
  const keys = (await admin("GET", "/v1/organization/api_keys?limit=100")).json.data;
  const k = keys.find((x) => x.name === name);
  assert.ok(k, `${name} is listed`);
  await page.waitForSelector(`tr[data-id="${k.id}"]`);
  return { id: k.id, secret };
}

// A code_interpreter request with key whose code is code (the fake model
// ci-args runs what it is given): the answer and its request id.
async function runCode(key, code) {
  const { data, response } = await sdk(key).responses
    .create({ model: "ci-priced", input: JSON.stringify({ code }), tools: CI }).withResponse();
  return { answer: data, id: response.headers.get("x-request-id") };
}

// A test in the browser; a failed one leaves a screenshot of the page as
// it was (failed-N.png) and what the browser reported.
let nth = 0;
const t = (name, fn) => test(name, { skip, timeout: 120000 }, async (ctx) => {
  const n = ++nth;
  try {
    await fn(ctx);
  } catch (e) {
    await shot(`failed-${n}`).catch(() => {});
    if (problems.length) ctx.diagnostic(`browser: ${problems.join("; ")}`);
    problems = [];
    throw e;
  }
});

t("sign-in with a wrong key is refused: the message shows and the form stays", async () => {
  await signIn("sk-not-a-key");
  await page.waitForSelector("#signin-error:not([hidden])");
  assert.match(await visibleText("#signin-error"), /key/i);
  assert.equal(await page.$eval("#signin", (el) => el.hidden), false);
  assert.equal(await page.$eval("#nav", (el) => el.hidden), true);
  assert.equal(await page.evaluate(() => sessionStorage.getItem("sandgate.admin_key")), null);
  // A tenant's key is no admin's either (403).
  await page.$eval("#signin-form input[name=key]", (el) => { el.value = ""; });
  await page.type("#signin-form input[name=key]", KEYS.alice);
  await page.click("#signin-form button[type=submit]");
  await page.waitForFunction(() => /admin/.test(document.querySelector("#signin-error").textContent), { timeout: MS });
  assert.equal(await page.evaluate(() => sessionStorage.getItem("sandgate.admin_key")), null);
  await shot("signin-refused");
  // The refused checks themselves show as failed loads, nothing else.
  assertClean([/status of 40[13]/]);
});

t("a key made in the UI works with the SDK; its request shows in Requests with its code and output, and in Usage", async () => {
  await signedIn();
  const { id, secret } = await createKey("team-ui", { rpm: 600 });
  assert.match(secret, /^sk-/);
  assert.match(await text(".secretbox"), /shown only once/);
  const { answer, id: reqId } = await runCode(secret, "print(6*7)");
  const call = answer.output.find((o) => o.type === "code_interpreter_call");
  assert.ok(call, JSON.stringify(answer.output));
  assert.equal(call.code, "print(6*7)");
  await ledgered(reqId);

  await open("#/requests", "Requests");
  await page.waitForSelector(`tr[data-id="${reqId}"]`);
  assert.match(await text(`tr[data-id="${reqId}"]`), /team-ui/);
  await page.click(`tr[data-id="${reqId}"] a`);
  await page.waitForSelector("section.round pre.code");
  assert.equal(await visibleText("section.round pre.code"), "print(6*7)");
  const outs = await page.$$eval("section.round pre.out", (els) => els.map((e) => e.textContent));
  assert.ok(outs.includes("42\n"), JSON.stringify(outs));
  assert.equal(await page.$$eval("div.timeline .step", (els) => els.length), 3, "two model turns and a run");
  await settled();
  await shot("request", page, true);

  await open("#/usage", "Usage");
  await page.select("form[aria-label='Usage range'] select[name=by]", "key");
  await page.click("form[aria-label='Usage range'] button[type=submit]");
  await page.waitForFunction(() => [...document.querySelectorAll("#page tbody tr")].some((tr) => tr.cells[0]?.textContent === "team-ui"), { timeout: MS });
  const row = await page.$$eval("#page tbody tr", (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent))
    .find((cells) => cells[0] === "team-ui"));
  // The fake's two turns: 10 + 20 tokens in, 5 + 6 out; priced, so it cost.
  assert.deepEqual(row.slice(1, 4), ["2", "30", "11"], JSON.stringify(row));
  assert.notEqual(row[4], "$0.00", JSON.stringify(row));
  // Its code ran in one session, for some time.
  assert.notEqual(row[5], "0s", JSON.stringify(row));
  assert.equal(row[6], "1", JSON.stringify(row));
  // The CSV is made in the page from the same data (a Blob): catch it.
  await page.evaluate(() => {
    const made = URL.createObjectURL;
    window.__csv = null;
    URL.createObjectURL = (b) => { window.__csv = b.text(); return made(b); };
  });
  await page.click("#page .pagehead button");
  const csv = await page.waitForFunction(() => window.__csv, { timeout: MS }).then(() => page.evaluate(() => window.__csv));
  const lines = csv.trim().split("\r\n");
  assert.equal(lines[0], '"day","key","model_requests","input_tokens","output_tokens","cost_usd","sandbox_seconds","sessions"');
  const today = new Date().toISOString().slice(0, 10);
  assert.ok(lines.some((l) => l.startsWith(`"${today}","team-ui","2","30","11","0.052000",`)), csv);
  await settled();
  assertClean();

  // A limit changed in the UI is what the API says.
  await open("#/keys", "Keys");
  await page.click(`tr[data-id="${id}"] button[aria-label="Edit limits of team-ui"]`);
  await page.waitForSelector("dialog.edit[open] input[name=rpm]");
  await page.$eval("dialog.edit input[name=rpm]", (el) => { el.value = ""; });
  await page.type("dialog.edit input[name=rpm]", "1234");
  await page.type("dialog.edit input[name=budget]", "7.5");
  await page.select("dialog.edit select[name=budget_period]", "week");
  await shot("keys-edit");
  await page.click("dialog.edit button[type=submit]");
  await page.waitForSelector("dialog.edit", { hidden: true });
  const k = (await admin("GET", `/v1/organization/api_keys/${id}`)).json;
  assert.deepEqual(k.limits, { rpm: 1234, budget: 7.5, budget_period: "week" });
  await page.waitForFunction((kid) => /1,234 rpm/.test(document.querySelector(`tr[data-id="${kid}"]`)?.textContent), { timeout: MS }, id);

  // Revoked in the UI (after a confirmation), the SDK gets 401.
  await page.click(`tr[data-id="${id}"] button[aria-label="Revoke team-ui"]`);
  await page.waitForSelector("dialog.confirm[open]");
  await shot("keys-revoke-confirm");
  await page.click("dialog.confirm button.danger");
  await page.waitForSelector(`tr[data-id="${id}"]`, { hidden: true });
  await assert.rejects(sdk(secret).responses.create({ model: "gpt-test", input: "still there?" }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  assertClean();
});

t("XSS probe: a key named like HTML and code printing <script> render as text and never run", async () => {
  await signedIn();
  const { id, secret } = await createKey(XSS_NAME);
  const name = await visibleText(`tr[data-id="${id}"] strong.name`);
  assert.equal(name, XSS_NAME);
  const { id: reqId } = await runCode(secret, `print(${JSON.stringify(XSS_OUT)})`);
  await ledgered(reqId);
  const noXss = async () => {
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    assert.equal(await page.$("img[src='x'], img[onerror]"), null);
    assert.equal(await page.evaluate(() => [...document.scripts].some((s) => s.textContent.includes("__xss"))), false);
  };
  await noXss();
  await open(`#/requests/${reqId}`, "Request");
  await page.waitForSelector("section.round pre.out:not(.code)");
  const outs = await page.$$eval("section.round pre.out", (els) => els.filter((e) => e.checkVisibility()).map((e) => e.textContent));
  assert.ok(outs.includes(XSS_OUT + "\n"), JSON.stringify(outs));
  assert.match(await text("dl.facts"), /<img src=x onerror=window\.__xss=1>/);
  await noXss();
  // Everywhere the name shows: the list, Usage by key.
  await open("#/requests", "Requests");
  assert.ok((await text(`tr[data-id="${reqId}"]`)).includes(XSS_NAME));
  await open("#/usage", "Usage");
  await page.select("form[aria-label='Usage range'] select[name=by]", "key");
  await page.click("form[aria-label='Usage range'] button[type=submit]");
  await page.waitForFunction((n) => [...document.querySelectorAll("#page tbody td")].some((td) => td.textContent === n), { timeout: MS }, XSS_NAME);
  await noXss();
  assertClean();
});

t("ending a sandbox in the Sandboxes page deletes it", async () => {
  await signedIn();
  const made = await request(stack, "POST", "/v1/sandboxes", { body: JSON.stringify({ tool: "local" }) });
  assert.equal(made.status, 201, made.text);
  const sid = made.json.id;
  await open("#/sandboxes", "Sandboxes");
  await page.waitForSelector(`tr[data-id="${sid}"]`);
  assert.match(await text(`tr[data-id="${sid}"]`), /alice/);
  await shot("sandboxes");
  await page.click(`tr[data-id="${sid}"] button.danger`);
  await page.waitForSelector("dialog.confirm[open]");
  await page.click("dialog.confirm button.danger");
  await page.waitForSelector(`tr[data-id="${sid}"]`, { hidden: true });
  const list = await admin("GET", "/v1/organization/sandboxes");
  assert.equal(list.status, 200, list.text);
  assert.ok(!list.json.data.some((s) => s.id === sid), list.text);
  assert.equal((await request(stack, "GET", `/v1/sandboxes/${sid}`)).status, 404);
  assertClean();
});

t("every page loads with no console error, no CSP violation and no request outside the gateway", async () => {
  await signedIn();
  // Some traffic for the overview's charts: a sample is taken every 10 s.
  for (let i = 0; i < 3; i++) assert.equal((await request(stack, "POST", "/v1/responses",
    { body: JSON.stringify({ model: "gpt-test", input: `hello ${i}` }) })).status, 200);
  await waitFor(async () => (await admin("GET", "/v1/organization/overview")).json.series.points.some((p) => p.requests > 0),
    "a sample with requests", 30000);
  const box = await request(stack, "POST", "/v1/sandboxes", { body: JSON.stringify({ tool: "local" }) });
  assert.equal(box.status, 201, box.text);
  const pages = [["#/overview", "Overview"], ["#/keys", "Keys"], ["#/usage", "Usage"], ["#/sandboxes", "Sandboxes"],
    ["#/requests", "Requests"]];
  // Each from a fresh load, so every file of the console is fetched again.
  for (const [hash, heading] of pages) {
    await open(hash, heading);
    assert.equal(await page.$("#page .notice.error"), null, `an error on ${hash}: ${await page.$eval("#page", (e) => e.textContent)}`);
    await shot(hash.slice(2));
  }
  assert.ok(await page.$$eval("#nav a", (as) => as.length === 5));
  // The overview: its figures and charts (uPlot canvases) drew.
  await open("#/overview", "Overview");
  assert.ok((await page.$$("figure.chart canvas")).length >= 4);
  assert.match(await text(".tiles"), /Busy responders/);
  // At a phone's width, and dark.
  await page.setViewport({ width: 390, height: 844 });
  await open("#/overview", "Overview");
  await shot("overview-390", page, true);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than a phone`);
  await page.setViewport({ width: 1280, height: 800 });
  await page.click("#theme");
  await page.waitForFunction(() => document.documentElement.dataset.theme === "dark", { timeout: MS });
  await settled();
  await shot("overview-dark");
  // The choice is kept for the next visit.
  await page.reload({ waitUntil: "load" });
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), "dark");
  await page.click("#theme");
  // Signed out: the key is gone from the tab.
  await page.click("#signout");
  await page.waitForSelector("#signin", { visible: true });
  assert.equal(await page.evaluate(() => sessionStorage.getItem("sandgate.admin_key")), null);
  assertClean();
});

t("under a mount prefix: the console has its CSP and headers, and {{SANDGATE_BASE}} is the prefix", async () => {
  const r = await fetch(`${prefixed.base}/ai/console/`, { signal: AbortSignal.timeout(MS) });
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type"), /^text\/html/);
  assert.equal(r.headers.get("content-security-policy"), "default-src 'none'; script-src 'self'; style-src 'self'; " +
    "img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; " +
    "form-action 'none'; frame-ancestors 'none'");
  assert.equal(r.headers.get("x-frame-options"), "DENY");
  assert.equal(r.headers.get("x-content-type-options"), "nosniff");
  assert.equal(r.headers.get("referrer-policy"), "no-referrer");
  const html = await r.text();
  assert.ok(!html.includes("{{SANDGATE_BASE}}"), "the placeholder is replaced");
  assert.match(html, /<meta name="sandgate-base" content="\/ai">/);
  // Nothing in the page itself breaks the CSP: no inline script or style.
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i);
  const js = await fetch(`${prefixed.base}/ai/console/app.js`, { signal: AbortSignal.timeout(MS) });
  assert.equal(js.status, 200);
  assert.match(js.headers.get("content-type"), /^text\/javascript/);
  assert.ok(js.headers.get("content-security-policy"));
  // The browser under the prefix: every file and API call under /ai.
  const p = await watchedPage(prefixed.base);
  try {
    const seen = [];
    p.on("request", (q) => seen.push(new URL(q.url()).pathname));
    await signIn(ADMIN, p, prefixed);
    await p.waitForFunction(() => !document.querySelector("#nav").hidden, { timeout: MS });
    await open("#/overview", "Overview", p, prefixed);
    assert.ok(seen.includes("/ai/v1/organization/overview"), seen.join(" "));
    assert.ok(seen.every((s) => s.startsWith("/ai/")), seen.join(" "));
  } finally {
    await p.close();
  }
  assertClean();
});
