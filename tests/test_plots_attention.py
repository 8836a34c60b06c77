"""The draw functions of notebooks 01-03: they draw what they are given, label everything, and
their update functions change the data in place (same artists, new values)."""
import numpy as np
import pytest
from matplotlib.colors import to_hex

from _support import labelled

from lessonlib.plots import attention as P


def test_palette_is_distinct_and_styles_differ_without_colour():
    assert len({to_hex(c) for c in P.PALETTE.values()}) == len(P.PALETTE)
    assert len({s["linestyle"] for s in P.STYLES}) == len(P.STYLES)  # readable in grey
    assert len({s["marker"] for s in P.STYLES}) == len(P.STYLES)


def test_series_styles_differ_in_grey_and_refuse_too_many():
    from lessonlib.plots._style import series_styles
    styles = series_styles(["black", "blue", "green"])
    assert [s["color"] for s in styles] == [P.PALETTE[c] for c in ("black", "blue", "green")]
    assert len({str(s["linestyle"]) for s in styles}) == len({s["marker"] for s in styles}) == 3
    with pytest.raises(ValueError, match="at most 6"):
        series_styles(["blue"] * 7)


def test_memory_curves_draw_and_update(ax):
    x = [1024, 2048, 4096]
    curves = {"S": [1.0, 4.0, 16.0], "KV": [0.1, 0.2, 0.4]}
    art = P.draw_memory_curves(ax, x, curves, marker_n=2048)
    labelled(ax)
    assert "GiB" in ax.get_ylabel() and "tokens" in ax.get_xlabel()
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["S", "KV"]
    np.testing.assert_array_equal(art["lines"]["S"].get_ydata(), [1, 4, 16])
    assert list(art["markers"]["S"].get_data()[1]) == [4.0]
    line = art["lines"]["S"]
    P.update_curves(ax, art, {"S": [2.0, 8.0, 32.0], "KV": [0.1, 0.2, 0.4]}, marker_x=4096)
    assert art["lines"]["S"] is line  # updated in place
    np.testing.assert_array_equal(line.get_ydata(), [2, 8, 32])
    assert list(art["markers"]["S"].get_data()[1]) == [32.0]
    assert list(art["cursor"].get_xdata()) == [4096, 4096]
    lo, hi = ax.get_ylim()
    assert lo <= 0.1 and hi >= 32


def test_update_without_rescale_keeps_the_limits(ax):
    art = P.draw_flop_curves(ax, [1, 2], {"w": [1.0, 2.0]}, marker_n=1)
    P.fit_log_ylim(ax, [[0.01, 1000.0]])
    limits = ax.get_ylim()
    P.update_curves(ax, art, {"w": [5.0, 6.0]}, marker_x=2, rescale=False)
    assert ax.get_ylim() == limits
    assert "TFLOP" in ax.get_ylabel()


def test_softmax_terms_bars(ax):
    bars = P.draw_softmax_terms(ax, ["0", "1", "sink"], [0.5, 1.0, 0.3],
                                seen=[True, False, True], sink_index=2)
    labelled(ax)
    assert [b.get_height() for b in bars] == [0.5, 0.0, 0.3]  # unread key: empty bar
    assert bars[2].get_hatch() == "//"
    P.update_softmax_terms(bars, [0.1, 1.0, 0.0], seen=[True, True, False], sink_index=2)
    assert [b.get_height() for b in bars] == [0.1, 1.0, 0.0]
    assert to_hex(bars[2].get_facecolor()) == "#ffffff"


def test_value_plane(ax):
    values = np.array([[1, 0], [0, 1]])
    art = P.draw_value_plane(ax, values, [[1, 0], [0.3, 0.7]], sink_output=[0.2, 0.5])
    labelled(ax)
    np.testing.assert_allclose(np.column_stack(art["path"].get_data()), [[1, 0], [0.3, 0.7]])
    assert list(art["current"].get_data()[0]) == [0.3]
    assert list(art["sink"].get_data()[0]) == [0.2]
    P.update_value_plane(art, [[1, 0]], sink_output=None)
    assert len(art["sink"].get_data()[0]) == 0
    assert list(art["current"].get_data()[0]) == [1.0]


def test_block_map_and_resize(ax):
    codes = np.array([[P.BLOCK_MASKED, P.BLOCK_SKIPPED], [P.BLOCK_FULL, P.BLOCK_MASKED]])
    image = P.draw_block_map(ax, codes, block=4, n=8)
    labelled(ax)
    assert "2 x 2" in ax.get_title()
    assert len(ax.get_legend().get_texts()) == 3
    bigger = np.full((4, 4), P.BLOCK_FULL)
    P.update_block_map(ax, image, bigger, block=2, n=8)
    assert image.get_array().shape == (4, 4)
    assert ax.get_xlim() == (-0.5, 3.5)
    assert "4 x 4" in ax.get_title()


def test_ratio_curves(ax):
    blocks = [16, 32, 64]
    art = P.draw_ratio_curves(ax, blocks, {"no mask": [0.3, 0.6, 1.1], "2B/d": [0.25, 0.5, 1]},
                              marker_block=32, d=128)
    labelled(ax)
    assert list(art["break_even"].get_ydata()) == [1.0, 1.0]
    P.update_ratio_curves(ax, art, {"no mask": [1, 2, 3], "2B/d": [0.25, 0.5, 1]},
                          marker_block=64)
    assert list(art["markers"]["no mask"].get_data()[1]) == [3.0]
