import math
import tracemalloc
from collections import Counter

import numpy as np
import pytest
from _support import needs, optional
from hypothesis import given, strategies as st

from lessonlib import attention as A
from lessonlib.attention import (MASK_HIDDEN, MASK_SINK, MASK_WINDOW, TILE_FULL, TILE_MASKED,
                                 TILE_SKIPPED, attention_mask, block_map, key_blocks,
                                 mask_codes, naive_attention, tiled_attention)

torch = optional("torch")  # torch's SDPA is an independent reference where torch is installed


def visible(p, j, causal, window, sink_tokens):
    """The contract's rule for one (query position, key) pair, written out in plain Python."""
    if causal and j > p:
        return False
    if window is not None and not (p - j < window or j < sink_tokens):
        return False
    return True


def reference(q, k, v, causal=False, window=None, sink_tokens=0, sink_logits=None, scale=None):
    """Independent float64 reference: one query row at a time, math.exp, no tiling, no masks."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    squeeze = q.ndim == 2
    if squeeze:
        q, k, v = q[None], k[None], v[None]
    hq, nq, d = q.shape
    hkv, nk, _ = k.shape
    scale = 1 / math.sqrt(d) if scale is None else scale
    out = np.zeros((hq, nq, v.shape[-1]))
    for h in range(hq):
        kv = h // (hq // hkv)
        for i in range(nq):
            p = nk - nq + i
            keys = [j for j in range(nk) if visible(p, j, causal, window, sink_tokens)]
            logits = [float(q[h, i] @ k[kv, j]) * scale for j in keys]
            extra = [] if sink_logits is None else [float(sink_logits[h])]
            m = max(logits + extra)
            w = [math.exp(x - m) for x in logits]
            total = math.fsum(w + [math.exp(x - m) for x in extra])
            out[h, i] = sum(wj * v[kv, j] for wj, j in zip(w, keys)) / total
    return out[0] if squeeze else out


def rand(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


CASES = [
    dict(),
    dict(causal=True),
    dict(window=5),
    dict(causal=True, window=1),
    dict(causal=True, window=6, sink_tokens=2),
    dict(causal=True, window=100),  # larger than n
    dict(causal=True, sink_logits=np.array([0.5, -1.0, 2.0, 0.0])),
    dict(causal=True, window=4, sink_tokens=3, sink_logits=np.array([3.0, 1.0, -2.0, 0.0])),
    dict(scale=0.3),
]


@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("hq, hkv, nq, nk", [(4, 4, 19, 19), (4, 2, 7, 23), (4, 1, 1, 30)])
def test_naive_and_tiled_match_the_reference(kw, hq, hkv, nq, nk):
    rng = np.random.default_rng(hq * 100 + nq)
    q, k, v = rand(rng, hq, nq, 8), rand(rng, hkv, nk, 8), rand(rng, hkv, nk, 5)
    ref = reference(q, k, v, **kw)
    np.testing.assert_allclose(naive_attention(q, k, v, **kw), ref, rtol=2e-5, atol=2e-6)
    for bq, bk in [(4, 8), (5, 3), (64, 64), (1, 1)]:
        out = tiled_attention(q, k, v, block_q=bq, block_k=bk, **kw)
        assert out.shape == ref.shape and out.dtype == np.float32
        np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-6)


def test_float64_in_float64_out_to_1e12():
    rng = np.random.default_rng(1)
    q, k, v = rand(rng, 2, 13, 4, dtype=np.float64), rand(rng, 2, 17, 4, dtype=np.float64), \
        rand(rng, 2, 17, 4, dtype=np.float64)
    ref = reference(q, k, v, causal=True, window=5, sink_tokens=1)
    for f in (naive_attention, tiled_attention):
        out = f(q, k, v, causal=True, window=5, sink_tokens=1)
        assert out.dtype == np.float64
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-13)


def test_two_dimensional_inputs_give_two_dimensional_output():
    rng = np.random.default_rng(2)
    q, k, v = rand(rng, 9, 4), rand(rng, 12, 4), rand(rng, 12, 3)
    out = tiled_attention(q, k, v, causal=True, block_q=4, block_k=4)
    assert out.shape == (9, 3)
    np.testing.assert_allclose(out, reference(q, k, v, causal=True), rtol=2e-5, atol=2e-6)


def test_window_of_one_returns_each_positions_own_value():
    rng = np.random.default_rng(3)
    q, k, v = rand(rng, 2, 10, 4), rand(rng, 2, 10, 4), rand(rng, 2, 10, 4)
    for f in (naive_attention, tiled_attention):
        np.testing.assert_allclose(f(q, k, v, causal=True, window=1), v, rtol=1e-6)


def test_decode_row_equals_last_row_of_prefill():
    rng = np.random.default_rng(4)
    q, k, v = rand(rng, 8, 40, 16), rand(rng, 2, 40, 16), rand(rng, 2, 40, 16)
    full = tiled_attention(q, k, v, causal=True, window=9, sink_tokens=2, block_q=8, block_k=8)
    step = tiled_attention(q[:, -1:], k, v, causal=True, window=9, sink_tokens=2, block_q=8,
                           block_k=8)
    np.testing.assert_allclose(step, full[:, -1:], rtol=1e-5, atol=1e-6)


@needs("torch")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("hq, hkv, nq, nk", [(8, 8, 33, 33), (8, 2, 33, 33), (8, 1, 5, 47)])
def test_against_torch_sdpa(causal, hq, hkv, nq, nk):
    rng = np.random.default_rng(5)
    q, k, v = rand(rng, hq, nq, 16), rand(rng, hkv, nk, 16), rand(rng, hkv, nk, 16)
    # SDPA's is_causal aligns the mask top-left; pass the contract's bottom-right mask explicitly.
    mask = torch.tensor([[visible(nk - nq + i, j, causal, None, 0) for j in range(nk)]
                         for i in range(nq)])
    expect = torch.nn.functional.scaled_dot_product_attention(
        torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v), attn_mask=mask,
        enable_gqa=True).numpy()
    for f in (naive_attention, tiled_attention):
        np.testing.assert_allclose(f(q, k, v, causal=causal), expect, rtol=1e-4, atol=1e-5)


@needs("torch")
def test_against_torch_sdpa_windowed():
    rng = np.random.default_rng(6)
    q, k, v = rand(rng, 4, 50, 8), rand(rng, 4, 50, 8), rand(rng, 4, 50, 8)
    mask = torch.from_numpy(attention_mask(50, 50, causal=True, window=7, sink_tokens=2))
    expect = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), attn_mask=mask).numpy()
    out = tiled_attention(q, k, v, causal=True, window=7, sink_tokens=2, block_q=16, block_k=16)
    np.testing.assert_allclose(out, expect, rtol=1e-4, atol=1e-5)


@given(nq=st.integers(1, 40), extra=st.integers(0, 20), group=st.sampled_from([(8, 2), (8, 1),
       (2, 2), (4, 2)]), causal=st.booleans(), window=st.one_of(st.none(), st.integers(1, 70)),
       sink_tokens=st.integers(0, 5), use_sink_logits=st.booleans(), bq=st.integers(1, 24),
       bk=st.integers(1, 24), seed=st.integers(0, 2**31 - 1))
def test_tiled_equals_naive_over_random_shapes(nq, extra, group, causal, window, sink_tokens,
                                               use_sink_logits, bq, bk, seed):
    hq, hkv = group
    nk = nq + extra
    rng = np.random.default_rng(seed)
    q, k, v = rand(rng, hq, nq, 8), rand(rng, hkv, nk, 8), rand(rng, hkv, nk, 6)
    sinks = rng.standard_normal(hq) * 3 if use_sink_logits else None
    kw = dict(causal=causal, window=window, sink_tokens=sink_tokens, sink_logits=sinks)
    np.testing.assert_allclose(tiled_attention(q, k, v, block_q=bq, block_k=bk, **kw),
                               naive_attention(q, k, v, **kw), rtol=3e-5, atol=3e-6)


def test_mask_matches_the_rule():
    for nq, nk, kw in [(5, 9, dict(causal=True)), (9, 9, dict(causal=True, window=3, sink_tokens=2)),
                       (4, 4, dict(window=2)), (1, 6, dict(causal=True, window=2))]:
        expect = [[visible(nk - nq + i, j, kw.get("causal", False), kw.get("window"),
                           kw.get("sink_tokens", 0)) for j in range(nk)] for i in range(nq)]
        assert attention_mask(nq, nk, **kw).tolist() == expect


@given(n=st.integers(1, 80), extra=st.integers(0, 30), causal=st.booleans(),
       window=st.one_of(st.none(), st.integers(1, 90)), sink_tokens=st.integers(0, 9),
       bq=st.integers(1, 20), bk=st.integers(1, 20))
def test_key_blocks_visits_exactly_the_blocks_with_a_visible_key(n, extra, causal, window,
                                                                 sink_tokens, bq, bk):
    nk = n + extra
    mask = attention_mask(n, nk, causal=causal, window=window, sink_tokens=sink_tokens)
    for i0 in range(0, n, bq):
        i1 = min(i0 + bq, n)
        visited = key_blocks(nk - n + i0, nk - n + i1, nk, bk, causal=causal, window=window,
                             sink_tokens=sink_tokens)
        needed = [j0 for j0 in range(0, nk, bk) if mask[i0:i1, j0:j0 + bk].any()]
        assert visited == needed


def test_causal_and_window_skip_blocks():
    full = key_blocks(0, 64, 1024, 64)
    assert len(full) == 16
    assert key_blocks(0, 64, 1024, 64, causal=True) == [0]
    assert key_blocks(960, 1024, 1024, 64, causal=True, window=128, sink_tokens=4) == [0, 832, 896,
                                                                                      960]


def test_tiled_never_holds_the_score_matrix():
    """Peak memory stays near a few tiles per head, far below one (h, n, n) score matrix."""
    rng = np.random.default_rng(7)
    h, n, d, bq, bk = 2, 1024, 16, 64, 64
    q, k, v = rand(rng, h, n, d), rand(rng, h, n, d), rand(rng, h, n, d)
    tracemalloc.start()
    tiled_attention(q, k, v, causal=True, block_q=bq, block_k=bk, threads=1)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    tile_bytes = h * bq * bk * 4
    out_bytes = h * n * d * 4
    assert peak < out_bytes + 4 * tile_bytes + 8 * h * bq * d * 4 + 64 * 1024
    assert peak < h * n * n * 4 / 20  # vs the naive score matrix


THREADS = (1, 2, 3, 8, 16)


def _record_work(monkeypatch, f):
    """Run f() and return what it computed on: the arguments of every unit (arrays by shape,
    in any order, since threads finish units in any order) and the operand shapes of every
    matmul (the calls whose BLAS kernel, hence summation order, depends on the shape)."""
    import lessonlib.attention as A

    units, matmuls = [], []
    unit, matmul = A._tiled_unit, np.matmul

    def unit_spy(*args):
        units.append(tuple(a.shape if isinstance(a, np.ndarray) else a for a in args))
        return unit(*args)

    def matmul_spy(x, y, *args, **kw):
        matmuls.append((np.shape(x), np.shape(y)))
        return matmul(x, y, *args, **kw)

    with monkeypatch.context() as mp:
        mp.setattr(A, "_tiled_unit", unit_spy)
        mp.setattr(np, "matmul", matmul_spy)
        out = f()
    return out, Counter(units), Counter(matmuls)


@pytest.mark.parametrize("hkv", [1, 2])
@pytest.mark.parametrize("g", [1, 4])
def test_units_and_matmul_shapes_do_not_depend_on_threads(monkeypatch, hkv, g):
    """The unit of work is one KV head with its whole query group x one query block, whatever
    the thread count: the old schedule split query groups (or batched KV heads) by thread count,
    which changed the matmul shapes and, on OpenBLAS Haswell kernels, the rounding."""
    rng = np.random.default_rng(10)
    nq, nk, bq, bk = 37, 45, 8, 16  # nq not a multiple of block_q: a short last block
    q, k, v = rand(rng, hkv * g, nq, 8), rand(rng, hkv, nk, 8), rand(rng, hkv, nk, 6)
    kw = dict(causal=True, window=20, sink_tokens=3, block_q=bq, block_k=bk)
    seen = {t: _record_work(monkeypatch, lambda: tiled_attention(q, k, v, threads=t, **kw))
            for t in THREADS}
    _, units, matmuls = seen[1]
    n_blocks = -(-nq // bq)
    assert sum(units.values()) == hkv * n_blocks
    assert {u[0] for u in units} == {(g, bq, 8), (g, nq % bq, 8)}  # q of a unit: the whole group
    assert all(s[0][0] in (g * bq, g * (nq % bq)) for s in matmuls)  # g * bq stacked rows
    for t in THREADS[1:]:
        out, units_t, matmuls_t = seen[t]
        assert units_t == units, f"threads={t} changed the units"
        assert matmuls_t == matmuls, f"threads={t} changed the matmul shapes"
        np.testing.assert_array_equal(out, seen[1][0])


@pytest.mark.parametrize("hq, hkv, nq, nk, bq, bk, kw", [
    (8, 1, 70, 70, 16, 16, dict(causal=True)),  # MQA
    (8, 2, 70, 70, 16, 16, dict(causal=True)),  # GQA
    (4, 4, 53, 53, 7, 11, dict()),  # dense, odd block sizes
    (8, 2, 61, 61, 9, 13, dict(causal=True, window=12, sink_tokens=3)),
    (8, 1, 40, 64, 8, 8, dict(causal=True, sink_logits=np.linspace(-2.0, 2.0, 8))),
    (8, 2, 1, 90, 4, 16, dict(causal=True, window=30, sink_tokens=2,
                              sink_logits=np.linspace(1.0, -1.0, 8))),  # decode
])
def test_threads_do_not_change_the_result(hq, hkv, nq, nk, bq, bk, kw):
    rng = np.random.default_rng(8)
    q, k, v = rand(rng, hq, nq, 8), rand(rng, hkv, nk, 8), rand(rng, hkv, nk, 8)
    one = tiled_attention(q, k, v, threads=1, block_q=bq, block_k=bk, **kw)
    np.testing.assert_allclose(one, naive_attention(q, k, v, **kw), rtol=3e-5, atol=3e-6)
    for t in THREADS[1:] + (None,):
        np.testing.assert_array_equal(
            tiled_attention(q, k, v, threads=t, block_q=bq, block_k=bk, **kw), one,
            err_msg=f"threads={t}")


BAD = [
    (dict(q=np.zeros((2, 3, 4)), k=np.zeros((2, 3, 5)), v=np.zeros((2, 3, 4))), "k's last dim"),
    (dict(q=np.zeros((3, 3, 4)), k=np.zeros((2, 3, 4)), v=np.zeros((2, 3, 4))), "hq % hkv"),
    (dict(q=np.zeros((2, 5, 4)), k=np.zeros((2, 3, 4)), v=np.zeros((2, 3, 4))), "nq"),
    (dict(q=np.zeros((2, 3, 4)), k=np.zeros((2, 3, 4)), v=np.zeros((2, 4, 4))), "v must"),
    (dict(q=np.zeros((2, 2, 3, 4)), k=np.zeros((2, 3, 4)), v=np.zeros((2, 3, 4))), "q must"),
    (dict(q=np.zeros((3, 4)), k=np.zeros((2, 3, 4)), v=np.zeros((2, 3, 4))), "must all be 2-D"),
    (dict(q=np.zeros((2, 3, 4), dtype=int), k=np.zeros((2, 3, 4)), v=np.zeros((2, 3, 4))), "q must"),
    (dict(window=0), "window"),
    (dict(window=2.5), "window"),
    (dict(sink_tokens=-1), "sink_tokens"),
    (dict(sink_logits=np.zeros(3)), "sink_logits"),
    (dict(sink_logits=np.array([np.nan, 0.0])), "sink_logits"),
    (dict(scale=-1.0), "scale"),
    (dict(causal="yes"), "causal"),
]


@pytest.mark.parametrize("kw, match", BAD)
@pytest.mark.parametrize("f", [naive_attention, tiled_attention])
def test_bad_input_names_the_argument(f, kw, match):
    args = dict(q=np.zeros((2, 3, 4)), k=np.zeros((2, 3, 4)), v=np.zeros((2, 3, 4)))
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        f(**args)


@pytest.mark.parametrize("kw, match", [(dict(block_q=0), "block_q"), (dict(block_k=-2), "block_k"),
                                       (dict(block_q=1.5), "block_q"), (dict(threads=0), "threads")])
def test_bad_block_sizes(kw, match):
    x = np.zeros((2, 3, 4))
    with pytest.raises(ValueError, match=match):
        tiled_attention(x, x, x, **kw)


@pytest.mark.parametrize("args, kw, match", [((0, 3), {}, "nq"), ((3, 2), {}, "nq"),
                                             ((2, 2), dict(window=0), "window")])
def test_bad_mask_arguments(args, kw, match):
    with pytest.raises(ValueError, match=match):
        attention_mask(*args, **kw)


def test_blas_threads_are_limited_inside_and_restored_after(monkeypatch):
    from threadpoolctl import threadpool_info

    import lessonlib.attention as A

    before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    seen = []
    original = A._tiled_unit

    def spy(*args):
        seen.append([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"])
        return original(*args)

    rng = np.random.default_rng(9)
    q, k, v = rand(rng, 4, 20, 8), rand(rng, 2, 20, 8), rand(rng, 2, 20, 8)
    with monkeypatch.context() as mp:
        mp.setattr(A, "_tiled_unit", spy)
        out = tiled_attention(q, k, v, causal=True, block_q=8, block_k=8)
    np.testing.assert_allclose(out, naive_attention(q, k, v, causal=True), rtol=1e-5, atol=1e-6)
    assert seen and all(all(n == 1 for n in s) for s in seen)
    assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"] == before


@pytest.mark.parametrize("f", [naive_attention, tiled_attention])
@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_inputs_name_the_array(f, name, bad):
    """NaN or inf in an input used to come back as NaN rows: now an error that names the array."""
    rng = np.random.default_rng(3)
    arrays = dict(q=rand(rng, 4, 9, 8), k=rand(rng, 2, 12, 8), v=rand(rng, 2, 12, 8))
    arrays[name][1, 5, 2] = bad
    with pytest.raises(ValueError, match=rf"^{name} holds non-finite values .* at index \(1, 5, 2\)"):
        f(**arrays, causal=True)


@pytest.mark.parametrize("f", [naive_attention, tiled_attention])
def test_finite_inputs_that_overflow_the_scores_say_so(f):
    """Huge finite q overflows float32 scores into NaN; naive and tiled both say why instead."""
    rng = np.random.default_rng(4)
    q, k, v = rand(rng, 2, 6, 8) * 1e20, rand(rng, 2, 6, 8) * 1e20, rand(rng, 2, 6, 8)
    with pytest.raises(ValueError, match=r"overflowed the scores in float32: .* scale q or k down"):
        f(q, k, v, causal=True)
    out = f(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), causal=True)
    assert np.isfinite(out).all()  # float64 holds these scores: a result, not an error


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_sink_that_swamps_every_key_is_an_error_not_zeros(dtype):
    """Issue 31: sink logits of 1e308 (finite) made naive and tiled attention return zeros: the
    sink's exp took all the weight and every key's exp(score - sink) underflowed to 0. Now both
    refuse it with the same message, naming sink_logits, the head and the query."""
    rng = np.random.default_rng(31)
    q, k, v = (rand(rng, 2, 4, 8, dtype=dtype) for _ in range(3))
    messages = set()
    for f in (naive_attention, tiled_attention):
        with pytest.raises(ValueError) as err:
            f(q, k, v, causal=True, sink_logits=np.array([0.0, 1e30]))
        message = str(err.value)
        assert message.startswith(f"sink_logits[1] = 1e+30 swamps every key of query head 1: at "
                                  f"query 0 the keys' weights exp(score - sink) sum to 0 (the "
                                  f"sink's is 1), below {np.dtype(dtype).name}'s smallest normal")
        assert "output row would be 0" in message
        messages.add(message)
    assert len(messages) == 1
    # a sink that takes nearly all the weight, but leaves the keys a normal number, is a result
    for f in (naive_attention, tiled_attention):
        out = f(q, k, v, causal=True, sink_logits=np.array([0.0, 60.0]))
        np.testing.assert_allclose(out, reference(q, k, v, causal=True, sink_logits=[0.0, 60.0]),
                                   rtol=1e-4, atol=1e-30)
        assert np.abs(out[1]).max() > 0


def test_the_probe_sink_of_1e308_names_sink_logits():
    """The user's probe, in both working dtypes: float64 underflows, float32 cannot hold it."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 4, 8)) for _ in range(3))
    sinks = np.array([1e308, 1e308])
    for f in (naive_attention, tiled_attention):
        with pytest.raises(ValueError, match=r"^sink_logits\[0\] = 1e\+308 swamps every key of "
                                             r"query head 0: .* below float64's smallest normal "
                                             r"number 2.23e-308"):
            f(q, k, v, sink_logits=sinks)
        with pytest.raises(ValueError, match=r"^sink_logits\[0\] = 1e\+308 does not fit "
                                             r"float32, the dtype attention is computed in"):
            f(*(x.astype(np.float32) for x in (q, k, v)), sink_logits=sinks)


