"""RoPE as a config.json asks for it: the rope parameters, read once into ``ScalingParameters``.

``scaling_parameters(config)`` reads what a rope type reads (HuggingFace transformers'
``modeling_rope_utils.py``, its ``_compute_<type>_parameters`` and
``_validate_<type>_rope_parameters``): the base b (``rope_theta``), the rotary dim r
(``rotary_dim``: ``head_dim`` or ``qk_rope_head_dim`` times ``partial_rotary_factor``), the
factor s, the trained length L0 (``original_max_position_embeddings``), YaRN's betas, band and
attention factor, llama3's bands, longrope's lists; ``rope_parameters(config)`` gives the
standardized rope dict they come from. A config HF only warns about is refused here with a
``ValueError`` naming the key: a key the rope type does not read (``"facter"``, a ``factor``
under ``default``), a factor below 1, beta_fast < beta_slow, a YaRN band that is empty (HF
then builds an inverted ramp), frequencies that overflow (each type's ``INV_FREQ`` rule is
checked at HF's init-time length).

Both layouts are read: transformers 4's top-level ``rope_theta`` with ``rope_scaling``, and
transformers 5's ``rope_parameters`` holding ``rope_theta`` too, possibly nested per layer type
(Gemma 3: ``{"full_attention": {...}, "sliding_attention": {...}}``); so is the legacy ``type``
key for ``rope_type``, and Phi-3's "su" for longrope. Given a ``models.Model``,
``scaling_parameters``, ``rope_parameters`` and ``rotary_dim`` read its config once and keep
the answer (``Model.memo``).

What the engines read of the same keys: vLLM 0.32's served length (``derived_max_model_len``,
``vllm_max_model_len``: ``_get_and_verify_max_len``'s length keys and rope factor), llama.cpp's
command-line flags (``llama_cpp_rope_flags``, common/arg.cpp) and its context parameters for a
``rope_scaling`` dict (``llama_cpp_rope_arguments``, llama.h). ``lessonlib.rope`` computes
from ``ScalingParameters`` (tables, rotations, the notebooks' per-pair readings) and
re-exports every name here.
"""
import copy
import math
from dataclasses import dataclass, replace

import numpy as np

from .. import _validate as check
from . import Model

__all__ = [
    "ROPE_TYPES", "INV_FREQ", "DEFAULT_THETA", "YARN_BETA_FAST", "YARN_BETA_SLOW",
    "ScalingParameters", "scaling_parameters", "rope_parameters", "rotary_dim", "rope_theta",
    "max_position_embeddings", "ntk_base",
    "yarn_mscale", "yarn_correction_dim", "yarn_correction_range", "yarn_ramp",
    "llama3_regimes", "derived_max_model_len", "vllm_max_model_len", "llama_cpp_rope_flags",
    "llama_cpp_rope_arguments",
]

TWO_PI = 2.0 * math.pi
DEFAULT_THETA = 10_000.0  # the RoPE paper's base; HF's default_theta when a config omits rope_theta
YARN_BETA_FAST, YARN_BETA_SLOW = 32.0, 1.0  # YaRN paper defaults (HF: `beta_fast or 32`)
_TYPE_ALIASES = {"su": "longrope"}  # Phi-3's first releases called longrope "su"
_REQUIRED = object()
_MAX_HEAD_DIM = 1 << 16  # a sanity bound: real heads are <= 512 wide; beyond this a config is corrupt
_MAX_POSITIONS = 1 << 53  # float64 holds every integer up to 2^53: past it positions are not distinct
_FLOAT32_TINY = float(np.finfo(np.float32).tiny)  # 1.2e-38, float32's smallest normal number
_FLOAT32_MAX = float(np.finfo(np.float32).max)  # 3.4e38
_LAYER_TYPES = ("full_attention", "sliding_attention")  # every config has these two names

# The keys each rope type reads, beyond these common ones: HF 5.23's _validate_<type>_rope_parameters
# (required and optional keys; _check_received_keys adds partial_rotary_factor and the legacy type).
# HF warns about any other key and drops it; here it is an error ("facter" beside "factor").
_COMMON_KEYS = ("rope_type", "type", "rope_theta", "partial_rotary_factor")
_YARN_KEYS = ("factor", "original_max_position_embeddings", "attention_factor", "beta_fast",
              "beta_slow", "mscale", "mscale_all_dim", "truncate")
