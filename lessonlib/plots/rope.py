"""draw(ax, data) functions for notebooks 07 (RoPE) and 08 (RoPE scaling).

Matplotlib only: the numbers come in computed (by ``lessonlib.rope``, through the widgets), and
nothing here does more than place them. Each ``draw_*`` returns the artists a widget updates in
place; the matching ``update_*`` sets new data on them (no figure rebuild, no relayout).
What never changes (a clock's face, its key, a legend) is drawn as a figure-level artist in the
axes' coordinates: a blitting widget (``lessonlib.widgets._base.Explorer``) keeps it in the
cached background instead of drawing it again on every slider move. Keys sit outside the
plotting areas, so no data runs under them.
Colours are the Okabe-Ito palette (colour-blind safe) and every series also differs by line
style or marker, so the figures stay readable printed in grey.
"""
import math

import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from matplotlib.ticker import NullLocator
from matplotlib.transforms import ScaledTranslation

from ._style import PALETTE, series_styles

__all__ = [
    "PALETTE", "TWO_PI", "draw_clock_hands",
    "update_clock_hands",
    "draw_angle_coverage", "update_angle_coverage", "draw_frequency_ratios",
    "update_frequency_ratios", "draw_wavelengths", "update_wavelengths", "draw_yarn_ramp",
    "update_yarn_ramp",
]

TWO_PI = 2.0 * math.pi
"""2 pi, a whole turn in radians."""
# One colour, line style and marker per series, in order.
_SERIES = series_styles(["black", "blue", "vermillion", "green", "purple", "orange"])
"""The series' colour, line style and marker, in order: the clock's hands, the scaling methods."""
BAND_COLOUR = PALETTE["yellow"]


def _series(i):
    return _SERIES[i % len(_SERIES)]


def _draw_key(ax, items, *, corner="lower left", fontsize=9):
    """A legend drawn once as plain artists: a white box, a short sample of each series and its
    label, pinned to a corner of ``ax`` (sizes in inches, so it follows any relayout or dpi).

    matplotlib's Legend lays itself out again on every draw (about a quarter of a slider move's
    time here); these artists only draw. ``items`` is a list of ``(label, artist)``: a Line2D
    gives a line (or marker) sample, anything else a filled square in its face colour.
    Returns ``{"texts": [Text], "box": Rectangle}``.
    """
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    font = FontProperties(size=fontsize)
    width = max(renderer.get_text_width_height_descent(label, font, ismath=False)[0]
                for label, _ in items) / fig.dpi  # inches
    line_h, pad, sample = 1.45 * fontsize / 72, 0.06, 0.3  # inches
    box_w, box_h = 2 * pad + sample + 0.08 + width, 2 * pad + line_h * len(items)
    right, top = "right" in corner, "upper" in corner
    x0 = -0.08 - box_w if right else 0.08
    y0 = -0.08 - box_h if top else 0.08
    origin = ScaledTranslation(1.0 if right else 0.0, 1.0 if top else 0.0, ax.transAxes)
    trans = fig.dpi_scale_trans + origin  # inches from the chosen corner of the axes
    box = Rectangle((x0, y0), box_w, box_h, transform=trans, facecolor="white",
                    edgecolor=PALETTE["grey"], linewidth=0.6, alpha=0.9, zorder=9)
    ax.add_artist(box)
    texts = []
    for k, (label, artist) in enumerate(items):
        y = y0 + box_h - pad - line_h * (k + 0.5)
        xs = x0 + pad
        if isinstance(artist, Line2D):
            marker_only = artist.get_linestyle() in ("None", "none", "", " ")
            ax.add_artist(Line2D([xs + sample / 2] if marker_only else [xs, xs + sample],
                                 [y] if marker_only else [y, y], transform=trans, zorder=10,
                                 color=artist.get_color(), linestyle=artist.get_linestyle(),
                                 linewidth=artist.get_linewidth(), marker=artist.get_marker(),
                                 markersize=artist.get_markersize(),
                                 markeredgecolor=artist.get_markeredgecolor()))
        else:
            ax.add_artist(Rectangle((xs, y - line_h / 3), sample, 2 * line_h / 3,
                                    transform=trans, facecolor=artist.get_facecolor(),
                                    edgecolor="none", zorder=10))
        texts.append(ax.text(xs + sample + 0.08, y, label, transform=trans, fontsize=fontsize,
                             va="center", ha="left", zorder=10))
    return {"texts": texts, "box": box}


