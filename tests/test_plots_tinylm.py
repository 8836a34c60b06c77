"""lessonlib.plots.tinylm, lessonlib.tinylm_results and lessonlib.widgets.tinylm on small
hand-made result dicts shaped like scripts/tinylm_experiments.py's files (headless)."""
import matplotlib.pyplot as plt
import numpy as np
import pytest

from lessonlib import tinylm_results as R
from lessonlib.plots import tinylm as P
from lessonlib.widgets import tinylm as W


def make_extension():
    cells = []
    for v, acc in (("plain", [0.9, 0.5]), ("yarn", [0.8, 0.7])):
        for n, a in zip((256, 512), acc):
            y = list(np.linspace(1.0, 2.0, n // 32 - 0) + (0.5 if v == "plain" else 0.0))
            cells.append({"model": "base", "variant": v, "length": n, "accuracy": a,
                          "mean_loss": float(np.mean(y)), "loss_by_position": y, "n_docs": 8})
    return {"trained_length": 256, "loss_bin": 32, "lengths": [256, 512],
            "chance_accuracy": 1 / 32, "cells": cells}


def test_extension_accuracy_and_loss_lines_show_the_cells():
    ext = make_extension()
    fig, (a, b) = plt.subplots(1, 2)
    try:
        acc = P.draw_extension_accuracy(a, ext)
        np.testing.assert_allclose(acc[("base", "yarn")].get_ydata(), [0.8, 0.7])
        np.testing.assert_allclose(acc[("base", "plain")].get_xdata(), [256, 512])
        lines = P.draw_position_loss(b, ext, length=256, max_length=512)
        x, y = lines[("base", "plain")].get_data()
        np.testing.assert_allclose(x, np.arange(8) * 32 + 16)
        np.testing.assert_allclose(y, R.extension_cell(ext, "base", "plain", 256)["loss_by_position"])
        P.update_position_loss(b, lines, ext, 512)
        assert len(lines[("base", "yarn")].get_ydata()) == 16 and "512" in b.get_title()
        fig.canvas.draw()
    finally:
        plt.close(fig)


def _hidden_pairs(lines):
    """Pairs of lines with the same data drawn the same way: the later hides the earlier."""
    items = list(lines.items())
    return [(k1, k2) for i, (k1, a) in enumerate(items) for k2, b in items[i + 1:]
            if len(a.get_ydata()) == len(b.get_ydata())
            and np.allclose(a.get_ydata(), b.get_ydata())
            and (a.get_linestyle(), a.get_marker()) == (b.get_linestyle(), b.get_marker())]


def test_coinciding_sweep_lines_stay_visible():
    """Notebook 10's sweep: dynamic NTK reaches NTK-aware's s = 8 at 2,048 tokens and gives the
    same numbers there. Drawn alike (both solid, both circles), NTK-aware vanished under it;
    every pair of lines with equal data now differs in line style or marker."""
    ext = R.load_results("extension")
    same = [(c["length"], c["loss_by_position"]) for c in ext["cells"]
            if c["model"] == "base" and c["variant"] == "ntk"]
    dyn = [(c["length"], c["loss_by_position"]) for c in ext["cells"]
           if c["model"] == "base" and c["variant"] == "dynamic"]
    assert any(n == m and np.allclose(a, b) for n, a in same for m, b in dyn)  # the case
    fig, (a, b) = plt.subplots(1, 2)
    try:
        assert not _hidden_pairs(P.draw_extension_accuracy(a, ext))
        for n in ext["lengths"]:
            b.clear()
            assert not _hidden_pairs(P.draw_position_loss(b, ext, length=n)), n
    finally:
        plt.close(fig)


def test_results_tables():
    ext = make_extension()
    rows = R.extension_table(ext, 512)
    assert [r[:3] for r in rows] == [("base", "plain", 0.5), ("base", "yarn", 0.7)]
    past = np.mean(R.extension_cell(ext, "base", "yarn", 512)["loss_by_position"][8:])
    assert rows[1][4] == pytest.approx(past)
    assert R.extension_table(ext, 256)[0][4] is None
    with pytest.raises(ValueError):
        R.extension_cell(ext, "base", "ntk", 256)
    stream = {"bin": 64, "cache_tokens": 128, "n_streams": 2, "length": 320,
              "caches": {"window": {"loss_by_position": [1, 1, 3, 3, 5],
                                    "answer_acc_by_position": [1.0, None, 0.5, 0.0, None]}}}
    s = R.stream_summary(stream, 128)["window"]
    assert s == {"loss": pytest.approx(11 / 3), "early_loss": 1.0, "answer_acc": 0.25}
    cell = {"mass_first1": [[0.1, 0.9], [0.5, 0.2]], "length": 256, "uniform_first1": 0.01}
    assert R.sink_heads(cell, top=2) == [(0, 1, 0.9), (1, 0, 0.5)]
    with pytest.raises(ValueError):
        R.load_results("nope")


def test_extension_explorer_slider_moves_cursor_lines_and_readout():
    ext = make_extension()
    w = W.extension_explorer(ext, length=256)
    try:
        assert "256 tokens (1x" in w.readout and "0.90" in w.readout
        w.controls["length"].value = 512
        assert list(w.artists["cursor"].get_xdata()) == [512, 512]
        assert len(w.artists["loss"][("base", "plain")].get_ydata()) == 16
        assert "512 tokens (2x" in w.readout and "0.70" in w.readout
    finally:
        plt.close(w.fig)
    with pytest.raises(ValueError):
        W.extension_explorer(ext, length=1024)


def test_static_views_draw_and_summarise():
    needles = {"lengths": [256, 512], "depths": [0, 50, 100], "trials": 4,
               "cells": [{"model": "base", "variant": "plain",
                          "found_fraction": [[1, 1, 0.5], [0, 0.25, 1]]}]}
    v = W.needle_view(needles)
    try:
        np.testing.assert_array_equal(v.artists["heatmaps"][0][0].get_array(),
                                      needles["cells"][0]["found_fraction"])
        assert "256 0.83, 512 0.42" in v.readout
    finally:
        plt.close(v.fig)
    sinks = {"cells": [{"length": 256, "mass_first1": [[0.1, 0.9], [0.5, 0.2]],
                        "mass_first4": [[0.2, 0.95], [0.6, 0.3]], "uniform_first1": 0.012,
                        "uniform_first4": 0.05}]}
    v = W.sink_view(sinks)
    try:
        assert "L0H1 0.90, L1H0 0.50" in v.readout
        assert "uniform" not in v.readout and "0.012" not in v.readout  # exercise 2's answer
        assert "0.012" not in v.axes[0].get_title()
    finally:
        plt.close(v.fig)
    stream = {"bin": 64, "cache_tokens": 128, "n_streams": 2, "length": 320,
              "caches": {"sinks": {"loss_by_position": [1, 1, 3, 3, 5],
                                   "answer_acc_by_position": [1.0, None, 0.5, 0.0, None]}}}
    v = W.stream_view(stream)
    try:
        assert "before 128: 1.000, after: 3.667; answers after: 0.25" in v.readout
        np.testing.assert_allclose(v.artists["lines"][0].get_ydata(), [1, 1, 3, 3, 5])
    finally:
        plt.close(v.fig)


def test_training_view_draws_the_log_and_names_the_curriculum():
    rows = []
    for step in range(1, 7):
        rows.append({"phase": "base", "step": str(step), "train_loss": str(4.0 - step / 2),
                     "train_answer_acc": str(step / 6), "eval_loss": "2.0" if step % 3 == 0 else "",
                     "eval_acc": "0.5" if step % 3 == 0 else ""})
    rows.append({"phase": "pi2x", "step": "1", "train_loss": "1.0", "train_answer_acc": "1.0",
                 "eval_loss": "1.0", "eval_acc": "1.0"})
    summary = {"settings": {"steps": 6, "warm_steps": 2, "warm_length": 64, "ft_steps": 1},
               "base": {"seconds": 12.3, "eval_loss": 1.25, "retrieval_acc": 0.99},
               "pi2x": {"seconds": 4.0, "eval_loss": 1.2, "retrieval_acc": 1.0},
               "chance_acc": 1 / 32}
    v = W.training_view(rows, summary)
    try:
        train_loss, held_out = v.artists["lines"][:2]
        np.testing.assert_allclose(train_loss.get_ydata(), [3.5, 3.0, 2.5, 2.0, 1.5, 1.0])
        np.testing.assert_array_equal(held_out.get_xdata(), [3, 6])  # the base phase only
        assert "6 steps (2 at 64 tokens, then 4 at 256 tokens) in 12 s" in v.readout
        assert "retrieval 0.990 (chance 0.031)" in v.readout
        marks = [ln for ln in v.axes[0].lines if list(ln.get_xdata()) == [2, 2]]
        assert len(marks) == 1  # the curriculum's end, on the loss panel
    finally:
        plt.close(v.fig)
