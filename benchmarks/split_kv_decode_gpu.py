"""Split-KV decode (lessonlib.triton_decode) on a CUDA GPU: correctness, then speed beside SDPA.

    .venv/bin/python benchmarks/split_kv_decode_gpu.py             # < 3 min on H100/H200
    .venv/bin/python benchmarks/split_kv_decode_gpu.py --quick     # fewer rows
    .venv/bin/python benchmarks/split_kv_decode_gpu.py --dry-run   # the checks, tiny, on the CPU

1. Correctness: one decode step of a batch whose keys sit in a paged cache (vLLM's layout,
   block_size 16, blocks handed out in a shuffled order, ragged context lengths, GQA, a
   window's null blocks and sink tokens, fp16 / bf16 / fp32, several num_splits) against
   torch.nn.functional.scaled_dot_product_attention of the same step: the query as one row,
   (1, hq, 1, d), and each sequence's keys and values gathered through its block table,
   (1, hq, n, d), with a boolean mask for the window and sinks, in float32. Any failure stops
   the script with exit status 1 before timing (unless --keep-going).
2. Speed: b = 1 and 8 sequences, 32 query heads over 8 KV heads, d = 128, fp16, context
   lengths 1,024 .. 131,072, num_splits 1 (no split: FlashAttention's decode grid) to 64. Time
   of the kernels' launch (inputs checked once, outside the timing, as SDPA does no checks),
   GB/s = bytes of K and V read / time, beside SDPA's flash backend on the contiguous
   (b, hkv, n, d) K and V with enable_gqa (what a decode step costs without paging).

Timing: triton.testing.do_bench (CUDA events, L2 flushed between calls), median. Without a
CUDA device the script says so and exits with status 2; --dry-run runs part 1 at tiny sizes on
the CPU under Triton's interpreter (TRITON_INTERPRET=1, set here before triton's import)
against SDPA on the CPU. Tables are Markdown, ready to paste into benchmarks/RESULTS.md.
"""
import argparse
import datetime
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

PARSER = argparse.ArgumentParser(description=__doc__.split("\n")[0])
PARSER.add_argument("--quick", action="store_true", help="fewer context lengths and splits")
PARSER.add_argument("--keep-going", action="store_true",
                    help="time the kernel even if a correctness check failed")
PARSER.add_argument("--dry-run", action="store_true",
                    help="only the correctness checks, tiny, on the CPU (Triton's interpreter)")
ARGS = PARSER.parse_args()


def fail(message, status=2):
    print(f"split_kv_decode_gpu.py: {message}", file=sys.stderr)
    sys.exit(status)


if ARGS.dry_run:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
elif os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
    fail("unset TRITON_INTERPRET (or pass --dry-run): this benchmark runs the compiled kernels "
         "on a CUDA GPU")

import torch  # noqa: E402

if not ARGS.dry_run and not torch.cuda.is_available():
    fail(f"needs a CUDA GPU, and torch {torch.__version__} (CUDA build: {torch.version.cuda}) "
         "sees none. On a CPU: --dry-run runs the correctness checks at a tiny size under "
         "Triton's interpreter, and TRITON_INTERPRET=1 .venv/bin/python -m pytest "
         "tests/test_triton_decode.py the kernel's tests")

import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402

from lessonlib.triton_decode import _launch, split_kv_decode  # noqa: E402

DEVICE = "cpu" if ARGS.dry_run else "cuda"
START = time.perf_counter()
TIME_BUDGET_S = 170


def elapsed():
    return time.perf_counter() - START


