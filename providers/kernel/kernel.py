"""sandgate's local kernel: runs Python cells for one sandbox.

Started by sandboxd under bubblewrap as
    /usr/bin/python3 -I /sandgate/kernel.py --lifetime SECONDS --kernel KIND
with a listening Unix socket on fd 3. It answers e2b's code-interpreter
protocol on it (POST /execute, streamed NDJSON lines), so the gateway's e2b
client and parser serve local sandboxes too, plus POST /keepalive and
GET /health. State persists between cells. It exits by itself when its
lifetime passes without a keepalive, so a crashed gateway leaks nothing.

Two processes, as e2b has a server in front of a Jupyter kernel:
  * the server (this process) holds the socket, speaks HTTP, keeps the
    lifetime and never runs a cell. It loads what a worker needs once and
    forks workers from itself, so a fresh one is a fork away;
  * a worker runs the cells, keeps their state and sends its output lines
    back over a socketpair. When it dies mid-run (os._exit in a cell, or the
    hard kill of a cell that outlives its timeout) the server answers e2b's
    ContextRestarting and starts a fresh worker: the sandbox lives on with
    fresh state, as an e2b sandbox does when its kernel restarts.

KIND: "ipython" runs cells in IPython's InteractiveShell with its display
machinery, so results, tracebacks and their order are those of e2b (an
IPython kernel); "python" is a plain exec() kernel; "auto" (the default) is
IPython when it can be imported, else the plain kernel.
"""
import gc
import json
import os
import select
import signal
import socket
import sys
import time

# Isolated mode (-I) leaves the script's own directory off the path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sg_cells import PIDNS, set_dumpable, timeout_error, worker_main  # noqa: E402

LISTEN_FD = 3
KEEPALIVE_EVERY = 5.0      # seconds of silence before a keepalive line
HARD_KILL_GRACE = 5.0      # after the alarm, a cell that does not stop loses its worker
REQUEST_WAIT = 10.0        # seconds a client may take to send its request
MAX_PENDING = 16           # runs asked for while one runs, served in turn
LONG_LINE = 1 << 20        # more of a line than this goes on before its end comes
END_LINE = b'{"type": "end_of_execution"}\n'   # as e2b writes it, spaces included
EXIT_LINE = b'{"type": "sandgate_exit"}\n'     # the worker asks to end after the run (exit())


# ---------------------------------------------------------------- the server

class WorkerHandle:
    """The server's end of a worker: its pid, and its output cut at line
    ends (the server looks at whole lines only to see a run's first and
    last)."""

    def __init__(self, pid, sock):
        self.pid, self.sock = pid, sock
        self.inbuf = bytearray()
        self.scanned = 0        # inbuf holds no newline before this offset
        self.midline = False    # the start of the line in inbuf has gone on already
        self.outbuf = bytearray()

    def queue(self, obj):
        self.outbuf += json.dumps(obj).encode() + b"\n"
        self.flush()

    def flush(self):
        """Write what the worker can take now (it may be busy, or stopped)."""
        try:
            while self.outbuf:
                n = self.sock.send(self.outbuf)
                del self.outbuf[:n]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.outbuf.clear()

    def read(self):
        """What the worker wrote, as (bytes, whole) pieces in order (whole:
        a line from its start to its end); None once the worker has gone.
        A line longer than LONG_LINE goes on in pieces as it comes."""
        try:
            chunk = self.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            return None
        if not chunk:
            return None
        self.inbuf += chunk
        pieces = []
        while True:
            i = self.inbuf.find(b"\n", self.scanned)
            if i < 0:
                if len(self.inbuf) > LONG_LINE:
                    pieces.append((bytes(self.inbuf), False))
                    self.inbuf.clear()
                    self.midline = True
                self.scanned = len(self.inbuf)
                return pieces
            pieces.append((bytes(self.inbuf[:i + 1]), not self.midline))
            del self.inbuf[:i + 1]
            self.scanned, self.midline = 0, False


class Stream:
    """The streamed answer of one /execute: NDJSON lines in HTTP chunks."""

    def __init__(self, conn):
        self.conn = conn
        self.gone = False
        self.last = time.monotonic()

    def raw(self, data):
        if self.gone:
            return
        try:
            self.conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))
            self.last = time.monotonic()
        except OSError:  # a timeout included: the client does not read
            self.gone = True

    def line(self, obj):
        self.raw(json.dumps(obj, ensure_ascii=False).encode() + b"\n")

    def end(self):
        if not self.gone:
            try:
                self.conn.sendall(b"0\r\n\r\n")
            except OSError:
                self.gone = True


