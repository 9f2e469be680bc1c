"""sandgate's local kernel: runs Python cells for one sandbox.

Started by sandboxd under bubblewrap as
    /usr/bin/python3 -I /sandgate/kernel.py --lifetime SECONDS --kernel KIND
with a listening Unix socket on fd 3. It answers e2b's code-interpreter
protocol on it (POST /execute, streamed NDJSON lines), so the gateway's e2b
client and parser serve local sandboxes too, plus POST /keepalive and
GET /health, and the part of e2b's envd the gateway uses for files: GET and
POST /files (download, upload) and envd's filesystem service over Connect's
unary JSON protocol (POST /filesystem.Filesystem/ListDir, MakeDir, Stat),
with envd's shapes, statuses and messages; paths are the sandbox's own.
Files stream to and from disk in pieces: what the server holds of any
request is bounded. State persists between cells. It exits by itself when its
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
import binascii
import errno
import gc
import json
import os
import re
import select
import signal
import socket
import stat
import sys
import time
import zlib

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
WARM_RUNS = 4           # warm-up cells a fresh worker runs before any client's


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

    def warm(self):
        """A fresh worker runs a warm-up cell through the whole path of a
        run (the worker's cell, its lines, this server's stream), answered
        into a socket pair nobody reads: what a first run costs once (the
        pages the fork shares, touched by both; the shell's first cell) is
        paid before any client asks. The worker then forgets it (its count,
        the names it set)."""
        a, b = socket.socketpair()
        try:
            # A few times: the interpreter specializes what runs often. A
            # client already asking ends it (a cold create waits for at
            # most one warm-up cell).
            for _ in range(WARM_RUNS):
                if self.pending or select.select([self.listener], [], [], 0)[0]:
                    break
                self.worker.queue({"code": "", "timeout": 30, "warm": True})
                self.stream(Stream(a), 30)
        except OSError:
            pass
        finally:
            a.close()
            b.close()
        self.run_pending()

    def serve(self):
        while True:
            if self.worker is None and self.spawn():
                self.warm()
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
            self.run_pending()

    def run_pending(self):
        """The runs asked for while another ran (or the warm-up did)."""
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
        req = read_head(conn)
        if req is None:
            return False
        method, target, headers, reader = req
        path, _, query = target.partition("?")
        try:
            if path == "/files" and method in ("GET", "POST"):
                params = query_params(query)
                if method == "GET":
                    return files_download(conn, params, headers)
                return files_upload(conn, params, headers, reader)
            if path.startswith("/filesystem.Filesystem/"):
                return filesystem_rpc(conn, path[len("/filesystem.Filesystem/"):], method, headers, reader)
            body = reader.read_all(MAX_JSON_BODY)
        except BadRequest as e:
            if path == "/files":
                return envd_error(conn, e.status, str(e))
            if path.startswith("/filesystem.Filesystem/"):
                return connect_error(conn, "resource_exhausted" if e.status == 413 else "invalid_argument", str(e))
            return reply(conn, e.status, go_json({"detail": str(e)}))
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


def read_head(conn):
    """(method, target, headers, Body) of one HTTP/1.1 request, or None."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > MAX_HEAD and b"\r\n\r\n" not in data[:MAX_HEAD]:
            return None
    head, _, pending = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) < 2:
        return None
    headers = {}
    for h in lines[1:]:
        k, _, v = h.partition(":")
        headers[k.strip().lower()] = v.strip()
    try:
        body = Body(conn, headers, pending)
    except (ValueError, BadRequest):
        return None
    return parts[0], parts[1], headers, body


def send_head(conn, status, headers):
    head = "HTTP/1.1 %d %s\r\n" % (status, REASONS.get(status, "Error"))
    head += "".join("%s: %s\r\n" % kv for kv in headers)
    conn.sendall(head.encode("latin-1", "replace") + b"Connection: close\r\n\r\n")


