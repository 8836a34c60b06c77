"""The widget frame: blitted redraws must show what a full redraw shows, and be cheaper."""
import base64

import ipywidgets as widgets
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from _support import notebook_explorers, slider_values, sliders
from lessonlib import runtime
from lessonlib.widgets import _base, _render, rope, windows


def pixels(fig):
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def differing_fraction(a, b):
    return float((a != b).any(axis=-1).mean())


# A blitted frame draws the changing artists over a background that holds the ticks, a full draw
# draws each artist at its z-order: only where a changing artist crosses a tick mark can the
# layering differ (tests/test_widgets_render.py allows the fast and plain paths the same).
BLIT_TOLERANCE = 0.0005  # of the figure's pixels


def assert_blit_matches_full_draw(w):
    after_blit = pixels(w.fig)
    FigureCanvasAgg.draw(w.fig.canvas)  # everything, from scratch, whatever the canvas
    full = pixels(w.fig)
    assert differing_fraction(after_blit, full) < BLIT_TOLERANCE


@pytest.mark.parametrize("make, key, values", [
    (lambda: rope.scaling_explorer({"head_dim": 128, "rope_theta": 1e4}, factor=4.0, n_train=4096),
     "factor", [4.5, 8.0, 2.0]),
    (lambda: windows.window_explorer("gpt-oss-20b"), "window", [129, 64, 200]),
    (lambda: windows.window_explorer("gpt-oss-20b"), "context", [512, 128]),  # ticks change: a full redraw
])
def test_blitted_frames_equal_full_redraws(make, key, values):
    w = make()
    before = pixels(w.fig)
    for v in values:
        w.controls[key].value = v
        assert_blit_matches_full_draw(w)
    assert differing_fraction(before, pixels(w.fig)) > 0.001  # the figure really changed


@pytest.mark.parametrize("name", sorted(notebook_explorers()))
def test_every_slider_of_every_notebook_widget_blits_what_a_full_draw_shows(name):
    """Two steps up and one back on every slider (the last to its far end) of each notebook's
    widget: each blitted frame equals a figure drawn from scratch."""
    w = notebook_explorers()[name]()
    assert sliders(w), f"{name} has no slider"
    for key, c in sliders(w).items():
        if c.disabled:
            continue
        values, i = slider_values(c)
        for j in (min(i + 1, len(values) - 1), min(i + 2, len(values) - 1), i, len(values) - 1):
            c.value = values[j]
            assert_blit_matches_full_draw(w)
        c.value = values[i]


@pytest.mark.parametrize("name", sorted(notebook_explorers()))
def test_a_first_move_of_any_control_is_a_blitted_step(name, monkeypatch):
    """A student's first key press on a slider (or click on a choice) redraws only what
    changes: the texts one step of each control changes (a title's number, a label that
    moves) were found at construction and left out of the background. Only a move that
    changes the axes themselves (another model's limits) draws the background again."""
    make = notebook_explorers()[name]
    full_draws = []
    agg_draw = FigureCanvasAgg.draw
    monkeypatch.setattr(_base.FigureCanvasAgg, "draw",
                        lambda canvas: full_draws.append(1) or agg_draw(canvas))
    moved = set()
    for key, control in make().controls.items():
        for value in _base._neighbours(control):
            w = make()
            if w.controls[key].disabled:
                continue
            signature, readout = w._static_signature(), w.readout
            full_draws.clear()
            w.controls[key].value = value
            moved.add(key)
            if w._static_signature() == signature:
                assert not full_draws, f"{name}: the first move of {key!r} to {value!r} drew " \
                    "the whole background"
            assert w.readout != readout or key in ("pasted", "upload")
            assert_blit_matches_full_draw(w)
    enabled = {k for k, c in sliders(make()).items() if not c.disabled}
    assert enabled and enabled <= moved, "every enabled slider is moved"


def test_neighbours_are_one_step_each_way_within_range():
    assert _base._neighbours(widgets.IntSlider(value=5, min=0, max=10, step=2)) == [3, 7]
    assert _base._neighbours(widgets.IntSlider(value=10, min=0, max=10)) == [9]
    assert _base._neighbours(widgets.FloatSlider(value=0.0, min=0.0, max=1.0, step=0.25)) \
        == [0.25]
    assert _base._neighbours(widgets.SelectionSlider(options=[("a", 1), ("b", 2), ("c", 3)],
                                                     value=1)) == [2]
    assert _base._neighbours(widgets.Dropdown(options=["x", "y", "z"], value="y")) == ["x", "z"]
    assert _base._neighbours(widgets.Checkbox(value=True)) == [False]
    assert _base._neighbours(widgets.Textarea(value="text")) == []


