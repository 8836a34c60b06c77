"""How big a model's weights are: every parameter HuggingFace's model holds, and the bytes its
checkpoint stores, counted from a ``config.json`` dict (``lessonlib.models.configs.load_config``).

The other half of a GPU budget (the KV cache is ``kv_cache``): Llama-3.1-8B holds 8,030,261,248
parameters, 16.06 GB in bf16. The count follows each architecture's module structure in
transformers' modeling files (``models/<arch>/modeling_<arch>.py``; gemma3_text's arch is
gemma3), so ``params`` is what ``sum(p.numel() for p in model.parameters())`` gives for
``AutoModelForCausalLM.from_config``, tied embeddings counted once. Per decoder layer, with
H = hidden_size, I = intermediate_size, h_q, h_kv, d_h as ``models.shape.model_shape`` reads them:

    attention   q (h_q d_h x H), k and v (h_kv d_h x H), o (H x h_q d_h), biases where the
                architecture has them (qwen2: q/k/v; llama, gemma3_text, gpt_oss:
                ``attention_bias``); phi3 fuses q/k/v into one qkv_proj (same count);
                gemma3_text adds q_norm and k_norm (d_h each); gpt_oss one sink per head
    MLP         gate and up (I x H) and down (H x I) (phi3: one gate_up_proj; llama:
                ``mlp_bias``); MoE (gpt_oss, deepseek_v3): E experts of those, a router
                (E x H), deepseek_v3's shared experts beside them
    MLA         deepseek_v3: q_a (q_lora_rank x H) + its norm + q_b, or one q_proj when
                q_lora_rank is null; kv_a (kv_lora_rank + qk_rope_head_dim x H) + its norm,
                kv_b, o (H x h_q v_head_dim)
    norms       two RMSNorm weights (H) per layer (gemma3_text four), and a final one

plus the embedding (vocab_size x H) and lm_head (the same shape, absent when
``tie_word_embeddings``). ``bytes`` stores each tensor as the config's ``torch_dtype`` (or
``dtype``) and ``quantization_config`` say: bf16/fp16 2 bytes, fp32 4; MXFP4 experts (gpt-oss)
4 bits a value plus one uint8 scale per 32; FP8 Linear weights (DeepSeek-V3) 1 byte a value
plus one float32 ``weight_scale_inv`` per weight block. Every choice made is written, in words,
into the result's ``assumptions``.
"""
import math
import re
from dataclasses import dataclass
from typing import Mapping

from .. import _validate as check
from .shape import model_shape
from . import int_key, text_config

__all__ = ["weight_bytes", "Weights", "MODEL_TYPES", "DTYPE_BYTES", "QUANT_METHODS"]

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}  # torch_dtype -> bytes per value
"""torch_dtype -> bytes per value: {"bfloat16": 2, "float16": 2, "float32": 4}."""
_SHORT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
MXFP4_BLOCK = 32  # MXFP4 (OCP microscaling): 32 4-bit values share one 8-bit (E8M0) scale


@dataclass(frozen=True)
class Weights:
    """A model's weights, counted by ``weight_bytes``.

    params       every parameter HF's model holds (tied embeddings once; buffers excluded)
    bytes        the checkpoint's weight bytes, as its dtype and quantization store them
                 (quantization scales and stored buffers included)
    dtype        the torch dtype of every tensor that is not quantized ("bfloat16")
    assumptions  how it was counted, one short sentence each
    """
    params: int
    bytes: int
    dtype: str
    assumptions: tuple


@dataclass(frozen=True)
class _Tensor:
    """One stored tensor: its module's path (as HF names it), its shape and its role.

    role: "linear" (an nn.Linear weight, (out, in)), "experts" (stacked expert weights,
    (E, out, in)), "lm_head", "embed", "norm", "bias", "router", "sinks", or "buffer32" (a
    persistent buffer the checkpoint stores in float32: in ``bytes``, not in ``params``).
    ``in_key``: the config key that sets an experts tensor's input width (for MXFP4's blocks).
    """
    module: str
    shape: tuple
    role: str
    in_key: str = ""

    @property
    def numel(self):
        return math.prod(self.shape)


