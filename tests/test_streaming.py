"""lessonlib.streaming: the ring buffer (Example 9) and the StreamingLLM cache (Example 11)."""
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


# ------------------------------------------------------------------ Example 11's comparison

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
