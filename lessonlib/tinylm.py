"""A tiny decoder-only transformer (torch) trained on ``lessonlib.kvtask``, and the ways the
long-context lessons run it: RoPE scaling switched on from a config dict, the project's window
and sink-token masks, and a KV cache that can stream with StreamingLLM's eviction. Its masks
and heads follow docs/CONTRACT.md, "Attention semantics".

Architecture (Llama-shaped, nanoGPT-sized: 804,352 parameters, 0.8M):

    x = embed(tokens)                                      # (B, n, d)
    for each layer:
        x = x + W_o · attention(RoPE(W_q h), RoPE(W_k h), W_v h),  h = RMSNorm(x)
        x = x + W_down (silu(W_gate h) * W_up h),                  h = RMSNorm(x)
    logits = RMSNorm(x) · embedᵀ                           # tied embeddings

with grouped-query attention (``num_attention_heads`` query heads read
``num_key_value_heads`` KV heads: query head h reads KV head h // (hq // hkv), as in lessonlib.attention).

RoPE: ``inv_freq`` and ``attention_factor`` come from ``lessonlib.rope.rope_frequencies(config,
seq_len)``, the cos/sin tables from ``lessonlib.rope.cos_sin_table`` (float64 angles), NeoX
pairing (dims i and i + r/2), ``attention_factor`` multiplying cos and sin as HF and vLLM do.
Every scaling variant is therefore a config dict away: ``with_rope_scaling(config, {...})``.

Masks: ``forward(..., window=W, sink_tokens=S)`` applies the project's rule (key j visible to the
query at p iff j <= p and (p - j < W or j < S)) through ``lessonlib.attention.attention_mask``.

Streaming: ``decode(model, tokens, n_sink, n_recent)`` runs one token at a time through a KV cache
that keeps the first ``n_sink`` and the latest ``n_recent`` entries (StreamingLLM). The cache
holds keys *before* RoPE, so each step rotates them by their cache slot (0 .. size - 1), as
StreamingLLM does; ``positions="original"`` rotates by the original positions instead.

``DEFAULT_CONFIG`` is ``lessonlib.tinylm_results.DEFAULT_CONFIG``, re-exported: the committed
model's config.json (4 layers, 4 query heads, 2 KV heads of ``head_dim`` 32, ``rope_theta``
10,000, 256 trained positions). The config is read once, by ``lessonlib.models.tiny``
(``read_tiny_config``: every key checked, a frozen ``TinyConfig``, ``model.tiny_config``); this
module reads that object's fields, never a config key.
"""
import copy
import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lessonlib import _validate as check
from lessonlib.attention import attention_mask
from lessonlib.models import tiny
from lessonlib.models.tiny import with_rope_scaling  # noqa: F401 (public here: notebook 10 calls it)
from lessonlib.rope import cos_sin_table, rope_frequencies
from lessonlib.tinylm_results import DEFAULT_CONFIG  # numpy-only: notebooks read it without torch

__all__ = ["DEFAULT_CONFIG", "TinyLM", "with_rope_scaling", "rope_tables", "rotate",
           "mask_tensor", "load_tinylm", "save_tinylm", "decode", "StreamingKVCache",
           "token_losses", "answer_accuracy", "attention_to_first_tokens", "data_path",
           "NeedleModel", "check_tokens", "export_gguf", "neox_to_adjacent_pairs",
           "hf_config", "export_hf_checkpoint"]


# ------------------------------------------------------------------------------------------
# Argument checks (lessonlib._validate's vocabulary, for torch tensors and the model's config)
# ------------------------------------------------------------------------------------------

