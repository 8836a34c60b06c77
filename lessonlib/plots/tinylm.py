"""draw(ax, data) functions for notebook 10 (the tiny trained model): matplotlib only.

Each function draws the committed result files (``lessonlib/data/tinylm_results/*.json``, the
training log) onto the ``ax`` it is given and returns the artists it made.
"""
import numpy as np

from ..tinylm_results import label

__all__ = ["draw_training_log", "draw_extension_accuracy", "draw_position_loss",
           "update_position_loss", "draw_length_cursor", "draw_needle_fractions",
           "draw_sink_mass", "draw_stream_loss"]


def _label(cell):
    return label(cell["model"], cell["variant"])


def draw_training_log(ax_loss, ax_acc, rows, *, phase="base", curriculum_until=0):
    """Training curves from the CSV rows (dicts of strings): loss on the left axes, answer
    accuracy on the right; ``curriculum_until`` > 0 marks the step where the short documents of
    the curriculum end (the held-out numbers are always at 256 tokens). Returns the lines."""
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
    ax_loss.legend()
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
        ax_acc.annotate("short documents | 256 tokens", (curriculum_until, 0.03),
                        ha="center", fontsize=8, color="gray")
    ax_acc.legend()
    return lines


def draw_extension_accuracy(ax, extension, *, cells=None):
    """Retrieval accuracy against context length, one line per (model, variant). Returns
    ``{(model, variant): line}``."""
    groups = {}
    for c in extension["cells"]:
        if cells is None or (c["model"], c["variant"]) in cells:
            groups.setdefault((c["model"], c["variant"]), []).append(c)
    lines = {}
    for key, cs in groups.items():
        cs = sorted(cs, key=lambda c: c["length"])
        style = "s--" if cs[0]["model"] != "base" else "o-"
        lines[key] = ax.plot([c["length"] for c in cs], [c["accuracy"] for c in cs], style,
                             label=_label(cs[0]))[0]
    ax.axhline(extension["chance_accuracy"], color="gray", lw=0.8, ls=":", label="chance (1/32)")
    ax.axvline(extension["trained_length"], color="k", lw=0.8, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_xticks(extension["lengths"], [f"{n}\n({n // extension['trained_length']}x)"
                                         for n in extension["lengths"]])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("retrieval accuracy")
    ax.set_title("Retrieval past the trained length (256)")
    ax.legend(fontsize=8, loc="lower left")  # curves start high at 1x: the lower left is free
    return lines


def draw_position_loss(ax, extension, *, length, cells=None, max_length=None, ylim=None):
    """Mean next-token loss against position in documents of ``length`` tokens, one line per
    (model, variant) cell. Returns ``{(model, variant): line}`` for ``update_position_loss``."""
    lines = {}
    for c in extension["cells"]:
        if c["length"] != length or (cells is not None and (c["model"], c["variant"]) not in cells):
            continue
        x, y = _loss_xy(extension, c)
        lines[(c["model"], c["variant"])] = ax.plot(x, y, lw=1.2, label=_label(c))[0]
    ax.axvline(extension["trained_length"], color="k", lw=0.8, ls="--")
    ax.set_xlim(0, max_length or length)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_xlabel("position in the document")
    ax.set_ylabel(f"next-token loss (nats, mean of {extension['loss_bin']})")
    ax.set_title(f"Loss over position, documents of {length} tokens")
    ax.legend(fontsize=8)
    return lines


def update_position_loss(ax, lines, extension, length):
    """Show documents of ``length`` tokens on the lines ``draw_position_loss`` made."""
    for c in extension["cells"]:
        key = (c["model"], c["variant"])
        if c["length"] == length and key in lines:
            lines[key].set_data(*_loss_xy(extension, c))
    ax.set_title(f"Loss over position, documents of {length} tokens")


def _loss_xy(extension, cell):
    b = extension["loss_bin"]
    y = np.asarray(cell["loss_by_position"])
    return np.arange(len(y)) * b + b / 2, y


def draw_length_cursor(ax, length):
    """A vertical dotted line marking the selected length; move it with ``set_xdata``."""
    return ax.axvline(length, color="tab:red", lw=1.0, ls=":")


def draw_needle_fractions(ax, needles, cell, *, title=None):
    """A needle-grid cell as a heatmap: context length down, depth across, colour and label =
    fraction of trials retrieved. Returns ``(image, colorbar)``."""
    frac = np.asarray(cell["found_fraction"])  # (n_lengths, n_depths)
    image = ax.imshow(frac, cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto",
                      interpolation="nearest")
    ax.set_xticks(np.arange(len(needles["depths"])), [f"{d:g}" for d in needles["depths"]])
    ax.set_yticks(np.arange(len(needles["lengths"])), [f"{n}" for n in needles["lengths"]])
    ax.set_xlabel("needle depth (%)")
    ax.set_ylabel("context (tokens)")
    ax.set_title(title or _label(cell), fontsize=10)
    for (i, j), f in np.ndenumerate(frac):
        ax.text(j, i, f"{f:.2g}", ha="center", va="center", fontsize=7)
    colorbar = ax.figure.colorbar(image, ax=ax, ticks=[0, 0.5, 1])
    colorbar.set_label(f"found ({needles['trials']} trials)")
    return image, colorbar


def draw_sink_mass(ax, cell, *, key="mass_first1"):
    """Attention weight on the first token(s) per layer (rows) and head (columns), labelled,
    with the queries it averages over in the title. The uniform-attention baseline is not
    shown: notebook 10's exercise 2 asks for it. Returns ``(image, colorbar)``."""
    m = np.asarray(cell[key])  # (layers, heads)
    queries = (f"\n(mean over queries at positions >= {cell['query_from']})"
               if "query_from" in cell else "")
    image = ax.imshow(m, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(np.arange(m.shape[1]), [f"head {h}" for h in range(m.shape[1])])
    ax.set_yticks(np.arange(m.shape[0]), [f"layer {layer}" for layer in range(m.shape[0])])
    for (i, j), v in np.ndenumerate(m):
        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                color="w" if v < 0.5 else "k")
    what = "<bos>" if key == "mass_first1" else "the first 4 tokens"
    ax.set_title(f"weight on {what}, n = {cell['length']}{queries}", fontsize=10)
    colorbar = ax.figure.colorbar(image, ax=ax)
    return image, colorbar


def draw_stream_loss(ax, streaming, *, labels=None):
    """Loss over position of the streams, one line per cache."""
    labels = labels or {"dense": "dense cache (all tokens, positions up to 4096)",
                        "window": f"window of {streaming['cache_tokens']} (no sinks)",
                        "sinks": f"4 sinks + {streaming['cache_tokens'] - 4} recent"}
    lines = []
    b = streaming["bin"]
    for name, c in streaming["caches"].items():
        y = np.array(c["loss_by_position"])
        lines.append(ax.plot(np.arange(len(y)) * b + b / 2, y, lw=1.2,
                             label=labels.get(name, name))[0])
    ax.axvline(streaming["cache_tokens"], color="k", lw=0.8, ls="--")
    ax.set_xlabel("position in the stream")
    ax.set_ylabel(f"next-token loss (nats, mean of {b})")
    ax.set_title(f"{streaming['n_streams']} streams of {streaming['length']} tokens")
    ax.legend(fontsize=8)
    return lines
