"""How big the KV cache is: bytes per token, and each engine's sizing rule for a whole context.

The numbers behind notebooks 01 (llama.cpp's compute buffer), 05 (bytes per token: MHA, GQA,
MQA, MLA), 06 (sliding-window layers and hybrid caches, by llama.cpp's and vLLM's rules) and 09
(the cache of a long context).
Everything is read from a model's ``config.json`` dict (``lessonlib.models.configs.load_config``):

    num_hidden_layers            L, the layer count
    num_key_value_heads          h_kv (falls back to num_attention_heads, as in HuggingFace);
                                 it must divide num_attention_heads (GQA groups)
    num_attention_heads          h_q, the query heads
    head_dim                     d_h (else hidden_size / num_attention_heads)
    kv_lora_rank, qk_rope_head_dim    MLA (DeepSeek): one latent c plus the decoupled RoPE key
    qk_nope_head_dim, v_head_dim      MLA's per-head widths: keys qk_nope + qk_rope, values v
    layer_types / sliding_window_pattern / max_window_layers / sliding_window /
    use_sliding_window           which layers are sliding-window ("local") and their window W

One layer caches, per token (one "cell" in llama.cpp, one slot of a block in vLLM):

    MHA/GQA/MQA   2 * h_kv * d_h * dtype_bytes        (K and V)
    MLA           (kv_lora_rank + qk_rope_head_dim) * dtype_bytes   (no separate V: llama.cpp
                  allocates only K for MLA, vLLM's MLAAttentionSpec stores one latent)

A whole cache is a sum over two kinds of layers, global (full attention) and sliding-window,
each sized by the engine's own rule (see ``kv_cache_bytes``).

``model_shape`` is the one reading of the attention shape (L, h_q, h_kv, d_h, q_dim) that
widgets, checks and notebooks use: the rules above, with their errors, in one place.
``GIB`` and ``MIB`` are ``lessonlib.traffic``'s, re-exported.
"""
from dataclasses import dataclass

import numpy as np

from . import _validate as check
from ._validate import non_negative_int, positive_int

from .models import Model, as_model
from .models.shape import (LLAMACPP_NO_SWA, ModelShape, head_dims, kv_heads, layer_windows, layers,
                           llamacpp_layer_windows, model_shape, query_heads, swa_pattern)
from .traffic import GIB, MIB, score_slice_bytes

__all__ = [
    "model_shape", "ModelShape",
    "kv_bytes_per_token", "kv_bytes_per_token_per_layer", "layer_windows", "swa_pattern",
    "KV_TYPES", "KVType", "kv_cell_bytes", "llamacpp_layer_windows", "LLAMACPP_NO_SWA",
    "kv_cache_bytes", "KVCacheSize", "LayerGroup", "ENGINES",
    "llamacpp_swa_cells", "vllm_full_blocks", "vllm_sliding_blocks", "vllm_serve_in_flight_tokens",
    "vllm_kv_cache_groups", "vllm_capacity", "VLLMCapacity", "vllm_request_bytes",
    "vllm_window_blocks", "vllm_prefix_hits",
    "ComputeBuffer", "llamacpp_compute_buffer", "ComputePhases", "llamacpp_compute_phases",
    "llamacpp_compute_reserve",
    "cache_room", "sequence_bytes", "gpu_budget", "EngineBudget", "BUDGET_ENGINES",
    "VLLM_GPU_MEMORY_UTILIZATION", "LLAMACPP_N_UBATCH", "VLLM_BLOCK_SIZE",
    "gqa_kv_head", "gqa_head_map", "mla_absorb_query", "mla_scores_direct",
    "mla_scores_absorbed", "GIB", "MIB",
]

LLAMACPP_SWA_PAD = 256  # llama-kv-cache-iswa.cpp pads the SWA cache to a multiple of 256 cells
LLAMACPP_CTX_PAD = 256  # llama-context.cpp: cparams.n_ctx = GGML_PAD(cparams.n_ctx, 256)

def kv_bytes_per_token_per_layer(config, dtype_bytes=2):
    """Bytes one layer caches for one token: one llama.cpp cell, one vLLM block slot."""
    model = as_model(config)
    dtype_bytes = positive_int("dtype_bytes", dtype_bytes)
    if model.latent is not None:  # MLA: latent c plus the shared RoPE key
        return model.latent.width * dtype_bytes
    h_kv = kv_heads(model)
    # an MLA-shaped model run without the latent (notebook 05's "same model as MHA") has
    # keys qk_nope + qk_rope wide and values v_head_dim wide
    d_k, d_v = head_dims(model)
    return h_kv * (d_k + d_v) * dtype_bytes


@dataclass(frozen=True)
class KVType:
    """One cache element type: ``block_bytes`` bytes store ``block_values`` values of a row.

    f16 is (1 value, 2 bytes); llama.cpp's q8_0 is blocks of 32 int8 values and one f16 scale
    (34 bytes), q4_0 32 4-bit values and one f16 scale (18 bytes): ``ggml_row_size`` of a row
    of n values is ``n / block_values * block_bytes``, n a multiple of the block. ``engines``:
    where the type exists (llama.cpp's ``-ctk`` / ``-ctv``, vLLM's ``--kv-cache-dtype``).
    """
    name: str
    block_values: int
    block_bytes: int
    engines: tuple

    def row_bytes(self, n_values, what="row"):
        """ggml's row size of ``n_values`` values, n / block_values x block_bytes (q8_0: 34
        bytes per 32 values). ``n_values`` not a multiple of the block is a ValueError naming
        ``what``."""
        n = positive_int(what, n_values)
        if n % self.block_values:
            raise ValueError(f"{what} = {n} values is not a multiple of {self.name}'s block of "
                             f"{self.block_values} values: llama.cpp cannot store it as {self.name}")
        return n // self.block_values * self.block_bytes


