"""lessonlib.widgets.long_context, driven headlessly: cost curves, KV dtype, needle heatmap."""
import matplotlib.pyplot as plt
import numpy as np
import pytest

from lessonlib.models.configs import load_config
from lessonlib.kv_cache import GIB, kv_bytes_per_token, kv_cache_bytes, model_shape
from lessonlib.needles import EdgeHeavyModel, run_needle_grid
from lessonlib.traffic import long_context_cost
from lessonlib.models.weights import weight_bytes
from lessonlib.widgets import long_context as lc

LENGTHS = list(lc.DEFAULT_LENGTHS)
LLAMA = load_config("Llama-3.1-8B")
N_PARAM = weight_bytes(LLAMA).params  # 8,030,261,248: notebook 09's N_param


def cost(n):
    return long_context_cost([n], params=N_PARAM, layers=32, q_dim=4096,
                             kv_bytes_per_token=kv_bytes_per_token(LLAMA))[0]


@pytest.fixture
def w():
    explorer = lc.cost_explorer("Llama-3.1-8B", params=N_PARAM)  # notebook 09's call
    yield explorer
    plt.close(explorer.fig)


def test_initial_readout_is_example_16_at_128k(w):
    c = cost(131072)
    assert f"weights {c.weight_flops / 1e12:,.1f} TFLOP" in w.readout            # 2,105.1
    assert f"attention {c.attention_flops / 1e12:,.1f} TFLOP" in w.readout        # 4,503.6
    assert f"attention is {100 * c.attention_share:.1f}%" in w.readout            # 68.1%
    assert "61,266" not in w.readout  # the crossover never changes: the notebook's text says it
    assert f"Llama-3.1-8B {c.kv_bytes / GIB:.2f} GiB" in w.readout                # 16.00
    gemma = kv_cache_bytes(load_config("Gemma-3-27B"), 131072).total_gib          # 10.61
    assert f"Gemma-3-27B {gemma:.2f} GiB" in w.readout
    assert f"{c.kv_bytes / N_PARAM:.2f} x its weights in 8 bits" in w.readout


def test_flop_curves_are_long_context_cost(w):
    lines = w.artists["flops"]["lines"]
    costs = long_context_cost(LENGTHS, params=N_PARAM, layers=32, q_dim=4096,
                              kv_bytes_per_token=131072)
    np.testing.assert_allclose(lines["weights: 2 N_param n"].get_ydata(),
                               [c.weight_flops / 1e12 for c in costs])
    np.testing.assert_allclose(lines["attention, causal: 2 n² q_dim L"].get_ydata(),
                               [c.attention_flops / 1e12 for c in costs])


def test_context_slider_moves_the_cursor_and_readout(w):
    w.controls["n"].value = 4096
    c = cost(4096)
    assert f"weights {c.weight_flops / 1e12:,.1f} TFLOP" in w.readout              # 65.8
    assert f"attention is {100 * c.attention_share:.1f}%" in w.readout              # 6.3%
    assert list(w.artists["flops"]["cursor"].get_xdata()) == [4096, 4096]
    m = w.artists["flops"]["markers"]["total"].get_xydata()
    np.testing.assert_allclose(m, [[4096, c.total_flops / 1e12]])


def test_dtype_switch_redraws_the_kv_curves(w):
    line = w.artists["kv"]["lines"]["DeepSeek-V3"]
    w.controls["dtype_bytes"].value = 1
    assert w.artists["kv"]["lines"]["DeepSeek-V3"] is line
    ds = load_config("DeepSeek-V3")
    np.testing.assert_allclose(line.get_ydata(), [kv_cache_bytes(ds, n, dtype_bytes=1).total_bytes
                                                  / GIB for n in LENGTHS])
    assert "FP8 (1 B)" in w.readout
    assert f"Llama-3.1-8B {kv_cache_bytes(LLAMA, 131072, dtype_bytes=1).total_gib:.2f} GiB" \
        in w.readout


def test_figure_fits_a_laptop_and_its_smallest_text_is_readable(w):
    """plots.FIGURE_WIDTH, the width of every widget's figure: 920 px at JupyterLab's 100 dpi,
    inside the output area beside the file browser (about 930 px)."""
    from lessonlib.plots import FIGURE_WIDTH
    assert w.fig.get_size_inches()[0] == FIGURE_WIDTH and FIGURE_WIDTH * 100 <= 930
    assert w.smallest_text_px() >= 9 * w.fig.dpi / 72 - 1e-9  # 9 pt


@pytest.mark.parametrize("dtype_bytes", [4, 2, 1])
def test_readout_lines_do_not_wrap(w, dtype_bytes):
    """Three lines of at most 105 characters: unwrapped in JupyterLab's output area (about 108
    monospace characters at 110% of 13 px in 934 px) and in the presenter (about 112 at 18 px in
    1,216 px), so the presenter leaves the figure the height that wrapped lines took."""
    w.controls["dtype_bytes"].value = dtype_bytes
    for n in (4096, 131072):
        w.controls["n"].value = n
        lines = w.readout.splitlines()
        assert len(lines) == 3 and max(map(len, lines)) <= 105, lines
        assert dict((b, label) for label, b in lc._KV_DTYPES)[dtype_bytes] in lines[-1]


def test_kv_buttons_show_their_whole_labels(w):
    assert w.controls["dtype_bytes"].style.button_width == "auto"


def _line_points(line, n=50):
    """Points along a line in display coordinates (a line is straight between its vertices on
    the screen, whatever the axes' scales)."""
    xy = line.get_transform().transform(np.column_stack(line.get_data()).astype(float))
    t = np.linspace(0, 1, n)[:, None]
    return np.concatenate([a + t * (b - a) for a, b in zip(xy[:-1], xy[1:])] or [xy])


