"""A model's attention shape, its layer windows and its other dimensions, read from config.json.

Every config key compute needs, outside RoPE (``models.rope``) and the weights
(``models.weights``), is read here, checked and named on error: the attention shape
(``model_shape``), each layer's window (``layer_windows``, and ``llamacpp_layer_windows`` as
llama.cpp runs it), MLA's latent (``latent``), and the dimensions llama.cpp's compute buffer
and the tiny model read (``vocab_size``, ``hidden_size``, ``intermediate_size``, experts).
A ``models.Model`` carries each of these as a fact, read once (``model.shape``,
``model.windows``, ``model.latent``, ``model.vocab_size``, ...); compute reads the facts.
"""
from dataclasses import dataclass

import numpy as np

from .. import _validate as check
from .._validate import non_negative_int, positive_int
from . import Model, int_key, text_config

__all__ = ["ModelShape", "model_shape", "layer_windows", "llamacpp_layer_windows",
           "LLAMACPP_NO_SWA", "swa_pattern", "Latent", "latent", "layers", "query_heads",
           "kv_heads", "head_dims", "model_type", "int_dimension", "experts_key",
           "sliding_window", "AttentionKeys", "attention_keys"]

# Model types whose llama.cpp architecture runs every layer as global, whatever config.json says
# about windows: the loader (src/models/<arch>.cpp) reads no sliding window, or turns it off.
LLAMACPP_NO_SWA = {
    "llama": "the llama architecture reads no sliding window",
    "mistral": "its converter writes it as the llama architecture, which reads no sliding "
               "window: Mistral-7B-v0.1's W = 4096 is not applied",
    "qwen2": "the qwen2 architecture reads no sliding window (use_sliding_window is not converted)",
    "phi3": "the phi3 loader reads sliding_window and switches it off ('Phi SWA is currently "
            "disabled')",
}
"""{model_type: why} of the model types whose llama.cpp architecture runs no sliding window,
whatever config.json says: llama, mistral (Mistral-7B-v0.1 converts to the llama architecture
and loses its W = 4096), qwen2, phi3 (its loader switches the window off)."""


def _kv_heads(cfg):
    """h_kv, checked against h_q where the config gives both. GQA lets each KV head serve a
    group of h_q / h_kv query heads, so h_kv must divide h_q (and be at most h_q): HuggingFace's
    ``repeat_kv`` copies each KV head ``num_attention_heads // num_key_value_heads`` times, and
    vLLM's ``Attention`` asserts ``num_heads % num_kv_heads == 0``."""
    h_q = None if cfg.get("num_attention_heads") is None else int_key(cfg, "num_attention_heads")
    if cfg.get("num_key_value_heads") is None:
        if h_q is None:
            raise ValueError("config is missing 'num_key_value_heads' (and 'num_attention_heads')")
        return h_q  # HuggingFace: None means MHA
    h_kv = int_key(cfg, "num_key_value_heads")
    if h_q is not None and h_kv > h_q:
        raise ValueError(f"num_key_value_heads must be <= num_attention_heads={h_q} (each KV head "
                         f"serves a group of query heads), got {h_kv}")
    if h_q is not None and h_q % h_kv:
        raise ValueError(f"num_key_value_heads must divide num_attention_heads={h_q} (GQA: each KV "
                         f"head serves num_attention_heads // num_key_value_heads query heads), "
                         f"got {h_kv}")
    return h_kv


def _head_dim(cfg):
    if cfg.get("head_dim") is not None:
        return int_key(cfg, "head_dim")
    if cfg.get("hidden_size") is None or cfg.get("num_attention_heads") is None:
        raise ValueError("config is missing 'head_dim' (and 'hidden_size'/'num_attention_heads' "
                         "to derive it)")
    hidden, heads = int_key(cfg, "hidden_size"), int_key(cfg, "num_attention_heads")
    if hidden % heads:
        raise ValueError(f"config 'hidden_size' {hidden} is not divisible by "
                         f"'num_attention_heads' {heads}; give 'head_dim'")
    return hidden // heads


def _head_dims(cfg):
    """(d_k, d_v): the widths of one head's key (and query) and value. MLA-shaped configs
    (DeepSeek) give them apart: keys qk_nope + qk_rope wide, values v_head_dim; every other
    model has one d_h for both (``_head_dim``)."""
    if cfg.get("qk_nope_head_dim") is not None:
        return (int_key(cfg, "qk_nope_head_dim") + int_key(cfg, "qk_rope_head_dim"),
                int_key(cfg, "v_head_dim"))
    d_h = _head_dim(cfg)
    return d_h, d_h