_FLOATING = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _tensor(name, t, *, ndim=None, finite=True):
    """``t`` when it is a floating-point torch tensor (of rank ``ndim`` if given) holding no
    NaN or inf; else ValueError naming ``name``, the count and the first bad index."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch tensor, got {check.describe(t)}")
    if t.dtype not in _FLOATING:
        raise ValueError(f"{name} must hold floating-point numbers, got dtype {t.dtype}")
    if ndim is not None and t.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if finite and t.numel():
        bad = ~torch.isfinite(t.detach())
        if bad.any():
            at = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(f"{name} holds non-finite values ({int(bad.sum())} of {t.numel()}; "
                             f"the first, {float(t[at])}, at index {at})")
    return t


def _rope_config(model, rope):
    """The config whose rope fields run ``model``: its own (``rope=None``) or ``rope``, whose
    head dim must be the model's (``models.tiny.rope_config``: else the tables rotate the wrong
    number of dims)."""
    if rope is None:
        return model.config
    return tiny.rope_config(rope, model.tiny_config.head_dim)


def _tinylm(model):
    if not isinstance(model, TinyLM):
        raise ValueError(f"model must be a TinyLM (load_tinylm(...)), got {check.describe(model)}")
    return model


def rope_tables(config, n_positions, seq_len=None):
    """(cos, sin) float32 torch tensors (n_positions, r/2), attention factor included, for the
    config's rope at served length ``seq_len`` (default ``n_positions``; drives dynamic NTK)."""
    n_positions = check.integer("n_positions", n_positions, minimum=1)
    seq_len = n_positions if seq_len is None else check.integer("seq_len", seq_len, minimum=1)
    inv_freq, attention_factor = rope_frequencies(config, seq_len=seq_len)
    cos, sin = cos_sin_table(inv_freq, n_positions, attention_factor)
    return torch.from_numpy(cos), torch.from_numpy(sin)


def rotate(x, cos, sin):
    """NeoX RoPE on x (..., n, d) with cos/sin (n, r/2): pairs (i, i + r/2) turn, the tail
    (dims r..d-1) passes. Equal to ``lessonlib.rope.apply_rope(x, positions, inv_freq,
    attention_factor=af)`` when cos/sin are that rope's table rows for ``positions``."""
    x = _tensor("x", x)
    if x.ndim < 2:
        raise ValueError(f"x must be (..., n, d), at least 2-D, got shape {tuple(x.shape)}")
    cos, sin = _tensor("cos", cos, ndim=2), _tensor("sin", sin, ndim=2)
    if sin.shape != cos.shape:
        raise ValueError(f"sin must have cos's shape {tuple(cos.shape)}, got {tuple(sin.shape)}")
    n, d = x.shape[-2:]
    if cos.shape[0] != n:
        raise ValueError(f"cos must have one row per position of x (n = {n}), got "
                         f"{cos.shape[0]} rows")
    if not 1 <= cos.shape[1] <= d // 2:
        raise ValueError(f"cos must have 1 .. d/2 = {d // 2} columns (one per rotated pair of "
                         f"x's {d} dims), got {cos.shape[1]}")
    return _rotate(x, cos, sin)


def _rotate(x, cos, sin):
    h = cos.shape[-1]
    x1, x2, tail = x[..., :h], x[..., h:2 * h], x[..., 2 * h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, tail], dim=-1)


def mask_tensor(nq, nk, *, window=None, sink_tokens=0):
    """The causal (nq, nk) bool mask of ``lessonlib.attention.attention_mask`` as a tensor."""
    return torch.from_numpy(attention_mask(nq, nk, causal=True, window=window,
                                           sink_tokens=sink_tokens))