@pytest.mark.parametrize("dtype_bytes", [4, 2, 1])
def test_legends_are_off_the_curves_and_the_axes(w, dtype_bytes):
    w.controls["dtype_bytes"].value = dtype_bytes
    renderer = w.fig.canvas.get_renderer()
    legends = w.artists["legends"]
    assert len(legends) == 2 and all(leg in w.fig.legends for leg in legends)
    assert all(ax.get_legend() is None for ax in w.axes)  # redrawn on every step, were they
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in w.axes:
            assert not box.overlaps(ax.get_window_extent(renderer))
            for line in ax.lines:
                if line.get_visible() and len(line.get_xdata()):
                    assert not box.count_contains(_line_points(line)), line.get_label()


def test_the_kv_axis_stays_put_when_the_number_format_changes(w):
    ylim = w.axes[1].get_ylim()
    for b in (4, 1, 2):
        w.controls["dtype_bytes"].value = b
        assert w.axes[1].get_ylim() == ylim
        ys = np.concatenate([ln.get_ydata() for ln in w.artists["kv"]["lines"].values()])
        assert ylim[0] < ys.min() and ys.max() < ylim[1]


def test_the_kv_axis_holds_every_number_format_with_a_margin_of_2_5(w):
    """plots.fit_log_ylim over every format's curves and the weights' level, margin 2.5 both
    ways: the limits notebook 09's committed pictures were drawn with."""
    ylim = w.axes[1].get_ylim()
    ys = [N_PARAM / GIB]  # the weights in 8 bits, the dashed level
    for b in (4, 2, 1):
        w.controls["dtype_bytes"].value = b
        ys += [y for ln in w.artists["kv"]["lines"].values() for y in ln.get_ydata()]
    assert ylim == (min(ys) / 2.5, max(ys) * 2.5)


def test_needle_heatmap_labels_contrast_with_their_cells():
    """Black "miss" on dark red was 2.6:1: every label is now at least WCAG AA's 4.5:1."""
    from lessonlib.plots._style import contrast_ratio

    grid = run_needle_grid(EdgeHeavyModel(), [1000, 4000, 16000], [0, 50, 100], progress=False)
    view = lc.needle_heatmap(grid)
    try:
        image = view.artists["image"]
        for text in view.axes[0].texts:
            i, j = (round(v) for v in text.get_position()[::-1])
            cell = image.cmap(image.norm(grid.found[i, j]))
            assert contrast_ratio(text.get_color(), cell) >= 4.5, (text.get_text(), i, j)
        assert {t.get_color() for t in view.axes[0].texts if t.get_text() == "miss"} == {"white"}
    finally:
        plt.close(view.fig)


def test_needle_heatmap_shows_the_grid_and_its_table():
    grid = run_needle_grid(EdgeHeavyModel(), [1000, 4000, 16000], [0, 50, 100], progress=False)
    view = lc.needle_heatmap(grid)
    try:
        np.testing.assert_array_equal(view.artists["image"].get_array(), grid.found.astype(float))
        assert view.readout == grid.table() and view.controls == {}
        view.fig.canvas.draw()
    finally:
        plt.close(view.fig)


def test_another_models_costs_use_its_own_parameter_count():
    """Not Llama's 8.03e9 for every config: N_param is counted from the config given."""
    from lessonlib.models.weights import weight_bytes
    qwen = load_config("Qwen2.5-7B-Instruct")
    view = lc.cost_explorer("Qwen2.5-7B-Instruct")
    try:
        shape = model_shape(qwen)
        want = long_context_cost(LENGTHS, params=weight_bytes(qwen).params, layers=shape.layers,
                                 q_dim=shape.q_dim, kv_bytes_per_token=kv_bytes_per_token(qwen))
        np.testing.assert_allclose(view.artists["flops"]["lines"]["weights: 2 N_param n"]
                                   .get_ydata(), [c.weight_flops / 1e12 for c in want])
    finally:
        plt.close(view.fig)
    default = lc.cost_explorer("Llama-3.1-8B")  # Llama counted from its config, 8,030,261,248
    try:
        np.testing.assert_allclose(default.artists["flops"]["lines"]["weights: 2 N_param n"]
                                   .get_ydata()[0],
                                   2 * weight_bytes(LLAMA).params * LENGTHS[0] / 1e12)
    finally:
        plt.close(default.fig)


def test_bad_n():
    with pytest.raises(ValueError, match="n must be"):
        lc.cost_explorer("Llama-3.1-8B", n=5000)


# ------------------------------------------------------------------ bad inputs
# A factory's arguments fail before any figure is drawn, naming the argument (tests/_bad.py).
from _bad import Case, bad_input_tests, choices, ints, reals, texts  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_GRID = run_needle_grid(EdgeHeavyModel(), [100, 200], [0, 50, 100], progress=False)
BAD_INPUTS = [
    Case(lc.cost_explorer, args=("Llama-3.1-8B",),
         kwargs=dict(n=4096, lengths=(4096, 8192), models=("Llama-3.1-8B",)),
         bad=dict(config=st.sampled_from(["Llama-9", 3, None, ["Llama-3.1-8B"]]),
                  params=reals(above=0.0).filter(lambda v: v is not None),
                  n=ints(minimum=1) | st.just(2048), dtype_bytes=ints(minimum=1) | st.just(3),
                  engine=choices(["llama.cpp", "vllm", "ideal"]),
                  models=st.sampled_from([(), "Llama-3.1-8B", (3,), ("Llama-9",)]),
                  lengths=st.sampled_from([(), (4096.0,), None]))),
    Case(lc.needle_heatmap, args=(_GRID,),
         bad=dict(grid=st.sampled_from([None, [[1, 0]], np.ones((2, 2))]), title=texts())),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