@dataclass(frozen=True)
class ModelShape:
    """A model's attention shape, read from its config.json by ``model_shape``.

    layers      L, ``num_hidden_layers``
    heads       h_q, ``num_attention_heads`` (query heads)
    kv_heads    h_kv, ``num_key_value_heads`` (h_q when absent, as in HuggingFace); divides h_q
    head_dim    d_h of a query and key head: ``head_dim``, else ``hidden_size /
                num_attention_heads``; ``qk_nope_head_dim + qk_rope_head_dim`` for MLA
    v_head_dim  d_v of a value head: d_h, or ``v_head_dim`` for MLA
    q_dim       h_q x d_h, the width of Q: the ``q_dim`` of the attention FLOPs 2 n^2 q_dim L
    kv_dim      h_kv x d_h, the width of K (an MLA cache stores its latent instead:
                ``kv_bytes_per_token``)
    """
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    v_head_dim: int

    @property
    def q_dim(self):
        """heads x head_dim, the width of Q."""
        return self.heads * self.head_dim

    @property
    def kv_dim(self):
        """kv_heads x head_dim, the width of K."""
        return self.kv_heads * self.head_dim


def model_shape(config):
    """The attention shape of a config.json dict (a multimodal one's ``text_config``).

    Llama-3.1-8B: 32 layers, 32 query heads, 8 KV heads, d_h = 4096 / 32 = 128, q_dim 4,096;
    DeepSeek-V3: 61 layers, 128 heads of 128 + 64 (keys) and 128 (values). Every key is read
    as ``kv_bytes_per_token`` reads it, with its errors (a missing or non-integer key, a head
    count that does not divide, a ``hidden_size`` that is no multiple of the heads), which
    name the config key. RoPE's rotary dim is ``rope.rotary_dim(config)``: it depends on the
    rope parameters and, for some models, on the layer type. A ``models.Model`` gives the
    shape it read once. Returns a ``ModelShape``.

    The one place widgets, checks, plots and notebooks get a head dim or a ``q_dim`` from:
    tests/test_layers.py fails on config-key arithmetic in those layers.
    """
    if isinstance(config, Model):
        return config.shape
    cfg = text_config(config)
    layers = int_key(cfg, "num_hidden_layers")
    heads = int_key(cfg, "num_attention_heads")
    kv_heads = _kv_heads(cfg)
    d_k, d_v = _head_dims(cfg)
    return ModelShape(layers, heads, kv_heads, d_k, d_v)


def swa_pattern(n, n_layers):
    """llama.cpp's ``set_swa_pattern(n)``: layer ``il`` is local (sliding) when ``il % n < n - 1``.

    Returns a bool array, True for local layers. ``n = 6`` gives LLLLLG LLLLLG ...; ``n = 1``
    gives no local layer. The edge cases are llama.cpp's (src/llama-hparams.cpp, whose header
    says "if n_pattern == 0, all layers are SWA"): ``n = 0`` makes every layer local, and so
    does any ``n > n_layers``, since ``il % n = il < n - 1`` for every layer (HuggingFace's
    ``(i + 1) % n != 0`` rule for ``sliding_window_pattern`` gives the same).
    """
    n, n_layers = non_negative_int("n", n), positive_int("n_layers", n_layers)
    il = np.arange(n_layers)
    if n == 0:
        return np.ones(n_layers, dtype=bool)
    return il % n < n - 1


_LAYER_TYPES = ("sliding_attention", "full_attention")  # the two layer_types entries read here


def _window(cfg):
    """``sliding_window`` W, checked wherever the config gives it (None when null or absent)."""
    if cfg.get("sliding_window") is None:
        return None
    return int_key(cfg, "sliding_window")


def _use_sliding_window(cfg):
    """Qwen2's switch: true, false or absent. HuggingFace's strict Qwen2Config refuses anything
    else ("false", 0 or null): ``if`` would read "false" as true, and 0 as a silent false."""
    if "use_sliding_window" not in cfg:
        return None
    return check.flag("use_sliding_window", cfg["use_sliding_window"])


