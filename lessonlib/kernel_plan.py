"""The Triton kernel's loop bounds in plain Python: which key blocks each program visits.

``kernel_key_stretches`` restates, line for line, the integer arithmetic that
``lessonlib.triton_attention._flash_attention_fwd_kernel`` uses to bound its inner loop for one
program (query block), and ``kernel_tile_plan`` turns it into the tile map that
``triton_attention.kernel_tile_map`` records by running the kernel; tests check the two agree
tile for tile. The plan needs no triton (it works before ``TRITON_INTERPRET`` is decided) and
lays out a map in a millisecond, where the interpreter takes seconds.

The tile codes (``TILE_SKIPPED``, ``TILE_MASKED``, ``TILE_FULL``) are ``lessonlib.attention``'s:
one set for the numpy plan (``attention.block_map``), this plan and the kernel's record. The
kernel's constants that need no GPU (``LOG2_E``, ``block_d``) live here, and ``kernel_source``
reads the kernel's own lines from its file, so a notebook can read the kernel on a machine that
has no triton (macOS, Windows).

The arguments are checked as ``triton_attention``'s are: nq <= nk, ``window`` >= 1 or None,
``sink_tokens`` >= 0, block sizes >= 1.
"""
import ast
from collections import namedtuple
from pathlib import Path

import numpy as np

from . import _validate as check
from ._validate import int_at_least
from .attention import TILE_FULL, TILE_MASKED, TILE_SKIPPED  # the one set of tile codes

__all__ = ["Stretch", "STRETCH_NAMES", "kernel_key_stretches", "stretch_blocks",
           "kernel_tile_plan", "kernel_tile_counts", "LOG2_E", "block_d", "kernel_source"]

# The kernel records TILE_SKIPPED where its loop bounds never reach a tile, TILE_MASKED where
# it applies the mask (diagonal, window edge, sink block, ragged end), TILE_FULL elsewhere.

# One call of `_attend_to_key_blocks`: keys [start, end), visited BLOCK_N at a time from start.
Stretch = namedtuple("Stretch", "name start end masked")
Stretch.__doc__ = """Stretch(name, start, end, masked): one call of the kernel's inner loop, a
namedtuple. It visits keys [start, end), ``block_n`` at a time from ``start``, with the mask
(``masked`` True) or without it; ``name`` is one of ``STRETCH_NAMES``."""
STRETCH_NAMES = ("sink blocks", "window edge", "interior", "diagonal / ragged end")
"""The names of the four stretches, in the order the kernel streams them: ("sink blocks",
"window edge", "interior", "diagonal / ragged end")."""

LOG2_E = 1.4426950408889634  # exp(x) == exp2(x * LOG2_E): the kernel's scores are in log2 units
"""log2(e) = 1.4426950408889634: exp(x) == exp2(x * LOG2_E). The kernel multiplies its scores
by it, so its scores, m and the exponents are in log2 units."""
_KERNEL_FILE = Path(__file__).with_name("triton_attention.py")


def block_d(d):
    """The head dim ``d`` (an int >= 1) rounded up to a power of two (tl.arange needs one), at
    least 16 (tl.dot): the kernel's BLOCK_D."""
    d = int_at_least("d", d, 1)
    return max(16, 1 << (d - 1).bit_length())


def kernel_source(function, first, last):
    """Lines of ``function`` in lessonlib/triton_attention.py, from the first line containing
    ``first`` to the next line containing ``last`` (both kept), read from the file without
    importing triton. A name or marker that is not there is a ValueError naming it."""
    function, first, last = (check.text(name, value) for name, value in
                             (("function", function), ("first", first), ("last", last)))
    text = _KERNEL_FILE.read_text()
    defs = {n.name: n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}
    if function not in defs:
        raise ValueError(f"function must be one of {sorted(defs)}, got {function!r}")
    node = defs[function]
    lines = text.splitlines()[node.lineno - 1:node.end_lineno]
    i = next((n for n, line in enumerate(lines) if first in line), None)
    if i is None:
        raise ValueError(f"first: no line of {function} contains {first!r}")
    j = next((n for n in range(i, len(lines)) if last in lines[n]), None)
    if j is None:
        raise ValueError(f"last: no line of {function} from {first!r} on contains {last!r}")
    return "\n".join(lines[i:j + 1])


def _check(nq, nk, causal, window, sink_tokens, block_m, block_n):
    check.flag("causal", causal)
    nq, nk = int_at_least("nq", nq, 1), int_at_least("nk", nk, 1)
    if nq > nk:
        raise ValueError(f"nq must be <= nk (the queries are the last nq keys), got {nq} > {nk}")
    window = None if window is None else int_at_least("window", window, 1)
    return (nq, nk, window, int_at_least("sink_tokens", sink_tokens, 0),
            int_at_least("block_m", block_m, 1), int_at_least("block_n", block_n, 1))


