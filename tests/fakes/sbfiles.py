"""Sandbox file trees for the e2b and OpenSandbox fakes (standard library only).

Each fake sandbox has a directory of its own on the host, its ROOT: the fake's files API treats ROOT as
the sandbox's "/" (a sandbox path /mnt/data/x.csv is ROOT/mnt/data/x.csv), and the Python that runs the
sandbox's code sees the same files under the same names through a path mapping installed in its worker
(PATHMAP_SRC below): an absolute path under one of the sandbox's mapped prefixes (e2b: /home/user and
/mnt; OpenSandbox: /workspace and /mnt) is redirected into ROOT by wrappers around builtins.open/io.open
and the path functions of `os` (stat, listdir, scandir, mkdir, remove, rename, chdir, ...), and
os.getcwd() answers the sandbox's name of the working directory (the worker really runs in
ROOT/home/user, or ROOT/workspace). Everything built on those (os.path, pathlib, shutil, glob,
os.walk, zipfile, pandas, numpy, matplotlib, PIL) follows.

Why not a mount namespace: it needs root or unprivileged user namespaces, and the mount points
(/home/user, /workspace) do not exist on a host and cannot be made without changing it; a wrapper
needs nothing and works for any user. What it does not cover (write tests accordingly): other
processes (subprocess, os.system, OpenSandbox's `bash -c` runs) and C code that opens paths itself
(sqlite3.connect, h5py) see the host's real paths; a symlink is a host symlink.
"""
import binascii
import datetime
import hashlib
import mimetypes
import os
import re
import stat

# ---------------------------------------------------------------- the worker's side

PATHMAP_SRC = r'''
def _sb_install_pathmap():
    """Redirect the sandbox's mapped prefixes into its directory (see tests/fakes/sbfiles.py)."""
    import builtins, io, os
    root = os.environ.pop("FAKE_SB_ROOT", "")
    prefixes = tuple(p.rstrip("/") for p in os.environ.pop("FAKE_SB_MAPPED", "").split(":") if p.strip("/"))
    if not root or not prefixes:
        return
    root = os.path.realpath(root)
    if any(root == p or root.startswith(p + "/") for p in prefixes):
        return      # would map twice
    norm = os.path.normpath

    def mapped(t):
        n = norm(t)
        if n.startswith("//"):
            n = "/" + n.lstrip("/")
        for p in prefixes:
            if n == p or n.startswith(p + "/"):
                return root + n + ("/" if t.endswith("/") and n != "/" else "")
        return None

    def real(p):
        if p is None or isinstance(p, int):
            return p
        try:
            s = os.fspath(p)
        except TypeError:
            return p
        b = isinstance(s, bytes)
        t = os.fsdecode(s) if b else s
        if not t.startswith("/"):
            return p
        r = mapped(t)
        if r is None:
            return p
        return os.fsencode(r) if b else r

    def wrap(f, n=1, keys=("path", "file", "src", "dst")):
        def g(*a, **k):
            if n:
                a = tuple(real(x) if i < n else x for i, x in enumerate(a))
            for key in keys:
                if key in k:
                    k[key] = real(k[key])
            return f(*a, **k)
        g.__name__, g.__qualname__, g.__doc__, g.__wrapped__ = f.__name__, f.__qualname__, f.__doc__, f
        return g

    for name in ("open", "stat", "lstat", "access", "chdir", "chmod", "chown", "lchown", "listdir", "mkdir",
                 "rmdir", "remove", "unlink", "utime", "truncate", "readlink", "statvfs", "mkfifo", "mknod",
                 "getxattr", "setxattr", "listxattr", "removexattr", "pathconf"):
        if hasattr(os, name):
            setattr(os, name, wrap(getattr(os, name)))
    for name in ("rename", "replace", "link", "symlink"):
        setattr(os, name, wrap(getattr(os, name), 2))
    builtins.open = io.open = wrap(io.open, keys=("file",))

    _getcwd, _getcwdb, _scandir = os.getcwd, os.getcwdb, os.scandir

    def virtual(r):
        if r == root or r.startswith(root + "/"):
            v = r[len(root):] or "/"
            if any(v == p or v.startswith(p + "/") for p in prefixes):
                return v
        return r

    def getcwd():
        return virtual(_getcwd())

    def getcwdb():
        return os.fsencode(virtual(os.fsdecode(_getcwdb())))

    class DirEntry:
        """An os.DirEntry whose .path keeps the name the code asked for."""
        __slots__ = ("_e", "path")

        def __init__(self, e, path):
            self._e, self.path = e, path

        name = property(lambda self: self._e.name)

        def is_dir(self, *, follow_symlinks=True):
            return self._e.is_dir(follow_symlinks=follow_symlinks)

        def is_file(self, *, follow_symlinks=True):
            return self._e.is_file(follow_symlinks=follow_symlinks)

        def is_symlink(self):
            return self._e.is_symlink()

        def stat(self, *, follow_symlinks=True):
            return self._e.stat(follow_symlinks=follow_symlinks)

        def inode(self):
            return self._e.inode()

        def __fspath__(self):
            return self.path

        def __repr__(self):
            return "<DirEntry %r>" % (self.name,)

    class Scandir:
        def __init__(self, it, base):
            self._it, self._base = it, base

        def __iter__(self):
            return self

        def __next__(self):
            e = next(self._it)
            return DirEntry(e, os.path.join(self._base, e.name))

        def close(self):
            self._it.close()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

    def scandir(path="."):
        r = real(path)
        if r is path or isinstance(path, int):
            return _scandir(path)
        return Scandir(_scandir(r), os.fspath(path))

    os.getcwd, os.getcwdb, os.scandir = getcwd, getcwdb, scandir


_sb_install_pathmap()
del _sb_install_pathmap
'''


