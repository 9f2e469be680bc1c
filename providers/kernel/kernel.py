"""sandgate's local kernel: runs Python cells for one sandbox.

Started by sandboxd under bubblewrap as
    /usr/bin/python3 -I /sandgate/kernel.py --lifetime SECONDS
with a listening Unix socket on fd 3. It answers e2b's code-interpreter
protocol on it (POST /execute, streamed NDJSON lines), so the gateway's e2b
client and parser serve local sandboxes too, plus POST /keepalive and
GET /health. State persists between cells. It exits by itself when its
lifetime passes without a keepalive, so a crashed gateway leaks nothing.
"""
import ast
import base64
import io
import json
import linecache
import os
import queue
import select
import signal
import socket
import sys
import threading
import time
import traceback

LISTEN_FD = 3
KEEPALIVE_EVERY = 5.0      # seconds of silence before a keepalive line
DRAIN_WAIT = 0.2           # output a background child still holds is not waited for
HARD_KILL_GRACE = 5.0      # after the alarm, a cell that does not stop ends the kernel


class CellTimeout(BaseException):
    """Raised in the cell by the per-run alarm (BaseException: `except
    Exception` in user code does not swallow it)."""


def _on_alarm(signum, frame):
    raise CellTimeout()


def kill_others():
    """Kill every other process of the sandbox (init, pid 1, is spared) and
    reap the kernel's own children: zombies count against RLIMIT_NPROC.
    Only inside its own pid namespace: without isolation, -1 would reach
    every process of the user."""
    if os.environ.get("SANDGATE_PIDNS") != "1":
        return
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    while True:
        try:
            if os.waitpid(-1, 0)[0] <= 0:
                break
        except ChildProcessError:
            break


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "+00:00"


class Output:
    """The streamed answer of one /execute: NDJSON lines in HTTP chunks."""

    def __init__(self, conn):
        self.conn = conn
        self.lock = threading.Lock()
        self.gone = False
        self.last = time.monotonic()

    def line(self, obj):
        data = json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogateescape") + b"\n"
        with self.lock:
            if self.gone:
                return
            try:
                self.conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))
                self.last = time.monotonic()
            except OSError:
                self.gone = True

    def end(self):
        with self.lock:
            if not self.gone:
                try:
                    self.conn.sendall(b"0\r\n\r\n")
                except OSError:
                    self.gone = True


class Capture:
    """stdout and stderr captured at the fd level (dup2), so what
    subprocesses write is kept too; each chunk goes out as it comes."""

    def __init__(self, out):
        self.out = out
        self.saved = {}
        self.readers = []
        self.done = threading.Event()

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, kind in ((1, "stdout"), (2, "stderr")):
            r, w = os.pipe()
            self.saved[fd] = os.dup(fd)
            os.dup2(w, fd)
            os.close(w)
            t = threading.Thread(target=self.read, args=(r, kind), daemon=True)
            t.start()
            self.readers.append(t)
        return self

    def read(self, fd, kind):
        dec = io.IncrementalNewlineDecoder(None, translate=False)
        try:
            while True:
                if self.done.is_set():
                    ready, _, _ = select.select([fd], [], [], DRAIN_WAIT)
                    if not ready:
                        return
                chunk = os.read(fd, 65536)
                if not chunk:
                    return
                text = chunk.decode("utf-8", "replace")
                self.out.line({"type": kind, "text": dec.decode(text), "timestamp": now_iso()})
        finally:
            os.close(fd)

    def __exit__(self, *exc):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        for fd, saved in self.saved.items():
            os.dup2(saved, fd)
            os.close(saved)
        self.done.set()
        for t in self.readers:
            t.join(2 * DRAIN_WAIT + 1)
        return False


def figures():
    """PNG results for matplotlib figures shown or still open (matplotlib
    is imported only if the cell imported it)."""
    shown = []
    backend = sys.modules.get("sg_mpl")
    if backend is not None:
        shown, backend.SHOWN[:] = list(backend.SHOWN), []
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        shown += [plt.figure(n) for n in plt.get_fignums()]
    results = []
    for fig in shown:
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        results.append({"type": "result", "png": base64.b64encode(buf.getvalue()).decode(),
                        "text": repr(fig), "extra": {}, "is_main_result": False})
    if plt is not None:
        plt.close("all")
    return results


def main_result(value):
    res = {"type": "result", "text": repr(value), "extra": {}, "is_main_result": True}
    png = getattr(value, "_repr_png_", None)
    if callable(png):
        try:
            data = png()
            if data:
                res["png"] = base64.b64encode(data).decode()
        except Exception:
            pass
    return res


def error_line(exc, tb):
    frames = traceback.extract_tb(tb)
    # Drop the kernel's own frames: the user's cell starts at "<cell>".
    while frames and frames[0].filename != "<cell>":
        frames.pop(0)
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    return {"type": "error", "name": type(exc).__name__, "value": str(exc),
            "traceback": "".join(lines).rstrip("\n")}


