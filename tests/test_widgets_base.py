"""The widget frame: blitted redraws must show what a full redraw shows, and be cheaper."""
import base64

import ipywidgets as widgets
import numpy as np
import pytest

from lessonlib.widgets import _base, rope, windows


def pixels(fig):
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def differing_fraction(a, b):
    return float((a != b).any(axis=-1).mean())


def assert_blit_matches_full_draw(w):
    after_blit = pixels(w.fig)
    w.fig.canvas.draw()  # everything, from scratch
    full = pixels(w.fig)
    # Only where a changing artist crosses a tick mark can the layering differ.
    assert differing_fraction(after_blit, full) < 0.0005


@pytest.mark.parametrize("make, key, values", [
    (rope.scaling_explorer, "factor", [4.5, 8.0, 2.0]),
    (windows.window_explorer, "window", [129, 64, 200]),
    (windows.window_explorer, "context", [512, 128]),  # ticks change: a full redraw
])
def test_blitted_frames_equal_full_redraws(make, key, values):
    w = make()
    before = pixels(w.fig)
    for v in values:
        w.controls[key].value = v
        assert_blit_matches_full_draw(w)
    assert differing_fraction(before, pixels(w.fig)) > 0.001  # the figure really changed


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

    w = W.scaling_explorer()
    shell = InteractiveShell.instance()
    shown = []
    shell.display_pub.publish = lambda data, metadata=None, **kw: shown.append(data)
    w._ipython_display_()
    assert set(shown[0]) == {"image/png", "text/plain"}
    assert base64.b64decode(shown[0]["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "run the notebook" in shown[0]["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in shown[1]
    box = w.ui
    assert _base.EXPLORER_CLASS in box._dom_classes
    helper = box.children[-1]
    assert isinstance(helper, _base.PageHelper)
    assert f".{_base.EXPLORER_CLASS}" in helper._css and "display: none" in helper._css
    assert 'data-smallest-text-px="' in helper.info


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