def worker_env(root, prefixes):
    """What a worker's environment needs for PATHMAP_SRC."""
    return {"FAKE_SB_ROOT": root, "FAKE_SB_MAPPED": ":".join(prefixes)}


# ---------------------------------------------------------------- paths

def go_clean(p):
    """Go's path/filepath.Clean."""
    if p == "":
        return "."
    n = os.path.normpath(p)
    if n.startswith("//"):
        n = "/" + n.lstrip("/")
    return n


def real_path(root, vpath):
    """The host path of an absolute, cleaned sandbox path."""
    assert vpath.startswith("/")
    return root if vpath == "/" else root + vpath


def virtual_path(root, real):
    """The sandbox's name of a host path inside root, or None."""
    if real == root:
        return "/"
    if real.startswith(root + "/"):
        return real[len(root):]
    return None


def makedirs_in(root, vpath, mode=0o755):
    os.makedirs(real_path(root, vpath), mode=mode, exist_ok=True)


# ---------------------------------------------------------------- what Go writes

def go_json(obj):
    """encoding/json's output: compact, UTF-8, <>& and U+2028/9 escaped."""
    import json
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(a, b)
    return s.encode()


def go_filemode_string(mode):
    """os.FileMode.String() of a stat mode (Go's letters: d, L for a symlink, p, S, D, c, u, g, t)."""
    out = ""
    fmt = stat.S_IFMT(mode)
    # Go's order: dalTLDpSugct?
    if fmt == stat.S_IFDIR:
        out += "d"
    if fmt == stat.S_IFLNK:
        out += "L"
    if fmt in (stat.S_IFBLK, stat.S_IFCHR):
        out += "D"
    if fmt == stat.S_IFIFO:
        out += "p"
    if fmt == stat.S_IFSOCK:
        out += "S"
    if mode & stat.S_ISUID:
        out += "u"
    if mode & stat.S_ISGID:
        out += "g"
    if fmt == stat.S_IFCHR:
        out += "c"
    if mode & stat.S_ISVTX:
        out += "t"
    out = out or "-"
    rwx = "rwxrwxrwx"
    return out + "".join(c if mode & (1 << (8 - i)) else "-" for i, c in enumerate(rwx))


