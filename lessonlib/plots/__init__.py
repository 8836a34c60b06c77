"""draw(ax, data) functions for the notebooks, one module per topic.

Each function draws onto an ``ax`` it is given (matplotlib only, no computation beyond
formatting) and returns the artists a widget updates in place. Importing this package imports
every topic module (and so matplotlib): ``plots.attention``, ``plots.kv_cache``, ...
"""
from . import attention, kv_cache, long_context, rope, tinylm, triton, windows  # noqa: F401
from ._style import FIGURE_WIDTH
from .long_context import draw_needle_heatmap

__all__ = ["draw_needle_heatmap", "FIGURE_WIDTH"]
