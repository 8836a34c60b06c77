"""RoPE and its scaling variants, computed from a model's config.json (the lesson's Examples 12-15).

Symbols (Su et al. 2021; the lesson's Example 12; HF ``modeling_rope_utils.py``):

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

``rope_frequencies(config)`` returns ``(inv_freq, attention_factor)`` exactly as HuggingFace
transformers' ``ROPE_INIT_FUNCTIONS`` does (float64 here, float32 there). It fails loudly, with a
``ValueError`` naming the key, on configs that HF only warns about.

Configs come in two layouts: transformers 4 writes ``rope_theta`` at the top level and the
scaling under ``rope_scaling``; transformers 5 writes ``rope_parameters`` holding ``rope_theta``
too, possibly nested per layer type (Gemma 3: ``{"full_attention": {...}, "sliding_attention":
{...}}``). Both are read, as is the legacy ``type`` key for ``rope_type``.
"""
import json
import math
from functools import lru_cache

import numpy as np

__all__ = [
    "ROPE_TYPES", "INV_FREQ", "rope_frequencies", "rope_parameters", "rotary_dim", "apply_rope",
    "neox_to_gptj_order", "cos_sin_table", "rope_cos_sin", "wavelengths", "turns_within",
    "largest_trained_angle", "angle_at", "pairs_never_turning", "ntk_base",
    "yarn_correction_dim", "yarn_correction_range", "yarn_ramp", "yarn_mscale",
    "llama3_regimes", "derived_max_model_len", "float32_angle_table", "outside_trained_arc",
    "trained_arc_overshoot",
]

TWO_PI = 2.0 * math.pi
DEFAULT_THETA = 10_000.0  # the RoPE paper's base; HF's default_theta when a config omits rope_theta
YARN_BETA_FAST, YARN_BETA_SLOW = 32.0, 1.0  # YaRN paper defaults (HF: `beta_fast or 32`)
_TYPE_ALIASES = {"su": "longrope"}  # Phi-3's first releases called longrope "su"
_REQUIRED = object()
_MAX_HEAD_DIM = 1 << 16  # a sanity bound: real heads are <= 512 wide; beyond this a config is corrupt


# ------------------------------------------------------------------------------------------
# Reading a config: one place for the key lookup, the layouts and the head-dim arithmetic
# ------------------------------------------------------------------------------------------

