"""lessonlib.plots.windows: the mask and per-layer bars draw what they are given (Agg)."""
import numpy as np
import pytest
from matplotlib.path import Path

from lessonlib.plots import windows as plots
from lessonlib.plots.kv_cache import _legend_clear_of_data, pin_legend


def test_mask_draws_the_codes_and_resizes(ax):
    codes = np.array([[1, 0, 0], [1, 1, 0], [2, 1, 1]])
    art = plots.draw_window_mask(ax, codes, title="mask")
    np.testing.assert_array_equal(art["codes"], codes)
    np.testing.assert_array_equal(plots._mask_drawn(art, 3), codes)  # what the polygons cover
    assert ax.get_title() == "mask" and "key" in ax.get_xlabel() and "query" in ax.get_ylabel()
    key = [t.get_text() for t in ax.get_legend().get_texts()]  # the colour key, under the axes
    assert any("sink" in k for k in key) and any("window" in k for k in key)
    assert any("masked" in k for k in key)
    bigger = np.ones((5, 5), dtype=int)
    window = art["window"]
    plots.update_window_mask(ax, art, bigger, title="five")
    assert art["window"] is window  # updated in place
    np.testing.assert_array_equal(plots._mask_drawn(art, 5), bigger)
    # the axes stay 0..1 whatever n is: the labels name positions 0, n // 2 and n - 1
    assert ax.get_xlim() == (0.0, 1.0) and ax.get_title() == "five"
    marks, texts = art["ticks"]["x"]
    assert [t.get_text() for t in texts] == ["0", "2", "4"]
    np.testing.assert_allclose([t.get_position()[0] for t in texts], [0.1, 0.5, 0.9])
    ax.figure.canvas.draw()
    # the key lies below the axes: no cell of the mask under it
    assert ax.get_legend().get_window_extent().y1 < ax.get_window_extent().y0


def test_mask_outline_is_exactly_the_cells_of_one_code():
    codes = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [2, 1, 1, 0], [2, 2, 1, 1]])
    for code in (1, 2):
        outline = plots._mask_outline(codes, code)
        assert outline.shape == (4 * 4, 2)  # down the runs' right ends, back up their left ends
        cells = np.column_stack([np.tile(np.arange(4), 4) + 0.5, np.repeat(np.arange(4), 4) + 0.5])
        covered = Path(outline).contains_points(cells).reshape(4, 4)
        np.testing.assert_array_equal(covered, codes == code)
    with pytest.raises(ValueError, match="one run"):
        plots._mask_outline(np.array([[1, 0, 1]]), 1)


def test_layer_bars_are_hatched_for_local_layers_and_update(ax):
    entries, local = [10, 10, 40, 10], [True, True, False, True]
    art = plots.draw_layer_cache(ax, entries, local, levels={"engine": 16}, title="bars")
    assert plots.bar_heights(art) == entries  # read back from the drawn paths
    assert art["local"].get_hatch() and not art["global"].get_hatch()
    assert art["local"].get_facecolor() != art["global"].get_facecolor()
    assert list(art["levels"]["engine"].get_ydata()) == [16, 16]
    assert ax.get_title() == "bars" and "layer" in ax.get_xlabel() and "tokens" in ax.get_ylabel()
    key = [t.get_text() for t in ax.get_legend().get_texts()]
    assert key == ["sliding-window layer", "global layer", "engine"]
    local_patch = art["local"]
    plots.update_layer_cache(ax, art, [5, 5, 80, 5], levels={"engine": 96}, title="new")
    assert art["local"] is local_patch and plots.bar_heights(art) == [5, 5, 80, 5]
    assert list(art["levels"]["engine"].get_ydata()) == [96, 96]
    assert ax.get_ylim()[1] >= 96 and ax.get_title() == "new"
    ax.figure.canvas.draw()


def test_the_keys_lie_under_the_axes_off_the_bars_and_lines(ax):
    """The engines' labels used to sit on the bars: now every key is a legend under the axes,
    clear of every bar and line, also once pinned to the figure."""
    entries, local = [300, 300, 512, 300], [True, True, False, True]
    art = plots.draw_layer_cache(ax, entries, local, levels={"llama.cpp cells": 512,
                                                             "vLLM block slots": 320},
                                 ylim=(0, 560))
    ax.figure.canvas.draw()
    legend = pin_legend(ax)
    ax.figure.canvas.draw()
    assert legend in ax.figure.legends and ax.get_legend() is None
    box = legend.get_window_extent()
    assert box.y1 < ax.get_window_extent().y0  # below the axes, and so off every bar
    assert _legend_clear_of_data(legend, list(art["levels"].values()))
    for patch in (art["local"], art["global"]):
        assert not patch.get_window_extent().overlaps(box)
