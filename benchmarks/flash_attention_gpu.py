"""The Triton FlashAttention kernel on a CUDA GPU: correctness first, then speed beside torch SDPA.

    .venv/bin/python benchmarks/flash_attention_gpu.py            # everything, < 5 min on H100/H200
    .venv/bin/python benchmarks/flash_attention_gpu.py --quick    # a smaller grid (~1-2 min)

1. Correctness over the feature grid (causal, window + sink tokens, learned sinks, GQA 8/2 and
   8/1, decode, ragged lengths, d = 80 and 256, non-contiguous inputs; fp16, bf16, fp32) against
   a float32 reference built on torch.nn.functional.scaled_dot_product_attention with an explicit
   boolean mask (learned sinks: a float32 softmax with the sink as one more column). Any failure
   stops the script with exit status 1 before timing anything (unless --keep-going).
2. Block-size tuning: a few spill-free configurations (checked by compiling for sm_90) at
   n = 4096, fp16, per head dim; the fastest is used for the tables and printed, so that
   lessonlib.triton_attention.default_config can adopt it.
3. TFLOP/s (4 * b * h * n^2 * d, halved when causal) of the kernel beside SDPA's flash backend
   for b = 4, h = 32, d in {64, 128}, n = 1,024 .. 16,384, fp16 and bf16, causal and not.
4. A causal window-4096 series, n = 4,096 .. 65,536: the kernel's time per token stays flat
   (linear cost), beside dense causal SDPA (quadratic).

Timing: triton.testing.do_bench (CUDA events, L2 flushed between calls), median of the repeats.
Without a CUDA device the script says so and exits with status 2. Tables are Markdown, ready to
paste into benchmarks/RESULTS.md.
"""
import argparse
import datetime
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def fail(message, status=2):
    print(f"flash_attention_gpu.py: {message}", file=sys.stderr)
    sys.exit(status)


if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
    fail("unset TRITON_INTERPRET: this benchmark runs the compiled kernel on a CUDA GPU")

import torch  # noqa: E402

if not torch.cuda.is_available():
    fail(f"needs a CUDA GPU, and torch {torch.__version__} (CUDA build: {torch.version.cuda}) "
         "sees none. On a CPU, run the kernel's tests instead: "
         "TRITON_INTERPRET=1 .venv/bin/python -m pytest tests/test_triton_attention.py")

import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

from lessonlib.triton_attention import _launch, default_config, flash_attention  # noqa: E402

DEVICE = "cuda"
START = time.perf_counter()
TIME_BUDGET_S = 285  # stop adding rows past this, so the script finishes within 5 minutes


def elapsed():
    return time.perf_counter() - START


def randn(*shape, dtype, seed):
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    return torch.randn(*shape, generator=gen, device=DEVICE, dtype=torch.float32).to(dtype)


# ------------------------------------------------------------------------------------------------
# 1. Correctness
# ------------------------------------------------------------------------------------------------
def visible_mask(nq, nk, causal, window, sink_tokens):
    p = torch.arange(nk - nq, nk, device=DEVICE)[:, None]
    j = torch.arange(nk, device=DEVICE)[None, :]
    ok = torch.ones(nq, nk, dtype=torch.bool, device=DEVICE)
    if causal:
        ok &= j <= p
    if window is not None:
        ok &= (p - j < window) | (j < sink_tokens)
    return ok


