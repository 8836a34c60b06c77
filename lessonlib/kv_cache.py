"""How big the KV cache is: bytes per token, and each engine's sizing rule for a whole context.

Examples 5-8, 10 and 16 of the lesson, and the hybrid-KV-cache part of the vLLM/SGLang text.
Everything is read from a model's ``config.json`` dict (``lessonlib.configs.load_config``):

    num_hidden_layers            L, the layer count
    num_key_value_heads          h_kv (falls back to num_attention_heads, as in HuggingFace)
    head_dim                     d_h (else hidden_size / num_attention_heads)
    kv_lora_rank, qk_rope_head_dim    MLA (DeepSeek): one latent c plus the decoupled RoPE key
    layer_types / sliding_window_pattern / max_window_layers / sliding_window /
    use_sliding_window           which layers are sliding-window ("local") and their window W

One layer caches, per token (one "cell" in llama.cpp, one slot of a block in vLLM):

    MHA/GQA/MQA   2 * h_kv * d_h * dtype_bytes        (K and V)
    MLA           (kv_lora_rank + qk_rope_head_dim) * dtype_bytes   (no separate V: llama.cpp
                  allocates only K for MLA, vLLM's MLAAttentionSpec stores one latent)

A whole cache is a sum over two kinds of layers, global (full attention) and sliding-window,
each sized by the engine's own rule (see ``kv_cache_bytes``).
"""
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ._validate import non_negative_int, positive_int

from .traffic import GIB, MIB, score_slice_bytes

__all__ = [
    "kv_bytes_per_token", "kv_bytes_per_token_per_layer", "layer_windows", "swa_pattern",
    "kv_cache_bytes", "KVCacheSize", "LayerGroup", "ENGINES",
    "llamacpp_swa_cells", "vllm_full_blocks", "vllm_sliding_blocks",
    "ComputeBuffer", "llamacpp_compute_buffer",
    "gqa_kv_head", "gqa_head_map", "mla_absorb_query", "mla_scores_direct",
    "mla_scores_absorbed", "GIB", "MIB",
]

LLAMACPP_SWA_PAD = 256  # llama-kv-cache-iswa.cpp pads the SWA cache to a multiple of 256 cells


# --------------------------------------------------------------------------- config reading

def _text_config(config):
    """The language-model part: multimodal configs nest it under ``text_config``."""
    if not isinstance(config, Mapping):
        raise ValueError(f"config must be a dict (a config.json), got {type(config).__name__}")
    if "num_hidden_layers" not in config and isinstance(config.get("text_config"), Mapping):
        return config["text_config"]
    return config


def _int_key(config, key, *, minimum=1):
    if key not in config or config[key] is None:
        raise ValueError(f"config is missing {key!r}")
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"config {key!r} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _kv_heads(cfg):
    if cfg.get("num_key_value_heads") is not None:
        return _int_key(cfg, "num_key_value_heads")
    if cfg.get("num_attention_heads") is not None:  # HuggingFace: None means MHA
        return _int_key(cfg, "num_attention_heads")
    raise ValueError("config is missing 'num_key_value_heads' (and 'num_attention_heads')")


def _head_dim(cfg):
    if cfg.get("head_dim") is not None:
        return _int_key(cfg, "head_dim")
    if cfg.get("hidden_size") is None or cfg.get("num_attention_heads") is None:
        raise ValueError("config is missing 'head_dim' (and 'hidden_size'/'num_attention_heads' "
                         "to derive it)")
    hidden, heads = _int_key(cfg, "hidden_size"), _int_key(cfg, "num_attention_heads")
    if hidden % heads:
        raise ValueError(f"config 'hidden_size' {hidden} is not divisible by "
                         f"'num_attention_heads' {heads}; give 'head_dim'")
    return hidden // heads


def kv_bytes_per_token_per_layer(config, dtype_bytes=2):
    """Bytes one layer caches for one token: one llama.cpp cell, one vLLM block slot."""
    cfg = _text_config(config)
    dtype_bytes = positive_int("dtype_bytes", dtype_bytes)
    if cfg.get("kv_lora_rank") is not None:  # MLA: latent c plus the shared RoPE key
        return (_int_key(cfg, "kv_lora_rank") + _int_key(cfg, "qk_rope_head_dim")) * dtype_bytes
    h_kv = _kv_heads(cfg)
    if cfg.get("qk_nope_head_dim") is not None:
        # an MLA-shaped model run without the latent (Example 8's "same model as MHA"):
        # keys are qk_nope + qk_rope wide, values v_head_dim wide
        d_k = _int_key(cfg, "qk_nope_head_dim") + _int_key(cfg, "qk_rope_head_dim")
        d_v = _int_key(cfg, "v_head_dim")
    else:
        d_k = d_v = _head_dim(cfg)
    return h_kv * (d_k + d_v) * dtype_bytes