_BOTH, _LLAMACPP, _VLLM = ("llama.cpp", "vllm", "ideal"), ("llama.cpp", "ideal"), ("vllm", "ideal")
KV_TYPES = {t.name: t for t in (
    KVType("f32", 1, 4, _LLAMACPP), KVType("f16", 1, 2, _BOTH), KVType("bf16", 1, 2, _BOTH),
    KVType("q8_0", 32, 34, _LLAMACPP), KVType("q4_0", 32, 18, _LLAMACPP),
    KVType("fp8", 1, 1, _VLLM))}
"""{name: KVType}: f32, f16, bf16, q8_0 and q4_0 (llama.cpp's ``-ctk`` / ``-ctv``) and fp8
(vLLM's ``--kv-cache-dtype``)."""


def kv_cell_bytes(config, kv_type="f16"):
    """Bytes of one cell of one layer for a cache element type (``KV_TYPES``), as llama.cpp
    sizes a row (``ggml_row_size``): the K row (h_kv x d_k values) plus the V row (h_kv x d_v);
    an MLA cache one row of ``kv_lora_rank + qk_rope_head_dim``. f16 gives
    ``kv_bytes_per_token_per_layer(config, 2)``; q8_0 17/16 of f16's half (34 bytes per 32).
    Llama-3.1-8B: 4,096 bytes (f16), 2,176 (q8_0)."""
    kind = KV_TYPES[check.choice("kv_type", kv_type, KV_TYPES)]
    if isinstance(config, Model):
        return config.memo(("kv_cell_bytes", kind.name), lambda: kv_cell_bytes(dict(config), kv_type))
    model = as_model(config)
    if model.latent is not None:
        return kind.row_bytes(model.latent.width, "kv_lora_rank + qk_rope_head_dim")
    h_kv = kv_heads(model)
    d_k, d_v = head_dims(model)
    return (kind.row_bytes(h_kv * d_k, "num_key_value_heads x head_dim (K)")
            + kind.row_bytes(h_kv * d_v, "num_key_value_heads x head_dim (V)"))


def kv_bytes_per_token(config, dtype_bytes=2):
    """KV bytes one token costs across all layers (notebook 05: GQA and MLA).

    ``2 * L * h_kv * d_h * dtype_bytes`` for MHA/GQA/MQA; ``L * (kv_lora_rank +
    qk_rope_head_dim) * dtype_bytes`` for MLA. Llama-3-8B: 131,072 (128 KiB); DeepSeek-V3: 70,272.
    """
    model = as_model(config)
    return layers(model) * kv_bytes_per_token_per_layer(model, dtype_bytes)


# --------------------------------------------------------------------------- engine rules

