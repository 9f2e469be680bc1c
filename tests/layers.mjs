#!/usr/bin/env node
// The product's layers (tests/layers.txt) held against its code: node
// tests/layers.mjs [ROOT]. Reads every #include "..." of every .c and .h
// of the product's folders and fails, naming the file and line, on:
//  - a file in a folder the table does not have;
//  - an include from one folder into another that is not an edge of the
//    table (an upward include, or one that would close a circle);
//  - a circle in the table itself;
//  - a call into another folder (a function or object another file
//    defines, reached by an extern as much as by an include) that no path
//    of the table leads to;
//  - a circle of calls between files that the table does not list, and a
//    listed one that is gone;
//  - a folder whose README.md says other than the table ("May include:",
//    "Included by:").
// No dependency but node; make test runs it.
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(process.argv[2] ?? path.join(path.dirname(new URL(import.meta.url).pathname), ".."));
const RULES = "tests/layers.txt";
const problems = [];
const notes = [];
// Problems fail the check; notes are only said.
function finish() {
  for (const n of notes.splice(0)) console.log(`note: ${n}`);
  if (problems.length === 0) return;
  for (const p of problems) console.log(`layers: ${p}`);
  console.log(`layers: FAILED, ${problems.length} problem${problems.length === 1 ? "" : "s"} (${RULES})`);
  process.exit(1);
}

// ---- the rule ----
const rule = { product: [], edges: new Map(), circles: [] };
fs.readFileSync(path.join(root, RULES), "utf8").split("\n").forEach((line, i) => {
  const where = `${RULES}:${i + 1}`;
  let m;
  line = line.trim();
  if (line === "" || line.startsWith("#")) return;
  if ((m = /^product:\s*(.+)$/.exec(line))) rule.product = m[1].split(/\s+/);
  else if ((m = /^(\S+)\s*->\s*(\S+):\s*(\S.*)$/.exec(line))) {
    if (!rule.edges.has(m[1])) rule.edges.set(m[1], new Map());
    rule.edges.get(m[1]).set(m[2], m[3]);
  } else if ((m = /^circle\s+([^:]+):\s*(\S.*)$/.exec(line)))
    rule.circles.push({ files: m[1].trim().split(/\s+/), why: m[2], where });
  else problems.push(`${where}: not a rule (product:, FROM -> TO: why, circle FILES: why): ${line}`);
});
const folders = new Set();
for (const [a, tos] of rule.edges) { folders.add(a); for (const b of tos.keys()) folders.add(b); }
const may = (a, b) => rule.edges.get(a)?.has(b) ?? false;
const below = (a) => [...(rule.edges.get(a)?.keys() ?? [])];

// The table's own circles; its folders top to bottom (as the table lists
// them where it can); what each folder reaches through it.
{
  const state = new Map();
  const visit = (f, trail) => {
    if (state.get(f) === "open")
      problems.push(`${RULES}: the table has a circle: ${[...trail.slice(trail.indexOf(f)), f].join(" -> ")}`);
    if (state.has(f)) return;
    state.set(f, "open");
    for (const b of below(f)) visit(b, [...trail, f]);
    state.set(f, "done");
  };
  for (const f of folders) visit(f, []);
}
const order = [];
{
  const rank = [...rule.edges.keys(), ...folders];
  const left = new Set(folders);
  while (left.size > 0) {
    const next = [...left].filter((f) => ![...left].some((a) => may(a, f)))
      .sort((x, y) => rank.indexOf(x) - rank.indexOf(y))[0];
    if (next === undefined) break;	// a circle, said above
    order.push(next);
    left.delete(next);
  }
}
if (order.length < folders.size || problems.length > 0) finish();	// nothing to hold the code to
const reach = new Map();
for (const f of [...order].reverse()) {
  const r = new Set();
  for (const b of below(f)) { r.add(b); for (const x of reach.get(b) ?? []) r.add(x); }
  reach.set(f, r);
}
const inOrder = (set) => order.filter((f) => set.has(f));

// ---- the product's files ----
const files = [];
const walk = (dir) => {
  for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) walk(p);
    else if (/\.[ch]$/.test(e.name)) files.push(p);
  }
};
for (const r of rule.product) walk(r);
files.sort();
const known = new Set(files);
const folderOf = (f) => path.posix.dirname(f);
for (const f of files)
  if (!folders.has(folderOf(f)))
    problems.push(`${f}: its folder ${folderOf(f)} is not in ${RULES}: add it, with what it may include and why`);

// Comments, strings and characters blanked (newlines kept, for line
// numbers): what is left is code.
function code(text) {
  return text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'/g,
    (s) => (s.startsWith("/") ? s.replace(/[^\n]/g, " ") : s[0] + " ".repeat(s.length - 2) + s[0]));
}