def _linear(module, n_out, n_in, bias=False, role="linear"):
    out = [_Tensor(module, (n_out, n_in), role)]
    return out + [_Tensor(module, (n_out,), "bias")] if bias else out


def _norm(module, n):
    return [_Tensor(module, (n,), "norm")]


def _flag(cfg, key, default):
    """A bool config key the modeling file reads; absent: the HF config class's default."""
    return default if key not in cfg else check.flag(key, cfg[key])


# --------------------------------------------------------------------------- architectures

def _attention(cfg, p, shape, *, bias_qkv, bias_o, fused=False):
    """q, k, v, o of a llama-like attention (phi3: q/k/v fused into qkv_proj)."""
    H = int_key(cfg, "hidden_size")
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    if fused:
        qkv = _linear(f"{p}.self_attn.qkv_proj", q + 2 * kv, H, bias_qkv)
    else:
        qkv = (_linear(f"{p}.self_attn.q_proj", q, H, bias_qkv)
               + _linear(f"{p}.self_attn.k_proj", kv, H, bias_qkv)
               + _linear(f"{p}.self_attn.v_proj", kv, H, bias_qkv))
    return qkv + _linear(f"{p}.self_attn.o_proj", H, q, bias_o)


def _mlp(cfg, p, I, *, bias=False, fused=False):
    """gate, up (I x H) and down (H x I); phi3 fuses gate and up into gate_up_proj."""
    H = int_key(cfg, "hidden_size")
    if fused:
        up = _linear(f"{p}.gate_up_proj", 2 * I, H, bias)
    else:
        up = _linear(f"{p}.gate_proj", I, H, bias) + _linear(f"{p}.up_proj", I, H, bias)
    return up + _linear(f"{p}.down_proj", H, I, bias)


def _norms(cfg, p, names=("input_layernorm", "post_attention_layernorm")):
    H = int_key(cfg, "hidden_size")
    return [t for name in names for t in _norm(f"{p}.{name}", H)]


def _llama_layer(cfg, p, shape):
    """modeling_llama.py: attention_bias on q/k/v/o, mlp_bias on the MLP."""
    b = _flag(cfg, "attention_bias", False)
    return (_attention(cfg, p, shape, bias_qkv=b, bias_o=b)
            + _mlp(cfg, f"{p}.mlp", int_key(cfg, "intermediate_size"),
                   bias=_flag(cfg, "mlp_bias", False)) + _norms(cfg, p))


def _mistral_layer(cfg, p, shape):
    """modeling_mistral.py: no biases anywhere."""
    return (_attention(cfg, p, shape, bias_qkv=False, bias_o=False)
            + _mlp(cfg, f"{p}.mlp", int_key(cfg, "intermediate_size")) + _norms(cfg, p))


def _qwen2_layer(cfg, p, shape):
    """modeling_qwen2.py: q/k/v always have biases, o none."""
    return (_attention(cfg, p, shape, bias_qkv=True, bias_o=False)
            + _mlp(cfg, f"{p}.mlp", int_key(cfg, "intermediate_size")) + _norms(cfg, p))


def _phi3_layer(cfg, p, shape):
    """modeling_phi3.py: qkv_proj and gate_up_proj fused, no biases."""
    return (_attention(cfg, p, shape, bias_qkv=False, bias_o=False, fused=True)
            + _mlp(cfg, f"{p}.mlp", int_key(cfg, "intermediate_size"), fused=True)
            + _norms(cfg, p))


def _gemma3_layer(cfg, p, shape):
    """modeling_gemma3.py: q_norm and k_norm (d_h each), four norms around attention and MLP."""
    b = _flag(cfg, "attention_bias", False)
    return (_attention(cfg, p, shape, bias_qkv=b, bias_o=b)
            + _norm(f"{p}.self_attn.q_norm", shape.head_dim)
            + _norm(f"{p}.self_attn.k_norm", shape.head_dim)
            + _mlp(cfg, f"{p}.mlp", int_key(cfg, "intermediate_size"))
            + _norms(cfg, p, ("input_layernorm", "post_attention_layernorm",
                              "pre_feedforward_layernorm", "post_feedforward_layernorm")))


