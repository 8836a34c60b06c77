"""The tiny model's config.json, read once: the keys ``lessonlib.tinylm.TinyLM`` is built from
(``vocab_size``, ``hidden_size``, ``intermediate_size``, ``num_hidden_layers``,
``num_attention_heads``, ``num_key_value_heads``, ``head_dim``, ``max_position_embeddings``,
``rms_norm_eps``, ``tie_word_embeddings`` and its RoPE: ``rope_theta``, ``rope_scaling``), the
head dim of a rope config that replaces the model's own, and YaRN's trained length recorded in a
``rope_scaling`` set on a config.

    >>> from lessonlib.models.tiny import read_tiny_config
    >>> c = read_tiny_config({"vocab_size": 131, "hidden_size": 128, "intermediate_size": 384,
    ...     "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
    ...     "head_dim": 32, "rope_theta": 10000.0, "max_position_embeddings": 256,
    ...     "rms_norm_eps": 1e-5, "tie_word_embeddings": True})
    >>> c.num_hidden_layers, c.num_key_value_heads, c.head_dim, c.scaling.rotary_dim
    (4, 2, 32, 32)

``read_tiny_config(config)`` checks every key the model reads and returns a frozen
``TinyConfig``: a missing key, or a value that would build another model (no layers, 0 KV heads,
query heads not a multiple of the KV heads, untied embeddings, a bad rope), is a ``ValueError``
naming the key. ``with_rope_scaling(config, rope_scaling)`` builds the config with another
``rope_scaling`` (YaRN's ``original_max_position_embeddings`` defaulting to the config's
``max_position_embeddings``), ``rope_config(rope, head_dim)`` checks that a rope config rotates
the model's head dim. The rope keys themselves are read by ``models.rope``
(``scaling_parameters``, ``rotary_dim``). ``lessonlib.tinylm`` reads the fields of a
``TinyConfig``, never a key.
"""
import copy
from dataclasses import dataclass

from .. import _validate as check
from .rope import ScalingParameters, rotary_dim, scaling_parameters

__all__ = ["TinyConfig", "SHAPE_KEYS", "read_tiny_config", "with_rope_scaling", "rope_config"]

SHAPE_KEYS = {"vocab_size": 1, "hidden_size": 1, "intermediate_size": 1,
              "num_hidden_layers": 1, "num_attention_heads": 1, "num_key_value_heads": 1,
              "head_dim": 2, "max_position_embeddings": 1}
"""{key: minimum} of the integer keys the tiny model reads (``rms_norm_eps`` aside), in the
order ``read_tiny_config`` checks them."""


@dataclass(frozen=True)
class TinyConfig:
    """The tiny model's config.json as the model reads it: ``read_tiny_config``'s answer.

    vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
    num_key_value_heads, head_dim, max_position_embeddings   the ints, checked
    rms_norm_eps         RMSNorm's epsilon, a float > 0
    tie_word_embeddings  always True (the output layer is the embedding; False is refused)
    rope_theta           b, the base the model rotates with (10,000 when the config has none)
    rope_scaling         the config's ``rope_scaling`` dict (a copy), None without one: what an
                         export writes
    scaling              ``models.rope.ScalingParameters`` of the model's own rope (type, base,
                         rotary dim, factor, ...)
    """
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    max_position_embeddings: int
    rms_norm_eps: float
    tie_word_embeddings: bool
    rope_theta: float
    rope_scaling: dict | None
    scaling: ScalingParameters


def _require_dict(config):
    if not isinstance(config, dict):
        raise ValueError(f"config must be a config.json-style dict, got {check.describe(config)}")


