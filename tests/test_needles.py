"""lessonlib.needles: prompts with the needle at an exact depth, and Example 17's grid."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st

from lessonlib.needles import (DEFAULT_NEEDLE, EdgeHeavyModel, NeedlePrompt, answer_matches,
                               build_needle_prompt, needle_index, run_needle_grid)

LENGTHS, DEPTHS = [1000, 2000, 4000, 8000, 16000], [0, 25, 50, 75, 100]
LESSON_GRID = """\
length   depth:    0   25   50   75  100
  1000            ok   ok   ok   ok   ok   5/5
  2000            ok   ok   ok   ok   ok   5/5
  4000            ok miss   ok   ok   ok   4/5
  8000            ok miss miss   ok   ok   3/5
 16000            ok miss miss miss   ok   2/5"""


def test_example17_grid_reproduced():
    grid = run_needle_grid(EdgeHeavyModel(), LENGTHS, DEPTHS, progress=False)
    # an independent statement of the fake model: needle at a = L * d // 100 of L + 1 words,
    # found when within the last 3,000 words or among the first 64
    expected = np.array([[(n + 1 - n * d // 100 <= 3000) or (n * d // 100 < 64) for d in DEPTHS]
                         for n in LENGTHS])
    np.testing.assert_array_equal(grid.found, expected)
    assert grid.table() == LESSON_GRID
    np.testing.assert_array_equal(grid.lengths, LENGTHS)
    np.testing.assert_array_equal(grid.depths, DEPTHS)
    np.testing.assert_allclose(grid.accuracy_by_length, [1, 1, 0.8, 0.6, 0.4])
    assert grid.accuracy == expected.mean()
    assert grid.answers[2][1] == "I could not find it" and grid.answers[2][0] == DEFAULT_NEEDLE


def test_4000_words_at_25_percent_is_one_word_outside():
    prompt = build_needle_prompt(4000, 25)
    assert len(prompt.tokens) - prompt.needle_index == 3001
    assert EdgeHeavyModel()(prompt.text) != DEFAULT_NEEDLE
    assert EdgeHeavyModel(recent=3001)(prompt.text) == DEFAULT_NEEDLE


@given(st.integers(1, 3000), st.integers(0, 100))
def test_needle_lands_at_the_requested_depth_to_the_token(length, depth):
    prompt = build_needle_prompt(length, depth)
    at = length * depth // 100
    assert prompt.needle_index == at
    assert prompt.tokens[at] == DEFAULT_NEEDLE
    assert len(prompt.tokens) == length + 1
    assert DEFAULT_NEEDLE not in prompt.tokens[:at] + prompt.tokens[at + 1:]
    context, question = prompt.text.rsplit("\n\n", 1)
    words = context.split()
    assert words.index(DEFAULT_NEEDLE) == at and len(words) == length + 1  # in the text too
    assert question == prompt.question


@given(st.integers(1, 5000), st.decimals(0, 100, places=3))
def test_fractional_depths_are_exact(length, depth):
    at = needle_index(length, float(depth))
    assert at == int(Fraction(length) * Fraction(depth) / 100)  # floor of the exact product


class CharTokenizer:
    """Every character a token: placement must be exact in the tokenizer's own units."""

    def encode(self, text):
        return list(text)

    def decode(self, tokens):
        return "".join(tokens)


@given(st.integers(1, 400), st.integers(0, 100))
def test_any_tokenizer_places_the_needle_in_its_own_tokens(length, depth):
    prompt = build_needle_prompt(length, depth, needle="[KEY]", filler="the sky is blue. ",
                                 tokenizer=CharTokenizer())
    at = length * depth // 100
    assert prompt.text.index("[KEY]") == at
    assert len(prompt.tokens) == length + len("[KEY]")
    assert "".join(prompt.tokens[:at]) == ("the sky is blue. " * (length // 17 + 1))[:at]


def test_runner_accepts_any_callable_and_shows_a_progress_bar(capsys):
    seen = []

    def echo(text):
        seen.append(text)
        return f"The code is {DEFAULT_NEEDLE}."

    grid = run_needle_grid(echo, [50, 100], [0, 50, 100], desc="needles")
    assert grid.found.all() and grid.found.shape == (2, 3) and len(seen) == 6
    err = capsys.readouterr().err
    assert "needles" in err and "6/6" in err
    grid = run_needle_grid(lambda text: "no idea", [50], [10, 90], progress=False)
    assert not grid.found.any()
    assert capsys.readouterr().err == ""


def test_runner_can_pass_the_prompt_object():
    def oracle(prompt):
        assert isinstance(prompt, NeedlePrompt)
        return prompt.tokens[prompt.needle_index]
    grid = run_needle_grid(oracle, [10, 20], [0, 33.3, 100], pass_prompt=True, progress=False)
    assert grid.found.all()


def test_string_match_scoring():
    assert answer_matches("It is CODE-4721.", "CODE-4721")
    assert not answer_matches("CODE-4712", "CODE-4721")
    assert not answer_matches(None, "CODE-4721")


def test_bad_arguments():
    with pytest.raises(ValueError, match="depth"):
        build_needle_prompt(100, 101)
    with pytest.raises(ValueError, match="length"):
        build_needle_prompt(0, 50)
    with pytest.raises(ValueError, match="model"):
        run_needle_grid("not a model", [10], [0])
    with pytest.raises(ValueError, match="lengths"):
        run_needle_grid(EdgeHeavyModel(), [], [0])