def check_tokens(tokens, vocab_size, name="tokens"):
    """``tokens`` if it is a (batch, n) integer tensor of ids in [0, vocab_size), n >= 1; else a
    ValueError naming the argument, ``name`` (an id out of range would otherwise index garbage
    or crash deep inside the embedding)."""
    name = check.text("name", name)
    vocab_size = check.integer("vocab_size", vocab_size, minimum=1)
    if not isinstance(tokens, torch.Tensor) or tokens.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"{name} must be an int64 torch tensor of shape (batch, n), got "
                         f"{type(tokens).__name__}{'' if not hasattr(tokens, 'dtype') else ' ' + str(tokens.dtype)}")
    if tokens.ndim != 2 or tokens.shape[1] < 1:
        raise ValueError(f"{name} must have shape (batch, n) with n >= 1, got {tuple(tokens.shape)}")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size):
        raise ValueError(f"{name} must be ids in [0, {vocab_size}), got values "
                         f"{int(tokens.min())}..{int(tokens.max())}")
    return tokens


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, self.hq, self.hkv, self.hd = c.hidden_size, c.num_attention_heads, \
            c.num_key_value_heads, c.head_dim
        if self.hq % self.hkv:
            raise ValueError(f"num_attention_heads {self.hq} must be a multiple of "
                             f"num_key_value_heads {self.hkv}")
        self.q_proj = nn.Linear(d, self.hq * self.hd, bias=False)
        self.k_proj = nn.Linear(d, self.hkv * self.hd, bias=False)
        self.v_proj = nn.Linear(d, self.hkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.hq * self.hd, d, bias=False)

    def qkv(self, h):
        """Un-rotated q (B, hq, n, hd), k and v (B, hkv, n, hd)."""
        B, n, _ = h.shape
        q = self.q_proj(h).view(B, n, self.hq, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(B, n, self.hkv, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(B, n, self.hkv, self.hd).transpose(1, 2)
        return q, k, v

    def attend(self, q, k, v, mask=None, *, causal=False, need_weights=False):
        """Softmax attention of rotated q (B, hq, nq, hd) over k, v (B, hkv, nk, hd).
        Returns the output (B, nq, hq * hd) and, if asked, the weights (B, hq, nq, nk)."""
        B, _, nq, _ = q.shape
        if need_weights:
            g = self.hq // self.hkv
            k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)  # GQA
            s = q @ k.transpose(-1, -2) / math.sqrt(self.hd)  # (B, hq, nq, nk)
            if causal:
                mask = mask_tensor(nq, k.shape[-2])
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            p = torch.softmax(s, dim=-1)
            o = p @ v
        else:
            p = None
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                               enable_gqa=True)
        return o.transpose(1, 2).reshape(B, nq, self.hq * self.hd), p


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, f, eps = c.hidden_size, c.intermediate_size, c.rms_norm_eps
        self.attn_norm, self.mlp_norm = RMSNorm(d, eps), RMSNorm(d, eps)
        self.attn = Attention(c)
        self.gate, self.up = nn.Linear(d, f, bias=False), nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def mlp(self, x):
        h = self.mlp_norm(x)
        return self.down(F.silu(self.gate(h)) * self.up(h))


class TinyLM(nn.Module):
    """The model, a ``torch.nn.Module``: ``forward(tokens, ...)`` gives logits (B, n,
    VOCAB_SIZE). ``config`` is a config.json-style dict (``DEFAULT_CONFIG``); its rope fields
    are the model's own rope (the PI fine-tune stores ``rope_scaling`` linear 2 there).

    ``config`` is read once, by ``models.tiny.read_tiny_config``: a missing key or a value that
    would build another model is a ValueError naming the key. ``model.config`` keeps a copy of
    the dict (what checkpoints store and callers read); ``model.tiny_config``, the
    ``models.tiny.TinyConfig`` read from it, is what the model is built from."""

    def __init__(self, config=None):
        super().__init__()
        config = DEFAULT_CONFIG if config is None else config
        self.tiny_config = c = tiny.read_tiny_config(config)
        self.config = copy.deepcopy(config)
        self.embed = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Block(c) for _ in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, tokens, *, rope=None, window=None, sink_tokens=0, need_weights=False):
        """Logits (B, n, V) for tokens (B, n) at positions 0..n-1.

        ``rope``: a config dict whose rope fields replace the model's (e.g.
        ``with_rope_scaling(model.config, {"rope_type": "yarn", "factor": 8.0})``); the
        frequencies are built for ``seq_len = n``. ``window`` / ``sink_tokens``: the project's
        mask. ``need_weights``: also return the attention weights, a list over layers of
        (B, hq, n, n) tensors (explicit softmax instead of SDPA).
        """
        B, n = check_tokens(tokens, self.tiny_config.vocab_size).shape
        rope = _rope_config(self, rope)
        window = None if window is None else check.integer("window", window, minimum=1)
        sink_tokens = check.integer("sink_tokens", sink_tokens, minimum=0)
        need_weights = check.flag("need_weights", need_weights)
        cos, sin = rope_tables(rope, n)
        causal = window is None
        mask = None if causal else mask_tensor(n, n, window=window, sink_tokens=sink_tokens)
        x = self.embed(tokens)
        weights = []
        for layer in self.layers:
            q, k, v = layer.attn.qkv(layer.attn_norm(x))
            o, p = layer.attn.attend(_rotate(q, cos, sin), _rotate(k, cos, sin), v, mask,
                                     causal=causal, need_weights=need_weights)
            x = x + layer.attn.o_proj(o)
            x = x + layer.mlp(x)
            weights.append(p)
        logits = self.norm(x) @ self.embed.weight.T
        return (logits, weights) if need_weights else logits


