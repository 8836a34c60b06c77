"""lessonlib.widgets.kv_cache, driven headlessly: move a slider, read the readout and the plot."""
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.layout_engine import ConstrainedLayoutEngine

from lessonlib.models.configs import load_config
from lessonlib.kv_cache import GIB, gqa_head_map, kv_bytes_per_token, kv_cache_bytes
from lessonlib.plots import kv_cache as plots
from lessonlib.widgets import kv_cache as kvw

LLAMA = load_config("Llama-3.1-8B")
LENGTHS = list(kvw.DEFAULT_LENGTHS)


def gib(cfg, n):
    return kv_cache_bytes(cfg, n, engine="ideal").total_bytes / GIB


@pytest.fixture
def w():
    explorer = kvw.kv_cache_explorer(LLAMA, mla_config="DeepSeek-V3")
    yield explorer
    plt.close(explorer.fig)


def test_initial_readout_is_example_6(w):
    text = w.readout
    assert f"{kv_bytes_per_token(LLAMA):,} bytes/token (128 KiB)" in text
    assert "h_kv = 8 KV heads (GQA, 4 query heads share each)" in text
    assert f"at n = 32,768 tokens: {gib(LLAMA, 32768):.2f} GiB" in text
    assert f"MHA {gib(kvw.with_kv_heads(LLAMA, 32), 32768):.2f} GiB" in text      # 16.00
    assert f"MQA {gib(kvw.with_kv_heads(LLAMA, 1), 32768):.2f} GiB" in text       # 0.50
    assert f"DeepSeek-V3 MLA {gib(load_config('DeepSeek-V3'), 32768):.2f} GiB" in text
    assert "0-3 -> 0, 4-7 -> 1" in text and "28-31 -> 7" in text


def test_kv_heads_slider_redraws_curve_head_map_and_readout(w):
    line = w.artists["sizes"]["lines"]["h_kv from the slider"]
    cells = w.artists["map"]["cells"]
    before = w.readout
    w.controls["kv_heads"].value = 2
    variant = kvw.with_kv_heads(LLAMA, 2)
    assert w.artists["sizes"]["lines"]["h_kv from the slider"] is line  # updated in place
    np.testing.assert_allclose(line.get_ydata(), [gib(variant, n) for n in LENGTHS])
    assert w.artists["map"]["cells"] is cells  # the same patch, a new path
    grid = plots._cells_filled(cells, plots._head_map_centres(32, 2)).reshape(2, 32)
    np.testing.assert_array_equal(grid.argmax(axis=0), gqa_head_map(32, 2))
    assert w.readout != before
    assert f"{kv_bytes_per_token(variant):,} bytes/token" in w.readout
    assert f"at n = 32,768 tokens: {gib(variant, 32768):.2f} GiB" in w.readout
    assert "query head h reads KV head h // 16: 0-15 -> 0, 16-31 -> 1" in w.readout
    assert w.data["head_map"].tolist() == gqa_head_map(32, 2).tolist()


@pytest.mark.parametrize("kv_heads, kind", [(32, "MHA"), (1, "MQA"), (4, "GQA")])
def test_kind_names(w, kv_heads, kind):
    w.controls["kv_heads"].value = kv_heads
    assert f"({kind}," in w.readout


def test_context_slider_moves_markers_and_readout(w):
    w.controls["n"].value = 131072
    marker = w.artists["sizes"]["markers"]["MHA (32 KV heads)"]
    assert marker.get_xydata().tolist() == [[131072, gib(kvw.with_kv_heads(LLAMA, 32), 131072)]]
    assert list(w.artists["sizes"]["cursor"].get_xdata()) == [131072, 131072]
    assert f"at n = 131,072 tokens: {gib(LLAMA, 131072):.2f} GiB" in w.readout  # 16.00 GiB
    assert w.data["total_bytes"] == kv_cache_bytes(LLAMA, 131072, engine="ideal").total_bytes


def test_layout_is_frozen_and_the_widget_displays(w):
    assert not isinstance(w.fig.get_layout_engine(), ConstrainedLayoutEngine)
    assert w.ui.children[0].children[0] is w.controls["n"]
    w.fig.canvas.draw()


