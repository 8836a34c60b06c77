"""lessonlib.plots.windows: the mask and per-layer bars draw what they are given (Agg)."""
import numpy as np

from lessonlib.plots import windows as plots


def test_mask_draws_the_codes_and_resizes(ax):
    codes = np.array([[1, 0, 0], [1, 1, 0], [2, 1, 1]])
    image = plots.draw_window_mask(ax, codes, title="mask")
    np.testing.assert_array_equal(image.get_array(), codes)
    assert image.get_interpolation() == "nearest"
    assert ax.get_title() == "mask" and "key" in ax.get_xlabel() and "query" in ax.get_ylabel()
    assert "sink" in ax.get_xlabel() and "window" in ax.get_xlabel()  # the colour key
    bigger = np.ones((5, 5), dtype=int)
    plots.update_window_mask(ax, image, bigger, title="five")
    np.testing.assert_array_equal(image.get_array(), bigger)
    assert ax.get_xlim() == (-0.5, 4.5) and ax.get_title() == "five"
    ax.figure.canvas.draw()


def test_layer_bars_are_hatched_for_local_layers_and_update(ax):
    entries, local = [10, 10, 40, 10], [True, True, False, True]
    art = plots.draw_layer_cache(ax, entries, local, levels={"engine": 16}, title="bars")
    bars = art["bars"]
    assert [b.get_height() for b in bars] == entries
    assert [bool(b.get_hatch()) for b in bars] == local
    assert bars[0].get_facecolor() != bars[2].get_facecolor()
    assert list(art["levels"]["engine"].get_ydata()) == [16, 16]
    assert ax.get_title() == "bars" and "layer" in ax.get_xlabel() and "tokens" in ax.get_ylabel()
    assert "hatched" in ax.get_xlabel() and art["labels"]["engine"].get_text() == "engine"
    plots.update_layer_cache(ax, art, [5, 5, 80, 5], levels={"engine": 96}, title="new")
    assert art["bars"] is bars and [b.get_height() for b in bars] == [5, 5, 80, 5]
    assert list(art["levels"]["engine"].get_ydata()) == [96, 96]
    assert art["labels"]["engine"].get_position()[1] == 96
    assert ax.get_ylim()[1] >= 96 and ax.get_title() == "new"
    ax.figure.canvas.draw()