def _from_layer_types(types, n_layers):
    if not isinstance(types, (list, tuple)):
        raise ValueError(f"config 'layer_types' must be a list of num_hidden_layers={n_layers} "
                         f"entries, got {check.describe(types)}")
    if len(types) != n_layers:
        raise ValueError(f"config 'layer_types' must list num_hidden_layers={n_layers} "
                         f"entries, got {len(types)}")
    unknown = [t for t in types if not isinstance(t, str) or t not in _LAYER_TYPES]
    if unknown:
        raise ValueError(f"config 'layer_types' has unsupported entries {unknown[:3]!r}; "
                         "expected 'sliding_attention' or 'full_attention'")
    return [t == "sliding_attention" for t in types]


def _local_layers(cfg, n_layers, use_sliding_window):
    """True per sliding layer by the first rule the config gives, or None when it gives none."""
    if cfg.get("layer_types") is not None:
        return _from_layer_types(cfg["layer_types"], n_layers)
    if cfg.get("sliding_window_pattern") is not None:
        # >= 1: HuggingFace's configs divide by it ((i + 1) % n; 0 is a ZeroDivisionError)
        return swa_pattern(int_key(cfg, "sliding_window_pattern"), n_layers).tolist()
    if use_sliding_window and cfg.get("max_window_layers") is not None:
        m = int_key(cfg, "max_window_layers", minimum=0)
        return [il >= m for il in range(n_layers)]  # m >= n_layers: none (HuggingFace's rule)
    if cfg.get("sliding_window") is not None:
        return [True] * n_layers
    return None


def layer_windows(config):
    """The window of every layer: a list with ``None`` for global layers and ``W`` for local ones.

    Read in this order (the first that applies wins):
      ``use_sliding_window: false``   no windows at all (Qwen2); it must be true, false or
                                      absent ("false" or 0 is an error, as in HuggingFace)
      ``layer_types``                 "sliding_attention" / "full_attention" per layer (Gemma 3,
                                      gpt-oss); must list exactly ``num_hidden_layers`` entries
      ``sliding_window_pattern`` n    llama.cpp's rule, local when ``il % n < n - 1`` (n >= 1;
                                      n > num_hidden_layers makes every layer local)
      ``max_window_layers`` m         with ``use_sliding_window: true``: layers ``il >= m`` (Qwen2;
                                      m >= num_hidden_layers leaves none)
      ``sliding_window`` W            every layer windowed (Mistral-7B-v0.1); null: none
    ``sliding_window``, when given, must be an integer >= 1 whether or not a layer uses it, and
    ``layer_types``, when given, must list known types whether or not it is read.
    A ``models.Model`` gives the windows it read once.
    """
    if isinstance(config, Model):
        return list(config.windows)
    cfg = text_config(config)
    n_layers = int_key(cfg, "num_hidden_layers")
    use_sliding_window = _use_sliding_window(cfg)
    W = _window(cfg)
    if cfg.get("layer_types") is not None:  # checked even where no window applies
        _from_layer_types(cfg["layer_types"], n_layers)
    if use_sliding_window is False:
        return [None] * n_layers
    local = _local_layers(cfg, n_layers, use_sliding_window)
    if local is None or not any(local):
        return [None] * n_layers
    if W is None:
        raise ValueError("config has sliding-window layers but no 'sliding_window' size")
    return [W if is_local else None for is_local in local]


def llamacpp_layer_windows(config):
    """``layer_windows`` as llama.cpp runs the model: every layer global for the model types in
    ``LLAMACPP_NO_SWA`` (Mistral-7B-v0.1, Qwen2, Phi-3: their llama.cpp loaders read no window
    or switch it off), else as ``layer_windows`` reads the config (Gemma 2/3, gpt-oss, and
    configs without a model_type)."""
    if isinstance(config, Model):
        return list(config.llamacpp_windows)
    windows = layer_windows(config)
    if str(text_config(config).get("model_type", "")) in LLAMACPP_NO_SWA:
        return [None] * len(windows)
    return windows


@dataclass(frozen=True)
class Latent:
    """MLA's cached latent (DeepSeek), read by ``latent``: per token and layer one vector of
    ``kv_lora_rank`` plus the shared RoPE key of ``qk_rope_head_dim``, instead of KV heads.

    kv_lora_rank       the latent c's width
    qk_rope_head_dim   the RoPE key's width, shared by every head
    q_lora_rank        the query's low-rank width (None where the config has none)
    """
    kv_lora_rank: int
    qk_rope_head_dim: int
    q_lora_rank: int | None

    @property
    def width(self):
        """kv_lora_rank + qk_rope_head_dim: the values one token caches per layer."""
        return self.kv_lora_rank + self.qk_rope_head_dim


