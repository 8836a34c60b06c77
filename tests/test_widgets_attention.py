"""Drive the notebook 01-03 widgets headlessly: move a control, then the readout and the
plotted data must be what lessonlib computes for the new value."""
import math

import numpy as np
import pytest

from lessonlib.attention import TILE_FULL, TILE_SKIPPED, block_map
from lessonlib.models.configs import load_config
from lessonlib.softmax import online_attention_row, online_attention_trace, sink_share
from lessonlib.traffic import (GIB, long_context_cost, naive_traffic,
                               score_matrix_table, tiled_traffic)
from lessonlib.models.weights import weight_bytes
from lessonlib.widgets import attention as W

LLAMA_PARAMS = weight_bytes(load_config("Llama-3.1-8B")).params  # 8,030,261,248: the default


# ------------------------------------------------------------------ notebook 01

def test_memory_explorer_follows_n_and_heads():
    w = W.memory_explorer("Llama-3.1-8B")
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
    costs = long_context_cost(lengths, params=LLAMA_PARAMS, layers=32, q_dim=64 * 128,
                              kv_bytes_per_token=131072)
    np.testing.assert_allclose(w.artists["flops"]["lines"]["attention (causal)"].get_ydata(),
                               [c.attention_flops / 1e12 for c in costs])
    np.testing.assert_allclose(w.artists["flops"]["lines"]["weights"].get_ydata(),
                               [c.weight_flops / 1e12 for c in costs])  # N_param counted
    np.testing.assert_allclose(w.artists["memory"]["lines"]["KV cache (F16)"].get_ydata(),
                               [c.kv_bytes / GIB for c in costs])  # KV heads unchanged
    assert "4,096.00 GiB" in w.readout and "q_dim = 8,192" in w.readout
    assert w.data["cost"] == costs[-1]


def test_memory_explorer_crossover_is_where_attention_equals_weights():
    w = W.memory_explorer("Llama-3.1-8B")
    text = w.readout.split("n = params / (q_dim x layers) = ")[1]
    n_cross = float(text.replace(",", ""))
    row = long_context_cost([round(n_cross)], params=LLAMA_PARAMS, layers=32, q_dim=4096,
                            kv_bytes_per_token=131072)[0]
    assert row.attention_share == pytest.approx(0.5, abs=1e-4)
    assert "= 61,266" in w.readout  # 8,030,261,248 / (4,096 x 32), notebook 01's readout
    given = W.memory_explorer("Llama-3.1-8B", params=8.03e9)  # a count given is used as it is
    assert "= 61,264" in given.readout


def test_memory_explorer_rejects_a_length_off_the_slider():
    with pytest.raises(ValueError, match="n must be one of"):
        W.memory_explorer("Llama-3.1-8B", n=5000)


# ------------------------------------------------------------------ notebook 02

def test_online_softmax_explorer_steps_through_example_3():
    w = W.online_softmax_explorer()
    x, v = np.array(W.EXAMPLE_SCORES), np.array(W.EXAMPLE_VALUES, dtype=float)
    assert w.values["keys"] == 6 and w.values["sink"] is False
    assert "output acc / l = (1.539397, -0.101451)" in w.readout

    w.controls["keys"].value = 4  # key 3 (x = 5) raises the max from 3 to 5
    last = online_attention_trace(x[:4], v[:4])[-1]
    assert f"m = 5, l = {last.l:.6f}" in w.readout
    assert f"exp(m_old - m_new) = {math.exp(-2):.6f}" in w.readout
    assert w.data["rescale"] == last.rescale  # compute's factor (softmax), not the widget's
    heights = [b.get_height() for b in w.artists["terms"]]
    np.testing.assert_allclose(heights[:4], np.exp(x[:4] - 5.0))
    assert heights[4:] == [0.0, 0.0, 0.0]  # keys 4, 5 unread; no sink
    path = np.column_stack(w.artists["plane"]["path"].get_data())
    expect = [np.asarray(st.acc) / st.l for st in online_attention_trace(x[:4], v[:4])]
    np.testing.assert_allclose(path, expect)

    w.controls["keys"].value = 3  # x = 2, below the max
    assert "the max did not change" in w.readout


