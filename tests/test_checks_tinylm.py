"""lessonlib.checks.tinylm: each check accepts the right answer (computed here independently)
and rejects the typical wrong ones with a useful message."""
import os
import re
from fractions import Fraction

import numpy as np
import pytest
from _support import ROOT, optional, solutions

from lessonlib.checks import NOT_ATTEMPTED
from lessonlib.checks import tinylm as C

CHECKS = [C.pi_config, C.uniform_bos_weight, C.streaming_positions, C.sweep_reach,
          C.floor_perplexity, C.export_row]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_stub_says_not_attempted(check):
    v = check(None)
    assert v.ok is None and NOT_ATTEMPTED in repr(v) and "not attempted" in repr(v)


# --------------------------------------------------------------------------- exercise 1

@pytest.mark.parametrize("answer", [{"rope_type": "linear", "factor": 4.0},
                                    {"type": "linear", "factor": 4}])
def test_pi_config_accepts_linear_4(answer):
    assert C.pi_config(answer)


@pytest.mark.parametrize("answer,hint", [
    ({"rope_type": "linear", "factor": 2.0}, "beyond the trained"),
    ({"rope_type": "linear", "factor": 8.0}, "squeezes"),
    ({"rope_type": "linear", "factor": 1.0}, "nothing changes"),
    ({"rope_type": "linear", "factor": 0.25}, "rejects"),
    ({"rope_type": "ntk", "factor": 4.0}, "same factor"),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256}, "same factor"),
    ({"rope_type": "linear"}, "rejects"),
    ("linear", "dict"),
    (4.0, "dict"),
])
def test_pi_config_rejects(answer, hint):
    v = C.pi_config(answer)
    assert v.ok is False and hint in v.message, v


@pytest.mark.parametrize("kind", ["yarn", "llama3", "longrope", "dynamic", "ntk"])
@pytest.mark.parametrize("key", ["rope_type", "type"])
def test_pi_config_names_pi_as_linear_before_the_library_asks_for_other_keys(kind, key):
    """A bare {"rope_type": "yarn", "factor": 4} once got lessonlib.rope's "original_max_
    position_embeddings is required" (a key PI does not need): the hint is that PI is linear."""
    v = C.pi_config({key: kind, "factor": 4.0})
    assert v.ok is False and "same factor" in v.message and "'linear'" in v.message, v
    assert "rejects" not in v.message and "required" not in v.message, v


def test_pi_config_default_rope_is_not_pi():
    v = C.pi_config({"rope_type": "default"})
    assert v.ok is False and "no scaling" in v.message and "'linear'" in v.message, v


# --------------------------------------------------------------------------- exercise 2

def test_uniform_bos_weight_accepts_the_mean_of_one_over_keys_seen():
    total = 0.0
    for p in range(32, 256):  # the query at p sees keys 0..p
        total += 1.0 / len(range(0, p + 1))
    assert C.uniform_bos_weight(total / (256 - 32))
    assert C.uniform_bos_weight(np.float32(total / 224))


def test_the_reference_answer_and_its_comment_are_exact():
    """instructors/solutions/10: the mean of 1/(p + 1) over p = 32..255 is 0.0092225..., and
    the comment beside it rounds that value (it once said 0.0078)."""
    exact = float(sum(Fraction(1, p + 1) for p in range(32, 256)) / 224)
    assert solutions("10_real_model_long_context").uniform_bos_weight == pytest.approx(
        exact, rel=1e-12)
    with open(os.path.join(ROOT, "instructors", "solutions",
                           "10_real_model_long_context.py")) as f:
        comment = re.search(r"^uniform_bos_weight = .*# about (0\.\d+)$", f.read(), re.M)
    digits = len(comment.group(1)) - 2
    assert f"{exact:.{digits}f}" == comment.group(1) and digits >= 4


@pytest.mark.parametrize("answer,hint", [
    (np.mean(1.0 / np.arange(32, 256)), "off by one"),
    (1 / 256, "all 256 keys"),
    (1.0 / (np.mean(np.arange(32, 256)) + 1), "mean of 1/x"),
    (0.5, "not yet"),
    ([0.1, 0.2], "one number"),
])
def test_uniform_bos_weight_rejects(answer, hint):
    v = C.uniform_bos_weight(answer)
    assert v.ok is False and hint in v.message, v


# --------------------------------------------------------------------------- exercise 3

RIGHT_HELD = [0, 1, 2, 3] + list(range(1000 - 251, 1001))


def test_streaming_positions_accepts_sinks_plus_recent_and_slot_255():
    assert len(RIGHT_HELD) == 256
    assert C.streaming_positions((RIGHT_HELD, 255))
    assert C.streaming_positions((np.array(RIGHT_HELD[::-1]), np.int64(255)))