def test_a_tick_label_that_changes_where_ticks_stay_redraws_the_background():
    fig, ax = _base.new_figure(figsize=(3, 2))
    (line,) = ax.plot([0, 1], [0, 1])
    ax.set_xlim(0, 1), ax.set_ylim(0, 2)
    ax.set_xticks([0, 1], ["a0", "a1"])
    _base.freeze_layout(fig)

    def redraw(a):
        line.set_ydata([0, a])
        ax.set_xticks([0, 1], [f"{a:g}", "end"])  # the same ticks, a new label
        return ""

    w = _base.Explorer({"a": widgets.FloatSlider(value=1.0, min=0.5, max=2.0)}, fig, redraw)
    for v in (1.5, 2.0):
        background = w._background
        w.controls["a"].value = v
        assert w._background is not background  # the labels are in the background
        assert_blit_matches_full_draw(w)


def test_a_text_that_starts_changing_is_redrawn_from_then_on():
    fig, ax = _base.new_figure(figsize=(3, 2))
    (line,) = ax.plot([0, 1], [0, 1])
    ax.set_xlim(0, 1), ax.set_ylim(0, 2)
    title = ax.set_title("a = 1")
    _base.freeze_layout(fig)

    def redraw(a):
        line.set_ydata([0, a])
        title.set_text(f"a = {a}")
        return f"a = {a}"

    w = _base.Explorer({"a": widgets.FloatSlider(value=1.0, min=0.5, max=2.0)}, fig, redraw)
    for v in (1.5, 2.0, 0.5):
        w.controls["a"].value = v
        assert w.readout == f"a = {v}"
        assert_blit_matches_full_draw(w)
    assert id(title) in w._changing_texts


def test_a_live_layout_engine_means_full_redraws():
    fig, ax = _base.new_figure(figsize=(3, 2))  # constrained layout, not frozen
    (line,) = ax.plot([0, 1], [0, 1])
    title = ax.set_title("a = 1")

    def redraw(a):
        line.set_ydata([0, a])
        title.set_text(f"a = {a}" * 3)  # a longer title: the layout moves the axes
        return ""

    w = _base.Explorer({"a": widgets.FloatSlider(value=1.0)}, fig, redraw)
    w.controls["a"].value = 0.5
    assert w._background is None
    assert_blit_matches_full_draw(w)


def test_full_redraws_without_blit():
    fig, ax = _base.new_figure(figsize=(3, 2))
    (line,) = ax.plot([0, 1], [0, 1])
    calls = []
    fig.canvas.mpl_connect("draw_event", lambda e: calls.append(e))
    w = _base.Explorer({"a": widgets.FloatSlider(value=1.0)}, fig,
                       lambda a: line.set_ydata([0, a]) or f"{a}", blit=False)
    n = len(calls)
    w.controls["a"].value = 0.5
    assert len(calls) == n + 1 and w.readout == "0.5"


