"""tiled_attention's faster unit (issue 33) gives bit for bit the output of the unit it
replaced, kept here as the reference: the same numpy calls on the same shapes, in the same
order, with the score tile and the P @ V product written into reused scratch instead of fresh
arrays, and each diagonal tile's mask built once per offset."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from lessonlib import attention as A
from lessonlib.attention import key_blocks, tiled_attention


def _reference_unit(q, k, v, sinks, scale, q_lo, causal, window, sink_tokens, block_k, out):
    """lessonlib/attention.py's _tiled_unit before issue 33, verbatim."""
    g, bq, d = q.shape
    nk, dt = k.shape[0], out.dtype.type
    q_hi = q_lo + bq
    qb = (q.astype(dt, copy=False) * dt(scale)).reshape(g * bq, d)
    m = np.full(g * bq, -np.inf, dtype=dt)
    l = np.zeros(g * bq, dtype=dt)
    acc = np.zeros((g * bq, v.shape[-1]), dtype=dt)
    for j0 in key_blocks(q_lo, q_hi, nk, block_k, causal=causal, window=window,
                         sink_tokens=sink_tokens):
        j1 = min(j0 + block_k, nk)
        s = np.matmul(qb, k[j0:j1].T)
        if not A._tile_fully_visible(q_lo, q_hi, j0, j1, causal, window, sink_tokens):
            hidden = ~A._visible(np.arange(q_lo, q_hi)[:, None], np.arange(j0, j1)[None, :],
                                 causal, window, sink_tokens)
            np.copyto(s.reshape(g, bq, j1 - j0), -np.inf, where=hidden)
        m_new = np.maximum(m, s.max(axis=-1))
        m_ref = np.where(m_new == -np.inf, 0, m_new)
        alpha = np.exp(m - m_ref)
        np.subtract(s, m_ref[:, None], out=s)
        np.exp(s, out=s)
        l = l * alpha + s.sum(axis=-1)
        acc *= alpha[:, None]
        acc += np.matmul(s, v[j0:j1])
        m = m_new
    if sinks is not None:
        sink = np.repeat(sinks, bq)
        m_new = np.maximum(m, sink)
        alpha = np.exp(m - m_new)
        acc *= alpha[:, None]
        l = l * alpha + np.exp(sink - m_new)
    out[...] = (acc / l[:, None]).reshape(g, bq, -1)


def reference_tiled(q, k, v, *, causal=False, window=None, sink_tokens=0, sink_logits=None,
                    scale=None, block_q=A.DEFAULT_BLOCK_Q, block_k=A.DEFAULT_BLOCK_K):
    """tiled_attention before issue 33, on one thread (its output never depended on threads)."""
    a = A._validate(q, k, v, causal, window, sink_tokens, sink_logits, scale)
    dt = A._work_dtype(a.q, a.k, a.v)
    hq, nq, d = a.q.shape
    hkv, g, nk = a.k.shape[0], a.group, a.k.shape[1]
    qg = a.q.reshape(hkv, g, nq, d)
    k, v = a.k.astype(dt, copy=False), a.v.astype(dt, copy=False)
    sinks = None if a.sink_logits is None else a.sink_logits.astype(dt).reshape(hkv, g)
    out = np.empty((hkv, g, nq, v.shape[-1]), dtype=dt)
    with A._blas_threads(1), np.errstate(over="ignore", invalid="ignore"):
        for i0 in range(0, nq, block_q):
            for kv in range(hkv):
                i1 = min(i0 + block_q, nq)
                _reference_unit(qg[kv, :, i0:i1], k[kv], v[kv],
                                None if sinks is None else sinks[kv], a.scale, nk - nq + i0,
                                causal, window, sink_tokens, block_k, out[kv, :, i0:i1])
    out = out.reshape(hq, nq, -1)
    return out[0] if a.squeeze else out


