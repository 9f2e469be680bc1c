#!/usr/bin/env python3
"""Fake e2b (control plane + code-interpreter data plane) for sandgate tests.

Standard library only. Written from reference/e2b-protocol.md. One process, one port:

* a request carrying `E2b-Sandbox-Id` (+ `E2b-Sandbox-Port`) goes to that sandbox's data plane,
  the way E2B_SANDBOX_URL / sandgate's `sandbox_url` works (a Host of `<port>-<id>.<anything>`
  routes the same way); port 49999 is the code-interpreter server (`/health`, `/execute`,
  `/contexts`), port 49983 a small envd (`/health`, `/envs`, `/metrics`, and the files API below);
* anything else is the control-plane API (`X-API-Key`): POST /sandboxes, GET /sandboxes,
  GET /v2/sandboxes, GET|DELETE /sandboxes/{id}, POST /sandboxes/{id}/timeout|refreshes|connect.

Every sandbox really runs Python: one persistent `python3` worker per context (state survives
between runs), Jupyter-like cells (last expression -> `result`), stdout/stderr streamed as written,
NDJSON lines exactly as the real server frames them, `keepalive` after --keepalive s of silence.
A PNG result comes from `display_png(b64)` or a `__png__` variable holding base64 text; `display(obj)`
and `display_data({mime: value})` emit other display results. Results and errors take the shapes
of the real template's IPython kernel: IPython's text/plain (its pretty printer when the cells'
Python has IPython), `json` for lists and dicts, `data` for a pandas DataFrame, matplotlib figures
as the inline backend shows them (after the main result when left open), PIL's Image.save(path)
displaying the image (the template's startup script 0003_images.py), tracebacks as IPython 9
writes them with colors off, joined with "" as the server joins them. A client leaving mid-run interrupts
the worker (SIGINT, then a kill after --interrupt-grace s); a run sent within --abort-window s of
that is aborted and only ever gets keepalives, as on the real server (its "aborted" quirk).

Files (envd, port 49983). Each sandbox has a directory of its own that the fake treats as the
sandbox's "/" (/mnt/data/x.csv is DIR/mnt/data/x.csv); the cells' worker runs in DIR/home/user and
sees /home/user and /mnt there through the path mapping of sbfiles.py (open, os, pathlib, shutil,
pandas...; not subprocesses), so a file uploaded to /mnt/data/x.csv is what open('/mnt/data/x.csv')
reads and what the code writes there downloads. Routes:
  GET  /files?path=&username=   raw bytes; Content-Type by extension (Go's table, then the system's;
       text/* with charset=utf-8), else sniffed (http.ServeContent); Content-Disposition as
       mime.FormatMediaType("inline", filename=base) writes it: `inline; filename=a.csv` (quoted
       only when not a token; RFC 2231 for non-ASCII); Vary: Accept-Encoding; Last-Modified,
       Accept-Ranges, single Range -> 206 (several ranges: the whole file), If-Modified-Since -> 304;
       Accept-Encoding: gzip -> gzip (Content-Length up to 2048 bytes, chunked above, as net/http).
       Errors {"code":N,"message":...}\n (json.Encoder), application/json; charset=utf-8, nosniff:
       400 "path '/p' is a directory", 404 "path '/p' does not exist", 401 unknown user / token /
       signature, 406 Accept-Encoding.
  POST /files?path=&username=   multipart/form-data (form name "file"; without `path`, each part's
       filename, kept whole, is its destination) or application/octet-stream (path required);
       Content-Encoding: gzip; creates parents (0755), overwrites; 200
       [{"name":"a.csv","path":"/mnt/data/a.csv","type":"file"}] with Content-Type text/plain;
       charset=utf-8 (envd writes none: net/http sniffs). 400 unsupported content type, raw body
       without path, a directory at the path, two parts to one path; 401 unknown user; 500 "error
       ensuring directories: path is a file: /p"; 507 (files_status fault).
  POST /filesystem.Filesystem/ListDir|MakeDir|Stat   Connect unary, JSON codec only (Content-Type
       application/json; else 415), POST only (405), user from `Authorization: Basic base64(user:)`
       (unknown -> 401 unauthenticated), the envd token required as on every envd route but
       /files and /health. ListDir {"path","depth"} (0 = 1) -> {"entries":[EntryInfo...]} in
       filepath.WalkDir's order (pre-order, lexical), symlinks not followed, depth-limited, paths
       under the requested (not the symlink-resolved) path; no entries -> {}. MakeDir {"path"} ->
       {"entry":EntryInfo}, 409 already_exists, 400 invalid_argument when a non-directory is
       there. EntryInfo in protojson: name, type (FILE_TYPE_FILE|FILE_TYPE_DIRECTORY; a symlink
       has its target's type and mode, "L..." permissions and symlinkTarget), path, size (int64:
       a string), mode (permission bits, a number), permissions (Go's FileMode.String, e.g.
       "-rw-r--r--"), owner, group, modifiedTime (RFC 3339, 0/3/6/9 fraction digits, Z); fields at
       their default value left out. Errors {"code":"not_found","message":...} with Connect's
       HTTP status (404, 400 invalid_argument, 409, 401, 500 internal, 501 unimplemented for the
       service's other methods).
  Verified by reading the sources (no live service): e2b-dev/infra @54693ff3
  packages/envd/spec/filesystem/filesystem.proto (EntryInfo, FileType, ListDirRequest{path,depth},
  MakeDirRequest), packages/envd/internal/services/filesystem/{dir,stat,utils,service}.go (ListDir's
  depth default, walk, errors; MakeDir's), packages/shared/pkg/filesystem/entry.go (symlink type,
  mode, permissions), packages/envd/internal/api/{download,upload,auth,encoding,error}.go and
  permissions/{path,authenticate}.go (paths, users, messages, statuses, signatures, gzip, the
  auth exemption of /files); e2b-dev/E2B @b8029973 packages/js-sdk/src/sandbox/index.ts
  (createConnectTransport with useBinaryFormat: false: the SDK speaks Connect JSON),
  src/envd/rpc.ts (Basic auth "user:"), src/sandbox/filesystem/index.ts (ListDir depth default 1,
  MakeDir's already_exists = false); connectrpc/connect-go @96463260 codec.go (protojson with
  default options, DiscardUnknown on input, the zero-length payload error) and
  protocol_connect.go (connectCodeToHTTP, the unary error body, always application/json).
  Assumed: the default user is "user" with home and workdir /home/user (envd's own default is
  root, set per template by /init; the code-interpreter's kernels run as user in /home/user), and
  users are user and root only; owner/group in entries is whoever the fake saw make the path
  through envd, else root for / /home /mnt /root and user for the rest; protojson's whitespace
  (it may add a random space after ':' or ',') is not reproduced; Go error texts built from
  syscall errors are approximated; X-Metadata-* headers are ignored (envdVersion is 0.5.9, before
  0.6.2 where they came); Connect's binary codec, compression and GET are not served.

Test hooks (not authenticated): GET /__stats, POST /__reset, GET|POST /__faults, GET /__requests.
Faults (POST /__faults, each with "count", default 1, -1 = forever; {} clears all):
  {"create_status": 500|503|504|429|401, "message"?, "error_code"?, "retry_after"?}
  {"create_delay": SECONDS}           {"delete_status": 500}        {"timeout_status": 500}
  {"delete_delay": SECONDS}           (a kill that takes this long: the sandbox dies at its end)
  {"execute_status": 502}             (the proxy's "sandbox was not found" 502)
  {"execute_drop": true, "lines"?: 2} (send N lines, then close mid-stream, no end_of_execution)
  {"execute_hang": true, "lines"?: 1} (send N lines, then nothing until the client leaves)
  {"files_status": 507|500, "message"?}  (POST /files answers it, nothing written)
  {"download_status": 500, "message"?}   {"download_drop": true} (GET /files: headers, half the body, cut)
  {"listdir_status": 503|404|500...}     (ListDir answers the Connect error of that HTTP status)
GET /__stats also has `history`: {sandboxID: {"metadata", "timeout"}} for every sandbox created
since the last reset, so a test can tell each one's fate (in `live`, in `expired`, else deleted).

Usage: e2b.py [--host 127.0.0.1] [--port 0] [--port-file PATH] [--api-key KEY] [--quiet]
              [--keepalive 1.0] [--max-timeout 3600] [--max-sandboxes 100] [--domain D]
              [--template ALIAS ...] [--interrupt-grace 3] [--python PATH]
"""
import argparse
import base64
import errno
import gzip
import posixpath
import stat as stat_mod
import zlib
import collections
import datetime
import hmac
import ipaddress
import itertools
import json
import os
import queue
import re
import secrets
import select
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbfiles  # noqa: E402

DISCONNECTS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)
CLIENT_ID = "6532622b"
ENVD_VERSION = "0.5.9"
CI_PORT, ENVD_PORT = 49999, 49983
API_KEY_MSG = "Invalid API key, please visit https://e2b.dev/docs/api-key for more information."
ENVD_401 = "unauthorized access, please provide a valid access token or method signing if supported"
END_LINE = '{"type": "end_of_execution"}'     # literal, spaces included (reference §5.3)
KEEPALIVE_LINE = '{"type": "keepalive"}'
# alias -> (resolved template ID, runs the code-interpreter server on 49999)
TEMPLATES = {"code-interpreter-v1": ("nlhz8vlwyupq845jsdg9", True),
             "base": ("rki5dems9wqfm4r03t7g", False)}
# Jupyter MIME type -> key of a `result` line, in the server's field order (reference §5.3)
RESULT_KEYS = (("text/plain", "text"), ("text/html", "html"), ("text/markdown", "markdown"),
               ("image/svg+xml", "svg"), ("image/png", "png"), ("image/jpeg", "jpeg"),
               ("application/pdf", "pdf"), ("text/latex", "latex"), ("application/json", "json"),
               ("application/javascript", "javascript"), ("e2b/data", "data"), ("e2b/chart", "chart"))
FAULT_KINDS = ("create_status", "create_delay", "execute_drop", "execute_hang", "execute_status",
               "delete_status", "delete_delay", "timeout_status", "files_status", "download_status",
               "download_drop", "listdir_status")
FAULT_PARAMS = ("count", "message", "error_code", "retry_after", "lines")
ID_RE = re.compile(r"[a-z0-9]+")
HOME_DIR = "/home/user"           # the template's user "user" (uid 1000), its home and the kernels' cwd
MAPPED = (HOME_DIR, "/mnt")       # what the code sees inside the sandbox's directory (sbfiles.py)
USERS = {"user": (1000, HOME_DIR), "root": (0, "/root")}   # the template's users: uid, home
DEFAULT_USER = "user"
DOWNLOAD_CHUNK = 2048             # net/http's buffer before it chunks a response

# Connect's codes and the HTTP status of each (connect-go protocol_connect.go connectCodeToHTTP)
CONNECT_HTTP = {"canceled": 499, "unknown": 500, "invalid_argument": 400, "deadline_exceeded": 504,
                "not_found": 404, "already_exists": 409, "permission_denied": 403, "resource_exhausted": 429,
                "failed_precondition": 400, "aborted": 409, "out_of_range": 400, "unimplemented": 501,
                "internal": 500, "unavailable": 503, "data_loss": 500, "unauthenticated": 401}
CONNECT_FS_METHODS = ("Stat", "MakeDir", "Move", "ListDir", "Remove", "WatchDir", "CreateWatcher",
                      "GetWatcherEvents", "RemoveWatcher")     # filesystem.proto's service
EMPTY = object()        # Worker.get(): nothing arrived in time
SEQ = itertools.count(1)
PYTHON = sys.executable  # what runs the cells (--python)


def go_json(obj):
    """JSON as Go's encoding/json writes it: compact, UTF-8, HTML characters escaped."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                 ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(a, b)
    return s.encode()


def py_json(obj):
    """JSON as FastAPI's JSONResponse writes it."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def rfc3339(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_sandbox_id():
    alphabet = string.ascii_lowercase + string.digits
    return "i" + "".join(secrets.choice(alphabet) for _ in range(20))


def not_found_msg(sid):
    return "Sandbox \"%s\" doesn't exist or you don't have access to it" % sid


