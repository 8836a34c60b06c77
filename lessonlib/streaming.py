"""Keeping fewer tokens: the sliding-window ring buffer and the StreamingLLM sink cache.

Both are taught in notebook 06 (llama.cpp's context shift, its other way to evict, is in
``lessonlib.engines``).

Sliding window: a layer with window W lets the query at position p see keys
p - W + 1 .. p, so its cache needs W entries. A ring buffer puts position p in slot p mod W,
overwriting position p - W, the one key no later query needs. Slots come out of order
([4, 1, 2, 3] after position 4 with W = 4); attention sums over a set, so order does not matter,
but RoPE does, so every slot stores its position. L stacked windowed layers carry information
L x (W - 1) positions back.

Attention sinks (Xiao et al. 2023, "StreamingLLM"): trained heads park leftover
attention on the first tokens. Evicting them forces that weight onto the recent tokens and the
output changes; keeping ``n_sink`` first tokens plus the ``n_recent`` most recent restores it.
StreamingLLM gives RoPE the positions of the cache slots (0 .. size - 1), not the original ones,
so the model never sees a position beyond its cache. That only works if the cache stores keys
*before* rotation: a rotated key carries its original position for good, and the gap between a
query and a key would then depend on what was evicted in between.
"""
from dataclasses import dataclass

import numpy as np

from . import _validate as check
from ._validate import non_negative_int, positive_int

__all__ = ["RingBuffer", "receptive_field", "reachable_distance", "StreamingCache",
           "sink_example_scores", "SinkReadout", "attention_readout", "compare_sink_caches"]


# --------------------------------------------------------------------------- both caches

def _vector(name, a, shape):
    """``a`` as a 1-D array of finite numbers, of ``shape`` when the cache already holds some."""
    a = check.array(name, a, kind="real", ndim=1)
    if a.size == 0:
        raise ValueError(f"{name} must hold at least one number, got shape {a.shape}")
    if shape is not None and a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, like the vectors already cached, "
                         f"got {a.shape}")
    return a


def _token_vectors(k, v, shapes):
    """Checked (k, v, shapes) for one appended token. ``shapes``: None before the first append,
    False when the cache holds positions only, else (key shape, value shape). A cache holds
    vectors for every token or for none: a missing key would read as zeros."""
    if k is None:
        if v is not None:
            raise ValueError("v was given without k: a value is cached with its key, append(k, v)")
        if shapes:
            raise ValueError(f"k is missing: this cache holds a key of shape {shapes[0]} for "
                             "every token")
        return None, None, False
    if shapes is False:
        raise ValueError("k: this cache was filled with positions only (append() without "
                         "vectors), so it cannot cache keys from now on; start a new one")
    k = _vector("k", k, None if shapes is None else shapes[0])
    v = _vector("v (which defaults to k)" if v is None else "v", k if v is None else v,
                None if shapes is None else shapes[1])
    return k, v, (k.shape, v.shape)


def _holds_exactly(a, dtype):
    """True when every value of ``a`` survives a round trip through ``dtype``."""
    if a.dtype == dtype or a.size == 0:
        return True
    with np.errstate(invalid="ignore", over="ignore"):  # out of range: unequal, reported below
        back = a.astype(dtype).astype(a.dtype)
    return bool(np.array_equal(back, a))


def _joined_dtype(name, x, cached_dtype, cached, what):
    """The dtype that holds the cached vectors and the new one ``x``: ``np.result_type``, which
    widens (an int key after a float one makes floats). ValueError naming ``name`` and both dtypes
    when it would round a value of ``x`` or of the cached ones (an int64 past 2^53 in float64: the
    nearest float was stored, silently). ``cached()`` gives the cached vectors as one array; it is
    called only when the dtype changes, so an append of the same dtype costs nothing more."""
    dtype = np.result_type(cached_dtype, x.dtype)
    checks = [(lambda: x, name)]
    if dtype != cached_dtype:
        checks.append((cached, f"a cached {what[:-1]}"))
    for values, whose in checks:
        values = values()
        if _holds_exactly(values, dtype):
            continue
        with np.errstate(invalid="ignore", over="ignore"):
            rounded = values.astype(dtype)
            bad = np.flatnonzero(rounded.astype(values.dtype) != values)[0]
        exact = (f" ({dtype} holds integers exactly only up to 2^{np.finfo(dtype).nmant + 1})"
                 if np.issubdtype(dtype, np.floating) else "")
        raise ValueError(f"{name} (dtype {x.dtype}) cannot join the cached {what} (dtype "
                         f"{cached_dtype}) without rounding: both would be stored as {dtype}, "
                         f"which turns {whose}'s {values.flat[bad].item()!r} into "
                         f"{rounded.flat[bad].item()!r}{exact}; give every token's {name} one "
                         f"dtype")
    return dtype


