"""Real models' config.json files (facts copied from their published configs), loaded by name.

    >>> from lessonlib.configs import load_config, config_names
    >>> load_config("Llama-3.1-8B")["rope_theta"]
    500000.0
"""
import json
from functools import lru_cache
from importlib import resources

__all__ = ["config_names", "load_config"]


def config_names():
    """Names accepted by load_config, sorted."""
    return sorted(p.name[:-5] for p in resources.files(__name__).iterdir()
                  if p.name.endswith(".json"))


@lru_cache(maxsize=None)
def _load_text(name):
    return resources.files(__name__).joinpath(f"{name}.json").read_text()


def load_config(name):
    """A fresh dict of the named model's config.json (safe to modify)."""
    if name not in config_names():
        raise ValueError(f"unknown config name {name!r}; known: {', '.join(config_names())}")
    return json.loads(_load_text(name))