def test_online_softmax_explorer_sink():
    w = W.online_softmax_explorer()
    x, v = np.array(W.EXAMPLE_SCORES), np.array(W.EXAMPLE_VALUES, dtype=float)
    w.controls["sink"].value = True
    out = online_attention_row(x, v, sink_logit=4.5)
    share = math.exp(4.5 - 5) / online_attention_trace(x, v, 4.5)[-1].l
    assert f"the sink takes {100 * share:.1f}% of the weight" in w.readout
    assert w.data["sink"]["share"] == sink_share(x, 4.5)  # compute's share, read as it is
    assert f"{out[0]:.6f}" in w.readout
    np.testing.assert_allclose(w.artists["plane"]["sink"].get_data(), [[out[0]], [out[1]]])
    heights = [b.get_height() for b in w.artists["terms"]]
    assert heights[-1] == pytest.approx(math.exp(4.5 - 5.0))
    assert sum(heights) == pytest.approx(online_attention_trace(x, v, 4.5)[-1].l)

    w.controls["sink_logit"].value = 8.0  # the sink becomes the max: every key term shrinks
    heights = [b.get_height() for b in w.artists["terms"]]
    assert heights[-1] == pytest.approx(1.0)
    np.testing.assert_allclose(heights[:6], np.exp(x - 8.0))
    assert "m = 5" in w.readout  # the keys' own state, before the sink
    w.controls["sink"].value = False
    assert "no sink" in w.readout and len(w.artists["plane"]["sink"].get_data()[0]) == 0


def test_sink_logit_is_disabled_while_the_sink_is_off():
    """A slider that would change nothing is disabled (the browser tests press every enabled
    slider and expect the figure to change); ticking the box enables it."""
    w = W.online_softmax_explorer()
    assert w.values["sink"] is False and w.controls["sink_logit"].disabled
    assert not w.controls["keys"].disabled
    w.controls["sink"].value = True
    assert not w.controls["sink_logit"].disabled
    before = w.readout
    w.controls["sink_logit"].value = 6.0
    assert w.readout != before  # the sink is now the max: l is rescaled to it, then e^0 added
    assert "sink z = 6: m = 6, l = 1.582426 e^-1 + e^0 = 1.582142" in w.readout
    w.controls["sink"].value = False
    assert w.controls["sink_logit"].disabled


def test_softmax_readout_keeps_four_lines():
    """The readout's height never changes (the presenter fits the figure into what it leaves)."""
    w = W.online_softmax_explorer()
    heights = set()
    for sink in (False, True):
        w.controls["sink"].value = sink
        for keys in range(1, 7):
            w.controls["keys"].value = keys
            heights.add(len(w.readout.splitlines()))
    assert heights == {4}


# ------------------------------------------------------------------ notebook 03

def _path_area(path):
    """The area of a compound path of rectangles (_tile_rectangles' outlines, each closed)."""
    v = path.vertices.reshape(-1, 6, 2)
    return float(np.sum(np.abs((v[:, 2, 0] - v[:, 0, 0]) * (v[:, 2, 1] - v[:, 0, 1]))))


def test_tiled_explorer_block_slider():
    w = W.tiled_explorer()
    assert w.values == {"block": 64, "n": 512, "causal": True}
    w.controls["block"].value = 128
    naive = naive_traffic(512, 128).total
    tiled = tiled_traffic(512, 128, 128, causal=True)
    assert f"naive {naive:,}, tiled {tiled.total:,}" in w.readout
    full = tiled_traffic(512, 128, 128)  # the unmasked count, printed beside the causal one
    assert (f"naive / tiled: causal {naive / tiled.total:.2f} (4B/d = 4.00), no mask "
            f"{naive / full.total:.2f} (2B/d = 2.00)") in w.readout
    assert "10 of 16 tiles computed (4 of them need the mask), 6 skipped (37.5%)" in w.readout
    np.testing.assert_array_equal(w.data["codes"], block_map(512, 128, causal=True))
    # each kind of tile is one patch whose area is its tiles' share of the n x n square
    for code, patch in w.artists["map"]["tiles"].items():
        assert _path_area(patch.get_path()) == pytest.approx(
            (w.data["codes"] == code).sum() / 16)
    markers = w.artists["ratio"]["markers"]
    assert list(markers["causal"].get_data()[1]) == [pytest.approx(naive / tiled.total)]
    assert "4 x 4 tiles" in w.axes[0].get_title()