_READS = {
    "default": (),
    "linear": ("factor",),
    "ntk": ("factor",),  # not in HF: the fixed NTK-aware base reads only the factor
    "dynamic": ("factor",),
    "yarn": _YARN_KEYS,
    "llama3": ("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
    "longrope": ("short_factor", "long_factor", "original_max_position_embeddings",
                 "attention_factor", "factor"),
}



# ------------------------------------------------------------------------------------------
# Checks built on lessonlib._validate (one vocabulary), for what this module adds to it
# ------------------------------------------------------------------------------------------

def _real(name, value, **bounds):
    """``check.real``, and an int too large for a float is an error naming ``name`` too."""
    try:
        return check.real(name, value, **bounds)
    except OverflowError:
        raise ValueError(f"{name} must be a finite real number, got an integer too large for "
                         f"float64 ({check.describe(value)})") from None


def _length(name, value, minimum=1):
    """A position count or context length: an int in [minimum, 2^53] (float64 angles m * theta
    tell positions apart only up to 2^53)."""
    return check.integer(name, value, minimum=minimum, maximum=_MAX_POSITIONS)


def _rotary(name, value, minimum=2):
    """An even rotary dim r >= minimum (dims turn in pairs)."""
    r = check.integer(name, value, minimum=minimum, maximum=_MAX_HEAD_DIM)
    if r % 2:
        raise ValueError(f"{name} must be even (dims pair up), got {r}")
    return r



def _require_dict(config):
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict (a parsed config.json), got {check.describe(config)}")


# ------------------------------------------------------------------------------------------
# Reading a config: one place for the key lookup, the layouts and the head-dim arithmetic
# ------------------------------------------------------------------------------------------

class _Params:
    """The resolved rope parameters of one layer, and where they came from (for error messages)."""

    def __init__(self, params, where, config, theta_where="rope_theta"):
        self.params, self.where, self.config, self.theta_where = params, where, config, theta_where
        self.l0_name = f"{where}.original_max_position_embeddings"

    def _get(self, key, default):
        value = self.params.get(key)
        if value is None and default is _REQUIRED:
            raise ValueError(f"{self.where}.{key} is required for rope_type "
                             f"{self.params.get('rope_type')!r} but is missing")
        return value

    def real(self, key, default=_REQUIRED, **bounds):
        value = self._get(key, default)
        return default if value is None else _real(f"{self.where}.{key}", value, **bounds)

    def flag(self, key, default):
        value = self.params.get(key, default)
        return check.flag(f"{self.where}.{key}", value)

    def factor(self):
        return self.real("factor", minimum=1.0)

    def max_position_embeddings(self):
        value = self.config.get("max_position_embeddings")
        if value is None:
            raise ValueError("max_position_embeddings is required for rope_type "
                             f"{self.params.get('rope_type')!r} but is missing")
        return _length("max_position_embeddings", value)

    def original_max_position_embeddings(self):
        """L0. A top-level key wins over the rope dict's (Phi-3 stores it there; HF does the same).

        Unlike HF, a config that has neither is an error, not a silent L0 = max_position_embeddings.
        """
        if self.config.get("original_max_position_embeddings") is not None:
            self.l0_name = "original_max_position_embeddings"
            return _length(self.l0_name, self.config["original_max_position_embeddings"])
        self._get("original_max_position_embeddings", _REQUIRED)
        return _length(self.l0_name, self.params["original_max_position_embeddings"])


def _is_nested(rope_dict):
    """transformers 5 nests rope parameters per layer type: every value is a dict (or None)."""
    return bool(rope_dict) and all(v is None or isinstance(v, dict) for v in rope_dict.values())


def _check_flat_layer_type(config, layer_type):
    """A config without per-layer rope_parameters has one rope for every layer, so any of its
    layer types reads it: 'full_attention', 'sliding_attention' or an entry of its layer_types.
    Another name (a typo) was read as that rope, silently."""
    known = list(_LAYER_TYPES)
    for where in (config, config.get("text_config")):
        listed = where.get("layer_types") if isinstance(where, dict) else None
        if isinstance(listed, (list, tuple)):
            known += [t for t in listed if isinstance(t, str) and t not in known]
    if layer_type not in known:
        raise ValueError(f"layer_type {layer_type!r} is not a layer type of this config: it has "
                         "no per-layer rope_parameters, so one rope serves every layer, and "
                         f"layer_type may be None or one of {', '.join(map(repr, known))}")


def _once(config, key, read):
    """``read(config)``; given a ``Model``, ``read(dict(model))`` once, kept under ``key``
    (``Model.memo``: the plain dict keeps the readers from asking the Model again). ``key`` ends
    with the layer type: one that is not a string is read each time (and refused by name)."""
    if not isinstance(config, Model):
        return read(config)
    if key[-1] is not None and not isinstance(key[-1], str):
        return read(dict(config))
    return config.memo(key, lambda: read(dict(config)))


def _rope_section(config, layer_type):
    """(parameters dict, name for messages) of the layer type's rope, from either layout."""
    _require_dict(config)
    if layer_type is not None:
        check.text("layer_type", layer_type)
    sections = {}
    for key in ("rope_scaling", "rope_parameters"):
        value = config.get(key)
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"{key} must be a dict or null, got {check.describe(value)}")
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
    if layer_type is not None:
        _check_flat_layer_type(config, layer_type)
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


def _rope_type(params, where):
    """The standardized rope type of a rope dict (legacy ``type``, "su" read as longrope), after
    checking that every key is one that type reads."""
    rope_type, legacy = params.get("rope_type"), params.get("type")
    if rope_type is not None and legacy is not None and rope_type != legacy:
        raise ValueError(f"{where}.rope_type = {rope_type!r} disagrees with {where}.type = {legacy!r}")
    rope_type = rope_type if rope_type is not None else (legacy if legacy is not None else "default")
    check.text(f"{where}.rope_type", rope_type)
    rope_type = _TYPE_ALIASES.get(rope_type, rope_type)
    if rope_type not in INV_FREQ:
        raise ValueError(f"{where}.rope_type {rope_type!r} is unknown; known: {', '.join(ROPE_TYPES)}")
    allowed = _COMMON_KEYS + _READS[rope_type]
    try:
        check.known_keys(where, params, allowed)
    except ValueError as err:
        key = sorted(str(k) for k in params if k not in allowed)[0]  # the one known_keys names
        readers = [t for t in ROPE_TYPES if key in _READS[t]]
        hint = f"; {key} is read by rope_type {', '.join(readers)}" if readers else ""
        raise ValueError(f"{err} [rope_type {rope_type!r}{hint}: HuggingFace warns and drops a "
                         "key its rope type does not read, so it silently changes nothing]") from None
    return rope_type


def _resolve(config, layer_type):
    """(standardized parameters, name of their section, name of rope_theta's source)."""
    params, where = _rope_section(config, layer_type)
    rope_type = _rope_type(params, where)
    params.pop("type", None)
    params["rope_type"] = rope_type
    # transformers 5 keeps rope_theta inside the rope dict; transformers 4 at the top level
    if params.get("rope_theta") is not None:
        theta_where = where if where == "rope_local_base_freq" else f"{where}.rope_theta"
        theta = params["rope_theta"]
    else:
        theta_where, theta = "rope_theta", config.get("rope_theta")
    params["rope_theta"] = DEFAULT_THETA if theta is None else theta
    _real(theta_where, params["rope_theta"], above=1.0)
    if params.get("partial_rotary_factor") is not None:
        prf_where, prf = f"{where}.partial_rotary_factor", params["partial_rotary_factor"]
    else:
        prf_where, prf = "partial_rotary_factor", config.get("partial_rotary_factor")
    params["partial_rotary_factor"] = 1.0 if prf is None else prf
    _real(prf_where, params["partial_rotary_factor"], above=0.0, maximum=1.0)
    return params, where, theta_where


def rope_parameters(config, *, layer_type=None):
    """The rope parameters a config asks for, standardized: a dict with ``rope_type`` (legacy
    ``type`` accepted, Phi-3's "su" read as "longrope"), ``rope_theta`` (10,000 when absent) and
    ``partial_rotary_factor`` (1.0 when absent) always present, plus the type's own keys.
    ``layer_type`` picks a per-layer entry (Gemma 3's ``"sliding_attention"``);
    the default is ``"full_attention"``. A key the type does not read, an unknown type, a
    rope_theta <= 1 or a partial_rotary_factor outside (0, 1] is an error naming the key.
    Given a ``Model``, its config is read once; each call returns a fresh copy.
    """
    params = _once(config, ("rope_parameters", layer_type), lambda c: _resolve(c, layer_type)[0])
    return copy.deepcopy(params) if isinstance(config, Model) else params


def rope_theta(config, *, layer_type=None):
    """b, the base of the layer type's rope (``rope_parameters``' ``rope_theta``: the rope
    dict's, else the top-level key, else 10,000), as a float > 1; errors as
    ``rope_parameters``."""
    params, _, theta_where = _resolve(config, layer_type)
    return _real(theta_where, params["rope_theta"], above=1.0)


