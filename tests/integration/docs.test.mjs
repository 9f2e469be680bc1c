// The documentation, run (docs/testing.md, "The documentation's own
// test"): README.md and docs/*.md.
//  - ```sh run blocks run in sh against a test stack, page by page in a
//    fresh directory, with SANDGATE_URL and SANDGATE_KEY set (and
//    SANDGATE_CONFIG, PATH for the `sandgate` command, UPSTREAM and
//    UPSTREAM_KEY for the fake upstream). A comment line "# → ..." under a
//    command is its output: JSON compared by shape, text line by line, "…"
//    matching anything. A command may not answer an OpenAI error the page
//    does not show.
//  - ```js run blocks run as Node modules with the `openai` package.
//  - ```libconfig blocks, and the samples in etc/, pass `sandgate
//    check-config` (their env: secrets set; a file: secret missing here is
//    the one warning allowed).
//  - Every relative link resolves (the file, and its #anchor against the
//    target's headings, as GitHub makes them), every repository path in
//    backticks exists, and the README stays a front page.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { root, Stack, KEYS, UPSTREAM_KEY, serviceUser, storeKind } from "./harness.mjs";

const BLOCK_MS = 120000;
const README_MAX_LINES = 300;
const cli = path.resolve(root, process.env.SG_BUILD || "build", "sandgate");

const pages = ["README.md", ...fs.readdirSync(path.join(root, "docs")).filter((f) => f.endsWith(".md"))
  .sort().map((f) => `docs/${f}`)];
const read = (f) => fs.readFileSync(path.join(root, f), "utf8");

// ---- Markdown ----------------------------------------------------------

// A page's fenced blocks ({lang, attrs, line, text}) and its prose lines
// (the rest, code blocks blanked so that line numbers stay).
function parse(file) {
  const lines = read(file).split("\n");
  const blocks = [], prose = [];
  let open = null;
  lines.forEach((l, i) => {
    if (!open) {
      const m = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)\s*(.*)$/.exec(l);
      if (m) {
        open = { indent: m[1].length, fence: m[2], lang: m[3], attrs: m[4].split(/\s+/).filter(Boolean),
          line: i + 1, body: [] };
        prose.push("");
      } else prose.push(l);
      return;
    }
    prose.push("");
    const c = /^\s*(`{3,}|~{3,})\s*$/.exec(l);
    if (c && c[1][0] === open.fence[0] && c[1].length >= open.fence.length) {
      blocks.push({ file, lang: open.lang, attrs: open.attrs, line: open.line, text: open.body.join("\n") + "\n" });
      open = null;
    } else {
      open.body.push(l.slice(Math.min(open.indent, /^\s*/.exec(l)[0].length)));
    }
  });
  assert.equal(open, null, `${file}:${open?.line}: a code block that is never closed`);
  return { blocks, prose };
}

// Inline code spans out of a prose line: [text without them, the spans].
function splitCode(line) {
  const spans = [];
  const text = line.replace(/(?<!`)(`+)(?!`)([\s\S]+?)(?<!`)\1(?!`)/g, (_, tick, code) => {
    spans.push(code.trim());
    return " ";
  });
  return [text, spans];
}

// GitHub's anchor of a heading: lower case, punctuation but - and _
// dropped, spaces made -, repeats numbered.
function anchors(file) {
  const seen = new Map(), out = new Set();
  for (const l of parse(file).prose) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(l);
    if (!m) continue;
    const text = m[1].replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/<[^>]*>/g, "");
    const base = text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "").replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

// ---- expected output -----------------------------------------------------

const ANY = "\u0000any";
const wildcard = (s) => new RegExp("^" + s.split("…").map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
  .join("[\\s\\S]*") + "$");

// An example's JSON with "…" standing for a whole value: parsed, each bare
// … made ANY ("…" inside a string stays: it matches any text there).
function parseExample(text) {
  let out = "", inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      out += ch;
      if (ch === "\\") out += text[++i];
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
      out += ch;
    } else out += ch === "…" ? JSON.stringify(ANY) : ch;
  }
  return JSON.parse(out);
}