class Server:
    def __init__(self, listener, lifetime, kind):
        self.listener = listener
        self.lifetime = lifetime
        self.deadline = time.monotonic() + lifetime
        self.kind = kind
        self.prepared = None    # a worker's start: None (plain), a shell, or why IPython is missing
        self.dumpable = True
        self.worker = None
        self.conns = set()      # open client connections (a worker must not have them)
        self.pending = []       # (conn, code, timeout) asked for during a run

    def prepare(self):
        """Load what workers need, once, so a fresh worker is a fork away
        (the first one starts as soon as this is done). No cell runs here."""
        if self.kind == "python":
            return
        gc.disable()  # imports make many objects and no garbage
        try:
            from sg_ipython import make_ipython_shell
            self.prepared = make_ipython_shell()
        except Exception as e:
            for name in [n for n in sys.modules if n == "IPython" or n.startswith("IPython.")]:
                del sys.modules[name]
            if self.kind == "ipython":
                self.prepared = "%s: %s" % (type(e).__name__, e)
        # Frozen, these objects (and the pages they share with the workers)
        # are left alone by the collector.
        gc.freeze()
        gc.enable()

    def harden(self):
        set_dumpable(False)
        self.dumpable = False

    def spawn(self):
        """Fork a fresh worker; False if none can be had (no process left)."""
        a, b = socket.socketpair()
        for _ in range(50):
            try:
                pid = os.fork()
                break
            except BlockingIOError:  # out of processes: the old ones are still dying
                time.sleep(0.01)
        else:
            a.close()
            b.close()
            return False
        if pid == 0:
            try:
                # The worker takes no request and sees no client.
                for s in [a, self.listener] + list(self.conns):
                    s.close()
                worker_main(b, self.prepared, self.dumpable)
            finally:
                os._exit(1)
        b.close()
        a.setblocking(False)
        self.worker = WorkerHandle(pid, a)
        return True

    def end_worker(self):
        """Kill the worker and all it started; the server and init stay."""
        w, self.worker = self.worker, None
        if w is None:
            return
        for pid, kill in ((-1, os.kill) if PIDNS else (w.pid, os.killpg), (w.pid, os.kill)):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(w.pid, 0)
        except ChildProcessError:
            pass
        w.sock.close()

    # -- requests

    def serve(self):
        while True:
            if self.worker is None:
                self.spawn()
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.end_worker()
                os._exit(0)
            rlist = [self.listener] + ([self.worker.sock] if self.worker else [])
            ready, _, _ = select.select(rlist, [], [], min(left, 1.0) if self.worker is None else left)
            if self.worker is not None and self.worker.sock in ready:
                # Between runs, what a cell's thread still says is dropped;
                # a worker that died is replaced at once.
                if self.worker.read() is None:
                    self.end_worker()
            if self.listener in ready:
                self.accept(running=False)
            while self.pending:
                conn, code, timeout = self.pending.pop(0)
                self.answer(conn, lambda c: self.execute(c, code, timeout))

    def accept(self, running):
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        self.conns.add(conn)
        self.answer(conn, lambda c: self.route(c, running))

    def answer(self, conn, handler):
        keep = False
        try:
            conn.settimeout(REQUEST_WAIT)
            keep = handler(conn)
        except BaseException:
            # Nothing a request does may end the server (a client gone
            # mid-answer, a bad request, ...): that request is lost.
            pass
        finally:
            if not keep:
                self.conns.discard(conn)
                conn.close()

    def route(self, conn, running):
        """Answer one request; True if conn is kept to be answered later."""
        req = read_request(conn)
        if req is None:
            return False
        method, path, body = req
        try:
            args = json.loads(body or b"{}")
        except ValueError:
            return reply(conn, 400, b'{"detail":"invalid JSON"}')
        if not isinstance(args, dict):
            return reply(conn, 400, b'{"detail":"a JSON object is expected"}')
        if method == "GET" and path == "/health":
            return reply(conn, 200, b'"OK"')
        if method == "POST" and path == "/keepalive":
            self.lifetime = int(args.get("lifetime", self.lifetime))
            self.deadline = time.monotonic() + self.lifetime
            return reply(conn, 204)
        if method == "POST" and path == "/execute":
            code = args.get("code")
            if not isinstance(code, str):
                return reply(conn, 422, b'{"detail":"code is required"}')
            timeout = float(args.get("timeout") or 120)
            if not running:
                return self.execute(conn, code, timeout)
            # One run at a time, as e2b's server serialises a context's
            # runs: this one waits its turn.
            if len(self.pending) >= MAX_PENDING:
                return reply(conn, 503, b'{"detail":"too many runs waiting"}')
            self.pending.append((conn, code, timeout))
            return True
        return reply(conn, 404, b'{"detail":"Not Found"}')

    def execute(self, conn, code, timeout):
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        out = Stream(conn)
        if self.worker is None and not self.spawn():
            out.line({"type": "error", "name": "KernelUnavailable",
                      "value": "no process could be started for the run", "traceback": ""})
            out.raw(END_LINE)
        else:
            self.worker.queue({"code": code, "timeout": timeout})
            self.stream(out, timeout)
        out.end()
        self.deadline = max(self.deadline, time.monotonic() + 1)
        return False

    def stream(self, out, timeout):
        """Forward the worker's lines up to its end line; keepalives while
        it is silent; a client gone interrupts the cell. A worker that dies,
        or outlives the hard limit, is ended (a fresh one comes after the
        answer)."""
        w = self.worker
        hard = time.monotonic() + timeout + HARD_KILL_GRACE
        held = None          # number_of_executions, sent with the next line
        interrupted = exiting = False
        while True:
            now = time.monotonic()
            if now >= hard:
                self.end_worker()
                out.line(timeout_error(timeout, restarted=True))
                out.raw(END_LINE)
                return
            rlist = [w.sock, self.listener] + ([] if out.gone else [out.conn])
            wlist = [w.sock] if w.outbuf else []
            wait = max(0.0, min(1.0, hard - now, out.last + KEEPALIVE_EVERY - now))
            ready, writable, _ = select.select(rlist, wlist, [], wait)
            if writable:
                w.flush()
            if out.conn in ready and not conn_open(out.conn):
                out.gone = True
            if self.listener in ready:
                self.accept(running=True)
            if w.sock in ready:
                pieces = w.read()
                if pieces is None:
                    # Dead mid-run: e2b's answer when its kernel restarts. A
                    # count not yet sent goes unsent, as e2b loses the
                    # execute_input of a kernel that dies at once.
                    self.end_worker()
                    out.line({"type": "error", "name": "ContextRestarting",
                              "value": "Context was restarted", "traceback": ""})
                    out.raw(END_LINE)
                    return
                for data, whole in pieces:
                    if whole and data.startswith(b'{"type": "number_of_executions"'):
                        held = data
                        continue
                    if whole and data == EXIT_LINE:
                        exiting = True
                        continue
                    if held is not None:
                        out.raw(held)
                        held = None
                    out.raw(data)
                    if whole and data == END_LINE:
                        if exiting:
                            self.end_worker()  # the next run gets a fresh one
                        return
            if out.gone and not interrupted:
                # The client left: interrupt the cell, as e2b's server does.
                interrupted = True
                try:
                    os.kill(w.pid, signal.SIGINT)
                except OSError:
                    pass
            if time.monotonic() - out.last >= KEEPALIVE_EVERY:
                if held is not None:
                    out.raw(held)
                    held = None
                out.line({"type": "keepalive"})


