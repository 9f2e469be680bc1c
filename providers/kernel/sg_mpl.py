"""A matplotlib backend for sandgate's kernel: Agg, with a show() that
hands the figures to the kernel (as PNG results) instead of a window."""
from matplotlib.backends.backend_agg import FigureCanvasAgg, _BackendAgg  # noqa: F401
from matplotlib.backend_bases import _Backend

SHOWN = []


@_Backend.export
class _BackendSandgate(_BackendAgg):
    @staticmethod
    def show(*args, **kwargs):
        import matplotlib.pyplot as plt
        for n in plt.get_fignums():
            SHOWN.append(plt.figure(n))
        plt.close("all")

FigureCanvas = FigureCanvasAgg