def latent(config):
    """MLA's ``Latent`` of a config with ``kv_lora_rank`` (DeepSeek), else None. A
    ``models.Model`` gives the latent it read once."""
    if isinstance(config, Model):
        return config.latent
    cfg = text_config(config)
    if cfg.get("kv_lora_rank") is None:
        return None
    q_rank = None if cfg.get("q_lora_rank") is None else int_key(cfg, "q_lora_rank")
    return Latent(int_key(cfg, "kv_lora_rank"), int_key(cfg, "qk_rope_head_dim"), q_rank)


def kv_heads(config):
    """h_kv, ``num_key_value_heads`` (h_q when absent, as HuggingFace), checked against h_q:
    what one cache row holds even where a config is run without its MLA latent."""
    return _kv_heads(text_config(config))


def head_dims(config):
    """(d_k, d_v) of one head: ``head_dim`` (else ``hidden_size / num_attention_heads``) for
    both; MLA-shaped configs ``qk_nope_head_dim + qk_rope_head_dim`` and ``v_head_dim``."""
    return _head_dims(text_config(config))


def layers(config):
    """L, ``num_hidden_layers``, checked."""
    return int_key(text_config(config), "num_hidden_layers")


def query_heads(config):
    """h_q, ``num_attention_heads``, checked."""
    return int_key(text_config(config), "num_attention_heads")


def model_type(config):
    """The config's ``model_type`` as a string ("" where it has none)."""
    return str(text_config(config).get("model_type") or "")


def int_dimension(config, key):
    """One integer dimension of the text config (``vocab_size``, ``hidden_size``,
    ``intermediate_size``), checked and named on error: a missing key is "config is missing
    'vocab_size'"."""
    if key not in _DIMENSIONS:
        raise ValueError(f"key must be one of {', '.join(_DIMENSIONS)}, got {key!r}")
    return int_key(text_config(config), key)


_DIMENSIONS = ("vocab_size", "hidden_size", "intermediate_size")


def experts_key(config):
    """The key that gives a text config experts (``num_local_experts``, ``n_routed_experts``),
    or None for a dense model."""
    cfg = text_config(config)
    return next((k for k in ("num_local_experts", "n_routed_experts") if cfg.get(k)), None)


def sliding_window(config):
    """``sliding_window`` W as the config gives it, checked (None when null or absent), and
    whether ``use_sliding_window`` switches it off: (W, switched_off)."""
    cfg = text_config(config)
    return _window(cfg), _use_sliding_window(cfg) is False


@dataclass(frozen=True)
class AttentionKeys:
    """The attention keys of a config.json as it gives them, key by key, read by
    ``attention_keys``: each is None where the config has it null or absent, and nothing is
    derived (``model_shape`` derives the shape compute uses). What a check reasons about when
    it names the key a student's reading of a config got wrong (``checks.kv_cache``).

    nested             the language model's keys sit under ``text_config`` (a multimodal
                       config: the top level has no ``num_hidden_layers``)
    layers             ``num_hidden_layers``
    heads              ``num_attention_heads``
    kv_heads           ``num_key_value_heads``
    head_dim           ``head_dim``
    hidden_size        ``hidden_size``
    kv_lora_rank       MLA's latent width (DeepSeek)
    qk_rope_head_dim   MLA's RoPE key width
    """
    nested: bool
    layers: int | None
    heads: int | None
    kv_heads: int | None
    head_dim: int | None
    hidden_size: int | None
    kv_lora_rank: int | None
    qk_rope_head_dim: int | None

    @property
    def divided_head_dim(self):
        """hidden_size / num_attention_heads where the config gives both and the heads divide
        hidden_size, else None: the d_h of a config without a ``head_dim`` key."""
        if self.heads and self.hidden_size and self.hidden_size % self.heads == 0:
            return self.hidden_size // self.heads
        return None


_ATTENTION_KEYS = ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                   "hidden_size", "kv_lora_rank", "qk_rope_head_dim")


def attention_keys(config):
    """The ``AttentionKeys`` of a config.json dict (a multimodal one's ``text_config``): each
    attention key as the config gives it, an integer >= 1 checked and named on error, or None
    where it is null or absent."""
    cfg = text_config(config)
    given = [None if cfg.get(k) is None else int_key(cfg, k) for k in _ATTENTION_KEYS]
    return AttentionKeys(cfg is not config, *given)
