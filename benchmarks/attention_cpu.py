"""tiled_attention vs naive_attention vs torch SDPA on the CPU (float32), side by side.

    .venv/bin/python benchmarks/attention_cpu.py            # the full table (~15 min, 2 cores)
    .venv/bin/python benchmarks/attention_cpu.py --quick    # a tiny grid (seconds), for CI
    .venv/bin/python benchmarks/attention_cpu.py --headline 5   # h=8, d=64, n>=4096 rows only,
                                                    # 5 rounds of every method (a noisy machine)
    .venv/bin/python benchmarks/attention_cpu.py --tile     # where one tile's time goes

torch's peer is the path a model takes: four-dimensional (batch, heads, n, d) inputs, with the
backend named and enforced by ``torch.nn.attention.sdpa_kernel`` (torch raises rather than fall
back). ``sdpa`` is the fused CPU flash-attention kernel (``is_causal`` for the causal and dense
rows, the boolean mask for a sliding window); ``sdpa_math`` is the unfused math path beside it,
which materialises the scores: what (heads, n, d) inputs fall back to, and what this benchmark
measured before issue 33. For a sliding window, ``sdpa_band`` calls the fused kernel once per
query chunk over only the keys the window can reach. tests/test_benchmarks.py checks that each
of these runs the backend it names.

Each method is timed as its own block (alternating numpy and torch calls slows both) after a
warm-up call (fresh memory is slow on first touch); min and median of the repeats are printed.
GFLOP/s count the useful work, 4 d flops per visible (query, key) pair (two matmuls), beside the
BLAS ceiling measured first. Peak extra memory is measured in a separate process per method: the
high-water resident size after the call minus the resident size before it. The BLAS
threadpoolctl reports is printed first.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lessonlib.attention import (DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q, attention_mask,  # noqa: E402
                                 naive_attention, tiled_attention)

# method -> the torch SDPA backend it enforces (torch.nn.attention.SDPBackend member name) and
# the profiler op that backend runs as on the CPU.
SDPA_BACKENDS = {"sdpa": "FLASH_ATTENTION", "sdpa_band": "FLASH_ATTENTION", "sdpa_math": "MATH"}
BACKEND_OPS = {"FLASH_ATTENTION": "aten::_scaled_dot_product_flash_attention_for_cpu",
               "MATH": "aten::_scaled_dot_product_attention_math"}
METHODS = ("tiled", "naive", *SDPA_BACKENDS)


def inputs(h, n, d, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((h, n, d), dtype=np.float32) for _ in range(3))


def visible_pairs(n, causal, window):
    """The (query, key) pairs of n queries over n keys that the mask shows."""
    if window is None:
        return n * (n + 1) // 2 if causal else n * n
    return int(attention_mask(n, n, causal=causal, window=window).sum())


def gflops(h, n, d, causal, window, seconds):
    """Useful GFLOP/s: QK^T and PV, 2 d flops each per visible pair (dv = d)."""
    return 4 * d * h * visible_pairs(n, causal, window) / seconds / 1e9


def _band_chunks(n, window, chunk):
    """(query slice, key slice, mask) per query chunk: keys a window of `window` can reach."""
    out = []
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        k0 = max(0, lo - window + 1)
        p = np.arange(lo, hi)[:, None]
        j = np.arange(k0, hi)[None, :]
        out.append((slice(lo, hi), slice(k0, hi), (j <= p) & (p - j < window)))
    return out


def sdpa_call(method, q, k, v, causal, window):
    """A zero-argument callable running torch SDPA on 4-D (1, h, n, d) views of q, k, v, with
    only the backend `method` names allowed (torch raises if it cannot use it)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = getattr(SDPBackend, SDPA_BACKENDS[method])
    sdpa = torch.nn.functional.scaled_dot_product_attention
    tq, tk, tv = (torch.from_numpy(a)[None] for a in (q, k, v))  # (1, h, n, d): no copy
    n = q.shape[1]
    if method == "sdpa_band":
        if window is None or not causal:
            raise ValueError("sdpa_band is the causal sliding-window case: pass causal and window")
        chunks = [(qs, ks, torch.from_numpy(m)) for qs, ks, m in _band_chunks(n, window, window)]
        out = torch.empty_like(tq)

        def band():
            with sdpa_kernel([backend]):
                for qs, ks, m in chunks:
                    out[:, :, qs] = sdpa(tq[:, :, qs], tk[:, :, ks], tv[:, :, ks], attn_mask=m)
            return out
        return band
    if window is None:  # SDPA's own causal flag (no mask tensor); square, so top-left = ours
        kw = dict(is_causal=causal)
    else:  # the boolean mask a user would write: every score computed, then hidden
        kw = dict(attn_mask=torch.from_numpy(attention_mask(n, n, causal=causal, window=window)))

    def call():
        with sdpa_kernel([backend]):
            return sdpa(tq, tk, tv, **kw)
    return call


