"""Documentation that cannot drift: the per-name reference is the docstrings (``make docs`` builds
it with pdoc), and docs/CONTRACT.md holds only what no docstring can (conventions, the semantics
several modules share, which engine's rule each module restates, a paragraph per module).

What is checked here, reading sources with ast (so that the torch and triton modules are checked
where they are not installed, and nothing is imported):

- Every public module has a section in docs/CONTRACT.md, a heading ``### `lessonlib.<module>```
  (or ``####``) followed by a paragraph, and every such section names a public module. A
  module's public names are its ``__all__``; a module is public when no part of its dotted name
  starts with an underscore.
- Every name docs/CONTRACT.md points at exists and is public, so a renamed or removed function
  cannot linger there. A pointer is an inline code span that is ``lessonlib.x.y`` or ``x.y``
  (``x`` a module of lessonlib; a private module, ``widgets._base``, must exist), or, bare, a
  function ``name()``, a class ``Name`` or a constant ``NAME``: inside a module's section it is
  that module's (a class may live in a private module of the section's package, as the widgets'
  ``Explorer`` does), elsewhere any public module's. A span in lower case without parentheses
  is a config key, an argument or a value (``rope_theta``, ``window``), and one with arguments
  in them a formula (``floor(n / 100)``); Python's builtins (``ValueError``) are not lessonlib's.
- docs/CONTRACT.md does not restate docstrings. For every public name with a docstring (for a
  constant, the string after its assignment, as pdoc reads it; for a re-exported name, its
  source's), count the docstring's 5-word runs (lower-cased ``\\w+`` words, markup dropped) that
  also occur anywhere in docs/CONTRACT.md (the whole file, not only the name's module section:
  a convention may not restate a docstring either). They must stay below ``RESTATED`` = a
  fifth of the docstring's runs, or below ``MIN_RUNS`` = 3 runs. Why these numbers: a sentence
  copied word for word shares nearly all of its runs, so one copied sentence in a docstring of
  up to five sentences passes a fifth; a paragraph that only talks about the same thing shares a few
  stock phrases ("the number of KV heads", a 5- or 6-word phrase, is 1 or 2 runs), which is why
  two shared runs are never a restatement. Before the rewrite (issue 31), 24.4% of the
  docstrings' runs stood in docs/CONTRACT.md, 103 of the 404 public names with a docstring
  shared half of their runs or more, and 198 failed this rule; after it, 0.3% and none.
- Nothing in the repository points at a contract outside it, a section of docs/CONTRACT.md cited
  in code exists, the topic packages import their topics plainly, and every public function and
  class has a docstring (pdoc would show it bare).
"""
import ast
import builtins
import inspect
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs/CONTRACT.md"
PACKAGE = ROOT / "lessonlib"
HEADING = re.compile(r"^#{1,4} (.*)$", re.M)
SECTION = re.compile(r"^`(lessonlib(?:\.\w+)*)`$")
SPAN = re.compile(r"`([^`\n]+)`")
POINTER = re.compile(r"^(?P<path>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?P<call>\([^()]*\))?(?:\.\w+)*$")
CAMEL = re.compile(r"^[A-Z]\w*[a-z]\w*$")
CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")
WORD = re.compile(r"\w+")
RUN = 5
RESTATED = 0.2
MIN_RUNS = 3
MIN_PARAGRAPH_WORDS = 8


# ------------------------------------------------------------------ modules, names, docstrings
def all_modules():
    """{dotted name: source path} of every module and package of lessonlib, private ones too."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "data" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def public_modules():
    """{dotted name: source path} of every module and package of lessonlib whose dotted name
    has no part starting with an underscore (lessonlib._validate, plots._style: private)."""
    return {name: path for name, path in all_modules().items()
            if not any(p.startswith("_") for p in name.split("."))}


def declared_all(path):
    """The literal ``__all__`` of a module's source, or None when it has none."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


def _is_text(node):
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and \
        isinstance(node.value.value, str)


