"""scripts/assignments.py end to end, on temporary course folders: the nbgrader source version
of every notebook, its student release, and grades exported from the gradebook.

Synthetic submissions: the source version (full marks, no cell failing), the untouched release
(0), every exercise right (full marks), typical wrong answers (exactly the points of the
exercises left right), a renamed and an unreadable notebook (0, named in the report), a function
that knows only the check's own probes (the hidden tests catch it); a syntax error and an
infinite loop in a course with a 5 s per-cell timeout. The wrong answers are the ones
tests/test_checks_*.py feed the checks, collected by running those tests with a recorder
(``typical_wrong_answers``). Three courses (notebook 10, which runs its model, apart) are graded
two at a time: about 5 minutes on 2 cores.

Runs in .venv-grading (make grading), which has nbgrader; the student's .venv has not."""
import ast
import glob
import html
import importlib
import importlib.util
import inspect
import json
import math
import re
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

from _support import ROOT

ROOT = Path(ROOT)
spec = importlib.util.spec_from_file_location("assignments", ROOT / "scripts" / "assignments.py")
A = importlib.util.module_from_spec(spec)
sys.modules["assignments"] = A  # dataclasses look their module up there
spec.loader.exec_module(A)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
STEMS = [p.stem for p in NOTEBOOKS]


def _exercises():
    return {p.stem: A.exercises(p) for p in NOTEBOOKS}


EXERCISES = _exercises()


def _column(ex):
    return f"{ex.notebook}:{ex.name}"


# ------------------------------------------------------------------ the typical wrong answers

class _Recorder:
    """A topic module of lessonlib.checks whose checks write down what they were given."""

    def __init__(self, module, log):
        self._module, self._log = module, log

    def __getattr__(self, attr):
        value = getattr(self._module, attr)
        if not hasattr(value, "preamble"):
            return value

        def recorded(answer, _check=value):
            verdict = _check(answer)
            self._log.append((_check.__name__, answer, verdict))
            return verdict
        return recorded


def _calls(fn):
    """Argument dicts for a test function: one for no arguments, one per parametrize case."""
    params = list(inspect.signature(fn).parameters)
    if not params:
        return [{}]
    marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
    if len(marks) != 1:
        return []
    names, cases = marks[0].args[:2]
    names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
    if set(names) != set(params):
        return []
    calls = []
    for case in cases:
        values = case.values if hasattr(case, "values") else case
        values = values if len(names) > 1 else (values,)
        calls.append(dict(zip(names, values)))
    return calls


def _recorded_answers():
    """(check name, answer, verdict) for every check call tests/test_checks_<topic>.py make."""
    log = []
    for path in sorted(glob.glob(str(ROOT / "tests" / "test_checks_*.py"))):
        module = importlib.import_module(Path(path).stem)
        saved = {k: v for k, v in vars(module).items() if isinstance(v, types.ModuleType)
                 and v.__name__.startswith("lessonlib.checks.")}
        for k, v in saved.items():
            setattr(module, k, _Recorder(v, log))
        try:
            for name, fn in vars(module).items():
                if not name.startswith("test_") or getattr(fn, "is_hypothesis_test", False):
                    continue
                for kwargs in _calls(fn):
                    try:
                        fn(**kwargs)
                    except (Exception, pytest.skip.Exception, pytest.fail.Exception):
                        pass  # a failing or skipping test still recorded what it gave
        finally:
            for k, v in saved.items():
                setattr(module, k, v)
    return log


