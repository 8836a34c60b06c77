"""draw(ax, data) functions for notebooks 01-03: score-matrix memory, online softmax, tiles.

Matplotlib only, no computation beyond formatting. Each ``draw_*`` returns the artists a widget
updates in place; the matching ``update_*`` sets new data on them (no figure rebuild).
Colours are the Okabe-Ito palette (colour-blind safe) and every series also differs by line
style or marker, so the figures stay readable printed in grey.
"""
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

from ._style import PALETTE, STYLES

__all__ = [
    "PALETTE", "STYLES", "fit_log_ylim", "draw_curves", "update_curves", "draw_memory_curves",
    "draw_flop_curves", "draw_softmax_terms", "update_softmax_terms", "draw_value_plane",
    "update_value_plane", "draw_block_map", "update_block_map", "draw_ratio_curves",
    "update_ratio_curves", "BLOCK_SKIPPED", "BLOCK_MASKED", "BLOCK_FULL",
]


# Block-map codes (notebook 03): a tile the kernel skips, one it computes with a mask, one it
# computes without a mask.
BLOCK_SKIPPED, BLOCK_MASKED, BLOCK_FULL = 0, 1, 2
_BLOCK_COLOURS = ["#E8E8E8", PALETTE["orange"], PALETTE["blue"]]  # light grey: skipped
_BLOCK_LABELS = ["skipped", "masked", "full"]


def _tokens(x, _pos=None):
    """Tick label for a token count: 4K, 128K, 1M."""
    if x >= 1024 ** 2:
        return f"{x / 1024 ** 2:g}M"
    return f"{x / 1024:g}K" if x >= 1024 else f"{x:g}"


def _log2_ticks(ax, x, formatter):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(list(x)))
    ax.xaxis.set_major_formatter(FuncFormatter(formatter))
    ax.xaxis.set_minor_locator(NullLocator())


def fit_log_ylim(ax, curves):
    """Y limits that hold every positive value of the curves, with a margin (log axis).

    A widget calls it once with the envelope of every slider setting, then updates with
    ``rescale=False``: fixed limits keep the tick labels (and so the layout) still.
    """
    ys = np.concatenate([np.asarray(y, dtype=float).ravel() for y in curves])
    ys = ys[np.isfinite(ys) & (ys > 0)]
    if ys.size:
        ax.set_ylim(ys.min() / 3, ys.max() * 3)


def draw_curves(ax, x, curves, *, marker_x, xlabel, ylabel, title, xformatter=_tokens):
    """Curves over a log2 x axis (log y), each with a marker at ``marker_x`` and a cursor line.

    ``curves`` maps a legend label to y values (same length as ``x``). Returns a dict with
    ``lines`` and ``markers`` (label -> Line2D) and ``cursor`` (the vertical line).
    """
    x = np.asarray(x, dtype=float)
    lines, markers = {}, {}
    for (label, y), style in zip(curves.items(), STYLES):
        y = np.asarray(y, dtype=float)
        lines[label], = ax.plot(x, y, color=style["color"], linestyle=style["linestyle"],
                                linewidth=2, label=label)
        i = int(np.argmin(np.abs(x - marker_x)))
        markers[label], = ax.plot([x[i]], [y[i]], linestyle="none", marker=style["marker"],
                                  markersize=8, color=style["color"], markeredgecolor="black")
    cursor = ax.axvline(marker_x, color=PALETTE["grey"], linestyle=":", linewidth=1.5)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=7))
    ax.yaxis.set_minor_locator(NullLocator())  # minor log ticks cost time on every redraw
    _log2_ticks(ax, x, xformatter)
    fit_log_ylim(ax, curves.values())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return {"lines": lines, "markers": markers, "cursor": cursor}


def update_curves(ax, artists, curves, *, marker_x, rescale=True):
    """Set new y values (same labels and x as when drawn) and move the markers and cursor."""
    for label, y in curves.items():
        y = np.asarray(y, dtype=float)
        line = artists["lines"][label]
        line.set_ydata(y)
        x = np.asarray(line.get_xdata(), dtype=float)
        i = int(np.argmin(np.abs(x - marker_x)))
        artists["markers"][label].set_data([x[i]], [y[i]])
    artists["cursor"].set_xdata([marker_x, marker_x])
    if rescale:
        fit_log_ylim(ax, curves.values())


