"""What a model costs at a context, in an engine: the report behind ``python -m lessonlib inspect``.

``report(config, contexts=...)`` gathers, from one config.json dict (or the dict a GGUF file's
metadata maps to, ``lessonlib.models.gguf``), what the course's rules say about it: the attention
shape and which layers slide; the KV bytes per token; the whole cache at each context by each
engine's own rule (``kv_cache.kv_cache_bytes``), with the reason for every difference from the
exact count; the RoPE scaling in plain words (``rope.scaling_parameters``); the longest context
each engine derives from the file; warnings; and, given a GPU's memory, how many tokens and
sequences fit beside the weights; given a named GPU, the decode roofline: the bytes each step
reads and the tokens per second its memory bandwidth allows (``traffic.decode_roofline``). It
returns one JSON-able dict (bytes as ints); ``format_report`` turns it into the compact text the
command prints.

Nothing here is estimated by a rule of thumb: every number comes from a tested function of
lessonlib, and every assumption behind the GPU budget is listed in the report.
"""
import math
import re
import textwrap

import numpy as np

from . import _validate as check
from . import kv_cache as kc
from . import rope
from ._validate import positive_int
from .kv_cache import LLAMACPP_N_UBATCH, VLLM_BLOCK_SIZE, VLLM_GPU_MEMORY_UTILIZATION
from .models import as_model, text_config
from .models.describe import (config_warnings, gguf_rope_freqs, learned_sinks, llamacpp_n_ctx_train,
                              max_position_embeddings, mla_dimensions, rope_layer_types)
from .traffic import GPUS, decode_roofline, format_bytes

__all__ = ["report", "format_report", "parse_size", "parse_context", "KV_TYPE_CHOICES",
           "ENGINE_CHOICES", "GPU_CHOICES"]

ENGINE_CHOICES = kc.BUDGET_ENGINES
"""The engines ``report`` can size for: ``kv_cache.BUDGET_ENGINES``, ("llama.cpp", "vllm",
"ideal")."""
KV_TYPE_CHOICES = ("f16", "bf16", "q8_0", "q4_0", "fp8")
"""The cache types ``report`` can size: ("f16", "bf16", "q8_0", "q4_0", "fp8")."""
GPU_CHOICES = tuple(GPUS)
"""The GPUs ``report`` draws a decode roofline for: ``traffic.GPUS``' keys ("H100-SXM", "H200",
"RTX-4090", ...)."""
WIDTH = 100  # prose lines of the text report wrap here (tables do not)

_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
          "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_CONTEXT_UNITS = {"": 1, "k": 2**10, "m": 2**20}

def parse_size(text, name="gpu_memory"):
    """Bytes of a size written with a unit: "24GiB", "80 GB", "24G" (G, GiB: 2**30; GB: 10**9).
    A bare number is refused (bytes or GiB would be a guess), and so is an unknown unit: the
    error names ``name``."""
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ValueError(f"{name} must be a size such as '24GiB' or '80GB', got {check.describe(text)}")
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _UNITS:
        raise ValueError(f"{name} must be a number with a unit (GiB, GB, MiB, MB, TiB, TB, B), "
                         f"such as '24GiB' or '80GB', got {text!r}")
    value = float(m.group(1)) * _UNITS[unit]
    if value < 1 or not math.isfinite(value):
        raise ValueError(f"{name} must be at least 1 byte, got {text!r}")
    return int(value)


def parse_context(text, name="context"):
    """Tokens of a context: 32768, "32768", "32K" (K = 1,024 tokens, as context sizes are named:
    128K = 131,072) or "1M"."""
    if isinstance(text, bool):
        raise ValueError(f"{name} must be a number of tokens such as 32768 or 128K, got {text!r}")
    if isinstance(text, int):
        return positive_int(name, text)
    m = re.fullmatch(r"\s*([0-9]+)\s*([kKmM]?)\s*", str(text)) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"{name} must be a whole number of tokens such as 32768 or 128K, "
                         f"got {text!r}")
    return positive_int(name, int(m.group(1)) * _CONTEXT_UNITS[m.group(2).lower()])


# --------------------------------------------------------------------------- shape and layers

def _ranges(indices):
    """[0, 1, 2, 4, 5] -> '0-2, 4-5'."""
    out, start, prev = [], None, None
    for i in indices:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)


def _pattern(windows):
    """'every layer', 'none', '5 of every 6 (global: 5, 11, ...)' or the ranges."""
    local = [w is not None for w in windows]
    n = len(local)
    if all(local):
        return "every layer"
    if not any(local):
        return "none"
    for period in range(2, n + 1):
        if all(local[i] == local[i % period] for i in range(n)) and period < n:
            k = sum(local[:period])
            return f"{k} of every {period} layers"
    return _ranges([i for i, w in enumerate(local) if w is not None])


