"""Ask llama.cpp itself, and write what it said to lessonlib/data/llamacpp_results.json.

    .venv-engine/bin/python scripts/llamacpp_results.py      (after make engine)

Notebooks 01, 05, 06 and 10 print these results beside lessonlib's own numbers (students have no
engine: the file is committed); tests/test_llamacpp.py checks the file against a fresh run.

- caches: for real attention shapes (zero-weight GGUF files written by
  gguf.write_model_gguf), the KV caches llama.cpp allocates at the contexts and settings
  the notebooks discuss: cells, streams, layers and MiB of each cache, as the engine logs them.
- compute: notebook 01's compute buffer, the tiny Qwen2-vocabulary model (its config's shape,
  zero weights) at -c 65536 with -ub 128 and 512, flash attention on and off: the MiB the
  engine reserves, to the four decimals it logs when the context is freed.
- logits: the tiny model of notebook 10 exported with its weights (tinylm.export_gguf), its
  next-token logits in llama.cpp against lessonlib.tinylm's at every position: the largest
  difference and how often the two agree on the top token, within and past the trained length,
  with llama.cpp's own RoPE settings; and two runs that should not agree (YaRN without
  truncation, and an export without the pair permutation).
- needles: notebook 10's needle grid (scripts/tinylm_experiments.py's, every model and variant,
  the same haystacks) answered by llama.cpp running the exported models, beside the committed
  torch grid (lessonlib/data/tinylm_results/needles.json).
"""
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "lessonlib" / "data" / "llamacpp_results.json"

# (model, settings): what notebooks 05 and 06 print
CACHE_ROWS = [
    ("Llama-3.1-8B", dict(n_ctx=8192)),
    ("Llama-3.1-8B", dict(n_ctx=8192, kv_type="q8_0")),
    ("Llama-3.1-8B", dict(n_ctx=1000)),
    ("Mistral-7B", dict(n_ctx=16384)),
    ("Qwen2.5-7B-Instruct", dict(n_ctx=16384)),
    ("Gemma-3-27B", dict(n_ctx=8192)),
    ("Gemma-3-27B", dict(n_ctx=8192, swa_full=True)),
    ("Gemma-3-27B", dict(n_ctx=8192, n_seq=4)),
    ("Gemma-3-27B", dict(n_ctx=8192, n_seq=4, kv_unified=True)),
    ("gpt-oss-20b", dict(n_ctx=16384)),
]
# (model, n_ctx, n_ubatch, flash_attn): what notebook 01 prints
COMPUTE_ROWS = [("tiny-random-qwen2vocab", 65536, ub, fa) for fa in (True, False)
                for ub in (128, 512)]
TRAINED = 256


def _caches(directory):
    from lessonlib import llamacpp
    from lessonlib.models import gguf
    from lessonlib.models.configs import load_config
    files, rows = {}, []
    for name, settings in CACHE_ROWS:
        if name not in files:
            files[name] = gguf.write_model_gguf(os.path.join(directory, f"{name}.gguf"),
                                                     load_config(name))
        kv_type = settings.get("kv_type", "f16")
        kw = {k: v for k, v in settings.items() if k != "kv_type"}
        m = llamacpp.allocations(files[name], type_k=kv_type, type_v=kv_type,
                                 flash_attn=kv_type != "f16", **kw)
        rows.append({"model": name, "settings": settings, "n_ctx": m.n_ctx, "caches": [
            {"kind": c.kind, "cells": c.cells, "streams": c.streams, "layers": c.layers,
             "mib": c.mib, "type": c.type_k} for c in m.caches]})
    return rows


def _compute(directory):
    from lessonlib import llamacpp
    from lessonlib.models import gguf
    from lessonlib.models.configs import load_config
    files, rows = {}, []
    for name, n_ctx, ub, fa in COMPUTE_ROWS:
        if name not in files:
            cfg = load_config(name)
            files[name] = gguf.write_model_gguf(
                os.path.join(directory, f"{name}.gguf"), cfg, hidden_size=cfg["hidden_size"],
                intermediate_size=cfg["intermediate_size"], vocab_size=cfg["vocab_size"])
        m = llamacpp.allocations(files[name], n_ctx, n_ubatch=ub, flash_attn=fa)
        rows.append({"model": name, "n_ctx": n_ctx, "n_ubatch": ub, "flash_attn": fa,
                     "mib": m.compute_mib["CPU"]})
    return rows


