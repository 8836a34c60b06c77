"""Widgets for notebook 10: the tiny trained model's committed results.

``extension_explorer`` is the notebook's slider: the served length picks which documents the
loss-over-position panel shows, beside retrieval accuracy against length with a cursor. The
other factories show one finished result (no sliders) with a text readout, like
``widgets.long_context.needle_heatmap``. Data come from ``lessonlib.tinylm_results``; drawing
from ``lessonlib.plots.tinylm``.

Every figure is ``plots.FIGURE_WIDTH`` inches wide (the course's one width, re-exported here):
JupyterLab's output area beside the file browser (920 px at 100 dpi) shows it unscaled, the presenter (130 dpi) in its 1,216 px page. Its
smallest text is ``_MIN_FONT`` points, so it stays at least 9 px on a laptop and two thirds of
the presenter's 18 px readout after the presenter fits the figure into the screen's height.
Several panels are stacked rather than set side by side when side by side would shrink them,
and legends sit outside the data: one legend for the whole figure where the panels share
their series (it is then drawn once, with the figure's background, not on every slider step).
"""
import ipywidgets as widgets
import numpy as np

from .. import _validate as check

from ..plots import FIGURE_WIDTH
from ..plots import tinylm as plots
from ..tinylm_results import extension_table, label, needle_rows, sink_heads, stream_summary
from ._base import Explorer, freeze_layout, new_figure, option, slider_layout

__all__ = ["extension_explorer", "training_view", "needle_view", "sink_view", "stream_view",
           "FIGURE_WIDTH"]

_MIN_FONT = 10  # points: the smallest text of notebook 10's figures
"""10 points, the smallest text of notebook 10's figures."""


def _figure_legend(fig, handles, labels, ncol):
    """One legend for the figure, under its panels (constrained layout leaves it the room). A
    figure's legend is drawn once, into the blitted background; an axes' legend would be
    redrawn on every slider step (it cost more than the lines it names)."""
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=_MIN_FONT,
                      frameon=False, columnspacing=1.5, handlelength=2.2)


def _table(extension, length):
    # The length heads the model column: one line fewer under the figure (in the presenter the
    # figure gets the height the readout leaves).
    head = f"{length} tokens ({length // extension['trained_length']}x the trained 256)"
    lines = [f"{head:32s} {'retrieval':>9s} {'mean loss':>9s} {'loss past 256':>13s}"]
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
    fig, (ax_acc, ax_loss) = new_figure(figsize=(FIGURE_WIDTH, 4.4), ncols=2)
    top = max(max(c["loss_by_position"]) for c in extension["cells"]
              if cells is None or (c["model"], c["variant"]) in cells)
    artists = {"accuracy": plots.draw_extension_accuracy(ax_acc, extension, cells=cells,
                                                         legend=False),
               "cursor": plots.draw_length_cursor(ax_acc, length),
               "loss": plots.draw_position_loss(ax_loss, extension, length=length, cells=cells,
                                                max_length=max(lengths), ylim=(0, 1.05 * top),
                                                legend=False)}
    # Both panels draw each cell in one colour: one legend under them, off every curve (a
    # legend inside the loss panel sat on the PI curves at 2,048), drawn once.
    artists["legend"] = _figure_legend(fig, *ax_acc.get_legend_handles_labels(), ncol=3)

    def redraw(length):
        artists["cursor"].set_xdata([length, length])
        plots.update_position_loss(ax_loss, artists["loss"], extension, length)
        return _table(extension, length)

    freeze_layout(fig)
    explorer = Explorer(controls, fig, redraw, axes=(ax_acc, ax_loss), artists=artists)
    # The loss panel's title names the length: a rehearsal at another length saves the first
    # move a full draw of the background.
    explorer.rehearse(length=lengths[-1] if length != lengths[-1] else lengths[0])
    return explorer


def _results(name, results, key):
    """A committed result (``tinylm_results.load_results``): a dict with ``key``."""
    if not isinstance(results, dict) or key not in results:
        raise ValueError(f"{name} must be the {name!r} results of tinylm_results.load_results, "
                         f"got {check.describe(results)}")


def _view(fig, axes, artists, readout):
    return Explorer({}, fig, lambda: readout, axes=axes, artists=artists)


