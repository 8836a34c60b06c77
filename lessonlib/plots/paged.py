"""draw(ax, data) functions for notebook 11: vLLM's block pool and the requests' block tables.

Matplotlib only, no computation beyond formatting: the widget reads a ``paged.replay`` step and
hands each block its look, ``(kind, holders)``, one of ``BLOCK_KINDS``:

    "null"    the null block 0 (grey): a table slot the sliding window has passed
    "sink"    a static sink block (purple), read before slot 0
    "held"    held by ``holders``, each in its request's colour (a block two requests share is
              split between their colours)
    "cached"  free, but cached under its hash: a prefix hit can still take it back (a pale
              tint of ``holders``, the requests that held it last, and a dashed edge)
    "free"    free and cached under no hash (white)

Each ``draw_*`` returns the artists its ``update_*`` partner changes in place (no figure
rebuild). Request colours are Okabe & Ito's (colour-blind safe) and were picked so that black
text reads on every one of them at WCAG AA; a block's id is written on it either way. The key
(``draw_key``) goes into an axes of its own, beside the tables, off the data.
"""
import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from ._style import PALETTE, text_colour_on

__all__ = ["BLOCK_KINDS", "MIN_FONT", "NULL_COLOUR", "SINK_COLOUR", "FREE_COLOUR",
           "request_colours", "block_colours", "draw_pool", "update_pool", "draw_tables",
           "update_tables", "draw_key"]

BLOCK_KINDS = ("null", "sink", "held", "cached", "free")
"""The looks a block (a pool square or a table slot) can have, as the module docstring lists."""

MIN_FONT = 9
"""9 points, the smallest text of notebook 11's figure (9 px or more on a laptop)."""

NULL_COLOUR = "#BBBBBB"
"""The null block's grey (black text on it reads at 10:1)."""

SINK_COLOUR = PALETTE["purple"]
"""The static sink blocks' colour."""

FREE_COLOUR = "#FFFFFF"
"""A free block cached under no hash: white."""

_REQUESTS = (PALETTE["orange"], PALETTE["sky"], PALETTE["green"], PALETTE["yellow"])
_PALE = 0.35  # a cached block's tint: this much of its last holder's colour, the rest white
_MUTED = "#595959"  # grey text (7:1 on white): a row's status, the words under the pool
_HIT_WIDTH = 3.0  # points: the outline of a slot a prefix hit gave
_EDGE = 0.8
_CELL = 0.92  # a cell's width, of its one-unit pitch


def request_colours(request_ids):
    """{request id: colour}, in the order given (at most four requests)."""
    ids = list(request_ids)
    if len(ids) > len(_REQUESTS):
        raise ValueError(f"request_ids: at most {len(_REQUESTS)} requests have a colour, got "
                         f"{len(ids)}")
    return dict(zip(ids, _REQUESTS))


def _pale(colour):
    rgb = np.asarray(to_rgb(colour))
    return tuple(_PALE * rgb + (1.0 - _PALE))


def block_colours(kind, holders, colours):
    """The face colours a block of this look is drawn in, left to right: one per holder for
    "held" (their pale tints for "cached"), else the kind's one colour."""
    if kind not in BLOCK_KINDS:
        raise ValueError(f"kind must be one of {BLOCK_KINDS}, got {kind!r}")
    if kind == "held":
        return [colours[r] for r in holders] or [FREE_COLOUR]
    if kind == "cached":
        return [_pale(colours[r]) for r in holders] or [_pale(PALETTE["grey"])]
    return [{"null": NULL_COLOUR, "sink": SINK_COLOUR, "free": FREE_COLOUR}[kind]]


# ------------------------------------------------------------------ one cell: stripes, edge, label


def _cell(ax, x, y, w, h, stripes, fontsize):
    parts = [Rectangle((x, y), w, h, linewidth=0, facecolor=FREE_COLOUR)
             for _ in range(stripes)]
    edge = Rectangle((x, y), w, h, facecolor="none", edgecolor="black", linewidth=_EDGE)
    for p in parts + [edge]:
        ax.add_patch(p)
    label = ax.text(x + w / 2, y + h / 2, "", ha="center", va="center", fontsize=fontsize)
    return {"stripes": parts, "edge": edge, "label": label}


