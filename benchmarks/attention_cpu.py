"""tiled_attention vs naive_attention vs torch SDPA on the CPU (float32), side by side.

    .venv/bin/python benchmarks/attention_cpu.py            # the full table (~10 min, 2 cores)
    .venv/bin/python benchmarks/attention_cpu.py --quick    # a tiny grid (seconds), for CI

Each method is timed as its own block (alternating numpy and torch calls slows both) after a
warm-up call (fresh memory is slow on first touch); min and median of the repeats are printed.
Peak extra memory is measured in a separate process per method: the high-water resident size
after the call minus the resident size before it. The BLAS threadpoolctl reports is printed first.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lessonlib.attention import (DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q, attention_mask,  # noqa: E402
                                 naive_attention, tiled_attention)


def inputs(h, n, d, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((h, n, d), dtype=np.float32) for _ in range(3))


def make_call(method, q, k, v, causal, window, block_q=DEFAULT_BLOCK_Q, block_k=DEFAULT_BLOCK_K):
    """A zero-argument callable running one method on prepared inputs."""
    if method == "tiled":
        return lambda: tiled_attention(q, k, v, causal=causal, window=window, block_q=block_q,
                                       block_k=block_k)
    if method == "naive":
        return lambda: naive_attention(q, k, v, causal=causal, window=window)
    if method == "sdpa":
        import torch
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        n = q.shape[1]
        if window is None:  # SDPA's own causal path (no mask tensor)
            return lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv,
                                                                            is_causal=causal)
        mask = torch.from_numpy(attention_mask(n, n, causal=causal, window=window))
        return lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv,
                                                                        attn_mask=mask)
    raise ValueError(f"method must be tiled, naive or sdpa, got {method!r}")


def time_call(fn, repeats):
    fn()  # warm-up: first touch of fresh memory, thread pools, caches
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_child(method, h, n, d, causal, window):
    """Run in a fresh process: peak extra bytes of one call (high-water RSS minus RSS before).

    Writing 5 to /proc/self/clear_refs resets the high-water mark (VmHWM) to the current RSS,
    so imports and input creation do not count.
    """
    q, k, v = inputs(h, n, d)
    fn = make_call(method, q, k, v, causal, window)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status_kib("VmRSS")
    fn()
    return max(0, _status_kib("VmHWM") - before) * 1024


def peak_extra_bytes(method, h, n, d, causal, window):
    cmd = [sys.executable, __file__, "--peak-child",
           json.dumps(dict(method=method, h=h, n=n, d=d, causal=causal, window=window))]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return int(out.strip().splitlines()[-1])


def blas_info():
    from threadpoolctl import threadpool_info
    import torch  # noqa: F401  (so its OpenMP pool is listed too)
    return [{k: i.get(k) for k in ("user_api", "internal_api", "num_threads", "architecture",
                                    "version")} for i in threadpool_info()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny grid, for a smoke test")
    ap.add_argument("--peak-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peak_child:
        print(peak_child(**json.loads(args.peak_child)))
        return

    if args.quick:
        heads, dims, lengths, repeats = [2], [16], [128, 256], 2
        window_case, mem_cases, sweep = (256, 64), [(2, 256, 16)], [(64, 64), (128, 128)]
        sweep_shape = (2, 256, 16)
    else:
        heads, dims, lengths, repeats = [1, 8], [64, 128], [512, 1024, 2048, 4096, 8192], 3
        window_case, mem_cases = (8192, 512), [(8, 4096, 64), (8, 8192, 64)]
        sweep = [(128, 256), (256, 256), (256, 512), (512, 512), (128, 1024), (512, 1024)]
        sweep_shape = (8, 4096, 64)

    env = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    print(f"# attention on the CPU, float32, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}")
    print(f"# env: {env}")
    for info in blas_info():
        print(f"# threadpool: {info}")
    print(f"# tiled blocks: block_q={DEFAULT_BLOCK_Q}, block_k={DEFAULT_BLOCK_K}; "
          f"times in ms, min / median of {repeats} after a warm-up\n")

    print("| h | d | n | causal | tiled ms | naive ms | sdpa ms | tiled/sdpa | naive/tiled |")
    print("|---|---|---|---|---|---|---|---|---|")
    for h in heads:
        for d in dims:
            for n in lengths:
                for causal in (False, True):
                    q, k, v = inputs(h, n, d)
                    res = {m: time_call(make_call(m, q, k, v, causal, None), repeats)
                           for m in ("tiled", "naive", "sdpa")}
                    t, nv, s = (res[m][0] * 1e3 for m in ("tiled", "naive", "sdpa"))
                    print(f"| {h} | {d} | {n} | {causal} | {t:.1f} / {res['tiled'][1]*1e3:.1f} | "
                          f"{nv:.1f} / {res['naive'][1]*1e3:.1f} | {s:.1f} / {res['sdpa'][1]*1e3:.1f}"
                          f" | {t / s:.2f} | {nv / t:.2f} |", flush=True)

    n, W = window_case
    print(f"\n## sliding window W={W}, causal, n={n}, h=8, d=64 (SDPA gets the same boolean mask)\n")
    print("| method | min ms | median ms |")
    print("|---|---|---|")
    q, k, v = inputs(8, n, 64)
    for m in ("tiled", "sdpa"):
        t_min, t_med = time_call(make_call(m, q, k, v, True, W), repeats)
        print(f"| {m} | {t_min*1e3:.1f} | {t_med*1e3:.1f} |", flush=True)

    h, n, d = sweep_shape
    print(f"\n## block sizes, h={h}, n={n}, d={d}, causal\n")
    print("| block_q | block_k | min ms | median ms |")
    print("|---|---|---|---|")
    q, k, v = inputs(h, n, d)
    for bq, bk in sweep:
        t_min, t_med = time_call(make_call("tiled", q, k, v, True, None, bq, bk), repeats)
        print(f"| {bq} | {bk} | {t_min*1e3:.1f} | {t_med*1e3:.1f} |", flush=True)

    print("\n## peak extra memory of one causal call (separate processes)\n")
    print("| h | n | d | tiled MiB | naive MiB | sdpa MiB | tiled / naive |")
    print("|---|---|---|---|---|---|---|")
    for h, n, d in mem_cases:
        peaks = {m: peak_extra_bytes(m, h, n, d, True, None) for m in ("tiled", "naive", "sdpa")}
        mib = {m: b / 2**20 for m, b in peaks.items()}
        print(f"| {h} | {n} | {d} | {mib['tiled']:.1f} | {mib['naive']:.1f} | {mib['sdpa']:.1f} | "
              f"{peaks['tiled'] / max(peaks['naive'], 1):.3f} |", flush=True)


if __name__ == "__main__":
    main()