def training_view(rows, summary):
    """The training curves (loss; answer accuracy) with the final numbers as the readout."""
    _results("summary", summary, "settings")
    if isinstance(rows, (str, dict)) or not rows:
        raise ValueError(f"rows must be the training log's rows (tinylm_results."
                         f"load_training_log), got {check.describe(rows)}")
    fig, (ax_loss, ax_acc) = new_figure(figsize=(FIGURE_WIDTH, 3.4), ncols=2)
    lines = plots.draw_training_log(ax_loss, ax_acc, rows, fontsize=_MIN_FONT,
                                    curriculum_until=summary["settings"].get("warm_steps", 0))
    b, f, cfg = summary["base"], summary["pi2x"], summary["settings"]
    warm = (f"{cfg['warm_steps']} at {cfg['warm_length']} tokens, then "
            if cfg.get("warm_steps") else "")
    # Lines short enough not to wrap on a laptop or in the presenter.
    readout = (f"base: {cfg['steps']} steps ({warm}{cfg['steps'] - cfg.get('warm_steps', 0)} at "
               f"256 tokens) in {b['seconds']:.0f} s\n"
               f"base, held out: loss {b['eval_loss']:.3f}, retrieval {b['retrieval_acc']:.3f} "
               f"(chance {summary['chance_acc']:.3f})\n"
               f"PI fine-tune: {summary['settings']['ft_steps']} steps at 512 tokens in "
               f"{f['seconds']:.0f} s; at 512: loss {f['eval_loss']:.3f}, retrieval "
               f"{f['retrieval_acc']:.3f}")
    return _view(fig, (ax_loss, ax_acc), {"lines": lines}, readout)


def needle_view(needles):
    """One needle heatmap per (model, variant) cell, stacked (depth across, the same columns
    in every panel) with one colorbar: side by side, three panels of 11 depths each would
    shrink their numbers to about 6 px on a laptop."""
    _results("needles", needles, "cells")
    cells = needles["cells"]
    fig, axes = new_figure(figsize=(FIGURE_WIDTH, 0.32 * len(needles["lengths"]) * len(cells)
                                    + 0.45 * len(cells) + 0.6), nrows=len(cells))
    axes = np.atleast_1d(axes)
    artists = [plots.draw_needle_fractions(ax, needles, c, fontsize=_MIN_FONT, colorbar=False,
                                           xlabel=(k == len(cells) - 1))
               for k, (ax, c) in enumerate(zip(axes, cells))]
    bar = fig.colorbar(artists[0][0], ax=list(axes), ticks=[0, 0.5, 1], aspect=30)
    bar.set_label(f"found ({needles['trials']} trials)")
    artists = [(image, bar) for image, _ in artists]
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
    fig, axes = new_figure(figsize=(FIGURE_WIDTH, 3.6), ncols=len(cells))
    axes = np.atleast_1d(axes)
    artists = [plots.draw_sink_mass(ax, c, key=key, fontsize=_MIN_FONT, colorbar=False)
               for ax, c in zip(axes, cells)]
    bar = fig.colorbar(artists[0][0], ax=list(axes))  # one scale (0..1) for every panel
    artists = [(image, bar) for image, _ in artists]
    lines = []
    for c in cells:  # no uniform-attention baseline: notebook 10's exercise 2 asks for it
        top = sink_heads(c, key=key, top=3)
        lines.append(f"n = {c['length']}: heaviest heads " + ", ".join(
            f"L{layer}H{head} {m:.2f}" for layer, head, m in top))
    return _view(fig, tuple(axes), {"heatmaps": artists}, "\n".join(lines))


def stream_view(streaming):
    """Loss over position through each cache, with the means before and after eviction."""
    _results("streaming", streaming, "cache_tokens")
    fig, ax = new_figure(figsize=(FIGURE_WIDTH, 3.9))
    lines = plots.draw_stream_loss(ax, streaming, legend=False)
    # Under the axes, in one row: inside, it hid the window's peak near position 2,700.
    _figure_legend(fig, lines, [line.get_label() for line in lines], ncol=len(lines))
    summary = stream_summary(streaming, streaming["cache_tokens"])
    readout = "\n".join(
        f"{name:7s} loss before {streaming['cache_tokens']}: {s['early_loss']:.3f}, after: "
        f"{s['loss']:.3f}; answers after: "
        + (f"{s['answer_acc']:.2f}" if s["answer_acc"] is not None else "-")
        for name, s in summary.items())
    return _view(fig, (ax,), {"lines": lines}, readout)