# ------------------------------------------------------------------------------------------
# Streaming: a KV cache with StreamingLLM's eviction
# ------------------------------------------------------------------------------------------

class StreamingKVCache:
    """One layer's cache of un-rotated keys and values (B, hkv, size, hd): the first ``n_sink``
    entries forever plus the latest ``n_recent`` (``n_recent=None``: keep everything). The
    eviction order is ``lessonlib.streaming.StreamingCache``'s. ``positions`` holds each
    entry's original position."""

    def __init__(self, n_sink=0, n_recent=None):
        self.n_sink = check.integer("n_sink", n_sink, minimum=0)
        self.n_recent = None if n_recent is None else check.integer("n_recent", n_recent,
                                                                    minimum=1)
        self.k = self.v = None
        self.positions = torch.zeros(0, dtype=torch.long)

    def append(self, k, v, position):
        """Add one token's k, v (B, hkv, 1, hd); evict the oldest non-sink entry if over.
        ``position``: the token's original position, after every position already added."""
        k, v = _tensor("k", k, ndim=4), _tensor("v", v, ndim=4)
        if k.shape[2] != 1:
            raise ValueError(f"k must be one token's keys (B, hkv, 1, hd), got shape "
                             f"{tuple(k.shape)}")
        if v.shape[:3] != k.shape[:3]:
            raise ValueError(f"v must be (B, hkv, 1, dv) like k {tuple(k.shape)}, got "
                             f"{tuple(v.shape)}")
        for name, new, held in (("k", k, self.k), ("v", v, self.v)):
            same = held is None or (new.shape[:2] + new.shape[3:] == held.shape[:2]
                                    + held.shape[3:] and new.dtype == held.dtype)
            if not same:
                raise ValueError(f"{name} must match the cached {name}: (B, hkv, 1, hd) = "
                                 f"{tuple(held.shape[:2]) + (1,) + tuple(held.shape[3:])} "
                                 f"{held.dtype}, got {tuple(new.shape)} {new.dtype}")
        last = int(self.positions[-1]) if self.positions.numel() else -1
        position = check.integer("position", position, minimum=last + 1)
        self._push(k, v, position)

    def _push(self, k, v, position):
        self.k = k if self.k is None else torch.cat([self.k, k], dim=2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=2)
        self.positions = torch.cat([self.positions, torch.tensor([position])])
        if self.n_recent is not None and self.positions.numel() > self.n_sink + self.n_recent:
            keep = torch.cat([torch.arange(self.n_sink),
                              torch.arange(self.n_sink + 1, self.positions.numel())])
            self.k, self.v, self.positions = self.k[:, :, keep], self.v[:, :, keep], self.positions[keep]


