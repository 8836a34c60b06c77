"""Needle in a haystack: does a model find one fact at every depth of a long context?

Notebook 09's retrieval test. A prompt is ``length`` filler tokens with the needle inserted at
token index ``floor(length * depth / 100)`` (depth 0 = the start, 100 = the end), then the
question. A grid runs every (length, depth) cell through a model and scores the answer by
string match. Any callable works as the model:

    model(text: str) -> str                       the default: the prompt text, e.g. a client
                                                  that posts it to llama-server or vLLM
    model(prompt: NeedlePrompt) -> str            with ``run_needle_grid(..., pass_prompt=True)``:
                                                  the tokens, the needle's index, the question

The answer must be the model's reply alone, a str. Anything else (None, bytes, a list, a dict
of outputs) is an error naming the cell, not a miss; so is an answer that contains the prompt's
context: a model that echoes its input "finds" every needle. A HuggingFace text-generation
pipeline does exactly that unless it is called with ``return_full_text=False``.

Notebook 09's stand-in model, ``EdgeHeavyModel``, finds the needle only in the first 64 or the
last 3,000 words: the edge-heavy shape that "Lost in the Middle" (Liu et al., 2023) reports for
real models.
"""
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from itertools import cycle, islice

import numpy as np
from tqdm.auto import tqdm

from . import _validate as check

__all__ = ["DEFAULT_NEEDLE", "DEFAULT_QUESTION", "WordTokenizer", "lesson_filler", "needle_index",
           "NeedlePrompt", "build_needle_prompt", "answer_matches", "EdgeHeavyModel",
           "NeedleGrid", "run_needle_grid"]

DEFAULT_NEEDLE = "CODE-4721"
"""The needle a prompt hides unless told otherwise: "CODE-4721"."""
DEFAULT_QUESTION = "What is the code?"
"""The question a prompt ends with unless told otherwise: "What is the code?"."""
QUESTION_SEPARATOR = "\n\n"  # between the context and the question in the prompt text


class WordTokenizer:
    """The default "tokenizer": whitespace-separated words, joined back with spaces.

    A real tokenizer fits the same slots: anything with ``encode(text) -> list`` and
    ``decode(tokens) -> str`` (a HuggingFace tokenizer, or tiktoken's encoding).
    """

    def encode(self, text):
        return check.text("text", text).split()

    def decode(self, tokens):
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, (Sequence, np.ndarray)):
            raise ValueError(f"tokens must be a list of words (strings), got "
                             f"{check.describe(tokens)}")
        for i, t in enumerate(tokens):
            if not isinstance(t, str):
                raise ValueError(f"tokens must be words (strings), got tokens[{i}] = "
                                 f"{check.describe(t)}")
        return " ".join(tokens)


def lesson_filler(n, vocab=50):
    """The default filler: words w0, w1, ..., w49, w0, ... (``n`` of them)."""
    n = check.integer("n", n, minimum=0)
    vocab = check.integer("vocab", vocab, minimum=1)
    return [f"w{i % vocab}" for i in range(n)]


def _length(value, name="length"):
    return check.integer(name, value, minimum=1)


def _exact_depth(depth, name="depth"):
    """``depth`` as an exact Fraction in [0, 100]: an int as itself, a float (Python or numpy,
    or a 0-d array or tensor holding one) as the decimal it prints as (np.float32(33.3) is
    33.3, not 33.2999992...), a Fraction or Decimal as itself."""
    if isinstance(depth, (Fraction, Decimal)):
        if isinstance(depth, Decimal) and not depth.is_finite():
            raise ValueError(f"{name} must be finite, got {depth!r}")
        d = Fraction(depth)
    else:
        check.real(name, depth)  # no bools, strings, complex, NaN or inf
        v = depth[()] if isinstance(depth, np.ndarray) else (
            depth.item() if not isinstance(depth, (int, float, np.number)) else depth)
        d = Fraction(int(v)) if isinstance(v, (int, np.integer)) else Fraction(str(v))
    if not 0 <= d <= 100:
        raise ValueError(f"{name} must be a percentage in [0, 100], got {depth!r}")
    return d


def needle_index(length, depth):
    """Token index of the needle: ``floor(length * depth / 100)``, exact for any depth in
    [0, 100] (a float depth is read as the decimal it prints as)."""
    length = _length(length)
    return math.floor(length * _exact_depth(depth) / 100)


@dataclass(frozen=True)
class NeedlePrompt:
    """One cell's prompt. ``tokens`` is the context (filler with the needle inserted);
    ``tokens[needle_index : needle_index + len(needle_tokens)]`` is the needle."""
    length: int  # filler tokens
    depth: float  # percent
    needle_index: int
    tokens: tuple
    needle: str
    needle_tokens: tuple
    question: str
    text: str  # what the model reads: the decoded context, a blank line, the question

    @property
    def context(self):
        """The decoded context: ``text`` before the blank line and the question."""
        return self.text[:len(self.text) - len(QUESTION_SEPARATOR) - len(self.question)]