def make_call(method, q, k, v, causal, window, block_q=DEFAULT_BLOCK_Q, block_k=DEFAULT_BLOCK_K):
    """A zero-argument callable running one method on prepared inputs."""
    if method == "tiled":
        return lambda: tiled_attention(q, k, v, causal=causal, window=window, block_q=block_q,
                                       block_k=block_k)
    if method == "naive":
        return lambda: naive_attention(q, k, v, causal=causal, window=window)
    if method in SDPA_BACKENDS:
        return sdpa_call(method, q, k, v, causal, window)
    raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")


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


def blas_ceiling(d, block_q, block_k, threads, repeats=20):
    """Best GFLOP/s of float32 matmul on this machine: numpy and torch 2048^3 with their own
    threads, and tiled_attention's two tile products, (bq, d) @ (d, bk) and (bq, bk) @ (bk, d),
    at one BLAS thread in `threads` Python threads (how tiled_attention runs them)."""
    import torch
    from threadpoolctl import threadpool_limits
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2048, 2048), dtype=np.float32)
    ta = torch.from_numpy(a)
    s = rng.standard_normal((block_q, block_k), dtype=np.float32)
    qb, k, v = (rng.standard_normal(shape, dtype=np.float32)
                for shape in ((block_q, d), (block_k, d), (block_k, d)))

    def best(fn, flop, n=3):
        fn()
        return max(flop / min(_seconds(fn) for _ in range(n)) / 1e9, 0.0)

    def tiles():
        for _ in range(repeats):
            np.matmul(qb, k.T)
            np.matmul(s, v)

    def pool():
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(lambda _: tiles(), range(threads)))

    out = {"numpy 2048^3": best(lambda: a @ a, 2 * 2048**3),
           "torch 2048^3": best(lambda: ta @ ta, 2 * 2048**3)}
    with threadpool_limits(limits=1, user_api="blas"):
        out[f"numpy tiles {block_q}x{block_k}, d={d}, {threads} threads"] = best(
            pool, threads * repeats * 4 * block_q * block_k * d)
    return out