# --------------------------------------------------------------------------- sliding window

class RingBuffer:
    """A sliding-window KV cache of W slots (an int >= 1): position p lives in slot ``p % W``.

    ``append(k, v)`` stores the next position and returns ``(slot, evicted)``, where
    ``evicted`` is the position it overwrote (``None`` while the buffer fills). ``k`` and ``v``
    are 1-D vectors of one shape for every token (``v`` defaults to ``k``), or both left out
    for every token (positions only). The slots take the dtype of the vectors, widened (never
    narrowed) to ``np.result_type`` when a later one needs it: an int key followed by a float
    key makes them float. Nothing is ever truncated or rounded: a vector whose values, or the
    cached ones, the widened dtype would not hold exactly (an int64 past 2^53 in float64) is a
    ValueError naming ``k`` or ``v`` and both dtypes, and the cache is left as it was.
    ``positions`` is the slot array (-1 = empty); ``held_positions()`` the positions held,
    sorted; ``entries()`` gives (positions, keys, values) of the filled slots, in slot order.
    ``StreamingCache`` widens and refuses the same way.
    """

    def __init__(self, W):
        self.W = positive_int("W", W)
        self.positions = np.full(self.W, -1, dtype=np.int64)  # (W,) position held by each slot
        self.keys = None  # (W, d_k), allocated on the first append
        self.values = None  # (W, d_v)
        self.next_position = 0  # p of the next token
        self._shapes = None  # (d_k,), (d_v,) once known; False: positions only

    def append(self, k=None, v=None):
        """Store the next position (with its key ``k`` and value ``v``, or neither); returns
        ``(slot, evicted)``, ``evicted`` the position overwritten or None while filling."""
        k, v, shapes = _token_vectors(k, v, self._shapes)
        if k is not None and self.keys is not None:  # checked before anything changes
            key_dtype = _joined_dtype("k", k, self.keys.dtype, lambda: self._kept(self.keys),
                                      "keys")
            value_dtype = _joined_dtype("v", v, self.values.dtype,
                                        lambda: self._kept(self.values), "values")
        self._shapes = shapes
        p = self.next_position
        slot = p % self.W
        evicted = int(self.positions[slot]) if self.positions[slot] >= 0 else None
        self.positions[slot] = p
        if k is not None:
            if self.keys is None:
                self.keys = np.zeros((self.W,) + k.shape, dtype=k.dtype)
                self.values = np.zeros((self.W,) + v.shape, dtype=v.dtype)
            else:
                self.keys = self.keys.astype(key_dtype, copy=False)
                self.values = self.values.astype(value_dtype, copy=False)
            self.keys[slot], self.values[slot] = k, v
        self.next_position = p + 1
        return slot, evicted

    def _kept(self, slots):
        """The filled slots that stay after the next append (it overwrites one)."""
        filled = self.positions >= 0
        filled[self.next_position % self.W] = False
        return slots[filled]

    def held_positions(self):
        """The positions in the cache, sorted: the window of the next query but one slot."""
        return np.sort(self.positions[self.positions >= 0])

    def entries(self):
        filled = self.positions >= 0
        keys = None if self.keys is None else self.keys[filled]
        values = None if self.values is None else self.values[filled]
        return self.positions[filled], keys, values


def receptive_field(n_layers, W):
    """How far back L stacked windowed layers can carry information: ``L * (W - 1)``."""
    return positive_int("n_layers", n_layers) * (positive_int("W", W) - 1)


