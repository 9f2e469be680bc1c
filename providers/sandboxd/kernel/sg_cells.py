"""The worker half of sandgate's local kernel (see kernel.py): what runs
the cells of one sandbox, in a process the kernel's server forked. Output
goes back to the server as e2b's NDJSON lines over a socketpair. The plain
kernel is here; the IPython one is in sg_ipython.py, loaded only when used.
"""
import ast
import codecs
import gc
import io
import json
import linecache
import os
import select
import signal
import sys
import threading
import time

DRAIN_WAIT = 0.2           # output a background child still holds is not waited for
READ_CHUNK = 65536
PIDNS = os.environ.get("SANDGATE_PIDNS") == "1"  # our own pid namespace (bubblewrap)


class CellTimeout(BaseException):
    """Raised in the cell by the per-run alarm (BaseException: `except
    Exception` in user code does not swallow it)."""


def now_iso():
    """The time as e2b's server writes it: 2026-11-29T18:06:09.679137+00:00."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06d+00:00" % (t % 1 * 1e6)


def timeout_error(timeout, restarted=False):
    note = "; the cell did not stop, so it lost its state" if restarted else ""
    return {"type": "error", "name": "TimeoutError",
            "value": "Execution exceeded the time limit of %g s" % timeout,
            "traceback": "TimeoutError: execution exceeded the time limit of %g s%s" % (timeout, note)}


# ---------------------------------------------------------------- the worker

class Worker:
    """What a worker process knows of itself."""
    pid = 0          # its own pid: a process the cell forked is not the worker
    server = 0       # the server's pid, spared by kill_others()
    running = False  # a cell runs: SIGINT and the alarm may interrupt it


def live_pids():
    """Pids of the processes in this pid namespace, zombies left out."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                state = f.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            pids.append(int(name))
    return pids


def reap_children(wait):
    """Reap the worker's dead children (zombies count against RLIMIT_NPROC),
    waiting up to `wait` seconds for those still dying."""
    deadline = time.monotonic() + wait
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if time.monotonic() >= deadline:
                return
            time.sleep(0.005)


def kill_others():
    """Kill every other process of the sandbox but the server and init
    (pid 1), after a timeout or a fork bomb: what the cell started goes with
    it. kill(-1) stops them all at once (no fork escapes it), the server is
    woken again at once, and what stays stopped is killed by pid. Only
    inside the sandbox's own pid namespace: without it, -1 would reach every
    process of the user."""
    if not PIDNS or os.getpid() != Worker.pid:
        return  # a copy the cell forked must not kill the worker
    me = os.getpid()
    for sig, pid in ((signal.SIGSTOP, -1), (signal.SIGCONT, Worker.server)):
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    for _ in range(100):  # the cell's other threads may still fork
        victims = [p for p in live_pids() if p not in (1, me, Worker.server)]
        if not victims:
            break
        for p in victims:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        reap_children(0)
    reap_children(2.0)


class Out:
    """The worker's end of the socketpair: NDJSON lines to the server,
    whole lines only (the cell's thread and the reader threads share it)."""

    def __init__(self, sock):
        self.sock = sock
        self.lock = threading.Lock()

    def line(self, obj):
        if os.getpid() != Worker.pid:
            return  # a child the cell forked does not speak for the worker
        data = encode_line(obj)
        main = threading.current_thread() is threading.main_thread()
        if main:
            # SIGINT or the alarm must not cut a line in half.
            old = signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGALRM))
        try:
            with self.lock:
                self.sock.sendall(data)
        except OSError:
            os._exit(0)  # the server has gone
        finally:
            if main:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)


def is_date(obj):
    """A datetime.date, .datetime or .time (never one if the cell did not
    import datetime)."""
    dt = sys.modules.get("datetime")
    return dt is not None and isinstance(obj, (dt.date, dt.time))


def b64(data):
    import base64
    return base64.b64encode(data).decode("ascii")


