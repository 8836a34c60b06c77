"""The synthetic task the tiny model learns: pass-key retrieval among key-value needles.

A document is ``<bos>`` then filler words with "key: value" needles inserted. One needle holds
the pass key; the others use other keys and are distractors. A query "? pass:" asks for the
pass key's value, and the next token is the answer::

    <bos> f12 f40 k07: v03 f33 ... pass: v17 f51 f02 ... k21: v30 f08 ... ? pass: v17
              ^^^^^^^^ distractor  ^^^^^^^^^ the needle                   ^^^^^^^^^^^^ query

This is the pass-key retrieval test that PI (Chen et al., 2023), Landmark Attention and YaRN
use to check context extension, with distractor needles so that copying *any* value is wrong.
Key tokens carry their colon (``pass:`` is one token, as a word-piece tokenizer would often
make it): the answer is the token after the earlier ``pass:``.

Why not "? k07:" for any of 32 keys? A query that must be matched against 32 possible keys
needs a two-layer "induction" circuit that the model did not learn within the CPU budget (we
measured 1,500-4,000 steps at 64 tokens, this model and a stock ``nn.TransformerEncoder``
alike: both settled for copying *a* value, 1 in 4 right with 4 needles). A single pass key
is found within about 300 steps. The distractor keys keep the lookup honest.

The filler is not noise: word t is drawn from a fixed table of successors of word t - 2 (a
"skip-bigram"), so predicting it needs a head that looks back over the previous word. Position
handling that breaks (RoPE past its trained length, PI squeezing neighbours together) shows up
in the filler loss as well as in retrieval.

Vocabulary (131 tokens): ``<bos>``, ``?``, ``pass:``, 32 distractor keys ``k00:..k31:``, 32
values ``v00..v31``, 64 filler words ``f00..f63``. Chance accuracy for the answer is 1/32.
Their ids: ``BOS`` 0 (``<bos>``), ``QUERY`` 1 (``?``), ``PASS`` 2 (``pass:``), then ``N_KEYS``
= 32 keys from ``KEY0`` = 3 (``k00:``), ``N_VALUES`` = 32 values from ``VALUE0`` = 35
(``v00``) and ``N_FILLER`` = 64 filler words from ``FILLER0`` = 67. A needle is
``NEEDLE_LEN`` = 2 tokens (``pass: vNN``), a query ``QUERY_LEN`` = 2 (``? pass:``).

Everything is seeded: a document is a pure function of its seed (``numpy.random.SeedSequence``
entropy such as ``(seed, length, index)``), so a grid cell gives the same documents whichever
other cells run beside it.
"""
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lessonlib import _validate as check
from lessonlib.needles import needle_index

__all__ = ["BOS", "QUERY", "PASS", "N_KEYS", "N_VALUES", "N_FILLER", "VOCAB", "VOCAB_SIZE",
           "KEY0", "VALUE0", "FILLER0", "KVTokenizer", "skip_bigram_table", "filler_tokens",
           "Document", "training_document", "retrieval_document", "stream_document",
           "training_batch", "retrieval_batch", "TASK_SEED", "NEEDLE_LEN", "QUERY_LEN",
           "needle_haystack", "HAYSTACK_DISTRACTORS", "HAYSTACK_DEPTHS", "MIN_STREAM_BLOCK"]

N_KEYS, N_VALUES, N_FILLER = 32, 32, 64
SPECIALS = ("<bos>", "?", "pass:")
BOS, QUERY, PASS = 0, 1, 2
KEY0 = len(SPECIALS)  # ids KEY0 .. KEY0 + 31 are k00: .. k31: (distractor keys)
VALUE0 = KEY0 + N_KEYS
FILLER0 = VALUE0 + N_VALUES
VOCAB = (SPECIALS + tuple(f"k{i:02d}:" for i in range(N_KEYS))
         + tuple(f"v{i:02d}" for i in range(N_VALUES)) + tuple(f"f{i:02d}" for i in range(N_FILLER)))
