"""A tiny decoder-only transformer (torch) trained on ``lessonlib.kvtask``, and the ways the
long-context lessons run it: RoPE scaling switched on from a config dict, the project's window
and sink-token masks, and a KV cache that can stream with StreamingLLM's eviction.

Architecture (Llama-shaped, nanoGPT-sized):

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
"""
import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from lessonlib.attention import attention_mask
from lessonlib.rope import cos_sin_table, rope_frequencies
from lessonlib.tinylm_results import DEFAULT_CONFIG  # numpy-only: notebooks read it without torch

__all__ = ["DEFAULT_CONFIG", "TinyLM", "with_rope_scaling", "rope_tables", "rotate",
           "mask_tensor", "load_tinylm", "save_tinylm", "decode", "StreamingKVCache",
           "token_losses", "answer_accuracy", "attention_to_first_tokens", "data_path",
           "NeedleModel", "check_tokens"]


def with_rope_scaling(config, rope_scaling):
    """A copy of ``config`` with ``rope_scaling`` set (None: plain RoPE). The trained length is
    recorded as ``original_max_position_embeddings`` where the rope type reads it (YaRN)."""
    out = copy.deepcopy(config)
    if rope_scaling is None:
        out.pop("rope_scaling", None)
        return out
    rs = dict(rope_scaling)
    if rs.get("rope_type", rs.get("type")) == "yarn":
        rs.setdefault("original_max_position_embeddings", config["max_position_embeddings"])
    out["rope_scaling"] = rs
    return out


def rope_tables(config, n_positions, seq_len=None):
    """(cos, sin) float32 torch tensors (n_positions, r/2), attention factor included, for the
    config's rope at served length ``seq_len`` (default ``n_positions``; drives dynamic NTK)."""
    inv_freq, attention_factor = rope_frequencies(config, seq_len=seq_len or n_positions)
    cos, sin = cos_sin_table(inv_freq, n_positions, attention_factor)
    return torch.from_numpy(cos), torch.from_numpy(sin)


def rotate(x, cos, sin):
    """NeoX RoPE on x (..., n, d) with cos/sin (n, r/2): pairs (i, i + r/2) turn, the tail
    (dims r..d-1) passes. Equal to ``lessonlib.rope.apply_rope(x, positions, inv_freq,
    attention_factor=af)`` when cos/sin are that rope's table rows for ``positions``."""
    h = cos.shape[-1]
    x1, x2, tail = x[..., :h], x[..., h:2 * h], x[..., 2 * h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, tail], dim=-1)


def mask_tensor(nq, nk, *, window=None, sink_tokens=0):
    """The causal (nq, nk) bool mask of ``lessonlib.attention.attention_mask`` as a tensor."""
    return torch.from_numpy(attention_mask(nq, nk, causal=True, window=window,
                                           sink_tokens=sink_tokens))


def check_tokens(tokens, vocab_size, name="tokens"):
    """``tokens`` if it is a (batch, n) integer tensor of ids in [0, vocab_size), n >= 1; else a
    ValueError naming the argument (an id out of range would otherwise index garbage or crash
    deep inside the embedding)."""
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
        d, self.hq, self.hkv, self.hd = c["hidden_size"], c["num_attention_heads"], \
            c["num_key_value_heads"], c["head_dim"]
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
        d, f, eps = c["hidden_size"], c["intermediate_size"], c["rms_norm_eps"]
        self.attn_norm, self.mlp_norm = RMSNorm(d, eps), RMSNorm(d, eps)
        self.attn = Attention(c)
        self.gate, self.up = nn.Linear(d, f, bias=False), nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def mlp(self, x):
        h = self.mlp_norm(x)
        return self.down(F.silu(self.gate(h)) * self.up(h))


