"""Widget for notebook 04: which tiles the Triton FlashAttention kernel computes, and how many.

The map comes from ``lessonlib.kernel_plan`` (the kernel's loop bounds in plain Python, checked
tile for tile against the kernel): the interpreter takes seconds for a map that Python lays out
in a millisecond, and a slider must redraw at once. Nothing here imports triton.
"""
from functools import lru_cache

import ipywidgets as widgets
import numpy as np

from .. import _validate as check
from ..attention import TILE_FULL, TILE_MASKED
from ..kernel_plan import kernel_key_stretches, kernel_tile_plan, stretch_blocks
from ..plots import triton as plots
from ..plots import FIGURE_WIDTH
from ._base import (Explorer, checkbox, freeze_layout, int_list, new_figure, option, slider_int,
                    slider_layout)

__all__ = ["tile_map_explorer"]


def _options(causal, window, sinks, block):
    return dict(causal=bool(causal), window=window or None, sink_tokens=sinks, block_m=block,
                block_n=block)


def _describe(causal, window, sinks):
    mask = "causal" if causal else "not causal"
    return f"{mask}, W = {window}, {sinks} sinks" if window else f"{mask}, no window"


@lru_cache(maxsize=4096)
def _tile_counts(n, causal, window, sinks, block):
    """(masked, full) tiles of one head for nq = nk = n: ``kernel_tile_counts``'s numbers, with
    every program's loop bounds computed at once in numpy (the same integer arithmetic as
    ``kernel_plan.kernel_key_stretches``, line for line; a test checks the two agree). A slider
    step needs the counts at many lengths: one program at a time takes tens of milliseconds."""
    window = window or None
    pid = np.arange(-(-n // block))
    p_first = pid * block
    p_last = np.minimum(p_first + block, n) - 1
    lo, hi = np.zeros_like(pid), np.full_like(pid, n)
    if causal:
        hi = p_last + 1
    if window is not None:
        lo = np.maximum(p_first - window + 1, 0) // block * block
    full_lo, full_hi = lo, np.full_like(pid, n // block * block)
    if causal:
        full_hi = (p_first + 1) // block * block
    if window is not None:
        full_lo = (np.maximum(p_last - window + 1, 0) + block - 1) // block * block
    full_lo = np.minimum(np.maximum(full_lo, lo), hi)
    full_hi = np.maximum(np.minimum(full_hi, hi), full_lo)
    sink_hi = np.zeros_like(pid)
    if window is not None:
        sink_hi = np.minimum((sinks + block - 1) // block * block, lo)

    def blocks(start, end):  # len(stretch_blocks(...)) for every program
        return np.where(end > start, -(-end // block) - start // block, 0)

    masked = blocks(0, sink_hi) + blocks(lo, full_lo) + blocks(full_hi, hi)
    return int(masked.sum()), int(blocks(full_lo, full_hi).sum())


def _total(n, causal, window, sinks, block):
    return sum(_tile_counts(n, bool(causal), window or 0, sinks if window else 0, block))


def _work(n, causal, window, sinks, block, lengths):
    """Tile counts per length for the three curves, and the counts at n and 2n."""
    xs = sorted(set(lengths) | {n})
    dense = [(-(-x // block)) ** 2 for x in xs]
    curves = {"no mask (dense)": dense,
              "causal only": [_total(x, True, 0, 0, block) for x in xs],
              "current settings": [_total(x, causal, window, sinks, block) for x in xs]}
    return xs, curves, {size: _total(size, causal, window, sinks, block) for size in (n, 2 * n)}


@lru_cache(maxsize=64)
def _plan(n, causal, window, sinks, block):
    codes = kernel_tile_plan(n, n, **_options(causal, window, sinks, block))
    codes.flags.writeable = False  # shared by every redraw that shows these settings
    return codes


def _data(n, causal, window, sinks, block, lengths):
    opts = _options(causal, window, sinks, block)
    codes = _plan(n, bool(causal), window, sinks, block)
    xs, curves, at = _work(n, causal, window, sinks, block, lengths)
    last = codes.shape[0] - 1
    return dict(codes=codes, lengths=xs, curves=curves, work_n=at[n], work_2n=at[2 * n],
                stretches=kernel_key_stretches(last, n, n, **opts), options=opts)


# The kernel's four stretches (kernel_plan.STRETCH_NAMES) as the notebook names them.
_STRETCH_WORDS = {"sink blocks": "sinks", "window edge": "window edge", "interior": "interior",
                  "diagonal / ragged end": "diagonal"}


def _stretch_text(stretches, block, causal):
    parts = []
    for st in stretches:
        r = stretch_blocks(st, block)
        if len(r):
            blocks = f"{r.start}" if len(r) == 1 else f"{r.start}..{r.stop - 1}"
            word = _STRETCH_WORDS.get(st.name, st.name)
            if word == "diagonal" and not causal:
                word = "ragged end"
            parts.append(f"{word} {blocks}")  # only the interior runs without the mask
    return " | ".join(parts) if parts else "nothing"


def _growth_note(causal, window):
    if window and causal:
        return " (linear: a fixed-width band)"
    if window:
        return " (quadratic: all later keys)"
    return ""


def _readout(n, causal, window, sinks, block, d):
    codes = d["codes"]
    t_q, t_k = codes.shape
    masked = int((codes == TILE_MASKED).sum())
    full = int((codes == TILE_FULL).sum())
    computed, dense = masked + full, t_q * t_k
    causal_n, causal_2n = (_total(size, True, 0, 0, block) for size in (n, 2 * n))
    dense_2n = (-(-2 * n // block)) ** 2
    ragged = "" if n % block == 0 else f" (the last holds {n % block})"
    # At most READOUT_CHARS characters a line: a line fits the laptop's output area and the
    # presenter's page in monospace, unbroken. Every control's value shows in it (the settings
    # line), so every key press changes the readout, even one that changes no tile count.
    return "\n".join([
        f"grid axis 0 = cdiv({n}, {block}) = {t_q} programs, {t_k} key blocks of {block}"
        f"{ragged}",
        f"{_describe(causal, window, sinks)}: {computed:,} of {dense:,} tiles computed "
        f"({computed / dense:.1%})",
        f"{masked:,} of them with the mask, {full:,} without (interior blocks)",
        f"pid_m = {t_q - 1} (the last) visits: {_stretch_text(d['stretches'], block, causal)}",
        f"doubling n to {2 * n:,}: dense x{dense_2n / dense:.2f}, causal x"
        f"{causal_2n / causal_n:.2f}, current settings x{d['work_2n'] / d['work_n']:.2f}"
        + _growth_note(causal, window),
    ])


def _map_title(codes, causal, window, sinks):
    return f"{codes.shape[0]} x {codes.shape[1]} tiles: {_describe(causal, window, sinks)}"


READOUT_CHARS = 100  # ~107 monospace characters fit either page at 1366 and 1280 px
WINDOW_STEP = 16  # the smallest block: one press moves the window's edge by one such block
SINK_STEP = 4  # StreamingLLM's 4 sinks per press; more than one block holds in a few presses
FIGSIZE = (FIGURE_WIDTH, 3.9)  # inches: 920 px at 100 dpi (a laptop's output area), 1196 px at 130


def tile_map_explorer(*, n=1024, block=64, window=256, sinks=4, causal=True,
                      lengths=(256, 512, 1024, 2048, 4096)):
    """Sliders for n, the block size, the window W (0 = no window) and the sink tokens, and a
    causal switch, redraw the kernel's tile map of one head and its work against n.

    Left: what the kernel does with each (query block, key block) tile: skips it, computes it
    with the mask, or without, and the mask's exact edges. Right: tiles computed against n,
    dense and causal beside the current settings (log-log: slope 2 is quadratic, slope 1
    linear). The window moves in steps of 16 tokens (the smallest block), the sinks in steps of
    4 and n in steps of 64; the number beside a slider can be typed into (then Enter), and the
    slider puts it on its nearest step. The sinks slider is disabled while there is no window
    (sinks only count outside one).
    """
    lengths = sorted(int_list("lengths", lengths, minimum=128))
    blocks = [16, 32, 64, 128]
    block = option("block", block, blocks)
    n, window = slider_int("n", n, 128, lengths[-1]), slider_int("window", window, 0, 1024)
    sinks, causal = slider_int("sinks", sinks, 0, 128), check.flag("causal", causal)
    controls = {
        "n": widgets.IntSlider(value=n, min=128, max=lengths[-1], step=64,
                               description="tokens n", **slider_layout("250px")),
        "block": widgets.SelectionSlider(options=blocks, value=block, description="block size",
                                         **slider_layout("200px")),
        "window": widgets.IntSlider(value=window, min=0, max=1024, step=WINDOW_STEP,
                                    description="window W (0 = off)", **slider_layout("300px")),
        "sinks": widgets.IntSlider(value=sinks, min=0, max=128, step=SINK_STEP,
                                   description="sink tokens", **slider_layout("250px")),
        "causal": checkbox("causal", causal),
    }
    fig, (ax_map, ax_work) = new_figure(figsize=FIGSIZE, ncols=2)
    d = _data(n, causal, window, sinks, block, lengths)
    top = 3.0 * (-(-lengths[-1] // blocks[0])) ** 2  # the most tiles any setting can reach
    artists = {
        "map": plots.draw_tile_map(ax_map, d["codes"], title=_map_title(d["codes"], causal,
                                                                          window, sinks),
                                   n=n, block=block, window=window or None, sink_tokens=sinks,
                                   causal=causal),
        "work": plots.draw_work_curves(ax_work, d["lengths"], d["curves"], marker_n=n,
                                       ylim=(0.5, top), ticks=lengths,
                                       title="tiles computed per head against n"),
    }
    plots.medium_titles(ax_map, ax_work)
    freeze_layout(fig)
    plots.medium_titles(ax_map, ax_work)  # freeze_layout set them again, at the default size
    for ax in (ax_map, ax_work):  # drawn once, into the background (nothing crosses them)
        plots.pin_legend(ax)

    def redraw(n, block, window, sinks, causal):
        d = _data(n, causal, window, sinks, block, lengths)
        plots.update_tile_map(ax_map, artists["map"], d["codes"],
                              title=_map_title(d["codes"], causal, window, sinks), n=n,
                              block=block, window=window or None, sink_tokens=sinks,
                              causal=causal)
        plots.update_work_curves(ax_work, artists["work"], d["curves"], marker_n=n,
                                 lengths=d["lengths"])
        return _readout(n, causal, window, sinks, block, d), d

    return Explorer(controls, fig, redraw, axes=(ax_map, ax_work), artists=artists,
                    disabled_when={"sinks": lambda v: not v["window"]}, wrap=True)

