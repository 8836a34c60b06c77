"""lessonlib.tinylm_results (numpy only, no torch): the committed result files load, and every
function names a bad argument (a result dict missing a field, a model, variant or length that
is not in it) instead of a KeyError, an empty table or a NaN mean."""
import json

import numpy as np
import pytest
from hypothesis import strategies as st

from lessonlib import tinylm_results as R


def make_extension():
    cells = [{"model": m, "variant": v, "length": n, "accuracy": 0.5, "mean_loss": 1.0,
              "loss_by_position": [1.0] * (n // 32)}
             for m, v in (("base", "plain"), ("base", "yarn"), ("pi2x", "as_trained"))
             for n in (256, 512)]
    return {"trained_length": 256, "loss_bin": 32, "lengths": [256, 512], "cells": cells}


STREAM = {"bin": 64, "cache_tokens": 128,
          "caches": {"window": {"loss_by_position": [1, 1, 3, 3, 5],
                                "answer_acc_by_position": [1.0, None, 0.5, 0.0, None]}}}
SINK_CELL = {"mass_first1": [[0.1, 0.9], [0.5, 0.2]], "mass_first4": [[0.2, 1.0], [0.6, 0.3]],
             "length": 256}
NEEDLES = {"lengths": [256, 512], "depths": [0, 50, 100]}
NEEDLE_CELL = {"model": "base", "variant": "plain", "found_fraction": [[1, 0.5, 1], [0, 0, 1]]}


def test_the_committed_files_load_and_summarise():
    ext = R.load_results("extension")
    assert {R.label(c["model"], c["variant"]) for c in ext["cells"]} >= {"plain RoPE",
                                                                         "PI fine-tune (s = 2)"}
    variants = {(c["model"], c["variant"]) for c in ext["cells"]}
    assert len(R.extension_table(ext, 512)) == len(variants)
    stream = R.load_results("streaming")
    assert set(R.stream_summary(stream, stream["cache_tokens"])) == {"dense", "window", "sinks"}
    needles = R.load_results("needles")
    rows = R.needle_rows(needles, needles["cells"][0])
    assert [r[0] for r in rows] == needles["lengths"]
    assert len(R.sink_heads(R.load_results("sinks")["cells"][0], top=3)) == 3


def test_results_from_a_directory(tmp_path):
    (tmp_path / "sinks.json").write_text(json.dumps({"cells": []}))
    assert R.load_results("sinks", tmp_path) == {"cells": []}
    assert R.load_results("sinks", str(tmp_path)) == {"cells": []}
    with pytest.raises(ValueError, match=r"^directory .* has no needles.json"):
        R.load_results("needles", tmp_path)
    (tmp_path / "streaming.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"^directory .*: streaming.json is not JSON"):
        R.load_results("streaming", tmp_path)


@pytest.mark.parametrize("call, says", [
    (lambda: R.load_results("Extension"), r"^name must be one of 'extension', 'needles'"),
    (lambda: R.extension_cell(make_extension(), "base", "ntk", 256),
     r"^variant 'ntk' is not in extension for model 'base' \(it has 'plain', 'yarn'\)"),
    (lambda: R.extension_cell(make_extension(), "bse", "plain", 256),
     r"^model 'bse' is not in extension \(it has 'base', 'pi2x'\)"),
    (lambda: R.extension_cell(make_extension(), "base", "plain", 1024),
     r"^length 1024 is not in extension for \('base', 'plain'\) \(it has 256, 512\)"),
    (lambda: R.extension_cell(make_extension(), "base", "plain", 256.0),
     r"^length must be an integer, got the float 256.0"),
    (lambda: R.extension_table(make_extension(), 300),  # was an empty table
     r"^length 300 is not in extension \(it has 256, 512\)"),
    (lambda: R.extension_table({"cells": []}, 256), r"^extension.trained_length is missing"),
    (lambda: R.extension_table(dict(make_extension(), loss_bin=0), 256),
     r"^extension.loss_bin must be an integer >= 1"),
    (lambda: R.stream_summary(STREAM, 0), r"^start must be an integer >= 1 and <= 256, got 0"),
    (lambda: R.stream_summary(STREAM, 400), r"^start must be an integer >= 1 and <= 256"),
    (lambda: R.stream_summary({"bin": 64}, 128), r"^streaming.caches is missing"),
    (lambda: R.sink_heads(SINK_CELL, key="mass_first2"),
     r"^key 'mass_first2' is not in the cell \(it has mass_first1, mass_first4\)"),
    (lambda: R.sink_heads(SINK_CELL, top=0), r"^top must be an integer >= 1, got 0"),  # was all
    (lambda: R.needle_rows(NEEDLES, dict(NEEDLE_CELL, found_fraction=[[1, 0, 1]])),
     r"^cell.found_fraction must have one row per length of needles \(2\)"),
    (lambda: R.needle_rows({}, NEEDLE_CELL), r"^needles.lengths is missing"),
    (lambda: R.label("base", None), r"^variant must be a string"),
])
def test_bad_arguments_are_named(call, says):
    with pytest.raises(ValueError, match=says):
        call()


def test_valid_calls_keep_their_values():
    assert R.label("base", "yarn") == "YaRN, s = 8" and R.label("pi2x", "pi") == "pi2x: PI, s = 8"
    assert R.label("base", "new_variant") == "new_variant"  # no label yet: its own name
    assert R.stream_summary(STREAM, 128)["window"] == {"loss": pytest.approx(11 / 3),
                                                       "early_loss": 1.0, "answer_acc": 0.25}
    assert R.sink_heads(SINK_CELL, top=2) == [(0, 1, 0.9), (1, 0, 0.5)]
    assert R.needle_rows(NEEDLES, NEEDLE_CELL)[1] == (512, pytest.approx(1 / 3), [0, 0, 1])
    assert R.extension_table(make_extension(), 256)[0][4] is None


def test_extension_grid_is_every_pair_at_every_length():
    ext = make_extension()
    ext["cells"][3]["accuracy"], ext["cells"][3]["mean_loss"] = 0.25, 2.5  # base yarn 512
    lines = R.extension_grid(ext).splitlines()
    assert lines[0].split()[-2:] == ["256", "512"]
    assert [line[:24].strip() for line in lines[1:]] == ["plain RoPE", "YaRN, s = 8",
                                                         "PI fine-tune (s = 2)"]
    assert lines[2].split()[-6:] == ["0.50", "/", "1.00", "0.25", "/", "2.50"]
    missing = dict(ext, cells=ext["cells"][:-1])  # the fine-tune has no 512 cell
    with pytest.raises(ValueError, match=r"^length 512 is not in extension for \('pi2x'"):
        R.extension_grid(missing)


def test_loss_spans_average_whole_spans_of_bins():
    ext = make_extension()
    cell = R.extension_cell(ext, "base", "plain", 512)
    cell["loss_by_position"] = list(range(16))  # bins of 32 positions: 0, 1, ..., 15
    assert R.loss_spans(ext, "base", "plain", 512) == [(0, 3.5), (256, 11.5)]  # span = L0
    assert R.loss_spans(ext, "base", "plain", 512, span=128) == [
        (0, 1.5), (128, 5.5), (256, 9.5), (384, 13.5)]
    assert R.loss_spans(ext, "base", "plain", 512, span=32)[5] == (160, 5.0)
    with pytest.raises(ValueError, match=r"^span must be a multiple of extension.loss_bin"):
        R.loss_spans(ext, "base", "plain", 512, span=48)
    with pytest.raises(ValueError, match=r"^span must divide the cell's 512 positions"):
        R.loss_spans(ext, "base", "plain", 512, span=192)
    table = R.loss_span_table(ext, 512, span=128).splitlines()
    assert table[0] == "mean loss over each 128 positions of the 512-token documents"
    assert table[1].split()[-4:] == ["0", "128", "256", "384"]
    assert table[2].split()[-4:] == ["1.50", "5.50", "9.50", "13.50"]


def test_the_committed_sweep_in_spans_matches_its_bins():
    ext = R.load_results("extension")
    bins = np.array(R.extension_cell(ext, "base", "plain", 2048)["loss_by_position"])
    spans = R.loss_spans(ext, "base", "plain", 2048)
    assert [a for a, _ in spans] == list(range(0, 2048, 256))
    np.testing.assert_allclose([m for _, m in spans], bins.reshape(8, 8).mean(axis=1))


def test_needle_misses_are_the_cells_below_one():
    cell = dict(NEEDLE_CELL, found_fraction=[[1, 0.5, 1], [0, 1, 0.875]])
    assert R.needle_misses(NEEDLES, cell) == [(256, 50, 0.5), (512, 0, 0.0), (512, 100, 0.875)]
    assert R.needle_misses(NEEDLES, dict(cell, found_fraction=[[1, 1, 1]] * 2)) == []
    with pytest.raises(ValueError, match=r"^cell.found_fraction has 2 columns and needles"):
        R.needle_misses(NEEDLES, dict(cell, found_fraction=[[1, 1], [1, 1]]))


# --------------------------------------------------------------------------- bad inputs
# Every argument of the public functions, fed what a careful user might pass by mistake: each
# must be a ValueError naming the argument (tests/_bad.py; coverage in test_validate.py).
from _bad import DELETE, Case, bad_input_tests, choices, ints, texts  # noqa: E402

_NOT_A_DICT = st.sampled_from([None, [], "extension", 3])
_DELETE = st.just(DELETE)

BAD_INPUTS = [
    Case(R.label, args=("base", "yarn"), bad=dict(model=texts(), variant=texts())),
    Case(R.load_results, args=("sinks",),
         bad=dict(name=choices(R.RESULT_NAMES),
                  directory=st.sampled_from([3, b"dir", ["dir"], "/no/such/directory"]))),
    Case(R.extension_cell, args=(make_extension(), "base", "yarn", 512),
         bad={"extension": _NOT_A_DICT, "extension.cells": _DELETE | st.just({}),
              "model": texts() | st.just("bse"), "variant": texts() | st.just("ntk"),
              "length": ints(minimum=1) | st.just(1024)}),
    Case(R.extension_table, args=(make_extension(), 512),
         bad={"extension": _NOT_A_DICT, "extension.cells": _DELETE | st.just("cells"),
              "extension.trained_length": _DELETE | ints(minimum=1),
              "extension.loss_bin": _DELETE | ints(minimum=1),
              "length": ints(minimum=1) | st.just(300)}),
    Case(R.stream_summary, args=(STREAM, 128),
         bad={"streaming": _NOT_A_DICT, "streaming.bin": _DELETE | ints(minimum=1),
              "streaming.caches": _DELETE | st.just([]),
              "streaming.caches.window.loss_by_position":
                  _DELETE | st.sampled_from([[], [1, np.nan], "loss", [[1, 2]]]),
              "start": ints(minimum=1, maximum=256)},
         names={"streaming.caches.window.loss_by_position": "loss_by_position"}),
    Case(R.sink_heads, args=(SINK_CELL,), kwargs=dict(key="mass_first4", top=2),
         bad={"cell": _NOT_A_DICT, "cell.mass_first4": st.sampled_from([[1.0, 2.0], [[np.inf]]]),
              "key": texts() | st.just("mass_first2"), "top": ints(minimum=1, none_ok=True)},
         names={"cell.mass_first4": "mass_first4"}),
    Case(R.extension_grid, args=(make_extension(),),
         bad={"extension": _NOT_A_DICT, "extension.cells": _DELETE | st.just("cells"),
              "extension.lengths": _DELETE | st.just(256) | st.just([256.0, "512"])}),
    Case(R.loss_spans, args=(make_extension(), "base", "plain", 512), kwargs=dict(span=64),
         bad={"extension": _NOT_A_DICT, "extension.trained_length": _DELETE | ints(minimum=1),
              "extension.loss_bin": _DELETE | ints(minimum=1),
              "model": texts() | st.just("bse"), "variant": texts() | st.just("ntk"),
              "length": ints(minimum=1) | st.just(1024),
              "span": ints(minimum=1, none_ok=True) | st.sampled_from([48, 192, 1024])}),
    Case(R.loss_span_table, args=(make_extension(), 512), kwargs=dict(span=64),
         bad={"extension": _NOT_A_DICT, "extension.cells": _DELETE | st.just({}),
              "length": ints(minimum=1) | st.just(300),
              "span": ints(minimum=1, none_ok=True) | st.sampled_from([48, 192, 1024])}),
    Case(R.needle_misses, args=(NEEDLES, NEEDLE_CELL),
         bad={"needles": _NOT_A_DICT, "needles.depths": _DELETE | st.just([0, 100]),
              "needles.lengths": _DELETE | st.just(256),
              "cell": _NOT_A_DICT,
              "cell.found_fraction": _DELETE | st.sampled_from([[[1, 0, 1]], [0.5], "x"])}),
    Case(R.needle_rows, args=(NEEDLES, NEEDLE_CELL),
         bad={"needles": _NOT_A_DICT, "needles.lengths": _DELETE | st.just(256),
              "cell": _NOT_A_DICT,
              "cell.found_fraction": _DELETE | st.sampled_from([[[1, 0, 1]], [0.5], "x"])}),
]
BAD_INPUTS.append(
    Case(R.retrieval_reach, args=(make_extension(), 0.5),
         bad={"extension": _NOT_A_DICT, "extension.cells": _DELETE | st.just("cells"),
              "threshold": st.sampled_from([-0.1, 1.5, None, "0.5", float("nan"), True])}))
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


def test_retrieval_reach_stops_at_the_first_dip_and_reads_cells_in_any_order():
    """PI, s = 8 dips at 256 (0.86) and recovers (0.98 at 1,024): at 0.9 it reaches nothing.
    A cell exactly on the threshold counts; shuffled cells give the same reach."""
    ext = R.load_results("extension")
    at_09 = R.retrieval_reach(ext, 0.9)
    assert at_09["PI, s = 8"] == 0 and at_09["YaRN, s = 8"] == 2048
    assert at_09["plain RoPE"] == 512 and at_09["PI fine-tune (s = 2)"] == 1024
    assert R.retrieval_reach(ext, 0.984375)["NTK-aware, s = 8"] == 1024  # 63/64 on the line
    shuffled = dict(ext, cells=list(reversed(ext["cells"])))
    for t in (0.0, 0.5, 0.9, 1.0):
        assert R.retrieval_reach(shuffled, t) == R.retrieval_reach(ext, t)
    assert set(R.retrieval_reach(ext, 1.0)) == {R.label(c["model"], c["variant"])
                                                for c in ext["cells"]}