@pytest.mark.parametrize("answer,hint", [
    ((RIGHT_HELD, 1000), "original position"),
    ((RIGHT_HELD, 0), "last slot"),
    ((list(range(1000 - 255, 1001)), 255), "sinks"),
    (([0, 1, 2, 3] + list(range(1000 - 252, 1001)), 255), "off by one"),
    (([0, 1, 2, 3] + list(range(1000 - 250, 1001)), 255), "off by one"),
    (([0, 1, 2, 3] + list(range(500, 1001)), 255), "the latest"),
    (42, "pair"),
    ((RIGHT_HELD, "slot"), "one number"),
])
def test_streaming_positions_rejects(answer, hint):
    v = C.streaming_positions(answer)
    assert v.ok is False and hint in v.message, v


@pytest.mark.parametrize("start", [1000 - 252, 1000 - 250])
def test_streaming_positions_off_by_one_hint_does_not_give_the_answer(start):
    """It once said "the last 252 being 749..1000": the answer itself."""
    v = C.streaming_positions(([0, 1, 2, 3] + list(range(start, 1001)), 255))
    assert v.ok is False and "off by one" in v.message, v
    assert "749" not in v.message and not re.search(r"\.\.\s*1,?000", v.message), v


# --------------------------------------------------------------------------- answers in every form


torch = optional("torch")


@pytest.mark.parametrize("answer", [
    {"rope_type": "linear", "factor": 4.0, "partial_rotary_factor": 1.0},
    {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},  # transformers 5 layout
    {"rope_type": "linear", "factor": np.float32(4.0)},
])
def test_pi_config_accepts_legal_keys_with_the_models_values(answer):
    assert C.pi_config(answer), C.pi_config(answer)


@pytest.mark.parametrize("answer,hint", [
    ({"rope_type": "linear", "factor": 4.0, "partial_rotary_factor": 0.5}, "16 of the head's 32"),
    ({"rope_type": "linear", "factor": 4.0, "partial_rotary_factor": 0.3}, "rejects"),
    ({"rope_type": "linear", "factor": 4.0, "rope_theta": 40000.0}, "keeps the base"),
    ({"rope_scaling": {"rope_type": "linear", "factor": 4.0}}, "dict itself"),
    ({"rope_type": "linear", "factor": "4"}, "rejects"),
    ({"rope_type": "linear", "factor": 4 + 1j}, "rejects"),
])
def test_pi_config_judges_what_it_is_given(answer, hint):
    v = C.pi_config(answer)
    assert v.ok is False and hint in v.message, v


def test_uniform_bos_weight_forms_and_close_digits():
    ref = float(np.mean(1.0 / np.arange(33, 257)))
    assert C.uniform_bos_weight(np.array(ref)) and C.uniform_bos_weight(complex(ref, 0))
    if torch is not None:
        assert C.uniform_bos_weight(torch.tensor(ref))  # float32: within 1e-6
    v = C.uniform_bos_weight(0.0092)  # 0.00922254... typed with two digits
    assert v.ok is False and v.message.startswith("Close:") and "more digits" in v.message
    v = C.uniform_bos_weight(0.009)  # one digit: the off-by-one 0.00934 rounds the same
    assert v.ok is False and "so is a typical slip" in v.message
    assert not C.uniform_bos_weight(0.0093).message.startswith("Close")
    for bad in ("0.0092", 0.0092 + 1j, True):
        v = C.uniform_bos_weight(bad)
        assert v.ok is False and "number" in v.message


def test_streaming_positions_reads_whole_numbers_only():
    assert C.streaming_positions((RIGHT_HELD, 255.0))
    assert C.streaming_positions(iter((np.array(RIGHT_HELD, dtype=float), np.array(255))))
    v = C.streaming_positions((RIGHT_HELD, "255"))
    assert v.ok is False and "without quotes" in v.message
    v = C.streaming_positions((RIGHT_HELD, 254.5))
    assert v.ok is False and "not a whole number" in v.message
    v = C.streaming_positions((RIGHT_HELD[:-1] + [999.5], 255))
    assert v.ok is False and "not a whole number" in v.message


# --------------------------------------------------------------------------- reading the sweep

S10 = vars(solutions("10_real_model_long_context"))


def _reach(stays=True, strict=False, sort=True, first_fail=False, keys="label"):
    """A sweep reader with one slip."""
    from lessonlib import tinylm_results

    def reach(extension, threshold):
        methods = {}
        for c in extension["cells"]:
            methods.setdefault((c["model"], c["variant"]), []).append((c["length"], c["accuracy"]))
        out = {}
        for pair, cells in methods.items():
            if sort:
                cells = sorted(cells)
            ok = [a > threshold if strict else a >= threshold for _, a in cells]
            if not stays:
                r = max([n for (n, _), k in zip(cells, ok) if k], default=0)
            elif first_fail:
                r = next((n for (n, _), k in zip(cells, ok) if not k), 0)
            else:
                r = 0
                for (n, _), k in zip(cells, ok):
                    if not k:
                        break
                    r = n
            out[tinylm_results.label(*pair) if keys == "label" else pair] = r
        return out
    return reach


def reach_anywhere(extension, threshold):  # the longest length at or above, dips ignored
    from lessonlib import tinylm_results
    out = {}
    for c in extension["cells"]:
        key = tinylm_results.label(c["model"], c["variant"])
        out.setdefault(key, 0)
        if c["accuracy"] >= threshold:
            out[key] = max(out[key], c["length"])
    return out


