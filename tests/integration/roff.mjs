// roff as man/md2man.awk and the man pages write it, read back as the
// text it prints: font escapes dropped, named characters and escaped
// minus signs, backslashes and quotes as themselves.
const NAMED = { en: "–", em: "—", "<=": "≤", ">=": "≥", "->": "→", mu: "×", dq: '"', aq: "'" };

export const plain = (s) => s.replace(/\\(f[BIRP]|\((..)|&|\||-|e|c)/g, (m, e, name) =>
  name !== undefined ? NAMED[name] ?? m : e === "-" ? "-" : e === "e" ? "\\" : "");
