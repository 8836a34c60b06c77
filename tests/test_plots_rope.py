"""lessonlib.plots.rope: each draw function labels its figure and returns the artists that its
update function then changes in place (same objects, new data)."""
import math

import numpy as np
import pytest

from _support import labelled

from matplotlib.text import Text

from lessonlib.plots import rope as P


def test_clock_hands_draw_and_update(ax):
    angles, arcs = [0.0, math.pi / 2, 3 * math.pi], [2 * math.pi, 10.0, 1.0]
    art = P.draw_clock_hands(ax, [0, 16, 63], angles, arcs)
    assert ax.get_title() and len(art["hands"]) == len(art["tips"]) == len(art["arcs"]) == 3
    names = [t.get_text() for t in art["face"] if isinstance(t, Text)]
    assert [n for n in names if n.startswith("pair")] == ["pair 0", "pair 16", "pair 63"]
    # the face is the figure's (a blitting widget's background), drawn in the axes' coordinates
    assert not ax.texts and all(a in ax.figure.get_children() for a in art["face"])
    assert all(a.get_transform() == ax.transData for a in art["face"])
    assert min(t.get_fontsize() for t in art["face"] if isinstance(t, Text)) >= 9
    assert not any(s.get_visible() for s in ax.spines.values())  # no frame, even when blitted
    x, y = art["hands"][1].get_data()
    assert x[1] == pytest.approx(0.0, abs=1e-12) and y[1] > 0  # pi/2 points up
    ax_, ay_ = art["arcs"][1].get_data()
    assert math.atan2(ay_[-1], ax_[-1]) == pytest.approx(0.0, abs=1e-9)  # capped at a full turn
    hand = art["hands"][0]
    P.update_clock_hands(art, [math.pi, 0.0, 0.0], [1.0, 1.0, 0.5])
    assert art["hands"][0] is hand
    x, y = hand.get_data()
    assert x[1] == pytest.approx(-1.0) and y[1] == pytest.approx(0.0, abs=1e-12)
    ax_, ay_ = art["arcs"][2].get_data()
    assert math.atan2(ay_[-1], ax_[-1]) == pytest.approx(0.5)


def test_angle_coverage_draw_and_update(ax):
    pairs = np.arange(4)
    # the angles come with their whole turns removed (rope.clock_angle): drawn as given
    art = P.draw_angle_coverage(ax, pairs, [100.0, 7.0, 2.0, 0.5],
                                [7.0 - 2 * math.pi, 1.0, 3.0, 0.2], [False, False, True, False])
    labelled(ax)
    assert [t.get_text() for t in art["key"].get_texts()] == \
        ["seen in training", "angle at m", "never seen"]
    ax.figure.canvas.draw()
    assert not art["key"].get_window_extent().overlaps(ax.get_window_extent())  # off the data
    np.testing.assert_allclose(art["trained"].get_data().values, [2 * math.pi, 2 * math.pi, 2, 0.5])
    np.testing.assert_allclose(art["dots"].get_ydata(), [7 - 2 * math.pi, 1, 3, 0.2])
    np.testing.assert_allclose(art["outside"].get_data(), [[2], [3]])
    P.update_angle_coverage(art, [1.0, 1.0, 1.0, 1.0], [0.5, 2.0, 0.5, 9.0 - 2 * math.pi],
                            [False, True, False, True])
    np.testing.assert_allclose(art["trained"].get_data().values, 1.0)
    np.testing.assert_allclose(art["outside"].get_data(), [[1, 3], [2.0, 9 - 2 * math.pi]])


def test_frequency_ratios_draw_and_update(ax):
    pairs = np.arange(8)
    ratios = {"PI": np.full(8, 0.25), "YaRN": np.linspace(1, 0.25, 8)}
    art = P.draw_frequency_ratios(ax, pairs, ratios, (2, 5))
    labelled(ax)
    assert ax.get_yscale() == "log"
    assert [t.get_text() for t in art["key"].get_texts()] == ["original", "PI", "YaRN", "YaRN band"]
    ax.figure.canvas.draw()
    assert not art["key"].get_window_extent().overlaps(ax.get_window_extent())  # off the data
    assert P.draw_frequency_ratios(ax, pairs, ratios, (2, 5), key=False)["key"] is None
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0.01", "0.1", "1"]
    assert art["band"].get_x() == 2 and art["band"].get_width() == 3
    line = art["lines"]["PI"]
    P.update_frequency_ratios(art, {"PI": np.full(8, 0.5), "YaRN": np.ones(8)}, (1, 6.5))
    assert art["lines"]["PI"] is line
    np.testing.assert_allclose(line.get_ydata(), 0.5)
    assert art["band"].get_x() == 1 and art["band"].get_width() == 5.5


