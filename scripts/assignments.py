"""Graded assignments with nbgrader: the course folder, the student release, grades as a CSV.

    make assignments                  # .venv-grading/bin/python scripts/assignments.py build
    make grade SUBMISSIONS=dir        # .venv-grading/bin/python scripts/assignments.py grade dir

``build`` turns every notebook of notebooks/ into an nbgrader assignment of the same name, in a
course folder (default build/course, which git ignores): source/<NN_topic>/<NN_topic>.ipynb.
Each exercise cell (a code cell ending in ``checks.<topic>.<name>(<variable>)``) becomes a
solution cell: the stub that binds <variable> is replaced by the reference solution from
instructors/solutions/<NN_topic>.py between nbgrader's ``### BEGIN SOLUTION`` / ``### END
SOLUTION`` markers, so the source version runs green. After it comes an autograded test cell
(points: 1 for a value, 2 for a function) that calls the same check and passes only on
"correct"; the function exercises add hidden tests (the same check on the student's function
seen through a change of inputs a right answer does not care about; ``HIDDEN``). Then ``nbgrader
generate_assignment`` writes release/<NN_topic>/: solutions stripped, each stub put back
exactly as the student sees it today (``release_preprocessors``), hidden tests removed.

``grade`` copies a folder of submissions laid out as nbgrader's submitted/ folder
(<student>/<assignment>/<notebook>.ipynb, what ``nbgrader collect`` and ``zip_collect``
produce) into the course, runs ``nbgrader autograde`` on each assignment (a per-cell timeout;
a cell that loops is interrupted, one that fails scores zero, the run goes on), and exports
grades.csv (one row per student, one column per exercise, total) and grades-report.txt: every
submission that was renamed, missing, unreadable, failed to autograde, or had a cell fail or
time out. The gradebook is SQLite in the course folder unless ``--db URL`` names another.

Run both with .venv-grading's Python (it has nbgrader; the student's .venv does not).
"""
import argparse
import ast
import builtins
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = ROOT / "instructors" / "solutions"
DEFAULT_COURSE = ROOT / "build" / "course"
COURSE_ID = "lessonlib"
MANIFEST = "lessonlib-course.json"
CALL = re.compile(r"^checks\.(\w+)\.(\w+)\(", re.M)
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
POINTS = {"value": 1, "function": 2}  # a function is more work to write than a number
TIMEOUT_S = 120  # per cell; the slowest committed cell (notebook 10's model) takes about 12 s


class AssignmentError(ValueError):
    """Something in notebooks/ or instructors/solutions/ the generator cannot turn into an
    assignment; the message names the notebook and the cell."""


@dataclass(frozen=True)
class Exercise:
    """One exercise cell: where it is, what it checks, its stub and its reference solution."""
    notebook: str  # "01_attention_memory"
    cell_id: str
    index: int  # the cell's position in notebooks/<notebook>.ipynb
    topic: str  # checks.<topic>.<name>
    name: str
    variable: str  # what the cell passes to the check (answer, update, rotate, ...)
    function: bool  # the answer is a function
    head: str  # the cell's lines before the stub (the question, as comments)
    stub: str  # the lines that bind <variable> in the committed notebook
    tail: str  # the lines after the stub, the check call included
    solution: str  # the reference solution's code, ending with <variable> bound
    path: str  # the committed notebook

    @property
    def points(self):
        return POINTS["function" if self.function else "value"]

    @property
    def where(self):
        return f"notebooks/{self.notebook}.ipynb, cell {self.index} (id {self.cell_id})"


# ------------------------------------------------------------------ reading the notebooks

def _binds(node, name):
    """True when the top-level statement ``node`` binds ``name``."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    return name in _defined(node)


def _defined(node):
    """The names a top-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    targets = {ast.Assign: lambda n: n.targets, ast.AnnAssign: lambda n: [n.target],
               ast.AugAssign: lambda n: [n.target]}.get(type(node))
    if targets is None:
        return set()
    return {t.id for target in targets(node) for t in ast.walk(target)
            if isinstance(t, ast.Name)}