def _set_cell(cell, faces, text, *, dashed=False, hidden=False, hit=False):
    """Faces (left to right, each an equal part of the cell), the label, the edge's style."""
    x, y = cell["edge"].get_xy()
    w = cell["edge"].get_width()
    step = w / max(len(faces), 1)
    for k, p in enumerate(cell["stripes"]):
        shown = not hidden and k < len(faces)
        p.set_visible(shown)
        if shown:
            p.set_x(x + k * step)
            p.set_width(step)
            p.set_facecolor(faces[k])
    edge = cell["edge"]
    edge.set_visible(not hidden)
    edge.set_linestyle("--" if dashed else "-")
    edge.set_linewidth(_HIT_WIDTH if hit else _EDGE)
    edge.set_edgecolor("black" if hit or not dashed else _MUTED)
    label = cell["label"]
    label.set_text("" if hidden else text)
    label.set_color(text_colour_on(faces[0]) if faces else "black")
    cell["faces"] = list(faces) if not hidden else []


# ------------------------------------------------------------------ the pool


def draw_pool(ax, num_blocks, *, fontsize=MIN_FONT):
    """One square per block id 0 .. num_blocks - 1, its id on it, and a note under each (what
    happened to it this step: "new", "freed", "next" for the free queue's front). The axes is
    laid out for good: x from -0.5 to num_blocks - 0.5, squares in y 0..1, notes under them.

    Returns a dict: ``cells`` (per block: ``stripes``, ``edge``, ``label``), ``notes`` (Text)."""
    cells, notes = [], []
    held_most = len(_REQUESTS)
    for b in range(num_blocks):
        cells.append(_cell(ax, b - _CELL / 2, 0.0, _CELL, 1.0, held_most, fontsize))
        notes.append(ax.text(b, -0.12, "", ha="center", va="top", fontsize=fontsize,
                             color=_MUTED, linespacing=1.0))
    ax.set_xlim(-0.5, num_blocks - 0.5)
    ax.set_ylim(-0.78, 1.02)
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
    return {"cells": cells, "notes": notes}


def update_pool(artists, looks, notes, colours):
    """Each block's look (``looks[b]`` = (kind, holders)) and its note (``notes[b]``, "" for
    none); ``colours`` is ``request_colours``'s mapping."""
    for b, (cell, (kind, holders), note, text) in enumerate(zip(artists["cells"], looks, notes,
                                                                artists["notes"])):
        _set_cell(cell, block_colours(kind, holders, colours), str(b),
                  dashed=kind in ("cached", "free"))
        cell["kind"], cell["holders"] = kind, tuple(holders)
        text.set_text(note)
    return artists


# ------------------------------------------------------------------ the block tables


def draw_tables(ax, request_ids, *, slots, sink_slots, block_size, fontsize=MIN_FONT):
    """One row per request (top to bottom in ``request_ids``' order), ``slots`` table slots
    wide, slot j drawn over x = j .. j + 1, headed by the tokens it holds; ``sink_slots``
    places before slot 0 for the sink blocks (x = -sink_slots .. 0). Under each row a grey
    track of the slots' token capacity and a black bar of the tokens computed (both in
    slot units: ``tokens / block_size``). The axes is laid out for good.

    Returns a dict: ``rows`` (per request id: ``cells``, ``track``, ``bar``, ``status``,
    ``tokens``), ``headers`` (Text per place, sinks first) and ``block_size``."""
    rows = {}
    places = sink_slots + slots
    for i, r in enumerate(request_ids):
        cells = [_cell(ax, j - sink_slots + (1 - _CELL) / 2, i - 0.36, _CELL, 0.56, len(_REQUESTS),
                       fontsize) for j in range(places)]
        track = Rectangle((0, i + 0.26), 0, 0.1, facecolor="#DDDDDD", linewidth=0)
        bar = Rectangle((0, i + 0.26), 0, 0.1, facecolor="black", linewidth=0)
        ax.add_patch(track)
        ax.add_patch(bar)
        status = ax.text(0.1, i - 0.08, "", ha="left", va="center", fontsize=fontsize,
                         color=_MUTED, style="italic")
        tokens = ax.text(0, i - 0.08, "", ha="left", va="center", fontsize=fontsize,
                         color="black")
        rows[r] = {"cells": cells, "track": track, "bar": bar, "status": status,
                   "tokens": tokens}
    headers = [ax.text(j - sink_slots + 0.5, -0.62, "", ha="center", va="center",
                       fontsize=fontsize, color=_MUTED) for j in range(places)]
    ax.set_xlim(-sink_slots - 0.05, slots + 1.6)
    ax.set_ylim(len(request_ids) - 0.45, -0.85)
    ax.set_xticks([])
    ax.set_yticks([-0.62] + list(range(len(request_ids))),
                  ["tokens"] + [f"request {r}" for r in request_ids])
    ax.tick_params(axis="y", length=0, labelsize=fontsize + 1)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return {"rows": rows, "headers": headers, "sink_slots": sink_slots,
            "block_size": block_size}


