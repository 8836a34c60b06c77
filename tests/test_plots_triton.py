"""The draw functions of notebook 04: they draw what they are given, label everything, stay
readable in grey, and their update functions change the data in place."""
import numpy as np
import pytest
from matplotlib.colors import to_rgb

from _support import labelled

from lessonlib.attention import TILE_FULL, TILE_MASKED, TILE_SKIPPED
from lessonlib.plots import triton as P


def grey(colour):
    r, g, b = to_rgb(colour)
    return 0.299 * r + 0.587 * g + 0.114 * b


CODES = np.array([[1, 0, 0], [2, 1, 0], [1, 2, 1]], dtype=np.int8)


def test_tile_map_draws_the_codes_with_a_legend(ax):
    art = P.draw_tile_map(ax, CODES, title="3 programs")
    image = art["image"]
    labelled(ax)
    assert ax.get_title() == "3 programs"
    assert "key block" in ax.get_xlabel() and "program" in ax.get_ylabel()
    np.testing.assert_array_equal(image.get_array(), CODES)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == \
        list(P._TILE_LABELS) + [P._EDGE_LABEL]
    # Each code gets its own colour, and the three stay apart printed in grey.
    rgba = [image.cmap(image.norm(c)) for c in (TILE_SKIPPED, TILE_MASKED, TILE_FULL)]
    greys = sorted(grey(c[:3]) for c in rgba)
    assert min(np.diff(greys)) > 0.15
    assert image.get_interpolation() == "nearest"
    # The legend sits under the map and its x label, off the tiles.
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    assert legend.y1 < ax.bbox.y0
    assert legend.y1 < ax.xaxis.label.get_window_extent(renderer).y0


def test_tile_map_updates_in_place_to_a_new_shape(ax):
    art = P.draw_tile_map(ax, CODES, title="before")
    image = art["image"]
    bigger = np.full((40, 50), TILE_FULL, dtype=np.int8)
    assert P.update_tile_map(ax, art, bigger, title="after") is art
    assert list(ax.images) == [image]  # no second image
    np.testing.assert_array_equal(image.get_array(), bigger)
    # The grid fills fixed axes (0..1 both ways): a new shape changes the image, not the axes.
    assert image.get_extent() == [0.0, 1.0, 1.0, 0.0]
    assert ax.get_xlim() == (0.0, 1.0) and ax.get_ylim() == (1.0, 0.0)
    assert ax.get_title() == "after"
    marks_x, texts_x = art["index"]["x"]
    marks_y, texts_y = art["index"]["y"]
    assert [t.get_text() for t in texts_x] == ["0", "25", "49"]  # first, middle, last block
    assert [t.get_text() for t in texts_y] == ["0", "20", "39"]
    np.testing.assert_allclose(marks_x.get_xdata(), [0.5 / 50, 25.5 / 50, 49.5 / 50])
    assert len(art["grid"].get_segments()) == 0  # no tile lines when tiles are tiny
    P.update_tile_map(ax, art, CODES, title="small again")
    assert len(art["grid"].get_segments()) == 4  # white lines between 3 x 3 tiles
    assert [t.get_text() for t in texts_x] == ["0", "1", "2"]
    assert len(art["edges"].get_xdata()) == 0  # no n and block given: no mask edges


def test_mask_edges_run_between_visible_and_hidden_keys():
    # n = 8, block 4 (span 8), causal: the diagonal from (0.5, 0) to (8, 7.5), in 0..1 units.
    x, y = P._mask_edges(8, 4, causal=True)
    np.testing.assert_allclose(x[:2] * 8, [0.5, 8.0])
    np.testing.assert_allclose(y[:2] * 8, [0.0, 7.5])
    assert np.isnan(x[2]) and np.isnan(y[2])
    # A window of 3 and 2 sinks add the window's edge and the sinks' vertical edge.
    x, y = P._mask_edges(8, 4, causal=True, window=3, sink_tokens=2)
    pieces = [(x[i:i + 2] * 8, y[i:i + 2] * 8) for i in range(0, len(x), 3)]
    assert len(pieces) == 3
    np.testing.assert_allclose(pieces[1][0], [0.0, 5.5])
    np.testing.assert_allclose(pieces[1][1], [2.5, 8.0])
    np.testing.assert_allclose(pieces[2][0], [2.0, 2.0])
    np.testing.assert_allclose(pieces[2][1], [4.5, 8.0])
    x, y = P._mask_edges(8, 4, causal=False)
    assert len(x) == 0  # nothing hidden, nothing to trace


@pytest.mark.parametrize("n, block, opts", [
    (1024, 64, dict(causal=True, window=256, sink_tokens=4)),
    (1000, 32, dict(causal=True, window=100, sink_tokens=70)),
    (512, 16, dict(causal=False, window=96, sink_tokens=0)),
    (768, 128, dict(causal=True, window=None, sink_tokens=0)),
])
def test_mask_edges_cross_only_tiles_computed_with_the_mask(n, block, opts):
    from lessonlib.kernel_plan import kernel_tile_plan
    codes = kernel_tile_plan(n, n, block_m=block, block_n=block, **opts)
    t = codes.shape[0]
    x, y = P._mask_edges(n, block, **opts)
    assert len(x)
    near = 1.0 / block  # one token: the diagonal is a straight line through a staircase
    for i in range(0, len(x), 3):  # sample each piece, away from tile borders
        s = np.linspace(0.0, 1.0, 2001)
        px, py = x[i] + s * (x[i + 1] - x[i]), y[i] + s * (y[i + 1] - y[i])
        col, row = px * t, py * t
        inside = ((np.abs(col - np.round(col)) > near) & (np.abs(row - np.round(row)) > near)
                  & (col < t) & (row < t))
        hit = codes[row[inside].astype(int), col[inside].astype(int)]
        assert (hit == TILE_MASKED).all(), (i, np.unique(hit))


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