def conn_open(conn):
    """False once the client has closed its side (what it sends is dropped)."""
    try:
        return conn.recv(4096, socket.MSG_DONTWAIT) != b""
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:
        return False


def read_request(conn):
    """(method, path, body) of one HTTP/1.1 request, or None."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > 1 << 20:
            return None
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path = lines[0].split(" ")[:2]
    length = 0
    for h in lines[1:]:
        k, _, v = h.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip())
    while len(body) < length:
        chunk = conn.recv(min(65536, length - len(body)))
        if not chunk:
            return None
        body += chunk
    return method, path.split("?")[0], body


def reply(conn, status, body=b"", ctype="application/json"):
    reason = {200: "OK", 204: "No Content", 400: "Bad Request", 404: "Not Found",
              422: "Unprocessable Entity", 503: "Service Unavailable"}.get(status, "Error")
    head = "HTTP/1.1 %d %s\r\nContent-Length: %d\r\nConnection: close\r\n" % (status, reason, len(body))
    if body:
        head += "Content-Type: %s\r\n" % ctype
    conn.sendall(head.encode() + b"\r\n" + body)
    return False


def seed_font_list():
    """Copy the font list sandboxd built, so a first plot need not build
    it (about a second)."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpl")
    dst = os.environ.get("MPLCONFIGDIR")
    if not dst or not os.path.isdir(src):
        return
    try:
        os.makedirs(dst, exist_ok=True)
        for name in os.listdir(src):
            if name.startswith("fontlist"):
                with open(os.path.join(src, name), "rb") as f, open(os.path.join(dst, name), "wb") as g:
                    g.write(f.read())
    except OSError:
        pass


def option(name, default):
    if name in sys.argv[:-1]:
        return sys.argv[sys.argv.index(name) + 1]
    return default


def main():
    lifetime = int(option("--lifetime", 300))
    kind = option("--kernel", "auto")
    if kind not in ("auto", "ipython", "python"):
        kind = "auto"
    os.environ.setdefault("MPLBACKEND", "module://sg_mpl")
    seed_font_list()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # SIGINT is for the worker's cell
    listener = socket.socket(fileno=LISTEN_FD)
    server = Server(listener, lifetime, kind)
    server.prepare()
    server.spawn()
    server.harden()
    server.serve()


if __name__ == "__main__":
    main()