"""The 131 words, by token id."""
VOCAB_SIZE = len(VOCAB)  # 131
"""131, the vocabulary's size."""
TASK_SEED = 20240607  # the filler table: part of the task's definition, not of a run
"""20240607, the seed of the filler table: part of the task's definition, not of a run."""
SUCCESSORS = 4  # each filler word has this many likely successors two steps later
MAX_DISTRACTORS, MAX_QUERIES = 8, 6  # per training document
NEEDLE_LEN, QUERY_LEN = 2, 2  # "pass: v" and "? pass:" (the answer follows the query)
# The shortest block of stream_document that holds its layout: the query is up to 63 + 235
# filler words in, and the block also holds 3 needles, the query and its answer.
MIN_STREAM_BLOCK = 63 + 235 + 3 * NEEDLE_LEN + QUERY_LEN + 1
"""307, the shortest ``stream_document`` block that holds its layout."""


class KVTokenizer:
    """Words <-> token ids for this vocabulary (fits ``lessonlib.needles``' tokenizer slot:
    ``encode(text) -> list``, ``decode(tokens) -> str``)."""

    _ids = {w: i for i, w in enumerate(VOCAB)}

    def encode(self, text):
        words = check.text("text", text).split()
        for w in words:
            if w not in self._ids:
                raise ValueError(f"text holds {w!r}, which is not a word of the task's vocabulary "
                                 f"(<bos>, ?, pass:, k00:..k31:, v00..v31, f00..f63)")
        return [self._ids[w] for w in words]

    def decode(self, tokens):
        """The words of ``tokens``: ids in [0, VOCAB_SIZE) (ints, numpy ints, 0-d tensors; a
        1-D array or tensor of them). A float, a bool or an id out of range is an error naming
        it: ``VOCAB[-1]`` would silently be the last word."""
        return " ".join(VOCAB[i] for i in _token_ids("tokens", tokens))


def _token_ids(name, tokens):
    """``tokens`` as a list of Python ints in [0, VOCAB_SIZE), or ValueError naming ``name``."""
    if isinstance(tokens, (str, bytes, dict)) or getattr(tokens, "ndim", 1) != 1 \
            or not (isinstance(tokens, (Sequence, range)) or hasattr(tokens, "tolist")):
        raise ValueError(f"{name} must be a list (or 1-D array) of token ids, got "
                         f"{check.describe(tokens)}")
    ids = tokens.tolist() if hasattr(tokens, "tolist") else list(tokens)
    if all(type(t) is int for t in ids):  # the common case, checked at C speed
        if not ids or 0 <= min(ids) and max(ids) < VOCAB_SIZE:
            return ids
    return [check.integer(f"{name}[{i}]", t, minimum=0, maximum=VOCAB_SIZE - 1)
            for i, t in enumerate(ids)]


def skip_bigram_table(seed=TASK_SEED):
    """(N_FILLER, N_FILLER) float64: row a is the distribution of filler word t given word
    t - 2 = a. Each row puts Dirichlet(1) weights on ``SUCCESSORS`` random successors."""
    rng = np.random.default_rng(check.integer("seed", seed, minimum=0))
    table = np.zeros((N_FILLER, N_FILLER))
    for a in range(N_FILLER):
        succ = rng.choice(N_FILLER, size=SUCCESSORS, replace=False)
        table[a, succ] = rng.dirichlet(np.ones(SUCCESSORS))
    return table


_CDF = np.cumsum(skip_bigram_table(), axis=1)


