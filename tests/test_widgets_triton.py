"""Notebook 04's widget and its plain-Python copy of the kernel's loop bounds.

The copy (`kernel_tile_plan`) must record exactly what the kernel records when it runs
(`kernel_tile_map`, under Triton's interpreter); then the widget, driven headlessly, must show
what the copy computes for every slider setting.
"""
import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (make test exports it too)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, strategies as st  # noqa: E402

from lessonlib import triton_attention as ta  # noqa: E402
from lessonlib.attention import attention_mask, key_blocks  # noqa: E402
from lessonlib.plots import triton as P  # noqa: E402
from lessonlib.widgets import triton as W  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_tile_codes_are_the_kernels():
    assert (P.TILE_SKIPPED, P.TILE_MASKED, P.TILE_FULL) == \
        (ta.TILE_SKIPPED, ta.TILE_MASKED, ta.TILE_FULL)


# ------------------------------------------------------------------ the plan is the kernel's

# (nq, nk, options): ragged ends, nq < nk, BLOCK_M != BLOCK_N, sinks beyond the window's start,
# a window wider than n, a window without the causal mask. About 60 tile visits or fewer each.
PLAN_CASES = [
    (256, 256, dict(causal=True, window=64, sink_tokens=4, block_m=32, block_n=32)),
    (200, 200, dict(causal=True, window=45, sink_tokens=20, block_m=32, block_n=16)),
    (96, 300, dict(causal=True, window=70, sink_tokens=3, block_m=16, block_n=32)),
    (1, 300, dict(causal=True, window=64, sink_tokens=40, block_m=16, block_n=32)),
    (150, 150, dict(causal=False, window=40, sink_tokens=0, block_m=32, block_n=32)),
    (130, 130, dict(causal=True, window=1000, sink_tokens=5, block_m=32, block_n=32)),
    (100, 100, dict(causal=True, block_m=16, block_n=32)),
    (100, 100, dict(block_m=32, block_n=64)),
    (512, 512, dict(causal=True, window=100, sink_tokens=70, block_m=64, block_n=64)),
]


@pytest.mark.parametrize("nq, nk, opts", PLAN_CASES)
def test_plan_matches_the_tiles_the_kernel_records(nq, nk, opts):
    np.testing.assert_array_equal(W.kernel_tile_plan(nq, nk, **opts),
                                  ta.kernel_tile_map(nq, nk, **opts))


def test_widget_default_map_is_the_kernels():
    w = W.tile_map_explorer()
    opts = dict(causal=True, window=256, sink_tokens=4, block_m=64, block_n=64)
    np.testing.assert_array_equal(w.artists["map"].get_array(),
                                  ta.kernel_tile_map(1024, 1024, **opts))


@given(n=st.integers(1, 300), nq_frac=st.floats(0.01, 1.0), causal=st.booleans(),
       window=st.one_of(st.none(), st.integers(1, 320)), sinks=st.integers(0, 80),
       bm=st.sampled_from([16, 32, 64]), bn=st.sampled_from([16, 32, 64]))
