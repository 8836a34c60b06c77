"""Real models' config.json files (facts copied from their published configs), loaded by name.

    >>> from lessonlib.models.configs import load_config, config_names
    >>> load_config("Llama-3.1-8B")["rope_theta"]
    500000.0

A function that takes "a config name or a config.json dict" (the widget factories) reads it
with ``config_dict``.
"""
import difflib
import json
from functools import lru_cache
from importlib import resources

from ... import _validate as check

__all__ = ["config_names", "load_config", "config_dict", "config_from_text"]


def config_names():
    """Names accepted by load_config, sorted."""
    return sorted(p.name[:-5] for p in resources.files(__name__).iterdir()
                  if p.name.endswith(".json"))


@lru_cache(maxsize=None)
def _load_text(name):
    return resources.files(__name__).joinpath(f"{name}.json").read_text()


def load_config(name):
    """A fresh dict of the named model's config.json (safe to modify). ``name`` is one of
    ``config_names()``, spelled exactly; a near miss is suggested."""
    name, names = check.text("name", name), config_names()
    if name not in names:
        near = difflib.get_close_matches(name, names, n=1, cutoff=0.6) or \
            [n for n in names if n.lower() == name.lower()]
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise ValueError(f"name must be one of the configs here ({', '.join(names)}), "
                         f"got unknown config name {name!r}{hint}")
    return json.loads(_load_text(name))


def config_dict(config, name="config"):
    """A config by name (``load_config``) or a copy of a config.json dict, safe to modify.
    ``name`` is the argument's name in the errors (``models``, ``mla_config``)."""
    name = check.text("name", name)
    if isinstance(config, str):
        try:
            return load_config(config)
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from None
    if isinstance(config, dict):
        return dict(config)
    raise ValueError(f"{name} must be a config name or a config.json dict, got "
                     f"{check.describe(config)}")


def config_from_text(text, name="config.json"):
    """A config.json dict from its text (pasted, uploaded or read from a file): one JSON object,
    or a ValueError naming ``name`` and the line and column where the JSON breaks, or saying it
    is empty or holds something else than one object."""
    text = check.text("text", text)
    name = check.text("name", name)
    if not text.strip():
        raise ValueError(f"{name} is empty: a config.json holds one JSON object")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{name}: not valid JSON (line {err.lineno}, column {err.colno}: "
                         f"{err.msg})") from None
    if not isinstance(config, dict):
        raise ValueError(f"{name}: a config.json holds one JSON object, this holds a "
                         f"{type(config).__name__}")
    return config