def _gpt_oss_layer(cfg, p, shape):
    """modeling_gpt_oss.py: attention with biases and one sink per head; a router with a bias;
    E experts of gate_up (2I x H) and down (H x I), each with a bias (GptOssExperts)."""
    H, I = int_key(cfg, "hidden_size"), int_key(cfg, "intermediate_size")
    E = int_key(cfg, "num_local_experts")
    b = _flag(cfg, "attention_bias", True)
    experts = f"{p}.mlp.experts"
    return (_attention(cfg, p, shape, bias_qkv=b, bias_o=b)
            + [_Tensor(f"{p}.self_attn", (shape.heads,), "sinks")]
            + _linear(f"{p}.mlp.router", E, H, bias=True, role="router")
            + [_Tensor(experts, (E, 2 * I, H), "experts", "hidden_size"),
               _Tensor(experts, (E, 2 * I), "bias"),
               _Tensor(experts, (E, H, I), "experts", "intermediate_size"),
               _Tensor(experts, (E, H), "bias")]
            + _norms(cfg, p))


def _deepseek_attention(cfg, p, shape):
    """DeepseekV3Attention: MLA's low-rank q (q_a, its norm, q_b; q_proj when q_lora_rank is
    null) and kv (kv_a with the shared RoPE key, its norm, kv_b), and o."""
    H, h, b = int_key(cfg, "hidden_size"), shape.heads, _flag(cfg, "attention_bias", False)
    if "q_lora_rank" not in cfg:  # null is a model without the q LoRA; absent is no answer
        raise ValueError("config is missing 'q_lora_rank' (null for a q_proj without LoRA)")
    r_kv, d_rope = int_key(cfg, "kv_lora_rank"), int_key(cfg, "qk_rope_head_dim")
    d_nope, d_v = int_key(cfg, "qk_nope_head_dim"), int_key(cfg, "v_head_dim")
    a = f"{p}.self_attn"
    if cfg["q_lora_rank"] is None:
        q = _linear(f"{a}.q_proj", h * (d_nope + d_rope), H)
    else:
        r_q = int_key(cfg, "q_lora_rank")
        q = (_linear(f"{a}.q_a_proj", r_q, H, b) + _norm(f"{a}.q_a_layernorm", r_q)
             + _linear(f"{a}.q_b_proj", h * (d_nope + d_rope), r_q))
    return (q + _linear(f"{a}.kv_a_proj_with_mqa", r_kv + d_rope, H, b)
            + _norm(f"{a}.kv_a_layernorm", r_kv)
            + _linear(f"{a}.kv_b_proj", h * (d_nope + d_v), r_kv)
            + _linear(f"{a}.o_proj", H, h * d_v, b))


def _e9(n):
    return f"{n / 1e9:.1f}e9"


def _gpt_oss_notes(cfg):
    return ["norms at the checkpoint dtype (transformers upcasts them to float32 in memory: "
            "_keep_in_fp32_modules)"]


def _deepseek_notes(cfg):
    notes = ["e_score_correction_bias: a float32 buffer per MoE layer, in bytes, not in params "
             "(a buffer in HF's model)"]
    n, mtp = _mtp_params(cfg, model_shape(cfg))
    if n:
        notes.append(f"num_nextn_predict_layers={n}: the checkpoint's multi-token-prediction "
                     f"layer ({_e9(mtp)} params with its copies of embed_tokens and the head) "
                     f"is not in HF's model: not counted")
    return notes


