"""draw(ax, data) functions for notebook 04: the tiles the Triton kernel computes, and its work.

Matplotlib only, no computation beyond formatting. Each ``draw_*`` returns the artists a widget
updates in place; the matching ``update_*`` sets new data on them (no figure rebuild).
Colours are the Okabe-Ito palette (colour-blind safe); tile kinds are also told apart by
lightness and the curves by line style and marker, so the figures stay readable printed in grey.
"""
import numpy as np
from matplotlib.colors import ListedColormap

from ._common import (code_key, code_map_axes, draw_log_curves, legend_under, set_tile_grid,
                      tile_grid, update_log_curves)
from ._style import PALETTE
from .kv_cache import first_middle_last, medium_titles, outside_ticks, pin_legend, place_ticks

__all__ = [
    "PALETTE", "draw_tile_map", "update_tile_map", "draw_work_curves", "update_work_curves", "pin_legend", "medium_titles",
]


# The name and colour of each tile code, indexed by lessonlib.attention's codes (TILE_SKIPPED
# = 0, TILE_MASKED = 1, TILE_FULL = 2: what kernel_tile_map and kernel_tile_plan record).
_TILE_LABELS = ("skipped (never loaded)", "computed with the mask", "computed, no mask")
"""The name of each tile code in the key, indexed by ``lessonlib.attention``'s codes."""
# Light grey, mid orange, dark blue: three distinct greys when printed without colour.
_TILE_COLOURS = ("#EBEBEB", PALETTE["orange"], PALETTE["blue"])

# One style per work curve, in order: a colour, a line style and a marker each.
_WORK_STYLES = (dict(color=PALETTE["grey"], linestyle=":", marker="s"),
               dict(color=PALETTE["vermillion"], linestyle="--", marker="^"),
               dict(color=PALETTE["blue"], linestyle="-", marker="o"))
"""One style per work curve, in order: a colour, a line style and a marker each."""


def draw_tile_map(ax, codes, *, title, n=None, block=None, window=None, sink_tokens=0,
                  causal=True, labels_fontsize=None):
    """The (query block, key block) grid of one head, coloured by what the kernel did.

    ``codes`` (query blocks, key blocks) holds TILE_SKIPPED, TILE_MASKED or TILE_FULL, as
    ``kernel_tile_map`` returns them. The grid fills the axes whatever its shape (both axes run
    from 0 to 1, ``_common.code_map_axes``, so a widget that changes the shape redraws only the image, never the axes):
    the first, middle and last block of each axis are labelled (``outside_ticks``), white
    lines part the tiles while they are big enough to see. Given ``n`` and ``block``
    (nq = nk = n, BLOCK_M = BLOCK_N), black lines trace the mask's exact edges at token level
    (the causal diagonal, the window's edge, the sinks' edge): they cross only tiles computed
    with the mask (to within half a token, where a straight diagonal cuts the corner of a tile
    beside the staircase).

    Returns a dict: ``image`` (AxesImage), ``grid`` (LineCollection), ``edges`` (Line2D) and
    ``index`` (``outside_ticks``'s marks and labels).
    """
    image = ax.imshow(np.zeros((1, 1)), cmap=ListedColormap(_TILE_COLOURS), vmin=-0.5,
                      vmax=2.5, interpolation="nearest", origin="upper", aspect="auto",
                      extent=(0.0, 1.0, 1.0, 0.0))
    code_map_axes(ax, xlabel="key block j (BLOCK_N keys each)",
                  ylabel="query block = program pid_m", aspect="auto")
    grid = tile_grid(ax)
    edges, = ax.plot([], [], color="black", linewidth=1.3, label=_EDGE_LABEL)
    index = outside_ticks(ax, fontsize=labels_fontsize)  # blocks 0, t // 2 and t - 1
    legend_under(ax, code_key(_TILE_COLOURS, _TILE_LABELS) + [edges], ncol=2, fontsize=8,
                 handlelength=1.4, columnspacing=1.0)
    artists = {"image": image, "grid": grid, "edges": edges, "index": index}
    update_tile_map(ax, artists, codes, title=title, n=n, block=block, window=window,
                    sink_tokens=sink_tokens, causal=causal)
    return artists