def rand(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# hq, hkv, nq, nk, d, dv, block_q, block_k, keywords: default blocks, ragged ends, GQA/MQA,
# decode, windows with sinks, learned sinks, float64, a custom scale
SHAPES = [
    (8, 8, 1024, 1024, 64, 64, None, None, dict(causal=True)),
    (8, 8, 1024, 1024, 64, 64, None, None, dict()),
    (2, 2, 700, 700, 128, 128, None, None, dict(causal=True)),
    (8, 2, 333, 333, 32, 32, 64, 96, dict(causal=True)),
    (4, 1, 1, 517, 64, 64, None, None, dict(causal=True)),
    (4, 4, 300, 300, 16, 24, 32, 48, dict(causal=True, window=70, sink_tokens=5)),
    (4, 2, 257, 400, 16, 16, 48, 64, dict(causal=True, window=33)),
    (4, 4, 90, 90, 8, 8, 16, 16, dict(causal=True, sink_logits=np.array([0.5, -1., 2., 0.]))),
    # sinks that take almost all the weight, short of swamping the keys (issue 31's refusal)
    (4, 2, 90, 90, 8, 8, 16, 16, dict(causal=True, sink_logits=np.array([60., -30., 70., 5.]))),
    (2, 1, 129, 129, 16, 16, 32, 32, dict(causal=True, window=40, sink_tokens=2)),
    (2, 2, 200, 200, 16, 16, 64, 64, dict(causal=True, scale=0.3)),
    (4, 2, 37, 45, 7, 5, 5, 3, dict(causal=True, window=9, sink_tokens=2)),  # odd: unaligned
    (3, 3, 1, 1, 3, 1, 1, 1, dict()),  # one query, one key
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("hq, hkv, nq, nk, d, dv, bq, bk, kw", SHAPES)
def test_bit_for_bit_the_unit_it_replaced(hq, hkv, nq, nk, d, dv, bq, bk, kw, dtype):
    rng = np.random.default_rng(hq * 1000 + nq)
    q, k, v = rand(rng, hq, nq, d, dtype=dtype), rand(rng, hkv, nk, d, dtype=dtype), \
        rand(rng, hkv, nk, dv, dtype=dtype)
    blocks = {} if bq is None else dict(block_q=bq, block_k=bk)
    expect = reference_tiled(q, k, v, **blocks, **kw)
    for threads in (1, 2, 3):
        out = tiled_attention(q, k, v, threads=threads, **blocks, **kw)
        assert out.dtype == expect.dtype
        np.testing.assert_array_equal(out, expect, err_msg=f"threads={threads}")
        assert np.array_equal(np.signbit(out), np.signbit(expect))  # -0.0 and 0.0 too


def test_two_dimensional_inputs_bit_for_bit():
    rng = np.random.default_rng(3)
    q, k, v = rand(rng, 77, 16), rand(rng, 90, 16), rand(rng, 90, 8)
    np.testing.assert_array_equal(tiled_attention(q, k, v, causal=True, block_q=16, block_k=32),
                                  reference_tiled(q, k, v, causal=True, block_q=16, block_k=32))


@given(nq=st.integers(1, 40), extra=st.integers(0, 20), group=st.sampled_from([(4, 4), (4, 2),
       (4, 1)]), causal=st.booleans(), window=st.one_of(st.none(), st.integers(1, 50)),
       sink_tokens=st.integers(0, 5), use_sink_logits=st.booleans(), d=st.integers(1, 9),
       dv=st.integers(1, 9), bq=st.integers(1, 24), bk=st.integers(1, 24),
       threads=st.integers(1, 3), seed=st.integers(0, 2**31 - 1))
def test_bit_for_bit_over_random_shapes(nq, extra, group, causal, window, sink_tokens,
                                        use_sink_logits, d, dv, bq, bk, threads, seed):
    hq, hkv = group
    rng = np.random.default_rng(seed)
    q, k, v = rand(rng, hq, nq, d), rand(rng, hkv, nq + extra, d), rand(rng, hkv, nq + extra, dv)
    kw = dict(causal=causal, window=window, sink_tokens=sink_tokens, block_q=bq, block_k=bk,
              sink_logits=rng.standard_normal(hq) * 3 if use_sink_logits else None)
    np.testing.assert_array_equal(tiled_attention(q, k, v, threads=threads, **kw),
                                  reference_tiled(q, k, v, **kw))


def test_scratch_is_aligned_and_large_enough():
    for rows, bk, dv, dt in [(256, 512, 64, np.float32), (5, 3, 7, np.float32),
                             (13, 11, 5, np.float64)]:
        work = A._scratch(rows, bk, dv, dt)
        assert work.ctypes.data % 64 == 0 and work.dtype == dt and work.flags.c_contiguous
        start = A._aligned(rows * dv, work.itemsize)
        assert start >= rows * dv and (work.ctypes.data + start * work.itemsize) % 64 == 0
        assert work.size == start + rows * bk
