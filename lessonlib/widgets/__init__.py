"""Notebook widgets: sliders -> lessonlib compute -> lessonlib.plots draw functions.

One module per topic. A factory returns a small object with ``.ui`` (the ipywidgets box to
display, holding the sliders and the ipympl canvas), ``.readout`` (the text shown under the
figure, what tests read), the sliders by name and the artists it updates in place.
Callbacks are three lines: compute, update artists, update readout.
"""
from .._lazy import topic_modules

__getattr__ = topic_modules(__name__)  # widgets.<topic>: imported on first use
