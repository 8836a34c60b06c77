"""lessonlib.checks.long_context: the reference solutions pass, typical mistakes get a hint."""
import json
import math
import os

import numpy as np
import pytest
from _support import needs, optional, solutions

from lessonlib.checks import NOT_ATTEMPTED
from lessonlib.checks import long_context as checks
from lessonlib.models.configs import load_config

SOLUTIONS = vars(solutions("09_long_context_cost_and_needles"))
NAMES = ["crossover_tokens", "prompt_cost_ratio", "needle_grid", "needle_found"]
N_PARAM, L, Q = 1_235_814_400, 16, 2048  # the exercises' Llama 3.2 1B shape: 32 query heads x 64
NOTEBOOK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "notebooks", "09_long_context_cost_and_needles.ipynb")


def test_the_exercise_shape_is_llama_3_2_1b_counted_from_its_config():
    """1,235,814,400 parameters, counted here from config.json: the embedding (shared with the
    output layer), per layer q/k/v/o, the SwiGLU MLP's three matrices and two RMSNorms, and the
    final norm."""
    cfg = load_config("Llama-3.2-1B")
    h, hd, layers = cfg["hidden_size"], cfg["head_dim"], cfg["num_hidden_layers"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * cfg["intermediate_size"] + 2 * h
    assert cfg["tie_word_embeddings"] is True  # one vocab x hidden matrix, not two
    count = cfg["vocab_size"] * h + layers * per_layer + h
    assert count == N_PARAM == checks.LLAMA32_1B_PARAMS  # the check's, from weights.weight_bytes
    assert checks.WORKED["params"] == 8_030_261_248  # the 8B's, counted the same way
    assert (layers, q) == (L, Q)
    for name in ("crossover_tokens", "prompt_cost_ratio"):
        assert checks.QUESTIONS[name]["config"] == "Llama-3.2-1B"
        assert checks.QUESTIONS[name]["params"] == N_PARAM


def test_the_notebook_states_the_shape_the_checks_use():
    """The exercise text gives the student N_param, L and q_dim: the same numbers as the checks."""
    with open(NOTEBOOK) as f:
        text = "".join("".join(c["source"]) for c in json.load(f)["cells"]
                       if c["cell_type"] == "markdown")
    exercises = text[text.index("## Exercises"):]
    for fragment in (f"{N_PARAM:,}", f"L = {L}", f"q_\\text{{dim}} = {Q}", "131,072", "4,096"):
        assert fragment in exercises, fragment


def test_the_answers_are_not_the_worked_examples():
    """The notebook works Llama 3.1 8B (crossover 61,266, 94.2x); the exercises' 1B shape gives
    other answers, which the notebook never prints (tests/test_notebooks.py looks)."""
    assert SOLUTIONS["crossover_tokens"] == pytest.approx(N_PARAM / (Q * L))
    assert round(SOLUTIONS["crossover_tokens"]) == 37714
    ratio = ((2 * N_PARAM * 131072 + 2 * 131072 ** 2 * Q * L)
             / (2 * N_PARAM * 4096 + 2 * 4096 ** 2 * Q * L))
    assert SOLUTIONS["prompt_cost_ratio"] == pytest.approx(ratio)
    assert f"{ratio:.1f}" == "129.2"


@pytest.mark.parametrize("answer, hint", [
    (N_PARAM / (2 * Q * L), "causal mask"),
    (N_PARAM / Q, "every one of the 16 layers"),
    (N_PARAM / (512 * L), "every query head"),      # KV dim 8 x 64 instead of q_dim
    (math.sqrt(N_PARAM / (Q * L)), "not a square root"),
    (8_030_261_248 / (4096 * 32), "worked Llama 3.1 8B"),  # the notebook's worked 61,266
    (1e5, "solve for n"),
])
def test_crossover_hints(answer, hint):
    verdict = checks.crossover_tokens(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def total(n, causal=True):
    return 2 * N_PARAM * n + (2 if causal else 4) * n * n * Q * L


@pytest.mark.parametrize("answer, hint", [
    (32, "weights alone"),
    (1024, "attention alone"),
    (total(131072, False) / total(4096, False), "causal mask"),
    (total(4096) / total(131072), "Upside down"),
    (2 * 131072 ** 2 * Q * L / total(4096), "use its total"),
    (94.17, "worked Llama 3.1 8B"),  # the notebook's worked shape
])
def test_prompt_cost_ratio_hints(answer, hint):
    verdict = checks.prompt_cost_ratio(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def _found(count_needle=True, first_inclusive=False, first=64, recent=3000, from_end=False,
           recent_strict=False):
    def found(length, depth):
        at = math.floor(length * (100 - depth if from_end else depth) / 100)
        to_end = length - at + (1 if count_needle else 0)
        near_end = to_end < recent if recent_strict else to_end <= recent
        return near_end or (at <= first if first_inclusive else at < first)
    return found


@pytest.mark.parametrize("answer, hint", [
    (_found(count_needle=False), "The needle is a word too"),          # the off-by-one
    (_found(first_inclusive=True), "indexes 0..63"),
    (_found(recent_strict=True), "<= 3000"),  # once accepted: wrong at exactly 3,000 words
    (_found(first=0), "first 64 words"),
    (_found(recent=0), "last 3,000 words"),
    (_found(from_end=True), "Depth counts from the start"),
    (lambda n, d: True, "At length 4,000, depth 25%"),
    (lambda n, d: "yes", "return True or False"),
    (lambda n, d: 1 / 0, "ZeroDivisionError"),
    (True, "Give a function"),
])
def test_needle_found_hints(answer, hint):
    verdict = checks.needle_found(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_needle_found_tries_a_needle_exactly_3000_words_from_the_end():
    """5,998 words at depth 50: the needle is word 2,999 of 5,999, so 3,000 words run from it
    to the end, and EdgeHeavyModel finds it. (length + 1 - i) < 3000 says it does not."""
    from lessonlib.needles import EdgeHeavyModel, run_needle_grid
    grid = run_needle_grid(EdgeHeavyModel(), [5998], [50], progress=False)
    assert grid.found[0, 0] and RIGHT(5998, 50)
    def strict(n, d):
        at = math.floor(n * d / 100)
        return (n + 1 - at) < 3000 or at < 64

    assert not strict(5998, 50)
    assert checks.needle_found(strict).ok is False


# ------------------------------------------------------------------ answers in every form



torch = optional("torch")
RIGHT = SOLUTIONS["needle_found"]


@pytest.mark.parametrize("wrap", [
    lambda b: int(b),                 # 0/1, e.g. int(at < 64 or ...)
    lambda b: np.bool_(b),
    lambda b: np.array(b),            # a 0-d bool array
    lambda b: np.int64(b),
    lambda b: np.array(int(b)),
], ids=["int", "np.bool_", "0-d bool", "np.int64", "0-d int"])
def test_needle_found_accepts_bools_and_zero_one(wrap):
    assert checks.needle_found(lambda n, d: wrap(RIGHT(n, d))).ok is True


@needs("torch")
def test_needle_found_accepts_a_bool_tensor():
    assert checks.needle_found(lambda n, d: torch.tensor(RIGHT(n, d))).ok is True


@pytest.mark.parametrize("answer, hint", [
    (lambda n, d: 2 * RIGHT(n, d), "return True or False"),     # 2 is not a truth value
    (lambda n, d: float(RIGHT(n, d)), "return True or False"),  # 1.0: a probability?
    (lambda n, d: None if d > 50 else RIGHT(n, d), "returned None"),
    (lambda n, d: str(RIGHT(n, d)), "return True or False"),
])
def test_needle_found_refuses_other_values(answer, hint):
    verdict = checks.needle_found(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_needle_found_stub_is_not_attempted():
    def found(length, depth):
        return None  # your code

    assert checks.needle_found(found).message == NOT_ATTEMPTED


@pytest.mark.parametrize("check", [checks.crossover_tokens, checks.prompt_cost_ratio])
def test_cost_answers_accept_arrays_and_tensors(check):
    ref = SOLUTIONS[check.__name__]
    assert check(np.array(ref)).ok and check(np.float32(ref)).ok and check(complex(ref, 0)).ok
    if torch is not None:
        assert check(torch.tensor(ref)).ok
    assert check(str(ref)).ok is False and check(complex(ref, 1)).ok is False


# ------------------------------------------------------------------ exercise 3: a grid runner

def _runner(index=None, insert=True, contains=True, sep="\n\n", echo_check=True):
    """A needle grid runner with one slip."""
    from lessonlib import needles

    def run_grid(model, lengths, depths):
        found = []
        for n in lengths:
            row = []
            for d in depths:
                words = needles.lesson_filler(n)
                at = (index or (lambda n, d: math.floor(n * d / 100)))(n, d)
                if insert:
                    words.insert(at, needles.DEFAULT_NEEDLE)
                else:
                    words[min(at, n - 1)] = needles.DEFAULT_NEEDLE
                context = " ".join(words)
                answer = model(context + sep + needles.DEFAULT_QUESTION)
                if echo_check and context in answer:
                    raise ValueError("echo")
                row.append(needles.DEFAULT_NEEDLE in answer if contains
                           else answer == needles.DEFAULT_NEEDLE)
            found.append(row)
        return found
    return run_grid


def run_grid_with_equality(model, lengths, depths):  # scores a reply by ==, not by containment
    from lessonlib import needles
    found = []
    for n in lengths:
        row = []
        for d in depths:
            words = needles.lesson_filler(n)
            words.insert(math.floor(n * d / 100), needles.DEFAULT_NEEDLE)
            answer = model(" ".join(words) + "\n\n" + needles.DEFAULT_QUESTION)
            if " ".join(words) in answer:
                raise ValueError("echo")
            row.append(answer == needles.DEFAULT_NEEDLE)
        found.append(row)
    return found


def test_needle_grid_accepts_the_reference_and_the_library():
    from lessonlib.needles import run_needle_grid
    assert checks.needle_grid(SOLUTIONS["run_grid"]).ok is True
    assert checks.needle_grid(_runner()).ok is True
    library = lambda m, n, d: run_needle_grid(m, n, d, progress=False).found  # noqa: E731
    assert checks.needle_grid(library).ok is True
    as_ints = lambda m, n, d: np.asarray(SOLUTIONS["run_grid"](m, n, d), dtype=int)  # noqa: E731
    assert checks.needle_grid(as_ints).ok is True


@pytest.mark.parametrize("answer, hint", [
    (_runner(index=lambda n, d: round(n * d / 100)), "round() moves it"),
    (_runner(index=lambda n, d: math.ceil(n * d / 100)), "not the ceiling"),
    (_runner(index=lambda n, d: int(n * (100 - d) / 100)), "your grid says"),
    (_runner(insert=False), "Insert the needle"),
    (_runner(contains=False), "Score by string match"),
    (run_grid_with_equality, "Score by string match"),
    (_runner(sep="\n"), "a blank line (two newlines)"),
    (_runner(sep=" "), "a blank line (two newlines)"),
    (_runner(echo_check=False), "echoes its prompt"),
    (lambda m, n, d: np.asarray(_runner()(m, n, d)).T, "not the other way round"),
    (lambda m, n, d: [[True] * len(d)] * len(n), "your grid says"),
    (lambda m, n, d: np.ones((len(n), len(d))) * 0.5, "each cell is True or False"),
    (lambda m, n, d: "ok", "return the found matrix"),
    (lambda m, n, d: 1 / 0, "ZeroDivisionError"),
    (42, "Give a function run_grid"),
])
def test_needle_grid_hints(answer, hint):
    verdict = checks.needle_grid(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_needle_grid_asks_the_question():
    """A runner that sends only the context passes an edge-heavy model; the model that answers
    only when asked catches it."""
    from lessonlib import needles

    def no_question(model, lengths, depths):
        out = []
        for n in lengths:
            row = []
            for d in depths:
                words = needles.lesson_filler(n)
                words.insert(math.floor(n * d / 100), needles.DEFAULT_NEEDLE)
                context = " ".join(words)
                answer = model(context)
                if context in answer:
                    raise ValueError("echo")
                row.append(needles.DEFAULT_NEEDLE in answer)
            out.append(row)
        return out

    verdict = checks.needle_grid(no_question)
    assert verdict.ok is False and "Ask the question" in verdict.message, verdict.message


def test_needle_grid_stub_is_not_attempted_and_an_echo_must_be_a_value_error():
    def run_grid(model, lengths, depths):
        return None  # your code

    assert checks.needle_grid(run_grid).message == NOT_ATTEMPTED

    def type_error_on_echo(model, lengths, depths):
        try:
            return SOLUTIONS["run_grid"](model, lengths, depths)
        except ValueError:
            raise TypeError("echo") from None

    verdict = checks.needle_grid(type_error_on_echo)
    assert verdict.ok is False and "raise a ValueError there" in verdict.message


def test_needle_grid_cases_cover_the_edges():
    """Depth 0 and 100, a length x depth / 100 that is not whole, a reach that ends exactly on a
    needle, a sentence-answering, an index-picky and an echoing model."""
    from lessonlib.needles import needle_index
    cases = checks._grid_cases()
    depths = {d for _, _, _, ds in cases for d in ds}
    assert {0, 100} <= depths
    assert any(n * d % 100 for _, _, ns, ds in cases for n in ns for d in ds)
    kinds = {type(m).__name__ for _, m, _, _ in cases}
    assert {"EdgeHeavyModel", "_Sentence", "_EveryKth", "_Echo"} <= kinds
    exact = [m for _, m, ns, ds in cases if type(m).__name__ == "EdgeHeavyModel"
             and any(ns[-1] + 1 - needle_index(ns[-1], d) == m.recent for d in ds)]
    assert exact


def test_a_lookup_table_of_the_checks_cases_fails_the_hidden_test():
    """A function that returns the check's own answers passes the check but not the hidden test
    (scripts/assignments.py: the same check, lengths and depths asked in reverse order)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(NOTEBOOK), "..", "scripts"))
    import assignments
    table = {(type(m).__name__, tuple(n), tuple(d)): t for (_, m, n, d), t in
             zip(checks._grid_cases(), checks._grid_truth())}

    def cheat(model, lengths, depths):
        t = table[(type(model).__name__, tuple(lengths), tuple(depths))]
        if t is None:
            raise ValueError("echo")
        return t

    assert checks.needle_grid(cheat).ok is True
    for f in (cheat, SOLUTIONS["run_grid"]):
        namespace = {"np": np, "f": f}
        exec(assignments.HIDDEN["needle_grid"].format(f="f"), namespace)
        assert checks.needle_grid(namespace["_unseen"]).ok is (f is not cheat)
