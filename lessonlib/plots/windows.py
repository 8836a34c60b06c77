"""draw(ax, data) functions for notebook 06: sliding-window masks and per-layer cache bars.

Matplotlib only, no computation beyond formatting. Each ``draw_*`` returns the artists a widget
updates in place; the matching ``update_*`` sets new data on them (no figure rebuild).
Okabe-Ito colours; local and global layers also differ by hatching, and the engines' lines by
dash pattern, so print in grey works. Each figure's key is a legend under its axes (off the
data), which a widget draws once (``pin_legend``), not on every redraw.
"""
import numpy as np
from matplotlib.patches import Patch, PathPatch, Polygon

from ..attention import MASK_HIDDEN, MASK_SINK, MASK_WINDOW
from ._common import code_key, code_map_axes, legend_under
from .kv_cache import PALETTE, boxes_path, first_middle_last, outside_ticks, place_ticks

__all__ = ["draw_window_mask", "update_window_mask", "draw_layer_cache", "update_layer_cache",
           "legend_under", "bar_heights"]

# The colour of each mask code, indexed by lessonlib.attention's codes (MASK_HIDDEN = 0: a key
# the query cannot see, MASK_WINDOW = 1: inside its window or causal range, MASK_SINK = 2:
# seen only because it is a kept sink token); _MASK_LABELS names them.
_MASK_COLOURS = ["#FFFFFF", PALETTE["blue"], PALETTE["orange"]]
_GLOBAL = dict(color=PALETTE["blue"], hatch=None)
_LOCAL = dict(color=PALETTE["orange"], hatch="//")
_ENGINE_STYLES = [dict(color=PALETTE["vermillion"], linestyle="--"),
                  dict(color=PALETTE["green"], linestyle="-."),
                  dict(color=PALETTE["purple"], linestyle=":")]


def draw_window_mask(ax, codes, *, title="", labels_fontsize=None):
    """An (n, n) mask of ``attention.mask_codes``'s MASK_HIDDEN / MASK_WINDOW / MASK_SINK codes:
    query position down, key position across, each code's cells one polygon (``_mask_outline``: the exact cells, drawn
    in a fraction of the time an n x n image takes). The mask fills the axes whatever n is
    (both axes run from 0 to 1, ``_common.code_map_axes``, so a widget that changes n redraws the polygons and three
    position labels per axis, never the axes); the colours' key is a legend under the axes.

    Returns a dict: ``window`` and ``sinks`` (Polygon), ``ticks`` (``outside_ticks``'s marks
    and labels of both axes) and ``codes`` (the codes shown).
    """
    ax.set_facecolor(_MASK_COLOURS[MASK_HIDDEN])
    shapes = {name: Polygon(np.zeros((1, 2)), closed=True, facecolor=_MASK_COLOURS[code],
                            linewidth=0, antialiased=False)
              for name, code in (("window", MASK_WINDOW), ("sinks", MASK_SINK))}
    for shape in shapes.values():
        ax.add_patch(shape)
    code_map_axes(ax, xlabel="key position j", ylabel="query position p")
    ticks = outside_ticks(ax, fontsize=labels_fontsize)  # sets the labels' labelpad
    legend_under(ax, code_key(_MASK_COLOURS, _MASK_LABELS, linewidth=0.5), ncol=2,
                 handlelength=1.2, columnspacing=0.8)
    artists = dict(shapes, ticks=ticks)
    update_window_mask(ax, artists, codes, title=title)
    return artists


_MASK_LABELS = ("masked", "inside the window", "sink, kept forever")
"""The key's name of each cell code, indexed by ``lessonlib.attention``'s MASK_* codes."""


def _token_ticks(n):
    """The positions a mask of n tokens labels on each axis: 0, n // 2 and n - 1."""
    return first_middle_last(n)


def _mask_outline(codes, code):
    """The cells of ``codes`` (n rows) equal to ``code`` as one polygon, in cell units (row p
    spans y = p..p+1, column j spans x = j..j+1): each row's cells must be one run, as in a
    causal window mask (the window's keys, or the sinks before it). Returns (4 n, 2)
    vertices: down the runs' right ends, back up their left ends. A row without the code
    gets a run of width 0."""
    codes = np.asarray(codes)
    rows, cols = codes.shape
    hit = codes == code
    count = hit.sum(axis=1)
    start = np.where(count > 0, hit.argmax(axis=1), 0)
    stop = start + count
    j = np.arange(cols)
    if not np.array_equal(hit, (j >= start[:, None]) & (j < stop[:, None])):
        raise ValueError(f"codes: the cells of code {code} are not one run in every row")
    y = np.arange(rows + 1)
    right = np.column_stack([np.repeat(stop, 2), np.column_stack([y[:-1], y[1:]]).ravel()])
    left = np.column_stack([np.repeat(start[::-1], 2),
                            np.column_stack([y[1:], y[:-1]])[::-1].ravel()])
    return np.vstack([right, left]).astype(float)