def _used(node):
    """The names a statement reads (an over-estimate for functions: their locals too)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Load)} - set(dir(builtins))


def _lines(source, node):
    """The source lines of ``node``, the comment lines right above it included."""
    lines = source.splitlines()
    start = node.lineno - 1
    if getattr(node, "decorator_list", None):
        start = node.decorator_list[0].lineno - 1
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return lines[start:node.end_lineno]


def solution_code(stem, name, variable, where):
    """The statements of instructors/solutions/<stem>.py that compute ``name``, in order (the
    imports and values it depends on included), then ``<variable> = <name>`` if they differ."""
    path = SOLUTIONS / f"{stem}.py"
    if not path.exists():
        raise AssignmentError(f"{where} checks {name}, but there is no instructors/solutions/"
                              f"{stem}.py with its reference solution")
    source = path.read_text()
    body = [n for n in ast.parse(source).body if not isinstance(n, ast.If)]  # no __main__
    at = [i for i, n in enumerate(body) if _binds(n, name)]
    if not at:
        raise AssignmentError(f"{where} checks {name}, but instructors/solutions/{stem}.py "
                              f"defines no {name} (the reference solution is missing)")
    needed, keep = {name}, []
    for node in reversed(body[:at[-1] + 1]):
        defines = _defined(node)
        if defines & needed:
            keep.append(node)
            needed = (needed - defines) | _used(node)
    code = [line for node in reversed(keep) for line in _lines(source, node)]
    if variable != name:
        code.append(f"{variable} = {name}")
    return "\n".join(code)


def _exercise(path, index, cell):
    stem = path.stem
    source = "".join(cell["source"])
    where = f"notebooks/{stem}.ipynb, cell {index} (id {cell.get('id')})"
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise AssignmentError(f"{where}: the exercise cell does not parse ({err.msg}, line "
                              f"{err.lineno})") from None
    *body, last = tree.body or [None]
    call = getattr(last, "value", None)
    if not (isinstance(last, ast.Expr) and isinstance(call, ast.Call)
            and ast.unparse(call.func).startswith("checks.") and len(call.args) == 1
            and isinstance(call.args[0], ast.Name) and not call.keywords):
        raise AssignmentError(f"{where}: an exercise cell must end with checks.<topic>.<name>"
                              f"(<variable>), the variable its stub binds; this one ends with "
                              f"{ast.get_source_segment(source, last) if last else 'nothing'!r}")
    _, topic, name = ast.unparse(call.func).split(".")
    variable = call.args[0].id
    stubs = [n for n in body if _binds(n, variable)]
    if len(stubs) != 1:
        raise AssignmentError(f"{where}: the generator looks for one statement that binds "
                              f"{variable!r} (the stub the student fills) before the check "
                              f"call, and found {len(stubs)}")
    stub = stubs[0]
    lines = source.split("\n")
    from lessonlib import checks  # the checks say which exercises take a function
    check = getattr(getattr(checks, topic, None), name, None)
    if getattr(check, "preamble", None) is None:
        raise AssignmentError(f"{where}: checks.{topic}.{name} is not an exercise check of "
                              f"lessonlib.checks")
    return Exercise(stem, cell.get("id", str(index)), index, topic, name, variable,
                    check.preamble.function is not None,
                    "\n".join(lines[:stub.lineno - 1]), "\n".join(lines[stub.lineno - 1:
                                                                           stub.end_lineno]),
                    "\n".join(lines[stub.end_lineno:]), solution_code(stem, name, variable, where),
                    str(path))


def exercises(path):
    """The exercises of one notebook, in cell order; AssignmentError when it has none."""
    path = Path(path)
    nb = json.loads(path.read_text())
    found = [_exercise(path, i, cell) for i, cell in enumerate(nb["cells"])
             if cell["cell_type"] == "code" and CALL.search("".join(cell["source"]))]
    if not found:
        raise AssignmentError(f"notebooks/{path.name}: no exercise cell (a code cell ending in "
                              f"checks.<topic>.<name>(<variable>)) was found")
    return found


# ------------------------------------------------------------------ the source version

# Hidden tests: the same check, on the student's function seen through a change of inputs that
# a right answer does not care about, so a function that only knows the check's own probes
# (they are in lessonlib, which students can read) fails. Keyed by check name; {f} is the
# student's function.
HIDDEN = {
    "online_softmax_update": '''\
def _unseen(m, l, x, c=0.75):  # every score shifted by c: m moves with it, l does not
    out = {f}(m + c, l, x + c)
    try:
        m_new, l_new = out
        return m_new - c, l_new
    except Exception:
        return out''',
    "attention_update": '''\
def _unseen(m, l, acc, x, v, c=0.75, k=2.0):  # scores shifted by c, values scaled by k
    out = {f}(m + c, l, np.asarray(acc) * k, x + c, np.asarray(v) * k)
    try:
        m_new, l_new, acc_new = out
        return m_new - c, l_new, np.asarray(acc_new, dtype=float) / k
    except Exception:
        return out''',
    "program_heads": '''\
def _unseen(pid_bh, hq, hkv, B=3):  # the same program three batch elements later
    out = {f}(pid_bh + B * hq, hq, hkv)
    try:
        b, h, h_kv = out
        return b - B, h, h_kv
    except Exception:
        return out''',
    "program_tiles": '''\
def _unseen(pid_m, n, B, causal, W, sinks, k=3):  # inputs that change no tile the kernel visits
    if causal and pid_m < -(-n // B) - 1:
        n += k * B  # keys after its last query: an earlier causal program never sees them
    if W == 0 or W >= n:
        W, sinks = n + k, sinks + k  # a window past the start hides nothing; sinks add nothing
    else:
        sinks = -(-sinks // B) * B  # sink blocks run masked whole: sinks rounded up to a block
    return {f}(pid_m, n, B, causal, W, sinks)''',
    "compute_buffer": '''\
def _unseen(config, n_ctx, ub, flash_attn, k=3):  # k times the micro-batch: k times each peak
    out = {f}(config, n_ctx, ub * k, flash_attn)
    try:
        return out / k
    except Exception:
        return out''',
    "tiled_causal": '''\
def _unseen(q, k, v, B, c=2.0, shift=3.0):  # q c and k / c: the same scores; v + shift: out too
    out = {f}(np.asarray(q) * c, np.asarray(k) / c, np.asarray(v) + shift, B)
    try:
        o, tiles = out
        return np.asarray(o, dtype=float) - shift, tiles
    except Exception:
        return out''',
    "bytes_per_token": '''\
def _unseen(config, k=3):  # the same model with k times the layers: k times the bytes
    import copy
    config = copy.deepcopy(config)
    text = config if "num_hidden_layers" in config else config["text_config"]
    text["num_hidden_layers"] *= k
    out = {f}(config)
    try:
        return out / k
    except Exception:
        return out''',
    "streaming_cache": '''\
def _unseen(n_sink, n_recent, n, k=3):  # k more sinks and k more tokens: k more in front
    out = {f}(n_sink + k, n_recent, n + k)
    try:
        held, rope = (list(x) for x in out)
        return [p - k for p in held[k:]], [i - k for i in rope[k:]]
    except Exception:
        return out''',
    "context_shift": '''\
def _unseen(n, n_ctx, n_keep):  # one shift later: the same kept front, the tail d tokens on
    keep = min(n_ctx - 4, n_keep + 1)
    d = (n_ctx - 1 - keep) // 2  # tokens one shift drops
    if n < n_ctx - 1:
        return {f}(n, n_ctx, n_keep)
    out = {f}(n + d, n_ctx, n_keep)
    try:
        held = list(out)
        return held[:keep] + [t - d for t in held[keep:]]
    except Exception:
        return out''',
    "needle_grid": '''\
def _unseen(model, lengths, depths):  # lengths and depths asked in reverse: the grid flipped
    out = {f}(model, list(lengths)[::-1], list(depths)[::-1])
    try:
        return np.asarray(out)[::-1, ::-1]
    except Exception:
        return out''',
    "sweep_reach": '''\
def _unseen(extension, threshold, k=2):  # every length k times, the cells reversed
    import copy
    extension = copy.deepcopy(extension)
    extension["cells"] = [dict(c, length=c["length"] * k) for c in reversed(extension["cells"])]
    out = {f}(extension, threshold)
    try:
        return {{key: (v // k if v else v) for key, v in out.items()}}
    except Exception:
        return out''',
    "rotate_pairs": '''\
def _unseen(x, m, theta, layout, k=3):  # turned to m - k first, then k more: the same turn
    return {f}({f}(x, m - k, theta, layout), k, theta, layout)''',
    "yarn_inv_freq": '''\
def _unseen(config):  # twice the head, half of it rotary: the same rotated dims, the same table
    config = {{**config, "head_dim": 2 * config["head_dim"],
              "partial_rotary_factor": config.get("partial_rotary_factor", 1.0) / 2}}
    return {f}(config)''',
}


def _test_source(ex):
    call = f"checks.{ex.topic}.{ex.name}"
    lines = [f"# Graded ({ex.points} point{'s' if ex.points > 1 else ''}): passes when the "
             f"check above says correct.",
             f"_verdict = {call}({ex.variable})",
             "assert _verdict, _verdict"]
    if ex.name in HIDDEN:
        lines += ["### BEGIN HIDDEN TESTS", "import numpy as np",
                  HIDDEN[ex.name].format(f=ex.variable),
                  f"_verdict = {call}(_unseen)",
                  'assert _verdict, f"on inputs the check does not show: {_verdict}"',
                  "### END HIDDEN TESTS"]
    return "\n".join(lines)


def _meta(grade_id, *, solution, points=None):
    meta = {"grade": points is not None, "grade_id": grade_id, "locked": not solution,
            "schema_version": 3, "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def _code_cell(cell_id, source, nbgrader, **extra):
    return {"cell_type": "code", "execution_count": None, "id": cell_id,
            "metadata": {"nbgrader": nbgrader, **extra}, "outputs": [],
            "source": source.splitlines(keepends=True)}


def _joined(*parts):
    return "\n".join(p for p in parts if p)


def source_notebook(path):
    """notebooks/<path> as nbgrader's source version: (notebook dict, its exercises)."""
    path = Path(path)
    nb = json.loads(path.read_text())
    found = exercises(path)
    by_index = {ex.index: ex for ex in found}
    cells = []
    for i, cell in enumerate(nb["cells"]):
        ex = by_index.get(i)
        if ex is None:
            cells.append(cell)
            continue
        answer = _joined(ex.head, BEGIN, ex.solution, END, ex.tail)
        cells.append(_code_cell(ex.cell_id, answer, _meta(f"{ex.name}-answer", solution=True),
                                lessonlib={"stub": ex.stub}))
        cells.append(_code_cell(f"{ex.cell_id}-test"[:64], _test_source(ex),
                                _meta(ex.name, points=ex.points, solution=False)))
    return dict(nb, cells=cells), found