@torch.no_grad()
def decode(model, tokens, *, n_sink=0, n_recent=None, positions="cache", rope=None):
    """Logits (B, n, V) computed one token at a time through per-layer KV caches.

    ``n_recent=None`` keeps the whole cache (an ordinary KV cache: equal to ``model(tokens)``).
    With ``n_recent`` set, each cache keeps the first ``n_sink`` and latest ``n_recent`` tokens.
    ``positions="cache"``: keys and the query are rotated by their cache slot 0 .. size - 1
    (StreamingLLM); ``"original"``: by their original positions. ``rope``: as in ``forward``;
    frequencies are built for ``seq_len`` = the largest position used.
    """
    model = _tinylm(model)
    B, n = check_tokens(tokens, model.tiny_config.vocab_size).shape
    n_sink = check.integer("n_sink", n_sink, minimum=0)
    n_recent = None if n_recent is None else check.integer("n_recent", n_recent, minimum=1)
    positions = check.choice("positions", positions, ("cache", "original"))
    rope = _rope_config(model, rope)
    span = n if (n_recent is None or positions == "original") else min(n, n_sink + n_recent)
    cos, sin = rope_tables(rope, span)
    caches = [StreamingKVCache(n_sink, n_recent) for _ in model.layers]
    out = []
    for t in range(n):
        x = model.embed(tokens[:, t:t + 1])  # (B, 1, d)
        for layer, cache in zip(model.layers, caches):
            q, k, v = layer.attn.qkv(layer.attn_norm(x))
            cache._push(k, v, t)
            pos = cache.positions if positions == "original" else torch.arange(cache.positions.numel())
            kr = _rotate(cache.k, cos[pos], sin[pos])
            qr = _rotate(q, cos[pos[-1:]], sin[pos[-1:]])
            o, _ = layer.attn.attend(qr, kr, cache.v)
            x = x + layer.attn.o_proj(o)
            x = x + layer.mlp(x)
        out.append(model.norm(x) @ model.embed.weight.T)
    return torch.cat(out, dim=1)


# ------------------------------------------------------------------------------------------
# Measurements
# ------------------------------------------------------------------------------------------

def _logits_and_tokens(logits, tokens):
    """logits (B, n, V) finite floats and tokens (B, n) ids in [0, V), or ValueError."""
    logits = _tensor("logits", logits, ndim=3)
    tokens = check_tokens(tokens, logits.shape[-1])
    if tuple(tokens.shape) != tuple(logits.shape[:2]):
        raise ValueError(f"tokens must be (B, n) = {tuple(logits.shape[:2])} like logits' first "
                         f"two dims, got {tuple(tokens.shape)}")
    return logits, tokens


def token_losses(logits, tokens):
    """Per-position next-token cross-entropy (B, n - 1), nats: position t predicts t + 1."""
    logits, tokens = _logits_and_tokens(logits, tokens)
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")


def _answer_positions(answer_at, B, n, device):
    """``answer_at`` as a (B, k) long tensor of positions in [1, n - 1]."""
    if isinstance(answer_at, torch.Tensor):
        if answer_at.dtype.is_floating_point or answer_at.dtype.is_complex \
                or answer_at.dtype == torch.bool:
            raise ValueError(f"answer_at must hold integer positions, got dtype {answer_at.dtype}")
        a = answer_at.detach().to("cpu", torch.long)
    else:
        a = torch.from_numpy(np.array(check.array("answer_at", answer_at, kind="int"),
                                      dtype=np.int64))
    if a.ndim not in (1, 2) or a.numel() == 0:
        raise ValueError(f"answer_at must be (B, k) or flat, with at least one position, got "
                         f"shape {tuple(a.shape)}")
    if a.ndim == 2 and a.shape[0] != B:
        raise ValueError(f"answer_at must have one row per document (B = {B}), got shape "
                         f"{tuple(a.shape)}")
    if a.numel() % B:
        raise ValueError(f"answer_at must hold k positions per document (B = {B}), got "
                         f"{a.numel()}")
    lo, hi = int(a.min()), int(a.max())
    if lo < 1 or hi > n - 1:
        raise ValueError(f"answer_at must be positions in [1, n - 1] = [1, {n - 1}] (each is "
                         f"predicted from the position before), got values {lo}..{hi}")
    return a.reshape(B, -1).to(device)


def answer_accuracy(logits, tokens, answer_at):
    """Fraction of answers whose argmax prediction (from the position before) is right.
    ``answer_at``: (B, k) positions into each row, or a flat array of B * k read as (B, k)
    (one per row when it has B entries)."""
    logits, tokens = _logits_and_tokens(logits, tokens)
    answer_at = _answer_positions(answer_at, *tokens.shape, tokens.device)
    pred = logits.argmax(-1).gather(1, answer_at - 1)
    return (pred == tokens.gather(1, answer_at)).float().mean().item()


