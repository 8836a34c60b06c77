"""The Triton FlashAttention kernel, run on the CPU by Triton's interpreter.

Every numeric test compares with `reference` below (float64, a direct masked softmax written
from the visibility rule of docs/CONTRACT.md, "Attention semantics", no code shared) and, for fp32,
with `lessonlib.attention.naive_attention`. Interpreter time grows with programs x key blocks
(a few ms each), so sizes stay at heads x (n / block)^2 of about 250 or less per call.
"""
import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (make test exports it too)

import json
import math
from pathlib import Path

import numpy as np
import pytest
from _support import run_python_without_gpu, skip_module_without
from hypothesis import given, settings, strategies as st

skip_module_without("triton")  # every test here runs the kernel (torch tensors, triton)
import torch  # noqa: E402

from lessonlib.attention import naive_attention  # noqa: E402
from lessonlib.triton_attention import (TILE_FULL, TILE_MASKED, TILE_SKIPPED, flash_attention,
                                        kernel_tile_map)

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------------
# The independent reference
# ------------------------------------------------------------------------------------------------
def visible_mask(nq, nk, causal=False, window=None, sink_tokens=0):
    """(nq, nk) bool, straight from the rule: query i sits at p = nk - nq + i and sees key j iff
    (not causal or j <= p) and (window is None or p - j < window or j < sink_tokens)."""
    p = torch.arange(nk - nq, nk)[:, None]
    j = torch.arange(nk)[None, :]
    ok = torch.ones(nq, nk, dtype=torch.bool)
    if causal:
        ok &= j <= p
    if window is not None:
        ok &= (p - j < window) | (j < sink_tokens)
    return ok