// ---- includes ----
let between = 0;
const used = new Set();
for (const f of files) {
  const text = fs.readFileSync(path.join(root, f), "utf8");
  const plain = code(text).split("\n");
  text.split("\n").forEach((line, i) => {
    const m = /^\s*#\s*include\s*"([^"]+)"/.exec(line);
    if (m === null || !/^\s*#/.test(plain[i])) return;
    const to = path.posix.normalize(path.posix.join(folderOf(f), m[1]));
    const a = folderOf(f), b = folderOf(to);
    if (!known.has(to)) {
      problems.push(`${f}:${i + 1}: #include "${m[1]}" is ${to}, not a file of the product`);
      return;
    }
    if (a === b) return;
    between++;
    used.add(`${a} -> ${b}`);
    if (may(a, b) || !folders.has(a) || !folders.has(b)) return;
    const allowed = inOrder(new Set(below(a)));
    problems.push(`${f}:${i + 1}: #include "${m[1]}": ${a} may not include ${b}` +
      (reach.get(b)?.has(a) ? ` (${b} is above it: ${b} reaches ${a} through the table, so this include goes up and closes a circle)` : "") +
      `. ${a} may include ${allowed.length ? allowed.join(", ") : "nothing of the product"} (${RULES}).`);
  });
}
for (const [a, tos] of rule.edges)
  for (const b of tos.keys())
    if (!used.has(`${a} -> ${b}`)) notes.push(`${RULES}: ${a} -> ${b} is allowed but no file uses it`);

// ---- calls between files ----
// What each .c defines for others (functions and objects that are not
// static, at the start of a line, as this code writes them) and which of
// those names each .c uses.
const defs = new Map();		// name -> file, or null when several
const texts = new Map();
for (const f of files.filter((f) => f.endsWith(".c"))) {
  const t = code(fs.readFileSync(path.join(root, f), "utf8"));
  texts.set(f, t);
  const define = (name) => defs.set(name, defs.has(name) && defs.get(name) !== f ? null : f);
  for (const m of t.matchAll(/^([A-Za-z_]\w*)\s*\(/gm)) {
    let i = m.index + m[0].length, depth = 1;
    while (i < t.length && depth > 0) depth += t[i] === "(" ? 1 : t[i] === ")" ? -1 : 0, i++;
    while (/\s/.test(t[i] ?? "")) i++;
    const head = t.slice(0, m.index);
    const spec = head.slice(Math.max(head.lastIndexOf(";"), head.lastIndexOf("}"), head.lastIndexOf("{"), head.lastIndexOf("\n\n")) + 1);
    if (t[i] === "{" && !/\bstatic\b/.test(spec)) define(m[1]);
  }
  for (const m of t.matchAll(/^(?!static\b|extern\b|typedef\b|return\b)[A-Za-z_][\w \t*]*?[\s*]([A-Za-z_]\w*)\s*(?:\[[^\]\n]*\]\s*)*(?:=|;)/gm))
    define(m[1]);
}
const calls = new Map();	// file -> Map(file -> [names])
let ncalls = 0;
for (const [f, t] of texts) {
  const out = new Map();
  // A tag (struct sg_provider_ops) is a type, not the function of the
  // same name.
  for (const name of new Set(t.replace(/\b(?:struct|union|enum)\s+\w+/g, "").match(/[A-Za-z_]\w*/g) ?? [])) {
    const g = defs.get(name);
    if (g === undefined || g === null || g === f) continue;
    if (!out.has(g)) out.set(g, []);
    out.get(g).push(name);
  }
  calls.set(f, out);
  for (const [g, names] of out) {
    ncalls++;
    const a = folderOf(f), b = folderOf(g);
    if (a !== b && folders.has(a) && folders.has(b) && !reach.get(a)?.has(b))
      problems.push(`${f} uses ${names.sort().join(", ")} of ${g}: no edge of ${RULES} leads from ${a} to ${b} (an extern is an include all the same)`);
  }
}

// Circles of calls: the strongly connected files (Tarjan).
const sccs = [];
{
  let n = 0;
  const idx = new Map(), low = new Map(), stack = [], on = new Set();
  const strong = (v) => {
    idx.set(v, n); low.set(v, n); n++;
    stack.push(v); on.add(v);
    for (const w of calls.get(v).keys()) {
      if (!idx.has(w)) { strong(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const c = [];
      let w;
      do { w = stack.pop(); on.delete(w); c.push(w); } while (w !== v);
      if (c.length > 1) sccs.push(c.sort());
    }
  };
  for (const f of [...calls.keys()].sort()) if (!idx.has(f)) strong(f);
}
for (const c of sccs) {
  if (rule.circles.some((l) => c.every((f) => l.files.includes(f)))) continue;
  const links = [];
  for (const f of c)
    for (const [g, names] of calls.get(f))
      if (c.includes(g)) links.push(`${f} -> ${g} (${names.sort().join(", ")})`);
  problems.push(`a circle of calls between ${c.join(", ")}: ${links.join("; ")}. Move what the lower file needs out of the upper one, or list the circle in ${RULES} with its reason.`);
}
for (const l of rule.circles)
  if (!sccs.some((c) => l.files.every((f) => c.includes(f))))
    problems.push(`${l.where}: the circle of ${l.files.join(", ")} is gone: take it out of ${RULES}`);

// ---- each folder's README.md ----
for (const f of order) {
  const readme = `${f}/README.md`;
  const want = {
    "May include": inOrder(new Set(below(f))),
    "Included by": order.filter((a) => may(a, f)),
  };
  let text = "";
  try { text = fs.readFileSync(path.join(root, readme), "utf8"); }
  catch { problems.push(`${readme}: missing (what ${f} owns, then its "May include:" and "Included by:" lines)`); continue; }
  for (const [key, list] of Object.entries(want)) {
    const m = new RegExp(`^${key}: .*$`, "m").exec(text);
    const line = `${key}: ${list.length ? list.join(", ") : "nothing"}.`;
    if (m?.[0] !== line)
      problems.push(`${readme}: ${m === null ? "no line" : `"${m[0]}" is not the table's:`} "${line}"`);
  }
}

finish();
console.log(`layers: ${files.length} files in ${folders.size} folders; ${between} includes between folders, all down ${RULES}; ` +
  `${ncalls} uses of one file's functions by another, no circle but the ${rule.circles.length} listed`);