// Does act have the shape of exp? Keys the same, strings equal (… matching
// anything), numbers any number (examples' ids and times are made up),
// null and booleans equal, arrays as long ([…] any array).
function shapeError(exp, act, where = "$") {
  if (exp === ANY) return null;
  if (typeof exp === "string")
    return typeof act === "string" && wildcard(exp).test(act) ? null : `${where}: ${JSON.stringify(act)} is not ${JSON.stringify(exp)}`;
  if (typeof exp === "number") return typeof act === "number" ? null : `${where}: ${JSON.stringify(act)} is not a number`;
  if (exp === null || typeof exp === "boolean") return act === exp ? null : `${where}: ${JSON.stringify(act)} is not ${exp}`;
  if (Array.isArray(exp)) {
    if (!Array.isArray(act)) return `${where}: not an array`;
    if (exp.length === 1 && exp[0] === ANY) return null;
    if (exp.length !== act.length) return `${where}: ${act.length} items, not ${exp.length}`;
    for (let i = 0; i < exp.length; i++) {
      const e = shapeError(exp[i], act[i], `${where}[${i}]`);
      if (e) return e;
    }
    return null;
  }
  if (act === null || typeof act !== "object" || Array.isArray(act)) return `${where}: not an object`;
  const ek = Object.keys(exp).sort(), ak = Object.keys(act).sort();
  if (ek.join() !== ak.join()) return `${where}: keys ${JSON.stringify(ak)}, not ${JSON.stringify(ek)}`;
  for (const k of ek) {
    const e = shapeError(exp[k], act[k], `${where}.${k}`);
    if (e) return e;
  }
  return null;
}

