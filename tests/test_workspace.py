"""scripts/workspace.py: students work in my-notebooks/, never in the tracked notebooks/."""
import importlib.util
import os
import subprocess

import pytest
from _support import ROOT

spec = importlib.util.spec_from_file_location("workspace", os.path.join(ROOT, "scripts",
                                                                        "workspace.py"))
ws = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ws)


@pytest.fixture
def dirs(tmp_path):
    course, work = tmp_path / "notebooks", tmp_path / "my-notebooks"
    course.mkdir()
    for name in ("01_a", "02_b"):
        (course / f"{name}.ipynb").write_text(f'{{"course": "{name} v1"}}')
    (course / "README.md").write_text("not a notebook")
    return course, work


def test_first_sync_copies_every_course_notebook(dirs):
    course, work = dirs
    assert ws.sync(course, work) == ["copied   01_a", "copied   02_b"]
    assert sorted(p.name for p in work.glob("*.ipynb")) == ["01_a.ipynb", "02_b.ipynb"]
    assert ws.sync(course, work) == []  # nothing to do the second time


def test_a_students_edit_is_never_overwritten(dirs):
    course, work = dirs
    ws.sync(course, work)
    (work / "01_a.ipynb").write_text('{"mine": "my answer"}')
    assert ws.sync(course, work) == []
    (course / "01_a.ipynb").write_text('{"course": "01_a v2"}')  # the course moves on (a pull)
    lines = ws.sync(course, work)
    assert len(lines) == 1 and lines[0].startswith("kept     01_a") \
        and "make reset NB=01_a" in lines[0]
    assert (work / "01_a.ipynb").read_text() == '{"mine": "my answer"}'
    assert ws.sync(course, work) == lines  # said again each time until the student decides


def test_an_unchanged_copy_follows_the_course_and_new_notebooks_appear(dirs):
    course, work = dirs
    ws.sync(course, work)
    (course / "02_b.ipynb").write_text('{"course": "02_b v2"}')
    (course / "03_c.ipynb").write_text('{"course": "03_c v1"}')
    assert ws.sync(course, work) == ["updated  02_b (the course changed it; you had not)",
                                     "copied   03_c"]
    assert (work / "02_b.ipynb").read_text() == '{"course": "02_b v2"}'


def test_reset_restores_the_course_version_and_keeps_the_students_copy(dirs):
    course, work = dirs
    ws.sync(course, work)
    (work / "01_a.ipynb").write_text('{"mine": "my answer"}')
    (course / "01_a.ipynb").write_text('{"course": "01_a v2"}')
    lines = ws.reset("01_a", course, work, now=0)
    kept = sorted(work.glob("01_a.*.ipynb"))
    assert len(kept) == 1 and kept[0].read_text() == '{"mine": "my answer"}'
    assert lines[-1] == "reset    01_a to the course version"
    assert (work / "01_a.ipynb").read_text() == '{"course": "01_a v2"}'
    assert ws.sync(course, work) == []  # in step again
    assert ws.reset("01_a.ipynb", course, work) == ["reset    01_a to the course version"]


def test_reset_of_an_unknown_notebook_names_the_course_ones(dirs):
    course, work = dirs
    with pytest.raises(SystemExit, match=r"no course notebook '07_x'; one of: 01_a, 02_b"):
        ws.reset("07_x", course, work)


def test_make_lab_serves_the_ignored_working_copy_not_the_course():
    makefile = open(os.path.join(ROOT, "Makefile")).read()
    lab = makefile.split("\nlab:")[1].split("\n\n")[0]
    assert "scripts/workspace.py sync" in lab and "--ServerApp.root_dir=my-notebooks" in lab
    assert "root_dir=notebooks" not in makefile
    ignored = subprocess.run(["git", "check-ignore", "-q", "my-notebooks/01_x.ipynb"], cwd=ROOT)
    assert ignored.returncode == 0, "git must ignore my-notebooks/"


def test_the_script_runs_with_the_standard_library_alone(tmp_path):
    """make lab runs it with the system Python, before or beside the venv."""
    imports = {line.split()[1].split(".")[0] for line in open(spec.origin)
               if line.startswith(("import ", "from "))}
    assert imports <= {"argparse", "shutil", "sys", "time", "pathlib"}
