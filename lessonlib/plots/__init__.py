"""draw(ax, data) functions for the notebooks, one module per topic.

Each function draws onto an ``ax`` it is given (matplotlib only, no computation beyond
formatting) and returns the artists a widget updates in place.
"""
from .needles import draw_needle_heatmap

__all__ = ["draw_needle_heatmap"]


def __getattr__(name):
    """``plots.<topic>`` imports the topic module on first use."""
    import importlib
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
