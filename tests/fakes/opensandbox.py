#!/usr/bin/env python3
"""Fake OpenSandbox (lifecycle server + each sandbox's execd) for sandgate integration tests.

Standard library only. Written from reference/opensandbox-protocol.md; section numbers below refer
to it. One process, two loopback ports:

  main port   the lifecycle API (§1), mounted at "/" and at "/v1"; the server proxy route
              /(v1/)sandboxes/{id}/proxy/44772/... (§1.5, no API key); the test hooks.
  execd port  every sandbox's execd (§2), addressed by the path prefix
              /sandboxes/{id}/proxy/44772 that GET .../endpoints/44772 hands out.

Endpoint resolution returns {"endpoint": "127.0.0.1:<execd port>/sandboxes/<id>/proxy/44772",
"headers": {"OpenSandbox-Ingress-To": "<id>-44772", "X-EXECD-ACCESS-TOKEN": "<token>"}}: no scheme,
a path the client must append /ping, /code... to, and two headers execd then requires on every
request (401 {"error": "Unauthorized: invalid or missing header <name>"} otherwise, §2.1). With
?use_server_proxy=true the endpoint points at the main port's proxy route instead (same headers;
there only the token is checked).

Every sandbox really runs code: one persistent python3 worker per code context (state persists
across runs, like a Jupyter kernel), stdout/stderr streamed as written, the last expression's
value as an execute_result (text/plain from repr, plus image/png, text/html... from the value's
IPython-style _repr_*_ methods), exceptions as IPython-like error events. display_png(b64) and
display(obj) exist in the worker's builtins and emit display_data, which is DROPPED, as real execd
drops it (§2.6). /code with an empty context.language runs the code with `bash -c` (§2.3, §2.7).
POST /code/context's optional "cwd" is where the context's worker starts (a missing directory is a
500 RUNTIME_ERROR: assumed, execd's behaviour there is not documented).

Files (execd, §2.9). Each sandbox has a directory of its own that the fake treats as the sandbox's "/";
the code's worker runs in DIR/workspace and sees /workspace and /mnt there through the path mapping
of sbfiles.py (Python's file functions only: `bash -c` runs see the host's paths), so a file uploaded
to /mnt/data/x.csv is what open('/mnt/data/x.csv') reads and what the code writes there downloads.
  POST /files/upload      multipart pairs: part "metadata" (JSON {"path","owner","group","mode"}) and
       part "file", both with a filename (Go's ReadForm keeps the others as values), paired by
       order; parents made; the file made 0777 less the umask, then mode applied (its decimal
       digits read as octal); 200 with an empty body. 400 INVALID_FILE "multipart form is empty"
       (not multipart), INVALID_FILE_METADATA "metadata file is missing" / "metadata path is
       empty" / "invalid metadata format. ...", INVALID_FILE_CONTENT "file is missing",
       INVALID_FILE "metadata and file count mismatch: N vs M".
  GET  /files/download?path=   application/octet-stream, `attachment; filename="a.csv"` (non-ASCII:
       PathEscape'd, plus filename*=UTF-8''...), Content-Length, Last-Modified, Accept-Ranges; Range
       by execd's own parser: 206 with Content-Range for the first range, 416 {"code":"UNKNOWN"}
       when malformed, http.ServeContent's 416 text when no range overlaps. 400 MISSING_QUERY, 404
       FILE_NOT_FOUND "file not found. open /p: no such file or directory".
  GET  /files/info?path=a&path=b   {path: FileInfo} (keys sorted, as Go writes a map); no path -> {}.
  GET  /files/search?path=&pattern=   [FileInfo] of the files (not directories) under path, in
       filepath.Walk's order, whose base name matches the doublestar pattern (default "**").
  GET  /directories/list?path=&depth=   [FileInfo] of the tree to depth levels (default 1, 0 -> []),
       each entry then, for a directory, its own; 400 for a symlink or a file as the root, or a
       bad depth.
  POST /directories {path: {"mode",...}}   made with parents; DELETE /files?path=... removes files.
  FileInfo: {"path","type":"file|directory|symlink|other","size","modified_at","created_at" (Go
  time.Time in UTC: RFC 3339, nanoseconds without trailing zeros),"owner","group","mode"}.
  Verified by reading alibaba/OpenSandbox @4db3a993 components/execd/pkg/web/router.go,
  controller/{filesystem,filesystem_upload,filesystem_download,utils,basic,syscall_linux}.go,
  model/{filesystem,error}.go, pkg/util/pathutil/path.go, pkg/util/glob/match.go.
  Assumed: execd's cwd (for relative paths) is /workspace, its HOME /root; owner and group are
  "root" for the fake's own files (execd runs as root) and chown is not done; a directory given to
  /files/download gets its headers and then a cut connection (what the code suggests); $VAR in a
  path is expanded from the sandbox's env plus HOME and PATH.

Test hooks (main port, never authenticated):
  GET  /__stats   {"creates","created","deletes","renews","codes","polls",...,"live":[ids],
                   "states":{id:state},"create_bodies":[...],"renew_bodies":[...],
                   "code_bodies":[...],"execd_port":N}
  POST /__reset   clear counters and faults, kill every sandbox
  POST /__faults  set counted faults, e.g. {"create_status":500} or {"code_drop":true,"count":2}
                  or {"framing_sse":{"value":true,"count":3}}; {} clears all; GET shows them.
                  Names: create_status, create_delay, pending_polls, fail_start, endpoint_404 (the
                  value is the number of 404s), code_drop (true = cut mid-chunked-body, "clean" =
                  proper end of body without the terminal event), code_hang, code_error_object
                  (true, or the message string), framing_sse, delete_status, ping_503 (the value is
                  the number of 503s), files_status (POST /files/upload answers that status),
                  download_status, download_drop (GET /files/download: headers, half the body,
                  cut), listdir_status (GET /directories/list answers that status),
                  search_size (GET /files/search says every file has that many bytes: a
                  listing that lies, as a hostile sandbox's may).

Usage: opensandbox.py [--port 0] [--execd-port 0] [--port-file PATH] [--api-key KEY] [--quiet]
                      [--start-delay 0.3] [--max-timeout 86400]
"""
import argparse
import datetime
import json
import os
import posixpath
import queue
import re
import secrets
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbfiles  # noqa: E402

EXECD_PORT = 44772
PING_EVERY = 3.0            # execd's keep-alive cadence on streams (§2.5)
DISCONNECTS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout)
UTC = datetime.timezone.utc
PROXY_RE = re.compile(r"^/(?:v1/)?sandboxes/([^/]+)/proxy/([^/]+)(/.*)?$")
KNOWN_LANGUAGES = ("python", "bash", "java", "javascript", "typescript", "go")
WORKDIR = "/workspace"          # the code-interpreter image's WORKDIR: the kernels' cwd, and execd's (assumed)
MAPPED = (WORKDIR, "/mnt")      # what the code sees inside the sandbox's directory (sbfiles.py)
EXECD_HOME = "/root"            # execd runs as root: "~" in a path


class ClientGone(Exception):
    pass


FILE_ROUTES = {("POST", "/files/upload"): "fs_upload", ("GET", "/files/download"): "fs_download",
               ("GET", "/files/info"): "fs_info", ("GET", "/files/search"): "fs_search",
               ("GET", "/directories/list"): "fs_list", ("POST", "/directories"): "fs_mkdirs",
               ("DELETE", "/files"): "fs_remove"}
ENV_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def go_errno(e):
    """The text Go's syscall.Errno gives for an OSError."""
    return (e.strerror or str(e)).lower() if isinstance(e, OSError) else str(e)


def go_json_kind(v):
    return {bool: "bool", str: "string", list: "array", dict: "object"}.get(type(v), "number")


def go_unmarshal_problem(obj, fields, struct):
    """What encoding/json says when obj does not fit a struct of these (json name, type) fields."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        return "json: cannot unmarshal %s into Go value of type model.%s" % (go_json_kind(obj), struct)
    for name, typ in fields:
        v = obj.get(name)
        if v is None:
            continue
        ok = isinstance(v, str) if typ is str else (isinstance(v, int) and not isinstance(v, bool))
        if not ok:
            return "json: cannot unmarshal %s into Go struct field %s.%s of type %s" % (
                "number %s" % json.dumps(v) if isinstance(v, float) and typ is int else go_json_kind(v),
                struct, name, "string" if typ is str else "int")
    return None


def fs_chmod(real, mode):
    """ChmodFile's mode half: the decimal digits read as octal; the chown half is a no-op here
    (the fake's files are all its own, reported as root's). None, or the error text."""
    if not mode:
        return None
    try:
        m = int(str(mode), 8)
    except ValueError:
        return 'strconv.ParseUint: parsing "%d": invalid syntax' % mode
    try:
        os.chmod(real, m)
    except OSError as e:
        return "chmod %s: %s" % (real, go_errno(e))
    return None


def execd_parse_range(s, size):
    """execd's own ParseRange: [(start, length)] (ranges past the end dropped), or None (invalid)."""
    if not s.startswith("bytes="):
        return None
    out = []
    for ra in s[6:].split(","):
        ra = ra.strip()
        if not ra:
            continue
        if "-" not in ra:
            return None
        start, _, end = ra.partition("-")
        start, end = start.strip(), end.strip()
        try:
            if start == "":
                n = int(end)
                if n < 0:
                    return None
                n = min(n, size)
                a, length = size - n, n
            else:
                a = int(start)
                if a < 0:
                    return None
                if end == "":
                    length = size - a
                else:
                    j = int(end)
                    if j < a:
                        return None
                    length = j - a + 1
        except ValueError:
            return None
        if a >= size:
            continue
        out.append((a, min(length, size - a)))
    return out


