"""The small frame every notebook widget shares: controls, an ipympl canvas, a text readout."""
import html

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.layout_engine import PlaceHolderLayoutEngine
from matplotlib.text import Text

from .. import _validate as check
from ..configs import load_config

__all__ = ["Explorer", "new_figure", "freeze_layout", "slider_layout", "config_dict",
           "slider_int", "slider_real", "option", "int_list"]


# ------------------------------------------------------------------ a factory's arguments
# ipywidgets clamps a slider's starting value into its range, silently: a factory checks its
# arguments first, with lessonlib's one vocabulary, so a value it cannot show is an error.

def config_dict(config, name="config"):
    """A config by name (``load_config``) or a copy of a config.json dict."""
    if isinstance(config, str):
        try:
            return load_config(config)
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from None
    if isinstance(config, dict):
        return dict(config)
    raise ValueError(f"{name} must be a config name or a config.json dict, got "
                     f"{check.describe(config)}")


def slider_int(name, value, lo, hi):
    """An integer slider's starting value: an int in [lo, hi]."""
    return check.integer(name, value, minimum=lo, maximum=hi)


def slider_real(name, value, lo, hi):
    """A float slider's starting value: a real number in [lo, hi]."""
    return check.real(name, value, minimum=lo, maximum=hi)


def option(name, value, options):
    """A selection slider's starting value: an integer that is one of ``options``."""
    v = check.integer(name, value)
    if v not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}")
    return v


def int_list(name, values, minimum=1):
    """A non-empty list of integers >= minimum (lengths, block sizes, pairs)."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a list of integers, got {check.describe(values)}")
    out = [check.integer(f"{name}[{i}]", v, minimum=minimum) for i, v in enumerate(values)]
    if not out:
        raise ValueError(f"{name} must name at least one value")
    return out


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
    place and returns the readout text. Moving any control calls it again. With ``blit`` (the
    default) and a frozen layout (``freeze_layout``) only what can change is redrawn on top of
    a cached background; under a live layout engine every update is a full redraw.
    """

    def __init__(self, controls, fig, redraw, *, blit=True):
        self.controls = dict(controls)
        self.fig = fig
        self._redraw = redraw
        self._readout = widgets.HTML()
        self._blit = blit
        self._background = None  # the figure without its changing artists, once drawn
        self._signature = None  # what the background shows: limits, ticks, labels, size
        # We draw when a control moves; pyplot's "redraw whenever anything is stale" would
        # add a full draw round trip through the browser on every slider step.
        fig.stale_callback = None
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
        if self._blit and not self._layout_is_live():
            self._draw_changes()
        else:
            self.fig.canvas.draw_idle()

    def _layout_is_live(self):
        """A layout engine moves axes on every draw: then only full redraws are right."""
        engine = self.fig.get_layout_engine()
        return engine is not None and not isinstance(engine, PlaceHolderLayoutEngine)

    # Blitting: most of a frame's cost is text (tick labels, axis labels, titles) and most of
    # that text does not change when a slider moves. The background holds the axes frames,
    # ticks, labels and the texts outside the plotting areas; each update restores it and
    # draws, in z-order, everything inside the axes (lines, patches, images, legends, notes)
    # plus any text seen to change. When anything the background shows could differ (limits,
    # ticks, labels, positions, size, or a text that had not changed before), it is redrawn.

    def _texts(self):
        for ax in self.fig.axes:
            yield from (a for a in ax.get_children() if isinstance(a, Text))
        yield from self.fig.texts

    @staticmethod
    def _text_state(t):
        return (t.get_text(), t.get_position(), t.get_color(), t.get_visible(),
                t.get_fontsize(), t.get_rotation())

    def _inside_axes(self, text, ax):
        """True when the text is drawn over the plotting area, where changing artists go."""
        try:
            return text.get_window_extent(self.fig.canvas.get_renderer()).overlaps(ax.bbox)
        except (RuntimeError, ValueError):
            return True

    def _changing_artists(self):
        for ax in self.fig.axes:
            static = {ax.patch, ax.xaxis, ax.yaxis}  # spines are cheap: drawn over patches
            for a in ax.get_children():
                if a in static or not a.get_visible():
                    continue
                if not isinstance(a, Text) or id(a) in self._changing_texts \
                        or self._inside_axes(a, ax):
                    yield ax, a
        for a in self.fig.texts:
            if a.get_visible() and id(a) in self._changing_texts:
                yield self.fig, a

    def _static_signature(self):
        sig = [tuple(self.fig.get_size_inches()), self.fig.dpi]
        for ax in self.fig.axes:
            sig += [ax.get_position().bounds, ax.get_xlim(), ax.get_ylim(), ax.get_xscale(),
                    ax.get_yscale(), tuple(ax.get_xticks()), tuple(ax.get_yticks()),
                    tuple(t.get_text() for t in ax.get_xticklabels()),
                    tuple(t.get_text() for t in ax.get_yticklabels()),
                    ax.get_xlabel(), ax.get_ylabel(), ax.axison]
        return sig

    def _draw_changes(self):
        canvas = self.fig.canvas
        texts = {id(t): self._text_state(t) for t in self._texts()}
        if self._background is None:
            self._changing_texts, self._text_states = set(), texts
        changed = {k for k, v in texts.items() if self._text_states.get(k) != v}
        self._text_states = texts
        signature = self._static_signature()
        if self._background is None or signature != self._signature \
                or not changed <= self._changing_texts:
            self._changing_texts |= changed
            changing = list(self._changing_artists())
            for _, a in changing:
                a.set_visible(False)
            try:  # Agg's own draw: render the background without sending it to a browser
                FigureCanvasAgg.draw(canvas)
                self._background = canvas.copy_from_bbox(self.fig.bbox)
            finally:
                for _, a in changing:
                    a.set_visible(True)
            self._signature = self._static_signature()
        else:
            canvas.restore_region(self._background)
        for parent, a in sorted(self._changing_artists(), key=lambda pa: pa[1].get_zorder()):
            parent.draw_artist(a)
        canvas.blit(self.fig.bbox)

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
