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
import ast
import codecs
import gc
import io
import json
import linecache
import os
import select
import signal
import socket
import sys
import threading
import time

LISTEN_FD = 3
KEEPALIVE_EVERY = 5.0      # seconds of silence before a keepalive line
DRAIN_WAIT = 0.2           # output a background child still holds is not waited for
HARD_KILL_GRACE = 5.0      # after the alarm, a cell that does not stop loses its worker
REQUEST_WAIT = 10.0        # seconds a client may take to send its request
MAX_PENDING = 16           # runs asked for while one runs, served in turn
LONG_LINE = 1 << 20        # more of a line than this goes on before its end comes
READ_CHUNK = 65536
END_LINE = b'{"type": "end_of_execution"}\n'   # as e2b writes it, spaces included
EXIT_LINE = b'{"type": "sandgate_exit"}\n'     # the worker asks to end after the run (exit())
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


class PlainRunner:
    """Cells run by exec(); the last expression's repr is the main result;
    figures come first."""

    def __init__(self, out):
        self.out = out
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
RESULT_KEYS = (("text/plain", "text"), ("text/html", "html"), ("text/markdown", "markdown"),
               ("image/svg+xml", "svg"), ("image/png", "png"), ("image/jpeg", "jpeg"),
               ("application/pdf", "pdf"), ("text/latex", "latex"), ("application/json", "json"),
               ("application/javascript", "javascript"), ("e2b/data", "data"), ("e2b/chart", "chart"))


def result_line(bundle, main):
    """An e2b result line from a MIME bundle, as e2b's server maps it."""
    data = dict(bundle)
    res = {"type": "result"}
    for mime, key in RESULT_KEYS:
        value = data.pop(mime, None)
        if value is None:
            continue
        if key == "text" and isinstance(value, str) and value and value[0] in "'\"" and value[-1] == value[0]:
            value = value[1:-1]  # one pair of surrounding quotes goes
        elif isinstance(value, (bytes, bytearray)):
            value = b64(value)
        res[key] = value
    res["extra"] = data
    res["is_main_result"] = main
    return res


def orjson_like(obj):
    """obj as e2b's template makes list and dict results JSON (orjson with
    non-string keys and numpy allowed): NaN is null, keys become strings,
    tuples lists. TypeError for what orjson refuses."""
    if obj is None or isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, int):
        if not -2 ** 63 <= obj < 2 ** 64:
            raise TypeError("Integer exceeds 64-bit range")
        return int(obj)
    if isinstance(obj, float):
        return float(obj) if obj - obj == 0 else None
    if isinstance(obj, (list, tuple)):
        return [orjson_like(v) for v in obj]
    if isinstance(obj, dict):
        return {json_key(k): orjson_like(v) for k, v in obj.items()}
    if is_date(obj):
        return obj.isoformat()
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, (numpy.ndarray, numpy.generic)):
        return orjson_like(obj.tolist())
    raise TypeError("Type is not JSON serializable: %s" % type(obj).__name__)


def json_key(k):
    if isinstance(k, str):
        return k
    if k is None or isinstance(k, bool):
        return json.dumps(k)
    if isinstance(k, (int, float)):
        return str(k)
    if is_date(k):
        return k.isoformat()
    raise TypeError("a dict key of type %s" % type(k).__name__)


def dataframe_data(obj, pandas):
    """e2b/data of a DataFrame, as e2b's template makes it: column -> values,
    timestamps as ISO strings."""
    columns = obj.to_dict(orient="list")
    return {k: [v.isoformat() if isinstance(v, pandas.Timestamp) else v for v in vs]
            for k, vs in columns.items()}


def murmur2(data, seed):
    """MurmurHash2 (32 bits) of bytes: ipykernel names a cell's file with it."""
    m, h, n = 0x5BD1E995, seed ^ len(data), len(data) & ~3
    for i in range(0, n, 4):
        k = int.from_bytes(data[i:i + 4], "little") * m & 0xFFFFFFFF
        k = (k ^ k >> 24) * m & 0xFFFFFFFF
        h = (h * m & 0xFFFFFFFF) ^ k
    if len(data) > n:
        h = (h ^ int.from_bytes(data[n:], "little")) * m & 0xFFFFFFFF
    h = (h ^ h >> 13) * m & 0xFFFFFFFF
    return h ^ h >> 15


def cell_filename(code):
    """A cell's file name as e2b's kernel (ipykernel) makes it; a SyntaxError's
    value shows its base name."""
    digest = murmur2(code.encode("utf-8", "surrogatepass"), 0xC70F6907)
    return "/tmp/ipykernel_%d/%d.py" % (os.getpid(), digest)


