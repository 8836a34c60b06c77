"""Widget for notebook 04: which tiles the Triton FlashAttention kernel computes, and how many.

``kernel_key_stretches`` restates, in plain Python, the loop bounds that
``lessonlib.triton_attention._flash_attention_fwd_kernel`` computes for one program (the same
integer arithmetic, line for line), and ``kernel_tile_plan`` turns them into the tile map that
``kernel_tile_map`` records by running the kernel. The tests check the two agree tile for tile;
the widget uses the plain-Python version because the interpreter takes seconds for a map that
Python lays out in a millisecond, and a slider must redraw at once.

Neither imports triton: this module works before ``TRITON_INTERPRET`` is decided.
"""
from collections import namedtuple

import ipywidgets as widgets
import numpy as np

from .._validate import int_at_least
from ..plots import triton as plots
from ._base import Explorer, new_figure

__all__ = ["Stretch", "kernel_key_stretches", "kernel_tile_plan", "kernel_tile_counts",
           "tile_map_explorer", "STRETCH_NAMES"]

# One call of `_attend_to_key_blocks`: keys [start, end), visited BLOCK_N at a time from start.
Stretch = namedtuple("Stretch", "name start end masked")
STRETCH_NAMES = ("sink blocks", "window edge", "interior", "diagonal / ragged end")


def _check(nq, nk, window, sink_tokens, block_m, block_n):
    nq, nk = int_at_least("nq", nq, 1), int_at_least("nk", nk, 1)
    if nq > nk:
        raise ValueError(f"nq must be <= nk (the queries are the last nq keys), got {nq} > {nk}")
    window = None if window is None else int_at_least("window", window, 1)
    return (nq, nk, window, int_at_least("sink_tokens", sink_tokens, 0),
            int_at_least("block_m", block_m, 1), int_at_least("block_n", block_n, 1))


def kernel_key_stretches(pid_m, nq, nk, *, causal=False, window=None, sink_tokens=0,
                         block_m=64, block_n=64):
    """The four stretches of keys program ``pid_m`` streams, in the kernel's order.

    Returns four ``Stretch(name, start, end, masked)``; the inner loop runs
    ``for start in range(start, end, block_n)``, so a stretch covers key blocks
    ``start // block_n`` up to ``ceil(end / block_n) - 1`` (none when start >= end).
    """
    nq, nk, window, sink_tokens, block_m, block_n = _check(nq, nk, window, sink_tokens,
                                                           block_m, block_n)
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


