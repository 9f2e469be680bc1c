// The local sandbox against an attacker inside it: each test performs an
// attack the security audit found (or one next to it) and checks that it
// now fails. Runs as root (one uid and one cgroup per sandbox) and as the
// unprivileged service user with a delegated cgroup; a few attacks only
// exist, or can only be set up, as root.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { startStack, waitFor as until, serviceUser, localLimits, freePort, procTable, sharedMemoryBomb } from "./harness.mjs";

const isRoot = process.getuid() === 0;
// Started by root (lighttpd's bin-path as root), sandboxd gives each
// sandbox a uid of its own; started as the service user it cannot.
const rootGateway = () => isRoot && stack.mode === "binpath";
const needsRoot = (t) => { if (!rootGateway()) t.skip("the gateway is not root in this run"); return !rootGateway(); };
const CANARY = "sk-canary-" + crypto.randomBytes(8).toString("hex");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let stack;

const small = `{ name = "small"; provider = "local"; memory_mb = 256; disk_mb = 16; max_procs = 32; cpu = 1; ${localLimits} }`;
const inet = `{ name = "inet"; provider = "local"; memory_mb = 256; disk_mb = 16; max_procs = 32; allow_internet_access = true; ${localLimits} }`;

before(async () => {
  stack = await startStack({ env: { OPENAI_API_KEY: CANARY }, localTools: `${small}, ${inet}` });
});
after(async () => { await stack?.stop(); });

const create = (tool) => stack.newSandbox(tool);
const run = (id, code, timeout) => stack.runCode(id, code, timeout);

async function withSandbox(tool, fn) {
  const id = await create(tool);
  try {
    return await fn(id);
  } finally {
    await stack.call("DELETE", `/v1/sandboxes/${id}`);
  }
}

// Host processes whose command line holds needle.
const pidsWith = (needle) => procTable().filter((p) => p.cmd.join("\0").includes(needle)).map((p) => p.pid);

// Processes running as uid.
const pidsOf = (uid) => procTable().filter((p) => p.uid === uid).map((p) => p.pid);

test("nothing of the gateway (environment, argv, files) is visible anywhere under the sandbox's /proc", async () => {
  await withSandbox("local", async (id) => {
    const needles = [CANARY, stack.dir];
    const r = await run(id, `import os
needles = ${JSON.stringify(needles)}
hits, seen = [], 0
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    seen += 1
    for f in ('environ', 'cmdline'):
        try:
            data = open('/proc/%s/%s' % (pid, f), 'rb').read()
        except OSError:
            continue
        hits += ['%s/%s' % (pid, f) for n in needles if n.encode() in data]
    try:
        for fd in os.listdir('/proc/%s/fd' % pid):
            t = os.readlink('/proc/%s/fd/%s' % (pid, fd))
            if t.startswith('/') and not t.startswith(('/dev/null', '/proc/', '/usr/', '/memfd:')):
                hits.append('%s/fd/%s -> %s' % (pid, fd, t))
            hits += ['%s/fd/%s' % (pid, fd) for n in needles if n in t]
    except OSError:
        pass
print(seen)
print(hits)
print(len(open('/proc/1/environ', 'rb').read()))`);
    const [seen, hits, env1] = r.stdout.trim().split("\n");
    assert.ok(Number(seen) >= 2, `saw bubblewrap's pid 1 and the kernel: ${r.stdout}`);
    assert.equal(hits, "[]", r.stdout);
    assert.equal(env1, "0", "bubblewrap, pid 1 in the sandbox, has an empty environment");
  });
});

test("sandboxd never works as root on paths the gateway's user controls (links in its runtime dir)", async (t) => {
  if (needsRoot(t)) return;
  const local = `${stack.dir}/state/store/local`;
  const asUser = (cmd) => execFileSync("setpriv", [`--reuid=${serviceUser}`, `--regid=${serviceUser}`,
    "--init-groups", "/bin/sh", "-c", cmd]);
  for (const target of [`${local}/kernels`, local]) {
    const victim = fs.mkdtempSync(path.join(os.tmpdir(), "sg-victim-"));
    fs.writeFileSync(`${victim}/precious`, "root's");
    fs.chmodSync(victim, 0o755);
    // The gateway's user swaps a directory for a link to root's files,
    // then sandboxd dies; the root master starts it again.
    asUser(`rm -rf '${target}' && ln -s '${victim}' '${target}'`);
    const old = stack.processes().sandboxd;
    process.kill(old, "SIGKILL");
    await until(() => { const p = stack.processes().sandboxd; return p && p !== old; }, "sandboxd restarted");
    // It heals its directory and serves again...
    await withSandbox("local", async (id) => assert.equal((await run(id, "print(6*7)")).stdout, "42\n"));
    // ...and root's files were neither removed nor given away.
    assert.ok(fs.existsSync(`${victim}/precious`), `${target}: a file of root's was deleted`);
    assert.equal(fs.statSync(victim).uid, 0, `${target}: root's directory was chowned`);
    assert.equal(fs.statSync(`${victim}/precious`).uid, 0);
    fs.rmSync(victim, { recursive: true, force: true });
  }
});

