"""draw(ax, data) functions for notebooks 05 and 09: KV-cache sizes, the GQA head map, cost curves.

Matplotlib only, no computation beyond formatting. Each ``draw_*`` returns the artists a widget
updates in place; the matching ``update_*`` sets new data on them (no figure rebuild).
Colours are the Okabe-Ito palette (colour-blind safe) and every series also differs by line
style or marker, so the figures stay readable printed in grey.
"""
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from ._style import PALETTE, STYLES

__all__ = ["PALETTE", "STYLES", "token_label", "draw_size_curves", "update_size_curves",
           "draw_head_map", "update_head_map"]



def token_label(x, _pos=None):
    """Tick label for a token count: 512, 4K, 128K, 1M."""
    if x >= 1024 ** 2:
        return f"{x / 1024 ** 2:g}M"
    return f"{x / 1024:g}K" if x >= 1024 else f"{x:g}"


def _fit_log_ylim(ax, curves, extra=()):
    ys = np.concatenate([np.asarray(y, dtype=float).ravel() for y in curves]
                        + [np.asarray(extra, dtype=float).ravel()])
    ys = ys[np.isfinite(ys) & (ys > 0)]
    if ys.size:
        ax.set_ylim(ys.min() / 2.5, ys.max() * 2.5)


def draw_size_curves(ax, lengths, curves, *, marker_n, ylabel, title, hlines=None,
                     legend_loc="upper left"):
    """Curves of a size (or a cost) against context length, both axes logarithmic.

    ``lengths`` are token counts (a log2 axis labelled 1K, 32K, ...); ``curves`` maps a legend
    label to one y value per length. A marker sits on each curve at ``marker_n`` and a dotted
    cursor line marks it. ``hlines`` maps labels to constant reference levels (drawn grey and
    dashed). Returns a dict: ``lines`` and ``markers`` (label -> Line2D), ``cursor``, ``hlines``.
    """
    x = np.asarray(lengths, dtype=float)
    lines, markers = {}, {}
    for (label, y), style in zip(curves.items(), STYLES):
        y = np.asarray(y, dtype=float)
        lines[label], = ax.plot(x, y, color=style["color"], linestyle=style["linestyle"],
                                linewidth=2, label=label)
        markers[label], = ax.plot([], [], linestyle="none", marker=style["marker"],
                                  markersize=8, color=style["color"], markeredgecolor="black")
    refs = {}
    for label, level in (hlines or {}).items():
        refs[label] = ax.axhline(level, color=PALETTE["grey"], linestyle="--", linewidth=1.5,
                                 label=label)
    cursor = ax.axvline(marker_n, color=PALETTE["grey"], linestyle=":", linewidth=1.5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(FixedLocator(list(x)))
    ax.xaxis.set_major_formatter(FuncFormatter(token_label))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_locator(NullLocator())  # minor log ticks cost ~10 ms a redraw
    ax.set_xlabel("context length n (tokens)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc=legend_loc, fontsize=8)
    artists = {"lines": lines, "markers": markers, "cursor": cursor, "hlines": refs}
    update_size_curves(ax, artists, curves, marker_n=marker_n)
    return artists


def update_size_curves(ax, artists, curves, *, marker_n, hlines=None):
    """New y values for some or all curves (same x), markers and cursor moved to ``marker_n``."""
    for label, y in curves.items():
        artists["lines"][label].set_ydata(np.asarray(y, dtype=float))
    for label, line in artists["lines"].items():
        x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
        i = int(np.argmin(np.abs(x - marker_n)))
        artists["markers"][label].set_data([x[i]], [y[i]])
    for label, level in (hlines or {}).items():
        artists["hlines"][label].set_ydata([level, level])
    artists["cursor"].set_xdata([marker_n, marker_n])
    _fit_log_ylim(ax, [line.get_ydata() for line in artists["lines"].values()],
                  [h.get_ydata()[0] for h in artists["hlines"].values()])
    return artists


# ------------------------------------------------------------------ the GQA head map

_MAP_COLOURS = ["#FFFFFF", PALETTE["blue"]]


def draw_head_map(ax, head_map, n_kv, *, title=None):
    """Which KV head each query head reads: a (KV heads x query heads) grid, filled where
    query head h reads KV head ``head_map[h]`` (the x label says so: no legend, which would
    cost a redraw more than the grid). Returns a dict with ``image``."""
    image = ax.imshow(np.zeros((1, 1)), cmap=ListedColormap(_MAP_COLOURS), vmin=0, vmax=1,
                      interpolation="nearest", aspect="auto", origin="upper")
    ax.set_xlabel("query head h (filled: the KV head it reads)")
    ax.set_ylabel("KV head (shared K and V)")
    artists = {"image": image}
    update_head_map(ax, artists, head_map, n_kv, title=title)
    return artists


def update_head_map(ax, artists, head_map, n_kv, *, title=None):
    """Redraw the grid for a new mapping (its shape may change)."""
    head_map = np.asarray(head_map, dtype=int)
    hq = head_map.size
    grid = (np.arange(n_kv)[:, None] == head_map[None, :]).astype(float)  # (n_kv, hq)
    image = artists["image"]
    image.set_data(grid)
    image.set_extent((-0.5, hq - 0.5, n_kv - 0.5, -0.5))
    ax.set_xlim(-0.5, hq - 0.5)
    ax.set_ylim(n_kv - 0.5, -0.5)
    ax.set_xticks(np.arange(0, hq, max(1, hq // 8)))
    ax.set_yticks(np.arange(0, n_kv, max(1, n_kv // 8)))
    group = hq // n_kv
    ax.title.set_text(title or f"{hq} query heads read {n_kv} KV head{'s' if n_kv > 1 else ''} "
                          f"(groups of {group})")
    return artists
