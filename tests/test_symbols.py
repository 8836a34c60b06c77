"""docs/SYMBOLS.md, the one name of each quantity, against lessonlib's public signatures: every
name the table lists is a parameter or field of a public function or class (a renamed argument
cannot linger there), and every public parameter spelled like a context length is listed (a new
spelling cannot appear unexplained)."""
import dataclasses
import importlib
import inspect
import re
from pathlib import Path

from test_docs import declared_all, public_modules

ROOT = Path(__file__).resolve().parent.parent
TABLE = (ROOT / "docs" / "SYMBOLS.md").read_text()
# spellings of a length in tokens: what a new function would most likely name it
LENGTH_LIKE = re.compile(r"((^|_)(len|length|lengths)$|^n_ctx$|^seq_|^n_positions$|^n_tokens$|"
                         r"^num_computed|^max_model|^contexts?$)")


def table_names(text):
    """{name: row's symbol} of the code names in the table's 'name in code' and 'other names'
    columns (backticked identifiers; a dotted or call-like one is a pointer, not a name)."""
    names = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("$"):
            continue
        for cell in cells[2:4]:
            for entry in cell.split(";"):  # names, then (where) in parentheses
                for name in re.findall(r"`([A-Za-z_]\w*)`", entry.split("(")[0]):
                    names[name] = cells[0]
    return names


def public_parameters():
    """{parameter or field name: [where]} over every public function and class of lessonlib
    that imports here (the torch and triton modules where they are installed)."""
    found = {}
    for module, path in public_modules().items():
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        for name in declared_all(path) or ():
            obj = getattr(mod, name, None)
            params = []
            if dataclasses.is_dataclass(obj):
                params = [f.name for f in dataclasses.fields(obj)]
            elif callable(obj):
                try:
                    params = list(inspect.signature(obj).parameters)
                except (TypeError, ValueError):
                    continue
            for p in params:
                found.setdefault(p, []).append(f"{module}.{name}")
    return found


def test_the_table_parses():
    names = table_names(TABLE)
    assert names["n_ctx"] == "$n$" and names["kv_heads"] == "$h_{kv}$" and len(names) > 30


def test_every_name_in_the_table_is_a_public_parameter():
    params = public_parameters()
    gone = sorted(n for n in table_names(TABLE) if n not in params)
    assert not gone, f"docs/SYMBOLS.md names what no public signature has: {gone}"


def test_every_length_spelling_in_a_public_signature_is_in_the_table():
    listed = table_names(TABLE)
    unlisted = {p: where[:3] for p, where in public_parameters().items()
                if LENGTH_LIKE.search(p) and p not in listed}
    assert not unlisted, f"context lengths spelled in a way docs/SYMBOLS.md does not give: {unlisted}"