REASONS = {200: "OK", 204: "No Content", 206: "Partial Content", 400: "Bad Request", 401: "Unauthorized",
           404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable", 409: "Conflict",
           413: "Payload Too Large", 415: "Unsupported Media Type", 416: "Range Not Satisfiable",
           422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
           501: "Not Implemented", 503: "Service Unavailable", 507: "Insufficient Storage"}


def reply(conn, status, body=b"", ctype="application/json", extra=()):
    head = "HTTP/1.1 %d %s\r\nContent-Length: %d\r\nConnection: close\r\n" % (
        status, REASONS.get(status, "Error"), len(body))
    if body:
        head += "Content-Type: %s\r\n" % ctype
    head += "".join("%s: %s\r\n" % kv for kv in extra)
    conn.sendall(head.encode() + b"\r\n" + body)
    return False


# ---------------------------------------------------------------- envd's files API
#
# The subset of e2b's envd (port 49983) the gateway uses, so one client serves e2b and local
# sandboxes: GET /files (download), POST /files (upload: multipart form name "file", or
# application/octet-stream), and envd's filesystem service over Connect's unary JSON protocol
# (POST /filesystem.Filesystem/ListDir, MakeDir, Stat), with envd's status codes and messages
# (e2b-dev/infra packages/envd/internal/api/{download,upload}.go, services/filesystem/*.go).
# Paths are the sandbox's own. Bodies are streamed to and from disk in FILE_CHUNK pieces: what
# the server holds of a request is bounded whatever its size (the disk limit bounds the file).
# Not here: access tokens and signed URLs (the socket is the gateway's alone), X-Metadata-*.

