"""RoPE and its scaling variants, computed from a model's config.json (notebooks 07 and 08).

Symbols (Su et al. 2021; HF ``modeling_rope_utils.py``; notebook 07's d = 128, b = 10,000 head):

    b        the base, ``rope_theta`` in the checkpoint
    d_h      the head dimension; r <= d_h the rotary dimension (the leading slice RoPE turns)
    i        the pair index, 0 <= i < r/2
    theta_i  the inverse frequency of pair i, b^(-2i/r) radians per position (``inv_freq``)
    m, n     absolute positions of a query and a key
    s        the scaling factor (``factor``); L0 the trained context
             (``original_max_position_embeddings``); L the served length (``seq_len``)

Pair i of a query at position m is rotated by the angle m * theta_i. Because rotations compose,
the query-key score depends only on m - n. Every scaling scheme edits theta_i (or, equivalently,
the position axis):

    default   theta_i = b^(-2i/r)
    linear    theta_i / s                      position interpolation (PI, Chen et al. 2023)
    ntk       b' = b * s^(r/(r-2))             fixed NTK-aware base change (bloc97)
    dynamic   b' = b * (s*L/Lmax - (s-1))^(r/(r-2)), L = max(seq_len, Lmax)   (HF's rule)
    yarn      blend of theta_i and theta_i/s by a ramp over pairs, plus an attention factor
    llama3    wavelength-thresholded blend (Llama 3.1)
    longrope  theta_i / ext_i with per-pair factors, short or long set by seq_len (Phi-3)

``scaling_parameters(config)`` reads what a rope type reads (b, r, s, L0, YaRN's betas and band,
llama3's bands, longrope's lists), checked and resolved, into a frozen ``ScalingParameters``: the
one place the upper layers get L0 and s from. It lives in ``lessonlib.models.rope``, with every
other reader of the rope keys (``rope_parameters``, ``rotary_dim``, the vLLM and llama.cpp views
of them), and is re-exported here. This module computes from it: ``rope_frequencies(config)``
returns ``(inv_freq, attention_factor)`` exactly as HuggingFace transformers'
``ROPE_INIT_FUNCTIONS`` does (float64 here, float32 there), then the float32 cos and sin tables,
the rotation itself and the notebooks' per-pair readings. A config HF only warns about (a key
the rope type does not read, a factor below 1, an empty YaRN band) is a ``ValueError`` naming
the key, raised by the reader.

Every argument goes through ``lessonlib._validate``: counts and lengths are ints (not 4096.0),
numbers are finite reals (not bools or strings), and an error names the argument or config key.
"""
import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import _validate as check
from .models.rope import (DEFAULT_THETA, INV_FREQ, ROPE_TYPES, TWO_PI, YARN_BETA_FAST,  # noqa: F401
                          YARN_BETA_SLOW, ScalingParameters, derived_max_model_len,
                          llama3_regimes, llama_cpp_rope_flags, ntk_base, rope_parameters,
                          rotary_dim, scaling_parameters, vllm_max_model_len, yarn_correction_dim,
                          yarn_correction_range, yarn_mscale, yarn_ramp)
from .models.rope import (_FLOAT32_MAX, _FLOAT32_TINY, _MAX_HEAD_DIM, _MAX_POSITIONS,  # noqa: F401
                          _inv_freq, _length, _real, _require_dict, _rotary, _scaling)

__all__ = [
    "ROPE_TYPES", "INV_FREQ", "ScalingParameters", "scaling_parameters", "rope_frequencies",
    "rope_parameters", "rotary_dim", "apply_rope",
    "neox_to_gptj_order", "cos_sin_table", "rope_cos_sin", "wavelengths", "turns_within",
    "largest_trained_angle", "angle_at", "pairs_never_turning", "ntk_base",
    "yarn_correction_dim", "yarn_correction_range", "yarn_ramp", "yarn_mscale",
    "llama3_regimes", "derived_max_model_len", "vllm_max_model_len", "float32_angle_table", "outside_trained_arc",
    "trained_arc_overshoot", "Float32AngleError", "float32_angle_error", "llama_cpp_rope_flags",
    "clock_angle", "frequency_ratio", "slowdown", "target_length", "largest_overshoot",
    "YarnPairSets", "yarn_pair_sets", "rotary_score_scale",
]