def max_position_embeddings(config):
    """The config's ``max_position_embeddings`` as an int in [1, 2^53]: the length its checkpoint
    serves (for YaRN, llama3 and longrope already the extended one, not L0; dynamic's Lmax).
    Missing or null is an error naming the key."""
    _require_dict(config)
    if config.get("max_position_embeddings") is None:
        raise ValueError("config is missing 'max_position_embeddings'")
    return _length("max_position_embeddings", config["max_position_embeddings"])


def rotary_dim(config, *, layer_type=None):
    """r, the number of leading head dims RoPE rotates: ``int(d_h * partial_rotary_factor)``.

    d_h is ``qk_rope_head_dim`` for MLA models (DeepSeek: only that slice carries position),
    else ``head_dim``, else ``hidden_size // num_attention_heads``. This is the only place the
    head-dim arithmetic lives. Given a ``Model``, its config is read once.
    """
    return _once(config, ("rotary_dim", layer_type), lambda c: _rotary_dim(c, layer_type))


def _rotary_dim(config, layer_type):
    _require_dict(config)
    for key in ("qk_rope_head_dim", "head_dim"):
        if config.get(key) is not None:
            d_h, source = check.integer(key, config[key], minimum=1), key
            break
    else:
        if config.get("hidden_size") is None or config.get("num_attention_heads") is None:
            raise ValueError("config needs head_dim, or hidden_size and num_attention_heads")
        hidden = check.integer("hidden_size", config["hidden_size"], minimum=1)
        heads = check.integer("num_attention_heads", config["num_attention_heads"], minimum=1)
        if hidden % heads:
            raise ValueError(f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}; "
                             "give head_dim")
        d_h, source = hidden // heads, "hidden_size / num_attention_heads"
    if d_h > _MAX_HEAD_DIM:
        raise ValueError(f"{source} = {d_h} is not a plausible head dimension (> {_MAX_HEAD_DIM})")
    prf = float(rope_parameters(config, layer_type=layer_type)["partial_rotary_factor"])
    r = int(d_h * prf)
    if r < 2 or r % 2:
        name = "partial_rotary_factor" if prf != 1.0 else source
        raise ValueError(f"the rotary dim must be even and >= 2, got {r} = int({d_h} * {prf}) "
                         f"(check {name})")
    return r


# ------------------------------------------------------------------------------------------
# One pair of functions per rope type: _READ[type](b, r, p) -> the keys it reads, checked (the
# fields of ScalingParameters); INV_FREQ[type](sp, seq_len) -> inv_freq float64 (r/2,)
# ------------------------------------------------------------------------------------------

def _theta(b, r):
    """theta_i = b^(-2i/r), i = 0 .. r/2 - 1  (float64)."""
    return 1.0 / b ** (np.arange(0, r, 2, dtype=np.float64) / r)


def _read_default(b, r, p):
    return {}


def _default(sp, seq_len):
    return _theta(sp.base, sp.rotary_dim)


def _read_factor(b, r, p):
    return dict(factor=p.factor())


def _linear(sp, seq_len):
    return _theta(sp.base, sp.rotary_dim) / sp.factor  # PI: position m is read as m / s


def ntk_base(b, s, r):
    """The fixed NTK-aware base b' = b * s^(r/(r-2)): pair 0 keeps its speed, the last pair
    (i = r/2 - 1) is slowed by exactly s, pair i by s^(2i/(r-2)). Arguments are named by their
    config keys: b is rope_theta (> 1), s the factor (>= 1), r the rotary_dim (even, >= 4)."""
    b = _real("rope_theta", b, above=1.0)
    s = _real("factor", s, minimum=1.0)
    r = _rotary("rotary_dim", r, minimum=4)
    try:
        b_new = b * s ** (r / (r - 2))
    except OverflowError:  # float ** raises where float * returns inf
        b_new = math.inf
    if not math.isfinite(b_new):
        raise ValueError(f"the NTK-aware base rope_theta * factor^(r/(r-2)) = {b:g} * "
                         f"{s:g}^{r / (r - 2):.4g} overflows float64 (max 1.8e308): rope_theta "
                         "and factor are too large together")
    return b_new


def _require_r_above_2(r, p):
    if r <= 2:
        raise ValueError(f"{p.params['rope_type']} scaling needs a rotary dim > 2, got {r} "
                         "(b * s^(r/(r-2)) is undefined at r = 2): check head_dim and "
                         "partial_rotary_factor")


def _read_ntk(b, r, p):
    _require_r_above_2(r, p)
    return dict(factor=p.factor())


def _ntk(sp, seq_len):
    return _theta(ntk_base(sp.base, sp.factor, sp.rotary_dim), sp.rotary_dim)


def _read_dynamic(b, r, p):
    """HF's dynamic rule reads max_position_embeddings as the trained length Lmax = L0."""
    _require_r_above_2(r, p)
    s, l_max = p.factor(), p.max_position_embeddings()
    return dict(factor=s, original_max=l_max, original_max_key="max_position_embeddings",
                max_position_embeddings=l_max)


def _dynamic(sp, seq_len):
    """HF's dynamic NTK: L = max(seq_len, Lmax) (Lmax when seq_len is None)."""
    b, r, s, l_max = sp.base, sp.rotary_dim, sp.factor, sp.max_position_embeddings
    L = l_max if seq_len is None else max(seq_len, l_max)
    try:
        b_new = b * ((s * L / l_max) - (s - 1)) ** (r / (r - 2))
    except OverflowError:
        b_new = math.inf
    if not math.isfinite(b_new):
        raise ValueError(f"{sp.theta_key} = {b:g} with {sp.section}.factor = {s:g} at seq_len {L} "
                         "overflows the dynamic base b * (s L / Lmax - (s - 1))^(r/(r-2)): "
                         "check rope_theta and factor")
    return _theta(b_new, r)


def yarn_mscale(s, mscale=1.0):
    """YaRN's attention factor mu = 0.1 * mscale * ln(s) + 1 (1 for s <= 1). Both cos and sin are
    multiplied by it, so rotary scores scale by mu^2 (1.2079 and 1.459 at s = 8). s is named as
    the config key ``factor``."""
    s = _real("factor", s, above=0.0)
    mscale = _real("mscale", mscale)
    return 1.0 if s <= 1 else 0.1 * mscale * math.log(s) + 1.0


def _correction_dim(n, n_name, r, b, L0, l0_name):
    """r ln(L0 / (2 pi n)) / (2 ln b), or ValueError naming n when 2 pi n overflows (HF's
    math.log then fails with 'math domain error') or L0 / (2 pi n) does (n tiny)."""
    turn_length = n * TWO_PI  # positions per n turns of pair 0
    ratio = L0 / turn_length if math.isfinite(turn_length) else math.nan
    if not (math.isfinite(ratio) and ratio > 0.0):
        why = (f"2 pi {n_name} overflows float64" if not math.isfinite(turn_length) else
               f"L0 / (2 pi {n_name}) with {l0_name} = {L0} is {ratio!r}, not a positive float64")
        raise ValueError(f"{n_name} = {n!r} is out of range for YaRN's correction dim "
                         f"r ln(L0 / (2 pi {n_name})) / (2 ln b): {why}")
    return r * math.log(ratio) / (2.0 * math.log(b))


