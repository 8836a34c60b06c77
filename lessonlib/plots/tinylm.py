"""draw(ax, data) functions for notebook 10 (the tiny trained model): matplotlib only.

Each function draws the committed result files (``lessonlib/data/tinylm_results/*.json``, the
training log) onto the ``ax`` it is given and returns the artists it made. Numbers printed on
heatmap cells are black or white, whichever contrasts more with the cell (WCAG AA, at least
4.5:1); legends sit where no data is, or outside the axes (``legend=False`` leaves them to the
caller, e.g. one legend for the whole figure).
"""
import numpy as np

from ..tinylm_results import label
from ._style import text_colour_on

__all__ = ["draw_training_log", "draw_extension_accuracy", "draw_position_loss",
           "update_position_loss", "draw_length_cursor", "draw_needle_fractions",
           "draw_sink_mass", "draw_stream_loss"]


def _label(cell):
    return label(cell["model"], cell["variant"])


def draw_training_log(ax_loss, ax_acc, rows, *, phase="base", curriculum_until=0, fontsize=10):
    """Training curves from the CSV rows (dicts of strings): loss on the left axes, answer
    accuracy on the right; ``curriculum_until`` > 0 marks the step where the short documents of
    the curriculum end (the held-out numbers are always at 256 tokens). The legends sit in the
    corners the curves leave free (loss falls: upper right; accuracy rises: lower right).
    Returns the lines."""
    rows = [r for r in rows if r["phase"] == phase]
    step = np.array([int(r["step"]) for r in rows])
    ev = [r for r in rows if r["eval_loss"] != ""]
    ev_step = np.array([int(r["step"]) for r in ev])
    lines = [ax_loss.plot(step, [float(r["train_loss"]) for r in rows], lw=0.8, alpha=0.6,
                          label="train (all tokens)")[0],
             ax_loss.plot(ev_step, [float(r["eval_loss"]) for r in ev], "o-", ms=3,
                          label="held-out (all tokens)")[0]]
    ax_loss.set_xlabel("step")
    ax_loss.set_ylabel("cross-entropy (nats)")
    ax_loss.set_title(f"training loss ({phase})")
    ax_loss.legend(loc="upper right", fontsize=fontsize)
    lines += [ax_acc.plot(step, [float(r["train_answer_acc"]) for r in rows], lw=0.8, alpha=0.6,
                          label="train batch")[0],
              ax_acc.plot(ev_step, [float(r["eval_acc"]) for r in ev], "o-", ms=3,
                          label="held-out documents")[0]]
    ax_acc.set_xlabel("step")
    ax_acc.set_ylabel("retrieval accuracy")
    ax_acc.set_ylim(0, 1.02)
    ax_acc.set_title("answer accuracy")
    if curriculum_until:
        for ax in (ax_loss, ax_acc):
            ax.axvline(curriculum_until, color="gray", lw=0.8, ls="--")
        ax_acc.annotate("short | 256 tokens", (curriculum_until, 0.03), ha="center",
                        fontsize=fontsize, color="dimgray")  # 5.9:1 on white
    ax_acc.legend(loc="lower right", fontsize=fontsize)
    return lines


def _extension_colours(extension, cells=None):
    """One colour per (model, variant) of the sweep, in the sweep's order: the accuracy and the
    loss panels draw each cell in the same colour, so one legend serves both."""
    keys = []
    for c in extension["cells"]:
        key = (c["model"], c["variant"])
        if key not in keys and (cells is None or key in cells):
            keys.append(key)
    return {key: f"C{i % 10}" for i, key in enumerate(keys)}


def _extension_style(key):
    """(linestyle, marker) of a sweep cell: the fine-tuned model dashed with squares; dynamic
    NTK dotted with crosses, because from 8x on (its s = n / L0 reaches the static 8) its
    numbers are NTK-aware's, drawn just before it: dotted over solid, both stay visible."""
    if key[0] != "base":
        return "--", "s"
    return (":", "x") if key[1] == "dynamic" else ("-", "o")