def _draw_key_row(fig, items, *, loc="outside upper center", fontsize=9):
    """A one-row key outside the data, heading the figure. ``items`` is a list of
    ``(label, artist)``; ``loc`` is an "outside ..." place: constrained layout makes room for it
    before ``freeze_layout``. A figure legend is part of a blitting widget's background: it is
    laid out and drawn once, not on every slider move.
    """
    handles, labels = [a for _, a in items], [label for label, _ in items]
    return fig.legend(handles, labels, loc=loc, ncols=len(items), frameon=False,
                      fontsize=fontsize, handlelength=2.0, columnspacing=1.2, handletextpad=0.5)


def _on_figure(ax, artist):
    """Draw ``artist`` (in ``ax``'s data coordinates) as part of the figure, not of the axes:
    a blitting widget keeps it in its background (see the module docstring)."""
    artist.set_transform(ax.transData)
    artist.set_clip_on(False)
    return ax.figure.add_artist(artist)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _log_y(ax, lo, hi, step, *, powers=True):
    """A log y axis with a tick every ``step`` decades, labelled as plain text (10³ or 0.01):
    fixed ticks and plain labels cost less on every redraw than a locator and mathtext."""
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    first = math.ceil(math.log10(lo) / step) * step
    exps = list(range(first, math.floor(math.log10(hi)) + 1, step))
    labels = [f"10{str(e).translate(_SUPERSCRIPT)}" if powers else f"{10.0 ** e:g}" for e in exps]
    ax.set_yticks([10.0 ** e for e in exps], labels)
    ax.yaxis.set_minor_locator(NullLocator())


# ------------------------------------------------------------------ notebook 07: clocks

def _arc(radius, angle, n=65):
    """x, y of the arc of ``radius`` from angle 0 to ``angle`` (capped at one turn)."""
    t = np.linspace(0.0, min(float(angle), TWO_PI), n)
    return radius * np.cos(t), radius * np.sin(t)


def _hand(radius, angle):
    return [0.0, radius * math.cos(angle)], [0.0, radius * math.sin(angle)]


def _radii(n):
    return np.linspace(1.0, 0.35, n)


def draw_clock_hands(ax, pairs, angles, trained_arcs, *, title="Each pair is a clock hand",
                     fontsize=9):
    """Notebook 07: one hand per pair (outermost = first), at ``angles`` (radians; a clock
    shows them with whole turns removed), over the arc it swept in training (``trained_arcs``
    radians; a full ring when the pair turned at least once). Pairs are named in a key on the
    right. The face (ring, angle marks, key, note) is static and drawn on the figure.

    Returns ``{"hands": [Line2D], "tips": [Line2D], "arcs": [Line2D], "face": [Artist]}``, the
    first three in the order of ``pairs``.
    """
    hands, tips, arcs, face = [], [], [], []
    t = np.linspace(0.0, TWO_PI, 129)
    face.append(_on_figure(ax, Line2D(np.cos(t) * 1.08, np.sin(t) * 1.08, color=PALETTE["grey"],
                                      linewidth=0.8)))
    for i, (pair, radius, angle, arc) in enumerate(zip(pairs, _radii(len(pairs)), angles,
                                                       trained_arcs)):
        style = _series(i)
        arcs.append(ax.plot(*_arc(radius, arc), color=style["color"], linewidth=6, alpha=0.3,
                            solid_capstyle="butt")[0])
        x, y = _hand(radius, angle)
        hands.append(ax.plot(x, y, color=style["color"], linestyle=style["linestyle"],
                             linewidth=2)[0])
        tips.append(ax.plot([x[1]], [y[1]], marker=style["marker"], color=style["color"],
                            markeredgecolor="black", markersize=7, linestyle="none")[0])
        y_key = 0.95 - 0.3 * i
        face.append(_on_figure(ax, Line2D([1.45], [y_key], marker=style["marker"],
                                          color=style["color"], markeredgecolor="black",
                                          markersize=7, linestyle="none")))
        face.append(_on_figure(ax, Text(1.58, y_key, f"pair {pair}", va="center",
                                        fontsize=fontsize)))
    face.append(_on_figure(ax, Line2D([0], [0], marker="o", color="black", markersize=4)))
    for a, text in ((0.0, "0"), (math.pi / 2, "π/2"), (math.pi, "π"), (1.5 * math.pi, "3π/2")):
        face.append(_on_figure(ax, Text(1.22 * math.cos(a), 1.22 * math.sin(a), text,
                                        ha="center", va="center", fontsize=fontsize)))
    ax.set_xlim(-1.3, 2.3)
    ax.set_ylim(-1.3, 1.3)
    ax.set_aspect("equal")
    ax.set_axis_off()
    for spine in ax.spines.values():  # a blit draws an axes' children, spines too, axis off or not
        spine.set_visible(False)
    face.append(_on_figure(ax, Text(0.5, -1.42, "shaded arc: angles seen in training",
                                    ha="center", va="top", fontsize=fontsize)))
    ax.set_title(title)
    return {"hands": hands, "tips": tips, "arcs": arcs, "face": face}