def _deepseek_layer(cfg, p, shape, il):
    """DeepseekV3DecoderLayer: a dense MLP for il < first_k_dense_replace, else the MoE:
    n_routed_experts experts (gate, up, down of moe_intermediate_size, stored per projection as
    the checkpoint does), the router gate (E x H) with its e_score_correction_bias buffer, and
    the shared experts (one MLP of moe_intermediate_size x n_shared_experts)."""
    H = int_key(cfg, "hidden_size")
    if cfg.get("moe_layer_freq") is not None and int_key(cfg, "moe_layer_freq") != 1:
        raise ValueError(f"config 'moe_layer_freq' must be 1: transformers' deepseek_v3 model "
                         f"puts a MoE on every layer from first_k_dense_replace on, got "
                         f"{cfg['moe_layer_freq']}")
    if il < int_key(cfg, "first_k_dense_replace", minimum=0):
        mlp = _mlp(cfg, f"{p}.mlp", int_key(cfg, "intermediate_size"))
    else:
        E, I = int_key(cfg, "n_routed_experts"), int_key(cfg, "moe_intermediate_size")
        experts = f"{p}.mlp.experts"
        mlp = ([_Tensor(experts, (E, I, H), "experts", "hidden_size"),  # gate
                _Tensor(experts, (E, I, H), "experts", "hidden_size"),  # up
                _Tensor(experts, (E, H, I), "experts", "moe_intermediate_size")]  # down
               + [_Tensor(f"{p}.mlp.gate", (E, H), "router"),
                  _Tensor(f"{p}.mlp.gate", (E,), "buffer32")]
               + _mlp(cfg, f"{p}.mlp.shared_experts",
                      I * int_key(cfg, "n_shared_experts", minimum=0)))
    return _deepseek_attention(cfg, p, shape) + mlp + _norms(cfg, p)


@dataclass(frozen=True)
class _Arch:
    """How one model_type is counted.

    layer      (cfg, module prefix, shape, layer index) -> the layer's tensors
    tied       HF's config class default for tie_word_embeddings
    required   keys whose HF default is a number no rule derives (head_dim 256 in
               Gemma3TextConfig, num_key_value_heads 8 in MistralConfig): they must be given
    ignores    bias keys this architecture's modeling file never reads
    notes      (cfg) -> what else its count assumes, in words
    """
    layer: object
    tied: bool
    required: tuple = ()
    ignores: tuple = ("attention_bias", "mlp_bias")
    notes: object = lambda cfg: []


def _no_index(layer):
    return lambda cfg, p, shape, il: layer(cfg, p, shape)


_COMMON = ("num_hidden_layers", "vocab_size", "hidden_size", "num_attention_heads")
_ARCHS = {
    "llama": _Arch(_no_index(_llama_layer), False, ("intermediate_size",), ()),
    "mistral": _Arch(_no_index(_mistral_layer), False,
                     ("intermediate_size", "num_key_value_heads")),
    "qwen2": _Arch(_no_index(_qwen2_layer), False, ("intermediate_size", "num_key_value_heads")),
    "phi3": _Arch(_no_index(_phi3_layer), False, ("intermediate_size",)),
    "gemma3_text": _Arch(_no_index(_gemma3_layer), True,
                         ("intermediate_size", "num_key_value_heads", "head_dim"),
                         ("mlp_bias",)),
    "gpt_oss": _Arch(_no_index(_gpt_oss_layer), False,
                     ("intermediate_size", "num_key_value_heads", "head_dim",
                      "num_local_experts"), ("mlp_bias",), _gpt_oss_notes),
    "deepseek_v3": _Arch(_deepseek_layer, False,
                         ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
                          "first_k_dense_replace", "n_routed_experts", "moe_intermediate_size",
                          "n_shared_experts"), ("mlp_bias",), _deepseek_notes),
}
MODEL_TYPES = tuple(_ARCHS)  # the model_types weight_bytes counts
"""The model_types ``weight_bytes`` counts: ("llama", "mistral", "qwen2", "phi3", "gemma3_text",
"gpt_oss", "deepseek_v3")."""


