// The man pages: sandgate(1), sandgate-fcgi(8) and sandgate.conf(5) (made
// from docs/configuration.md by the build; config-doc.test.mjs holds its
// settings to the config reader). They render without a warning (groff
// -ww, man --warnings as lintian runs it, mandoc -Tlint when installed),
// agree with the binaries' usage and option tables both ways, name every
// environment variable and signal the code reads, and `make install`
// installs all three; the configuration in sandgate.conf(5)'s EXAMPLES
// passes `sandgate check-config`. No gateway is started.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { root } from "./harness.mjs";
import { plain } from "./roff.mjs";

const build = process.env.SG_BUILD || "build";
const bin = (b) => path.resolve(root, build, b);
const PAGE5 = `${build}/man/sandgate.conf.5`;
// Each binary: its page, and the C files whose main() (getopt table,
// usage) and getenv() calls it is held to.
const CLI = { bin: "sandgate", page: "man/sandgate.1", src: ["cli/sandgate.c", "cli/sessions.c"] };
const FCGI = { bin: "sandgate-fcgi", page: "man/sandgate-fcgi.8", src: ["fcgi/main.c", "fcgi/master.c"] };
// Where the config file's own variable (SANDGATE_CONFIG) is read: both.
const CONFIG_C = ["core/config/config.c"];

const read = (f) => fs.readFileSync(path.resolve(root, f), "utf8");
const has = (cmd) => spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;

execFileSync("make", ["-s", `B=${build}`, PAGE5], { cwd: root, timeout: 60000 });
const PAGES = [CLI.page, FCGI.page, PAGE5];

// ---- roff, read back -----------------------------------------------------
// One input line as the text it prints: a font macro's arguments (the
// alternating ones joined without a space), or a text line.
function lineText(line) {
  const m = /^\.(B|I|BR|BI|IB|RB|RI|IR)(?:\s+(.*))?$/.exec(line);
  if (!m) return /^\./.test(line) ? null : plain(line);
  const args = [...(m[2] ?? "").matchAll(/"((?:[^"]|"")*)"|(\S+)/g)].map((a) => a[1] ?? a[2]);
  return plain(args.join(m[1].length === 1 ? " " : ""));
}

// The page's sections: name -> [roff lines].
function sections(text) {
  const out = {};
  let cur = null;
  for (const line of text.split("\n")) {
    const sh = /^\.SH\s+"?([^"]*)"?$/.exec(line);
    if (sh) out[cur = sh[1]] = [];
    else if (cur) out[cur].push(line);
  }
  return out;
}

// The tags of a section's .TP entries, as text.
const tags = (lines) => lines.flatMap((l, i) => (l === ".TP" ? [lineText(lines[i + 1])] : []));

// SYNOPSIS: one form per stretch between .br lines.
function forms(lines) {
  const out = [[]];
  for (const l of lines) {
    if (l === ".br") out.push([]);
    else if (lineText(l) !== null) out.at(-1).push(lineText(l));
  }
  return out.map((f) => f.join(" ").replace(/\s+/g, " ").trim()).filter(Boolean);
}

// How usage and man write one command form alike: lower case (NAME and
// name), one space, none around "|".
const norm = (s) => s.toLowerCase().replace(/\s*\|\s*/g, "|").replace(/\s+/g, " ").trim();
const longOpts = (s) => new Set([...s.matchAll(/--([a-z][\w-]*)/g)].map((m) => m[1]));
const sorted = (set) => [...set].sort();

