"""Topic subpackages (checks, plots, widgets) load a topic module on first attribute access."""
import importlib

__all__ = ["topic_modules"]


def topic_modules(package):
    """A module ``__getattr__`` for ``package``: ``package.<topic>`` imports the topic module on
    first use, so importing the package itself runs nothing."""
    def __getattr__(name):
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{package}.{name}":
                raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
    return __getattr__