def _model_type(cfg):
    known = ", ".join(MODEL_TYPES)
    if cfg.get("model_type") is None:
        lacks = [k for k in _COMMON + ("intermediate_size",) if cfg.get(k) is None]
        also = f"; it also lacks {', '.join(map(repr, lacks))}" if lacks else ""
        raise ValueError(f"config is missing 'model_type': weight_bytes counts {known}{also}")
    model_type = cfg["model_type"]
    if not isinstance(model_type, str) or model_type not in _ARCHS:
        raise ValueError(f"model_type must be one of {known} (the architectures weight_bytes "
                         f"counts module by module), got {check.describe(model_type)}")
    return model_type


def _tensors(cfg, model_type, tied):
    """Every stored tensor of the model, in HF's module names."""
    arch = _ARCHS[model_type]
    missing = [k for k in _COMMON + arch.required if cfg.get(k) is None]
    if missing:
        raise ValueError(f"config is missing {', '.join(map(repr, missing))}: {model_type}'s "
                         f"weights are counted from them")
    shape = model_shape(cfg)
    V, H = int_key(cfg, "vocab_size"), int_key(cfg, "hidden_size")
    out = [_Tensor("model.embed_tokens", (V, H), "embed")]
    for il in range(shape.layers):
        out += arch.layer(cfg, f"model.layers.{il}", shape, il)
    out += _norm("model.norm", H)
    return out if tied else out + [_Tensor("lm_head", (V, H), "lm_head")]


def _mtp_params(cfg, shape):
    """Params of deepseek_v3's multi-token-prediction layers as DeepSeek's checkpoint stores
    them (layers L, L+1, ...: a MoE decoder layer, enorm, hnorm, eh_proj (H x 2H), the shared
    head's norm, and copies of embed_tokens and the head)."""
    n = 0 if cfg.get("num_nextn_predict_layers") is None else \
        int_key(cfg, "num_nextn_predict_layers", minimum=0)
    V, H = int_key(cfg, "vocab_size"), int_key(cfg, "hidden_size")
    per = [t for il in range(shape.layers, shape.layers + n)
           for t in _deepseek_layer(cfg, f"model.layers.{il}", shape, il) if t.role != "buffer32"]
    return n, sum(t.numel for t in per) + n * (3 * H + 2 * H * H + 2 * V * H)


# --------------------------------------------------------------------------- storage

def _dtype(sources, quant_method):
    """(name, source key) of the dtype of unquantized tensors: ``torch_dtype`` or ``dtype``
    (transformers 5 writes the second); both given must agree."""
    found = {}
    for src in sources:
        for key in ("torch_dtype", "dtype"):
            if src.get(key) is not None:
                found.setdefault(key, check.choice(key, src[key], tuple(DTYPE_BYTES)))
    if len(set(found.values())) > 1:
        raise ValueError(f"config's torch_dtype {found['torch_dtype']!r} and dtype "
                         f"{found['dtype']!r} disagree")
    if found:
        key = next(iter(found))
        return found[key], key
    if quant_method == "mxfp4":  # gpt-oss-20b's config has none; its checkpoint is BF16 + U8
        return "bfloat16", None
    raise ValueError("config is missing 'torch_dtype' (or 'dtype'): the bytes per parameter "
                     "of the weights")


def _not_converted(module, patterns):
    """transformers' ``should_convert_module``, negated: a pattern matches ``module`` from the
    start up to a module boundary (as a regex: "model.layers.*.self_attn") or as a suffix."""
    boundary = r"(?:(?<=\.)|(?=\.|$))"
    return any(re.match(rf"(?:{key}){boundary}", module) or module.endswith(key)
               for key in patterns)


def _patterns(q):
    pats = q.get("modules_to_not_convert")
    if pats is None:
        return ()
    if not isinstance(pats, (list, tuple)) or not all(isinstance(s, str) for s in pats):
        raise ValueError(f"quantization_config.modules_to_not_convert must be a list of module "
                         f"names, got {check.describe(pats)}")
    return tuple(pats)


