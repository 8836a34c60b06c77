"""draw(ax, data) functions for notebooks 01-03: score-matrix memory, online softmax, tiles.

Matplotlib only, no computation beyond formatting. Each ``draw_*`` returns the artists a widget
updates in place; the matching ``update_*`` sets new data on them (no figure rebuild).
Colours are the Okabe-Ito palette (colour-blind safe) and every series also differs by line
style or marker, so the figures stay readable printed in grey.

Legends never sit on the data: a panel's key is a header above its axes, under the panel's
title (``_legend_header``), or a column beside them. Labels that never move (the value vectors'
names, "break-even") are figure texts placed in data coordinates, and after a widget has frozen
its layout ``legends_to_figure`` makes each legend a figure legend at the same place: a
blitted redraw (``lessonlib.widgets._base.Explorer``) then leaves all of them in the cached
background instead of drawing them again on every slider step (a legend costs about 25 ms).
"""
import numpy as np
from matplotlib.patches import Patch, PathPatch
from matplotlib.path import Path
from matplotlib.ticker import FixedFormatter, FixedLocator
from matplotlib.transforms import offset_copy

from ._common import (code_key, code_map_axes, draw_log_curves, fit_log_ylim, set_tile_grid,
                      tile_grid, token_label, update_log_curves)
from ._style import PALETTE, STYLES

__all__ = [
    "PALETTE", "STYLES", "fit_log_ylim", "legends_to_figure", "fix_ticks", "update_curves",
    "draw_memory_curves", "draw_flop_curves", "draw_softmax_terms", "update_softmax_terms",
    "draw_value_plane", "update_value_plane", "draw_block_map",
    "update_block_map", "draw_ratio_curves", "update_ratio_curves",
]

# The smallest type in these figures (legend entries, notes on the data), in points: 12.5 px at
# the laptop's 100 dpi, 16 px at the presenter's 130 dpi before the page scales the figure.
_LEGEND_FONTSIZE = 9
"""9 points, the legend entries' type size."""
_NOTE_FONTSIZE = 9
"""9 points, the type size of notes on the data."""

# The block map's colour and name of each tile code, indexed by lessonlib.attention's codes
# (TILE_SKIPPED = 0, TILE_MASKED = 1, TILE_FULL = 2).
_BLOCK_COLOURS = ["#E8E8E8", PALETTE["orange"], PALETTE["blue"]]  # light grey: skipped
"""The block map's colour of each tile code, indexed by ``lessonlib.attention``'s codes: light
grey (skipped), orange (masked), blue (full)."""
_BLOCK_LABELS = ["skipped", "masked", "full"]
MARGIN = (3.0, 3.0)  # these curves' y range: the lowest / 3 to the highest x 3 (fit_log_ylim)


# ------------------------------------------------------------------ legends off the data

def _legend(ax, handles, labels, **kw):
    """An axes legend that remembers how it was made (``legends_to_figure`` remakes it)."""
    kw = dict(fontsize=_LEGEND_FONTSIZE, **kw)
    legend = ax.legend(handles, labels, **kw)
    legend.lessonlib_spec = dict(handles=list(handles), labels=list(labels), kw=kw)
    return legend


def _legend_header(ax, title, handles=None, labels=None, *, ncols=None):
    """The panel's title with its key under it, both above the axes: nothing covers the data.

    The title is the legend's title (a constrained layout then leaves room for both); it is
    also the axes' label (``ax.get_label()``), and ``ax.get_title()`` stays empty.
    """
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    ax.set_label(title)
    return _legend(ax, handles, labels, title=title, title_fontsize="large",
                   loc="lower center", bbox_to_anchor=(0.5, 1.0), borderaxespad=0.3,
                   ncols=ncols or len(handles), frameon=False, columnspacing=1.2,
                   handlelength=2.4)