def test_plan_skips_exactly_the_hidden_tiles(n, nq_frac, causal, window, sinks, bm, bn):
    """The plan (like the kernel) computes a tile iff some query sees some key of it, skips the
    mask only where every pair is visible, and agrees with the numpy kernel's key_blocks."""
    nq = max(1, round(n * nq_frac))
    opts = dict(causal=causal, window=window, sink_tokens=sinks)
    codes = W.kernel_tile_plan(nq, n, block_m=bm, block_n=bn, **opts)
    vis = attention_mask(nq, n, **opts)
    for i in range(codes.shape[0]):
        rows = vis[i * bm:(i + 1) * bm]
        for j in range(codes.shape[1]):
            tile = rows[:, j * bn:(j + 1) * bn]
            assert (codes[i, j] != P.TILE_SKIPPED) == tile.any(), (i, j)
            if codes[i, j] == P.TILE_FULL:
                assert tile.all() and (j + 1) * bn <= n, (i, j)
        q_lo = n - nq + i * bm
        plan = key_blocks(q_lo, min(q_lo + bm, n), n, bn, **opts)
        assert [j0 // bn for j0 in plan] == list(np.flatnonzero(codes[i])), i
    masked, full = W.kernel_tile_counts(nq, n, block_m=bm, block_n=bn, **opts)
    assert (masked, full) == (int((codes == P.TILE_MASKED).sum()),
                              int((codes == P.TILE_FULL).sum()))


def test_stretches_of_a_windowed_program_in_the_kernels_order():
    # n = 1024, BLOCK_M = 128, BLOCK_N = 64, W = 193, 4 sinks: program 5 holds queries
    # 640..767; its band starts at key 640 - 193 + 1 = 448 (block 7) and ends at 767.
    s = W.kernel_key_stretches(5, 1024, 1024, causal=True, window=193, sink_tokens=4,
                               block_m=128, block_n=64)
    assert [x.name for x in s] == list(W.STRETCH_NAMES)
    assert [(x.start, x.end, x.masked) for x in s] == [
        (0, 64, True),  # the sink block
        (448, 576, True),  # blocks 7, 8: some queries' windows start inside them
        (576, 640, False),  # block 9: keys 576..639, seen by queries 640..767 (767 - 193 + 1
                            # = 575) and all before the first query: no mask
        (640, 768, True),  # blocks 10, 11: the diagonal
    ]


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(pid_m=0, nq=10, nk=5), "nq must be <= nk"),
    (dict(pid_m=4, nq=64, nk=64, block_m=16), "pid_m must be 0..3"),
    (dict(pid_m=0, nq=8, nk=8, window=0), "window"),
    (dict(pid_m=0, nq=8, nk=8, sink_tokens=-1), "sink_tokens"),
    (dict(pid_m=0, nq=8, nk=8, block_n=0), "block_n"),
])
def test_bad_input_raises_value_error_naming_the_argument(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        W.kernel_key_stretches(**kwargs)


# ------------------------------------------------------------------ the widget

def counts(n, **opts):
    return sum(W.kernel_tile_counts(n, n, **opts))


def test_explorer_starts_at_the_notebooks_setting():
    w = W.tile_map_explorer()
    assert set(w.controls) == {"n", "block", "window", "sinks", "causal"}
    assert w.values == dict(n=1024, block=64, window=256, sinks=4, causal=True)
    codes = W.kernel_tile_plan(1024, 1024, causal=True, window=256, sink_tokens=4)
    computed = int((codes != P.TILE_SKIPPED).sum())
    assert "grid axis 0 = cdiv(1024, 64) = 16 programs" in w.readout
    assert f"{computed:,} of 256 tiles computed" in w.readout
    causal = counts(1024, causal=True)
    assert f"causal alone would compute {causal:,}" in w.readout
    assert f"{computed / 256:.1%} of dense" in w.readout
    assert "last program (pid_m = 15) visits key blocks: sink blocks 0 | window edge 11" \
        in w.readout
    assert "linear in n" in w.readout
    assert "Tiles of one head: 16 programs x 16 key blocks" == w.axes[0].get_title()


def test_moving_the_window_redraws_map_curves_and_readout_in_place():
    w = W.tile_map_explorer()
    image, line = w.artists["map"], w.artists["work"]["lines"]["current settings"]
    w.controls["window"].value = 100
    opts = dict(causal=True, window=100, sink_tokens=4, block_m=64, block_n=64)
    codes = W.kernel_tile_plan(1024, 1024, **opts)
    assert w.artists["map"] is image
    np.testing.assert_array_equal(image.get_array(), codes)
    assert f"{int((codes != 0).sum()):,} of 256 tiles computed" in w.readout
    assert "window W = 100, 4 sink tokens" in w.readout
    assert w.artists["work"]["lines"]["current settings"] is line
    np.testing.assert_array_equal(line.get_xdata(), [256, 512, 1024, 2048, 4096])
    np.testing.assert_array_equal(line.get_ydata(),
                                  [counts(n, **opts) for n in (256, 512, 1024, 2048, 4096)])
    assert list(w.artists["work"]["markers"]["current settings"].get_data()[1]) == \
        [counts(1024, **opts)]
    assert w.data["codes"] is not None and w.data["options"]["window"] == 100


def test_window_zero_means_no_window_and_causal_switches_off():
    w = W.tile_map_explorer()
    w.controls["window"].value = 0
    assert "no window (sink tokens only count with a window)" in w.readout
    assert "136 of 256 tiles computed (16 with the mask, 120 without), 120 skipped" \
        in w.readout
    np.testing.assert_array_equal(w.artists["map"].get_array(),
                                  W.kernel_tile_plan(1024, 1024, causal=True))
    w.controls["causal"].value = False
    assert "256 of 256 tiles computed (0 with the mask, 256 without), 0 skipped" in w.readout
    assert (w.artists["map"].get_array() == P.TILE_FULL).all()
    dense = w.artists["work"]["lines"]["no mask (dense)"].get_ydata()
    np.testing.assert_array_equal(w.artists["work"]["lines"]["current settings"].get_ydata(),
                                  dense)
    w.controls["window"].value = 300  # a window alone still sees every later key
    assert "still lets every query see all later keys" in w.readout


def test_block_and_n_change_the_grid_and_an_off_grid_n_joins_the_curves():
    w = W.tile_map_explorer()
    w.controls["block"].value = 32
    w.controls["n"].value = 1000  # not a multiple of 32: a ragged last block
    assert "cdiv(1000, 32) = 32 programs per (batch x head), 32 key blocks (the last block " \
           "holds 8)" in w.readout
    assert w.artists["map"].get_array().shape == (32, 32)
    assert w.artists["map"].get_extent() == [-0.5, 31.5, 31.5, -0.5]
    opts = dict(causal=True, window=256, sink_tokens=4, block_m=32, block_n=32)
    line = w.artists["work"]["lines"]["current settings"]
    np.testing.assert_array_equal(line.get_xdata(), [256, 512, 1000, 1024, 2048, 4096])
    assert list(w.artists["work"]["markers"]["current settings"].get_data()[0]) == [1000]
    assert list(w.artists["work"]["cursor"].get_xdata()) == [1000, 1000]
    ratio = counts(2000, **opts) / counts(1000, **opts)
    assert f"current settings x{ratio:.2f}" in w.readout


def test_windowed_work_doubles_with_n_while_causal_work_quadruples():
    w = W.tile_map_explorer()
    w.controls["block"].value = 16
    w.controls["window"].value = 64
    w.controls["n"].value = 4096
    opts = dict(causal=True, window=64, sink_tokens=4, block_m=16, block_n=16)
    ratio = counts(8192, **opts) / counts(4096, **opts)
    assert 1.95 < ratio < 2.05
    assert f"current settings x{ratio:.2f}" in w.readout
    assert "causal x3.99" in w.readout and "dense x4.00" in w.readout
    y = w.artists["work"]["lines"]["current settings"].get_ydata()
    np.testing.assert_allclose(y[-1] / y[-2], 2.0, rtol=0.02)  # slope 1 on the log-log plot


def test_sinks_add_sink_blocks_to_every_program_past_the_window():
    w = W.tile_map_explorer()
    w.controls["sinks"].value = 100  # keys 0..99: key blocks 0 and 1 (BLOCK_N = 64)
    codes = w.artists["map"].get_array()
    assert (codes[8:, :2] == P.TILE_MASKED).all()  # late programs visit both sink blocks
    assert "sink blocks 0..1" in w.readout


def test_ui_holds_the_controls_the_canvas_area_and_the_readout():
    w = W.tile_map_explorer()
    ui = w.ui
    assert len(ui.children) == 3
    assert ui.children[0].layout.flex_flow == "row wrap"
    assert list(ui.children[0].children) == list(w.controls.values())
    assert w.readout in ui.children[2].value.replace("&gt;", ">").replace("&lt;", "<")


def test_explorer_rejects_a_block_off_the_slider():
    with pytest.raises(ValueError, match="block must be one of"):
        W.tile_map_explorer(block=48)
