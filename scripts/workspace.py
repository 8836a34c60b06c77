"""Students' working copies of the course notebooks, in my-notebooks/ (git ignores it).

    python scripts/workspace.py sync             # make lab runs this before it starts
    python scripts/workspace.py reset 07_rope    # make reset NB=07_rope

notebooks/ is the course's source: git tracks it and nbval checks it. ``make lab`` serves
my-notebooks/ instead, so what a student types and runs is saved there and never touches the
checkout (no dirty tree, no conflict on the next ``git pull``).

sync
    Copies every course notebook that my-notebooks/ lacks; never overwrites one that is there.
    It keeps the course version each copy was made from in my-notebooks/.course/, so that after
    a pull it can tell: a copy the student never changed is updated to the new course version;
    a changed one is left alone and named, with the command that takes the new version.
reset NAME
    Replaces my-notebooks/NAME.ipynb with the course version. The student's file is kept beside
    it as NAME.<date-time>.ipynb, never deleted.

Standard library only: it runs before the virtual environment exists.
"""
import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT / "notebooks"
WORK = ROOT / "my-notebooks"
PRISTINE = ".course"  # my-notebooks/.course/NAME.ipynb: the course version a copy was made from


def course_notebooks(course=COURSE):
    """The course's notebooks, by name (``07_rope``), in teaching order."""
    return {p.stem: p for p in sorted(course.glob("[0-9]*.ipynb"))}


def _same(a, b):
    return a.exists() and b.exists() and a.read_bytes() == b.read_bytes()


def _take(src, work, name):
    """Copy the course notebook into the working copy and remember the version taken."""
    pristine = work / PRISTINE
    pristine.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, work / f"{name}.ipynb")
    shutil.copyfile(src, pristine / f"{name}.ipynb")


def sync(course=COURSE, work=WORK):
    """Bring ``work`` up to date with ``course`` without losing a student's edit; returns the
    lines to print (what was copied, updated, or is newer in the course than the copy)."""
    work.mkdir(exist_ok=True)
    lines = []
    for name, src in course_notebooks(course).items():
        mine, base = work / f"{name}.ipynb", work / PRISTINE / f"{name}.ipynb"
        if not mine.exists():
            _take(src, work, name)
            lines.append(f"copied   {name}")
        elif _same(src, base):
            continue  # the course has not changed since the copy was made
        elif _same(mine, base) or _same(mine, src):
            _take(src, work, name)  # the student never changed it: take the new version
            lines.append(f"updated  {name} (the course changed it; you had not)")
        else:
            lines.append(f"kept     {name}: the course version changed since your copy was made; "
                         f"`make reset NB={name}` takes it (yours is kept beside it)")
    return lines


def reset(name, course=COURSE, work=WORK, now=None):
    """The course version of ``name`` replaces the working copy; the old copy is kept as
    ``name.<date-time>.ipynb``. Returns the lines to print."""
    notebooks = course_notebooks(course)
    name = name[:-6] if name.endswith(".ipynb") else name
    if name not in notebooks:
        raise SystemExit(f"reset: no course notebook {name!r}; one of: {', '.join(notebooks)}")
    mine = work / f"{name}.ipynb"
    lines = []
    if mine.exists() and not _same(mine, notebooks[name]):
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
        kept = work / f"{name}.{stamp}.ipynb"
        mine.rename(kept)
        lines.append(f"kept your copy as {kept.relative_to(work.parent)}")
    _take(notebooks[name], work, name)
    lines.append(f"reset    {name} to the course version")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("sync", help="copy the course notebooks a working copy lacks")
    one = sub.add_parser("reset", help="replace one working copy with the course version")
    one.add_argument("name", help="a course notebook, e.g. 07_rope")
    args = parser.parse_args(argv)
    lines = sync() if args.command == "sync" else reset(args.name)
    for line in lines:
        print(f"my-notebooks: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
