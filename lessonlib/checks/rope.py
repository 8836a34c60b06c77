"""Exercise checks for notebooks 07 (RoPE) and 08 (RoPE scaling).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. The expected
values come from ``lessonlib.rope``; the typical mistakes are recomputed here the wrong way so
that a hint can say which one was made.
"""
import math

import numpy as np

from .. import rope as R
from ..configs import load_config
from . import (FLOAT32_EPS, FLOAT32_RTOL, Unreadable, call, check_number, close_to,
               correct, distinct, shown, vector, wrong)
from ._preamble import preamble

__all__ = ["inv_freq", "rotate_neox", "never_turning", "ntk_base", "yarn_band",
           "yarn_score_factor", "pi_overshoot", "QUESTIONS"]

# The fixed inputs of each exercise (the notebooks state them in the question).
QUESTIONS = {
    "inv_freq": dict(d=64, base=150_000.0),  # gpt-oss-20b's head (d = 64, rope_theta 150,000)
    "rotate_neox": dict(d=8, base=10_000.0, positions=(0, 1, 5, 100, 16383)),
    "never_turning": dict(config="Llama-3.1-8B", n_train=8192),  # its base, unscaled
    "ntk_base": dict(base=500_000.0, factor=8.0, d=128),
    "yarn_band": dict(config="DeepSeek-V3"),
    "yarn_score_factor": dict(config="gpt-oss-20b"),
    "pi_overshoot": dict(d=128, base=10_000.0, n_train=4096, factor=8.0, position=32767,
                         pair=4),
}


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


def _rotate_inputs():
    """The head x (seeded: every run tries the same one) and theta that rotate is tried on."""
    q = QUESTIONS["rotate_neox"]
    return np.random.default_rng(7).standard_normal(q["d"]), _head(q["base"], q["d"])


def _rotate_probes():
    x, theta = _rotate_inputs()
    return [(x, m, theta) for m in QUESTIONS["rotate_neox"]["positions"]]


