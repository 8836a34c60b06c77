"""GGUF files, llama.cpp's model format: read one's metadata as a config.json dict, write small ones.

``read_gguf(path)`` memory-maps the file, walks its metadata with the ``gguf`` package's value
types and quantization sizes (llama.cpp's own; its GGUFReader is the tests' oracle, too slow on a
real tokenizer to use here: ``_walk``), reads the architecture's keys and maps them onto the config.json keys the rest of lessonlib
reads, as llama.cpp's loader reads them (``src/models/<arch>.cpp``; defaults from
``llama_model::load_hparams``):

    {arch}.block_count               num_hidden_layers
    {arch}.context_length            max_position_embeddings (llama.cpp's n_ctx_train, -c 0)
    {arch}.embedding_length          hidden_size
    {arch}.feed_forward_length       intermediate_size
    {arch}.attention.head_count      num_attention_heads (a per-layer array must be constant)
    {arch}.attention.head_count_kv   num_key_value_heads (default: head_count)
    {arch}.attention.key_length      head_dim (default: embedding_length / head_count)
    {arch}.attention.sliding_window  sliding_window, on the layers llama.cpp's pattern makes
                                     local: gemma3 5 of every 6, gpt-oss every other one
                                     (``{arch}.attention.sliding_window_pattern`` overrides the
                                     period); llama, qwen2 and phi3 run no window
    {arch}.rope.freq_base            rope_theta (default 10,000); gemma3's freq_base_swa:
                                     rope_local_base_freq
    {arch}.rope.dimension_count      the rotary dims (partial_rotary_factor; MLA's
                                     qk_rope_head_dim)
    {arch}.rope.scaling.*            rope_scaling: linear (factor), yarn (factor,
                                     original_context_length, yarn_beta_fast/slow; DeepSeek's
                                     yarn_log_multiplier is 0.1 x mscale_all_dim)
    {arch}.attention.kv_lora_rank, key_length_mla, value_length_mla, q_lora_rank   MLA

Three things live in tensors, not keys: llama3 scaling (``rope_freqs.weight``, one divisor per
pair: the converter writes no rope.scaling key for it), longrope's two lists
(``rope_factors_long`` / ``rope_factors_short``) and gpt-oss's learned sinks
(``blk.N.attn_sinks.weight``). The reader reads those few small tensors; the weights' size is
the sum of every tensor's data, so a multi-GB file inspects without reading its weights.

A GGUF file describes the model as llama.cpp runs it, which is not always as HuggingFace does:
Mistral-7B-v0.1 converts to the llama architecture and loses its window, llama.cpp's YaRN rounds
the band's ends to whole pairs (gpt-oss's ``truncate: false`` is not written). The config built
here says what llama.cpp will do.

``write_gguf(path, config)`` writes the file llama.cpp's converter would write for a config.json
(the same keys, and llama3's rope_freqs, longrope's factor lists, gpt-oss's sinks as tensors),
with a tiny token embedding in place of the weights: what the tests use to check that a GGUF
and its config give the same report.
"""
import math
import mmap
import os
import struct
from dataclasses import dataclass

import numpy as np

from .. import _validate as check
from . import int_key, text_config
from . import rope
from .shape import layer_windows, model_shape, swa_pattern
from .configs import config_dict

__all__ = ["read_gguf", "write_gguf", "write_model_gguf", "finish", "GGUFModel", "ARCHITECTURES", "MODEL_TYPES"]

# GGUF architecture -> HF model_type of the config built from it
ARCHITECTURES = {"llama": "llama", "qwen2": "qwen2", "gemma3": "gemma3_text", "gpt-oss": "gpt_oss",
                 "deepseek2": "deepseek_v3", "phi3": "phi3"}
"""{GGUF architecture: model_type} of the config ``read_gguf`` builds, for the architectures
it reads: llama, qwen2, gemma3, gpt-oss, deepseek2, phi3."""
# HF model_type -> GGUF architecture llama.cpp's converter writes (Mistral-7B is "llama")
MODEL_TYPES = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "gemma3_text": "gemma3",
               "gemma3": "gemma3", "gpt_oss": "gpt-oss", "deepseek_v3": "deepseek2",
               "deepseek_v2": "deepseek2", "phi3": "phi3"}
"""{model_type: GGUF architecture} llama.cpp's converter writes (mistral -> llama): the
model types ``write_gguf`` writes."""
# llama.cpp's set_swa_pattern period per architecture (layer il is local when il % n < n - 1)
_SWA_PERIOD = {"gemma3": 6, "gpt-oss": 2}