def yarn_correction_dim(n_rotations, r, b, L0):
    """The (fractional) pair index whose frequency completes ``n_rotations`` turns in L0
    positions: r * ln(L0 / (2 pi n)) / (2 ln b)  (YaRN; ggml's ggml_rope_yarn_corr_dim).
    r is the rotary_dim (even), b the rope_theta, L0 the original_max_position_embeddings."""
    n = _real("n_rotations", n_rotations, above=0.0)
    r = _rotary("rotary_dim", r)
    b = _real("rope_theta", b, above=1.0)
    L0 = _length("original_max_position_embeddings", L0)
    return _correction_dim(n, "n_rotations", r, b, L0, "original_max_position_embeddings")


_BAND_NAMES = ("beta_fast", "beta_slow", "original_max_position_embeddings", "rope_theta")


def _correction_range(beta_fast, beta_slow, r, b, L0, truncate, names=_BAND_NAMES):
    """HF's find_correction_range (floor/ceil if truncate, clamp to [0, r - 1]) on checked
    numbers; an empty band (low > high after the clamp) is an error naming the keys."""
    fast_name, slow_name, l0_name, theta_name = names
    if beta_fast < beta_slow:
        raise ValueError(f"{fast_name} must be >= {slow_name} (fast pairs turn more often), got "
                         f"{fast_name}={beta_fast!r}, {slow_name}={beta_slow!r}")
    low = _correction_dim(beta_fast, fast_name, r, b, L0, l0_name)
    high = _correction_dim(beta_slow, slow_name, r, b, L0, l0_name)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    band = max(low, 0), min(high, r - 1)
    if band[0] > band[1]:
        raise ValueError(_empty_band(band, low, high, beta_fast, beta_slow, r, b, L0, truncate, names))
    return band


def _empty_band(band, low, high, beta_fast, beta_slow, r, b, L0, truncate, names):
    """Why (low, high) came out inverted, and where the boundary lies (the evidence that HF's
    inverted ramp is no YaRN: one position of L0 across it flips every pair to the other side)."""
    fast_name, slow_name, l0_name, theta_name = names
    if high < 0:  # even pair 0 (wavelength 2 pi) turns fewer than beta_slow times in L0
        rel, bound = ("<=", TWO_PI * beta_slow * b ** (-2.0 / r)) if truncate else ("<", TWO_PI * beta_slow)
        why = (f"{l0_name} = {L0} is so short that even pair 0 (wavelength 2 pi) turns fewer than "
               f"{slow_name} = {beta_slow:g} times in it ({l0_name} {rel} {bound:.6g} here), so "
               "every pair should be divided by s")
        fix = f"raise {l0_name} or lower {slow_name}"
    else:  # every pair turns more than beta_fast times in L0: low lies past the clamp r - 1
        with np.errstate(over="ignore"):
            exponent = 2.0 if truncate else 2.0 * (r - 1) / r
            bound = TWO_PI * beta_fast * float(np.float64(b) ** exponent)
        rel = ">=" if truncate else ">"
        why = (f"{l0_name} = {L0} is so long for {theta_name} = {b:g} that every pair turns more "
               f"than {fast_name} = {beta_fast:g} times in it ({l0_name} {rel} {bound:.6g} here), "
               "so every pair should keep its speed")
        fix = f"lower {l0_name} or raise {fast_name}"
    return (f"YaRN's band is empty: {why}, yet the correction range (low, high) = ({band[0]:g}, "
            f"{band[1]:g}) is inverted (low > high after clamping to [0, r - 1 = {r - 1}]; "
            f"unclamped ({low:g}, {high:g})). HuggingFace and vLLM would build an inverted ramp "
            "from it that does the opposite, and llama.cpp yet another; "
            f"{fix} ({fast_name}, {slow_name} and {l0_name} set the band)")


def yarn_correction_range(beta_fast, beta_slow, r, b, L0, truncate=True):
    """(low, high): pairs below ``low`` keep their frequency, pairs above ``high`` are divided by
    s. ``truncate`` floors/ceils the ends (HF's default; gpt-oss ships ``truncate: false``).
    Clamped to [0, r - 1] as HF does. beta_fast >= beta_slow > 0; r is the even rotary_dim, b the
    rope_theta, L0 the original_max_position_embeddings. A config whose band is empty (L0 too
    short for pair 0 to turn beta_slow times, or so long that every pair turns beta_fast times:
    low > high after the clamp) is an error: HF would build an inverted ramp from it."""
    truncate = check.flag("truncate", truncate)
    beta_fast = _real("beta_fast", beta_fast, above=0.0)
    beta_slow = _real("beta_slow", beta_slow, above=0.0)
    r = _rotary("rotary_dim", r)
    b = _real("rope_theta", b, above=1.0)
    L0 = _length("original_max_position_embeddings", L0)
    return _correction_range(beta_fast, beta_slow, r, b, L0, truncate)


def yarn_ramp(low, high, n_pairs):
    """YaRN's ramp per pair: 1 = frequency kept, 0 = divided by s, linear in between.
    (It is 1 - HF's ``linear_ramp_factor``; equal ends get HF's +0.001 to avoid 0/0.)
    ``low <= high``, as ``yarn_correction_range`` returns them: an inverted band is an error."""
    low, high = _real("low", low), _real("high", high)
    n_pairs = check.integer("n_pairs", n_pairs, minimum=1, maximum=_MAX_HEAD_DIM)
    if low > high:
        raise ValueError(f"low must be <= high (pairs below low keep their speed, pairs above high "
                         f"are divided by s), got low={low:g} > high={high:g}: an inverted band "
                         "ramps the wrong way")
    if low == high:
        high += 0.001  # prevent the singularity, as HF and ggml do
    y = (np.arange(n_pairs, dtype=np.float64) - low) / (high - low)
    return 1.0 - np.clip(y, 0.0, 1.0)