def reachable_distance(n_layers, W, n=None):
    """The receptive field counted the slow way: propagate "which positions has the last token
    heard from" through ``n_layers`` applications of the window mask (a check of
    ``receptive_field``). ``n`` defaults to a length long enough to see the whole reach."""
    n_layers, W = positive_int("n_layers", n_layers), positive_int("W", W)
    n = n_layers * (W - 1) + 2 if n is None else positive_int("n", n)
    heard = np.zeros(n, dtype=bool)
    heard[n - 1] = True  # the last token's hidden state, read backwards
    j = np.arange(n)
    for _ in range(n_layers):
        # One application of the causal window mask (query p sees keys p - W + 1 .. p): key j
        # is heard when a heard query p has j <= p < j + W. Counted with a running sum over
        # the queries, so memory stays O(n) rather than the (n, n) mask.
        seen = np.concatenate([[0], np.cumsum(heard)])  # seen[i]: heard queries below i
        heard = (seen[np.minimum(j + W, n)] - seen[j] > 0) | heard
    return int(n - 1 - np.flatnonzero(heard).min())


# --------------------------------------------------------------------------- attention sinks

class StreamingCache:
    """StreamingLLM's cache: the first ``n_sink`` tokens forever plus the ``n_recent`` latest.

    ``append(k, v)`` adds the next token (keys un-rotated, i.e. before RoPE) and evicts the
    oldest non-sink entry once the cache holds more than ``n_sink + n_recent``. ``positions``
    are the original positions, in cache order; ``rope_positions`` are the slot indices
    ``0 .. size - 1`` that StreamingLLM rotates the cached keys (and the query, at ``size``) by.
    Apply RoPE at attention time, e.g. ``lessonlib.rope.apply_rope(cache.keys,
    cache.rope_positions, inv_freq)``.
    """

    def __init__(self, n_sink, n_recent):
        self.n_sink = non_negative_int("n_sink", n_sink)
        self.n_recent = positive_int("n_recent", n_recent)
        self._positions, self._keys, self._values = [], [], []
        self.next_position = 0
        self._shapes = None  # (d_k,), (d_v,) once known; False: positions only
        self._dtypes = None  # (keys', values' dtype) once known: what ``keys`` stacks them as

    @property
    def capacity(self):
        """n_sink + n_recent, the most entries the cache holds."""
        return self.n_sink + self.n_recent

    def append(self, k=None, v=None):
        """Add the next token; returns the evicted original position, or ``None``.

        ``k`` and ``v`` as in ``RingBuffer.append``: 1-D vectors of one shape (copied), or
        both left out for every token; ``keys`` and ``values`` stack them in one dtype, widened
        as RingBuffer widens, and never rounded (an error naming ``k`` or ``v`` instead)."""
        k, v, shapes = _token_vectors(k, v, self._shapes)
        if k is not None:  # checked before anything changes
            self._dtypes = (k.dtype, v.dtype) if self._dtypes is None else (
                _joined_dtype("k", k, self._dtypes[0], lambda: self._kept(self._keys), "keys"),
                _joined_dtype("v", v, self._dtypes[1], lambda: self._kept(self._values),
                              "values"))
        self._shapes = shapes
        self._positions.append(self.next_position)
        self._keys.append(None if k is None else k.copy())
        self._values.append(None if k is None else v.copy())
        self.next_position += 1
        if len(self._positions) > self.capacity:
            i = self.n_sink  # the oldest entry after the sinks
            for kept in (self._keys, self._values):
                del kept[i]
            return self._positions.pop(i)
        return None

    def _kept(self, vectors):
        """The cached vectors that stay after the next append (one is evicted when full)."""
        if len(vectors) >= self.capacity:
            vectors = vectors[:self.n_sink] + vectors[self.n_sink + 1:]
        return np.stack(vectors) if vectors else np.zeros(0)

    def __len__(self):
        return len(self._positions)

    @property
    def positions(self):
        """The original positions held, in cache order (int64)."""
        return np.array(self._positions, dtype=np.int64)

    @property
    def rope_positions(self):
        """0 .. size - 1: the positions StreamingLLM rotates the cached keys by (int64)."""
        return np.arange(len(self), dtype=np.int64)

    @property
    def keys(self):
        """(size, d) un-rotated keys, in cache order (None when appended without vectors)."""
        return None if not self._keys or self._keys[0] is None else np.stack(self._keys)

    @property
    def values(self):
        """(size, d_v) values, in cache order (None when appended without vectors)."""
        return None if not self._values or self._values[0] is None else np.stack(self._values)