def update_clock_hands(artists, angles, trained_arcs):
    """Move the hands and redraw the trained arcs (same pairs as when drawn)."""
    radii = _radii(len(artists["hands"]))
    for hand, tip, arc, radius, angle, trained in zip(artists["hands"], artists["tips"],
                                                      artists["arcs"], radii, angles,
                                                      trained_arcs):
        x, y = _hand(radius, angle)
        hand.set_data(x, y)
        tip.set_data([x[1]], [y[1]])
        arc.set_data(*_arc(radius, trained))


def draw_angle_coverage(ax, pairs, trained_arcs, angles, outside,
                        *, title="Angle at m against the angles seen in training", fontsize=9):
    """Notebook 07: per pair, a filled step up to the largest angle seen in training (capped
    at 2π: a pair that turned saw every angle) and a dot at the angle of position m (whole
    turns removed); an X marks a pair whose angle lies outside what it saw (``outside``). The
    key is a row at the figure's top right, above the title, off the data. ``angles`` come
    with their whole turns removed, in [0, 2π) (``rope.clock_angle``): they are drawn as given.

    Returns ``{"trained": StepPatch, "dots": Line2D, "outside": Line2D, "key": Legend}``.
    """
    pairs = np.asarray(pairs)
    trained = ax.stairs(np.minimum(trained_arcs, TWO_PI), np.append(pairs, pairs[-1] + 1) - 0.5,
                        fill=True, color=PALETTE["sky"], label="seen in training")
    wrapped = np.asarray(angles, dtype=float)
    dots, = ax.plot(pairs, wrapped, linestyle="none", marker="o", markersize=3.5,
                    color=PALETTE["black"], label="angle at m")
    out = np.asarray(outside, dtype=bool)
    unseen, = ax.plot(pairs[out], wrapped[out], linestyle="none", marker="X", markersize=8,
                      color=PALETTE["vermillion"], markeredgecolor="black", label="never seen")
    ax.set_xlim(-1, pairs[-1] + 1)
    ax.set_ylim(0, TWO_PI * 1.03)
    ticks = np.arange(0, pairs[-1] + 1, 16)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_yticks([0, math.pi, TWO_PI], ["0", "π", "2π"])
    ax.set_xlabel("pair i (fast → slow)")
    ax.set_ylabel("angle (rad, mod 2π)")
    ax.set_title(title)
    key = _draw_key_row(ax.figure, [("seen in training", trained), ("angle at m", dots),
                                   ("never seen", unseen)], loc="outside upper right",
                       fontsize=fontsize)
    return {"trained": trained, "dots": dots, "outside": unseen, "key": key}