def _read_yarn(b, r, p):
    s = p.real("factor", default=None)
    L0 = p.original_max_position_embeddings()
    l_max = None
    if s is None:  # HF: a null factor means max_position_embeddings / L0
        if "factor" not in p.params:
            raise ValueError(f"{p.where}.factor is required for rope_type 'yarn' but is missing")
        l_max = p.max_position_embeddings()
        s = l_max / L0
    if s < 1:
        raise ValueError(f"{p.where}.factor must be >= 1, got {s}")
    attention_factor = p.real("attention_factor", default=None, above=0.0)  # 0 zeroes the table
    mscale = p.real("mscale", default=None)
    mscale_all_dim = p.real("mscale_all_dim", default=None)
    if attention_factor is None:
        if mscale and mscale_all_dim:  # DeepSeek: the ratio of two mscales (1.0 when they match)
            denominator = yarn_mscale(s, mscale_all_dim)
            if denominator == 0:
                raise ValueError(f"{p.where}.mscale_all_dim = {mscale_all_dim} makes "
                                 f"0.1 * mscale_all_dim * ln(factor) + 1 zero: the attention "
                                 "factor mscale / mscale_all_dim divides by it")
            attention_factor = yarn_mscale(s, mscale) / denominator
        else:
            attention_factor = yarn_mscale(s)
        if not attention_factor > 0:
            raise ValueError(f"{p.where}.mscale = {mscale!r} and {p.where}.mscale_all_dim = "
                             f"{mscale_all_dim!r} give an attention factor of "
                             f"{attention_factor:g} = (0.1 mscale ln s + 1) / (0.1 mscale_all_dim "
                             f"ln s + 1) at factor s = {s:g}; it multiplies cos and sin, so it "
                             "must be > 0 (0 zeroes every rotary score, a negative one flips them)")
    beta_fast = p.real("beta_fast", default=None, minimum=0.0) or YARN_BETA_FAST  # HF: `or 32`
    beta_slow = p.real("beta_slow", default=None, minimum=0.0) or YARN_BETA_SLOW
    truncate = p.flag("truncate", True)
    names = (f"{p.where}.beta_fast", f"{p.where}.beta_slow", p.l0_name, p.theta_where)
    band = _correction_range(beta_fast, beta_slow, r, b, L0, truncate, names)
    return dict(factor=s, original_max=L0, original_max_key=p.l0_name,
                max_position_embeddings=l_max, attention_factor=float(attention_factor),
                beta_fast=beta_fast, beta_slow=beta_slow, mscale=mscale,
                mscale_all_dim=mscale_all_dim, truncate=truncate, yarn_band=band)


