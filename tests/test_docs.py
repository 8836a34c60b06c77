"""docs/CONTRACT.md is the contract: every public name of lessonlib has an entry there, every entry
names something public, and nothing in the repository points at a contract outside it.

A module's public names are its ``__all__``, read from its source with ast (so that the torch
and triton modules are checked where they are not installed, and nothing is imported). In
docs/CONTRACT.md a module's section starts at a heading ``### `lessonlib.<module>``` (or ``####``)
and runs to the next heading; an entry is a bullet that starts with the name in backticks:
``- `name(arguments)`: ...`` or ``- `NAME`: ...``.
"""
import ast
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs/CONTRACT.md"
PACKAGE = ROOT / "lessonlib"
HEADING = re.compile(r"^#{2,4} (.*)$", re.M)
SECTION = re.compile(r"^`(lessonlib(?:\.\w+)*)`$")
ENTRY = re.compile(r"^- `([A-Za-z_]\w*)", re.M)


def public_modules():
    """{dotted name: source path} of every module and package of lessonlib whose dotted name
    has no part starting with an underscore (lessonlib._validate, plots._style: private)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts) or "data" in parts:
            continue
        found[".".join(parts)] = path
    return found


def declared_all(path):
    """The literal ``__all__`` of a module's source, or None when it has none."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


def documented(text):
    """{module: [entry names]} of a docs/CONTRACT.md text, in the order written."""
    sections, heads = {}, list(HEADING.finditer(text))
    for head, nxt in zip(heads, heads[1:] + [None]):
        m = SECTION.match(head.group(1).strip())
        if m:
            body = text[head.end():nxt.start() if nxt else len(text)]
            sections[m.group(1)] = ENTRY.findall(body)
    return sections


def contract_problems(modules, text):
    """What is wrong between the modules' ``__all__`` ({name: list or None}) and a docs/CONTRACT.md
    text: a list of sentences, empty when they agree."""
    doc = documented(text)
    problems = []
    for module, names in sorted(modules.items()):
        if module == "lessonlib":  # the package itself exports nothing but __version__
            continue
        if names is None:
            problems.append(f"{module} has no __all__: its public names are not declared")
            continue
        if module not in doc:
            problems.append(f"{module} has no section in docs/CONTRACT.md")
            continue
        entries = doc[module]
        missing = [n for n in names if n not in entries]
        extra = [n for n in entries if n not in names]
        twice = sorted({n for n in entries if entries.count(n) > 1})
        if missing:
            problems.append(f"{module}: public but undocumented: {missing}")
        if extra:
            problems.append(f"{module}: documented but not in __all__ (gone or private): {extra}")
        if twice:
            problems.append(f"{module}: documented twice: {twice}")
    for module in sorted(set(doc) - set(modules)):
        problems.append(f"docs/CONTRACT.md has a section for {module}, which is not a public "
                        f"module")
    return problems


def test_every_public_name_is_documented_and_every_entry_exists():
    modules = {name: declared_all(path) for name, path in public_modules().items()}
    assert not contract_problems(modules, API.read_text())


def test_the_contract_check_fails_for_a_missing_a_stale_and_an_unknown_name():
    """The check above reads what it should: one name left out, one entry for a name that is
    gone, one module without a section and one section without a module are all reported."""
    text = "### `lessonlib.m`\n\n- `f(x)`: one.\n- `gone`: stale.\n\n### `lessonlib.ghost`\n"
    assert contract_problems({"lessonlib.m": ["f", "g"], "lessonlib.n": ["h"]}, text) == [
        "lessonlib.m: public but undocumented: ['g']",
        "lessonlib.m: documented but not in __all__ (gone or private): ['gone']",
        "lessonlib.n has no section in docs/CONTRACT.md",
        "docs/CONTRACT.md has a section for lessonlib.ghost, which is not a public module",
    ]
    only_m = text.split("### `lessonlib.ghost")[0]
    assert contract_problems({"lessonlib.m": ["f", "gone"]}, only_m) == []


