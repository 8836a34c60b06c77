"""Run the long-context experiments on the trained tiny model; write the committed result files.

    .venv/bin/python scripts/tinylm_experiments.py             # the full grid (the committed files)
    .venv/bin/python scripts/tinylm_experiments.py --reduced --out /tmp/r   # a subset, for tests

Writes into lessonlib/data/tinylm_results/ (or --out):
    extension.json   retrieval accuracy and per-position loss at 1x..8x the trained length, per
                     model (base, PI fine-tune) and RoPE variant (plain, PI, NTK-aware, dynamic
                     NTK, YaRN with and without mscale)
    needles.json     a length x depth needle grid (lessonlib.needles.run_needle_grid) per variant
    sinks.json       attention weight on the first tokens, per layer and head
    streaming.json   loss over position of long streams through a dense cache, a window cache,
                     and a window cache with 4 sink tokens (StreamingLLM)

Every cell is computed from documents seeded by the cell itself (kvtask's ``(seed, length, i)``
seeds) in fixed batches, so ``--reduced`` (fewer lengths, variants and positions) reproduces the
matching cells of the full files; tests/test_tinylm.py checks that.
"""
import argparse
import json
import os
import time

import numpy as np
import torch

from lessonlib import kvtask
from lessonlib.needles import run_needle_grid
from lessonlib.tinylm import (NeedleModel, attention_to_first_tokens, decode, load_tinylm,
                             token_losses, with_rope_scaling)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "lessonlib", "data", "tinylm_results")
L0 = 256  # the trained context
S = 8.0  # the static variants are configured once for 8x, as a deployed config would be
EVAL_SEED, NEEDLE_SEED, SINK_SEED, STREAM_SEED = 1001, 1002, 1003, 1004
BATCH = 8  # documents per forward pass: fixed, so a cell's numbers do not depend on the grid
N_DOCS = 64  # documents per (model, variant, length) cell
LOSS_BIN = 32  # positions per bin of the per-position loss

# name -> rope_scaling dict (None: plain). "dynamic" has factor 1: at length L its base is
# b * (L / L0)^(r / (r - 2)), plain RoPE up to L0 (HF's dynamic rule).
VARIANTS = {
    "plain": None,
    "pi": {"rope_type": "linear", "factor": S},
    "pi_s2": {"rope_type": "linear", "factor": 2.0},
    "ntk": {"rope_type": "ntk", "factor": S},
    "dynamic": {"rope_type": "dynamic", "factor": 1.0},
    "yarn": {"rope_type": "yarn", "factor": S},
    "yarn_no_mscale": {"rope_type": "yarn", "factor": S, "attention_factor": 1.0},
}
MODELS = {"base": "tinylm.pt", "pi2x": "tinylm_pi2x.pt"}

FULL = {
    "extension": {"lengths": [256, 512, 1024, 2048],
                  "cells": [("base", v) for v in VARIANTS] + [("pi2x", "as_trained")]},
    "needles": {"lengths": [256, 512, 1024, 2048], "depths": list(range(0, 101, 10)),
                "trials": 8, "cells": [("base", "plain"), ("base", "yarn"), ("pi2x", "as_trained")]},
    "sinks": {"lengths": [256, 2048], "n_docs": 16, "query_from": 32},
    "streaming": {"length": 4096, "n_streams": 8, "n_recent_total": 256, "n_sink": 4,
                  "caches": ["dense", "window", "sinks"], "bin": 64},
}
REDUCED = {
    "extension": {"lengths": [256, 512], "cells": [("base", "plain"), ("base", "yarn")]},
    "needles": {"lengths": [256, 512], "depths": [0, 50, 100], "trials": 8,
                "cells": [("base", "plain")]},
    "sinks": {"lengths": [256], "n_docs": 16, "query_from": 32},
    "streaming": {"length": 448, "n_streams": 8, "n_recent_total": 256, "n_sink": 4,
                  "caches": ["window", "sinks"], "bin": 64},
}


def rope_for(model, variant):
    """The config dict a variant runs the model with (None: the model's own rope)."""
    if variant == "as_trained":
        return None
    return with_rope_scaling(model.config, VARIANTS[variant])


def describe(model, variant):
    rope = rope_for(model, variant)
    return (rope or model.config).get("rope_scaling")


# ------------------------------------------------------------------------------------------

