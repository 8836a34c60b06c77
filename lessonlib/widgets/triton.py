"""Widget for notebook 04: which tiles the Triton FlashAttention kernel computes, and how many.

The map comes from ``lessonlib.kernel_plan`` (the kernel's loop bounds in plain Python, checked
tile for tile against the kernel): the interpreter takes seconds for a map that Python lays out
in a millisecond, and a slider must redraw at once. Nothing here imports triton.
"""
import ipywidgets as widgets

from .. import _validate as check
from ..kernel_plan import (kernel_key_stretches, kernel_tile_counts, kernel_tile_plan,
                           stretch_blocks)
from ..plots import triton as plots
from ._base import Explorer, freeze_layout, int_list, new_figure, option, slider_int, slider_layout

__all__ = ["tile_map_explorer"]

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
        r = stretch_blocks(st, block)
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
        "window": widgets.IntSlider(value=window, min=0, max=1024, step=1,
                                    description="window W (0 = off)", **slider_layout("300px")),
        "sinks": widgets.IntSlider(value=sinks, min=0, max=128, description="sink tokens",
                                   **slider_layout("250px")),
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
    freeze_layout(fig)
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