def json_default(obj):
    """What json cannot write itself: numpy scalars and arrays, dates, bytes."""
    if isinstance(obj, (bytes, bytearray)):
        return b64(obj)
    if is_date(obj):
        return obj.isoformat()
    for conv in ("item", "tolist"):  # numpy
        f = getattr(obj, conv, None)
        if callable(f):
            return f()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


def finite(obj):
    """obj with NaN and infinities as null, keys as strings: valid JSON for
    the gateway's parser."""
    if isinstance(obj, float):
        return obj if obj - obj == 0 else None
    if isinstance(obj, dict):
        return {k if isinstance(k, str) else str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def encode_line(obj):
    """One NDJSON line; whatever is in it, valid JSON (a value that cannot
    be written at all leaves the line, its strings stay)."""
    try:
        text = json.dumps(obj, ensure_ascii=False, allow_nan=False, default=json_default)
    except (ValueError, TypeError, RecursionError):
        try:
            text = json.dumps(finite(json.loads(json.dumps(finite(obj), default=json_default))),
                              ensure_ascii=False)
        except (ValueError, TypeError, RecursionError):
            text = json.dumps({k: v for k, v in obj.items() if v is None or isinstance(v, (str, int))},
                              ensure_ascii=False)
    # Lone surrogates (a str that cannot be UTF-8) become "?".
    return text.encode("utf-8", "replace") + b"\n"


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
        # A character cut by a read boundary is joined with the next read;
        # only bytes still incomplete at the true end become U+FFFD.
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            while True:
                if self.done.is_set():
                    ready, _, _ = select.select([fd], [], [], DRAIN_WAIT)
                    if not ready:
                        break
                chunk = os.read(fd, READ_CHUNK)
                if not chunk:
                    break
                self.send(kind, dec.decode(chunk))
            self.send(kind, dec.decode(b"", True))
        finally:
            os.close(fd)

    def send(self, kind, text):
        if text:
            self.out.line({"type": kind, "text": text, "timestamp": now_iso()})

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


class Alarm:
    """The per-run time limit: CellTimeout in the cell when it passes."""

    def __init__(self, timeout):
        self.timeout = timeout

    def __enter__(self):
        Worker.running = True
        signal.setitimer(signal.ITIMER_REAL, self.timeout)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        Worker.running = False
        return False


def on_alarm(signum, frame):
    if Worker.running:
        raise CellTimeout()


def on_interrupt(signum, frame):
    # The server's SIGINT when the client has gone: only a running cell stops.
    if Worker.running:
        raise KeyboardInterrupt()


# -- the plain kernel

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
        results.append({"type": "result", "png": b64(buf.getvalue()),
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
                res["png"] = b64(data)
        except Exception:
            pass
    return res


def error_line(exc, tb):
    import traceback
    frames = traceback.extract_tb(tb)
    # Drop the kernel's own frames: the user's cell starts at "<cell>".
    while frames and frames[0].filename != "<cell>":
        frames.pop(0)
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    return {"type": "error", "name": type(exc).__name__, "value": str(exc),
            "traceback": "".join(lines).rstrip("\n")}


WARM_UP = "print(end='')\n0"


class PlainRunner:
    """Cells run by exec(); the last expression's repr is the main result;
    figures come first."""

    def __init__(self, out):
        self.out = out
        self.count = 0
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}

    def warm(self):
        """A first cell's one-time costs paid now, leaving no trace (its
        lines go out as a run's, and the server drops them)."""
        try:
            self.run(WARM_UP, 30)
        finally:
            self.count = 0
            self.ns = {"__name__": "__main__", "__builtins__": __builtins__}

    def run(self, code, timeout):
        self.count += 1
        self.out.line({"type": "number_of_executions", "execution_count": self.count})
        results, error = [], None
        with Capture(self.out):
            # Tracebacks show the cell's own lines.
            linecache.cache["<cell>"] = (len(code), None, code.splitlines(True), "<cell>")
            try:
                tree = ast.parse(code, "<cell>", "exec")
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                    last = ast.Expression(tree.body.pop().value)
                try:
                    with Alarm(timeout):
                        exec(compile(tree, "<cell>", "exec"), self.ns)
                        if last is not None:
                            value = eval(compile(last, "<cell>", "eval"), self.ns)
                            if value is not None:
                                self.ns["_"] = value
                                results.append(main_result(value))
                finally:
                    # A copy made by os.fork() in the cell must not answer
                    # the request, nor serve the next ones.
                    if os.getpid() != Worker.pid:
                        os._exit(0)
            except CellTimeout:
                kill_others()
                error = timeout_error(timeout)
            except KeyboardInterrupt:
                error = {"type": "error", "name": "KeyboardInterrupt", "value": "Execution interrupted",
                         "traceback": "KeyboardInterrupt"}
            except BaseException as e:  # SystemExit included: the worker lives on
                error = error_line(e, e.__traceback__)
                if isinstance(e, BlockingIOError):
                    # Out of processes (a fork bomb): end them all, so
                    # the worker can start its threads next time.
                    kill_others()
            try:
                results = figures() + results
            except Exception as e:
                error = error or error_line(e, e.__traceback__)
        for r in results:
            self.out.line(r)
        if error is not None:
            self.out.line(error)


# -- the IPython kernel

# Jupyter MIME type -> key of an e2b result line, in the order e2b writes them.


class UnavailableRunner:
    """kernel = "ipython" without a usable IPython: every run says so."""

    def __init__(self, why, out):
        self.why, self.out = why, out

    def warm(self):
        pass

    def run(self, code, timeout):
        self.out.line({"type": "error", "name": "KernelUnavailable",
                       "value": "this sandbox's kernel is \"ipython\", but IPython cannot be used: %s" % self.why,
                       "traceback": ""})


def next_request(sock, buf):
    """The next run the server sends (one JSON line); buf keeps what came
    after it. The worker ends when the server has gone."""
    while b"\n" not in buf:
        try:
            chunk = sock.recv(READ_CHUNK)
        except InterruptedError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            os._exit(0)
        buf += chunk
    line, _, rest = buf.partition(b"\n")
    buf[:] = rest
    return json.loads(line)


def worker_main(sock, prepared, dumpable):
    """A worker's life: take a run, run it, answer, until the server goes."""
    Worker.pid, Worker.server = os.getpid(), os.getppid()
    gc.enable()
    if not dumpable:
        set_dumpable(True)
    try:
        os.setpgid(0, 0)  # without a pid namespace, its children end as a group
    except OSError:
        pass
    signal.signal(signal.SIGINT, on_interrupt)
    signal.signal(signal.SIGALRM, on_alarm)
    out = Out(sock)
    if prepared is None:
        runner = PlainRunner(out)
    elif isinstance(prepared, str):
        runner = UnavailableRunner(prepared, out)
    else:
        from sg_ipython import IPythonRunner
        runner = IPythonRunner(prepared, out)
    buf = bytearray()
    while True:
        req = next_request(sock, buf)
        try:
            if req.get("warm"):
                runner.warm()
            else:
                runner.run(req["code"], req["timeout"])
        except BaseException as e:
            # Nothing a run does may end the worker (no thread left to
            # start, an interrupt between two lines, ...).
            try:
                out.line(error_line(e, e.__traceback__))
            except BaseException:
                pass
        if os.getpid() != Worker.pid:
            os._exit(0)  # a copy the cell forked
        out.line({"type": "end_of_execution"})


def set_dumpable(on):
    """prctl(PR_SET_DUMPABLE). The server is not dumpable: a cell (the same
    uid) can neither read nor write its memory through /proc. A worker is,
    so the cell can read its own /proc/self. Through _ctypes directly: the
    ctypes package costs a millisecond of every cold start."""
    try:
        import _ctypes

        class CInt(_ctypes._SimpleCData):
            _type_ = "i"

        class CFunction(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = CInt

        prctl = CFunction(_ctypes.dlsym(_ctypes.dlopen(None, 0), "prctl"))
        prctl(4, 1 if on else 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except Exception:
        pass