# ================================================================ the per-context python worker
#
# Protocol: the parent writes one JSON object per line on the worker's stdin
#   {"op": "run", "code": str, "count": int}
# and reads one JSON object per line from the worker's stdout:
#   {"t": "ready"}                      once, after start-up
#   {"t": "stdout"|"stderr", "text"}    output chunks, as written (fd level: subprocesses too)
#   {"t": "result", "data": {mime: v}}  the execute_result bundle (text/plain not yet renamed)
#   {"t": "display", "data": {...}}     display_data (the parent drops it, like execd)
#   {"t": "error", "ename", "evalue", "traceback": [str]}
#   {"t": "done"}                       end of the run
# The worker moves the protocol pipes to private fds, puts /dev/null on fd 0 and capture pipes on
# fds 1 and 2. SIGINT interrupts a running cell (KeyboardInterrupt) and is ignored when idle. The
# worker kills its own process group when its parent dies or its command pipe closes.
WORKER_SRC = sbfiles.PATHMAP_SRC + r'''
import ast, binascii, builtins, codecs, json, linecache, os, select, shutil, signal, sys
import threading, time, traceback, zlib

_ppid = os.getppid()
_workdir = sys.argv[1] if len(sys.argv) > 1 else None
sys.argv = [""]
_cmd = os.fdopen(os.dup(0), "r", encoding="utf-8", errors="replace")
_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
_lock = threading.Lock()
_state = {"running": False}


def _send(msg):
    line = json.dumps(msg) + "\n"
    main = threading.current_thread() is threading.main_thread()
    if main:  # an interrupt must never cut a protocol line in half
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with _lock:
            _out.write(line)
            _out.flush()
    finally:
        if main:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


_fd = os.open(os.devnull, os.O_RDONLY)
os.dup2(_fd, 0)
os.close(_fd)
_MARK = b"\0sg-sync-" + os.urandom(8).hex().encode() + b"\0"


class _Capture:
    def __init__(self, fd, name):
        self.fd, self.name = fd, name
        r, w = os.pipe()
        os.dup2(w, fd)
        os.close(w)
        self.r = r
        self.synced = threading.Event()
        self.dec = codecs.getincrementaldecoder("utf-8")("replace")
        threading.Thread(target=self.loop, daemon=True).start()

    def emit(self, data, final=False):
        text = self.dec.decode(data, final)
        if text:
            _send({"t": self.name, "text": text})

    def loop(self):
        buf = b""
        while True:
            data = os.read(self.r, 65536)
            if not data:
                return
            buf += data
            while len(buf) < (1 << 20):  # writes of one burst (print's text + "\n") go out together
                if not select.select([self.r], [], [], 0.005)[0]:
                    break
                more = os.read(self.r, 65536)
                if not more:
                    break
                buf += more
            while True:
                i = buf.find(_MARK)
                if i < 0:
                    break
                self.emit(buf[:i], True)
                buf = buf[i + len(_MARK):]
                self.synced.set()
            keep = 0
            if b"\0" in buf[-len(_MARK):]:
                for k in range(min(len(buf), len(_MARK) - 1), 0, -1):
                    if _MARK.startswith(buf[-k:]):
                        keep = k
                        break
            self.emit(buf[:len(buf) - keep])
            buf = buf[len(buf) - keep:]


_caps = [_Capture(1, "stdout"), _Capture(2, "stderr")]


def _sync():
    """Everything written to fds 1 and 2 so far has been sent."""
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass
    for c in _caps:
        c.synced.clear()
        try:
            os.write(c.fd, _MARK)
        except OSError:
            c.synced.set()
    for c in _caps:
        c.synced.wait(2)


def _die():
    try:
        if os.getpgid(0) == os.getpid():
            os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(0)


def _orphaned():
    """The fake died without cleaning up: remove the sandbox's work dir for it, then go."""
    if _workdir and os.path.basename(_workdir).startswith("fake-osb-"):
        shutil.rmtree(_workdir, ignore_errors=True)
    _die()


def _watch():
    while True:
        time.sleep(0.5)
        if os.getppid() != _ppid:
            _orphaned()


_MIMES = (("_repr_png_", "image/png", True), ("_repr_jpeg_", "image/jpeg", True),
          ("_repr_svg_", "image/svg+xml", False), ("_repr_html_", "text/html", False),
          ("_repr_markdown_", "text/markdown", False), ("_repr_latex_", "text/latex", False),
          ("_repr_json_", "application/json", False), ("_repr_javascript_", "application/javascript", False),
          ("_repr_pdf_", "application/pdf", True))


def _b64(b):
    return binascii.b2a_base64(bytes(b)).decode("ascii")  # with the trailing "\n", as Jupyter sends it


def _bundle(v):
    """IPython-style format data: text/plain from repr, the rest from _repr_*_ methods."""
    data = {}
    if not isinstance(v, type):
        for meth, mime, binary in _MIMES:
            try:
                f = getattr(v, meth, None)
                r = f() if callable(f) else None
                if isinstance(r, tuple):
                    r = r[0]
                if r is None:
                    continue
                if isinstance(r, (bytes, bytearray)):
                    r = _b64(r) if binary else bytes(r).decode("utf-8", "replace")
                json.dumps(r)
                data[mime] = r
            except Exception:
                continue
    data["text/plain"] = repr(v)
    return data


def display_png(data, *args, **kwargs):
    if isinstance(data, (bytes, bytearray)):
        data = _b64(data)
    _send({"t": "display", "data": {"image/png": data, "text/plain": "<IPython.core.display.Image object>"}})


def display(*objs, **kwargs):
    for o in objs:
        _send({"t": "display", "data": _bundle(o)})


builtins.display_png = display_png
builtins.display = display

_ns = {"__name__": "__main__", "__builtins__": builtins}
_cells = {}
_R, _G, _C, _N = "\x1b[0;31m", "\x1b[0;32m", "\x1b[0;36m", "\x1b[0m"


def _str(e):
    try:
        return str(e)
    except Exception:
        return "<unprintable %s object>" % type(e).__name__


def _error(e):
    name = type(e).__name__
    tb = [_R + "-" * 75 + _N,
          _R + name + _N + " " * max(1, 42 - len(name)) + "Traceback (most recent call last)"]
    for fs in traceback.extract_tb(e.__traceback__):
        if fs.filename == "<string>":  # the worker's own frames
            continue
        if fs.filename in _cells:
            head = "Cell %sIn[%d], line %d%s" % (_G, _cells[fs.filename], fs.lineno, _N)
        else:
            head = "File %s%s:%d%s, in %s%s()%s" % (_G, fs.filename, fs.lineno, _N, _C, fs.name, _N)
        tb.append("%s\n%s----> %d%s %s\n" % (head, _G, fs.lineno, _N, fs.line or ""))
    tb.append("%s%s%s: %s" % (_R, name, _N, _str(e)))
    return {"t": "error", "ename": name, "evalue": _str(e), "traceback": tb}


def _syntax_error(e, count):
    lines = traceback.format_exception_only(type(e), e)
    if lines and lines[0].lstrip().startswith("File "):
        lines[0] = "  %sCell %sIn[%d], line %s%s\n" % (_C, _G, count, e.lineno, _N)
    if lines and ":" in lines[-1]:
        n, _, rest = lines[-1].partition(":")
        lines[-1] = _R + n + _N + ":" + rest
    return {"t": "error", "ename": type(e).__name__, "evalue": _str(e), "traceback": ["".join(lines)]}


def _run(code, count):
    fname = "/tmp/ipykernel_%d/%d.py" % (os.getpid(), zlib.crc32(code.encode("utf-8", "surrogatepass")))
    _cells[fname] = count
    linecache.cache[fname] = (len(code), None, code.splitlines(True), fname)
    try:
        try:
            tree = ast.parse(code, fname, "exec")
        except (SyntaxError, ValueError) as e:
            _sync()
            _send(_syntax_error(e, count) if isinstance(e, SyntaxError) else _error(e))
            return
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        show, data, value = False, None, None
        _state["running"] = True
        try:
            if tree.body:
                exec(compile(tree, fname, "exec", dont_inherit=True), _ns)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), fname, "eval", dont_inherit=True), _ns)
                show = value is not None and not code.rstrip().endswith(";")
                if show:
                    data = _bundle(value)
        finally:
            _state["running"] = False
        if show:
            _ns["_"] = value
            _sync()
            _send({"t": "result", "data": data})
    except BaseException as e:  # KeyboardInterrupt and SystemExit too, like IPython
        _state["running"] = False
        _sync()
        _send(_error(e))


def _on_sigint(signum, frame):
    if _state["running"]:
        raise KeyboardInterrupt


signal.signal(signal.SIGINT, _on_sigint)
threading.Thread(target=_watch, daemon=True).start()
_send({"t": "ready"})
while True:
    line = _cmd.readline()
    if not line:
        break
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("op") != "run":
        continue
    try:
        _run(msg.get("code", ""), int(msg.get("count", 0)))
    except BaseException as e:
        _state["running"] = False
        try:
            _send(_error(e))
        except BaseException:
            pass
    try:
        _sync()
    except BaseException:
        pass
    _send({"t": "done"})
for _ in range(20):  # command pipe closed: the parent is gone (it SIGKILLs us otherwise)
    if os.getppid() != _ppid:
        _orphaned()
    time.sleep(0.05)
_die()
'''


# ================================================================ helpers

def now_ms():
    return int(time.time() * 1000)


def rfc3339(t):
    dt = datetime.datetime.fromtimestamp(t, UTC)
    s = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if dt.microsecond:
        s += ".%06d" % dt.microsecond
    return s + "Z"


def parse_time(s):
    """RFC 3339 / ISO 8601 -> epoch seconds, or None. Naive times count as UTC (like pydantic)."""
    if not isinstance(s, str) or not s.strip():
        return None
    try:
        dt = datetime.datetime.fromisoformat(s.strip())
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def py_json(obj):
    """Starlette's JSONResponse: compact, UTF-8 kept."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")


_SURROGATE = re.compile("[\ud800-\udfff]")


def go_json(obj):
    """Go encoding/json: compact, <>& and U+2028/9 escaped, invalid UTF-8 -> U+FFFD."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    s = (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
         .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", s).encode("utf-8")


def event(etype, text=None, execution_count=None, execution_time=None, results=None, error=None):
    """An execd event, fields in Go's order, empty ones omitted (§2.5)."""
    e = {"type": etype}
    if text:
        e["text"] = text
    if execution_count:
        e["execution_count"] = execution_count
    if execution_time:
        e["execution_time"] = execution_time
    e["timestamp"] = now_ms()
    if results:
        e["results"] = results
    if error is not None:
        e["error"] = error
    return e


# ---------------------------------------------------------------- pydantic-style validation (§1.8)

def perr(typ, loc, msg, inp, ctx=None):
    d = {"type": typ, "loc": ["body"] + list(loc), "msg": msg, "input": inp}
    if ctx is not None:
        d["ctx"] = ctx
    return d


def value_error(msg, inp):
    return perr("value_error", [], "Value error, " + msg, inp, {"error": {}})


def v_str(errs, loc, v):
    if isinstance(v, str):
        return True
    errs.append(perr("string_type", loc, "Input should be a valid string", v))
    return False


def v_model(errs, loc, v):
    if isinstance(v, dict):
        return True
    errs.append(perr("model_attributes_type", loc,
                     "Input should be a valid dictionary or object to extract fields from", v))
    return False


def v_dict(errs, loc, v):
    if isinstance(v, dict):
        return True
    errs.append(perr("dict_type", loc, "Input should be a valid dictionary", v))
    return False


def v_list(errs, loc, v):
    if isinstance(v, list):
        return True
    errs.append(perr("list_type", loc, "Input should be a valid list", v))
    return False


def v_bool(errs, loc, v):
    if isinstance(v, bool):
        return True
    errs.append(perr("bool_type", loc, "Input should be a valid boolean", v))
    return False


