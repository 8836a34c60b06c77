"""The small frame every notebook widget shares: controls, an ipympl canvas, a text readout."""
import html

import ipywidgets as widgets
import matplotlib.pyplot as plt

__all__ = ["Explorer", "new_figure", "freeze_layout", "slider_layout"]


def new_figure(figsize=(7.5, 3.8), ncols=1, nrows=1, **kw):
    """A figure laid out once (constrained layout) and not shown by pyplot on its own.

    Under ``%matplotlib widget`` its canvas is an ipympl widget that ``Explorer`` displays;
    headless (Agg, in tests) it is a plain canvas and only the data and readout matter.
    """
    with plt.ioff():
        fig, axes = plt.subplots(nrows, ncols, figsize=figsize, layout="constrained", **kw)
    canvas = fig.canvas
    if isinstance(canvas, widgets.DOMWidget):  # ipympl: no figure title bar, no resize handle
        canvas.header_visible = False
        canvas.resizable = False
        # Widgets draw before they are displayed; ipympl 0.10 then syncs that first image as
        # bare base64 without its data: prefix, JupyterLab requests it as a URL and the canvas
        # stays 0 x 0 (no figure at all). The browser tests catch this.
        canvas.syncing_data_url = False
    return fig, axes


class Explorer:
    """Sliders that drive a figure and a readout. ``update()`` recomputes and redraws.

    ``controls`` maps names to ipywidgets; ``redraw(**values) -> str`` updates the artists in
    place and returns the readout text. Moving any control calls it again.
    """

    def __init__(self, controls, fig, redraw):
        self.controls = dict(controls)
        self.fig = fig
        self._redraw = redraw
        self._readout = widgets.HTML()
        for c in self.controls.values():
            c.observe(lambda change: self.update(), names="value")
        self.update()

    @property
    def values(self):
        return {name: c.value for name, c in self.controls.items()}

    @property
    def readout(self):
        """The readout as plain text (what the notebook shows under the figure)."""
        return self._readout_text

    def update(self):
        self._readout_text = self._redraw(**self.values)
        self._readout.value = f"<pre style='font-size:110%'>{html.escape(self._readout_text)}</pre>"
        self.fig.canvas.draw_idle()

    @property
    def ui(self):
        canvas = self.fig.canvas
        figure = canvas if isinstance(canvas, widgets.DOMWidget) else widgets.Output()
        return widgets.VBox([widgets.HBox(list(self.controls.values())), figure, self._readout])

    def _ipython_display_(self):
        from IPython.display import display
        display(self.ui)


def freeze_layout(fig):
    """Lay the figure out once and keep it: later redraws only draw.

    Constrained layout, and matplotlib's placement of axis labels and titles, would otherwise
    be recomputed from every tick label's extent on every redraw (more than half of a redraw's
    time). One full draw places everything with the first data; those positions are then
    fixed (an axis whose tick labels may widen needs extra ``labelpad`` before this). Slider
    moves keep axis limits, so nothing needs to move.
    """
    fig.canvas.draw()
    fig.set_layout_engine("none")
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            label = axis.label
            anchor = label.get_transform().transform(label.get_position())  # display coords
            axis.set_label_coords(*ax.transAxes.inverted().transform(anchor))
        ax.set_title(ax.get_title(), y=ax.title.get_position()[1])
    return fig


def slider_layout(width="330px"):
    """Keyword arguments that give a slider a fixed width and an unclipped description."""
    return dict(layout=widgets.Layout(width=width), style={"description_width": "initial"})
