"""lessonlib.plots.kv_cache: curves and the head map draw what they are given (MPLBACKEND=Agg)."""
import numpy as np
import pytest

from lessonlib.kv_cache import gqa_head_map
from lessonlib.plots import kv_cache as plots


def test_token_labels():
    assert [plots.token_label(x) for x in (512, 1024, 32768, 2 ** 20)] == ["512", "1K", "32K", "1M"]


def test_size_curves_draw_and_update_in_place(ax):
    x = [1024, 2048, 4096]
    curves = {"a": [1.0, 2.0, 4.0], "b": [0.5, 1.0, 2.0]}
    art = plots.draw_size_curves(ax, x, curves, marker_n=2048, ylabel="GiB", title="T",
                                 hlines={"ref": 3.0})
    np.testing.assert_allclose(art["lines"]["a"].get_ydata(), [1, 2, 4])
    assert art["markers"]["b"].get_xydata().tolist() == [[2048, 1.0]]
    assert ax.get_title() == "T" and ax.get_ylabel() == "GiB" and "tokens" in ax.get_xlabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b", "ref"]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    line = art["lines"]["b"]
    plots.update_size_curves(ax, art, {"b": [5.0, 6.0, 7.0]}, marker_n=4096, hlines={"ref": 9.0})
    assert art["lines"]["b"] is line
    np.testing.assert_allclose(line.get_ydata(), [5, 6, 7])
    assert art["markers"]["b"].get_xydata().tolist() == [[4096, 7.0]]
    assert art["markers"]["a"].get_xydata().tolist() == [[4096, 4.0]]
    assert list(art["cursor"].get_xdata()) == [4096, 4096]
    assert list(art["hlines"]["ref"].get_ydata()) == [9.0, 9.0]
    lo, hi = ax.get_ylim()
    assert lo < 1.0 and hi > 9.0
    ax.figure.canvas.draw()


@pytest.mark.parametrize("hq, hkv", [(8, 2), (32, 8), (32, 1), (32, 32)])
def test_head_map_is_one_filled_cell_per_query_head(ax, hq, hkv):
    art = plots.draw_head_map(ax, gqa_head_map(hq, hkv), hkv)
    grid = np.asarray(art["image"].get_array())
    assert grid.shape == (hkv, hq)
    np.testing.assert_array_equal(grid.sum(axis=0), np.ones(hq))
    np.testing.assert_array_equal(grid.argmax(axis=0), gqa_head_map(hq, hkv))
    assert "query head" in ax.get_xlabel() and "KV head" in ax.get_ylabel()
    assert f"{hq} query heads" in ax.get_title() and "reads" in ax.get_xlabel()
    ax.figure.canvas.draw()


def test_head_map_updates_its_shape(ax):
    art = plots.draw_head_map(ax, gqa_head_map(8, 2), 2)
    image = art["image"]
    plots.update_head_map(ax, art, gqa_head_map(8, 4), 4)
    assert art["image"] is image and np.asarray(image.get_array()).shape == (4, 8)
    assert ax.get_ylim() == (3.5, -0.5) and "groups of 2" in ax.get_title()