_EDGE_LABEL = "exact mask edges (tokens)"
"""The key's name for the mask's edges drawn over the tiles (``_mask_edges``)."""


def _mask_edges(n, block, *, causal=True, window=None, sink_tokens=0):
    """The mask's edges for n queries and n keys, in the map's coordinates (0..1 across the
    cdiv(n, block) tiles): (x, y) arrays with NaN between pieces. Query p sees key j when
    ``j <= p`` (causal), ``p - j < window`` and, outside the window, ``j < sink_tokens``;
    each edge is drawn halfway between the last visible and the first hidden key of a row."""
    span = -(-n // block) * block  # tokens across the whole grid (the last block may be ragged)
    xs, ys = [], []

    def piece(x0, y0, x1, y1):
        xs.extend([x0 / span, x1 / span, np.nan])
        ys.extend([y0 / span, y1 / span, np.nan])

    if causal:  # row p sees keys up to p
        piece(0.5, 0.0, n, n - 0.5)
    if window:  # row p sees keys from p - W + 1
        if window < n:
            piece(0.0, window - 0.5, n - window + 0.5, n)
        if sink_tokens and sink_tokens + window - 0.5 < n:  # the sinks, below the window
            piece(sink_tokens, sink_tokens + window - 0.5, sink_tokens, n)
    return np.array(xs, dtype=float), np.array(ys, dtype=float)


def update_tile_map(ax, artists, codes, *, title, n=None, block=None, window=None,
                    sink_tokens=0, causal=True):
    """Show new codes (any shape) on the same image: data, tile lines, end indices, the mask's
    edges (given ``n`` and ``block``) and the title. The axes' limits never change."""
    codes = np.asarray(codes)
    rows, cols = codes.shape
    artists["image"].set_data(codes)
    set_tile_grid(artists["grid"], [k / cols for k in range(1, cols)],
                  [k / rows for k in range(1, rows)], max(rows, cols))
    for axis, count in (("x", cols), ("y", rows)):  # blocks at their tiles' centres
        at = first_middle_last(count)
        place_ticks(artists["index"], axis, [(k + 0.5) / count for k in at], at)
    artists["edges"].set_linewidth(1.3 if max(rows, cols) <= 64 else 0.9)
    if n is not None and block is not None:
        artists["edges"].set_data(*_mask_edges(n, block, causal=causal, window=window,
                                              sink_tokens=sink_tokens))
    else:
        artists["edges"].set_data([], [])
    ax.title.set_text(title)
    return artists


def draw_work_curves(ax, lengths, curves, *, marker_n, ylim, ticks=None,
                     title="Tiles computed per head against n"):
    """Tiles the kernel computes (log) against the sequence length n (log2), one curve each.

    ``curves`` maps a legend label to tile counts per length (up to three curves); ``ticks``
    are the labelled lengths (default: ``lengths``); ``ylim``
    fixes the y range once (a widget passes the envelope of every setting, so the tick labels
    and the layout stay still). A marker on each curve and a dotted cursor sit at ``marker_n``
    (``_common.draw_log_curves``). Returns its dict (``lines`` and ``markers``: label ->
    Line2D, ``cursor``).
    """
    artists = draw_log_curves(ax, lengths, curves, marker_x=marker_n, styles=_WORK_STYLES,
                              xlabel="sequence length n = nq = nk (tokens)",
                              ylabel="tiles computed (program x key block)", xticks=ticks,
                              y_numticks=8)
    ax.set_ylim(*ylim)
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8)
    update_work_curves(ax, artists, curves, marker_n=marker_n)
    return artists


def update_work_curves(ax, artists, curves, *, marker_n, lengths=None):
    """New tile counts (same labels; the same lengths as drawn unless ``lengths`` gives new
    ones); the markers and the cursor move to ``marker_n``.

    A count of 0 (nothing computed) cannot sit on a log axis: it is drawn as a gap.
    """
    return update_log_curves(ax, artists, curves, marker_x=marker_n, x=lengths, gaps=True)