def kv_bytes_per_token(config, dtype_bytes=2):
    """KV bytes one token costs across all layers (Examples 6 and 8).

    ``2 * L * h_kv * d_h * dtype_bytes`` for MHA/GQA/MQA; ``L * (kv_lora_rank +
    qk_rope_head_dim) * dtype_bytes`` for MLA. Llama-3-8B: 131,072 (128 KiB); DeepSeek-V3: 70,272.
    """
    cfg = _text_config(config)
    return _int_key(cfg, "num_hidden_layers") * kv_bytes_per_token_per_layer(cfg, dtype_bytes)


def swa_pattern(n, n_layers):
    """llama.cpp's ``set_swa_pattern(n)``: layer ``il`` is local (sliding) when ``il % n < n - 1``.

    Returns a bool array, True for local layers. ``n = 6`` gives LLLLLG LLLLLG ...
    """
    n, n_layers = positive_int("n", n), positive_int("n_layers", n_layers)
    il = np.arange(n_layers)
    return il % n < n - 1


def _window(cfg):
    if "sliding_window" not in cfg or cfg["sliding_window"] is None:
        raise ValueError("config has sliding-window layers but no 'sliding_window' size")
    return _int_key(cfg, "sliding_window")


def layer_windows(config):
    """The window of every layer: a list with ``None`` for global layers and ``W`` for local ones.

    Read in this order (the first that applies wins):
      ``use_sliding_window: false``   no windows at all (Qwen2)
      ``layer_types``                 "sliding_attention" / "full_attention" per layer (Gemma 3,
                                      gpt-oss); must list exactly ``num_hidden_layers`` entries
      ``sliding_window_pattern`` n    llama.cpp's rule, local when ``il % n < n - 1``
      ``max_window_layers`` m         with ``use_sliding_window: true``: layers ``il >= m`` (Qwen2)
      ``sliding_window`` W            every layer windowed (Mistral-7B-v0.1); null: none
    """
    cfg = _text_config(config)
    n_layers = _int_key(cfg, "num_hidden_layers")
    if cfg.get("use_sliding_window") is False:
        return [None] * n_layers
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, (list, tuple)) or len(types) != n_layers:
            got = len(types) if isinstance(types, (list, tuple)) else type(types).__name__
            raise ValueError(f"config 'layer_types' must list num_hidden_layers={n_layers} "
                             f"entries, got {got}")
        unknown = sorted(set(types) - {"sliding_attention", "full_attention"})
        if unknown:
            raise ValueError(f"config 'layer_types' has unsupported entries {unknown}; "
                             "expected 'sliding_attention' or 'full_attention'")
        local = [t == "sliding_attention" for t in types]
    elif cfg.get("sliding_window_pattern") is not None:
        n = _int_key(cfg, "sliding_window_pattern")
        if n > n_layers:
            raise ValueError(f"config 'sliding_window_pattern' {n} is longer than "
                             f"num_hidden_layers={n_layers}")
        local = swa_pattern(n, n_layers).tolist()
    elif cfg.get("use_sliding_window") is True and cfg.get("max_window_layers") is not None:
        m = _int_key(cfg, "max_window_layers", minimum=0)
        if m > n_layers:
            raise ValueError(f"config 'max_window_layers' {m} is larger than "
                             f"num_hidden_layers={n_layers}")
        local = [il >= m for il in range(n_layers)]
    elif cfg.get("sliding_window") is not None:
        local = [True] * n_layers
    else:
        return [None] * n_layers
    if not any(local):
        return [None] * n_layers
    W = _window(cfg)
    return [W if is_local else None for is_local in local]


# --------------------------------------------------------------------------- engine rules