# The most entries one cos or sin table may hold: 2^31 (8 GiB of float32). The course's largest is
# 131,072 positions x 64 pairs = 2^23 (benchmarks/rope_tables.py); past the limit numpy fails with
# a MemoryError (or swaps for minutes) before saying which argument.
_MAX_TABLE_ENTRIES = 1 << 31


# ------------------------------------------------------------------------------------------
# Checks built on lessonlib._validate (one vocabulary), for what this module adds to it
# ------------------------------------------------------------------------------------------

def _position(name, value):
    """A position m: a finite real number >= 0 (PI reads m / s, so fractions are allowed)."""
    return _real(name, value, minimum=0.0)


def _check_table(n, pairs, verb="builds"):
    """ValueError naming n_positions, before anything is allocated, when an (n, pairs) table
    would pass _MAX_TABLE_ENTRIES."""
    entries = n * pairs
    if entries > _MAX_TABLE_ENTRIES:
        size = check.describe_bytes(4 * entries)
        raise ValueError(f"n_positions x r/2 = {n:,} x {pairs:,} = {entries:,} entries "
                         f"({size} as float32, for each of cos and sin) is more "
                         f"than lessonlib.rope {verb} in one table (at most 2^31 = "
                         f"{_MAX_TABLE_ENTRIES:,} entries); a table needs the positions served "
                         "and no more (vLLM builds max_model_len rows)")


# ------------------------------------------------------------------------------------------
# Computing from the ScalingParameters: inv_freq, the per-pair readings of YaRN
# ------------------------------------------------------------------------------------------

def rotary_score_scale(attention_factor):
    """The factor on every rotary q.k score when cos and sin carry ``attention_factor`` (YaRN's
    mu, ``yarn_mscale``; longrope's): its square, since q and k are each rotated with the scaled
    table (HF multiplies cos and sin by it; so do vLLM's and llama.cpp's tables). YaRN at s = 4:
    mu = 1.1386, scores x 1.2965. ``attention_factor`` as the tables take it (> 0, float32's
    normal range)."""
    return _attention_factor(attention_factor) ** 2


@dataclass(frozen=True)
class YarnPairSets:
    """``yarn_pair_sets``' answer: sorted int pair indices, together every pair once.

    kept      ramp 1: frequency kept (the pairs at or below low)
    ramped    0 < ramp < 1: blended between theta_i and theta_i / s
    divided   ramp 0: theta_i / s (the pairs at or above high, when low < high)

    Notebook 08's readout (r = 128, b = 10,000, L0 = 4,096, betas 32 and 1: the band (20, 46)):
    kept 0-20, ramped 21-45, divided 46-63.
    """
    kept: np.ndarray  # ramp 1: frequency kept (the pairs at or below low)
    ramped: np.ndarray  # 0 < ramp < 1: blended between theta_i and theta_i / s
    divided: np.ndarray  # ramp 0: theta_i / s (the pairs at or above high, when low < high)


def yarn_pair_sets(low, high, n_pairs):
    """The pairs YaRN keeps, ramps and divides by s for the band (low, high), read off
    ``yarn_ramp``: HF's ``_compute_yarn_parameters`` blends ``inv_freq_extrapolation`` (theta_i)
    and ``inv_freq_interpolation`` (theta_i / s) by ``1 - linear_ramp_factor(low, high, r/2)``,
    which is 1 (kept), 0 (divided) or in between (ramped). A ``YarnPairSets``; the arguments as
    ``yarn_ramp`` checks them (``low <= high``, as ``yarn_correction_range`` returns them)."""
    ramp = yarn_ramp(low, high, n_pairs)
    return YarnPairSets(kept=np.flatnonzero(ramp == 1.0),
                        ramped=np.flatnonzero((ramp > 0.0) & (ramp < 1.0)),
                        divided=np.flatnonzero(ramp == 0.0))