def _shape(cfg):
    shape = kc.model_shape(cfg)
    mla = mla_dimensions(cfg)
    if mla is not None:
        kind = "MLA"
    elif shape.kv_heads == shape.heads:
        kind = "MHA"
    elif shape.kv_heads == 1:
        kind = "MQA"
    else:
        kind = "GQA"
    return {"layers": shape.layers, "heads": shape.heads, "kv_heads": shape.kv_heads,
            "head_dim": shape.head_dim, "v_head_dim": shape.v_head_dim,
            "queries_per_kv_head": shape.heads // shape.kv_heads, "attention": kind, "mla": mla}


def _layers(cfg):
    windows = kc.layer_windows(cfg)
    sliding = [i for i, w in enumerate(windows) if w is not None]
    full = [i for i, w in enumerate(windows) if w is None]
    W = windows[sliding[0]] if sliding else None
    return {"sliding": sliding, "global": full, "window": W, "pattern": _pattern(windows),
            "sinks": learned_sinks(cfg)}


# --------------------------------------------------------------------------- caches

def _engines_for(kv_type, engines):
    return [e for e in engines if e in kc.KV_TYPES[kv_type].engines]


def _cache_rows(cfg, n, *, engine, kv_type, n_seq, W, in_flight):
    """The rows of one context and engine: llama.cpp with and without --swa-full when some
    layers slide; each with the cells per layer and the reason it differs from the exact count."""
    if engine == "llama.cpp" and all(w is None for w in kc.llamacpp_layer_windows(cfg)):
        W = None  # llama.cpp's architecture for this model type runs every layer global
    variants = [False, True] if engine != "ideal" and W is not None else [False]
    rows = []
    for swa_full in variants:
        n_ctx = n * n_seq if engine == "llama.cpp" else n
        size = kc.kv_cache_bytes(cfg, n_ctx, engine=engine, n_seq=n_seq, kv_type=kv_type,
                                 swa_full=swa_full, n_ubatch=LLAMACPP_N_UBATCH,
                                 block_size=VLLM_BLOCK_SIZE, max_in_flight_tokens=in_flight)
        label = {"llama.cpp": "llama.cpp", "vllm": "vLLM", "ideal": "exact"}[engine]
        if swa_full:
            label += " --swa-full" if engine == "llama.cpp" else " --disable-hybrid-kv-cache-manager"
        rows.append({"context": n, "n_seq": n_seq, "kv_type": kv_type, "engine": engine,
                     "swa_full": swa_full, "label": label, "bytes": size.total_bytes,
                     "global_cells": size.global_layers.cells if size.global_layers.n_layers else None,
                     "sliding_cells": size.sliding_layers.cells if size.sliding_layers.n_layers else None,
                     "why": _why(engine, n, n_seq, W, size, swa_full, in_flight)})
    return rows


def _why(engine, n, n_seq, W, size, swa_full, in_flight):
    g, s = size.global_layers, size.sliding_layers
    exact = n * n_seq
    parts = []
    if engine == "ideal":
        parts.append(f"{exact:,} tokens in every global layer" if g.n_layers else "")
        if s.n_layers:
            parts.append(f"min(context, W = {W:,}) x {n_seq} = {s.cells:,} in sliding layers")
        return "; ".join(p for p in parts if p)
    if engine == "llama.cpp":
        if g.n_layers:
            padded = "" if g.cells == n * n_seq else " (rounded up to a multiple of 256)"
            parts.append(f"-c {n * n_seq:,}" + (f" -np {n_seq}" if n_seq > 1 else "")
                         + f": {g.cells:,} cells per global layer{padded}")
        if s.n_layers:
            if swa_full:
                parts.append(f"--swa-full: sliding layers get all {s.cells:,} cells too")
            else:
                parts.append(f"sliding layers pad(min(c, W x seqs + ub {LLAMACPP_N_UBATCH}), 256)"
                             f" = {s.cells:,} cells (window {W:,} plus one micro-batch, "
                             f"padded to 256)")
        return "; ".join(parts)
    # vLLM
    if g.n_layers:
        blocks = g.blocks // n_seq
        pad = blocks * VLLM_BLOCK_SIZE - n
        parts.append(f"{blocks:,} blocks of {VLLM_BLOCK_SIZE} per request per global layer"
                     + (f" ({pad} slots of padding)" if pad else ""))
    if s.n_layers:
        if swa_full:
            parts.append("hybrid manager off: sliding layers sized as global ones")
        else:
            blocks = s.blocks // n_seq
            parts.append(f"sliding layers cdiv(min(W - 1 + {in_flight:,}, n), 16) + 1 = "
                         f"{blocks:,} blocks per request (the window's W - 1 earlier tokens and "
                         f"{in_flight:,} in flight, plus the block being written)")
    if n_seq > 1:
        parts.append(f"x {n_seq} requests")
    return "; ".join(parts)


def _per_token(cfg, kv_types):
    layers = kc.model_shape(cfg).layers
    out = {}
    for t in kv_types:
        cell = kc.kv_cell_bytes(cfg, t)
        out[t] = {"per_layer": cell, "all_layers": cell * layers}
    return out


# --------------------------------------------------------------------------- RoPE

def _num(x):
    """500,000 for a whole float, else up to 6 significant digits."""
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:.6g}"


