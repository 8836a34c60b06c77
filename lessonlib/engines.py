"""Two serving-engine rules the notebooks print as tables: which attention kernel vLLM picks on a
GPU, and what llama.cpp's server keeps when a conversation fills its context.

vLLM (read in vLLM 0.33.0, the release on PyPI): on an NVIDIA GPU, ``get_attn_backend_cls`` in
``vllm/platforms/cuda.py`` walks a priority list of attention backends and takes the first one
whose own checks pass (``AttentionBackend.validate_configuration``, ``vllm/v1/attention/
backend.py``). For a decoder without MLA (causal, F16/BF16, the default KV cache dtype "auto"):

    compute capability 10.x   FLASHINFER, FLASH_ATTN, TRITON_ATTN, FLEX_ATTENTION, TURBOQUANT
    any other                 FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLEX_ATTENTION, TURBOQUANT

and each backend rejects what it cannot run, with the reason vLLM logs:

    FLASH_ATTN       compute capability >= 8.0; head size a multiple of 8, at most 256 (512 where
                     FlashAttention 4 runs: 9.x, 10.x, 11.x); learned sinks need FA3 (9.x) or
                     FA4 (10.x) and are refused below 9.0 ("sink not supported on compute
                     capability < 9.0")
    FLASHINFER       compute capability 8.0 to 12.1 (7.5 is refused for now: a known FlashInfer
                     bug on Turing); head sizes 64, 128, 256, 512; learned sinks only through
                     its TRT-LLM kernels, on 9.0, 10.x and 12.x
    TRITON_ATTN      any compute capability; head size >= 32; learned sinks supported
    FLEX_ATTENTION   any compute capability and head size; no learned sinks
    TURBOQUANT       only with a TurboQuant KV cache dtype (never with "auto")

Assumed, as in the PyPI wheel: FA2, FA3 and FA4 are all built in, FlashInfer is installed and
its TRT-LLM kernels can be fetched. ``--attention-backend NAME`` skips the walk (and fails if
that backend rejects the model).

llama.cpp (``tools/server/server-context.cpp``, ``update_slots``; ``common/arg.cpp``): with
``--context-shift`` (off by default: generation then stops when the context is full), a
generating slot whose cache holds ``n_ctx - 1`` tokens is shifted before the next token goes
in. It keeps the first ``n_keep`` tokens (``--keep N``, default 0, ``-1`` = the whole prompt;
plus 1 for the BOS token; at most ``n_ctx - 4``), discards the next ``n_discard`` (default:
half of the ``n_left`` tokens after the kept ones), and moves the rest back by ``n_discard``
positions. The cache stores keys already rotated by RoPE, so moving them means rotating each
moved key once more, by ``-n_discard`` (the "K-shift", ``src/llama-kv-cache.cpp``): positions
stay consecutive, 0 .. size - 1.
"""
from dataclasses import dataclass

import numpy as np

from . import _validate as check
from ._validate import non_negative_int, positive_int

__all__ = ["VLLM_VERSION", "VLLM_BACKENDS", "vllm_backend_priority", "vllm_attention_backend",
           "BackendChoice", "llamacpp_context_shift", "ContextShift", "llamacpp_cached_tokens",
           "CachedTokens"]


# --------------------------------------------------------------------------- vLLM

VLLM_VERSION = "0.33.0"  # the release whose selection rules are restated here
"""The vLLM release whose backend-selection rules this module restates: "0.33.0"."""