def _literal(value):
    """Python source that evaluates to ``value`` (with numpy as np), or None."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, np.ndarray):
        return f"np.array({value.tolist()!r}, dtype=np.{value.dtype})"
    if isinstance(value, np.generic):
        return f"np.{type(value).__name__}({value.item()!r})"
    if isinstance(value, (list, tuple, set)):
        parts = [_literal(v) for v in value]
        if None in parts:
            return None
        if isinstance(value, set):
            return "{" + ", ".join(sorted(parts)) + "}" if parts else "set()"
        body = ", ".join(parts) + ("," if isinstance(value, tuple) and len(parts) == 1 else "")
        return ("[%s]" if isinstance(value, list) else "(%s)") % body
    if isinstance(value, dict):
        parts = [(_literal(k), _literal(v)) for k, v in value.items()]
        if any(None in p for p in parts):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in parts) + "}"
    return None


def _function_sources(fn):
    """The candidate sources of a test's function: its def, or each lambda on its line."""
    if fn.__name__ != "<lambda>":
        return [textwrap.dedent(inspect.getsource(fn)).strip()]
    source = Path(inspect.getsourcefile(fn)).read_text()
    return [ast.get_source_segment(source, node) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Lambda) and node.lineno == fn.__code__.co_firstlineno]


def _answer_codes(answer, variable):
    """Candidate cell codes binding ``variable`` to ``answer``: a value as a literal, a
    function by its source (the values it closes over set in a function around it)."""
    lines = ["import math", "import numpy as np"]
    if not inspect.isfunction(answer):
        literal = _literal(answer)
        return [] if literal is None else ["\n".join(lines + [f"{variable} = {literal}"])]
    try:
        sources = _function_sources(answer)
    except (OSError, TypeError):
        return []
    closed = [(name, _literal(cell.cell_contents)) for name, cell in
              zip(answer.__code__.co_freevars, answer.__closure__ or ())]
    if any(value is None for _, value in closed):
        return []
    codes = []
    for src in sources:
        made = src if answer.__name__ == "<lambda>" else f"{src}\n{answer.__name__}"
        if closed:
            *body, last = made.splitlines()
            codes.append("\n".join(lines + ["def _typical_slip():"] +
                                   [f"    {name} = {value}" for name, value in closed] +
                                   [textwrap.indent(line, "    ") for line in body] +
                                   [f"    return {last}", f"{variable} = _typical_slip()"]))
        else:
            *body, last = made.splitlines()
            codes.append("\n".join(lines + body + [f"{variable} = {last}"]))
    return codes


def typical_wrong_answers():
    """{(topic, name): cell code} for every exercise: the first wrong answer the check tests
    give it (a slip, not an unreadable form, where there is one) that, written into a cell,
    gets the same "not yet" from the check."""
    from lessonlib import checks
    by_check = {}
    for name, answer, verdict in _recorded_answers():
        if verdict.ok is False:
            by_check.setdefault(name, []).append((answer, verdict))
    found = {}
    for stem, exs in EXERCISES.items():
        for ex in exs:
            check = getattr(getattr(checks, ex.topic), ex.name)
            candidates = sorted(by_check.get(ex.name, []), key=lambda c: (
                c[1].message.startswith("Give"), c[1].message.startswith("Not ")))
            codes = (code for answer, _ in candidates
                     for code in _answer_codes(answer, ex.variable)
                     if _same_verdict(code, ex.variable, check, answer))
            code = next(codes, None)
            if code is not None:
                found[(ex.topic, ex.name)] = code
    return found


def _same_verdict(code, variable, check, answer):
    """``code``, run on its own, binds an answer the check calls wrong as it calls ``answer``."""
    namespace = {}
    try:
        exec(code, namespace)
    except Exception:  # noqa: BLE001 -- a candidate that does not stand alone
        return False
    again = check(namespace[variable])
    return again.ok is False and again.message == check(answer).message


# ------------------------------------------------------------------ the course and its grades

def _submit(folder, student, stem, nb):
    path = folder / student / stem / f"{stem}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1))
    return path


def _release(course, stem):
    return json.loads((course / "release" / stem / f"{stem}.ipynb").read_text())


def _fill(nb, answers):
    """The release ``nb`` with exercise cells replaced: {cell id: cell code}."""
    nb = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        if cell.get("id") in answers:
            cell["source"] = answers[cell["id"]].splitlines(keepends=True)
    return nb