FILE_CHUNK = 65536
MAX_JSON_BODY = 16 << 20   # /execute and the other JSON requests
MAX_RPC_BODY = 1 << 16     # a Connect request
MAX_HEAD = 1 << 16         # request line and headers
MAX_PART_HEAD = 1 << 14    # a multipart part's headers
MAX_LIST = 20000           # ListDir entries in one answer
HOME = "/home/user"
USERS = {"user": HOME, "root": "/root"}     # envd's users (one uid here): their homes
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)   # 507
TYPES = {".avif": "image/avif", ".css": "text/css; charset=utf-8", ".gif": "image/gif",
         ".htm": "text/html; charset=utf-8", ".html": "text/html; charset=utf-8", ".jpeg": "image/jpeg",
         ".jpg": "image/jpeg", ".js": "text/javascript; charset=utf-8", ".json": "application/json",
         ".mjs": "text/javascript; charset=utf-8", ".pdf": "application/pdf", ".png": "image/png",
         ".svg": "image/svg+xml", ".wasm": "application/wasm", ".webp": "image/webp",
         ".xml": "text/xml; charset=utf-8", ".csv": "text/csv; charset=utf-8",
         ".tsv": "text/tab-separated-values; charset=utf-8", ".txt": "text/plain; charset=utf-8",
         ".md": "text/markdown; charset=utf-8", ".py": "text/x-python; charset=utf-8",
         ".zip": "application/zip", ".gz": "application/gzip", ".tar": "application/x-tar",
         ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
         ".xls": "application/vnd.ms-excel", ".parquet": "application/vnd.apache.parquet",
         ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
         ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation"}
CONNECT_STATUS = {"invalid_argument": 400, "not_found": 404, "already_exists": 409, "unauthenticated": 401,
                  "resource_exhausted": 429, "unimplemented": 501, "internal": 500}
FS_METHODS = ("Stat", "MakeDir", "Move", "ListDir", "Remove", "WatchDir", "CreateWatcher",
              "GetWatcherEvents", "RemoveWatcher")


class BadRequest(Exception):
    """A request that cannot be read (cut, too large, malformed): status and message."""

    def __init__(self, status, message):
        Exception.__init__(self, message)
        self.status = status


class Body:
    """A request's body, read as it comes: Content-Length or chunked."""

    def __init__(self, conn, headers, pending):
        self.conn, self.buf = conn, bytearray(pending)
        self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        self.left = 0 if self.chunked else int(headers.get("content-length") or 0)
        if self.left < 0:
            raise BadRequest(400, "bad Content-Length")
        self.done = not self.chunked and self.left == 0

    def _recv(self):
        chunk = self.conn.recv(FILE_CHUNK)
        if not chunk:
            raise BadRequest(400, "unexpected EOF")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return line
            if len(self.buf) > 4096:
                raise BadRequest(400, "bad chunk")
            self._recv()

    def read(self, n=FILE_CHUNK):
        """Up to n bytes; b"" at the end."""
        if self.done:
            return b""
        if self.chunked and self.left == 0:
            try:
                self.left = int(self._line().split(b";")[0].strip() or b"x", 16)
            except ValueError:
                raise BadRequest(400, "bad chunk")
            if self.left == 0:
                while self._line():
                    pass
                self.done = True
                return b""
        if not self.buf:
            self._recv()
        out = bytes(self.buf[:min(n, self.left)])
        del self.buf[:len(out)]
        self.left -= len(out)
        if self.left == 0:
            if self.chunked:
                self._line()
            else:
                self.done = True
        return out

    def read_all(self, cap):
        if not self.chunked and self.left > cap:
            raise BadRequest(413, "the request body is too large")
        out = bytearray()
        while True:
            piece = self.read()
            if not piece:
                return bytes(out)
            out += piece
            if len(out) > cap:
                raise BadRequest(413, "the request body is too large")


class Gunzip:
    """A gzip-encoded body, decoded as it is read (never more than n bytes at once)."""

    def __init__(self, body):
        self.body, self.z, self.ended = body, zlib.decompressobj(31), False

    def read(self, n=FILE_CHUNK):
        while not self.ended:
            if self.z.unconsumed_tail:
                out = self.z.decompress(self.z.unconsumed_tail, n)
            else:
                data = self.body.read()
                if not data:
                    self.ended = True
                    out = self.z.flush()
                    if not self.z.eof:
                        raise OSError(errno.EIO, "unexpected EOF")
                    return out
                try:
                    out = self.z.decompress(data, n)
                except zlib.error:
                    raise OSError(errno.EIO, "gzip: invalid checksum")
            if out:
                return out
        return b""


class Multipart:
    """A multipart body, read part by part; a part's data streams (never all held)."""

    def __init__(self, src, boundary):
        self.src, self.delim, self.buf = src, b"\r\n--" + boundary, bytearray(b"\r\n")

    def _fill(self):
        data = self.src.read()
        if not data:
            raise BadRequest(500, "error reading form: multipart: NextPart: EOF")
        self.buf += data

    def next_part(self):
        """The next part's headers (lower-cased names), or None after the last."""
        keep = len(self.delim) + 1
        while True:
            i = self.buf.find(self.delim)
            if i >= 0:
                break
            del self.buf[:max(0, len(self.buf) - keep)]
            self._fill()
        del self.buf[:i + len(self.delim)]
        while len(self.buf) < 2:
            self._fill()
        if self.buf[:2] == b"--":
            return None
        while True:
            j = self.buf.find(b"\r\n")
            if j >= 0:
                break
            if len(self.buf) > MAX_PART_HEAD:
                raise BadRequest(500, "error reading form: multipart: bad boundary line")
            self._fill()
        del self.buf[:j + 2]
        while True:
            if self.buf[:2] == b"\r\n":
                head, cut = b"", 2
                break
            k = self.buf.find(b"\r\n\r\n")
            if k >= 0:
                head, cut = bytes(self.buf[:k]), k + 4
                break
            if len(self.buf) > MAX_PART_HEAD:
                raise BadRequest(500, "error reading form: multipart: message too large")
            self._fill()
        del self.buf[:cut]
        headers = {}
        for line in head.decode("utf-8", "replace").split("\r\n"):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return headers

    def data(self):
        """The current part's data, in pieces."""
        keep = len(self.delim) - 1
        while True:
            i = self.buf.find(self.delim)
            if i >= 0:
                if i:
                    yield bytes(self.buf[:i])
                del self.buf[:i]
                return
            if len(self.buf) > keep:
                yield bytes(self.buf[:-keep])
                del self.buf[:-keep]
            self._fill()


def param(header, name):
    """A parameter of a header such as Content-Disposition (quoted or not)."""
    for m in re.finditer(r';\s*([\w*.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))', ";" + header.partition(";")[2]):
        if m.group(1).lower() == name:
            return re.sub(r"\\(.)", r"\1", m.group(2)) if m.group(2) is not None else m.group(3).strip()
    return None


def go_json(obj):
    """JSON as Go's encoding/json writes it (compact, <>& escaped)."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def go_clean(p):
    n = os.path.normpath(p) if p else "."
    return "/" + n.lstrip("/") if n.startswith("//") else n


def errtext(e):
    return (e.strerror or str(e)).lower()


def resolve(path, user):
    """envd's ExpandAndResolve: (absolute path, None) or (None, why)."""
    if "\0" in path:
        return None, "path contains a NUL byte"
    home = USERS[user]
    if path == "":
        path = HOME
    if path.startswith("~"):
        if len(path) > 1 and path[1] not in "/\\":
            return None, ("failed to expand path '%s' for user '%s': cannot expand user-specific home dir"
                          % (path, user))
        path = go_clean(home + "/" + path[1:])
    return (path if path.startswith("/") else go_clean(home + "/" + path)), None


def envd_error(conn, status, message):
    """envd's JSON error (json.Encoder: a newline after it)."""
    return reply(conn, status, go_json({"code": status, "message": message}) + b"\n",
                 "application/json; charset=utf-8")


def query_params(query):
    import urllib.parse
    out = {}
    for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True):
        out.setdefault(k, v)
    return out