// Why actual output is not what the page shows, or null.
function outputError(expected, actual) {
  if (/^[[{]/.test(expected)) {
    let act;
    try { act = JSON.parse(actual); } catch { return `not JSON: ${actual}`; }
    return shapeError(parseExample(expected), act);
  }
  const el = expected.split("\n"), al = actual.split("\n");
  if (el.length !== al.length || el.some((e, i) => !wildcard(e).test(al[i])))
    return `${JSON.stringify(actual)} is not ${JSON.stringify(expected)}`;
  return null;
}

// An OpenAI error in a command's output the page did not show.
function unshownError(actual) {
  for (const l of actual.split("\n")) {
    try {
      const j = JSON.parse(l);
      if (j && typeof j === "object" && j.error && typeof j.error === "object") return l;
    } catch { /* not JSON */ }
  }
  return null;
}

// A sh block as a script: each run of "# → " lines becomes a marker, so
// the output between two markers is the command's above it.
function shScript(text) {
  const script = [], expected = [];
  let cur = null;
  for (const l of text.split("\n")) {
    const m = /^#\s*→\s?(.*)$/.exec(l);
    if (m) {
      if (!cur) {
        cur = [];
        expected.push(cur);
        script.push(`printf '\\n@@sgdoc:%d@@\\n' ${expected.length - 1}`);
      }
      cur.push(m[1]);
    } else {
      cur = null;
      script.push(l);
    }
  }
  return { script: script.join("\n") + "\nprintf '\\n@@sgdoc:end@@\\n'\n", expected: expected.map((e) => e.join("\n")) };
}

// Runs argv in cwd with env, its process group killed past ms: {code,
// stdout, stderr}.
function run(argv, { cwd, env, ms = BLOCK_MS }) {
  return new Promise((resolve) => {
    const p = spawn(argv[0], argv.slice(1), { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "", stderr = "", timedOut = false;
    p.stdout.on("data", (d) => { stdout += d; });
    p.stderr.on("data", (d) => { stderr += d; });
    const t = setTimeout(() => {
      timedOut = true;
      try { process.kill(-p.pid, "SIGKILL"); } catch { /* gone */ }
    }, ms);
    p.on("close", (code, sig) => {
      clearTimeout(t);
      resolve({ code: timedOut ? `timed out after ${ms} ms` : code ?? sig, stdout, stderr });
    });
  });
}

const where = (b) => `${b.file}:${b.line}`;

// ---- the runnable blocks -------------------------------------------------

describe("the pages' examples, run against a test stack", { skip: storeKind !== "sqlite" &&
  "runs on SQLite only (sandgate backup)" }, () => {
  let stack, env;
  const dirs = [];

  before(async () => {
    stack = await new Stack().start();
    env = {
      ...stack.env,
      SANDGATE_URL: stack.base,
      SANDGATE_KEY: KEYS.alice,
      SANDGATE_CONFIG: `${stack.dir}/sandgate.conf`,
      PATH: `${stack.dir}/bin:${process.env.PATH}`,
      UPSTREAM: `http://127.0.0.1:${stack.fakePort}`,
      UPSTREAM_KEY,
    };
  });

  after(async () => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    await stack?.stop();
  });

  // A page's working directory: the service user's (sandgate backup writes
  // there as the store's owner), with the tests' node_modules.
  function workDir() {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), "sgdoc-"));
    dirs.push(d);
    fs.symlinkSync(path.join(root, "tests/integration/node_modules"), path.join(d, "node_modules"));
    if (process.getuid() === 0) {
      const id = (f) => Number(spawnSync("id", [f, serviceUser], { encoding: "utf8" }).stdout.trim());
      fs.chownSync(d, id("-u"), id("-g"));
    }
    return d;
  }

  // A block, what it printed and the end of the gateway's log.
  const shown = (b, r) => `${where(b)}:\n${b.text}--- stdout:\n${r.stdout}--- stderr:\n${r.stderr}` +
    `--- the gateway's log, its end:\n${stack.log().split("\n").slice(-30).join("\n")}`;

  async function runSh(b, cwd, n) {
    const { script, expected } = shScript(b.text);
    const file = path.join(cwd, `block${n}.sh`);
    fs.writeFileSync(file, script);
    const r = await run(["sh", "-e", file], { cwd, env });
    assert.equal(r.code, 0, `the block at ${where(b)} failed (${r.code}):\n${shown(b, r)}`);
    const parts = r.stdout.split(/\n@@sgdoc:(\d+|end)@@\n/);
    // parts: out0, marker0, out1, marker1, ..., "end", tail
    for (let i = 0; i + 1 < parts.length; i += 2) {
      const out = parts[i].replace(/^\n+|\n+$/g, "");
      const marker = parts[i + 1];
      const exp = marker === "end" ? null : expected[Number(marker)];
      const err = exp === null ? null : outputError(exp, out);
      assert.equal(err, null, `the output at ${where(b)} is not what the page shows: ${err}\n${shown(b, r)}`);
      if (exp === null || !exp.includes('"error"')) {
        const e = unshownError(out);
        assert.equal(e, null, `a command at ${where(b)} answered an error the page does not show: ${e}\n${shown(b, r)}`);
      }
    }
  }

  async function runJs(b, cwd, n) {
    const file = path.join(cwd, `block${n}.mjs`);
    fs.writeFileSync(file, b.text);
    const r = await run([process.execPath, file], { cwd, env });
    assert.equal(r.code, 0, `the block at ${where(b)} failed (${r.code}):\n${shown(b, r)}`);
  }

  for (const page of pages) {
    const runnable = parse(page).blocks.filter((b) => b.attrs.includes("run"));
    if (runnable.length === 0) continue;
    test(`${page}: ${runnable.length} runnable blocks`, { timeout: runnable.length * BLOCK_MS + 30000 }, async () => {
      const cwd = workDir();
      let n = 0;
      for (const b of runnable) {
        if (b.lang === "sh") await runSh(b, cwd, n++);
        else if (b.lang === "js") await runJs(b, cwd, n++);
        else assert.fail(`${where(b)}: "run" on a ${b.lang || "plain"} block: only sh and js run`);
      }
    });
  }
});

