"""A pytest plugin for nbval (``-p nbval_requires``): cells that start with ``%%requires PKG``
run everywhere, but where PKG is absent by design (``lessonlib.runtime``) the cell prints one
sentence instead of its committed output, so that sentence is what nbval expects there. Every
other cell is compared with its committed output as usual. Where PKG is pinned but missing the
expected output stays the committed one, and the cell fails loudly."""
import nbformat

from lessonlib import runtime


def requires_of(source):
    """The package names of a ``%%requires`` first line, or ()."""
    first = source.lstrip().split("\n", 1)[0].split()
    return tuple(first[1:]) if first and first[0] == "%%requires" else ()


def pytest_collection_modifyitems(items):
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is None or type(item).__name__ != "IPyNbCell":
            continue
        for package in requires_of(cell.source):
            if runtime.expected_missing(package):
                reason = runtime.missing_reason(package)
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=reason + "\n")]
                break
