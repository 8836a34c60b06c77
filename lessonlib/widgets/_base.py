"""The small frame every notebook widget shares: controls, an ipympl canvas, a text readout.

What a student sees is the same everywhere: the figure fits the width it is given (JupyterLab's
output area beside the file browser, a projector's page) by scaling, never by being cut
(``FIT_CSS``); a control that has no effect in the current state is disabled
(``Explorer(..., disabled_when=...)``); where no kernel runs (GitHub, nbviewer, an
nbconvert export) the output shows a picture of the figure as first drawn (``Explorer``'s
display puts it in the output before the live widget, which hides it once it runs); and where
ipympl's front end is missing (JupyterLab without its extension, VS Code offline, a hosted
notebook) the frames show in a core ``ipywidgets.Image``, so the controls still move the figure.

How a frame is drawn and reaches the page, with everything that leans on ipympl's or
matplotlib's private API, the check that falls back to the plain ``canvas.draw_idle()`` path
where the installed versions differ, and the contract a ``redraw`` keeps (it is pure), is
``_render``'s.
"""
import base64
import html
import io

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
from ..models.configs import config_dict  # "a config name or a dict": compute's one reader
from ..models import Model, load_model
from ..models.shape import model_type
from . import _render

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
    return (config if isinstance(config, str) else model_type(cfg) or "head",
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
    _render.prepare_canvas(canvas, _render.fast_path_ok())  # the fast path's parts (_render)
    if isinstance(canvas, widgets.DOMWidget):  # ipympl: no figure title bar, no resize handle
        canvas.header_visible = False
        canvas.footer_visible = False  # the cursor's coordinates: 20 px the readout needs
        canvas.resizable = False
    return fig, axes


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
    live layout engine, or on the plain path (``_render``: another matplotlib or ipympl than
    the pinned ones), every update is a full redraw by ``canvas.draw_idle()``.

    ``redraw`` must be pure (``_render``'s contract): it is also called at settings no one
    chose (one step along each control at construction, ``rehearse``, ``picture``,
    ``snapshot``, ``readout_at``) and then at the current one, so the same values must give
    the same artists, readout and data, whatever was called before.
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
        self._fast = _render.fast_path_ok()  # decided once per process (_render)
        self._blit = blit and self._fast
        self._frame = None  # the core Image that shows the frames without ipympl's front end
        self._front_end_seen = False  # ipympl's front end spoke: it shows the frames (_render)
        self._background = None  # the figure without its changing artists, once drawn
        self._signature = None  # what the background shows: limits, ticks, labels, size
        self._inside = {}  # (text, axes) -> the text is drawn over the axes (_inside_axes)
        self._text_states = {}  # id(text) -> its state when the figure was last drawn
        # We draw when a control moves; pyplot's "redraw whenever anything is stale" would
        # add a full draw round trip through the browser on every slider step.
        fig.stale_callback = None
        for c in self.controls.values():
            c.observe(lambda change: self.update(), names="value")
        if isinstance(fig.canvas, widgets.DOMWidget):
            _render.on_front_end(fig.canvas, self._front_end_alive)
        # The texts one step of any control changes, found before the first draw: the
        # background leaves them out from the start, so no first step draws it again.
        self._changing_texts = self._texts_changed_at(
            {name: v} for name, c in self.controls.items()
            for v in _neighbours(c)) if self._blit else set()
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
        if self._frame is not None and not self._front_end_seen:
            self._frame.value = self._frame_png()

    def _front_end_alive(self):
        """ipympl's front end has the canvas: it draws the frames, the Image is not needed."""
        self._front_end_seen = True
        if self._frame is not None:
            self._frame.layout.display = "none"

    def _frame_png(self):
        """The figure as it is now, as a PNG: the canvas's buffer where it holds the current
        frame (after a blitted or synchronous draw), else drawn by ``savefig`` (an ipympl
        canvas's ``draw_idle`` only asks the page for a draw)."""
        canvas = self.fig.canvas
        if not self.fig.stale and isinstance(canvas, FigureCanvasAgg):
            try:
                return _render.png_rgba(np.asarray(canvas.buffer_rgba()))
            except AttributeError:  # never drawn: no buffer yet
                pass
        png = io.BytesIO()
        self.fig.savefig(png, format="png", dpi=self.fig.dpi)
        return png.getvalue()

    def _frame_image(self):
        """The core ``ipywidgets.Image`` that shows the figure's frames where ipympl's front end
        is absent (``_render``'s contract, point 4), made when the widget is first shown."""
        if self._frame is None:
            self._frame = widgets.Image(  # its own size at most (the box would stretch it)
                value=self._frame_png(), format="png",
                layout=widgets.Layout(max_width="100%", height="auto", align_self="flex-start"))
            self._frame.add_class(FRAME_CLASS)
            if self._front_end_seen:
                self._frame.layout.display = "none"
        return self._frame

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
        if not self._blit:
            return  # every update draws the whole figure: no background to keep texts out of
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
            try:  # render the background without sending it to a browser
                _render.draw_without_sending(canvas)
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
        """The widget to display: the controls, the ipympl canvas (where the figure is one), the
        core Image that shows the frames where ipympl's front end is absent (hidden where it is
        there), the readout and the page helper."""
        canvas = self.fig.canvas
        live = isinstance(canvas, widgets.DOMWidget)
        row = widgets.HBox(list(self.controls.values()))
        if self._wrap:
            row.layout = widgets.Layout(flex_flow="row wrap")
        box = widgets.VBox([row, *([canvas] if live else []), self._frame_image(), self._readout,
                            PageHelper(info=self._figure_info(),
                                       canvas=canvas.model_id if live and self._fast else "")])
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
# keep their contrast (the accessibility audit reads them). The frame Image (Explorer.ui) is
# hidden as soon as ipympl's canvas is on the page (the kernel hides it too once ipympl's front
# end speaks) and scaled like the canvas where it shows; there, ipywidgets' placeholder for the
# canvas it could not load (an error box just before the Image) is hidden: the Image stands in.
EXPLORER_CLASS = "lessonlib-explorer"
FRAME_CLASS = "lessonlib-frame"
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
.{EXPLORER_CLASS}:has(.jupyter-matplotlib-canvas-div) .{FRAME_CLASS} {{ display: none !important; }}
.{EXPLORER_CLASS} .{FRAME_CLASS} {{ max-width: 100%; height: auto; object-fit: contain; }}
.{EXPLORER_CLASS} > :has(.jupyter-widgets-error-widget):has(+ .{FRAME_CLASS}) {{ display: none; }}
"""

# ipywidgets gives a slider's handle (role="slider") no accessible name and says nowhere that
# the number beside it can be typed into: the page helper, a small anywidget at the end of
# every Explorer, names each handle after its slider's label and marks the number box. It
# gives the frame Image (shown where ipympl's front end is absent) a text alternative.
#
# On the fast path it also takes the frames' work off the page's main thread, where it delays
# everything else a key press does: it replaces the ipympl canvas model's frame handler with
# _render.FRAMES_JS's fastFrames (what that relies on: _render's contract).
_PAGE_ESM = _render.FRAMES_JS + """
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
  for (const img of box.querySelectorAll('img.FRAME_CLASS')) {
    if (!img.alt) img.alt = 'the figure (its controls are above it)';
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
""".replace("FRAME_CLASS", FRAME_CLASS)


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