// ---- the config samples -----------------------------------------------------

// `sandgate check-config` on text: null when it passes, else why. Secrets
// read from the environment are given; a file: secret that is not on this
// machine is the only warning allowed.
function checkConfig(text, label) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sgdoc-conf-"));
  try {
    const file = path.join(dir, "sandgate.conf");
    fs.writeFileSync(file, text);
    const env = { ...process.env };
    for (const m of text.matchAll(/"(?:env:|os\.environ\/)([A-Za-z_][A-Za-z0-9_]*)"/g))
      env[m[1]] = /BASE_URL$/.test(m[1]) ? "https://api.example.invalid/v1" :
        /URL$/.test(m[1]) ? "postgresql://sandgate@localhost/sandgate" : "sk-doc-placeholder";
    const r = spawnSync(cli, ["--config", file, "check-config"], { encoding: "utf8", env, timeout: 30000 });
    if (r.status === 0 && /: ok \(/.test(r.stdout)) return null;
    const bad = r.stderr.split("\n").filter((l) => l &&
      !/:\d+: [\w.[\]]+: cannot read \S+: No such file or directory$/.test(l) &&
      !/^sandgate: \d+ of the \d+ keys of .* have no secret yet/.test(l));
    return r.status === 1 && bad.length === 0 ? null : `${label}: check-config exited ${r.status ?? r.error?.message}:\n${r.stdout}${r.stderr}`;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test("every libconfig block, and the samples in etc/, pass sandgate check-config", { timeout: 120000 }, () => {
  const samples = [];
  for (const page of pages)
    for (const b of parse(page).blocks.filter((b) => b.lang === "libconfig")) samples.push([where(b), b.text]);
  for (const f of ["etc/sandgate.conf", "etc/sandgate-dev.conf", "etc/shared-hosting/sandgate.conf"])
    samples.push([f, read(f)]);
  assert.ok(samples.length > 3, "the pages have config samples");
  const errors = samples.map(([label, text]) => checkConfig(text, label)).filter(Boolean);
  assert.deepEqual(errors, []);
});

// ---- links and paths --------------------------------------------------------

// Top-level entries of the repository a path in backticks may start with.
const REPO_DIRS = /^(?:bench|cli|core|docs|etc|fcgi|fuzz|lib|packaging|providers|store|tests)\/[\w./-]*$/;

test("every relative link and every repository path in backticks resolves", () => {
  const broken = [];
  const anchorsOf = new Map();
  const targetAnchors = (f) => {
    if (!anchorsOf.has(f)) anchorsOf.set(f, anchors(f));
    return anchorsOf.get(f);
  };
  for (const page of pages) {
    parse(page).prose.forEach((line, i) => {
      const at = `${page}:${i + 1}`;
      const [text, spans] = splitCode(line);
      for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const link = m[1];
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:...
        const [file, anchor] = link.split("#");
        const target = file === "" ? page : path.normalize(path.join(path.dirname(page), file));
        if (target.startsWith("..") || !fs.existsSync(path.join(root, target))) {
          broken.push(`${at}: ${link}: no file ${target}`);
          continue;
        }
        if (anchor !== undefined && target.endsWith(".md") && !targetAnchors(target).has(anchor))
          broken.push(`${at}: ${link}: no heading #${anchor} in ${target}`);
      }
      for (const s of spans) {
        // NAME, DIR: placeholders; * and …: patterns.
        if (!REPO_DIRS.test(s) || /[*…]/.test(s) || s.split("/").some((p) => /^[A-Z]{2,}$/.test(p))) continue;
        if (!fs.existsSync(path.join(root, s))) broken.push(`${at}: \`${s}\`: no such file in the repository`);
      }
    });
  }
  assert.deepEqual(broken, []);
});

test(`the README stays a front page (at most ${README_MAX_LINES} lines)`, () => {
  const n = read("README.md").split("\n").length - 1;
  assert.ok(n <= README_MAX_LINES, `README.md has ${n} lines: move the detail into docs/`);
});