def http_date(t):
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(t))


def content_type(path, head):
    """By extension (Go's table and a few more), else sniffed from the first bytes."""
    base = path.rsplit("/", 1)[-1]
    dot = base.rfind(".")
    t = TYPES.get(base[dot:].lower()) if dot >= 0 else None
    if t:
        return t
    for sig, t in ((b"%PDF-", "application/pdf"), (b"\x89PNG\r\n\x1a\n", "image/png"), (b"GIF8", "image/gif"),
                   (b"\xff\xd8\xff", "image/jpeg"), (b"PK\x03\x04", "application/zip"),
                   (b"\x1f\x8b\x08", "application/x-gzip")):
        if head.startswith(sig):
            return t
    if any(b < 9 or b == 11 or 14 <= b < 27 or 28 <= b < 32 for b in head[:512]):
        return "application/octet-stream"
    return "text/plain; charset=utf-8"


def disposition(name):
    """mime.FormatMediaType("inline", {"filename": name})."""
    special = set('()<>@,;:\\"/[]?=')
    if any((c < " " or c > "~") and c != "\t" for c in name):
        enc = "".join("%%%02X" % b if b <= 32 or b >= 127 or chr(b) in "*'%" or chr(b) in special else chr(b)
                      for b in name.encode("utf-8", "surrogateescape"))
        return "inline; filename*=utf-8''" + enc
    if name and all(c not in special and " " < c < "\x7f" for c in name):
        return "inline; filename=" + name
    return 'inline; filename="%s"' % name.replace("\\", "\\\\").replace('"', '\\"')


def wants_gzip(header):
    """envd's parseAcceptEncoding: "gzip", "identity", or None (nothing acceptable)."""
    encs = []
    for item in header.split(","):
        name, _, params = item.partition(";")
        q = 1.0
        for p in params.split(";"):
            p = p.strip()
            if p.lower().startswith("q="):
                try:
                    q = float(p[2:])
                except ValueError:
                    pass
        encs.append((name.strip().lower(), q))
    if not header.strip():
        return "identity"
    rejected = any(n == "identity" and q == 0 for n, q in encs)
    if any(n == "*" and q == 0 for n, q in encs) and not any(n == "identity" and q > 0 for n, q in encs):
        rejected = True
    for n, q in sorted(encs, key=lambda e: -e[1]):
        if q == 0:
            continue
        if n == "identity":
            return n
        if n == "*":
            return "gzip" if rejected else "identity"
        if n == "gzip":
            return n
    return None if rejected else "identity"