def defined_names(path):
    """{name: docstring or None} of what a module's source defines at its top level: functions
    and classes (their docstrings), assignments (the string that follows one, as pdoc reads a
    variable's docstring, or a later ``name.__doc__ = "..."``), and names imported from within
    lessonlib (``("import", module, name)``, resolved by ``docstrings``)."""
    tree = ast.parse(path.read_text())
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if not module.endswith("__init__") else \
        module[:-len(".__init__")]
    found = {}
    for i, node in enumerate(tree.body):
        following = tree.body[i + 1] if i + 1 < len(tree.body) else None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = ast.get_docstring(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            doc = inspect.cleandoc(following.value.value) if _is_text(following) and \
                len(names) == 1 else None
            for name in names:
                found[name] = doc
            target = targets[0]
            if isinstance(target, ast.Attribute) and target.attr == "__doc__" and \
                    isinstance(target.value, ast.Name) and isinstance(node.value, ast.Constant):
                found[target.value.id] = inspect.cleandoc(node.value.value)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                if source.startswith("lessonlib"):
                    found[alias.asname or alias.name] = ("import", source, alias.name)
    return found


def docstrings():
    """{(module, name): docstring} of every public name of every public module that has one;
    a name imported from elsewhere in lessonlib has its source's docstring. Submodules listed in
    a package's ``__all__`` (the topics of plots, widgets, checks) have their own section."""
    modules, defined = all_modules(), {}

    def lookup(module, name, depth=0):
        if module not in modules or depth > 5:
            return None
        if module not in defined:
            defined[module] = defined_names(modules[module])
        doc = defined[module].get(name)
        if isinstance(doc, tuple):
            _, source, original = doc
            return lookup(source, original, depth + 1)
        return doc

    found = {}
    for module, path in public_modules().items():
        for name in declared_all(path) or ():
            if f"{module}.{name}" in modules:
                continue
            doc = lookup(module, name)
            if doc:
                found[(module, name)] = doc
    return found


# ------------------------------------------------------------------ the measure of restating
def runs(text, k=RUN):
    """The set of k-word runs of ``text``: its lower-cased words (``\\w+``: backticks,
    punctuation and markup dropped), every k in a row."""
    words = WORD.findall(text.lower())
    return {tuple(words[i:i + k]) for i in range(len(words) - k + 1)}


def shared_runs(doc, text):
    """(runs of ``doc`` that also occur in ``text``, runs of ``doc``)."""
    mine = runs(doc)
    return len(mine & runs(text)), len(mine)


def restates(doc, text):
    """True when ``text`` repeats enough of ``doc`` word for word to count as restating it."""
    shared, total = shared_runs(doc, text)
    return total > 0 and shared >= MIN_RUNS and shared >= RESTATED * total


def test_the_measure_on_a_made_up_docstring():
    doc = ("The KV head that query head h reads: h // (hq // hkv). hkv must divide hq, and "
           "h runs from 0 to hq - 1.")
    assert len(runs(doc)) == 19  # 23 words
    copied = ("- `gqa_kv_head(h, hq, hkv)`: the KV head that query head `h` reads, "
              "`h // (hq // hkv)`.")
    assert shared_runs(doc, copied) == (7, 19) and restates(doc, copied)
    pointer = ("GQA's head map is `gqa_head_map()`; which KV head a query head reads: "
               "`gqa_kv_head()`.")
    assert shared_runs(doc, pointer) == (0, 19) and not restates(doc, pointer)
    assert shared_runs(doc, "hkv must divide hq, and h runs from 0") == (5, 19)  # over a fifth
    assert restates(doc, "hkv must divide hq, and h runs from 0")
    assert shared_runs(doc, "hkv must divide hq, and h runs") == (3, 19)  # under a fifth
    assert not restates(doc, "hkv must divide hq, and h runs")
    short = "The KV head that query head."  # 6 words, 2 runs: all shared, still a stock phrase
    assert shared_runs(short, "which is the KV head that query head") == (2, 2)
    assert not restates(short, "which is the KV head that query head")
    assert not restates("", "anything") and runs("four words only here") == set()


# ------------------------------------------------------------------ sections and pointers
def sections(text):
    """[(heading, module or None, body)] of a docs/CONTRACT.md text, in order; a body runs from
    its heading to the next heading of any level."""
    heads = list(HEADING.finditer(text))
    out = []
    for head, nxt in zip(heads, heads[1:] + [None]):
        title = head.group(1).strip()
        m = SECTION.match(title)
        out.append((title, m.group(1) if m else None,
                    text[head.end():nxt.start() if nxt else len(text)]))
    return out


def pointers(body):
    """[(span, path, kind)] of the pointers in a section's body: kind "dotted" for a path with a
    module in front, "bare" for ``name()``, ``Name`` or ``NAME``."""
    found = []
    for span in SPAN.findall(body):
        m = POINTER.match(span.strip())
        if not m:
            continue
        path, call = m.group("path"), m.group("call")
        parts = path.split(".")
        if path.startswith("lessonlib") or len(parts) > 1:
            found.append((span, path, "dotted"))
        elif hasattr(builtins, path) or call not in (None, "()"):
            continue  # ValueError, None, dir(); floor(n / 100) is a formula
        elif call or CAMEL.match(path) or CONSTANT.match(path):
            found.append((span, path, "bare"))
    return found


class Package:
    """What the sources declare: public modules and their ``__all__``, every module's top-level
    names (private modules included)."""

    def __init__(self, modules=None, names=None, defined=None):
        if modules is None:
            paths = all_modules()
            modules = set(paths)
            names = {m: declared_all(p) for m, p in public_modules().items()}
            defined = {m: set(defined_names(p)) for m, p in paths.items()}
        self.modules, self.names, self.defined = modules, names, defined

    def public(self, module):
        return not any(p.startswith("_") for p in module.split("."))

    def exports(self, module, name):
        if self.public(module):
            return name in (self.names.get(module) or ())
        return name in self.defined.get(module, ())

    def dotted(self, path):
        """None when the dotted pointer resolves, else why not."""
        parts = path.split(".")
        if parts[0] != "lessonlib":
            parts = ["lessonlib"] + parts
            if ".".join(parts[:2]) not in self.modules:
                return None  # not lessonlib's (torch.float16, a config key's path)
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            if module in self.modules:
                rest = parts[cut:]
                if not rest or self.exports(module, rest[0]):
                    return None
                return f"{rest[0]} is not {'public in' if self.public(module) else 'in'} " \
                       f"{module}"
        return f"{'.'.join(parts)} is not a module of lessonlib"

    def bare(self, name, module):
        """None when the bare pointer resolves in ``module``'s section (None: any section that
        is not a module's), else why not."""
        if module is None:
            if any(self.exports(m, name) for m in self.names):
                return None
            return f"{name} is public in no module (write module.{name})"
        if self.exports(module, name):
            return None
        package = module if any(m.startswith(module + ".") for m in self.modules) else \
            module.rsplit(".", 1)[0]
        private = [m for m in self.modules if m.startswith(package + "._")
                   and m.count(".") == package.count(".") + 1]
        if CAMEL.match(name) and any(name in self.defined.get(m, ()) for m in private):
            return None
        return f"{name} is not public in {module}"


def pointer_problems(text, package):
    """What docs/CONTRACT.md points at that is not there: a list of sentences."""
    problems = []
    for title, module, body in sections(text):
        for span, path, kind in pointers(body):
            why = package.dotted(path) if kind == "dotted" else package.bare(path, module)
            if why:
                problems.append(f"{title}: `{span}`: {why}")
    return problems


def section_problems(text, modules):
    """Public modules without a section (or with an empty one), sections of no public module."""
    found = {module: body for _, module, body in sections(text) if module}
    problems = []
    for module in sorted(modules):
        if module not in found:
            problems.append(f"{module} has no section in docs/CONTRACT.md")
        elif len(WORD.findall(re.sub(r"`[^`]*`", "", found[module]))) < MIN_PARAGRAPH_WORDS:
            problems.append(f"{module}'s section has no paragraph")
    for module in sorted(set(found) - set(modules)):
        problems.append(f"docs/CONTRACT.md has a section for {module}, which is not a public "
                        f"module")
    return problems


def restated(text, docs):
    """{(module, name): (shared runs, runs)} of the docstrings ``text`` restates."""
    found = {}
    for key, doc in docs.items():
        if restates(doc, text):
            found[key] = shared_runs(doc, text)
    return found


def test_every_public_module_has_a_section_with_a_paragraph():
    assert not section_problems(API.read_text(), public_modules())


def test_every_name_the_contract_points_at_is_public():
    assert not pointer_problems(API.read_text(), Package())


def test_the_contract_restates_no_docstring():
    found = restated(API.read_text(), docstrings())
    assert not found, {f"{m}.{n}": f"{s} of {t} runs" for (m, n), (s, t) in found.items()}


def test_the_docstrings_read_are_the_reference():
    """The measure reads the docstrings pdoc shows: functions, classes, constants (the string
    after the assignment), ``__doc__`` set on a namedtuple, a re-export's source."""
    docs = docstrings()
    assert docs[("lessonlib.attention", "TILE_FULL")].startswith("Tile code 2")
    assert docs[("lessonlib.triton_attention", "TILE_FULL")] == \
        docs[("lessonlib.attention", "TILE_FULL")]
    assert docs[("lessonlib.kernel_plan", "Stretch")].startswith("Stretch(name, start, end")
    assert "one pass" in docs[("lessonlib.softmax", "online_softmax")]
    assert len(docs) > 400


def test_the_checks_find_a_stale_name_a_missing_section_and_a_restatement():
    text = ("# Title\n\nSee `m.f()` and `lessonlib.m.gone`, `rope_theta` and `torch.float16`.\n\n"
            "### `lessonlib.m`\n\nThe module m does one thing: `f()`, `KEY`, `Thing` and `old()`"
            " with `SHAPE_KEY`, never `ValueError` or `exp(x - m)`.\n\n"
            "### `lessonlib.ghost`\n\nA section for a module that went.\n")
    package = Package(modules={"lessonlib", "lessonlib.m", "lessonlib.n", "lessonlib._private"},
                      names={"lessonlib": [], "lessonlib.m": ["f", "KEY"], "lessonlib.n": ["g"]},
                      defined={"lessonlib._private": {"Thing"}})
    assert pointer_problems(text, package) == [
        "Title: `lessonlib.m.gone`: gone is not public in lessonlib.m",
        "`lessonlib.m`: `old()`: old is not public in lessonlib.m",
        "`lessonlib.m`: `SHAPE_KEY`: SHAPE_KEY is not public in lessonlib.m",
    ]  # Thing lives in a private module of the package; rope_theta and torch are no pointers
    assert section_problems(text, ["lessonlib.m", "lessonlib.n"]) == [
        "lessonlib.n has no section in docs/CONTRACT.md",
        "docs/CONTRACT.md has a section for lessonlib.ghost, which is not a public module",
    ]
    assert section_problems("### `lessonlib.m`\n\n`f()` and `KEY`.\n", ["lessonlib.m"]) == [
        "lessonlib.m's section has no paragraph"]
    docs = {("lessonlib.m", "f"): "Does one thing with m, and nothing else at all."}
    assert restated("It does one thing with m, and nothing else.", docs) == {
        ("lessonlib.m", "f"): (4, 6)}
    assert restated(text, docs) == {}


def test_the_sections_cover_the_compute_modules_and_the_topic_layers():
    found = {module for _, module, _ in sections(API.read_text()) if module}
    for module in ("lessonlib.attention", "lessonlib.rope", "lessonlib.kv_cache",
                   "lessonlib.triton_attention", "lessonlib.plots", "lessonlib.widgets",
                   "lessonlib.checks", "lessonlib.widgets.rope", "lessonlib.checks.rope"):
        assert module in found, module


def test_every_public_module_declares_its_public_names():
    """The pointers and the measure go by ``__all__`` (the package itself defines only
    ``__version__``)."""
    assert not [m for m, p in public_modules().items()
                if declared_all(p) is None and m != "lessonlib"]


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