def figure_png(fig):
    """A matplotlib figure as Jupyter's inline backend shows it."""
    from IPython.core.pylabtools import print_figure
    return print_figure(fig, "png", bbox_inches="tight", base64=True)


def load_ipython():
    """Import IPython's shell without running IPython/__init__.py, whose
    terminal half (prompt_toolkit, jedi) is most of IPython's import time:
    a stub package stands in, and the real body runs the first time a cell
    asks the package for a name the stub lacks."""
    import importlib.util
    import types
    spec = importlib.util.find_spec("IPython")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("No module named 'IPython'", name="IPython")
    pkg = types.ModuleType("IPython")
    pkg.__spec__, pkg.__loader__, pkg.__file__ = spec, spec.loader, spec.origin
    pkg.__path__, pkg.__package__ = list(spec.submodule_search_locations), "IPython"
    state = {"loading": False}

    def get_ipython():
        from IPython.core.interactiveshell import InteractiveShell
        return InteractiveShell.instance() if InteractiveShell.initialized() else None

    def rest_of_package(name):
        if state["loading"] or name.startswith("__"):
            raise AttributeError("module 'IPython' has no attribute %r" % name)
        state["loading"] = True
        spec.loader.exec_module(pkg)
        return getattr(pkg, name)

    pkg.get_ipython, pkg.__getattr__ = get_ipython, rest_of_package
    sys.modules["IPython"] = pkg
    # The completer works without jedi, and importing it is slow; a cell
    # may still import it (the block is lifted below).
    jedi = sys.modules.get("jedi", False)
    sys.modules["jedi"] = None
    try:
        from IPython.core import release
        import importlib
        # The completer too, while jedi is blocked.
        for name in ("IPython.core.interactiveshell", "IPython.core.completer"):
            importlib.import_module(name)
        pkg.version_info, pkg.__version__ = release.version_info, release.version
    except BaseException:
        for name in [n for n in sys.modules if n == "IPython" or n.startswith("IPython.")]:
            del sys.modules[name]
        raise
    finally:
        if jedi is False:
            del sys.modules["jedi"]
        else:
            sys.modules["jedi"] = jedi


def ipython_shell_class():
    """InteractiveShell as e2b's kernel has it, its output sent as e2b lines."""
    from IPython.core.compilerop import CachingCompiler
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.formatters import BaseFormatter, JSONFormatter
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.prefilter import is_shadowed
    from traitlets import ObjectName, Type, Unicode

    class CellNames(CachingCompiler):
        def get_code_name(self, raw_code, transformed_code, number):
            return cell_filename(raw_code)

    class MainResult(DisplayHook):
        """The last expression's value: e2b's main result (execute_result)."""

        def start_displayhook(self):
            pass

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            self.shell.send_result(format_dict, True)

        def finish_displayhook(self):
            pass

    class Displays(DisplayPublisher):
        """display() and figures: e2b results that are not the main one."""

        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kw):
            self.shell.send_result(data, False)

        def clear_output(self, wait=False):
            pass

    class FrameData(BaseFormatter):
        """e2b/data: e2b's template adds it for a pandas DataFrame."""
        format_type = Unicode("e2b/data")
        print_method = ObjectName("_repr_e2b_data_")
        _return_type = (dict, str)

        def __call__(self, obj):
            pandas = sys.modules.get("pandas")  # no DataFrame without pandas
            if pandas is not None and isinstance(obj, pandas.DataFrame):
                return dataframe_data(obj, pandas)
            return super().__call__(obj)

    class ListJSON(JSONFormatter):
        """application/json of lists and dicts too, as e2b's template has it."""

        def __call__(self, obj):
            if isinstance(obj, (list, dict)):
                try:
                    return orjson_like(obj), {"expanded": True}
                except (TypeError, RecursionError):  # what orjson refuses
                    pass
            return super().__call__(obj)

    class Shell(InteractiveShell):
        compiler_class = Type(CellNames)
        displayhook_class = Type(MainResult)
        display_pub_class = Type(Displays)
        out = None            # the worker's Out
        error_sent = False    # e2b sends the first error of a run only
        timed_out = False

        # IPython registers all its magics (and the shell aliases, which are
        # magics) as the shell starts: a fifth of a cold start. e2b's kernel
        # has them all, so here they come the first time anything asks.
        _magics = None
        _aliases = None

        def init_magics(self):
            pass

        def init_alias(self):
            pass

        def load_magics(self):
            if self._magics is None:
                InteractiveShell.init_magics(self)
                InteractiveShell.init_alias(self)

        @property
        def magics_manager(self):
            self.load_magics()
            return self._magics

        @magics_manager.setter
        def magics_manager(self, value):
            self._magics = value

        @property
        def alias_manager(self):
            self.load_magics()
            return self._aliases

        @alias_manager.setter
        def alias_manager(self, value):
            self._aliases = value

        def register_magics(self, *args, **kwargs):
            return self.magics_manager.register(*args, **kwargs)

        def find_magic(self, magic_name, magic_kind="line"):
            # The prefilter asks this of the first name of every one-line
            # cell. A name Python already gives a meaning (a builtin, a
            # keyword, a variable) is never taken as a magic there, so the
            # answer needs no magics loaded.
            if self._magics is None and is_shadowed(magic_name, self):
                return None
            return super().find_magic(magic_name, magic_kind)

        def setup(self):
            formatters = self.display_formatter.formatters
            formatters["e2b/data"] = FrameData(parent=self.display_formatter)
            formatters["application/json"] = ListJSON(parent=self.display_formatter)
            formatters["image/png"].for_type_by_name("matplotlib.figure", "Figure", figure_png)
            import builtins
            builtins.input = no_input

        def enable_gui(self, gui=None):
            # %matplotlib inline asks for its "event loop", which is none;
            # there is no screen for any other.
            if gui not in (None, "inline"):
                raise RuntimeError("no GUI event loop here (%s): use %%matplotlib inline" % gui)

        def ask_exit(self):
            # exit() and quit(), as in e2b's kernel: the run ends as usual,
            # then the kernel (here the worker) does.
            self.exit_now = True

        def send_result(self, bundle, main):
            # Output written so far goes first, as ipykernel flushes it.
            sys.stdout.flush()
            sys.stderr.flush()
            self.out.line(result_line(bundle, main))

        def showtraceback(self, exc_tuple=None, *args, **kwargs):
            if os.getpid() != Worker.pid:
                os._exit(0)  # the cell ended in a copy it forked (a fork bomb)
            try:
                etype = self._get_exc_info(exc_tuple)[0]
            except ValueError:
                etype = None
            if isinstance(etype, type) and issubclass(etype, CellTimeout):
                self.timed_out = True
                return
            if isinstance(etype, type) and issubclass(etype, BlockingIOError):
                kill_others()  # out of processes: a fork bomb
            super().showtraceback(exc_tuple, *args, **kwargs)

        def _showtraceback(self, etype, evalue, stb):
            sys.stdout.flush()
            sys.stderr.flush()
            if not self.error_sent:
                self.error_sent = True
                self.out.line({"type": "error", "name": str(etype.__name__), "value": str(evalue),
                               "traceback": "".join(stb)})

    return Shell