def as_int(v):
    """An integral JSON number as int (bools excluded), else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def str_map(v):
    return v is None or (isinstance(v, dict) and all(isinstance(x, str) for x in v.values()))


class ClientGone(Exception):
    pass


class WalkError(Exception):
    pass


def go_errno(e):
    """The text Go's syscall.Errno gives for an OSError."""
    return (e.strerror or str(e)).lower() if isinstance(e, OSError) else str(e)


class Cut(Exception):
    """End the response by closing the connection mid-body (fault, or sandbox killed)."""


# ---------------------------------------------------------------- the worker (runs the code)

WORKER_SRC = sbfiles.PATHMAP_SRC + r'''
import ast, base64, builtins, codeop, datetime, io, json, linecache, os, signal, sys, threading, time, traceback, types

PARENT = os.getppid()
HOME = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()   # the sandbox's directory (its "/")
MAIN = threading.main_thread()
_proto = os.dup(1)
_cmds = os.dup(0)
_null = os.open(os.devnull, os.O_RDWR)
os.dup2(_null, 0)
os.dup2(_null, 1)
os.close(_null)
_wlock = threading.Lock()
_st = {"executing": False, "pending": False, "in_emit": 0, "seq": 0, "exit": False}
_CELLS = {}
_GLOBAL_ENV = {}
_loop = None
# No PR_SET_PDEATHSIG: it fires when the *thread* that spawned us exits (a short-lived
# request thread of the fake). The flusher thread watches getppid() instead.


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def _send(msg):
    msg["seq"] = _st["seq"]
    data = json.dumps(msg).encode("ascii")
    main = threading.current_thread() is MAIN
    with _wlock:
        if main:
            _st["in_emit"] += 1
        try:
            view = memoryview(data + b"\n")
            while view:
                n = os.write(_proto, view)
                view = view[n:]
        except OSError:
            os._exit(0)
        finally:
            if main:
                _st["in_emit"] -= 1
    if main and _st["pending"] and _st["executing"]:
        _st["pending"] = False
        raise KeyboardInterrupt


def _on_sigint(signum, frame):
    # Interrupt only a running cell, and never in the middle of a protocol write.
    if not _st["executing"]:
        return
    if _st["in_emit"]:
        _st["pending"] = True
        return
    raise KeyboardInterrupt


signal.signal(signal.SIGINT, _on_sigint)


# Output of both streams, in write order: [[kind, [pieces], timestamp], ...]. A write that
# completes a line goes out at once unless something went out < 10 ms ago; then the flusher
# thread sends it within ~10 ms (a flood becomes big chunks, as with ipykernel's buffering).
# A partial line goes out within 0.2 s.
_slock = threading.RLock()
_segs = []
_size = [0]
_last = [0.0]
_kick = threading.Event()


def _flush_streams():
    with _slock:
        while _segs:
            kind, pieces, ts = _segs.pop(0)
            text = "".join(pieces)
            _size[0] -= len(text)
            _last[0] = time.monotonic()
            _send({"t": kind, "text": text, "ts": ts})
        _size[0] = 0


class _Out(io.TextIOBase):
    def __init__(self, kind):
        self._kind = kind

    @property
    def name(self):
        return "<%s>" % self._kind

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "strict"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        raise io.UnsupportedOperation("fileno")

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        if not s:
            return 0
        with _slock:
            if _segs and _segs[-1][0] == self._kind:
                _segs[-1][1].append(s)
            else:
                _segs.append([self._kind, [s], _now()])
            _size[0] += len(s)
            if "\n" in s:
                if time.monotonic() - _last[0] >= 0.01 or _size[0] >= 65536:
                    _flush_streams()
                else:
                    _kick.set()
        return len(s)

    def flush(self):
        _flush_streams()


_OUT, _ERR = _Out("stdout"), _Out("stderr")
sys.stdout, sys.stderr = _OUT, _ERR
sys.stdin = open(os.devnull)
sys.argv = [""]


def _orphaned(wait=0.0):
    """The fake has gone (stdin closed, or we were re-parented). If it died without cleaning
    up, remove the sandbox's directory; exit either way."""
    deadline = time.monotonic() + wait
    while os.getppid() == PARENT and time.monotonic() < deadline:
        time.sleep(0.05)
    if os.getppid() != PARENT and os.path.basename(HOME).startswith("fake-e2b-"):
        import shutil
        shutil.rmtree(HOME, ignore_errors=True)
    os._exit(0)


def _flusher():
    while True:
        if _kick.wait(0.2):
            time.sleep(0.01)
            _kick.clear()
        if os.getppid() != PARENT:
            _orphaned()
        try:
            _flush_streams()
        except BaseException:
            pass


threading.Thread(target=_flusher, daemon=True).start()


class StdinNotImplementedError(IOError, NotImplementedError):
    pass


def _input(prompt=""):
    raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")


builtins.input = _input

_REPRS = (("_repr_html_", "text/html"), ("_repr_markdown_", "text/markdown"),
          ("_repr_svg_", "image/svg+xml"), ("_repr_png_", "image/png"), ("_repr_jpeg_", "image/jpeg"),
          ("_repr_pdf_", "application/pdf"), ("_repr_latex_", "text/latex"),
          ("_repr_json_", "application/json"), ("_repr_javascript_", "application/javascript"))


def _text(obj):
    """text/plain as IPython's formatter writes it: its pretty printer when it can be had
    (long containers wrap at 79 columns), without truncation (the template's
    PlainTextFormatter.max_seq_length = 0); repr otherwise."""
    try:
        from IPython.lib.pretty import pretty
    except ImportError:
        return repr(obj)
    return pretty(obj, max_seq_length=0)


def _orjson_like(obj):
    """What the template's JSON formatter makes of a list or dict (orjson, non-string keys
    and numpy allowed): NaN is null, keys are strings, tuples lists; TypeError when orjson
    would refuse."""
    if obj is None or isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, int):
        if not -2 ** 63 <= obj < 2 ** 64:
            raise TypeError("Integer exceeds 64-bit range")
        return int(obj)
    if isinstance(obj, float):
        return float(obj) if obj - obj == 0 else None
    if isinstance(obj, (list, tuple)):
        return [_orjson_like(v) for v in obj]
    if isinstance(obj, dict):
        return {_json_key(k): _orjson_like(v) for k, v in obj.items()}
    if isinstance(obj, (datetime.date, datetime.time)):
        return obj.isoformat()
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, (np.ndarray, np.generic)):
        return _orjson_like(obj.tolist())
    raise TypeError("Type is not JSON serializable: %s" % type(obj).__name__)


def _json_key(k):
    if isinstance(k, str):
        return k
    if k is None or isinstance(k, bool):
        return json.dumps(k)
    if isinstance(k, (int, float)):
        return str(k)
    if isinstance(k, (datetime.date, datetime.time)):
        return k.isoformat()
    raise TypeError("Dict key must a type serializable with OPT_NON_STR_KEYS")


def _figure_png(fig):
    """A matplotlib figure as the inline backend renders it (IPython's print_figure):
    base64 with b2a_base64's newline; nothing for an empty figure."""
    if not fig.axes and not fig.lines:
        return None
    buf = io.BytesIO()
    fig.canvas.print_figure(buf, format="png", facecolor=fig.get_facecolor(), edgecolor=fig.get_edgecolor(),
                            dpi=fig.dpi, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii") + "\n"


def _bundle(obj):
    """The MIME bundle IPython's display formatter makes of obj in e2b's template."""
    data = {"text/plain": _text(obj)}
    if isinstance(obj, type):
        return data
    for meth, mime in _REPRS:
        f = getattr(obj, meth, None)
        if not callable(f):
            continue
        try:
            v = f()
        except Exception:
            continue
        if isinstance(v, tuple) and len(v) == 2:
            v = v[0]          # (data, metadata)
        if v is None:
            continue
        if isinstance(v, (bytes, bytearray)):
            v = base64.b64encode(bytes(v)).decode("ascii") + "\n"
        data[mime] = v
    if isinstance(obj, (list, dict)):
        try:
            data["application/json"] = _orjson_like(obj)     # the template's JSON formatter
        except TypeError:
            pass
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, pd.DataFrame):
        cols = obj.to_dict(orient="list")        # the template's e2b/data formatter
        data["e2b/data"] = {k: [v.isoformat() if isinstance(v, pd.Timestamp) else v for v in vs]
                            for k, vs in cols.items()}
    mf = sys.modules.get("matplotlib.figure")
    if mf is not None and isinstance(obj, mf.Figure):
        png = _figure_png(obj)
        if png is not None:
            data["image/png"] = png
    return data


def _display(data, main=False):
    _flush_streams()
    _send({"t": "result", "main": main, "data": data})


def display(*objs):
    for obj in objs:
        _display(_bundle(obj))


def display_data(bundle):
    """Emit a display result from a {mime type: value} bundle."""
    _display(dict(bundle))


def display_png(png, text="<IPython.core.display.Image object>"):
    """Emit a PNG display result; `png` is base64 text (or raw PNG bytes)."""
    if isinstance(png, (bytes, bytearray)):
        png = bytes(png)
        png = (base64.b64encode(png) if png.startswith(b"\x89PNG") else png).decode("ascii")
    if not png.endswith("\n"):
        png += "\n"
    _display({"text/plain": text, "image/png": png})


# matplotlib as ipykernel sets it up: the inline backend (MPLBACKEND points here), in
# interactive mode. show() displays every open figure and closes it; figures a cell made
# and left open are displayed after it (post-execute), so after its main result.
_INLINE = "fake_e2b_inline"
_mpl_drawn = [False]


def _show_figures(*args, **kwargs):
    from matplotlib._pylab_helpers import Gcf
    try:
        for manager in Gcf.get_all_fig_managers():
            display(manager.canvas.figure)
    finally:
        _mpl_drawn[0] = False
        if Gcf.get_all_fig_managers():
            import matplotlib.pyplot as plt
            plt.close("all")


def _draw_if_interactive(*args, **kwargs):
    import matplotlib
    if matplotlib.is_interactive():
        _mpl_drawn[0] = True


class _InlineBackend:
    """Makes the backend module when matplotlib asks for it."""

    def find_spec(self, name, path=None, target=None):
        if name != _INLINE:
            return None
        import importlib.machinery
        return importlib.machinery.ModuleSpec(name, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg, _BackendAgg
        module.FigureCanvas, module.FigureManager = FigureCanvasAgg, _BackendAgg.FigureManager
        # (without its own new_figure_manager, pyplot would replace draw_if_interactive)
        module.new_figure_manager = _BackendAgg.new_figure_manager
        module.new_figure_manager_given_figure = _BackendAgg.new_figure_manager_given_figure
        module.show, module.draw_if_interactive = _show_figures, _draw_if_interactive
        matplotlib.interactive(True)


def _after_cell():
    if _mpl_drawn[0] and "matplotlib.pyplot" in sys.modules:
        _show_figures()


sys.meta_path.append(_InlineBackend())
os.environ["MPLBACKEND"] = "module://" + _INLINE


class _ShowOnSave:
    """The template's startup script 0003_images.py: PIL's Image.save to a path (a str)
    displays the image first. It imports PIL at start; this fake wraps the method when a
    cell first imports PIL.Image."""

    def find_spec(self, name, path=None, target=None):
        if name != "PIL.Image":
            return None
        sys.meta_path.remove(self)
        import importlib.util
        spec = importlib.util.find_spec(name)
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            save = module.Image.save

            def shown(image, fp, format=None, **params):
                if isinstance(fp, str):
                    display(image)
                return save(image, fp, format, **params)

            module.Image.save = shown

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _ShowOnSave())

_mod = types.ModuleType("__main__")
_mod.__dict__["__builtins__"] = builtins
sys.modules["__main__"] = _mod
NS = _mod.__dict__
class _Exit:
    """exit() and quit() as in ipykernel: the run ends as usual, then the kernel does, and the
    Jupyter server starts it again (fresh state)."""

    def __call__(self, keep_kernel=False):
        _st["exit"] = not keep_kernel


NS.update(display=display, display_data=display_data, display_png=display_png, exit=_Exit(), quit=_Exit())


def _check_png():
    v = NS.pop("__png__", None)
    if isinstance(v, (bytes, bytearray)):
        v = bytes(v).decode("ascii", "replace")
    if isinstance(v, str) and v.strip():
        display_png(v)


def _run(code):
    r = eval(code, NS)
    if code.co_flags & 0x80:     # CO_COROUTINE: the cell used top-level await
        global _loop
        import asyncio
        if _loop is None:
            _loop = asyncio.new_event_loop()
        r = _loop.run_until_complete(r)
    return r


def _murmur2(data, seed):
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


def _run_cell(code, count):
    # ipykernel's name for a cell: /tmp/ipykernel_<pid>/<murmur2 of the code>.py (a
    # SyntaxError's value shows its base name)
    fname = "/tmp/ipykernel_%d/%d.py" % (os.getpid(), _murmur2(code.encode("utf-8", "surrogatepass"), 0xC70F6907))
    _CELLS[fname] = count
    linecache.cache[fname] = (len(code), None, code.splitlines(True) or [""], fname)
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    # IPython parses with codeop's flags: `x = (` is "incomplete input"
    parse = flags | codeop.PyCF_DONT_IMPLY_DEDENT | getattr(codeop, "PyCF_ALLOW_INCOMPLETE_INPUT", 0)
    # The one magic models write often; this fake's matplotlib is inline already.
    code = "\n".join(l[:len(l) - len(l.lstrip())] + "pass" if l.lstrip().startswith("%matplotlib") else l
                     for l in code.split("\n"))
    tree = compile(code, fname, "exec", parse | ast.PyCF_ONLY_AST, dont_inherit=True)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not code.rstrip().endswith(";"):
        last = ast.Expression(tree.body.pop().value)
    _run(compile(tree, fname, "exec", flags, dont_inherit=True))
    value = None
    if last is not None:
        value = _run(compile(last, fname, "eval", flags, dont_inherit=True))
    _check_png()
    if value is not None:
        NS["_"] = value
        _display(_bundle(value), main=True)


def _label(filename, lineno):
    """Where a frame is, as IPython 9 writes it: `Cell In[3], line 2` for a cell,
    `File /path/mod.py:12` (home as ~) for a module."""
    if filename in _CELLS:
        return "Cell In[%d], line %d" % (_CELLS[filename], lineno)
    home = os.path.expanduser("~")
    if home not in ("", "/") and filename.startswith(home + "/"):
        filename = "~" + filename[len(home):]
    return "File %s:%d" % (filename, lineno)


def _scope(code):
    """The lines IPython takes context from: the function's own, or the whole cell."""
    if code.co_name == "<module>":
        return 1, 1 << 30
    lines = [n for _, _, n in code.co_lines() if n]
    return code.co_firstlineno, max(lines + [code.co_firstlineno])


def _frame(frame, lineno):
    """One frame of IPython's Context traceback (colors off): its place, `in f(a, b)` for a
    function, then up to two lines of its own code before and after (blank lines left out,
    the indentation they share removed), the current one arrowed."""
    code = frame.f_code
    head = _label(code.co_filename, lineno)
    if code.co_name != "<module>":
        import inspect
        args, varargs, varkw, local = inspect.getargvalues(frame)
        sig = inspect.formatargvalues(args, varargs, varkw, local, formatvalue=lambda v: "")
        head += ", in %s%s" % (getattr(code, "co_qualname", code.co_name), sig)
    first, last = _scope(code)
    out = [head + "\n"]
    numbered = [n for n in range(max(first, lineno - 8), min(last, lineno + 8) + 1)
                if linecache.getline(code.co_filename, n).strip()]
    if lineno in numbered:
        i = numbered.index(lineno)
        numbered = numbered[max(0, i - 2):i + 3]
    import textwrap            # the lines shown lose the indentation they all share
    shown = textwrap.dedent("".join(linecache.getline(code.co_filename, n) for n in numbered)).splitlines()
    for n, src in zip(numbered, shown):
        num = ("-" * (5 - len(str(n))) + "> " + str(n)) if n == lineno else str(n).rjust(7)
        out.append(num + " " + src + "\n")
    return "".join(out)


def _error(etype, evalue, tb):
    """The error IPython reports, its traceback the kernel's list of strings joined with ""
    as e2b's server joins them: so `---...---` and the header run into the first frame."""
    name = etype.__name__
    try:
        value = str(evalue)
    except Exception:
        value = "<exception str() failed>"
    if isinstance(evalue, SyntaxError):
        s = "  %s\n" % _label(evalue.filename or "<string>", evalue.lineno or 1)
        text = evalue.text
        if evalue.filename and evalue.lineno:
            text = linecache.getline(evalue.filename, evalue.lineno) or text
        if text is not None:
            i = len(text) - len(text.lstrip())
            s += "    %s\n" % text.strip()
            if evalue.offset is not None:
                s += "    " + "".join(c if c.isspace() else " " for c in text[i:evalue.offset - 1]) + "^\n"
        parts = [s + ("%s: %s\n" % (name, evalue.msg) if evalue.msg else "%s\n" % name)]
    elif isinstance(evalue, SystemExit):
        # IPython shows a SystemExit without its traceback, and warns on stderr
        import warnings
        warnings.warn_explicit("To exit: use 'exit', 'quit', or Ctrl-D.", UserWarning,
                               "/usr/local/lib/python3.13/site-packages/IPython/core/interactiveshell.py",
                               3707, registry=_WARNED)
        parts = ["An exception has occurred, use %tb to see the full traceback.\n",
                 name + (": " + value if value else "") + "\n"]
    else:
        mine = globals()      # the worker's own frames are not the user's business
        frames = [(f, n) for f, n in traceback.walk_tb(tb) if f.f_globals is not mine]
        parts = ["-" * 75, name + "Traceback (most recent call last)".rjust(75 - len(name))]
        parts += [_frame(f, n) for f, n in frames]
        parts.append(name + (": " + value if value else ""))
    return {"t": "error", "name": name, "value": value, "traceback": "".join(parts)}


_WARNED = {}


def _exec(cmd):
    _st["seq"] = cmd["seq"]
    for k, v in (cmd.get("env") or {}).items():
        _GLOBAL_ENV[str(k)] = os.environ[str(k)] = str(v)
    tmp = cmd.get("tmp_env") or {}
    for k, v in tmp.items():
        os.environ[str(k)] = str(v)
    err = None
    try:
        _st["executing"] = True
        try:
            _run_cell(cmd["code"], cmd["count"])
        finally:
            _st["executing"] = False
            _st["pending"] = False
    except BaseException:
        _st["executing"] = False
        err = sys.exc_info()
    try:
        if err is not None:
            try:
                _check_png()
            except Exception:
                pass
        _flush_streams()
        if err is not None:
            _send(_error(*err))
    except BaseException:
        pass
    try:
        _after_cell()       # IPython's post_execute runs after an error too
    except BaseException:
        if err is None:
            err = sys.exc_info()
            try:
                _flush_streams()
                _send(_error(*err))
            except BaseException:
                pass
    err = None
    for k in tmp:            # per-execution variables go back to their global value, or away
        if str(k) in _GLOBAL_ENV:
            os.environ[str(k)] = _GLOBAL_ENV[str(k)]
        else:
            os.environ.pop(str(k), None)
    ending, _st["exit"] = _st["exit"], False
    _send({"t": "done", "exit": ending})


def _main():
    _send({"t": "ready", "pid": os.getpid()})
    f = os.fdopen(_cmds, "rb")
    while True:
        try:
            line = f.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            _orphaned(1.0)
        try:
            cmd = json.loads(line)
        except ValueError:
            continue
        if cmd.get("op") == "exec":
            try:
                _exec(cmd)
            except BaseException:
                try:
                    _send({"t": "done"})
                except BaseException:
                    pass


_main()
'''