def one_range(header, size):
    """(start, length) of a single "bytes=" range, "all" when absent or several, None when unsatisfiable."""
    if not header:
        return "all"
    specs = [s.strip() for s in header[6:].split(",") if s.strip()] if header.startswith("bytes=") else []
    if len(specs) > 1:
        return "all"
    if len(specs) != 1 or "-" not in specs[0]:
        return None
    a, _, b = specs[0].partition("-")
    try:
        if a.strip() == "":
            n = min(int(b), size)
            return (size - n, n) if n > 0 else None
        a = int(a)
        if a < 0 or a >= size:
            return None
        b = min(int(b), size - 1) if b.strip() else size - 1
        return (a, b - a + 1) if b >= a else None
    except ValueError:
        return None


def files_download(conn, params, headers):
    user = params.get("username", "user")
    if user not in USERS:
        return envd_error(conn, 401, "error looking up user '%s': user: unknown user %s" % (user, user))
    path, why = resolve(params.get("path", ""), user)
    if why:
        return envd_error(conn, 400, "error expanding and resolving path '%s': %s" % (params.get("path", ""), why))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return envd_error(conn, 404, "path '%s' does not exist" % path)
    except IsADirectoryError:
        return envd_error(conn, 400, "path '%s' is a directory" % path)
    except OSError as e:
        return envd_error(conn, 500, "error checking if path exists '%s': stat %s: %s" % (path, path, errtext(e)))
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        what = "is a directory" if stat.S_ISDIR(st.st_mode) else "is not a regular file"
        return envd_error(conn, 400, "path '%s' %s" % (path, what))
    with os.fdopen(fd, "rb", buffering=0) as f:
        enc = wants_gzip(headers.get("accept-encoding", ""))
        if enc is None:
            return envd_error(conn, 406, "error parsing Accept-Encoding: no acceptable encoding found, "
                                         "supported: [gzip]")
        if headers.get("range"):
            enc = "identity"
        head = [("Vary", "Accept-Encoding"), ("Content-Disposition", disposition(os.path.basename(path)))]
        first = f.read(512)
        ctype = content_type(params.get("path", ""), first)
        f.seek(0)
        size = st.st_size
        if enc == "gzip":
            head += [("Content-Encoding", "gzip"), ("Content-Type", TYPES.get(os.path.splitext(path)[1].lower(),
                                                                           "application/octet-stream")),
                     ("Transfer-Encoding", "chunked")]
            send_head(conn, 200, head)
            z = zlib.compressobj(6, zlib.DEFLATED, 31)
            while True:
                data = f.read(FILE_CHUNK)
                out = z.compress(data) if data else z.flush()
                if out:
                    conn.sendall(b"%x\r\n%s\r\n" % (len(out), out))
                if not data:
                    break
            conn.sendall(b"0\r\n\r\n")
            return False
        head += [("Content-Type", ctype), ("Last-Modified", http_date(st.st_mtime)), ("Accept-Ranges", "bytes")]
        rng = one_range(headers.get("range", ""), size)
        if rng is None:
            return reply(conn, 416, b"invalid range: failed to overlap\n", "text/plain; charset=utf-8",
                         [("Content-Range", "bytes */%d" % size)])
        status, start, length = 200, 0, size
        if rng != "all":
            status, (start, length) = 206, rng
            head.append(("Content-Range", "bytes %d-%d/%d" % (start, start + length - 1, size)))
        head.append(("Content-Length", str(length)))
        send_head(conn, status, head)
        f.seek(start)
        while length > 0:
            data = f.read(min(FILE_CHUNK, length))
            if not data:
                break           # the file shrank meanwhile: the client sees a short body
            conn.sendall(data)
            length -= len(data)
    return False