def update_angle_coverage(artists, trained_arcs, angles, outside):
    """Update ``draw_angle_coverage``: the arcs training covered, the angles at m (whole turns
    removed, as drawn), the pairs outside."""
    artists["trained"].set_data(values=np.minimum(trained_arcs, TWO_PI))
    wrapped = np.asarray(angles, dtype=float)
    artists["dots"].set_ydata(wrapped)
    x = np.asarray(artists["dots"].get_xdata())
    out = np.asarray(outside, dtype=bool)
    artists["outside"].set_data(x[out], wrapped[out])


# ------------------------------------------------------------------ notebook 08: scaling

def _band_span(ax, band):
    return ax.axvspan(band[0], band[1], color=BAND_COLOUR, alpha=0.4, linewidth=0, zorder=0)


def _set_band(span, band):
    """Move an axvspan rectangle (matplotlib >= 3.9 returns a Rectangle) to a new band."""
    span.set_x(band[0])
    span.set_width(band[1] - band[0])


def _pair_axis(ax, pairs, xlabel):
    ax.set_xlim(pairs[0] - 0.5, pairs[-1] + 0.5)
    ticks = np.arange(0, pairs[-1] + 1, 16)
    ax.set_xticks(ticks, [str(t) for t in ticks])  # fixed labels: no formatter on each redraw
    if xlabel:
        ax.set_xlabel("pair i (fast → slow)")


def draw_frequency_ratios(ax, pairs, ratios, band, *, xlabel=True, ylim=(1 / 100, 1.6),
                          title="Frequency kept, θ′/θ", key=True, fontsize=9):
    """Notebook 08: each method's scaled frequency over the original, per pair (log y: 1 =
    unchanged, 1/s = divided by s), with YaRN's ramp band shaded. With ``key`` a row at the top
    of the figure names the methods for every panel (same colours and line styles everywhere),
    off the data: at a large s the lines fill the bottom of this panel.

    ``ratios`` maps a method's name to an array of length ``len(pairs)``. Returns
    ``{"lines": {name: Line2D}, "original": Line2D, "band": Rectangle, "key": Legend | None}``.
    """
    original, = ax.plot(pairs, np.ones(len(pairs)), **_line(0))
    lines = {name: ax.plot(pairs, y, **_line(i + 1))[0]
             for i, (name, y) in enumerate(ratios.items())}
    band_span = _band_span(ax, band)
    _log_y(ax, *ylim, 1, powers=False)
    _pair_axis(ax, pairs, xlabel)
    ax.set_ylabel("θ′/θ (1 = unchanged)")
    ax.set_title(title)
    legend = _draw_key_row(ax.figure, [("original", original), *lines.items(),
                                      ("YaRN band", band_span)], fontsize=fontsize) if key else None
    return {"lines": lines, "original": original, "band": band_span, "key": legend}


def _line(i):
    style = _series(i)
    return dict(color=style["color"], linestyle=style["linestyle"], linewidth=2)


def update_frequency_ratios(artists, ratios, band):
    """Update ``draw_frequency_ratios``' curves (one per scheme) and YaRN's band."""
    for name, y in ratios.items():
        artists["lines"][name].set_ydata(y)
    _set_band(artists["band"], band)


def _hline_label(ax, y, text, fontsize):
    """A level's name in the margin right of the axes, at its height: off the data."""
    return ax.text(1.02, y, text, fontsize=fontsize, va="center", ha="left",
                   transform=ax.get_yaxis_transform(), clip_on=False)


