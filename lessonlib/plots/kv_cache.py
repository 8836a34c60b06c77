"""draw(ax, data) functions for notebooks 05 and 09: KV-cache sizes, the GQA head map, cost curves.

Matplotlib only, no computation beyond formatting. Each ``draw_*`` returns the artists a widget
updates in place; the matching ``update_*`` sets new data on them (no figure rebuild).
Colours are the Okabe-Ito palette (colour-blind safe) and every series also differs by line
style or marker, so the figures stay readable printed in grey.
"""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.markers import TICKDOWN, TICKLEFT
from matplotlib.patches import PathPatch
from matplotlib.path import Path
from matplotlib.transforms import ScaledTranslation

from ._common import draw_log_curves, fit_log_ylim, legend_under, token_label, update_log_curves
from ._style import PALETTE, STYLES

__all__ = ["PALETTE", "STYLES", "token_label", "draw_size_curves", "update_size_curves",
           "draw_budget", "update_budget", "fit_log_ylim",
           "draw_head_map", "update_head_map", "pin_legend", "medium_titles", "outside_ticks",
           "place_ticks", "first_middle_last", "boxes_path"]


def pin_legend(ax):
    """Move the axes' legend to its figure, in the same place, and return it (None if none).

    A blitting ``Explorer`` redraws everything that belongs to an axes on every slider step,
    its legend too (a legend costs more than the lines it names); a figure's legend is drawn
    once, into the background. Call it after the layout is frozen (``freeze_layout``), on a
    legend placed clear of the data (``_legend_clear_of_data``): lines drawn later go on top.
    """
    legend = ax.get_legend()
    if legend is None:
        return None
    fig = ax.figure
    ax.legend_ = None  # no longer one of the axes' children
    fig.legends.append(legend)
    legend._remove_method = fig.legends.remove
    return legend


TICK_POINTS = 3.5  # length of the tick marks ``outside_ticks`` draws


def outside_ticks(ax, *, which="xy", count=3, fontsize=None, digits=3):
    """Tick marks and labels of our own, outside an axes whose limits never change.

    A picture that fills its axes whatever its size (a mask of n tokens, a grid of t tiles)
    keeps the axes at 0..1, so a slider step redraws the picture and these few artists, not
    the axes (matplotlib's ticks would change, and with them the whole figure). ``count``
    labels per axis in ``which`` ("x", "y" or "xy"), offset in points; the axis labels get the
    room (labelpad) that labels of up to ``digits`` digits need. ``place_ticks`` moves them.
    Returns ``{axis: (marks Line2D, [Text, ...])}``.
    """
    fig = ax.figure
    size = FontProperties(size=fontsize or plt.rcParams["xtick.labelsize"]).get_size()
    gap = ScaledTranslation
    out = {}
    if "x" in which:
        marks, = ax.plot([], [], linestyle="none", marker=TICKDOWN, markersize=TICK_POINTS,
                         markeredgewidth=0.8, color="black", transform=ax.get_xaxis_transform(),
                         clip_on=False)
        at = ax.get_xaxis_transform() + gap(0, -(TICK_POINTS + 2) / 72, fig.dpi_scale_trans)
        out["x"] = (marks, [ax.text(0, 0, "", transform=at, ha="center", va="top",
                                    fontsize=size) for _ in range(count)])
        ax.xaxis.labelpad = TICK_POINTS + 2 + 1.2 * size
    if "y" in which:
        marks, = ax.plot([], [], linestyle="none", marker=TICKLEFT, markersize=TICK_POINTS,
                         markeredgewidth=0.8, color="black", transform=ax.get_yaxis_transform(),
                         clip_on=False)
        at = ax.get_yaxis_transform() + gap(-(TICK_POINTS + 2) / 72, 0, fig.dpi_scale_trans)
        out["y"] = (marks, [ax.text(0, 0, "", transform=at, ha="right", va="center",
                                    fontsize=size) for _ in range(count)])
        ax.yaxis.labelpad = TICK_POINTS + 4 + 0.65 * size * digits
    return out


def place_ticks(ticks, axis, positions, labels):
    """Put the marks and labels of ``outside_ticks(...)[axis]`` at ``positions`` (the axis's
    0..1 data coordinates) with ``labels``; labels left over are emptied."""
    marks, texts = ticks[axis]
    positions = list(positions)[:len(texts)]
    zeros = [0.0] * len(positions)
    marks.set_data(*((positions, zeros) if axis == "x" else (zeros, positions)))
    for k, text in enumerate(texts):
        if k < len(positions):
            text.set_text(str(labels[k]))
            if axis == "x":
                text.set_x(positions[k])
            else:
                text.set_y(positions[k])
        else:
            text.set_text("")