def _seconds(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def headline(rounds, h=8, d=64, repeats=3):
    """The rows the targets are stated on, in `rounds` rounds: each round times every method
    as its own block (warm-up, then `repeats` calls); min and median over all the calls, so
    load that comes and goes on a shared machine hits every method alike."""
    print(f"# headline rows: h={h}, d={d}, {rounds} rounds x {repeats} calls per method, "
          f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}")
    for info in blas_info():
        print(f"# threadpool: {info}")
    ceiling = blas_ceiling(d, DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K, os.cpu_count())
    print("| n | causal | method | min ms | median ms | useful GFLOP/s (min) | "
          "tiled/method (min) |")
    print("|---|---|---|---|---|---|---|")
    for n in (4096, 8192):
        methods = ("tiled", "sdpa", "sdpa_math") if n == 4096 else ("tiled", "sdpa")
        for causal in (True, False):
            q, k, v = inputs(h, n, d)
            calls = {m: make_call(m, q, k, v, causal, None) for m in methods}
            times = {m: [] for m in methods}
            for _ in range(rounds):
                for m in methods:
                    calls[m]()  # warm-up
                    times[m] += [_seconds(calls[m]) for _ in range(repeats)]
            t = min(times["tiled"])
            for m in methods:
                print(f"| {n} | {causal} | {m} | {min(times[m])*1e3:.1f} | "
                      f"{statistics.median(times[m])*1e3:.1f} | "
                      f"{gflops(h, n, d, causal, None, min(times[m])):.0f} | "
                      f"{t / min(times[m]):.2f} |", flush=True)
    for name, gf in blas_ceiling(d, DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K, os.cpu_count()).items():
        print(f"# BLAS ceiling, {name}: {gf:.0f} GFLOP/s (before: {ceiling[name]:.0f})")


def tile_steps(d, block_q=DEFAULT_BLOCK_Q, block_k=DEFAULT_BLOCK_K, tiles=200):
    """Each numpy call of one full tile of tiled_attention's loop (no mask), timed on one thread
    with one BLAS thread, beside the same matmuls in torch: where a tile's time goes."""
    import torch
    from threadpoolctl import threadpool_limits
    rng = np.random.default_rng(2)
    qb, k, v = (rng.standard_normal(shape, dtype=np.float32)
                for shape in ((block_q, d), (block_k, d), (block_k, d)))
    s, pv = np.empty((block_q, block_k), np.float32), np.empty((block_q, d), np.float32)
    m, l, acc = np.zeros(block_q, np.float32), np.zeros(block_q, np.float32), np.zeros_like(pv)
    state = {}
    steps = {  # the calls of lessonlib.attention._tiled_unit, in its order
        "s = q k^T (BLAS)": lambda: np.matmul(qb, k.T, out=s),
        "row max": lambda: state.__setitem__("mx", s.max(axis=-1)),
        "m, alpha (per row)": lambda: state.__setitem__(
            "a", np.exp(m - np.maximum(m, state["mx"]))),
        "s - m (broadcast)": lambda: np.subtract(s, state["mx"][:, None], out=s),
        "exp in place": lambda: np.exp(s, out=s),
        "row sum": lambda: state.__setitem__("l", l * state["a"] + s.sum(axis=-1)),
        "acc *= alpha": lambda: acc.__imul__(state["a"][:, None]),
        "acc += p v (BLAS)": lambda: acc.__iadd__(np.matmul(s, v, out=pv)),
    }
    us = dict.fromkeys(steps, 0.0)
    with threadpool_limits(limits=1, user_api="blas"), np.errstate(over="ignore"):
        for i in range(tiles + 5):
            for name, fn in steps.items():
                t = _seconds(fn)
                if i >= 5:  # warm-up tiles
                    us[name] += t * 1e6 / tiles
            np.copyto(s, 0.0)  # keep exp's input in range
    torch.set_num_threads(1)
    tq, tk, tv, ts = (torch.from_numpy(a) for a in (qb, k, v, s))
    flop = 2 * block_q * block_k * d
    t_torch = min(_seconds(lambda: (torch.mm(tq, tk.T), torch.mm(ts, tv))) for _ in range(50))
    total = sum(us.values())
    blas = us["s = q k^T (BLAS)"] + us["acc += p v (BLAS)"]
    print(f"\n## one {block_q} x {block_k} tile, d={d}, one thread: mean us per step "
          f"over {tiles} tiles\n")
    print("| step | us | share |")
    print("|---|---|---|")
    for name, t in us.items():
        print(f"| {name} | {t:.1f} | {t / total:.0%} |")
    print(f"| total | {total:.1f} | 100% |")
    print(f"\nnumpy's two matmuls: {2 * flop / blas * 1e-3:.0f} GFLOP/s; the same two in torch "
          f"(one thread): {2 * flop / t_torch / 1e9:.0f} GFLOP/s; the whole tile: "
          f"{2 * flop / total * 1e-3:.0f} GFLOP/s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny grid, for a smoke test")
    ap.add_argument("--headline", type=int, metavar="ROUNDS",
                    help="only the h=8, d=64, n>=4096 rows, ROUNDS rounds of every method")
    ap.add_argument("--tile", action="store_true",
                    help="time each step of tiled_attention's tile loop on one thread")
    ap.add_argument("--peak-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.tile:
        for d in (64, 128):
            tile_steps(d)
        return
    if args.peak_child:
        print(peak_child(**json.loads(args.peak_child)))
        return
    if args.headline:
        headline(args.headline)
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
    import torch
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads; SDPA on (1, h, n, d)"
          f" inputs, backend enforced: sdpa = {SDPA_BACKENDS['sdpa']}, "
          f"sdpa_math = {SDPA_BACKENDS['sdpa_math']}")
    for d in dims:
        for name, gf in blas_ceiling(d, DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K, os.cpu_count()).items():
            print(f"# BLAS ceiling, {name}: {gf:.0f} GFLOP/s")
    print(f"# tiled blocks: block_q={DEFAULT_BLOCK_Q}, block_k={DEFAULT_BLOCK_K}; "
          f"times in ms, min / median of {repeats} after a warm-up; ratios and GFLOP/s from the "
          f"min\n")

    print("| h | d | n | causal | tiled ms | naive ms | sdpa (flash) ms | sdpa_math ms | "
          "tiled/sdpa | tiled/sdpa_math | naive/tiled | tiled GFLOP/s | sdpa GFLOP/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for h in heads:
        for d in dims:
            for n in lengths:
                for causal in (False, True):
                    q, k, v = inputs(h, n, d)
                    res = {m: time_call(make_call(m, q, k, v, causal, None), repeats)
                           for m in ("tiled", "naive", "sdpa", "sdpa_math")}
                    t, nv, s, sm = (res[m][0] for m in ("tiled", "naive", "sdpa", "sdpa_math"))
                    cells = " | ".join(f"{res[m][0]*1e3:.1f} / {res[m][1]*1e3:.1f}"
                                       for m in ("tiled", "naive", "sdpa", "sdpa_math"))
                    print(f"| {h} | {d} | {n} | {causal} | {cells} | {t / s:.2f} | {t / sm:.2f} | "
                          f"{nv / t:.2f} | {gflops(h, n, d, causal, None, t):.0f} | "
                          f"{gflops(h, n, d, causal, None, s):.0f} |", flush=True)

    n, W = window_case
    print(f"\n## sliding window W={W}, causal, n={n}, h=8, d=64\n")
    print("sdpa and sdpa_math get the boolean (n, n) mask; sdpa_band calls the fused kernel per "
          f"query chunk of {W} over the keys the window can reach (chunk + W - 1), with its "
          "mask.\n")
    print("| method | min ms | median ms | useful GFLOP/s |")
    print("|---|---|---|---|")
    q, k, v = inputs(8, n, 64)
    for m in ("tiled", "sdpa_band", "sdpa", "sdpa_math"):
        t_min, t_med = time_call(make_call(m, q, k, v, True, W), repeats)
        print(f"| {m} | {t_min*1e3:.1f} | {t_med*1e3:.1f} | "
              f"{gflops(8, n, 64, True, W, t_min):.0f} |", flush=True)

    h, n, d = sweep_shape
    print(f"\n## block sizes, h={h}, n={n}, d={d}, causal\n")
    print("| block_q | block_k | min ms | median ms |")
    print("|---|---|---|---|")
    q, k, v = inputs(h, n, d)
    for bq, bk in sweep:
        t_min, t_med = time_call(make_call("tiled", q, k, v, True, None, bq, bk), repeats)
        print(f"| {bq} | {bk} | {t_min*1e3:.1f} | {t_med*1e3:.1f} |", flush=True)

    mem_methods = ("tiled", "naive", "sdpa", "sdpa_math")
    print("\n## peak extra memory of one causal call (separate processes)\n")
    print("| h | n | d | tiled MiB | naive MiB | sdpa (flash) MiB | sdpa_math MiB | "
          "tiled / naive |")
    print("|---|---|---|---|---|---|---|---|")
    for h, n, d in mem_cases:
        peaks = {m: peak_extra_bytes(m, h, n, d, True, None) for m in mem_methods}
        mib = " | ".join(f"{peaks[m] / 2**20:.1f}" for m in mem_methods)
        print(f"| {h} | {n} | {d} | {mib} | {peaks['tiled'] / max(peaks['naive'], 1):.3f} |",
              flush=True)


if __name__ == "__main__":
    main()