# ------------------------------------------------------------------ what people see
def test_display_puts_a_picture_before_the_live_widget():
    """GitHub, nbviewer and nbconvert have no kernel: they show the picture; JupyterLab shows
    the widget, whose page helper hides the picture before it."""
    from IPython.core.interactiveshell import InteractiveShell
    from lessonlib.widgets import rope as W

    w = W.scaling_explorer({"head_dim": 128, "rope_theta": 1e4}, factor=4.0, n_train=4096)
    shell = InteractiveShell.instance()
    shown = []
    shell.display_pub.publish = lambda data, metadata=None, **kw: shown.append(data)
    w._ipython_display_()
    assert set(shown[0]) == {"image/png", "text/plain"}
    assert base64.b64decode(shown[0]["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "run the notebook" in shown[0]["text/plain"]
    assert set(shown[1]) == {"text/plain"}  # the readout as text, under the picture
    assert shown[1]["text/plain"].split("\n", 1) == [
        f"[readout at {w._settings_text(w.values)}]", w.readout]
    assert "application/vnd.jupyter.widget-view+json" in shown[2]
    assert shown[2]["text/plain"] == _base.LIVE_TEXT  # not the VBox's repr
    box = w.ui
    assert _base.EXPLORER_CLASS in box._dom_classes
    helper = box.children[-1]
    assert isinstance(helper, _base.PageHelper)
    assert f".{_base.EXPLORER_CLASS}" in helper._css and "display: none" in helper._css
    # both static outputs (picture and readout) are hidden while the widget runs
    assert f"+ .jp-OutputArea-child + .jp-OutputArea-child .{_base.EXPLORER_CLASS}" in helper._css
    assert 'data-smallest-text-px="' in helper.info
    assert helper.canvas == ""  # headless: no ipympl canvas whose frames it could speed up
    assert f"}}, {_render.DATA_URL_DELAY_MS});" in helper._esm and "DATA_URL_DELAY_MS" not in \
        helper._esm  # the delay is written into the page's code
    shown.clear()  # the presenter shows only widgets: the picture is not drawn there
    import os
    os.environ[runtime.PRESENTER_ENV] = "1"
    try:
        w._ipython_display_()
    finally:
        del os.environ[runtime.PRESENTER_ENV]
    assert len(shown) == 1 and "application/vnd.jupyter.widget-view+json" in shown[0]


def test_a_control_without_effect_is_disabled():
    import ipywidgets
    import matplotlib.pyplot as plt
    fig, _ = plt.subplots()
    on = ipywidgets.Checkbox(value=False)
    knob = ipywidgets.FloatSlider(value=1.0)
    e = _base.Explorer({"on": on, "knob": knob}, fig, lambda on, knob: f"{on} {knob}",
                       disabled_when={"knob": lambda v: not v["on"]})
    assert knob.disabled
    on.value = True
    assert not knob.disabled and e.readout == "True 1.0"
    with pytest.raises(ValueError, match="disabled_when names no control"):
        _base.Explorer({"on": on}, fig, lambda on: "", disabled_when={"nope": lambda v: True})


def test_checkbox_label_is_not_indented_and_takes_its_width():
    box = _base.checkbox("learned sink", True)
    assert box.indent is False and box.layout.width == "auto" and box.value is True
    with pytest.raises(ValueError, match="learned sink must be True or False"):
        _base.checkbox("learned sink", "yes")


def test_rehearse_finds_the_texts_elsewhere_without_moving_a_control(monkeypatch):
    w = windows.window_explorer("gpt-oss-20b")
    values, readout, shown = w.values, w.readout, pixels(w.fig)
    moved = []
    for c in w.controls.values():
        c.observe(lambda change: moved.append(change), names="value")
    title = w.axes[0].title
    w._changing_texts.discard(id(title))  # as if no step had been seen to change it
    w.rehearse(window=w.controls["window"].max)
    assert w.values == values and w.readout == readout and not moved
    assert id(title) in w._changing_texts  # its W changes there
    np.testing.assert_array_equal(pixels(w.fig), shown)  # the figure still shows the setting
    full_draws = []
    monkeypatch.setattr(_base.FigureCanvasAgg, "draw", lambda canvas: full_draws.append(1))
    w.controls["window"].value = w.controls["window"].max  # there: an ordinary step
    assert not full_draws
    with pytest.raises(ValueError, match="no control named"):
        w.rehearse(windw=16)


# ------------------------------------------------------------------ one way to build an Explorer
def test_redraw_may_return_the_numbers_it_shows_and_axes_and_artists_are_given_at_construction():
    fig, ax = _base.new_figure(figsize=(3, 2))
    (line,) = ax.plot([0, 1], [0, 1])
    _base.freeze_layout(fig)
    w = _base.Explorer({"a": widgets.FloatSlider(value=1.0, min=0.0, max=2.0)}, fig,
                       lambda a: (line.set_ydata([0, a]) or f"a = {a}", {"top": a}),
                       axes=(ax,), artists={"line": line})
    assert (w.readout, w.data, w.axes, w.artists) == ("a = 1.0", {"top": 1.0}, (ax,),
                                                       {"line": line})
    first = w.data
    w.controls["a"].value = 2.0
    assert w.readout == "a = 2.0" and w.data == {"top": 2.0} and first == {"top": 1.0}
    w.rehearse(a=0.5)  # a rehearsal ends at the current setting: its numbers are the data
    assert w.data == {"top": 2.0}
    plain = _base.Explorer({}, fig, lambda: "text only")
    assert plain.readout == "text only" and plain.data == {} and plain.axes == ()


def test_every_factory_builds_its_explorer_one_way():
    """No factory glues axes, artists or data onto an Explorer after building it, or keeps
    its numbers in a dict it clears and refills: redraw returns them (see Explorer)."""
    import pathlib
    import re
    glued = re.compile(r"\b\w+\.(axes|artists|data)\s*(,[^=]*)?=(?!=)|\bstate\.(clear|update)\(")
    found = []
    for path in sorted(pathlib.Path(_base.__file__).parent.glob("*.py")):
        if path.name == "_base.py":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if glued.search(line):
                found.append(f"{path.name}:{i}: {line.strip()}")
    assert not found, found


def test_the_page_helper_names_the_ipympl_canvas_it_speeds_up():
    """On an ipympl canvas the page helper gets the canvas's model id: the page wraps that
    model's frame handler (frames decoded off the main thread, ipympl's per-frame toDataURL
    deferred; tests/browser check it)."""
    import matplotlib.figure
    from ipympl.backend_nbagg import Canvas, FigureManager
    fig = matplotlib.figure.Figure(figsize=(3, 2), dpi=50)
    canvas = Canvas(fig)
    FigureManager(canvas, 0)
    fig.add_subplot().plot([0, 1])
    w = _base.Explorer({}, fig, lambda: "")
    assert w.ui.children[-1].canvas == canvas.model_id != ""


def _counting_explorer():
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(3, 2), dpi=50)
    line, = ax.plot([0, 1], [0, 0])
    ax.set_ylim(0, 8192)
    calls = []

    def redraw(m, on):
        calls.append(m)
        line.set_ydata([0, m])
        return f"m is {m:,}, {'on' if on else 'off'}"
    controls = {"m": ipywidgets_slider(4095), "on": widgets.Checkbox(value=False, description="sink")}
    return _base.Explorer(controls, fig, redraw, axes=(ax,), artists={"line": line}), line, calls


def ipywidgets_slider(value):
    return widgets.IntSlider(value=value, min=0, max=8192, description="m")


def _shown(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    shown = []
    monkeypatch.setattr(InteractiveShell.instance().display_pub, "publish",
                        lambda data, metadata=None, **kw: shown.append(data))
    return shown


def test_a_snapshot_shows_another_state_as_picture_and_text_and_leaves_the_widget(monkeypatch):
    w, line, _ = _counting_explorer()
    first = w.picture()["image/png"]
    shown = _shown(monkeypatch)
    w.snapshot(m=8000, on=True)
    assert shown[0]["text/plain"] == "[a picture of the figure at m = 8,000, sink = on, 150 x 100 px]"
    assert shown[0]["image/png"] != first  # drawn at the other setting
    assert shown[1] == {"text/plain": "[readout at m = 8,000, sink = on]\nm is 8,000, on"}
    # the live widget did not move: controls, readout, artists and picture as before
    assert w.values == {"m": 4095, "on": False} and w.readout == "m is 4,095, off"
    assert list(line.get_ydata()) == [0, 4095] and w.picture()["image/png"] == first
    assert w.readout_at(m=1) == "m is 1, off" and w.readout == "m is 4,095, off"
    with pytest.raises(ValueError, match="no control named \\['n'\\]"):
        w.snapshot(n=3)
    with pytest.raises(ValueError, match="name one or more of the controls"):
        w.snapshot()
    with pytest.raises(ValueError, match="readout_at: no control named"):
        w.readout_at(n=3)
    shown.clear()
    monkeypatch.setenv(runtime.PRESENTER_ENV, "1")  # the presenter shows live widgets only
    w.snapshot(m=8000)
    assert shown == []


def test_a_figure_without_controls_does_not_invite_moving_them(monkeypatch):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(3, 2), dpi=50)
    e = _base.Explorer({}, fig, lambda: "the grid", axes=(ax,))
    shown = _shown(monkeypatch)
    e._ipython_display_()
    assert shown[0]["text/plain"] == "[a picture of the figure, 150 x 100 px]"
    assert shown[1] == {"text/plain": "[readout]\nthe grid"}


def test_no_widget_factory_has_a_model_default():
    """The model a figure draws is the one the notebook cell names: a factory's model argument
    (config, model, mla_config) has no default that could stand in for it."""
    import inspect

    from lessonlib.widgets import attention, kv_cache, long_context, rope, windows
    for module in (attention, kv_cache, long_context, rope, windows):
        for name in module.__all__:
            f = getattr(module, name)
            if not (callable(f) and name.endswith("_explorer")):
                continue
            for p in inspect.signature(f).parameters.values():
                if p.name in ("config", "model", "mla_config"):
                    assert p.default is inspect.Parameter.empty, (module.__name__, name, p.name)