def _zeros_view(*shape):
    """A read-only all-zero float32 array of any shape that takes no memory."""
    return np.broadcast_to(np.float32(0), shape)


def test_absurd_sizes_are_refused_before_anything_is_allocated():
    """Issue 31: attention_mask(10**6, 10**6) ended in numpy's MemoryError (931 GiB of bool)."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as err:
            attention_mask(10**6, 10**6)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(err.value) == (
        "nq x nk = 1,000,000 x 1,000,000 = 1,000,000,000,000 entries (931.3 GiB as bool) is "
        "more than attention_mask builds (lessonlib.attention builds at most 2^31 = "
        "2,147,483,648 entries per array); ask for the rows you need: the last nq queries "
        "(nq = 1 is one query's row)")
    assert peak < 2**20
    assert attention_mask(1, 10**6, causal=True).shape == (1, 10**6)  # one query's row is fine
    x = _zeros_view(1, 50_000, 1)  # a score matrix of 2.5e9 entries from 200 KB of inputs
    with pytest.raises(ValueError, match=r"^q and k: the score matrix hq x nq x nk = 1 x 50,000 "
                                         r"x 50,000 = 2,500,000,000 entries \(9.3 GiB as "
                                         r"float32\) is more than naive_attention builds .*; "
                                         r"tiled_attention computes the same"):
        naive_attention(x, x, x)
    with pytest.raises(ValueError, match=r"^block_q and block_k: each thread's scratch, .* = "
                                         r"\(1 x 50,000\) x \(1 \+ 50,000\) = .* lower block_q "
                                         r"or block_k$"):
        tiled_attention(x, x, x, block_q=50_000, block_k=50_000)
    q, k, v = _zeros_view(2048, 2048, 1), _zeros_view(1, 2048, 1), _zeros_view(1, 2048, 2048)
    for f in (naive_attention, tiled_attention):  # an output bigger than every input
        with pytest.raises(ValueError, match=r"^q and (k|v): .* hq x (nq|nk) x (nk|d|dv) ="):
            f(q, k, v)
    with pytest.raises(ValueError, match=r"^q and v: the output hq x nq x dv = 2,048 x 2,048 x "
                                         r"2,048 = 8,589,934,592 entries \(32.0 GiB"):
        tiled_attention(q, k, v)
    with pytest.raises(ValueError, match=r"^nk and block_k: the key blocks to visit "
                                         r"\(1,000,000,000,000 keys in blocks of 1\)"):
        key_blocks(0, 1, 10**12, 1)
    assert key_blocks(0, 1, 10**12, 1, causal=True) == [0]  # causal: one block to visit
    with pytest.raises(ValueError, match=r"^n and block: T x T tiles, T = ceil\(n / block\)"):
        block_map(10**7, 32)
    with pytest.raises(ValueError, match=r"^n x n = 100,000 x 100,000 = 10,000,000,000 entries "
                                         r"\(9.3 GiB as int8\) is more than mask_codes builds"):
        mask_codes(10**5, 8, 2)


def test_the_size_limit_is_the_entries_of_one_array():
    A._check_entries("n", A._MAX_ENTRIES, 8, "float64", "f", "")  # at the limit: allowed
    with pytest.raises(ValueError, match=r"^n = 2,147,483,649 entries \(16.0 GiB as float64\)"):
        A._check_entries("n", A._MAX_ENTRIES + 1, 8, "float64", "f", "")
    assert A._MAX_ENTRIES == 2**31


@pytest.mark.parametrize("kw, match", [(dict(block_k=0), "block_k"), (dict(block_k=2.5), "block_k"),
                                       (dict(window=0), "window"), (dict(window=-3), "window"),
                                       (dict(causal="no"), "causal"), (dict(nk=0), "nk")])
def test_key_blocks_names_a_bad_argument(kw, match):
    args = dict(q_lo=0, q_hi=8, nk=16, block_k=4)
    args.update({k: v for k, v in kw.items() if k in args})
    opts = {k: v for k, v in kw.items() if k not in args}
    with pytest.raises(ValueError, match=match):
        key_blocks(args["q_lo"], args["q_hi"], args["nk"], args["block_k"], **opts)


# --------------------------------------------------------------------------- tile and cell codes

@given(n=st.integers(1, 90), block=st.integers(1, 40), causal=st.booleans())
def test_block_map_classifies_each_tile_by_its_pairs(n, block, causal):
    """Against the rule itself, pair by pair: a tile is skipped iff no query of it sees a key
    of it, full iff every query sees every key (its real rows and keys: a last block may be
    short), masked otherwise; and visited tiles are the plan key_blocks gives tiled_attention."""
    codes = block_map(n, block, causal=causal)
    t = -(-n // block)
    assert codes.shape == (t, t) and codes.dtype == np.int8
    for i in range(t):
        rows = range(i * block, min(i * block + block, n))
        plan = {j0 // block for j0 in key_blocks(rows[0], rows[-1] + 1, n, block, causal=causal)}
        for j in range(t):
            seen = [visible(p, k, causal, None, 0) for p in rows
                    for k in range(j * block, min(j * block + block, n))]
            expect = TILE_SKIPPED if not any(seen) else TILE_FULL if all(seen) else TILE_MASKED
            assert codes[i, j] == expect, (i, j)
            assert (codes[i, j] != TILE_SKIPPED) == (j in plan), (i, j)


def test_block_map_by_hand():
    # n = 10, B = 4: blocks of 4, 4 and 2 tokens. Causal: the diagonal tiles need the mask,
    # the tiles below it are full, those above it skipped.
    assert block_map(10, 4).tolist() == [[TILE_MASKED, TILE_SKIPPED, TILE_SKIPPED],
                                         [TILE_FULL, TILE_MASKED, TILE_SKIPPED],
                                         [TILE_FULL, TILE_FULL, TILE_MASKED]]
    assert (block_map(10, 4, causal=False) == TILE_FULL).all()  # no mask, nothing hidden
    assert block_map(1, 64).tolist() == [[TILE_FULL]]  # one query, one key: nothing hidden
    assert (TILE_SKIPPED, TILE_MASKED, TILE_FULL) == (0, 1, 2)  # plots index colours by code


def test_block_map_is_the_plan_tiled_attention_runs(monkeypatch):
    """The tiles tiled_attention computes, and those it masks, are block_map's."""
    codes = block_map(30, 8)
    seen = {}
    real = A._tile_fully_visible

    def spy(q_lo, q_hi, j0, j1, *args):
        full = real(q_lo, q_hi, j0, j1, *args)
        seen[(q_lo // 8, j0 // 8)] = TILE_FULL if full else TILE_MASKED
        return full

    monkeypatch.setattr(A, "_tile_fully_visible", spy)
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((30, 4)) for _ in range(3))
    tiled_attention(q, k, v, causal=True, block_q=8, block_k=8, threads=1)
    assert seen == {(i, j): int(codes[i, j]) for i, j in zip(*np.nonzero(codes))}


def test_mask_codes_classify_each_cell_by_the_rule():
    for n, window, sinks in [(10, 4, 2), (17, 5, 0), (12, None, 3), (9, 20, 4), (16, 1, 16)]:
        codes = mask_codes(n, window, sinks)
        assert codes.shape == (n, n) and codes.dtype == np.int8
        for p in range(n):
            for j in range(n):
                if not visible(p, j, True, window, sinks):
                    expect = MASK_HIDDEN
                elif visible(p, j, True, window, 0):
                    expect = MASK_WINDOW
                else:
                    expect = MASK_SINK
                assert codes[p, j] == expect, (n, window, sinks, p, j)
        np.testing.assert_array_equal(codes != MASK_HIDDEN,
                                      attention_mask(n, n, causal=True, window=window,
                                                     sink_tokens=sinks))


def test_mask_codes_by_hand():
    codes = mask_codes(10, 4, 2)  # W = 4, 2 sinks: query 9 sees 6..9 and the sinks 0, 1
    assert codes[9].tolist() == [2, 2, 0, 0, 0, 0, 1, 1, 1, 1]
    assert codes[3].tolist() == [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]  # the sinks are in its window
    assert (MASK_HIDDEN, MASK_WINDOW, MASK_SINK) == (0, 1, 2)  # plots index colours by code


# --------------------------------------------------------------------------- bad inputs
# Every argument of the public functions, fed what a careful user might pass by mistake: each
# must be a ValueError naming the argument (tests/_bad.py; coverage in test_validate.py).
from _bad import Case, arrays_with, bad_input_tests, flags, ints, reals  # noqa: E402

_rng = np.random.default_rng(7)
_Q, _K, _V = rand(_rng, 4, 5, 8), rand(_rng, 2, 9, 8), rand(_rng, 2, 9, 3)
_MASK = dict(causal=flags(), window=ints(minimum=1, none_ok=True), sink_tokens=ints(minimum=0))
_QKV = dict(q=arrays_with(_Q, ranks=(2, 3)), k=arrays_with(_K, ranks=(2, 3)),
            v=arrays_with(_V, ranks=(2, 3)),
            sink_logits=arrays_with(np.zeros(4), kind="real", none_ok=True) | st.sampled_from(
                [np.zeros(3), np.array([0.0, 1e308, 0.0, 0.0]),  # past float32
                 np.array([0.0, 0.0, 200.0, 0.0])]),  # swamps every key in float32
            scale=reals(above=0.0, none_ok=True), **_MASK)
_ATTN_KW = dict(causal=True, window=4, sink_tokens=1, sink_logits=np.array([0.5, 0.0, 1.0, -1.0]))

BAD_INPUTS = [
    Case(attention_mask, args=(5, 9), kwargs=dict(causal=True, window=3),
         bad=dict(nq=ints(minimum=1) | st.just(10), nk=ints(minimum=1) | st.just(10**12),
                  **_MASK)),
    Case(naive_attention, args=(_Q, _K, _V), kwargs=_ATTN_KW, bad=_QKV),
    Case(tiled_attention, args=(_Q, _K, _V), kwargs=dict(_ATTN_KW, block_q=2, block_k=3),
         bad=dict(_QKV, block_q=ints(minimum=1), block_k=ints(minimum=1),
                  threads=ints(minimum=1, none_ok=True))),
    Case(key_blocks, args=(2, 6, 9, 4), kwargs=dict(causal=True, window=3),
         bad=dict(q_lo=ints(minimum=0), q_hi=ints(minimum=3), nk=ints(minimum=1),
                  block_k=ints(minimum=1), **_MASK)),
    Case(block_map, args=(100, 32), kwargs=dict(causal=True),
         bad=dict(n=ints(minimum=1) | st.just(10**7), block=ints(minimum=1), causal=flags())),
    Case(mask_codes, args=(32, 8, 2),
         bad=dict(n=ints(minimum=1) | st.just(10**5), window=ints(minimum=1, none_ok=True),
                  sink_tokens=ints(minimum=0))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