def read_tiny_config(config):
    """The ``TinyConfig`` of a config.json-style dict, once every key the model reads is there
    and sensible: a missing key or a value that would build a different model (no layers, 0 KV
    heads, ``num_attention_heads`` not a multiple of ``num_key_value_heads``,
    ``tie_word_embeddings`` False, a rope ``models.rope.scaling_parameters`` refuses) is a
    ValueError naming the key. The config is not changed."""
    _require_dict(config)
    ints = {}
    for key, minimum in SHAPE_KEYS.items():
        if key not in config:
            raise ValueError(f"config.{key} is missing (the model reads "
                             f"{', '.join(SHAPE_KEYS)} and rms_norm_eps)")
        ints[key] = check.integer(key, config[key], minimum=minimum)
    if "rms_norm_eps" not in config:
        raise ValueError("config.rms_norm_eps is missing (RMSNorm's epsilon, e.g. 1e-5)")
    eps = check.real("rms_norm_eps", config["rms_norm_eps"], above=0.0)
    hq, hkv = ints["num_attention_heads"], ints["num_key_value_heads"]
    if hq % hkv:
        raise ValueError(f"num_attention_heads {hq} must be a multiple of num_key_value_heads "
                         f"{hkv} (each KV head serves a whole group of query heads)")
    if "tie_word_embeddings" in config and not check.flag("tie_word_embeddings",
                                                          config["tie_word_embeddings"]):
        raise ValueError("tie_word_embeddings must be True: this model's output layer is its "
                         "embedding (there are no separate output weights)")
    scaling = scaling_parameters(config)  # the model's own rope: rope_theta, rope_scaling, ...
    rope_scaling = config.get("rope_scaling")
    return TinyConfig(**ints, rms_norm_eps=eps, tie_word_embeddings=True,
                      rope_theta=scaling.base,
                      rope_scaling=None if rope_scaling is None else copy.deepcopy(rope_scaling),
                      scaling=scaling)


def with_rope_scaling(config, rope_scaling):
    """A copy of ``config`` with ``rope_scaling`` set (None: without one). The trained length is
    recorded as ``original_max_position_embeddings`` where the rope type reads it (YaRN) and
    ``rope_scaling`` does not give it: the config's ``max_position_embeddings``. The result is
    checked by ``models.rope.scaling_parameters``: a bad key fails here, named
    (``rope_scaling.factor``)."""
    _require_dict(config)
    if rope_scaling is not None and not isinstance(rope_scaling, dict):
        raise ValueError(f"rope_scaling must be a dict (e.g. {{'rope_type': 'yarn', 'factor': "
                         f"8.0}}) or None, got {check.describe(rope_scaling)}")
    out = copy.deepcopy(config)
    if rope_scaling is None:
        out.pop("rope_scaling", None)
    else:
        rs = copy.deepcopy(rope_scaling)
        if rs.get("rope_type", rs.get("type")) == "yarn":
            if config.get("max_position_embeddings") is None:
                raise ValueError("config.max_position_embeddings is missing: YaRN records it as "
                                 "rope_scaling.original_max_position_embeddings")
            rs.setdefault("original_max_position_embeddings", config["max_position_embeddings"])
        out["rope_scaling"] = rs
    scaling_parameters(out)
    return out


def rope_config(rope, head_dim):
    """``rope``, a config dict whose rope fields replace the tiny model's, once its head dim is
    the model's ``head_dim`` (else the tables would rotate another number of dims): its own
    ``head_dim``, if given, an int; the rotary dim it gives (``models.rope.rotary_dim``) the one
    it gives with the model's ``head_dim``."""
    head_dim = check.integer("head_dim", head_dim, minimum=2)
    if not isinstance(rope, dict):
        raise ValueError(f"rope must be a config dict (e.g. with_rope_scaling(model.config, "
                         f"{{...}})) or None, got {check.describe(rope)}")
    if rope.get("head_dim") is not None:
        check.integer("head_dim", rope["head_dim"], minimum=1)
    r = rotary_dim(rope)
    probe = {k: v for k, v in rope.items() if k != "qk_rope_head_dim"}
    probe["head_dim"] = head_dim
    if rotary_dim(probe) != r:
        raise ValueError(f"rope.head_dim: the rope config's head dim ({rope.get('head_dim')!r}; "
                         f"{r} rotated dims) is not the model's head_dim {head_dim} "
                         f"({rotary_dim(probe)} rotated dims); build rope with "
                         f"with_rope_scaling(model.config, ...)")
    return rope