@torch.no_grad()
def extension_cell(model, variant, length, n_docs=N_DOCS):
    """Retrieval accuracy and mean per-position loss (binned) on ``n_docs`` documents."""
    rope = rope_for(model, variant)
    hits, loss_sum = [], torch.zeros(length - 1, dtype=torch.float64)
    for start in range(0, n_docs, BATCH):
        idx = range(start, min(n_docs, start + BATCH))
        tokens = torch.from_numpy(np.stack([
            kvtask.retrieval_document((EVAL_SEED, length, i), length).tokens for i in idx]))
        logits = model(tokens, rope=rope)
        loss_sum += token_losses(logits, tokens).double().sum(0)
        pred = logits[:, -2].argmax(-1)
        hits.extend((pred == tokens[:, -1]).tolist())
    loss = (loss_sum / n_docs).numpy()  # (length - 1,): loss of predicting token t + 1
    bins = loss.reshape(-1, LOSS_BIN) if (length - 1) % LOSS_BIN == 0 else \
        np.array([loss[i:i + LOSS_BIN] for i in range(0, length - 1, LOSS_BIN)], dtype=object)
    binned = [float(np.mean(b)) for b in bins]
    return {"accuracy": float(np.mean(hits)), "n_docs": n_docs, "mean_loss": float(loss.mean()),
            "loss_by_position": binned}


def run_extension(models, grid):
    cells = []
    for model_name, variant in grid["cells"]:
        model = models[model_name]
        for length in grid["lengths"]:
            t0 = time.perf_counter()
            cell = extension_cell(model, variant, length)
            cells.append({"model": model_name, "variant": variant, "length": length,
                          "rope_scaling": describe(model, variant), **cell})
            print(f"extension {model_name:5s} {variant:15s} {length:5d}: acc "
                  f"{cell['accuracy']:.3f} loss {cell['mean_loss']:.3f} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    return {"trained_length": L0, "static_factor": S, "loss_bin": LOSS_BIN, "eval_seed": EVAL_SEED,
            "chance_accuracy": 1 / kvtask.N_VALUES, "lengths": grid["lengths"],
            "variants": VARIANTS, "cells": cells}


# ------------------------------------------------------------------------------------------

N_GRID_DISTRACTORS = kvtask.HAYSTACK_DISTRACTORS
NEEDLE_DEPTHS = kvtask.HAYSTACK_DEPTHS  # every grid's depths come from these


def needle_trial(trial, n_filler):
    """(needle text, filler ids) of one trial at one filler length (kvtask.needle_haystack)."""
    return kvtask.needle_haystack((NEEDLE_SEED, trial, n_filler), n_filler)


def run_needles(models, grid, ask_for=None):
    """The needle grid of every (model, variant) cell. ``ask_for(model_name, model, variant)``
    gives the callable that answers a prompt (default: ``NeedleModel`` on the torch model;
    scripts/llamacpp_results.py passes llama.cpp's)."""
    if ask_for is None:
        def ask_for(model_name, model, variant):
            return NeedleModel(model, rope_for(model, variant))
    if not set(grid["depths"]) <= set(NEEDLE_DEPTHS):
        raise ValueError(f"needle depths must come from {NEEDLE_DEPTHS}, got {grid['depths']}")
    extra = 1 + kvtask.NEEDLE_LEN + kvtask.QUERY_LEN  # <bos>, the needle, the question
    filler_lengths = [n - extra for n in grid["lengths"]]  # the whole prompt is n tokens
    cells = []
    for model_name, variant in grid["cells"]:
        model = models[model_name]
        ask = ask_for(model_name, model, variant)
        found = np.zeros((len(filler_lengths), len(grid["depths"])))
        t0 = time.perf_counter()
        for trial in range(grid["trials"]):
            for i, n in enumerate(filler_lengths):
                needle, filler = needle_trial(trial, n)
                result = run_needle_grid(ask, [n], grid["depths"], needle=needle,
                                         question="? pass:", filler=filler,
                                         tokenizer=kvtask.KVTokenizer(), pass_prompt=True,
                                         progress=False)
                found[i] += result.found[0]
        cells.append({"model": model_name, "variant": variant,
                      "rope_scaling": describe(model, variant),
                      "found_fraction": (found / grid["trials"]).tolist()})
        print(f"needles {model_name} {variant}: mean {found.mean() / grid['trials']:.3f} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    return {"lengths": grid["lengths"], "filler_lengths": filler_lengths, "depths": grid["depths"],
            "trials": grid["trials"], "distractors": N_GRID_DISTRACTORS, "seed": NEEDLE_SEED,
            "cells": cells}


# ------------------------------------------------------------------------------------------