class TinyLM(nn.Module):
    """The model. ``config`` is a config.json-style dict (``DEFAULT_CONFIG``); its rope fields
    are the model's own rope (the PI fine-tune stores ``rope_scaling`` linear 2 there)."""

    def __init__(self, config=None):
        super().__init__()
        self.config = copy.deepcopy(DEFAULT_CONFIG if config is None else config)
        c = self.config
        self.embed = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(Block(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
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
        B, n = check_tokens(tokens, self.config["vocab_size"]).shape
        cos, sin = rope_tables(self.config if rope is None else rope, n)
        causal = window is None
        mask = None if causal else mask_tensor(n, n, window=window, sink_tokens=sink_tokens)
        x = self.embed(tokens)
        weights = []
        for layer in self.layers:
            q, k, v = layer.attn.qkv(layer.attn_norm(x))
            o, p = layer.attn.attend(rotate(q, cos, sin), rotate(k, cos, sin), v, mask,
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
        if n_sink < 0 or (n_recent is not None and n_recent < 1):
            raise ValueError(f"need n_sink >= 0 and n_recent >= 1 or None, got {n_sink}, {n_recent}")
        self.n_sink, self.n_recent = n_sink, n_recent
        self.k = self.v = None
        self.positions = torch.zeros(0, dtype=torch.long)

    def append(self, k, v, position):
        """Add one token's k, v (B, hkv, 1, hd); evict the oldest non-sink entry if over."""
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
    if positions not in ("cache", "original"):
        raise ValueError(f"positions must be 'cache' or 'original', got {positions!r}")
    B, n = check_tokens(tokens, model.config["vocab_size"]).shape
    span = n if (n_recent is None or positions == "original") else min(n, n_sink + n_recent)
    cos, sin = rope_tables(model.config if rope is None else rope, span)
    caches = [StreamingKVCache(n_sink, n_recent) for _ in model.layers]
    out = []
    for t in range(n):
        x = model.embed(tokens[:, t:t + 1])  # (B, 1, d)
        for layer, cache in zip(model.layers, caches):
            q, k, v = layer.attn.qkv(layer.attn_norm(x))
            cache.append(k, v, t)
            pos = cache.positions if positions == "original" else torch.arange(cache.positions.numel())
            kr = rotate(cache.k, cos[pos], sin[pos])
            qr = rotate(q, cos[pos[-1:]], sin[pos[-1:]])
            o, _ = layer.attn.attend(qr, kr, cache.v)
            x = x + layer.attn.o_proj(o)
            x = x + layer.mlp(x)
        out.append(model.norm(x) @ model.embed.weight.T)
    return torch.cat(out, dim=1)


# ------------------------------------------------------------------------------------------
# Measurements
# ------------------------------------------------------------------------------------------

def token_losses(logits, tokens):
    """Per-position next-token cross-entropy (B, n - 1), nats: position t predicts t + 1."""
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")


def answer_accuracy(logits, tokens, answer_at):
    """Fraction of answers whose argmax prediction (from the position before) is right.
    ``answer_at``: (B, k) or (k,) indices into each row."""
    answer_at = torch.as_tensor(answer_at).reshape(tokens.shape[0], -1)
    pred = logits.argmax(-1).gather(1, answer_at - 1)
    return (pred == tokens.gather(1, answer_at)).float().mean().item()


def attention_to_first_tokens(weights, n_first=1, query_from=0):
    """(layers, hq) mean attention weight on keys 0..n_first-1, over queries at positions >=
    ``query_from`` and the batch, from ``forward(..., need_weights=True)``'s weights."""
    return torch.stack([w[:, :, query_from:, :n_first].sum(-1).mean(dim=(0, 2)) for w in weights])


class NeedleModel:
    """The tiny model in ``lessonlib.needles.run_needle_grid``'s model slot (with
    ``pass_prompt=True`` and ``tokenizer=kvtask.KVTokenizer()``): it reads the prompt's tokens,
    prepends <bos>, appends the question ("? pass:") and answers "pass: vNN" with its argmax
    next token. ``rope``: as in ``TinyLM.forward``."""

    def __init__(self, model, rope=None):
        from lessonlib.kvtask import BOS, KVTokenizer
        self.model, self.rope, self.tok, self.bos = model, rope, KVTokenizer(), BOS

    @torch.no_grad()
    def __call__(self, prompt):
        ids = [self.bos] + list(prompt.tokens) + self.tok.encode(prompt.question)
        logits = self.model(torch.tensor([ids]), rope=self.rope)
        return "pass: " + self.tok.decode([int(logits[0, -1].argmax())])


# ------------------------------------------------------------------------------------------
# Checkpoints
# ------------------------------------------------------------------------------------------

def data_path(name):
    """The path of a file committed in ``lessonlib/data`` (checkpoints and result files)."""
    from importlib import resources
    return resources.files("lessonlib").joinpath("data", name)


def save_tinylm(model, path, **extra):
    """Save config and weights, the weights as float16 (half the bytes; the model's own
    numbers are those of the float16 weights, which ``load_tinylm`` widens back to float32)."""
    state = {k: v.detach().to(torch.float16) for k, v in model.state_dict().items()}
    torch.save({"config": model.config, "state_dict": state, "dtype": "float16", **extra}, path)


def load_tinylm(name_or_path="tinylm.pt"):
    """A ``TinyLM`` in eval mode from ``lessonlib/data/<name>`` or a path."""
    from pathlib import Path
    path = Path(name_or_path)
    if not path.exists():
        path = data_path(str(name_or_path))
    blob = torch.load(path, map_location="cpu", weights_only=True)
    model = TinyLM(blob["config"])
    model.load_state_dict({k: v.to(torch.float32) for k, v in blob["state_dict"].items()})
    return model.eval()