def sink_example_scores(n=20, *, sink_score=6.0, seed=3):
    """Notebook 06's sink experiment, with seeded numbers: one query's scores over ``n``
    positions. Position 0 is a heavy sink (score ``sink_score``, value 0); the others draw
    scores from U(0, 2) and values from U(-1, 1), rounded to 2 decimals. Returns
    ``(scores, values)``, both (n,)."""
    n = positive_int("n", n)
    sink_score = check.real("sink_score", sink_score)
    rng = np.random.default_rng(non_negative_int("seed", seed))
    scores, values = rng.uniform(0.0, 2.0, n), np.round(rng.uniform(-1.0, 1.0, n), 2)
    scores[0], values[0] = sink_score, 0.0
    return scores, values


@dataclass(frozen=True)
class SinkReadout:
    """One cache's view of the last query: the positions it holds (``kept``), the softmax weight
    on the recent ones (``recent_weight``, positions >= recent_from) and the ``output``."""
    name: str
    kept: np.ndarray  # positions the cache holds
    recent_weight: float  # softmax weight on positions >= recent_from
    output: float


def _scores_and_values(scores, values):
    scores = check.array("scores", scores, kind="real", ndim=1)
    values = check.array("values", values, kind="real", ndim=1)
    if scores.size == 0 or scores.shape != values.shape:
        raise ValueError("scores and values must be 1-D of one length (at least 1), "
                         f"got {scores.shape} and {values.shape}")
    return scores.astype(np.float64), values.astype(np.float64)


def _kept_positions(kept, n):
    """``kept`` as distinct int positions 0..n-1 (a cache holds each position once)."""
    if isinstance(kept, (list, tuple)) and len(kept) == 0:
        raise ValueError("kept must name at least one position")
    kept = check.array("kept", kept, kind="int", ndim=1)
    if kept.size == 0:
        raise ValueError("kept must name at least one position")
    outside = kept[(kept < 0) | (kept >= n)]
    if outside.size:
        raise ValueError(f"kept must hold positions 0..{n - 1} of the {n} scores, "
                         f"got {int(outside[0])}")
    unique, counts = np.unique(kept, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"kept names position {int(unique[counts > 1][0])} more than once: "
                         "a cache holds each position once")
    return kept.astype(np.int64)


def attention_readout(scores, values, kept, *, recent_from, name=""):
    """Softmax over the ``kept`` positions only, as a cache that holds just those would compute:
    a ``SinkReadout``.

    scores, values (n,) finite; kept: distinct positions 0..n-1; recent_from: the first
    position counted as recent (0..n-1)."""
    scores, values = _scores_and_values(scores, values)
    kept = _kept_positions(kept, scores.size)
    recent_from = check.integer("recent_from", recent_from, minimum=0, maximum=scores.size - 1)
    name = check.text("name", name)
    s = scores[kept]
    p = np.exp(s - s.max())
    p /= p.sum()
    return SinkReadout(name, kept, float(p[kept >= recent_from].sum()), float(p @ values[kept]))


def compare_sink_caches(scores, values, *, n_sink=4, n_recent=8):
    """Notebook 06's three caches for the last query: all keys, the last ``n_recent`` only,
    and ``n_sink`` sinks plus the last ``n_recent``. Returns three ``SinkReadout`` rows."""
    scores, values = _scores_and_values(scores, values)
    n = scores.size
    n_sink, n_recent = non_negative_int("n_sink", n_sink), positive_int("n_recent", n_recent)
    if n_sink + n_recent > n:
        raise ValueError(f"n_sink + n_recent must be <= {n} positions, got {n_sink + n_recent}")
    recent = np.arange(n - n_recent, n)
    caches = [("full cache", np.arange(n)),
              (f"last {n_recent} only", recent),
              (f"{n_sink} sinks + last {n_recent}", np.concatenate([np.arange(n_sink), recent]))]
    return [attention_readout(scores, values, kept, recent_from=n - n_recent, name=name)
            for name, kept in caches]