def attention_to_first_tokens(weights, n_first=1, query_from=0):
    """(layers, hq) mean attention weight on keys 0..n_first-1, over queries at positions >=
    ``query_from`` and the batch, from ``forward(..., need_weights=True)``'s weights."""
    if not isinstance(weights, (list, tuple)) or not weights:
        raise ValueError(f"weights must be forward(..., need_weights=True)'s list of (B, hq, n, n) "
                         f"tensors, one per layer, got {check.describe(weights)}")
    for i, w in enumerate(weights):
        if w is None:
            raise ValueError(f"weights[{i}] is None: run forward(..., need_weights=True)")
        _tensor(f"weights[{i}]", w, ndim=4)
        if w.shape != weights[0].shape:
            raise ValueError(f"weights[{i}] must have weights[0]'s shape "
                             f"{tuple(weights[0].shape)}, got {tuple(w.shape)}")
    nq, nk = weights[0].shape[2:]
    n_first = check.integer("n_first", n_first, minimum=1, maximum=nk)
    query_from = check.integer("query_from", query_from, minimum=0, maximum=nq - 1)
    return torch.stack([w[:, :, query_from:, :n_first].sum(-1).mean(dim=(0, 2)) for w in weights])


class NeedleModel:
    """The tiny model in ``lessonlib.needles.run_needle_grid``'s model slot (with
    ``pass_prompt=True`` and ``tokenizer=kvtask.KVTokenizer()``): it reads the prompt's tokens,
    prepends <bos>, appends the question ("? pass:") and answers "pass: vNN" with its argmax
    next token. ``rope``: as in ``TinyLM.forward``."""

    def __init__(self, model, rope=None):
        from lessonlib.kvtask import BOS, KVTokenizer
        model = _tinylm(model)
        rope = _rope_config(model, rope) if rope is not None else None
        self.model, self.rope, self.tok, self.bos = model, rope, KVTokenizer(), BOS

    @torch.no_grad()
    def __call__(self, prompt):
        from lessonlib.kvtask import _token_ids
        from lessonlib.needles import NeedlePrompt
        if not isinstance(prompt, NeedlePrompt):
            raise ValueError(f"prompt must be a NeedlePrompt (run_needle_grid(..., "
                             f"pass_prompt=True, tokenizer=kvtask.KVTokenizer())), got "
                             f"{check.describe(prompt)}")
        context = _token_ids("prompt.tokens", prompt.tokens)
        try:
            question = self.tok.encode(prompt.question)
        except ValueError as err:
            raise ValueError(f"prompt.question must be words of the task (\"? pass:\"): "
                             f"{err}") from None
        ids = [self.bos] + context + question
        logits = self.model(torch.tensor([ids]), rope=self.rope)
        return "pass: " + self.tok.decode([int(logits[0, -1].argmax())])


# ------------------------------------------------------------------------------------------
# Checkpoints
# ------------------------------------------------------------------------------------------

def data_path(name):
    """The path of a file committed in ``lessonlib/data`` (checkpoints and result files)."""
    from importlib import resources
    if not check.text("name", name):
        raise ValueError("name must be a file name in lessonlib/data, got ''")
    return resources.files("lessonlib").joinpath("data", name)


_CHECKPOINT_KEYS = ("config", "state_dict", "dtype")


def save_tinylm(model, path, **extra):
    """Save config and weights, the weights as float16 (half the bytes; the model's own
    numbers are those of the float16 weights, which ``load_tinylm`` widens back to float32).
    ``path``: a file name or a writable file object; ``extra``: more entries to store."""
    model = _tinylm(model)
    if not isinstance(path, (str, os.PathLike)) and not callable(getattr(path, "write", None)):
        raise ValueError(f"path must be a file name or a writable file, got {check.describe(path)}")
    for key in extra:
        if key in _CHECKPOINT_KEYS:
            raise ValueError(f"{key} is one of the checkpoint's own entries "
                             f"({', '.join(_CHECKPOINT_KEYS)}): store extra data under another "
                             f"name")
    state = {k: v.detach().to(torch.float16) for k, v in model.state_dict().items()}
    torch.save({"config": model.config, "state_dict": state, "dtype": "float16", **extra}, path)


