"""Every exercise in every notebook: its check says "not attempted" on the stub and "correct" on
the instructors' reference solution (instructors/solutions/<notebook>.py defines the answer under
the check's name). Topic files (test_checks_<topic>.py) test the hints for wrong answers."""
import glob
import json
import os
import re

import pytest

from _support import ROOT, solutions

from lessonlib import checks
from lessonlib.checks import NOT_ATTEMPTED, Verdict, check_number

CALL = re.compile(r"^checks\.(\w+)\.(\w+)\(", re.M)


def exercises():
    for path in sorted(glob.glob(os.path.join(ROOT, "notebooks", "[0-9]*.ipynb"))):
        nb = json.load(open(path))
        stem = os.path.basename(path)[:-6]
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                for topic, name in CALL.findall("".join(cell["source"])):
                    yield pytest.param(stem, topic, name, id=f"{stem}:{name}")


@pytest.mark.parametrize("stem, topic, name", list(exercises()))
def test_exercise_stub_and_reference_solution(stem, topic, name):
    check = getattr(getattr(checks, topic), name)
    verdict = check(None)
    assert isinstance(verdict, Verdict) and verdict.ok is None
    assert verdict.message == NOT_ATTEMPTED
    assert repr(verdict).startswith(f"[{name}: not attempted]")
    answer = getattr(solutions(stem), name)
    verdict = check(answer)
    assert verdict.ok is True and bool(verdict), verdict


def test_every_notebook_has_exercises():
    assert len({p.values[0] for p in exercises()}) == len(
        glob.glob(os.path.join(ROOT, "notebooks", "[0-9]*.ipynb")))


def test_check_number_verdicts():
    mistakes = [(20.0, "doubled"), (5.0, "halved")]
    assert check_number("x", None, 10.0, mistakes).ok is None
    assert check_number("x", 10.01, 10.0, mistakes, unit="GiB").message == "Correct: 10 GiB."
    assert check_number("x", 20.0, 10.0, mistakes).message == "doubled"
    assert check_number("x", 5.0, 10.0, mistakes).message == "halved"
    assert check_number("x", 7.0, 10.0, mistakes, generic="Hint.").message == "Not 7. Hint."
    for bad in ("10", True, float("nan"), [10.0]):
        v = check_number("x", bad, 10.0, mistakes)
        assert v.ok is False and "one finite number" in v.message
    assert check_number("x", 10.4, 10.0, [], rtol=0, atol=0.5, fmt=".1f").message == \
        "Correct: 10.0."