def _legend_beside(ax, handles=None, labels=None):
    """The key in a column to the right of the axes (outside them)."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    return _legend(ax, handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                   borderaxespad=0.0, frameon=False)


def legends_to_figure(fig):
    """Remake each legend drawn here as a figure legend at the same place; returns them.

    Call it once the layout is frozen (``lessonlib.widgets._base.freeze_layout``): the legend
    is then part of the figure's background, which a blitted redraw restores instead of
    drawing the legend again.
    """
    moved = []
    for ax in fig.axes:
        legend = ax.get_legend()
        spec = getattr(legend, "lessonlib_spec", None)
        if spec is None:
            continue
        legend.remove()
        new = fig.legend(spec["handles"], spec["labels"], bbox_transform=ax.transAxes,
                         **spec["kw"])
        new.lessonlib_spec = dict(spec, axes=ax)
        moved.append(new)
    return moved


def fix_ticks(fig):
    """Keep every axis's ticks and tick labels as they are drawn now; returns the figure.

    For a widget whose axis limits never move: a tick locator and formatter otherwise
    recompute the same ticks each time anything asks for them (a blitted redraw asks on every
    slider step, about 5 ms an automatic axis). The labels keep their text, so the figure
    looks the same.
    """
    fig.canvas.draw()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = axis.get_majorticklabels()  # the ticks in view, as drawn
            ticks = [t.get_loc() for t in axis.get_major_ticks()[:len(labels)]]
            axis.set_major_locator(FixedLocator(ticks))
            axis.set_major_formatter(FixedFormatter([t.get_text() for t in labels]))
            axis.set_minor_locator(FixedLocator(list(axis.get_minorticklocs())))
    return fig


def _note(ax, x, y, text, *, dx=0, dy=0, **kw):
    """A fixed label at data point (x, y), offset by (dx, dy) points: a figure text (static)."""
    where = offset_copy(ax.transData, fig=ax.figure, x=dx, y=dy, units="points")
    return ax.figure.text(x, y, text, transform=where, fontsize=_NOTE_FONTSIZE, **kw)


# ------------------------------------------------------------------ curves (notebooks 01, 03)

def _draw_curves(ax, x, curves, *, marker_x, xlabel, ylabel, title, xformatter=token_label,
                ncols=2):
    """Curves over a log2 x axis (log y), each with a marker at ``marker_x`` and a cursor line
    (``_common.draw_log_curves``), the y range fitted with ``MARGIN``.

    ``curves`` maps a legend label to y values (same length as ``x``); the title and the key
    (``ncols`` columns) sit above the axes. Returns ``draw_log_curves``'s dict (``lines`` and
    ``markers``: label -> Line2D, ``cursor``: the vertical line).
    """
    artists = draw_log_curves(ax, x, curves, marker_x=marker_x, styles=STYLES, xlabel=xlabel,
                              ylabel=ylabel, xformatter=xformatter, y_numticks=7)
    update_curves(ax, artists, curves, marker_x=marker_x)
    lines = artists["lines"]
    _legend_header(ax, title, list(lines.values()), list(lines), ncols=min(ncols, len(lines)))
    return artists


def update_curves(ax, artists, curves, *, marker_x, rescale=True):
    """Set new y values (same labels and x as when drawn) and move the markers and cursor;
    ``rescale`` fits the y range to the curves again (``MARGIN``)."""
    update_log_curves(ax, artists, curves, marker_x=marker_x, margin=MARGIN if rescale else None)


def draw_memory_curves(ax, lengths, curves_gib, *, marker_n,
                       title="Memory: S grows as n², the KV cache as n"):
    """Notebook 01: memory (GiB, log) against context length (tokens, log2)."""
    return _draw_curves(ax, lengths, curves_gib, marker_x=marker_n,
                       xlabel="context n (tokens)", ylabel="memory (GiB)", title=title)


def draw_flop_curves(ax, lengths, curves_tflop, *, marker_n, title="Prefill compute"):
    """Notebook 01: prefill FLOPs (TFLOP, log) against context length (tokens, log2)."""
    return _draw_curves(ax, lengths, curves_tflop, marker_x=marker_n,
                       xlabel="context n (tokens)", ylabel="compute (TFLOP)", title=title)


# ------------------------------------------------------------------ notebook 02: online softmax

def draw_softmax_terms(ax, labels, terms, *, seen, sink_index=None,
                       title="Terms of l: exp(x_j − m)"):
    """Bars of exp(x_j - m) for the keys read so far (their sum is l); unread keys are empty.

    ``labels`` name the bars (keys, then the sink if any); ``seen`` is a bool per bar;
    ``sink_index`` marks the sink's bar (hatched: it has no value vector). Every term is at
    most 1 (m is the maximum), under the dotted line. Returns the BarContainer.
    """
    bars = ax.bar(np.arange(len(labels)), np.zeros(len(labels)), color=PALETTE["blue"],
                  edgecolor="black", linewidth=1)
    ax.set_xticks(np.arange(len(labels)), labels)
    ax.set_ylim(0, 1.1)
    ax.axhline(1.0, color=PALETTE["grey"], linestyle=":", linewidth=1)
    ax.set_xlabel("key j (score x_j)")
    ax.set_ylabel("exp(x_j − m)")
    key = [Patch(facecolor=PALETTE["blue"], edgecolor="black", label="read"),
           Patch(facecolor="white", edgecolor=PALETTE["grey"], linestyle="--", label="not read")]
    if sink_index is not None:
        key.append(Patch(facecolor=PALETTE["orange"], edgecolor="black", hatch="//",
                         label="sink"))
    _legend_header(ax, title, key, [p.get_label() for p in key])
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
                     title="Output acc / l among the values"):
    """The 2-D value vectors v_j, the running output after each key, and the sink's output.

    ``values`` (n, 2); ``path`` (k, 2) outputs acc/s after keys 0..k-1; ``sink_output`` (2,)
    or None. The key is a column beside the axes. Returns a dict of artists: ``values``,
    ``path``, ``current``, ``sink``, ``labels`` (the names v0, v1, ..., figure texts).
    """
    values = np.asarray(values, dtype=float)
    pts = ax.scatter(values[:, 0], values[:, 1], s=60, marker="s", color=PALETTE["grey"],
                     edgecolor="black", zorder=2, label="v_j")
    names = [_note(ax, a, b, f"v{j}", dx=6, dy=4) for j, (a, b) in enumerate(values)]
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
    _legend_beside(ax)
    artists = {"values": pts, "path": line, "current": current, "sink": sink, "labels": names}
    update_value_plane(artists, path, sink_output=sink_output)
    return artists


def update_value_plane(artists, path, *, sink_output=None):
    """Move ``draw_value_plane``'s artists to a new path of outputs (and the sink's output)."""
    path = np.asarray(path, dtype=float).reshape(-1, 2)
    artists["path"].set_data(path[:, 0], path[:, 1])
    artists["current"].set_data(path[-1:, 0], path[-1:, 1])
    if sink_output is None:
        artists["sink"].set_data([], [])
    else:
        artists["sink"].set_data([sink_output[0]], [sink_output[1]])
    return artists


# ------------------------------------------------------------------ notebook 03: tiles

def _tile_rectangles(codes, *, block, n):
    """Runs of equal tiles along each row of ``codes`` as rectangles in fractions of n.

    Returns (rects, code): rects (k, 5, 2) closed outlines (x = key position / n, y = query
    position / n), and the code of each run. A last block shorter than B is drawn shorter.
    """
    codes = np.asarray(codes)
    t = codes.shape[0]
    edges = np.minimum(np.arange(t + 1) * block, n) / n
    start = np.ones(codes.shape, dtype=bool)
    start[:, 1:] = codes[:, 1:] != codes[:, :-1]
    i, a = np.nonzero(start)  # each run: its row and its first column
    b = np.append(a[1:], t)
    b[np.append(i[1:] != i[:-1], True)] = t  # a row's last run ends at the row's end
    x0, x1, y0, y1 = edges[a], edges[b], edges[i], edges[i + 1]
    rects = np.stack([np.c_[x0, y0], np.c_[x1, y0], np.c_[x1, y1], np.c_[x0, y1],
                      np.c_[x0, y0]], axis=1)
    return rects, codes[i, a]


_NO_PATH = Path(np.empty((0, 2)))  # no tile of this kind


def draw_block_map(ax, codes, *, block, n, title=None):
    """The grid of (query block, key block) tiles coloured by what the kernel does with each.

    ``codes`` (T, T) holds ``attention.block_map``'s TILE_SKIPPED, TILE_MASKED or TILE_FULL.
    The axes (``_common.code_map_axes``) run over token positions as a fraction of n (0 to n,
    whatever n and B are: fixed ticks, fixed layout);
    a tile covers B tokens, so a last, shorter block shows shorter. Each kind of tile is one
    patch (its runs of tiles as one path: a few hundred rectangles at most, however many
    tiles), and white lines separate the tiles while there are at most 32 per side. Returns a
    dict: ``tiles`` (code -> PathPatch) and ``grid`` (the LineCollection of tile edges).
    """
    tiles = {code: ax.add_patch(PathPatch(_NO_PATH, facecolor=colour, edgecolor="none",
                                          linewidth=0))
             for code, colour in enumerate(_BLOCK_COLOURS)}
    grid = tile_grid(ax, zorder=3)
    code_map_axes(ax, xlabel="key position →", ylabel="query position →")
    ax.set_xticks([0.0, 1.0], ["0", "n"])
    ax.set_yticks([0.0, 1.0], ["0", "n"])
    _legend_beside(ax, code_key(_BLOCK_COLOURS, _BLOCK_LABELS), _BLOCK_LABELS)
    artists = {"tiles": tiles, "grid": grid}
    update_block_map(ax, artists, codes, block=block, n=n, title=title)
    return artists


def update_block_map(ax, artists, codes, *, block, n, title=None):
    """New tiles (any T x T) for block size ``block`` and length ``n``; limits stay (0, 1)."""
    codes = np.asarray(codes)
    t = codes.shape[0]
    rects, kinds = _tile_rectangles(codes, block=block, n=n)
    for code, patch in artists["tiles"].items():
        mine = rects[kinds == code]
        patch.set_path(Path.make_compound_path_from_polys(mine) if len(mine) else _NO_PATH)
    edges = np.arange(1, t) * block / n  # a last, shorter block ends at 1
    set_tile_grid(artists["grid"], edges, edges, t)
    ax.set_title(title or f"{t} x {t} tiles (B = {block})")
    return artists


def draw_ratio_curves(ax, blocks, curves, *, marker_block, d,
                      title="Traffic ratio naive / tiled"):
    """Traffic ratio (naive floats / tiled floats, log) against block size B (log2).

    ``curves`` maps labels to ratios per block; a dashed line marks ratio 1 (tiling stops
    paying below it), labelled under its right end, where every curve runs above it. Returns
    the same dict as ``_draw_curves`` plus ``break_even`` (the line) and ``break_even_label``.
    """
    artists = _draw_curves(ax, blocks, curves, marker_x=marker_block,
                          xlabel="block size B", ylabel="naive / tiled floats", title=title,
                          xformatter=lambda x, _pos=None: f"{x:g}", ncols=len(curves))
    artists["break_even"] = ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    artists["break_even_label"] = _note(ax, blocks[-1], 1.0, "break-even", dx=-2, dy=-3,
                                        ha="right", va="top")
    return artists


def update_ratio_curves(ax, artists, curves, *, marker_block, rescale=True):
    """Update ``draw_ratio_curves``' curves and the marker at ``marker_block``."""
    update_curves(ax, artists, curves, marker_x=marker_block, rescale=rescale)
