"""lessonlib.needles: prompts with the needle at an exact depth, and notebook 09's grid."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st

from lessonlib.needles import (DEFAULT_NEEDLE, EdgeHeavyModel, NeedlePrompt, WordTokenizer,
                               answer_matches, build_needle_prompt, lesson_filler, needle_index,
                               run_needle_grid)

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
    # None is not a miss but a model that did not answer with text (it was scored a miss)
    with pytest.raises(ValueError, match=r"^answer must be a string, got None"):
        answer_matches(None, "CODE-4721")
    with pytest.raises(ValueError, match=r"^needle must not be empty"):
        answer_matches("anything", "")  # "" is in every answer: every cell would be found


def test_bad_arguments():
    with pytest.raises(ValueError, match="depth"):
        build_needle_prompt(100, 101)
    with pytest.raises(ValueError, match="length"):
        build_needle_prompt(0, 50)
    with pytest.raises(ValueError, match="model"):
        run_needle_grid("not a model", [10], [0])
    with pytest.raises(ValueError, match="lengths"):
        run_needle_grid(EdgeHeavyModel(), [], [0])


# --------------------------------------------------------------------------- issue 13 examples

@pytest.mark.parametrize("answer", [None, 4721, b"CODE-4721", ["CODE-4721"], {"text": "x"}])
def test_a_non_string_answer_is_an_error_naming_the_model_and_the_cell(answer):
    """It used to count as a miss: a model that returns None everywhere scored 0%, silently."""
    def model(text):
        return answer

    with pytest.raises(ValueError, match=r"^model model returned .* for the cell length=50, "
                                         r"depth=25; it must return its answer as a str"):
        run_needle_grid(model, [50], [25], progress=False)


def test_a_model_that_raises_is_an_error_naming_the_model_and_the_cell():
    """Issue 31: a model that raised ended the grid in its bare ZeroDivisionError (or a client's
    ConnectionError), saying neither which model nor which cell; now a ValueError names both and
    chains the model's own exception."""
    def flaky(text):
        if len(text.split()) > 60:  # the second length only
            return 1 / 0
        return "CODE-4721"

    with pytest.raises(ValueError) as err:
        run_needle_grid(flaky, [50, 100], [0, 50], progress=False)
    assert str(err.value) == (
        "model flaky raised ZeroDivisionError for the cell length=100, depth=0: division by zero "
        "(the grid stops at the first cell whose call fails; the model's own error and traceback "
        "are chained above)")
    assert isinstance(err.value.__cause__, ZeroDivisionError)

    class Client:
        def __call__(self, prompt):
            raise ConnectionError("llama-server refused the connection")

    with pytest.raises(ValueError, match=r"^model Client raised ConnectionError for the cell "
                                         r"length=20, depth=12.5: llama-server refused") as err:
        run_needle_grid(Client(), [20], [12.5], pass_prompt=True, progress=False)
    assert isinstance(err.value.__cause__, ConnectionError)
    # the stand-in model fed a NeedlePrompt it cannot read: its own ValueError, now with the cell
    with pytest.raises(ValueError, match=r"^model EdgeHeavyModel raised ValueError for the cell "
                                         r"length=20, depth=0: text must be a string"):
        run_needle_grid(EdgeHeavyModel(), [20], [0], pass_prompt=True, progress=False)


def test_a_model_that_echoes_its_prompt_is_an_error_not_100_percent():
    """A HuggingFace text-generation pipeline returns the prompt plus the completion unless
    return_full_text=False: every answer then contains the needle, and the grid scored 100%."""
    def pipeline(text):
        return text + " I do not know."

    with pytest.raises(ValueError) as err:
        run_needle_grid(pipeline, [50, 100], [0, 50], progress=False)
    message = str(err.value)
    assert message.startswith("model pipeline echoes its prompt: its answer for the cell "
                              "length=50, depth=0 contains the whole context")
    assert "return_full_text=False" in message
    with pytest.raises(ValueError, match="echoes its prompt"):  # the context alone, too
        run_needle_grid(lambda text: text.rsplit("\n\n", 1)[0], [50], [50], progress=False)
    grid = run_needle_grid(lambda text: "The code is CODE-4721.", [50], [50], progress=False)
    assert grid.found.all()  # a real answer that quotes the needle is still found