def _number(value, name, *, minimum=None, above=None, integer=False):
    """``value`` as a finite float (int if ``integer``), or ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if integer:
        if x != int(x):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        x = int(x)
    if minimum is not None and x < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if above is not None and x <= above:
        raise ValueError(f"{name} must be > {above}, got {value!r}")
    return x


class _Params:
    """The resolved rope parameters of one layer, and where they came from (for error messages)."""

    def __init__(self, params, where, config):
        self.params, self.where, self.config = params, where, config

    def number(self, key, default=_REQUIRED, **checks):
        value = self.params.get(key)
        if value is None:
            if default is _REQUIRED:
                raise ValueError(f"{self.where}.{key} is required for rope_type "
                                 f"{self.params.get('rope_type')!r} but is missing")
            return default
        return _number(value, f"{self.where}.{key}", **checks)

    def factor(self):
        return self.number("factor", minimum=1.0)

    def max_position_embeddings(self):
        value = self.config.get("max_position_embeddings")
        if value is None:
            raise ValueError("max_position_embeddings is required for rope_type "
                             f"{self.params.get('rope_type')!r} but is missing")
        return _number(value, "max_position_embeddings", minimum=1, integer=True)

    def original_max_position_embeddings(self):
        """L0. A top-level key wins over the rope dict's (Phi-3 stores it there; HF does the same).

        Unlike HF, a config that has neither is an error, not a silent L0 = max_position_embeddings.
        """
        if self.config.get("original_max_position_embeddings") is not None:
            return _number(self.config["original_max_position_embeddings"],
                           "original_max_position_embeddings", minimum=1, integer=True)
        return self.number("original_max_position_embeddings", minimum=1, integer=True)


def _is_nested(rope_dict):
    """transformers 5 nests rope parameters per layer type: every value is a dict (or None)."""
    return bool(rope_dict) and all(v is None or isinstance(v, dict) for v in rope_dict.values())


def _rope_section(config, layer_type):
    """(parameters dict, name for messages) of the layer type's rope, from either layout."""
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict (a parsed config.json), got {type(config).__name__}")
    sections = {}
    for key in ("rope_scaling", "rope_parameters"):
        value = config.get(key)
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"{key} must be a dict or null, got {value!r}")
        if value:
            sections[key] = value
    nested = {k: v for k, v in sections.items() if _is_nested(v)}
    if nested:
        if len(sections) > 1:
            raise ValueError("give either rope_scaling or a per-layer-type rope_parameters, not both")
        key, table = next(iter(nested.items()))
        layer = "full_attention" if layer_type is None else layer_type
        if layer not in table:
            raise ValueError(f"layer_type {layer!r} is not in {key} (it has {sorted(table)})")
        if table[layer] is None:
            raise ValueError(f"{key}.{layer} is null: that layer type has no RoPE")
        return dict(table[layer]), f"{key}.{layer}"
    if layer_type == "sliding_attention" and config.get("rope_local_base_freq") is not None:
        # Gemma 3 (transformers 4 layout): local layers use their own base and no scaling.
        return {"rope_type": "default", "rope_theta": config["rope_local_base_freq"]}, "rope_local_base_freq"
    if len(sections) == 2:  # both keys given: they must not disagree
        merged = dict(sections["rope_parameters"])
        for k, v in sections["rope_scaling"].items():
            if k in merged and merged[k] != v:
                raise ValueError(f"rope_scaling.{k} = {v!r} disagrees with rope_parameters.{k} = {merged[k]!r}")
            merged[k] = v
        return merged, "rope_scaling"
    if sections:
        key, value = next(iter(sections.items()))
        return dict(value), key
    return {}, "rope_scaling"


def _resolve(config, layer_type):
    """(standardized parameters, name of their section, name of rope_theta's source)."""
    params, where = _rope_section(config, layer_type)
    rope_type, legacy = params.get("rope_type"), params.get("type")
    if rope_type is not None and legacy is not None and rope_type != legacy:
        raise ValueError(f"{where}.rope_type = {rope_type!r} disagrees with {where}.type = {legacy!r}")
    rope_type = rope_type if rope_type is not None else (legacy if legacy is not None else "default")
    if not isinstance(rope_type, str):
        raise ValueError(f"{where}.rope_type must be a string, got {rope_type!r}")
    rope_type = _TYPE_ALIASES.get(rope_type, rope_type)
    if rope_type not in INV_FREQ:
        raise ValueError(f"{where}.rope_type {rope_type!r} is unknown; known: {', '.join(ROPE_TYPES)}")
    params.pop("type", None)
    params["rope_type"] = rope_type
    # transformers 5 keeps rope_theta inside the rope dict; transformers 4 at the top level
    theta_where = "rope_theta" if params.get("rope_theta") is None else (
        where if where == "rope_local_base_freq" else f"{where}.rope_theta")
    theta = params.get("rope_theta", config.get("rope_theta"))
    params["rope_theta"] = DEFAULT_THETA if theta is None else theta
    prf = params.get("partial_rotary_factor", config.get("partial_rotary_factor"))
    params["partial_rotary_factor"] = 1.0 if prf is None else prf
    return params, where, theta_where


def rope_parameters(config, *, layer_type=None):
    """The rope parameters a config asks for, standardized: a dict with ``rope_type`` (legacy
    ``type`` accepted), ``rope_theta`` and ``partial_rotary_factor`` always present, plus the
    type's own keys. ``layer_type`` picks a per-layer entry (Gemma 3's ``"sliding_attention"``);
    the default is ``"full_attention"``.
    """
    return _resolve(config, layer_type)[0]


