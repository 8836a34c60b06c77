"""What a config says beyond its shape and its RoPE, read for a report (``inspect``): learned
sinks, the trained and served lengths llama.cpp reads, MLA's dimensions as the checkpoint names
them, the layer types with a RoPE of their own, and the warnings a config's keys deserve
(a long-context family without its documented ``rope_scaling``, a YaRN or longrope block
without its trained length, a window switched off by ``use_sliding_window: false``).
"""
import numpy as np

from .. import _validate as check
from . import text_config
from .shape import sliding_window

__all__ = ["DOCUMENTED_SCALING", "learned_sinks", "gguf_rope_freqs", "max_position_embeddings",
           "llamacpp_n_ctx_train", "mla_dimensions", "rope_layer_types", "config_warnings"]

# Model families whose cards document a rope_scaling block to add for long inputs (Qwen2.5:
# "add rope_scaling ... to config.json" for inputs past 32,768 tokens).
DOCUMENTED_SCALING = {
    "qwen2": (32768, {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}),
}
"""{model_type: (length, rope_scaling)}: the families whose model cards say to add that
rope_scaling block for inputs past that length (Qwen2.5's YaRN, factor 4)."""

_MLA_KEYS = ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def learned_sinks(config):
    """True when the model has learned attention sinks: gpt-oss has one logit per head
    (self_attn.sinks in its weights; attn_sinks in a GGUF). The config has no key for them, so
    the model type tells (a GGUF file's config says what the file holds)."""
    text = text_config(config)
    if text.get("_gguf_sinks") is not None:
        return bool(text["_gguf_sinks"])
    return str(text.get("model_type", "")) == "gpt_oss"


def gguf_rope_freqs(config):
    """(factors, the config without them) for a GGUF file's config with a ``rope_freqs`` tensor
    (llama.cpp divides pair i's frequency by factor i: how its converter stores llama3 scaling,
    with no rope.scaling key), as a float64 array; (None, config) for any other config."""
    text = text_config(config)
    if text.get("_gguf_rope_freqs") is None:
        return None, config
    factors = np.asarray(text["_gguf_rope_freqs"], dtype=np.float64)
    return factors, {k: v for k, v in text.items() if k != "_gguf_rope_freqs"}


def max_position_embeddings(config):
    """``max_position_embeddings``, checked (an integer >= 1), or None where the config has none."""
    value = text_config(config).get("max_position_embeddings")
    return None if value is None else check.integer("max_position_embeddings", value, minimum=1)


def llamacpp_n_ctx_train(config):
    """The trained length llama.cpp's ``-c 0`` takes (n_ctx_train): a GGUF's context_length, which
    its converter writes from ``max_position_embeddings``."""
    text = text_config(config)
    if text.get("_gguf_context_length") is not None:
        return text["_gguf_context_length"]
    return max_position_embeddings(config)


def mla_dimensions(config):
    """{key: value} of MLA's dimensions as the config names them (kv_lora_rank, q_lora_rank,
    qk_nope_head_dim, qk_rope_head_dim, v_head_dim), or None for a model without a latent."""
    text = text_config(config)
    if text.get("kv_lora_rank") is None:
        return None
    return {k: text.get(k) for k in _MLA_KEYS}


def rope_layer_types(config):
    """The layer types with a RoPE of their own: the per-layer entries of a transformers 5
    ``rope_parameters``, Gemma 3's two (``rope_local_base_freq``), else [None] (one RoPE)."""
    text = text_config(config)
    rp = text.get("rope_parameters")
    if isinstance(rp, dict) and rp and all(v is None or isinstance(v, dict) for v in rp.values()):
        return [t for t, v in rp.items() if v is not None]
    if text.get("rope_local_base_freq") is not None:
        return ["full_attention", "sliding_attention"]
    return [None]


def config_warnings(config):
    """The warnings a config's keys deserve, as sentences: a family's documented rope_scaling
    missing (``DOCUMENTED_SCALING``), a YaRN or longrope block without its trained length, a
    sliding window switched off by ``use_sliding_window: false``."""
    text = text_config(config)
    out = []
    mt = str(text.get("model_type", ""))
    doc = DOCUMENTED_SCALING.get(mt)
    has_rope = bool(text.get("rope_scaling") or text.get("rope_parameters"))
    if doc and not has_rope and text.get("max_position_embeddings") == doc[0]:
        out.append(f"no rope_scaling: this family's model cards ({mt}) document adding "
                   f"rope_scaling = {doc[1]} for inputs past {doc[0]:,} tokens; without it every "
                   f"engine stops at {doc[0]:,}")
    for where in ("rope_scaling", "rope_parameters"):
        rp = text.get(where)
        if isinstance(rp, dict) and (rp.get("rope_type") or rp.get("type")) in ("yarn", "longrope") \
                and rp.get("original_max_position_embeddings") is None \
                and text.get("original_max_position_embeddings") is None:
            out.append(f"{where} has no original_max_position_embeddings: HF and vLLM take the "
                       "trained length from max_position_embeddings, which a long-context "
                       "config has often already raised")
    W, switched_off = sliding_window(config)
    if switched_off and W is not None:
        out.append(f"sliding_window = {W:,} is switched off by "
                   "use_sliding_window: false: every layer attends to the whole context")
    return out
