"""draw(ax, data) functions for notebook 06: sliding-window masks and per-layer cache bars.

Matplotlib only, no computation beyond formatting. Each ``draw_*`` returns the artists a widget
updates in place; the matching ``update_*`` sets new data on them (no figure rebuild).
Okabe-Ito colours; local and global layers also differ by hatching, and the engines' lines by
dash pattern, so print in grey works. The keys are written into axis labels and next to the
lines rather than into legend boxes: a legend costs more per redraw than the mask itself.
"""
import numpy as np
from matplotlib.colors import ListedColormap

from .kv_cache import PALETTE

__all__ = ["MASK_HIDDEN", "MASK_WINDOW", "MASK_SINK", "draw_window_mask", "update_window_mask",
           "draw_layer_cache", "update_layer_cache"]

# Mask codes: a key the query cannot see, one inside its window (or causal range), and one it
# sees only because it is a kept sink token.
MASK_HIDDEN, MASK_WINDOW, MASK_SINK = 0, 1, 2
_MASK_COLOURS = ["#FFFFFF", PALETTE["blue"], PALETTE["orange"]]
_GLOBAL = dict(color=PALETTE["blue"], hatch=None)
_LOCAL = dict(color=PALETTE["orange"], hatch="//")
_ENGINE_STYLES = [dict(color=PALETTE["vermillion"], linestyle="--"),
                  dict(color=PALETTE["green"], linestyle="-."),
                  dict(color=PALETTE["purple"], linestyle=":")]


def draw_window_mask(ax, codes, *, title=""):
    """An (n, n) mask of MASK_HIDDEN / MASK_WINDOW / MASK_SINK codes: query position down, key
    position across. Returns the AxesImage."""
    image = ax.imshow(np.zeros((1, 1)), cmap=ListedColormap(_MASK_COLOURS), vmin=-0.5,
                      vmax=2.5, interpolation="nearest", origin="upper", aspect="equal")
    ax.set_xlabel("key position j\n(blue: inside the window, orange: sink kept forever, "
                  "white: masked)", fontsize=9)
    ax.set_ylabel("query position p")
    update_window_mask(ax, image, codes, title=title)
    return image


def update_window_mask(ax, image, codes, *, title=""):
    codes = np.asarray(codes)
    n = codes.shape[0]
    image.set_data(codes)
    image.set_extent((-0.5, codes.shape[1] - 0.5, n - 0.5, -0.5))
    ax.set_xlim(-0.5, codes.shape[1] - 0.5)
    ax.set_ylim(n - 0.5, -0.5)
    ax.title.set_text(title)
    return image


def draw_layer_cache(ax, entries, local, *, levels=None, title="",
                     ylabel="KV entries kept per layer (tokens)"):
    """One bar per layer: how many tokens' K and V that layer keeps. ``local`` marks the
    sliding-window layers (orange, hatched); global layers are blue. ``levels`` maps an
    engine's label to what it allocates per local layer: a dashed line each, labelled at its
    right end.

    Returns a dict: ``bars`` (BarContainer), ``levels`` (label -> Line2D) and ``labels``
    (label -> Text).
    """
    entries = np.asarray(entries, dtype=float)
    local = np.asarray(local, dtype=bool)
    bars = ax.bar(np.arange(entries.size), entries, width=0.8, edgecolor="black", linewidth=0.5)
    for bar, is_local in zip(bars, local):
        style = _LOCAL if is_local else _GLOBAL
        bar.set_facecolor(style["color"])
        bar.set_hatch(style["hatch"])
    lines, texts = {}, {}
    for (label, level), style in zip((levels or {}).items(), _ENGINE_STYLES):
        lines[label] = ax.axhline(level, linewidth=1.8, label=label, **style)
        texts[label] = ax.text(entries.size - 0.5, level, label, ha="right", va="center",
                               fontsize=8, color=style["color"], zorder=4,
                               bbox=dict(facecolor="white", edgecolor=style["color"], pad=1.5))
    ax.set_xlabel("layer (hatched orange: sliding window, blue: global)", fontsize=9)
    ax.set_ylabel(ylabel)
    ax.set_xlim(-0.6, entries.size - 0.4)
    ax.set_xticks(np.arange(0, entries.size, max(1, -(-entries.size // 8))))
    artists = {"bars": bars, "levels": lines, "labels": texts}
    update_layer_cache(ax, artists, entries, levels=levels, title=title)
    return artists


def update_layer_cache(ax, artists, entries, *, levels=None, title=""):
    """New bar heights (same layers) and engine levels; rescales the y axis."""
    entries = np.asarray(entries, dtype=float)
    for bar, h in zip(artists["bars"], entries):
        bar.set_height(h)
    for label, level in (levels or {}).items():
        artists["levels"][label].set_ydata([level, level])
        artists["labels"][label].set_y(level)
    top = max([entries.max(initial=0.0)] + [float(line.get_ydata()[0])
                                            for line in artists["levels"].values()])
    ax.set_ylim(0, 1.12 * top if top > 0 else 1.0)
    ax.title.set_text(title)
    return artists
