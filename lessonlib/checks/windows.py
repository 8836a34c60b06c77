"""Exercise checks for notebook 06 (sliding windows, interleaved layers, attention sinks).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. Expected values
come from lessonlib (kv_cache, streaming); the typical mistakes are recomputed the wrong way.
"""
from ..configs import load_config
from ..kv_cache import MIB, kv_cache_bytes, layer_windows, llamacpp_swa_cells
from ..streaming import StreamingCache, receptive_field
from . import check_number, correct, items, wholes, wrong
from ._preamble import preamble

__all__ = ["receptive_field_tokens", "swa_cells", "sliding_layers_mib", "streaming_positions",
           "QUESTIONS"]

QUESTIONS = {
    "receptive_field_tokens": dict(config="Mistral-7B"),
    "swa_cells": dict(config="tiny-gemma3-swa", n_ctx=32768, n_seq=2, n_ubatch=800),
    "sliding_layers_mib": dict(config="gpt-oss-20b", max_model_len=131072, block_size=16),
    "streaming_positions": dict(n_sink=4, n_recent=8, last_token=30),
}


def _pad(x, to=256):
    return -(-x // to) * to


@preamble
def receptive_field_tokens(answer):
    """How far back Mistral-7B-v0.1's 32 windowed layers (W = 4096) can carry information."""
    name = "receptive_field_tokens"
    cfg = load_config(QUESTIONS[name]["config"])
    L, W = cfg["num_hidden_layers"], cfg["sliding_window"]
    expected = receptive_field(L, W)
    mistakes = [
        (L * W, f"You used W instead of W - 1: a window of W = {W} includes the query itself, so "
                f"one layer reaches only W - 1 = {W - 1} positions back."),
        (W - 1, f"That is one layer. Each of the {L} layers moves information W - 1 further."),
        (W, f"That is one layer's window. Information hops W - 1 positions per layer, {L} "
            f"times."),
        ((L - 1) * (W - 1), f"Every one of the {L} layers adds a hop, not {L - 1}."),
        (L * (W - 1) + 1, "That counts positions covered, including the token itself; the "
                          "question asks for the distance back."),
    ]
    return check_number(name, answer, expected, mistakes, integer=True,
                        right=f"Correct: {L} x ({W} - 1) = {expected:,} positions (the often "
                              f"quoted {L * W:,} counts W instead of W - 1).",
                        generic="One layer reaches W - 1 positions back; stacked layers add "
                                "their reaches.")


@preamble
def swa_cells(answer):
    """Cells of each sliding-window layer in llama.cpp for the tiny Gemma 3 model (W = 128) at
    -c 32768 with 2 sequences (--kv-unified) and -ub 800 (llama-kv-cache-iswa.cpp's rule)."""
    q = QUESTIONS["swa_cells"]
    W = load_config(q["config"])["sliding_window"]
    n_ctx, n_seq, ub = q["n_ctx"], q["n_seq"], q["n_ubatch"]
    expected = llamacpp_swa_cells(n_ctx, W, n_seq=n_seq, n_ubatch=ub)
    mistakes = [
        (W * n_seq + ub, f"Right sum, but llama.cpp rounds the cell count up to a multiple of "
                         f"256 (GGML_PAD): pad({W * n_seq + ub}, 256)."),
        (_pad(W + ub), f"Each of the {n_seq} sequences keeps its own window: n_swa x n_seq."),
        (W + ub, f"Two slips: n_swa x n_seq (each of the {n_seq} sequences keeps a window), and "
                 f"the padding to a multiple of 256."),
        (_pad(W * n_seq), "The micro-batch being processed must fit next to the window: add "
                          "n_ubatch before padding."),
        (W, "The window alone is not enough: add the other sequences' windows and the "
            "micro-batch, then pad to 256."),
        (n_ctx, "That is a global layer (or --swa-full); sliding layers get "
                "pad(min(n_ctx, n_swa x n_seq + n_ubatch), 256)."),
        (_pad(n_seq * (W + ub)), "The micro-batch is added once, not once per sequence."),
    ]
    return check_number("swa_cells", answer, expected, mistakes, unit="cells", integer=True,
                        generic="pad(min(n_ctx, n_swa x n_seq + n_ubatch), 256).")


@preamble
def sliding_layers_mib(answer):
    """MiB that vLLM's hybrid manager gives gpt-oss-20b's sliding layers for one request at
    max_model_len 131,072 (block size 16, BF16): SlidingWindowSpec's blocks."""
    q = QUESTIONS["sliding_layers_mib"]
    cfg = load_config(q["config"])
    n, bs = q["max_model_len"], q["block_size"]
    group = kv_cache_bytes(cfg, n, engine="vllm", block_size=bs).sliding_layers
    expected = group.bytes / MIB
    W, n_local, per_cell = group.window, group.n_layers, group.bytes_per_cell
    full = kv_cache_bytes(cfg, n, engine="vllm", block_size=bs, swa_full=True).sliding_layers
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    n_layers = len(layer_windows(cfg))
    mistakes = [
        (n_local * W * per_cell / MIB, f"vLLM allocates whole blocks, plus one: the window need "
                                       f"not start at a block boundary, so cdiv(W - 1, "
                                       f"{bs}) + 1 = {group.blocks} blocks of {bs}, not W "
                                       f"tokens."),
        (full.bytes / MIB, "That is the cache with the hybrid manager disabled (every layer "
                           "full); with it on, a sliding layer keeps only its window's blocks."),
        (expected * heads / kv_heads, f"Use the {kv_heads} KV heads, not the {heads} query "
                                      f"heads."),
        (expected / 2, "Each slot holds a key AND a value: 2 x KV heads x head_dim x 2 bytes."),
        (expected * n_layers / n_local, f"Only the {n_local} sliding layers (layer_types) "
                                        f"count, not all {n_layers}."),
        (expected / n_local, f"That is one layer; gpt-oss-20b has {n_local} sliding layers."),
    ]
    return check_number("sliding_layers_mib", answer, expected, mistakes, unit="MiB",
                        rtol=1e-6, generic="sliding layers x (cdiv(W - 1, 16) + 1) blocks x 16 "
                                           "slots x bytes per slot, divided by 2**20.")


@preamble
def streaming_positions(answer):
    """The original positions a StreamingLLM cache (4 sinks + 8 recent) holds after token 30."""
    name = "streaming_positions"
    q = QUESTIONS[name]
    n_sink, n_recent, last = q["n_sink"], q["n_recent"], q["last_token"]
    cache = StreamingCache(n_sink, n_recent)
    for _ in range(last + 1):
        cache.append()
    expected = cache.positions.tolist()
    what = "the list of original positions in the cache, e.g. [0, 1, ...]"
    listed = items(answer, what=what)
    got = wholes(listed, what=what)
    if isinstance(answer, (set, frozenset)):  # a set has no order: read it in cache order
        got = sorted(got)
    if got == expected:
        return correct(name, f"Correct: the {n_sink} sinks stay, and the {n_recent} newest "
                             f"tokens {last - n_recent + 1}..{last} follow them.")
    if sorted(got) == expected:
        return correct(name, "Correct set of positions (the cache keeps them in order: sinks "
                             "first).")
    size = n_sink + n_recent
    if got == list(range(last - size + 1, last + 1)):
        return wrong(name, f"That is a plain window of the last {size}: the first {n_sink} "
                           f"tokens are sinks and are never evicted.")
    if got == list(range(size)):
        return wrong(name, f"Those are the RoPE positions StreamingLLM uses (slots 0..{size - 1}); "
                           f"the question asks for the original positions of the kept tokens.")
    if got == list(range(last + 1)):
        return wrong(name, f"Nothing was evicted: the cache holds at most {size} entries.")
    recent = got[n_sink:]
    if got[:n_sink] == list(range(n_sink)) and recent and recent[-1] != last:
        return wrong(name, f"Token {last} was just appended: the newest token is always in the "
                           f"cache.")
    if got[:n_sink] == list(range(n_sink)) and len(recent) != n_recent:
        return wrong(name, f"Keep exactly {n_recent} recent tokens after the {n_sink} sinks "
                           f"({size} entries); you kept {len(recent)}.")
    return wrong(name, f"Keep positions 0..{n_sink - 1} (the sinks) and the {n_recent} most "
                       f"recent tokens, ending at {last}.")
