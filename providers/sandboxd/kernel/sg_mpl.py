"""A matplotlib backend for sandgate's kernel: Agg, with figures handed to
the kernel instead of a window.

Plain kernel: show() keeps the figures in SHOWN; the kernel turns them, and
the figures still open, into PNG results after the cell.

IPython kernel: what Jupyter's inline backend (so e2b) does. show() displays
every open figure (a PNG and a text result, in order with the cell's other
displays) and closes it; figures a cell made and left open are displayed
after the cell, so after its main result.
"""
import sys

import matplotlib
from matplotlib._pylab_helpers import Gcf
from matplotlib.backends.backend_agg import FigureCanvasAgg, _BackendAgg  # noqa: F401
from matplotlib.backend_bases import _Backend

SHOWN = []


def _ipython_shell():
    """The IPython shell running the cells, if there is one."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if callable(get) else None


SHELL = _ipython_shell()
_made = [False]  # the cell made a figure since the last display


def _display_open_figures():
    from IPython.display import display
    try:
        for manager in Gcf.get_all_fig_managers():
            display(manager.canvas.figure)
    finally:
        _made[0] = False
        if Gcf.get_all_fig_managers():
            import matplotlib.pyplot as plt
            plt.close("all")


def _after_cell():
    if _made[0]:
        try:
            _display_open_figures()
        except Exception:
            SHELL.showtraceback()


@_Backend.export
class _BackendSandgate(_BackendAgg):
    @classmethod
    def new_figure_manager_given_figure(cls, num, figure):
        manager = super().new_figure_manager_given_figure(num, figure)
        if SHELL is not None:
            # fig.show() displays it, as in Jupyter.
            from IPython.display import display
            figure.show = lambda *args, **kwargs: display(figure)
        return manager

    @staticmethod
    def draw_if_interactive():
        if SHELL is not None and matplotlib.is_interactive():
            _made[0] = True

    @staticmethod
    def show(*args, **kwargs):
        if SHELL is not None:
            _display_open_figures()
            return
        import matplotlib.pyplot as plt
        for n in plt.get_fignums():
            SHOWN.append(plt.figure(n))
        plt.close("all")


if SHELL is not None:
    matplotlib.interactive(True)
    SHELL.events.register("post_execute", _after_cell)

FigureCanvas = FigureCanvasAgg