// The getopt_long table and optstring of main() in the binary's sources.
function optionTable(src) {
  const text = src.map(read).join("\n");
  const table = /static const struct option \w+\[\] = \{([\s\S]*?)\};/.exec(text)[1];
  const long = new Set([...table.matchAll(/\{ "([\w-]+)",/g)].map((m) => m[1]));
  const short = new Set(/getopt_long\(argc, argv, "\+?([^"]*)"/.exec(text)[1].replace(/:/g, "").split(""));
  return { long, short };
}

function usage(b) {
  const r = spawnSync(bin(b), ["--help"], { encoding: "utf8", timeout: 10000 });
  assert.equal(r.status, 2, `${b} --help: exit ${r.status}`);
  assert.match(r.stderr, new RegExp(`^usage: ${b} `), r.stderr);
  return r.stderr;
}

// ---- tests ---------------------------------------------------------------
test("the three pages render without a warning", { skip: !has("groff") && "no groff", timeout: 60000 }, () => {
  for (const p of PAGES) {
    const file = path.resolve(root, p);
    assert.doesNotMatch(read(p), /[^\x00-\x7f]/, `${p}: a character outside ASCII (roff wants its name)`);
    const g = spawnSync("groff", ["-man", "-Tutf8", "-ww", "-z", file], { encoding: "utf8", timeout: 20000 });
    assert.equal(g.status, 0, `${p}: groff exit ${g.status}`);
    assert.equal(g.stderr, "", `${p}: groff -ww says:\n${g.stderr}`);
    // As lintian checks a page (man-db's man, warnings on).
    if (!has("man")) continue;
    const m = spawnSync("man", ["--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", file], {
      encoding: "utf8", timeout: 20000, env: { ...process.env, LC_ALL: "C.UTF-8", MANROFFSEQ: "", MANWIDTH: "80" },
    });
    assert.equal(m.status, 0, `${p}: man exit ${m.status}`);
    assert.equal(m.stderr, "", `${p}: man --warnings says:\n${m.stderr}`);
  }
});

test("mandoc -Tlint finds nothing in the three pages", { skip: !has("mandoc") && "no mandoc", timeout: 60000 }, () => {
  const r = spawnSync("mandoc", ["-Tlint", ...PAGES.map((p) => path.resolve(root, p))], { encoding: "utf8", timeout: 20000 });
  assert.equal(r.stdout + r.stderr, "");
  assert.equal(r.status, 0);
});

test("each page has the sections a reader looks for", () => {
  const want = {
    [CLI.page]: ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES", "SEE ALSO"],
    [FCGI.page]: ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SIGNALS", "ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES", "SEE ALSO"],
    [PAGE5]: ["NAME", "SYNOPSIS", "DESCRIPTION", "SETTINGS", "FILES", "EXAMPLES", "SEE ALSO"],
  };
  for (const [p, names] of Object.entries(want)) {
    const got = Object.keys(sections(read(p)));
    assert.deepEqual(names.filter((n) => !got.includes(n)), [], `${p} lacks sections`);
  }
});

test("sandgate: its usage and sandgate(1) list the same commands, both ways", () => {
  const text = usage(CLI.bin);
  // "  keys create NAME    make a key..." and "  sessions list [--key NAME]"
  const fromUsage = new Set(text.split("\n").map((l) => /^  ([a-z][^ ]*(?: \S+)*?)(?: {2,}|$)/.exec(l)?.[1])
    .filter(Boolean).map(norm));
  assert.ok(fromUsage.size >= 10, [...fromUsage].join("; "));
  const s = sections(read(CLI.page));
  const synopsis = forms(s.SYNOPSIS);
  const prefix = "sandgate [--config file] ";
  const fromSynopsis = new Set(synopsis.filter((f) => f.startsWith(prefix)).map((f) => norm(f.slice(prefix.length))));
  const fromCommands = new Set(tags(s.COMMANDS).map(norm));
  assert.deepEqual(sorted(fromSynopsis), sorted(fromUsage), "SYNOPSIS against the usage");
  assert.deepEqual(sorted(fromCommands), sorted(fromUsage), "COMMANDS against the usage");
  // Every SYNOPSIS line is a command form, or the --help one.
  assert.deepEqual(synopsis.filter((f) => !f.startsWith(prefix)), ["sandgate --help"]);
});

for (const { bin: b, page, src } of [CLI, FCGI]) {
  test(`${b}: its options are ${page}'s OPTIONS, both ways`, () => {
    const code = optionTable(src);
    const opts = tags(sections(read(page)).OPTIONS);
    const manLong = new Set(opts.flatMap((t) => [...longOpts(t)]));
    const manShort = new Set(opts.flatMap((t) => [...t.matchAll(/(?:^|[ ,])-([a-z])\b/g)].map((m) => m[1])));
    assert.deepEqual(sorted(manLong), sorted(code.long), "long options: main()'s table against OPTIONS");
    assert.deepEqual(sorted(manShort), sorted(code.short), "short options: main()'s optstring against OPTIONS");
    // The usage's first line names every option but --help (and, for
    // sandgate-fcgi, that line is all of it).
    const first = longOpts(usage(b).split("\n")[0]);
    assert.deepEqual(sorted(first), sorted([...code.long].filter((o) => o !== "help")), "the usage line's options");
    // SYNOPSIS writes every option too.
    const syn = longOpts(forms(sections(read(page)).SYNOPSIS).join(" "));
    assert.deepEqual(sorted([...syn].filter((o) => code.long.has(o))), sorted(code.long), "SYNOPSIS's options");
  });

  test(`${b}: ${page}'s ENVIRONMENT is what the code reads, both ways`, () => {
    const code = new Set([...[...src, ...CONFIG_C].map(read).join("\n").matchAll(/getenv\("(\w+)"\)/g)].map((m) => m[1]));
    // Variables in bold; ".I NAME", any variable a secret names, is not one.
    const env = sections(read(page)).ENVIRONMENT;
    const man = new Set(env.flatMap((l, i) => (l === ".TP" ? [/^\.B ([A-Z][A-Z0-9_]+)$/.exec(env[i + 1])?.[1]] : []))
      .filter(Boolean));
    assert.ok(code.has("SANDGATE_CONFIG"), [...code].join(" "));
    assert.deepEqual(sorted(man), sorted(code));
  });
}

test("sandgate-fcgi(8)'s SIGNALS has every signal the master handles or ignores", () => {
  const master = FCGI.src.map(read).join("\n");
  const sigs = new Set([...master.matchAll(/sigaction\((SIG\w+),/g)].map((m) => m[1]).filter((s) => s !== "SIGCHLD"));
  assert.ok(sigs.has("SIGHUP") && sigs.has("SIGTERM"), [...sigs].join(" "));
  const text = sections(read(FCGI.page)).SIGNALS.map((l) => lineText(l) ?? "").join(" ");
  assert.deepEqual([...sigs].filter((s) => !new RegExp(`\\b${s}\\b`).test(text)), []);
});

test("make install puts the three pages in share/man/man1, man5 and man8", { timeout: 120000 }, () => {
  const dest = fs.mkdtempSync(path.join(os.tmpdir(), "sg-man-install-"));
  try {
    // -o all: the binaries as they are (this is not a build test).
    execFileSync("make", ["-s", "-o", "all", `B=${build}`, "PREFIX=/usr", `DESTDIR=${dest}`, "install"],
      { cwd: root, timeout: 100000 });
    const man = `${dest}/usr/share/man`;
    for (const [f, from] of [["man1/sandgate.1", CLI.page], ["man8/sandgate-fcgi.8", FCGI.page], ["man5/sandgate.conf.5", PAGE5]]) {
      const st = fs.statSync(`${man}/${f}`);
      assert.equal(st.mode & 0o777, 0o644, f);
      assert.equal(fs.readFileSync(`${man}/${f}`, "utf8"), read(from), `${f} is ${from}`);
    }
    assert.deepEqual(fs.readdirSync(man).sort(), ["man1", "man5", "man8"]);
  } finally {
    fs.rmSync(dest, { recursive: true, force: true });
  }
});

// docs/configuration.md is edited by hand: Markdown the generator cannot
// write as roff stops the build at its line, never a page that renders wrong.
test("man/md2man.awk refuses Markdown it does not know, naming the line", { timeout: 30000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sg-md2man-"));
  try {
    fs.writeFileSync(`${dir}/t.in`, ".TH T 5 2026-01-01 t t\n.SH NAME\nt \\- t\n@BODY@\n");
    const run = (md) => {
      fs.writeFileSync(`${dir}/t.md`, `# T\n\n## The file\n\ntext\n${md}\n`);
      return spawnSync("awk", ["-f", path.join(root, "man/md2man.awk"), `${dir}/t.md`, `${dir}/t.in`],
        { encoding: "utf8", timeout: 10000, env: { ...process.env, LC_ALL: "C" } });
    };
    const good = run("`a-b` and **c**, 1–2 ≤ 3");
    assert.equal(good.status, 0, good.stderr);
    assert.match(good.stdout, /^\.SH "THE FILE"\ntext \\fBa\\-b\\fR and \\fBc\\fR, 1\\\(en2 \\\(<= 3$/m);
    for (const [md, why] of [["#### deep", /:6: a heading/], ["* item", /:6: a list/], ["1. item", /:6: a list/],
      ["odd `tick", /:5: an odd number of `/], ["x ≈ y", /:5: a character .* no roff name/],
      ["| a | b |\n| - | - |\n| 1 |", /a row of 1 cells in a table of 2/]]) {
      const r = run(md);
      assert.equal(r.status, 1, `${md}: ${r.stdout}`);
      assert.match(r.stderr, why, md);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("sandgate.conf(5)'s example configuration passes check-config", { timeout: 30000 }, () => {
  const ex = sections(read(PAGE5)).EXAMPLES;
  const start = ex.indexOf(".nf"), end = ex.indexOf(".fi");
  assert.ok(start >= 0 && end > start, "an example between .nf and .fi");
  let conf = ex.slice(start + 1, end).map(plain).join("\n");
  assert.match(conf, /^models = \(/m);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sg-man-example-"));
  try {
    // Its paths moved here; its secrets set.
    conf = conf.replaceAll("/etc/sandgate/", `${dir}/`).replaceAll("/var/lib/sandgate/", `${dir}/state/`);
    fs.writeFileSync(`${dir}/sandgate.conf`, conf);
    fs.writeFileSync(`${dir}/ci.key`, "sk-ci-example\n");
    fs.writeFileSync(`${dir}/openai.key`, "sk-openai-example\n");
    const r = spawnSync(bin("sandgate"), ["--config", `${dir}/sandgate.conf`, "check-config"], {
      encoding: "utf8", timeout: 20000,
      env: { ...process.env, SANDGATE_CONFIG: "", SANDGATE_KEY_ALICE: "sk-alice-example", E2B_API_KEY: "e2b-example" },
    });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /: ok \(2 models, 2 sandbox tools, 2 keys\)/);
    assert.equal(r.stderr, "");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
