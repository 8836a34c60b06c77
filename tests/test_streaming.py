"""lessonlib.streaming: the ring buffer and the StreamingLLM cache of notebook 06."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from lessonlib.attention import naive_attention
from lessonlib.streaming import (RingBuffer, StreamingCache, attention_readout,
                                 compare_sink_caches, reachable_distance, receptive_field,
                                 sink_example_scores)


# --------------------------------------------------------------------------- ring buffer

def test_ring_buffer_trace_of_example_9():
    ring, lines = RingBuffer(4), []
    for pos in range(10):
        slot, evicted = ring.append()
        if pos >= 3:
            lines.append(f"after pos {pos}: slot {slot} gets {pos}"
                         + (f" (evicts {evicted})" if evicted is not None else "")
                         + f", cache = {ring.positions.tolist()}")
    assert lines[:2] == ["after pos 3: slot 3 gets 3, cache = [0, 1, 2, 3]",
                         "after pos 4: slot 0 gets 4 (evicts 0), cache = [4, 1, 2, 3]"]
    assert lines[-1] == "after pos 9: slot 1 gets 9 (evicts 5), cache = [8, 9, 6, 7]"


@given(st.integers(1, 12), st.integers(1, 60))
def test_ring_buffer_holds_exactly_the_last_W_positions(W, n):
    ring = RingBuffer(W)
    rng = np.random.default_rng(W * 100 + n)
    keys = rng.normal(size=(n, 3))
    for p in range(n):
        slot, evicted = ring.append(keys[p], -keys[p])
        assert slot == p % W
        assert evicted == (p - W if p >= W else None)
    assert ring.held_positions().tolist() == list(range(max(0, n - W), n))
    positions, k, v = ring.entries()
    np.testing.assert_array_equal(k, keys[positions])  # each slot kept its own token's key
    np.testing.assert_array_equal(v, -keys[positions])


@given(st.integers(1, 6), st.integers(1, 25), st.integers(0, 2 ** 31))
def test_ring_buffer_attention_equals_the_windowed_mask(W, n, seed):
    """The query at p over the ring's W entries = the contract's window=W attention row."""
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(n, 4)), rng.normal(size=(n, 4)), rng.normal(size=(n, 2))
    ring = RingBuffer(W)
    for p in range(n):
        ring.append(k[p], v[p])
    _, k_ring, v_ring = ring.entries()  # slot order: the order does not matter to attention
    s = k_ring @ q[-1] / 2.0
    p_ring = np.exp(s - s.max())
    out_ring = p_ring / p_ring.sum() @ v_ring
    out_mask = naive_attention(q, k, v, causal=True, window=W)[-1]
    np.testing.assert_allclose(out_ring, out_mask, rtol=1e-10, atol=1e-12)


def test_receptive_field_L_times_W_minus_1():
    assert receptive_field(2, 4) == 6  # position 0 -> 3 in layer 1 -> 6 in layer 2
    for L in range(1, 5):
        for W in range(1, 7):
            assert receptive_field(L, W) == L * (W - 1) == reachable_distance(L, W)
    assert reachable_distance(3, 4, n=5) == 4  # a short sequence caps the reach


def test_reachable_distance_matches_the_full_mask_and_stays_small():
    """The running-sum propagation equals propagating through the (n, n) window mask, and a
    long stack no longer needs that mask (32 layers of W = 4096: 131,072 positions)."""
    for L, W, n in [(1, 1, 5), (2, 3, 9), (3, 4, 5), (4, 7, 40), (5, 2, 3)]:
        p, j = np.arange(n)[:, None], np.arange(n)[None, :]
        mask = (j <= p) & (p - j < W)
        heard = np.zeros(n, dtype=bool)
        heard[-1] = True
        for _ in range(L):
            heard = mask[heard].any(axis=0) | heard
        assert reachable_distance(L, W, n=n) == n - 1 - np.flatnonzero(heard).min()
    assert reachable_distance(32, 4096) == receptive_field(32, 4096) == 131_040
    with pytest.raises(ValueError, match="W"):
        receptive_field(2, 0)


# --------------------------------------------------------------------------- StreamingLLM

def test_streaming_cache_trace_of_example_11():
    cache, lines = StreamingCache(4, 8), []
    for pos in range(20):
        cache.append()
        if pos in (11, 15, 19):
            lines.append(f"after token {pos}: cache {cache.positions.tolist()}, positions used "
                         f"for RoPE {cache.rope_positions[0]}..{cache.rope_positions[-1]}")
    rope = ", positions used for RoPE 0..11"
    assert lines == [
        "after token 11: cache [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]" + rope,
        "after token 15: cache [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15]" + rope,
        "after token 19: cache [0, 1, 2, 3, 12, 13, 14, 15, 16, 17, 18, 19]" + rope]


@given(st.integers(0, 6), st.integers(1, 10), st.integers(1, 50))
def test_streaming_cache_bounded_and_keeps_the_sinks(n_sink, n_recent, n):
    cache = StreamingCache(n_sink, n_recent)
    for p in range(n):
        evicted = cache.append(np.full(2, p), np.full(2, -p))
        assert len(cache) <= n_sink + n_recent
        held = cache.positions.tolist()
        assert held[:min(p + 1, n_sink)] == list(range(min(p + 1, n_sink)))  # sinks always there
        assert evicted == (p - n_recent if p >= n_sink + n_recent else None)  # oldest non-sink
    expected = sorted(set(range(min(n, n_sink))) | set(range(max(0, n - n_recent), n)))
    assert cache.positions.tolist() == expected
    assert cache.rope_positions.tolist() == list(range(len(expected)))
    np.testing.assert_array_equal(cache.keys[:, 0], expected)
    np.testing.assert_array_equal(cache.values[:, 0], -np.array(expected))


@given(st.integers(0, 4), st.integers(1, 8), st.integers(1, 30), st.integers(0, 2 ** 31))
def test_streaming_cache_is_the_contracts_sink_mask(n_sink, n_recent, n, seed):
    """Ignoring RoPE, the cache holds exactly the keys the mask (window, sink_tokens) shows."""
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(n, 4)), rng.normal(size=(n, 4)), rng.normal(size=(n, 3))
    cache = StreamingCache(n_sink, n_recent)
    for p in range(n):
        cache.append(k[p], v[p])
    out_cache = naive_attention(q[-1:], cache.keys, cache.values)[-1]
    out_mask = naive_attention(q, k, v, causal=True, window=n_recent, sink_tokens=n_sink)[-1]
    np.testing.assert_allclose(out_cache, out_mask, rtol=1e-10, atol=1e-12)


def rotate(x, positions, base=10000.0):
    """A naive RoPE for the test: pair (2i, 2i+1) turned by position * base^(-2i/d)."""
    x = np.array(x, dtype=np.float64)
    d = x.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)
    out = x.copy()
    for row, p in enumerate(positions):
        c, s = np.cos(p * theta), np.sin(p * theta)
        a, b = x[row, 0::2], x[row, 1::2]
        out[row, 0::2], out[row, 1::2] = a * c - b * s, a * s + b * c
    return out


def test_slot_positions_need_keys_cached_before_rotation():
    """StreamingLLM rotates by cache slot. From un-rotated cached keys that is one rotation at
    attention time, and the model sees an ordinary sequence at positions 0..11. Keys rotated
    when written carry their original positions and cannot give the same scores."""
    rng = np.random.default_rng(5)
    n, d = 40, 8
    k, q = rng.normal(size=(n, d)), rng.normal(size=d)
    cache = StreamingCache(4, 8)
    rotated_when_written = []
    for p in range(n):
        cache.append(k[p])
        rotated_when_written.append(rotate(k[p:p + 1], [p])[0])
    kept = cache.positions
    slot_q = rotate(q[None], [len(cache)])[0]  # the next query sits at slot 12
    by_slot = rotate(cache.keys, cache.rope_positions) @ slot_q
    fresh = rotate(k[kept], np.arange(len(kept))) @ slot_q  # the same tokens as a new sequence
    np.testing.assert_allclose(by_slot, fresh, rtol=1e-12)
    pre_rotated = np.array(rotated_when_written)[kept] @ slot_q
    assert np.max(np.abs(pre_rotated - by_slot)) > 0.1
    # the distances the query sees: slot order stays within the cache, original ones do not
    assert (len(cache) - cache.rope_positions).max() == 12 and (n - kept).max() == 40


# ------------------------------------------------------------------ notebook 06's three caches

def reference_readout(scores, values, kept, recent_from):
    w = np.exp(scores[kept]) / np.exp(scores[kept]).sum()
    return w[np.asarray(kept) >= recent_from].sum(), w @ values[kept]


def test_example11_three_caches():
    scores, values = sink_example_scores(seed=3)
    full, last8, sinks = compare_sink_caches(scores, values, n_sink=4, n_recent=8)
    assert [len(r.kept) for r in (full, last8, sinks)] == [20, 8, 12]
    assert [r.name for r in (full, last8, sinks)] == [
        "full cache", "last 8 only", "4 sinks + last 8"]
    for r in (full, last8, sinks):
        weight, output = reference_readout(scores, values, r.kept, 12)
        assert r.recent_weight == pytest.approx(weight, rel=1e-12)
        assert r.output == pytest.approx(output, rel=1e-12, abs=1e-15)
    assert last8.recent_weight == pytest.approx(1.0, abs=1e-12)  # all weight forced onto 12-19
    assert full.recent_weight < 0.1 and abs(sinks.recent_weight - full.recent_weight) < 0.01
    assert abs(sinks.output - full.output) < abs(last8.output - full.output) / 5
    # the streaming cache after token 19 holds exactly the "4 sinks + last 8" keys
    cache = StreamingCache(4, 8)
    for _ in range(20):
        cache.append()
    np.testing.assert_array_equal(cache.positions, sinks.kept)


@given(st.integers(0, 2 ** 31))
def test_sinks_restore_the_full_caches_weights_for_any_seed(seed):
    scores, values = sink_example_scores(seed=seed)
    assert scores[0] == 6.0 and values[0] == 0.0
    full, last8, sinks = compare_sink_caches(scores, values)
    assert last8.recent_weight == pytest.approx(1.0)
    assert abs(sinks.recent_weight - full.recent_weight) < 0.02
    assert abs(last8.recent_weight - full.recent_weight) > 0.8


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_recent"):
        StreamingCache(4, 0)
    with pytest.raises(ValueError, match="n_sink"):
        StreamingCache(-1, 8)
    with pytest.raises(ValueError, match="W"):
        RingBuffer(0)
    with pytest.raises(ValueError, match="n_sink"):
        compare_sink_caches(np.zeros(10), np.zeros(10), n_sink=4, n_recent=8)
    with pytest.raises(ValueError, match="kept"):
        attention_readout(np.zeros(3), np.zeros(3), [], recent_from=1)


# --------------------------------------------------------------------------- issue 13's examples

def test_ring_buffer_never_truncates_a_float_key_after_an_int_one():
    """The slots took the dtype of the first key: [1, 2] then [1.5, 2.5] stored [1, 2]."""
    ring = RingBuffer(2)
    ring.append(np.array([1, 2]))
    ring.append(np.array([1.5, 2.5]), np.array([0.25, -0.5]))
    _, keys, values = ring.entries()
    np.testing.assert_array_equal(keys, [[1.0, 2.0], [1.5, 2.5]])
    np.testing.assert_array_equal(values, [[1.0, 2.0], [0.25, -0.5]])
    assert keys.dtype == np.float64
    f32 = RingBuffer(3)
    f32.append(np.ones(2, dtype=np.float32))
    assert f32.keys.dtype == np.float32  # one dtype throughout: kept as it was


@pytest.mark.parametrize("cache", [lambda: RingBuffer(3), lambda: StreamingCache(1, 2)])
def test_a_key_that_would_be_rounded_is_an_error_not_a_nearby_number(cache):
    """Issue 31: widening kept a float key after an int one, but an int64 past 2^53 (cached, or
    new in float slots) was rounded to the nearest float64, silently. Now the append is refused,
    naming k or v and both dtypes, and the cache is left as it was."""
    big = 2**53 + 1
    c = cache()
    c.append(np.array([big, 2]))
    with pytest.raises(ValueError) as err:
        c.append(np.array([1.5, 2.5]))
    assert str(err.value) == (
        "k (dtype float64) cannot join the cached keys (dtype int64) without rounding: both would "
        "be stored as float64, which turns a cached key's 9007199254740993 into "
        "9007199254740992.0 (float64 holds integers exactly only up to 2^53); give every "
        "token's k one dtype")
    assert c.next_position == 1 and c.positions[c.positions >= 0].tolist() == [0]
    assert int(c.keys[0][0]) == big  # unchanged, still exact
    c.append(np.array([7, 8]))  # the same dtype goes on as before
    f = cache()
    f.append(np.array([0.5, 1.0]), np.array([0.25]))
    with pytest.raises(ValueError, match=r"^k \(dtype int64\) cannot join the cached keys \(dtype "
                                         r"float64\) without rounding: .* turns k's "
                                         r"9007199254740993 into 9007199254740992.0"):
        f.append(np.array([big, 0]), np.array([0.5]))
    with pytest.raises(ValueError, match=r"^v \(dtype uint64\) cannot join the cached values "
                                         r"\(dtype float64\)"):
        f.append(np.array([1.0, 2.0]), np.array([2**64 - 1], dtype=np.uint64))
    f.append(np.array([3, 4]), np.array([5], dtype=np.int32))  # small ints: exact in float64
    assert f.keys.dtype == f.values.dtype == np.float64


def test_a_rounded_value_that_is_evicted_by_the_append_is_no_loss():
    ring, sinks = RingBuffer(1), StreamingCache(0, 1)
    for c in (ring, sinks):
        c.append(np.array([2**53 + 1]))
        c.append(np.array([0.5]))  # overwrites / evicts the only int64 key
        assert c.keys.tolist() == [[0.5]]


@pytest.mark.parametrize("cache", [lambda: RingBuffer(3), lambda: StreamingCache(1, 2)])
def test_cached_vectors_keep_one_shape_and_are_all_or_nothing(cache):
    c = cache()
    c.append(np.zeros(3), np.ones(2))
    with pytest.raises(ValueError, match=r"^k must have shape \(3,\)"):
        c.append(np.zeros(4), np.ones(2))
    with pytest.raises(ValueError, match=r"^v must have shape \(2,\)"):
        c.append(np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match=r"^v \(which defaults to k\) must have shape \(2,\)"):
        c.append(np.zeros(3))
    with pytest.raises(ValueError, match="^k is missing"):
        c.append()
    for bad, name in [([1.0, np.nan, 0.0], "k"), (np.zeros((1, 3)), "k"), ("abc", "k"),
                      ([True, False, True], "k"), (np.zeros(3) + 1j, "k")]:
        with pytest.raises(ValueError, match=f"^{name} "):
            c.append(bad, np.ones(2))
    assert c.next_position == 1  # nothing was appended by the refused calls
    positions_only = cache()
    positions_only.append()
    with pytest.raises(ValueError, match="^k: this cache was filled with positions only"):
        positions_only.append(np.zeros(3))
    with pytest.raises(ValueError, match="^v was given without k"):
        cache().append(None, np.zeros(2))


def test_streaming_cache_keeps_copies():
    k = np.arange(3.0)
    cache = StreamingCache(1, 2)
    cache.append(k)
    k[0] = 99.0  # the caller reuses its array
    assert cache.keys[0, 0] == 0.0 and cache.values[0, 0] == 0.0


@pytest.mark.parametrize("call, name", [
    (lambda: StreamingCache(n_sink=True, n_recent=8), "n_sink"),
    (lambda: StreamingCache(4, 8.0), "n_recent"),
    (lambda: RingBuffer(4.0), "W"), (lambda: RingBuffer(True), "W"),
    (lambda: receptive_field(2.0, 4), "n_layers"), (lambda: receptive_field(2, True), "W"),
    (lambda: reachable_distance(2, 4, n=0), "n"), (lambda: reachable_distance(2, 4, n=5.0), "n"),
    (lambda: compare_sink_caches(np.zeros(20), np.zeros(20), n_sink=True), "n_sink"),
    (lambda: compare_sink_caches(np.zeros(20), np.zeros(19)), "values"),
    (lambda: compare_sink_caches(np.zeros(20), np.zeros(20), n_sink=4, n_recent=17), "n_recent"),
    (lambda: sink_example_scores(sink_score="6"), "sink_score"),
    (lambda: sink_example_scores(sink_score=True), "sink_score"),
    (lambda: sink_example_scores(sink_score=np.inf), "sink_score"),
    (lambda: sink_example_scores(seed=1.5), "seed"),  # was numpy's SeedSequence TypeError
    (lambda: sink_example_scores(seed=True), "seed"),
    (lambda: sink_example_scores(seed=-1), "seed"),
])
def test_bad_counts_and_reals_are_named(call, name):
    with pytest.raises(ValueError) as err:
        call()
    assert names_argument(str(err.value), name), str(err.value)


@pytest.mark.parametrize("kept, says", [
    ([5], r"kept must hold positions 0\.\.2 of the 3 scores, got 5"),  # was an IndexError
    ([-1], "got -1"),  # was a readout of position 2
    ([0, 1, 1], "kept names position 1 more than once"),
    ([0.0, 1.0], "kept must hold integers"),  # was cast to int
    ([], "kept must name at least one position"), (np.array([], dtype=int), "at least one"),
    ([[0, 1]], "kept must be 1-D"), ("01", "kept must be an array")])
def test_attention_readout_names_bad_kept_positions(kept, says):
    with pytest.raises(ValueError, match=says):
        attention_readout(np.zeros(3), np.zeros(3), kept, recent_from=1)


@pytest.mark.parametrize("kwargs, name", [
    (dict(recent_from=-1), "recent_from"), (dict(recent_from=3), "recent_from"),
    (dict(recent_from=1.0), "recent_from"), (dict(name=3), "name"),
    (dict(scores=[0.0, np.nan, 1.0]), "scores"), (dict(values=[0.0, np.inf, 1.0]), "values"),
    (dict(scores=np.zeros(4)), "scores"), (dict(scores=[]), "scores"),
])
def test_attention_readout_names_bad_arguments(kwargs, name):
    args = dict(scores=np.zeros(3), values=np.zeros(3), kept=[0, 2], recent_from=1)
    with pytest.raises(ValueError) as err:
        attention_readout(**{**args, **kwargs})
    assert names_argument(str(err.value), name), str(err.value)


def test_valid_readouts_are_what_they_were():
    scores, values = sink_example_scores(seed=3)
    assert scores.dtype == values.dtype == np.float64 and scores[0] == 6.0
    r = attention_readout(scores.astype(np.float32), values, np.arange(12, 20, dtype=np.int32),
                          recent_from=12, name="last 8")
    ref_w, ref_out = reference_readout(scores.astype(np.float32).astype(np.float64), values,
                                       np.arange(12, 20), 12)
    assert r.kept.dtype == np.int64 and r.recent_weight == pytest.approx(ref_w, rel=1e-12)
    assert r.output == pytest.approx(ref_out, rel=1e-12)
    assert sink_example_scores(n=5, sink_score=np.float32(2.5), seed=np.int64(1))[0][0] == 2.5


# --------------------------------------------------------------------------- bad inputs
from _bad import Case, arrays_with, bad_input_tests, ints, names_argument, reals, \
    texts  # noqa: E402

_k, _v = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.0])
_SCORES, _VALUES = sink_example_scores(seed=3)
_VECTORS = dict(k=arrays_with(_k, kind="real", ranks=(1,)) | st.just(np.zeros(0)),
                v=arrays_with(_v, kind="real", ranks=(1,), none_ok=True))
_SV = dict(scores=arrays_with(_SCORES, kind="real", ranks=(1,)) | st.just(_SCORES[:-1]),
           values=arrays_with(_VALUES, kind="real", ranks=(1,)) | st.just(_VALUES[:5]))


_ROUNDED_K = np.array([2**53 + 1, 0, 0])  # int64 that float64 slots would round
_ROUNDED_V = np.array([2**60 + 1, 0])


def _ring_append(k, v):
    ring = RingBuffer(4)
    ring.append(np.ones(3), np.ones(2))
    return ring.append(k, v)


def _sink_append(k, v):
    cache = StreamingCache(1, 2)
    cache.append(np.ones(3), np.ones(2))
    return cache.append(k, v)


BAD_INPUTS = [
    Case(RingBuffer, args=(4,), bad=dict(W=ints(minimum=1))),
    Case(RingBuffer.append, call=_ring_append, args=(_k, _v),
         bad=dict(_VECTORS, k=_VECTORS["k"] | st.sampled_from([np.zeros(4), _ROUNDED_K]),
                  v=_VECTORS["v"] | st.sampled_from([np.zeros(3), _ROUNDED_V]))),
    Case(RingBuffer.append, call=lambda k, v: RingBuffer(4).append(k, v), args=(_k, _v),
         id="RingBuffer.append[first]", bad=_VECTORS),
    Case(StreamingCache, args=(4, 8), bad=dict(n_sink=ints(minimum=0), n_recent=ints(minimum=1))),
    Case(StreamingCache.append, call=_sink_append, args=(_k, _v),
         bad=dict(_VECTORS, k=_VECTORS["k"] | st.sampled_from([np.zeros(4), _ROUNDED_K]),
                  v=_VECTORS["v"] | st.sampled_from([np.zeros(3), _ROUNDED_V]))),
    Case(receptive_field, args=(2, 4), bad=dict(n_layers=ints(minimum=1), W=ints(minimum=1))),
    Case(reachable_distance, args=(3, 4), kwargs=dict(n=5),
         bad=dict(n_layers=ints(minimum=1), W=ints(minimum=1), n=ints(minimum=1, none_ok=True))),
    Case(sink_example_scores, kwargs=dict(n=12, sink_score=5.0, seed=4),
         bad=dict(n=ints(minimum=1), sink_score=reals(), seed=ints(minimum=0))),
    Case(attention_readout, args=(_SCORES, _VALUES, np.array([0, 1, 15, 19])),
         kwargs=dict(recent_from=12, name="sinks"),
         bad=dict(_SV, kept=arrays_with(np.array([0, 1, 15, 19]), kind="int", ranks=(1,))
                  | st.sampled_from([[0, 20], [-1, 3], [4, 4], [0.0, 1.0], []]),
                  recent_from=ints(minimum=0, maximum=19), name=texts())),
    Case(compare_sink_caches, args=(_SCORES, _VALUES), kwargs=dict(n_sink=4, n_recent=8),
         bad=dict(_SV, n_sink=ints(minimum=0) | st.just(13), n_recent=ints(minimum=1)
                  | st.just(17))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
