"""The small frame every notebook widget shares: controls, an ipympl canvas, a text readout.

What a student sees is the same everywhere: the figure fits the width it is given (JupyterLab's
output area beside the file browser, a projector's page) by scaling, never by being cut
(``FIT_CSS``); a control that has no effect in the current state is disabled
(``Explorer(..., disabled_when=...)``); and where no kernel runs (GitHub, nbviewer, an
nbconvert export) the output shows a picture of the figure as first drawn (``Explorer``'s
display puts it in the output before the live widget, which hides it once it runs).
"""
import base64
import html
import io
import struct
import zlib

import anywidget
import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import traitlets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.layout_engine import PlaceHolderLayoutEngine
from matplotlib.text import Text

from .. import _validate as check
from .. import runtime
from ..configs import config_dict  # "a config name or a dict": compute's one reader
from ..models import Model, load_model
from ._glyphs import fast_text

__all__ = ["Explorer", "new_figure", "freeze_layout", "slider_layout", "checkbox", "config_dict",
           "model_arg", "rope_arg",
           "slider_int", "slider_real", "option", "int_list"]


# ------------------------------------------------------------------ a factory's arguments
# ipywidgets clamps a slider's starting value into its range, silently: a factory checks its
# arguments first, with lessonlib's one vocabulary, so a value it cannot show is an error.


def model_arg(model, name="config"):
    """The ``models.Model`` a factory's ``name`` argument gives (a Model, a shipped config's
    name or a config.json dict), read once; a config that cannot be read is an error naming
    the argument and the key."""
    try:
        return load_model(model)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None


def rope_arg(config, name="config"):
    """(name, ``rope.ScalingParameters``) of a factory's RoPE argument: a ``models.Model`` (its
    ``scaling``, read once), a shipped config's name, or a config.json dict, a whole model's or
    one head's (``{"head_dim": 128, "rope_theta": 10000.0}`` is a plain RoPE head). Errors name
    the argument and the key."""
    from ..rope import scaling_parameters
    if isinstance(config, Model):
        return config.name, config.scaling
    cfg = config_dict(config, name)  # compute's errors name the key
    return (config if isinstance(config, str) else str(cfg.get("model_type") or "head"),
            scaling_parameters(cfg))

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
    fast_text(canvas)  # its texts' layouts and glyph images kept between frames (_glyphs)
    if isinstance(canvas, widgets.DOMWidget):  # ipympl: no figure title bar, no resize handle
        canvas.header_visible = False
        canvas.footer_visible = False  # the cursor's coordinates: 20 px the readout needs
        canvas.resizable = False
        # Widgets draw before they are displayed; ipympl 0.10 then syncs that first image as
        # bare base64 without its data: prefix, JupyterLab requests it as a URL and the canvas
        # stays 0 x 0 (no figure at all). The browser tests catch this.
        canvas.syncing_data_url = False
        fast_frames(canvas)
        resend_current_frames(canvas)
    return fig, axes


def fast_frames(canvas):
    """Encode the frames ipympl sends faster: unfiltered rows, zlib level 1 (``png_rgba``).

    Each slider step sends the changed pixels as a PNG (matplotlib's ``get_diff_image``: the
    pixels that differ from the last frame sent, the others transparent). Pillow's encoder
    (a filter chosen per row, zlib level 6) takes about as long as drawing a 920 x 440 frame;
    this takes about half of that. Same pixels, same full/diff rule: tests/test_widgets_base.py
    decodes both encoders' frames and compares them.
    """
    needed = ("_png_is_old", "_force_full", "_last_buff", "set_image_mode", "get_renderer")
    if not all(hasattr(canvas, a) for a in needed):
        return  # not a webagg-style canvas: nothing is sent as PNG

    def get_diff_image():
        if not canvas._png_is_old:
            return None
        pixels = np.asarray(canvas.get_renderer().buffer_rgba())
        buff = pixels.view(np.uint32).squeeze(2)  # one uint32 per pixel: compared at once
        if (canvas._force_full or buff.shape != canvas._last_buff.shape
                or (pixels[:, :, 3] != 255).any()):  # transparency cannot be overlaid
            canvas.set_image_mode("full")
            output = buff
        else:
            canvas.set_image_mode("diff")
            output = np.where(buff != canvas._last_buff, buff, 0)
        canvas._last_buff = buff.copy()
        canvas._force_full = False
        canvas._png_is_old = False
        return png_rgba(output.view(np.uint8).reshape((*output.shape, 4)))

    canvas.get_diff_image = get_diff_image