def _tokenizer(tokenizer):
    if tokenizer is None:
        return WordTokenizer()
    for method in ("encode", "decode"):
        if not callable(getattr(tokenizer, method, None)):
            raise ValueError(f"tokenizer must have encode(text) -> tokens and decode(tokens) -> "
                             f"text methods; {check.describe(tokenizer)} has no {method}")
    return tokenizer


def _encode(tokenizer, text, name):
    """``tokenizer.encode(text)`` as a tuple, or ValueError naming the tokenizer or ``name``."""
    tokens = tokenizer.encode(text)
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, (Sequence, np.ndarray)):
        raise ValueError(f"tokenizer.encode must return a list of tokens, got "
                         f"{check.describe(tokens)} for the {name}")
    return tuple(tokens)


def _kind(token):
    """"str" or "int" (a token id that is not a bool), else None."""
    if isinstance(token, str):
        return "str"
    if isinstance(token, (int, np.integer)) and not isinstance(token, (bool, np.bool_)):
        return "int"
    return None


def _filler_pool(filler, tokenizer, needle_tokens):
    """The filler's tokens: the text encoded, or the list itself, each token of the kind the
    tokenizer makes (words for WordTokenizer, ids for a real one), as the needle's are."""
    if isinstance(filler, str):
        pool = list(_encode(tokenizer, filler, "filler"))
    elif isinstance(filler, bytes) or not isinstance(filler, (Sequence, np.ndarray, range)):
        raise ValueError(f"filler must be a text or a list of tokens, got {check.describe(filler)}")
    else:
        pool = list(filler)
    if not pool:
        raise ValueError("filler must contain at least one token")
    kinds = {_kind(t) for t in needle_tokens}
    if len(kinds) == 1 and None not in kinds:
        want = kinds.pop()
        for i, t in enumerate(pool):
            if _kind(t) != want:
                what = "words (strings)" if want == "str" else "token ids (integers)"
                raise ValueError(f"filler must hold {what}, as tokenizer.encode gives for the "
                                 f"needle; got filler[{i}] = {check.describe(t)}")
    return pool


def build_needle_prompt(length, depth, *, needle=DEFAULT_NEEDLE, question=DEFAULT_QUESTION,
                        filler=None, tokenizer=None):
    """A prompt of ``length`` filler tokens with the needle at ``needle_index(length, depth)``.

    ``filler``: a text or a list of tokens, repeated as needed (default: ``lesson_filler``).
    ``tokenizer``: ``encode``/``decode`` (default ``WordTokenizer``). The placement is exact
    in the tokenizer's own tokens; with a subword tokenizer, start the needle and the filler
    with a space or newline so that decoding and re-encoding do not merge them at the seams.
    """
    tokenizer = _tokenizer(tokenizer)
    length = _length(length)
    at = needle_index(length, depth)
    check.text("needle", needle)
    check.text("question", question)
    needle_tokens = _encode(tokenizer, needle, "needle")
    if not needle_tokens:
        raise ValueError(f"needle must encode to at least one token, got {needle!r}")
    if filler is None:
        haystack = lesson_filler(length)
    else:
        haystack = list(islice(cycle(_filler_pool(filler, tokenizer, needle_tokens)), length))
    tokens = tuple(haystack[:at]) + needle_tokens + tuple(haystack[at:])
    try:
        context = tokenizer.decode(list(tokens))
    except ValueError as err:  # the needle's tokens came from encode: the filler's did not
        raise ValueError(f"filler holds tokens the tokenizer cannot decode: {err}") from None
    if not isinstance(context, str):
        raise ValueError(f"tokenizer.decode must return a str, got {check.describe(context)}")
    text = context + QUESTION_SEPARATOR + question
    return NeedlePrompt(length, depth, at, tokens, needle, needle_tokens, question, text)


def _needle_text(needle):
    if not check.text("needle", needle):
        raise ValueError("needle must not be empty (every answer contains the empty string)")
    return needle


def answer_matches(answer, needle):
    """String match: the answer contains the needle (real models wrap it in a sentence).
    ``answer`` must be a str: None or bytes is not a miss but a model that answered wrongly."""
    needle = _needle_text(needle)
    return needle in check.text("answer", answer)


class EdgeHeavyModel:
    """Notebook 09's stand-in model: it finds the needle only when it sits among the first
    ``first`` words or within the last ``recent`` words of the context (counted from the needle
    to the end, the needle included). Reads the prompt text like a real model would: the words
    before the final blank line are the context, and the needle is one of them (one word)."""

    def __init__(self, needle=DEFAULT_NEEDLE, *, first=64, recent=3000,
                 miss="I could not find it"):
        needle = _needle_text(needle)
        if len(needle.split()) != 1 or needle != needle.strip():
            raise ValueError(f"needle must be one word (the model looks for it among the "
                             f"context's words), got {needle!r}")
        first = check.integer("first", first, minimum=0)
        recent = check.integer("recent", recent, minimum=0)
        if needle in check.text("miss", miss):
            raise ValueError(f"miss must not contain the needle {needle!r} (a miss would be "
                             f"scored as found), got {miss!r}")
        self.needle, self.first, self.recent, self.miss = needle, first, recent, miss

    def __call__(self, text):
        context = check.text("text", text).rsplit(QUESTION_SEPARATOR, 1)[0]
        words = context.split()
        if self.needle not in words:
            return self.miss
        at = words.index(self.needle)
        return self.needle if len(words) - at <= self.recent or at < self.first else self.miss