def test_tiled_explorer_small_blocks_lose_and_ceil_shows():
    w = W.tiled_explorer()
    w.controls["causal"].value = False
    w.controls["n"].value = 960
    w.controls["block"].value = 256
    assert "ceil(n / B) = 4 query blocks (the last holds 192 rows) x 4 key blocks" in w.readout
    assert "no mask: 16 of 16 tiles computed" in w.readout and "0 skipped" in w.readout
    # the last block is 192 of 960 tokens: the full tiles cover the whole square
    assert _path_area(w.artists["map"]["tiles"][TILE_FULL].get_path()) == pytest.approx(1.0)
    w.controls["block"].value = 16
    assert "naive / tiled = 0.28 (2B/d = 0.25); tiling moves MORE floats" in w.readout
    lines = w.artists["ratio"]["lines"]
    np.testing.assert_allclose(lines["no mask"].get_ydata(),
                               [naive_traffic(960, 128).total / tiled_traffic(960, 128, b).total
                                for b in (16, 32, 64, 128, 256, 512)])
    np.testing.assert_allclose(lines["2B/d"].get_ydata(), [2 * b / 128
                                                           for b in (16, 32, 64, 128, 256, 512)])
    assert w.data["codes"].shape == (60, 60)


def test_widgets_keep_their_layout_and_limits():
    """Redraws only update data: no layout engine, fixed y limits (cheap, steady frames)."""
    for factory, control, value in [(lambda: W.memory_explorer("Llama-3.1-8B"), "heads", 128),
                                    (W.tiled_explorer, "n", 64)]:
        w = factory()
        assert w.fig.get_layout_engine() is None or \
            type(w.fig.get_layout_engine()).__name__ == "PlaceHolderLayoutEngine"
        limits = [ax.get_ylim() for ax in w.axes]
        w.controls[control].value = value
        if control == "heads":  # the memory explorer
            assert [ax.get_ylim() for ax in w.axes] == limits
        for ax in w.axes:  # every curve still inside the axes
            lo, hi = ax.get_ylim()
            for line in ax.get_lines():
                y = np.asarray(line.get_ydata(), dtype=float)
                y = y[np.isfinite(y) & (y > 0)]
                if y.size and ax.get_yscale() == "log":
                    assert lo <= y.min() and y.max() <= hi


# ------------------------------------------------------------------ what people see
# Each figure fits JupyterLab's output area beside the file browser (about 930 px at 100 dpi)
# unscaled, keeps its smallest type at 9 pt, puts its keys beside or above the data (never on
# it), and prints readout lines that fit a laptop and a projector at every slider setting.

def memory_explorer():
    """Notebook 01's call: the model its cell loaded."""
    return W.memory_explorer("Llama-3.1-8B")


FACTORIES = [memory_explorer, W.online_softmax_explorer, W.tiled_explorer]


def _extremes(w):
    """Every control at each end of its range, one at a time and all together."""
    settings = []
    for name, c in w.controls.items():
        if hasattr(c, "options"):
            ends = [c.options[0], c.options[-1]]
            ends = [e[1] if isinstance(e, tuple) else e for e in ends]
        elif hasattr(c, "min"):
            ends = [c.min, c.max]
        else:
            ends = [False, True]
        settings.append((name, ends))
    return settings


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_figure_fits_the_laptop_and_its_type_stays_readable(factory):
    w = factory()
    width, height = w.fig.get_size_inches()
    assert width * 100 <= 930 and width == W.FIGURE_WIDTH  # 920 px: not scaled on a laptop
    from lessonlib.plots import FIGURE_WIDTH
    assert W.FIGURE_WIDTH is FIGURE_WIDTH  # the one width of every figure, not a copy
    assert height <= 3.8  # the presenter (130 dpi) has ~500 px under controls and readout
    assert w.smallest_text_px() >= 9 * w.fig.dpi / 72 - 1e-9


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_readout_lines_fit_at_every_extreme(factory):
    w = factory()
    for _ in _each_extreme(w):
        longest = max(w.readout.splitlines(), key=len)
        assert len(longest) <= W.READOUT_WIDTH, longest


