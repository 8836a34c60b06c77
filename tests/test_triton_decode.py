"""The Triton split-KV decode kernel (lessonlib.triton_decode), run on the CPU by Triton's
interpreter, held to lessonlib.paged's numpy split-KV decode and paged attention.

Every context lives in a paged cache written through a shuffled block table, with the null
block wherever the window has passed and NaN in every slot no query reads (the null block,
unused blocks, slots past a context, positions a window hides): a kernel that read one would
return NaN. Sizes are tiny (head_dim 16, block_size 4, a few blocks, batch 2): the interpreter
runs each (sequence, KV head, split) program as numpy code.
"""
import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (make test exports it too)

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _support import run_python_without_gpu, skip_module_without
from hypothesis import given, settings, strategies as st

skip_module_without("triton")  # every test here runs the kernel (torch tensors, triton)
import torch  # noqa: E402

import lessonlib.triton_decode as td  # noqa: E402
from lessonlib import paged  # noqa: E402
from lessonlib.attention import attention_mask  # noqa: E402
from lessonlib.kernel_plan import LOG2_E  # noqa: E402
from lessonlib.triton_decode import split_kv_decode  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NULL = paged.NULL_BLOCK


# ------------------------------------------------------------------------------------------------
# A batch of contexts in a paged cache
# ------------------------------------------------------------------------------------------------
def build_batch(lens, *, bs=4, kv_heads=2, q_heads=4, d=16, dv=None, window=None, sink=0,
                seed=0, spare=3, nan=True):
    """(q, key_cache, value_cache, table, lens) as float64 numpy arrays and int32 tables: each
    sequence's keys written through its own shuffled blocks (never block 0), the null block in
    every table slot its query cannot see, NaN in every cache slot no query reads; table rows
    padded with the null block past a context."""
    rng = np.random.default_rng(seed)
    dv = d if dv is None else dv
    need = [-(-n // bs) for n in lens]
    num_blocks = 1 + sum(need) + spare
    ids = rng.permutation(np.arange(1, num_blocks))
    key_cache = np.full((num_blocks, bs, kv_heads, d), np.nan) if nan else \
        rng.normal(size=(num_blocks, bs, kv_heads, d))
    value_cache = np.full((num_blocks, bs, kv_heads, dv), np.nan) if nan else \
        rng.normal(size=(num_blocks, bs, kv_heads, dv))
    table = np.zeros((len(lens), max(need) + 1), np.int32)  # one spare column, null-padded
    used = 0
    for b, n in enumerate(lens):
        row = ids[used:used + need[b]]
        used += need[b]
        seen = attention_mask(1, n, causal=True, window=window, sink_tokens=sink)[0]
        for j in range(need[b]):
            if not seen[j * bs:(j + 1) * bs].any():
                row[j] = NULL
        table[b, :need[b]] = row
        for p in np.flatnonzero(seen):
            key_cache[row[p // bs], p % bs] = rng.normal(size=(kv_heads, d))
            value_cache[row[p // bs], p % bs] = rng.normal(size=(kv_heads, dv))
    q = rng.normal(size=(len(lens), q_heads, d))
    return q, key_cache, value_cache, table, np.asarray(lens, np.int32)


def as_torch(q, key_cache, value_cache, table, lens, dtype=torch.float32):
    return (torch.tensor(q, dtype=dtype), torch.tensor(key_cache, dtype=dtype),
            torch.tensor(value_cache, dtype=dtype), torch.tensor(table), torch.tensor(lens))


def numpy_split(q, key_cache, value_cache, table, lens, **opts):
    """lessonlib.paged.split_kv_decode, sequence by sequence, float64: (batch, heads, dv)."""
    return np.concatenate([paged.split_kv_decode(q[b:b + 1], key_cache, value_cache, table[b],
                                                 int(lens[b]), **opts)
                           for b in range(len(lens))])


def numpy_paged(q, key_cache, value_cache, table, lens, window=None, sink_tokens=0,
                scale=None):
    """lessonlib.paged.paged_attention of the same cache, the unsplit reference."""
    return np.concatenate([paged.paged_attention(q[b:b + 1], key_cache, value_cache, table[b],
                                                 int(lens[b]), window=window,
                                                 sink_tokens=sink_tokens, scale=scale)
                           for b in range(len(lens))])


# ------------------------------------------------------------------------------------------------
# The matrix: fp32 against numpy split-KV decode and paged attention
# ------------------------------------------------------------------------------------------------
# name: (context lengths, options of build_batch)
CASES = {
    "full blocks": ((12, 16), dict()),
    "ragged lengths": ((13, 7), dict()),
    "one key": ((1, 5), dict()),
    "window 5 over a null block": ((22, 11), dict(window=5)),
    "window of 1": ((14, 9), dict(window=1)),
    "window + sink tokens": ((23, 10), dict(window=6, sink=3)),
    "sink tokens, no window": ((10, 15), dict(sink=2)),
    "window wider than the context": ((9, 6), dict(window=40, sink=1)),
    "GQA 4:1": ((13, 18), dict(kv_heads=1, q_heads=4, window=7)),
    "MQA 1 kv head, 2 q heads": ((11, 6), dict(kv_heads=1, q_heads=2)),
    "MHA": ((10, 5), dict(kv_heads=2, q_heads=2, sink=1, window=3)),
    "separate value dim, odd head dims": ((9, 14), dict(d=12, dv=20)),
}
SPLITS = [1, 2, 3, 9]  # 9: more splits than blocks (and, for short contexts, than keys)


@pytest.mark.parametrize("num_splits", SPLITS)
@pytest.mark.parametrize("name", list(CASES))
def test_equals_numpy_split_kv_decode_and_paged_attention(name, num_splits):
    lens, opts = CASES[name]
    arrays = build_batch(lens, **opts)
    window, sink = opts.get("window"), opts.get("sink", 0)
    out = split_kv_decode(*as_torch(*arrays), num_splits=num_splits, window=window,
                          sink_tokens=sink)
    q, _, value_cache = arrays[:3]
    assert out.shape == (len(lens), q.shape[1], value_cache.shape[-1])
    assert out.dtype == torch.float32 and torch.isfinite(out).all()
    ref = numpy_split(*arrays, num_splits=num_splits, window=window, sink_tokens=sink)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
    unsplit = numpy_paged(*arrays, window=window, sink_tokens=sink)
    np.testing.assert_allclose(out.numpy(), unsplit, rtol=1e-5, atol=1e-5)


def test_the_window_table_holds_the_null_block_and_nan_that_is_never_read():
    arrays = build_batch((22, 11), window=5)
    _, key_cache, _, table, _ = arrays
    assert NULL in table[0, :5] and NULL in table[1, :2]
    assert np.isnan(key_cache[NULL]).all()  # the null block: NaN, and not read
    out = split_kv_decode(*as_torch(*arrays), num_splits=3, window=5)
    assert torch.isfinite(out).all()


def test_stage_one_writes_paged_split_states_and_empty_splits_are_the_identity():
    """Stage 1's partials are paged.split_kv_states, split for split (m in log2 units); the
    splits that see nothing (past the keys, or all outside the window) write -inf, 0, 0."""
    lens, num_splits, window, sink = (24, 7), 8, 3, 2
    arrays = build_batch(lens, window=window, sink=sink, seed=4)
    q, kc, vc, table, lens_t = as_torch(*arrays)
    batch, heads, dv = q.shape[0], q.shape[1], vc.shape[-1]
    m = torch.full((batch, heads, num_splits), 7.0)  # garbage: every entry must be written
    l, acc = torch.full_like(m, 7.0), torch.full((batch, heads, num_splits, dv), 7.0)
    out = torch.empty(batch, heads, dv)
    td._launch(q, kc, vc, table, lens_t, out, num_splits, window, sink, 0.25,
               partials=(m, l, acc))
    empty = 0
    for b in range(batch):
        states = paged.split_kv_states(arrays[0][b:b + 1], *arrays[1:3], arrays[3][b],
                                       int(lens[b]), num_splits=num_splits, window=window,
                                       sink_tokens=sink, scale=0.25)
        for s, state in enumerate(states):
            got_m = m[b, :, s].double().numpy() / LOG2_E
            if np.isneginf(state.m).all():
                empty += 1
                assert np.isneginf(got_m).all() and (l[b, :, s] == 0).all() \
                    and (acc[b, :, s] == 0).all()
                continue
            np.testing.assert_allclose(got_m, state.m, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(l[b, :, s].numpy(), state.l, rtol=1e-5)
            np.testing.assert_allclose(acc[b, :, s].numpy(), state.acc, rtol=1e-5, atol=1e-5)
    assert empty >= 8  # sequence 0: keys 2 .. 20 hidden; sequence 1: splits past 7 keys
    ref = numpy_split(*arrays, num_splits=num_splits, window=window, sink_tokens=sink,
                      scale=0.25)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_output_is_far_from_zero_and_from_the_unwindowed_answer():
    """The interpreter's silent failure, a kernel that writes zeros or ignores the mask, is
    told apart: the true rows are far from both."""
    arrays = build_batch((21, 13), nan=False, seed=5)  # a full table: every block is read
    q, kc, vc, table, lens = as_torch(*arrays)
    vc = vc + 1.0
    out = split_kv_decode(q, kc, vc, table, lens, num_splits=2, window=4, sink_tokens=1)
    assert (out.norm(dim=-1) > 0.5).all()
    shifted = (arrays[0], arrays[1], vc.double().numpy(), arrays[3], arrays[4])
    np.testing.assert_allclose(out.numpy(), numpy_paged(*shifted, window=4, sink_tokens=1),
                               rtol=1e-5, atol=1e-5)
    assert np.abs(out.numpy() - numpy_paged(*shifted)).max() > 0.1


def test_custom_scale_and_non_contiguous_caches():
    """vLLM keeps K and V in one tensor (num_blocks, 2, block_size, kv_heads, d): the kernel
    reads each half through its strides."""
    arrays = build_batch((15, 9), window=6, sink=2, seed=6)
    q, kc, vc, table, lens = as_torch(*arrays)
    kv = torch.stack([kc, vc], dim=1)
    kc2, vc2 = kv[:, 0], kv[:, 1]
    assert not kc2.is_contiguous()
    out = split_kv_decode(q, kc2, vc2, table, lens, num_splits=3, window=6, sink_tokens=2,
                          scale=0.3)
    ref = numpy_split(*arrays, num_splits=3, window=6, sink_tokens=2, scale=0.3)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)


@settings(max_examples=8, deadline=None)
@given(lens=st.lists(st.integers(1, 26), min_size=1, max_size=2),
       window=st.one_of(st.none(), st.integers(1, 30)), sink=st.integers(0, 5),
       kv_heads=st.sampled_from([1, 2]), group=st.sampled_from([1, 2, 4]),
       bs=st.sampled_from([1, 3, 4, 16]), num_splits=st.integers(1, 12), seed=st.integers(0, 99))
def test_random_configurations_equal_numpy(lens, window, sink, kv_heads, group, bs, num_splits,
                                           seed):
    arrays = build_batch(lens, bs=bs, kv_heads=kv_heads, q_heads=kv_heads * group,
                         window=window, sink=sink, seed=seed)
    out = split_kv_decode(*as_torch(*arrays), num_splits=num_splits, window=window,
                          sink_tokens=sink)
    ref = numpy_split(*arrays, num_splits=num_splits, window=window, sink_tokens=sink)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------------
# Half precision
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, atol", [(torch.float16, 2e-3), (torch.bfloat16, 2e-2)])
def test_half_precision_within_its_tolerance(dtype, atol):
    # fp16 runs the kernel in fp16 in the interpreter; bf16 runs in fp32 there and is rounded
    # back (Triton's interpreter cannot multiply bf16 tiles); a GPU runs both natively.
    arrays = build_batch((19, 10), kv_heads=1, q_heads=4, nan=False, seed=7)  # a full table
    q, kc, vc, table, lens = as_torch(*arrays, dtype=dtype)
    out = split_kv_decode(q, kc, vc, table, lens, num_splits=3, window=6, sink_tokens=2)
    assert out.dtype == dtype
    rounded = tuple(t.double().numpy() for t in (q, kc, vc)) + arrays[3:]
    ref = numpy_split(*rounded, num_splits=1, window=6, sink_tokens=2)  # from the same inputs
    err = np.abs(out.double().numpy() - ref).max()
    assert err <= atol, err
    far = numpy_paged(*rounded)  # without the window: the tolerance would see the difference
    assert np.abs(far - ref).max() > 10 * atol


# ------------------------------------------------------------------------------------------------
# Bad input: refused before the launch, the argument named
# ------------------------------------------------------------------------------------------------
@pytest.fixture
def no_launch(monkeypatch):
    def launched(*args, **kwargs):
        raise AssertionError("the kernel was launched for a bad input")
    monkeypatch.setattr(td, "_launch", launched)


_ARRAYS = build_batch((9, 6), window=5, sink=1, seed=8)
_Q, _KC, _VC, _TABLE, _LENS = as_torch(*_ARRAYS)
_OPTS = dict(num_splits=2, window=5, sink_tokens=1, scale=0.3)


def _with(**changes):
    args = dict(q=_Q, key_cache=_KC, value_cache=_VC, block_table=_TABLE,
                context_lens=_LENS) | changes
    return args


def _nan_read(cache, pos=8, seq=0):
    """cache with NaN at sequence seq's position pos, which its query reads."""
    bad = cache.clone()
    bad[int(_TABLE[seq, pos // 4]), pos % 4, 0, 0] = math.nan
    return bad


MESSAGES = [
    (dict(block_table=_TABLE.clone().index_put_((torch.tensor(0), torch.tensor(2)),
                                                torch.tensor(0, dtype=torch.int32))),
     {}, r"^block_table\[0, 2\] is the null block but sequence 0's query sees position 8"),
    (dict(block_table=_TABLE.clone().index_put_((torch.tensor(1), torch.tensor(0)),
                                                torch.tensor(99, dtype=torch.int32))),
     {}, r"^block_table\[1, 0\] = 99 is not a block of the cache"),
    (dict(block_table=_TABLE.long()), {}, r"^block_table must be int32"),
    (dict(block_table=_TABLE[:1]), {}, r"^block_table must be \(batch=2"),
    (dict(context_lens=torch.tensor([9, 0], dtype=torch.int32)), {}, r"^context_lens\[1\] = 0"),
    (dict(context_lens=torch.tensor([17, 6], dtype=torch.int32)), {},
     r"^context_lens\[0\] = 17 must be 1..16"),
    (dict(context_lens=_LENS[:1]), {}, r"^context_lens must be \(batch,\)"),
    (dict(key_cache=_nan_read(_KC)), {}, r"^key_cache holds non-finite values at block \d+, "
                                         r"slot 0 \(sequence 0, position 8\)"),
    (dict(value_cache=_nan_read(_VC, 0, 1)), {}, r"^value_cache holds non-finite values"),
    (dict(q=_Q.clone().index_fill_(0, torch.tensor(1), math.inf)), {},
     r"^q holds non-finite values"),
    (dict(key_cache=_KC[:, :, :, :8]), {}, r"^key_cache's head_dim must equal q's 16"),
    (dict(value_cache=_VC[:, :2]), {}, r"^value_cache must have key_cache's"),
    (dict(q=_Q[:, :3]), {}, r"^q heads \(3\) must be a multiple of the cache's kv_heads \(2\)"),
    (dict(key_cache=_KC.half()), {}, r"^key_cache must have q's dtype"),
    (dict(q=_Q.double()), {}, r"^q must be float32, float16 or bfloat16"),
    (dict(q=_Q[0]), {}, r"^q must have 3 dims"),
    ({}, dict(num_splits=0), r"^num_splits must be an integer >= 1"),
    ({}, dict(num_splits=65536), r"^num_splits must be an integer >= 1 and <= 65535"),
    ({}, dict(window=0), r"^window must be"),
    ({}, dict(sink_tokens=-1), r"^sink_tokens must be"),
    ({}, dict(scale=0.0), r"^scale must be"),
]


@pytest.mark.parametrize("tensors, options, says", MESSAGES)
def test_bad_input_is_refused_before_the_launch_with_its_name(tensors, options, says,
                                                              no_launch):
    with pytest.raises(ValueError, match=says):
        split_kv_decode(**_with(**tensors), **(_OPTS | options))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")  # numpy, inside
def test_scores_that_overflow_float32_are_a_value_error():  # the interpreter: the point here
    q = _Q * 1e36  # finite in float32; its scores, x 1000 x log2 e, are not
    with pytest.raises(ValueError, match=r"^finite q and key_cache overflowed the scores"):
        split_kv_decode(q, _KC, _VC, _TABLE, _LENS, num_splits=2, window=5, sink_tokens=1,
                        scale=1000.0)
    # A bound past float32 whose scores stay finite is computed (a one-hot softmax), no error.
    out = split_kv_decode(_Q * 1e37, _KC, _VC, _TABLE, _LENS, num_splits=2, window=5,
                          sink_tokens=1)
    assert torch.isfinite(out).all()


def _tensor_junk(valid):
    return [valid.double(), valid.long(), valid.bool(), valid.to(torch.complex64), valid[0],
            valid[None], valid.numpy(), valid.tolist(), "tensor", None]


from _bad import Case, bad_input_tests, ints, reals  # noqa: E402

BAD_INPUTS = [
    Case(split_kv_decode, args=(_Q, _KC, _VC, _TABLE, _LENS), kwargs=_OPTS,
         bad=dict(q=st.sampled_from(_tensor_junk(_Q) + [
                      _Q.clone().index_fill_(2, torch.tensor(3), math.nan), _Q[:, :3],
                      _Q[:, :, :8], torch.zeros(2, 4, 300)]),
                  key_cache=st.sampled_from(_tensor_junk(_KC) + [
                      _nan_read(_KC), _KC.half(), _KC[..., :8], _KC[:, :, :0]]),
                  value_cache=st.sampled_from(_tensor_junk(_VC) + [
                      _nan_read(_VC, 5, 1), _VC.half(), _VC[:, :3], _VC[:, :, :1]]),
                  block_table=st.sampled_from(_tensor_junk(_TABLE) + [
                      _TABLE.long(), _TABLE[:1], _TABLE[:, :0], _TABLE.float(), _TABLE - 1,
                      _TABLE + 100, torch.zeros_like(_TABLE)]),
                  context_lens=st.sampled_from(_tensor_junk(_LENS) + [
                      _LENS.long(), _LENS[:1], _LENS * 0, _LENS + 20, -_LENS]),
                  num_splits=ints(minimum=1, maximum=65535),
                  window=ints(minimum=1, none_ok=True), sink_tokens=ints(minimum=0),
                  scale=reals(above=0.0, below=float(torch.finfo(torch.float32).max) / LOG2_E,
                              none_ok=True))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


# ------------------------------------------------------------------------------------------------
# Without CUDA and without the interpreter: a RuntimeError that says how to run
# ------------------------------------------------------------------------------------------------
def test_without_cuda_or_interpreter_raises_runtime_error_saying_how_to_run():
    code = """
        import torch
        from lessonlib.triton_decode import split_kv_decode  # imports fine
        assert not torch.cuda.is_available()
        q, cache = torch.randn(1, 2, 16), torch.randn(3, 4, 1, 16)
        table, lens = torch.tensor([[1, 2]], dtype=torch.int32), torch.tensor([6], dtype=torch.int32)
        try:
            split_kv_decode(q, cache, cache, table, lens, num_splits=2)
        except RuntimeError as err:
            assert "TRITON_INTERPRET=1" in str(err), err
            print("ok")
    """
    result = run_python_without_gpu(code)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


# ------------------------------------------------------------------------------------------------
# The GPU path, checked without a GPU: compile both kernels for Hopper (sm_90)
# ------------------------------------------------------------------------------------------------
def test_kernels_compile_for_hopper_with_tensor_core_dots_and_no_spills():
    """The default configurations (``_config``) of fp16, bf16 and fp32 at head dims 64, 128
    and 256 compile to cubins that use the tensor cores (stage 1's two tl.dot) and keep
    everything in registers (no stack: no spills)."""
    code = """
        import json, os, subprocess, tempfile, triton, torch
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        import lessonlib.triton_decode as td

        def build(fn, consts, ptr_types, options):
            sig, attrs = {}, {}
            for i, name in enumerate(fn.arg_names):
                if name in consts:
                    sig[name] = "constexpr"
                elif name.endswith("_ptr"):
                    sig[name] = "*" + ptr_types.get(name, "fp32")
                    attrs[(i,)] = [["tt.divisibility", 16]]
                else:
                    sig[name] = "fp32" if name == "qk_scale" else "i32"
            kernel = triton.compile(ASTSource(fn, sig, consts, attrs=attrs),
                                    target=GPUTarget("cuda", 90, 32), options=options)
            cuobjdump = triton.__path__[0] + "/backends/nvidia/bin/cuobjdump"
            with tempfile.TemporaryDirectory() as tmp:
                cubin = os.path.join(tmp, "kernel.cubin")
                with open(cubin, "wb") as f:
                    f.write(kernel.asm["cubin"])
                usage = subprocess.run([cuobjdump, "--dump-resource-usage", cubin],
                                       capture_output=True, text=True, check=True).stdout
            ttgir = kernel.asm["ttgir"]
            return dict(stack=int(usage.split("STACK:")[1].split()[0]),
                        dots=ttgir.count("warp_group_dot ") + ttgir.count("tt.dot "))

        out = []
        for dtype, d, group, windowed in (("float16", 128, 4, True), ("bfloat16", 64, 8, False),
                                          ("float16", 256, 1, True), ("float32", 128, 2, True),
                                          ("bfloat16", 128, 8, False)):
            tt = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}[dtype]
            cfg = td._config(getattr(torch, dtype), d, d)
            unit = dict(stride_qd=1, stride_kd=1, stride_vd=1, stride_ad=1)
            one = build(td._split_kv_stage1_kernel, dict(
                unit, HEAD_DIM=d, HEAD_DIM_V=d, BLOCK_G=max(16, group), BLOCK_N=cfg["block_n"],
                BLOCK_D=d, BLOCK_DV=d, WINDOWED=windowed,
                DOT_PRECISION="ieee" if dtype == "float32" else "tf32"),
                dict(q_ptr=tt, k_ptr=tt, v_ptr=tt, table_ptr="i32", lens_ptr="i32"),
                dict(num_warps=cfg["num_warps"], num_stages=cfg["num_stages"]))
            two = build(td._split_kv_stage2_kernel, dict(stride_ad=1, stride_od=1, HEAD_DIM_V=d,
                                                         BLOCK_S=16, BLOCK_DV=d),
                        dict(o_ptr=tt), dict(num_warps=4 if d >= 128 else 2))
            out.append([dtype, d, one, two])
        print(json.dumps(out))
    """
    result = run_python_without_gpu(code)
    assert result.returncode == 0, result.stderr[-3000:]
    import json
    for dtype, d, one, two in json.loads(result.stdout.strip().splitlines()[-1]):
        assert one["dots"] >= 2, (dtype, d, one)
        assert one["stack"] == 0 and two["stack"] == 0, (dtype, d, one, two)


# ------------------------------------------------------------------------------------------------
# The GPU benchmark's decode script: a clear exit without CUDA, and its CPU dry run
# ------------------------------------------------------------------------------------------------
def test_benchmark_without_cuda_exits_2_saying_why():
    result = subprocess.run([sys.executable, "benchmarks/split_kv_decode_gpu.py"], cwd=REPO,
                            env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
                            | dict(CUDA_VISIBLE_DEVICES=""),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "needs a CUDA GPU" in result.stderr and "--dry-run" in result.stderr


def test_benchmark_dry_run_checks_the_kernel_against_sdpa_on_the_cpu():
    result = subprocess.run([sys.executable, "benchmarks/split_kv_decode_gpu.py", "--dry-run"],
                            cwd=REPO, env={k: v for k, v in os.environ.items()
                                           if k != "TRITON_INTERPRET"},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-3000:])
    assert "checks passed" in result.stdout and "FAIL" not in result.stdout
