"""nbgrader's filesystem exchange end to end, with real UNIX accounts, as instructors/README.md
lays it out for a hub ("On JupyterHub, with nbgrader's exchange").

As root, the test creates an instructor and three students (useradd; names with a random
suffix; removed with their homes at the end, whatever happens), the exchange folder (mode 1777:
world-writable as the README asks, and sticky, so that no account can move another's folder
away), and the students' server environment: one interpreter every account can run, with
nbgrader, its Jupyter extensions and lessonlib, as a hub's shared environment has them. The
instructor holds a copy of the repository, builds notebook 02's assignment with
scripts/assignments.py and releases it; each student, as that account, fetches it, fills it (every
exercise right / untouched / one right, one typical wrong answer and a cell that raises) and
submits; the instructor collects, grades with make grade's command, exports nbgrader's CSV,
generates and releases the feedback; each student fetches their own. Then a student tries, as
that account, what no student may do: list the submissions and the feedback, read another
student's work, change the release, read the course folder.

Runs in .venv-grading (make grading), as root (CI is); about 2 minutes on 2 cores."""
import csv
import hashlib
import html
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import test_assignments as T  # the course's exercises and how its tests fill them
from _support import ROOT

ROOT = Path(ROOT)
A = T.A  # scripts/assignments.py
GRADING = ROOT / ".venv-grading"
README = ROOT / "instructors" / "README.md"
STEM = "02_online_softmax"  # the quickest notebook to autograde
EXERCISES = T.EXERCISES[STEM]
ROLES = ("right", "untouched", "mixed")  # the three students
TIMEOUT_S = 120  # any one command; autograding the three submissions gets GRADE_TIMEOUT_S
GRADE_TIMEOUT_S = 300

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="not root: the exchange test creates UNIX "
                                                 "accounts (CI runs it as root)"),
    pytest.mark.skipif(not (GRADING / ".installed").exists(),
                       reason=".venv-grading is missing: make grading builds it"),
]


# ------------------------------------------------------------------ running as an account

@dataclass(frozen=True)
class Account:
    name: str
    home: Path


def _run(cmd, *, timeout=TIMEOUT_S, **kwargs):
    """(returncode, output) of ``cmd``; past ``timeout`` its process group is killed and the
    test fails with what it printed."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, **kwargs)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{' '.join(map(str, cmd))} ran past {timeout} s:\n{out}", pytrace=False)
    return proc.returncode, out


def _environ(env, home, user):
    """A login's environment, nothing of root's: its home, the shared environment's Python."""
    return {"HOME": str(home), "USER": user, "LOGNAME": user, "LANG": "C.UTF-8",
            "PATH": f"{env}/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": f"{env}/lib",
            "PYTHONDONTWRITEBYTECODE": "1", "TRITON_INTERPRET": "1"}


@dataclass
class Hub:
    """The accounts, the exchange and the shared environment, in one temporary folder."""
    base: Path
    suffix: str = field(default_factory=lambda: secrets.token_hex(3))
    accounts: dict = field(default_factory=dict)  # role -> Account

    @property
    def env(self):
        return self.base / "env"

    @property
    def python(self):
        return str(self.env / "bin" / "python")

    @property
    def exchange(self):
        return self.base / "exchange"

    def add(self, role, home_mode):
        """A new account (its own group, a home under base/home/) for ``role``."""
        name = f"lessonlib-{role}-{self.suffix}"
        home = self.base / "home" / name
        rc, out = _run(["useradd", "--create-home", "--home-dir", str(home), "--user-group",
                        "--shell", "/bin/bash", name], timeout=60)
        assert rc == 0, out
        self.accounts[role] = Account(name, home)
        home.chmod(home_mode)
        return self.accounts[role]

    def run(self, account, *args, cwd=None, timeout=TIMEOUT_S, program=None):
        """The shared environment's ``python *args`` (or ``program *args``) as ``account``
        (setpriv: its uid, gid and groups, no capabilities), in its home unless ``cwd``:
        (returncode, output)."""
        cmd = ["setpriv", f"--reuid={account.name}", f"--regid={account.name}",
               "--init-groups", "--", program or self.python, *args]
        return _run(cmd, cwd=cwd or account.home, timeout=timeout,
                    env=_environ(self.env, account.home, account.name))

    def nbgrader(self, account, *args, cwd=None, timeout=TIMEOUT_S):
        rc, out = self.run(account, *args, cwd=cwd, timeout=timeout,
                           program=str(self.env / "bin" / "nbgrader"))
        assert rc == 0 and "ERROR" not in out, f"nbgrader {' '.join(args)} as " \
                                               f"{account.name}:\n{out}"
        return out

    def remove(self):
        """Every account and what its processes left running (autograde's kernels start
        sessions of their own), then the folder."""
        uids = {pwd.getpwnam(a.name).pw_uid for a in self.accounts.values()}
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                if int(re.search(r"^Uid:\s+(\d+)", status, re.M)[1]) in uids:
                    os.kill(pid, signal.SIGKILL)
            except (OSError, TypeError):
                pass  # gone meanwhile
        problems = []
        for account in self.accounts.values():
            rc, out = _run(["userdel", "--remove", "--force", account.name], timeout=60)
            if rc not in (0, 12):  # 12: a home it could not remove (rmtree below does)
                problems.append(out)
        shutil.rmtree(self.base, ignore_errors=True)
        assert not problems, problems


