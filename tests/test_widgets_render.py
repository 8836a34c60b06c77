"""The renderer behind one seam (lessonlib.widgets._render): the start-up check and its one line,
the plain path drawing what the fast path draws for every notebook widget, redraws that are pure,
the fast path's frames, and the core Image that shows the frames without ipympl's front end."""
import dataclasses
import io
import re
import struct
import zlib
from pathlib import Path

import ipywidgets as widgets
import matplotlib
import matplotlib.figure
import numpy as np
import pytest
from matplotlib.backends import backend_agg
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_webagg_core import FigureCanvasWebAggCore

from _support import ROOT, notebook_explorers, slider_values, sliders
from lessonlib.widgets import _base, _render
from test_widgets_base import BLIT_TOLERANCE, differing_fraction, pixels


def assert_same(a, b, where="data"):
    """Equal numbers, arrays, dataclasses, dicts and sequences of them, nested."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        np.testing.assert_equal(a, b, err_msg=where)


def _decode(png):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


@pytest.fixture
def fresh_check(monkeypatch):
    """fast_path_ok() decides again (it decides once per process); the variable unset. The
    decision before the test is restored after it."""
    monkeypatch.setattr(_render, "_VERDICT", None)
    monkeypatch.delenv(_render.PLAIN_ENV, raising=False)


@pytest.fixture
def plain(fresh_check, monkeypatch):
    """The plain path, chosen as a person would choose it: LESSONLIB_PLAIN_RENDER=1."""
    monkeypatch.setenv(_render.PLAIN_ENV, "1")


def _path(fast, monkeypatch):
    monkeypatch.setattr(_render, "_VERDICT", None)
    if fast:
        monkeypatch.delenv(_render.PLAIN_ENV, raising=False)
    else:
        monkeypatch.setenv(_render.PLAIN_ENV, "1")
    assert _render.fast_path_ok() is fast


# ------------------------------------------------------------------ the check at start-up

def test_the_pinned_versions_are_requirements_txt_pins():
    """The fast path states what it was tested against: the versions requirements.txt pins."""
    text = (Path(ROOT) / "requirements.txt").read_text()
    for name, version in _render.PINNED.items():
        assert re.search(rf"^{name}=={re.escape(version)}\s*$", text, re.M), (name, version)


def test_this_environment_takes_the_fast_path_and_says_nothing(fresh_check, capsys):
    # requirements.txt's matplotlib and ipympl: the fast path's pieces are all there
    assert _render._why_not_fast() is None
    assert _render.fast_path_ok() is True
    assert capsys.readouterr().err == ""


def _one_line(capsys):
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lessonlib.widgets: "), err
    assert "widgets draw the plain way" in lines[0]
    return lines[0]


@pytest.mark.parametrize("package, version", [("matplotlib", "3.12.0"), ("ipympl", "0.11.0"),
                                              ("ipympl", None)])
def test_another_version_takes_the_plain_path_with_one_line(package, version, fresh_check,
                                                            monkeypatch, capsys):
    if package == "matplotlib":
        monkeypatch.setattr(matplotlib, "__version__", version)
    else:
        found = _render.importlib.metadata.version

        def metadata_version(name):
            if name != package:
                return found(name)
            if version is None:
                raise _render.importlib.metadata.PackageNotFoundError(name)
            return version
        monkeypatch.setattr(_render.importlib.metadata, "version", metadata_version)
    assert _render.fast_path_ok() is False
    line = _one_line(capsys)
    assert f"tested with matplotlib {_render.PINNED['matplotlib']} and ipympl " \
           f"{_render.PINNED['ipympl']}, this is {package} {version or 'not installed'}" in line
    assert _render.fast_path_ok() is False and capsys.readouterr().err == ""  # once
    fig, ax = _base.new_figure(figsize=(3, 2))  # widgets built now take the plain path
    (line2d,) = ax.plot([0, 1], [0, 1])
    w = _base.Explorer({"a": widgets.FloatSlider(value=1.0)}, fig,
                       lambda a: line2d.set_ydata([0, a]) or f"{a}")
    assert not w._fast and not w._blit and "get_renderer" not in vars(fig.canvas)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("owner, name", [
    (backend_agg.RendererAgg, "_prepare_font"),
    (FigureCanvasAgg, "_lastKey"),
    (FigureCanvasWebAggCore, "set_image_mode"),
])
def test_a_missing_private_attribute_takes_the_plain_path_with_one_line(owner, name, fresh_check,
                                                                        monkeypatch, capsys):
    monkeypatch.delattr(owner, name)
    assert _render.fast_path_ok() is False
    assert f"lacks {owner.__name__}.{name}" in _one_line(capsys)


def test_a_private_call_that_changed_takes_the_plain_path(fresh_check, monkeypatch, capsys):
    """An attribute that is there but works otherwise (another signature) counts as missing."""
    def layout(self, *args, **kwargs):
        raise TypeError("_layout() got an unexpected keyword argument 'flags'")
    monkeypatch.setattr(backend_agg.RendererAgg, "_prepare_font",
                        lambda self, prop: type("Font", (), {"_layout": layout})())
    assert _render.fast_path_ok() is False
    assert "a private call that works (TypeError: _layout()" in _one_line(capsys)


def test_the_variable_chooses_the_plain_path_silently(plain, capsys):
    assert _render.fast_path_ok() is False
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------ the plain path

def _ipympl_figure(**kw):
    from ipympl.backend_nbagg import Canvas, FigureManager
    fig = matplotlib.figure.Figure(figsize=(3, 2), dpi=50, **kw)
    canvas = Canvas(fig)
    FigureManager(canvas, 0)
    return fig, canvas


@pytest.mark.parametrize("fast", [True, False])
def test_prepare_canvas_patches_an_ipympl_canvas_only_on_the_fast_path(fast):
    fig, canvas = _ipympl_figure()
    _render.prepare_canvas(canvas, fast)
    patched = {"get_diff_image", "draw", "get_renderer"} & set(vars(canvas))
    assert patched == ({"get_diff_image", "draw", "get_renderer"} if fast else set())
    assert canvas.syncing_data_url is False  # ipympl 0.10's first frame, on both paths


def test_on_the_plain_path_an_explorer_asks_ipympl_to_draw(plain, monkeypatch):
    """Plain: every update is canvas.draw_idle() (ipympl asks the page for the draw and sends
    its own frame), nothing is rendered in the kernel, no page-side frame handler."""
    fig, canvas = _ipympl_figure()
    _render.prepare_canvas(canvas, _render.fast_path_ok())
    ax = fig.add_subplot()
    (line,) = ax.plot([0, 1], [0, 1])
    _base.freeze_layout(fig)
    renders, idle = [], []
    monkeypatch.setattr(_base.FigureCanvasAgg, "draw",
                        lambda c, agg=FigureCanvasAgg.draw: renders.append(1) or agg(c))
    canvas.draw_idle = lambda: idle.append(1)
    w = _base.Explorer({"a": widgets.FloatSlider(value=1.0)}, fig,
                       lambda a: line.set_ydata([0, a]) or f"a = {a}")
    w.controls["a"].value = 0.5
    assert len(idle) == 2 and not renders and w.readout == "a = 0.5"
    assert w._changing_texts == set() and w._background is None
    w.rehearse(a=0.25)  # nothing to rehearse: no background
    assert w.readout == "a = 0.5" and len(idle) == 2
    assert w.ui.children[-1].canvas == ""  # the page leaves ipympl's frame handler alone


def _moves(w):
    """The slider moves the blit test makes (tests/test_widgets_base.py): two steps up and one
    back on every enabled slider, then to its far end, then back where it was."""
    for key, c in sliders(w).items():
        if c.disabled:
            continue
        values, i = slider_values(c)
        for j in (min(i + 1, len(values) - 1), min(i + 2, len(values) - 1), i, len(values) - 1,
                  i):
            yield key, values[j]


@pytest.mark.parametrize("name", sorted(notebook_explorers()))
def test_every_notebook_widget_draws_the_same_pixels_on_both_paths(name, monkeypatch):
    """The plain path (full draws by draw_idle, matplotlib's own text) and the fast path (blitted
    draws, kept glyphs) after the same slider moves: the same readout and data, and the same
    pixels up to BLIT_TOLERANCE. The kept glyphs draw matplotlib's pixels exactly
    (tests/test_widgets_glyphs.py); what may differ is the blit's layering, where a changing
    artist crosses a tick mark the background holds (tests/test_widgets_base.py's bound)."""
    _path(True, monkeypatch)
    fast = notebook_explorers()[name]()
    _path(False, monkeypatch)
    plain = notebook_explorers()[name]()
    assert fast._blit and not plain._blit
    assert "get_renderer" in vars(fast.fig.canvas) and "get_renderer" not in vars(plain.fig.canvas)
    moves = list(_moves(fast))
    assert moves, f"{name} has no enabled slider"
    assert differing_fraction(pixels(fast.fig), pixels(plain.fig)) < BLIT_TOLERANCE
    for key, value in moves:
        fast.controls[key].value = value
        plain.controls[key].value = value
        assert fast.readout == plain.readout, (key, value)
        assert_same(fast.data, plain.data)
        diff = differing_fraction(pixels(fast.fig), pixels(plain.fig))
        assert diff < BLIT_TOLERANCE, (key, value, diff)


def _as_control_value(control, value):
    """A slider's value as the slider itself would hold it (an int, a float, an option)."""
    if isinstance(control, widgets.IntSlider):
        return int(value)
    return float(value) if isinstance(control, widgets.FloatSlider) else value


@pytest.mark.parametrize("name", sorted(notebook_explorers()))
def test_every_notebook_widget_redraws_purely(name):
    """Contract point 1: redraw at other settings (every control's neighbours and every
    slider's ends, as the construction, rehearse, picture and readout_at call it) and back
    leaves the same artists, readout and data as before, pixel for pixel."""
    w = notebook_explorers()[name]()
    FigureCanvasAgg.draw(w.fig.canvas)
    before, readout, data = pixels(w.fig), w.readout, w.data
    elsewhere = [{key: v} for key, c in w.controls.items() for v in _base._neighbours(c)]
    elsewhere += [{key: _as_control_value(c, slider_values(c)[0][end])}
                  for key, c in sliders(w).items() for end in (0, -1)]
    for setting in elsewhere:
        w.readout_at(**setting)
    assert w.readout == readout and w.readout_at() == readout
    assert_same(w.data, data)
    FigureCanvasAgg.draw(w.fig.canvas)
    np.testing.assert_array_equal(pixels(w.fig), before)


# ------------------------------------------------------------------ the fast path's frames

def test_fast_frames_send_the_same_pixels_as_matplotlibs_encoder():
    """fast_frames only changes zlib's level: the same full frame, the same diff frames (the
    changed pixels, the rest transparent), the same full/diff modes, on an ipympl canvas."""
    from ipympl.backend_nbagg import Canvas

    def frames(fast):
        fig = matplotlib.figure.Figure(figsize=(3, 2), dpi=50)
        canvas = Canvas(fig)
        if fast:
            _render.fast_frames(canvas)
        ax = fig.add_subplot()
        line, = ax.plot([0, 1, 2], [0, 1, 0])
        out = []
        for y in (1, 3, 2):
            line.set_ydata([0, y, 0])
            _render.draw_without_sending(canvas)
            canvas._png_is_old = True
            png = canvas.get_diff_image() if fast else \
                FigureCanvasWebAggCore.get_diff_image(canvas)
            out.append((canvas._current_image_mode, _decode(png), len(png)))
        canvas._png_is_old = False
        assert canvas.get_diff_image() is None  # nothing new: nothing sent
        return out

    slow, fast = frames(False), frames(True)
    assert [m for m, _, _ in fast] == [m for m, _, _ in slow] == ["full", "diff", "diff"]
    for (_, a, _), (_, b, _) in zip(slow, fast):
        np.testing.assert_array_equal(a, b)
    assert fast[1][1][..., 3].min() == 0 < fast[1][1][..., 3].max()  # a diff: some unchanged


def test_fast_frames_leaves_a_canvas_that_sends_no_frames_alone():
    canvas = FigureCanvasAgg(matplotlib.figure.Figure())
    _render.fast_frames(canvas)
    _render.resend_current_frames(canvas)
    assert "get_diff_image" not in vars(canvas) and "draw" not in vars(canvas)


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (37, 91)])
@pytest.mark.parametrize("zero_rows", ["none", "top", "bottom", "both", "all", "middle"])
def test_png_rgba_decodes_to_its_pixels(shape, zero_rows):
    """Any pixels, with rows of zeros (a diff frame's unchanged rows) above, below or between
    the others, or everywhere: Pillow decodes the pixels and zlib accepts the stream as it is
    (its checksum included)."""
    h = shape[0]
    rgba = np.random.default_rng(sum(shape)).integers(0, 256, (*shape, 4), dtype=np.uint8)
    cut = {"none": [], "top": range(0, h // 2), "bottom": range(h - h // 2, h),
           "both": [*range(0, h // 3), *range(h - h // 3, h)], "all": range(h),
           "middle": range(h // 3, h - h // 3)}[zero_rows]
    rgba[list(cut)] = 0
    png = _render.png_rgba(rgba)
    np.testing.assert_array_equal(_decode(png), rgba)
    (length,) = struct.unpack(">I", png[33:37])
    assert png[37:41] == b"IDAT"
    rows = zlib.decompress(png[41:41 + length])  # checks the stream's adler32
    assert rows == np.concatenate([np.zeros((h, 1), np.uint8), rgba.reshape(h, -1)], 1).tobytes()


def test_png_rgba_compresses_zero_rows_to_little():
    rgba = np.zeros((440, 920, 4), np.uint8)
    rgba[200:210, 100:300] = 255
    assert len(_render.png_rgba(rgba)) < 8_000  # 1.6 MB of pixels


# ------------------------------------------------------------------ frames a browser asks for
def _ipympl_explorer():
    """An Explorer on a real ipympl canvas and manager (no browser: frames go nowhere), with
    its full renders and sent frames counted."""
    fig, canvas = _ipympl_figure(layout="constrained")
    _render.prepare_canvas(canvas, _render.fast_path_ok())
    ax = fig.add_subplot()
    (line,) = ax.plot([0, 1, 2], [0, 1, 0])
    ax.set_ylim(0, 3)
    _base.freeze_layout(fig)
    renders, frames = [], []
    full = fig.draw
    fig.draw = lambda renderer: renders.append(1) or full(renderer)
    canvas.send_binary = lambda data: frames.append(_decode(data))
    w = _base.Explorer({"y": widgets.FloatSlider(value=1.0, min=0.0, max=3.0)}, fig,
                       lambda y: line.set_ydata([0, y, 0]) or f"y = {y}")
    return w, line, renders, frames


def test_an_updated_figure_is_fresh_and_a_refresh_resends_its_frame_without_rendering():
    """After each update the canvas holds the current frame: pyplot's draw_all (after every
    widget message) finds nothing stale, and ipympl's refresh of a new view resends it."""
    w, line, renders, frames = _ipympl_explorer()
    w.controls["y"].value = 2.5
    assert not w.fig.stale
    current = pixels(w.fig)
    n = len(renders)
    w.fig.canvas.handle_refresh({})  # a view opens: ipympl forces a full frame
    w.fig.canvas.draw()  # the draw the browser then asks for
    assert len(renders) == n  # nothing rendered again
    np.testing.assert_array_equal(frames[-1], current)  # the full frame, as it is
    w.fig.canvas.draw()
    assert len(renders) == n


@pytest.mark.parametrize("change", ["artist", "size", "dpi"])
def test_a_changed_figure_is_rendered_in_full(change):
    w, line, renders, frames = _ipympl_explorer()
    n = len(renders)
    if change == "artist":
        line.set_color("red")  # outside any Explorer update: the figure is stale
    elif change == "size":
        w.fig.set_size_inches(4, 2, forward=False)
    else:
        w.fig.canvas._set_device_pixel_ratio(2)  # a HiDPI screen: the dpi doubles
    w.fig.canvas.draw()
    assert len(renders) == n + 1
    assert not w.fig.stale
    assert frames[-1].shape[:2] == pixels(w.fig).shape[:2]


# ------------------------------------------------------------------ without ipympl's front end

def _frame_of(box):
    images = [c for c in box.children if isinstance(c, widgets.Image)]
    assert len(images) == 1 and _base.FRAME_CLASS in images[0]._dom_classes
    return images[0]


def test_without_a_front_end_each_move_puts_the_frame_in_the_image():
    """Contract point 4: until ipympl's front end speaks, the box's core Image shows the
    current frame, and each move replaces it (the canvas's buffer, encoded)."""
    w, line, renders, frames = _ipympl_explorer()
    box = w.ui
    assert box.children[1] is w.fig.canvas and box.children[2] is _frame_of(box)
    image = _frame_of(box)
    assert image.layout.display is None and image.format == "png"
    assert image.layout.align_self == "flex-start"  # its own size: the box would stretch it
    np.testing.assert_array_equal(_decode(image.value), pixels(w.fig))
    shown = image.value
    w.controls["y"].value = 2.5
    assert image.value != shown
    np.testing.assert_array_equal(_decode(image.value), pixels(w.fig))
    assert _frame_of(w.ui) is image  # one Image, whatever shows the box


def test_once_the_front_end_speaks_the_image_is_hidden_and_left():
    w, line, renders, frames = _ipympl_explorer()
    image = _frame_of(w.ui)
    w.fig.canvas._handle_custom_msg({"type": "initialized"}, [])  # ipympl's model is created
    assert w._front_end_seen and image.layout.display == "none"
    shown = image.value
    w.controls["y"].value = 2.5
    assert image.value == shown  # ipympl shows the frames: no PNG for the Image
    assert frames  # ... and they went to ipympl's canvas


def test_the_front_end_listener_fires_once_and_leaves_ipympls_alone():
    """ipympl's own handler still gets every message (a dpi change after the first)."""
    fig, canvas = _ipympl_figure()
    calls = []
    _render.on_front_end(canvas, lambda: calls.append(1))
    canvas._handle_custom_msg({"type": "initialized"}, [])
    canvas._handle_custom_msg({"type": "set_device_pixel_ratio", "device_pixel_ratio": 2}, [])
    assert calls == [1] and canvas.device_pixel_ratio == 2


def test_a_figure_shown_after_the_front_end_spoke_starts_hidden():
    w, *_ = _ipympl_explorer()
    w.fig.canvas._handle_custom_msg({"type": "refresh"}, [])
    assert _frame_of(w.ui).layout.display == "none"


def test_on_the_plain_path_without_a_front_end_the_image_still_moves(plain):
    """ipympl's draw_idle asks a page that is not there: the Image is drawn in the kernel."""
    w, line, renders, frames = _ipympl_explorer()
    assert not w._fast
    image = _frame_of(w.ui)
    w.controls["y"].value = 2.5
    FigureCanvasAgg.draw(w.fig.canvas)
    np.testing.assert_array_equal(_decode(image.value), pixels(w.fig))


def test_a_figure_without_ipympl_shows_its_frames_in_the_image():
    """An Agg canvas (no ipympl at all: tests, %matplotlib inline) has only the Image."""
    fig, ax = _base.new_figure(figsize=(3, 2))
    (line,) = ax.plot([0, 1], [0, 1])
    ax.set_ylim(0, 3)
    _base.freeze_layout(fig)
    w = _base.Explorer({"a": widgets.FloatSlider(value=1.0, max=3.0)}, fig,
                       lambda a: line.set_ydata([0, a]) or f"a = {a}")
    box = w.ui
    image = _frame_of(box)
    kinds = (widgets.HBox, widgets.Image, widgets.HTML, _base.PageHelper)
    assert len(box.children) == 4 and all(map(isinstance, box.children, kinds))
    w.controls["a"].value = 2.5
    np.testing.assert_array_equal(_decode(image.value), pixels(w.fig))


def test_the_page_hides_the_image_where_ipympls_canvas_is_and_names_it():
    helper = _base.PageHelper()
    assert (f".{_base.EXPLORER_CLASS}:has(.jupyter-matplotlib-canvas-div) .{_base.FRAME_CLASS} "
            "{ display: none !important; }") in helper._css
    # ... and ipywidgets' placeholder for the canvas it could not load, where the Image stands in
    assert (f".{_base.EXPLORER_CLASS} > :has(.jupyter-widgets-error-widget):has(+ "
            f".{_base.FRAME_CLASS}) {{ display: none; }}") in helper._css
    assert f"img.{_base.FRAME_CLASS}" in helper._esm and "img.alt = " in helper._esm
    assert "function fastFrames(canvas, box)" in helper._esm  # _render.FRAMES_JS
