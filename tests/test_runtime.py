"""lessonlib.runtime: which platforms get torch and triton (the same rule as requirements.txt's
markers), the reasons printed where they are absent, the %%requires magic, the nbval plugin,
and that everything but triton_attention and tinylm imports with torch and triton hidden."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _support import ROOT, load_file
from nbval_requires import requires_of
from packaging.requirements import Requirement

from lessonlib import runtime

PYTHONS = ("3.11", "3.12", "3.13")


def _marker_env(sys_platform, machine, python):
    return {"sys_platform": sys_platform, "platform_machine": machine, "python_version": python,
            "python_full_version": python + ".0", "platform_system": {
                "linux": "Linux", "darwin": "Darwin", "win32": "Windows"}[sys_platform],
            "os_name": "nt" if sys_platform == "win32" else "posix",
            "platform_python_implementation": "CPython", "implementation_name": "cpython"}


def requirements():
    reqs = {}
    for line in open(f"{ROOT}/requirements.txt"):
        line = line.split("#", 1)[0].strip()
        if line:
            r = Requirement(line)
            reqs[r.name.lower()] = r
    return reqs


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("key", list(runtime.PLATFORMS))
def test_the_rule_is_requirements_txts_markers(key, python):
    reqs = requirements()
    env = _marker_env(*key, python)
    for package in runtime.OPTIONAL:
        marker = reqs[package].marker
        installs = marker is None or marker.evaluate(env)
        assert installs == runtime.pinned_for(package, *key), (package, key, python)
    for name, r in reqs.items():  # everything else installs everywhere
        if name not in runtime.OPTIONAL:
            assert r.marker is None or r.marker.evaluate(env), (name, key)


def test_platform_keys_and_bad_names():
    assert runtime.platform_key("linux", "arm64") == ("linux", "aarch64")
    assert runtime.pinned_for("triton", "linux", "x86_64") and runtime.pinned_for("torch", "win32", "AMD64")
    assert not runtime.pinned_for("triton", "darwin", "arm64")
    assert not runtime.pinned_for("torch", "darwin", "x86_64")
    assert not runtime.pinned_for("torch", "freebsd", "amd64")  # unknown: nothing optional
    for f in (runtime.pinned_for, runtime.installed, runtime.missing_reason):
        with pytest.raises(ValueError, match="package must be one of"):
            f("numpy")


def test_reasons_name_the_cause(monkeypatch, tmp_path):
    monkeypatch.setattr(runtime, "installed", lambda p: False)
    monkeypatch.setattr(runtime.sys, "prefix", str(tmp_path))
    monkeypatch.setattr(runtime, "platform_key", lambda *a: ("darwin", "arm64"))
    assert "only for Linux" in runtime.missing_reason("triton")
    assert "macOS on arm64" in runtime.missing_reason("triton")
    assert "in Triton's CPU interpreter or on an NVIDIA GPU" in runtime.missing_reason("triton")
    assert "pinned" in runtime.missing_reason("torch") and "make clean-venv" in runtime.missing_reason("torch")
    assert "torch: not installed: it is pinned" in runtime.describe()
    assert runtime.expected_missing("triton") and not runtime.expected_missing("torch")
    monkeypatch.setattr(runtime, "platform_key", lambda *a: ("darwin", "x86_64"))
    assert "PyTorch publishes no wheels for macOS on x86_64" in runtime.missing_reason("torch")
    assert "only for Linux" in runtime.missing_reason("triton")
    monkeypatch.setattr(runtime, "platform_key", lambda *a: ("linux", "x86_64"))
    (tmp_path / "lessonlib-without.txt").write_text("torch triton\n")
    assert runtime.left_out() == ("torch", "triton")
    assert "WITHOUT_TORCH=1" in runtime.missing_reason("torch") and runtime.expected_missing("torch")
    assert runtime.profile() == "without torch and triton"
    (tmp_path / "lessonlib-without.txt").write_text("torch numpy\n")
    with pytest.raises(ValueError, match="numpy"):
        runtime.left_out()


def test_this_environment_has_what_its_platform_and_profile_promise():
    for package in runtime.OPTIONAL:
        assert runtime.installed(package) or runtime.expected_missing(package), \
            runtime.missing_reason(package)
    assert runtime.describe().startswith(f"lessonlib profile: {runtime.profile()}")


def _shell():
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "lessonlib.requires")
    return shell


def test_requires_magic_runs_the_cell_or_says_why(monkeypatch, capsys):
    shell = _shell()
    monkeypatch.setattr(runtime, "missing_reason", lambda p: None)
    value = shell.run_cell_magic("requires", "torch", "x_ran = 40\nx_ran + 2")
    assert value == 42 and shell.user_ns["x_ran"] == 40
    assert shell.run_cell_magic("requires", "torch triton", "y_ran = 1") is None
    assert shell.user_ns["y_ran"] == 1
    monkeypatch.setattr(runtime, "missing_reason",
                        lambda p: "torch is not installed: a reason." if p == "torch" else None)
    assert shell.run_cell_magic("requires", "triton torch", "z_ran = 1\nz_ran") is None
    assert "z_ran" not in shell.user_ns
    assert capsys.readouterr().out == "torch is not installed: a reason.\n"
    with pytest.raises(ValueError, match="package name"):
        shell.run_cell_magic("requires", "", "1")
    with pytest.raises(ZeroDivisionError):  # an error in the cell is the cell's error
        monkeypatch.setattr(runtime, "missing_reason", lambda p: None)
        shell.run_cell_magic("requires", "torch", "1 / 0")


def test_requires_cells_do_not_run_in_the_presenter(monkeypatch, capsys):
    shell = _shell()
    capsys.readouterr()  # (IPython's note when the extension is already loaded)
    monkeypatch.setattr(runtime, "missing_reason", lambda p: None)
    monkeypatch.setenv(runtime.PRESENTER_ENV, "1")
    assert runtime.in_presenter()
    assert shell.run_cell_magic("requires", "torch", "p_ran = 1\np_ran") is None
    assert "p_ran" not in shell.user_ns and capsys.readouterr().out == ""
    monkeypatch.undo()
    with pytest.raises(ValueError):  # a name that is not optional is still an error there
        monkeypatch.setenv(runtime.PRESENTER_ENV, "1")
        shell.run_cell_magic("requires", "numpy", "1")


def test_the_presenter_sets_its_flag_and_loses_no_widget_by_skipping_requires_cells():
    """make present skips %%requires cells: none of them builds a widget in any notebook."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("present", Path(ROOT) / "scripts" / "present.py")
    present = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(present)
    assert present.voila_env({})[runtime.PRESENTER_ENV] == "1"
    widget = "application/vnd.jupyter.widget-view+json"
    cells = 0
    for path in sorted((Path(ROOT) / "notebooks").glob("[0-9]*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and requires_of(source):
                cells += 1
                assert not any(widget in o.get("data", {}) for o in cell.get("outputs", [])), \
                    f"{path.name}: a %%requires cell builds a widget the presenter would lose"
                assert "widgets." not in source, f"{path.name}: a %%requires cell uses widgets"
    assert cells >= 2


def test_nbval_plugin_reads_the_first_line():
    assert requires_of("%%requires torch\nimport torch") == ("torch",)
    assert requires_of("\n%%requires triton torch\nx") == ("triton", "torch")
    assert requires_of("import torch  # %%requires torch") == ()
    assert requires_of("") == ()


HIDE = """
import importlib, pkgutil, sys
sys.modules["torch"] = sys.modules["triton"] = None  # import halts, find_spec says absent
"""


def test_everything_but_the_kernels_and_the_model_imports_without_torch_and_triton():
    """What a Mac or Windows student without triton, or an Intel Mac without torch, imports."""
    code = HIDE + textwrap.dedent("""
        import json, lessonlib
        from lessonlib import runtime
        names = sorted(m.name for m in pkgutil.walk_packages(lessonlib.__path__, "lessonlib."))
        ok, failed = [], {}
        for name in names:
            try:
                importlib.import_module(name)
                ok.append(name)
            except ImportError as e:
                failed[name] = str(e)
        print(json.dumps(dict(ok=ok, failed=failed, profile=runtime.profile(),
                              loaded=[m for m in sys.modules if m.split(".")[0] in ("torch", "triton")
                                      and sys.modules[m] is not None])))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    kernels_and_model = {"lessonlib.triton_attention", "lessonlib.triton_decode", "lessonlib.tinylm"}
    assert set(result["failed"]) == kernels_and_model, result["failed"]
    assert all("halted" in e for e in result["failed"].values())
    for topic in ("checks", "plots", "widgets"):
        assert any(n.startswith(f"lessonlib.{topic}.") for n in result["ok"])
    assert "lessonlib.kernel_plan" in result["ok"] and "lessonlib.tinylm_results" in result["ok"]
    assert result["profile"] == "without torch and triton" and result["loaded"] == []


# --------------------------------------------------------------------------- bad inputs

@pytest.mark.parametrize("f", [runtime.pinned_for, runtime.installed, runtime.missing_reason,
                               runtime.missing_cause, runtime.expected_missing])
@pytest.mark.parametrize("package", ["numpy", "Torch", " torch", "", None, 1, ["torch"], b"torch"])
def test_package_names_are_exactly_torch_or_triton(f, package):
    """missing_cause and expected_missing checked nothing of their own, and ["torch"] was
    echoed back without saying what was expected."""
    with pytest.raises(ValueError, match=r"^package must be one of 'torch', 'triton'; got "):
        f(package)


def test_platform_names_are_strings_and_prefix_a_path(tmp_path):
    for bad in (3, b"linux", ["linux"], True):
        with pytest.raises(ValueError, match=r"^sys_platform must be a string"):
            runtime.platform_key(bad, "x86_64")
        with pytest.raises(ValueError, match=r"^machine must be a string"):
            runtime.pinned_for("torch", "linux", bad)
        with pytest.raises(ValueError, match=r"^prefix must be a directory path"):
            runtime.left_out(bad)  # was TypeError: expected str, bytes or os.PathLike
    assert runtime.platform_key("freebsd", "amd64") == ("freebsd", "amd64")  # valid, gets nothing
    assert runtime.left_out(tmp_path) == runtime.left_out(str(tmp_path)) == ()


def test_runtime_imports_without_numpy():
    """scripts/check_pins.py imports lessonlib.runtime with no environment: stdlib only."""
    code = ("import sys; sys.modules['numpy'] = None\n"
            "from lessonlib import runtime\n"
            "print(runtime.pinned_for('triton', 'linux', 'x86_64'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr[-2000:]



# scripts/check_pins.py (make check-pins): its pure parts, with no uv and no index.
check_pins = load_file("scripts", "check_pins.py")
HUB_FILE, GRADING_FILE = "requirements-hub.txt", "requirements-grading.txt"
_BASE = {"jupyterlab": ("4.6.6", 1), "tornado": ("6.5.2", 1)}
_HUB_PINS = {"jupyterhub": ("6.1.1", None), "pamela": ("1.2.0", None)}


def _with_hub(**changes):
    """A resolution of requirements.txt + the hub file: _BASE and _HUB_PINS, then ``changes``
    (a version, or None to leave the package out)."""
    combined = dict(_BASE, jupyterhub=("6.1.1", 1), pamela=("1.2.0", 1))
    combined.update({n: (v, 1) for n, v in changes.items() if v is not None})
    return {n: v for n, v in combined.items() if changes.get(n, "") is not None}


def test_check_on_top_passes_a_resolution_that_adds_exactly_the_pins():
    assert check_pins.check_on_top(HUB_FILE, _HUB_PINS, _BASE, _with_hub()) == []


def test_check_on_top_catches_a_hub_pin_at_a_wrong_version_or_missing():
    assert check_pins.check_on_top(HUB_FILE, _HUB_PINS, _BASE, _with_hub(jupyterhub="5.3.0")) == [
        "requirements-hub.txt: pin jupyterhub==6.1.1 resolved to 5.3.0"]
    assert check_pins.check_on_top(HUB_FILE, _HUB_PINS, _BASE, _with_hub(pamela=None)) == [
        "requirements-hub.txt: pin pamela==1.2.0 resolved to None"]


def test_check_on_top_catches_a_hub_pin_already_in_requirements_txts_resolution():
    base = dict(_BASE, pamela=("1.2.0", 1))
    assert check_pins.check_on_top(HUB_FILE, _HUB_PINS, base, _with_hub()) == [
        "requirements-hub.txt: pamela is already in requirements.txt's environment (1.2.0): "
        "remove it from requirements-hub.txt"]


def test_check_on_top_catches_an_unpinned_addition_and_a_moved_base_version():
    errors = check_pins.check_on_top(HUB_FILE, _HUB_PINS, _BASE,
                                     _with_hub(alembic="1.20.1", tornado="6.4"))
    assert errors == ["requirements-hub.txt: moves tornado from 6.5.2 to 6.4: the versions of "
                      "requirements.txt's environment must stay",
                      "requirements-hub.txt: alembic==1.20.1 is added but not pinned in "
                      "requirements-hub.txt"]
    # the grading file gets the same check, named as its own
    grading = check_pins.check_on_top(GRADING_FILE, {"nbgrader": ("0.9.6", None)},
                                      _BASE, dict(_BASE, nbgrader=("0.9.6", 1), mako=("1.4", 1)))
    assert grading == ["requirements-grading.txt: mako==1.4 is added but not pinned in "
                       "requirements-grading.txt"]


def test_check_on_top_checks_the_hub_against_the_grading_resolution_naming_it():
    """.venv-hub is built on .venv-grading: its base is requirements.txt + the grading file."""
    grading = dict(_BASE, nbgrader=("0.9.6", 1), sqlalchemy=("2.1.9", 1))
    hub = dict(grading, jupyterhub=("6.1.1", 1), pamela=("1.2.0", 1))
    assert check_pins.check_on_top(HUB_FILE, _HUB_PINS, grading, hub, GRADING_FILE) == []
    pins = dict(_HUB_PINS, sqlalchemy=("2.1.9", None))  # pinned by grading already
    assert check_pins.check_on_top(HUB_FILE, pins, grading, hub, GRADING_FILE) == [
        "requirements-hub.txt: sqlalchemy is already in requirements-grading.txt's environment "
        "(2.1.9): remove it from requirements-hub.txt"]
    moved = dict(hub, sqlalchemy=("2.0.0", 1), jupyterlab=("4.5.0", 1))
    assert check_pins.check_on_top(HUB_FILE, _HUB_PINS, grading, moved, GRADING_FILE) == [
        f"requirements-hub.txt: moves {n} from {v} to {to}: the versions of "
        "requirements-grading.txt's environment must stay"
        for n, v, to in (("jupyterlab", "4.6.6", "4.5.0"), ("sqlalchemy", "2.1.9", "2.0.0"))]


def test_the_hub_file_is_resolved_only_on_the_linux_targets_on_top_of_grading():
    on = {platform: check_pins.on_top_for(key) for _, platform, key in check_pins.TARGETS}
    assert {p for p, options in on.items() if "hub" in options} == {
        "x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"}
    assert all("grading" in options for options in on.values())
    assert check_pins.ON_TOP["hub"].path == check_pins.HUB
    assert check_pins.ON_TOP["grading"].path == check_pins.GRADING
    assert check_pins.stack("hub") == [None, "grading", "hub"]
    assert check_pins.stack("grading") == [None, "grading"]
    assert "macOS and Windows" in check_pins.__doc__
    assert "requirements.txt + requirements-grading.txt + requirements-hub.txt" in (
        check_pins.__doc__)


def _ok(files, platform, python, resolved):
    """The fake resolver's default: every resolution as the pins say."""
    return 0


def _fake_compile(calls, tweak=_ok):
    """compile_lock without uv: each file's pins that apply on the target (requirements.txt's,
    then those of each file on top of it, named by the -r lines of the combined file), then
    ``tweak(file names, platform, python, resolution)``, which may change the resolution and
    returns uv's exit code (not 0: the resolution fails)."""
    keys = {platform: key for _, platform, key in check_pins.TARGETS}

    def compile_lock(uv, requirements, platform, python, out_dir, overrides=True):
        text = Path(requirements).read_text()
        files = [l[3:] for l in text.splitlines()] if text.startswith("-r ") else [requirements]
        names = tuple(Path(f).name for f in files)
        calls.append((names, platform, python))
        resolved = {}
        for f in files:
            resolved.update({n: (v, 1) for n, (v, m) in check_pins.our_pins(f).items()
                             if check_pins._applies(m, keys[platform], python)})
        if tweak(names, platform, python, resolved):
            return 1, "No solution found (faked)\n", {}
        return 0, "", resolved
    return compile_lock


def _check_pins(monkeypatch, capsys, tweak=_ok, *argv):
    """(main's exit code, its output, the resolutions it asked for) with the fake resolver."""
    calls = []
    monkeypatch.setattr(check_pins, "compile_lock", _fake_compile(calls, tweak))
    monkeypatch.setattr(check_pins, "self_test", lambda uv, tmp: None)
    rc = check_pins.main(["--uv", "true", *argv])
    return rc, capsys.readouterr().out, calls


LINUX = ("x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu")
LAYERED = {"grading": ("requirements.txt", GRADING_FILE),
           "hub": ("requirements.txt", GRADING_FILE, HUB_FILE)}


def test_check_pins_resolves_the_hub_on_linux_only_and_names_the_file_that_fails(
        monkeypatch, capsys):
    rc, out, calls = _check_pins(monkeypatch, capsys)
    assert rc == 0, out
    hub = [(platform, python) for files, platform, python in calls if HUB_FILE in files]
    assert sorted(hub) == sorted((p, py) for p in LINUX for py in PYTHONS)
    assert sum(GRADING_FILE in files for files, _, _ in calls) == 15 + 6  # grading, the hub
    # each combined file lists requirements.txt, the layers under the file, then the file
    assert {files for files, _, _ in calls if HUB_FILE in files} == {LAYERED["hub"]}
    assert [files for files, _, _ in calls].count(LAYERED["grading"]) == 15
    assert "FAILED" not in out and "requirements.txt resolves on all 15 platform/Python " in out
    assert "requirements-hub.txt with it and requirements-grading.txt on 6" in out
    assert "requirements-grading.txt with it on 15" in out
    assert "\nrequirements-grading.txt on top of requirements.txt:\n" in out
    assert ("\nrequirements-hub.txt on top of requirements.txt + requirements-grading.txt "
            "(Linux targets only") in out

    def moves_jupyterlab(files, platform, python, resolved):  # the hub's, on aarch64
        if "aarch64-unknown-linux" in platform and HUB_FILE in files:
            resolved["jupyterlab"] = ("0.1", 1)
        return 0
    rc, out, _ = _check_pins(monkeypatch, capsys, moves_jupyterlab)
    assert rc == 1
    failed = [l for l in out.splitlines() if "FAILED" in l]
    assert len(failed) == 2 * len(PYTHONS), out
    assert all(l.startswith("  FAILED: requirements-hub.txt: moves jupyterlab from ")
               for l in failed[1::2])
    assert "check-pins: 3 resolution(s) failed (above)" in out


def test_check_pins_checks_the_hub_against_the_grading_resolution(monkeypatch, capsys, tmp_path):
    """A hub pin that requirements-grading.txt pins already, and a grading version (not one of
    requirements.txt's) that the hub's resolution moves, fail on each Linux target."""
    hub = tmp_path / HUB_FILE
    hub.write_text(Path(check_pins.HUB).read_text() + "sqlalchemy==2.1.9\n")
    rc, out, _ = _check_pins(monkeypatch, capsys, _ok, "--hub", str(hub))
    assert rc == 1
    assert [l for l in out.splitlines() if l.startswith("  FAILED")] == [
        "  FAILED: requirements-hub.txt: sqlalchemy is already in requirements-grading.txt's "
        "environment (2.1.9): remove it from requirements-hub.txt"] * 6, out
    assert "check-pins: 6 resolution(s) failed (above)" in out
    assert "sqlalchemy" not in check_pins.our_pins(check_pins.ROOT / "requirements.txt")

    def moves_sqlalchemy(files, platform, python, resolved):
        if HUB_FILE in files:
            resolved["sqlalchemy"] = ("2.0.0", 1)
        return 0
    rc, out, _ = _check_pins(monkeypatch, capsys, moves_sqlalchemy)
    assert rc == 1
    assert [l for l in out.splitlines() if l.startswith("  FAILED")] == [
        "  FAILED: requirements-hub.txt: moves sqlalchemy from 2.1.9 to 2.0.0: the versions of "
        "requirements-grading.txt's environment must stay"] * 6, out


_NOT_RESOLVED = ("  FAILED: {}: not resolved: it is installed on top of {}, which did not resolve "
                 "here (above)")


@pytest.mark.parametrize("fails, failed, failures", [
    (LAYERED["grading"], ["  FAILED: requirements-grading.txt: No solution found (faked)",
                          _NOT_RESOLVED.format(HUB_FILE, GRADING_FILE)], 2),
    (("requirements.txt",), [_NOT_RESOLVED.format(GRADING_FILE, "requirements.txt"),
                             _NOT_RESOLVED.format(HUB_FILE, GRADING_FILE)], 3),
])
def test_a_layer_that_fails_to_resolve_fails_the_files_on_top_of_it(monkeypatch, capsys,
                                                                    fails, failed, failures):
    """The resolution ``fails`` fails on Linux x86-64 with Python 3.12 only: the files on top of
    it are not resolved there, and each is reported failed there, naming the layer it is on."""
    target = ("x86_64-unknown-linux-gnu", "3.12")

    def fail(files, platform, python, resolved):
        return int((files, (platform, python)) == (fails, target))
    rc, out, calls = _check_pins(monkeypatch, capsys, fail)
    assert rc == 1
    assert [l for l in out.splitlines() if l.startswith("  FAILED")] == failed, out
    assert "| Linux x86-64 | 3.12 | FAILED |" in out.split("requirements-hub.txt on top of")[1]
    stacks = [("requirements.txt",), LAYERED["grading"], LAYERED["hub"]]
    assert [files for files, *at in calls if tuple(at) == target] == stacks[:len(fails)]
    assert sum(HUB_FILE in files for files, _, _ in calls) == 5  # the other Linux targets
    assert f"check-pins: {failures} resolution(s) failed (above)" in out


from _bad import Case, bad_input_tests, choices, texts  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PACKAGE = dict(package=choices(["torch", "triton"]) | st.sampled_from(["numpy", "TRITON"]))
_PLATFORM = dict(sys_platform=texts(none_ok=True), machine=texts(none_ok=True))

BAD_INPUTS = [
    Case(runtime.platform_key, args=("linux", "arm64"), bad=_PLATFORM),
    Case(runtime.pinned_for, args=("torch", "darwin", "arm64"), bad=dict(_PACKAGE, **_PLATFORM)),
    Case(runtime.left_out, args=(ROOT,), bad=dict(prefix=texts(none_ok=True))),
    Case(runtime.installed, args=("torch",), bad=_PACKAGE),
    Case(runtime.missing_reason, args=("triton",), bad=_PACKAGE),
    Case(runtime.missing_cause, args=("triton",), bad=_PACKAGE),
    Case(runtime.expected_missing, args=("torch",), bad=_PACKAGE),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