def reference(q, k, v, causal=False, window=None, sink_tokens=0, sink_logits=None, scale=None,
              dtype=torch.float32):
    """SDPA with an explicit boolean mask, in float32 unless told otherwise; with learned sinks
    (SDPA has none), a plain float32 softmax with the sink logit as one more column."""
    q, k, v = (t.to(dtype) for t in (q, k, v))
    hq, hkv = q.shape[1], k.shape[1]
    k = k.repeat_interleave(hq // hkv, dim=1)
    v = v.repeat_interleave(hq // hkv, dim=1)
    nq, nk, d = q.shape[2], k.shape[2], q.shape[3]
    mask = visible_mask(nq, nk, causal, window, sink_tokens)
    scale = 1 / math.sqrt(d) if scale is None else scale
    if sink_logits is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    s = (q @ k.transpose(-1, -2)) * scale
    s = s.masked_fill(~mask, float("-inf"))
    sink = torch.as_tensor(sink_logits, dtype=torch.float32, device=DEVICE).view(1, hq, 1, 1)
    s = torch.cat([s, sink.expand(q.shape[0], hq, nq, 1)], dim=-1)
    return torch.softmax(s, dim=-1)[..., :nk] @ v


SINKS8 = [0.5, -1.0, 2.0, 0.0, 1.5, -0.5, 3.0, 0.25]
# name: (b, hq, hkv, nq, nk, d), dtype, options
CHECKS = [
    ("dense, ragged n", (2, 8, 8, 1000, 1000, 64), torch.float16, dict()),
    ("causal", (2, 8, 8, 1024, 1024, 128), torch.float16, dict(causal=True)),
    ("causal, nq < nk", (2, 8, 8, 300, 1000, 64), torch.bfloat16, dict(causal=True)),
    ("window + sink tokens", (2, 8, 8, 2000, 2000, 128), torch.float16,
     dict(causal=True, window=256, sink_tokens=4)),
    ("window + sinks, not causal", (1, 8, 8, 777, 777, 64), torch.bfloat16,
     dict(window=100, sink_tokens=3)),
    ("learned sinks + window, GQA 8/2", (2, 8, 2, 1500, 1500, 64), torch.bfloat16,
     dict(causal=True, window=128, sink_tokens=4, sink_logits=SINKS8)),
    ("learned sinks", (1, 8, 8, 512, 512, 128), torch.float16,
     dict(causal=True, sink_logits=SINKS8)),
    ("GQA 8/2", (2, 8, 2, 1024, 1024, 128), torch.float16, dict(causal=True)),
    ("MQA 8/1", (2, 8, 1, 640, 640, 64), torch.bfloat16, dict()),
    ("decode, window + sinks", (4, 8, 2, 1, 4097, 128), torch.float16,
     dict(causal=True, window=1024, sink_tokens=4, sink_logits=SINKS8)),
    ("decode", (4, 8, 8, 1, 3000, 64), torch.bfloat16, dict(causal=True)),
    ("fp32, d = 80", (1, 8, 8, 333, 333, 80), torch.float32, dict(causal=True, scale=0.2)),
    ("d = 256", (1, 8, 8, 500, 500, 256), torch.float16, dict(causal=True)),
    ("bf16 dense, d = 128", (2, 8, 8, 2048, 2048, 128), torch.bfloat16, dict()),
    ("non-contiguous (b, n, h, d)", (2, 8, 4, 700, 700, 64), torch.float16,
     dict(causal=True, window=300)),
]
TOLERANCE = {torch.float16: 4e-3, torch.bfloat16: 3e-2, torch.float32: 2e-4}


def run_checks():
    print("## Correctness against a float32 SDPA reference\n")
    print("| case | dtype | shape (b, hq, hkv, nq, nk, d) | max abs error | same-dtype SDPA error "
          "| tolerance | |")
    print("|---|---|---|---|---|---|---|")
    failures = 0
    for i, (name, (b, hq, hkv, nq, nk, d), dtype, opts) in enumerate(CHECKS):
        q = randn(b, hq, nq, d, dtype=dtype, seed=3 * i)
        k = randn(b, hkv, nk, d, dtype=dtype, seed=3 * i + 1)
        v = randn(b, hkv, nk, d, dtype=dtype, seed=3 * i + 2)
        if name.startswith("non-contiguous"):  # (b, n, h, d) in memory, viewed as (b, h, n, d)
            q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
        ref = reference(q, k, v, **opts)
        try:
            out = flash_attention(q, k, v, **opts)
            torch.cuda.synchronize()
            err = (out.float() - ref).abs().max().item()
            ok = out.dtype == dtype and math.isfinite(err) and err <= TOLERANCE[dtype]
        except Exception as exc:  # a compile error is a failed check, reported with the rest
            err, ok = f"{type(exc).__name__}: {str(exc)[:200]}", False
        # What SDPA itself gets wrong in this dtype (a scale for the kernel's error).
        if opts.get("sink_logits") is None:
            sdpa = reference(q, k, v, **opts, dtype=dtype)
            sdpa_err = f"{(sdpa.float() - ref).abs().max().item():.2e}"
        else:
            sdpa_err = "n/a (no sinks in SDPA)"
        failures += not ok
        err_txt = f"{err:.2e}" if isinstance(err, float) else err
        print(f"| {name} | {str(dtype)[6:]} | {(b, hq, hkv, nq, nk, d)} | {err_txt} | {sdpa_err} "
              f"| {TOLERANCE[dtype]:.0e} | {'ok' if ok else '**FAIL**'} |")
    print(f"\n{len(CHECKS) - failures}/{len(CHECKS)} checks passed ({elapsed():.0f} s)\n")
    return failures


# ------------------------------------------------------------------------------------------------
# 2.-4. Speed
# ------------------------------------------------------------------------------------------------
def bench_ms(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def tflops(b, h, n, d, causal, ms):
    flops = 4 * b * h * n * n * d / (2 if causal else 1)
    return flops / (ms * 1e-3) / 1e12


def checked_call(q, k, v, config, **opts):
    """flash_attention as a student calls it: every input checked (NaN/inf and the overflow
    bound: three max-reductions over q, k, v and one device sync), then the launch."""
    return lambda: flash_attention(q, k, v, block_m=config["block_m"], block_n=config["block_n"],
                                   num_warps=config["num_warps"],
                                   num_stages=config["num_stages"], **opts)


def kernel_call(q, k, v, config, causal=False, window=None):
    """The kernel launch alone, as SDPA is timed: the inputs are checked once, here, by a full
    flash_attention call (which also compiles the kernel), not inside the timed call."""
    checked_call(q, k, v, config, causal=causal, window=window)()
    o = torch.empty_like(q)
    scale = 1.0 / math.sqrt(q.shape[-1])
    return lambda: _launch(q, k, v, o, causal, window, 0, None, scale, config, tiles=None)


def checks_table(b, h, n, d, config):
    """What the input checks cost beside the launch, at one size (side by side, one run)."""
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
    launch, checked = bench_ms(kernel_call(q, k, v, config)), bench_ms(checked_call(q, k, v, config))
    print(f"Input checks at b={b}, h={h}, n={n}, d={d}: launch {launch:.3f} ms, with the checks "
          f"{checked:.3f} ms ({checked / launch:.2f}x)\n")


def sdpa_flash_call(q, k, v, causal):
    def call():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return call


# Spill-free candidates (compiled for sm_90 offline: no local memory); the first is the default.
CANDIDATES = {
    64: [(128, 64, 4, 3), (128, 128, 8, 3), (128, 64, 8, 3), (64, 64, 4, 3), (128, 64, 4, 4)],
    128: [(128, 64, 8, 3), (128, 64, 8, 4), (128, 32, 8, 3), (64, 64, 4, 3)],
}


def as_config(t):
    return dict(zip(("block_m", "block_n", "num_warps", "num_stages"), t))


def tune(b, h, n, head_dims, quick):
    print(f"## Block sizes (fp16, b = {b}, h = {h}, n = {n}, not causal)\n")
    print("| d | BLOCK_M | BLOCK_N | warps | stages | TFLOP/s | |")
    print("|---|---|---|---|---|---|---|")
    best = {}
    for d in head_dims:
        q, k, v = (randn(b, h, n, d, dtype=torch.float16, seed=s) for s in range(3))
        default = default_config(d, n, torch.float16)
        results = []
        for cand in CANDIDATES[d][:2 if quick else None]:
            config = as_config(cand)
            try:
                ms = bench_ms(kernel_call(q, k, v, config))
                results.append((tflops(b, h, n, d, False, ms), cand))
            except Exception as exc:  # e.g. out of shared memory on a smaller GPU
                print(f"| {d} | {' | '.join(map(str, cand))} | failed: {type(exc).__name__} | |")
        top = max(results)[1] if results else CANDIDATES[d][0]
        best[d] = as_config(top)
        for value, cand in results:
            tags = [t for t, on in (("default", as_config(cand) == default), ("best", cand == top))
                    if on]
            print(f"| {d} | {' | '.join(map(str, cand))} | {value:.0f} | {', '.join(tags)} |")
        del q, k, v
    print(f"\n({elapsed():.0f} s)\n")
    return best


def dense_table(b, h, ns, head_dims, configs):
    print(f"## Dense attention, b = {b}, h = {h}: TFLOP/s (4 b h n^2 d, halved when causal)\n")
    print("| dtype | causal | d | n | Triton ms | Triton TFLOP/s | SDPA flash ms "
          "| SDPA TFLOP/s | Triton / SDPA |")
    print("|---|---|---|---|---|---|---|---|---|")
    for dtype in (torch.float16, torch.bfloat16):
        for causal in (False, True):
            for d in head_dims:
                for n in ns:
                    if elapsed() > TIME_BUDGET_S:
                        print(f"| {str(dtype)[6:]} | {causal} | {d} | {n} | skipped: time "
                              "budget | | | | |")
                        continue
                    q, k, v = (randn(b, h, n, d, dtype=dtype, seed=s) for s in range(3))
                    t_ms = bench_ms(kernel_call(q, k, v, configs[d], causal=causal))
                    s_ms = bench_ms(sdpa_flash_call(q, k, v, causal))
                    t_tf, s_tf = tflops(b, h, n, d, causal, t_ms), tflops(b, h, n, d, causal, s_ms)
                    print(f"| {str(dtype)[6:]} | {causal} | {d} | {n} | {t_ms:.3f} | {t_tf:.0f} "
                          f"| {s_ms:.3f} | {s_tf:.0f} | {t_tf / s_tf:.2f} |")
                    del q, k, v
    print(f"\n({elapsed():.0f} s)\n")


def window_table(b, h, d, window, ns, config):
    print(f"## Sliding window {window} (causal), fp16, b = {b}, h = {h}, d = {d}\n")
    print("| n | Triton window ms | Triton us per query token | effective TFLOP/s "
          "| SDPA flash dense causal ms | window speed-up over dense SDPA |")
    print("|---|---|---|---|---|---|")
    for n in ns:
        if elapsed() > TIME_BUDGET_S:
            print(f"| {n} | skipped: time budget | | | | |")
            continue
        q, k, v = (randn(b, h, n, d, dtype=torch.float16, seed=s) for s in range(3))
        t_ms = bench_ms(kernel_call(q, k, v, config, causal=True, window=window))
        s_ms = bench_ms(sdpa_flash_call(q, k, v, True))
        pairs = window * n - window * (window - 1) // 2 if n >= window else n * (n + 1) // 2
        eff = 4 * b * h * pairs * d / (t_ms * 1e-3) / 1e12
        print(f"| {n} | {t_ms:.3f} | {1e3 * t_ms / n:.3f} | {eff:.0f} | {s_ms:.3f} "
              f"| {s_ms / t_ms:.2f}x |")
        del q, k, v
    print(f"\n({elapsed():.0f} s)\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller grid, fewer candidates")
    parser.add_argument("--keep-going", action="store_true",
                        help="time the kernel even if a correctness check failed")
    args = parser.parse_args()

    props = torch.cuda.get_device_properties(0)
    print(f"# Triton FlashAttention on {props.name}\n")
    print(f"{datetime.date.today().isoformat()}; torch {torch.__version__} (CUDA "
          f"{torch.version.cuda}), triton {triton.__version__}, compute capability "
          f"{props.major}.{props.minor}, {props.total_memory / 2**30:.0f} GiB\n")
    torch.backends.cuda.matmul.allow_tf32 = False  # the float32 reference stays float32

    failures = run_checks()
    if failures and not args.keep_going:
        print(f"{failures} correctness check(s) failed: not timing a wrong kernel "
              "(--keep-going to time it anyway)")
        return 1

    b, h = 4, 32
    head_dims = (64, 128)
    ns = (1024, 4096, 16384) if args.quick else (1024, 2048, 4096, 8192, 16384)
    configs = tune(b, h, 4096, head_dims, args.quick)
    dense_table(b, h, ns, head_dims, configs)
    checks_table(b, h, 1024, 128, configs[128])
    window_ns = (4096, 16384, 65536) if args.quick else (4096, 8192, 16384, 32768, 65536)
    window_table(b, h, 128, 4096, window_ns, configs[128])
    print(f"Total {elapsed():.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