@torch.no_grad()
def run_sinks(models, grid):
    """Mean attention weight on key 0 (<bos>) and on keys 0..3, per layer and head, for queries
    at positions >= query_from, with the weight uniform attention would give for comparison."""
    out = []
    for model_name in ("base",):
        model = models[model_name]
        for length in grid["lengths"]:
            first1 = first4 = 0
            n_batches = grid["n_docs"] // BATCH
            for b in range(n_batches):
                tokens = torch.from_numpy(np.stack([kvtask.retrieval_document(
                    (SINK_SEED, length, b * BATCH + i), length).tokens for i in range(BATCH)]))
                _, weights = model(tokens, need_weights=True)
                first1 = first1 + attention_to_first_tokens(weights, 1, grid["query_from"])
                first4 = first4 + attention_to_first_tokens(weights, 4, grid["query_from"])
            p = np.arange(grid["query_from"], length)
            out.append({"model": model_name, "length": length, "n_docs": grid["n_docs"],
                        "query_from": grid["query_from"],
                        "mass_first1": (first1 / n_batches).tolist(),
                        "mass_first4": (first4 / n_batches).tolist(),
                        "uniform_first1": float(np.mean(1.0 / (p + 1))),
                        "uniform_first4": float(np.mean(4.0 / (p + 1)))})
            print(f"sinks {model_name} {length}: max mass on <bos> "
                  f"{float(np.max(out[-1]['mass_first1'])):.3f}", flush=True)
    return {"seed": SINK_SEED, "cells": out}


# ------------------------------------------------------------------------------------------

STREAM_CACHES = {  # name -> (n_sink, n_recent, positions); None: keep every token
    "dense": lambda g: (0, None, "original"),
    "window": lambda g: (0, g["n_recent_total"], "cache"),
    "sinks": lambda g: (g["n_sink"], g["n_recent_total"] - g["n_sink"], "cache"),
}
STREAM_MAX_LENGTH = 4096  # streams are cut from documents of this length (reduced = a prefix)


def run_streaming(models, grid):
    model = models["base"]
    docs = [kvtask.stream_document((STREAM_SEED, i), STREAM_MAX_LENGTH)
            for i in range(grid["n_streams"])]
    n = grid["length"]
    tokens = torch.from_numpy(np.stack([d.tokens[:n] for d in docs]))
    out = {}
    for name in grid["caches"]:
        n_sink, n_recent, positions = STREAM_CACHES[name](grid)
        t0 = time.perf_counter()
        logits = decode(model, tokens, n_sink=n_sink, n_recent=n_recent, positions=positions)
        loss = token_losses(logits, tokens).double().mean(0).numpy()  # (n - 1,)
        pred = logits[:, :-1].argmax(-1)
        hit = (pred == tokens[:, 1:]).numpy()
        answers = [(i, a - 1) for i, d in enumerate(docs) for a in d.answer_at if a < n]
        bins = range(0, n - 1, grid["bin"])
        acc_bins = []
        for s in bins:
            inside = [hit[i, t] for i, t in answers if s <= t < s + grid["bin"]]
            acc_bins.append(float(np.mean(inside)) if inside else None)
        out[name] = {"n_sink": n_sink, "n_recent": n_recent, "positions": positions,
                     "loss_by_position": [float(loss[s:s + grid["bin"]].mean()) for s in bins],
                     "answer_acc_by_position": acc_bins}
        print(f"streaming {name}: mean loss {loss.mean():.3f} ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    return {"length": n, "n_streams": grid["n_streams"], "bin": grid["bin"], "seed": STREAM_SEED,
            "cache_tokens": grid["n_recent_total"], "caches": out}


# ------------------------------------------------------------------------------------------

EXPERIMENTS = {"extension": run_extension, "needles": run_needles, "sinks": run_sinks,
               "streaming": run_streaming}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reduced", action="store_true", help="the small grid the tests rerun")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--only", nargs="*", choices=list(EXPERIMENTS), default=list(EXPERIMENTS))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    grids = REDUCED if args.reduced else FULL
    models = {name: load_tinylm(path) for name, path in MODELS.items()}
    os.makedirs(args.out, exist_ok=True)
    for name in args.only:
        t0 = time.perf_counter()
        result = EXPERIMENTS[name](models, grids[name])
        result["grid"] = "reduced" if args.reduced else "full"
        result["seconds"] = round(time.perf_counter() - t0, 1)
        with open(os.path.join(args.out, f"{name}.json"), "w") as f:
            json.dump(result, f, indent=1)
        print(f"{name}: {result['seconds']} s", flush=True)


if __name__ == "__main__":
    main()