def _right(ex):
    return A.filled(ex, ex.solution)


WRONG = {}  # {(topic, name): cell code}, filled by the graded fixture


def _wrong_plan(exs):
    """Every exercise of a notebook wrong except the last, which stays right."""
    return {ex.cell_id: (A.filled(ex, WRONG[(ex.topic, ex.name)]) if i < len(exs) - 1
                         else _right(ex)) for i, ex in enumerate(exs)}


CHEAT = """\
def update(m, l, x):  # right on the scores the check uses (whole and half numbers) only
    m_new = max(m, x)
    if (x * 2) % 1:
        return m_new, l
    return m_new, l * math.exp(m - m_new) + math.exp(x - m_new)

checks.attention.online_softmax_update(update)"""


HEAVY = "10_real_model_long_context"  # runs its model (half the grading time): a course apart
GROUPS = {"main": [s for s in STEMS if s != HEAVY], "model": [HEAVY]}
SHORT_TIMEOUT_S = 5


def _standard_submissions(course, subs, stems):
    """source, untouched, right and wrong for each notebook; the cheat, renamed and unreadable
    ones for the notebooks they use."""
    for stem in stems:
        exs = EXERCISES[stem]
        source = json.loads((course / "source" / stem / f"{stem}.ipynb").read_text())
        _submit(subs, "source", stem, source)
        _submit(subs, "untouched", stem, _release(course, stem))
        _submit(subs, "right", stem, _fill(_release(course, stem),
                                            {ex.cell_id: _right(ex) for ex in exs}))
        _submit(subs, "wrong", stem, _fill(_release(course, stem), _wrong_plan(exs)))
    if "02_online_softmax" in stems:
        stem = "02_online_softmax"
        cheat = {ex.cell_id: _right(ex) for ex in EXERCISES[stem]}
        cheat[EXERCISES[stem][0].cell_id] = "import math\n" + CHEAT
        _submit(subs, "cheat", stem, _fill(_release(course, stem), cheat))
    if STEMS[0] in stems:
        stem = STEMS[0]
        right = _fill(_release(course, stem), {ex.cell_id: _right(ex) for ex in EXERCISES[stem]})
        renamed = _submit(subs, "renamed", stem, right)
        renamed.rename(renamed.with_name(f"{stem}-Copy1.ipynb"))
        _submit(subs, "unreadable", stem, right).write_text('{"cells": [')


def _broken_submissions(course, subs, stems):
    """A syntax error in the first exercise, an infinite loop in the second."""
    stem = stems[0]
    exs = EXERCISES[stem]
    right = {ex.cell_id: _right(ex) for ex in exs}
    _submit(subs, "syntax", stem, _fill(_release(course, stem), {
        **right, exs[0].cell_id: A.filled(exs[0], "answer = 16384 * 16384 *")}))
    _submit(subs, "loop", stem, _fill(_release(course, stem), {
        **right, exs[1].cell_id: A.filled(exs[1], "while True:\n    pass")}))


