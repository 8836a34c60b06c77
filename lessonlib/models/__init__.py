"""A model, read once: ``load_model`` turns a config.json dict, a shipped config's name or a GGUF
file into a ``Model``, which checks the config and keeps what the lessons read from it.

    >>> from lessonlib.models import load_model
    >>> llama = load_model("Llama-3.1-8B")
    >>> llama.name, llama.shape.kv_heads, llama.params
    ('Llama-3.1-8B', 8, 8030261248)
    >>> llama["rope_theta"]            # still the config.json: every key reads as before
    500000.0

A ``Model`` is a read-only dict of the config.json (so every function of lessonlib that takes a
config takes it unchanged) carrying the facts compute reads from it, each read on first use and
kept:

    name               what it is called: the shipped config's name, the GGUF file's stem, or
                       the name given (else the config's ``model_type``)
    shape              ``shape.ModelShape``: layers, query heads, KV heads, head dims
    windows            ``shape.layer_windows``: None per global layer, W per sliding one
    llamacpp_windows   the same as llama.cpp runs the model (``shape.llamacpp_layer_windows``)
    latent             MLA's ``shape.Latent`` (``kv_lora_rank``: DeepSeek), None without one
    mla                True for a multi-head latent attention model, which caches one latent
                       per token instead of KV heads
    model_type         the config's ``model_type`` ("" without one)
    vocab_size, hidden_size, intermediate_size   as the config gives them, checked on use
    experts_key        the key giving the model experts (``num_local_experts``,
                       ``n_routed_experts``), None for a dense model
    scaling            ``rope.ScalingParameters`` of the (global layers') RoPE
    weights            ``weights.Weights``: the parameter count and bytes as the checkpoint
                       stores them, or None where lessonlib does not count the architecture;
                       ``params_note`` then says why (``weight_bytes``' error)
    params             ``weights.params`` (None where weights is)
    dtype              the torch dtype of the checkpoint's unquantized tensors
                       (``weights.Weights.dtype``), None where ``params`` is

``load_model`` reads the shape, the windows and the scaling at once: a config that cannot be
read fails there, once, with the error naming its key, so the figure and the readout of a widget
given a ``Model`` never meet a malformed config. A widget factory takes the ``Model`` (or a name
or dict, turned into one) that the notebook cell built, and names it in its legend and readout.
Compute functions take a config dict or a Model: ``as_model`` wraps a dict at their boundary.

This package is the one place config.json keys are read (tests/test_layers.py holds every other
module to it): ``shape`` (attention shape, windows, MLA latent, dimensions), ``rope`` (the RoPE
parameters), ``weights`` (the parameter count), ``tiny`` (the course's tiny model),
``describe`` (what a report says beyond them), ``configs`` (the shipped files), ``gguf`` (GGUF
files). ``text_config`` and ``int_key`` are the readers they share: the language model's part of
a multimodal config, and one integer key checked with its name.
"""
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .. import _validate as check

__all__ = ["Model", "load_model", "as_model", "text_config", "int_key"]


def text_config(config):
    """The language-model part of a config.json dict: multimodal configs nest it under
    ``text_config``; any other config is its own. A config that is not a dict is an error."""
    if not isinstance(config, Mapping):
        raise ValueError(f"config must be a dict (a config.json), got {check.describe(config)}")
    if "num_hidden_layers" not in config and isinstance(config.get("text_config"), Mapping):
        return config["text_config"]
    return config


def int_key(config, key, *, minimum=1):
    """``config[key]`` as an int >= ``minimum``; missing or null is an error naming the key."""
    if key not in config or config[key] is None:
        raise ValueError(f"config is missing {key!r}")
    return check.integer(key, config[key], minimum=minimum)


def _read_only(*_, **__):
    raise TypeError("a Model is read-only: build another with load_model(dict(model) | {...})")


def _weights(model):
    """(``Weights``, None), or (None, why not) where lessonlib does not count the architecture."""
    def count():
        from .weights import weight_bytes
        try:
            return weight_bytes(dict(model)), None
        except ValueError as err:
            return None, str(err)
    return model.memo("weights", count)