def draw_memory_curves(ax, lengths, curves_gib, *, marker_n,
                       title="Memory: S grows as n², the KV cache as n"):
    """Notebook 01: memory (GiB, log) against context length (tokens, log2)."""
    return draw_curves(ax, lengths, curves_gib, marker_x=marker_n,
                       xlabel="context n (tokens)", ylabel="memory (GiB)",
                       title=title)


def draw_flop_curves(ax, lengths, curves_tflop, *, marker_n,
                     title="Prefill compute"):
    """Notebook 01: prefill FLOPs (TFLOP, log) against context length (tokens, log2)."""
    return draw_curves(ax, lengths, curves_tflop, marker_x=marker_n,
                       xlabel="context n (tokens)", ylabel="compute (TFLOP)", title=title)


# ------------------------------------------------------------------ notebook 02: online softmax

def draw_softmax_terms(ax, labels, terms, *, seen, sink_index=None,
                       title="Terms of s: exp(x_j − m)"):
    """Bars of exp(x_j - m) for the keys read so far (their sum is s); unread keys are empty.

    ``labels`` name the bars (keys, then the sink if any); ``seen`` is a bool per bar;
    ``sink_index`` marks the sink's bar (hatched: it has no value vector). Returns the
    BarContainer.
    """
    bars = ax.bar(np.arange(len(labels)), np.zeros(len(labels)), color=PALETTE["blue"],
                  edgecolor="black", linewidth=1)
    ax.set_xticks(np.arange(len(labels)), labels)
    ax.set_ylim(0, 1.1)
    ax.axhline(1.0, color=PALETTE["grey"], linestyle=":", linewidth=1)
    ax.set_xlabel("key j (score x_j)")
    ax.set_ylabel("exp(x_j − m)")
    ax.set_title(title)
    ax.legend(handles=[Patch(facecolor=PALETTE["blue"], edgecolor="black", label="read"),
                       Patch(facecolor="white", edgecolor=PALETTE["grey"], linestyle="--",
                             label="not read"),
                       Patch(facecolor=PALETTE["orange"], edgecolor="black", hatch="//",
                             label="sink")],
              loc="upper left", fontsize=8)
    update_softmax_terms(bars, terms, seen=seen, sink_index=sink_index)
    return bars


def update_softmax_terms(bars, terms, *, seen, sink_index=None):
    """Set bar heights to ``terms`` and style read, unread and sink bars."""
    for k, (bar, h, s) in enumerate(zip(bars, terms, seen)):
        bar.set_height(float(h) if s else 0.0)
        if k == sink_index:
            bar.set_facecolor(PALETTE["orange"] if s else "white")
            bar.set_hatch("//")
            bar.set_edgecolor("black" if s else PALETTE["grey"])
        else:
            bar.set_facecolor(PALETTE["blue"] if s else "white")
            bar.set_hatch(None)
            bar.set_edgecolor("black" if s else PALETTE["grey"])
        bar.set_linestyle("-" if s else "--")
    return bars


def draw_value_plane(ax, values, path, *, sink_output=None,
                     title="Output acc / s among the values"):
    """The 2-D value vectors v_j, the running output after each key, and the sink's output.

    ``values`` (n, 2); ``path`` (k, 2) outputs acc/s after keys 0..k-1; ``sink_output`` (2,)
    or None. Returns a dict of artists: ``values``, ``path``, ``current``, ``sink``.
    """
    values = np.asarray(values, dtype=float)
    pts = ax.scatter(values[:, 0], values[:, 1], s=60, marker="s", color=PALETTE["grey"],
                     edgecolor="black", zorder=2, label="v_j")
    for j, (a, b) in enumerate(values):
        ax.annotate(f"v{j}", (a, b), textcoords="offset points", xytext=(6, 4), fontsize=9)
    line, = ax.plot([], [], color=PALETTE["blue"], linestyle="-", marker="o", markersize=4,
                    linewidth=1.5, zorder=3, label="after each key")
    current, = ax.plot([], [], linestyle="none", marker="o", markersize=11,
                       color=PALETTE["blue"], markeredgecolor="black", zorder=4,
                       label="output")
    sink, = ax.plot([], [], linestyle="none", marker="*", markersize=15,
                    color=PALETTE["orange"], markeredgecolor="black", zorder=5,
                    label="with sink")
    ax.plot([0], [0], linestyle="none", marker="+", markersize=10, color="black")
    lo, hi = values.min(axis=0) - 0.5, values.max(axis=0) + 0.5
    ax.set_xlim(min(lo[0], -0.5), hi[0])
    ax.set_ylim(min(lo[1], -0.5), hi[1])
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("value dim 0")
    ax.set_ylabel("value dim 1")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    artists = {"values": pts, "path": line, "current": current, "sink": sink}
    update_value_plane(artists, path, sink_output=sink_output)
    return artists