@dataclass(frozen=True)
class _Mxfp4:
    """transformers' mxfp4 integration: only gpt_oss's experts (GptOssMLP.experts) are
    converted; their gate_up_proj and down_proj are stored as ``*_blocks`` (two 4-bit values a
    byte) and ``*_scales`` (one uint8 per 32 values along the input); their biases are not."""
    patterns: tuple

    def converts(self, t):
        return t.role == "experts" and not _not_converted(t.module, self.patterns)

    def bytes(self, t):
        if t.shape[-1] % MXFP4_BLOCK:
            raise ValueError(f"mxfp4 stores {t.module} in blocks of {MXFP4_BLOCK} values along "
                             f"{t.in_key}, which is {t.shape[-1]}: not a multiple of "
                             f"{MXFP4_BLOCK}")
        return t.numel // 2 + t.numel // MXFP4_BLOCK

    def describe(self):
        kept = ", ".join(self.patterns) if self.patterns else "nothing listed"
        return (f"experts in MXFP4: 4 bits + one 8-bit scale per {MXFP4_BLOCK} values "
                f"(quantization_config); their biases and every other tensor unquantized "
                f"(modules_to_not_convert: {kept})")


@dataclass(frozen=True)
class _Fp8:
    """transformers' finegrained_fp8 integration (DeepSeek-V3's checkpoint): every nn.Linear
    weight but lm_head, and the experts, in one byte a value plus a float32
    ``weight_scale_inv`` per (b_out x b_in) block, ceil-divided per dim; embeddings, norms,
    biases, lm_head and the router gate (no nn.Linear) stay unquantized."""
    patterns: tuple
    block: tuple
    fmt: str

    def converts(self, t):
        return t.role in ("linear", "experts") and not _not_converted(t.module, self.patterns)

    def bytes(self, t):
        b_out, b_in = self.block
        *lead, n_out, n_in = t.shape
        return t.numel + 4 * math.prod(lead) * -(-n_out // b_out) * -(-n_in // b_in)

    def describe(self):
        b_out, b_in = self.block
        return (f"Linear weights in FP8 ({self.fmt}): 1 byte + one float32 weight_scale_inv "
                f"per {b_out}x{b_in} block (quantization_config); embeddings, norms, lm_head "
                f"and the router gate unquantized")


def _mxfp4(q, model_type):
    if model_type != "gpt_oss":
        raise ValueError(f"quantization_config.quant_method 'mxfp4' quantizes gpt_oss's experts "
                         f"only (transformers' replace_with_mxfp4_linear), not {model_type}'s")
    return _Mxfp4(_patterns(q))


def _fp8(q, model_type):
    block = q.get("weight_block_size")
    where = "quantization_config.weight_block_size"
    if block is None:
        raise ValueError(f"config is missing '{where}' (DeepSeek-V3: [128, 128]): the size of "
                         f"the blocks that share one scale")
    if not isinstance(block, (list, tuple)) or len(block) != 2:
        raise ValueError(f"{where} must be [rows, columns], got {check.describe(block)}")
    block = tuple(check.integer(where, b, minimum=1) for b in block)
    if q.get("activation_scheme") is not None:  # static would store activation scales too
        check.choice("quantization_config.activation_scheme", q["activation_scheme"],
                     ("dynamic",))
    fmt = "e4m3" if q.get("fmt") is None else check.choice("quantization_config.fmt", q["fmt"],
                                                            ("e4m3", "e5m2"))
    return _Fp8(_patterns(q), block, fmt)


_QUANT = {"mxfp4": _mxfp4, "fp8": _fp8}
QUANT_METHODS = tuple(_QUANT)  # the quantization_config.quant_method values it stores
"""The ``quantization_config.quant_method`` values ``weight_bytes`` reads: ("mxfp4", "fp8")."""


def _quantization(sources, model_type):
    q = next((s["quantization_config"] for s in sources
              if s.get("quantization_config") is not None), None)
    if q is None:
        return None, None
    if not isinstance(q, Mapping):
        raise ValueError(f"quantization_config must be a dict, got {check.describe(q)}")
    method = q.get("quant_method")
    if not isinstance(method, str) or method not in _QUANT:
        raise ValueError(f"quantization_config.quant_method must be one of "
                         f"{', '.join(QUANT_METHODS)} (the formats weight_bytes stores), got "
                         f"{check.describe(method)}")
    return method, _QUANT[method](q, model_type)


# --------------------------------------------------------------------------- the count

def weight_bytes(config):
    """The weights of a config.json dict: ``Weights(params, bytes, dtype, assumptions)``.

    Counted for ``MODEL_TYPES`` (llama, mistral, qwen2, phi3, gemma3_text, gpt_oss,
    deepseek_v3) from the module structure of transformers' modeling file, with the defaults of
    its config class (``tie_word_embeddings``: true for gemma3_text only; ``attention_bias``:
    true for gpt_oss only). Llama-3.1-8B: 8,030,261,248 params, 16,060,522,496 bytes in bf16;
    gpt-oss-20b: 20,914,757,184 params, 13,761,264,768 bytes (MXFP4 experts, the rest bf16);
    DeepSeek-V3: 671,026,404,352 params in HF's model (its multi-token-prediction layer is not
    one of them), 673,150,611,808 bytes in FP8 with float32 scales per 128 x 128 block.

    Errors name the config key: a missing or unknown ``model_type`` (naming the types counted),
    a missing shape key (``vocab_size``, ``intermediate_size``, ``head_dim`` where the
    architecture's HF default is not hidden_size / num_attention_heads, ...), a missing or
    unknown ``torch_dtype`` (mxfp4 checkpoints: bf16), an unknown
    ``quantization_config.quant_method``. A multimodal config (``text_config`` beside a
    ``vision_config``) is refused: its vision tower is not counted here.
    """
    cfg = text_config(config)
    if cfg is not config and config.get("vision_config") is not None:
        raise ValueError("config nests text_config beside a vision_config: weight_bytes counts "
                         "a language model only; pass config['text_config'] (the vision tower "
                         "is not counted)")
    sources = (cfg, config) if cfg is not config else (cfg,)
    model_type = _model_type(cfg)
    arch = _ARCHS[model_type]
    tied = _flag(cfg, "tie_word_embeddings", arch.tied)
    tensors = _tensors(cfg, model_type, tied)
    method, quant = _quantization(sources, model_type)
    dtype, dtype_key = _dtype(sources, method)

    params = sum(t.numel for t in tensors if t.role != "buffer32")
    notes = _assumptions(cfg, model_type, tied, quant, dtype, dtype_key)
    return Weights(params, _stored_bytes(tensors, DTYPE_BYTES[dtype], quant), dtype, notes)


def _stored_bytes(tensors, dtype_bytes, quant):
    """Each tensor as stored: quantized where the method converts it, float32 buffers, the
    rest at the dtype."""
    total = 0
    for t in tensors:
        if t.role == "buffer32":
            total += 4 * t.numel
        elif quant is not None and quant.converts(t):
            total += quant.bytes(t)
        else:
            total += dtype_bytes * t.numel
    return total


def _assumptions(cfg, model_type, tied, quant, dtype, dtype_key):
    arch, dtype_bytes = _ARCHS[model_type], DTYPE_BYTES[dtype]
    which = "unquantized tensors in " if quant is not None else ""
    said = (f"{which}{_SHORT[dtype]} ({dtype_key}): {dtype_bytes} bytes per parameter"
            if dtype_key else f"no torch_dtype: an mxfp4 checkpoint (gpt-oss) stores its "
            f"unquantized tensors in bf16, {dtype_bytes} bytes per parameter")
    notes = [f"counted module by module as transformers' {model_type} model builds it", said]
    if quant is not None:
        notes.append(quant.describe())
    tie_from = "tie_word_embeddings" if "tie_word_embeddings" in cfg else \
        f"{model_type}'s default tie_word_embeddings={str(arch.tied).lower()}"
    notes.append(f"lm_head tied to embed_tokens: counted once ({tie_from})" if tied
                 else f"lm_head separate from embed_tokens ({tie_from})")
    notes += [f"{key}: true is not read by transformers' {model_type} model: no such biases"
              for key in arch.ignores if cfg.get(key) is True]
    return tuple(notes + arch.notes(cfg))