def load_tinylm(name_or_path="tinylm.pt"):
    """A ``TinyLM`` in eval mode from ``lessonlib/data/<name>`` or a path."""
    import pickle
    from pathlib import Path
    if not isinstance(name_or_path, (str, os.PathLike)) or not str(name_or_path):
        raise ValueError(f"name_or_path must be a checkpoint's file name or path, got "
                         f"{check.describe(name_or_path)}")
    path = Path(name_or_path)
    if not path.is_file():
        path = data_path(str(name_or_path))
        if not path.is_file():
            from importlib import resources
            committed = sorted(p.name for p in resources.files("lessonlib").joinpath(
                "data").iterdir() if p.name.endswith(".pt"))
            raise ValueError(f"name_or_path {str(name_or_path)!r} is neither a file nor a "
                             f"checkpoint in lessonlib/data (there: {', '.join(committed)})")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, pickle.UnpicklingError, EOFError, ValueError, OSError) as err:
        raise ValueError(f"name_or_path {str(name_or_path)!r} is not a save_tinylm checkpoint: "
                         f"{err}") from None
    if not isinstance(blob, dict) or not {"config", "state_dict"} <= set(blob):
        raise ValueError(f"name_or_path {str(name_or_path)!r} is not a save_tinylm checkpoint "
                         f"(no config and state_dict)")
    model = TinyLM(blob["config"])
    try:
        model.load_state_dict({k: v.to(torch.float32) for k, v in blob["state_dict"].items()})
    except (RuntimeError, AttributeError) as err:
        raise ValueError(f"name_or_path {str(name_or_path)!r}: the weights do not fit the "
                         f"checkpoint's config: {err}") from None
    return model.eval()


# ------------------------------------------------------------------------------------------
# Export as a Hugging Face checkpoint (what vLLM and transformers load)
# ------------------------------------------------------------------------------------------

# this model's parameter names -> HF Llama's (modeling_llama.py), per layer and for the model
_HF_LAYER_NAMES = {"attn_norm": "input_layernorm", "mlp_norm": "post_attention_layernorm",
                   "attn.q_proj": "self_attn.q_proj", "attn.k_proj": "self_attn.k_proj",
                   "attn.v_proj": "self_attn.v_proj", "attn.o_proj": "self_attn.o_proj",
                   "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}


def hf_config(model, rope_scaling=None, max_position_embeddings=None):
    """The config.json of ``model`` as a Hugging Face Llama (``LlamaForCausalLM``, float32,
    tied embeddings), with ``rope_scaling`` (``with_rope_scaling``'s dict; None: plain RoPE) and
    ``max_position_embeddings`` (None: the trained length; a YaRN or llama3 file states the
    extended length there, as vLLM and HF read it)."""
    model = _tinylm(model)
    c = tiny.read_tiny_config(with_rope_scaling(model.config, rope_scaling))
    out = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
           "torch_dtype": "float32", "attention_bias": False, "mlp_bias": False,
           "vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
           "intermediate_size": c.intermediate_size, "num_hidden_layers": c.num_hidden_layers,
           "num_attention_heads": c.num_attention_heads,
           "num_key_value_heads": c.num_key_value_heads, "head_dim": c.head_dim,
           "rope_theta": c.rope_theta, "max_position_embeddings": c.max_position_embeddings,
           "rms_norm_eps": c.rms_norm_eps, "tie_word_embeddings": c.tie_word_embeddings}
    if c.rope_scaling is not None:
        out["rope_scaling"] = copy.deepcopy(c.rope_scaling)
    if max_position_embeddings is not None:
        out["max_position_embeddings"] = check.integer(
            "max_position_embeddings", max_position_embeddings, minimum=1)
    return out