def _graded(folder, stems, submissions, timeout=A.TIMEOUT_S):
    """Build a course of ``stems`` in ``folder``, submit, grade: (course, {student: row},
    report text)."""
    course, subs = folder / "course", folder / "submissions"
    A.build(course, [ROOT / "notebooks" / f"{s}.ipynb" for s in stems], timeout=timeout)
    submissions(course, subs, stems)
    rows, report = A.grade(subs, course, csv_path=course / "grades.csv")
    return course, {row["student"]: row for row in rows}, report


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{group: (course folder, {student: CSV row}, report)}: the course of every notebook but
    notebook 10, notebook 10's, and notebook 01's with a 5 s per-cell timeout (the syntax error
    and the loop), graded two at a time (each is its own nbgrader run and gradebook)."""
    from concurrent.futures import ThreadPoolExecutor
    if importlib.util.find_spec("nbgrader") is None:
        pytest.fail(f"{sys.prefix} has no nbgrader: run these tests with make grading "
                    f"(.venv-grading)", pytrace=False)
    WRONG.update(typical_wrong_answers())
    jobs = {name: (tmp_path_factory.mktemp(name), stems, _standard_submissions)
            for name, stems in GROUPS.items()}
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(_graded, *job) for name, job in jobs.items()}
        futures["short"] = pool.submit(_graded, tmp_path_factory.mktemp("short"), STEMS[:1],
                                       _broken_submissions, SHORT_TIMEOUT_S)
        return {name: f.result() for name, f in futures.items()}


def _of(graded, stem):
    return graded["model" if stem == HEAVY else "main"]


def _score(row, stem):
    return sum(row[_column(ex)] for ex in EXERCISES[stem])


def _full(stem):
    return sum(ex.points for ex in EXERCISES[stem])


@pytest.mark.parametrize("stem", STEMS)
def test_the_source_version_gets_full_marks_with_no_cell_failing(graded, stem):
    folder, rows, _ = _of(graded, stem)
    assert _score(rows["source"], stem) == _full(stem)
    nb = json.loads((folder / "autograded" / "source" / stem / f"{stem}.ipynb").read_text())
    errors = [(c.get("id"), o.get("ename")) for c in nb["cells"] for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors


@pytest.mark.parametrize("stem", STEMS)
def test_the_untouched_release_gets_zero(graded, stem):
    assert _score(_of(graded, stem)[1]["untouched"], stem) == 0


@pytest.mark.parametrize("stem", STEMS)
def test_every_exercise_right_gets_full_marks(graded, stem):
    assert _score(_of(graded, stem)[1]["right"], stem) == _full(stem)


@pytest.mark.parametrize("stem", STEMS)
def test_typical_wrong_answers_get_exactly_the_points_of_the_right_ones(graded, stem):
    row, exs = _of(graded, stem)[1]["wrong"], EXERCISES[stem]
    assert [row[_column(ex)] for ex in exs] == [0] * (len(exs) - 1) + [exs[-1].points]


def test_every_exercise_has_a_typical_wrong_answer_from_the_check_tests(graded):
    missing = [f"{ex.notebook}:{ex.name}" for exs in EXERCISES.values() for ex in exs
               if (ex.topic, ex.name) not in WRONG]
    assert not missing, f"no wrong answer of tests/test_checks_*.py fits a cell: {missing}"


@pytest.mark.parametrize("group", GROUPS)
def test_the_csv_has_one_row_per_student_one_column_per_exercise_and_a_total(graded, group):
    folder, rows, _ = graded[group]
    stems = GROUPS[group]
    text = (folder / "grades.csv").read_text().splitlines()
    assert text[0].split(",") == ["student"] + [_column(ex) for s in stems
                                                for ex in EXERCISES[s]] + ["total"]
    assert sorted(line.split(",")[0] for line in text[1:]) == sorted(rows)
    full = sum(_full(stem) for stem in stems)
    assert rows["source"]["total"] == rows["right"]["total"] == full
    assert rows["wrong"]["total"] == sum(EXERCISES[s][-1].points for s in stems)
    assert rows["untouched"]["total"] == 0


def test_hidden_tests_catch_a_function_that_knows_only_the_checks_probes(graded):
    """The cheat passes the check the student sees, and fails the hidden cases."""
    from lessonlib import checks
    namespace = {"checks": checks, "math": math}
    exec(CHEAT.rsplit("\n", 1)[0], namespace)
    assert checks.attention.online_softmax_update(namespace["update"]).ok is True
    row = graded["main"][1]["cheat"]
    first, *rest = EXERCISES["02_online_softmax"]
    assert row[_column(first)] == 0 and all(row[_column(ex)] == ex.points for ex in rest)


def test_a_renamed_and_an_unreadable_notebook_score_zero_and_are_reported(graded):
    _, rows, report = graded["main"]
    stem = STEMS[0]
    assert _score(rows["renamed"], stem) == _score(rows["unreadable"], stem) == 0
    assert f"renamed / {stem}: no {stem}.ipynb (found {stem}-Copy1.ipynb: renamed?)" in report
    assert f"unreadable / {stem}: {stem}.ipynb is not a readable notebook" in report


def test_a_syntax_error_and_an_infinite_loop_are_graded_without_stopping_the_run(graded):
    """Notebook 01 with a 5 s per-cell timeout: the loop is interrupted, the cell with the
    syntax error scores 0, every other exercise of both still scores."""
    stem = STEMS[0]
    exs = EXERCISES[stem]
    _, rows, report = graded["short"]
    assert [rows["syntax"][_column(ex)] for ex in exs] == [0] + [ex.points for ex in exs[1:]]
    assert [rows["loop"][_column(ex)] for ex in exs] == \
        [exs[0].points, 0] + [ex.points for ex in exs[2:]]
    assert f"syntax / {stem}: exercise {exs[0].name}: SyntaxError" in report
    assert f"loop / {stem}: exercise {exs[1].name}: KeyboardInterrupt: ran past the per-cell " \
           f"timeout" in report


def test_generate_feedback_shows_the_scores_and_the_checks_hints(graded):
    """What instructors/README.md says a student gets back: the scores, and the hint."""
    course, _, _ = graded["main"]
    stem = "05_kv_cache"
    exs = EXERCISES[stem]
    rc, out = A.nbgrader(course, "generate_feedback", stem, "--student=wrong")
    assert rc == 0, out
    page = (course / "feedback" / "wrong" / stem / f"{stem}.html").read_text()
    page = re.sub(r"<style.*?</style>|<script.*?</script>", " ", page, flags=re.S)
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    assert f"{stem} (Score: {float(exs[-1].points)} / {float(_full(stem))})" in text
    assert f"Grade cell: {exs[0].name} Score: 0.0 / {float(exs[0].points)}" in text
    assert "[kv_cache_gib: not yet]" in text


# ------------------------------------------------------------------ the release

INPUTS = re.compile(r"[\w, ]+ = [\d_.,\s()-]+")  # n, d, B = 100, 8, 16: the question's inputs


def _distinctive(ex):
    """The lines of an exercise's solution that give it away: code that computes, not
    comments, docstrings, imports, the question's inputs, the line naming the answer, or what
    the stub itself shows (its signature)."""
    for line in ex.solution.splitlines():
        line = line.split("  #")[0].strip()
        if len(line) >= 12 and not line.startswith(("#", "import ", "from ", '"""')) \
                and not INPUTS.fullmatch(line) and line != f"{ex.variable} = {ex.name}" \
                and line not in ex.stub:
            yield line


