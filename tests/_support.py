"""Helpers shared by the test files (imported as ``from _support import ...``)."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def solutions(stem):
    """instructors/solutions/<stem>.py as a module (the reference answers to a notebook)."""
    path = os.path.join(ROOT, "instructors", "solutions", f"{stem}.py")
    spec = importlib.util.spec_from_file_location(f"solutions_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_wrong(verdict, *fragments):
    """The check said "not yet", with a hint containing every fragment (case-insensitive)."""
    assert verdict.ok is False, verdict
    for f in fragments:
        assert f.lower() in verdict.message.lower(), (f, verdict.message)


def labelled(ax, *, xlabel=True, ylabel=True):
    """The axes has a title, and an x and a y label unless told otherwise."""
    assert ax.get_title(), "no title"
    assert not xlabel or ax.get_xlabel(), "no x label"
    assert not ylabel or ax.get_ylabel(), "no y label"