def _cdiv(a, b):
    return -(-a // b)


def _pad(x, to):
    return _cdiv(x, to) * to


def llamacpp_swa_cells(n_ctx, n_swa, *, n_seq=1, n_ubatch=512):
    """Cells of each sliding-window layer in llama.cpp (llama-kv-cache-iswa.cpp, Example 10):

        GGML_PAD(min(n_ctx, n_swa * n_seq + n_ubatch), 256)

    The window alone is not enough: the micro-batch being processed must fit next to it.
    This is the lesson's form. Current llama.cpp writes ``n_swa * (unified ? n_seq_max : 1)``:
    with ``--kv-unified`` all sequences share the cells as here; without it each sequence gets
    its own stream of cells. With one sequence (the default) the two agree.
    """
    n_ctx, n_swa = positive_int("n_ctx", n_ctx), positive_int("n_swa", n_swa)
    n_seq, n_ubatch = positive_int("n_seq", n_seq), positive_int("n_ubatch", n_ubatch)
    return _pad(min(n_ctx, n_swa * n_seq + n_ubatch), LLAMACPP_SWA_PAD)


def vllm_full_blocks(max_model_len, block_size=16):
    """``FullAttentionSpec``: ``cdiv(max_model_len, block_size)`` blocks per request."""
    return _cdiv(positive_int("max_model_len", max_model_len),
                 positive_int("block_size", block_size))


def vllm_sliding_blocks(max_model_len, sliding_window, block_size=16, *,
                        extra_retained_tokens=0, max_in_flight_tokens=0):
    """``SlidingWindowSpec``: blocks per request for one windowed layer (kv_cache_interface.py)

        cdiv(min(W - 1 + extra_retained_tokens + max_in_flight_tokens, max_model_len),
             block_size) + 1

    The ``+ 1``: the window need not start at a block boundary (block size 4, window [CDEF]
    stored as [XXCD][EF] takes two blocks). W = 4096, block 16, nothing in flight: 257 blocks.
    """
    max_model_len = positive_int("max_model_len", max_model_len)
    W = positive_int("sliding_window", sliding_window)
    block_size = positive_int("block_size", block_size)
    extra = non_negative_int("extra_retained_tokens", extra_retained_tokens)
    in_flight = non_negative_int("max_in_flight_tokens", max_in_flight_tokens)
    return _cdiv(min(W - 1 + extra + in_flight, max_model_len), block_size) + 1


@dataclass(frozen=True)
class LayerGroup:
    """One kind of layer in a cache: global (full attention) or sliding-window.

    ``cells`` is what one layer holds for all ``n_seq`` sequences: llama.cpp cells, vLLM block
    slots (``blocks * block_size``) or exact tokens; ``blocks`` is set for vLLM only.
    """
    kind: str  # "global" or "sliding"
    n_layers: int
    window: int | None  # W of the sliding layers, None for global ones
    cells: int  # per layer, all sequences
    blocks: int | None  # per layer, all sequences (vLLM)
    bytes_per_cell: int  # per layer
    bytes: int  # the whole group: n_layers * cells * bytes_per_cell

    @property
    def mib(self):
        return self.bytes / MIB

    @property
    def gib(self):
        return self.bytes / GIB


@dataclass(frozen=True)
class KVCacheSize:
    """``kv_cache_bytes``'s answer: a total and its split into global and sliding layers."""
    engine: str
    n_ctx: int
    n_seq: int
    global_layers: LayerGroup
    sliding_layers: LayerGroup

    @property
    def total_bytes(self):
        return self.global_layers.bytes + self.sliding_layers.bytes

    @property
    def total_mib(self):
        return self.total_bytes / MIB

    @property
    def total_gib(self):
        return self.total_bytes / GIB


def _llamacpp(n_ctx, W, *, n_seq, n_ubatch, swa_full, **_):
    """llama.cpp: global layers get the -c n_ctx cells (shared by all sequences), sliding
    layers ``llamacpp_swa_cells``, or all n_ctx with --swa-full."""
    if W is None or swa_full:
        return n_ctx, None
    return llamacpp_swa_cells(n_ctx, W, n_seq=n_seq, n_ubatch=n_ubatch), None


def _vllm(n_ctx, W, *, n_seq, block_size, swa_full, extra_retained_tokens,
          max_in_flight_tokens, **_):
    """vLLM: n_ctx is max_model_len, the blocks are per request, times n_seq requests.
    ``swa_full`` = --disable-hybrid-kv-cache-manager: every SlidingWindowSpec is promoted to a
    FullAttentionSpec (kv_cache_utils.py)."""
    if W is None or swa_full:
        blocks = vllm_full_blocks(n_ctx, block_size)
    else:
        blocks = vllm_sliding_blocks(n_ctx, W, block_size,
                                     extra_retained_tokens=extra_retained_tokens,
                                     max_in_flight_tokens=max_in_flight_tokens)
    return n_seq * blocks * block_size, n_seq * blocks


def _ideal(n_ctx, W, *, n_seq, swa_full, **_):
    """Exact tokens, no padding or blocks: n_ctx per sequence, min(n_ctx, W) when windowed."""
    tokens = n_ctx if W is None or swa_full else min(n_ctx, W)
    return n_seq * tokens, None


ENGINES = {"llama.cpp": _llamacpp, "vllm": _vllm, "ideal": _ideal}


def kv_cache_bytes(config, n_ctx, *, engine="llama.cpp", n_seq=1, n_ubatch=512, block_size=16,
                   swa_full=False, dtype_bytes=2, extra_retained_tokens=0, max_in_flight_tokens=0):
    """The KV cache of a whole context, sized by one engine's rule (Example 10, hybrid caches).

    engine:
      ``"llama.cpp"``  n_ctx is ``-c``: the cells of the whole cache, shared by ``n_seq``
                       sequences. Global layers get n_ctx cells; sliding layers
                       ``pad(min(n_ctx, W * n_seq + n_ubatch), 256)``; ``swa_full``
                       (``--swa-full``) gives them n_ctx too.
      ``"vllm"``       n_ctx is ``max_model_len`` of one request, and the cache holds ``n_seq``
                       such requests. Global layers: ``cdiv(n_ctx, block_size)`` blocks
                       (FullAttentionSpec); sliding: ``vllm_sliding_blocks`` (SlidingWindowSpec).
                       ``swa_full`` is ``--disable-hybrid-kv-cache-manager`` (all layers full).
                       ``extra_retained_tokens``: vLLM sets it to ``num_speculative_tokens - 1``
                       with multi-module MTP speculative decoding and 0 otherwise.
                       ``max_in_flight_tokens``: vLLM uses ``max_concurrent_batches *
                       max_num_batched_tokens`` (1 batch, or 2 with async scheduling; 2048
                       tokens for the API server and 8192 for the ``LLM`` class, 8192 / 16384 on
                       GPUs of 70 GiB or more except A100). The default 0 is the lesson's
                       "ignoring in-flight tokens" count (257 blocks at W = 4096).
      ``"ideal"``      exact tokens: n_ctx per sequence, ``min(n_ctx, W)`` for sliding layers.

    Returns a ``KVCacheSize`` (``total_bytes`` and ``global_layers`` / ``sliding_layers``).
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {sorted(ENGINES)}, got {engine!r}")
    n_ctx = positive_int("n_ctx", n_ctx)
    n_seq, n_ubatch = positive_int("n_seq", n_seq), positive_int("n_ubatch", n_ubatch)
    block_size = positive_int("block_size", block_size)
    non_negative_int("extra_retained_tokens", extra_retained_tokens)
    non_negative_int("max_in_flight_tokens", max_in_flight_tokens)
    per_cell = kv_bytes_per_token_per_layer(config, dtype_bytes)
    windows = layer_windows(config)
    rule = ENGINES[engine]

    local = {w for w in windows if w is not None}
    W = local.pop() if local else None  # layer_windows gives every sliding layer the same W

    def group(kind, window, n_layers):
        if n_layers == 0:
            return LayerGroup(kind, 0, window, 0, 0 if engine == "vllm" else None, per_cell, 0)
        cells, blocks = rule(n_ctx, window, n_seq=n_seq, n_ubatch=n_ubatch, block_size=block_size,
                             swa_full=swa_full, extra_retained_tokens=extra_retained_tokens,
                             max_in_flight_tokens=max_in_flight_tokens)
        return LayerGroup(kind, n_layers, window, cells, blocks, per_cell,
                          n_layers * cells * per_cell)

    n_local = sum(w is not None for w in windows)
    return KVCacheSize(engine, n_ctx, n_seq, group("global", None, len(windows) - n_local),
                       group("sliding", W, n_local))


# --------------------------------------------------------------------------- Example 5

@dataclass(frozen=True)
class ComputeBuffer:
    """Example 5's model of llama.cpp's compute buffer: its two largest temporaries.

    scores_bytes   F32 score matrix of one micro-batch, ub x n_ctx x heads x 4 (only when
                   attention is not fused; FLASH_ATTN_EXT never materialises it)
    mask_bytes     F32 KQ mask, ub x n_ctx x 4, alive next to the scores on the unfused path
    logits_bytes   F32 logits of one micro-batch, ub x n_vocab x 4
    estimate_bytes the larger of the two peaks: logits (output projection) and, unfused,
                   scores + mask (attention)
    """
    n_ctx: int
    n_ubatch: int
    flash_attn: bool
    scores_bytes: int
    mask_bytes: int
    logits_bytes: int

    @property
    def estimate_bytes(self):
        return max(self.logits_bytes, self.scores_bytes + self.mask_bytes)


def llamacpp_compute_buffer(config, n_ctx, n_ubatch, *, flash_attn):
    """Example 5: what the compute buffer must hold at ``-c n_ctx -ub n_ubatch -fa on|off``.

    Reads ``num_attention_heads`` and ``vocab_size`` from the config. For the tiny model
    (8 heads, 151,936-token vocabulary) at -c 65536: scores 256 / 1024 MiB and logits
    74.19 / 296.75 MiB at -ub 128 / 512.
    """
    cfg = _text_config(config)
    n_ctx, n_ubatch = positive_int("n_ctx", n_ctx), positive_int("n_ubatch", n_ubatch)
    heads, vocab = _int_key(cfg, "num_attention_heads"), _int_key(cfg, "vocab_size")
    scores = 0 if flash_attn else score_slice_bytes(n_ubatch, n_ctx, heads=heads, bytes_per_score=4)
    mask = 0 if flash_attn else n_ubatch * n_ctx * 4
    return ComputeBuffer(n_ctx, n_ubatch, bool(flash_attn), scores, mask, n_ubatch * vocab * 4)


# --------------------------------------------------------------------------- GQA and MLA

def gqa_kv_head(h, hq, hkv):
    """The KV head that query head ``h`` reads: ``h // (hq // hkv)`` (ggml: ik2 = iq2 / rk2)."""
    hq, hkv = positive_int("hq", hq), positive_int("hkv", hkv)
    if hq % hkv:
        raise ValueError(f"hq={hq} must be a multiple of hkv={hkv}")
    h = non_negative_int("h", h)  # an index: 1.5 or True is an error, not KV head 0.0
    if h >= hq:
        raise ValueError(f"h must be in [0, {hq}), got {h}")
    return h // (hq // hkv)


def gqa_head_map(hq, hkv):
    """Every query head's KV head, as an int array of length ``hq`` (Example 6)."""
    return np.array([gqa_kv_head(h, hq, hkv) for h in range(positive_int("hq", hq))])


def _mla_shapes(q, W_UK, c):
    q, W_UK, c = np.asarray(q), np.asarray(W_UK), np.asarray(c)
    if W_UK.ndim != 3:
        raise ValueError(f"W_UK must be (heads, head_dim, latent), got shape {W_UK.shape}")
    if q.shape != W_UK.shape[:2]:
        raise ValueError(f"q must be (heads, head_dim) = {W_UK.shape[:2]}, got {q.shape}")
    if c.shape[-1] != W_UK.shape[2]:
        raise ValueError(f"c's last dim must be the latent size {W_UK.shape[2]}, got {c.shape}")
    return q, W_UK, c


def mla_absorb_query(q, W_UK):
    """``W_UK^T q`` per head: (heads, head_dim) x (heads, head_dim, latent) -> (heads, latent)."""
    q, W_UK, _ = _mla_shapes(q, W_UK, np.zeros(np.shape(W_UK)[-1]))
    return np.einsum("hdr,hd->hr", W_UK, q)


def mla_scores_direct(q, W_UK, c):
    """Decompress, then score: ``q_h . (W_UK_h c_t)``.

    q (heads, head_dim), W_UK (heads, head_dim, latent), c (n_tokens, latent) -> (heads, n_tokens).
    """
    q, W_UK, c = _mla_shapes(q, W_UK, c)
    k = np.einsum("hdr,tr->htd", W_UK, np.atleast_2d(c))  # (heads, n_tokens, head_dim)
    return np.einsum("htd,hd->ht", k, q)


def mla_scores_absorbed(q, W_UK, c):
    """Score the cached latents directly: ``(W_UK_h^T q_h) . c_t`` -> (heads, n_tokens)."""
    q, W_UK, c = _mla_shapes(q, W_UK, c)
    return mla_absorb_query(q, W_UK) @ np.atleast_2d(c).T