def _readable(path):
    """What a file shows: a notebook's cell sources and text outputs (not its JSON, which
    escapes quotes), any other file as it is."""
    if path.suffix != ".ipynb":
        return path.read_text()
    cells = json.loads(path.read_text())["cells"]
    return "\n".join(["".join(c["source"]) for c in cells] +
                     ["".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                      for c in cells for o in c.get("outputs", [])])


def test_the_release_never_contains_a_reference_solution(graded):
    released = {p: _readable(p) for group in GROUPS for p in
                (graded[group][0] / "release").rglob("*") if p.is_file()}
    assert len(released) == len(STEMS)
    for exs in EXERCISES.values():
        for ex in exs:
            lines = list(_distinctive(ex))
            assert lines, ex.name
            leaks = [(p.name, line) for p, text in released.items() for line in lines
                     if line in text]
            assert not leaks, leaks
    for text in released.values():
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
        assert "_unseen" not in text


def test_the_release_shows_the_stubs_students_see_today(graded):
    for path in NOTEBOOKS:
        committed = json.loads(path.read_text())["cells"]
        released = {c.get("id"): c for c in _release(_of(graded, path.stem)[0],
                                                      path.stem)["cells"]}
        for ex in EXERCISES[path.stem]:
            assert released[ex.cell_id]["source"] == committed[ex.index]["source"], ex.where
            test = released[f"{ex.cell_id}-test"]
            assert test["metadata"]["nbgrader"]["points"] == ex.points
            assert f"checks.{ex.topic}.{ex.name}({ex.variable})" in "".join(test["source"])


