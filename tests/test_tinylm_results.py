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
    Case(R.needle_rows, args=(NEEDLES, NEEDLE_CELL),
         bad={"needles": _NOT_A_DICT, "needles.lengths": _DELETE | st.just(256),
              "cell": _NOT_A_DICT,
              "cell.found_fraction": _DELETE | st.sampled_from([[[1, 0, 1]], [0.5], "x"])}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
