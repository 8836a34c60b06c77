"""Drive the notebook 01-03 widgets headlessly: move a control, then the readout and the
plotted data must be what lessonlib computes for the new value."""
import math

import numpy as np
import pytest

from lessonlib.attention import attention_mask, key_blocks
from lessonlib.plots import attention as P
from lessonlib.softmax import online_attention_row, online_attention_trace
from lessonlib.traffic import (GIB, long_context_cost, naive_traffic,
                               score_matrix_table, tiled_traffic)
from lessonlib.widgets import attention as W


# ------------------------------------------------------------------ notebook 01

def test_memory_explorer_follows_n_and_heads():
    w = W.memory_explorer()
    assert set(w.controls) == {"n", "heads"}
    assert w.values == {"n": 32768, "heads": 32}
    assert "128.00 GiB" in w.readout  # notebook 01: 32K tokens, 32 heads
    assert "34.8% of the total" in w.readout  # notebook 09's share at 32K

    w.controls["n"].value = 131072
    row = score_matrix_table([131072], heads=32, layers=32)[0]
    assert f"{row.layer_bytes / GIB:,.2f} GiB" == "2,048.00 GiB"
    assert "2,048.00 GiB" in w.readout and "8.000 GiB" in w.readout  # S and the -ub slice
    assert "16.000 MiB" in w.readout and "16.00 GiB" in w.readout  # decode row, KV cache
    assert "68.1% of the total" in w.readout
    assert list(w.artists["memory"]["markers"]["S, whole prompt"].get_data()[0]) == [131072]

    w.controls["heads"].value = 64
    lengths = [2 ** k for k in range(10, 18)]
    rows = score_matrix_table(lengths, heads=64, layers=32)
    np.testing.assert_allclose(w.artists["memory"]["lines"]["S, whole prompt"].get_ydata(),
                               [r.layer_bytes / GIB for r in rows])
    costs = long_context_cost(lengths, params=8.03e9, layers=32, q_dim=64 * 128,
                              kv_bytes_per_token=131072)
    np.testing.assert_allclose(w.artists["flops"]["lines"]["attention (causal)"].get_ydata(),
                               [c.attention_flops / 1e12 for c in costs])
    np.testing.assert_allclose(w.artists["memory"]["lines"]["KV cache (F16)"].get_ydata(),
                               [c.kv_bytes / GIB for c in costs])  # KV heads unchanged
    assert "4,096.00 GiB" in w.readout and "q_dim = 8,192" in w.readout
    assert w.data["cost"] == costs[-1]


def test_memory_explorer_crossover_is_where_attention_equals_weights():
    w = W.memory_explorer()
    text = w.readout.split("n = params / (q_dim x layers) = ")[1]
    n_cross = float(text.replace(",", ""))
    row = long_context_cost([round(n_cross)], params=8.03e9, layers=32, q_dim=4096,
                            kv_bytes_per_token=131072)[0]
    assert row.attention_share == pytest.approx(0.5, abs=1e-4)


def test_memory_explorer_rejects_a_length_off_the_slider():
    with pytest.raises(ValueError, match="n must be one of"):
        W.memory_explorer(n=5000)


# ------------------------------------------------------------------ notebook 02

def test_online_softmax_explorer_steps_through_example_3():
    w = W.online_softmax_explorer()
    x, v = np.array(W.EXAMPLE_SCORES), np.array(W.EXAMPLE_VALUES, dtype=float)
    assert w.values["keys"] == 6 and w.values["sink"] is False
    assert "output acc / s = (1.539397, -0.101451)" in w.readout

    w.controls["keys"].value = 4  # key 3 (x = 5) raises the max from 3 to 5
    last = online_attention_trace(x[:4], v[:4])[-1]
    assert f"m = 5, s = {last.s:.6f}" in w.readout
    assert f"exp(m_old - m_new) = {math.exp(-2):.6f}" in w.readout
    heights = [b.get_height() for b in w.artists["terms"]]
    np.testing.assert_allclose(heights[:4], np.exp(x[:4] - 5.0))
    assert heights[4:] == [0.0, 0.0, 0.0]  # keys 4, 5 unread; no sink
    path = np.column_stack(w.artists["plane"]["path"].get_data())
    expect = [np.asarray(st.acc) / st.s for st in online_attention_trace(x[:4], v[:4])]
    np.testing.assert_allclose(path, expect)

    w.controls["keys"].value = 3  # x = 2, below the max
    assert "the max did not change" in w.readout


def test_online_softmax_explorer_sink():
    w = W.online_softmax_explorer()
    x, v = np.array(W.EXAMPLE_SCORES), np.array(W.EXAMPLE_VALUES, dtype=float)
    w.controls["sink"].value = True
    out = online_attention_row(x, v, sink_logit=4.5)
    share = math.exp(4.5 - 5) / online_attention_trace(x, v, 4.5)[-1].s
    assert f"the sink takes {100 * share:.1f}% of the weight" in w.readout
    assert f"{out[0]:.6f}" in w.readout
    np.testing.assert_allclose(w.artists["plane"]["sink"].get_data(), [[out[0]], [out[1]]])
    heights = [b.get_height() for b in w.artists["terms"]]
    assert heights[-1] == pytest.approx(math.exp(4.5 - 5.0))
    assert sum(heights) == pytest.approx(online_attention_trace(x, v, 4.5)[-1].s)

    w.controls["sink_logit"].value = 8.0  # the sink becomes the max: every key term shrinks
    heights = [b.get_height() for b in w.artists["terms"]]
    assert heights[-1] == pytest.approx(1.0)
    np.testing.assert_allclose(heights[:6], np.exp(x - 8.0))
    assert "m = 5" in w.readout  # the keys' own state, before the sink
    w.controls["sink"].value = False
    assert "no sink" in w.readout and len(w.artists["plane"]["sink"].get_data()[0]) == 0