def test_every_solution_fits_its_stub():
    """The reference solution, put where the stub was, makes the check say correct."""
    from lessonlib import checks
    for exs in EXERCISES.values():
        for ex in exs:
            namespace = {"checks": checks}
            exec(ex.solution, namespace)
            verdict = getattr(getattr(checks, ex.topic), ex.name)(namespace[ex.variable])
            assert verdict.ok is True, (ex.where, verdict)


# ------------------------------------------------------------------ errors that name the cell

def _notebook(tmp_path, stem, sources):
    nb = json.loads(NOTEBOOKS[0].read_text())
    nb["cells"] = [{"cell_type": "code", "execution_count": None, "id": f"c{i}",
                    "metadata": {}, "outputs": [], "source": s} for i, s in enumerate(sources)]
    path = tmp_path / f"{stem}.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_a_missing_reference_solution_is_an_error_naming_the_notebook_and_cell(tmp_path):
    path = _notebook(tmp_path, "01_attention_memory",
                     ["x = 1", "answer = None  # GiB\nchecks.attention.no_such_answer(answer)"])
    with pytest.raises(A.AssignmentError, match=r"01_attention_memory\.ipynb, cell 1 \(id c1\)"):
        A.exercises(path)
    path = _notebook(tmp_path, "99_nothing", ["answer = None\nchecks.attention.sink_share(answer)"])
    with pytest.raises(A.AssignmentError, match=r"no instructors/solutions/99_nothing\.py"):
        A.exercises(path)
    path = _notebook(tmp_path, "02_online_softmax",
                     ["answer = None\nchecks.attention.score_matrix_gib(answer)"])
    with pytest.raises(A.AssignmentError, match=r"02_online_softmax\.py defines no "
                                                r"score_matrix_gib"):
        A.exercises(path)


def test_an_exercise_cell_the_generator_cannot_read_is_an_error_naming_it(tmp_path):
    path = _notebook(tmp_path, "01_attention_memory",
                     ["checks.attention.score_matrix_gib(40)"])
    with pytest.raises(A.AssignmentError, match=r"cell 0 \(id c0\): an exercise cell must end"):
        A.exercises(path)
    path = _notebook(tmp_path, "01_attention_memory",
                     ["print(1)\nchecks.attention.score_matrix_gib(answer)"])
    with pytest.raises(A.AssignmentError, match=r"cell 0 \(id c0\): .*binds 'answer'.*found 0"):
        A.exercises(path)
    path = _notebook(tmp_path, "01_attention_memory", ["x = 1"])
    with pytest.raises(A.AssignmentError, match=r"01_attention_memory\.ipynb: no exercise cell"):
        A.exercises(path)


# ------------------------------------------------------------------ out of the student's way

def test_nbgrader_is_not_in_the_students_environment():
    """.venv-grading reaches .venv's packages through a .pth file; nothing of nbgrader's is in
    .venv: not the package, not its server or lab extension."""
    pth = Path(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
               "site-packages", "lessonlib-venv.pth")
    assert pth.exists(), f"{sys.prefix} is not .venv-grading (no {pth.name})"
    site = Path(pth.read_text().split("addsitedir(")[1].split(")")[0].strip("'\""))
    student = site.parents[2]
    assert (student / "bin" / "python").exists() and student != Path(sys.prefix)
    assert not list(site.glob("nbgrader*")), f"nbgrader is installed in {student}"
    jupyter = list((student / "share" / "jupyter").rglob("*nbgrader*")) + \
        list((student / "etc" / "jupyter").rglob("*nbgrader*"))
    assert not jupyter, jupyter