def draw_wavelengths(ax, pairs, wavelengths, trained_length, target_length, beta_fast, band,
                     *, xlabel=True, ylim=(1.0, 1e11), title="Wavelength 2π/θ′", fontsize=9):
    """Notebook 08: wavelengths (positions, log y) per pair, the original first, then each
    method (coloured as in ``draw_frequency_ratios``), with horizontal lines at the trained
    length L0 (one turn in L0: YaRN's beta_slow = 1), L0 / beta_fast and the target length
    s * L0, named in the right margin (off the lines).

    Returns ``{"lines": {name: Line2D}, "trained", "fast", "target": Line2D, "labels": {...},
    "band": Rectangle}``.
    """
    lines = {name: ax.plot(pairs, y, label=name, **_line(i))[0]
             for i, (name, y) in enumerate(wavelengths.items())}
    grey = PALETTE["grey"]
    levels = {"trained": trained_length, "fast": trained_length / beta_fast,
              "target": target_length}
    hlines = {
        "trained": ax.axhline(levels["trained"], color=grey, linestyle="-", linewidth=1.2),
        "fast": ax.axhline(levels["fast"], color=grey, linestyle=":", linewidth=1.5),
        "target": ax.axhline(levels["target"], color=PALETTE["black"], linestyle="--",
                             linewidth=1),
    }
    texts = {"trained": "L0", "fast": f"L0/{beta_fast:g}", "target": "s·L0"}
    labels = {k: _hline_label(ax, levels[k], texts[k], fontsize) for k in hlines}
    # s·L0 above its line, L0 below: they meet when s is small
    labels["trained"].set_va("top")
    labels["target"].set_va("bottom")
    band_span = _band_span(ax, band)
    _log_y(ax, *ylim, 2)
    _pair_axis(ax, pairs, xlabel)
    ax.set_ylabel("positions per turn")
    ax.set_title(title)
    return {"lines": lines, **hlines, "labels": labels, "band": band_span}


def update_wavelengths(artists, wavelengths, trained_length, target_length, beta_fast, band):
    """Update ``draw_wavelengths``: the curves, the trained, fast and target levels, the band."""
    for name, y in wavelengths.items():
        artists["lines"][name].set_ydata(y)
    levels = {"trained": trained_length, "fast": trained_length / beta_fast,
              "target": target_length}
    for key, y in levels.items():
        artists[key].set_ydata([y, y])
        artists["labels"][key].set_y(y)
    _set_band(artists["band"], band)


def draw_yarn_ramp(ax, pairs, ramp, band, *, xlabel=True, title="YaRN ramp", fontsize=9):
    """Notebook 08: YaRN's ramp per pair (1 keeps the frequency, 0 divides it by s, linear in
    between) with the band's ends marked and labelled. Short enough to sit under the
    frequency panel, sharing its pairs: ``title=None`` names it on the y axis only.

    Returns ``{"ramp": Line2D, "low": Line2D, "high": Line2D, "labels": {...}, "band": Rectangle}``.
    """
    style = _series(3)
    line, = ax.plot(pairs, ramp, marker=style["marker"], markersize=3, **_line(3))
    low = ax.axvline(band[0], color=PALETTE["black"], linestyle="--", linewidth=1)
    high = ax.axvline(band[1], color=PALETTE["black"], linestyle=":", linewidth=1.5)
    labels = {"low": ax.text(band[0], 0.5, "low ", ha="right", va="center", fontsize=fontsize),
              "high": ax.text(band[1], 0.5, " high", ha="left", va="center", fontsize=fontsize)}
    band_span = _band_span(ax, band)
    _pair_axis(ax, pairs, xlabel)
    for key, x in zip(("low", "high"), band):
        _place_end_label(labels[key], x)
    ax.set_ylim(-0.12, 1.12)
    ax.set_yticks([0, 1], ["θ/s", "kept"])
    ax.set_ylabel("YaRN ramp" if title is None else "1 = kept, 0 = θ/s")
    if title is not None:
        ax.set_title(title)
    return {"ramp": line, "low": low, "high": high, "labels": labels, "band": band_span}


def update_yarn_ramp(artists, ramp, band):
    """Update ``draw_yarn_ramp``: the ramp and the band's two ends."""
    artists["ramp"].set_ydata(ramp)
    artists["low"].set_xdata([band[0], band[0]])
    artists["high"].set_xdata([band[1], band[1]])
    for key, x in zip(("low", "high"), band):
        _place_end_label(artists["labels"][key], x)
    _set_band(artists["band"], band)


def _place_end_label(label, x):
    """A band end's name at ``x``, shown only while the end is on the pairs' axis (YaRN's high
    end can pass the last pair: HF clamps it to r - 1, not r/2 - 1)."""
    label.set_x(x)
    lo, hi = label.axes.get_xlim()
    label.set_visible(bool(lo <= x <= hi))
