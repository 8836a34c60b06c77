"""Ask vLLM itself, and write what it said to lessonlib/data/vllm_results.json.

    make vllm-results        (or .venv-vllm/bin/python scripts/vllm_results.py after make vllm)

Notebooks 05, 06 and 08 and ``python -m lessonlib inspect`` print vLLM's numbers; students have
no vLLM, so the file is committed. tests/test_vllm.py checks the file against a fresh run, and
its tests without the engine check lessonlib against the file everywhere.

- defaults: ``gpu_memory_utilization`` and the KV cache block size, from vLLM's CacheConfig.
- max_model_len: for every shipped config and the scaling variants below, the length vLLM
  serves by default, and for each requested length whether vLLM accepts it.
- logits: notebook 10's tiny model exported as a Hugging Face checkpoint
  (tinylm.export_hf_checkpoint) and run in vLLM: its log-probabilities at every position against
  lessonlib.tinylm's, with plain RoPE, linear x2 and YaRN x4 through vLLM's own rotary embedding,
  and plain RoPE forced past its 256 trained positions (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1): its
  cos/sin table has 256 rows, and rows past it read memory beyond the table (NaN or garbage,
  differing from run to run: the file records how many rows were wrong).
- blocks: for the shipped configs' shapes, the blocks one request may hold in each kind of
  layer (full, sliding window, MLA) and the bytes of one block, by vLLM's own KV cache specs, at
  the contexts and tokens in flight the notebooks discuss.
- streams: one long prompt prefilled in chunks through vLLM's KVCacheManager: after each chunk,
  the live and null blocks of its block table per kind of layer (sliding layers free what falls
  behind the window). prefix: prompts sharing prefixes sent one after another: the tokens vLLM's
  prefix cache hands each.
- capacity: how vLLM's get_kv_cache_configs lays out a cache budget for those shapes (blocks in
  the pool, KV cache groups with their padding, requests of max_model_len at once).
- paged: notebook 11's chat stream (lessonlib.paged.chat_stream(4)) replayed through vLLM's own
  KVCacheManager (lessonlib.vllm.replay_stream), a pool of 16 blocks of 4 tokens, for full
  attention, a sliding window of every W from 1 to 16, and the hybrid of both: after each step,
  the hit, every live request's block table per KV cache group and the free queue.
"""
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
RESULTS = ROOT / "lessonlib" / "data" / "vllm_results.json"

# Shipped configs vLLM can read (tiny-gemma3-swa and the hybrid example have no model_type or
# are a lessonlib test shape, not a published file).
CONFIGS = ["DeepSeek-V3", "Gemma-3-27B", "Llama-3.1-8B", "Llama-3.2-1B", "Mistral-7B",
           "Phi-3.5-mini-instruct", "Qwen2.5-7B-Instruct", "gpt-oss-20b", "tiny-random-qwen2vocab"]
# Requests tried against every config: within, at and past the derived length.
REQUESTS = [4096, 8192, 12000, 16384, 16385, 32768, 32769, 131072, 163840, 262144]
_LLAMA_SHAPE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                "hidden_size": 256, "intermediate_size": 512, "vocab_size": 1000,
                "rope_theta": 10000.0, "max_position_embeddings": 4096}