def _yarn(sp, seq_len):
    theta, s = _theta(sp.base, sp.rotary_dim), sp.factor
    keep = yarn_ramp(*sp.yarn_band, sp.rotary_dim // 2)  # 1: extrapolate (unchanged), 0: / s
    return theta / s * (1.0 - keep) + theta * keep


def _factor_list(p, key, n_pairs):
    values = p.params.get(key)
    name = f"{p.where}.{key}"
    if values is None:
        raise ValueError(f"{name} is required for rope_type 'longrope' but is missing")
    if not isinstance(values, (list, tuple)):
        raise ValueError(f"{name} must be a list of numbers, got {check.describe(values)}")
    if len(values) != n_pairs:
        raise ValueError(f"{name} must have rotary_dim / 2 = {n_pairs} entries, got {len(values)}")
    return np.array([_real(f"{name}[{j}]", v, above=0.0) for j, v in enumerate(values)])


def _read_longrope(b, r, p):
    L0 = p.original_max_position_embeddings()
    short, long = _factor_list(p, "short_factor", r // 2), _factor_list(p, "long_factor", r // 2)
    s = p.real("factor", default=None, minimum=1.0)
    l_max = None
    if s is None:  # HF: max_position_embeddings / L0
        l_max = p.max_position_embeddings()
        s = l_max / L0
    attention_factor = p.real("attention_factor", default=None, above=0.0)  # 0 zeroes the table
    if attention_factor is None:
        if s <= 1.0:
            attention_factor = 1.0
        elif L0 < 2:
            raise ValueError(f"{p.l0_name} must be >= 2 for longrope, got {L0}")
        else:
            attention_factor = math.sqrt(1.0 + math.log(s) / math.log(L0))
    return dict(factor=s, original_max=L0, original_max_key=p.l0_name,
                max_position_embeddings=l_max, attention_factor=float(attention_factor),
                short_factor=tuple(short.tolist()), long_factor=tuple(long.tolist()))


def _longrope(sp, seq_len):
    """Phi-3: theta_i / ext_i, ext = long_factor when seq_len > L0, else short_factor (HF's rule,
    re-applied on every forward; seq_len None means short). vLLM instead chooses once, at start-up:
    long factors for every request when its max_model_len exceeds L0 (pass that length as
    seq_len to get vLLM's table)."""
    long = seq_len is not None and seq_len > sp.original_max
    ext = np.array(sp.long_factor if long else sp.short_factor, dtype=np.float64)
    return _theta(sp.base, sp.rotary_dim) / ext


def _llama3_bands(p):
    s = p.factor()
    low = p.real("low_freq_factor", above=0.0)
    high = p.real("high_freq_factor", above=0.0)
    if low >= high:
        raise ValueError(f"{p.where}.low_freq_factor ({low}) must be < {p.where}.high_freq_factor ({high})")
    return s, low, high, p.original_max_position_embeddings()


def _llama3_labels(theta, low, high, L0):
    wavelength = TWO_PI / theta
    return np.where(wavelength < L0 / high, "high", np.where(wavelength > L0 / low, "low", "medium"))


def _read_llama3(b, r, p):
    s, low, high, L0 = _llama3_bands(p)
    return dict(factor=s, original_max=L0, original_max_key=p.l0_name, low_freq_factor=low,
                high_freq_factor=high)


def _llama3(sp, seq_len):
    """Llama 3.1: wavelength < L0/high_freq_factor kept, > L0/low_freq_factor divided by s,
    in between blended by (L0/wavelength - low) / (high - low)."""
    s, L0 = sp.factor, sp.original_max
    low, high = sp.low_freq_factor, sp.high_freq_factor
    theta = _theta(sp.base, sp.rotary_dim)
    smooth = (L0 / (TWO_PI / theta) - low) / (high - low)
    blended = (1.0 - smooth) * theta / s + smooth * theta
    band = _llama3_labels(theta, low, high, L0)
    return np.where(band == "high", theta, np.where(band == "low", theta / s, blended))


_READ = {
    "default": _read_default,
    "linear": _read_factor,
    "ntk": _read_ntk,
    "dynamic": _read_dynamic,
    "yarn": _read_yarn,
    "llama3": _read_llama3,
    "longrope": _read_longrope,
}
INV_FREQ = {
    "default": _default,
    "linear": _linear,
    "ntk": _ntk,
    "dynamic": _dynamic,
    "yarn": _yarn,
    "llama3": _llama3,
    "longrope": _longrope,
}
"""The dispatch dict: rope type -> the function computing (inv_freq, attention_factor) for that
type from checked parameters."""
ROPE_TYPES = tuple(INV_FREQ)
"""The rope types read here: ("default", "linear", "ntk", "dynamic", "yarn", "llama3",
"longrope"); Phi-3's "su" is read as "longrope"."""


@dataclass(frozen=True)
class ScalingParameters:
    """What a config's RoPE rule reads, checked and resolved: ``scaling_parameters``' answer.

    The values ``rope_frequencies`` computes with, after HF's defaults and rules (``beta_fast or
    32``, a null YaRN or longrope factor read as max_position_embeddings / L0, the attention
    factor from mscale or from s and L0). A field the rope type does not read is None. Widgets,
    checks and notebooks take L0, s and the betas from here, never from the config's keys.

    rope_type        standardized: the legacy ``type`` read, Phi-3's "su" as "longrope"
    base             b, ``rope_theta`` (10,000 when the config has none, as HF)
    rotary_dim       r, the leading head dims RoPE turns (``rotary_dim``)
    factor           s (1.0 for default)
    original_max     L0, the trained length the rule scales from, read from
                     ``original_max_key`` (dynamic reads ``max_position_embeddings``)
    max_position_embeddings   where read: dynamic; a null YaRN or longrope factor is
                     max_position_embeddings / L0
    attention_factor on cos and sin: YaRN's mscale, longrope's sqrt(1 + ln s / ln L0)
    beta_fast, beta_slow   YaRN's band ends, in turns within L0 (HF's ``or 32``, ``or 1``)
    mscale, mscale_all_dim   YaRN's, as the config gives them (DeepSeek)
    truncate         YaRN: floor/ceil the band's ends (default True)
    yarn_band        YaRN's (low, high), ``yarn_correction_range`` of the fields above
    low_freq_factor, high_freq_factor   llama3's
    short_factor, long_factor   longrope's r/2 per-pair divisors for seq_len <= L0 and above
    section, theta_key   where the rope dict and the base were read, for messages
    """
    rope_type: str  # standardized: the legacy ``type`` read, Phi-3's "su" as "longrope"
    base: float  # b, rope_theta (10,000 when the config has none, as HF)
    rotary_dim: int  # r, the leading head dims RoPE turns (``rotary_dim``)
    factor: float = 1.0  # s (1.0 for default)
    original_max: int | None = None  # L0, the trained length the rule scales from: see original_max_key
    original_max_key: str | None = None  # the key L0 was read from (dynamic: max_position_embeddings)
    max_position_embeddings: int | None = None  # Lmax where read: dynamic; yarn, longrope: null s
    attention_factor: float = 1.0  # on cos and sin: YaRN's mscale, longrope's sqrt(1 + ln s / ln L0)
    beta_fast: float | None = None  # yarn: the band's ends, in turns within L0 (HF: `or 32`)
    beta_slow: float | None = None  # yarn (HF: `or 1`)
    mscale: float | None = None  # yarn, as the config gives it (DeepSeek)
    mscale_all_dim: float | None = None  # yarn, as given
    truncate: bool | None = None  # yarn: floor/ceil the band's ends (default True)
    yarn_band: tuple | None = None  # yarn: (low, high), ``yarn_correction_range`` of the fields above
    low_freq_factor: float | None = None  # llama3
    high_freq_factor: float | None = None  # llama3
    short_factor: tuple | None = None  # longrope: r/2 per-pair divisors for seq_len <= L0
    long_factor: tuple | None = None  # longrope: for seq_len > L0
    section: str = "rope_scaling"  # where the rope dict was read, for messages
    theta_key: str = "rope_theta"  # where the base was read, for messages


def _overflow(sp, params, err):
    return ValueError(f"{sp.theta_key} = {sp.base} with {sp.section} = {params} overflows: {err}")


def _scaling(config, layer_type):
    """(ScalingParameters, the standardized rope dict for messages): every key checked. A
    ``Model``'s is read once; its frequencies are not checked here (``rope_frequencies`` checks
    them at the length it serves)."""
    return _once(config, ("scaling.read", layer_type), lambda c: _read_scaling(c, layer_type))


def _read_scaling(config, layer_type):
    params, where, theta_where = _resolve(config, layer_type)
    b = _real(theta_where, params["rope_theta"], above=1.0)
    r = rotary_dim(config, layer_type=layer_type)
    p = _Params(params, where, config, theta_where)
    sp = ScalingParameters(rope_type=params["rope_type"], base=b, rotary_dim=r, section=where,
                           theta_key=theta_where)
    try:
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            fields = _READ[params["rope_type"]](b, r, p)
    except (OverflowError, ZeroDivisionError) as err:  # absurd magnitudes: loud, not inf
        raise _overflow(sp, params, err) from None
    return replace(sp, **fields), params


def _inv_freq(sp, params, seq_len):
    """(inv_freq, attention_factor) from checked parameters; magnitudes that overflow are named."""
    try:
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            inv_freq = INV_FREQ[sp.rope_type](sp, seq_len)
    except (OverflowError, ZeroDivisionError) as err:
        raise _overflow(sp, params, err) from None
    inv_freq, attention_factor = np.asarray(inv_freq, dtype=np.float64), sp.attention_factor
    where = sp.section
    if not (np.all(np.isfinite(inv_freq)) and np.all(inv_freq > 0) and math.isfinite(attention_factor)):
        raise ValueError(f"{sp.theta_key} = {sp.base} with {where} = {params} gives non-finite or "
                         "zero frequencies; check rope_theta and factor")
    if attention_factor >= _FLOAT32_MAX:
        raise ValueError(f"{where} = {params} gives an attention factor of {attention_factor:g}, "
                         "past float32's maximum 3.4e38 (cos and sin tables are float32); check "
                         f"{where}.attention_factor, {where}.mscale and {where}.mscale_all_dim")
    if attention_factor < _FLOAT32_TINY:
        raise ValueError(f"{where} = {params} gives an attention factor of {attention_factor:g}, "
                         "below float32's smallest normal number 1.2e-38: the float32 cos and sin "
                         "tables would underflow to 0 and zero every rotary score; check "
                         f"{where}.attention_factor, {where}.mscale and {where}.mscale_all_dim")
    return inv_freq, float(attention_factor)


def scaling_parameters(config, *, layer_type=None):
    """The ``ScalingParameters`` of a config.json dict: rope type, base b, rotary dim r, factor s,
    trained length L0 and the type's own values (YaRN's betas, band and attention factor, llama3's
    bands, longrope's lists), as ``rope_frequencies`` reads them. It raises exactly where and as
    ``rope_frequencies(config, layer_type=layer_type)`` does (a ValueError naming the key): a
    config it returns for gives finite frequencies. ``layer_type`` picks a per-layer rope (Gemma 3).
    The one place widgets, checks and notebooks get L0, s and the betas from.

    Refused, each naming the key: an unknown rope type; a key the type does not read (HF only
    warns and drops it); a missing required key; ``factor`` < 1; ``rope_theta`` <= 1;
    ``partial_rotary_factor`` outside (0, 1]; an odd rotary dim or one below 2;
    ``low_freq_factor`` >= ``high_freq_factor``; a longrope list of the wrong length;
    ``beta_fast`` < ``beta_slow``; an empty YaRN band; a YaRN or llama3 config without
    ``original_max_position_embeddings`` (HF would fall back to ``max_position_embeddings``
    silently); results that overflow; an ``attention_factor`` (given, or from YaRN's mscales)
    <= 0 or below float32's smallest normal number (a table of zeros); and, on a config whose
    one rope serves every layer, a ``layer_type`` that is not "full_attention",
    "sliding_attention" or one of its ``layer_types``. Given a ``Model``, its config is read
    once: the same ``ScalingParameters`` every call.
    """
    def checked(config):
        sp, params = _scaling(config, layer_type)
        _inv_freq(sp, params, None)  # a magnitude that overflows the table is an error here too
        return sp
    if isinstance(config, Model) and (layer_type is None or isinstance(layer_type, str)):
        return config.memo(("scaling", layer_type), lambda: checked(config))
    return checked(config)


def llama3_regimes(config):
    """Per pair, the llama3 regime: ``"high"`` (wavelength < L0/high_freq_factor: kept),
    ``"low"`` (wavelength > L0/low_freq_factor: divided by s) or ``"medium"`` (blended)."""
    params, where, theta_where = _resolve(config, None)
    if params["rope_type"] != "llama3":
        raise ValueError(f"{where}.rope_type must be 'llama3' for llama3_regimes, got {params['rope_type']!r}")
    b = _real(theta_where, params["rope_theta"], above=1.0)
    p = _Params(params, where, config, theta_where)
    _, low, high, L0 = _llama3_bands(p)
    return _llama3_labels(_theta(b, rotary_dim(config)), low, high, L0)


# vLLM's possible_keys, in its order (vllm/config/model.py, _get_and_verify_max_len)
_MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                 "model_max_length", "max_target_positions", "max_sequence_length",
                 "max_seq_length", "seq_len")


def _rope_entries(config):
    """[(name, rope dict)] of the config's rope: one, or one per layer type (transformers 5).
    Like vLLM (through HF, where rope_scaling replaces rope_parameters), rope_scaling wins."""
    where, rope = next(((k, config[k]) for k in ("rope_scaling", "rope_parameters") if config.get(k)),
                       (None, None))
    if rope is None:
        return []
    if not isinstance(rope, dict):
        raise ValueError(f"{where} must be a dict or null, got {check.describe(rope)}")
    if _is_nested(rope):
        return [(f"{where}.{layer}", rp) for layer, rp in rope.items() if rp is not None]
    return [(where, rope)]


# The rope types whose max_position_embeddings already holds the extended length: vLLM does not
# multiply it by their factor (vllm/config/model.py, _get_and_verify_max_len, vLLM 0.32).
_VLLM_ALREADY_SCALED = ("su", "longrope", "llama3", "yarn", "deepseek_yarn",
                        "deepseek_llama_scaling")


def derived_max_model_len(config):
    """The longest context vLLM 0.32 accepts for a config without
    ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` (``_get_and_verify_max_len``'s derived length): the
    smallest of the length keys (``model_max_length`` instead when given: vLLM's Command-R
    rule), times the rope factor for linear and dynamic scaling only. YaRN, llama3 and longrope
    (and su, deepseek_yarn) are not multiplied: vLLM reads their ``max_position_embeddings`` as
    the extended length already (vLLM before about 0.30 reset YaRN's length to
    ``original_max_position_embeddings`` and multiplied: Qwen2.5-7B-Instruct's YaRN block gave
    131,072 then, 32,768 now). Gemma 3 is never multiplied either.
    The rope dicts are checked as ``rope_frequencies`` checks them: an unknown rope_type or key,
    or a factor that is not a number >= 1, is an error naming the key.
    """
    derived, _ = _vllm_derived(config)
    return derived


def _vllm_derived(config):
    """(derived length, [(where, rope dict, rope_type)]) for ``derived_max_model_len``."""
    _require_dict(config)
    lengths = {k: _length(k, config[k]) for k in _MAX_LEN_KEYS if config.get(k) is not None}
    if not lengths:
        raise ValueError(f"config has none of the length keys {', '.join(_MAX_LEN_KEYS)}")
    derived = lengths.get("model_max_length") or min(lengths.values())
    entries = [(where, dict(rp), _rope_type(dict(rp), where)) for where, rp in _rope_entries(config)]
    if "gemma3" in str(config.get("model_type", "")) or not entries:
        return int(derived), entries
    s = 1.0
    for where, rp, rope_type in entries:
        if rope_type == "longrope":  # no single factor: per-pair short and long factors
            continue
        if rope_type != "default" and rp.get("factor") is None and "factor" not in rp:
            raise ValueError(f"{where}.factor is required for rope_type {rope_type!r} but is missing")
        factor = rp.get("factor", s)
        factor = 1.0 if factor is None else _real(f"{where}.factor", factor, minimum=1.0)  # vLLM: null -> 1.0
        if rope_type in _VLLM_ALREADY_SCALED:
            _Params(rp, where, config).original_max_position_embeddings()  # L0 must be readable
        else:
            s = factor
    out = derived * s
    if not math.isfinite(out):
        raise ValueError(f"the derived length {derived} times the rope factor {s:g} overflows "
                         "float64: check factor")
    return int(out), entries


def vllm_max_model_len(config, requested=None, *, allow_long=False):
    """The ``max_model_len`` vLLM 0.32 serves ``config`` with when asked for ``requested`` tokens
    (``--max-model-len``; None: its default). The default is ``derived_max_model_len``, except
    for longrope, where vLLM serves ``original_max_position_embeddings`` (Phi-3.5-mini: 4,096 of
    131,072) unless asked for more, to keep the short-context factors' quality. A request past
    the derived length is vLLM's error (a ValueError here too) unless ``allow_long``
    (``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``, at the user's risk)."""
    allow_long = check.flag("allow_long", allow_long)
    derived, entries = _vllm_derived(config)
    if requested is None:
        if any(rope_type == "longrope" for _, _, rope_type in entries):
            return _length("original_max_position_embeddings",
                           config.get("original_max_position_embeddings", derived))
        return derived
    requested = check.positive_int("requested", requested)
    model_max_length = config.get("model_max_length")
    if requested > derived and not allow_long and (model_max_length is None
                                                   or requested > model_max_length):
        raise ValueError(f"requested max_model_len {requested:,} is greater than the {derived:,} "
                         "vLLM derives from config.json; vLLM refuses it unless "
                         "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
    return requested


# llama.cpp's RoPE command-line flags (common/arg.cpp) and the config key each stands in for. A flag
# left unset falls back to the GGUF metadata its converter wrote from config.json (rope_theta ->
# rope.freq_base, rope_scaling.rope_type / factor / original_max_position_embeddings ->
# rope.scaling.type / factor / original_context_length; read in src/llama-model.cpp, overridden
# in src/llama-context.cpp). --rope-scale N sets freq_scale = 1/N, as the GGUF factor does.
_LLAMA_CPP_SCALING = {"default": "none", "ntk": "none", "linear": "linear", "yarn": "yarn"}
_LLAMA_CPP_YARN_FLAGS = (("beta_fast", "--yarn-beta-fast"), ("beta_slow", "--yarn-beta-slow"))
_NO_LLAMA_CPP_FLAG = ("attention_factor", "mscale", "mscale_all_dim")


def llama_cpp_rope_flags(config, *, layer_type=None):
    """The llama.cpp command-line flags that give a config's RoPE, as (flag, value, config key)
    triples: ``--rope-scaling`` for ``rope_type``, ``--rope-freq-base`` for ``rope_theta``,
    ``--rope-scale`` for ``factor``, ``--yarn-orig-ctx`` for ``original_max_position_embeddings``
    (and ``--yarn-beta-fast`` / ``--yarn-beta-slow`` where the config sets the betas). The fixed
    NTK-aware type has no mode of its own: it is ``--rope-freq-base`` set to ``ntk_base``.

    The config is checked as ``rope_frequencies`` checks it. A rope type or key that no flag
    expresses is an error naming it: ``dynamic`` (llama.cpp has no dynamic NTK), ``llama3`` and
    ``longrope`` (their per-pair factors travel inside the GGUF as a tensor, not as flags),
    YaRN's ``attention_factor`` / ``mscale`` / ``mscale_all_dim`` and ``truncate: false``
    (llama.cpp always computes mu = 1 + 0.1 ln s itself and rounds the band to whole pairs).
    """
    sp = scaling_parameters(config, layer_type=layer_type)  # every key checked, named on error
    params = rope_parameters(config, layer_type=layer_type)  # the keys the config itself sets
    rope_type, b, where = sp.rope_type, sp.base, sp.section
    if rope_type in ("llama3", "longrope"):
        raise ValueError(f"{where}.rope_type {rope_type!r} has no llama.cpp flags: its converter "
                         "writes the per-pair factors into the GGUF as a tensor (rope_freqs for "
                         "llama3, rope_factors_long / rope_factors_short for longrope), which "
                         "llama.cpp reads instead")
    if rope_type == "dynamic":
        raise ValueError(f"{where}.rope_type 'dynamic' has no llama.cpp flag: --rope-scaling takes "
                         "none, linear or yarn; a fixed NTK-aware base through --rope-freq-base "
                         "is the nearest")
    for key in _NO_LLAMA_CPP_FLAG:
        if params.get(key) is not None:
            raise ValueError(f"{where}.{key} has no llama.cpp flag that sets it: llama.cpp computes "
                             "YaRN's attention factor 1 + 0.1 ln s itself (--yarn-attn-factor only "
                             "multiplies it)")
    if sp.truncate is False:
        raise ValueError(f"{where}.truncate = False has no llama.cpp flag: llama.cpp always rounds "
                         "YaRN's band (low, high) to whole pairs")
    flags = [("--rope-scaling", _LLAMA_CPP_SCALING[rope_type], f"{where}.rope_type")]
    if rope_type == "ntk":
        return flags + [("--rope-freq-base", ntk_base(b, sp.factor, sp.rotary_dim),
                         f"{sp.theta_key} x {where}.factor^(r/(r-2))")]
    flags.append(("--rope-freq-base", b, sp.theta_key))
    if rope_type == "linear":
        flags.append(("--rope-scale", sp.factor, f"{where}.factor"))
    elif rope_type == "yarn":  # s: a null factor is max / L0 (HF)
        flags += [("--rope-scale", sp.factor, f"{where}.factor"),
                  ("--yarn-orig-ctx", sp.original_max, sp.original_max_key)]
        flags += [(flag, getattr(sp, key), f"{where}.{key}")
                  for key, flag in _LLAMA_CPP_YARN_FLAGS if params.get(key)]
    return flags


# llama.cpp's rope_scaling_type values (llama.h, enum llama_rope_scaling_type)
_LLAMA_CPP_SCALING_TYPES = {"none": 0, "linear": 1, "yarn": 2}


def llama_cpp_rope_arguments(rope_scaling, original_max_position_embeddings=None):
    """llama.cpp's own context parameters for a config.json ``rope_scaling`` dict (the ``**rope``
    of ``lessonlib.llamacpp``'s ``logits`` and ``Session``, which name it ``rope_arguments``):
    None -> none (what the file says); linear factor s -> ``rope_freq_scale = 1 / s``; yarn ->
    ``rope_scaling_type`` 2, ``rope_freq_scale = 1 / s``, ``yarn_orig_ctx`` (the block's
    original_max_position_embeddings, else the argument; neither is an error),
    ``yarn_beta_fast`` / ``yarn_beta_slow`` where given, and ``yarn_attn_factor`` = the block's
    attention_factor divided by llama.cpp's own ``0.1 ln s + 1`` where one is given (llama.cpp
    multiplies the two). Another rope_type has no llama.cpp parameter: an error. None gives {}."""
    if rope_scaling is None:
        return {}
    if not isinstance(rope_scaling, dict):
        raise ValueError(f"rope_scaling must be a dict or None, got {check.describe(rope_scaling)}")
    kind = rope_scaling.get("rope_type", rope_scaling.get("type"))
    factor = check.real("rope_scaling.factor", rope_scaling.get("factor"), minimum=1.0)
    if kind == "linear":
        return {"rope_freq_scale": 1.0 / factor}
    if kind != "yarn":
        raise ValueError(f"rope_scaling.rope_type {kind!r} has no llama.cpp context parameter "
                         f"here (linear and yarn do)")
    orig = rope_scaling.get("original_max_position_embeddings", original_max_position_embeddings)
    out = {"rope_scaling_type": _LLAMA_CPP_SCALING_TYPES["yarn"], "rope_freq_scale": 1.0 / factor,
           "yarn_orig_ctx": check.integer("rope_scaling.original_max_position_embeddings", orig,
                                          minimum=1)}
    for key, arg in (("beta_fast", "yarn_beta_fast"), ("beta_slow", "yarn_beta_slow")):
        if rope_scaling.get(key) is not None:
            out[arg] = check.real(f"rope_scaling.{key}", rope_scaling[key])
    if rope_scaling.get("attention_factor") is not None:
        wanted = check.real("rope_scaling.attention_factor", rope_scaling["attention_factor"],
                            above=0.0)
        out["yarn_attn_factor"] = wanted / (0.1 * math.log(factor) + 1.0)
    return out
