"""Notebook widgets: sliders -> lessonlib compute -> lessonlib.plots draw functions.

One module per topic. A factory returns a small object with ``.ui`` (the ipywidgets box to
display, holding the sliders and the ipympl canvas), ``.readout`` (the text shown under the
figure, what tests read), the sliders by name and the artists it updates in place.
Callbacks are three lines: compute, update artists, update readout.
"""


def __getattr__(name):
    """``widgets.<topic>`` imports the topic module on first use (nothing at package import)."""
    import importlib
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
