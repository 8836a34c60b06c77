"""Widgets for notebook 10: the tiny trained model's committed results.

``extension_explorer`` is the notebook's slider: the served length picks which documents the
loss-over-position panel shows, beside retrieval accuracy against length with a cursor. The
other factories show one finished result (no sliders) with a text readout, like
``widgets.long_context.needle_heatmap``. Data come from ``lessonlib.tinylm_results``; drawing
from ``lessonlib.plots.tinylm``.
"""
import ipywidgets as widgets
import numpy as np

from .. import _validate as check

from ..plots import tinylm as plots
from ..tinylm_results import extension_table, label, needle_rows, sink_heads, stream_summary
from ._base import Explorer, freeze_layout, new_figure, option, slider_layout

__all__ = ["extension_explorer", "training_view", "needle_view", "sink_view", "stream_view"]


def _table(extension, length):
    head = f"{length} tokens ({length // extension['trained_length']}x the trained 256)"
    lines = [head, f"{'model / RoPE':32s} {'retrieval':>9s} {'mean loss':>9s} {'loss past 256':>13s}"]
    for model, variant, acc, loss, past in extension_table(extension, length):
        name = label(model, variant)
        lines.append(f"{name:32s} {acc:9.2f} {loss:9.3f} "
                     + (f"{past:13.3f}" if past is not None else f"{'-':>13s}"))
    return "\n".join(lines)


def extension_explorer(extension, *, length=2048, cells=None):
    """A length slider over the extension sweep: left, retrieval accuracy against length (a
    cursor marks the slider); right, loss over position in documents of that length."""
    _results("extension", extension, "lengths")
    lengths = list(extension["lengths"])
    length = option("length", length, lengths)
    if cells is not None:
        known = {(c["model"], c["variant"]) for c in extension["cells"]}
        cells = [tuple(c) if isinstance(c, (list, tuple)) else c for c in cells]
        unknown = [c for c in cells if c not in known]
        if unknown:
            raise ValueError(f"cells must be (model, variant) pairs of the sweep; "
                             f"{unknown[0]!r} is not one of {sorted(known)}")
    controls = {"length": widgets.SelectionSlider(
        options=[(f"{n:,}", n) for n in lengths], value=length,
        description="served length", **slider_layout())}
    fig, (ax_acc, ax_loss) = new_figure(figsize=(11, 4.2), ncols=2)
    top = max(max(c["loss_by_position"]) for c in extension["cells"]
              if cells is None or (c["model"], c["variant"]) in cells)
    artists = {"accuracy": plots.draw_extension_accuracy(ax_acc, extension, cells=cells),
               "cursor": plots.draw_length_cursor(ax_acc, length),
               "loss": plots.draw_position_loss(ax_loss, extension, length=length, cells=cells,
                                                max_length=max(lengths), ylim=(0, 1.05 * top))}

    def redraw(length):
        artists["cursor"].set_xdata([length, length])
        plots.update_position_loss(ax_loss, artists["loss"], extension, length)
        return _table(extension, length)

    explorer = Explorer(controls, fig, redraw)
    freeze_layout(fig)
    explorer.axes, explorer.artists = (ax_acc, ax_loss), artists
    return explorer


def _results(name, results, key):
    """A committed result (``tinylm_results.load_results``): a dict with ``key``."""
    if not isinstance(results, dict) or key not in results:
        raise ValueError(f"{name} must be the {name!r} results of tinylm_results.load_results, "
                         f"got {check.describe(results)}")


def _view(fig, axes, artists, readout):
    explorer = Explorer({}, fig, lambda: readout)
    explorer.axes, explorer.artists = axes, artists
    return explorer


def training_view(rows, summary):
    """The training curves (loss; answer accuracy) with the final numbers as the readout."""
    _results("summary", summary, "settings")
    if isinstance(rows, (str, dict)) or not rows:
        raise ValueError(f"rows must be the training log's rows (tinylm_results."
                         f"load_training_log), got {check.describe(rows)}")
    fig, (ax_loss, ax_acc) = new_figure(figsize=(11, 3.8), ncols=2)
    lines = plots.draw_training_log(ax_loss, ax_acc, rows,
                                    curriculum_until=summary["settings"].get("warm_steps", 0))
    b, f, cfg = summary["base"], summary["pi2x"], summary["settings"]
    warm = (f"{cfg['warm_steps']} at {cfg['warm_length']} tokens, then "
            if cfg.get("warm_steps") else "")
    readout = (f"base: {cfg['steps']} steps ({warm}{cfg['steps'] - cfg.get('warm_steps', 0)} at "
               f"256 tokens) in {b['seconds']:.0f} s; "
               f"held-out loss {b['eval_loss']:.3f}, retrieval {b['retrieval_acc']:.3f} "
               f"(chance {summary['chance_acc']:.3f})\n"
               f"PI fine-tune: {summary['settings']['ft_steps']} steps at 512 tokens in "
               f"{f['seconds']:.0f} s; at 512: loss {f['eval_loss']:.3f}, retrieval "
               f"{f['retrieval_acc']:.3f}")
    return _view(fig, (ax_loss, ax_acc), {"lines": lines}, readout)


def needle_view(needles):
    """One needle heatmap per (model, variant) cell, side by side."""
    _results("needles", needles, "cells")
    cells = needles["cells"]
    fig, axes = new_figure(figsize=(5.2 * len(cells), 3.6), ncols=len(cells))
    axes = np.atleast_1d(axes)
    artists = [plots.draw_needle_fractions(ax, needles, c) for ax, c in zip(axes, cells)]
    lines = []
    for c in cells:
        rows = needle_rows(needles, c)
        lines.append(label(c["model"], c["variant"]) + ": " + ", ".join(f"{n} {m:.2f}" for n, m, _ in rows))
    return _view(fig, tuple(axes), {"heatmaps": artists},
                 "mean found by context length\n" + "\n".join(lines))


def sink_view(sinks, *, key="mass_first1"):
    """Attention weight on <bos> per layer and head, one panel per evaluated length."""
    _results("sinks", sinks, "cells")
    key = check.choice("key", key, ("mass_first1", "mass_first4"))
    cells = sinks["cells"]
    fig, axes = new_figure(figsize=(5.0 * len(cells), 3.4), ncols=len(cells))
    axes = np.atleast_1d(axes)
    artists = [plots.draw_sink_mass(ax, c, key=key) for ax, c in zip(axes, cells)]
    lines = []
    for c in cells:  # no uniform-attention baseline: notebook 10's exercise 2 asks for it
        top = sink_heads(c, key=key, top=3)
        lines.append(f"n = {c['length']}: heaviest heads " + ", ".join(
            f"L{layer}H{head} {m:.2f}" for layer, head, m in top))
    return _view(fig, tuple(axes), {"heatmaps": artists}, "\n".join(lines))


def stream_view(streaming):
    """Loss over position through each cache, with the means before and after eviction."""
    _results("streaming", streaming, "cache_tokens")
    fig, ax = new_figure(figsize=(9, 3.8))
    lines = plots.draw_stream_loss(ax, streaming)
    summary = stream_summary(streaming, streaming["cache_tokens"])
    readout = "\n".join(
        f"{name:7s} loss before {streaming['cache_tokens']}: {s['early_loss']:.3f}, after: "
        f"{s['loss']:.3f}; answers after: "
        + (f"{s['answer_acc']:.2f}" if s["answer_acc"] is not None else "-")
        for name, s in summary.items())
    return _view(fig, (ax,), {"lines": lines}, readout)