def rotary_dim(config, *, layer_type=None):
    """r, the number of leading head dims RoPE rotates: ``int(d_h * partial_rotary_factor)``.

    d_h is ``qk_rope_head_dim`` for MLA models (DeepSeek: only that slice carries position),
    else ``head_dim``, else ``hidden_size // num_attention_heads``. This is the only place the
    head-dim arithmetic lives.
    """
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict (a parsed config.json), got {type(config).__name__}")
    for key in ("qk_rope_head_dim", "head_dim"):
        if config.get(key) is not None:
            d_h, source = _number(config[key], key, minimum=1, integer=True), key
            break
    else:
        if config.get("hidden_size") is None or config.get("num_attention_heads") is None:
            raise ValueError("config needs head_dim, or hidden_size and num_attention_heads")
        hidden = _number(config["hidden_size"], "hidden_size", minimum=1, integer=True)
        heads = _number(config["num_attention_heads"], "num_attention_heads", minimum=1, integer=True)
        if hidden % heads:
            raise ValueError(f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}; "
                             "give head_dim")
        d_h, source = hidden // heads, "head_dim"
    if d_h > _MAX_HEAD_DIM:
        raise ValueError(f"{source} = {d_h} is not a plausible head dimension (> {_MAX_HEAD_DIM})")
    prf = _number(rope_parameters(config, layer_type=layer_type)["partial_rotary_factor"],
                  "partial_rotary_factor", above=0.0)
    if prf > 1.0:
        raise ValueError(f"partial_rotary_factor must be in (0, 1], got {prf}")
    r = int(d_h * prf)
    if r < 2 or r % 2:
        name = "partial_rotary_factor" if prf != 1.0 else source
        raise ValueError(f"the rotary dim must be even and >= 2, got {r} = int({d_h} * {prf}) "
                         f"(check {name})")
    return r


# ------------------------------------------------------------------------------------------
# One function per rope type: (b, r, p, seq_len) -> (inv_freq float64 (r/2,), attention_factor)
# ------------------------------------------------------------------------------------------

def _theta(b, r):
    """theta_i = b^(-2i/r), i = 0 .. r/2 - 1  (float64)."""
    return 1.0 / b ** (np.arange(0, r, 2, dtype=np.float64) / r)


def _default(b, r, p, seq_len):
    return _theta(b, r), 1.0


def _linear(b, r, p, seq_len):
    return _theta(b, r) / p.factor(), 1.0  # PI: position m is read as m / s


def ntk_base(b, s, r):
    """The fixed NTK-aware base b' = b * s^(r/(r-2)): pair 0 keeps its speed, the last pair
    (i = r/2 - 1) is slowed by exactly s, pair i by s^(2i/(r-2))."""
    b = _number(b, "rope_theta", above=1.0)
    s = _number(s, "factor", minimum=1.0)
    r = _number(r, "rotary_dim", minimum=4, integer=True)
    if r % 2:
        raise ValueError(f"rotary_dim must be even (dims pair up), got {r}")
    return b * s ** (r / (r - 2))


def _require_r_above_2(r, p):
    if r <= 2:
        raise ValueError(f"{p.params['rope_type']} scaling needs a rotary dim > 2, got {r} "
                         "(b * s^(r/(r-2)) is undefined at r = 2)")


def _ntk(b, r, p, seq_len):
    _require_r_above_2(r, p)
    return _theta(ntk_base(b, p.factor(), r), r), 1.0


def _dynamic(b, r, p, seq_len):
    """HF's dynamic NTK: L = max(seq_len, Lmax) (Lmax when seq_len is None)."""
    _require_r_above_2(r, p)
    s, l_max = p.factor(), p.max_position_embeddings()
    L = l_max if seq_len is None else max(seq_len, l_max)
    b_new = b * ((s * L / l_max) - (s - 1)) ** (r / (r - 2))
    return _theta(b_new, r), 1.0


