"""The committed results of the tiny model (``lessonlib/data``): loading and small summaries.

``scripts/train_tinylm.py`` writes the training log, ``scripts/tinylm_experiments.py`` the
result files; notebook 10 reads them through these functions (numpy only, no torch).
"""
import copy
import csv
import json
from importlib import resources

import numpy as np

__all__ = ["DEFAULT_CONFIG", "trained_config", "VARIANT_LABELS", "label", "RESULT_NAMES", "load_results", "load_training_log", "extension_cell",
           "extension_table", "stream_summary", "sink_heads", "needle_rows"]

RESULT_NAMES = ("extension", "needles", "sinks", "streaming")

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
    "yarn_no_mscale": "YaRN, s = 8, no mscale",
    "as_trained": "PI fine-tune (s = 2)",
}


def label(model, variant):
    """How the notebook names a (model, variant) cell of the experiments."""
    name = VARIANT_LABELS.get(variant, variant)
    return name if model == "base" or variant == "as_trained" else f"{model}: {name}"


def _data(name):
    return resources.files("lessonlib").joinpath("data", name)


def load_results(name, directory=None):
    """The result dict of one experiment (``extension``, ``needles``, ``sinks``,
    ``streaming``), from the committed files or from ``directory``."""
    if name not in RESULT_NAMES:
        raise ValueError(f"name must be one of {RESULT_NAMES}, got {name!r}")
    if directory is None:
        return json.loads(_data("tinylm_results").joinpath(f"{name}.json").read_text())
    with open(f"{directory}/{name}.json") as f:
        return json.load(f)


def load_training_log():
    """(rows, summary): the CSV rows (dicts of strings) and the JSON summary of the training."""
    rows = list(csv.DictReader(_data("tinylm_train_log.csv").read_text().splitlines()))
    return rows, json.loads(_data("tinylm_train_log.json").read_text())


def extension_cell(extension, model, variant, length):
    """The one cell of ``extension`` for (model, variant, length)."""
    for c in extension["cells"]:
        if (c["model"], c["variant"], c["length"]) == (model, variant, length):
            return c
    raise ValueError(f"no cell ({model!r}, {variant!r}, {length})")


def extension_table(extension, length):
    """Rows (model, variant, accuracy, mean loss, mean loss past the trained length) at one
    length, in the file's order. The last is None at the trained length itself."""
    L0, b = extension["trained_length"], extension["loss_bin"]
    rows = []
    for c in extension["cells"]:
        if c["length"] != length:
            continue
        y = np.asarray(c["loss_by_position"])
        past = y[L0 // b:]
        rows.append((c["model"], c["variant"], c["accuracy"], c["mean_loss"],
                     float(past.mean()) if past.size else None))
    return rows


def stream_summary(streaming, start):
    """Per cache: mean loss and answer accuracy over the bins that start at or after
    ``start`` (e.g. the cache size, where eviction begins)."""
    b = streaming["bin"]
    out = {}
    for name, c in streaming["caches"].items():
        loss = np.asarray(c["loss_by_position"])
        first = -(-start // b)  # the first bin starting at or after `start`
        acc = [a for a in c["answer_acc_by_position"][first:] if a is not None]
        out[name] = {"loss": float(loss[first:].mean()), "early_loss": float(loss[:first].mean()),
                     "answer_acc": float(np.mean(acc)) if acc else None}
    return out


def sink_heads(cell, *, key="mass_first1", top=None):
    """(layer, head, mass) for every head, heaviest first (``top`` of them if given)."""
    m = np.asarray(cell[key])
    order = np.argsort(-m, axis=None, kind="stable")
    rows = [(int(i // m.shape[1]), int(i % m.shape[1]), float(m.flat[i])) for i in order]
    return rows[:top] if top else rows


def needle_rows(needles, cell):
    """(context length, mean fraction found over depths, found fraction per depth) per row."""
    frac = np.asarray(cell["found_fraction"])
    return [(n, float(row.mean()), row.tolist()) for n, row in zip(needles["lengths"], frac)]