def update_value_plane(artists, path, *, sink_output=None):
    path = np.asarray(path, dtype=float).reshape(-1, 2)
    artists["path"].set_data(path[:, 0], path[:, 1])
    artists["current"].set_data(path[-1:, 0], path[-1:, 1])
    if sink_output is None:
        artists["sink"].set_data([], [])
    else:
        artists["sink"].set_data([sink_output[0]], [sink_output[1]])
    return artists


# ------------------------------------------------------------------ notebook 03: tiles

def draw_block_map(ax, codes, *, block, n, title=None):
    """The grid of (query block, key block) tiles coloured by what the kernel does with each.

    ``codes`` (T, T) holds BLOCK_SKIPPED, BLOCK_MASKED or BLOCK_FULL. Returns the AxesImage.
    """
    image = ax.imshow(np.asarray(codes), cmap=ListedColormap(_BLOCK_COLOURS), vmin=-0.5,
                      vmax=2.5, interpolation="nearest", origin="upper")
    ax.set_xlabel("key block j")
    ax.set_ylabel("query block i")
    ax.legend(handles=[Patch(facecolor=c, edgecolor="black", label=lab)
                       for c, lab in zip(_BLOCK_COLOURS, _BLOCK_LABELS)],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    update_block_map(ax, image, codes, block=block, n=n, title=title)
    return image


def update_block_map(ax, image, codes, *, block, n, title=None):
    codes = np.asarray(codes)
    t = codes.shape[0]
    image.set_data(codes)
    image.set_extent((-0.5, codes.shape[1] - 0.5, t - 0.5, -0.5))
    ax.set_xlim(-0.5, codes.shape[1] - 0.5)
    ax.set_ylim(t - 0.5, -0.5)
    step = max(1, t // 8)
    ax.set_xticks(np.arange(0, codes.shape[1], step))
    ax.set_yticks(np.arange(0, t, step))
    # White lines between tiles while there are few enough to see.
    ax.set_xticks(np.arange(-0.5, codes.shape[1]), minor=True)
    ax.set_yticks(np.arange(-0.5, t), minor=True)
    ax.tick_params(which="minor", length=0)
    if t <= 32:
        ax.grid(True, which="minor", color="white", linewidth=1.0)
    else:
        ax.grid(False, which="minor")
    ax.grid(False, which="major")
    ax.set_title(title or f"{t} x {codes.shape[1]} tiles, B = {block}, n = {n}")
    return image


def draw_ratio_curves(ax, blocks, curves, *, marker_block, d,
                      title="Traffic ratio naive / tiled"):
    """Traffic ratio (naive floats / tiled floats, log) against block size B (log2).

    ``curves`` maps labels to ratios per block; a dashed line marks ratio 1 (tiling stops
    paying below it). Returns the same dict as ``draw_curves`` plus ``break_even``.
    """
    artists = draw_curves(ax, blocks, curves, marker_x=marker_block,
                          xlabel="block size B", ylabel="naive / tiled floats", title=title,
                          xformatter=lambda x, _pos=None: f"{x:g}")
    artists["break_even"] = ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    ax.annotate("break-even", (blocks[0], 1.0),
                textcoords="offset points", xytext=(2, 4), fontsize=8)
    ax.get_legend().remove()
    ax.legend(loc="upper left", fontsize=8)
    return artists


def update_ratio_curves(ax, artists, curves, *, marker_block, rescale=True):
    update_curves(ax, artists, curves, marker_x=marker_block, rescale=rescale)
