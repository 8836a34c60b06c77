"""Real models' config.json files (facts copied from their published configs), loaded by name.

    >>> from lessonlib.configs import load_config, config_names
    >>> load_config("Llama-3.1-8B")["rope_theta"]
    500000.0

A function that takes "a config name or a config.json dict" (the widget factories) reads it
with ``config_dict``.
"""
import difflib
import json
from functools import lru_cache
from importlib import resources

from .. import _validate as check

__all__ = ["config_names", "load_config", "config_dict"]


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