def _rope_words(cfg, layer_type):
    sp = rope.scaling_parameters(cfg, layer_type=layer_type)
    r, b, s, L0 = sp.rotary_dim, sp.base, sp.factor, sp.original_max
    pairs = r // 2
    head = kc.model_shape(cfg).head_dim
    dims = f"{r} of {head} head dims" if r != head else f"all {head} head dims"
    base = f"base {_num(b)}, {dims} rotated ({pairs} pairs)"
    lines = []
    t = sp.rope_type
    if t == "default":
        lines.append(f"plain RoPE, no scaling: {base}")
    elif t == "linear":
        lines.append(f"linear (position interpolation), factor {s:g}: every pair turns {s:g}x "
                     f"slower; {base}")
    elif t == "dynamic":
        lines.append(f"dynamic NTK, factor {s:g}: past {sp.max_position_embeddings:,} positions the "
                     f"base grows with the sequence length (HF only: vLLM fixes it at the "
                     f"longest length, llama.cpp has no dynamic NTK); {base}")
    elif t == "yarn":
        low, high = sp.yarn_band
        lines.append(f"YaRN, factor {s:g}, trained length L0 = {L0:,} ({sp.original_max_key}); "
                     f"{base}")
        lines.append(f"  pairs below {low:g} keep their frequency (they turn more than "
                     f"{sp.beta_fast:g} times within L0), pairs above {_num(high)} are divided by "
                     f"{s:g} (fewer than {sp.beta_slow:g} turn), a linear ramp between"
                     + ("" if sp.truncate else " (band ends not rounded: truncate false)"))
        lines.append(f"  attention factor (mscale) {sp.attention_factor:.4f} on cos and sin")
        if as_model(cfg).model_type.startswith("deepseek") and sp.mscale_all_dim:
            m = rope.yarn_mscale(s, sp.mscale_all_dim)
            lines.append(f"  DeepSeek's attention also scales its softmax by (0.1 x "
                         f"mscale_all_dim x ln s + 1)^2 = {m * m:.4f}")
    elif t == "llama3":
        labels = [str(x) for x in rope.llama3_regimes(cfg)]
        n_high, n_mid = labels.count("high"), labels.count("medium")
        n_low = labels.count("low")
        lines.append(f"llama3, factor {s:g}, trained length L0 = {L0:,}; {base}")
        lines.append(f"  {n_high} pairs with wavelength under L0 / {sp.high_freq_factor:g} = "
                     f"{L0 / sp.high_freq_factor:,.0f} keep their frequency; {n_low} pairs over "
                     f"L0 / {sp.low_freq_factor:g} = {L0 / sp.low_freq_factor:,.0f} are divided "
                     f"by {s:g}; {n_mid} between are blended")
    elif t == "longrope":
        lines.append(f"longrope, factor {s:g}, trained length L0 = {L0:,} "
                     f"({sp.original_max_key}); {base}")
        lines.append(f"  short_factor (one divisor per pair) for sequences up to {L0:,}, "
                     f"long_factor beyond; attention factor {sp.attention_factor:.4f}")
        lines.append("  HF switches per forward pass on the sequence's length; llama.cpp picks "
                     "long once, when the context per sequence exceeds L0")
    return {"layer_type": layer_type, "rope_type": t, "base": b, "rotary_dim": r, "factor": s,
            "original_max_position_embeddings": L0, "attention_factor": sp.attention_factor,
            "yarn_band": list(sp.yarn_band) if sp.yarn_band else None, "words": lines}


_NO_L0 = "original_max_position_embeddings is required"


def _rope_freqs_words(cfg):
    """A GGUF's rope_freqs tensor: llama.cpp divides pair i's frequency by factor i (how its
    converter stores llama3 scaling, with no rope.scaling key)."""
    f, plain = gguf_rope_freqs(cfg)
    sp = rope.scaling_parameters(plain)
    top = float(f.max())
    kept, divided = int(np.sum(np.isclose(f, 1.0))), int(np.sum(np.isclose(f, top)))
    head = kc.model_shape(cfg).head_dim
    if len(f) != sp.rotary_dim // 2:
        raise ValueError(f"the GGUF's rope_freqs tensor has {len(f)} factors for "
                         f"{sp.rotary_dim // 2} rotary pairs")
    words = [f"per-pair divisors from the GGUF's rope_freqs tensor (how llama.cpp's converter "
             f"stores llama3 scaling; no rope.scaling key): base {_num(sp.base)}, "
             f"{sp.rotary_dim} of {head} head dims rotated ({len(f)} pairs)",
             f"  {kept} pairs keep their frequency, {divided} are divided by {_num(round(top, 6))}, "
             f"{len(f) - kept - divided} between are blended"]
    return {"layer_type": None, "rope_type": "rope_freqs", "base": sp.base,
            "rotary_dim": sp.rotary_dim, "factor": top, "original_max_position_embeddings": None,
            "attention_factor": 1.0, "yarn_band": None, "words": words}


def _rope(cfg):
    """The words of each layer type's RoPE; a YaRN or longrope block without its trained length
    is reported (the warning says what HF and vLLM do instead), any other bad key raises."""
    if gguf_rope_freqs(cfg)[0] is not None:
        return [_rope_freqs_words(cfg)]
    out = []
    for lt in rope_layer_types(cfg):
        try:
            out.append(_rope_words(cfg, lt))
        except ValueError as err:
            if _NO_L0 not in str(err):
                raise
            out.append({"layer_type": lt, "rope_type": None, "words": [
                f"not read: {err} (lessonlib needs the trained length L0; it does not guess)"]})
    return out