test("sandboxd keeps only CAP_SETUID, CAP_SETGID and CAP_KILL, none of them effective, and no host path feeds a kernel", async (t) => {
  if (needsRoot(t)) return;
  const status = fs.readFileSync(`/proc/${stack.processes().sandboxd}/status`, "utf8");
  const cap = (k) => BigInt("0x" + status.match(new RegExp(`^${k}:\\s+([0-9a-f]+)`, "m"))[1]);
  const kept = (1n << 5n) | (1n << 6n) | (1n << 7n);
  assert.equal(cap("CapEff"), 0n, status);
  assert.equal(cap("CapPrm"), kept);
  assert.equal(cap("CapBnd"), kept);
  await withSandbox("local", async (id) => {
    await run(id, "1");
    const bwrap = pidsWith("--ro-bind-data").map((p) => fs.readFileSync(`/proc/${p}/cmdline`, "utf8"))
      .filter((c) => c.includes("/sandgate/kernel.py"));
    assert.ok(bwrap.length > 0);
    // The kernel's files come through fds: no world-readable copy in /tmp
    // to leak when sandboxd dies.
    for (const c of bwrap) assert.doesNotMatch(c, /\/tmp\//, c.replace(/\0/g, " "));
  });
});

test("the sandbox has a hostname of its own and a seccomp filter (io_uring, bpf, userfaultfd, perf, keyrings, ptrace)", async () => {
  await withSandbox("local", async (id) => {
    const r = await run(id, `import ctypes, errno, socket
libc = ctypes.CDLL(None, use_errno=True)
calls = {'io_uring_setup': (425, 8, 0), 'bpf': (321, 0, 0, 0), 'userfaultfd': (323, 0),
         'perf_event_open': (298, 0, 0, -1, -1, 0), 'keyctl': (250, 0, 0), 'add_key': (248, 0, 0, 0, 0, 0),
         'ptrace': (101, 16, 1, 0, 0), 'unshare': (272, 0x10000000)}
for name, args in calls.items():
    ctypes.set_errno(0)
    rc = libc.syscall(*args)
    print(name, rc, errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()))
print('hostname', socket.gethostname())`);
    const lines = Object.fromEntries(r.stdout.trim().split("\n").map((l) => { const [k, ...v] = l.split(" "); return [k, v]; }));
    assert.deepEqual(lines.io_uring_setup, ["-1", "ENOSYS"], r.stdout);
    for (const n of ["bpf", "userfaultfd", "perf_event_open", "keyctl", "add_key", "ptrace", "unshare"])
      assert.deepEqual(lines[n], ["-1", "EPERM"], `${n}: ${r.stdout}`);
    assert.equal(lines.hostname[0], "sandbox");
    assert.notEqual(lines.hostname[0], os.hostname());
  });
});

test("/dev is read-only and /dev/shm is sized like the work dir", async () => {
  await withSandbox("local", async (id) => {
    const r = await run(id, `import os
st = os.statvfs('/dev/shm')
print(st.f_blocks * st.f_frsize)
try:
    open('/dev/sandgate-x', 'w'); print('WROTE')
except OSError as e:
    print(e.errno)
try:
    open('/dev/shm/big', 'wb').write(b'x' * (64 << 20)); print('WROTE')
except OSError as e:
    print(e.errno)`);
    const [size, dev, shm] = r.stdout.trim().split("\n");
    assert.ok(Number(size) <= 16 << 20, `/dev/shm holds ${size} bytes`);
    assert.equal(dev, "30", "EROFS");
    assert.ok(["27", "28"].includes(shm), `EFBIG or ENOSPC, not ${shm}`);
  });
});

const cgroups = isRoot || localLimits === "";

test("memory is limited per sandbox: four processes of shared memory cannot hold more than memory_mb together", { skip: !cgroups && "no cgroup in this run" }, async () => {
  await withSandbox("small", async (id) => {
    // Four children map 150 MiB each (MAP_SHARED: RLIMIT_DATA does not
    // count it), 600 MiB in all under memory_mb = 256.
    const r = await run(id, sharedMemoryBomb(4), 30);
    const [full, clean] = r.stdout.trim().split(" ").map(Number);
    assert.ok(full <= 1, `${full} of 4 children held 150 MiB at once (${r.stdout.trim()})`);
    assert.ok(clean <= 1);
  });
  // The gateway and other sandboxes never noticed.
  assert.equal((await fetch(stack.url("/healthz"))).status, 200);
  await withSandbox("local", async (id) => assert.equal((await run(id, "print('fine')")).stdout, "fine\n"));
});

test("CPU is limited per sandbox: two busy processes get one CPU (cpu = 1)", { skip: !cgroups && "no cgroup in this run" }, async () => {
  await withSandbox("small", async (id) => {
    const r = await run(id, `import os, time
t0 = time.time()
kids = []
for i in range(2):
    pid = os.fork()
    if pid == 0:
        end = time.time() + 2
        while time.time() < end:
            pass
        os._exit(0)
    kids.append(pid)
for p in kids:
    os.waitpid(p, 0)
t = os.times()
print((t.children_user + t.children_system) / (time.time() - t0))`);
    const ratio = Number(r.stdout.trim());
    assert.ok(ratio < 1.3, `used ${ratio} CPUs`);
  });
});

test("a deleted sandbox leaves no process of its uid behind, background ones included", async (t) => {
  if (needsRoot(t)) return;
  const id = await create("small");
  // bubblewrap maps the sandbox's uid to itself inside.
  const uid = Number((await run(id, "import os, subprocess\nsubprocess.Popen(['sh', '-c', 'while :; do :; done'], start_new_session=True)\nsubprocess.Popen(['sleep', '600'])\nprint(os.getuid())")).stdout);
  assert.ok(uid >= 1900000000, `a uid of its own: ${uid}`);
  const mine = pidsOf(uid);
  assert.ok(mine.length >= 3, `the sandbox runs its processes as ${uid}`);
  assert.equal((await stack.call("DELETE", `/v1/sandboxes/${id}`)).status, 200);
  const state = (p) => { try { return fs.readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1][0]; } catch { return "gone"; } };
  assert.deepEqual(mine.filter((p) => !["Z", "gone"].includes(state(p))), [], "processes left running after delete");
  // What is left is dead, and reaped by sandboxd (not init) at once.
  await until(() => mine.every((p) => state(p) === "gone"), "no zombie of the sandbox left", 3000);
});