def _mask_drawn(artists, n):
    """The (n, n) codes the mask's polygons draw, read back at every cell's centre (for tests):
    MASK_WINDOW or MASK_SINK where a polygon covers the cell, MASK_HIDDEN elsewhere."""
    p, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    centres = np.column_stack([(j.ravel() + 0.5) / n, (p.ravel() + 0.5) / n])
    codes = np.full(n * n, MASK_HIDDEN, dtype=np.int8)
    for name, code in (("window", MASK_WINDOW), ("sinks", MASK_SINK)):
        codes[artists[name].get_path().contains_points(centres)] = code
    return codes.reshape(n, n)


def update_window_mask(ax, artists, codes, *, title=""):
    """New codes (any n) on the same polygons; the labelled positions follow n, the axes stay."""
    codes = np.asarray(codes)
    n = codes.shape[0]
    for name, code in (("window", MASK_WINDOW), ("sinks", MASK_SINK)):
        artists[name].set_xy(_mask_outline(codes, code) / n)
    artists["codes"] = codes
    at = _token_ticks(n)  # positions 0, n // 2 and n - 1, at their cells' centres
    for axis in ("x", "y"):
        place_ticks(artists["ticks"], axis, [(p + 0.5) / n for p in at], at)
    ax.title.set_text(title)
    return artists


def draw_layer_cache(ax, entries, local, *, levels=None, title="",
                     ylabel="KV entries kept per layer (tokens)", ylim=None, legend=True):
    """One bar per layer: how many tokens' K and V that layer keeps. ``local`` marks the
    sliding-window layers (orange, hatched); global layers are blue. Each kind of bar is one
    patch (``boxes_path``: a slider step redraws two paths, not a patch per layer). ``levels``
    maps an engine's label to what it allocates per local layer: a line each across the bars.
    The key (both kinds of bar, the engines' lines) is a legend under the axes, off the bars
    (with ``legend``; a widget draws it once, ``pin_legend``). ``ylim`` fixes the y range (a
    widget passes the most any setting reaches: the axes never move); without it the range
    follows the data.

    Returns a dict: ``local`` and ``global`` (PathPatch), ``heights`` (the entries drawn),
    ``is_local`` and ``levels`` (label -> Line2D).
    """
    entries = np.asarray(entries, dtype=float)
    is_local = np.asarray(local, dtype=bool)
    patches = {}
    for key, style in (("local", _LOCAL), ("global", _GLOBAL)):
        patches[key] = ax.add_patch(PathPatch(boxes_path([], [], [], []),
                                              facecolor=style["color"], hatch=style["hatch"],
                                              edgecolor="black", linewidth=0.5))
    lines = {}
    for (label, level), style in zip((levels or {}).items(), _ENGINE_STYLES):
        lines[label] = ax.axhline(level, linewidth=1.8, label=label, **style)
    ax.set_xlabel("layer")
    ax.set_ylabel(ylabel)
    ax.set_xlim(-0.6, entries.size - 0.4)
    ax.set_xticks(np.arange(0, entries.size, max(1, -(-entries.size // 8))))
    if ylim is not None:
        ax.set_ylim(*ylim)
    if legend:
        bars = [Patch(facecolor=_LOCAL["color"], hatch=_LOCAL["hatch"], edgecolor="black",
                      linewidth=0.5, label="sliding-window layer"),
                Patch(facecolor=_GLOBAL["color"], edgecolor="black", linewidth=0.5,
                      label="global layer")]
        legend_under(ax, bars + list(lines.values()), ncol=2)
    artists = {**patches, "is_local": is_local, "levels": lines,
               "fixed": ylim is not None}
    update_layer_cache(ax, artists, entries, levels=levels, title=title)
    return artists


def bar_heights(artists):
    """The heights the two bar patches draw, one per layer, read back from their paths."""
    heights = []
    for k, is_local in enumerate(artists["is_local"]):
        vertices = artists["local" if is_local else "global"].get_path().vertices
        inside = np.isclose(vertices[:, 0], k - 0.4) | np.isclose(vertices[:, 0], k + 0.4)
        heights.append(float(vertices[inside, 1].max()))
    return heights


def update_layer_cache(ax, artists, entries, *, levels=None, title=""):
    """New bar heights (same layers) and engine levels; the y axis follows them unless it was
    fixed."""
    entries = np.asarray(entries, dtype=float)
    artists["heights"] = entries
    x = np.arange(entries.size)
    for key, which in (("local", artists["is_local"]), ("global", ~artists["is_local"])):
        artists[key].set_path(boxes_path(x[which] - 0.4, x[which] + 0.4, 0.0, entries[which]))
    for label, level in (levels or {}).items():
        artists["levels"][label].set_ydata([level, level])
    if not artists.get("fixed"):
        top = max([entries.max(initial=0.0)] + [float(line.get_ydata()[0])
                                                for line in artists["levels"].values()])
        ax.set_ylim(0, 1.12 * top if top > 0 else 1.0)
    ax.title.set_text(title)
    return artists
