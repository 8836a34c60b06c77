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


def drawn_grid(art, hq, hkv):
    """The (hkv, hq) grid the head map's patch covers, read at every cell's centre."""
    return plots._cells_filled(art["cells"], plots._head_map_centres(hq, hkv)).reshape(hkv, hq)


@pytest.mark.parametrize("hq, hkv", [(8, 2), (32, 8), (32, 1), (32, 32)])
def test_head_map_is_one_filled_cell_per_query_head(ax, hq, hkv):
    art = plots.draw_head_map(ax, gqa_head_map(hq, hkv), hkv)
    grid = drawn_grid(art, hq, hkv)
    assert grid.shape == (hkv, hq)
    np.testing.assert_array_equal(grid.sum(axis=0), np.ones(hq))
    np.testing.assert_array_equal(grid.argmax(axis=0), gqa_head_map(hq, hkv))
    np.testing.assert_array_equal(art["grid"], grid)
    assert "query head" in ax.get_xlabel() and "KV head" in ax.get_ylabel()
    assert f"{hq} query heads" in ax.get_title() and "reads" in ax.get_xlabel()
    ax.figure.canvas.draw()


def test_head_map_updates_its_shape(ax):
    art = plots.draw_head_map(ax, gqa_head_map(8, 2), 2)
    cells = art["cells"]
    plots.update_head_map(ax, art, gqa_head_map(8, 4), 4)
    assert art["cells"] is cells and drawn_grid(art, 8, 4).shape == (4, 8)
    np.testing.assert_array_equal(drawn_grid(art, 8, 4).argmax(axis=0), gqa_head_map(8, 4))
    # the rows fill the axes whatever their number: the axes stay, the row labels move
    assert ax.get_ylim() == (1.0, 0.0) and ax.get_xlim() == (-0.5, 7.5)
    assert "groups of 2" in ax.get_title()
    marks, texts = art["index"]["y"]
    assert [t.get_text() for t in texts] == ["0", "2", "3"]
    np.testing.assert_allclose([t.get_position()[1] for t in texts], [0.125, 0.625, 0.875])


def test_boxes_path_draws_each_box():
    path = plots.boxes_path([0, 2], [1, 3], [0, 0], [1, 2])
    inside = path.contains_points([[0.5, 0.5], [2.5, 1.5], [1.5, 0.5], [0.5, 1.5]])
    assert inside.tolist() == [True, True, False, False]