def _frac(ns, widths):
    if ns == 0:
        return ""
    for w in widths:
        if ns % 10 ** (9 - w) == 0:
            return "." + str(ns // 10 ** (9 - w)).rjust(w, "0")
    return "." + str(ns).rjust(9, "0")


def _utc(sec):
    return datetime.datetime.fromtimestamp(sec, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def proto_timestamp(ns):
    """google.protobuf.Timestamp in protojson: RFC 3339, Z, 0, 3, 6 or 9 fraction digits."""
    sec, frac = divmod(ns, 10 ** 9)
    return _utc(sec) + _frac(frac, (3, 6, 9)) + "Z"


def go_time_json(ns):
    """time.Time's MarshalJSON in UTC: RFC3339Nano, trailing zeros of the fraction dropped."""
    sec, frac = divmod(ns, 10 ** 9)
    f = ("." + str(frac).rjust(9, "0").rstrip("0")) if frac else ""
    return _utc(sec) + f + "Z"


def http_date(sec):
    return datetime.datetime.fromtimestamp(int(sec), datetime.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S GMT")


def parse_http_date(s):
    try:
        return datetime.datetime.strptime(s.strip(), "%a, %d %b %Y %H:%M:%S GMT").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except (ValueError, AttributeError):
        return None


_TSPECIALS = set('()<>@,;:\\"/[]?=')


def _is_token(s):
    return s != "" and all(0x20 < ord(c) < 0x7F and c not in _TSPECIALS for c in s)


def go_format_media_type(t, key, value):
    """mime.FormatMediaType(t, {key: value}) for one parameter."""
    out = t + "; " + key
    if any((c < " " or c > "~") and c != "\t" for c in value):
        enc = "".join("%%%02X" % b if (b <= 0x20 or b >= 0x7F or chr(b) in "*'%" or chr(b) in _TSPECIALS)
                      else chr(b) for b in value.encode("utf-8", "surrogateescape"))
        return out + "*=utf-8''" + enc
    if _is_token(value):
        return out + "=" + value
    return out + '="' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# Go's builtin table (mime/type.go); it wins over the system's files.
_GO_BUILTIN_TYPES = {
    ".avif": "image/avif", ".css": "text/css; charset=utf-8", ".gif": "image/gif",
    ".htm": "text/html; charset=utf-8", ".html": "text/html; charset=utf-8", ".jpeg": "image/jpeg",
    ".jpg": "image/jpeg", ".js": "text/javascript; charset=utf-8", ".json": "application/json",
    ".mjs": "text/javascript; charset=utf-8", ".pdf": "application/pdf", ".png": "image/png",
    ".svg": "image/svg+xml", ".wasm": "application/wasm", ".webp": "image/webp",
    ".xml": "text/xml; charset=utf-8",
}
_MIME = mimetypes.MimeTypes()
for _f in ("/etc/mime.types",):
    if os.path.exists(_f):
        _MIME.read(_f)


def go_type_by_extension(name):
    """mime.TypeByExtension(filepath.Ext(name)): Go's table, then the system's (text/* gains
    charset=utf-8, as Go adds it); "" when unknown."""
    base = name.rsplit("/", 1)[-1]
    i = base.rfind(".")
    if i < 0:
        return ""
    ext = base[i:]
    t = _GO_BUILTIN_TYPES.get(ext) or _GO_BUILTIN_TYPES.get(ext.lower())
    if t:
        return t
    t = _MIME.types_map[1].get(ext) or _MIME.types_map[1].get(ext.lower()) or ""
    if t.startswith("text/") and "charset" not in t:
        t += "; charset=utf-8"
    return t


def go_detect_content_type(data):
    """A part of net/http.DetectContentType (the signatures a data file can have)."""
    data = data[:512]
    sigs = ((b"%PDF-", "application/pdf"), (b"\x89PNG\r\n\x1a\n", "image/png"), (b"GIF87a", "image/gif"),
            (b"GIF89a", "image/gif"), (b"\xff\xd8\xff", "image/jpeg"), (b"PK\x03\x04", "application/zip"),
            (b"\x1f\x8b\x08", "application/x-gzip"), (b"%!PS-Adobe-", "application/postscript"),
            (b"\xef\xbb\xbf", "text/plain; charset=utf-8"), (b"\xfe\xff", "text/plain; charset=utf-16be"),
            (b"\xff\xfe", "text/plain; charset=utf-16le"))
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    for sig, t in sigs:
        if data.startswith(sig):
            return t
    s = data.lstrip(b"\t\n\x0c\r ")
    low = s[:14].lower()
    for tag in (b"<!doctype html", b"<html", b"<head", b"<body", b"<table", b"<div", b"<p", b"<a", b"<br",
                b"<script", b"<style", b"<title", b"<h1", b"<iframe", b"<font", b"<b", b"<!--"):
        if low.startswith(tag) and len(s) > len(tag) and s[len(tag):len(tag) + 1] in (b" ", b">"):
            return "text/html; charset=utf-8"
    if s.startswith(b"<?xml"):
        return "text/xml; charset=utf-8"
    if any(b in data for b in bytes(list(range(0, 9)) + [0x0B] + list(range(0x0E, 0x1B)) + list(range(0x1C, 0x20)))):
        return "application/octet-stream"
    return "text/plain; charset=utf-8"


# ---------------------------------------------------------------- requests

def parse_multipart(body, content_type):
    """[(headers {lower name: value}, name, filename or None, data)] of a multipart body, or raise
    ValueError (Go's messages where a client could see them)."""
    m = re.search(r'boundary=(?:"([^"]+)"|([^;\s]+))', content_type or "", re.I)
    if not m:
        raise ValueError("no multipart boundary param in Content-Type")
    boundary = (m.group(1) or m.group(2)).encode()
    delim = b"--" + boundary
    parts = []
    pos = body.find(delim)
    if pos < 0:
        raise ValueError("multipart: NextPart: EOF")
    while True:
        pos += len(delim)
        if body[pos:pos + 2] == b"--":
            return parts
        eol = body.find(b"\n", pos)
        if eol < 0:
            raise ValueError("multipart: NextPart: EOF")
        start = eol + 1
        end = body.find(b"\r\n" + delim, start)
        if end < 0:
            raise ValueError("multipart: NextPart: EOF")
        raw = body[start:end]
        head_end = raw.find(b"\r\n\r\n")
        if head_end < 0:
            if raw.startswith(b"\r\n"):
                head, data = b"", raw[2:]
            else:
                raise ValueError("malformed MIME header: missing colon")
        else:
            head, data = raw[:head_end], raw[head_end + 4:]
        headers = {}
        for line in head.decode("utf-8", "replace").split("\r\n"):
            if ":" in line:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
        name = filename = None
        cd = headers.get("content-disposition", "")
        for key, v1, v2 in re.findall(r';\s*([\w*-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))', cd):
            val = v1.replace('\\"', '"').replace("\\\\", "\\") if v1 or not v2 else v2.strip()
            if key.lower() == "name":
                name = val
            elif key.lower() == "filename":
                filename = val
        parts.append((headers, name, filename, data))
        pos = end + 2


def parse_accept_encoding(header):
    """envd's parseAcceptEncoding (packages/envd/internal/api/encoding.go): "gzip", "identity", or
    None when nothing acceptable; also whether identity was rejected."""
    if not header:
        return "identity", False
    encs = []
    for value in header.split(","):
        value, q = value.strip(), 1.0
        if ";" in value:
            value, _, params = value.partition(";")
            value = value.strip()
            for p in params.split(";"):
                p = p.strip()
                if p.lower().startswith("q="):
                    try:
                        q = float(p[2:])
                    except ValueError:
                        pass
        encs.append((value.lower(), q))
    rejected = accepted = wild_rej = False
    for e, q in encs:
        if e == "identity":
            rejected, accepted = (True, accepted) if q == 0 else (rejected, True)
        elif e == "*" and q == 0:
            wild_rej = True
    if wild_rej and not accepted:
        rejected = True
    for e, q in sorted(encs, key=lambda x: -x[1]):
        if q == 0:
            continue
        if e == "identity":
            return "identity", rejected
        if e == "*":
            return ("gzip" if rejected else "identity"), rejected
        if e == "gzip":
            return "gzip", rejected
    return (None if rejected else "identity"), rejected


def go_serve_range(header, size):
    """net/http's parseRange, single range only: (start, length), "all" (no usable header), or None
    (416). Several ranges are served whole (the fake writes no multipart/byteranges)."""
    if not header:
        return "all"
    if not header.startswith("bytes="):
        return None
    specs = [s.strip() for s in header[6:].split(",") if s.strip()]
    if len(specs) != 1:
        return "all" if len(specs) > 1 else None
    start, dash, end = specs[0].partition("-")
    start, end = start.strip(), end.strip()
    if not dash:
        return None
    try:
        if start == "":
            if end == "" or end.startswith("-"):
                return None
            n = int(end)
            if n == 0:
                return None
            n = min(n, size)
            return size - n, n
        i = int(start)
        if i < 0 or i >= size:
            return None
        if end == "":
            return i, size - i
        j = int(end)
        if j < i:
            return None
        j = min(j, size - 1)
        return i, j - i + 1
    except ValueError:
        return None


def envd_signature(path, operation, username, token, expiration=None):
    """v1_ + base64 (no padding) of SHA-256 of path:operation:username:token[:expiration]."""
    parts = [path, operation, username, token] + ([str(expiration)] if expiration is not None else [])
    digest = hashlib.sha256(":".join(parts).encode()).digest()
    return "v1_" + binascii.b2a_base64(digest, newline=False).decode().rstrip("=")


def doublestar_basename_match(pattern, name):
    """execd's glob.PathMatch(pattern, basename) (doublestar semantics; a name has no '/'):
    {a,b} alternatives, *, ?, [...] / [!...] / [^...], leading **/ matching nothing.
    Raises ValueError for a bad pattern."""
    def expand(p):
        i = p.find("{")
        if i < 0:
            return [p]
        depth, j = 0, i
        while j < len(p):
            if p[j] == "{":
                depth += 1
            elif p[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if depth:
            raise ValueError("syntax error in pattern")
        alts, depth, cur = [], 0, ""
        for c in p[i + 1:j]:
            if c == "," and depth == 0:
                alts.append(cur)
                cur = ""
                continue
            depth += c == "{"
            depth -= c == "}"
            cur += c
        alts.append(cur)
        return [x for a in alts for x in expand(p[:i] + a + p[j + 1:])]

    for p in expand(pattern):
        while p.startswith("**/"):
            p = p[3:]
        if p in ("**", "*"):
            return True
        rx, i = "", 0
        while i < len(p):
            c = p[i]
            if c == "*":
                rx += "[^/]*"
                while i + 1 < len(p) and p[i + 1] == "*":
                    i += 1
            elif c == "?":
                rx += "[^/]"
            elif c == "[":
                j = p.find("]", i + 2)
                if j < 0:
                    raise ValueError("syntax error in pattern")
                body = p[i + 1:j]
                neg = body[:1] in ("!", "^")
                body = body[1:] if neg else body
                if not body:
                    raise ValueError("syntax error in pattern")
                rx += "[" + ("^" if neg else "") + body.replace("\\", "\\\\") + "]"
                i = j
            elif c == "\\" and i + 1 < len(p):
                i += 1
                rx += re.escape(p[i])
            else:
                rx += re.escape(c)
            i += 1
        if re.fullmatch(rx, name, re.S):
            return True
    return False