def test_bad_arguments():
    with pytest.raises(ValueError, match="MLA"):
        kvw.kv_cache_explorer("DeepSeek-V3", mla_config="DeepSeek-V3")
    with pytest.raises(ValueError, match="kv_heads"):
        kvw.kv_cache_explorer(LLAMA, mla_config="DeepSeek-V3", kv_heads=3)
    with pytest.raises(ValueError, match="n must be"):
        kvw.kv_cache_explorer(LLAMA, mla_config="DeepSeek-V3", n=1000)


def test_helpers():
    assert kvw.kv_head_options(32) == [1, 2, 4, 8, 16, 32]
    assert kvw.head_map_text(gqa_head_map(8, 8)) == "0 -> 0, 1 -> 1, 2 -> 2, ..., 7 -> 7"


# ------------------------------------------------------------------ bad inputs
# A factory's arguments fail before any figure is drawn, naming the argument (tests/_bad.py).
from _bad import Case, bad_input_tests, ints  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_CONFIGS = st.sampled_from(["Llama-9", 3, None, ["Llama-3.1-8B"]])
BAD_INPUTS = [
    Case(kvw.kv_head_options, args=(32,), bad=dict(n_heads=ints(minimum=1))),
    Case(kvw.with_kv_heads, args=(LLAMA, 8), bad=dict(config=_CONFIGS, kv_heads=ints(minimum=1))),
    Case(kvw.head_map_text, args=(np.array([0, 0, 1, 1]),),
         bad=dict(head_map=st.sampled_from([np.array([0.5, 1.0]), [], [-1, 0], "0011", None]),
                  show=ints(minimum=1))),
    Case(kvw.kv_cache_explorer, args=("Llama-3.1-8B",),
         kwargs=dict(mla_config="DeepSeek-V3", n=4096, lengths=(2048, 4096)),
         bad=dict(config=_CONFIGS, mla_config=_CONFIGS, n=ints(minimum=1) | st.just(8192),
                  kv_heads=ints(minimum=1, none_ok=True) | st.just(3),
                  dtype_bytes=ints(minimum=1), lengths=st.sampled_from([(), (4096.0,), None]))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


def test_the_legend_stays_off_every_curve_marker_and_cursor(w):
    """The key is drawn once (pinned to the figure), above every curve: no setting of either
    slider puts a line, a marker or the cursor under it."""
    assert len(w.fig.legends) == 1 and w.axes[0].get_legend() is None
    legend = w.fig.legends[0]
    sizes = w.artists["sizes"]
    for kv_heads in (32, 8, 1):
        for n in (LENGTHS[0], LENGTHS[len(LENGTHS) // 2], LENGTHS[-1]):
            w.controls["kv_heads"].value, w.controls["n"].value = kv_heads, n
            w.fig.canvas.draw()
            artists = [*sizes["lines"].values(), *sizes["markers"].values(), sizes["cursor"]]
            assert plots._legend_clear_of_data(legend, artists), (kv_heads, n)
    # the cursor drops from the highest marker (MHA) to the x axis
    top = sizes["markers"]["MHA (32 KV heads)"].get_ydata()[0]
    assert list(sizes["cursor"].get_ydata()) == [w.axes[0].get_ylim()[0], top]


def test_the_figure_fits_a_laptop_and_the_steps_keep_the_axes(w):
    width, height = w.fig.get_size_inches() * w.fig.dpi
    assert width <= 930 and w.smallest_text_px() >= 8 * w.fig.dpi / 72 - 1e-9
    for ax in w.axes:
        tight = ax.get_tightbbox(w.fig.canvas.get_renderer())
        assert tight.x0 >= 0 and tight.x1 <= width and tight.y0 >= 0 and tight.y1 <= height
    limits = [(ax.get_xlim(), ax.get_ylim()) for ax in w.axes]
    w.controls["kv_heads"].value = 1
    w.controls["n"].value = LENGTHS[-1]
    assert [(ax.get_xlim(), ax.get_ylim()) for ax in w.axes] == limits  # blitted steps only


# ------------------------------------------------------------------ your own model
import datetime  # noqa: E402
import json  # noqa: E402

from lessonlib import inspect_model as im  # noqa: E402
from lessonlib.models import weights as wt  # noqa: E402


@pytest.fixture
def budget():
    return kvw.model_budget_explorer("Llama-3.1-8B")


def test_budget_readout_and_curves_are_the_reports():
    budget = kvw.model_budget_explorer("Qwen2.5-7B-Instruct")
    qwen = load_config("Qwen2.5-7B-Instruct")
    w_bytes = wt.weight_bytes(qwen).bytes
    rep = im.report(qwen, [32768], kv_types=["f16"], gpu_memory=24 * GIB, weights_bytes=w_bytes)
    assert budget.data["report"]["caches"] == rep["caches"]
    assert budget.data["report"]["budget"]["engines"] == rep["budget"]["engines"]
    expected = [kv_cache_bytes(qwen, x, engine="ideal").total_bytes / GIB
                for x in kvw.BUDGET_LENGTHS]
    np.testing.assert_allclose(budget.artists["sizes"]["lines"]["exact tokens"].get_ydata(),
                               expected)
    room = budget.artists["sizes"]["hlines"][kvw._ROOM].get_ydata()[0]
    assert room == pytest.approx((24 * GIB - w_bytes) / GIB)
    vllm = rep["budget"]["engines"][1]
    assert f"{vllm['sequences']['32768']:>14,}  {vllm['max_tokens']:>11,} tokens" in budget.readout
    assert all(len(line) <= kvw.READOUT_WIDTH for line in budget.readout.splitlines())


@pytest.mark.parametrize("model", kvw._budget_models())
def test_each_curve_crosses_its_room_line_where_the_readout_says_the_longest_sequence_ends(model):
    """The figure and the readout tell one story, at every slider extreme (both GPUs at the
    ends of the slider and one between, every cache type): an engine's curve is at or under its
    room line up to the readout's longest sequence and above it past that (llama.cpp's curve
    includes the compute buffer the budget sets aside; vLLM's, the padding layers and the null
    block). GiB here are bytes / 2^30, exact in a float, so the comparison is exact."""
    budget = kvw.model_budget_explorer(model)
    rooms = {"llama.cpp": kvw._ROOM, "vllm": kvw._ROOM_VLLM, "ideal": kvw._ROOM}
    for gpu_gib in (kvw.GPU_GIB[0], 24, kvw.GPU_GIB[-1]):
        budget.controls["gpu_gib"].value = gpu_gib
        for kv_type in kvw.BUDGET_KV_TYPES:
            budget.controls["kv_type"].value = kv_type
            for n in (kvw.BUDGET_LENGTHS[0], kvw.BUDGET_LENGTHS[-1]):
                budget.controls["n"].value = n
                engines = budget.data["report"]["budget"]["engines"]
                assert {e["kv_type"] for e in engines} == {kv_type}
                for e in engines:
                    line = budget.artists["sizes"]["lines"][kvw._ENGINE_LABELS[e["engine"]]]
                    room = budget.artists["sizes"]["hlines"][rooms[e["engine"]]].get_ydata()[0]
                    longest = e["max_tokens"] if e["max_tokens"] is not None else float("inf")
                    if np.isnan(room):  # the weights leave no room: nothing fits
                        assert longest == 0 and e["sequences"][str(n)] == 0
                        continue
                    for x, y in zip(kvw.BUDGET_LENGTHS, line.get_ydata()):
                        assert (y <= room) == (x <= longest), (gpu_gib, kv_type, e["engine"], x)
                    assert (e["sequences"][str(n)] >= 1) == (n <= longest)


def test_budget_types_gpus_and_n_move_lines_not_axes():
    budget = kvw.model_budget_explorer("Qwen2.5-7B-Instruct")
    limits = budget.axes[0].get_ylim()
    budget.controls["kv_type"].value = "fp8"  # llama.cpp has no fp8 cache: its curve is a gap
    assert np.isnan(budget.artists["sizes"]["lines"][kvw._ENGINE_LABELS["llama.cpp"]]
                    .get_ydata()).all()
    assert [r["engine"] for r in budget.data["report"]["caches"]] == ["vllm", "ideal"]
    budget.controls["kv_type"].value = "q8_0"
    assert np.isnan(budget.artists["sizes"]["lines"]["vLLM (blocks of 16)"].get_ydata()).all()
    for gpu in (kvw.GPU_GIB[0], kvw.GPU_GIB[-1]):
        budget.controls["gpu_gib"].value = gpu
    budget.controls["n"].value = kvw.BUDGET_LENGTHS[-1]
    assert budget.axes[0].get_ylim() == limits
    budget.controls["gpu_gib"].value = 8  # 8 GiB < Qwen's 14 GiB of weights: no room line
    assert np.isnan(budget.artists["sizes"]["hlines"][kvw._ROOM].get_ydata()).all()
    assert all(e["sequences"][str(kvw.BUDGET_LENGTHS[-1])] == 0
               for e in budget.data["report"]["budget"]["engines"])


def test_budget_pasted_and_uploaded_configs(budget):
    assert budget.controls["pasted"].disabled and budget.controls["upload"].disabled
    assert budget.controls["pasted"].layout.display == "none"  # shown for your own config only
    budget.controls["model"].value = kvw.YOUR_CONFIG
    assert not budget.controls["pasted"].disabled and budget.controls["pasted"].layout.display is None
    assert budget.readout.startswith("cannot read it: config.json is empty")
    assert np.isnan(budget.artists["sizes"]["lines"][kvw._ENGINE_LABELS["llama.cpp"]]
                    .get_ydata()).all()
    budget.controls["pasted"].value = '{"num_hidden_layers": 32,\n "x": }'
    assert "not valid JSON (line 2, column 7" in budget.readout
    budget.controls["pasted"].value = json.dumps(load_config("gpt-oss-20b"))
    assert budget.readout.startswith("config.json (24 layers, 8 KV heads of 64): weights 12.82 GiB")
    assert budget.data["report"]["layers"]["window"] == 128
    cfg = load_config("Mistral-7B")
    budget.controls["upload"].value = ({"name": "mistral.json", "type": "application/json",
                                        "size": 1, "content": memoryview(json.dumps(cfg).encode()),
                                        "last_modified": datetime.datetime.now(datetime.timezone.utc)},)
    assert budget.readout.startswith("mistral.json (32 layers")  # the upload wins over the paste
    assert "llama.cpp runs every layer of a mistral model global" in " ".join(
        budget.readout.split())
    cfg["model_type"] = "mixtral_like"
    budget.controls["pasted"].value = json.dumps(cfg)
    budget.controls["upload"].value = ()
    assert "weights not counted" in budget.readout and "any length" in budget.readout
    cfg["num_key_value_heads"] = 3
    budget.controls["pasted"].value = json.dumps(cfg)
    assert budget.readout.startswith("cannot read it:") and "num_key_value_heads" in budget.readout


def test_budget_legend_under_the_axes_and_fit(budget):
    width, height = budget.fig.get_size_inches() * budget.fig.dpi
    assert width <= 930 and budget.smallest_text_px() >= 8 * budget.fig.dpi / 72 - 1e-9
    assert budget.axes[0].get_legend() is None and len(budget.fig.legends) == 1  # drawn once
    legend = budget.fig.legends[0]
    sizes = budget.artists["sizes"]
    for model in ("DeepSeek-V3", "Gemma-3-27B", "Llama-3.2-1B"):
        budget.controls["model"].value = model
        for n in (kvw.BUDGET_LENGTHS[0], kvw.BUDGET_LENGTHS[-1]):
            budget.controls["n"].value = n
            budget.fig.canvas.draw()
            artists = [*sizes["lines"].values(), *sizes["markers"].values(), sizes["cursor"],
                       *sizes["hlines"].values()]
            assert plots._legend_clear_of_data(legend, artists), (model, n)
            tight = budget.axes[0].get_tightbbox(budget.fig.canvas.get_renderer())
            assert tight.x0 >= 0 and tight.x1 <= width and tight.y0 >= 0 and tight.y1 <= height


BAD_INPUTS += [
    Case(kvw.model_budget_explorer, args=("Llama-3.1-8B",), kwargs=dict(n=4096, gpu_gib=24,
                                                                      kv_type="q8_0"),
         bad=dict(model=_CONFIGS | st.just("tiny-gemma3-swa"), n=ints(minimum=1) | st.just(5000),
                  gpu_gib=ints(minimum=1) | st.just(25), kv_type=st.sampled_from(["q8", "F16", 2]),
                  lengths=st.sampled_from([(), (4096.0,), None]))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
