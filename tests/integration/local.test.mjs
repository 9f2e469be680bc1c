// The local sandbox: real runs through sandboxd, bubblewrap and the
// kernel, and the escapes that must fail inside it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { startStack, KEYS, root, procTable, storeKind } from "./harness.mjs";

let stack, box, other;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const call = (...args) => stack.call(...args);

async function run(id, code, timeout) {
  const r = await call("POST", `/v1/sandboxes/${id}/code`, { code, ...(timeout ? { timeout } : {}) });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

// The live processes under this stack's sandboxd: its sandboxes (bubblewrap,
// its init, the kernel, what the code started). Other stacks on the machine
// do not count.
function kernels() {
  const root = stack.processes().sandboxd;
  const kids = new Map();
  for (const { pid, ppid } of procTable()) {
    if (!kids.has(ppid)) kids.set(ppid, []);
    kids.get(ppid).push(pid);
  }
  let n = 0;
  const todo = [...(kids.get(root) ?? [])];
  while (todo.length) {
    const p = todo.pop();
    n++;
    todo.push(...(kids.get(p) ?? []));
  }
  return n;
}

before(async () => {
  stack = await startStack();
  box = (await call("POST", "/v1/sandboxes", { tool: "local" })).json.id;
  other = (await call("POST", "/v1/sandboxes", { tool: "local2" })).json.id;
  assert.ok(box && other);
});
after(async () => {
  await call("DELETE", `/v1/sandboxes/${box}`);
  await call("DELETE", `/v1/sandboxes/${other}`);
  await stack?.stop();
});

test("state persists; the last expression is the result; stdout and stderr apart", async () => {
  await run(box, "x = 6*7");
  const r = await run(box, "import sys\nprint(x)\nprint('warn', file=sys.stderr)\nx + 1");
  assert.equal(r.stdout, "42\n");
  assert.equal(r.stderr, "warn\n");
  assert.equal(r.results.find((v) => v.is_main_result).text, "43");
});

test("an exception comes back with its traceback; SystemExit does not end the kernel", async () => {
  const r = await run(box, "def f():\n    return 1/0\nf()");
  assert.equal(r.error.name, "ZeroDivisionError");
  assert.match(r.error.traceback, /line 2, in f/);
  const e = await run(box, "raise SystemExit(3)");
  assert.equal(e.error.name, "SystemExit");
  assert.equal((await run(box, "print(x)")).stdout, "42\n");
});

test("output of a subprocess is captured", async () => {
  const r = await run(box, "import subprocess\nsubprocess.run(['echo', 'from a child'])\nsubprocess.run('echo oops >&2', shell=True)");
  assert.equal(r.stdout, "from a child\n");
  assert.equal(r.stderr, "oops\n");
});

test("a matplotlib figure comes back as a PNG", async () => {
  const r = await run(box, "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()");
  const img = r.results.find((v) => v.png);
  assert.ok(img, JSON.stringify(r).slice(0, 500));
  const png = Buffer.from(img.png, "base64");
  assert.equal(png.subarray(1, 4).toString(), "PNG");
  assert.ok(png.length > 1000);
});

test("no gateway secret in the environment", async () => {
  const r = await run(box, "import os\nprint(sorted(os.environ))");
  const names = JSON.parse(r.stdout.replace(/'/g, '"'));
  for (const n of names) assert.ok(["HOME", "LANG", "MPLBACKEND", "MPLCONFIGDIR", "PATH", "PWD", "SANDGATE_PIDNS"].includes(n), n);
});

test("no inherited fd reaches a file of the gateway", async () => {
  const r = await run(box, "import os\nfor fd in os.listdir('/proc/self/fd'):\n    try: print(os.readlink('/proc/self/fd/' + fd))\n    except OSError: pass");
  for (const l of r.stdout.trim().split("\n"))
    assert.match(l, /^(pipe:|socket:|\/dev\/null$|\/proc\/|\/usr\/)/, l);
});

test("no network: only lo, and 127.0.0.1 (the gateway) is unreachable", async () => {
  const port = new URL(stack.base).port;
  const r = await run(box, `import socket\nprint(socket.if_nameindex())\ns = socket.socket()\ns.settimeout(2)\ns.connect(('127.0.0.1', ${port}))`);
  assert.match(r.stdout, /\[\(1, 'lo'\)\]/);
  assert.equal(r.error?.name, "ConnectionRefusedError");
});

test("the store, /etc/sandgate, the kernel sockets and the host are out of sight", { skip: storeKind !== "sqlite" && "the store is a file here only on SQLite (SG_PG unset)" }, async () => {
  const paths = [`${stack.dir}/state/store/sandgate.db`, `${stack.localDir()}/kernels`, "/etc/sandgate",
    `${stack.dir}/sandgate.conf`, "/root", "/var", "/run"];
  const r = await run(box, `import os\nfor p in ${JSON.stringify(paths)}:\n    print(p, os.path.exists(p))`);
  for (const p of paths) assert.match(r.stdout, new RegExp(`${p.replace(/[/.]/g, "\\$&")} False`));
  const ps = await run(box, "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))");
  assert.ok(JSON.parse(ps.stdout).length <= 4, `sees host processes: ${ps.stdout}`);
});

test("writes: only the work dir, and not past disk_mb", async () => {
  const r = await run(box, "import os\nfor p in ['/usr/x', '/etc/x', '/x', '/sandgate/x']:\n    try:\n        open(p, 'w'); print(p, 'WROTE')\n    except OSError as e:\n        print(p, 'refused')\nopen('/home/user/ok.txt', 'w').write('fine')\nopen('here.txt', 'w').write('data')\nprint(open('/home/user/ok.txt').read(), os.getcwd(), open('/mnt/data/here.txt').read())");
  assert.doesNotMatch(r.stdout, /WROTE/);
  assert.match(r.stdout, /^fine \/mnt\/data data$/m, "cwd /mnt/data, writable, and /home/user too");
  const big = await run(box, "open('big', 'wb').write(b'x' * (20 * 1024 * 1024))");
  assert.equal(big.error?.name, "OSError", JSON.stringify(big));
  await run(box, "import os\nos.remove('big')");
});

test("no user namespace can be made inside", async () => {
  const r = await run(box, "import subprocess\nprint(subprocess.run(['unshare', '-U', 'true']).returncode)");
  assert.notEqual(r.stdout.trim(), "0");
});

test("two sandboxes share neither state nor files", async () => {
  await run(box, "secret = 'A'\nopen('mine.txt', 'w').write('A')");
  const r = await run(other, "import os\nprint(os.path.exists('mine.txt'))\nsecret");
  assert.equal(r.stdout, "False\n");
  assert.equal(r.error?.name, "NameError");
});

test("while True: pass stops at the time limit and the sandbox still works", async () => {
  const r = await run(box, "while True:\n    pass", 2);
  assert.equal(r.error?.name, "TimeoutError");
  assert.equal((await run(box, "print('alive', x)")).stdout, "alive 42\n");
});

test("a fork bomb and a memory bomb are contained; the gateway keeps serving", async () => {
  const f = await run(box, "import os\nwhile True:\n    os.fork()", 5);
  assert.ok(f.error, JSON.stringify(f));
  const m = await run(box, "x2 = bytearray(4 * 1024 ** 3)");
  assert.equal(m.error?.name, "MemoryError");
  assert.equal((await fetch(`${stack.base}/healthz`)).status, 200);
  assert.equal((await run(box, "print('still', x)")).stdout, "still 42\n");
});

test("killing every responder mid-run does not kill the kernel, nor hold the sandbox", async () => {
  await run(other, "kept = 'survived'");
  const pending = call("POST", `/v1/sandboxes/${other}/code`, { code: "import time\ntime.sleep(2)" });
  await sleep(500);
  for (const pid of stack.processes().responders) process.kill(pid, "SIGKILL");
  const cut = await pending.catch(() => null);
  assert.notEqual(cut?.status, 200, "the run was cut by the kill");
  // The dead responder's hold on the sandbox goes with it: the next run
  // waits only for the cell still running, not for the dead run's deadline
  // (exec_timeout + 60 s).
  const t0 = Date.now();
  let r;
  for (let i = 0; i < 50; i++) {
    r = await call("POST", `/v1/sandboxes/${other}/code`, { code: "print(kept)" });
    if (r.status === 200) break;
    await sleep(100);
  }
  assert.equal(r.json.stdout, "survived\n");
  assert.ok(Date.now() - t0 < 10000, `the next run came after ${Date.now() - t0} ms`);
});

test("a deleted sandbox leaves no process and no file", async () => {
  const before = kernels();
  const id = (await call("POST", "/v1/sandboxes", { tool: "local" })).json.id;
  await run(id, "open('f', 'w').write('x')\nimport subprocess\nsubprocess.Popen(['sleep', '60'])");
  assert.ok(kernels() > before);
  assert.equal((await call("DELETE", `/v1/sandboxes/${id}`)).status, 200);
  assert.equal(kernels(), before, "no process left");
  assert.ok(!fs.existsSync(`${stack.localDir()}/kernels/${id}.sock`) || process.getuid() !== 0);
});

test("an idle kernel exits by itself when its lifetime passes", async () => {
  const sock = path.join(stack.dir, "idle.sock");
  const py = `import os, socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.bind(${JSON.stringify(sock)})\ns.listen(4)\nos.dup2(s.fileno(), 3)\nos.set_inheritable(3, True)\nos.execv('/usr/bin/python3', ['python3', '-I', ${JSON.stringify(path.join(root, "providers/sandboxd/kernel/kernel.py"))}, '--lifetime', '1'])`;
  const k = spawn("/usr/bin/python3", ["-c", py], { stdio: "ignore" });
  const started = Date.now();
  const code = await new Promise((res) => k.on("exit", res));
  assert.equal(code, 0);
  assert.ok(Date.now() - started < 5000);
});