def _each_extreme(w):
    """Every control at each end of its range (a disabled one stays), one after another."""
    for name, ends in _extremes(w):
        for v in ends:
            if not w.controls[name].disabled:
                w.controls[name].value = v
            yield name, v


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_legends_sit_off_the_data(factory):
    """Every key is a figure legend (drawn once, in the blitted background) outside the
    plotting area of its axes, at every extreme of the controls."""
    w = factory()
    assert all(ax.get_legend() is None for ax in w.fig.axes)
    assert len(w.fig.legends) == 2
    renderer = w.fig.canvas.get_renderer()
    for name, v in _each_extreme(w):
        w.fig.canvas.draw()
        for legend in w.fig.legends:
            box = legend.get_window_extent(renderer)
            for ax in w.fig.axes:
                assert not box.overlaps(ax.get_window_extent(renderer)), (
                    f"{factory.__name__}: a legend on the axes at {name} = {v}")


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_text_contrasts_with_the_background(factory):
    """All the figure's text is on white: WCAG AA asks 4.5:1."""
    from matplotlib.text import Text
    from lessonlib.plots._style import contrast_ratio
    w = factory()
    assert contrast_ratio(w.fig.get_facecolor(), "white") == pytest.approx(1.0)
    for t in w.fig.findobj(Text):
        if t.get_visible() and t.get_text().strip():
            assert contrast_ratio(t.get_color(), "white") >= 4.5, t.get_text()


def test_checkbox_labels_show_in_full():
    """Checkboxes made with lessonlib's checkbox(): no indent, as wide as their label."""
    for w, name in [(W.online_softmax_explorer(), "sink"), (W.tiled_explorer(), "causal")]:
        box = w.controls[name]
        assert box.indent is False and box.layout.width == "auto", name


def test_tile_map_keeps_its_ticks_and_labels_clear():
    """The map's axes run over positions 0..n whatever B and n: its ticks never change, so its
    y label never runs into them (it did at B = 16 or n = 2048), and redraws stay blitted."""
    w = W.tiled_explorer()
    ax = w.axes[0]
    renderer = w.fig.canvas.get_renderer()
    for block, n in [(16, 2048), (512, 64), (16, 64), (128, 1984)]:
        w.controls["block"].value, w.controls["n"].value = block, n
        assert ax.get_xlim() == (0.0, 1.0) and ax.get_ylim() == (1.0, 0.0)
        assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "n"]
        w.fig.canvas.draw()
        label = ax.yaxis.label.get_window_extent(renderer)
        for tick in ax.get_yticklabels():
            assert not label.overlaps(tick.get_window_extent(renderer))


def test_break_even_label_stays_off_the_curves():
    w = W.tiled_explorer()
    ax = w.axes[1]
    label = w.artists["ratio"]["break_even_label"]
    renderer = w.fig.canvas.get_renderer()
    for n in range(64, 2049, 64):
        w.controls["n"].value = n
        w.fig.canvas.draw()
        box = label.get_window_extent(renderer)
        for line in w.artists["ratio"]["lines"].values():
            x, y = (np.asarray(a, dtype=float) for a in line.get_data())
            xs = np.exp(np.linspace(np.log(x[0]), np.log(x[-1]), 400))  # along the log axis
            ys = np.exp(np.interp(np.log(xs), np.log(x), np.log(y)))
            pts = ax.transData.transform(np.column_stack([xs, ys]))
            assert not any(box.contains(px, py) for px, py in pts), (n, line.get_label())


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_a_slider_step_redraws_only_what_changes(factory):
    """After the first moves, a step neither relays out nor rebuilds the background (the
    blitted path: ticks, limits and legends stay), so the Python side of a step stays cheap."""
    w = factory()
    name = next(k for k, c in w.controls.items() if hasattr(c, "min") or hasattr(c, "options"))
    c = w.controls[name]
    values = list(c.options) if hasattr(c, "options") else list(range(c.min, c.max + 1, c.step))
    values = [v[1] if isinstance(v, tuple) else v for v in values][:4]
    for v in values:  # the first moves find which texts change (titles)
        c.value = v
    background = w._background
    for v in reversed(values):
        c.value = v
    assert w._background is background


