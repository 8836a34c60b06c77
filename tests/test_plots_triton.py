"""The draw functions of notebook 04: they draw what they are given, label everything, stay
readable in grey, and their update functions change the data in place."""
import numpy as np
import pytest
from matplotlib.colors import to_rgb

from _support import labelled

from lessonlib.plots import triton as P


def grey(colour):
    r, g, b = to_rgb(colour)
    return 0.299 * r + 0.587 * g + 0.114 * b


CODES = np.array([[1, 0, 0], [2, 1, 0], [1, 2, 1]], dtype=np.int8)


def test_tile_map_draws_the_codes_with_a_legend(ax):
    image = P.draw_tile_map(ax, CODES, title="3 programs")
    labelled(ax)
    assert ax.get_title() == "3 programs"
    assert "key block" in ax.get_xlabel() and "program" in ax.get_ylabel()
    np.testing.assert_array_equal(image.get_array(), CODES)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(P.TILE_LABELS)
    # Each code gets its own colour, and the three stay apart printed in grey.
    rgba = [image.cmap(image.norm(c)) for c in (P.TILE_SKIPPED, P.TILE_MASKED, P.TILE_FULL)]
    greys = sorted(grey(c[:3]) for c in rgba)
    assert min(np.diff(greys)) > 0.15
    assert image.get_interpolation() == "nearest"


def test_tile_map_updates_in_place_to_a_new_shape(ax):
    image = P.draw_tile_map(ax, CODES, title="before")
    bigger = np.full((40, 50), P.TILE_FULL, dtype=np.int8)
    assert P.update_tile_map(ax, image, bigger, title="after") is image
    assert list(ax.images) == [image]  # no second image
    np.testing.assert_array_equal(image.get_array(), bigger)
    assert image.get_extent() == [-0.5, 49.5, 39.5, -0.5]
    assert ax.get_xlim() == (-0.5, 49.5) and ax.get_ylim() == (39.5, -0.5)
    assert ax.get_title() == "after"
    assert len(ax.get_xticks()) <= 9 and len(ax.get_yticks()) <= 9  # readable tick labels
    assert len(ax.get_xticks(minor=True)) == 0  # no tile lines when tiles are tiny
    P.update_tile_map(ax, image, CODES, title="small again")
    assert len(ax.get_xticks(minor=True)) == 4  # white lines between 3 tiles, and the edges


def test_work_curves_draw_on_log_axes_and_update_in_place(ax):
    lengths = [256, 512, 1024]
    curves = {"no mask (dense)": [16, 64, 256], "causal only": [10, 36, 136],
              "current settings": [10, 26, 58]}
    art = P.draw_work_curves(ax, lengths, curves, marker_n=512, ylim=(0.5, 1e5))
    labelled(ax)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "tokens" in ax.get_xlabel() and "tiles" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(curves)
    assert ax.get_ylim() == pytest.approx((0.5, 1e5))
    # Curves differ by line style and marker, not by colour alone.
    assert len({line.get_linestyle() for line in art["lines"].values()}) == 3
    assert len({m.get_marker() for m in art["markers"].values()}) == 3
    assert list(art["markers"]["causal only"].get_data()[1]) == [36]
    line = art["lines"]["current settings"]

    new = {"no mask (dense)": [16, 64, 100, 256], "causal only": [10, 36, 55, 136],
           "current settings": [0, 26, 30, 58]}
    P.update_work_curves(ax, art, new, marker_n=640, lengths=[256, 512, 640, 1024])
    assert art["lines"]["current settings"] is line
    np.testing.assert_array_equal(line.get_xdata(), [256, 512, 640, 1024])
    y = line.get_ydata()
    assert np.isnan(y[0]) and list(y[1:]) == [26, 30, 58]  # 0 cannot sit on a log axis
    assert list(art["markers"]["current settings"].get_data()[0]) == [640]
    assert list(art["markers"]["current settings"].get_data()[1]) == [30]
    assert list(art["cursor"].get_xdata()) == [640, 640]
    assert ax.get_ylim() == pytest.approx((0.5, 1e5))  # fixed limits: the layout stays still


def test_work_curves_keep_their_lengths_when_none_are_given(ax):
    art = P.draw_work_curves(ax, [1, 2], {"a": [1, 4]}, marker_n=1, ylim=(0.1, 10),
                             ticks=[1, 2])
    P.update_work_curves(ax, art, {"a": [2, 8]}, marker_n=2)
    np.testing.assert_array_equal(art["lines"]["a"].get_xdata(), [1, 2])
    np.testing.assert_array_equal(art["lines"]["a"].get_ydata(), [2, 8])