def filled(ex, answer_code):
    """The exercise cell's source with its stub replaced by ``answer_code``."""
    return _joined(ex.head, answer_code, ex.tail)


# ------------------------------------------------------------------ the release

def release_preprocessors():
    """GenerateAssignment's preprocessors, with nbgrader's ClearSolutions replaced by one that
    puts back each exercise's own stub (``metadata.lessonlib.stub``) instead of nbgrader's
    "# YOUR CODE HERE / raise NotImplementedError()": the release shows what students see
    today. Imported by the course's nbgrader_config.py."""
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import ClearSolutions

    class ClearSolutionsToStub(ClearSolutions):
        def preprocess_cell(self, cell, resources, index):
            stub = cell.metadata.pop("lessonlib", {}).get("stub")
            if stub is None:
                return super().preprocess_cell(cell, resources, index)
            saved = self.code_stub
            self.code_stub = {**saved, resources["language"]: stub}
            try:
                return super().preprocess_cell(cell, resources, index)
            finally:
                self.code_stub = saved

    return [ClearSolutionsToStub if p is ClearSolutions else p
            for p in GenerateAssignment.class_traits()["preprocessors"].make_dynamic_default()]


CONFIG = '''\
# Written by scripts/assignments.py build: the nbgrader course made from notebooks/.
import sys
sys.path.insert(0, {scripts!r})
import assignments

c = get_config()
c.CourseDirectory.course_id = {course_id!r}
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = {db_url!r}
c.GenerateAssignment.preprocessors = assignments.release_preprocessors()
c.Execute.timeout = {timeout}  # seconds per cell; a cell past it is interrupted and scores 0
'''