@pytest.mark.parametrize("depth, at", [(np.float32(12.5), 12), (np.float64(33.3), 33),
                                       (np.float32(33.3), 33), (np.int64(50), 50),
                                       (np.array(12.5), 12), (np.array(np.float32(0.5)), 0),
                                       (Fraction(1, 3), 0), (100, 100)])
def test_needle_index_takes_numpy_numbers_and_zero_d_arrays(depth, at):
    assert needle_index(100, depth) == at  # np.float32(12.5) was rejected
    assert needle_index(np.int64(100), 25) == 25


@pytest.mark.parametrize("kwargs, says", [
    (dict(depth=True), r"^depth must be a real number, got True \(a bool\)"),
    (dict(depth="50"), r"^depth must be a real number"),
    (dict(depth=np.nan), r"^depth must be finite"),
    (dict(depth=100.5), r"^depth must be a percentage in \[0, 100\]"),
    (dict(length=10.0), r"^length must be an integer, got the float 10.0"),
    (dict(length=True), r"^length must be an integer"),
])
def test_needle_index_names_a_bad_argument(kwargs, says):
    args = dict(length=100, depth=50) | kwargs
    with pytest.raises(ValueError, match=says):
        needle_index(args["length"], args["depth"])


def test_grid_arguments_are_named():
    model = EdgeHeavyModel()
    for kwargs, says in [
        (dict(depths=[0, True]), r"^depths\[1\] must be a real number"),
        (dict(depths=[0, 101]), r"^depths\[1\] must be a percentage"),
        (dict(depths="50"), r"^depths must be a list of numbers"),
        (dict(depths=[]), r"^depths must name at least one value"),
        (dict(lengths=[10, 2.0]), r"^lengths\[1\] must be an integer"),
        (dict(lengths=[]), r"^lengths must name at least one value"),
        (dict(pass_prompt="no"), r"^pass_prompt must be True or False"),
        (dict(progress=0), r"^progress must be True or False"),
        (dict(needle=""), r"^needle must not be empty"),
        (dict(question=None), r"^question must be a string"),
        (dict(filler=[1, 2, 3]), r"^filler must hold words \(strings\)"),
        (dict(filler=[]), r"^filler must contain at least one token"),
        (dict(tokenizer="words"), r"^tokenizer must have encode\(text\)"),
        (dict(desc=3), r"^desc must be a string"),
    ]:
        args = dict(lengths=[20], depths=[0, 50], progress=False) | kwargs
        with pytest.raises(ValueError, match=says):
            run_needle_grid(model, **args)


def test_word_tokenizer_and_filler_check_their_tokens():
    tok = WordTokenizer()
    assert tok.decode(tok.encode("a b  c")) == "a b c"
    with pytest.raises(ValueError, match=r"^tokens must be words \(strings\), got tokens\[1\] = 2"):
        tok.decode(["a", 2])
    with pytest.raises(ValueError, match=r"^tokens must be a list of words"):
        tok.decode("a b")
    with pytest.raises(ValueError, match=r"^text must be a string"):
        tok.encode(None)
    assert lesson_filler(3, vocab=2) == ["w0", "w1", "w0"] and lesson_filler(0) == []
    with pytest.raises(ValueError, match=r"^vocab must be an integer >= 1"):
        lesson_filler(3, vocab=0)


def test_edge_heavy_model_arguments_are_named():
    for kwargs, says in [(dict(needle="CODE 4721"), r"^needle must be one word"),
                         (dict(first=-1), r"^first must be an integer >= 0"),
                         (dict(recent=2.5), r"^recent must be an integer"),
                         (dict(miss="not CODE-4721"), r"^miss must not contain the needle"),
                         (dict(miss=None), r"^miss must be a string")]:
        with pytest.raises(ValueError, match=says):
            EdgeHeavyModel(**kwargs)
    with pytest.raises(ValueError, match=r"^text must be a string"):
        EdgeHeavyModel()(build_needle_prompt(10, 0))  # the prompt object, not its text