def first_middle_last(count):
    """The indices an axis of ``count`` cells labels: 0, count // 2 and count - 1."""
    return sorted({0, count // 2, count - 1}) if count > 2 else list(range(count))


def medium_titles(*axes):
    """Titles at the body text's size (rcParams font.size), not matplotlib's larger default:
    each then fits the width of its panel, in the presenter too. ``freeze_layout`` sets titles
    again at the default size: call this before it (the layout) and after it (the drawing)."""
    for ax in axes:
        ax.title.set_fontsize("medium")


def _legend_clear_of_data(legend, artists, *, pad_px=6.0):
    """True when no point of ``artists`` (lines: their vertices, finite ones only; markers
    included: ``pad_px`` is about half a marker) falls inside the legend's box, in display
    pixels. Draw the figure first."""
    box = legend.get_window_extent().padded(pad_px)
    for artist in artists:
        xy = np.asarray(artist.get_xydata(), dtype=float)
        xy = xy[np.isfinite(xy).all(axis=1)] if xy.size else xy
        if not xy.size:
            continue
        pts = artist.get_transform().transform(xy)
        if len(pts) > 1:  # the segments between vertices, finely sampled
            t = np.linspace(0.0, 1.0, 50)[:, None, None]
            pts = (pts[:-1][None] * (1 - t) + pts[1:][None] * t).reshape(-1, 2)
        inside = ((pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0)
                  & (pts[:, 1] <= box.y1))
        if inside.any():
            return False
    return True



def draw_size_curves(ax, lengths, curves, *, marker_n, ylabel, title, hlines=None,
                     legend_loc="upper left", ylim_pad=(2.5, 2.5), cursor="full"):
    """Curves of a size (or a cost) against context length, both axes logarithmic.

    ``lengths`` are token counts (a log2 axis labelled 1K, 32K, ...); ``curves`` maps a legend
    label to one y value per length. A marker sits on each curve at ``marker_n`` and a dotted
    cursor line marks it. ``hlines`` maps labels to constant reference levels (drawn grey and
    dashed). The y range runs from the lowest value / ``ylim_pad[0]`` to the highest x
    ``ylim_pad[1]`` (room for the legend where no curve goes). The cursor spans the axes'
    height (``cursor="full"``) or drops from the highest marker to the x axis (``"drop"``:
    it then never crosses a legend placed above every curve). The curves, markers, reference
    lines and cursor are ``_common.draw_log_curves``'s. Returns its dict (``lines`` and
    ``markers``: label -> Line2D, ``cursor``, ``hlines``) with ``ylim_pad``.
    """
    artists = draw_log_curves(ax, lengths, curves, marker_x=marker_n, styles=STYLES,
                              xlabel="context length n (tokens)", ylabel=ylabel, hlines=hlines,
                              cursor=cursor)
    ax.set_title(title)
    ax.legend(loc=legend_loc, fontsize=8)
    artists["ylim_pad"] = tuple(float(f) for f in ylim_pad)
    update_size_curves(ax, artists, curves, marker_n=marker_n)
    return artists


def update_size_curves(ax, artists, curves, *, marker_n, hlines=None):
    """New y values for some or all curves (same x), markers and cursor moved to ``marker_n``;
    the y range fits every curve and reference level again, with the ``ylim_pad`` drawn."""
    return update_log_curves(ax, artists, curves, marker_x=marker_n, hlines=hlines,
                             margin=artists.get("ylim_pad", (2.5, 2.5)))


def draw_budget(ax, lengths, curves, *, marker_n, room, title):
    """What one sequence needs beside the weights against n by each engine (``curves``: label ->
    GiB per length: the cache, and what the engine reserves with it) and the room the weights leave on the GPU (``room``: label -> GiB, drawn as dashed and
    dash-dotted grey levels), the key in three columns under the axes, off the data. The y
    limits are the caller's (``fit_log_ylim`` over every setting: they stay put)."""
    artists = draw_log_curves(ax, lengths, curves, marker_x=marker_n, styles=STYLES,
                              xlabel="context length n (tokens)",
                              ylabel="one sequence needs (GiB, log)", hlines=room,
                              cursor="full")
    for line, style in zip(artists["hlines"].values(), ("--", "-.")):
        line.set_linestyle(style)
    ax.set_xlim(min(lengths), max(lengths))  # the curves start as gaps: no data to fit x to
    ax.set_title(title)
    legend_under(ax, list(artists["lines"].values()) + list(artists["hlines"].values()), ncol=3)
    return artists


def update_budget(ax, artists, curves, *, marker_n, room):
    """New curves (NaN where an engine has not the cache type), room levels (NaN when the
    weights leave none) and the cursor at ``marker_n``; the y limits stay."""
    return update_log_curves(ax, artists, curves, marker_x=marker_n, hlines=room, gaps=True)


# ------------------------------------------------------------------ the GQA head map

_MAP_COLOUR = PALETTE["blue"]  # a filled cell, on the axes' white


def boxes_path(x0, x1, y0, y1):
    """One compound Path of the rectangles [x0, x1] x [y0, y1] (arrays of one value per box):
    a patch of it draws them all in a single call, far cheaper than one patch per box."""
    x0, x1, y0, y1 = np.broadcast_arrays(*(np.asarray(v, dtype=float).ravel()
                                           for v in (x0, x1, y0, y1)))
    corners = np.stack([np.column_stack(c) for c in ((x0, y0), (x1, y0), (x1, y1), (x0, y1),
                                                     (x0, y0))], axis=1)  # (boxes, 5, 2)
    codes = np.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY],
                    x0.size)
    return Path(corners.reshape(-1, 2), codes) if x0.size else Path(np.zeros((1, 2)),
                                                                     [Path.MOVETO])


