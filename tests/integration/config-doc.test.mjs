// docs/configuration.md, and sandgate.conf(5) made from it, against the
// config reader: every setting the C code accepts has a row in its group's
// table (an entry of its group's section of the page), every row is a
// setting `sandgate check-config` reads, and the ranges, allowed words and
// numeric defaults given are the code's. Reads the reader's C files as text
// (no build of its own), makes the page with `make` and runs the built
// `sandgate` (SG_BUILD, default build/).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { root } from "./harness.mjs";
import { plain } from "./roff.mjs";

// The config reader's C files, read as one text: a move or a split of
// them changes this list only.
const READER = ["core/config/config.c", "core/config/config_parts.c", "core/config/config_read.c",
  "core/config/config_usage.c"];
const PROVIDER = "providers/provider.c";   // sg_provider_parse(): the provider words

const read = (f) => fs.readFileSync(path.join(root, f), "utf8");
const build = process.env.SG_BUILD || "build";
const cli = path.resolve(root, build, "sandgate");
const DOC = "docs/configuration.md";
const PAGE = `${build}/man/sandgate.conf.5`;

// A C integer constant expression of the reader's kind: N, A * B, A << B.
function cnum(expr) {
  const prod = (s) => s.split("*").reduce((acc, t) => {
    const m = /^\s*(\d+)(?:[uUlL]*)\s*$/.exec(t);
    return acc === null || !m ? null : acc * Number(m[1]);
  }, 1);
  const parts = expr.split("<<");
  if (parts.length > 2) return null;
  const a = prod(parts[0]);
  const b = parts.length === 2 ? prod(parts[1]) : 0;
  return a === null || b === null ? null : a * 2 ** b;
}