@dataclass(frozen=True)
class NeedleGrid:
    """The grid's result: ``found[i, j]`` for ``lengths[i]`` x ``depths[j]``, and the answers."""
    lengths: np.ndarray  # (n_lengths,)
    depths: np.ndarray  # (n_depths,) percent
    found: np.ndarray  # (n_lengths, n_depths) bool
    answers: tuple  # answers[i][j], the model's text

    @property
    def accuracy_by_length(self):
        return self.found.mean(axis=1)

    @property
    def accuracy(self):
        return float(self.found.mean())

    def table(self):
        """The grid as a text table: ok / miss per cell and a count per row."""
        head = "length   depth:" + "".join(f"{d:>5g}" for d in self.depths)
        rows = [f"{n:6d}         " + "".join("   ok" if f else " miss" for f in row)
                + f"   {row.sum()}/{row.size}" for n, row in zip(self.lengths, self.found)]
        return "\n".join([head] + rows)


def _values(name, values):
    """``values`` (lengths or depths) as a list: an iterable of numbers, not a string."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a list of numbers, got {check.describe(values)}")
    try:
        values = list(values)
    except TypeError:  # a 0-d array
        raise ValueError(f"{name} must be a list of numbers, got "
                         f"{check.describe(values)}") from None
    if not values:
        raise ValueError(f"{name} must name at least one value")
    return values


def _model_name(model):
    return getattr(model, "__name__", None) or type(model).__name__


def _checked_answer(model, answer, prompt):
    """The model's answer, when it is a str that does not echo the prompt's context."""
    cell = f"length={prompt.length}, depth={prompt.depth:g}"
    if not isinstance(answer, str):
        raise ValueError(f"model {_model_name(model)} returned {check.describe(answer)} for the "
                         f"cell {cell}; it must return its answer as a str (a reply that "
                         f"does not contain the needle is a miss, not None)")
    if prompt.context in answer:
        raise ValueError(f"model {_model_name(model)} echoes its prompt: its answer for the cell "
                         f"{cell} contains the whole context ({len(prompt.context):,} "
                         f"characters), so every needle would count as found. Return only the "
                         f"model's reply: a HuggingFace text-generation pipeline returns the "
                         f"prompt plus the completion unless called with return_full_text=False")
    return answer


def _ask(model, prompt, pass_prompt):
    """The model's answer for one cell; an exception it raises becomes a ValueError naming the
    model and the cell, chained to the model's own (its traceback stays above the message)."""
    try:
        return model(prompt if pass_prompt else prompt.text)
    except Exception as err:
        raise ValueError(f"model {_model_name(model)} raised {type(err).__name__} for the cell "
                         f"length={prompt.length}, depth={prompt.depth:g}: {err} (the grid stops "
                         f"at the first cell whose call fails; the model's own error and "
                         f"traceback are chained above)") from err


def run_needle_grid(model, lengths, depths, *, needle=DEFAULT_NEEDLE, question=DEFAULT_QUESTION,
                    filler=None, tokenizer=None, pass_prompt=False, progress=True,
                    desc="needle grid"):
    """Ask ``model`` for the needle at every length x depth; score by ``answer_matches``.

    ``model(prompt.text)`` (or ``model(prompt)`` with ``pass_prompt=True``) must return a str,
    the reply alone: a non-str answer, or one that contains the prompt's context (an echo), is
    a ValueError naming the cell, and so is an exception the model raises (naming the model and
    the cell, chained to it). A ``tqdm.auto`` bar counts the cells (``progress=False`` hides it).
    Returns a ``NeedleGrid``.
    """
    check.function("model", model)
    lengths = np.array([_length(n, f"lengths[{i}]")
                        for i, n in enumerate(_values("lengths", lengths))], dtype=np.int64)
    depths = _values("depths", depths)
    for j, depth in enumerate(depths):
        _exact_depth(depth, f"depths[{j}]")
    depths = np.array(depths, dtype=np.float64)
    _needle_text(needle)
    check.text("question", question)
    tokenizer = _tokenizer(tokenizer)
    pass_prompt, progress = check.flag("pass_prompt", pass_prompt), check.flag("progress", progress)
    if desc is not None:
        check.text("desc", desc)
    found = np.zeros((lengths.size, depths.size), dtype=bool)
    answers = []
    with tqdm(total=found.size, desc=desc, disable=not progress) as bar:
        for i, n in enumerate(lengths):
            row = []
            for j, depth in enumerate(depths):
                d = int(depth) if depth.is_integer() else float(depth)
                prompt = build_needle_prompt(int(n), d, needle=needle, question=question,
                                             filler=filler, tokenizer=tokenizer)
                answer = _checked_answer(model, _ask(model, prompt, pass_prompt), prompt)
                found[i, j] = answer_matches(answer, needle)
                row.append(answer)
                bar.update(1)
            answers.append(tuple(row))
    return NeedleGrid(lengths, depths, found, tuple(answers))