def kernel_key_stretches(pid_m, nq, nk, *, causal=False, window=None, sink_tokens=0,
                         block_m=64, block_n=64):
    """The four stretches of keys program ``pid_m`` (0 <= pid_m < cdiv(nq, block_m)) streams, in
    the kernel's order.

    Returns four ``Stretch(name, start, end, masked)``; the inner loop runs
    ``for start in range(start, end, block_n)``, so a stretch covers key blocks
    ``start // block_n`` up to ``ceil(end / block_n) - 1`` (none when start >= end).
    """
    nq, nk, window, sink_tokens, block_m, block_n = _check(nq, nk, causal, window, sink_tokens,
                                                           block_m, block_n)
    pid_m = check.integer("pid_m", pid_m)
    if not 0 <= pid_m < -(-nq // block_m):
        raise ValueError(f"pid_m must be 0..{-(-nq // block_m) - 1} (cdiv(nq, block_m) "
                         f"programs per head), got {pid_m!r}")
    p_first = nk - nq + pid_m * block_m  # position of the block's first query
    p_last = min(p_first + block_m, nk) - 1  # ... and of its last real one
    lo, hi = 0, nk  # [lo, hi): the band of keys some query of the block can see
    if causal:
        hi = p_last + 1
    if window is not None:
        lo = max(p_first - window + 1, 0) // block_n * block_n
    full_lo, full_hi = lo, nk // block_n * block_n  # [full_lo, full_hi): no mask needed
    if causal:
        full_hi = (p_first + 1) // block_n * block_n
    if window is not None:
        full_lo = (max(p_last - window + 1, 0) + block_n - 1) // block_n * block_n
    full_lo = min(max(full_lo, lo), hi)
    full_hi = max(min(full_hi, hi), full_lo)
    sink_hi = 0
    if window is not None:
        sink_hi = min((sink_tokens + block_n - 1) // block_n * block_n, lo)
    bounds = ((0, sink_hi, True), (lo, full_lo, True), (full_lo, full_hi, False),
              (full_hi, hi, True))
    return [Stretch(name, s, e, m) for name, (s, e, m) in zip(STRETCH_NAMES, bounds)]


def stretch_blocks(stretch, block_n):
    """Key-block indices one stretch visits (``stretch`` from ``kernel_key_stretches``): a range,
    start // block_n .. ceil(end / block_n) - 1, empty when start >= end."""
    if not isinstance(stretch, tuple) or not hasattr(stretch, "start") \
            or not hasattr(stretch, "end"):
        raise ValueError(f"stretch must be a Stretch(name, start, end, masked) from "
                         f"kernel_key_stretches, got {check.describe(stretch)}")
    start = check.integer("stretch.start", stretch.start, minimum=0)
    end = check.integer("stretch.end", stretch.end, minimum=0)
    block_n = int_at_least("block_n", block_n, 1)
    return range(start // block_n, -(-end // block_n)) if end > start else range(0)


def kernel_tile_plan(nq, nk, *, causal=False, window=None, sink_tokens=0, block_m=64,
                     block_n=64):
    """int8 (cdiv(nq, block_m), cdiv(nk, block_n)): TILE_SKIPPED, TILE_MASKED or TILE_FULL per
    tile, from ``kernel_key_stretches``: what ``kernel_tile_map`` records, without running."""
    nq, nk, window, sink_tokens, block_m, block_n = _check(nq, nk, causal, window, sink_tokens,
                                                           block_m, block_n)
    codes = np.full((-(-nq // block_m), -(-nk // block_n)), TILE_SKIPPED, dtype=np.int8)
    for pid_m in range(codes.shape[0]):
        for st in kernel_key_stretches(pid_m, nq, nk, causal=causal, window=window,
                                       sink_tokens=sink_tokens, block_m=block_m,
                                       block_n=block_n):
            r = stretch_blocks(st, block_n)
            codes[pid_m, r.start:r.stop] = TILE_MASKED if st.masked else TILE_FULL
    return codes


def kernel_tile_counts(nq, nk, *, causal=False, window=None, sink_tokens=0, block_m=64,
                       block_n=64):
    """(masked, full): how many tiles of one head the kernel computes with and without the
    mask. The same counts as ``kernel_tile_plan``, without building the map."""
    nq, nk, window, sink_tokens, block_m, block_n = _check(nq, nk, causal, window, sink_tokens,
                                                           block_m, block_n)
    masked = full = 0
    for pid_m in range(-(-nq // block_m)):
        for st in kernel_key_stretches(pid_m, nq, nk, causal=causal, window=window,
                                       sink_tokens=sink_tokens, block_m=block_m,
                                       block_n=block_n):
            count = len(stretch_blocks(st, block_n))
            masked, full = (masked + count, full) if st.masked else (masked, full + count)
    return masked, full
