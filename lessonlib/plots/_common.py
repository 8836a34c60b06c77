"""Drawers more than one notebook's figures use: one of each kind, so the figures agree.

- ``token_label``: a token count as a tick label (512, 4K, 128K, 1M).
- ``fit_log_ylim``: y limits on a log axis that hold every positive value, with a margin that
  each figure chooses (room for its key).
- ``draw_log_curves`` / ``update_log_curves``: curves over a log2 x axis (token counts, block
  sizes) and a log y axis, a marker on each at the selected x and a dotted cursor there.
- Code maps, a picture of classification codes (``lessonlib.attention``'s TILE_* and MASK_*)
  on axes that run from 0 to 1 whatever the picture's size: ``code_map_axes`` lays the axes
  out, ``code_key`` makes the key's patches (one colour and label per code, in code order),
  ``tile_grid`` / ``set_tile_grid`` draw the white lines between tiles while they are few
  enough to see, and ``legend_under`` puts a key under the axes. How each map fills its cells
  (runs of tiles as patches, a mask's outline, an image) is its own: that is what its pixels
  are made of.

Matplotlib only, no computation beyond formatting.
"""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator
from matplotlib.transforms import ScaledTranslation

from ._style import PALETTE

__all__ = ["token_label", "fit_log_ylim", "draw_log_curves", "update_log_curves",
           "code_map_axes", "code_key", "tile_grid", "set_tile_grid", "legend_under",
           "GRID_MAX_TILES"]


# ------------------------------------------------------------------ token counts, log limits

def token_label(x, _pos=None):
    """Tick label for a token count: 512, 4K, 128K, 1M."""
    if x >= 1024 ** 2:
        return f"{x / 1024 ** 2:g}M"
    return f"{x / 1024:g}K" if x >= 1024 else f"{x:g}"


def fit_log_ylim(ax, curves, *, extra=(), margin=(3.0, 3.0)):
    """Y limits that hold every positive value of ``curves`` (and of ``extra``, reference
    levels) on a log axis: from the lowest / ``margin[0]`` to the highest x ``margin[1]``.

    A widget whose limits must not move calls it once with the envelope of every slider
    setting, then updates without it: fixed limits keep the tick labels (and the layout) still.
    """
    ys = np.concatenate([np.asarray(y, dtype=float).ravel() for y in curves]
                        + [np.asarray(extra, dtype=float).ravel()])
    ys = ys[np.isfinite(ys) & (ys > 0)]
    if ys.size:
        ax.set_ylim(ys.min() / margin[0], ys.max() * margin[1])


# ------------------------------------------------------------------ log-log curves

_CURSOR = dict(color=PALETTE["grey"], linestyle=":", linewidth=1.5)


def draw_log_curves(ax, x, curves, *, marker_x, styles, xlabel, ylabel, xticks=None,
                    xformatter=token_label, y_numticks=None, hlines=None, cursor="full"):
    """Curves over a log2 x axis and a log y axis, a marker on each at ``marker_x`` and a
    dotted cursor there; the caller adds the title, the key and the y limits.

    ``curves`` maps a legend label to one y value per ``x``, drawn in ``styles`` (dicts of
    color, linestyle, marker) in order. ``xticks`` are the labelled x values (default ``x``),
    ``y_numticks`` the most y ticks (default: matplotlib's). ``hlines`` maps labels to constant
    reference levels (grey, dashed). The cursor spans the axes' height (``"full"``) or drops
    from the highest marker to the x axis (``"drop"``: it then never crosses a key placed
    above every curve). Returns a dict: ``lines`` and ``markers`` (label -> Line2D),
    ``cursor``, ``hlines`` (label -> Line2D) and ``cursor_drops``.
    """
    if cursor not in ("full", "drop"):
        raise ValueError(f"cursor must be 'full' or 'drop', got {cursor!r}")
    x = np.asarray(x, dtype=float)
    lines, markers = {}, {}
    for (label, y), style in zip(curves.items(), styles):
        lines[label], = ax.plot(x, np.asarray(y, dtype=float), color=style["color"],
                                linestyle=style["linestyle"], linewidth=2, label=label)
        markers[label], = ax.plot([], [], linestyle="none", marker=style["marker"],
                                  markersize=8, color=style["color"], markeredgecolor="black")
    refs = {label: ax.axhline(level, color=PALETTE["grey"], linestyle="--", linewidth=1.5,
                              label=label)
            for label, level in (hlines or {}).items()}
    drop = cursor == "drop"
    cursor = ax.plot([marker_x, marker_x], [np.nan, np.nan], **_CURSOR)[0] if drop else \
        ax.axvline(marker_x, **_CURSOR)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(list(x if xticks is None else xticks)))
    ax.xaxis.set_major_formatter(FuncFormatter(xformatter))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_yscale("log")
    if y_numticks is not None:
        ax.yaxis.set_major_locator(LogLocator(base=10, numticks=y_numticks))
    ax.yaxis.set_minor_locator(NullLocator())  # minor log ticks cost ~10 ms a redraw
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    return {"lines": lines, "markers": markers, "cursor": cursor, "hlines": refs,
            "cursor_drops": drop}