def reference(q, k, v, causal=False, window=None, sink_tokens=0, sink_logits=None, scale=None):
    """float64 attention on (b, h, n, d) tensors: scores, mask, softmax (with the sink logit as
    one extra column that has no value), P @ V. K/V heads are repeated for GQA."""
    q, k, v = (t.double() for t in (q, k, v))
    b, hq, nq, d = q.shape
    hkv, nk = k.shape[1], k.shape[2]
    k = k.repeat_interleave(hq // hkv, dim=1)
    v = v.repeat_interleave(hq // hkv, dim=1)
    scale = 1 / math.sqrt(d) if scale is None else scale
    s = (q @ k.transpose(-1, -2)) * scale  # (b, hq, nq, nk)
    s = s.masked_fill(~visible_mask(nq, nk, causal, window, sink_tokens), -math.inf)
    if sink_logits is not None:
        sink = torch.as_tensor(sink_logits, dtype=torch.float64).view(1, hq, 1, 1)
        s = torch.cat([s, sink.expand(b, hq, nq, 1)], dim=-1)
        return torch.softmax(s, dim=-1)[..., :nk] @ v
    return torch.softmax(s, dim=-1) @ v


def make_inputs(b, hq, hkv, nq, nk, d, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(b, hq, nq, d, generator=gen)
    k = torch.randn(b, hkv, nk, d, generator=gen)
    v = torch.randn(b, hkv, nk, d, generator=gen)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def assert_close(out, ref, atol, rtol=0.0):
    err = (out.double() - ref).abs()
    bound = atol + rtol * ref.abs()
    assert torch.isfinite(out).all(), "non-finite output"
    assert (err <= bound).all(), f"max error {err.max().item():.3g} (atol {atol}, rtol {rtol})"


# ------------------------------------------------------------------------------------------------
# The feature grid, fp32: against the float64 reference and against naive_attention
# ------------------------------------------------------------------------------------------------
SINKS4 = [0.5, -1.0, 2.0, 0.0]
# (b, hq, hkv, nq, nk, d), options, block size(s). About 250 tile visits or fewer per call.
GRID = {
    "dense": ((2, 2, 2, 100, 100, 32), dict(), 32),
    "causal, odd length, d=24": ((1, 2, 2, 77, 77, 24), dict(causal=True), 16),
    "causal, nq < nk": ((1, 2, 2, 50, 130, 32), dict(causal=True), 32),
    "window + sinks, causal": ((1, 2, 2, 150, 150, 32),
                               dict(causal=True, window=40, sink_tokens=5), 16),
    "window + sinks, not causal": ((1, 2, 2, 90, 90, 16),
                                   dict(window=30, sink_tokens=3), 16),
    "window of 1": ((1, 1, 1, 70, 70, 16), dict(causal=True, window=1), 16),
    "window > n": ((1, 1, 1, 60, 60, 16), dict(causal=True, window=500, sink_tokens=2), 16),
    "learned sinks": ((1, 4, 4, 64, 64, 32), dict(causal=True, sink_logits=SINKS4), 32),
    "gpt-oss: window, sink tokens, learned sinks, GQA": (
        (1, 4, 2, 96, 96, 32),
        dict(causal=True, window=24, sink_tokens=4, sink_logits=SINKS4), 32),
    "GQA 4/2": ((2, 4, 2, 64, 64, 32), dict(causal=True), 32),
    "MQA 4/1": ((1, 4, 1, 80, 80, 16), dict(), 32),
    "decode": ((2, 4, 2, 1, 200, 32), dict(causal=True), 32),
    "decode, window + sinks": ((1, 4, 1, 1, 333, 64),
                               dict(causal=True, window=50, sink_tokens=4, sink_logits=SINKS4),
                               32),
    "custom scale, d=80": ((1, 1, 1, 48, 48, 80), dict(causal=True, scale=0.3), 16),
    # Rows of a query block whose first key blocks are all hidden from them (the -inf guard).
    "window narrower than a query block": ((1, 2, 2, 100, 100, 16), dict(window=5), (32, 16)),
}


@pytest.mark.parametrize("name", list(GRID))
def test_fp32_matches_reference_and_naive_attention(name):
    shape, opts, blocks = GRID[name]
    block_m, block_n = blocks if isinstance(blocks, tuple) else (blocks, blocks)
    q, k, v = make_inputs(*shape)
    out = flash_attention(q, k, v, block_m=block_m, block_n=block_n, **opts)
    assert out.shape == q.shape and out.dtype == torch.float32
    ref = reference(q, k, v, **opts)
    assert_close(out, ref, atol=1e-5, rtol=1e-5)
    for i in range(q.shape[0]):  # naive_attention takes (heads, n, d) numpy arrays
        naive = naive_attention(q[i].double().numpy(), k[i].double().numpy(),
                                v[i].double().numpy(), **opts)
        np.testing.assert_allclose(out[i].numpy(), naive, atol=1e-5, rtol=1e-5)


def test_default_block_sizes_and_non_contiguous_inputs():
    # (b, n, h, d) memory, viewed as (b, h, n, d): the kernel reads through the strides.
    q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2)
               for t in make_inputs(1, 2, 1, 100, 130, 32, seed=1))
    assert not q.is_contiguous()
    out = flash_attention(q, k, v, causal=True)  # the interpreter's default 64 x 64 tiles
    assert_close(out, reference(q, k, v, causal=True), atol=1e-5, rtol=1e-5)


@settings(max_examples=12, deadline=None)
@given(nk=st.integers(1, 80), nq_frac=st.floats(0.01, 1.0), causal=st.booleans(),
       window=st.one_of(st.none(), st.integers(1, 90)), sink_tokens=st.integers(0, 20),
       hkv=st.sampled_from([1, 2]), group=st.sampled_from([1, 2]), with_sinks=st.booleans(),
       d=st.sampled_from([8, 16, 40]), block_m=st.sampled_from([16, 32]),
       block_n=st.sampled_from([16, 32]), seed=st.integers(0, 99))
def test_random_configurations_match_reference(nk, nq_frac, causal, window, sink_tokens, hkv,
                                               group, with_sinks, d, block_m, block_n, seed):
    nq = max(1, round(nq_frac * nk))
    hq = hkv * group
    q, k, v = make_inputs(1, hq, hkv, nq, nk, d, seed=seed)
    sinks = torch.linspace(-2, 3, hq).tolist() if with_sinks else None
    opts = dict(causal=causal, window=window, sink_tokens=sink_tokens, sink_logits=sinks)
    out = flash_attention(q, k, v, block_m=block_m, block_n=block_n, **opts)
    assert_close(out, reference(q, k, v, **opts), atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------------------------------
# Half precision
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, atol", [(torch.float16, 4e-3), (torch.bfloat16, 3e-2)])
def test_half_precision_within_its_tolerance(dtype, atol):
    # bf16: Triton 3.9's interpreter cannot multiply bf16 tiles, so the wrapper runs bf16 in fp32
    # on the CPU (rounding the output back); the GPU benchmark checks the real bf16 kernel.
    q, k, v = make_inputs(1, 4, 2, 96, 96, 64, dtype=dtype, seed=2)
    opts = dict(causal=True, window=40, sink_tokens=3, sink_logits=SINKS4)
    out = flash_attention(q, k, v, block_m=32, block_n=32, **opts)
    assert out.dtype == dtype
    ref = reference(q, k, v, **opts)  # from the same rounded inputs, in float64
    assert_close(out, ref, atol=atol, rtol=atol)
    # The tolerance is tight enough to see a wrong answer: the unwindowed result is far away.
    far = reference(q, k, v, causal=True, sink_logits=SINKS4)
    assert (far - ref).abs().max() > 10 * atol


# ------------------------------------------------------------------------------------------------
# The interpreter's silent failure: a kernel that writes zeros (or nothing) still "runs"
# ------------------------------------------------------------------------------------------------
def test_output_differs_from_zeros_and_from_the_input_as_the_reference_says():
    q, k, v = make_inputs(2, 2, 2, 40, 40, 32, seed=3)
    v = v + 1.0  # an offset so that every true output row is far from zero
    out = flash_attention(q, k, v, causal=True, block_m=16, block_n=16)
    ref = reference(q, k, v, causal=True)
    # Row by row (so one unwritten row is caught): distance to zero and to the input q.
    out_norm, ref_norm = out.double().norm(dim=-1), ref.norm(dim=-1)
    assert (ref_norm > 1.0).all()
    torch.testing.assert_close(out_norm, ref_norm, rtol=1e-5, atol=1e-6)
    out_dq, ref_dq = (out.double() - q.double()).norm(dim=-1), (ref - q.double()).norm(dim=-1)
    assert (ref_dq > 1.0).all()
    torch.testing.assert_close(out_dq, ref_dq, rtol=1e-5, atol=1e-6)
    # And the first query (it sees only key 0) is exactly v[0] of its head.
    torch.testing.assert_close(out[:, :, 0], v[:, :, 0], rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# Loop bounds: the tiles the kernel visits, as recorded by the kernel itself
# ------------------------------------------------------------------------------------------------
def tile_truth(nq, nk, bm, bn, **mask_opts):
    """Per (query block, key block): does any real query see any key of it, and does every real
    query see every key of it (with the key block entirely inside nk)?"""
    vis = visible_mask(nq, nk, **mask_opts)
    nqb, nkb = -(-nq // bm), -(-nk // bn)
    some = np.zeros((nqb, nkb), bool)
    every = np.zeros((nqb, nkb), bool)
    for i in range(nqb):
        for j in range(nkb):
            tile = vis[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn]
            some[i, j] = bool(tile.any())
            every[i, j] = bool(tile.all()) and (j + 1) * bn <= nk
    return some, every


TILE_CASES = [
    (128, 128, 32, 32, dict()),
    (100, 100, 32, 32, dict()),
    (128, 128, 32, 32, dict(causal=True)),
    (96, 200, 32, 16, dict(causal=True)),
    (200, 200, 16, 32, dict(causal=True, window=45)),
    (160, 160, 32, 32, dict(window=50)),
    (150, 150, 32, 16, dict(causal=True, window=40, sink_tokens=20)),
    (130, 250, 64, 32, dict(causal=True, window=70, sink_tokens=3)),
    (1, 300, 16, 32, dict(causal=True, window=64, sink_tokens=4)),
]


@pytest.mark.parametrize("nq, nk, bm, bn, opts", TILE_CASES)
def test_kernel_visits_exactly_the_tiles_the_mask_reaches(nq, nk, bm, bn, opts):
    tiles = kernel_tile_map(nq, nk, block_m=bm, block_n=bn, **opts)
    some, every = tile_truth(nq, nk, bm, bn, **opts)
    assert tiles.shape == some.shape
    # Skipped iff hidden: every tile with a visible pair is computed, and no other tile is.
    np.testing.assert_array_equal(tiles != TILE_SKIPPED, some)
    # A tile computed without the mask must be fully visible.
    assert not ((tiles == TILE_FULL) & ~every).any()
    if opts.get("sink_tokens", 0) == 0:
        # ... and (sink blocks aside) every fully visible tile skips the mask.
        np.testing.assert_array_equal(tiles == TILE_FULL, every)


def test_causal_stops_at_the_diagonal():
    tiles = kernel_tile_map(256, 256, causal=True, block_m=32, block_n=32)
    n = 256 // 32
    expected = np.tril(np.full((n, n), TILE_FULL), -1) + np.diag(np.full(n, TILE_MASKED))
    np.testing.assert_array_equal(tiles, expected)


def test_windowed_work_grows_linearly_while_causal_work_grows_quadratically():
    window, block = 64, 32
    windowed = {n: int((kernel_tile_map(n, n, causal=True, window=window, sink_tokens=4,
                                        block_m=block, block_n=block) != TILE_SKIPPED).sum())
                for n in (256, 512, 1024)}
    causal = {n: int((kernel_tile_map(n, n, causal=True, block_m=block, block_n=block)
                      != TILE_SKIPPED).sum()) for n in (256, 512)}
    # Per query block: at most the window's blocks, one more for misalignment, the diagonal
    # and one sink block; so the total is affine in n: each doubling adds twice the last step.
    for n, work in windowed.items():
        assert work <= (n // block) * (window // block + 3)
    assert windowed[1024] - windowed[512] == 2 * (windowed[512] - windowed[256])
    assert causal[512] / causal[256] > 3.5  # while the causal work quadruples
    assert causal[512] == (512 // block) * (512 // block + 1) // 2


# ------------------------------------------------------------------------------------------------
# Bad input: ValueError naming the argument
# ------------------------------------------------------------------------------------------------
def _qkv(**shapes):
    q, k, v = make_inputs(1, 4, 2, 8, 16, 16)
    return dict(q=q, k=k, v=v) | shapes


BAD = [
    ("q", dict(q=np.zeros((1, 4, 8, 16), np.float32)), {}),
    ("q", dict(q=torch.zeros(4, 8, 16)), {}),
    ("k", dict(k=torch.zeros(1, 2, 16, 16, dtype=torch.float64)), {}),
    ("q", dict(q=torch.zeros(1, 4, 8, 16, dtype=torch.int32)), {}),
    ("k", dict(k=torch.zeros(1, 2, 16, 16, dtype=torch.float16)), {}),
    ("k", dict(k=torch.zeros(2, 2, 16, 16)), {}),  # batch mismatch
    ("k", dict(k=torch.zeros(1, 2, 16, 8)), {}),  # head dim mismatch
    ("v", dict(v=torch.zeros(1, 2, 15, 16)), {}),  # length mismatch
    ("v", dict(v=torch.zeros(1, 2, 16, 32)), {}),  # separate value dim: not supported
    ("heads", dict(k=torch.zeros(1, 3, 16, 16), v=torch.zeros(1, 3, 16, 16)), {}),  # 4 % 3
    ("nq", dict(q=torch.zeros(1, 4, 17, 16)), {}),  # nq > nk
    ("q", dict(q=torch.zeros(1, 4, 0, 16)), {}),
    ("head dim", dict(q=torch.zeros(1, 4, 8, 300), k=torch.zeros(1, 2, 16, 300),
                      v=torch.zeros(1, 2, 16, 300)), {}),
    ("batch x heads", dict(q=torch.zeros(2, 32768, 1, 16), k=torch.zeros(2, 1, 16, 16),
                           v=torch.zeros(2, 1, 16, 16)), {}),
    ("window", {}, dict(window=0)),
    ("window", {}, dict(window=-3)),
    ("window", {}, dict(window=2.5)),
    ("window", {}, dict(window=True)),
    ("sink_tokens", {}, dict(sink_tokens=-1)),
    ("sink_logits", {}, dict(sink_logits=[0.0, 1.0])),
    ("sink_logits", {}, dict(sink_logits=torch.zeros(2, 2))),
    ("sink_logits", {}, dict(sink_logits=[0.0, 1.0, float("nan"), 0.0])),
    ("sink_logits", {}, dict(sink_logits="abcd")),
    ("scale", {}, dict(scale=0.0)),
    ("scale", {}, dict(scale=float("inf"))),
    ("scale", {}, dict(scale="big")),
    ("causal", {}, dict(causal="yes")),
    ("block_m", {}, dict(block_m=0)),
    ("block_n", {}, dict(block_n=-16)),
    ("block_m", {}, dict(block_m=24)),
    ("block_n", {}, dict(block_n=8)),
    ("num_warps", {}, dict(num_warps=0)),
]


@pytest.mark.parametrize("name, tensors, options", BAD)
def test_bad_input_raises_value_error_naming_the_argument(name, tensors, options):
    args = _qkv(**tensors)
    with pytest.raises(ValueError, match=name):
        flash_attention(args["q"], args["k"], args["v"], **options)


@pytest.mark.parametrize("name, kwargs", [
    ("nq", dict(nq=300, nk=200)), ("nk", dict(nq=1, nk=0)), ("window", dict(window=0)),
    ("sink_tokens", dict(sink_tokens=-2)), ("block_n", dict(block_n=48)),
    ("block_m", dict(block_m=0)), ("causal", dict(causal=1)),
])
def test_kernel_tile_map_rejects_bad_input(name, kwargs):
    args = dict(nq=64, nk=64) | kwargs
    with pytest.raises(ValueError, match=name):
        kernel_tile_map(args.pop("nq"), args.pop("nk"), **args)


# ------------------------------------------------------------------------------------------------
# Without CUDA and without the interpreter: a RuntimeError that says how to run
# ------------------------------------------------------------------------------------------------
def test_without_cuda_or_interpreter_raises_runtime_error_saying_how_to_run():
    code = """
        import os, torch
        from lessonlib.triton_attention import flash_attention, kernel_tile_map  # imports fine
        assert not torch.cuda.is_available()
        q = torch.randn(1, 2, 40, 16)

        def runtime_error(call):
            try:
                call()
            except RuntimeError as err:
                return str(err)
            raise AssertionError("no RuntimeError")

        for call in (lambda: flash_attention(q, q, q), lambda: kernel_tile_map(8, 8)):
            assert "TRITON_INTERPRET=1" in runtime_error(call)
        # Setting the variable after triton's import is too late, and the error says so.
        os.environ["TRITON_INTERPRET"] = "1"
        assert "after triton was imported" in runtime_error(lambda: flash_attention(q, q, q))
        print("ok")
    """
    result = run_python_without_gpu(code)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


# ------------------------------------------------------------------------------------------------
# The GPU path, checked without a GPU: compile for Hopper (sm_90) the way a launch would
# ------------------------------------------------------------------------------------------------
def test_kernel_compiles_for_hopper_with_tensor_cores_pipelining_and_no_spills():
    """Triton compiles to a cubin without a device. Check what the interpreter cannot: the
    compiled path builds, uses wgmma (Hopper tensor cores), double-buffers K/V with async
    copies, and the default configurations fit in registers."""
    code = """
        import json, os, subprocess, tempfile, triton, torch
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        import lessonlib.triton_attention as ta

        def compile_variant(dtype, d, causal, windowed, sinks):
            n, h = 4096, 32
            cfg = ta.default_config(d, n, getattr(torch, dtype))
            fn = ta._flash_attention_fwd_kernel
            ints = dict(stride_qb=h * n * d, stride_qh=n * d, stride_qm=d, stride_qd=1,
                        stride_kb=h * n * d // 2, stride_kh=n * d, stride_kn=d, stride_kd=1,
                        stride_vb=h * n * d // 2, stride_vh=n * d, stride_vn=d, stride_vd=1,
                        stride_ob=h * n * d, stride_oh=n * d, stride_om=d, stride_od=1)
            ints.update(hq=h, group_size=2, nq=n, nk=n, window=4096, sink_tokens=4)
            sig, consts, attrs = {}, {}, {}
            for i, name in enumerate(fn.arg_names):  # Triton's own launch-time specialisation
                if name.endswith("_ptr"):
                    sig[name] = "*fp32" if name in ("sink_logits_ptr", "tiles_ptr") else "*" + {
                        "float16": "fp16", "bfloat16": "bf16"}[dtype]
                    attrs[(i,)] = [["tt.divisibility", 16]]
                elif name == "qk_scale":
                    sig[name] = "fp32"
                elif name.isupper():
                    sig[name] = "constexpr"
                elif ints[name] == 1:
                    sig[name], consts[name] = "constexpr", 1
                else:
                    sig[name] = "i32"
                    if ints[name] % 16 == 0:
                        attrs[(i,)] = [["tt.divisibility", 16]]
            consts.update(BLOCK_M=cfg["block_m"], BLOCK_N=cfg["block_n"], HEAD_DIM=d,
                          BLOCK_D=ta._block_d(d), CAUSAL=causal, WINDOWED=windowed,
                          HAS_SINK_LOGITS=sinks, DOT_PRECISION="tf32", RECORD_TILES=False)
            kernel = triton.compile(ASTSource(fn, sig, consts, attrs=attrs),
                                    target=GPUTarget("cuda", 90, 32),
                                    options=dict(num_warps=cfg["num_warps"],
                                                 num_stages=cfg["num_stages"]))
            ttgir = kernel.asm["ttgir"]
            cuobjdump = triton.__path__[0] + "/backends/nvidia/bin/cuobjdump"
            with tempfile.TemporaryDirectory() as tmp:
                cubin = os.path.join(tmp, "kernel.cubin")
                with open(cubin, "wb") as f:
                    f.write(kernel.asm["cubin"])
                usage = subprocess.run([cuobjdump, "--dump-resource-usage", cubin],
                                       capture_output=True, text=True, check=True).stdout
            stack = int(usage.split("STACK:")[1].split()[0])
            return dict(wgmma=ttgir.count("warp_group_dot "),
                        async_copies=ttgir.count("async_copy_global_to_local"), stack=stack)

        print(json.dumps([compile_variant("float16", 64, True, True, True),
                          compile_variant("bfloat16", 128, False, False, False)]))
    """
    result = run_python_without_gpu(code, TRITON_DEFAULT_FP_FUSION="1")
    assert result.returncode == 0, result.stderr[-3000:]
    for variant in json.loads(result.stdout.strip().splitlines()[-1]):
        assert variant["wgmma"] >= 4, variant  # QK^T and PV in each compiled loop
        assert variant["async_copies"] >= 4, variant  # K and V prefetched (software pipelined)
        assert variant["stack"] == 0, variant  # no register spills


# ------------------------------------------------------------------------------------------------
# Issue 13: non-finite inputs, Triton's own limits, and the vocabulary of lessonlib._validate
# ------------------------------------------------------------------------------------------------
import lessonlib.triton_attention as ta  # noqa: E402
from lessonlib.kernel_plan import LOG2_E  # noqa: E402
from lessonlib.triton_attention import default_config  # noqa: E402


@pytest.fixture
def no_launch(monkeypatch):
    """Bad input must be refused before the kernel runs: a launch fails the test."""
    def launched(*args, **kwargs):
        raise AssertionError("the kernel was launched for a bad input")
    monkeypatch.setattr(ta, "_launch", launched)


@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_non_finite_inputs_name_the_tensor(name, bad, dtype, no_launch):
    """NaN or inf in q, k or v came back as NaN rows; now, as in lessonlib.attention, an error
    naming the tensor, the count and the first index."""
    tensors = dict(zip("qkv", make_inputs(1, 4, 2, 8, 16, 16, dtype=dtype)))
    tensors[name][0, 1, 2, 3] = bad
    with pytest.raises(ValueError, match=rf"^{name} holds non-finite values \(1 of \d+; the "
                                         rf"first, -?(nan|inf), at index \(0, 1, 2, 3\)\)"):
        flash_attention(**tensors, causal=True)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter's numpy overflows
def test_finite_inputs_that_overflow_the_scores_say_so():
    q, k, v = make_inputs(1, 2, 2, 6, 6, 16, seed=4)
    with pytest.raises(ValueError, match=r"^finite q and k overflowed the scores in float32: .* "
                                         r"scale q or k down"):
        flash_attention(q * 1e20, k * 1e20, v, causal=True, block_m=16, block_n=16)
    out = flash_attention(q * 1e15, k * 1e15, v, causal=True, block_m=16, block_n=16)
    assert torch.isfinite(out).all()  # a large bound alone is not an error: the result is checked


@pytest.mark.parametrize("options, says", [
    (dict(num_warps=3), r"^num_warps must be a power of two"),  # was passed on to Triton
    (dict(num_warps=64), r"^num_warps must be an integer >= 1 and <= 32"),
    (dict(num_warps=4.0), r"^num_warps must be an integer, got the float 4.0"),
    (dict(num_stages=0), r"^num_stages must be an integer >= 1"),
    (dict(num_stages=True), r"^num_stages must be an integer, got True"),
    # Triton's "Scalar 1099511627776 is out of range for type int32", from inside the kernel
    (dict(block_m=2 ** 40), r"^block_m too large: the kernel's tile of .* passes Triton's limit "
                            r"of 1,048,576"),
    (dict(block_n=2 ** 31), r"^block_n too large"),
    (dict(block_m=2 ** 16, block_n=32), r"^block_m x block_n too large"),
    (dict(causal="no"), r"^causal must be True or False, got 'no'"),
    (dict(causal=1), r"^causal must be True or False"),
    (dict(window=4.0), r"^window must be an integer, got the float"),
    (dict(sink_tokens=True), r"^sink_tokens must be an integer, got True"),
    (dict(scale=True), r"^scale must be a real number, got True"),
    (dict(scale="0.5"), r"^scale must be a real number"),
    (dict(scale=1e39), r"^scale must be a number > 0.0 and < "),
    (dict(sink_logits=[True, False, True, False]), r"^sink_logits must hold real numbers"),
    (dict(sink_logits=torch.ones(4, dtype=torch.bool)), r"^sink_logits must hold real numbers"),
    (dict(sink_logits=torch.tensor([0.0, math.inf, 0.0, 0.0])),
     r"^sink_logits holds non-finite values"),
    (dict(sink_logits=[1e39, 0.0, 0.0, 0.0]), r"^sink_logits must be smaller than"),
])
def test_options_are_checked_before_the_launch(options, says, no_launch):
    q, k, v = make_inputs(1, 4, 2, 8, 16, 16)
    with pytest.raises(ValueError, match=says):
        flash_attention(q, k, v, **options)


@pytest.mark.parametrize("call, says", [
    (lambda: default_config(-5), r"^d must be an integer >= 1 and <= 256, got -5"),  # was a config
    (lambda: default_config(300), r"^d must be an integer >= 1 and <= 256"),
    (lambda: default_config(64.0), r"^d must be an integer, got the float"),
    (lambda: default_config(64, nq=0), r"^nq must be an integer >= 1"),
    (lambda: default_config(64, dtype="float16"), r"^dtype must be one of torch.float32, "
                                                  r"torch.float16, torch.bfloat16"),
    (lambda: default_config(64, dtype=torch.float64), r"^dtype must be one of"),
    (lambda: kernel_tile_map(64, 64, block_m=2 ** 40), r"^block_m too large"),
    (lambda: kernel_tile_map(64.0, 64), r"^nq must be an integer, got the float"),
    (lambda: kernel_tile_map(64, 64, causal="yes"), r"^causal must be True or False"),
])
def test_default_config_and_tile_map_name_their_arguments(call, says, no_launch):
    with pytest.raises(ValueError, match=says):
        call()


def test_valid_numbers_in_every_form_give_the_same_output():
    q, k, v = make_inputs(1, 4, 2, 8, 16, 16, seed=6)
    opts = dict(causal=True, block_m=16, block_n=16)
    ref = flash_attention(q, k, v, window=4, sink_tokens=1, scale=0.3,
                          sink_logits=[1.0, 0.0, -1.0, 2.0], **opts)
    same = flash_attention(q, k, v, window=np.int64(4), sink_tokens=np.array(1),
                           scale=torch.tensor(0.3, dtype=torch.float64),
                           sink_logits=np.array([1, 0, -1, 2]), num_warps=np.int32(2),
                           num_stages=1, causal=np.True_, **{k: v for k, v in opts.items()
                                                             if k != "causal"})
    torch.testing.assert_close(same, ref, rtol=0, atol=0)
    assert default_config(64, 100, torch.float16) == default_config(np.int64(64), 100)


# ------------------------------------------------------------------------------------------------
# Bad inputs: every argument, drawn (tests/_bad.py; coverage in tests/test_validate.py)
# ------------------------------------------------------------------------------------------------
from _bad import Case, arrays_with, bad_input_tests, choices, flags, ints, reals  # noqa: E402


def tensors_with(valid):
    """Bad versions of the tensor ``valid``: NaN or inf at a drawn index, float64, integers,
    bools, complex, the wrong rank, the numpy array, a list, a string, None."""
    @st.composite
    def non_finite(draw):
        t = valid.clone()
        at = tuple(draw(st.integers(0, n - 1)) for n in t.shape)
        t[at] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
        return t

    return st.one_of(non_finite(), st.sampled_from([
        valid.double(), valid.long(), valid.bool(), valid.to(torch.complex64), valid[0],
        valid[None], valid.numpy(), valid.tolist(), "tensor", None]))


_Q, _K, _V = make_inputs(1, 2, 1, 4, 8, 16, seed=9)
_SINKS = np.array([0.5, -0.5])
_BLOCK = ints(minimum=16, none_ok=True) | st.sampled_from([24, 48, 2 ** 17, 2 ** 40])
_MASK = dict(causal=flags(), window=ints(minimum=1, none_ok=True), sink_tokens=ints(minimum=0))
_FLASH = Case(
    flash_attention, args=(_Q, _K, _V),
    kwargs=dict(causal=True, window=4, sink_tokens=1, sink_logits=_SINKS, scale=0.3, block_m=16,
                block_n=16, num_warps=2, num_stages=1),
    bad=dict(q=tensors_with(_Q) | st.sampled_from([torch.zeros(1, 2, 9, 16),
                                                   torch.zeros(1, 2, 4, 8)]),
             k=tensors_with(_K) | st.sampled_from([_K.half(), torch.zeros(1, 1, 8, 8),
                                                   torch.zeros(2, 1, 8, 16)]),
             v=tensors_with(_V) | st.just(torch.zeros(1, 1, 7, 16)),
             sink_logits=arrays_with(_SINKS, kind="real", none_ok=True) | st.sampled_from([
                 np.zeros(3), torch.tensor([True, False]), torch.tensor([math.nan, 0.0]),
                 [1e39, 0.0], torch.zeros(2, 1)]),
             scale=reals(above=0.0, below=float(torch.finfo(torch.float32).max) / LOG2_E,
                         none_ok=True),
             block_m=_BLOCK, block_n=_BLOCK,
             num_warps=ints(minimum=1, maximum=32, none_ok=True) | st.sampled_from([3, 6]),
             num_stages=ints(minimum=1, none_ok=True), **_MASK))

BAD_INPUTS = [
    _FLASH,
    Case(kernel_tile_map, args=(32, 32),
         kwargs=dict(causal=True, window=8, sink_tokens=2, block_m=16, block_n=16),
         bad=dict(nq=ints(minimum=1) | st.just(33), nk=ints(minimum=1),
                  block_m=ints(minimum=16) | st.sampled_from([24, 2 ** 40]),
                  block_n=ints(minimum=16) | st.sampled_from([48, 2 ** 40]), **_MASK)),
    Case(default_config, args=(64,), kwargs=dict(nq=100, dtype=torch.float16),
         bad=dict(d=ints(minimum=1, maximum=256), nq=ints(minimum=1, none_ok=True),
                  dtype=choices(["float16"]) | st.sampled_from([torch.float64, torch.int32,
                                                                np.float16, "torch.float16"]))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


@pytest.mark.parametrize("key", list(_FLASH.bad))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_bad_flash_attention_inputs_never_launch_the_kernel(key, data):
    """The bad inputs above fail in validation, before any launch (and so, fast)."""
    ba = _FLASH.bound(key, data.draw(_FLASH.bad[key], label=key))
    real_launch, ta._launch = ta._launch, None  # calling None would be a TypeError, not ValueError
    try:
        with pytest.raises(ValueError):
            flash_attention(*ba.args, **ba.kwargs)
    finally:
        ta._launch = real_launch