def _cells_filled(patch, centres):
    """Which of the points ``centres`` ((k, 2), data coordinates) a patch drawn from
    ``boxes_path`` covers: what the picture shows, read back (for tests)."""
    return patch.get_path().contains_points(np.asarray(centres, dtype=float))


def draw_head_map(ax, head_map, n_kv, *, title=None, labels_fontsize=None):
    """Which KV head each query head reads: a (KV heads x query heads) grid, filled where
    query head h reads KV head ``head_map[h]`` (the x label says so: no legend, which would
    cost a redraw more than the grid). The filled cells are one patch (``boxes_path``: a
    slider step redraws one path, not an image resampled to the axes' pixels). The rows fill
    the axes whatever their number (the y axis runs from 0 to 1, so a new number of KV heads
    redraws the patch, not the axes); the first, middle and last KV head are labelled
    (``outside_ticks``). Returns a dict with ``cells`` (the PathPatch), ``grid`` (the
    (n_kv, hq) 0/1 array shown) and ``index`` (``outside_ticks``'s marks and labels)."""
    hq = int(np.asarray(head_map).size)
    cells = ax.add_patch(PathPatch(boxes_path([], [], [], []), facecolor=_MAP_COLOUR,
                                   edgecolor="none", linewidth=0, antialiased=False))
    ax.set_facecolor("white")
    ax.set_xlim(-0.5, hq - 0.5)
    ax.set_ylim(1.0, 0.0)
    ax.set_xticks(np.arange(0, hq, max(1, hq // 8)))
    ax.set_yticks([])
    ax.set_xlabel("query head h (filled: the KV head it reads)")
    ax.set_ylabel("KV head (shared K and V)")
    artists = {"cells": cells, "index": outside_ticks(ax, which="y", fontsize=labels_fontsize,
                                                      digits=2)}
    update_head_map(ax, artists, head_map, n_kv, title=title)
    return artists


def _head_map_centres(hq, n_kv):
    """The centres of the grid's cells in the head map's data coordinates, (n_kv * hq, 2), row
    by row: KV head k's row spans y = k / n_kv .. (k + 1) / n_kv, query head h's column
    x = h - 0.5 .. h + 0.5."""
    k, h = np.meshgrid(np.arange(n_kv), np.arange(hq), indexing="ij")
    return np.column_stack([h.ravel(), ((k + 0.5) / n_kv).ravel()])


def update_head_map(ax, artists, head_map, n_kv, *, title=None):
    """Redraw the grid for a new mapping (its number of rows may change; the axes do not)."""
    head_map = np.asarray(head_map, dtype=int)
    hq = head_map.size
    artists["grid"] = (np.arange(n_kv)[:, None] == head_map[None, :]).astype(float)  # (n_kv, hq)
    h = np.arange(hq)
    artists["cells"].set_path(boxes_path(h - 0.5, h + 0.5, head_map / n_kv,
                                         (head_map + 1) / n_kv))
    if ax.get_xlim() != (-0.5, hq - 0.5):  # another number of query heads
        ax.set_xlim(-0.5, hq - 0.5)
        ax.set_xticks(np.arange(0, hq, max(1, hq // 8)))
    if "index" in artists:  # the first, middle and last KV head, at their rows' centres
        rows = first_middle_last(n_kv)
        place_ticks(artists["index"], "y", [(r + 0.5) / n_kv for r in rows], rows)
    group = hq // n_kv
    ax.title.set_text(title or f"{hq} query heads, {n_kv} KV head{'s' if n_kv > 1 else ''}: "
                          f"groups of {group}")
    return artists