def _blocks(stretch, block_n):
    """Key-block indices one stretch visits."""
    return range(stretch.start // block_n, -(-stretch.end // block_n)) \
        if stretch.end > stretch.start else range(0)


def kernel_tile_plan(nq, nk, *, causal=False, window=None, sink_tokens=0, block_m=64,
                     block_n=64):
    """int8 (cdiv(nq, block_m), cdiv(nk, block_n)): TILE_SKIPPED, TILE_MASKED or TILE_FULL per
    tile, from ``kernel_key_stretches``: what ``kernel_tile_map`` records, without running."""
    nq, nk, window, sink_tokens, block_m, block_n = _check(nq, nk, window, sink_tokens,
                                                           block_m, block_n)
    codes = np.full((-(-nq // block_m), -(-nk // block_n)), plots.TILE_SKIPPED, dtype=np.int8)
    for pid_m in range(codes.shape[0]):
        for st in kernel_key_stretches(pid_m, nq, nk, causal=causal, window=window,
                                       sink_tokens=sink_tokens, block_m=block_m,
                                       block_n=block_n):
            r = _blocks(st, block_n)
            codes[pid_m, r.start:r.stop] = plots.TILE_MASKED if st.masked else plots.TILE_FULL
    return codes


def kernel_tile_counts(nq, nk, **options):
    """(masked, full): how many tiles of one head the kernel computes with and without the
    mask. The same counts as ``kernel_tile_plan``, without building the map."""
    nq, nk, window, sink_tokens, block_m, block_n = _check(
        nq, nk, options.get("window"), options.get("sink_tokens", 0),
        options.get("block_m", 64), options.get("block_n", 64))
    masked = full = 0
    for pid_m in range(-(-nq // block_m)):
        for st in kernel_key_stretches(pid_m, nq, nk, causal=options.get("causal", False),
                                       window=window, sink_tokens=sink_tokens,
                                       block_m=block_m, block_n=block_n):
            count = len(_blocks(st, block_n))
            masked, full = (masked + count, full) if st.masked else (masked, full + count)
    return masked, full


# ------------------------------------------------------------------ the widget

def _slider_layout(width="250px"):
    return dict(layout=widgets.Layout(width=width), style={"description_width": "initial"})


def _freeze_layout(fig):
    """Lay the figure out once and keep it: later redraws only draw (constrained layout would
    re-measure every tick label on each redraw). Axis labels and titles stay where the first
    full draw put them; axes whose tick labels may widen get a larger labelpad first."""
    fig.canvas.draw()
    fig.set_layout_engine("none")
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            label = axis.label
            anchor = label.get_transform().transform(label.get_position())  # display coords
            axis.set_label_coords(*ax.transAxes.inverted().transform(anchor))
        ax.set_title(ax.get_title(), y=ax.title.get_position()[1])


class _WrappingExplorer(Explorer):
    """An Explorer whose controls wrap onto a second row when the notebook is narrow."""

    @property
    def ui(self):
        box = super().ui
        box.children[0].layout = widgets.Layout(flex_flow="row wrap")
        return box


def _options(causal, window, sinks, block):
    return dict(causal=bool(causal), window=window or None, sink_tokens=sinks, block_m=block,
                block_n=block)


def _describe(causal, window, sinks):
    parts = ["causal" if causal else "no causal mask"]
    parts.append(f"window W = {window}, {sinks} sink tokens" if window
                 else "no window" + (" (sink tokens only count with a window)" if sinks else ""))
    return ", ".join(parts)


def _work(n, causal, window, sinks, block, lengths):
    """Tile counts per length for the three curves, and the counts at n and 2n."""
    opts = _options(causal, window, sinks, block)
    xs = sorted(set(lengths) | {n})

    def total(size, **o):
        return sum(kernel_tile_counts(size, size, **o))

    dense = [(-(-x // block)) ** 2 for x in xs]
    curves = {"no mask (dense)": dense,
              "causal only": [total(x, causal=True, block_m=block, block_n=block) for x in xs],
              "current settings": [total(x, **opts) for x in xs]}
    return xs, curves, {size: total(size, **opts) for size in (n, 2 * n)}


def _data(n, causal, window, sinks, block, lengths):
    opts = _options(causal, window, sinks, block)
    codes = kernel_tile_plan(n, n, **opts)
    xs, curves, at = _work(n, causal, window, sinks, block, lengths)
    last = codes.shape[0] - 1
    return dict(codes=codes, lengths=xs, curves=curves, work_n=at[n], work_2n=at[2 * n],
                stretches=kernel_key_stretches(last, n, n, **opts), options=opts)


def _stretch_text(stretches, block):
    parts = []
    for st in stretches:
        r = _blocks(st, block)
        if len(r):
            blocks = f"{r.start}" if len(r) == 1 else f"{r.start}..{r.stop - 1}"
            parts.append(f"{st.name} {blocks}" + ("" if st.masked else " (no mask)"))
    return " | ".join(parts) if parts else "nothing"


def _growth_note(causal, window):
    if window and causal:
        return "  (causal + window: each program visits a fixed band, so work is linear in n)"
    if window:
        return "  (a window without the causal mask still lets every query see all later keys)"
    return ""


def _readout(n, causal, window, sinks, block, d):
    codes = d["codes"]
    t_q, t_k = codes.shape
    masked = int((codes == plots.TILE_MASKED).sum())
    full = int((codes == plots.TILE_FULL).sum())
    computed, dense = masked + full, t_q * t_k
    causal_n, causal_2n = (sum(kernel_tile_counts(size, size, causal=True, block_m=block,
                                                  block_n=block)) for size in (n, 2 * n))
    dense_2n = (-(-2 * n // block)) ** 2
    ragged = "" if n % block == 0 else f" (the last block holds {n % block})"
    return "\n".join([
        f"n = {n:,} tokens, BLOCK_M = BLOCK_N = {block}: grid axis 0 = cdiv({n}, {block}) = "
        f"{t_q} programs per (batch x head), {t_k} key blocks{ragged}",
        f"{_describe(causal, window, sinks)}: {computed:,} of {dense:,} tiles computed "
        f"({masked:,} with the mask, {full:,} without), {dense - computed:,} skipped",
        f"tiles computed: {computed / dense:.1%} of dense; causal alone would compute "
        f"{causal_n:,}",
        f"last program (pid_m = {t_q - 1}) visits key blocks: "
        f"{_stretch_text(d['stretches'], block)}",
        f"doubling n to {2 * n:,}: dense x{dense_2n / dense:.2f}, causal x"
        f"{causal_2n / causal_n:.2f}, current settings x{d['work_2n'] / d['work_n']:.2f}"
        + _growth_note(causal, window),
    ])


def _map_title(codes):
    return f"Tiles of one head: {codes.shape[0]} programs x {codes.shape[1]} key blocks"


def tile_map_explorer(*, n=1024, block=64, window=256, sinks=4, causal=True,
                      lengths=(256, 512, 1024, 2048, 4096)):
    """Sliders for n, the block size, the window W (0 = no window) and the sink tokens, and a
    causal switch, redraw the kernel's tile map of one head and its work against n.

    Left: what the kernel does with each (query block, key block) tile: skips it, computes it
    with the mask, or without. Right: tiles computed against n, dense and causal beside the
    current settings (log-log: slope 2 is quadratic, slope 1 linear).
    """
    lengths = sorted(int(x) for x in lengths)
    blocks = [16, 32, 64, 128]
    if block not in blocks:
        raise ValueError(f"block must be one of {blocks}, got {block!r}")
    controls = {
        "n": widgets.IntSlider(value=n, min=128, max=lengths[-1], step=64,
                               description="tokens n", **_slider_layout()),
        "block": widgets.SelectionSlider(options=blocks, value=block, description="block size",
                                         **_slider_layout("200px")),
        "window": widgets.IntSlider(value=window, min=0, max=1024, step=1,
                                    description="window W (0 = off)", **_slider_layout("300px")),
        "sinks": widgets.IntSlider(value=sinks, min=0, max=128, description="sink tokens",
                                   **_slider_layout()),
        "causal": widgets.Checkbox(value=causal, description="causal",
                                   layout=widgets.Layout(width="120px")),
    }
    fig, (ax_map, ax_work) = new_figure(figsize=(10.5, 4.8), ncols=2)
    ax_map.yaxis.labelpad = 12  # room for tick labels that widen with n (frozen layout)
    d = _data(n, causal, window, sinks, block, lengths)
    top = 3.0 * (-(-lengths[-1] // blocks[0])) ** 2  # the most tiles any setting can reach
    artists = {
        "map": plots.draw_tile_map(ax_map, d["codes"], title=_map_title(d["codes"])),
        "work": plots.draw_work_curves(ax_work, d["lengths"], d["curves"], marker_n=n,
                                       ylim=(0.5, top), ticks=lengths),
    }
    _freeze_layout(fig)
    state = {}

    def redraw(n, block, window, sinks, causal):
        d = _data(n, causal, window, sinks, block, lengths)
        plots.update_tile_map(ax_map, artists["map"], d["codes"], title=_map_title(d["codes"]))
        plots.update_work_curves(ax_work, artists["work"], d["curves"], marker_n=n,
                                 lengths=d["lengths"])
        state.clear()
        state.update(d)
        return _readout(n, causal, window, sinks, block, d)

    explorer = _WrappingExplorer(controls, fig, redraw)
    explorer.axes, explorer.artists, explorer.data = (ax_map, ax_work), artists, state
    return explorer
