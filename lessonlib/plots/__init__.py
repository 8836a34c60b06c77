"""draw(ax, data) functions for the notebooks, one module per topic.

Each function draws onto an ``ax`` it is given (matplotlib only, no computation beyond
formatting) and returns the artists a widget updates in place.
"""
from .._lazy import topic_modules
from .needles import draw_needle_heatmap

__all__ = ["draw_needle_heatmap"]


__getattr__ = topic_modules(__name__)  # plots.<topic>: imported on first use