# --------------------------------------------------------------------------- limits, warnings

def _limits(cfg):
    text = text_config(cfg)
    out = {"hf_max_position_embeddings": max_position_embeddings(cfg)}
    try:
        out["vllm_max_model_len"] = rope.vllm_max_model_len(text)
        out["vllm_derived_max_model_len"] = rope.derived_max_model_len(text)
    except ValueError as err:
        if "none of the length keys" not in str(err) and _NO_L0 not in str(err):
            raise
        out["vllm_max_model_len"] = out["vllm_derived_max_model_len"] = None
    # llama.cpp: -c 0 takes n_ctx_train, the GGUF's context_length, which its converter writes
    # from max_position_embeddings; a longer -c runs, with a warning, as far as RoPE allows
    out["llamacpp_n_ctx_train"] = llamacpp_n_ctx_train(cfg)
    return out


def _warnings(cfg, contexts, limits, layers):
    out = config_warnings(cfg)
    W = layers["window"]
    top = max(v for v in limits.values() if v is not None) if any(
        v is not None for v in limits.values()) else None
    if W is not None and top is not None and W >= top:
        out.append(f"sliding_window = {W:,} is no shorter than the longest context ({top:,}): the "
                   "window never drops a token, yet engines still size those layers by their "
                   "sliding rule")
    for n in contexts:
        if top is not None and n > top:
            out.append(f"context {n:,} is past every limit derived from the file (longest "
                       f"{top:,}): positions beyond it were never trained or scaled for")
        elif limits["vllm_derived_max_model_len"] is not None \
                and n > limits["vllm_derived_max_model_len"]:
            out.append(f"context {n:,} is past vLLM's derived max_model_len "
                       f"({limits['vllm_derived_max_model_len']:,}): vLLM refuses it unless "
                       "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
        elif limits["vllm_max_model_len"] is not None and n > limits["vllm_max_model_len"]:
            out.append(f"context {n:,} is past the {limits['vllm_max_model_len']:,} vLLM serves "
                       "by default (longrope): pass --max-model-len")
    return out


# --------------------------------------------------------------------------- GPU budget

def _budget(cfg, gpu_memory, weights_bytes, weights_source, contexts, engines, kv_types, n_seq,
            in_flight):
    """Per engine and KV type: the bytes left for the cache, the tokens it holds (one sequence)
    and how many sequences of each context fit at once (``kv_cache.gpu_budget``)."""
    out = {"gpu_memory": gpu_memory, "weights_bytes": weights_bytes,
           "weights_source": weights_source, "engines": [], "assumptions": []}
    a = out["assumptions"]
    a.append(f"weights: {format_bytes(weights_bytes)} ({weights_source}), all on the GPU")
    a.append("max tokens: the longest single sequence whose cache fits (what vLLM's start-up "
             "line 'GPU KV cache size: N tokens' counts for a model without sliding layers; "
             "for llama.cpp, the largest -c; 'any length' when every layer slides, so the "
             "cache stops growing); seqs of n: sequences of n tokens at once")
    reserves = {"vllm": f"gpu_memory_utilization {VLLM_GPU_MEMORY_UTILIZATION}",
                "llama.cpp": f"compute buffer at -ub {LLAMACPP_N_UBATCH} with flash attention",
                "ideal": "nothing (the exact cache alone)"}
    for b in kc.gpu_budget(cfg, gpu_memory, weights_bytes, contexts=contexts, engines=engines,
                           kv_types=kv_types, max_in_flight_tokens=in_flight):
        out["engines"].append({"engine": b.engine, "kv_type": b.kv_type,
                               "usable_bytes": max(b.room_bytes, 0), "reserve": reserves[b.engine],
                               "max_tokens": b.max_tokens,
                               "sequences": {str(n): k for n, k in b.sequences}})
    if "vllm" in engines:
        a.append(f"vLLM: the cache gets gpu_memory x {VLLM_GPU_MEMORY_UTILIZATION} (its default "
                 "--gpu-memory-utilization) minus the weights; the activation peak, CUDA graphs "
                 "and other non-torch memory that vLLM measures at start-up are not subtracted, "
                 f"so its real figure is lower (blocks of {VLLM_BLOCK_SIZE}, one request per "
                 "sequence, and one null block the pool keeps)")
        group_size, groups, padding = kc.vllm_kv_cache_groups(cfg)
        if padding:
            a.append(f"vLLM: layers in KV cache groups of {group_size}, {len(groups)} groups for "
                     f"{len(groups) * group_size - padding} layers: {padding} padding layers "
                     "take memory and hold nothing (kv_cache.vllm_capacity)")
    if "llama.cpp" in engines:
        if _dense(cfg):
            a.append("llama.cpp: gpu_memory minus the weights minus the compute buffer's lower "
                     f"bound at -ub {LLAMACPP_N_UBATCH} with flash attention (kv_cache."
                     "llamacpp_compute_phases: the largest of what attention, the feed-forward "
                     "block and the output need alive at once; the engine's buffer is that or "
                     "up to 28% more on the shapes measured); the CUDA context is not counted; n "
                     "sequences of c tokens are -c n*c -np n")
        else:
            a.append("llama.cpp: gpu_memory minus the weights minus the compute buffer's two "
                     f"largest temporaries at -ub {LLAMACPP_N_UBATCH} with flash attention (kv_"
                     "cache.llamacpp_compute_buffer: the experts' feed-forward block is not "
                     "modelled); the CUDA context and the rest of the graph are not counted; n "
                     "sequences of c tokens are -c n*c -np n")
    if "ideal" in engines:
        a.append("exact: the cache alone, exact tokens, no padding, no reserve")
    if weights_bytes >= gpu_memory:
        out["fits"] = False
    else:
        out["fits"] = True
    return out


# --------------------------------------------------------------------------- decode roofline

def _decode(cfg, gpu, weights_bytes, weights_source, contexts, engines, kv_types, n_seq, *,
            budget):
    """Per context, cache type and engine: the bytes one decode step reads and the tokens per
    second the GPU's bandwidth allows (``traffic.decode_roofline``), with the assumptions (the
    weights' source only when no ``budget`` has said it)."""
    g = GPUS[gpu]
    out = {"gpu": gpu, "name": g.name, "bandwidth": g.bandwidth, "bandwidth_source": g.source,
           "weights_bytes": weights_bytes, "weights_source": weights_source, "rows": [],
           "assumptions": []}
    for n in contexts:
        for t in kv_types:
            for e in _engines_for(t, engines):
                r = decode_roofline(cfg, n, gpu=gpu, engine=e, kv_type=t, batch=n_seq,
                                    weights_bytes=weights_bytes)
                out["rows"].append({"context": n, "n_seq": n_seq, "kv_type": t, "engine": e,
                                    "cache_bytes": r.cache_bytes, "step_bytes": r.step_bytes,
                                    "bytes_per_token": r.bytes_per_token,
                                    "tokens_per_s": r.tokens_per_s, "cache_share": r.cache_share})
    a = out["assumptions"]
    a.append(f"bandwidth: {g.name} {_rate(g.bandwidth)}, the vendor's figure ({g.source}); GB "
             "here is 10^9 bytes and TB/s 10^12 bytes a second, as bandwidth is quoted")
    said = "as the budget counts them" if budget else weights_source
    a.append(f"every step reads the weights once ({_gb(weights_bytes)}, {said}; all of them "
             "counted, though an untied input embedding is read one row per token) and "
             + ("each sequence's KV cache; tokens/s = sequences x bandwidth / bytes a step "
                "reads, the batch's ceiling" if n_seq > 1 else
                "the sequence's KV cache; tokens/s = bandwidth / bytes a step reads")
             + ": activations, logits and kernel gaps are not counted, so real decoding is "
             "slower")
    if "llama.cpp" in engines:
        sliding = any(w is not None for w in kc.llamacpp_layer_windows(cfg))
        a.append("llama.cpp reads what attention is handed, n_kv cells per layer (get_n_kv: the "
                 "highest used cell + 1 rounded up to 256): pad(n, 256) in "
                 + ("a global layer whatever -c is, and every cell of a sliding layer's "
                    "pad(min(n, W + ub), 256), reused as the window moves" if sliding else
                    "every layer whatever -c is")
                 + ("; each sequence its own cells (one stream per sequence)" if n_seq > 1
                    else ""))
    if "vllm" in engines or "ideal" in engines:
        sliding = any(w is not None for w in kc.layer_windows(cfg))
        a.append(("vLLM, as the exact count, reads n tokens per global layer and min(n, W) per "
                  "sliding one: FlashAttention stops at the request's length in its block table "
                  "and a window's start" if sliding else
                  "vLLM, as the exact count, reads n tokens per layer: FlashAttention stops at "
                  "the request's length in its block table")
                 + ", so block padding" + (" and freed blocks are" if sliding else " is")
                 + " not read")
    key = as_model(cfg).experts_key
    if key is not None:
        a.append(f"a mixture of experts ({key}): every expert's weights are counted, as a large "
                 "batch touches them all; one sequence's step reads only its routed experts, so "
                 "its real ceiling is higher")
    return out


def _gb(n):
    """Bytes in decimal GB, as bandwidth is quoted: 16.06 GB."""
    return f"{n / 1e9:,.2f} GB"


def _rate(bandwidth):
    """3.35 TB/s, 300 GB/s."""
    return f"{bandwidth / 1e12:g} TB/s" if bandwidth >= 10**12 else f"{bandwidth / 1e9:g} GB/s"


# --------------------------------------------------------------------------- the report

def report(config, contexts=(4096, 32768, 131072), *, engines=ENGINE_CHOICES, kv_types=("f16",),
           n_seq=1, gpu_memory=None, weights_bytes=None, weights_source=None, source=None,
           in_flight_tokens=None, gpu=None):
    """The whole report of one model as a JSON-able dict (see the module docstring).

    config       a config.json dict (a multimodal one's text_config is read)
    contexts     tokens per sequence, each a positive int
    engines      a subset of ENGINE_CHOICES; kv_types a subset of KV_TYPE_CHOICES (a type an
                 engine has not, q8_0 in vLLM or fp8 in llama.cpp, is left out of that engine)
    n_seq        sequences (requests) of each context at once
    gpu_memory   bytes of GPU memory (``parse_size``), or None for no budget
    weights_bytes   the weights' bytes for the budget and the roofline (a GGUF file's tensor
                 data, or ``lessonlib.models.weights.weight_bytes`` of the config: the caller's
                 choice; required with ``gpu_memory`` or ``gpu``), with ``weights_source`` saying
                 where they came from
    source       a dict describing the input (path, format), copied into the report
    in_flight_tokens   vLLM's tokens scheduled but not settled, which its sliding layers keep
                 blocks for; None: ``vllm serve``'s default for ``gpu_memory``
                 (``kv_cache.vllm_serve_in_flight_tokens``)
    gpu          a ``GPU_CHOICES`` name for the decode roofline, or None for none

    The dict's entries:

    source, model_type
    shape        layers, heads, kv_heads, head_dim, v_head_dim, queries_per_kv_head,
                 attention ("MHA", "GQA", "MQA" or "MLA") and the MLA ranks
    layers       the sliding and the global layers' indices, the window, the pattern, sinks
    kv_bytes_per_token   per cache type: per_layer and all_layers
    caches       one row per context, type, engine and ``--swa-full`` variant: bytes, global
                 and sliding cells per layer, and why (llama.cpp's rows are
                 ``-c context x n_seq -np n_seq``)
    rope         per layer type: the values and the plain-English ``words``
    limits       hf_max_position_embeddings, vllm_max_model_len (what vLLM serves by default),
                 vllm_derived_max_model_len (the most it accepts), llamacpp_n_ctx_train
    vllm_in_flight_tokens, vllm_in_flight_why   the tokens vLLM's sliding layers keep blocks
                 for, and why that many
    warnings, notes
    budget       with ``gpu_memory``: ``kv_cache.gpu_budget`` per engine and type (the bytes
                 the weights leave, the longest sequence, the sequences of each context that
                 fit) and the assumptions; else None
    decode       with ``gpu``: the GPU, its bandwidth and its source, and per context, type and
                 engine the bytes one decode step of the ``n_seq`` sequences reads (the
                 weights once, each sequence's cache by ``traffic.decode_cache_bytes``) and the
                 tokens per second the bandwidth allows (``traffic.decode_roofline``), with the
                 assumptions; else None

    Errors name the argument (``contexts[i]``, ``engines[i]``, ``kv_types[i]``, a type none of
    the engines asked for has, ``weights_bytes`` missing with ``gpu_memory`` or ``gpu``, a
    ``gpu`` not in ``GPU_CHOICES``) or the config key.
    """
    cfg = _check_config(config)
    contexts = _list("contexts", contexts, lambda i, v: positive_int(f"contexts[{i}]", v))
    engines = _list("engines", engines, lambda i, v: check.choice(f"engines[{i}]", v, ENGINE_CHOICES))
    kv_types = _list("kv_types", kv_types,
                     lambda i, v: check.choice(f"kv_types[{i}]", v, KV_TYPE_CHOICES))
    n_seq = positive_int("n_seq", n_seq)
    if gpu_memory is not None:
        gpu_memory = positive_int("gpu_memory", gpu_memory)
    if gpu is not None:
        gpu = check.choice("gpu", gpu, GPU_CHOICES)
    if (gpu_memory is not None or gpu is not None) and weights_bytes is not None:
        weights_bytes = check.non_negative_int("weights_bytes", weights_bytes)
    if in_flight_tokens is None:
        in_flight = kc.vllm_serve_in_flight_tokens(gpu_memory)
        in_flight_why = (f"vllm serve's default: 2 batches of {in_flight // 2:,}"
                         + (" on a GPU under 70 GiB" if in_flight == 4096 else ""))
    else:
        in_flight = check.non_negative_int("in_flight_tokens", in_flight_tokens)
        in_flight_why = "given"
    for t in kv_types:
        if not _engines_for(t, engines):
            raise ValueError(f"kv_types: {t!r} is a cache type of none of the engines asked for "
                             f"({', '.join(engines)}); it exists in "
                             + ", ".join(e for e in kc.KV_TYPES[t].engines if e != "ideal"))
    shape, layers = _shape(cfg), _layers(cfg)
    out = {"source": dict(source or {}), "model_type": as_model(cfg).model_type or None,
           "shape": shape, "layers": layers, "kv_bytes_per_token": _per_token(cfg, kv_types),
           "caches": [], "rope": _rope(cfg), "limits": _limits(cfg),
           "vllm_in_flight_tokens": in_flight, "vllm_in_flight_why": in_flight_why}
    for n in contexts:
        for t in kv_types:
            for e in _engines_for(t, engines):
                out["caches"].extend(_cache_rows(cfg, n, engine=e, kv_type=t, n_seq=n_seq,
                                                 W=layers["window"], in_flight=in_flight))
    out["warnings"] = _warnings(cfg, contexts, out["limits"], layers)
    notes = []
    if any(t in ("q8_0", "q4_0") for t in kv_types) and "llama.cpp" in engines:
        notes.append("llama.cpp quantizes the V cache only with flash attention on (-fa on)")
    if n_seq > 1 and "llama.cpp" in engines and layers["window"] is not None:
        notes.append("llama.cpp's sliding cells with several sequences are counted for a "
                     "unified cache (--kv-unified); without it each sequence has its own stream")
    mt = as_model(cfg).model_type
    if "llama.cpp" in engines and layers["window"] is not None and mt in kc.LLAMACPP_NO_SWA:
        notes.append(f"llama.cpp runs every layer of a {mt} model global ("
                     f"{kc.LLAMACPP_NO_SWA[mt]}): its cache has no sliding layers")
    out["notes"] = notes
    out["budget"] = None
    if gpu_memory is not None:
        if weights_bytes is None:
            raise ValueError("weights_bytes is required with gpu_memory (the weights share the GPU)")
        out["budget"] = _budget(cfg, gpu_memory, weights_bytes, weights_source or "given",
                                contexts, engines, kv_types, n_seq, in_flight)
    out["decode"] = None
    if gpu is not None:
        if weights_bytes is None:
            raise ValueError("weights_bytes is required with gpu (every decode step reads the "
                             "weights)")
        out["decode"] = _decode(cfg, gpu, weights_bytes, weights_source or "given", contexts,
                                engines, kv_types, n_seq, budget=out["budget"] is not None)
    return out


def _check_config(config):
    if not isinstance(config, dict):
        raise ValueError(f"config must be a config.json dict, got {check.describe(config)}")
    kc.model_shape(config)  # the attention keys, named on error
    return config


def _list(name, values, each):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a list, got {check.describe(values)}")
    values = [each(i, v) for i, v in enumerate(values)]
    if not values:
        raise ValueError(f"{name} must not be empty")
    return list(dict.fromkeys(values))


# --------------------------------------------------------------------------- text

def _table(rows, header, right=()):
    """Rows of text cells in columns; the columns whose index is in ``right`` right-aligned."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(r):
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return [line(header)] + [line(r) for r in rows]


_RULES = {
    "llama.cpp": "llama.cpp: -c c rounded up to a multiple of 256, all of it in every global "
                 "layer (shared by -np sequences); sliding layers pad(min(c, W x seqs + ub), "
                 "256) cells, the window plus one micro-batch of -ub {ub} padded to 256; "
                 "--swa-full gives them all c",
    "vllm": "vLLM: blocks of {bs} per request; global layers cdiv(n, {bs}), sliding layers "
            "cdiv(min(W - 1 + F, n), {bs}) + 1 (the window's W - 1 earlier tokens, F = {f:,} "
            "tokens in flight ({why_f}), plus the block being written); "
            "--disable-hybrid-kv-cache-manager sizes sliding layers as global",
    "ideal": "exact: n tokens per sequence in global layers, min(n, W) in sliding ones, no "
             "padding",
}


def _wrap(text, indent="  ", first=""):
    """One prose line wrapped at WIDTH columns, continuation lines indented."""
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False) or [first]


def _tokens(n):
    """A max-tokens figure: None is a cache that stops growing (every layer slides)."""
    return "any length" if n is None else f"{n:,}"


def _head(line):
    return _wrap(line, indent=" " * 11)


def format_report(rep):
    """The report as the text ``python -m lessonlib inspect`` prints (prose wrapped at ``WIDTH``
    = 100 columns; tables are not)."""
    keys = ("source", "shape", "layers", "kv_bytes_per_token", "caches", "rope", "limits",
            "warnings", "notes", "budget")
    if not isinstance(rep, dict) or any(k not in rep for k in keys):
        raise ValueError(f"rep must be a dict that report() returned, got {check.describe(rep)}")
    s, L, out = rep["shape"], rep["layers"], []
    src = rep["source"]
    title = src.get("name") or src.get("path") or "config"
    out.append(f"{title}  ({src.get('format', 'config.json')}"
               + (f", {rep['model_type']}" if rep.get("model_type") else "") + ")")
    kind = s["attention"]
    if s["mla"]:
        m = s["mla"]
        att = (f"MLA: {s['heads']} heads; latent kv_lora_rank {m['kv_lora_rank']} + RoPE key "
               f"{m['qk_rope_head_dim']} cached per token; q_lora_rank {m['q_lora_rank']}")
    else:
        group = "" if kind == "MHA" else f" ({s['queries_per_kv_head']} queries per KV head)"
        att = (f"{kind}: {s['heads']} query heads, {s['kv_heads']} KV heads{group}, "
               f"head dim {s['head_dim']}"
               + (f" (values {s['v_head_dim']})" if s["v_head_dim"] != s["head_dim"] else ""))
    out += _head(f"  attention  {s['layers']} layers; {att}")
    if L["window"] is not None:
        out += _head(f"  sliding    window {L['window']:,} on {len(L['sliding'])} of "
                     f"{s['layers']} layers ({L['pattern']}); global: "
                     f"{_ranges(L['global']) or 'none'}")
    else:
        out += _head("  sliding    none: every layer attends to the whole context")
    out += _head("  sinks      " + ("learned sink logits, one per head (no cache cost)"
                                    if L["sinks"] else "none"))
    per = ", ".join(f"{t}: {format_bytes(v['all_layers'])} ({v['all_layers']:,} B; "
                    f"{v['per_layer']:,} B per layer)" for t, v in rep["kv_bytes_per_token"].items())
    out += _head(f"  KV/token   {per}")
    out.append("")
    out.append(f"KV cache (cells per layer: global / sliding)" if L["window"] is not None
               else "KV cache (cells per layer)")
    rows = []
    for r in rep["caches"]:
        cells = f"{r['global_cells']:,}" if r["global_cells"] is not None else "-"
        if L["window"] is not None:
            cells += " / " + (f"{r['sliding_cells']:,}" if r["sliding_cells"] is not None else "-")
        rows.append([f"{r['context']:,}" + (f" x {r['n_seq']}" if r["n_seq"] > 1 else ""),
                     r["kv_type"], r["label"], format_bytes(r["bytes"]), cells])
    out += ["  " + x for x in _table(rows, ["context", "type", "engine", "size", "cells"],
                                     right=(0, 3, 4))]
    for e in dict.fromkeys(r["engine"] for r in rep["caches"]):
        sliding = any(r["sliding_cells"] is not None for r in rep["caches"] if r["engine"] == e)
        if not sliding:
            rule = {"llama.cpp": "llama.cpp: -c rounded up to a multiple of 256, in every layer "
                                 "(shared by -np sequences)",
                    "vllm": "vLLM: cdiv(n, {bs}) blocks of {bs} per request in every layer",
                    "ideal": "exact: n tokens per sequence, no padding"}[e]
        else:
            rule = _RULES[e]
        out += _wrap(rule.format(ub=LLAMACPP_N_UBATCH, bs=VLLM_BLOCK_SIZE,
                                 f=rep["vllm_in_flight_tokens"], why_f=rep["vllm_in_flight_why"]),
                     first="  ")
    out.append("")
    out.append("RoPE")
    for part in rep["rope"]:
        prefix = f"  [{part['layer_type']}] " if part["layer_type"] else "  "
        out += _wrap(part["words"][0], first=prefix)
        for w in part["words"][1:]:
            out += _wrap(w.strip(), indent="    ", first="    ")
    lim = rep["limits"]
    out.append("")
    show = lambda v: "-" if v is None else f"{v:,}"
    up_to = "" if lim["vllm_max_model_len"] == lim["vllm_derived_max_model_len"] else \
        f" (--max-model-len up to {show(lim['vllm_derived_max_model_len'])})"
    out += _wrap(f"HF max_position_embeddings {show(lim['hf_max_position_embeddings'])}; vLLM "
                 f"max_model_len {show(lim['vllm_max_model_len'])}{up_to}; llama.cpp n_ctx_train "
                 f"{show(lim['llamacpp_n_ctx_train'])} (-c 0)", indent=" " * 15,
                 first="Longest context  ")
    b = rep.get("budget")
    if b:
        out.append("")
        out.append(f"GPU budget  {format_bytes(b['gpu_memory'])}; weights {format_bytes(b['weights_bytes'])}")
        if not b["fits"]:
            out.append("  the weights alone do not fit")
        ctxs = list(b["engines"][0]["sequences"]) if b["engines"] else []
        rows = [[{"llama.cpp": "llama.cpp", "vllm": "vLLM", "ideal": "exact"}[e["engine"]],
                 e["kv_type"], format_bytes(e["usable_bytes"]), _tokens(e["max_tokens"])]
                + [f"{e['sequences'][c]:,}" for c in ctxs] for e in b["engines"]]
        out += ["  " + x for x in _table(rows, ["engine", "type", "after weights", "max tokens"]
                                          + [f"seqs of {int(c):,}" for c in ctxs],
                                          right=tuple(range(2, 4 + len(ctxs))))]
        for x in b["assumptions"]:
            out += _wrap(x, first="  assumes: ")
    d = rep.get("decode")
    if d:
        out.append("")
        out.append(f"Decode roofline  {d['name']}, {_rate(d['bandwidth'])}; weights "
                   f"{_gb(d['weights_bytes'])}, read once per step")
        label = {"llama.cpp": "llama.cpp", "vllm": "vLLM", "ideal": "exact"}
        groups = []  # engines whose rule reads the same bytes share a row
        for r in d["rows"]:
            same = groups and all(groups[-1][0][k] == r[k]
                                  for k in ("context", "kv_type", "cache_bytes"))
            groups[-1].append(r) if same else groups.append([r])
        rows = [[f"{g[0]['context']:,}" + (f" x {g[0]['n_seq']}" if g[0]["n_seq"] > 1 else ""),
                 g[0]["kv_type"], ", ".join(label[r["engine"]] for r in g),
                 _gb(g[0]["cache_bytes"]), _gb(round(g[0]["bytes_per_token"])),
                 f"{g[0]['cache_share']:.1%}", f"{g[0]['tokens_per_s']:,.1f}"] for g in groups]
        cache = "cache per seq" if any(r["n_seq"] > 1 for r in d["rows"]) else "cache read"
        out += ["  " + x for x in _table(rows, ["context", "type", "engine", cache,
                                                "read per token", "cache share", "tokens/s"],
                                          right=(0, 3, 4, 5, 6))]
        for x in d["assumptions"]:
            out += _wrap(x, first="  assumes: ")
    for w in rep["notes"]:
        out += _wrap(w, indent="", first="note: ")
    for w in rep["warnings"]:
        out += _wrap(w, indent="", first="warning: ")
    return "\n".join(out)


def _dense(cfg):
    """True when llamacpp_compute_phases models the config (no experts)."""
    return as_model(cfg).experts_key is None