test("sandboxd answers a request that a signal interrupted (a sandbox's processes ending)", { skip: !isRoot && "needs root to reach sandboxd's socket" }, async () => {
  // A slow client: connected, then SIGCHLD reaches sandboxd (as when a
  // deleted sandbox's last process is reaped) before the line arrives.
  const sock = `${stack.localDir()}/sandboxd.sock`;
  // sandboxd is up once it answers a sandbox request.
  await withSandbox("local", async () => {});
  const answer = await new Promise((resolve) => {
    const c = net.connect(sock);
    let got = "";
    c.on("data", (d) => { got += d; });
    c.on("close", () => resolve(got));
    c.on("error", () => resolve(got));
    c.on("connect", async () => {
      await sleep(200);
      process.kill(stack.processes().sandboxd, "SIGCHLD");
      await sleep(200);
      c.write('{"op":"delete","id":"cntr_00000000"}\n');
    });
  });
  assert.match(answer, /"ok":true/, "sandboxd dropped the request");
});

test("the log says at start which limits are in force", async () => {
  await until(() => /sandboxd: limits: /.test(stack.log()), "the limits line");
  const line = stack.log().match(/sandboxd: limits: (.*)/)[1];
  if (cgroups) assert.match(line, /^cgroup v[12] \(memory, pids/);
  else assert.match(line, /^no cgroup/);
});

// An "internet" on loopback's far side: a network namespace with a public
// (TEST-NET-2) address and an HTTP server, a private address on the host
// with another, and the gateway on 127.0.0.1.
async function internet() {
  const tag = crypto.randomBytes(3).toString("hex");
  const ns = `sgnet-${tag}`, h = `sgh${tag}`, n = `sgn${tag}`;
  const ip = (...a) => execFileSync("ip", a);
  ip("netns", "add", ns);
  ip("link", "add", h, "type", "veth", "peer", "name", n);
  ip("link", "set", n, "netns", ns);
  ip("addr", "add", "198.51.100.1/24", "dev", h);
  ip("addr", "add", "10.213.7.1/24", "dev", h);
  ip("link", "set", h, "up");
  ip("-n", ns, "addr", "add", "198.51.100.2/24", "dev", n);
  ip("-n", ns, "link", "set", n, "up");
  ip("-n", ns, "link", "set", "lo", "up");
  const port = await freePort();
  const srv = (args) => spawn("python3", ["-m", "http.server", String(port), ...args], { stdio: "ignore" });
  const servers = [spawn("ip", ["netns", "exec", ns, "python3", "-m", "http.server", String(port), "--bind", "198.51.100.2"], { stdio: "ignore" }),
    srv(["--bind", "10.213.7.1"])];
  await sleep(800);
  return {
    port,
    stop() {
      for (const s of servers) s.kill();
      try { ip("link", "del", h); } catch { /* gone with the netns */ }
      ip("netns", "del", ns);
    },
  };
}

test("with allow_internet_access the internet is reachable, the host's loopback, own and private addresses are not", async (t) => {
  if (needsRoot(t)) return;
  const world = await internet();
  try {
    await withSandbox("inet", async (id) => {
      const gw = new URL(stack.base).port;
      const r = await run(id, `import socket
def probe(host, port):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, port))
        s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')
        return s.recv(12).decode()
    except OSError as e:
        return type(e).__name__
    finally:
        s.close()
print([n for _, n in socket.if_nameindex()])
for host, port in [('198.51.100.2', ${world.port}), ('10.213.7.1', ${world.port}), ('198.51.100.1', ${world.port}),
                   ('127.0.0.1', ${gw}), ('10.0.2.2', ${gw})]:
    print(host, probe(host, port))`, 40);
      const lines = r.stdout.trim().split("\n");
      assert.match(lines[0], /'tap0'/, "a network of its own, through slirp4netns");
      const res = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(" ")), l.slice(l.indexOf(" ") + 1)]));
      assert.equal(res["198.51.100.2"], "HTTP/1.0 200", r.stdout);
      for (const h of ["10.213.7.1", "198.51.100.1", "127.0.0.1", "10.0.2.2"])
        assert.doesNotMatch(res[h], /^HTTP/, `${h} reached: ${r.stdout}`);
    });
    assert.deepEqual(pidsWith("slirp4netns").filter((p) => fs.readFileSync(`/proc/${p}/cmdline`, "utf8").includes("tap0")), [],
      "slirp4netns ends with its sandbox");
    // The firewall concerns the sandbox uids alone: the host's own
    // connections, and the resets the kernel sends for them, pass.
    const refused = await new Promise((res) => {
      const c = net.connect(1, "127.0.0.1");
      const t = setTimeout(() => { c.destroy(); res("hangs"); }, 3000);
      c.on("error", (e) => { clearTimeout(t); res(e.code); });
      c.on("connect", () => { clearTimeout(t); c.destroy(); res("connected"); });
    });
    assert.equal(refused, "ECONNREFUSED");
  } finally {
    world.stop();
  }
});

test("without root, a sandbox with internet access is refused with a clear error", async (t) => {
  if (rootGateway()) return t.skip("root can firewall it");
  const r = await stack.call("POST", "/v1/sandboxes", { tool: "inet" });
  assert.equal(r.status, 500, r.text);
  assert.match(r.json.error.message, /needs sandgate started as root/);
});

test("without a usable cgroup, limits = \"cgroup\" (the default) refuses clearly and limits = \"process\" runs", { skip: !isRoot && "needs root to start a gateway without its cgroup" }, async () => {
  const plain = await startStack({ start: "listen", noDelegate: true,
    localTools: `{ name = "plain"; provider = "local"; limits = "process"; disk_mb = 16; }` });
  try {
    const r = await plain.call("POST", "/v1/sandboxes", { tool: "local" });
    assert.equal(r.status, 500, r.text);
    assert.match(r.json.error.message, /no cgroup .*limits = "process"/);
    const ok = await plain.call("POST", "/v1/sandboxes", { tool: "plain" });
    assert.equal(ok.status, 201, ok.text);
    await plain.call("DELETE", `/v1/sandboxes/${ok.json.id}`);
    assert.match(plain.log(), /sandboxd: limits: no cgroup/);
  } finally {
    await plain.stop();
  }
});