def nbgrader(course, *args, env=None):
    """Run the nbgrader command line in the course folder: (returncode, its output)."""
    cmd = [sys.executable, "-m", "nbgrader", *args]
    bin_dir = os.path.dirname(sys.executable)  # nbgrader runs `alembic` from PATH
    env = dict(os.environ, PATH=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
               **(env or {}))
    env.pop("MPLBACKEND", None)  # the notebooks pick their own backends, as in JupyterLab
    run = subprocess.run(cmd, cwd=course, capture_output=True, text=True, env=env)
    return run.returncode, run.stdout + run.stderr


def _notebook(name):
    """A notebook by path, or by name in notebooks/ (07_rope)."""
    for path in (Path(name), NOTEBOOKS / name, NOTEBOOKS / f"{name}.ipynb"):
        if path.is_file():
            return path
    raise AssignmentError(f"no notebook {str(name)!r}: give a path or a name in notebooks/ "
                          f"such as 01_attention_memory")


def build(course=DEFAULT_COURSE, notebooks=None, db_url=None, timeout=TIMEOUT_S):
    """Write the course folder (config, source/, release/); returns the manifest."""
    course = Path(course).resolve()
    paths = sorted(_notebook(n) for n in notebooks) if notebooks else \
        sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))
    made = {path.stem: source_notebook(path) for path in paths}  # every error before writing
    for sub in ("source", "release"):
        shutil.rmtree(course / sub, ignore_errors=True)
    db_url = db_url or f"sqlite:///{course / 'gradebook.db'}"
    course.mkdir(parents=True, exist_ok=True)
    # The gradebook, every submission and feedback, the grades and the reference solutions live
    # here: no access for other accounts (a hub's students), whatever the home folder's mode.
    course.chmod(course.stat().st_mode & 0o7770)
    (course / "nbgrader_config.py").write_text(CONFIG.format(
        scripts=str(ROOT / "scripts"), course_id=COURSE_ID, root=str(course), db_url=db_url,
        timeout=int(timeout)))
    manifest = {"db_url": db_url, "assignments": {}}
    for stem, (nb, found) in made.items():
        target = course / "source" / stem / f"{stem}.ipynb"
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        manifest["assignments"][stem] = [
            {"name": ex.name, "topic": ex.topic, "cell_id": ex.cell_id, "points": ex.points,
             "function": ex.function, "hidden": ex.name in HIDDEN} for ex in found]
    rc, out = nbgrader(course, "generate_assignment", "*", "--force")
    if rc != 0 or "ERROR" in out:  # nbgrader only logs a config file that fails to load
        raise AssignmentError(f"nbgrader generate_assignment failed:\n{out}")
    for stem, (nb, found) in made.items():
        verify_release(course / "release" / stem / f"{stem}.ipynb", found)
    (course / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def verify_release(path, found):
    """The release's exercise cells are the committed notebook's cells, stub and all (the
    source's solution stripped); AssignmentError naming the first cell that is not."""
    cells = {c.get("id"): c for c in json.loads(Path(path).read_text())["cells"]}
    for ex in found:
        committed = json.loads(Path(ex.path).read_text())["cells"]
        cell = cells.get(ex.cell_id)
        text = "".join(cell["source"]) if cell else None
        if text != "".join(committed[ex.index]["source"]) or "lessonlib" in cell["metadata"]:
            raise AssignmentError(f"{path}: the release of {ex.where} is not the stub students "
                                  f"see today; it reads {text!r}")


# ------------------------------------------------------------------ grading

@dataclass
class Report:
    """What went wrong with which submission, in the words the report file uses."""
    entries: list = field(default_factory=list)

    def add(self, student, assignment, text):
        self.entries.append((student, assignment, text))

    def text(self):
        if not self.entries:
            return "Every submission was autograded without a problem.\n"
        return "".join(f"{s} / {a}: {t}\n" for s, a, t in sorted(self.entries))


def _manifest(course):
    path = Path(course) / MANIFEST
    if not path.exists():
        raise AssignmentError(f"{course} holds no course built by scripts/assignments.py "
                              f"(no {MANIFEST}): run make assignments first")
    return json.loads(path.read_text())


def _copy_submissions(submissions, course, manifest, report):
    """Copy <student>/<assignment>/ folders into the course's submitted/; note in the report
    what is not where nbgrader looks. Returns {assignment: [students]}."""
    submissions, target = Path(submissions).resolve(), Path(course) / "submitted"
    if not submissions.is_dir():
        raise AssignmentError(f"SUBMISSIONS={submissions} is not a folder of "
                              f"<student>/<assignment>/<notebook>.ipynb")
    graded = {}
    for student in sorted(p for p in submissions.iterdir() if p.is_dir()):
        for folder in sorted(p for p in student.iterdir() if p.is_dir()):
            assignment = folder.name
            if assignment not in manifest["assignments"]:
                report.add(student.name, assignment, "not an assignment of this course "
                           f"({', '.join(manifest['assignments'])}): not graded")
                continue
            expected = f"{assignment}.ipynb"
            present = sorted(p.name for p in folder.glob("*.ipynb"))
            if expected not in present:
                others = f" (found {', '.join(present)}: renamed?)" if present else ""
                report.add(student.name, assignment, f"no {expected}{others}: 0 points")
            else:
                try:
                    json.loads((folder / expected).read_text())
                except (ValueError, UnicodeDecodeError) as err:
                    report.add(student.name, assignment,
                               f"{expected} is not a readable notebook ({err}): 0 points")
                others = [p for p in present if p != expected]
                if others:
                    report.add(student.name, assignment, f"also handed in {', '.join(others)}: "
                                                         f"not graded, {expected} is")
            dest = target / student.name / assignment
            if dest.resolve() != folder:
                shutil.rmtree(dest, ignore_errors=True)
                shutil.copytree(folder, dest)
            graded.setdefault(assignment, []).append(student.name)
    return graded


def _cell_problems(path, manifest_exercises):
    """(where, what) for every cell of an autograded notebook that ended in an error, the test
    cells left out (a failed test is a wrong answer, which the CSV shows)."""
    names = {e["cell_id"]: f"exercise {e['name']}" for e in manifest_exercises}
    nb = json.loads(Path(path).read_text())
    for i, cell in enumerate(nb["cells"]):
        if cell["metadata"].get("nbgrader", {}).get("grade"):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                where = names.get(cell.get("id"), f"cell {i}")
                value = str(out.get("evalue", ""))[:160]
                if out.get("ename") in ("CellTimeoutError", "KeyboardInterrupt"):
                    value = "ran past the per-cell timeout and was interrupted"
                yield where, f"{out.get('ename')}: {value}".rstrip(": ")
                break


def grade(submissions, course=DEFAULT_COURSE, csv_path=None, db_url=None, timeout=None):
    """Autograde a folder of submissions; write the CSV and the report; returns (rows, report
    text). A submission that cannot be graded scores 0 and is named in the report."""
    course = Path(course).resolve()
    manifest = _manifest(course)
    db_url = db_url or manifest["db_url"]
    report = Report()
    graded = _copy_submissions(submissions, course, manifest, report)
    options = [f"--CourseDirectory.db_url={db_url}", "--force"]
    if timeout is not None:
        options.append(f"--Execute.timeout={int(timeout)}")
    # One run for every assignment (nbgrader takes seconds to start); it goes on past a
    # submission it cannot grade, and says which at the end.
    rc, out = nbgrader(course, "autograde", "*", *options, env={"TRITON_INTERPRET": "1"})
    (course / "autograde.log").write_text(out)
    for assignment, students in graded.items():
        for student in students:
            path = course / "autograded" / student / assignment / f"{assignment}.ipynb"
            if path.exists():
                for where, what in _cell_problems(path, manifest["assignments"][assignment]):
                    report.add(student, assignment, f"{where}: {what}")
            elif rc != 0 and not any(s == student and a == assignment
                                     for s, a, _ in report.entries):
                why = [line for line in out.splitlines() if "ERROR" in line and
                       (student in line or "Exception" in line)][-1:] or ["see nbgrader's log"]
                report.add(student, assignment, f"autograde failed ({why[0].strip()[:200]}): "
                                                f"0 points")
    rows = export(course, manifest, db_url)
    csv_path = Path(csv_path) if csv_path else course / "grades.csv"
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["student", "total"])
        writer.writeheader()
        writer.writerows(rows)
    text = report.text()
    csv_path.with_name(csv_path.stem + "-report.txt").write_text(text)
    return rows, text


