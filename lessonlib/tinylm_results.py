"""The committed results of the tiny model (``lessonlib/data``): loading and small summaries.

``scripts/train_tinylm.py`` writes the training log, ``scripts/tinylm_experiments.py`` the
result files; notebook 10 reads them through these functions (numpy only, no torch).
"""
import copy
import csv
import json
import os
from importlib import resources

import numpy as np

from lessonlib import _validate as check

__all__ = ["DEFAULT_CONFIG", "trained_config", "VARIANT_LABELS", "label", "RESULT_NAMES",
           "load_results", "load_training_log", "extension_cell", "extension_table",
           "extension_grid", "loss_spans", "loss_span_table", "stream_summary", "sink_heads",
           "needle_rows", "needle_misses", "retrieval_reach"]

RESULT_NAMES = ("extension", "needles", "sinks", "streaming")
"""The experiments ``load_results`` reads: ("extension", "needles", "sinks", "streaming")."""

# The tiny model's config.json (``lessonlib.tinylm.TinyLM`` builds it; the committed weights were
# trained with exactly this, which tests/test_tinylm.py checks). It lives here, with no torch,
# so a notebook can read the model's shape where torch is not installed.
DEFAULT_CONFIG = {
    "model_type": "tinylm",
    "vocab_size": 131,
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "rope_theta": 10000.0,
    "max_position_embeddings": 256,  # the trained context, L0
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": True,
}
"""The tiny model's config.json dict, the one its committed weights were trained with (4 layers,
4 query heads, 2 KV heads of ``head_dim`` 32, ``rope_theta`` 10,000, 256 trained positions);
``lessonlib.tinylm`` re-exports it. Here, with no torch, so a notebook reads the model's shape
where torch is not installed. Use ``trained_config()`` for a copy to modify."""


def trained_config():
    """A fresh copy of the committed model's config (safe to modify)."""
    return copy.deepcopy(DEFAULT_CONFIG)

VARIANT_LABELS = {
    "plain": "plain RoPE",
    "pi": "PI, s = 8",
    "pi_s2": "PI, s = 2",
    "ntk": "NTK-aware, s = 8",
    "dynamic": "dynamic NTK",
    "yarn": "YaRN, s = 8",
    "yarn_no_mscale": "YaRN, s = 8, mu = 1",  # mu: YaRN's attention factor (notebook 08)
    "as_trained": "PI fine-tune (s = 2)",
}
"""Variant key -> how the notebook names it ("pi": "PI, s = 8", "yarn": "YaRN, s = 8", ...)."""


def label(model, variant):
    """How the notebook names a (model, variant) cell of the experiments (a variant without a
    label in ``VARIANT_LABELS`` is shown as its own name)."""
    check.text("model", model)
    name = VARIANT_LABELS.get(check.text("variant", variant), variant)
    return name if model == "base" or variant == "as_trained" else f"{model}: {name}"


def _data(name):
    return resources.files("lessonlib").joinpath("data", name)


def _field(mapping, key, where, kind=None):
    """``mapping[key]``, or ValueError naming ``where.key`` when ``mapping`` is not a dict or
    lacks the key (a result file of another shape, or a hand-made dict missing a field)."""
    if not isinstance(mapping, dict):
        raise ValueError(f"{where} must be a result dict, got {check.describe(mapping)}")
    if key not in mapping:
        raise ValueError(f"{where}.{key} is missing (a result of scripts/tinylm_experiments.py "
                         f"has it)")
    value = mapping[key]
    if kind is list and not isinstance(value, (list, tuple)):
        raise ValueError(f"{where}.{key} must be a list, got {check.describe(value)}")
    if kind is dict and not isinstance(value, dict):
        raise ValueError(f"{where}.{key} must be a dict, got {check.describe(value)}")
    if kind is int:
        check.integer(f"{where}.{key}", value, minimum=1)
    return value


def _series(where, values, ndim=1):
    """A per-bin list of numbers as an array (ints or floats, finite), not empty."""
    a = check.array(where, values, kind="real", ndim=ndim)
    if a.size == 0:
        raise ValueError(f"{where} must not be empty")
    return a