# ------------------------------------------------------------------ notebook 03

def test_block_map_agrees_with_the_mask_and_key_blocks():
    for n, b in [(256, 64), (300, 64), (200, 48)]:
        codes = W.block_map(n, b, causal=True)
        t = -(-n // b)
        assert codes.shape == (t, t)
        mask = attention_mask(n, n, causal=True)
        for i in range(t):
            visited = {j0 // b for j0 in key_blocks(i * b, min(i * b + b, n), n, b, causal=True)}
            for j in range(t):
                tile = mask[i * b:(i + 1) * b, j * b:(j + 1) * b]
                expect = (P.BLOCK_SKIPPED if not tile.any()
                          else P.BLOCK_FULL if tile.all() else P.BLOCK_MASKED)
                assert codes[i, j] == expect
                assert (codes[i, j] != P.BLOCK_SKIPPED) == (j in visited)
    assert (W.block_map(256, 64, causal=False) == P.BLOCK_FULL).all()


def test_tiled_explorer_block_slider():
    w = W.tiled_explorer()
    assert w.values == {"block": 64, "n": 512, "causal": True}
    w.controls["block"].value = 128
    naive = naive_traffic(512, 128).total
    tiled = tiled_traffic(512, 128, 128, causal=True)
    assert f"naive {naive:,}, tiled {tiled.total:,}" in w.readout
    assert f"ratio naive / tiled = {naive / tiled.total:.2f}; estimate 2B/d = 2.00" in w.readout
    assert "10 tiles computed (4 of them need the mask), 6 skipped (37.5%)" in w.readout
    image = w.artists["map"]
    np.testing.assert_array_equal(image.get_array(), W.block_map(512, 128, causal=True))
    markers = w.artists["ratio"]["markers"]
    assert list(markers["causal"].get_data()[1]) == [pytest.approx(naive / tiled.total)]
    assert "4 x 4 tiles" in w.axes[0].get_title()


def test_tiled_explorer_small_blocks_lose_and_ceil_shows():
    w = W.tiled_explorer()
    w.controls["causal"].value = False
    w.controls["n"].value = 960
    w.controls["block"].value = 256
    assert "ceil(n / B) = 4 query blocks" in w.readout and "last block holds 192 rows" in w.readout
    assert "0 skipped" in w.readout
    w.controls["block"].value = 16
    assert "tiling moves MORE floats than naive" in w.readout
    lines = w.artists["ratio"]["lines"]
    np.testing.assert_allclose(lines["no mask"].get_ydata(),
                               [naive_traffic(960, 128).total / tiled_traffic(960, 128, b).total
                                for b in (16, 32, 64, 128, 256, 512)])
    np.testing.assert_allclose(lines["2B/d"].get_ydata(), [2 * b / 128
                                                           for b in (16, 32, 64, 128, 256, 512)])
    assert w.data["codes"].shape == (60, 60)


def test_widgets_keep_their_layout_and_limits():
    """Redraws only update data: no layout engine, fixed y limits (cheap, steady frames)."""
    for factory, control, value in [(W.memory_explorer, "heads", 128),
                                    (W.tiled_explorer, "n", 64)]:
        w = factory()
        assert w.fig.get_layout_engine() is None or \
            type(w.fig.get_layout_engine()).__name__ == "PlaceHolderLayoutEngine"
        limits = [ax.get_ylim() for ax in w.axes]
        w.controls[control].value = value
        if factory is W.memory_explorer:
            assert [ax.get_ylim() for ax in w.axes] == limits
        for ax in w.axes:  # every curve still inside the axes
            lo, hi = ax.get_ylim()
            for line in ax.get_lines():
                y = np.asarray(line.get_ydata(), dtype=float)
                y = y[np.isfinite(y) & (y > 0)]
                if y.size and ax.get_yscale() == "log":
                    assert lo <= y.min() and y.max() <= hi


# ------------------------------------------------------------------ bad inputs
# A factory's arguments fail before any figure is drawn, naming the argument (tests/_bad.py);
# a slider's starting value off its range is an error, not a value ipywidgets clamps silently.
from _bad import Case, arrays_with, bad_input_tests, flags, ints, reals  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

BAD_INPUTS = [
    Case(W.memory_explorer, kwargs=dict(n=4096, lengths=(2048, 4096)),
         bad=dict(config=st.sampled_from(["Llama-9", 3, None, ["Llama-3.1-8B"]]),
                  params=reals(above=0.0), n=ints(minimum=1) | st.just(8192),
                  heads=ints(minimum=4, maximum=128, none_ok=True),
                  n_ubatch=ints(minimum=1), lengths=st.sampled_from([(), "4096", (4096.0,),
                                                                     (0, 4096), None])),
         names=dict(lengths="lengths")),
    Case(W.online_softmax_explorer,
         bad=dict(scores=arrays_with(np.array(W.EXAMPLE_SCORES), kind="real") | st.just([]),
                  values=arrays_with(np.array(W.EXAMPLE_VALUES, dtype=float), kind="real")
                  | st.just(np.zeros((6, 3))),
                  sink_logit=reals(minimum=-2.0, maximum=8.0))),
    Case(W.block_map, args=(100, 32), bad=dict(n=ints(minimum=1), block=ints(minimum=1),
                                               causal=flags())),
    Case(W.tiled_explorer, kwargs=dict(n=128, blocks=(32, 64), block=64),
         bad=dict(n=ints(minimum=64, maximum=2048), d=ints(minimum=1),
                  block=ints(minimum=1) | st.just(16), causal=flags(),
                  blocks=st.sampled_from([(), (32.0, 64), (0, 64), "64", None]))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