@dataclass(frozen=True)
class GGUFModel:
    """``read_gguf``'s answer: the config.json dict llama.cpp's reading of the file amounts to,
    the architecture, and the bytes of tensor data (the weights as stored: quantized or not)."""
    path: str
    architecture: str
    config: dict
    tensor_bytes: int
    n_tensors: int


def _gguf():
    try:
        import gguf
    except ImportError:  # pragma: no cover - gguf is in requirements.txt
        raise ValueError("reading GGUF files needs the gguf package (pip install gguf); it is "
                         "in requirements.txt") from None
    return gguf


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}  # GGUFValueType -> struct format (8 STRING, 9 ARRAY)
_NUMPY = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?", 10: "<u8",
          11: "<i8", 12: "<f8"}
MAX_ARRAY_READ = 4096  # longer arrays (a tokenizer's tokens and merges) are skipped, their length kept


@dataclass(frozen=True)
class _Tensor:
    name: str
    ne: tuple  # ggml order, innermost first
    ggml_type: int
    offset: int  # from the start of the data section
    n_bytes: int


class _Skipped(list):
    """A long array the walker stepped over: ``count`` elements, not read."""

    def __init__(self, count):
        super().__init__()
        self.count = count


def _walk(path):
    """(metadata {key: value}, [_Tensor], data offset, memory map) of a GGUF file.

    The gguf package's GGUFReader turns every element of every array into numpy views: about
    18 s for an 8B model's 128,256 tokens and 280,147 merges. This walks the same format (the
    gguf package's value types and quantization sizes) over a memory map, reading scalars and
    short arrays and stepping over long ones, so a multi-GB file takes a fraction of a second."""
    gguf = _gguf()
    with open(path, "rb") as fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            raise ValueError("the file is empty") from None
    unpack = struct.unpack_from
    if mm[:4] != b"GGUF":
        raise ValueError("no GGUF magic at the start of the file")
    version, n_tensors, n_kv = unpack("<IQQ", mm, 4)
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version} (this reader knows 2 and 3)")
    off = 24

    def string(off):
        (n,) = unpack("<Q", mm, off)
        if off + 8 + n > len(mm):
            raise ValueError("a string runs past the end of the file")
        return bytes(mm[off + 8:off + 8 + n]).decode("utf-8", "replace"), off + 8 + n

    def value(kind, off):
        if kind == 8:
            return string(off)
        if kind in _SCALARS:
            fmt = _SCALARS[kind]
            return unpack(fmt, mm, off)[0], off + struct.calcsize(fmt)
        if kind == 9:
            sub, count = unpack("<IQ", mm, off)
            off += 12
            if sub == 8:
                if count > MAX_ARRAY_READ:
                    for _ in range(count):  # lengths only
                        off += 8 + unpack("<Q", mm, off)[0]
                    return _Skipped(count), off
                out = []
                for _ in range(count):
                    v, off = string(off)
                    out.append(v)
                return out, off
            if sub not in _NUMPY:
                raise ValueError(f"array of unknown value type {sub}")
            size = np.dtype(_NUMPY[sub]).itemsize
            if count > MAX_ARRAY_READ:
                return _Skipped(count), off + size * count
            arr = np.frombuffer(mm, dtype=_NUMPY[sub], count=count, offset=off)
            return arr.tolist(), off + size * count
        raise ValueError(f"unknown value type {kind}")

    meta = {}
    for _ in range(n_kv):
        key, off = string(off)
        (kind,) = unpack("<I", mm, off)
        meta[key], off = value(kind, off + 4)
    tensors = []
    for _ in range(n_tensors):
        name, off = string(off)
        (n_dims,) = unpack("<I", mm, off)
        ne = unpack(f"<{n_dims}Q", mm, off + 4)
        off += 4 + 8 * n_dims
        ggml_type, t_off = unpack("<IQ", mm, off)
        off += 12
        try:
            block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(ggml_type)]
        except (ValueError, KeyError):
            raise ValueError(f"tensor {name!r} has unknown ggml type {ggml_type}") from None
        n = math.prod(ne)
        tensors.append(_Tensor(name, tuple(ne), ggml_type, t_off, n // block * type_size))
    align = meta.get("general.alignment", 32)
    data = off + (-off) % align
    return meta, tensors, data, mm


class _Fields:
    """The metadata of one file, read by key, with errors that name the file and the key."""

    def __init__(self, meta, path, arch):
        self.meta, self.path, self.arch = meta, path, arch

    def key(self, suffix):
        return f"{self.arch}.{suffix}"

    def get(self, suffix, default=None):
        return self.meta.get(self.key(suffix), default)

    def need(self, suffix):
        value = self.get(suffix)
        if value is None:
            raise ValueError(f"{self.path}: GGUF key {self.key(suffix)!r} is missing (llama.cpp "
                             f"needs it for the {self.arch} architecture)")
        return value

    def whole(self, suffix, value, minimum=1):
        if isinstance(value, list):
            if not value:
                raise ValueError(f"{self.path}: GGUF key {self.key(suffix)!r} is an empty array")
            if len(set(value)) > 1:
                raise ValueError(f"{self.path}: GGUF key {self.key(suffix)!r} varies per layer "
                                 f"({sorted(set(value))[:4]}...): per-layer values are not "
                                 "modelled here")
            value = value[0]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        try:
            return check.integer(self.key(suffix), value, minimum=minimum)
        except ValueError as err:
            raise ValueError(f"{self.path}: {err}") from None

    def int(self, suffix, default=None, minimum=1):
        value = self.get(suffix)
        if value is None:
            if default is None:
                self.need(suffix)
            return default
        return self.whole(suffix, value, minimum)

    def real(self, suffix, default=None):
        value = self.get(suffix)
        if value is None:
            return default
        try:
            return float(check.real(self.key(suffix), value))
        except ValueError as err:
            raise ValueError(f"{self.path}: {err}") from None


class _File:
    """The walked file: metadata, tensors by name, and the few small tensors' values."""

    def __init__(self, path):
        self.path = path
        self.meta, tensors, self.data, self.mm = _walk(path)
        self.tensors = {t.name: t for t in tensors}

    def floats(self, name):
        """A small F32 tensor's values (rope factors), or None when the file has none."""
        t = self.tensors.get(name)
        if t is None:
            return None
        if t.ggml_type != 0:  # F32
            raise ValueError(f"{self.path}: tensor {name!r} must be F32 (ggml type 0), got type "
                             f"{t.ggml_type}")
        start = self.data + t.offset
        if start + t.n_bytes > len(self.mm):
            raise ValueError(f"{self.path}: tensor {name!r} runs past the end of the file")
        values = np.frombuffer(self.mm, dtype="<f4", count=t.n_bytes // 4, offset=start)
        values = values.astype(np.float64)
        if not np.all(np.isfinite(values)) or not np.all(values > 0):
            raise ValueError(f"{self.path}: tensor {name!r} must hold positive finite factors")
        return values.tolist()


def read_gguf(path):
    """The ``GGUFModel`` of a GGUF file: its config dict (see the module docstring), its
    architecture and its tensor bytes. An unknown architecture, a missing key or a value of
    the wrong kind is a ValueError naming the file and the key.

    The metadata is walked over a memory map: scalars and short arrays read, a tokenizer's long
    arrays stepped over (an 8 GiB Llama-3.1-8B-shaped file in about 0.1 s, benchmarks/RESULTS.md).
    The config carries what has no config.json key under names of its own: llama3's per-pair
    divisors (the ``rope_freqs`` tensor) as ``_gguf_rope_freqs``, gpt-oss's sinks (from
    ``blk.0.attn_sinks.weight``) as ``_gguf_sinks``, and the context length also as
    ``_gguf_context_length``. Errors, each naming the file: not a file, not GGUF, an
    architecture not in ``ARCHITECTURES``, a missing key (named with its ``{arch}.`` prefix), a
    per-layer array that varies, unequal key and value head widths (not MLA), a rope scaling
    type other than none, linear and yarn."""
    path = check.text("path", path)
    if not os.path.isfile(path):
        raise ValueError(f"path {path!r} is not a file")
    try:
        file = _File(path)
    except (ValueError, OSError, struct.error) as err:
        raise ValueError(f"{path}: not a readable GGUF file ({err})") from None
    arch = file.meta.get("general.architecture")
    if arch is None or arch not in ARCHITECTURES:
        file.mm.close()
    if arch is None:
        raise ValueError(f"{path}: GGUF key 'general.architecture' is missing")
    if arch not in ARCHITECTURES:
        raise ValueError(f"{path}: GGUF architecture {arch!r} is not one lessonlib reads (it "
                         f"reads {', '.join(ARCHITECTURES)})")
    try:
        cfg = _config(_Fields(file.meta, path, arch), file, path, arch)
    finally:
        file.mm.close()
    nbytes = sum(t.n_bytes for t in file.tensors.values())
    return GGUFModel(path, arch, cfg, nbytes, len(file.tensors))


def _config(f, file, path, arch):
    layers = f.int("block_count")
    heads = f.int("attention.head_count")
    kv_heads = f.int("attention.head_count_kv", default=heads)
    hidden = f.int("embedding_length")
    ctx = f.int("context_length")
    cfg = {"model_type": ARCHITECTURES[arch], "num_hidden_layers": layers,
           "num_attention_heads": heads, "num_key_value_heads": kv_heads, "hidden_size": hidden,
           "max_position_embeddings": ctx, "_gguf_context_length": ctx,
           "_source": f"read from the GGUF file {path} (llama.cpp's view of the model)"}
    ff = f.get("feed_forward_length")
    if ff is not None:
        cfg["intermediate_size"] = f.whole("feed_forward_length", ff)
    vocab = f.get("vocab_size")
    if vocab is not None:
        cfg["vocab_size"] = f.whole("vocab_size", vocab)
    else:
        tokens = file.meta.get("tokenizer.ggml.tokens")
        embd = file.tensors.get("token_embd.weight")
        if tokens is not None:
            cfg["vocab_size"] = tokens.count if isinstance(tokens, _Skipped) else len(tokens)
        elif embd is not None and len(embd.ne) == 2:
            cfg["vocab_size"] = int(embd.ne[1])  # ggml's ne: {n_embd, n_vocab}
    default_head = hidden // heads if hidden % heads == 0 else None
    head_k = f.int("attention.key_length", default=default_head)
    head_v = f.int("attention.value_length", default=head_k)
    n_rot = f.int("rope.dimension_count", default=head_k)
    kv_lora = f.int("attention.kv_lora_rank", default=0, minimum=0)
    k_mla = f.int("attention.key_length_mla", default=0, minimum=0)
    if arch == "deepseek2" and kv_lora and k_mla:  # MLA: the latent is what llama.cpp caches
        v_mla = f.int("attention.value_length_mla")
        cfg.update(kv_lora_rank=kv_lora, qk_rope_head_dim=n_rot, qk_nope_head_dim=k_mla - n_rot,
                   v_head_dim=v_mla, num_key_value_heads=heads)
        q_lora = f.int("attention.q_lora_rank", default=0, minimum=0)
        if q_lora:
            cfg["q_lora_rank"] = q_lora
        gating = f.int("expert_gating_func", default=0, minimum=0)
        cfg["model_type"] = "deepseek_v3" if gating == 2 else "deepseek_v2"
    elif arch == "deepseek2":  # a GGUF from before MLA: full K (nope + rope) and V per head
        cfg.update(qk_rope_head_dim=n_rot, qk_nope_head_dim=head_k - n_rot, v_head_dim=head_v)
    else:
        if head_v != head_k:
            raise ValueError(f"{path}: GGUF keys {f.key('attention.key_length')!r} = {head_k} and "
                             f"{f.key('attention.value_length')!r} = {head_v} differ: unequal "
                             "key and value heads are not modelled here")
        cfg["head_dim"] = head_k
        if n_rot != head_k:
            cfg["partial_rotary_factor"] = n_rot / head_k
    cfg["rope_theta"] = f.real("rope.freq_base", default=rope.DEFAULT_THETA)
    _windows(f, cfg, arch, layers)
    _rope_scaling(f, file, path, cfg, arch)
    sinks = "blk.0.attn_sinks.weight" in file.tensors
    cfg["_gguf_sinks"] = sinks
    return cfg


def _windows(f, cfg, arch, layers):
    if arch not in _SWA_PERIOD:
        return  # llama, qwen2, phi3: llama.cpp runs every layer global (phi3 reads and drops it)
    n_swa = f.int("attention.sliding_window", default=0, minimum=0)
    if arch == "gpt-oss" and not n_swa:
        f.need("attention.sliding_window")  # gpt-oss's loader requires it
    if not n_swa:
        return  # gemma3 without a window: no SWA
    period = _SWA_PERIOD[arch]
    pattern = f.get("attention.sliding_window_pattern")
    if pattern is not None and not isinstance(pattern, list):  # an array is ignored by llama.cpp
        period = f.whole("attention.sliding_window_pattern", pattern, minimum=0)
    local = swa_pattern(period, layers)
    cfg["sliding_window"] = n_swa
    cfg["layer_types"] = ["sliding_attention" if x else "full_attention" for x in local]
    if arch == "gemma3":
        cfg["rope_local_base_freq"] = f.real("rope.freq_base_swa", default=10_000.0)


def _rope_scaling(f, file, path, cfg, arch):
    kind = f.get("rope.scaling.type")
    factor = f.real("rope.scaling.factor")
    orig = f.int("rope.scaling.original_context_length", default=0, minimum=0)
    freqs = file.floats("rope_freqs.weight")
    long_f = file.floats("rope_factors_long.weight")
    if freqs is not None:  # llama3 (and any per-pair divisors): no keys, one tensor
        cfg["_gguf_rope_freqs"] = freqs
        return
    if long_f is not None:  # Phi-3's longrope
        short_f = file.floats("rope_factors_short.weight")
        if short_f is None:
            raise ValueError(f"{path}: tensor 'rope_factors_long.weight' without "
                             "'rope_factors_short.weight'")
        if not orig:
            f.need("rope.scaling.original_context_length")
        rs = {"rope_type": "longrope", "long_factor": long_f, "short_factor": short_f}
        attn = f.real("rope.scaling.attn_factor")
        if attn is not None:
            rs["attention_factor"] = attn
        cfg["rope_scaling"] = rs
        cfg["original_max_position_embeddings"] = orig
        return
    if kind in (None, "none") or (kind == "linear" and (factor is None or factor == 1.0)):
        return
    if kind == "linear":
        cfg["rope_scaling"] = {"rope_type": "linear", "factor": factor}
    elif kind == "yarn":
        if factor is None:
            f.need("rope.scaling.factor")
        rs = {"rope_type": "yarn", "factor": factor,
              "original_max_position_embeddings": orig or cfg["max_position_embeddings"]}
        for key, name in (("rope.scaling.yarn_beta_fast", "beta_fast"),
                          ("rope.scaling.yarn_beta_slow", "beta_slow")):
            value = f.real(key)
            if value is not None:
                rs[name] = value
        log_mul = f.real("rope.scaling.yarn_log_multiplier")
        if log_mul:  # DeepSeek: 0.1 x mscale_all_dim; llama.cpp takes mscale as 1
            rs.update(mscale=1.0, mscale_all_dim=log_mul / 0.1)
        cfg["rope_scaling"] = rs
    else:
        raise ValueError(f"{path}: GGUF key {f.key('rope.scaling.type')!r} = {kind!r} is not "
                         "one lessonlib reads (none, linear, yarn; longrope comes as tensors)")


# --------------------------------------------------------------------------- writing

def _llama3_factors(config):
    """The rope_freqs divisors llama.cpp's converter writes for a llama3 config: plain theta_i
    over lessonlib's llama3 frequencies."""
    sp = rope.scaling_parameters(config)
    plain = sp.base ** (-np.arange(0, sp.rotary_dim, 2, dtype=np.float64) / sp.rotary_dim)
    return plain / rope.INV_FREQ["llama3"](sp, None)


def write_gguf(path, config, *, hidden_size=8, seed=0):
    """Write the GGUF file llama.cpp's converter would write for ``config`` (a config.json dict
    or a shipped config's name; its keys; llama3,
    longrope and sinks as their tensors), with a random token embedding of ``hidden_size``
    columns standing in for the weights (F16, vocab_size x hidden_size). Returns the path. The
    architecture comes from the config's model_type (``MODEL_TYPES``); another model_type is a
    ValueError naming it, and so are a missing ``vocab_size``, a rope type with no GGUF form
    (dynamic) and sliding layers on no llama.cpp pattern."""
    path = check.text("path", path)
    hidden_size = check.integer("hidden_size", hidden_size, minimum=1)
    seed = check.integer("seed", seed, minimum=0)
    cfg = text_config(config_dict(config))
    w, arch, shape, tensors = _writer_with_keys(path, cfg, hidden_size, 2 * hidden_size)
    vocab = check.integer("vocab_size", cfg.get("vocab_size"), minimum=1)
    tensors["token_embd.weight"] = np.random.default_rng(seed).standard_normal(
        (vocab, hidden_size)).astype(np.float16)
    return finish(w, tensors.items())


def _writer_with_keys(path, cfg, hidden_size, intermediate_size):
    """A GGUFWriter holding the converter's keys for ``cfg``, and the tensors that carry
    settings (llama3's rope_freqs, longrope's factors, gpt-oss's sinks)."""
    gguf = _gguf()
    mt = cfg.get("model_type")
    if mt not in MODEL_TYPES:
        raise ValueError(f"config.model_type {mt!r} has no GGUF architecture here (known: "
                         f"{', '.join(MODEL_TYPES)})")
    arch = MODEL_TYPES[mt]
    shape = model_shape(cfg)
    w = gguf.GGUFWriter(path, arch)
    w.add_block_count(shape.layers)
    w.add_context_length(int_key(cfg, "max_position_embeddings"))  # missing: named
    w.add_embedding_length(hidden_size)
    w.add_feed_forward_length(intermediate_size)
    w.add_head_count(shape.heads)
    vocab = check.integer("vocab_size", cfg.get("vocab_size"), minimum=1)
    w.add_vocab_size(vocab)
    w.add_rope_freq_base(float(cfg.get("rope_theta", rope.DEFAULT_THETA)))
    w.add_layer_norm_rms_eps(float(cfg.get("rms_norm_eps", 1e-6)))
    if cfg.get("kv_lora_rank") is not None:  # DeepSeek's converter: one KV head of the latent
        kv_lora, r = int_key(cfg, "kv_lora_rank"), int_key(cfg, "qk_rope_head_dim")
        w.add_head_count_kv(1)
        w.add_key_length(kv_lora + r)
        w.add_value_length(kv_lora)
        w.add_key_length_mla(shape.head_dim)
        w.add_value_length_mla(shape.v_head_dim)
        w.add_kv_lora_rank(kv_lora)
        if cfg.get("q_lora_rank"):
            w.add_q_lora_rank(int_key(cfg, "q_lora_rank"))
        w.add_rope_dimension_count(r)
        if mt == "deepseek_v3":
            w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    else:
        w.add_head_count_kv(shape.kv_heads)
        w.add_key_length(shape.head_dim)
        w.add_value_length(shape.v_head_dim)
        w.add_rope_dimension_count(rope.rotary_dim(cfg))
    windows = layer_windows(cfg)
    local = [x is not None for x in windows]
    tensors = {}
    if arch in _SWA_PERIOD and any(local):
        W = next(x for x in windows if x is not None)
        w.add_sliding_window(W)
        period = next((n for n in range(1, shape.layers + 1)
                       if swa_pattern(n, shape.layers).tolist() == local), None)
        if period is None:
            raise ValueError("config's sliding layers follow no llama.cpp pattern (il % n < n - 1)")
        if period != _SWA_PERIOD[arch]:
            w.add_sliding_window_pattern(period)
        if arch == "gemma3" and cfg.get("rope_local_base_freq") is not None:
            w.add_rope_freq_base_swa(float(cfg["rope_local_base_freq"]))
    elif arch == "phi3" and cfg.get("sliding_window"):
        w.add_sliding_window(int_key(cfg, "sliding_window"))  # written, and dropped by llama.cpp
    _write_rope(w, gguf, cfg, tensors)
    if mt == "gpt_oss":
        for il in range(shape.layers):
            tensors[f"blk.{il}.attn_sinks.weight"] = np.zeros(shape.heads, dtype=np.float32)
    return w, arch, shape, tensors


# What llama.cpp's loader needs of each architecture beyond its keys (src/models/<arch>.cpp):
# n_embd must equal heads x head_dim where the graph's output projection is square (qwen2);
# gpt-oss's experts.
_SQUARE_ATTENTION = ("qwen2",)
_EXPERTS, _EXPERTS_USED = 4, 2  # gpt-oss files: a few experts of intermediate_size each


def write_model_gguf(path, config, *, hidden_size=None, intermediate_size=128, vocab_size=256,
                     weights=None):
    """Write a GGUF file llama.cpp loads and runs: ``config``'s layers, attention shape,
    windows and RoPE (the keys ``write_gguf`` writes), a tokenizer, and every tensor the
    architecture's loader asks for, as float32. Returns the path. The architectures: llama
    (and mistral), qwen2, gemma3 and gpt-oss; no ``output.weight`` when the embeddings are
    tied, except for gpt-oss, whose loader requires it; gpt-oss files get 4 experts, 2 used.

    ``hidden_size`` (default 64; for qwen2, whose graph needs it, heads x head_dim),
    ``intermediate_size`` and ``vocab_size`` replace the config's: the cache and the attention
    are the config's, the rest is small. A tensor named in ``weights`` (name -> array of its
    numpy shape: rows first, as gguf's writer takes it) gets those values; every other one is
    zeros, left as a hole in the file (the file's length is real, its blocks are not written, so
    a Qwen2.5-7B-shaped file takes no disk). Zero weights are enough for what llama.cpp
    allocates; running a model needs its weights (``tinylm.export_gguf``).

    The tokenizer is a SentencePiece-style list: ``<unk>``, ``<s>``, ``</s>``, then ``t3`` ...
    (feed token ids, not text). The config the file describes is ``read_gguf(path).config``.

    Errors: an architecture without loadable tensors here (deepseek2, phi3), a ``hidden_size``
    other than heads x head_dim for qwen2, a tensor name the architecture has not, a wrong
    shape or a non-finite value in ``weights``.
    """
    path = check.text("path", path)
    cfg = dict(text_config(config_dict(config)))
    shape = model_shape(cfg)
    mt = cfg.get("model_type")
    arch = MODEL_TYPES.get(mt)
    square = shape.heads * shape.head_dim
    if hidden_size is None:
        hidden_size = square if arch in _SQUARE_ATTENTION else 64
    hidden_size = check.integer("hidden_size", hidden_size, minimum=1)
    if arch in _SQUARE_ATTENTION and hidden_size != square:
        raise ValueError(f"hidden_size must be heads x head_dim = {square} for a {arch} file "
                         f"(llama.cpp's {arch} graph projects attention back with a square "
                         f"matrix), got {hidden_size}")
    ff = check.integer("intermediate_size", intermediate_size, minimum=1)
    vocab = check.integer("vocab_size", vocab_size, minimum=4)
    if weights is not None and not isinstance(weights, dict):
        raise ValueError(f"weights must be a dict of tensor name -> array, got "
                         f"{check.describe(weights)}")
    cfg.update(vocab_size=vocab, head_dim=shape.head_dim)
    w, arch, shape, settings = _writer_with_keys(path, cfg, hidden_size, ff)
    if arch not in _LAYER_TENSORS:
        raise ValueError(f"config.model_type {mt!r}: writing a loadable {arch} file is not "
                         f"supported (supported: {', '.join(_LAYER_TENSORS)})")
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>"] + [f"t{i}" for i in range(3, vocab)])
    w.add_token_types([2, 3, 3] + [1] * (vocab - 3))  # unknown, control, control, normal
    w.add_token_scores([0.0] * vocab)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    if arch == "gpt-oss":
        w.add_expert_count(_EXPERTS)
        w.add_expert_used_count(_EXPERTS_USED)
        w.add_expert_feed_forward_length(ff)
    tied = check.flag("tie_word_embeddings", cfg.get("tie_word_embeddings", arch == "gemma3"))
    shapes = _model_tensor_shapes(arch, shape, hidden_size, ff, vocab, tied)
    given = dict(settings)
    for name, array in (weights or {}).items():
        if name not in shapes:
            raise ValueError(f"weights[{name!r}]: a {arch} file has no such tensor (it has "
                             f"{', '.join(list(shapes)[:6])}, ...)")
        array = check.array(f"weights[{name!r}]", array, kind="real")
        if array.shape != shapes[name]:
            raise ValueError(f"weights[{name!r}] must have shape {shapes[name]}, got "
                             f"{array.shape}")
        given[name] = array
    for name, array in settings.items():
        shapes[name] = array.shape
    return _finish_sparse(w, shapes, given)


def _model_tensor_shapes(arch, shape, n_embd, ff, vocab, tied):
    """name -> numpy shape (rows, columns) of every tensor llama.cpp's loader requires (no
    output.weight when the embeddings are tied: llama.cpp then reuses token_embd)."""
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    vo = shape.kv_heads * shape.v_head_dim
    out = {"token_embd.weight": (vocab, n_embd), "output_norm.weight": (n_embd,)}
    if not tied or arch == "gpt-oss":  # gpt-oss's loader requires its output matrix
        out["output.weight"] = (vocab, n_embd)
    for il in range(shape.layers):
        layer = {"attn_norm": (n_embd,), "attn_q": (q, n_embd), "attn_k": (kv, n_embd),
                 "attn_v": (vo, n_embd), "attn_output": (n_embd, shape.heads * shape.v_head_dim)}
        layer.update(_LAYER_TENSORS[arch](shape, n_embd, ff))
        out.update({f"blk.{il}.{k}.weight" if not k.endswith(".bias") else f"blk.{il}.{k}": v
                    for k, v in layer.items()})
    return out


def _dense_ffn(shape, n_embd, ff):
    return {"ffn_norm": (n_embd,), "ffn_gate": (ff, n_embd), "ffn_up": (ff, n_embd),
            "ffn_down": (n_embd, ff)}


def _gemma3_layer(shape, n_embd, ff):
    return {**_dense_ffn(shape, n_embd, ff), "post_attention_norm": (n_embd,),
            "post_ffw_norm": (n_embd,), "attn_q_norm": (shape.head_dim,),
            "attn_k_norm": (shape.head_dim,)}


def _gpt_oss_layer(shape, n_embd, ff):
    e = _EXPERTS
    return {"post_attention_norm": (n_embd,), "attn_output.bias": (n_embd,),
            "ffn_gate_inp": (e, n_embd), "ffn_gate_inp.bias": (e,),
            "ffn_gate_exps": (e, ff, n_embd), "ffn_up_exps": (e, ff, n_embd),
            "ffn_down_exps": (e, n_embd, ff), "ffn_gate_exps.bias": (e, ff),
            "ffn_up_exps.bias": (e, ff), "ffn_down_exps.bias": (e, n_embd)}


_LAYER_TENSORS = {"llama": _dense_ffn, "qwen2": _dense_ffn, "gemma3": _gemma3_layer,
                  "gpt-oss": _gpt_oss_layer}


def _finish_sparse(writer, shapes, given):
    """Write ``writer``'s keys and one float32 tensor per ``shapes`` entry: the arrays in
    ``given`` written, the others zeros left as holes (seek past them, the file truncated to
    its full length). The data offsets are gguf's: each tensor padded to the alignment."""
    for name, shp in shapes.items():
        nbytes = int(np.prod(shp)) * 4
        writer.add_tensor_info(name, shp, np.dtype(np.float32), nbytes)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    align = writer.data_alignment
    with open(writer.path, "r+b") as f:
        f.seek(0, 2)
        offset = f.tell()
        offset += (-offset) % align
        for name, shp in shapes.items():
            nbytes = int(np.prod(shp)) * 4
            if name in given:
                f.seek(offset)
                f.write(np.ascontiguousarray(given[name], dtype="<f4").tobytes())
            offset += nbytes + (-nbytes) % align
        f.truncate(offset)
    return str(writer.path)


def finish(writer, tensors=()):
    """Add ``tensors`` ((name, array) pairs) to a ``gguf.GGUFWriter`` whose keys are set, write
    the file (header, keys, tensor infos and data) and close it; returns its path."""
    gguf = _gguf()
    if not isinstance(writer, gguf.GGUFWriter):
        raise ValueError(f"writer must be a gguf.GGUFWriter, got {check.describe(writer)}")
    for name, array in tensors:
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return str(writer.path)


def _write_rope(w, gguf, cfg, tensors):
    sp = rope.scaling_parameters(cfg)
    t = sp.rope_type
    if t == "llama3":
        tensors["rope_freqs.weight"] = _llama3_factors(cfg).astype(np.float32)
    elif t == "longrope":
        tensors["rope_factors_long.weight"] = np.asarray(sp.long_factor, dtype=np.float32)
        tensors["rope_factors_short.weight"] = np.asarray(sp.short_factor, dtype=np.float32)
        w.add_rope_scaling_orig_ctx_len(sp.original_max)
        w.add_rope_scaling_attn_factors(float(sp.attention_factor))
    elif t == "linear":
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(sp.factor)
    elif t == "yarn":
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(sp.factor)
        w.add_rope_scaling_orig_ctx_len(sp.original_max)
        rs = cfg.get("rope_scaling") or {}
        if rs.get("beta_fast") is not None:
            w.add_rope_scaling_yarn_beta_fast(float(rs["beta_fast"]))
        if rs.get("beta_slow") is not None:
            w.add_rope_scaling_yarn_beta_slow(float(rs["beta_slow"]))
        if rs.get("mscale_all_dim") is not None:
            w.add_rope_scaling_yarn_log_mul(0.1 * float(rs["mscale_all_dim"]))
    elif t != "default":
        raise ValueError(f"rope_type {t!r} has no GGUF form (llama.cpp has none, linear, yarn "
                         "and longrope)")