def test_wavelengths_draw_and_update(ax):
    pairs = np.arange(4)
    waves = {"original": np.array([6.3, 60, 600, 6000.0]), "PI": np.array([25, 240, 2400, 24000.0])}
    art = P.draw_wavelengths(ax, pairs, waves, 4096, 16384, 32, (1, 2))
    labelled(ax)
    assert ax.get_yscale() == "log"
    assert list(art["trained"].get_ydata()) == [4096, 4096]
    assert list(art["fast"].get_ydata()) == [128, 128]
    assert art["labels"]["fast"].get_text() == "L0/32"
    ax.figure.canvas.draw()
    for label in art["labels"].values():  # in the right margin, off the lines
        assert label.get_window_extent().x0 > ax.get_window_extent().x1
    P.update_wavelengths(art, {"original": np.ones(4), "PI": np.full(4, 2.0)}, 8192, 65536, 32,
                         (0, 3))
    np.testing.assert_allclose(art["lines"]["PI"].get_ydata(), 2.0)
    assert list(art["target"].get_ydata()) == [65536, 65536]
    assert art["labels"]["trained"].get_position()[1] == 8192
    assert art["band"].get_width() == 3


def test_yarn_ramp_draw_and_update(ax):
    pairs = np.arange(10)
    ramp = 1 - np.clip((pairs - 2) / 5, 0, 1)
    art = P.draw_yarn_ramp(ax, pairs, ramp, (2, 7))
    labelled(ax)
    assert list(art["low"].get_xdata()) == [2, 2] and list(art["high"].get_xdata()) == [7, 7]
    P.update_yarn_ramp(art, np.zeros(10), (3, 8))
    np.testing.assert_allclose(art["ramp"].get_ydata(), 0)
    assert list(art["high"].get_xdata()) == [8, 8] and art["labels"]["low"].get_position()[0] == 3


def test_yarn_ramp_under_another_panel_has_no_title(ax):
    art = P.draw_yarn_ramp(ax, np.arange(4), np.ones(4), (1, 2), title=None)
    assert ax.get_title() == "" and ax.get_ylabel() == "YaRN ramp"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["θ/s", "kept"]
    assert art["labels"]["low"].get_fontsize() >= 9


def test_key_row_heads_the_figure_off_every_axes():
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, layout="constrained")
    lines = [a.plot([0, 1], [0, 1])[0], b.plot([0, 1], [1, 0])[0]]
    key = P._draw_key_row(fig, [("up", lines[0]), ("down", lines[1])])
    fig.canvas.draw()
    box = key.get_window_extent()
    assert key in fig.legends and [t.get_text() for t in key.get_texts()] == ["up", "down"]
    assert all(box.y0 >= ax.get_window_extent().y1 - 1 for ax in (a, b))
    assert min(t.get_fontsize() for t in key.get_texts()) >= 9


def test_no_xlabel_when_a_figure_shares_one(ax):
    P.draw_yarn_ramp(ax, np.arange(4), np.ones(4), (1, 2), xlabel=False)
    labelled(ax, xlabel=False)
    assert ax.get_xlabel() == ""


def test_key_is_pinned_to_its_corner_in_inches(ax):
    line, = ax.plot([0, 1], [0, 1], color="red", linestyle="--")
    dots, = ax.plot([0], [0], linestyle="none", marker="X")
    key = P._draw_key(ax, [("a line", line), ("markers", dots)], corner="upper right")
    ax.figure.canvas.draw()
    box = key["box"].get_window_extent()
    axes = ax.get_window_extent()
    assert box.x1 < axes.x1 and box.y1 < axes.y1 and box.x0 > axes.x0 + axes.width / 2
    assert [t.get_text() for t in key["texts"]] == ["a line", "markers"]
    for t in key["texts"]:  # every label inside the box
        e = t.get_window_extent()
        assert box.x0 < e.x0 and e.x1 < box.x1 and box.y0 < e.y0 and e.y1 < box.y1


def test_palette_is_print_readable():
    """Every series differs from the others by line style, not only by colour."""
    styles = [str(s["linestyle"]) for s in P._SERIES]
    assert len(set(styles)) == len(styles)
    assert len({s["marker"] for s in P._SERIES}) == len(P._SERIES)