@pytest.mark.parametrize("factory, name, values", [
    (memory_explorer, "n", [1024, 131072, 8192]),
    (memory_explorer, "heads", [4, 128, 40]),
    (W.online_softmax_explorer, "keys", [1, 3, 6]),
    (W.online_softmax_explorer, "sink", [True, False]),
    (W.tiled_explorer, "block", [16, 512, 128]),
    (W.tiled_explorer, "n", [2048, 64, 300]),
    (W.tiled_explorer, "causal", [False, True]),
], ids=lambda v: getattr(v, "__name__", None))
def test_blitted_frames_equal_full_redraws(factory, name, values):
    """What a slider step draws on the cached background is what a full redraw draws."""
    w = factory()
    frames = [np.asarray(w.fig.canvas.buffer_rgba()).copy()]
    for v in values:
        w.controls[name].value = v
        blitted = np.asarray(w.fig.canvas.buffer_rgba()).copy()
        w.fig.canvas.draw()
        full = np.asarray(w.fig.canvas.buffer_rgba()).copy()
        assert (blitted != full).any(axis=-1).mean() < 0.0005, (name, v)
        frames.append(full)
    # each step changed the figure
    assert all((a != b).any(axis=-1).mean() > 0.0005 for a, b in zip(frames, frames[1:]))


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_ticks_are_fixed_once_laid_out(factory):
    """Axis limits never move in these widgets, so their ticks are kept as first drawn (a
    blitted step does not recompute them): fixed locators, and the labels a full draw shows."""
    from matplotlib.ticker import FixedFormatter, FixedLocator
    w = factory()
    labels = {id(ax): ([t.get_text() for t in ax.get_xticklabels()],
                       [t.get_text() for t in ax.get_yticklabels()]) for ax in w.fig.axes}
    for _ in _each_extreme(w):
        pass
    w.fig.canvas.draw()
    for ax in w.fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            assert isinstance(axis.get_major_locator(), FixedLocator)
            assert isinstance(axis.get_major_formatter(), FixedFormatter)
        assert ([t.get_text() for t in ax.get_xticklabels()],
                [t.get_text() for t in ax.get_yticklabels()]) == labels[id(ax)]


def test_tokens_slider_reaches_the_exercise_lengths():
    """Exercise 2 asks about n = 300 and the notebook says how to type a length, and its snapshot
    shows n = 300: 300 lies on the slider's steps (a typed value off them would snap to the
    nearest step), and the skipped tiles the widget then draws are the ones the exercise's check
    accepts."""
    from lessonlib.checks import attention as checks
    w = W.tiled_explorer()
    c = w.controls["n"]
    for n in (300, 960, 2048, 64):
        assert c.min <= n <= c.max and (n - c.min) % c.step == 0, n
    assert c.step <= 4  # an arrow key moves a few tokens, not a whole block
    w.controls["block"].value = 64
    w.controls["n"].value = 300
    assert "5 query blocks (the last holds 44 rows) x 5 key blocks" in w.readout
    skipped = {(int(i), int(j)) for i, j in zip(*np.nonzero(w.data["codes"] == TILE_SKIPPED))}
    verdict = checks.causal_skipped_blocks(skipped)
    assert verdict.ok is True, verdict


def test_one_block_reads_as_one():
    w = W.tiled_explorer()
    w.controls["block"].value = 512
    w.controls["n"].value = 300
    assert "ceil(n / B) = 1 query block x 1 key block" in w.readout
    assert "the last holds" not in w.readout


# ------------------------------------------------------------------ bad inputs
# A factory's arguments fail before any figure is drawn, naming the argument (tests/_bad.py);
# a slider's starting value off its range is an error, not a value ipywidgets clamps silently.
from _bad import Case, arrays_with, bad_input_tests, flags, ints, reals  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

BAD_INPUTS = [
    Case(W.memory_explorer, args=("Llama-3.1-8B",), kwargs=dict(n=4096, lengths=(2048, 4096)),
         bad=dict(config=st.sampled_from(["Llama-9", 3, None, ["Llama-3.1-8B"]]),
                  params=reals(above=0.0, none_ok=True), n=ints(minimum=1) | st.just(8192),
                  heads=ints(minimum=4, maximum=128, none_ok=True),
                  n_ubatch=ints(minimum=1), lengths=st.sampled_from([(), "4096", (4096.0,),
                                                                     (0, 4096), None])),
         names=dict(lengths="lengths")),
    Case(W.online_softmax_explorer,
         bad=dict(scores=arrays_with(np.array(W.EXAMPLE_SCORES), kind="real") | st.just([]),
                  values=arrays_with(np.array(W.EXAMPLE_VALUES, dtype=float), kind="real")
                  | st.just(np.zeros((6, 3))),
                  sink_logit=reals(minimum=-2.0, maximum=8.0))),
    Case(W.tiled_explorer, kwargs=dict(n=128, blocks=(32, 64), block=64),
         bad=dict(n=ints(minimum=64, maximum=2048), d=ints(minimum=1),
                  block=ints(minimum=1) | st.just(16), causal=flags(),
                  blocks=st.sampled_from([(), (32.0, 64), (0, 64), "64", None]))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