def rope_frequencies(config, seq_len=None, *, layer_type=None):
    """(inv_freq, attention_factor) for a config.json dict, from its ``scaling_parameters``, as
    HuggingFace's ``ROPE_INIT_FUNCTIONS`` compute them.

    ``inv_freq`` is float64 of length ``rotary_dim // 2``; ``attention_factor`` multiplies cos and
    sin (YaRN's mscale, longrope's sqrt(1 + ln s / ln L0)), 1.0 for the other types. ``seq_len``
    (an int >= 1) is the length being served: it drives ``dynamic`` and picks longrope's short or
    long factors (None: HF's init-time behaviour). ``layer_type`` selects a per-layer rope
    (Gemma 3's "sliding_attention"; default "full_attention"). Errors as ``scaling_parameters``.
    """
    if seq_len is not None:
        seq_len = _length("seq_len", seq_len)
    return _inv_freq(*_scaling(config, layer_type), seq_len)


# ------------------------------------------------------------------------------------------
# Applying RoPE
# ------------------------------------------------------------------------------------------

def _table_frequencies(inv_freq):
    """``inv_freq`` for a rotation or a table: a non-empty 1-D array of finite real numbers, as
    float64 (a zero frequency is a pair that does not turn, as proportional RoPE has)."""
    theta = check.array("inv_freq", inv_freq, kind="real", ndim=1)
    if theta.size == 0:
        raise ValueError("inv_freq must be a non-empty 1-D array of finite numbers, got shape (0,)")
    return np.asarray(theta, dtype=np.float64)


def _angles(positions, inv_freq):
    """(n, r/2) float64 angles m * theta_i (never formed in float32)."""
    return np.multiply.outer(np.asarray(positions, dtype=np.float64), inv_freq)


def _check_positions(positions, x_shape):
    """``positions`` (n,) or (..., n), broadcasting against x's leading dims x.shape[:-1]."""
    positions = check.array("positions", positions, kind="real")
    n = x_shape[-2]
    if positions.ndim == 0 or positions.shape[-1] != n:
        raise ValueError(f"positions must have length n = {n} (x.shape[-2]), got shape {positions.shape}")
    shape, lead = positions.shape, tuple(x_shape[:-1])
    while len(shape) > len(lead) and shape[0] == 1:  # extra leading unit dims change nothing
        shape = shape[1:]
    try:
        ok = np.broadcast_shapes(shape, lead) == lead
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"positions has shape {positions.shape}, which does not broadcast to x's "
                         f"leading dims {tuple(x_shape[:-1])} (x is {tuple(x_shape)}): give shape "
                         f"(n,) = ({n},) for every row, or one position per row of x")
    return positions.reshape(shape)


def apply_rope(x, positions, inv_freq, *, style="neox", attention_factor=1.0):
    """A rotated copy of ``x`` (..., n, d): pair i of row j turned by positions[j] * inv_freq[i].

    Only the first r = 2 * len(inv_freq) dims turn (and are scaled by ``attention_factor``); the
    tail passes through. ``style="neox"`` pairs dims (i, i + r/2) (HF, vLLM's is_neox_style);
    ``"gptj"`` pairs (2i, 2i + 1). Angles are formed in float64; the result has x's float dtype
    (float32 at least). ``positions`` is (n,), or (..., n) broadcasting to x.shape[:-1], real
    numbers >= 0. Errors: r > d; a result that overflows x's dtype.
    """
    x = check.array("x", x, kind="real")
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., n, d), got {x.shape}")
    inv_freq = _table_frequencies(inv_freq)
    n, d = x.shape[-2:]
    h = inv_freq.size
    r = 2 * h
    if r > d:
        raise ValueError(f"inv_freq has {h} pairs (rotary dim {r}) but x has only d = {d} dims")
    positions = _check_positions(positions, x.shape)
    style = check.choice("style", style, ("neox", "gptj"))
    af = _attention_factor(attention_factor)
    dtype = np.result_type(x.dtype, np.float32)
    angles = _angles(positions, inv_freq)  # (..., n, r/2)
    cos, sin = np.cos(angles) * af, np.sin(angles) * af
    xf = x.astype(np.float64)
    if style == "neox":
        x1, x2 = xf[..., :h], xf[..., h:r]
    else:
        x1, x2 = xf[..., 0:r:2], xf[..., 1:r:2]
    o1, o2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    out = xf.copy()
    if style == "neox":
        out[..., :h], out[..., h:r] = o1, o2
    else:
        out[..., 0:r:2], out[..., 1:r:2] = o1, o2
    with np.errstate(over="ignore"):  # an overflow is reported just below, by name
        out = out.astype(dtype)
    if not np.isfinite(out).all():
        raise ValueError(f"x times attention_factor = {af:g} overflowed {np.dtype(dtype).name}: "
                         "scale x or attention_factor down")
    return out