def update_log_curves(ax, artists, curves, *, marker_x, x=None, hlines=None, gaps=False,
                      margin=None):
    """New y values for some or all curves (on new ``x`` if given); every curve's marker and
    the cursor move to ``marker_x``, ``hlines`` (label -> level) move their lines. ``gaps``:
    a value <= 0 (which a log axis cannot show) is drawn as a gap. With ``margin`` the y
    limits fit every curve and reference level again (``fit_log_ylim``); without it they
    stay. A dropping cursor then rises from the x axis to the highest marker."""
    for label, y in curves.items():
        y = np.asarray(y, dtype=float)
        if gaps:
            y = np.where(y > 0, y, np.nan)
        line = artists["lines"][label]
        if x is None:
            line.set_ydata(y)
        else:
            line.set_data(np.asarray(x, dtype=float), y)
    for label, line in artists["lines"].items():
        xs, ys = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
        i = int(np.argmin(np.abs(xs - marker_x)))
        artists["markers"][label].set_data([xs[i]], [ys[i]])
    for label, level in (hlines or {}).items():
        artists["hlines"][label].set_ydata([level, level])
    artists["cursor"].set_xdata([marker_x, marker_x])
    if margin is not None:
        fit_log_ylim(ax, [line.get_ydata() for line in artists["lines"].values()],
                     extra=[h.get_ydata()[0] for h in artists["hlines"].values()],
                     margin=margin)
    if artists.get("cursor_drops"):  # from the x axis up to the highest marker
        top = max(float(m.get_ydata()[0]) for m in artists["markers"].values())
        artists["cursor"].set_ydata([ax.get_ylim()[0], top])
    return artists


# ------------------------------------------------------------------ code maps

GRID_MAX_TILES = 32  # white lines part the tiles while a side has at most this many


def code_map_axes(ax, *, xlabel, ylabel, aspect="equal"):
    """Axes for a code map: x from 0 to 1 across, y from 0 at the top to 1 at the bottom
    (query or row 0 first), no matplotlib ticks (a map labels its own), the axis labels."""
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(1.0, 0.0)
    ax.set_aspect(aspect, adjustable="box")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def code_key(colours, labels, **patch_kw):
    """The key's patches of a code map: code k drawn in ``colours[k]``, named ``labels[k]``."""
    return [Patch(facecolor=c, edgecolor="black", label=lab, **patch_kw)
            for c, lab in zip(colours, labels)]


def tile_grid(ax, **kw):
    """An empty white LineCollection for the lines between tiles (``set_tile_grid``)."""
    grid = LineCollection([], colors="white", linewidths=1.0, **kw)
    ax.add_collection(grid)
    return grid


def set_tile_grid(grid, x_edges, y_edges, tiles):
    """Lines at the inner tile edges ``x_edges`` (vertical) and ``y_edges`` (horizontal), in
    the map's 0..1 coordinates, while ``tiles`` (the longer side) is at most GRID_MAX_TILES;
    none beyond (the lines would hide the tiles)."""
    if tiles <= GRID_MAX_TILES:
        grid.set_segments([[(e, 0.0), (e, 1.0)] for e in x_edges]
                          + [[(0.0, e), (1.0, e)] for e in y_edges])
    else:
        grid.set_segments([])


def legend_under(ax, handles, *, ncol=2, fontsize=8, handlelength=2.0, columnspacing=1.0):
    """A legend of ``handles`` centred under the axes, below its x label (off the data)."""
    under = ax.xaxis.labelpad + 1.3 * ax.xaxis.label.get_size() + 4  # points: below the label
    if len(ax.get_xticks()):  # matplotlib's own tick marks and labels above the axis label
        size = FontProperties(size=plt.rcParams["xtick.labelsize"]).get_size()
        under += plt.rcParams["xtick.major.size"] + plt.rcParams["xtick.major.pad"] + 1.2 * size
    return ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol,
                     fontsize=fontsize, frameon=False, handlelength=handlelength,
                     columnspacing=columnspacing,
                     borderaxespad=0.0,
                     bbox_transform=ax.transAxes + ScaledTranslation(0, -under / 72,
                                                                     ax.figure.dpi_scale_trans))
