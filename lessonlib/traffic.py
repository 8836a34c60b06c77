"""Counting what attention costs: score-matrix sizes, memory traffic, long-context FLOPs.

Notebook 01 (the score matrix of a Llama-3-8B shape, prefill FLOPs and KV bytes) and notebook
03 (the 64-token tile walk and the per-head traffic table). Traffic is counted in floats moved
between slow memory (HBM) and fast memory (SRAM):

    naive  reads Q, K (2 n d), S for the softmax (n^2), P and V (n^2 + n d);
           writes S, P (2 n^2) and O (n d)
    tiled  reads each query block once (n d) and, per query block, the K and V blocks it
           visits (2 d per key row); writes only O (n d)

The tiled count walks the same key-block plan as ``attention.tiled_attention``, so causal and
window skipping show up in the numbers. ``flash_hbm_accesses`` counts the other loop order, the
FlashAttention paper's Algorithm 1 (Dao et al., 2022), with its SRAM-sized blocks.

Decode, one token per sequence per step, is counted in bytes: ``decode_roofline`` adds the
weights (read once per step) to the KV cache each sequence's step reads by its engine's rule
(``decode_cache_bytes``) and divides a GPU's memory bandwidth (``GPUS``) by the sum: the
tokens per second no kernel can beat, since every one of those bytes must cross from HBM.
"""
import math
from dataclasses import dataclass

from . import _validate as check
from ._validate import positive_int
from .attention import key_blocks
from .models import as_model

__all__ = ["Traffic", "naive_traffic", "tiled_traffic", "traffic_ratio_table",
           "FlashIO", "flash_hbm_accesses", "score_matrix_table", "score_slice_bytes",
           "ScoreMatrixRow", "long_context_cost", "CostRow", "crossover_length",
           "GIB", "MIB", "format_bytes", "GPU", "GPUS", "DECODE_ENGINES", "decode_cache_bytes",
           "DecodeRoofline", "decode_roofline"]

GIB = 1024 ** 3
"""Bytes in a GiB, 2**30."""
MIB = 1024 ** 2
"""Bytes in a MiB, 2**20."""


@dataclass(frozen=True)
class Traffic:
    """Floats read from and written to slow memory by one head's attention."""
    reads: int
    writes: int

    @property
    def total(self):
        """reads + writes."""
        return self.reads + self.writes


def naive_traffic(n, d):
    """Floats naive attention of n queries and n keys (head dim d) moves: the tile walk's count,
    a ``Traffic``. Reads 2nd + n^2 + (n^2 + nd): Q and K, S for the softmax, P and V; writes
    2n^2 + nd: S, P and O."""
    n, d = positive_int("n", n), positive_int("d", d)
    reads = 2 * n * d + n * n + (n * n + n * d)  # Q and K; S for the softmax; P and V
    writes = n * n + n * n + n * d  # S, P, O
    return Traffic(reads, writes)