def ensure_dirs(path):
    """envd's EnsureDirs: every missing directory of path made; None or why not."""
    parts, p = [], go_clean(path)
    while p not in ("/", "."):
        parts.append(p)
        p = os.path.dirname(p)
    for sub in reversed(parts):
        try:
            st = os.stat(sub)
        except FileNotFoundError:
            try:
                os.mkdir(sub, 0o755)
            except FileExistsError:
                pass
            except OSError as e:
                return e, "failed to create directory: mkdir %s: %s" % (sub, errtext(e))
            continue
        except OSError as e:
            return e, "failed to stat directory: stat %s: %s" % (sub, errtext(e))
        if not stat.S_ISDIR(st.st_mode):
            return None, "path is a file: %s" % sub
    return None


def write_file(path, pieces):
    """envd's processFile: (status, None) or (status, why); the data streams from pieces."""
    bad = ensure_dirs(os.path.dirname(go_clean(path)))
    if bad:
        e, why = bad
        return (507 if e is not None and e.errno in FULL else 500), "error ensuring directories: " + why
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    except IsADirectoryError:
        return 400, "path is a directory: %s" % path
    except OSError as e:
        if e.errno == errno.ELOOP:      # the last component is a symlink: follow it as envd does
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o666)
            except OSError as e2:
                return (507 if e2.errno in FULL else 500), "error opening file: open %s: %s" % (path, errtext(e2))
        else:
            return (507 if e.errno in FULL else 500), "error opening file: open %s: %s" % (path, errtext(e))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 400, "path is not a regular file: %s" % path
        for data in pieces:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
    except OSError as e:
        if e.errno in FULL:
            return 507, "not enough disk space available"
        return 500, "error writing file: write %s: %s" % (path, errtext(e))
    finally:
        os.close(fd)
    return 200, None


def files_upload(conn, params, headers, body):
    user = params.get("username", "user")
    src = body
    ce = headers.get("content-encoding", "").split(";")[0].strip().lower()
    if ce not in ("", "identity", "gzip"):
        return envd_error(conn, 400, "error decompressing request body: unsupported Content-Encoding: %s, "
                                     "supported: [gzip]" % headers["content-encoding"])
    if ce == "gzip":
        src = Gunzip(body)
    if user not in USERS:
        return envd_error(conn, 401, "error looking up user '%s': user: unknown user %s" % (user, user))
    ctype = headers.get("content-type", "")
    mtype = ctype.split(";")[0].strip().lower()
    done = []

    def chunks():
        while True:
            data = src.read()
            if not data:
                return
            yield data

    if mtype == "application/octet-stream":
        if "path" not in params:
            return envd_error(conn, 400, "path query parameter is required for raw body upload")
        path, why = resolve(params["path"], user)
        if why:
            return envd_error(conn, 400, "error resolving path: %s" % why)
        status, why = write_file(path, chunks())
        if why:
            return envd_error(conn, status, why)
        done.append(path)
    elif mtype.startswith("multipart/"):
        boundary = param(ctype, "boundary")
        if not boundary:
            return envd_error(conn, 500, "error parsing multipart form: no multipart boundary param in Content-Type")
        form = Multipart(src, boundary.encode("latin-1"))
        while True:
            part = form.next_part()
            if part is None:
                break
            cd = part.get("content-disposition", "")
            if not cd.lower().startswith("form-data") or param(cd, "name") != "file":
                for _ in form.data():
                    pass
                continue
            target = params["path"] if "path" in params else (param(cd, "filename") or "")
            path, why = resolve(target, user)
            if why:
                return envd_error(conn, 400, "error resolving path: %s" % why)
            if path in done:
                why = ("you cannot upload multiple files to the same path '%s' in one upload request, only the first "
                       "specified file was uploaded" % path)
                others = [p for p in done if p != path]
                if len(others) > 1:
                    why += ", also the following files were uploaded: %s" % ", ".join(others)
                return envd_error(conn, 400, why)
            status, why = write_file(path, form.data())
            if why:
                return envd_error(conn, status, why)
            done.append(path)
    else:
        return envd_error(conn, 400, "unsupported content type: %s, expected multipart/form-data or "
                                     "application/octet-stream" % ctype)
    out = [{"name": os.path.basename(go_clean(p)), "path": p, "type": "file"} for p in done]
    return reply(conn, 200, go_json(out), "text/plain; charset=utf-8")   # envd's is sniffed so