def _logits(directory):
    import numpy as np
    import torch
    from lessonlib import kvtask, llamacpp, tinylm
    model = tinylm.load_tinylm()
    path = tinylm.export_gguf(model, os.path.join(directory, "tinylm.gguf"))
    tokens = [int(t) for t in kvtask.retrieval_document(3, 2 * TRAINED).tokens]

    def reference(n, scaling=None):
        rope = None if scaling is None else tinylm.with_rope_scaling(model.config, scaling)
        with torch.no_grad():
            return model(torch.tensor([tokens[:n]]), rope=rope)[0].double().numpy()

    def yarn(factor, **extra):
        return {"rope_type": "yarn", "factor": factor,
                "original_max_position_embeddings": TRAINED, **extra}

    runs = [  # name, tokens, lessonlib's rope_scaling, llama.cpp's arguments, file
        ("trained length, F32 cache", TRAINED, None, dict(kv_type="f32"), path),
        ("trained length, F16 cache", TRAINED, None, dict(kv_type="f16"), path),
        ("2x trained, plain RoPE", 2 * TRAINED, None, {}, path),
        ("2x trained, linear 2", 2 * TRAINED, {"rope_type": "linear", "factor": 2.0},
         dict(rope_freq_scale=0.5), path),
        ("2x trained, YaRN 2", 2 * TRAINED, yarn(2.0),
         dict(rope_scaling_type=2, rope_freq_scale=0.5, yarn_orig_ctx=TRAINED), path),
        ("2x trained, YaRN 4", 2 * TRAINED, yarn(4.0),
         dict(rope_scaling_type=2, rope_freq_scale=0.25, yarn_orig_ctx=TRAINED), path),
        ("2x trained, YaRN 2 with truncate: false", 2 * TRAINED, yarn(2.0, truncate=False),
         dict(rope_scaling_type=2, rope_freq_scale=0.5, yarn_orig_ctx=TRAINED), path),
    ]
    saved = tinylm.neox_to_adjacent_pairs
    tinylm.neox_to_adjacent_pairs = lambda w, n: np.asarray(w)
    try:
        unpermuted = tinylm.export_gguf(model, os.path.join(directory, "unpermuted.gguf"))
    finally:
        tinylm.neox_to_adjacent_pairs = saved
    runs.append(("trained length, Q and K not permuted", TRAINED, None, dict(kv_type="f32"),
                 unpermuted))
    rows = []
    for name, n, scaling, kw, file in runs:
        out, _ = llamacpp.logits(file, tokens[:n], **kw)
        ref = reference(n, scaling)
        rows.append({"name": name, "tokens": n,
                     "max_abs_diff": float(f"{np.abs(out - ref).max():.3g}"),
                     "argmax_agree": round(float((out.argmax(1) == ref.argmax(1)).mean()), 4)})
    return rows


def _needles(directory):
    sys.path.insert(0, str(ROOT / "scripts"))
    import tinylm_experiments as experiments
    from lessonlib import kvtask, llamacpp, tinylm, tinylm_results
    models = {n: tinylm.load_tinylm(p) for n, p in experiments.MODELS.items()}
    files = {n: tinylm.export_gguf(m, os.path.join(directory, f"needles-{n}.gguf"))
             for n, m in models.items()}
    grid = experiments.FULL["needles"]
    tok, sessions = kvtask.KVTokenizer(), []

    def ask_for(model_name, model, variant):
        rope = experiments.rope_for(model, variant)  # None: the file's own (PI's linear 2)
        scaling = None if rope is None else rope.get("rope_scaling")
        session = llamacpp.Session(files[model_name], max(grid["lengths"]),
                                   **llamacpp.rope_arguments(scaling))
        sessions.append(session)

        def ask(prompt):
            ids = [kvtask.BOS] + list(prompt.tokens) + tok.encode(prompt.question)
            return "pass: " + tok.decode([int(session.last_logits(ids).argmax())])
        return ask

    try:
        engine = experiments.run_needles(models, grid, ask_for)
    finally:
        for session in sessions:
            session.close()
    torch_grid = tinylm_results.load_results("needles")
    rows = []
    for ours, theirs in zip(engine["cells"], torch_grid["cells"]):
        assert (ours["model"], ours["variant"]) == (theirs["model"], theirs["variant"])
        rows.append({"model": ours["model"], "variant": ours["variant"],
                     "rope_scaling": ours["rope_scaling"],
                     "found_fraction": ours["found_fraction"],
                     "torch_found_fraction": theirs["found_fraction"]})
    return {"lengths": engine["lengths"], "depths": engine["depths"],
            "trials": engine["trials"], "cells": rows}


def measure(directory):
    import llama_cpp
    return {"engine": f"llama-cpp-python {llama_cpp.__version__}",
            "caches": _caches(directory), "compute": _compute(directory),
            "logits": _logits(directory),
            "needles": _needles(directory)}


def main():
    with tempfile.TemporaryDirectory() as d:
        results = measure(d)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}: {len(results['caches'])} cache rows, "
          f"{len(results['compute'])} compute buffers, {len(results['logits'])} logit "
          f"comparisons ({results['engine']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