def _give(path, account):
    """``path`` and everything under it owned by ``account`` (and its group)."""
    for folder, dirs, files in os.walk(path):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            shutil.chown(name, account.name, account.name)


# ------------------------------------------------------------------ the shared environment

def _link(src, dst):
    """Hard-link ``src`` to ``dst``, a copy across file systems: the environment shares the
    files, read-only, and never changes them."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _others_can_read(path):
    path = Path(path)
    return all(p.stat().st_mode & stat.S_IXOTH for p in path.parents) and \
        bool(path.stat().st_mode & stat.S_IROTH)


def _reachable(path, env):
    """``path`` if every account can read it; else a hard-linked copy in env/shared/ (the test
    never changes the repository's modes)."""
    path = Path(path)
    if _others_can_read(path):
        return path
    copy = env / "shared" / str(path).strip("/").replace("/", "-")
    shutil.copytree(path, copy, copy_function=_link, symlinks=True)
    return copy


# nbgrader itself, and alembic, which nbgrader runs from the PATH to check its gradebook
SCRIPTS = {"nbgrader": "nbgrader.apps.nbgraderapp", "alembic": "alembic.config"}


def _shared_environment(env):
    """What a hub's students' server environment holds, in ``env``: the interpreter
    .venv-grading was made from (here under /root, which no other account may enter: a
    hard-linked copy), lessonlib installed in it, .venv-grading's and .venv's packages reached
    through a .pth file (as .venv-grading reaches .venv's), nbconvert's templates, nbgrader's
    JupyterLab extension and its server extensions enabled."""
    exe = (GRADING / "bin" / "python").resolve()  # .../versions/3.11.7/bin/python3.11
    prefix, name = exe.parents[1], exe.name
    stdlib = prefix / "lib" / name
    (env / "bin").mkdir(parents=True)
    _link(exe, env / "bin" / name)
    (env / "bin" / "python").symlink_to(name)
    shutil.copytree(stdlib, env / "lib" / name, copy_function=_link,
                    ignore=lambda d, names: {"site-packages", "test"} if Path(d) == stdlib
                    else set())
    for lib in (prefix / "lib").glob("libpython*.so*"):  # the binary's RUNPATH is under /root
        _link(lib, env / "lib" / lib.name)
    site = env / "lib" / name / "site-packages"
    site.mkdir()
    shutil.copytree(ROOT / "lessonlib", site / "lessonlib", copy_function=_link,
                    ignore=shutil.ignore_patterns("__pycache__"))
    grading_site = next(GRADING.glob("lib/python*/site-packages"))
    venv_site = re.search(r"addsitedir\('([^']+)'\)",
                          (grading_site / "lessonlib-venv.pth").read_text())[1]
    (site / "lessonlib-grading.pth").write_text("".join(
        f"import site; site.addsitedir({str(_reachable(p, env))!r})\n"
        for p in (grading_site, venv_site)))
    data = env / "share" / "jupyter"
    data.mkdir(parents=True)
    for sub in ("nbconvert", "labextensions"):
        (data / sub).symlink_to(_reachable((GRADING / "share" / "jupyter" / sub).resolve(), env))
    for command, module in SCRIPTS.items():  # console scripts, as pip would write them here
        script = env / "bin" / command
        script.write_text(f"#!{env}/bin/python\nimport sys\nfrom {module} import main\n"
                          f"sys.exit(main())\n")
        script.chmod(0o755)
    config = env / "etc" / "jupyter" / "jupyter_server_config.d"
    config.mkdir(parents=True)
    shutil.copy(GRADING / "etc" / "jupyter" / "jupyter_server_config.d" / "nbgrader.json", config)


# ------------------------------------------------------------------ what the README says

def _readme_section():
    """instructors/README.md's section on the hub and the exchange."""
    text = README.read_text()
    assert "### On JupyterHub, with nbgrader's exchange" in text
    return text.split("### On JupyterHub, with nbgrader's exchange", 1)[1].split("\n### ")[0]


def _readme_config(exchange):
    """The README's ~/.jupyter/nbgrader_config.py, with this test's exchange folder."""
    block = re.search(r"```python\n(.*?)```", _readme_section(), re.S)[1]
    default = '"/usr/local/share/nbgrader/exchange"'
    assert f"c.Exchange.root = {default}" in block, block
    return block.replace(default, repr(str(exchange)))


def _readme_hiding_commands():
    """[(labextension | server extension, what)] the README disables on a hub."""
    return [(kind, what) for kind, what in re.findall(
        r"`jupyter (labextension|server extension) disable\s+([^`\s]+)`", _readme_section())]


# ------------------------------------------------------------------ the class

def _raising(ex):
    return A.filled(ex, f"{ex.variable} = 1 / 0  # raises ZeroDivisionError")


def _answers(role, wrong):
    """{cell id: cell code} a student of ``role`` writes into the fetched notebook."""
    if role == "right":
        return {ex.cell_id: T._right(ex) for ex in EXERCISES}
    if role == "mixed":  # right, raises, the typical wrong answer; any later ones untouched
        first, second, third = EXERCISES[:3]
        return {first.cell_id: T._right(first), second.cell_id: _raising(second),
                third.cell_id: A.filled(third, wrong[(third.topic, third.name)])}
    return {}


def _expected(role):
    """Each exercise's points, as the checks give them, for a student of ``role``."""
    if role == "right":
        return [ex.points for ex in EXERCISES]
    if role == "mixed":
        return [EXERCISES[0].points] + [0] * (len(EXERCISES) - 1)
    return [0] * len(EXERCISES)


def _text(page):
    page = re.sub(r"<style.*?</style>|<script.*?</script>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@dataclass
class Class:
    hub: Hub
    clone: Path  # the instructor's copy of the repository
    course: Path  # its build/course
    submissions: dict  # student name -> their folder in the exchange's inbound/
    grades: dict  # student name -> row of grades.csv
    report: str  # grades-report.txt
    export: dict  # student name -> row of nbgrader export's CSV
    feedback: dict  # student name -> the feedback page they fetched
    seconds: dict  # step -> seconds

    @property
    def instructor(self):
        return self.hub.accounts["instructor"]

    @property
    def students(self):
        return {role: self.hub.accounts[role] for role in ROLES}

    @property
    def course_dir(self):
        return self.hub.exchange / A.COURSE_ID


@pytest.fixture(scope="module")
def taught(request):
    assert len(EXERCISES) >= 3, f"{STEM} has {len(EXERCISES)} exercises; the mixed student " \
                                f"needs three"
    base = Path(tempfile.mkdtemp(prefix="lessonlib-exchange-", dir="/tmp"))
    base.chmod(0o755)
    hub = Hub(base)
    request.addfinalizer(hub.remove)
    with ThreadPoolExecutor(1) as pool:
        wrong = pool.submit(T.typical_wrong_answers)  # 20 s of Python, beside the commands
        return _teach(hub, wrong)


def _teach(hub, wrong):
    seconds, t = {}, time.monotonic()
    steps = [("accounts and environment", lambda: _open(hub)),
             ("build and release", lambda: _release(hub)),
             ("fetch, fill and submit", lambda: _hand_in(hub, wrong)),
             ("collect, grade, export, feedback", lambda: _grade(hub)),
             ("fetch feedback", lambda: _hand_back(hub))]
    for step, run in steps:
        run()
        seconds[step], t = round(time.monotonic() - t, 1), time.monotonic()
    print(f"exchange test, seconds per step: {seconds}")
    clone = hub.accounts["instructor"].home / "lessonlib"
    course = clone / "build" / "course"
    inbound = hub.exchange / A.COURSE_ID / "inbound"
    students = [hub.accounts[role] for role in ROLES]
    feedback = {}
    for student in students:
        pages = list((student.home / STEM / "feedback").glob(f"*/{STEM}.html"))
        assert len(pages) == 1, (student.name, pages)
        feedback[student.name] = pages[0].read_text()
    return Class(hub, clone, course,
                 submissions={s.name: next(inbound.glob(f"{s.name}+{STEM}+*"))
                              for s in students},
                 grades=_csv(course / "grades.csv", "student"),
                 report=(course / "grades-report.txt").read_text(),
                 export=_csv(course / "nbgrader-grades.csv", "student_id"),
                 feedback=feedback, seconds=seconds)


def _open(hub):
    """The accounts, the exchange, the shared environment, every account's nbgrader config
    (the README's), the instructor's copy of the repository. The instructor's home as Debian's
    useradd makes it (0755: the course folder must protect itself); the students' private
    (0700: a hub's account script must make them so, or a student reads another's work and
    nbgrader cache; see the tests below)."""
    (hub.base / "home").mkdir()
    instructor = hub.add("instructor", 0o755)
    for role in ROLES:
        hub.add(role, 0o700)
    hub.exchange.mkdir()
    hub.exchange.chmod(0o1777)
    _shared_environment(hub.env)
    config = _readme_config(hub.exchange)
    for account in hub.accounts.values():
        (account.home / ".jupyter").mkdir()
        (account.home / ".jupyter" / "nbgrader_config.py").write_text(config)
        _give(account.home / ".jupyter", account)
    clone = instructor.home / "lessonlib"
    shutil.copytree(ROOT / "scripts", clone / "scripts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "instructors", clone / "instructors")
    (clone / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / f"{STEM}.ipynb", clone / "notebooks")
    _give(clone, instructor)


def _release(hub):
    """make assignments (the one notebook) in the instructor's copy, then the release."""
    instructor = hub.accounts["instructor"]
    clone = instructor.home / "lessonlib"
    rc, out = hub.run(instructor, "scripts/assignments.py", "build", "--course", "build/course",
                      STEM, cwd=clone, timeout=180)
    assert rc == 0, out
    hub.nbgrader(instructor, "release_assignment", STEM, cwd=clone / "build" / "course")


def _hand_in(hub, wrong):
    """Each student fetches the assignment, writes their answers into it, submits."""
    students = {role: hub.accounts[role] for role in ROLES}
    with ThreadPoolExecutor(len(ROLES)) as pool:
        list(pool.map(lambda s: hub.nbgrader(s, "fetch_assignment", STEM, "--course",
                                             A.COURSE_ID), students.values()))
        for role, student in students.items():
            path = student.home / STEM / f"{STEM}.ipynb"
            nb = T._fill(json.loads(path.read_text()), _answers(role, wrong.result()))
            path.write_text(json.dumps(nb, indent=1))  # the file stays the student's
            assert path.stat().st_uid == pwd.getpwnam(student.name).pw_uid
        list(pool.map(lambda s: hub.nbgrader(s, "submit", STEM, "--course", A.COURSE_ID),
                      students.values()))


def _grade(hub):
    """collect; make grade SUBMISSIONS=build/course/submitted (its command); nbgrader's own
    CSV; the feedback, generated and released."""
    instructor = hub.accounts["instructor"]
    clone = instructor.home / "lessonlib"
    course = clone / "build" / "course"
    hub.nbgrader(instructor, "collect", STEM, cwd=course)
    rc, out = hub.run(instructor, "scripts/assignments.py", "grade", "build/course/submitted",
                      "--course", "build/course", cwd=clone, timeout=GRADE_TIMEOUT_S)
    assert rc == 0, out
    hub.nbgrader(instructor, "export", "--to=nbgrader-grades.csv", cwd=course)
    hub.nbgrader(instructor, "generate_feedback", STEM, cwd=course)
    hub.nbgrader(instructor, "release_feedback", STEM, cwd=course)


def _hand_back(hub):
    """Each student fetches their own feedback."""
    with ThreadPoolExecutor(len(ROLES)) as pool:
        list(pool.map(lambda s: hub.nbgrader(hub.accounts[s], "fetch_feedback", STEM,
                                             "--course", A.COURSE_ID), ROLES))


def _csv(path, key):
    with open(path, newline="") as f:
        return {row[key]: row for row in csv.DictReader(f)}


def _attempts(hub, account, tries):
    """What ``account`` gets, as itself, trying each of ``tries`` ({label: (op, path)}):
    "ok", the exception's name, or for "find" the paths a glob found."""
    script = r"""
import glob, json, os, sys
ops = {"list": os.listdir, "read": lambda p: open(p, "rb").read(1),
       "create": lambda p: open(os.path.join(p, "planted.ipynb"), "x"),
       "write": lambda p: open(p, "r+b"), "delete": os.unlink,
       "rename": lambda p: os.rename(p, p + ".moved")}
out = {}
for label, (op, path) in json.loads(sys.argv[1]).items():
    if op == "find":
        out[label] = glob.glob(path)
        continue
    try:
        ops[op](path)
        out[label] = "ok"
    except OSError as err:
        out[label] = type(err).__name__
print(json.dumps(out))
"""
    rc, out = hub.run(account, "-c", script, json.dumps({k: (op, str(p)) for k, (op, p)
                                                        in tries.items()}))
    assert rc == 0, out
    return json.loads(out.splitlines()[-1])


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def _owner(path):
    return pwd.getpwuid(path.stat().st_uid).pw_name


# ------------------------------------------------------------------ the tests

def test_the_course_id_names_the_course_everywhere_as_the_readme_says(taught):
    """Every account's ~/.jupyter/nbgrader_config.py is the README's; the course folder's
    config, which make assignments writes, names the same course; the exchange keeps the
    course under that name."""
    assert 'c.CourseDirectory.course_id = "lessonlib"' in _readme_config(taught.hub.exchange)
    assert A.COURSE_ID == "lessonlib"
    assert f"c.CourseDirectory.course_id = {A.COURSE_ID!r}" in \
        (taught.course / "nbgrader_config.py").read_text()
    assert sorted(p.name for p in taught.hub.exchange.iterdir()) == [A.COURSE_ID]
    assert sorted(p.name for p in taught.course_dir.iterdir()) == ["feedback", "inbound",
                                                                  "outbound"]


def test_the_exchange_has_the_permissions_nbgrader_documents(taught):
    """nbgrader 0.9.6's docs (user_guide/what_is_nbgrader.rst): outbound readable, inbound
    writable but not listable (-wx), feedback traversable but not listable (--x), its files
    readable. Each submission is a folder named <student>+<assignment>+<time>+<random>: that
    name is all that hides it (nbgrader makes it 0777 so the instructor can delete it)."""
    ex, course, me = taught.hub.exchange, taught.course_dir, taught.instructor.name
    assert _mode(ex) == 0o1777 and _owner(ex) == "root"  # release_assignment left it so
    assert (_mode(course), _owner(course)) == (0o755, me)
    assert (_mode(course / "outbound"), _owner(course / "outbound")) == (0o755, me)
    release = course / "outbound" / STEM
    assert (_mode(release), _owner(release)) == (0o755, me)
    assert [(p.name, _mode(p), _owner(p)) for p in release.iterdir()] == \
        [(f"{STEM}.ipynb", 0o644, me)]
    assert (_mode(course / "inbound"), _owner(course / "inbound")) == (0o2733, me)
    for student, folder in taught.submissions.items():
        assert re.fullmatch(rf"{re.escape(student)}\+{STEM}\+[^+]+\+[\w-]{{12}}", folder.name)
        assert (_mode(folder), _owner(folder)) == (0o777, student)
        assert {p.name: _mode(p) for p in folder.iterdir()} == {
            f"{STEM}.ipynb": 0o644, "timestamp.txt": 0o644, "submission_secret.txt": 0o644}
    assert (_mode(course / "feedback"), _owner(course / "feedback")) == (0o711, me)
    pages = list((course / "feedback").iterdir())
    assert len(pages) == len(ROLES) and all(_mode(p) == 0o644 for p in pages)


def test_the_collected_submissions_are_where_make_grade_looks(taught):
    for student in taught.students.values():
        folder = taught.course / "submitted" / student.name / STEM
        assert {p.name for p in folder.iterdir()} == {
            f"{STEM}.ipynb", "timestamp.txt", "submission_secret.txt"}


def test_the_grades_are_what_the_checks_give(taught):
    """grades.csv (make grade) per exercise; nbgrader's own export agrees on the totals."""
    full = sum(ex.points for ex in EXERCISES)
    for role, student in taught.students.items():
        row = taught.grades[student.name]
        assert [float(row[f"{STEM}:{ex.name}"]) for ex in EXERCISES] == _expected(role), role
        assert float(row["total"]) == sum(_expected(role))
        exported = taught.export[student.name]
        assert exported["assignment"] == STEM
        assert (float(exported["score"]), float(exported["max_score"])) == \
            (sum(_expected(role)), full)
    assert sorted(taught.grades) == sorted(taught.export) == \
        sorted(s.name for s in taught.students.values())
    mixed, raised = taught.students["mixed"].name, EXERCISES[1].name
    assert f"{mixed} / {STEM}: exercise {raised}: ZeroDivisionError" in taught.report
    assert taught.report.count(f" / {STEM}: ") == 1, taught.report


def test_each_student_fetches_their_own_feedback_with_their_score(taught):
    full = float(sum(ex.points for ex in EXERCISES))
    for role, student in taught.students.items():
        text = _text(taught.feedback[student.name])
        assert f"{STEM} (Score: {float(sum(_expected(role)))} / {full})" in text, role
        for ex, points in zip(EXERCISES, _expected(role)):
            assert f"Grade cell: {ex.name} Score: {float(points)} / {float(ex.points)}" in text
    mixed = _text(taught.feedback[taught.students["mixed"].name])
    assert "ZeroDivisionError" in mixed


def test_a_student_cannot_change_the_release_or_move_the_course_in_the_exchange(taught):
    release = taught.course_dir / "outbound" / STEM
    got = _attempts(taught.hub, taught.students["untouched"], {
        "read the release": ("read", release / f"{STEM}.ipynb"),
        "add a file to the release": ("create", release),
        "change the released notebook": ("write", release / f"{STEM}.ipynb"),
        "delete the released notebook": ("delete", release / f"{STEM}.ipynb"),
        "add an assignment to outbound/": ("create", taught.course_dir / "outbound"),
        "move the course's folder aside": ("rename", taught.course_dir),
    })
    assert got.pop("read the release") == "ok"
    assert got == dict.fromkeys(got, "PermissionError"), got


def test_a_student_cannot_find_or_read_another_students_submission_or_feedback(taught):
    """The untouched student against the one who got everything right: the exchange's
    inbound/ and feedback/ cannot be listed, and the victim's fetched notebook, nbgrader cache
    and feedback stay in a home no one else may enter."""
    thief, victim = taught.students["untouched"], taught.students["right"]
    cache = victim.home / ".local" / "share" / "jupyter" / "nbgrader_cache" / A.COURSE_ID
    [submitted] = cache.glob(f"{victim.name}+{STEM}+*")
    [page] = (victim.home / STEM / "feedback").glob(f"*/{STEM}.html")
    own = next((thief.home / STEM / "feedback").glob(f"*/{STEM}.html"))
    got = _attempts(taught.hub, thief, {
        "own feedback": ("read", own),
        "list the submissions in inbound/": ("list", taught.course_dir / "inbound"),
        "find the victim's submission": ("find", taught.course_dir / "inbound" /
                                         f"{victim.name}+*"),
        "list the feedback in feedback/": ("list", taught.course_dir / "feedback"),
        "list the victim's home": ("list", victim.home),
        "the victim's notebook": ("read", victim.home / STEM / f"{STEM}.ipynb"),
        "the victim's submission in nbgrader's cache": ("read", submitted / f"{STEM}.ipynb"),
        "the victim's submission secret": ("read", submitted / "submission_secret.txt"),
        "the victim's feedback": ("read", page),
    })
    assert got.pop("own feedback") == "ok"
    assert got.pop("find the victim's submission") == []
    assert got == dict.fromkeys(got, "PermissionError"), got


def test_the_feedback_page_is_named_by_the_secret_in_the_students_home(taught):
    """Why the students' homes must be private: nbgrader names each feedback page in the
    exchange md5(submission secret + notebook) (nbgrader.utils.notebook_hash), the page is
    readable by all (0644), and the secret lies in the student's nbgrader cache."""
    for student in taught.students.values():
        cache = student.home / ".local" / "share" / "jupyter" / "nbgrader_cache" / A.COURSE_ID
        [secret] = cache.glob(f"{student.name}+{STEM}+*/submission_secret.txt")
        name = hashlib.md5((secret.read_text() + STEM).encode()).hexdigest()
        page = taught.course_dir / "feedback" / f"{name}.html"
        assert page.read_text() == next((student.home / STEM / "feedback").glob(
            f"*/{STEM}.html")).read_text()
        assert _mode(student.home) == 0o700


def test_students_cannot_read_the_course_folder_or_the_gradebook(taught):
    """The course folder (gradebook, every submission, grades, the reference solutions) lets
    no other account in, though the instructor's home, as Debian's useradd makes it, does."""
    course, victim = taught.course, taught.students["right"].name
    assert _mode(taught.instructor.home) & 0o005 == 0o005
    assert _mode(course) & 0o007 == 0, oct(_mode(course))
    got = _attempts(taught.hub, taught.students["untouched"], {
        "list the course folder": ("list", course),
        "the gradebook": ("read", course / "gradebook.db"),
        "grades.csv": ("read", course / "grades.csv"),
        "nbgrader's export": ("read", course / "nbgrader-grades.csv"),
        "the source version, with the solutions": ("read", course / "source" / STEM /
                                                   f"{STEM}.ipynb"),
        "another's collected submission": ("read", course / "submitted" / victim / STEM /
                                           f"{STEM}.ipynb"),
        "another's autograded notebook": ("read", course / "autograded" / victim / STEM /
                                          f"{STEM}.ipynb"),
        "another's feedback in the course": ("read", course / "feedback" / victim / STEM /
                                             f"{STEM}.html"),
    })
    assert got == dict.fromkeys(got, "PermissionError"), got


def test_the_readme_commands_hide_the_instructors_parts_from_students(taught):
    """The README's `jupyter ... disable` commands, run by the hub's administrator in the
    students' environment: a student's JupyterLab lists the formgrader and create-assignment
    plugins disabled and the formgrader server extension off; the Assignments panel stays."""
    hub = taught.hub
    commands = _readme_hiding_commands()
    assert ("labextension", "@jupyter/nbgrader:formgrader") in commands, commands
    assert ("server extension", "nbgrader.server_extensions.formgrader") in commands, commands
    module = {"labextension": "jupyterlab.labextensions",
              "server extension": "jupyter_server.extension.serverextension"}
    admin = hub.base / "admin"
    admin.mkdir(exist_ok=True)
    for kind, what in commands:
        rc, out = _run([hub.python, "-m", module[kind], "disable", what], cwd=admin,
                       env=_environ(hub.env, admin, "root"))
        assert rc == 0, out
    student = taught.students["right"]
    ansi = re.compile(r"\x1b\[[0-9;]*m")
    rc, lab = hub.run(student, "-m", module["labextension"], "list")
    assert rc == 0, lab
    listed = ansi.sub("", lab).split("Disabled extensions:")[1].split("\n\n")[0]
    disabled = re.findall(r"^\s+(\S+)$", listed, re.M)
    assert sorted(disabled) == sorted(w for k, w in commands if k == "labextension")
    rc, server = hub.run(student, "-m", module["server extension"], "list")
    assert rc == 0, server
    state = dict(re.findall(r"^\s+(nbgrader\.server_extensions\.\w+) (enabled|disabled)$",
                            ansi.sub("", server), re.M))
    assert state == {"nbgrader.server_extensions.formgrader": "disabled",
                     "nbgrader.server_extensions.validate_assignment": "enabled",
                     "nbgrader.server_extensions.assignment_list": "enabled",
                     "nbgrader.server_extensions.course_list": "enabled"}, server