def _cdiv(a, b):
    return -(-a // b)


def _pad(x, to):
    return _cdiv(x, to) * to


def llamacpp_swa_cells(n_ctx, n_swa, *, n_seq=1, n_ubatch=512):
    """Cells of each sliding-window layer in llama.cpp (llama-kv-cache-iswa.cpp; notebook 06):

        GGML_PAD(min(n_ctx, n_swa * n_seq + n_ubatch), 256)

    The window alone is not enough: the micro-batch being processed must fit next to it.
    This is the form notebook 06 teaches. Current llama.cpp writes ``n_swa * (unified ?
    n_seq_max : 1)``: with ``--kv-unified`` all sequences share the cells as here; without it
    each sequence gets its own stream of cells. With one sequence (the default) the two agree.
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


def vllm_serve_in_flight_tokens(gpu_memory_bytes=None, device_name=None):
    """The tokens ``vllm serve`` (vLLM 0.32) may have scheduled but not yet settled by default,
    ``VllmConfig.max_in_flight_tokens``: 2 concurrent batches (async scheduling, on by default
    on a GPU) x ``max_num_batched_tokens``, whose default depends on the GPU
    (``EngineArgs.get_batch_defaults``, the OpenAI server's column): 16,384 from 160 GiB of
    memory, 8,192 from 70 GiB unless ``device_name`` names an A100, else 2,048. Sliding-window
    layers keep blocks for them. ``gpu_memory_bytes`` None: a GPU under 70 GiB (4,096 tokens)."""
    if device_name is not None:
        device_name = check.text("device_name", device_name)
    if gpu_memory_bytes is None:
        batched = 2048
    else:
        gpu = positive_int("gpu_memory_bytes", gpu_memory_bytes)
        a100 = device_name is not None and "a100" in device_name.lower()
        batched = 16384 if gpu >= 160 * GIB else 8192 if gpu >= 70 * GIB and not a100 else 2048
    return 2 * batched


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
        """``bytes`` in MiB."""
        return self.bytes / MIB

    @property
    def gib(self):
        """``bytes`` in GiB."""
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
        """The global and the sliding layers' bytes together."""
        return self.global_layers.bytes + self.sliding_layers.bytes

    @property
    def total_mib(self):
        """``total_bytes`` in MiB."""
        return self.total_bytes / MIB

    @property
    def total_gib(self):
        """``total_bytes`` in GiB."""
        return self.total_bytes / GIB


def vllm_window_blocks(num_computed, num_new, sliding_window, block_size=16):
    """(live, null): the blocks a request's table holds in one sliding layer after vLLM 0.32's
    ``allocate_slots`` for ``num_new`` tokens, with ``num_computed`` settled before them. The
    table covers ``cdiv(num_computed + num_new, block_size)`` blocks; the first
    ``(num_computed - W + 1) // block_size`` of them hold only tokens no later query can see
    (``get_num_skipped_tokens``), so they go back to the pool and the null block takes their
    slots, keeping slot j for tokens [16 j, 16 j + 16). W = 64, 250 settled, 50 new: 19 slots,
    11 null, 8 live."""
    num_computed = non_negative_int("num_computed", num_computed)
    num_new = positive_int("num_new", num_new)
    W = positive_int("sliding_window", sliding_window)
    block_size = positive_int("block_size", block_size)
    slots = _cdiv(num_computed + num_new, block_size)
    null = min(max(0, num_computed - W + 1) // block_size, slots)
    return slots - null, null


def vllm_prefix_hits(prompts, block_size=16):
    """The tokens vLLM 0.32's prefix cache gives each prompt when ``prompts`` run one after
    another, each computed in full: whole blocks whose chained hashes match an earlier
    prompt's (the same tokens from position 0: a block's hash covers its whole prefix), only
    full blocks of earlier prompts, and never the last token (its logits must be computed):
    ``block_size x min(lcp // B, len(earlier) // B, (len(prompt) - 1) // B)``, the best over
    earlier prompts."""
    block_size = positive_int("block_size", block_size)
    if not isinstance(prompts, (list, tuple)) or not prompts:
        raise ValueError(f"prompts must be a non-empty list of token-id lists, got "
                         f"{check.describe(prompts)}")
    for i, p in enumerate(prompts):
        if not isinstance(p, (list, tuple)) or not p:
            raise ValueError(f"prompts[{i}] must be a non-empty list of token ids, got "
                             f"{check.describe(p)}")
    prompts = [list(p) for p in prompts]
    hits = []
    for i, p in enumerate(prompts):
        best = 0
        for q in prompts[:i]:
            lcp = next((k for k, (a, b) in enumerate(zip(p, q)) if a != b), min(len(p), len(q)))
            best = max(best, min(lcp // block_size, len(q) // block_size,
                                 (len(p) - 1) // block_size))
        hits.append(best * block_size)
    return hits


@dataclass(frozen=True)
class VLLMCapacity:
    """``vllm_capacity``'s answer: how vLLM 0.32 lays a cache budget out for one model.

    group_size      layers per KV cache group (every group the same size)
    groups          one (window, real layers) per group: window None for full attention;
                    a group short of ``group_size`` is padded with layers that hold memory
                    and no data
    padding_layers  the padded slots of all groups
    num_blocks      blocks in the shared pool: budget // (block bytes x group_size)
    blocks_per_request   blocks one request of max_model_len takes, summed over the groups
    """
    group_size: int
    groups: tuple
    padding_layers: int
    num_blocks: int
    blocks_per_request: int

    @property
    def max_concurrency(self):
        """Requests of max_model_len that fit at once (vLLM's "Maximum concurrency"): a float."""
        return self.num_blocks / self.blocks_per_request

    @property
    def refuses(self):
        """True when vLLM refuses to start: not one request of max_model_len fits the pool
        beside the null block, the one block vLLM keeps for the slots it never fills (asked of
        vLLM 0.32 at the boundary: a pool of exactly ``blocks_per_request`` blocks is refused,
        one more block starts; tests/test_vllm.py)."""
        return self.blocks_per_request >= self.num_blocks


def vllm_kv_cache_groups(config):
    """vLLM 0.32's KV cache groups for ``config`` (``_get_kv_cache_groups_uniform_page_size``):
    layers of one kind (full attention, or one window size) are split into groups of
    ``group_size`` layers, the smallest kind's count (or the largest's, when that is under
    1.5 times the smallest: gpt-oss's 12 + 12), the last group of a kind padded. Returns
    (group_size, [(window, real layers)], padding layers). Gemma 3 27B: 10 full layers and 52
    sliding ones give groups of 10, six sliding groups, 8 padding layers (15% of the sliding
    layers' memory, for nothing)."""
    if isinstance(config, Model):
        size, groups, padding = config.memo("vllm_kv_cache_groups",
                                            lambda: vllm_kv_cache_groups(dict(config)))
        return size, list(groups), padding
    windows = layer_windows(config)
    kinds = {}
    for W in windows:
        kinds[W] = kinds.get(W, 0) + 1
    counts = list(kinds.values())
    group_size = min(counts)
    if max(counts) < 1.5 * min(counts):
        group_size = max(counts)
    groups, padding = [], 0
    for W, n in kinds.items():
        k = _cdiv(n, group_size)
        groups += [(W, len(range(i, n, k))) for i in range(k)]  # layers[i::k], as vLLM deals them
        padding += k * group_size - n
    return group_size, groups, padding


def vllm_capacity(config, max_model_len, budget_bytes, *, kv_type="f16", block_size=16,
                  max_in_flight_tokens=0):
    """How vLLM 0.32 fills ``budget_bytes`` of KV cache for ``config`` (``get_kv_cache_configs``):
    one pool of blocks, each holding one page (``block_size`` tokens of one layer) for each of
    ``group_size`` layers, so ``num_blocks = budget // (page x group_size)``; a request of
    ``max_model_len`` takes ``vllm_full_blocks`` in each full group and ``vllm_sliding_blocks``
    (tokens in flight included) in each sliding one. For a model with one kind of layer this
    is ``kv_cache_bytes`` exactly; for hybrids the padding layers cost memory on top.

    Returns a ``VLLMCapacity``: its ``max_concurrency`` (requests of max_model_len at once) and
    ``refuses`` (not one fits beside the pool's null block: vLLM will not start)."""
    max_model_len = positive_int("max_model_len", max_model_len)
    budget_bytes = non_negative_int("budget_bytes", budget_bytes)
    block_size = positive_int("block_size", block_size)
    in_flight = non_negative_int("max_in_flight_tokens", max_in_flight_tokens)
    page = kv_cell_bytes(config, kv_type) * block_size
    group_size, groups, padding = vllm_kv_cache_groups(config)
    per_request = sum(vllm_full_blocks(max_model_len, block_size) if W is None else
                      vllm_sliding_blocks(max_model_len, W, block_size,
                                          max_in_flight_tokens=in_flight)
                      for W, _ in groups)
    return VLLMCapacity(group_size, tuple(groups), padding, budget_bytes // (page * group_size),
                        per_request)


def vllm_request_bytes(config, max_model_len, *, kv_type="f16", block_size=16,
                       max_in_flight_tokens=0):
    """The smallest budget with which vLLM 0.32 starts for one request of ``max_model_len``:
    its ``blocks_per_request`` blocks plus the pool's null block, each ``page x group_size``
    bytes (``vllm_capacity``), the padding layers of a hybrid model included; one byte less is
    refused. Past the null block, a model with one kind of layer takes ``kv_cache_bytes``:
    (blocks_per_request + 1) x page x group_size in all. tests/test_vllm.py asks vLLM for the
    boundary; notebook 05's budget figure draws it."""
    max_model_len = positive_int("max_model_len", max_model_len)
    block_size = positive_int("block_size", block_size)
    cap = vllm_capacity(config, max_model_len, 0, kv_type=kv_type, block_size=block_size,
                        max_in_flight_tokens=max_in_flight_tokens)
    return (cap.blocks_per_request + 1) * kv_cell_bytes(config, kv_type) * block_size * \
        cap.group_size


def _llamacpp(n_ctx, W, *, n_seq, n_ubatch, swa_full, kv_unified, **_):
    """llama.cpp: -c rounded up to a multiple of 256 (llama-context.cpp). Unified: global layers
    get those cells (shared by all sequences), sliding layers ``llamacpp_swa_cells``, or all of
    them with --swa-full. Not unified: n_seq streams of ``pad(n_ctx // n_seq, 256)`` cells
    (n_ctx_seq), each sliding stream ``llamacpp_swa_cells`` of its own sequence."""
    n_ctx = _pad(n_ctx, LLAMACPP_CTX_PAD)
    streams, per_stream, seqs = (1, n_ctx, n_seq) if kv_unified else (
        n_seq, _pad(n_ctx // n_seq, LLAMACPP_CTX_PAD), 1)
    if W is None or swa_full:
        return streams * per_stream, None
    return streams * llamacpp_swa_cells(per_stream, W, n_seq=seqs, n_ubatch=n_ubatch), None


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
"""The engine rules ``kv_cache_bytes`` dispatches on, by name: "llama.cpp", "vllm", "ideal"."""


def kv_cache_bytes(config, n_ctx, *, engine="llama.cpp", n_seq=1, n_ubatch=512, block_size=16,
                   swa_full=False, dtype_bytes=2, extra_retained_tokens=0, max_in_flight_tokens=0,
                   kv_type=None, kv_unified=True):
    """The KV cache of a whole context, sized by one engine's rule (notebook 06, hybrid caches).

    engine:
      ``"llama.cpp"``  n_ctx is ``-c``, which llama.cpp rounds up to a multiple of 256: the
                       cells of the whole cache, shared by ``n_seq`` sequences (a unified
                       cache, ``--kv-unified``). Global layers get pad(n_ctx, 256) cells;
                       sliding layers ``pad(min(n_ctx, W * n_seq + n_ubatch), 256)``;
                       ``swa_full`` (``--swa-full``) gives them all cells too. The windows
                       are llama.cpp's (``llamacpp_layer_windows``): none for Mistral-7B-v0.1,
                       Qwen2 or Phi-3, whose llama.cpp architectures run every layer global.
                       ``kv_unified=False`` (no ``--kv-unified``) gives each sequence its own
                       stream instead: ``pad(pad(n_ctx, 256) // n_seq, 256)`` cells per global
                       layer and stream, ``pad(min(that, W + n_ubatch), 256)`` per sliding
                       layer and stream, times n_seq streams (llama-context.cpp,
                       llama-kv-cache-iswa.cpp). llama-server unifies the cache when it picks
                       its slots itself (the default, 4 slots); with ``-np N`` given, and in the
                       C API (llama-cpp-python), it is off. With one sequence the two agree.
      ``"vllm"``       n_ctx is ``max_model_len`` of one request, and the cache holds ``n_seq``
                       such requests. Global layers: ``cdiv(n_ctx, block_size)`` blocks
                       (FullAttentionSpec); sliding: ``vllm_sliding_blocks`` (SlidingWindowSpec).
                       ``swa_full`` is ``--disable-hybrid-kv-cache-manager`` (all layers full).
                       ``extra_retained_tokens``: vLLM sets it to ``num_speculative_tokens - 1``
                       with multi-module MTP speculative decoding and 0 otherwise.
                       ``max_in_flight_tokens``: vLLM uses ``max_concurrent_batches *
                       max_num_batched_tokens`` (1 batch, or 2 with async scheduling; 2048
                       tokens for the API server and 8192 for the ``LLM`` class, 8192 / 16384 on
                       GPUs of 70 GiB or more except A100). The default 0 is the count
                       that ignores in-flight tokens (257 blocks at W = 4096).
      ``"ideal"``      exact tokens: n_ctx per sequence, ``min(n_ctx, W)`` for sliding layers.

    ``kv_type``: a cache element type by name (``KV_TYPES``: f16, bf16, q8_0, q4_0, fp8, f32),
    sized per row as ``kv_cell_bytes``, instead of ``dtype_bytes`` bytes per value (both given:
    an error); a type the engine has not (q8_0 in vLLM, fp8 in llama.cpp) is an error naming
    both. ``kv_unified=False`` with an engine other than llama.cpp is an error.
    tests/test_llamacpp.py holds the llama.cpp rule against the engine itself.

    Returns a ``KVCacheSize`` (``total_bytes`` and ``global_layers`` / ``sliding_layers``).
    """
    engine = check.choice("engine", engine, ENGINES)
    swa_full = check.flag("swa_full", swa_full)
    kv_unified = check.flag("kv_unified", kv_unified)
    if not kv_unified and engine != "llama.cpp":
        raise ValueError(f"kv_unified=False is llama.cpp's (one stream per sequence); engine "
                         f"{engine!r} has no such setting")
    n_ctx = positive_int("n_ctx", n_ctx)
    n_seq, n_ubatch = positive_int("n_seq", n_seq), positive_int("n_ubatch", n_ubatch)
    block_size = positive_int("block_size", block_size)
    extra_retained_tokens = non_negative_int("extra_retained_tokens", extra_retained_tokens)
    max_in_flight_tokens = non_negative_int("max_in_flight_tokens", max_in_flight_tokens)
    if kv_type is None:
        per_cell = kv_bytes_per_token_per_layer(config, dtype_bytes)
    else:
        if dtype_bytes != 2:
            raise ValueError(f"give kv_type or dtype_bytes, not both (kv_type={kv_type!r}, "
                             f"dtype_bytes={dtype_bytes!r})")
        per_cell = kv_cell_bytes(config, kv_type)
        if engine not in KV_TYPES[kv_type].engines:
            raise ValueError(f"kv_type {kv_type!r} is not a cache type of engine {engine!r}: it has "
                             + ", ".join(t for t, k in KV_TYPES.items() if engine in k.engines))
    windows = llamacpp_layer_windows(config) if engine == "llama.cpp" else layer_windows(config)
    rule = ENGINES[engine]

    local = {w for w in windows if w is not None}
    W = local.pop() if local else None  # layer_windows gives every sliding layer the same W

    def group(kind, window, n_layers):
        if n_layers == 0:
            return LayerGroup(kind, 0, window, 0, 0 if engine == "vllm" else None, per_cell, 0)
        cells, blocks = rule(n_ctx, window, n_seq=n_seq, n_ubatch=n_ubatch, block_size=block_size,
                             swa_full=swa_full, extra_retained_tokens=extra_retained_tokens,
                             max_in_flight_tokens=max_in_flight_tokens, kv_unified=kv_unified)
        return LayerGroup(kind, n_layers, window, cells, blocks, per_cell,
                          n_layers * cells * per_cell)

    n_local = sum(w is not None for w in windows)
    return KVCacheSize(engine, n_ctx, n_seq, group("global", None, len(windows) - n_local),
                       group("sliding", W, n_local))


# --------------------------------------------------------------------------- compute buffer

@dataclass(frozen=True)
class ComputeBuffer:
    """Notebook 01's model of llama.cpp's compute buffer: its two largest temporaries.

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
    """What llama.cpp's compute buffer must hold at ``-c n_ctx -ub n_ubatch -fa on|off``.

    Reads ``num_attention_heads`` and ``vocab_size`` from the config. For the tiny model
    (8 heads, 151,936-token vocabulary) at -c 65536: scores 256 / 1024 MiB and logits
    74.19 / 296.75 MiB at -ub 128 / 512.
    """
    model = as_model(config)
    flash_attn = check.flag("flash_attn", flash_attn)
    n_ctx, n_ubatch = positive_int("n_ctx", n_ctx), positive_int("n_ubatch", n_ubatch)
    heads, vocab = query_heads(model), model.vocab_size
    scores = 0 if flash_attn else score_slice_bytes(n_ubatch, n_ctx, heads=heads, bytes_per_score=4)
    mask = 0 if flash_attn else n_ubatch * n_ctx * 4
    return ComputeBuffer(n_ctx, n_ubatch, flash_attn, scores, mask, n_ubatch * vocab * 4)


@dataclass(frozen=True)
class ComputePhases:
    """What is alive at three moments of llama.cpp's graph for one micro-batch of ``n_ubatch``
    tokens (llama-graph.cpp), every tensor F32 unless said:

    attention_bytes  unfused: the scores (n_kv x ub x heads), the mask (n_kv x ub), Q after
                     RoPE (head_dim x heads x ub), the attention output before W_o (v_head_dim
                     x heads x ub) and the new K and V rows (x kv_heads x ub) waiting to be
                     stored. Fused (``FLASH_ATTN_EXT``): the F16 mask, Q and the output. Both:
                     the layer's input, kept for the residual, and its normed copy (hidden x ub
                     each).
    ffn_bytes        the gate and up projections and their gated product (3 x ff x ub), the
                     feed-forward input kept for the residual and its normed copy
    output_bytes     the logits (vocab x ub) and the final hidden state (hidden x ub)

    The compute buffer cannot be smaller than the largest of the three
    (``lower_bound_bytes``). It is often larger: ggml's allocator places every tensor of the
    graph in one buffer by best fit, and when the freed space of one phase is split by tensors
    still alive, the next phase's large tensor (the logits) goes above it. How much depends on
    the graph's order, not on a formula; tests/test_llamacpp.py measures the gap against the
    engine over a grid, and benchmarks/RESULTS.md records it.
    """
    n_ctx: int
    n_ubatch: int
    flash_attn: bool
    attention_bytes: int
    ffn_bytes: int
    output_bytes: int

    @property
    def lower_bound_bytes(self):
        return max(self.attention_bytes, self.ffn_bytes, self.output_bytes)


def llamacpp_compute_phases(config, n_ctx, n_ubatch, *, flash_attn):
    """``ComputePhases`` of a dense decoder (no experts) at ``-c n_ctx -ub n_ubatch``, one
    sequence: n_kv is the cache's cells, ``pad(n_ctx, 256)``. Reads the attention shape,
    ``hidden_size``, ``intermediate_size`` and ``vocab_size``; a config with experts
    (``num_local_experts``, ``n_routed_experts``) is an error naming the key."""
    model = as_model(config)
    flash_attn = check.flag("flash_attn", flash_attn)
    n_ctx, ub = positive_int("n_ctx", n_ctx), positive_int("n_ubatch", n_ubatch)
    key = model.experts_key
    if key is not None:
        raise ValueError(f"config.{key}: llamacpp_compute_phases models dense feed-forward "
                         f"layers, not experts")
    shape = model.shape
    hidden, ff, vocab = model.hidden_size, model.intermediate_size, model.vocab_size
    n_kv = _pad(n_ctx, LLAMACPP_CTX_PAD)
    q = ub * shape.heads * shape.head_dim * 4
    out = ub * shape.heads * shape.v_head_dim * 4
    x = ub * hidden * 4  # one hidden-sized activation
    if flash_attn:
        attention = n_kv * ub * 2 + q + out + 2 * x
    else:
        new_kv = ub * shape.kv_heads * (shape.head_dim + shape.v_head_dim) * 4
        attention = n_kv * ub * shape.heads * 4 + n_kv * ub * 4 + q + out + new_kv + 2 * x
    return ComputePhases(n_ctx, ub, flash_attn, attention, 3 * ub * ff * 4 + 2 * x,
                         ub * vocab * 4 + x)


# --------------------------------------------------------------------------- GQA and MLA

def _gqa_heads(hq, hkv):
    hq, hkv = positive_int("hq", hq), positive_int("hkv", hkv)
    if hq % hkv:  # also hkv > hq
        raise ValueError(f"hkv must divide hq (each KV head serves hq // hkv query heads), "
                         f"got hq={hq}, hkv={hkv}")
    return hq, hkv


def gqa_kv_head(h, hq, hkv):
    """The KV head that query head ``h`` (0 <= h < hq) reads: ``h // (hq // hkv)`` (ggml: ik2 =
    iq2 / rk2). ``hkv`` must divide ``hq``."""
    hq, hkv = _gqa_heads(hq, hkv)
    h = check.integer("h", h, minimum=0, maximum=hq - 1)  # 1.5 or True: not KV head 0.0
    return h // (hq // hkv)


def gqa_head_map(hq, hkv):
    """Every query head's KV head, as an int array of length ``hq`` (GQA groups of neighbours)."""
    hq, hkv = _gqa_heads(hq, hkv)
    return np.arange(hq) // (hq // hkv)


def _mla_query(q, W_UK):
    """q (heads, head_dim) and W_UK (heads, head_dim, latent), of matching shapes."""
    W_UK = check.array("W_UK", W_UK, kind="real", ndim=3)
    q = check.array("q", q, kind="real", ndim=2)
    if 0 in W_UK.shape:
        raise ValueError(f"W_UK must be (heads, head_dim, latent) with no empty dimension, "
                         f"got shape {W_UK.shape}")
    if q.shape != W_UK.shape[:2]:
        raise ValueError(f"q must be (heads, head_dim) = W_UK.shape[:2] = {W_UK.shape[:2]}, "
                         f"got q {q.shape} with W_UK {W_UK.shape}")
    return q, W_UK


def _mla_shapes(q, W_UK, c):
    """q, W_UK as ``_mla_query``, and c (n_tokens, latent) or (latent,) as a 2-D array."""
    q, W_UK = _mla_query(q, W_UK)
    c = check.array("c", c, kind="real", ndim=(1, 2))
    if c.shape[-1] != W_UK.shape[2] or c.size == 0:
        raise ValueError(f"c must be (n_tokens, latent) with latent = W_UK.shape[2] = "
                         f"{W_UK.shape[2]}, got c {c.shape}")
    return q, W_UK, np.atleast_2d(c)


def mla_absorb_query(q, W_UK):
    """``W_UK^T q`` per head: (heads, head_dim) x (heads, head_dim, latent) -> (heads, latent)."""
    q, W_UK = _mla_query(q, W_UK)
    return np.einsum("hdr,hd->hr", W_UK, q)


def mla_scores_direct(q, W_UK, c):
    """Decompress, then score: ``q_h . (W_UK_h c_t)``.

    q (heads, head_dim), W_UK (heads, head_dim, latent), c (n_tokens, latent) or (latent,)
    -> (heads, n_tokens).
    """
    q, W_UK, c = _mla_shapes(q, W_UK, c)
    k = np.einsum("hdr,tr->htd", W_UK, c)  # (heads, n_tokens, head_dim)
    return np.einsum("htd,hd->ht", k, q)


def mla_scores_absorbed(q, W_UK, c):
    """Score the cached latents directly: ``(W_UK_h^T q_h) . c_t`` -> (heads, n_tokens), equal
    to ``mla_scores_direct`` (the same shapes)."""
    q, W_UK, c = _mla_shapes(q, W_UK, c)
    return mla_absorb_query(q, W_UK) @ c.T


def llamacpp_compute_reserve(config, n_ctx, n_ubatch=512):
    """What a memory budget sets aside for llama.cpp's compute buffer at ``-c n_ctx -ub
    n_ubatch`` with flash attention on: ``llamacpp_compute_phases``' lower bound for a dense
    model, ``llamacpp_compute_buffer``'s estimate (its two largest temporaries) for one with
    experts, whose feed-forward block the phases do not model. ``inspect``'s budget and
    notebook 05's budget figure both use it."""
    if as_model(config).experts_key is None:
        return llamacpp_compute_phases(config, n_ctx, n_ubatch, flash_attn=True).lower_bound_bytes
    return llamacpp_compute_buffer(config, n_ctx, n_ubatch, flash_attn=True).estimate_bytes


# --------------------------------------------------------------------------- GPU budget

VLLM_GPU_MEMORY_UTILIZATION = 0.92  # vLLM 0.32's default --gpu-memory-utilization (CacheConfig)
"""0.92, vLLM 0.32's default ``--gpu-memory-utilization`` (its CacheConfig; tests/test_vllm.py
asks vLLM)."""
LLAMACPP_N_UBATCH = 512  # llama.cpp's default -ub
"""512, llama.cpp's default micro-batch, ``-ub``."""
VLLM_BLOCK_SIZE = 16  # vLLM's default --block-size on CUDA
"""16, vLLM's default ``--block-size`` on CUDA."""
BUDGET_ENGINES = ("llama.cpp", "vllm", "ideal")
"""The engines a budget is drawn for, in order: ("llama.cpp", "vllm", "ideal")."""
_NO_LIMIT = 1 << 40  # a token count no cache reaches (2^40 cells)


def cache_room(gpu_memory, weights_bytes, *, engine):
    """The bytes an engine leaves for what grows with the context, beside the weights: vLLM
    takes ``VLLM_GPU_MEMORY_UTILIZATION`` (0.92) of the GPU's memory (its default
    ``--gpu-memory-utilization``) and the cache gets that minus the weights; llama.cpp and the
    exact count get the whole memory minus the weights (llama.cpp's compute buffer comes out of
    it too: ``sequence_bytes``). Negative when the weights alone do not fit."""
    gpu_memory = positive_int("gpu_memory", gpu_memory)
    weights_bytes = non_negative_int("weights_bytes", weights_bytes)
    engine = check.choice("engine", engine, BUDGET_ENGINES)
    if engine == "vllm":
        return int(gpu_memory * VLLM_GPU_MEMORY_UTILIZATION) - weights_bytes
    return gpu_memory - weights_bytes


def sequence_bytes(config, n, *, engine, kv_type="f16", n_seq=1, max_in_flight_tokens=0):
    """What ``n_seq`` sequences of ``n`` tokens each take out of ``cache_room``, by the engine's
    rule; they fit exactly when this is at most the room.

    llama.cpp  ``-c n*n_seq -np n_seq -ub 512 -fa on`` (``LLAMACPP_N_UBATCH``): the cache
               (``kv_cache_bytes``) plus the compute buffer's reserve
               (``llamacpp_compute_reserve``)
    vllm       ``n_seq`` requests of ``max_model_len = n`` in blocks of ``VLLM_BLOCK_SIZE``
               tokens: their blocks plus the pool's null block (``vllm_capacity``; one
               request: ``vllm_request_bytes``), the padding layers of a hybrid included and
               the sliding layers keeping blocks for
               ``max_in_flight_tokens``
    ideal      the exact cache alone

    A ``kv_type`` the engine has not is an error naming it.
    """
    engine = check.choice("engine", engine, BUDGET_ENGINES)
    n, n_seq = positive_int("n", n), positive_int("n_seq", n_seq)
    max_in_flight_tokens = non_negative_int("max_in_flight_tokens", max_in_flight_tokens)
    kv_type = check.choice("kv_type", kv_type, tuple(KV_TYPES))
    if engine not in KV_TYPES[kv_type].engines:
        raise ValueError(f"kv_type {kv_type!r} is not a cache type of {engine} (it has "
                         + ", ".join(t for t in KV_TYPES if engine in KV_TYPES[t].engines) + ")")
    if engine == "vllm":
        cap = vllm_capacity(config, n, 0, kv_type=kv_type, block_size=VLLM_BLOCK_SIZE,
                            max_in_flight_tokens=max_in_flight_tokens)
        block = kv_cell_bytes(config, kv_type) * VLLM_BLOCK_SIZE * cap.group_size
        return (n_seq * cap.blocks_per_request + 1) * block
    if engine == "llama.cpp":
        cells = n * n_seq
        return kv_cache_bytes(config, cells, engine="llama.cpp", n_seq=n_seq, kv_type=kv_type,
                              n_ubatch=LLAMACPP_N_UBATCH).total_bytes + \
            llamacpp_compute_reserve(config, cells, LLAMACPP_N_UBATCH)
    return kv_cache_bytes(config, n, engine="ideal", n_seq=n_seq, kv_type=kv_type).total_bytes


@dataclass(frozen=True)
class EngineBudget:
    """``gpu_budget``'s answer for one engine and cache type.

    engine       one of ``BUDGET_ENGINES``
    kv_type      the cache element type (a ``KV_TYPES`` name)
    room_bytes   ``cache_room``: what the weights leave (negative: they do not fit)
    max_tokens   the longest single sequence that fits (``sequence_bytes`` <= room): what vLLM's
                 start-up line "GPU KV cache size: N tokens" counts for a model without sliding
                 layers, llama.cpp's largest ``-c``; None when every length fits (every layer
                 slides, so the cache stops growing); 0 when none does
    sequences    ((n, how many sequences of n fit at once), ...) for each context asked
    """
    engine: str
    kv_type: str
    room_bytes: int
    max_tokens: object
    sequences: tuple


def _largest(fits, lo, hi):
    """The largest x in [lo, hi] with fits(x), fits monotone (True then False); lo - 1 if none."""
    if not fits(lo):
        return lo - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _seq(name, value):
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list or tuple, got {check.describe(value)}")
    return value


def gpu_budget(config, gpu_memory, weights_bytes, *, contexts=(), engines=BUDGET_ENGINES,
               kv_types=("f16",), max_in_flight_tokens=None):
    """Per engine and cache type (a type an engine has not is left out of it): the room the
    weights leave (``cache_room``), the longest sequence that fits and how many sequences of
    each of ``contexts`` fit at once (``sequence_bytes`` against the room). The one budget that
    ``inspect``, notebook 05's budget figure and its readout all draw.
    ``max_in_flight_tokens`` None: ``vllm serve``'s default for ``gpu_memory``
    (``vllm_serve_in_flight_tokens(gpu_memory)``). Returns one ``EngineBudget`` per engine and
    cache type it has."""
    gpu_memory = positive_int("gpu_memory", gpu_memory)
    weights_bytes = non_negative_int("weights_bytes", weights_bytes)
    contexts = tuple(positive_int(f"contexts[{i}]", c)
                     for i, c in enumerate(_seq("contexts", contexts)))
    engines = tuple(check.choice(f"engines[{i}]", e, BUDGET_ENGINES)
                    for i, e in enumerate(_seq("engines", engines)))
    kv_types = tuple(check.choice(f"kv_types[{i}]", t, tuple(KV_TYPES))
                     for i, t in enumerate(_seq("kv_types", kv_types)))
    in_flight = (vllm_serve_in_flight_tokens(gpu_memory) if max_in_flight_tokens is None
                 else non_negative_int("max_in_flight_tokens", max_in_flight_tokens))
    out = []
    for engine in engines:
        for kv_type in [t for t in kv_types if engine in KV_TYPES[t].engines]:
            room = cache_room(gpu_memory, weights_bytes, engine=engine)

            def fits(n, k=1, engine=engine, kv_type=kv_type, room=room):
                return sequence_bytes(config, n, engine=engine, kv_type=kv_type, n_seq=k,
                                      max_in_flight_tokens=in_flight) <= room
            if room <= 0:
                out.append(EngineBudget(engine, kv_type, room, 0, tuple((n, 0) for n in contexts)))
                continue
            longest = None if fits(_NO_LIMIT) else _largest(fits, 1, _NO_LIMIT)
            seqs = tuple((n, _largest(lambda k: fits(n, k), 1, max(1, _NO_LIMIT // n)))
                         for n in contexts)
            out.append(EngineBudget(engine, kv_type, room, longest, seqs))
    return tuple(out)
