"""The draw functions of notebooks 01-03: they draw what they are given, label everything, and
their update functions change the data in place (same artists, new values)."""
import numpy as np
import pytest
from matplotlib.colors import to_hex

from _support import labelled

from lessonlib.attention import TILE_FULL, TILE_MASKED, TILE_SKIPPED
from lessonlib.plots import attention as P


def headed(ax, *, xlabel=True, ylabel=True):
    """The panel is titled by the key above it (_legend_header) and has both axis labels."""
    legend = ax.get_legend()
    assert legend is not None and legend.get_title().get_text(), "no key with a title"
    assert ax.get_label() == legend.get_title().get_text()
    assert not xlabel or ax.get_xlabel(), "no x label"
    assert not ylabel or ax.get_ylabel(), "no y label"


def above_the_axes(ax):
    """The key (with the panel's title) lies wholly above the plotting area."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box, axes = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
    return box.y0 >= axes.y1 - 1e-6


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
    headed(ax)
    assert above_the_axes(ax)
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
    headed(ax)
    assert above_the_axes(ax)  # the key no longer hides the top of a bar
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["read", "not read", "sink"]
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


def _area(path):
    v = path.vertices.reshape(-1, 6, 2)  # closed rectangles: 5 points and a close code
    return float(np.sum(np.abs((v[:, 2, 0] - v[:, 0, 0]) * (v[:, 2, 1] - v[:, 0, 1]))))


def test_block_map_and_resize(ax):
    codes = np.array([[TILE_MASKED, TILE_SKIPPED], [TILE_FULL, TILE_MASKED]])
    art = P.draw_block_map(ax, codes, block=4, n=8)
    labelled(ax)
    assert "2 x 2" in ax.get_title()
    assert len(ax.get_legend().get_texts()) == 3
    tiles = art["tiles"]
    assert [_area(tiles[c].get_path()) for c in (TILE_SKIPPED, TILE_MASKED,
                                                  TILE_FULL)] == [0.25, 0.5, 0.25]
    assert len(art["grid"].get_segments()) == 2  # one inner edge each way
    bigger = np.full((4, 4), TILE_FULL)
    P.update_block_map(ax, art, bigger, block=2, n=8)
    assert _area(tiles[TILE_FULL].get_path()) == pytest.approx(1.0)
    assert _area(tiles[TILE_MASKED].get_path()) == 0.0
    assert ax.get_xlim() == (0.0, 1.0) and ax.get_ylim() == (1.0, 0.0)  # whatever T is
    assert "4 x 4" in ax.get_title()


def test_tile_rectangles_merge_runs_and_shorten_the_last_block():
    codes = np.array([[TILE_MASKED, TILE_SKIPPED, TILE_SKIPPED],
                      [TILE_FULL, TILE_MASKED, TILE_SKIPPED],
                      [TILE_FULL, TILE_FULL, TILE_MASKED]])
    rects, kinds = P._tile_rectangles(codes, block=4, n=10)  # blocks of 4, 4 and 2 tokens
    assert len(rects) == 7 and list(kinds) == [1, 0, 2, 1, 0, 2, 1]
    np.testing.assert_allclose(rects[1][[0, 2]], [[0.4, 0.0], [1.0, 0.4]])  # one run of two
    np.testing.assert_allclose(rects[-1][[0, 2]], [[0.8, 0.8], [1.0, 1.0]])  # 2 of 10 tokens
    area = np.abs((rects[:, 2, 0] - rects[:, 0, 0]) * (rects[:, 2, 1] - rects[:, 0, 1]))
    assert area.sum() == pytest.approx(1.0)


def test_block_colours_tell_the_kinds_apart():
    """The legend's swatches are distinct, and each differs from the others in lightness too
    (readable in grey print)."""
    from lessonlib.plots._style import relative_luminance
    lum = sorted(relative_luminance(c) for c in P._BLOCK_COLOURS)
    assert len(set(P._BLOCK_COLOURS)) == 3 and all(b / a > 1.5 for a, b in zip(lum, lum[1:]))


def test_ratio_curves(ax):
    blocks = [16, 32, 64]
    art = P.draw_ratio_curves(ax, blocks, {"no mask": [0.3, 0.6, 1.1], "2B/d": [0.25, 0.5, 1]},
                              marker_block=32, d=128)
    headed(ax)
    assert above_the_axes(ax)
    assert art["break_even_label"] in ax.figure.texts  # fixed: drawn once, in the background
    assert list(art["break_even"].get_ydata()) == [1.0, 1.0]
    P.update_ratio_curves(ax, art, {"no mask": [1, 2, 3], "2B/d": [0.25, 0.5, 1]},
                          marker_block=64)
    assert list(art["markers"]["no mask"].get_data()[1]) == [3.0]


def test_legends_to_figure_keeps_the_place_and_the_entries():
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, layout="constrained", figsize=(9.2, 3.8))
    P.draw_flop_curves(a, [1, 2, 4], {"w": [1.0, 2.0, 4.0], "a": [0.5, 2.0, 8.0]}, marker_n=2)
    P.draw_value_plane(b, np.array([[1, 0], [0, 1]]), [[1, 0]])
    fig.canvas.draw()
    fig.set_layout_engine("none")
    renderer = fig.canvas.get_renderer()
    before = [ax.get_legend().get_window_extent(renderer) for ax in (a, b)]
    moved = P.legends_to_figure(fig)
    fig.canvas.draw()
    assert a.get_legend() is None and b.get_legend() is None and fig.legends == moved
    for old, new in zip(before, moved):
        np.testing.assert_allclose(new.get_window_extent(renderer).bounds, old.bounds, atol=0.5)
    assert [t.get_text() for t in moved[0].get_texts()] == ["w", "a"]
    assert moved[0].get_title().get_text() == "Prefill compute"
    plt.close(fig)


def test_value_names_are_fixed_figure_texts(ax):
    art = P.draw_value_plane(ax, np.array([[1, 0], [0, 1], [2, 2]]), [[1, 0]])
    assert [t.get_text() for t in art["labels"]] == ["v0", "v1", "v2"]
    assert all(t in ax.figure.texts for t in art["labels"])
    assert min(t.get_fontsize() for t in art["labels"]) >= 9


def test_fix_ticks_keeps_what_was_drawn():
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedFormatter, FixedLocator
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([-1.3, 2.7], [0.0, 1.1])
    fig.canvas.draw()
    before = np.asarray(fig.canvas.buffer_rgba()).copy()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert P.fix_ticks(fig) is fig
    fig.canvas.draw()
    assert isinstance(ax.xaxis.get_major_locator(), FixedLocator)
    assert isinstance(ax.yaxis.get_major_formatter(), FixedFormatter)
    assert [t.get_text() for t in ax.get_yticklabels()] == labels
    np.testing.assert_array_equal(np.asarray(fig.canvas.buffer_rgba()), before)
    plt.close(fig)