def test_the_sections_cover_the_compute_modules_and_the_topic_layers():
    doc = documented(API.read_text())
    for module in ("lessonlib.attention", "lessonlib.rope", "lessonlib.kv_cache",
                   "lessonlib.triton_attention", "lessonlib.plots", "lessonlib.widgets",
                   "lessonlib.checks", "lessonlib.widgets.rope", "lessonlib.checks.rope"):
        assert module in doc, module


# ------------------------------------------------------------------ the contract lives here
_SKIP_DIRS = {".git", ".venv", ".venv-notorch", ".tools", ".whl", "__pycache__", ".pytest_cache",
              ".hypothesis", ".ipynb_checkpoints", "build", "my-notebooks", "node_modules"}
# A contract outside the repository: the folder beside it, or its API file. Written as regular
# expressions so that this file does not contain what it looks for.
_OUTSIDE = re.compile(r"\.\./shared|/work/s[h]ared|shared/API\.md")


def _repository_text_files():
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.endswith(".egg-info")
                   and not d.startswith(".venv")]  # every environment: -engine, -vllm, -grading
        for name in files:
            path = Path(folder) / name
            try:
                if path.stat().st_size > 5_000_000:
                    continue
                yield path, path.read_text()
            except (UnicodeDecodeError, OSError):  # binary files: checkpoints, images
                continue


def test_nothing_points_at_a_contract_outside_the_repository():
    found = [(str(path.relative_to(ROOT)), m.group(0)) for path, text in _repository_text_files()
             for m in _OUTSIDE.finditer(text)]
    assert not found, found


_CITED_SECTION = re.compile(r'docs/CONTRACT\.md,? (?:section )?"([^"]+)"')


def test_sections_cited_in_the_code_exist():
    """A docstring that cites ``docs/CONTRACT.md, "Attention semantics"`` names a real heading."""
    headings = {h.strip().strip("`") for h in HEADING.findall(API.read_text())}
    cited = [(str(path.relative_to(ROOT)), m.group(1)) for path, text in _repository_text_files()
             if path.suffix == ".py" and path.name != "test_docs.py"
             for m in _CITED_SECTION.finditer(text)]
    assert cited, "no docstring cites a section of docs/CONTRACT.md"
    assert not [c for c in cited if c[1].strip("`") not in headings], cited


@pytest.mark.parametrize("module", ["lessonlib.checks", "lessonlib.plots", "lessonlib.widgets"])
def test_topic_packages_import_their_topics_plainly(module):
    """dir(), completion and static tools see checks.rope and friends: the package imports each
    topic module (no module __getattr__ that loads them on first use)."""
    path = public_modules()[module]
    tree = ast.parse(path.read_text())
    assert not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body)
    assert not any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__getattr__"
                                                     for t in n.targets) for n in tree.body)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1
                and n.module is None for a in n.names}
    topics = {name.rsplit(".", 1)[1] for name in public_modules()
              if name.startswith(module + ".") and name.count(".") == module.count(".") + 1}
    assert topics and topics <= imported, topics - imported


def _undocumented(path):
    """Public functions and classes (``__all__``) of a module's source whose docstring is
    missing: the reference make docs builds (pdoc) would show them bare."""
    names = set(declared_all(path) or ())
    tree = ast.parse(path.read_text())
    return sorted(node.name for node in tree.body
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and node.name in names and not ast.get_docstring(node))


def test_every_public_function_and_class_has_a_docstring():
    """make docs builds the per-name reference from the docstrings: none may be empty."""
    missing = {name: bare for name, path in public_modules().items() if (bare := _undocumented(path))}
    assert not missing, missing


def test_the_docstring_scan_finds_a_bare_function(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('__all__ = ["f", "g"]\n\ndef f():\n    return 1\n\ndef g():\n    """G."""\n')
    assert _undocumented(path) == ["f"]