# --------------------------------------------------------------------------- bad inputs
# Every argument of the public functions, fed what a careful user might pass by mistake: each
# must be a ValueError naming the argument (tests/_bad.py; coverage in test_validate.py).
from _bad import Case, bad_input_tests, flags, ints, not_callable, reals, texts  # noqa: E402


class _NoDecode:
    def encode(self, text):
        return text.split()

    decode = "not a method"


def _answering(answer):
    return lambda text: answer


_FILLER = st.one_of(st.sampled_from(["", "   ", b"w1 w2", 7, 2.5, {"w": 1}, [], [3, 4],
                                     ["w1", None], ("w1", b"w2")]), st.just(object()))
_TOKENIZER = st.sampled_from(["words", 3, object(), _NoDecode(), [WordTokenizer()]])
_MODEL = not_callable() | st.sampled_from([
    _answering(None), _answering(4721), _answering(b"CODE-4721"), _answering(["CODE-4721"]),
    lambda text: text, lambda text: text + " CODE-4721", lambda text: text.split("\n\n")[0],
    lambda text: 1 / 0])  # a model that raises
_LENGTHS = st.sampled_from([[], [0], [10.0], [True], "10", 10, [None], [[10]], np.array(10)])
_DEPTHS = st.sampled_from([[], [101], [-1], [True], [np.nan], "50", 50, ["50"], [[0, 50]],
                           [0, 1 + 2j], np.array(50)])
_PROMPT_KW = dict(needle="CODE-4721", question="What is the code?", filler="w1 w2 w3",
                  tokenizer=WordTokenizer())
_TEXT_BAD = dict(needle=texts() | st.sampled_from(["", "   "]), question=texts(),
                 filler=_FILLER, tokenizer=_TOKENIZER)

BAD_INPUTS = [
    Case(WordTokenizer.encode, call=lambda text: WordTokenizer().encode(text), args=("a b",),
         bad=dict(text=texts())),
    Case(WordTokenizer.decode, call=lambda tokens: WordTokenizer().decode(tokens),
         args=(["a", "b"],),
         bad=dict(tokens=texts() | st.sampled_from(["a b", [1, 2], ["a", None], [b"a"]]))),
    Case(lesson_filler, args=(5,), kwargs=dict(vocab=3),
         bad=dict(n=ints(minimum=0), vocab=ints(minimum=1))),
    Case(needle_index, args=(100, 12.5),
         bad=dict(length=ints(minimum=1), depth=reals(minimum=0, maximum=100))),
    Case(build_needle_prompt, args=(20, 50), kwargs=_PROMPT_KW,
         bad=dict(_TEXT_BAD, length=ints(minimum=1), depth=reals(minimum=0, maximum=100))),
    Case(answer_matches, args=("It is CODE-4721.", "CODE-4721"),
         bad=dict(answer=texts(), needle=texts() | st.just(""))),
    Case(EdgeHeavyModel, kwargs=dict(needle="CODE-4721", first=4, recent=30, miss="no idea"),
         bad=dict(needle=texts() | st.sampled_from(["", "CODE 4721", " CODE-4721"]),
                  first=ints(minimum=0), recent=ints(minimum=0),
                  miss=texts() | st.just("it is CODE-4721"))),
    Case(EdgeHeavyModel.__call__, call=lambda text: EdgeHeavyModel()(text),
         args=(build_needle_prompt(50, 50).text,), bad=dict(text=texts())),
    Case(run_needle_grid, args=(EdgeHeavyModel(first=4, recent=20), [20, 40], [0, 50]),
         kwargs=dict(_PROMPT_KW, pass_prompt=False, progress=False, desc="grid"),
         bad=dict(_TEXT_BAD, model=_MODEL, lengths=_LENGTHS, depths=_DEPTHS,
                  pass_prompt=flags(), progress=flags(), desc=texts(none_ok=True))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