def resend_current_frames(canvas):
    """Answer a browser's request for a full frame with the frame already drawn, when nothing
    has changed since it was drawn.

    ipympl asks for a full draw when a view opens (its "refresh", twice per figure when
    Voila opens a page) and whenever the figure is stale after a kernel message (pyplot's
    ``draw_all`` runs after every widget message). ``Explorer`` leaves the figure's complete
    current frame in the canvas's buffer after each update and marks the figure fresh, so a
    full draw there would render the same pixels again: a fifth of a second per figure on
    notebook 10, while the next key press waits. A stale figure, or one whose size or dpi
    changed since its last frame, is drawn in full as before.
    """
    if not (hasattr(canvas, "manager") and hasattr(canvas, "_png_is_old")):
        return  # not a webagg-style canvas: its draws send nothing anywhere
    full_draw = canvas.draw

    def draw():
        fig = canvas.figure
        size = (*canvas.get_width_height(physical=True), fig.dpi)
        if fig.stale or getattr(canvas, "_lastKey", None) != size or canvas.manager is None:
            return full_draw()
        canvas._png_is_old = True  # the buffer holds the frame: send it (full or diff)
        canvas.manager.refresh_all()

    canvas.draw = draw


def png_rgba(rgba, level=1):
    """An (h, w, 4) uint8 array as a PNG: every row unfiltered (filter type 0), zlib ``level``.

    Pillow picks a filter per row, which costs more than the compression; a diff frame (mostly
    transparent zeros) compresses well without one. Rows of zeros above and below the rows that
    hold anything (in a diff frame, rows where nothing changed) are not compressed at all: the
    zlib stream there is a kept deflate block of zeros (``_zero_rows``), and only the rows
    between them go through zlib. Any PNG decoder reads it.
    """
    h, w, _ = rgba.shape
    rows = np.zeros((h, w * 4 + 1), np.uint8)  # a 0 (no filter) before each row
    rows[:, 1:] = rgba.reshape(h, w * 4)
    used = np.flatnonzero(rgba.reshape(h, w * 4).any(axis=1))
    top, bottom = (int(used[0]), int(used[-1]) + 1) if used.size else (h, h)
    band = zlib.compressobj(level, zlib.DEFLATED, -15)  # raw deflate: blocks, no header
    stream = b"".join([
        b"\x78\x01",  # zlib's header: deflate with a 32 KiB window
        _zero_rows(top, rows.shape[1]),
        band.compress(rows[top:bottom]) + band.flush(zlib.Z_SYNC_FLUSH),
        _zero_rows(h - bottom, rows.shape[1]),
        b"\x03\x00",  # an empty final block
        struct.pack(">I", zlib.adler32(rows) & 0xFFFFFFFF)])

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)  # 8 bits, RGBA, no interlace
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", stream)
            + chunk(b"IEND", b""))


_ZERO_BLOCKS = {}  # (rows, row bytes) -> raw deflate blocks of that many zero bytes


def _zero_rows(n, stride):
    """Raw deflate blocks (byte-aligned, not final) that inflate to ``n * stride`` zeros: kept
    blocks for 1, 2, 4, ... rows, joined by the binary digits of ``n``."""
    parts, k = [], 1
    while n:
        if n & 1:
            key = (k, stride)
            if key not in _ZERO_BLOCKS:
                zeros = zlib.compressobj(9, zlib.DEFLATED, -15)
                _ZERO_BLOCKS[key] = zeros.compress(bytes(k * stride)) + \
                    zeros.flush(zlib.Z_SYNC_FLUSH)
            parts.append(_ZERO_BLOCKS[key])
        n, k = n >> 1, k << 1
    return b"".join(parts)