def filemode_string(mode):
    """Go's os.FileMode.String()."""
    fmt = stat.S_IFMT(mode)
    out = "".join(c for c, on in (("d", fmt == stat.S_IFDIR), ("L", fmt == stat.S_IFLNK),
                                   ("D", fmt in (stat.S_IFBLK, stat.S_IFCHR)), ("p", fmt == stat.S_IFIFO),
                                   ("S", fmt == stat.S_IFSOCK), ("u", mode & stat.S_ISUID),
                                   ("g", mode & stat.S_ISGID), ("c", fmt == stat.S_IFCHR),
                                   ("t", mode & stat.S_ISVTX)) if on) or "-"
    return out + "".join(c if mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))


def timestamp(ns):
    """google.protobuf.Timestamp in protojson (0, 3, 6 or 9 digits of fraction)."""
    sec, frac = divmod(ns, 10 ** 9)
    s = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
    if frac:
        digits = "%09d" % frac
        s += "." + (digits[:3] if frac % 10 ** 6 == 0 else digits[:6] if frac % 1000 == 0 else digits)
    return s + "Z"


def entry_info(path, shown=None):
    """envd's EntryInfo in protojson (default values left out, int64 as a string)."""
    st = os.lstat(path)
    ftype, perm, target = stat.S_IFMT(st.st_mode), st.st_mode & 0o777, None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.path.realpath(path, strict=True)
        except OSError:
            target = path
        try:
            t = os.stat(path)
            ftype, perm = stat.S_IFMT(t.st_mode), t.st_mode & 0o777
        except OSError:
            ftype, perm = None, 0
    e = {"name": os.path.basename(go_clean(path))}
    kind = {stat.S_IFREG: "FILE_TYPE_FILE", stat.S_IFDIR: "FILE_TYPE_DIRECTORY"}.get(ftype)
    if kind:
        e["type"] = kind
    e["path"] = shown if shown is not None else path
    if st.st_size:
        e["size"] = str(st.st_size)
    if perm:
        e["mode"] = perm
    e["permissions"] = filemode_string(st.st_mode)
    e["owner"], e["group"] = str(st.st_uid), str(st.st_gid)     # no user database in the sandbox
    if st.st_mtime_ns:
        e["modifiedTime"] = timestamp(st.st_mtime_ns)
    if target is not None:
        e["symlinkTarget"] = target
    return e


def connect_error(conn, code, message):
    return reply(conn, CONNECT_STATUS.get(code, 500), go_json({"code": code, "message": message}),
                 "application/json")


def connect_ok(conn, obj):
    return reply(conn, 200, json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode(), "application/json")


