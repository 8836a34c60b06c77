"""Exercise checks for notebooks 07 (RoPE) and 08 (RoPE scaling).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. The expected
values come from ``lessonlib.rope``; the typical mistakes are recomputed here the wrong way so
that a hint can say which one was made.
"""
import math

import numpy as np

from .. import rope as R
from ..models import as_model
from ..models import rope as MR
from ..models.configs import load_config
from . import (FLOAT32_EPS, FLOAT32_RTOL, SIGNIFICANT_DIGITS, Unreadable, call, check_number,
               close_to, correct, distinct, shown, vector, wrong)
from ._preamble import preamble

__all__ = ["inv_freq", "rotate_pairs", "never_turning", "chunk_position", "product_rounding",
           "ntk_base", "yarn_inv_freq", "vllm_length", "yarn_band", "yarn_score_factor",
           "pi_overshoot", "QUESTIONS"]

# The fixed inputs of each exercise (the notebooks state them in the question).
QUESTIONS = {
    "inv_freq": dict(d=64, base=150_000.0),  # gpt-oss-20b's head (d = 64, rope_theta 150,000)
    "chunk_position": dict(prompt=20_000, chunk=8192, chunk_index=3, offset=100),
    "product_rounding": dict(n_positions=32_768),
    "never_turning": dict(config="Llama-3.1-8B", n_train=8192),  # its base, unscaled
    "ntk_base": dict(base=500_000.0, factor=8.0, d=128),
    "vllm_length": dict(config="Qwen2.5-7B-Instruct", rope_type="dynamic", factor=3.0),
    "yarn_band": dict(config="DeepSeek-V3"),
    "yarn_score_factor": dict(config="gpt-oss-20b"),
    "pi_overshoot": dict(d=128, base=10_000.0, n_train=4096, factor=8.0, position=32767,
                         pair=4),
}
"""Check name -> the fixed inputs of that exercise (the notebook states them in its
question)."""


def _theta(base, d, exponent):
    """base ** -(exponent(i) / d) over i = 0 .. d/2 - 1 (or as many entries as asked)."""
    return base ** (-np.asarray(exponent, dtype=np.float64) / d)


def _head(base, d):
    return R.rope_frequencies({"head_dim": d, "rope_theta": base})[0]


# ------------------------------------------------------------------ notebook 07

