"""Needle in a haystack: does a model find one fact at every depth of a long context?

Example 17 of the lesson. A prompt is ``length`` filler tokens with the needle inserted at
token index ``floor(length * depth / 100)`` (depth 0 = the start, 100 = the end), then the
question. A grid runs every (length, depth) cell through a model and scores the answer by
string match. Any callable works as the model:

    model(text: str) -> str                       the default: the prompt text, e.g. a client
                                                  that posts it to llama-server or vLLM
    model(prompt: NeedlePrompt) -> str            with ``run_needle_grid(..., pass_prompt=True)``:
                                                  the tokens, the needle's index, the question

The lesson's fake model, ``EdgeHeavyModel``, finds the needle only in the first 64 or the last
3,000 words: the edge-heavy shape that "Lost in the Middle" (Liu et al., 2023) reports for real
models.
"""
import math
from dataclasses import dataclass
from fractions import Fraction
from itertools import cycle, islice

import numpy as np
from tqdm.auto import tqdm

__all__ = ["DEFAULT_NEEDLE", "DEFAULT_QUESTION", "WordTokenizer", "lesson_filler", "needle_index",
           "NeedlePrompt", "build_needle_prompt", "answer_matches", "EdgeHeavyModel",
           "NeedleGrid", "run_needle_grid"]

DEFAULT_NEEDLE = "CODE-4721"
DEFAULT_QUESTION = "What is the code?"
QUESTION_SEPARATOR = "\n\n"  # between the context and the question in the prompt text


class WordTokenizer:
    """The default "tokenizer": whitespace-separated words, joined back with spaces.

    A real tokenizer fits the same slots: anything with ``encode(text) -> list`` and
    ``decode(tokens) -> str`` (a HuggingFace tokenizer, or tiktoken's encoding).
    """

    def encode(self, text):
        return text.split()

    def decode(self, tokens):
        return " ".join(tokens)


def lesson_filler(n, vocab=50):
    """The lesson's filler: words w0, w1, ..., w49, w0, ... (``n`` of them)."""
    return [f"w{i % vocab}" for i in range(n)]


def _length(value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"length must be an integer >= 1, got {value!r}")
    return int(value)


def needle_index(length, depth):
    """Token index of the needle: ``floor(length * depth / 100)``, exact for any depth in
    [0, 100] (a float depth is read as the decimal it prints as)."""
    length = _length(length)
    d = Fraction(str(depth)) if isinstance(depth, float) else Fraction(depth)
    if not 0 <= d <= 100:
        raise ValueError(f"depth must be a percentage in [0, 100], got {depth!r}")
    return math.floor(length * d / 100)


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


def build_needle_prompt(length, depth, *, needle=DEFAULT_NEEDLE, question=DEFAULT_QUESTION,
                        filler=None, tokenizer=None):
    """A prompt of ``length`` filler tokens with the needle at ``needle_index(length, depth)``.

    ``filler``: a text or a list of tokens, repeated as needed (default: ``lesson_filler``).
    ``tokenizer``: ``encode``/``decode`` (default ``WordTokenizer``). The placement is exact
    in the tokenizer's own tokens; with a subword tokenizer, start the needle and the filler
    with a space or newline so that decoding and re-encoding do not merge them at the seams.
    """
    tokenizer = WordTokenizer() if tokenizer is None else tokenizer
    length = _length(length)
    if filler is None:
        haystack = lesson_filler(length)
    else:
        pool = tokenizer.encode(filler) if isinstance(filler, str) else list(filler)
        if not pool:
            raise ValueError("filler must contain at least one token")
        haystack = list(islice(cycle(pool), length))
    needle_tokens = tuple(tokenizer.encode(needle))
    if not needle_tokens:
        raise ValueError("needle must encode to at least one token")
    at = needle_index(length, depth)
    tokens = tuple(haystack[:at]) + needle_tokens + tuple(haystack[at:])
    text = tokenizer.decode(list(tokens)) + QUESTION_SEPARATOR + question
    return NeedlePrompt(length, depth, at, tokens, needle, needle_tokens, question, text)


def answer_matches(answer, needle):
    """String match: the answer contains the needle (real models wrap it in a sentence)."""
    return isinstance(answer, str) and needle in answer


class EdgeHeavyModel:
    """Example 17's fake model: it finds the needle only when it sits among the first ``first``
    words or within the last ``recent`` words of the context (counted from the needle to the
    end, the needle included). Reads the prompt text like a real model would: the words
    before the final blank line are the context, and the needle is one of them (one word)."""

    def __init__(self, needle=DEFAULT_NEEDLE, *, first=64, recent=3000,
                 miss="I could not find it"):
        self.needle, self.first, self.recent, self.miss = needle, first, recent, miss

    def __call__(self, text):
        context = text.rsplit(QUESTION_SEPARATOR, 1)[0]
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
        """The lesson's text table: ok / miss per cell and a count per row."""
        head = "length   depth:" + "".join(f"{d:>5g}" for d in self.depths)
        rows = [f"{n:6d}         " + "".join("   ok" if f else " miss" for f in row)
                + f"   {row.sum()}/{row.size}" for n, row in zip(self.lengths, self.found)]
        return "\n".join([head] + rows)


def run_needle_grid(model, lengths, depths, *, needle=DEFAULT_NEEDLE, question=DEFAULT_QUESTION,
                    filler=None, tokenizer=None, pass_prompt=False, progress=True,
                    desc="needle grid"):
    """Ask ``model`` for the needle at every length x depth; score by ``answer_matches``.

    ``model(prompt.text)`` (or ``model(prompt)`` with ``pass_prompt=True``) must return a str.
    A ``tqdm.auto`` bar counts the cells (``progress=False`` hides it). Returns a ``NeedleGrid``.
    """
    if not callable(model):
        raise ValueError(f"model must be callable, got {type(model).__name__}")
    lengths = np.array([_length(n) for n in lengths], dtype=np.int64)
    depths = np.array(list(depths), dtype=np.float64)
    if lengths.size == 0 or depths.size == 0:
        raise ValueError("lengths and depths must each name at least one value")
    found = np.zeros((lengths.size, depths.size), dtype=bool)
    answers = []
    with tqdm(total=found.size, desc=desc, disable=not progress) as bar:
        for i, n in enumerate(lengths):
            row = []
            for j, depth in enumerate(depths):
                d = int(depth) if depth.is_integer() else float(depth)
                prompt = build_needle_prompt(int(n), d, needle=needle, question=question,
                                             filler=filler, tokenizer=tokenizer)
                answer = model(prompt if pass_prompt else prompt.text)
                found[i, j] = answer_matches(answer, needle)
                row.append(answer)
                bar.update(1)
            answers.append(tuple(row))
    return NeedleGrid(lengths, depths, found, tuple(answers))