def filesystem_rpc(conn, method, verb, headers, body):
    """envd's filesystem service, Connect unary with the JSON codec."""
    if method not in FS_METHODS:
        return reply(conn, 404, b"404 page not found\n", "text/plain; charset=utf-8")
    if verb != "POST":
        return reply(conn, 405, b"", extra=[("Allow", "POST")])
    if headers.get("content-type", "").strip().lower() not in ("application/json", "application/json; charset=utf-8"):
        return reply(conn, 415, b"", extra=[("Accept-Post", "application/json, application/json; charset=utf-8")])
    user = "user"
    auth = headers.get("authorization", "")
    if auth[:6].lower() == "basic ":
        try:
            user = binascii.a2b_base64(auth[6:].strip()).decode().partition(":")[0]
        except (ValueError, UnicodeDecodeError):
            user = "user"
        if user not in USERS:
            return connect_error(conn, "unauthenticated", "invalid username: '%s'" % user)
    if method not in ("ListDir", "MakeDir", "Stat"):
        return connect_error(conn, "unimplemented", "filesystem.Filesystem/%s is not implemented here" % method)
    raw = body.read_all(MAX_RPC_BODY)
    if not raw:
        return connect_error(conn, "invalid_argument", "unmarshal message: zero-length payload is not a valid JSON "
                                                       "object")
    what = "unmarshal message: unmarshal into *filesystem.%sRequest: proto: " % method
    try:
        req = json.loads(raw)
    except ValueError as e:
        return connect_error(conn, "invalid_argument", what + "syntax error: %s" % e)
    if not isinstance(req, dict):
        return connect_error(conn, "invalid_argument", what + "a JSON object is expected")
    path = req.get("path") or ""
    depth = req.get("depth") or 0
    if isinstance(depth, str) and depth.isdigit():
        depth = int(depth)
    if isinstance(depth, float) and depth.is_integer():
        depth = int(depth)
    if not isinstance(path, str):
        return connect_error(conn, "invalid_argument", what + "invalid value for string field path")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth < 1 << 32:
        return connect_error(conn, "invalid_argument", what + "invalid value for uint32 field depth")
    path, why = resolve(path, user)
    if why:
        return connect_error(conn, "invalid_argument", why)
    if method == "Stat":
        try:
            return connect_ok(conn, {"entry": entry_info(path)})
        except FileNotFoundError:
            return connect_error(conn, "not_found", "file not found: lstat %s: no such file or directory" % path)
        except OSError as e:
            return connect_error(conn, "internal", "error getting file info: lstat %s: %s" % (path, errtext(e)))
    if method == "MakeDir":
        try:
            st = os.stat(path)
            if stat.S_ISDIR(st.st_mode):
                return connect_error(conn, "already_exists", "directory already exists: %s" % path)
            return connect_error(conn, "invalid_argument", "path already exists but it is not a directory: %s" % path)
        except FileNotFoundError:
            pass
        except OSError as e:
            return connect_error(conn, "internal", "error getting file info: stat %s: %s" % (path, errtext(e)))
        bad = ensure_dirs(path)
        if bad:
            return connect_error(conn, "internal", bad[1])
        return connect_ok(conn, {"entry": entry_info(path)})
    return list_dir(conn, path, depth or 1)


def list_dir(conn, path, depth):
    """ListDir: the tree under path (symlinks not followed) to depth levels, in lexical order."""
    acc = ""
    comps = [c for c in go_clean(path).split("/") if c]
    for i, c in enumerate(comps):
        acc += "/" + c
        try:
            st = os.stat(acc)
        except FileNotFoundError:
            return connect_error(conn, "not_found", "path not found: lstat %s: no such file or directory" % acc)
        except OSError as e:
            return connect_error(conn, "internal", "error resolving symlink: lstat %s: %s" % (acc, errtext(e)))
        if i < len(comps) - 1 and not stat.S_ISDIR(st.st_mode):
            return connect_error(conn, "internal", "error resolving symlink: not a directory")
    resolved = os.path.realpath(path)
    if not os.path.isdir(resolved):
        return connect_error(conn, "invalid_argument", "path is not a directory: %s" % resolved)
    entries = []
    try:
        stack = [(resolved, "", 1, iter(sorted(os.listdir(resolved), key=os.fsencode)))]
        while stack:        # pre-order, as filepath.WalkDir: a directory, then what is in it
            d, rel, level, names = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                continue
            child, crel = (d.rstrip("/") + "/" + name), rel + "/" + name
            try:
                entries.append(entry_info(child, go_clean(path + crel)))
            except FileNotFoundError:
                continue        # gone meanwhile
            if len(entries) > MAX_LIST:
                return connect_error(conn, "resource_exhausted", "more than %d entries under %s: list less deep"
                                     % (MAX_LIST, path))
            if level < depth and stat.S_ISDIR(os.lstat(child).st_mode):
                stack.append((child, crel, level + 1, iter(sorted(os.listdir(child), key=os.fsencode))))
    except OSError as e:
        return connect_error(conn, "internal", "error reading directory %s: %s" % (resolved, errtext(e)))
    return connect_ok(conn, {"entries": entries} if entries else {})


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
    spawned = server.spawn()
    server.harden()
    if spawned:
        server.warm()
    server.serve()


if __name__ == "__main__":
    main()