# (name, rope_scaling and top-level keys over the tiny Llama shape): each scaling type, with and
# without a max_position_embeddings already scaled
VARIANTS = [
    ("plain", {}),
    ("linear x4", {"rope_scaling": {"rope_type": "linear", "factor": 4.0}}),
    ("dynamic x4", {"rope_scaling": {"rope_type": "dynamic", "factor": 4.0}}),
    ("yarn x4, L0 = 4096, max_position_embeddings 4096",
     {"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                       "original_max_position_embeddings": 4096}}),
    ("yarn x4, L0 = 4096, max_position_embeddings 16384",
     {"max_position_embeddings": 16384,
      "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                       "original_max_position_embeddings": 4096}}),
    ("llama3 x8, L0 = 4096, max_position_embeddings 32768",
     {"max_position_embeddings": 32768,
      "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                       "high_freq_factor": 4.0, "original_max_position_embeddings": 4096}}),
    ("linear x2, model_max_length 6000", {"model_max_length": 6000,
                                          "rope_scaling": {"rope_type": "linear", "factor": 2.0}}),
]


def variant_config(extra):
    return {**_LLAMA_SHAPE, **extra}


def _lengths(V, config):
    """vLLM's default max_model_len, and for each request the length it serves or None (refused)."""
    accepted = {}
    for n in REQUESTS:
        try:
            accepted[str(n)] = V.max_model_len(config, n)
        except ValueError:
            accepted[str(n)] = None
    return {"default": V.max_model_len(config), "requested": accepted}


def _blocks(V, config):
    return {f"{n}/{f}": V.request_blocks(config, n, max_in_flight_tokens=f)
            for n in (1000, 4096, 32768, 131072) for f in (0, 2048, 4096, 8192, 16384)}


TRAINED = 256
WRONG = 1e-3  # a row whose log-probabilities differ by more (or hold a NaN) is wrong
# (label, rope_scaling, max_position_embeddings in the file, max_model_len, allow_long)
LOGIT_RUNS = [("plain RoPE", None, None, 256, False),
              ("linear x2", {"rope_type": "linear", "factor": 2.0}, None, 512, False),
              ("YaRN x4", {"rope_type": "yarn", "factor": 4.0}, 1024, 1024, False),
              ("plain RoPE past its table", None, None, 320, True)]


def _logits(directory):
    """Each run: vLLM's prompt log-probabilities for one prompt of max_model_len - 1 random
    tokens against lessonlib.tinylm's, within and past the trained length."""
    import numpy as np
    import torch
    from lessonlib import tinylm
    from lessonlib import vllm as V
    model = tinylm.load_tinylm()
    rng = np.random.default_rng(0)
    out = {}
    for label, rope_scaling, mpe, n_max, allow_long in LOGIT_RUNS:
        folder = tinylm.export_hf_checkpoint(model, os.path.join(directory, str(len(out))),
                                             rope_scaling, mpe)
        tokens = rng.integers(0, model.config["vocab_size"], n_max - 1).tolist()
        engine = V.prompt_logprobs(folder, [tokens], max_model_len=n_max,
                                   allow_long=allow_long)[0]
        rope = tinylm.hf_config(model, rope_scaling, mpe) if rope_scaling else None
        with torch.no_grad():
            ours = torch.log_softmax(model(torch.tensor([tokens]), rope=rope).double(), -1)
        ours = ours[0, :-1].numpy()  # row i: token i + 1 given 0..i, as vLLM's rows
        within, past = slice(0, TRAINED), slice(TRAINED, None)  # row i reads positions 0..i
        diff = np.abs(engine - ours).max(axis=1)
        wrong = np.isnan(engine).any(axis=1) | (np.nan_to_num(diff, nan=np.inf) > WRONG)
        out[label] = {
            "positions": len(tokens), "max_model_len": n_max, "allow_long": allow_long,
            "max_abs_diff_within": float(diff[within].max()),
            "wrong_rows_within": int(wrong[within].sum()),
            "rows_past": int(len(diff[past])), "wrong_rows_past": int(wrong[past].sum()),
            "top1_agreement_past": float((engine[past].argmax(1) == ours[past].argmax(1)).mean())
            if len(diff) > TRAINED else None}
    return out


CAPACITY_SHAPES = ["Llama-3.1-8B", "Mistral-7B", "gpt-oss-20b", "Gemma-3-27B",
                   "Llama-3-8B-hybrid-3to1", "DeepSeek-V3"]
CAPACITY_SETTINGS = [(n, gib, f) for n in (32768, 131072) for gib in (8, 40) for f in (4096, 16384)]


def _capacity(V):
    from lessonlib.models.configs import load_config
    return {name: {f"{n}/{gib}GiB/{f}": V.cache_capacity(load_config(name), n, gib * 2**30,
                                                            max_in_flight_tokens=f)
                   for n, gib, f in CAPACITY_SETTINGS} for name in CAPACITY_SHAPES}


STREAMS = [("Mistral-7B", 10000, 2048), ("gpt-oss-20b", 1000, 256), ("Gemma-3-27B", 5000, 1000)]
PREFIX_PROMPTS = [list(range(100)), list(range(80)) + [999] * 30, list(range(100)),
                  list(range(33)), list(range(32)), [5] + list(range(1, 100)), list(range(200))]

PAGED_BLOCK_SIZE, PAGED_NUM_BLOCKS = 4, 16
PAGED_WINDOWS = range(1, 17)  # W from a single token to four blocks


def _paged(V):
    """vLLM's cache after each step of chat_stream(4), per kind and window (keys str(W))."""
    from lessonlib import paged
    ops = paged.chat_stream(PAGED_BLOCK_SIZE)

    def run(kind, W=None):
        return V.replay_stream(ops, kind=kind, num_blocks=PAGED_NUM_BLOCKS,
                               block_size=PAGED_BLOCK_SIZE, sliding_window=W)
    return {"block_size": PAGED_BLOCK_SIZE, "num_blocks": PAGED_NUM_BLOCKS,
            "stream": f"chat_stream({PAGED_BLOCK_SIZE})", "full": run("full"),
            **{kind: {str(W): run(kind, W) for W in PAGED_WINDOWS} for kind in ("swa", "hybrid")}}


def measure(directory=None):
    from lessonlib import vllm as V
    from lessonlib.models.configs import load_config
    out = {"vllm": V.version(), "defaults": V.engine_defaults(), "max_model_len": {},
           "variants": {}, "blocks": {}}
    for name in CONFIGS:
        out["max_model_len"][name] = _lengths(V, load_config(name))
        out["blocks"][name] = _blocks(V, load_config(name))
    out["blocks"]["Llama-3-8B-hybrid-3to1"] = _blocks(V, load_config("Llama-3-8B-hybrid-3to1"))
    for label, extra in VARIANTS:
        out["variants"][label] = _lengths(V, variant_config(extra))
    out["capacity"] = _capacity(V)
    from lessonlib.models.configs import load_config
    out["streams"] = {f"{name}/{n}/{chunk}": V.window_stream(load_config(name), n, chunk)
                      for name, n, chunk in STREAMS}
    out["prefix"] = V.prefix_hits(load_config("Llama-3.1-8B"), PREFIX_PROMPTS)
    out["paged"] = _paged(V)
    if directory is None:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            out["logits"] = _logits(d)
    else:
        out["logits"] = _logits(directory)
    return out


def main():
    results = measure()
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}: vLLM {results['vllm']}, "
          f"{len(results['max_model_len'])} configs, {len(results['variants'])} variants")


if __name__ == "__main__":
    main()
