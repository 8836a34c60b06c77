"""Notebook widgets: sliders -> lessonlib compute -> lessonlib.plots draw functions.

One module per topic; importing this package imports every one of them (and so matplotlib and
ipywidgets). A factory lays its figure out once and returns an ``Explorer`` (``widgets._base``):
``.ui`` (the ipywidgets box to display, holding the sliders and the figure), ``.readout`` (the
text shown under the figure, what tests read), the sliders by name and the artists it updates
in place. Its ``redraw(**values)`` callback calls compute, updates the artists in place and
returns the readout text: 3 to 12 lines, none of them computing what a compute function could.
"""
from . import attention, kv_cache, long_context, paged, rope, tinylm, triton, windows  # noqa: F401

__all__ = ["attention", "kv_cache", "long_context", "paged", "rope", "tinylm", "triton",
           "windows"]