def export_hf_checkpoint(model, folder, rope_scaling=None, max_position_embeddings=None):
    """Write ``model`` into ``folder`` as a Hugging Face Llama checkpoint: ``config.json``
    (``hf_config``) and ``model.safetensors`` (float32). HF Llama rotates NeoX pairs, as this
    model does, so the weights go over unchanged, renamed only. Returns the folder."""
    from safetensors.torch import save_file
    folder = check.text("folder", folder)
    config = hf_config(model, rope_scaling, max_position_embeddings)
    model = _tinylm(model)
    sd = {k: v.detach().to(torch.float32) for k, v in model.state_dict().items()}
    out = {"model.embed_tokens.weight": sd["embed.weight"], "model.norm.weight": sd["norm.weight"]}
    for il in range(model.tiny_config.num_hidden_layers):
        for ours, theirs in _HF_LAYER_NAMES.items():
            out[f"model.layers.{il}.{theirs}.weight"] = sd[f"layers.{il}.{ours}.weight"]
    os.makedirs(folder, exist_ok=True)
    save_file({k: v.contiguous() for k, v in out.items()}, os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    return folder


# ------------------------------------------------------------------------------------------
# Export to llama.cpp
# ------------------------------------------------------------------------------------------

def neox_to_adjacent_pairs(weight, n_heads):
    """The rows of a Q or K projection (n_heads * head_dim, d) reordered so that a rotation of
    adjacent pairs (2j, 2j + 1), llama.cpp's llama architecture, does what this model's NeoX
    rotation of (j, j + head_dim / 2) does: within each head, row j goes to 2j and row
    j + head_dim / 2 to 2j + 1 (what llama.cpp's GGUF converter, convert_hf_to_gguf.py, does to
    HuggingFace Llama checkpoints; HuggingFace's own converter permutes the other way, Meta's
    adjacent pairs to NeoX halves). Q and K permuted alike leave every score q . k unchanged.
    Errors: ``weight`` not 2-D, rows not a multiple of 2 * n_heads."""
    weight = check.array("weight", weight, kind="real", ndim=2)
    n_heads = check.integer("n_heads", n_heads, minimum=1)
    if weight.shape[0] % (2 * n_heads):
        raise ValueError(f"weight must be (n_heads * head_dim, d) with an even head_dim, got "
                         f"shape {weight.shape} for n_heads={n_heads}")
    hd = weight.shape[0] // n_heads
    return (weight.reshape(n_heads, 2, hd // 2, weight.shape[1]).swapaxes(1, 2)
            .reshape(weight.shape))


def export_gguf(model, path):
    """Write ``model`` (a ``TinyLM``) as a GGUF file llama.cpp runs (architecture llama, float32
    weights, tied embeddings, ``rope_scaling`` as the converter writes it; the PI model's linear
    factor 2 included).
    Returns the path. Q and K rows go through ``neox_to_adjacent_pairs``: this model rotates
    NeoX pairs, llama.cpp's llama graph rotates adjacent ones. The token ids are the model's
    own (the file's tokenizer is a placeholder list: feed ids, not text)."""
    from lessonlib.models import gguf
    model = _tinylm(model)
    path = check.text("path", path)
    c = model.tiny_config
    sd = {k: v.detach().to(torch.float32).numpy() for k, v in model.state_dict().items()}
    weights = {"token_embd.weight": sd["embed.weight"], "output_norm.weight": sd["norm.weight"]}
    for il in range(c.num_hidden_layers):
        p, b = f"layers.{il}.", f"blk.{il}."
        weights.update({
            b + "attn_norm.weight": sd[p + "attn_norm.weight"],
            b + "attn_q.weight": neox_to_adjacent_pairs(sd[p + "attn.q_proj.weight"],
                                                        c.num_attention_heads),
            b + "attn_k.weight": neox_to_adjacent_pairs(sd[p + "attn.k_proj.weight"],
                                                        c.num_key_value_heads),
            b + "attn_v.weight": sd[p + "attn.v_proj.weight"],
            b + "attn_output.weight": sd[p + "attn.o_proj.weight"],
            b + "ffn_norm.weight": sd[p + "mlp_norm.weight"],
            b + "ffn_gate.weight": sd[p + "gate.weight"],
            b + "ffn_up.weight": sd[p + "up.weight"],
            b + "ffn_down.weight": sd[p + "down.weight"]})
    cfg = dict(model.config, model_type="llama", tie_word_embeddings=True)
    return gguf.write_model_gguf(path, cfg, hidden_size=c.hidden_size,
                                 intermediate_size=c.intermediate_size,
                                 vocab_size=c.vocab_size, weights=weights)