def draw_extension_accuracy(ax, extension, *, cells=None, legend=True):
    """Retrieval accuracy against context length, one line per (model, variant). Returns
    ``{(model, variant): line}``; the chance level is a grey dotted line (label "chance")."""
    groups = {}
    for c in extension["cells"]:
        if cells is None or (c["model"], c["variant"]) in cells:
            groups.setdefault((c["model"], c["variant"]), []).append(c)
    colours = _extension_colours(extension, cells)
    lines = {}
    for key, cs in groups.items():
        cs = sorted(cs, key=lambda c: c["length"])
        ls, marker = _extension_style(key)
        lines[key] = ax.plot([c["length"] for c in cs], [c["accuracy"] for c in cs], ls=ls,
                             marker=marker, ms=6 if marker == "x" else 4, color=colours[key],
                             label=_label(cs[0]))[0]
    ax.axhline(extension["chance_accuracy"], color="gray", lw=0.8, ls=":", label="chance (1/32)")
    ax.axvline(extension["trained_length"], color="k", lw=0.8, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_xticks(extension["lengths"], [f"{n}\n({n // extension['trained_length']}x)"
                                         for n in extension["lengths"]])
    ax.minorticks_off()
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("retrieval accuracy")
    ax.set_title("Retrieval past the trained 256")
    if legend:
        ax.legend(fontsize=8, loc="lower left")  # curves start high at 1x: the lower left is free
    return lines


def draw_position_loss(ax, extension, *, length, cells=None, max_length=None, ylim=None,
                       legend=True):
    """Mean next-token loss against position in documents of ``length`` tokens, one line per
    (model, variant) cell. Returns ``{(model, variant): line}`` for ``update_position_loss``."""
    colours = _extension_colours(extension, cells)
    lines = {}
    for c in extension["cells"]:
        key = (c["model"], c["variant"])
        if c["length"] != length or (cells is not None and key not in cells):
            continue
        x, y = _loss_xy(extension, c)
        ls, _ = _extension_style(key)
        lines[key] = ax.plot(x, y, lw=2.0 if ls == ":" else 1.4, ls=ls, color=colours[key],
                             label=_label(c))[0]
    ax.axvline(extension["trained_length"], color="k", lw=0.8, ls="--")
    ax.set_xlim(0, max_length or length)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_xlabel("position in the document")
    ax.set_ylabel(f"loss (nats, bins of {extension['loss_bin']})")
    ax.set_title(_position_title(length))
    if legend:
        ax.legend(fontsize=8, loc="upper left")
    return lines


def _position_title(length):
    # Short: set after the layout is frozen, it must fit its panel at every length, in the
    # presenter's larger type too ("..., documents of 1,024 tokens" ran past the figure's edge).
    return f"Loss over position (n = {length:,})"


def update_position_loss(ax, lines, extension, length):
    """Show documents of ``length`` tokens on the lines ``draw_position_loss`` made."""
    for c in extension["cells"]:
        key = (c["model"], c["variant"])
        if c["length"] == length and key in lines:
            lines[key].set_data(*_loss_xy(extension, c))
    ax.set_title(_position_title(length))


def _loss_xy(extension, cell):
    b = extension["loss_bin"]
    y = np.asarray(cell["loss_by_position"])
    return np.arange(len(y)) * b + b / 2, y


def draw_length_cursor(ax, length):
    """A vertical dotted line marking the selected length; move it with ``set_xdata``."""
    return ax.axvline(length, color="tab:red", lw=1.5, ls=":")


def _cell_labels(ax, image, values, fmt, fontsize):
    """Each cell's value printed on it, black or white by contrast with the cell's colour."""
    for (i, j), v in np.ndenumerate(values):
        ax.text(j, i, fmt(v), ha="center", va="center", fontsize=fontsize,
                color=text_colour_on(image.cmap(image.norm(v))),
                in_layout=False)  # inside its cell: the layout need not measure it


def draw_needle_fractions(ax, needles, cell, *, title=None, fontsize=10, colorbar=True,
                          xlabel=True):
    """A needle-grid cell as a heatmap: context length down, depth across, colour and label =
    fraction of trials retrieved. ``colorbar=False`` leaves the colorbar to the caller (one for
    a stack of panels), ``xlabel=False`` the depth labels (shown on the bottom panel only).
    Returns ``(image, colorbar or None)``."""
    frac = np.asarray(cell["found_fraction"])  # (n_lengths, n_depths)
    image = ax.imshow(frac, cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto",
                      interpolation="nearest")
    ax.set_xticks(np.arange(len(needles["depths"])),
                  [f"{d:g}" for d in needles["depths"]] if xlabel else [])
    ax.set_yticks(np.arange(len(needles["lengths"])), [f"{n}" for n in needles["lengths"]])
    if xlabel:
        ax.set_xlabel("needle depth (% of the context)")
    ax.set_ylabel("tokens")
    ax.set_title(title or _label(cell), fontsize=fontsize + 1, loc="left")
    _cell_labels(ax, image, frac, lambda f: f"{f:.2g}", fontsize)
    bar = None
    if colorbar:
        bar = ax.figure.colorbar(image, ax=ax, ticks=[0, 0.5, 1])
        bar.set_label(f"found ({needles['trials']} trials)")
    return image, bar


def draw_sink_mass(ax, cell, *, key="mass_first1", fontsize=10, colorbar=True):
    """Attention weight on the first token(s) per layer (rows) and head (columns), labelled,
    with the queries it averages over in the title. The uniform-attention baseline is not
    shown: notebook 10's exercise 2 asks for it. Returns ``(image, colorbar or None)``."""
    m = np.asarray(cell[key])  # (layers, heads)
    queries = (f"\n(mean over queries at positions >= {cell['query_from']})"
               if "query_from" in cell else "")
    image = ax.imshow(m, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(np.arange(m.shape[1]), [f"head {h}" for h in range(m.shape[1])])
    ax.set_yticks(np.arange(m.shape[0]), [f"layer {layer}" for layer in range(m.shape[0])])
    _cell_labels(ax, image, m, lambda v: f"{v:.2f}", fontsize)
    what = "<bos>" if key == "mass_first1" else "the first 4 tokens"
    ax.set_title(f"weight on {what}, n = {cell['length']}{queries}", fontsize=fontsize + 1)
    bar = ax.figure.colorbar(image, ax=ax) if colorbar else None
    return image, bar


_STREAM_LABELS = {"dense": "dense cache (positions to {last:,})",
                 "window": "window of {cache}, no sinks",
                 "sinks": "4 sinks + {recent} recent"}
"""The legend's name of each cache of the streaming experiment, as format strings."""


def draw_stream_loss(ax, streaming, *, labels=None, legend=True, fontsize=10):
    """Loss over position of the streams, one line per cache. The legend goes under the axes,
    in one row, off the curves (``legend=False``: none)."""
    cache = streaming["cache_tokens"]
    labels = labels or {name: text.format(last=streaming["length"] - 1, cache=cache,
                                          recent=cache - 4)
                        for name, text in _STREAM_LABELS.items()}
    lines = []
    b = streaming["bin"]
    for name, c in streaming["caches"].items():
        y = np.array(c["loss_by_position"])
        lines.append(ax.plot(np.arange(len(y)) * b + b / 2, y, lw=1.4,
                             label=labels.get(name, name))[0])
    ax.axvline(cache, color="k", lw=0.8, ls="--")
    ax.set_xlabel("position in the stream")
    ax.set_ylabel(f"loss (nats, bins of {b})")
    ax.set_title(f"{streaming['n_streams']} streams of {streaming['length']:,} tokens")
    if legend:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=len(lines),
                  fontsize=fontsize, frameon=False, columnspacing=1.2, handlelength=1.5)
    return lines
