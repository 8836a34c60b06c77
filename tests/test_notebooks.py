"""Static checks of the committed notebooks (nbval compares their outputs; these make sure
there is something to compare, and that each notebook follows the course's shape)."""
import ast
import glob
import json
import os
import re

import pytest

from lessonlib.checks import NOT_ATTEMPTED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXERCISE = re.compile(r"^checks\.\w+\.\w+\(", re.M)  # an exercise cell calls checks.<topic>.<name>(
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "[0-9]*.ipynb")))


def load(path):
    with open(path) as f:
        return json.load(f)


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def source(cell):
    return "".join(cell["source"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_every_notebook_is_valid_nbformat(path):
    """Jupyter opens an invalid notebook with a warning and nbgrader refuses it (a markdown
    cell that carries outputs, say, as a hand edit of the JSON can leave)."""
    import nbformat
    nbformat.validate(nbformat.read(path, as_version=4))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_every_code_cell_was_run_and_has_output(path):
    """A notebook committed without outputs would pass nbval silently."""
    for i, cell in enumerate(code_cells(load(path))):
        assert cell.get("execution_count") is not None, f"code cell {i} was never run"
        assert cell.get("outputs"), f"code cell {i} has no stored output"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_no_errors_or_warnings_stored(path):
    for i, cell in enumerate(code_cells(load(path))):
        for out in cell["outputs"]:
            assert out["output_type"] != "error", f"cell {i}: {out.get('ename')}"
            if out["output_type"] == "stream":
                assert out["name"] != "stderr", f"cell {i} wrote to stderr: {''.join(out['text'])}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_each_notebook_opens_with_what_it_assumes_and_what_it_teaches(path):
    """The first cell says which earlier notebooks it builds on and what the student can do
    after it (STYLE.md: "how a notebook teaches", 1); every notebook after 01 names one."""
    first = " ".join(source(load(path)["cells"][0]).split())
    assert "**Assumes**" in first and "**After it**" in first
    number = int(os.path.basename(path)[:2])
    if number > 1:
        assumes = first.split("**Assumes**", 1)[1].split("**After it**", 1)[0]
        named = [int(n) for n in re.findall(r"\b(0\d|10)\b", assumes)]
        assert named and all(n < number for n in named), assumes


# ------------------------------------------------------------------ a core path, then going deeper
# A notebook is a core path (what its exercises need, read in about 45 minutes) followed by
# optional sections, each opening with a markdown cell whose first line is "## Going deeper: ..."
# and each with at least one checked exercise of its own. The time of a run of cells is
# estimated from its text, the rule the README's table states: the markdown's words at 75 words
# a minute (worked numbers are redone by hand), one minute per code cell that is read and run,
# 5 minutes per numeric warm-up and 15 per exercise that asks for a function (its cell holds a
# ``def``), rounded to 5 minutes.
GOING_DEEPER = re.compile(r"^## Going deeper: \S")
CORE_MINUTES = 45


def parts(nb):
    """(core cells, [(title, cells) of each going-deeper section])."""
    core, sections = [], []
    for cell in nb["cells"]:
        first = source(cell).lstrip().split("\n", 1)[0]
        if cell["cell_type"] == "markdown" and GOING_DEEPER.match(first):
            sections.append((first.split(":", 1)[1].strip(), []))
        (sections[-1][1] if sections else core).append(cell)
    return core, sections


def exercise_cells(cells):
    return [c for c in cells if c["cell_type"] == "code" and EXERCISE.search(source(c))]


def minutes(cells):
    words = sum(len(source(c).split()) for c in cells if c["cell_type"] == "markdown")
    code = [c for c in cells if c["cell_type"] == "code"]
    exercises = exercise_cells(cells)
    builds = sum("def " in source(c) for c in exercises)
    m = words / 75 + (len(code) - len(exercises)) + 5 * (len(exercises) - builds) + 15 * builds
    return 5 * round(m / 5)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_shape_of_a_lesson(path):
    nb = load(path)
    core, sections = parts(nb)
    assert 12 <= len(core) <= 25, f"{len(core)} cells on the core path"
    assert len(nb["cells"]) <= 40, f"{len(nb['cells'])} cells in all"
    checks = exercise_cells(core)
    assert 2 <= len(checks) <= 4, "two to four checked exercises on the core path"
    assert any("def " in source(c) for c in exercise_cells(nb["cells"])), (
        "no exercise asks for a function: the student never builds the mechanism")
    assert minutes(core) <= CORE_MINUTES, f"core path about {minutes(core)} minutes"
    assert any(source(c).startswith("## Summary") for c in core), "the core path ends unsummed"
    for title, cells in sections:
        assert exercise_cells(cells), f"going deeper ({title}): no exercise of its own"
    for c in exercise_cells(nb["cells"]):  # committed unfilled: the check says so, deterministically
        text = json.dumps(c["outputs"])
        assert "not attempted" in text and NOT_ATTEMPTED.split(":")[0] in text
    skips = sum(source(c).count("NBVAL_IGNORE_OUTPUT") + source(c).count("NBVAL_SKIP")
                for c in code_cells(nb))
    assert skips <= len(code_cells(nb)) // 4


def test_readme_gives_each_notebooks_minutes_by_its_rule():
    """The README's table: the core path's minutes and the going-deeper sections', as
    ``minutes`` estimates them from the committed notebooks."""
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    totals = [0, 0]
    for path in NOTEBOOKS:
        stem = os.path.basename(path)[:-len(".ipynb")]
        core, sections = parts(load(path))
        deeper = sum(minutes(cells) for _, cells in sections)
        row = re.search(rf"^\| `{stem}` \|.*\| (\d+) \| (\d+|-) \|$", readme, re.M)
        assert row, f"README: no row for {stem} ending in its minutes"
        assert (int(row[1]), row[2]) == (minutes(core), str(deeper) if deeper else "-"), stem
        totals = [totals[0] + minutes(core), totals[1] + deeper]
    said = " ".join(readme.split())
    assert (f"The core paths take about {totals[0] / 60:.1f} hours in all ({totals[0]} minutes), "
            f"the going-deeper sections about {totals[1] / 60:.1f} more.") in said


# ------------------------------------------------------------------ numbers come from lessonlib
# Read with ast, cell by cell in order. A name is "from lessonlib" when a cell imports it from
# lessonlib, or binds it (assignment, for, with, :=, def) from an expression that uses such a
# name. Two rules a notebook that prints hard-coded numbers breaks:
#   A. a code cell whose committed text output shows a digit imports from lessonlib or uses a
#      name from lessonlib (a cell of plain arithmetic and prints is a copy of compute);
#   B. nothing printed (a print argument, an f-string field, a cell's displayed last expression)
#      is a numeric literal, or a name bound only to numeric literals that nothing but a print
#      reads (``gib = 16.0`` then ``print(f"{gib} GiB")``: a result typed in, not computed).
# Inputs (``n = 131_072``, then used by a call) and worked arithmetic on them (``2 * heads *
# head_dim``) pass: the style asks for numbers a student can redo by hand. A number inside a
# string literal (a table header's "32 layers") is not read: rule A still needs the cell to
# compute with lessonlib.

def _python(cell):
    """A code cell's source as Python: magics and shell lines blanked (line numbers kept)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                     for line in source(cell).splitlines())


def _names(node, ctx):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _loaded(node):
    return _names(node, ast.Load)


def _stored(node):
    return _names(node, ast.Store)


def _is_print(node):
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "print")


def _is_number(node):
    return (isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex))
            and not isinstance(node.value, bool)) or (
        isinstance(node, ast.UnaryOp) and _is_number(node.operand))


def _bindings(stmt):
    """(targets, value) of every binding inside ``stmt``; a def binds its name from its body."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Assign):
            yield set().union(*map(_stored, node.targets)), node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and node.value:
            yield _stored(node.target), node.value
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            yield _stored(node.target), node.iter
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            yield _stored(node.optional_vars), node.context_expr
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield {node.name}, node


def _literal_bindings(stmt):
    """Names ``stmt`` binds to a numeric literal: ``x = 2.0``, ``a, b = 8, 2``."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                pairs = [(target, node.value)]
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                        and len(target.elts) == len(node.value.elts):
                    pairs = zip(target.elts, node.value.elts)
                for t, v in pairs:
                    if isinstance(t, ast.Name):
                        yield t.id, _is_number(v)


def _shown(tree):
    """Expressions a cell displays: print arguments, their f-string fields, the last expression."""
    out = [arg for node in ast.walk(tree) if _is_print(node) for arg in node.args]
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr) and not _is_print(last.value):
        out.append(last.value)
    fields = [f.value for e in out if isinstance(e, ast.JoinedStr)
              for f in ast.walk(e) if isinstance(f, ast.FormattedValue)]
    return [e for e in out if not isinstance(e, ast.JoinedStr)] + fields


def _output_text(cell):
    texts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            texts.append("".join(out["text"]))
        elif "text/plain" in out.get("data", {}):
            texts.append("".join(out["data"]["text/plain"]))
    return "\n".join(texts)


def hard_coded_numbers(nb):
    """[(cell index, why)] for each place a notebook prints a number lessonlib did not compute
    (rules A and B above); empty for a notebook whose numbers all come from lessonlib calls."""
    cells = [(i, c, ast.parse(_python(c))) for i, c in enumerate(nb["cells"])
             if c["cell_type"] == "code"]
    from_lib, literal, computed_from = set(), {}, set()
    for _, _, tree in cells:  # names a computation reads (being printed as such does not count)
        shown_ids = {id(e) for e in _shown(tree) if isinstance(e, ast.Name)}
        computed_from |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                          and isinstance(n.ctx, ast.Load) and id(n) not in shown_ids}
    found = []
    for i, cell, tree in cells:
        imports = False
        for stmt in tree.body:
            for node in ast.walk(stmt):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    module = getattr(node, "module", None) or ""
                    for alias in node.names:
                        if (module or alias.name).split(".")[0] == "lessonlib":
                            from_lib.add((alias.asname or alias.name).split(".")[0])
                            imports = True
            for name, is_literal in _literal_bindings(stmt):
                literal[name] = is_literal
            grew = True
            while grew:  # to a fixed point: a for loop over a lessonlib result, then its body
                grew = False
                for targets, value in _bindings(stmt):
                    if targets - from_lib and _loaded(value) & from_lib:
                        from_lib |= targets
                        grew = True
        if re.search(r"\d", _output_text(cell)) and not (imports or _loaded(tree) & from_lib):
            found.append((i, "prints numbers but calls nothing from lessonlib"))
        for expr in _shown(tree):
            if _is_number(expr) or (isinstance(expr, ast.Name) and literal.get(expr.id)
                                    and expr.id not in computed_from):
                found.append((i, f"prints the literal {ast.unparse(expr)}"))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_printed_numbers_come_from_lessonlib(path):
    """Every number a notebook prints is computed, with lessonlib (rules A and B above); the
    kernel keeps its own matplotlib backend."""
    nb = load(path)
    assert not hard_coded_numbers(nb)
    assert "MPLBACKEND" not in "\n".join(source(c) for c in code_cells(nb))


def _notebook(*cells):
    """A notebook of code cells, each (source, printed text)."""
    return {"cells": [{"cell_type": "code", "source": src, "execution_count": 1,
                       "outputs": [{"output_type": "stream", "name": "stdout", "text": text}]}
                      for src, text in cells]}


def test_a_notebook_that_prints_hard_coded_numbers_fails():
    setup = ("from lessonlib.models.configs import load_config\n"
             "from lessonlib.kv_cache import kv_bytes_per_token\n"
             "cfg = load_config('Llama-3.1-8B')", "")
    computed = ("n = 8192\nper_token = kv_bytes_per_token(cfg)\n"
                "print(f'{n:,} tokens: {n * per_token / 2**30:.2f} GiB')",
                "8,192 tokens: 1.00 GiB\n")
    assert hard_coded_numbers(_notebook(setup, computed)) == []
    by_hand = ("n, per_token = 8192, 131072\nprint(f'{n * per_token / 2**30:.2f} GiB')",
               "1.00 GiB\n")
    typed_in = ("gib = 1.0\nprint(f'KV cache: {gib} GiB')", "KV cache: 1.0 GiB\n")
    bare = ("print('KV cache, GiB:', 1.0)", "KV cache, GiB: 1.0\n")
    displayed = ("per_token = kv_bytes_per_token(cfg)\n131072", "131072")
    assert hard_coded_numbers(_notebook(setup, by_hand)) == [
        (1, "prints numbers but calls nothing from lessonlib")]
    assert hard_coded_numbers(_notebook(setup, computed, typed_in)) == [
        (2, "prints numbers but calls nothing from lessonlib"), (2, "prints the literal gib")]
    assert hard_coded_numbers(_notebook(setup, computed, bare))[-1] == (2, "prints the literal 1.0")
    assert hard_coded_numbers(_notebook(setup, displayed)) == [(1, "prints the literal 131072")]


def test_notebooks_are_numbered_in_teaching_order():
    names = [os.path.basename(p) for p in NOTEBOOKS]
    assert names == sorted(names)
    assert len({n[:2] for n in names}) == len(names)


TORCH_USE = re.compile(r"^\s*(import|from) torch\b|\btorch\.\w|import .*\btriton_attention\b|"
                       r"lessonlib\.triton_attention\b|lessonlib\.tinylm import|import lessonlib\.tinylm\b",
                       re.M)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_cells_that_need_torch_or_triton_say_so(path):
    """Where torch or triton is absent (macOS, Windows, Intel Macs), only cells that start with
    %%requires are off, and they print why; every other cell must run without them."""
    nb = load(path)
    cells = code_cells(nb)
    for i, cell in enumerate(cells):
        text = source(cell)
        needs = text.startswith("%%requires ")
        uses = bool(TORCH_USE.search(text))
        assert needs or not uses, f"code cell {i} uses torch or triton without %%requires"
        if needs:
            assert "%load_ext lessonlib.requires" in source(cells[0]), "the magic is not loaded"
            names = text.split("\n", 1)[0].split()[1:]
            assert names and set(names) <= {"torch", "triton"}, names


# ------------------------------------------------------------------ a course that stands alone
# The course was written from texts the students never get: nothing they read may point at them
# ("as the source says", "Example 12"), in a notebook, a check's message or a docstring. The
# contract is the repository's own docs/CONTRACT.md.
CITES_OUTSIDE = re.compile(
    r"\bExamples? \d+\b|\b(?:the )?(?:reference|source) texts?\b|\bthe source (?:says|draws|"
    r"text|gives)\b|\bthe (?:llama3/longrope )?notes\b|\bthe text's\b|\bthe lesson's\b|"
    r"attention-optimizations-and|rope-scaling-sliding|llama3-and-longrope|\.\./shared|(?<!docs/)API\.md",
    re.I)


def _text_outputs(cell):
    for out in cell.get("outputs", []):
        if "text" in out:
            yield "".join(out["text"])
        for mime in ("text/plain", "text/markdown", "text/html"):
            if mime in out.get("data", {}):
                yield "".join(out["data"][mime])


def _student_text(nb):
    """(where, text) of everything a student reads: cell sources and their text outputs."""
    for i, cell in enumerate(nb["cells"]):
        yield f"cell {i}", source(cell)
        for text in _text_outputs(cell):
            yield f"cell {i} output", text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_no_notebook_cites_a_text_the_student_lacks(path):
    found = [(where, m.group(0)) for where, text in _student_text(load(path))
             for m in CITES_OUTSIDE.finditer(text)]
    assert not found, found


def test_package_docs_and_messages_cite_nothing_outside_the_course():
    """Docstrings (help()), check messages, the configs' notes and the guides: the repository is
    self-sufficient."""
    paths = glob.glob(os.path.join(ROOT, "lessonlib", "**", "*.py"), recursive=True)
    paths += [os.path.join(ROOT, p) for p in ("README.md", "notebooks/README.md",
                                              "instructors/README.md")]
    paths += glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
    paths += glob.glob(os.path.join(ROOT, "instructors", "solutions", "*.py"))
    paths += glob.glob(os.path.join(ROOT, "lessonlib", "models", "configs", "*.json"))  # their _source notes
    for folder in ("tests", "scripts", "benchmarks"):  # a maintainer has only the repository
        paths += [p for p in glob.glob(os.path.join(ROOT, folder, "**", "*.py"), recursive=True)
                  if not p.endswith("test_notebooks.py")]
    found = [(os.path.relpath(p, ROOT), m.group(0)) for p in paths if os.path.exists(p)
             for m in CITES_OUTSIDE.finditer(open(p).read())]
    assert not found, found


def _forms(value):
    """How a number may be printed: a whole number with and without commas (only with at least
    4 significant digits: 256 or 768 are everywhere), else 3 to 6 significant digits."""
    forms = set()
    if float(value) == int(value):
        if len(str(abs(int(value))).rstrip("0")) >= 4:
            forms |= {f"{int(value):,}", f"{int(value)}"}
    else:
        for k in range(3, 7):
            text = f"{value:.{k}g}"
            if len(text.replace("-", "").replace(".", "").lstrip("0")) >= 3:
                forms |= {text, f"{value:,.{k}g}"}
    return forms


def _numeric_answers():
    from _support import solutions
    from test_checks import exercises
    for param in exercises():
        stem, _, name = param.values
        answer = getattr(solutions(stem), name, None)
        if isinstance(answer, (int, float)) and not isinstance(answer, bool):
            yield pytest.param(stem, name, answer, id=f"{stem}:{name}")


@pytest.mark.parametrize("stem, name, answer", list(_numeric_answers()))
def test_no_exercise_answer_is_printed_in_its_notebook(stem, name, answer):
    """An answer shown in a summary, a title or a readout is an answer given away."""
    nb = load(os.path.join(ROOT, "notebooks", f"{stem}.ipynb"))
    shown = [(where, form) for where, text in _student_text(nb) for form in _forms(answer)
             if re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d])", text)]
    assert not shown, f"{name} = {answer!r} appears in {stem}: {shown}"