def _neighbours(control):
    """The values one step from a control's current one (a slider's, a checkbox's, a choice's
    neighbouring option), the settings a student's first move reaches; none for anything else
    (a text box, an upload)."""
    value = control.value
    if isinstance(control, (widgets.Checkbox, widgets.ToggleButton)):
        return [not value]
    if isinstance(control, (widgets.SelectionSlider, widgets.Dropdown, widgets.ToggleButtons,
                            widgets.RadioButtons)):
        values = [o[1] if isinstance(o, tuple) else o for o in control.options]
        if value not in values:
            return []
        i = values.index(value)
        return [values[j] for j in (i - 1, i + 1) if 0 <= j < len(values)]
    if isinstance(control, (widgets.IntSlider, widgets.FloatSlider)):
        return [v for v in (value - control.step, value + control.step)
                if control.min <= v <= control.max]
    return []


class Explorer:
    """Sliders that drive a figure and a readout. ``update()`` recomputes and redraws.

    ``controls`` maps names to ipywidgets; ``redraw(**values)`` updates the artists in place
    and returns the readout text, or ``(readout, data)`` where ``data`` is a dict of the numbers
    the figure now shows (kept as ``explorer.data``, what tests and notebooks read). Moving any
    control calls it again. ``axes`` and ``artists`` (a dict) name what the factory drew, kept
    as ``explorer.axes`` and ``explorer.artists``: every factory builds its Explorer this one
    way, after ``freeze_layout``. With ``blit`` (the default) and a frozen layout
    (``freeze_layout``) only what can change is redrawn on top of a cached background; under a
    live layout engine every update is a full redraw.
    """

    def __init__(self, controls, fig, redraw, *, axes=(), artists=None, blit=True,
                 disabled_when=None, wrap=False):
        self.controls = dict(controls)
        self._wrap = check.flag("wrap", wrap)  # controls wrap onto more rows when narrow
        self.fig = fig
        self.axes = tuple(axes)
        self.artists = dict(artists or {})
        self.data = {}  # the numbers the figure shows, from redraw's (readout, data)
        self._redraw = redraw
        # name -> values -> True when that control has no effect (it is then disabled)
        self._disabled_when = dict(disabled_when or {})
        unknown = set(self._disabled_when) - set(self.controls)
        if unknown:
            raise ValueError(f"disabled_when names no control: {sorted(unknown)}")
        self._readout = widgets.HTML()
        self._blit = blit
        self._background = None  # the figure without its changing artists, once drawn
        self._signature = None  # what the background shows: limits, ticks, labels, size
        self._inside = {}  # (text, axes) -> the text is drawn over the axes (_inside_axes)
        self._text_states = {}  # id(text) -> its state when the figure was last drawn
        # We draw when a control moves; pyplot's "redraw whenever anything is stale" would
        # add a full draw round trip through the browser on every slider step.
        fig.stale_callback = None
        for c in self.controls.values():
            c.observe(lambda change: self.update(), names="value")
        # The texts one step of any control changes, found before the first draw: the
        # background leaves them out from the start, so no first step draws it again.
        self._changing_texts = self._texts_changed_at(
            {name: v} for name, c in self.controls.items() for v in _neighbours(c))
        self.update()

    @property
    def values(self):
        return {name: c.value for name, c in self.controls.items()}

    @property
    def readout(self):
        """The readout as plain text (what the notebook shows under the figure)."""
        return self._readout_text

    def update(self):
        values = self.values
        for name, off in self._disabled_when.items():
            self.controls[name].disabled = bool(off(values))
        self._readout_text = self._call_redraw(values)
        self._show_readout()
        if self._blit and not self._layout_is_live():
            self._draw_changes()
        else:
            self.fig.canvas.draw_idle()

    def _show_readout(self):
        self._readout.value = f"<pre style='font-size:110%'>{html.escape(self._readout_text)}</pre>"

    def _call_redraw(self, values):
        """The readout text; ``data`` replaced when redraw returns (readout, data)."""
        result = self._redraw(**values)
        if isinstance(result, tuple):
            result, data = result
            self.data = dict(data)
        return result

    def rehearse(self, **values):
        """Find the texts another setting (``values`` for some controls) changes, without
        moving any control, and leave them out of the blitted background from now on.

        The background leaves out a text only once it has been seen to change; the first move
        that changes one (a title's number, a moving label) redraws the whole background,
        several steps' time. Every Explorer looks one step along each control at construction
        (``_neighbours``); a factory rehearses the settings further away where a text changes
        only there, so that a student's first move of each slider is an ordinary step. The
        figure and readout stay at the current setting (the background is drawn again, once,
        if the rehearsal found a text it held).
        """
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"rehearse: no control named {sorted(unknown)}")
        found = self._texts_changed_at([values]) - self._changing_texts
        if found:
            self._changing_texts |= found
            if self._background is not None and self._blit and not self._layout_is_live():
                self._signature = None  # the background holds those texts: draw it again
                self._draw_changes()

    def _texts_changed_at(self, settings):
        """The ids of the texts whose state differs from the current setting's at any of
        ``settings`` (each a dict of some controls' values), by calling redraw there and back:
        the artists change, nothing is drawn, no control moves; the readout and data end at
        the current setting."""
        now = self.values
        self._readout_text = self._call_redraw(now)
        here = {id(t): self._text_state(t) for t in self._texts()}
        changed = set()
        moved = False
        for setting in settings:
            setting = {**now, **setting}
            if setting == now:
                continue
            self._call_redraw(setting)
            moved = True
            changed |= {id(t) for t in self._texts() if here.get(id(t)) != self._text_state(t)}
        if moved:
            self._readout_text = self._call_redraw(now)
        return changed

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
        """True when the text is drawn over the plotting area, where changing artists go.

        Kept per text until the background is drawn again: a text that moves or changes has
        a new state, and a new state redraws the background."""
        key = (id(text), id(ax))
        if key not in self._inside:
            try:
                extent = text.get_window_extent(self.fig.canvas.get_renderer())
                self._inside[key] = extent.overlaps(ax.bbox)
            except (RuntimeError, ValueError):
                self._inside[key] = True
        return self._inside[key]

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

    @staticmethod
    def _ticks(axis):
        """An axis's major tick positions and their labels, as a draw would compute them but
        without updating the axis's Tick objects (``get_ticklabels`` does that: it took most
        of a step's bookkeeping)."""
        locs = tuple(axis.get_majorticklocs())
        return locs, tuple(axis.get_major_formatter().format_ticks(locs))

    def _static_signature(self):
        sig = [tuple(self.fig.get_size_inches()), self.fig.dpi]
        for ax in self.fig.axes:
            sig += [ax.get_position().bounds, ax.get_xlim(), ax.get_ylim(), ax.get_xscale(),
                    ax.get_yscale(), self._ticks(ax.xaxis), self._ticks(ax.yaxis),
                    ax.get_xlabel(), ax.get_ylabel(), ax.axison]
        return sig

    def _draw_changes(self):
        canvas = self.fig.canvas
        texts = {id(t): self._text_state(t) for t in self._texts()}
        if self._background is None:
            self._text_states = texts
        changed = {k for k, v in texts.items() if self._text_states.get(k) != v}
        self._text_states = texts
        signature = self._static_signature()
        if self._background is None or signature != self._signature \
                or not changed <= self._changing_texts:
            self._changing_texts |= changed
            self._inside = {}
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
        # The buffer now holds the whole current frame. Left stale, the figure would be drawn
        # again in full after the widget message that moved a control (pyplot's draw_all).
        self.fig.stale = False

    @property
    def ui(self):
        canvas = self.fig.canvas
        figure = canvas if isinstance(canvas, widgets.DOMWidget) else widgets.Output()
        row = widgets.HBox(list(self.controls.values()))
        if self._wrap:
            row.layout = widgets.Layout(flex_flow="row wrap")
        box = widgets.VBox([row, figure, self._readout,
                            PageHelper(info=self._figure_info(),
                                       canvas=canvas.model_id if figure is canvas else "")])
        box.add_class(EXPLORER_CLASS)
        return box

    def smallest_text_px(self):
        """The smallest visible text of the figure, in pixels at its dpi (before any scaling)."""
        sizes = [t.get_fontsize() for t in self.fig.findobj(Text)
                 if t.get_visible() and t.get_text().strip()]
        return min(sizes) * self.fig.dpi / 72 if sizes else None

    def _figure_info(self):
        """What the browser tests read about the figure: its size and smallest text."""
        width, height = (self.fig.get_size_inches() * self.fig.dpi).round().astype(int)
        return (f'<span class="lessonlib-figure-info" hidden data-figure-px="{width}x{height}" '
                f'data-smallest-text-px="{self.smallest_text_px():.1f}"></span>')

    def _settings_text(self, values):
        """The controls' settings as a reader would name them: ``base = 500,000, s = 8``."""
        parts = []
        for name, value in values.items():
            control = self.controls[name]
            label = (control.description or name).rstrip(": ")
            options = getattr(control, "options", None)
            if isinstance(control, widgets.FileUpload) or (
                    isinstance(control, (widgets.Text, widgets.Textarea)) and not value):
                continue  # nothing uploaded or typed: not a setting a reader could make
            if options and all(isinstance(o, tuple) for o in options):
                shown = next((str(o[0]) for o in options if o[1] == value), str(value))
            elif isinstance(value, bool):
                shown = "on" if value else "off"
            elif isinstance(value, (int, np.integer)):
                shown = f"{value:,}"
            elif isinstance(value, (float, np.floating)):
                shown = f"{value:,.6g}"
            else:
                shown = str(value)
            parts.append(f"{label} = {shown}")
        return ", ".join(parts)

    def picture(self, values=None):
        """The figure as a PNG output bundle (what viewers without a kernel show): as it is now,
        or at ``values`` (some controls' settings; the live figure does not move)."""
        now = self.values
        setting = {**now, **(values or {})}
        if setting != now:
            self._call_redraw(setting)
        try:
            png = io.BytesIO()
            self.fig.savefig(png, format="png", dpi=self.fig.dpi)  # an Agg copy; canvas stays
        finally:
            if setting != now:
                self._readout_text = self._call_redraw(now)
        width, height = (self.fig.get_size_inches() * self.fig.dpi).round().astype(int)
        if values:
            text = (f"[a picture of the figure at {self._settings_text(values)}, "
                    f"{width} x {height} px]")
        elif self.controls:
            text = (f"[a picture of the figure as first drawn, {width} x {height} px: run the "
                    f"notebook to move its controls]")
        else:
            text = f"[a picture of the figure, {width} x {height} px]"
        return {"image/png": base64.b64encode(png.getvalue()).decode("ascii"),
                "text/plain": text}

    def readout_at(self, **values):
        """The readout text at some controls' settings, without moving the live figure."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"readout_at: no control named {sorted(unknown)}")
        now = self.values
        text = self._call_redraw({**now, **values})
        self._readout_text = self._call_redraw(now)
        return text

    def _readout_output(self, values=None):
        """The readout as a text output: GitHub, nbviewer and an HTML export show it under the
        picture, and nbval compares it with the committed one on every run."""
        text = self.readout_at(**values) if values else self.readout
        settings = self._settings_text({**self.values, **(values or {})})
        head = f"[readout at {settings}]\n" if settings else "[readout]\n"
        return {"text/plain": head + text}

    def snapshot(self, **values):
        """Show the figure and its readout at other settings of some controls (``m=4096``), as
        a picture and text, without moving the live widget: the state the text invites a
        student to reach, visible where no kernel runs."""
        from IPython.display import display
        unknown = set(values) - set(self.controls)
        if not values or unknown:
            raise ValueError(f"snapshot: name one or more of the controls {sorted(self.controls)}"
                             + (f"; no control named {sorted(unknown)}" if unknown else ""))
        if runtime.in_presenter():
            return  # the presenter shows live widgets only: the instructor moves the control
        display(self.picture(values), raw=True)
        display(self._readout_output(values), raw=True)

    def _ipython_display_(self):
        from IPython.display import display
        # First the picture, then the live widget: JupyterLab and Voila show the widget (its
        # FIT_CSS hides the picture before it), GitHub, nbviewer and nbconvert the picture.
        # The presenter shows widgets only: no picture there (a full draw saved per widget).
        if not runtime.in_presenter():
            display(self.picture(), raw=True)
            display(self._readout_output(), raw=True)
        bundle = self.ui._repr_mimebundle_()
        bundle["text/plain"] = LIVE_TEXT  # what a viewer shows for the widget: not its repr
        display(bundle, raw=True)


# Figures fit the width they are given (JupyterLab's output area beside the file browser, a
# projector's page): ipympl sizes its canvas in pixels with inline styles, so the canvas is
# scaled down, keeping its aspect (a canvas's intrinsic ratio), never cut. A <style> inside an
# HTML widget reaches the page whatever JupyterLab's sanitizer does to outputs, and only where
# the widget runs: there it also hides the static picture displayed just before it.
# A disabled slider (Explorer(disabled_when=...)) shows a dimmed track; its label and number
# keep their contrast (the accessibility audit reads them).
EXPLORER_CLASS = "lessonlib-explorer"
LIVE_TEXT = "[the live widget: its controls move the figure when the notebook runs]"
FIT_CSS = f"""
.jupyter-matplotlib-canvas-div {{ width: auto !important; max-width: 100%; height: auto !important; }}
.jupyter-matplotlib-canvas-div canvas {{ max-width: 100%; height: auto !important; }}
.jupyter-matplotlib-canvas-div canvas:first-child {{ position: relative !important; }}
.jupyter-matplotlib-figure, .jupyter-matplotlib-canvas-container {{ max-width: 100%; }}
.jp-OutputArea-child:has(+ .jp-OutputArea-child .{EXPLORER_CLASS}) {{ display: none; }}
.jp-OutputArea-child:has(+ .jp-OutputArea-child + .jp-OutputArea-child .{EXPLORER_CLASS}) {{ display: none; }}
.{EXPLORER_CLASS} .widget-slider:has([disabled]) .noUi-target {{ opacity: 0.3; }}
.{EXPLORER_CLASS} .widget-slider:has([disabled]) {{ cursor: not-allowed; }}
"""

# ipywidgets gives a slider's handle (role="slider") no accessible name and says nowhere that
# the number beside it can be typed into: the page helper, a small anywidget at the end of
# every Explorer, names each handle after its slider's label and marks the number box.
#
# It also takes the frames' work off the page's main thread, where it delays everything else
# a key press does. ipympl's frontend, on each frame it receives, (1) re-encodes its whole
# offscreen canvas with toDataURL (to keep the model's _data_url, the picture a saved widget
# state would hold), synchronously, before the new frame is drawn: 30-40 ms per 930 x 440
# frame in headless Chromium on these machines; and (2) loads the frame through a blob URL
# into an <img>, which the browser decodes on the main thread when it is drawn. The helper
# replaces that canvas model's handle_binary: the frame is decoded by createImageBitmap (off
# the main thread), drawn in arrival order (full frames clear first, diff frames are drawn
# over the last, as ipympl does), and _data_url is set, to the frame now shown, once frames
# stop (DATA_URL_DELAY_MS). Where the comm is not live (a saved state) or the browser has no
# createImageBitmap, ipympl's own path runs, its encode still deferred. The box's
# data-lessonlib-frames attribute says the handler is installed, data-lessonlib-decoded counts
# the frames it decoded and data-lessonlib-data-urls the deferred encodes (the browser tests
# read all three). ipympl redraws its <img> only after a resize, which the kernel follows with
# a full frame.
DATA_URL_DELAY_MS = 500
_PAGE_ESM = """
function count(box, key) {
  box.dataset[key] = String(Number(box.dataset[key] || 0) + 1);
}
function fastFrames(canvas, box) {
  if (typeof canvas.handle_binary !== 'function') return;
  if (!canvas.__lessonlibFrames) {
    canvas.__lessonlibFrames = true;
    const ipympl = canvas.handle_binary;
    let timer = null, queue = Promise.resolve();
    const keepDataUrl = (model) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        model.set('_data_url', model.offscreen_canvas.toDataURL());
        count(box, 'lessonlibDataUrls');
      }, DATA_URL_DELAY_MS);
    };
    const ipymplDeferred = (model, msg, buffers) => {
      const offscreen = model.offscreen_canvas;
      const kept = model.get('_data_url');
      offscreen.toDataURL = () => kept;  // for this call only: no encode before the draw
      try { ipympl.call(model, msg, buffers); } finally { delete offscreen.toDataURL; }
      keepDataUrl(model);
    };
    canvas.handle_binary = function (msg, buffers) {
      if (this.disabled || typeof createImageBitmap !== 'function') {
        return ipymplDeferred(this, msg, buffers);
      }
      const data = buffers[0];
      const bytes = ArrayBuffer.isView(data)
        ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);
      const full = this.get('_image_mode') === 'full';  // set by the message before the frame
      const decoded = createImageBitmap(new Blob([bytes], {type: 'image/png'}));
      this.waiting_for_image = false;
      queue = queue.then(() => decoded).then((bitmap) => {
        const offscreen = this.offscreen_canvas, context = this.offscreen_context;
        if (full) context.clearRect(0, 0, offscreen.width, offscreen.height);
        context.drawImage(bitmap, 0, 0);
        bitmap.close();
        this._for_each_view((view) => view.update_canvas());
        count(box, 'lessonlibDecoded');
        keepDataUrl(this);
      }, () => ipymplDeferred(this, msg, buffers));  // a frame it cannot decode: ipympl's path
    };
  }
  box.dataset.lessonlibFrames = 'decoded-off-thread';
}
function name(box) {
  for (const s of box.querySelectorAll('.widget-slider')) {
    const label = s.querySelector('.widget-label');
    const text = label ? label.textContent.trim() : '';
    if (!text) continue;
    const handle = s.querySelector('.noUi-handle');
    if (handle && handle.getAttribute('aria-label') !== text) handle.setAttribute('aria-label', text);
    const typed = s.querySelector('.widget-readout');
    if (typed && !typed.hasAttribute('aria-label')) {
      typed.setAttribute('aria-label', `${text}: type a value, then press Enter`);
      typed.title = 'type a value, then press Enter';
    }
  }
}
export default {
  render({ model, el }) {
    el.innerHTML = model.get('info');
    const start = () => {
      const box = el.closest('.lessonlib-explorer');
      if (!box) return requestAnimationFrame(start);
      name(box);
      new MutationObserver(() => name(box)).observe(box, {childList: true, subtree: true});
      const id = model.get('canvas');
      if (id && model.widget_manager) {
        model.widget_manager.get_model(id).then((canvas) => fastFrames(canvas, box),
                                                () => {});
      }
    };
    start();
  }
};
""".replace("DATA_URL_DELAY_MS", str(DATA_URL_DELAY_MS))


class PageHelper(anywidget.AnyWidget):
    """The page side of an Explorer: the fit rules (CSS) and the controls' accessible names."""
    _esm = _PAGE_ESM
    _css = FIT_CSS
    info = traitlets.Unicode("").tag(sync=True)  # the figure's size and smallest text
    canvas = traitlets.Unicode("").tag(sync=True)  # the ipympl canvas's model id, if any


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


def checkbox(description, value, *, width=None):
    """A checkbox whose label shows in full (no indent before the box, the width its text needs)."""
    layout = widgets.Layout(width=width or "auto")
    return widgets.Checkbox(value=check.flag(description, value), description=description,
                            indent=False, layout=layout)


def slider_layout(width="330px"):
    """Keyword arguments that give a slider a fixed width and an unclipped description."""
    return dict(layout=widgets.Layout(width=width), style={"description_width": "initial"})