def tiled_traffic(n, d, block_q, block_k=None, *, causal=False, window=None, sink_tokens=0):
    """Floats tiled attention moves, a ``Traffic``: Q once, the K/V rows of the key blocks each
    query block visits (``attention.key_blocks``), O once.

    ``block_k`` defaults to ``block_q`` (square tiles). Lengths need not be block
    multiples; blocks that the mask hides completely are not read.
    """
    n, d = positive_int("n", n), positive_int("d", d)
    block_q = positive_int("block_q", block_q)
    block_k = block_q if block_k is None else positive_int("block_k", block_k)
    causal = check.flag("causal", causal)
    window = None if window is None else check.integer("window", window, minimum=1)
    sink_tokens = check.integer("sink_tokens", sink_tokens, minimum=0)
    reads = n * d  # every query block is loaded once
    if not causal and window is None:  # no mask: every query block reads all of K and V
        return Traffic(reads + -(-n // block_q) * 2 * n * d, n * d)
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        for j0 in key_blocks(i0, i1, n, block_k, causal=causal, window=window,
                             sink_tokens=sink_tokens):
            reads += 2 * (min(j0 + block_k, n) - j0) * d  # a K block and a V block
    return Traffic(reads, n * d)  # only O is written


def _items(name, values):
    """``values`` (a list, tuple or 1-D array) as a list; anything else is an error naming it."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise ValueError(f"{name} must be a list of values, got {check.describe(values)}")
    try:
        return list(values)
    except TypeError:  # a 0-d array
        raise ValueError(f"{name} must be a list of values, got {check.describe(values)}") from None


def _lengths(lengths):
    """Context lengths, each an int >= 1, a bad one named as ``lengths[i]``."""
    return [positive_int(f"lengths[{i}]", n) for i, n in enumerate(_items("lengths", lengths))]


def traffic_ratio_table(cases, d=128):
    """Per-head floats moved, naive vs tiled, for (n, block) cases (notebook 03's table).

    Returns dicts with n, block, naive, tiled, ratio (about 2B/d), score_buffer (n^2 floats)
    and tile (B^2 floats).
    """
    d = positive_int("d", d)
    rows = []
    for i, case in enumerate(_items("cases", cases)):
        if isinstance(case, (str, bytes, dict)) or not hasattr(case, "__len__") or len(case) != 2:
            raise ValueError(f"cases[{i}] must be an (n, block) pair, got {check.describe(case)}")
        n, block = positive_int(f"n of cases[{i}]", case[0]), \
            positive_int(f"block of cases[{i}]", case[1])
        naive, tiled = naive_traffic(n, d).total, tiled_traffic(n, d, block).total
        rows.append(dict(n=n, block=block, naive=naive, tiled=tiled, ratio=naive / tiled,
                         score_buffer=n * n, tile=block * block))
    return rows


@dataclass(frozen=True)
class FlashIO:
    """HBM accesses (floats read or written) of one head, FlashAttention's Algorithm 1 against
    standard attention (the paper's Algorithm 0), for an SRAM of ``sram`` floats.

    block_c   B_c = ceil(M / 4d): key/value rows per block, held on chip (line 1)
    block_r   B_r = min(B_c, d): query rows per block (line 1); the count does not depend on
              it, since every pass over the query blocks touches each of the n rows once
    passes    T_c = ceil(n / B_c): passes over Q, O, l and m, one per key/value block
    standard  Algorithm 0: read Q, K, write S, read S, write P, read P, V, write O:
              4 n d + 4 n^2 (the same count as ``naive_traffic(n, d).total``)
    flash     Algorithm 1: O, l, m initialised in HBM (n d + 2 n, line 2), every K and V row
              loaded once (2 n d, line 6), and per pass Q_i, O_i, l_i, m_i loaded (line 8) and
              O_i, l_i, m_i written back (lines 12-13): (3 d + 4) n. Theorem 2's
              Theta(n^2 d^2 / M) is this count's leading term, (3 d + 4) n^2 / B_c.
    """
    n: int
    d: int
    sram: int
    block_c: int
    block_r: int
    passes: int
    standard: int
    flash: int

    @property
    def ratio(self):
        """standard / flash: above 1 when Algorithm 1 moves fewer floats."""
        return self.standard / self.flash


def flash_hbm_accesses(n, d, sram):
    """The FlashAttention paper's HBM access count (Algorithm 1, Theorem 2) for one head.

    ``n`` tokens, head dim ``d``, ``sram`` = M, the on-chip memory in floats (elements). The
    theorem assumes d <= M (below it not one query row fits on chip), so ``sram`` < d is a
    ValueError; for M >= 4 n d every key row fits in one block and the count is one pass.
    Returns a ``FlashIO``.
    """
    n, d = positive_int("n", n), positive_int("d", d)
    sram = positive_int("sram", sram)
    if sram < d:
        raise ValueError(f"sram must be at least d = {d} floats (Theorem 2 assumes d <= M: one "
                         f"query row must fit on chip), got {sram}")
    block_c = math.ceil(sram / (4 * d))  # Algorithm 1, line 1
    block_r = min(block_c, d)
    passes = -(-n // block_c)  # T_c = ceil(n / B_c); a partial last block is one more pass
    standard = 4 * n * d + 4 * n * n
    flash = (n * d + 2 * n) + 2 * n * d + passes * (3 * d + 4) * n
    return FlashIO(n, d, sram, block_c, block_r, passes, standard, flash)


@dataclass(frozen=True)
class ScoreMatrixRow:
    """One context length's score matrix for every head of a layer (notebook 01).

    ``layer_bytes`` is S for every head of one layer; ``traffic_bytes`` what writing S, reading
    it, writing P and reading P moves (4 x layer_bytes); ``model_traffic_bytes`` that times the
    layers."""
    n: int
    scores_per_head: int
    layer_bytes: int  # S for all heads of one layer
    traffic_bytes: int  # write S, read S, write P, read P
    model_traffic_bytes: int  # traffic_bytes x layers


def score_matrix_table(lengths, *, heads=32, layers=32, bytes_per_score=4):
    """Score-matrix sizes per length, one ``ScoreMatrixRow`` each (defaults: a Llama-3-8B shape
    with FP32 scores)."""
    heads, layers = positive_int("heads", heads), positive_int("layers", layers)
    bytes_per_score = positive_int("bytes_per_score", bytes_per_score)
    rows = []
    for n in _lengths(lengths):
        layer = n * n * heads * bytes_per_score
        rows.append(ScoreMatrixRow(n, n * n, layer, 4 * layer, 4 * layer * layers))
    return rows


def score_slice_bytes(n_queries, n_keys, *, heads=32, bytes_per_score=4):
    """Bytes of the score matrix for a slice of queries (a -ub micro-batch, or 1 for decode):
    n_queries x n_keys x heads x bytes_per_score."""
    return (positive_int("n_queries", n_queries) * positive_int("n_keys", n_keys)
            * positive_int("heads", heads) * positive_int("bytes_per_score", bytes_per_score))


@dataclass(frozen=True)
class CostRow:
    """Prefill compute and KV-cache size at one context length (notebook 01)."""
    n: int
    weight_flops: float  # 2 FLOPs per parameter per token
    attention_flops: float  # Q K^T and P V
    kv_bytes: int  # the whole cache, read by every decode step

    @property
    def attention_share(self):
        """Attention's fraction of the prefill FLOPs."""
        return self.attention_flops / (self.weight_flops + self.attention_flops)

    @property
    def total_flops(self):
        """weight_flops + attention_flops."""
        return self.weight_flops + self.attention_flops


def long_context_cost(lengths, *, params, layers, q_dim, kv_bytes_per_token, causal=True):
    """Prefill FLOPs (weights vs attention) and KV bytes per length: one ``CostRow`` each.

    Weights: 2 P n FLOPs (``params`` = P, a real > 0). Attention: Q K^T and P V cost
    2 n^2 q_dim FLOPs each per layer without a mask; the causal mask halves both, leaving
    2 n^2 q_dim per layer. The KV cache: kv_bytes_per_token x n bytes. ``lengths`` is a
    non-empty list of ints >= 1.
    """
    params = check.real("params", params, above=0)
    layers, q_dim = positive_int("layers", layers), positive_int("q_dim", q_dim)
    kv_bytes_per_token = positive_int("kv_bytes_per_token", kv_bytes_per_token)
    causal = check.flag("causal", causal)
    rows = []
    for n in _lengths(lengths):
        attention = 2 * (2.0 * n * n * q_dim) * layers  # two matmuls, 2 n^2 q_dim each
        if causal:
            attention /= 2
        rows.append(CostRow(n, 2.0 * params * n, attention, kv_bytes_per_token * n))
    return rows


def crossover_length(params, *, layers, q_dim, causal=True):
    """The context length n at which attention's prefill FLOPs equal the weights'.

    ``long_context_cost``'s two terms, weights 2 P n and causal attention 2 n^2 q_dim L, meet at
    n = P / (q_dim L); without the mask attention is 4 n^2 q_dim L and they meet at half that.
    A model's shape gives the arguments: ``s = kv_cache.model_shape(cfg)``, then
    ``layers=s.layers, q_dim=s.q_dim``, and ``params`` from ``weights.weight_bytes(cfg).params``.
    Llama 3.1 8B (8,030,261,248 parameters, 32 layers, q_dim 4,096): 61,266 tokens. A float:
    the crossover need not be a whole token count. ``params`` is a real > 0, ``layers`` and
    ``q_dim`` positive ints, ``causal`` a flag; an error names the argument.
    """
    params = check.real("params", params, above=0)
    layers, q_dim = positive_int("layers", layers), positive_int("q_dim", q_dim)
    causal = check.flag("causal", causal)
    n = params / (q_dim * layers)  # 2 P n = 2 n^2 q_dim L
    return n if causal else n / 2


def format_bytes(n):
    """A byte count as people read it: 1,234 B / 12.30 KiB / 512.00 MiB / 15.62 GiB / 1.50 TiB
    (powers of 1,024, two decimals past bytes); what ``inspect`` and the budget widget print."""
    n = check.non_negative_int("n", n)
    if n < 1024:
        return f"{n:,} B"
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.2f} {unit}"


# --------------------------------------------------------------------------- decode roofline

@dataclass(frozen=True)
class GPU:
    """One GPU's memory bandwidth as its vendor's datasheet gives it.

    name       as printed ("H100 SXM")
    bandwidth  bytes per second, decimal: the datasheet's 3.35 TB/s is 3.35e12 B/s
    source     where the figure is published
    """
    name: str
    bandwidth: int
    source: str


_H100 = "NVIDIA H100 Tensor Core GPU datasheet / nvidia.com/en-us/data-center/h100 (specifications)"
_A100 = ("NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web."
         "pdf), 'GPU Memory Bandwidth'")
GPUS = {g[0]: GPU(*g[1:]) for g in (
    ("H100-SXM", "H100 SXM", 3_350 * 10**9, _H100 + ": H100 SXM, 3.35TB/s"),
    ("H100-PCIe", "H100 PCIe", 2_000 * 10**9, _H100 + ": H100 PCIe, 2TB/s"),
    ("H200", "H200 SXM", 4_800 * 10**9,
     "nvidia.com/en-us/data-center/h200 (specifications): H200 SXM, 4.8TB/s"),
    ("A100-80GB-SXM", "A100 80GB SXM", 2_039 * 10**9, _A100 + ": A100 80GB SXM, 2,039GB/s"),
    ("A100-40GB", "A100 40GB", 1_555 * 10**9, _A100 + ": A100 40GB PCIe and SXM, 1,555GB/s"),
    ("L4", "L4", 300 * 10**9,
     "NVIDIA L4 Tensor Core GPU datasheet / nvidia.com/en-us/data-center/l4: 300GB/s"),
    ("RTX-4090", "RTX 4090", 1_008 * 10**9,
     "NVIDIA Ada Lovelace GPU architecture whitepaper, GeForce RTX 4090: 21 Gbps GDDR6X on a "
     "384-bit bus, 1,008 GB/s"),
)}
"""{key: GPU}: the named GPUs' memory bandwidths, each the vendor's datasheet figure in decimal
bytes per second (1 TB/s = 10**12 B/s), keyed as ``inspect --gpu`` takes them: H100-SXM
(3.35 TB/s), H100-PCIe (2 TB/s), H200 (4.8 TB/s), A100-80GB-SXM (2.039 TB/s), A100-40GB
(1.555 TB/s), L4 (300 GB/s), RTX-4090 (1,008 GB/s)."""

DECODE_ENGINES = ("llama.cpp", "vllm", "ideal")
"""The engines ``decode_cache_bytes`` has a read rule for: ("llama.cpp", "vllm", "ideal")."""


def decode_cache_bytes(config, n, *, engine="ideal", kv_type="f16"):
    """KV-cache bytes one decode step of one sequence reads when ``n`` tokens are cached (the
    token being decoded among them), by the engine's rule. What a step reads is not what the
    engine allocated:

    llama.cpp  ``kv_cache.kv_cache_bytes(config, n, engine="llama.cpp")``, the cache of ``-c
               n``: the graph hands attention a view of n_kv cells per layer, n_kv = pad(the
               highest used cell + 1, 256) capped at the layer's cells (``get_n_kv``,
               llama-kv-cache.cpp), and attention reads every cell of that view, masked or not
               (CUDA's ``flash_attn_mask_to_KV_max`` only trims fully masked 256-cell tiles at
               the end). Global layers: pad(n, 256) cells, whatever ``-c`` was allocated;
               sliding layers, whose cells are reused as the window moves: all of their
               pad(min(n, W + ub), 256) cells once the window has wrapped (``llamacpp_swa_cells``)
    vllm       the exact tokens, as ``"ideal"``: FlashAttention runs over the request's block
               table with ``seqused_k`` = its n tokens, a sliding layer with ``window_size =
               (W - 1, 0)`` (flash_attn.py), so the unfilled slots of the last block and the
               blocks a window has left (freed, or the null block) are never loaded
    ideal      n tokens in each global layer, min(n, W) in each sliding one (``kv_cache_bytes``
               with ``engine="ideal"``)

    ``kv_type`` is a ``kv_cache.KV_TYPES`` name the engine has (q8_0 is llama.cpp's, fp8
    vLLM's); a cell is ``kv_cache.kv_cell_bytes``. A kernel's own tiles (FlashAttention's 64- or
    128-key blocks around a window's start) can add part of one tile per layer: not counted.
    """
    from . import kv_cache as kc  # kv_cache imports this module's units
    engine = check.choice("engine", engine, DECODE_ENGINES)
    n = positive_int("n", n)
    kv_type = check.choice("kv_type", kv_type, tuple(kc.KV_TYPES))
    if engine not in kc.KV_TYPES[kv_type].engines:
        raise ValueError(f"kv_type {kv_type!r} is not a cache type of engine {engine!r} (it has "
                         + ", ".join(t for t in kc.KV_TYPES if engine in kc.KV_TYPES[t].engines)
                         + ")")
    if engine == "llama.cpp":
        return kc.kv_cache_bytes(config, n, engine="llama.cpp", kv_type=kv_type,
                                 n_ubatch=kc.LLAMACPP_N_UBATCH).total_bytes
    return kc.kv_cache_bytes(config, n, engine="ideal", kv_type=kv_type).total_bytes


@dataclass(frozen=True)
class DecodeRoofline:
    """``decode_roofline``'s answer: the bytes one decode step reads and the tokens per second
    that the bandwidth allows.

    n              tokens cached per sequence at this step
    batch          sequences decoded together, one token each per step
    engine, kv_type   the cache's read rule and element type
    weights_bytes  the weights, read once per step whatever the batch
    cache_bytes    the KV cache one sequence's step reads (``decode_cache_bytes``)
    bandwidth      the GPU's memory bandwidth, bytes per second (decimal)
    gpu            the ``GPUS`` key the bandwidth came from, or None when given as a number
    """
    n: int
    batch: int
    engine: str
    kv_type: str
    weights_bytes: int
    cache_bytes: int
    bandwidth: int
    gpu: object

    @property
    def step_bytes(self):
        """Bytes one step reads: weights_bytes + batch x cache_bytes."""
        return self.weights_bytes + self.batch * self.cache_bytes

    @property
    def bytes_per_token(self):
        """step_bytes / batch: what each generated token costs in reads (a float)."""
        return self.step_bytes / self.batch

    @property
    def step_seconds(self):
        """The shortest a step can take: step_bytes / bandwidth."""
        return self.step_bytes / self.bandwidth

    @property
    def tokens_per_s(self):
        """The ceiling on generated tokens per second for the whole batch: batch x bandwidth /
        step_bytes."""
        return self.batch * self.bandwidth / self.step_bytes

    @property
    def cache_share(self):
        """The cache's fraction of the bytes a step reads: batch x cache_bytes / step_bytes."""
        return self.batch * self.cache_bytes / self.step_bytes


def decode_roofline(config, n, *, gpu=None, bandwidth=None, engine="ideal", kv_type="f16",
                    batch=1, weights_bytes=None):
    """The decode roofline: the most tokens per second a GPU's memory bandwidth allows at
    context ``n``. Decoding one token per sequence reads every weight once per step (one read
    serves the whole batch) and each sequence's KV cache (``decode_cache_bytes``, by the
    engine's rule); no kernel can finish a step faster than those bytes take to stream:
    ``tokens_per_s = batch x bandwidth / (weights + batch x cache)``. A ``DecodeRoofline``.

    ``gpu`` a ``GPUS`` key, or ``bandwidth`` in bytes per second (one of the two).
    ``weights_bytes`` None: the checkpoint's, ``models.load_model(config).weights.bytes``
    (an error when lessonlib does not count the architecture); give a GGUF's tensor bytes for a
    quantized file. Every weight byte counts once per step: a dense model reads them all; an
    untied embedding table is read one row per token and a mixture of experts reads only the
    routed experts of each token, so for those the real ceiling is higher (give the bytes read
    as ``weights_bytes``). Activations and the logits are not counted.
    """
    model = as_model(config)
    if (gpu is None) == (bandwidth is None):
        raise ValueError(f"give gpu (one of {', '.join(GPUS)}) or bandwidth (bytes per second), "
                         f"not {'both' if gpu is not None else 'neither'}")
    if gpu is not None:
        gpu = check.choice("gpu", gpu, tuple(GPUS))
        bandwidth = GPUS[gpu].bandwidth
    else:
        bandwidth = check.real("bandwidth", bandwidth, above=0)
    batch = positive_int("batch", batch)
    cache = decode_cache_bytes(model, n, engine=engine, kv_type=kv_type)
    if weights_bytes is None:
        weights = model.weights
        if weights is None:
            raise ValueError(f"weights_bytes is required: lessonlib does not count this model's "
                             f"weights ({model.params_note})")
        weights_bytes = weights.bytes
    else:
        weights_bytes = check.non_negative_int("weights_bytes", weights_bytes)
    return DecodeRoofline(n, batch, engine, kv_type, weights_bytes, cache, bandwidth, gpu)