class Kernel:
    def __init__(self, lifetime):
        self.lifetime = lifetime
        self.deadline = time.monotonic() + lifetime
        self.count = 0
        self.pid = os.getpid()
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}

    def run(self, code, timeout, out):
        self.count += 1
        out.line({"type": "number_of_executions", "execution_count": self.count})
        stop = threading.Event()
        threading.Thread(target=self.keepalive_lines, args=(out, stop), daemon=True).start()
        killer = threading.Timer(timeout + HARD_KILL_GRACE, os._exit, args=(3,))
        killer.daemon = True
        results, error = [], None
        with Capture(out):
            # Tracebacks show the cell's own lines.
            linecache.cache["<cell>"] = (len(code), None, code.splitlines(True), "<cell>")
            try:
                tree = ast.parse(code, "<cell>", "exec")
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                    last = ast.Expression(tree.body.pop().value)
                signal.signal(signal.SIGALRM, _on_alarm)
                signal.setitimer(signal.ITIMER_REAL, timeout)
                killer.start()
                try:
                    exec(compile(tree, "<cell>", "exec"), self.ns)
                    if last is not None:
                        value = eval(compile(last, "<cell>", "eval"), self.ns)
                        if value is not None:
                            self.ns["_"] = value
                            results.append(main_result(value))
                finally:
                    # A copy made by os.fork() in the cell must not answer
                    # the request, nor serve the next ones.
                    if os.getpid() != self.pid:
                        os._exit(0)
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    killer.cancel()
            except CellTimeout:
                # What the cell started (a fork bomb, say) goes with it.
                kill_others()
                error = {"type": "error", "name": "TimeoutError",
                         "value": "Execution exceeded the time limit of %g s" % timeout,
                         "traceback": "TimeoutError: execution exceeded the time limit of %g s" % timeout}
            except KeyboardInterrupt:
                error = {"type": "error", "name": "KeyboardInterrupt", "value": "Execution interrupted",
                         "traceback": "KeyboardInterrupt"}
            except BaseException as e:  # SystemExit included: the kernel lives on
                error = error_line(e, e.__traceback__)
                if isinstance(e, BlockingIOError):
                    # Out of processes (a fork bomb): end them all, so
                    # the kernel can start its threads next time.
                    kill_others()
            try:
                results = figures() + results
            except Exception as e:
                error = error or error_line(e, e.__traceback__)
        stop.set()
        for r in results:
            out.line(r)
        if error is not None:
            out.line(error)
        out.line({"type": "end_of_execution"})
        out.end()

    def keepalive_lines(self, out, stop):
        while not stop.wait(1.0):
            if time.monotonic() - out.last >= KEEPALIVE_EVERY:
                out.line({"type": "keepalive"})
            if out.gone:
                # The client left: interrupt the cell, as e2b's server does.
                os.kill(os.getpid(), signal.SIGINT)
                return


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
    reason = {200: "OK", 204: "No Content", 400: "Bad Request", 404: "Not Found"}.get(status, "Error")
    head = "HTTP/1.1 %d %s\r\nContent-Length: %d\r\nConnection: close\r\n" % (status, reason, len(body))
    if body:
        head += "Content-Type: %s\r\n" % ctype
    conn.sendall(head.encode() + b"\r\n" + body)


def serve(kernel, conn):
    req = read_request(conn)
    if req is None:
        return
    method, path, body = req
    try:
        args = json.loads(body or b"{}")
    except ValueError:
        return reply(conn, 400, b'{"detail":"invalid JSON"}')
    if method == "GET" and path == "/health":
        return reply(conn, 200, b'"OK"')
    if method == "POST" and path == "/keepalive":
        kernel.lifetime = int(args.get("lifetime", kernel.lifetime))
        kernel.deadline = time.monotonic() + kernel.lifetime
        return reply(conn, 204)
    if method == "POST" and path == "/execute":
        code = args.get("code")
        if not isinstance(code, str):
            return reply(conn, 422, b'{"detail":"code is required"}')
        timeout = float(args.get("timeout") or 120)
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        kernel.run(code, timeout, Output(conn))
        kernel.deadline = max(kernel.deadline, time.monotonic() + 1)
        return
    reply(conn, 404, b'{"detail":"Not Found"}')


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


def main():
    lifetime = 300
    if "--lifetime" in sys.argv:
        lifetime = int(sys.argv[sys.argv.index("--lifetime") + 1])
    os.environ.setdefault("MPLBACKEND", "module://sg_mpl")
    seed_font_list()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)
    listener = socket.socket(fileno=LISTEN_FD)
    kernel = Kernel(lifetime)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    while True:
        left = kernel.deadline - time.monotonic()
        if left <= 0:
            os._exit(0)
        ready, _, _ = select.select([listener], [], [], left)
        if not ready:
            continue
        conn, _ = listener.accept()
        try:
            serve(kernel, conn)
        except BaseException:
            # Nothing a request does may end the kernel (no thread left to
            # start, a client gone mid-answer, ...): that request is lost.
            pass
        finally:
            conn.close()


if __name__ == "__main__":
    main()
