"""benchmarks/attention_cpu.py compares against the torch SDPA backend it names (not timed).

torch's CPU SDPA has a fused flash-attention kernel and an unfused math path; which one a call
takes depends on the inputs' rank and the arguments, silently. The benchmark enforces a backend
with ``torch.nn.attention.sdpa_kernel`` (torch raises if it cannot use it); these tests check,
with torch's profiler, that each of its SDPA calls runs that backend's op and not the other's,
and that it computes the same attention as lessonlib.
"""

import numpy as np
import pytest
from _support import load_file, needs, optional

from lessonlib.attention import tiled_attention

torch = optional("torch")


bench = load_file("benchmarks", "attention_cpu.py")

# (causal, window): the main table's rows and the sliding-window section's
CASES = {"sdpa": [(False, None), (True, None), (True, 16)],
         "sdpa_math": [(False, None), (True, None), (True, 16)],
         "sdpa_band": [(True, 16)]}


def _ops_run(fn):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        out = fn()
    return {e.key for e in prof.key_averages()}, out


def test_every_sdpa_method_names_a_backend_with_an_op():
    assert set(bench.SDPA_BACKENDS.values()) <= set(bench.BACKEND_OPS)
    assert set(CASES) == set(bench.SDPA_BACKENDS)


@needs("torch")
@pytest.mark.parametrize("method, causal, window",
                         [(m, c, w) for m, cases in CASES.items() for c, w in cases])
def test_sdpa_runs_the_backend_it_names(method, causal, window):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 48, 16), dtype=np.float32) for _ in range(3))
    ops, out = _ops_run(bench.make_call(method, q, k, v, causal, window))
    named = bench.BACKEND_OPS[bench.SDPA_BACKENDS[method]]
    others = set(bench.BACKEND_OPS.values()) - {named}
    assert named in ops, f"{method} did not run {named}; ran {sorted(ops)}"
    assert not ops & others, f"{method} ran {sorted(ops & others)} besides {named}"
    assert tuple(out.shape) == (1, 2, 48, 16)  # four-dimensional, as a model calls it
    expect = tiled_attention(q, k, v, causal=causal, window=window, block_q=8, block_k=8)
    np.testing.assert_allclose(out[0].numpy(), expect, rtol=1e-4, atol=1e-5)


@needs("torch")
@pytest.mark.filterwarnings("ignore::UserWarning")  # torch says why the fused kernel refused
def test_the_fused_backend_refuses_what_it_cannot_run():
    """The enforcement is real: torch raises rather than fall back to another backend when the
    one allowed cannot take the call (here 3-D inputs, which the fused CPU kernel refuses)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = torch.zeros(2, 8, 4)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]), pytest.raises(RuntimeError):
        torch.nn.functional.scaled_dot_product_attention(q, q, q)


def test_useful_flops_count_visible_pairs():
    assert bench.visible_pairs(4, False, None) == 16
    assert bench.visible_pairs(4, True, None) == 10
    assert bench.visible_pairs(6, True, 2) == 11  # each query and its predecessor
    assert bench.gflops(1, 4, 8, False, None, 1e-9) == pytest.approx(4 * 8 * 16)


def test_band_chunks_cover_every_visible_key():
    n, window = 37, 5
    mask = np.zeros((n, n), dtype=bool)
    for qs, ks, m in bench._band_chunks(n, window, window):
        mask[qs, ks] |= m
    np.testing.assert_array_equal(mask, bench.attention_mask(n, n, causal=True, window=window))
