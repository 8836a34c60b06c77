"""Static checks of the committed notebooks (nbval compares their outputs; these make sure
there is something to compare, and that each notebook follows the course's shape)."""
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
def test_shape_of_a_lesson(path):
    nb = load(path)
    assert 12 <= len(nb["cells"]) <= 25, f"{len(nb['cells'])} cells"
    checks = [c for c in code_cells(nb) if EXERCISE.search(source(c))]
    assert 2 <= len(checks) <= 4, "two to four checked exercises"
    for c in checks:  # committed unfilled: the check says so, deterministically
        text = json.dumps(c["outputs"])
        assert "not attempted" in text and NOT_ATTEMPTED.split(":")[0] in text
    skips = sum(source(c).count("NBVAL_IGNORE_OUTPUT") + source(c).count("NBVAL_SKIP")
                for c in code_cells(nb))
    assert skips <= len(code_cells(nb)) // 4


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_computes_with_lessonlib(path):
    """Numbers come from lessonlib; the kernel keeps its own matplotlib backend."""
    nb = load(path)
    text = "\n".join(source(c) for c in code_cells(nb))
    assert "lessonlib" in text
    assert "MPLBACKEND" not in text


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
# ("as the source says", "Example 12"), in a notebook, a check's message or a docstring.
CITES_OUTSIDE = re.compile(
    r"\bExamples? \d+\b|\b(?:the )?(?:reference|source) texts?\b|\bthe source (?:says|draws|"
    r"text|gives)\b|\bthe (?:llama3/longrope )?notes\b|\bthe text's\b|\bthe lesson's\b|"
    r"attention-optimizations-and|rope-scaling-sliding|llama3-and-longrope|\.\./shared|API\.md",
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
    paths += glob.glob(os.path.join(ROOT, "instructors", "solutions", "*.py"))
    paths += glob.glob(os.path.join(ROOT, "lessonlib", "configs", "*.json"))  # their _source notes
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
