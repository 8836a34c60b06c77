"""Keeping fewer tokens: the sliding-window ring buffer and the StreamingLLM sink cache.

Examples 9 and 11 of the lesson.

Sliding window (Example 9): a layer with window W lets the query at position p see keys
p - W + 1 .. p, so its cache needs W entries. A ring buffer puts position p in slot p mod W,
overwriting position p - W, the one key no later query needs. Slots come out of order
([4, 1, 2, 3] after position 4 with W = 4); attention sums over a set, so order does not matter,
but RoPE does, so every slot stores its position. L stacked windowed layers carry information
L x (W - 1) positions back.

Attention sinks (Example 11, Xiao et al. 2023, "StreamingLLM"): trained heads park leftover
attention on the first tokens. Evicting them forces that weight onto the recent tokens and the
output changes; keeping ``n_sink`` first tokens plus the ``n_recent`` most recent restores it.
StreamingLLM gives RoPE the positions of the cache slots (0 .. size - 1), not the original ones,
so the model never sees a position beyond its cache. That only works if the cache stores keys
*before* rotation: a rotated key carries its original position for good, and the gap between a
query and a key would then depend on what was evicted in between.
"""
from dataclasses import dataclass

import numpy as np

from ._validate import non_negative_int, positive_int

__all__ = ["RingBuffer", "receptive_field", "reachable_distance", "StreamingCache",
           "sink_example_scores", "SinkReadout", "attention_readout", "compare_sink_caches"]


# --------------------------------------------------------------------------- Example 9

class RingBuffer:
    """A sliding-window KV cache of W slots: position p lives in slot ``p % W``.

    ``append(k, v)`` stores the next position and returns ``(slot, evicted)``, where
    ``evicted`` is the position it overwrote (``None`` while the buffer fills).
    ``positions`` is the slot array (-1 = empty); ``entries()`` gives (positions, keys,
    values) of the filled slots, in slot order.
    """

    def __init__(self, W):
        self.W = positive_int("W", W)
        self.positions = np.full(self.W, -1, dtype=np.int64)  # (W,) position held by each slot
        self.keys = None  # (W, d_k), allocated on the first append
        self.values = None  # (W, d_v)
        self.next_position = 0  # p of the next token

    def append(self, k=None, v=None):
        p = self.next_position
        slot = p % self.W
        evicted = int(self.positions[slot]) if self.positions[slot] >= 0 else None
        self.positions[slot] = p
        if k is not None:
            k, v = np.asarray(k), np.asarray(k if v is None else v)
            if self.keys is None:
                self.keys = np.zeros((self.W,) + k.shape, dtype=k.dtype)
                self.values = np.zeros((self.W,) + v.shape, dtype=v.dtype)
            self.keys[slot], self.values[slot] = k, v
        self.next_position = p + 1
        return slot, evicted

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
    p, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = (j <= p) & (p - j < W)  # (n, n), the causal sliding-window mask
    heard = np.zeros(n, dtype=bool)
    heard[n - 1] = True  # the last token's hidden state, read backwards
    for _ in range(n_layers):
        heard = mask[heard].any(axis=0) | heard
    return int(n - 1 - np.flatnonzero(heard).min())


# --------------------------------------------------------------------------- Example 11

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

    @property
    def capacity(self):
        return self.n_sink + self.n_recent

    def append(self, k=None, v=None):
        """Add the next token; returns the evicted original position, or ``None``."""
        self._positions.append(self.next_position)
        self._keys.append(None if k is None else np.asarray(k))
        self._values.append(None if k is None else np.asarray(k if v is None else v))
        self.next_position += 1
        if len(self._positions) > self.capacity:
            i = self.n_sink  # the oldest entry after the sinks
            for kept in (self._keys, self._values):
                del kept[i]
            return self._positions.pop(i)
        return None

    def __len__(self):
        return len(self._positions)

    @property
    def positions(self):
        return np.array(self._positions, dtype=np.int64)

    @property
    def rope_positions(self):
        return np.arange(len(self), dtype=np.int64)

    @property
    def keys(self):
        """(size, d) un-rotated keys, in cache order (None when appended without vectors)."""
        return None if not self._keys or self._keys[0] is None else np.stack(self._keys)

    @property
    def values(self):
        return None if not self._values or self._values[0] is None else np.stack(self._values)


def sink_example_scores(n=20, *, sink_score=6.0, seed=3):
    """Example 11's setting with our own seeded numbers: one query's scores over ``n``
    positions. Position 0 is a heavy sink (score ``sink_score``, value 0); the others draw
    scores from U(0, 2) and values from U(-1, 1), rounded to 2 decimals. Returns
    ``(scores, values)``, both (n,)."""
    n = positive_int("n", n)
    rng = np.random.default_rng(seed)
    scores, values = rng.uniform(0.0, 2.0, n), np.round(rng.uniform(-1.0, 1.0, n), 2)
    scores[0], values[0] = sink_score, 0.0
    return scores, values


@dataclass(frozen=True)
class SinkReadout:
    """One cache's view of the query: how many keys, the weight on the recent ones, the output."""
    name: str
    kept: np.ndarray  # positions the cache holds
    recent_weight: float  # softmax weight on positions >= recent_from
    output: float


def attention_readout(scores, values, kept, *, recent_from, name=""):
    """Softmax over the ``kept`` positions only, as a cache that holds just those would compute."""
    scores, values = np.asarray(scores, dtype=np.float64), np.asarray(values, dtype=np.float64)
    if scores.shape != values.shape or scores.ndim != 1:
        raise ValueError("scores and values must be 1-D of one length, "
                         f"got {scores.shape} and {values.shape}")
    kept = np.asarray(kept, dtype=np.int64)
    if kept.size == 0:
        raise ValueError("kept must name at least one position")
    s = scores[kept]
    p = np.exp(s - s.max())
    p /= p.sum()
    return SinkReadout(name, kept, float(p[kept >= recent_from].sum()), float(p @ values[kept]))


def compare_sink_caches(scores, values, *, n_sink=4, n_recent=8):
    """Example 11's three caches for the last query: all keys, the last ``n_recent`` only,
    and ``n_sink`` sinks plus the last ``n_recent``. Returns three ``SinkReadout`` rows."""
    n = len(scores)
    n_sink, n_recent = non_negative_int("n_sink", n_sink), positive_int("n_recent", n_recent)
    if n_sink + n_recent > n:
        raise ValueError(f"n_sink + n_recent must be <= {n} positions, got {n_sink + n_recent}")
    recent = np.arange(n - n_recent, n)
    caches = [("full cache", np.arange(n)),
              (f"last {n_recent} only", recent),
              (f"{n_sink} sinks + last {n_recent}", np.concatenate([np.arange(n_sink), recent]))]
    return [attention_readout(scores, values, kept, recent_from=n - n_recent, name=name)
            for name, kept in caches]