def neox_to_gptj_order(r, d=None):
    """Indices that re-lay a NeoX-ordered head as GPT-J: ``x_gptj = x_neox[..., order]``.

    GPT-J dim 2i holds NeoX dim i, dim 2i + 1 holds NeoX dim i + r/2 (the QK weight-row permutation
    conversion scripts apply); dims r..d-1 stay in place. ``r`` is even, ``d`` (default r) >= r.
    """
    r = _rotary("r", r)
    d = r if d is None else check.integer("d", d, minimum=r, maximum=_MAX_HEAD_DIM)
    h = r // 2
    pairs = np.stack([np.arange(h), np.arange(h) + h], axis=1).ravel()
    return np.concatenate([pairs, np.arange(r, d)])


# ------------------------------------------------------------------------------------------
# cos/sin tables: float64 angles reduced mod 2 pi, then float32 cos/sin; cached per (config, n)
# ------------------------------------------------------------------------------------------

_TABLE_ROWS = 1024  # rows per block: keeps the float64 scratch (rows x r/2) in cache


def cos_sin_table(inv_freq, n_positions, attention_factor=1.0):
    """(cos, sin), each float32 (n_positions, r/2), of the angles m * theta_i for m = 0..n-1,
    times ``attention_factor`` (as engines bake YaRN's mscale into the table).

    The angle is formed as turns = m * theta_i / 2 pi in float64, its whole turns removed, and
    only the fraction in [0, 1) times 2 pi is rounded to float32: every entry is within about
    3e-7 of a float64 computation. Forming m * theta_i in float32 instead (``float32_angle_table``)
    puts errors of up to about 8e-3 into cos and sin of a 131,072-position table, from two
    roundings (``float32_angle_error`` separates them): below 2^17 float32 numbers are 1/128
    apart, so rounding the product costs up to 1/256 rad; and theta_i itself is rounded to
    float32 before the multiply, an error that grows with m (at b = 10,000 about another 0.004
    rad for pair 1 near m = 131,071). Pair 0 (theta_0 = 1, integer m) has no error at all.

    ``attention_factor`` is a finite number > 0 that float32 can hold (at least its smallest
    normal number, or the table would be zeros). A table of more than 2^31 entries
    (n_positions x r/2) is refused before allocating, naming ``n_positions`` and the bytes; so
    are ``float32_angle_table``'s, ``rope_cos_sin``'s and ``float32_angle_error``'s.
    """
    inv_freq = _table_frequencies(inv_freq)
    n = _length("n_positions", n_positions)
    af = _attention_factor(attention_factor)
    h = inv_freq.size
    _check_table(n, h)
    turns_per_position = inv_freq / TWO_PI
    cos, sin = np.empty((n, h), np.float32), np.empty((n, h), np.float32)
    rows = min(_TABLE_ROWS, n)
    turns, whole, angle = np.empty((rows, h)), np.empty((rows, h)), np.empty((rows, h), np.float32)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        t, w, a = turns[: stop - start], whole[: stop - start], angle[: stop - start]
        np.multiply(np.arange(start, stop, dtype=np.float64)[:, None], turns_per_position, out=t)
        np.floor(t, out=w)
        np.subtract(t, w, out=t)  # fraction of a turn, in [0, 1)
        np.multiply(t, TWO_PI, out=a, casting="same_kind")  # float64 angle in [0, 2 pi) -> float32
        np.cos(a, out=cos[start:stop])
        np.sin(a, out=sin[start:stop])
    if af != 1.0:
        cos *= np.float32(af)
        sin *= np.float32(af)
    return cos, sin