def yarn_mscale(s, mscale=1.0):
    """YaRN's attention factor mu = 0.1 * mscale * ln(s) + 1 (1 for s <= 1). Both cos and sin are
    multiplied by it, so rotary scores scale by mu^2 (1.2079 and 1.459 at s = 8)."""
    s = _number(s, "factor", above=0.0)
    mscale = _number(mscale, "mscale")
    return 1.0 if s <= 1 else 0.1 * mscale * math.log(s) + 1.0


def yarn_correction_dim(n_rotations, r, b, L0):
    """The (fractional) pair index whose frequency completes ``n_rotations`` turns in L0
    positions: r * ln(L0 / (2 pi n)) / (2 ln b)  (YaRN; ggml's ggml_rope_yarn_corr_dim)."""
    n = _number(n_rotations, "n_rotations", above=0.0)
    b = _number(b, "rope_theta", above=1.0)
    return r * math.log(L0 / (n * TWO_PI)) / (2.0 * math.log(b))


def yarn_correction_range(beta_fast, beta_slow, r, b, L0, truncate=True):
    """(low, high): pairs below ``low`` keep their frequency, pairs above ``high`` are divided by
    s. ``truncate`` floors/ceils the ends (HF's default; gpt-oss ships ``truncate: false``).
    Clamped to [0, r - 1] as HF does."""
    if not isinstance(truncate, bool):
        raise ValueError(f"truncate must be true or false, got {truncate!r}")
    if _number(beta_fast, "beta_fast", above=0.0) <= _number(beta_slow, "beta_slow", above=0.0):
        raise ValueError(f"beta_fast must be > beta_slow (fast pairs turn more often), got "
                         f"beta_fast={beta_fast!r}, beta_slow={beta_slow!r}")
    low = yarn_correction_dim(beta_fast, r, b, L0)
    high = yarn_correction_dim(beta_slow, r, b, L0)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, r - 1)


def yarn_ramp(low, high, n_pairs):
    """Example 15's ramp per pair: 1 = frequency kept, 0 = divided by s, linear in between.
    (It is 1 - HF's ``linear_ramp_factor``; equal ends get HF's +0.001 to avoid 0/0.)"""
    low, high = float(low), float(high)
    if low == high:
        high += 0.001  # prevent the singularity, as HF and ggml do
    y = (np.arange(n_pairs, dtype=np.float64) - low) / (high - low)
    return 1.0 - np.clip(y, 0.0, 1.0)