def no_input(prompt=""):
    """input() as in e2b's kernel, whose client allows no stdin."""
    from IPython.core.error import StdinNotImplementedError
    raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")


def make_ipython_shell():
    """The shell, configured as e2b's template configures its kernel."""
    load_ipython()
    from traitlets.config import Config
    config = Config()
    config.InteractiveShell.colors = "NoColor"
    config.PlainTextFormatter.max_seq_length = 0
    config.HistoryManager.enabled = False  # no SQLite file, no saving thread
    shell = ipython_shell_class().instance(config=config)
    shell.setup()
    return shell


class IPythonRunner:
    def __init__(self, shell, out):
        self.shell = shell
        shell.out = out

    def run(self, code, timeout):
        shell, out = self.shell, self.shell.out
        shell.error_sent = shell.timed_out = False
        out.line({"type": "number_of_executions", "execution_count": shell.execution_count})
        error = None
        with Capture(out):
            try:
                try:
                    with Alarm(timeout):
                        shell.run_cell(code, store_history=True)
                finally:
                    if os.getpid() != Worker.pid:
                        os._exit(0)  # a copy the cell forked
            except CellTimeout:
                shell.timed_out = True
            except KeyboardInterrupt:
                error = {"type": "error", "name": "KeyboardInterrupt", "value": "",
                         "traceback": "KeyboardInterrupt"}
            except BaseException as e:  # outside the cell: in IPython or here
                error = error_line(e, e.__traceback__)
            if shell.timed_out:
                kill_others()
                error = timeout_error(timeout)
        if error is not None and not shell.error_sent:
            out.line(error)
        if shell.exit_now:
            # exit() or quit(): e2b's kernel ends after the run and comes
            # back fresh, so this worker ends too.
            shell.exit_now = False
            out.line({"type": "sandgate_exit"})


class UnavailableRunner:
    """kernel = "ipython" without a usable IPython: every run says so."""

    def __init__(self, why, out):
        self.why, self.out = why, out

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
        runner = IPythonRunner(prepared, out)
    buf = bytearray()
    while True:
        req = next_request(sock, buf)
        try:
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


# ---------------------------------------------------------------- the server

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