@lru_cache(maxsize=8)  # a 131072-position table pair is 64 MiB
def _cached_table(config_json, n, layer_type):
    inv_freq, attention_factor = rope_frequencies(json.loads(config_json), seq_len=n, layer_type=layer_type)
    cos, sin = cos_sin_table(inv_freq, n, attention_factor)
    cos.flags.writeable = False  # shared by every caller: read-only
    sin.flags.writeable = False
    return cos, sin


def rope_cos_sin(config, n_positions, *, layer_type=None):
    """The cached (cos, sin) float32 tables (n_positions, r/2) for a config, built once per
    (config, n_positions, layer_type), like vLLM's per-config ``cos_sin_cache``. The table for n
    positions is built with ``seq_len = n`` (dynamic NTK and longrope's regime follow it) and
    includes the attention factor. The arrays are read-only; copy before modifying.
    """
    _require_dict(config)
    n = _length("n_positions", n_positions)
    if layer_type is not None:
        check.text("layer_type", layer_type)
    try:
        key = json.dumps(config, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as err:
        rope_frequencies(config, n, layer_type=layer_type)  # names the key when a rope value is bad
        raise ValueError(f"config must be a JSON-serializable dict: {err}") from None
    return _cached_table(key, n, layer_type)


# ------------------------------------------------------------------------------------------
# Notebook helpers: small pure functions on inv_freq (radians per position)
# ------------------------------------------------------------------------------------------

def _frequencies(inv_freq, name="inv_freq"):
    """``inv_freq`` as a float64 array of positive finite numbers, or ValueError naming it."""
    theta = check.array(name, inv_freq, kind="real", ndim=1)
    if theta.size == 0 or not (theta > 0).all():
        raise ValueError(f"{name} must be a non-empty 1-D array of positive finite numbers, "
                         f"got {np.asarray(inv_freq)!r}")
    return np.asarray(theta, dtype=np.float64)


def _attention_factor(value):
    """The factor on cos and sin: a finite number > 0 that float32 tables can hold (0, or
    anything below float32's smallest normal number, gives tables of zeros: every rotary score
    0)."""
    af = _real("attention_factor", value, above=0.0)
    if af >= _FLOAT32_MAX:
        raise ValueError(f"attention_factor must be below float32's maximum 3.4e38 (cos and sin "
                         f"tables are float32), got {value!r}")
    if af < _FLOAT32_TINY:
        raise ValueError(f"attention_factor must be at least float32's smallest normal number "
                         f"1.2e-38 (cos and sin tables are float32: they would underflow to 0), "
                         f"got {value!r}")
    return af


def wavelengths(inv_freq):
    """Positions per full turn of each pair: 2 pi / theta_i."""
    return TWO_PI / _frequencies(inv_freq)


def turns_within(inv_freq, n_positions):
    """Turns each pair completes within ``n_positions`` positions: n / wavelength."""
    return _length("n_positions", n_positions, minimum=0) / wavelengths(inv_freq)


def largest_trained_angle(inv_freq, n_train):
    """The largest angle each pair reached in training: (n_train - 1) * theta_i."""
    theta = _frequencies(inv_freq)
    return (_length("n_train", n_train) - 1) * theta


def angle_at(inv_freq, position):
    """The angle of each pair at ``position``: position * theta_i (compare with the trained max)."""
    theta = _frequencies(inv_freq)
    return _position("position", position) * theta


def pairs_never_turning(inv_freq, n_positions):
    """Indices of the pairs whose wavelength exceeds ``n_positions`` (no full turn in training)."""
    return np.flatnonzero(wavelengths(inv_freq) > _length("n_positions", n_positions))


def clock_angle(inv_freq, position):
    """The angle each pair's clock hand shows at ``position``: position * theta_i with its whole
    turns removed, in [0, 2 pi) (``angle_at`` mod 2 pi). ``outside_trained_arc`` compares it with
    the arc the pair swept in training."""
    return np.mod(angle_at(inv_freq, position), TWO_PI)


def outside_trained_arc(inv_freq, position, n_train):
    """Per pair, True where the angle at ``position`` with its whole turns removed lies beyond the
    arc [0, (n_train - 1) * theta_i] the pair swept in training. Only pairs that never complete a
    turn in training (``pairs_never_turning``) can be True: the others saw every angle."""
    theta = _frequencies(inv_freq)
    position = _position("position", position)
    n_train = _length("n_train", n_train)
    on_clock = clock_angle(theta, position)
    never = np.zeros(theta.shape, dtype=bool)
    never[pairs_never_turning(theta, n_train)] = True
    return never & (on_clock > largest_trained_angle(theta, n_train))


def trained_arc_overshoot(inv_freq, position, n_train, *, trained_inv_freq=None):
    """Radians by which each pair's angle at ``position`` (turning at ``inv_freq``, e.g. after a
    scaling scheme) passes the largest angle the pair reached in training (turning at
    ``trained_inv_freq``, default ``inv_freq``, over ``n_train`` positions). 0 for pairs that
    stay inside, and for pairs that complete a turn in training (they saw every angle)."""
    theta = _frequencies(inv_freq)
    trained = theta if trained_inv_freq is None else _frequencies(trained_inv_freq, "trained_inv_freq")
    if trained.shape != theta.shape:
        raise ValueError(f"trained_inv_freq has shape {trained.shape}, inv_freq {theta.shape}")
    position = _position("position", position)
    n_train = _length("n_train", n_train)
    over = np.maximum(angle_at(theta, position) - largest_trained_angle(trained, n_train), 0.0)
    never = np.zeros(theta.shape, dtype=bool)
    never[pairs_never_turning(trained, n_train)] = True
    return np.where(never, over, 0.0)


def largest_overshoot(inv_freq, position, n_train, *, trained_inv_freq=None):
    """(radians, pair): the largest ``trained_arc_overshoot`` over the pairs (arguments as there)
    and the first pair that has it; ``(0.0, None)`` when no pair passes its trained arc.
    Notebook 08: NTK-aware at s = 4 passes pair 46's arc by 2.48 rad at position 16,383."""
    over = trained_arc_overshoot(inv_freq, position, n_train, trained_inv_freq=trained_inv_freq)
    pair = int(np.argmax(over))
    largest = float(over[pair])
    return largest, (pair if largest > 0.0 else None)


def _two_frequencies(inv_freq, original_inv_freq):
    theta = _frequencies(inv_freq)
    original = _frequencies(original_inv_freq, "original_inv_freq")
    if original.shape != theta.shape:
        raise ValueError(f"original_inv_freq has shape {original.shape}, inv_freq {theta.shape}: "
                         "one frequency per pair in each")
    return theta, original


def frequency_ratio(inv_freq, original_inv_freq):
    """theta'_i / theta_i per pair: the share of its speed each pair keeps under a scaling scheme
    (``inv_freq``, from ``rope_frequencies``) against the unscaled rope (``original_inv_freq``):
    1 kept, 1/s divided by the factor (PI everywhere; YaRN's and llama3's slow pairs),
    s^(-2i/(r-2)) under NTK-aware's base. Notebook 08's frequency panel."""
    theta, original = _two_frequencies(inv_freq, original_inv_freq)
    return theta / original


def slowdown(inv_freq, original_inv_freq):
    """theta_i / theta'_i per pair: how many times slower each pair turns under a scaling scheme
    (``inv_freq``) than unscaled (``original_inv_freq``); ``1 / frequency_ratio``. NTK-aware's
    base (``ntk_base``) slows pair i by s^(2i/(r-2)): pair 0 by 1, the last pair by exactly s."""
    theta, original = _two_frequencies(inv_freq, original_inv_freq)
    return original / theta


def target_length(s, L0):
    """The length a factor ``s`` stretches a trained length ``L0`` to: s * L0 positions, rounded
    to a whole position (s = 4 over L0 = 4,096: 16,384). Named by their config keys: s is the
    factor (>= 1), L0 the original_max_position_embeddings. An int; a length past 2^53 (where
    float64 positions stop being distinct) is an error naming ``factor``."""
    s = _real("factor", s, minimum=1.0)
    L0 = _length("original_max_position_embeddings", L0)
    n = s * L0
    if not n <= _MAX_POSITIONS:
        raise ValueError(f"factor x original_max_position_embeddings = {s:g} x {L0:,} = {n:g} "
                         "positions is past 2^53, where float64 positions stop being distinct")
    return int(round(n))


def float32_angle_table(inv_freq, n_positions, attention_factor=1.0):
    """(cos, sin) float32 (n_positions, r/2) built the way many engines build theirs: inv_freq,
    the positions and their product m * theta_i all in float32 (vLLM's ``_compute_cos_sin_cache``,
    HF's rotary embedding under float32). The angle carries two roundings: theta_i rounded to
    float32 before the multiply (an error that grows with m), and the product rounded to the
    float32 grid (at most half the spacing: 1/256 rad below m = 2^17, where numbers are 1/128
    apart): errors up to about 8e-3 at 131,072 positions. ``float32_angle_error`` measures both
    per pair; ``cos_sin_table`` has neither. ``attention_factor`` and the size as there."""
    inv32 = _table_frequencies(inv_freq).astype(np.float32)
    n = _length("n_positions", n_positions)
    af = np.float32(_attention_factor(attention_factor))
    _check_table(n, inv32.size)
    angles = np.multiply.outer(np.arange(n, dtype=np.float32), inv32)  # (n, r/2) float32
    return np.cos(angles) * af, np.sin(angles) * af


@dataclass(frozen=True)
class Float32AngleError:
    """``float32_angle_error``'s answer, one entry per pair (radians unless named otherwise).

    ``total`` is the largest |angle32 - m * theta_i| over positions 0..n-1 and ``at_position`` the
    first position where it occurs. ``from_theta`` is the part theta_i's own rounding to float32
    contributes, (n - 1) |float32(theta_i) - theta_i| (it grows with m); ``from_product`` the
    largest rounding of the float32 product itself (at most half the float32 spacing at the
    largest angle, ``product_bound``). ``total <= from_theta + from_product`` per pair, up to the
    rounding of the positions themselves past 2^24, where float32 stops holding every integer.
    """
    total: np.ndarray  # (r/2,)
    at_position: np.ndarray  # (r/2,) int
    from_theta: np.ndarray  # (r/2,)
    from_product: np.ndarray  # (r/2,)
    product_bound: np.ndarray  # (r/2,) half the float32 spacing at (n - 1) * float32(theta_i)


def float32_angle_error(inv_freq, n_positions):
    """How far the float32 angles of ``float32_angle_table`` land from m * theta_i in float64,
    per pair, over positions m = 0..n_positions-1, split into the two roundings that cause it
    (a ``Float32AngleError``). theta_i is rounded to float32 first; then the product m * theta32
    is rounded to the float32 grid. A pair with theta_i = 1 (pair 0) and integer m has neither.
    """
    theta = _table_frequencies(inv_freq)
    n = _length("n_positions", n_positions)
    _check_table(n, theta.size, "measures")  # the table float32_angle_table would build
    theta32 = theta.astype(np.float32)
    h = theta.size
    total, at = np.zeros(h), np.zeros(h, dtype=np.int64)
    product = np.zeros(h)
    rows = min(_TABLE_ROWS, n)
    for start in range(0, n, rows):
        m = np.arange(start, min(n, start + rows), dtype=np.float64)
        m32 = m.astype(np.float32)
        angle32 = np.multiply.outer(m32, theta32).astype(np.float64)  # the engines' float32 angles
        exact_of_rounded = np.multiply.outer(m32.astype(np.float64), theta32.astype(np.float64))
        err = np.abs(angle32 - np.multiply.outer(m, theta))  # (rows, r/2)
        worst = err.argmax(axis=0)
        better = err[worst, np.arange(h)] > total
        total = np.where(better, err[worst, np.arange(h)], total)
        at = np.where(better, worst + start, at)
        product = np.maximum(product, np.abs(angle32 - exact_of_rounded).max(axis=0))
    from_theta = (n - 1) * np.abs(theta32.astype(np.float64) - theta)
    largest = np.abs((n - 1) * theta32.astype(np.float64)).astype(np.float32)
    bound = np.spacing(largest).astype(np.float64) / 2
    return Float32AngleError(total=total, at_position=at, from_theta=from_theta,
                             from_product=product, product_bound=bound)