def update_tables(artists, rows, colours, *, sinks_shown):
    """Each request's row: ``rows[r]`` is a status string ("not arrived", "finished") or a
    dict with ``first`` (the x where its drawn table starts: minus the sink blocks shown),
    ``slots`` (per drawn slot: (kind, holders, label, hit)), ``tokens`` (the tokens attention
    reads, sinks included: the bar's length) and ``computed`` (the request's own tokens, the
    number beside the row). ``sinks_shown``: whether the sink places are headed."""
    B, sink_slots = artists["block_size"], artists["sink_slots"]
    for j, header in enumerate(artists["headers"]):
        k = j - sink_slots
        span = f"{k * B}" if B == 1 else f"{k * B}-{k * B + B - 1}"  # the slot's tokens
        header.set_text(span if k >= 0 else ("sink" if sinks_shown else ""))
    for r, row in artists["rows"].items():
        state = rows[r]
        live = not isinstance(state, str)
        first = state["first"] if live else 0
        slots = state["slots"] if live else []
        for j, cell in enumerate(row["cells"]):
            k = j - sink_slots - first  # this place's index in the drawn table
            if 0 <= k < len(slots):
                kind, holders, label, hit = slots[k]
                _set_cell(cell, block_colours(kind, holders, colours), label, hit=hit)
                cell["kind"], cell["holders"], cell["hit"] = kind, tuple(holders), hit
            else:
                _set_cell(cell, [], "", hidden=True)
                cell["kind"], cell["holders"], cell["hit"] = None, (), False
        y = row["track"].get_y()
        row["track"].set_bounds(first, y, len(slots), 0.1)
        row["bar"].set_bounds(first, y, state["tokens"] / B if live else 0, 0.1)
        row["status"].set_text("" if live else state)
        row["status"].set_x(first + 0.1)
        row["tokens"].set_text(f"{state['computed']} tokens" if live else "")
        row["tokens"].set_x(first + len(slots) + 0.12)
    return artists


# ------------------------------------------------------------------ the key


def draw_key(ax, request_ids, colours, *, fontsize=MIN_FONT):
    """The figure's key as a legend filling ``ax`` (an axes of its own, its frame hidden)."""
    def patch(face, label, **kw):
        return Patch(facecolor=face, edgecolor=kw.pop("edge", "black"), label=label,
                     linewidth=kw.pop("lw", _EDGE), **kw)

    handles = [patch(colours[r], f"held by {r}") for r in request_ids]
    handles += [(patch(colours[request_ids[0]], ""), patch(colours[request_ids[1]], ""))] \
        if len(request_ids) > 1 else []
    handles += [
        patch(_pale(colours[request_ids[0]]), f"free, cached (pale: last holder)",
              linestyle="--", edge=_MUTED),
        patch(FREE_COLOUR, "free", linestyle="--", edge=_MUTED),
        patch(NULL_COLOUR, "null block 0 (2→0: freed now)"),
        patch(SINK_COLOUR, "sink block"),
        patch("none", "prefix hit this step", lw=_HIT_WIDTH),
        Line2D([], [], color="black", linewidth=4, label="tokens computed"),
        Line2D([], [], color="#DDDDDD", linewidth=4, label="room in its slots"),
    ]
    ax.set_axis_off()
    for spine in ax.spines.values():
        spine.set_visible(False)
    labels = [h.get_label() if not isinstance(h, tuple) else "shared: split in two"
              for h in handles]
    return ax.legend(handles, labels, handler_map={tuple: HandlerTuple(ndivide=None, pad=0)},
                     loc="center left", bbox_to_anchor=(0.0, 0.5),
                     fontsize=fontsize, frameon=False, handlelength=1.6, borderaxespad=0.0,
                     labelspacing=0.45)