def _capability(value):
    """A compute capability as (major, minor): two integers, major >= 1 and minor 0..9 (vLLM's
    DeviceCapability.to_int assumes a single-digit minor). A float cannot tell 12.1 from 12.10,
    so it is refused."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        hint = " (a float cannot tell 12.1 from 12.10)" if isinstance(value, float) else ""
        raise ValueError(f"capability must be a (major, minor) pair such as (8, 0), got "
                         f"{check.describe(value)}{hint}")
    return (check.integer("capability major", value[0], minimum=1),
            check.integer("capability minor", value[1], minimum=0, maximum=9))


def _fa_version(cap):
    """The FlashAttention version vLLM's get_flash_attn_version picks on this GPU (fa_utils.py):
    FA3 on 9.x, FA4 on 10.x, FA2 from 8.0 on, none below (FA2 needs 8.0)."""
    if cap[0] == 9:
        return 3
    if cap[0] == 10:
        return 4
    return 2 if cap >= (8, 0) else None


def _flash_attn(cap, head_size, sinks):
    """FlashAttentionBackend (vllm/v1/attention/backends/flash_attn.py)."""
    fa4 = cap[0] in (9, 10, 11)  # _is_fa4_supported: 9.x, 10.x or 11.x
    reasons = []
    if head_size % 8 or head_size > (512 if fa4 else 256):
        reasons.append("head_size not supported")
    if sinks and _fa_version(cap) not in (3, 4):  # flash_attn_supports_sinks
        reasons.append("attention sinks not supported")
    if cap < (8, 0):
        reasons.append("compute capability not supported")
    if sinks and cap < (9, 0):  # supports_combination
        reasons.append("sink not supported on compute capability < 9.0")
    return reasons


def _flashinfer(cap, head_size, sinks):
    """FlashInferBackend (vllm/v1/attention/backends/flashinfer.py)."""
    trtllm_sinks = cap == (9, 0) or cap[0] in (10, 12)  # supports_sink via TRT-LLM kernels
    reasons = []
    if head_size not in (64, 128, 256, 512):
        reasons.append("head_size not supported")
    if sinks and not trtllm_sinks:
        reasons.append("attention sinks not supported")
    if not (8, 0) <= cap <= (12, 1):
        reasons.append("compute capability not supported")
    return reasons


def _triton_attn(cap, head_size, sinks):
    """TritonAttentionBackend (triton_attn.py): any GPU, head size >= 32, sinks supported."""
    return [] if head_size >= 32 else ["head_size not supported"]


def _flex_attention(cap, head_size, sinks):
    """FlexAttentionBackend (flex_attention.py): any head size, no learned sinks."""
    return ["attention sinks not supported"] if sinks else []


def _turboquant(cap, head_size, sinks):
    """TurboQuantAttentionBackend: only for turboquant_* KV cache dtypes, not the default."""
    return ["kv_cache_dtype not supported"] + (["attention sinks not supported"] if sinks else [])


# One check per backend: the reasons it gives for refusing (an empty list: it can run it).
VLLM_BACKENDS = {"FLASH_ATTN": _flash_attn, "FLASHINFER": _flashinfer,
                 "TRITON_ATTN": _triton_attn, "FLEX_ATTENTION": _flex_attention,
                 "TURBOQUANT": _turboquant}
"""Backend name -> the function stating why vLLM refuses that backend for a case (or not)."""


def vllm_backend_priority(capability):
    """The order vLLM tries the backends in on this GPU (cuda.py, _get_backend_priorities, a
    causal decoder without MLA): FlashInfer first on 10.x (Blackwell B200/GB200), FlashAttention
    first everywhere else."""
    cap = _capability(capability)
    if cap[0] == 10:
        return ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")
    return ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TURBOQUANT")


@dataclass(frozen=True)
class BackendChoice:
    """``vllm_attention_backend``'s answer.

    ``backend`` is what vLLM logs as "Using <backend> attention backend" (None: no backend can
    run the model and vLLM stops with "No valid attention backend found"); ``valid`` the
    backends that passed, in priority order ("out of potential backends: [...]"); ``rejected``
    every refused backend with its reasons, in priority order.
    """
    capability: tuple
    head_size: int
    sinks: bool
    backend: str | None
    valid: tuple
    rejected: tuple  # ((backend, (reason, ...)), ...)

    @property
    def why(self):
        """The refusals that decided it: those of the backends tried before the chosen one."""
        order = vllm_backend_priority(self.capability)
        stop = order.index(self.backend) if self.backend is not None else len(order)
        skipped = dict(self.rejected)
        return "; ".join(f"{name}: {', '.join(skipped[name])}" for name in order[:stop])


def vllm_attention_backend(capability, head_size, *, sinks=False):
    """The attention backend vLLM picks for a decoder (no MLA, causal, F16/BF16 weights, the
    default KV cache) on an NVIDIA GPU of compute ``capability`` (major, minor), with heads of
    ``head_size`` dims, with or without learned sinks (gpt-oss). Returns a ``BackendChoice``.

    T4 (7, 5), head 128: TRITON_ATTN (FlashAttention needs 8.0, FlashInfer is held at 8.0 too).
    A100 (8, 0): FLASH_ATTN; with sinks TRITON_ATTN. B200 (10, 0), head 128: FLASHINFER.
    """
    cap = _capability(capability)
    head_size = positive_int("head_size", head_size)
    sinks = check.flag("sinks", sinks)
    valid, rejected = [], []
    for name in vllm_backend_priority(cap):
        reasons = VLLM_BACKENDS[name](cap, head_size, sinks)
        if reasons:
            rejected.append((name, tuple(reasons)))
        else:
            valid.append(name)
    return BackendChoice(cap, head_size, sinks, valid[0] if valid else None, tuple(valid),
                         tuple(rejected))


# --------------------------------------------------------------------------- llama.cpp

LLAMACPP_MIN_CTX = 5  # n_keep is capped at n_ctx - 4; from 5 cells on, a shift can discard one


@dataclass(frozen=True)
class ContextShift:
    """One context shift of llama-server, in cache positions (0 .. n_tokens - 1).

    Positions ``[0, n_keep)`` stay; ``discarded`` are removed; ``moved`` go back by
    ``n_discard`` positions (their keys rotated once more by ``delta = -n_discard``).
    """
    n_ctx: int
    n_tokens: int  # tokens in the cache when the shift fires: n_ctx - 1
    n_keep: int  # kept at the front: --keep (+1 for BOS), at most n_ctx - 4
    n_left: int  # the tokens after the kept ones
    n_discard: int

    @property
    def discarded(self):
        return range(self.n_keep, self.n_keep + self.n_discard)

    @property
    def moved(self):
        return range(self.n_keep + self.n_discard, self.n_tokens)

    @property
    def delta(self):
        return -self.n_discard


def _shift_args(n_ctx, n_keep, n_discard, add_bos, n_prompt):
    n_ctx = check.integer("n_ctx", n_ctx, minimum=LLAMACPP_MIN_CTX)
    n_keep = check.integer("n_keep", n_keep, minimum=-1)
    n_discard = non_negative_int("n_discard", n_discard)
    add_bos = check.flag("add_bos", add_bos)
    if n_prompt is not None:
        n_prompt = check.integer("n_prompt", n_prompt, minimum=1, maximum=n_ctx - 1)
    if n_keep == -1 and n_prompt is None:
        raise ValueError("n_prompt is needed with n_keep = -1 (--keep -1 keeps the whole prompt)")
    keep = n_prompt if n_keep == -1 else n_keep
    keep = min(n_ctx - 4, keep + (1 if add_bos else 0))  # server-context.cpp: BOS +1, <= n_ctx - 4
    n_left = n_ctx - 1 - keep
    if n_discard > n_left:
        raise ValueError(f"n_discard must be <= {n_left}, the tokens after the {keep} kept ones "
                         f"in a full cache of n_ctx - 1 = {n_ctx - 1}, got {n_discard}")
    return n_ctx, keep, n_left, n_discard or n_left // 2


def llamacpp_context_shift(n_ctx, *, n_keep=0, n_discard=0, add_bos=True, n_prompt=None):
    """What llama-server does when a generating slot's cache of ``n_ctx`` cells is full
    (``-c n_ctx --context-shift --keep n_keep``). Returns a ``ContextShift``.

    ``n_discard`` 0 means the server's default, half of the tokens after the kept ones (a
    request may send its own ``n_discard``). ``n_keep = -1`` keeps the whole prompt of
    ``n_prompt`` tokens. ``add_bos``: the model's tokenizer adds a BOS token, which is kept too.
    ``-c 13 --keep 3``: keep 4 (BOS + 3), n_left 8, discard 4, move positions 8..11 to 4..7.
    """
    n_ctx, keep, n_left, n_discard = _shift_args(n_ctx, n_keep, n_discard, add_bos, n_prompt)
    return ContextShift(n_ctx, n_ctx - 1, keep, n_left, n_discard)


@dataclass(frozen=True)
class CachedTokens:
    """``llamacpp_cached_tokens``'s answer: the tokens in the cache, in cache order (their cache
    positions are 0 .. len - 1), and how many shifts (K-shift passes) it took to get there."""
    tokens: np.ndarray
    n_shifts: int


def llamacpp_cached_tokens(n_arrived, n_ctx, *, n_keep=0, n_discard=0, add_bos=True,
                           n_prompt=None):
    """The tokens (numbered 0, 1, ... in arrival order; token 0 is the BOS when ``add_bos``)
    that llama-server's cache holds after ``n_arrived`` tokens, shifting as
    ``llamacpp_context_shift`` says whenever a new token would fill it (``n_tokens + 1 >=
    n_ctx`` before the token goes in). Returns ``CachedTokens``."""
    n_arrived = non_negative_int("n_arrived", n_arrived)
    shift = llamacpp_context_shift(n_ctx, n_keep=n_keep, n_discard=n_discard, add_bos=add_bos,
                                   n_prompt=n_prompt)
    held, n_shifts = [], 0
    for token in range(n_arrived):
        if len(held) + 1 >= shift.n_ctx:
            del held[shift.n_keep:shift.n_keep + shift.n_discard]
            n_shifts += 1
        held.append(token)
    return CachedTokens(np.array(held, dtype=np.int64), n_shifts)
