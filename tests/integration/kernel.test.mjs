// The local kernel in both its kinds. kernel = "ipython" answers what e2b
// answers: the same cells run on the e2b fake (which follows the real
// server's IPython kernel) and on a local sandbox, and the answers are
// compared field by field. kernel = "python" (the plain fallback) keeps its
// basics. Both: a cell that kills its process restarts the context
// (ContextRestarting) and the sandbox lives on; UTF-8 cut by a read
// boundary comes back whole; a timeout keeps the output so far.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startStack, localLimits } from "./harness.mjs";

// The fake runs cells with the Python that has pandas and matplotlib, as the
// real template has them (the fake itself is started with whatever python3
// is first on PATH).
process.env.E2B_FAKE_PYTHON ??= "/usr/bin/python3";

let stack;
const tool = (name, kernel) =>
  `{ name = "${name}"; provider = "local"; kernel = "${kernel}"; memory_mb = 512; disk_mb = 16; max_procs = 32; ${localLimits} }`;

before(async () => {
  stack = await startStack({ sandboxes: true, localTools: `${tool("localipy", "ipython")}, ${tool("localpy", "python")}` });
});
after(async () => { await stack?.stop(); });

const create = (tool) => stack.newSandbox(tool);
const run = (id, code, timeout) => stack.runCode(id, code, timeout);

async function remove(id) {
  const r = await stack.call("DELETE", `/v1/sandboxes/${id}`);
  assert.equal(r.status, 200, r.text);
}

