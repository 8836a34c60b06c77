"""RoPE cos/sin tables: time and worst error against float64, ours beside torch's float32 table.

    .venv/bin/python benchmarks/rope_tables.py                 # 131,072 positions x 128 (Llama 3.1)
    .venv/bin/python benchmarks/rope_tables.py --n 32768 --repeats 3

The table is what engines build once per config: cos and sin of m * theta_i for every position m
and pair i, 131,072 x 64 pairs = 131,072 x 128 numbers (vLLM's cos_sin_cache shape). Methods:

  lessonlib    float64 angles reduced mod 2 pi, then float32 cos/sin (lessonlib.rope.cos_sin_table)
  numpy f64    float64 angles, float64 cos/sin (the reference the errors are measured against)
  torch f32    torch.outer(positions.float(), inv_freq.float()).cos()/.sin(): the float32 angles
               HF's rotary embedding and vLLM's _compute_cos_sin_cache form

Each method is timed as its own block after a warm-up call (fresh memory is slow on first touch);
min and median of the repeats are printed. Errors are the largest |table - float64| over cos and
sin, overall and over the last 1,024 positions (where float32 angles lose the most).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lessonlib.models.configs import load_config  # noqa: E402
from lessonlib.rope import cos_sin_table, rope_frequencies  # noqa: E402


def timed(fn, repeats):
    fn()  # warm-up
    times_ms = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times_ms.append((time.perf_counter() - start) * 1e3)
    return min(times_ms), statistics.median(times_ms), out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=131072, help="positions (default 131072)")
    parser.add_argument("--config", default="Llama-3.1-8B", help="a lessonlib.models.configs name")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    try:
        from threadpoolctl import threadpool_info
        print("threadpools:", [(p["internal_api"], p["num_threads"]) for p in threadpool_info()])
    except ImportError:
        pass
    # the table itself, without the attention factor, so every method computes the same numbers
    inv_freq, _ = rope_frequencies(load_config(args.config), seq_len=args.n)
    n, h = args.n, inv_freq.size
    print(f"config {args.config}: {n} positions x {h} pairs (cos and sin: {n} x {2 * h} numbers)")

    ms_min, ms_med, (ref_cos, ref_sin) = timed(
        lambda: (np.cos(a := np.multiply.outer(np.arange(n, dtype=np.float64), inv_freq)), np.sin(a)),
        args.repeats)
    rows = [("numpy f64", ms_min, ms_med, 0.0, 0.0)]

    def errors(cos, sin):
        tail = slice(max(0, n - 1024), n)
        worst = lambda s: max(np.abs(np.asarray(cos[s], np.float64) - ref_cos[s]).max(),  # noqa: E731
                              np.abs(np.asarray(sin[s], np.float64) - ref_sin[s]).max())
        return worst(slice(None)), worst(tail)

    ms_min, ms_med, (cos, sin) = timed(lambda: cos_sin_table(inv_freq, n), args.repeats)
    rows.append(("lessonlib", ms_min, ms_med, *errors(cos, sin)))

    import torch
    positions = torch.arange(n, dtype=torch.float32)
    inv32 = torch.from_numpy(inv_freq).float()
    ms_min, ms_med, (tcos, tsin) = timed(
        lambda: (torch.cos(f := torch.outer(positions, inv32)), torch.sin(f)), args.repeats)
    rows.append((f"torch f32 ({torch.get_num_threads()} threads)", ms_min, ms_med,
                 *errors(tcos.numpy(), tsin.numpy())))

    print(f"{'method':<24}{'min ms':>9}{'median ms':>11}{'max err':>11}{'err, last 1024':>16}")
    for name, lo, med, err, err_tail in rows:
        print(f"{name:<24}{lo:>9.1f}{med:>11.1f}{err:>11.1e}{err_tail:>16.1e}")
    print("target: lessonlib <= 100 ms with max err <= 1e-6")


if __name__ == "__main__":
    main()