def load_results(name, directory=None):
    """The result dict of one experiment (``extension``, ``needles``, ``sinks``,
    ``streaming``), from the committed files or from ``directory``."""
    name = check.choice("name", name, RESULT_NAMES)
    if directory is None:
        return json.loads(_data("tinylm_results").joinpath(f"{name}.json").read_text())
    if not isinstance(directory, (str, os.PathLike)):
        raise ValueError(f"directory must be a folder's path or None, got "
                         f"{check.describe(directory)}")
    path = os.path.join(directory, f"{name}.json")
    if not os.path.isfile(path):
        raise ValueError(f"directory {str(directory)!r} has no {name}.json (scripts/"
                         f"tinylm_experiments.py --out DIRECTORY writes it)")
    with open(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as err:
            raise ValueError(f"directory {str(directory)!r}: {name}.json is not JSON: "
                             f"{err}") from None


def load_training_log():
    """(rows, summary): the CSV rows (dicts of strings) and the JSON summary of the training."""
    rows = list(csv.DictReader(_data("tinylm_train_log.csv").read_text().splitlines()))
    return rows, json.loads(_data("tinylm_train_log.json").read_text())


def _cells(result, name, keys):
    """``result["cells"]``: a list of dicts, each with ``keys``."""
    cells = _field(result, "cells", name, list)
    for i, c in enumerate(cells):
        for key in keys:
            _field(c, key, f"{name}.cells[{i}]")
    return cells


def _one_of(name, value, present, where):
    if value not in present:
        try:
            ordered = sorted(present)
        except TypeError:  # mixed types in a hand-made dict
            ordered = sorted(present, key=str)
        shown = ", ".join(repr(p) for p in ordered)
        raise ValueError(f"{name} {value!r} is not in {where} (it has {shown})")


def extension_cell(extension, model, variant, length):
    """The one cell of ``extension`` for (model, variant, length)."""
    cells = _cells(extension, "extension", ("model", "variant", "length"))
    check.text("model", model)
    check.text("variant", variant)
    length = check.integer("length", length, minimum=1)
    for c in cells:
        if (c["model"], c["variant"], c["length"]) == (model, variant, length):
            return c
    _one_of("model", model, {c["model"] for c in cells}, "extension")
    _one_of("variant", variant, {c["variant"] for c in cells if c["model"] == model},
            f"extension for model {model!r}")
    _one_of("length", length, {c["length"] for c in cells
                               if (c["model"], c["variant"]) == (model, variant)},
            f"extension for ({model!r}, {variant!r})")
    raise AssertionError("unreachable")  # one of the three is missing


def extension_table(extension, length):
    """Rows (model, variant, accuracy, mean loss, mean loss past the trained length) at one
    length, in the file's order. The last is None at the trained length itself."""
    L0 = _field(extension, "trained_length", "extension", int)
    b = _field(extension, "loss_bin", "extension", int)
    cells = _cells(extension, "extension", ("model", "variant", "length", "accuracy",
                                            "mean_loss", "loss_by_position"))
    length = check.integer("length", length, minimum=1)
    _one_of("length", length, {c["length"] for c in cells}, "extension")
    rows = []
    for i, c in enumerate(cells):
        if c["length"] != length:
            continue
        y = _series(f"extension.cells[{i}].loss_by_position", c["loss_by_position"])
        past = y[L0 // b:]
        rows.append((c["model"], c["variant"], c["accuracy"], c["mean_loss"],
                     float(past.mean()) if past.size else None))
    return rows


def _pairs(cells):
    """The (model, variant) pairs of a sweep's cells, in the file's order, each once."""
    return list(dict.fromkeys((c["model"], c["variant"]) for c in cells))


def extension_grid(extension):
    """The whole sweep as a text table: one row per (model, variant), in the file's order, and
    ``retrieval / mean loss`` at each of ``extension["lengths"]``."""
    lengths = [check.integer(f"extension.lengths[{i}]", n, minimum=1)
               for i, n in enumerate(_field(extension, "lengths", "extension", list))]
    cells = _cells(extension, "extension", ("model", "variant", "length", "accuracy",
                                            "mean_loss"))
    lines = [f"{'retrieval / mean loss':24s}" + "".join(f"{n:>14d}" for n in lengths)]
    for model, variant in _pairs(cells):
        row = [extension_cell(extension, model, variant, n) for n in lengths]
        lines.append(f"{label(model, variant):24s}" + "".join(
            f"{c['accuracy']:7.2f} /{c['mean_loss']:5.2f}" for c in row))
    return "\n".join(lines)


def loss_spans(extension, model, variant, length, *, span=None):
    """``[(start, mean loss), ...]``: the mean next-token loss over each ``span`` consecutive
    positions (default: the trained length) of one cell's documents, from position 0. ``span``
    must be a multiple of ``extension["loss_bin"]`` that divides the documents' length."""
    L0 = _field(extension, "trained_length", "extension", int)
    b = _field(extension, "loss_bin", "extension", int)
    span = L0 if span is None else check.integer("span", span, minimum=1)
    if span % b:
        raise ValueError(f"span must be a multiple of extension.loss_bin ({b}), got {span}")
    cell = extension_cell(extension, model, variant, length)
    y = _series("loss_by_position", _field(cell, "loss_by_position", "cell"))  # one per bin
    k = span // b
    if len(y) % k:
        raise ValueError(f"span must divide the cell's {len(y) * b} positions into whole "
                         f"spans, got {span}")
    return [(i * span, float(y[i * k:(i + 1) * k].mean())) for i in range(len(y) // k)]


def loss_span_table(extension, length, *, span=None):
    """A text table of ``loss_spans`` for every (model, variant) of the sweep at ``length``: one
    row each, one column per span, headed by the span's first position."""
    cells = _cells(extension, "extension", ("model", "variant", "length"))
    length = check.integer("length", length, minimum=1)
    _one_of("length", length, {c["length"] for c in cells}, "extension")
    rows = [(label(m, v), loss_spans(extension, m, v, length, span=span))
            for m, v in _pairs(c for c in cells if c["length"] == length)]
    starts = [start for start, _ in rows[0][1]]
    width = max(6, len(str(starts[-1])) + 2)
    lines = [f"mean loss over each {starts[1] if len(starts) > 1 else length} positions of "
             f"the {length:,}-token documents",
             f"{'positions from':24s}" + "".join(f"{a:>{width}d}" for a in starts)]
    for name, spans in rows:
        lines.append(f"{name:24s}" + "".join(f"{m:{width}.2f}" for _, m in spans))
    return "\n".join(lines)


def stream_summary(streaming, start):
    """Per cache: mean loss and answer accuracy over the bins that start at or after
    ``start`` (e.g. the cache size, where eviction begins); ``early_loss`` is the mean over
    the bins before. ``start`` must leave at least one bin on each side."""
    b = _field(streaming, "bin", "streaming", int)
    caches = _field(streaming, "caches", "streaming", dict)
    if not caches:
        raise ValueError("streaming.caches must hold at least one cache")
    series = {}
    for name, c in caches.items():
        where = f"streaming.caches.{name}"
        series[name] = (_series(f"{where}.loss_by_position",
                                _field(c, "loss_by_position", where)),
                        _field(c, "answer_acc_by_position", where, list))
    n_bins = min(len(loss) for loss, _ in series.values())
    start = check.integer("start", start, minimum=1, maximum=(n_bins - 1) * b)
    out = {}
    for name, (loss, answer_acc) in series.items():
        first = -(-start // b)  # the first bin starting at or after `start`
        acc = [a for a in answer_acc[first:] if a is not None]
        out[name] = {"loss": float(loss[first:].mean()), "early_loss": float(loss[:first].mean()),
                     "answer_acc": float(np.mean(acc)) if acc else None}
    return out


def sink_heads(cell, *, key="mass_first1", top=None):
    """(layer, head, mass) for every head, heaviest first (``top`` of them if given)."""
    check.text("key", key)
    if not isinstance(cell, dict):
        raise ValueError(f"cell must be one of a sinks result's cells (a dict), got "
                         f"{check.describe(cell)}")
    if key not in cell:
        masses = sorted(k for k in cell if str(k).startswith("mass_"))
        raise ValueError(f"key {key!r} is not in the cell (it has {', '.join(masses)})")
    m = _series(f"cell.{key}", cell[key], ndim=2)
    top = None if top is None else check.integer("top", top, minimum=1)
    order = np.argsort(-m, axis=None, kind="stable")
    rows = [(int(i // m.shape[1]), int(i % m.shape[1]), float(m.flat[i])) for i in order]
    return rows[:top] if top else rows


def needle_rows(needles, cell):
    """(context length, mean fraction found over depths, found fraction per depth) per row."""
    lengths = _field(needles, "lengths", "needles", list)
    frac = _series("cell.found_fraction", _field(cell, "found_fraction", "cell"), ndim=2)
    if frac.shape[0] != len(lengths):
        raise ValueError(f"cell.found_fraction must have one row per length of needles "
                         f"({len(lengths)}), got shape {frac.shape}")
    return [(n, float(row.mean()), row.tolist()) for n, row in zip(needles["lengths"], frac)]


def needle_misses(needles, cell):
    """``[(context length, depth, fraction found), ...]``: every (length, depth) of one needle
    grid cell where at least one trial missed, row by row."""
    depths = _field(needles, "depths", "needles", list)
    rows = needle_rows(needles, cell)
    if len(rows[0][2]) != len(depths):
        raise ValueError(f"cell.found_fraction has {len(rows[0][2])} columns and "
                         f"needles.depths {len(depths)} depths: each column is one depth")
    return [(n, d, f) for n, _, row in rows for d, f in zip(depths, row) if f < 1]


def retrieval_reach(extension, threshold):
    """How far each method of the sweep keeps retrieval: ``{label: length}``, the longest
    served length up to which retrieval accuracy stays at or above ``threshold`` at every
    length of that method's cells (sorted by length, whatever the file's order), 0 where it is
    below already at the shortest. A method that dips and recovers (PI, s = 8: 0.86 at 256,
    0.98 at 1,024) reaches only as far as the dip. Keys are ``label(model, variant)``. The
    committed sweep at 0.9: plain RoPE 512, PI s = 8 0, YaRN s = 8 2,048, the PI fine-tune
    1,024."""
    threshold = check.real("threshold", threshold, minimum=0.0, maximum=1.0)
    cells = _cells(extension, "extension", ("model", "variant", "length", "accuracy"))
    out = {}
    for model, variant in _pairs(cells):
        mine = sorted((check.integer("length", c["length"], minimum=1),
                       check.real("accuracy", c["accuracy"], minimum=0.0, maximum=1.0))
                      for c in cells if (c["model"], c["variant"]) == (model, variant))
        reach = 0
        for length, accuracy in mine:
            if accuracy < threshold:
                break
            reach = length
        out[label(model, variant)] = reach
    return out
