"""The IPython kernel of sandgate's local sandboxes (kernel = "ipython",
or "auto" with IPython installed): IPython's own InteractiveShell, its
display hook and publisher writing e2b's result lines, configured as e2b's
template configures its kernel. Loaded by the server before it forks the
first worker (see kernel.py); the cells run in the worker (sg_cells.py).
"""
import json
import os
import sys

from sg_cells import (WARM_UP, Alarm, Capture, CellTimeout, Worker, b64, error_line, is_date,
                      kill_others, timeout_error)


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


def show_on_save(image_module):
    """PIL's Image.save(path) shows the image too, a PNG result before the
    file is written, as e2b's template has it (a startup script of its
    kernel wraps the method); saved to a file object, it shows nothing."""
    import functools
    save = image_module.Image.save

    @functools.wraps(save)
    def save_shown(self, fp, format=None, **params):
        if isinstance(fp, str):
            from IPython.display import display
            display(self)
        return save(self, fp, format, **params)

    image_module.Image.save = save_shown


class ShowOnSave:
    """show_on_save, once a cell imports PIL.Image: e2b's kernel imports it
    at start, which here would slow every sandbox's first run."""

    def find_spec(self, name, path=None, target=None):
        if name != "PIL.Image":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = getattr(finder, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            show_on_save(module)

        loader.exec_module = exec_module
        return spec

    @classmethod
    def install(cls):
        if "PIL.Image" in sys.modules:
            show_on_save(sys.modules["PIL.Image"])
        else:
            sys.meta_path.insert(0, cls())


# Modules IPython's shell imports as it loads but uses only later, by
# attribute (a traceback: stack_data, pydoc; a cell with a top-level await:
# asyncio; a shell command, !cmd: pexpect; IPython's cell names, replaced
# here: hashlib): about a fifth of IPython's import time.
DEFERRED = ("asyncio", "stack_data", "pydoc", "hashlib", "pexpect")


class Deferred:
    """A module's name in IPython's modules while it loads, imported the
    usual way the first time IPython uses it. It is in sys.modules only
    while IPython loads, so a cell's own import is the usual one, and the
    module the cell gets is the one IPython then uses."""

    __spec__ = None     # what `import` looks at in sys.modules: not a load

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        import importlib
        if sys.modules.get(self._name) is self:
            del sys.modules[self._name]   # asked for while IPython loads
        return getattr(importlib.import_module(self._name), attr)


def defer_modules():
    """Put a Deferred in sys.modules for each of DEFERRED not yet loaded;
    the function that takes them out again."""
    placed = [Deferred(n) for n in DEFERRED if n not in sys.modules]
    for d in placed:
        sys.modules[d._name] = d

    def take_out():
        for d in placed:
            if sys.modules.get(d._name) is d:
                del sys.modules[d._name]
    return take_out


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
    take_out = defer_modules()
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
        take_out()
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
            ShowOnSave.install()
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

    def warm(self):
        """A first cell's one-time costs paid now, leaving no trace: not
        counted (store_history off), the result variables it set put back
        (its lines go out as a run's, and the server drops them)."""
        shell = self.shell
        saved = {k: shell.user_ns.get(k) for k in ("_", "__", "___")}
        shell.out.line({"type": "number_of_executions", "execution_count": shell.execution_count})
        try:
            with Capture(shell.out):
                with Alarm(30):
                    shell.run_cell(WARM_UP, store_history=False)
        finally:
            shell.user_ns.update(saved)

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