def _yarn(b, r, p, seq_len):
    s = p.number("factor", default=None)
    L0 = p.original_max_position_embeddings()
    if s is None:  # HF: a null factor means max_position_embeddings / L0
        if "factor" not in p.params:
            raise ValueError(f"{p.where}.factor is required for rope_type 'yarn' but is missing")
        s = p.max_position_embeddings() / L0
    if s < 1:
        raise ValueError(f"{p.where}.factor must be >= 1, got {s}")
    attention_factor = p.number("attention_factor", default=None, minimum=0.0)
    mscale = p.number("mscale", default=None)
    mscale_all_dim = p.number("mscale_all_dim", default=None)
    if attention_factor is None:
        if mscale and mscale_all_dim:  # DeepSeek: the ratio of two mscales (1.0 when they match)
            attention_factor = yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)
        else:
            attention_factor = yarn_mscale(s)
        if not attention_factor >= 0:
            raise ValueError(f"{p.where}.mscale / mscale_all_dim give a negative attention factor "
                             f"{attention_factor}")
    beta_fast = p.number("beta_fast", default=None, minimum=0.0) or YARN_BETA_FAST  # HF: `or 32`
    beta_slow = p.number("beta_slow", default=None, minimum=0.0) or YARN_BETA_SLOW
    if beta_fast < beta_slow:
        raise ValueError(f"{p.where}.beta_fast ({beta_fast}) must be >= {p.where}.beta_slow ({beta_slow})")
    truncate = p.params.get("truncate", True)
    if not isinstance(truncate, bool):
        raise ValueError(f"{p.where}.truncate must be true or false, got {truncate!r}")
    theta = _theta(b, r)
    low, high = yarn_correction_range(beta_fast, beta_slow, r, b, L0, truncate)
    keep = yarn_ramp(low, high, r // 2)  # 1: extrapolate (unchanged), 0: interpolate (/ s)
    return theta / s * (1.0 - keep) + theta * keep, float(attention_factor)


def _factor_list(p, key, n_pairs):
    values = p.params.get(key)
    name = f"{p.where}.{key}"
    if values is None:
        raise ValueError(f"{name} is required for rope_type 'longrope' but is missing")
    if not isinstance(values, (list, tuple)):
        raise ValueError(f"{name} must be a list of numbers, got {values!r}")
    if len(values) != n_pairs:
        raise ValueError(f"{name} must have rotary_dim / 2 = {n_pairs} entries, got {len(values)}")
    return np.array([_number(v, f"{name}[{j}]", above=0.0) for j, v in enumerate(values)])


def _longrope(b, r, p, seq_len):
    """Phi-3: theta_i / ext_i, ext = long_factor when seq_len > L0, else short_factor (HF; seq_len
    None means short). vLLM keeps both tables and switches a whole step to the long one as soon
    as any position in it passes L0, which is the same rule per step."""
    L0 = p.original_max_position_embeddings()
    short, long = _factor_list(p, "short_factor", r // 2), _factor_list(p, "long_factor", r // 2)
    s = p.number("factor", default=None, minimum=1.0)
    if s is None:  # HF: max_position_embeddings / L0
        s = p.max_position_embeddings() / L0
    attention_factor = p.number("attention_factor", default=None, minimum=0.0)
    if attention_factor is None:
        if s <= 1.0:
            attention_factor = 1.0
        elif L0 < 2:
            raise ValueError(f"original_max_position_embeddings must be >= 2 for longrope, got {L0}")
        else:
            attention_factor = math.sqrt(1.0 + math.log(s) / math.log(L0))
    ext = long if (seq_len is not None and seq_len > L0) else short
    return _theta(b, r) / ext, float(attention_factor)


def _llama3_bands(p):
    s = p.factor()
    low = p.number("low_freq_factor", above=0.0)
    high = p.number("high_freq_factor", above=0.0)
    if low >= high:
        raise ValueError(f"{p.where}.low_freq_factor ({low}) must be < {p.where}.high_freq_factor ({high})")
    return s, low, high, p.original_max_position_embeddings()


def _llama3_labels(theta, low, high, L0):
    wavelength = TWO_PI / theta
    return np.where(wavelength < L0 / high, "high", np.where(wavelength > L0 / low, "low", "medium"))


def _llama3(b, r, p, seq_len):
    """Llama 3.1: wavelength < L0/high_freq_factor kept, > L0/low_freq_factor divided by s,
    in between blended by (L0/wavelength - low) / (high - low)."""
    s, low, high, L0 = _llama3_bands(p)
    theta = _theta(b, r)
    smooth = (L0 / (TWO_PI / theta) - low) / (high - low)
    blended = (1.0 - smooth) * theta / s + smooth * theta
    band = _llama3_labels(theta, low, high, L0)
    return np.where(band == "high", theta, np.where(band == "low", theta / s, blended)), 1.0


INV_FREQ = {
    "default": _default,
    "linear": _linear,
    "ntk": _ntk,
    "dynamic": _dynamic,
    "yarn": _yarn,
    "llama3": _llama3,
    "longrope": _longrope,
}
ROPE_TYPES = tuple(INV_FREQ)


def rope_frequencies(config, seq_len=None, *, layer_type=None):
    """(inv_freq, attention_factor) for a config.json dict.

    ``inv_freq`` is float64 of length ``rotary_dim // 2``; ``attention_factor`` multiplies cos and
    sin (YaRN's mscale, longrope's sqrt(1 + ln s / ln L0)), 1.0 for the other types. ``seq_len``
    is the length being served: it drives ``dynamic`` and picks longrope's short or long factors
    (None: HF's init-time behaviour). ``layer_type`` selects a per-layer rope (Gemma 3).
    """
    if seq_len is not None:
        seq_len = _number(seq_len, "seq_len", minimum=1, integer=True)
    params, where, theta_where = _resolve(config, layer_type)
    b = _number(params["rope_theta"], theta_where, above=1.0)
    r = rotary_dim(config, layer_type=layer_type)
    p = _Params(params, where, config)
    try:
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            inv_freq, attention_factor = INV_FREQ[params["rope_type"]](b, r, p, seq_len)
    except (OverflowError, ZeroDivisionError) as err:  # absurd magnitudes: loud, not inf
        raise ValueError(f"{theta_where} = {b} with {where} = {params} overflows: {err}") from None
    inv_freq = np.asarray(inv_freq, dtype=np.float64)
    if not (np.all(np.isfinite(inv_freq)) and np.all(inv_freq > 0) and math.isfinite(attention_factor)):
        raise ValueError(f"{theta_where} = {b} with {where} = {params} gives non-finite or zero "
                         "frequencies; check rope_theta and factor")
    if attention_factor >= float(np.finfo(np.float32).max):
        raise ValueError(f"{where} = {params} gives an attention factor of {attention_factor:g}, "
                         "past float32's maximum 3.4e38 (cos and sin tables are float32); check "
                         "attention_factor and mscale")
    return inv_freq, float(attention_factor)


# ------------------------------------------------------------------------------------------
# Applying RoPE
# ------------------------------------------------------------------------------------------

def _angles(positions, inv_freq):
    """(n, r/2) float64 angles m * theta_i (never formed in float32)."""
    return np.multiply.outer(np.asarray(positions, dtype=np.float64), inv_freq)


def apply_rope(x, positions, inv_freq, *, style="neox", attention_factor=1.0):
    """A rotated copy of ``x`` (..., n, d): pair i of row j turned by positions[j] * inv_freq[i].

    Only the first r = 2 * len(inv_freq) dims turn (and are scaled by ``attention_factor``); the
    tail passes through. ``style="neox"`` pairs dims (i, i + r/2) (HF, vLLM's is_neox_style);
    ``"gptj"`` pairs (2i, 2i + 1). Angles are formed in float64; the result has x's float dtype
    (float32 at least).
    """
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., n, d), got {x.shape}")
    if np.issubdtype(x.dtype, np.number) and not np.isfinite(x).all():
        raise ValueError(f"x holds non-finite values ({int((~np.isfinite(x)).sum())} of "
                         f"{x.size}): NaN or inf would come back rotated, silently")
    inv_freq = np.asarray(inv_freq, dtype=np.float64)
    if inv_freq.ndim != 1 or inv_freq.size == 0 or not np.all(np.isfinite(inv_freq)):
        raise ValueError(f"inv_freq must be a non-empty 1-D array of finite numbers, got shape {inv_freq.shape}")
    n, d = x.shape[-2:]
    h = inv_freq.size
    r = 2 * h
    if r > d:
        raise ValueError(f"inv_freq has {h} pairs (rotary dim {r}) but x has only d = {d} dims")
    positions = np.asarray(positions)
    if positions.ndim == 0 or positions.shape[-1] != n:
        raise ValueError(f"positions must have length n = {n} (x.shape[-2]), got shape {positions.shape}")
    if not np.all(np.isfinite(positions)):
        raise ValueError("positions must be finite")
    if style not in ("neox", "gptj"):
        raise ValueError(f"style must be 'neox' or 'gptj', got {style!r}")
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
    conversion scripts apply); dims r..d-1 stay in place.
    """
    r = _number(r, "r", minimum=2, integer=True)
    if r % 2:
        raise ValueError(f"r must be even, got {r}")
    d = r if d is None else _number(d, "d", minimum=r, integer=True)
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
    3e-7 of a float64 computation. Forming m * theta_i in float32 instead puts errors of about
    1e-2 into cos and sin near m = 131072 (float32 numbers there are 1/64 apart, so the angle of
    pair 0 is off by up to 1/128 rad, and inv_freq's own float32 rounding adds to it).
    """
    inv_freq = np.asarray(inv_freq, dtype=np.float64)
    if inv_freq.ndim != 1 or inv_freq.size == 0 or not np.all(np.isfinite(inv_freq)):
        raise ValueError("inv_freq must be a non-empty 1-D array of finite numbers")
    n = _number(n_positions, "n_positions", minimum=1, integer=True)
    af = _attention_factor(attention_factor)
    h = inv_freq.size
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
    try:
        key = json.dumps(config, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(f"config must be a JSON-serializable dict: {err}") from None
    n = _number(n_positions, "n_positions", minimum=1, integer=True)
    return _cached_table(key, n, layer_type)


# ------------------------------------------------------------------------------------------
# Notebook helpers: small pure functions on inv_freq (radians per position)
# ------------------------------------------------------------------------------------------

def _frequencies(inv_freq):
    """``inv_freq`` as a float64 array of positive finite numbers, or ValueError naming it."""
    theta = np.asarray(inv_freq, dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0 or not (np.isfinite(theta).all() and (theta > 0).all()):
        raise ValueError(f"inv_freq must be a non-empty 1-D array of positive finite numbers, "
                         f"got {np.asarray(inv_freq)!r}")
    return theta


def _attention_factor(value):
    """The factor on cos and sin: a finite number >= 0 that float32 tables can hold."""
    af = _number(value, "attention_factor", minimum=0.0)
    if af >= float(np.finfo(np.float32).max):
        raise ValueError(f"attention_factor must be below float32's maximum 3.4e38 (cos and sin "
                         f"tables are float32), got {value!r}")
    return af


def wavelengths(inv_freq):
    """Positions per full turn of each pair: 2 pi / theta_i."""
    return TWO_PI / _frequencies(inv_freq)


def turns_within(inv_freq, n_positions):
    """Turns each pair completes within ``n_positions`` positions: n / wavelength."""
    return _number(n_positions, "n_positions", minimum=0) / wavelengths(inv_freq)


def largest_trained_angle(inv_freq, n_train):
    """The largest angle each pair reached in training: (n_train - 1) * theta_i."""
    return (n_train - 1) * np.asarray(inv_freq, dtype=np.float64)


def angle_at(inv_freq, position):
    """The angle of each pair at ``position``: position * theta_i (compare with the trained max)."""
    return position * np.asarray(inv_freq, dtype=np.float64)


def pairs_never_turning(inv_freq, n_positions):
    """Indices of the pairs whose wavelength exceeds ``n_positions`` (no full turn in training)."""
    return np.flatnonzero(wavelengths(inv_freq) > _number(n_positions, "n_positions", minimum=1))


def outside_trained_arc(inv_freq, position, n_train):
    """Per pair, True where the angle at ``position`` with its whole turns removed lies beyond the
    arc [0, (n_train - 1) * theta_i] the pair swept in training. Only pairs that never complete a
    turn in training (``pairs_never_turning``) can be True: the others saw every angle."""
    theta = np.asarray(inv_freq, dtype=np.float64)
    n_train = _number(n_train, "n_train", minimum=1, integer=True)
    on_clock = np.mod(angle_at(theta, position), TWO_PI)
    never = np.zeros(theta.shape, dtype=bool)
    never[pairs_never_turning(theta, n_train)] = True
    return never & (on_clock > largest_trained_angle(theta, n_train))


def trained_arc_overshoot(inv_freq, position, n_train, *, trained_inv_freq=None):
    """Radians by which each pair's angle at ``position`` (turning at ``inv_freq``, e.g. after a
    scaling scheme) passes the largest angle the pair reached in training (turning at
    ``trained_inv_freq``, default ``inv_freq``, over ``n_train`` positions). 0 for pairs that
    stay inside, and for pairs that complete a turn in training (they saw every angle)."""
    theta = np.asarray(inv_freq, dtype=np.float64)
    trained = theta if trained_inv_freq is None else np.asarray(trained_inv_freq, dtype=np.float64)
    if trained.shape != theta.shape:
        raise ValueError(f"trained_inv_freq has shape {trained.shape}, inv_freq {theta.shape}")
    n_train = _number(n_train, "n_train", minimum=1, integer=True)
    over = np.maximum(angle_at(theta, position) - largest_trained_angle(trained, n_train), 0.0)
    never = np.zeros(theta.shape, dtype=bool)
    never[pairs_never_turning(trained, n_train)] = True
    return np.where(never, over, 0.0)


def float32_angle_table(inv_freq, n_positions, attention_factor=1.0):
    """(cos, sin) float32 (n_positions, r/2) built the way many engines build theirs: inv_freq,
    the positions and their product m * theta_i all in float32 (vLLM's ``_compute_cos_sin_cache``,
    HF's rotary embedding under float32). Near m = 131072 float32 numbers are 1/64 apart, so the
    angle itself is off by up to 1/128 rad; compare with ``cos_sin_table``, which is not."""
    inv32 = np.asarray(inv_freq, dtype=np.float64).astype(np.float32)
    n = _number(n_positions, "n_positions", minimum=1, integer=True)
    af = np.float32(_attention_factor(attention_factor))
    angles = np.multiply.outer(np.arange(n, dtype=np.float32), inv32)  # (n, r/2) float32
    return np.cos(angles) * af, np.sin(angles) * af


def llama3_regimes(config):
    """Per pair, the llama3 regime: ``"high"`` (wavelength < L0/high_freq_factor: kept),
    ``"low"`` (wavelength > L0/low_freq_factor: divided by s) or ``"medium"`` (blended)."""
    params, where, theta_where = _resolve(config, None)
    if params["rope_type"] != "llama3":
        raise ValueError(f"{where}.rope_type must be 'llama3' for llama3_regimes, got {params['rope_type']!r}")
    b = _number(params["rope_theta"], theta_where, above=1.0)
    p = _Params(params, where, config)
    _, low, high, L0 = _llama3_bands(p)
    return _llama3_labels(_theta(b, rotary_dim(config)), low, high, L0)


_MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                 "model_max_length", "max_sequence_length", "max_seq_length", "seq_len")


def derived_max_model_len(config):
    """The longest context vLLM derives from a config (``_get_and_verify_max_len``): the smallest
    of the length keys, times the rope factor, except that YaRN first resets the length to
    ``original_max_position_embeddings``, llama3 / longrope (/ su) do not multiply (their
    max_position_embeddings is already the extended length), and Gemma 3 is skipped (likewise).
    """
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    lengths = [_number(config[k], k, minimum=1) for k in _MAX_LEN_KEYS if config.get(k) is not None]
    if not lengths:
        raise ValueError(f"config has none of the length keys {', '.join(_MAX_LEN_KEYS)}")
    derived = min(lengths)
    if "gemma3" in str(config.get("model_type", "")):
        return int(derived)
    where, rope = next(((k, config[k]) for k in ("rope_scaling", "rope_parameters") if config.get(k)),
                       (None, None))
    if rope is None:
        return int(derived)
    if not isinstance(rope, dict):
        raise ValueError(f"{where} must be a dict or null, got {rope!r}")
    entries = rope.values() if _is_nested(rope) else [rope]  # transformers 5: one per layer type
    s = 1.0
    for rp in entries:
        if rp is None:
            continue
        rope_type = rp.get("rope_type", rp.get("type", "default"))
        if rope_type not in ("su", "longrope", "llama3"):
            factor = rp.get("factor", s)
            s = 1.0 if factor is None else _number(factor, f"{where}.factor")  # vLLM: null -> 1.0
            if rope_type == "yarn":
                L0 = rp.get("original_max_position_embeddings", config.get("original_max_position_embeddings"))
                derived = _number(L0, f"{where}.original_max_position_embeddings", minimum=1)
    return int(derived * s)
