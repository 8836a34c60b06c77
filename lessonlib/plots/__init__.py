"""draw(ax, data) functions for the notebooks, one module per topic.

Each function draws onto an ``ax`` it is given (matplotlib only, no computation beyond
formatting) and returns the artists a widget updates in place. Importing this package imports
every topic module (and so matplotlib): ``plots.attention``, ``plots.kv_cache``, ...

``FIGURE_WIDTH`` (9.2 inches: 920 px at JupyterLab's 100 dpi, inside the ~930 px output area
beside the file browser) is the one width of every widget's figure; the widgets import it.
``draw_needle_heatmap`` is ``plots.long_context``'s, re-exported. The topic modules' ``PALETTE``
(the figures' colours by role: Okabe & Ito's colour-blind-safe palette) and ``STYLES`` (the
curves' colour, line style and marker, in order) are one shared set.
"""
from . import attention, kv_cache, long_context, paged, rope, tinylm, triton, windows  # noqa: F401
from ._style import FIGURE_WIDTH
from .long_context import draw_needle_heatmap

__all__ = ["draw_needle_heatmap", "FIGURE_WIDTH"]