@preamble
def inv_freq(answer):
    """theta_i for gpt-oss-20b's head (d = 64, base 150,000): an array of d/2 = 32 numbers."""
    name = "inv_freq"
    q = QUESTIONS[name]
    d, b = q["d"], q["base"]
    expected = _head(b, d)
    a = vector(answer, what=f"an array of {d // 2} numbers")
    if close_to(a, expected, rtol=FLOAT32_RTOL):
        return correct(name, f"Correct: {d // 2} pairs, from {expected[0]:g} rad per position "
                             f"(pair 0) down to {expected[-1]:.4e} (pair {d // 2 - 1}).")
    i = np.arange(d // 2)
    if a.size == d:
        return wrong(name, f"That has {d} entries, one per dimension. RoPE rotates pairs of "
                           f"dimensions: d = {d} gives d/2 = {d // 2} pairs, i = 0 .. "
                           f"{d // 2 - 1}, with theta_i = base^(-2i/d).")
    mistakes = [
        (_theta(b, d, i), "The exponent is 2i/d, not i/d: the pairs' exponents run 0, 2/d, "
                          "4/d, ... up to (d-2)/d, so the last pair turns at base^(-(d-2)/d)."),
        (_theta(b, d, -2 * i), "Upside down: theta_i = base^(-2i/d) is at most 1. Pair 0 turns "
                               "fastest, 1 rad per position; the last pair slowest."),
        (2 * np.pi / expected, "Those are the wavelengths 2 pi / theta_i (positions per turn); "
                               "the question asks for theta_i itself (radians per position)."),
        (_theta(b, d // 2, 2 * i), "Divide the exponent by d (the head dimension), not by the "
                                   "number of pairs d/2: theta_i = base^(-2i/d)."),
        (_theta(b, d, 2 * (i + 1)), "Start at i = 0: pair 0 has theta = base^0 = 1 rad per "
                                    "position."),
        (_theta(b, d, 2 * i) / (2 * np.pi), "That is in turns per position; theta_i is in "
                                            "radians per position (no 2 pi)."),
    ]
    for candidate, hint in mistakes:
        if close_to(a, candidate, rtol=FLOAT32_RTOL):
            return wrong(name, hint)
    if a.size != d // 2:
        return wrong(name, f"Give {d // 2} numbers (one per pair), got {a.size}.")
    bad = int(np.flatnonzero(~np.isclose(a, expected, rtol=FLOAT32_RTOL, atol=0.0))[0])
    got_text, want_text = distinct(a[bad], expected[bad], digits=7)
    return wrong(name, f"Pair {bad} is off: expected {want_text}, got {got_text}. "
                       "theta_i = base^(-2i/d) for i = 0 .. d/2 - 1.")


def _rotation_atol(x, m, theta):
    """How far a right rotation computed in float32 may land from the float64 one: the angle
    m theta carries a rounding error of a few units of 2**-23 relative to itself, so the
    tolerance grows with the position (16 units: the float32 error measured is under 1)."""
    return 16 * FLOAT32_EPS * (1.0 + abs(m) * float(np.max(theta))) * float(np.max(np.abs(x)))


# ------------------------------------------------------------------ rotation in both layouts

# (pairs h, tail dims, base, positions): the worked NeoX head's size, one pair, odd numbers of
# pairs, partial rotary (a tail that passes unchanged, even and odd), long positions.
_ROTATE_SHAPES = [
    (4, 0, 10_000.0, (0, 1, 5, 100, 16383)),  # d = 8, the whole head turns
    (1, 0, 10_000.0, (0, 3, 4095)),  # one pair: both layouts are the same
    (3, 0, 500_000.0, (1, 7, 131071)),  # an odd number of pairs
    (5, 3, 150_000.0, (2, 9, 8191)),  # partial rotary with an odd tail
    (8, 16, 10_000.0, (1, 33, 65535)),  # half the head turns (partial_rotary_factor 0.5)
    (64, 0, 500_000.0, (0, 4096, 131071)),  # a full 128-dim head
    (16, 32, 10_000.0, (7, 1000)),  # a 64-dim head with 32 rotary dims
]


def _rotate_cases():
    """((x, m, theta, layout), ...) on every shape, in both layouts (seeded: every run tries the
    same ones)."""
    rng = np.random.default_rng(707)
    cases = []
    for h, tail, base, positions in _ROTATE_SHAPES:
        theta = _head(base, 2 * h)
        for layout in ("neox", "gptj"):
            x = rng.standard_normal(2 * h + tail)
            cases += [(x, m, theta, layout) for m in positions]
    return cases


def _rotated(x, m, theta, layout, sign=1.0, half=None):
    """The rotation (lessonlib's apply_rope) of one head, or a slip of it: ``sign`` -1 turns
    backwards; ``half`` pairs (i, i + half) in place of (i, i + len(theta))."""
    x = np.asarray(x, dtype=np.float64)
    if half is None:
        return R.apply_rope(x[None], [sign * m], theta, style=layout)[0]
    h = len(theta)
    if 2 * half > x.size or half < h:
        return np.full_like(x, np.nan)
    c, s = np.cos(sign * m * theta), np.sin(sign * m * theta)
    out = x.copy()
    x1, x2 = x[:h], x[half:half + h]
    out[:h], out[half:half + h] = x1 * c - x2 * s, x2 * c + x1 * s
    return out


def _rotate_probes():
    return [case for case in _rotate_cases()[:3]]


def _rotation_slips(case):
    """{slip: what that slip returns on one case}."""
    x, m, theta, layout = case
    other = "gptj" if layout == "neox" else "neox"
    h = len(theta)
    r = 2 * h
    swapped_tail = np.concatenate([_rotated(x[:r], m, theta, layout), np.zeros(x.size - r)])
    return {
        "layouts swapped": _rotated(x, m, theta, other),
        "always neox": _rotated(x, m, theta, "neox"),
        "always gptj": _rotated(x, m, theta, "gptj"),
        "backwards": _rotated(x, m, theta, layout, -1.0),
        "half of x": (_rotated(x, m, theta, layout, half=x.size // 2) if layout == "neox"
                      else _rotated(x, m, theta, layout)),
        "tail zeroed": swapped_tail,
    }


_ROTATION_HINTS = {
    "layouts swapped": "The two layouts are swapped: 'neox' pairs dimension i with i + half "
                       "(x[:half] with x[half:2 * half], half = len(theta)), 'gptj' pairs 2i "
                       "with 2i + 1 (x[0:2 * half:2] with x[1:2 * half:2]).",
    "always neox": "Right for 'neox', but 'gptj' gets the NeoX pairing too: in the GPT-J layout "
                   "pair i is (x[2i], x[2i + 1]), adjacent dimensions.",
    "always gptj": "Right for 'gptj', but 'neox' gets the GPT-J pairing too: in the NeoX layout "
                   "pair i is (x[i], x[i + half]) with half = len(theta).",
    "backwards": "The pairs turn backwards (angle -m theta_i): the first of a pair becomes "
                 "x1 cos - x2 sin, the second x2 cos + x1 sin.",
    "half of x": "Right when the whole head turns, wrong with a tail (partial rotary): the NeoX "
                 "partner of dimension i is i + half with half = len(theta), not i + len(x)/2; "
                 "only the first 2 * half dimensions turn.",
    "tail zeroed": "The rotated dimensions are right, but the tail is lost: with partial rotary "
                   "only the first 2 len(theta) dimensions turn, and the rest of x passes "
                   "through unchanged.",
}


@preamble(function="Give a function rotate(x, m, theta, layout), got {type}.",
          probes=_rotate_probes)
def rotate_pairs(answer):
    """A function ``rotate(x, m, theta, layout)``: x (any length >= 2 len(theta)) turned by
    one integer position m, pair i by the angle m theta[i]; ``layout`` "neox" pairs (i, i + half),
    "gptj" pairs (2i, 2i + 1), half = len(theta); the dims past 2 half pass unchanged (partial
    rotary). Tried on both layouts, one pair, odd numbers of pairs, tails even and odd,
    positions to 131,071, against ``lessonlib.rope.apply_rope``. A rotation computed in float32 passes."""
    name = "rotate_pairs"
    cases, got = _rotate_cases(), []
    for x, m, theta, layout in cases:
        where = f"rotate(x, {m}, theta, {layout!r}) with len(x) = {x.size}, len(theta) = {theta.size}"
        result, error = call(answer, x, m, theta, layout, label=where)
        if error:
            return wrong(name, error)
        try:
            out = vector(result, what=f"an array shaped like x", finite=False, flatten=False)
        except Unreadable as why:
            return wrong(name, f"{where} returned {type(result).__name__}: {why}")
        if out.shape != x.shape:
            tail = (" With partial rotary, x is longer than 2 len(theta): its tail passes "
                    "through unchanged." if x.size > 2 * theta.size else "")
            return wrong(name, f"{where}: rotate must return an array shaped like x {x.shape}, "
                               f"got {out.shape}.{tail}")
        got.append(out)

    def same(out, want, case):
        x, m, theta, _ = case
        with np.errstate(all="ignore"):
            return bool(np.all(np.abs(out - want) <= _rotation_atol(x, m, theta)
                               + FLOAT32_RTOL * np.abs(want)))

    ok = [same(g, _rotated(*c), c) for g, c in zip(got, cases)]
    if all(ok):
        return correct(name, f"Correct on {len(cases)} cases: both layouts, one pair, odd "
                             "numbers of pairs, partial rotary with a tail, positions up to "
                             "131,071; every pair keeps its length.")
    slips = [_rotation_slips(c) for c in cases]
    for slip, hint in _ROTATION_HINTS.items():
        if all(same(g, s[slip], c) for g, s, c in zip(got, slips, cases)):
            return wrong(name, hint)
    for layout in ("neox", "gptj"):
        if all(good for good, c in zip(ok, cases) if c[3] == layout):
            other = "gptj" if layout == "neox" else "neox"
            return wrong(name, f"Right for {layout!r}, wrong for {other!r}: "
                               + ("pair i is (x[2i], x[2i + 1])." if other == "gptj" else
                                  "pair i is (x[i], x[i + h]), h = len(theta)."))
    with np.errstate(all="ignore"):
        kept = all(np.isclose(np.linalg.norm(g), np.linalg.norm(c[0]), rtol=FLOAT32_RTOL)
                   for g, c in zip(got, cases))
    bad = ok.index(False)
    x, m, theta, layout = cases[bad]
    where = f"rotate(x, {m}, theta, {layout!r}) with len(x) = {x.size}, len(theta) = {theta.size}"
    if not kept:
        return wrong(name, f"{where}: the vector's length changed, so this is not a rotation. "
                           "Compute both members of a pair from the old values (overwriting x1 "
                           "before computing x2 is the usual slip), with the same angle in cos "
                           "and sin.")
    return wrong(name, f"{where} is not the rotation: pair i = (x1, x2) becomes (x1 cos - x2 sin, "
                       f"x2 cos + x1 sin) with the angle m theta[i]; 'neox' pairs (i, i + h), "
                       f"'gptj' (2i, 2i + 1), and dims past 2h pass unchanged.")


@preamble
def never_turning(answer):
    """How many of Llama-3.1-8B's pairs (its base, d = 128, no scaling) never complete one turn
    within its 8,192 trained positions?"""
    name = "never_turning"
    q = QUESTIONS[name]
    cfg = load_config(q["config"])
    sp = R.scaling_parameters(cfg)
    d, b, n = sp.rotary_dim, sp.base, q["n_train"]
    theta = _head(b, d)
    expected = R.pairs_never_turning(theta, n).size
    i = np.arange(d)
    mistakes = [
        (d // 2 - expected, f"That counts the pairs that DO turn. A pair never turns when its "
                            f"wavelength 2 pi / theta_i exceeds {n:,} positions."),
        (R.pairs_never_turning(_head(10_000.0, d), n).size,
         "That is base 10,000 (the RoPE paper's). Llama 3 uses rope_theta = 500,000 from its "
         "config.json, which slows every pair."),
        (R.pairs_never_turning(theta, MR.max_position_embeddings(cfg)).size,
         f"That uses max_position_embeddings = {MR.max_position_embeddings(cfg):,}, the extended "
         f"length; the model was trained on {n:,} positions before scaling."),
        (int(np.sum(2 * np.pi / _theta(b, d, 2 * i) > n)),
         f"You counted over d = {d} entries; there are d/2 = {d // 2} pairs."),
        (int(np.sum(2 * np.pi / _theta(b, d, i) > n)),
         f"You counted {d} entries of base^(-i/d); there are d/2 = {d // 2} pairs with "
         "theta_i = base^(-2i/d)."),
    ]
    # Two slips give the same count for this model: 4,096 positions (the worked head's trained
    # length) and the llama3-scaled frequencies. The hint names whichever can be the cause.
    half = R.pairs_never_turning(theta, n // 2).size
    scaled = R.pairs_never_turning(R.rope_frequencies(cfg)[0], n).size
    over_half = (f"That counts over {n // 2:,} positions (the worked head's trained length); "
                 f"this model was trained on {n:,}.")
    over_scaled = ("That uses the llama3-scaled frequencies; the question asks about the base "
                   "RoPE the model was trained with (before the 8x extension).")
    if half == scaled:
        mistakes.append((half, f"That is the count over {n // 2:,} positions (the worked head's "
                               f"trained length), and also the count with the llama3-scaled "
                               f"frequencies; the question asks for base RoPE (rope_theta "
                               f"{b:,.0f}, no scaling) over the {n:,} trained positions."))
    else:
        mistakes += [(half, over_half), (scaled, over_scaled)]
    return check_number(name, answer, expected, mistakes, integer=True, fmt=".0f",
                         unit="pairs",
                         generic=f"Count the pairs whose wavelength 2 pi / theta_i is longer "
                                 f"than {n:,} positions.")


@preamble
def chunk_position(answer):
    """A 20,000-token prompt prefilled in chunks of 8,192: the RoPE position of the token at
    offset 100 of the third chunk (tokens already in the cache + offset)."""
    name = "chunk_position"
    q = QUESTIONS[name]
    c, k, off = q["chunk"], q["chunk_index"], q["offset"]
    expected = (k - 1) * c + off
    mistakes = [
        (k * c + off, f"The third chunk comes after two full chunks: {k - 1} x {c:,} tokens are "
                      f"in the cache when it starts, not {k} x {c:,}."),
        (off, "That is the offset inside the chunk alone: the position also counts every token "
              "of this request already in the KV cache (the earlier chunks)."),
        ((k - 1) * c + off + 1, "Positions and offsets count from 0: the chunk's first token has "
                                "offset 0, and the first token of the prompt position 0."),
        ((k - 1) * c + off - 1, "Positions and offsets count from 0, and the token at offset "
                                f"{off} has {off} tokens before it in its chunk."),
        ((k - 1) * (c - 1) + off, f"Every full chunk holds {c:,} tokens, positions 0 to "
                                  f"{c - 1:,} for the first."),
    ]
    return check_number(name, answer, expected, mistakes, integer=True, fmt=",.0f",
                        generic="position = tokens of this request already in the cache + the "
                                "offset inside the current chunk.")


def _float32_gap(x):
    """The distance between float32 numbers just below ``x`` (a power of two)."""
    return float(np.spacing(np.float32(x) / np.float32(2)))


@preamble
def product_rounding(answer):
    """A 32,768-position table forms m theta_i in float32 (theta_i <= 1): at most how many
    radians can rounding the product cost (theta_i's own rounding aside)? Half the float32 gap
    below 2^15; 3 significant digits."""
    name = "product_rounding"
    n = QUESTIONS[name]["n_positions"]
    k = int(math.log2(n))
    gap = _float32_gap(n)  # every angle is below n = 2^k: float32's gap in [2^(k-1), 2^k)
    expected = gap / 2  # rounding to the nearest float32 costs at most half the gap
    mistakes = [
        (gap, f"{gap:g} rad is the gap between float32 numbers just below 2^{k}; rounding to "
              "the nearest one costs at most half of it."),
        (_float32_gap(4 * n) / 2, "That is the worked table's 1/256 (131,072 positions, angles up "
                                  f"to 2^17); here every angle is below {n:,} = 2^{k}, and the "
                                  "gap halves with each power of two further down."),
        (_float32_gap(2 * n) / 2, f"That is half the gap in [2^{k}, 2^{k + 1}); here every angle "
                                  f"is below {n:,} = 2^{k}."),
        (gap / 4, f"That is half the gap one power of two lower; the largest angles, just below "
                  f"2^{k}, sit in [2^{k - 1}, 2^{k})."),
        (FLOAT32_EPS, f"2^-23 is float32's gap at 1 (a relative precision); an angle near {n - 1:,} "
                      f"rad is 2^{k - 1} times larger, and so is its gap."),
        (expected * 180 / math.pi, "That is in degrees; the question asks for radians."),
    ]
    return check_number(name, answer, expected, mistakes, digits=SIGNIFICANT_DIGITS, unit="rad",
                        fmt=".4g", generic=f"Find the float32 gap just below 2^{k} (the largest "
                                           "angle), and take half of it.")


# ------------------------------------------------------------------ notebook 08

_NTK_EXAMPLE_BASE, _NTK_EXAMPLE_S = 10_000.0, 4.0  # notebook 08's worked NTK number (40,889.9)


@preamble
def ntk_base(answer):
    """The NTK-aware base for base 500,000, d = 128, s = 8 (Llama-3.1's head, if it used NTK)."""
    q = QUESTIONS["ntk_base"]
    b, s, d = q["base"], q["factor"], q["d"]
    expected = R.ntk_base(b, s, d)
    mistakes = [
        (b * s, "That is base * s: you forgot the exponent d/(d-2). Without it the last pair "
                "is slowed by s^((d-2)/d), a little less than s."),
        (b * s ** ((d - 2) / d), "The exponent is upside down: base' = base * s^(d/(d-2)), so "
                                 "that the last pair (2i = d - 2) is slowed by exactly s."),
        (b * s ** ((d // 2) / (d // 2 - 2)), f"Use the head dimension d = {d} in the exponent, "
                                             f"not the number of pairs {d // 2}."),
        (b / s, "The base must grow (slower pairs), not shrink: base' = base * s^(d/(d-2))."),
        (b * s ** 2, "The exponent is d/(d-2), just above 1, not 2."),
        # the worked example of the notebook uses base 10,000 and s = 4 on the same d = 128
        (_NTK_EXAMPLE_BASE * s ** (d / (d - 2)),
         f"That uses base {_NTK_EXAMPLE_BASE:,.0f}, the worked example's; Llama 3.1's "
         f"rope_theta is {b:,.0f}."),
        (b * _NTK_EXAMPLE_S ** (d / (d - 2)),
         f"That uses s = {_NTK_EXAMPLE_S:g}, the worked example's factor; the question's "
         f"s is {s:g}."),
        (_NTK_EXAMPLE_BASE * _NTK_EXAMPLE_S ** (d / (d - 2)),
         f"That is the worked example's base' (base {_NTK_EXAMPLE_BASE:,.0f}, s = "
         f"{_NTK_EXAMPLE_S:g}); redo it with base {b:,.0f} and s = {s:g}."),
        ((b * s) ** (d / (d - 2)), "The exponent applies to s alone: base * s^(d/(d-2)), not "
                                   "(base * s)^(d/(d-2))."),
        (b * s ** d / (d - 2), "Mind the parentheses: s ** d / (d - 2) is s^d divided by d - 2; "
                               "write s ** (d / (d - 2))."),
        (s ** (d / (d - 2)), "That is the factor s^(d/(d-2)) alone: multiply the base by it."),
    ]
    return check_number("ntk_base", answer, expected, mistakes, digits=SIGNIFICANT_DIGITS,
                        fmt=",.1f", generic="base' = base * s^(d/(d-2)).")


# ------------------------------------------------------------------ YaRN's table, built

def _yarn_block(factor, L0, betas=None, truncate=None):
    """The rope_scaling block of ``_yarn_config``."""
    scaling = {"rope_type": "yarn", "factor": float(factor),
               "original_max_position_embeddings": int(L0)}
    if betas is not None:
        scaling["beta_fast"], scaling["beta_slow"] = (float(b) for b in betas)
    if truncate is not None:
        scaling["truncate"] = bool(truncate)
    return scaling


def _yarn_config(head_dim, base, factor, L0, prf=None, betas=None, truncate=None):
    """A config.json dict with a YaRN block (and max_position_embeddings = factor x L0, as
    shipped YaRN configs have it: not the L0 YaRN reads)."""
    config = {"head_dim": int(head_dim), "rope_theta": float(base),
              "max_position_embeddings": int(factor * L0),
              "rope_scaling": _yarn_block(factor, L0, betas, truncate)}
    if prf is not None:
        config["partial_rotary_factor"] = float(prf)
    return config


# The worked head, Qwen2.5's and gpt-oss's shapes, partial rotary, betas given, the extremes
# of the factor and the base.
_YARN_EDGES = [
    (128, 10_000.0, 4, 4096, None, None, None),  # notebook 08's worked head: band (20, 46)
    (128, 1_000_000.0, 4, 32768, None, None, None),  # Qwen2.5-7B with its card's block
    (64, 150_000.0, 32, 4096, None, (32, 1), False),  # gpt-oss-20b: band edges not rounded
    (128, 10_000.0, 16, 2048, 0.5, None, None),  # partial rotary: 64 of 128 dims turn
    (96, 500_000.0, 8, 8192, None, (16, 2), True),  # betas given in the config
    (256, 10_000.0, 64, 4096, 0.25, None, None),  # factor 64, 64 of 256 dims turn
    (80, 1_000_000.0, 2, 8192, 0.75, (64, 1), False),  # 60 rotary dims, raw edges
]


def _yarn_cases():
    """[config, ...]: ``_yarn_config`` of each of ``_yarn_shapes``."""
    return [_yarn_config(*shape) for shape in _yarn_shapes()]


def _yarn_shapes():
    """[(head_dim, base, factor, L0, prf, betas, truncate), ...]: the edges, then seeded random
    shapes (factors 2-64, bases 1e4-1e6, head dims 64-256, partial rotary, betas and truncate
    sometimes given), each one whose config lessonlib reads (a config whose band is empty is an
    error there, and is not asked)."""
    rng = np.random.default_rng(808)
    shapes = list(_YARN_EDGES)
    while len(shapes) < 30:
        betas = [None, None, (32, 1), (16, 1), (64, 2)][rng.integers(5)]
        shapes.append((int(rng.choice([64, 80, 96, 128, 256])),
                       float(10 ** rng.uniform(4, 6)), float(rng.choice([2, 3, 4, 8, 16, 32, 40, 64])),
                       int(rng.choice([2048, 4096, 8192, 32768])),
                       [None, None, 0.5, 0.25, 0.75][rng.integers(5)], betas,
                       [None, None, True, False][rng.integers(4)]))
    cases = []
    for shape in shapes:
        try:
            R.rope_frequencies(_yarn_config(*shape))
        except ValueError:
            continue
        cases.append(shape)
    return cases


# The slip of taking L0 from another length key: its reader
_L0_FROM = {"max_position_embeddings": MR.max_position_embeddings}


def _yarn_table(config, *, reverse=False, rounding="right", use_head_dim=False, L0_key=None,
                default_betas=False, swap_betas=False, factor_mode="divide", mu=False):
    """YaRN's per-pair speeds for ``config``, right or with one slip (the keyword named)."""
    sp = R.scaling_parameters(config)
    r = R.rotary_dim({**config, "partial_rotary_factor": 1.0}) if use_head_dim else sp.rotary_dim
    b, s = sp.base, sp.factor
    L0 = _L0_FROM[L0_key](config) if L0_key else sp.original_max
    fast, slow = (32.0, 1.0) if default_betas else (sp.beta_fast, sp.beta_slow)
    if swap_betas:
        fast, slow = slow, fast
    low, high = (R.yarn_correction_dim(fast, r, b, L0), R.yarn_correction_dim(slow, r, b, L0))
    truncate = {"right": sp.truncate, "never": False, "always": True}.get(rounding, True)
    if rounding == "inward":
        low, high = math.ceil(low), math.floor(high)
    elif truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, r - 1)
    if low == high:
        high += 0.001
    n = sp.rotary_dim // 2
    theta = _theta(b, r, np.arange(0, 2 * n, 2))
    keep = 1.0 - np.clip((np.arange(n) - low) / (high - low), 0.0, 1.0)
    if reverse:
        keep = 1.0 - keep
    slow_speed = {"divide": theta / s, "multiply": theta * s, "none": theta}[factor_mode]
    out = theta * keep + slow_speed * (1.0 - keep)
    return out * sp.attention_factor if mu else out


_YARN_SLIPS = [
    (dict(reverse=True), "The ramp runs the wrong way: the fast pairs (small i, at least "
                         "beta_fast turns in L0) keep their speed and the slow ones (past high) "
                         "are divided by s; you interpolated the fast end. Keep = 1 below low, "
                         "0 above high."),
    (dict(factor_mode="none"), "The factor is missing: pairs past high are divided by s "
                               "(rope_scaling.factor), and the ramp blends theta with theta / s."),
    (dict(factor_mode="multiply"), "The slow pairs must slow down: theta / s, not theta x s."),
    (dict(rounding="never"), "Right with truncate: false, wrong otherwise: by default (truncate "
                             "missing or true) YaRN floors low and ceils high to whole pair "
                             "indices before the ramp."),
    (dict(rounding="always"), "Right by default, wrong with truncate: false: then the band's "
                              "edges stay unrounded (gpt-oss ships it so)."),
    (dict(rounding="inward"), "Round outward: low = floor(i(beta_fast)), high = "
                              "ceil(i(beta_slow)), so the ramp covers the whole band."),
    (dict(swap_betas=True), "beta_fast and beta_slow are swapped: low comes from beta_fast (the "
                            "fast pairs, small index), high from beta_slow."),
    (dict(default_betas=True), "Read beta_fast and beta_slow from rope_scaling when it gives them "
                               "(32 and 1 only when it does not)."),
    (dict(L0_key="max_position_embeddings"),
     "L0 is rope_scaling.original_max_position_embeddings, the trained length; "
     "max_position_embeddings is the extended one."),
    (dict(use_head_dim=True), "Right with the whole head turning, wrong with partial rotary: "
                              "only r = int(head_dim x partial_rotary_factor) dims turn, and r, "
                              "not head_dim, goes into theta_i = b^(-2i/r) and into i(n)."),
    (dict(mu=True), "The attention factor mu multiplies cos and sin (and so the scores), not the "
                    "speeds: leave it out of the table."),
]


def _yarn_probes():
    return [(config,) for config in _yarn_cases()[:3]]


@preamble(function="Give a function yarn_inv_freq(config) that returns the speeds, got {type}.",
          probes=_yarn_probes)
def yarn_inv_freq(answer):
    """A function ``yarn_inv_freq(config)`` that returns YaRN's per-pair speeds (r/2 of them) for
    a config.json dict (head_dim, rope_theta, partial_rotary_factor when not 1, and a
    rope_scaling block: factor, original_max_position_embeddings, beta_fast, beta_slow and
    truncate when given). Tried on 30 seeded configs (factors 2-64, bases 1e4-1e6, head dims
    64-256, partial rotary, raw and rounded band edges) against ``lessonlib.rope`` (itself
    tested against HuggingFace's _compute_yarn_parameters); hints name a reversed ramp, a
    missing or multiplied factor, band edges not floored/ceiled (or rounded when truncate is
    false, or inward), swapped or default betas, max_position_embeddings as L0, head_dim for
    the rotary dim, mu in the table."""
    name = "yarn_inv_freq"
    shapes, got = _yarn_shapes(), []
    cases = [_yarn_config(*shape) for shape in shapes]
    for config, head_dim in zip(cases, (shape[0] for shape in shapes)):
        sp = R.scaling_parameters(config)
        n = sp.rotary_dim // 2
        where = (f"yarn_inv_freq(config) with head_dim {head_dim}, rotary dim "
                 f"{sp.rotary_dim}, base {sp.base:,.0f}, factor {sp.factor:g}, L0 "
                 f"{sp.original_max:,}")
        result, error = call(answer, config, label=where)
        if error:
            return wrong(name, error)
        try:
            out = vector(result, what=f"{n} numbers, one per rotated pair", finite=False)
        except Unreadable as why:
            return wrong(name, f"{where}: {why}")
        if out.size != n:
            partial = (f" Only r = int(head_dim x partial_rotary_factor) = {sp.rotary_dim} dims "
                       "turn." if sp.rotary_dim != head_dim else "")
            return wrong(name, f"{where} returned {out.size} numbers; it needs r/2 = {n}, one "
                               f"per rotated pair.{partial}")
        got.append(out)
    want = [R.rope_frequencies(c)[0] for c in cases]
    ok = [close_to(g, w, rtol=FLOAT32_RTOL) for g, w in zip(got, want)]
    if all(ok):
        return correct(name, f"Correct on {len(cases)} configs: the band from i(beta_fast) and "
                             "i(beta_slow) (rounded outward unless truncate is false), the ramp "
                             "from kept to theta / s, partial rotary included.")
    for slip, hint in _YARN_SLIPS:
        if all(close_to(g, _yarn_table(c, **slip), rtol=FLOAT32_RTOL)
               for g, c in zip(got, cases)):
            return wrong(name, hint)
    if all(close_to(g, R.rope_frequencies({**c, "rope_scaling": {"rope_type": "linear",
               "factor": float(shape[2])}})[0], rtol=FLOAT32_RTOL)
           for g, c, shape in zip(got, cases, shapes)):
        return wrong(name, "Every pair is divided by s: that is PI. YaRN keeps the fast pairs "
                           "(below low), divides only the slow ones (above high) and ramps "
                           "between.")
    bad = ok.index(False)
    head_dim, _, factor, L0, prf, betas, truncate = shapes[bad]
    g, w = got[bad], want[bad]
    sp = R.scaling_parameters(cases[bad])
    j = int(np.flatnonzero(~np.isclose(g, w, rtol=FLOAT32_RTOL, atol=0.0))[0])
    got_text, want_text = distinct(g[j], w[j], digits=7)
    return wrong(name, f"With head_dim {head_dim}, rope_scaling "
                       f"{_yarn_block(factor, L0, betas, truncate)}" + (f", partial_rotary_factor "
                       f"{float(prf):g}" if prf is not None else "")
                       + f" (band {tuple(round(v, 3) for v in sp.yarn_band)}): "
                       f"pair {j} should turn {want_text} rad per position, got {got_text}.")


@preamble
def vllm_length(answer):
    """Qwen2.5-7B-Instruct's published config.json with a dynamic NTK block (factor 3) added:
    how many positions does vLLM 0.32 serve when no --max-model-len is given?"""
    name = "vllm_length"
    q = QUESTIONS[name]
    published = {k: v for k, v in load_config(q["config"]).items()
                 if k not in ("rope_scaling", "_source")}
    config = {**published, "rope_scaling": {"rope_type": q["rope_type"], "factor": q["factor"]}}
    expected = R.vllm_max_model_len(config)
    n = R.vllm_max_model_len(published)
    mistakes = [
        (n, f"That is max_position_embeddings ({n:,}) unchanged, as vLLM reads a YaRN, llama3 or "
            "longrope config; for linear and dynamic scaling it multiplies it by the factor."),
        (n / q["factor"], "vLLM multiplies by the factor for dynamic scaling; it never divides."),
        (n * q["factor"] ** 2, "One factor: max_position_embeddings x factor."),
    ]
    return check_number(name, answer, expected, mistakes, integer=True, fmt=",.0f",
                        unit="positions",
                        generic="vLLM multiplies max_position_embeddings by rope_scaling.factor "
                                "for linear and dynamic scaling only.")


@preamble
def yarn_band(answer):
    """YaRN's (low, high) for DeepSeek-V3's config (beta_fast 32, beta_slow 1, truncated)."""
    name = "yarn_band"
    cfg = load_config(QUESTIONS[name]["config"])
    sp = R.scaling_parameters(cfg)
    r, b, L0, fast, slow = sp.rotary_dim, sp.base, sp.original_max, sp.beta_fast, sp.beta_slow
    expected = sp.yarn_band  # yarn_correction_range(fast, slow, r, b, L0), truncated
    a = list(vector(answer, what="two numbers (low, high)", size=2))
    if a == list(expected):
        return correct(name, f"Correct: {tuple(expected)}. DeepSeek rotates only its "
                             f"qk_rope_head_dim = {r} dims, so its band sits at lower pair "
                             "indices than a 128-dim head's.")
    raw = (R.yarn_correction_dim(fast, r, b, L0), R.yarn_correction_dim(slow, r, b, L0))
    swapped_raw = (R.yarn_correction_dim(slow, r, b, L0), R.yarn_correction_dim(fast, r, b, L0))
    checks = [
        ({tuple(expected[::-1]), (math.floor(swapped_raw[0]), math.ceil(swapped_raw[1]))},
         "beta_fast and beta_slow are swapped. low comes from beta_fast = 32 (32 turns in L0: "
         "fast pairs, small index), high from beta_slow = 1 (one turn: slow pairs)."),
        ({raw}, "Right place, but YaRN (HF's default truncate = true) floors low and ceils "
                "high to whole pair indices."),
        ({(math.ceil(raw[0]), math.floor(raw[1])), (round(raw[0]), round(raw[1]))},
         "Round outward: low = floor(...), high = ceil(...), so the ramp covers the whole band."),
        ({R.yarn_correction_range(fast, slow, 128, b, L0),
          R.yarn_correction_range(fast, slow, as_model(cfg).shape.head_dim, b, L0)},
         f"DeepSeek's rotary dim is qk_rope_head_dim = {r}: only that slice of each head turns "
         "(the qk_nope part carries no position)."),
        ({R.yarn_correction_range(fast, slow, r, b, MR.max_position_embeddings(cfg))},
         f"L0 is original_max_position_embeddings = {L0:,}, the trained length, not "
         f"max_position_embeddings = {MR.max_position_embeddings(cfg):,}."),
        ({R.yarn_correction_range(fast, slow, r // 2, b, L0)},
         f"The formula takes the rotary dim r = {r}, not the number of pairs {r // 2}."),
    ]
    for candidates, hint in checks:
        if any(np.allclose(a, c, atol=1e-6) for c in candidates):
            return wrong(name, hint)
    if any(x != round(x) for x in a):
        return wrong(name, f"Not ({shown(a[0])}, {shown(a[1])}): low and high are whole pair "
                           f"indices. low = floor(r ln(L0 / (2 pi beta_fast)) / (2 ln b)), "
                           f"high = ceil(the same with beta_slow).")
    return wrong(name, f"Not ({shown(a[0])}, {shown(a[1])}). low = floor(r ln(L0 / (2 pi "
                       f"beta_fast)) / (2 ln b)), high = ceil(the same with beta_slow).")


@preamble
def yarn_score_factor(answer):
    """By what factor does YaRN multiply the rotary part of a q.k score at gpt-oss-20b's factor?"""
    cfg = load_config(QUESTIONS["yarn_score_factor"]["config"])
    sp = R.scaling_parameters(cfg)
    s, mu = sp.factor, sp.attention_factor
    expected = R.rotary_score_scale(mu)
    mistakes = [
        (mu, "That is mu itself. It multiplies cos and sin, so it reaches both q and k: the score "
             "carries mu squared. Applying mu once to the scores instead of to q and k "
             "undershoots."),
        ((0.1 * math.log10(s) + 1) ** 2, "YaRN's mu uses the natural log: 0.1 ln(s) + 1."),
        ((0.1 * math.log2(s) + 1) ** 2, "YaRN's mu uses the natural log, not log2."),
        (0.1 * math.log10(s) + 1, "Natural log, and squared: (0.1 ln(s) + 1)^2."),
        (math.sqrt(mu), "Squared, not square-rooted: q and k each carry one mu."),
        (1.0 / expected, "The scores grow (a sharper softmax), they do not shrink."),
    ]
    return check_number("yarn_score_factor", answer, expected, mistakes,
                        digits=SIGNIFICANT_DIGITS, fmt=".4f",
                        generic="mu = 0.1 ln(s) + 1 on cos and sin; q.k carries it twice.")


_PI_EXAMPLE_OVER = 16383 / 4 - 4095  # notebook 08's PI table: 0.75 positions past 4,095


@preamble
def pi_overshoot(answer):
    """PI at s = 8 (4,096 trained positions served to 32,768): how many radians past its trained
    maximum does pair 4's angle at position 32,767 land?"""
    q = QUESTIONS["pi_overshoot"]
    theta = _head(q["base"], q["d"])
    pi = R.rope_frequencies({"head_dim": q["d"], "rope_theta": q["base"],
                             "rope_scaling": {"rope_type": "linear", "factor": q["factor"]}})[0]
    i, n, m, s = q["pair"], q["n_train"], q["position"], q["factor"]
    expected = float(R.angle_at(pi, m)[i] - R.largest_trained_angle(theta, n)[i])
    mistakes = [
        (0.0, f"PI does not keep every angle inside: {m:,} / {s:g} = {m / s:,.2f} is past the "
              f"last trained position {n - 1:,}, by 1 - 1/s positions."),
        (pi[i], f"{pi[i]:.4f} rad is pair {i}'s new step between neighbouring tokens (theta / s), "
                "not how far the last position lands past the trained maximum."),
        ((m - s * (n - 1)) * theta[i], "Compare angles after dividing the position by s: "
                                       "(m / s) * theta_i against (L0 - 1) * theta_i."),
        (m - s * (n - 1), "That is in positions, and before dividing by s: compare angles, "
                          "(m / s) * theta_i against (L0 - 1) * theta_i."),
        ((m / s - (n - 1)), f"That is how far past in positions (1 - 1/s); multiply by pair {i}'s "
                            f"speed theta_{i} to get radians."),
        ((m - (n - 1)) * theta[i], "Without PI the angle would be that far out; with PI the "
                                   "position is divided by s first."),
        (-expected, "Sign: the scaled angle is larger than the trained maximum."),
        # the notebook's worked PI case is s = 4 at position 16,383: 0.75 positions past 4,095
        (_PI_EXAMPLE_OVER, f"{_PI_EXAMPLE_OVER:g} positions is the notebook's s = 4 case "
                           f"(16,383 / 4 - 4,095), and in positions. Here s = {s:g} and the "
                           f"position is {m:,}; then multiply by pair {i}'s speed theta_{i} for "
                           f"radians."),
        (_PI_EXAMPLE_OVER * theta[i], f"That uses the s = 4 overshoot ({_PI_EXAMPLE_OVER:g} "
                                      f"positions); with s = {s:g}, position {m:,} is read as "
                                      f"{m:,} / {s:g}."),
        (expected * 180 / math.pi, "That is in degrees; the question asks for radians."),
        (expected / (2 * math.pi), "That is in turns (one turn is 2 pi rad); the question asks "
                                   "for radians."),
        ((m + 1) / s * theta[i] - (n - 1) * theta[i],
         f"The last position served is {m:,} (positions 0..{m:,}), not {m + 1:,}."),
        (m / s * theta[i] - n * theta[i],
         f"The trained positions are 0..{n - 1:,}: the trained maximum is (L0 - 1) * theta_{i} "
         f"= {n - 1:,} theta_{i}, not {n:,} theta_{i}."),
        ((m / s - (n - 1)) * _theta(q["base"], q["d"], [i])[0],
         f"Pair {i}'s speed is theta_{i} = base^(-2 x {i}/d) = base^(-{2 * i}/{q['d']}), not "
         f"base^(-{i}/{q['d']})."),
        ((m / s - (n - 1)) * theta[i - 1], f"Pairs count from 0: pair {i} turns at theta_{i} = "
                                           f"base^(-{2 * i}/{q['d']}), not theta_{i - 1}."),
        ((m / s - (n - 1)) * theta[i + 1], f"Pairs count from 0: pair {i} turns at theta_{i} = "
                                           f"base^(-{2 * i}/{q['d']}), not theta_{i + 1}."),
    ]
    return check_number("pi_overshoot", answer, expected, mistakes, digits=SIGNIFICANT_DIGITS,
                        unit="rad", fmt=".4g",
                        generic=f"(m / s) * theta_{i} - (L0 - 1) * theta_{i}.")