def test_sweep_reach_accepts_the_reference_the_library_and_pairs_as_keys():
    from lessonlib.tinylm_results import retrieval_reach
    assert C.sweep_reach(S10["sweep_reach"]).ok is True
    assert C.sweep_reach(retrieval_reach).ok is True
    assert C.sweep_reach(_reach(keys="pair")).ok is True
    none_for_zero = lambda e, t: {k: (v or None) for k, v in retrieval_reach(e, t).items()}  # noqa: E731
    assert C.sweep_reach(none_for_zero).ok is True


@pytest.mark.parametrize("answer, hint", [
    (reach_anywhere, "Stays means at every length up to it"),
    (_reach(stays=False), "Stays means at every length up to it"),
    (_reach(strict=True), "use >=, not >"),
    (_reach(sort=False), "sort each method's cells by length"),
    (_reach(first_fail=True), "the last length before it"),
    (lambda e, t: {"plain RoPE": 512}, "one entry each"),
    (lambda e, t: [512], "return a dict"),
    (lambda e, t: {"plain RoPE": 0.5}, "plain RoPE"),
    (lambda e, t: 1 / 0, "ZeroDivisionError"),
    (42, "Give a function reach"),
])
def test_sweep_reach_hints(answer, hint):
    verdict = C.sweep_reach(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_sweep_reach_stub_is_not_attempted():
    def reach(extension, threshold):
        return None  # your code

    assert C.sweep_reach(reach).message == NOT_ATTEMPTED


def test_sweep_reach_tries_thresholds_on_the_sweeps_own_accuracies_and_shuffled_sweeps():
    """A threshold exactly on a cell (>= against >), the committed dip (PI, s = 8), made-up
    sweeps whose cells are not in length order."""
    from lessonlib.tinylm_results import load_results
    cases = C._reach_cases()
    committed = load_results("extension")
    assert any(t == 0.984375 for e, t in cases if e == committed)
    made_up = [e for e, _ in cases if e != committed]
    assert len(made_up) >= 6
    assert any([c["length"] for c in e["cells"]] != sorted(c["length"] for c in e["cells"])
               for e in made_up)
    for e, t in cases:
        if e != committed:
            assert t in {c["accuracy"] for c in e["cells"]}


def test_a_lookup_table_of_the_sweep_fails_the_hidden_test():
    """A function that returns the check's own answers passes the check but not the hidden test
    (scripts/assignments.py: every length doubled, the cells reversed)."""
    import json
    import sys
    from lessonlib.tinylm_results import retrieval_reach
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import assignments
    table = {(json.dumps(e, sort_keys=True), t): retrieval_reach(e, t) for e, t in C._reach_cases()}

    def cheat(extension, threshold):
        return table[(json.dumps(extension, sort_keys=True), threshold)]

    assert C.sweep_reach(cheat).ok is True
    for f in (cheat, S10["sweep_reach"]):
        namespace = {"np": np, "f": f}
        exec(assignments.HIDDEN["sweep_reach"].format(f="f"), namespace)
        assert C.sweep_reach(namespace["_unseen"]).ok is (f is not cheat)


# --------------------------------------------------------------------------- going deeper

@pytest.mark.parametrize("answer, hint", [
    (2 ** 1.0547, "not 2 to it"),
    (1.055, "the floor itself"),
    (64, "uniform guess"),
    (4, "equally likely"),
    (2.9, "give more digits"),
])
def test_floor_perplexity_hints(answer, hint):
    verdict = C.floor_perplexity(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_the_entropy_floor_is_the_notebooks_power_iteration():
    from lessonlib import kvtask
    T = kvtask.skip_bigram_table()
    pi = np.full(len(T), 1 / len(T))
    for _ in range(2000):
        pi = pi @ T
    with np.errstate(divide="ignore", invalid="ignore"):
        floor = float(-(pi[:, None] * np.where(T > 0, T * np.log(T), 0.0)).sum())
    assert C.entropy_floor() == pytest.approx(floor, abs=1e-9)
    assert f"{floor:.3f}" == "1.055" and C.floor_perplexity(2.87).ok is True


@pytest.mark.parametrize("answer, hint", [
    (40, "partners take the odd rows"),
    (41, "of which first-half row"),
    (8, "takes the row next to it"),
    (4, "pair's index"),
    (10, "inverse map"),
    (9.5, "whole"),
])
def test_export_row_hints(answer, hint):
    verdict = C.export_row(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


@pytest.mark.skipif(optional("torch") is None,
                    reason="needs torch: lessonlib.tinylm builds the export permutation in torch")
def test_export_row_is_where_the_exports_permutation_puts_it():
    from lessonlib.tinylm import neox_to_adjacent_pairs
    d = C.TRAINED_HEAD_DIM
    rows = neox_to_adjacent_pairs(np.arange(d, dtype=float)[:, None], 1)[:, 0]
    assert int(np.flatnonzero(rows == C.EXPORT_ROW)[0]) == S10["export_row"] == 9
    assert C.export_row(9).ok is True
