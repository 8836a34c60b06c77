"""draw(ax, data) functions for notebook 04: the tiles the Triton kernel computes, and its work.

Matplotlib only, no computation beyond formatting. Each ``draw_*`` returns the artists a widget
updates in place; the matching ``update_*`` sets new data on them (no figure rebuild).
Colours are the Okabe-Ito palette (colour-blind safe); tile kinds are also told apart by
lightness and the curves by line style and marker, so the figures stay readable printed in grey.
"""
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

from ..kernel_plan import TILE_FULL, TILE_MASKED, TILE_SKIPPED
from ._style import PALETTE

__all__ = [
    "PALETTE", "TILE_SKIPPED", "TILE_MASKED", "TILE_FULL", "TILE_LABELS", "WORK_STYLES",
    "draw_tile_map", "update_tile_map", "draw_work_curves", "update_work_curves",
]


# The codes of `lessonlib.triton_attention.kernel_tile_map` (a test keeps them equal).
TILE_LABELS = ("skipped (never loaded)", "computed with the mask", "computed, no mask")
# Light grey, mid orange, dark blue: three distinct greys when printed without colour.
_TILE_COLOURS = ("#EBEBEB", PALETTE["orange"], PALETTE["blue"])

# One style per work curve, in order: a colour, a line style and a marker each.
WORK_STYLES = (dict(color=PALETTE["grey"], linestyle=":", marker="s"),
               dict(color=PALETTE["vermillion"], linestyle="--", marker="^"),
               dict(color=PALETTE["blue"], linestyle="-", marker="o"))


def draw_tile_map(ax, codes, *, title):
    """The (query block, key block) grid of one head, coloured by what the kernel did.

    ``codes`` (query blocks, key blocks) holds TILE_SKIPPED, TILE_MASKED or TILE_FULL, as
    ``kernel_tile_map`` returns them. Returns the AxesImage.
    """
    image = ax.imshow(np.asarray(codes), cmap=ListedColormap(_TILE_COLOURS), vmin=-0.5,
                      vmax=2.5, interpolation="nearest", origin="upper", aspect="auto")
    ax.set_xlabel("key block j (BLOCK_N keys each)")
    ax.set_ylabel("query block = program pid_m")
    ax.legend(handles=[Patch(facecolor=c, edgecolor="black", label=lab)
                       for c, lab in zip(_TILE_COLOURS, TILE_LABELS)],
              loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, fontsize=8,
              frameon=False, handlelength=1.2, columnspacing=1.0)
    update_tile_map(ax, image, codes, title=title)
    return image


def update_tile_map(ax, image, codes, *, title):
    """Show new codes (any shape) on the same image: data, extent, ticks, tile lines, title."""
    codes = np.asarray(codes)
    rows, cols = codes.shape
    image.set_data(codes)
    image.set_extent((-0.5, cols - 0.5, rows - 0.5, -0.5))
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_xticks(np.arange(0, cols, max(1, -(-cols // 8))))
    ax.set_yticks(np.arange(0, rows, max(1, -(-rows // 8))))
    # White lines between tiles while they are big enough to see.
    few = max(rows, cols) <= 32
    ax.set_xticks(np.arange(-0.5, cols) if few else [], minor=True)
    ax.set_yticks(np.arange(-0.5, rows) if few else [], minor=True)
    ax.tick_params(which="minor", length=0)
    if few:
        ax.grid(True, which="minor", color="white", linewidth=1.0)
    else:
        ax.grid(False, which="minor")
    ax.grid(False, which="major")
    ax.set_title(title)
    return image


def _tokens(x, _pos=None):
    """Tick label for a token count: 512, 1K, 4K."""
    return f"{x / 1024:g}K" if x >= 1024 else f"{x:g}"


def draw_work_curves(ax, lengths, curves, *, marker_n, ylim, ticks=None,
                     title="Tiles computed per head against n"):
    """Tiles the kernel computes (log) against the sequence length n (log2), one curve each.

    ``curves`` maps a legend label to tile counts per length (up to three curves); ``ticks``
    are the labelled lengths (default: ``lengths``); ``ylim``
    fixes the y range once (a widget passes the envelope of every setting, so the tick labels
    and the layout stay still). A marker on each curve and a dotted cursor sit at ``marker_n``.
    Returns a dict with ``lines`` and ``markers`` (label -> Line2D) and ``cursor``.
    """
    x = np.asarray(lengths, dtype=float)
    lines, markers = {}, {}
    for (label, y), style in zip(curves.items(), WORK_STYLES):
        lines[label], = ax.plot(x, np.asarray(y, dtype=float), color=style["color"],
                                linestyle=style["linestyle"], linewidth=2, label=label)
        markers[label], = ax.plot([], [], linestyle="none", marker=style["marker"],
                                  markersize=8, color=style["color"], markeredgecolor="black")
    cursor = ax.axvline(marker_n, color=PALETTE["grey"], linestyle=":", linewidth=1.5)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(list(x if ticks is None else ticks)))
    ax.xaxis.set_major_formatter(FuncFormatter(_tokens))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=8))
    ax.yaxis.set_minor_locator(NullLocator())  # minor log ticks cost time on every redraw
    ax.set_ylim(*ylim)
    ax.set_xlabel("sequence length n = nq = nk (tokens)")
    ax.set_ylabel("tiles computed (program x key block)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    artists = {"lines": lines, "markers": markers, "cursor": cursor}
    update_work_curves(ax, artists, curves, marker_n=marker_n)
    return artists


def update_work_curves(ax, artists, curves, *, marker_n, lengths=None):
    """New tile counts (same labels; the same lengths as drawn unless ``lengths`` gives new
    ones); the markers and the cursor move to ``marker_n``.

    A count of 0 (nothing computed) cannot sit on a log axis: it is drawn as a gap.
    """
    for label, y in curves.items():
        y = np.asarray(y, dtype=float)
        y = np.where(y > 0, y, np.nan)
        line = artists["lines"][label]
        if lengths is None:
            line.set_ydata(y)
        else:
            line.set_data(np.asarray(lengths, dtype=float), y)
        x = np.asarray(line.get_xdata(), dtype=float)
        i = int(np.argmin(np.abs(x - marker_n)))
        artists["markers"][label].set_data([x[i]], [y[i]])
    artists["cursor"].set_xdata([marker_n, marker_n])
    return artists