# Each fact of a Model: read from its config on first use, then kept (``Model.memo``). The
# readers get a plain dict: given the Model itself they would return its fact.
_FACTS = {
    "shape": lambda c: _shape().model_shape(dict(c)),
    "windows": lambda c: tuple(_shape().layer_windows(dict(c))),
    "llamacpp_windows": lambda c: tuple(_shape().llamacpp_layer_windows(dict(c))),
    "latent": lambda c: _shape().latent(dict(c)),
    "mla": lambda c: c.latent is not None,
    "model_type": lambda c: _shape().model_type(c),
    "vocab_size": lambda c: _shape().int_dimension(c, "vocab_size"),
    "hidden_size": lambda c: _shape().int_dimension(c, "hidden_size"),
    "intermediate_size": lambda c: _shape().int_dimension(c, "intermediate_size"),
    "experts_key": lambda c: _shape().experts_key(c),
    "scaling": lambda c: _rope().scaling_parameters(text_config(c)),
    "weights": lambda c: _weights(c)[0],
    "params_note": lambda c: _weights(c)[1],
    "params": lambda c: None if c.weights is None else c.weights.params,
    "dtype": lambda c: None if c.weights is None else c.weights.dtype,
}
_CHECKED = ("shape", "windows", "llamacpp_windows", "scaling")  # what load_model reads at once


def _shape():
    from . import shape
    return shape


def _rope():
    from . import rope
    return rope


class Model(dict):
    """A config.json, read once (see the module docstring). Build it with ``load_model``.

    A read-only dict: writing to it raises TypeError. Each fact (``shape``, ``windows``, ...) is
    read from the config on first use and kept; ``memo(key, compute)`` keeps what compute derives
    from the config alone (``kv_cache.kv_cell_bytes``, ``kv_cache.vllm_kv_cache_groups``), so
    compute given a Model uses what it read."""

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only
    __ior__ = _read_only

    def __init__(self, config, name):
        super().__init__(config)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "_memo", {})

    def __setattr__(self, key, value):
        _read_only()

    def __getattr__(self, key):
        if key not in _FACTS:
            raise AttributeError(f"a Model has no {key!r}")
        return self.memo(("fact", key), lambda: _FACTS[key](self))

    def memo(self, key, compute):
        """``compute()``, once per Model and ``key``: what compute derives from the config alone
        (a cell's bytes, vLLM's groups) is read once, not at every slider step."""
        memo = object.__getattribute__(self, "_memo")
        if key not in memo:
            memo[key] = compute()
        return memo[key]

    def __repr__(self):
        s = self.shape
        return (f"Model({self.name!r}: {s.layers} layers, {s.heads} query heads, "
                f"{s.kv_heads} KV heads of {s.head_dim})")

    def __reduce__(self):
        return (load_model, (dict(self),), {"name": self.name})

    def __setstate__(self, state):
        object.__setattr__(self, "name", state["name"])

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def as_model(config):
    """``config`` as a ``Model``: a Model as it is, a config.json dict wrapped as it is (not
    copied, not checked here: each fact is read, and checked, when compute first asks for it).
    Compute functions call it once at their boundary; a notebook calls ``load_model``."""
    if isinstance(config, Model):
        return config
    text_config(config)  # not a dict: the error names config
    return Model(config, str(config.get("model_type") or "model"))


def load_model(source, *, name=None):
    """A ``Model`` from ``source``: a shipped config's name (``configs.config_names()``), a
    config.json dict, a path to a ``.gguf`` file (``gguf.read_gguf``'s config) or a
    ``Model`` (returned as it is unless ``name`` renames it). ``name`` defaults to the shipped
    name, the file's stem, or the config's ``model_type``. The config is deep-copied: changing
    the dict afterwards does not change the Model."""
    if name is not None:
        name = check.text("name", name)
    if isinstance(source, Model):
        return source if name is None or name == source.name else load_model(dict(source), name=name)
    if isinstance(source, str) and not source.endswith(".gguf"):
        from .configs import load_config
        return _build(load_config(source), name or source)
    if isinstance(source, (str, Path)):
        from .gguf import read_gguf
        path = Path(source)
        return _build(read_gguf(str(path)).config, name or path.stem)
    if isinstance(source, Mapping):
        config = copy.deepcopy(dict(source))
        return _build(config, name or str(text_config(config).get("model_type") or "model"))
    raise ValueError("source must be a config name, a config.json dict, a .gguf path or a Model, "
                     f"got {check.describe(source)}")


def _build(config, name):
    model = Model(config, name)
    for fact in _CHECKED:  # a config that cannot be read fails here, once, naming its key
        getattr(model, fact)
    return model
