"""The notebooks' ``%%requires`` cell magic: ``%load_ext lessonlib.requires`` in a first cell.

A cell that starts with ``%%requires torch`` (or ``triton``, or both) runs when every named
package is installed, and otherwise prints the one sentence ``lessonlib.runtime.missing_reason``
gives (why the package is absent here) instead of failing with a traceback.

In the presenter (``make present``), which shows only the widgets, such cells do not run at all:
they measure and print (the tiny model's live runs, the Triton kernel), no widget is built in
one (tests/test_runtime.py checks every notebook), and skipping them opens the page in seconds.
"""
import ast

from . import runtime

__all__ = ["load_ipython_extension"]


def _requires(line, cell):
    """%%requires torch [triton]: run the cell if every named package is installed, else print
    why not. The cell runs in the notebook's namespace and its last expression is its value."""
    names = line.split()
    if not names:
        raise ValueError("%%requires needs a package name: %%requires torch")
    for name in names:
        runtime.missing_reason(name)  # ValueError for a name that is not optional
    if runtime.in_presenter():
        return None
    for name in names:
        reason = runtime.missing_reason(name)
        if reason is not None:
            print(reason)
            return None
    from IPython import get_ipython
    shell = get_ipython()
    tree = ast.parse(shell.transform_cell(cell))
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), shell.user_ns)
    if last is not None:
        return eval(compile(ast.Expression(last.value), "<cell>", "eval"), shell.user_ns)
    return None


def load_ipython_extension(ipython):
    """``%load_ext lessonlib.requires``: registers the ``%%requires`` cell magic (``%%requires
    torch triton``: the cell runs when the packages are installed, and otherwise prints why they
    are absent, ``runtime.missing_reason``, instead of failing)."""
    ipython.register_magic_function(_requires, magic_kind="cell", magic_name="requires")