class Worker:
    """One python3 process running cells; JSON lines in on stdin, out on stdout."""

    def __init__(self, root, cwd, quiet):
        env = dict(os.environ, PYTHONUNBUFFERED="1", MPLBACKEND="Agg", **sbfiles.worker_env(root, MAPPED))
        env.pop("PYTHONSTARTUP", None)
        self.proc = subprocess.Popen([PYTHON, "-u", "-c", WORKER_SRC, root], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if quiet else None,
                                     cwd=cwd, env=env, close_fds=True, start_new_session=True)
        self.q = queue.Queue()
        self.eof = False
        self.held = None             # a message read ahead by coalesce()
        self.wlock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        first = self.get(20.0)
        if not isinstance(first, dict) or first.get("t") != "ready":
            self.kill()
            raise RuntimeError("the sandbox's python worker did not start")

    def _read(self):
        out = self.proc.stdout
        try:
            for line in out:
                try:
                    self.q.put(json.loads(line))
                except ValueError:
                    pass
        except (OSError, ValueError):
            pass
        finally:
            self.q.put(None)
            try:
                out.close()
            except OSError:
                pass

    def get(self, timeout):
        """A message, EMPTY on timeout, or None once the worker has gone (sticky)."""
        if self.held is not None:
            m, self.held = self.held, None
            return m
        if self.eof:
            return None
        try:
            m = self.q.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return EMPTY
        if m is None:
            self.eof = True
        return m

    def coalesce(self, m, limit=65536):
        """Merge into stream message `m` the same-stream text that is already queued (a flood
        becomes big chunks, as ipykernel's own buffering does; nothing waits for more)."""
        while len(m["text"]) < limit:
            try:
                n = self.q.get_nowait()
            except queue.Empty:
                break
            if n is None:
                self.eof = True
                self.held = None
                break
            if n.get("t") != m["t"] or n.get("seq") != m.get("seq"):
                self.held = n
                break
            m["text"] += n["text"]
        return m

    def send(self, obj):
        with self.wlock:
            try:
                self.proc.stdin.write(json.dumps(obj).encode("ascii") + b"\n")
                self.proc.stdin.flush()
                return True
            except (OSError, ValueError):
                return False

    def signal_group(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def interrupt(self):
        self.signal_group(signal.SIGINT)

    def kill(self):
        self.signal_group(signal.SIGKILL)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass


class Context:
    """A code-interpreter context (a Jupyter kernel there; a Worker here)."""

    def __init__(self, sandbox, cwd):
        self.id = str(uuid.uuid4())
        self.sandbox = sandbox
        self.cwd = cwd
        self.language = "python"
        self.lock = threading.Lock()     # serialises executions, like the real server
        self.mu = threading.Lock()       # guards the fields below
        self.worker = None
        self.count = 0
        self.env_loaded = False
        self.deleted = False
        self.abort_until = 0.0          # the real server's "aborted" window, see Execution.aborted

    def ensure_worker(self):
        with self.mu:
            if self.worker is not None and (self.worker.eof or self.worker.proc.poll() is not None):
                self.worker.kill()
                self.worker = None
            if self.worker is None and not (self.deleted or self.sandbox.killed):
                self.worker = Worker(self.sandbox.dir, self.sandbox.cwd_of(self.cwd), self.sandbox.quiet)
                self.count, self.env_loaded = 0, False
            return self.worker

    def drop_worker(self, w=None):
        """Kill the worker (the given one only if still current); a fresh one starts on next use."""
        with self.mu:
            if w is not None and self.worker is not w:
                return
            w, self.worker = self.worker, None
            self.count, self.env_loaded = 0, False
        if w is not None:
            w.kill()


class Sandbox:
    def __init__(self, sid, body, template_id, alias, runs_code, timeout, quiet):
        self.id = sid
        self.body = body
        self.template_id, self.alias, self.runs_code = template_id, alias, runs_code
        self.secure = body.get("secure") is True
        self.token = secrets.token_hex(32) if self.secure else None
        net = body.get("network") if isinstance(body.get("network"), dict) else {}
        self.traffic_token = secrets.token_hex(16) if net.get("allowPublicTraffic") is False else None
        self.metadata = dict(body.get("metadata") or {})
        self.env_vars = dict(body.get("envVars") or {})
        self.started_wall, self.started = time.time(), time.monotonic()
        self.end = self.started + timeout
        self.quiet = quiet
        self.killed = False
        self.dir = tempfile.mkdtemp(prefix="fake-e2b-%s-" % sid)
        os.chmod(self.dir, 0o755)
        sbfiles.makedirs_in(self.dir, HOME_DIR)      # the template's user and home
        self.owners = {}            # sandbox path -> user that made it through envd, when not "user"
        self.contexts = collections.OrderedDict()
        self.default_ctx = None
        if runs_code:
            ctx = Context(self, "/home/user")
            try:
                ctx.ensure_worker()     # the template's readiness check: 49999 is up at 201
            except BaseException:
                shutil.rmtree(self.dir, ignore_errors=True)
                raise
            self.contexts[ctx.id] = ctx
            self.default_ctx = ctx

    def cwd_of(self, cwd):
        """The host directory a context's worker starts in: its cwd mapped into the sandbox when it
        is under a mapped prefix (made if missing), else the home directory."""
        v = sbfiles.go_clean(cwd) if isinstance(cwd, str) and cwd.startswith("/") else HOME_DIR
        if not any(v == p or v.startswith(p + "/") for p in MAPPED):
            v = HOME_DIR
        try:
            sbfiles.makedirs_in(self.dir, v)
        except OSError:
            v = HOME_DIR
        return sbfiles.real_path(self.dir, v)

    def end_wall(self):
        return time.time() + (self.end - time.monotonic())

    def kill(self):
        self.killed = True
        for ctx in list(self.contexts.values()):
            ctx.drop_worker()
        shutil.rmtree(self.dir, ignore_errors=True)

    def global_env(self, token_ok):
        if self.secure and not token_ok:
            # reference §5.5: envd answers 401 and the server takes that JSON as the variables
            return {"code": "401", "message": ENVD_401}
        return dict(self.env_vars)

    def info(self, domain):
        d = {"templateID": self.template_id, "sandboxID": self.id, "alias": self.alias,
             "clientID": CLIENT_ID, "envdVersion": ENVD_VERSION}
        if self.token:
            d["envdAccessToken"] = self.token
        if self.traffic_token:
            d["trafficAccessToken"] = self.traffic_token
        if domain:
            d["domain"] = domain
        return d

    def listed(self):
        return {"templateID": self.template_id, "alias": self.alias, "sandboxID": self.id,
                "clientID": CLIENT_ID, "startedAt": rfc3339(self.started_wall), "endAt": rfc3339(self.end_wall()),
                "cpuCount": 2, "memoryMB": 1024, "diskSizeMB": 5120, "metadata": self.metadata,
                "state": "running", "envdVersion": ENVD_VERSION, "volumeMounts": []}

    def detail(self, domain):
        d = self.info(domain)
        b = self.body
        d.update({"startedAt": rfc3339(self.started_wall), "endAt": rfc3339(self.end_wall()), "state": "running",
                  "cpuCount": 2, "memoryMB": 1024, "diskSizeMB": 5120, "metadata": self.metadata,
                  "allowInternetAccess": b.get("allow_internet_access") is not False,
                  "lifecycle": {"autoResume": bool((b.get("autoResume") or {}).get("enabled"))
                                if isinstance(b.get("autoResume"), dict) else False,
                                "onTimeout": "pause" if b.get("autoPause") is True else "kill"},
                  "volumeMounts": []})
        if isinstance(b.get("network"), dict):
            d["network"] = b["network"]
        return d


# ---------------------------------------------------------------- shared state

class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.sandboxes = collections.OrderedDict()
        self.pending = 0
        self.faults = {}
        self.requests = collections.deque(maxlen=10000)
        self.templates = dict(TEMPLATES)
        for alias in args.template or []:
            self.templates.setdefault(alias, ("t" + uuid.uuid5(uuid.NAMESPACE_DNS, alias).hex[:19], True))
        self.clear_counters()

    def clear_counters(self):
        with self.lock:
            self.c = {"creates": 0, "deletes": 0, "keepalives": 0, "executes": 0, "connects": 0,
                      "executes_without_token": 0, "uploads": 0, "downloads": 0, "listdirs": 0}
            self.attempts = {"create": 0, "delete": 0, "timeout": 0, "refresh": 0, "connect": 0, "execute": 0,
                             "upload": 0, "download": 0}
            self.create_bodies, self.timeouts, self.expired = [], [], []
            self.history = {}
            self.requests.clear()

    def bump(self, name, attempt=None):
        with self.lock:
            if name:
                self.c[name] += 1
            if attempt:
                self.attempts[attempt] += 1

    def live(self, sid):
        with self.lock:
            sb = self.sandboxes.get(sid)
            return sb if sb is not None and not sb.killed else None

    def remove(self, sid):
        with self.lock:
            return self.sandboxes.pop(sid, None)

    def kill_all(self):
        with self.lock:
            sbs = list(self.sandboxes.values())
            self.sandboxes.clear()
        for sb in sbs:
            sb.kill()

    def take_fault(self, name):
        with self.lock:
            f = self.faults.get(name)
            if f is None:
                return None
            if f["count"] > 0:
                f["count"] -= 1
                if f["count"] == 0:
                    del self.faults[name]
            return dict(f)

    def stats(self):
        with self.lock:
            return dict(self.c, live=[s for s, sb in self.sandboxes.items() if not sb.killed],
                        create_bodies=list(self.create_bodies), timeouts=list(self.timeouts),
                        expired=list(self.expired), attempts=dict(self.attempts),
                        history={k: dict(v) for k, v in self.history.items()},
                        faults={k: dict(v) for k, v in self.faults.items()})

    def reap(self):
        while True:
            time.sleep(0.2)
            now = time.monotonic()
            with self.lock:
                dead = [sb for sb in self.sandboxes.values() if sb.end <= now]
                for sb in dead:
                    del self.sandboxes[sb.id]
                    self.expired.append(sb.id)
            for sb in dead:
                sb.kill()


# ---------------------------------------------------------------- one execution (/execute)

class Execution:
    def __init__(self, h, sb, ctx, code, env_vars, token_ok, mode, budget):
        self.h, self.sb, self.ctx = h, sb, ctx
        self.code, self.env_vars, self.token_ok = code, env_vars, token_ok
        self.mode, self.budget = mode, budget       # None | "drop" | "hang"
        self.ka = h.server.state.args.keepalive
        self.sent, self.muted, self.done = 0, False, False
        self.held = None        # number_of_executions, written with the next line (see execute)
        self.last = self.last_check = time.monotonic()

    def line(self, text):
        if self.held is not None and text is not self.held:
            held, self.held = self.held, None
            self.line(held)
        if self.muted:
            return
        if self.mode and (text is END_LINE or self.sent >= self.budget):
            if self.mode == "drop":
                raise Cut()
            self.muted = True
            return
        data = text.encode() + b"\n"
        try:
            self.h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        except (OSError, ValueError):
            raise ClientGone()
        self.sent += 1
        self.last = time.monotonic()
        if self.mode and self.sent >= self.budget:
            if self.mode == "drop":
                raise Cut()
            self.muted = True

    def tick(self):
        """While waiting: notice a vanished client or a killed sandbox; send keepalives."""
        now = time.monotonic()
        if self.sb.killed or self.ctx.deleted:
            raise Cut()
        if now - self.last_check >= 0.1:
            self.last_check = now
            if self.h.client_gone():
                raise ClientGone()
        if now - self.last >= self.ka:
            self.line(KEEPALIVE_LINE)

    def run(self):
        h = self.h
        try:
            while not self.ctx.lock.acquire(timeout=0.1):
                self.tick()
            try:
                self.execute()
            finally:
                self.ctx.lock.release()
            if self.muted:
                while not h.client_gone():      # execute_hang: silence until the client leaves
                    time.sleep(0.1)
                raise ClientGone()
            h.wfile.write(b"0\r\n\r\n")
        except ClientGone:
            h.close_connection = True
        except Cut:
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        except DISCONNECTS:
            h.close_connection = True

    def execute(self):
        ctx, sb = self.ctx, self.sb
        if time.monotonic() < ctx.abort_until:
            ctx.abort_until = 0.0
            return self.aborted()
        try:
            w = ctx.ensure_worker()
        except (OSError, RuntimeError):
            w = None
        if w is None:
            if sb.killed or ctx.deleted:
                raise Cut()
            self.restarted()
            return
        seq = next(SEQ)
        ctx.count += 1
        env = None
        if not ctx.env_loaded:
            env, ctx.env_loaded = sb.global_env(self.token_ok), True
        if not w.send({"op": "exec", "seq": seq, "count": ctx.count, "code": self.code,
                       "env": env, "tmp_env": self.env_vars}):
            return self.died(w)
        # The real server writes this when the kernel's execute_input arrives, which a kernel
        # that dies at once never sends (os._exit(1) gets ContextRestarting alone): it goes
        # out with the next line, and not at all if the worker dies first.
        self.held = json.dumps({"type": "number_of_executions", "execution_count": ctx.count})
        error_sent = False
        try:
            while True:
                wait = min(0.1, max(0.0, self.last + self.ka - time.monotonic()))
                m = w.get(wait)
                if m is EMPTY:
                    self.tick()
                    continue
                if m is None:
                    return self.died(w)
                if time.monotonic() - self.last_check >= 0.2:
                    self.tick()
                if m.get("seq") != seq:
                    continue
                t = m.get("t")
                if t in ("stdout", "stderr"):
                    m = w.coalesce(m)
                    self.line(json.dumps({"type": t, "text": m["text"], "timestamp": m["ts"]}))
                elif t == "result":
                    self.line(json.dumps(result_line(m.get("data") or {}, bool(m.get("main")))))
                elif t == "error":
                    if not error_sent:      # only the first error of an execution is sent
                        error_sent = True
                        self.line(json.dumps({"type": "error", "name": m["name"], "value": m["value"],
                                              "traceback": m["traceback"]}))
                elif t == "done":
                    self.done = True
                    self.line(END_LINE)
                    if m.get("exit"):           # exit(): the kernel restarts after the run
                        ctx.drop_worker(w)
                    return
        except (ClientGone, Cut):
            if not self.done:
                self.abandon(w, seq)
            raise

    def died(self, w):
        """The worker vanished mid-run: a killed sandbox cuts the stream, anything else is a
        kernel restart (reference §5.3: ContextRestarting, then the end line)."""
        self.done = True
        self.held = None
        if self.sb.killed or self.ctx.deleted:
            raise Cut()
        self.ctx.drop_worker(w)
        self.restarted()

    def aborted(self):
        """The real server frees the context before the interrupt of a run whose client left
        reaches the kernel; a run sent in that window is aborted by the kernel (execute_reply
        status "aborted", no execute_input). The server only checks for "abort", so the client
        gets no number_of_executions, no end line: keepalives until it gives up."""
        while True:
            time.sleep(0.05)
            self.tick()

    def restarted(self):
        self.line(json.dumps({"type": "error", "name": "ContextRestarting", "value": "Context was restarted",
                              "traceback": ""}))
        self.line(END_LINE)

    def abandon(self, w, seq):
        """The client left mid-run: interrupt the cell (like Jupyter's interrupt), so the context
        stays usable; a worker that ignores SIGINT is killed and restarts fresh on next use."""
        w.interrupt()
        args = self.h.server.state.args
        self.ctx.abort_until = time.monotonic() + args.abort_window
        deadline = time.monotonic() + args.interrupt_grace
        while time.monotonic() < deadline:
            m = w.get(0.1)
            if m is None:
                self.ctx.drop_worker(w)
                return
            if m is not EMPTY and m.get("seq") == seq and m.get("t") == "done":
                return
        self.ctx.drop_worker(w)


def result_line(data, main):
    data = dict(data)
    out = {"type": "result"}
    for mime, key in RESULT_KEYS:
        if mime not in data:
            continue
        v = data.pop(mime)
        if v is None:
            continue
        if key == "text" and isinstance(v, str) and len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
            v = v[1:-1]        # one pair of surrounding quotes is stripped
        out[key] = v
    out["extra"] = data
    out["is_main_result"] = main
    return out


# ---------------------------------------------------------------- HTTP

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-e2b/1.0"
    sys_version = ""

    def version_string(self):
        return getattr(self, "server_name_hdr", None) or self.server_version

    def log_message(self, fmt, *args):
        if not self.server.quiet:
            sys.stderr.write("e2b: %s - %s\n" % (self.address_string(), fmt % args))

    def log_error(self, fmt, *args):
        sys.stderr.write("e2b: error: %s\n" % (fmt % args))

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle(self):
        try:
            super().handle()
        except (OSError, ValueError):   # a client that left (or a socket we shut down ourselves)
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = lambda self: self.dispatch()

    # -- output
    def send_raw(self, status, body, ctype, extra=None):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.status = status
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def no_content(self):
        self.send_response(204)
        self.end_headers()
        self.status = 204

    def api_json(self, status, obj, extra=None):
        self.send_raw(status, go_json(obj), "application/json; charset=utf-8", extra)

    def api_error(self, status, message, error_code=None, extra=None):
        obj = {"code": status, "message": message}
        if error_code:
            obj["error_code"] = error_code
        self.api_json(status, obj, extra)

    def fastapi_json(self, status, obj):
        self.send_raw(status, py_json(obj), "application/json")

    def fastapi_text(self, status, text):
        self.send_raw(status, text.encode(), "text/plain; charset=utf-8")

    def client_gone(self):
        try:
            r, _, _ = select.select([self.connection], [], [], 0)
            return bool(r) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    # -- routing
    def dispatch(self):
        self.status, self.server_name_hdr = None, None
        st = self.server.state
        url = urllib.parse.urlsplit(self.path)
        path, query = url.path, url.query
        self.query = query
        try:
            raw = self.read_body()
        except ValueError:
            self.close_connection = True
            return self.send_raw(400, b"bad request body\n", "text/plain")
        if path.startswith("/__"):
            return self.hooks(path, raw)
        sid, port = self.headers.get("E2b-Sandbox-Id"), self.headers.get("E2b-Sandbox-Port")
        if sid is None:
            m = re.match(r"(\d+)-([^.:]+)\.", self.headers.get("Host", ""))
            if m:
                port, sid = m.group(1), m.group(2)
        text = raw.decode("utf-8", "replace")
        try:
            body = json.loads(text) if raw else None
        except ValueError:
            body = text
        headers = {}
        for k, v in self.headers.items():
            k = k.lower()
            headers[k] = headers[k] + ", " + v if k in headers else v
        self.rec = {"plane": "api" if sid is None else "data", "method": self.command, "path": self.path,
                    "sandbox_id": sid, "port": port, "headers": headers, "body": body, "status": None}
        with st.lock:
            st.requests.append(self.rec)
        try:
            if sid is not None:
                self.data_plane(sid, port, path, raw)
            else:
                self.api(path, query, raw)
        except DISCONNECTS:
            raise
        except Exception:
            traceback.print_exc()
            if self.status is None:
                self.api_error(500, "fake e2b crashed: see its stderr")
        finally:
            with st.lock:
                self.rec["status"] = self.status

    # -- test hooks
    def hooks(self, path, raw):
        st = self.server.state
        route = (self.command, path)
        if route == ("GET", "/__stats"):
            return self.send_raw(200, py_json(st.stats()), "application/json")
        if route == ("GET", "/__requests"):
            with st.lock:
                reqs = [dict(r) for r in st.requests]
            return self.send_raw(200, py_json({"requests": reqs}), "application/json")
        if route == ("POST", "/__reset"):
            st.kill_all()
            with st.lock:
                st.faults.clear()
            st.clear_counters()
            return self.send_raw(200, b"{}", "application/json")
        if route == ("GET", "/__faults"):
            with st.lock:
                return self.send_raw(200, py_json({"faults": st.faults}), "application/json")
        if route == ("POST", "/__faults"):
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            if not isinstance(body, dict):
                return self.send_raw(400, py_json({"error": "body must be a JSON object"}), "application/json")
            unknown = sorted(set(body) - set(FAULT_KINDS) - set(FAULT_PARAMS))
            count = body.get("count", 1)
            if unknown or as_int(count) is None:
                return self.send_raw(400, py_json({"error": "unknown fault keys %s or bad count; known: %s + %s"
                                                   % (unknown, list(FAULT_KINDS), list(FAULT_PARAMS))}),
                                     "application/json")
            params = {k: body[k] for k in FAULT_PARAMS if k in body}
            params["count"] = as_int(count)
            with st.lock:
                if not any(k in body for k in FAULT_KINDS):
                    st.faults.clear()
                for k in FAULT_KINDS:
                    if k not in body:
                        continue
                    if body[k] in (None, False, 0) or params["count"] == 0:
                        st.faults.pop(k, None)
                    else:
                        st.faults[k] = dict(params, value=body[k])
                return self.send_raw(200, py_json({"faults": st.faults}), "application/json")
        return self.send_raw(404, py_json({"error": "no test hook %s %s" % route}), "application/json")

    # -- control plane
    def check_key(self):
        given = self.headers.get("X-API-Key")
        want = self.server.api_key
        if given and want is not None and hmac.compare_digest(given.encode(), want.encode()):
            return True
        if not given:
            detail = "authorization header is missing"
        elif not re.fullmatch(r"e2b_[0-9a-f]+", given):
            detail = "Invalid API key format"
        elif want is not None:
            detail = "Invalid API key"
        else:
            return True
        self.api_error(401, API_KEY_MSG + "\n" + detail)
        return False

    def api(self, path, query, raw):
        parts = [p for p in path.split("/") if p]
        c = self.command
        if parts == ["sandboxes"] and c == "POST":
            route = ("create",)
        elif parts == ["sandboxes"] and c == "GET":
            route = ("list", 1)
        elif parts == ["v2", "sandboxes"] and c == "GET":
            route = ("list", 2)
        elif len(parts) == 2 and parts[0] == "sandboxes" and c in ("GET", "DELETE"):
            route = ("get" if c == "GET" else "delete", urllib.parse.unquote(parts[1]))
        elif (len(parts) == 3 and parts[0] == "sandboxes" and c == "POST"
              and parts[2] in ("timeout", "refreshes", "connect")):
            route = (parts[2], urllib.parse.unquote(parts[1]))
        else:
            return self.api_error(404, "no route for %s %s" % (c, path))
        if not self.check_key():
            return
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError as e:
                if route[0] in ("create", "timeout", "refreshes", "connect"):
                    return self.api_error(400, "validation error: request body has an error: "
                                               "failed to decode request body: %s" % e)
        name = route[0]
        if name == "create":
            return self.create(body, raw)
        if name == "list":
            return self.list_sandboxes(route[1], query)
        return getattr(self, "sb_" + name)(route[1], body)

    def create(self, body, raw):
        st, args = self.server.state, self.server.state.args
        with st.lock:
            st.attempts["create"] += 1
            st.create_bodies.append(body if body is not None else raw.decode("utf-8", "replace"))
        delay = st.take_fault("create_delay")
        if delay:
            time.sleep(float(delay["value"]))
        fault = st.take_fault("create_status")
        if fault:
            return self.create_fault(fault)
        bad = "validation error: request body has an error: doesn't match schema: "
        if not isinstance(body, dict):
            return self.api_error(400, bad + "value must be an object")
        ref = body.get("templateID")
        if ref is None:
            return self.api_error(400, bad + 'property "templateID" is missing')
        if not isinstance(ref, str):
            return self.api_error(400, bad + 'Error at "/templateID": value must be a string')
        timeout = body.get("timeout", 15)
        if as_int(timeout) is None:
            return self.api_error(400, bad + 'Error at "/timeout": value must be an integer')
        timeout = as_int(timeout)
        for k in ("secure", "autoPause", "autoPauseMemory", "allow_internet_access"):
            if k in body and body[k] is not None and not isinstance(body[k], bool):
                return self.api_error(400, bad + 'Error at "/%s": value must be a boolean' % k)
        for k in ("metadata", "envVars"):
            if not str_map(body.get(k)):
                return self.api_error(400, bad + 'Error at "/%s": value must be an object of strings' % k)
        for k in ("network", "autoResume"):
            if body.get(k) is not None and not isinstance(body[k], dict):
                return self.api_error(400, bad + 'Error at "/%s": value must be an object' % k)
        resolved = self.resolve_template(ref)
        if resolved is None:
            return
        if timeout <= 0:
            return self.api_error(400, "Timeout must be greater than 0")
        if timeout > args.max_timeout:
            return self.api_error(400, "Timeout cannot be greater than %g hours" % (args.max_timeout / 3600))
        net = body.get("network") or {}
        if net.get("allowPublicTraffic") is False and body.get("secure") is not True:
            return self.api_error(400, "You cannot create a sandbox without public access unless you "
                                       "enable secure envd access via 'secure' flag.")
        resume = (body.get("autoResume") or {}).get("enabled") is True
        if resume and body.get("autoPause") is not True:
            return self.api_error(400, "autoResume requires autoPause to be enabled")
        if resume and body.get("autoPauseMemory") is False:
            return self.api_error(400, "autoResume cannot be combined with autoPauseMemory: false")
        with st.lock:
            live = sum(1 for sb in st.sandboxes.values() if not sb.killed)
            if args.max_sandboxes and live + st.pending >= args.max_sandboxes:
                return self.api_error(429, self.limit_msg())
            st.pending += 1
        try:
            sid = new_sandbox_id()
            try:
                sb = Sandbox(sid, body, resolved[0], resolved[1], resolved[2], timeout, self.server.quiet)
            except (OSError, RuntimeError) as e:
                return self.api_error(500, "Failed to create sandbox: %s" % e, "sandbox_create_failed")
            with st.lock:
                st.sandboxes[sid] = sb
                st.c["creates"] += 1
                st.history[sid] = {"metadata": sb.metadata, "timeout": timeout}
        finally:
            with st.lock:
                st.pending -= 1
        self.api_json(201, sb.info(self.server.domain))

    def limit_msg(self):
        return ("you have reached the maximum number of concurrent E2B sandboxes (%d). If you need more, "
                "please contact us at 'https://e2b.dev/docs/getting-help'" % (self.server.state.args.max_sandboxes or 20))

    def create_fault(self, fault):
        status = as_int(fault["value"]) or 500
        extra = {}
        if fault.get("retry_after") is not None:
            extra["Retry-After"] = str(fault["retry_after"])
        defaults = {401: (API_KEY_MSG + "\nInvalid API key", None),
                    429: (self.limit_msg(), None),
                    500: ("Failed to create sandbox: injected fault", "sandbox_create_failed"),
                    503: ("Failed to create sandbox: no capacity available, please try again later",
                          "sandbox_capacity_unavailable"),
                    504: ("Failed to create sandbox: placement timed out", "sandbox_placement_timeout")}
        message, code = defaults.get(status, ("injected fault", None))
        self.api_error(status, fault.get("message", message), fault.get("error_code", code), extra)

    def resolve_template(self, ref):
        """(templateID, alias, runs_code), or None after answering the error."""
        name, ns, tag = ref, None, None
        if "/" in name:
            ns, name = name.split("/", 1)
        if ":" in name:
            name, tag = name.split(":", 1)
        if not name or ns == "" or tag == "" or not re.fullmatch(r"[A-Za-z0-9._-]+", name):
            self.api_error(400, "invalid template reference '%s'" % ref)
            return None
        found = None
        for alias, (tid, runs) in self.server.state.templates.items():
            if name in (alias, tid):
                found = (tid, alias, runs)
        if found is None or ns not in (None, "e2b"):
            self.api_error(404, "template '%s' not found" % ref)
            return None
        if tag not in (None, "default"):
            self.api_error(404, "tag '%s' does not exist for template '%s'" % (tag, name))
            return None
        return found

    def list_sandboxes(self, version, query):
        st = self.server.state
        q = urllib.parse.parse_qs(query)
        want_meta = urllib.parse.parse_qsl(q.get("metadata", [""])[0])
        states = ",".join(q.get("state", [])).split(",") if "state" in q else ["running"]
        limit = q.get("limit", [None])[0]
        if limit is not None and (not limit.isdigit() or not 1 <= int(limit) <= 100):
            return self.api_error(400, 'validation error: parameter "limit" in query has an error: '
                                       'number must be between 1 and 100')
        with st.lock:
            sbs = [sb for sb in st.sandboxes.values() if not sb.killed]
        out = [sb.listed() for sb in sbs
               if "running" in states and all(sb.metadata.get(k) == v for k, v in want_meta)]
        if version == 2:
            out = out[:int(limit)] if limit else out
            return self.api_json(200, out, {"X-Total-Running": str(len(sbs))})
        return self.api_json(200, out)

    def sb_get(self, sid, body):
        sb = self.server.state.live(sid)
        if sb is None:
            return self.api_error(404, not_found_msg(sid))
        self.api_json(200, sb.detail(self.server.domain))

    def sb_delete(self, sid, body):
        st = self.server.state
        st.bump(None, "delete")
        sid = sid.split("-", 1)[0]        # legacy "<sandboxID>-<clientID>"
        delay = st.take_fault("delete_delay")
        if delay:
            time.sleep(float(delay["value"]))
        fault = st.take_fault("delete_status")
        if fault:
            status = as_int(fault["value"]) or 500
            msg = {404: not_found_msg(sid), 401: API_KEY_MSG + "\nInvalid API key"}.get(
                status, "Error killing sandbox: injected fault")
            return self.api_error(status, fault.get("message", msg), fault.get("error_code"))
        if not ID_RE.fullmatch(sid):
            return self.api_error(400, "Invalid sandbox ID")
        with st.lock:
            sb = st.sandboxes.get(sid)
            if sb is None or sb.killed:
                sb = None
            else:
                del st.sandboxes[sid]
                st.c["deletes"] += 1
        if sb is None:
            return self.api_error(404, not_found_msg(sid))
        sb.kill()
        self.no_content()

    def keepalive_fault(self, sid):
        fault = self.server.state.take_fault("timeout_status")
        if not fault:
            return False
        status = as_int(fault["value"]) or 500
        msg = {404: not_found_msg(sid), 409: "Sandbox \"%s\" is not running" % sid}.get(
            status, "Error when setting sandbox timeout: injected fault")
        self.api_error(status, fault.get("message", msg), fault.get("error_code"))
        return True

    def body_int(self, body, key, required):
        """The integer `key` of the body; answers 400 and returns False when invalid."""
        if not isinstance(body, dict):
            if required or body is not None:
                self.api_error(400, "validation error: request body has an error: value must be an object")
                return False
            return None
        if key not in body or body[key] is None:
            if required:
                self.api_error(400, 'validation error: request body has an error: doesn\'t match schema: '
                                    'property "%s" is missing' % key)
                return False
            return None
        if as_int(body[key]) is None:
            self.api_error(400, 'validation error: request body has an error: doesn\'t match schema: '
                                'Error at "/%s": value must be an integer' % key)
            return False
        return as_int(body[key])

    def sb_timeout(self, sid, body):
        st = self.server.state
        st.bump(None, "timeout")
        t = self.body_int(body, "timeout", True)
        if t is False:
            return
        with st.lock:
            st.timeouts.append({"id": sid, "timeout": t})
        if self.keepalive_fault(sid):
            return
        sb = st.live(sid)
        if sb is None:
            return self.api_error(404, not_found_msg(sid))
        now = time.monotonic()
        sb.end = min(now + max(0, t), sb.started + st.args.max_timeout)
        st.bump("keepalives")
        self.no_content()

    def sb_refreshes(self, sid, body):
        st = self.server.state
        st.bump(None, "refresh")
        d = self.body_int(body, "duration", False)
        if d is False:
            return
        if d is not None and not 0 <= d <= 3600:
            return self.api_error(400, 'validation error: request body has an error: doesn\'t match schema: '
                                       'Error at "/duration": number must be between 0 and 3600')
        if self.keepalive_fault(sid):
            return
        sb = st.live(sid)
        if sb is None:
            return self.api_error(404, not_found_msg(sid))
        now = time.monotonic()
        sb.end = max(sb.end, min(now + max(15, d or 0), sb.started + st.args.max_timeout))
        st.bump("keepalives")
        self.no_content()

    def sb_connect(self, sid, body):
        st = self.server.state
        st.bump(None, "connect")
        t = self.body_int(body, "timeout", True)
        if t is False:
            return
        sb = st.live(sid)
        if sb is None:
            return self.api_error(404, not_found_msg(sid))
        sb.end = max(sb.end, min(time.monotonic() + max(0, t), sb.started + st.args.max_timeout))
        st.bump("connects")
        self.api_json(200, sb.info(self.server.domain))

    # -- data plane (the edge proxy, then envd or the code-interpreter server)
    def proxy_error(self, status, obj):
        self.api_json(status, obj)

    def data_plane(self, sid, port, path, raw):
        if not ID_RE.fullmatch(sid):
            return self.proxy_error(400, {"sandboxId": sid, "message": "Invalid sandbox ID", "code": 400})
        try:
            port = int(port)
        except (TypeError, ValueError):
            return self.proxy_error(400, {"sandboxId": sid, "message": "Invalid sandbox port", "code": 400})
        sb = self.server.state.live(sid)
        if sb is None:
            return self.proxy_error(502, {"sandboxId": sid, "message": "The sandbox was not found", "code": 502})
        if port != ENVD_PORT and sb.traffic_token:
            given = self.headers.get("E2B-Traffic-Access-Token")
            if given is None or not hmac.compare_digest(given.encode(), sb.traffic_token.encode()):
                what = "missing" if given is None else "invalid"
                return self.proxy_error(403, {"sandboxId": sid, "message": "Sandbox is secured with traffic access "
                                              "token. Token header 'e2b-traffic-access-token' is %s" % what,
                                              "code": 403})
        if port == ENVD_PORT:
            return self.envd(sb, path, raw)
        if port == CI_PORT and sb.runs_code:
            self.server_name_hdr = "uvicorn"
            return self.code_interpreter(sb, path, raw)
        self.proxy_error(502, {"sandboxId": sid, "message": "The sandbox is running but port is not open",
                               "port": port, "code": 502})

    def token_ok(self, sb):
        if not sb.secure:
            return True
        given = self.headers.get("X-Access-Token")
        return given is not None and hmac.compare_digest(given.encode(), sb.token.encode())

    def envd(self, sb, path, raw):
        if path == "/health" and self.command == "GET":
            return self.no_content()
        files = path == "/files" and self.command in ("GET", "POST")
        if not files and not self.token_ok(sb):
            return self.envd_error(401, ENVD_401)
        if files:
            return self.envd_files(sb, raw)
        if path.startswith("/filesystem.Filesystem/"):
            return self.connect_fs(sb, path[len("/filesystem.Filesystem/"):], raw)
        if path == "/envs" and self.command == "GET":
            return self.api_json(200, sb.env_vars)
        if path == "/metrics" and self.command == "GET":
            return self.api_json(200, {"ts": int(time.time()), "cpu_count": 2, "cpu_used_pct": 0.0,
                                       "mem_total": 1073741824, "mem_used": 104857600,
                                       "disk_total": 5368709120, "disk_used": 1073741824})
        self.api_json(404, {"code": 404, "message": "fake envd: %s %s is not implemented" % (self.command, path)})

    # -- envd's files API (reference §6; e2b-dev/infra packages/envd/internal/api/{download,upload,
    #    auth,encoding,error}.go and internal/services/filesystem/{dir,stat,utils}.go)
    def envd_error(self, status, message, extra=None):
        """envd's jsonError: json.Encoder's output (so a newline after it), nosniff."""
        h = {"X-Content-Type-Options": "nosniff"}
        h.update(extra or {})
        self.send_raw(status, go_json({"code": status, "message": message}) + b"\n",
                      "application/json; charset=utf-8", h)

    def envd_params(self):
        q = urllib.parse.parse_qs(self.query, keep_blank_values=True)
        return {k: v[0] for k, v in q.items()}

    def envd_signing(self, sb, params, path, op):
        """validateSigning: None when allowed, else the message of its 401."""
        if not sb.secure:
            return None
        given = self.headers.get("X-Access-Token")
        if given:
            return None if hmac.compare_digest(given.encode(), sb.token.encode()) else \
                "access token present in header but does not match"
        sig = params.get("signature")
        if sig is None:
            return "missing signature query parameter"
        exp = params.get("signature_expiration")
        try:
            exp = int(exp) if exp is not None else None
        except ValueError:
            return "invalid signature"
        want = sbfiles.envd_signature(path, op, params.get("username", ""), sb.token, exp)
        if not hmac.compare_digest(want.encode(), sig.encode()):
            return "invalid signature"
        if exp is not None and exp < time.time():
            return "signature is already expired"
        return None

    @staticmethod
    def envd_resolve(path, user):
        """permissions.ExpandAndResolve: (absolute sandbox path, as envd keeps it, or None, error)."""
        home = USERS[user][1]
        if path == "":
            path = HOME_DIR        # the default workdir
        if path.startswith("~"):
            if len(path) > 1 and path[1] not in "/\\":
                return None, "failed to expand path '%s' for user '%s': cannot expand user-specific home dir" % (
                    path, user)
            path = sbfiles.go_clean(home + "/" + path[1:])
        if path.startswith("/"):
            return path, None      # absolute: as given (Go returns it uncleaned)
        return sbfiles.go_clean(home + "/" + path), None

    def envd_real(self, sb, vpath):
        return sbfiles.real_path(sb.dir, sbfiles.go_clean(vpath))

    def envd_user(self, params):
        user = params.get("username", DEFAULT_USER)
        return user if user in USERS else None

    def envd_files(self, sb, raw):
        params = self.envd_params()
        if self.command == "GET":
            return self.envd_download(sb, params)
        return self.envd_upload(sb, params, raw)

    def envd_download(self, sb, params):
        st = self.server.state
        st.bump(None, "download")
        path = params.get("path", "")
        err = self.envd_signing(sb, params, path, "read")
        if err:
            return self.envd_error(401, err)
        user = self.envd_user(params)
        if user is None:
            u = params["username"]
            return self.envd_error(401, "error looking up user '%s': user: unknown user %s" % (u, u))
        v, err = self.envd_resolve(path, user)
        if err:
            return self.envd_error(400, "error expanding and resolving path '%s': %s" % (path, err))
        real = self.envd_real(sb, v)
        try:
            info = os.stat(real)
        except FileNotFoundError:
            return self.envd_error(404, "path '%s' does not exist" % v)
        except OSError as e:
            return self.envd_error(500, "error checking if path exists '%s': stat %s: %s" % (v, v, go_errno(e)))
        if stat_mod.S_ISDIR(info.st_mode):
            return self.envd_error(400, "path '%s' is a directory" % v)
        enc, identity_rejected = sbfiles.parse_accept_encoding(self.headers.get("Accept-Encoding", ""))
        if enc is None:
            return self.envd_error(406, "error parsing Accept-Encoding: no acceptable encoding found, "
                                        "supported: [gzip]")
        extra = {"Vary": "Accept-Encoding"}
        if any(self.headers.get(k) for k in ("Range", "If-Modified-Since", "If-None-Match", "If-Range")):
            if identity_rejected:
                return self.envd_error(406, "identity encoding not acceptable for Range or conditional request",
                                       extra)
            enc = "identity"
        try:
            with open(real, "rb") as f:
                data = f.read()
        except OSError as e:
            return self.envd_error(500, "error opening file '%s': open %s: %s" % (v, v, go_errno(e)))
        fault = st.take_fault("download_status")
        if fault:
            status = as_int(fault["value"]) or 500
            return self.envd_error(status, fault.get("message", "injected fault"))
        drop = st.take_fault("download_drop")
        with st.lock:
            st.c["downloads"] += 1
        extra["Content-Disposition"] = sbfiles.go_format_media_type("inline", "filename", posixpath.basename(
            sbfiles.go_clean(v)))
        if enc == "gzip":
            extra["Content-Encoding"] = "gzip"
            body = gzip.compress(data, mtime=0)
            ctype = sbfiles.go_type_by_extension(path) or "application/octet-stream"
            return self.envd_body(200, body, ctype, extra, drop, chunked=len(body) > DOWNLOAD_CHUNK)
        # http.ServeContent(w, r, path, modtime, file)
        ctype = sbfiles.go_type_by_extension(path) or sbfiles.go_detect_content_type(data[:512])
        if info.st_mtime_ns > 0:
            extra["Last-Modified"] = sbfiles.http_date(info.st_mtime)
        ims = sbfiles.parse_http_date(self.headers.get("If-Modified-Since", ""))
        if ims is not None and not self.headers.get("If-None-Match") and int(info.st_mtime) <= ims:
            self.send_response(304)
            for k in ("Vary", "Content-Disposition", "Last-Modified"):
                self.send_header(k, extra[k]) if k in extra else None
            self.end_headers()
            self.status = 304
            return
        extra["Accept-Ranges"] = "bytes"
        rng = sbfiles.go_serve_range(self.headers.get("Range", ""), len(data))
        if rng is None:
            extra = {"Content-Range": "bytes */%d" % len(data), "X-Content-Type-Options": "nosniff",
                     "Vary": "Accept-Encoding"}
            return self.send_raw(416, b"invalid range: failed to overlap\n", "text/plain; charset=utf-8", extra)
        if rng != "all":
            a, n = rng
            extra["Content-Range"] = "bytes %d-%d/%d" % (a, a + n - 1, len(data))
            return self.envd_body(206, data[a:a + n], ctype, extra, drop)
        return self.envd_body(200, data, ctype, extra, drop)

    def envd_body(self, status, body, ctype, extra, drop, chunked=False):
        """Send a download; with the download_drop fault, half of it and then a cut connection."""
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for k, v in extra.items():
            self.send_header(k, v)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.status = status
        if self.command == "HEAD":
            return
        send = body[:len(body) // 2] if drop else body
        if chunked:
            for i in range(0, len(send), 65536):
                piece = send[i:i + 65536]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            if not drop:
                self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(send)
        if drop:
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def envd_upload(self, sb, params, raw):
        st = self.server.state
        st.bump(None, "upload")
        path = params.get("path")
        err = self.envd_signing(sb, params, path or "", "write")
        if err:
            return self.envd_error(401, err)
        body, gz_err = raw, None
        ce = self.headers.get("Content-Encoding", "")
        if ce:
            e = ce.split(";")[0].strip().lower()
            if e not in ("identity", "gzip"):
                return self.envd_error(400, "error decompressing request body: unsupported Content-Encoding: %s, "
                                            "supported: [gzip]" % ce)
            if e == "gzip":
                if raw[:2] != b"\x1f\x8b":
                    return self.envd_error(400, "error decompressing request body: failed to create gzip reader: "
                                                "gzip: invalid header")
                try:
                    body = gzip.decompress(raw)
                except (OSError, EOFError, zlib.error) as ex:
                    body, gz_err = b"", "error writing file: %s" % ("unexpected EOF" if isinstance(ex, EOFError)
                                                                     else "gzip: invalid checksum")
        user = self.envd_user(params)
        if user is None:
            u = params["username"]
            return self.envd_error(401, "error looking up user '%s': user: unknown user %s" % (u, u))
        ctype = self.headers.get("Content-Type", "")
        mtype = ctype.split(";")[0].strip().lower()
        if mtype != "application/octet-stream" and not mtype.startswith("multipart/"):
            return self.envd_error(400, "unsupported content type: %s, expected multipart/form-data or "
                                        "application/octet-stream" % ctype)
        fault = st.take_fault("files_status")
        if fault:
            status = as_int(fault["value"]) or 500
            msg = {507: "attempted to write %d bytes: not enough disk space available" % len(raw)}.get(
                status, "error writing file: injected fault")
            return self.envd_error(status, fault.get("message", msg))
        entries = []
        if mtype == "application/octet-stream":
            if path is None:
                return self.envd_error(400, "path query parameter is required for raw body upload")
            v, err = self.envd_resolve(path, user)
            if err:
                return self.envd_error(400, "error resolving path: %s" % err)
            files = [(v, body)]
        else:
            try:
                parts = sbfiles.parse_multipart(body, ctype)
            except ValueError as ex:
                return self.envd_error(500, "error parsing multipart form: %s" % ex)
            files = []
            for _h, name, filename, data in parts:
                if name != "file":
                    continue
                v, err = self.envd_resolve(path if path is not None else (filename or ""), user)
                if err:
                    return self.envd_error(400, "error resolving path: %s" % err)
                files.append((v, data))
        for v, data in files:
            if any(e["path"] == v for e in entries):
                msg = ("you cannot upload multiple files to the same path '%s' in one upload request, only the "
                       "first specified file was uploaded" % v)
                others = [e["path"] for e in entries if e["path"] != v]
                if len(others) > 1:
                    msg += ", also the following files were uploaded: %s" % ", ".join(others)
                return self.envd_error(400, msg)
            if gz_err:
                return self.envd_error(500, gz_err)
            status, err = self.envd_write(sb, v, data, user)
            if err:
                return self.envd_error(status, err)
            entries.append({"name": posixpath.basename(sbfiles.go_clean(v)), "path": v, "type": "file"})
        with st.lock:
            st.c["uploads"] += len(entries)
        # envd writes the array without a Content-Type: net/http sniffs one
        self.send_raw(200, go_json(entries), "text/plain; charset=utf-8")

    def envd_ensure_dirs(self, sb, vdir, user):
        """permissions.EnsureDirs: None, or the error text."""
        subs, p = [], sbfiles.go_clean(vdir)
        while True:
            subs.append(p)
            p = posixpath.dirname(p)
            if subs[-1] == "/" or p == "/":
                break
        for sub in reversed(subs):
            r = sbfiles.real_path(sb.dir, sub)
            try:
                info = os.stat(r)
            except FileNotFoundError:
                try:
                    os.mkdir(r, 0o755)
                except FileExistsError:
                    pass
                except OSError as e:
                    return "failed to create directory: mkdir %s: %s" % (sub, go_errno(e))
                sb.owners[sub] = user
                continue
            except OSError as e:
                return "failed to stat directory: stat %s: %s" % (sub, go_errno(e))
            if not stat_mod.S_ISDIR(info.st_mode):
                return "path is a file: %s" % sub
        return None

    def envd_write(self, sb, v, data, user):
        """processFile: (status, None) or (status, error text)."""
        clean = sbfiles.go_clean(v)
        err = self.envd_ensure_dirs(sb, posixpath.dirname(clean), user)
        if err:
            return 500, "error ensuring directories: %s" % err
        real = sbfiles.real_path(sb.dir, clean)
        try:
            if stat_mod.S_ISDIR(os.stat(real).st_mode):
                return 400, "path is a directory: %s" % v
        except FileNotFoundError:
            pass
        except OSError as e:
            return 500, "error getting file info: stat %s: %s" % (v, go_errno(e))
        try:
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        except OSError as e:
            if e.errno == errno.ENOSPC:
                return 507, "not enough inodes available: open %s: %s" % (v, go_errno(e))
            return 500, "error opening file: open %s: %s" % (v, go_errno(e))
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError as e:
            if e.errno == errno.ENOSPC:
                return 507, "not enough disk space available"
            return 500, "error writing file: write %s: %s" % (v, go_errno(e))
        finally:
            os.close(fd)
        sb.owners[clean] = user
        return 200, None

    # -- envd's filesystem service over Connect (unary, JSON codec)
    def connect_error(self, code, message, extra=None):
        self.send_raw(CONNECT_HTTP.get(code, 500), go_json({"code": code, "message": message}),
                      "application/json", dict({"Accept-Encoding": "gzip"}, **(extra or {})))

    def connect_fs(self, sb, method, raw):
        if method not in CONNECT_FS_METHODS:
            return self.send_raw(404, b"404 page not found\n", "text/plain; charset=utf-8",
                                 {"X-Content-Type-Options": "nosniff"})
        if self.command != "POST":
            return self.send_raw(405, b"", None, {"Allow": "POST"})
        ctype = self.headers.get("Content-Type", "").strip().lower()
        if ctype not in ("application/json", "application/json; charset=utf-8"):
            # (the real server also takes application/proto; this fake speaks JSON only)
            return self.send_raw(415, b"", None, {"Accept-Post": "application/json, application/json; "
                                                                 "charset=utf-8"})
        user = DEFAULT_USER
        auth = self.headers.get("Authorization", "")
        if auth[:6].lower() == "basic ":
            try:
                name = base64.b64decode(auth[6:].strip(), validate=True).decode().partition(":")[0]
            except (ValueError, UnicodeDecodeError):
                name = None
            if name is not None:
                if name not in USERS:
                    return self.connect_error("unauthenticated", "invalid username: '%s'" % name)
                user = name
        if method not in ("ListDir", "MakeDir", "Stat"):
            return self.connect_error("unimplemented", "fake envd: filesystem.Filesystem/%s is not implemented"
                                      % method)
        if not raw:
            return self.connect_error("invalid_argument", "unmarshal message: zero-length payload is not a valid "
                                                          "JSON object")
        what = "unmarshal message: unmarshal into *filesystem.%sRequest: proto: " % method
        try:
            req = json.loads(raw)
        except ValueError as e:
            return self.connect_error("invalid_argument", what + "syntax error: %s" % e)
        if not isinstance(req, dict):
            return self.connect_error("invalid_argument", what + "unexpected token %s" % json.dumps(req)[:40])
        path = req.get("path", "")
        if path is None:
            path = ""
        if not isinstance(path, str):
            return self.connect_error("invalid_argument", what + "invalid value for string field path: %s"
                                      % json.dumps(path))
        depth = req.get("depth", 0)
        if depth is None:
            depth = 0
        if isinstance(depth, str) and re.fullmatch(r"-?\d+", depth):
            depth = int(depth)
        if isinstance(depth, float) and depth.is_integer():
            depth = int(depth)
        if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth < 2 ** 32:
            return self.connect_error("invalid_argument", what + "invalid value for uint32 field depth: %s"
                                      % json.dumps(depth))
        v, err = self.envd_resolve(path, user)
        if err:
            return self.connect_error("invalid_argument", err)
        st = self.server.state
        if method == "Stat":
            return self.connect_entry_reply(sb, v, "entry")
        if method == "MakeDir":
            real = self.envd_real(sb, v)
            try:
                info = os.stat(real)
            except FileNotFoundError:
                info = None
            except OSError as e:
                return self.connect_error("internal", "error getting file info: stat %s: %s" % (v, go_errno(e)))
            if info is not None:
                if stat_mod.S_ISDIR(info.st_mode):
                    return self.connect_error("already_exists", "directory already exists: %s" % v)
                return self.connect_error("invalid_argument", "path already exists but it is not a directory: %s" % v)
            err = self.envd_ensure_dirs(sb, v, user)
            if err:
                return self.connect_error("internal", err)
            return self.connect_entry_reply(sb, v, "entry")
        # ListDir
        fault = st.take_fault("listdir_status")
        if fault:
            status = as_int(fault["value"]) or 500
            code = {v_: k for k, v_ in CONNECT_HTTP.items() if k not in ("unknown", "data_loss", "aborted",
                                                                          "out_of_range", "failed_precondition")}
            return self.connect_error(code.get(status, "internal"), fault.get("message", "injected fault"))
        resolved, cerr = self.eval_symlinks(sb, v)
        if cerr:
            return self.connect_error(*cerr)
        rreal = sbfiles.real_path(sb.dir, resolved)
        try:
            is_dir = stat_mod.S_ISDIR(os.stat(rreal).st_mode)
        except OSError as e:
            return self.connect_error("internal", "error getting file info: stat %s: %s" % (resolved, go_errno(e)))
        if not is_dir:
            return self.connect_error("invalid_argument", "path is not a directory: %s" % resolved)
        entries = []

        def walk(rdir, rel, level):
            try:
                names = sorted(os.listdir(rdir), key=os.fsencode)
            except OSError as e:
                raise WalkError("error reading directory %s: open %s: %s" % (resolved, resolved, go_errno(e)))
            for name in names:
                child_rel = rel + [name]
                child = os.path.join(rdir, name)
                try:
                    e = self.envd_entry(sb, child)
                except FileNotFoundError:
                    continue
                e["path"] = sbfiles.go_clean(v + "/" + "/".join(child_rel))
                entries.append(e)
                if level < depth and stat_mod.S_ISDIR(os.lstat(child).st_mode):
                    walk(child, child_rel, level + 1)
        depth = depth or 1      # ListDir: 0 means the directory's own entries
        try:
            walk(rreal, [], 1)
        except WalkError as e:
            return self.connect_error("internal", str(e))
        with st.lock:
            st.c["listdirs"] += 1
        self.send_raw(200, py_json({"entries": entries}) if entries else b"{}", "application/json",
                      {"Accept-Encoding": "gzip"})

    def connect_entry_reply(self, sb, v, key):
        try:
            e = self.envd_entry(sb, self.envd_real(sb, v), v)
        except FileNotFoundError:
            return self.connect_error("not_found", "file not found: lstat %s: no such file or directory" % v)
        except OSError as ex:
            return self.connect_error("internal", "error getting file info: lstat %s: %s" % (v, go_errno(ex)))
        self.send_raw(200, py_json({key: e}), "application/json", {"Accept-Encoding": "gzip"})

    def eval_symlinks(self, sb, v):
        """filepath.EvalSymlinks inside the sandbox: (resolved sandbox path, None) or (None, (code, msg))."""
        clean = sbfiles.go_clean(v)
        acc = ""
        comps = [c for c in clean.split("/") if c]
        for i, c in enumerate(comps):
            acc += "/" + c
            try:
                info = os.stat(sbfiles.real_path(sb.dir, acc))
            except FileNotFoundError:
                return None, ("not_found", "path not found: lstat %s: no such file or directory" % acc)
            except OSError as e:
                return None, ("internal", "error resolving symlink: lstat %s: %s" % (acc, go_errno(e)))
            if i < len(comps) - 1 and not stat_mod.S_ISDIR(info.st_mode):
                return None, ("internal", "error resolving symlink: not a directory")
        real = os.path.realpath(sbfiles.real_path(sb.dir, clean))
        return sbfiles.virtual_path(sb.dir, real) or real, None

    def envd_entry(self, sb, real, vpath=None):
        """EntryInfo in protojson (lowerCamelCase, default values left out, int64 as a string)."""
        info = os.lstat(real)
        vpath = vpath if vpath is not None else (sbfiles.virtual_path(sb.dir, real) or real)
        mode, target = info.st_mode, None
        ftype = stat_mod.S_IFMT(mode)
        perm = mode & 0o777
        if stat_mod.S_ISLNK(mode):
            try:
                t = os.path.realpath(real, strict=True)
                target = sbfiles.virtual_path(sb.dir, t) or t
            except OSError:
                target = vpath
            try:
                tinfo = os.stat(real)
                ftype, perm = stat_mod.S_IFMT(tinfo.st_mode), tinfo.st_mode & 0o777
            except OSError:
                ftype, perm = None, 0
        e = {"name": posixpath.basename(real)}
        t = {stat_mod.S_IFREG: "FILE_TYPE_FILE", stat_mod.S_IFDIR: "FILE_TYPE_DIRECTORY",
             stat_mod.S_IFLNK: "FILE_TYPE_SYMLINK"}.get(ftype)
        if t:
            e["type"] = t
        e["path"] = vpath
        if info.st_size:
            e["size"] = str(info.st_size)
        if perm:
            e["mode"] = perm
        e["permissions"] = sbfiles.go_filemode_string(mode)
        clean = sbfiles.go_clean(vpath)
        owner = sb.owners.get(clean) or ("root" if clean in ("/", "/home", "/mnt", "/root") or
                                         clean.startswith("/root/") else "user")
        e["owner"] = e["group"] = owner
        if info.st_mtime_ns:
            e["modifiedTime"] = sbfiles.proto_timestamp(info.st_mtime_ns)
        if target is not None:
            e["symlinkTarget"] = target
        return e

    def code_interpreter(self, sb, path, raw):
        c = self.command
        if path == "/health":
            return self.fastapi_json(200, "OK") if c == "GET" else self.fastapi_json(405, {"detail": "Method Not Allowed"})
        if path == "/execute":
            return self.execute(sb, raw) if c == "POST" else self.fastapi_json(405, {"detail": "Method Not Allowed"})
        if path == "/contexts":
            if c == "GET":
                return self.fastapi_json(200, [{"id": x.id, "language": x.language, "cwd": x.cwd}
                                               for x in list(sb.contexts.values())])
            if c == "POST":
                return self.create_context(sb, raw)
            return self.fastapi_json(405, {"detail": "Method Not Allowed"})
        m = re.fullmatch(r"/contexts/([^/]+)(/restart)?", path)
        if m and ((m.group(2) and c == "POST") or (not m.group(2) and c == "DELETE")):
            ctx = sb.contexts.get(m.group(1))
            if ctx is None:
                return self.fastapi_text(404, "Context %s not found" % m.group(1))
            if m.group(2):
                ctx.drop_worker()
                try:
                    ctx.ensure_worker()
                except (OSError, RuntimeError) as e:
                    return self.fastapi_text(500, "Failed to restart context %s: %s" % (ctx.id, e))
            else:
                ctx.deleted = True
                sb.contexts.pop(ctx.id, None)
                if sb.default_ctx is ctx:
                    sb.default_ctx = None
                ctx.drop_worker()
            return self.fastapi_json(200, None)
        if m:
            return self.fastapi_json(405, {"detail": "Method Not Allowed"})
        self.fastapi_json(404, {"detail": "Not Found"})

    @staticmethod
    def language(v):
        v = v.strip().lower()
        return {"js": "javascript", "ts": "typescript"}.get(v, v)

    def unavailable_language(self, lang):
        self.fastapi_text(500, "Failed to create context: %s" % json.dumps(
            {"message": "The '%s' kernel is not available (this fake runs python only)." % lang}))

    def create_context(self, sb, raw):
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return self.fastapi_json(422, {"detail": [{"type": "model_attributes_type", "loc": ["body"],
                                                       "msg": "Input should be a valid dictionary or object "
                                                              "to extract fields from", "input": body}]})
        lang = self.language(body.get("language") or "python")
        if lang != "python":
            return self.unavailable_language(lang)
        ctx = Context(sb, body.get("cwd") if isinstance(body.get("cwd"), str) else "/home/user")
        try:
            ctx.ensure_worker()
        except (OSError, RuntimeError) as e:
            return self.fastapi_text(500, "Failed to create context: %s" % e)
        sb.contexts[ctx.id] = ctx
        self.fastapi_json(200, {"id": ctx.id, "language": ctx.language, "cwd": ctx.cwd})

    def execute(self, sb, raw):
        st = self.server.state
        st.bump(None, "execute")
        try:
            body = json.loads(raw)
        except ValueError as e:
            return self.fastapi_json(422, {"detail": [{"type": "json_invalid", "loc": ["body", getattr(e, "pos", 0)],
                                                       "msg": "JSON decode error", "input": {},
                                                       "ctx": {"error": getattr(e, "msg", str(e))}}]})
        if not isinstance(body, dict):
            return self.fastapi_json(422, {"detail": [{"type": "model_attributes_type", "loc": ["body"],
                                                       "msg": "Input should be a valid dictionary or object "
                                                              "to extract fields from", "input": body}]})
        errors = []
        if "code" not in body:
            errors.append({"type": "missing", "loc": ["body", "code"], "msg": "Field required", "input": body})
        elif not isinstance(body["code"], str):
            errors.append({"type": "string_type", "loc": ["body", "code"], "msg": "Input should be a valid string",
                           "input": body["code"]})
        for k in ("context_id", "language"):
            if body.get(k) is not None and not isinstance(body[k], str):
                errors.append({"type": "string_type", "loc": ["body", k], "msg": "Input should be a valid string",
                               "input": body[k]})
        env_vars = body.get("env_vars")
        if env_vars is not None and not isinstance(env_vars, dict):
            errors.append({"type": "dict_type", "loc": ["body", "env_vars"], "msg": "Input should be a valid "
                           "dictionary", "input": env_vars})
        elif env_vars:
            errors += [{"type": "string_type", "loc": ["body", "env_vars", k], "msg": "Input should be a valid "
                        "string", "input": v} for k, v in env_vars.items() if not isinstance(v, str)]
        if errors:
            return self.fastapi_json(422, {"detail": errors})
        cid, lang = body.get("context_id"), body.get("language")
        if cid is not None and lang is not None:
            return self.fastapi_text(400, "Only one of context_id or language can be provided")
        if cid is not None:
            ctx = sb.contexts.get(cid)
            if ctx is None:
                return self.fastapi_text(404, "Context %s not found" % cid)
        else:
            lang = self.language(lang or "python")
            if lang != "python":
                return self.unavailable_language(lang)
            ctx = sb.default_ctx
            if ctx is None:          # the default context was deleted: made again on first use
                ctx = Context(sb, "/home/user")
                sb.contexts[ctx.id] = ctx
                sb.default_ctx = ctx
        fault = st.take_fault("execute_status")
        if fault:
            self.server_name_hdr = None        # this one comes from the edge proxy
            status = as_int(fault["value"]) or 502
            msg = "The sandbox was not found" if status == 502 else "injected fault"
            return self.proxy_error(status, {"sandboxId": sb.id, "message": fault.get("message", msg),
                                             "code": status})
        mode, budget, f = None, None, st.take_fault("execute_drop")
        if f:
            mode, budget = "drop", as_int(f.get("lines", 2))
        else:
            f = st.take_fault("execute_hang")
            if f:
                mode, budget = "hang", as_int(f.get("lines", 1))
        if mode and (budget is None or budget < 0):
            budget = 2 if mode == "drop" else 1
        token_ok = self.token_ok(sb)
        with st.lock:
            st.c["executes"] += 1
            if not token_ok:
                st.c["executes_without_token"] += 1
        # 200, chunked, no Content-Type (reference §5.3)
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.status = 200
        Execution(self, sb, ctx, body["code"], env_vars or None, token_ok, mode, budget).run()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], DISCONNECTS):
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description="Fake e2b (API + code-interpreter data plane) for sandgate tests.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--port-file", help="write the chosen port here (atomically)")
    ap.add_argument("--api-key", help="the X-API-Key to accept (default: any well-formed e2b_<hex> key)")
    ap.add_argument("--quiet", action="store_true", help="no per-request log lines, worker stderr discarded")
    ap.add_argument("--keepalive", type=float, default=1.0, help="seconds of silence before a keepalive line")
    ap.add_argument("--max-timeout", type=int, default=3600, help="plan maximum sandbox lifetime, seconds")
    ap.add_argument("--max-sandboxes", type=int, default=100, help="concurrent sandboxes before 429 (0 = no limit)")
    ap.add_argument("--domain", help="return this `domain` in Sandbox objects (default: omitted)")
    ap.add_argument("--template", action="append", help="one more code-interpreter template alias")
    ap.add_argument("--interrupt-grace", type=float, default=3.0,
                    help="seconds an interrupted cell gets to stop before its worker is killed")
    ap.add_argument("--abort-window", type=float, default=0.5,
                    help="seconds after a client left mid-run in which the next run is aborted "
                         "by the kernel and never answered (the real server's quirk; 0 = off)")
    ap.add_argument("--python", default=os.environ.get("E2B_FAKE_PYTHON") or sys.executable,
                    help="the Python that runs the cells, e.g. one with pandas and matplotlib, as the "
                         "real template has (default: $E2B_FAKE_PYTHON, else this one)")
    args = ap.parse_args()
    global PYTHON
    PYTHON = args.python

    host = "127.0.0.1" if args.host == "localhost" else args.host
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        ap.error("--host must be a loopback address, got %r" % args.host)
    if ":" in host:
        Server.address_family = socket.AF_INET6

    server = Server((host, args.port), Handler)
    server.quiet, server.api_key, server.domain = args.quiet, args.api_key, args.domain
    server.state = State(args)
    threading.Thread(target=server.state.reap, daemon=True).start()
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, args.port_file)
    print("listening on %s:%d" % (host, port), flush=True)

    def stop(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.state.kill_all()
        server.server_close()


if __name__ == "__main__":
    main()