def paged_batch(lens, hq, hkv, d, dtype, bs, seed):
    """(q, key_cache, value_cache, block_table, context_lens): every block of every sequence
    written, handed out in a shuffled order (block 0 kept back, vLLM's null block)."""
    gen = torch.Generator().manual_seed(seed)
    need = [-(-n // bs) for n in lens]
    num_blocks = 1 + sum(need)
    order = torch.randperm(num_blocks - 1, generator=gen) + 1
    table = torch.zeros(len(lens), max(need), dtype=torch.int32)
    used = 0
    for b, k in enumerate(need):
        table[b, :k] = order[used:used + k]
        used += k
    kc = torch.randn(num_blocks, bs, hkv, d, generator=gen)
    vc = torch.randn(num_blocks, bs, hkv, d, generator=gen)
    q = torch.randn(len(lens), hq, d, generator=gen)
    return (q.to(DEVICE, dtype), kc.to(DEVICE, dtype), vc.to(DEVICE, dtype), table.to(DEVICE),
            torch.tensor(lens, dtype=torch.int32, device=DEVICE))


def null_the_window(table, lens, bs, window, sink):
    """The null block in each table slot no query sees (a sliding-window table)."""
    table = table.clone()
    for b, n in enumerate(lens):
        for j in range(-(-n // bs)):
            lo, hi = j * bs, min((j + 1) * bs, n)
            if hi <= n - window and lo >= sink:
                table[b, j] = 0
    return table


def sdpa_reference(q, kc, vc, table, lens, window, sink, scale=None):
    """SDPA of each sequence's one query row over its gathered keys, float32: (b, hq, d)."""
    out = []
    hq, hkv, bs = q.shape[1], kc.shape[2], kc.shape[1]
    for b, n in enumerate(lens.tolist()):
        pos = torch.arange(n, device=q.device)
        blocks = table[b].long()[pos // bs]
        k = kc[blocks, pos % bs].float().transpose(0, 1)  # (hkv, n, d)
        v = vc[blocks, pos % bs].float().transpose(0, 1)
        k = k.repeat_interleave(hq // hkv, dim=0)[None]
        v = v.repeat_interleave(hq // hkv, dim=0)[None]
        seen = torch.ones(n, dtype=torch.bool, device=q.device)
        if window is not None:
            seen = (n - 1 - pos < window) | (pos < sink)
            k, v = k.masked_fill(~seen[:, None], 0.0), v.masked_fill(~seen[:, None], 0.0)
        o = F.scaled_dot_product_attention(q[b, :, None].float()[None], k, v,
                                           attn_mask=seen[None, None, None, :], scale=scale)
        out.append(o[0, :, 0])
    return torch.stack(out)


# name: context lengths, (hq, hkv, d), dtype, window, sink tokens, num_splits
if ARGS.dry_run:
    CHECKS = [
        ("ragged, GQA 4:1", (13, 22), (4, 1, 16), torch.float32, None, 0, (1, 3)),
        ("window + sinks, null blocks", (29, 9), (2, 2, 16), torch.float16, 6, 2, (2, 9)),
        ("bf16, MQA", (17,), (2, 1, 32), torch.bfloat16, None, 0, (4,)),
    ]
    BLOCK = 4
else:
    CHECKS = [
        ("ragged, GQA 32:8", (1000, 4097, 17, 2048), (32, 8, 128), torch.float16, None, 0,
         (1, 4, 16, 64)),
        ("bf16, GQA 8:1", (3000, 513), (8, 1, 128), torch.bfloat16, None, 0, (1, 8, 33)),
        ("window 1024 + 4 sinks, null blocks", (5000, 800), (16, 4, 128), torch.float16, 1024,
         4, (1, 7, 32)),
        ("window 1", (300, 1), (8, 8, 64), torch.bfloat16, 1, 0, (1, 5)),
        ("fp32, d = 80", (777, 64), (4, 2, 80), torch.float32, None, 0, (1, 6)),
        ("d = 256, MQA", (2000,), (8, 1, 256), torch.float16, 256, 0, (1, 16)),
        ("more splits than keys", (10, 3), (8, 2, 128), torch.float16, None, 0, (64,)),
    ]
    BLOCK = 16
TOLERANCE = {torch.float16: 4e-3, torch.bfloat16: 3e-2, torch.float32: 2e-4}


def run_checks():
    print(f"## Correctness against float32 SDPA on the gathered keys ({DEVICE})\n")
    print("| case | dtype | context lengths | (hq, hkv, d) | num_splits | max abs error "
          "| tolerance | |")
    print("|---|---|---|---|---|---|---|---|")
    failures = total = 0
    for i, (name, lens, (hq, hkv, d), dtype, window, sink, splits) in enumerate(CHECKS):
        q, kc, vc, table, lens_t = paged_batch(lens, hq, hkv, d, dtype, BLOCK, seed=i)
        if window is not None:
            table = null_the_window(table, lens, BLOCK, window, sink)
        ref = sdpa_reference(q, kc, vc, table, lens_t, window, sink)
        for num_splits in splits:
            total += 1
            try:
                out = split_kv_decode(q, kc, vc, table, lens_t, num_splits=num_splits,
                                      window=window, sink_tokens=sink)
                err = (out.float() - ref).abs().max().item()
                ok = out.dtype == dtype and math.isfinite(err) and err <= TOLERANCE[dtype]
            except Exception as exc:  # a compile error is a failed check, reported with the rest
                err, ok = f"{type(exc).__name__}: {str(exc)[:200]}", False
            failures += not ok
            err_txt = f"{err:.2e}" if isinstance(err, float) else err
            print(f"| {name} | {str(dtype)[6:]} | {lens} | {(hq, hkv, d)} | {num_splits} "
                  f"| {err_txt} | {TOLERANCE[dtype]:.0e} | {'ok' if ok else '**FAIL**'} |")
    print(f"\n{total - failures}/{total} checks passed ({elapsed():.0f} s)\n")
    return failures


def bench_ms(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def sdpa_call(q, k, v):
    """SDPA's flash backend on one query row per sequence, K/V contiguous (b, hkv, n, d)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q4 = q[:, :, None]
    def call():
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
            return F.scaled_dot_product_attention(q4, k, v, enable_gqa=True)
    return call


def speed_table(batch, hq, hkv, d, ctxs, splits):
    dtype = torch.float16
    print(f"## Decode, b = {batch}, hq = {hq}, hkv = {hkv}, d = {d}, fp16, block_size {BLOCK}\n")
    print("| context | num_splits | Triton ms | Triton GB/s | SDPA ms | SDPA GB/s "
          "| Triton / SDPA time |")
    print("|---|---|---|---|---|---|---|")
    for n in ctxs:
        if elapsed() > TIME_BUDGET_S:
            print(f"| {n} | skipped: time budget | | | | | |")
            continue
        q, kc, vc, table, lens = paged_batch([n] * batch, hq, hkv, d, dtype, BLOCK, seed=n)
        kv_bytes = 2 * batch * n * hkv * d * kc.element_size()
        # SDPA's keys: the same values, contiguous per sequence (no block table).
        pos = torch.arange(n, device=DEVICE)
        blocks = table.long()[:, pos // BLOCK]  # (b, n)
        k = kc[blocks, pos % BLOCK].transpose(1, 2).contiguous()  # (b, hkv, n, d)
        v = vc[blocks, pos % BLOCK].transpose(1, 2).contiguous()
        try:
            s_ms = bench_ms(sdpa_call(q, k, v))
            sdpa_txt = f"{s_ms:.4f} | {kv_bytes / s_ms / 1e6:.0f}"
        except Exception as exc:
            s_ms, sdpa_txt = None, f"failed: {type(exc).__name__} |"
        for num_splits in splits:
            split_kv_decode(q, kc, vc, table, lens, num_splits=num_splits)  # checks + compile
            out = torch.empty(batch, hq, d, dtype=dtype, device=DEVICE)
            scale = 1.0 / math.sqrt(d)
            t_ms = bench_ms(lambda: _launch(q, kc, vc, table, lens, out, num_splits, None, 0,
                                            scale))
            ratio = f"{t_ms / s_ms:.2f}" if s_ms else ""
            print(f"| {n} | {num_splits} | {t_ms:.4f} | {kv_bytes / t_ms / 1e6:.0f} "
                  f"| {sdpa_txt} | {ratio} |")
        del q, kc, vc, k, v
    print(f"\n({elapsed():.0f} s)\n")


def main():
    if ARGS.dry_run:
        print("# Split-KV decode, dry run on the CPU (Triton interpreter)\n")
    else:
        props = torch.cuda.get_device_properties(0)
        print(f"# Split-KV decode on {props.name}\n")
        print(f"{datetime.date.today().isoformat()}; torch {torch.__version__} (CUDA "
              f"{torch.version.cuda}), triton {triton.__version__}, compute capability "
              f"{props.major}.{props.minor}, {props.total_memory / 2**30:.0f} GiB\n")
        torch.backends.cuda.matmul.allow_tf32 = False  # the float32 reference stays float32
    failures = run_checks()
    if failures and not ARGS.keep_going:
        print(f"{failures} correctness check(s) failed: not timing a wrong kernel "
              "(--keep-going to time it anyway)")
        return 1
    if ARGS.dry_run:
        return 0
    ctxs = (1024, 16384, 131072) if ARGS.quick else (1024, 4096, 16384, 65536, 131072)
    splits = (1, 8, 32) if ARGS.quick else (1, 4, 8, 16, 32, 64)
    for batch in (1, 8):
        speed_table(batch, 32, 8, 128, ctxs, splits)
    print(f"Total {elapsed():.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