def filler_tokens(rng, n):
    """``n`` filler token ids from the skip-bigram chain (the first two uniform). ``rng``: a
    ``numpy.random.Generator`` (``np.random.default_rng(seed)``)."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got "
                         f"{check.describe(rng)}")
    n = check.integer("n", n, minimum=0)
    words = np.empty(n, dtype=np.int64)
    u = rng.random(n)
    for t in range(n):
        if t < 2:
            words[t] = min(int(u[t] * N_FILLER), N_FILLER - 1)
        else:
            words[t] = min(int(np.searchsorted(_CDF[words[t - 2]], u[t], side="right")), N_FILLER - 1)
    return words + FILLER0


@dataclass(frozen=True)
class Document:
    """Token ids and where the answers are: ``tokens[answer_at[i]]`` is the value that answers
    query i, predicted from position ``answer_at[i] - 1`` (the query's ``pass:``);
    ``tokens[needle_at[i]]`` is the ``pass:`` of the needle it asks about."""
    tokens: np.ndarray  # (n,) int64
    answer_at: np.ndarray  # (n_queries,) int64
    needle_at: np.ndarray  # (n_queries,) int64


def _flatten(seed):
    """The integers of a seed (an int or a nested tuple of them), or ValueError naming seed."""
    if isinstance(seed, (tuple, list)):
        return [x for part in seed for x in _flatten(part)]
    try:
        return [check.integer("seed", seed, minimum=0)]
    except ValueError:  # a float, a bool, a negative number, a string: never a silent seed
        raise ValueError(f"seed must be a non-negative integer or a tuple of them, got "
                         f"{check.describe(seed)}") from None


def _rng(seed):
    """A Generator for an integer seed or a (nested) tuple of them, e.g. ``(seed, length, i)``."""
    return np.random.default_rng(np.random.SeedSequence(_flatten(seed)))


def _count(name, value):
    """A number of distractor needles: 0 .. N_KEYS (each uses a different key)."""
    return check.integer(name, value, minimum=0, maximum=N_KEYS)


def _assemble(length, filler, events):
    """<bos> + ``filler`` with ``events`` inserted: (filler index, kind, tokens) sorted by index,
    kind "needle" (the pass needle), "query" (its tokens end with the answer) or "other"."""
    out, answer_at, needle_at, prev, at = [BOS], [], [], 0, -1
    for cut, kind, tokens in events:
        out.extend(filler[prev:cut])
        prev = cut
        if kind == "needle":
            at = len(out)
        elif kind == "query":
            answer_at.append(len(out) + len(tokens) - 1)
            needle_at.append(at)
        out.extend(tokens)
    out.extend(filler[prev:])
    if len(out) != length:
        raise AssertionError(f"assembled {len(out)} tokens, wanted {length}")
    return Document(np.array(out, dtype=np.int64), np.array(answer_at, dtype=np.int64),
                    np.array(needle_at, dtype=np.int64))


def _distractors(rng, n):
    keys = rng.choice(N_KEYS, size=n, replace=False)
    return [[KEY0 + int(k), VALUE0 + int(rng.integers(N_VALUES))] for k in keys]


def training_document(seed, length=256, *, max_distractors=MAX_DISTRACTORS,
                      max_queries=MAX_QUERIES):
    """A training document: one pass needle, 0..max_distractors distractor needles, and
    1..max_queries queries "? pass: v" at random places after the needle."""
    _flatten(seed)
    length = check.integer("length", length, minimum=1)
    max_distractors = _count("max_distractors", max_distractors)
    max_queries = check.integer("max_queries", max_queries, minimum=1)
    rng = _rng(seed)
    n_other = int(rng.integers(0, max_distractors + 1))
    n_queries = int(rng.integers(1, max_queries + 1))
    value = VALUE0 + int(rng.integers(N_VALUES))
    n_filler = length - 1 - NEEDLE_LEN * (1 + n_other) - (QUERY_LEN + 1) * n_queries
    if n_filler < 0:
        raise ValueError(f"length {length} is too short for this document's {n_other} "
                         f"distractors and {n_queries} queries (max_distractors, max_queries): "
                         f"it needs {length - n_filler}")
    filler = filler_tokens(rng, n_filler)
    needle_cut = int(rng.integers(0, n_filler + 1))
    query_cuts = np.sort(rng.integers(needle_cut, n_filler + 1, size=n_queries))
    other_cuts = rng.integers(0, n_filler + 1, size=n_other)
    events = [(needle_cut, "needle", [PASS, value])]
    events += [(int(c), "query", [QUERY, PASS, value]) for c in query_cuts]
    events += [(int(c), "other", t) for c, t in zip(other_cuts, _distractors(rng, n_other))]
    order = {"other": 0, "needle": 1, "query": 2}  # at equal cuts: the needle before its queries
    events.sort(key=lambda e: (e[0], order[e[1]]))
    return _assemble(length, filler, events)


def retrieval_document(seed, length, *, n_distractors=4, depth=None):
    """An evaluation document of exactly ``length`` tokens: the pass needle and
    ``n_distractors`` distractor needles in the filler, then "? pass:" and the answer as the
    last token. ``depth`` (0..1) puts the pass needle at that fraction of the filler (default:
    anywhere)."""
    _flatten(seed)
    length = check.integer("length", length, minimum=1)
    n_distractors = _count("n_distractors", n_distractors)
    if depth is not None:
        real_depth = check.real("depth", depth, minimum=0.0, maximum=1.0)
        if not isinstance(depth, (int, float, np.number)):  # a 0-d array or tensor
            depth = real_depth
    n_filler = length - 1 - NEEDLE_LEN * (1 + n_distractors) - QUERY_LEN - 1
    if n_filler < 0:
        raise ValueError(f"length {length} is too short for {n_distractors} distractors "
                         f"(n_distractors) and a query: it needs {length - n_filler}")
    rng = _rng(seed)
    value = VALUE0 + int(rng.integers(N_VALUES))
    filler = filler_tokens(rng, n_filler)
    needle_cut = int(rng.integers(0, n_filler + 1))
    if depth is not None:
        needle_cut = int(np.floor(depth * n_filler))
    other_cuts = rng.integers(0, n_filler + 1, size=n_distractors)
    events = [(needle_cut, "needle", [PASS, value])]
    events += [(int(c), "other", t) for c, t in zip(other_cuts, _distractors(rng, n_distractors))]
    events.sort(key=lambda e: (e[0], e[1] == "needle"))
    events.append((n_filler, "query", [QUERY, PASS, value]))
    return _assemble(length, filler, events)


def stream_document(seed, length, *, block=512):
    """A long stream for the cache experiment: ``<bos>`` then blocks of ``block`` tokens. Each
    block has its own pass needle early (filler offset 4..63), 2 distractor needles after it,
    and its query after 128..235 more filler words: the answer lands 136..243 tokens after the
    needle's ``pass:``, so every query is answerable from the last 252 tokens, and no earlier
    pass needle or query is among them (the previous block's are more than 256 back). A
    ``length`` that is not 1 + a multiple of ``block`` ends with plain filler. ``block`` must
    be at least ``MIN_STREAM_BLOCK`` (307), the longest needle-to-query layout."""
    _flatten(seed)
    length = check.integer("length", length, minimum=1)
    block = check.integer("block", block, minimum=MIN_STREAM_BLOCK)
    rng = _rng(seed)
    n_blocks = (length - 1) // block
    out, answer_at, needle_at = [BOS], [], []
    n_filler = block - 3 * NEEDLE_LEN - QUERY_LEN - 1
    for _ in range(n_blocks):
        start = len(out)
        value = VALUE0 + int(rng.integers(N_VALUES))
        filler = filler_tokens(rng, n_filler)
        needle_cut = int(rng.integers(4, 64))
        query_cut = needle_cut + int(rng.integers(128, 236))
        other = [(int(rng.integers(needle_cut + 1, query_cut)), "other", t) for t in _distractors(rng, 2)]
        events = sorted([(needle_cut, "needle", [PASS, value])] + other, key=lambda e: e[0])
        events.append((query_cut, "query", [QUERY, PASS, value]))
        doc = _assemble(block + 1, filler, events)  # its <bos> is dropped below
        out.extend(doc.tokens[1:])
        answer_at.extend(start + doc.answer_at - 1)
        needle_at.extend(start + doc.needle_at - 1)
    out.extend(filler_tokens(rng, length - len(out)))
    return Document(np.array(out, dtype=np.int64), np.array(answer_at, dtype=np.int64),
                    np.array(needle_at, dtype=np.int64))


def training_batch(seed, batch, length=256, *, max_distractors=MAX_DISTRACTORS,
                   max_queries=MAX_QUERIES):
    """(batch, length) int64 tokens and a (batch, length) bool mask of answer positions. Even
    rows are ``training_document((seed, i))`` (several queries anywhere after the needle), odd
    rows ``retrieval_document((seed, i), n_distractors=0..8)``: the evaluation's shape.
    ``max_distractors``, ``max_queries``: those of ``training_document``."""
    _flatten(seed)
    batch = check.integer("batch", batch, minimum=1)
    length = check.integer("length", length, minimum=1)
    max_distractors = _count("max_distractors", max_distractors)
    max_queries = check.integer("max_queries", max_queries, minimum=1)
    docs = []
    for i in range(batch):
        if i % 2 == 0:
            docs.append(training_document((seed, i), length, max_distractors=max_distractors,
                                          max_queries=max_queries))
        else:
            n_other = int(_rng((seed, i, 1)).integers(0, MAX_DISTRACTORS + 1))
            docs.append(retrieval_document((seed, i), length, n_distractors=n_other))
    tokens = np.stack([d.tokens for d in docs])
    answers = np.zeros(tokens.shape, dtype=bool)
    for b, d in enumerate(docs):
        answers[b, d.answer_at] = True
    return tokens, answers


def retrieval_batch(seed, length, batch, *, n_distractors=4):
    """(batch, length) tokens of ``retrieval_document((seed, length, i), length)``, i < batch."""
    _flatten(seed)
    length = check.integer("length", length, minimum=1)
    batch = check.integer("batch", batch, minimum=1)
    n_distractors = _count("n_distractors", n_distractors)
    return np.stack([retrieval_document((seed, length, i), length, n_distractors=n_distractors).tokens
                     for i in range(batch)])


HAYSTACK_DISTRACTORS = 4
"""4, the distractor needles ``needle_haystack`` hides by default."""
HAYSTACK_DEPTHS = tuple(range(0, 101, 10))  # the needle slots needle_haystack keeps clear
"""(0, 10, ..., 100): the needle depths in percent whose slots ``needle_haystack`` keeps clear."""


def needle_haystack(seed, n_filler, *, n_distractors=HAYSTACK_DISTRACTORS):
    """(needle text, filler ids) for ``lessonlib.needles.run_needle_grid`` on the tiny model:
    the needle "pass: vNN" with a seeded value, and ``n_filler`` tokens of skip-bigram filler
    holding ``n_distractors`` needles "kNN: vMM" at random places. No distractor sits where a
    needle at a depth of ``HAYSTACK_DEPTHS`` (``needle_index(n_filler, depth)``) would split
    "kNN:" from its value, so every cell of a 0, 10, ..., 100 % grid sees whole pairs."""
    _flatten(seed)
    n_filler = check.integer("n_filler", n_filler, minimum=0)
    n_distractors = _count("n_distractors", n_distractors)
    n_pure = n_filler - NEEDLE_LEN * n_distractors
    if n_pure < 0:
        raise ValueError(f"n_filler {n_filler} is too short for {n_distractors} distractors "
                         f"(n_distractors): they take {NEEDLE_LEN * n_distractors} tokens")
    rng = _rng(seed)
    value = int(rng.integers(N_VALUES))
    pure = list(filler_tokens(rng, n_pure))
    pairs = _distractors(rng, n_distractors)
    cuts = {needle_index(n_filler, d) for d in HAYSTACK_DEPTHS} if n_filler else set()
    for _ in range(1000):  # pair i lands at final index at_i + 2 i; its value must not open a slot
        at = np.sort(rng.integers(0, n_pure + 1, size=n_distractors))
        if not any(int(a) + 2 * i + 1 in cuts for i, a in enumerate(at)):
            break
    else:
        raise ValueError(f"n_filler {n_filler} is too short to keep {n_distractors} distractors "
                         f"clear of the needle slots at depths {HAYSTACK_DEPTHS[0]}..{HAYSTACK_DEPTHS[-1]}")
    filler, prev = [], 0
    for a, pair in zip(at, pairs):
        filler += pure[prev:a] + pair
        prev = int(a)
    filler += pure[prev:]
    return f"pass: {VOCAB[VALUE0 + value]}", [int(t) for t in filler]