def export(course, manifest, db_url):
    """One dict per student of the gradebook: student, a score per exercise, total."""
    from nbgrader.api import Gradebook, MissingEntry
    rows = []
    with Gradebook(db_url, COURSE_ID) as gb:
        for student in sorted(s.id for s in gb.students):
            row = {"student": student}
            for assignment, exs in manifest["assignments"].items():
                for ex in exs:
                    try:
                        score = gb.find_grade(ex["name"], assignment, assignment, student).score
                    except MissingEntry:  # not submitted, or autograde failed
                        score = 0
                    score = float(score or 0)
                    row[f"{assignment}:{ex['name']}"] = int(score) if score.is_integer() \
                        else score
            row["total"] = sum(v for k, v in row.items() if k != "student")
            rows.append(row)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="the course folder: source/ and release/")
    b.add_argument("--course", default=str(DEFAULT_COURSE))
    b.add_argument("--db", help="gradebook database URL (default: SQLite in the course folder)")
    b.add_argument("--timeout", type=int, default=TIMEOUT_S, help="seconds per cell")
    b.add_argument("notebooks", nargs="*", help="default: every notebook in notebooks/")
    g = sub.add_parser("grade", help="autograde submissions, export the CSV and the report")
    g.add_argument("submissions", help="folder of <student>/<assignment>/<notebook>.ipynb")
    g.add_argument("--course", default=str(DEFAULT_COURSE))
    g.add_argument("--csv", help="default: <course>/grades.csv")
    g.add_argument("--db", help="gradebook database URL (default: the one build used)")
    g.add_argument("--timeout", type=int, help="seconds per cell (default: the course's)")
    args = ap.parse_args(argv)
    try:
        if args.command == "build":
            manifest = build(args.course, args.notebooks, args.db, args.timeout)
            n = sum(len(e) for e in manifest["assignments"].values())
            print(f"assignments: {len(manifest['assignments'])} assignments, {n} exercises in "
                  f"{args.course}/source; the student release is in {args.course}/release")
        else:
            rows, text = grade(args.submissions, args.course, args.csv, args.db, args.timeout)
            print(text, end="")
            csv_path = args.csv or Path(args.course) / "grades.csv"
            print(f"grade: {len(rows)} students; CSV: {csv_path}")
    except AssignmentError as err:
        print(f"assignments: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