// What may differ between e2b and the local IPython kernel, and why:
//  - png: the bytes of a rendered image (matplotlib and font versions, the
//    platform); both must be a PNG. (e2b's real PNG ends in "\n", which the
//    gateway strips.)
//  - traceback: e2b runs IPython 9, Debian ships IPython 8.5, which writes
//    a cell's place as "Cell In [3]" where IPython 9 writes "Cell In[3]".
//  - the file and line in the warning IPython writes to stderr on SystemExit
//    (where IPython is installed, and its version).
//  - timestamps of stdout/stderr chunks (the gateway does not pass them on).
// e2b's real server also adds `chart` (its e2b_charts package) to a
// figure's result; neither the fake nor the local kernel does.
function comparable(answer) {
  const a = structuredClone(answer);
  for (const r of a.results ?? []) {
    if (r.png !== undefined) {
      assert.equal(Buffer.from(r.png, "base64").subarray(0, 8).toString("hex"), "89504e470d0a1a0a", "a PNG");
      r.png = "<png>";
    }
  }
  if (a.error?.traceback) a.error.traceback = a.error.traceback.replace(/Cell In \[/g, "Cell In[");
  a.stderr = a.stderr.replace(/^\S*\/IPython\/core\/interactiveshell\.py:\d+: UserWarning: (To exit: .*)\n( {2}warn\(.*\n)?/m,
    "IPython's warning: $1\n");
  return a;
}

// The cells compared, in one sequence (so the execution counts line up).
const CELLS = [
  ["an assignment", "x = 6*7"],
  ["stdout, stderr and the last value", "import sys\nprint(x)\nprint('warn', file=sys.stderr)\nx + 1"],
  ["a string loses its quotes", "'hello'"],
  ["one pair of quotes only", "\"it's\""],
  ["a float, a bool; None is no result", "3.5"],
  ["True", "True"],
  ["None", "None"],
  ["a trailing semicolon hides the value", "x;"],
  ["a list gains json", "[1, 2.5, 'a', None, {'k': [1, 2]}]"],
  ["a dict gains json (keys as strings)", "{'a': 1, 'b': [1, 2], 3: 'x'}"],
  ["NaN in a list is null in its json", "[float('nan'), 1]"],
  ["a long list wraps as IPython prints it", "list(range(40))"],
  ["a tuple has text only", "(1, 'two')"],
  ["a pandas DataFrame: text, html and data",
    "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})\ndf"],
  ["display() of HTML, SVG, Markdown, JSON and Latex",
    "from IPython.display import HTML, SVG, Markdown, JSON, Latex\n" +
    "display(HTML('<b>bold</b>'))\n" +
    "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><circle cx=\"5\" cy=\"5\" r=\"4\"/></svg>'))\n" +
    "display(Markdown('# title'))\ndisplay(JSON({'a': [1, 2]}))\ndisplay(Latex('$x^2$'))\n" +
    "display(df, 7)"],
  ["a figure shown, one left open, and a main result (in that order)",
    "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.title('shown')\nplt.show()\n" +
    "plt.figure()\nplt.plot([3, 2, 1])\n'main'"],
  ["a figure as the main result is shown again after the cell",
    "fig, ax = plt.subplots()\nax.bar([1, 2], [3, 4])\nfig"],
  ["%matplotlib inline changes nothing", "%matplotlib inline\nplt.figure()\nplt.plot([1, 2])\n'ok'"],
  ["an exception in a function", "def f(a):\n    return 1 / a\n\n\nf(0)"],
  ["output before an exception", "print('before')\nraise ValueError('bad value')"],
  ["a name error", "undefined_name + 1"],
  ["a syntax error", "x = ("],
  ["an error in a loop of a nested function",
    "def outer(n):\n    def inner(i):\n        return [1, 2][i]\n    for i in range(n):\n        inner(i)\nouter(3)"],
  ["a KeyError's value is its repr", "{}['missing']"],
  ["SystemExit: no traceback, a warning on stderr", "import sys\nsys.exit(3)"],
  ["an object's own _repr_html_",
    "class C:\n    def __repr__(self):\n        return 'C()'\n    def _repr_html_(self):\n        return '<p>c</p>'\nC()"],
  ["text beyond ASCII", "print('héllo 日本')\n'日本'"],
  ["PIL's Image.save(path) shows the image first (e2b's template wraps it); to a file object it does not",
    "from PIL import Image\nimport io, os\nimg = Image.new('RGB', (4, 3), 'red')\nimg.save('red.png')\n" +
    "img.save(io.BytesIO(), 'png')\nos.path.getsize('red.png') > 0"],
  ["state survives the errors", "x"],
];

test("ipython: the local kernel answers what e2b answers, field by field", async () => {
  const e2b = await create("e2b");
  const local = await create("localipy");
  try {
    for (const [what, code] of CELLS) {
      const want = comparable(await run(e2b, code));
      const got = comparable(await run(local, code));
      assert.deepEqual(got, want, `${what}: ${code}`);
    }
  } finally {
    await remove(e2b);
    await remove(local);
  }
});

test("ipython: the shapes themselves (so a fake gone wrong fails too)", async () => {
  const id = await create("localipy");
  try {
    const s = await run(id, "'hello'");
    assert.deepEqual(s.results, [{ text: "hello", extra: {}, is_main_result: true }]);
    const l = await run(id, "[1, {'a': None}]");
    assert.deepEqual(l.results[0].json, [1, { a: null }]);
    const df = await run(id, "import pandas as pd\npd.DataFrame({'a': [1, 2]})");
    assert.deepEqual(df.results[0].data, { a: [1, 2] });
    assert.match(df.results[0].html, /<table/);
    const d = await run(id, "from IPython.display import HTML, Markdown\ndisplay(HTML('<i>x</i>'), Markdown('*y*'))");
    assert.deepEqual(d.results.map((r) => [r.html ?? r.markdown, r.is_main_result]), [["<i>x</i>", false], ["*y*", false]]);
    const fig = await run(id, "import matplotlib.pyplot as plt\nplt.plot([1, 2])\n42");
    assert.deepEqual(fig.results.map((r) => r.text), ["42", "<Figure size 640x480 with 1 Axes>"]);
    assert.ok(fig.results[1].png);
    const pil = await run(id, "from PIL import Image\nImage.new('RGB', (4, 3), 'red').save('red.png')");
    assert.deepEqual(pil.results.map((r) => [r.text, r.is_main_result, !!r.png]),
      [["<PIL.Image.Image image mode=RGB size=4x3>", false, true]]);
    const e = await run(id, "def f():\n    return 1 / 0\nf()");
    assert.equal(e.error.name, "ZeroDivisionError");
    assert.match(e.error.traceback, /^-{75}ZeroDivisionError {2,}Traceback \(most recent call last\)Cell In ?\[\d+\], line 3\n/);
    assert.match(e.error.traceback, /----> 2     return 1 \/ 0\nZeroDivisionError: division by zero$/);
    assert.doesNotMatch(e.error.traceback, /\x1b\[/, "no colors");
  } finally {
    await remove(id);
  }
});

// A cold start loads less: the kernel's files come compiled, and what
// IPython uses only later (tracebacks, top-level await, shell commands) is
// imported when first used. A fresh sandbox's first run, and each of those
// after it, must still answer as before.
test("ipython: a fresh sandbox runs compiled, loads the rest when used, and answers the same", async () => {
  const id = await create("localipy");
  try {
    const first = await run(id, "print(1)");
    assert.deepEqual([first.stdout, first.error, first.results, first.execution_count], ["1\n", null, [], 1]);
    const loaded = await run(id, "import sys\n" +
      "sorted(n for n in ('asyncio', 'stack_data', 'pydoc', 'pexpect', 'hashlib') if n in sys.modules)");
    assert.equal(loaded.results[0].text, "[]", "not loaded before a cell asks");
    // The server runs kernel.pyc; the modules' .pyc match their source.
    const pyc = await run(id, "import importlib.util, os, sys\n" +
      "print(open('/proc/%d/cmdline' % os.getppid()).read().split('\\0')[2])\n" +
      "for m in ('sg_cells', 'sg_ipython', 'sg_mpl'):\n" +
      "    with open('/sandgate/__pycache__/%s.%s.pyc' % (m, sys.implementation.cache_tag), 'rb') as f:\n" +
      "        head = f.read(16)\n" +
      "    src = open('/sandgate/%s.py' % m, 'rb').read()\n" +
      "    print(m, head[4:8] == b'\\3\\0\\0\\0', head[8:] == importlib.util.source_hash(src))");
    assert.equal(pyc.stdout, "/sandgate/kernel.pyc\nsg_cells True True\nsg_ipython True True\nsg_mpl True True\n");
    const e = await run(id, "def f():\n    return 1 / 0\nf()");
    assert.equal(e.error.name, "ZeroDivisionError");
    assert.match(e.error.traceback, /^-{75}ZeroDivisionError {2,}Traceback \(most recent call last\)Cell In ?\[\d+\], line 3\n/);
    assert.match(e.error.traceback, /----> 2     return 1 \/ 0\nZeroDivisionError: division by zero$/);
    const a = await run(id, "import asyncio\nawait asyncio.sleep(0)\nasync def g():\n    return 5\nawait g()");
    assert.deepEqual([a.error, a.results[0].text], [null, "5"]);
    const sh = await run(id, "!echo hi\nx = !echo there\nx");
    assert.deepEqual([sh.stdout, sh.results[0].text], ["hi\r\n", "['there']"]);
    const df = await run(id, "import pandas as pd\npd.DataFrame({'a': [1, 2]})");
    assert.equal(df.results[0].text, "   a\n0  1\n1  2");
    assert.deepEqual(df.results[0].data, { a: [1, 2] });
    assert.equal((await run(id, "import sys\nprint(type(sys.modules['asyncio']).__name__)")).stdout, "module\n");
  } finally {
    await remove(id);
  }
});

test("ipython: exit() ends the run as usual, then the context restarts, as on e2b", async () => {
  const ids = [await create("e2b"), await create("localipy")];
  try {
    const answers = [];
    for (const id of ids) {
      await run(id, "kept = 1");
      answers.push([await run(id, "print('bye')\nexit()"), await run(id, "kept")]);
    }
    assert.deepEqual(answers[1].map(comparable), answers[0].map(comparable));
    const [bye, after] = answers[1];
    assert.deepEqual([bye.stdout, bye.error, bye.execution_count], ["bye\n", null, 2]);
    assert.deepEqual([after.error.name, after.execution_count], ["NameError", 1]);
  } finally {
    for (const id of ids) await remove(id);
  }
});

for (const [name, kernel] of [["localpy", "python"], ["localipy", "ipython"]]) {
  test(`${kernel}: os._exit(1) in a cell → ContextRestarting, as on e2b; the sandbox goes on with fresh state`, async () => {
    const ids = { e2b: await create("e2b"), local: await create(name) };
    try {
      const answers = {};
      for (const [which, id] of Object.entries(ids)) {
        await run(id, "kept = 1\nprint(kept)");
        answers[which] = await run(id, "import os\nos._exit(1)");
      }
      assert.deepEqual(answers.e2b, {
        object: "code_execution", stdout: "", stderr: "", results: [],
        error: { name: "ContextRestarting", value: "Context was restarted", traceback: "" }, execution_count: null,
      });
      assert.deepEqual(answers.local, answers.e2b);
      for (const id of Object.values(ids)) {
        const after = await run(id, "print('alive')\nkept");
        assert.equal(after.stdout, "alive\n");
        assert.equal(after.error?.name, "NameError", "fresh state");
        assert.equal(after.execution_count, 1, "the count starts again");
      }
      // Killed by a signal, the worker goes the same way.
      const k = await run(ids.local, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)");
      assert.equal(k.error?.name, "ContextRestarting");
      assert.equal((await run(ids.local, "print(2 + 2)")).stdout, "4\n");
    } finally {
      await remove(ids.e2b);
      await remove(ids.local);
    }
  });

  test(`${kernel}: UTF-8 cut by a read boundary comes back whole`, async () => {
    const id = await create(name);
    try {
      const r = await run(id, "print('日' * 2_000_000)");
      assert.equal(r.error, null);
      assert.ok(!r.stdout.includes("\ufffd"), `U+FFFD at ${r.stdout.indexOf("\ufffd")}`);
      assert.equal(r.stdout, "日".repeat(2_000_000) + "\n");
      // Bytes that are not UTF-8 are still replaced, once each.
      const b = await run(id, "import os\nos.write(1, b'a\\xffb\\xe6\\x97')");
      assert.equal(b.stdout, "a\ufffdb\ufffd");
    } finally {
      await remove(id);
    }
  });

  test(`${kernel}: a timeout gives TimeoutError with the output so far; the state stays`, async () => {
    const id = await create(name);
    try {
      await run(id, "kept = 'yes'");
      const r = await run(id, "import subprocess, time\nsubprocess.Popen(['sleep', '600'])\n" +
        "print('before', flush=True)\ntime.sleep(30)\nprint('after')", 2);
      assert.equal(r.error?.name, "TimeoutError", JSON.stringify(r));
      assert.equal(r.stdout, "before\n");
      // What the cell started went with it (kill_others); the server and
      // the worker, with its state, did not.
      const ps = await run(id, "import os\nprint(kept)\nprint(sorted(open('/proc/%s/comm' % p).read().strip() " +
        "for p in os.listdir('/proc') if p.isdigit()))");
      assert.equal(ps.stdout.split("\n")[0], "yes");
      assert.doesNotMatch(ps.stdout, /sleep/);
      // A cell that swallows the timeout loses its worker after the grace
      // (HARD_KILL_GRACE), not the sandbox.
      const t0 = Date.now();
      const h = await run(id, "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except BaseException:\n        pass", 1);
      assert.equal(h.error?.name, "TimeoutError", JSON.stringify(h));
      assert.ok(Date.now() - t0 < 9000);
      const after = await run(id, "print('fresh')\nkept");
      assert.equal(after.stdout, "fresh\n");
      assert.equal(after.error?.name, "NameError");
    } finally {
      await remove(id);
    }
  });
}

for (const [name, kernel] of [["localpy", "python"], ["localipy", "ipython"]]) {
  test(`${kernel}: a fork bomb is contained, the state stays, and the server is out of the cell's reach`, async () => {
    const id = await create(name);
    try {
      await run(id, "kept = 42");
      const f = await run(id, "import os\nwhile True:\n    os.fork()", 10);
      assert.equal(f.error?.name, "BlockingIOError", JSON.stringify(f));
      const after = await run(id, "import os\nprint(kept, len([p for p in os.listdir('/proc') if p.isdigit()]))");
      // init, the server and the worker are all that is left
      assert.equal(after.stdout, "42 3\n");
      // The server is not dumpable: the cell (the same uid) cannot reach
      // its memory; the worker's own /proc stays readable, after a restart
      // too.
      const probe = "import os\nfor p in ('/proc/%d/mem' % os.getppid(), '/proc/%d/environ' % os.getppid()):\n" +
        "    try:\n        open(p, 'rb').read(1)\n        print('read', p)\n    except OSError as e:\n" +
        "        print(type(e).__name__)\nprint(len(os.listdir('/proc/self/fd')) > 2)";
      assert.equal((await run(id, probe)).stdout, "PermissionError\nPermissionError\nTrue\n");
      assert.equal((await run(id, "import os\nos._exit(1)")).error?.name, "ContextRestarting");
      assert.equal((await run(id, probe)).stdout, "PermissionError\nPermissionError\nTrue\n");
    } finally {
      await remove(id);
    }
  });
}

test("python: the plain kernel's basics", async () => {
  const id = await create("localpy");
  try {
    await run(id, "x = 6*7");
    const r = await run(id, "import sys\nprint(x)\nprint('warn', file=sys.stderr)\n'hello'");
    assert.equal(r.stdout, "42\n");
    assert.equal(r.stderr, "warn\n");
    // The plain kernel keeps a string's repr: its quotes stay.
    assert.deepEqual(r.results, [{ text: "'hello'", extra: {}, is_main_result: true }]);
    assert.equal(r.execution_count, 2);
    const e = await run(id, "def f():\n    return 1/0\nf()");
    assert.equal(e.error.name, "ZeroDivisionError");
    assert.match(e.error.traceback, /^Traceback \(most recent call last\):\n {2}File "<cell>", line 3/);
    assert.equal((await run(id, "x + 1")).results[0].text, "43");
  } finally {
    await remove(id);
  }
});