// ---- the code ----------------------------------------------------------
function fromCode() {
  const all = READER.map(read).join("\n");
  const arrays = {};
  for (const m of all.matchAll(/static const char \*const (\w+)\[\] = \{([^}]*)\}/g))
    arrays[m[1]] = [...m[2].matchAll(/"([^"]*)"/g)].map((x) => x[1]);

  // Which key list belongs to which group, as the reader names groups in
  // its messages: "" (top level), "server", "auth.keys[]", ...
  const keys = {};        // group -> [key]
  const fnGroup = {};     // C function -> group
  for (const m of all.matchAll(/sg_cfgld_check_keys\(ld,\s*[^,]+,\s*(\w+),\s*"([^"]*)"\)/g))
    keys[m[2]] = arrays[m[1]];
  for (const m of all.matchAll(/sg_cfgld_list\(ld,\s*\w+,\s*"([^"]+)",\s*(\w+),[^;]*?,\s*(\w+)\);/g)) {
    keys[`${m[1]}[]`] = arrays[m[2]];
    fnGroup[m[3]] = `${m[1]}[]`;
  }

  // The reader function by function; a helper takes its caller's group.
  const fns = {};
  for (const m of all.matchAll(/^(\w+)\(struct sg_cfgld \*ld,[^)]*\)\n\{([\s\S]*?)\n\}/gm))
    fns[m[1]] = m[2];
  for (const [name, body] of Object.entries(fns)) {
    const m = /sg_cfgld_check_keys\(ld,\s*[^,]+,\s*\w+,\s*"([^"]*)"\)/.exec(body);
    if (m) fnGroup[name] = m[1];
  }
  for (let changed = true; changed;) {
    changed = false;
    for (const [caller, body] of Object.entries(fns))
      for (const callee of Object.keys(fns))
        if (fnGroup[caller] !== undefined && fnGroup[callee] === undefined &&
            new RegExp(`\\b${callee}\\(`).test(body)) {
          fnGroup[callee] = fnGroup[caller];
          changed = true;
        }
  }

  const ranges = [];      // { group, key, min, max }
  const words = [];       // { group, key, words }
  const defaults = [];    // { group, key, value }
  for (const [name, body] of Object.entries(fns)) {
    const group = fnGroup[name];
    if (group === undefined) continue;
    for (const m of body.matchAll(/sg_cfgld_(?:int|llong)\(ld,\s*\w+,\s*"(\w+)",\s*&[\w>.-]+,\s*([^,]+?),\s*([^)]+?)\)/g))
      ranges.push({ group, key: m[1], min: cnum(m[2]), max: cnum(m[3]) });
    for (const m of body.matchAll(/sg_cfgld_word\(ld,\s*\w+,\s*"(\w+)",\s*&[\w>.-]+,\s*(\w+)\)/g))
      words.push({ group, key: m[1], words: arrays[m[2]] });
    // Per-entry defaults set before the entry is read: m->timeout = 600;
    for (const m of body.matchAll(/\b\w+->(\w+) = ([^;]+);/g))
      if (keys[group]?.includes(m[1]) && cnum(m[2]) !== null)
        defaults.push({ group, key: m[1], value: String(cnum(m[2])) });
  }
  const prov = /sg_provider_parse\([^)]*\)\n\{([\s\S]*?)\n\}/.exec(read(PROVIDER));
  words.push({ group: "sandbox_tools[]", key: "provider",
    words: [...prov[1].matchAll(/strcmp\(s, "(\w+)"\)/g)].map((x) => x[1]) });

  // set_defaults(): cfg->server.request_timeout = 600; strdup("...") too;
  // X_min and X_max are the array X; a negative value means "unset".
  const sd = /^set_defaults\(struct sg_cfg \*cfg\)\n\{([\s\S]*?)\n\}/m.exec(all)[1];
  const pairs = {};
  for (const m of sd.matchAll(/cfg->(\w+)\.(\w+) = ([^;]+);/g)) {
    const [, group, field, expr] = m;
    const s = /^strdup\(("[^"]*")\)$/.exec(expr.trim());
    const n = cnum(expr);
    const mm = /^(\w+)_(min|max)$/.exec(field);
    if (mm && keys[group]?.includes(mm[1]) && n !== null)
      (pairs[`${group}.${mm[1]}`] ??= { group, key: mm[1] })[mm[2]] = n;
    else if (keys[group]?.includes(field) && (s || (n !== null && n >= 0)))
      defaults.push({ group, key: field, value: s ? s[1] : n, bool: !s });
  }
  for (const p of Object.values(pairs))
    defaults.push({ group: p.group, key: p.key, value: `[${p.min}, ${p.max}]` });

  const prefixes = [...all.matchAll(/strncmp\(spec, "([^"]+)", \d+\)/g)].map((m) => m[1]);
  const path = /#define SG_DEFAULT_CONFIG "([^"]+)"/.exec(all)[1];
  const env = /getenv\("(SANDGATE_\w+)"\)/.exec(all)[1];
  const fileMax = /#define SECRET_FILE_MAX (\d+)/.exec(all)[1];
  return { keys, ranges, words, defaults, prefixes, path, env, fileMax };
}

// ---- the document ------------------------------------------------------
// "## `server`" starts group server, "## Top level" the top level; other
// "## " headings end the groups. Tables with the header
// "| key | type | default | meaning |" hold the settings.
function fromDoc(text) {
  const rows = [];
  let group = null, inTable = false;
  text.split("\n").forEach((line, i) => {
    const h = /^## (.*)$/.exec(line);
    if (h) {
      const g = /^`([^`]+)`\s*$/.exec(h[1]);
      group = g ? g[1] : h[1].trim() === "Top level" ? "" : null;
      inTable = false;
      return;
    }
    if (/^\|\s*key\s*\|\s*type\s*\|\s*default\s*\|\s*meaning\s*\|\s*$/.test(line)) {
      inTable = true;
      return;
    }
    if (!line.startsWith("|")) {
      inTable = false;
      return;
    }
    if (!inTable || group === null || /^\|\s*-/.test(line)) return;
    const cells = line.slice(1, -1).split("|").map((c) => c.trim());
    const key = /^`([^`]+)`$/.exec(cells[0]);
    assert.ok(key && cells.length === 4, `${DOC}:${i + 1}: a row is | \`key\` | type | default | meaning |`);
    rows.push({ group, key: key[1], type: cells[1], dflt: cells[2], line: i + 1 });
  });
  return rows;
}

// ---- the man page ------------------------------------------------------
// Under ".SH SETTINGS", ".SS group" (or "Top level", or "group: ...") is
// a group; each of its ".TP" entries is a tag "\fBkey\fR", ".br", then
// "Type: ..." and "Default: ..." each ended by ".br".
function fromMan(text) {
  const rows = [];
  const lines = text.split("\n");
  let group = null;
  for (let i = 0; i < lines.length; i++) {
    const sh = /^\.SH (.*)$/.exec(lines[i]);
    if (sh) group = sh[1] === "SETTINGS" ? "" : null;
    const ss = /^\.SS "(.*)"$/.exec(lines[i]);
    if (ss && group !== null) {
      const t = plain(ss[1]);
      group = t === "Top level" ? "" : t.split(": ")[0];
    }
    if (lines[i] !== ".TP" || group === null) continue;
    const line = i + 2;
    const key = /^\\fB([^\\]+)\\fR$/.exec(lines[++i]);
    assert.ok(key && lines[++i] === ".br", `${PAGE}:${line}: an entry is .TP, \\fBkey\\fR, .br`);
    const until = () => {
      const part = [];
      while (i + 1 < lines.length && lines[++i] !== ".br") part.push(lines[i]);
      return plain(part.join(" "));
    };
    const type = until(), dflt = until();
    assert.ok(type.startsWith("Type: ") && dflt.startsWith("Default: "),
      `${PAGE}:${line}: ${key[1]}: "Type: ...", .br, "Default: ...", .br`);
    rows.push({ group, key: plain(key[1]), type: type.slice(6), dflt: dflt.slice(9), line });
  }
  return rows;
}

const code = fromCode();
const doc = fs.readFileSync(path.join(root, DOC), "utf8");
// The page as `make install` installs it: made by the build's own rule.
execFileSync("make", ["-s", `B=${build}`, PAGE], { cwd: root, timeout: 60000 });
const page = fs.readFileSync(path.resolve(root, PAGE), "utf8");
const sources = [
  { name: DOC, text: doc, rows: fromDoc(doc) },
  { name: PAGE, text: plain(page), rows: fromMan(page) },
];
const rows = sources[0].rows;
const where = (g, k) => (g === "" ? k : `${g}.${k}`);

test("the extraction from the C code found what it should", () => {
  assert.ok(Object.keys(code.keys).length >= 10, `groups: ${Object.keys(code.keys)}`);
  for (const [g, ks] of Object.entries(code.keys)) assert.ok(ks?.length > 0, `group "${g}" has keys`);
  assert.ok(Object.values(code.keys).flat().length >= 50);
  assert.ok(code.ranges.length >= 15 && code.ranges.every((r) => r.min !== null && r.max !== null),
    JSON.stringify(code.ranges.filter((r) => r.min === null || r.max === null)));
  assert.ok(code.words.length >= 6 && code.words.every((w) => w.words?.length >= 2));
  assert.ok(code.defaults.length >= 15, JSON.stringify(code.defaults));
  for (const src of sources)
    assert.ok(src.rows.length >= 60, `${src.rows.length} rows read from ${src.name}`);
});

test("the man page's settings are the document's, row for row", () => {
  const brief = (r) => ({ group: r.group, key: r.key, type: r.type.replace(/`/g, ""), dflt: r.dflt.replace(/`/g, "") });
  assert.deepEqual(sources[1].rows.map(brief), rows.map(brief));
});

for (const { name, text, rows } of sources) {
  const rowsOf = (group, key) => rows.filter((r) => r.group === group && r.key === key);

  test(`${name}: every group of the reader has a section, and no section is for a group it lacks`, () => {
    const docGroups = [...new Set(rows.map((r) => r.group))].sort();
    assert.deepEqual(docGroups, Object.keys(code.keys).sort());
  });

  test(`${name}: every setting the reader accepts has a row in its group's table`, () => {
    const missing = [];
    for (const [g, ks] of Object.entries(code.keys))
      for (const k of ks) if (rowsOf(g, k).length === 0) missing.push(where(g, k));
    assert.deepEqual(missing, [], `accepted by the reader (${READER}), not in ${name}`);
  });

  test(`${name}: every row of the tables is a setting the reader accepts`, () => {
    const extra = rows.filter((r) => !code.keys[r.group]?.includes(r.key))
      .map((r) => `${name}:${r.line}: ${where(r.group, r.key)}`);
    assert.deepEqual(extra, [], "documented, not in the reader's key lists");
  });

  test(`${name}: ranges, allowed words and numeric defaults are the code's`, () => {
    const bad = [];
    for (const { group, key, min, max } of code.ranges)
      for (const r of rowsOf(group, key))
        if (!r.type.includes(`${min}–${max}`)) bad.push(`${name}:${r.line}: ${where(group, key)}: type should say ${min}–${max}`);
    for (const { group, key, words } of code.words)
      for (const r of rowsOf(group, key))
        for (const w of words)
          if (!r.type.includes(`"${w}"`)) bad.push(`${name}:${r.line}: ${where(group, key)}: type should list "${w}"`);
    for (const { group, key, value, bool } of code.defaults)
      for (const r of rowsOf(group, key)) {
        const want = bool && /^boolean/.test(r.type) ? (value ? "true" : "false") : String(value);
        const esc = want.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
        if (!new RegExp(`(^|[^\\w.])${esc}($|[^\\w])`).test(r.dflt))
          bad.push(`${name}:${r.line}: ${where(group, key)}: default should say ${want}`);
      }
    assert.deepEqual(bad, []);
  });

  test(`${name}: where the file is looked up and the secret forms are the code's`, () => {
    for (const s of [code.path, `$${code.env}`, code.fileMax, ...code.prefixes.map((p) => `"${p}`)])
      assert.ok(text.includes(s), `${name} mentions ${s}`);
    assert.deepEqual([...code.prefixes].sort(), ["env:", "file:", "os.environ/"]);
  });
}

// One config per documented setting, its value a group { } that no setting
// takes: a setting the reader knows fails with "KEY must be ..." (and only
// a known one is read at all); an unknown one would load and be reported
// as "unknown setting".
const FILL = {
  "auth.keys[]": { name: '"probe"' },
  "auth.admin_keys[]": { name: '"probe"' },
  "models[]": { name: '"probe"', api_base: '"http://127.0.0.1:9/v1"' },
  "sandbox_tools[]": { name: '"probe"', provider: '"local"' },
};

// A config whose only wrong setting is key of group: a group where the
// setting is not one (a setting of the type "group ..." gets a number).
function probeConfig(group, key, type = "") {
  const bad = /^group/.test(type) ? "0" : "{}";
  if (group === "") return `${key} = 0;\n`;
  // A group of a list's entry: models[].price.
  const sub = /^(.+\[\])\.(\w+)$/.exec(group);
  if (sub) return probeConfig(sub[1], sub[2]).replace(`${sub[2]} = {};`, `${sub[2]} = { ${key} = ${bad}; };`);
  if (!group.endsWith("[]")) {
    const [top, ...rest] = group.split(".");
    return `${top} = { ${rest.map((g) => `${g} = { `).join("")}${key} = ${bad};${" };".repeat(rest.length)} };\n`;
  }
  const list = group.slice(0, -2);
  assert.ok(FILL[group], `config-doc.test.mjs: FILL needs the required settings of ${group}`);
  const fill = Object.entries(FILL[group]).filter(([k]) => k !== key).map(([k, v]) => `${k} = ${v}; `).join("");
  const entry = `${list.split(".").at(-1)} = ( { ${fill}${key} = ${bad}; } );`;
  return list.includes(".") ? `${list.split(".")[0]} = { ${entry} };\n` : `${entry}\n`;
}

test("sandgate check-config reads every documented setting (no 'unknown setting')", async () => {
  assert.ok(fs.existsSync(cli), `${cli}: build it first (make)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sg-config-doc-"));
  try {
    const seen = new Set();
    const probes = rows.filter((r) => !seen.has(where(r.group, r.key)) && seen.add(where(r.group, r.key)));
    const results = await Promise.all(probes.map((r, i) => new Promise((resolve) => {
      const file = path.join(dir, `p${i}.conf`);
      fs.writeFileSync(file, probeConfig(r.group, r.key, r.type));
      execFile(cli, ["--config", file, "check-config"], { env: { ...process.env, SANDGATE_CONFIG: "" } },
        (e, out, err) => resolve({ r, code: e ? e.code : 0, err: String(err) }));
    })));
    const bad = results.filter(({ r, code, err }) =>
      code !== 1 || /unknown setting/.test(err) || !err.includes(`${r.key} must be`))
      .map(({ r, code, err }) => `${DOC}:${r.line}: ${where(r.group, r.key)}: exit ${code}: ${err.trim()}`);
    assert.deepEqual(bad, []);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