@preamble(function="Give a function rotate(x, m, theta), got {type}.", probes=_rotate_probes)
def rotate_neox(answer):
    """A function ``rotate(x, m, theta)`` that turns a NeoX-layout head x (length 2 * len(theta))
    by position m: pair i is (x[i], x[i + d/2]), turned by the angle m * theta[i]. A rotation
    computed in float32 passes."""
    name = "rotate_neox"
    q = QUESTIONS[name]
    x, theta = _rotate_inputs()
    results = []
    for m in q["positions"]:
        result, error = call(answer, x, m, theta, label=f"rotate(x, {m}, theta)")
        if error:
            return wrong(name, error)
        try:
            out = vector(result, what=f"an array shaped like x {x.shape}", finite=False,
                         flatten=False)
        except Unreadable as why:
            return wrong(name, f"rotate(x, {m}, theta) returned {type(result).__name__}: {why}")
        if out.shape != x.shape:
            return wrong(name, f"rotate must return an array shaped like x {x.shape}, "
                               f"got {out.shape}.")
        results.append(out)
    out = np.stack(results)  # (positions, d)
    pos = np.asarray(q["positions"], dtype=np.float64)
    atol = np.array([_rotation_atol(x, m, theta) for m in q["positions"]])[:, None]

    def ref(style, sign=1.0):
        return R.apply_rope(np.tile(x, (pos.size, 1)), sign * pos, theta, style=style)

    def same(want):
        with np.errstate(all="ignore"):
            return bool(np.all(np.abs(out - want) <= atol + FLOAT32_RTOL * np.abs(want)))

    if same(ref("neox")):
        return correct(name, "Correct: pairs (i, i + d/2), each turned by m * theta_i; the "
                             "length of every pair is kept.")
    if same(ref("gptj")):
        return wrong(name, "That is the GPT-J pairing (2i, 2i + 1). A NeoX checkpoint pairs "
                           "dimension i with i + d/2: x1 = x[:d/2], x2 = x[d/2:]. With the wrong "
                           "pairing the model runs without any error and writes fluent garbage.")
    if same(ref("neox", -1.0)):
        return wrong(name, "The pairs turn backwards (angle -m * theta_i): use "
                           "x1 cos - x2 sin for the first half and x2 cos + x1 sin for the second.")
    if same(ref("gptj", -1.0)):
        return wrong(name, "Two slips: GPT-J pairing (2i, 2i + 1) instead of NeoX (i, i + d/2), "
                           "and the sine's sign (the pairs turn backwards).")
    with np.errstate(all="ignore"):
        kept = np.allclose(np.linalg.norm(out, axis=1), np.linalg.norm(x), rtol=FLOAT32_RTOL)
    if not kept:
        return wrong(name, "The vector's length changed, so this is not a rotation. Compute both "
                           "halves from the old values (overwriting x1 before computing the "
                           "second half is the usual slip), with the same angle in cos and sin.")
    return wrong(name, "Not a NeoX rotation: with h = d/2, x1 = x[:h], x2 = x[h:], angle = "
                       "m * theta, return concat(x1 cos - x2 sin, x2 cos + x1 sin).")


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
        (R.pairs_never_turning(theta, cfg["max_position_embeddings"]).size,
         f"That uses max_position_embeddings = {cfg['max_position_embeddings']:,}, the extended "
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


# ------------------------------------------------------------------ notebook 08

_NTK_EXAMPLE = dict(base=10_000.0, factor=4.0)  # notebook 08's worked NTK number (40,889.9)


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
        (_NTK_EXAMPLE["base"] * s ** (d / (d - 2)),
         f"That uses base {_NTK_EXAMPLE['base']:,.0f}, the worked example's; Llama 3.1's "
         f"rope_theta is {b:,.0f}."),
        (b * _NTK_EXAMPLE["factor"] ** (d / (d - 2)),
         f"That uses s = {_NTK_EXAMPLE['factor']:g}, the worked example's factor; the question's "
         f"s is {s:g}."),
        (_NTK_EXAMPLE["base"] * _NTK_EXAMPLE["factor"] ** (d / (d - 2)),
         f"That is the worked example's base' (base {_NTK_EXAMPLE['base']:,.0f}, s = "
         f"{_NTK_EXAMPLE['factor']:g}); redo it with base {b:,.0f} and s = {s:g}."),
        ((b * s) ** (d / (d - 2)), "The exponent applies to s alone: base * s^(d/(d-2)), not "
                                   "(base * s)^(d/(d-2))."),
        (b * s ** d / (d - 2), "Mind the parentheses: s ** d / (d - 2) is s^d divided by d - 2; "
                               "write s ** (d / (d - 2))."),
        (s ** (d / (d - 2)), "That is the factor s^(d/(d-2)) alone: multiply the base by it."),
    ]
    return check_number("ntk_base", answer, expected, mistakes, rtol=1e-4, fmt=",.1f",
                         generic="base' = base * s^(d/(d-2)).")


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
          R.yarn_correction_range(fast, slow, int(cfg["qk_nope_head_dim"]) + r, b, L0)},
         f"DeepSeek's rotary dim is qk_rope_head_dim = {r}: only that slice of each head turns "
         "(the qk_nope part carries no position)."),
        ({R.yarn_correction_range(fast, slow, r, b, int(cfg["max_position_embeddings"]))},
         f"L0 is original_max_position_embeddings = {L0:,}, the trained length, not "
         f"max_position_embeddings = {cfg['max_position_embeddings']:,}."),
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
    s, mscale = sp.factor, sp.attention_factor
    expected = mscale ** 2
    mistakes = [
        (mscale, "That is mscale itself. It multiplies cos and sin, so it reaches both q and k: "
                 "the score carries mscale squared. Applying mscale once to the scores instead "
                 "of to q and k undershoots."),
        ((0.1 * math.log10(s) + 1) ** 2, "YaRN's mscale uses the natural log: 0.1 ln(s) + 1."),
        ((0.1 * math.log2(s) + 1) ** 2, "YaRN's mscale uses the natural log, not log2."),
        (0.1 * math.log10(s) + 1, "Natural log, and squared: (0.1 ln(s) + 1)^2."),
        (math.sqrt(mscale), "Squared, not square-rooted: q and k each carry one mscale."),
        (1.0 / expected, "The scores grow (a sharper softmax), they do not shrink."),
    ]
    return check_number("yarn_score_factor", answer, expected, mistakes, rtol=1e-4, fmt=".4f",
                         generic="mscale = 0.1 ln(s) + 1 on cos and sin; q.k carries it twice.")


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
    return check_number("pi_overshoot", answer, expected, mistakes, rtol=1e-6, atol=1e-9,
                         unit="rad", fmt=".4g",
                         generic=f"(m / s) * theta_{i} - (L0 - 1) * theta_{i}.")