def v_int(errs, loc, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        errs.append(perr("int_type", loc, "Input should be a valid integer", v))
        return None
    if isinstance(v, float) and not v.is_integer():
        errs.append(perr("int_from_float", loc, "Input should be a valid integer, got a number with a "
                         "fractional part", v))
        return None
    return int(v)


def v_enum(errs, loc, v, choices):
    if isinstance(v, str) and v in choices:
        return True
    expected = "%s or '%s'" % (", ".join("'%s'" % c for c in choices[:-1]), choices[-1]) if len(choices) > 1 \
        else "'%s'" % choices[0]
    errs.append(perr("enum", loc, "Input should be %s" % expected, v, {"expected": expected}))
    return False


def v_strmap(errs, loc, v, none_ok=False):
    if not v_dict(errs, loc, v):
        return
    for k, x in v.items():
        if x is None and none_ok:
            continue
        v_str(errs, list(loc) + [k], x)


def v_required(errs, loc, obj, key):
    if key in obj:
        return True
    errs.append(perr("missing", list(loc) + [key], "Field required", obj))
    return False


def validate_create_fields(b):
    errs = []
    if not isinstance(b, dict):
        return [perr("model_attributes_type", [], "Input should be a valid dictionary or object to extract "
                     "fields from", b)]
    img = b.get("image")
    if img is not None and v_model(errs, ["image"], img):
        if v_required(errs, ["image"], img, "uri") and v_str(errs, ["image", "uri"], img["uri"]) \
                and not img["uri"]:
            errs.append(perr("string_too_short", ["image", "uri"], "String should have at least 1 character",
                             "", {"min_length": 1}))
        auth = img.get("auth")
        if auth is not None and v_model(errs, ["image", "auth"], auth):
            for k in ("username", "password"):
                if v_required(errs, ["image", "auth"], auth, k):
                    v_str(errs, ["image", "auth", k], auth[k])
    if b.get("snapshotId") is not None:
        v_str(errs, ["snapshotId"], b["snapshotId"])
    ep = b.get("entrypoint")
    if ep is not None and v_list(errs, ["entrypoint"], ep):
        if not ep:
            errs.append(perr("too_short", ["entrypoint"], "List should have at least 1 item after validation, "
                             "not 0", ep, {"field_type": "List", "min_length": 1, "actual_length": 0}))
        for i, x in enumerate(ep):
            v_str(errs, ["entrypoint", i], x)
    t = b.get("timeout")
    if t is not None:
        n = v_int(errs, ["timeout"], t)
        if n is not None and n < 60:
            errs.append(perr("greater_than_equal", ["timeout"], "Input should be greater than or equal to 60",
                             t, {"ge": 60}))
    ext = b.get("extensions")
    pool = isinstance(ext, dict) and bool(ext.get("poolRef"))
    if "resourceLimits" not in b and not pool:
        errs.append(perr("missing", ["resourceLimits"], "Field required", b))
    if b.get("resourceLimits") is not None:
        v_strmap(errs, ["resourceLimits"], b["resourceLimits"])
    if b.get("env") is not None:
        v_strmap(errs, ["env"], b["env"], none_ok=True)
    if b.get("metadata") is not None:
        v_strmap(errs, ["metadata"], b["metadata"])
    np_ = b.get("networkPolicy")
    if np_ is not None and v_model(errs, ["networkPolicy"], np_):
        if np_.get("defaultAction") is not None:
            v_enum(errs, ["networkPolicy", "defaultAction"], np_["defaultAction"], ("allow", "deny"))
        eg = np_.get("egress")
        if eg is not None and v_list(errs, ["networkPolicy", "egress"], eg):
            for i, r in enumerate(eg):
                loc = ["networkPolicy", "egress", i]
                if v_model(errs, loc, r):
                    if v_required(errs, loc, r, "action"):
                        v_enum(errs, loc + ["action"], r["action"], ("allow", "deny"))
                    if v_required(errs, loc, r, "target"):
                        v_str(errs, loc + ["target"], r["target"])
    cp = b.get("credentialProxy")
    if cp is not None and v_model(errs, ["credentialProxy"], cp) and cp.get("enabled") is not None:
        v_bool(errs, ["credentialProxy", "enabled"], cp["enabled"])
    if b.get("secureAccess") is not None:
        v_bool(errs, ["secureAccess"], b["secureAccess"])
    pf = b.get("platform")
    if pf is not None and v_model(errs, ["platform"], pf):
        if v_required(errs, ["platform"], pf, "os"):
            v_enum(errs, ["platform", "os"], pf["os"], ("linux", "windows"))
        if v_required(errs, ["platform"], pf, "arch"):
            v_enum(errs, ["platform", "arch"], pf["arch"], ("amd64", "arm64"))
    vols = b.get("volumes")
    if vols is not None and v_list(errs, ["volumes"], vols):
        for i, vol in enumerate(vols):
            loc = ["volumes", i]
            if v_model(errs, loc, vol):
                for k in ("name", "mountPath"):
                    if v_required(errs, loc, vol, k):
                        v_str(errs, loc + [k], vol[k])
    if ext is not None:
        v_strmap(errs, ["extensions"], ext)
    return errs


def validate_create_model(b):
    """Model validators: run only when every field is valid (pydantic's after-validators)."""
    ext = b.get("extensions") or {}
    has_img, has_snap = b.get("image") is not None, b.get("snapshotId") is not None
    if not ext.get("poolRef") and has_img == has_snap:
        return [value_error("Exactly one of image or snapshotId must be provided.", b)]
    if has_img and b.get("entrypoint") is None:
        return [value_error("entrypoint is required when image is provided.", b)]
    if b.get("resourceLimits") is None and not ext.get("poolRef"):
        return [value_error("resourceLimits is required.", b)]
    return []


LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUANTITY = re.compile(r"^(\d+(\.\d+)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
FQDN = re.compile(r"^(\*\.)?([A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]([-A-Za-z0-9]{0,61}"
                  r"[A-Za-z0-9])?\.?$")
IPV4ISH = re.compile(r"^[\d.]+(/\d+)?$")


def label_problem(k, v):
    """Kubernetes label rules (§1.2), or None."""
    prefix, slash, name = k.rpartition("/")
    if slash:
        if not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix):
            return ("Invalid metadata label key '%s': the prefix must be a DNS subdomain (lowercase "
                    "alphanumerics, '-' and '.', at most 253 characters)." % k)
        if prefix == "opensandbox.io" or prefix.endswith(".opensandbox.io"):
            return "Invalid metadata label key '%s': the prefix 'opensandbox.io/' is reserved." % k
    if not name or len(name) > 63 or not LABEL_NAME.match(name):
        return ("Invalid metadata label key '%s': the name must be 63 characters or less and must begin and "
                "end with an alphanumeric character ([a-z0-9A-Z]) with dashes (-), underscores (_), dots (.), "
                "and alphanumerics between." % k)
    if v and (len(v) > 63 or not LABEL_NAME.match(v)):
        return ("Invalid metadata label value '%s' for key '%s': must be 63 characters or less and must be empty "
                "or begin and end with an alphanumeric character ([a-z0-9A-Z]) with dashes (-), underscores "
                "(_), dots (.), and alphanumerics between." % (v, k))
    return None


def validate_create_semantics(b, max_timeout):
    """(status, code, message) for the server's own checks (400s), or None."""
    if b.get("timeout") is not None and int(b["timeout"]) > max_timeout:
        return (400, "SANDBOX::INVALID_PARAMETER", "Sandbox timeout %ds exceeds the maximum allowed timeout "
                "of %ds." % (int(b["timeout"]), max_timeout))
    ep = b.get("entrypoint")
    if ep is not None and not ep[0].strip():
        return (400, "DOCKER::INVALID_ENTRYPOINT", "Entrypoint must be a non-empty list whose first element "
                "is the command to run.")
    for k, v in (b.get("metadata") or {}).items():
        p = label_problem(k, v)
        if p:
            return (400, "SANDBOX::INVALID_METADATA_LABEL", p)
    for k, v in (b.get("resourceLimits") or {}).items():
        ok = re.match(r"^\d+$", v) if k == "gpu" else QUANTITY.match(v)
        if not ok:
            return (400, "SANDBOX::INVALID_PARAMETER", "Invalid resource limit %s=%r: expected a Kubernetes "
                    "quantity such as \"500m\", \"1\", \"512Mi\" or \"2Gi\"." % (k, v))
    np_ = b.get("networkPolicy")
    for r in (np_ or {}).get("egress") or []:
        t = r["target"]
        if not t or IPV4ISH.match(t) or ":" in t or not FQDN.match(t):
            return (400, "SANDBOX::INVALID_PARAMETER", "Invalid egress target %r: only FQDN or wildcard "
                    "domain targets (example.com, *.example.com) are supported." % t)
    if (b.get("credentialProxy") or {}).get("enabled") and np_ is None:
        return (400, "SANDBOX::INVALID_PARAMETER", "credentialProxy.enabled requires networkPolicy.")
    if b.get("secureAccess"):
        return (400, "SANDBOX::INVALID_PARAMETER", "secureAccess is only supported by the Kubernetes runtime "
                "in ingress-gateway mode.")
    ext = b.get("extensions") or {}
    if ext.get("poolRef"):
        return (400, "SANDBOX::INVALID_PARAMETER", "extensions.poolRef is only supported by the Kubernetes "
                "runtime.")
    if "access.renew.extend.seconds" in ext:
        try:
            n = int(ext["access.renew.extend.seconds"])
        except ValueError:
            n = -1
        if not 300 <= n <= 86400:
            return (400, "SANDBOX::INVALID_PARAMETER", "extensions['access.renew.extend.seconds'] must be an "
                    "integer between 300 and 86400.")
    if b.get("snapshotId") is not None:
        return (404, "SNAPSHOT::NOT_FOUND", "Snapshot %s not found." % b["snapshotId"])
    return None


# ================================================================ state

class Faults:
    NAMES = ("create_status", "create_delay", "pending_polls", "fail_start", "endpoint_404", "code_drop",
             "code_hang", "code_error_object", "framing_sse", "delete_status", "ping_503", "files_status",
             "download_status", "download_drop", "listdir_status", "search_size")
    VALUE_IS_COUNT = ("endpoint_404", "ping_503")

    def __init__(self):
        self.lock = threading.Lock()
        self.items = {}  # name -> [value, remaining uses]

    def set(self, obj):
        """Apply a /__faults body; returns an error string or None."""
        if not isinstance(obj, dict):
            return "expected a JSON object"
        default_count = obj.get("count", 1)
        new = {}
        for name, v in obj.items():
            if name == "count":
                continue
            if name not in self.NAMES:
                return "unknown fault %r (known: %s)" % (name, ", ".join(self.NAMES))
            count = default_count
            if isinstance(v, dict):
                count, v = v.get("count", default_count), v.get("value", True)
            if name in self.VALUE_IS_COUNT and not isinstance(v, bool) and isinstance(v, int):
                count, v = v, True
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                return "bad count for %r" % name
            new[name] = [v, count]
        with self.lock:
            if not new and "count" not in obj:
                self.items.clear()
            for name, (v, count) in new.items():
                if v is None or v is False or v == 0 or count == 0:
                    self.items.pop(name, None)
                else:
                    self.items[name] = [v, count]
        return None

    def take(self, name):
        with self.lock:
            it = self.items.get(name)
            if it is None:
                return None
            it[1] -= 1
            if it[1] <= 0:
                del self.items[name]
            return it[0]

    def snapshot(self):
        with self.lock:
            return {k: {"value": v, "count": c} for k, (v, c) in self.items.items()}

    def clear(self):
        with self.lock:
            self.items.clear()


def new_stats():
    return {"creates": 0, "created": 0, "deletes": 0, "renews": 0, "codes": 0, "polls": 0,
            "endpoint_lookups": 0, "pings": 0, "contexts": 0, "interrupts": 0, "displays_dropped": 0,
            "expired": 0, "auth_failures": 0, "execd_auth_failures": 0, "uploads": 0, "downloads": 0,
            "listdirs": 0,
            "create_bodies": [], "renew_bodies": [], "code_bodies": []}


class Context:
    """One code context: a persistent python worker, like a Jupyter kernel."""

    def __init__(self, sb, language, default=False, cwd=None):
        self.sb, self.language, self.default = sb, language, default
        self.cwd = cwd                    # host path of the context's cwd (None: the sandbox's)
        self.id = uuid.uuid4().hex
        self.run_lock = threading.Lock()  # held for a whole run: a second run gets "busy"
        self.plock = threading.Lock()     # spawn / kill
        self.count = 0
        self.proc = None
        self.q = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def ensure(self):
        with self.plock:
            if self.alive():
                return
            self._reap()
            env = dict(os.environ)
            for k in ("PYTHONSTARTUP", "PYTHONINSPECT"):
                env.pop(k, None)
            env.update(self.sb.env)
            env.update({"PYTHONIOENCODING": "utf-8:backslashreplace", "PYTHONUNBUFFERED": "1"})
            env.update(sbfiles.worker_env(self.sb.workdir, MAPPED))
            p = subprocess.Popen([sys.executable, "-u", "-c", WORKER_SRC, self.sb.workdir], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, cwd=self.cwd or self.sb.cwd, env=env,
                                 start_new_session=True)
            q = queue.Queue()

            def pump():
                try:
                    for line in p.stdout:
                        try:
                            q.put(json.loads(line))
                        except ValueError:
                            pass
                except (OSError, ValueError):
                    pass
                q.put({"t": "exit"})

            threading.Thread(target=pump, daemon=True).start()
            try:
                first = q.get(timeout=20)
            except queue.Empty:
                first = None
            if not first or first.get("t") != "ready":
                self.proc = p
                self._reap()
                raise RuntimeError("kernel failed to start")
            self.proc, self.q = p, q
            if self.sb.state == "Paused":
                self.signal(signal.SIGSTOP)

    def send(self, obj):
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def signal(self, sig):
        p = self.proc
        if p is not None:
            try:
                os.killpg(p.pid, sig)
            except OSError:
                pass

    def _reap(self):
        p, self.proc = self.proc, None
        if p is None:
            return
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            pass
        for f in (p.stdin, p.stdout):
            try:
                f.close()
            except OSError:
                pass

    def kill(self):
        with self.plock:
            self._reap()

    def interrupt_and_drain(self, q, grace=3.0):
        """The client left mid-run: interrupt the cell (SIGINT to the kernel's process group, as Jupyter
        does) and wait for the run to end; a kernel that ignores it is killed (respawned on next use)."""
        self.signal(signal.SIGINT)
        deadline = time.monotonic() + grace
        resent = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                return
            if not resent and left < grace / 2:
                self.signal(signal.SIGINT)
                resent = True
            try:
                msg = q.get(timeout=min(left, 0.2))
            except queue.Empty:
                continue
            if msg.get("t") in ("done", "exit"):
                return


class ShellRun:
    def __init__(self, proc):
        self.id = uuid.uuid4().hex
        self.proc = proc

    def terminate(self):
        def go():
            for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(self.proc.pid, sig)
                except OSError:
                    return
                try:
                    self.proc.wait(wait)
                    return
                except subprocess.TimeoutExpired:
                    continue
        threading.Thread(target=go, daemon=True).start()


class Sandbox:
    def __init__(self, body, fail_start, hold_polls):
        self.id = str(uuid.uuid4())
        self.token = secrets.token_hex(16)
        self.created = time.time()
        self.mono_created = time.monotonic()
        self.image = body["image"]["uri"] if body.get("image") else None
        self.snapshot_id = body.get("snapshotId")
        self.entrypoint = body.get("entrypoint") or ["tail", "-f", "/dev/null"]
        self.metadata = dict(body["metadata"]) if body.get("metadata") is not None else None
        self.env = {k: v for k, v in (body.get("env") or {}).items() if v is not None}
        self.platform = body.get("platform")
        self.timeout = int(body["timeout"]) if body.get("timeout") is not None else None
        self.expires = self.created + self.timeout if self.timeout is not None else None
        self.fail_start = fail_start
        self.hold_polls = hold_polls
        self.set_state("Pending", "CONTAINER_STARTING", "Sandbox container is starting.")
        self.transition = self.created
        self.workdir = tempfile.mkdtemp(prefix="fake-osb-")     # the sandbox's "/" (sbfiles.py)
        os.chmod(self.workdir, 0o755)
        sbfiles.makedirs_in(self.workdir, WORKDIR)
        sbfiles.makedirs_in(self.workdir, EXECD_HOME)
        self.cwd = sbfiles.real_path(self.workdir, WORKDIR)
        self.contexts = {}   # id -> Context
        self.shells = {}     # id -> ShellRun
        self.dead = False

    def set_state(self, state, reason, message):
        self.state, self.reason, self.message, self.transition = state, reason, message, time.time()

    def advance(self, start_delay):
        """Pending -> Running (or Failed) once the start delay passed and no poll hold remains."""
        if self.state == "Pending" and self.hold_polls <= 0 and \
                time.monotonic() - self.mono_created >= start_delay:
            if self.fail_start:
                self.set_state("Failed", "CONTAINER_EXITED_ERROR",
                               "Sandbox container exited with code 1 (fake fail_start fault).")
            else:
                self.set_state("Running", "CONTAINER_RUNNING", "Sandbox container started successfully.")

    def status(self):
        return {"state": self.state, "reason": self.reason, "message": self.message,
                "lastTransitionAt": rfc3339(self.transition)}

    def create_view(self):
        d = {"id": self.id, "status": self.status()}
        if self.metadata is not None:
            d["metadata"] = self.metadata
        if self.expires is not None:
            d["expiresAt"] = rfc3339(self.expires)
        d["createdAt"] = rfc3339(self.created)
        d["entrypoint"] = self.entrypoint
        if self.platform is not None:
            d["platform"] = self.platform
        return d

    def view(self):
        d = {"id": self.id}
        if self.image is not None:
            d["image"] = {"uri": self.image}
        if self.snapshot_id is not None:
            d["snapshotId"] = self.snapshot_id
        d.update((k, v) for k, v in self.create_view().items() if k != "id")
        return d

    def processes_signal(self, sig):
        for c in list(self.contexts.values()):
            c.signal(sig)
        for s in list(self.shells.values()):
            try:
                os.killpg(s.proc.pid, sig)
            except OSError:
                pass

    def destroy(self):
        """Kill everything (call without the global lock held)."""
        self.dead = True
        for c in list(self.contexts.values()):
            c.kill()
        for s in list(self.shells.values()):
            try:
                os.killpg(s.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(self.workdir, ignore_errors=True)


class Fake:
    def __init__(self, api_key, start_delay, max_timeout, quiet):
        self.api_key, self.start_delay, self.max_timeout, self.quiet = api_key, start_delay, max_timeout, quiet
        self.lock = threading.Lock()
        self.sandboxes = {}
        self.stats = new_stats()
        self.faults = Faults()
        self.main_port = self.execd_port = None
        self.stopping = False

    def bump(self, key, record=None, value=None):
        with self.lock:
            self.stats[key] += 1
            if record:
                self.stats[record].append(value)

    def get(self, sid):
        with self.lock:
            sb = self.sandboxes.get(sid)
            if sb is not None:
                sb.advance(self.start_delay)
            return sb

    def remove(self, sid):
        with self.lock:
            sb = self.sandboxes.pop(sid, None)
            if sb is not None:
                sb.dead = True
        if sb is not None:
            sb.destroy()
        return sb

    def kill_all(self):
        with self.lock:
            sbs = list(self.sandboxes.values())
            self.sandboxes.clear()
            for sb in sbs:
                sb.dead = True
        for sb in sbs:
            sb.destroy()

    def reaper(self):
        while not self.stopping:
            time.sleep(0.2)
            now = time.time()
            expired = []
            with self.lock:
                for sid, sb in list(self.sandboxes.items()):
                    sb.advance(self.start_delay)
                    if sb.expires is not None and now >= sb.expires:
                        expired.append(self.sandboxes.pop(sid))
                        sb.dead = True
                        self.stats["expired"] += 1
            for sb in expired:
                sb.destroy()


# ================================================================ HTTP

class Stream:
    """execd's event stream (§2.4): one chunk per event, flushed at once."""

    def __init__(self, h, sse):
        self.h, self.prefix = h, (b"data: " if sse else b"")

    def start(self):
        h = self.h
        h.send_response(200)
        for k, v in (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                     ("Connection", "keep-alive"), ("X-Accel-Buffering", "no"), ("Transfer-Encoding", "chunked")):
            h.send_header(k, v)
        h.end_headers()
        h.status = 200

    def chunk(self, data):
        self.h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.h.wfile.flush()

    def event(self, obj):
        self.chunk(self.prefix + go_json(obj) + b"\n\n")

    def bare(self, obj):
        """The typeless {code,message} object, unterminated (§2.7 busy context)."""
        self.chunk(self.prefix + go_json(obj))

    def end(self):
        self.h.wfile.write(b"0\r\n\r\n")
        self.h.wfile.flush()

    def abort(self):
        """Hang up in the middle of the chunked body."""
        self.h.close_connection = True
        try:
            self.h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sys_version = ""

    def version_string(self):
        return "uvicorn" if self.server.role == "main" else "fake-execd"

    def log_message(self, fmt, *args):
        if not self.server.fake.quiet:
            sys.stderr.write("opensandbox[%s]: %s - %s\n" % (self.server.role, self.address_string(), fmt % args))

    def log_error(self, fmt, *args):
        sys.stderr.write("opensandbox[%s]: error: %s\n" % (self.server.role, fmt % args))

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle(self):
        try:
            super().handle()
        except DISCONNECTS:
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = lambda self: self.dispatch()

    @property
    def fake(self):
        return self.server.fake

    # ------------------------------------------------------------ output
    def send_body(self, status, body, ctype, extra=None):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        if status != 204:
            self.send_header("Content-Length", str(len(body or b"")))
        if self.req_id:
            self.send_header("X-Request-ID", self.req_id)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.status = status
        if body:
            self.wfile.write(body)

    def send_json(self, status, obj, extra=None):
        self.send_body(status, py_json(obj), "application/json", extra)

    def api_error(self, status, code, message, extra=None):
        self.send_json(status, {"code": code, "message": message}, extra)

    def not_found(self, sid):
        self.api_error(404, "DOCKER::SANDBOX_NOT_FOUND", "Sandbox %s not found." % sid)

    def send_empty(self, status):
        self.send_body(status, None, None)

    def execd_json(self, status, obj):
        self.send_body(status, go_json(obj), "application/json; charset=utf-8")

    def execd_error(self, status, code, message):
        self.execd_json(status, {"code": code, "message": message})

    def send_text(self, status, text):
        self.send_body(status, text.encode(), "text/plain; charset=utf-8")

    def client_gone(self):
        try:
            r, _, _ = select.select([self.connection], [], [], 0)
            if not r:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
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

    def fastapi_body(self, raw):
        """FastAPI's body handling: (True, value) or (False, 422 detail list)."""
        if not raw:
            return False, [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]
        ctype = self.headers.get("Content-Type")
        is_json = True
        if ctype:
            mt = ctype.split(";")[0].strip().lower()
            main, _, sub = mt.partition("/")
            is_json = main == "application" and (sub == "json" or sub.endswith("+json"))
        if not is_json:
            return True, raw.decode("utf-8", "replace")  # the model validation then rejects a string
        try:
            return True, json.loads(raw)
        except ValueError as e:
            pos = getattr(e, "pos", 0)
            return False, [{"type": "json_invalid", "loc": ["body", pos], "msg": "JSON decode error",
                            "input": {}, "ctx": {"error": getattr(e, "msg", str(e))}}]

    # ------------------------------------------------------------ routing
    def dispatch(self):
        self.status, self.req_id = None, None
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query, keep_blank_values=True)
        raw = self.read_body()
        try:
            m = PROXY_RE.match(path)
            if m:
                return self.execd(m.group(1), m.group(2), m.group(3) or "", query, raw)
            if self.server.role == "execd":
                return self.send_text(404, "404 page not found")
            if path.startswith("/__"):
                return self.hooks(path, raw)
            return self.lifecycle(path, query, raw)
        except DISCONNECTS:
            raise
        except Exception:
            traceback.print_exc()
            if self.status is None:
                self.api_error(500, "GENERAL::UNKNOWN_ERROR", "fake opensandbox crashed: see its stderr")
            else:
                self.close_connection = True

    # ------------------------------------------------------------ test hooks
    def hooks(self, path, raw):
        f = self.fake
        route = (self.command, path)
        if route == ("GET", "/__stats"):
            with f.lock:
                s = json.loads(json.dumps(f.stats))
                s["live"] = list(f.sandboxes)
                s["states"] = {k: v.state for k, v in f.sandboxes.items()}
            s["execd_port"] = f.execd_port
            s["faults"] = f.faults.snapshot()
            return self.send_json(200, s)
        if route == ("POST", "/__reset"):
            f.kill_all()
            f.faults.clear()
            with f.lock:
                f.stats = new_stats()
            return self.send_json(200, {})
        if route == ("GET", "/__faults"):
            return self.send_json(200, {"faults": f.faults.snapshot()})
        if route == ("POST", "/__faults"):
            try:
                obj = json.loads(raw or b"{}")
            except ValueError:
                return self.send_json(400, {"error": "body is not JSON"})
            problem = f.faults.set(obj)
            if problem:
                return self.send_json(400, {"error": problem})
            return self.send_json(200, {"faults": f.faults.snapshot()})
        return self.send_json(404, {"detail": "Not Found"})

    # ------------------------------------------------------------ lifecycle (§1)
    ROUTES = (
        (re.compile(r"^/health$"), ("GET",), "health"),
        (re.compile(r"^/sandboxes$"), ("GET", "POST"), "collection"),
        (re.compile(r"^/sandboxes/([^/]+)$"), ("GET", "DELETE"), "item"),
        (re.compile(r"^/sandboxes/([^/]+)/endpoints/([^/]+)$"), ("GET",), "endpoint"),
        (re.compile(r"^/sandboxes/([^/]+)/renew-expiration$"), ("POST",), "renew"),
        (re.compile(r"^/sandboxes/([^/]+)/pause$"), ("POST",), "pause"),
        (re.compile(r"^/sandboxes/([^/]+)/resume$"), ("POST",), "resume"),
        (re.compile(r"^/sandboxes/([^/]+)/metadata$"), ("PATCH",), "metadata"),
    )

    def lifecycle(self, path, query, raw):
        f = self.fake
        self.req_id = self.headers.get("X-Request-ID") or uuid.uuid4().hex
        sub = path[3:] if path.startswith("/v1/") else path
        if sub not in ("/health", "/docs", "/redoc", "/openapi.json") and f.api_key is not None:
            given = self.headers.get("OPEN-SANDBOX-API-KEY")
            if not given:
                f.bump("auth_failures")
                return self.api_error(401, "MISSING_API_KEY", "Authentication credentials are missing. Provide "
                                      "API key via OPEN-SANDBOX-API-KEY header.")
            if not secrets.compare_digest(given.encode(), f.api_key.encode()):
                f.bump("auth_failures")
                return self.api_error(401, "INVALID_API_KEY", "Authentication credentials are invalid. Check "
                                      "your API key and try again.")
        for rx, methods, name in self.ROUTES:
            m = rx.match(sub)
            if not m:
                continue
            if self.command not in methods:
                return self.send_json(405, {"detail": "Method Not Allowed"}, {"Allow": ", ".join(methods)})
            args = m.groups()
            if name == "health":
                return self.send_json(200, {"status": "healthy"})
            if name == "collection":
                return self.create(raw) if self.command == "POST" else self.list_sandboxes(query)
            if name == "item":
                return self.get_sandbox(args[0]) if self.command == "GET" else self.delete_sandbox(args[0])
            return getattr(self, "lc_" + name)(*args, query=query, raw=raw)
        return self.send_json(404, {"detail": "Not Found"})

    def create(self, raw):
        f = self.fake
        ok, body = self.fastapi_body(raw)
        recorded = body if ok else raw.decode("utf-8", "replace")
        f.bump("creates", "create_bodies", recorded)
        if not ok:
            return self.send_json(422, {"detail": body})
        errs = validate_create_fields(body) or validate_create_model(body)
        if errs:
            return self.send_json(422, {"detail": errs})
        problem = validate_create_semantics(body, f.max_timeout)
        if problem:
            return self.api_error(*problem)
        delay = f.faults.take("create_delay")
        if delay:
            time.sleep(float(delay))
        status = f.faults.take("create_status")
        if status:
            return self.create_fault(int(status))
        hold = f.faults.take("pending_polls")
        fail = bool(f.faults.take("fail_start"))
        sb = Sandbox(body, fail, int(hold or 0))
        with f.lock:
            f.sandboxes[sb.id] = sb
            f.stats["created"] += 1
            if f.start_delay <= 0:
                sb.advance(0)
            view = sb.create_view()
        return self.send_json(202, view)

    def create_fault(self, status):
        known = {
            401: ("INVALID_API_KEY", "Authentication credentials are invalid. Check your API key and try again."),
            409: ("SANDBOX::CONFLICT", "Sandbox conflict (fake create_status fault)."),
            429: ("GENERAL::UNKNOWN_ERROR", "Too Many Requests"),
            500: ("DOCKER::SANDBOX_START_FAILED", "Failed to start sandbox container: fake create_status fault."),
            503: ("DOCKER::INITIALIZATION_ERROR", "Docker service is unavailable: fake create_status fault."),
            504: ("KUBERNETES::POD_READY_TIMEOUT", "Timed out waiting for the sandbox pod to become ready "
                  "(fake create_status fault)."),
        }
        code, msg = known.get(status, ("GENERAL::UNKNOWN_ERROR", "fake create_status fault"))
        extra = {"Retry-After": "1"} if status == 429 else None
        return self.api_error(status, code, msg, extra)

    def list_sandboxes(self, query):
        f = self.fake
        errs = []
        page = size = None
        for key, default, hi in (("page", 1, None), ("pageSize", 20, 200)):
            v = query.get(key, [str(default)])[-1]
            try:
                n = int(v)
            except ValueError:
                errs.append({"type": "int_parsing", "loc": ["query", key], "msg": "Input should be a valid "
                             "integer, unable to parse string as an integer", "input": v})
                continue
            if n < 1:
                errs.append({"type": "greater_than_equal", "loc": ["query", key], "msg": "Input should be greater "
                             "than or equal to 1", "input": v, "ctx": {"ge": 1}})
            elif hi and n > hi:
                errs.append({"type": "less_than_equal", "loc": ["query", key], "msg": "Input should be less than "
                             "or equal to %d" % hi, "input": v, "ctx": {"le": hi}})
            if key == "page":
                page = n
            else:
                size = n
        if errs:
            return self.send_json(422, {"detail": errs})
        want_meta = {}
        for mq in query.get("metadata", []):
            if not mq:
                continue
            try:
                pairs = parse_qs(mq, keep_blank_values=True, strict_parsing=True)
            except ValueError:
                return self.api_error(400, "INVALID_METADATA_FORMAT", "Invalid metadata filter %r: expected "
                                      "URL-encoded key=value pairs joined by '&'." % mq)
            want_meta.update({k: v[-1] for k, v in pairs.items()})
        states = set(query.get("state", []))
        with f.lock:
            items = []
            for sb in f.sandboxes.values():
                sb.advance(f.start_delay)
                if states and sb.state not in states:
                    continue
                md = sb.metadata or {}
                if any(md.get(k) != v for k, v in want_meta.items()):
                    continue
                items.append(sb.view())
        total = len(items)
        pages = (total + size - 1) // size
        chunk = items[(page - 1) * size:page * size]
        return self.send_json(200, {"items": chunk, "pagination": {
            "page": page, "pageSize": size, "totalItems": total, "totalPages": pages, "hasNextPage": page < pages}})

    def get_sandbox(self, sid):
        f = self.fake
        with f.lock:
            f.stats["polls"] += 1
            sb = f.sandboxes.get(sid)
            if sb is not None:
                if sb.state == "Pending" and sb.hold_polls > 0:
                    sb.hold_polls -= 1
                else:
                    sb.advance(f.start_delay)
                view = sb.view()
        if sb is None:
            return self.not_found(sid)
        return self.send_json(200, view)

    def delete_sandbox(self, sid):
        f = self.fake
        f.bump("deletes")
        if f.get(sid) is None:
            return self.not_found(sid)
        status = f.faults.take("delete_status")
        if status:
            status = int(status)
            code = "DOCKER::SANDBOX_DELETE_FAILED" if status == 500 else "GENERAL::UNKNOWN_ERROR"
            return self.api_error(status, code, "Failed to delete sandbox %s: fake delete_status fault." % sid)
        if f.remove(sid) is None:
            return self.not_found(sid)
        return self.send_empty(204)

    def lc_endpoint(self, sid, port_s, query, raw):
        f = self.fake
        f.bump("endpoint_lookups")
        errs = []
        try:
            port = int(port_s)
        except ValueError:
            port = None
            errs.append({"type": "int_parsing", "loc": ["path", "port"], "msg": "Input should be a valid integer, "
                         "unable to parse string as an integer", "input": port_s})
        use_proxy = False
        if "use_server_proxy" in query:
            v = query["use_server_proxy"][-1].lower()
            if v in ("1", "true", "t", "yes", "y", "on"):
                use_proxy = True
            elif v not in ("0", "false", "f", "no", "n", "off"):
                errs.append({"type": "bool_parsing", "loc": ["query", "use_server_proxy"], "msg": "Input should "
                             "be a valid boolean, unable to interpret input", "input": query["use_server_proxy"][-1]})
        if errs:
            return self.send_json(422, {"detail": errs})
        if "expires" in query and use_proxy:
            return self.api_error(400, "SANDBOX::INVALID_PARAMETER", "expires cannot be combined with "
                                  "use_server_proxy.")
        if "expires" in query:
            return self.api_error(400, "SANDBOX::API_NOT_SUPPORTED", "Signed endpoint routes (expires) are not "
                                  "supported by the Docker runtime.")
        if not 1 <= port <= 65535:
            return self.api_error(400, "DOCKER::INVALID_PORT", "Port must be between 1 and 65535, got %d." % port)
        sb = f.get(sid)
        if sb is None:
            return self.not_found(sid)
        if f.faults.take("endpoint_404"):
            return self.api_error(404, "KUBERNETES::POD_IP_NOT_AVAILABLE", "Pod IP is not yet available for "
                                  "sandbox %s." % sid)
        host_port = f.main_port if use_proxy else f.execd_port
        return self.send_json(200, {
            "endpoint": "127.0.0.1:%d/sandboxes/%s/proxy/%d" % (host_port, sid, port),
            "headers": {"OpenSandbox-Ingress-To": "%s-%d" % (sid, port), "X-EXECD-ACCESS-TOKEN": sb.token}})

    def lc_renew(self, sid, query, raw):
        f = self.fake
        ok, body = self.fastapi_body(raw)
        f.bump("renews", "renew_bodies", body if ok else raw.decode("utf-8", "replace"))
        if not ok:
            return self.send_json(422, {"detail": body})
        errs = []
        when = None
        if not isinstance(body, dict):
            errs.append(perr("model_attributes_type", [], "Input should be a valid dictionary or object to "
                             "extract fields from", body))
        elif "expiresAt" not in body:
            errs.append(perr("missing", ["expiresAt"], "Field required", body))
        else:
            when = parse_time(body["expiresAt"])
            if when is None:
                errs.append(perr("datetime_from_date_parsing", ["expiresAt"], "Input should be a valid datetime or "
                                 "date, invalid character in year", body["expiresAt"], {"error": "invalid "
                                                                                         "character in year"}))
        if errs:
            return self.send_json(422, {"detail": errs})
        with f.lock:
            sb = f.sandboxes.get(sid)
            if sb is None:
                problem = "404"
            elif sb.timeout is None:
                problem = "409"
            elif when <= time.time():
                problem = "400"
            else:
                problem = None
                sb.expires = when
        if problem == "404":
            return self.not_found(sid)
        if problem == "409":
            return self.api_error(409, "DOCKER::INVALID_EXPIRATION", "Sandbox %s was created without a timeout "
                                  "(manual cleanup); its expiration cannot be renewed." % sid)
        if problem == "400":
            return self.api_error(400, "DOCKER::INVALID_EXPIRATION", "New expiration time must be in the future.")
        return self.send_json(200, {"expiresAt": rfc3339(when)})

    def lc_pause(self, sid, query, raw):
        f = self.fake
        with f.lock:
            sb = f.sandboxes.get(sid)
            if sb is not None:
                sb.advance(f.start_delay)
                ok = sb.state == "Running"
                if ok:
                    sb.set_state("Paused", "CONTAINER_PAUSED", "Sandbox container is paused.")
        if sb is None:
            return self.not_found(sid)
        if not ok:
            return self.api_error(409, "DOCKER::SANDBOX_NOT_RUNNING", "Sandbox %s is not running." % sid)
        sb.processes_signal(signal.SIGSTOP)
        return self.send_body(202, b"", None)

    def lc_resume(self, sid, query, raw):
        f = self.fake
        with f.lock:
            sb = f.sandboxes.get(sid)
            ok = sb is not None and sb.state == "Paused"
            if ok:
                sb.set_state("Running", "CONTAINER_RUNNING", "Sandbox container is running.")
        if sb is None:
            return self.not_found(sid)
        if not ok:
            return self.api_error(409, "DOCKER::SANDBOX_NOT_PAUSED", "Sandbox %s is not paused." % sid)
        sb.processes_signal(signal.SIGCONT)
        return self.send_body(202, b"", None)

    def lc_metadata(self, sid, query, raw):
        f = self.fake
        ok, body = self.fastapi_body(raw)
        if ok and not isinstance(body, dict):
            ok, body = False, [perr("dict_type", [], "Input should be a valid dictionary", body)]
        if ok:
            errs = []
            for k, v in body.items():
                if v is not None:
                    v_str(errs, [k], v)
            if errs:
                ok, body = False, errs
        if not ok:
            return self.send_json(422, {"detail": body})
        sb = f.get(sid)
        if sb is None:
            return self.not_found(sid)
        for k, v in body.items():
            p = label_problem(k, v) if v is not None else None
            if p:
                return self.api_error(400, "SANDBOX::INVALID_METADATA_LABEL", p)
        with f.lock:
            md = dict(sb.metadata or {})
            for k, v in body.items():
                if v is None:
                    md.pop(k, None)
                else:
                    md[k] = v
            sb.metadata = md
            view = sb.view()
        return self.send_json(200, view)

    # ------------------------------------------------------------ execd (§2)
    def execd(self, sid, port_s, sub, query, raw):
        f = self.fake
        via_server_proxy = self.server.role == "main"
        sb = f.get(sid)
        if sb is None:
            self.req_id = self.headers.get("X-Request-ID") or uuid.uuid4().hex if via_server_proxy else None
            return self.not_found(sid)
        if port_s != str(EXECD_PORT):
            return self.send_text(502, "Bad Gateway")
        if sb.state != "Running":
            return self.send_text(503, "execd is not reachable: sandbox %s is %s" % (sid, sb.state))
        required = [("X-EXECD-ACCESS-TOKEN", sb.token)]
        if not via_server_proxy:
            required.append(("OpenSandbox-Ingress-To", "%s-%d" % (sid, EXECD_PORT)))
        for name, want in required:
            got = self.headers.get(name)
            if got is None or not secrets.compare_digest(got.encode(), want.encode()):
                f.bump("execd_auth_failures")
                return self.execd_json(401, {"error": "Unauthorized: invalid or missing header %s" % name})
        route = (self.command, sub)
        if route == ("GET", "/ping"):
            f.bump("pings")
            if f.faults.take("ping_503"):
                return self.send_text(503, "execd is starting (fake ping_503 fault)")
            return self.send_body(200, b"", None)
        if route == ("POST", "/code"):
            return self.code(sb, raw)
        if route == ("DELETE", "/code"):
            return self.code_interrupt(sb, query)
        if route == ("POST", "/code/context"):
            return self.context_create(sb, raw)
        if route == ("GET", "/code/contexts"):
            lang = query.get("language", [""])[-1]
            return self.execd_json(200, [{"id": c.id, "language": c.language} for c in list(sb.contexts.values())
                                         if not lang or c.language == lang])
        if route == ("DELETE", "/code/contexts"):
            lang = query.get("language", [""])[-1]
            if not lang:
                return self.execd_error(400, "MISSING_QUERY", "missing query parameter 'language'")
            for c in [c for c in list(sb.contexts.values()) if c.language == lang]:
                sb.contexts.pop(c.id, None)
                c.kill()
            return self.send_body(200, b"", None)
        files = FILE_ROUTES.get(route)
        if files:
            return getattr(self, files)(sb, query, raw)
        m = re.match(r"^/code/contexts/([^/]+)$", sub)
        if m and self.command in ("GET", "DELETE"):
            c = sb.contexts.get(m.group(1))
            if c is None:
                return self.execd_error(404, "CONTEXT_NOT_FOUND", "context %s not found" % m.group(1))
            if self.command == "GET":
                return self.execd_json(200, {"id": c.id, "language": c.language})
            sb.contexts.pop(c.id, None)
            c.kill()
            return self.send_body(200, b"", None)
        return self.send_text(404, "404 page not found")

    # ------------------------------------------------------------ execd's files (§2.9; alibaba/OpenSandbox
    # components/execd/pkg/web/controller/{filesystem,filesystem_upload,filesystem_download,utils}.go)
    def fs_expand(self, sb, path, absolute):
        """pathutil.ExpandPath / ExpandAbsPath: (sandbox path, None) or (None, error text)."""
        if path == "":
            return (WORKDIR if absolute else ""), None
        env = {"HOME": EXECD_HOME, "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
        env.update(sb.env)
        names = [a or b for a, b in ENV_VAR_RE.findall(path)]
        missing = sorted({n for n in names if n not in env})
        if missing:
            return None, "path references undefined environment variables: %s" % ",".join(missing)
        path = ENV_VAR_RE.sub(lambda m: env[m.group(1) or m.group(2)], path)
        if path == "~":
            path = EXECD_HOME
        elif path.startswith("~/") or path.startswith("~\\"):
            path = sbfiles.go_clean(EXECD_HOME + "/" + path[2:])
        if absolute:
            path = sbfiles.go_clean(path if path.startswith("/") else WORKDIR + "/" + path)
        return path, None

    def fs_real(self, sb, v):
        """The host path of a sandbox path (a relative one is relative to execd's cwd)."""
        v = v if v.startswith("/") else WORKDIR + "/" + v
        return sbfiles.real_path(sb.workdir, sbfiles.go_clean(v))

    def fs_file_error(self, e, text):
        """handleFileError."""
        if isinstance(e, FileNotFoundError):
            return self.execd_error(404, "FILE_NOT_FOUND", "file not found. %s" % text)
        return self.execd_error(500, "RUNTIME_ERROR", "error accessing file: %s" % text)

    @staticmethod
    def fs_info_of(sb, v, info):
        """buildFileInfo: model.FileInfo as Go marshals it (time.Time in UTC, mode's octal digits)."""
        fmt = stat.S_IFMT(info.st_mode)
        t = {stat.S_IFLNK: "symlink", stat.S_IFDIR: "directory", stat.S_IFREG: "file"}.get(fmt, "other")

        def name(i):  # execd is root: files it and the code make are root's (whoever runs this fake)
            return "root" if i in (0, os.getuid(), os.getgid()) else str(i)
        return {"path": v, "type": t, "size": info.st_size, "modified_at": sbfiles.go_time_json(info.st_mtime_ns),
                "created_at": sbfiles.go_time_json(info.st_ctime_ns), "owner": name(info.st_uid),
                "group": name(info.st_gid), "mode": int(oct(info.st_mode & 0o777)[2:])}

    def fs_download(self, sb, query, raw):
        f = self.fake
        path = query.get("path", [""])[0]
        if path == "":
            return self.execd_error(400, "MISSING_QUERY", "missing query parameter 'path'")
        v, err = self.fs_expand(sb, path, False)
        if err:
            return self.execd_error(500, "RUNTIME_ERROR", "error resolving file path: %s. %s" % (path, err))
        real = self.fs_real(sb, v)
        try:
            fd = os.open(real, os.O_RDONLY)
        except OSError as e:
            return self.fs_file_error(e, "open %s: %s" % (v, go_errno(e)))
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fd)
            data = None if stat.S_ISDIR(info.st_mode) else fh.read()
        status = f.faults.take("download_status")
        if status:
            status = int(status) if not isinstance(status, bool) else 500
            return self.execd_error(status, "RUNTIME_ERROR", "fake download_status fault")
        base = posixpath.basename(sbfiles.go_clean(v))
        if all(ord(c) < 128 for c in base):
            cd = 'attachment; filename="%s"' % base
        else:
            enc = quote(base, safe="!$&'()*+,;=:@~")     # url.PathEscape
            cd = 'attachment; filename="%s"; filename*=UTF-8\'\'%s' % (enc, enc)
        extra = {"Content-Disposition": cd}
        if data is None:
            # a directory: execd sets its size as Content-Length, then copying it fails (EISDIR) and
            # the connection ends without the body (read from the code, not observed)
            return self.fs_body(200, b"", dict(extra, **{"Content-Length": str(info.st_size)}), True)
        drop = bool(f.faults.take("download_drop"))
        f.bump("downloads")
        size = len(data)
        rng = self.headers.get("Range")
        if rng:
            ranges = execd_parse_range(rng, size)
            if ranges is None:
                return self.execd_json(416, {"code": "UNKNOWN"})
            if ranges:
                a, n = ranges[0]
                extra["Content-Range"] = "bytes %d-%d/%d" % (a, a + n - 1, size)
                return self.fs_body(206, data[a:a + n], extra, drop)
            # no range overlaps: http.ServeContent answers the Range header itself
            return self.send_body(416, b"invalid range: failed to overlap\n", "text/plain; charset=utf-8",
                                  {"Content-Range": "bytes */%d" % size, "X-Content-Type-Options": "nosniff",
                                   "Content-Disposition": cd})
        extra["Last-Modified"] = sbfiles.http_date(info.st_mtime)
        ims = sbfiles.parse_http_date(self.headers.get("If-Modified-Since", ""))
        if ims is not None and int(info.st_mtime) <= ims:
            return self.send_body(304, b"", None, {"Last-Modified": extra["Last-Modified"], "Content-Disposition": cd})
        extra["Accept-Ranges"] = "bytes"
        return self.fs_body(200, data, extra, drop)

    def fs_body(self, status, body, extra, drop):
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        if "Content-Length" not in extra:
            self.send_header("Content-Length", str(len(body)))
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.status = status
        self.wfile.write(body[:len(body) // 2] if drop else body)
        if drop:
            self.wfile.flush()
            Stream(self, False).abort()

    def fs_upload(self, sb, query, raw):
        f = self.fake
        try:
            parts = sbfiles.parse_multipart(raw, self.headers.get("Content-Type", "")) \
                if self.headers.get("Content-Type", "").lower().startswith("multipart/form-data") else None
        except ValueError:
            parts = None
        if parts is None:
            return self.execd_error(400, "INVALID_FILE", "multipart form is empty")
        # Go's multipart.Reader.ReadForm: a part with a filename is a file, the rest are values
        metas = [p for p in parts if p[1] == "metadata" and p[2]]
        datas = [p for p in parts if p[1] == "file" and p[2]]
        if not metas:
            return self.execd_error(400, "INVALID_FILE_METADATA", "metadata file is missing")
        if not datas:
            return self.execd_error(400, "INVALID_FILE_CONTENT", "file is missing")
        if len(metas) != len(datas):
            return self.execd_error(400, "INVALID_FILE", "metadata and file count mismatch: %d vs %d"
                                    % (len(metas), len(datas)))
        status = f.faults.take("files_status")
        if status:
            status = int(status) if not isinstance(status, bool) else 500
            return self.execd_error(status, "RUNTIME_ERROR", "fake files_status fault")
        for meta_part, file_part in zip(metas, datas):
            try:
                meta = json.loads(meta_part[3] or b"null")
            except ValueError as e:
                return self.execd_error(400, "INVALID_FILE_METADATA", "invalid metadata format. %s" % e)
            problem = go_unmarshal_problem(meta, (("path", str), ("owner", str), ("group", str), ("mode", int)),
                                           "FileMetadata")
            if problem:
                return self.execd_error(400, "INVALID_FILE_METADATA", "invalid metadata format. %s" % problem)
            meta = meta or {}
            if not meta.get("path"):
                return self.execd_error(400, "INVALID_FILE_METADATA", "metadata path is empty")
            target = meta["path"]
            v, err = self.fs_expand(sb, target, False)
            if err:
                return self.execd_error(500, "RUNTIME_ERROR", "error resolving target path %s. %s" % (target, err))
            real = self.fs_real(sb, v)
            parent = posixpath.dirname(v) or "."
            try:
                os.makedirs(os.path.dirname(real), exist_ok=True)
            except OSError as e:
                return self.execd_error(500, "RUNTIME_ERROR", "error creating target directory %s. mkdir %s: %s"
                                        % (parent, parent, go_errno(e)))
            try:
                fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o777)
            except OSError as e:
                return self.execd_error(500, "RUNTIME_ERROR", "error opening destination file %s. open %s: %s"
                                        % (v, v, go_errno(e)))
            try:
                view = memoryview(file_part[3])
                while view:
                    view = view[os.write(fd, view):]
            except OSError as e:
                return self.execd_error(500, "RUNTIME_ERROR", "error copying file %s. write %s: %s"
                                        % (v, v, go_errno(e)))
            finally:
                os.close(fd)
            err = fs_chmod(real, meta.get("mode") or 0)
            if err:
                return self.execd_error(500, "RUNTIME_ERROR", "error chmoding file %s. %s" % (v, err))
            f.bump("uploads")
        return self.send_body(200, b"", None)

    def fs_info(self, sb, query, raw):
        out = {}
        for p in query.get("path", []):
            v, err = self.fs_expand(sb, p, True)
            if err:
                return self.execd_error(500, "RUNTIME_ERROR", "error accessing file: invalid path %s: %s" % (p, err))
            try:
                info = os.lstat(self.fs_real(sb, v))
            except OSError as e:
                if isinstance(e, FileNotFoundError):
                    return self.fs_file_error(e, "file not found: %s: lstat %s: %s" % (p, v, go_errno(e)))
                return self.fs_file_error(e, "error accessing file %s: lstat %s: %s" % (p, v, go_errno(e)))
            out[p] = self.fs_info_of(sb, v, info)
        return self.execd_json(200, dict(sorted(out.items())))

    def fs_search(self, sb, query, raw):
        path = query.get("path", [""])[0]
        if path == "":
            return self.execd_error(400, "MISSING_QUERY", "missing query parameter 'path'")
        v, err = self.fs_expand(sb, path, True)
        if err:
            return self.execd_error(500, "RUNTIME_ERROR", "error converting path %s to absolute. %s" % (path, err))
        real = self.fs_real(sb, v)
        try:
            os.stat(real)
        except OSError as e:
            return self.fs_file_error(e, "stat %s: %s" % (v, go_errno(e)))
        pattern = query.get("pattern", [""])[0] or "**"
        found = []

        def walk(r, vp):       # filepath.Walk: lexical order, symlinks not followed, directories not listed
            try:
                info = os.lstat(r)
            except FileNotFoundError:
                return
            if stat.S_ISDIR(info.st_mode):
                for n in sorted(os.listdir(r), key=os.fsencode):
                    walk(os.path.join(r, n), sbfiles.go_clean(vp + "/" + n))
                return
            if sbfiles.doublestar_basename_match(pattern, posixpath.basename(r)):
                found.append(self.fs_info_of(sb, vp, info))
        try:
            walk(real, v)
            lie = self.fake.faults.take("search_size")
            for info in found if lie is not None else []:
                info["size"] = int(lie)
        except ValueError:
            return self.execd_error(500, "RUNTIME_ERROR", "error searching files. invalid pattern %s: syntax error "
                                                          "in pattern" % pattern)
        except OSError as e:
            return self.execd_error(500, "RUNTIME_ERROR", "error searching files. %s" % go_errno(e))
        return self.execd_json(200, found)

    def fs_list(self, sb, query, raw):
        f = self.fake
        path = query.get("path", [""])[0]
        if path == "":
            return self.execd_error(400, "MISSING_QUERY", "missing query parameter 'path'")
        depth = 1
        raw_depth = query.get("depth", [""])[0]
        if raw_depth != "":
            if not re.fullmatch(r"[+-]?\d+", raw_depth) or int(raw_depth) < 0:
                return self.execd_error(400, "INVALID_REQUEST_BODY", "invalid query parameter 'depth': %s" % raw_depth)
            depth = int(raw_depth)
        status = f.faults.take("listdir_status")
        if status:
            status = int(status) if not isinstance(status, bool) else 500
            return self.execd_error(status, "RUNTIME_ERROR", "fake listdir_status fault")
        v, err = self.fs_expand(sb, path, True)
        if err:
            return self.execd_error(500, "RUNTIME_ERROR", "error converting path %s to absolute. %s" % (path, err))
        real = self.fs_real(sb, v)
        try:
            info = os.lstat(real)
        except OSError as e:
            return self.fs_file_error(e, "lstat %s: %s" % (v, go_errno(e)))
        if stat.S_ISLNK(info.st_mode):
            return self.execd_error(400, "INVALID_REQUEST_BODY", "path is a symbolic link, refusing to traverse: %s" % v)
        if not stat.S_ISDIR(info.st_mode):
            return self.execd_error(400, "INVALID_REQUEST_BODY", "path is not a directory: %s" % v)
        entries = []

        def walk(r, vp, level):
            for n in sorted(os.listdir(r), key=os.fsencode):
                cr, cv = os.path.join(r, n), sbfiles.go_clean(vp + "/" + n)
                ci = os.lstat(cr)
                entries.append(self.fs_info_of(sb, cv, ci))
                if stat.S_ISDIR(ci.st_mode) and level + 1 < depth:
                    walk(cr, cv, level + 1)
        if depth:
            try:
                walk(real, v, 0)
            except OSError as e:
                return self.execd_error(500, "RUNTIME_ERROR", "error listing directory %s. %s" % (v, go_errno(e)))
        f.bump("listdirs")
        return self.execd_json(200, entries)

    def fs_mkdirs(self, sb, query, raw):
        try:
            body = json.loads(raw or b"")
        except ValueError as e:
            return self.execd_error(400, "INVALID_REQUEST_BODY", "error parsing request, MAYBE invalid body format. %s"
                                    % ("EOF" if not raw else e))
        if body is not None and not isinstance(body, dict):
            return self.execd_error(400, "INVALID_REQUEST_BODY", "error parsing request, MAYBE invalid body format. "
                                    "json: cannot unmarshal %s into Go value of type map[string]model.Permission"
                                    % go_json_kind(body))
        for d, perm in (body or {}).items():
            problem = go_unmarshal_problem(perm, (("owner", str), ("group", str), ("mode", int)), "Permission")
            if problem:
                return self.execd_error(400, "INVALID_REQUEST_BODY", "error parsing request, MAYBE invalid body "
                                        "format. %s" % problem)
        for d, perm in (body or {}).items():
            v, err = self.fs_expand(sb, d, True)
            if err:
                return self.execd_error(500, "RUNTIME_ERROR", "error accessing file: %s" % err)
            real = self.fs_real(sb, v)
            try:
                os.makedirs(real, exist_ok=True)
                if not os.path.isdir(real):
                    raise NotADirectoryError(20, "not a directory")
            except OSError as e:
                return self.fs_file_error(e, "mkdir %s: %s" % (v, go_errno(e)))
            err = fs_chmod(real, (perm or {}).get("mode") or 0)
            if err:
                return self.execd_error(500, "RUNTIME_ERROR", "error accessing file: %s" % err)
        return self.send_body(200, b"", None)

    def fs_remove(self, sb, query, raw):
        for p in query.get("path", []):
            v, err = self.fs_expand(sb, p, True)
            if err:
                return self.execd_error(500, "RUNTIME_ERROR", "error removing file %s. invalid path: %s" % (p, err))
            real = self.fs_real(sb, v)
            try:
                if stat.S_ISDIR(os.stat(real).st_mode):
                    return self.execd_error(500, "RUNTIME_ERROR", "error removing file %s. path is a directory: %s"
                                            % (p, p))
                os.remove(real)
            except FileNotFoundError:
                continue
            except OSError as e:
                return self.execd_error(500, "RUNTIME_ERROR", "error removing file %s. failed to remove file: "
                                        "remove %s: %s" % (p, v, go_errno(e)))
        return self.send_body(200, b"", None)

    def context_create(self, sb, raw):
        try:
            body = json.loads(raw or b"null")
        except ValueError as e:
            return self.execd_error(400, "INVALID_REQUEST_BODY", "invalid request body: %s" % e)
        lang = body.get("language") if isinstance(body, dict) else None
        if not isinstance(lang, str) or not lang:
            return self.execd_error(400, "INVALID_REQUEST_BODY", "invalid request, validation error Key: "
                                    "'CodeContextRequest.Language' Error:Field validation for 'Language' failed "
                                    "on the 'required' tag")
        if lang != "python":
            return self.execd_error(500, "RUNTIME_ERROR", "error creating code context. unknown language: %s" % lang)
        cwd = body.get("cwd")
        real = None
        if isinstance(cwd, str) and cwd:
            # (assumed: execd starts the kernel there, and a missing directory fails the create)
            v, err = self.fs_expand(sb, cwd, True)
            real = None if err else self.fs_real(sb, v)
            if real is None or not os.path.isdir(real):
                return self.execd_error(500, "RUNTIME_ERROR", "error creating code context. chdir %s: no such "
                                                              "file or directory" % cwd)
        c = Context(sb, lang, cwd=real)
        try:
            c.ensure()
        except Exception as e:
            return self.execd_error(500, "RUNTIME_ERROR", "error creating code context. %s" % e)
        if sb.dead:
            c.kill()
            return self.not_found(sb.id)
        sb.contexts[c.id] = c
        self.fake.bump("contexts")
        return self.execd_json(200, {"id": c.id, "language": c.language})

    def code_interrupt(self, sb, query):
        cid = query.get("id", [""])[-1]
        if not cid:
            return self.execd_error(400, "MISSING_QUERY", "missing query parameter 'id'")
        c = sb.contexts.get(cid)
        if c is not None:
            c.signal(signal.SIGINT)
            return self.send_body(200, b"", None)
        s = sb.shells.get(cid)
        if s is not None:
            s.terminate()
            return self.send_body(200, b"", None)
        return self.execd_error(500, "RUNTIME_ERROR", "error interrupting code: no such session")

    def code(self, sb, raw):
        f = self.fake
        try:
            body = json.loads(raw or b"null")
        except ValueError as e:
            body = None
            f.bump("codes", "code_bodies", raw.decode("utf-8", "replace"))
            return self.execd_error(400, "INVALID_REQUEST_BODY", "invalid request, validation error %s" % e)
        f.bump("codes", "code_bodies", body)
        if not isinstance(body, dict) or not isinstance(body.get("code"), str) or not body["code"]:
            return self.execd_error(400, "INVALID_REQUEST_BODY", "invalid request, validation error Key: "
                                    "'RunCodeRequest.Code' Error:Field validation for 'Code' failed on the "
                                    "'required' tag")
        ctx = body.get("context")
        ctx = ctx if isinstance(ctx, dict) else {}
        lang, cid = ctx.get("language") or "", ctx.get("id") or ""
        if not isinstance(lang, str) or not isinstance(cid, str):
            return self.execd_error(400, "INVALID_REQUEST_BODY", "invalid request, validation error context "
                                    "fields must be strings")
        if lang == "":
            return self.code_shell(sb, body["code"])
        if lang != "python":
            return self.execd_error(500, "RUNTIME_ERROR", "unknown language: %s" % lang)
        if cid:
            c = sb.contexts.get(cid)
            if c is None or c.language != lang:
                return self.execd_error(500, "RUNTIME_ERROR", "error running codes context not found")
        else:
            with f.lock:
                c = next((x for x in sb.contexts.values() if x.default and x.language == lang), None)
                if c is None:
                    c = Context(sb, lang, default=True)
                    sb.contexts[c.id] = c
        return self.code_python(sb, c, body["code"])

    def stream_faults(self):
        f = self.fake
        return {"sse": bool(f.faults.take("framing_sse")), "error_object": f.faults.take("code_error_object"),
                "hang": bool(f.faults.take("code_hang")), "drop": f.faults.take("code_drop")}

    def hang(self, sb, stream):
        while not sb.dead and not self.fake.stopping:
            if self.client_gone():
                self.close_connection = True
                return
            time.sleep(0.2)
        stream.abort()

    def code_python(self, sb, c, code):
        f = self.fake
        if not c.run_lock.acquire(blocking=False):
            stream = Stream(self, bool(f.faults.take("framing_sse")))
            stream.start()
            stream.event(event("init", text=c.id))
            stream.event(event("ping", text="pong"))
            stream.bare({"code": "RUNTIME_ERROR", "message": "error running codes session is busy"})
            stream.end()
            return
        try:
            try:
                c.ensure()
                while True:  # forget what a previous, abandoned run left behind
                    msg = c.q.get_nowait()
                    if msg.get("t") == "exit":
                        c.ensure()
            except queue.Empty:
                pass
            except Exception as e:
                return self.execd_error(500, "RUNTIME_ERROR", "error running codes %s" % e)
            if sb.dead:  # deleted while the kernel was starting
                c.kill()
                return self.not_found(sb.id)
            flt = self.stream_faults()
            stream = Stream(self, flt["sse"])
            stream.start()
            t0 = time.monotonic()
            stream.event(event("init", text=c.id))
            stream.event(event("ping", text="pong"))
            if flt["error_object"]:
                msg = flt["error_object"] if isinstance(flt["error_object"], str) else \
                    "error running codes session is busy"
                stream.bare({"code": "RUNTIME_ERROR", "message": msg})
                return stream.end()
            if flt["hang"]:
                return self.hang(sb, stream)
            c.count += 1
            q = c.q
            try:
                c.send({"op": "run", "code": code, "count": c.count})
            except (OSError, ValueError):
                q.put({"t": "exit"})
            return self.pump(stream, q, sb, flt["drop"], t0, c.count, lambda: c.interrupt_and_drain(q))
        finally:
            c.run_lock.release()

    def code_shell(self, sb, code):
        """Empty context.language: execd runs the code as a shell command (§2.3, §2.7)."""
        flt = self.stream_faults()
        stream = Stream(self, flt["sse"])
        q = queue.Queue()
        try:
            proc = subprocess.Popen(["bash", "-c", code], cwd=sb.cwd, env=dict(os.environ, **sb.env),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as e:
            stream.start()
            stream.event(event("init", text=uuid.uuid4().hex))
            stream.event(event("ping", text="pong"))
            stream.event(event("error", error={"ename": "CommandExecError", "evalue": str(e), "traceback": [str(e)]}))
            return stream.end()
        run = ShellRun(proc)
        sb.shells[run.id] = run

        def reader(pipe, name):
            for line in pipe:
                text = line.decode("utf-8", "replace")
                text = text[:-1] if text.endswith("\n") else text
                text = text[:-1] if text.endswith("\r") else text
                q.put({"t": name, "text": text or "\n"})
            pipe.close()

        readers = [threading.Thread(target=reader, args=(proc.stdout, "stdout"), daemon=True),
                   threading.Thread(target=reader, args=(proc.stderr, "stderr"), daemon=True)]
        for r in readers:
            r.start()

        def waiter():
            for r in readers:
                r.join()
            q.put({"t": "cmd_exit", "rc": proc.wait()})
            sb.shells.pop(run.id, None)

        threading.Thread(target=waiter, daemon=True).start()
        if sb.dead:
            run.terminate()
        stream.start()
        t0 = time.monotonic()
        stream.event(event("init", text=run.id))
        stream.event(event("ping", text="pong"))
        if flt["error_object"]:
            run.terminate()
            msg = flt["error_object"] if isinstance(flt["error_object"], str) else "error running codes session is busy"
            stream.bare({"code": "RUNTIME_ERROR", "message": msg})
            return stream.end()
        if flt["hang"]:
            self.hang(sb, stream)
            return run.terminate()
        return self.pump(stream, q, sb, flt["drop"], t0, 0, run.terminate)

    def pump(self, stream, q, sb, drop, t0, count, on_gone):
        """Relay a run's messages as execd events until it ends."""
        f = self.fake
        next_ping = t0 + PING_EVERY
        finished = False  # the run itself is over: a client leaving now interrupts nothing
        try:
            while True:
                now = time.monotonic()
                if now >= next_ping:
                    stream.event(event("ping", text="pong"))
                    next_ping = now + PING_EVERY
                try:
                    msg = q.get(timeout=max(0.0, min(0.2, next_ping - now)))
                except queue.Empty:
                    if sb.dead:
                        return stream.abort()
                    if self.client_gone():
                        raise ClientGone()
                    continue
                t = msg.get("t")
                if t in ("stdout", "stderr"):
                    if not msg.get("text"):
                        continue
                    stream.event(event(t, text=msg["text"]))
                elif t == "display":
                    f.bump("displays_dropped")  # execd forwards no display_data (§2.6)
                    continue
                elif t == "result":
                    data = dict(msg.get("data") or {})
                    if "text/plain" in data:
                        data["text"] = data.pop("text/plain")
                    stream.event(event("execution_count", execution_count=count))
                    stream.event(event("result", results=dict(sorted(data.items()))))
                elif t == "error":
                    stream.event(event("status", text="error"))
                    stream.event(event("error", error={"ename": msg.get("ename", ""), "evalue": msg.get("evalue", ""),
                                                      "traceback": msg.get("traceback")}))
                elif t == "exit":
                    finished = True
                    if sb.dead:
                        return stream.abort()
                    stream.bare({"code": "RUNTIME_ERROR", "message": "error running codes kernel died unexpectedly"})
                    return stream.end()
                elif t == "done":
                    finished = True
                    break
                elif t == "cmd_exit":
                    finished = True
                    if sb.dead:
                        return stream.abort()
                    rc = msg["rc"]
                    if rc != 0:
                        if drop:
                            return self.drop(stream, drop, None)
                        evalue = str(rc) if rc > 0 else "-1"
                        trace = "exit status %d" % rc if rc > 0 else "signal: %s" % signal.Signals(-rc).name.lower()[3:]
                        stream.event(event("error", error={"ename": "CommandExecError", "evalue": evalue,
                                                          "traceback": [trace]}))
                        return stream.end()
                    break
                else:
                    continue
                if drop:
                    return self.drop(stream, drop, on_gone)
            if drop:
                return self.drop(stream, drop, None)
            ms = int((time.monotonic() - t0) * 1000)
            stream.event(event("execution_complete", execution_time=ms))
            stream.end()
        except (ClientGone,) + DISCONNECTS:
            self.close_connection = True
            if not finished:
                f.bump("interrupts")
                on_gone()

    def drop(self, stream, how, on_gone):
        """code_drop fault: end the stream without its terminal event."""
        if how == "clean":
            stream.end()
            self.close_connection = True
        else:
            stream.abort()
        if on_gone is not None:
            on_gone()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], DISCONNECTS):
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description="Fake OpenSandbox server + execd for sandgate tests.")
    ap.add_argument("--port", type=int, default=0, help="lifecycle API port (0 picks a free one)")
    ap.add_argument("--execd-port", type=int, default=0, help="execd port (0 picks a free one)")
    ap.add_argument("--port-file", help="write the lifecycle port here (atomically)")
    ap.add_argument("--api-key", help="require OPEN-SANDBOX-API-KEY: KEY on the lifecycle API")
    ap.add_argument("--quiet", action="store_true", help="no per-request log lines")
    ap.add_argument("--start-delay", type=float, default=0.3,
                    help="seconds a new sandbox stays Pending (0: create answers Running, like real servers)")
    ap.add_argument("--max-timeout", type=int, default=86400, help="server.max_sandbox_timeout_seconds")
    args = ap.parse_args()

    fake = Fake(args.api_key, max(0.0, args.start_delay), args.max_timeout, args.quiet)
    main_srv = Server(("127.0.0.1", args.port), Handler)
    execd_srv = Server(("127.0.0.1", args.execd_port), Handler)
    for srv, role in ((main_srv, "main"), (execd_srv, "execd")):
        srv.fake, srv.role = fake, role
    fake.main_port, fake.execd_port = main_srv.server_address[1], execd_srv.server_address[1]

    def stop(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=fake.reaper, daemon=True).start()
    threading.Thread(target=execd_srv.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(str(fake.main_port))
        os.replace(tmp, args.port_file)
    print("listening on 127.0.0.1:%d execd 127.0.0.1:%d" % (fake.main_port, fake.execd_port), flush=True)
    try:
        main_srv.serve_forever(poll_interval=0.2)
    finally:
        fake.stopping = True
        fake.kill_all()
        main_srv.server_close()
        execd_srv.server_close()


if __name__ == "__main__":
    main()
